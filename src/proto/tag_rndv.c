/* Rendezvous: the four large-message-transfer modes of the tag protocol (tag.h says what each
 * message means), sections of huge GET buffers re-keyed with COOKIE, truncation, aborts and
 * endpoint failure. Matching and the eager protocol are in tag.c.
 *
 * Sender:   GET   RTS(key) .. DONE(section) -> COOKIE(next key) .. DONE(final)
 *           PUT   RTS .. CTS(key) -> putv, flush -> DONE(final)
 *           COOP  RTS .. CTS -> DATA, DATA, ... (max_bcopy each, through shared buffers)
 *           NULL  RTS .. CTS -> DATA, DATA, ... (FERRY_RNDV_NULL_CHUNK each, fragmented)
 *           SPLIT RTS(key) .. CTS(key of the tail) -> putv(tail), flush -> DONE(to recv) ..
 *                 [DONE(section) -> COOKIE ..] DONE(final)
 * Receiver: GET   on match: getv(section) -> DONE(section) .. COOKIE -> getv -> DONE(final)
 *                 (automatic mode, cross-memory attach to the sender denied: CTS(COOP))
 *           PUT   on match: register -> CTS(key) .. DONE(final)
 *           COOP/NULL on match: CTS .. DATA in order until the accepted length
 *           SPLIT on match: register the tail -> CTS(key), getv(head) as GET; when the head is
 *                 read and the sender's DONE arrived: DONE(final)
 * Every step that waits (a one-sided operation, a flush, DATA the transport queued) holds the
 * transfer's `inner` completion; one that finds no room waits on the worker's retry or pump
 * list for fy_tag_progress. */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/uio.h>

#include "core/config.h"
#include "proto/am.h"
#include "proto/tag_int.h"
#include "wireup/ep.h"

static bool rndv_thresh_check(const char *text, char *why, size_t why_len);
static bool rndv_mode_check(const char *text, char *why, size_t why_len);

static const fy_config_var_t rndv_thresh_var = {
    .name = "FERRY_RNDV_THRESH",
    .type = FERRY_CONFIG_STRING,
    .default_value = "auto",
    .description = "tagged messages longer than this many bytes use rendezvous (a size, with an "
                   "optional k/m/g suffix); auto: what one transport buffer holds besides the "
                   "16-byte header, at most 32 KiB, or 256 KiB where the transport places larger "
                   "payloads straight into the matched receive (shm: 32 KiB fragments; "
                   "262144-byte payloads go eager; where cross-memory attach works, those of "
                   "16 KiB and more go eager or by rendezvous get or split, as the worker "
                   "measured on its first messages of each size class); 1 MiB on tcp; a size "
                   "turns that measuring off",
    .check = rndv_thresh_check};
static const fy_config_var_t *const rndv_thresh_reg
    __attribute__((used, section("ferry_config_registry"))) = &rndv_thresh_var;

static const fy_config_var_t rndv_mode_var = {
    .name = "FERRY_RNDV_MODE",
    .type = FERRY_CONFIG_STRING,
    .default_value = "auto",
    .description = "rendezvous mode of tagged messages: get (the receiver reads), put (the "
                   "sender writes), coop (both copy through shared buffers), null (fragments "
                   "over the send path), split (the receiver reads the first half while the "
                   "sender writes the second), auto (where the transport reads the peer's "
                   "memory itself and cross-memory attach works: coop or split, whichever "
                   "FERRY_RNDV_SPLIT_MIN's calibration measured faster at the message's size; "
                   "coop otherwise)",
    .check = rndv_mode_check};
static const fy_config_var_t *const rndv_mode_reg
    __attribute__((used, section("ferry_config_registry"))) = &rndv_mode_var;

static const fy_config_var_t rndv_section_var = {
    .name = "FERRY_RNDV_SECTION",
    .type = FERRY_CONFIG_SIZE,
    .default_value = "32M",
    .description = "GET rendezvous: a sender registers its buffer this many bytes at a time "
                   "(the receiver asks for the next key with DONE, the sender answers COOKIE); "
                   "at least 4k"};
static const fy_config_var_t *const rndv_section_reg
    __attribute__((used, section("ferry_config_registry"))) = &rndv_section_var;

static const fy_config_var_t rndv_split_min_var = {
    .name = "FERRY_RNDV_SPLIT_MIN",
    .type = FERRY_CONFIG_SIZE,
    .default_value = "0",
    .description = "automatic rendezvous mode where cross-memory attach works: 0 (auto) "
                   "measures coop against split on the first messages of each size class from "
                   "8 KiB to 2 MiB - 1 and keeps the faster (the crossover depends on where the "
                   "two processes run), split from 2 MiB; a size: split from this many bytes, "
                   "coop below, no measuring; a receiver offered split splits an accepted "
                   "length of at least this"};
static const fy_config_var_t *const rndv_split_min_reg
    __attribute__((used, section("ferry_config_registry"))) = &rndv_split_min_var;

static const fy_config_var_t rndv_null_chunk_var = {
    .name = "FERRY_RNDV_NULL_CHUNK",
    .type = FERRY_CONFIG_SIZE,
    .default_value = "0",
    .description =
        "NULL rendezvous: bytes of one DATA message, 4k .. 1g; 0 (auto): one transport buffer on "
        "shared memory (larger DATA would be fragmented and reassembled in a malloc'ed buffer: "
        "3 GB/s at 1m against 9), 1m on a stream transport (tcp reads DATA straight into the "
        "receive buffer: 6.0 GB/s at 1 MiB over loopback against 3.8 with 64k)"};
static const fy_config_var_t *const rndv_null_chunk_reg
    __attribute__((used, section("ferry_config_registry"))) = &rndv_null_chunk_var;

/* The largest eager payload where one transport buffer would take more (shm, self): 32 KiB,
 * all of shm's bulk buffer. Two copies through it (sender in, receiver out: 0.13 us each at
 * 16 KiB) cost less than any rendezvous here: its RTS/CTS or DONE round trip, and where
 * cross-memory attach copies once, a process_vm_readv that cost 3-5 us even at 8 B on this
 * project's machine (issue 14, same runs: tag_lat 16 KiB eager 1.82 us, COOP 3.00, GET 5.12,
 * UCX posix 3.28; 32 KiB eager 2.60-2.90, automatic rendezvous 4.45-6.45, UCX 4.57-5.52). */
#define TAG_EAGER_PAYLOAD_CAP 32768u
/* The eager threshold on a stream transport (tcp), header included: 1 MiB payloads go eager.
 * Measured with tag_bw over loopback, same runs, against the NULL rendezvous and UCX tcp:
 * 64 KiB 2.9-4.1 GB/s (NULL 2.1-3.0, UCX 1.8-2.5), 1 MiB 5.4-6.4 (NULL 4.8-5.9, UCX 5.0-6.1). */
#define TAG_EAGER_STREAM_CAP ((1u << 20) + TAG_WIRE_EAGER_SHORT)
/* COOP DATA messages carry at most this (with their header), even where max_bcopy is larger. */
#define TAG_COOP_CHUNK_CAP 65536u
/* COOP: DATA messages the transport may hold (queued, INPROGRESS) per send. */
#define TAG_COOP_WINDOW 16u

/* These return whether they moved on (false: no room, the transfer waits on a list). */
static unsigned tag_send_pump(tag_send_t *send);
static bool tag_send_put_issue(tag_send_t *send);
static bool tag_send_flush_issue(tag_send_t *send);
static void tag_send_put_done(tag_send_t *send);
static void tag_send_inner_arm(tag_send_t *send, int64_t count);
static void tag_send_inner_wait(tag_send_t *send);
static bool tag_recv_get_issue(tag_recv_t *recv);

/* ------------------------------------------------------------------ configuration, choice */

/* FERRY_RNDV_THRESH: a size, or "auto" (SIZE_MAX). False when it is neither. */
static bool rndv_thresh_parse(const char *text, size_t *value_p)
{
    uint64_t value;
    if (strcasecmp(text, "auto") == 0) {
        *value_p = SIZE_MAX;
        return true;
    }
    if (!fy_config_parse_size(text, &value) || value >= SIZE_MAX)
        return false;
    *value_p = (size_t)value;
    return true;
}

static const char *const rndv_mode_names[] = {"auto", "get", "put", "coop", "null", "split"};

/* FERRY_RNDV_MODE: 0 auto, then the tag_rndv_mode_t values in order; -1 when unknown. */
static int rndv_mode_parse(const char *text)
{
    for (unsigned i = 0; i < FERRY_ARRAY_SIZE(rndv_mode_names); i++) {
        if (strcasecmp(text, rndv_mode_names[i]) == 0)
            return (int)i;
    }
    return -1;
}

static bool rndv_thresh_check(const char *text, char *why, size_t why_len)
{
    size_t value;
    if (rndv_thresh_parse(text, &value))
        return true;
    snprintf(why, why_len, "a size (65536, 64k) or auto");
    return false;
}

static bool rndv_mode_check(const char *text, char *why, size_t why_len)
{
    if (rndv_mode_parse(text) >= 0)
        return true;
    snprintf(why, why_len, "get, put, coop, null, split or auto");
    return false;
}

void tag_rndv_config(fy_tag_worker_t *tw, const fy_config_set_t *config)
{
    static atomic_int warned_thresh, warned_mode;
    const char *thresh = fy_config_string_in(config, &rndv_thresh_var);
    const char *mode = fy_config_string_in(config, &rndv_mode_var);
    char why[64];

    if (!rndv_thresh_parse(thresh, &tw->thresh_forced)) {
        tw->thresh_forced = SIZE_MAX;
        if (atomic_exchange(&warned_thresh, 1) == 0 && !rndv_thresh_check(thresh, why, sizeof(why)))
            fy_warn("invalid FERRY_RNDV_THRESH=\"%s\": expected %s; using auto", thresh, why);
    }
    int index = rndv_mode_parse(mode);
    tw->mode_forced = index < 0 ? 0u : (unsigned)index;
    if (index < 0 && atomic_exchange(&warned_mode, 1) == 0 &&
        !rndv_mode_check(mode, why, sizeof(why)))
        fy_warn("invalid FERRY_RNDV_MODE=\"%s\": expected %s; using auto", mode, why);
    tw->section = fy_config_size_in(config, &rndv_section_var);
    if (tw->section < 4096)
        tw->section = 4096;
    tw->split_min = fy_config_size_in(config, &rndv_split_min_var);
    tw->null_chunk = fy_config_size_in(config, &rndv_null_chunk_var); /* 0: auto (tag_null_chunk) */
    if (tw->null_chunk != 0 && tw->null_chunk < 4096)
        tw->null_chunk = 4096;
    if (tw->null_chunk > (1u << 30))
        tw->null_chunk = 1u << 30;
}

size_t tag_eager_placed_max(const ferry_ep_t *ep)
{
    return ep->caps.max_placed < TAG_EAGER_PLACED_CAP ? ep->caps.max_placed : TAG_EAGER_PLACED_CAP;
}

void tag_rndv_ep_setup(ferry_worker_t *worker, ferry_ep_t *ep)
{
    const fy_tl_caps_t *caps = &ep->caps;
    size_t max_bcopy = caps->max_bcopy != 0 ? caps->max_bcopy : TAG_EAGER_PAYLOAD_CAP;
    size_t coop = max_bcopy < TAG_COOP_CHUNK_CAP ? max_bcopy : TAG_COOP_CHUNK_CAP;
    /* eager payload that fits one buffer: all of it when the header travels beside it (shm) */
    size_t eager_header = caps->header_apart >= TAG_WIRE_EAGER_SHORT ? 0 : TAG_WIRE_EAGER_SHORT;
    size_t eager = max_bcopy > eager_header ? max_bcopy - eager_header : 0;
    if (eager > TAG_EAGER_PAYLOAD_CAP)
        eager = TAG_EAGER_PAYLOAD_CAP;
    /* what one buffer carries: all a receiver that takes no more messages in pieces allows
     * (FLOW EAGER_BUFFER: its recycled buffers for those ran out; never sent on a stream) */
    size_t eager_buffer = eager;
    /* a stream (tcp): up to 1 MiB eager, without the RTS/CTS round trip, which the data queued
     * ahead of each RTS delays (the stream carries any size in one frame; an unexpected one is
     * buffered within FERRY_TAG_UNEXPECTED_MAX like any eager message) */
    if (caps->flags & FY_TL_CAP_STREAM)
        eager = TAG_EAGER_STREAM_CAP - TAG_WIRE_EAGER_SHORT;
    size_t placed = tag_eager_placed_max(ep);
    if (!(caps->flags & FY_TL_CAP_STREAM) && placed > eager)
        eager = placed;
    /* a DATA header that travels beside the buffer leaves all of it to the payload: 32 KiB
     * chunks on shm, 4 KiB-aligned in the user's buffers */
    size_t data_header =
        caps->header_apart >= sizeof(tag_wire_data_t) ? 0 : sizeof(tag_wire_data_t);

    const fy_tag_worker_t *tw = fy_tag_worker_of(worker);
    fy_tag_ep_of(ep)->eager_max = tw->thresh_forced != SIZE_MAX ? tw->thresh_forced : eager;
    fy_tag_ep_of(ep)->eager_measured = 0;
    fy_tag_ep_of(ep)->reply_min = SIZE_MAX;
    /* where GET and SPLIT work and nothing is forced, messages from the eager classes' first
     * size up go eagerly or by rendezvous as the worker measures (tag_calib.c) */
    size_t calib_min = (size_t)1 << TAG_CALIB_EAGER_CLASS_MIN;
    if (tw->thresh_forced == SIZE_MAX && tw->mode_forced == 0 && tw->split_min == 0 &&
        !(caps->flags & FY_TL_CAP_STREAM) &&
        (caps->flags & (FY_TL_CAP_RMA | FY_TL_CAP_CMA)) == (FY_TL_CAP_RMA | FY_TL_CAP_CMA) &&
        eager >= calib_min && eager == placed) {
        fy_tag_ep_of(ep)->eager_max = calib_min - 1;
        fy_tag_ep_of(ep)->reply_min = (size_t)1 << TAG_REPLY_GET_SHIFT;
        fy_tag_ep_of(ep)->eager_measured = 1;
    }
    fy_tag_ep_of(ep)->eager_buffer_max = eager_buffer;
    fy_tag_ep_of(ep)->chunk = coop > data_header + 1024 ? coop - data_header : 1024;
    fy_tag_ep_of(ep)->ready = 1;
}

/* The one place the rendezvous mode is chosen, from measurements (docs/ARCHITECTURE.md,
 * "Tagged messages"): NULL over a transport with neither one-sided access nor shared buffers
 * (tcp); COOP (no system call per message; both processes copy every byte) where cross-memory
 * attach does not work; where it does, SPLIT (two kernel copies at once, one per process) or
 * COOP, whichever the calibration on this worker's traffic measured faster at that size
 * (tag_calib.c), or by the fixed threshold FERRY_RNDV_SPLIT_MIN when it is set. GET, one
 * kernel copy, was slower than one of them at every size measured. */
tag_rndv_mode_t tag_rndv_choose(ferry_worker_t *worker, ferry_ep_t *ep, uint64_t length,
                                tag_send_t *send)
{
    fy_tag_worker_t *tw = fy_tag_worker_of(worker);
    /* a byte stream (tcp): the data streams in DATA messages */
    bool streams_only = (ep->caps.flags & FY_TL_CAP_STREAM) != 0;
    if (tw->mode_forced != 0) {
        if (tw->mode_forced == TAG_RNDV_COOP && streams_only) {
            if (!fy_tag_ep_of(ep)->coop_fallback_said) {
                fy_tag_ep_of(ep)->coop_fallback_said = 1;
                fy_info("tagged messages: FERRY_RNDV_MODE=coop needs shared buffers, which "
                        "transport %s does not have: rendezvous with endpoint %p use null",
                        ep->tl->name, (void *)ep);
            }
            return TAG_RNDV_NULL;
        }
        return (tag_rndv_mode_t)tw->mode_forced;
    }
    if (streams_only)
        return TAG_RNDV_NULL;
    if ((ep->caps.flags & (FY_TL_CAP_RMA | FY_TL_CAP_CMA)) != (FY_TL_CAP_RMA | FY_TL_CAP_CMA))
        return TAG_RNDV_COOP;
    if (tw->split_min != 0)
        return length < tw->split_min ? TAG_RNDV_COOP : TAG_RNDV_SPLIT;
    return tag_calib_choose(worker, ep, send, length);
}

static bool tag_mode_reads(tag_rndv_mode_t mode)
{
    return mode == TAG_RNDV_GET || mode == TAG_RNDV_SPLIT;
}

/* ------------------------------------------------------------------ shared helpers */

static void tag_list_add(ferry_worker_t *worker, fy_list_t *list, tag_obj_t *obj, bool *flag)
{
    if (*flag)
        return;
    *flag = true;
    fy_list_push_tail(list, &obj->link);
    tag_need_progress(worker, 1);
}

static void tag_list_del(ferry_worker_t *worker, tag_obj_t *obj, bool *flag)
{
    if (!*flag)
        return;
    *flag = false;
    fy_list_remove(&obj->link);
    tag_need_progress(worker, -1);
}

/* Pieces of the next n bytes at the cursor: into stack when they fit, else a malloc'ed array
 * (*heap_p, to free). Returns the count, or SIZE_MAX when out of memory. */
static size_t tag_pieces(const tag_iovs_t *iovs, const tag_cursor_t *cur, uint64_t n,
                         ferry_iov_t *stack, size_t max, ferry_iov_t **pieces_p, uint64_t *bytes_p)
{
    uint64_t bytes;
    if (n > 0 && max > 0 && cur->index < iovs->iovcnt &&
        iovs->iov[cur->index].length - cur->offset >= n) {
        /* the n bytes lie in the cursor's piece (one contiguous buffer): what
         * tag_cursor_pieces gives, without its two walks */
        stack[0].buffer = (uint8_t *)iovs->iov[cur->index].buffer + cur->offset;
        stack[0].length = (size_t)n;
        *pieces_p = stack;
        *bytes_p = n;
        return 1;
    }
    size_t count = tag_cursor_pieces(iovs, cur, n, NULL, max, &bytes);
    ferry_iov_t *pieces = stack;
    if (count > TAG_IOV_STACK) {
        pieces = malloc(count * sizeof(*pieces));
        if (pieces == NULL) {
            fy_error("malloc(%zu) for %zu pieces of a tagged message failed",
                     count * sizeof(*pieces), count);
            return SIZE_MAX;
        }
    }
    tag_cursor_pieces(iovs, cur, n, pieces, count, &bytes);
    *pieces_p = pieces;
    *bytes_p = bytes;
    return count;
}

/* Where the next byte at the cursor goes (NULL at the end). */
static void *tag_cursor_at(const tag_iovs_t *iovs, const tag_cursor_t *cur)
{
    if (cur->index >= iovs->iovcnt)
        return NULL;
    return (uint8_t *)iovs->iov[cur->index].buffer + cur->offset;
}

static void tag_send_done_msg(ferry_worker_t *worker, ferry_ep_t *ep, unsigned target, uint64_t id,
                              bool final, ferry_status_t status, uint64_t done, uint64_t reply_id)
{
    tag_wire_msg_t msg = {.id = FY_AM_ID_TAG_DONE};
    msg.u.done.version = TAG_WIRE_VERSION;
    msg.u.done.target = (uint8_t)target;
    msg.u.done.final = final ? 1 : 0;
    msg.u.done.status = status;
    msg.u.done.id = id;
    msg.u.done.done = done;
    msg.u.done.reply_id = reply_id;
    ferry_status_t sent = tag_ctl_send(worker, ep, &msg);
    if (sent != FERRY_OK)
        fy_debug("tagged messages: DONE to endpoint %p not sent: %s", (void *)ep,
                 ferry_status_string(sent));
}

static ferry_status_t tag_recv_final_status(const tag_recv_t *recv)
{
    return recv->accepted < recv->length ? FERRY_ERR_MESSAGE_TRUNCATED : FERRY_OK;
}

/* End a receive with an error and tell the sender (DONE final with the status). */
static void tag_recv_abort(tag_recv_t *recv, ferry_status_t status)
{
    if (recv->state == TAG_RECV_FINISHED)
        return;
    if (recv->ep != NULL && recv->ep->state == FY_EP_OPEN)
        tag_send_done_msg(recv->worker, recv->ep, TAG_DONE_TO_SEND, recv->send_id, true, status,
                          recv->received, 0);
    tag_recv_finish(recv, status);
}

/* End a send with an error and tell the receiver when it is known. */
static void tag_send_abort(tag_send_t *send, ferry_status_t status)
{
    if (send->state == TAG_SEND_FINISHED)
        return;
    if (send->recv_id != 0 && send->ep != NULL && send->ep->state == FY_EP_OPEN)
        tag_send_done_msg(send->worker, send->ep, TAG_DONE_TO_RECV, send->recv_id, true, status,
                          send->sent, 0);
    tag_send_finish(send, status);
}

void tag_rndv_send_release(tag_send_t *send)
{
    fy_tag_worker_t *tw = fy_tag_worker_of(send->worker);
    tag_list_del(send->worker, &send->obj, &send->in_list);
    if (send->mem != NULL) {
        ferry_mem_deregister(send->mem);
        send->mem = NULL;
    }
    if (send->rkey != NULL && !send->inner_busy) {
        ferry_rkey_release(send->rkey);
        send->rkey = NULL;
    }
    if (send->id != 0) {
        tag_table_remove(&tw->send_table, send->id);
        send->id = 0;
    }
}

void tag_rndv_recv_release(tag_recv_t *recv)
{
    fy_tag_worker_t *tw = fy_tag_worker_of(recv->worker);
    tag_list_del(recv->worker, &recv->obj, &recv->in_retry);
    if (recv->mem != NULL) {
        ferry_mem_deregister(recv->mem);
        recv->mem = NULL;
    }
    if (recv->rkey != NULL && !recv->inner_busy) {
        ferry_rkey_release(recv->rkey);
        recv->rkey = NULL;
    }
    if (recv->id != 0) {
        tag_table_remove(&tw->recv_table, recv->id);
        recv->id = 0;
    }
}

/* ------------------------------------------------------------------ sender */

/* Register the next GET section of send (from its cursor) and write its key into rkey_out. */
static ferry_status_t tag_send_register_section(tag_send_t *send,
                                                uint8_t rkey_out[RKEY_PACKED_SIZE])
{
    ferry_worker_t *worker = send->worker;
    uint64_t left = send->buf.length - send->cursor.pos;
    uint64_t want =
        left < fy_tag_worker_of(worker)->section ? left : fy_tag_worker_of(worker)->section;
    ferry_iov_t stack[TAG_IOV_STACK], *pieces;
    uint64_t bytes;
    ferry_mem_t *mem;
    void *packed;
    size_t packed_length;

    size_t count =
        tag_pieces(&send->buf, &send->cursor, want, stack, FERRY_MEM_IOV_MAX, &pieces, &bytes);
    if (count == SIZE_MAX)
        return FERRY_ERR_NO_MEMORY;
    ferry_status_t status = ferry_mem_register(
        worker->context, pieces, count, FERRY_ACCESS_REMOTE_READ, FERRY_MEM_SINGLE_USE, &mem);
    if (pieces != stack)
        free(pieces);
    if (status != FERRY_OK) {
        fy_debug("tagged messages: registering %llu bytes (%zu pieces) for a GET rendezvous "
                 "failed: %s",
                 (unsigned long long)bytes, count, ferry_status_string(status));
        return status;
    }
    status = ferry_rkey_pack(mem, &packed, &packed_length);
    if (status != FERRY_OK || packed_length != RKEY_PACKED_SIZE) {
        if (status == FERRY_OK)
            ferry_rkey_buffer_release(packed);
        ferry_mem_deregister(mem);
        return status != FERRY_OK ? status : FERRY_ERR_INVALID_PARAM;
    }
    memcpy(rkey_out, packed, RKEY_PACKED_SIZE);
    ferry_rkey_buffer_release(packed);
    send->mem = mem;
    send->section_off = send->cursor.pos;
    send->section_len = bytes;
    tag_cursor_advance(&send->buf, &send->cursor, bytes);
    return FERRY_OK;
}

/* Copy the pieces one after the other into dst. */
static void tag_gather(const ferry_iov_t *iov, size_t iovcnt, uint8_t *dst)
{
    for (size_t i = 0; i < iovcnt; i++) {
        if (iov[i].length > 0)
            memcpy(dst, iov[i].buffer, iov[i].length);
        dst += iov[i].length;
    }
}

/* tag_send_alloc, the send counted by the calibration block of ticket (NULL or calib_class 0:
 * none); NULL (the ticket cancelled) when out of memory. */
static tag_send_t *tag_send_alloc_counted(ferry_worker_t *worker, const tag_calib_ticket_t *ticket,
                                          uint64_t length)
{
    tag_send_t *send = tag_send_alloc(worker);
    if (send == NULL) {
        tag_calib_ticket_cancel(worker, ticket, length);
        return NULL;
    }
    if (ticket != NULL) {
        send->calib_class = ticket->calib_class;
        send->calib_block = ticket->calib_block;
    }
    return send;
}

/* Whether send's GET or SPLIT goes by address (TAG_FLAG_ADDR): one contiguous buffer within a
 * section, to an endpoint whose transport reads the peer's memory without a key (SPLIT: the
 * receiver reads its head so; the tail we write still goes by the receiver's key). SPLIT only
 * where one-sided access itself goes by cross-memory attach (FY_TL_CAP_RMA with CMA: shm with
 * FERRY_SHM_CMA on): a GET whose read fails asks for COOP instead, a SPLIT has sent its CTS by
 * then. */
static bool tag_rndv_send_by_address(const tag_send_t *send, uint64_t length)
{
    const ferry_ep_t *ep = send->ep;
    unsigned need = send->mode == TAG_RNDV_SPLIT ? FY_TL_CAP_RMA | FY_TL_CAP_CMA : FY_TL_CAP_CMA;
    return (send->mode == TAG_RNDV_GET || send->mode == TAG_RNDV_SPLIT) && length > 0 &&
           send->buf.iovcnt == 1 && length <= fy_tag_worker_of(send->worker)->section &&
           ep->tl->ep_peer_read != NULL && (ep->caps.flags & need) == need;
}

ferry_status_t tag_rndv_send(ferry_worker_t *worker, ferry_ep_t *ep, const ferry_iov_t *iov,
                             size_t iovcnt, uint64_t length, uint64_t tag,
                             const ferry_tag_send_params_t *params, bool inject,
                             tag_rndv_mode_t mode, const tag_calib_ticket_t *ticket,
                             ferry_completion_t *comp)
{
    fy_tag_worker_t *tw = fy_tag_worker_of(worker);
    tag_wire_msg_t msg = {.id = FY_AM_ID_TAG_RTS};
    uint8_t header[sizeof(tag_wire_rts_t)];
    ferry_status_t status;
    tag_send_t *send = tag_send_alloc_counted(worker, ticket, length);

    if (send == NULL)
        return FERRY_ERR_NO_MEMORY;
    if (inject) {
        /* within the inject bound the caller's buffers are free on return: the rendezvous
         * (back-pressure, or a forced threshold) reads a private copy, and tells nobody */
        send->copy = malloc(length > 0 ? length : 1);
        if (send->copy == NULL) {
            fy_error("malloc(%llu) for an injected tagged message failed",
                     (unsigned long long)length);
            status = FERRY_ERR_NO_MEMORY;
            goto err_put;
        }
        tag_gather(iov, iovcnt, send->copy);
        ferry_iov_t copy = {.buffer = send->copy, .length = length};
        status = tag_iovs_copy(&send->buf, &copy, 1);
        comp = NULL;
    } else {
        status = tag_iovs_copy(&send->buf, iov, iovcnt);
    }
    if (status != FERRY_OK)
        goto err_put;
    send->id = tag_table_insert(&tw->send_table, send);
    if (send->id == 0) {
        status = FERRY_ERR_NO_MEMORY;
        goto err_put;
    }
    send->ep = ep;
    send->comp = comp;
    send->tag = tag;
    send->mode = mode != 0 ? mode : tag_rndv_choose(worker, ep, length, send);
    send->put_off = 0;
    msg.u.rts.version = TAG_WIRE_VERSION;
    msg.u.rts.tag = tag;
    msg.u.rts.length = length;
    msg.u.rts.send_id = send->id;
    if (params != NULL && (params->flags & FERRY_TAG_SEND_IMM)) {
        msg.u.rts.flags = TAG_FLAG_IMM;
        msg.u.rts.imm = params->imm;
    }
    if (tag_rndv_send_by_address(send, length)) {
        /* one contiguous buffer the receiver reads by its address: nothing to register */
        uint64_t address = htole64((uint64_t)(uintptr_t)send->buf.iov[0].buffer);
        memcpy(msg.u.rts.rkey, &address, sizeof(address));
        msg.u.rts.flags |= TAG_FLAG_ADDR;
        msg.u.rts.section = length;
        send->section_off = 0;
        send->section_len = length;
        tag_cursor_advance(&send->buf, &send->cursor, length);
    } else if (tag_mode_reads(send->mode) && length > 0) {
        status = tag_send_register_section(send, msg.u.rts.rkey);
        if (status == FERRY_OK) {
            msg.u.rts.section = send->section_len;
        } else {
            fy_info("tagged messages: the GET rendezvous of %llu bytes could not register its "
                    "buffer (%s); it uses COOP",
                    (unsigned long long)length, ferry_status_string(status));
            send->mode = TAG_RNDV_COOP;
        }
    }
    msg.u.rts.mode = (uint8_t)send->mode;
    fy_trace("tagged messages: RTS for %llu bytes (tag 0x%llx) to endpoint %p, mode %u, first "
             "section %llu",
             (unsigned long long)length, (unsigned long long)tag, (void *)ep, send->mode,
             (unsigned long long)msg.u.rts.section);
    send->state = tag_mode_reads(send->mode) ? TAG_SEND_WAIT_DONE : TAG_SEND_WAIT_CTS;
    size_t header_length = tag_wire_encode(&msg, header); /* ADDR: 40 or 48 bytes */
    status = fy_am_send_internal(ep, FY_AM_ID_TAG_RTS, header, header_length, NULL, 0, NULL);
    if (status != FERRY_OK && status != FERRY_INPROGRESS)
        goto err_release;
    tag_count_sent(ep, length, send->mode); /* tag_rndv_mode_t: the counters' mode numbers */
    return inject ? FERRY_OK : FERRY_INPROGRESS;

err_release:
    send->state = TAG_SEND_FINISHED;
    tag_rndv_send_release(send);
err_put:
    tag_calib_cancel(worker, send, length); /* joined a block with the ticket or the choice */
    tag_send_unref(send);
    return status;
}

size_t tag_inject_max(const ferry_ep_t *ep)
{
    return ep->caps.max_short > TAG_WIRE_EAGER_SHORT ? ep->caps.max_short - TAG_WIRE_EAGER_SHORT
                                                     : 0;
}

ferry_status_t tag_rndv_send_sync_eager(ferry_ep_t *ep, const ferry_iov_t *iov, size_t iovcnt,
                                        uint64_t length, tag_wire_eager_t *header,
                                        const tag_calib_ticket_t *ticket, ferry_completion_t *comp)
{
    ferry_worker_t *worker = ep->worker;
    fy_tag_worker_t *tw = fy_tag_worker_of(worker);
    tag_send_t *send = tag_send_alloc_counted(worker, ticket, length);
    ferry_status_t status;

    if (send == NULL)
        return FERRY_ERR_NO_MEMORY;
    send->id = tag_table_insert(&tw->send_table, send);
    if (send->id == 0) {
        status = FERRY_ERR_NO_MEMORY;
        goto err_put;
    }
    send->ep = ep;
    send->comp = comp;
    send->tag = le64toh(header->tag);
    send->mode = 0; /* no rendezvous */
    send->state = TAG_SEND_WAIT_ACK;
    header->send_id = htole64(send->id);
    /* the transport may keep the user's buffers: inner completes when it gave them back */
    tag_send_inner_arm(send, 1);
    status = fy_am_send_internal(ep, FY_AM_ID_TAG_EAGER, header, sizeof(*header), iov, iovcnt,
                                 &send->inner);
    if (status == FERRY_INPROGRESS)
        tag_send_inner_wait(send);
    else if (status != FERRY_OK)
        goto err_release;
    return FERRY_INPROGRESS;

err_release:
    send->state = TAG_SEND_FINISHED;
    tag_rndv_send_release(send);
err_put:
    tag_calib_cancel(worker, send, length);
    tag_send_unref(send);
    return status;
}

void tag_rndv_sync_ack(ferry_worker_t *worker, ferry_ep_t *ep, uint64_t send_id)
{
    if (ep != NULL && ep->state == FY_EP_OPEN)
        tag_send_done_msg(worker, ep, TAG_DONE_TO_SEND, send_id, true, FERRY_OK, 0, 0);
}

static void tag_send_inner_cb(ferry_completion_t *comp)
{
    tag_send_t *send = fy_container_of(comp, tag_send_t, inner);
    ferry_status_t status = comp->status;

    send->inner_busy = false;
    if (send->state == TAG_SEND_FINISHED) {
        if (send->rkey != NULL) { /* kept while the operation could use it */
            ferry_rkey_release(send->rkey);
            send->rkey = NULL;
        }
        if (send->user_waits_inner) /* the buffers are the user's again */
            tag_send_complete_user_now(send);
        tag_send_unref(send);
        return;
    }
    send->refs--; /* the user's reference keeps it */
    switch (send->state) {
    case TAG_SEND_PUT:
        if (status != FERRY_OK) {
            tag_send_abort(send, status);
            return;
        }
        send->state = TAG_SEND_FLUSH;
        tag_send_flush_issue(send);
        return;
    case TAG_SEND_FLUSH:
        if (status != FERRY_OK) {
            tag_send_abort(send, status);
            return;
        }
        tag_send_put_done(send);
        return;
    case TAG_SEND_PUMP:
        if (status != FERRY_OK) {
            tag_send_abort(send, status);
            return;
        }
        send->inner = (ferry_completion_t){.cb = tag_send_inner_cb, .count = 0, .status = FERRY_OK};
        tag_send_pump(send);
        return;
    default:
        return;
    }
}

/* PUT/SPLIT: the bytes are written and flushed. Tell the receiver; PUT is over, SPLIT waits for
 * the receiver's final DONE (it may still be reading our registration). */
static void tag_send_put_done(tag_send_t *send)
{
    ferry_rkey_release(send->rkey);
    send->rkey = NULL;
    tag_send_done_msg(send->worker, send->ep, TAG_DONE_TO_RECV, send->recv_id, true, FERRY_OK,
                      send->accepted, 0);
    if (send->mode == TAG_RNDV_SPLIT) {
        send->state = TAG_SEND_WAIT_DONE;
        return;
    }
    send->sent = send->accepted;
    tag_send_finish(send, FERRY_OK);
}

/* Start an internal operation on inner: returns with inner armed for one completion. */
static void tag_send_inner_arm(tag_send_t *send, int64_t count)
{
    send->inner = (ferry_completion_t){.cb = tag_send_inner_cb, .count = count, .status = FERRY_OK};
}

static void tag_send_inner_wait(tag_send_t *send)
{
    if (!send->inner_busy) {
        send->inner_busy = true;
        send->refs++;
    }
}

static bool tag_send_put_issue(tag_send_t *send)
{
    ferry_iov_t stack[TAG_IOV_STACK], *pieces;
    tag_cursor_t start = {0, 0, 0};
    uint64_t bytes, n = send->accepted - send->put_off;
    tag_cursor_advance(&send->buf, &start, send->put_off);
    size_t count = tag_pieces(&send->buf, &start, n, stack, SIZE_MAX, &pieces, &bytes);
    if (count == SIZE_MAX) {
        tag_send_abort(send, FERRY_ERR_NO_MEMORY);
        return true;
    }
    ferry_remote_iov_t remote = {.offset = 0, .length = (size_t)n};
    tag_send_inner_arm(send, 1);
    ferry_status_t status =
        ferry_putv(send->ep, pieces, count, &remote, 1, send->rkey, &send->inner);
    if (pieces != stack)
        free(pieces);
    if (status == FERRY_INPROGRESS) {
        tag_send_inner_wait(send);
        return true;
    }
    if (status == FERRY_ERR_NO_RESOURCE) {
        tag_list_add(send->worker, &fy_tag_worker_of(send->worker)->retry, &send->obj,
                     &send->in_list);
        return false;
    }
    if (status != FERRY_OK) {
        tag_send_abort(send, status);
        return true;
    }
    send->state = TAG_SEND_FLUSH;
    tag_send_flush_issue(send);
    return true;
}

static bool tag_send_flush_issue(tag_send_t *send)
{
    tag_send_inner_arm(send, 1);
    ferry_status_t status = ferry_ep_flush(send->ep, &send->inner);
    if (status == FERRY_INPROGRESS) {
        tag_send_inner_wait(send);
        return true;
    }
    if (status == FERRY_ERR_NO_RESOURCE || status == FERRY_ERR_NO_MEMORY) {
        tag_list_add(send->worker, &fy_tag_worker_of(send->worker)->retry, &send->obj,
                     &send->in_list);
        return false;
    }
    if (status != FERRY_OK) {
        tag_send_abort(send, status);
        return true;
    }
    tag_send_put_done(send);
    return true;
}

/* NULL: bytes per DATA message to ep (FERRY_RNDV_NULL_CHUNK, or its automatic value). */
static uint64_t tag_null_chunk(ferry_worker_t *worker, ferry_ep_t *ep)
{
    if (fy_tag_worker_of(worker)->null_chunk != 0)
        return fy_tag_worker_of(worker)->null_chunk;
    if (!(ep->caps.flags & FY_TL_CAP_STREAM))
        return fy_tag_ep_of(ep)->chunk; /* one buffer of the transport: never fragmented */
    return 1u << 20; /* a stream: the transport places DATA in the receive buffer */
}

/* COOP/NULL: hand DATA to the transport until done, out of room, or the window is full. */
static unsigned tag_send_pump(tag_send_t *send)
{
    ferry_worker_t *worker = send->worker;
    unsigned handed = 0;
    ferry_ep_t *ep = send->ep;
    uint64_t chunk =
        send->mode == TAG_RNDV_NULL ? tag_null_chunk(worker, ep) : fy_tag_ep_of(ep)->chunk;
    int64_t window = send->mode == TAG_RNDV_NULL ? TAG_NULL_WINDOW : TAG_COOP_WINDOW;

    tag_list_del(worker, &send->obj, &send->in_list);
    while (send->sent < send->accepted && send->inner.count < window) {
        ferry_iov_t pieces[TAG_IOV_STACK];
        uint64_t left = send->accepted - send->sent, bytes;
        size_t count = tag_cursor_pieces(&send->buf, &send->cursor, left < chunk ? left : chunk,
                                         pieces, TAG_IOV_STACK, &bytes);
        tag_wire_msg_t msg = {.id = FY_AM_ID_TAG_DATA};
        uint8_t header[sizeof(tag_wire_data_t)];
        msg.u.data.version = TAG_WIRE_VERSION;
        msg.u.data.recv_id = send->recv_id;
        msg.u.data.offset = send->sent;
        tag_wire_encode(&msg, header);
        send->inner.count++;
        ferry_status_t status = fy_am_send_internal(ep, FY_AM_ID_TAG_DATA, header, sizeof(header),
                                                    pieces, count, &send->inner);
        if (status != FERRY_INPROGRESS)
            send->inner.count--;
        if (status == FERRY_ERR_NO_RESOURCE) {
            tag_list_add(worker, &fy_tag_worker_of(worker)->pump, &send->obj, &send->in_list);
            break;
        }
        if (status != FERRY_OK && status != FERRY_INPROGRESS) {
            if (send->inner.count > 0)
                tag_send_inner_wait(send);
            tag_send_finish(send, status); /* the endpoint failed: nobody to tell */
            return handed + 1;
        }
        tag_cursor_advance(&send->buf, &send->cursor, bytes);
        send->sent += bytes;
        handed++;
    }
    if (send->inner.count > 0) {
        tag_send_inner_wait(send); /* the window's completion pumps again or finishes */
        return handed;
    }
    if (send->sent == send->accepted)
        tag_send_finish(send, FERRY_OK);
    return handed;
}

void tag_rndv_on_cts(ferry_worker_t *worker, ferry_ep_t *ep, const tag_wire_cts_t *cts)
{
    tag_send_t *send = tag_table_lookup(&fy_tag_worker_of(worker)->send_table, cts->send_id);

    if (send == NULL || send->ep != ep) {
        tag_warn(worker, TAG_WARN_UNKNOWN_ID,
                 "CTS from endpoint %p for send id 0x%llx, which is %s", (void *)ep,
                 (unsigned long long)cts->send_id,
                 send == NULL ? "finished or unknown" : "a send to another endpoint");
        return;
    }
    /* the receiver may answer a PUT with COOP (it could not register) and, in automatic mode,
     * a GET with COOP (it cannot read our memory) */
    bool ok = false;
    switch (send->mode) {
    case TAG_RNDV_GET:
    case TAG_RNDV_SPLIT:
        ok = send->state == TAG_SEND_WAIT_DONE && send->section_off == 0 &&
             (cts->mode == TAG_RNDV_COOP || cts->mode == TAG_RNDV_NULL ||
              (cts->mode == TAG_RNDV_SPLIT && send->mode == TAG_RNDV_SPLIT));
        break;
    case TAG_RNDV_PUT:
        ok = send->state == TAG_SEND_WAIT_CTS;
        break;
    case TAG_RNDV_COOP:
    case TAG_RNDV_NULL:
        ok = send->state == TAG_SEND_WAIT_CTS && cts->mode == send->mode;
        break;
    }
    if (!ok) {
        tag_warn(worker, TAG_WARN_WRONG_STATE,
                 "CTS (mode %u) from endpoint %p for send id 0x%llx (mode %u, state %d), which "
                 "does not expect one",
                 cts->mode, (void *)ep, (unsigned long long)cts->send_id, send->mode, send->state);
        return;
    }
    send->recv_id = cts->recv_id;
    if (cts->length > send->buf.length) {
        tag_warn(worker, TAG_WARN_BAD_TRANSFER,
                 "CTS from endpoint %p accepts %llu bytes of a %llu-byte message", (void *)ep,
                 (unsigned long long)cts->length, (unsigned long long)send->buf.length);
        tag_send_abort(send, FERRY_ERR_PROTOCOL);
        return;
    }
    send->accepted = cts->length;
    if (send->mode == TAG_RNDV_GET ||
        (send->mode == TAG_RNDV_SPLIT && cts->mode != TAG_RNDV_SPLIT)) {
        if (send->mem != NULL) /* the first section's key goes unused (none by address) */
            ferry_mem_deregister(send->mem);
        send->mem = NULL;
        send->cursor = (tag_cursor_t){0, 0, 0};
    }
    send->mode = (tag_rndv_mode_t)cts->mode;
    if (send->mode == TAG_RNDV_PUT || send->mode == TAG_RNDV_SPLIT) {
        if (send->accepted == 0) { /* PUT only: the decoder refuses a SPLIT of nothing */
            tag_send_done_msg(worker, ep, TAG_DONE_TO_RECV, send->recv_id, true, FERRY_OK, 0, 0);
            tag_send_finish(send, FERRY_OK);
            return;
        }
        if (ferry_rkey_unpack(ep, cts->rkey, RKEY_PACKED_SIZE, &send->rkey) != FERRY_OK) {
            send->rkey = NULL; /* ferry_rkey_unpack said why */
            tag_send_abort(send, FERRY_ERR_PROTOCOL);
            return;
        }
        /* SPLIT: the key covers the tail [accepted - key length, accepted), not all of it */
        uint64_t covered = send->rkey->key.length;
        if (send->mode == TAG_RNDV_SPLIT && covered > 0 && covered < send->accepted)
            send->put_off = send->accepted - covered;
        if (covered != send->accepted - send->put_off ||
            (send->mode == TAG_RNDV_SPLIT && send->put_off == 0) ||
            !(send->rkey->key.access & FERRY_ACCESS_REMOTE_WRITE)) {
            tag_warn(worker, TAG_WARN_BAD_TRANSFER,
                     "the key in a CTS (mode %u) from endpoint %p covers %llu bytes with access "
                     "0x%x, not %s of the %llu accepted bytes writable",
                     cts->mode, (void *)ep, (unsigned long long)covered, send->rkey->key.access,
                     send->mode == TAG_RNDV_SPLIT ? "a tail" : "all",
                     (unsigned long long)send->accepted);
            ferry_rkey_release(send->rkey);
            send->rkey = NULL;
            tag_send_abort(send, FERRY_ERR_PROTOCOL);
            return;
        }
        send->state = TAG_SEND_PUT;
        tag_send_put_issue(send);
        return;
    }
    send->state = TAG_SEND_PUMP;
    send->sent = 0;
    tag_send_inner_arm(send, 0);
    tag_send_pump(send);
}

/* ------------------------------------------------------------------ receiver */

static void tag_recv_inner_cb(ferry_completion_t *comp);

static void tag_recv_send_cts(tag_recv_t *recv, tag_rndv_mode_t mode, const uint8_t *key)
{
    tag_wire_msg_t msg = {.id = FY_AM_ID_TAG_CTS};
    msg.u.cts.version = TAG_WIRE_VERSION;
    msg.u.cts.mode = (uint8_t)mode;
    msg.u.cts.send_id = recv->send_id;
    msg.u.cts.recv_id = recv->id;
    msg.u.cts.length = recv->accepted;
    fy_trace("tagged messages: CTS mode %u (RTS mode %u) for %llu of %llu bytes", mode, recv->mode,
             (unsigned long long)recv->accepted, (unsigned long long)recv->length);
    if (key != NULL)
        memcpy(msg.u.cts.rkey, key, RKEY_PACKED_SIZE);
    recv->mode = mode;
    recv->state = mode == TAG_RNDV_PUT     ? TAG_RECV_WAIT_DONE
                  : mode == TAG_RNDV_SPLIT ? TAG_RECV_GET
                                           : TAG_RECV_DATA;
    ferry_status_t status = tag_ctl_send(recv->worker, recv->ep, &msg);
    if (status != FERRY_OK) {
        tag_recv_finish(recv, status);
        return;
    }
    if (mode != TAG_RNDV_PUT && mode != TAG_RNDV_SPLIT && recv->accepted == 0)
        tag_recv_finish(recv, tag_recv_final_status(recv));
}

/* PUT/SPLIT: register the accepted bytes from offset on for the sender to write (recv->mem)
 * and pack their key. Returns FERRY_OK, FERRY_ERR_NO_MEMORY (logged: abort), or why it could
 * not register (*pieces_p: how many pieces the bytes are). */
static ferry_status_t tag_recv_register(tag_recv_t *recv, uint64_t offset,
                                        uint8_t key[RKEY_PACKED_SIZE], size_t *pieces_p)
{
    ferry_iov_t stack[TAG_IOV_STACK], *pieces;
    tag_cursor_t at = recv->cursor;
    uint64_t bytes;
    void *packed;
    size_t packed_length;

    tag_cursor_advance(&recv->buf, &at, offset);
    size_t count = tag_pieces(&recv->buf, &at, recv->accepted - offset, stack,
                              FERRY_MEM_IOV_MAX + 1, &pieces, &bytes);
    *pieces_p = count;
    if (count == SIZE_MAX)
        return FERRY_ERR_NO_MEMORY;
    ferry_status_t status = FERRY_ERR_LIMIT;
    if (count <= FERRY_MEM_IOV_MAX)
        status = ferry_mem_register(recv->worker->context, pieces, count, FERRY_ACCESS_REMOTE_WRITE,
                                    FERRY_MEM_SINGLE_USE, &recv->mem);
    if (pieces != stack)
        free(pieces);
    if (status != FERRY_OK)
        return status;
    status = ferry_rkey_pack(recv->mem, &packed, &packed_length);
    if (status == FERRY_OK) {
        if (packed_length == RKEY_PACKED_SIZE)
            memcpy(key, packed, RKEY_PACKED_SIZE);
        else
            status = FERRY_ERR_INVALID_PARAM;
        ferry_rkey_buffer_release(packed);
    }
    if (status != FERRY_OK) {
        ferry_mem_deregister(recv->mem);
        recv->mem = NULL;
    }
    return status;
}

/* PUT: register the accepted bytes for the sender to write; COOP where that is not possible. */
static void tag_recv_put_start(tag_recv_t *recv)
{
    uint8_t key[RKEY_PACKED_SIZE];
    size_t count;

    if (recv->accepted == 0) {
        tag_recv_send_cts(recv, TAG_RNDV_PUT, NULL);
        return;
    }
    ferry_status_t status = tag_recv_register(recv, 0, key, &count);
    if (status == FERRY_ERR_NO_MEMORY) {
        tag_recv_abort(recv, status);
        return;
    }
    if (status != FERRY_OK) {
        fy_info("tagged messages: a PUT rendezvous could not register the %llu-byte receive "
                "buffer (%zu pieces: %s); it uses COOP",
                (unsigned long long)recv->accepted, count, ferry_status_string(status));
        tag_recv_send_cts(recv, TAG_RNDV_COOP, NULL);
        return;
    }
    tag_recv_send_cts(recv, TAG_RNDV_PUT, key);
}

/* SPLIT offered: register the second half (from a 4 KiB-aligned split point) for the sender to
 * write and send its key in CTS; we read the first half. Without a split (too short, cannot
 * register) we read it all as GET. Returns false when the receive ended (CTS not sent). */
static bool tag_recv_split_start(tag_recv_t *recv)
{
    fy_tag_worker_t *tw = fy_tag_worker_of(recv->worker);
    uint64_t split = (recv->accepted / 2) & ~(uint64_t)4095;
    uint8_t key[RKEY_PACKED_SIZE];
    size_t count;

    recv->mode = TAG_RNDV_GET;
    if (split == 0 ||
        (tw->mode_forced != TAG_RNDV_SPLIT && tw->split_min != 0 && recv->accepted < tw->split_min))
        return true;
    ferry_status_t status = tag_recv_register(recv, split, key, &count);
    if (status == FERRY_ERR_NO_MEMORY) {
        tag_recv_abort(recv, status);
        return false;
    }
    if (status != FERRY_OK) {
        fy_debug("tagged messages: a SPLIT rendezvous could not register the last %llu bytes "
                 "of the receive buffer (%zu pieces: %s); it reads all as GET",
                 (unsigned long long)(recv->accepted - split), count, ferry_status_string(status));
        return true;
    }
    recv->split = true;
    recv->get_end = split;
    tag_recv_send_cts(recv, TAG_RNDV_SPLIT, key);
    return recv->state != TAG_RECV_FINISHED;
}

/* GET: check and take the key of the section [offset, offset + length), then read it. */
static void tag_recv_get_section(tag_recv_t *recv, uint64_t offset, uint64_t length,
                                 const uint8_t key[RKEY_PACKED_SIZE])
{
    ferry_worker_t *worker = recv->worker;
    ferry_rkey_t *rkey = NULL;
    ferry_status_t status;

    if (offset != recv->received || length == 0 || length > recv->length - offset) {
        tag_warn(worker, TAG_WARN_BAD_TRANSFER,
                 "GET section [%llu, +%llu) from endpoint %p does not continue the %llu-byte "
                 "message at %llu",
                 (unsigned long long)offset, (unsigned long long)length, (void *)recv->ep,
                 (unsigned long long)recv->length, (unsigned long long)recv->received);
        tag_recv_abort(recv, FERRY_ERR_PROTOCOL);
        return;
    }
    /* by address (TAG_FLAG_ADDR: one section, the whole message) there is no key */
    if (recv->address == 0) {
        status = ferry_rkey_unpack(recv->ep, key, RKEY_PACKED_SIZE, &rkey);
        if (status != FERRY_OK) { /* ferry_rkey_unpack said why */
            tag_recv_abort(recv, FERRY_ERR_PROTOCOL);
            return;
        }
        if (rkey->key.length != length || !(rkey->key.access & FERRY_ACCESS_REMOTE_READ)) {
            tag_warn(worker, TAG_WARN_BAD_TRANSFER,
                     "the key of GET section [%llu, +%llu) from endpoint %p covers %llu bytes "
                     "with access 0x%x, not the section's bytes readable",
                     (unsigned long long)offset, (unsigned long long)length, (void *)recv->ep,
                     (unsigned long long)rkey->key.length, rkey->key.access);
            ferry_rkey_release(rkey);
            tag_recv_abort(recv, FERRY_ERR_PROTOCOL);
            return;
        }
        recv->rkey = rkey;
    }
    recv->section_end = offset + length;
    recv->state = TAG_RECV_GET;
    if (recv->split && offset == 0) {
        /* SPLIT: read from progress, after this poll's other messages: the CTS of every RTS
         * that arrived with this one goes out before we spend a system call on our half, so
         * the sender always has a tail to write while we read */
        tag_list_add(worker, &fy_tag_worker_of(worker)->retry, &recv->obj, &recv->in_retry);
        return;
    }
    tag_recv_get_issue(recv);
}

/* GET, SPLIT: every accepted byte is in place: DONE(final) lets the sender go. */
static void tag_recv_split_finish(tag_recv_t *recv)
{
    recv->received = recv->accepted;
    tag_send_done_msg(recv->worker, recv->ep, TAG_DONE_TO_SEND, recv->send_id, true, FERRY_OK,
                      recv->received, 0);
    tag_recv_finish(recv, tag_recv_final_status(recv));
}

/* A section was read (or failed): release its key, then DONE (final or for the next key). */
static void tag_recv_get_done(tag_recv_t *recv, ferry_status_t status)
{
    ferry_rkey_release(recv->rkey);
    recv->rkey = NULL;
    if (status != FERRY_OK) {
        tag_recv_abort(recv, status);
        return;
    }
    uint64_t end = recv->section_end < recv->get_end ? recv->section_end : recv->get_end;
    tag_cursor_advance(&recv->buf, &recv->cursor, end - recv->received);
    recv->received = end;
    if (recv->received == recv->get_end) {
        if (recv->split && !recv->peer_done) {
            recv->state = TAG_RECV_WAIT_DONE; /* the sender still writes its part */
            return;
        }
        tag_recv_split_finish(recv);
        return;
    }
    recv->state = TAG_RECV_WAIT_COOKIE;
    tag_send_done_msg(recv->worker, recv->ep, TAG_DONE_TO_SEND, recv->send_id, false, FERRY_OK,
                      recv->received, recv->id);
}

static bool tag_recv_get_issue(tag_recv_t *recv)
{
    ferry_iov_t stack[TAG_IOV_STACK], *pieces;
    uint64_t end = recv->section_end < recv->get_end ? recv->section_end : recv->get_end;
    uint64_t n = end - recv->received, bytes;
    size_t count = tag_pieces(&recv->buf, &recv->cursor, n, stack, SIZE_MAX, &pieces, &bytes);
    if (count == SIZE_MAX) {
        tag_recv_get_done(recv, FERRY_ERR_NO_MEMORY);
        return true;
    }
    if (recv->address != 0) {
        /* by address: read now, in this call */
        ferry_status_t status = recv->ep->tl->ep_peer_read(recv->ep->tl_ep, pieces, count,
                                                           recv->address + recv->received, n);
        if (pieces != stack)
            free(pieces);
        /* we cannot read its memory: COOP instead, unless our SPLIT CTS went out already
         * (then the transfer fails: DONE with the error) */
        if (status == FERRY_ERR_UNSUPPORTED && recv->received == 0 && !recv->split) {
            recv->address = 0;
            tag_recv_send_cts(recv, TAG_RNDV_COOP, NULL);
            return true;
        }
        tag_recv_get_done(recv, status);
        return true;
    }
    ferry_remote_iov_t remote = {.offset = 0, .length = (size_t)n};
    recv->inner = (ferry_completion_t){.cb = tag_recv_inner_cb, .count = 1, .status = FERRY_OK};
    ferry_status_t status =
        ferry_getv(recv->ep, pieces, count, &remote, 1, recv->rkey, &recv->inner);
    if (pieces != stack)
        free(pieces);
    if (status == FERRY_INPROGRESS) {
        recv->inner_busy = true;
        recv->refs++;
        return true;
    }
    if (status == FERRY_ERR_NO_RESOURCE) {
        tag_list_add(recv->worker, &fy_tag_worker_of(recv->worker)->retry, &recv->obj,
                     &recv->in_retry);
        return false;
    }
    tag_recv_get_done(recv, status);
    return true;
}

static void tag_recv_inner_cb(ferry_completion_t *comp)
{
    tag_recv_t *recv = fy_container_of(comp, tag_recv_t, inner);
    recv->inner_busy = false;
    if (recv->state == TAG_RECV_FINISHED) {
        if (recv->rkey != NULL) {
            ferry_rkey_release(recv->rkey);
            recv->rkey = NULL;
        }
        if (recv->user_waits_inner) /* nothing writes into the buffers any more */
            tag_recv_complete_user_now(recv);
        tag_recv_unref(recv);
        return;
    }
    recv->refs--; /* the user's reference keeps it */
    if (recv->state == TAG_RECV_GET)
        tag_recv_get_done(recv, comp->status);
}

void tag_rndv_recv_start(tag_recv_t *recv, ferry_ep_t *ep, const tag_wire_rts_t *rts)
{
    ferry_worker_t *worker = recv->worker;

    if (recv->info != NULL) {
        recv->info->sender = ep;
        recv->info->tag = rts->tag;
        recv->info->length = (size_t)rts->length;
        recv->info->peer = ep->peer.worker_uuid;
        recv->info->imm = rts->imm;
        recv->info->flags = (rts->flags & TAG_FLAG_IMM) ? FERRY_TAG_INFO_IMM : 0;
    }
    recv->state = TAG_RECV_DATA; /* matched: no longer posted */
    tag_count_received(worker, ep, rts->length);
    recv->ep = ep;
    recv->mode = (tag_rndv_mode_t)rts->mode;
    recv->send_id = rts->send_id;
    recv->length = rts->length;
    recv->accepted = rts->length < recv->buf.length ? rts->length : recv->buf.length;
    recv->received = 0;
    recv->get_end = recv->accepted;
    recv->split = false;
    recv->address = 0;
    recv->peer_done = false;
    recv->cursor = (tag_cursor_t){0, 0, 0};
    if (ep->state != FY_EP_OPEN) {
        tag_recv_finish(recv, ep->error);
        return;
    }
    recv->id = tag_table_insert(&fy_tag_worker_of(worker)->recv_table, recv);
    if (recv->id == 0) {
        tag_recv_abort(recv, FERRY_ERR_NO_MEMORY);
        return;
    }
    switch (recv->mode) {
    case TAG_RNDV_GET:
    case TAG_RNDV_SPLIT:
        if (recv->accepted == 0) {
            tag_send_done_msg(worker, ep, TAG_DONE_TO_SEND, recv->send_id, true, FERRY_OK, 0, 0);
            tag_recv_finish(recv, tag_recv_final_status(recv));
            return;
        }
        if (fy_tag_worker_of(worker)->mode_forced == 0 && !(ep->caps.flags & FY_TL_CAP_CMA)) {
            tag_recv_send_cts(recv, TAG_RNDV_COOP, NULL); /* we cannot read its memory */
            return;
        }
        /* by address only where this transport reads so; asked before a SPLIT's CTS, which
         * would commit us to reading */
        if ((rts->flags & TAG_FLAG_ADDR) && ep->tl->ep_peer_read == NULL) {
            tag_recv_send_cts(recv, TAG_RNDV_COOP, NULL); /* no read by address here */
            return;
        }
        if (recv->mode == TAG_RNDV_SPLIT && !tag_recv_split_start(recv))
            return;
        if (rts->flags & TAG_FLAG_ADDR)
            recv->address = tag_wire_rts_address(rts->rkey);
        tag_recv_get_section(recv, 0, rts->section, rts->rkey);
        return;
    case TAG_RNDV_PUT:
        tag_recv_put_start(recv);
        return;
    case TAG_RNDV_COOP:
    case TAG_RNDV_NULL:
        tag_recv_send_cts(recv, recv->mode, NULL);
        return;
    }
}

void tag_rndv_on_data(ferry_worker_t *worker, ferry_ep_t *ep, const tag_wire_data_t *data,
                      const void *payload, size_t length)
{
    tag_recv_t *recv = tag_table_lookup(&fy_tag_worker_of(worker)->recv_table, data->recv_id);

    if (recv == NULL || recv->ep != ep) {
        tag_warn(worker, TAG_WARN_UNKNOWN_ID,
                 "DATA (%zu bytes at %llu) from endpoint %p for recv id 0x%llx, which is %s",
                 length, (unsigned long long)data->offset, (void *)ep,
                 (unsigned long long)data->recv_id,
                 recv == NULL ? "finished or unknown" : "a receive from another endpoint");
        return;
    }
    if (recv->state != TAG_RECV_DATA) {
        tag_warn(worker, TAG_WARN_WRONG_STATE,
                 "DATA from endpoint %p for recv id 0x%llx, which does not expect DATA (mode %u)",
                 (void *)ep, (unsigned long long)data->recv_id, recv->mode);
        return;
    }
    if (data->offset != recv->received || length > recv->accepted - recv->received) {
        tag_warn(worker, TAG_WARN_BAD_TRANSFER,
                 "DATA [%llu, +%zu) from endpoint %p does not fit the receive (next byte %llu "
                 "of %llu accepted)",
                 (unsigned long long)data->offset, length, (void *)ep,
                 (unsigned long long)recv->received, (unsigned long long)recv->accepted);
        tag_recv_abort(recv, FERRY_ERR_PROTOCOL);
        return;
    }
    if (length == 0 || payload != tag_cursor_at(&recv->buf, &recv->cursor)) /* else placed */
        tag_cursor_scatter(&recv->buf, &recv->cursor, payload, length);
    else
        tag_cursor_advance(&recv->buf, &recv->cursor, length);
    recv->received += length;
    if (recv->received == recv->accepted)
        tag_recv_finish(recv, tag_recv_final_status(recv));
}

/* Placement (proto/am.h) of a DATA payload: straight into the receive buffer when the next
 * bytes of the receive are one contiguous piece; else NULL (the transport buffers it and
 * tag_rndv_on_data copies). The checks are tag_rndv_on_data's. */
void *tag_rndv_place_data(void *arg, ferry_ep_t *ep, const void *header, size_t header_length,
                          size_t length)
{
    ferry_worker_t *worker = arg;
    tag_wire_msg_t msg;
    const char *why;
    if (tag_wire_decode(FY_AM_ID_TAG_DATA, header, header_length, length, &msg, &why) != FERRY_OK)
        return NULL; /* refused again, and warned about, when delivered */
    tag_recv_t *recv = tag_table_lookup(&fy_tag_worker_of(worker)->recv_table, msg.u.data.recv_id);
    if (recv == NULL || recv->ep != ep || recv->state != TAG_RECV_DATA ||
        msg.u.data.offset != recv->received || length > recv->accepted - recv->received ||
        recv->cursor.index >= recv->buf.iovcnt ||
        recv->buf.iov[recv->cursor.index].length - recv->cursor.offset < length)
        return NULL;
    return tag_cursor_at(&recv->buf, &recv->cursor);
}

static void tag_rndv_on_done_recv(ferry_worker_t *worker, ferry_ep_t *ep,
                                  const tag_wire_done_t *done)
{
    tag_recv_t *recv = tag_table_lookup(&fy_tag_worker_of(worker)->recv_table, done->id);

    if (recv == NULL || recv->ep != ep) {
        tag_warn(worker, TAG_WARN_UNKNOWN_ID,
                 "DONE from endpoint %p for recv id 0x%llx, which is %s", (void *)ep,
                 (unsigned long long)done->id,
                 recv == NULL ? "finished or unknown" : "a receive from another endpoint");
        return;
    }
    if (done->status != FERRY_OK) { /* the sender gave up */
        tag_recv_finish(recv, (ferry_status_t)done->status);
        return;
    }
    if (recv->split) { /* the sender wrote its part; ours may still be read */
        if (recv->peer_done || !done->final ||
            (recv->state != TAG_RECV_GET && recv->state != TAG_RECV_WAIT_COOKIE &&
             recv->state != TAG_RECV_WAIT_DONE)) {
            tag_warn(worker, TAG_WARN_WRONG_STATE,
                     "DONE from endpoint %p for SPLIT recv id 0x%llx, which does not expect one",
                     (void *)ep, (unsigned long long)done->id);
            return;
        }
        if (done->done != recv->accepted) {
            tag_warn(worker, TAG_WARN_BAD_TRANSFER,
                     "DONE from endpoint %p says %llu bytes were written, %llu were accepted",
                     (void *)ep, (unsigned long long)done->done,
                     (unsigned long long)recv->accepted);
            tag_recv_abort(recv, FERRY_ERR_PROTOCOL);
            return;
        }
        recv->peer_done = true;
        if (recv->state == TAG_RECV_WAIT_DONE)
            tag_recv_split_finish(recv);
        return;
    }
    if (recv->state != TAG_RECV_WAIT_DONE) {
        tag_warn(worker, TAG_WARN_WRONG_STATE,
                 "DONE from endpoint %p for recv id 0x%llx (mode %u), which does not expect one",
                 (void *)ep, (unsigned long long)done->id, recv->mode);
        return;
    }
    if (done->done != recv->accepted) {
        tag_warn(worker, TAG_WARN_BAD_TRANSFER,
                 "DONE from endpoint %p says %llu bytes were written, %llu were accepted",
                 (void *)ep, (unsigned long long)done->done, (unsigned long long)recv->accepted);
        tag_recv_finish(recv, FERRY_ERR_PROTOCOL);
        return;
    }
    recv->received = recv->accepted;
    tag_recv_finish(recv, tag_recv_final_status(recv));
}

static void tag_rndv_on_done_send(ferry_worker_t *worker, ferry_ep_t *ep,
                                  const tag_wire_done_t *done)
{
    tag_send_t *send = tag_table_lookup(&fy_tag_worker_of(worker)->send_table, done->id);

    if (send == NULL || send->ep != ep) {
        tag_warn(worker, TAG_WARN_UNKNOWN_ID,
                 "DONE from endpoint %p for send id 0x%llx, which is %s", (void *)ep,
                 (unsigned long long)done->id,
                 send == NULL ? "finished or unknown" : "a send to another endpoint");
        return;
    }
    if (done->status != FERRY_OK) { /* the receiver gave up */
        tag_send_finish(send, (ferry_status_t)done->status);
        return;
    }
    if (send->state == TAG_SEND_WAIT_ACK) { /* a synchronous EAGER: the receiver matched it */
        if (done->final)
            tag_send_finish(send, FERRY_OK);
        else
            tag_warn(worker, TAG_WARN_WRONG_STATE,
                     "a section DONE from endpoint %p for the synchronous EAGER 0x%llx", (void *)ep,
                     (unsigned long long)done->id);
        return;
    }
    /* SPLIT: the receiver may finish a section of its part while we still write ours */
    bool writing = send->mode == TAG_RNDV_SPLIT && !done->final &&
                   (send->state == TAG_SEND_PUT || send->state == TAG_SEND_FLUSH);
    if (!tag_mode_reads(send->mode) || (send->state != TAG_SEND_WAIT_DONE && !writing)) {
        tag_warn(worker, TAG_WARN_WRONG_STATE,
                 "DONE from endpoint %p for send id 0x%llx (mode %u), which does not expect one",
                 (void *)ep, (unsigned long long)done->id, send->mode);
        return;
    }
    if (done->final) {
        send->sent = done->done;
        tag_send_finish(send, FERRY_OK);
        return;
    }
    /* a section was read: the next key */
    send->recv_id = done->reply_id;
    if (done->done != send->section_off + send->section_len || done->done >= send->buf.length) {
        tag_warn(worker, TAG_WARN_BAD_TRANSFER,
                 "DONE from endpoint %p ends a section at %llu, the section ends at %llu of %llu",
                 (void *)ep, (unsigned long long)done->done,
                 (unsigned long long)(send->section_off + send->section_len),
                 (unsigned long long)send->buf.length);
        tag_send_abort(send, FERRY_ERR_PROTOCOL);
        return;
    }
    ferry_mem_deregister(send->mem);
    send->mem = NULL;
    send->sent = done->done;
    tag_wire_msg_t msg = {.id = FY_AM_ID_TAG_COOKIE};
    ferry_status_t status = tag_send_register_section(send, msg.u.cookie.rkey);
    if (status != FERRY_OK) {
        tag_send_abort(send, status);
        return;
    }
    msg.u.cookie.version = TAG_WIRE_VERSION;
    msg.u.cookie.recv_id = send->recv_id;
    msg.u.cookie.offset = send->section_off;
    msg.u.cookie.length = send->section_len;
    fy_trace("tagged messages: COOKIE for [%llu, +%llu) of send id 0x%llx",
             (unsigned long long)send->section_off, (unsigned long long)send->section_len,
             (unsigned long long)send->id);
    status = tag_ctl_send(worker, ep, &msg);
    if (status != FERRY_OK)
        tag_send_finish(send, status);
}

void tag_rndv_on_done(ferry_worker_t *worker, ferry_ep_t *ep, const tag_wire_done_t *done)
{
    if (done->target == TAG_DONE_TO_RECV)
        tag_rndv_on_done_recv(worker, ep, done);
    else
        tag_rndv_on_done_send(worker, ep, done);
}

void tag_rndv_on_cookie(ferry_worker_t *worker, ferry_ep_t *ep, const tag_wire_cookie_t *cookie)
{
    tag_recv_t *recv = tag_table_lookup(&fy_tag_worker_of(worker)->recv_table, cookie->recv_id);

    if (recv == NULL || recv->ep != ep) {
        tag_warn(worker, TAG_WARN_UNKNOWN_ID,
                 "COOKIE from endpoint %p for recv id 0x%llx, which is %s", (void *)ep,
                 (unsigned long long)cookie->recv_id,
                 recv == NULL ? "finished or unknown" : "a receive from another endpoint");
        return;
    }
    if (recv->state != TAG_RECV_WAIT_COOKIE) {
        tag_warn(worker, TAG_WARN_WRONG_STATE,
                 "COOKIE from endpoint %p for recv id 0x%llx, which does not wait for one",
                 (void *)ep, (unsigned long long)cookie->recv_id);
        return;
    }
    tag_recv_get_section(recv, cookie->offset, cookie->length, cookie->rkey);
}

/* ------------------------------------------------------------------ progress, failure */

unsigned tag_rndv_progress(ferry_worker_t *worker)
{
    fy_tag_worker_t *tw = fy_tag_worker_of(worker);
    fy_list_link_t *link;
    fy_list_t again;
    unsigned count = 0;

    if (!fy_list_is_empty(&tw->retry)) {
        fy_list_init(&again);
        fy_list_splice_tail(&again, &tw->retry);
        while ((link = fy_list_pop_head(&again)) != NULL) {
            tag_obj_t *obj = fy_container_of(link, tag_obj_t, link);
            tag_need_progress(worker, -1);
            if (obj->magic == TAG_MAGIC_RECV) {
                tag_recv_t *recv = (tag_recv_t *)obj;
                recv->in_retry = false;
                count += tag_recv_get_issue(recv);
            } else {
                tag_send_t *send = (tag_send_t *)obj;
                send->in_list = false;
                if (send->state == TAG_SEND_PUT)
                    count += tag_send_put_issue(send);
                else
                    count += tag_send_flush_issue(send);
            }
        }
    }
    if (!fy_list_is_empty(&tw->pump)) {
        fy_list_init(&again);
        fy_list_splice_tail(&again, &tw->pump);
        while ((link = fy_list_pop_head(&again)) != NULL) {
            tag_send_t *send = (tag_send_t *)fy_container_of(link, tag_obj_t, link);
            send->in_list = false;
            tag_need_progress(worker, -1);
            count += tag_send_pump(send);
        }
    }
    return count;
}

void tag_rndv_ep_failed(ferry_worker_t *worker, ferry_ep_t *ep, ferry_status_t status)
{
    fy_tag_worker_t *tw = fy_tag_worker_of(worker);
    for (uint32_t i = 0; i < tw->send_table.capacity; i++) {
        tag_send_t *send = tw->send_table.slots[i];
        if (send != NULL && send->ep == ep)
            tag_send_finish(send, status);
    }
    for (uint32_t i = 0; i < tw->recv_table.capacity; i++) {
        tag_recv_t *recv = tw->recv_table.slots[i];
        if (recv != NULL && recv->ep == ep)
            tag_recv_finish(recv, status);
    }
}
