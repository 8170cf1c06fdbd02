/* Registered memory: registration and its cache, memfd-backed allocation, the shared key
 * table that peers on this host read before they touch a region, and the target-side checks. */
#define _GNU_SOURCE
#include "mem/mem.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/compiler.h"
#include "core/config.h"
#include "core/log.h"
#include "mem/memfd.h"
#include "wireup/context.h"

static const fy_config_var_t mem_max_regions_var = {
    .name = "FERRY_MEM_MAX_REGIONS",
    .type = FERRY_CONFIG_SIZE,
    .default_value = "16384",
    .description = "registrations a context can hold at once (the key table peers map is 64 "
                   "bytes per registration, allocated lazily by the kernel)"};
static const fy_config_var_t *const mem_max_regions_reg
    __attribute__((used, section("ferry_config_registry"))) = &mem_max_regions_var;

#define MEM_ACCESS_ALL FERRY_ACCESS_ALL
#define MEM_PUBLIC_FLAGS FERRY_MEM_SINGLE_USE

static ferry_status_t mem_memfd(const char *what, size_t size, int *fd_p, void **map_p)
{
    char name[48];
    snprintf(name, sizeof(name), "ferry-%s-%d", what, (int)getpid());
    return fy_memfd_create(name, size, fd_p, map_p);
}

ferry_status_t mem_context_init(mem_context_t *mc, const fy_config_set_t *config)
{
    uint64_t capacity = fy_config_size_in(config, &mem_max_regions_var);
    ferry_status_t status;
    void *map;

    memset(mc, 0, sizeof(*mc));
    mc->keytable_fd = -1;
    fy_list_init(&mc->cache);
    if (capacity < 16 || capacity > (1u << 24)) {
        fy_warn("FERRY_MEM_MAX_REGIONS=%llu is outside 16..16777216; using %s",
                (unsigned long long)capacity, mem_max_regions_var.default_value);
        capacity = 16384;
    }
    if (getrandom(&mc->uuid, sizeof(mc->uuid), 0) != sizeof(mc->uuid))
        mc->uuid = (uint64_t)getpid() << 32 ^ (uint64_t)(uintptr_t)mc;
    mc->capacity = (uint32_t)capacity;
    mc->keytable_size = MEM_KEYTABLE_HEADER_SIZE + (size_t)capacity * sizeof(mem_keytable_entry_t);
    status = mem_memfd("keys", mc->keytable_size, &mc->keytable_fd, &map);
    if (status != FERRY_OK)
        return status;
    mc->keytable = map;
    mc->entries = (mem_keytable_entry_t *)((char *)map + MEM_KEYTABLE_HEADER_SIZE);
    mc->keytable->magic = MEM_KEYTABLE_MAGIC;
    mc->keytable->version = MEM_LAYOUT_VERSION;
    mc->keytable->entries = mc->capacity;
    mc->pid = (uint32_t)getpid();
    mc->keytable->owner_pid = mc->pid;
    mc->keytable->context_uuid = mc->uuid;
    atomic_init(&mc->read_phase, 0);
    atomic_init(&mc->readers[0], 0);
    atomic_init(&mc->readers[1], 0);
    mc->slots = calloc(capacity, sizeof(*mc->slots));
    mc->generations = calloc(capacity, sizeof(*mc->generations));
    if (mc->slots == NULL || mc->generations == NULL) {
        fy_error("calloc for %llu registration slots failed", (unsigned long long)capacity);
        status = FERRY_ERR_NO_MEMORY;
        goto err_free;
    }
    return FERRY_OK;

err_free:
    free(mc->slots);
    free(mc->generations);
    munmap(mc->keytable, mc->keytable_size);
    close(mc->keytable_fd);
    return status;
}

static void mem_free(ferry_mem_t *mem);

void mem_context_cleanup(mem_context_t *mc)
{
    unsigned leaked = 0;
    for (uint32_t i = 0; i < mc->capacity; i++) {
        ferry_mem_t *mem = atomic_load_explicit(&mc->slots[i], memory_order_relaxed);
        if (mem != NULL) {
            leaked++;
            mem_free(mem);
        }
    }
    if (leaked > 0)
        fy_warn("ferry_context_destroy: %u registrations were not deregistered; freed now", leaked);
    free(mc->slots);
    free(mc->generations);
    munmap(mc->keytable, mc->keytable_size);
    close(mc->keytable_fd);
    fy_secret_pool_clear(&mc->secrets);
}

/* Claim a free slot and publish the registration in the key table. */
static ferry_status_t mem_publish(mem_context_t *mc, ferry_mem_t *mem)
{
    for (uint32_t n = 0; n < mc->capacity; n++) {
        uint32_t i = (mc->free_hint + n) % mc->capacity;
        if (atomic_load_explicit(&mc->slots[i], memory_order_relaxed) != NULL)
            continue;
        ferry_status_t status = fy_secret_draw(&mc->secrets, &mem->secret);
        if (status != FERRY_OK)
            return status;
        mem_keytable_entry_t *e = &mc->entries[i];
        mem->index = i;
        mem->generation = ++mc->generations[i];
        if (mem->generation == 0)
            mem->generation = ++mc->generations[i]; /* 0 never names a live region */
        e->length = mem->length;
        e->access = mem->access;
        e->flags = mem->flags;
        e->iovcnt = (uint32_t)mem->iovcnt;
        e->base = mem->iovcnt == 1 ? (uint64_t)(uintptr_t)mem->iov[0].buffer : 0;
        e->iov_addr = (uint64_t)(uintptr_t)mem->iov;
        e->secret = mem->secret;
        atomic_store_explicit(&e->uses, 0, memory_order_relaxed);
        atomic_store_explicit(&e->state, ((uint64_t)mem->generation << 1) | 1u,
                              memory_order_release);
        atomic_store_explicit(&mc->slots[i], mem, memory_order_release);
        mc->free_hint = i + 1;
        return FERRY_OK;
    }
    fy_error("ferry_mem_register: all %u registration slots are in use (raise "
             "FERRY_MEM_MAX_REGIONS, or deregister)",
             mc->capacity);
    return FERRY_ERR_LIMIT;
}

static void mem_unpublish(mem_context_t *mc, ferry_mem_t *mem)
{
    atomic_store_explicit(&mc->entries[mem->index].state, (uint64_t)mem->generation << 1,
                          memory_order_release);
    atomic_store(&mc->slots[mem->index], NULL);
}

/* After a slot was emptied: wait until no lookup that may have found its registration is
 * still using it (mem_context_t.read_phase). Lookups never wait for anything, so this ends. */
static void mem_grace_period(mem_context_t *mc)
{
    unsigned old = atomic_fetch_add(&mc->read_phase, 1) & 1u;
    while (atomic_load(&mc->readers[old]) != 0)
        sched_yield();
}

static void mem_free(ferry_mem_t *mem)
{
    mem_unpublish(&mem->context->mem, mem);
    if (atomic_load_explicit(&mem->context->multi_workers, memory_order_relaxed) > 0)
        mem_grace_period(&mem->context->mem);
    if (fy_list_is_linked(&mem->cache_link))
        fy_list_remove(&mem->cache_link);
    if (mem->alloc_fd >= 0) {
        munmap(mem->iov[0].buffer, mem->alloc_size);
        close(mem->alloc_fd);
    }
    if (mem->iov != &mem->iov_inline)
        free(mem->iov);
    if (mem->ends != &mem->end_inline)
        free(mem->ends);
    free(mem);
}

static ferry_mem_t *mem_create(ferry_context_t *context, const ferry_iov_t *iov, size_t iovcnt,
                               unsigned access, unsigned flags)
{
    ferry_mem_t *mem = calloc(1, sizeof(*mem));
    uint64_t offset = 0;

    if (mem == NULL) {
        fy_error("calloc(%zu) for a registration failed", sizeof(*mem));
        return NULL;
    }
    fy_list_init(&mem->cache_link);
    mem->context = context;
    mem->access = access;
    mem->flags = flags;
    mem->refcount = 1;
    mem->alloc_fd = -1;
    mem->iovcnt = iovcnt;
    mem->iov = &mem->iov_inline;
    mem->ends = &mem->end_inline;
    if (iovcnt > 1) {
        mem->iov = malloc(iovcnt * sizeof(*mem->iov));
        mem->ends = malloc(iovcnt * sizeof(*mem->ends));
        if (mem->iov == NULL || mem->ends == NULL) {
            fy_error("malloc for a %zu-piece registration failed", iovcnt);
            if (mem->iov != &mem->iov_inline)
                free(mem->iov);
            if (mem->ends != &mem->end_inline)
                free(mem->ends);
            free(mem);
            return NULL;
        }
    }
    for (size_t i = 0; i < iovcnt; i++) {
        mem->iov[i] = iov[i];
        offset += iov[i].length;
        mem->ends[i] = offset;
    }
    mem->length = (size_t)offset;
    return mem;
}

/* A live cached registration of exactly these pieces, access and flags, or NULL. */
static ferry_mem_t *mem_cache_find(mem_context_t *mc, const ferry_iov_t *iov, size_t iovcnt,
                                   unsigned access, unsigned flags)
{
    for (fy_list_link_t *l = fy_list_first(&mc->cache); l != fy_list_end(&mc->cache); l = l->next) {
        ferry_mem_t *mem = fy_list_entry(l, ferry_mem_t, cache_link);
        if (mem->iovcnt != iovcnt || mem->access != access || mem->flags != flags)
            continue;
        size_t i;
        for (i = 0; i < iovcnt; i++) {
            if (mem->iov[i].buffer != iov[i].buffer || mem->iov[i].length != iov[i].length)
                break;
        }
        if (i == iovcnt)
            return mem;
    }
    return NULL;
}

static inline ferry_status_t locked_mem_register(ferry_context_t *context, const ferry_iov_t *iov,
                                                 size_t iovcnt, unsigned access, unsigned flags,
                                                 ferry_mem_t **mem_p)
{
    if (context != NULL && fy_context_forked(context))
        return FERRY_ERR_FORKED;
    mem_context_t *mc;
    ferry_mem_t *mem;
    ferry_status_t status;

    if (context == NULL || iov == NULL || mem_p == NULL || iovcnt == 0 ||
        iovcnt > FERRY_MEM_IOV_MAX || (access & ~MEM_ACCESS_ALL) != 0 ||
        (flags & ~MEM_PUBLIC_FLAGS) != 0)
        return FERRY_ERR_INVALID_PARAM;
    uint64_t total = 0;
    for (size_t i = 0; i < iovcnt; i++) {
        if ((iov[i].buffer == NULL && iov[i].length > 0) || iov[i].length > UINT64_MAX - total)
            return FERRY_ERR_INVALID_PARAM;
        total += iov[i].length;
    }
    mc = &context->mem;
    /* Single-use regions are never shared: each registration is its own single use. */
    if (!(flags & FERRY_MEM_SINGLE_USE)) {
        mem = mem_cache_find(mc, iov, iovcnt, access, flags);
        if (mem != NULL) {
            mem->refcount++;
            *mem_p = mem;
            return FERRY_OK;
        }
    }
    mem = mem_create(context, iov, iovcnt, access, flags);
    if (mem == NULL)
        return FERRY_ERR_NO_MEMORY;
    status = mem_publish(mc, mem);
    if (status != FERRY_OK) {
        mem->index = 0;
        if (mem->iov != &mem->iov_inline)
            free(mem->iov);
        if (mem->ends != &mem->end_inline)
            free(mem->ends);
        free(mem);
        return status;
    }
    if (!(flags & FERRY_MEM_SINGLE_USE))
        fy_list_push_head(&mc->cache, &mem->cache_link);
    *mem_p = mem;
    return FERRY_OK;
}

FERRY_EXPORT ferry_status_t ferry_mem_register(ferry_context_t *context, const ferry_iov_t *iov,
                                               size_t iovcnt, unsigned access, unsigned flags,
                                               ferry_mem_t **mem_p)
{
    ferry_context_t *locked = fy_context_lock(context);
    ferry_status_t status_or_value =
        locked_mem_register(context, iov, iovcnt, access, flags, mem_p);
    fy_context_unlock(locked);
    return status_or_value;
}

static inline ferry_status_t locked_mem_deregister(ferry_mem_t *mem)
{
    if (mem != NULL && fy_context_forked(mem->context))
        return FERRY_ERR_FORKED;
    if (mem == NULL || mem->refcount == 0)
        return FERRY_ERR_INVALID_PARAM;
    if (--mem->refcount == 0)
        mem_free(mem);
    return FERRY_OK;
}

FERRY_EXPORT ferry_status_t ferry_mem_deregister(ferry_mem_t *mem)
{
    ferry_context_t *locked = fy_context_lock(mem != NULL ? mem->context : NULL);
    ferry_status_t status_or_value = locked_mem_deregister(mem);
    fy_context_unlock(locked);
    return status_or_value;
}

static inline ferry_status_t locked_mem_alloc(ferry_context_t *context, size_t size, unsigned flags,
                                              ferry_mem_t **mem_p, void **ptr_p)
{
    if (context != NULL && fy_context_forked(context))
        return FERRY_ERR_FORKED;
    long page = sysconf(_SC_PAGESIZE);
    size_t mapped;
    ferry_status_t status;
    struct stat st;
    ferry_mem_t *mem;
    void *map;
    int fd;

    if (context == NULL || mem_p == NULL || ptr_p == NULL || size == 0 ||
        (flags & ~(MEM_ACCESS_ALL | MEM_PUBLIC_FLAGS)) != 0 || size > SIZE_MAX - (size_t)page)
        return FERRY_ERR_INVALID_PARAM;
    mapped = (size + (size_t)page - 1) & ~((size_t)page - 1);
    status = mem_memfd("mem", mapped, &fd, &map);
    if (status != FERRY_OK)
        return status;
    if (fstat(fd, &st) != 0) {
        fy_error("fstat(memfd %d) failed: %s", fd, strerror(errno));
        status = FERRY_ERR_SHMEM;
        goto err_unmap;
    }
    ferry_iov_t iov = {.buffer = map, .length = size};
    mem = mem_create(context, &iov, 1, flags & MEM_ACCESS_ALL,
                     (flags & MEM_PUBLIC_FLAGS) | MEM_FLAG_ALLOC);
    if (mem == NULL) {
        status = FERRY_ERR_NO_MEMORY;
        goto err_unmap;
    }
    mem->alloc_fd = fd;
    mem->alloc_inode = (uint64_t)st.st_ino;
    mem->alloc_size = mapped;
    status = mem_publish(&context->mem, mem);
    if (status != FERRY_OK) {
        free(mem);
        goto err_unmap;
    }
    *mem_p = mem;
    *ptr_p = map;
    return FERRY_OK;

err_unmap:
    munmap(map, mapped);
    close(fd);
    return status;
}

FERRY_EXPORT ferry_status_t ferry_mem_alloc(ferry_context_t *context, size_t size, unsigned flags,
                                            ferry_mem_t **mem_p, void **ptr_p)
{
    ferry_context_t *locked = fy_context_lock(context);
    ferry_status_t status_or_value = locked_mem_alloc(context, size, flags, mem_p, ptr_p);
    fy_context_unlock(locked);
    return status_or_value;
}

FERRY_EXPORT size_t ferry_mem_length(const ferry_mem_t *mem)
{
    if (mem != NULL && fy_context_forked(mem->context))
        return 0;
    return mem != NULL ? mem->length : 0;
}

ferry_mem_t *mem_lookup_begin(ferry_context_t *context, uint32_t index, uint32_t generation,
                              uint64_t secret, int *reader_p)
{
    mem_context_t *mc = &context->mem;
    *reader_p = -1;
    if (atomic_load_explicit(&context->multi_workers, memory_order_relaxed) > 0) {
        *reader_p = (int)(atomic_load(&mc->read_phase) & 1u);
        atomic_fetch_add(&mc->readers[*reader_p], 1);
    }
    if (index >= mc->capacity)
        return NULL;
    ferry_mem_t *mem = atomic_load_explicit(&mc->slots[index], memory_order_acquire);
    if (mem == NULL)
        return NULL;
    if (!fy_secret_equal(((uint64_t)mem->generation ^ generation) | (mem->secret ^ secret), 0))
        return NULL;
    return mem;
}

void mem_lookup_end(ferry_context_t *context, int reader)
{
    if (reader >= 0)
        atomic_fetch_sub_explicit(&context->mem.readers[reader], 1, memory_order_release);
}

ferry_status_t mem_check_access(ferry_mem_t *mem, uint64_t offset, uint64_t length, unsigned access,
                                const void *owner, uint64_t token, bool continues)
{
    if (!mem_range_ok(mem->length, offset, length)) {
        fy_debug("remote access refused: [%llu, +%llu) is outside the %zu-byte region %u",
                 (unsigned long long)offset, (unsigned long long)length, mem->length, mem->index);
        return FERRY_ERR_ACCESS;
    }
    if ((mem->access & access) != access) {
        fy_debug("remote access refused: region %u grants access 0x%x, 0x%x asked", mem->index,
                 mem->access, access);
        return FERRY_ERR_ACCESS;
    }
    if ((mem->flags & FERRY_MEM_SINGLE_USE) && continues) {
        if (mem->use_owner == NULL || mem->use_owner != owner || mem->use_token != token) {
            fy_debug("remote access refused: a request continues an operation that did not "
                     "claim single-use region %u",
                     mem->index);
            return FERRY_ERR_ACCESS;
        }
    } else if (mem->flags & FERRY_MEM_SINGLE_USE) {
        uint64_t unused = 0;
        if (!atomic_compare_exchange_strong(&mem->context->mem.entries[mem->index].uses, &unused,
                                            1)) {
            fy_debug("remote access refused: single-use region %u was already used", mem->index);
            return FERRY_ERR_ACCESS;
        }
        mem->use_owner = owner;
        mem->use_token = token;
    }
    return FERRY_OK;
}

size_t mem_pieces_translate(const ferry_iov_t *pieces, const uint64_t *ends, size_t count,
                            uint64_t offset, uint64_t length, ferry_iov_t *out, size_t max,
                            uint64_t *consumed_p)
{
    size_t lo = 0, hi = count, used = 0;
    uint64_t done = 0;

    /* the first piece whose end is beyond offset */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ends[mid] <= offset)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = lo; i < count && done < length && used < max; i++) {
        uint64_t start = ends[i] - pieces[i].length;
        uint64_t skip = offset + done - start;
        uint64_t n = pieces[i].length - skip;
        if (n > length - done)
            n = length - done;
        if (n == 0)
            continue;
        out[used].buffer = (char *)pieces[i].buffer + skip;
        out[used].length = (size_t)n;
        used++;
        done += n;
    }
    *consumed_p = done;
    return used;
}

size_t mem_translate(const ferry_mem_t *mem, uint64_t offset, uint64_t length, ferry_iov_t *out,
                     size_t max, uint64_t *consumed_p)
{
    return mem_pieces_translate(mem->iov, mem->ends, mem->iovcnt, offset, length, out, max,
                                consumed_p);
}
