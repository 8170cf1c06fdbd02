/* ferry_info -x: a known exchange between two workers of this process, then the counters of
 * both (include/ferry/counters.h). It shows what the counters hold, which transport two
 * workers on this host use, and the rendezvous mode each size class took; FERRY_TRANSPORTS and
 * the FERRY_RNDV_* variables steer it like any program. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ferry/counters.h>
#include <ferry/ferry.h>

#include "info.h"

/* The exchange: INFO_SMALL_COUNT messages of 8 bytes, then one of each larger size. */
#define INFO_SMALL_COUNT 16u
#define INFO_TIMEOUT_S 10
static const size_t info_sizes[] = {8, 64 * 1024, 4 * 1024 * 1024};

typedef struct info_exchange {
    ferry_worker_t *sender;
    ferry_worker_t *receiver;
    ferry_ep_t *ep;
    uint8_t *send_buffer;
    uint8_t *recv_buffer;
} info_exchange_t;

/* Progress both workers until comp has completed; false after INFO_TIMEOUT_S seconds. */
static bool info_progress_until(info_exchange_t *x, const ferry_completion_t *comp)
{
    time_t deadline = time(NULL) + INFO_TIMEOUT_S;
    while (comp->count > 0) {
        if (time(NULL) > deadline)
            return false;
        ferry_worker_progress(x->sender);
        ferry_worker_progress(x->receiver);
    }
    return true;
}

/* One tagged message of `size` bytes from sender to receiver, checked byte for byte. */
static ferry_status_t info_send_one(info_exchange_t *x, size_t size, uint64_t tag)
{
    ferry_completion_t send_comp = {.count = 1}, recv_comp = {.count = 1};
    ferry_iov_t send_iov = {.buffer = x->send_buffer, .length = size};
    ferry_iov_t recv_iov = {.buffer = x->recv_buffer, .length = size};
    ferry_tag_info_t tag_info;

    for (size_t i = 0; i < size; i++)
        x->send_buffer[i] = (uint8_t)(i * 7u + tag);
    memset(x->recv_buffer, 0, size);
    ferry_status_t status =
        ferry_tag_recv(x->receiver, &recv_iov, 1, tag, UINT64_MAX, &tag_info, &recv_comp);
    if (status == FERRY_OK)
        recv_comp.count = 0;
    else if (status != FERRY_INPROGRESS)
        return status;
    do {
        status = ferry_tag_send(x->ep, &send_iov, 1, tag, &send_comp);
        if (status == FERRY_ERR_NO_RESOURCE) {
            ferry_worker_progress(x->sender);
            ferry_worker_progress(x->receiver);
        }
    } while (status == FERRY_ERR_NO_RESOURCE);
    if (status == FERRY_OK)
        send_comp.count = 0;
    else if (status != FERRY_INPROGRESS)
        return status;
    if (!info_progress_until(x, &send_comp) || !info_progress_until(x, &recv_comp))
        return FERRY_ERR_TIMED_OUT;
    if (send_comp.status != FERRY_OK)
        return send_comp.status;
    if (recv_comp.status != FERRY_OK)
        return recv_comp.status;
    if (memcmp(x->send_buffer, x->recv_buffer, size) != 0)
        return FERRY_ERR_PROTOCOL;
    return FERRY_OK;
}

static void info_counters_print(info_t *info, const char *name, ferry_worker_t *worker)
{
    ferry_counters_t counters = {.size = sizeof(counters)};
    static char text[16384];

    if (ferry_worker_counters(worker, &counters) != FERRY_OK)
        return;
    if (info->json_mode) {
        info_json_object_begin(&info->json, name);
        info_json_uint(&info->json, "tag_sent", counters.tag.sent);
        info_json_uint(&info->json, "tag_sent_bytes", counters.tag.sent_bytes);
        info_json_uint(&info->json, "tag_received", counters.tag.received);
        info_json_uint(&info->json, "tag_received_bytes", counters.tag.received_bytes);
        info_json_uint(&info->json, "no_resource", counters.no_resource);
        info_json_uint(&info->json, "connections_made", counters.connections_made);
        info_json_uint(&info->json, "connections_lost", counters.connections_lost);
        ferry_counters_format(&counters, text, sizeof(text));
        info_json_string(&info->json, "text", text);
        info_json_object_end(&info->json);
        return;
    }
    ferry_counters_format(&counters, text, sizeof(text));
    printf("counters of the %s:\n%s", name, text);
}

int info_show_counters(info_t *info)
{
    ferry_status_t status;
    info_exchange_t x = {0};
    const void *address;
    size_t length;
    const char *step = "ferry_context_create";
    size_t largest = info_sizes[sizeof(info_sizes) / sizeof(info_sizes[0]) - 1];
    ferry_context_t *context = info_context(info, &status);

    if (context == NULL)
        goto out_report;
    step = "ferry_worker_create";
    status = ferry_worker_create(context, NULL, &x.sender);
    if (status != FERRY_OK)
        goto out_report;
    status = ferry_worker_create(context, NULL, &x.receiver);
    if (status != FERRY_OK)
        goto out_destroy_sender;
    step = "ferry_worker_address";
    status = ferry_worker_address(x.receiver, &address, &length);
    if (status != FERRY_OK)
        goto out_destroy_receiver;
    step = "ferry_ep_create";
    status = ferry_ep_create(x.sender, address, length, NULL, &x.ep);
    if (status != FERRY_OK)
        goto out_destroy_receiver;
    step = "malloc";
    status = FERRY_ERR_NO_MEMORY;
    x.send_buffer = malloc(largest);
    x.recv_buffer = malloc(largest);
    if (x.send_buffer == NULL || x.recv_buffer == NULL)
        goto out_free_buffers;
    step = "ferry_tag_send (8 B)";
    for (unsigned i = 0; i < INFO_SMALL_COUNT; i++) {
        status = info_send_one(&x, info_sizes[0], i);
        if (status != FERRY_OK)
            goto out_free_buffers;
    }
    for (size_t s = 1; s < sizeof(info_sizes) / sizeof(info_sizes[0]); s++) {
        step = "ferry_tag_send (a larger message)";
        status = info_send_one(&x, info_sizes[s], INFO_SMALL_COUNT + s);
        if (status != FERRY_OK)
            goto out_free_buffers;
    }
    if (info->json_mode) {
        info_json_object_begin(&info->json, "counters");
        info_json_string(&info->json, "transport", ferry_ep_transport_name(x.ep));
    } else {
        printf("exchange: %u tagged messages of 8 B, one of 64 KiB and one of 4 MiB between two "
               "workers of this process over %s (every byte checked)\n",
               INFO_SMALL_COUNT, ferry_ep_transport_name(x.ep));
    }
    info_counters_print(info, "sender", x.sender);
    info_counters_print(info, "receiver", x.receiver);
    if (info->json_mode)
        info_json_object_end(&info->json);

out_free_buffers:
    free(x.recv_buffer);
    free(x.send_buffer);
    ferry_ep_destroy(x.ep);
out_destroy_receiver:
    ferry_worker_destroy(x.receiver);
out_destroy_sender:
    ferry_worker_destroy(x.sender);
out_report:
    if (status == FERRY_OK)
        return 0;
    if (info->json_mode) {
        info_json_object_begin(&info->json, "counters");
        info_json_bool(&info->json, "ok", false);
        info_json_string(&info->json, "error", ferry_status_name(status));
        info_json_object_end(&info->json);
    }
    fprintf(stderr, "ferry_info: -x: %s failed: %s (%s)\n", step, ferry_status_string(status),
            ferry_status_name(status));
    return 1;
}
