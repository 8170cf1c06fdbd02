/*
 * The provider's objects in one process: open and close (and -FI_EBUSY while in use), the
 * slots it does not support (-FI_ENOSYS), every CQ format (an entry of exactly the format's
 * size, with the right fields, through messages an endpoint sends itself), reads into a buffer
 * of one entry, CQ waits (signal, timeout, fd + trywait), EQs, counters, memory registrations
 * and their keys, atomic queries, names (fi_getname into a short buffer), and the address
 * vector's bad inputs: names that are not the provider's (magic, version, length, padding,
 * a truncated worker address), removed and unknown addresses.
 */
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <rdma/fi_collective.h>

#include "ot.h"

static void test_open_close(void **state)
{
    (void)state;
    ot_ep_t t;
    ot_ep_open(&t, FI_TAGGED | FI_MSG | FI_RMA | FI_ATOMIC, 0, FI_CQ_FORMAT_TAGGED);
    /* with FI_MSG, tag bit 63 tells FI_MSG from FI_TAGGED: not the application's */
    fi_addr_t self = ot_insert(&t, t.name);
    uint32_t v = 1;
    struct fi_context ctx;
    assert_int_equal(fi_tsend(t.ep, &v, 4, NULL, self, (uint64_t)1 << 63, &ctx), -FI_EINVAL);
    struct fid_cntr *cntr;
    struct fi_cntr_attr cattr = {.events = FI_CNTR_EVENTS_COMP, .wait_obj = FI_WAIT_UNSPEC};
    assert_int_equal(fi_cntr_open(t.domain, &cattr, &cntr, NULL), 0);
    struct fid_eq *eq;
    struct fi_eq_attr eattr = {.wait_obj = FI_WAIT_UNSPEC};
    assert_int_equal(fi_eq_open(t.fabric, &eattr, &eq, NULL), 0);
    /* objects in use cannot close */
    assert_int_equal(fi_close(&t.domain->fid), -FI_EBUSY);
    assert_int_equal(fi_close(&t.cq->fid), -FI_EBUSY);
    assert_int_equal(fi_close(&t.av->fid), -FI_EBUSY);
    assert_int_equal(fi_close(&t.fabric->fid), -FI_EBUSY);
    /* binding after fi_enable is refused */
    assert_int_equal(fi_ep_bind(t.ep, &cntr->fid, FI_SEND), -FI_EOPBADSTATE);
    assert_int_equal(fi_close(&cntr->fid), 0);
    assert_int_equal(fi_close(&eq->fid), 0);
    ot_ep_close(&t);
}

static void test_enosys(void **state)
{
    (void)state;
    ot_ep_t t;
    ot_ep_open(&t, FI_TAGGED, 0, FI_CQ_FORMAT_TAGGED);
    struct fid_ep *ep;
    struct fid_poll *poll_set;
    struct fid_stx *stx;
    struct fid_wait *wait_set;
    struct fid_pep *pep;
    struct fid_mc *mc;
    struct fi_poll_attr pattr = {0};
    struct fi_wait_attr wattr = {.wait_obj = FI_WAIT_FD};
    assert_int_equal(fi_scalable_ep(t.domain, t.info, &ep, NULL), -FI_ENOSYS);
    assert_int_equal(fi_poll_open(t.domain, &pattr, &poll_set), -FI_ENOSYS);
    assert_int_equal(fi_stx_context(t.domain, t.info->tx_attr, &stx, NULL), -FI_ENOSYS);
    assert_int_equal(fi_srx_context(t.domain, t.info->rx_attr, &ep, NULL), -FI_ENOSYS);
    assert_int_equal(fi_wait_open(t.fabric, &wattr, &wait_set), -FI_ENOSYS);
    assert_int_equal(fi_passive_ep(t.fabric, t.info, &pep, NULL), -FI_ENOSYS);
    assert_int_equal(fi_connect(t.ep, t.name, NULL, 0), -FI_ENOSYS);
    assert_int_equal(fi_accept(t.ep, NULL, 0), -FI_ENOSYS);
    assert_int_equal(fi_shutdown(t.ep, 0), -FI_ENOSYS);
    assert_int_equal(fi_setname(&t.ep->fid, t.name, t.namelen), -FI_ENOSYS);
    size_t len = sizeof(t.name);
    assert_int_equal(fi_getpeer(t.ep, t.name, &len), -FI_ENOSYS);
    assert_int_equal(fi_join(t.ep, t.name, 0, &mc, NULL), -FI_ENOSYS);
    assert_int_equal(fi_barrier(t.ep, 0, NULL), -FI_ENOSYS);
    assert_int_equal(fi_av_insertsvc(t.av, "localhost", "9228", NULL, 0, NULL), -FI_ENOSYS);
    assert_int_equal(fi_tx_context(t.ep, 0, NULL, &ep, NULL), -FI_ENOSYS);
    /* an endpoint opened with FI_TAGGED only: the other interfaces answer -FI_ENOSYS */
    assert_int_equal(fi_send(t.ep, t.name, 1, NULL, 0, NULL), -FI_ENOSYS);
    assert_int_equal(fi_write(t.ep, t.name, 1, NULL, 0, 0, 0, NULL), -FI_ENOSYS);
    size_t count;
    assert_int_equal(fi_atomicvalid(t.ep, FI_UINT64, FI_SUM, &count), -FI_ENOSYS);
    int opt;
    size_t optlen = sizeof(opt);
    assert_int_equal(fi_getopt(&t.ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &opt, &optlen),
                     -FI_ENOPROTOOPT);
    ot_ep_close(&t);
}

/* ---------------------------------------------------------------- CQ formats and reads */

static void test_cq_formats(void **state)
{
    (void)state;
    struct {
        enum fi_cq_format format;
        size_t size;
    } formats[] = {
        {FI_CQ_FORMAT_CONTEXT, sizeof(struct fi_cq_entry)},
        {FI_CQ_FORMAT_MSG, sizeof(struct fi_cq_msg_entry)},
        {FI_CQ_FORMAT_DATA, sizeof(struct fi_cq_data_entry)},
        {FI_CQ_FORMAT_TAGGED, sizeof(struct fi_cq_tagged_entry)},
    };
    for (size_t f = 0; f < sizeof(formats) / sizeof(formats[0]); f++) {
        ot_ep_t t;
        ot_ep_open(&t, FI_TAGGED, 0, formats[f].format);
        fi_addr_t self = ot_insert(&t, t.name);
        char msg[100], buf[128];
        ot_fill(msg, sizeof(msg), 9);
        struct fi_context rctx, sctx;
        assert_int_equal(fi_trecv(t.ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, 0x42, 0, &rctx), 0);
        assert_int_equal(fi_tsenddata(t.ep, msg, sizeof(msg), NULL, 0xd00d, self, 0x42, &sctx), 0);
        for (int got = 0; got < 2;) {
            uint8_t out[sizeof(struct fi_cq_tagged_entry) + 32];
            memset(out, 0x5a, sizeof(out));
            ssize_t rc = fi_cq_read(t.cq, out, 1);
            if (rc == -FI_EAGAIN)
                continue;
            assert_int_equal(rc, 1);
            for (size_t b = formats[f].size; b < sizeof(out); b++)
                assert_int_equal(out[b], 0x5a); /* exactly one entry of the format's size */
            struct fi_cq_tagged_entry e = {0};
            memcpy(&e, out, formats[f].size);
            assert_true(e.op_context == &rctx || e.op_context == &sctx);
            got++;
            if (e.op_context != &rctx || formats[f].format == FI_CQ_FORMAT_CONTEXT)
                continue;
            assert_int_equal(e.flags, FI_RECV | FI_TAGGED | FI_REMOTE_CQ_DATA);
            assert_int_equal(e.len, sizeof(msg));
            if (formats[f].format == FI_CQ_FORMAT_MSG)
                continue;
            assert_ptr_equal(e.buf, buf);
            assert_int_equal(e.data, 0xd00d);
            if (formats[f].format == FI_CQ_FORMAT_TAGGED)
                assert_int_equal(e.tag, 0x42);
        }
        ot_check(buf, sizeof(msg), 9, "to itself");
        ot_ep_close(&t);
    }
}

static void test_cq_wait(void **state)
{
    (void)state;
    ot_ep_t t;
    ot_ep_open(&t, FI_TAGGED, 0, FI_CQ_FORMAT_TAGGED);
    struct fi_cq_tagged_entry e;
    struct fi_cq_err_entry err = {0};
    assert_int_equal(fi_cq_read(t.cq, &e, 0), 0);
    assert_int_equal(fi_cq_readerr(t.cq, &err, 0), -FI_EAGAIN);
    /* a bounded wait times out; a signal ends the next one at once */
    int64_t t0 = ot_now_ms();
    assert_int_equal(fi_cq_sread(t.cq, &e, 1, NULL, 50), -FI_EAGAIN);
    assert_true(ot_now_ms() - t0 >= 45);
    assert_int_equal(fi_cq_signal(t.cq), 0);
    t0 = ot_now_ms();
    assert_int_equal(fi_cq_sread(t.cq, &e, 1, NULL, 5000), -FI_ECANCELED);
    assert_true(ot_now_ms() - t0 < 1000);
    /* fi_trywait: armed when idle; then a message to itself makes the fd readable */
    int fd = -1;
    assert_int_equal(fi_control(&t.cq->fid, FI_GETWAIT, &fd), 0);
    assert_true(fd >= 0);
    struct fid *fids[1] = {&t.cq->fid};
    int rc;
    while ((rc = fi_trywait(t.fabric, fids, 1)) == -FI_EAGAIN)
        (void)fi_cq_read(t.cq, &e, 0);
    assert_int_equal(rc, 0);
    fi_addr_t self = ot_insert(&t, t.name);
    uint32_t v = 7, w = 0;
    struct fi_context ctx;
    assert_int_equal(fi_tinject(t.ep, &v, sizeof(v), self, 1), 0);
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    assert_int_equal(fi_trecv(t.ep, &w, sizeof(w), NULL, FI_ADDR_UNSPEC, 1, 0, &ctx), 0);
    if (fi_trywait(t.fabric, fids, 1) == 0)
        assert_int_equal(poll(&pfd, 1, 5000), 1);
    assert_int_equal(fi_cq_sread(t.cq, &e, 1, NULL, 5000), 1);
    assert_ptr_equal(e.op_context, &ctx);
    assert_int_equal(w, 7);
    /* a CQ without a wait object cannot block */
    struct fid_cq *cq;
    struct fi_cq_attr attr = {.format = FI_CQ_FORMAT_CONTEXT, .wait_obj = FI_WAIT_NONE};
    assert_int_equal(fi_cq_open(t.domain, &attr, &cq, NULL), 0);
    assert_int_equal(fi_cq_sread(cq, &e, 1, NULL, 10), -FI_EINVAL);
    assert_int_equal(fi_control(&cq->fid, FI_GETWAIT, &fd), -FI_EINVAL);
    assert_int_equal(fi_close(&cq->fid), 0);
    attr.wait_obj = FI_WAIT_SET;
    assert_int_equal(fi_cq_open(t.domain, &attr, &cq, NULL), -FI_ENOSYS);
    ot_ep_close(&t);
}

/* ---------------------------------------------------------------- EQ */

static void test_eq(void **state)
{
    (void)state;
    ot_ep_t t;
    ot_ep_open(&t, FI_TAGGED, 0, FI_CQ_FORMAT_TAGGED);
    struct fid_eq *eq;
    struct fi_eq_attr attr = {.size = 2, .wait_obj = FI_WAIT_UNSPEC};
    assert_int_equal(fi_eq_open(t.fabric, &attr, &eq, NULL), 0);
    int fd = -1;
    assert_int_equal(fi_control(&eq->fid, FI_GETWAIT, &fd), 0);
    struct fid *fids[1] = {&eq->fid};
    assert_int_equal(fi_trywait(t.fabric, fids, 1), 0);
    struct fi_eq_entry in = {.fid = &t.ep->fid, .context = &t, .data = 99}, out;
    uint32_t event = 0;
    assert_int_equal(fi_eq_read(eq, &event, &out, sizeof(out), 0), -FI_EAGAIN);
    assert_int_equal(fi_eq_write(eq, FI_NOTIFY, &in, sizeof(in), 0), sizeof(in));
    assert_int_equal(fi_eq_write(eq, FI_NOTIFY + 1, &in, sizeof(in), 0), sizeof(in));
    assert_int_equal(fi_eq_write(eq, FI_NOTIFY, &in, sizeof(in), 0), -FI_EAGAIN); /* full */
    assert_int_equal(fi_trywait(t.fabric, fids, 1), -FI_EAGAIN);
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    assert_int_equal(poll(&pfd, 1, 0), 1);
    /* too small a buffer leaves the event queued */
    assert_int_equal(fi_eq_read(eq, &event, &out, sizeof(out) - 1, 0), -FI_ETOOSMALL);
    assert_int_equal(fi_eq_read(eq, &event, &out, sizeof(out), FI_PEEK), sizeof(out));
    assert_int_equal(fi_eq_read(eq, &event, &out, sizeof(out), 0), sizeof(out));
    assert_int_equal(event, FI_NOTIFY);
    assert_true(out.fid == in.fid && out.context == in.context && out.data == 99);
    assert_int_equal(fi_eq_sread(eq, &event, &out, sizeof(out), 1000, 0), sizeof(out));
    assert_int_equal(event, FI_NOTIFY + 1);
    assert_int_equal(poll(&pfd, 1, 0), 0);
    assert_int_equal(fi_eq_sread(eq, &event, &out, sizeof(out), 20, 0), -FI_EAGAIN);
    struct fi_eq_err_entry eerr = {0};
    assert_int_equal(fi_eq_readerr(eq, &eerr, 0), -FI_EAGAIN);
    assert_int_equal(fi_ep_bind(t.ep, &eq->fid, 0), -FI_EOPBADSTATE);
    assert_int_equal(fi_close(&eq->fid), 0);
    ot_ep_close(&t);
}

/* ---------------------------------------------------------------- counters */

static void test_cntr(void **state)
{
    (void)state;
    struct fi_info *hints = ot_hints(FI_TAGGED, 0);
    struct fi_info *info = ot_getinfo(hints);
    fi_freeinfo(hints);
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_av *av;
    struct fid_ep *ep;
    struct fid_cntr *sent, *recvd;
    assert_int_equal(fi_fabric(info->fabric_attr, &fabric, NULL), 0);
    assert_int_equal(fi_domain(fabric, info, &domain, NULL), 0);
    struct fi_av_attr aattr = {.type = FI_AV_MAP};
    assert_int_equal(fi_av_open(domain, &aattr, &av, NULL), 0);
    assert_int_equal(fi_cntr_open(domain, NULL, &sent, NULL), 0);
    assert_int_equal(fi_cntr_open(domain, NULL, &recvd, NULL), 0);
    assert_int_equal(fi_endpoint(domain, info, &ep, NULL), 0);
    assert_int_equal(fi_ep_bind(ep, &av->fid, 0), 0);
    assert_int_equal(fi_ep_bind(ep, &sent->fid, FI_SEND), 0);
    assert_int_equal(fi_ep_bind(ep, &recvd->fid, FI_RECV), 0);
    assert_int_equal(fi_ep_bind(ep, &recvd->fid, FI_REMOTE_READ), -FI_ENOSYS);
    assert_int_equal(fi_enable(ep), 0);
    uint8_t name[OT_NAME_MAX];
    size_t len = sizeof(name);
    assert_int_equal(fi_getname(&ep->fid, name, &len), 0);
    fi_addr_t self;
    assert_int_equal(fi_av_insert(av, name, 1, &self, 0, NULL), 1);
    uint64_t v[3] = {1, 2, 3}, w[3] = {0};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(fi_trecv(ep, &w[i], 8, NULL, FI_ADDR_UNSPEC, 5, 0, NULL), 0);
        assert_int_equal(fi_tinject(ep, &v[i], 8, self, 5), 0);
    }
    assert_int_equal(fi_cntr_wait(recvd, 3, 5000), 0);
    assert_int_equal(fi_cntr_wait(sent, 3, 5000), 0);
    /* a counter's fd: fi_trywait arms its endpoint's worker */
    int fd = -1;
    assert_int_equal(fi_control(&recvd->fid, FI_GETWAIT, &fd), 0);
    assert_true(fd >= 0);
    struct fid *fids[1] = {&recvd->fid};
    int rc;
    while ((rc = fi_trywait(fabric, fids, 1)) == -FI_EAGAIN)
        (void)fi_cntr_read(recvd);
    assert_int_equal(rc, 0);
    assert_int_equal(fi_cntr_read(recvd), 3);
    assert_int_equal(fi_cntr_readerr(recvd), 0);
    assert_true(w[0] == 1 && w[1] == 2 && w[2] == 3);
    assert_int_equal(fi_cntr_wait(recvd, 4, 20), -FI_ETIMEDOUT);
    assert_int_equal(fi_cntr_add(recvd, 10), 0);
    assert_int_equal(fi_cntr_read(recvd), 13);
    assert_int_equal(fi_cntr_set(recvd, 1), 0);
    assert_int_equal(fi_cntr_adderr(recvd, 2), 0);
    assert_int_equal(fi_cntr_readerr(recvd), 2);
    assert_int_equal(fi_cntr_seterr(recvd, 0), 0);
    assert_int_equal(fi_cntr_readerr(recvd), 0);
    assert_int_equal(fi_close(&ep->fid), 0);
    assert_int_equal(fi_close(&sent->fid), 0);
    assert_int_equal(fi_close(&recvd->fid), 0);
    assert_int_equal(fi_close(&av->fid), 0);
    assert_int_equal(fi_close(&domain->fid), 0);
    assert_int_equal(fi_close(&fabric->fid), 0);
    fi_freeinfo(info);
}

/* ---------------------------------------------------------------- registrations, atomics */

static void test_mr(void **state)
{
    (void)state;
    struct fi_info *hints = ot_hints(FI_RMA, 0);
    hints->domain_attr->mr_mode = 0; /* keys chosen by the application */
    struct fi_info *info = ot_getinfo(hints);
    fi_freeinfo(hints);
    assert_int_equal(info->domain_attr->mr_mode, 0);
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    assert_int_equal(fi_fabric(info->fabric_attr, &fabric, NULL), 0);
    assert_int_equal(fi_domain(fabric, info, &domain, NULL), 0);
    static char buf[3][4096];
    struct fid_mr *mr[3];
    assert_int_equal(fi_mr_reg(domain, buf[0], 4096, FI_REMOTE_WRITE, 0, 0xc0de, 0, &mr[0], NULL),
                     0);
    assert_int_equal(fi_mr_key(mr[0]), 0xc0de);
    assert_int_equal(fi_mr_reg(domain, buf[1], 4096, FI_REMOTE_READ, 0, 0xc0de, 0, &mr[1], NULL),
                     -FI_ENOKEY);
    struct iovec iov[2] = {{buf[1], 100}, {buf[2], 200}};
    assert_int_equal(fi_mr_regv(domain, iov, 2, FI_SEND | FI_RECV, 0, 0xc0df, 0, &mr[1], NULL), 0);
    assert_int_equal(fi_mr_reg(domain, buf[2], 4096, FI_REMOTE_READ, 4096, 1, 0, &mr[2], NULL),
                     -FI_EINVAL); /* no offset */
    struct fi_mr_attr attr = {.mr_iov = iov,
                              .iov_count = 1,
                              .access = FI_REMOTE_READ,
                              .requested_key = 7,
                              .iface = FI_HMEM_CUDA};
    assert_int_equal(fi_mr_regattr(domain, &attr, 0, &mr[2]), -FI_EOPNOTSUPP);
    attr.iface = FI_HMEM_SYSTEM;
    assert_int_equal(fi_mr_regattr(domain, &attr, 0, &mr[2]), 0);
    assert_int_equal(fi_mr_key(mr[2]), 7);
    /* a key is free again once its registration closed */
    assert_int_equal(fi_close(&mr[0]->fid), 0);
    assert_int_equal(fi_mr_reg(domain, buf[0], 4096, FI_REMOTE_WRITE, 0, 0xc0de, 0, &mr[0], NULL),
                     0);
    for (int i = 0; i < 3; i++)
        assert_int_equal(fi_close(&mr[i]->fid), 0);
    /* atomics: what maps onto ferry, and what does not */
    struct fi_atomic_attr aattr;
    assert_int_equal(fi_query_atomic(domain, FI_UINT64, FI_SUM, &aattr, 0), 0);
    assert_int_equal(aattr.size, 8);
    assert_int_equal(fi_query_atomic(domain, FI_INT32, FI_CSWAP, &aattr, FI_COMPARE_ATOMIC), 0);
    assert_int_equal(aattr.size, 4);
    assert_int_equal(fi_query_atomic(domain, FI_UINT32, FI_ATOMIC_READ, &aattr, FI_FETCH_ATOMIC),
                     0);
    assert_int_equal(fi_query_atomic(domain, FI_UINT64, FI_MIN, &aattr, 0), -FI_EOPNOTSUPP);
    assert_int_equal(fi_query_atomic(domain, FI_FLOAT, FI_SUM, &aattr, 0), -FI_EOPNOTSUPP);
    assert_int_equal(fi_query_atomic(domain, FI_UINT8, FI_SUM, &aattr, 0), -FI_EOPNOTSUPP);
    assert_int_equal(fi_query_atomic(domain, FI_UINT64, FI_BOR, &aattr, FI_FETCH_ATOMIC),
                     -FI_EOPNOTSUPP);
    assert_int_equal(fi_close(&domain->fid), 0);
    assert_int_equal(fi_close(&fabric->fid), 0);
    fi_freeinfo(info);
}

/* ---------------------------------------------------------------- names and the AV */

static void test_names(void **state)
{
    (void)state;
    ot_ep_t t;
    ot_ep_open(&t, FI_TAGGED | FI_DIRECTED_RECV, 0, FI_CQ_FORMAT_TAGGED);
    uint8_t small[32];
    size_t len = sizeof(small);
    assert_int_equal(fi_getname(&t.ep->fid, small, &len), -FI_ETOOSMALL);
    assert_int_equal(len, OT_NAME_MAX);
    assert_memory_equal(small, t.name, sizeof(small));
    /* bad names: each fails to insert, reported per entry */
    enum { NBAD = 5 };
    uint8_t bad[NBAD][OT_NAME_MAX];
    for (int i = 0; i < NBAD; i++)
        memcpy(bad[i], t.name, OT_NAME_MAX);
    /* (the compact address's layout: src/wireup/address.h) */
    bad[0][0] ^= 0xff;        /* magic */
    bad[1][4] = 9;            /* version */
    bad[2][5] |= 0x80;        /* an unknown flag */
    bad[3][6] = 1;            /* a reserved byte not zero */
    memset(bad[4] + 8, 0, 8); /* worker id 0 */
    fi_addr_t addrs[NBAD];
    int errs[NBAD];
    assert_int_equal(fi_av_insert(t.av, bad, NBAD, addrs, FI_SYNC_ERR, errs), 0);
    for (int i = 0; i < NBAD; i++) {
        assert_true(addrs[i] == FI_ADDR_NOTAVAIL);
        assert_int_equal(errs[i], FI_EADDRNOTAVAIL);
    }
    /* the good one, then a lookup into short and full buffers */
    fi_addr_t self = ot_insert(&t, t.name);
    uint8_t out[OT_NAME_MAX + 8];
    len = 16;
    memset(out, 0, sizeof(out));
    assert_int_equal(fi_av_lookup(t.av, self, out, &len), 0);
    assert_int_equal(len, OT_NAME_MAX);
    assert_memory_equal(out, t.name, 16);
    assert_int_equal(out[16], 0);
    len = sizeof(out);
    assert_int_equal(fi_av_lookup(t.av, self, out, &len), 0);
    assert_memory_equal(out, t.name, OT_NAME_MAX);
    char str[64];
    len = sizeof(str);
    assert_non_null(fi_av_straddr(t.av, t.name, str, &len));
    assert_memory_equal(str, "ferry:", 6);
    /* unknown and removed addresses */
    uint32_t v = 1;
    struct fi_context ctx;
    assert_int_equal(fi_tsend(t.ep, &v, 4, NULL, self + 100, 1, &ctx), -FI_EINVAL);
    assert_int_equal(fi_trecv(t.ep, &v, 4, NULL, self + 100, 1, 0, &ctx), -FI_EINVAL);
    /* a tagged-only endpoint has all 64 tag bits: a message to itself with bit 63 set, its
     * source and tag reported */
    uint64_t wide = ((uint64_t)1 << 63) | 0x123456789abcdefull;
    uint32_t got = 0;
    struct fi_context rctx;
    assert_int_equal(fi_trecv(t.ep, &got, 4, NULL, self, wide, 0, &rctx), 0);
    assert_int_equal(fi_tsend(t.ep, &v, 4, NULL, self, wide, &ctx), 0);
    struct fi_cq_tagged_entry e;
    struct fi_cq_err_entry err;
    fi_addr_t from = FI_ADDR_NOTAVAIL;
    for (int n = 0; n < 2; n++) {
        ssize_t rc;
        while ((rc = fi_cq_readfrom(t.cq, &e, 1, &from)) == -FI_EAGAIN)
            ;
        assert_int_equal(rc, 1);
        if (e.op_context == &rctx) {
            assert_true(e.tag == wide && from == self && got == 1);
        } else {
            assert_ptr_equal(e.op_context, &ctx);
        }
    }
    (void)err;
    fi_addr_t gone = self;
    assert_int_equal(fi_av_remove(t.av, &gone, 1, 0), 0);
    assert_int_equal(fi_av_remove(t.av, &gone, 1, 0), -FI_EINVAL);
    assert_int_equal(fi_tsend(t.ep, &v, 4, NULL, gone, 1, &ctx), -FI_EINVAL);
    len = sizeof(out);
    assert_int_equal(fi_av_lookup(t.av, gone, out, &len), -FI_EINVAL);
    /* inserted again: a new address that works */
    fi_addr_t again = ot_insert(&t, t.name);
    assert_true(again != gone);
    uint32_t w = 0;
    assert_int_equal(fi_trecv(t.ep, &w, 4, NULL, again, 3, 0, &ctx), 0);
    v = 0xabcd;
    assert_int_equal(fi_tinject(t.ep, &v, 4, again, 3), 0);
    ot_cq_expect(&t, &ctx, NULL);
    assert_int_equal(w, 0xabcd);
    ot_ep_close(&t);
}

int main(void)
{
    ot_require_provider();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_open_close), cmocka_unit_test(test_enosys),
        cmocka_unit_test(test_cq_formats), cmocka_unit_test(test_cq_wait),
        cmocka_unit_test(test_eq),         cmocka_unit_test(test_cntr),
        cmocka_unit_test(test_mr),         cmocka_unit_test(test_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
