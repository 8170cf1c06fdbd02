/* The pmix method: the process was started by a PMIx launcher (Open MPI's mpirun, Slurm's
 * srun, prterun). Rank and size from PMIx_Init and PMIX_JOB_SIZE; an allgather is
 * PMIx_Put(PMIX_GLOBAL) + PMIx_Commit + PMIx_Fence(collect data) + PMIx_Get of every other
 * rank's value (each allgather under its own key, "ferry.bs.<n>"); a barrier is a PMIx_Fence
 * without data; locality is PMIX_LOCAL_PEERS. Built only when libpmix is found. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <pmix.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap/bootstrap_int.h"
#include "core/log.h"

typedef struct pmix_state {
    pmix_proc_t me;
    unsigned seq; /* allgathers so far: the next key */
} pmix_state_t;

static ferry_status_t pmix_init(ferry_bootstrap_t *bs)
{
    pmix_state_t *pm = calloc(1, sizeof(*pm));
    pmix_value_t *value = NULL;
    pmix_proc_t job;

    if (pm == NULL) {
        fy_error("calloc(%zu) for the pmix bootstrap failed", sizeof(*pm));
        return FERRY_ERR_NO_MEMORY;
    }
    pmix_status_t rc = PMIx_Init(&pm->me, NULL, 0);
    if (rc != PMIX_SUCCESS) {
        fy_error("pmix bootstrap: PMIx_Init failed: %s (was this process started by a PMIx "
                 "launcher such as mpirun or srun --mpi=pmix? PMIX_NAMESPACE=%s)",
                 PMIx_Error_string(rc),
                 getenv("PMIX_NAMESPACE") != NULL ? getenv("PMIX_NAMESPACE") : "(unset)");
        free(pm);
        return FERRY_ERR_IO;
    }
    PMIX_LOAD_PROCID(&job, pm->me.nspace, PMIX_RANK_WILDCARD);
    rc = PMIx_Get(&job, PMIX_JOB_SIZE, NULL, 0, &value);
    if (rc != PMIX_SUCCESS || value == NULL || value->type != PMIX_UINT32 ||
        value->data.uint32 == 0 || pm->me.rank >= value->data.uint32) {
        fy_error("pmix bootstrap: PMIx_Get(%s, PMIX_JOB_SIZE) failed or is unusable: %s "
                 "(type %d, rank %u)",
                 pm->me.nspace, PMIx_Error_string(rc), value != NULL ? (int)value->type : -1,
                 pm->me.rank);
        if (value != NULL)
            PMIX_VALUE_RELEASE(value);
        PMIx_Finalize(NULL, 0);
        free(pm);
        return FERRY_ERR_IO;
    }
    bs->rank = pm->me.rank;
    bs->size = value->data.uint32;
    PMIX_VALUE_RELEASE(value);
    bs->priv = pm;
    return FERRY_OK;
}

/* PMIX_LOCAL_PEERS: "0,1,5", the ranks of this job on this node. */
static ferry_status_t pmix_locality(ferry_bootstrap_t *bs)
{
    pmix_state_t *pm = bs->priv;
    pmix_value_t *value = NULL;
    pmix_proc_t job;

    PMIX_LOAD_PROCID(&job, pm->me.nspace, PMIX_RANK_WILDCARD);
    pmix_status_t rc = PMIx_Get(&job, PMIX_LOCAL_PEERS, NULL, 0, &value);
    if (rc != PMIX_SUCCESS || value == NULL || value->type != PMIX_STRING ||
        value->data.string == NULL) {
        fy_info("pmix bootstrap: no PMIX_LOCAL_PEERS (%s): exchanging host identities",
                PMIx_Error_string(rc));
        if (value != NULL)
            PMIX_VALUE_RELEASE(value);
        return FERRY_ERR_UNSUPPORTED;
    }
    const char *p = value->data.string;
    while (*p != '\0') {
        char *end;
        unsigned long r = strtoul(p, &end, 10);
        if (end == p)
            break;
        if (r < bs->size)
            bs->local[r] = true;
        p = *end == ',' ? end + 1 : end;
    }
    PMIX_VALUE_RELEASE(value);
    return FERRY_OK;
}

/* A non-blocking fence's result, set by PMIx's thread. */
typedef struct pmix_fence_wait {
    volatile int done;
    pmix_status_t status;
} pmix_fence_wait_t;

static void pmix_fence_done_cb(pmix_status_t status, void *cbdata)
{
    pmix_fence_wait_t *w = cbdata;
    w->status = status;
    __atomic_store_n(&w->done, 1, __ATOMIC_RELEASE);
}

static ferry_status_t pmix_fence(ferry_bootstrap_t *bs, bool collect)
{
    pmix_info_t info[2];
    bool yes = true;
    int timeout_s = (bs->timeout_ms + 999) / 1000;
    pmix_fence_wait_t wait = {.done = 0, .status = PMIX_SUCCESS};

    PMIX_INFO_CONSTRUCT(&info[0]);
    PMIX_INFO_CONSTRUCT(&info[1]);
    PMIX_INFO_LOAD(&info[0], PMIX_TIMEOUT, &timeout_s, PMIX_INT);
    PMIX_INFO_LOAD(&info[1], PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
    pmix_status_t rc;
    if (bs->progress == NULL) {
        rc = PMIx_Fence(NULL, 0, info, collect ? 2 : 1);
    } else {
        /* the fence completes on PMIx's own thread: progress the worker meanwhile */
        rc = PMIx_Fence_nb(NULL, 0, info, collect ? 2 : 1, pmix_fence_done_cb, &wait);
        if (rc == PMIX_SUCCESS) {
            if (!bootstrap_wait_flag(bs, &wait.done, bs->timeout_ms + 5000))
                rc = PMIX_ERR_TIMEOUT; /* PMIx's own timeout should have come first */
            else
                rc = wait.status;
        } else if (rc == PMIX_OPERATION_SUCCEEDED) {
            rc = PMIX_SUCCESS;
        }
    }
    PMIX_INFO_DESTRUCT(&info[0]);
    PMIX_INFO_DESTRUCT(&info[1]);
    if (rc != PMIX_SUCCESS) {
        fy_error("pmix bootstrap rank %u: PMIx_Fence(%s) failed: %s", bs->rank,
                 collect ? "collect data" : "barrier", PMIx_Error_string(rc));
        return rc == PMIX_ERR_TIMEOUT ? FERRY_ERR_TIMED_OUT : FERRY_ERR_IO;
    }
    return FERRY_OK;
}

static ferry_status_t pmix_allgather(ferry_bootstrap_t *bs, const void *mine, size_t length,
                                     void *all)
{
    pmix_state_t *pm = bs->priv;
    pmix_value_t put;
    char key[PMIX_MAX_KEYLEN + 1];

    if (length > 0)
        memcpy((char *)all + (size_t)bs->rank * length, mine, length);
    if (bs->size == 1)
        return FERRY_OK;
    if (length == 0)
        return pmix_fence(bs, false);

    snprintf(key, sizeof(key), "ferry.bs.%u", pm->seq++);
    PMIX_VALUE_CONSTRUCT(&put);
    put.type = PMIX_BYTE_OBJECT;
    put.data.bo.bytes = (char *)mine; /* PMIx_Put copies; not freed here */
    put.data.bo.size = length;
    pmix_status_t rc = PMIx_Put(PMIX_GLOBAL, key, &put);
    if (rc == PMIX_SUCCESS)
        rc = PMIx_Commit();
    if (rc != PMIX_SUCCESS) {
        fy_error("pmix bootstrap rank %u: PMIx_Put/Commit(%s, %zu bytes) failed: %s", bs->rank, key,
                 length, PMIx_Error_string(rc));
        return FERRY_ERR_IO;
    }
    ferry_status_t status = pmix_fence(bs, true);
    if (status != FERRY_OK)
        return status;

    for (unsigned r = 0; r < bs->size; r++) {
        pmix_proc_t proc;
        pmix_value_t *value = NULL;
        if (r == bs->rank)
            continue;
        PMIX_LOAD_PROCID(&proc, pm->me.nspace, r);
        rc = PMIx_Get(&proc, key, NULL, 0, &value);
        if (rc != PMIX_SUCCESS || value == NULL) {
            fy_error("pmix bootstrap rank %u: PMIx_Get(rank %u, %s) failed: %s", bs->rank, r, key,
                     PMIx_Error_string(rc));
            return FERRY_ERR_IO;
        }
        if (value->type != PMIX_BYTE_OBJECT || value->data.bo.size != length) {
            fy_error("pmix bootstrap rank %u: rank %u gave %zu bytes (type %d) to allgather "
                     "%s, this rank %zu: every rank must give the same length",
                     bs->rank, r, value->type == PMIX_BYTE_OBJECT ? value->data.bo.size : (size_t)0,
                     (int)value->type, key, length);
            PMIX_VALUE_RELEASE(value);
            return FERRY_ERR_PROTOCOL;
        }
        memcpy((char *)all + (size_t)r * length, value->data.bo.bytes, length);
        PMIX_VALUE_RELEASE(value);
    }
    return FERRY_OK;
}

static ferry_status_t pmix_barrier(ferry_bootstrap_t *bs)
{
    return bs->size == 1 ? FERRY_OK : pmix_fence(bs, false);
}

static void pmix_finalize(ferry_bootstrap_t *bs)
{
    if (bs->priv == NULL)
        return;
    pmix_status_t rc = PMIx_Finalize(NULL, 0);
    if (rc != PMIX_SUCCESS)
        fy_warn("pmix bootstrap rank %u: PMIx_Finalize failed: %s", bs->rank,
                PMIx_Error_string(rc));
    free(bs->priv);
    bs->priv = NULL;
}

const bootstrap_ops_t bootstrap_pmix_ops = {
    .method = FERRY_BOOTSTRAP_METHOD_PMIX,
    .init = pmix_init,
    .locality = pmix_locality,
    .allgather = pmix_allgather,
    .barrier = pmix_barrier,
    .finalize = pmix_finalize,
};
