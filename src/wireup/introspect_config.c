/* The public introspection API, configuration part (include/ferry/info.h): the registered
 * FERRY_* variables (src/core/config.h), their declarations and the values in effect. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ferry/info.h>

#include "core/compiler.h"
#include "core/config.h"
#include "core/log.h"
#include "wireup/introspect.h"

/* The size of the first version of ferry_config_info_t (frozen; see introspect.c). */
enum { INTROSPECT_CONFIG_SIZE_V1 = sizeof(ferry_config_info_t) };

FERRY_EXPORT size_t ferry_config_count(void)
{
    const fy_config_var_t *const *vars;
    return fy_config_vars(&vars);
}

/* Fill the caller's info from var: its declaration and the value in effect. */
static void introspect_config_fill(const fy_config_var_t *var, ferry_config_info_t *info)
{
    ferry_config_info_t filled;
    const char *env = getenv(var->name);

    memset(&filled, 0, sizeof(filled));
    filled.name = var->name;
    filled.type = var->type;
    filled.default_value = var->default_value != NULL ? var->default_value : "";
    filled.description = var->description != NULL ? var->description : "";
    filled.from_environment = env != NULL && env[0] != '\0';
    snprintf(filled.environment, sizeof(filled.environment), "%s",
             filled.from_environment ? env : "");
    switch (var->type) {
    case FERRY_CONFIG_BOOL:
        filled.value_bool = ferry_config_bool(var);
        snprintf(filled.value, sizeof(filled.value), "%s", filled.value_bool ? "yes" : "no");
        break;
    case FERRY_CONFIG_INT:
        filled.value_int = ferry_config_int(var);
        snprintf(filled.value, sizeof(filled.value), "%" PRId64, filled.value_int);
        break;
    case FERRY_CONFIG_SIZE:
        filled.value_size = ferry_config_size(var);
        snprintf(filled.value, sizeof(filled.value), "%" PRIu64, filled.value_size);
        break;
    case FERRY_CONFIG_STRING:
        snprintf(filled.value, sizeof(filled.value), "%s", ferry_config_string(var));
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
    introspect_config_fill(vars[index], info);
    return FERRY_OK;
}

FERRY_EXPORT ferry_status_t ferry_config_lookup(const char *name, ferry_config_info_t *info)
{
    const fy_config_var_t *const *vars;
    size_t count = fy_config_vars(&vars);

    if (name == NULL) {
        fy_warn("ferry_config_lookup: name is NULL");
        return FERRY_ERR_INVALID_PARAM;
    }
    if (!fy_info_struct_ok("ferry_config_lookup", "ferry_config_info_t", info,
                           INTROSPECT_CONFIG_SIZE_V1))
        return FERRY_ERR_INVALID_PARAM;
    for (size_t i = 0; i < count; i++) {
        if (strcmp(vars[i]->name, name) == 0) {
            introspect_config_fill(vars[i], info);
            return FERRY_OK;
        }
    }
    return FERRY_ERR_NO_ELEM; /* an answer, not an error: nothing logged */
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
