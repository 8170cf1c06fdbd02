/* The single method: one process alone (rank 0 of 1); collectives are copies. */
#include <string.h>

#include "bootstrap/bootstrap_int.h"

static ferry_status_t single_init(ferry_bootstrap_t *bs)
{
    bs->rank = 0;
    bs->size = 1;
    return FERRY_OK;
}

static ferry_status_t single_locality(ferry_bootstrap_t *bs)
{
    bs->local[0] = true;
    return FERRY_OK;
}

static ferry_status_t single_allgather(ferry_bootstrap_t *bs, const void *mine, size_t length,
                                       void *all)
{
    (void)bs;
    if (length > 0)
        memcpy(all, mine, length);
    return FERRY_OK;
}

static ferry_status_t single_barrier(ferry_bootstrap_t *bs)
{
    (void)bs;
    return FERRY_OK;
}

static void single_finalize(ferry_bootstrap_t *bs)
{
    (void)bs;
}

const bootstrap_ops_t bootstrap_single_ops = {
    .method = FERRY_BOOTSTRAP_METHOD_SINGLE,
    .init = single_init,
    .locality = single_locality,
    .allgather = single_allgather,
    .barrier = single_barrier,
    .finalize = single_finalize,
};
