/* Protocol modules: how the worker and the endpoints reach the protocols without naming them.
 *
 * A protocol (one-sided operations, tagged messages, named segments) fills one fy_module_ops_t
 * and is listed once in proto/module_list.c; its index there is its module id (FY_MODULE_*,
 * proto/module_list.h). The worker (progress/worker.c) and the endpoint layer (wireup/ep.c) loop
 * over that list; a module's per-worker and per-endpoint state is reached with
 * fy_worker_module_state / fy_ep_module_state, not through fields named for it.
 *
 * Order: every slot is called for every module in list order, so a module is listed after the
 * modules it uses (tagged messages and segments use one-sided operations): what it started
 * on a lower module is failed or cancelled by the time its own slot runs.
 *
 * Threading: called by the thread that progresses the worker, never concurrently. */
#ifndef FY_PROGRESS_MODULE_H
#define FY_PROGRESS_MODULE_H

#include <stdbool.h>
#include <stddef.h>

#include <ferry/ferry.h>

#define FY_MODULE_MAX 8 /* at most this many modules in the list */

typedef struct fy_module_ops {
    const char *name; /* for logs */

    /* Bytes of per-endpoint state, zeroed when the endpoint is created and kept beside it
     * until it is freed (fy_ep_module_state). 0: none. */
    size_t ep_state_size;

    /* Set up the module for a new worker: allocate its per-worker state (*state_p, reached
     * later with fy_worker_module_state) and register its active-message handlers. The worker's
     * transports are up. Returns FERRY_OK or FERRY_ERR_NO_MEMORY (logged). Not NULL. */
    ferry_status_t (*init)(ferry_worker_t *worker, void **state_p);

    /* Free the per-worker state. Every endpoint was freed and the deferred calls ran before;
     * modules are cleaned up in list order, then the transports are finalized. Never fails.
     * Not NULL. */
    void (*cleanup)(ferry_worker_t *worker);

    /* Move on work that waits for something no transport will signal (room that appeared,
     * timeouts). Called by ferry_worker_progress only while the module's bit is set
     * (fy_worker_module_progress_set). Never blocks. Returns the events handled. May be NULL
     * (the module never sets its bit). */
    unsigned (*progress)(ferry_worker_t *worker);

    /* Before the worker sleeps: true when the module has work that only its progress slot
     * would move on (the worker must not sleep). May be NULL (never). */
    bool (*busy)(ferry_worker_t *worker);

    /* A new endpoint (created or accepted), after its state was zeroed. Never fails. May be
     * NULL. */
    void (*ep_init)(ferry_ep_t *ep);

    /* The endpoint stopped carrying traffic: it failed (status), the peer closed it
     * (FERRY_ERR_ENDPOINT_CLOSED), a graceful local close finished (FERRY_ERR_ENDPOINT_CLOSED)
     * or a forced one ran (FERRY_ERR_CANCELED). Operations waiting on it complete with status
     * (from progress); events the user asked for are queued. Called once per endpoint. May
     * be NULL. */
    void (*ep_stop)(ferry_ep_t *ep, ferry_status_t status);

    /* Fill the module's fields of ferry_ep_query's answer (tagged messages: their inject bound).
     * Pure. May be NULL. */
    void (*ep_query)(const ferry_ep_t *ep, ferry_ep_attr_t *attr);

    /* The endpoint is about to be freed (ferry_ep_destroy, an accepted endpoint after its
     * error callback, worker destruction): nothing may refer to it afterwards. ep_stop may not
     * have run (an open endpoint destroyed). No events. May be NULL. */
    void (*ep_free)(ferry_ep_t *ep);
} fy_module_ops_t;

/* The one list of modules (proto/module_list.c), in the order above. */
extern const fy_module_ops_t *const fy_modules[];
extern const size_t fy_modules_count;

#endif
