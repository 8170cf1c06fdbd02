/* src/core/log.c: FERRY_LOG_LEVEL parsing, the line format, errno, long messages, FERRY_LOG_FILE,
 * and whole lines when threads and processes log at once.
 *
 * The level is read once per process, so every case runs in a fresh child: this program
 * re-executes itself (/proc/self/exe <mode>) with the environment of the case and reads the
 * child's stderr through a pipe. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <regex.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/log.h"

extern char **environ;

/* ---------------------------------------------------------------- child side */

enum { CHILD_THREADS = 8, CHILD_PROCS = 4, LINES_EACH = 200 };

/* Exit codes of a child that found something wrong on its side. */
enum { CHILD_ERRNO_CHANGED = 3, CHILD_SETUP_FAILED = 4 };

/* One message at each level. */
static int child_levels(void)
{
    ferry_log_init();
    fy_error("message at level %d", 0);
    fy_warn("message at level %d", 1);
    fy_info("message at level %d", 2);
    fy_debug("message at level %d", 3);
    fy_trace("message at level %d", 4);
    return 0;
}

/* Without ferry_log_init(): the first message initialises the log, and obeys the level. */
static int child_no_init(void)
{
    fy_warn("message at level %d", 1);
    fy_error("message at level %d", 0);
    return 0;
}

static int child_format(void)
{
    ferry_log_init();

    errno = 1234;
    ferry_log_write(FERRY_LOG_LEVEL_WARN, "/some/dir/some_file.c", 321, "hello %s %d", "world", 7);
    if (errno != 1234)
        return CHILD_ERRNO_CHANGED;

    errno = ENOENT; /* %m reads errno */
    ferry_log_write(FERRY_LOG_LEVEL_ERROR, "plain.c", 1, "open(/x) failed: %m");
    if (errno != ENOENT)
        return CHILD_ERRNO_CHANGED;

    ferry_log_write(FERRY_LOG_LEVEL_INFO, "newline.c", 2, "ends with a newline\n");

    char *big = malloc(10000);
    if (big == NULL)
        return CHILD_SETUP_FAILED;
    memset(big, 'x', 9999);
    big[9999] = '\0';
    errno = EAGAIN;
    ferry_log_write(FERRY_LOG_LEVEL_WARN, "big.c", 3, "%s", big);
    free(big);
    if (errno != EAGAIN)
        return CHILD_ERRNO_CHANGED;

    /* Below the level: nothing, errno untouched. */
    errno = EBUSY;
    ferry_log_write(FERRY_LOG_LEVEL_DEBUG, "hidden.c", 4, "not shown");
    if (errno != EBUSY)
        return CHILD_ERRNO_CHANGED;
    return 0;
}

/* The first message initialises the log, whose open(FERRY_LOG_FILE) fails: errno is still the
 * caller's, for %m and after the call. */
static int child_errno(void)
{
    errno = 1234;
    fy_warn("first: %m");
    if (errno != 1234)
        return CHILD_ERRNO_CHANGED;
    errno = 4321;
    ferry_log_init();
    if (errno != 4321)
        return CHILD_ERRNO_CHANGED;
    return 0;
}

/* A long line, so that interleaved writes would show. */
static void log_numbered(int writer, int i)
{
    fy_warn("writer %d line %d %0200d end", writer, i, 0);
}

static void *child_thread(void *arg)
{
    int writer = (int)(intptr_t)arg;
    for (int i = 0; i < LINES_EACH; ++i)
        log_numbered(writer, i);
    return NULL;
}

/* Threads start logging together, without ferry_log_init(): the init races too. */
static int child_threads(void)
{
    pthread_t threads[CHILD_THREADS];
    for (int t = 0; t < CHILD_THREADS; ++t) {
        if (pthread_create(&threads[t], NULL, child_thread, (void *)(intptr_t)t) != 0)
            return CHILD_SETUP_FAILED;
    }
    for (int t = 0; t < CHILD_THREADS; ++t)
        pthread_join(threads[t], NULL);
    return 0;
}

static int child_procs(void)
{
    pid_t pids[CHILD_PROCS];
    ferry_log_init();
    for (int p = 0; p < CHILD_PROCS; ++p) {
        pids[p] = fork();
        if (pids[p] < 0)
            return CHILD_SETUP_FAILED;
        if (pids[p] == 0) {
            for (int i = 0; i < LINES_EACH; ++i)
                log_numbered(p, i);
            _exit(0);
        }
    }
    int result = 0;
    for (int p = 0; p < CHILD_PROCS; ++p) {
        int status;
        if (waitpid(pids[p], &status, 0) != pids[p] || !WIFEXITED(status) ||
            WEXITSTATUS(status) != 0)
            result = CHILD_SETUP_FAILED;
    }
    return result;
}

/* ---------------------------------------------------------------- parent side */

typedef struct child_result {
    pid_t pid;
    int status; /* from waitpid */
    char *err;  /* everything written to stderr */
} child_result_t;

/* Run this program as "<self> mode" with the environment less every FERRY_* variable, plus
 * extra_env (NULL-terminated "NAME=value" strings). */
static void run_child(const char *mode, const char *const *extra_env, child_result_t *result)
{
    size_t n_env = 0, n_extra = 0;
    while (environ[n_env] != NULL)
        ++n_env;
    while (extra_env != NULL && extra_env[n_extra] != NULL)
        ++n_extra;
    char **envp = calloc(n_env + n_extra + 1, sizeof(*envp));
    assert_non_null(envp);
    size_t k = 0;
    for (size_t i = 0; i < n_env; ++i) {
        if (strncasecmp(environ[i], "FERRY_", 6) != 0)
            envp[k++] = environ[i];
    }
    for (size_t i = 0; i < n_extra; ++i)
        envp[k++] = (char *)extra_env[i];
    envp[k] = NULL;

    int fds[2];
    assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fds[1], STDERR_FILENO); /* dup2 clears O_CLOEXEC on the copy */
        char *const argv[] = {"test_log", (char *)mode, NULL};
        execve("/proc/self/exe", argv, envp);
        _exit(127);
    }
    free(envp);
    close(fds[1]);

    size_t size = 0, cap = 4096;
    char *err = malloc(cap);
    assert_non_null(err);
    for (;;) {
        if (size + 1 >= cap) {
            cap *= 2;
            err = realloc(err, cap);
            assert_non_null(err);
        }
        ssize_t r = read(fds[0], err + size, cap - size - 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        size += (size_t)r;
    }
    err[size] = '\0';
    close(fds[0]);

    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    result->pid = pid;
    result->status = status;
    result->err = err;
}

static void assert_child_ok(const child_result_t *r)
{
    if (!WIFEXITED(r->status) || WEXITSTATUS(r->status) != 0)
        fail_msg("child %d ended with status 0x%x; its stderr:\n%s", (int)r->pid, r->status,
                 r->err);
}

/* One parsed line "[ferry <pid>] LEVEL file:line message"; message points into the text. */
typedef struct log_line {
    long pid;
    int level; /* 0..4 */
    char file[64];
    int line;
    const char *message;
    size_t length; /* of the whole line, newline included */
} log_line_t;

enum { MAX_LINES = 4096 };

static const char *const level_labels[] = {"ERROR", "WARN", "INFO", "DEBUG", "TRACE"};
static regex_t line_re;

/* Split text (modified in place) into lines, each of which must be a well-formed log line. */
static size_t parse_lines(char *text, log_line_t *lines, size_t max)
{
    size_t count = 0;
    size_t len = strlen(text);
    if (len > 0 && text[len - 1] != '\n')
        fail_msg("output does not end with a newline:\n%s", text);

    for (char *line = text; *line != '\0';) {
        char *nl = strchr(line, '\n');
        *nl = '\0';
        regmatch_t m[6];
        if (regexec(&line_re, line, 6, m, 0) != 0)
            fail_msg("not a log line: \"%s\"", line);
        assert_true(count < max);
        log_line_t *l = &lines[count++];
        l->pid = strtol(line + m[1].rm_so, NULL, 10);
        l->level = -1;
        for (int i = 0; i < 5; ++i) {
            if (strncmp(line + m[2].rm_so, level_labels[i], (size_t)(m[2].rm_eo - m[2].rm_so)) ==
                    0 &&
                level_labels[i][m[2].rm_eo - m[2].rm_so] == '\0')
                l->level = i;
        }
        snprintf(l->file, sizeof(l->file), "%.*s", (int)(m[3].rm_eo - m[3].rm_so),
                 line + m[3].rm_so);
        l->line = (int)strtol(line + m[4].rm_so, NULL, 10);
        l->message = line + m[5].rm_so;
        l->length = (size_t)(nl - line) + 1;
        line = nl + 1;
    }
    return count;
}

/* ---------------------------------------------------------------- levels */

static void check_levels(const char *value, int expected_level, bool invalid)
{
    char setting[64] = "";
    const char *env[2] = {NULL, NULL};
    if (value != NULL) {
        snprintf(setting, sizeof(setting), "FERRY_LOG_LEVEL=%s", value);
        env[0] = setting;
    }

    child_result_t r;
    run_child("levels", env, &r);
    assert_child_ok(&r);
    char *copy = strdup(r.err);
    log_line_t *lines = calloc(MAX_LINES, sizeof(*lines));
    assert_non_null(lines);
    size_t n = parse_lines(copy, lines, MAX_LINES);

    int next_level = 0;
    int warnings = 0;
    for (size_t i = 0; i < n; ++i) {
        const log_line_t *l = &lines[i];
        if (l->pid != (long)r.pid)
            fail_msg("pid %ld instead of %d in:\n%s", l->pid, (int)r.pid, r.err);
        if (strcmp(l->file, "log.c") == 0) {
            /* The warning about an invalid value, before any message. */
            if (!invalid || next_level != 0 || l->level != FERRY_LOG_LEVEL_WARN ||
                strstr(l->message, setting) == NULL ||
                strstr(l->message, "error, warn, info, debug or trace") == NULL)
                fail_msg("unexpected warning for FERRY_LOG_LEVEL=%s:\n%s", value, r.err);
            ++warnings;
            continue;
        }
        char message[64];
        snprintf(message, sizeof(message), "message at level %d", next_level);
        if (strcmp(l->file, "test_log.c") != 0 || l->level != next_level ||
            strcmp(l->message, message) != 0 || l->line <= 0)
            fail_msg("FERRY_LOG_LEVEL=%s: unexpected line %zu:\n%s", value ? value : "(unset)", i,
                     r.err);
        ++next_level;
    }
    if (next_level != expected_level + 1 || warnings != (invalid ? 1 : 0))
        fail_msg("FERRY_LOG_LEVEL=%s: %d levels and %d warnings, expected %d and %d:\n%s",
                 value ? value : "(unset)", next_level, warnings, expected_level + 1, invalid,
                 r.err);
    free(lines);
    free(copy);
    free(r.err);
}

static void test_levels(void **state)
{
    (void)state;
    static const struct {
        const char *value;
        int level;
        bool invalid;
    } cases[] = {
        {NULL, FERRY_LOG_LEVEL_WARN, false}, /* the default */
        {"", FERRY_LOG_LEVEL_WARN, false},   /* empty counts as unset */
        {"error", FERRY_LOG_LEVEL_ERROR, false}, {"ERROR", FERRY_LOG_LEVEL_ERROR, false},
        {"0", FERRY_LOG_LEVEL_ERROR, false},     {"warn", FERRY_LOG_LEVEL_WARN, false},
        {"Warn", FERRY_LOG_LEVEL_WARN, false},   {"1", FERRY_LOG_LEVEL_WARN, false},
        {"info", FERRY_LOG_LEVEL_INFO, false},   {"INFO", FERRY_LOG_LEVEL_INFO, false},
        {"2", FERRY_LOG_LEVEL_INFO, false},      {" info ", FERRY_LOG_LEVEL_INFO, false},
        {"debug", FERRY_LOG_LEVEL_DEBUG, false}, {"DeBuG", FERRY_LOG_LEVEL_DEBUG, false},
        {"3", FERRY_LOG_LEVEL_DEBUG, false},     {"trace", FERRY_LOG_LEVEL_TRACE, false},
        {"TRACE", FERRY_LOG_LEVEL_TRACE, false}, {"4", FERRY_LOG_LEVEL_TRACE, false},
        {"verbose", FERRY_LOG_LEVEL_WARN, true}, {"warning", FERRY_LOG_LEVEL_WARN, true},
        {"5", FERRY_LOG_LEVEL_WARN, true},       {"-1", FERRY_LOG_LEVEL_WARN, true},
        {"01", FERRY_LOG_LEVEL_WARN, true},      {"info debug", FERRY_LOG_LEVEL_WARN, true},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i)
        check_levels(cases[i].value, cases[i].level, cases[i].invalid);
}

/* A message logged before ferry_log_init() initialises the log and obeys FERRY_LOG_LEVEL. */
static void test_no_init(void **state)
{
    (void)state;
    const char *const env[] = {"FERRY_LOG_LEVEL=error", NULL};
    child_result_t r;
    run_child("no_init", env, &r);
    assert_child_ok(&r);
    log_line_t lines[4];
    size_t n = parse_lines(r.err, lines, 4);
    assert_int_equal(n, 1);
    assert_int_equal(lines[0].level, FERRY_LOG_LEVEL_ERROR);
    assert_string_equal(lines[0].message, "message at level 0");
    free(r.err);

    run_child("no_init", NULL, &r);
    assert_child_ok(&r);
    n = parse_lines(r.err, lines, 4);
    assert_int_equal(n, 2);
    assert_int_equal(lines[0].level, FERRY_LOG_LEVEL_WARN);
    assert_int_equal(lines[1].level, FERRY_LOG_LEVEL_ERROR);
    free(r.err);
}

/* ---------------------------------------------------------------- format */

static void test_format(void **state)
{
    (void)state;
    const char *const env[] = {"FERRY_LOG_LEVEL=info", NULL};
    child_result_t r;
    run_child("format", env, &r);
    assert_child_ok(&r); /* also: errno was preserved */

    char expected[512];
    char *text = r.err;
    snprintf(expected, sizeof(expected),
             "[ferry %d] WARN some_file.c:321 hello world 7\n"
             "[ferry %d] ERROR plain.c:1 open(/x) failed: %s\n"
             "[ferry %d] INFO newline.c:2 ends with a newline\n",
             (int)r.pid, (int)r.pid, strerror(ENOENT), (int)r.pid);
    if (strncmp(text, expected, strlen(expected)) != 0)
        fail_msg("expected:\n%sgot:\n%s", expected, text);

    /* The long message: one line of at most PIPE_BUF bytes, marked as cut. */
    char *big = text + strlen(expected);
    log_line_t line;
    assert_int_equal(parse_lines(big, &line, 1), 1);
    assert_string_equal(line.file, "big.c");
    assert_true(line.length <= PIPE_BUF);
    assert_true(line.length > PIPE_BUF - 8);
    size_t mlen = strlen(line.message);
    assert_true(mlen > 3);
    assert_string_equal(line.message + mlen - 3, "...");
    assert_int_equal(strspn(line.message, "x"), mlen - 3);
    free(r.err);
}

static void test_errno_preserved(void **state)
{
    (void)state;
    const char *const env[] = {"FERRY_LOG_FILE=/proc/no_such_dir/ferry.log", NULL};
    child_result_t r;
    run_child("errno", env, &r);
    assert_child_ok(&r);
    log_line_t lines[4];
    char *copy = strdup(r.err);
    assert_int_equal(parse_lines(copy, lines, 4), 2);
    assert_string_equal(lines[0].file, "log.c"); /* cannot open FERRY_LOG_FILE */
    char expected[128];
    snprintf(expected, sizeof(expected), "first: %s", strerror(1234));
    if (strcmp(lines[1].message, expected) != 0)
        fail_msg("expected \"%s\":\n%s", expected, r.err);
    free(copy);
    free(r.err);
}

/* ---------------------------------------------------------------- whole lines */

/* Every line is "writer <w> line <i> <200 zeros> end", and each writer's lines are in order. */
static void check_numbered(char *text, size_t writers, bool by_pid, long child_pid)
{
    log_line_t *lines = calloc(MAX_LINES, sizeof(*lines));
    assert_non_null(lines);
    size_t n = parse_lines(text, lines, MAX_LINES);
    assert_int_equal(n, writers * LINES_EACH);

    int next[CHILD_THREADS > CHILD_PROCS ? CHILD_THREADS : CHILD_PROCS] = {0};
    long pids[CHILD_PROCS] = {0};
    char zeros[201];
    memset(zeros, '0', 200);
    zeros[200] = '\0';

    for (size_t i = 0; i < n; ++i) {
        int writer, number, consumed = 0;
        char tail[256];
        if (sscanf(lines[i].message, "writer %d line %d %255s%n", &writer, &number, tail,
                   &consumed) != 3 ||
            lines[i].message[consumed] != ' ' || strcmp(lines[i].message + consumed, " end") != 0 ||
            strcmp(tail, zeros) != 0 || writer < 0 || (size_t)writer >= writers)
            fail_msg("damaged line %zu: \"%s\"", i, lines[i].message);
        if (number != next[writer])
            fail_msg("writer %d: line %d after %d", writer, number, next[writer] - 1);
        ++next[writer];
        if (by_pid) {
            if (lines[i].pid == child_pid)
                fail_msg("line from the parent instead of a forked process");
            if (pids[writer] == 0)
                pids[writer] = lines[i].pid;
            assert_int_equal(lines[i].pid, pids[writer]);
        } else {
            assert_int_equal(lines[i].pid, child_pid);
        }
    }
    free(lines);
}

static void test_threads_whole_lines(void **state)
{
    (void)state;
    child_result_t r;
    run_child("threads", NULL, &r);
    assert_child_ok(&r);
    check_numbered(r.err, CHILD_THREADS, false, r.pid);
    free(r.err);
}

static void test_processes_whole_lines(void **state)
{
    (void)state;
    child_result_t r;
    run_child("procs", NULL, &r);
    assert_child_ok(&r);
    check_numbered(r.err, CHILD_PROCS, true, r.pid);
    free(r.err);
}

/* ---------------------------------------------------------------- FERRY_LOG_FILE */

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char *text = calloc(1, 65536);
    assert_non_null(text);
    size_t n = fread(text, 1, 65535, f);
    text[n] = '\0';
    fclose(f);
    return text;
}

static void test_log_file(void **state)
{
    (void)state;
    char dir[] = "/tmp/ferry_test_log.XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256], setting[300];
    snprintf(path, sizeof(path), "%s/ferry.log", dir);
    snprintf(setting, sizeof(setting), "FERRY_LOG_FILE=%s", path);
    const char *const env[] = {setting, "FERRY_LOG_LEVEL=info", NULL};

    /* Two processes append to the file; stderr stays empty. */
    pid_t pids[2];
    for (int round = 0; round < 2; ++round) {
        child_result_t r;
        run_child("levels", env, &r);
        assert_child_ok(&r);
        if (r.err[0] != '\0')
            fail_msg("stderr not empty with FERRY_LOG_FILE:\n%s", r.err);
        free(r.err);
        pids[round] = r.pid;
    }
    char *text = read_file(path);
    log_line_t lines[8];
    assert_int_equal(parse_lines(text, lines, 8), 6);
    for (int i = 0; i < 6; ++i) {
        assert_int_equal(lines[i].pid, pids[i / 3]);
        assert_int_equal(lines[i].level, i % 3);
        assert_string_equal(lines[i].file, "test_log.c");
    }
    free(text);

    /* A path that cannot be opened: a warning on stderr naming it and why, then stderr. */
    char missing[300], missing_setting[320];
    snprintf(missing, sizeof(missing), "%s/no_such_dir/ferry.log", dir);
    snprintf(missing_setting, sizeof(missing_setting), "FERRY_LOG_FILE=%s", missing);
    const char *const env_missing[] = {missing_setting, NULL};
    child_result_t r;
    run_child("levels", env_missing, &r);
    assert_child_ok(&r);
    char *copy = strdup(r.err);
    assert_int_equal(parse_lines(copy, lines, 8), 3);
    if (strcmp(lines[0].file, "log.c") != 0 || lines[0].level != FERRY_LOG_LEVEL_WARN ||
        strstr(lines[0].message, missing) == NULL ||
        strstr(lines[0].message, strerror(ENOENT)) == NULL)
        fail_msg("expected a warning naming %s and \"%s\":\n%s", missing, strerror(ENOENT), r.err);
    assert_int_equal(lines[1].level, FERRY_LOG_LEVEL_ERROR);
    assert_int_equal(lines[2].level, FERRY_LOG_LEVEL_WARN);
    free(copy);
    free(r.err);

    assert_int_equal(unlink(path), 0);
    assert_int_equal(rmdir(dir), 0);
}

/* ---------------------------------------------------------------- main */

int main(int argc, char **argv)
{
    if (argc == 2) {
        if (strcmp(argv[1], "levels") == 0)
            return child_levels();
        if (strcmp(argv[1], "no_init") == 0)
            return child_no_init();
        if (strcmp(argv[1], "format") == 0)
            return child_format();
        if (strcmp(argv[1], "errno") == 0)
            return child_errno();
        if (strcmp(argv[1], "threads") == 0)
            return child_threads();
        if (strcmp(argv[1], "procs") == 0)
            return child_procs();
        fprintf(stderr, "test_log: unknown mode %s\n", argv[1]);
        return 2;
    }

    int rc = regcomp(&line_re,
                     "^\\[ferry ([0-9]+)\\] (ERROR|WARN|INFO|DEBUG|TRACE) ([^ /:]+):([0-9]+) (.*)$",
                     REG_EXTENDED);
    if (rc != 0) {
        fprintf(stderr, "regcomp failed: %d\n", rc);
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_levels),
        cmocka_unit_test(test_no_init),
        cmocka_unit_test(test_format),
        cmocka_unit_test(test_errno_preserved),
        cmocka_unit_test(test_threads_whole_lines),
        cmocka_unit_test(test_processes_whole_lines),
        cmocka_unit_test(test_log_file),
    };
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    regfree(&line_re);
    return rc;
}
