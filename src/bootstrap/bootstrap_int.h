/* Internal interface of libferry_bootstrap: the object and one ops table per method.
 * bootstrap.c owns the object, the parameters and the locality table; a method fills rank and
 * size in its init and does the collectives. */
#ifndef FERRY_BOOTSTRAP_INT_H
#define FERRY_BOOTSTRAP_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <poll.h>

#include <ferry/bootstrap.h>

typedef struct bootstrap_ops bootstrap_ops_t;

struct ferry_bootstrap {
    const bootstrap_ops_t *ops;
    ferry_bootstrap_method_t method;
    unsigned rank;
    unsigned size;
    int timeout_ms;
    size_t max_length;     /* FERRY_BOOTSTRAP_MAX_LENGTH: the largest allgather contribution */
    ferry_status_t failed; /* FERRY_OK, or why an earlier collective failed */
    bool *local;           /* size entries: same host as this process */
    void *priv;            /* the method's state */
    struct ferry_worker *progress; /* progressed while a collective waits (may be NULL) */
};

/* A method's wait inside a collective: poll(fds, count, ms), progressing the bootstrap's worker
 * (ferry_bootstrap_set_progress) meanwhile when there is one. Returns what poll returns (the
 * number of fds ready, 0 when ms passed, -1 with errno). */
int bootstrap_poll(ferry_bootstrap_t *bs, struct pollfd *fds, unsigned count, int ms);

/* The same for a wait on a flag another thread sets (pmix's callbacks): returns when *done is
 * true or ms passed (true: done). */
bool bootstrap_wait_flag(ferry_bootstrap_t *bs, volatile int *done, int ms);

struct bootstrap_ops {
    ferry_bootstrap_method_t method;
    /* Join: set bs->rank, bs->size, bs->priv. */
    ferry_status_t (*init)(ferry_bootstrap_t *bs);
    /* Fill bs->local from the launcher, or return FERRY_ERR_UNSUPPORTED (bootstrap.c then
     * exchanges host identities). May be NULL (same as UNSUPPORTED). */
    ferry_status_t (*locality)(ferry_bootstrap_t *bs);
    /* The collectives, with checked arguments (length <= max_length; size * length fits). */
    ferry_status_t (*allgather)(ferry_bootstrap_t *bs, const void *mine, size_t length, void *all);
    ferry_status_t (*barrier)(ferry_bootstrap_t *bs);
    void (*finalize)(ferry_bootstrap_t *bs);
};

extern const bootstrap_ops_t bootstrap_single_ops;
extern const bootstrap_ops_t bootstrap_tcp_ops;
#ifdef FERRY_HAVE_PMIX
extern const bootstrap_ops_t bootstrap_pmix_ops;
#endif

#endif
