/*
 * libferry-fi — the ops slots the provider does not support. libfabric's inline wrappers call
 * every slot without checking it, and libfabric.so exports no fi_no_* helpers to providers, so
 * each unsupported slot points at one of these: they never block, touch nothing and return
 * -FI_ENOSYS.
 */
#include "ofi.h"

int fy_ofi_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
    (void)fid, (void)bfid, (void)flags;
    return -FI_ENOSYS;
}

int fy_ofi_no_control(struct fid *fid, int command, void *arg)
{
    (void)fid, (void)command, (void)arg;
    return -FI_ENOSYS;
}

int fy_ofi_no_ops_open(struct fid *fid, const char *name, uint64_t flags, void **ops, void *context)
{
    (void)fid, (void)name, (void)flags, (void)ops, (void)context;
    return -FI_ENOSYS;
}

int fy_ofi_no_tostr(const struct fid *fid, char *buf, size_t len)
{
    (void)fid, (void)buf, (void)len;
    return -FI_ENOSYS;
}

int fy_ofi_no_ops_set(struct fid *fid, const char *name, uint64_t flags, void *ops, void *context)
{
    (void)fid, (void)name, (void)flags, (void)ops, (void)context;
    return -FI_ENOSYS;
}

/* ---------------------------------------------------------------- endpoint, connections */

int fy_ofi_no_tx_ctx(struct fid_ep *sep, int index, struct fi_tx_attr *attr, struct fid_ep **tx_ep,
                     void *context)
{
    (void)sep, (void)index, (void)attr, (void)tx_ep, (void)context;
    return -FI_ENOSYS;
}

int fy_ofi_no_rx_ctx(struct fid_ep *sep, int index, struct fi_rx_attr *attr, struct fid_ep **rx_ep,
                     void *context)
{
    (void)sep, (void)index, (void)attr, (void)rx_ep, (void)context;
    return -FI_ENOSYS;
}

int fy_ofi_no_setname(fid_t fid, void *addr, size_t addrlen)
{
    (void)fid, (void)addr, (void)addrlen;
    return -FI_ENOSYS;
}

int fy_ofi_no_getpeer(struct fid_ep *ep, void *addr, size_t *addrlen)
{
    (void)ep, (void)addr, (void)addrlen;
    return -FI_ENOSYS;
}

int fy_ofi_no_connect(struct fid_ep *ep, const void *addr, const void *param, size_t paramlen)
{
    (void)ep, (void)addr, (void)param, (void)paramlen;
    return -FI_ENOSYS;
}

int fy_ofi_no_listen(struct fid_pep *pep)
{
    (void)pep;
    return -FI_ENOSYS;
}

int fy_ofi_no_accept(struct fid_ep *ep, const void *param, size_t paramlen)
{
    (void)ep, (void)param, (void)paramlen;
    return -FI_ENOSYS;
}

int fy_ofi_no_reject(struct fid_pep *pep, fid_t handle, const void *param, size_t paramlen)
{
    (void)pep, (void)handle, (void)param, (void)paramlen;
    return -FI_ENOSYS;
}

int fy_ofi_no_shutdown(struct fid_ep *ep, uint64_t flags)
{
    (void)ep, (void)flags;
    return -FI_ENOSYS;
}

int fy_ofi_no_join(struct fid_ep *ep, const void *addr, uint64_t flags, struct fid_mc **mc,
                   void *context)
{
    (void)ep, (void)addr, (void)flags, (void)mc, (void)context;
    return -FI_ENOSYS;
}

/* ---------------------------------------------------------------- messages */

static ssize_t no_msg_recv(struct fid_ep *ep, void *buf, size_t len, void *desc, fi_addr_t src_addr,
                           void *context)
{
    (void)ep, (void)buf, (void)len, (void)desc, (void)src_addr, (void)context;
    return -FI_ENOSYS;
}

static ssize_t no_msg_recvv(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count,
                            fi_addr_t src_addr, void *context)
{
    (void)ep, (void)iov, (void)desc, (void)count, (void)src_addr, (void)context;
    return -FI_ENOSYS;
}

static ssize_t no_msg_recvmsg(struct fid_ep *ep, const struct fi_msg *msg, uint64_t flags)
{
    (void)ep, (void)msg, (void)flags;
    return -FI_ENOSYS;
}

static ssize_t no_msg_send(struct fid_ep *ep, const void *buf, size_t len, void *desc,
                           fi_addr_t dest_addr, void *context)
{
    (void)ep, (void)buf, (void)len, (void)desc, (void)dest_addr, (void)context;
    return -FI_ENOSYS;
}

static ssize_t no_msg_sendv(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count,
                            fi_addr_t dest_addr, void *context)
{
    (void)ep, (void)iov, (void)desc, (void)count, (void)dest_addr, (void)context;
    return -FI_ENOSYS;
}

static ssize_t no_msg_sendmsg(struct fid_ep *ep, const struct fi_msg *msg, uint64_t flags)
{
    (void)ep, (void)msg, (void)flags;
    return -FI_ENOSYS;
}

static ssize_t no_msg_inject(struct fid_ep *ep, const void *buf, size_t len, fi_addr_t dest_addr)
{
    (void)ep, (void)buf, (void)len, (void)dest_addr;
    return -FI_ENOSYS;
}

static ssize_t no_msg_senddata(struct fid_ep *ep, const void *buf, size_t len, void *desc,
                               uint64_t data, fi_addr_t dest_addr, void *context)
{
    (void)ep, (void)buf, (void)len, (void)desc, (void)data, (void)dest_addr, (void)context;
    return -FI_ENOSYS;
}

static ssize_t no_msg_injectdata(struct fid_ep *ep, const void *buf, size_t len, uint64_t data,
                                 fi_addr_t dest_addr)
{
    (void)ep, (void)buf, (void)len, (void)data, (void)dest_addr;
    return -FI_ENOSYS;
}

struct fi_ops_msg fy_ofi_ops_msg_none = {
    .size = sizeof(struct fi_ops_msg),
    .recv = no_msg_recv,
    .recvv = no_msg_recvv,
    .recvmsg = no_msg_recvmsg,
    .send = no_msg_send,
    .sendv = no_msg_sendv,
    .sendmsg = no_msg_sendmsg,
    .inject = no_msg_inject,
    .senddata = no_msg_senddata,
    .injectdata = no_msg_injectdata,
};

/* ---------------------------------------------------------------- tagged messages */

static ssize_t no_tagged_recv(struct fid_ep *ep, void *buf, size_t len, void *desc,
                              fi_addr_t src_addr, uint64_t tag, uint64_t ignore, void *context)
{
    (void)ep, (void)buf, (void)len, (void)desc, (void)src_addr, (void)tag, (void)ignore;
    (void)context;
    return -FI_ENOSYS;
}

static ssize_t no_tagged_recvv(struct fid_ep *ep, const struct iovec *iov, void **desc,
                               size_t count, fi_addr_t src_addr, uint64_t tag, uint64_t ignore,
                               void *context)
{
    (void)ep, (void)iov, (void)desc, (void)count, (void)src_addr, (void)tag, (void)ignore;
    (void)context;
    return -FI_ENOSYS;
}

static ssize_t no_tagged_recvmsg(struct fid_ep *ep, const struct fi_msg_tagged *msg, uint64_t flags)
{
    (void)ep, (void)msg, (void)flags;
    return -FI_ENOSYS;
}

static ssize_t no_tagged_send(struct fid_ep *ep, const void *buf, size_t len, void *desc,
                              fi_addr_t dest_addr, uint64_t tag, void *context)
{
    (void)ep, (void)buf, (void)len, (void)desc, (void)dest_addr, (void)tag, (void)context;
    return -FI_ENOSYS;
}

static ssize_t no_tagged_sendv(struct fid_ep *ep, const struct iovec *iov, void **desc,
                               size_t count, fi_addr_t dest_addr, uint64_t tag, void *context)
{
    (void)ep, (void)iov, (void)desc, (void)count, (void)dest_addr, (void)tag, (void)context;
    return -FI_ENOSYS;
}

static ssize_t no_tagged_sendmsg(struct fid_ep *ep, const struct fi_msg_tagged *msg, uint64_t flags)
{
    (void)ep, (void)msg, (void)flags;
    return -FI_ENOSYS;
}

static ssize_t no_tagged_inject(struct fid_ep *ep, const void *buf, size_t len, fi_addr_t dest_addr,
                                uint64_t tag)
{
    (void)ep, (void)buf, (void)len, (void)dest_addr, (void)tag;
    return -FI_ENOSYS;
}

static ssize_t no_tagged_senddata(struct fid_ep *ep, const void *buf, size_t len, void *desc,
                                  uint64_t data, fi_addr_t dest_addr, uint64_t tag, void *context)
{
    (void)ep, (void)buf, (void)len, (void)desc, (void)data, (void)dest_addr, (void)tag;
    (void)context;
    return -FI_ENOSYS;
}

static ssize_t no_tagged_injectdata(struct fid_ep *ep, const void *buf, size_t len, uint64_t data,
                                    fi_addr_t dest_addr, uint64_t tag)
{
    (void)ep, (void)buf, (void)len, (void)data, (void)dest_addr, (void)tag;
    return -FI_ENOSYS;
}

struct fi_ops_tagged fy_ofi_ops_tagged_none = {
    .size = sizeof(struct fi_ops_tagged),
    .recv = no_tagged_recv,
    .recvv = no_tagged_recvv,
    .recvmsg = no_tagged_recvmsg,
    .send = no_tagged_send,
    .sendv = no_tagged_sendv,
    .sendmsg = no_tagged_sendmsg,
    .inject = no_tagged_inject,
    .senddata = no_tagged_senddata,
    .injectdata = no_tagged_injectdata,
};

/* ---------------------------------------------------------------- RMA */

static ssize_t no_rma_read(struct fid_ep *ep, void *buf, size_t len, void *desc, fi_addr_t src_addr,
                           uint64_t addr, uint64_t key, void *context)
{
    (void)ep, (void)buf, (void)len, (void)desc, (void)src_addr, (void)addr, (void)key;
    (void)context;
    return -FI_ENOSYS;
}

static ssize_t no_rma_readv(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count,
                            fi_addr_t src_addr, uint64_t addr, uint64_t key, void *context)
{
    (void)ep, (void)iov, (void)desc, (void)count, (void)src_addr, (void)addr, (void)key;
    (void)context;
    return -FI_ENOSYS;
}

static ssize_t no_rma_msg(struct fid_ep *ep, const struct fi_msg_rma *msg, uint64_t flags)
{
    (void)ep, (void)msg, (void)flags;
    return -FI_ENOSYS;
}

static ssize_t no_rma_write(struct fid_ep *ep, const void *buf, size_t len, void *desc,
                            fi_addr_t dest_addr, uint64_t addr, uint64_t key, void *context)
{
    (void)ep, (void)buf, (void)len, (void)desc, (void)dest_addr, (void)addr, (void)key;
    (void)context;
    return -FI_ENOSYS;
}

static ssize_t no_rma_writev(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count,
                             fi_addr_t dest_addr, uint64_t addr, uint64_t key, void *context)
{
    (void)ep, (void)iov, (void)desc, (void)count, (void)dest_addr, (void)addr, (void)key;
    (void)context;
    return -FI_ENOSYS;
}

static ssize_t no_rma_inject(struct fid_ep *ep, const void *buf, size_t len, fi_addr_t dest_addr,
                             uint64_t addr, uint64_t key)
{
    (void)ep, (void)buf, (void)len, (void)dest_addr, (void)addr, (void)key;
    return -FI_ENOSYS;
}

static ssize_t no_rma_writedata(struct fid_ep *ep, const void *buf, size_t len, void *desc,
                                uint64_t data, fi_addr_t dest_addr, uint64_t addr, uint64_t key,
                                void *context)
{
    (void)ep, (void)buf, (void)len, (void)desc, (void)data, (void)dest_addr, (void)addr;
    (void)key, (void)context;
    return -FI_ENOSYS;
}

static ssize_t no_rma_injectdata(struct fid_ep *ep, const void *buf, size_t len, uint64_t data,
                                 fi_addr_t dest_addr, uint64_t addr, uint64_t key)
{
    (void)ep, (void)buf, (void)len, (void)data, (void)dest_addr, (void)addr, (void)key;
    return -FI_ENOSYS;
}

struct fi_ops_rma fy_ofi_ops_rma_none = {
    .size = sizeof(struct fi_ops_rma),
    .read = no_rma_read,
    .readv = no_rma_readv,
    .readmsg = no_rma_msg,
    .write = no_rma_write,
    .writev = no_rma_writev,
    .writemsg = no_rma_msg,
    .inject = no_rma_inject,
    .writedata = no_rma_writedata,
    .injectdata = no_rma_injectdata,
};

/* ---------------------------------------------------------------- atomics */

static ssize_t no_atomic_write(struct fid_ep *ep, const void *buf, size_t count, void *desc,
                               fi_addr_t dest_addr, uint64_t addr, uint64_t key,
                               enum fi_datatype datatype, enum fi_op op, void *context)
{
    (void)ep, (void)buf, (void)count, (void)desc, (void)dest_addr, (void)addr, (void)key;
    (void)datatype, (void)op, (void)context;
    return -FI_ENOSYS;
}

static ssize_t no_atomic_writev(struct fid_ep *ep, const struct fi_ioc *iov, void **desc,
                                size_t count, fi_addr_t dest_addr, uint64_t addr, uint64_t key,
                                enum fi_datatype datatype, enum fi_op op, void *context)
{
    (void)ep, (void)iov, (void)desc, (void)count, (void)dest_addr, (void)addr, (void)key;
    (void)datatype, (void)op, (void)context;
    return -FI_ENOSYS;
}

static ssize_t no_atomic_writemsg(struct fid_ep *ep, const struct fi_msg_atomic *msg,
                                  uint64_t flags)
{
    (void)ep, (void)msg, (void)flags;
    return -FI_ENOSYS;
}

static ssize_t no_atomic_inject(struct fid_ep *ep, const void *buf, size_t count,
                                fi_addr_t dest_addr, uint64_t addr, uint64_t key,
                                enum fi_datatype datatype, enum fi_op op)
{
    (void)ep, (void)buf, (void)count, (void)dest_addr, (void)addr, (void)key, (void)datatype;
    (void)op;
    return -FI_ENOSYS;
}

static ssize_t no_atomic_readwrite(struct fid_ep *ep, const void *buf, size_t count, void *desc,
                                   void *result, void *result_desc, fi_addr_t dest_addr,
                                   uint64_t addr, uint64_t key, enum fi_datatype datatype,
                                   enum fi_op op, void *context)
{
    (void)ep, (void)buf, (void)count, (void)desc, (void)result, (void)result_desc;
    (void)dest_addr, (void)addr, (void)key, (void)datatype, (void)op, (void)context;
    return -FI_ENOSYS;
}

static ssize_t no_atomic_readwritev(struct fid_ep *ep, const struct fi_ioc *iov, void **desc,
                                    size_t count, struct fi_ioc *resultv, void **result_desc,
                                    size_t result_count, fi_addr_t dest_addr, uint64_t addr,
                                    uint64_t key, enum fi_datatype datatype, enum fi_op op,
                                    void *context)
{
    (void)ep, (void)iov, (void)desc, (void)count, (void)resultv, (void)result_desc;
    (void)result_count, (void)dest_addr, (void)addr, (void)key, (void)datatype, (void)op;
    (void)context;
    return -FI_ENOSYS;
}

static ssize_t no_atomic_readwritemsg(struct fid_ep *ep, const struct fi_msg_atomic *msg,
                                      struct fi_ioc *resultv, void **result_desc,
                                      size_t result_count, uint64_t flags)
{
    (void)ep, (void)msg, (void)resultv, (void)result_desc, (void)result_count, (void)flags;
    return -FI_ENOSYS;
}

static ssize_t no_atomic_compwrite(struct fid_ep *ep, const void *buf, size_t count, void *desc,
                                   const void *compare, void *compare_desc, void *result,
                                   void *result_desc, fi_addr_t dest_addr, uint64_t addr,
                                   uint64_t key, enum fi_datatype datatype, enum fi_op op,
                                   void *context)
{
    (void)ep, (void)buf, (void)count, (void)desc, (void)compare, (void)compare_desc;
    (void)result, (void)result_desc, (void)dest_addr, (void)addr, (void)key, (void)datatype;
    (void)op, (void)context;
    return -FI_ENOSYS;
}

static ssize_t no_atomic_compwritev(struct fid_ep *ep, const struct fi_ioc *iov, void **desc,
                                    size_t count, const struct fi_ioc *comparev,
                                    void **compare_desc, size_t compare_count,
                                    struct fi_ioc *resultv, void **result_desc, size_t result_count,
                                    fi_addr_t dest_addr, uint64_t addr, uint64_t key,
                                    enum fi_datatype datatype, enum fi_op op, void *context)
{
    (void)ep, (void)iov, (void)desc, (void)count, (void)comparev, (void)compare_desc;
    (void)compare_count, (void)resultv, (void)result_desc, (void)result_count;
    (void)dest_addr, (void)addr, (void)key, (void)datatype, (void)op, (void)context;
    return -FI_ENOSYS;
}

static ssize_t no_atomic_compwritemsg(struct fid_ep *ep, const struct fi_msg_atomic *msg,
                                      const struct fi_ioc *comparev, void **compare_desc,
                                      size_t compare_count, struct fi_ioc *resultv,
                                      void **result_desc, size_t result_count, uint64_t flags)
{
    (void)ep, (void)msg, (void)comparev, (void)compare_desc, (void)compare_count;
    (void)resultv, (void)result_desc, (void)result_count, (void)flags;
    return -FI_ENOSYS;
}

static int no_atomic_valid(struct fid_ep *ep, enum fi_datatype datatype, enum fi_op op,
                           size_t *count)
{
    (void)ep, (void)datatype, (void)op, (void)count;
    return -FI_ENOSYS;
}

struct fi_ops_atomic fy_ofi_ops_atomic_none = {
    .size = sizeof(struct fi_ops_atomic),
    .write = no_atomic_write,
    .writev = no_atomic_writev,
    .writemsg = no_atomic_writemsg,
    .inject = no_atomic_inject,
    .readwrite = no_atomic_readwrite,
    .readwritev = no_atomic_readwritev,
    .readwritemsg = no_atomic_readwritemsg,
    .compwrite = no_atomic_compwrite,
    .compwritev = no_atomic_compwritev,
    .compwritemsg = no_atomic_compwritemsg,
    .writevalid = no_atomic_valid,
    .readwritevalid = no_atomic_valid,
    .compwritevalid = no_atomic_valid,
};

/* ---------------------------------------------------------------- collectives */

static ssize_t no_coll_barrier(struct fid_ep *ep, fi_addr_t coll_addr, void *context)
{
    (void)ep, (void)coll_addr, (void)context;
    return -FI_ENOSYS;
}

static ssize_t no_coll_broadcast(struct fid_ep *ep, void *buf, size_t count, void *desc,
                                 fi_addr_t coll_addr, fi_addr_t root_addr,
                                 enum fi_datatype datatype, uint64_t flags, void *context)
{
    (void)ep, (void)buf, (void)count, (void)desc, (void)coll_addr, (void)root_addr;
    (void)datatype, (void)flags, (void)context;
    return -FI_ENOSYS;
}

/* alltoall and allgather share a signature */
static ssize_t no_coll_gatherlike(struct fid_ep *ep, const void *buf, size_t count, void *desc,
                                  void *result, void *result_desc, fi_addr_t coll_addr,
                                  enum fi_datatype datatype, uint64_t flags, void *context)
{
    (void)ep, (void)buf, (void)count, (void)desc, (void)result, (void)result_desc;
    (void)coll_addr, (void)datatype, (void)flags, (void)context;
    return -FI_ENOSYS;
}

/* allreduce and reduce_scatter share a signature */
static ssize_t no_coll_reducelike(struct fid_ep *ep, const void *buf, size_t count, void *desc,
                                  void *result, void *result_desc, fi_addr_t coll_addr,
                                  enum fi_datatype datatype, enum fi_op op, uint64_t flags,
                                  void *context)
{
    (void)ep, (void)buf, (void)count, (void)desc, (void)result, (void)result_desc;
    (void)coll_addr, (void)datatype, (void)op, (void)flags, (void)context;
    return -FI_ENOSYS;
}

static ssize_t no_coll_reduce(struct fid_ep *ep, const void *buf, size_t count, void *desc,
                              void *result, void *result_desc, fi_addr_t coll_addr,
                              fi_addr_t root_addr, enum fi_datatype datatype, enum fi_op op,
                              uint64_t flags, void *context)
{
    (void)ep, (void)buf, (void)count, (void)desc, (void)result, (void)result_desc;
    (void)coll_addr, (void)root_addr, (void)datatype, (void)op, (void)flags, (void)context;
    return -FI_ENOSYS;
}

/* scatter and gather share a signature */
static ssize_t no_coll_rooted(struct fid_ep *ep, const void *buf, size_t count, void *desc,
                              void *result, void *result_desc, fi_addr_t coll_addr,
                              fi_addr_t root_addr, enum fi_datatype datatype, uint64_t flags,
                              void *context)
{
    (void)ep, (void)buf, (void)count, (void)desc, (void)result, (void)result_desc;
    (void)coll_addr, (void)root_addr, (void)datatype, (void)flags, (void)context;
    return -FI_ENOSYS;
}

static ssize_t no_coll_msg(struct fid_ep *ep, const struct fi_msg_collective *msg,
                           struct fi_ioc *resultv, void **result_desc, size_t result_count,
                           uint64_t flags)
{
    (void)ep, (void)msg, (void)resultv, (void)result_desc, (void)result_count, (void)flags;
    return -FI_ENOSYS;
}

static ssize_t no_coll_barrier2(struct fid_ep *ep, fi_addr_t coll_addr, uint64_t flags,
                                void *context)
{
    (void)ep, (void)coll_addr, (void)flags, (void)context;
    return -FI_ENOSYS;
}

struct fi_ops_collective fy_ofi_ops_collective_none = {
    .size = sizeof(struct fi_ops_collective),
    .barrier = no_coll_barrier,
    .broadcast = no_coll_broadcast,
    .alltoall = no_coll_gatherlike,
    .allreduce = no_coll_reducelike,
    .allgather = no_coll_gatherlike,
    .reduce_scatter = no_coll_reducelike,
    .reduce = no_coll_reduce,
    .scatter = no_coll_rooted,
    .gather = no_coll_rooted,
    .msg = no_coll_msg,
    .barrier2 = no_coll_barrier2,
};
