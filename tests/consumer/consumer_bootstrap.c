/* A program outside the ferry tree using the bootstrap (libferry_bootstrap): join the job (alone:
 * the single method, unless a launcher or FERRY_BOOTSTRAP_ROOT says otherwise), allgather this
 * worker's address length, barrier, clean up. Exit 0 on success. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <ferry/bootstrap.h>
#include <ferry/ferry.h>

int main(void)
{
    ferry_bootstrap_t *bs;
    ferry_context_t *context;
    ferry_worker_t *worker;
    const void *address;
    size_t length;
    int result = 1;

    ferry_status_t status = ferry_bootstrap_init(NULL, &bs);
    if (status != FERRY_OK) {
        fprintf(stderr, "consumer_bootstrap: ferry_bootstrap_init: %s\n",
                ferry_status_string(status));
        return 1;
    }
    if (ferry_context_create(NULL, &context) != FERRY_OK)
        goto err_finalize;
    if (ferry_worker_create(context, NULL, &worker) != FERRY_OK)
        goto err_context;
    if (ferry_worker_address(worker, &address, &length) != FERRY_OK)
        goto err_worker;

    uint64_t mine = length;
    uint64_t *all = calloc(ferry_bootstrap_size(bs), sizeof(*all));
    if (all == NULL)
        goto err_worker;
    status = ferry_bootstrap_allgather(bs, &mine, sizeof(mine), all);
    if (status == FERRY_OK)
        status = ferry_bootstrap_barrier(bs);
    if (status == FERRY_OK && all[ferry_bootstrap_rank(bs)] == mine) {
        printf("consumer_bootstrap: rank %u of %u (%s; built: %s), address %zu bytes\n",
               ferry_bootstrap_rank(bs), ferry_bootstrap_size(bs),
               ferry_bootstrap_method_name(ferry_bootstrap_method(bs)),
               ferry_bootstrap_methods_built(), length);
        result = 0;
    } else {
        fprintf(stderr, "consumer_bootstrap: allgather/barrier: %s\n", ferry_status_string(status));
    }
    free(all);
err_worker:
    ferry_worker_destroy(worker);
err_context:
    ferry_context_destroy(context);
err_finalize:
    ferry_bootstrap_finalize(bs);
    return result;
}
