/*
 * libferry-fi — the provider's control messages: ferry active messages whose headers
 * ctrl_wire.c checks before anything is used (a peer is not trusted: a malformed message is
 * dropped with a rate-limited warning).
 *
 * Handlers run inside ferry_worker_progress: they only record what arrived; replies are queued
 * (fy_ofi_ctrl_queue) and sent after progress returned, so no ferry call is made from inside a
 * ferry callback.
 */
#include <stdlib.h>
#include <string.h>

#include "ofi.h"

#define BAD_WARN_MAX 8u

static unsigned bad_warned; /* all domains of the process: atomic */

static ferry_status_t bad_message(unsigned id, size_t header_length, size_t length)
{
    unsigned n = __atomic_fetch_add(&bad_warned, 1, __ATOMIC_RELAXED);
    if (n < BAD_WARN_MAX)
        FY_OFI_WARN(FI_LOG_EP_DATA,
                    "dropped a malformed provider control message (id %u, header %zu bytes, "
                    "payload %zu bytes)%s\n",
                    id, header_length, length,
                    n + 1 == BAD_WARN_MAX ? "; further ones are dropped silently" : "");
    return FERRY_OK;
}

static ferry_status_t key_req_handler(void *arg, const void *header, size_t header_length,
                                      void *data, size_t length,
                                      const ferry_am_recv_params_t *params)
{
    (void)data;
    fy_ofi_ctrl_msg_t msg;
    if (!fy_ofi_ctrl_decode(FY_OFI_AM_KEY_REQ, header, header_length, length, &msg))
        return bad_message(FY_OFI_AM_KEY_REQ, header_length, length);
    fy_ofi_key_request(arg, params->reply_ep, msg.fetch_id, msg.key);
    return FERRY_OK;
}

static ferry_status_t key_rep_handler(void *arg, const void *header, size_t header_length,
                                      void *data, size_t length,
                                      const ferry_am_recv_params_t *params)
{
    (void)params;
    fy_ofi_ctrl_msg_t msg;
    if (!fy_ofi_ctrl_decode(FY_OFI_AM_KEY_REP, header, header_length, length, &msg))
        return bad_message(FY_OFI_AM_KEY_REP, header_length, length);
    fy_ofi_key_reply(arg, msg.fetch_id, msg.status, data, length);
    return FERRY_OK;
}

static ferry_status_t wdata_handler(void *arg, const void *header, size_t header_length, void *data,
                                    size_t length, const ferry_am_recv_params_t *params)
{
    (void)data, (void)params;
    fy_ofi_ctrl_msg_t msg;
    if (!fy_ofi_ctrl_decode(FY_OFI_AM_WDATA, header, header_length, length, &msg))
        return bad_message(FY_OFI_AM_WDATA, header_length, length);
    fy_ofi_write_notified(arg, msg.data, msg.has_data, msg.length);
    return FERRY_OK;
}

ferry_status_t fy_ofi_ctrl_register(fy_ofi_ep_t *ep)
{
    struct {
        unsigned id;
        ferry_am_handler_cb_t cb;
    } handlers[] = {
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

ferry_status_t fy_ofi_ctrl_queue(fy_ofi_ep_t *ep, ferry_ep_t *fep, const fy_ofi_ctrl_msg_t *msg,
                                 const void *payload, size_t payload_len)
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
    req->ctrl_len = fy_ofi_ctrl_encode(msg, req->ctrl);
    req->am_id = msg->id;
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
