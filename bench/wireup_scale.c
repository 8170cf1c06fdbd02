/* wireup_scale: N processes on this host connect all-to-all through ferry and exchange one
 * active message each way; reports the wire-up time and the shared memory each worker maps for
 * itself and for its peers (read from /proc/self/maps: ferry names its memfds
 * "ferry-region-<pid>" and "ferry-ring-<pid>" after the process that owns them).
 *
 *   wireup_scale [-n PROCESSES] [-r REPEAT] [-s spin|wait]
 *
 * By default the processes spin in ferry_worker_progress when there are at most as many as
 * cores, and sleep in ferry_worker_wait when they are more (oversubscribed).
 */
#define _GNU_SOURCE
#include <ferry/ferry.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_PROCS 256
#define ADDR_MAX 1024

typedef struct report {
    double wireup_us; /* endpoints created until every message arrived and every send completed */
    /* memfds this process owns, by kind: bytes allocated (physical) and mapped (address space) */
    unsigned long region_alloc, region_size;
    unsigned long ring_alloc, ring_size, ring_count;
    unsigned long keys_alloc, keys_size;
    unsigned long peer_size; /* address space of other processes' memfds mapped here */
} report_t;

static unsigned received;
static int use_wait; /* sleep in ferry_worker_wait instead of spinning (oversubscribed) */

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static ferry_status_t count_cb(void *arg, const void *header, size_t header_length, void *data,
                               size_t length, const ferry_am_recv_params_t *params)
{
    (void)arg, (void)header, (void)header_length, (void)data, (void)length, (void)params;
    received++;
    return FERRY_OK;
}

static int read_full(int fd, void *buf, size_t len)
{
    for (size_t done = 0; done < len;) {
        ssize_t n = read(fd, (char *)buf + done, len - done);
        if (n <= 0)
            return -1;
        done += (size_t)n;
    }
    return 0;
}

static int write_full(int fd, const void *buf, size_t len)
{
    for (size_t done = 0; done < len;) {
        ssize_t n = write(fd, (const char *)buf + done, len - done);
        if (n <= 0)
            return -1;
        done += (size_t)n;
    }
    return 0;
}

/* The ferry memfds mapped in this process: for its own, the bytes the kernel allocated
 * (st_blocks of /proc/self/map_files/<range>, i.e. physical memory whoever touched it) and the
 * mapped size; for other processes', the address space only (their owner counts the memory). */
static void measure_maps(report_t *r)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    int me = getpid();
    if (f == NULL)
        return;
    while (fgets(line, sizeof(line), f) != NULL) {
        unsigned long start, end, alloc = 0;
        char *name = strstr(line, "/memfd:ferry-");
        char path[96];
        struct stat st;
        if (name == NULL || sscanf(line, "%lx-%lx", &start, &end) != 2)
            continue;
        char *dash = strrchr(name, '-');
        int owner = dash ? atoi(dash + 1) : -1;
        if (owner != me) {
            r->peer_size += end - start;
            continue;
        }
        snprintf(path, sizeof(path), "/proc/self/map_files/%lx-%lx", start, end);
        if (stat(path, &st) == 0)
            alloc = (unsigned long)st.st_blocks * 512ul;
        if (strncmp(name, "/memfd:ferry-region-", 20) == 0) {
            r->region_alloc += alloc;
            r->region_size += end - start;
        } else if (strncmp(name, "/memfd:ferry-ring-", 18) == 0) {
            r->ring_alloc += alloc;
            r->ring_size += end - start;
            r->ring_count++;
        } else if (strncmp(name, "/memfd:ferry-keys-", 18) == 0) {
            r->keys_alloc += alloc;
            r->keys_size += end - start;
        }
    }
    fclose(f);
}

static int child(int index, int nprocs, int to_parent, int from_parent)
{
    ferry_context_t *ctx;
    ferry_worker_t *worker;
    ferry_ep_t *eps[MAX_PROCS] = {0};
    static unsigned char addrs[MAX_PROCS][ADDR_MAX];
    size_t lens[MAX_PROCS];
    const void *addr;
    size_t len;
    report_t r = {0};
    uint64_t token = 0;

    if (ferry_context_create(NULL, &ctx) != FERRY_OK ||
        ferry_worker_create(ctx, NULL, &worker) != FERRY_OK)
        return 1;
    ferry_am_set_handler(worker, 0, count_cb, NULL);
    ferry_worker_address(worker, &addr, &len);
    if (write_full(to_parent, &len, sizeof(len)) || write_full(to_parent, addr, len))
        return 2;
    for (int i = 0; i < nprocs; i++) {
        if (read_full(from_parent, &lens[i], sizeof(lens[i])) || lens[i] > ADDR_MAX ||
            read_full(from_parent, addrs[i], lens[i]))
            return 3;
    }
    read_full(from_parent, &token, sizeof(token)); /* start together */
    double t0 = now_us();
    /* one completion for all sends: a send queued while its endpoint connects completes when
     * it has been written into the peer's ring */
    ferry_completion_t sent = {.cb = NULL, .count = nprocs - 1, .status = FERRY_OK};
    for (int i = 0; i < nprocs; i++) {
        if (i == index)
            continue;
        if (ferry_ep_create(worker, addrs[i], lens[i], NULL, &eps[i]) != FERRY_OK)
            return 4;
        ferry_iov_t iov = {.buffer = &token, .length = sizeof(token)};
        ferry_status_t st;
        while ((st = ferry_am_send(eps[i], 0, NULL, 0, &iov, 1, &sent)) == FERRY_ERR_NO_RESOURCE) {
            if (use_wait)
                ferry_worker_wait(worker, 100);
            else
                ferry_worker_progress(worker);
        }
        if (st == FERRY_OK)
            sent.count--;
        else if (st != FERRY_INPROGRESS)
            return 5;
    }
    double deadline = t0 + 30e6;
    while (received < (unsigned)(nprocs - 1) || sent.count > 0) {
        if (use_wait)
            ferry_worker_wait(worker, 100);
        else
            ferry_worker_progress(worker);
        if (now_us() > deadline) {
            fprintf(stderr, "process %d: only %u of %d messages after 30 s\n", index, received,
                    nprocs - 1);
            return 6;
        }
    }
    r.wireup_us = now_us() - t0;
    measure_maps(&r);
    write_full(to_parent, &r, sizeof(r));
    read_full(from_parent, &token, sizeof(token)); /* everyone measured: tear down */
    for (int i = 0; i < nprocs; i++) {
        if (eps[i] != NULL)
            ferry_ep_destroy(eps[i]);
    }
    ferry_worker_destroy(worker);
    ferry_context_destroy(ctx);
    return 0;
}

static int run_once(int nprocs, report_t *total_r, double *max_wireup)
{
    int up[MAX_PROCS][2], down[MAX_PROCS][2];
    pid_t pids[MAX_PROCS];
    static unsigned char addrs[MAX_PROCS][ADDR_MAX];
    size_t lens[MAX_PROCS];
    uint64_t token = 1;
    int failed = 0;

    for (int i = 0; i < nprocs; i++) {
        if (pipe(up[i]) || pipe(down[i]))
            return -1;
        pids[i] = fork();
        if (pids[i] == 0) {
            close(up[i][0]);
            close(down[i][1]);
            _exit(child(i, nprocs, up[i][1], down[i][0]));
        }
        close(up[i][1]);
        close(down[i][0]);
    }
    for (int i = 0; i < nprocs; i++) {
        if (read_full(up[i][0], &lens[i], sizeof(lens[i])) || lens[i] > ADDR_MAX ||
            read_full(up[i][0], addrs[i], lens[i]))
            failed = 1;
    }
    for (int i = 0; i < nprocs && !failed; i++) {
        for (int j = 0; j < nprocs; j++)
            write_full(down[i][1], &lens[j], sizeof(lens[j])),
                write_full(down[i][1], addrs[j], lens[j]);
    }
    for (int i = 0; i < nprocs && !failed; i++)
        write_full(down[i][1], &token, sizeof(token));
    memset(total_r, 0, sizeof(*total_r));
    *max_wireup = 0;
    for (int i = 0; i < nprocs && !failed; i++) {
        report_t r;
        if (read_full(up[i][0], &r, sizeof(r))) {
            failed = 1;
            break;
        }
        if (r.wireup_us > *max_wireup)
            *max_wireup = r.wireup_us;
        total_r->region_alloc += r.region_alloc;
        total_r->region_size += r.region_size;
        total_r->ring_alloc += r.ring_alloc;
        total_r->ring_size += r.ring_size;
        total_r->ring_count += r.ring_count;
        total_r->keys_alloc += r.keys_alloc;
        total_r->keys_size += r.keys_size;
        total_r->peer_size += r.peer_size;
    }
    for (int i = 0; i < nprocs; i++) {
        if (failed)
            kill(pids[i], SIGKILL);
        else
            write_full(down[i][1], &token, sizeof(token));
    }
    for (int i = 0; i < nprocs; i++) {
        int status;
        waitpid(pids[i], &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            failed = 1;
        close(up[i][0]);
        close(down[i][1]);
    }
    return failed ? -1 : 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    int nprocs = 16, repeat = 5, opt;
    const char *mode = NULL;
    while ((opt = getopt(argc, argv, "n:r:s:h")) != -1) {
        switch (opt) {
        case 's':
            mode = optarg;
            break;
        case 'n':
            nprocs = atoi(optarg);
            break;
        case 'r':
            repeat = atoi(optarg);
            break;
        default:
            fprintf(stderr, "usage: %s [-n PROCESSES (2..%d)] [-r REPEAT]\n", argv[0], MAX_PROCS);
            return 2;
        }
    }
    if (nprocs < 2 || nprocs > MAX_PROCS || repeat < 1) {
        fprintf(stderr, "usage: %s [-n PROCESSES (2..%d)] [-r REPEAT]\n", argv[0], MAX_PROCS);
        return 2;
    }
    use_wait = mode != NULL ? strcmp(mode, "wait") == 0 : nprocs > sysconf(_SC_NPROCESSORS_ONLN);
    double times[64];
    report_t r = {0};
    if (repeat > 64)
        repeat = 64;
    for (int i = 0; i < repeat; i++) {
        if (run_once(nprocs, &r, &times[i]) != 0) {
            fprintf(stderr, "run %d failed\n", i);
            return 1;
        }
    }
    qsort(times, (size_t)repeat, sizeof(times[0]), cmp_double);
    double n = nprocs, peers = nprocs - 1;
    double owned_alloc = (double)(r.region_alloc + r.ring_alloc + r.keys_alloc) / n;
    printf("processes                      %d (all-to-all, %d endpoints each; %s)\n", nprocs,
           nprocs - 1, use_wait ? "sleeping in ferry_worker_wait" : "spinning in progress");
    printf("wire-up time, median of %-3d    %.0f us (endpoints to all, one message each way)\n",
           repeat, times[repeat / 2]);
    printf("shared memory each worker owns (allocated by the kernel; mapped size in brackets):\n");
    printf("  region (flags, buffer pool)  %.1f KiB [%.1f KiB]\n", r.region_alloc / n / 1024,
           r.region_size / n / 1024);
    printf("  key table                    %.1f KiB [%.1f KiB, sparse: 64 B per registration]\n",
           r.keys_alloc / n / 1024, r.keys_size / n / 1024);
    printf("  receive rings                %.1f KiB = %.1f rings x %.1f KiB [%.1f KiB]; per peer "
           "%.1f KiB\n",
           r.ring_alloc / n / 1024, r.ring_count / n,
           r.ring_count ? r.ring_alloc / (double)r.ring_count / 1024 : 0.0, r.ring_size / n / 1024,
           r.ring_alloc / n / peers / 1024);
    printf("  total per worker             %.1f KiB = %.1f KiB + %.1f KiB per peer\n",
           owned_alloc / 1024, (r.region_alloc + r.keys_alloc) / n / 1024,
           r.ring_alloc / n / peers / 1024);
    printf("peers' memory mapped here      %.1f KiB of address space per peer (no new memory)\n",
           r.peer_size / n / peers / 1024);
    printf("total, all processes           %.2f MiB allocated\n", owned_alloc * n / 1048576);
    return 0;
}
