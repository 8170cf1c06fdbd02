/* The target-executed protocol: one-sided operations carried by active messages and performed
 * by the target's progress, which checks each against its own registrations first. It is the
 * path of transports without one-sided support of their own (self), of shm where cross-memory
 * attach is denied, and of atomics on memory a peer cannot map.
 *
 * Wire format: little-endian, fixed size, the version byte first.
 *   request (FY_AM_ID_RMA_REQUEST), 64 bytes:
 *      0 u8 version   1 u8 op (1 put, 2 get, 3 atomic post, 4 atomic fetch)
 *      2 u8 atomic op (ferry_atomic_op_t)   3 u8 atomic size (4 or 8)
 *      4 u32 key slot   8 u32 key generation   12 u32 flags (bit 0: CONTINUES, the request
 *        is not the first of its operation; other bits 0)
 *     16 u64 remote offset   24 u64 length   32 u64 request id
 *     40 u64 value (put/get that CONTINUES: the id of the operation's first request)
 *     48 u64 compare (put/get: the end of the remote range this request is part of, so that
 *        the target refuses every request of a range that ends outside the region and no part
 *        of it is written)
 *     56 u64 key secret (compared in constant time with the registration's)
 *     payload: put data (length bytes); nothing otherwise
 *   reply (FY_AM_ID_RMA_REPLY), 24 bytes:
 *      0 u8 version   1 u8[3] reserved   4 s32 status   8 u64 request id   16 u64 result
 *     payload: get data (the request's length) when the status is FERRY_OK
 *
 * One request covers one remote range, or FERRY_RMA_AM_CHUNK bytes of it. A single-use region
 * is claimed by the first request of an operation; the others carry CONTINUES and the first
 * request's id, and are accepted only from the same endpoint with that id. Its id is
 * (generation << 32 | slot) in the initiator's table of requests awaiting replies; a reply is
 * matched only through that table, and only when it comes from the endpoint the request went
 * to. Malformed requests and replies are dropped (one warning per worker, then debug lines);
 * nothing closes the endpoint: an access the target refuses completes that operation with
 * FERRY_ERR_ACCESS and the endpoint stays usable.
 *
 * Atomics are the CPU's own (__atomic, sequentially consistent) on the target's memory, so they
 * are atomic with respect to every CPU atomic on that word: other ferry atomics, and those of
 * local peers through a mapping of ferry_mem_alloc memory.
 *
 * A get's reply is sent straight from the registered memory: if the transport queues it, the
 * memory must stay valid until it went out, i.e. until the initiator saw the operation complete
 * (the same rule as for deregistering while peers may write). */
#define _GNU_SOURCE
#include <endian.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/compiler.h"
#include "core/config.h"
#include "core/log.h"
#include "core/wire.h"
#include "mem/atomic.h"
#include "mem/mem.h"
#include "progress/worker.h"
#include "proto/am.h"
#include "proto/rma.h"
#include "wireup/ep.h"

static const fy_config_var_t rma_am_chunk_var = {
    .name = "FERRY_RMA_AM_CHUNK",
    .type = FERRY_CONFIG_SIZE,
    .default_value = "256k",
    .description = "largest payload of one request or reply of the target-executed one-sided "
                   "protocol (larger transfers are split; 4k .. 1g); on a transport that copies "
                   "through fixed buffers (shm: 4 KiB) a request is also kept within one buffer, "
                   "so that it is not fragmented and reassembled before the target's copy"};
static const fy_config_var_t *const rma_am_chunk_reg
    __attribute__((used, section("ferry_config_registry"))) = &rma_am_chunk_var;

#define RMA_AM_VERSION 2u
#define RMA_AM_REQUEST_SIZE 64u
#define RMA_AM_REPLY_SIZE 24u
#define RMA_AM_CHUNK_MIN 4096u
#define RMA_AM_CHUNK_MAX (1ull << 30)

/* Allocated at once when a freelist is empty. */
#define RMA_AM_BLOCK_OPS 32
#define RMA_AM_BLOCK_PIECES 64
/* Pieces described on the stack before an array is allocated. */
#define RMA_AM_IOV_STACK 16

enum { RMA_AM_PUT = 1, RMA_AM_GET = 2, RMA_AM_POST = 3, RMA_AM_FETCH = 4 };
#define RMA_AM_FLAG_CONTINUES 0x1u

/* One operation of the initiator (one fy_rma_op_t). */
typedef struct rma_am_op {
    fy_list_link_t link; /* freelist, or am->unsent while requests remain to be sent */
    ferry_worker_t *worker;
    ferry_ep_t *ep;
    ferry_completion_t *comp;
    fy_rma_kind_t kind;
    ferry_status_t status;
    unsigned pending; /* requests sent and not finished (reply and send completion) */
    int unsent;       /* on am->unsent */
    int first_sent;   /* the first request went out: the others CONTINUE it */
    uint64_t first_id;
    uint32_t key_index;
    uint32_t key_generation;
    uint64_t key_secret;
    ferry_atomic_op_t atomic_op;
    unsigned atomic_size;
    uint64_t value;
    uint64_t compare;
    uint64_t *result;
    ferry_iov_t *local; /* copies: put sources / get destinations, remote ranges */
    size_t local_count;
    ferry_remote_iov_t *remote;
    size_t remote_count;
    size_t ri; /* the cursor of what is still to send: remote range and offset in it, */
    uint64_t roff;
    size_t li; /* and the local piece and offset that go with it */
    size_t loff;
    ferry_iov_t local_inline;
    ferry_remote_iov_t remote_inline;
} rma_am_op_t;

/* One request on the wire. */
struct rma_am_piece {
    fy_list_link_t link; /* freelist */
    rma_am_op_t *op;
    ferry_ep_t *ep; /* the reply must come from it */
    uint64_t length;
    size_t li; /* get: where its data goes in the op's local pieces */
    size_t loff;
    uint32_t slot;
    int awaiting_reply; /* holds a slot of the id table */
    int send_pending;   /* the transport still has the request (send_comp not called) */
    ferry_completion_t send_comp;
};

/* A reply the transport had no room for: sent again from progress. */
typedef struct rma_am_reply {
    fy_list_link_t link;
    ferry_ep_t *ep;
    ferry_completion_t comp;
    size_t length;
    uint8_t header[RMA_AM_REPLY_SIZE];
    uint8_t data[];
} rma_am_reply_t;

typedef struct rma_am_request {
    unsigned version;
    unsigned op;
    unsigned atomic_op;
    unsigned atomic_size;
    uint32_t index;
    uint32_t generation;
    uint32_t flags;
    uint64_t offset;
    uint64_t length;
    uint64_t id;
    uint64_t value;
    uint64_t compare;
    uint64_t secret;
} rma_am_request_t;

/* ------------------------------------------------------------------ encoding */

static void am_request_encode(const rma_am_request_t *r, uint8_t *p)
{
    p[0] = RMA_AM_VERSION;
    p[1] = (uint8_t)r->op;
    p[2] = (uint8_t)r->atomic_op;
    p[3] = (uint8_t)r->atomic_size;
    fy_le_put32(p + 4, r->index);
    fy_le_put32(p + 8, r->generation);
    fy_le_put32(p + 12, r->flags);
    fy_le_put64(p + 16, r->offset);
    fy_le_put64(p + 24, r->length);
    fy_le_put64(p + 32, r->id);
    fy_le_put64(p + 40, r->value);
    fy_le_put64(p + 48, r->compare);
    fy_le_put64(p + 56, r->secret);
}

static void am_request_decode(const uint8_t *p, rma_am_request_t *r)
{
    r->version = p[0];
    r->op = p[1];
    r->atomic_op = p[2];
    r->atomic_size = p[3];
    r->index = fy_le_get32(p + 4);
    r->generation = fy_le_get32(p + 8);
    r->flags = fy_le_get32(p + 12);
    r->offset = fy_le_get64(p + 16);
    r->length = fy_le_get64(p + 24);
    r->id = fy_le_get64(p + 32);
    r->value = fy_le_get64(p + 40);
    r->compare = fy_le_get64(p + 48);
    r->secret = fy_le_get64(p + 56);
}

static void am_reply_encode(uint8_t *p, uint64_t id, ferry_status_t status, uint64_t result)
{
    p[0] = RMA_AM_VERSION;
    p[1] = p[2] = p[3] = 0;
    fy_le_put32(p + 4, (uint32_t)(int32_t)status);
    fy_le_put64(p + 8, id);
    fy_le_put64(p + 16, result);
}

/* A malformed message from a peer: one warning per worker and kind, then debug lines. */
static void am_drop(unsigned *warned, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void am_drop(unsigned *warned, const char *fmt, ...)
{
    char text[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    if ((*warned)++ == 0)
        fy_warn("%s; dropped (further ones are logged at debug level)", text);
    else
        fy_debug("%s; dropped", text);
}

/* ------------------------------------------------------------------ allocation */

static rma_am_op_t *am_op_get(fy_rma_am_worker_t *am)
{
    rma_am_op_t *op = fy_pool_get(&am->ops);
    if (fy_unlikely(op == NULL))
        return NULL;
    fy_list_link_init(&op->link);
    op->local = NULL;
    op->remote = NULL;
    return op;
}

static void am_op_free_copies(rma_am_op_t *op)
{
    if (op->local != NULL && op->local != &op->local_inline)
        free(op->local);
    if (op->remote != NULL && op->remote != &op->remote_inline)
        free(op->remote);
    op->local = NULL;
    op->remote = NULL;
}

static void am_op_put(fy_rma_am_worker_t *am, rma_am_op_t *op)
{
    am_op_free_copies(op);
    fy_pool_put(&am->ops, op);
}

/* Worker destruction: an operation still in use keeps private copies of its arrays. */
static void am_op_release(void *arg, void *object)
{
    (void)arg;
    am_op_free_copies(object);
}

static rma_am_piece_t *am_piece_get(fy_rma_am_worker_t *am)
{
    rma_am_piece_t *piece = fy_pool_get(&am->pieces);
    if (fy_likely(piece != NULL))
        fy_list_link_init(&piece->link);
    return piece;
}

static void am_piece_put(fy_rma_am_worker_t *am, rma_am_piece_t *piece)
{
    fy_pool_put(&am->pieces, piece);
}

/* A slot of the id table for piece; *id_p receives the request id. */
static ferry_status_t am_slot_get(fy_rma_am_worker_t *am, rma_am_piece_t *piece, uint64_t *id_p)
{
    if (fy_unlikely(am->free_count == 0)) {
        uint32_t old = am->capacity;
        uint32_t capacity = old ? old * 2 : 64;
        if (old >= (1u << 30)) {
            fy_error("one-sided operations: %u requests await replies; no room for more", old);
            return FERRY_ERR_NO_MEMORY;
        }
        rma_am_piece_t **slots = realloc(am->slots, capacity * sizeof(*slots));
        if (slots != NULL)
            am->slots = slots;
        uint32_t *generations = realloc(am->generations, capacity * sizeof(*generations));
        if (generations != NULL)
            am->generations = generations;
        uint32_t *free_slots = realloc(am->free_slots, capacity * sizeof(*free_slots));
        if (free_slots != NULL)
            am->free_slots = free_slots;
        if (slots == NULL || generations == NULL || free_slots == NULL) {
            fy_error("realloc of the one-sided request table to %u entries failed", capacity);
            return FERRY_ERR_NO_MEMORY;
        }
        for (uint32_t i = capacity; i-- > old;) {
            am->slots[i] = NULL;
            am->generations[i] = 1;
            am->free_slots[am->free_count++] = i;
        }
        am->capacity = capacity;
    }
    uint32_t slot = am->free_slots[--am->free_count];
    am->slots[slot] = piece;
    piece->slot = slot;
    *id_p = (uint64_t)am->generations[slot] << 32 | slot;
    return FERRY_OK;
}

static void am_slot_put(fy_rma_am_worker_t *am, uint32_t slot)
{
    am->slots[slot] = NULL;
    if (++am->generations[slot] == 0)
        am->generations[slot] = 1;
    am->free_slots[am->free_count++] = slot;
}

/* ------------------------------------------------------------------ initiator */

/* The local pieces covering length bytes from (li, loff): fills out (when not NULL) and
 * returns how many. */
static size_t am_local_slice(const rma_am_op_t *op, size_t li, size_t loff, uint64_t length,
                             ferry_iov_t *out)
{
    size_t n = 0;
    while (length > 0 && li < op->local_count) {
        size_t avail = op->local[li].length - loff;
        if (avail == 0) {
            li++;
            loff = 0;
            continue;
        }
        size_t take = avail < length ? avail : (size_t)length;
        if (out != NULL) {
            out[n].buffer = (char *)op->local[li].buffer + loff;
            out[n].length = take;
        }
        n++;
        length -= take;
        loff += take;
    }
    return n;
}

static void am_local_advance(rma_am_op_t *op, uint64_t length)
{
    while (length > 0 && op->li < op->local_count) {
        size_t avail = op->local[op->li].length - op->loff;
        if (avail == 0) {
            op->li++;
            op->loff = 0;
            continue;
        }
        size_t take = avail < length ? avail : (size_t)length;
        length -= take;
        op->loff += take;
    }
}

static void am_op_complete(fy_rma_am_worker_t *am, rma_am_op_t *op)
{
    ferry_completion_t *comp = op->comp;
    ferry_status_t status = op->status;
    am_op_put(am, op);
    fy_completion_update(comp, status);
}

static void am_op_queue(fy_rma_am_worker_t *am, rma_am_op_t *op)
{
    fy_list_push_tail(&am->unsent, &op->link);
    op->unsent = 1;
    fy_rma_ep_of(op->ep)->am_unsent++;
    rma_need_progress(op->worker, 1);
}

static void am_op_unqueue(rma_am_op_t *op)
{
    fy_list_remove(&op->link);
    op->unsent = 0;
    fy_rma_ep_of(op->ep)->am_unsent--;
    rma_need_progress(op->worker, -1);
}

/* Part of a request finished (its reply, or its send); when both are, it counts for its
 * operation. */
static void am_piece_done(fy_rma_am_worker_t *am, rma_am_piece_t *piece, ferry_status_t status)
{
    rma_am_op_t *op = piece->op;
    if (status < 0 && op->status == FERRY_OK)
        op->status = status;
    if (piece->awaiting_reply || piece->send_pending)
        return;
    am_piece_put(am, piece);
    if (--op->pending == 0 && !op->unsent)
        am_op_complete(am, op);
}

static void am_piece_send_cb(ferry_completion_t *comp)
{
    rma_am_piece_t *piece = fy_container_of(comp, rma_am_piece_t, send_comp);
    fy_rma_am_worker_t *am = &fy_rma_worker_of(piece->op->worker)->am;
    piece->send_pending = 0;
    if (comp->status < 0 && piece->awaiting_reply) {
        /* the request did not go out whole: no reply will come */
        am_slot_put(am, piece->slot);
        piece->awaiting_reply = 0;
    }
    am_piece_done(am, piece, comp->status);
}

/* Send one request: length bytes at remote offset, from the op's cursor. */
static ferry_status_t am_piece_send(fy_rma_am_worker_t *am, rma_am_op_t *op, uint64_t offset,
                                    uint64_t length)
{
    ferry_iov_t stack[RMA_AM_IOV_STACK], *iov = NULL;
    uint8_t header[RMA_AM_REQUEST_SIZE];
    rma_am_request_t r = {0};
    size_t iovcnt = 0;
    ferry_status_t status;
    rma_am_piece_t *piece;

    piece = am_piece_get(am);
    if (piece == NULL)
        return FERRY_ERR_NO_MEMORY;
    status = am_slot_get(am, piece, &r.id);
    if (status != FERRY_OK) {
        am_piece_put(am, piece);
        return status;
    }
    piece->op = op;
    piece->ep = op->ep;
    piece->length = length;
    piece->li = op->li;
    piece->loff = op->loff;
    piece->awaiting_reply = 1;
    piece->send_pending = 0;
    piece->send_comp = (ferry_completion_t){.cb = am_piece_send_cb, .count = 1, .status = FERRY_OK};
    switch (op->kind) {
    case FY_RMA_PUT:
        r.op = RMA_AM_PUT;
        break;
    case FY_RMA_GET:
        r.op = RMA_AM_GET;
        break;
    case FY_RMA_ATOMIC_POST:
        r.op = RMA_AM_POST;
        break;
    case FY_RMA_ATOMIC_FETCH:
        r.op = RMA_AM_FETCH;
        break;
    }
    r.atomic_op = (unsigned)op->atomic_op;
    r.atomic_size = op->atomic_size;
    r.index = op->key_index;
    r.generation = op->key_generation;
    r.secret = op->key_secret;
    r.offset = offset;
    r.length = length;
    r.value = op->value;
    r.compare = op->compare;
    if (op->kind == FY_RMA_PUT || op->kind == FY_RMA_GET)
        r.compare = op->remote[op->ri].offset + op->remote[op->ri].length;
    if (op->first_sent) {
        r.flags = RMA_AM_FLAG_CONTINUES;
        r.value = op->first_id; /* only puts and gets have more than one request */
    }
    am_request_encode(&r, header);
    if (op->kind == FY_RMA_PUT) {
        iovcnt = am_local_slice(op, op->li, op->loff, length, NULL);
        iov = stack;
        if (iovcnt > RMA_AM_IOV_STACK) {
            iov = malloc(iovcnt * sizeof(*iov));
            if (iov == NULL) {
                fy_error("malloc(%zu) for a %zu-piece put request failed", iovcnt * sizeof(*iov),
                         iovcnt);
                am_slot_put(am, piece->slot);
                am_piece_put(am, piece);
                return FERRY_ERR_NO_MEMORY;
            }
        }
        am_local_slice(op, op->li, op->loff, length, iov);
    }
    status = fy_am_send_internal(op->ep, FY_AM_ID_RMA_REQUEST, header, sizeof(header), iov, iovcnt,
                                 &piece->send_comp);
    if (iov != stack)
        free(iov);
    if (status != FERRY_OK && status != FERRY_INPROGRESS) {
        am_slot_put(am, piece->slot);
        am_piece_put(am, piece);
        return status;
    }
    piece->send_pending = status == FERRY_INPROGRESS;
    op->pending++;
    if (!op->first_sent) {
        op->first_sent = 1;
        op->first_id = r.id;
    }
    return FERRY_OK;
}

/* Send the op's requests from its cursor until all went out, the transport has no room
 * (FERRY_ERR_NO_RESOURCE), or an error. */
static ferry_status_t am_op_send(fy_rma_am_worker_t *am, rma_am_op_t *op)
{
    while (op->ri < op->remote_count) {
        const ferry_remote_iov_t *r = &op->remote[op->ri];
        uint64_t left = r->length - op->roff;
        if (left == 0) {
            op->ri++;
            op->roff = 0;
            continue;
        }
        uint64_t chunk = am->chunk;
        if (op->ep->caps.max_bcopy < chunk && op->ep->caps.max_bcopy >= 4 * RMA_AM_REQUEST_SIZE)
            chunk = op->ep->caps.max_bcopy - RMA_AM_REQUEST_SIZE; /* one buffer: no reassembly */
        uint64_t length = left < chunk ? left : chunk;
        ferry_status_t status = am_piece_send(am, op, r->offset + op->roff, length);
        if (status != FERRY_OK)
            return status;
        op->roff += length;
        if (op->kind == FY_RMA_PUT || op->kind == FY_RMA_GET)
            am_local_advance(op, length);
    }
    return FERRY_OK;
}

ferry_status_t fy_rma_am_start(ferry_ep_t *ep, const fy_rma_op_t *op)
{
    fy_rma_am_worker_t *am = &fy_rma_worker_of(ep->worker)->am;
    ferry_status_t status;
    rma_am_op_t *aop;

    if (ep->state != FY_EP_OPEN)
        return ep->error;
    aop = am_op_get(am);
    if (aop == NULL)
        return FERRY_ERR_NO_MEMORY;
    aop->worker = ep->worker;
    aop->ep = ep;
    aop->comp = op->comp;
    aop->kind = op->kind;
    aop->status = FERRY_OK;
    aop->pending = 0;
    aop->unsent = 0;
    aop->key_index = op->rkey->key.index;
    aop->key_generation = op->rkey->key.generation;
    aop->key_secret = op->rkey->secret;
    aop->atomic_op = op->atomic_op;
    aop->atomic_size = op->atomic_size;
    aop->value = op->value;
    aop->compare = op->compare;
    aop->result = op->result;
    aop->ri = 0;
    aop->first_sent = 0;
    aop->first_id = 0;
    aop->roff = 0;
    aop->li = 0;
    aop->loff = 0;
    aop->local_count = op->local_count;
    aop->remote_count = op->remote_count;
    /* The arrays are the caller's only during this call; a get writes into the local pieces
     * when its replies come, and requests may wait for room in the transport. */
    if (op->local_count == 1) {
        aop->local_inline = op->local[0];
        aop->local = &aop->local_inline;
    } else if (op->local_count > 1) {
        aop->local = malloc(op->local_count * sizeof(*aop->local));
        if (aop->local == NULL)
            goto err_no_memory;
        memcpy(aop->local, op->local, op->local_count * sizeof(*aop->local));
    }
    if (op->remote_count == 1) {
        aop->remote_inline = op->remote[0];
        aop->remote = &aop->remote_inline;
    } else if (op->remote_count > 1) {
        aop->remote = malloc(op->remote_count * sizeof(*aop->remote));
        if (aop->remote == NULL)
            goto err_no_memory;
        memcpy(aop->remote, op->remote, op->remote_count * sizeof(*aop->remote));
    }
    if (fy_rma_ep_of(ep)->am_unsent > 0) {
        am_op_queue(am, aop); /* behind this endpoint's requests that wait for room */
        return FERRY_INPROGRESS;
    }
    status = am_op_send(am, aop);
    if (status == FERRY_OK)
        return FERRY_INPROGRESS;
    if (aop->pending == 0) {
        am_op_put(am, aop); /* nothing went out */
        return status;
    }
    if (status == FERRY_ERR_NO_RESOURCE)
        am_op_queue(am, aop);
    else
        aop->status = status; /* completes with it once the requests that went out finish */
    return FERRY_INPROGRESS;

err_no_memory:
    fy_error("malloc for the %zu local pieces and %zu remote ranges of a one-sided operation "
             "failed",
             op->local_count, op->remote_count);
    am_op_put(am, aop);
    return FERRY_ERR_NO_MEMORY;
}

static ferry_status_t am_reply_handler(void *arg, const void *header, size_t header_length,
                                       void *data, size_t length,
                                       const ferry_am_recv_params_t *params)
{
    ferry_worker_t *worker = arg;
    fy_rma_am_worker_t *am = &fy_rma_worker_of(worker)->am;
    const uint8_t *h = header;
    rma_am_piece_t *piece;

    if (header_length < RMA_AM_REPLY_SIZE || h[0] != RMA_AM_VERSION) {
        am_drop(&am->warned_reply,
                "one-sided reply from endpoint %p: %zu-byte header of version %u (expected %u "
                "bytes, version %u)",
                (void *)params->reply_ep, header_length, header_length ? h[0] : 0,
                RMA_AM_REPLY_SIZE, RMA_AM_VERSION);
        return FERRY_OK;
    }
    ferry_status_t status = (ferry_status_t)(int32_t)fy_le_get32(h + 4);
    uint64_t id = fy_le_get64(h + 8);
    uint64_t result = fy_le_get64(h + 16);
    uint32_t slot = (uint32_t)id;
    if (slot >= am->capacity || (piece = am->slots[slot]) == NULL ||
        am->generations[slot] != (uint32_t)(id >> 32) || piece->ep != params->reply_ep) {
        if (fy_rma_ep_of(params->reply_ep)->failed) {
            /* its operations were completed when it closed or failed */
            fy_debug("one-sided reply 0x%llx on closed endpoint %p dropped", (unsigned long long)id,
                     (void *)params->reply_ep);
            return FERRY_OK;
        }
        am_drop(&am->warned_reply,
                "one-sided reply from endpoint %p to request id 0x%llx, which no request of that "
                "endpoint awaits",
                (void *)params->reply_ep, (unsigned long long)id);
        return FERRY_OK;
    }
    am_slot_put(am, slot);
    piece->awaiting_reply = 0;
    rma_am_op_t *op = piece->op;
    if (status > 0) {
        am_drop(&am->warned_reply, "one-sided reply from endpoint %p with status %d",
                (void *)params->reply_ep, (int)status);
        status = FERRY_ERR_PROTOCOL;
    } else if (status == FERRY_OK && op->kind == FY_RMA_GET) {
        if (length != piece->length) {
            am_drop(&am->warned_reply,
                    "one-sided reply from endpoint %p carries %zu bytes for a get of %llu",
                    (void *)params->reply_ep, length, (unsigned long long)piece->length);
            status = FERRY_ERR_PROTOCOL;
        } else {
            ferry_iov_t stack[RMA_AM_IOV_STACK];
            const uint8_t *src = data;
            size_t li = piece->li, loff = piece->loff;
            uint64_t left = length;
            /* in batches of the stack's size: no allocation */
            while (left > 0) {
                size_t n = 0;
                uint64_t batch = 0;
                while (n < RMA_AM_IOV_STACK && left - batch > 0 && li < op->local_count) {
                    size_t avail = op->local[li].length - loff;
                    if (avail == 0) {
                        li++;
                        loff = 0;
                        continue;
                    }
                    size_t take = avail < left - batch ? avail : (size_t)(left - batch);
                    stack[n].buffer = (char *)op->local[li].buffer + loff;
                    stack[n].length = take;
                    n++;
                    batch += take;
                    loff += take;
                }
                if (n == 0)
                    break;
                for (size_t i = 0; i < n; i++) {
                    memcpy(stack[i].buffer, src, stack[i].length);
                    src += stack[i].length;
                }
                left -= batch;
            }
        }
    } else if (status == FERRY_OK && op->kind == FY_RMA_ATOMIC_FETCH) {
        *op->result = op->atomic_size == 4 ? (uint32_t)result : result;
    }
    am_piece_done(am, piece, status);
    return FERRY_OK;
}

/* ------------------------------------------------------------------ target */

static void am_reply_sent_cb(ferry_completion_t *comp)
{
    free(fy_container_of(comp, rma_am_reply_t, comp));
}

/* Send a reply; if the transport has no room now, keep a copy to send from progress. */
static void am_reply(ferry_worker_t *worker, ferry_ep_t *ep, uint64_t id, ferry_status_t status,
                     uint64_t result, const ferry_iov_t *iov, size_t iovcnt, uint64_t length)
{
    fy_rma_am_worker_t *am = &fy_rma_worker_of(worker)->am;
    uint8_t header[RMA_AM_REPLY_SIZE];
    ferry_status_t sent;

    am_reply_encode(header, id, status, result);
    sent = fy_am_send_internal(ep, FY_AM_ID_RMA_REPLY, header, sizeof(header), iov, iovcnt, NULL);
    if (sent == FERRY_OK || sent == FERRY_INPROGRESS)
        return;
    if (sent != FERRY_ERR_NO_RESOURCE) {
        fy_debug("one-sided reply to request 0x%llx on endpoint %p not sent: %s",
                 (unsigned long long)id, (void *)ep, ferry_status_string(sent));
        return;
    }
    rma_am_reply_t *rec = malloc(sizeof(*rec) + length);
    if (rec == NULL) {
        fy_error("malloc(%llu) to keep a one-sided reply failed: the peer's operation will "
                 "not complete",
                 (unsigned long long)(sizeof(*rec) + length));
        return;
    }
    memcpy(rec->header, header, sizeof(header));
    rec->ep = ep;
    rec->length = (size_t)length;
    rec->comp = (ferry_completion_t){.cb = am_reply_sent_cb, .count = 1, .status = FERRY_OK};
    uint8_t *dst = rec->data;
    for (size_t i = 0; i < iovcnt; i++) {
        memcpy(dst, iov[i].buffer, iov[i].length);
        dst += iov[i].length;
    }
    fy_list_push_tail(&am->replies, &rec->link);
    rma_need_progress(worker, 1);
}

/* Copy length bytes of src into the region at offset. */
static void am_copy_in(const ferry_mem_t *mem, uint64_t offset, const uint8_t *src, uint64_t length)
{
    ferry_iov_t pieces[RMA_AM_IOV_STACK];
    while (length > 0) {
        uint64_t consumed = 0;
        size_t n = mem_translate(mem, offset, length, pieces, RMA_AM_IOV_STACK, &consumed);
        if (consumed == 0)
            break;
        for (size_t i = 0; i < n; i++) {
            memcpy(pieces[i].buffer, src, pieces[i].length);
            src += pieces[i].length;
        }
        offset += consumed;
        length -= consumed;
    }
}

/* The shape of a request, before anything is looked up. Returns NULL or what is wrong. */
static const char *am_request_check(const rma_am_request_t *r, size_t payload)
{
    if (r->version != RMA_AM_VERSION)
        return "unknown version";
    if ((r->flags & ~RMA_AM_FLAG_CONTINUES) != 0)
        return "unknown flags";
    if ((r->flags & RMA_AM_FLAG_CONTINUES) && r->op != RMA_AM_PUT && r->op != RMA_AM_GET)
        return "an atomic cannot continue an operation";
    switch (r->op) {
    case RMA_AM_PUT:
    case RMA_AM_GET:
        if (r->offset > UINT64_MAX - r->length || r->compare < r->offset + r->length)
            return "the request is not inside the range it names";
        if (r->op == RMA_AM_GET)
            return payload == 0 ? NULL : "get with a payload";
        return payload == r->length ? NULL : "put payload differs from its length";
    case RMA_AM_POST:
        if (r->atomic_op != FERRY_ATOMIC_ADD && r->atomic_op != FERRY_ATOMIC_AND &&
            r->atomic_op != FERRY_ATOMIC_OR && r->atomic_op != FERRY_ATOMIC_XOR)
            return "unknown atomic operation";
        break;
    case RMA_AM_FETCH:
        if (r->atomic_op != FERRY_ATOMIC_ADD && r->atomic_op != FERRY_ATOMIC_SWAP &&
            r->atomic_op != FERRY_ATOMIC_CSWAP)
            return "unknown atomic operation";
        break;
    default:
        return "unknown operation";
    }
    if ((r->atomic_size != 4 && r->atomic_size != 8) || r->length != r->atomic_size)
        return "atomic size is not 4 or 8";
    return payload == 0 ? NULL : "atomic with a payload";
}

static ferry_status_t am_request_handler(void *arg, const void *header, size_t header_length,
                                         void *data, size_t length,
                                         const ferry_am_recv_params_t *params)
{
    ferry_worker_t *worker = arg;
    fy_rma_am_worker_t *am = &fy_rma_worker_of(worker)->am;
    ferry_iov_t stack[RMA_AM_IOV_STACK], *pieces = stack;
    ferry_iov_t word = {.buffer = NULL, .length = 0};
    ferry_ep_t *ep = params->reply_ep;
    ferry_status_t status;
    rma_am_request_t r;
    uint64_t result = 0, consumed = 0;
    size_t npieces = 0;
    const char *bad;
    unsigned access;

    if (header_length != RMA_AM_REQUEST_SIZE) {
        am_drop(&am->warned_request,
                "one-sided request from endpoint %p: %zu-byte header (expected %u)", (void *)ep,
                header_length, RMA_AM_REQUEST_SIZE);
        return FERRY_OK;
    }
    am_request_decode(header, &r);
    bad = am_request_check(&r, length);
    if (bad != NULL) {
        am_drop(&am->warned_request,
                "one-sided request from endpoint %p: %s (version %u, op %u, atomic %u/%u, "
                "length %llu, payload %zu)",
                (void *)ep, bad, r.version, r.op, r.atomic_op, r.atomic_size,
                (unsigned long long)r.length, length);
        return FERRY_OK;
    }
    int reader;
    ferry_mem_t *mem = mem_lookup_begin(worker->context, r.index, r.generation, r.secret, &reader);
    if (mem == NULL) {
        fy_debug("remote access refused: region %u generation %u is not registered with the "
                 "key's secret (deregistered, or a wrong key)",
                 r.index, r.generation);
        status = FERRY_ERR_ACCESS;
        goto reply;
    }
    access = r.op == RMA_AM_PUT   ? FERRY_ACCESS_REMOTE_WRITE
             : r.op == RMA_AM_GET ? FERRY_ACCESS_REMOTE_READ
                                  : FERRY_ACCESS_REMOTE_ATOMIC;
    if ((r.op == RMA_AM_POST || r.op == RMA_AM_FETCH) &&
        mem_range_ok(mem->length, r.offset, r.length)) {
        /* checked before the access is (a single use is claimed by it) */
        mem_translate(mem, r.offset, r.length, &word, 1, &consumed);
        if (consumed != r.length || ((uintptr_t)word.buffer & (r.atomic_size - 1)) != 0) {
            fy_debug("remote atomic refused: offset %llu of region %u is at %p, not a "
                     "naturally aligned %u-byte word in one piece",
                     (unsigned long long)r.offset, r.index, word.buffer, r.atomic_size);
            status = FERRY_ERR_INVALID_PARAM;
            goto reply;
        }
    }
    /* a put or get is checked as far as the end of its range: a range that ends outside the
     * region has every one of its requests refused */
    uint64_t checked = r.op == RMA_AM_PUT || r.op == RMA_AM_GET ? r.compare - r.offset : r.length;
    status = mem_check_access(mem, r.offset, checked, access, ep,
                              (r.flags & RMA_AM_FLAG_CONTINUES) ? r.value : r.id,
                              (r.flags & RMA_AM_FLAG_CONTINUES) != 0);
    if (status != FERRY_OK)
        goto reply;
    switch (r.op) {
    case RMA_AM_PUT:
        am_copy_in(mem, r.offset, data, r.length);
        break;
    case RMA_AM_GET:
        npieces = mem_translate(mem, r.offset, r.length, stack, RMA_AM_IOV_STACK, &consumed);
        if (consumed < r.length) {
            pieces = malloc(mem->iovcnt * sizeof(*pieces));
            if (pieces == NULL) {
                fy_error("malloc(%zu) for the pieces of a %llu-byte get reply failed",
                         mem->iovcnt * sizeof(*pieces), (unsigned long long)r.length);
                pieces = stack;
                npieces = 0;
                status = FERRY_ERR_NO_MEMORY;
                goto reply;
            }
            npieces = mem_translate(mem, r.offset, r.length, pieces, mem->iovcnt, &consumed);
        }
        am_reply(worker, ep, r.id, FERRY_OK, 0, pieces, npieces, r.length);
        if (pieces != stack)
            free(pieces);
        mem_lookup_end(worker->context, reader);
        return FERRY_OK;
    default:
        result = mem_atomic_apply(word.buffer, r.atomic_size, (ferry_atomic_op_t)r.atomic_op,
                                  r.value, r.compare);
        break;
    }
reply:
    mem_lookup_end(worker->context, reader);
    am_reply(worker, ep, r.id, status, result, NULL, 0, 0);
    return FERRY_OK;
}

/* ------------------------------------------------------------------ life cycle, progress */

void fy_rma_am_init(ferry_worker_t *worker)
{
    fy_rma_am_worker_t *am = &fy_rma_worker_of(worker)->am;
    uint64_t chunk = fy_config_size_in(fy_worker_config(worker), &rma_am_chunk_var);

    memset(am, 0, sizeof(*am));
    fy_list_init(&am->unsent);
    fy_list_init(&am->replies);
    fy_pool_init(&am->ops, sizeof(rma_am_op_t), RMA_AM_BLOCK_OPS,
                 "target-executed one-sided operations");
    fy_pool_init(&am->pieces, sizeof(rma_am_piece_t), RMA_AM_BLOCK_PIECES,
                 "target-executed one-sided requests");
    if (chunk < RMA_AM_CHUNK_MIN || chunk > RMA_AM_CHUNK_MAX) {
        fy_warn("FERRY_RMA_AM_CHUNK=%llu is outside %u..%llu; using %s", (unsigned long long)chunk,
                RMA_AM_CHUNK_MIN, RMA_AM_CHUNK_MAX, rma_am_chunk_var.default_value);
        chunk = 256u << 10;
    }
    am->chunk = chunk;
    fy_am_set_internal_handler(worker, FY_AM_ID_RMA_REQUEST, am_request_handler, worker);
    fy_am_set_internal_handler(worker, FY_AM_ID_RMA_REPLY, am_reply_handler, worker);
}

void fy_rma_am_cleanup(ferry_worker_t *worker)
{
    fy_rma_am_worker_t *am = &fy_rma_worker_of(worker)->am;
    fy_list_link_t *link;

    while ((link = fy_list_pop_head(&am->replies)) != NULL)
        free(fy_list_entry(link, rma_am_reply_t, link));
    fy_pool_destroy(&am->ops, am_op_release, NULL);
    fy_pool_destroy(&am->pieces, NULL, NULL);
    free(am->slots);
    free(am->generations);
    free(am->free_slots);
    memset(am, 0, sizeof(*am));
}

void fy_rma_am_ep_fail(ferry_ep_t *ep, ferry_status_t status)
{
    ferry_worker_t *worker = ep->worker;
    fy_rma_am_worker_t *am = &fy_rma_worker_of(worker)->am;
    fy_list_link_t *link, *next;

    /* requests whose replies would come from ep */
    for (uint32_t slot = 0; slot < am->capacity; slot++) {
        rma_am_piece_t *piece = am->slots[slot];
        if (piece == NULL || piece->ep != ep)
            continue;
        am_slot_put(am, slot);
        piece->awaiting_reply = 0;
        am_piece_done(am, piece, status);
    }
    /* operations with requests still to send to ep */
    for (link = fy_list_first(&am->unsent); link != fy_list_end(&am->unsent); link = next) {
        next = link->next;
        rma_am_op_t *op = fy_list_entry(link, rma_am_op_t, link);
        if (op->ep != ep)
            continue;
        am_op_unqueue(op);
        if (op->status == FERRY_OK)
            op->status = status;
        if (op->pending == 0)
            am_op_complete(am, op);
    }
    /* replies that waited for room on ep */
    for (link = fy_list_first(&am->replies); link != fy_list_end(&am->replies); link = next) {
        next = link->next;
        rma_am_reply_t *rec = fy_list_entry(link, rma_am_reply_t, link);
        if (rec->ep != ep)
            continue;
        fy_list_remove(link);
        rma_need_progress(worker, -1);
        free(rec);
    }
}

unsigned fy_rma_am_progress(ferry_worker_t *worker)
{
    fy_rma_am_worker_t *am = &fy_rma_worker_of(worker)->am;
    fy_list_link_t *link, *next;
    unsigned count = 0;
    uint64_t pass = ++am->pass;

    for (link = fy_list_first(&am->unsent); link != fy_list_end(&am->unsent); link = next) {
        next = link->next;
        rma_am_op_t *op = fy_list_entry(link, rma_am_op_t, link);
        ferry_ep_t *ep = op->ep;
        if (fy_rma_ep_of(ep)->am_blocked_pass == pass)
            continue; /* keep this endpoint's order */
        unsigned before = op->pending;
        ferry_status_t status = am_op_send(am, op);
        count += op->pending != before;
        if (status == FERRY_ERR_NO_RESOURCE) {
            fy_rma_ep_of(ep)->am_blocked_pass = pass;
            continue;
        }
        am_op_unqueue(op);
        if (status != FERRY_OK && op->status == FERRY_OK)
            op->status = status;
        if (op->pending == 0)
            am_op_complete(am, op);
    }
    for (link = fy_list_first(&am->replies); link != fy_list_end(&am->replies); link = next) {
        next = link->next;
        rma_am_reply_t *rec = fy_list_entry(link, rma_am_reply_t, link);
        if (fy_rma_ep_of(rec->ep)->am_blocked_pass == pass)
            continue;
        ferry_iov_t iov = {.buffer = rec->data, .length = rec->length};
        ferry_status_t status =
            fy_am_send_internal(rec->ep, FY_AM_ID_RMA_REPLY, rec->header, sizeof(rec->header), &iov,
                                rec->length ? 1 : 0, &rec->comp);
        if (status == FERRY_ERR_NO_RESOURCE) {
            fy_rma_ep_of(rec->ep)->am_blocked_pass = pass;
            continue;
        }
        fy_list_remove(link);
        rma_need_progress(worker, -1);
        count++;
        if (status != FERRY_INPROGRESS) {
            if (status != FERRY_OK)
                fy_debug("one-sided reply on endpoint %p not sent: %s", (void *)rec->ep,
                         ferry_status_string(status));
            free(rec);
        }
    }
    return count;
}
