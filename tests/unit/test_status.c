/* ferry_status_string() / ferry_status_name(), generated from include/ferry/status.h: every
 * status has a distinct non-empty name and string, the values keep the grouping the header
 * documents, and an unknown value gives the documented fallbacks.
 *
 * The header itself is read (FERRY_STATUS_HEADER, set by tests.cmake) so that a status added
 * later is checked without touching this test. */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <ferry/status.h>

#define UNKNOWN_STRING "unknown status"
#define UNKNOWN_NAME "FERRY_UNKNOWN_STATUS"

typedef enum group { GROUP_SUCCESS, GROUP_OPERATION, GROUP_ENDPOINT, GROUP_WORKER } group_t;

/* The ranges documented at the top of status.h. */
static group_t group_of(int value)
{
    if (value >= 0)
        return GROUP_SUCCESS;
    if (value >= -29)
        return GROUP_OPERATION;
    if (value >= -59)
        return GROUP_ENDPOINT;
    return GROUP_WORKER;
}

/* A few statuses by their C names, so that the enum constants and the generated names agree. */
static const struct {
    ferry_status_t status;
    const char *name;
    group_t group;
} known[] = {
    {FERRY_OK, "FERRY_OK", GROUP_SUCCESS},
    {FERRY_INPROGRESS, "FERRY_INPROGRESS", GROUP_SUCCESS},
    {FERRY_ERR_NO_RESOURCE, "FERRY_ERR_NO_RESOURCE", GROUP_OPERATION},
    {FERRY_ERR_INVALID_PARAM, "FERRY_ERR_INVALID_PARAM", GROUP_OPERATION},
    {FERRY_ERR_NO_MEMORY, "FERRY_ERR_NO_MEMORY", GROUP_OPERATION},
    {FERRY_ERR_UNSUPPORTED, "FERRY_ERR_UNSUPPORTED", GROUP_OPERATION},
    {FERRY_ERR_MESSAGE_TRUNCATED, "FERRY_ERR_MESSAGE_TRUNCATED", GROUP_OPERATION},
    {FERRY_ERR_CANCELED, "FERRY_ERR_CANCELED", GROUP_OPERATION},
    {FERRY_ERR_ACCESS, "FERRY_ERR_ACCESS", GROUP_OPERATION},
    {FERRY_ERR_TIMED_OUT, "FERRY_ERR_TIMED_OUT", GROUP_OPERATION},
    {FERRY_ERR_BUSY, "FERRY_ERR_BUSY", GROUP_OPERATION},
    {FERRY_ERR_NO_ELEM, "FERRY_ERR_NO_ELEM", GROUP_OPERATION},
    {FERRY_ERR_ALREADY_EXISTS, "FERRY_ERR_ALREADY_EXISTS", GROUP_OPERATION},
    {FERRY_ERR_OUT_OF_RANGE, "FERRY_ERR_OUT_OF_RANGE", GROUP_OPERATION},
    {FERRY_ERR_NOT_AVAILABLE, "FERRY_ERR_NOT_AVAILABLE", GROUP_OPERATION},
    {FERRY_ERR_UNREACHABLE, "FERRY_ERR_UNREACHABLE", GROUP_ENDPOINT},
    {FERRY_ERR_CONNECTION_REFUSED, "FERRY_ERR_CONNECTION_REFUSED", GROUP_ENDPOINT},
    {FERRY_ERR_CONNECTION_RESET, "FERRY_ERR_CONNECTION_RESET", GROUP_ENDPOINT},
    {FERRY_ERR_ENDPOINT_CLOSED, "FERRY_ERR_ENDPOINT_CLOSED", GROUP_ENDPOINT},
    {FERRY_ERR_ENDPOINT_TIMEOUT, "FERRY_ERR_ENDPOINT_TIMEOUT", GROUP_ENDPOINT},
    {FERRY_ERR_PROTOCOL, "FERRY_ERR_PROTOCOL", GROUP_ENDPOINT},
    {FERRY_ERR_INVALID_ADDRESS, "FERRY_ERR_INVALID_ADDRESS", GROUP_ENDPOINT},
    {FERRY_ERR_IO, "FERRY_ERR_IO", GROUP_WORKER},
    {FERRY_ERR_NO_DEVICE, "FERRY_ERR_NO_DEVICE", GROUP_WORKER},
    {FERRY_ERR_SHMEM, "FERRY_ERR_SHMEM", GROUP_WORKER},
    {FERRY_ERR_LIMIT, "FERRY_ERR_LIMIT", GROUP_WORKER},
    {FERRY_ERR_FORKED, "FERRY_ERR_FORKED", GROUP_WORKER},
};

/* Values scanned for statuses: wider than every documented range. */
enum { SCAN_MIN = -1000, SCAN_MAX = 1000 };

static bool is_known(int value)
{
    return strcmp(ferry_status_name((ferry_status_t)value), UNKNOWN_NAME) != 0;
}

static void test_known_statuses(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); ++i) {
        const char *name = ferry_status_name(known[i].status);
        const char *string = ferry_status_string(known[i].status);
        assert_non_null(name);
        assert_non_null(string);
        assert_string_equal(name, known[i].name);
        assert_true(string[0] != '\0');
        assert_string_not_equal(string, UNKNOWN_STRING);
        assert_int_equal(group_of(known[i].status), known[i].group);
    }
    assert_int_equal(FERRY_OK, 0);
    assert_int_equal(FERRY_INPROGRESS, 1);
    assert_string_equal(ferry_status_string(FERRY_OK), "success");
}

/* Every value the library knows: distinct names and strings, names of the right shape, values
 * in the documented ranges. */
static void test_all_distinct_and_grouped(void **state)
{
    (void)state;
    int values[SCAN_MAX - SCAN_MIN + 1];
    size_t count = 0;

    for (int v = SCAN_MIN; v <= SCAN_MAX; ++v) {
        if (!is_known(v)) {
            assert_string_equal(ferry_status_string((ferry_status_t)v), UNKNOWN_STRING);
            continue;
        }
        const char *name = ferry_status_name((ferry_status_t)v);
        const char *string = ferry_status_string((ferry_status_t)v);
        assert_non_null(string);
        assert_true(string[0] != '\0');
        assert_string_not_equal(string, UNKNOWN_STRING);
        assert_true(strncmp(name, "FERRY_", 6) == 0);
        if (v < 0) {
            assert_true(strncmp(name, "FERRY_ERR_", 10) == 0);
            assert_true(v >= -89); /* the last documented group ends at -89 */
        } else {
            assert_true(strncmp(name, "FERRY_ERR_", 10) != 0);
            assert_true(v <= 1); /* only OK and INPROGRESS are not errors */
        }
        for (size_t j = 0; j < count; ++j) {
            const int w = values[j];
            if (strcmp(name, ferry_status_name((ferry_status_t)w)) == 0 ||
                strcmp(string, ferry_status_string((ferry_status_t)w)) == 0)
                fail_msg("statuses %d and %d share a name or a string (%s, \"%s\")", v, w, name,
                         string);
        }
        values[count++] = v;
    }
    assert_true(count >= sizeof(known) / sizeof(known[0]));
}

static void test_unknown_values(void **state)
{
    (void)state;
    const int unknown[] = {2, 3, -14, -29, -37, -59, -64, -89, -90, -1000, 1000, INT_MIN, INT_MAX};
    for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); ++i) {
        ferry_status_t s = (ferry_status_t)unknown[i];
        if (is_known(unknown[i]))
            continue; /* a status added since: test_header_matches_table checks it */
        assert_string_equal(ferry_status_name(s), UNKNOWN_NAME);
        assert_string_equal(ferry_status_string(s), UNKNOWN_STRING);
    }
}

/* The path of include/ferry/status.h: FERRY_STATUS_HEADER, else relative to this file. */
static char *status_header_path(void)
{
    const char *env = getenv("FERRY_STATUS_HEADER");
    if (env != NULL && env[0] != '\0')
        return strdup(env);
    const char *here = __FILE__;
    const char *suffix = "tests/unit/test_status.c";
    size_t len = strlen(here);
    size_t slen = strlen(suffix);
    if (len < slen || strcmp(here + len - slen, suffix) != 0)
        return NULL;
    char *path = malloc(len - slen + sizeof("include/ferry/status.h"));
    if (path == NULL)
        return NULL;
    memcpy(path, here, len - slen);
    strcpy(path + len - slen, "include/ferry/status.h");
    return path;
}

/* Every entry line of status.h ("    FERRY_NAME = value, // description") is in the generated
 * table with that name and description, under the group comment that matches its value, and
 * the table holds nothing else. */
static void test_header_matches_table(void **state)
{
    (void)state;
    char *path = status_header_path();
    if (path == NULL)
        skip();
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        print_message("cannot open %s: not checking the header\n", path);
        free(path);
        skip();
    }

    char line[512];
    size_t entries = 0;
    int section = -1; /* -1: before the first group comment (OK, INPROGRESS) */
    while (fgets(line, sizeof(line), f) != NULL) {
        if (strstr(line, "/* operation errors */") != NULL)
            section = GROUP_OPERATION;
        else if (strstr(line, "/* endpoint errors */") != NULL)
            section = GROUP_ENDPOINT;
        else if (strstr(line, "/* worker and context errors */") != NULL)
            section = GROUP_WORKER;

        char name[128];
        int value;
        int consumed = 0;
        if (sscanf(line, " %127[A-Z0-9_] = %d , // %n", name, &value, &consumed) < 2 ||
            consumed == 0 || strncmp(name, "FERRY_", 6) != 0)
            continue;
        char *description = line + consumed;
        description[strcspn(description, "\n")] = '\0';
        for (size_t n = strlen(description); n > 0 && description[n - 1] == ' '; --n)
            description[n - 1] = '\0';

        ++entries;
        assert_string_equal(ferry_status_name((ferry_status_t)value), name);
        assert_string_equal(ferry_status_string((ferry_status_t)value), description);
        assert_int_equal(group_of(value), section < 0 ? GROUP_SUCCESS : section);
    }
    fclose(f);
    free(path);

    size_t table = 0;
    for (int v = SCAN_MIN; v <= SCAN_MAX; ++v)
        table += is_known(v);
    assert_true(entries >= sizeof(known) / sizeof(known[0]));
    assert_int_equal(entries, table);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_statuses),
        cmocka_unit_test(test_all_distinct_and_grouped),
        cmocka_unit_test(test_unknown_values),
        cmocka_unit_test(test_header_matches_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
