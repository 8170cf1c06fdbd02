/*
 * libferry-fi — the provider's control messages: ferry active messages with fixed,
 * versioned, little-endian headers, checked before use (a peer is not trusted: a malformed
 * message is dropped with a rate-limited warning).
 *
 *   ACK      u8 version 1, 3 zero bytes, u32 send id                      (shim G4)
 *   KEY_REQ  u8 version 1, 3 zero bytes, u32 fetch id, u64 key
 *   KEY_REP  u8 version 1, 3 zero bytes, u32 fetch id, i32 ferry status, 4 zero bytes;
 *            payload: the packed ferry key (status FERRY_OK only)
 *   WDATA    u8 version 1, u8 flags (1: data is remote CQ data), 2 zero bytes, 4 zero bytes,
 *            u64 data, u64 length
 *
 * Handlers run inside ferry_worker_progress: they only record what arrived; replies are queued
 * (fy_ofi_ctrl_queue) and sent after progress returned, so no ferry call is made from inside a
 * ferry callback.
 */
#include <stdlib.h>
#include <string.h>

#include "ofi.h"
#include "wire.h"

#define CTRL_VERSION 1u
#define ACK_LEN 8u
#define KEY_REQ_LEN 16u
#define KEY_REP_LEN 16u
#define WDATA_LEN 24u
#define KEY_PACKED_MAX 1024u
#define BAD_WARN_MAX 8u

static unsigned bad_warned;

static ferry_status_t bad_message(unsigned id, size_t header_length, size_t length)
{
    if (bad_warned < BAD_WARN_MAX) {
        bad_warned++;
        FY_OFI_WARN(FI_LOG_EP_DATA,
                    "dropped a malformed provider control message (id %u, header %zu bytes, "
                    "payload %zu bytes)%s\n",
                    id, header_length, length,
                    bad_warned == BAD_WARN_MAX ? "; further ones are dropped silently" : "");
    }
    return FERRY_OK;
}

static bool header_ok(const uint8_t *h, size_t len, size_t want)
{
    return len == want && h[0] == CTRL_VERSION && h[2] == 0 && h[3] == 0;
}

static ferry_status_t ack_handler(void *arg, const void *header, size_t header_length, void *data,
                                  size_t length, const ferry_am_recv_params_t *params)
{
    (void)data, (void)params;
    fy_ofi_ep_t *ep = arg;
    const uint8_t *h = header;
    if (!header_ok(h, header_length, ACK_LEN) || h[1] != 0 || length != 0)
        return bad_message(FY_OFI_AM_ACK, header_length, length);
    fy_ofi_req_t *req = fy_ofi_req_by_send_id(ep, fy_ofi_get_u32(h + 4));
    if (req == NULL)
        return FERRY_OK; /* its send failed and completed already, or a stale id */
    req->flags |= FY_OFI_REQ_ACKED;
    if (req->flags & FY_OFI_REQ_LOCAL_DONE)
        fy_ofi_ep_defer(req); /* completes after progress */
    return FERRY_OK;
}

static ferry_status_t key_req_handler(void *arg, const void *header, size_t header_length,
                                      void *data, size_t length,
                                      const ferry_am_recv_params_t *params)
{
    (void)data;
    const uint8_t *h = header;
    if (!header_ok(h, header_length, KEY_REQ_LEN) || h[1] != 0 || length != 0)
        return bad_message(FY_OFI_AM_KEY_REQ, header_length, length);
    fy_ofi_key_request(arg, params->reply_ep, fy_ofi_get_u32(h + 4), fy_ofi_get_u64(h + 8));
    return FERRY_OK;
}

static ferry_status_t key_rep_handler(void *arg, const void *header, size_t header_length,
                                      void *data, size_t length,
                                      const ferry_am_recv_params_t *params)
{
    (void)params;
    const uint8_t *h = header;
    if (!header_ok(h, header_length, KEY_REP_LEN) || h[1] != 0 || fy_ofi_get_u32(h + 12) != 0 ||
        length > KEY_PACKED_MAX)
        return bad_message(FY_OFI_AM_KEY_REP, header_length, length);
    ferry_status_t status = (ferry_status_t)(int32_t)fy_ofi_get_u32(h + 8);
    if ((status == FERRY_OK) != (length > 0) || status > 0)
        return bad_message(FY_OFI_AM_KEY_REP, header_length, length);
    fy_ofi_key_reply(arg, fy_ofi_get_u32(h + 4), status, data, length);
    return FERRY_OK;
}

static ferry_status_t wdata_handler(void *arg, const void *header, size_t header_length, void *data,
                                    size_t length, const ferry_am_recv_params_t *params)
{
    (void)data, (void)params;
    const uint8_t *h = header;
    if (!header_ok(h, header_length, WDATA_LEN) || (h[1] & ~1u) != 0 ||
        fy_ofi_get_u32(h + 4) != 0 || length != 0)
        return bad_message(FY_OFI_AM_WDATA, header_length, length);
    fy_ofi_write_notified(arg, fy_ofi_get_u64(h + 8), h[1] & 1u, fy_ofi_get_u64(h + 16));
    return FERRY_OK;
}

ferry_status_t fy_ofi_ctrl_register(fy_ofi_ep_t *ep)
{
    struct {
        unsigned id;
        ferry_am_handler_cb_t cb;
    } handlers[] = {
        {FY_OFI_AM_ACK, ack_handler},
        {FY_OFI_AM_KEY_REQ, key_req_handler},
        {FY_OFI_AM_KEY_REP, key_rep_handler},
        {FY_OFI_AM_WDATA, wdata_handler},
    };
    for (size_t i = 0; i < sizeof(handlers) / sizeof(handlers[0]); i++) {
        ferry_status_t st = ferry_am_set_handler(ep->worker, handlers[i].id, handlers[i].cb, ep);
        if (st != FERRY_OK)
            return st;
    }
    return FERRY_OK;
}

/* ---------------------------------------------------------------- the send queue */

static void ctrl_done_cb(ferry_completion_t *comp)
{
    fy_ofi_req_t *req = FY_OFI_CONTAINER(comp, fy_ofi_req_t, comp);
    if (comp->status != FERRY_OK)
        FY_OFI_INFO(FI_LOG_EP_DATA, "control message %u failed: %s\n", req->am_id,
                    ferry_status_string(comp->status));
    if (req->kind == FY_OFI_REQ_CTRL) {
        fy_ofi_req_free(req);
        return;
    }
    /* a one-sided request's notification (rma.c): its last step */
    fy_ofi_req_complete(req, comp->status);
}

ferry_status_t fy_ofi_ctrl_queue(fy_ofi_ep_t *ep, ferry_ep_t *fep, unsigned am_id,
                                 const void *header, size_t header_len, const void *payload,
                                 size_t payload_len)
{
    fy_ofi_req_t *req = fy_ofi_req_alloc(ep, FY_OFI_REQ_CTRL, FY_OFI_BUDGET_NONE);
    if (req == NULL)
        return FERRY_ERR_NO_MEMORY;
    if (payload_len > 0) {
        req->payload = malloc(payload_len);
        if (req->payload == NULL) {
            fy_ofi_req_free(req);
            return FERRY_ERR_NO_MEMORY;
        }
        memcpy(req->payload, payload, payload_len);
        req->payload_len = payload_len;
    }
    memcpy(req->ctrl, header, header_len);
    req->ctrl_len = header_len;
    req->am_id = am_id;
    req->fep = fep;
    fy_ofi_ep_defer(req);
    return FERRY_OK;
}

bool fy_ofi_ctrl_send(fy_ofi_req_t *req)
{
    ferry_iov_t iov = {.buffer = req->payload, .length = req->payload_len};
    req->comp.cb = ctrl_done_cb;
    req->comp.count = 1;
    req->comp.status = FERRY_OK;
    ferry_status_t st = ferry_am_send(req->fep, req->am_id, req->ctrl, req->ctrl_len, &iov,
                                      req->payload_len > 0 ? 1 : 0, &req->comp);
    switch (st) {
    case FERRY_INPROGRESS:
        return true;
    case FERRY_ERR_NO_RESOURCE:
        return false;
    default:
        req->comp.count = 0;
        req->comp.status = st;
        ctrl_done_cb(&req->comp);
        return true;
    }
}

void fy_ofi_ctrl_drop(fy_ofi_ep_t *ep, ferry_ep_t *fep)
{
    fy_ofi_list_t *item = ep->deferred.next;
    while (item != &ep->deferred) {
        fy_ofi_list_t *next = item->next;
        fy_ofi_req_t *req = FY_OFI_CONTAINER(item, fy_ofi_req_t, link);
        if (req->kind == FY_OFI_REQ_CTRL && req->fep == fep) {
            fy_ofi_list_remove(item);
            fy_ofi_req_free(req);
        }
        item = next;
    }
}

void fy_ofi_ack_queue(fy_ofi_ep_t *ep, ferry_ep_t *sender, uint32_t send_id)
{
    uint8_t h[ACK_LEN] = {CTRL_VERSION};
    fy_ofi_put_u32(h + 4, send_id);
    if (fy_ofi_ctrl_queue(ep, sender, FY_OFI_AM_ACK, h, sizeof(h), NULL, 0) != FERRY_OK)
        FY_OFI_WARN(FI_LOG_EP_DATA, "out of memory: a delivery ack is lost (its sender waits)\n");
}
