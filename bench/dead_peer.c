/* dead_peer: how soon a survivor learns that its shm peer was SIGKILLed (issue 11, item 6).
 *
 * For each size (MiB of touched memory the victim holds) and trial, a victim process creates a
 * worker, touches its memory, and sends its address; the survivor connects (one round trip),
 * spins in ferry_worker_progress with a pidfd of the victim beside it, SIGKILLs the victim,
 * and records the time from kill() to
 *   - the pidfd becoming readable (the kernel's exit notification), and
 *   - the endpoint's error callback (ferry: the hang-up of the handshake socket).
 * Prints per size the median, min and max of both over the trials.
 * Usage: dead_peer [trials] [sizes in MiB...]   (default: 7 trials; 0 256 1024) */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <ferry/ferry.h>

#define DP_ID 7

static uint64_t dp_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void dp_die(const char *what, ferry_status_t status)
{
    fprintf(stderr, "dead_peer: %s: %s\n", what, ferry_status_name(status));
    exit(1);
}

static ferry_status_t dp_on_ping(void *arg, const void *header, size_t header_length, void *data,
                                 size_t length, const ferry_am_recv_params_t *params)
{
    (void)arg, (void)header, (void)header_length, (void)data, (void)length;
    (void)ferry_am_send(params->reply_ep, DP_ID, NULL, 0, NULL, 0, NULL); /* a ping per trial */
    return FERRY_OK;
}

/* The victim: memory, a worker, its address over the socket, then answer pings until killed. */
static void dp_victim(int sock, size_t mib)
{
    ferry_context_t *context;
    ferry_worker_t *worker;
    const void *address;
    size_t length;
    if (mib > 0) {
        char *mem =
            mmap(NULL, mib << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (mem == MAP_FAILED)
            exit(1);
        memset(mem, 1, mib << 20);
    }
    ferry_status_t status = ferry_context_create(NULL, &context);
    if (status != FERRY_OK)
        dp_die("victim: ferry_context_create", status);
    status = ferry_worker_create(context, NULL, &worker);
    if (status != FERRY_OK)
        dp_die("victim: ferry_worker_create", status);
    ferry_am_set_handler(worker, DP_ID, dp_on_ping, NULL);
    ferry_worker_address(worker, &address, &length);
    if (send(sock, address, length, 0) != (ssize_t)length)
        exit(1);
    for (;;)
        ferry_worker_progress(worker);
}

static unsigned dp_errors;
static uint64_t dp_error_ns;
static unsigned dp_pongs;

static void dp_on_error(void *arg, ferry_ep_t *ep, ferry_status_t status)
{
    (void)arg, (void)ep, (void)status;
    dp_errors++;
    dp_error_ns = dp_now_ns();
}

static ferry_status_t dp_on_pong(void *arg, const void *header, size_t header_length, void *data,
                                 size_t length, const ferry_am_recv_params_t *params)
{
    (void)arg, (void)header, (void)header_length, (void)data, (void)length, (void)params;
    dp_pongs++;
    return FERRY_OK;
}

static int dp_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    int trials = argc > 1 ? atoi(argv[1]) : 7;
    size_t default_sizes[] = {0, 256, 1024};
    size_t nsizes = argc > 2 ? (size_t)(argc - 2) : 3;
    ferry_context_t *context;
    ferry_worker_t *worker;

    if (trials < 1 || trials > 1000) {
        fprintf(stderr, "usage: %s [trials] [sizes in MiB...]\n", argv[0]);
        return 2;
    }
    ferry_status_t status = ferry_context_create(NULL, &context);
    if (status != FERRY_OK)
        dp_die("ferry_context_create", status);
    status = ferry_worker_create(context, NULL, &worker);
    if (status != FERRY_OK)
        dp_die("ferry_worker_create", status);
    ferry_am_set_handler(worker, DP_ID, dp_on_pong, NULL);
    printf("%8s %6s %24s %24s\n", "MiB", "trials", "pidfd ms (med min max)",
           "ferry ms (med min max)");
    for (size_t s = 0; s < nsizes; s++) {
        size_t mib = argc > 2 ? (size_t)strtoull(argv[2 + s], NULL, 10) : default_sizes[s];
        double *pidfd_ms = calloc((size_t)trials, sizeof(double));
        double *ferry_ms = calloc((size_t)trials, sizeof(double));
        for (int t = 0; t < trials; t++) {
            int sv[2];
            char address[4096];
            if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
                return 1;
            pid_t pid = fork();
            if (pid == 0) {
                close(sv[0]);
                dp_victim(sv[1], mib);
            }
            close(sv[1]);
            ssize_t length = recv(sv[0], address, sizeof(address), 0);
            close(sv[0]);
            if (length <= 0)
                return 1;
            ferry_ep_params_t params = {.error_cb = dp_on_error};
            ferry_ep_t *ep;
            status = ferry_ep_create(worker, address, (size_t)length, &params, &ep);
            if (status != FERRY_OK)
                dp_die("ferry_ep_create", status);
            unsigned pongs = dp_pongs;
            while (ferry_am_send(ep, DP_ID, NULL, 0, NULL, 0, NULL) == FERRY_ERR_NO_RESOURCE)
                ferry_worker_progress(worker);
            while (dp_pongs == pongs)
                ferry_worker_progress(worker);
            int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
            if (pidfd < 0) {
                fprintf(stderr, "dead_peer: pidfd_open: %s\n", strerror(errno));
                return 77;
            }
            unsigned errors = dp_errors;
            uint64_t pidfd_ns = 0, start = dp_now_ns();
            kill(pid, SIGKILL);
            while (dp_errors == errors || pidfd_ns == 0) {
                ferry_worker_progress(worker);
                struct pollfd p = {.fd = pidfd, .events = POLLIN};
                if (pidfd_ns == 0 && poll(&p, 1, 0) == 1)
                    pidfd_ns = dp_now_ns();
            }
            pidfd_ms[t] = (double)(pidfd_ns - start) / 1e6;
            ferry_ms[t] = (double)(dp_error_ns - start) / 1e6;
            close(pidfd);
            waitpid(pid, NULL, 0);
            ferry_ep_destroy(ep);
        }
        qsort(pidfd_ms, (size_t)trials, sizeof(double), dp_cmp);
        qsort(ferry_ms, (size_t)trials, sizeof(double), dp_cmp);
        printf("%8zu %6d %8.2f %7.2f %7.2f %8.2f %7.2f %7.2f\n", mib, trials, pidfd_ms[trials / 2],
               pidfd_ms[0], pidfd_ms[trials - 1], ferry_ms[trials / 2], ferry_ms[0],
               ferry_ms[trials - 1]);
        free(pidfd_ms);
        free(ferry_ms);
    }
    ferry_worker_destroy(worker);
    ferry_context_destroy(context);
    return 0;
}
