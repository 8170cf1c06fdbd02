/* ferry_info -e ADDRESS_FILE: which transport ferry_ep_create() would choose for that worker
 * address, and why. Everything comes from the library: the address decoded
 * (ferry_address_decode), each record explained by its own transport and judged from this
 * worker (ferry_address_record_decode), and the choice made by the code ferry_ep_create runs
 * (ferry_ep_choose). The checks printed beside each transport compare the fields of the two
 * addresses' headers that its capabilities depend on: the worker (SAME_WORKER) and the host
 * identity, field by field (SAME_HOST: boot id, net/pid/user namespaces). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "info.h"

/* Addresses are at most 65535 bytes (a u16 total length); read one more to notice a larger
 * file. */
#define INFO_ADDRESS_FILE_MAX 65536u

#define INFO_CHECKS_MAX 8

typedef struct info_check {
    const char *key;  /* for JSON: "worker", "boot_id", "net_ns", ... */
    const char *what; /* for people: "worker", "boot id", "net namespace", ... */
    bool ok;
    char address[64]; /* the value in the address */
    char here[64];    /* the value of this worker */
} info_check_t;

typedef struct info_tl_verdict {
    ferry_transport_info_t tl;          /* the transport (enabled here) */
    bool have_record;                   /* the address has a record for it */
    ferry_address_record_info_t record; /* its first record, judged from this worker */
    unsigned check_count;
    info_check_t checks[INFO_CHECKS_MAX];
} info_tl_verdict_t;

/* ---------------------------------------------------------------- reading */

/* Read the whole file (at most INFO_ADDRESS_FILE_MAX bytes). Returns NULL with error[] set. */
static uint8_t *info_read_file(const char *path, size_t *length_p, char *error, size_t error_len)
{
    uint8_t *data = malloc(INFO_ADDRESS_FILE_MAX + 1);
    size_t length = 0;
    int fd;

    if (data == NULL) {
        snprintf(error, error_len, "malloc(%u) failed", INFO_ADDRESS_FILE_MAX + 1);
        return NULL;
    }
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(error, error_len, "open(%s) failed: %s", path, strerror(errno));
        goto err_free;
    }
    while (length <= INFO_ADDRESS_FILE_MAX) {
        ssize_t n = read(fd, data + length, INFO_ADDRESS_FILE_MAX + 1 - length);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            snprintf(error, error_len, "read(%s) failed: %s", path, strerror(errno));
            goto err_close;
        }
        if (n == 0)
            break;
        length += (size_t)n;
    }
    close(fd);
    if (length > INFO_ADDRESS_FILE_MAX) {
        snprintf(error, error_len,
                 "%s is larger than %u bytes: not a ferry worker address (at most 65535 bytes)",
                 path, INFO_ADDRESS_FILE_MAX);
        goto err_free;
    }
    *length_p = length;
    return data;

err_close:
    close(fd);
err_free:
    free(data);
    return NULL;
}

/* ---------------------------------------------------------------- formatting */

static void info_boot_id_text(const uint8_t boot_id[16], char *buffer, size_t length)
{
    char hex[33];
    for (unsigned i = 0; i < 16; i++)
        snprintf(hex + 2 * i, 3, "%02x", boot_id[i]);
    snprintf(buffer, length, "%.8s-%.4s-%.4s-%.4s-%.12s", hex, hex + 8, hex + 12, hex + 16,
             hex + 20);
}

/* Record index of the address, decoded and judged from worker (may be NULL). */
static bool info_record(const void *blob, size_t length, size_t index, ferry_worker_t *worker,
                        ferry_address_record_info_t *record)
{
    *record = (ferry_address_record_info_t){.size = sizeof(*record)};
    return ferry_address_record_decode(blob, length, index, worker, record) == FERRY_OK;
}

/* ---------------------------------------------------------------- checks */

static info_check_t *info_check_add(info_tl_verdict_t *v, const char *key, const char *what,
                                    bool ok)
{
    if (v->check_count >= INFO_CHECKS_MAX)
        return NULL;
    info_check_t *check = &v->checks[v->check_count++];
    check->key = key;
    check->what = what;
    check->ok = ok;
    check->address[0] = '\0';
    check->here[0] = '\0';
    return check;
}

static void info_check_u64(info_tl_verdict_t *v, const char *key, const char *what,
                           uint64_t address, uint64_t here)
{
    info_check_t *check = info_check_add(v, key, what, address == here);
    if (check == NULL)
        return;
    snprintf(check->address, sizeof(check->address), "%" PRIu64, address);
    snprintf(check->here, sizeof(check->here), "%" PRIu64, here);
}

/* The header fields a transport of these capabilities depends on, address against here. */
static void info_checks(info_tl_verdict_t *v, const ferry_address_info_t *peer,
                        const ferry_address_info_t *here)
{
    if (v->tl.caps & FERRY_TRANSPORT_CAP_SAME_WORKER) {
        info_check_t *check =
            info_check_add(v, "worker", "worker", peer->worker_id == here->worker_id);
        if (check != NULL) {
            info_id_text(peer->worker_id, check->address, sizeof(check->address));
            info_id_text(here->worker_id, check->here, sizeof(check->here));
        }
    }
    if (v->tl.caps & FERRY_TRANSPORT_CAP_SAME_HOST) {
        info_check_t *check =
            info_check_add(v, "boot_id", "boot id",
                           memcmp(peer->boot_id, here->boot_id, sizeof(here->boot_id)) == 0);
        if (check != NULL) {
            info_boot_id_text(peer->boot_id, check->address, sizeof(check->address));
            info_boot_id_text(here->boot_id, check->here, sizeof(check->here));
        }
        info_check_u64(v, "net_ns", "net namespace", peer->net_ns, here->net_ns);
        info_check_u64(v, "pid_ns", "pid namespace", peer->pid_ns, here->pid_ns);
        info_check_u64(v, "user_ns", "user namespace", peer->user_ns, here->user_ns);
    }
}

/* The verdict of transport index (enabled here) on the address. */
static void info_verdict(ferry_worker_t *worker, size_t index, const void *blob, size_t length,
                         const ferry_address_info_t *peer, const ferry_address_info_t *here,
                         info_tl_verdict_t *v)
{
    memset(v, 0, sizeof(*v));
    v->tl.size = sizeof(v->tl);
    if (ferry_transport_query(NULL, index, &v->tl) != FERRY_OK)
        return; /* cannot be: the index is in range */
    for (size_t r = 0; r < peer->record_count && !v->have_record; r++) {
        v->have_record = info_record(blob, length, r, worker, &v->record) &&
                         v->record.transport_index == index && v->record.considered;
    }
    if (v->have_record)
        info_checks(v, peer, here);
}

/* ---------------------------------------------------------------- output */

static void info_address_json(info_json_t *json, const char *key, const ferry_address_info_t *a,
                              const void *blob, size_t length)
{
    char text[64];

    info_json_object_begin(json, key);
    info_json_uint(json, "version", a->version);
    info_json_bool(json, "compact", a->compact);
    info_id_text(a->worker_id, text, sizeof(text));
    info_json_string(json, "worker", text);
    info_json_uint(json, "pid", a->pid);
    info_boot_id_text(a->boot_id, text, sizeof(text));
    info_json_string(json, "boot_id", text);
    info_json_uint(json, "net_ns", a->net_ns);
    info_json_uint(json, "pid_ns", a->pid_ns);
    info_json_uint(json, "user_ns", a->user_ns);
    if (blob != NULL) {
        info_json_array_begin(json, "records");
        for (size_t i = 0; i < a->record_count; i++) {
            ferry_address_record_info_t r;
            if (!info_record(blob, length, i, NULL, &r))
                continue;
            info_json_object_begin(json, NULL);
            info_json_uint(json, "id", r.transport_id);
            info_json_string(json, "transport", r.transport);
            info_json_uint(json, "length", r.length);
            info_json_string(json, "status", ferry_status_name(r.status));
            info_json_string(json, "description", r.text);
            info_fields_json(json, &r);
            info_json_object_end(json);
        }
        info_json_array_end(json);
    }
    info_json_object_end(json);
}

static void info_address_text(const char *path, size_t length, const ferry_address_info_t *a,
                              const void *blob)
{
    char boot[40], id[24];

    info_boot_id_text(a->boot_id, boot, sizeof(boot));
    info_id_text(a->worker_id, id, sizeof(id));
    printf("%saddress in %s: %zu bytes, version %u\n", a->compact ? "compact " : "", path, length,
           a->version);
    printf("  worker   %s, pid %" PRIu32 "\n", id, a->pid);
    printf("  host     boot id %s, net ns %" PRIu64 ", pid ns %" PRIu64 ", user ns %" PRIu64 "\n",
           boot, a->net_ns, a->pid_ns, a->user_ns);
    printf("  records ");
    if (a->record_count == 0)
        printf(" none");
    for (size_t i = 0; i < a->record_count; i++) {
        ferry_address_record_info_t r;
        if (!info_record(blob, length, i, NULL, &r))
            continue;
        printf("%s %s (id %u, %zu bytes: %s)", i ? "," : "",
               r.transport != NULL ? r.transport : "unknown", r.transport_id, r.length, r.text);
    }
    printf("\n");
}

static void info_verdict_json(info_json_t *json, const info_tl_verdict_t *v)
{
    info_json_object_begin(json, NULL);
    info_json_string(json, "name", v->tl.name);
    info_json_uint(json, "id", v->tl.id);
    info_json_bool(json, "record", v->have_record);
    if (v->have_record)
        info_json_uint(json, "record_length", v->record.length);
    else
        info_json_null(json, "record_length");
    info_json_bool(json, "reachable", v->have_record && v->record.reachable);
    info_json_string(json, "why",
                     !v->have_record       ? "no record in the address"
                     : v->record.reachable ? NULL
                                           : v->record.why);
    info_json_array_begin(json, "checks");
    for (unsigned i = 0; i < v->check_count; i++) {
        const info_check_t *c = &v->checks[i];
        info_json_object_begin(json, NULL);
        info_json_string(json, "check", c->key);
        info_json_bool(json, "same", c->ok);
        info_json_string(json, "address", c->address);
        info_json_string(json, "here", c->here);
        info_json_object_end(json);
    }
    info_json_array_end(json);
    info_json_object_end(json);
}

static void info_verdict_text(const info_tl_verdict_t *v)
{
    printf("  %s (id %u): ", v->tl.name, v->tl.id);
    if (!v->have_record) {
        printf("no record in the address (the peer has not enabled %s)\n", v->tl.name);
        return;
    }
    if (v->record.reachable)
        printf("record of %zu bytes; reachable\n", v->record.length);
    else
        printf("record of %zu bytes; NOT reachable: %s\n", v->record.length, v->record.why);
    for (unsigned i = 0; i < v->check_count; i++) {
        const info_check_t *c = &v->checks[i];
        if (c->ok)
            printf("      same     %-15s %s\n", c->what, c->address);
        else
            printf("      DIFFERS  %-15s address %s, here %s\n", c->what, c->address, c->here);
    }
}

/* Records of the address that no transport enabled here looks at, with the library's reason. */
static void info_ignored_records(info_t *info, ferry_worker_t *worker, const void *blob,
                                 size_t length, const ferry_address_info_t *peer)
{
    bool any = false;

    if (info->json_mode)
        info_json_array_begin(&info->json, "ignored_records");
    for (size_t i = 0; i < peer->record_count; i++) {
        ferry_address_record_info_t r;
        if (!info_record(blob, length, i, worker, &r) || r.considered)
            continue;
        if (info->json_mode) {
            info_json_object_begin(&info->json, NULL);
            info_json_uint(&info->json, "id", r.transport_id);
            info_json_string(&info->json, "transport", r.transport);
            info_json_string(&info->json, "reason", r.why);
            info_json_object_end(&info->json);
        } else {
            if (!any)
                printf("records not considered:\n");
            printf("  id %u: %s\n", r.transport_id, r.why);
        }
        any = true;
    }
    if (info->json_mode)
        info_json_array_end(&info->json);
}

/* -e failed before a verdict: say why. */
static int info_endpoint_fail(info_t *info, const char *path, const char *status_name,
                              const char *error)
{
    if (info->json_mode) {
        info_json_string(&info->json, "status", status_name);
        info_json_string(&info->json, "error", error);
        info_json_null(&info->json, "selected");
        info_json_object_end(&info->json);
    } else {
        printf("address in %s: %s\n", path, error);
    }
    return 1;
}

int info_show_endpoint(info_t *info, const char *path)
{
    char error[512];
    size_t length = 0;
    ferry_address_info_t peer = {.size = sizeof(peer)};
    ferry_address_info_t here;
    const void *own;
    size_t own_length;
    ferry_status_t status;
    int result;

    if (info->json_mode) {
        info_json_object_begin(&info->json, "endpoint");
        info_json_string(&info->json, "file", path);
    }
    uint8_t *blob = info_read_file(path, &length, error, sizeof(error));
    if (blob == NULL)
        return info_endpoint_fail(info, path, "FERRY_ERR_IO", error);
    if (info->json_mode)
        info_json_uint(&info->json, "length", length);

    status = ferry_address_decode(blob, length, &peer);
    if (status != FERRY_OK) {
        snprintf(error, sizeof(error),
                 "%zu bytes, not a valid worker address: %s (the library's warning on stderr "
                 "says what is wrong)",
                 length, ferry_status_string(status));
        result = info_endpoint_fail(info, path, ferry_status_name(status), error);
        free(blob);
        return result;
    }

    ferry_worker_t *worker = info_worker(info, &status);
    if (worker == NULL || !info_worker_address(info, &own, &own_length, &here)) {
        snprintf(error, sizeof(error), "no worker here to compare with: %s (%s)",
                 ferry_status_string(status), ferry_status_name(status));
        if (!info->json_mode)
            info_address_text(path, length, &peer, blob);
        else
            info_address_json(&info->json, "address", &peer, blob, length);
        result = info_endpoint_fail(info, path, ferry_status_name(status), error);
        free(blob);
        return result;
    }

    ferry_context_t *context = info_context(info, NULL);
    if (info->json_mode) {
        info_address_json(&info->json, "address", &peer, blob, length);
        info_address_json(&info->json, "here", &here, NULL, 0);
        info_json_array_begin(&info->json, "transports");
    } else {
        char id[24];
        info_address_text(path, length, &peer, blob);
        info_id_text(here.worker_id, id, sizeof(id));
        printf("this worker: %s, pid %" PRIu32 "\n", id, here.pid);
        printf("transports enabled here, in order of preference (FERRY_TRANSPORTS=%s):\n",
               info_transports_setting());
    }
    for (size_t t = 0; t < ferry_transport_count(); t++) {
        ferry_transport_info_t tl = {.size = sizeof(tl)};
        if (ferry_transport_query(context, t, &tl) != FERRY_OK || !tl.enabled)
            continue;
        info_tl_verdict_t v;
        info_verdict(worker, t, blob, length, &peer, &here, &v);
        if (info->json_mode)
            info_verdict_json(&info->json, &v);
        else
            info_verdict_text(&v);
    }
    if (info->json_mode)
        info_json_array_end(&info->json);
    info_ignored_records(info, worker, blob, length, &peer);

    ferry_ep_choice_t choice = {.size = sizeof(choice)};
    status = ferry_ep_choose(worker, blob, length, &choice);
    if (status != FERRY_OK) { /* cannot be: the address was decoded above */
        choice.status = status;
        choice.transport = NULL;
        snprintf(choice.reason, sizeof(choice.reason), "ferry_ep_choose: %s",
                 ferry_status_name(status));
    }
    if (info->json_mode) {
        info_json_string(&info->json, "status", ferry_status_name(choice.status));
        info_json_string(&info->json, "selected", choice.transport);
        info_json_string(&info->json, "reason", choice.reason);
        info_json_object_end(&info->json);
    } else if (choice.transport != NULL) {
        printf("endpoint: would use %s\n", choice.transport);
        printf("  why: %s\n", choice.reason);
    } else {
        printf("endpoint: unreachable: no transport enabled here reaches this worker "
               "(ferry_ep_create returns FERRY_ERR_UNREACHABLE)\n");
        printf("  why: %s\n", choice.reason);
    }
    free(blob);
    return choice.transport != NULL ? 0 : 1;
}
