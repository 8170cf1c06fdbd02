/*
 * libferry-fi — counters: a success and an error count, bumped when an operation of a bound
 * endpoint completes (FI_SEND, FI_RECV, FI_READ, FI_WRITE, and FI_REMOTE_WRITE for remote
 * writes with data). Reads progress the bound endpoints; fi_cntr_wait sleeps on their workers.
 * Remote-access events (FI_RMA_EVENT) are not counted: ferry's one-sided operations do not tell
 * the target.
 */
#include <stdlib.h>
#include <string.h>

#include "ofi.h"

/* read/readerr: progress, then the count. Never block. */
static uint64_t cntr_read(struct fid_cntr *fid)
{
    fy_ofi_cntr_t *cntr = FY_OFI_CONTAINER(fid, fy_ofi_cntr_t, cntr_fid);
    fy_ofi_domain_lock(cntr->domain);
    fy_ofi_epset_progress(&cntr->set);
    uint64_t v = cntr->value;
    fy_ofi_domain_unlock(cntr->domain);
    return v;
}

static uint64_t cntr_readerr(struct fid_cntr *fid)
{
    fy_ofi_cntr_t *cntr = FY_OFI_CONTAINER(fid, fy_ofi_cntr_t, cntr_fid);
    fy_ofi_domain_lock(cntr->domain);
    fy_ofi_epset_progress(&cntr->set);
    uint64_t v = cntr->errors;
    fy_ofi_domain_unlock(cntr->domain);
    return v;
}

/* add/set/adderr/seterr: change a count. Return 0. */
static int cntr_change(struct fid_cntr *fid, uint64_t value, bool errors, bool add)
{
    fy_ofi_cntr_t *cntr = FY_OFI_CONTAINER(fid, fy_ofi_cntr_t, cntr_fid);
    fy_ofi_domain_lock(cntr->domain);
    uint64_t *count = errors ? &cntr->errors : &cntr->value;
    *count = add ? *count + value : value;
    fy_ofi_domain_unlock(cntr->domain);
    return 0;
}

static int cntr_add(struct fid_cntr *fid, uint64_t value)
{
    return cntr_change(fid, value, false, true);
}

static int cntr_set(struct fid_cntr *fid, uint64_t value)
{
    return cntr_change(fid, value, false, false);
}

static int cntr_adderr(struct fid_cntr *fid, uint64_t value)
{
    return cntr_change(fid, value, true, true);
}

static int cntr_seterr(struct fid_cntr *fid, uint64_t value)
{
    return cntr_change(fid, value, true, false);
}

/* wait: until the count reaches threshold (0), an error is counted (-FI_EAVAIL), or timeout ms
 * pass (-FI_ETIMEDOUT; -1: forever). Sleeps on the bound workers; -FI_EINVAL without a wait
 * object. */
static int cntr_wait(struct fid_cntr *fid, uint64_t threshold, int timeout)
{
    fy_ofi_cntr_t *cntr = FY_OFI_CONTAINER(fid, fy_ofi_cntr_t, cntr_fid);
    if (cntr->wait_obj == FI_WAIT_NONE)
        return -FI_EINVAL;
    int64_t deadline = timeout >= 0 ? fy_ofi_now_ms() + timeout : -1;
    fy_ofi_domain_lock(cntr->domain);
    uint64_t errors = cntr->errors;
    fy_ofi_domain_unlock(cntr->domain);
    for (;;) {
        fy_ofi_domain_lock(cntr->domain);
        fy_ofi_epset_progress(&cntr->set);
        uint64_t value = cntr->value;
        bool failed = cntr->errors != errors;
        fy_ofi_domain_unlock(cntr->domain);
        if (value >= threshold)
            return 0;
        if (failed)
            return -FI_EAVAIL;
        int left = -1;
        if (deadline >= 0) {
            int64_t l = deadline - fy_ofi_now_ms();
            if (l <= 0)
                return -FI_ETIMEDOUT;
            left = (int)l;
        }
        int rc = fy_ofi_epset_wait(cntr->domain, &cntr->set, left);
        if (rc != 0 && rc != -FI_ETIMEDOUT)
            return rc;
    }
}

static struct fi_ops_cntr cntr_ops = {
    .size = sizeof(struct fi_ops_cntr),
    .read = cntr_read, /* progresses; never blocks */
    .readerr = cntr_readerr,
    .add = cntr_add,       /* 0 */
    .set = cntr_set,       /* 0 */
    .wait = cntr_wait,     /* blocks up to timeout */
    .adderr = cntr_adderr, /* 0 */
    .seterr = cntr_seterr, /* 0 */
};

/* control: FI_GETWAIT (FI_WAIT_FD: the epoll set of the bound workers; fi_trywait before
 * sleeping on it), FI_GETWAITOBJ. */
static int cntr_control(struct fid *fid, int command, void *arg)
{
    fy_ofi_cntr_t *cntr = FY_OFI_CONTAINER(fid, fy_ofi_cntr_t, cntr_fid.fid);
    return fy_ofi_wait_control(command, arg, cntr->wait_obj, cntr->set.epoll_fd);
}

int fy_ofi_cntr_trywait(fy_ofi_cntr_t *cntr)
{
    if (cntr->wait_obj != FI_WAIT_FD)
        return -FI_EINVAL;
    fy_ofi_domain_lock(cntr->domain);
    int rc = fy_ofi_epset_arm(&cntr->set);
    fy_ofi_domain_unlock(cntr->domain);
    return rc;
}

static int cntr_close(struct fid *fid)
{
    fy_ofi_cntr_t *cntr = FY_OFI_CONTAINER(fid, fy_ofi_cntr_t, cntr_fid.fid);
    fy_ofi_domain_t *domain = cntr->domain;
    fy_ofi_domain_lock(domain);
    if (cntr->set.total > 0) {
        fy_ofi_domain_unlock(domain);
        return -FI_EBUSY;
    }
    domain->refs--;
    fy_ofi_domain_unlock(domain);
    fy_ofi_epset_fini(&cntr->set);
    free(cntr);
    return 0;
}

static struct fi_ops cntr_fi_ops = {
    .size = sizeof(struct fi_ops),
    .close = cntr_close,     /* -FI_EBUSY while endpoints are bound */
    .bind = fy_ofi_no_bind,  /* wait sets are not supported */
    .control = cntr_control, /* FI_GETWAIT, FI_GETWAITOBJ */
    .ops_open = fy_ofi_no_ops_open,
    .tostr = fy_ofi_no_tostr,
    .ops_set = fy_ofi_no_ops_set,
};

int fy_ofi_cntr_open(struct fid_domain *domain_fid, struct fi_cntr_attr *attr,
                     struct fid_cntr **cntr_p, void *context)
{
    if (domain_fid == NULL || cntr_p == NULL)
        return -FI_EINVAL;
    fy_ofi_domain_t *domain = FY_OFI_CONTAINER(domain_fid, fy_ofi_domain_t, domain_fid);
    struct fi_cntr_attr defaults = {.events = FI_CNTR_EVENTS_COMP, .wait_obj = FI_WAIT_UNSPEC};
    if (attr == NULL)
        attr = &defaults;
    if (attr->events != FI_CNTR_EVENTS_COMP)
        return -FI_ENOSYS;
    if (attr->flags != 0)
        return -FI_EBADFLAGS;
    enum fi_wait_obj wait_obj;
    int rc = fy_ofi_wait_obj(attr->wait_obj, attr->wait_set, &wait_obj);
    if (rc != 0)
        return rc;
    fy_ofi_cntr_t *cntr = calloc(1, sizeof(*cntr));
    if (cntr == NULL)
        return -FI_ENOMEM;
    rc = fy_ofi_epset_init(&cntr->set, wait_obj != FI_WAIT_NONE);
    if (rc != 0) {
        free(cntr);
        return rc;
    }
    cntr->domain = domain;
    cntr->wait_obj = wait_obj;
    cntr->cntr_fid.fid.fclass = FI_CLASS_CNTR;
    cntr->cntr_fid.fid.context = context;
    cntr->cntr_fid.fid.ops = &cntr_fi_ops;
    cntr->cntr_fid.ops = &cntr_ops;
    fy_ofi_domain_lock(domain);
    domain->refs++;
    fy_ofi_domain_unlock(domain);
    *cntr_p = &cntr->cntr_fid;
    return 0;
}
