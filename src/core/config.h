/* Configuration registry. Every tunable is declared once, in the file that uses it:
 *
 *     static const fy_config_var_t shm_fifo_cells_var = {
 *         .name = "FERRY_SHM_FIFO_CELLS", .type = FERRY_CONFIG_SIZE, .default_value = "1024",
 *         .description = "cells in each worker's shared-memory receive FIFO (power of 2)"};
 *     static const fy_config_var_t *const shm_fifo_cells_reg
 *         __attribute__((used, section("ferry_config_registry"))) = &shm_fifo_cells_var;
 *
 * The linker collects the "ferry_config_registry" section, which is the registry: ferry_info -c
 * lists it and fy_config_check_environment() warns about FERRY_* names not in it. Values
 * come from the environment variable of that name, else the default.
 *
 * Companion libraries (libferry_bootstrap) declare their variables the same way, in their own
 * section, and hand it to libferry's registry from a constructor with
 * ferry_config_registry_add(). For them libferry.so exports the typed readers below,
 * ferry_config_registry_add and the logging functions of log.h: exported for ferry's own
 * libraries only (declared in src/, not in include/ferry; no API promise). */
#ifndef FERRY_CORE_CONFIG_H
#define FERRY_CORE_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ferry/info.h>
#include <ferry/status.h>

/* The types are the public ones (include/ferry/info.h: FERRY_CONFIG_BOOL, _INT, _SIZE,
 * _STRING), which ferry_config_query reports. */
typedef ferry_config_type_t fy_config_type_t;

/* fy_config_var_t.flags */
#define FY_CONFIG_PROCESS                                                                          \
    0x1u /* process-wide (logging, the bootstrap): from the environment                            \
          * only, a context cannot set it */

typedef struct fy_config_var {
    const char *name; /* full environment name, "FERRY_..." */
    fy_config_type_t type;
    const char *default_value; /* text, parsed like an environment value */
    const char *description;
    unsigned flags; /* FY_CONFIG_* */
    /* For a STRING with a syntax of its own (FERRY_RNDV_MODE): true when text is valid, else
     * false with what is expected written into why[why_len]. A context's setting that fails
     * it is refused; the environment's is warned about where it is read. May be NULL. */
    bool (*check)(const char *text, char *why, size_t why_len);
} fy_config_var_t;

/* Typed values: from the environment, else the default. A value that does not parse is
 * warned about once (naming the variable, the value and the expected form) and the default is
 * used. Not for fast paths: read them at init time. */
bool ferry_config_bool(const fy_config_var_t *var);
int64_t ferry_config_int(const fy_config_var_t *var);
uint64_t ferry_config_size(const fy_config_var_t *var);
const char *ferry_config_string(const fy_config_var_t *var); /* never NULL */

/* A context's own settings (ferry_context_params_t.config): variables the program set for one
 * context, each checked like the environment when the set is made. They win over the
 * environment. */
typedef struct fy_config_set {
    size_t count;
    const fy_config_var_t **vars; /* count entries: the variables set */
    char **values;                /* count entries: their text ("" = the default) */
} fy_config_set_t;

/* Make a set from "NAME=value" strings (a NULL-terminated array; NULL: an empty set). Each
 * name must be registered and not FY_CONFIG_PROCESS, each value must parse as the variable's
 * type (and pass its check); an empty value means the default, whatever the environment says;
 * a later setting of one name replaces an earlier one. Returns FERRY_OK,
 * FERRY_ERR_INVALID_PARAM (one warning naming the setting, what is wrong and the fix: the
 * closest name, the expected form), FERRY_ERR_NO_MEMORY. */
ferry_status_t fy_config_set_init(fy_config_set_t *set, const char *const *settings);
void fy_config_set_cleanup(fy_config_set_t *set);
/* The text the set gives var (never NULL when found), or NULL when the set does not set it
 * (set may be NULL). */
const char *fy_config_set_value(const fy_config_set_t *set, const fy_config_var_t *var);

/* Typed values for a context: its set's value, else the environment's, else the default
 * (set may be NULL: as ferry_config_*). What every per-context tunable is read with. */
bool fy_config_bool_in(const fy_config_set_t *set, const fy_config_var_t *var);
int64_t fy_config_int_in(const fy_config_set_t *set, const fy_config_var_t *var);
uint64_t fy_config_size_in(const fy_config_set_t *set, const fy_config_var_t *var);
const char *fy_config_string_in(const fy_config_set_t *set, const fy_config_var_t *var);

/* The registered variable of name[0..len), or NULL. */
const fy_config_var_t *fy_config_find(const char *name, size_t len);

/* Add a companion library's registry section [start, stop) (its own hidden
 * __start_/__stop_ferry_config_registry). At most 8; a variable seen twice (a static link
 * merges the sections) is listed once. */
void ferry_config_registry_add(const fy_config_var_t *const *start,
                               const fy_config_var_t *const *stop);

/* The registry: *vars_p receives the array of registered variables, sorted by name (one
 * snapshot, built on the first call and again after ferry_config_registry_add; an older
 * snapshot stays valid; thread-safe). Returns how many there are.
 * (The section is not named like this function: the assembler would resolve the function's
 * symbol to the section of the same name in a file that both registers and calls.) */
size_t fy_config_vars(const fy_config_var_t *const **vars_p);

/* The one size parser: decimal digits with an optional k, m or g suffix (KiB, MiB, GiB),
 * blanks around it ignored; what FERRY_* variables of type SIZE take, and sizes inside a
 * string variable (FERRY_RNDV_THRESH: a size or "auto"). Returns false (nothing written) when
 * text is not a size or overflows 64 bits. */
bool fy_config_parse_size(const char *text, uint64_t *value_p);

/* Warn once per process about each FERRY_* environment variable that is not registered,
 * naming the closest registered one ("did you mean FERRY_LOG_LEVEL?"). */
void fy_config_check_environment(void);

/* The candidate closest to word by edit distance (case-insensitive), or NULL if none is
 * within a useful distance. Shared by the config check and the transport-name check. */
const char *fy_closest_name(const char *word, const char *const *candidates, size_t count);

#endif
