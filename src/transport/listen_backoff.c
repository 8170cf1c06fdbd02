/* Pausing a listener while descriptors are exhausted (see listen_backoff.h). */
#define _GNU_SOURCE
#include "transport/listen_backoff.h"

#include <errno.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "core/log.h"
#include "core/time.h"

static void listen_backoff_timer_cb(void *arg, uint32_t events)
{
    fy_listen_backoff_t *b = arg;
    uint64_t expirations;
    (void)events;
    if (read(b->timer.fd, &expirations, sizeof(expirations)) < 0 && errno == EAGAIN)
        return;
    if (!b->paused)
        return;
    b->paused = false;
    if (b->watch(b->ctx, b->listen) != FERRY_OK)
        fy_error("%s: the listening socket (fd %d) could not be watched again: new "
                 "connections are not accepted",
                 b->name, b->listen->fd);
}

ferry_status_t fy_listen_backoff_init(fy_listen_backoff_t *b, fy_listen_watch_cb_t watch,
                                      fy_listen_unwatch_cb_t unwatch, void *ctx,
                                      fy_worker_fd_t *listen, const char *name)
{
    memset(b, 0, sizeof(*b));
    b->watch = watch;
    b->unwatch = unwatch;
    b->ctx = ctx;
    b->listen = listen;
    b->name = name;
    b->timer.fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (b->timer.fd < 0) {
        fy_error("%s: timerfd_create for the listener's back-off failed: %s", name,
                 strerror(errno));
        return FERRY_ERR_IO;
    }
    b->timer.cb = listen_backoff_timer_cb;
    b->timer.arg = b;
    if (watch(ctx, &b->timer) != FERRY_OK) {
        close(b->timer.fd);
        b->timer.fd = -1;
        return FERRY_ERR_IO;
    }
    return FERRY_OK;
}

void fy_listen_backoff_fini(fy_listen_backoff_t *b)
{
    if (b->timer.fd < 0)
        return;
    b->unwatch(b->ctx, &b->timer);
    close(b->timer.fd);
    b->timer.fd = -1;
}

bool fy_listen_backoff_failed(fy_listen_backoff_t *b, int err)
{
    if (err != EMFILE && err != ENFILE && err != ENOBUFS && err != ENOMEM)
        return false;
    if (!b->exhausted) {
        struct rlimit rl = {0};
        (void)getrlimit(RLIMIT_NOFILE, &rl);
        b->exhausted = true;
        b->delay_ms = FY_LISTEN_BACKOFF_FIRST_MS;
        b->episode_start_ns = fy_time_now_ns();
        b->episodes++;
        static fy_log_limit_t exhausted_log_limit; /* a warning a peer can trigger */
        fy_warn_limited(&exhausted_log_limit,
                        "%s: accept on the listening socket (fd %d) failed: %s (open-files "
                        "limit %llu): new connections wait in the backlog, retried after %u ms, "
                        "then up to every %u ms, until descriptors are free (raise the limit: "
                        "ulimit -n, or setrlimit(RLIMIT_NOFILE); or close idle connections)",
                        b->name, b->listen->fd, strerror(err), (unsigned long long)rl.rlim_cur,
                        FY_LISTEN_BACKOFF_FIRST_MS, FY_LISTEN_BACKOFF_MAX_MS);
    } else if (b->delay_ms == 0) {
        b->delay_ms = FY_LISTEN_BACKOFF_FIRST_MS; /* an accept got through in between */
    } else {
        b->delay_ms =
            b->delay_ms * 2 > FY_LISTEN_BACKOFF_MAX_MS ? FY_LISTEN_BACKOFF_MAX_MS : b->delay_ms * 2;
        fy_debug("%s: accept failed again: %s; next try in %u ms", b->name, strerror(err),
                 b->delay_ms);
    }
    struct itimerspec its = {.it_value = {.tv_sec = b->delay_ms / 1000,
                                          .tv_nsec = (long)(b->delay_ms % 1000) * 1000000L}};
    if (b->timer.fd < 0 || timerfd_settime(b->timer.fd, 0, &its, NULL) != 0) {
        fy_error("%s: timerfd_settime for the listener's back-off failed: %s; accepting is "
                 "retried at once",
                 b->name, strerror(errno));
        return true;
    }
    if (!b->paused) {
        b->unwatch(b->ctx, b->listen);
        b->paused = true;
    }
    return true;
}

void fy_listen_backoff_accepted(fy_listen_backoff_t *b)
{
    b->delay_ms = 0;
}

void fy_listen_backoff_drained(fy_listen_backoff_t *b)
{
    if (!b->exhausted)
        return;
    fy_info("%s: every waiting connection accepted, %llu ms after descriptors ran out", b->name,
            (unsigned long long)((fy_time_now_ns() - b->episode_start_ns) / 1000000u));
    b->exhausted = false;
    b->delay_ms = 0;
}
