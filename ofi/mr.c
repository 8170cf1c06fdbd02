/*
 * libferry-fi — memory registration. A registration that grants remote access is a ferry
 * registration (ferry_mem_register) whose key is packed once; peers fetch the packed key by the
 * registration's u64 key over a control message (rma.c) and address the region by offset (the
 * provider does not use FI_MR_VIRT_ADDR). Local-only registrations (FI_SEND, FI_RECV, FI_READ,
 * FI_WRITE) need nothing from ferry: they only hold a key.
 *
 * Keys: chosen by the provider (FI_MR_PROV_KEY: a counter) or by the application
 * (requested_key, unique per domain: -FI_ENOKEY otherwise), kept in an open-addressing table
 * of the domain.
 */
#include <stdlib.h>
#include <string.h>

#include "ofi.h"

#define MR_TABLE_MIN 64u

static size_t key_hash(uint64_t key, size_t mask)
{
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdull;
    key ^= key >> 33;
    return (size_t)key & mask;
}

fy_ofi_mr_t *fy_ofi_mr_find(fy_ofi_domain_t *domain, uint64_t key)
{
    if (domain->mr_table == NULL)
        return NULL;
    size_t mask = domain->mr_table_size - 1;
    for (size_t i = key_hash(key, mask);; i = (i + 1) & mask) {
        fy_ofi_mr_t *mr = domain->mr_table[i];
        if (mr == NULL)
            return NULL;
        if (mr->mr_fid.key == key)
            return mr;
    }
}

static void table_put(fy_ofi_mr_t **table, size_t size, fy_ofi_mr_t *mr)
{
    size_t mask = size - 1;
    size_t i = key_hash(mr->mr_fid.key, mask);
    while (table[i] != NULL)
        i = (i + 1) & mask;
    table[i] = mr;
}

static int table_insert(fy_ofi_domain_t *domain, fy_ofi_mr_t *mr)
{
    if ((domain->mr_count + 1) * 2 > domain->mr_table_size) {
        size_t size = domain->mr_table_size ? domain->mr_table_size * 2 : MR_TABLE_MIN;
        fy_ofi_mr_t **table = calloc(size, sizeof(*table));
        if (table == NULL)
            return -FI_ENOMEM;
        for (size_t i = 0; i < domain->mr_table_size; i++) {
            if (domain->mr_table[i] != NULL)
                table_put(table, size, domain->mr_table[i]);
        }
        free(domain->mr_table);
        domain->mr_table = table;
        domain->mr_table_size = size;
    }
    table_put(domain->mr_table, domain->mr_table_size, mr);
    domain->mr_count++;
    return 0;
}

/* Linear probing deletion: the entries after the hole that hash at or before it move back. */
static void table_remove(fy_ofi_domain_t *domain, fy_ofi_mr_t *mr)
{
    size_t mask = domain->mr_table_size - 1;
    size_t i = key_hash(mr->mr_fid.key, mask);
    while (domain->mr_table[i] != mr)
        i = (i + 1) & mask;
    domain->mr_table[i] = NULL;
    for (size_t j = (i + 1) & mask; domain->mr_table[j] != NULL; j = (j + 1) & mask) {
        fy_ofi_mr_t *moved = domain->mr_table[j];
        size_t home = key_hash(moved->mr_fid.key, mask);
        /* moved may fill the hole at i when its home is not in (i, j] cyclically */
        bool between = (i <= j) ? (home > i && home <= j) : (home > i || home <= j);
        if (!between) {
            domain->mr_table[i] = moved;
            domain->mr_table[j] = NULL;
            i = j;
        }
    }
    domain->mr_count--;
}

void fy_ofi_mr_table_free(fy_ofi_domain_t *domain)
{
    free(domain->mr_table);
    domain->mr_table = NULL;
    domain->mr_table_size = 0;
}

static int mr_close(struct fid *fid)
{
    fy_ofi_mr_t *mr = FY_OFI_CONTAINER(fid, fy_ofi_mr_t, mr_fid.fid);
    fy_ofi_domain_t *domain = mr->domain;
    fy_ofi_domain_lock(domain);
    table_remove(domain, mr);
    if (mr->packed != NULL)
        ferry_rkey_buffer_release(mr->packed);
    if (mr->mem != NULL)
        ferry_mem_deregister(mr->mem);
    domain->refs--;
    fy_ofi_domain_unlock(domain);
    free(mr);
    return 0;
}

/* bind: an endpoint (FI_MR_ENDPOINT) is accepted; counters of remote accesses are not
 * supported (FI_RMA_EVENT). */
static int mr_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
    (void)fid, (void)flags;
    if (bfid != NULL && bfid->fclass == FI_CLASS_EP)
        return 0;
    return -FI_ENOSYS;
}

/* control: FI_ENABLE (after binding to an endpoint) does nothing more. */
static int mr_control(struct fid *fid, int command, void *arg)
{
    (void)fid, (void)arg;
    return command == FI_ENABLE ? 0 : -FI_ENOSYS;
}

static struct fi_ops mr_fi_ops = {
    .size = sizeof(struct fi_ops),
    .close = mr_close,     /* deregisters; peers' later accesses fail -FI_EACCES */
    .bind = mr_bind,       /* FI_CLASS_EP only */
    .control = mr_control, /* FI_ENABLE */
    .ops_open = fy_ofi_no_ops_open,
    .tostr = fy_ofi_no_tostr,
    .ops_set = fy_ofi_no_ops_set,
};

static unsigned ferry_access(uint64_t access)
{
    unsigned a = 0;
    if (access & FI_REMOTE_READ)
        a |= FERRY_ACCESS_REMOTE_READ;
    if (access & FI_REMOTE_WRITE)
        a |= FERRY_ACCESS_REMOTE_WRITE | FERRY_ACCESS_REMOTE_ATOMIC;
    return a;
}

#define MR_ACCESS_KNOWN                                                                            \
    (FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE | FI_COLLECTIVE)

static int mr_register(fy_ofi_domain_t *domain, const struct iovec *iov, size_t count,
                       uint64_t access, uint64_t offset, uint64_t requested_key, uint64_t flags,
                       void *context, struct fid_mr **mr_p)
{
    if (mr_p == NULL || (count > 0 && iov == NULL) || count > FY_OFI_MR_IOV_LIMIT)
        return -FI_EINVAL;
    if (flags != 0)
        return -FI_EBADFLAGS;
    if (access & ~MR_ACCESS_KNOWN)
        return -FI_EINVAL;
    if (offset != 0)
        return -FI_EINVAL; /* remote addresses are offsets from the region's start */
    int rc = -FI_ENOMEM;
    fy_ofi_mr_t *mr = calloc(1, sizeof(*mr));
    if (mr == NULL)
        goto err;
    mr->domain = domain;
    mr->access = access;
    unsigned faccess = ferry_access(access);
    if (faccess != 0 && count > 0) {
        ferry_iov_t fiov[FY_OFI_MR_IOV_LIMIT];
        for (size_t i = 0; i < count; i++) {
            fiov[i].buffer = iov[i].iov_base;
            fiov[i].length = iov[i].iov_len;
        }
        ferry_status_t st = ferry_mem_register(domain->context, fiov, count, faccess, 0, &mr->mem);
        if (st != FERRY_OK) {
            FY_OFI_WARN(FI_LOG_MR, "ferry_mem_register of %zu pieces failed: %s\n", count,
                        ferry_status_string(st));
            rc = fy_ofi_errno(st);
            goto err_free;
        }
        st = ferry_rkey_pack(mr->mem, &mr->packed, &mr->packed_length);
        if (st != FERRY_OK) {
            FY_OFI_WARN(FI_LOG_MR, "ferry_rkey_pack failed: %s\n", ferry_status_string(st));
            rc = fy_ofi_errno(st);
            goto err_deregister;
        }
    }
    fy_ofi_domain_lock(domain);
    uint64_t key = domain->prov_key ? domain->mr_next_key++ : requested_key;
    if (fy_ofi_mr_find(domain, key) != NULL) {
        fy_ofi_domain_unlock(domain);
        rc = -FI_ENOKEY;
        goto err_release;
    }
    mr->mr_fid.key = key;
    rc = table_insert(domain, mr);
    if (rc != 0) {
        fy_ofi_domain_unlock(domain);
        goto err_release;
    }
    domain->refs++;
    fy_ofi_domain_unlock(domain);
    mr->mr_fid.fid.fclass = FI_CLASS_MR;
    mr->mr_fid.fid.context = context;
    mr->mr_fid.fid.ops = &mr_fi_ops;
    mr->mr_fid.mem_desc = mr;
    *mr_p = &mr->mr_fid;
    return 0;

err_release:
    if (mr->packed != NULL)
        ferry_rkey_buffer_release(mr->packed);
err_deregister:
    if (mr->mem != NULL)
        ferry_mem_deregister(mr->mem);
err_free:
    free(mr);
err:
    return rc;
}

static fy_ofi_domain_t *domain_of(struct fid *fid)
{
    if (fid == NULL || fid->fclass != FI_CLASS_DOMAIN)
        return NULL;
    return FY_OFI_CONTAINER(fid, fy_ofi_domain_t, domain_fid.fid);
}

int fy_ofi_mr_reg(struct fid *fid, const void *buf, size_t len, uint64_t access, uint64_t offset,
                  uint64_t requested_key, uint64_t flags, struct fid_mr **mr_p, void *context)
{
    fy_ofi_domain_t *domain = domain_of(fid);
    if (domain == NULL)
        return -FI_EINVAL;
    struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
    return mr_register(domain, &iov, 1, access, offset, requested_key, flags, context, mr_p);
}

int fy_ofi_mr_regv(struct fid *fid, const struct iovec *iov, size_t count, uint64_t access,
                   uint64_t offset, uint64_t requested_key, uint64_t flags, struct fid_mr **mr_p,
                   void *context)
{
    fy_ofi_domain_t *domain = domain_of(fid);
    if (domain == NULL)
        return -FI_EINVAL;
    return mr_register(domain, iov, count, access, offset, requested_key, flags, context, mr_p);
}

int fy_ofi_mr_regattr(struct fid *fid, const struct fi_mr_attr *attr, uint64_t flags,
                      struct fid_mr **mr_p)
{
    fy_ofi_domain_t *domain = domain_of(fid);
    if (domain == NULL || attr == NULL)
        return -FI_EINVAL;
    if (attr->iface != FI_HMEM_SYSTEM)
        return -FI_EOPNOTSUPP;
    if (attr->auth_key_size != 0)
        return -FI_EINVAL;
    return mr_register(domain, attr->mr_iov, attr->iov_count, attr->access, attr->offset,
                       attr->requested_key, flags, attr->context, mr_p);
}
