/* src/core/config.c: typed values and their suffixes, bad values falling back to the default
 * with one warning, the registry, the check for unknown FERRY_* variables and its suggestion,
 * and fy_closest_name().
 *
 * Runs in one process: warnings are captured by pointing fd 2 at a temporary file. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/config.h"
#include "core/log.h"

extern char **environ;

/* Registered by this test: they join the library's in the registry. */
static const fy_config_var_t test_last_var = {.name = "FERRY_TEST_ZZ_LAST",
                                              .type = FERRY_CONFIG_SIZE,
                                              .default_value = "4k",
                                              .description = "registered by test_config"};
static const fy_config_var_t *const test_last_reg
    __attribute__((used, section("ferry_config_registry"))) = &test_last_var;

static const fy_config_var_t test_first_var = {.name = "FERRY_TEST_AA_FIRST",
                                               .type = FERRY_CONFIG_BOOL,
                                               .default_value = "yes",
                                               .description = "registered by test_config"};
static const fy_config_var_t *const test_first_reg
    __attribute__((used, section("ferry_config_registry"))) = &test_first_var;

/* ---------------------------------------------------------------- capturing stderr */

static FILE *capture_file;
static int capture_saved_fd = -1;

static void capture_start(void)
{
    fflush(stderr);
    capture_file = tmpfile();
    assert_non_null(capture_file);
    capture_saved_fd = dup(STDERR_FILENO);
    assert_true(capture_saved_fd >= 0);
    assert_true(dup2(fileno(capture_file), STDERR_FILENO) >= 0);
}

/* Restore stderr; returns what was written to it (free it). */
static char *capture_stop(void)
{
    if (capture_saved_fd < 0)
        return NULL;
    dup2(capture_saved_fd, STDERR_FILENO);
    close(capture_saved_fd);
    capture_saved_fd = -1;

    long size = ftell(capture_file);
    char *text = calloc(1, size > 0 ? (size_t)size + 1 : 1);
    rewind(capture_file);
    if (text != NULL && size > 0 && fread(text, 1, (size_t)size, capture_file) != (size_t)size)
        text[0] = '\0';
    fclose(capture_file);
    capture_file = NULL;
    return text;
}

/* Teardown of every test: a failed assertion may have left stderr captured. */
static int capture_teardown(void **state)
{
    (void)state;
    free(capture_stop());
    return 0;
}

static size_t count_lines(const char *text)
{
    size_t n = 0;
    for (; *text != '\0'; ++text)
        n += *text == '\n';
    return n;
}

/* Assert that text is exactly one ferry log line of that level containing every needle. */
static void assert_one_line(const char *text, const char *level, const char *const *needles,
                            size_t count)
{
    char label[32];
    snprintf(label, sizeof(label), "] %s config.c:", level);
    if (count_lines(text) != 1 || strncmp(text, "[ferry ", 7) != 0 || strstr(text, label) == NULL)
        fail_msg("expected one %s line from config.c, got: \"%s\"", level, text);
    for (size_t i = 0; i < count; ++i) {
        if (strstr(text, needles[i]) == NULL)
            fail_msg("\"%s\" missing from \"%s\"", needles[i], text);
    }
}

static void assert_silent(char *text)
{
    if (text == NULL || text[0] != '\0')
        fail_msg("expected no output, got: \"%s\"", text != NULL ? text : "(null)");
    free(text);
}

/* ---------------------------------------------------------------- typed values */

static fy_config_var_t make_var(const char *name, fy_config_type_t type, const char *def)
{
    return (fy_config_var_t){
        .name = name, .type = type, .default_value = def, .description = "test"};
}

static void test_bool(void **state)
{
    (void)state;
    const char *const yes[] = {"y", "Y", "yes", "YES", "on", "On", "1", "true", "TRUE", " yes "};
    const char *const no[] = {"n", "N", "no", "No", "off", "OFF", "0", "false", "False", "\tno\n"};
    fy_config_var_t off = make_var("FERRY_TEST_BOOL_OFF", FERRY_CONFIG_BOOL, "no");
    fy_config_var_t on = make_var("FERRY_TEST_BOOL_ON", FERRY_CONFIG_BOOL, "on");

    capture_start();
    unsetenv(off.name);
    unsetenv(on.name);
    assert_false(ferry_config_bool(&off));
    assert_true(ferry_config_bool(&on));
    setenv(on.name, "", 1); /* empty counts as unset: the default, no warning */
    assert_true(ferry_config_bool(&on));
    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); ++i) {
        setenv(off.name, yes[i], 1);
        assert_true(ferry_config_bool(&off));
        setenv(on.name, no[i], 1);
        assert_false(ferry_config_bool(&on));
    }
    assert_silent(capture_stop());
    unsetenv(off.name);
    unsetenv(on.name);
}

static void test_int(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        int64_t value;
    } cases[] = {
        {"0", 0},
        {"42", 42},
        {"-5", -5},
        {"+7", 7},
        {"007", 7},
        {" 12 ", 12},
        {"9223372036854775807", INT64_MAX},
        {"-9223372036854775808", INT64_MIN},
        {"-0", 0},
    };
    fy_config_var_t var = make_var("FERRY_TEST_INT", FERRY_CONFIG_INT, "-3");

    capture_start();
    unsetenv(var.name);
    assert_int_equal(ferry_config_int(&var), -3);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
        setenv(var.name, cases[i].text, 1);
        int64_t got = ferry_config_int(&var);
        if (got != cases[i].value)
            fail_msg("\"%s\" read as %lld", cases[i].text, (long long)got);
    }
    assert_silent(capture_stop());
    unsetenv(var.name);
}

static void test_size(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        uint64_t value;
    } cases[] = {
        {"0", 0},
        {"4096", 4096},
        {"4k", 4096},
        {"4K", 4096},
        {"2m", 2u << 20},
        {"2M", 2u << 20},
        {"3g", 3ull << 30},
        {"3G", 3ull << 30},
        {"0k", 0},
        {" 1k ", 1024},
        {"18446744073709551615", UINT64_MAX},
        {"17179869183g", 17179869183ull << 30},
        {"17592186044415m", 17592186044415ull << 20},
    };
    fy_config_var_t var = make_var("FERRY_TEST_SIZE", FERRY_CONFIG_SIZE, "64k");

    capture_start();
    unsetenv(var.name);
    assert_int_equal(ferry_config_size(&var), 65536);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
        setenv(var.name, cases[i].text, 1);
        uint64_t got = ferry_config_size(&var);
        if (got != cases[i].value)
            fail_msg("\"%s\" read as %llu", cases[i].text, (unsigned long long)got);
    }
    assert_silent(capture_stop());
    unsetenv(var.name);
}

/* The one size parser, as the tagged-message layer uses it for FERRY_RNDV_THRESH. */
static void test_parse_size(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        bool ok;
        uint64_t value;
    } cases[] = {
        {"0", true, 0},
        {"65536", true, 65536},
        {"64k", true, 65536},
        {" 1M ", true, 1u << 20},
        {"2g", true, 2ull << 30},
        {"18446744073709551615", true, UINT64_MAX},
        {"18446744073709551616", false, 0},
        {"17179869184g", false, 0},
        {"", false, 0},
        {"auto", false, 0},
        {"-1", false, 0},
        {"64kb", false, 0},
        {"1 k", false, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        uint64_t value = 12345;
        bool ok = fy_config_parse_size(cases[i].text, &value);
        assert_int_equal(ok, cases[i].ok);
        assert_int_equal(value, cases[i].ok ? cases[i].value : 12345);
    }
}

static void test_string(void **state)
{
    (void)state;
    fy_config_var_t var = make_var("FERRY_TEST_STRING", FERRY_CONFIG_STRING, "self,shm");
    fy_config_var_t no_default = make_var("FERRY_TEST_STRING_NULL", FERRY_CONFIG_STRING, NULL);

    capture_start();
    unsetenv(var.name);
    unsetenv(no_default.name);
    assert_string_equal(ferry_config_string(&var), "self,shm");
    assert_string_equal(ferry_config_string(&no_default), "");
    setenv(var.name, " tcp ", 1); /* strings are taken as they are */
    assert_string_equal(ferry_config_string(&var), " tcp ");
    setenv(var.name, "", 1);
    assert_string_equal(ferry_config_string(&var), "self,shm");
    assert_silent(capture_stop());
    unsetenv(var.name);
}

/* One bad value per variable: the default comes back, with one warning naming the variable, the
 * value and the expected form; a second read of the same variable is silent. */
static void test_bad_values_warn_once(void **state)
{
    (void)state;
    static const struct {
        fy_config_type_t type;
        const char *text;
        const char *def;
        const char *expected;
    } cases[] = {
        {FERRY_CONFIG_BOOL, "maybe", "yes", "y, yes, on, 1, true, n, no, off, 0 or false"},
        {FERRY_CONFIG_BOOL, "2", "no", "y, yes"},
        {FERRY_CONFIG_BOOL, "yess", "no", "y, yes"},
        {FERRY_CONFIG_INT, "12abc", "5", "a signed decimal integer"},
        {FERRY_CONFIG_INT, "1.5", "5", "signed decimal"},
        {FERRY_CONFIG_INT, "0x10", "5", "signed decimal"},
        {FERRY_CONFIG_INT, "-", "5", "signed decimal"},
        {FERRY_CONFIG_INT, "9223372036854775808", "5", "signed decimal"},
        {FERRY_CONFIG_INT, "-9223372036854775809", "5", "signed decimal"},
        {FERRY_CONFIG_INT, "4k", "5", "signed decimal"},
        {FERRY_CONFIG_SIZE, "-1", "8k", "suffix k, m or g"},
        {FERRY_CONFIG_SIZE, "+1", "8k", "suffix k, m or g"},
        {FERRY_CONFIG_SIZE, "1.5k", "8k", "suffix k, m or g"},
        {FERRY_CONFIG_SIZE, "4kb", "8k", "suffix k, m or g"},
        {FERRY_CONFIG_SIZE, "4t", "8k", "suffix k, m or g"},
        {FERRY_CONFIG_SIZE, "k", "8k", "suffix k, m or g"},
        {FERRY_CONFIG_SIZE, "4 k", "8k", "suffix k, m or g"},
        {FERRY_CONFIG_SIZE, "18446744073709551616", "8k", "unsigned decimal"},
        {FERRY_CONFIG_SIZE, "17179869184g", "8k", "unsigned decimal"},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
        char name[64];
        snprintf(name, sizeof(name), "FERRY_TEST_BAD_%zu", i);
        fy_config_var_t var = make_var(name, cases[i].type, cases[i].def);
        setenv(name, cases[i].text, 1);

        for (int round = 0; round < 2; ++round) {
            capture_start();
            bool ok;
            switch (cases[i].type) {
            case FERRY_CONFIG_BOOL:
                ok = ferry_config_bool(&var) == (strcmp(cases[i].def, "yes") == 0);
                break;
            case FERRY_CONFIG_INT:
                ok = ferry_config_int(&var) == 5;
                break;
            default:
                ok = ferry_config_size(&var) == 8192;
                break;
            }
            char *out = capture_stop();
            if (!ok)
                fail_msg("%s=\"%s\" did not give the default", name, cases[i].text);
            if (round == 0) {
                char quoted[64];
                snprintf(quoted, sizeof(quoted), "\"%s\"", cases[i].text);
                const char *const needles[] = {name, quoted, cases[i].expected, "default"};
                assert_one_line(out, "WARN", needles, 4);
                free(out);
            } else {
                assert_silent(out); /* once per variable per process */
            }
        }
        unsetenv(name);
    }
}

/* A default that does not parse is a bug in ferry: logged once as an error, the value is 0. */
static void test_bad_default(void **state)
{
    (void)state;
    fy_config_var_t var = make_var("FERRY_TEST_BAD_DEFAULT", FERRY_CONFIG_SIZE, "lots");
    unsetenv(var.name);

    capture_start();
    assert_int_equal(ferry_config_size(&var), 0);
    char *out = capture_stop();
    const char *const needles[] = {"FERRY_TEST_BAD_DEFAULT", "\"lots\""};
    assert_one_line(out, "ERROR", needles, 2);
    free(out);

    capture_start();
    assert_int_equal(ferry_config_size(&var), 0);
    assert_silent(capture_stop());
}

/* ---------------------------------------------------------------- registry */

static void test_registry_sorted(void **state)
{
    (void)state;
    const fy_config_var_t *const *vars = NULL;
    size_t count = fy_config_vars(&vars);
    assert_true(count >= 4);
    assert_non_null(vars);

    bool seen_level = false, seen_file = false, seen_first = false, seen_last = false;
    for (size_t i = 0; i < count; ++i) {
        assert_non_null(vars[i]);
        assert_non_null(vars[i]->name);
        assert_non_null(vars[i]->default_value);
        assert_non_null(vars[i]->description);
        assert_true(strncmp(vars[i]->name, "FERRY_", 6) == 0);
        if (i > 0 && strcmp(vars[i - 1]->name, vars[i]->name) >= 0)
            fail_msg("not sorted: %s before %s", vars[i - 1]->name, vars[i]->name);
        seen_level |= strcmp(vars[i]->name, "FERRY_LOG_LEVEL") == 0;
        seen_file |= strcmp(vars[i]->name, "FERRY_LOG_FILE") == 0;
        seen_first |= vars[i] == &test_first_var;
        seen_last |= vars[i] == &test_last_var;
    }
    assert_true(seen_level && seen_file && seen_first && seen_last);

    /* The same snapshot every time. */
    const fy_config_var_t *const *again = NULL;
    assert_int_equal(fy_config_vars(&again), count);
    assert_ptr_equal(again, vars);

    /* Registered variables read like any other. */
    assert_true(ferry_config_bool(&test_first_var));
    assert_int_equal(ferry_config_size(&test_last_var), 4096);
}

static void *registry_thread(void *arg)
{
    const fy_config_var_t *const **vars_p = arg;
    fy_config_vars(vars_p);
    return NULL;
}

static void test_registry_threads(void **state)
{
    (void)state;
    enum { THREADS = 8 };
    pthread_t threads[THREADS];
    const fy_config_var_t *const *vars[THREADS];
    for (int i = 0; i < THREADS; ++i)
        assert_int_equal(pthread_create(&threads[i], NULL, registry_thread, &vars[i]), 0);
    for (int i = 0; i < THREADS; ++i)
        assert_int_equal(pthread_join(threads[i], NULL), 0);
    for (int i = 1; i < THREADS; ++i)
        assert_ptr_equal(vars[i], vars[0]);
}

/* ---------------------------------------------------------------- unknown FERRY_* names */

static void expect_unknown(const char *out, const char *name, const char *suggestion)
{
    char line_start[128];
    snprintf(line_start, sizeof(line_start), "] WARN config.c:");
    const char *line = strstr(out, name);
    if (line == NULL)
        fail_msg("no warning about %s in \"%s\"", name, out);
    const char *begin = line;
    while (begin > out && begin[-1] != '\n')
        --begin;
    const char *end = strchr(line, '\n');
    assert_non_null(end);
    char text[512];
    snprintf(text, sizeof(text), "%.*s", (int)(end - begin), begin);
    if (strstr(text, line_start) == NULL ||
        strstr(text, "not a ferry configuration variable") == NULL)
        fail_msg("unexpected warning \"%s\"", text);
    if (suggestion != NULL) {
        char mean[128];
        snprintf(mean, sizeof(mean), "did you mean %s?", suggestion);
        if (strstr(text, mean) == NULL)
            fail_msg("\"%s\" does not suggest %s", text, suggestion);
    } else if (strstr(text, "did you mean") != NULL) {
        fail_msg("\"%s\" suggests something", text);
    }
}

static void test_unknown_environment(void **state)
{
    (void)state;
    setenv("FERRY_LOG_LEVLE", "debug", 1);                  /* transposition */
    setenv("FERRY_LOGFILE", "/tmp/x", 1);                   /* deletion */
    setenv("ferry_test_aa_first", "1", 1);                  /* wrong case */
    setenv("FERRY_TEST_ZZ_LATS", "1", 1);                   /* transposition */
    setenv("FERRY_XQXQXQXQXQXQXQXQXQXQXQXQXQXQXQ", "1", 1); /* nothing close */
    setenv("FERRY_TEST_AA_FIRST", "1", 1);                  /* registered: silent */
    setenv("NOT_FERRY_LOG_LEVEL", "1", 1);                  /* not ours: silent */

    capture_start();
    fy_config_check_environment();
    char *out = capture_stop();
    assert_int_equal(count_lines(out), 5);
    expect_unknown(out, "FERRY_LOG_LEVLE", "FERRY_LOG_LEVEL");
    expect_unknown(out, "FERRY_LOGFILE", "FERRY_LOG_FILE");
    expect_unknown(out, "ferry_test_aa_first", "FERRY_TEST_AA_FIRST");
    expect_unknown(out, "FERRY_TEST_ZZ_LATS", "FERRY_TEST_ZZ_LAST");
    expect_unknown(out, "FERRY_XQXQXQXQXQXQXQXQXQXQXQXQXQXQXQ", NULL);
    assert_null(strstr(out, "NOT_FERRY"));
    free(out);

    /* Once per name per process. */
    capture_start();
    fy_config_check_environment();
    assert_silent(capture_stop());

    /* A new name is still reported. */
    setenv("FERRY_TEST_AA_FIRTS", "1", 1);
    capture_start();
    fy_config_check_environment();
    out = capture_stop();
    assert_int_equal(count_lines(out), 1);
    expect_unknown(out, "FERRY_TEST_AA_FIRTS", "FERRY_TEST_AA_FIRST");
    free(out);

    const char *const set[] = {"FERRY_LOG_LEVLE",
                               "FERRY_LOGFILE",
                               "ferry_test_aa_first",
                               "FERRY_TEST_ZZ_LATS",
                               "FERRY_XQXQXQXQXQXQXQXQXQXQXQXQXQXQXQ",
                               "FERRY_TEST_AA_FIRST",
                               "NOT_FERRY_LOG_LEVEL",
                               "FERRY_TEST_AA_FIRTS"};
    for (size_t i = 0; i < sizeof(set) / sizeof(set[0]); ++i)
        unsetenv(set[i]);
}

/* ---------------------------------------------------------------- closest name */

static void test_closest_name(void **state)
{
    (void)state;
    const char *const transports[] = {"self", "shm", "tcp"};
    const char *const vars[] = {"FERRY_LOG_FILE", "FERRY_LOG_LEVEL", "FERRY_RNDV_MODE",
                                "FERRY_TRANSPORTS"};
    const size_t nt = sizeof(transports) / sizeof(transports[0]);
    const size_t nv = sizeof(vars) / sizeof(vars[0]);

    assert_string_equal(fy_closest_name("shm", transports, nt), "shm");   /* exact */
    assert_string_equal(fy_closest_name("SHM", transports, nt), "shm");   /* case */
    assert_string_equal(fy_closest_name("smh", transports, nt), "shm");   /* swap */
    assert_string_equal(fy_closest_name("tpc", transports, nt), "tcp");   /* swap */
    assert_string_equal(fy_closest_name("tc", transports, nt), "tcp");    /* deletion */
    assert_string_equal(fy_closest_name("shmm", transports, nt), "shm");  /* insertion */
    assert_string_equal(fy_closest_name("slef", transports, nt), "self"); /* swap */
    assert_string_equal(fy_closest_name("sel", transports, nt), "self");
    assert_null(fy_closest_name("xyz", transports, nt)); /* 3 edits > 2 */
    assert_null(fy_closest_name("infiniband", transports, nt));
    assert_null(fy_closest_name("", transports, nt)); /* 3 edits at least */

    assert_string_equal(fy_closest_name("FERRY_LOG_LEVLE", vars, nv), "FERRY_LOG_LEVEL");
    assert_string_equal(fy_closest_name("fy_log_level", vars, nv), "FERRY_LOG_LEVEL");
    assert_string_equal(fy_closest_name("FERRY_LOG_FIEL", vars, nv), "FERRY_LOG_FILE");
    assert_string_equal(fy_closest_name("FERRY_TRANSPORT", vars, nv), "FERRY_TRANSPORTS");
    assert_string_equal(fy_closest_name("FERRY_RNDV_MOD", vars, nv), "FERRY_RNDV_MODE");
    /* 10 characters allow 3 edits; FERRY_RNDV_MODE is 5 away. */
    assert_null(fy_closest_name("FERRY_RNDV", vars, nv));
    assert_null(fy_closest_name("FERRY_SHM_FIFO_CELLS", vars, nv));

    /* Ties go to the first candidate. */
    const char *const ties[] = {"abcd", "abce"};
    assert_string_equal(fy_closest_name("abcf", ties, 2), "abcd");

    /* Degenerate input. */
    assert_null(fy_closest_name(NULL, transports, nt));
    assert_null(fy_closest_name("shm", NULL, 0));
    assert_null(fy_closest_name("shm", transports, 0));
    const char *const with_null[] = {NULL, "shm"};
    assert_string_equal(fy_closest_name("shn", with_null, 2), "shm");
}

/* ---------------------------------------------------------------- a context's settings */

/* A context's settings win over the environment, for every type; "NAME=" is the default; the
 * last setting of a name wins; NULL and empty lists are empty sets; bad ones are refused with
 * one warning and leave *set alone. */
static void test_context_set(void **state)
{
    (void)state;
    static const char *const settings[] = {"FERRY_TEST_ZZ_LAST= 64k ", "FERRY_TEST_AA_FIRST=no",
                                           "FERRY_TEST_AA_FIRST=off", NULL};
    static const char *const empty_value[] = {"FERRY_TEST_ZZ_LAST=", NULL};
    fy_config_set_t set, none, empty;

    capture_start();
    setenv("FERRY_TEST_ZZ_LAST", "1m", 1);
    setenv("FERRY_TEST_AA_FIRST", "yes", 1);
    assert_int_equal(fy_config_set_init(&set, settings), FERRY_OK);
    assert_int_equal(set.count, 3);
    assert_int_equal(fy_config_size_in(&set, &test_last_var), 64u << 10);
    assert_false(fy_config_bool_in(&set, &test_first_var));
    assert_string_equal(fy_config_set_value(&set, &test_first_var), "off"); /* the last wins */
    assert_string_equal(fy_config_string_in(&set, &test_last_var), "64k");  /* blanks trimmed */
    /* without the set: the environment */
    assert_int_equal(fy_config_size_in(NULL, &test_last_var), 1u << 20);
    assert_true(fy_config_bool_in(NULL, &test_first_var));
    assert_null(fy_config_set_value(NULL, &test_first_var));
    fy_config_set_cleanup(&set);

    assert_int_equal(fy_config_set_init(&empty, empty_value), FERRY_OK);
    assert_int_equal(fy_config_size_in(&empty, &test_last_var), 4u << 10); /* the default */
    assert_string_equal(fy_config_string_in(&empty, &test_last_var), "4k");
    fy_config_set_cleanup(&empty);
    assert_int_equal(fy_config_set_init(&none, NULL), FERRY_OK);
    assert_int_equal(none.count, 0);
    assert_int_equal(fy_config_size_in(&none, &test_last_var), 1u << 20);
    fy_config_set_cleanup(&none);
    unsetenv("FERRY_TEST_ZZ_LAST");
    unsetenv("FERRY_TEST_AA_FIRST");
    assert_silent(capture_stop());

    static const struct {
        const char *setting;
        const char *needle;
    } bad[] = {
        {"FERRY_TEST_ZZ_LAST", "is not NAME=value"},
        {"FERRY_TEST_ZZ_LASD=1", "did you mean FERRY_TEST_ZZ_LAST?"},
        {"FERRY_TEST_ZZ_LAST=12q", "expected an unsigned decimal integer"},
        {"FERRY_TEST_AA_FIRST=perhaps", "expected y, yes, on"},
        {"FERRY_LOG_LEVEL=debug", "process-wide"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        const char *const list[] = {"FERRY_TEST_AA_FIRST=1", bad[i].setting, NULL};
        fy_config_set_t untouched = {.count = 77};
        capture_start();
        assert_int_equal(fy_config_set_init(&untouched, list), FERRY_ERR_INVALID_PARAM);
        char *text = capture_stop();
        assert_one_line(text, "WARN", &bad[i].needle, 1);
        free(text);
        assert_int_equal(untouched.count, 77);
    }
}

int main(void)
{
    /* Hermetic: warnings at the default level on stderr, no FERRY_* from the caller. */
    for (;;) {
        char name[256] = "";
        for (char **env = environ; env != NULL && *env != NULL; ++env) {
            if (strncasecmp(*env, "FERRY_", 6) == 0) {
                snprintf(name, sizeof(name), "%.*s", (int)strcspn(*env, "="), *env);
                break;
            }
        }
        if (name[0] == '\0' || unsetenv(name) != 0)
            break;
    }
    setenv("FERRY_LOG_LEVEL", "warn", 1);
    ferry_log_init();

    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_bool, capture_teardown),
        cmocka_unit_test_teardown(test_int, capture_teardown),
        cmocka_unit_test_teardown(test_size, capture_teardown),
        cmocka_unit_test_teardown(test_parse_size, capture_teardown),
        cmocka_unit_test_teardown(test_string, capture_teardown),
        cmocka_unit_test_teardown(test_bad_values_warn_once, capture_teardown),
        cmocka_unit_test_teardown(test_bad_default, capture_teardown),
        cmocka_unit_test_teardown(test_registry_sorted, capture_teardown),
        cmocka_unit_test_teardown(test_registry_threads, capture_teardown),
        cmocka_unit_test_teardown(test_unknown_environment, capture_teardown),
        cmocka_unit_test_teardown(test_closest_name, capture_teardown),
        cmocka_unit_test_teardown(test_context_set, capture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
