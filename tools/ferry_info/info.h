/* ferry_info: what ferry sees on this host. Shared state of its sections (see
 * docs/ferry_info.md for the output). Everything comes from the public API
 * (include/ferry/info.h and ferry.h, bootstrap.h): nothing from src/. */
#ifndef FERRY_INFO_TOOL_H
#define FERRY_INFO_TOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ferry/ferry.h>
#include <ferry/info.h>

#include "info_json.h"

typedef struct info {
    bool json_mode; /* --json: everything goes to stdout as one JSON object */
    bool compact;   /* --compact: -a writes the compact address (FERRY_ADDRESS_COMPACT_SIZE) */
    uint8_t compact_address[FERRY_ADDRESS_COMPACT_SIZE];
    /* -s NAME=value: the settings of the shared context (ferry_context_params_t.config),
     * NULL-terminated; -c then shows that context's values */
    const char **settings;
    size_t settings_count;
    info_json_t json; /* the writer, when json_mode */
    /* One context and one worker, created on first use by -d, -a and -e, and shared (so that
     * "-a FILE -e FILE" checks the address of the very worker it wrote). */
    bool context_tried;
    ferry_status_t context_status;
    ferry_context_t *context;
    bool worker_tried;
    ferry_status_t worker_status;
    ferry_worker_t *worker;
} info_t;

/* The shared context (created on first call); NULL when creation failed (*status_p says why). */
ferry_context_t *info_context(info_t *info, ferry_status_t *status_p);
/* The shared worker (created on first call, with the context); NULL when that failed. */
ferry_worker_t *info_worker(info_t *info, ferry_status_t *status_p);
/* The shared worker's address (blob and decoded header); false when there is no worker. */
bool info_worker_address(info_t *info, const void **address_p, size_t *length_p,
                         ferry_address_info_t *decoded);

/* The sections. Each returns 0 on success, 1 when what was asked could not be done (the
 * reason is printed). */
int info_show_version(info_t *info);
int info_show_transports(info_t *info);
int info_show_config(info_t *info);
int info_show_counters(info_t *info); /* -x: a known exchange, then both workers' counters */
int info_write_address(info_t *info, const char *path);
int info_show_endpoint(info_t *info, const char *path);

/* Helpers shared by the sections. */
const char *info_transports_setting(void); /* the FERRY_TRANSPORTS value in effect */
/* Call fn(name, arg) for each capability bit in flags (ferry_transport_cap_name; unknown bits
 * as "0x.."). */
void info_flags_each(unsigned flags, void (*fn)(const char *name, void *arg), void *arg);
/* "AM AM_ORDERED ..." into buffer ("none" for no bit). */
void info_flags_string(unsigned flags, char *buffer, size_t length);
/* "%016" PRIx64 of a worker id into buffer (at least 17 bytes). */
void info_id_text(uint64_t id, char *buffer, size_t length);
/* A record's fields as JSON members: decimal values as numbers, others as strings. */
void info_fields_json(info_json_t *json, const ferry_address_record_info_t *record);

#endif
