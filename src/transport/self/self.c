/* The self transport: active messages from a worker to itself. A send copies the message into
 * a queue; the worker's progress delivers it. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/compiler.h"
#include "core/list.h"
#include "core/log.h"
#include "core/pool.h"
#include "transport/transport.h"

/* Messages whose header + payload fit here travel in the queue entry itself. */
#define SELF_INLINE_MAX 256
/* Messages queued and not yet delivered, beyond which sends return FERRY_ERR_NO_RESOURCE. */
#define SELF_QUEUE_MAX 4096

typedef struct self_msg {
    fy_list_link_t link;
    fy_tl_ep_t *tl_ep;
    uint8_t id;
    uint16_t header_length;
    size_t length;
    void *data; /* payload: inside inline_data, or a keepable buffer for large messages */
    uint8_t inline_data[FERRY_AM_HEADER_MAX + SELF_INLINE_MAX];
} self_msg_t;

struct fy_tl_worker {
    ferry_worker_t *worker;
    const fy_tl_local_t *local;
    fy_list_t queue; /* self_msg_t to deliver, in order */
    fy_pool_t msgs;  /* self_msg_t */
    unsigned queued;
};

extern const fy_tl_ops_t fy_tl_self_ops;

struct fy_tl_ep {
    fy_tl_worker_t *tlw;
    ferry_ep_t *ep;
    unsigned queued; /* this endpoint's messages not delivered yet */
    bool closing;    /* graceful close: terminated when queued reaches 0 */
};

static ferry_status_t self_query(const fy_config_set_t *config, fy_tl_caps_t *caps, char *why,
                                 size_t why_len)
{
    (void)config;
    (void)why;
    (void)why_len;
    memset(caps, 0, sizeof(*caps));
    /* one-sided operations go through the target-executed protocol over the ordered queue */
    caps->flags =
        FY_TL_CAP_AM | FY_TL_CAP_AM_ORDERED | FY_TL_CAP_SAME_WORKER | FY_TL_CAP_RMA_ORDERED;
    caps->max_short = SELF_INLINE_MAX;
    caps->max_bcopy = SIZE_MAX;
    caps->max_iov = SIZE_MAX;
    caps->latency_ns = 10;
    caps->bandwidth_Bps = 10e9;
    return FERRY_OK;
}

static ferry_status_t self_init(ferry_worker_t *worker, const fy_tl_local_t *local,
                                fy_tl_worker_t **tlw_p)
{
    fy_tl_worker_t *tlw = calloc(1, sizeof(*tlw));
    if (tlw == NULL) {
        fy_error("calloc(%zu) for the self transport failed", sizeof(*tlw));
        return FERRY_ERR_NO_MEMORY;
    }
    tlw->worker = worker;
    tlw->local = local;
    *local->poll_skip |= local->poll_bit; /* nothing queued: progress need not call poll */
    fy_list_init(&tlw->queue);
    fy_pool_init(&tlw->msgs, sizeof(self_msg_t), 16, "self-transport messages");
    *tlw_p = tlw;
    return FERRY_OK;
}

static void self_msg_release(fy_tl_worker_t *tlw, self_msg_t *msg)
{
    fy_pool_put(&tlw->msgs, msg);
}

static void self_finalize(fy_tl_worker_t *tlw)
{
    fy_list_link_t *link;
    while ((link = fy_list_pop_head(&tlw->queue)) != NULL) {
        self_msg_t *msg = fy_list_entry(link, self_msg_t, link);
        if (msg->data != NULL && msg->data != msg->inline_data + msg->header_length)
            fy_am_buffer_free(msg->data);
    }
    fy_pool_destroy(&tlw->msgs, NULL, NULL);
    free(tlw);
}

static ferry_status_t self_address(fy_tl_worker_t *tlw, void *buffer, size_t *length_p)
{
    (void)tlw;
    (void)buffer;
    *length_p = 0; /* the worker uuid in the address header is all self needs */
    return FERRY_OK;
}

/* A compact address carries the worker id: all self needs (an empty record, as self_address
 * writes). */
static ferry_status_t self_compact_record(const fy_tl_peer_t *peer, const fy_tl_compact_t *compact,
                                          void *buffer, size_t *length_p)
{
    (void)peer;
    (void)compact;
    (void)buffer;
    *length_p = 0;
    return FERRY_OK;
}

static bool self_reachable(fy_tl_worker_t *tlw, const fy_tl_peer_t *peer, const void *record,
                           size_t record_length)
{
    (void)record;
    (void)record_length;
    return peer->worker_uuid == tlw->local->worker_uuid;
}

static ferry_status_t self_record_describe(fy_tl_worker_t *tlw, const fy_tl_peer_t *peer,
                                           const void *record, size_t record_length, char *text,
                                           size_t text_len, bool *reachable_p, char *why,
                                           size_t why_len)
{
    (void)record;
    if (record_length == 0)
        snprintf(text, text_len, "empty (the worker id in the address header is all it needs)");
    else
        snprintf(text, text_len,
                 "%zu bytes, unused (the worker id in the address header is all it needs)",
                 record_length);
    if (tlw != NULL) {
        *reachable_p = self_reachable(tlw, peer, record, record_length);
        if (!*reachable_p)
            snprintf(why, why_len, "another worker (self reaches only its own worker)");
    }
    return FERRY_OK;
}

static ferry_status_t self_ep_init(fy_tl_worker_t *tlw, ferry_ep_t *ep, const fy_tl_peer_t *peer,
                                   const void *record, size_t record_length, fy_tl_caps_t *caps_p,
                                   fy_tl_ep_t **tlep_p)
{
    (void)peer;
    (void)caps_p;
    (void)record;
    (void)record_length;
    fy_tl_ep_t *tlep = calloc(1, sizeof(*tlep));
    if (tlep == NULL) {
        fy_error("calloc(%zu) for a self endpoint failed", sizeof(*tlep));
        return FERRY_ERR_NO_MEMORY;
    }
    tlep->tlw = tlw;
    tlep->ep = ep;
    fy_ep_connected(ep); /* nothing to connect */
    *tlep_p = tlep;
    return FERRY_OK;
}

static ferry_status_t self_ep_terminate(fy_tl_ep_t *tlep)
{
    if (tlep->queued == 0)
        return FERRY_OK;
    tlep->closing = true; /* self_poll terminates it once the queued messages are delivered */
    return FERRY_INPROGRESS;
}

static void self_ep_destroy(fy_tl_ep_t *tlep)
{
    fy_tl_worker_t *tlw = tlep->tlw;
    fy_list_link_t *next;
    /* Drop this endpoint's undelivered messages. */
    for (fy_list_link_t *l = fy_list_first(&tlw->queue); l != fy_list_end(&tlw->queue); l = next) {
        next = l->next;
        self_msg_t *msg = fy_list_entry(l, self_msg_t, link);
        if (msg->tl_ep != tlep)
            continue;
        fy_list_remove(l);
        tlw->queued--;
        if (msg->data != NULL && msg->data != msg->inline_data + msg->header_length)
            fy_am_buffer_free(msg->data);
        self_msg_release(tlw, msg);
    }
    free(tlep);
}

static self_msg_t *self_msg_get(fy_tl_worker_t *tlw)
{
    if (tlw->queued >= SELF_QUEUE_MAX)
        return NULL;
    return fy_pool_get(&tlw->msgs);
}

static ferry_status_t self_sendv(fy_tl_ep_t *tlep, uint8_t id, const void *header,
                                 size_t header_length, const ferry_iov_t *iov, size_t iovcnt,
                                 ferry_completion_t *comp)
{
    fy_tl_worker_t *tlw = tlep->tlw;
    size_t length = 0;
    uint8_t *dst;
    (void)comp;

    for (size_t i = 0; i < iovcnt; i++)
        length += iov[i].length;
    self_msg_t *msg = self_msg_get(tlw);
    if (msg == NULL)
        return tlw->queued >= SELF_QUEUE_MAX ? FERRY_ERR_NO_RESOURCE : FERRY_ERR_NO_MEMORY;
    msg->tl_ep = tlep;
    msg->id = id;
    msg->header_length = (uint16_t)header_length;
    msg->length = length;
    if (header_length > 0)
        memcpy(msg->inline_data, header, header_length);
    if (length <= SELF_INLINE_MAX) {
        dst = msg->inline_data + header_length;
    } else {
        dst = fy_am_buffer_alloc(length);
        if (dst == NULL) {
            self_msg_release(tlw, msg);
            return FERRY_ERR_NO_MEMORY;
        }
    }
    msg->data = dst;
    for (size_t i = 0; i < iovcnt; i++) {
        if (iov[i].length > 0)
            memcpy(dst, iov[i].buffer, iov[i].length);
        dst += iov[i].length;
    }
    fy_list_push_tail(&tlw->queue, &msg->link);
    tlw->queued++;
    *tlw->local->poll_skip &= ~tlw->local->poll_bit;
    tlep->queued++;
    return FERRY_OK;
}

static ferry_status_t self_send_short(fy_tl_ep_t *tlep, uint8_t id, const void *header,
                                      size_t header_length, const void *payload, size_t length)
{
    ferry_iov_t iov = {.buffer = (void *)payload, .length = length};
    return fy_ep_am_count_short(tlep->ep, length,
                                self_sendv(tlep, id, header, header_length, &iov, 1, NULL));
}

static unsigned self_poll(fy_tl_worker_t *tlw)
{
    unsigned count = 0;
    /* Deliver only what was queued before this call, so that a handler that sends to itself
     * cannot keep progress from returning. */
    unsigned budget = tlw->queued;
    fy_list_link_t *link;
    while (count < budget && (link = fy_list_pop_head(&tlw->queue)) != NULL) {
        self_msg_t *msg = fy_list_entry(link, self_msg_t, link);
        tlw->queued--;
        count++;
        if (--msg->tl_ep->queued == 0 && msg->tl_ep->closing) {
            /* the last message before a graceful close: the close completes from the
             * deferred queue, after this delivery (done before it, as the handler may
             * destroy the endpoint) */
            msg->tl_ep->closing = false;
            fy_ep_terminated(msg->tl_ep->ep);
        }
        if (msg->data != msg->inline_data + msg->header_length) {
            fy_am_deliver_buffer(tlw->worker, msg->tl_ep->ep, msg->id, msg->inline_data,
                                 msg->header_length, msg->data, msg->length);
        } else {
            fy_am_deliver(tlw->worker, msg->tl_ep->ep, msg->id, msg->inline_data,
                          msg->header_length, msg->length ? msg->data : NULL, msg->length, 0);
        }
        self_msg_release(tlw, msg);
    }
    if (tlw->queued == 0)
        *tlw->local->poll_skip |= tlw->local->poll_bit;
    return count;
}

static ferry_status_t self_arm(fy_tl_worker_t *tlw)
{
    return fy_list_is_empty(&tlw->queue) ? FERRY_OK : FERRY_ERR_BUSY;
}

const fy_tl_ops_t fy_tl_self_ops = {
    .name = "self",
    .id = 1,
    .query = self_query,
    .init = self_init,
    .finalize = self_finalize,
    .address = self_address,
    .compact_fill = NULL,
    .compact_record = self_compact_record,
    .reachable = self_reachable,
    .record_describe = self_record_describe,
    .ep_init = self_ep_init,
    .ep_terminate = self_ep_terminate,
    .ep_destroy = self_ep_destroy,
    .send_short = self_send_short,
    .sendv = self_sendv,
    .poll = self_poll,
    .arm = self_arm,
    .disarm = NULL,
    .am_data_release = NULL,
    .describe = NULL,
};
