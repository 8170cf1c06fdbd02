/* ferry_info: a small streaming JSON writer (objects, arrays, strings, numbers).
 *
 * Strings are escaped ('"', '\\', control characters) and made valid UTF-8 (a byte that does not
 * start or continue a well-formed UTF-8 sequence becomes U+FFFD), so the output is valid JSON
 * whatever the environment or an address file contains. Inside an object every value has a
 * key; inside an array, key is NULL. */
#ifndef FERRY_INFO_JSON_H
#define FERRY_INFO_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define INFO_JSON_MAX_DEPTH 16

typedef struct info_json {
    FILE *out;
    unsigned depth;
    bool has_items[INFO_JSON_MAX_DEPTH]; /* the container at this depth has an item already */
} info_json_t;

void info_json_init(info_json_t *json, FILE *out);

void info_json_object_begin(info_json_t *json, const char *key);
void info_json_object_end(info_json_t *json);
void info_json_array_begin(info_json_t *json, const char *key);
void info_json_array_end(info_json_t *json);

/* value NULL writes null. */
void info_json_string(info_json_t *json, const char *key, const char *value);
/* length bytes of value, which need not be NUL-terminated. */
void info_json_string_n(info_json_t *json, const char *key, const char *value, size_t length);
void info_json_uint(info_json_t *json, const char *key, uint64_t value);
void info_json_int(info_json_t *json, const char *key, int64_t value);
/* A value that is not finite (inf, nan) is written as null. */
void info_json_double(info_json_t *json, const char *key, double value);
void info_json_bool(info_json_t *json, const char *key, bool value);
void info_json_null(info_json_t *json, const char *key);

#endif
