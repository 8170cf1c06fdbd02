/* Active messages of ferry's own protocols. Delivery, placements and the handler table are the
 * engine's (progress/am_table.h, and the transports' side in transport/transport.h). */
#ifndef FY_PROTO_AM_H
#define FY_PROTO_AM_H

#include <stddef.h>
#include <stdint.h>

#include <ferry/ferry.h>

#include "core/compiler.h"
#include "progress/am_table.h"
#include "progress/counters.h"
#include "proto/am_ids.h"
#include "wireup/ep.h"

/* ferry's own protocols use ids FERRY_AM_ID_MAX..FY_AM_ID_ALL-1 (am_ids.h); the public
 * ferry_am_send refuses those ids. Same contract as ferry_am_send, but for fork(): only called
 * from within ferry's calls, whose public entry answered FERRY_ERR_FORKED already. */
ferry_status_t fy_am_send_internal(ferry_ep_t *ep, unsigned id, const void *header,
                                   size_t header_length, const ferry_iov_t *iov, size_t iovcnt,
                                   ferry_completion_t *comp);

/* The send of a message of at most one payload piece (iov: NULL or one piece whose buffer is
 * not NULL unless its length is 0), arguments checked, on an open endpoint: the transport's
 * send_short when it fits (which counts the message itself, so that nothing runs here after
 * it for the application's ids; ferry's own are also counted here, as such), else its sendv,
 * counted here. The body of ferry_am_send and fy_am_send_internal for one piece, inline for
 * the protocols' fast paths (tag eager). */
static fy_always_inline ferry_status_t fy_am_send_one(ferry_ep_t *ep, unsigned id,
                                                      const void *header, size_t header_length,
                                                      const ferry_iov_t *iov,
                                                      ferry_completion_t *comp)
{
    const void *payload = iov != NULL ? iov->buffer : NULL;
    size_t length = iov != NULL ? iov->length : 0;
    if (fy_likely(header_length + length <= ep->caps.max_short && ep->tl->send_short != NULL)) {
        if (fy_am_kind(id) == 0) /* the application's: counted by the transport, a tail call */
            return ep->tl->send_short(ep->tl_ep, (uint8_t)id, header, header_length, payload,
                                      length);
        /* ferry's own (id known where this is inlined): also counted here, after the call */
        ferry_status_t status =
            ep->tl->send_short(ep->tl_ep, (uint8_t)id, header, header_length, payload, length);
        if (fy_likely(status == FERRY_OK || status == FERRY_INPROGRESS)) {
            ep->am_traffic.own_short_sent++;
            ep->am_traffic.own_short_sent_bytes += length;
        }
        return status;
    }
    return fy_am_send_counted(ep, id, length,
                              ep->tl->sendv(ep->tl_ep, (uint8_t)id, header, header_length, iov,
                                            iov != NULL ? 1 : 0, comp));
}

#endif
