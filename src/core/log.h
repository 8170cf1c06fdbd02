/* Logging: levels error|warn|info|debug|trace from FERRY_LOG_LEVEL (warn by default).
 * The function that detects an error logs it once: the call, its object (path, pid, fd,
 * size), strerror(errno), and the fix when one is known.
 * ferry_log_level_current, ferry_log_init and ferry_log_write are exported by libferry.so for
 * ferry's companion libraries (libferry_bootstrap): internal, no API promise. */
#ifndef FERRY_CORE_LOG_H
#define FERRY_CORE_LOG_H

#include <stdarg.h>

typedef enum fy_log_level {
    FERRY_LOG_LEVEL_ERROR = 0,
    FERRY_LOG_LEVEL_WARN = 1,
    FERRY_LOG_LEVEL_INFO = 2,
    FERRY_LOG_LEVEL_DEBUG = 3,
    FERRY_LOG_LEVEL_TRACE = 4,
} fy_log_level_t;

/* Current level; read once from FERRY_LOG_LEVEL by ferry_log_init(). Accessed with relaxed
 * atomics (a plain load on every CPU) because a thread may log while another initialises. */
extern fy_log_level_t ferry_log_level_current;

/* Read FERRY_LOG_LEVEL and open FERRY_LOG_FILE (idempotent, thread-safe, called by
 * ferry_context_create; the first message logged before it calls it too). */
void ferry_log_init(void);

/* Write one line "[ferry <pid>] LEVEL file:line message" to stderr, or append it to
 * FERRY_LOG_FILE, with one write(2) (lines of threads and processes never mix). file is shown
 * by its basename; a message longer than a line (PIPE_BUF) is cut and ends with "...".
 * errno is preserved (and %m may be used). */
void ferry_log_write(fy_log_level_t level, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The level test is inline so that a disabled message costs one load and one compare. */
#define fy_log(level, ...)                                                                         \
    do {                                                                                           \
        if ((int)(level) <= (int)__atomic_load_n(&ferry_log_level_current, __ATOMIC_RELAXED))      \
            ferry_log_write((level), __FILE__, __LINE__, __VA_ARGS__);                             \
    } while (0)

#define fy_error(...) fy_log(FERRY_LOG_LEVEL_ERROR, __VA_ARGS__)
#define fy_warn(...) fy_log(FERRY_LOG_LEVEL_WARN, __VA_ARGS__)
#define fy_info(...) fy_log(FERRY_LOG_LEVEL_INFO, __VA_ARGS__)
#define fy_debug(...) fy_log(FERRY_LOG_LEVEL_DEBUG, __VA_ARGS__)
#define fy_trace(...) fy_log(FERRY_LOG_LEVEL_TRACE, __VA_ARGS__)

#endif
