/*
 * ferry bootstrap — find the other processes of a job: rank, size, allgather, barrier.
 *
 * A separate library (libferry_bootstrap, pkg-config ferry-bootstrap, CMake ferry::bootstrap)
 * so that libferry itself keeps needing only libc and pthreads. It exists to hand worker
 * addresses (ferry_worker_address) to every process of a job:
 *
 *     ferry_bootstrap_t *bs;
 *     ferry_bootstrap_init(NULL, &bs);                 // method from the environment
 *     size_t n = ferry_bootstrap_size(bs);
 *     ferry_bootstrap_allgather(bs, mine, len, all);   // all: n * len bytes, rank order
 *     ...
 *     ferry_bootstrap_finalize(bs);
 *
 * Methods:
 *   pmix    the process was started by a PMIx launcher (Open MPI's mpirun, Slurm's srun):
 *           PMIx_Put/Commit/Fence/Get. Built only when libpmix was found at build time
 *           (ferry_bootstrap_methods_built()).
 *   tcp     no launcher: FERRY_BOOTSTRAP_ROOT=host:port, FERRY_BOOTSTRAP_RANK,
 *           FERRY_BOOTSTRAP_SIZE in every process; rank 0 listens on host:port, the others
 *           connect to it (retrying until FERRY_BOOTSTRAP_TIMEOUT_MS); collectives go
 *           through rank 0.
 *   single  one process alone (size 1).
 *   auto    pmix when PMIX_RANK or PMIX_NAMESPACE is in the environment, else tcp when
 *           FERRY_BOOTSTRAP_ROOT is set, else single. FERRY_BOOTSTRAP_METHOD overrides it.
 *
 * Collectives are called by every rank in the same order (allgather with the same length
 * everywhere). A failed collective leaves the bootstrap unusable: later collectives return
 * FERRY_ERR_ILLEGAL_STATE. One thread at a time per bootstrap object.
 */
#ifndef FERRY_BOOTSTRAP_H
#define FERRY_BOOTSTRAP_H

#include <stdbool.h>
#include <stddef.h>

#include <ferry/status.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ferry_bootstrap ferry_bootstrap_t;

typedef enum ferry_bootstrap_method {
    FERRY_BOOTSTRAP_METHOD_AUTO = 0,
    FERRY_BOOTSTRAP_METHOD_PMIX = 1,
    FERRY_BOOTSTRAP_METHOD_TCP = 2,
    FERRY_BOOTSTRAP_METHOD_SINGLE = 3,
} ferry_bootstrap_method_t;

typedef struct ferry_bootstrap_params {
    /** AUTO (0): FERRY_BOOTSTRAP_METHOD, else detected from the environment (see above). */
    ferry_bootstrap_method_t method;
    /** Limit for joining and for each collective, in ms; 0: FERRY_BOOTSTRAP_TIMEOUT_MS. */
    int timeout_ms;
} ferry_bootstrap_params_t;

/**
 * Join the job. params may be NULL (all defaults). Blocks until every rank joined (tcp: rank 0
 * waits for the others; the others retry their connection until the timeout) or the timeout.
 * On success *bs_p owns an object to free with ferry_bootstrap_finalize().
 * Returns FERRY_OK;
 *   FERRY_ERR_INVALID_PARAM   bs_p NULL, unknown method, or a malformed FERRY_BOOTSTRAP_ROOT,
 *                             _RANK or _SIZE (the log says which and what is expected);
 *   FERRY_ERR_UNSUPPORTED     pmix asked for but not built into this library;
 *   FERRY_ERR_NO_MEMORY;
 *   FERRY_ERR_IO              a system call (socket, bind: e.g. the port is in use) or a PMIx
 *                             call (PMIx_Init: not started by a PMIx launcher) failed;
 *   FERRY_ERR_CONNECTION_REFUSED  tcp: rank 0 could not be reached before the timeout, or it
 *                             refused this process (wrong size, rank taken, other version);
 *   FERRY_ERR_TIMED_OUT       tcp rank 0: not every rank joined before the timeout;
 *   FERRY_ERR_PROTOCOL        malformed input from another rank (the log names it).
 */
ferry_status_t ferry_bootstrap_init(const ferry_bootstrap_params_t *params,
                                    ferry_bootstrap_t **bs_p);

/** Leave the job and free bs (PMIx: PMIx_Finalize; tcp: close the connections). No barrier:
 *  call ferry_bootstrap_barrier() first if the others must still reach this process. NULL is
 *  ignored. */
void ferry_bootstrap_finalize(ferry_bootstrap_t *bs);

/** This process's rank, 0 .. size-1. */
unsigned ferry_bootstrap_rank(const ferry_bootstrap_t *bs);

/** The number of processes in the job. */
unsigned ferry_bootstrap_size(const ferry_bootstrap_t *bs);

/** The method in use (never AUTO). */
ferry_bootstrap_method_t ferry_bootstrap_method(const ferry_bootstrap_t *bs);

/** "auto", "pmix", "tcp", "single" (static; "unknown" for other values). */
const char *ferry_bootstrap_method_name(ferry_bootstrap_method_t method);

/** The methods built into this library, e.g. "pmix,tcp,single" or "tcp,single". Static. */
const char *ferry_bootstrap_methods_built(void);

/**
 * Every rank gives length bytes (mine); all receives size * length bytes: rank r's at
 * all + r * length. length must be the same on every rank (at most FERRY_BOOTSTRAP_MAX_LENGTH).
 * mine and all may not overlap. Blocks until every rank contributed or the timeout.
 * Returns FERRY_OK;
 *   FERRY_ERR_INVALID_PARAM   bs NULL, mine or all NULL with length > 0, length too large;
 *   FERRY_ERR_ILLEGAL_STATE   an earlier collective failed;
 *   FERRY_ERR_PROTOCOL        ranks disagree (another length, or another collective) or a
 *                             rank sent malformed data: the log names the rank;
 *   FERRY_ERR_TIMED_OUT       a rank did not contribute in time;
 *   FERRY_ERR_CONNECTION_RESET  tcp: a rank (or rank 0) closed its connection or died;
 *   FERRY_ERR_IO              a system or PMIx call failed (the log names it).
 */
ferry_status_t ferry_bootstrap_allgather(ferry_bootstrap_t *bs, const void *mine, size_t length,
                                         void *all);

/** Return once every rank called it. Statuses as ferry_bootstrap_allgather() (not
 *  INVALID_PARAM unless bs is NULL). */
ferry_status_t ferry_bootstrap_barrier(ferry_bootstrap_t *bs);

/**
 * Whether rank runs on the same host as this process: the launcher's locality where it gives
 * one (PMIx: PMIX_LOCAL_PEERS), else the ranks' host identities (boot id, network namespace,
 * host name), exchanged at init. A hint for placement; ferry_ep_create chooses transports by
 * itself. false for a rank out of range.
 */
bool ferry_bootstrap_is_local(const ferry_bootstrap_t *bs, unsigned rank);

#ifdef __cplusplus
}
#endif

#endif
