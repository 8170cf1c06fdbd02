/* Active messages: sending through the endpoint's transport (the handler table and delivery
 * are the engine's: progress/am_table.c). */
#define _GNU_SOURCE
#include "proto/am.h"

#include "core/compiler.h"
#include "wireup/ep.h"

static fy_always_inline ferry_status_t am_send_checked(ferry_ep_t *ep, unsigned id,
                                                       const void *header, size_t header_length,
                                                       const ferry_iov_t *iov, size_t iovcnt,
                                                       ferry_completion_t *comp);

static fy_always_inline ferry_status_t locked_am_send(ferry_ep_t *ep, unsigned id,
                                                      const void *header, size_t header_length,
                                                      const ferry_iov_t *iov, size_t iovcnt,
                                                      ferry_completion_t *comp)
{
    if (fy_unlikely(id >= FERRY_AM_ID_MAX))
        return FERRY_ERR_INVALID_PARAM;
    if (fy_unlikely(ep != NULL && fy_ep_forked(ep)))
        return FERRY_ERR_FORKED;
    return am_send_checked(ep, id, header, header_length, iov, iovcnt, comp);
}

/* ferry_am_send on a multi-thread worker whose lock another thread holds: wait for it, out of
 * line (a call made before the body would make the inline send save its arguments). */
static fy_noinline ferry_status_t am_send_contended(ferry_ep_t *ep, unsigned id, const void *header,
                                                    size_t header_length, const ferry_iov_t *iov,
                                                    size_t iovcnt, ferry_completion_t *comp)
{
    ferry_worker_t *worker = ep->worker;
    fy_worker_lock(worker);
    ferry_status_t status_or_value =
        locked_am_send(ep, id, header, header_length, iov, iovcnt, comp);
    fy_worker_unlock(worker);
    return status_or_value;
}

/* Both modes run the always-inline body (locked_am_send) in place: a multi-thread worker's
 * send is the single-thread send between an inline fy_worker_trylock and fy_worker_unlock,
 * with the same saved registers (the lock is found again through ep, whose worker never
 * changes, after the body, not kept live across the transport's call). Callgrind, 8-byte
 * am_lat client, instructions per send: single mode 154 before and after; multi mode 221 when
 * the locked body was an out-of-line copy (am_send_multi) taking the lock with pthread_self,
 * 176 now. */
FERRY_EXPORT ferry_status_t ferry_am_send(ferry_ep_t *ep, unsigned id, const void *header,
                                          size_t header_length, const ferry_iov_t *iov,
                                          size_t iovcnt, ferry_completion_t *comp)
{
    ferry_worker_t *locked = fy_worker_multi(ep != NULL ? ep->worker : NULL);
    if (fy_likely(locked == NULL))
        return locked_am_send(ep, id, header, header_length, iov, iovcnt, comp);
    if (fy_unlikely(!fy_worker_trylock(locked)))
        return am_send_contended(ep, id, header, header_length, iov, iovcnt, comp);
    ferry_status_t status_or_value =
        locked_am_send(ep, id, header, header_length, iov, iovcnt, comp);
    fy_worker_unlock(ep->worker);
    return status_or_value;
}

ferry_status_t fy_am_send_internal(ferry_ep_t *ep, unsigned id, const void *header,
                                   size_t header_length, const ferry_iov_t *iov, size_t iovcnt,
                                   ferry_completion_t *comp)
{
    if (fy_unlikely(id < FERRY_AM_ID_MAX || id >= FY_AM_ID_ALL))
        return FERRY_ERR_INVALID_PARAM;
    return am_send_checked(ep, id, header, header_length, iov, iovcnt, comp);
}

static fy_always_inline ferry_status_t am_send_checked(ferry_ep_t *ep, unsigned id,
                                                       const void *header, size_t header_length,
                                                       const ferry_iov_t *iov, size_t iovcnt,
                                                       ferry_completion_t *comp)
{
    if (fy_unlikely(ep == NULL || header_length > FERRY_AM_HEADER_MAX ||
                    (header == NULL && header_length > 0) || (iov == NULL && iovcnt > 0)))
        return FERRY_ERR_INVALID_PARAM;
    if (fy_unlikely(ep->state != FY_EP_OPEN))
        return fy_am_send_counted(ep, id, 0, ep->error);
    if (iovcnt <= 1) {
        if (fy_unlikely(iovcnt == 1 && iov[0].buffer == NULL && iov[0].length > 0))
            return FERRY_ERR_INVALID_PARAM;
        return fy_am_send_one(ep, id, header, header_length, iovcnt == 1 ? iov : NULL, comp);
    }
    size_t length = 0;
    for (size_t i = 0; i < iovcnt; i++)
        length += iov[i].length;
    return fy_am_send_counted(
        ep, id, length,
        ep->tl->sendv(ep->tl_ep, (uint8_t)id, header, header_length, iov, iovcnt, comp));
}
