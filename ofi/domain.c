/*
 * libferry-fi — the domain: one ferry context (its transports, its registrations), the lock of
 * every object opened on it, and the table of memory-registration keys.
 */
#include <stdlib.h>
#include <string.h>

#include "ofi.h"

static int domain_close(struct fid *fid)
{
    fy_ofi_domain_t *domain = FY_OFI_CONTAINER(fid, fy_ofi_domain_t, domain_fid.fid);
    fy_ofi_domain_lock(domain);
    int refs = domain->refs;
    fy_ofi_domain_unlock(domain);
    if (refs > 0)
        return -FI_EBUSY;
    fy_ofi_mr_table_free(domain);
    ferry_context_destroy(domain->context);
    fi_freeinfo(domain->info);
    pthread_mutex_destroy(&domain->lock);
    pthread_mutex_lock(&domain->fabric->lock);
    domain->fabric->refs--;
    pthread_mutex_unlock(&domain->fabric->lock);
    free(domain);
    return 0;
}

/* bind: an EQ (asynchronous registration events, which this provider never produces). */
static int domain_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
    (void)fid, (void)flags;
    if (bfid == NULL || bfid->fclass != FI_CLASS_EQ)
        return -FI_EINVAL;
    return 0;
}

static struct fi_ops domain_fi_ops = {
    .size = sizeof(struct fi_ops),
    .close = domain_close,          /* 0, or -FI_EBUSY while objects of the domain are open */
    .bind = domain_bind,            /* an EQ: accepted, unused */
    .control = fy_ofi_no_control,   /* no commands */
    .ops_open = fy_ofi_no_ops_open, /* no extensions */
    .tostr = fy_ofi_no_tostr,
    .ops_set = fy_ofi_no_ops_set,
};

static int domain_scalable_ep(struct fid_domain *domain, struct fi_info *info,
                              struct fid_ep **sep_p, void *context)
{
    (void)domain, (void)info, (void)sep_p, (void)context;
    return -FI_ENOSYS;
}

static int domain_poll_open(struct fid_domain *domain, struct fi_poll_attr *attr,
                            struct fid_poll **pollset_p)
{
    (void)domain, (void)attr, (void)pollset_p;
    return -FI_ENOSYS;
}

static int domain_stx_ctx(struct fid_domain *domain, struct fi_tx_attr *attr,
                          struct fid_stx **stx_p, void *context)
{
    (void)domain, (void)attr, (void)stx_p, (void)context;
    return -FI_ENOSYS;
}

static int domain_srx_ctx(struct fid_domain *domain, struct fi_rx_attr *attr,
                          struct fid_ep **rx_ep_p, void *context)
{
    (void)domain, (void)attr, (void)rx_ep_p, (void)context;
    return -FI_ENOSYS;
}

static int domain_query_collective(struct fid_domain *domain, enum fi_collective_op coll,
                                   struct fi_collective_attr *attr, uint64_t flags)
{
    (void)domain, (void)coll, (void)attr, (void)flags;
    return -FI_ENOSYS;
}

static int domain_endpoint2(struct fid_domain *domain, struct fi_info *info, struct fid_ep **ep_p,
                            uint64_t flags, void *context)
{
    if (flags != 0)
        return -FI_EBADFLAGS;
    return fy_ofi_ep_open(domain, info, ep_p, context);
}

static struct fi_ops_domain domain_ops = {
    .size = sizeof(struct fi_ops_domain),
    .av_open = fy_ofi_av_open,                   /* FI_AV_MAP/TABLE/UNSPEC */
    .cq_open = fy_ofi_cq_open,                   /* every format; FI_WAIT_NONE/UNSPEC/FD */
    .endpoint = fy_ofi_ep_open,                  /* FI_EP_RDM: one ferry worker */
    .scalable_ep = domain_scalable_ep,           /* -FI_ENOSYS */
    .cntr_open = fy_ofi_cntr_open,               /* FI_WAIT_NONE/UNSPEC */
    .poll_open = domain_poll_open,               /* -FI_ENOSYS */
    .stx_ctx = domain_stx_ctx,                   /* -FI_ENOSYS */
    .srx_ctx = domain_srx_ctx,                   /* -FI_ENOSYS */
    .query_atomic = fy_ofi_query_atomic,         /* 0 or -FI_EOPNOTSUPP */
    .query_collective = domain_query_collective, /* -FI_ENOSYS */
    .endpoint2 = domain_endpoint2,               /* fi_endpoint with flags 0 */
};

static struct fi_ops_mr domain_mr_ops = {
    .size = sizeof(struct fi_ops_mr),
    .reg = fy_ofi_mr_reg,         /* registers in ferry when remote access is asked for */
    .regv = fy_ofi_mr_regv,       /* up to FY_OFI_MR_IOV_LIMIT pieces */
    .regattr = fy_ofi_mr_regattr, /* system memory only */
};

int fy_ofi_domain_open(struct fid_fabric *fabric_fid, struct fi_info *info,
                       struct fid_domain **dom_p, void *context)
{
    if (fabric_fid == NULL || info == NULL || dom_p == NULL)
        return -FI_EINVAL;
    if (info->domain_attr != NULL && info->domain_attr->name != NULL &&
        strcmp(info->domain_attr->name, FY_OFI_DOMAIN_NAME) != 0)
        return -FI_EINVAL;
    fy_ofi_fabric_t *fabric = FY_OFI_CONTAINER(fabric_fid, fy_ofi_fabric_t, fabric_fid);
    int rc = -FI_ENOMEM;
    fy_ofi_domain_t *domain = calloc(1, sizeof(*domain));
    if (domain == NULL)
        goto err;
    domain->info = fi_dupinfo(info);
    if (domain->info == NULL)
        goto err_free;
    /* ferry's own thresholds: FERRY_* variables in the environment apply (ofi/README.md,
     * "Eager limit") */
    ferry_context_params_t params = {.transports = NULL, .config = NULL};
    ferry_status_t st = ferry_context_create(&params, &domain->context);
    if (st != FERRY_OK) {
        FY_OFI_WARN(FI_LOG_DOMAIN, "ferry_context_create failed: %s\n", ferry_status_string(st));
        rc = st == FERRY_ERR_NO_DEVICE ? -FI_ENODEV : fy_ofi_errno(st);
        goto err_freeinfo;
    }
    domain->fabric = fabric;
    domain->api_version = fabric_fid->api_version;
    enum fi_threading threading =
        info->domain_attr != NULL ? info->domain_attr->threading : FI_THREAD_UNSPEC;
    domain->locking = threading != FI_THREAD_DOMAIN;
    pthread_mutex_init(&domain->lock, NULL);
    int mr_mode = info->domain_attr != NULL ? info->domain_attr->mr_mode : 0;
    domain->prov_key = (mr_mode & FI_MR_PROV_KEY) != 0 || mr_mode == FI_MR_BASIC;
    domain->mr_next_key = 1;
    domain->domain_fid.fid.fclass = FI_CLASS_DOMAIN;
    domain->domain_fid.fid.context = context;
    domain->domain_fid.fid.ops = &domain_fi_ops;
    domain->domain_fid.ops = &domain_ops;
    domain->domain_fid.mr = &domain_mr_ops;
    pthread_mutex_lock(&fabric->lock);
    fabric->refs++;
    pthread_mutex_unlock(&fabric->lock);
    *dom_p = &domain->domain_fid;
    return 0;

err_freeinfo:
    fi_freeinfo(domain->info);
err_free:
    free(domain);
err:
    return rc;
}
