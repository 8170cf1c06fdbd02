/* Active messages: sending through the endpoint's transport (the handler table and delivery
 * are the engine's: progress/am_table.c). */
#define _GNU_SOURCE
#include "proto/am.h"

#include "core/compiler.h"
#include "wireup/ep.h"

static inline ferry_status_t am_send_checked(ferry_ep_t *ep, unsigned id, const void *header,
                                             size_t header_length, const ferry_iov_t *iov,
                                             size_t iovcnt, ferry_completion_t *comp);

FERRY_EXPORT ferry_status_t ferry_am_send(ferry_ep_t *ep, unsigned id, const void *header,
                                          size_t header_length, const ferry_iov_t *iov,
                                          size_t iovcnt, ferry_completion_t *comp)
{
    if (fy_unlikely(id >= FERRY_AM_ID_MAX))
        return FERRY_ERR_INVALID_PARAM;
    return am_send_checked(ep, id, header, header_length, iov, iovcnt, comp);
}

ferry_status_t fy_am_send_internal(ferry_ep_t *ep, unsigned id, const void *header,
                                   size_t header_length, const ferry_iov_t *iov, size_t iovcnt,
                                   ferry_completion_t *comp)
{
    if (fy_unlikely(id < FERRY_AM_ID_MAX || id >= FY_AM_ID_ALL))
        return FERRY_ERR_INVALID_PARAM;
    return am_send_checked(ep, id, header, header_length, iov, iovcnt, comp);
}

static inline ferry_status_t am_send_checked(ferry_ep_t *ep, unsigned id, const void *header,
                                             size_t header_length, const ferry_iov_t *iov,
                                             size_t iovcnt, ferry_completion_t *comp)
{
    if (fy_unlikely(ep == NULL || header_length > FERRY_AM_HEADER_MAX ||
                    (header == NULL && header_length > 0) || (iov == NULL && iovcnt > 0)))
        return FERRY_ERR_INVALID_PARAM;
    if (fy_unlikely(ep->state != FY_EP_OPEN))
        return ep->error;
    if (iovcnt <= 1) {
        const void *payload = iovcnt ? iov[0].buffer : NULL;
        size_t length = iovcnt ? iov[0].length : 0;
        if (fy_unlikely(payload == NULL && length > 0))
            return FERRY_ERR_INVALID_PARAM;
        if (header_length + length <= ep->caps.max_short && ep->tl->send_short != NULL)
            return ep->tl->send_short(ep->tl_ep, (uint8_t)id, header, header_length, payload,
                                      length);
    }
    return ep->tl->sendv(ep->tl_ep, (uint8_t)id, header, header_length, iov, iovcnt, comp);
}
