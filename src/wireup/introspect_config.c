/* The public introspection API, configuration part (include/ferry/info.h): the registered
 * FERRY_* variables (src/core/config.h), their declarations and the values in effect. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ferry/info.h>

#include "core/compiler.h"
#include "core/config.h"
#include "core/log.h"
#include "wireup/context.h"
#include "wireup/introspect.h"

/* The size of the first version of ferry_config_info_t (frozen; see introspect.c). */
enum { INTROSPECT_CONFIG_SIZE_V1 = offsetof(ferry_config_info_t, process_wide) };

FERRY_EXPORT size_t ferry_config_count(void)
{
    const fy_config_var_t *const *vars;
    return fy_config_vars(&vars);
}

/* Fill the caller's info from var: its declaration and the value in effect with the
 * settings of set (a context's; NULL: the environment alone). */
static void introspect_config_fill(const fy_config_set_t *set, const fy_config_var_t *var,
                                   ferry_config_info_t *info)
{
    ferry_config_info_t filled;
    const char *env = getenv(var->name);
    const char *mine = fy_config_set_value(set, var);

    memset(&filled, 0, sizeof(filled));
    filled.name = var->name;
    filled.type = var->type;
    filled.default_value = var->default_value != NULL ? var->default_value : "";
    filled.description = var->description != NULL ? var->description : "";
    filled.from_environment = env != NULL && env[0] != '\0';
    snprintf(filled.environment, sizeof(filled.environment), "%s",
             filled.from_environment ? env : "");
    filled.process_wide = (var->flags & FY_CONFIG_PROCESS) != 0;
    filled.from_context = mine != NULL;
    snprintf(filled.context_value, sizeof(filled.context_value), "%s", mine != NULL ? mine : "");
    switch (var->type) {
    case FERRY_CONFIG_BOOL:
        filled.value_bool = fy_config_bool_in(set, var);
        snprintf(filled.value, sizeof(filled.value), "%s", filled.value_bool ? "yes" : "no");
        break;
    case FERRY_CONFIG_INT:
        filled.value_int = fy_config_int_in(set, var);
        snprintf(filled.value, sizeof(filled.value), "%" PRId64, filled.value_int);
        break;
    case FERRY_CONFIG_SIZE:
        filled.value_size = fy_config_size_in(set, var);
        snprintf(filled.value, sizeof(filled.value), "%" PRIu64, filled.value_size);
        break;
    case FERRY_CONFIG_STRING:
        snprintf(filled.value, sizeof(filled.value), "%s", fy_config_string_in(set, var));
        break;
    }
    fy_info_copy_out(info, &filled, sizeof(filled));
}

FERRY_EXPORT ferry_status_t ferry_config_query(size_t index, ferry_config_info_t *info)
{
    const fy_config_var_t *const *vars;
    size_t count = fy_config_vars(&vars);

    if (!fy_info_struct_ok("ferry_config_query", "ferry_config_info_t", info,
                           INTROSPECT_CONFIG_SIZE_V1))
        return FERRY_ERR_INVALID_PARAM;
    if (index >= count) {
        fy_warn("ferry_config_query: variable index %zu, %zu variables are registered", index,
                count);
        return FERRY_ERR_OUT_OF_RANGE;
    }
    introspect_config_fill(NULL, vars[index], info);
    return FERRY_OK;
}

/* ferry_config_lookup and ferry_context_config_lookup: set is the context's, or NULL. */
static ferry_status_t introspect_config_lookup(const char *call, const fy_config_set_t *set,
                                               const char *name, ferry_config_info_t *info)
{
    if (name == NULL) {
        fy_warn("%s: name is NULL", call);
        return FERRY_ERR_INVALID_PARAM;
    }
    if (!fy_info_struct_ok(call, "ferry_config_info_t", info, INTROSPECT_CONFIG_SIZE_V1))
        return FERRY_ERR_INVALID_PARAM;
    const fy_config_var_t *var = fy_config_find(name, strlen(name));
    if (var == NULL)
        return FERRY_ERR_NO_ELEM; /* an answer, not an error: nothing logged */
    introspect_config_fill(set, var, info);
    return FERRY_OK;
}

FERRY_EXPORT ferry_status_t ferry_config_lookup(const char *name, ferry_config_info_t *info)
{
    return introspect_config_lookup("ferry_config_lookup", NULL, name, info);
}

FERRY_EXPORT ferry_status_t ferry_context_config_lookup(const ferry_context_t *context,
                                                        const char *name, ferry_config_info_t *info)
{
    if (context == NULL) {
        fy_warn("ferry_context_config_lookup: context is NULL");
        return FERRY_ERR_INVALID_PARAM;
    }
    return introspect_config_lookup("ferry_context_config_lookup", &context->config, name, info);
}

FERRY_EXPORT ferry_status_t ferry_config_closest(const char *word, const char **closest_p)
{
    const fy_config_var_t *const *vars;
    size_t count = fy_config_vars(&vars);
    const char *names[64];
    const char **list = names;
    const char *closest;

    if (word == NULL || closest_p == NULL) {
        fy_warn("ferry_config_closest: %s is NULL", word == NULL ? "word" : "closest_p");
        return FERRY_ERR_INVALID_PARAM;
    }
    if (count > FERRY_ARRAY_SIZE(names)) {
        list = malloc(count * sizeof(*list));
        if (list == NULL) {
            fy_error("ferry_config_closest: malloc(%zu) for %zu names failed",
                     count * sizeof(*list), count);
            return FERRY_ERR_NO_MEMORY;
        }
    }
    for (size_t i = 0; i < count; i++)
        list[i] = vars[i]->name;
    closest = fy_closest_name(word, list, count);
    if (list != names)
        free(list);
    if (closest == NULL)
        return FERRY_ERR_NO_ELEM;
    *closest_p = closest;
    return FERRY_OK;
}
