/* Active messages: handler table, delivery, and keepable receive descriptors. */
#ifndef FERRY_PROTO_AM_H
#define FERRY_PROTO_AM_H

#include <stddef.h>
#include <stdint.h>

#include <ferry/ferry.h>

/* Deliver one received message to its handler (called by transports from progress).
 * flags: FERRY_AM_RECV_KEEPABLE when data may be kept. Returns FERRY_OK (data may be reused
 * now) or FERRY_INPROGRESS (the handler kept data; it will call ferry_am_data_release). An
 * id without a handler is dropped with one warning per id (FERRY_OK). */
ferry_status_t ferry_am_deliver(ferry_worker_t *worker, ferry_ep_t *ep, unsigned id,
                                const void *header, size_t header_length, void *data,
                                size_t length, unsigned flags);

/* Private receive buffers that a handler may keep: a small header in front of the data says
 * how to free it. ferry_am_buffer_alloc returns the data pointer (NULL: out of memory). */
void *ferry_am_buffer_alloc(size_t length);
void ferry_am_buffer_free(void *data);

/* Deliver data that lives in a private buffer from ferry_am_buffer_alloc: the buffer is freed
 * unless the handler keeps it. */
void ferry_am_deliver_buffer(ferry_worker_t *worker, ferry_ep_t *ep, unsigned id,
                             const void *header, size_t header_length, void *data, size_t length);

#endif
