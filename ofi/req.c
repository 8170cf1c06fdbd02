/*
 * libferry-fi — the requests of an endpoint: allocated in chunks that are never freed before the
 * endpoint (an index names a request for the life of the endpoint, which the delivery acks of
 * shim G4 rely on), kept on a free list. No allocation and no lock in steady state.
 */
#include <stdlib.h>
#include <string.h>

#include "ofi.h"

#define CHUNK_REQS 64u
#define SEND_ID_INDEX_BITS 20u
#define SEND_ID_INDEX_MASK ((1u << SEND_ID_INDEX_BITS) - 1u)

static bool pool_grow(fy_ofi_ep_t *ep)
{
    if ((ep->chunk_count + 1) * CHUNK_REQS > SEND_ID_INDEX_MASK)
        return false;
    fy_ofi_req_t **chunks = realloc(ep->chunks, (ep->chunk_count + 1) * sizeof(*chunks));
    if (chunks == NULL)
        return false;
    ep->chunks = chunks;
    fy_ofi_req_t *chunk = calloc(CHUNK_REQS, sizeof(*chunk));
    if (chunk == NULL)
        return false;
    ep->chunks[ep->chunk_count] = chunk;
    for (size_t i = CHUNK_REQS; i-- > 0;) {
        chunk[i].index = (uint32_t)(ep->chunk_count * CHUNK_REQS + i);
        chunk[i].ep = ep;
        chunk[i].comp.count = -1; /* free */
        chunk[i].link.next = (fy_ofi_list_t *)ep->free_reqs;
        ep->free_reqs = &chunk[i];
    }
    ep->chunk_count++;
    return true;
}

/* What a request allocated for itself (control payloads, atomics of several elements). */
static void req_buffers_free(fy_ofi_req_t *req)
{
    free(req->payload);
    req->payload = NULL;
    if (req->operands != &req->operand_one)
        free(req->operands);
    if (req->compares != &req->compare_one)
        free(req->compares);
    if (req->results != &req->result_one)
        free(req->results);
    req->operands = NULL;
    req->compares = NULL;
    req->results = NULL;
}

fy_ofi_req_t *fy_ofi_req_alloc(fy_ofi_ep_t *ep, fy_ofi_req_kind_t kind, fy_ofi_budget_t budget)
{
    if ((budget == FY_OFI_BUDGET_TX && ep->tx_used >= FY_OFI_QUEUE_SIZE) ||
        (budget == FY_OFI_BUDGET_RX && ep->rx_used >= FY_OFI_QUEUE_SIZE))
        return NULL;
    if (ep->free_reqs == NULL && !pool_grow(ep))
        return NULL;
    fy_ofi_req_t *req = ep->free_reqs;
    ep->free_reqs = (fy_ofi_req_t *)req->link.next;
    uint32_t index = req->index;
    uint32_t gen = req->gen + 1;
    /* zero what a request carries from its last use (not the large buffers, which every user
     * fills before reading) */
    memset(req, 0, offsetof(fy_ofi_req_t, iov));
    req->index = index;
    req->gen = gen;
    req->ep = ep;
    req->kind = kind;
    req->budget = budget;
    req->iovcnt = 0;
    req->rkey = NULL;
    req->count = 0;
    req->issued = 0;
    req->operands = NULL;
    req->compares = NULL;
    req->results = NULL;
    req->result_count = 0;
    req->payload = NULL;
    req->payload_len = 0;
    fy_ofi_list_init(&req->link);
    if (budget == FY_OFI_BUDGET_TX)
        ep->tx_used++;
    else if (budget == FY_OFI_BUDGET_RX)
        ep->rx_used++;
    return req;
}

void fy_ofi_req_free(fy_ofi_req_t *req)
{
    fy_ofi_ep_t *ep = req->ep;
    if (req->budget == FY_OFI_BUDGET_TX)
        ep->tx_used--;
    else if (req->budget == FY_OFI_BUDGET_RX)
        ep->rx_used--;
    req_buffers_free(req);
    req->comp.count = -1;
    req->flags = 0;
    req->link.next = (fy_ofi_list_t *)ep->free_reqs;
    ep->free_reqs = req;
}

uint32_t fy_ofi_req_send_id(const fy_ofi_req_t *req)
{
    return (req->gen << SEND_ID_INDEX_BITS) | req->index;
}

fy_ofi_req_t *fy_ofi_req_by_send_id(fy_ofi_ep_t *ep, uint32_t send_id)
{
    uint32_t index = send_id & SEND_ID_INDEX_MASK;
    if (index >= ep->chunk_count * CHUNK_REQS)
        return NULL;
    fy_ofi_req_t *req = &ep->chunks[index / CHUNK_REQS][index % CHUNK_REQS];
    if (fy_ofi_req_send_id(req) != send_id || req->comp.count < 0 || req->kind != FY_OFI_REQ_SEND ||
        !(req->flags & FY_OFI_REQ_WAIT_ACK) || (req->flags & FY_OFI_REQ_ACKED))
        return NULL;
    return req;
}

void fy_ofi_req_pool_free(fy_ofi_ep_t *ep)
{
    for (size_t c = 0; c < ep->chunk_count; c++) {
        for (size_t i = 0; i < CHUNK_REQS; i++) {
            fy_ofi_req_t *req = &ep->chunks[c][i];
            if (req->comp.count >= 0)
                req_buffers_free(req);
        }
        free(ep->chunks[c]);
    }
    free(ep->chunks);
    ep->chunks = NULL;
    ep->chunk_count = 0;
    ep->free_reqs = NULL;
}
