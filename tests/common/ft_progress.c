/* Progress-until loops with deadlines. */
#define _GNU_SOURCE
#include "ft_progress.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <string.h>

#include "ft_chan.h"
#include "ft_check.h"
#include "ft_peer.h"

ft_deadline_t ft_deadline_in_ms(int timeout_ms)
{
    ft_deadline_t d = {.end_ns = ft_now_ns() + (uint64_t)timeout_ms * 1000000u};
    return d;
}

bool ft_deadline_passed(ft_deadline_t deadline)
{
    return ft_now_ns() >= deadline.end_ns;
}

static unsigned ft_idle_spins;

unsigned ft_progress_once(ferry_worker_t *worker)
{
    static unsigned calls;
    unsigned n = ferry_worker_progress(worker);
    if (n > 0) {
        ft_idle_spins = 0;
    } else if (++ft_idle_spins % 256 == 0) {
        /* idle for a while: let the peers (maybe on this core) run */
        sched_yield();
    }
    if ((++calls & 0xfff) == 0)
        ft_peers_check();
    return n;
}

bool ft_progress_try_until(ferry_worker_t *worker, int timeout_ms, ft_cond_fn_t cond, void *arg)
{
    ft_deadline_t deadline = ft_deadline_in_ms(timeout_ms);
    unsigned spins = 0;
    while (!cond(arg)) {
        ft_progress_once(worker);
        if ((++spins & 0x3f) == 0 && ft_deadline_passed(deadline))
            return cond(arg);
    }
    return true;
}

void ft_progress_until(ferry_worker_t *worker, int timeout_ms, ft_cond_fn_t cond, void *arg,
                       const char *what)
{
    FT_CHECK(ft_progress_try_until(worker, timeout_ms, cond, arg),
             "timed out after %d ms waiting for %s", timeout_ms, what);
}

void ft_wait_until(ferry_worker_t *worker, int timeout_ms, ft_cond_fn_t cond, void *arg,
                   const char *what)
{
    ft_deadline_t deadline = ft_deadline_in_ms(timeout_ms);
    while (!cond(arg)) {
        uint64_t now = ft_now_ns();
        FT_CHECK(now < deadline.end_ns,
                 "timed out after %d ms (in ferry_worker_wait) waiting "
                 "for %s",
                 timeout_ms, what);
        uint64_t left_ms = (deadline.end_ns - now) / 1000000u + 1;
        int slice = left_ms > 200 ? 200 : (int)left_ms;
        ferry_status_t status = ferry_worker_wait(worker, slice);
        FT_CHECK(status == FERRY_OK || status == FERRY_ERR_TIMED_OUT,
                 "ferry_worker_wait returned %s (%s)", ferry_status_name(status),
                 ferry_status_string(status));
        if (status == FERRY_ERR_TIMED_OUT)
            ft_peers_check();
    }
}

typedef struct ft_count_cond {
    const uint64_t *counter;
    uint64_t target;
} ft_count_cond_t;

static bool ft_count_reached(void *arg)
{
    const ft_count_cond_t *c = arg;
    return *(volatile const uint64_t *)c->counter >= c->target;
}

void ft_progress_until_count(ferry_worker_t *worker, int timeout_ms, const uint64_t *counter,
                             uint64_t target, const char *what)
{
    ft_count_cond_t c = {.counter = counter, .target = target};
    if (!ft_progress_try_until(worker, timeout_ms, ft_count_reached, &c))
        ft_fail_at(__FILE__, __LINE__, "timed out after %d ms waiting for %s (%llu of %llu)",
                   timeout_ms, what, (unsigned long long)*counter, (unsigned long long)target);
}

static bool ft_completion_done(void *arg)
{
    const ferry_completion_t *comp = arg;
    return *(volatile const int64_t *)&comp->count == 0;
}

void ft_progress_until_completion(ferry_worker_t *worker, int timeout_ms,
                                  const ferry_completion_t *comp, const char *what)
{
    if (!ft_progress_try_until(worker, timeout_ms, ft_completion_done, (void *)comp))
        ft_fail_at(__FILE__, __LINE__,
                   "timed out after %d ms waiting for %s (completion count still %lld)", timeout_ms,
                   what, (long long)comp->count);
}

static bool ft_never(void *arg)
{
    (void)arg;
    return false;
}

void ft_progress_for_ms(ferry_worker_t *worker, int ms)
{
    (void)ft_progress_try_until(worker, ms, ft_never, NULL);
}

typedef struct ft_token_cond {
    int chan;
    uint32_t tag;
    ft_token_t *token;
    unsigned spins;
} ft_token_cond_t;

static bool ft_token_arrived(void *arg)
{
    ft_token_cond_t *c = arg;
    /* a system call: look every few spins only */
    if ((++c->spins & 0x1f) != 0)
        return false;
    return ft_chan_try_token(c->chan, c->tag, c->token);
}

void ft_progress_until_token(ferry_worker_t *worker, int chan, uint32_t tag, int timeout_ms,
                             ft_token_t *token)
{
    ft_token_t local;
    ft_token_cond_t c = {.chan = chan, .tag = tag, .token = token != NULL ? token : &local};
    if (!ft_progress_try_until(worker, timeout_ms, ft_token_arrived, &c))
        ft_fail_at(__FILE__, __LINE__,
                   "timed out after %d ms (making progress) waiting for token 0x%x on channel "
                   "fd %d",
                   timeout_ms, tag, chan);
}

size_t ft_wait_chan_recv(ferry_worker_t *worker, int chan, void *buf, size_t cap, int timeout_ms)
{
    ft_deadline_t deadline = ft_deadline_in_ms(timeout_ms);
    int worker_fd = -1;
    size_t len = 0;
    FT_CHECK_OK(ferry_worker_get_fd(worker, &worker_fd));
    for (;;) {
        if (ft_chan_try_recv(chan, buf, cap, &len))
            return len;
        while (ferry_worker_progress(worker) != 0)
            ;
        if (ferry_worker_arm(worker) == FERRY_ERR_BUSY)
            continue;
        uint64_t now = ft_now_ns();
        FT_CHECK(now < deadline.end_ns,
                 "timed out after %d ms (progressing) waiting for a message on channel fd %d",
                 timeout_ms, chan);
        uint64_t left_ms = (deadline.end_ns - now) / 1000000u + 1;
        struct pollfd fds[2] = {{.fd = chan, .events = POLLIN},
                                {.fd = worker_fd, .events = POLLIN}};
        int n = poll(fds, 2, left_ms > 200 ? 200 : (int)left_ms);
        FT_CHECK(n >= 0 || errno == EINTR, "poll(channel fd %d, worker fd %d): %s", chan, worker_fd,
                 strerror(errno));
        if (n == 0)
            ft_peers_check();
    }
}
