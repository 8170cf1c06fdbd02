/*
 * libferry-fi — atomics over ferry's atomic operations (post: ADD, AND, OR, XOR; fetch: ADD,
 * SWAP, CSWAP; on naturally aligned 4- and 8-byte words). What maps:
 *
 *   fi_atomic        FI_SUM -> post ADD, FI_BOR -> post OR, FI_BAND -> post AND,
 *                    FI_BXOR -> post XOR, FI_ATOMIC_WRITE -> fetch SWAP (result dropped)
 *   fi_fetch_atomic  FI_SUM -> fetch ADD, FI_ATOMIC_READ -> fetch ADD of 0,
 *                    FI_ATOMIC_WRITE -> fetch SWAP
 *   fi_compare_atomic FI_CSWAP -> fetch CSWAP
 *
 * on FI_INT32, FI_UINT32, FI_INT64, FI_UINT64 (two's complement: signed and unsigned sums are
 * the same bits). Everything else is -FI_EOPNOTSUPP, from fi_query_atomic and the *valid calls
 * too. An operation of count elements is count ferry operations at consecutive offsets; the
 * operands are copied when the call is made, so the caller's buffers (but for results) are free
 * at once. The key scheme and the completion steps are rma.c's.
 */
#include <stdlib.h>
#include <string.h>

#include "ofi.h"

enum atomic_class {
    CLASS_BASE,
    CLASS_FETCH,
    CLASS_COMPARE,
};

#define ATOMIC_FLAGS                                                                               \
    (FI_COMPLETION | FI_INJECT | FI_INJECT_COMPLETE | FI_TRANSMIT_COMPLETE |                       \
     FI_DELIVERY_COMPLETE | FI_MORE | FI_FENCE)

static unsigned datatype_size(enum fi_datatype datatype)
{
    switch (datatype) {
    case FI_INT32:
    case FI_UINT32:
        return 4;
    case FI_INT64:
    case FI_UINT64:
        return 8;
    default:
        return 0;
    }
}

/* The ferry operation of (op, class): false when there is none. */
static bool atomic_map(enum fi_op op, enum atomic_class cls, ferry_atomic_op_t *fop, bool *fetch)
{
    switch (cls) {
    case CLASS_BASE:
        *fetch = false;
        switch (op) {
        case FI_SUM:
            *fop = FERRY_ATOMIC_ADD;
            return true;
        case FI_BOR:
            *fop = FERRY_ATOMIC_OR;
            return true;
        case FI_BAND:
            *fop = FERRY_ATOMIC_AND;
            return true;
        case FI_BXOR:
            *fop = FERRY_ATOMIC_XOR;
            return true;
        case FI_ATOMIC_WRITE:
            *fop = FERRY_ATOMIC_SWAP;
            *fetch = true;
            return true;
        default:
            return false;
        }
    case CLASS_FETCH:
        *fetch = true;
        switch (op) {
        case FI_SUM:
        case FI_ATOMIC_READ:
            *fop = FERRY_ATOMIC_ADD;
            return true;
        case FI_ATOMIC_WRITE:
            *fop = FERRY_ATOMIC_SWAP;
            return true;
        default:
            return false;
        }
    case CLASS_COMPARE:
        *fetch = true;
        *fop = FERRY_ATOMIC_CSWAP;
        return op == FI_CSWAP;
    }
    return false;
}

static int atomic_valid(enum fi_datatype datatype, enum fi_op op, enum atomic_class cls,
                        size_t *count)
{
    ferry_atomic_op_t fop;
    bool fetch;
    if (datatype_size(datatype) == 0 || !atomic_map(op, cls, &fop, &fetch))
        return -FI_EOPNOTSUPP;
    if (count != NULL)
        *count = FY_OFI_ATOMIC_COUNT_MAX;
    return 0;
}

int fy_ofi_query_atomic(struct fid_domain *domain, enum fi_datatype datatype, enum fi_op op,
                        struct fi_atomic_attr *attr, uint64_t flags)
{
    (void)domain;
    if (attr == NULL)
        return -FI_EINVAL;
    if (flags & ~(uint64_t)(FI_FETCH_ATOMIC | FI_COMPARE_ATOMIC | FI_TAGGED))
        return -FI_EBADFLAGS;
    if ((flags & FI_FETCH_ATOMIC) && (flags & FI_COMPARE_ATOMIC))
        return -FI_EINVAL;
    if (flags & FI_TAGGED)
        return -FI_EOPNOTSUPP;
    enum atomic_class cls = (flags & FI_COMPARE_ATOMIC) ? CLASS_COMPARE
                            : (flags & FI_FETCH_ATOMIC) ? CLASS_FETCH
                                                        : CLASS_BASE;
    int rc = atomic_valid(datatype, op, cls, &attr->count);
    if (rc != 0)
        return rc;
    attr->size = datatype_size(datatype);
    return 0;
}

static int writevalid(struct fid_ep *ep, enum fi_datatype datatype, enum fi_op op, size_t *count)
{
    (void)ep;
    return atomic_valid(datatype, op, CLASS_BASE, count);
}

static int readwritevalid(struct fid_ep *ep, enum fi_datatype datatype, enum fi_op op,
                          size_t *count)
{
    (void)ep;
    return atomic_valid(datatype, op, CLASS_FETCH, count);
}

static int compwritevalid(struct fid_ep *ep, enum fi_datatype datatype, enum fi_op op,
                          size_t *count)
{
    (void)ep;
    return atomic_valid(datatype, op, CLASS_COMPARE, count);
}

/* ---------------------------------------------------------------- elements */

static uint64_t element_get(const void *base, size_t i, unsigned size)
{
    if (size == 4) {
        uint32_t v;
        memcpy(&v, (const uint8_t *)base + i * 4, 4);
        return v;
    }
    uint64_t v;
    memcpy(&v, (const uint8_t *)base + i * 8, 8);
    return v;
}

static void element_put(void *base, size_t i, unsigned size, uint64_t v)
{
    if (size == 4) {
        uint32_t w = (uint32_t)v;
        memcpy((uint8_t *)base + i * 4, &w, 4);
    } else {
        memcpy((uint8_t *)base + i * 8, &v, 8);
    }
}

/* count elements gathered from pieces into one array (*one when count is 1). Returns the array
 * or NULL (out of memory). */
static uint64_t *elements_gather(const struct fi_ioc *iov, size_t pieces, size_t count,
                                 unsigned size, uint64_t *one, bool zero)
{
    uint64_t *v = count == 1 ? one : malloc(count * sizeof(*v));
    if (v == NULL)
        return NULL;
    size_t n = 0;
    for (size_t p = 0; p < pieces && n < count; p++) {
        for (size_t i = 0; i < iov[p].count && n < count; i++)
            v[n++] = zero ? 0 : element_get(iov[p].addr, i, size);
    }
    return v;
}

ferry_status_t fy_ofi_atomic_element(fy_ofi_req_t *req, size_t i, ferry_rkey_t *rkey)
{
    uint64_t offset = req->remote_addr + i * req->atomic_size;
    if (!req->fetch)
        return ferry_atomic_post(req->fep, req->fop, req->operands[i], req->atomic_size, offset,
                                 rkey, &req->comp);
    uint64_t compare = req->compares != NULL ? req->compares[i] : 0;
    return ferry_atomic_fetch(req->fep, req->fop, req->operands[i], compare, req->atomic_size,
                              offset, rkey, &req->results[i], &req->comp);
}

void fy_ofi_atomic_finish(fy_ofi_req_t *req)
{
    size_t n = 0;
    for (size_t p = 0; p < req->result_count && n < req->count; p++) {
        for (size_t i = 0; i < req->result_iov[p].count && n < req->count; i++)
            element_put(req->result_iov[p].addr, i, req->atomic_size, req->results[n++]);
    }
}

/* ---------------------------------------------------------------- calls */

static size_t ioc_count(const struct fi_ioc *iov, size_t pieces)
{
    size_t n = 0;
    for (size_t p = 0; p < pieces; p++)
        n += iov[p].count;
    return n;
}

typedef struct atomic_args {
    const struct fi_ioc *iov;
    size_t pieces;
    const struct fi_ioc *compare;
    size_t compare_pieces;
    struct fi_ioc *result;
    size_t result_pieces;
    fi_addr_t addr;
    uint64_t remote_addr;
    uint64_t key;
    enum fi_datatype datatype;
    enum fi_op op;
    void *context;
    uint64_t flags;
    enum atomic_class cls;
    bool inject_call; /* fi_inject_atomic: no entry */
} atomic_args_t;

static ssize_t atomic_common(struct fid_ep *fid, const atomic_args_t *a)
{
    fy_ofi_ep_t *ep = FY_OFI_CONTAINER(fid, fy_ofi_ep_t, ep_fid);
    ferry_atomic_op_t fop;
    bool fetch;
    unsigned size = datatype_size(a->datatype);
    if (size == 0 || !atomic_map(a->op, a->cls, &fop, &fetch))
        return -FI_EOPNOTSUPP;
    if (a->flags & ~ATOMIC_FLAGS)
        return -FI_EBADFLAGS;
    if (a->pieces > FY_OFI_IOV_LIMIT || a->compare_pieces > FY_OFI_IOV_LIMIT ||
        a->result_pieces > FY_OFI_IOV_LIMIT || (a->pieces > 0 && a->iov == NULL))
        return -FI_EINVAL;
    size_t count = ioc_count(a->iov, a->pieces);
    if (count == 0 || count > FY_OFI_ATOMIC_COUNT_MAX)
        return -FI_EINVAL;
    if (a->cls != CLASS_BASE &&
        (a->result == NULL || ioc_count(a->result, a->result_pieces) < count))
        return -FI_EINVAL;
    if (a->cls == CLASS_COMPARE &&
        (a->compare == NULL || ioc_count(a->compare, a->compare_pieces) < count))
        return -FI_EINVAL;
    ssize_t rc;
    fy_ofi_domain_lock(ep->domain);
    if (!ep->enabled) {
        rc = -FI_EOPBADSTATE;
        goto out;
    }
    fy_ofi_req_t *req = fy_ofi_req_alloc(ep, FY_OFI_REQ_ATOMIC, FY_OFI_BUDGET_TX);
    if (req == NULL) {
        rc = -FI_EAGAIN;
        goto out;
    }
    req->context = a->context;
    req->cq_flags = FI_ATOMIC | (a->cls == CLASS_BASE ? FI_WRITE : FI_READ);
    req->cntr = a->cls == CLASS_BASE ? ep->cntr_write : ep->cntr_read;
    req->addr = a->addr;
    req->remote_addr = a->remote_addr;
    req->key = a->key;
    req->fop = fop;
    req->fetch = fetch;
    req->atomic_size = size;
    req->count = count;
    req->len = count * size;
    if (!a->inject_call && (!ep->tx_selective || (a->flags & FI_COMPLETION)))
        req->flags |= FY_OFI_REQ_CQ;
    if (a->flags & FI_DELIVERY_COMPLETE)
        req->flags |= FY_OFI_REQ_FLUSH;
    req->operands =
        elements_gather(a->iov, a->pieces, count, size, &req->operand_one, a->op == FI_ATOMIC_READ);
    if (a->cls == CLASS_COMPARE)
        req->compares =
            elements_gather(a->compare, a->compare_pieces, count, size, &req->compare_one, false);
    if (fetch)
        req->results = count == 1 ? &req->result_one : calloc(count, sizeof(uint64_t));
    if (req->operands == NULL || (a->cls == CLASS_COMPARE && req->compares == NULL) ||
        (fetch && req->results == NULL)) {
        fy_ofi_req_free(req);
        rc = -FI_ENOMEM;
        goto out;
    }
    if (a->cls != CLASS_BASE) {
        memcpy(req->result_iov, a->result, a->result_pieces * sizeof(*a->result));
        req->result_count = a->result_pieces;
    }
    rc = fy_ofi_rma_submit(req);
out:
    fy_ofi_domain_unlock(ep->domain);
    return rc;
}

/* fi_msg_atomic: one remote range (rma_iov_limit is 1). */
static bool msg_ok(const struct fi_msg_atomic *msg)
{
    return msg != NULL && msg->rma_iov_count == 1 && msg->rma_iov != NULL;
}

/* Every call comes down to this one, the msg form of its class (fi_atomicmsg,
 * fi_fetch_atomicmsg, fi_compare_atomicmsg): compare and result are NULL/0 where the class has
 * none. */
static ssize_t atomic_msg(struct fid_ep *ep, const struct fi_msg_atomic *msg,
                          const struct fi_ioc *comparev, size_t compare_count,
                          struct fi_ioc *resultv, size_t result_count, uint64_t flags,
                          enum atomic_class cls)
{
    if (!msg_ok(msg))
        return -FI_EINVAL;
    atomic_args_t a = {.iov = msg->msg_iov,
                       .pieces = msg->iov_count,
                       .compare = comparev,
                       .compare_pieces = compare_count,
                       .result = resultv,
                       .result_pieces = result_count,
                       .addr = msg->addr,
                       .remote_addr = msg->rma_iov[0].addr,
                       .key = msg->rma_iov[0].key,
                       .datatype = msg->datatype,
                       .op = msg->op,
                       .context = msg->context,
                       .flags = flags,
                       .cls = cls};
    return atomic_common(ep, &a);
}

/* The vector forms (and, with one piece each, the plain ones): the remote range at addr with
 * key, the endpoint's tx_op_flags. */
static ssize_t atomic_vector(struct fid_ep *ep, const struct fi_ioc *iov, size_t count,
                             const struct fi_ioc *comparev, size_t compare_count,
                             struct fi_ioc *resultv, size_t result_count, fi_addr_t dest_addr,
                             uint64_t addr, uint64_t key, enum fi_datatype datatype, enum fi_op op,
                             void *context, enum atomic_class cls)
{
    fy_ofi_ep_t *e = FY_OFI_CONTAINER(ep, fy_ofi_ep_t, ep_fid);
    struct fi_rma_ioc rma = {.addr = addr, .key = key}; /* (its count is not read) */
    struct fi_msg_atomic msg = {.msg_iov = iov,
                                .iov_count = count,
                                .addr = dest_addr,
                                .rma_iov = &rma,
                                .rma_iov_count = 1,
                                .datatype = datatype,
                                .op = op,
                                .context = context};
    return atomic_msg(ep, &msg, comparev, compare_count, resultv, result_count, e->tx_op_flags,
                      cls);
}

static ssize_t atomic_write(struct fid_ep *ep, const void *buf, size_t count, void *desc,
                            fi_addr_t dest_addr, uint64_t addr, uint64_t key,
                            enum fi_datatype datatype, enum fi_op op, void *context)
{
    (void)desc;
    struct fi_ioc ioc = {.addr = (void *)buf, .count = count};
    return atomic_vector(ep, &ioc, 1, NULL, 0, NULL, 0, dest_addr, addr, key, datatype, op, context,
                         CLASS_BASE);
}

static ssize_t atomic_writev(struct fid_ep *ep, const struct fi_ioc *iov, void **desc, size_t count,
                             fi_addr_t dest_addr, uint64_t addr, uint64_t key,
                             enum fi_datatype datatype, enum fi_op op, void *context)
{
    (void)desc;
    return atomic_vector(ep, iov, count, NULL, 0, NULL, 0, dest_addr, addr, key, datatype, op,
                         context, CLASS_BASE);
}

static ssize_t atomic_writemsg(struct fid_ep *ep, const struct fi_msg_atomic *msg, uint64_t flags)
{
    return atomic_msg(ep, msg, NULL, 0, NULL, 0, flags, CLASS_BASE);
}

static ssize_t atomic_inject(struct fid_ep *ep, const void *buf, size_t count, fi_addr_t dest_addr,
                             uint64_t addr, uint64_t key, enum fi_datatype datatype, enum fi_op op)
{
    struct fi_ioc ioc = {.addr = (void *)buf, .count = count};
    atomic_args_t a = {.iov = &ioc,
                       .pieces = 1,
                       .addr = dest_addr,
                       .remote_addr = addr,
                       .key = key,
                       .datatype = datatype,
                       .op = op,
                       .cls = CLASS_BASE,
                       .inject_call = true};
    return atomic_common(ep, &a);
}

static ssize_t atomic_readwrite(struct fid_ep *ep, const void *buf, size_t count, void *desc,
                                void *result, void *result_desc, fi_addr_t dest_addr, uint64_t addr,
                                uint64_t key, enum fi_datatype datatype, enum fi_op op,
                                void *context)
{
    (void)desc, (void)result_desc;
    struct fi_ioc ioc = {.addr = (void *)buf, .count = count};
    struct fi_ioc res = {.addr = result, .count = count};
    return atomic_vector(ep, &ioc, 1, NULL, 0, &res, 1, dest_addr, addr, key, datatype, op, context,
                         CLASS_FETCH);
}

static ssize_t atomic_readwritev(struct fid_ep *ep, const struct fi_ioc *iov, void **desc,
                                 size_t count, struct fi_ioc *resultv, void **result_desc,
                                 size_t result_count, fi_addr_t dest_addr, uint64_t addr,
                                 uint64_t key, enum fi_datatype datatype, enum fi_op op,
                                 void *context)
{
    (void)desc, (void)result_desc;
    return atomic_vector(ep, iov, count, NULL, 0, resultv, result_count, dest_addr, addr, key,
                         datatype, op, context, CLASS_FETCH);
}

static ssize_t atomic_readwritemsg(struct fid_ep *ep, const struct fi_msg_atomic *msg,
                                   struct fi_ioc *resultv, void **result_desc, size_t result_count,
                                   uint64_t flags)
{
    (void)result_desc;
    return atomic_msg(ep, msg, NULL, 0, resultv, result_count, flags, CLASS_FETCH);
}

static ssize_t atomic_compwrite(struct fid_ep *ep, const void *buf, size_t count, void *desc,
                                const void *compare, void *compare_desc, void *result,
                                void *result_desc, fi_addr_t dest_addr, uint64_t addr, uint64_t key,
                                enum fi_datatype datatype, enum fi_op op, void *context)
{
    (void)desc, (void)compare_desc, (void)result_desc;
    struct fi_ioc ioc = {.addr = (void *)buf, .count = count};
    struct fi_ioc cmp = {.addr = (void *)compare, .count = count};
    struct fi_ioc res = {.addr = result, .count = count};
    return atomic_vector(ep, &ioc, 1, &cmp, 1, &res, 1, dest_addr, addr, key, datatype, op, context,
                         CLASS_COMPARE);
}

static ssize_t atomic_compwritev(struct fid_ep *ep, const struct fi_ioc *iov, void **desc,
                                 size_t count, const struct fi_ioc *comparev, void **compare_desc,
                                 size_t compare_count, struct fi_ioc *resultv, void **result_desc,
                                 size_t result_count, fi_addr_t dest_addr, uint64_t addr,
                                 uint64_t key, enum fi_datatype datatype, enum fi_op op,
                                 void *context)
{
    (void)desc, (void)compare_desc, (void)result_desc;
    return atomic_vector(ep, iov, count, comparev, compare_count, resultv, result_count, dest_addr,
                         addr, key, datatype, op, context, CLASS_COMPARE);
}

static ssize_t atomic_compwritemsg(struct fid_ep *ep, const struct fi_msg_atomic *msg,
                                   const struct fi_ioc *comparev, void **compare_desc,
                                   size_t compare_count, struct fi_ioc *resultv, void **result_desc,
                                   size_t result_count, uint64_t flags)
{
    (void)compare_desc, (void)result_desc;
    return atomic_msg(ep, msg, comparev, compare_count, resultv, result_count, flags,
                      CLASS_COMPARE);
}

struct fi_ops_atomic fy_ofi_ops_atomic = {
    .size = sizeof(struct fi_ops_atomic),
    .write = atomic_write,         /* -FI_EOPNOTSUPP for unmapped (op, type) */
    .writev = atomic_writev,       /* up to FY_OFI_ATOMIC_COUNT_MAX elements */
    .writemsg = atomic_writemsg,   /* one remote range */
    .inject = atomic_inject,       /* operands copied; no entry */
    .readwrite = atomic_readwrite, /* results written before the completion */
    .readwritev = atomic_readwritev,
    .readwritemsg = atomic_readwritemsg,
    .compwrite = atomic_compwrite, /* FI_CSWAP */
    .compwritev = atomic_compwritev,
    .compwritemsg = atomic_compwritemsg,
    .writevalid = writevalid, /* 0 or -FI_EOPNOTSUPP; count: the element limit */
    .readwritevalid = readwritevalid,
    .compwritevalid = compwritevalid,
};
