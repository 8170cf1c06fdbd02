/*
 * libferry-fi — completion queues. Entries wait in a ring that grows instead of overrunning
 * (FI_RM_ENABLED: an application may have more operations outstanding than the CQ's size).
 * Error entries stay in order among the others: a read returns the successes before the first
 * error, then -FI_EAVAIL until fi_cq_readerr took it. Every read progresses the endpoints bound
 * to the CQ (manual progress). Waiting (fi_cq_sread, FI_WAIT_FD + fi_trywait) uses an epoll set
 * of the bound endpoints' ferry worker fds and an eventfd for fi_cq_signal and for wake-ups from
 * other threads.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "ofi.h"

#define CQ_RING_MIN 64u

/* Reads in a row that may return without progressing the bound endpoints (cq_readfrom). */
#define CQ_SKIP_MAX 4u

static size_t entry_size(enum fi_cq_format format)
{
    switch (format) {
    case FI_CQ_FORMAT_CONTEXT:
        return sizeof(struct fi_cq_entry);
    case FI_CQ_FORMAT_MSG:
        return sizeof(struct fi_cq_msg_entry);
    case FI_CQ_FORMAT_DATA:
        return sizeof(struct fi_cq_data_entry);
    case FI_CQ_FORMAT_TAGGED:
        return sizeof(struct fi_cq_tagged_entry);
    default:
        return 0;
    }
}

void fy_ofi_cq_wake(fy_ofi_cq_t *cq)
{
    uint64_t one = 1;
    if (cq->signal_fd >= 0 && write(cq->signal_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
        FY_OFI_WARN(FI_LOG_CQ, "write(eventfd %d) failed: %s\n", cq->signal_fd, strerror(errno));
}

static void cq_drain_wake(fy_ofi_cq_t *cq)
{
    uint64_t v;
    if (cq->signal_fd >= 0 && read(cq->signal_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
        FY_OFI_WARN(FI_LOG_CQ, "read(eventfd %d) failed: %s\n", cq->signal_fd, strerror(errno));
}

static bool cq_grow(fy_ofi_cq_t *cq)
{
    size_t size = cq->ring_size * 2;
    fy_ofi_cq_entry_t *ring = malloc(size * sizeof(*ring));
    if (ring == NULL)
        return false;
    for (size_t i = 0; i < cq->count; i++)
        ring[i] = cq->ring[(cq->head + i) & (cq->ring_size - 1)];
    free(cq->ring);
    cq->ring = ring;
    cq->ring_size = size;
    cq->head = 0;
    return true;
}

bool fy_ofi_cq_grow(fy_ofi_cq_t *cq, void *context)
{
    if (cq_grow(cq))
        return true;
    FY_OFI_WARN(FI_LOG_CQ,
                "CQ of %zu entries: out of memory growing it; a completion of "
                "context %p is lost\n",
                cq->count, context);
    return false;
}

static fy_ofi_cq_entry_t *cq_head(fy_ofi_cq_t *cq)
{
    return cq->count > 0 ? &cq->ring[cq->head] : NULL;
}

static void cq_pop(fy_ofi_cq_t *cq)
{
    cq->head = (cq->head + 1) & (cq->ring_size - 1);
    cq->count--;
}

/* Copy up to count successes (stopping at an error entry). Domain lock held. Out of line: the
 * empty reads skip its frame. */
__attribute__((noinline)) static ssize_t cq_take(fy_ofi_cq_t *cq, void *buf, size_t count,
                                                 fi_addr_t *src_addr)
{
    size_t n = 0;
    uint8_t *out = buf;
    while (n < count) {
        fy_ofi_cq_entry_t *entry = cq_head(cq);
        if (entry == NULL || entry->err != 0)
            break;
        if (cq->entry_size == sizeof(struct fi_cq_tagged_entry)) /* Open MPI's: no call */
            memcpy(out + n * sizeof(entry->e), &entry->e, sizeof(entry->e));
        else
            memcpy(out + n * cq->entry_size, &entry->e, cq->entry_size);
        if (src_addr != NULL)
            src_addr[n] = entry->src;
        cq_pop(cq);
        n++;
    }
    if (n > 0)
        return (ssize_t)n;
    if (count == 0)
        return 0;
    fy_ofi_cq_entry_t *entry = cq_head(cq);
    return (entry != NULL && entry->err != 0) ? -FI_EAVAIL : -FI_EAGAIN;
}

/* cq_take for tagged entries without sources (Open MPI's reads): the head and count stay in
 * registers and the entry is one structure copy. Out of line, as cq_take: inline, its
 * registers made every empty read's frame larger (7 instructions more per poll). */
static fy_ofi_hot __attribute__((noinline)) ssize_t
cq_take_tagged(fy_ofi_cq_t *cq, struct fi_cq_tagged_entry *out, size_t count)
{
    size_t avail = cq->count;
    size_t head = cq->head;
    size_t mask = cq->ring_size - 1;
    size_t n = 0;
    while (n < count && n < avail) {
        const fy_ofi_cq_entry_t *entry = &cq->ring[head];
        if (entry->err != 0)
            break;
        out[n++] = entry->e;
        head = (head + 1) & mask;
    }
    cq->head = head;
    cq->count = avail - n;
    if (n > 0 || count == 0)
        return (ssize_t)n;
    return -FI_EAVAIL; /* entries are queued: the first is an error */
}

/* Whether a read may leave the bound endpoints alone: the application has entries to handle
 * without it. That is the case when entries are queued already (a receive that found its
 * message waiting, a send ferry finished at once), or when the read before returned all the
 * CQ had with room for more and this one finds none (Open MPI's MTL reads up to 100 entries
 * until -FI_EAGAIN after every entry it handled, so that read would be an empty poll on the
 * path of every message; an application that reads one entry at a time is not skipped). Progressing
 * there makes a receiver that is behind move its rings' messages into ferry's unexpected queue
 * while it still handles older ones: the queue then grows to thousands of messages that left the
 * caches (Open MPI's 8 B tag_bw: backlog peak 17281 messages, 16 with the skips). At most
 * CQ_SKIP_MAX reads in a row skip: an application that always finds entries still answers its
 * peers. count 0 always progresses. */
static inline bool cq_skip_progress(fy_ofi_cq_t *cq, size_t count)
{
    if (count == 0 || cq->skipped >= CQ_SKIP_MAX || (cq->count == 0 && !cq->found)) {
        cq->skipped = 0;
        return false;
    }
    cq->skipped++;
    return true;
}

/* readfrom: progress the bound endpoints (unless cq_skip_progress), then copy up to count
 * entries of the CQ's format. Returns the number read, -FI_EAGAIN (none), -FI_EAVAIL (an error
 * entry comes first), or -FI_EINVAL. count 0 only progresses and returns 0. Never blocks. */
static fy_ofi_hot ssize_t cq_readfrom(struct fid_cq *fid, void *buf, size_t count,
                                      fi_addr_t *src_addr)
{
    fy_ofi_cq_t *cq = FY_OFI_CONTAINER(fid, fy_ofi_cq_t, cq_fid);
    if (count > 0 && buf == NULL)
        return -FI_EINVAL;
    fy_ofi_domain_lock(cq->domain);
    ssize_t rc = count == 0 ? 0 : -FI_EAGAIN; /* nothing queued: the polls of a waiting rank */
    if (!cq_skip_progress(cq, count)) {
        /* with nothing queued, Open MPI's reads get their entries written straight into buf */
        bool direct = cq->count == 0 && src_addr == NULL &&
                      cq->entry_size == sizeof(struct fi_cq_tagged_entry);
        if (direct) {
            cq->direct = buf;
            cq->direct_room = count;
            cq->direct_count = 0;
        }
        fy_ofi_epset_progress(&cq->set);
        if (direct) {
            if (cq->direct_count > 0)
                rc = (ssize_t)cq->direct_count; /* the ring holds only later ones */
            cq->direct_room = 0;
            cq->direct = NULL;
        }
    }
    if (rc == -FI_EAGAIN && cq->count > 0) {
        if (src_addr == NULL && cq->entry_size == sizeof(struct fi_cq_tagged_entry))
            rc = cq_take_tagged(cq, buf, count); /* Open MPI's reads */
        else
            rc = cq_take(cq, buf, count, src_addr);
    }
    cq->found = rc > 0 && (size_t)rc < count && cq->count == 0; /* all it had, room for more */
    fy_ofi_domain_unlock(cq->domain);
    return rc;
}

static fy_ofi_hot ssize_t cq_read(struct fid_cq *fid, void *buf, size_t count)
{
    return cq_readfrom(fid, buf, count, NULL);
}

/* readerr: the error entry at the head. Its err_data_size is 0: the provider has no error data
 * (prov_errno is the ferry status; fi_cq_strerror names it). Returns 1, -FI_EAGAIN (no error
 * entry at the head), -FI_EINVAL. */
static ssize_t cq_readerr(struct fid_cq *fid, struct fi_cq_err_entry *buf, uint64_t flags)
{
    fy_ofi_cq_t *cq = FY_OFI_CONTAINER(fid, fy_ofi_cq_t, cq_fid);
    if (buf == NULL)
        return -FI_EINVAL;
    fy_ofi_domain_lock(cq->domain);
    fy_ofi_cq_entry_t *entry = cq_head(cq);
    ssize_t rc = -FI_EAGAIN;
    if (entry != NULL && entry->err != 0) {
        struct fi_cq_err_entry e = {
            .op_context = entry->e.op_context,
            .flags = entry->e.flags,
            .len = entry->e.len,
            .buf = entry->e.buf,
            .data = entry->e.data,
            .tag = entry->e.tag,
            .olen = entry->olen,
            .err = entry->err,
            .prov_errno = entry->prov_errno,
        };
        if (FI_VERSION_LT(cq->domain->api_version, FI_VERSION(1, 5))) {
            memcpy(buf, &e, offsetof(struct fi_cq_err_entry, err_data_size));
        } else {
            /* err_data/err_data_size are inputs since 1.5: a buffer the application gave is left
             * untouched (there is nothing to copy); without one, err_data is NULL */
            void *err_data = buf->err_data_size > 0 ? buf->err_data : NULL;
            *buf = e;
            buf->err_data = err_data;
            buf->err_data_size = 0;
        }
        if (!(flags & FI_PEEK))
            cq_pop(cq);
        rc = 1;
    }
    fy_ofi_domain_unlock(cq->domain);
    return rc;
}

/* sreadfrom: readfrom, sleeping (no busy loop: the workers are armed) up to timeout ms (-1:
 * forever) until an entry arrives. Returns as readfrom; -FI_EAGAIN on timeout; -FI_ECANCELED
 * after fi_cq_signal; -FI_EINVAL for a CQ without a wait object. cond is ignored (threshold 1). */
static ssize_t cq_sreadfrom(struct fid_cq *fid, void *buf, size_t count, fi_addr_t *src_addr,
                            const void *cond, int timeout)
{
    (void)cond;
    fy_ofi_cq_t *cq = FY_OFI_CONTAINER(fid, fy_ofi_cq_t, cq_fid);
    if (cq->wait_obj == FI_WAIT_NONE)
        return -FI_EINVAL;
    int64_t deadline = timeout >= 0 ? fy_ofi_now_ms() + timeout : -1;
    for (;;) {
        ssize_t rc = cq_readfrom(fid, buf, count, src_addr);
        if (rc != -FI_EAGAIN)
            return rc;
        fy_ofi_domain_lock(cq->domain);
        bool signaled = cq->signaled;
        cq->signaled = false;
        cq->waiters++;
        fy_ofi_domain_unlock(cq->domain);
        if (signaled) {
            fy_ofi_domain_lock(cq->domain);
            cq->waiters--;
            fy_ofi_domain_unlock(cq->domain);
            cq_drain_wake(cq);
            return -FI_ECANCELED;
        }
        int left = -1;
        if (deadline >= 0) {
            int64_t l = deadline - fy_ofi_now_ms();
            left = l > 0 ? (int)l : 0;
        }
        int w = fy_ofi_epset_wait(cq->domain, &cq->set, left);
        cq_drain_wake(cq);
        fy_ofi_domain_lock(cq->domain);
        cq->waiters--;
        fy_ofi_domain_unlock(cq->domain);
        if (w == -FI_ETIMEDOUT || (w == 0 && deadline >= 0 && fy_ofi_now_ms() >= deadline)) {
            rc = cq_readfrom(fid, buf, count, src_addr);
            return rc;
        }
        if (w < 0)
            return w;
    }
}

static ssize_t cq_sread(struct fid_cq *fid, void *buf, size_t count, const void *cond, int timeout)
{
    return cq_sreadfrom(fid, buf, count, NULL, cond, timeout);
}

/* signal: wake a thread blocked in fi_cq_sread, which returns -FI_ECANCELED. */
static int cq_signal(struct fid_cq *fid)
{
    fy_ofi_cq_t *cq = FY_OFI_CONTAINER(fid, fy_ofi_cq_t, cq_fid);
    fy_ofi_domain_lock(cq->domain);
    cq->signaled = true;
    fy_ofi_domain_unlock(cq->domain);
    fy_ofi_cq_wake(cq);
    return 0;
}

/* strerror: the ferry status of prov_errno. */
static const char *cq_strerror(struct fid_cq *fid, int prov_errno, const void *err_data, char *buf,
                               size_t len)
{
    (void)fid, (void)err_data;
    const char *s = ferry_status_string((ferry_status_t)prov_errno);
    if (buf != NULL && len > 0) {
        strncpy(buf, s, len - 1);
        buf[len - 1] = '\0';
        return buf;
    }
    return s;
}

static struct fi_ops_cq cq_ops = {
    .size = sizeof(struct fi_ops_cq),
    .read = cq_read,           /* progresses; never blocks */
    .readfrom = cq_readfrom,   /* as read, with source addresses (FI_SOURCE) */
    .readerr = cq_readerr,     /* never blocks */
    .sread = cq_sread,         /* blocks up to timeout (needs a wait object) */
    .sreadfrom = cq_sreadfrom, /* as sread, with source addresses */
    .signal = cq_signal,       /* wakes sread */
    .strerror = cq_strerror,   /* static string or buf */
};

int fy_ofi_cq_trywait(fy_ofi_cq_t *cq)
{
    if (cq->wait_obj != FI_WAIT_FD)
        return -FI_EINVAL;
    fy_ofi_domain_lock(cq->domain);
    int rc = cq->count > 0 || cq->signaled ? -FI_EAGAIN : fy_ofi_epset_arm(&cq->set);
    fy_ofi_domain_unlock(cq->domain);
    if (rc == 0)
        cq_drain_wake(cq);
    return rc;
}

/* control: FI_GETWAIT (FI_WAIT_FD: the epoll fd; call fi_trywait before sleeping on it),
 * FI_GETWAITOBJ. */
static int cq_control(struct fid *fid, int command, void *arg)
{
    fy_ofi_cq_t *cq = FY_OFI_CONTAINER(fid, fy_ofi_cq_t, cq_fid.fid);
    return fy_ofi_wait_control(command, arg, cq->wait_obj, cq->set.epoll_fd);
}

static int cq_close(struct fid *fid)
{
    fy_ofi_cq_t *cq = FY_OFI_CONTAINER(fid, fy_ofi_cq_t, cq_fid.fid);
    fy_ofi_domain_t *domain = cq->domain;
    fy_ofi_domain_lock(domain);
    if (cq->set.total > 0) {
        fy_ofi_domain_unlock(domain);
        return -FI_EBUSY;
    }
    domain->refs--;
    fy_ofi_domain_unlock(domain);
    fy_ofi_epset_fini(&cq->set);
    if (cq->signal_fd >= 0)
        close(cq->signal_fd);
    free(cq->ring);
    free(cq);
    return 0;
}

static struct fi_ops cq_fi_ops = {
    .size = sizeof(struct fi_ops),
    .close = cq_close,      /* -FI_EBUSY while endpoints are bound; queued entries are dropped */
    .bind = fy_ofi_no_bind, /* wait sets are not supported */
    .control = cq_control,  /* FI_GETWAIT, FI_GETWAITOBJ */
    .ops_open = fy_ofi_no_ops_open,
    .tostr = fy_ofi_no_tostr,
    .ops_set = fy_ofi_no_ops_set,
};

int fy_ofi_cq_open(struct fid_domain *domain_fid, struct fi_cq_attr *attr, struct fid_cq **cq_p,
                   void *context)
{
    if (domain_fid == NULL || attr == NULL || cq_p == NULL)
        return -FI_EINVAL;
    fy_ofi_domain_t *domain = FY_OFI_CONTAINER(domain_fid, fy_ofi_domain_t, domain_fid);
    enum fi_cq_format format =
        attr->format == FI_CQ_FORMAT_UNSPEC ? FI_CQ_FORMAT_CONTEXT : attr->format;
    if (entry_size(format) == 0)
        return -FI_ENOSYS;
    enum fi_wait_obj wait_obj;
    int rc = fy_ofi_wait_obj(attr->wait_obj, attr->wait_set, &wait_obj);
    if (rc != 0)
        return rc;
    if (attr->flags & ~(uint64_t)FI_AFFINITY)
        return -FI_EBADFLAGS;
    if (attr->wait_cond != FI_CQ_COND_NONE && attr->wait_cond != FI_CQ_COND_THRESHOLD)
        return -FI_ENOSYS;
    rc = -FI_ENOMEM;
    fy_ofi_cq_t *cq = calloc(1, sizeof(*cq));
    if (cq == NULL)
        goto err;
    cq->signal_fd = -1;
    cq->ring_size = CQ_RING_MIN;
    cq->ring = malloc(cq->ring_size * sizeof(*cq->ring));
    if (cq->ring == NULL)
        goto err_free;
    rc = fy_ofi_epset_init(&cq->set, wait_obj != FI_WAIT_NONE);
    if (rc != 0)
        goto err_free_ring;
    if (wait_obj != FI_WAIT_NONE) {
        rc = -FI_EMFILE;
        cq->signal_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (cq->signal_fd < 0) {
            FY_OFI_WARN(FI_LOG_CQ, "eventfd failed: %s\n", strerror(errno));
            goto err_fini_set;
        }
        rc = fy_ofi_epoll_add(cq->set.epoll_fd, cq->signal_fd);
        if (rc != 0)
            goto err_close_signal;
    }
    cq->domain = domain;
    cq->format = format;
    cq->wait_obj = wait_obj;
    cq->entry_size = entry_size(format);
    cq->cq_fid.fid.fclass = FI_CLASS_CQ;
    cq->cq_fid.fid.context = context;
    cq->cq_fid.fid.ops = &cq_fi_ops;
    cq->cq_fid.ops = &cq_ops;
    fy_ofi_domain_lock(domain);
    domain->refs++;
    fy_ofi_domain_unlock(domain);
    *cq_p = &cq->cq_fid;
    return 0;

err_close_signal:
    close(cq->signal_fd);
err_fini_set:
    fy_ofi_epset_fini(&cq->set);
err_free_ring:
    free(cq->ring);
err_free:
    free(cq);
err:
    return rc;
}
