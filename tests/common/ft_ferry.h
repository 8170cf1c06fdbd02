/* ferry set-up for the tests: a context and a worker, addresses over a channel, endpoints,
 * and sends that retry FERRY_ERR_NO_RESOURCE with a deadline. Every call checks its status:
 * a failure fails the test. */
#ifndef FT_FERRY_H
#define FT_FERRY_H

#include <stddef.h>
#include <stdint.h>

#include <ferry/counters.h>
#include <ferry/ferry.h>

typedef struct ft_ferry {
    ferry_context_t *context;
    ferry_worker_t *worker;
} ft_ferry_t;

/* transports: NULL for FERRY_TRANSPORTS (else all); wparams may be NULL. */
void ft_ferry_init(ft_ferry_t *f, const char *transports, const ferry_worker_params_t *wparams);
void ft_ferry_fini(ft_ferry_t *f);

/* The transport an endpoint to another process on this host is expected to use: "tcp" when
 * FERRY_TRANSPORTS is exactly "tcp" (the suites' _tcp variants), else "shm". */
const char *ft_remote_transport(void);

/* Send this worker's address over the channel / receive a peer's (returns its length). */
void ft_send_address(int chan, ferry_worker_t *worker);
size_t ft_recv_address(int chan, void *buf, size_t cap, int timeout_ms);

ferry_ep_t *ft_ep_create(ferry_worker_t *worker, const void *address, size_t length,
                         const ferry_ep_params_t *params);

/* ferry_am_send, retried (with progress) while it returns FERRY_ERR_NO_RESOURCE, for at most
 * timeout_ms (then the test fails). comp (may be NULL) is counted here: its count is raised
 * by one before each try and lowered again unless the send returned FERRY_INPROGRESS, so
 * callers just wait for count == 0. Returns the final status (any other than NO_RESOURCE).
 * *no_resource_p (may be NULL) is incremented for each FERRY_ERR_NO_RESOURCE seen. */
ferry_status_t ft_am_send(ferry_worker_t *worker, ferry_ep_t *ep, unsigned id, const void *header,
                          size_t header_length, const ferry_iov_t *iov, size_t iovcnt,
                          ferry_completion_t *comp, int timeout_ms, uint64_t *no_resource_p);

/* One try, with the same completion counting. */
ferry_status_t ft_am_try_send(ferry_ep_t *ep, unsigned id, const void *header, size_t header_length,
                              const ferry_iov_t *iov, size_t iovcnt, ferry_completion_t *comp);

/* Like ft_am_send with a contiguous payload (NULL/0: none); the status must be FERRY_OK or
 * FERRY_INPROGRESS. */
void ft_am_send_ok(ferry_worker_t *worker, ferry_ep_t *ep, unsigned id, const void *header,
                   size_t header_length, const void *payload, size_t length,
                   ferry_completion_t *comp, int timeout_ms);

/* The worker's counters (ferry_worker_counters, which must succeed) into *c. */
void ft_worker_counters(ferry_worker_t *worker, ferry_counters_t *c);

#endif
