/* ferry_info -d: every transport of the list, in order of preference: what it can do, whether
 * it is enabled here and why not, and what its part of a worker holds (describe()). */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "info.h"
#include "progress/worker.h"
#include "transport/transport.h"
#include "wireup/context.h"

typedef struct info_tl {
    const fy_tl_ops_t *ops;
    ferry_status_t query_status;
    fy_tl_caps_t caps;
    bool usable;        /* query() succeeded */
    bool enabled;       /* the context enabled it */
    char reason[384];   /* why it is not enabled ("" when enabled) */
    char describe[512]; /* describe() of the worker's part ("" when none) */
} info_tl_t;

static void info_tl_gather(info_t *info, size_t index, info_tl_t *tl)
{
    ferry_status_t context_status, worker_status;
    ferry_context_t *context = info_context(info, &context_status);
    ferry_worker_t *worker = info_worker(info, &worker_status);
    char why[256] = "";

    memset(tl, 0, sizeof(*tl));
    tl->ops = fy_transports[index];
    tl->query_status = tl->ops->query(&tl->caps, why, sizeof(why));
    tl->usable = tl->query_status == FERRY_OK;
    if (!tl->usable) {
        snprintf(tl->reason, sizeof(tl->reason), "unusable here: %s",
                 why[0] != '\0' ? why : ferry_status_string(tl->query_status));
    } else if (context != NULL && index < FY_TL_MAX && context->enabled[index]) {
        tl->enabled = true;
    } else if (context != NULL || context_status == FERRY_ERR_NO_DEVICE) {
        /* usable, yet not enabled (or no context because nothing was): not allowed */
        snprintf(tl->reason, sizeof(tl->reason),
                 "not enabled: FERRY_TRANSPORTS=%s does not name it", info_transports_setting());
    } else {
        snprintf(tl->reason, sizeof(tl->reason), "unknown: the context could not be created (%s)",
                 ferry_status_name(context_status));
    }
    if (worker != NULL && index < FY_TL_MAX && worker->tl[index] != NULL &&
        tl->ops->describe != NULL)
        tl->ops->describe(worker->tl[index], tl->describe, sizeof(tl->describe));
}

static void info_size_text(size_t value, char *buffer, size_t length)
{
    if (value == SIZE_MAX)
        snprintf(buffer, length, "unlimited");
    else
        snprintf(buffer, length, "%zu", value);
}

static void info_flag_json(const char *name, void *arg)
{
    info_json_string(arg, NULL, name);
}

static void info_tl_json(info_t *info, const info_tl_t *tl)
{
    info_json_t *json = &info->json;

    info_json_object_begin(json, NULL);
    info_json_string(json, "name", tl->ops->name);
    info_json_uint(json, "id", tl->ops->id);
    info_json_bool(json, "usable", tl->usable);
    info_json_bool(json, "enabled", tl->enabled);
    info_json_string(json, "reason", tl->enabled ? NULL : tl->reason);
    if (tl->usable) {
        info_json_object_begin(json, "caps");
        info_json_array_begin(json, "flags");
        info_flags_each(tl->caps.flags, info_flag_json, json);
        info_json_array_end(json);
        info_json_uint(json, "flags_value", tl->caps.flags);
        info_json_uint(json, "max_short", tl->caps.max_short);
        info_json_uint(json, "max_bcopy", tl->caps.max_bcopy);
        info_json_uint(json, "max_iov", tl->caps.max_iov);
        info_json_double(json, "latency_ns", tl->caps.latency_ns);
        info_json_double(json, "bandwidth_Bps", tl->caps.bandwidth_Bps);
        info_json_object_end(json);
    } else {
        info_json_null(json, "caps");
    }
    info_json_string(json, "describe", tl->describe[0] != '\0' ? tl->describe : NULL);
    info_json_object_end(json);
}

static void info_tl_text(const info_tl_t *tl)
{
    char flags[128], size[32];

    printf("  %s (id %u): %s\n", tl->ops->name, tl->ops->id, tl->enabled ? "enabled" : tl->reason);
    if (tl->usable) {
        info_flags_string(tl->caps.flags, flags, sizeof(flags));
        printf("      flags      %s\n", flags);
        info_size_text(tl->caps.max_short, size, sizeof(size));
        printf("      max_short  %s%s\n", size, tl->caps.max_short == SIZE_MAX ? "" : " B");
        info_size_text(tl->caps.max_bcopy, size, sizeof(size));
        printf("      max_bcopy  %s%s\n", size, tl->caps.max_bcopy == SIZE_MAX ? "" : " B");
        info_size_text(tl->caps.max_iov, size, sizeof(size));
        printf("      max_iov    %s\n", size);
        printf("      latency    %.0f ns (estimate)\n", tl->caps.latency_ns);
        printf("      bandwidth  %.2f GB/s (estimate)\n", tl->caps.bandwidth_Bps / 1e9);
    }
    if (tl->describe[0] != '\0')
        printf("      worker     %s\n", tl->describe);
}

int info_show_transports(info_t *info)
{
    ferry_status_t context_status, worker_status;
    ferry_context_t *context = info_context(info, &context_status);
    ferry_worker_t *worker = info_worker(info, &worker_status);
    const char *setting = info_transports_setting();
    info_tl_t tl;

    if (info->json_mode) {
        info_json_t *json = &info->json;
        info_json_object_begin(json, "transports");
        info_json_string(json, "setting", setting);
        info_json_string(json, "context", ferry_status_name(context_status));
        info_json_object_begin(json, "worker");
        info_json_string(json, "status",
                         context != NULL ? ferry_status_name(worker_status) : "not created");
        if (worker != NULL) {
            char uuid[32];
            snprintf(uuid, sizeof(uuid), "%016" PRIx64, worker->uuid);
            info_json_string(json, "uuid", uuid);
            info_json_uint(json, "address_length", worker->address_length);
        }
        info_json_object_end(json);
        info_json_array_begin(json, "list");
        for (size_t i = 0; i < fy_transports_count; i++) {
            info_tl_gather(info, i, &tl);
            info_tl_json(info, &tl);
        }
        info_json_array_end(json);
        info_json_object_end(json);
        return 0;
    }

    printf("transports (in order of preference; FERRY_TRANSPORTS=%s):\n", setting);
    for (size_t i = 0; i < fy_transports_count; i++) {
        info_tl_gather(info, i, &tl);
        info_tl_text(&tl);
    }
    if (context == NULL)
        printf("context: not created: %s (%s)\n", ferry_status_string(context_status),
               ferry_status_name(context_status));
    else if (worker == NULL)
        printf("worker: not created: %s (%s); the log above names the failed call\n",
               ferry_status_string(worker_status), ferry_status_name(worker_status));
    else
        printf("worker: %016" PRIx64 ", address of %zu bytes\n", worker->uuid,
               worker->address_length);
    return 0;
}
