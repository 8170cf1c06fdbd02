/* Logging: levels error|warn|info|debug|trace from FERRY_LOG_LEVEL (warn by default).
 * The function that detects an error logs it once: the call, its object (path, pid, fd,
 * size), strerror(errno), and the fix when one is known.
 * ferry_log_level_current, ferry_log_init and ferry_log_write are exported by libferry.so for
 * ferry's companion libraries (libferry_bootstrap): internal, no API promise. */
#ifndef FERRY_CORE_LOG_H
#define FERRY_CORE_LOG_H

#include <stdarg.h>
#include <stdint.h>

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

/* The rate limit of one call site whose message a peer can trigger (a hostile connection, a
 * bad frame or key): the first FY_LOG_LIMIT_BURST lines are written, then at most one a
 * second, which says how many lines of that site were suppressed before it. Each such site
 * has its own zero-initialised static limit and logs with fy_warn_limited(&limit, ...).
 * Thread-safe (a lock in log.c: logging is never a fast path). */
typedef struct fy_log_limit {
    uint64_t last_ns;    /* when the site last wrote a line */
    uint64_t written;    /* lines written */
    uint64_t suppressed; /* lines suppressed since the last one written */
} fy_log_limit_t;

#define FY_LOG_LIMIT_BURST 5

/* ferry_log_write under limit: writes the line, with the suppressed count, or counts it. */
void fy_log_write_limited(fy_log_limit_t *limit, fy_log_level_t level, const char *file, int line,
                          const char *fmt, ...) __attribute__((format(printf, 5, 6)));

#define fy_log_limited(limit, level, ...)                                                          \
    do {                                                                                           \
        if ((int)(level) <= (int)__atomic_load_n(&ferry_log_level_current, __ATOMIC_RELAXED))      \
            fy_log_write_limited((limit), (level), __FILE__, __LINE__, __VA_ARGS__);               \
    } while (0)

#define fy_warn_limited(limit, ...) fy_log_limited((limit), FERRY_LOG_LEVEL_WARN, __VA_ARGS__)

#define fy_error(...) fy_log(FERRY_LOG_LEVEL_ERROR, __VA_ARGS__)
#define fy_warn(...) fy_log(FERRY_LOG_LEVEL_WARN, __VA_ARGS__)
#define fy_info(...) fy_log(FERRY_LOG_LEVEL_INFO, __VA_ARGS__)
#define fy_debug(...) fy_log(FERRY_LOG_LEVEL_DEBUG, __VA_ARGS__)
#define fy_trace(...) fy_log(FERRY_LOG_LEVEL_TRACE, __VA_ARGS__)

#endif
