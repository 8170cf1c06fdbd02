/* The shm address record (shm_record_t: the uid and the abstract socket name): which peers it
 * reaches, and what it says, for people and for programs (ferry_address_record_decode). */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "transport/shm/shm.h"

/* The record of record_length bytes, if it has the right size. */
static bool shm_record_read(const void *record, size_t record_length, shm_record_t *rec)
{
    if (record_length != sizeof(*rec))
        return false;
    memcpy(rec, record, sizeof(*rec));
    return true;
}

bool shm_record_reachable(fy_tl_worker_t *tlw, const fy_tl_peer_t *peer, const void *record,
                          size_t record_length)
{
    shm_record_t rec;
    if (!shm_record_read(record, record_length, &rec))
        return false;
    return fy_host_id_equal(&peer->host, &tlw->local->host) && rec.uid == tlw->record.uid;
}

/* The socket name, printable: bounded by the record, bytes outside ASCII's printable range as
 * '?'. */
static void shm_record_name_text(const shm_record_t *rec, char *buffer, size_t length)
{
    size_t n = 0;
    for (size_t i = 0; i < sizeof(rec->name) && rec->name[i] != '\0' && n + 1 < length; i++) {
        unsigned char c = (unsigned char)rec->name[i];
        buffer[n++] = c >= 0x20 && c < 0x7f ? (char)c : '?';
    }
    buffer[n] = '\0';
}

static void shm_boot_id_text(const uint8_t boot_id[16], char *buffer, size_t length)
{
    char hex[33];
    for (unsigned i = 0; i < 16; i++)
        snprintf(hex + 2 * i, 3, "%02x", boot_id[i]);
    snprintf(buffer, length, "%.8s-%.4s-%.4s-%.4s-%.12s", hex, hex + 8, hex + 12, hex + 16,
             hex + 20);
}

/* Why a peer of this host identity and uid is not reachable from tlw (the first difference in
 * the order shm needs them), or "" when it is. */
static void shm_record_why(fy_tl_worker_t *tlw, const fy_host_id_t *peer, uint32_t uid, char *why,
                           size_t why_len)
{
    const fy_host_id_t *here = &tlw->local->host;
    char a[40], b[40];

    why[0] = '\0';
    if (memcmp(peer->boot_id, here->boot_id, sizeof(here->boot_id)) != 0) {
        shm_boot_id_text(peer->boot_id, a, sizeof(a));
        shm_boot_id_text(here->boot_id, b, sizeof(b));
        snprintf(why, why_len, "another host: boot id %s, here %s (shared memory needs one kernel)",
                 a, b);
    } else if (peer->net_ns != here->net_ns) {
        snprintf(why, why_len,
                 "another net namespace: %" PRIu64 ", here %" PRIu64
                 " (the peer's abstract socket is not visible here)",
                 peer->net_ns, here->net_ns);
    } else if (peer->pid_ns != here->pid_ns) {
        snprintf(why, why_len,
                 "another pid namespace: %" PRIu64 ", here %" PRIu64
                 " (the handshake and cross-memory attach name the peer by pid)",
                 peer->pid_ns, here->pid_ns);
    } else if (peer->user_ns != here->user_ns) {
        snprintf(why, why_len,
                 "another user namespace: %" PRIu64 ", here %" PRIu64
                 " (uids and memory access differ there)",
                 peer->user_ns, here->user_ns);
    } else if (uid != tlw->record.uid) {
        snprintf(why, why_len,
                 "another user: uid %" PRIu32 ", here %" PRIu32
                 " (shm connects the processes of one user only)",
                 uid, tlw->record.uid);
    }
}

ferry_status_t shm_record_describe(fy_tl_worker_t *tlw, const fy_tl_peer_t *peer,
                                   const void *record, size_t record_length, char *text,
                                   size_t text_len, bool *reachable_p, char *why, size_t why_len)
{
    shm_record_t rec;
    char name[SHM_SOCKET_NAME_MAX + 1];

    if (!shm_record_read(record, record_length, &rec)) {
        snprintf(text, text_len, "malformed: %zu bytes, an shm record has %zu", record_length,
                 sizeof(rec));
        if (tlw != NULL) {
            *reachable_p = false;
            snprintf(why, why_len, "%s", text);
        }
        return FERRY_ERR_INVALID_ADDRESS;
    }
    shm_record_name_text(&rec, name, sizeof(name));
    snprintf(text, text_len, "uid %" PRIu32 ", socket @%s", rec.uid, name);
    if (tlw != NULL) {
        *reachable_p = shm_record_reachable(tlw, peer, record, record_length);
        shm_record_why(tlw, &peer->host, rec.uid, why, why_len);
        if (*reachable_p)
            why[0] = '\0';
        else if (why[0] == '\0') /* reachable() knows something this does not */
            snprintf(why, why_len, "the shm transport does not reach the peer");
    }
    return FERRY_OK;
}

size_t shm_record_fields(const void *record, size_t record_length, ferry_info_field_t *fields,
                         size_t max)
{
    char name[SHM_SOCKET_NAME_MAX + 1];
    shm_record_t rec;
    size_t count = 0;

    if (!shm_record_read(record, record_length, &rec))
        return 0;
    shm_record_name_text(&rec, name, sizeof(name));
    fy_tl_field_add(fields, max, &count, "uid", "%" PRIu32, rec.uid);
    fy_tl_field_add(fields, max, &count, "socket", "%s", name);
    return count;
}

void shm_socket_name(uint64_t worker_uuid, char name[SHM_SOCKET_NAME_MAX])
{
    memset(name, 0, SHM_SOCKET_NAME_MAX);
    snprintf(name, SHM_SOCKET_NAME_MAX, "ferry-%016llx", (unsigned long long)worker_uuid);
}

void shm_record_compact_fill(fy_tl_worker_t *tlw, fy_tl_compact_t *compact)
{
    compact->flags |= FY_TL_COMPACT_SHM;
    compact->uid = tlw->record.uid;
}

ferry_status_t shm_record_compact_record(const fy_tl_peer_t *peer, const fy_tl_compact_t *compact,
                                         void *buffer, size_t *length_p)
{
    shm_record_t rec;

    if (!(compact->flags & FY_TL_COMPACT_SHM))
        return FERRY_ERR_NO_ELEM;
    if (*length_p < sizeof(rec))
        return FERRY_ERR_OUT_OF_RANGE;
    memset(&rec, 0, sizeof(rec));
    rec.uid = compact->uid;
    shm_socket_name(peer->worker_uuid, rec.name);
    memcpy(buffer, &rec, sizeof(rec));
    *length_p = sizeof(rec);
    return FERRY_OK;
}
