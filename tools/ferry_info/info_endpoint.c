/* ferry_info -e ADDRESS_FILE: which transport ferry_ep_create() would choose for that worker
 * address, and why. The choice is made exactly as ferry_ep_create() makes it (the first
 * transport enabled here, in order, whose record is in the address and whose reachable() says
 * yes); the checks printed beside it spell out what reachable() compares: the worker (self), the
 * host identity field by field (boot id, net/pid/user namespaces) and the uid (shm). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "info.h"
#include "progress/worker.h"
#include "transport/shm/shm.h"
#include "transport/tcp/tcp_frame.h"
#include "transport/transport.h"
#include "wireup/address.h"
#include "wireup/context.h"

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
    const fy_tl_ops_t *ops;
    const fy_address_record_t *record; /* the address's record for it, or NULL */
    bool reachable;                    /* what reachable() says */
    unsigned check_count;
    info_check_t checks[INFO_CHECKS_MAX];
    char note[256]; /* a remark ("" when none) */
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

static const fy_tl_ops_t *info_transport_by_id(uint8_t id, size_t *index_p)
{
    for (size_t i = 0; i < fy_transports_count; i++) {
        if (fy_transports[i]->id == id) {
            if (index_p != NULL)
                *index_p = i;
            return fy_transports[i];
        }
    }
    return NULL;
}

static bool info_is_shm(const fy_tl_ops_t *ops)
{
    return strcmp(ops->name, "shm") == 0;
}

/* The shm record in a parsed address, if it has the right size. */
static bool info_shm_record(const fy_address_record_t *record, shm_record_t *rec)
{
    if (record == NULL || record->length != sizeof(*rec))
        return false;
    memcpy(rec, record->data, sizeof(*rec));
    return true;
}

/* The socket name of an shm record, printable (bounded, non-printable bytes as '?'). */
static void info_shm_name_text(const shm_record_t *rec, char *buffer, size_t length)
{
    size_t n = 0;
    for (size_t i = 0; i < sizeof(rec->name) && rec->name[i] != '\0' && n + 1 < length; i++) {
        unsigned char c = (unsigned char)rec->name[i];
        buffer[n++] = c >= 0x20 && c < 0x7f ? (char)c : '?';
    }
    buffer[n] = '\0';
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

static void info_check_host(info_tl_verdict_t *v, const fy_host_id_t *address,
                            const fy_host_id_t *here)
{
    info_check_t *check =
        info_check_add(v, "boot_id", "boot id",
                       memcmp(address->boot_id, here->boot_id, sizeof(here->boot_id)) == 0);
    if (check != NULL) {
        info_boot_id_text(address->boot_id, check->address, sizeof(check->address));
        info_boot_id_text(here->boot_id, check->here, sizeof(check->here));
    }
    info_check_u64(v, "net_ns", "net namespace", address->net_ns, here->net_ns);
    info_check_u64(v, "pid_ns", "pid namespace", address->pid_ns, here->pid_ns);
    info_check_u64(v, "user_ns", "user namespace", address->user_ns, here->user_ns);
}

/* The tcp record in text: "port P: a.b.c.d, x::y". */
static void info_tcp_record_text(const fy_address_record_t *r, char *buffer, size_t length)
{
    tcp_record_t rec;
    if (!tcp_record_decode(r->data, r->length, &rec)) {
        snprintf(buffer, length, "malformed record");
        return;
    }
    size_t used = (size_t)snprintf(buffer, length, "port %u:", rec.port);
    for (unsigned i = 0; i < rec.count && used < length; i++) {
        char text[INET6_ADDRSTRLEN];
        inet_ntop(rec.addrs[i].family == 4 ? AF_INET : AF_INET6, rec.addrs[i].bytes, text,
                  sizeof(text));
        used += (size_t)snprintf(buffer + used, length - used, " %s", text);
    }
}

/* tcp: the record parses; a peer on this host (same boot id and network namespace) is reached
 * over loopback, another host only through a non-loopback address. */
static void info_tcp_checks(info_tl_verdict_t *v, const fy_address_t *peer,
                            const fy_host_id_t *here)
{
    tcp_record_t rec;
    bool valid = tcp_record_decode(v->record->data, v->record->length, &rec);
    info_check_t *check = info_check_add(v, "record", "record", valid);
    if (check != NULL) {
        info_tcp_record_text(v->record, check->address, sizeof(check->address));
        snprintf(check->here, sizeof(check->here), "version %u, 1..%u addresses",
                 TCP_RECORD_VERSION, TCP_RECORD_MAX_ADDRS);
    }
    if (!valid)
        return;
    bool same = fy_host_id_equal(&peer->host, here);
    unsigned remote = 0;
    for (unsigned i = 0; i < rec.count; i++) {
        const tcp_record_addr_t *a = &rec.addrs[i];
        bool loopback = a->family == 4 ? a->bytes[0] == 127
                                       : memcmp(a->bytes, in6addr_loopback.s6_addr, 16) == 0;
        remote += !loopback;
    }
    check = info_check_add(v, "route",
                           same ? "same host: loopback"
                                : "another host: routable "
                                  "address",
                           same || remote > 0);
    if (check != NULL) {
        snprintf(check->address, sizeof(check->address), "%u non-loopback addresses", remote);
        snprintf(check->here, sizeof(check->here), "%s",
                 same ? "same boot id and namespaces" : "another host (never loopback)");
    }
}

static void info_verdict(ferry_worker_t *worker, unsigned t, const fy_address_t *peer,
                         const fy_address_t *own, info_tl_verdict_t *v)
{
    const fy_tl_ops_t *ops = fy_transports[t];
    unsigned flags = worker->context->caps[t].flags;

    memset(v, 0, sizeof(*v));
    v->ops = ops;
    v->record = fy_address_find(peer, ops->id);
    if (v->record == NULL)
        return;
    fy_tl_peer_t identity = {
        .worker_uuid = peer->worker_uuid, .host = peer->host, .pid = peer->pid};
    v->reachable = ops->reachable(worker->tl[t], &identity, v->record->data, v->record->length);

    if (flags & FY_TL_CAP_SAME_WORKER) {
        info_check_t *check =
            info_check_add(v, "worker", "worker", peer->worker_uuid == worker->uuid);
        if (check != NULL) {
            snprintf(check->address, sizeof(check->address), "%016" PRIx64, peer->worker_uuid);
            snprintf(check->here, sizeof(check->here), "%016" PRIx64, worker->uuid);
        }
    }
    if (flags & FY_TL_CAP_SAME_HOST)
        info_check_host(v, &peer->host, &worker->context->host);
    if (info_is_shm(ops)) {
        shm_record_t peer_rec, own_rec;
        info_check_t *check = info_check_add(v, "record_length", "record length",
                                             v->record->length == sizeof(shm_record_t));
        if (check != NULL) {
            snprintf(check->address, sizeof(check->address), "%u", v->record->length);
            snprintf(check->here, sizeof(check->here), "%zu", sizeof(shm_record_t));
        }
        if (info_shm_record(v->record, &peer_rec)) {
            uint32_t here_uid = info_shm_record(fy_address_find(own, ops->id), &own_rec)
                                    ? own_rec.uid
                                    : (uint32_t)getuid();
            info_check_u64(v, "uid", "uid", peer_rec.uid, here_uid);
        }
    }

    if (strcmp(ops->name, "tcp") == 0)
        info_tcp_checks(v, peer, &worker->context->host);

    bool all_ok = true;
    for (unsigned i = 0; i < v->check_count; i++)
        all_ok = all_ok && v->checks[i].ok;
    if (v->check_count > 0 && all_ok && !v->reachable)
        snprintf(v->note, sizeof(v->note), "%s says unreachable although every check above passed",
                 ops->name);
    else if (!all_ok && v->reachable)
        snprintf(v->note, sizeof(v->note), "%s says reachable although a check above differs",
                 ops->name);
}

/* ---------------------------------------------------------------- output */

static void info_address_json(info_json_t *json, const char *key, const fy_address_t *a,
                              bool with_records)
{
    char text[64];

    info_json_object_begin(json, key);
    info_json_uint(json, "version", a->version);
    snprintf(text, sizeof(text), "%016" PRIx64, a->worker_uuid);
    info_json_string(json, "worker", text);
    info_json_uint(json, "pid", a->pid);
    info_boot_id_text(a->host.boot_id, text, sizeof(text));
    info_json_string(json, "boot_id", text);
    info_json_uint(json, "net_ns", a->host.net_ns);
    info_json_uint(json, "pid_ns", a->host.pid_ns);
    info_json_uint(json, "user_ns", a->host.user_ns);
    if (with_records) {
        info_json_array_begin(json, "records");
        for (unsigned i = 0; i < a->record_count; i++) {
            const fy_address_record_t *r = &a->records[i];
            const fy_tl_ops_t *ops = info_transport_by_id(r->transport_id, NULL);
            shm_record_t rec;
            info_json_object_begin(json, NULL);
            info_json_uint(json, "id", r->transport_id);
            info_json_string(json, "transport", ops != NULL ? ops->name : NULL);
            info_json_uint(json, "length", r->length);
            if (ops != NULL && info_is_shm(ops) && info_shm_record(r, &rec)) {
                info_json_uint(json, "uid", rec.uid);
                info_json_string_n(json, "socket", rec.name, strnlen(rec.name, sizeof(rec.name)));
            }
            info_json_object_end(json);
        }
        info_json_array_end(json);
    }
    info_json_object_end(json);
}

static void info_address_text(const char *path, size_t length, const fy_address_t *a)
{
    char boot[40];

    info_boot_id_text(a->host.boot_id, boot, sizeof(boot));
    printf("address in %s: %zu bytes, version %u\n", path, length, a->version);
    printf("  worker   %016" PRIx64 ", pid %" PRIu32 "\n", a->worker_uuid, a->pid);
    printf("  host     boot id %s, net ns %" PRIu64 ", pid ns %" PRIu64 ", user ns %" PRIu64 "\n",
           boot, a->host.net_ns, a->host.pid_ns, a->host.user_ns);
    printf("  records ");
    if (a->record_count == 0)
        printf(" none");
    for (unsigned i = 0; i < a->record_count; i++) {
        const fy_address_record_t *r = &a->records[i];
        const fy_tl_ops_t *ops = info_transport_by_id(r->transport_id, NULL);
        shm_record_t rec;
        printf("%s %s (id %u, %u bytes", i ? "," : "", ops != NULL ? ops->name : "unknown",
               r->transport_id, r->length);
        if (ops != NULL && info_is_shm(ops) && info_shm_record(r, &rec)) {
            char name[sizeof(rec.name) + 1];
            info_shm_name_text(&rec, name, sizeof(name));
            printf(": uid %" PRIu32 ", socket @%s", rec.uid, name);
        }
        if (ops != NULL && strcmp(ops->name, "tcp") == 0) {
            char text[200];
            info_tcp_record_text(r, text, sizeof(text));
            printf(": %s", text);
        }
        printf(")");
    }
    printf("\n");
}

static void info_verdict_json(info_json_t *json, const info_tl_verdict_t *v)
{
    info_json_object_begin(json, NULL);
    info_json_string(json, "name", v->ops->name);
    info_json_uint(json, "id", v->ops->id);
    info_json_bool(json, "record", v->record != NULL);
    if (v->record != NULL)
        info_json_uint(json, "record_length", v->record->length);
    else
        info_json_null(json, "record_length");
    info_json_bool(json, "reachable", v->reachable);
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
    info_json_string(json, "note", v->note[0] != '\0' ? v->note : NULL);
    info_json_object_end(json);
}

static void info_verdict_text(const info_tl_verdict_t *v)
{
    printf("  %s (id %u): ", v->ops->name, v->ops->id);
    if (v->record == NULL) {
        printf("no record in the address (the peer has not enabled %s)\n", v->ops->name);
        return;
    }
    printf("record of %u bytes; %s\n", v->record->length,
           v->reachable ? "reachable" : "NOT reachable");
    for (unsigned i = 0; i < v->check_count; i++) {
        const info_check_t *c = &v->checks[i];
        if (c->ok)
            printf("      same     %-15s %s\n", c->what, c->address);
        else
            printf("      DIFFERS  %-15s address %s, here %s\n", c->what, c->address, c->here);
    }
    if (v->note[0] != '\0')
        printf("      note: %s\n", v->note);
}

/* Records of the address that no transport enabled here will look at. */
static void info_ignored_records(info_t *info, ferry_worker_t *worker, const fy_address_t *peer)
{
    bool any = false;

    if (info->json_mode)
        info_json_array_begin(&info->json, "ignored_records");
    for (unsigned i = 0; i < peer->record_count; i++) {
        const fy_address_record_t *r = &peer->records[i];
        size_t index = 0;
        const fy_tl_ops_t *ops = info_transport_by_id(r->transport_id, &index);
        char reason[128];
        if (ops != NULL && index < FY_TL_MAX && worker->tl[index] != NULL) {
            if (fy_address_find(peer, r->transport_id) == r)
                continue; /* looked at */
            snprintf(reason, sizeof(reason), "a second record for %s (only the first counts)",
                     ops->name);
        } else if (ops != NULL) {
            snprintf(reason, sizeof(reason), "%s is not enabled here (ferry_info -d says why)",
                     ops->name);
        } else {
            snprintf(reason, sizeof(reason), "no transport of this ferry has id %u (a newer peer?)",
                     r->transport_id);
        }
        if (info->json_mode) {
            info_json_object_begin(&info->json, NULL);
            info_json_uint(&info->json, "id", r->transport_id);
            info_json_string(&info->json, "transport", ops != NULL ? ops->name : NULL);
            info_json_string(&info->json, "reason", reason);
            info_json_object_end(&info->json);
        } else {
            if (!any)
                printf("records not considered:\n");
            printf("  id %u: %s\n", r->transport_id, reason);
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
    fy_address_t peer, own;
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

    status = fy_address_parse(blob, length, &peer);
    if (status != FERRY_OK) {
        snprintf(error, sizeof(error),
                 "%zu bytes, not a valid worker address: %s (the warning of "
                 "fy_address_parse on stderr says what is wrong)",
                 length, ferry_status_string(status));
        result = info_endpoint_fail(info, path, ferry_status_name(status), error);
        free(blob);
        return result;
    }

    ferry_worker_t *worker = info_worker(info, &status);
    if (worker == NULL) {
        snprintf(error, sizeof(error), "no worker here to compare with: %s (%s)",
                 ferry_status_string(status), ferry_status_name(status));
        if (!info->json_mode)
            info_address_text(path, length, &peer);
        else
            info_address_json(&info->json, "address", &peer, true);
        result = info_endpoint_fail(info, path, ferry_status_name(status), error);
        free(blob);
        return result;
    }
    if (fy_address_parse(worker->address, worker->address_length, &own) != FERRY_OK)
        memset(&own, 0, sizeof(own)); /* cannot happen: then no own record is found */

    if (info->json_mode) {
        info_address_json(&info->json, "address", &peer, true);
        fy_address_t here = own;
        here.worker_uuid = worker->uuid;
        here.host = worker->context->host;
        here.pid = (uint32_t)getpid();
        info_address_json(&info->json, "here", &here, false);
        info_json_array_begin(&info->json, "transports");
    } else {
        info_address_text(path, length, &peer);
        printf("this worker: %016" PRIx64 ", pid %ld\n", worker->uuid, (long)getpid());
        printf("transports enabled here, in order of preference (FERRY_TRANSPORTS=%s):\n",
               info_transports_setting());
    }

    const fy_tl_ops_t *selected = NULL;
    for (unsigned i = 0; i < worker->tl_active_count; i++) {
        info_tl_verdict_t v;
        info_verdict(worker, worker->tl_active[i], &peer, &own, &v);
        if (info->json_mode)
            info_verdict_json(&info->json, &v);
        else
            info_verdict_text(&v);
        if (selected == NULL && v.record != NULL && v.reachable)
            selected = v.ops;
    }
    if (info->json_mode)
        info_json_array_end(&info->json);
    info_ignored_records(info, worker, &peer);

    if (info->json_mode) {
        info_json_string(&info->json, "status",
                         ferry_status_name(selected ? FERRY_OK : FERRY_ERR_UNREACHABLE));
        info_json_string(&info->json, "selected", selected ? selected->name : NULL);
        info_json_object_end(&info->json);
    } else if (selected != NULL) {
        printf("endpoint: would use %s\n", selected->name);
    } else {
        printf("endpoint: unreachable: no transport enabled here reaches this worker "
               "(ferry_ep_create returns FERRY_ERR_UNREACHABLE)\n");
    }
    free(blob);
    return selected != NULL ? 0 : 1;
}
