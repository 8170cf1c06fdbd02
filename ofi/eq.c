/*
 * libferry-fi — event queues. RDM endpoints report nothing through an EQ (address vectors are
 * synchronous), so an EQ holds only what the application writes with fi_eq_write; it is still
 * complete (read, peek, errors, blocking read, an fd to wait on), because applications and
 * fabtests open one and bind it.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "ofi.h"

#define EQ_ENTRY_MAX 4096u /* the largest event fi_eq_write accepts */
#define EQ_SIZE_DEFAULT 1024u

typedef struct eq_event {
    fy_ofi_list_t link;
    uint32_t event;
    bool is_err;
    struct fi_eq_err_entry err;
    size_t len;
    uint8_t data[];
} eq_event_t;

struct fy_ofi_eq {
    struct fid_eq eq_fid;
    fy_ofi_fabric_t *fabric;
    pthread_mutex_t lock;
    fy_ofi_list_t events;
    size_t count;
    size_t size; /* the most events queued at once */
    enum fi_wait_obj wait_obj;
    int fd; /* eventfd: readable while events are queued (FI_WAIT_FD, sread) */
    struct fi_eq_err_entry last_err;
};

static void eq_fd_set(fy_ofi_eq_t *eq, bool readable)
{
    uint64_t v = 1;
    if (readable) {
        if (write(eq->fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
            FY_OFI_WARN(FI_LOG_EQ, "write(eventfd %d) failed: %s\n", eq->fd, strerror(errno));
    } else {
        if (read(eq->fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
            FY_OFI_WARN(FI_LOG_EQ, "read(eventfd %d) failed: %s\n", eq->fd, strerror(errno));
    }
}

static eq_event_t *eq_head(fy_ofi_eq_t *eq)
{
    if (fy_ofi_list_empty(&eq->events))
        return NULL;
    return FY_OFI_CONTAINER(eq->events.next, eq_event_t, link);
}

static void eq_pop(fy_ofi_eq_t *eq, eq_event_t *ev)
{
    fy_ofi_list_remove(&ev->link);
    free(ev);
    if (--eq->count == 0)
        eq_fd_set(eq, false);
}

/* read: the event at the head, copied into buf (len bytes at most). Returns the bytes of the
 * event, -FI_EAGAIN (none), -FI_EAVAIL (an error event is at the head: fi_eq_readerr),
 * -FI_ETOOSMALL (buf is shorter than the event; it stays queued). flags: FI_PEEK leaves it. */
static ssize_t eq_read(struct fid_eq *fid, uint32_t *event, void *buf, size_t len, uint64_t flags)
{
    fy_ofi_eq_t *eq = FY_OFI_CONTAINER(fid, fy_ofi_eq_t, eq_fid);
    ssize_t rc;
    pthread_mutex_lock(&eq->lock);
    eq_event_t *ev = eq_head(eq);
    if (ev == NULL) {
        rc = -FI_EAGAIN;
    } else if (ev->is_err) {
        rc = -FI_EAVAIL;
    } else if (ev->len > len || (ev->len > 0 && buf == NULL)) {
        rc = -FI_ETOOSMALL;
    } else {
        if (event != NULL)
            *event = ev->event;
        if (ev->len > 0)
            memcpy(buf, ev->data, ev->len);
        rc = (ssize_t)ev->len;
        if (!(flags & FI_PEEK))
            eq_pop(eq, ev);
    }
    pthread_mutex_unlock(&eq->lock);
    return rc;
}

/* readerr: the error event at the head. Returns sizeof(struct fi_eq_err_entry) or -FI_EAGAIN. */
static ssize_t eq_readerr(struct fid_eq *fid, struct fi_eq_err_entry *buf, uint64_t flags)
{
    fy_ofi_eq_t *eq = FY_OFI_CONTAINER(fid, fy_ofi_eq_t, eq_fid);
    if (buf == NULL)
        return -FI_EINVAL;
    ssize_t rc;
    pthread_mutex_lock(&eq->lock);
    eq_event_t *ev = eq_head(eq);
    if (ev == NULL || !ev->is_err) {
        rc = -FI_EAGAIN;
    } else {
        eq->last_err = ev->err;
        eq->last_err.err_data = NULL;
        eq->last_err.err_data_size = 0;
        if (FI_VERSION_LT(eq->fabric->fabric_fid.api_version, FI_VERSION(1, 5))) {
            /* the 1.0 entry ends before err_data_size */
            memcpy(buf, &eq->last_err, offsetof(struct fi_eq_err_entry, err_data_size));
        } else {
            buf->fid = eq->last_err.fid;
            buf->context = eq->last_err.context;
            buf->data = eq->last_err.data;
            buf->err = eq->last_err.err;
            buf->prov_errno = eq->last_err.prov_errno;
            buf->err_data_size = 0; /* no provider error data */
        }
        rc = sizeof(*buf);
        if (!(flags & FI_PEEK))
            eq_pop(eq, ev);
    }
    pthread_mutex_unlock(&eq->lock);
    return rc;
}

/* write: queue an event (a copy of buf). Returns len, -FI_EINVAL (too long, NULL),
 * -FI_EAGAIN (the queue holds its size already), -FI_ENOMEM. flags: none (libfabric has no
 * public flag to write an error event, so the provider's EQ holds no error events). */
static ssize_t eq_write(struct fid_eq *fid, uint32_t event, const void *buf, size_t len,
                        uint64_t flags)
{
    fy_ofi_eq_t *eq = FY_OFI_CONTAINER(fid, fy_ofi_eq_t, eq_fid);
    if (flags != 0)
        return -FI_EBADFLAGS;
    if (len > EQ_ENTRY_MAX || (len > 0 && buf == NULL))
        return -FI_EINVAL;
    eq_event_t *ev = calloc(1, sizeof(*ev) + len);
    if (ev == NULL)
        return -FI_ENOMEM;
    ev->event = event;
    ev->len = len;
    if (len > 0)
        memcpy(ev->data, buf, len);
    pthread_mutex_lock(&eq->lock);
    if (eq->count >= eq->size) {
        pthread_mutex_unlock(&eq->lock);
        free(ev);
        return -FI_EAGAIN;
    }
    fy_ofi_list_push_tail(&eq->events, &ev->link);
    if (eq->count++ == 0)
        eq_fd_set(eq, true);
    pthread_mutex_unlock(&eq->lock);
    return (ssize_t)len;
}

/* sread: eq_read, waiting up to timeout ms (-1: forever). Returns as eq_read; -FI_EAGAIN after
 * the timeout; -FI_EINVAL for an EQ opened with FI_WAIT_NONE. */
static ssize_t eq_sread(struct fid_eq *fid, uint32_t *event, void *buf, size_t len, int timeout,
                        uint64_t flags)
{
    fy_ofi_eq_t *eq = FY_OFI_CONTAINER(fid, fy_ofi_eq_t, eq_fid);
    if (eq->wait_obj == FI_WAIT_NONE)
        return -FI_EINVAL;
    for (;;) {
        ssize_t rc = eq_read(fid, event, buf, len, flags);
        if (rc != -FI_EAGAIN)
            return rc;
        struct pollfd pfd = {.fd = eq->fd, .events = POLLIN};
        int n = poll(&pfd, 1, timeout);
        if (n == 0)
            return -FI_EAGAIN;
        if (n < 0 && errno != EINTR) {
            FY_OFI_WARN(FI_LOG_EQ, "poll(eventfd %d) failed: %s\n", eq->fd, strerror(errno));
            return -FI_EIO;
        }
        /* a writer's event is there now, or a reader took it first: read again (the timeout
         * restarts, which fi_eq_sread allows: it bounds each wait) */
    }
}

/* strerror: the ferry status a provider error carries (prov_errno). */
static const char *eq_strerror(struct fid_eq *fid, int prov_errno, const void *err_data, char *buf,
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

static struct fi_ops_eq eq_ops = {
    .size = sizeof(struct fi_ops_eq),
    .read = eq_read,         /* never blocks */
    .readerr = eq_readerr,   /* never blocks */
    .write = eq_write,       /* copies buf; never blocks */
    .sread = eq_sread,       /* blocks up to timeout */
    .strerror = eq_strerror, /* static string or buf */
};

int fy_ofi_eq_trywait(struct fid *fid)
{
    fy_ofi_eq_t *eq = FY_OFI_CONTAINER(fid, fy_ofi_eq_t, eq_fid.fid);
    if (eq->wait_obj != FI_WAIT_FD)
        return -FI_EINVAL;
    pthread_mutex_lock(&eq->lock);
    int rc = eq->count > 0 ? -FI_EAGAIN : 0;
    pthread_mutex_unlock(&eq->lock);
    return rc;
}

/* control: FI_GETWAIT (FI_WAIT_FD: the eventfd), FI_GETWAITOBJ. */
static int eq_control(struct fid *fid, int command, void *arg)
{
    fy_ofi_eq_t *eq = FY_OFI_CONTAINER(fid, fy_ofi_eq_t, eq_fid.fid);
    return fy_ofi_wait_control(command, arg, eq->wait_obj, eq->fd);
}

static int eq_close(struct fid *fid)
{
    fy_ofi_eq_t *eq = FY_OFI_CONTAINER(fid, fy_ofi_eq_t, eq_fid.fid);
    fy_ofi_list_t *item;
    while ((item = fy_ofi_list_pop_head(&eq->events)) != NULL)
        free(FY_OFI_CONTAINER(item, eq_event_t, link));
    close(eq->fd);
    pthread_mutex_destroy(&eq->lock);
    pthread_mutex_lock(&eq->fabric->lock);
    eq->fabric->refs--;
    pthread_mutex_unlock(&eq->fabric->lock);
    free(eq);
    return 0;
}

static struct fi_ops eq_fi_ops = {
    .size = sizeof(struct fi_ops),
    .close = eq_close,      /* frees queued events; 0 */
    .bind = fy_ofi_no_bind, /* nothing binds to an EQ */
    .control = eq_control,  /* FI_GETWAIT, FI_GETWAITOBJ */
    .ops_open = fy_ofi_no_ops_open,
    .tostr = fy_ofi_no_tostr,
    .ops_set = fy_ofi_no_ops_set,
};

int fy_ofi_eq_open(struct fid_fabric *fabric_fid, struct fi_eq_attr *attr, struct fid_eq **eq_p,
                   void *context)
{
    if (fabric_fid == NULL || attr == NULL || eq_p == NULL)
        return -FI_EINVAL;
    if (attr->flags & ~(uint64_t)FI_WRITE)
        return -FI_EBADFLAGS;
    enum fi_wait_obj wait_obj;
    int rc = fy_ofi_wait_obj(attr->wait_obj, attr->wait_set, &wait_obj);
    if (rc != 0)
        return rc;
    fy_ofi_fabric_t *fabric = FY_OFI_CONTAINER(fabric_fid, fy_ofi_fabric_t, fabric_fid);
    fy_ofi_eq_t *eq = calloc(1, sizeof(*eq));
    if (eq == NULL)
        return -FI_ENOMEM;
    eq->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC | EFD_SEMAPHORE);
    if (eq->fd < 0) {
        FY_OFI_WARN(FI_LOG_EQ, "eventfd failed: %s\n", strerror(errno));
        free(eq);
        return -FI_EMFILE;
    }
    pthread_mutex_init(&eq->lock, NULL);
    fy_ofi_list_init(&eq->events);
    eq->fabric = fabric;
    eq->size = attr->size > 0 ? attr->size : EQ_SIZE_DEFAULT;
    eq->wait_obj = wait_obj;
    eq->eq_fid.fid.fclass = FI_CLASS_EQ;
    eq->eq_fid.fid.context = context;
    eq->eq_fid.fid.ops = &eq_fi_ops;
    eq->eq_fid.ops = &eq_ops;
    pthread_mutex_lock(&fabric->lock);
    fabric->refs++;
    pthread_mutex_unlock(&fabric->lock);
    *eq_p = &eq->eq_fid;
    return 0;
}
