/* Failing and skipping: one message, then the peers are killed and the process exits. */
#define _GNU_SOURCE
#include "ft_check.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ft_capture.h"
#include "ft_peer.h"

int ft_stderr_fd = 2;
static const char *ft_role_name = "main";

void ft_set_role(const char *role)
{
    ft_role_name = role;
}

const char *ft_role(void)
{
    return ft_role_name;
}

static void ft_vprint(const char *prefix, const char *fmt, va_list ap)
{
    char line[2048];
    int n = snprintf(line, sizeof(line), "[mp %s %ld] %s", ft_role_name, (long)getpid(), prefix);
    if (n < 0)
        return;
    if ((size_t)n < sizeof(line))
        vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
    size_t len = strnlen(line, sizeof(line) - 2);
    line[len++] = '\n';
    size_t done = 0;
    while (done < len) {
        ssize_t w = write(ft_stderr_fd, line + done, len - done);
        if (w <= 0 && errno != EINTR)
            return;
        if (w > 0)
            done += (size_t)w;
    }
}

void ft_note(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ft_vprint("", fmt, ap);
    va_end(ap);
}

_Noreturn void ft_fail_at(const char *file, int line, const char *fmt, ...)
{
    char prefix[512];
    va_list ap;
    ft_capture_abort();
    snprintf(prefix, sizeof(prefix), "FAIL %s:%d: ", file, line);
    va_start(ap, fmt);
    ft_vprint(prefix, fmt, ap);
    va_end(ap);
    ft_peers_abort();
    fflush(NULL);
    _exit(1);
}

_Noreturn void ft_skip(const char *fmt, ...)
{
    va_list ap;
    ft_capture_abort();
    va_start(ap, fmt);
    ft_vprint("SKIP: ", fmt, ap);
    va_end(ap);
    ft_peers_abort();
    fflush(NULL);
    _exit(77);
}

static void ft_watchdog_handler(int sig)
{
    static const char msg[] = "[mp] FAIL: the watchdog fired: the test ran longer than it "
                              "may (a hang); killing its peers\n";
    (void)sig;
    if (write(ft_stderr_fd, msg, sizeof(msg) - 1) < 0) {
        /* nothing to do */
    }
    ft_peers_kill_all_signal_safe();
    _exit(1);
}

void ft_watchdog(unsigned seconds)
{
    signal(SIGALRM, ft_watchdog_handler);
    alarm(seconds);
}

uint64_t ft_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void ft_sleep_ms(unsigned ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}
