/*
 * Helpers of the provider's tests (ofi/tests): they use libfabric's API only, load the
 * provider from FI_PROVIDER_PATH (set by ctest to the build's ofi/ directory) and run real
 * processes: ot_job_run forks the ranks of a job, which gather names and meet at barriers
 * through the parent. Any failure prints what failed and exits the process with 1.
 */
#ifndef FERRY_OFI_TESTS_OT_H
#define FERRY_OFI_TESTS_OT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#define OT_NAME_MAX 64u
#define OT_TIMEOUT_MS 20000

/* Fail the process when cond is false, naming the condition and where. */
#define OT_CHECK(cond)                                                                             \
    do {                                                                                           \
        if (!(cond))                                                                               \
            ot_fail(__FILE__, __LINE__, "%s", #cond);                                              \
    } while (0)

/* Fail unless a libfabric call returned want. */
#define OT_EXPECT(call, want)                                                                      \
    do {                                                                                           \
        long ot_rc_ = (long)(call);                                                                \
        if (ot_rc_ != (long)(want))                                                                \
            ot_fail(__FILE__, __LINE__, "%s = %ld (%s), expected %ld", #call, ot_rc_,              \
                    fi_strerror((int)-ot_rc_), (long)(want));                                      \
    } while (0)

__attribute__((noreturn, format(printf, 3, 4))) void ot_fail(const char *file, int line,
                                                             const char *fmt, ...);

/** Hints for the ferry provider: RDM, caps, and tx op_flags. The caller frees them. */
struct fi_info *ot_hints(uint64_t caps, uint64_t tx_op_flags);
/** fi_getinfo(FI_VERSION(1,17)) for hints; fails the process unless exactly one info came. */
struct fi_info *ot_getinfo(struct fi_info *hints);

/** One endpoint with everything it needs: one CQ for both directions, one AV. */
typedef struct ot_ep {
    struct fi_info *info;
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_av *av;
    struct fid_cq *cq;
    struct fid_ep *ep;
    int wait_fd; /* the CQ's (FI_GETWAIT) */
    uint8_t name[OT_NAME_MAX];
    size_t namelen;
} ot_ep_t;

/** Open fabric, domain, AV (table), CQ (format, FI_WAIT_FD) and an enabled endpoint. */
void ot_ep_open(ot_ep_t *t, uint64_t caps, uint64_t tx_op_flags, enum fi_cq_format format);
/** The same for hints of the caller's (which it still owns). */
void ot_ep_open_hints(ot_ep_t *t, struct fi_info *hints, enum fi_cq_format format);
void ot_ep_close(ot_ep_t *t);
/** Insert one name; fails the process unless it inserts. */
fi_addr_t ot_insert(ot_ep_t *t, const void *name);

/** Wait (reading the CQ, which progresses) for the next entry: returns 1 with *entry (a
 *  tagged entry), or the negative error of an error entry with *err filled. Fails the process
 *  after OT_TIMEOUT_MS. */
int ot_cq_next(ot_ep_t *t, struct fi_cq_tagged_entry *entry, struct fi_cq_err_entry *err);
/** Wait for the next entry and require it to be a success for context. */
void ot_cq_expect(ot_ep_t *t, void *context, struct fi_cq_tagged_entry *entry);
/** Read the CQ once more and require it to be empty (-FI_EAGAIN). */
void ot_cq_empty(ot_ep_t *t);

/** CLOCK_MONOTONIC in milliseconds. */
int64_t ot_now_ms(void);

/** A byte pattern: byte i of (seed) is (seed * 131 + i * 7 + (i >> 8)) & 0xff. */
void ot_fill(void *buf, size_t len, unsigned seed);
/** Fail the process, naming the first differing byte, unless buf holds the pattern. */
void ot_check(const void *buf, size_t len, unsigned seed, const char *what);

/* ---------------------------------------------------------------- jobs */

typedef struct ot_job {
    int rank;
    int size;
    int fd; /* to the parent */
} ot_job_t;

typedef void (*ot_rank_fn)(ot_job_t *job, void *arg);

/** Run fn in size forked processes (ranks 0..size-1) and wait for them (timeout_s at most:
 *  then they are killed). Returns 0 when every rank exited 0, else 1 (after printing which). */
int ot_job_run(int size, int timeout_s, ot_rank_fn fn, void *arg);
/* Collectives progress the endpoint opened last (ot_ep_open) while they wait, sleeping on its
 * CQ's fd after fi_trywait: a rank in a barrier still answers its peers' protocol. */

/** The endpoint collectives progress while they wait (NULL: none, for a test that wants what
 *  its peer sent to wait unread until it reads the CQ itself); returns the one before. */
ot_ep_t *ot_collectives_progress(ot_ep_t *t);

/** Every rank gives len bytes; all gets size * len bytes in rank order. */
void ot_allgather(ot_job_t *job, const void *mine, size_t len, void *all);
void ot_barrier(ot_job_t *job);

/** Skip (exit 77) with the reason when the provider is not loadable here. */
void ot_require_provider(void);

#endif
