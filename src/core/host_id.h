/* This host's identity, as transports and addresses compare it. */
#ifndef FY_CORE_HOST_ID_H
#define FY_CORE_HOST_ID_H

#include <stdbool.h>
#include <stdint.h>

#include <ferry/status.h>

/* What makes "the same host" for shared memory: one kernel boot and the same network
 * (abstract sockets), pid (CMA takes a pid) and user namespaces. */
typedef struct fy_host_id {
    uint8_t boot_id[16];
    uint64_t net_ns;
    uint64_t pid_ns;
    uint64_t user_ns;
} fy_host_id_t;

/* Read this host's identity (boot id and namespace inodes). Returns FERRY_OK or FERRY_ERR_IO
 * (logged: the path and strerror). */
ferry_status_t fy_host_id_read(fy_host_id_t *host);

bool fy_host_id_equal(const fy_host_id_t *a, const fy_host_id_t *b);

/* A 64-bit digest of the whole identity (FNV-1a over boot id and the three namespace inodes,
 * little-endian): what a compact address carries instead of the identity. Equal identities
 * have equal digests; different ones collide with probability 2^-64. */
uint64_t fy_host_id_digest(const fy_host_id_t *host);

#endif
