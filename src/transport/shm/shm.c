/* The shm transport: active messages between workers on one host through shared memory.
 * Small messages travel inline in one 64-byte cell of the receiver's ring for this sender;
 * medium ones in one 4 KiB buffer of the receiver's pool; large ones in 4 KiB fragments that
 * the receiver reassembles. A sender writes the receiver's eventfd only when the receiver
 * armed, so a busy receiver costs its senders no system call. */
#define _GNU_SOURCE
#include <errno.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "core/compiler.h"
#include "core/config.h"
#include "core/copy.h"
#include "core/log.h"
#include "transport/shm/shm.h"

static const fy_config_var_t shm_ring_cells_var = {
    .name = "FERRY_SHM_RING_CELLS",
    .type = FERRY_CONFIG_SIZE,
    .default_value = "256",
    .description = "64-byte cells in the receive ring a worker keeps for each connected peer "
                   "(a power of 2, 2..1048576)"};
static const fy_config_var_t *const shm_ring_cells_reg
    __attribute__((used, section("ferry_config_registry"))) = &shm_ring_cells_var;

static const fy_config_var_t shm_am_max_var = {
    .name = "FERRY_SHM_AM_MAX",
    .type = FERRY_CONFIG_SIZE,
    .default_value = "16G",
    .description = "largest active-message payload a worker accepts from a peer over shm"};
static const fy_config_var_t *const shm_am_max_reg
    __attribute__((used, section("ferry_config_registry"))) = &shm_am_max_var;

static bool shm_stream_min_check(const char *text, char *why, size_t why_len);
static const fy_config_var_t shm_stream_min_var = {
    .name = "FERRY_SHM_STREAM_MIN",
    .type = FERRY_CONFIG_STRING,
    .default_value = "auto",
    .description =
        "copies of at least this many bytes into the peer's bulk buffers use "
        "non-temporal stores, smaller ones (and any under 64 bytes) plain stores (16G: plain "
        "stores always); auto: each endpoint measures plain stores against non-temporal ones "
        "from 4096 bytes on its first bulk copies (about 9 MiB) and keeps the faster",
    .check = shm_stream_min_check};
static const fy_config_var_t *const shm_stream_min_reg
    __attribute__((used, section("ferry_config_registry"))) = &shm_stream_min_var;

static const fy_config_var_t shm_membarrier_var = {
    .name = "FERRY_SHM_MEMBARRIER",
    .type = FERRY_CONFIG_BOOL,
    .default_value = "on",
    .description = "where the kernel has membarrier(2): a worker going to sleep issues a "
                   "global membarrier (0.1-15 us), so that sends and receives between two such "
                   "workers need no fence (about 30 ns a message less here); off: a fence on every "
                   "send and every batch of receives"};
static const fy_config_var_t *const shm_membarrier_reg
    __attribute__((used, section("ferry_config_registry"))) = &shm_membarrier_var;

/* Cells one poll takes from one ring before it moves to the next (fairness). */
#define SHM_POLL_BUDGET 32u

static void shm_req_deferred_cb(fy_deferred_t *self);

/* ------------------------------------------------------------------ signalling */

/* Wake the peer if it sleeps (armed). Either both peers issue membarrier before they sleep
 * (shm_wake.c: the cell is published with a plain store, and the peer's barrier between its
 * store of armed and its loads of the rings orders them against ours), or cells are published
 * with a sequentially consistent exchange (shm_tx_post) and armed is read sequentially
 * consistent while the receiver stores armed and reads its rings the same way (shm_arm). Either
 * way the receiver sees our cell or we see armed set: no wake-up is lost. */
static inline void shm_signal_peer(fy_tl_ep_t *tlep)
{
    if (fy_likely(atomic_load(&tlep->peer_region->armed) == 0))
        return;
    if (atomic_exchange(&tlep->peer_region->armed, 0) != 0) {
        uint64_t one = 1;
        if (write(tlep->peer_eventfd, &one, sizeof(one)) != sizeof(one) && errno != EAGAIN)
            fy_warn("shm: write(eventfd of pid %u) failed: %s", tlep->peer_pid, strerror(errno));
    }
}

/* FERRY_SHM_STREAM_MIN: a size, or "auto" (*auto_p, the size then SHM_STREAM_MIN_AUTO). */
#define SHM_STREAM_MIN_AUTO 4096u
static bool shm_stream_min_parse(const char *text, uint64_t *value_p, bool *auto_p)
{
    *auto_p = strcasecmp(text, "auto") == 0;
    if (*auto_p) {
        *value_p = SHM_STREAM_MIN_AUTO;
        return true;
    }
    return fy_config_parse_size(text, value_p);
}

static bool shm_stream_min_check(const char *text, char *why, size_t why_len)
{
    uint64_t value;
    bool is_auto;
    if (shm_stream_min_parse(text, &value, &is_auto))
        return true;
    snprintf(why, why_len, "a size (4096, 4k, 16G) or auto");
    return false;
}

/* ------------------------------------------------------------------ sending */

/* Learn whether the cell of position last is free, when tx_free_end does not say so: by the
 * cell half a ring ahead of tx_pos first (the consumer frees in position order, so that one
 * free means every one before it is, and the next half ring of sends need not look), else by
 * last's own. */
static fy_noinline bool shm_tx_room_refresh(fy_tl_ep_t *tlep, uint64_t last)
{
    uint64_t ahead = tlep->tx_pos + (tlep->tx_mask + 1) / 2;
    if (ahead > last && atomic_load_explicit(&tlep->tx_cells[ahead & tlep->tx_mask].seq,
                                             memory_order_acquire) == ahead) {
        tlep->tx_free_end = ahead + 1;
        return true;
    }
    if (atomic_load_explicit(&tlep->tx_cells[last & tlep->tx_mask].seq, memory_order_acquire) !=
        last)
        return false; /* ring full */
    tlep->tx_free_end = last + 1;
    return true;
}

/* Whether the cells of positions tx_pos .. tx_pos + extra are free. A cell is free when its
 * seq is its position (the consumer stores position + cells when it takes one). Most sends
 * know it from an earlier look (tx_free_end) and load nothing: the cell a send writes is the
 * one the polling consumer reads, and loading it first would bring its cache line over twice
 * (for the load, then for the store) instead of once. The consumer can only make its own
 * ring lie (a seq it stores early): the messages to it are then overwritten, nothing else. */
static fy_always_inline bool shm_tx_room(fy_tl_ep_t *tlep, unsigned extra)
{
    uint64_t last = tlep->tx_pos + extra;
    if (fy_likely(last < tlep->tx_free_end))
        return true;
    return shm_tx_room_refresh(tlep, last);
}

static inline shm_cell_t *shm_tx_cell(fy_tl_ep_t *tlep)
{
    if (fy_unlikely(!shm_tx_room(tlep, 0)))
        return NULL; /* ring full */
    return &tlep->tx_cells[tlep->tx_pos & tlep->tx_mask];
}

/* A message send_short took: counted in the endpoint (the am_sent slot, transport.h). */
static inline void shm_count_sent(fy_tl_ep_t *tlep, size_t length)
{
    tlep->tx_messages++;
    tlep->tx_bytes += length;
}

static inline void shm_tx_post(fy_tl_ep_t *tlep, shm_cell_t *cell)
{
    if (fy_likely(tlep->tx_fence_free)) {
        atomic_store_explicit(&cell->seq, tlep->tx_pos + 1, memory_order_release);
        atomic_signal_fence(memory_order_seq_cst); /* then armed: see shm_signal_peer */
    } else {
        atomic_exchange(&cell->seq, tlep->tx_pos + 1); /* seq_cst: see shm_signal_peer */
    }
    tlep->tx_pos++;
}

/* Post an INLINE message of total bytes (header + payload, contiguous in bytes) in one cell
 * and up to SHM_INLINE_EXTRA_MAX continuation cells. Returns FERRY_OK, FERRY_ERR_NO_RESOURCE
 * (ring full), or FERRY_ERR_UNSUPPORTED (the ring is too small for that many cells). */
static ferry_status_t shm_post_inline(fy_tl_ep_t *tlep, uint8_t id, size_t header_length,
                                      const uint8_t *bytes, size_t total)
{
    unsigned extra =
        total <= SHM_CELL_DATA
            ? 0
            : (unsigned)((total - SHM_CELL_DATA + SHM_CELL_EXTRA_DATA - 1) / SHM_CELL_EXTRA_DATA);
    if (extra > tlep->tx_mask)
        return FERRY_ERR_UNSUPPORTED;
    /* the consumer frees cells in position order: the last one free means all are */
    if (!shm_tx_room(tlep, extra))
        return FERRY_ERR_NO_RESOURCE;
    size_t done = total < SHM_CELL_DATA ? total : SHM_CELL_DATA;
    for (unsigned j = 1; j <= extra; j++) {
        shm_cell_t *c = &tlep->tx_cells[(tlep->tx_pos + j) & tlep->tx_mask];
        size_t n = total - done < SHM_CELL_EXTRA_DATA ? total - done : SHM_CELL_EXTRA_DATA;
        memcpy((uint8_t *)c + sizeof(c->seq), bytes + done, n);
        done += n;
    }
    shm_cell_t *cell = &tlep->tx_cells[tlep->tx_pos & tlep->tx_mask];
    cell->type = SHM_CELL_INLINE;
    cell->am_id = id;
    cell->header_length = (uint16_t)header_length;
    cell->length = (uint32_t)total;
    cell->flags = (uint8_t)extra;
    memcpy(cell->data, bytes, total < SHM_CELL_DATA ? total : SHM_CELL_DATA);
    shm_tx_post(tlep, cell); /* publishes the continuation cells too */
    tlep->tx_pos += extra;
    return FERRY_OK;
}

/* The bytes a message takes in a pool buffer: its payload, and its header too unless the
 * header fits the cell (SHM_CELL_HEAD). Keeping the header out leaves the payload at the
 * buffer's first byte, cache-line aligned, and lets a 32 KiB payload (COOP's chunk) take one
 * bulk buffer instead of a buffer and 24 bytes of another. */
static inline size_t shm_buffer_bytes(size_t header_length, size_t length)
{
    return header_length <= SHM_CELL_DATA ? length : header_length + length;
}

/* The pool a message needs; more than SHM_BULK_SIZE buffer bytes: fragments in bulk buffers. */
static inline unsigned shm_pool_for(size_t header_length, size_t length)
{
    if (header_length + length <= SHM_INLINE_MAX)
        return SHM_POOL_NONE;
    return shm_buffer_bytes(header_length, length) <= SHM_BUF_SIZE ? SHM_POOL_MEDIUM
                                                                   : SHM_POOL_BULK;
}

static inline _Atomic uint64_t *shm_pool_bits(shm_region_t *region, unsigned pool)
{
    return pool == SHM_POOL_BULK ? &region->free_bulk : &region->free_bufs;
}

/* The index to take from a mask of free buffers (not 0): round-robin, the first at or after
 * next, else the lowest. */
static inline unsigned shm_buf_pick(uint64_t bits, unsigned next)
{
    uint64_t after = next < 64 ? bits & (~0ull << next) : 0;
    return (unsigned)__builtin_ctzll(after != 0 ? after : bits);
}

/* Medium buffers one bitmap read reserves at most, while at least half the pool stays free
 * after the claim (so that senders' reservations ahead never starve another sender). Every
 * claim pulls the bitmap's cache line from the receiver, which wrote it when it released a
 * buffer: a 4 KiB message paid that line transfer and the cell's on top of its 64 data lines. */
#define SHM_BUF_CLAIM 8u

/* Reserve a buffer of the peer's pool; -1 when none is free. Buffers are taken round-robin
 * from after the last one this sender took, not lowest-first: the buffer the receiver freed a
 * moment ago still sits in the receiver's cache, and writing it again at once would pull every
 * line back across the cores. Medium buffers are claimed in batches of up to SHM_BUF_CLAIM
 * (medium_ahead keeps the rest); bulk buffers (16 only) one at a time. */
static inline int shm_buf_reserve(fy_tl_ep_t *tlep, unsigned pool)
{
    shm_region_t *region = tlep->peer_region;
    unsigned next = tlep->next_buf[pool];
    if (pool == SHM_POOL_MEDIUM && tlep->medium_ahead != 0) {
        unsigned index = shm_buf_pick(tlep->medium_ahead, next);
        tlep->medium_ahead &= ~(1ull << index);
        tlep->next_buf[pool] = index + 1;
        return (int)index;
    }
    _Atomic uint64_t *bits_p = shm_pool_bits(region, pool);
    uint64_t bits = atomic_load_explicit(bits_p, memory_order_relaxed);
    while (bits != 0) {
        unsigned free_count = (unsigned)__builtin_popcountll(bits);
        unsigned want = 1;
        if (pool == SHM_POOL_MEDIUM && free_count > SHM_BUF_COUNT / 2)
            want = free_count - SHM_BUF_COUNT / 2 < SHM_BUF_CLAIM ? free_count - SHM_BUF_COUNT / 2
                                                                  : SHM_BUF_CLAIM;
        uint64_t take = 0, rest = bits;
        unsigned first = shm_buf_pick(rest, next);
        for (unsigned i = 0, at = next; i < want; i++) {
            unsigned index = shm_buf_pick(rest, at);
            take |= 1ull << index;
            rest &= ~(1ull << index);
            at = index + 1;
        }
        if (atomic_compare_exchange_weak_explicit(bits_p, &bits, bits & ~take, memory_order_acquire,
                                                  memory_order_relaxed)) {
            _Atomic uint32_t *owner =
                pool == SHM_POOL_BULK ? region->bulk_owner : region->buf_owner;
            for (uint64_t t = take; t != 0; t &= t - 1)
                atomic_store_explicit(&owner[__builtin_ctzll(t)], tlep->my_sender_id,
                                      memory_order_relaxed);
            if (pool == SHM_POOL_MEDIUM)
                tlep->medium_ahead = take & ~(1ull << first);
            tlep->next_buf[pool] = first + 1;
            return (int)first;
        }
    }
    return -1;
}

/* Give the peer back the medium buffers reserved ahead and not used (the endpoint shuts down;
 * the peer's region is still mapped). */
static void shm_buf_return_ahead(fy_tl_ep_t *tlep)
{
    if (tlep->medium_ahead == 0 || tlep->peer_region == NULL)
        return;
    atomic_fetch_or_explicit(&tlep->peer_region->free_bufs, tlep->medium_ahead,
                             memory_order_release);
    tlep->medium_ahead = 0;
}

static inline void shm_buf_release(shm_region_t *region, unsigned pool, unsigned index)
{
    atomic_fetch_or_explicit(shm_pool_bits(region, pool), 1ull << index, memory_order_release);
}

static inline uint8_t *shm_buf_data(shm_region_t *region, unsigned pool, unsigned index)
{
    if (pool == SHM_POOL_BULK)
        return (uint8_t *)region + SHM_BULK_OFFSET + (size_t)index * SHM_BULK_SIZE;
    return (uint8_t *)region + SHM_REGION_HEADER_SIZE + (size_t)index * SHM_BUF_SLOT;
}

/* Where the contents (bytes of them) of a buffer of a MEDIUM cell start: a medium buffer's are
 * shifted into its slot when large (shm_buf_shift), a bulk buffer's start it. */
static inline uint8_t *shm_buf_contents(shm_region_t *region, unsigned pool, unsigned index,
                                        size_t bytes)
{
    uint8_t *slot = shm_buf_data(region, pool, index);
    return pool == SHM_POOL_MEDIUM ? slot + shm_buf_shift(bytes) : slot;
}

/* The pool of a received MEDIUM or FRAG cell. */
static inline unsigned shm_cell_pool(const shm_cell_t *cell)
{
    return (cell->flags & SHM_CELL_BULK) ? SHM_POOL_BULK : SHM_POOL_MEDIUM;
}

/* Copy into a buffer of the peer's pool with non-temporal stores where it is worth it: the
 * lines of a pool buffer usually sit in the receiver's cache (it read them last), and ordinary
 * stores would first pull each of them back across the cores. */
static void shm_copy_to_peer(uint8_t *dst, const uint8_t *src, size_t n, uint64_t stream_min)
{
#if defined(__SSE2__)
    if (n >= stream_min && n >= 64) { /* the alignment head below is < 16 bytes */
        size_t head = (16 - ((uintptr_t)dst & 15)) & 15;
        memcpy(dst, src, head);
        dst += head;
        src += head;
        n -= head;
        size_t blocks = n / 64;
        for (size_t i = 0; i < blocks; i++) {
            __m128i a = _mm_loadu_si128((const __m128i *)(src + 0));
            __m128i b = _mm_loadu_si128((const __m128i *)(src + 16));
            __m128i c = _mm_loadu_si128((const __m128i *)(src + 32));
            __m128i d = _mm_loadu_si128((const __m128i *)(src + 48));
            _mm_stream_si128((__m128i *)(dst + 0), a);
            _mm_stream_si128((__m128i *)(dst + 16), b);
            _mm_stream_si128((__m128i *)(dst + 32), c);
            _mm_stream_si128((__m128i *)(dst + 48), d);
            src += 64;
            dst += 64;
        }
        memcpy(dst, src, n % 64);
        _mm_sfence(); /* the stores are visible before the cell that announces them */
        return;
    }
#endif
    memcpy(dst, src, n);
}

/* Copy up to length bytes from the iov position of req into dst; advances the position.
 * stream_min: copies of at least this many bytes use non-temporal stores (UINT64_MAX: never). */
static size_t shm_req_gather_to(shm_req_t *req, uint8_t *dst, size_t length, uint64_t stream_min)
{
    size_t done = 0;
    while (done < length && req->iov_index < req->iovcnt) {
        const ferry_iov_t *v = &req->iov[req->iov_index];
        size_t n = v->length - req->iov_offset;
        if (n > length - done)
            n = length - done;
        if (n > 0)
            shm_copy_to_peer(dst + done, (const uint8_t *)v->buffer + req->iov_offset, n,
                             stream_min);
        done += n;
        req->iov_offset += n;
        if (req->iov_offset == v->length) {
            req->iov_index++;
            req->iov_offset = 0;
        }
    }
    return done;
}

static size_t shm_req_gather(shm_req_t *req, uint8_t *dst, size_t length)
{
    size_t done = 0;
    while (done < length && req->iov_index < req->iovcnt) {
        const ferry_iov_t *v = &req->iov[req->iov_index];
        size_t n = v->length - req->iov_offset;
        if (n > length - done)
            n = length - done;
        if (n > 0)
            memcpy(dst + done, (const uint8_t *)v->buffer + req->iov_offset, n);
        done += n;
        req->iov_offset += n;
        if (req->iov_offset == v->length) {
            req->iov_index++;
            req->iov_offset = 0;
        }
    }
    return done;
}

/* Try to post req (any size) into the ring. Returns FERRY_OK when it is wholly posted,
 * FERRY_ERR_NO_RESOURCE when the ring or the pool is full (req remembers how far it got). */
static ferry_status_t shm_req_post(fy_tl_ep_t *tlep, shm_req_t *req)
{
    size_t total = req->header_length + req->length;

    if (!req->first_posted && total <= SHM_INLINE_MAX) {
        uint8_t bytes[SHM_INLINE_MAX];
        size_t iov_index = req->iov_index, iov_offset = req->iov_offset;
        memcpy(bytes, req->header, req->header_length);
        shm_req_gather(req, bytes + req->header_length, req->length);
        ferry_status_t status = shm_post_inline(tlep, req->id, req->header_length, bytes, total);
        if (status == FERRY_OK) {
            req->first_posted = true;
            req->sent = req->length;
            return FERRY_OK;
        }
        req->iov_index = iov_index; /* not posted: gather again next time */
        req->iov_offset = iov_offset;
        if (status == FERRY_ERR_NO_RESOURCE)
            return status;
        /* ring too small for the continuation cells: use a buffer */
    }
    size_t bytes = shm_buffer_bytes(req->header_length, req->length);
    if (!req->first_posted && bytes <= SHM_BULK_SIZE) {
        unsigned pool = bytes <= SHM_BUF_SIZE ? SHM_POOL_MEDIUM : SHM_POOL_BULK;
        bool head = bytes == req->length; /* the header travels in the cell */
        shm_cell_t *cell = shm_tx_cell(tlep);
        if (cell == NULL)
            return FERRY_ERR_NO_RESOURCE;
        int buf = shm_buf_reserve(tlep, pool);
        if (buf < 0)
            return FERRY_ERR_NO_RESOURCE;
        uint8_t *data = shm_buf_contents(tlep->peer_region, pool, (unsigned)buf, bytes);
        memcpy(head ? cell->data : data, req->header, req->header_length);
        shm_req_gather_to(req, head ? data : data + req->header_length, req->length,
                          pool == SHM_POOL_BULK ? tlep->stores.stream_min : UINT64_MAX);
        cell->type = SHM_CELL_MEDIUM;
        cell->am_id = req->id;
        cell->header_length = req->header_length;
        cell->length = (uint32_t)total;
        cell->buf = (uint8_t)buf;
        cell->flags =
            (uint8_t)((pool == SHM_POOL_BULK ? SHM_CELL_BULK : 0) | (head ? SHM_CELL_HEAD : 0));
        shm_tx_post(tlep, cell);
        req->first_posted = true;
        req->sent = req->length;
        if (fy_unlikely(tlep->stores.calibrating) && pool == SHM_POOL_BULK)
            shm_stores_count(tlep, req->length);
        return FERRY_OK;
    }
    /* fragments */
    while (!req->first_posted || req->sent < req->length) {
        shm_cell_t *cell = shm_tx_cell(tlep);
        if (cell == NULL)
            return FERRY_ERR_NO_RESOURCE;
        int buf = shm_buf_reserve(tlep, SHM_POOL_BULK);
        if (buf < 0)
            return FERRY_ERR_NO_RESOURCE;
        uint8_t *data = shm_buf_data(tlep->peer_region, SHM_POOL_BULK, (unsigned)buf);
        size_t header = req->first_posted ? 0 : req->header_length;
        /* a first fragment's header travels in the cell when it fits (SHM_CELL_HEAD) */
        bool head = header != 0 && header <= SHM_FRAG_HEAD_MAX;
        size_t in_buffer = head ? 0 : header;
        size_t room = SHM_BULK_SIZE - in_buffer;
        size_t n = req->length - req->sent < room ? req->length - req->sent : room;
        memcpy(head ? cell->data + SHM_FRAG_HEAD_AT : data, req->header, header);
        shm_req_gather_to(req, data + in_buffer, n, tlep->stores.stream_min);
        cell->type = SHM_CELL_FRAG;
        cell->am_id = req->id;
        cell->header_length = (uint16_t)header;
        cell->length = (uint32_t)(header + n);
        cell->buf = (uint8_t)buf;
        cell->flags = SHM_CELL_BULK | (head ? SHM_CELL_HEAD : 0);
        if (!req->first_posted) {
            uint64_t length = req->length;
            cell->flags |= SHM_FRAG_FIRST;
            memcpy(cell->data, &length, sizeof(length));
        }
        req->sent += n;
        req->first_posted = true;
        if (req->sent == req->length)
            cell->flags |= SHM_FRAG_LAST;
        shm_tx_post(tlep, cell);
        if (fy_unlikely(tlep->stores.calibrating))
            shm_stores_count(tlep, n);
    }
    return FERRY_OK;
}

static void shm_req_free(shm_req_t *req)
{
    if (req->iov != req->iov_inline)
        free(req->iov);
    free(req->copy);
    free(req);
}

/* Finish a queued request: its completion runs from the worker's deferred queue. */
static void shm_req_complete(fy_tl_ep_t *tlep, shm_req_t *req, ferry_status_t status)
{
    fy_list_remove(&req->link);
    req->status = status;
    if (req->comp == NULL) {
        shm_req_free(req);
        return;
    }
    fy_worker_defer(tlep->tlw->worker, &req->deferred);
}

static void shm_req_deferred_cb(fy_deferred_t *self)
{
    shm_req_t *req = fy_container_of(self, shm_req_t, deferred);
    ferry_completion_t *comp = req->comp;
    ferry_status_t status = req->status;
    shm_req_free(req);
    fy_completion_update(comp, status);
}

static shm_req_t *shm_req_create(uint8_t id, const void *header, size_t header_length,
                                 const ferry_iov_t *iov, size_t iovcnt, ferry_completion_t *comp)
{
    shm_req_t *req = calloc(1, sizeof(*req));
    if (req == NULL) {
        fy_error("calloc(%zu) for a pending shm send failed", sizeof(*req));
        return NULL;
    }
    fy_list_init(&req->link);
    fy_list_init(&req->deferred.link);
    req->deferred.cb = shm_req_deferred_cb;
    req->comp = comp;
    req->id = id;
    req->header_length = (uint16_t)header_length;
    if (header_length > 0)
        memcpy(req->header, header, header_length);
    req->iovcnt = iovcnt;
    req->iov = req->iov_inline;
    if (iovcnt > FERRY_ARRAY_SIZE(req->iov_inline)) {
        req->iov = malloc(iovcnt * sizeof(*iov));
        if (req->iov == NULL) {
            fy_error("malloc(%zu) for an iov copy failed", iovcnt * sizeof(*iov));
            free(req);
            return NULL;
        }
    }
    for (size_t i = 0; i < iovcnt; i++) {
        req->iov[i] = iov[i];
        req->length += iov[i].length;
    }
    return req;
}

/* An endpoint "waits" while it has queued sends or a CLOSE to post, or (from arm) while a
 * refused send waits for room: progress retries it, and the peer is asked (sender_waiting,
 * waiters) to signal us when it frees ring cells or buffers. Only called on a connected
 * endpoint. */
static void shm_ep_set_waiting(fy_tl_ep_t *tlep, bool waiting)
{
    if (tlep->waiting == waiting)
        return;
    tlep->waiting = waiting;
    if (waiting) {
        tlep->tlw->waiting_count++;
        atomic_store(&tlep->tx_ring->sender_waiting, 1u);
        atomic_fetch_add(&tlep->peer_region->waiters, 1);
    } else {
        tlep->tlw->waiting_count--;
        atomic_store(&tlep->tx_ring->sender_waiting, 0u);
        atomic_fetch_sub(&tlep->peer_region->waiters, 1);
    }
}

static void shm_ep_post_close(fy_tl_ep_t *tlep);

/* Is there room for what the endpoint waits to send: a ring cell, and a buffer of the pool its
 * refused send or its first queued request needs? */
static bool shm_ep_has_room(fy_tl_ep_t *tlep)
{
    unsigned pool = tlep->blocked_pool;
    if (!fy_list_is_empty(&tlep->pending)) {
        shm_req_t *req = fy_list_entry(fy_list_first(&tlep->pending), shm_req_t, link);
        pool = req->first_posted ? SHM_POOL_BULK : shm_pool_for(req->header_length, req->length);
    }
    if (shm_tx_cell(tlep) == NULL)
        return false;
    return pool == SHM_POOL_NONE || (pool == SHM_POOL_MEDIUM && tlep->medium_ahead != 0) ||
           atomic_load(shm_pool_bits(tlep->peer_region, pool)) != 0;
}

/* Post what is queued, in order. Returns the number of events: requests finished, and a refused
 * send that may now be retried (so that ferry_worker_wait returns to its caller). */
static unsigned shm_ep_progress_pending(fy_tl_ep_t *tlep)
{
    unsigned count = 0;
    bool posted = false;
    fy_list_link_t *link;

    while ((link = fy_list_first(&tlep->pending)) != fy_list_end(&tlep->pending)) {
        shm_req_t *req = fy_list_entry(link, shm_req_t, link);
        size_t before = req->sent;
        bool was_first = req->first_posted;
        ferry_status_t status = shm_req_post(tlep, req);
        posted = posted || req->sent != before || req->first_posted != was_first;
        if (status != FERRY_OK)
            break;
        shm_req_complete(tlep, req, FERRY_OK);
        count++;
    }
    if (posted)
        shm_signal_peer(tlep);
    if (fy_list_is_empty(&tlep->pending)) {
        if (tlep->closing) {
            shm_ep_post_close(tlep); /* may free tlep */
        } else if (tlep->blocked && !shm_ep_has_room(tlep)) {
            shm_ep_set_waiting(tlep, true); /* a refused send still waits for room */
        } else {
            if (tlep->blocked) {
                tlep->blocked = false;
                count++; /* an event: the refused send may be retried now */
            }
            shm_ep_set_waiting(tlep, false);
        }
    } else {
        shm_ep_set_waiting(tlep, true);
    }
    return count;
}

static ferry_status_t shm_ep_check(fy_tl_ep_t *tlep)
{
    if (tlep->state == SHM_CONN_DETACHED)
        return tlep->error != FERRY_OK ? tlep->error : FERRY_ERR_ENDPOINT_CLOSED;
    return FERRY_OK;
}

static ferry_status_t shm_sendv(fy_tl_ep_t *tlep, uint8_t id, const void *header,
                                size_t header_length, const ferry_iov_t *iov, size_t iovcnt,
                                ferry_completion_t *comp);

/* shm_send_short of what does not fit one cell (up to SHM_INLINE_MAX bytes: continuation
 * cells), or of a message that cannot go now (connecting, earlier sends queued): out of line,
 * so that the one-cell path keeps a small frame (no bounce buffer, no call). */
static fy_noinline ferry_status_t shm_send_short_other(fy_tl_ep_t *tlep, uint8_t id,
                                                       const void *header, size_t header_length,
                                                       const void *payload, size_t length)
{
    size_t total = header_length + length;

    if (fy_likely(tlep->state == SHM_CONN_CONNECTED && fy_list_is_empty(&tlep->pending) &&
                  total > SHM_CELL_DATA && total <= SHM_INLINE_MAX)) {
        uint8_t bytes[SHM_INLINE_MAX];
        if (header_length)
            memcpy(bytes, header, header_length);
        if (length)
            memcpy(bytes + header_length, payload, length);
        ferry_status_t status = shm_post_inline(tlep, id, header_length, bytes, total);
        if (status == FERRY_OK) {
            shm_count_sent(tlep, length);
            shm_signal_peer(tlep);
            return FERRY_OK;
        }
        if (status == FERRY_ERR_NO_RESOURCE) {
            tlep->blocked = true; /* a worker that waits now is woken when there is room */
            tlep->blocked_pool = SHM_POOL_NONE;
            return fy_ep_am_count_short(tlep->ep, length, FERRY_ERR_NO_RESOURCE);
        }
        /* the ring is too small for the continuation cells: sendv uses a buffer */
    }
    /* still connecting, or earlier sends queued: sendv queues a copy, in order */
    ferry_iov_t iov = {.buffer = (void *)payload, .length = length};
    return fy_ep_am_count_short(tlep->ep, length,
                                shm_sendv(tlep, id, header, header_length, &iov, 1, NULL));
}

static fy_hot ferry_status_t shm_send_short(fy_tl_ep_t *tlep, uint8_t id, const void *header,
                                            size_t header_length, const void *payload,
                                            size_t length)
{
    size_t total = header_length + length;

    if (fy_unlikely(tlep->state != SHM_CONN_CONNECTED || !fy_list_is_empty(&tlep->pending) ||
                    total > SHM_CELL_DATA))
        return shm_send_short_other(tlep, id, header, header_length, payload, length);
    shm_cell_t *cell = shm_tx_cell(tlep);
    if (fy_unlikely(cell == NULL)) {
        tlep->blocked = true; /* a worker that waits now is woken when there is room */
        tlep->blocked_pool = SHM_POOL_NONE;
        return fy_ep_am_count_short(tlep->ep, length, FERRY_ERR_NO_RESOURCE);
    }
    cell->type = SHM_CELL_INLINE;
    cell->am_id = id;
    cell->header_length = (uint16_t)header_length;
    cell->length = (uint32_t)total;
    cell->flags = 0;
    _Static_assert(SHM_CELL_DATA <= FY_COPY_SMALL_MAX, "a cell's bytes are a small copy");
    fy_copy_small(cell->data, header, header_length);
    fy_copy_small(cell->data + header_length, payload, length);
    /* counted before the post, which cannot fail now: nothing but the signal check after
     * the post's locked exchange */
    shm_count_sent(tlep, length);
    shm_tx_post(tlep, cell);
    shm_signal_peer(tlep);
    return FERRY_OK;
}

static bool shm_ep_calibrating(const fy_tl_ep_t *tlep)
{
    return tlep->stores.calibrating;
}

static uint32_t shm_ep_copy_rate(const fy_tl_ep_t *tlep)
{
    return tlep->stores.rate_mbps;
}

static void shm_am_sent(const fy_tl_ep_t *tlep, fy_tl_am_sent_t *sent_p)
{
    *sent_p = (fy_tl_am_sent_t){.messages = tlep->tx_messages, .bytes = tlep->tx_bytes};
}

static ferry_status_t shm_sendv(fy_tl_ep_t *tlep, uint8_t id, const void *header,
                                size_t header_length, const ferry_iov_t *iov, size_t iovcnt,
                                ferry_completion_t *comp)
{
    ferry_status_t status = shm_ep_check(tlep);
    size_t length = 0;
    shm_req_t *req;

    if (status != FERRY_OK)
        return status;
    if (tlep->closing)
        return FERRY_ERR_ENDPOINT_CLOSED;
    for (size_t i = 0; i < iovcnt; i++)
        length += iov[i].length;
    /* one buffer: posted whole or not */
    bool small = shm_buffer_bytes(header_length, length) <= SHM_BULK_SIZE;
    bool connected = tlep->state == SHM_CONN_CONNECTED;

    if (connected && !fy_list_is_empty(&tlep->pending) && small)
        return FERRY_ERR_NO_RESOURCE; /* keep order behind queued sends */
    if (connected && fy_list_is_empty(&tlep->pending)) {
        /* a request on the stack: one buffer is posted whole or not at all; fragments as far
         * as there is room, and only the rest is queued (no malloc when it all fits) */
        shm_req_t local;
        local.id = id;
        local.header_length = (uint16_t)header_length;
        if (header_length > 0) /* header may be NULL then */
            memcpy(local.header, header, header_length);
        local.length = length;
        local.sent = 0;
        local.first_posted = false;
        local.iov = (ferry_iov_t *)iov;
        local.iovcnt = iovcnt;
        local.iov_index = 0;
        local.iov_offset = 0;
        status = shm_req_post(tlep, &local);
        if (local.first_posted)
            shm_signal_peer(tlep);
        if (status == FERRY_OK || small) {
            if (status != FERRY_OK) {
                tlep->blocked = true; /* a worker that waits now is woken when there is room */
                tlep->blocked_pool = shm_pool_for(header_length, length);
            }
            return status;
        }
        /* the rest of the fragments waits in the queue, from where the stack request got */
        req = shm_req_create(id, header, header_length, iov, iovcnt, comp);
        if (req == NULL) {
            if (!local.first_posted)
                return FERRY_ERR_NO_MEMORY;
            /* the receiver holds a first fragment: the message cannot be taken back */
            shm_ep_shutdown(tlep, FERRY_ERR_NO_MEMORY);
            fy_ep_fail(tlep->ep, FERRY_ERR_NO_MEMORY);
            return FERRY_ERR_NO_MEMORY;
        }
        req->sent = local.sent;
        req->first_posted = local.first_posted;
        req->iov_index = local.iov_index;
        req->iov_offset = local.iov_offset;
        fy_list_push_tail(&tlep->pending, &req->link);
        shm_ep_set_waiting(tlep, true);
        return FERRY_INPROGRESS;
    }
    req = shm_req_create(id, header, header_length, iov, iovcnt, comp);
    if (req == NULL)
        return FERRY_ERR_NO_MEMORY;
    if (!connected && comp == NULL) {
        /* queued while connecting, and the caller will not learn when its buffers are free:
         * keep a private copy so that they are free now */
        req->copy = malloc(length ? length : 1);
        if (req->copy == NULL) {
            fy_error("malloc(%zu) for a queued message failed", length);
            shm_req_free(req);
            return FERRY_ERR_NO_MEMORY;
        }
        shm_req_gather(req, req->copy, length);
        req->iov[0].buffer = req->copy;
        req->iov[0].length = length;
        req->iovcnt = 1;
        req->iov_index = 0;
        req->iov_offset = 0;
    }
    fy_list_push_tail(&tlep->pending, &req->link);
    if (connected)
        shm_ep_set_waiting(tlep, true);
    return req->copy != NULL ? FERRY_OK : FERRY_INPROGRESS;
}

/* ------------------------------------------------------------------ receiving */

static fy_log_limit_t shm_ep_protocol_error_log_limit; /* a warning a peer can trigger */

static void shm_ep_protocol_error(fy_tl_ep_t *tlep, shm_cell_verdict_t verdict,
                                  const shm_cell_t *cell)
{
    fy_warn_limited(&shm_ep_protocol_error_log_limit,
                    "shm: closing the endpoint to pid %u: malformed cell from it (%s: type %u, "
                    "length %u, header %u, buffer %u)",
                    tlep->peer_pid, shm_cell_verdict_string(verdict), cell->type, cell->length,
                    cell->header_length, cell->buf);
    shm_ep_shutdown(tlep, FERRY_ERR_PROTOCOL);
    fy_ep_fail(tlep->ep, FERRY_ERR_PROTOCOL);
}

/* A FRAG cell (checked): placed or reassembled, delivered at the last fragment. Out of line, so
 * that the small messages' receive path (shm_ep_poll_rx with shm_rx_cell inline) stays small.
 * Returns false when the endpoint went away. */
static fy_noinline bool shm_rx_frag_cell(fy_tl_ep_t *tlep, const shm_cell_t *cell)
{
    fy_tl_worker_t *tlw = tlep->tlw;
    shm_region_t *region = tlw->region;
    ferry_ep_t *ep = tlep->ep;
    shm_rx_frag_t *frag = &tlep->frag;
    const uint8_t *data = shm_buf_data(region, SHM_POOL_BULK, cell->buf);
    /* where the payload starts in the buffer: after the header unless the cell holds it */
    size_t payload_at = (cell->flags & SHM_CELL_HEAD) ? 0 : cell->header_length;
    if (cell->flags & SHM_FRAG_FIRST) {
        uint64_t length;
        memcpy(&length, cell->data, sizeof(length));
        /* the header is copied out first: the placement reads our copy, never the buffer
         * the peer can still write */
        memcpy(frag->header, (cell->flags & SHM_CELL_HEAD) ? cell->data + SHM_FRAG_HEAD_AT : data,
               cell->header_length);
        frag->placed = false;
        frag->data =
            fy_am_place(tlw->worker, ep, cell->am_id, frag->header, cell->header_length, length);
        if (frag->data != NULL) {
            frag->placed = true; /* straight into the receive: one copy, no reassembly */
        } else if (frag->spare != NULL && frag->spare_length >= length) {
            frag->data = frag->spare; /* no malloc, no page faults: reused */
            frag->spare = NULL;
        } else {
            frag->data = fy_am_buffer_alloc(length ? length : 1);
        }
        if (frag->data == NULL) {
            shm_buf_release(region, SHM_POOL_BULK, cell->buf);
            shm_ep_shutdown(tlep, FERRY_ERR_NO_MEMORY);
            fy_ep_fail(ep, FERRY_ERR_NO_MEMORY);
            return false;
        }
        frag->active = true;
        frag->id = cell->am_id;
        frag->header_length = cell->header_length;
        frag->length = length;
        frag->received = 0;
    }
    size_t n = cell->length - cell->header_length;
    memcpy(frag->data + frag->received, data + payload_at, n);
    frag->received += n;
    shm_buf_release(region, SHM_POOL_BULK, cell->buf);
    if (cell->flags & SHM_FRAG_LAST) {
        uint8_t *buffer = frag->data;
        frag->active = false;
        frag->data = NULL;
        if (frag->placed) {
            frag->placed = false;
            fy_am_deliver(tlw->worker, ep, frag->id, frag->header, frag->header_length, buffer,
                          frag->length, FY_AM_RECV_PLACED);
        } else if (fy_am_deliver(tlw->worker, ep, frag->id, frag->header, frag->header_length,
                                 buffer, frag->length,
                                 FERRY_AM_RECV_KEEPABLE) != FERRY_INPROGRESS) {
            /* keep it for the next message: the handler may have closed the endpoint */
            if (tlep->state == SHM_CONN_DETACHED) {
                fy_am_buffer_free(buffer);
            } else if (frag->spare == NULL || frag->spare_length < frag->length) {
                if (frag->spare != NULL)
                    fy_am_buffer_free(frag->spare);
                frag->spare = buffer;
                frag->spare_length = frag->length;
            } else {
                fy_am_buffer_free(buffer);
            }
        }
    }
    return tlep->state != SHM_CONN_DETACHED;
}

/* Handle one cell (a private copy; inline_data: the INLINE message's bytes, gathered from its
 * continuation cells). Returns false when the endpoint went away. */
static bool shm_rx_cell(fy_tl_ep_t *tlep, const shm_cell_t *cell, const uint8_t *inline_data)
{
    fy_tl_worker_t *tlw = tlep->tlw;
    shm_region_t *region = tlw->region;
    shm_cell_verdict_t verdict =
        cell->type == SHM_CELL_INLINE
            ? shm_cell_check_inline(cell, &tlep->frag) /* the small messages' cell: no call */
            : shm_cell_check(cell,
                             atomic_load_explicit(&region->free_bufs, memory_order_relaxed) |
                                 tlw->medium_done, /* free already for this check */
                             atomic_load_explicit(&region->free_bulk, memory_order_relaxed),
                             &tlep->frag, tlw->am_max);
    ferry_ep_t *ep = tlep->ep;

    if (fy_unlikely(verdict != SHM_CELL_OK)) {
        shm_ep_protocol_error(tlep, verdict, cell);
        return false;
    }
    switch (cell->type) {
    case SHM_CELL_INLINE:
        fy_am_deliver(
            tlw->worker, ep, cell->am_id, inline_data, cell->header_length,
            cell->length > cell->header_length ? (void *)(inline_data + cell->header_length) : NULL,
            cell->length - cell->header_length, 0);
        /* the handler may have closed the endpoint (its ring is unmapped then) */
        return tlep->state != SHM_CONN_DETACHED;
    case SHM_CELL_MEDIUM: {
        bool head = (cell->flags & SHM_CELL_HEAD) != 0;
        uint8_t *data = shm_buf_contents(region, shm_cell_pool(cell), cell->buf,
                                         head ? cell->length - cell->header_length : cell->length);
        if (fy_am_deliver(tlw->worker, ep, cell->am_id, head ? cell->data : data,
                          cell->header_length, head ? data : data + cell->header_length,
                          cell->length - cell->header_length,
                          FERRY_AM_RECV_KEEPABLE) != FERRY_INPROGRESS) {
            if (shm_cell_pool(cell) == SHM_POOL_MEDIUM)
                tlw->medium_done |= 1ull << cell->buf;
            else
                shm_buf_release(region, SHM_POOL_BULK, cell->buf);
        }
        return tlep->state != SHM_CONN_DETACHED;
    }
    case SHM_CELL_FRAG:
        return shm_rx_frag_cell(tlep, cell);
    case SHM_CELL_CLOSE:
        tlep->peer_closed = true;
        shm_ep_shutdown(tlep, FERRY_ERR_ENDPOINT_CLOSED);
        fy_ep_fail(ep, FERRY_ERR_ENDPOINT_CLOSED);
        return false;
    }
    return true;
}

/* Take up to budget cells from the endpoint's ring. */
static fy_hot unsigned shm_ep_poll_rx(fy_tl_ep_t *tlep, unsigned budget)
{
    fy_tl_worker_t *tlw = tlep->tlw; /* a cell's handler may free tlep */
    unsigned count = 0;
    while (count < budget) {
        shm_cell_t *slot = &tlep->rx_cells[tlep->rx_pos & tlep->rx_mask];
        if (atomic_load_explicit(&slot->seq, memory_order_acquire) != tlep->rx_pos + 1)
            break;
        shm_cell_t cell;
        uint8_t bytes[SHM_INLINE_MAX];
        const uint8_t *inline_data = cell.data;
        memcpy(&cell, slot, sizeof(cell));
        unsigned extra = cell.type == SHM_CELL_INLINE ? cell.flags : 0;
        if (fy_unlikely(extra > 0)) {
            if (extra > SHM_INLINE_EXTRA_MAX || extra > tlep->rx_mask) {
                shm_ep_protocol_error(tlep, SHM_CELL_BAD_LENGTH, &cell);
                break;
            }
            memcpy(bytes, cell.data, SHM_CELL_DATA);
            for (unsigned j = 1; j <= extra; j++) {
                const shm_cell_t *c = &tlep->rx_cells[(tlep->rx_pos + j) & tlep->rx_mask];
                memcpy(bytes + SHM_CELL_DATA + (j - 1) * SHM_CELL_EXTRA_DATA,
                       (const uint8_t *)c + sizeof(c->seq), SHM_CELL_EXTRA_DATA);
            }
            inline_data = bytes;
        }
        /* free the message's cells in position order (the producer checks only the last) */
        for (unsigned j = 0; j <= extra; j++) {
            shm_cell_t *c = &tlep->rx_cells[(tlep->rx_pos + j) & tlep->rx_mask];
            atomic_store_explicit(&c->seq, tlep->rx_pos + j + tlep->rx_mask + 1,
                                  memory_order_release);
        }
        tlep->rx_pos += 1 + extra;
        count++;
        if (!shm_rx_cell(tlep, &cell, inline_data))
            break;
    }
    if (tlw->medium_done != 0) {
        atomic_fetch_or_explicit(&tlw->region->free_bufs, tlw->medium_done, memory_order_release);
        tlw->medium_done = 0;
    }
    return count;
}

/* After freeing ring cells or buffers: wake senders that wait for them. */
static fy_hot void shm_wake_waiters(fy_tl_worker_t *tlw)
{
    /* Our frees (cell seq stores, buffer bits) must be visible before we read waiters; the
     * blocked sender stores sender_waiting and then re-reads the ring (shm_has_work). Where
     * every peer issues membarrier before it sleeps (shm_wake.c) that barrier orders them;
     * otherwise one fence per batch of received cells. */
    if (fy_unlikely(tlw->fenced_frees))
        atomic_thread_fence(memory_order_seq_cst);
    else
        atomic_signal_fence(memory_order_seq_cst);
    if (fy_likely(atomic_load_explicit(&tlw->region->waiters, memory_order_relaxed) == 0))
        return;
    for (unsigned i = 0; i < tlw->rx_count; i++) {
        fy_tl_ep_t *tlep = tlw->rx[i];
        if (tlep->rx_ring != NULL && atomic_load(&tlep->rx_ring->sender_waiting) &&
            tlep->peer_region != NULL && atomic_exchange(&tlep->rx_ring->sender_waiting, 0))
            shm_signal_peer(tlep);
    }
}

/* Post what the orphans that wait for room still hold (they are not in rx[]); an orphan that
 * posted everything and its CLOSE frees itself. */
static unsigned shm_orphans_progress(fy_tl_worker_t *tlw)
{
    unsigned count = 0;
    fy_list_link_t *next;
    for (fy_list_link_t *l = fy_list_first(&tlw->all); l != fy_list_end(&tlw->all); l = next) {
        next = l->next;
        fy_tl_ep_t *tlep = fy_list_entry(l, fy_tl_ep_t, link);
        if (tlep->orphan && tlep->waiting)
            count += shm_ep_progress_pending(tlep); /* may free tlep */
    }
    return count;
}

/* Whether the endpoint's ring holds a cell to take: shm_ep_poll_rx's first test, inline, so that
 * an empty ring (the usual case of a worker with several peers, or a waiting one) costs a load
 * and a compare instead of that function's call and frame. */
static inline bool shm_ep_rx_ready(const fy_tl_ep_t *tlep)
{
    const shm_cell_t *slot = &tlep->rx_cells[tlep->rx_pos & tlep->rx_mask];
    return atomic_load_explicit(&slot->seq, memory_order_acquire) == tlep->rx_pos + 1;
}

static fy_hot unsigned shm_poll(fy_tl_worker_t *tlw)
{
    unsigned count = 0;
    for (unsigned i = 0; i < tlw->rx_count;) {
        fy_tl_ep_t *tlep = tlw->rx[i];
        if (!shm_ep_rx_ready(tlep)) {
            i++; /* nothing to take (and no medium buffer to free: each take frees its own) */
            continue;
        }
        count += shm_ep_poll_rx(tlep, SHM_POLL_BUDGET);
        /* the endpoint may have been detached (and removed from rx[]) by a cell */
        if (i < tlw->rx_count && tlw->rx[i] == tlep)
            i++;
    }
    if (count > 0)
        shm_wake_waiters(tlw);
    if (fy_unlikely(tlw->waiting_count > 0)) {
        for (unsigned i = 0; i < tlw->rx_count;) {
            fy_tl_ep_t *tlep = tlw->rx[i];
            if (tlep->waiting)
                count += shm_ep_progress_pending(tlep);
            if (i < tlw->rx_count && tlw->rx[i] == tlep)
                i++;
        }
        if (tlw->orphan_count > 0)
            count += shm_orphans_progress(tlw);
    }
    return count;
}

/* ------------------------------------------------------------------ sleeping */

/* Before sleeping, the stores of the two handshakes (shm_wake.c): ask the peers of endpoints
 * that wait for room (and of a send that was refused) to wake us when they free some. */
static void shm_ask_wakeups(fy_tl_worker_t *tlw)
{
    for (unsigned i = 0; i < tlw->rx_count; i++) {
        fy_tl_ep_t *tlep = tlw->rx[i];
        if (tlep->blocked && !tlep->waiting)
            shm_ep_set_waiting(tlep, true); /* a refused send: progress looks for room */
        if (tlep->waiting)
            atomic_store(&tlep->tx_ring->sender_waiting, 1u); /* again: the peer clears it */
    }
    for (fy_list_link_t *l = fy_list_first(&tlw->all);
         tlw->orphan_count > 0 && l != fy_list_end(&tlw->all); l = l->next) {
        fy_tl_ep_t *tlep = fy_list_entry(l, fy_tl_ep_t, link);
        if (tlep->orphan && tlep->waiting)
            atomic_store(&tlep->tx_ring->sender_waiting, 1u);
    }
}

/* Before sleeping, the loads: a cell in a ring, or room for what an endpoint waits to send. */
static bool shm_has_work(fy_tl_worker_t *tlw)
{
    for (unsigned i = 0; i < tlw->rx_count; i++) {
        fy_tl_ep_t *tlep = tlw->rx[i];
        shm_cell_t *slot = &tlep->rx_cells[tlep->rx_pos & tlep->rx_mask];
        if (atomic_load(&slot->seq) == tlep->rx_pos + 1)
            return true;
        if (tlep->waiting && shm_ep_has_room(tlep))
            return true;
    }
    for (fy_list_link_t *l = fy_list_first(&tlw->all);
         tlw->orphan_count > 0 && l != fy_list_end(&tlw->all); l = l->next) {
        fy_tl_ep_t *tlep = fy_list_entry(l, fy_tl_ep_t, link);
        if (tlep->orphan && tlep->waiting && shm_ep_has_room(tlep))
            return true;
    }
    return false;
}

/* armed and sender_waiting are stored, then the rings and rooms loaded: with membarrier in
 * between (shm_wake.c), or sequentially consistent each (the peers fence their side). */
static ferry_status_t shm_arm(fy_tl_worker_t *tlw)
{
    atomic_store(&tlw->region->armed, 1);
    shm_ask_wakeups(tlw);
    if ((tlw->membarrier && !shm_wake_barrier()) || shm_has_work(tlw)) {
        atomic_store(&tlw->region->armed, 0);
        return FERRY_ERR_BUSY;
    }
    return FERRY_OK;
}

static void shm_disarm(fy_tl_worker_t *tlw)
{
    if (atomic_load_explicit(&tlw->region->armed, memory_order_relaxed))
        atomic_store_explicit(&tlw->region->armed, 0, memory_order_relaxed);
}

/* ------------------------------------------------------------------ endpoints */

fy_tl_ep_t *shm_ep_alloc(fy_tl_worker_t *tlw, ferry_ep_t *ep)
{
    fy_tl_ep_t *tlep = calloc(1, sizeof(*tlep));
    if (tlep == NULL) {
        fy_error("calloc(%zu) for an shm endpoint failed", sizeof(*tlep));
        return NULL;
    }
    tlep->tlw = tlw;
    tlep->ep = ep;
    tlep->sock.fd = -1;
    tlep->peer_eventfd = -1;
    tlep->rx_index = -1;
    shm_stores_init(tlep);
    fy_list_init(&tlep->pending);
    fy_list_push_tail(&tlw->all, &tlep->link);
    return tlep;
}

static void shm_rx_remove(fy_tl_ep_t *tlep)
{
    fy_tl_worker_t *tlw = tlep->tlw;
    if (tlep->rx_index < 0)
        return;
    unsigned i = (unsigned)tlep->rx_index;
    tlw->rx[i] = tlw->rx[--tlw->rx_count];
    tlw->rx[i]->rx_index = (int)i;
    tlep->rx_index = -1;
}

/* Reclaim buffers of my pool that a peer reserved and never posted (it died mid-send). */
static void shm_reclaim_buffers(fy_tl_ep_t *tlep)
{
    shm_region_t *region = tlep->tlw->region;
    uint64_t used = ~atomic_load(&region->free_bufs);
    for (unsigned i = 0; i < SHM_BUF_COUNT; i++) {
        if ((used & (1ull << i)) && atomic_load(&region->buf_owner[i]) == tlep->peer_sender_id) {
            atomic_store(&region->buf_owner[i], 0);
            shm_buf_release(region, SHM_POOL_MEDIUM, i);
        }
    }
    used = ~atomic_load(&region->free_bulk);
    for (unsigned i = 0; i < SHM_BULK_COUNT; i++) {
        if ((used & (1ull << i)) && atomic_load(&region->bulk_owner[i]) == tlep->peer_sender_id) {
            atomic_store(&region->bulk_owner[i], 0);
            shm_buf_release(region, SHM_POOL_BULK, i);
        }
    }
}

/* Stop everything: no more polling, queued sends complete with status, memory unmapped,
 * socket closed. The endpoint's struct stays until shm_ep_free. */
void shm_ep_shutdown(fy_tl_ep_t *tlep, ferry_status_t status)
{
    fy_list_link_t *link;
    if (tlep->error == FERRY_OK)
        tlep->error = status;
    shm_rx_remove(tlep);
    if (tlep->waiting && tlep->peer_region != NULL)
        shm_ep_set_waiting(tlep, false);
    tlep->closing = false;
    while ((link = fy_list_first(&tlep->pending)) != fy_list_end(&tlep->pending))
        shm_req_complete(tlep, fy_list_entry(link, shm_req_t, link), status);
    shm_buf_return_ahead(tlep);
    shm_conn_detach(tlep);
}

void shm_ep_free(fy_tl_ep_t *tlep)
{
    shm_ep_shutdown(tlep, FERRY_ERR_CANCELED);
    if (tlep->orphan)
        tlep->tlw->orphan_count--;
    fy_list_remove(&tlep->link);
    free(tlep);
}

void shm_ep_orphan_failed(fy_tl_ep_t *tlep)
{
    static fy_log_limit_t orphan_log_limit; /* a warning a peer can trigger */
    fy_warn_limited(&orphan_log_limit,
                    "shm: the connection to pid %u failed before the messages sent on a "
                    "force-closed endpoint reached it: they are lost with the peer",
                    tlep->peer_pid);
    shm_ep_free(tlep);
}

/* The handshake finished: start polling, create the accepted endpoint, post queued sends. */
ferry_status_t shm_ep_attach(fy_tl_ep_t *tlep)
{
    fy_tl_worker_t *tlw = tlep->tlw;
    if (tlep->orphan) {
        /* force-closed while connecting: post what completed already, then CLOSE (frees it) */
        tlep->state = SHM_CONN_CONNECTED;
        shm_ep_progress_pending(tlep);
        return FERRY_OK;
    }
    if (tlw->rx_count == tlw->rx_capacity) {
        unsigned capacity = tlw->rx_capacity ? tlw->rx_capacity * 2 : 16;
        fy_tl_ep_t **rx = realloc(tlw->rx, capacity * sizeof(*rx));
        if (rx == NULL) {
            fy_error("realloc(%zu) for the shm poll list failed", capacity * sizeof(*rx));
            return FERRY_ERR_NO_MEMORY;
        }
        tlw->rx = rx;
        tlw->rx_capacity = capacity;
    }
    if (tlep->ep == NULL) {
        fy_tl_peer_t peer = {
            .worker_uuid = tlep->peer_uuid, .host = tlw->local->host, .pid = tlep->peer_pid};
        fy_tl_caps_t caps = tlw->local->caps;
        if (shm_cma_probe(tlep->peer_pid))
            caps.flags |= FY_TL_CAP_CMA;
        ferry_status_t status =
            fy_ep_create_accepted(tlw->worker, &fy_tl_shm_ops, tlep, &peer, &caps, &tlep->ep);
        if (status != FERRY_OK)
            return status;
    }
    tlep->rx_index = (int)tlw->rx_count;
    tlw->rx[tlw->rx_count++] = tlep;
    tlep->state = SHM_CONN_CONNECTED;
    fy_ep_connected(tlep->ep);
    fy_debug("shm: connected to pid %u (my sender id %u, its %u)", tlep->peer_pid,
             tlep->my_sender_id, tlep->peer_sender_id);
    if (!fy_list_is_empty(&tlep->pending) || tlep->closing)
        shm_ep_progress_pending(tlep);
    return FERRY_OK;
}

static fy_log_limit_t shm_ep_hangup_log_limit; /* a warning a peer can trigger */

/* The socket hung up: deliver what the peer sent before, then fail the endpoint. */
void shm_ep_hangup(fy_tl_ep_t *tlep)
{
    ferry_ep_t *ep = tlep->ep;
    if (tlep->orphan) {
        shm_ep_orphan_failed(tlep);
        return;
    }
    if (tlep->state == SHM_CONN_CONNECTED) {
        while (tlep->state == SHM_CONN_CONNECTED && shm_ep_poll_rx(tlep, UINT32_MAX) > 0) {
        }
    }
    if (tlep->state == SHM_CONN_DETACHED)
        return; /* a CLOSE cell or a malformed one already dealt with it */
    shm_reclaim_buffers(tlep);
    shm_ep_shutdown(tlep, FERRY_ERR_CONNECTION_RESET);
    fy_warn_limited(&shm_ep_hangup_log_limit,
                    "shm: connection to pid %u lost (the process died or closed its worker without "
                    "closing the endpoint)",
                    tlep->peer_pid);
    fy_ep_fail(ep, FERRY_ERR_CONNECTION_RESET);
}

static bool shm_ep_try_post_close(fy_tl_ep_t *tlep);

static void shm_ep_post_close(fy_tl_ep_t *tlep)
{
    if (!shm_ep_try_post_close(tlep)) {
        /* retried by progress: closing stays set and waiting is armed (an orphan's here: it
         * has no shm_ep_terminate that armed it) */
        if (tlep->orphan && tlep->state == SHM_CONN_CONNECTED)
            shm_ep_set_waiting(tlep, true);
        return;
    }
    if (tlep->orphan) {
        shm_ep_free(tlep); /* its sends and the CLOSE are in the ring: done */
        return;
    }
    shm_ep_shutdown(tlep, FERRY_ERR_ENDPOINT_CLOSED);
    fy_ep_terminated(tlep->ep); /* may free tlep (accepted endpoints) */
}

static ferry_status_t shm_ep_terminate(fy_tl_ep_t *tlep)
{
    if (tlep->state == SHM_CONN_DETACHED)
        return FERRY_OK;
    tlep->closing = true;
    if (fy_list_is_empty(&tlep->pending) && shm_ep_try_post_close(tlep)) {
        shm_ep_shutdown(tlep, FERRY_ERR_ENDPOINT_CLOSED);
        return FERRY_OK;
    }
    if (tlep->state == SHM_CONN_CONNECTED)
        shm_ep_set_waiting(tlep, true);
    return FERRY_INPROGRESS;
}

/* Post a CLOSE cell if the ring has room, so that the peer sees a close, not a crash. */
static bool shm_ep_try_post_close(fy_tl_ep_t *tlep)
{
    shm_cell_t *cell;
    if (tlep->state != SHM_CONN_CONNECTED)
        return false;
    cell = shm_tx_cell(tlep);
    if (cell == NULL)
        return false;
    cell->type = SHM_CELL_CLOSE;
    cell->am_id = 0;
    cell->header_length = 0;
    cell->length = 0;
    shm_tx_post(tlep, cell);
    shm_signal_peer(tlep);
    return true;
}

/* Whether req is a send that completed already: queued from a private copy with no completion
 * (shm_sendv returned FERRY_OK while connecting). Its sender was told it is sent. */
static bool shm_req_sent_already(const shm_req_t *req)
{
    return req->comp == NULL && req->copy != NULL;
}

/* A request whose first cells are in the ring but not the rest, and which the forced close
 * cancels: its remaining payload is copied into a request of its own, so that the message ends
 * whole for the peer (as tcp finishes a frame partly on the wire) and sends behind it can
 * follow. Returns the copy or NULL (out of memory). */
static shm_req_t *shm_req_copy_rest(shm_req_t *req)
{
    size_t rest = req->length - req->sent;
    shm_req_t *copy = shm_req_create(req->id, NULL, 0, NULL, 0, NULL);
    if (copy == NULL)
        return NULL;
    copy->copy = malloc(rest ? rest : 1);
    if (copy->copy == NULL) {
        fy_error("malloc(%zu) for the rest of a message being sent failed", rest);
        shm_req_free(copy);
        return NULL;
    }
    shm_req_gather(req, copy->copy, rest);
    copy->iov[0].buffer = copy->copy;
    copy->iov[0].length = rest;
    copy->iovcnt = 1;
    copy->length = req->length;
    copy->sent = req->sent;
    copy->first_posted = true;
    return copy;
}

/* Forced close: sends that completed already must still reach the peer (issue 13: they were
 * lost when the close came before the peer answered the handshake). When some are queued and
 * the connection is being set up or up, the endpoint becomes an orphan: the other queued
 * sends complete with FERRY_ERR_CANCELED now, it lets go of the ferry endpoint, and it posts
 * the rest and CLOSE once it can (then frees itself); it goes with the worker at the latest.
 * Returns whether it did. */
static bool shm_ep_orphan_keep_sent(fy_tl_ep_t *tlep)
{
    fy_list_link_t *l, *next;
    bool keep = false;
    if (tlep->state != SHM_CONN_CONNECTING && tlep->state != SHM_CONN_CONNECTED)
        return false;
    for (l = fy_list_first(&tlep->pending); l != fy_list_end(&tlep->pending); l = l->next)
        keep = keep || shm_req_sent_already(fy_list_entry(l, shm_req_t, link));
    if (!keep)
        return false;
    l = fy_list_first(&tlep->pending);
    shm_req_t *head = fy_list_entry(l, shm_req_t, link);
    if (head->first_posted && !shm_req_sent_already(head)) {
        shm_req_t *rest = shm_req_copy_rest(head);
        if (rest == NULL)
            return false;
        fy_list_insert_between(&rest->link, l, l->next);
    }
    for (l = fy_list_first(&tlep->pending); l != fy_list_end(&tlep->pending); l = next) {
        next = l->next;
        shm_req_t *req = fy_list_entry(l, shm_req_t, link);
        if (!shm_req_sent_already(req))
            shm_req_complete(tlep, req, FERRY_ERR_CANCELED);
    }
    shm_rx_remove(tlep); /* what the peer sends from now on is not read */
    tlep->ep = NULL;
    tlep->orphan = true;
    tlep->closing = true;
    tlep->blocked = false;
    tlep->blocked_pool = SHM_POOL_NONE;
    tlep->tlw->orphan_count++;
    if (tlep->state == SHM_CONN_CONNECTED)
        shm_ep_progress_pending(tlep); /* may free tlep */
    return true;
}

static void shm_ep_destroy(fy_tl_ep_t *tlep)
{
    if (shm_ep_orphan_keep_sent(tlep))
        return;
    /* forced: queued sends are dropped, but the peer is still told (when there is room) */
    shm_ep_try_post_close(tlep);
    shm_ep_free(tlep);
}

static ferry_status_t shm_ep_init(fy_tl_worker_t *tlw, ferry_ep_t *ep, const fy_tl_peer_t *peer,
                                  const void *record, size_t record_length, fy_tl_caps_t *caps_p,
                                  fy_tl_ep_t **tlep_p)
{
    shm_record_t rec;
    ferry_status_t status;
    fy_tl_ep_t *tlep;

    if (record_length != sizeof(rec))
        return FERRY_ERR_INVALID_ADDRESS;
    memcpy(&rec, record, sizeof(rec));
    rec.name[SHM_SOCKET_NAME_MAX - 1] = '\0';
    tlep = shm_ep_alloc(tlw, ep);
    if (tlep == NULL)
        return FERRY_ERR_NO_MEMORY;
    status = shm_conn_connect(tlw, tlep, &rec, peer->pid);
    if (status != FERRY_OK) {
        fy_list_remove(&tlep->link); /* shm_ep_alloc put it in tlw->all */
        free(tlep);
        return status;
    }
    if (shm_cma_probe(peer->pid))
        caps_p->flags |= FY_TL_CAP_CMA;
    *tlep_p = tlep;
    return FERRY_OK;
}

/* ------------------------------------------------------------------ worker */

static ferry_status_t shm_query(const fy_config_set_t *config, fy_tl_caps_t *caps, char *why,
                                size_t why_len)
{
    (void)why;
    (void)why_len;
    memset(caps, 0, sizeof(*caps));
    /* RMA: mapped memory and cross-memory attach need no target progress; not RMA_ORDERED:
     * atomics on unmapped memory go through the target and a later put may overtake them
     * (ferry_ep_fence orders them) */
    caps->flags = FY_TL_CAP_AM | FY_TL_CAP_AM_ORDERED | FY_TL_CAP_SAME_HOST;
    if (shm_cma_enabled(config)) /* registered memory moves without the target only by CMA */
        caps->flags |= FY_TL_CAP_RMA;
    caps->max_short = SHM_INLINE_MAX;
    caps->max_bcopy = SHM_BULK_SIZE;
    caps->header_apart = SHM_CELL_DATA;
    caps->max_iov = SIZE_MAX;
    caps->max_placed = SIZE_MAX; /* fragments: copied out straight into a placement */
    caps->latency_ns = 100;
    caps->bandwidth_Bps = 5e9;
    return FERRY_OK;
}

static ferry_status_t shm_init(ferry_worker_t *worker, const fy_tl_local_t *local,
                               fy_tl_worker_t **tlw_p)
{
    fy_tl_worker_t *tlw = calloc(1, sizeof(*tlw));
    ferry_status_t status;
    uint64_t cells = fy_config_size_in(local->config, &shm_ring_cells_var);

    if (tlw == NULL) {
        fy_error("calloc(%zu) for the shm transport failed", sizeof(*tlw));
        return FERRY_ERR_NO_MEMORY;
    }
    if (cells < 2 || cells > (1u << 20) || (cells & (cells - 1)) != 0) {
        fy_warn("FERRY_SHM_RING_CELLS=%llu is not a power of 2 in 2..1048576; using %s",
                (unsigned long long)cells, shm_ring_cells_var.default_value);
        cells = 256;
    }
    tlw->worker = worker;
    tlw->local = local;
    tlw->ring_cells = (uint32_t)cells;
    tlw->am_max = fy_config_size_in(tlw->local->config, &shm_am_max_var);
    const char *stream_min = fy_config_string_in(tlw->local->config, &shm_stream_min_var);
    if (!shm_stream_min_parse(stream_min, &tlw->stream_min, &tlw->stores_auto)) {
        fy_warn("invalid FERRY_SHM_STREAM_MIN=\"%s\": expected a size or auto; using auto",
                stream_min);
        tlw->stream_min = SHM_STREAM_MIN_AUTO;
        tlw->stores_auto = true;
    }
    tlw->membarrier =
        fy_config_bool_in(tlw->local->config, &shm_membarrier_var) && shm_wake_register();
    tlw->fenced_frees = !tlw->membarrier;
    shm_rma_init(tlw);
    tlw->listen.fd = -1;
    fy_list_init(&tlw->all);
    status = shm_region_create(tlw);
    if (status != FERRY_OK)
        goto err_free;
    tlw->event_entry.fd = tlw->eventfd;
    tlw->event_entry.cb = NULL; /* waking up is all it does */
    tlw->event_entry.arg = tlw;
    status = fy_worker_fd_add(worker, &tlw->event_entry, EPOLLIN | EPOLLET);
    if (status != FERRY_OK)
        goto err_destroy_region;
    status = shm_conn_listen(tlw);
    if (status != FERRY_OK)
        goto err_remove_event;
    *tlw_p = tlw;
    return FERRY_OK;

err_remove_event:
    fy_worker_fd_remove(worker, &tlw->event_entry);
err_destroy_region:
    shm_region_destroy(tlw);
err_free:
    free(tlw);
    return status;
}

static void shm_finalize(fy_tl_worker_t *tlw)
{
    /* connections still accepting (no endpoint yet) belong to nobody else */
    fy_list_link_t *link;
    while ((link = fy_list_first(&tlw->all)) != fy_list_end(&tlw->all))
        shm_ep_free(fy_list_entry(link, fy_tl_ep_t, link));
    shm_conn_unlisten(tlw);
    fy_worker_fd_remove(tlw->worker, &tlw->event_entry);
    shm_region_destroy(tlw);
    free(tlw->rx);
    free(tlw);
}

static ferry_status_t shm_address(fy_tl_worker_t *tlw, void *buffer, size_t *length_p)
{
    if (*length_p < sizeof(tlw->record))
        return FERRY_ERR_OUT_OF_RANGE;
    memcpy(buffer, &tlw->record, sizeof(tlw->record));
    *length_p = sizeof(tlw->record);
    return FERRY_OK;
}

static bool shm_am_data_release(fy_tl_worker_t *tlw, void *data)
{
    uint8_t *base = (uint8_t *)tlw->region + SHM_REGION_HEADER_SIZE;
    uint8_t *p = data;
    uint8_t *bulk = (uint8_t *)tlw->region + SHM_BULK_OFFSET;
    if (p >= bulk && p < bulk + (size_t)SHM_BULK_COUNT * SHM_BULK_SIZE)
        shm_buf_release(tlw->region, SHM_POOL_BULK, (unsigned)((size_t)(p - bulk) / SHM_BULK_SIZE));
    else if (p >= base && p < base + (size_t)SHM_BUF_COUNT * SHM_BUF_SLOT)
        shm_buf_release(tlw->region, SHM_POOL_MEDIUM,
                        (unsigned)((size_t)(p - base) / SHM_BUF_SLOT));
    else
        return false;
    shm_wake_waiters(tlw);
    return true;
}

static void shm_describe(fy_tl_worker_t *tlw, char *buffer, size_t length)
{
    char cma[200];
    bool cma_ok = shm_cma_check(tlw->local->config, cma, sizeof(cma));
    snprintf(buffer, length,
             "region %u KiB (%u buffers of %u B, %u of %u B), %u-cell rings (%zu KiB per "
             "peer), %u peers; wake-ups %s; cross-memory attach %s: %s",
             SHM_REGION_SIZE / 1024, SHM_BUF_COUNT, SHM_BUF_SIZE, SHM_BULK_COUNT, SHM_BULK_SIZE,
             tlw->ring_cells,
             (SHM_RING_HEADER_SIZE + (size_t)tlw->ring_cells * SHM_CELL_SIZE) / 1024, tlw->rx_count,
             !tlw->membarrier    ? "by fences (no membarrier)"
             : tlw->fenced_frees ? "by membarrier (fences with a peer without it)"
                                 : "by membarrier",
             cma_ok ? "usable"
                    : "NOT usable (one-sided transfers use the copy "
                      "through shared buffers)",
             cma);
}

const fy_tl_ops_t fy_tl_shm_ops = {
    .name = "shm",
    .id = 2,
    .query = shm_query,
    .init = shm_init,
    .finalize = shm_finalize,
    .address = shm_address,
    .compact_fill = shm_record_compact_fill,
    .compact_record = shm_record_compact_record,
    .reachable = shm_record_reachable,
    .record_describe = shm_record_describe,
    .record_fields = shm_record_fields,
    .ep_init = shm_ep_init,
    .ep_terminate = shm_ep_terminate,
    .ep_destroy = shm_ep_destroy,
    .send_short = shm_send_short,
    .sendv = shm_sendv,
    .am_sent = shm_am_sent,
    .ep_calibrating = shm_ep_calibrating,
    .ep_copy_rate = shm_ep_copy_rate,
    .poll = shm_poll,
    .arm = shm_arm,
    .disarm = shm_disarm,
    .am_data_release = shm_am_data_release,
    .describe = shm_describe,
    .rma = shm_rma,
    .rkey_map = shm_rkey_map,
    .ep_peer_read = shm_ep_peer_read,
};
