/* Active messages: handler table, delivery, and keepable receive descriptors. */
#ifndef FERRY_PROTO_AM_H
#define FERRY_PROTO_AM_H

#include <stddef.h>
#include <stdint.h>

#include <ferry/ferry.h>

#include "progress/worker.h"

/* Deliver one received message to its handler (called by transports from progress).
 * flags: FERRY_AM_RECV_KEEPABLE when data may be kept. Returns FERRY_OK (data may be reused
 * now) or FERRY_INPROGRESS (the handler kept data; it will call ferry_am_data_release). An
 * id without a handler is dropped with one warning per id (FERRY_OK). */
ferry_status_t fy_am_deliver(ferry_worker_t *worker, ferry_ep_t *ep, unsigned id,
                             const void *header, size_t header_length, void *data, size_t length,
                             unsigned flags);

/* Private receive buffers that a handler may keep: a small header in front of the data says
 * how to free it. fy_am_buffer_alloc returns the data pointer (NULL: out of memory). */
void *fy_am_buffer_alloc(size_t length);
void fy_am_buffer_free(void *data);

/* Deliver data that lives in a private buffer from fy_am_buffer_alloc: the buffer is freed
 * unless the handler keeps it. */
void fy_am_deliver_buffer(ferry_worker_t *worker, ferry_ep_t *ep, unsigned id, const void *header,
                          size_t header_length, void *data, size_t length);

/* ferry's own protocols (rendezvous, target-executed RMA) use ids FERRY_AM_ID_MAX..255 through
 * these two calls; the public ones refuse those ids. Same contracts as ferry_am_set_handler
 * and ferry_am_send. */
ferry_status_t fy_am_set_internal_handler(ferry_worker_t *worker, unsigned id,
                                          ferry_am_handler_cb_t cb, void *arg);
ferry_status_t fy_am_send_internal(ferry_ep_t *ep, unsigned id, const void *header,
                                   size_t header_length, const ferry_iov_t *iov, size_t iovcnt,
                                   ferry_completion_t *comp);

/* Placement: a transport that receives a large payload in pieces (tcp) may ask the handler of
 * its id, before the payload arrives, where it should go — e.g. straight into the buffer of a
 * matched tagged receive, with no copy. An internal handler opts in with
 * fy_am_set_internal_place. place returns the destination (length bytes, contiguous) or
 * NULL (the transport uses a buffer of its own). The transport then reads the payload there
 * and delivers the message with data == that destination and flags FERRY_AM_RECV_PLACED (the
 * handler must not copy it again). The destination must stay valid while the endpoint is
 * open: the transport stops writing into it when the endpoint fails, is closed or destroyed
 * (the message is then not delivered). */
#define FERRY_AM_RECV_PLACED 0x100u

ferry_status_t fy_am_set_internal_place(ferry_worker_t *worker, unsigned id,
                                        fy_am_place_cb_t place);

/* The destination for a payload of length bytes of message id, or NULL (no placement). */
void *fy_am_place(ferry_worker_t *worker, ferry_ep_t *ep, unsigned id, const void *header,
                  size_t header_length, size_t length);

#endif
