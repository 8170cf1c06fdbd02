/* Logging: one line per message, written with a single write(2) so that lines of several
 * threads or processes sharing stderr (or a FERRY_LOG_FILE opened O_APPEND) never interleave. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "core/log.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "core/compiler.h"
#include "core/config.h"
#include "core/time.h"

static const fy_config_var_t log_level_var = {
    .name = "FERRY_LOG_LEVEL",
    .type = FERRY_CONFIG_STRING,
    .default_value = "warn",
    .description = "messages to print: error, warn, info, debug or trace (or 0-4)",
    .flags = FY_CONFIG_PROCESS};
static const fy_config_var_t *const log_level_reg
    __attribute__((used, section("ferry_config_registry"))) = &log_level_var;

static const fy_config_var_t log_file_var = {.name = "FERRY_LOG_FILE",
                                             .type = FERRY_CONFIG_STRING,
                                             .default_value = "",
                                             .description =
                                                 "append log lines to this file instead of stderr",
                                             .flags = FY_CONFIG_PROCESS};
static const fy_config_var_t *const log_file_reg
    __attribute__((used, section("ferry_config_registry"))) = &log_file_var;

FERRY_EXPORT fy_log_level_t ferry_log_level_current = FERRY_LOG_LEVEL_WARN;

/* Where lines go: stderr until ferry_log_init() opens FERRY_LOG_FILE. Written once, inside
 * pthread_once, before any line of this process is formatted by log_emit(). */
static int log_fd = STDERR_FILENO;
static pthread_once_t log_once = PTHREAD_ONCE_INIT;

static const char *const log_level_names[] = {"error", "warn", "info", "debug", "trace"};
static const char *const log_level_labels[] = {"ERROR", "WARN", "INFO", "DEBUG", "TRACE"};

/* One line at most PIPE_BUF bytes: a write of that size to a pipe is atomic. */
enum { LOG_LINE_MAX = PIPE_BUF };

static const char *log_basename(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash != NULL ? slash + 1 : path;
}

/* Format and write one line to fd. Never calls ferry_log_init(), so that ferry_log_init()
 * itself can use it. */
static void log_emit(int fd, fy_log_level_t level, const char *file, int line, const char *fmt,
                     va_list ap)
{
    char buf[LOG_LINE_MAX];
    const char *label =
        (unsigned)level < FERRY_ARRAY_SIZE(log_level_labels) ? log_level_labels[level] : "?";
    int n = snprintf(buf, sizeof(buf), "[ferry %ld] %s %s:%d ", (long)getpid(), label,
                     log_basename(file != NULL ? file : "?"), line);
    if (n < 0)
        return;
    size_t len = (size_t)n < sizeof(buf) - 1 ? (size_t)n : sizeof(buf) - 1;

    /* The message, leaving room for the newline. */
    int m = vsnprintf(buf + len, sizeof(buf) - len, fmt, ap);
    if (m < 0)
        m = 0;
    if ((size_t)m >= sizeof(buf) - len - 1) {
        /* Truncated (or exactly filling the buffer): keep one line, and say so. */
        static const char more[] = "...";
        len = sizeof(buf) - 1 - (sizeof(more) - 1);
        memcpy(buf + len, more, sizeof(more) - 1);
        len += sizeof(more) - 1;
    } else {
        len += (size_t)m;
    }
    while (len > 0 && buf[len - 1] == '\n') /* the caller's own newline is not doubled */
        --len;
    buf[len++] = '\n';

    size_t done = 0;
    while (done < len) {
        ssize_t w = write(fd, buf + done, len - done);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return; /* nowhere left to report it */
        }
        done += (size_t)w;
    }
}

static void log_emit_fmt(int fd, fy_log_level_t level, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void log_emit_args(int fd, fy_log_level_t level, const char *file, int line, const char *fmt,
                          ...) __attribute__((format(printf, 5, 6)));

static void log_emit_args(int fd, fy_log_level_t level, const char *file, int line, const char *fmt,
                          ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_emit(fd, level, file, line, fmt, ap);
    va_end(ap);
}

static void log_emit_fmt(int fd, fy_log_level_t level, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_emit(fd, level, __FILE__, line, fmt, ap);
    va_end(ap);
}

static bool log_is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* "warn", " WARN " or "1" -> FERRY_LOG_LEVEL_WARN; false if text is none of those. */
static bool log_parse_level(const char *text, fy_log_level_t *level_p)
{
    while (log_is_blank(*text))
        ++text;
    size_t len = strlen(text);
    while (len > 0 && log_is_blank(text[len - 1]))
        --len;

    for (size_t i = 0; i < FERRY_ARRAY_SIZE(log_level_names); ++i) {
        const char *name = log_level_names[i];
        if ((strlen(name) == len && strncasecmp(text, name, len) == 0) ||
            (len == 1 && text[0] == (char)('0' + i))) {
            *level_p = (fy_log_level_t)i;
            return true;
        }
    }
    return false;
}

static void log_init_once(void)
{
    int saved_errno = errno;

    /* The level first, so that the warnings below obey it. */
    const char *level_text = ferry_config_string(&log_level_var);
    fy_log_level_t level = FERRY_LOG_LEVEL_WARN;
    bool level_ok = log_parse_level(level_text, &level);
    __atomic_store_n(&ferry_log_level_current, level, __ATOMIC_RELAXED);

    const char *path = ferry_config_string(&log_file_var);
    if (path[0] != '\0') {
        int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
        if (fd >= 0) {
            log_fd = fd; /* kept open for the life of the process */
        } else if (FERRY_LOG_LEVEL_WARN <= level) {
            log_emit_fmt(STDERR_FILENO, FERRY_LOG_LEVEL_WARN, __LINE__,
                         "cannot open FERRY_LOG_FILE=%s: open(O_APPEND|O_CREAT) failed: %s; "
                         "logging to stderr",
                         path, strerror(errno));
        }
    }

    if (!level_ok) { /* level is warn: the warning is printed */
        log_emit_fmt(log_fd, FERRY_LOG_LEVEL_WARN, __LINE__,
                     "invalid FERRY_LOG_LEVEL=%s: expected error, warn, info, debug or trace "
                     "(or 0-4); using warn",
                     level_text);
    }
    errno = saved_errno;
}

FERRY_EXPORT void ferry_log_init(void)
{
    int saved_errno = errno;
    pthread_once(&log_once, log_init_once);
    errno = saved_errno;
}

FERRY_EXPORT void ferry_log_write(fy_log_level_t level, const char *file, int line, const char *fmt,
                                  ...)
{
    int saved_errno = errno; /* first: fmt may use %m */

    ferry_log_init();
    /* The caller tested the level before initialisation may have changed it. */
    if (level > __atomic_load_n(&ferry_log_level_current, __ATOMIC_RELAXED)) {
        errno = saved_errno;
        return;
    }

    va_list ap;
    va_start(ap, fmt);
    errno = saved_errno;
    log_emit(log_fd, level, file, line, fmt, ap);
    va_end(ap);
    errno = saved_errno;
}

static pthread_mutex_t log_limit_lock = PTHREAD_MUTEX_INITIALIZER;

void fy_log_write_limited(fy_log_limit_t *limit, fy_log_level_t level, const char *file, int line,
                          const char *fmt, ...)
{
    int saved_errno = errno; /* first: fmt may use %m */
    char message[LOG_LINE_MAX];
    uint64_t suppressed;
    bool last_free;

    ferry_log_init();
    if (level > __atomic_load_n(&ferry_log_level_current, __ATOMIC_RELAXED)) {
        errno = saved_errno;
        return;
    }
    uint64_t now = fy_time_now_ns();
    pthread_mutex_lock(&log_limit_lock);
    if (limit->written >= FY_LOG_LIMIT_BURST && now - limit->last_ns < 1000000000u) {
        limit->suppressed++;
        pthread_mutex_unlock(&log_limit_lock);
        errno = saved_errno;
        return;
    }
    suppressed = limit->suppressed;
    limit->suppressed = 0;
    limit->written++;
    limit->last_ns = now;
    last_free = limit->written == FY_LOG_LIMIT_BURST;
    pthread_mutex_unlock(&log_limit_lock);

    va_list ap;
    va_start(ap, fmt);
    errno = saved_errno;
    vsnprintf(message, sizeof(message), fmt, ap);
    va_end(ap);
    if (suppressed > 0)
        log_emit_args(log_fd, level, file, line, "%s [%llu more like this suppressed]", message,
                      (unsigned long long)suppressed);
    else if (last_free)
        log_emit_args(log_fd, level, file, line, "%s [more like this: at most one line a second]",
                      message);
    else
        log_emit_args(log_fd, level, file, line, "%s", message);
    errno = saved_errno;
}
