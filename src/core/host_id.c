/* This host's identity: what makes "the same host" for shared memory. */
#define _GNU_SOURCE
#include "core/host_id.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/log.h"

static int host_id_hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static ferry_status_t host_id_read_boot_id(uint8_t boot_id[16])
{
    static const char path[] = "/proc/sys/kernel/random/boot_id";
    char text[64] = {0};
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        fy_error("open(%s) failed: %s", path, strerror(errno));
        return FERRY_ERR_IO;
    }
    ssize_t n = read(fd, text, sizeof(text) - 1);
    int saved = errno;
    close(fd);
    if (n < 32) {
        fy_error("read(%s) returned %zd: %s", path, n, n < 0 ? strerror(saved) : "too short");
        return FERRY_ERR_IO;
    }
    unsigned nibbles = 0;
    memset(boot_id, 0, 16);
    for (ssize_t i = 0; i < n && nibbles < 32; i++) {
        int v = host_id_hexval(text[i]);
        if (v < 0)
            continue;
        boot_id[nibbles / 2] |= (uint8_t)(nibbles % 2 ? v : v << 4);
        nibbles++;
    }
    return FERRY_OK;
}

static ferry_status_t host_id_read_ns(const char *name, uint64_t *inode)
{
    char path[64];
    struct stat st;
    snprintf(path, sizeof(path), "/proc/self/ns/%s", name);
    if (stat(path, &st) != 0) {
        fy_error("stat(%s) failed: %s", path, strerror(errno));
        return FERRY_ERR_IO;
    }
    *inode = (uint64_t)st.st_ino;
    return FERRY_OK;
}

ferry_status_t fy_host_id_read(fy_host_id_t *host)
{
    fy_host_id_t id;
    ferry_status_t status;
    memset(&id, 0, sizeof(id));
    status = host_id_read_boot_id(id.boot_id);
    if (status == FERRY_OK)
        status = host_id_read_ns("net", &id.net_ns);
    if (status == FERRY_OK)
        status = host_id_read_ns("pid", &id.pid_ns);
    if (status == FERRY_OK)
        status = host_id_read_ns("user", &id.user_ns);
    if (status == FERRY_OK)
        *host = id;
    return status;
}

bool fy_host_id_equal(const fy_host_id_t *a, const fy_host_id_t *b)
{
    return memcmp(a->boot_id, b->boot_id, sizeof(a->boot_id)) == 0 && a->net_ns == b->net_ns &&
           a->pid_ns == b->pid_ns && a->user_ns == b->user_ns;
}

static uint64_t host_id_fnv(uint64_t hash, const uint8_t *bytes, size_t length)
{
    for (size_t i = 0; i < length; i++) {
        hash ^= bytes[i];
        hash *= 0x100000001b3ull;
    }
    return hash;
}

static uint64_t host_id_fnv_u64(uint64_t hash, uint64_t value)
{
    uint8_t le[8];
    for (unsigned i = 0; i < 8; i++)
        le[i] = (uint8_t)(value >> (8 * i));
    return host_id_fnv(hash, le, sizeof(le));
}

uint32_t fy_host_id_ns_digest(const fy_host_id_t *host)
{
    uint64_t hash = 0xcbf29ce484222325ull;
    hash = host_id_fnv_u64(hash, host->net_ns);
    hash = host_id_fnv_u64(hash, host->pid_ns);
    hash = host_id_fnv_u64(hash, host->user_ns);
    return (uint32_t)(hash ^ (hash >> 32));
}
