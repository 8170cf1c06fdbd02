/* The context: configuration and the enabled transports. */
#ifndef FERRY_WIREUP_CONTEXT_H
#define FERRY_WIREUP_CONTEXT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include <ferry/ferry.h>

#include "core/config.h"
#include "core/fork.h"
#include "mem/mem.h"
#include "transport/transport.h"
#include "wireup/address.h"

struct ferry_context {
    fy_host_id_t host;
    /* enabled[i]: fy_transports[i] is allowed by FERRY_TRANSPORTS and usable here */
    bool enabled[FY_TL_MAX];
    fy_tl_caps_t caps[FY_TL_MAX];
    unsigned worker_count;
    atomic_uint multi_workers; /* FERRY_THREAD_MULTI workers: registrations take lock */
    pthread_mutex_t lock;      /* serializes ferry_mem_* and ferry_rkey_pack then */
    unsigned fork_gen;         /* fy_fork_watch() at creation: another value means a forked child */
    mem_context_t mem;         /* registrations and the key table peers map */
    fy_config_set_t config;    /* the program's settings for this context (they win over the
                                * environment): read tunables with fy_config_*_in(&config, ...) */
};

/* The context to lock for a registration call, or NULL: no multi-thread worker (one load), or
 * a forked child's copy. Pass the result to fy_context_unlock. */
static inline ferry_context_t *fy_context_lock(ferry_context_t *context)
{
    if (__builtin_expect(context == NULL || atomic_load_explicit(&context->multi_workers,
                                                                 memory_order_relaxed) == 0,
                         1) ||
        fy_forked(context->fork_gen))
        return NULL;
    pthread_mutex_lock(&context->lock);
    return context;
}

static inline void fy_context_unlock(ferry_context_t *locked)
{
    if (locked != NULL)
        pthread_mutex_unlock(&locked->lock);
}

/* Whether this context is a forked child's copy of its parent's (core/fork.h). */
static inline bool fy_context_forked(const ferry_context_t *context)
{
    return fy_forked(context->fork_gen);
}

#endif
