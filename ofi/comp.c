/*
 * libferry-fi — the end of an operation: its CQ entry (success or error), its counter, and the
 * request's release. Every kind of request ends here.
 */
#include <string.h>

#include "ofi.h"

static fy_ofi_cq_t *cq_of(const fy_ofi_req_t *req)
{
    return req->budget == FY_OFI_BUDGET_RX ? req->ep->rx_cq : req->ep->tx_cq;
}

void fy_ofi_req_complete(fy_ofi_req_t *req, ferry_status_t status)
{
    fy_ofi_ep_t *ep = req->ep;
    bool truncated = status == FERRY_ERR_MESSAGE_TRUNCATED;
    fy_ofi_cntr_count(req->cntr, status != FERRY_OK);
    if (status == FERRY_OK && !(req->flags & FY_OFI_REQ_CQ))
        goto out; /* injects, selective completions: no entry */
    fy_ofi_cq_t *cq = cq_of(req);
    if (ep->destroying || cq == NULL)
        goto out;
    if (status != FERRY_OK && req->context == NULL) {
        /* an operation without a context cannot be told apart in an error entry (Open MPI's
         * MTL dereferences it): log it instead */
        FY_OFI_WARN(FI_LOG_CQ, "an operation without context failed: %s\n",
                    ferry_status_string(status));
        goto out;
    }
    fy_ofi_cq_entry_t *entry = fy_ofi_cq_reserve(cq, req->context);
    if (entry == NULL)
        goto out; /* out of memory: logged */
    /* written in place, each field (a compound literal would be built and copied) */
    entry->e.op_context = req->context;
    entry->e.flags = req->cq_flags;
    entry->e.len = req->len;
    entry->e.buf = req->budget == FY_OFI_BUDGET_RX ? req->buf : NULL;
    entry->e.data = req->data;
    entry->e.tag = req->tag;
    entry->src = req->addr;
    entry->err = 0;
    entry->prov_errno = 0;
    entry->olen = 0;
    if (status != FERRY_OK) {
        entry->err = truncated ? FI_ETRUNC : -fy_ofi_errno(status);
        if (entry->err == 0)
            entry->err = FI_EIO;
        entry->prov_errno = status;
        entry->olen = req->olen; /* truncated receives: len placed, olen dropped */
    }
    fy_ofi_cq_commit(cq);
out:
    fy_ofi_req_free(req);
}

void fy_ofi_rx_entry(fy_ofi_ep_t *ep, const fy_ofi_cq_entry_t *entry)
{
    if (ep->destroying || ep->rx_cq == NULL)
        return;
    fy_ofi_cq_write(ep->rx_cq, entry);
}
