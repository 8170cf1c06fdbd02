/*
 * libferry-fi — the fabric: a provider object that opens domains and event queues, and
 * fi_trywait over CQs and EQs.
 */
#include <stdlib.h>
#include <string.h>

#include "ofi.h"

/* close: FI_CLASS_FABRIC; -FI_EBUSY while a domain or EQ is open. Never blocks. */
static int fabric_close(struct fid *fid)
{
    fy_ofi_fabric_t *fabric = FY_OFI_CONTAINER(fid, fy_ofi_fabric_t, fabric_fid.fid);
    pthread_mutex_lock(&fabric->lock);
    int refs = fabric->refs;
    pthread_mutex_unlock(&fabric->lock);
    if (refs > 0)
        return -FI_EBUSY;
    pthread_mutex_destroy(&fabric->lock);
    free(fabric);
    return 0;
}

static struct fi_ops fabric_fi_ops = {
    .size = sizeof(struct fi_ops),
    .close = fabric_close,          /* 0 or -FI_EBUSY */
    .bind = fy_ofi_no_bind,         /* nothing binds to a fabric */
    .control = fy_ofi_no_control,   /* no commands */
    .ops_open = fy_ofi_no_ops_open, /* no extensions */
    .tostr = fy_ofi_no_tostr,
    .ops_set = fy_ofi_no_ops_set,
};

static int fabric_passive_ep(struct fid_fabric *fabric, struct fi_info *info,
                             struct fid_pep **pep_p, void *context)
{
    (void)fabric, (void)info, (void)pep_p, (void)context;
    return -FI_ENOSYS; /* RDM only: no passive endpoints */
}

static int fabric_wait_open(struct fid_fabric *fabric, struct fi_wait_attr *attr,
                            struct fid_wait **waitset_p)
{
    (void)fabric, (void)attr, (void)waitset_p;
    return -FI_ENOSYS; /* wait sets are not supported: CQs and EQs wait on their own fds */
}

/* fi_trywait: 0 when every object is armed (nothing pending: the application may sleep on the
 * fds it got from FI_GETWAIT), -FI_EAGAIN when one has work (read it first), -FI_EINVAL for an
 * object without an fd. Never blocks. */
static int fabric_trywait(struct fid_fabric *fabric, struct fid **fids, int count)
{
    (void)fabric;
    if (count < 0 || (count > 0 && fids == NULL))
        return -FI_EINVAL;
    for (int i = 0; i < count; i++) {
        int rc;
        switch (fids[i]->fclass) {
        case FI_CLASS_CQ:
            rc = fy_ofi_cq_trywait(FY_OFI_CONTAINER(fids[i], fy_ofi_cq_t, cq_fid.fid));
            break;
        case FI_CLASS_EQ:
            rc = fy_ofi_eq_trywait(fids[i]);
            break;
        case FI_CLASS_CNTR:
            rc = fy_ofi_cntr_trywait(FY_OFI_CONTAINER(fids[i], fy_ofi_cntr_t, cntr_fid.fid));
            break;
        default:
            rc = -FI_EINVAL;
            break;
        }
        if (rc != 0)
            return rc;
    }
    return 0;
}

static int fabric_domain2(struct fid_fabric *fabric, struct fi_info *info,
                          struct fid_domain **dom_p, uint64_t flags, void *context)
{
    if (flags != 0)
        return -FI_EBADFLAGS;
    return fy_ofi_domain_open(fabric, info, dom_p, context);
}

static struct fi_ops_fabric fabric_ops = {
    .size = sizeof(struct fi_ops_fabric),
    .domain = fy_ofi_domain_open,    /* a ferry context; may fail -FI_ENODEV, -FI_ENOMEM */
    .passive_ep = fabric_passive_ep, /* -FI_ENOSYS */
    .eq_open = fy_ofi_eq_open,       /* FI_WAIT_NONE/UNSPEC/FD */
    .wait_open = fabric_wait_open,   /* -FI_ENOSYS */
    .trywait = fabric_trywait,       /* 0, -FI_EAGAIN, -FI_EINVAL */
    .domain2 = fabric_domain2,       /* fi_domain with flags 0 */
};

int fy_ofi_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric_p, void *context)
{
    if (attr == NULL || fabric_p == NULL)
        return -FI_EINVAL;
    if (attr->name != NULL && strcmp(attr->name, FY_OFI_FABRIC_NAME) != 0)
        return -FI_ENODATA;
    fy_ofi_fabric_t *fabric = calloc(1, sizeof(*fabric));
    if (fabric == NULL)
        return -FI_ENOMEM;
    pthread_mutex_init(&fabric->lock, NULL);
    fabric->fabric_fid.fid.fclass = FI_CLASS_FABRIC;
    fabric->fabric_fid.fid.context = context;
    fabric->fabric_fid.fid.ops = &fabric_fi_ops;
    fabric->fabric_fid.ops = &fabric_ops;
    *fabric_p = &fabric->fabric_fid;
    return 0;
}
