/*
 * libferry-fi — the requests of an endpoint: allocated in chunks that are never freed before the
 * endpoint (a request's address stays valid for the life of the endpoint), kept on a free list.
 * No allocation and no lock in steady state: taking and returning one (fy_ofi_req_alloc,
 * fy_ofi_req_free, inline in ofi.h) touch the header only; the one-sided and control part is
 * reset when such a request is freed.
 */
#include <stdlib.h>
#include <string.h>

#include "ofi.h"

#define REQS_MAX (1u << 20) /* requests of one endpoint, all budgets together */

bool fy_ofi_req_pool_grow(fy_ofi_ep_t *ep)
{
    if ((ep->chunk_count + 1) * FY_OFI_REQ_CHUNK > REQS_MAX)
        return false;
    fy_ofi_req_t **chunks = realloc(ep->chunks, (ep->chunk_count + 1) * sizeof(*chunks));
    if (chunks == NULL)
        return false;
    ep->chunks = chunks;
    fy_ofi_req_t *chunk = calloc(FY_OFI_REQ_CHUNK, sizeof(*chunk));
    if (chunk == NULL)
        return false;
    ep->chunks[ep->chunk_count] = chunk;
    for (size_t i = FY_OFI_REQ_CHUNK; i-- > 0;) {
        chunk[i].index = (uint32_t)(ep->chunk_count * FY_OFI_REQ_CHUNK + i);
        chunk[i].ep = ep;
        chunk[i].comp.count = -1; /* free */
        chunk[i].link.next = (fy_ofi_list_t *)ep->free_reqs;
        ep->free_reqs = &chunk[i];
    }
    ep->chunk_count++;
    return true;
}

/* The one-sided and control part of a request back to its free state (what it allocated freed,
 * the fields reset): requests of other kinds never touch it, so a free request always has it
 * reset and fy_ofi_req_alloc leaves it alone. */
static void req_tail_reset(fy_ofi_req_t *req)
{
    free(req->payload);
    if (req->operands != &req->operand_one)
        free(req->operands);
    if (req->compares != &req->compare_one)
        free(req->compares);
    if (req->results != &req->result_one)
        free(req->results);
    req->rkey = NULL;
    req->count = 0;
    req->issued = 0;
    req->operands = NULL;
    req->compares = NULL;
    req->results = NULL;
    req->result_count = 0;
    req->payload = NULL;
    req->payload_len = 0;
}

void fy_ofi_req_free_tail(fy_ofi_req_t *req)
{
    req_tail_reset(req);
    req->kind = FY_OFI_REQ_SEND;
    fy_ofi_req_free(req);
}

void fy_ofi_req_pool_free(fy_ofi_ep_t *ep)
{
    for (size_t c = 0; c < ep->chunk_count; c++) {
        for (size_t i = 0; i < FY_OFI_REQ_CHUNK; i++) {
            fy_ofi_req_t *req = &ep->chunks[c][i];
            if (req->comp.count >= 0 && req->kind >= FY_OFI_REQ_RMA)
                req_tail_reset(req);
        }
        free(ep->chunks[c]);
    }
    free(ep->chunks);
    ep->chunks = NULL;
    ep->chunk_count = 0;
    ep->free_reqs = NULL;
}
