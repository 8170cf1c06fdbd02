/* Checks for the multi-process tests: a failed check prints where and why (with this
 * process's role and pid), kills the peers this process spawned, and exits 1. A test that
 * cannot run here calls ft_skip(), which exits 77 (ctest: skipped) after saying why. */
#ifndef FT_CHECK_H
#define FT_CHECK_H

#include <stdint.h>

#include <ferry/ferry.h>

/* Name of this process in messages ("parent", "server", ...). The string must stay valid. */
void ft_set_role(const char *role);
const char *ft_role(void);

/* One line "[mp <role> <pid>] ..." on stderr (the real one, also while it is captured). */
void ft_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

_Noreturn void ft_fail_at(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
_Noreturn void ft_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Kill the test (and its peers) if it runs longer than seconds: a clear message before the
 * ctest timeout. 0 turns the watchdog off. */
void ft_watchdog(unsigned seconds);

/* The file descriptor ft_note/ft_fail write to (stderr, or the saved real stderr while
 * ft_capture redirects fd 2). */
extern int ft_stderr_fd;

#define FT_CHECK(cond, ...)                                                                        \
    do {                                                                                           \
        if (!(cond))                                                                               \
            ft_fail_at(__FILE__, __LINE__, __VA_ARGS__);                                           \
    } while (0)

/* expr must return exactly the status expected. */
#define FT_CHECK_STATUS(expr, expected)                                                            \
    do {                                                                                           \
        ferry_status_t ft_status_ = (expr);                                                        \
        ferry_status_t ft_expected_ = (expected);                                                  \
        if (ft_status_ != ft_expected_)                                                            \
            ft_fail_at(__FILE__, __LINE__, "%s returned %s (%s), expected %s", #expr,              \
                       ferry_status_name(ft_status_), ferry_status_string(ft_status_),             \
                       ferry_status_name(ft_expected_));                                           \
    } while (0)

#define FT_CHECK_OK(expr) FT_CHECK_STATUS((expr), FERRY_OK)

/* Monotonic time (the clock is the same for every process of the host). */
uint64_t ft_now_ns(void);
void ft_sleep_ms(unsigned ms);

#endif
