/* The context: configuration and the enabled transports. */
#ifndef FERRY_WIREUP_CONTEXT_H
#define FERRY_WIREUP_CONTEXT_H

#include <stdbool.h>

#include <ferry/ferry.h>

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
    mem_context_t mem; /* registrations and the key table peers map */
    unsigned fork_gen; /* fy_fork_watch() at creation: another value means a forked child */
};

/* Whether this context is a forked child's copy of its parent's (core/fork.h). */
static inline bool fy_context_forked(const ferry_context_t *context)
{
    return fy_forked(context->fork_gen);
}

#endif
