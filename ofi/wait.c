/*
 * libferry-fi — the endpoints bound to a CQ or a counter (fy_ofi_epset_t): progress them all,
 * and sleep on them: arm each endpoint's ferry worker (ferry_worker_arm: FERRY_ERR_BUSY means
 * "progress instead") and wait on an epoll set holding their fds.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "ofi.h"

int fy_ofi_epset_init(fy_ofi_epset_t *set, bool with_fd)
{
    memset(set, 0, sizeof(*set));
    set->epoll_fd = -1;
    if (with_fd) {
        set->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
        if (set->epoll_fd < 0) {
            FY_OFI_WARN(FI_LOG_CQ, "epoll_create1 failed: %s\n", strerror(errno));
            return -FI_EMFILE;
        }
    }
    return 0;
}

void fy_ofi_epset_fini(fy_ofi_epset_t *set)
{
    if (set->epoll_fd >= 0)
        close(set->epoll_fd);
    free(set->eps);
    free(set->binds);
    memset(set, 0, sizeof(*set));
    set->epoll_fd = -1;
}

int fy_ofi_epset_add(fy_ofi_epset_t *set, fy_ofi_ep_t *ep)
{
    for (size_t i = 0; i < set->count; i++) {
        if (set->eps[i] == ep) {
            set->binds[i]++;
            set->total++;
            return 0;
        }
    }
    fy_ofi_ep_t **eps = realloc(set->eps, (set->count + 1) * sizeof(*eps));
    if (eps == NULL)
        return -FI_ENOMEM;
    set->eps = eps;
    int *binds = realloc(set->binds, (set->count + 1) * sizeof(*binds));
    if (binds == NULL)
        return -FI_ENOMEM;
    set->binds = binds;
    if (set->epoll_fd >= 0) {
        int rc = fy_ofi_epoll_add(set->epoll_fd, ep->worker_fd);
        if (rc != 0)
            return rc;
    }
    set->eps[set->count] = ep;
    set->binds[set->count] = 1;
    set->count++;
    set->total++;
    return 0;
}

void fy_ofi_epset_remove(fy_ofi_epset_t *set, fy_ofi_ep_t *ep)
{
    for (size_t i = 0; i < set->count; i++) {
        if (set->eps[i] != ep)
            continue;
        set->total--;
        if (--set->binds[i] == 0) {
            if (set->epoll_fd >= 0)
                (void)epoll_ctl(set->epoll_fd, EPOLL_CTL_DEL, ep->worker_fd, NULL);
            set->count--;
            set->eps[i] = set->eps[set->count];
            set->binds[i] = set->binds[set->count];
        }
        return;
    }
}

unsigned fy_ofi_epset_progress_all(fy_ofi_epset_t *set)
{
    unsigned events = 0;
    for (size_t i = 0; i < set->count; i++)
        events += fy_ofi_ep_progress(set->eps[i]);
    return events;
}

int fy_ofi_epset_arm(fy_ofi_epset_t *set)
{
    for (size_t i = 0; i < set->count; i++) {
        fy_ofi_ep_t *ep = set->eps[i];
        if (!fy_ofi_list_empty(&ep->deferred) || !fy_ofi_list_empty(&ep->closing))
            return -FI_EAGAIN;
        if (ferry_worker_arm(ep->worker) != FERRY_OK)
            return -FI_EAGAIN;
    }
    return 0;
}

int fy_ofi_epset_wait(fy_ofi_domain_t *domain, fy_ofi_epset_t *set, int timeout_ms)
{
    fy_ofi_domain_lock(domain);
    int rc = fy_ofi_epset_arm(set);
    fy_ofi_domain_unlock(domain);
    if (rc != 0)
        return 0; /* work is pending: the caller progresses again */
    struct epoll_event events[8];
    int n = epoll_wait(set->epoll_fd, events, 8, timeout_ms);
    if (n == 0)
        return -FI_ETIMEDOUT;
    if (n < 0 && errno != EINTR) {
        FY_OFI_WARN(FI_LOG_CQ, "epoll_wait(fd %d) failed: %s\n", set->epoll_fd, strerror(errno));
        return -FI_EIO;
    }
    return 0;
}

int fy_ofi_epoll_add(int epoll_fd, int fd)
{
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};
    if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0 && errno != EEXIST) {
        FY_OFI_WARN(FI_LOG_CQ, "epoll_ctl(%d, ADD, fd %d) failed: %s\n", epoll_fd, fd,
                    strerror(errno));
        return -FI_EIO;
    }
    return 0;
}

int64_t fy_ofi_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int fy_ofi_wait_obj(enum fi_wait_obj in, const struct fid_wait *wait_set, enum fi_wait_obj *out)
{
    if (wait_set != NULL)
        return -FI_EINVAL;
    switch (in) {
    case FI_WAIT_NONE:
    case FI_WAIT_FD:
        *out = in;
        return 0;
    case FI_WAIT_UNSPEC:
        *out = FI_WAIT_FD;
        return 0;
    default:
        return -FI_ENOSYS; /* wait sets, mutex/cond, yield */
    }
}

int fy_ofi_wait_control(int command, void *arg, enum fi_wait_obj wait_obj, int fd)
{
    switch (command) {
    case FI_GETWAIT:
        if (wait_obj != FI_WAIT_FD || arg == NULL)
            return -FI_EINVAL;
        *(int *)arg = fd;
        return 0;
    case FI_GETWAITOBJ:
        if (arg == NULL)
            return -FI_EINVAL;
        *(enum fi_wait_obj *)arg = wait_obj;
        return 0;
    default:
        return -FI_ENOSYS;
    }
}
