/*
 * fi_getinfo against the ferry provider: the info it returns (attributes, exactly one info, the
 * names libfabric and Open MPI compare), the hints it meets (Open MPI's MTL, modes, mr_mode
 * variants) and every kind of hint it cannot meet, which must give -FI_ENODATA.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ot.h"

static int getinfo(uint32_t version, const char *node, uint64_t flags, struct fi_info *hints,
                   struct fi_info **info)
{
    *info = NULL;
    return fi_getinfo(version, node, node ? "9228" : NULL, flags, hints, info);
}

static void test_null_hints(void **state)
{
    (void)state;
    struct fi_info *info;
    assert_int_equal(getinfo(FI_VERSION(1, 17), NULL, 0, NULL, &info), 0);
    int ferry = 0;
    for (struct fi_info *i = info; i != NULL; i = i->next) {
        if (strcmp(i->fabric_attr->prov_name, "ferry") != 0)
            continue;
        ferry++;
        assert_string_equal(i->fabric_attr->name, "ferry");
        assert_string_equal(i->domain_attr->name, "ferry");
        assert_int_equal(i->ep_attr->type, FI_EP_RDM);
        assert_int_equal(i->mode, 0);
        uint64_t caps = FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_DIRECTED_RECV | FI_LOCAL_COMM |
                        FI_REMOTE_COMM | FI_SOURCE;
        assert_true((i->caps & caps) == caps);
        assert_true((i->tx_attr->caps & ~i->caps) == 0 && (i->rx_attr->caps & ~i->caps) == 0);
        assert_int_equal(i->src_addrlen, OT_NAME_MAX);
        assert_non_null(i->src_addr);
        assert_int_equal(i->tx_attr->inject_size, 128);
        assert_true(i->domain_attr->cq_data_size >= 4);
        assert_int_equal(i->domain_attr->mr_key_size, 8);
        /* FI_MSG and FI_TAGGED: bit 63 tells them apart */
        assert_int_equal(i->ep_attr->mem_tag_format, 0x7fffffffffffffffull);
        assert_int_equal(i->domain_attr->resource_mgmt, FI_RM_ENABLED);
        assert_int_equal(i->fabric_attr->api_version, FI_VERSION(1, 17));
    }
    assert_int_equal(ferry, 1);
    fi_freeinfo(info);
}

/* What Open MPI 4.1.4's OFI MTL asks for (ompi/mca/mtl/ofi/mtl_ofi_component.c). */
static void test_mtl_hints(void **state)
{
    (void)state;
    struct fi_info *hints =
        ot_hints(FI_TAGGED | FI_LOCAL_COMM | FI_REMOTE_COMM | FI_DIRECTED_RECV, FI_COMPLETION);
    hints->mode = FI_CONTEXT | FI_CONTEXT2;
    hints->rx_attr->op_flags = FI_COMPLETION;
    hints->tx_attr->msg_order = FI_ORDER_SAS;
    hints->rx_attr->msg_order = FI_ORDER_SAS;
    hints->domain_attr->threading = FI_THREAD_DOMAIN;
    hints->domain_attr->av_type = FI_AV_MAP;
    hints->domain_attr->resource_mgmt = FI_RM_ENABLED;
    hints->domain_attr->cq_data_size = 4;
    hints->domain_attr->mr_mode = FI_MR_UNSPEC;
    struct fi_info *info;
    assert_int_equal(getinfo(FI_VERSION(1, 5), NULL, 0, hints, &info), 0);
    assert_non_null(info);
    assert_null(info->next);
    assert_true(info->tx_attr->op_flags & FI_COMPLETION);
    assert_true(info->rx_attr->op_flags & FI_COMPLETION);
    assert_true(info->caps & FI_DIRECTED_RECV);
    assert_true(info->rx_attr->caps & FI_DIRECTED_RECV);
    /* tagged only: all 64 tag bits (the MTL's ofi_tag_full mode takes what it is given) */
    assert_true((info->caps & FI_MSG) == 0);
    assert_int_equal(info->ep_attr->mem_tag_format, 0xffffffffffffffffull);
    assert_int_equal(info->domain_attr->threading, FI_THREAD_DOMAIN);
    assert_int_equal(info->domain_attr->av_type, FI_AV_MAP);
    assert_true(info->domain_attr->cq_data_size >= 4);
    assert_int_equal(info->mode & ~(FI_CONTEXT | FI_CONTEXT2), 0);
    fi_freeinfo(info);
    fi_freeinfo(hints);
}

/* The provider requires no mode bit: hints offering none, or some, both work. */
static void test_modes(void **state)
{
    (void)state;
    uint64_t modes[] = {0, FI_CONTEXT, FI_CONTEXT | FI_CONTEXT2 | FI_MSG_PREFIX | FI_RX_CQ_DATA};
    for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
        struct fi_info *hints = ot_hints(FI_TAGGED, 0);
        hints->mode = modes[i];
        struct fi_info *info;
        assert_int_equal(getinfo(FI_VERSION(1, 17), NULL, 0, hints, &info), 0);
        assert_int_equal(info->mode, 0);
        fi_freeinfo(info);
        fi_freeinfo(hints);
    }
}

static void test_mr_modes(void **state)
{
    (void)state;
    struct {
        uint32_t version;
        int hint;
        int want;
    } cases[] = {
        {FI_VERSION(1, 17), FI_MR_SCALABLE, FI_MR_SCALABLE},
        {FI_VERSION(1, 0), FI_MR_UNSPEC, FI_MR_SCALABLE},
        {FI_VERSION(1, 0), FI_MR_SCALABLE, FI_MR_SCALABLE},
        {FI_VERSION(1, 17), 0, 0},
        {FI_VERSION(1, 17), FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY,
         FI_MR_PROV_KEY},
        {FI_VERSION(1, 17), FI_MR_LOCAL | FI_MR_ENDPOINT | FI_MR_RAW, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct fi_info *hints = ot_hints(FI_RMA, 0);
        hints->domain_attr->mr_mode = cases[i].hint;
        struct fi_info *info;
        assert_int_equal(getinfo(cases[i].version, NULL, 0, hints, &info), 0);
        assert_int_equal(info->domain_attr->mr_mode, cases[i].want);
        fi_freeinfo(info);
        fi_freeinfo(hints);
    }
}

static void test_source_node(void **state)
{
    (void)state;
    struct fi_info *hints = ot_hints(FI_TAGGED, 0);
    struct fi_info *info;
    assert_int_equal(getinfo(FI_VERSION(1, 17), "localhost", FI_SOURCE, hints, &info), 0);
    assert_non_null(info->src_addr);
    fi_freeinfo(info);
    assert_int_equal(getinfo(FI_VERSION(1, 17), NULL, FI_SOURCE, hints, &info), 0);
    fi_freeinfo(info);
    fi_freeinfo(hints);
}

/* ---------------------------------------------------------------- hints it cannot meet */

typedef void (*spoil_fn)(struct fi_info *hints);

static void caps_multicast(struct fi_info *h)
{
    h->caps |= FI_MULTICAST;
}
static void caps_rma_event(struct fi_info *h)
{
    h->caps |= FI_RMA_EVENT;
}
static void caps_multi_recv(struct fi_info *h)
{
    h->caps |= FI_MULTI_RECV;
}
static void caps_collective(struct fi_info *h)
{
    h->caps |= FI_COLLECTIVE;
}
static void caps_hmem(struct fi_info *h)
{
    h->caps |= FI_HMEM;
}
static void ep_msg(struct fi_info *h)
{
    h->ep_attr->type = FI_EP_MSG;
}
static void ep_dgram(struct fi_info *h)
{
    h->ep_attr->type = FI_EP_DGRAM;
}
static void mr_basic(struct fi_info *h)
{
    h->domain_attr->mr_mode = FI_MR_BASIC;
}
static void progress_auto(struct fi_info *h)
{
    h->domain_attr->data_progress = FI_PROGRESS_AUTO;
}
static void control_auto(struct fi_info *h)
{
    h->domain_attr->control_progress = FI_PROGRESS_AUTO;
}
static void order_raw(struct fi_info *h)
{
    h->tx_attr->msg_order = FI_ORDER_SAS | FI_ORDER_RAW;
}
static void order_data(struct fi_info *h)
{
    h->rx_attr->msg_order = FI_ORDER_DATA;
}
static void comp_strict(struct fi_info *h)
{
    h->tx_attr->comp_order = FI_ORDER_STRICT;
}
static void inject_big(struct fi_info *h)
{
    h->tx_attr->inject_size = 4096;
}
static void cq_data_big(struct fi_info *h)
{
    h->domain_attr->cq_data_size = 16;
}
static void key_big(struct fi_info *h)
{
    h->domain_attr->mr_key_size = 16;
}
static void domain_other(struct fi_info *h)
{
    h->domain_attr->name = strdup("other");
}
static void fabric_other(struct fi_info *h)
{
    h->fabric_attr->name = strdup("other");
}
static void addr_sockaddr(struct fi_info *h)
{
    h->addr_format = FI_SOCKADDR_IN;
}
static void scalable(struct fi_info *h)
{
    h->domain_attr->max_ep_tx_ctx = 4;
}
static void shared_ctx(struct fi_info *h)
{
    h->ep_attr->tx_ctx_cnt = FI_SHARED_CONTEXT;
}
static void rx_multi_recv(struct fi_info *h)
{
    h->rx_attr->op_flags = FI_MULTI_RECV;
}
static void tag_bit63(struct fi_info *h)
{
    h->ep_attr->mem_tag_format = 0xffffffffffffffffull;
}
static void ordered_rma(struct fi_info *h)
{
    h->ep_attr->max_order_raw_size = 64;
}
static void msg_too_big(struct fi_info *h)
{
    h->ep_attr->max_msg_size = (size_t)1 << 40;
}
static void domain_shared_av(struct fi_info *h)
{
    h->domain_attr->caps = FI_SHARED_AV;
}
static void iov_big(struct fi_info *h)
{
    h->tx_attr->iov_limit = 64;
}
static void src_addr_size(struct fi_info *h)
{
    h->src_addr = calloc(1, 16);
    h->src_addrlen = 16;
}
static void dest_addr_size(struct fi_info *h)
{
    h->dest_addr = calloc(1, 16);
    h->dest_addrlen = 16;
}
static void prefix(struct fi_info *h)
{
    h->ep_attr->msg_prefix_size = 64;
}

static void test_unmet(void **state)
{
    (void)state;
    struct {
        const char *what;
        spoil_fn fn;
    } cases[] = {
        {"caps FI_MULTICAST", caps_multicast},
        {"caps FI_RMA_EVENT", caps_rma_event},
        {"caps FI_MULTI_RECV", caps_multi_recv},
        {"caps FI_COLLECTIVE", caps_collective},
        {"caps FI_HMEM", caps_hmem},
        {"ep type FI_EP_MSG", ep_msg},
        {"ep type FI_EP_DGRAM", ep_dgram},
        {"mr_mode FI_MR_BASIC", mr_basic},
        {"data progress auto", progress_auto},
        {"control progress auto", control_auto},
        {"msg_order RAW", order_raw},
        {"msg_order DATA", order_data},
        {"comp_order STRICT", comp_strict},
        {"inject_size 4096", inject_big},
        {"cq_data_size 16", cq_data_big},
        {"mr_key_size 16", key_big},
        {"domain name", domain_other},
        {"fabric name", fabric_other},
        {"addr_format sockaddr_in", addr_sockaddr},
        {"scalable endpoints", scalable},
        {"shared contexts", shared_ctx},
        {"rx op_flags FI_MULTI_RECV", rx_multi_recv},
        {"mem_tag_format bit 63 with FI_MSG", tag_bit63},
        {"ordered RMA", ordered_rma},
        {"max_msg_size 1 TiB", msg_too_big},
        {"domain caps FI_SHARED_AV", domain_shared_av},
        {"iov_limit 64", iov_big},
        {"src_addr of 16 bytes", src_addr_size},
        {"dest_addr of 16 bytes", dest_addr_size},
        {"msg_prefix_size 64", prefix},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct fi_info *hints = ot_hints(FI_TAGGED | FI_MSG, 0);
        cases[i].fn(hints);
        struct fi_info *info;
        int rc = getinfo(FI_VERSION(1, 17), NULL, 0, hints, &info);
        if (rc != -FI_ENODATA)
            fail_msg("hints with %s: fi_getinfo = %d (%s), expected -FI_ENODATA", cases[i].what, rc,
                     fi_strerror(-rc));
        fi_freeinfo(hints);
    }
    /* the legacy FI_MR_BASIC of API 1.0 needs virtual addresses too */
    struct fi_info *hints = ot_hints(FI_RMA, 0);
    hints->domain_attr->mr_mode = FI_MR_BASIC;
    struct fi_info *info;
    assert_int_equal(getinfo(FI_VERSION(1, 0), NULL, 0, hints, &info), -FI_ENODATA);
    fi_freeinfo(hints);
}

/* A destination by host: no name service (unknown host, and a known one, alike). */
static void test_unmet_nodes(void **state)
{
    (void)state;
    struct fi_info *hints = ot_hints(FI_TAGGED, 0);
    struct fi_info *info;
    assert_int_equal(getinfo(FI_VERSION(1, 17), "g00n13s.invalid", 0, hints, &info), -FI_ENODATA);
    assert_int_equal(getinfo(FI_VERSION(1, 17), "localhost", 0, hints, &info), -FI_ENODATA);
    assert_int_equal(getinfo(FI_VERSION(1, 17), "g00n13s.invalid", FI_SOURCE, hints, &info),
                     -FI_ENODATA);
    fi_freeinfo(hints);
}

int main(void)
{
    ot_require_provider();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_null_hints),  cmocka_unit_test(test_mtl_hints),
        cmocka_unit_test(test_modes),       cmocka_unit_test(test_mr_modes),
        cmocka_unit_test(test_source_node), cmocka_unit_test(test_unmet),
        cmocka_unit_test(test_unmet_nodes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
