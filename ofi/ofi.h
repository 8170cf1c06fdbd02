/*
 * libferry-fi — a libfabric 1.17 provider named "ferry", written on ferry's public API.
 *
 * Objects (libfabric → ferry):
 *   fabric    fy_ofi_fabric_t    a provider object only
 *   domain    fy_ofi_domain_t    one ferry_context_t; the lock; the memory-registration keys
 *   endpoint  fy_ofi_ep_t        one ferry_worker_t; per AV entry, a ferry_ep_t made on demand
 *   av        fy_ofi_av_t        a table of fixed-size names; fi_addr_t = index
 *   cq        fy_ofi_cq_t        an unbounded queue of entries (never overruns); waits on the
 *                                bound endpoints' worker fds
 *   cntr      fy_ofi_cntr_t      success and error counts
 *   eq        fy_ofi_eq_t        a queue of events (RDM endpoints never post to it)
 *   mr        fy_ofi_mr_t        a ferry registration and its packed key, found by u64 key
 *
 * Threads: every entry point of a domain's objects holds the domain lock when the domain was
 * opened with a threading level other than FI_THREAD_DOMAIN. Progress (ferry_worker_progress)
 * runs inside fi_cq_read/fi_cntr_read and the waits; ferry callbacks only write entries and
 * queue follow-up work (fy_ofi_ep_t.deferred), which runs after progress returned, so that no
 * ferry call is made from inside a ferry callback.
 *
 * Names: internal functions and types are fy_ofi_*; only fi_prov_ini is exported.
 */
#ifndef FERRY_OFI_OFI_H
#define FERRY_OFI_OFI_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_collective.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <rdma/providers/fi_log.h>
#include <rdma/providers/fi_prov.h>

#include <ferry/ferry.h>

#include "ctrl_wire.h"
#include "list.h"
#include "name.h"

/* ---------------------------------------------------------------- provider */

#define FY_OFI_PROV_NAME "ferry"
#define FY_OFI_FABRIC_NAME "ferry"
#define FY_OFI_DOMAIN_NAME "ferry"
#define FY_OFI_PROV_VERSION FI_VERSION(0, 1)
#define FY_OFI_API_VERSION FI_VERSION(1, 17)

/* Attributes (fy_ofi_info_template, info.c). */
#define FY_OFI_IOV_LIMIT 16u
#define FY_OFI_INJECT_SIZE 128u
#define FY_OFI_MAX_MSG_SIZE (UINT64_C(1) << 30)
#define FY_OFI_QUEUE_SIZE 4096u /* tx_attr/rx_attr size: operations outstanding per ep */
#define FY_OFI_CQ_DATA_SIZE 8u
#define FY_OFI_MR_KEY_SIZE 8u
#define FY_OFI_MR_IOV_LIMIT 1024u /* FERRY_MEM_IOV_MAX */
#define FY_OFI_EP_CNT 128u
#define FY_OFI_CQ_CNT 256u
#define FY_OFI_CNTR_CNT 256u
#define FY_OFI_MR_CNT 65536u
#define FY_OFI_ATOMIC_COUNT_MAX 64u /* elements of one atomic operation */

/* The bit of a ferry tag that marks an FI_MSG message (FI_TAGGED messages have it clear): an
 * endpoint with FI_MSG leaves the application the other 63 (mem_tag_format), one without it
 * all 64 (it sends and receives no FI_MSG message). */
#define FY_OFI_TAG_MSG_BIT (UINT64_C(1) << 63)

/** The tag bits the application has on an endpoint of these capabilities (mem_tag_format). */
static inline uint64_t fy_ofi_tag_format(uint64_t caps)
{
    return (caps & FI_MSG) ? FY_OFI_TAG_MSG_BIT - 1u : UINT64_MAX;
}

extern struct fi_provider fy_ofi_prov;

/* The provider's calls on the path of every small message (sends, receives, CQ reads, their
 * completions): in .text.hot, each starting a cache line, beside ferry's own
 * (src/core/compiler.h, fy_hot). */
#define fy_ofi_hot __attribute__((hot, aligned(64)))
#define FY_OFI_WARN(subsys, ...) FI_WARN(&fy_ofi_prov, subsys, __VA_ARGS__)
#define FY_OFI_INFO(subsys, ...) FI_INFO(&fy_ofi_prov, subsys, __VA_ARGS__)

/** The libfabric error (negative) for a ferry status. */
int fy_ofi_errno(ferry_status_t status);

/* ---------------------------------------------------------------- ENOSYS slots (stubs.c) */

extern struct fi_ops_msg fy_ofi_ops_msg_none;
extern struct fi_ops_tagged fy_ofi_ops_tagged_none;
extern struct fi_ops_rma fy_ofi_ops_rma_none;
extern struct fi_ops_atomic fy_ofi_ops_atomic_none;
extern struct fi_ops_collective fy_ofi_ops_collective_none;

int fy_ofi_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags);
int fy_ofi_no_control(struct fid *fid, int command, void *arg);
int fy_ofi_no_ops_open(struct fid *fid, const char *name, uint64_t flags, void **ops,
                       void *context);
int fy_ofi_no_tostr(const struct fid *fid, char *buf, size_t len);
int fy_ofi_no_ops_set(struct fid *fid, const char *name, uint64_t flags, void *ops, void *context);
int fy_ofi_no_tx_ctx(struct fid_ep *sep, int index, struct fi_tx_attr *attr, struct fid_ep **tx_ep,
                     void *context);
int fy_ofi_no_rx_ctx(struct fid_ep *sep, int index, struct fi_rx_attr *attr, struct fid_ep **rx_ep,
                     void *context);
int fy_ofi_no_setname(fid_t fid, void *addr, size_t addrlen);
int fy_ofi_no_getpeer(struct fid_ep *ep, void *addr, size_t *addrlen);
int fy_ofi_no_connect(struct fid_ep *ep, const void *addr, const void *param, size_t paramlen);
int fy_ofi_no_listen(struct fid_pep *pep);
int fy_ofi_no_accept(struct fid_ep *ep, const void *param, size_t paramlen);
int fy_ofi_no_reject(struct fid_pep *pep, fid_t handle, const void *param, size_t paramlen);
int fy_ofi_no_shutdown(struct fid_ep *ep, uint64_t flags);
int fy_ofi_no_join(struct fid_ep *ep, const void *addr, uint64_t flags, struct fid_mc **mc,
                   void *context);

/* ---------------------------------------------------------------- info (info.c) */

int fy_ofi_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
                   const struct fi_info *hints, struct fi_info **info);

/* ---------------------------------------------------------------- fabric (fabric.c) */

typedef struct fy_ofi_fabric {
    struct fid_fabric fabric_fid;
    int refs; /* domains and EQs still open */
    pthread_mutex_t lock;
} fy_ofi_fabric_t;

int fy_ofi_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric_p, void *context);

/* ---------------------------------------------------------------- domain (domain.c) */

typedef struct fy_ofi_mr fy_ofi_mr_t;

typedef struct fy_ofi_domain {
    struct fid_domain domain_fid;
    fy_ofi_fabric_t *fabric;
    ferry_context_t *context;
    struct fi_info *info; /* a copy of the info the domain was opened with */
    uint32_t api_version;
    bool locking; /* lock is taken: threading is not FI_THREAD_DOMAIN */
    pthread_mutex_t lock;
    int refs; /* objects opened on the domain */
    /* memory registrations by key (mr.c): open addressing, a power of two of slots */
    fy_ofi_mr_t **mr_table;
    size_t mr_table_size;
    size_t mr_count;
    uint64_t mr_next_key; /* FI_MR_PROV_KEY: the next key to give */
    bool prov_key;        /* keys are chosen by the provider */
} fy_ofi_domain_t;

int fy_ofi_domain_open(struct fid_fabric *fabric, struct fi_info *info, struct fid_domain **dom_p,
                       void *context);

static inline void fy_ofi_domain_lock(fy_ofi_domain_t *domain)
{
    if (domain->locking)
        pthread_mutex_lock(&domain->lock);
}

static inline void fy_ofi_domain_unlock(fy_ofi_domain_t *domain)
{
    if (domain->locking)
        pthread_mutex_unlock(&domain->lock);
}

/* ---------------------------------------------------------------- memory registration (mr.c) */

struct fy_ofi_mr {
    struct fid_mr mr_fid;
    fy_ofi_domain_t *domain;
    uint64_t access;  /* FI_* access flags */
    ferry_mem_t *mem; /* NULL when no remote access was asked for */
    void *packed;     /* ferry_rkey_pack of mem */
    size_t packed_length;
};

int fy_ofi_mr_reg(struct fid *fid, const void *buf, size_t len, uint64_t access, uint64_t offset,
                  uint64_t requested_key, uint64_t flags, struct fid_mr **mr_p, void *context);
int fy_ofi_mr_regv(struct fid *fid, const struct iovec *iov, size_t count, uint64_t access,
                   uint64_t offset, uint64_t requested_key, uint64_t flags, struct fid_mr **mr_p,
                   void *context);
int fy_ofi_mr_regattr(struct fid *fid, const struct fi_mr_attr *attr, uint64_t flags,
                      struct fid_mr **mr_p);
/** The registration of key in domain, or NULL. Domain lock held. */
fy_ofi_mr_t *fy_ofi_mr_find(fy_ofi_domain_t *domain, uint64_t key);
/** Free the key table (the domain has no registration left). */
void fy_ofi_mr_table_free(fy_ofi_domain_t *domain);

/* ---------------------------------------------------------------- event queue (eq.c) */

typedef struct fy_ofi_eq fy_ofi_eq_t;

int fy_ofi_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr, struct fid_eq **eq_p,
                   void *context);
/** fi_trywait for an EQ: -FI_EAGAIN when events are queued, else 0. */
int fy_ofi_eq_trywait(struct fid *fid);

/* ---------------------------------------------------------------- address vector (av.c) */

typedef struct fy_ofi_ep fy_ofi_ep_t;

typedef struct fy_ofi_av_slot {
    uint8_t name[FY_OFI_NAME_LEN]; /* the name inserted: a compact ferry worker address */
    ferry_peer_id_t peer;          /* the worker id of the name (ferry_tag_info_t.peer) */
    bool live;                     /* inserted and not removed */
} fy_ofi_av_slot_t;

typedef struct fy_ofi_av_peer_entry {
    ferry_peer_id_t peer; /* FERRY_PEER_ANY: empty */
    size_t index;         /* the slot */
} fy_ofi_av_peer_entry_t;

typedef struct fy_ofi_av {
    struct fid_av av_fid;
    fy_ofi_domain_t *domain;
    enum fi_av_type type;
    fy_ofi_av_slot_t *slots; /* fi_addr_t = index; never reused */
    size_t count;
    size_t capacity;
    fy_ofi_ep_t **eps; /* endpoints bound to the AV */
    size_t ep_count;
    /* peer id -> slot, open addressing: the sources of messages */
    fy_ofi_av_peer_entry_t *peer_table;
    size_t peer_table_size; /* entries, a power of two */
    size_t peer_table_used;
    /* the last lookup's answer (FERRY_PEER_ANY: none), cleared by inserts and removes */
    ferry_peer_id_t last_peer;
    fi_addr_t last_addr;
} fy_ofi_av_t;

int fy_ofi_av_open(struct fid_domain *domain, struct fi_av_attr *attr, struct fid_av **av_p,
                   void *context);
/** The live slot of fi_addr, or NULL. Inline: every directed receive asks. */
static inline fy_ofi_av_slot_t *fy_ofi_av_slot(fy_ofi_av_t *av, fi_addr_t addr)
{
    if (av == NULL || addr >= av->count || !av->slots[addr].live)
        return NULL;
    return &av->slots[addr];
}
/** The fi_addr of a sender's worker id (ferry_tag_info_t.peer); FI_ADDR_NOTAVAIL when no live
 *  name of the AV has it. */
fi_addr_t fy_ofi_av_lookup_peer(fy_ofi_av_t *av, ferry_peer_id_t peer);
/** fy_ofi_av_lookup_peer, first asking the last answer (the sender of a stream). */
static inline fi_addr_t fy_ofi_av_source(fy_ofi_av_t *av, ferry_peer_id_t peer)
{
    if (av != NULL && peer == av->last_peer && peer != FERRY_PEER_ANY)
        return av->last_addr;
    return fy_ofi_av_lookup_peer(av, peer);
}
int fy_ofi_av_bind_ep(fy_ofi_av_t *av, fy_ofi_ep_t *ep);
void fy_ofi_av_unbind_ep(fy_ofi_av_t *av, fy_ofi_ep_t *ep);

/* ---------------------------------------------------------------- progress and waits (wait.c) */

/** The endpoints bound to a CQ or counter: progressed by its reads, waited on by its waits. */
typedef struct fy_ofi_epset {
    fy_ofi_ep_t **eps;
    int *binds; /* bindings of each endpoint (transmit, receive, ...) */
    size_t count;
    int total;    /* sum of binds: the object cannot close while > 0 */
    int epoll_fd; /* -1 without a wait object; else the workers' fds (and the owner's) */
} fy_ofi_epset_t;

/** An empty set; with_fd: create its epoll set. Returns 0 or -FI_EMFILE. */
int fy_ofi_epset_init(fy_ofi_epset_t *set, bool with_fd);
void fy_ofi_epset_fini(fy_ofi_epset_t *set);
int fy_ofi_epset_add(fy_ofi_epset_t *set, fy_ofi_ep_t *ep);
void fy_ofi_epset_remove(fy_ofi_epset_t *set, fy_ofi_ep_t *ep);

/** fy_ofi_epset_progress of a set of several endpoints (or none). */
unsigned fy_ofi_epset_progress_all(fy_ofi_epset_t *set);

/** Whether each endpoint's worker is armed (nothing pending): 0, or -FI_EAGAIN (domain lock
 *  held). */
int fy_ofi_epset_arm(fy_ofi_epset_t *set);

/** Sleep until an endpoint of the set (or another fd of its epoll set) has work, or timeout_ms
 *  (-1: forever). Called without the domain lock; takes it to arm. Returns 0 (woke, or work is
 *  pending), -FI_ETIMEDOUT, -FI_EIO. */
int fy_ofi_epset_wait(fy_ofi_domain_t *domain, fy_ofi_epset_t *set, int timeout_ms);

/** Add an fd to an epoll set (level-triggered, EPOLLIN). Returns 0 or -FI_EIO. */
int fy_ofi_epoll_add(int epoll_fd, int fd);

/** The wait object a CQ, EQ or counter gets for the one asked for: FI_WAIT_NONE, or FI_WAIT_FD
 *  (also for FI_WAIT_UNSPEC). Returns 0, -FI_ENOSYS (wait sets, mutex/cond, yield) or
 *  -FI_EINVAL (a wait set given). */
int fy_ofi_wait_obj(enum fi_wait_obj in, const struct fid_wait *wait_set, enum fi_wait_obj *out);
/** fi_control's FI_GETWAIT (fd, with FI_WAIT_FD) and FI_GETWAITOBJ for such an object. */
int fy_ofi_wait_control(int command, void *arg, enum fi_wait_obj wait_obj, int fd);

/** CLOCK_MONOTONIC in milliseconds (deadlines of the blocking reads). */
int64_t fy_ofi_now_ms(void);

/* ---------------------------------------------------------------- completion queue (cq.c) */

/** One completion as the provider keeps it: every format is a prefix of the tagged entry. */
typedef struct fy_ofi_cq_entry {
    struct fi_cq_tagged_entry e;
    fi_addr_t src;  /* FI_ADDR_NOTAVAIL when unknown */
    int err;        /* 0, or the positive FI_E* error of an error entry */
    int prov_errno; /* error entries only (not written for successes): the ferry status */
    size_t olen;    /* error entries only: bytes not delivered */
} fy_ofi_cq_entry_t;

typedef struct fy_ofi_cq {
    struct fid_cq cq_fid;
    fy_ofi_domain_t *domain;
    enum fi_cq_format format;
    enum fi_wait_obj wait_obj;
    size_t entry_size;
    fy_ofi_cq_entry_t *ring; /* grows: never overruns */
    size_t ring_size;        /* a power of two */
    size_t head;             /* next entry to read */
    size_t count;            /* entries queued */
    fy_ofi_epset_t set;      /* bound endpoints; set.epoll_fd also holds signal_fd */
    int signal_fd;           /* eventfd: fi_cq_signal, and entries written while a thread sleeps */
    bool signaled;           /* fi_cq_signal was called: the next sread returns -FI_ECANCELED */
    int waiters;             /* threads sleeping in sread */
    bool found;              /* the last read returned all entries, fewer than asked */
    unsigned skipped;        /* reads in a row that did not progress (cq_readfrom) */
    /* while cq_readfrom progresses with nothing queued: its caller's buffer (tagged format, no
     * source asked), which success entries fill in place of the ring (fy_ofi_cq_success) until
     * direct_room runs out or an entry goes to the ring (which stops it: order) */
    struct fi_cq_tagged_entry *direct;
    size_t direct_room;  /* entries the buffer still takes */
    size_t direct_count; /* entries written into it */
} fy_ofi_cq_t;

int fy_ofi_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr, struct fid_cq **cq_p,
                   void *context);
/** Double a full ring. Returns false (and logs that the completion of context is lost) when
 *  memory is exhausted. */
bool fy_ofi_cq_grow(fy_ofi_cq_t *cq, void *context);
/** Wake the threads sleeping in fi_cq_sread (its eventfd). */
void fy_ofi_cq_wake(fy_ofi_cq_t *cq);

/** The ring slot of the next entry (domain lock held), to fill and then commit; NULL only
 *  when memory is exhausted (the completion of context is lost and logged). */
static inline fy_ofi_cq_entry_t *fy_ofi_cq_reserve(fy_ofi_cq_t *cq, void *context)
{
    cq->direct_room = 0; /* what follows must not pass this entry */
    if (cq->count == cq->ring_size && !fy_ofi_cq_grow(cq, context))
        return NULL;
    return &cq->ring[(cq->head + cq->count) & (cq->ring_size - 1)];
}

/** Fill a tagged entry's fields (a ring slot's, or the reading caller's: fy_ofi_cq_success).
 *  Each field is written in place (a compound literal would be built and copied): it is on the
 *  path of every completion. */
static inline __attribute__((always_inline)) void
fy_ofi_cq_tagged_fill(struct fi_cq_tagged_entry *e, void *context, uint64_t flags, size_t len,
                      void *buf, uint64_t data, uint64_t tag)
{
    e->op_context = context;
    e->flags = flags;
    e->len = len;
    e->buf = buf;
    e->data = data;
    e->tag = tag;
}

/** Fill the slot fy_ofi_cq_reserve gave as a success entry. */
static inline __attribute__((always_inline)) void
fy_ofi_cq_entry_success(fy_ofi_cq_entry_t *entry, void *context, uint64_t flags, size_t len,
                        void *buf, uint64_t data, uint64_t tag, fi_addr_t src)
{
    fy_ofi_cq_tagged_fill(&entry->e, context, flags, len, buf, data, tag);
    entry->src = src;
    entry->err = 0;
}

/** Queue the entry fy_ofi_cq_reserve gave. */
static inline void fy_ofi_cq_commit(fy_ofi_cq_t *cq)
{
    cq->count++;
    if (cq->waiters > 0)
        fy_ofi_cq_wake(cq);
}

/** Write a success entry: into the buffer of the fi_cq_read that is progressing when it has
 *  room (the entry then needs no ring slot and no copy out of it), else into the ring. Returns
 *  false only when memory is exhausted (the entry is lost and logged). */
static inline __attribute__((always_inline)) bool fy_ofi_cq_success(fy_ofi_cq_t *cq, void *context,
                                                                    uint64_t flags, size_t len,
                                                                    void *buf, uint64_t data,
                                                                    uint64_t tag, fi_addr_t src)
{
    if (cq->direct_room > 0) {
        struct fi_cq_tagged_entry *e = &cq->direct[cq->direct_count++];
        cq->direct_room--;
        fy_ofi_cq_tagged_fill(e, context, flags, len, buf, data, tag);
        return true;
    }
    fy_ofi_cq_entry_t *entry = fy_ofi_cq_reserve(cq, context);
    if (entry == NULL)
        return false;
    fy_ofi_cq_entry_success(entry, context, flags, len, buf, data, tag, src);
    fy_ofi_cq_commit(cq);
    return true;
}

/** Queue an entry (domain lock held). Returns false only when memory is exhausted (the entry is
 *  lost and logged). */
static inline bool fy_ofi_cq_write(fy_ofi_cq_t *cq, const fy_ofi_cq_entry_t *entry)
{
    fy_ofi_cq_entry_t *slot = fy_ofi_cq_reserve(cq, entry->e.op_context);
    if (slot == NULL)
        return false;
    *slot = *entry;
    fy_ofi_cq_commit(cq);
    return true;
}

/** fi_trywait for a CQ: -FI_EAGAIN when entries or events are pending, else 0 (armed). */
int fy_ofi_cq_trywait(fy_ofi_cq_t *cq);

/* ---------------------------------------------------------------- counters (cntr.c) */

typedef struct fy_ofi_cntr {
    struct fid_cntr cntr_fid;
    fy_ofi_domain_t *domain;
    enum fi_wait_obj wait_obj;
    uint64_t value;
    uint64_t errors;
    fy_ofi_epset_t set;
} fy_ofi_cntr_t;

int fy_ofi_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr, struct fid_cntr **cntr_p,
                     void *context);

/** fi_trywait for a counter: -FI_EAGAIN when a bound worker has events pending, else 0. */
int fy_ofi_cntr_trywait(fy_ofi_cntr_t *cntr);

static inline void fy_ofi_cntr_count(fy_ofi_cntr_t *cntr, bool error)
{
    if (cntr == NULL)
        return;
    if (error)
        cntr->errors++;
    else
        cntr->value++;
}

/* ---------------------------------------------------------------- requests (req.c) */

typedef enum fy_ofi_req_kind {
    FY_OFI_REQ_SEND,    /* tagged or msg send (also inject) */
    FY_OFI_REQ_RECV,    /* tagged or msg receive, claimed receive */
    FY_OFI_REQ_CLAIMED, /* a message taken by FI_PEEK|FI_CLAIM, waiting for its FI_CLAIM */
    FY_OFI_REQ_RMA,     /* read or write (then flush, then notify for writedata) */
    FY_OFI_REQ_ATOMIC,  /* one atomic operation of count elements */
    FY_OFI_REQ_CTRL,    /* a provider control message (key request or reply, write notify) */
} fy_ofi_req_kind_t;

/* Which queue a request counts against (tx_attr->size, rx_attr->size, or none). */
typedef enum fy_ofi_budget {
    FY_OFI_BUDGET_TX,
    FY_OFI_BUDGET_RX,
    FY_OFI_BUDGET_NONE,
} fy_ofi_budget_t;

/* fy_ofi_req_t.flags */
#define FY_OFI_REQ_CQ 0x1u       /* write a CQ entry on success (errors are always written) */
#define FY_OFI_REQ_POSTED 0x10u  /* a receive ferry has not matched (fi_cancel looks for it) */
#define FY_OFI_REQ_FLUSH 0x20u   /* RMA: flush (remote completion) before completing */
#define FY_OFI_REQ_NOTIFY 0x40u  /* RMA writedata: notify the target, then complete */
#define FY_OFI_REQ_DISCARD 0x80u /* receive of a message to drop (FI_DISCARD) */
#define FY_OFI_REQ_PEEK 0x100u   /* FI_PEEK|FI_DISCARD: the entry reports the message */

typedef struct fy_ofi_rkey fy_ofi_rkey_t;

typedef struct fy_ofi_req {
    /* what a send hands ferry before it takes the request (fy_ofi_req_take) */
    ferry_completion_t comp;
    void *buf;      /* the first buffer (receive completions report it) */
    size_t len;     /* bytes of the application's buffers (receives: then bytes received) */
    size_t iovcnt;  /* of iov */
    uint32_t index; /* in the endpoint's pool */
    /* the header: zeroed when the request is taken (fy_ofi_req_take names each field) */
    fy_ofi_ep_t *ep;
    fy_ofi_list_t link; /* ep->claimed, an rkey's waiting list, ep->deferred */
    fy_ofi_req_kind_t kind;
    fy_ofi_budget_t budget;
    unsigned flags;               /* FY_OFI_REQ_* */
    unsigned step;                /* RMA: the phase reached; atomics: elements issued */
    void *context;                /* the application's */
    uint64_t cq_flags;            /* FI_SEND | FI_TAGGED, ... */
    fi_addr_t addr;               /* peer (sends, one-sided) */
    ferry_ep_t *fep;              /* the ferry endpoint the operation uses */
    size_t olen;                  /* truncated receives: bytes of the message not delivered */
    uint64_t data;                /* remote CQ data */
    uint64_t tag;                 /* the application's tag */
    fy_ofi_cntr_t *cntr;          /* counted on completion (may be NULL) */
    ferry_status_t status;        /* FERRY_OK, or the first error of the operation's steps */
    ferry_tag_message_t *message; /* FY_OFI_REQ_CLAIMED */
    /* not zeroed: each user fills what it reads */
    ferry_tag_info_t info; /* receives: ferry fills it before their completion */
    ferry_iov_t iov[FY_OFI_IOV_LIMIT];
    /* one-sided operations */
    uint64_t remote_addr;
    uint64_t key;
    fy_ofi_rkey_t *rkey;
    bool write; /* RMA: write (else read) */
    /* atomics (atomic.c) */
    ferry_atomic_op_t fop; /* the ferry operation of each element */
    bool fetch;            /* ferry_atomic_fetch (else ferry_atomic_post) */
    unsigned atomic_size;  /* 4 or 8 bytes */
    size_t count;          /* elements */
    size_t issued;         /* elements handed to ferry */
    uint64_t *operands;    /* one per element (operand_one for one) */
    uint64_t operand_one;
    uint64_t *compares; /* compare atomics */
    uint64_t compare_one;
    uint64_t *results; /* fetches: one per element (result_one for one) */
    uint64_t result_one;
    size_t result_count; /* result pieces of the application (0: results are dropped) */
    struct fi_ioc result_iov[FY_OFI_IOV_LIMIT];
    /* control messages */
    unsigned am_id;
    size_t ctrl_len;
    uint8_t ctrl[32]; /* control header */
    void *payload;    /* control payload (malloc'ed copy) */
    size_t payload_len;
    uint8_t inject[FY_OFI_INJECT_SIZE]; /* copies of injected data */
} fy_ofi_req_t;

/** Requests of one chunk of an endpoint's pool (ep->chunks). */
#define FY_OFI_REQ_CHUNK 64u

/** Add a chunk of free requests to the endpoint's pool. Returns false when memory or the
 *  endpoint's limit is exhausted. */
bool fy_ofi_req_pool_grow(fy_ofi_ep_t *ep);
/** fy_ofi_req_free of a one-sided, atomic or control request: frees what it allocated and
 *  resets that part first. */
void fy_ofi_req_free_tail(fy_ofi_req_t *req);
/** Free every chunk of the pool (and the payloads of requests still allocated). */
void fy_ofi_req_pool_free(fy_ofi_ep_t *ep);

/* ---------------------------------------------------------------- endpoint (ep.c) */

typedef struct fy_ofi_peer {
    ferry_ep_t *fep;       /* created on first use (or at fi_av_insert) */
    ferry_status_t status; /* FERRY_OK, or the error that ended the ferry endpoint */
    fy_ofi_rkey_t *rkeys;  /* keys of this peer (rma.c) */
} fy_ofi_peer_t;

/* A ferry endpoint closing after fi_av_remove (destroyed once its close completed). */
typedef struct fy_ofi_closing {
    fy_ofi_list_t link;
    ferry_ep_t *fep;
    fy_ofi_rkey_t *rkeys;
    ferry_completion_t comp;
} fy_ofi_closing_t;

struct fy_ofi_ep {
    struct fid_ep ep_fid;
    fy_ofi_domain_t *domain;
    uint64_t caps;
    uint64_t tag_format; /* fy_ofi_tag_format(caps) */
    uint64_t tx_op_flags;
    uint64_t rx_op_flags;
    bool enabled;
    bool destroying; /* fi_close runs: completions write no entries */
    ferry_worker_t *worker;
    int worker_fd;
    uint8_t name[FY_OFI_NAME_LEN]; /* fi_getname: the worker's compact address (name.h) */
    fy_ofi_av_t *av;
    fy_ofi_cq_t *tx_cq;
    fy_ofi_cq_t *rx_cq;
    bool tx_selective; /* FI_SELECTIVE_COMPLETION on the transmit binding */
    bool rx_selective;
    fy_ofi_cntr_t *cntr_send;
    fy_ofi_cntr_t *cntr_recv;
    fy_ofi_cntr_t *cntr_read;
    fy_ofi_cntr_t *cntr_write;
    fy_ofi_cntr_t *cntr_remote_write;
    fy_ofi_peer_t *peers; /* by AV index */
    size_t peer_count;
    /* requests (req.c) */
    fy_ofi_req_t **chunks;
    size_t chunk_count;
    fy_ofi_req_t *free_reqs;
    size_t tx_used;
    size_t rx_used;
    fy_ofi_list_t claimed;  /* messages taken by FI_PEEK|FI_CLAIM */
    fy_ofi_list_t deferred; /* work to run after ferry's progress returned */
    fy_ofi_list_t closing;  /* fy_ofi_closing_t */
    fy_ofi_list_t fetching; /* keys being fetched (rma.c) */
    uint32_t next_fetch_id;
};

/** The request fy_ofi_req_alloc would return next, left free: a send may fill its comp, buf,
 *  len, iovcnt, iov and inject, hand them to ferry, and take it (fy_ofi_req_take) only when
 *  ferry keeps them. NULL when the budget's queue is full (FY_OFI_QUEUE_SIZE) or memory is
 *  exhausted (the caller returns -FI_EAGAIN). */
static inline fy_ofi_req_t *fy_ofi_req_next(fy_ofi_ep_t *ep, fy_ofi_budget_t budget)
{
    size_t used = budget == FY_OFI_BUDGET_TX   ? ep->tx_used
                  : budget == FY_OFI_BUDGET_RX ? ep->rx_used
                                               : 0;
    if (used >= FY_OFI_QUEUE_SIZE)
        return NULL;
    if (ep->free_reqs == NULL && !fy_ofi_req_pool_grow(ep))
        return NULL;
    return ep->free_reqs;
}

/** Take the request fy_ofi_req_next returned (nothing was taken or freed since): its header
 *  zeroed, comp, buf, len, iovcnt and the buffers kept. */
static inline void fy_ofi_req_take(fy_ofi_ep_t *ep, fy_ofi_req_t *req, fy_ofi_req_kind_t kind,
                                   fy_ofi_budget_t budget)
{
    ep->free_reqs = (fy_ofi_req_t *)req->link.next;
    /* every field of the header, one by one (a memset of it is a rep stos) */
    req->ep = ep;
    fy_ofi_list_init(&req->link);
    req->kind = kind;
    req->budget = budget;
    req->flags = 0;
    req->step = 0;
    req->context = NULL;
    req->cq_flags = 0;
    req->addr = 0;
    req->fep = NULL;
    req->olen = 0;
    req->data = 0;
    req->tag = 0;
    req->cntr = NULL;
    req->status = FERRY_OK;
    req->message = NULL;
    if (budget == FY_OFI_BUDGET_TX)
        ep->tx_used++;
    else if (budget == FY_OFI_BUDGET_RX)
        ep->rx_used++;
}

/** A request of the endpoint: everything before iov zeroed but index, its one-sided part reset
 *  (req.c); NULL as fy_ofi_req_next. */
static inline fy_ofi_req_t *fy_ofi_req_alloc(fy_ofi_ep_t *ep, fy_ofi_req_kind_t kind,
                                             fy_ofi_budget_t budget)
{
    fy_ofi_req_t *req = fy_ofi_req_next(ep, budget);
    if (req == NULL)
        return NULL;
    req->comp = (ferry_completion_t){.cb = NULL};
    req->buf = NULL;
    req->len = 0;
    req->iovcnt = 0;
    fy_ofi_req_take(ep, req, kind, budget);
    return req;
}

/** Return a request to its endpoint's free list. */
static inline void fy_ofi_req_free(fy_ofi_req_t *req)
{
    if (req->kind >= FY_OFI_REQ_RMA) {
        fy_ofi_req_free_tail(req);
        return;
    }
    fy_ofi_ep_t *ep = req->ep;
    if (req->budget == FY_OFI_BUDGET_TX)
        ep->tx_used--;
    else if (req->budget == FY_OFI_BUDGET_RX)
        ep->rx_used--;
    req->comp.count = -1;
    req->link.next = (fy_ofi_list_t *)ep->free_reqs;
    ep->free_reqs = req;
}

int fy_ofi_ep_open(struct fid_domain *domain, struct fi_info *info, struct fid_ep **ep_p,
                   void *context);
/** Read FI_FERRY_CLOSE_TIMEOUT_MS (fi_prov_ini, once). */
void fy_ofi_ep_params_init(void);
/** fy_ofi_ep_peer's every case: checks the AV entry, creates the ferry endpoint. */
ferry_status_t fy_ofi_ep_peer_slow(fy_ofi_ep_t *ep, fi_addr_t addr, fy_ofi_peer_t **peer_p);
/** The peer of fi_addr, its ferry endpoint created on first use. Returns FERRY_OK, or
 *  FERRY_ERR_INVALID_ADDRESS (no AV, not in it), the creation error, or the peer's failure.
 *  A peer with a live ferry endpoint is its AV entry's (fi_av_remove clears it): no check. */
static inline ferry_status_t fy_ofi_ep_peer(fy_ofi_ep_t *ep, fi_addr_t addr, fy_ofi_peer_t **peer_p)
{
    if (addr < ep->peer_count && ep->peers[addr].fep != NULL &&
        ep->peers[addr].status == FERRY_OK) {
        *peer_p = &ep->peers[addr];
        return FERRY_OK;
    }
    return fy_ofi_ep_peer_slow(ep, addr, peer_p);
}
/** Create the ferry endpoint of a new AV entry now (fi_av_insert), so that a dead peer fails
 *  the insert. Returns FERRY_OK, FERRY_ERR_NO_RESOURCE (left for first use) or the error. */
ferry_status_t fy_ofi_ep_peer_connect(fy_ofi_ep_t *ep, fi_addr_t addr);
/** fi_av_remove: close the ferry endpoint of addr gracefully, in the background. */
void fy_ofi_ep_peer_remove(fy_ofi_ep_t *ep, fi_addr_t addr);
/** What progress runs after ferry's when there is any: the deferred work, the reaping of
 *  closed ferry endpoints. Returns the deferred requests run. */
unsigned fy_ofi_ep_progress_after(fy_ofi_ep_t *ep);

/** One round of progress: ferry, then the deferred work. Returns the events handled. Inline:
 *  every fi_cq_read of a polling application runs it. */
static inline unsigned fy_ofi_ep_progress(fy_ofi_ep_t *ep)
{
    unsigned n = ferry_worker_progress(ep->worker);
    if (!fy_ofi_list_empty(&ep->deferred) || !fy_ofi_list_empty(&ep->closing))
        n += fy_ofi_ep_progress_after(ep);
    return n;
}

/** Progress every endpoint of the set (domain lock held). Returns the events handled. */
static inline unsigned fy_ofi_epset_progress(fy_ofi_epset_t *set)
{
    if (set->count == 1) /* an endpoint's own CQ or counter */
        return fy_ofi_ep_progress(set->eps[0]);
    return fy_ofi_epset_progress_all(set);
}
/** Queue a request to run after progress (fy_ofi_ep_progress calls back its kind's code). */
void fy_ofi_ep_defer(fy_ofi_req_t *req);

/* ---------------------------------------------------------------- completions (comp.c) */

/** fy_ofi_req_complete of a failed request (an error entry unless its context is NULL). */
void fy_ofi_req_complete_error(fy_ofi_req_t *req, ferry_status_t status);

/** The CQ a request's entry goes to (NULL: none bound). */
static inline fy_ofi_cq_t *fy_ofi_req_cq(const fy_ofi_req_t *req)
{
    return req->budget == FY_OFI_BUDGET_RX ? req->ep->rx_cq : req->ep->tx_cq;
}

/** The buffer a request's entry reports: a receive's (where the message was placed), NULL for
 *  every other kind. */
static inline void *fy_ofi_req_entry_buf(const fy_ofi_req_t *req)
{
    return req->budget == FY_OFI_BUDGET_RX ? req->buf : NULL;
}

/** A request's entry reserved in cq, filled as a success (err 0; prov_errno and olen, read only
 *  for errors, left alone) from the request; the caller commits it. NULL when memory is
 *  exhausted (logged). */
static inline fy_ofi_cq_entry_t *fy_ofi_req_entry(const fy_ofi_req_t *req, fy_ofi_cq_t *cq)
{
    fy_ofi_cq_entry_t *entry = fy_ofi_cq_reserve(cq, req->context);
    if (entry == NULL)
        return NULL;
    fy_ofi_cq_entry_success(entry, req->context, req->cq_flags, req->len, fy_ofi_req_entry_buf(req),
                            req->data, req->tag, req->addr);
    return entry;
}

/** Write the entry of a finished request to its CQ (successes only with FY_OFI_REQ_CQ; errors
 *  always, unless its context is NULL) and count it; free the request. status: FERRY_OK or the
 *  error; a truncated receive reports FI_ETRUNC with len and olen. */
static inline void fy_ofi_req_complete(fy_ofi_req_t *req, ferry_status_t status)
{
    if (status != FERRY_OK) {
        fy_ofi_req_complete_error(req, status);
        return;
    }
    fy_ofi_cntr_count(req->cntr, false);
    fy_ofi_cq_t *cq = fy_ofi_req_cq(req);
    if ((req->flags & FY_OFI_REQ_CQ) && !req->ep->destroying && cq != NULL)
        fy_ofi_cq_success(cq, req->context, req->cq_flags, req->len, fy_ofi_req_entry_buf(req),
                          req->data, req->tag, req->addr);
    fy_ofi_req_free(req);
}
/** Write a request-less entry to the receive CQ (peeks, remote writes with data). */
void fy_ofi_rx_entry(fy_ofi_ep_t *ep, const fy_ofi_cq_entry_t *entry);

/* ---------------------------------------------------------------- messages (msg.c) */

extern struct fi_ops_msg fy_ofi_ops_msg;
extern struct fi_ops_tagged fy_ofi_ops_tagged;

/** fi_cancel: a posted receive of context completes with FI_ECANCELED. */
ssize_t fy_ofi_cancel(fy_ofi_ep_t *ep, void *context);

/* ---------------------------------------------------------------- control messages (ctrl.c) */

/** Install the provider's active-message handlers on a new endpoint's worker. */
ferry_status_t fy_ofi_ctrl_register(fy_ofi_ep_t *ep);
/** Queue a control message to fep (ctrl_wire.h) with a payload (copied). It is sent after
 *  progress returns. Returns FERRY_OK or FERRY_ERR_NO_MEMORY. */
ferry_status_t fy_ofi_ctrl_queue(fy_ofi_ep_t *ep, ferry_ep_t *fep, const fy_ofi_ctrl_msg_t *msg,
                                 const void *payload, size_t payload_len);
/** Send a queued control message. Returns false when it must be retried (no resources). */
bool fy_ofi_ctrl_send(fy_ofi_req_t *req);
/** Drop queued control messages to an endpoint that went away. */
void fy_ofi_ctrl_drop(fy_ofi_ep_t *ep, ferry_ep_t *fep);

/* ---------------------------------------------------------------- RMA and atomics (rma.c,
 * atomic.c) */

extern struct fi_ops_rma fy_ofi_ops_rma;
extern struct fi_ops_atomic fy_ofi_ops_atomic;

int fy_ofi_query_atomic(struct fid_domain *domain, enum fi_datatype datatype, enum fi_op op,
                        struct fi_atomic_attr *attr, uint64_t flags);
/** Issue a one-sided request: its key is fetched first when this peer has not given it yet.
 *  Returns 0 (issued or queued) or a negative error (the request is freed). */
ssize_t fy_ofi_rma_submit(fy_ofi_req_t *req);
/** Continue a deferred one-sided request (key arrived, next phase, resources back). */
void fy_ofi_rma_resume(fy_ofi_req_t *req);
/** Issue element i of an atomic request with the peer's key, reporting to req->comp. Returns
 *  as ferry_atomic_post/ferry_atomic_fetch. */
ferry_status_t fy_ofi_atomic_element(fy_ofi_req_t *req, size_t i, ferry_rkey_t *rkey);
/** Copy a fetching atomic's results into the application's result buffers. */
void fy_ofi_atomic_finish(fy_ofi_req_t *req);
/** Control-message handlers of the key fetch and of remote writes with data. */
void fy_ofi_key_request(fy_ofi_ep_t *ep, ferry_ep_t *reply_ep, uint32_t fetch_id, uint64_t key);
void fy_ofi_key_reply(fy_ofi_ep_t *ep, uint32_t fetch_id, ferry_status_t status, const void *packed,
                      size_t length);
void fy_ofi_write_notified(fy_ofi_ep_t *ep, uint64_t data, bool has_data, uint64_t length);
/** Release the keys of a peer (before its ferry endpoint is destroyed); requests still waiting
 *  for them complete with status. */
void fy_ofi_rkeys_release(fy_ofi_ep_t *ep, fy_ofi_rkey_t *rkeys, ferry_status_t status);

#endif
