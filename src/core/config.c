/* Configuration registry and typed values (see config.h).
 *
 * Parsing: surrounding blanks are ignored; an empty value counts as unset (the default is
 * used, without a warning). A value that does not parse is warned about once per variable per
 * process and the default is used. A default that does not parse is a bug in ferry: it is
 * logged once as an error and the value is false / 0 / "". */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "core/config.h"

#include <ctype.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/compiler.h"
#include "core/log.h"

extern char **environ;

/* Bounds of the "ferry_config_registry" linker section (the registry). Weak so that a link
 * without any registered variable still succeeds (both are then NULL); hidden so that
 * libferry.so sees its own section, not the executable's. */
extern const fy_config_var_t *const __start_ferry_config_registry[]
    __attribute__((weak, visibility("hidden")));
extern const fy_config_var_t *const __stop_ferry_config_registry[]
    __attribute__((weak, visibility("hidden")));

/* ---------------------------------------------------------------- warn once */

typedef enum config_once_kind {
    CONFIG_ONCE_BAD_VALUE,
    CONFIG_ONCE_BAD_DEFAULT,
    CONFIG_ONCE_WRONG_TYPE,
    CONFIG_ONCE_UNKNOWN_NAME,
} config_once_kind_t;

typedef struct config_once_entry {
    struct config_once_entry *next;
    config_once_kind_t kind;
    char name[]; /* NUL-terminated */
} config_once_entry_t;

/* Every (kind, name) already reported by this process; freed when ferry is unloaded
 * (config_unload). */
static config_once_entry_t *config_once_list;
static pthread_mutex_t config_once_lock = PTHREAD_MUTEX_INITIALIZER;

/* True the first time (kind, name[0..len)) is seen in this process. */
static bool config_first_time(config_once_kind_t kind, const char *name, size_t len)
{
    bool first = true;

    pthread_mutex_lock(&config_once_lock);
    for (const config_once_entry_t *e = config_once_list; e != NULL; e = e->next) {
        if (e->kind == kind && strncmp(e->name, name, len) == 0 && e->name[len] == '\0') {
            first = false;
            break;
        }
    }
    if (first) {
        config_once_entry_t *e = malloc(sizeof(*e) + len + 1);
        if (e != NULL) { /* without memory, the next call warns again: harmless */
            e->kind = kind;
            memcpy(e->name, name, len);
            e->name[len] = '\0';
            e->next = config_once_list;
            config_once_list = e;
        }
    }
    pthread_mutex_unlock(&config_once_lock);
    return first;
}

/* ---------------------------------------------------------------- parsing */

typedef union config_value {
    bool b;
    int64_t i;
    uint64_t u;
} config_value_t;

FERRY_EXPORT const char *ferry_config_type_name(ferry_config_type_t type)
{
    switch (type) {
    case FERRY_CONFIG_BOOL:
        return "bool";
    case FERRY_CONFIG_INT:
        return "int";
    case FERRY_CONFIG_SIZE:
        return "size";
    case FERRY_CONFIG_STRING:
        return "string";
    }
    return "unknown";
}

static const char *config_expected_form(fy_config_type_t type)
{
    switch (type) {
    case FERRY_CONFIG_BOOL:
        return "y, yes, on, 1, true, n, no, off, 0 or false";
    case FERRY_CONFIG_INT:
        return "a signed decimal integer";
    case FERRY_CONFIG_SIZE:
        return "an unsigned decimal integer with an optional suffix k, m or g (powers of 1024)";
    case FERRY_CONFIG_STRING:
        return "any text";
    }
    return "?";
}

static bool config_is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* Accumulate the decimal digits at [*p, end) into *value; false on no digit or overflow. */
static bool config_parse_digits(const char **p, const char *end, uint64_t max, uint64_t *value)
{
    const char *s = *p;
    uint64_t v = 0;

    if (s == end || !isdigit((unsigned char)*s))
        return false;
    for (; s < end && isdigit((unsigned char)*s); ++s) {
        unsigned digit = (unsigned)(*s - '0');
        if (v > (max - digit) / 10)
            return false;
        v = v * 10 + digit;
    }
    *p = s;
    *value = v;
    return true;
}

static bool config_parse_bool(const char *s, size_t len, bool *value)
{
    static const char *const yes[] = {"y", "yes", "on", "1", "true"};
    static const char *const no[] = {"n", "no", "off", "0", "false"};

    for (size_t i = 0; i < FERRY_ARRAY_SIZE(yes); ++i) {
        if (strlen(yes[i]) == len && strncasecmp(s, yes[i], len) == 0) {
            *value = true;
            return true;
        }
        if (strlen(no[i]) == len && strncasecmp(s, no[i], len) == 0) {
            *value = false;
            return true;
        }
    }
    return false;
}

static bool config_parse_int(const char *s, size_t len, int64_t *value)
{
    const char *end = s + len;
    bool negative = false;
    uint64_t magnitude;

    if (s < end && (*s == '+' || *s == '-')) {
        negative = *s == '-';
        ++s;
    }
    uint64_t max = negative ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    if (!config_parse_digits(&s, end, max, &magnitude) || s != end)
        return false;
    if (negative)
        *value = magnitude == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)magnitude;
    else
        *value = (int64_t)magnitude;
    return true;
}

static bool config_parse_size(const char *s, size_t len, uint64_t *value)
{
    const char *end = s + len;
    uint64_t number;
    unsigned shift = 0;

    if (!config_parse_digits(&s, end, UINT64_MAX, &number))
        return false;
    if (s < end) {
        switch (*s) {
        case 'k':
        case 'K':
            shift = 10;
            break;
        case 'm':
        case 'M':
            shift = 20;
            break;
        case 'g':
        case 'G':
            shift = 30;
            break;
        default:
            return false;
        }
        if (++s != end)
            return false;
    }
    if (number > (UINT64_MAX >> shift))
        return false;
    *value = number << shift;
    return true;
}

/* Parse text as type, ignoring surrounding blanks. */
static bool config_parse(fy_config_type_t type, const char *text, config_value_t *value)
{
    const char *s = text;
    const char *end = text + strlen(text);

    while (s < end && config_is_blank(*s))
        ++s;
    while (end > s && config_is_blank(end[-1]))
        --end;
    size_t len = (size_t)(end - s);

    switch (type) {
    case FERRY_CONFIG_BOOL:
        return config_parse_bool(s, len, &value->b);
    case FERRY_CONFIG_INT:
        return config_parse_int(s, len, &value->i);
    case FERRY_CONFIG_SIZE:
        return config_parse_size(s, len, &value->u);
    case FERRY_CONFIG_STRING:
        return true;
    }
    return false;
}

bool fy_config_parse_size(const char *text, uint64_t *value_p)
{
    config_value_t value;
    if (!config_parse(FERRY_CONFIG_SIZE, text, &value))
        return false;
    *value_p = value.u;
    return true;
}

/* The environment value of var, or NULL when unset or empty. */
static const char *config_env_value(const fy_config_var_t *var)
{
    const char *value = getenv(var->name);
    return value != NULL && value[0] != '\0' ? value : NULL;
}

static void config_check_type(const fy_config_var_t *var, fy_config_type_t type)
{
    if (fy_unlikely(var->type != type) &&
        config_first_time(CONFIG_ONCE_WRONG_TYPE, var->name, strlen(var->name))) {
        fy_error("configuration variable %s is declared as %s but read as %s (a bug in ferry)",
                 var->name, ferry_config_type_name(var->type), ferry_config_type_name(type));
    }
}

/* The value of var read as type: the set's (checked when the set was made), else the
 * environment's, else the default's. */
static config_value_t config_get(const fy_config_set_t *set, const fy_config_var_t *var,
                                 fy_config_type_t type)
{
    config_value_t value;
    const char *env = config_env_value(var);
    const char *def = var->default_value != NULL ? var->default_value : "";
    const char *mine = fy_config_set_value(set, var);

    /* Not "= {0}", which zeroes only the first member. The parsers write only on success. */
    memset(&value, 0, sizeof(value));
    config_check_type(var, type);
    if (mine != NULL) {
        if (mine[0] != '\0' && config_parse(type, mine, &value))
            return value;
        env = NULL; /* "NAME=" in the set: the default */
    }
    if (env != NULL) {
        if (config_parse(type, env, &value))
            return value;
        if (config_first_time(CONFIG_ONCE_BAD_VALUE, var->name, strlen(var->name))) {
            fy_warn("invalid %s=\"%s\": expected %s; using the default \"%s\"", var->name, env,
                    config_expected_form(type), def);
        }
    }

    if (def[0] == '\0' || !config_parse(type, def, &value)) {
        if (config_first_time(CONFIG_ONCE_BAD_DEFAULT, var->name, strlen(var->name))) {
            fy_error("default value \"%s\" of %s is not %s (a bug in ferry)", def, var->name,
                     config_expected_form(type));
        }
    }
    return value;
}

FERRY_EXPORT bool ferry_config_bool(const fy_config_var_t *var)
{
    return config_get(NULL, var, FERRY_CONFIG_BOOL).b;
}

FERRY_EXPORT int64_t ferry_config_int(const fy_config_var_t *var)
{
    return config_get(NULL, var, FERRY_CONFIG_INT).i;
}

FERRY_EXPORT uint64_t ferry_config_size(const fy_config_var_t *var)
{
    return config_get(NULL, var, FERRY_CONFIG_SIZE).u;
}

/* Never logs: ferry_log_init() reads its own variables with it. */
FERRY_EXPORT const char *ferry_config_string(const fy_config_var_t *var)
{
    return fy_config_string_in(NULL, var);
}

bool fy_config_bool_in(const fy_config_set_t *set, const fy_config_var_t *var)
{
    return config_get(set, var, FERRY_CONFIG_BOOL).b;
}

int64_t fy_config_int_in(const fy_config_set_t *set, const fy_config_var_t *var)
{
    return config_get(set, var, FERRY_CONFIG_INT).i;
}

uint64_t fy_config_size_in(const fy_config_set_t *set, const fy_config_var_t *var)
{
    return config_get(set, var, FERRY_CONFIG_SIZE).u;
}

const char *fy_config_string_in(const fy_config_set_t *set, const fy_config_var_t *var)
{
    const char *mine = fy_config_set_value(set, var);
    if (mine != NULL && mine[0] != '\0')
        return mine;
    const char *env = mine == NULL ? config_env_value(var) : NULL;
    if (env != NULL)
        return env;
    return var->default_value != NULL ? var->default_value : "";
}

/* ---------------------------------------------------------------- a context's settings */

const char *fy_config_set_value(const fy_config_set_t *set, const fy_config_var_t *var)
{
    if (set == NULL)
        return NULL;
    for (size_t i = set->count; i-- > 0;) { /* the last setting of a name wins */
        if (set->vars[i] == var)
            return set->values[i];
    }
    return NULL;
}

void fy_config_set_cleanup(fy_config_set_t *set)
{
    for (size_t i = 0; i < set->count; i++)
        free(set->values[i]);
    free(set->values);
    free(set->vars);
    memset(set, 0, sizeof(*set));
}

/* Check one "NAME=value" setting; on success *var_p and *value_p (the value without the
 * blanks around it, malloc'ed). Logs one error line otherwise. */
static ferry_status_t config_setting_check(const char *setting, const fy_config_var_t **var_p,
                                           char **value_p)
{
    const char *equal = setting != NULL ? strchr(setting, '=') : NULL;
    config_value_t value;
    char why[160] = "";

    if (equal == NULL) {
        fy_warn("context setting \"%s\" is not NAME=value (for example "
                "\"FERRY_TCP_TIMEOUT_MS=30000\")",
                setting != NULL ? setting : "(null)");
        return FERRY_ERR_INVALID_PARAM;
    }
    size_t len = (size_t)(equal - setting);
    const fy_config_var_t *var = fy_config_find(setting, len);
    if (var == NULL) {
        const fy_config_var_t *const *vars;
        size_t count = fy_config_vars(&vars);
        const char **names = malloc((count ? count : 1) * sizeof(*names));
        char *name = strndup(setting, len);
        const char *closest = NULL;
        for (size_t i = 0; names != NULL && i < count; i++)
            names[i] = vars[i]->name;
        if (names != NULL && name != NULL)
            closest = fy_closest_name(name, names, count);
        fy_warn("context setting %.*s: not a ferry configuration variable%s%s%s (ferry_info -c "
                "lists them)",
                (int)len, setting, closest ? "; did you mean " : "", closest ? closest : "",
                closest ? "?" : "");
        free(name);
        free(names);
        return FERRY_ERR_INVALID_PARAM;
    }
    if (var->flags & FY_CONFIG_PROCESS) {
        fy_warn("context setting %s: a process-wide variable, which one context cannot set "
                "(set it in the environment)",
                var->name);
        return FERRY_ERR_INVALID_PARAM;
    }
    const char *text = equal + 1;
    const char *end = text + strlen(text);
    while (config_is_blank(*text))
        ++text;
    while (end > text && config_is_blank(end[-1]))
        --end;
    char *copy = strndup(text, (size_t)(end - text));
    if (copy == NULL) {
        fy_error("strndup(%zu) for a context setting failed: out of memory", (size_t)(end - text));
        return FERRY_ERR_NO_MEMORY;
    }
    if (copy[0] != '\0' && !config_parse(var->type, copy, &value)) {
        fy_warn("invalid context setting %s=\"%s\": expected %s", var->name, copy,
                config_expected_form(var->type));
        goto err_free_copy;
    }
    if (copy[0] != '\0' && var->check != NULL && !var->check(copy, why, sizeof(why))) {
        fy_warn("invalid context setting %s=\"%s\": expected %s", var->name, copy, why);
        goto err_free_copy;
    }
    *var_p = var;
    *value_p = copy;
    return FERRY_OK;

err_free_copy:
    free(copy);
    return FERRY_ERR_INVALID_PARAM;
}

ferry_status_t fy_config_set_init(fy_config_set_t *set, const char *const *settings)
{
    fy_config_set_t made = {0};
    size_t count = 0;
    ferry_status_t status;

    while (settings != NULL && settings[count] != NULL)
        count++;
    if (count > 0) {
        made.vars = calloc(count, sizeof(*made.vars));
        made.values = calloc(count, sizeof(*made.values));
        if (made.vars == NULL || made.values == NULL) {
            fy_error("calloc(%zu entries) for a context's settings failed: out of memory", count);
            status = FERRY_ERR_NO_MEMORY;
            goto err_cleanup;
        }
    }
    for (size_t i = 0; i < count; i++) {
        status = config_setting_check(settings[i], &made.vars[i], &made.values[i]);
        if (status != FERRY_OK)
            goto err_cleanup;
        made.count++;
    }
    *set = made;
    return FERRY_OK;

err_cleanup:
    fy_config_set_cleanup(&made);
    return status;
}

/* ---------------------------------------------------------------- registry */

/* Sections of companion libraries (ferry_config_registry_add). */
#define CONFIG_MAX_EXTRA 8
typedef struct config_range {
    const fy_config_var_t *const *start;
    const fy_config_var_t *const *stop;
} config_range_t;

static config_range_t config_extra[CONFIG_MAX_EXTRA];
static size_t config_extra_count;
/* Snapshots: the current one last. Older ones stay (callers may hold them) until ferry is
 * unloaded (config_unload). */
static const fy_config_var_t **config_snapshots[CONFIG_MAX_EXTRA + 1];
static size_t config_snapshot_count;
static const fy_config_var_t **config_sorted;
static size_t config_sorted_count;
static bool config_sorted_valid;
static pthread_mutex_t config_sorted_lock = PTHREAD_MUTEX_INITIALIZER;

static int config_compare_vars(const void *a, const void *b)
{
    const fy_config_var_t *va = *(const fy_config_var_t *const *)a;
    const fy_config_var_t *vb = *(const fy_config_var_t *const *)b;
    int c = strcmp(va->name, vb->name);
    if (c != 0)
        return c;
    /* Same name: order by address so that the same variable registered twice is adjacent. */
    return (uintptr_t)va < (uintptr_t)vb ? -1 : (uintptr_t)va > (uintptr_t)vb;
}

static size_t config_range_length(const config_range_t *range)
{
    if (range->start == NULL || range->stop == NULL || range->stop <= range->start)
        return 0;
    return (size_t)(range->stop - range->start);
}

/* Build the sorted snapshot of this library's section and the added ones (lock held). */
static void config_sort_locked(void)
{
    config_range_t ranges[1 + CONFIG_MAX_EXTRA];
    size_t range_count = 0, count = 0;

    ranges[range_count++] =
        (config_range_t){__start_ferry_config_registry, __stop_ferry_config_registry};
    for (size_t i = 0; i < config_extra_count; ++i)
        ranges[range_count++] = config_extra[i];
    for (size_t i = 0; i < range_count; ++i)
        count += config_range_length(&ranges[i]);
    config_sorted_valid = true;
    if (count == 0 || config_snapshot_count == FERRY_ARRAY_SIZE(config_snapshots))
        return;
    const fy_config_var_t **sorted = malloc(count * sizeof(*sorted));
    if (sorted == NULL) {
        fy_error("malloc(%zu) for the configuration registry failed: out of memory",
                 count * sizeof(*sorted));
        return;
    }

    size_t n = 0;
    for (size_t r = 0; r < range_count; ++r) {
        for (size_t i = 0; i < config_range_length(&ranges[r]); ++i) {
            const fy_config_var_t *var = ranges[r].start[i];
            if (var != NULL && var->name != NULL) /* skip any padding */
                sorted[n++] = var;
        }
    }
    qsort(sorted, n, sizeof(*sorted), config_compare_vars);

    /* The same variable twice (a static link merges the sections: an added range may repeat
     * this one) is kept once; two variables of one name are a bug worth a warning. */
    size_t unique = 0;
    for (size_t i = 0; i < n; ++i) {
        if (unique > 0 && sorted[unique - 1] == sorted[i])
            continue;
        if (unique > 0 && strcmp(sorted[unique - 1]->name, sorted[i]->name) == 0)
            fy_warn("configuration variable %s is declared more than once", sorted[i]->name);
        sorted[unique++] = sorted[i];
    }
    config_snapshots[config_snapshot_count++] = sorted;
    config_sorted = sorted;
    config_sorted_count = unique;
}

FERRY_EXPORT void ferry_config_registry_add(const fy_config_var_t *const *start,
                                            const fy_config_var_t *const *stop)
{
    pthread_mutex_lock(&config_sorted_lock);
    if (config_extra_count < CONFIG_MAX_EXTRA) {
        config_extra[config_extra_count++] = (config_range_t){start, stop};
        config_sorted_valid = false;
    } else {
        fy_error("ferry_config_registry_add: more than %d registry sections (a bug in ferry)",
                 CONFIG_MAX_EXTRA);
    }
    pthread_mutex_unlock(&config_sorted_lock);
}

size_t fy_config_vars(const fy_config_var_t *const **vars_p)
{
    pthread_mutex_lock(&config_sorted_lock);
    if (!config_sorted_valid)
        config_sort_locked();
    *vars_p = (const fy_config_var_t *const *)config_sorted;
    size_t count = config_sorted_count;
    pthread_mutex_unlock(&config_sorted_lock);
    return count;
}

/* The variable of name[0..len) (exactly, case-sensitively), or NULL. vars is sorted by name. */
static const fy_config_var_t *config_search(const fy_config_var_t *const *vars, size_t count,
                                            const char *name, size_t len)
{
    size_t lo = 0;
    size_t hi = count;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const char *candidate = vars[mid]->name;
        int c = strncmp(name, candidate, len);
        if (c == 0 && candidate[len] != '\0')
            c = -1; /* name is a proper prefix of candidate */
        if (c == 0)
            return vars[mid];
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}

const fy_config_var_t *fy_config_find(const char *name, size_t len)
{
    const fy_config_var_t *const *vars;
    size_t count = fy_config_vars(&vars);
    return config_search(vars, count, name, len);
}

void fy_config_check_environment(void)
{
    static const char prefix[] = "FERRY_";
    const fy_config_var_t *const *vars;
    size_t count = fy_config_vars(&vars);
    const char **names = NULL;

    for (char **env = environ; env != NULL && *env != NULL; ++env) {
        const char *entry = *env;
        /* Case-insensitive: "fy_log_level" is a typo worth reporting too. */
        if (strncasecmp(entry, prefix, sizeof(prefix) - 1) != 0)
            continue;
        const char *equal = strchr(entry, '=');
        size_t len = equal != NULL ? (size_t)(equal - entry) : strlen(entry);
        if (config_search(vars, count, entry, len) != NULL ||
            !config_first_time(CONFIG_ONCE_UNKNOWN_NAME, entry, len))
            continue;

        char *name = strndup(entry, len);
        if (name == NULL)
            continue;
        if (names == NULL && count > 0) {
            names = malloc(count * sizeof(*names));
            for (size_t i = 0; names != NULL && i < count; ++i)
                names[i] = vars[i]->name;
        }
        const char *closest = names != NULL ? fy_closest_name(name, names, count) : NULL;
        if (closest != NULL) {
            fy_warn("%s is set but is not a ferry configuration variable: did you mean %s? "
                    "(ferry_info -c lists them)",
                    name, closest);
        } else {
            fy_warn("%s is set but is not a ferry configuration variable (ferry_info -c lists "
                    "them)",
                    name);
        }
        free(name);
    }
    free(names);
}

/* ---------------------------------------------------------------- unload */

/* Runs when the object that holds ferry is unloaded: at dlclose of a module that links ferry
 * statically (libfabric dlcloses libferry-fi.so in fi_fini), at dlclose of libferry.so, or at
 * exit. Frees what this file keeps for the process's lifetime (the registry snapshots and the
 * warn-once list), which would otherwise be lost with the unmapped static data that pointed
 * to it. After it the registry reads as empty and nothing is rebuilt: no code of the unloaded
 * object runs any more, and at exit a later destructor must not allocate again. */
__attribute__((destructor)) static void config_unload(void)
{
    pthread_mutex_lock(&config_sorted_lock);
    for (size_t i = 0; i < config_snapshot_count; ++i) {
        free(config_snapshots[i]);
        config_snapshots[i] = NULL;
    }
    config_snapshot_count = 0;
    config_sorted = NULL;
    config_sorted_count = 0;
    config_sorted_valid = true;
    pthread_mutex_unlock(&config_sorted_lock);

    pthread_mutex_lock(&config_once_lock);
    while (config_once_list != NULL) {
        config_once_entry_t *e = config_once_list;
        config_once_list = e->next;
        free(e);
    }
    pthread_mutex_unlock(&config_once_lock);
}

/* ---------------------------------------------------------------- closest name */

static unsigned char config_fold(char c)
{
    return (unsigned char)tolower((unsigned char)c);
}

static size_t config_min(size_t a, size_t b)
{
    return a < b ? a : b;
}

/* Optimal-string-alignment (Damerau-Levenshtein) distance between a and b, ignoring case.
 * rows holds 3 * (blen + 1) entries. */
static size_t config_distance(const char *a, size_t alen, const char *b, size_t blen, size_t *rows)
{
    size_t *before = rows;          /* row i - 2 */
    size_t *prev = rows + blen + 1; /* row i - 1 */
    size_t *cur = prev + blen + 1;  /* row i */

    for (size_t j = 0; j <= blen; ++j)
        prev[j] = j;
    for (size_t i = 1; i <= alen; ++i) {
        cur[0] = i;
        for (size_t j = 1; j <= blen; ++j) {
            size_t cost = config_fold(a[i - 1]) == config_fold(b[j - 1]) ? 0 : 1;
            size_t d = config_min(config_min(prev[j] + 1, cur[j - 1] + 1), prev[j - 1] + cost);
            if (i > 1 && j > 1 && config_fold(a[i - 1]) == config_fold(b[j - 2]) &&
                config_fold(a[i - 2]) == config_fold(b[j - 1]))
                d = config_min(d, before[j - 2] + 1);
            cur[j] = d;
        }
        size_t *recycled = before;
        before = prev;
        prev = cur;
        cur = recycled;
    }
    return prev[blen];
}

const char *fy_closest_name(const char *word, const char *const *candidates, size_t count)
{
    if (word == NULL || candidates == NULL || count == 0)
        return NULL;

    size_t wlen = strlen(word);
    size_t limit = wlen / 3 > 2 ? wlen / 3 : 2;
    size_t longest = 0;
    for (size_t i = 0; i < count; ++i) {
        if (candidates[i] != NULL && strlen(candidates[i]) > longest)
            longest = strlen(candidates[i]);
    }
    size_t *rows = malloc(3 * (longest + 1) * sizeof(*rows));
    if (rows == NULL)
        return NULL; /* only a suggestion */

    const char *best = NULL;
    size_t best_distance = limit + 1;
    for (size_t i = 0; i < count; ++i) {
        const char *candidate = candidates[i];
        if (candidate == NULL)
            continue;
        size_t clen = strlen(candidate);
        size_t gap = clen > wlen ? clen - wlen : wlen - clen;
        if (gap >= best_distance) /* the distance is at least the difference in length */
            continue;
        size_t d = config_distance(word, wlen, candidate, clen, rows);
        if (d < best_distance) {
            best = candidate;
            best_distance = d;
        }
    }
    free(rows);
    return best;
}
