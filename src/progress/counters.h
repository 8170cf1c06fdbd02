/* Counting (include/ferry/counters.h): every endpoint has a ferry_counters_t of its own, the
 * worker keeps the sum of the endpoints already freed. The increments below are all a fast
 * path pays: plain adds on the endpoint's own cache lines (one thread per worker). What the
 * endpoint keeps is raw: a message counts on one row only, and fy_ep_counters_read (wireup/ep.h)
 * derives the rest when asked. */
#ifndef FY_PROGRESS_COUNTERS_H
#define FY_PROGRESS_COUNTERS_H

#include <stdint.h>

#include <ferry/counters.h>
#include <ferry/ferry.h>

static inline void fy_count_sent(ferry_traffic_t *t, uint64_t bytes)
{
    t->sent++;
    t->sent_bytes += bytes;
}

static inline void fy_count_received(ferry_traffic_t *t, uint64_t bytes)
{
    t->received++;
    t->received_bytes += bytes;
}

/* ferry_counters_size_class, inline for the fast paths. */
static inline unsigned fy_counters_size_class(uint64_t length)
{
    unsigned c = length == 0 ? 0 : 64u - (unsigned)__builtin_clzll(length); /* 1 + floor(log2) */
    return c < FERRY_COUNTERS_SIZE_CLASSES ? c : FERRY_COUNTERS_SIZE_CLASSES - 1;
}

/* A status returned to the application (or an endpoint's failure): errors by status, retries. */
static inline void fy_count_status(ferry_counters_t *c, ferry_status_t status)
{
    if (status == FERRY_ERR_NO_RESOURCE)
        c->no_resource++;
    else if (status < 0 && -status < FERRY_COUNTERS_STATUSES)
        c->errors[-status]++;
}

/* Add every counter of from to into (the size members are left alone). */
void fy_counters_add(ferry_counters_t *into, const ferry_counters_t *from);

/* FERRY_STATS=1: print the worker's counters to stderr (ferry_worker_destroy). */
void fy_counters_dump_at_destroy(ferry_worker_t *worker);

#endif
