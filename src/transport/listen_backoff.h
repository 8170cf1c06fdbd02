/* A listening socket that pauses when the process runs out of descriptors.
 *
 * When accept fails with EMFILE or ENFILE (or ENOBUFS/ENOMEM), the pending connection stays
 * in the backlog and the listener stays readable: watching it would spin and log on every
 * progress call. Instead the listener leaves the worker's epoll set for a back-off (10 ms,
 * doubling to 1 s while accepting keeps failing) and comes back when a timer (a timerfd made
 * when the listener was, since none can be made once descriptors are gone) fires. An episode
 * lasts until the backlog is drained (accept answers EAGAIN): one warning per episode says the
 * cause and the fix, and its end is said at info level. Used by the shm and tcp listeners. */
#ifndef FY_TRANSPORT_LISTEN_BACKOFF_H
#define FY_TRANSPORT_LISTEN_BACKOFF_H

#include <stdbool.h>
#include <stdint.h>

#include "transport/transport.h"

#define FY_LISTEN_BACKOFF_FIRST_MS 10u
#define FY_LISTEN_BACKOFF_MAX_MS 1000u

/* How the transport watches a descriptor for EPOLLIN (its epoll set, or the worker's) and
 * stops watching it. watch returns FERRY_OK or FERRY_ERR_IO (logged). */
typedef ferry_status_t (*fy_listen_watch_cb_t)(void *ctx, fy_worker_fd_t *entry);
typedef void (*fy_listen_unwatch_cb_t)(void *ctx, fy_worker_fd_t *entry);

typedef struct fy_listen_backoff {
    fy_listen_watch_cb_t watch;
    fy_listen_unwatch_cb_t unwatch;
    void *ctx;
    fy_worker_fd_t *listen; /* the listener's entry (watched for EPOLLIN) */
    fy_worker_fd_t timer;   /* timerfd; -1 when not made */
    const char *name;       /* "shm", "tcp": for the log */
    unsigned delay_ms;      /* the current back-off */
    bool exhausted;         /* in an episode: accept failed since the backlog was last drained */
    bool paused;            /* the listener is out of the epoll set */
    uint64_t episode_start_ns;
    uint64_t episodes;
} fy_listen_backoff_t;

/* Make the timer and watch it. Returns FERRY_OK or FERRY_ERR_IO (logged). */
ferry_status_t fy_listen_backoff_init(fy_listen_backoff_t *b, fy_listen_watch_cb_t watch,
                                      fy_listen_unwatch_cb_t unwatch, void *ctx,
                                      fy_worker_fd_t *listen, const char *name);
/* Remove and close the timer (the listener's entry is the caller's). */
void fy_listen_backoff_fini(fy_listen_backoff_t *b);

/* accept on the listener failed with err (errno). Returns true when it was for lack of
 * descriptors or memory: the listener is paused, stop accepting now. */
bool fy_listen_backoff_failed(fy_listen_backoff_t *b, int err);

/* accept succeeded: the next pause starts again from the shortest back-off. */
void fy_listen_backoff_accepted(fy_listen_backoff_t *b);

/* accept answered EAGAIN: the backlog is drained, an episode of exhaustion is over. */
void fy_listen_backoff_drained(fy_listen_backoff_t *b);

#endif
