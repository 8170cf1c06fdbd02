/* The public introspection API (include/ferry/info.h): the transports and their
 * capabilities, a worker's transport facts, worker addresses decoded record by record (each
 * transport explains its own record: record_describe, record_fields), and the choice
 * ferry_ep_create makes, explained. */
#define _GNU_SOURCE
#include "wireup/introspect.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <ferry/info.h>

#include "core/compiler.h"
#include "core/log.h"
#include "progress/worker.h"
#include "transport/transport.h"
#include "wireup/address.h"
#include "wireup/ep.h"

/* The sizes of the first version of each structure: what the oldest caller passes. Frozen:
 * a later version appends members and keeps these numbers. */
enum {
    INTROSPECT_TRANSPORT_SIZE_V1 = sizeof(ferry_transport_info_t),
    INTROSPECT_ADDRESS_SIZE_V1 = offsetof(ferry_address_info_t, compact), /* before compact */
    INTROSPECT_RECORD_SIZE_V1 = sizeof(ferry_address_record_info_t),
    INTROSPECT_CHOICE_SIZE_V1 = sizeof(ferry_ep_choice_t),
};

bool fy_info_struct_ok(const char *call, const char *type, const void *info, size_t min_size)
{
    size_t size;

    if (info == NULL) {
        fy_warn("%s: the %s pointer is NULL", call, type);
        return false;
    }
    memcpy(&size, info, sizeof(size));
    if (size < min_size) {
        fy_warn("%s: %s.size is %zu, at least %zu expected (set it to sizeof(%s) before the "
                "call)",
                call, type, size, min_size, type);
        return false;
    }
    return true;
}

void fy_info_copy_out(void *info, void *filled, size_t full_size)
{
    size_t size;

    memcpy(&size, info, sizeof(size));
    memcpy(filled, &size, sizeof(size));
    memcpy(info, filled, size < full_size ? size : full_size);
    if (size > full_size)
        memset((char *)info + full_size, 0, size - full_size);
}

/* ------------------------------------------------------------------ capabilities */

static const struct {
    unsigned cap;
    const char *name;
} introspect_caps[] = {
    {FERRY_TRANSPORT_CAP_AM, "AM"},
    {FERRY_TRANSPORT_CAP_AM_ORDERED, "AM_ORDERED"},
    {FERRY_TRANSPORT_CAP_SAME_HOST, "SAME_HOST"},
    {FERRY_TRANSPORT_CAP_SAME_WORKER, "SAME_WORKER"},
    {FERRY_TRANSPORT_CAP_RMA, "RMA"},
    {FERRY_TRANSPORT_CAP_RMA_ORDERED, "RMA_ORDERED"},
    {FERRY_TRANSPORT_CAP_CMA, "CMA"},
    {FERRY_TRANSPORT_CAP_STREAM, "STREAM"},
};

FERRY_EXPORT const char *ferry_transport_cap_name(unsigned cap)
{
    for (size_t i = 0; i < FERRY_ARRAY_SIZE(introspect_caps); i++) {
        if (introspect_caps[i].cap == cap)
            return introspect_caps[i].name;
    }
    return NULL;
}

/* ------------------------------------------------------------------ transports */

FERRY_EXPORT size_t ferry_transport_count(void)
{
    return fy_transports_count;
}

/* Is index a transport? Logs a warning naming call when not. */
static bool introspect_index_ok(const char *call, size_t index)
{
    if (index < fy_transports_count)
        return true;
    fy_warn("%s: transport index %zu, this library has %zu transports (0 .. %zu)", call, index,
            fy_transports_count, fy_transports_count - 1);
    return false;
}

FERRY_EXPORT ferry_status_t ferry_transport_query(const ferry_context_t *context, size_t index,
                                                  ferry_transport_info_t *info)
{
    ferry_transport_info_t filled;
    fy_tl_caps_t caps;

    if (!fy_info_struct_ok("ferry_transport_query", "ferry_transport_info_t", info,
                           INTROSPECT_TRANSPORT_SIZE_V1))
        return FERRY_ERR_INVALID_PARAM;
    if (!introspect_index_ok("ferry_transport_query", index))
        return FERRY_ERR_OUT_OF_RANGE;
    const fy_tl_ops_t *tl = fy_transports[index];
    memset(&filled, 0, sizeof(filled));
    filled.name = tl->name;
    filled.id = tl->id;
    filled.usable = tl->query(NULL, &caps, filled.why, sizeof(filled.why));
    if (filled.usable == FERRY_OK) {
        filled.why[0] = '\0';
        filled.caps = caps.flags;
        filled.max_short = caps.max_short;
        filled.max_bcopy = caps.max_bcopy;
        filled.max_iov = caps.max_iov;
        filled.latency_ns = caps.latency_ns;
        filled.bandwidth_Bps = caps.bandwidth_Bps;
    } else if (filled.why[0] == '\0') {
        snprintf(filled.why, sizeof(filled.why), "%s", ferry_status_string(filled.usable));
    }
    filled.enabled = context != NULL && context->enabled[index];
    fy_info_copy_out(info, &filled, sizeof(filled));
    return FERRY_OK;
}

static inline ferry_status_t locked_worker_transport_describe(ferry_worker_t *worker, size_t index,
                                                              char *buffer, size_t length)
{
    if (worker != NULL && fy_worker_forked(worker))
        return FERRY_ERR_FORKED;
    if (worker == NULL || buffer == NULL || length == 0) {
        fy_warn("ferry_worker_transport_describe: %s", worker == NULL   ? "worker is NULL"
                                                       : buffer == NULL ? "buffer is NULL"
                                                                        : "length is 0");
        return FERRY_ERR_INVALID_PARAM;
    }
    if (!introspect_index_ok("ferry_worker_transport_describe", index))
        return FERRY_ERR_OUT_OF_RANGE;
    if (worker->tl[index] == NULL)
        return FERRY_ERR_NOT_AVAILABLE; /* an answer, not an error: nothing logged */
    buffer[0] = '\0';
    if (fy_transports[index]->describe != NULL)
        fy_transports[index]->describe(worker->tl[index], buffer, length);
    return FERRY_OK;
}

FERRY_EXPORT ferry_status_t ferry_worker_transport_describe(ferry_worker_t *worker, size_t index,
                                                            char *buffer, size_t length)
{
    ferry_worker_t *locked = fy_worker_multi(worker);
    if (fy_likely(locked == NULL))
        return locked_worker_transport_describe(worker, index, buffer, length);
    fy_worker_lock(locked);
    ferry_status_t status_or_value =
        locked_worker_transport_describe(worker, index, buffer, length);
    fy_worker_unlock(locked);
    return status_or_value;
}

/* ------------------------------------------------------------------ addresses */

/* The index in fy_transports[] of the transport with this record id, or FERRY_TRANSPORT_NONE. */
static size_t introspect_transport_by_id(unsigned id)
{
    for (size_t t = 0; t < fy_transports_count; t++) {
        if (fy_transports[t]->id == id)
            return t;
    }
    return FERRY_TRANSPORT_NONE;
}

static fy_tl_peer_t introspect_peer(const fy_address_t *address)
{
    return (fy_tl_peer_t){
        .worker_uuid = address->worker_uuid, .host = address->host, .pid = address->pid};
}

/* What every call that reads an address checks first: the caller's structure (info, of at
 * least min_size bytes), then the address, parsed into *parsed. Returns FERRY_OK,
 * FERRY_ERR_INVALID_PARAM or FERRY_ERR_INVALID_ADDRESS (each logged). */
static ferry_status_t introspect_parse(const char *call, const char *type, const void *info,
                                       size_t min_size, ferry_worker_t *worker, const void *address,
                                       size_t length, fy_address_t *parsed)
{
    fy_host_id_t here;
    const fy_host_id_t *local = NULL;

    if (!fy_info_struct_ok(call, type, info, min_size))
        return FERRY_ERR_INVALID_PARAM;
    /* a compact address names its namespaces by a digest: compared with this host's */
    if (worker != NULL)
        local = &worker->context->host;
    else if (fy_address_is_compact(address, length) && fy_host_id_read(&here) == FERRY_OK)
        local = &here;
    return fy_address_parse_any(address, length, local, parsed);
}

FERRY_EXPORT ferry_status_t ferry_address_decode(const void *address, size_t length,
                                                 ferry_address_info_t *info)
{
    ferry_address_info_t filled;
    fy_address_t parsed;

    ferry_status_t status =
        introspect_parse("ferry_address_decode", "ferry_address_info_t", info,
                         INTROSPECT_ADDRESS_SIZE_V1, NULL, address, length, &parsed);
    if (status != FERRY_OK)
        return status;
    memset(&filled, 0, sizeof(filled));
    filled.version = parsed.version;
    filled.worker_id = parsed.worker_uuid;
    filled.pid = parsed.pid;
    memcpy(filled.boot_id, parsed.host.boot_id, sizeof(filled.boot_id));
    filled.net_ns = parsed.host.net_ns;
    filled.pid_ns = parsed.host.pid_ns;
    filled.user_ns = parsed.host.user_ns;
    filled.record_count = parsed.record_count;
    filled.compact = parsed.compact;
    filled.ns_digest = parsed.ns_digest;
    fy_info_copy_out(info, &filled, sizeof(filled));
    return FERRY_OK;
}

/* Whether worker reaches the peer of a parsed address through transport t's record (not
 * NULL), and why not. */
static bool introspect_reaches(ferry_worker_t *worker, size_t t, const fy_address_t *address,
                               const fy_address_record_t *record, char *why, size_t why_len)
{
    fy_tl_peer_t peer = introspect_peer(address);
    char text[FERRY_INFO_TEXT_MAX];
    bool reachable = false;

    fy_transports[t]->record_describe(worker->tl[t], &peer, record->data, record->length, text,
                                      sizeof(text), &reachable, why, why_len);
    return reachable;
}

FERRY_EXPORT ferry_status_t ferry_address_record_decode(const void *address, size_t length,
                                                        size_t index, ferry_worker_t *worker,
                                                        ferry_address_record_info_t *info)
{
    ferry_address_record_info_t filled;
    fy_address_t parsed;

    ferry_status_t status =
        introspect_parse("ferry_address_record_decode", "ferry_address_record_info_t", info,
                         INTROSPECT_RECORD_SIZE_V1, worker, address, length, &parsed);
    if (status != FERRY_OK)
        return status;
    if (index >= parsed.record_count) {
        fy_warn("ferry_address_record_decode: record index %zu, the address has %u records", index,
                parsed.record_count);
        return FERRY_ERR_OUT_OF_RANGE;
    }
    const fy_address_record_t *record = &parsed.records[index];
    memset(&filled, 0, sizeof(filled));
    filled.transport_id = record->transport_id;
    filled.length = record->length;
    filled.transport_index = introspect_transport_by_id(record->transport_id);
    if (filled.transport_index == FERRY_TRANSPORT_NONE) {
        filled.status = FERRY_ERR_UNSUPPORTED;
        snprintf(filled.text, sizeof(filled.text),
                 "no transport of this library has id %u (a newer peer?)", record->transport_id);
        if (worker != NULL)
            snprintf(filled.why, sizeof(filled.why), "%s", filled.text);
        fy_info_copy_out(info, &filled, sizeof(filled));
        return FERRY_OK;
    }

    size_t t = filled.transport_index;
    const fy_tl_ops_t *tl = fy_transports[t];
    bool first = fy_address_find(&parsed, record->transport_id) == record;
    /* the transport judges reachability only where this worker would look at the record */
    fy_tl_worker_t *tlw = worker != NULL && first ? worker->tl[t] : NULL;
    fy_tl_peer_t peer = introspect_peer(&parsed);
    bool reachable = false;
    filled.transport = tl->name;
    filled.status =
        tl->record_describe(tlw, &peer, record->data, record->length, filled.text,
                            sizeof(filled.text), &reachable, filled.why, sizeof(filled.why));
    if (filled.status == FERRY_OK && tl->record_fields != NULL)
        filled.field_count =
            tl->record_fields(record->data, record->length, filled.fields, FERRY_INFO_FIELDS_MAX);
    if (worker != NULL && worker->tl[t] == NULL) {
        snprintf(filled.why, sizeof(filled.why),
                 "%s is not used by this worker (its context did not enable it: "
                 "ferry_transport_query says why)",
                 tl->name);
    } else if (worker != NULL && !first) {
        snprintf(filled.why, sizeof(filled.why), "a second record for %s (only the first counts)",
                 tl->name);
    } else if (tlw != NULL) {
        filled.considered = true;
        filled.reachable = reachable;
        if (reachable)
            filled.why[0] = '\0';
    }
    if (worker == NULL)
        filled.why[0] = '\0';
    fy_info_copy_out(info, &filled, sizeof(filled));
    return FERRY_OK;
}

void fy_tl_field_add(ferry_info_field_t *fields, size_t max, size_t *count, const char *key,
                     const char *format, ...)
{
    va_list ap;

    if (*count >= max)
        return;
    snprintf(fields[*count].key, sizeof(fields[*count].key), "%s", key);
    va_start(ap, format);
    vsnprintf(fields[*count].value, sizeof(fields[*count].value), format, ap);
    va_end(ap);
    (*count)++;
}

/* ------------------------------------------------------------------ the endpoint choice */

/* Append "name: why" for each transport the worker uses, in order, before stop (all of them
 * for FY_TL_MAX), into text[*used .. len). */
static void introspect_rejections(ferry_worker_t *worker, const fy_address_t *address,
                                  unsigned stop, const char *separator, char *text, size_t len,
                                  size_t *used)
{
    bool first = true;

    for (unsigned i = 0; i < worker->tl_active_count && *used < len; i++) {
        unsigned t = worker->tl_active[i];
        char why[FERRY_INFO_TEXT_MAX] = "";
        if (t == stop)
            break;
        const fy_address_record_t *record = fy_address_find(address, fy_transports[t]->id);
        if (record == NULL)
            snprintf(why, sizeof(why), "no record in the address (the peer does not use it)");
        else if (introspect_reaches(worker, t, address, record, why, sizeof(why)))
            continue; /* cannot be: stop is the first that reaches */
        *used += (size_t)snprintf(text + *used, len - *used, "%s%s: %s", first ? "" : separator,
                                  fy_transports[t]->name, why);
        first = false;
    }
}

static inline ferry_status_t locked_ep_choose(ferry_worker_t *worker, const void *address,
                                              size_t length, ferry_ep_choice_t *choice)
{
    if (worker != NULL && fy_worker_forked(worker))
        return FERRY_ERR_FORKED;
    const fy_address_record_t *record = NULL;
    ferry_ep_choice_t filled;
    fy_address_t parsed;
    char order[FY_TL_MAX * 16] = "";
    size_t used = 0;

    if (worker == NULL) {
        fy_warn("ferry_ep_choose: worker is NULL");
        return FERRY_ERR_INVALID_PARAM;
    }
    ferry_status_t status =
        introspect_parse("ferry_ep_choose", "ferry_ep_choice_t", choice, INTROSPECT_CHOICE_SIZE_V1,
                         worker, address, length, &parsed);
    if (status != FERRY_OK)
        return status;
    fy_tl_peer_t peer = introspect_peer(&parsed);
    int t = fy_ep_select_transport(worker, &parsed, &peer, &record);

    for (unsigned i = 0; i < worker->tl_active_count && used < sizeof(order); i++)
        used += (size_t)snprintf(order + used, sizeof(order) - used, "%s%s", i ? ", " : "",
                                 fy_transports[worker->tl_active[i]]->name);
    memset(&filled, 0, sizeof(filled));
    used = 0;
    if (t >= 0) {
        filled.status = FERRY_OK;
        filled.transport_index = (size_t)t;
        filled.transport = fy_transports[t]->name;
        filled.record_index = (size_t)(record - parsed.records);
        used = (size_t)snprintf(filled.reason, sizeof(filled.reason),
                                "%s is the first of the transports this worker uses (%s) whose "
                                "record in the address reaches the peer",
                                filled.transport, order);
        if (worker->tl_active_count > 0 && worker->tl_active[0] != (unsigned)t &&
            used < sizeof(filled.reason)) {
            used += (size_t)snprintf(filled.reason + used, sizeof(filled.reason) - used,
                                     "; before it, ");
            introspect_rejections(worker, &parsed, (unsigned)t, "; ", filled.reason,
                                  sizeof(filled.reason), &used);
        }
    } else {
        filled.status = FERRY_ERR_UNREACHABLE;
        filled.transport_index = FERRY_TRANSPORT_NONE;
        filled.record_index = FERRY_TRANSPORT_NONE;
        used = (size_t)snprintf(filled.reason, sizeof(filled.reason),
                                "no transport this worker uses (%s) reaches the peer: ", order);
        if (used < sizeof(filled.reason))
            introspect_rejections(worker, &parsed, FY_TL_MAX, "; ", filled.reason,
                                  sizeof(filled.reason), &used);
    }
    fy_info_copy_out(choice, &filled, sizeof(filled));
    return FERRY_OK;
}

FERRY_EXPORT ferry_status_t ferry_ep_choose(ferry_worker_t *worker, const void *address,
                                            size_t length, ferry_ep_choice_t *choice)
{
    ferry_worker_t *locked = fy_worker_multi(worker);
    if (fy_likely(locked == NULL))
        return locked_ep_choose(worker, address, length, choice);
    fy_worker_lock(locked);
    ferry_status_t status_or_value = locked_ep_choose(worker, address, length, choice);
    fy_worker_unlock(locked);
    return status_or_value;
}
