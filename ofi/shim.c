/*
 * libferry-fi — TEMPORARY SHIMS (see shim.h): the fixed-size name around a ferry worker
 * address (G1), the source id of a name (G2), the message header (G3, G4). All byte layouts are
 * little-endian and checked before use: a peer is not trusted.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ofi.h"
#include "shim.h"
#include "wire.h"

#define NAME_MAGIC 0x464f5946u /* "FYOF" */
#define NAME_VERSION 1u

#define HDR_MAGIC 0xfeu
#define HDR_VERSION 1u
#define HDR_KNOWN_FLAGS (FY_OFI_HDR_DATA | FY_OFI_HDR_ACK_REQ)

/* Name: u32 magic, u8 version, u8 0, u16 address length, address, zeros to FY_OFI_NAME_LEN. */

bool fy_ofi_name_wrap(const void *address, size_t length, uint8_t name[FY_OFI_NAME_LEN])
{
    if (length == 0 || length > FY_OFI_NAME_ADDRESS_MAX)
        return false;
    memset(name, 0, FY_OFI_NAME_LEN);
    fy_ofi_put_u32(name, NAME_MAGIC);
    name[4] = NAME_VERSION;
    fy_ofi_put_u16(name + 6, (uint16_t)length);
    memcpy(name + FY_OFI_NAME_HEADER, address, length);
    return true;
}

bool fy_ofi_name_unwrap(const uint8_t name[FY_OFI_NAME_LEN], const void **address_p,
                        size_t *length_p)
{
    if (fy_ofi_get_u32(name) != NAME_MAGIC || name[4] != NAME_VERSION || name[5] != 0)
        return false;
    size_t length = fy_ofi_get_u16(name + 6);
    if (length == 0 || length > FY_OFI_NAME_ADDRESS_MAX)
        return false;
    for (size_t i = FY_OFI_NAME_HEADER + length; i < FY_OFI_NAME_LEN; i++) {
        if (name[i] != 0)
            return false;
    }
    *address_p = name + FY_OFI_NAME_HEADER;
    *length_p = length;
    return true;
}

uint32_t fy_ofi_name_src_id(const uint8_t name[FY_OFI_NAME_LEN])
{
    /* FNV-1a over the whole name (the worker address inside names the worker uniquely), folded
     * to FY_OFI_TAG_SRC_BITS */
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < FY_OFI_NAME_LEN; i++) {
        h ^= name[i];
        h *= 0x100000001b3ull;
    }
    h ^= h >> 32;
    h ^= h >> FY_OFI_TAG_SRC_BITS;
    return (uint32_t)(h & ((UINT64_C(1) << FY_OFI_TAG_SRC_BITS) - 1u));
}

/* Compact name (FI_FERRY_NAME=compact): u32 magic, u8 version, 3 zero bytes, u32 uid, u32 pid,
 * u64 nonce, zeros to FY_OFI_COMPACT_LEN. The full name is in /dev/shm/ferry-ofi-<uid>-<pid>-
 * <nonce as 16 hex digits>: FY_OFI_NAME_LEN bytes, mode 0600, owned by the user. */

#define COMPACT_MAGIC 0x434f5946u /* "FYOC" */
#define COMPACT_VERSION 1u

static bool compact_names;

void fy_ofi_name_init(void)
{
    fi_param_define(&fy_ofi_prov, "name", FI_PARAM_STRING,
                    "Endpoint names: full (default: 256 bytes that carry the ferry worker address; "
                    "any host) or compact (64 bytes; the address is published in /dev/shm: one "
                    "host only; for Open MPI's MTL until ferry has compact addresses)");
    char *value = NULL;
    if (fi_param_get_str(&fy_ofi_prov, "name", &value) == FI_SUCCESS && value != NULL) {
        if (strcmp(value, "compact") == 0)
            compact_names = true;
        else if (strcmp(value, "full") != 0)
            FY_OFI_WARN(FI_LOG_CORE, "FI_FERRY_NAME=%s: expected full or compact; using full\n",
                        value);
    }
}

size_t fy_ofi_name_size(void)
{
    return compact_names ? FY_OFI_COMPACT_LEN : FY_OFI_NAME_LEN;
}

static void compact_path(uint32_t uid, uint32_t pid, uint64_t nonce, char path[64])
{
    snprintf(path, 64, "/dev/shm/ferry-ofi-%" PRIu32 "-%" PRIu32 "-%016" PRIx64, uid, pid, nonce);
}

/* Remove the name files this user's dead processes left (a process killed before fi_close). */
static void compact_sweep(uint32_t uid)
{
    DIR *dir = opendir("/dev/shm");
    if (dir == NULL)
        return;
    char prefix[32];
    int plen = snprintf(prefix, sizeof(prefix), "ferry-ofi-%" PRIu32 "-", uid);
    struct dirent *d;
    while ((d = readdir(dir)) != NULL) {
        if (strncmp(d->d_name, prefix, (size_t)plen) != 0)
            continue;
        char *end;
        unsigned long pid = strtoul(d->d_name + plen, &end, 10);
        if (end == d->d_name + plen || *end != '-' || pid == 0 || pid > INT32_MAX)
            continue;
        if (kill((pid_t)pid, 0) != 0 && errno == ESRCH)
            (void)unlinkat(dirfd(dir), d->d_name, 0);
    }
    closedir(dir);
}

int fy_ofi_name_publish(const uint8_t full[FY_OFI_NAME_LEN], uint8_t name[FY_OFI_NAME_LEN],
                        char published[64])
{
    published[0] = '\0';
    memset(name, 0, FY_OFI_NAME_LEN);
    if (!compact_names) {
        memcpy(name, full, FY_OFI_NAME_LEN);
        return 0;
    }
    uint64_t nonce;
    if (getrandom(&nonce, sizeof(nonce), 0) != sizeof(nonce)) {
        FY_OFI_WARN(FI_LOG_EP_CTRL, "getrandom failed: %s\n", strerror(errno));
        return -FI_EIO;
    }
    uint32_t uid = (uint32_t)getuid(), pid = (uint32_t)getpid();
    compact_sweep(uid);
    char path[64];
    compact_path(uid, pid, nonce, path);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        FY_OFI_WARN(FI_LOG_EP_CTRL, "open(%s) failed: %s\n", path, strerror(errno));
        return -FI_EIO;
    }
    ssize_t n = write(fd, full, FY_OFI_NAME_LEN);
    close(fd);
    if (n != (ssize_t)FY_OFI_NAME_LEN) {
        FY_OFI_WARN(FI_LOG_EP_CTRL, "write(%s, %u bytes) failed: %s\n", path, FY_OFI_NAME_LEN,
                    n < 0 ? strerror(errno) : "short write");
        unlink(path);
        return -FI_EIO;
    }
    fy_ofi_put_u32(name, COMPACT_MAGIC);
    name[4] = COMPACT_VERSION;
    fy_ofi_put_u32(name + 8, uid);
    fy_ofi_put_u32(name + 12, pid);
    fy_ofi_put_u64(name + 16, nonce);
    memcpy(published, path, 64);
    return 0;
}

void fy_ofi_name_withdraw(const char published[64])
{
    if (published[0] != '\0')
        unlink(published);
}

bool fy_ofi_name_resolve(const uint8_t *name, uint8_t full[FY_OFI_NAME_LEN])
{
    const void *address;
    size_t length;
    if (!compact_names) {
        memcpy(full, name, FY_OFI_NAME_LEN);
        return fy_ofi_name_unwrap(full, &address, &length);
    }
    if (fy_ofi_get_u32(name) != COMPACT_MAGIC || name[4] != COMPACT_VERSION || name[5] != 0 ||
        name[6] != 0 || name[7] != 0)
        return false;
    for (size_t i = 24; i < FY_OFI_COMPACT_LEN; i++) {
        if (name[i] != 0)
            return false;
    }
    char path[64];
    compact_path(fy_ofi_get_u32(name + 8), fy_ofi_get_u32(name + 12), fy_ofi_get_u64(name + 16),
                 path);
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        FY_OFI_WARN(FI_LOG_AV,
                    "open(%s) failed: %s (the peer is gone, or on another host: "
                    "compact names work on one host only)\n",
                    path, strerror(errno));
        return false;
    }
    struct stat st;
    bool ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == getuid() &&
              st.st_size == (off_t)FY_OFI_NAME_LEN &&
              read(fd, full, FY_OFI_NAME_LEN) == (ssize_t)FY_OFI_NAME_LEN;
    close(fd);
    if (!ok) {
        FY_OFI_WARN(FI_LOG_AV, "%s is not a name the ferry provider published\n", path);
        return false;
    }
    return fy_ofi_name_unwrap(full, &address, &length);
}

/* Header: u8 magic, u8 version, u8 flags, u8 0, u32 send id, u64 data. */

void fy_ofi_hdr_encode(const fy_ofi_hdr_t *hdr, uint8_t wire[FY_OFI_HDR_LEN])
{
    wire[0] = HDR_MAGIC;
    wire[1] = HDR_VERSION;
    wire[2] = (uint8_t)hdr->flags;
    wire[3] = 0;
    fy_ofi_put_u32(wire + 4, hdr->send_id);
    fy_ofi_put_u64(wire + 8, hdr->data);
}

bool fy_ofi_hdr_decode(const uint8_t wire[FY_OFI_HDR_LEN], fy_ofi_hdr_t *hdr)
{
    if (wire[0] != HDR_MAGIC || wire[1] != HDR_VERSION || wire[3] != 0 ||
        (wire[2] & ~HDR_KNOWN_FLAGS) != 0)
        return false;
    hdr->flags = wire[2];
    hdr->send_id = fy_ofi_get_u32(wire + 4);
    hdr->data = fy_ofi_get_u64(wire + 8);
    if (!(hdr->flags & FY_OFI_HDR_DATA) && hdr->data != 0)
        return false;
    return true;
}
