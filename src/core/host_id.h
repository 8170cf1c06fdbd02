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

/* A 32-bit digest of the namespaces of the identity (FNV-1a over the net, pid and user
 * namespace inodes, little-endian, folded to 32 bits): what a compact address carries beside
 * the boot id. Equal namespaces have equal digests; on one boot, different ones collide with
 * probability 2^-32. */
uint32_t fy_host_id_ns_digest(const fy_host_id_t *host);

#endif
