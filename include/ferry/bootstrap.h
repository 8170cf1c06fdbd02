/**
 * @file bootstrap.h
 * @brief ferry bootstrap — find the other processes of a job: rank, size, allgather, barrier.
 *
 * A separate library (libferry_bootstrap, pkg-config ferry-bootstrap, CMake ferry::bootstrap)
 * so that libferry itself keeps needing only libc and pthreads. See @ref ferry_api_bootstrap.
 */
#ifndef FERRY_BOOTSTRAP_H
#define FERRY_BOOTSTRAP_H

#include <stdbool.h>
#include <stddef.h>

#include <ferry/status.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * @defgroup ferry_api_bootstrap Bootstrap
 * @brief Find the other processes of a job (libferry_bootstrap): rank, size, allgather,
 *        barrier.
 *
 * It exists to hand worker addresses (ferry_worker_address()) to every process of a job:
 *
 * @code
 *     ferry_bootstrap_t *bs;
 *     ferry_bootstrap_init(NULL, &bs);                 // method from the environment
 *     size_t n = ferry_bootstrap_size(bs);
 *     ferry_bootstrap_allgather(bs, mine, len, all);   // all: n * len bytes, rank order
 *     ...
 *     ferry_bootstrap_finalize(bs);
 * @endcode
 *
 * Methods:
 * - pmix: the process was started by a PMIx launcher (Open MPI's mpirun, Slurm's srun):
 *   PMIx_Put/Commit/Fence/Get. Built only when libpmix was found at build time
 *   (ferry_bootstrap_methods_built()).
 * - tcp: no launcher: FERRY_BOOTSTRAP_ROOT=host:port, FERRY_BOOTSTRAP_RANK,
 *   FERRY_BOOTSTRAP_SIZE in every process; rank 0 listens on host:port, the others connect to
 *   it (retrying until FERRY_BOOTSTRAP_TIMEOUT_MS); collectives go through rank 0.
 * - single: one process alone (size 1).
 * - auto: pmix when PMIX_RANK or PMIX_NAMESPACE is in the environment, else tcp when
 *   FERRY_BOOTSTRAP_ROOT is set, else single. FERRY_BOOTSTRAP_METHOD overrides it.
 *
 * Collectives are called by every rank in the same order (allgather with the same length
 * everywhere). A failed collective leaves the bootstrap unusable: later collectives return
 * FERRY_ERR_ILLEGAL_STATE. One thread at a time per bootstrap object.
 * @{
 */

/** @brief Opaque: this process's membership of a job. */
typedef struct ferry_bootstrap ferry_bootstrap_t;

struct ferry_worker;

/** @brief How the processes of a job find each other. */
typedef enum ferry_bootstrap_method {
    FERRY_BOOTSTRAP_METHOD_AUTO = 0,   /**< chosen from the environment (see above) */
    FERRY_BOOTSTRAP_METHOD_PMIX = 1,   /**< a PMIx launcher (mpirun, srun --mpi=pmix) */
    FERRY_BOOTSTRAP_METHOD_TCP = 2,    /**< no launcher: FERRY_BOOTSTRAP_ROOT, _RANK, _SIZE */
    FERRY_BOOTSTRAP_METHOD_SINGLE = 3, /**< one process alone */
} ferry_bootstrap_method_t;

/** @brief Parameters of ferry_bootstrap_init(). */
typedef struct ferry_bootstrap_params {
    /** AUTO (0): FERRY_BOOTSTRAP_METHOD, else detected from the environment (see above). */
    ferry_bootstrap_method_t method;
    /** Limit for joining and for each collective, in ms; 0: FERRY_BOOTSTRAP_TIMEOUT_MS. */
    int timeout_ms;
} ferry_bootstrap_params_t;

/**
 * @brief Join the job.
 *
 * Blocks until every rank joined (tcp: rank 0 waits for the others; the others retry their
 * connection until the timeout) or the timeout.
 *
 * @param[in] params method and timeout; may be NULL (all defaults)
 * @param[out] bs_p on success, an object the caller owns: free it with
 *                  ferry_bootstrap_finalize()
 * @retval FERRY_OK joined
 * @retval FERRY_ERR_INVALID_PARAM bs_p NULL, unknown method, or a malformed
 *                                 FERRY_BOOTSTRAP_ROOT, _RANK or _SIZE (the log says which and
 *                                 what is expected)
 * @retval FERRY_ERR_UNSUPPORTED pmix asked for but not built into this library
 * @retval FERRY_ERR_NO_MEMORY out of memory
 * @retval FERRY_ERR_IO a system call (socket, bind: e.g. the port is in use) or a PMIx call
 *                      (PMIx_Init: not started by a PMIx launcher) failed
 * @retval FERRY_ERR_CONNECTION_REFUSED tcp: rank 0 could not be reached before the timeout, or
 *                                      it refused this process (wrong size, rank taken, other
 *                                      version)
 * @retval FERRY_ERR_TIMED_OUT tcp rank 0: not every rank joined before the timeout
 * @retval FERRY_ERR_PROTOCOL malformed input from another rank (the log names it)
 */
ferry_status_t ferry_bootstrap_init(const ferry_bootstrap_params_t *params,
                                    ferry_bootstrap_t **bs_p);

/**
 * @brief Leave the job and free bs (PMIx: PMIx_Finalize; tcp: close the connections).
 *
 * No barrier: call ferry_bootstrap_barrier() first if the others must still reach this
 * process.
 *
 * @param bs the bootstrap; NULL is ignored
 */
void ferry_bootstrap_finalize(ferry_bootstrap_t *bs);

/**
 * @brief This process's rank.
 * @param bs the bootstrap
 * @return the rank, 0 .. size-1 (0 for NULL)
 */
unsigned ferry_bootstrap_rank(const ferry_bootstrap_t *bs);

/**
 * @brief The number of processes in the job.
 * @param bs the bootstrap
 * @return the size (0 for NULL)
 */
unsigned ferry_bootstrap_size(const ferry_bootstrap_t *bs);

/**
 * @brief The method in use.
 * @param bs the bootstrap
 * @return the method; never AUTO (except for NULL)
 */
ferry_bootstrap_method_t ferry_bootstrap_method(const ferry_bootstrap_t *bs);

/**
 * @brief The name of a method.
 * @param method the method
 * @return "auto", "pmix", "tcp", "single" ("unknown" for other values); a static string
 */
const char *ferry_bootstrap_method_name(ferry_bootstrap_method_t method);

/**
 * @brief The methods built into this library.
 * @return e.g. "pmix,tcp,single" or "tcp,single"; a static string
 */
const char *ferry_bootstrap_methods_built(void);

/**
 * @brief Progress a ferry worker while this bootstrap's collectives wait.
 *
 * A collective (allgather, barrier) waits for the other ranks. Without this, the waiting
 * process makes no ferry progress: a peer's flush, target-executed one-sided operation or
 * rendezvous that needs this process's progress stalls until the collective returns, and so
 * does a message this process sent while its endpoint was still connecting (ferry_am_send()
 * and ferry_tag_send() return FERRY_OK with a copy queued; it leaves when the handshake
 * finishes, in progress). If that peer waits for its operation or message before it joins the
 * collective, both wait for good. Set it whenever ferry traffic precedes a collective. With a
 * worker set, every wait of a collective calls ferry_worker_progress() on it (and sleeps on
 * its descriptor when it has nothing to do), so callbacks of that worker may run inside
 * ferry_bootstrap_allgather() and ferry_bootstrap_barrier().
 *
 * @param bs the bootstrap
 * @param worker the worker to progress; NULL: none (the default)
 * @retval FERRY_OK set
 * @retval FERRY_ERR_INVALID_PARAM bs is NULL
 */
ferry_status_t ferry_bootstrap_set_progress(ferry_bootstrap_t *bs, struct ferry_worker *worker);

/**
 * @brief Every rank gives length bytes (mine); all receives size * length bytes: rank r's at
 *        all + r * length.
 *
 * Blocks until every rank contributed or the timeout.
 *
 * @param bs the bootstrap
 * @param[in] mine this rank's contribution
 * @param length the same on every rank; at most FERRY_BOOTSTRAP_MAX_LENGTH (environment,
 *               default 1 MiB), and size * length at most 4 GiB
 * @param[out] all receives size * length bytes; may not overlap mine
 * @retval FERRY_OK every rank's contribution is in all
 * @retval FERRY_ERR_INVALID_PARAM bs NULL, mine or all NULL with length > 0, length too large
 * @retval FERRY_ERR_ILLEGAL_STATE an earlier collective failed
 * @retval FERRY_ERR_PROTOCOL ranks disagree (another length, or another collective) or a rank
 *                            sent malformed data: the log names the rank
 * @retval FERRY_ERR_TIMED_OUT a rank did not contribute in time
 * @retval FERRY_ERR_CONNECTION_RESET tcp: a rank (or rank 0) closed its connection or died
 * @retval FERRY_ERR_IO a system or PMIx call failed (the log names it)
 */
ferry_status_t ferry_bootstrap_allgather(ferry_bootstrap_t *bs, const void *mine, size_t length,
                                         void *all);

/**
 * @brief Return once every rank called it.
 * @param bs the bootstrap
 * @retval FERRY_OK every rank called it
 * @retval FERRY_ERR_INVALID_PARAM bs NULL
 * @retval FERRY_ERR_ILLEGAL_STATE an earlier collective failed
 * @retval FERRY_ERR_PROTOCOL ranks disagree (another collective) or a rank sent malformed data:
 *                            the log names the rank
 * @retval FERRY_ERR_TIMED_OUT a rank did not arrive in time
 * @retval FERRY_ERR_CONNECTION_RESET tcp: a rank (or rank 0) closed its connection or died
 * @retval FERRY_ERR_IO a system or PMIx call failed (the log names it)
 */
ferry_status_t ferry_bootstrap_barrier(ferry_bootstrap_t *bs);

/**
 * @brief Whether rank runs on the same host as this process.
 *
 * From the launcher's locality where it gives one (PMIx: PMIX_LOCAL_PEERS), else the ranks'
 * host identities (boot id, network namespace, host name), exchanged at init. A hint for
 * placement; ferry_ep_create() chooses transports by itself.
 *
 * @param bs the bootstrap
 * @param rank any rank
 * @return true when rank is on this host; false for a rank out of range
 */
bool ferry_bootstrap_is_local(const ferry_bootstrap_t *bs, unsigned rank);

/** @} */

#ifdef __cplusplus
}
#endif

#endif
