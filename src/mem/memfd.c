/* Sealed memfds (memfd.h). */
#define _GNU_SOURCE
#include "mem/memfd.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/log.h"

#define MEMFD_SEALS (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)

ferry_status_t fy_memfd_create(const char *name, size_t size, int *fd_p, void **map_p)
{
    int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    void *map;
    if (fd < 0) {
        fy_error("memfd_create(%s) failed: %s", name, strerror(errno));
        return FERRY_ERR_SHMEM;
    }
    if (ftruncate(fd, (off_t)size) != 0) {
        fy_error("ftruncate(memfd %s, %zu bytes) failed: %s", name, size, strerror(errno));
        goto err_close;
    }
    if (fcntl(fd, F_ADD_SEALS, MEMFD_SEALS) != 0) {
        fy_error("fcntl(memfd %s, F_ADD_SEALS) failed: %s", name, strerror(errno));
        goto err_close;
    }
    map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) {
        fy_error("mmap(memfd %s, %zu bytes) failed: %s", name, size, strerror(errno));
        goto err_close;
    }
    fy_map_dontfork(map, size, name);
    *fd_p = fd;
    *map_p = map;
    return FERRY_OK;

err_close:
    close(fd);
    return FERRY_ERR_SHMEM;
}

void fy_map_dontfork(void *map, size_t size, const char *what)
{
    if (madvise(map, size, MADV_DONTFORK) != 0)
        fy_warn("madvise(%p, %zu bytes of %s, MADV_DONTFORK) failed: %s; a fork() child would "
                "share this memory with its parent's peers",
                map, size, what, strerror(errno));
}
