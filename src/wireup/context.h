/* The context: configuration and the enabled transports. */
#ifndef FERRY_WIREUP_CONTEXT_H
#define FERRY_WIREUP_CONTEXT_H

#include <stdbool.h>

#include <ferry/ferry.h>

#include "core/config.h"
#include "mem/mem.h"
#include "transport/transport.h"
#include "wireup/address.h"

struct ferry_context {
    fy_host_id_t host;
    /* enabled[i]: fy_transports[i] is allowed by FERRY_TRANSPORTS and usable here */
    bool enabled[FY_TL_MAX];
    fy_tl_caps_t caps[FY_TL_MAX];
    unsigned worker_count;
    mem_context_t mem;      /* registrations and the key table peers map */
    fy_config_set_t config; /* the program's settings for this context (they win over the
                             * environment): read tunables with fy_config_*_in(&config, ...) */
};

#endif
