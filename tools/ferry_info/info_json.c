/* ferry_info: the JSON writer (see info_json.h). Two spaces of indentation per level. */
#include "info_json.h"

#include <inttypes.h>
#include <math.h>

void info_json_init(info_json_t *json, FILE *out)
{
    json->out = out;
    json->depth = 0;
    json->has_items[0] = false;
}

static void info_json_indent(info_json_t *json)
{
    for (unsigned i = 0; i < json->depth; i++)
        fputs("  ", json->out);
}

/* Length of the well-formed UTF-8 sequence at s (of at most left bytes), or 0 if there is
 * none (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF). */
static size_t info_json_utf8_length(const unsigned char *s, size_t left)
{
    unsigned char c = s[0];
    size_t n;
    unsigned char lo = 0x80, hi = 0xbf; /* allowed range of the second byte */

    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf) {
        n = 2;
    } else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        if (c == 0xe0)
            lo = 0xa0;
        else if (c == 0xed)
            hi = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        if (c == 0xf0)
            lo = 0x90;
        else if (c == 0xf4)
            hi = 0x8f;
    } else {
        return 0;
    }
    if (left < n || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++) {
        if (s[i] < 0x80 || s[i] > 0xbf)
            return 0;
    }
    return n;
}

static void info_json_quote(info_json_t *json, const char *value, size_t length)
{
    const unsigned char *s = (const unsigned char *)value;
    FILE *out = json->out;

    fputc('"', out);
    for (size_t i = 0; i < length;) {
        unsigned char c = s[i];
        if (c == '"' || c == '\\') {
            fputc('\\', out);
            fputc(c, out);
            i++;
        } else if (c == '\n') {
            fputs("\\n", out);
            i++;
        } else if (c == '\t') {
            fputs("\\t", out);
            i++;
        } else if (c == '\r') {
            fputs("\\r", out);
            i++;
        } else if (c < 0x20 || c == 0x7f) {
            fprintf(out, "\\u%04x", c);
            i++;
        } else {
            size_t n = info_json_utf8_length(s + i, length - i);
            if (n == 0) {
                fputs("\\ufffd", out);
                i++;
            } else {
                fwrite(s + i, 1, n, out);
                i += n;
            }
        }
    }
    fputc('"', out);
}

/* Separator, newline, indentation and key of the next item. */
static void info_json_item(info_json_t *json, const char *key)
{
    if (json->depth > 0) {
        if (json->has_items[json->depth])
            fputc(',', json->out);
        fputc('\n', json->out);
        json->has_items[json->depth] = true;
        info_json_indent(json);
    }
    if (key != NULL) {
        size_t length = 0;
        while (key[length] != '\0')
            length++;
        info_json_quote(json, key, length);
        fputs(": ", json->out);
    }
}

static void info_json_open(info_json_t *json, const char *key, char bracket)
{
    info_json_item(json, key);
    fputc(bracket, json->out);
    if (json->depth + 1 < INFO_JSON_MAX_DEPTH) {
        json->depth++;
        json->has_items[json->depth] = false;
    }
}

static void info_json_close(info_json_t *json, char bracket)
{
    bool had_items = json->has_items[json->depth];
    if (json->depth > 0)
        json->depth--;
    if (had_items) {
        fputc('\n', json->out);
        info_json_indent(json);
    }
    fputc(bracket, json->out);
    if (json->depth == 0)
        fputc('\n', json->out);
}

void info_json_object_begin(info_json_t *json, const char *key)
{
    info_json_open(json, key, '{');
}

void info_json_object_end(info_json_t *json)
{
    info_json_close(json, '}');
}

void info_json_array_begin(info_json_t *json, const char *key)
{
    info_json_open(json, key, '[');
}

void info_json_array_end(info_json_t *json)
{
    info_json_close(json, ']');
}

void info_json_string_n(info_json_t *json, const char *key, const char *value, size_t length)
{
    info_json_item(json, key);
    info_json_quote(json, value, length);
}

void info_json_string(info_json_t *json, const char *key, const char *value)
{
    if (value == NULL) {
        info_json_null(json, key);
        return;
    }
    size_t length = 0;
    while (value[length] != '\0')
        length++;
    info_json_string_n(json, key, value, length);
}

void info_json_uint(info_json_t *json, const char *key, uint64_t value)
{
    info_json_item(json, key);
    fprintf(json->out, "%" PRIu64, value);
}

void info_json_int(info_json_t *json, const char *key, int64_t value)
{
    info_json_item(json, key);
    fprintf(json->out, "%" PRId64, value);
}

void info_json_double(info_json_t *json, const char *key, double value)
{
    if (!isfinite(value)) {
        info_json_null(json, key);
        return;
    }
    info_json_item(json, key);
    fprintf(json->out, "%.17g", value);
}

void info_json_bool(info_json_t *json, const char *key, bool value)
{
    info_json_item(json, key);
    fputs(value ? "true" : "false", json->out);
}

void info_json_null(info_json_t *json, const char *key)
{
    info_json_item(json, key);
    fputs("null", json->out);
}
