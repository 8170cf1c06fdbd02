/*
 * libferry-fi — fi_getinfo: the provider's one RDM info, checked against the application's
 * hints. Every hint the provider cannot meet gives -FI_ENODATA, with an FI_INFO log line naming
 * the attribute (FI_LOG_LEVEL=info shows it). What the hints leave open is filled with what the
 * provider does; what they ask for is echoed where the provider supports it (op_flags, av_type,
 * threading, resource management).
 *
 * Libfabric's own helpers (ofi_check_info and friends) are not exported by libfabric.so, so the
 * rules are written here; they follow libfabric's util provider and fabtests' fi_getinfo_test.
 */
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "ofi.h"

/* Capabilities, split as libfabric does: primary ones are returned only when asked for,
 * secondary ones always. */
#define CAPS_PRIMARY                                                                               \
    (FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_READ | FI_WRITE | FI_SEND | FI_RECV |            \
     FI_REMOTE_READ | FI_REMOTE_WRITE | FI_DIRECTED_RECV)
#define CAPS_SECONDARY (FI_SOURCE | FI_LOCAL_COMM | FI_REMOTE_COMM)
#define CAPS_TX (FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_SEND | FI_READ | FI_WRITE)
#define CAPS_RX                                                                                    \
    (FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_RECV | FI_REMOTE_READ | FI_REMOTE_WRITE |        \
     FI_DIRECTED_RECV | FI_SOURCE)
#define CAPS_DOMAIN (FI_LOCAL_COMM | FI_REMOTE_COMM)
/* the primary capabilities an empty hints->caps stands for */
#define CAPS_DEFAULT CAPS_PRIMARY

#define TX_OP_FLAGS                                                                                \
    (FI_COMPLETION | FI_INJECT | FI_INJECT_COMPLETE | FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE)
#define RX_OP_FLAGS FI_COMPLETION
#define MSG_ORDER FI_ORDER_SAS
#define COMP_ORDER FI_ORDER_NONE

static bool unmet(const char *what)
{
    FY_OFI_INFO(FI_LOG_CORE, "hints ask for %s, which the ferry provider does not offer\n", what);
    return false;
}

static bool check_fabric(const struct fi_fabric_attr *attr)
{
    if (attr == NULL)
        return true;
    if (attr->name != NULL && strcmp(attr->name, FY_OFI_FABRIC_NAME) != 0)
        return unmet("another fabric name");
    return true;
}

/* mr_mode the provider returns for the hints' mr_mode, or -1 when it cannot meet them. The
 * provider needs no mode: keys are found by value, remote addresses are offsets into the
 * registration (no FI_MR_VIRT_ADDR); it chooses keys (FI_MR_PROV_KEY) when the application
 * allows it. */
static int mr_mode_for(uint32_t version, int hint_mode, bool have_hints)
{
    if (FI_VERSION_LT(version, FI_VERSION(1, 5)) || hint_mode == FI_MR_BASIC ||
        hint_mode == FI_MR_SCALABLE) {
        /* the legacy enumeration: only SCALABLE (offsets, application keys) is what we do */
        if (!have_hints || hint_mode == FI_MR_UNSPEC || hint_mode == FI_MR_SCALABLE)
            return FI_MR_SCALABLE;
        return -1;
    }
    return hint_mode & FI_MR_PROV_KEY;
}

static bool check_domain(const struct fi_domain_attr *attr)
{
    if (attr == NULL)
        return true;
    if (attr->name != NULL && strcmp(attr->name, FY_OFI_DOMAIN_NAME) != 0)
        return unmet("another domain name");
    if (attr->control_progress == FI_PROGRESS_AUTO || attr->data_progress == FI_PROGRESS_AUTO)
        return unmet("automatic progress");
    if (attr->mr_key_size > FY_OFI_MR_KEY_SIZE)
        return unmet("mr_key_size > 8");
    if (attr->cq_data_size > FY_OFI_CQ_DATA_SIZE)
        return unmet("cq_data_size > 8");
    if (attr->cq_cnt > FY_OFI_CQ_CNT || attr->ep_cnt > FY_OFI_EP_CNT ||
        attr->tx_ctx_cnt > FY_OFI_EP_CNT || attr->rx_ctx_cnt > FY_OFI_EP_CNT ||
        attr->cntr_cnt > FY_OFI_CNTR_CNT || attr->mr_cnt > FY_OFI_MR_CNT)
        return unmet("more CQs, endpoints, counters or registrations");
    if (attr->max_ep_tx_ctx > 1 || attr->max_ep_rx_ctx > 1)
        return unmet("scalable endpoints");
    if (attr->max_ep_stx_ctx > 0 || attr->max_ep_srx_ctx > 0)
        return unmet("shared contexts");
    if (attr->mr_iov_limit > FY_OFI_MR_IOV_LIMIT)
        return unmet("mr_iov_limit > 1024");
    if (attr->caps & ~CAPS_DOMAIN)
        return unmet("domain capabilities other than FI_LOCAL_COMM|FI_REMOTE_COMM");
    if (attr->auth_key_size != 0 || attr->auth_key != NULL)
        return unmet("an authorization key");
    if (attr->max_err_data > 0)
        return unmet("error data");
    switch (attr->av_type) {
    case FI_AV_UNSPEC:
    case FI_AV_MAP:
    case FI_AV_TABLE:
        break;
    default:
        return unmet("an unknown av_type");
    }
    return true;
}

static bool check_tx(const struct fi_tx_attr *attr)
{
    if (attr == NULL)
        return true;
    if (attr->caps & ~CAPS_TX)
        return unmet("tx capabilities the provider lacks");
    if (attr->op_flags & ~TX_OP_FLAGS)
        return unmet("tx op_flags the provider lacks");
    if (attr->msg_order & ~MSG_ORDER)
        return unmet("a tx message order other than FI_ORDER_SAS");
    if (attr->comp_order & ~COMP_ORDER)
        return unmet("a completion order");
    if (attr->inject_size > FY_OFI_INJECT_SIZE)
        return unmet("inject_size > 128");
    if (attr->size > FY_OFI_QUEUE_SIZE)
        return unmet("a larger tx queue");
    if (attr->iov_limit > FY_OFI_IOV_LIMIT)
        return unmet("tx iov_limit > 16");
    if (attr->rma_iov_limit > 1)
        return unmet("rma_iov_limit > 1");
    return true;
}

static bool check_rx(const struct fi_rx_attr *attr)
{
    if (attr == NULL)
        return true;
    if (attr->caps & ~CAPS_RX)
        return unmet("rx capabilities the provider lacks");
    if (attr->op_flags & ~RX_OP_FLAGS)
        return unmet("rx op_flags the provider lacks (FI_MULTI_RECV)");
    if (attr->msg_order & ~MSG_ORDER)
        return unmet("an rx message order other than FI_ORDER_SAS");
    if (attr->comp_order & ~COMP_ORDER)
        return unmet("a completion order");
    if (attr->size > FY_OFI_QUEUE_SIZE)
        return unmet("a larger rx queue");
    if (attr->iov_limit > FY_OFI_IOV_LIMIT)
        return unmet("rx iov_limit > 16");
    return true;
}

static bool check_ep(const struct fi_ep_attr *attr, uint64_t caps)
{
    if (attr == NULL)
        return true;
    if (attr->type != FI_EP_UNSPEC && attr->type != FI_EP_RDM)
        return unmet("an endpoint type other than FI_EP_RDM");
    if (attr->protocol != FI_PROTO_UNSPEC)
        return unmet("a wire protocol");
    if (attr->max_msg_size > FY_OFI_MAX_MSG_SIZE)
        return unmet("max_msg_size > 1 GiB");
    if (attr->msg_prefix_size > 0)
        return unmet("a message prefix");
    if (attr->max_order_raw_size > 0 || attr->max_order_war_size > 0 ||
        attr->max_order_waw_size > 0)
        return unmet("ordered RMA");
    if (attr->mem_tag_format & ~fy_ofi_tag_format(caps))
        return unmet("tag bit 63 with FI_MSG (it tells FI_MSG from FI_TAGGED messages)");
    if (attr->tx_ctx_cnt > 1 || attr->rx_ctx_cnt > 1)
        return unmet("several or shared contexts per endpoint");
    if (attr->auth_key_size != 0 || attr->auth_key != NULL)
        return unmet("an authorization key");
    return true;
}

static bool check_addresses(const struct fi_info *hints)
{
    if (hints->addr_format != FI_FORMAT_UNSPEC)
        return unmet("an address format other than FI_FORMAT_UNSPEC");
    if (hints->src_addr != NULL && hints->src_addrlen != FY_OFI_NAME_LEN)
        return unmet("a source address of another size");
    if (hints->dest_addr != NULL && hints->dest_addrlen != FY_OFI_NAME_LEN)
        return unmet("a destination address of another size");
    return true;
}

/* The capabilities of the returned info. */
static uint64_t caps_for(const struct fi_info *hints)
{
    uint64_t primary =
        (hints && hints->caps & CAPS_PRIMARY) ? hints->caps & CAPS_PRIMARY : CAPS_DEFAULT;
    return primary | CAPS_SECONDARY;
}

static bool check_hints(uint32_t version, const struct fi_info *hints)
{
    if (hints == NULL)
        return true;
    if (hints->caps & ~(CAPS_PRIMARY | CAPS_SECONDARY))
        return unmet("capabilities the provider lacks");
    if (hints->handle != NULL)
        return unmet("a passive endpoint handle");
    if (!check_addresses(hints) || !check_fabric(hints->fabric_attr) ||
        !check_domain(hints->domain_attr) || !check_tx(hints->tx_attr) ||
        !check_rx(hints->rx_attr) || !check_ep(hints->ep_attr, caps_for(hints)))
        return false;
    if (hints->domain_attr != NULL && mr_mode_for(version, hints->domain_attr->mr_mode, true) < 0)
        return unmet("an mr_mode needing virtual addresses (FI_MR_BASIC)");
    if (hints->tx_attr && hints->tx_attr->caps & ~(hints->caps ? hints->caps : ~0ull))
        return unmet("tx capabilities beyond the endpoint's");
    if (hints->rx_attr && hints->rx_attr->caps & ~(hints->caps ? hints->caps : ~0ull))
        return unmet("rx capabilities beyond the endpoint's");
    return true;
}

static struct fi_info *info_build(uint32_t version, const struct fi_info *hints)
{
    struct fi_info *info = fi_allocinfo();
    if (info == NULL)
        return NULL;
    const struct fi_domain_attr *hd = hints ? hints->domain_attr : NULL;
    const struct fi_tx_attr *ht = hints ? hints->tx_attr : NULL;
    const struct fi_rx_attr *hr = hints ? hints->rx_attr : NULL;

    info->caps = caps_for(hints);
    info->mode = 0;
    info->addr_format = FI_FORMAT_UNSPEC;
    /* a source address of the right size is always there; the real name comes from
     * fi_getname (fi_getinfo_test checks that one is set) */
    size_t name_size = FY_OFI_NAME_LEN;
    info->src_addr = calloc(1, name_size);
    if (info->src_addr == NULL)
        goto err_free;
    info->src_addrlen = name_size;
    if (hints && hints->dest_addr != NULL) {
        info->dest_addr = malloc(name_size);
        if (info->dest_addr == NULL)
            goto err_free;
        memcpy(info->dest_addr, hints->dest_addr, name_size);
        info->dest_addrlen = name_size;
    }

    info->tx_attr->caps = info->caps & CAPS_TX;
    info->tx_attr->mode = 0;
    info->tx_attr->op_flags = ht ? ht->op_flags & TX_OP_FLAGS : 0;
    info->tx_attr->msg_order = MSG_ORDER;
    info->tx_attr->comp_order = COMP_ORDER;
    info->tx_attr->inject_size = FY_OFI_INJECT_SIZE;
    info->tx_attr->size = FY_OFI_QUEUE_SIZE;
    info->tx_attr->iov_limit = FY_OFI_IOV_LIMIT;
    info->tx_attr->rma_iov_limit = 1;
    info->tx_attr->tclass = ht ? ht->tclass : 0;

    info->rx_attr->caps = info->caps & CAPS_RX;
    info->rx_attr->mode = 0;
    info->rx_attr->op_flags = hr ? hr->op_flags & RX_OP_FLAGS : 0;
    info->rx_attr->msg_order = MSG_ORDER;
    info->rx_attr->comp_order = COMP_ORDER;
    info->rx_attr->total_buffered_recv = 0;
    info->rx_attr->size = FY_OFI_QUEUE_SIZE;
    info->rx_attr->iov_limit = FY_OFI_IOV_LIMIT;

    info->ep_attr->type = FI_EP_RDM;
    info->ep_attr->protocol = FI_PROTO_UNSPEC;
    info->ep_attr->protocol_version = 1;
    info->ep_attr->max_msg_size = FY_OFI_MAX_MSG_SIZE;
    info->ep_attr->msg_prefix_size = 0;
    info->ep_attr->mem_tag_format = fy_ofi_tag_format(info->caps);
    info->ep_attr->tx_ctx_cnt = 1;
    info->ep_attr->rx_ctx_cnt = 1;

    struct fi_domain_attr *d = info->domain_attr;
    d->name = strdup(FY_OFI_DOMAIN_NAME);
    if (d->name == NULL)
        goto err_free;
    d->threading = (hd && hd->threading != FI_THREAD_UNSPEC) ? hd->threading : FI_THREAD_SAFE;
    d->control_progress = FI_PROGRESS_MANUAL;
    d->data_progress = FI_PROGRESS_MANUAL;
    d->resource_mgmt =
        (hd && hd->resource_mgmt != FI_RM_UNSPEC) ? hd->resource_mgmt : FI_RM_ENABLED;
    d->av_type = hd ? hd->av_type : FI_AV_UNSPEC;
    d->mr_mode = mr_mode_for(version, hd ? hd->mr_mode : FI_MR_UNSPEC, hd != NULL);
    d->mr_key_size = FY_OFI_MR_KEY_SIZE;
    d->cq_data_size = FY_OFI_CQ_DATA_SIZE;
    d->cq_cnt = FY_OFI_CQ_CNT;
    d->ep_cnt = FY_OFI_EP_CNT;
    d->tx_ctx_cnt = FY_OFI_EP_CNT;
    d->rx_ctx_cnt = FY_OFI_EP_CNT;
    d->max_ep_tx_ctx = 1;
    d->max_ep_rx_ctx = 1;
    d->max_ep_stx_ctx = 0;
    d->max_ep_srx_ctx = 0;
    d->cntr_cnt = FY_OFI_CNTR_CNT;
    d->mr_iov_limit = FY_OFI_MR_IOV_LIMIT;
    d->caps = CAPS_DOMAIN;
    d->mode = 0;
    d->max_err_data = 0;
    d->mr_cnt = FY_OFI_MR_CNT;
    d->tclass = hd ? hd->tclass : 0;

    info->fabric_attr->name = strdup(FY_OFI_FABRIC_NAME);
    if (info->fabric_attr->name == NULL)
        goto err_free;
    /* prov_name stays NULL: libfabric's core sets it */
    info->fabric_attr->prov_version = FY_OFI_PROV_VERSION;
    return info;

err_free:
    fi_freeinfo(info);
    return NULL;
}

/* node/service: the provider has no name service yet, so a destination named by host cannot be
 * resolved to a provider address (-FI_ENODATA, as for an unknown host); a source node must be a
 * name of this machine's resolver. Applications exchange fi_getname blobs instead. */
static int check_node(const char *node, const char *service, uint64_t flags)
{
    if (node == NULL)
        return 0;
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM};
    if (flags & FI_NUMERICHOST)
        hints.ai_flags |= AI_NUMERICHOST;
    struct addrinfo *res = NULL;
    int rc = getaddrinfo(node, NULL, &hints, &res);
    if (rc != 0) {
        FY_OFI_INFO(FI_LOG_CORE, "getaddrinfo(%s) failed: %s\n", node, gai_strerror(rc));
        return -FI_ENODATA;
    }
    freeaddrinfo(res);
    if (!(flags & FI_SOURCE)) {
        FY_OFI_INFO(FI_LOG_CORE,
                    "node %s service %s: the ferry provider resolves no destination by host "
                    "(exchange fi_getname names instead)\n",
                    node, service ? service : "(none)");
        return -FI_ENODATA;
    }
    return 0;
}

int fy_ofi_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
                   const struct fi_info *hints, struct fi_info **info_p)
{
    if (info_p == NULL)
        return -FI_EINVAL;
    if (!check_hints(version, hints))
        return -FI_ENODATA;
    int rc = check_node(node, service, flags);
    if (rc != 0)
        return rc;
    struct fi_info *info = info_build(version, hints);
    if (info == NULL)
        return -FI_ENOMEM;
    *info_p = info;
    return 0;
}
