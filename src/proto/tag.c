/* Tagged messages: the matching engine (posted, unexpected and probed queues), the eager
 * protocol with its bounded unexpected buffering (EAGER_OFF/ON back-pressure), control messages
 * that wait for room, the pools and id tables of the protocol, and the public calls. The
 * rendezvous state machines are in tag_rndv.c; the contract is tag.h.
 *
 * Fast path (a small eager message matched by a posted receive): the send is one transport
 * send of a 16-byte header plus the payload; the receive takes a descriptor from a freelist,
 * the arrival copies the payload into the posted buffer and queues the completion on the
 * worker's deferred list. No malloc in steady state, no system call of ours. */
#define _GNU_SOURCE
#include <endian.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "core/copy.h"
#include "proto/am.h"
#include "proto/tag_int.h"
#include "wireup/ep.h"

static const fy_config_var_t tag_unexpected_max_var = {
    .name = "FERRY_TAG_UNEXPECTED_MAX",
    .type = FERRY_CONFIG_SIZE,
    .default_value = "512K",
    .description = "payload bytes of unexpected eager messages larger than 256 bytes a worker "
                   "buffers before it asks their senders to send such messages by rendezvous "
                   "(EAGER_SMALL; small ones stay eager) until it has consumed half of them "
                   "(EAGER_ON): back-pressure, never loss; cache-sized, so that a sender that "
                   "outruns its receiver does not push the backlog out of the caches"};
static const fy_config_var_t *const tag_unexpected_max_reg
    __attribute__((used, section("ferry_config_registry"))) = &tag_unexpected_max_var;

static const fy_config_var_t tag_unexpected_count_var = {
    .name = "FERRY_TAG_UNEXPECTED_COUNT",
    .type = FERRY_CONFIG_SIZE,
    .default_value = "65536",
    .description = "unexpected eager messages (of any size) a worker buffers before it asks "
                   "their senders to use rendezvous for everything (EAGER_OFF) until it has "
                   "consumed half of them and half of FERRY_TAG_UNEXPECTED_MAX (EAGER_ON)"};
static const fy_config_var_t *const tag_unexpected_count_reg
    __attribute__((used, section("ferry_config_registry"))) = &tag_unexpected_count_var;

static const fy_config_var_t tag_spare_max_var = {
    .name = "FERRY_TAG_SPARE_MAX",
    .type = FERRY_CONFIG_SIZE,
    .default_value = "16M",
    .description = "bytes of buffers for unexpected tagged messages a worker keeps for reuse "
                   "beyond a few of each size, once a backlog gave them back: enough for what "
                   "a tcp connection holds in flight (a new buffer page-faults on every page, "
                   "which cost a receiver that fell behind more than the copy)"};
static const fy_config_var_t *const tag_spare_max_reg
    __attribute__((used, section("ferry_config_registry"))) = &tag_spare_max_var;

/* Objects allocated at once when a pool is empty. */
#define TAG_BLOCK_OBJECTS 32
/* Recycled unexpected-message buffers, per class (tag.h, TAG_SPARE_CLASSES): their size, and
 * how many are always kept for reuse (512 KiB of 8 KiB buffers, 1 MiB of 32 KiB ones, 2 MiB of
 * each class of messages in pieces up to 256 KiB: as much as FERRY_TAG_UNEXPECTED_MAX's default
 * and what was in flight when it was crossed); beyond that floor, a worker keeps buffers while
 * all it keeps stays within FERRY_TAG_SPARE_MAX (tag_spare_put). */
static const size_t tag_spare_size[TAG_SPARE_CLASSES] = {
    TAG_UNEXP_BUF, TAG_UNEXP_BUF_LARGE, 65536, 131072, TAG_UNEXP_BUF_PIECES,
    524288,        TAG_UNEXP_BUF_STREAM};
static const unsigned tag_spare_floor[TAG_SPARE_CLASSES] = {64, 32, 8, 8, 8, 4, 2};
/* messages in pieces buffered or being placed (spare_out of the classes from
 * TAG_SPARE_PIECES_FIRST) past which a shm sender is told EAGER_BUFFER */
#define TAG_PIECES_OUT_MAX 8u

/* The class of recycled buffer a payload of length bytes (TAG_UNEXP_INLINE < length <=
 * TAG_UNEXP_BUF_STREAM) uses: the smallest that holds it. */
static inline unsigned tag_spare_class(uint64_t length)
{
    unsigned c = 0;
    while (c + 1 < TAG_SPARE_CLASSES && tag_spare_size[c] < length)
        c++;
    return c;
}

/* Recycled buffers of messages in pieces out now (tag_spare_get, not given back). */
static unsigned tag_pieces_out(const fy_tag_worker_t *tw)
{
    unsigned out = 0;
    for (unsigned c = TAG_SPARE_PIECES_FIRST; c < TAG_SPARE_CLASSES; c++)
        out += tw->spare_out[c];
    return out;
}

/* ------------------------------------------------------------------ pools */

void *tag_pool_get(fy_pool_t *pool, uint32_t magic)
{
    tag_obj_t *obj = fy_pool_get(pool);
    if (fy_likely(obj != NULL))
        obj->magic = magic;
    return obj;
}

void tag_pool_put(fy_pool_t *pool, void *object)
{
    tag_obj_t *obj = object;
    obj->magic = 0;
    fy_pool_put(pool, obj);
}

/* ------------------------------------------------------------------ id tables */

static bool tag_table_grow(tag_table_t *table)
{
    uint32_t old = table->capacity;
    uint32_t capacity = old ? old * 2 : 64;
    if (capacity <= old) {
        fy_error("tagged-message id table full (%u transfers in progress)", old);
        return false;
    }
    void **slots = realloc(table->slots, capacity * sizeof(*slots));
    if (slots == NULL)
        goto err_nomem;
    table->slots = slots;
    uint32_t *generations = realloc(table->generations, capacity * sizeof(*generations));
    if (generations == NULL)
        goto err_nomem;
    table->generations = generations;
    uint32_t *free_slots = realloc(table->free_slots, capacity * sizeof(*free_slots));
    if (free_slots == NULL)
        goto err_nomem;
    table->free_slots = free_slots;
    for (uint32_t i = capacity; i-- > old;) { /* low indices are handed out first */
        table->slots[i] = NULL;
        table->generations[i] = 1;
        table->free_slots[table->free_count++] = i;
    }
    table->capacity = capacity;
    return true;

err_nomem:
    fy_error("realloc for a tagged-message id table of %u entries failed", capacity);
    return false;
}

uint64_t tag_table_insert(tag_table_t *table, void *object)
{
    if (table->free_count == 0 && !tag_table_grow(table))
        return 0;
    uint32_t index = table->free_slots[--table->free_count];
    table->slots[index] = object;
    return ((uint64_t)table->generations[index] << 32) | index;
}

void *tag_table_lookup(const tag_table_t *table, uint64_t id)
{
    uint32_t index = (uint32_t)id;
    uint32_t generation = (uint32_t)(id >> 32);
    if (index >= table->capacity || table->generations[index] != generation)
        return NULL;
    return table->slots[index];
}

void tag_table_remove(tag_table_t *table, uint64_t id)
{
    uint32_t index = (uint32_t)id;
    if (tag_table_lookup(table, id) == NULL)
        return;
    table->slots[index] = NULL;
    if (++table->generations[index] == 0)
        table->generations[index] = 1;
    table->free_slots[table->free_count++] = index;
}

static void tag_table_free(tag_table_t *table)
{
    free(table->slots);
    free(table->generations);
    free(table->free_slots);
    memset(table, 0, sizeof(*table));
}

/* ------------------------------------------------------------------ helpers */

void tag_warn(ferry_worker_t *worker, tag_warn_kind_t kind, const char *fmt, ...)
{
    char text[320];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    if (fy_tag_worker_of(worker)->warned[kind]++ == 0)
        fy_warn("tagged messages: %s; dropped (further messages of this kind are logged at "
                "debug level)",
                text);
    else
        fy_debug("tagged messages: %s; dropped", text);
}

void tag_need_progress(ferry_worker_t *worker, int delta)
{
    fy_tag_worker_t *tw = fy_tag_worker_of(worker);
    tw->need_progress = (unsigned)((int)tw->need_progress + delta);
    fy_worker_module_progress_set(worker, FY_MODULE_TAG, tw->need_progress > 0);
}

static fy_hot ferry_status_t tag_iov_check(const ferry_iov_t *iov, size_t iovcnt,
                                           uint64_t *length_p)
{
    uint64_t total = 0;
    if (fy_unlikely(iov == NULL && iovcnt > 0))
        return FERRY_ERR_INVALID_PARAM;
    if (fy_likely(iovcnt == 1)) { /* the usual receive: no loop, no sum to check */
        if (fy_unlikely(iov[0].buffer == NULL && iov[0].length > 0))
            return FERRY_ERR_INVALID_PARAM;
        *length_p = iov[0].length;
        return FERRY_OK;
    }
    for (size_t i = 0; i < iovcnt; i++) {
        if (fy_unlikely((iov[i].buffer == NULL && iov[i].length > 0) ||
                        iov[i].length > UINT64_MAX - total))
            return FERRY_ERR_INVALID_PARAM;
        total += iov[i].length;
    }
    *length_p = total;
    return FERRY_OK;
}

ferry_status_t tag_iovs_copy(tag_iovs_t *dst, const ferry_iov_t *iov, size_t iovcnt)
{
    uint64_t total;
    ferry_status_t status = tag_iov_check(iov, iovcnt, &total);
    if (status != FERRY_OK)
        return status;
    return tag_iovs_copy_checked(dst, iov, iovcnt, total);
}

fy_hot ferry_status_t tag_iovs_copy_checked(tag_iovs_t *dst, const ferry_iov_t *iov, size_t iovcnt,
                                            uint64_t total)
{
    dst->iov = dst->iov_inline;
    if (iovcnt > TAG_IOV_INLINE) {
        dst->iov = malloc(iovcnt * sizeof(*iov));
        if (dst->iov == NULL) {
            fy_error("malloc(%zu) for a copy of %zu tagged-message pieces failed",
                     iovcnt * sizeof(*iov), iovcnt);
            dst->iov = dst->iov_inline;
            dst->iovcnt = 0;
            return FERRY_ERR_NO_MEMORY;
        }
    }
    if (iovcnt > 0)
        fy_copy(dst->iov, iov, iovcnt * sizeof(*iov)); /* one piece: two inline moves */
    dst->iovcnt = iovcnt;
    dst->length = total;
    return FERRY_OK;
}

void tag_iovs_release(tag_iovs_t *iovs)
{
    if (iovs->iov != NULL && iovs->iov != iovs->iov_inline)
        free(iovs->iov);
    iovs->iov = iovs->iov_inline;
    iovs->iovcnt = 0;
}

void tag_cursor_scatter(const tag_iovs_t *iovs, tag_cursor_t *cur, const void *src, size_t n)
{
    const uint8_t *s = src;
    while (n > 0 && cur->index < iovs->iovcnt) {
        const ferry_iov_t *v = &iovs->iov[cur->index];
        size_t room = v->length - cur->offset;
        size_t k = n < room ? n : room;
        if (k > 0)
            memcpy((uint8_t *)v->buffer + cur->offset, s, k);
        s += k;
        n -= k;
        cur->offset += k;
        cur->pos += k;
        if (cur->offset == v->length) {
            cur->index++;
            cur->offset = 0;
        }
    }
}

size_t tag_cursor_pieces(const tag_iovs_t *iovs, const tag_cursor_t *cur, uint64_t n,
                         ferry_iov_t *out, size_t max, uint64_t *bytes_p)
{
    size_t index = cur->index, offset = cur->offset, used = 0;
    uint64_t got = 0;
    while (got < n && index < iovs->iovcnt && used < max) {
        const ferry_iov_t *v = &iovs->iov[index];
        size_t room = v->length - offset;
        size_t k = n - got < room ? (size_t)(n - got) : room;
        if (k > 0) {
            if (out != NULL) {
                out[used].buffer = (uint8_t *)v->buffer + offset;
                out[used].length = k;
            }
            used++;
            got += k;
        }
        offset += k;
        if (offset == v->length) {
            index++;
            offset = 0;
        }
    }
    *bytes_p = got;
    return used;
}

void tag_cursor_advance(const tag_iovs_t *iovs, tag_cursor_t *cur, uint64_t n)
{
    while (n > 0 && cur->index < iovs->iovcnt) {
        const ferry_iov_t *v = &iovs->iov[cur->index];
        size_t room = v->length - cur->offset;
        size_t k = n < room ? (size_t)n : room;
        n -= k;
        cur->offset += k;
        cur->pos += k;
        if (cur->offset == v->length) {
            cur->index++;
            cur->offset = 0;
        }
    }
}

/* tag_scatter_message into several pieces, or one too short: out of line, so that the usual
 * case saves no registers for this loop. */
static fy_noinline ferry_status_t tag_scatter_pieces(const ferry_iov_t *iov, size_t iovcnt,
                                                     const void *data, size_t length)
{
    const uint8_t *src = data;
    size_t left = length;
    for (size_t i = 0; i < iovcnt && left > 0; i++) {
        size_t k = iov[i].length < left ? iov[i].length : left;
        if (k > 0)
            memcpy(iov[i].buffer, src, k);
        src += k;
        left -= k;
    }
    return left > 0 ? FERRY_ERR_MESSAGE_TRUNCATED : FERRY_OK;
}

/* Copy a whole eager message into the user's pieces, truncating at their end. */
static inline ferry_status_t tag_scatter_message(const ferry_iov_t *iov, size_t iovcnt,
                                                 const void *data, size_t length)
{
    if (fy_likely(iovcnt == 1 && iov[0].length >= length)) { /* the usual case: it fits */
        fy_copy(iov[0].buffer, data, length);
        return FERRY_OK;
    }
    return tag_scatter_pieces(iov, iovcnt, data, length);
}

static unsigned tag_info_flags(unsigned wire_flags)
{
    return ((wire_flags & TAG_FLAG_IMM) ? FERRY_TAG_INFO_IMM : 0) |
           ((wire_flags & TAG_FLAG_SYNC) ? FERRY_TAG_INFO_SYNC : 0);
}

static void tag_info_fill(ferry_tag_info_t *info, ferry_ep_t *ep, ferry_peer_id_t peer,
                          uint64_t tag, uint64_t length, uint64_t imm, unsigned wire_flags)
{
    if (info == NULL)
        return;
    info->sender = ep;
    info->tag = tag;
    info->length = (size_t)length;
    info->peer = peer;
    info->imm = imm;
    info->flags = tag_info_flags(wire_flags);
}

/* What the info of unexpected message u says. */
static void tag_info_fill_unexp(ferry_tag_info_t *info, const tag_unexp_t *u)
{
    if (u->kind == TAG_UNEXP_RTS)
        tag_info_fill(info, u->ep, u->peer, u->tag, u->length, u->rts.imm, u->rts.flags);
    else
        tag_info_fill(info, u->ep, u->peer, u->tag, u->length, u->imm, u->flags);
}

/* ------------------------------------------------------------------ completion */

void tag_recv_unref(tag_recv_t *recv)
{
    if (--recv->refs > 0)
        return;
    tag_iovs_release(&recv->buf);
    tag_pool_put(&fy_tag_worker_of(recv->worker)->recvs, recv);
}

void tag_send_unref(tag_send_t *send)
{
    if (--send->refs > 0)
        return;
    tag_iovs_release(&send->buf);
    free(send->copy);
    send->copy = NULL;
    tag_pool_put(&fy_tag_worker_of(send->worker)->sends, send);
}

static fy_hot void tag_recv_deferred_cb(fy_deferred_t *self)
{
    tag_recv_t *recv = fy_container_of(self, tag_recv_t, deferred);
    ferry_completion_t *comp = recv->comp;
    ferry_status_t status = recv->status;
    tag_recv_unref(recv);
    fy_completion_update(comp, status);
}

static fy_hot void tag_send_deferred_cb(fy_deferred_t *self)
{
    tag_send_t *send = fy_container_of(self, tag_send_t, deferred);
    ferry_completion_t *comp = send->comp;
    ferry_status_t status = send->status;
    tag_send_unref(send);
    fy_completion_update(comp, status);
}

fy_hot void tag_recv_finish(tag_recv_t *recv, ferry_status_t status)
{
    if (recv->state == TAG_RECV_FINISHED)
        return;
    bool posted = recv->state == TAG_RECV_POSTED;
    if (posted)
        fy_list_remove(&recv->obj.link);
    recv->state = TAG_RECV_FINISHED;
    recv->status = status;
    if (!posted) /* a receive still posted holds nothing of a rendezvous */
        tag_rndv_recv_release(recv);
    recv->ep = NULL;
    if (recv->inner_busy) {
        /* a get or DATA copy still writes into the user's buffers: the user hears of it only
         * when that is over (tag_recv_inner_cb) */
        recv->user_waits_inner = true;
        return;
    }
    tag_recv_complete_user(recv);
}

void tag_recv_complete_user(tag_recv_t *recv)
{
    recv->user_waits_inner = false;
    fy_worker_defer(recv->worker, &recv->deferred);
}

void tag_recv_complete_user_now(tag_recv_t *recv)
{
    recv->user_waits_inner = false;
    tag_recv_deferred_cb(&recv->deferred);
}

void tag_send_finish(tag_send_t *send, ferry_status_t status)
{
    if (send->state == TAG_SEND_FINISHED)
        return;
    send->state = TAG_SEND_FINISHED;
    send->status = status;
    if (send->calib_class != 0)
        tag_calib_done(send->worker, send);
    tag_rndv_send_release(send);
    send->ep = NULL;
    if (send->inner_busy) {
        /* a put or DATA in the transport still reads the user's buffers: the user hears of it
         * only when that is over (tag_send_inner_cb) */
        send->user_waits_inner = true;
        return;
    }
    tag_send_complete_user(send);
}

void tag_send_complete_user(tag_send_t *send)
{
    send->user_waits_inner = false;
    if (send->comp != NULL)
        fy_worker_defer(send->worker, &send->deferred);
    else
        tag_send_unref(send);
}

void tag_send_complete_user_now(tag_send_t *send)
{
    send->user_waits_inner = false;
    if (send->comp != NULL)
        tag_send_deferred_cb(&send->deferred);
    else
        tag_send_unref(send);
}

/* A receive descriptor for the user's buffers (copied), or NULL with *status_p set. */
fy_hot tag_recv_t *tag_recv_alloc(ferry_worker_t *worker, const ferry_iov_t *iov, size_t iovcnt,
                                  uint64_t length, ferry_tag_info_t *info, ferry_completion_t *comp,
                                  ferry_status_t *status_p)
{
    tag_recv_t *recv = tag_pool_get(&fy_tag_worker_of(worker)->recvs, TAG_MAGIC_RECV);
    if (fy_unlikely(recv == NULL)) {
        *status_p = FERRY_ERR_NO_MEMORY;
        return NULL;
    }
    fy_list_link_init(&recv->deferred.link);
    recv->deferred.cb = tag_recv_deferred_cb;
    recv->worker = worker;
    recv->comp = comp;
    recv->info = info;
    recv->source = FERRY_PEER_ANY;
    recv->status = FERRY_OK;
    recv->refs = 1;
    recv->state = TAG_RECV_POSTED;
    recv->id = 0;
    recv->ep = NULL;
    recv->rkey = NULL;
    recv->address = 0;
    recv->mem = NULL;
    recv->inner_busy = false;
    recv->in_retry = false;
    recv->user_waits_inner = false;
    recv->received = 0;
    recv->cursor = (tag_cursor_t){0, 0, 0};
    recv->buf.iov = recv->buf.iov_inline;
    recv->buf.iovcnt = 0;
    *status_p = tag_iovs_copy_checked(&recv->buf, iov, iovcnt, length);
    if (fy_unlikely(*status_p != FERRY_OK)) {
        tag_pool_put(&fy_tag_worker_of(worker)->recvs, recv);
        return NULL;
    }
    return recv;
}

tag_send_t *tag_send_alloc(ferry_worker_t *worker)
{
    tag_send_t *send = tag_pool_get(&fy_tag_worker_of(worker)->sends, TAG_MAGIC_SEND);
    if (send == NULL)
        return NULL;
    fy_list_link_init(&send->deferred.link);
    send->deferred.cb = tag_send_deferred_cb;
    send->worker = worker;
    send->ep = NULL;
    send->comp = NULL;
    send->copy = NULL;
    send->buf.iov = send->buf.iov_inline;
    send->buf.iovcnt = 0;
    send->status = FERRY_OK;
    send->refs = 1;
    send->state = TAG_SEND_WAIT_CTS;
    send->id = 0;
    send->recv_id = 0;
    send->accepted = 0;
    send->sent = 0;
    send->cursor = (tag_cursor_t){0, 0, 0};
    send->mem = NULL;
    send->section_off = 0;
    send->section_len = 0;
    send->rkey = NULL;
    send->calib_class = 0;
    send->inner = (ferry_completion_t){.cb = NULL, .count = 0, .status = FERRY_OK};
    send->inner_busy = false;
    send->in_list = false;
    send->user_waits_inner = false;
    return send;
}

/* ------------------------------------------------------------------ control messages */

ferry_status_t tag_ctl_send(ferry_worker_t *worker, ferry_ep_t *ep, const tag_wire_msg_t *msg)
{
    uint8_t header[sizeof(tag_wire_rts_t)];
    size_t length = tag_wire_encode(msg, header);
    ferry_status_t status;

    if (ep->state != FY_EP_OPEN)
        return ep->error;
    if (fy_tag_ep_of(ep)->ctl_queued == 0) {
        status = fy_am_send_internal(ep, msg->id, header, length, NULL, 0, NULL);
        if (status == FERRY_OK || status == FERRY_INPROGRESS)
            return FERRY_OK;
        if (status != FERRY_ERR_NO_RESOURCE)
            return status;
    }
    tag_ctl_t *ctl = tag_pool_get(&fy_tag_worker_of(worker)->ctls, TAG_MAGIC_CTL);
    if (ctl == NULL)
        return FERRY_ERR_NO_MEMORY;
    ctl->ep = ep;
    ctl->id = msg->id;
    ctl->length = length;
    memcpy(ctl->header, header, length);
    fy_list_push_tail(&fy_tag_worker_of(worker)->ctl, &ctl->obj.link);
    fy_tag_ep_of(ep)->ctl_queued++;
    tag_need_progress(worker, 1);
    return FERRY_OK;
}

static void tag_ctl_drop(ferry_worker_t *worker, tag_ctl_t *ctl)
{
    fy_list_remove(&ctl->obj.link);
    fy_tag_ep_of(ctl->ep)->ctl_queued--;
    tag_need_progress(worker, -1);
    tag_pool_put(&fy_tag_worker_of(worker)->ctls, ctl);
}

/* Send queued control messages in order; an endpoint without room keeps the rest of its own
 * for the next pass (its order), the others go on. */
static unsigned tag_ctl_progress(ferry_worker_t *worker)
{
    fy_tag_worker_t *tw = fy_tag_worker_of(worker);
    unsigned count = 0;
    uint32_t pass = ++tw->ctl_pass;

    for (fy_list_link_t *l = fy_list_first(&tw->ctl), *next; l != fy_list_end(&tw->ctl); l = next) {
        next = l->next;
        tag_ctl_t *ctl = fy_container_of(l, tag_ctl_t, obj.link);
        ferry_ep_t *ep = ctl->ep;
        if (fy_tag_ep_of(ep)->ctl_pass == pass)
            continue;
        ferry_status_t status =
            ep->state == FY_EP_OPEN
                ? fy_am_send_internal(ep, ctl->id, ctl->header, ctl->length, NULL, 0, NULL)
                : ep->error;
        if (status == FERRY_ERR_NO_RESOURCE) {
            fy_tag_ep_of(ep)->ctl_pass = pass;
            continue;
        }
        if (status != FERRY_OK && status != FERRY_INPROGRESS)
            fy_debug("tagged messages: control message %u to endpoint %p dropped: %s", ctl->id,
                     (void *)ep, ferry_status_string(status));
        next = l->next; /* the send cannot have changed the queue, but stay safe */
        tag_ctl_drop(worker, ctl);
        count++;
    }
    return count;
}

/* ------------------------------------------------------------------ unexpected messages */

/* The name of a FLOW.eager value, for debug lines. */
static const char *tag_flow_name(unsigned eager)
{
    return eager == TAG_FLOW_ON       ? "ON"
           : eager == TAG_FLOW_SMALL  ? "SMALL"
           : eager == TAG_FLOW_BUFFER ? "BUFFER"
                                      : "OFF";
}

/* FLOW {eager} to ep (TAG_FLOW_*). */
static void tag_flow_send(ferry_worker_t *worker, ferry_ep_t *ep, unsigned eager)
{
    tag_wire_msg_t msg = {.id = FY_AM_ID_TAG_FLOW};
    msg.u.flow.version = TAG_WIRE_VERSION;
    msg.u.flow.eager = (uint8_t)eager;
    ferry_status_t status = tag_ctl_send(worker, ep, &msg);
    if (status != FERRY_OK)
        fy_debug("tagged messages: EAGER_%s to endpoint %p not sent: %s", tag_flow_name(eager),
                 (void *)ep, ferry_status_string(status));
}

static void tag_flow_forget(ferry_worker_t *worker, ferry_ep_t *ep)
{
    (void)worker;
    if (!fy_tag_ep_of(ep)->told_limit)
        return;
    fy_tag_ep_of(ep)->told_limit = 0;
    fy_list_remove(&fy_tag_ep_of(ep)->flow_link);
}

/* After buffered messages were consumed: EAGER_ON (EAGER_BUFFER to one told that too) to every
 * sender told SMALL or OFF once the buffered bytes and messages are both at most half their
 * bounds. */
static void tag_flow_check_on(ferry_worker_t *worker)
{
    fy_tag_worker_t *tw = fy_tag_worker_of(worker);
    fy_list_link_t *link;
    if (fy_likely(fy_list_is_empty(&tw->flow_off)) ||
        tw->unexpected_bytes > tw->unexpected_max / 2 ||
        tw->unexpected_count > tw->unexpected_count_max / 2)
        return;
    while ((link = fy_list_pop_head(&tw->flow_off)) != NULL) {
        ferry_ep_t *ep = fy_container_of(link, fy_tag_ep_t, flow_link)->ep;
        fy_tag_ep_of(ep)->told_limit = 0;
        tag_flow_send(worker, ep, fy_tag_ep_of(ep)->told_buffer ? TAG_FLOW_BUFFER : TAG_FLOW_ON);
    }
}

/* A message in pieces of length bytes from ep found no receive posted (tag_place_eager): while
 * a recycled buffer takes it (fewer than TAG_PIECES_OUT_MAX of them are out), it costs one more
 * copy when its receive comes, and nothing changes — a message whose first
 * piece merely came before its receive, as happens now and then to a receiver that posts ahead,
 * is no reason to restrict anyone (one such message made every later one of Open MPI's tag_bw
 * go by rendezvous: 40000 B at 4.7 GB/s instead of 18). Once they are all out (that many are
 * buffered or being placed: a receiver that really falls behind) or none fits it (larger than
 * TAG_UNEXP_BUF_PIECES: a forced threshold), each further one would cost a fresh allocation
 * that page-faults: EAGER_BUFFER to ep, unless told already (or restricted more by a bound:
 * EAGER_BUFFER replaces its EAGER_ON). Not on a byte stream (tcp): its sender's queue and
 * socket hold megabytes in flight (Open MPI's tag_bw at 40000 B: 90-120 messages buffered
 * before any restriction could take effect), which its large frames bring into recycled
 * buffers kept up to FERRY_TAG_SPARE_MAX; only the backlog's bounds restrict it, and EAGER_SMALL
 * lifts when the backlog halved, where EAGER_BUFFER stayed for the rest of such a run (at half
 * the bandwidth: a rendezvous costs a tcp stream two more frames). */
static fy_noinline void tag_flow_pieces_unexpected(ferry_worker_t *worker, ferry_ep_t *ep,
                                                   size_t length)
{
    fy_tag_ep_t *tep = fy_tag_ep_of(ep);
    if (tep->told_buffer || (ep->caps.flags & FY_TL_CAP_STREAM) || ep->state != FY_EP_OPEN)
        return;
    unsigned out = tag_pieces_out(fy_tag_worker_of(worker));
    if (length <= TAG_UNEXP_BUF_PIECES && out < TAG_PIECES_OUT_MAX)
        return;
    tep->told_buffer = 1;
    tep->rts_posted = 0;
    if (tep->buffer_told <= TAG_FLOW_BUFFER_LIFT_MAX_STEPS)
        tep->buffer_told++;
    ep->counters.tag_flow_limited++;
    fy_debug("tagged messages: an eager message in pieces (%zu bytes) from endpoint %p found no "
             "receive posted, with %u recycled buffers for such messages out: EAGER_BUFFER to it",
             length, (void *)ep, out);
    if (tep->told_limit == 0)
        tag_flow_send(worker, ep, TAG_FLOW_BUFFER);
}

/* An RTS from ep, told EAGER_BUFFER, found its receive posted (posted true) or not: after
 * TAG_FLOW_BUFFER_LIFT << 2 * (buffer_told - 1) in a row that did, EAGER_ON to it (unless a bound
 * restricts it: then tag_flow_check_on sends it). */
static fy_noinline void tag_flow_rts_arrived(ferry_worker_t *worker, ferry_ep_t *ep, bool posted)
{
    fy_tag_ep_t *tep = fy_tag_ep_of(ep);
    if (!posted) {
        tep->rts_posted = 0;
        return;
    }
    if (++tep->rts_posted < TAG_FLOW_BUFFER_LIFT << 2 * (tep->buffer_told - 1))
        return;
    fy_debug("tagged messages: %u RTS in a row from endpoint %p found their receive posted: "
             "EAGER_BUFFER lifted",
             tep->rts_posted, (void *)ep);
    tep->told_buffer = 0;
    tep->rts_posted = 0;
    if (tep->told_limit == 0 && ep->state == FY_EP_OPEN)
        tag_flow_send(worker, ep, TAG_FLOW_ON);
}

/* The buffered messages or bytes went past a watch mark (tag_unexpected_eager) with an eager
 * message of length bytes from ep: keep the peaks (the worker's counters, worker-wide: in
 * retired, which endpoints never add to), set the marks again, and if a bound was crossed,
 * restrict ep's eager sends (EAGER_SMALL past the bytes, EAGER_OFF past the messages) unless
 * they are restricted that much already. */
static fy_noinline void tag_unexpected_grew(ferry_worker_t *worker, ferry_ep_t *ep, size_t length)
{
    fy_tag_worker_t *tw = fy_tag_worker_of(worker);
    fy_tag_ep_t *tep = fy_tag_ep_of(ep);
    ferry_counters_t *peaks = &worker->retired;
    if (tw->unexpected_count > peaks->tag_unexpected_peak_count)
        peaks->tag_unexpected_peak_count = tw->unexpected_count;
    if (tw->unexpected_bytes > peaks->tag_unexpected_peak_bytes)
        peaks->tag_unexpected_peak_bytes = tw->unexpected_bytes;
    tw->count_watch = peaks->tag_unexpected_peak_count < tw->unexpected_count_max
                          ? peaks->tag_unexpected_peak_count
                          : tw->unexpected_count_max;
    tw->bytes_watch = peaks->tag_unexpected_peak_bytes < tw->unexpected_max
                          ? peaks->tag_unexpected_peak_bytes
                          : tw->unexpected_max;
    unsigned limit = 0;
    if (tw->unexpected_count > tw->unexpected_count_max)
        limit = TAG_LIMIT_OFF;
    else if (tw->unexpected_bytes > tw->unexpected_max && length > TAG_FLOW_SMALL_MAX)
        limit = TAG_LIMIT_SMALL;
    if (fy_likely(limit <= tep->told_limit) || ep->state != FY_EP_OPEN)
        return;
    unsigned eager = limit == TAG_LIMIT_OFF ? TAG_FLOW_OFF : TAG_FLOW_SMALL;
    fy_debug("tagged messages: %llu unexpected messages, %llu bytes of the larger ones "
             "buffered (FERRY_TAG_UNEXPECTED_COUNT %llu, FERRY_TAG_UNEXPECTED_MAX %llu): "
             "EAGER_%s to endpoint %p",
             (unsigned long long)tw->unexpected_count, (unsigned long long)tw->unexpected_bytes,
             (unsigned long long)tw->unexpected_count_max, (unsigned long long)tw->unexpected_max,
             tag_flow_name(eager), (void *)ep);
    if (tep->told_limit == 0)
        fy_list_push_tail(&tw->flow_off, &tep->flow_link);
    tep->told_limit = (uint8_t)limit;
    ep->counters.tag_flow_limited++;
    tag_flow_send(worker, ep, eager);
}

/* Give back a buffer of class c (tag_spare_get): kept for reuse up to the class's floor, and
 * beyond it while all kept stays within FERRY_TAG_SPARE_MAX; else freed. */
static void tag_spare_put(fy_tag_worker_t *tw, unsigned c, void *buf)
{
    tw->spare_out[c]--;
    if (tw->spare_count[c] < tag_spare_floor[c] ||
        tw->spare_bytes + tag_spare_size[c] <= tw->spare_max) {
        *(void **)buf = tw->spare_bufs[c];
        tw->spare_bufs[c] = buf;
        tw->spare_count[c]++;
        tw->spare_bytes += tag_spare_size[c];
    } else {
        free(buf);
    }
}

static void tag_unexp_release(ferry_worker_t *worker, tag_unexp_t *u)
{
    fy_tag_worker_t *tw = fy_tag_worker_of(worker);
    switch (u->data_kind) {
    case TAG_DATA_INLINE:
        break;
    case TAG_DATA_SPARE:
        tag_spare_put(tw, tag_spare_class(u->length), u->data);
        break;
    case TAG_DATA_MALLOC:
        free(u->data);
        break;
    case TAG_DATA_AM:
        ferry_am_data_release(worker, u->data);
        break;
    }
    u->data = NULL;
    u->data_kind = TAG_DATA_INLINE;
    tw->unexpected_bytes -= u->accounted;
    u->accounted = 0;
    if (u->kind == TAG_UNEXP_EAGER)
        tw->unexpected_count--;
    tag_pool_put(&tw->unexp, u);
}

/* A recycled buffer of class c (tag_spare_class), or a new one; NULL when out of memory. */
static void *tag_spare_get(fy_tag_worker_t *tw, unsigned c)
{
    void *buf = tw->spare_bufs[c];
    if (buf != NULL) {
        tw->spare_bufs[c] = *(void **)buf;
        tw->spare_count[c]--;
        tw->spare_bytes -= tag_spare_size[c];
        tw->spare_out[c]++;
        return buf;
    }
    buf = malloc(tag_spare_size[c]);
    if (buf == NULL)
        fy_error("malloc(%zu) for an unexpected tagged message failed", tag_spare_size[c]);
    else
        tw->spare_out[c]++;
    return buf;
}

/* Whether an unexpected eager message stays in the transport's buffer: a private one (larger
 * than what the transport copies through a shared buffer) is kept as it is; a shared one is
 * copied out so that it returns at once. */
static bool tag_unexp_keeps(const ferry_ep_t *ep, size_t header_length, size_t length,
                            unsigned flags)
{
    size_t apart = ep->caps.header_apart >= header_length
                       ? header_length
                       : 0; /* the header travelled beside the shared buffer */
    return (flags & FERRY_AM_RECV_KEEPABLE) && length + header_length > ep->caps.max_bcopy + apart;
}

/* An eager message no receive was posted for: keep it (never drop it, unless out of memory).
 * flags FY_AM_RECV_PLACED: data is a recycled buffer of ours (tag_place_eager), kept as it is
 * (FERRY_INPROGRESS). */
static ferry_status_t tag_unexpected_eager(ferry_worker_t *worker, ferry_ep_t *ep,
                                           const tag_wire_eager_t *eager, size_t header_length,
                                           void *data, size_t length, unsigned flags)
{
    fy_tag_worker_t *tw = fy_tag_worker_of(worker);
    ferry_status_t result = FERRY_OK;
    uint64_t tag = eager->tag;
    tag_unexp_t *u = tag_pool_get(&tw->unexp, TAG_MAGIC_UNEXP);

    if (u == NULL)
        goto err_nomem;
    u->ep = ep;
    u->peer = ep->peer.worker_uuid;
    u->flags = eager->flags;
    u->imm = eager->imm;
    u->sync_id = eager->send_id;
    u->kind = TAG_UNEXP_EAGER;
    u->probed = false;
    u->status = FERRY_OK;
    u->tag = tag;
    u->length = length;
    if (flags & FY_AM_RECV_PLACED) {
        u->data_kind = TAG_DATA_SPARE;
        u->data = data;
        result = FERRY_INPROGRESS;
    } else if (length <= TAG_UNEXP_INLINE) {
        u->data_kind = TAG_DATA_INLINE;
        u->data = u->inline_data;
    } else if (length > TAG_UNEXP_BUF && tag_unexp_keeps(ep, header_length, length, flags)) {
        u->data_kind = TAG_DATA_AM;
        u->data = data;
        result = FERRY_INPROGRESS;
    } else if (length <= TAG_UNEXP_BUF_LARGE) {
        u->data_kind = TAG_DATA_SPARE;
        u->data = tag_spare_get(tw, tag_spare_class(length));
    } else {
        u->data_kind = TAG_DATA_MALLOC;
        u->data = malloc(length);
        if (u->data == NULL)
            fy_error("malloc(%zu) for an unexpected tagged message failed", length);
    }
    if (u->data == NULL) {
        u->data_kind = TAG_DATA_INLINE;
        tag_pool_put(&tw->unexp, u);
        goto err_nomem;
    }
    if (result == FERRY_OK)
        fy_copy(u->data, data, length);
    u->accounted = 0;
    if (length > TAG_FLOW_SMALL_MAX) {
        u->accounted = length;
        tw->unexpected_bytes += length;
    }
    tw->unexpected_count++;
    fy_list_push_tail(&tw->unexpected, &u->obj.link);
    /* one compare each while the backlog stays below its peaks and the bounds */
    if (fy_unlikely(tw->unexpected_count > tw->count_watch ||
                    tw->unexpected_bytes > tw->bytes_watch))
        tag_unexpected_grew(worker, ep, length);
    return result;

err_nomem:
    fy_error("tagged messages: an unexpected message of %zu bytes (tag 0x%llx) from endpoint "
             "%p is LOST: out of memory",
             length, (unsigned long long)tag, (void *)ep);
    return FERRY_OK;
}

/* The first posted receive (in post order) that takes a message of tag from peer. */
static tag_recv_t *tag_match_posted(fy_tag_worker_t *tw, uint64_t tag, ferry_peer_id_t peer)
{
    for (fy_list_link_t *l = fy_list_first(&tw->posted); l != fy_list_end(&tw->posted);
         l = l->next) {
        tag_recv_t *recv = fy_container_of(l, tag_recv_t, obj.link);
        if (((tag ^ recv->tag) & recv->tag_mask) == 0 &&
            (recv->source == FERRY_PEER_ANY || recv->source == peer))
            return recv;
    }
    return NULL;
}

/* The first unexpected message (in arrival order) of (tag, mask) from source. */
static tag_unexp_t *tag_match_unexpected(fy_tag_worker_t *tw, ferry_peer_id_t source, uint64_t tag,
                                         uint64_t mask)
{
    for (fy_list_link_t *l = fy_list_first(&tw->unexpected); l != fy_list_end(&tw->unexpected);
         l = l->next) {
        tag_unexp_t *u = fy_container_of(l, tag_unexp_t, obj.link);
        if (((u->tag ^ tag) & mask) == 0 && (source == FERRY_PEER_ANY || u->peer == source))
            return u;
    }
    return NULL;
}

/* Receive the unexpected (or probed) message u into iov. Eager: copied now (FERRY_OK or
 * FERRY_ERR_MESSAGE_TRUNCATED, comp untouched). RTS: the rendezvous starts (FERRY_INPROGRESS).
 * Nothing changes on an error. */
static ferry_status_t tag_recv_message(ferry_worker_t *worker, tag_unexp_t *u,
                                       const ferry_iov_t *iov, size_t iovcnt, uint64_t length,
                                       ferry_tag_info_t *info, ferry_completion_t *comp)
{
    ferry_status_t status;

    if (u->kind == TAG_UNEXP_EAGER) {
        fy_list_remove(&u->obj.link);
        status = tag_scatter_message(iov, iovcnt, u->data, (size_t)u->length);
        tag_count_received(worker, u->ep, u->length);
        tag_info_fill_unexp(info, u);
        if (u->flags & TAG_FLAGS_DONE_ON_MATCH)
            tag_rndv_sync_ack(worker, u->ep, u->sync_id); /* matched: its sender completes */
        tag_unexp_release(worker, u);
        tag_flow_check_on(worker);
        return status;
    }
    tag_recv_t *recv = tag_recv_alloc(worker, iov, iovcnt, length, info, comp, &status);
    if (recv == NULL)
        return status;
    fy_list_remove(&u->obj.link);
    recv->tag = u->tag;
    recv->tag_mask = UINT64_MAX;
    recv->source = u->peer;
    if (u->status != FERRY_OK || u->ep == NULL) {
        tag_info_fill_unexp(info, u);
        tag_recv_finish(recv, u->status != FERRY_OK ? u->status : FERRY_ERR_CONNECTION_RESET);
    } else {
        tag_rndv_recv_start(recv, u->ep, &u->rts);
    }
    tag_unexp_release(worker, u);
    return FERRY_INPROGRESS;
}

/* ------------------------------------------------------------------ handlers */

static bool tag_decode(ferry_worker_t *worker, ferry_ep_t *ep, unsigned id, const void *header,
                       size_t header_length, size_t length, tag_wire_msg_t *msg)
{
    const char *why = NULL;
    if (fy_likely(tag_wire_decode(id, header, header_length, length, msg, &why) == FERRY_OK))
        return true;
    tag_warn(worker, TAG_WARN_MALFORMED,
             "malformed message (id %u, %zu-byte header, %zu-byte payload) from endpoint %p: %s",
             id, header_length, length, (void *)ep, why);
    return false;
}

/* An EAGER message with its decoded header arrived: the first posted receive that takes it gets
 * it, else it waits in the unexpected queue. Inlined into both cases of tag_on_eager: in the
 * plain one (flags 0, no immediate data) the compiler drops the flag branches. */
static fy_always_inline ferry_status_t tag_eager_arrived(ferry_worker_t *worker,
                                                         const tag_wire_eager_t *eager,
                                                         size_t header_length, void *data,
                                                         size_t length,
                                                         const ferry_am_recv_params_t *params)
{
    ferry_ep_t *ep = params->reply_ep;
    tag_recv_t *recv = tag_match_posted(fy_tag_worker_of(worker), eager->tag, params->peer);
    if (fy_likely(recv != NULL)) {
        ferry_status_t status = tag_scatter_message(recv->buf.iov, recv->buf.iovcnt, data, length);
        tag_count_received(worker, ep, length);
        tag_info_fill(recv->info, ep, params->peer, eager->tag, length, eager->imm, eager->flags);
        tag_recv_finish(recv, status);
        if (fy_unlikely(eager->flags & TAG_FLAGS_DONE_ON_MATCH))
            tag_rndv_sync_ack(worker, ep, eager->send_id); /* matched: its sender completes */
        return FERRY_OK;
    }
    return tag_unexpected_eager(worker, ep, eager, header_length, data, length, params->flags);
}

/* An EAGER header the plain fast case did not take: one with immediate data only (the second
 * fast case, tag_wire_eager_imm), else decoded in full (other flags, or not a valid header). */
static fy_hot fy_noinline ferry_status_t tag_on_eager_decoded(ferry_worker_t *worker,
                                                              const void *header,
                                                              size_t header_length, void *data,
                                                              size_t length,
                                                              const ferry_am_recv_params_t *params)
{
    tag_wire_eager_t eager = {.version = TAG_WIRE_VERSION, .flags = TAG_FLAG_IMM};
    if (tag_wire_eager_imm(header, header_length, &eager.tag, &eager.imm))
        return tag_eager_arrived(worker, &eager, header_length, data, length, params);
    tag_wire_msg_t msg;
    if (!tag_decode(worker, params->reply_ep, FY_AM_ID_TAG_EAGER, header, header_length, length,
                    &msg))
        return FERRY_OK;
    return tag_eager_arrived(worker, &msg.u.eager, header_length, data, length, params);
}

/* Placement (proto/am.h) of an EAGER payload that the transport receives in pieces (more than
 * one of its buffers: shm fragments, tcp's large frames): straight into the first posted
 * receive that takes it when that receive's first piece holds the whole message; else NULL (the
 * transport reassembles it, and tag_on_eager matches it on delivery like any eager message).
 * The receive is matched now: it leaves the posted queue and is the endpoint's `placing` until
 * the message is delivered (tag_eager_placed) or the endpoint stops (fy_tag_ep_failed). Matching
 * at the first piece keeps the order: the endpoint delivers nothing else before its last one. */
static void *tag_place_eager(void *arg, ferry_ep_t *ep, const void *header, size_t header_length,
                             size_t length)
{
    ferry_worker_t *worker = arg;
    fy_tag_ep_t *tep = fy_tag_ep_of(ep);
    tag_wire_msg_t msg;
    const char *why;
    if (tep->placing != NULL || tep->placing_buf != NULL ||
        tag_wire_decode(FY_AM_ID_TAG_EAGER, header, header_length, length, &msg, &why) != FERRY_OK)
        return NULL; /* a bad header is refused, and warned about, when delivered */
    tag_recv_t *recv =
        tag_match_posted(fy_tag_worker_of(worker), msg.u.eager.tag, ep->peer.worker_uuid);
    if (recv == NULL) {
        fy_tag_worker_t *tw = fy_tag_worker_of(worker);
        bool stream = ep->caps.flags & FY_TL_CAP_STREAM;
        tag_flow_pieces_unexpected(worker, ep, length); /* its sender may have to send them
                                                         * by RTS */
        if (length <= TAG_UNEXP_BUF_LARGE ||
            length > (stream ? TAG_UNEXP_BUF_STREAM : TAG_UNEXP_BUF_PIECES) ||
            (!stream && tag_pieces_out(tw) >= TAG_PIECES_OUT_MAX))
            return NULL; /* reassembled by the transport (in a buffer of its length, not a
                          * fresh one of a class's size), matched on delivery */
        /* into a recycled buffer, matched on delivery (tag_eager_placed_unexpected) */
        tep->placing_class = tag_spare_class(length);
        tep->placing_buf = tag_spare_get(tw, tep->placing_class);
        return tep->placing_buf;
    }
    if (recv->buf.iovcnt == 0 || recv->buf.iov[0].length < length)
        return NULL; /* truncated or scattered: matched on delivery */
    fy_list_remove(&recv->obj.link);
    recv->state = TAG_RECV_PLACED;
    recv->ep = ep;
    tep->placing = recv;
    return recv->buf.iov[0].buffer;
}

/* The EAGER message the transport wrote into the endpoint's placing_buf: matched now like any
 * eager message (a receive posted since its first piece takes it), else kept in that buffer
 * in the unexpected queue. */
static fy_noinline ferry_status_t tag_eager_placed_unexpected(ferry_worker_t *worker,
                                                              const void *header,
                                                              size_t header_length, void *data,
                                                              size_t length,
                                                              const ferry_am_recv_params_t *params)
{
    fy_tag_worker_t *tw = fy_tag_worker_of(worker);
    tag_wire_msg_t msg;
    fy_tag_ep_of(params->reply_ep)->placing_buf = NULL;
    /* the header placement decoded (the transport's private copy): refused only by a bug */
    if (!tag_decode(worker, params->reply_ep, FY_AM_ID_TAG_EAGER, header, header_length, length,
                    &msg) ||
        tag_eager_arrived(worker, &msg.u.eager, header_length, data, length, params) !=
            FERRY_INPROGRESS)
        tag_spare_put(tw, tag_spare_class(length), data); /* not kept: copied out, or lost */
    return FERRY_OK;
}

/* The EAGER message whose payload the transport wrote into the endpoint's placing receive (or
 * placing_buf). */
static fy_noinline ferry_status_t tag_eager_placed(ferry_worker_t *worker, const void *header,
                                                   size_t header_length, void *data, size_t length,
                                                   const ferry_am_recv_params_t *params)
{
    ferry_ep_t *ep = params->reply_ep;
    fy_tag_ep_t *tep = fy_tag_ep_of(ep);
    tag_recv_t *recv = tep->placing;
    tag_wire_msg_t msg;
    if (tep->placing_buf != NULL && data == tep->placing_buf)
        return tag_eager_placed_unexpected(worker, header, header_length, data, length, params);
    if (recv == NULL || recv->buf.iov[0].buffer != data) {
        tag_warn(worker, TAG_WARN_WRONG_STATE,
                 "EAGER (%zu bytes) from endpoint %p delivered into a placement it was not given",
                 length, (void *)ep);
        return FERRY_OK;
    }
    tep->placing = NULL;
    /* the header placement decoded (the transport's private copy): refused only by a bug */
    if (!tag_decode(worker, ep, FY_AM_ID_TAG_EAGER, header, header_length, length, &msg)) {
        tag_recv_finish(recv, FERRY_ERR_PROTOCOL);
        return FERRY_OK;
    }
    tag_count_received(worker, ep, length);
    tag_info_fill(recv->info, ep, params->peer, msg.u.eager.tag, length, msg.u.eager.imm,
                  msg.u.eager.flags);
    tag_recv_finish(recv, FERRY_OK);
    if (msg.u.eager.flags & TAG_FLAGS_DONE_ON_MATCH)
        tag_rndv_sync_ack(worker, ep, msg.u.eager.send_id); /* matched: its sender completes */
    return FERRY_OK;
}

static fy_hot ferry_status_t tag_on_eager(void *arg, const void *header, size_t header_length,
                                          void *data, size_t length,
                                          const ferry_am_recv_params_t *params)
{
    tag_wire_eager_t eager = {.version = TAG_WIRE_VERSION};
    if (fy_unlikely(params->flags & FY_AM_RECV_PLACED))
        return tag_eager_placed(arg, header, header_length, data, length, params);
    if (fy_unlikely(!tag_wire_eager_plain(header, header_length, &eager.tag)))
        return tag_on_eager_decoded(arg, header, header_length, data, length, params);
    return tag_eager_arrived(arg, &eager, header_length, data, length, params);
}

static ferry_status_t tag_on_rts(void *arg, const void *header, size_t header_length, void *data,
                                 size_t length, const ferry_am_recv_params_t *params)
{
    ferry_worker_t *worker = arg;
    fy_tag_worker_t *tw = fy_tag_worker_of(worker);
    ferry_ep_t *ep = params->reply_ep;
    tag_wire_msg_t msg;
    (void)data;

    if (!tag_decode(worker, ep, FY_AM_ID_TAG_RTS, header, header_length, length, &msg))
        return FERRY_OK;
    tag_recv_t *recv = tag_match_posted(tw, msg.u.rts.tag, params->peer);
    if (fy_unlikely(fy_tag_ep_of(ep)->told_buffer))
        tag_flow_rts_arrived(worker, ep, recv != NULL);
    if (recv != NULL) {
        fy_list_remove(&recv->obj.link);
        tag_rndv_recv_start(recv, ep, &msg.u.rts);
        return FERRY_OK;
    }
    tag_unexp_t *u = tag_pool_get(&tw->unexp, TAG_MAGIC_UNEXP);
    if (u == NULL) {
        /* tell the sender rather than leave it waiting */
        tag_wire_msg_t done = {.id = FY_AM_ID_TAG_DONE};
        done.u.done.version = TAG_WIRE_VERSION;
        done.u.done.target = TAG_DONE_TO_SEND;
        done.u.done.final = 1;
        done.u.done.status = FERRY_ERR_NO_MEMORY;
        done.u.done.id = msg.u.rts.send_id;
        tag_ctl_send(worker, ep, &done);
        return FERRY_OK;
    }
    u->ep = ep;
    u->peer = params->peer;
    u->flags = 0;
    u->imm = 0;
    u->sync_id = 0;
    u->kind = TAG_UNEXP_RTS;
    u->probed = false;
    u->status = FERRY_OK;
    u->tag = msg.u.rts.tag;
    u->length = msg.u.rts.length;
    u->accounted = 0;
    u->data = NULL;
    u->data_kind = TAG_DATA_INLINE;
    u->rts = msg.u.rts;
    fy_list_push_tail(&tw->unexpected, &u->obj.link);
    return FERRY_OK;
}

static ferry_status_t tag_on_cts(void *arg, const void *header, size_t header_length, void *data,
                                 size_t length, const ferry_am_recv_params_t *params)
{
    ferry_worker_t *worker = arg;
    tag_wire_msg_t msg;
    (void)data;
    if (tag_decode(worker, params->reply_ep, FY_AM_ID_TAG_CTS, header, header_length, length, &msg))
        tag_rndv_on_cts(worker, params->reply_ep, &msg.u.cts);
    return FERRY_OK;
}

static ferry_status_t tag_on_data(void *arg, const void *header, size_t header_length, void *data,
                                  size_t length, const ferry_am_recv_params_t *params)
{
    ferry_worker_t *worker = arg;
    tag_wire_msg_t msg;
    if (tag_decode(worker, params->reply_ep, FY_AM_ID_TAG_DATA, header, header_length, length,
                   &msg))
        tag_rndv_on_data(worker, params->reply_ep, &msg.u.data, data, length);
    return FERRY_OK;
}

static ferry_status_t tag_on_done(void *arg, const void *header, size_t header_length, void *data,
                                  size_t length, const ferry_am_recv_params_t *params)
{
    ferry_worker_t *worker = arg;
    tag_wire_msg_t msg;
    (void)data;
    if (tag_decode(worker, params->reply_ep, FY_AM_ID_TAG_DONE, header, header_length, length,
                   &msg))
        tag_rndv_on_done(worker, params->reply_ep, &msg.u.done);
    return FERRY_OK;
}

static ferry_status_t tag_on_cookie(void *arg, const void *header, size_t header_length, void *data,
                                    size_t length, const ferry_am_recv_params_t *params)
{
    ferry_worker_t *worker = arg;
    tag_wire_msg_t msg;
    (void)data;
    if (tag_decode(worker, params->reply_ep, FY_AM_ID_TAG_COOKIE, header, header_length, length,
                   &msg))
        tag_rndv_on_cookie(worker, params->reply_ep, &msg.u.cookie);
    return FERRY_OK;
}

static ferry_status_t tag_on_flow(void *arg, const void *header, size_t header_length, void *data,
                                  size_t length, const ferry_am_recv_params_t *params)
{
    ferry_worker_t *worker = arg;
    tag_wire_msg_t msg;
    (void)data;
    if (tag_decode(worker, params->reply_ep, FY_AM_ID_TAG_FLOW, header, header_length, length,
                   &msg)) {
        unsigned eager = msg.u.flow.eager;
        fy_debug("tagged messages: EAGER_%s from endpoint %p", tag_flow_name(eager),
                 (void *)params->reply_ep);
        fy_tag_ep_of(params->reply_ep)->eager_limit = eager == TAG_FLOW_ON       ? 0
                                                      : eager == TAG_FLOW_BUFFER ? TAG_LIMIT_BUFFER
                                                      : eager == TAG_FLOW_SMALL  ? TAG_LIMIT_SMALL
                                                                                 : TAG_LIMIT_OFF;
    }
    return FERRY_OK;
}

/* ------------------------------------------------------------------ public calls */

/* Whether ep's receiver lets a message of length bytes go eagerly (its threshold aside). */
static inline bool tag_flow_allows(const ferry_ep_t *ep, uint64_t length)
{
    unsigned limit = fy_tag_ep_of(ep)->eager_limit;
    return limit == 0 ||
           (limit == TAG_LIMIT_BUFFER && length <= fy_tag_ep_of(ep)->eager_buffer_max) ||
           (limit == TAG_LIMIT_SMALL && length <= TAG_FLOW_SMALL_MAX);
}

/* An eager send started (FERRY_OK, FERRY_INPROGRESS) counts; returns status. */
static fy_always_inline ferry_status_t tag_eager_counted(ferry_ep_t *ep, uint64_t length,
                                                         ferry_status_t status)
{
    if (fy_likely(status == FERRY_OK || status == FERRY_INPROGRESS))
        tag_count_sent(ep, length, FERRY_COUNTERS_MODE_EAGER);
    return status;
}

/* The eager send of a message that completes when the transport took it (no SYNC, no ACK),
 * with immediate data (imm_flags TAG_FLAG_IMM: the 16-byte header below 2^32, else the 32-byte
 * one) or without (0: 16 bytes), on an open endpoint, iov checked; one piece goes straight to
 * the transport (fy_am_send_one). */
static fy_always_inline ferry_status_t tag_send_eager_plain(ferry_ep_t *ep, const ferry_iov_t *iov,
                                                            size_t iovcnt, uint64_t length,
                                                            uint64_t tag, uint8_t imm_flags,
                                                            uint64_t imm, ferry_completion_t *comp)
{
    tag_wire_eager_t header = {
        .version = TAG_WIRE_VERSION, .flags = imm_flags, .tag = htole64(tag)};
    size_t header_length = TAG_WIRE_EAGER_SHORT;
    if (tag_wire_eager_is_short(imm_flags, imm)) {
        header.imm32 = htole32((uint32_t)imm); /* 0 without imm_flags */
    } else {
        header.imm = htole64(imm);
        header_length = sizeof(header);
    }
    ferry_status_t status =
        iovcnt == 1 ? fy_am_send_one(ep, FY_AM_ID_TAG_EAGER, &header, header_length, iov, comp)
                    : fy_am_send_internal(ep, FY_AM_ID_TAG_EAGER, &header, header_length, iov,
                                          iovcnt, comp);
    return tag_eager_counted(ep, length, status);
}

/* The send of ferry_tag_send and ferry_tag_send_ext (params NULL: a plain send; params->flags
 * checked by the caller), every case. */
static fy_noinline ferry_status_t tag_send_any(ferry_ep_t *ep, const ferry_iov_t *iov,
                                               size_t iovcnt, uint64_t tag,
                                               const ferry_tag_send_params_t *params,
                                               ferry_completion_t *comp)
{
    uint64_t length;

    if (fy_unlikely(ep == NULL || tag_iov_check(iov, iovcnt, &length) != FERRY_OK))
        return FERRY_ERR_INVALID_PARAM;
    if (fy_unlikely(ep->state != FY_EP_OPEN))
        return ep->error;
    if (fy_unlikely(!fy_tag_ep_of(ep)->ready))
        tag_rndv_ep_setup(ep->worker, ep);
    const fy_tag_ep_t *tep = fy_tag_ep_of(ep);
    /* above eager_max, up to what the transport places (eager_measured): eager or a rendezvous
     * mode, as measured (0: tag_rndv_choose's) */
    unsigned mode = 0;
    tag_calib_ticket_t ticket = {0, 0, 0};
    bool allowed = tag_flow_allows(ep, length);
    bool eager = length <= tep->eager_max && allowed;
    if (eager && length >= tep->reply_min && comp != NULL) {
        mode = tag_reply_choose(ep, iovcnt);
        eager = mode == FERRY_COUNTERS_MODE_EAGER;
    } else if (tep->eager_measured && length > tep->eager_max &&
               length <= tag_eager_placed_max(ep)) {
        /* restricted by the receiver (!allowed): the class's rendezvous mode, or its blocks
         * without the eager ones (FERRY_COUNTERS_MODE_EAGER back: tag_rndv_choose's) */
        mode = tag_calib_eager_choose(ep->worker, ep, length, !allowed, &ticket);
        eager = allowed && mode == FERRY_COUNTERS_MODE_EAGER;
    }
    if (fy_likely(eager)) {
        ferry_status_t status;
        bool sync = params != NULL && (params->flags & FERRY_TAG_SEND_SYNC);
        bool imm = params != NULL && (params->flags & FERRY_TAG_SEND_IMM);
        if (!sync && !ticket.ack) {
            status = tag_send_eager_plain(ep, iov, iovcnt, length, tag, imm ? TAG_FLAG_IMM : 0,
                                          imm ? params->imm : 0, comp);
        } else {
            tag_wire_eager_t header = {.version = TAG_WIRE_VERSION,
                                       .flags = imm ? TAG_FLAG_IMM : 0,
                                       .tag = htole64(tag),
                                       .imm = htole64(imm ? params->imm : 0)};
            /* SYNC, or the last send of an eager calibration block, which completes on the
             * match too (TAG_FLAG_ACK: the receiver is not told it was synchronous); the ticket
             * goes with the send only then */
            header.flags |= sync ? TAG_FLAG_SYNC : TAG_FLAG_ACK;
            status = tag_eager_counted(ep, length,
                                       tag_rndv_send_sync_eager(ep, iov, iovcnt, length, &header,
                                                                ticket.ack ? &ticket : NULL, comp));
            if (ticket.ack)
                return status; /* the sync path cancelled the ticket if it did not start */
        }
        if (status != FERRY_OK && status != FERRY_INPROGRESS)
            tag_calib_ticket_cancel(ep->worker, &ticket, length);
        return status;
    }
    /* a rendezvous completes after the match: synchronous by nature */
    bool inject =
        length <= tag_inject_max(ep) && !(params != NULL && (params->flags & FERRY_TAG_SEND_SYNC));
    return tag_rndv_send(ep->worker, ep, iov, iovcnt, length, tag, params, inject,
                         (tag_rndv_mode_t)mode, &ticket, comp);
}

/* A send without flags (params NULL) or with immediate data only (params->flags
 * FERRY_TAG_SEND_IMM: an MPI layer's every message). The common case inline: one valid piece,
 * eager, on an endpoint set up; everything else in tag_send_any (which checks in the documented
 * order). */
static fy_always_inline ferry_status_t tag_send(ferry_ep_t *ep, const ferry_iov_t *iov,
                                                size_t iovcnt, uint64_t tag,
                                                const ferry_tag_send_params_t *params,
                                                ferry_completion_t *comp)
{
    if (fy_likely(ep != NULL && iovcnt == 1 && iov != NULL &&
                  (iov->buffer != NULL || iov->length == 0))) {
        const fy_tag_ep_t *tep = fy_tag_ep_of(ep);
        if (fy_likely(ep->state == FY_EP_OPEN && tep->ready && iov->length <= tep->eager_max &&
                      !tep->eager_limit) &&
            (fy_likely(iov->length < tep->reply_min) || comp == NULL || !tag_reply_due(ep)))
            return tag_send_eager_plain(ep, iov, 1, iov->length, tag,
                                        params != NULL ? TAG_FLAG_IMM : 0,
                                        params != NULL ? params->imm : 0, comp);
    }
    return tag_send_any(ep, iov, iovcnt, tag, params, comp);
}

static inline ferry_status_t locked_tag_send(ferry_ep_t *ep, const ferry_iov_t *iov, size_t iovcnt,
                                             uint64_t tag, ferry_completion_t *comp)
{
    if (ep != NULL && fy_ep_forked(ep))
        return FERRY_ERR_FORKED;
    return tag_send(ep, iov, iovcnt, tag, NULL, comp);
}

static inline ferry_status_t locked_tag_send_ext(ferry_ep_t *ep, const ferry_iov_t *iov,
                                                 size_t iovcnt, uint64_t tag,
                                                 const ferry_tag_send_params_t *params,
                                                 ferry_completion_t *comp)
{
    if (ep != NULL && fy_ep_forked(ep))
        return FERRY_ERR_FORKED;
    if (fy_likely(params == NULL || params->flags == 0))
        return tag_send(ep, iov, iovcnt, tag, NULL, comp);
    if (fy_likely(params->flags == FERRY_TAG_SEND_IMM))
        return tag_send(ep, iov, iovcnt, tag, params, comp);
    if ((params->flags & ~(FERRY_TAG_SEND_IMM | FERRY_TAG_SEND_SYNC)) != 0 ||
        ((params->flags & FERRY_TAG_SEND_SYNC) && comp == NULL))
        return FERRY_ERR_INVALID_PARAM;
    return tag_send_any(ep, iov, iovcnt, tag, params, comp);
}

/* The sends of a multi-thread worker whose lock another thread holds: wait for it out of line
 * (as am_send_contended in am.c). */
static fy_noinline ferry_status_t tag_send_contended(ferry_ep_t *ep, const ferry_iov_t *iov,
                                                     size_t iovcnt, uint64_t tag,
                                                     const ferry_tag_send_params_t *params,
                                                     ferry_completion_t *comp)
{
    ferry_worker_t *worker = ep->worker;
    fy_worker_lock(worker);
    ferry_status_t status_or_value = locked_tag_send_ext(ep, iov, iovcnt, tag, params, comp);
    fy_worker_unlock(worker);
    return status_or_value;
}

/* Both modes run the inline body in place, multi mode between an inline fy_worker_trylock and
 * fy_worker_unlock (as ferry_am_send; the lock is found again through ep after the body). */
FERRY_EXPORT ferry_status_t ferry_tag_send(ferry_ep_t *ep, const ferry_iov_t *iov, size_t iovcnt,
                                           uint64_t tag, ferry_completion_t *comp)
{
    ferry_worker_t *locked = fy_worker_multi(ep != NULL ? ep->worker : NULL);
    if (fy_likely(locked == NULL))
        return locked_tag_send(ep, iov, iovcnt, tag, comp);
    if (fy_unlikely(!fy_worker_trylock(locked)))
        return tag_send_contended(ep, iov, iovcnt, tag, NULL, comp);
    ferry_status_t status_or_value = locked_tag_send(ep, iov, iovcnt, tag, comp);
    fy_worker_unlock(ep->worker);
    return status_or_value;
}

FERRY_EXPORT fy_hot ferry_status_t ferry_tag_send_ext(ferry_ep_t *ep, const ferry_iov_t *iov,
                                                      size_t iovcnt, uint64_t tag,
                                                      const ferry_tag_send_params_t *params,
                                                      ferry_completion_t *comp)
{
    ferry_worker_t *locked = fy_worker_multi(ep != NULL ? ep->worker : NULL);
    if (fy_likely(locked == NULL))
        return locked_tag_send_ext(ep, iov, iovcnt, tag, params, comp);
    if (fy_unlikely(!fy_worker_trylock(locked)))
        return tag_send_contended(ep, iov, iovcnt, tag, params, comp);
    ferry_status_t status_or_value = locked_tag_send_ext(ep, iov, iovcnt, tag, params, comp);
    fy_worker_unlock(ep->worker);
    return status_or_value;
}

static inline ferry_status_t locked_tag_recv_from(ferry_worker_t *worker, ferry_peer_id_t source,
                                                  const ferry_iov_t *iov, size_t iovcnt,
                                                  uint64_t tag, uint64_t tag_mask,
                                                  ferry_tag_info_t *info, ferry_completion_t *comp)
{
    if (worker != NULL && fy_worker_forked(worker))
        return FERRY_ERR_FORKED;
    ferry_status_t status;
    uint64_t length;

    if (fy_unlikely(worker == NULL || comp == NULL ||
                    tag_iov_check(iov, iovcnt, &length) != FERRY_OK))
        return FERRY_ERR_INVALID_PARAM;
    fy_tag_worker_t *tw = fy_tag_worker_of(worker);
    if (fy_unlikely(!fy_list_is_empty(&tw->unexpected))) {
        tag_unexp_t *u = tag_match_unexpected(tw, source, tag, tag_mask);
        if (u != NULL)
            return tag_recv_message(worker, u, iov, iovcnt, length, info, comp);
    }
    tag_recv_t *recv = tag_recv_alloc(worker, iov, iovcnt, length, info, comp, &status);
    if (fy_unlikely(recv == NULL))
        return status;
    recv->tag = tag;
    recv->tag_mask = tag_mask;
    recv->source = source;
    fy_list_push_tail(&tw->posted, &recv->obj.link);
    return FERRY_INPROGRESS;
}

FERRY_EXPORT fy_hot ferry_status_t ferry_tag_recv_from(
    ferry_worker_t *worker, ferry_peer_id_t source, const ferry_iov_t *iov, size_t iovcnt,
    uint64_t tag, uint64_t tag_mask, ferry_tag_info_t *info, ferry_completion_t *comp)
{
    ferry_worker_t *locked = fy_worker_multi(worker);
    if (fy_likely(locked == NULL))
        return locked_tag_recv_from(worker, source, iov, iovcnt, tag, tag_mask, info, comp);
    fy_worker_lock(locked);
    ferry_status_t status_or_value =
        locked_tag_recv_from(worker, source, iov, iovcnt, tag, tag_mask, info, comp);
    fy_worker_unlock(locked);
    return status_or_value;
}

/* ferry_tag_recv_from's body in place (not a call of the exported function, which would check
 * the mode again behind a PLT call). */
static inline ferry_status_t locked_tag_recv(ferry_worker_t *worker, const ferry_iov_t *iov,
                                             size_t iovcnt, uint64_t tag, uint64_t tag_mask,
                                             ferry_tag_info_t *info, ferry_completion_t *comp)
{
    return locked_tag_recv_from(worker, FERRY_PEER_ANY, iov, iovcnt, tag, tag_mask, info, comp);
}

FERRY_EXPORT ferry_status_t ferry_tag_recv(ferry_worker_t *worker, const ferry_iov_t *iov,
                                           size_t iovcnt, uint64_t tag, uint64_t tag_mask,
                                           ferry_tag_info_t *info, ferry_completion_t *comp)
{
    ferry_worker_t *locked = fy_worker_multi(worker);
    if (fy_likely(locked == NULL))
        return locked_tag_recv(worker, iov, iovcnt, tag, tag_mask, info, comp);
    fy_worker_lock(locked);
    ferry_status_t status_or_value =
        locked_tag_recv(worker, iov, iovcnt, tag, tag_mask, info, comp);
    fy_worker_unlock(locked);
    return status_or_value;
}

static inline ferry_status_t locked_tag_probe_from(ferry_worker_t *worker, ferry_peer_id_t source,
                                                   uint64_t tag, uint64_t tag_mask, int remove,
                                                   ferry_tag_info_t *info,
                                                   ferry_tag_message_t **message_p)
{
    if (worker != NULL && fy_worker_forked(worker))
        return FERRY_ERR_FORKED;
    if (worker == NULL || (remove && message_p == NULL))
        return FERRY_ERR_INVALID_PARAM;
    tag_unexp_t *u = tag_match_unexpected(fy_tag_worker_of(worker), source, tag, tag_mask);
    if (u == NULL)
        return FERRY_ERR_NO_ELEM;
    tag_info_fill_unexp(info, u);
    if (remove) {
        fy_list_remove(&u->obj.link);
        fy_list_push_tail(&fy_tag_worker_of(worker)->probed, &u->obj.link);
        u->probed = true;
        *message_p = u;
    }
    return FERRY_OK;
}

FERRY_EXPORT ferry_status_t ferry_tag_probe_from(ferry_worker_t *worker, ferry_peer_id_t source,
                                                 uint64_t tag, uint64_t tag_mask, int remove,
                                                 ferry_tag_info_t *info,
                                                 ferry_tag_message_t **message_p)
{
    ferry_worker_t *locked = fy_worker_multi(worker);
    if (fy_likely(locked == NULL))
        return locked_tag_probe_from(worker, source, tag, tag_mask, remove, info, message_p);
    fy_worker_lock(locked);
    ferry_status_t status_or_value =
        locked_tag_probe_from(worker, source, tag, tag_mask, remove, info, message_p);
    fy_worker_unlock(locked);
    return status_or_value;
}

static inline ferry_status_t locked_tag_probe(ferry_worker_t *worker, uint64_t tag,
                                              uint64_t tag_mask, int remove, ferry_tag_info_t *info,
                                              ferry_tag_message_t **message_p)
{
    return ferry_tag_probe_from(worker, FERRY_PEER_ANY, tag, tag_mask, remove, info, message_p);
}

FERRY_EXPORT ferry_status_t ferry_tag_probe(ferry_worker_t *worker, uint64_t tag, uint64_t tag_mask,
                                            int remove, ferry_tag_info_t *info,
                                            ferry_tag_message_t **message_p)
{
    ferry_worker_t *locked = fy_worker_multi(worker);
    if (fy_likely(locked == NULL))
        return locked_tag_probe(worker, tag, tag_mask, remove, info, message_p);
    fy_worker_lock(locked);
    ferry_status_t status_or_value =
        locked_tag_probe(worker, tag, tag_mask, remove, info, message_p);
    fy_worker_unlock(locked);
    return status_or_value;
}

static inline ferry_status_t locked_tag_message_recv(ferry_worker_t *worker,
                                                     ferry_tag_message_t *message,
                                                     const ferry_iov_t *iov, size_t iovcnt,
                                                     ferry_tag_info_t *info,
                                                     ferry_completion_t *comp)
{
    if (worker != NULL && fy_worker_forked(worker))
        return FERRY_ERR_FORKED;
    uint64_t length;

    if (worker == NULL || message == NULL || comp == NULL ||
        tag_iov_check(iov, iovcnt, &length) != FERRY_OK)
        return FERRY_ERR_INVALID_PARAM;
    if (message->obj.magic != TAG_MAGIC_UNEXP || !fy_pool_in_use(message) || !message->probed) {
        fy_warn("ferry_tag_message_recv(%p): not a message taken by ferry_tag_probe(remove) "
                "and not received yet",
                (void *)message);
        return FERRY_ERR_INVALID_PARAM;
    }
    return tag_recv_message(worker, message, iov, iovcnt, length, info, comp);
}

FERRY_EXPORT ferry_status_t ferry_tag_message_recv(ferry_worker_t *worker,
                                                   ferry_tag_message_t *message,
                                                   const ferry_iov_t *iov, size_t iovcnt,
                                                   ferry_tag_info_t *info, ferry_completion_t *comp)
{
    ferry_worker_t *locked = fy_worker_multi(worker);
    if (fy_likely(locked == NULL))
        return locked_tag_message_recv(worker, message, iov, iovcnt, info, comp);
    fy_worker_lock(locked);
    ferry_status_t status_or_value =
        locked_tag_message_recv(worker, message, iov, iovcnt, info, comp);
    fy_worker_unlock(locked);
    return status_or_value;
}

static inline ferry_status_t locked_tag_recv_cancel(ferry_worker_t *worker,
                                                    ferry_completion_t *comp)
{
    if (worker != NULL && fy_worker_forked(worker))
        return FERRY_ERR_FORKED;
    if (worker == NULL || comp == NULL)
        return FERRY_ERR_INVALID_PARAM;
    fy_tag_worker_t *tw = fy_tag_worker_of(worker);
    for (fy_list_link_t *l = fy_list_first(&tw->posted); l != fy_list_end(&tw->posted);
         l = l->next) {
        tag_recv_t *recv = fy_container_of(l, tag_recv_t, obj.link);
        if (recv->comp == comp) {
            tag_recv_finish(recv, FERRY_ERR_CANCELED);
            return FERRY_OK;
        }
    }
    return FERRY_ERR_NO_ELEM;
}

FERRY_EXPORT ferry_status_t ferry_tag_recv_cancel(ferry_worker_t *worker, ferry_completion_t *comp)
{
    ferry_worker_t *locked = fy_worker_multi(worker);
    if (fy_likely(locked == NULL))
        return locked_tag_recv_cancel(worker, comp);
    fy_worker_lock(locked);
    ferry_status_t status_or_value = locked_tag_recv_cancel(worker, comp);
    fy_worker_unlock(locked);
    return status_or_value;
}

/* ------------------------------------------------------------------ life cycle */

static ferry_status_t tag_module_init(ferry_worker_t *worker, void **state_p)
{
    static const struct {
        unsigned id;
        ferry_am_handler_cb_t cb;
    } handlers[] = {
        {FY_AM_ID_TAG_EAGER, tag_on_eager}, {FY_AM_ID_TAG_RTS, tag_on_rts},
        {FY_AM_ID_TAG_CTS, tag_on_cts},     {FY_AM_ID_TAG_DATA, tag_on_data},
        {FY_AM_ID_TAG_DONE, tag_on_done},   {FY_AM_ID_TAG_COOKIE, tag_on_cookie},
        {FY_AM_ID_TAG_FLOW, tag_on_flow},
    };

    ferry_status_t status;
    fy_tag_worker_t *tw = calloc(1, sizeof(*tw));
    if (tw == NULL) {
        fy_error("calloc(%zu) for the tagged messages of a worker failed", sizeof(*tw));
        return FERRY_ERR_NO_MEMORY;
    }
    *state_p = tw;
    fy_list_init(&tw->posted);
    fy_list_init(&tw->unexpected);
    fy_list_init(&tw->probed);
    fy_list_init(&tw->ctl);
    fy_list_init(&tw->retry);
    fy_list_init(&tw->pump);
    fy_list_init(&tw->flow_off);
    fy_pool_init(&tw->recvs, sizeof(tag_recv_t), TAG_BLOCK_OBJECTS, "tagged receives");
    fy_pool_init(&tw->sends, sizeof(tag_send_t), TAG_BLOCK_OBJECTS, "tagged sends");
    fy_pool_init(&tw->unexp, sizeof(tag_unexp_t), TAG_BLOCK_OBJECTS, "unexpected tagged messages");
    fy_pool_init(&tw->ctls, sizeof(tag_ctl_t), TAG_BLOCK_OBJECTS, "tagged control messages");
    tw->unexpected_max = fy_config_size_in(fy_worker_config(worker), &tag_unexpected_max_var);
    tw->spare_max = fy_config_size_in(fy_worker_config(worker), &tag_spare_max_var);
    tw->unexpected_count_max =
        fy_config_size_in(fy_worker_config(worker), &tag_unexpected_count_var);
    tag_rndv_config(tw, fy_worker_config(worker));
    for (size_t i = 0; i < FERRY_ARRAY_SIZE(handlers); i++) {
        status = fy_am_set_internal_handler(worker, handlers[i].id, handlers[i].cb, worker);
        if (status != FERRY_OK)
            goto err_free_state;
    }
    /* rendezvous DATA may be received straight into the matched receive's buffer */
    status = fy_am_set_internal_place(worker, FY_AM_ID_TAG_DATA, tag_rndv_place_data);
    if (status != FERRY_OK)
        goto err_free_state;
    /* and an eager message larger than one transport buffer into the matched receive's */
    status = fy_am_set_internal_place(worker, FY_AM_ID_TAG_EAGER, tag_place_eager);
    if (status != FERRY_OK)
        goto err_free_state;
    return FERRY_OK;

err_free_state:
    *state_p = NULL;
    free(tw);
    return status;
}

/* Worker destruction: complete what still waits for its completion, release the rest. */
static void tag_release_recv(void *arg, void *object)
{
    ferry_worker_t *worker = arg;
    tag_recv_t *recv = object;
    bool deferred = fy_list_is_linked(&recv->deferred.link);
    fy_worker_undefer(worker, &recv->deferred);
    recv->inner_busy = false; /* nothing will complete it any more */
    if (recv->state != TAG_RECV_FINISHED) {
        recv->state = TAG_RECV_FINISHED;
        recv->status = FERRY_ERR_CANCELED;
        deferred = true;
    }
    tag_rndv_recv_release(recv);
    tag_iovs_release(&recv->buf);
    if (deferred)
        fy_completion_update(recv->comp, recv->status);
}

static void tag_release_send(void *arg, void *object)
{
    ferry_worker_t *worker = arg;
    tag_send_t *send = object;
    bool deferred = fy_list_is_linked(&send->deferred.link);
    fy_worker_undefer(worker, &send->deferred);
    send->inner_busy = false;
    if (send->state != TAG_SEND_FINISHED) {
        send->state = TAG_SEND_FINISHED;
        send->status = FERRY_ERR_CANCELED;
        deferred = true;
    }
    tag_rndv_send_release(send);
    tag_iovs_release(&send->buf);
    if (deferred)
        fy_completion_update(send->comp, send->status);
}

static void tag_release_unexp(void *arg, void *object)
{
    ferry_worker_t *worker = arg;
    tag_unexp_t *u = object;
    if (u->data_kind == TAG_DATA_AM)
        ferry_am_data_release(worker, u->data);
    else if (u->data_kind != TAG_DATA_INLINE)
        free(u->data);
}

static void tag_module_cleanup(ferry_worker_t *worker)
{
    fy_tag_worker_t *tw = fy_tag_worker_of(worker);
    fy_list_link_t *link;
    unsigned left = 0;

    /* receives still posted: canceled (the worker is going away) */
    while ((link = fy_list_pop_head(&tw->posted)) != NULL) {
        tag_recv_t *recv = fy_container_of(link, tag_recv_t, obj.link);
        fy_list_link_init(link);
        recv->state = TAG_RECV_FINISHED;
        fy_completion_update(recv->comp, FERRY_ERR_CANCELED);
        tag_recv_unref(recv);
    }
    /* transfers still in progress were failed with their endpoints; what is left here was
     * waiting for an internal completion that will never come any more */
    for (uint32_t i = 0; i < tw->send_table.capacity; i++)
        left += tw->send_table.slots[i] != NULL;
    for (uint32_t i = 0; i < tw->recv_table.capacity; i++)
        left += tw->recv_table.slots[i] != NULL;
    if (left > 0)
        fy_warn("ferry_worker_destroy: %u tagged transfers were still in progress; their "
                "completions report FERRY_ERR_CANCELED",
                left);
    fy_pool_destroy(&tw->recvs, tag_release_recv, worker);
    fy_pool_destroy(&tw->sends, tag_release_send, worker);
    fy_pool_destroy(&tw->unexp, tag_release_unexp, worker);
    fy_pool_destroy(&tw->ctls, NULL, NULL);
    for (unsigned c = 0; c < TAG_SPARE_CLASSES; c++) {
        while (tw->spare_bufs[c] != NULL) {
            void *buf = tw->spare_bufs[c];
            tw->spare_bufs[c] = *(void **)buf;
            free(buf);
        }
        tw->spare_count[c] = 0;
    }
    tw->spare_bytes = 0;
    tag_table_free(&tw->send_table);
    tag_table_free(&tw->recv_table);
    free(tw->calib_eager);
    free(tw);
}

static unsigned tag_module_progress(ferry_worker_t *worker)
{
    unsigned count = 0;
    if (!fy_list_is_empty(&fy_tag_worker_of(worker)->ctl))
        count += tag_ctl_progress(worker);
    return count + tag_rndv_progress(worker);
}

void fy_tag_ep_failed(ferry_ep_t *ep, ferry_status_t status)
{
    ferry_worker_t *worker = ep->worker;
    fy_tag_worker_t *tw = fy_tag_worker_of(worker);

    if (status == FERRY_OK)
        status = FERRY_ERR_CANCELED;
    for (fy_list_link_t *l = fy_list_first(&tw->ctl), *next; l != fy_list_end(&tw->ctl); l = next) {
        next = l->next;
        tag_ctl_t *ctl = fy_container_of(l, tag_ctl_t, obj.link);
        if (ctl->ep == ep)
            tag_ctl_drop(worker, ctl);
    }
    tag_flow_forget(worker, ep);
    tag_recv_t *placing = fy_tag_ep_of(ep)->placing;
    if (placing != NULL) { /* the transport writes no more of its eager message */
        fy_tag_ep_of(ep)->placing = NULL;
        tag_recv_finish(placing, status);
    }
    if (fy_tag_ep_of(ep)->placing_buf != NULL) { /* nor of an unexpected one */
        tag_spare_put(tw, fy_tag_ep_of(ep)->placing_class, fy_tag_ep_of(ep)->placing_buf);
        fy_tag_ep_of(ep)->placing_buf = NULL;
    }
    fy_list_t *lists[] = {&tw->unexpected, &tw->probed};
    for (size_t i = 0; i < FERRY_ARRAY_SIZE(lists); i++) {
        for (fy_list_link_t *l = fy_list_first(lists[i]); l != fy_list_end(lists[i]); l = l->next) {
            tag_unexp_t *u = fy_container_of(l, tag_unexp_t, obj.link);
            if (u->ep == ep && u->kind == TAG_UNEXP_RTS && u->status == FERRY_OK)
                u->status = status;
        }
    }
    tag_rndv_ep_failed(worker, ep, status);
}

static void tag_ep_free(ferry_ep_t *ep)
{
    fy_tag_worker_t *tw = fy_tag_worker_of(ep->worker);
    fy_tag_ep_failed(ep, ep->error != FERRY_OK ? ep->error : FERRY_ERR_CANCELED);
    fy_list_t *lists[] = {&tw->unexpected, &tw->probed};
    for (size_t i = 0; i < FERRY_ARRAY_SIZE(lists); i++) {
        for (fy_list_link_t *l = fy_list_first(lists[i]); l != fy_list_end(lists[i]); l = l->next) {
            tag_unexp_t *u = fy_container_of(l, tag_unexp_t, obj.link);
            if (u->ep == ep)
                u->ep = NULL;
        }
    }
}

static void tag_ep_init(ferry_ep_t *ep)
{
    fy_tag_ep_of(ep)->ep = ep;
}

static void tag_ep_query(const ferry_ep_t *ep, ferry_ep_attr_t *attr)
{
    attr->tag_inject_max = tag_inject_max(ep);
}

/* A tagged one-sided step refused for lack of room is retried by progress only (control
 * messages and DATA refused by a transport are woken by that transport). */
static bool tag_module_busy(ferry_worker_t *worker)
{
    return !fy_list_is_empty(&fy_tag_worker_of(worker)->retry);
}

const fy_module_ops_t fy_tag_module = {
    .name = "tag",
    .ep_state_size = sizeof(fy_tag_ep_t),
    .init = tag_module_init,
    .cleanup = tag_module_cleanup,
    .progress = tag_module_progress,
    .busy = tag_module_busy,
    .ep_init = tag_ep_init,
    .ep_stop = fy_tag_ep_failed,
    .ep_query = tag_ep_query,
    .ep_free = tag_ep_free,
};
