/* The netns suite's job: the processes of one test, on one or more hosts of the test bed
 * (tests/netns/lib.sh), found through the bootstrap API (PMIx under mpirun, or
 * FERRY_BOOTSTRAP_ROOT/_RANK/_SIZE when started by run.sh directly). nt_job_init joins the
 * job, creates a context and a worker, exchanges compact worker addresses and host names in
 * one allgather of fixed-size records (ferry_worker_address_compact), and creates
 * one endpoint to every other rank, each with an error callback that records the status and
 * the time. Failures go through FT_CHECK (tests/common): one line naming the rank, host and
 * pid, then exit 1. A watchdog ends a process that outlives its deadline. */
#ifndef NT_JOB_H
#define NT_JOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ferry/bootstrap.h>
#include <ferry/ferry.h>

#define NT_HOST_MAX 64

typedef struct nt_peer {
    ferry_ep_t *ep;         /**< NULL for this rank itself */
    char host[NT_HOST_MAX]; /**< the peer's hostname */
    bool same_host;         /**< same hostname as this rank */
    ferry_status_t error;   /**< FERRY_OK until the endpoint's error callback ran */
    uint64_t error_ns;      /**< when it ran (CLOCK_MONOTONIC) */
    unsigned error_calls;   /**< how often it ran (must be once) */
} nt_peer_t;

typedef struct nt_job {
    ferry_bootstrap_t *bs;
    unsigned rank;
    unsigned size;
    char host[NT_HOST_MAX];
    ferry_context_t *context;
    ferry_worker_t *worker;
    nt_peer_t *peers;            /**< size entries, indexed by rank */
    unsigned accepted_errors;    /**< error callbacks of endpoints the worker accepted */
    uint64_t barrier_epoch;      /**< barriers this rank has entered */
    unsigned barrier_arrived[2]; /**< barrier messages received, by epoch parity */
    uint64_t barrier_from[2];    /**< their senders' ranks (bit r; ranks >= 64 are not shown) */
} nt_job_t;

/* The active message id of nt_job_barrier (the programs use other ids). */
#define NT_BARRIER_AM_ID 120

/* Join the job and connect to every rank. name: the program's name in messages; deadline_s:
 * the watchdog (also NT_DEADLINE_S in the environment, when it is smaller). */
void nt_job_init(nt_job_t *job, const char *name, unsigned deadline_s);

/* Every endpoint's transport: "shm" to a rank on the same host, "tcp" to one on another
 * (FERRY_TRANSPORTS=tcp: "tcp" everywhere). Prints one line per peer. */
void nt_job_check_transports(const nt_job_t *job);

/* Bootstrap collectives, checked. */
void nt_job_barrier(nt_job_t *job);
void nt_job_allgather(nt_job_t *job, const void *mine, size_t length, void *all);

/* Progress until the peer's endpoint failed or timeout_ms passed; returns its status
 * (FERRY_OK: no failure in time). */
ferry_status_t nt_job_wait_error(nt_job_t *job, unsigned peer, int timeout_ms);

/* Close every endpoint that has not failed gracefully (what was sent is delivered first) and
 * wait for the closes, at most timeout_ms. */
void nt_job_close_all(nt_job_t *job, int timeout_ms);

/* Destroy endpoints, worker and context. collective: a barrier first (all ranks still there);
 * false after a fault, where some rank may be gone. */
void nt_job_fini(nt_job_t *job, bool collective);

/* Milliseconds from a CLOCK_MONOTONIC time to now. */
double nt_ms_since(uint64_t start_ns);

/* An environment integer, or def when unset. */
long nt_env_long(const char *name, long def);

/* Send with retries of FERRY_ERR_NO_RESOURCE (progressing meanwhile) until timeout_ms; comp
 * count is raised by one when the send returned FERRY_INPROGRESS. Returns the final status. */
ferry_status_t nt_tag_send(nt_job_t *job, unsigned peer, const ferry_iov_t *iov, size_t iovcnt,
                           uint64_t tag, ferry_completion_t *comp, int timeout_ms);
/* nt_tag_send with options (immediate data, synchronous). */
ferry_status_t nt_tag_send_ext(nt_job_t *job, unsigned peer, const ferry_iov_t *iov, size_t iovcnt,
                               uint64_t tag, const ferry_tag_send_params_t *params,
                               ferry_completion_t *comp, int timeout_ms);
ferry_status_t nt_am_send(nt_job_t *job, unsigned peer, unsigned id, const void *header,
                          size_t header_length, const ferry_iov_t *iov, size_t iovcnt,
                          ferry_completion_t *comp, int timeout_ms);

/* Progress until comp->count == 0 (fails after timeout_ms, naming what). */
void nt_wait_completion(nt_job_t *job, const ferry_completion_t *comp, int timeout_ms,
                        const char *what);

#endif
