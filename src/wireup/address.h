/* Worker addresses (business cards): an opaque, versioned, little-endian blob.
 *
 *   header (64 bytes, fixed):
 *     0  u32 magic "FRRY" (0x59525246)   4  u16 version (1)   6  u16 total length
 *     8  u64 worker uuid (random)        16 u8[16] boot id (/proc/sys/kernel/random/boot_id)
 *     32 u64 net namespace inode         40 u64 pid namespace inode
 *     48 u64 user namespace inode        56 u32 pid            60 u16 record count  62 u16 0
 *   then record count records, each:
 *     0 u8 transport id   1 u8 0   2 u16 record length   4 record bytes
 *
 * Everything is checked by fy_address_parse() before any field is used. */
#ifndef FERRY_WIREUP_ADDRESS_H
#define FERRY_WIREUP_ADDRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ferry/status.h>

#include "core/host_id.h"

#define FERRY_ADDRESS_MAGIC 0x59525246u
#define FERRY_ADDRESS_VERSION 1u
#define FERRY_ADDRESS_HEADER_SIZE 64u
#define FERRY_ADDRESS_RECORD_HEADER_SIZE 4u
#define FERRY_ADDRESS_MAX_RECORDS 8u
#define FERRY_ADDRESS_MAX_SIZE 1024u

typedef struct fy_address_record {
    uint8_t transport_id;
    uint16_t length;
    const uint8_t *data; /* points into the parsed blob */
} fy_address_record_t;

/* A parsed address; records point into the blob, which must outlive it. */
typedef struct fy_address {
    uint16_t version;
    uint64_t worker_uuid;
    fy_host_id_t host;
    uint32_t pid;
    unsigned record_count;
    fy_address_record_t records[FERRY_ADDRESS_MAX_RECORDS];
} fy_address_t;

/* Check and parse a blob of length bytes. Returns FERRY_OK or FERRY_ERR_INVALID_ADDRESS
 * (logged once at warn level with the reason: truncated, magic, version, length, records). */
ferry_status_t fy_address_parse(const void *blob, size_t length, fy_address_t *address);

/* Write the header for (uuid, host, pid, record_count) into buffer (FERRY_ADDRESS_HEADER_SIZE
 * bytes); the total length is patched by fy_address_finish(). */
void fy_address_write_header(void *buffer, uint64_t worker_uuid, const fy_host_id_t *host,
                             uint32_t pid, uint16_t record_count);
void fy_address_finish(void *buffer, uint16_t total_length);

/* The record of a transport id, or NULL. */
const fy_address_record_t *fy_address_find(const fy_address_t *address, uint8_t id);

#endif
