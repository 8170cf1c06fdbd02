/* ferry set-up and sends with retries. */
#define _GNU_SOURCE
#include "ft_ferry.h"

#include <stdlib.h>
#include <string.h>

#include "ft_chan.h"
#include "ft_check.h"
#include "ft_progress.h"

void ft_ferry_init(ft_ferry_t *f, const char *transports, const ferry_worker_params_t *wparams)
{
    ferry_context_params_t cparams = {.transports = transports};
    f->context = NULL;
    f->worker = NULL;
    FT_CHECK_OK(ferry_context_create(&cparams, &f->context));
    FT_CHECK_OK(ferry_worker_create(f->context, wparams, &f->worker));
}

void ft_ferry_fini(ft_ferry_t *f)
{
    ferry_worker_destroy(f->worker);
    ferry_context_destroy(f->context);
    f->worker = NULL;
    f->context = NULL;
}

void ft_send_address(int chan, ferry_worker_t *worker)
{
    const void *address;
    size_t length;
    FT_CHECK_OK(ferry_worker_address(worker, &address, &length));
    FT_CHECK(length > 0 && length <= FT_CHAN_MSG_MAX, "worker address of %zu bytes", length);
    ft_chan_send(chan, address, length);
}

size_t ft_recv_address(int chan, void *buf, size_t cap, int timeout_ms)
{
    return ft_chan_recv(chan, buf, cap, timeout_ms);
}

ferry_ep_t *ft_ep_create(ferry_worker_t *worker, const void *address, size_t length,
                         const ferry_ep_params_t *params)
{
    ferry_ep_t *ep = NULL;
    FT_CHECK_OK(ferry_ep_create(worker, address, length, params, &ep));
    FT_CHECK(ep != NULL, "ferry_ep_create returned FERRY_OK and no endpoint");
    return ep;
}

ferry_status_t ft_am_try_send(ferry_ep_t *ep, unsigned id, const void *header, size_t header_length,
                              const ferry_iov_t *iov, size_t iovcnt, ferry_completion_t *comp)
{
    if (comp != NULL)
        comp->count++;
    ferry_status_t status = ferry_am_send(ep, id, header, header_length, iov, iovcnt, comp);
    if (comp != NULL && status != FERRY_INPROGRESS)
        comp->count--;
    return status;
}

ferry_status_t ft_am_send(ferry_worker_t *worker, ferry_ep_t *ep, unsigned id, const void *header,
                          size_t header_length, const ferry_iov_t *iov, size_t iovcnt,
                          ferry_completion_t *comp, int timeout_ms, uint64_t *no_resource_p)
{
    ft_deadline_t deadline = ft_deadline_in_ms(timeout_ms);
    unsigned tries = 0;
    for (;;) {
        ferry_status_t status = ft_am_try_send(ep, id, header, header_length, iov, iovcnt, comp);
        if (status != FERRY_ERR_NO_RESOURCE)
            return status;
        if (no_resource_p != NULL)
            (*no_resource_p)++;
        ft_progress_once(worker);
        if ((++tries & 0x3f) == 0)
            FT_CHECK(!ft_deadline_passed(deadline),
                     "ferry_am_send(id %u, %zu header bytes) still returns "
                     "FERRY_ERR_NO_RESOURCE after %d ms",
                     id, header_length, timeout_ms);
    }
}

void ft_am_send_ok(ferry_worker_t *worker, ferry_ep_t *ep, unsigned id, const void *header,
                   size_t header_length, const void *payload, size_t length,
                   ferry_completion_t *comp, int timeout_ms)
{
    ferry_iov_t iov = {.buffer = (void *)payload, .length = length};
    ferry_status_t status =
        ft_am_send(worker, ep, id, header, header_length, &iov,
                   payload != NULL || length > 0 ? 1 : 0, comp, timeout_ms, NULL);
    FT_CHECK(status == FERRY_OK || status == FERRY_INPROGRESS,
             "ferry_am_send(id %u, %zu + %zu bytes) returned %s (%s)", id, header_length, length,
             ferry_status_name(status), ferry_status_string(status));
}

const char *ft_remote_transport(void)
{
    const char *list = getenv("FERRY_TRANSPORTS");
    return list != NULL && strcmp(list, "tcp") == 0 ? "tcp" : "shm";
}

void ft_worker_counters(ferry_worker_t *worker, ferry_counters_t *c)
{
    memset(c, 0, sizeof(*c));
    c->size = sizeof(*c);
    FT_CHECK(ferry_worker_counters(worker, c) == FERRY_OK, "ferry_worker_counters");
}
