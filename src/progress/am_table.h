/* A worker's active-message handler table, as ferry's own protocols use it. (Delivery, the
 * transports' side, is declared in transport/transport.h.) */
#ifndef FY_PROGRESS_AM_TABLE_H
#define FY_PROGRESS_AM_TABLE_H

#include <ferry/ferry.h>

#include "progress/worker.h"

/* Handlers of ferry's own ids (FERRY_AM_ID_MAX..FY_AM_ID_ALL-1: proto/am_ids.h); the public
 * ferry_am_set_handler refuses those ids. A new handler drops the id's placement (it belonged
 * to the handler it replaces, and is called with the new handler's arg). Returns FERRY_OK or
 * FERRY_ERR_INVALID_PARAM. */
ferry_status_t fy_am_set_internal_handler(ferry_worker_t *worker, unsigned id,
                                          ferry_am_handler_cb_t cb, void *arg);

/* Let the handler of an internal id choose where a large payload goes before it arrives
 * (fy_am_place in transport.h). Returns FERRY_OK or FERRY_ERR_INVALID_PARAM. */
ferry_status_t fy_am_set_internal_place(ferry_worker_t *worker, unsigned id,
                                        fy_am_place_cb_t place);

#endif
