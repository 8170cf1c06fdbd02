/* One-sided operations with retries and deadlines, keys over channels, big channel messages. */
#define _GNU_SOURCE
#include "ft_rma.h"

#include "ft_ferry.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/uio.h>

#include "ft_chan.h"
#include "ft_check.h"
#include "ft_progress.h"

static const char *ft_aop_name(ferry_atomic_op_t aop)
{
    switch (aop) {
    case FERRY_ATOMIC_ADD:
        return "ADD";
    case FERRY_ATOMIC_AND:
        return "AND";
    case FERRY_ATOMIC_OR:
        return "OR";
    case FERRY_ATOMIC_XOR:
        return "XOR";
    case FERRY_ATOMIC_SWAP:
        return "SWAP";
    case FERRY_ATOMIC_CSWAP:
        return "CSWAP";
    }
    return "?";
}

static uint64_t ft_remote_total(const ferry_remote_iov_t *remote, size_t count)
{
    uint64_t total = 0;
    for (size_t i = 0; i < count; i++)
        total += remote[i].length;
    return total;
}

const char *ft_rma_describe(const ft_rma_op_t *op, char *buf, size_t len)
{
    switch (op->kind) {
    case FT_RMA_PUT:
    case FT_RMA_GET:
        snprintf(buf, len, "ferry_%s(%zu bytes at offset %llu)",
                 op->kind == FT_RMA_PUT ? "put" : "get", op->length,
                 (unsigned long long)op->offset);
        break;
    case FT_RMA_PUTV:
    case FT_RMA_GETV:
        snprintf(buf, len,
                 "ferry_%s(%zu local pieces, %zu remote ranges, %llu bytes, first at "
                 "offset %llu)",
                 op->kind == FT_RMA_PUTV ? "putv" : "getv", op->iovcnt, op->remote_count,
                 (unsigned long long)ft_remote_total(op->remote, op->remote_count),
                 op->remote_count > 0 ? (unsigned long long)op->remote[0].offset : 0ull);
        break;
    case FT_RMA_POST:
        snprintf(buf, len, "ferry_atomic_post(%s %zu-byte, value 0x%llx, offset %llu)",
                 ft_aop_name(op->aop), op->size, (unsigned long long)op->value,
                 (unsigned long long)op->offset);
        break;
    case FT_RMA_FETCH:
        snprintf(buf, len,
                 "ferry_atomic_fetch(%s %zu-byte, value 0x%llx, compare 0x%llx, offset %llu)",
                 ft_aop_name(op->aop), op->size, (unsigned long long)op->value,
                 (unsigned long long)op->compare, (unsigned long long)op->offset);
        break;
    }
    return buf;
}

ft_rma_op_t ft_rma_put(const void *buffer, size_t length, uint64_t offset)
{
    return (ft_rma_op_t){
        .kind = FT_RMA_PUT, .buffer = (void *)buffer, .length = length, .offset = offset};
}

ft_rma_op_t ft_rma_get(void *buffer, size_t length, uint64_t offset)
{
    return (ft_rma_op_t){.kind = FT_RMA_GET, .buffer = buffer, .length = length, .offset = offset};
}

ft_rma_op_t ft_rma_putv(const ferry_iov_t *iov, size_t iovcnt, const ferry_remote_iov_t *remote,
                        size_t remote_count)
{
    return (ft_rma_op_t){.kind = FT_RMA_PUTV,
                         .iov = iov,
                         .iovcnt = iovcnt,
                         .remote = remote,
                         .remote_count = remote_count};
}

ft_rma_op_t ft_rma_getv(const ferry_iov_t *iov, size_t iovcnt, const ferry_remote_iov_t *remote,
                        size_t remote_count)
{
    return (ft_rma_op_t){.kind = FT_RMA_GETV,
                         .iov = iov,
                         .iovcnt = iovcnt,
                         .remote = remote,
                         .remote_count = remote_count};
}

ft_rma_op_t ft_rma_post(ferry_atomic_op_t aop, uint64_t value, size_t size, uint64_t offset)
{
    return (ft_rma_op_t){
        .kind = FT_RMA_POST, .aop = aop, .value = value, .size = size, .offset = offset};
}

ft_rma_op_t ft_rma_fetch(ferry_atomic_op_t aop, uint64_t value, uint64_t compare, size_t size,
                         uint64_t offset, uint64_t *result)
{
    return (ft_rma_op_t){.kind = FT_RMA_FETCH,
                         .aop = aop,
                         .value = value,
                         .compare = compare,
                         .size = size,
                         .offset = offset,
                         .result = result};
}

ferry_status_t ft_rma_try(ferry_ep_t *ep, ferry_rkey_t *rkey, const ft_rma_op_t *op,
                          ferry_completion_t *comp)
{
    ferry_status_t status = FERRY_ERR_INVALID_PARAM;
    if (comp != NULL)
        comp->count++;
    switch (op->kind) {
    case FT_RMA_PUT:
        status = ferry_put(ep, op->buffer, op->length, op->offset, rkey, comp);
        break;
    case FT_RMA_GET:
        status = ferry_get(ep, op->buffer, op->length, op->offset, rkey, comp);
        break;
    case FT_RMA_PUTV:
        status = ferry_putv(ep, op->iov, op->iovcnt, op->remote, op->remote_count, rkey, comp);
        break;
    case FT_RMA_GETV:
        status = ferry_getv(ep, op->iov, op->iovcnt, op->remote, op->remote_count, rkey, comp);
        break;
    case FT_RMA_POST:
        status = ferry_atomic_post(ep, op->aop, op->value, op->size, op->offset, rkey, comp);
        break;
    case FT_RMA_FETCH:
        status = ferry_atomic_fetch(ep, op->aop, op->value, op->compare, op->size, op->offset, rkey,
                                    op->result, comp);
        break;
    }
    if (comp != NULL && status != FERRY_INPROGRESS)
        comp->count--;
    return status;
}

ferry_status_t ft_rma_start(ferry_worker_t *worker, ferry_ep_t *ep, ferry_rkey_t *rkey,
                            const ft_rma_op_t *op, ferry_completion_t *comp, int timeout_ms)
{
    ft_deadline_t deadline = ft_deadline_in_ms(timeout_ms);
    unsigned tries = 0;
    for (;;) {
        ferry_status_t status = ft_rma_try(ep, rkey, op, comp);
        if (status != FERRY_ERR_NO_RESOURCE)
            return status;
        ft_progress_once(worker);
        if ((++tries & 0x3f) == 0 && ft_deadline_passed(deadline)) {
            char what[200];
            ft_fail_at(__FILE__, __LINE__, "%s still returns FERRY_ERR_NO_RESOURCE after %d ms",
                       ft_rma_describe(op, what, sizeof(what)), timeout_ms);
        }
    }
}

ferry_status_t ft_rma_run(ferry_worker_t *worker, ferry_ep_t *ep, ferry_rkey_t *rkey,
                          const ft_rma_op_t *op, int timeout_ms, bool *inprogress_p)
{
    ferry_completion_t comp = {.cb = NULL, .count = 0, .status = FERRY_OK};
    char what[200];
    ferry_status_t status = ft_rma_start(worker, ep, rkey, op, &comp, timeout_ms);
    if (inprogress_p != NULL)
        *inprogress_p = status == FERRY_INPROGRESS;
    if (status != FERRY_INPROGRESS) {
        FT_CHECK(comp.count == 0, "%s returned %s but counted its completion",
                 ft_rma_describe(op, what, sizeof(what)), ferry_status_name(status));
        return status;
    }
    ft_progress_until_completion(worker, timeout_ms, &comp,
                                 ft_rma_describe(op, what, sizeof(what)));
    FT_CHECK(comp.status != FERRY_INPROGRESS && comp.status != FERRY_ERR_NO_RESOURCE,
             "%s completed with %s", ft_rma_describe(op, what, sizeof(what)),
             ferry_status_name(comp.status));
    return comp.status;
}

void ft_rma_expect(ferry_worker_t *worker, ferry_ep_t *ep, ferry_rkey_t *rkey,
                   const ft_rma_op_t *op, ferry_status_t expected, const char *what)
{
    char desc[200];
    bool inprogress = false;
    ferry_status_t status = ft_rma_run(worker, ep, rkey, op, 30000, &inprogress);
    FT_CHECK(status == expected, "%s: %s ended with %s (%s%s), expected %s", what,
             ft_rma_describe(op, desc, sizeof(desc)), ferry_status_name(status),
             ferry_status_string(status), inprogress ? ", reported by the completion" : "",
             ferry_status_name(expected));
}

static void ft_flush_wait(ferry_worker_t *worker, ferry_status_t status, ferry_completion_t *comp,
                          int timeout_ms, const char *call)
{
    FT_CHECK(status == FERRY_OK || status == FERRY_INPROGRESS, "%s returned %s (%s)", call,
             ferry_status_name(status), ferry_status_string(status));
    if (status == FERRY_OK) {
        FT_CHECK(comp->count == 1, "%s returned FERRY_OK and touched its completion", call);
        return;
    }
    ft_progress_until_completion(worker, timeout_ms, comp, call);
    FT_CHECK(comp->status == FERRY_OK, "%s completed with %s (%s)", call,
             ferry_status_name(comp->status), ferry_status_string(comp->status));
}

void ft_rma_flush_ep(ferry_worker_t *worker, ferry_ep_t *ep, int timeout_ms)
{
    ferry_completion_t comp = {.cb = NULL, .count = 1, .status = FERRY_OK};
    ft_flush_wait(worker, ferry_ep_flush(ep, &comp), &comp, timeout_ms, "ferry_ep_flush");
}

void ft_rma_flush_worker(ferry_worker_t *worker, int timeout_ms)
{
    ferry_completion_t comp = {.cb = NULL, .count = 1, .status = FERRY_OK};
    ft_flush_wait(worker, ferry_worker_flush(worker, &comp), &comp, timeout_ms,
                  "ferry_worker_flush");
}

void ft_rkey_send(int chan, ferry_mem_t *mem)
{
    void *buf = NULL;
    size_t len = 0;
    FT_CHECK_OK(ferry_rkey_pack(mem, &buf, &len));
    FT_CHECK(buf != NULL && len > 0 && len <= FT_CHAN_MSG_MAX, "ferry_rkey_pack: %zu bytes", len);
    ft_chan_send(chan, buf, len);
    ferry_rkey_buffer_release(buf);
}

size_t ft_rkey_recv(int chan, void *buf, size_t cap, int timeout_ms)
{
    return ft_chan_recv(chan, buf, cap, timeout_ms);
}

ferry_rkey_t *ft_rkey_recv_unpack(int chan, ferry_ep_t *ep, int timeout_ms)
{
    uint8_t buf[FT_CHAN_MSG_MAX];
    ferry_rkey_t *rkey = NULL;
    size_t len = ft_rkey_recv(chan, buf, sizeof(buf), timeout_ms);
    FT_CHECK_OK(ferry_rkey_unpack(ep, buf, len, &rkey));
    FT_CHECK(rkey != NULL, "ferry_rkey_unpack returned FERRY_OK and no key");
    return rkey;
}

void ft_chan_send_big(int chan, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    size_t done = 0;
    do {
        size_t n = len - done < FT_CHAN_MSG_MAX ? len - done : FT_CHAN_MSG_MAX;
        ft_chan_send(chan, p + done, n);
        done += n;
    } while (done < len);
}

void ft_chan_recv_big(int chan, void *buf, size_t len, int timeout_ms)
{
    uint8_t *p = buf;
    size_t done = 0;
    do {
        size_t want = len - done < FT_CHAN_MSG_MAX ? len - done : FT_CHAN_MSG_MAX;
        size_t n = ft_chan_recv(chan, p + done, want, timeout_ms);
        FT_CHECK(n == want, "a piece of a big channel message has %zu bytes, expected %zu", n,
                 want);
        done += n;
    } while (done < len);
}

bool ft_cma_usable(pid_t pid, const void *addr, const char **why_p)
{
    uint8_t got[8];
    struct iovec local = {.iov_base = got, .iov_len = sizeof(got)};
    struct iovec remote = {.iov_base = (void *)addr, .iov_len = sizeof(got)};
    ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
    if (n == (ssize_t)sizeof(got))
        return true;
    if (why_p != NULL)
        *why_p = n < 0 ? strerror(errno) : "short read";
    return false;
}

bool ft_cma_forced_off(void)
{
    static const char *const no[] = {"n", "no", "off", "0", "false"};
    const char *v = getenv("FERRY_SHM_CMA");
    if (strcmp(ft_remote_transport(), "tcp") == 0)
        return true; /* no direct path over tcp: every access goes through the target */
    if (v == NULL)
        return false;
    for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
        if (strcasecmp(v, no[i]) == 0)
            return true;
    }
    return false;
}
