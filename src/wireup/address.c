/* Worker addresses: writing, and checking every field before use. */
#define _GNU_SOURCE
#include "wireup/address.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/log.h"
#include "core/wire.h"
#include "transport/transport.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
               "ferry addresses are little-endian; big-endian hosts need byte swaps here");

void fy_address_write_header(void *buffer, uint64_t worker_uuid, const fy_host_id_t *host,
                             uint32_t pid, uint16_t record_count)
{
    uint8_t *p = buffer;
    memset(p, 0, FERRY_ADDRESS_HEADER_SIZE);
    fy_le_put32(p + 0, FERRY_ADDRESS_MAGIC);
    fy_le_put16(p + 4, FERRY_ADDRESS_VERSION);
    fy_le_put64(p + 8, worker_uuid);
    memcpy(p + 16, host->boot_id, 16);
    fy_le_put64(p + 32, host->net_ns);
    fy_le_put64(p + 40, host->pid_ns);
    fy_le_put64(p + 48, host->user_ns);
    fy_le_put32(p + 56, pid);
    fy_le_put16(p + 60, record_count);
}

void fy_address_finish(void *buffer, uint16_t total_length)
{
    fy_le_put16((uint8_t *)buffer + 6, total_length);
}

static fy_log_limit_t fy_address_parse_log_limit;    /* a warning a peer can trigger */
static fy_log_limit_t fy_address_parse_log_limit_2;  /* a warning a peer can trigger */
static fy_log_limit_t fy_address_parse_log_limit_3;  /* a warning a peer can trigger */
static fy_log_limit_t fy_address_parse_log_limit_4;  /* a warning a peer can trigger */
static fy_log_limit_t fy_address_parse_log_limit_5;  /* a warning a peer can trigger */
static fy_log_limit_t fy_address_parse_log_limit_6;  /* a warning a peer can trigger */
static fy_log_limit_t fy_address_parse_log_limit_7;  /* a warning a peer can trigger */
static fy_log_limit_t fy_address_parse_log_limit_8;  /* a warning a peer can trigger */
static fy_log_limit_t fy_address_parse_log_limit_9;  /* a warning a peer can trigger */
static fy_log_limit_t fy_address_parse_log_limit_10; /* a warning a peer can trigger */

ferry_status_t fy_address_parse(const void *blob, size_t length, fy_address_t *address)
{
    const uint8_t *p = blob;
    fy_address_t parsed;
    size_t offset;

    if (blob == NULL || length < FERRY_ADDRESS_HEADER_SIZE) {
        fy_warn_limited(&fy_address_parse_log_limit,
                        "invalid worker address: %zu bytes, shorter than its %u-byte header "
                        "(truncated? pass the whole blob from ferry_worker_address)",
                        length, FERRY_ADDRESS_HEADER_SIZE);
        return FERRY_ERR_INVALID_ADDRESS;
    }
    if (fy_le_get32(p) != FERRY_ADDRESS_MAGIC) {
        fy_warn_limited(&fy_address_parse_log_limit_2,
                        "invalid worker address: wrong magic 0x%08x (not a ferry address)",
                        fy_le_get32(p));
        return FERRY_ERR_INVALID_ADDRESS;
    }
    memset(&parsed, 0, sizeof(parsed));
    parsed.version = fy_le_get16(p + 4);
    if (parsed.version != FERRY_ADDRESS_VERSION) {
        fy_warn_limited(&fy_address_parse_log_limit_3,
                        "invalid worker address: version %u, this ferry reads version %u "
                        "(peers must run compatible ferry versions)",
                        parsed.version, FERRY_ADDRESS_VERSION);
        return FERRY_ERR_INVALID_ADDRESS;
    }
    if (fy_le_get16(p + 6) != length) {
        fy_warn_limited(&fy_address_parse_log_limit_4,
                        "invalid worker address: header says %u bytes, %zu given (truncated or "
                        "padded)",
                        fy_le_get16(p + 6), length);
        return FERRY_ERR_INVALID_ADDRESS;
    }
    parsed.worker_uuid = fy_le_get64(p + 8);
    memcpy(parsed.host.boot_id, p + 16, 16);
    parsed.host.net_ns = fy_le_get64(p + 32);
    parsed.host.pid_ns = fy_le_get64(p + 40);
    parsed.host.user_ns = fy_le_get64(p + 48);
    parsed.pid = fy_le_get32(p + 56);
    parsed.record_count = fy_le_get16(p + 60);
    if (parsed.record_count > FERRY_ADDRESS_MAX_RECORDS) {
        fy_warn_limited(&fy_address_parse_log_limit_5,
                        "invalid worker address: %u transport records (at most %u)",
                        parsed.record_count, FERRY_ADDRESS_MAX_RECORDS);
        return FERRY_ERR_INVALID_ADDRESS;
    }
    if (fy_le_get16(p + 62) != 0) {
        fy_warn_limited(&fy_address_parse_log_limit_6,
                        "invalid worker address: reserved header bytes 62-63 are 0x%04x, not 0",
                        fy_le_get16(p + 62));
        return FERRY_ERR_INVALID_ADDRESS;
    }
    offset = FERRY_ADDRESS_HEADER_SIZE;
    for (unsigned i = 0; i < parsed.record_count; i++) {
        if (length - offset < FERRY_ADDRESS_RECORD_HEADER_SIZE) {
            fy_warn_limited(&fy_address_parse_log_limit_7,
                            "invalid worker address: record %u header truncated", i);
            return FERRY_ERR_INVALID_ADDRESS;
        }
        parsed.records[i].transport_id = p[offset];
        parsed.records[i].length = fy_le_get16(p + offset + 2);
        if (p[offset + 1] != 0) {
            fy_warn_limited(&fy_address_parse_log_limit_8,
                            "invalid worker address: record %u reserved byte is 0x%02x, not 0", i,
                            p[offset + 1]);
            return FERRY_ERR_INVALID_ADDRESS;
        }
        offset += FERRY_ADDRESS_RECORD_HEADER_SIZE;
        if (length - offset < parsed.records[i].length) {
            fy_warn_limited(&fy_address_parse_log_limit_9,
                            "invalid worker address: record %u claims %u bytes, %zu left", i,
                            parsed.records[i].length, length - offset);
            return FERRY_ERR_INVALID_ADDRESS;
        }
        parsed.records[i].data = p + offset;
        offset += parsed.records[i].length;
    }
    if (offset != length) {
        fy_warn_limited(&fy_address_parse_log_limit_10,
                        "invalid worker address: %zu trailing bytes after the records",
                        length - offset);
        return FERRY_ERR_INVALID_ADDRESS;
    }
    *address = parsed;
    return FERRY_OK;
}

const fy_address_record_t *fy_address_find(const fy_address_t *address, uint8_t id)
{
    for (unsigned i = 0; i < address->record_count; i++) {
        if (address->records[i].transport_id == id)
            return &address->records[i];
    }
    return NULL;
}

ferry_status_t fy_address_peer(const void *address, size_t length, fy_tl_peer_t *peer)
{
    fy_address_t parsed;
    ferry_status_t status = fy_address_parse(address, length, &parsed);
    if (status != FERRY_OK)
        return status;
    *peer =
        (fy_tl_peer_t){.worker_uuid = parsed.worker_uuid, .host = parsed.host, .pid = parsed.pid};
    return FERRY_OK;
}

/* ---------------------------------------------------------------- the compact form */

_Static_assert(FERRY_ADDRESS_COMPACT_SIZE == 64, "the compact form's layout is 64 bytes");

bool fy_address_is_compact(const void *blob, size_t length)
{
    uint8_t magic[4] = {0};
    if (blob == NULL || length == 0)
        return false;
    memcpy(magic, blob, length < sizeof(magic) ? length : sizeof(magic));
    /* a truncated compact address still names itself by the bytes of its magic it has */
    for (size_t i = 0; i < sizeof(magic) && i < length; i++) {
        if (magic[i] != (uint8_t)(FY_ADDRESS_COMPACT_MAGIC >> (8 * i)))
            return false;
    }
    return true;
}

/* Offsets of the compact form (address.h). */
enum {
    COMPACT_FLAGS = 5,
    COMPACT_UUID = 8,
    COMPACT_BOOT_ID = 16,
    COMPACT_NS_DIGEST = 32,
    COMPACT_PID = 36,
    COMPACT_UID = 40,
    COMPACT_FAMILY = 44,
    COMPACT_PORT = 46,
    COMPACT_IP = 48,
};

void fy_address_compact_write(void *buffer, const fy_address_compact_t *c)
{
    uint8_t *p = buffer;
    memset(p, 0, FERRY_ADDRESS_COMPACT_SIZE);
    fy_le_put32(p + 0, FY_ADDRESS_COMPACT_MAGIC);
    p[4] = FY_ADDRESS_COMPACT_VERSION;
    p[COMPACT_FLAGS] = c->fields.flags & FY_TL_COMPACT_FLAGS;
    fy_le_put64(p + COMPACT_UUID, c->worker_uuid);
    memcpy(p + COMPACT_BOOT_ID, c->boot_id, sizeof(c->boot_id));
    fy_le_put32(p + COMPACT_NS_DIGEST, c->ns_digest);
    fy_le_put32(p + COMPACT_PID, c->pid);
    if (c->fields.flags & FY_TL_COMPACT_SHM)
        fy_le_put32(p + COMPACT_UID, c->fields.uid);
    if (c->fields.flags & FY_TL_COMPACT_TCP) {
        p[COMPACT_FAMILY] = c->fields.ip_family;
        fy_le_put16(p + COMPACT_PORT, c->fields.port);
        memcpy(p + COMPACT_IP, c->fields.ip, c->fields.ip_family == 4 ? 4 : 16);
    }
}

/* True when bytes [from, to) of p are all zero. */
static bool address_zero(const uint8_t *p, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++) {
        if (p[i] != 0)
            return false;
    }
    return true;
}

ferry_status_t fy_address_compact_parse(const void *blob, size_t length, fy_address_compact_t *c)
{
    const uint8_t *p = blob;
    fy_address_compact_t parsed;

    if (blob == NULL || length < FERRY_ADDRESS_COMPACT_SIZE) {
        fy_warn("invalid compact worker address: %zu bytes, a compact address has %u "
                "(truncated? pass all FERRY_ADDRESS_COMPACT_SIZE bytes)",
                blob == NULL ? (size_t)0 : length, FERRY_ADDRESS_COMPACT_SIZE);
        return FERRY_ERR_INVALID_ADDRESS;
    }
    if (length > FERRY_ADDRESS_COMPACT_SIZE) {
        fy_warn("invalid compact worker address: %zu bytes, a compact address has exactly %u "
                "(pass its length, FERRY_ADDRESS_COMPACT_SIZE, not the buffer's)",
                length, FERRY_ADDRESS_COMPACT_SIZE);
        return FERRY_ERR_INVALID_ADDRESS;
    }
    if (fy_le_get32(p) != FY_ADDRESS_COMPACT_MAGIC) {
        fy_warn("invalid compact worker address: wrong magic 0x%08x (not a ferry address)",
                fy_le_get32(p));
        return FERRY_ERR_INVALID_ADDRESS;
    }
    if (p[4] != FY_ADDRESS_COMPACT_VERSION) {
        fy_warn("invalid compact worker address: version %u, this ferry reads version %u "
                "(peers must run compatible ferry versions)",
                p[4], FY_ADDRESS_COMPACT_VERSION);
        return FERRY_ERR_INVALID_ADDRESS;
    }
    memset(&parsed, 0, sizeof(parsed));
    parsed.fields.flags = p[COMPACT_FLAGS];
    if ((parsed.fields.flags & ~FY_TL_COMPACT_FLAGS) != 0) {
        fy_warn("invalid compact worker address: unknown flags 0x%02x (known: 0x%02x)",
                parsed.fields.flags & ~FY_TL_COMPACT_FLAGS, FY_TL_COMPACT_FLAGS);
        return FERRY_ERR_INVALID_ADDRESS;
    }
    if (!address_zero(p, 6, 8) || p[COMPACT_FAMILY + 1] != 0) {
        fy_warn("invalid compact worker address: reserved bytes (6-7, 45) are not 0");
        return FERRY_ERR_INVALID_ADDRESS;
    }
    parsed.worker_uuid = fy_le_get64(p + COMPACT_UUID);
    if (parsed.worker_uuid == 0) {
        fy_warn("invalid compact worker address: worker id 0 (no worker has it)");
        return FERRY_ERR_INVALID_ADDRESS;
    }
    memcpy(parsed.boot_id, p + COMPACT_BOOT_ID, sizeof(parsed.boot_id));
    parsed.ns_digest = fy_le_get32(p + COMPACT_NS_DIGEST);
    parsed.pid = fy_le_get32(p + COMPACT_PID);
    if (parsed.fields.flags & FY_TL_COMPACT_SHM)
        parsed.fields.uid = fy_le_get32(p + COMPACT_UID);
    else if (!address_zero(p, COMPACT_UID, COMPACT_UID + 4)) {
        fy_warn("invalid compact worker address: uid set without the shm flag");
        return FERRY_ERR_INVALID_ADDRESS;
    }
    if (parsed.fields.flags & FY_TL_COMPACT_TCP) {
        parsed.fields.ip_family = p[COMPACT_FAMILY];
        parsed.fields.port = fy_le_get16(p + COMPACT_PORT);
        if (parsed.fields.ip_family != 4 && parsed.fields.ip_family != 6) {
            fy_warn("invalid compact worker address: ip family %u (4 or 6)",
                    parsed.fields.ip_family);
            return FERRY_ERR_INVALID_ADDRESS;
        }
        if (parsed.fields.port == 0) {
            fy_warn("invalid compact worker address: tcp port 0");
            return FERRY_ERR_INVALID_ADDRESS;
        }
        if (parsed.fields.ip_family == 4 &&
            !address_zero(p, COMPACT_IP + 4, FERRY_ADDRESS_COMPACT_SIZE)) {
            fy_warn("invalid compact worker address: IPv4 address with bytes after its 4th");
            return FERRY_ERR_INVALID_ADDRESS;
        }
        memcpy(parsed.fields.ip, p + COMPACT_IP, 16);
    } else if (!address_zero(p, COMPACT_FAMILY, FERRY_ADDRESS_COMPACT_SIZE)) {
        fy_warn("invalid compact worker address: tcp fields set without the tcp flag");
        return FERRY_ERR_INVALID_ADDRESS;
    }
    *c = parsed;
    return FERRY_OK;
}

/* A compact address as records: each transport that rebuilds one adds its record. */
static ferry_status_t address_parse_compact(const void *blob, size_t length,
                                            const fy_host_id_t *local_host, fy_address_t *address)
{
    fy_address_compact_t c;
    fy_address_t *a = address;
    size_t used = 0;

    memset(a, 0, offsetof(fy_address_t, storage));
    ferry_status_t status = fy_address_compact_parse(blob, length, &c);
    if (status != FERRY_OK)
        return status;
    a->version = FY_ADDRESS_COMPACT_VERSION;
    a->compact = true;
    a->worker_uuid = c.worker_uuid;
    a->pid = c.pid;
    a->ns_digest = c.ns_digest;
    if (local_host != NULL && memcmp(local_host->boot_id, c.boot_id, sizeof(c.boot_id)) == 0 &&
        fy_host_id_ns_digest(local_host) == c.ns_digest)
        a->host = *local_host;
    else /* namespace inodes of 0: no host's */
        memcpy(a->host.boot_id, c.boot_id, sizeof(c.boot_id));
    fy_tl_peer_t peer = {.worker_uuid = a->worker_uuid, .host = a->host, .pid = a->pid};
    for (size_t t = 0; t < fy_transports_count && a->record_count < FERRY_ADDRESS_MAX_RECORDS;
         t++) {
        const fy_tl_ops_t *tl = fy_transports[t];
        size_t room = sizeof(a->storage) - used;
        if (tl->compact_record == NULL ||
            tl->compact_record(&peer, &c.fields, a->storage + used, &room) != FERRY_OK)
            continue;
        a->records[a->record_count++] = (fy_address_record_t){
            .transport_id = tl->id, .length = (uint16_t)room, .data = a->storage + used};
        used += room;
    }
    return FERRY_OK;
}

ferry_status_t fy_address_parse_any(const void *blob, size_t length, const fy_host_id_t *local_host,
                                    fy_address_t *address)
{
    if (fy_address_is_compact(blob, length))
        return address_parse_compact(blob, length, local_host, address);
    return fy_address_parse(blob, length, address);
}
