/* Context: configuration check and the choice of enabled transports. */
#define _GNU_SOURCE
#include "wireup/context.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/compiler.h"
#include "core/config.h"
#include "core/copy_bulk.h"
#include "core/log.h"

static const fy_config_var_t context_transports_var = {
    .name = "FERRY_TRANSPORTS",
    .type = FERRY_CONFIG_STRING,
    .default_value = "all",
    .description = "comma-separated transports an endpoint may use (self, shm, tcp), or all"};
static const fy_config_var_t *const context_transports_reg
    __attribute__((used, section("ferry_config_registry"))) = &context_transports_var;

/* Mark the transports named in list (comma-separated, or "all") in allowed[]. Unknown names
 * are warned about with the closest valid one. */
static void context_parse_transports(const char *list, bool allowed[FY_TL_MAX])
{
    const char *names[FY_TL_MAX];
    char *copy, *save = NULL;

    for (size_t i = 0; i < fy_transports_count; i++)
        names[i] = fy_transports[i]->name;
    if (strcmp(list, "all") == 0 || list[0] == '\0') {
        for (size_t i = 0; i < fy_transports_count; i++)
            allowed[i] = true;
        return;
    }
    copy = strdup(list);
    if (copy == NULL)
        return;
    for (char *tok = strtok_r(copy, ", ", &save); tok != NULL; tok = strtok_r(NULL, ", ", &save)) {
        size_t i;
        for (i = 0; i < fy_transports_count; i++) {
            if (strcmp(tok, names[i]) == 0)
                break;
        }
        if (i < fy_transports_count) {
            allowed[i] = true;
            continue;
        }
        const char *closest = fy_closest_name(tok, names, fy_transports_count);
        char known[FY_TL_MAX * 16] = "";
        size_t used = 0;
        for (size_t k = 0; k < fy_transports_count && used < sizeof(known); k++)
            used += (size_t)snprintf(known + used, sizeof(known) - used, "%s%s", k ? ", " : "",
                                     names[k]);
        fy_warn("FERRY_TRANSPORTS names an unknown transport '%s'%s%s%s (known: %s)", tok,
                closest ? "; did you mean '" : "", closest ? closest : "", closest ? "'?" : "",
                known);
    }
    free(copy);
}

FERRY_EXPORT ferry_status_t ferry_context_create(const ferry_context_params_t *params,
                                                 ferry_context_t **context_p)
{
    bool allowed[FY_TL_MAX] = {false};
    ferry_context_t *context;
    ferry_status_t status;
    unsigned enabled = 0;

    if (context_p == NULL)
        return FERRY_ERR_INVALID_PARAM;
    ferry_log_init();
    fy_config_check_environment();
    fy_copy_bulk_init();

    context = calloc(1, sizeof(*context));
    if (context == NULL) {
        fy_error("calloc(%zu) for a context failed", sizeof(*context));
        return FERRY_ERR_NO_MEMORY;
    }
    context->fork_gen = fy_fork_watch();
    pthread_mutex_init(&context->lock, NULL);
    status = fy_config_set_init(&context->config, params != NULL ? params->config : NULL);
    if (status != FERRY_OK)
        goto err_free_context;
    status = fy_host_id_read(&context->host);
    if (status != FERRY_OK)
        goto err_cleanup_config;
    status = mem_context_init(&context->mem, &context->config);
    if (status != FERRY_OK)
        goto err_cleanup_config;

    context_parse_transports(params != NULL && params->transports != NULL
                                 ? params->transports
                                 : fy_config_string_in(&context->config, &context_transports_var),
                             allowed);
    for (size_t i = 0; i < fy_transports_count; i++) {
        char why[256] = "";
        if (!allowed[i])
            continue;
        if (fy_transports[i]->query(&context->config, &context->caps[i], why, sizeof(why)) !=
            FERRY_OK) {
            fy_info("transport %s is not usable here: %s", fy_transports[i]->name, why);
            continue;
        }
        context->enabled[i] = true;
        enabled++;
    }
    if (enabled == 0) {
        fy_error("no usable transport: FERRY_TRANSPORTS allows none that works here "
                 "(run ferry_info -d to see why each one is unusable)");
        status = FERRY_ERR_NO_DEVICE;
        goto err_cleanup_mem;
    }
    *context_p = context;
    return FERRY_OK;

err_cleanup_mem:
    mem_context_cleanup(&context->mem);
err_cleanup_config:
    fy_config_set_cleanup(&context->config);
err_free_context:
    pthread_mutex_destroy(&context->lock);
    free(context);
    return status;
}

FERRY_EXPORT void ferry_context_destroy(ferry_context_t *context)
{
    if (context == NULL || fy_context_forked(context))
        return; /* a forked child's copy: left alone (ferry.h, "fork()") */
    if (context->worker_count != 0)
        fy_error("ferry_context_destroy: %u workers still exist; destroy them first "
                 "(the context is leaked to keep them safe)",
                 context->worker_count);
    else {
        mem_context_cleanup(&context->mem);
        pthread_mutex_destroy(&context->lock);
        fy_config_set_cleanup(&context->config);
        free(context);
    }
}
