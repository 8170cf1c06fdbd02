/* ferry_info -d: every transport of the library, in order of preference: what it can do,
 * whether it is enabled here and why not (ferry_transport_query), what its part of a worker
 * holds (ferry_worker_transport_describe), and in JSON its record of the worker's address
 * (ferry_address_record_decode: the tcp port, the shm socket). */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "info.h"

typedef struct info_tl {
    ferry_transport_info_t q;               /* ferry_transport_query */
    bool enabled;                           /* the context enabled it */
    char reason[FERRY_INFO_TEXT_MAX + 128]; /* why it is not enabled ("" when enabled) */
    char describe[512];                     /* the worker's facts ("" when none) */
    bool have_record;                       /* record: its record in the worker's address */
    ferry_address_record_info_t record;
} info_tl_t;

static void info_tl_gather(info_t *info, size_t index, info_tl_t *tl)
{
    ferry_status_t context_status;
    ferry_context_t *context = info_context(info, &context_status);
    ferry_worker_t *worker = info_worker(info, NULL);
    ferry_address_info_t own;
    const void *address;
    size_t length;

    memset(tl, 0, sizeof(*tl));
    tl->q.size = sizeof(tl->q);
    if (ferry_transport_query(context, index, &tl->q) != FERRY_OK)
        return; /* cannot be: the index is in range */
    if (tl->q.usable != FERRY_OK) {
        snprintf(tl->reason, sizeof(tl->reason), "unusable here: %s", tl->q.why);
    } else if (tl->q.enabled) {
        tl->enabled = true;
    } else if (context != NULL || context_status == FERRY_ERR_NO_DEVICE) {
        /* usable, yet not enabled (or no context because nothing was): not allowed */
        snprintf(tl->reason, sizeof(tl->reason),
                 "not enabled: FERRY_TRANSPORTS=%s does not name it", info_transports_setting());
    } else {
        snprintf(tl->reason, sizeof(tl->reason), "unknown: the context could not be created (%s)",
                 ferry_status_name(context_status));
    }
    if (worker != NULL && ferry_worker_transport_describe(worker, index, tl->describe,
                                                          sizeof(tl->describe)) != FERRY_OK)
        tl->describe[0] = '\0';
    if (info_worker_address(info, &address, &length, &own)) {
        for (size_t r = 0; r < own.record_count && !tl->have_record; r++) {
            tl->record = (ferry_address_record_info_t){.size = sizeof(tl->record)};
            tl->have_record =
                ferry_address_record_decode(address, length, r, NULL, &tl->record) == FERRY_OK &&
                tl->record.transport_index == index;
        }
    }
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
    info_json_string(json, "name", tl->q.name);
    info_json_uint(json, "id", tl->q.id);
    info_json_bool(json, "usable", tl->q.usable == FERRY_OK);
    info_json_bool(json, "enabled", tl->enabled);
    info_json_string(json, "reason", tl->enabled ? NULL : tl->reason);
    if (tl->q.usable == FERRY_OK) {
        info_json_object_begin(json, "caps");
        info_json_array_begin(json, "flags");
        info_flags_each(tl->q.caps, info_flag_json, json);
        info_json_array_end(json);
        info_json_uint(json, "flags_value", tl->q.caps);
        info_json_uint(json, "max_short", tl->q.max_short);
        info_json_uint(json, "max_bcopy", tl->q.max_bcopy);
        info_json_uint(json, "max_iov", tl->q.max_iov);
        info_json_double(json, "latency_ns", tl->q.latency_ns);
        info_json_double(json, "bandwidth_Bps", tl->q.bandwidth_Bps);
        info_json_object_end(json);
    } else {
        info_json_null(json, "caps");
    }
    info_json_string(json, "describe", tl->describe[0] != '\0' ? tl->describe : NULL);
    if (tl->have_record) {
        info_json_object_begin(json, "record");
        info_json_uint(json, "length", tl->record.length);
        info_json_string(json, "description", tl->record.text);
        info_fields_json(json, &tl->record);
        info_json_object_end(json);
    } else {
        info_json_null(json, "record");
    }
    info_json_object_end(json);
}

static void info_tl_text(const info_tl_t *tl)
{
    char flags[128], size[32];

    printf("  %s (id %u): %s\n", tl->q.name, tl->q.id, tl->enabled ? "enabled" : tl->reason);
    if (tl->q.usable == FERRY_OK) {
        info_flags_string(tl->q.caps, flags, sizeof(flags));
        printf("      flags      %s\n", flags);
        info_size_text(tl->q.max_short, size, sizeof(size));
        printf("      max_short  %s%s\n", size, tl->q.max_short == SIZE_MAX ? "" : " B");
        info_size_text(tl->q.max_bcopy, size, sizeof(size));
        printf("      max_bcopy  %s%s\n", size, tl->q.max_bcopy == SIZE_MAX ? "" : " B");
        info_size_text(tl->q.max_iov, size, sizeof(size));
        printf("      max_iov    %s\n", size);
        printf("      latency    %.0f ns (estimate)\n", tl->q.latency_ns);
        printf("      bandwidth  %.2f GB/s (estimate)\n", tl->q.bandwidth_Bps / 1e9);
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
    ferry_address_info_t own;
    const void *address = NULL;
    size_t length = 0;
    bool have_address = info_worker_address(info, &address, &length, &own);
    char id[24];
    info_tl_t tl;

    if (have_address)
        info_id_text(own.worker_id, id, sizeof(id));
    if (info->json_mode) {
        info_json_t *json = &info->json;
        info_json_object_begin(json, "transports");
        info_json_string(json, "setting", setting);
        info_json_string(json, "context", ferry_status_name(context_status));
        info_json_object_begin(json, "worker");
        info_json_string(json, "status",
                         context != NULL ? ferry_status_name(worker_status) : "not created");
        if (have_address) {
            info_json_string(json, "uuid", id);
            info_json_uint(json, "address_length", length);
        }
        info_json_object_end(json);
        info_json_array_begin(json, "list");
        for (size_t i = 0; i < ferry_transport_count(); i++) {
            info_tl_gather(info, i, &tl);
            info_tl_json(info, &tl);
        }
        info_json_array_end(json);
        info_json_object_end(json);
        return 0;
    }

    printf("transports (in order of preference; FERRY_TRANSPORTS=%s):\n", setting);
    for (size_t i = 0; i < ferry_transport_count(); i++) {
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
        printf("worker: %s, address of %zu bytes\n", have_address ? id : "?", length);
    return 0;
}
