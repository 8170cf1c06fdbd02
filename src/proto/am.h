/* Active messages of ferry's own protocols. Delivery, placements and the handler table are the
 * engine's (progress/am_table.h, and the transports' side in transport/transport.h). */
#ifndef FY_PROTO_AM_H
#define FY_PROTO_AM_H

#include <stddef.h>
#include <stdint.h>

#include <ferry/ferry.h>

#include "progress/am_table.h"
#include "proto/am_ids.h"

/* ferry's own protocols use ids FERRY_AM_ID_MAX..FY_AM_ID_ALL-1 (am_ids.h); the public
 * ferry_am_send refuses those ids. Same contract as ferry_am_send. */
ferry_status_t fy_am_send_internal(ferry_ep_t *ep, unsigned id, const void *header,
                                   size_t header_length, const ferry_iov_t *iov, size_t iovcnt,
                                   ferry_completion_t *comp);

#endif
