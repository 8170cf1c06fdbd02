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
