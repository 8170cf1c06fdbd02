/* ferry_info -c: every registered configuration variable (ferry_config_query: libferry's and,
 * as ferry_info links it, libferry_bootstrap's) with its value in effect, type, default and
 * meaning; then the FERRY_* names of the environment that are not ferry variables. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "info.h"

extern char **environ;

static void info_config_value_json(info_t *info, const ferry_config_info_t *var)
{
    switch (var->type) {
    case FERRY_CONFIG_BOOL:
        info_json_bool(&info->json, "value", var->value_bool);
        return;
    case FERRY_CONFIG_INT:
        info_json_int(&info->json, "value", var->value_int);
        return;
    case FERRY_CONFIG_SIZE:
        info_json_uint(&info->json, "value", var->value_size);
        return;
    case FERRY_CONFIG_STRING:
        info_json_string(&info->json, "value", var->value);
        return;
    }
    info_json_null(&info->json, "value");
}

/* FERRY_* environment variables that are not registered (the library warns about them too). */
static void info_config_unknown(info_t *info)
{
    static const char prefix[] = "FERRY_";
    bool any = false;

    if (info->json_mode)
        info_json_array_begin(&info->json, "unknown");
    for (char **env = environ; env != NULL && *env != NULL; env++) {
        const char *entry = *env;
        if (strncasecmp(entry, prefix, sizeof(prefix) - 1) != 0)
            continue;
        const char *equal = strchr(entry, '=');
        char *name = strndup(entry, equal != NULL ? (size_t)(equal - entry) : strlen(entry));
        if (name == NULL)
            continue;
        ferry_config_info_t var = {.size = sizeof(var)};
        const char *closest = NULL;
        if (ferry_config_lookup(name, &var) == FERRY_OK) {
            free(name);
            continue;
        }
        if (ferry_config_closest(name, &closest) != FERRY_OK)
            closest = NULL;
        if (info->json_mode) {
            info_json_object_begin(&info->json, NULL);
            info_json_string(&info->json, "name", name);
            info_json_string(&info->json, "did_you_mean", closest);
            info_json_object_end(&info->json);
        } else {
            if (!any)
                printf("set in the environment but not ferry variables:\n");
            printf("  %s%s%s%s\n", name, closest ? " (did you mean " : "", closest ? closest : "",
                   closest ? "?)" : "");
        }
        any = true;
        free(name);
    }
    if (info->json_mode)
        info_json_array_end(&info->json);
}

int info_show_config(info_t *info)
{
    size_t count = ferry_config_count();
    ferry_context_t *context = NULL;

    if (info->settings_count > 0) { /* -s: the values of a context with these settings */
        ferry_status_t status;
        context = info_context(info, &status);
        if (context == NULL) {
            fprintf(stderr, "ferry_info: -c with -s: the context was refused: %s (%s)\n",
                    ferry_status_string(status), ferry_status_name(status));
            return 1;
        }
    }
    if (info->json_mode) {
        info_json_object_begin(&info->json, "config");
        info_json_array_begin(&info->json, "variables");
    } else {
        printf("configuration (%zu variables; value in effect, from %sthe environment or the "
               "default):\n",
               count, context != NULL ? "this context's settings (-s), " : "");
    }
    for (size_t i = 0; i < count; i++) {
        ferry_config_info_t var = {.size = sizeof(var)};
        if (ferry_config_query(i, &var) != FERRY_OK)
            continue; /* cannot be: the index is in range (the warning says otherwise) */
        if (context != NULL && ferry_context_config_lookup(context, var.name, &var) != FERRY_OK)
            continue; /* cannot be: the name is registered */
        const char *type = ferry_config_type_name(var.type);
        const char *source = var.from_context       ? "context"
                             : var.from_environment ? "environment"
                                                    : "default";
        if (info->json_mode) {
            info_json_object_begin(&info->json, NULL);
            info_json_string(&info->json, "name", var.name);
            info_json_string(&info->json, "type", type);
            info_json_string(&info->json, "default", var.default_value);
            info_json_string(&info->json, "environment",
                             var.from_environment ? var.environment : NULL);
            info_config_value_json(info, &var);
            info_json_string(&info->json, "source", source);
            info_json_string(&info->json, "description", var.description);
            info_json_object_end(&info->json);
        } else {
            if (var.type == FERRY_CONFIG_STRING)
                printf("  %s = \"%s\"\n", var.name, var.value);
            else
                printf("  %s = %s\n", var.name, var.value);
            printf("      %s, default \"%s\", %s\n", type, var.default_value,
                   var.from_context       ? "set for this context (-s)"
                   : var.from_environment ? "set in the environment"
                                          : "not set");
            if (var.from_environment && strcmp(var.environment, var.value) != 0)
                printf("      environment: \"%s\"\n", var.environment);
            printf("      %s\n", var.description);
        }
    }
    if (info->json_mode)
        info_json_array_end(&info->json);
    info_config_unknown(info);
    if (info->json_mode)
        info_json_object_end(&info->json);
    return 0;
}
