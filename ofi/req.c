/*
 * libferry-fi — the requests of an endpoint: allocated in chunks that are never freed before the
 * endpoint (a request's address stays valid for the life of the endpoint), kept on a free list.
 * No allocation and no lock in steady state.
 */
#include <stdlib.h>
#include <string.h>

#include "ofi.h"

#define CHUNK_REQS 64u
#define REQS_MAX (1u << 20) /* requests of one endpoint, all budgets together */

static bool pool_grow(fy_ofi_ep_t *ep)
{
    if ((ep->chunk_count + 1) * CHUNK_REQS > REQS_MAX)
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

/* What a request allocated for itself (control payloads, atomics of several elements); no
 * call for the requests that have none (sends and receives). */
static void req_buffers_free(fy_ofi_req_t *req)
{
    if (req->payload != NULL) {
        free(req->payload);
        req->payload = NULL;
    }
    if (req->operands != &req->operand_one && req->operands != NULL)
        free(req->operands);
    if (req->compares != &req->compare_one && req->compares != NULL)
        free(req->compares);
    if (req->results != &req->result_one && req->results != NULL)
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
    /* zero what a request carries from its last use (not the large buffers, which every user
     * fills before reading) */
    memset(req, 0, offsetof(fy_ofi_req_t, iov));
    req->index = index;
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
