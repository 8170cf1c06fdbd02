/* stderr capture: fd 2 -> pipe -> tee process -> (real stderr, memfd). */
#define _GNU_SOURCE
#include "ft_capture.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ft_check.h"

static int ft_capture_saved = -1; /* the real stderr */
static int ft_capture_mem = -1;   /* memfd with the captured bytes */
static pid_t ft_capture_tee = -1;

static void ft_write_all(int fd, const char *p, size_t len)
{
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        p += w;
        len -= (size_t)w;
    }
}

void ft_capture_begin(void)
{
    int pipefd[2];
    FT_CHECK(ft_capture_saved < 0, "a capture is already active");
    ft_capture_mem = memfd_create("ft-capture", MFD_CLOEXEC);
    FT_CHECK(ft_capture_mem >= 0, "memfd_create: %s", strerror(errno));
    FT_CHECK(pipe2(pipefd, O_CLOEXEC) == 0, "pipe2: %s", strerror(errno));
    ft_capture_saved = dup(2);
    FT_CHECK(ft_capture_saved >= 0, "dup(2): %s", strerror(errno));
    pid_t parent = getpid();
    pid_t pid = fork();
    FT_CHECK(pid >= 0, "fork (stderr tee): %s", strerror(errno));
    if (pid == 0) {
        char buf[4096];
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(1);
        /* keep only the pipe (0), the real stderr (1) and the memfd (2): a copy of ferry's
         * sockets here would hide this process's death from its peers */
        int in = dup(pipefd[0]), out = dup(ft_capture_saved), mem = dup(ft_capture_mem);
        if (in < 0 || out < 0 || mem < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(mem, 2) < 0)
            _exit(1);
        close_range(3, ~0u, 0);
        for (;;) {
            ssize_t n = read(0, buf, sizeof(buf));
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                _exit(0);
            ft_write_all(1, buf, (size_t)n);
            ft_write_all(2, buf, (size_t)n);
        }
    }
    ft_capture_tee = pid;
    close(pipefd[0]);
    FT_CHECK(dup2(pipefd[1], 2) == 2, "dup2(pipe, 2): %s", strerror(errno));
    close(pipefd[1]);
    ft_stderr_fd = ft_capture_saved;
}

static char *ft_capture_read(void)
{
    struct stat st;
    FT_CHECK(fstat(ft_capture_mem, &st) == 0, "fstat(memfd): %s", strerror(errno));
    char *text = malloc((size_t)st.st_size + 1);
    FT_CHECK(text != NULL, "out of memory");
    ssize_t n = pread(ft_capture_mem, text, (size_t)st.st_size, 0);
    text[n > 0 ? n : 0] = '\0';
    return text;
}

char *ft_capture_text(void)
{
    FT_CHECK(ft_capture_mem >= 0, "no capture is active");
    return ft_capture_read();
}

/* Put the real stderr back and let the tee finish (it exits when the pipe's last writer,
 * our fd 2, is gone). */
static void ft_capture_restore(void)
{
    dup2(ft_capture_saved, 2);
    close(ft_capture_saved);
    ft_capture_saved = -1;
    ft_stderr_fd = 2;
    int wstatus;
    while (waitpid(ft_capture_tee, &wstatus, 0) < 0 && errno == EINTR) {
    }
    ft_capture_tee = -1;
}

char *ft_capture_end(void)
{
    FT_CHECK(ft_capture_saved >= 0, "no capture is active");
    ft_capture_restore();
    char *text = ft_capture_read();
    close(ft_capture_mem);
    ft_capture_mem = -1;
    return text;
}

void ft_capture_abort(void)
{
    if (ft_capture_saved < 0)
        return;
    ft_capture_restore();
    close(ft_capture_mem);
    ft_capture_mem = -1;
}

size_t ft_count(const char *text, const char *needle)
{
    size_t n = 0, len = strlen(needle);
    if (len == 0)
        return 0;
    for (const char *p = strstr(text, needle); p != NULL; p = strstr(p + len, needle))
        n++;
    return n;
}
