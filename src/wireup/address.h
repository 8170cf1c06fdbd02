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
 * Everything is checked by fy_address_parse() before any field is used.
 *
 * The compact form (ferry_worker_address_compact): FERRY_ADDRESS_COMPACT_SIZE = 64 bytes in
 * every process, little-endian, for launchers' fixed-size allgathers and 64-byte name
 * buffers. It carries fixed fields instead of records; ferry_ep_create rebuilds each
 * transport's record from them (fy_tl_ops_t.compact_record) and then goes the same way as
 * with a full address:
 *
 *     0  u32 magic "FRYC" (0x43595246)   4  u8 version (1)   5  u8 flags   6  u16 0
 *     8  u64 worker uuid (not 0)
 *     16 u8[16] boot id             (as in the full form: packed keys name their host by it)
 *     32 u32 namespace digest       (fy_host_id_ns_digest of the net/pid/user namespaces; boot
 *                                    id and digest equal to this worker's = the same host, as
 *                                    the full form's identity would say)
 *     36 u32 pid
 *     40 u32 uid                    (flag 0x01 shm: the peer listens on the abstract socket
 *                                    "ferry-<worker uuid, 16 hex digits>"; else 0)
 *     44 u8 ip family (4 or 6)  45 u8 0  46 u16 tcp port (not 0)
 *     48 u8[16] ip address (IPv4: 4 bytes then 12 zeros)
 *                                   (flag 0x02 tcp: an address other hosts reach, or loopback
 *                                    when the worker has none; a peer on the same host uses
 *                                    127.0.0.1; else all zero)
 *
 * fy_address_compact_parse checks every field (length exactly 64, magic, version, unknown
 * flags, reserved bytes, worker uuid, fields of a clear flag zero, family, port) before use;
 * each failure is FERRY_ERR_INVALID_ADDRESS with one warning saying which. It is fuzzed
 * (tests/fuzz/address_compact.c). */
#ifndef FERRY_WIREUP_ADDRESS_H
#define FERRY_WIREUP_ADDRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ferry/status.h>

#include "core/host_id.h"
#include "transport/transport.h"

#define FERRY_ADDRESS_MAGIC 0x59525246u
#define FERRY_ADDRESS_VERSION 1u
#define FERRY_ADDRESS_HEADER_SIZE 64u
#define FERRY_ADDRESS_RECORD_HEADER_SIZE 4u
#define FERRY_ADDRESS_MAX_RECORDS 8u
#define FERRY_ADDRESS_MAX_SIZE 1024u

#define FY_ADDRESS_COMPACT_MAGIC 0x43595246u /* "FRYC" */
#define FY_ADDRESS_COMPACT_VERSION 1u
/* room for the records rebuilt from a compact address (self 0, shm 36, tcp 44 bytes) */
#define FY_ADDRESS_COMPACT_STORAGE 512u

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
    bool compact;       /* parsed from the compact form: records point into storage */
    uint32_t ns_digest; /* compact form: the namespace digest it carries */
    uint8_t storage[FY_ADDRESS_COMPACT_STORAGE];
} fy_address_t;

/* Check and parse a blob of length bytes. Returns FERRY_OK or FERRY_ERR_INVALID_ADDRESS
 * (logged once at warn level with the reason: truncated, magic, version, length, records). */
ferry_status_t fy_address_parse(const void *blob, size_t length, fy_address_t *address);

/* Write the header for (uuid, host, pid, record_count) into buffer (FERRY_ADDRESS_HEADER_SIZE
 * bytes); the total length is patched by fy_address_finish(). */
void fy_address_write_header(void *buffer, uint64_t worker_uuid, const fy_host_id_t *host,
                             uint32_t pid, uint16_t record_count);
void fy_address_finish(void *buffer, uint16_t total_length);

/* The fields of a compact address. */
typedef struct fy_address_compact {
    uint64_t worker_uuid;
    uint8_t boot_id[16];
    uint32_t ns_digest; /* fy_host_id_ns_digest */
    uint32_t pid;
    fy_tl_compact_t fields; /* what the transports filled */
} fy_address_compact_t;

/* Write the compact form of c into buffer[FERRY_ADDRESS_COMPACT_SIZE]. */
void fy_address_compact_write(void *buffer, const fy_address_compact_t *c);

/* Check a compact address of length bytes, field by field. Returns FERRY_OK with *c filled,
 * or FERRY_ERR_INVALID_ADDRESS (one warning: what is wrong). */
ferry_status_t fy_address_compact_parse(const void *blob, size_t length, fy_address_compact_t *c);

/* Is this blob meant to be a compact address (its first bytes are the compact magic)? */
bool fy_address_is_compact(const void *blob, size_t length);

/* Check and parse either form. A compact address is turned into records by every transport
 * that rebuilds one (compact_record); its host is local_host when the boot id and namespace
 * digest match it, else the boot id it carries with namespace inodes of zero (no host's). *address
 * points into blob (full form) or into itself (compact form): do not copy it by value. Returns
 * FERRY_OK or FERRY_ERR_INVALID_ADDRESS (logged once). */
ferry_status_t fy_address_parse_any(const void *blob, size_t length, const fy_host_id_t *local_host,
                                    fy_address_t *address);

/* The record of a transport id, or NULL. */
const fy_address_record_t *fy_address_find(const fy_address_t *address, uint8_t id);

#endif
