/* ferry_info: what ferry sees on this host. Shared state of its sections (see
 * docs/ferry_info.md for the output). */
#ifndef FERRY_INFO_TOOL_H
#define FERRY_INFO_TOOL_H

#include <stdbool.h>

#include <ferry/ferry.h>

#include "info_json.h"

typedef struct info {
    bool json_mode;   /* --json: everything goes to stdout as one JSON object */
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

/* The sections. Each returns 0 on success, 1 when what was asked could not be done (the
 * reason is printed). */
int info_show_version(info_t *info);
int info_show_transports(info_t *info);
int info_show_config(info_t *info);
int info_write_address(info_t *info, const char *path);
int info_show_endpoint(info_t *info, const char *path);

/* Helpers shared by the sections. */
const char *info_transports_setting(void); /* the FERRY_TRANSPORTS value in effect */
/* "AM AM_ORDERED ..." into buffer (unknown bits as 0x..). */
void info_flags_string(unsigned flags, char *buffer, size_t length);
/* Call fn(name, arg) for each capability flag name in flags (unknown bits as "0x.."). */
void info_flags_each(unsigned flags, void (*fn)(const char *name, void *arg), void *arg);

#endif
