/* shm one-sided operations that need nothing from the target's progress:
 *  - memory from the peer's ferry_mem_alloc is mapped here (opened through /proc/<pid>/fd,
 *    checked by inode) and used with loads, stores and CPU atomics;
 *  - other memory is read and written with cross-memory attach (process_vm_readv/writev),
 *    scatter/gather on both sides, in bounded chunks, partial transfers resumed.
 * Both first check the owner's key table (mapped from the handshake): the region must still be
 * registered with the key's generation and secret (compared in constant time), and a
 * single-use region is claimed with a CAS.
 * Where cross-memory attach is denied (another uid, a non-dumpable process, seccomp, Yama), the
 * first use says so once and returns FERRY_ERR_UNSUPPORTED: the protocol layer then uses the
 * target-executed path. FERRY_SHM_CMA=off forces that. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/config.h"
#include "core/copy_bulk.h"
#include "core/log.h"
#include "mem/atomic.h"
#include "mem/memfd.h"
#include "transport/shm/shm.h"

static const fy_config_var_t shm_cma_var = {
    .name = "FERRY_SHM_CMA",
    .type = FERRY_CONFIG_BOOL,
    .default_value = "on",
    .description = "use cross-memory attach (process_vm_readv/writev) for one-sided transfers "
                   "to local peers; off: copy through shared buffers driven by the target's "
                   "progress (the fallback used where the kernel denies it)"};
static const fy_config_var_t *const shm_cma_reg
    __attribute__((used, section("ferry_config_registry"))) = &shm_cma_var;

static const fy_config_var_t shm_cma_chunk_var = {
    .name = "FERRY_SHM_CMA_CHUNK",
    .type = FERRY_CONFIG_SIZE,
    .default_value = "4M",
    .description = "largest number of bytes one process_vm_readv/writev call moves"};
static const fy_config_var_t *const shm_cma_chunk_reg
    __attribute__((used, section("ferry_config_registry"))) = &shm_cma_chunk_var;

static const fy_config_var_t shm_cma_min_var = {
    .name = "FERRY_SHM_CMA_MIN",
    .type = FERRY_CONFIG_SIZE,
    .default_value = "128",
    .description = "one-sided transfers of registered memory shorter than this go inline through "
                   "the ring and the target's progress performs them (measured here, 8 B get: "
                   "0.80 us that way, 1.69 us by process_vm_readv; at 1 KiB the system call "
                   "wins); 0: always cross-memory attach"};
static const fy_config_var_t *const shm_cma_min_reg
    __attribute__((used, section("ferry_config_registry"))) = &shm_cma_min_var;

#define SHM_CMA_IOV_MAX 1024 /* iovecs per side and call (UIO_MAXIOV) */

/* ------------------------------------------------------------------ the peer's key table */

bool shm_cma_enabled(const fy_config_set_t *config)
{
    return fy_config_bool_in(config, &shm_cma_var);
}

void shm_rma_init(fy_tl_worker_t *tlw)
{
    tlw->cma_enabled = fy_config_bool_in(tlw->local->config, &shm_cma_var);
    tlw->cma_min = fy_config_size_in(tlw->local->config, &shm_cma_min_var);
    tlw->cma_chunk = fy_config_size_in(tlw->local->config, &shm_cma_chunk_var);
    if (tlw->cma_chunk < 4096)
        tlw->cma_chunk = 4096;
}

static fy_log_limit_t shm_keytable_map_log_limit;   /* a warning a peer can trigger */
static fy_log_limit_t shm_keytable_map_log_limit_2; /* a warning a peer can trigger */

ferry_status_t shm_keytable_map(fy_tl_ep_t *tlep, int fd)
{
    struct stat st;
    int seals = fcntl(fd, F_GET_SEALS);
    void *map;

    if (seals < 0 || (seals & F_SEAL_SHRINK) == 0 || fstat(fd, &st) != 0 ||
        (size_t)st.st_size < MEM_KEYTABLE_HEADER_SIZE) {
        fy_warn_limited(&shm_keytable_map_log_limit,
                        "shm: key table from pid %u is not a sealed memfd of at least %u bytes: "
                        "refused",
                        tlep->peer_pid, MEM_KEYTABLE_HEADER_SIZE);
        return FERRY_ERR_PROTOCOL;
    }
    map = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) {
        fy_error("mmap(key table of pid %u, %lld bytes) failed: %s", tlep->peer_pid,
                 (long long)st.st_size, strerror(errno));
        return FERRY_ERR_SHMEM;
    }
    fy_map_dontfork(map, (size_t)st.st_size, "a peer's key table");
    const mem_keytable_header_t *h = map;
    uint64_t need = MEM_KEYTABLE_HEADER_SIZE + (uint64_t)h->entries * sizeof(mem_keytable_entry_t);
    if (h->magic != MEM_KEYTABLE_MAGIC || h->version != MEM_LAYOUT_VERSION ||
        need > (uint64_t)st.st_size) {
        fy_warn_limited(&shm_keytable_map_log_limit_2,
                        "shm: key table of pid %u has an unknown layout (version %u, %u entries in "
                        "%lld bytes): refused",
                        tlep->peer_pid, h->version, h->entries, (long long)st.st_size);
        munmap(map, (size_t)st.st_size);
        return FERRY_ERR_PROTOCOL;
    }
    tlep->peer_keytable = map;
    tlep->peer_keytable_size = (size_t)st.st_size;
    tlep->peer_entries = (mem_keytable_entry_t *)((char *)map + MEM_KEYTABLE_HEADER_SIZE);
    tlep->peer_entry_count = h->entries; /* read once: the peer cannot grow it under us */
    return FERRY_OK;
}

void shm_keytable_unmap(fy_tl_ep_t *tlep)
{
    if (tlep->peer_keytable == NULL)
        return;
    munmap(tlep->peer_keytable, tlep->peer_keytable_size);
    tlep->peer_keytable = NULL;
    tlep->peer_entries = NULL;
    tlep->peer_entry_count = 0;
}

/* The key's entry if the region is still registered with the key's generation and secret,
 * else NULL. */
static mem_keytable_entry_t *shm_key_entry(fy_tl_ep_t *tlep, const ferry_rkey_t *rkey)
{
    if (tlep->peer_entries == NULL || rkey->key.index >= tlep->peer_entry_count)
        return NULL;
    mem_keytable_entry_t *e = &tlep->peer_entries[rkey->key.index];
    if (!mem_entry_matches(e, rkey->key.generation, rkey->secret))
        return NULL;
    return e;
}

static ferry_status_t shm_claim_single_use(mem_keytable_entry_t *e, const ferry_rkey_t *rkey)
{
    uint64_t unused = 0;
    if (!(rkey->key.flags & FERRY_MEM_SINGLE_USE))
        return FERRY_OK;
    if (!atomic_compare_exchange_strong(&e->uses, &unused, 1)) {
        fy_debug("shm: single-use region %u of pid %u was already used", rkey->key.index,
                 rkey->key.pid);
        return FERRY_ERR_ACCESS;
    }
    return FERRY_OK;
}

/* ------------------------------------------------------------------ mapped memory */

/* Whether process pid has exited (its /proc directory is gone): a key's memory cannot be
 * opened then, and that is the peer's death, not a lack of support. */
static bool shm_peer_gone(uint32_t pid)
{
    char path[32];
    struct stat st;
    snprintf(path, sizeof(path), "/proc/%u", pid);
    return stat(path, &st) != 0 && errno == ENOENT;
}

ferry_status_t shm_rkey_map(fy_tl_ep_t *tlep, ferry_rkey_t *rkey)
{
    char path[64];
    struct stat st;
    void *map;
    int fd;

    if (!(rkey->key.flags & MEM_FLAG_ALLOC))
        return FERRY_ERR_UNSUPPORTED;
    if (tlep->state != SHM_CONN_CONNECTED)
        return FERRY_ERR_NO_RESOURCE; /* try again once connected */
    /* what the owner registered, not what the key claims, decides the mapping */
    const mem_keytable_entry_t *e = shm_key_entry(tlep, rkey);
    if (e == NULL) {
        fy_debug("shm: no mapping for region %u of pid %u: not registered with the key's "
                 "secret (deregistered, or a wrong key)",
                 rkey->key.index, tlep->peer_pid);
        return FERRY_ERR_ACCESS;
    }
    if (!(e->flags & MEM_FLAG_ALLOC))
        return FERRY_ERR_UNSUPPORTED;
    bool writable = (e->access & (FERRY_ACCESS_REMOTE_WRITE | FERRY_ACCESS_REMOTE_ATOMIC)) != 0;
    uint64_t length = e->length;
    snprintf(path, sizeof(path), "/proc/%u/fd/%u", rkey->key.pid, rkey->key.alloc_fd);
    fd = open(path, (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT && shm_peer_gone(rkey->key.pid)) {
        fy_debug("shm: cannot map region %u of pid %u: the process has exited", rkey->key.index,
                 rkey->key.pid);
        return FERRY_ERR_CONNECTION_RESET; /* its endpoint fails as soon as progress sees it */
    }
    if (fd < 0) {
        fy_info("shm: cannot map the peer's memory: open(%s) failed: %s (loads and stores "
                "through ferry_rkey_ptr are unavailable; put/get still work)",
                path, strerror(errno));
        return FERRY_ERR_UNSUPPORTED;
    }
    if (fstat(fd, &st) != 0 || (uint64_t)st.st_ino != rkey->key.alloc_inode ||
        (uint64_t)st.st_size < length) {
        fy_info("shm: %s is not the memory the key names (inode %llu, %lld bytes; the key "
                "says inode %llu, %llu bytes): was it freed?",
                path, (unsigned long long)st.st_ino, (long long)st.st_size,
                (unsigned long long)rkey->key.alloc_inode, (unsigned long long)rkey->key.length);
        close(fd);
        return FERRY_ERR_UNSUPPORTED;
    }
    map = mmap(NULL, (size_t)st.st_size, writable ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED,
               fd, 0);
    close(fd);
    if (map == MAP_FAILED) {
        fy_warn("shm: mmap(%s, %lld bytes) failed: %s", path, (long long)st.st_size,
                strerror(errno));
        return FERRY_ERR_UNSUPPORTED;
    }
    fy_map_dontfork(map, (size_t)st.st_size, path);
    rkey->mapped = map;
    rkey->mapped_size = (size_t)st.st_size;
    rkey->entry = &tlep->peer_entries[rkey->key.index]; /* for the direct path's checks */
    rkey->mapped_length = (size_t)length;
    return FERRY_OK;
}

/* Loads and stores on the mapping (the caller checked the ranges against the key); pieces are
 * copied like the direct path's operations (fy_copy_bulk). */
static void shm_rma_mapped(const ferry_rkey_t *rkey, const fy_rma_op_t *op)
{
    uint8_t *base = rkey->mapped;
    if (op->kind == FY_RMA_ATOMIC_POST || op->kind == FY_RMA_ATOMIC_FETCH) {
        uint64_t old = mem_atomic_apply(base + op->remote[0].offset, op->atomic_size, op->atomic_op,
                                        op->value, op->compare);
        if (op->result != NULL)
            *op->result = old;
        return;
    }
    size_t li = 0, loff = 0;
    for (size_t r = 0; r < op->remote_count; r++) {
        uint8_t *remote = base + op->remote[r].offset;
        size_t left = op->remote[r].length;
        while (left > 0 && li < op->local_count) {
            size_t n = op->local[li].length - loff;
            if (n > left)
                n = left;
            uint8_t *local = (uint8_t *)op->local[li].buffer + loff;
            if (op->kind == FY_RMA_PUT)
                fy_copy_bulk(remote, local, n);
            else
                fy_copy_bulk(local, remote, n);
            remote += n;
            left -= n;
            loff += n;
            if (loff == op->local[li].length) {
                li++;
                loff = 0;
            }
        }
    }
    if (op->kind == FY_RMA_PUT)
        atomic_thread_fence(memory_order_release);
}

/* ------------------------------------------------------------------ cross-memory attach */

/* A position in a list of pieces. */
typedef struct shm_cursor {
    const ferry_iov_t *pieces;
    size_t count;
    size_t index;
    size_t offset;
} shm_cursor_t;

/* Fill up to max iovecs with at most bytes from the cursor (not advancing it). */
static size_t shm_cursor_fill(const shm_cursor_t *c, struct iovec *out, size_t max, size_t bytes,
                              size_t *filled_p)
{
    size_t n = 0, filled = 0, i = c->index, off = c->offset;
    while (n < max && filled < bytes && i < c->count) {
        size_t len = c->pieces[i].length - off;
        if (len > bytes - filled)
            len = bytes - filled;
        if (len > 0) {
            out[n].iov_base = (char *)c->pieces[i].buffer + off;
            out[n].iov_len = len;
            n++;
            filled += len;
        }
        i++;
        off = 0;
    }
    *filled_p = filled;
    return n;
}

static void shm_cursor_advance(shm_cursor_t *c, size_t bytes)
{
    while (bytes > 0 && c->index < c->count) {
        size_t len = c->pieces[c->index].length - c->offset;
        if (bytes < len) {
            c->offset += bytes;
            return;
        }
        bytes -= len;
        c->index++;
        c->offset = 0;
    }
    while (c->index < c->count && c->pieces[c->index].length == 0)
        c->index++;
}

static bool shm_cma_denied_errno(int err)
{
    return err == EPERM || err == EACCES || err == ENOSYS;
}

static const char *shm_cma_reason(int err)
{
    if (err == ENOSYS)
        return "the kernel or a seccomp filter does not allow process_vm_readv/writev";
    return "ptrace access is denied (another uid, a non-dumpable process, or Yama "
           "ptrace_scope)";
}

static fy_log_limit_t shm_rkey_fetch_pieces_log_limit;   /* a warning a peer can trigger */
static fy_log_limit_t shm_rkey_fetch_pieces_log_limit_2; /* a warning a peer can trigger */
static fy_log_limit_t shm_rkey_fetch_pieces_log_limit_3; /* a warning a peer can trigger */

/* The owner's pieces of the region (fetched once per key with process_vm_readv). */
static ferry_status_t shm_rkey_fetch_pieces(fy_tl_ep_t *tlep, ferry_rkey_t *rkey,
                                            const mem_keytable_entry_t *e)
{
    uint32_t count = e->iovcnt;
    if (rkey->iov_fetched)
        return FERRY_OK;
    if (count == 0 || count > FERRY_MEM_IOV_MAX) {
        fy_warn_limited(&shm_rkey_fetch_pieces_log_limit,
                        "shm: key table entry %u of pid %u has %u pieces: refused", rkey->key.index,
                        tlep->peer_pid, count);
        return FERRY_ERR_ACCESS;
    }
    ferry_iov_t *pieces = malloc(count * sizeof(*pieces));
    uint64_t *ends = malloc(count * sizeof(*ends));
    if (pieces == NULL || ends == NULL) {
        fy_error("malloc for %u remote pieces failed", count);
        free(pieces);
        free(ends);
        return FERRY_ERR_NO_MEMORY;
    }
    if (count == 1) {
        pieces[0].buffer = (void *)(uintptr_t)e->base;
        pieces[0].length = (size_t)e->length;
    } else {
        struct iovec local = {.iov_base = pieces, .iov_len = count * sizeof(*pieces)};
        struct iovec remote = {.iov_base = (void *)(uintptr_t)e->iov_addr,
                               .iov_len = count * sizeof(*pieces)};
        ssize_t n = process_vm_readv((pid_t)tlep->peer_pid, &local, 1, &remote, 1, 0);
        if (n != (ssize_t)local.iov_len) {
            int err = errno;
            free(pieces);
            free(ends);
            if (n < 0 && shm_cma_denied_errno(err)) {
                tlep->cma_errno = err;
                return FERRY_ERR_UNSUPPORTED;
            }
            if (n < 0 && err == ESRCH)
                return FERRY_ERR_CONNECTION_RESET; /* the peer is gone */
            fy_warn_limited(
                &shm_rkey_fetch_pieces_log_limit_2,
                "shm: process_vm_readv(pid %u, the pieces of region %u) returned %zd: %s",
                tlep->peer_pid, rkey->key.index, n, strerror(err));
            return FERRY_ERR_ACCESS;
        }
    }
    uint64_t total = 0;
    for (uint32_t i = 0; i < count; i++) {
        total += pieces[i].length;
        ends[i] = total;
    }
    if (total != rkey->key.length) {
        fy_warn_limited(&shm_rkey_fetch_pieces_log_limit_3,
                        "shm: region %u of pid %u has %llu bytes in its pieces, the key says %llu",
                        rkey->key.index, tlep->peer_pid, (unsigned long long)total,
                        (unsigned long long)rkey->key.length);
        free(pieces);
        free(ends);
        return FERRY_ERR_ACCESS;
    }
    rkey->remote_iov = pieces;
    rkey->remote_ends = ends;
    rkey->remote_iovcnt = count;
    rkey->iov_fetched = 1;
    return FERRY_OK;
}

/* Translate the operation's remote ranges into the owner's addresses. */
static ferry_iov_t *shm_remote_pieces(const ferry_rkey_t *rkey, const fy_rma_op_t *op,
                                      size_t *count_p)
{
    size_t max = op->remote_count + rkey->remote_iovcnt;
    ferry_iov_t *out = malloc(max * sizeof(*out));
    size_t count = 0;
    if (out == NULL) {
        fy_error("malloc(%zu) for remote pieces failed", max * sizeof(*out));
        return NULL;
    }
    for (size_t r = 0; r < op->remote_count; r++) {
        uint64_t consumed;
        count += mem_pieces_translate(rkey->remote_iov, rkey->remote_ends, rkey->remote_iovcnt,
                                      op->remote[r].offset, op->remote[r].length, out + count,
                                      max - count, &consumed);
    }
    *count_p = count;
    return out;
}

static fy_log_limit_t shm_rma_cma_log_limit; /* a warning a peer can trigger */

/* One process_vm_writev (write) or process_vm_readv of the peer's memory. */
static inline ssize_t shm_cma_call(const fy_tl_ep_t *tlep, bool write, const struct iovec *liov,
                                   size_t ln, const struct iovec *riov, size_t rn)
{
    return write ? process_vm_writev((pid_t)tlep->peer_pid, liov, ln, riov, rn, 0)
                 : process_vm_readv((pid_t)tlep->peer_pid, liov, ln, riov, rn, 0);
}

/* Copy length bytes between the local pieces and the peer's remote pieces by cross-memory
 * attach (write: process_vm_writev, else process_vm_readv), in calls of at most
 * FERRY_SHM_CMA_CHUNK bytes; a partial transfer resumes where it stopped (one piece on each
 * side within a chunk: one call first, and after a short or failed one the loop from the
 * start). Returns FERRY_OK, FERRY_ERR_UNSUPPORTED (the kernel denied it),
 * FERRY_ERR_CONNECTION_RESET (the peer is gone), or FERRY_ERR_ACCESS; on a denial or an access
 * error, *err_p (errno; 0: no progress) and *bytes_p (the remote bytes of the failed call) for
 * the caller's decision and warning. */
static ferry_status_t shm_cma_copy(fy_tl_ep_t *tlep, bool write, const ferry_iov_t *local,
                                   size_t local_count, const ferry_iov_t *remote,
                                   size_t remote_count, uint64_t length, int *err_p,
                                   size_t *bytes_p)
{
    struct iovec liov[SHM_CMA_IOV_MAX], riov[SHM_CMA_IOV_MAX];
    shm_cursor_t lc = {.pieces = local, .count = local_count};
    shm_cursor_t rc = {.pieces = remote, .count = remote_count};
    size_t chunk = (size_t)tlep->tlw->cma_chunk;
    const char *call = write ? "process_vm_writev" : "process_vm_readv";

    if (local_count == 1 && remote_count == 1 && length <= chunk && local[0].length == length &&
        remote[0].length == length) {
        /* one piece on each side, one call (a GET by address into a contiguous receive):
         * the loop below without its cursors; after a short or failed call the loop copies
         * the same bytes again from the start, and reports what fails */
        liov[0] = (struct iovec){.iov_base = local[0].buffer, .iov_len = (size_t)length};
        riov[0] = (struct iovec){.iov_base = remote[0].buffer, .iov_len = (size_t)length};
        if (shm_cma_call(tlep, write, liov, 1, riov, 1) == (ssize_t)length)
            return FERRY_OK;
    }
    while (length > 0) {
        size_t lbytes, rbytes, want = length < chunk ? (size_t)length : chunk;
        size_t ln = shm_cursor_fill(&lc, liov, SHM_CMA_IOV_MAX, want, &lbytes);
        size_t rn = shm_cursor_fill(&rc, riov, SHM_CMA_IOV_MAX, lbytes, &rbytes);
        ssize_t n = shm_cma_call(tlep, write, liov, ln, riov, rn);
        if (n <= 0) {
            int err = errno;
            if (n < 0 && err == EINTR)
                continue;
            if (n < 0 && err == ESRCH) {
                /* the peer is gone: its endpoint fails once the socket's hang-up is seen */
                fy_debug("shm: %s(pid %u): the process is gone", call, tlep->peer_pid);
                return FERRY_ERR_CONNECTION_RESET;
            }
            *err_p = n < 0 ? err : 0;
            *bytes_p = rbytes;
            return n < 0 && shm_cma_denied_errno(err) ? FERRY_ERR_UNSUPPORTED : FERRY_ERR_ACCESS;
        }
        shm_cursor_advance(&lc, (size_t)n);
        shm_cursor_advance(&rc, (size_t)n);
        length -= (uint64_t)n;
    }
    return FERRY_OK;
}

/* Cross-memory attach to the peer does not work (tlep->cma_errno): from now on its one-sided
 * transfers and the tagged rendezvous that would read its memory go through shared buffers. */
static void shm_cma_deny(fy_tl_ep_t *tlep)
{
    tlep->cma = -1;
    fy_info("shm: cross-memory attach to pid %u is denied: %s; one-sided transfers to it "
            "go through shared buffers driven by its progress",
            tlep->peer_pid, shm_cma_reason(tlep->cma_errno));
}

static ferry_status_t shm_rma_cma(fy_tl_ep_t *tlep, const ferry_rkey_t *rkey, const fy_rma_op_t *op,
                                  const ferry_iov_t *remote_pieces, size_t remote_count)
{
    int err = 0;
    size_t rbytes = 0;
    bool write = op->kind == FY_RMA_PUT;
    ferry_status_t status = shm_cma_copy(tlep, write, op->local, op->local_count, remote_pieces,
                                         remote_count, op->length, &err, &rbytes);
    if (status == FERRY_ERR_UNSUPPORTED && tlep->cma == 0) {
        tlep->cma_errno = err; /* denied before it ever worked: the caller falls back */
        return status;
    }
    if (status == FERRY_ERR_UNSUPPORTED) /* denied after it worked: this region's error */
        status = FERRY_ERR_ACCESS;
    if (status == FERRY_ERR_ACCESS)
        fy_warn_limited(&shm_rma_cma_log_limit,
                        "shm: %s(pid %u, %zu bytes at region %u) failed: %s (was the region's "
                        "memory freed before it was deregistered?)",
                        write ? "process_vm_writev" : "process_vm_readv", tlep->peer_pid, rbytes,
                        rkey->key.index, err != 0 ? strerror(err) : "no progress");
    return status;
}

ferry_status_t shm_rma(fy_tl_ep_t *tlep, const fy_rma_op_t *op)
{
    ferry_rkey_t *rkey = op->rkey;
    mem_keytable_entry_t *e;
    ferry_status_t status;
    bool atomic = op->kind == FY_RMA_ATOMIC_POST || op->kind == FY_RMA_ATOMIC_FETCH;

    if (tlep->state != SHM_CONN_CONNECTED)
        return FERRY_ERR_UNSUPPORTED; /* the target-executed path queues until connected */
    if ((rkey->key.flags & MEM_FLAG_ALLOC) && !rkey->map_tried) {
        rkey->map_tried = 1;
        rkey->map_refused = shm_rkey_map(tlep, rkey) == FERRY_ERR_ACCESS;
    }
    if (rkey->mapped == NULL &&
        (atomic || tlep->cma < 0 || op->length < tlep->tlw->cma_min || !tlep->tlw->cma_enabled))
        return FERRY_ERR_UNSUPPORTED;
    e = shm_key_entry(tlep, rkey);
    if (e == NULL) {
        fy_debug("shm: region %u (generation %u) of pid %u is not registered with the key's "
                 "secret (deregistered, or a wrong key)",
                 rkey->key.index, rkey->key.generation, tlep->peer_pid);
        return FERRY_ERR_ACCESS;
    }
    /* The owner's entry, not the key (which a peer could have edited), grants access and
     * bounds the ranges. */
    unsigned need = atomic                   ? FERRY_ACCESS_REMOTE_ATOMIC
                    : op->kind == FY_RMA_PUT ? FERRY_ACCESS_REMOTE_WRITE
                                             : FERRY_ACCESS_REMOTE_READ;
    if ((e->access & need) != need) {
        fy_debug("shm: region %u of pid %u does not grant access 0x%x", rkey->key.index,
                 tlep->peer_pid, need);
        return FERRY_ERR_ACCESS;
    }
    for (size_t r = 0; r < op->remote_count; r++) {
        if (!mem_range_ok(e->length, op->remote[r].offset, op->remote[r].length)) {
            fy_debug("shm: range [%llu, +%zu) is outside the %llu-byte region %u of pid %u",
                     (unsigned long long)op->remote[r].offset, op->remote[r].length,
                     (unsigned long long)e->length, rkey->key.index, tlep->peer_pid);
            return FERRY_ERR_ACCESS;
        }
    }
    if (rkey->mapped != NULL) {
        status = shm_claim_single_use(e, rkey);
        if (status == FERRY_OK)
            shm_rma_mapped(rkey, op);
        return status;
    }
    status = shm_rkey_fetch_pieces(tlep, rkey, e);
    if (status == FERRY_ERR_UNSUPPORTED)
        goto denied;
    if (status != FERRY_OK)
        return status;
    size_t remote_count;
    ferry_iov_t *remote = shm_remote_pieces(rkey, op, &remote_count);
    if (remote == NULL)
        return FERRY_ERR_NO_MEMORY;
    status = shm_claim_single_use(e, rkey);
    if (status == FERRY_OK)
        status = shm_rma_cma(tlep, rkey, op, remote, remote_count);
    free(remote);
    if (status == FERRY_ERR_UNSUPPORTED) {
        if (rkey->key.flags & FERRY_MEM_SINGLE_USE)
            atomic_store(&e->uses, 0); /* not used after all: the fallback claims it */
        goto denied;
    }
    if (status == FERRY_OK)
        tlep->cma = 1;
    return status;

denied:
    shm_cma_deny(tlep);
    return FERRY_ERR_UNSUPPORTED;
}

ferry_status_t shm_ep_peer_read(fy_tl_ep_t *tlep, const ferry_iov_t *local, size_t count,
                                uint64_t remote_address, uint64_t length)
{
    if (tlep->state != SHM_CONN_CONNECTED || tlep->cma < 0 || !tlep->tlw->cma_enabled)
        return FERRY_ERR_UNSUPPORTED;
    if (remote_address > UINT64_MAX - length)
        return FERRY_ERR_ACCESS;
    int err = 0;
    size_t rbytes = 0;
    ferry_iov_t remote = {.buffer = (void *)(uintptr_t)remote_address, .length = (size_t)length};
    ferry_status_t status =
        shm_cma_copy(tlep, false, local, count, &remote, 1, length, &err, &rbytes);
    if (status == FERRY_OK)
        tlep->cma = 1;
    else if (status == FERRY_ERR_UNSUPPORTED) {
        tlep->cma_errno = err;
        shm_cma_deny(tlep);
    } else if (status == FERRY_ERR_ACCESS) /* the peer pointed at memory it does not have */
        fy_warn_limited(&shm_rma_cma_log_limit,
                        "shm: process_vm_readv(pid %u, %zu bytes at 0x%llx), an address the "
                        "peer gave, failed: %s",
                        tlep->peer_pid, rbytes, (unsigned long long)remote_address,
                        err != 0 ? strerror(err) : "no progress");
    return status;
}

/* One probe per endpoint: a one-byte process_vm_readv of the peer's address 0 fails with
 * EFAULT when the kernel allows access (it checks permission first), EPERM/EACCES/ENOSYS when
 * it does not. */
bool shm_cma_probe(uint32_t pid)
{
    uint8_t byte;
    struct iovec local = {.iov_base = &byte, .iov_len = 1};
    struct iovec remote = {.iov_base = NULL, .iov_len = 1};
    if (pid == 0)
        return false;
    ssize_t n = process_vm_readv((pid_t)pid, &local, 1, &remote, 1, 0);
    int err = errno;
    if (n >= 0 || err == EFAULT)
        return true;
    fy_info("shm: cross-memory attach to pid %u is not possible (%s): rendezvous and "
            "one-sided transfers with it copy through shared buffers",
            pid, strerror(err));
    return false;
}

/* ------------------------------------------------------------------ ferry_info */

bool shm_cma_check(const fy_config_set_t *config, char *why, size_t why_len)
{
    int pipefd[2];
    volatile uint64_t probe = 0x6665727279;
    uint64_t got = 0;
    bool ok = false;

    if (!fy_config_bool_in(config, &shm_cma_var)) {
        snprintf(why, why_len, "disabled by FERRY_SHM_CMA=off");
        return false;
    }
    if (pipe2(pipefd, O_CLOEXEC) != 0) {
        snprintf(why, why_len, "pipe2 failed: %s", strerror(errno));
        return false;
    }
    pid_t child = fork();
    if (child < 0) {
        snprintf(why, why_len, "fork failed: %s", strerror(errno));
        close(pipefd[0]);
        close(pipefd[1]);
        return false;
    }
    if (child == 0) {
        char c;
        close(pipefd[1]);
        while (read(pipefd[0], &c, 1) < 0 && errno == EINTR) {
        }
        _exit(0);
    }
    close(pipefd[0]);
    struct iovec local = {.iov_base = &got, .iov_len = sizeof(got)};
    struct iovec remote = {.iov_base = (void *)&probe, .iov_len = sizeof(probe)};
    ssize_t n = process_vm_readv(child, &local, 1, &remote, 1, 0);
    int err = errno;
    close(pipefd[1]); /* the child exits */
    waitpid(child, NULL, 0);
    if (n == (ssize_t)sizeof(got) && got == probe) {
        ok = true;
        snprintf(why, why_len, "usable between processes of this user");
    } else {
        snprintf(why, why_len, "process_vm_readv to a child failed: %s (%s)", strerror(err),
                 shm_cma_reason(err));
    }
    return ok;
}
