/* The worker's progress engine: transports' polls, the epoll set, arm/wait, deferred calls. */
#define _GNU_SOURCE
#include "progress/worker.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <unistd.h>

#include "core/compiler.h"
#include "core/config.h"
#include "core/log.h"
#include "core/time.h"
#include "wireup/address.h"
#include "wireup/ep.h"

static const fy_config_var_t worker_spin_var = {
    .name = "FERRY_WAIT_SPIN_US",
    .type = FERRY_CONFIG_SIZE,
    .default_value = "50",
    .description = "microseconds ferry_worker_wait polls before it sleeps in the kernel (a "
                   "wake-up from sleep costs ~40 us here)"};
static const fy_config_var_t *const worker_spin_reg
    __attribute__((used, section("ferry_config_registry"))) = &worker_spin_var;

/* While spinning, the epoll set (sockets: connects, hang-ups) is looked at every this many
 * ns, so that a busy worker pays for the system call rarely. */
#define WORKER_EPOLL_INTERVAL_NS 100000u
/* How many epoll events one progress call handles at most. */
#define WORKER_EPOLL_BATCH 16

ferry_status_t fy_worker_fd_add(ferry_worker_t *worker, fy_worker_fd_t *entry, uint32_t events)
{
    struct epoll_event ev = {.events = events, .data.ptr = entry};
    if (epoll_ctl(worker->epoll_fd, EPOLL_CTL_ADD, entry->fd, &ev) != 0) {
        fy_error("epoll_ctl(ADD, epoll fd %d, fd %d) failed: %s", worker->epoll_fd, entry->fd,
                 strerror(errno));
        return FERRY_ERR_IO;
    }
    return FERRY_OK;
}

void fy_worker_fd_remove(ferry_worker_t *worker, fy_worker_fd_t *entry)
{
    if (entry->fd >= 0 && epoll_ctl(worker->epoll_fd, EPOLL_CTL_DEL, entry->fd, NULL) != 0)
        fy_debug("epoll_ctl(DEL, fd %d): %s", entry->fd, strerror(errno));
}

fy_hot void fy_worker_defer(ferry_worker_t *worker, fy_deferred_t *deferred)
{
    fy_list_push_tail(&worker->deferred, &deferred->link);
}

void fy_worker_undefer(ferry_worker_t *worker, fy_deferred_t *deferred)
{
    (void)worker;
    fy_list_remove(&deferred->link);
}

static unsigned worker_run_deferred(ferry_worker_t *worker)
{
    unsigned count = 0;
    fy_list_link_t *link;
    /* Callbacks may queue more; run only what is there now plus what they add (bounded by
     * the queue draining), one at a time so that a callback may remove any entry. */
    while ((link = fy_list_pop_head(&worker->deferred)) != NULL) {
        fy_deferred_t *deferred = fy_list_entry(link, fy_deferred_t, link);
        deferred->cb(deferred);
        count++;
    }
    return count;
}

/* Dispatch ready epoll events, one per system call so that a callback may safely remove or
 * free any other entry. */
static unsigned worker_poll_fds(ferry_worker_t *worker, int timeout_ms, ferry_status_t *status)
{
    unsigned count = 0;
    for (unsigned i = 0; i < WORKER_EPOLL_BATCH; i++) {
        struct epoll_event ev;
        int n = epoll_wait(worker->epoll_fd, &ev, 1, i == 0 ? timeout_ms : 0);
        if (n < 0) {
            if (errno == EINTR)
                break;
            fy_error("epoll_wait(epoll fd %d) failed: %s", worker->epoll_fd, strerror(errno));
            if (status != NULL)
                *status = FERRY_ERR_IO;
            break;
        }
        if (n == 0)
            break;
        fy_worker_fd_t *entry = ev.data.ptr;
        if (entry->cb != NULL) {
            entry->cb(entry->arg, ev.events);
            count++;
        }
    }
    return count;
}

static void worker_disarm(ferry_worker_t *worker)
{
    if (worker->sleepers > 0)
        return; /* multi-thread mode: a thread sleeps in ferry_worker_wait, peers must wake it */
    worker->armed = 0;
    for (unsigned i = 0; i < worker->tl_active_count; i++) {
        unsigned t = worker->tl_active[i];
        if (fy_transports[t]->disarm != NULL)
            fy_transports[t]->disarm(worker->tl[t]);
    }
}

static unsigned worker_progress_modules(ferry_worker_t *worker)
{
    unsigned count = 0;
    for (size_t m = 0; m < fy_modules_count; m++) {
        if ((worker->module_progress & (1u << m)) && fy_modules[m]->progress != NULL)
            count += fy_modules[m]->progress(worker);
    }
    return count;
}

static inline unsigned worker_progress(ferry_worker_t *worker)
{
    unsigned count = 0;

    if (fy_worker_forked(worker))
        return 0;
    worker->in_progress++;                 /* callbacks run below: see ferry_ep_destroy */
    unsigned calls = ++worker->poll_count; /* transports see it (fy_tl_local_t.progress_calls) */
    /* the transports that poll and have something to poll, in order; the skip bits are read
     * again after each poll (a poll's callbacks may give another transport work) */
    uint32_t polled = 0; /* transports 0..t, once t was polled */
    uint32_t want;
    while ((want = worker->tl_poll_mask & ~(worker->tl_poll_skip | polled)) != 0) {
        unsigned t = (unsigned)__builtin_ctz(want);
        polled |= (2u << t) - 1u;
        count += fy_transports[t]->poll(worker->tl[t]);
    }
    if (fy_unlikely(worker->module_progress != 0))
        count += worker_progress_modules(worker); /* what waited for room, timeouts */
    if (fy_unlikely(worker->armed)) {
        worker_disarm(worker);
        count += worker_poll_fds(worker, 0, NULL);
    } else if (fy_unlikely((calls & 63) == 0)) {
        uint64_t now = fy_time_now_ns();
        if (now >= worker->next_epoll_ns) {
            worker->next_epoll_ns = now + WORKER_EPOLL_INTERVAL_NS;
            count += worker_poll_fds(worker, 0, NULL);
        }
    }
    if (fy_unlikely(!fy_list_is_empty(&worker->deferred)))
        count += worker_run_deferred(worker);
    worker->in_progress--;
    return count;
}

FERRY_EXPORT fy_hot unsigned ferry_worker_progress(ferry_worker_t *worker)
{
    ferry_worker_t *locked = fy_worker_multi(worker);
    if (fy_likely(locked == NULL))
        return worker_progress(worker);
    fy_worker_lock(locked);
    unsigned count = worker_progress(worker);
    fy_worker_unlock(locked);
    return count;
}

static inline ferry_status_t locked_worker_get_fd(ferry_worker_t *worker, int *fd_p)
{
    if (worker == NULL || fd_p == NULL)
        return FERRY_ERR_INVALID_PARAM;
    if (fy_worker_forked(worker))
        return FERRY_ERR_FORKED;
    *fd_p = worker->epoll_fd;
    return FERRY_OK;
}

FERRY_EXPORT ferry_status_t ferry_worker_get_fd(ferry_worker_t *worker, int *fd_p)
{
    ferry_worker_t *locked = fy_worker_multi(worker);
    if (fy_likely(locked == NULL))
        return locked_worker_get_fd(worker, fd_p);
    fy_worker_lock(locked);
    ferry_status_t status_or_value = locked_worker_get_fd(worker, fd_p);
    fy_worker_unlock(locked);
    return status_or_value;
}

static inline ferry_status_t locked_worker_arm(ferry_worker_t *worker)
{
    if (worker == NULL)
        return FERRY_ERR_INVALID_PARAM;
    if (fy_worker_forked(worker))
        return FERRY_ERR_FORKED;
    if (!fy_list_is_empty(&worker->deferred))
        return FERRY_ERR_BUSY;
    /* work that only a module's progress moves on: no peer will signal it */
    for (size_t m = 0; m < fy_modules_count; m++) {
        if (fy_modules[m]->busy != NULL && fy_modules[m]->busy(worker))
            return FERRY_ERR_BUSY;
    }
    for (unsigned i = 0; i < worker->tl_active_count; i++) {
        unsigned t = worker->tl_active[i];
        if (fy_transports[t]->arm != NULL &&
            fy_transports[t]->arm(worker->tl[t]) == FERRY_ERR_BUSY) {
            worker_disarm(worker);
            return FERRY_ERR_BUSY;
        }
    }
    worker->armed = 1;
    return FERRY_OK;
}

FERRY_EXPORT ferry_status_t ferry_worker_arm(ferry_worker_t *worker)
{
    ferry_worker_t *locked = fy_worker_multi(worker);
    if (fy_likely(locked == NULL))
        return locked_worker_arm(worker);
    fy_worker_lock(locked);
    ferry_status_t status_or_value = locked_worker_arm(worker);
    fy_worker_unlock(locked);
    return status_or_value;
}

/* Multi-thread mode: the worker's lock is held only to progress and to arm, never while
 * asleep; the sleeper counts itself in worker->sleepers so that another thread's progress
 * leaves the worker armed (peers keep waking the sleepers) until the last sleeper woke. A
 * caller that holds the lock (a ferry call that waits, e.g. ferry_ep_wait_connected) gives it
 * up entirely meanwhile. */
static ferry_status_t worker_wait_multi(ferry_worker_t *worker, int timeout_ms)
{
    ferry_status_t status = FERRY_OK;
    unsigned held = fy_worker_unlock_all(worker);
    uint64_t start = fy_time_now_ns();
    uint64_t deadline = timeout_ms < 0 ? UINT64_MAX : start + (uint64_t)timeout_ms * 1000000u;
    uint64_t spin_end = start + worker->wait_spin_ns;
    for (;;) {
        fy_worker_lock(worker);
        if (worker_progress(worker) > 0)
            break;
        uint64_t now = fy_time_now_ns();
        if (now >= deadline) {
            status = FERRY_ERR_TIMED_OUT;
            break;
        }
        if (now < spin_end || ferry_worker_arm(worker) == FERRY_ERR_BUSY) {
            fy_worker_unlock(worker);
            fy_cpu_relax();
            continue;
        }
        int ms = -1;
        if (deadline != UINT64_MAX)
            ms = (int)((deadline - now + 999999u) / 1000000u);
        struct pollfd pfd = {.fd = worker->epoll_fd, .events = POLLIN};
        worker->sleepers++;
        fy_worker_unlock(worker);
        int n = poll(&pfd, 1, ms);
        int err = errno;
        fy_worker_lock(worker);
        worker->sleepers--;
        worker_disarm(worker); /* unless another thread still sleeps */
        if (n < 0 && err != EINTR) {
            fy_error("poll(epoll fd %d) failed: %s", worker->epoll_fd, strerror(err));
            status = FERRY_ERR_IO;
            break;
        }
        worker->in_progress++; /* fd callbacks run here too */
        unsigned count = worker_poll_fds(worker, 0, &status);
        worker->in_progress--;
        count += worker_progress(worker);
        if (status != FERRY_OK || count > 0)
            break;
        fy_worker_unlock(worker); /* another thread took the events: sleep again */
    }
    fy_worker_unlock(worker);
    if (held > 0)
        fy_worker_relock(worker, held);
    return status;
}

FERRY_EXPORT ferry_status_t ferry_worker_wait(ferry_worker_t *worker, int timeout_ms)
{
    ferry_status_t status = FERRY_OK;

    if (worker == NULL)
        return FERRY_ERR_INVALID_PARAM;
    if (fy_worker_forked(worker))
        return FERRY_ERR_FORKED;
    if (fy_unlikely(worker->multi))
        return worker_wait_multi(worker, timeout_ms);
    uint64_t start = fy_time_now_ns();
    uint64_t deadline = timeout_ms < 0 ? UINT64_MAX : start + (uint64_t)timeout_ms * 1000000u;
    uint64_t spin_end = start + worker->wait_spin_ns;
    for (;;) {
        if (worker_progress(worker) > 0)
            return FERRY_OK;
        uint64_t now = fy_time_now_ns();
        if (now >= deadline)
            return FERRY_ERR_TIMED_OUT;
        if (now < spin_end) {
            fy_cpu_relax();
            continue;
        }
        if (ferry_worker_arm(worker) == FERRY_ERR_BUSY)
            continue;
        int ms = -1;
        if (deadline != UINT64_MAX)
            ms = (int)((deadline - now + 999999u) / 1000000u);
        worker->in_progress++; /* fd callbacks run here too */
        unsigned n = worker_poll_fds(worker, ms, &status);
        worker->in_progress--;
        worker_disarm(worker);
        if (status != FERRY_OK)
            return status;
        if (n > 0) {
            worker_progress(worker);
            return FERRY_OK;
        }
    }
}

static inline ferry_status_t locked_worker_id(const ferry_worker_t *worker, ferry_peer_id_t *id_p)
{
    if (worker == NULL || id_p == NULL)
        return FERRY_ERR_INVALID_PARAM;
    if (fy_worker_forked(worker))
        return FERRY_ERR_FORKED;
    *id_p = worker->uuid;
    return FERRY_OK;
}

FERRY_EXPORT ferry_status_t ferry_worker_id(const ferry_worker_t *worker, ferry_peer_id_t *id_p)
{
    ferry_worker_t *locked = fy_worker_multi(worker);
    if (fy_likely(locked == NULL))
        return locked_worker_id(worker, id_p);
    fy_worker_lock(locked);
    ferry_status_t status_or_value = locked_worker_id(worker, id_p);
    fy_worker_unlock(locked);
    return status_or_value;
}

static inline ferry_status_t locked_worker_address(ferry_worker_t *worker, const void **address_p,
                                                   size_t *length_p)
{
    if (worker == NULL || address_p == NULL || length_p == NULL)
        return FERRY_ERR_INVALID_PARAM;
    if (fy_worker_forked(worker))
        return FERRY_ERR_FORKED;
    *address_p = worker->address;
    *length_p = worker->address_length;
    return FERRY_OK;
}

FERRY_EXPORT ferry_status_t ferry_worker_address(ferry_worker_t *worker, const void **address_p,
                                                 size_t *length_p)
{
    ferry_worker_t *locked = fy_worker_multi(worker);
    if (fy_likely(locked == NULL))
        return locked_worker_address(worker, address_p, length_p);
    fy_worker_lock(locked);
    ferry_status_t status_or_value = locked_worker_address(worker, address_p, length_p);
    fy_worker_unlock(locked);
    return status_or_value;
}

FERRY_EXPORT ferry_status_t
ferry_worker_address_compact(ferry_worker_t *worker, uint8_t address[FERRY_ADDRESS_COMPACT_SIZE])
{
    if (worker == NULL || address == NULL)
        return FERRY_ERR_INVALID_PARAM;
    memcpy(address, worker->address_compact, FERRY_ADDRESS_COMPACT_SIZE);
    return FERRY_OK;
}

static ferry_status_t worker_build_address(ferry_worker_t *worker)
{
    size_t offset = FERRY_ADDRESS_HEADER_SIZE;
    uint16_t records = 0;

    for (unsigned i = 0; i < worker->tl_active_count; i++) {
        unsigned t = worker->tl_active[i];
        size_t length = sizeof(worker->address) - offset - FERRY_ADDRESS_RECORD_HEADER_SIZE;
        uint8_t *rec = worker->address + offset;
        ferry_status_t status = fy_transports[t]->address(
            worker->tl[t], rec + FERRY_ADDRESS_RECORD_HEADER_SIZE, &length);
        if (status != FERRY_OK)
            return status;
        rec[0] = fy_transports[t]->id;
        rec[1] = 0;
        uint16_t len16 = (uint16_t)length;
        memcpy(rec + 2, &len16, sizeof(len16));
        offset += FERRY_ADDRESS_RECORD_HEADER_SIZE + length;
        records++;
    }
    fy_address_write_header(worker->address, worker->uuid, &worker->context->host,
                            (uint32_t)getpid(), records);
    fy_address_finish(worker->address, (uint16_t)offset);
    worker->address_length = offset;

    fy_address_compact_t compact = {.worker_uuid = worker->uuid,
                                    .ns_digest = fy_host_id_ns_digest(&worker->context->host),
                                    .pid = (uint32_t)getpid()};
    memcpy(compact.boot_id, worker->context->host.boot_id, sizeof(compact.boot_id));
    for (unsigned i = 0; i < worker->tl_active_count; i++) {
        unsigned t = worker->tl_active[i];
        if (fy_transports[t]->compact_fill != NULL)
            fy_transports[t]->compact_fill(worker->tl[t], &compact.fields);
    }
    fy_address_compact_write(worker->address_compact, &compact);
    for (unsigned i = 0; i < worker->tl_active_count; i++) {
        fy_tl_local_t *local = &worker->tl_local[worker->tl_active[i]];
        local->address = worker->address;
        local->address_length = worker->address_length;
    }
    return FERRY_OK;
}

/* Clean up the modules that were initialized, in list order. */
static void worker_cleanup_modules(ferry_worker_t *worker, size_t count)
{
    for (size_t m = 0; m < count; m++)
        fy_modules[m]->cleanup(worker);
}

static ferry_status_t worker_init_modules(ferry_worker_t *worker)
{
    for (size_t m = 0; m < fy_modules_count; m++) {
        ferry_status_t status = fy_modules[m]->init(worker, &worker->module_state[m]);
        if (status != FERRY_OK) {
            worker_cleanup_modules(worker, m);
            return status;
        }
    }
    return FERRY_OK;
}

static void worker_finalize_transports(ferry_worker_t *worker)
{
    for (unsigned i = worker->tl_active_count; i-- > 0;) {
        unsigned t = worker->tl_active[i];
        fy_transports[t]->finalize(worker->tl[t]);
        worker->tl[t] = NULL;
    }
    worker->tl_active_count = 0;
    worker->tl_poll_mask = 0;
}

FERRY_EXPORT ferry_status_t ferry_worker_create(ferry_context_t *context,
                                                const ferry_worker_params_t *params,
                                                ferry_worker_t **worker_p)
{
    ferry_worker_t *worker;
    ferry_status_t status;

    if (context == NULL || worker_p == NULL)
        return FERRY_ERR_INVALID_PARAM;
    if (fy_context_forked(context))
        return FERRY_ERR_FORKED;
    worker = calloc(1, sizeof(*worker));
    if (worker == NULL) {
        fy_error("calloc(%zu) for a worker failed", sizeof(*worker));
        return FERRY_ERR_NO_MEMORY;
    }
    worker->context = context;
    worker->fork_gen = context->fork_gen;
    worker->retired.size = sizeof(worker->retired);
    if (params != NULL)
        worker->params = *params;
    if (worker->params.thread_mode != FERRY_THREAD_SINGLE &&
        worker->params.thread_mode != FERRY_THREAD_MULTI) {
        free(worker);
        return FERRY_ERR_INVALID_PARAM;
    }
    worker->multi = worker->params.thread_mode == FERRY_THREAD_MULTI;
    fy_spinlock_init(&worker->lock);
    fy_worker_bias_init(worker);
    fy_list_init(&worker->eps);
    fy_list_init(&worker->deferred);
    worker->wait_spin_ns = fy_config_size_in(&context->config, &worker_spin_var) * 1000u;
    do { /* FERRY_PEER_ANY (0) is no worker's id */
        if (getrandom(&worker->uuid, sizeof(worker->uuid), 0) != sizeof(worker->uuid)) {
            fy_error("getrandom(%zu bytes) for the worker id failed: %s", sizeof(worker->uuid),
                     strerror(errno));
            status = FERRY_ERR_IO;
            goto err_free_worker;
        }
    } while (worker->uuid == FERRY_PEER_ANY);
    worker->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    if (worker->epoll_fd < 0) {
        fy_error("epoll_create1 failed: %s (check the open-files limit, ulimit -n)",
                 strerror(errno));
        status = FERRY_ERR_IO;
        goto err_free_worker;
    }
    for (size_t t = 0; t < fy_transports_count; t++) {
        if (!context->enabled[t])
            continue;
        worker->tl_local[t] = (fy_tl_local_t){.worker_uuid = worker->uuid,
                                              .host = context->host,
                                              .caps = context->caps[t],
                                              .keytable_fd = context->mem.keytable_fd,
                                              .config = &context->config,
                                              .poll_skip = &worker->tl_poll_skip,
                                              .poll_bit = 1u << t,
                                              .progress_calls = &worker->poll_count};
        status = fy_transports[t]->init(worker, &worker->tl_local[t], &worker->tl[t]);
        if (status != FERRY_OK)
            goto err_finalize_transports;
        worker->tl_active[worker->tl_active_count++] = (unsigned)t;
        if (fy_transports[t]->poll != NULL)
            worker->tl_poll_mask |= 1u << t;
    }
    status = worker_build_address(worker);
    if (status != FERRY_OK)
        goto err_finalize_transports;
    status = worker_init_modules(worker);
    if (status != FERRY_OK)
        goto err_finalize_transports;
    context->worker_count++;
    if (worker->multi)
        context->multi_workers++;
    *worker_p = worker;
    return FERRY_OK;

err_finalize_transports:
    worker_finalize_transports(worker);
    close(worker->epoll_fd);
err_free_worker:
    free(worker);
    return status;
}

FERRY_EXPORT void ferry_worker_destroy(ferry_worker_t *worker)
{
    if (worker == NULL || fy_worker_forked(worker))
        return;                          /* a forked child's copy: left alone (ferry.h, "fork()") */
    fy_counters_dump_at_destroy(worker); /* FERRY_STATS */
    worker->destroying = 1; /* callbacks of what is canceled below must not free endpoints */
    fy_ep_destroy_all(worker);
    worker_run_deferred(worker); /* canceled operations report to their completions */
    worker_finalize_transports(worker);
    worker_run_deferred(worker);
    worker_cleanup_modules(worker, fy_modules_count);
    close(worker->epoll_fd);
    worker->context->worker_count--;
    if (worker->multi)
        worker->context->multi_workers--;
    free(worker);
}
