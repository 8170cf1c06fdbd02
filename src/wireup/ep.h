/* Endpoints: a connection to one peer worker over one transport. */
#ifndef FERRY_WIREUP_EP_H
#define FERRY_WIREUP_EP_H

#include <ferry/ferry.h>

#include "core/list.h"
#include "progress/worker.h"
#include "proto/rma.h"
#include "transport/transport.h"

typedef enum fy_ep_state {
    FERRY_EP_OPEN,    /* usable (possibly still connecting inside the transport) */
    FERRY_EP_CLOSING, /* graceful close under way */
    FERRY_EP_CLOSED,  /* closed locally or by the peer: operations fail */
    FERRY_EP_FAILED,  /* the connection broke */
} fy_ep_state_t;

struct ferry_ep {
    fy_list_link_t link; /* in worker->eps */
    ferry_worker_t *worker;
    const fy_tl_ops_t *tl;
    fy_tl_ep_t *tl_ep;
    size_t max_short;       /* the transport's max_short: AMs up to this go by send_short */
    size_t max_bcopy;       /* the transport's max_bcopy: larger AMs are fragmented */
    fy_host_id_t peer_host; /* who the peer is: checks that a remote key is the peer's */
    uint32_t peer_pid;
    fy_ep_state_t state;
    ferry_status_t error; /* status returned by operations once CLOSED/FAILED */
    int accepted;         /* created by the worker for a connecting peer */
    ferry_ep_params_t params;
    ferry_completion_t *close_comp;
    fy_deferred_t error_deferred; /* runs the error callback from progress */
    int error_pending;            /* error_deferred is queued */
    fy_deferred_t close_deferred; /* completes close_comp from progress (after the sends) */
    fy_rma_ep_t rma;              /* one-sided operations outstanding (proto/rma.c) */
    fy_tag_ep_t tag;              /* tagged-message state (proto/tag.c); zero: initial */
};

/* Called by a transport when a peer connected: creates a worker-owned endpoint for replies.
 * Returns FERRY_OK or FERRY_ERR_NO_MEMORY. */
ferry_status_t fy_ep_create_accepted(ferry_worker_t *worker, const fy_tl_ops_t *tl,
                                     fy_tl_ep_t *tl_ep, ferry_ep_t **ep_p);

/* Called by a transport (from progress) when the connection failed (status) or the peer
 * closed it (FERRY_ERR_ENDPOINT_CLOSED): the endpoint stops accepting operations and its
 * error callback runs from progress. An accepted endpoint is freed after its callback. */
void fy_ep_fail(ferry_ep_t *ep, ferry_status_t status);

/* Called by a transport when an ep_terminate that returned FERRY_INPROGRESS is done. The close
 * completion runs from the worker's deferred queue, after the completions queued before. */
void fy_ep_terminated(ferry_ep_t *ep);

/* Free every endpoint of the worker (worker destruction). */
void fy_ep_destroy_all(ferry_worker_t *worker);

#endif
