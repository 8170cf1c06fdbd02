/* Remote keys: packing (a fixed, versioned, pointer-free layout), checking and unpacking,
 * release, and direct pointers into a local peer's mapped memory. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/compiler.h"
#include "core/log.h"
#include "core/wire.h"
#include "mem/mem.h"
#include "wireup/context.h"
#include "wireup/ep.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
               "packed keys are little-endian; big-endian hosts need byte swaps here");

#define RKEY_KNOWN_FLAGS (FERRY_MEM_SINGLE_USE | MEM_FLAG_ALLOC)

void rkey_encode(const rkey_packed_t *in, void *buffer)
{
    uint8_t *p = buffer;
    memset(p, 0, RKEY_PACKED_SIZE);
    fy_le_put32(p + 0, RKEY_MAGIC);
    p[4] = RKEY_VERSION & 0xff;
    p[5] = RKEY_VERSION >> 8;
    p[6] = RKEY_PACKED_SIZE & 0xff;
    p[7] = RKEY_PACKED_SIZE >> 8;
    memcpy(p + 8, in->boot_id, sizeof(in->boot_id));
    fy_le_put64(p + 16, in->sealed_secret);
    fy_le_put32(p + 24, in->pid);
    fy_le_put32(p + 28, in->index);
    fy_le_put32(p + 32, in->generation);
    fy_le_put32(p + 36, in->access);
    fy_le_put32(p + 40, in->flags);
    fy_le_put32(p + 44, in->alloc_fd);
    fy_le_put64(p + 48, in->length);
    fy_le_put64(p + 56, in->alloc_inode);
}

/* A bijection of 64-bit values (splitmix64's finaliser after adding a constant per field). */
static uint64_t rkey_mix(uint64_t x, uint64_t field)
{
    x += 0x9e3779b97f4a7c15ull * field;
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
}

uint64_t rkey_binding(const rkey_packed_t *key)
{
    uint64_t boot;
    memcpy(&boot, key->boot_id, sizeof(boot));
    /* one bijective term per 64 bits of fields: changing any field changes exactly one term */
    return rkey_mix(boot, 1) ^ rkey_mix((uint64_t)key->pid << 32 | key->index, 2) ^
           rkey_mix((uint64_t)key->generation << 32 | key->access, 3) ^
           rkey_mix((uint64_t)key->flags << 32 | key->alloc_fd, 4) ^ rkey_mix(key->length, 5) ^
           rkey_mix(key->alloc_inode, 6);
}

static fy_log_limit_t rkey_decode_log_limit;   /* a warning a peer can trigger */
static fy_log_limit_t rkey_decode_log_limit_2; /* a warning a peer can trigger */
static fy_log_limit_t rkey_decode_log_limit_3; /* a warning a peer can trigger */
static fy_log_limit_t rkey_decode_log_limit_4; /* a warning a peer can trigger */

ferry_status_t rkey_decode(const void *buffer, size_t length, rkey_packed_t *out)
{
    const uint8_t *p = buffer;
    rkey_packed_t key;

    if (buffer == NULL || length != RKEY_PACKED_SIZE) {
        fy_warn_limited(&rkey_decode_log_limit,
                        "invalid remote key: %zu bytes, a packed key has %u (truncated?)", length,
                        RKEY_PACKED_SIZE);
        return FERRY_ERR_INVALID_ADDRESS;
    }
    if (fy_le_get32(p) != RKEY_MAGIC) {
        fy_warn_limited(&rkey_decode_log_limit_2,
                        "invalid remote key: wrong magic 0x%08x (not a ferry key)", fy_le_get32(p));
        return FERRY_ERR_INVALID_ADDRESS;
    }
    unsigned version = p[4] | (unsigned)p[5] << 8;
    unsigned size = p[6] | (unsigned)p[7] << 8;
    if (version != RKEY_VERSION || size != RKEY_PACKED_SIZE) {
        fy_warn_limited(
            &rkey_decode_log_limit_3,
            "invalid remote key: version %u size %u, this ferry reads version %u size %u", version,
            size, RKEY_VERSION, RKEY_PACKED_SIZE);
        return FERRY_ERR_INVALID_ADDRESS;
    }
    memcpy(key.boot_id, p + 8, sizeof(key.boot_id));
    key.sealed_secret = fy_le_get64(p + 16);
    key.pid = fy_le_get32(p + 24);
    key.index = fy_le_get32(p + 28);
    key.generation = fy_le_get32(p + 32);
    key.access = fy_le_get32(p + 36);
    key.flags = fy_le_get32(p + 40);
    key.alloc_fd = fy_le_get32(p + 44);
    key.length = fy_le_get64(p + 48);
    key.alloc_inode = fy_le_get64(p + 56);
    if (key.generation == 0 || (key.access & ~(unsigned)FERRY_ACCESS_ALL) != 0 ||
        (key.flags & ~(unsigned)RKEY_KNOWN_FLAGS) != 0 ||
        (!(key.flags & MEM_FLAG_ALLOC) && (key.alloc_fd != 0 || key.alloc_inode != 0))) {
        fy_warn_limited(&rkey_decode_log_limit_4,
                        "invalid remote key: corrupted fields (generation %u, access 0x%x, flags "
                        "0x%x)",
                        key.generation, key.access, key.flags);
        return FERRY_ERR_INVALID_ADDRESS;
    }
    *out = key;
    return FERRY_OK;
}

static inline ferry_status_t locked_rkey_pack(ferry_mem_t *mem, void **buffer_p, size_t *length_p)
{
    if (mem != NULL && fy_context_forked(mem->context))
        return FERRY_ERR_FORKED;
    rkey_packed_t key;
    void *buffer;

    if (mem == NULL || buffer_p == NULL || length_p == NULL || mem->refcount == 0)
        return FERRY_ERR_INVALID_PARAM;
    memcpy(key.boot_id, mem->context->host.boot_id, sizeof(key.boot_id));
    key.pid = mem->context->mem.pid;
    key.index = mem->index;
    key.generation = mem->generation;
    key.access = mem->access;
    key.flags = mem->flags;
    key.alloc_fd = mem->alloc_fd >= 0 ? (uint32_t)mem->alloc_fd : 0;
    key.length = mem->length;
    key.alloc_inode = mem->alloc_fd >= 0 ? mem->alloc_inode : 0;
    key.sealed_secret = mem->secret ^ rkey_binding(&key);
    buffer = malloc(RKEY_PACKED_SIZE);
    if (buffer == NULL) {
        fy_error("malloc(%u) for a packed key failed", RKEY_PACKED_SIZE);
        return FERRY_ERR_NO_MEMORY;
    }
    rkey_encode(&key, buffer);
    *buffer_p = buffer;
    *length_p = RKEY_PACKED_SIZE;
    return FERRY_OK;
}

FERRY_EXPORT ferry_status_t ferry_rkey_pack(ferry_mem_t *mem, void **buffer_p, size_t *length_p)
{
    ferry_context_t *locked = fy_context_lock(mem != NULL ? mem->context : NULL);
    ferry_status_t status_or_value = locked_rkey_pack(mem, buffer_p, length_p);
    fy_context_unlock(locked);
    return status_or_value;
}

FERRY_EXPORT void ferry_rkey_buffer_release(void *buffer)
{
    free(buffer);
}

static fy_log_limit_t ferry_rkey_unpack_log_limit; /* a warning a peer can trigger */

static inline ferry_status_t locked_rkey_unpack(ferry_ep_t *ep, const void *buffer, size_t length,
                                                ferry_rkey_t **rkey_p)
{
    if (ep != NULL && fy_ep_forked(ep))
        return FERRY_ERR_FORKED;
    ferry_rkey_t *rkey;
    rkey_packed_t key;
    ferry_status_t status;

    if (ep == NULL || buffer == NULL || rkey_p == NULL)
        return FERRY_ERR_INVALID_PARAM;
    if (ep->state != FY_EP_OPEN)
        return ep->error;
    status = rkey_decode(buffer, length, &key);
    if (status != FERRY_OK)
        return status;
    if (key.pid != ep->peer.pid ||
        memcmp(key.boot_id, ep->peer.host.boot_id, sizeof(key.boot_id)) != 0) {
        fy_warn_limited(
            &ferry_rkey_unpack_log_limit,
            "ferry_rkey_unpack: the key belongs to pid %u, but the endpoint leads to pid "
            "%u (unpack a key on an endpoint to the process that packed it)",
            key.pid, ep->peer.pid);
        return FERRY_ERR_ACCESS;
    }
    rkey = calloc(1, sizeof(*rkey));
    if (rkey == NULL) {
        fy_error("calloc(%zu) for a remote key failed", sizeof(*rkey));
        return FERRY_ERR_NO_MEMORY;
    }
    rkey->ep = ep;
    rkey->worker = ep->worker;
    rkey->key = key;
    rkey->secret = key.sealed_secret ^ rkey_binding(&key);
    *rkey_p = rkey;
    return FERRY_OK;
}

FERRY_EXPORT ferry_status_t ferry_rkey_unpack(ferry_ep_t *ep, const void *buffer, size_t length,
                                              ferry_rkey_t **rkey_p)
{
    ferry_worker_t *locked = fy_worker_multi(ep != NULL ? ep->worker : NULL);
    if (fy_likely(locked == NULL))
        return locked_rkey_unpack(ep, buffer, length, rkey_p);
    fy_worker_lock(locked);
    ferry_status_t status_or_value = locked_rkey_unpack(ep, buffer, length, rkey_p);
    fy_worker_unlock(locked);
    return status_or_value;
}

static inline void locked_rkey_release(ferry_rkey_t *rkey)
{
    if (rkey != NULL && fy_worker_forked(rkey->worker))
        return; /* a forked child's copy: left alone (ferry.h, "fork()") */
    if (rkey == NULL)
        return;
    if (rkey->mapped != NULL)
        munmap(rkey->mapped, rkey->mapped_size);
    free(rkey->remote_iov);
    free(rkey->remote_ends);
    free(rkey);
}

FERRY_EXPORT void ferry_rkey_release(ferry_rkey_t *rkey)
{
    ferry_worker_t *locked = fy_worker_multi(rkey != NULL ? rkey->worker : NULL);
    if (fy_likely(locked == NULL)) {
        locked_rkey_release(rkey);
        return;
    }
    fy_worker_lock(locked);
    locked_rkey_release(rkey);
    fy_worker_unlock(locked);
}

static inline ferry_status_t locked_rkey_ptr(ferry_rkey_t *rkey, uint64_t remote_offset,
                                             void **local_ptr_p)
{
    if (rkey != NULL && fy_worker_forked(rkey->worker))
        return FERRY_ERR_FORKED;
    if (rkey == NULL || local_ptr_p == NULL)
        return FERRY_ERR_INVALID_PARAM;
    if (!(rkey->key.flags & MEM_FLAG_ALLOC))
        return FERRY_ERR_UNSUPPORTED;
    if (!rkey->map_tried && !rkey->ep->connected && rkey->ep->state == FY_EP_OPEN)
        return FERRY_ERR_NOT_CONNECTED;
    if (!rkey->map_tried) {
        ferry_ep_t *ep = rkey->ep;
        if (ep->state != FY_EP_OPEN)
            return ep->error; /* closed or failed: its status, not a lack of support */
        rkey->map_tried = 1;
        ferry_status_t mapped =
            ep->tl->rkey_map != NULL ? ep->tl->rkey_map(ep->tl_ep, rkey) : FERRY_ERR_UNSUPPORTED;
        if (mapped == FERRY_ERR_NO_RESOURCE || mapped == FERRY_ERR_CONNECTION_RESET)
            rkey->map_tried = 0; /* not connected yet, or the endpoint is about to fail */
        rkey->map_refused = mapped == FERRY_ERR_ACCESS;
        if (mapped == FERRY_ERR_CONNECTION_RESET)
            return mapped; /* the owner died: not a lack of support */
    }
    if (rkey->mapped == NULL)
        return rkey->map_refused ? FERRY_ERR_ACCESS : FERRY_ERR_UNSUPPORTED;
    if (remote_offset >= rkey->mapped_length)
        return FERRY_ERR_ACCESS;
    *local_ptr_p = (char *)rkey->mapped + remote_offset;
    return FERRY_OK;
}

FERRY_EXPORT ferry_status_t ferry_rkey_ptr(ferry_rkey_t *rkey, uint64_t remote_offset,
                                           void **local_ptr_p)
{
    ferry_worker_t *locked = fy_worker_multi(rkey != NULL ? rkey->worker : NULL);
    if (fy_likely(locked == NULL))
        return locked_rkey_ptr(rkey, remote_offset, local_ptr_p);
    fy_worker_lock(locked);
    ferry_status_t status_or_value = locked_rkey_ptr(rkey, remote_offset, local_ptr_p);
    fy_worker_unlock(locked);
    return status_or_value;
}
