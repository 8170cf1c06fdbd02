/* Sealed memfds: the shared memory ferry hands to peers (registrations' memory, the key table,
 * the shm transport's region and rings). */
#ifndef FERRY_MEM_MEMFD_H
#define FERRY_MEM_MEMFD_H

#include <stddef.h>

#include <ferry/status.h>

/* Create a memfd named name of size bytes, sealed against shrinking, growing and further
 * seals (a peer that maps it can never fault on it), and map it read-write. Sets *fd_p and
 * *map_p on success. Returns FERRY_OK or FERRY_ERR_SHMEM (logged: the call, name, size,
 * strerror). */
ferry_status_t fy_memfd_create(const char *name, size_t size, int *fd_p, void **map_p);

/* Keep a mapping shared with peers out of fork() children (MADV_DONTFORK): a child's stray
 * store can then never reach a peer's memory, a ring or a key table (ferry.h, "fork()").
 * what names the mapping in the warning logged if the kernel refuses. */
void fy_map_dontfork(void *map, size_t size, const char *what);

#endif
