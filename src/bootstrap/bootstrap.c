/* ferry_bootstrap_*: the object, the choice of method, argument checks, locality (see
 * include/ferry/bootstrap.h). The methods are bootstrap_single.c, bootstrap_tcp.c and
 * bootstrap_pmix.c.
 *
 * Configuration: the FERRY_BOOTSTRAP_* variables are declared in this library's own
 * "ferry_config_registry" section; a constructor hands that section to libferry's registry
 * (ferry_config_registry_add, exported by libferry for its companion libraries), so that
 * ferry_info -c lists them and libferry's unknown-name check accepts them. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <ferry/bootstrap.h>
#include <ferry/ferry.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bootstrap/bootstrap_int.h"
#include "core/compiler.h"
#include "core/config.h"
#include "core/log.h"

static const fy_config_var_t bootstrap_method_var = {
    .name = "FERRY_BOOTSTRAP_METHOD",
    .type = FERRY_CONFIG_STRING,
    .default_value = "auto",
    .description = "how ferry_bootstrap_init finds the job's other processes when the program "
                   "asks for auto: auto (pmix under a PMIx launcher, tcp when "
                   "FERRY_BOOTSTRAP_ROOT is set, else single), pmix, tcp or single",
    .flags = FY_CONFIG_PROCESS};
static const fy_config_var_t *const bootstrap_method_reg
    __attribute__((used, section("ferry_config_registry"))) = &bootstrap_method_var;

static const fy_config_var_t bootstrap_timeout_var = {
    .name = "FERRY_BOOTSTRAP_TIMEOUT_MS",
    .type = FERRY_CONFIG_INT,
    .default_value = "30000",
    .description = "bootstrap: how long joining the job (tcp: rank 0 waiting for the others, "
                   "the others retrying their connection) and each collective may take, in ms",
    .flags = FY_CONFIG_PROCESS};
static const fy_config_var_t *const bootstrap_timeout_reg
    __attribute__((used, section("ferry_config_registry"))) = &bootstrap_timeout_var;

static const fy_config_var_t bootstrap_max_length_var = {
    .name = "FERRY_BOOTSTRAP_MAX_LENGTH",
    .type = FERRY_CONFIG_SIZE,
    .default_value = "1m",
    .description = "bootstrap: the largest allgather contribution per rank, in bytes (tcp: "
                   "longer messages from a peer are refused as malformed)",
    .flags = FY_CONFIG_PROCESS};
static const fy_config_var_t *const bootstrap_max_length_reg
    __attribute__((used, section("ferry_config_registry"))) = &bootstrap_max_length_var;

/* This library's part of the registry (hidden: this object's own section). */
extern const fy_config_var_t *const __start_ferry_config_registry[]
    __attribute__((weak, visibility("hidden")));
extern const fy_config_var_t *const __stop_ferry_config_registry[]
    __attribute__((weak, visibility("hidden")));

__attribute__((constructor)) static void bootstrap_register_config(void)
{
    ferry_config_registry_add(__start_ferry_config_registry, __stop_ferry_config_registry);
}

/* Largest allgather result: size * length. */
#define BOOTSTRAP_MAX_TOTAL (1ull << 32)

static const char *const bootstrap_method_names[] = {
    [FERRY_BOOTSTRAP_METHOD_AUTO] = "auto",
    [FERRY_BOOTSTRAP_METHOD_PMIX] = "pmix",
    [FERRY_BOOTSTRAP_METHOD_TCP] = "tcp",
    [FERRY_BOOTSTRAP_METHOD_SINGLE] = "single",
};

FERRY_EXPORT const char *ferry_bootstrap_method_name(ferry_bootstrap_method_t method)
{
    if ((unsigned)method < FERRY_ARRAY_SIZE(bootstrap_method_names))
        return bootstrap_method_names[method];
    return "unknown";
}

FERRY_EXPORT const char *ferry_bootstrap_methods_built(void)
{
#ifdef FERRY_HAVE_PMIX
    return "pmix,tcp,single";
#else
    return "tcp,single";
#endif
}

static const bootstrap_ops_t *bootstrap_ops_of(ferry_bootstrap_method_t method)
{
    switch (method) {
    case FERRY_BOOTSTRAP_METHOD_PMIX:
#ifdef FERRY_HAVE_PMIX
        return &bootstrap_pmix_ops;
#else
        return NULL;
#endif
    case FERRY_BOOTSTRAP_METHOD_TCP:
        return &bootstrap_tcp_ops;
    case FERRY_BOOTSTRAP_METHOD_SINGLE:
        return &bootstrap_single_ops;
    case FERRY_BOOTSTRAP_METHOD_AUTO:
        break;
    }
    return NULL;
}

static bool bootstrap_env_set(const char *name)
{
    const char *value = getenv(name);
    return value != NULL && value[0] != '\0';
}

/* AUTO: FERRY_BOOTSTRAP_METHOD, else what the environment shows. */
static ferry_status_t bootstrap_choose(ferry_bootstrap_method_t asked,
                                       ferry_bootstrap_method_t *method_p)
{
    if (asked != FERRY_BOOTSTRAP_METHOD_AUTO) {
        if ((unsigned)asked >= FERRY_ARRAY_SIZE(bootstrap_method_names)) {
            fy_error("ferry_bootstrap_init: unknown method %d (auto, pmix, tcp or single)",
                     (int)asked);
            return FERRY_ERR_INVALID_PARAM;
        }
        *method_p = asked;
        return FERRY_OK;
    }

    const char *name = ferry_config_string(&bootstrap_method_var);
    for (unsigned m = FERRY_BOOTSTRAP_METHOD_PMIX; m < FERRY_ARRAY_SIZE(bootstrap_method_names);
         m++) {
        if (strcmp(name, bootstrap_method_names[m]) == 0) {
            *method_p = (ferry_bootstrap_method_t)m;
            return FERRY_OK;
        }
    }
    if (strcmp(name, "auto") != 0) {
        fy_error("FERRY_BOOTSTRAP_METHOD=\"%s\" is not a bootstrap method: use auto, pmix, "
                 "tcp or single",
                 name);
        return FERRY_ERR_INVALID_PARAM;
    }
    if (bootstrap_env_set("PMIX_RANK") || bootstrap_env_set("PMIX_NAMESPACE"))
        *method_p = FERRY_BOOTSTRAP_METHOD_PMIX;
    else if (bootstrap_env_set("FERRY_BOOTSTRAP_ROOT"))
        *method_p = FERRY_BOOTSTRAP_METHOD_TCP;
    else
        *method_p = FERRY_BOOTSTRAP_METHOD_SINGLE;
    return FERRY_OK;
}

/* This host's identity for locality without a launcher: boot id, network namespace, host
 * name (the netns test bed's "hosts" differ in the last two). Zero-padded. */
#define BOOTSTRAP_HOST_ID_SIZE 128

static void bootstrap_host_id(char id[BOOTSTRAP_HOST_ID_SIZE])
{
    char boot_id[64] = "";
    char host[64] = "";
    struct stat st = {0};

    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
    if (f != NULL) {
        if (fgets(boot_id, sizeof(boot_id), f) == NULL)
            boot_id[0] = '\0';
        boot_id[strcspn(boot_id, "\n")] = '\0';
        fclose(f);
    }
    if (stat("/proc/self/ns/net", &st) != 0)
        st.st_ino = 0;
    if (gethostname(host, sizeof(host) - 1) != 0)
        host[0] = '\0';
    memset(id, 0, BOOTSTRAP_HOST_ID_SIZE);
    /* a boot id is 36 characters: the bounds keep the whole text within the 128 bytes */
    snprintf(id, BOOTSTRAP_HOST_ID_SIZE, "%.40s/%llu/%.63s", boot_id, (unsigned long long)st.st_ino,
             host);
}

/* bs->local from the launcher, else from an allgather of host identities. */
static ferry_status_t bootstrap_locality(ferry_bootstrap_t *bs)
{
    ferry_status_t status = FERRY_ERR_UNSUPPORTED;

    if (bs->ops->locality != NULL)
        status = bs->ops->locality(bs);
    if (status != FERRY_ERR_UNSUPPORTED)
        return status;

    char mine[BOOTSTRAP_HOST_ID_SIZE];
    char *all = malloc((size_t)bs->size * BOOTSTRAP_HOST_ID_SIZE);
    if (all == NULL) {
        fy_error("malloc(%zu) for the bootstrap's host identities failed",
                 (size_t)bs->size * BOOTSTRAP_HOST_ID_SIZE);
        return FERRY_ERR_NO_MEMORY;
    }
    bootstrap_host_id(mine);
    status = ferry_bootstrap_allgather(bs, mine, sizeof(mine), all);
    if (status == FERRY_OK) {
        for (unsigned r = 0; r < bs->size; r++)
            bs->local[r] =
                memcmp(all + (size_t)r * BOOTSTRAP_HOST_ID_SIZE, mine, BOOTSTRAP_HOST_ID_SIZE) == 0;
    }
    free(all);
    return status;
}

FERRY_EXPORT ferry_status_t ferry_bootstrap_init(const ferry_bootstrap_params_t *params,
                                                 ferry_bootstrap_t **bs_p)
{
    ferry_bootstrap_method_t method;
    ferry_status_t status;

    ferry_log_init();
    if (bs_p == NULL) {
        fy_error("ferry_bootstrap_init: bs_p is NULL");
        return FERRY_ERR_INVALID_PARAM;
    }
    status =
        bootstrap_choose(params != NULL ? params->method : FERRY_BOOTSTRAP_METHOD_AUTO, &method);
    if (status != FERRY_OK)
        return status;
    const bootstrap_ops_t *ops = bootstrap_ops_of(method);
    if (ops == NULL) {
        fy_error("ferry_bootstrap_init: method %s is not built into this libferry_bootstrap "
                 "(built: %s); install libpmix-dev and rebuild for pmix",
                 ferry_bootstrap_method_name(method), ferry_bootstrap_methods_built());
        return FERRY_ERR_UNSUPPORTED;
    }

    ferry_bootstrap_t *bs = calloc(1, sizeof(*bs));
    if (bs == NULL) {
        fy_error("calloc(%zu) for a bootstrap failed", sizeof(*bs));
        return FERRY_ERR_NO_MEMORY;
    }
    bs->ops = ops;
    bs->method = method;
    int64_t timeout = params != NULL && params->timeout_ms > 0
                          ? params->timeout_ms
                          : ferry_config_int(&bootstrap_timeout_var);
    bs->timeout_ms = timeout > 0 && timeout <= INT32_MAX ? (int)timeout : 30000;
    bs->max_length = (size_t)ferry_config_size(&bootstrap_max_length_var);
    bs->failed = FERRY_OK;

    status = ops->init(bs);
    if (status != FERRY_OK)
        goto err_free;
    bs->local = calloc(bs->size, sizeof(*bs->local));
    if (bs->local == NULL) {
        fy_error("calloc(%u, %zu) for the bootstrap's locality failed", bs->size,
                 sizeof(*bs->local));
        status = FERRY_ERR_NO_MEMORY;
        goto err_finalize;
    }
    status = bootstrap_locality(bs);
    if (status != FERRY_OK)
        goto err_free_local;
    bs->local[bs->rank] = true;
    fy_debug("bootstrap: rank %u of %u by %s", bs->rank, bs->size,
             ferry_bootstrap_method_name(method));
    *bs_p = bs;
    return FERRY_OK;

err_free_local:
    free(bs->local);
err_finalize:
    ops->finalize(bs);
err_free:
    free(bs);
    return status;
}

FERRY_EXPORT void ferry_bootstrap_finalize(ferry_bootstrap_t *bs)
{
    if (bs == NULL)
        return;
    bs->ops->finalize(bs);
    free(bs->local);
    free(bs);
}

FERRY_EXPORT unsigned ferry_bootstrap_rank(const ferry_bootstrap_t *bs)
{
    return bs != NULL ? bs->rank : 0;
}

FERRY_EXPORT unsigned ferry_bootstrap_size(const ferry_bootstrap_t *bs)
{
    return bs != NULL ? bs->size : 0;
}

FERRY_EXPORT ferry_bootstrap_method_t ferry_bootstrap_method(const ferry_bootstrap_t *bs)
{
    return bs != NULL ? bs->method : FERRY_BOOTSTRAP_METHOD_AUTO;
}

FERRY_EXPORT bool ferry_bootstrap_is_local(const ferry_bootstrap_t *bs, unsigned rank)
{
    return bs != NULL && rank < bs->size && bs->local != NULL && bs->local[rank];
}

FERRY_EXPORT ferry_status_t ferry_bootstrap_set_progress(ferry_bootstrap_t *bs,
                                                         ferry_worker_t *worker)
{
    if (bs == NULL) {
        fy_error("ferry_bootstrap_set_progress: bs is NULL");
        return FERRY_ERR_INVALID_PARAM;
    }
    bs->progress = worker;
    return FERRY_OK;
}

static uint64_t bootstrap_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int bootstrap_poll(ferry_bootstrap_t *bs, struct pollfd *fds, unsigned count, int ms)
{
    if (bs->progress == NULL)
        return poll(fds, count, ms);
    /* progress the worker; sleep only when it armed, and then on its fd as well */
    struct pollfd all[count + 1];
    int worker_fd;
    if (ferry_worker_get_fd(bs->progress, &worker_fd) != FERRY_OK)
        return poll(fds, count, ms);
    uint64_t deadline = ms < 0 ? UINT64_MAX : bootstrap_now_ms() + (uint64_t)ms;
    for (;;) {
        ferry_worker_progress(bs->progress);
        int n = poll(fds, count, 0);
        if (n != 0)
            return n;
        uint64_t now = bootstrap_now_ms();
        if (now >= deadline)
            return 0;
        if (ferry_worker_arm(bs->progress) != FERRY_OK)
            continue; /* work is pending: progress again */
        memcpy(all, fds, count * sizeof(*fds));
        all[count] = (struct pollfd){.fd = worker_fd, .events = POLLIN};
        int left = deadline == UINT64_MAX ? -1 : (int)(deadline - now);
        n = poll(all, count + 1, left);
        if (n < 0)
            return n;
        memcpy(fds, all, count * sizeof(*fds));
        if (n > (all[count].revents ? 1 : 0))
            return n - (all[count].revents ? 1 : 0);
    }
}

bool bootstrap_wait_flag(ferry_bootstrap_t *bs, volatile int *done, int ms)
{
    uint64_t deadline = ms < 0 ? UINT64_MAX : bootstrap_now_ms() + (uint64_t)ms;
    while (!*done) {
        if (bootstrap_now_ms() >= deadline)
            return false;
        if (bs->progress != NULL)
            ferry_worker_progress(bs->progress);
        /* the flag's setter does not wake us: look again in a millisecond at most */
        int worker_fd;
        if (bs->progress != NULL && ferry_worker_arm(bs->progress) == FERRY_OK &&
            ferry_worker_get_fd(bs->progress, &worker_fd) == FERRY_OK) {
            struct pollfd p = {.fd = worker_fd, .events = POLLIN};
            (void)poll(&p, 1, 1);
        } else if (bs->progress == NULL) {
            struct timespec ts = {0, 200000};
            nanosleep(&ts, NULL);
        }
    }
    return true;
}

FERRY_EXPORT ferry_status_t ferry_bootstrap_allgather(ferry_bootstrap_t *bs, const void *mine,
                                                      size_t length, void *all)
{
    if (bs == NULL || (length > 0 && (mine == NULL || all == NULL))) {
        fy_error("ferry_bootstrap_allgather(bs %p, mine %p, length %zu, all %p): NULL "
                 "argument",
                 (void *)bs, mine, length, all);
        return FERRY_ERR_INVALID_PARAM;
    }
    if (length > bs->max_length || (uint64_t)length * bs->size > BOOTSTRAP_MAX_TOTAL) {
        fy_error("ferry_bootstrap_allgather: %zu bytes per rank, %u ranks: more than "
                 "FERRY_BOOTSTRAP_MAX_LENGTH=%zu per rank or 4 GiB in all",
                 length, bs->size, bs->max_length);
        return FERRY_ERR_INVALID_PARAM;
    }
    if (bs->failed != FERRY_OK) {
        fy_error("ferry_bootstrap_allgather: an earlier collective failed (%s): the "
                 "bootstrap is unusable",
                 ferry_status_string(bs->failed));
        return FERRY_ERR_ILLEGAL_STATE;
    }
    ferry_status_t status = bs->ops->allgather(bs, mine, length, all);
    if (status != FERRY_OK)
        bs->failed = status;
    return status;
}

FERRY_EXPORT ferry_status_t ferry_bootstrap_barrier(ferry_bootstrap_t *bs)
{
    if (bs == NULL) {
        fy_error("ferry_bootstrap_barrier: bs is NULL");
        return FERRY_ERR_INVALID_PARAM;
    }
    if (bs->failed != FERRY_OK) {
        fy_error("ferry_bootstrap_barrier: an earlier collective failed (%s): the bootstrap "
                 "is unusable",
                 ferry_status_string(bs->failed));
        return FERRY_ERR_ILLEGAL_STATE;
    }
    ferry_status_t status = bs->ops->barrier(bs);
    if (status != FERRY_OK)
        bs->failed = status;
    return status;
}
