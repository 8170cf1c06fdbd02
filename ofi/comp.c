/*
 * libferry-fi — the end of an operation: its CQ entry (success or error), its counter, and the
 * request's release. Every kind of request ends here (successes inline: fy_ofi_req_complete in
 * ofi.h).
 */
#include <string.h>

#include "ofi.h"

void fy_ofi_req_complete_error(fy_ofi_req_t *req, ferry_status_t status)
{
    fy_ofi_ep_t *ep = req->ep;
    fy_ofi_cntr_count(req->cntr, true);
    fy_ofi_cq_t *cq = fy_ofi_req_cq(req);
    if (ep->destroying || cq == NULL)
        goto out;
    if (req->context == NULL) {
        /* an operation without a context cannot be told apart in an error entry (Open MPI's
         * MTL dereferences it): log it instead */
        FY_OFI_WARN(FI_LOG_CQ, "an operation without context failed: %s\n",
                    ferry_status_string(status));
        goto out;
    }
    fy_ofi_cq_entry_t *entry = fy_ofi_req_entry(req, cq);
    if (entry == NULL)
        goto out; /* out of memory: logged */
    entry->err = status == FERRY_ERR_MESSAGE_TRUNCATED ? FI_ETRUNC : -fy_ofi_errno(status);
    if (entry->err == 0)
        entry->err = FI_EIO;
    entry->prov_errno = status;
    entry->olen = req->olen; /* truncated receives: len placed, olen dropped */
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
