/* Endpoints: a connection to one peer worker over one transport. The endpoint names no
 * protocol: each module's per-endpoint state sits beside it (fy_ep_module_state), and the
 * endpoint's life-cycle events reach the modules through their tables (progress/module.h).
 * The calls transports make (fy_ep_create_accepted, fy_ep_fail, fy_ep_terminated) are
 * declared in transport/transport.h, the transports' upward contract. */
#ifndef FY_WIREUP_EP_H
#define FY_WIREUP_EP_H

#include <ferry/ferry.h>

#include "core/compiler.h"
#include "core/list.h"
#include "progress/counters.h"
#include "progress/worker.h"
#include "transport/transport.h"
#include "wireup/address.h"

/* Active messages sent and received, by kind (fy_am_kind): [0] the application's (ids below
 * FERRY_AM_ID_MAX), [1] ferry's own. Counts and bytes lie apart, so that the two increments of
 * a message are not neighbours: GCC would make one vector add of them, three times the
 * instructions of two plain adds. Raw, as the send paths count (a message of ferry's own
 * through send_short is in short_sent and own_short_sent): fy_am_traffic_sent derives the sent
 * counts by kind when asked. */
typedef struct fy_am_traffic {
    uint64_t sent[2]; /* through the transport's sendv (counted after it) */
    uint64_t received[2];
    uint64_t sent_bytes[2];
    uint64_t received_bytes[2];
    /* through send_short, which counts every kind itself (transport.h): here when the transport
     * has no am_sent (fy_ep_am_count_short), or from its am_sent when its endpoint went; and
     * the part of them that is ferry's own (fy_am_send_one, for ferry's ids only) */
    uint64_t short_sent;
    uint64_t own_short_sent;
    uint64_t short_sent_bytes;
    uint64_t own_short_sent_bytes;
} fy_am_traffic_t;

typedef enum fy_ep_state {
    FY_EP_OPEN,    /* usable (possibly still connecting inside the transport) */
    FY_EP_CLOSING, /* graceful close under way */
    FY_EP_CLOSED,  /* closed locally or by the peer: operations fail */
    FY_EP_FAILED,  /* the connection broke */
} fy_ep_state_t;

struct ferry_ep {
    fy_list_link_t link; /* in worker->eps */
    ferry_worker_t *worker;
    const fy_tl_ops_t *tl;
    unsigned tl_index; /* the transport's index in fy_transports[] (counters) */
    fy_tl_ep_t *tl_ep;
    fy_tl_caps_t caps; /* this endpoint's transport capabilities (ep_init / accepted) */
    fy_tl_peer_t peer; /* who the peer is: checks that a remote key is the peer's */
    fy_ep_state_t state;
    /* hot: beside what every send and delivery reads. What went through it
     * (progress/counters.h), raw: each message on one row, the rest derived by
     * fy_ep_counters_read */
    fy_am_traffic_t am_traffic;        /* counters.am and the transport's row are made of it */
    void *module_state[FY_MODULE_MAX]; /* each module's state, in the same allocation */
    ferry_status_t error;              /* status returned by operations once CLOSED/FAILED */
    int accepted;                      /* created by the worker for a connecting peer */
    int stopped;                       /* the modules' ep_stop ran */
    int connected; /* the transport said the handshake is over (fy_ep_connected) */
    ferry_ep_params_t params;
    ferry_completion_t *close_comp;
    fy_deferred_t error_deferred; /* runs the error callback from progress */
    int error_pending;            /* error_deferred is queued */
    fy_deferred_t close_deferred; /* completes close_comp from progress (after the sends) */
    /* ferry_ep_destroy or a forced close called from a callback, while the transport may be
     * using its endpoint: done from the deferred queue, at the end of that progress call;
     * meanwhile nothing more is delivered for the endpoint */
    fy_deferred_t free_deferred;
    fy_deferred_t tl_destroy_deferred;
    int free_pending;
    int tl_destroy_pending;
    /* the rest of what went through it: errors, retries, tagged modes (cold) */
    ferry_counters_t counters;
};

/* A module's per-endpoint state (ep_state_size bytes, zeroed at creation). */
static inline void *fy_ep_module_state(const ferry_ep_t *ep, unsigned module)
{
    return ep->module_state[module];
}

/* The transport ferry_ep_create uses for a parsed address: the first the worker enabled (in
 * list order) whose record in the address reaches the peer. Returns its index in
 * fy_transports[] with *record_p set to that record, or -1 (unreachable). Pure. */
int fy_ep_select_transport(ferry_worker_t *worker, const fy_address_t *address,
                           const fy_tl_peer_t *peer, const fy_address_record_t **record_p);

/* The kind of an active message id (fy_am_traffic_t): 0 the application's, 1 ferry's own; of
 * id modulo FY_AM_ID_ALL, as the handler table takes it (fy_am_deliver computes that anyway). */
static inline unsigned fy_am_kind(unsigned id)
{
    _Static_assert(FY_AM_ID_ALL == 2 * FERRY_AM_ID_MAX, "ids: the application's, then ferry's");
    return (id % FY_AM_ID_ALL) / FERRY_AM_ID_MAX;
}

/* An active message of id and length payload bytes sent (received) on ep. */
static inline void fy_am_count_sent(ferry_ep_t *ep, unsigned id, uint64_t length)
{
    ep->am_traffic.sent[fy_am_kind(id)]++;
    ep->am_traffic.sent_bytes[fy_am_kind(id)] += length;
}

static inline void fy_am_count_received(ferry_ep_t *ep, unsigned id, uint64_t length)
{
    ep->am_traffic.received[fy_am_kind(id)]++;
    ep->am_traffic.received_bytes[fy_am_kind(id)] += length;
}

/* Count a send on its endpoint (include/ferry/counters.h): a message taken (FERRY_OK,
 * FERRY_INPROGRESS) as sent, a refusal or an error by its status. Returns status. For sends
 * through sendv: send_short counts its own (transport.h). */
static fy_always_inline ferry_status_t fy_am_send_counted(ferry_ep_t *ep, unsigned id,
                                                          uint64_t length, ferry_status_t status)
{
    if (fy_likely(status == FERRY_OK || status == FERRY_INPROGRESS))
        fy_am_count_sent(ep, id, length);
    else
        fy_count_status(&ep->counters, status);
    return status;
}

/* Add what ep's transport counted in its own endpoint (the am_sent slot) to the send_short
 * messages of *a. */
static inline void fy_am_traffic_add_tl(fy_am_traffic_t *a, const ferry_ep_t *ep)
{
    if (ep->tl_ep == NULL || ep->tl->am_sent == NULL)
        return;
    fy_tl_am_sent_t sent;
    ep->tl->am_sent(ep->tl_ep, &sent);
    a->short_sent += sent.messages;
    a->short_sent_bytes += sent.bytes;
}

/* ep's active messages with the sent ones by kind in sent[] and sent_bytes[]: the send_short
 * messages, less ferry's own part, are the application's. */
static inline fy_am_traffic_t fy_am_traffic_sent(const ferry_ep_t *ep)
{
    fy_am_traffic_t a = ep->am_traffic;
    fy_am_traffic_add_tl(&a, ep);
    a.sent[0] += a.short_sent - a.own_short_sent;
    a.sent_bytes[0] += a.short_sent_bytes - a.own_short_sent_bytes;
    a.sent[1] += a.own_short_sent;
    a.sent_bytes[1] += a.own_short_sent_bytes;
    return a;
}

/* ep's counters as ferry_ep_counters reports them, into *out (size member included). The fast
 * paths count a message once: an active message in am_traffic (fy_am_traffic_sent), or in its
 * transport's am_sent when send_short took it (counters.am is the
 * application's, the transport's row both kinds), a tagged send its bytes on tag and its
 * message in tag_modes (tag.sent is the sum of tag_modes). */
static inline void fy_ep_counters_read(const ferry_ep_t *ep, ferry_counters_t *out)
{
    fy_am_traffic_t a = fy_am_traffic_sent(ep);
    *out = ep->counters;
    out->am = (ferry_traffic_t){a.sent[0], a.sent_bytes[0], a.received[0], a.received_bytes[0]};
    ferry_traffic_t *row = &out->transport[ep->tl_index];
    for (unsigned k = 0; k < 2; k++) {
        row->sent += a.sent[k];
        row->sent_bytes += a.sent_bytes[k];
        row->received += a.received[k];
        row->received_bytes += a.received_bytes[k];
    }
    out->tag.sent = 0;
    for (unsigned c = 0; c < FERRY_COUNTERS_SIZE_CLASSES; c++) {
        for (unsigned m = 0; m < FERRY_COUNTERS_MODES; m++)
            out->tag.sent += out->tag_modes[c][m];
    }
}

/* Whether ep is a forked child's copy of its parent's endpoint (fy_worker_forked). */
static inline bool fy_ep_forked(const ferry_ep_t *ep)
{
    return fy_worker_forked(ep->worker);
}

/* Nothing more may be delivered for ep: it is being destroyed from a callback. */
static inline int fy_ep_going_away(const ferry_ep_t *ep)
{
    return ep->free_pending | ep->tl_destroy_pending;
}

/* Free every endpoint of the worker (worker destruction). */
void fy_ep_destroy_all(ferry_worker_t *worker);

#endif
