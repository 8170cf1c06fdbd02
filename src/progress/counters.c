/* Reading, summing and printing counters (include/ferry/counters.h). */
#define _GNU_SOURCE
#include "progress/counters.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/compiler.h"
#include "core/config.h"
#include "core/log.h"
#include "progress/worker.h"
#include "wireup/ep.h"

static const fy_config_var_t counters_stats_var = {
    .name = "FERRY_STATS",
    .type = FERRY_CONFIG_BOOL,
    .default_value = "off",
    .description = "on: print each worker's counters (messages and bytes by protocol and "
                   "transport, rendezvous modes by size, retries, errors, connections) to "
                   "stderr when it is destroyed"};
static const fy_config_var_t *const counters_stats_reg
    __attribute__((used, section("ferry_config_registry"))) = &counters_stats_var;

/* Everything after the size member is a uint64_t: the sums walk them as one array. */
#define COUNTERS_FIRST offsetof(ferry_counters_t, am)
#define COUNTERS_WORDS ((sizeof(ferry_counters_t) - COUNTERS_FIRST) / sizeof(uint64_t))
_Static_assert((sizeof(ferry_counters_t) - offsetof(ferry_counters_t, am)) % sizeof(uint64_t) == 0,
               "the counters are 64-bit words after size");

void fy_counters_add(ferry_counters_t *into, const ferry_counters_t *from)
{
    uint64_t *a = (uint64_t *)((char *)into + COUNTERS_FIRST);
    const uint64_t *b = (const uint64_t *)((const char *)from + COUNTERS_FIRST);
    for (size_t i = 0; i < COUNTERS_WORDS; i++)
        a[i] += b[i];
}

static ferry_status_t counters_check(const ferry_counters_t *counters, const char *call)
{
    if (counters == NULL || counters->size < sizeof(ferry_counters_t)) {
        fy_warn("%s: counters %s (set counters->size = sizeof(ferry_counters_t))", call,
                counters == NULL ? "is NULL" : "has a size smaller than this version's");
        return FERRY_ERR_INVALID_PARAM;
    }
    return FERRY_OK;
}

static inline ferry_status_t locked_worker_counters(ferry_worker_t *worker,
                                                    ferry_counters_t *counters)
{
    if (worker != NULL && fy_worker_forked(worker))
        return FERRY_ERR_FORKED;
    if (worker == NULL)
        return FERRY_ERR_INVALID_PARAM;
    ferry_status_t status = counters_check(counters, "ferry_worker_counters");
    if (status != FERRY_OK)
        return status;
    size_t size = counters->size;
    ferry_counters_t sum = worker->retired;
    for (fy_list_link_t *l = fy_list_first(&worker->eps); l != fy_list_end(&worker->eps);
         l = l->next) {
        ferry_counters_t one;
        fy_ep_counters_read(fy_list_entry(l, ferry_ep_t, link), &one);
        fy_counters_add(&sum, &one);
    }
    memset(counters, 0, size);
    sum.size = size;
    memcpy(counters, &sum, sizeof(sum));
    return FERRY_OK;
}

FERRY_EXPORT ferry_status_t ferry_worker_counters(ferry_worker_t *worker,
                                                  ferry_counters_t *counters)
{
    ferry_worker_t *locked = fy_worker_multi(worker);
    if (fy_likely(locked == NULL))
        return locked_worker_counters(worker, counters);
    fy_worker_lock(locked);
    ferry_status_t status_or_value = locked_worker_counters(worker, counters);
    fy_worker_unlock(locked);
    return status_or_value;
}

static inline ferry_status_t locked_ep_counters(const ferry_ep_t *ep, ferry_counters_t *counters)
{
    if (ep != NULL && fy_ep_forked(ep))
        return FERRY_ERR_FORKED;
    if (ep == NULL)
        return FERRY_ERR_INVALID_PARAM;
    ferry_status_t status = counters_check(counters, "ferry_ep_counters");
    if (status != FERRY_OK)
        return status;
    size_t size = counters->size;
    memset(counters, 0, size);
    ferry_counters_t one;
    fy_ep_counters_read(ep, &one);
    memcpy(counters, &one, sizeof(one));
    counters->size = size;
    return FERRY_OK;
}

FERRY_EXPORT ferry_status_t ferry_ep_counters(const ferry_ep_t *ep, ferry_counters_t *counters)
{
    ferry_worker_t *locked = fy_worker_multi(ep != NULL ? ep->worker : NULL);
    if (fy_likely(locked == NULL))
        return locked_ep_counters(ep, counters);
    fy_worker_lock(locked);
    ferry_status_t status_or_value = locked_ep_counters(ep, counters);
    fy_worker_unlock(locked);
    return status_or_value;
}

FERRY_EXPORT unsigned ferry_counters_size_class(uint64_t length)
{
    return fy_counters_size_class(length);
}

/* Append to a text being built: used tracks what the whole text needs. */
static void counters_append(char *buffer, size_t length, size_t *used, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void counters_append(char *buffer, size_t length, size_t *used, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(*used < length ? buffer + *used : NULL, *used < length ? length - *used : 0,
                      fmt, ap);
    va_end(ap);
    if (n > 0)
        *used += (size_t)n;
}

static void counters_traffic(char *buffer, size_t length, size_t *used, const char *name,
                             const ferry_traffic_t *t)
{
    if (t->sent == 0 && t->received == 0)
        return;
    counters_append(buffer, length, used, "  %-14s sent %llu (%llu B), received %llu (%llu B)\n",
                    name, (unsigned long long)t->sent, (unsigned long long)t->sent_bytes,
                    (unsigned long long)t->received, (unsigned long long)t->received_bytes);
}

FERRY_EXPORT size_t ferry_counters_format(const ferry_counters_t *counters, char *buffer,
                                          size_t length)
{
    static const char *const modes[FERRY_COUNTERS_MODES] = {"eager", "get",  "put",
                                                            "coop",  "null", "split"};
    size_t used = 0;
    if (buffer != NULL && length > 0)
        buffer[0] = '\0';
    if (counters == NULL || counters->size < sizeof(ferry_counters_t))
        return 0;
    counters_traffic(buffer, length, &used, "active messages", &counters->am);
    counters_traffic(buffer, length, &used, "tagged", &counters->tag);
    counters_traffic(buffer, length, &used, "one-sided", &counters->rma);
    for (unsigned t = 0; t < FERRY_COUNTERS_TRANSPORTS; t++) {
        char name[32];
        snprintf(name, sizeof(name), "transport %s",
                 t < fy_transports_count ? fy_transports[t]->name : "?");
        counters_traffic(buffer, length, &used, name, &counters->transport[t]);
    }
    for (unsigned c = 0; c < FERRY_COUNTERS_SIZE_CLASSES; c++) {
        bool any = false;
        for (unsigned m = 0; m < FERRY_COUNTERS_MODES; m++)
            any |= counters->tag_modes[c][m] != 0;
        if (!any)
            continue;
        if (c == 0)
            counters_append(buffer, length, &used, "  tagged of 0 B:");
        else if (c == FERRY_COUNTERS_SIZE_CLASSES - 1)
            counters_append(buffer, length, &used, "  tagged of %llu B or more:", 1ull << (c - 1));
        else
            counters_append(buffer, length, &used, "  tagged of %llu..%llu B:", 1ull << (c - 1),
                            (1ull << c) - 1);
        for (unsigned m = 0; m < FERRY_COUNTERS_MODES; m++) {
            if (counters->tag_modes[c][m] != 0)
                counters_append(buffer, length, &used, " %s %llu", modes[m],
                                (unsigned long long)counters->tag_modes[c][m]);
        }
        counters_append(buffer, length, &used, "\n");
    }
    if (counters->no_resource != 0)
        counters_append(buffer, length, &used, "  retries (FERRY_ERR_NO_RESOURCE) %llu\n",
                        (unsigned long long)counters->no_resource);
    for (unsigned s = 1; s < FERRY_COUNTERS_STATUSES; s++) {
        if (counters->errors[s] != 0)
            counters_append(buffer, length, &used, "  %s %llu\n",
                            ferry_status_name(-(ferry_status_t)s),
                            (unsigned long long)counters->errors[s]);
    }
    if (counters->tag_unexpected_peak_count != 0 || counters->tag_flow_limited != 0)
        counters_append(buffer, length, &used,
                        "  unexpected tagged backlog: peak %llu messages, %llu bytes of the "
                        "larger ones; senders restricted %llu times\n",
                        (unsigned long long)counters->tag_unexpected_peak_count,
                        (unsigned long long)counters->tag_unexpected_peak_bytes,
                        (unsigned long long)counters->tag_flow_limited);
    counters_append(buffer, length, &used, "  connections made %llu, lost %llu\n",
                    (unsigned long long)counters->connections_made,
                    (unsigned long long)counters->connections_lost);
    return used;
}

void fy_counters_dump_at_destroy(ferry_worker_t *worker)
{
    if (!fy_config_bool_in(fy_worker_config(worker), &counters_stats_var))
        return;
    ferry_counters_t counters = {.size = sizeof(counters)};
    if (ferry_worker_counters(worker, &counters) != FERRY_OK)
        return;
    char text[8192];
    size_t n = ferry_counters_format(&counters, text, sizeof(text));
    fprintf(stderr, "[ferry %d] counters of worker %016llx (FERRY_STATS):\n%s%s", (int)getpid(),
            (unsigned long long)worker->uuid, text, n >= sizeof(text) ? "  ...\n" : "");
}
