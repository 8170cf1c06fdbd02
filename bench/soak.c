/* soak: long mixed traffic among processes that are killed and restarted (issue 11, item 7).
 *
 * A conductor forks SOAK_PROCS members. Each member registers a 1 MiB region and sends its
 * worker address and packed key to the conductor, which sends every member's current address
 * and key to all (again whenever a member restarts). Each member keeps one link to every other
 * member and cycles on it through: an active message (8 B, 200 B, 4000 B, 40 000 B or 1 MiB,
 * every byte checked by the receiver), a put of 64 KiB into its own slice of the peer's
 * region, and a get of the same slice, checked against what it put. Every kill_every seconds
 * the conductor SIGKILLs one member at random and starts it again; the others see their
 * endpoints fail, and connect to the new incarnation when its address arrives. Members report
 * every 2 s: messages and bytes verified, operations, errors seen, descriptors and RSS. The
 * conductor prints a line every report_every seconds and a summary at the end.
 * Not covered (yet): tagged messages and named segments.
 *
 * Usage: soak [seconds (1800)] [kill every seconds (5)] [report every seconds (60)] */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <ferry/ferry.h>

#define SOAK_PROCS 4
#define SOAK_REGION (1u << 20)
#define SOAK_SLICE (SOAK_REGION / SOAK_PROCS)
#define SOAK_RMA (64u << 10)
#define SOAK_AM_MAX (1u << 20)
#define SOAK_ID 9
#define SOAK_MSG_MAX 2048

enum { MSG_ADDR = 1, MSG_PEER, MSG_STATS };

typedef struct soak_stats {
    uint64_t am_sent, am_verified, am_bytes, puts, gets_verified, rma_bytes, errors, bad;
    uint64_t fds, rss_kb;
} soak_stats_t;

typedef struct soak_msg {
    uint32_t type, rank, incarnation, addr_len, key_len;
    soak_stats_t stats;
    uint8_t data[SOAK_MSG_MAX]; /* address, then key */
} soak_msg_t;

static uint64_t soak_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint8_t soak_byte(uint64_t seed, uint64_t i)
{
    uint64_t x = seed ^ (i * 0x9e3779b97f4a7c15ull);
    x ^= x >> 29;
    x *= 0xbf58476d1ce4e5b9ull;
    return (uint8_t)(x >> 56);
}

static void soak_fill(uint8_t *p, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = soak_byte(seed, i);
}

static bool soak_check(const uint8_t *p, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != soak_byte(seed, i))
            return false;
    return true;
}

/* ------------------------------------------------------------------ a member */

typedef enum { OP_AM, OP_PUT, OP_GET, OP_COUNT } soak_op_t;

typedef struct soak_link {
    ferry_ep_t *ep;
    ferry_rkey_t *rkey;
    bool failed;
    uint32_t incarnation;
    soak_op_t op;
    bool busy;
    ferry_completion_t comp;
    uint64_t seq;
    uint64_t seed;
    size_t size;
    uint8_t *buf;
} soak_link_t;

static soak_stats_t st;
static unsigned my_rank;
static uint32_t my_incarnation;
static soak_link_t links[SOAK_PROCS];

static const size_t soak_am_sizes[] = {8, 200, 4000, 40000, SOAK_AM_MAX};

static ferry_status_t soak_on_am(void *arg, const void *header, size_t header_length, void *data,
                                 size_t length, const ferry_am_recv_params_t *params)
{
    uint64_t seed;
    (void)arg, (void)params;
    if (header_length != sizeof(seed)) {
        st.bad++;
        return FERRY_OK;
    }
    memcpy(&seed, header, sizeof(seed));
    if (soak_check(data, length, seed)) {
        st.am_verified++;
        st.am_bytes += length;
    } else {
        st.bad++;
    }
    return FERRY_OK;
}

static void soak_on_error(void *arg, ferry_ep_t *ep, ferry_status_t status)
{
    (void)ep, (void)status;
    st.errors++;
    if (arg != NULL)
        ((soak_link_t *)arg)->failed = true;
}

static unsigned soak_count_fds(void)
{
    unsigned n = 0;
    DIR *d = opendir("/proc/self/fd");
    if (d == NULL)
        return 0;
    while (readdir(d) != NULL)
        n++;
    closedir(d);
    return n - 3; /* ., .., the directory's own */
}

static uint64_t soak_rss_kb(void)
{
    unsigned long size = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f == NULL)
        return 0;
    if (fscanf(f, "%lu %lu", &size, &resident) != 2)
        resident = 0;
    fclose(f);
    return (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE) / 1024u;
}

static void soak_link_drop(soak_link_t *l, ferry_worker_t *worker)
{
    if (l->ep == NULL)
        return;
    /* its operation completes (with an error) before the endpoint can go */
    for (int i = 0; l->busy && l->comp.count > 0 && i < 100000; i++)
        ferry_worker_progress(worker);
    l->busy = false;
    ferry_rkey_release(l->rkey);
    l->rkey = NULL;
    ferry_ep_destroy(l->ep);
    l->ep = NULL;
}

/* Start or finish the link's current operation. */
static void soak_link_step(soak_link_t *l, unsigned peer, uint8_t *region)
{
    if (l->ep == NULL || l->failed)
        return;
    if (l->busy) {
        if (l->comp.count > 0)
            return;
        l->busy = false;
        if (l->comp.status != FERRY_OK) {
            st.errors++;
            return;
        }
        goto done;
    }
    ferry_status_t status;
    l->comp = (ferry_completion_t){.cb = NULL, .count = 1, .status = FERRY_OK};
    uint64_t offset = (uint64_t)my_rank * SOAK_SLICE;
    switch (l->op) {
    case OP_AM:
        l->size = soak_am_sizes[l->seq % 5];
        l->seed = ((uint64_t)my_rank << 56) ^ ((uint64_t)my_incarnation << 40) ^ l->seq;
        soak_fill(l->buf, l->size, l->seed);
        status = ferry_am_send(l->ep, SOAK_ID, &l->seed, sizeof(l->seed),
                               &(ferry_iov_t){.buffer = l->buf, .length = l->size}, 1, &l->comp);
        break;
    case OP_PUT:
        l->seed = ((uint64_t)peer << 48) ^ ((uint64_t)my_incarnation << 32) ^ (l->seq * 7);
        soak_fill(l->buf, SOAK_RMA, l->seed);
        status = ferry_put(l->ep, l->buf, SOAK_RMA, offset, l->rkey, &l->comp);
        break;
    default:
        memset(l->buf, 0, SOAK_RMA);
        status = ferry_get(l->ep, l->buf, SOAK_RMA, offset, l->rkey, &l->comp);
        break;
    }
    (void)region;
    if (status == FERRY_ERR_NO_RESOURCE)
        return;
    if (status == FERRY_INPROGRESS) {
        l->busy = true;
        return;
    }
    if (status != FERRY_OK) {
        st.errors++;
        return;
    }
done:
    switch (l->op) {
    case OP_AM:
        st.am_sent++;
        break;
    case OP_PUT:
        st.puts++;
        break;
    default:
        /* a put of ours landed before this get (same endpoint, ordered by the flush rule:
         * the get is issued after the put completed locally; ferry_ep_flush is not needed for
         * RMA ordering on one endpoint here because the put's completion came first) */
        if (soak_check(l->buf, SOAK_RMA, l->seed)) {
            st.gets_verified++;
            st.rma_bytes += 2 * SOAK_RMA;
        } else {
            st.bad++;
        }
        break;
    }
    l->op = (soak_op_t)((l->op + 1) % OP_COUNT);
    if (l->op == OP_AM)
        l->seq++;
}

static void soak_member(int ctl, unsigned rank, uint32_t incarnation)
{
    ferry_context_t *context;
    ferry_worker_t *worker;
    ferry_mem_t *mem;
    const void *address;
    size_t address_length, key_length;
    void *key;
    soak_msg_t m;

    my_rank = rank;
    my_incarnation = incarnation;
    uint8_t *region = calloc(1, SOAK_REGION);
    ferry_worker_params_t wparams = {.accepted_ep_error_cb = soak_on_error};
    if (region == NULL || ferry_context_create(NULL, &context) != FERRY_OK ||
        ferry_worker_create(context, &wparams, &worker) != FERRY_OK)
        _exit(1);
    ferry_am_set_handler(worker, SOAK_ID, soak_on_am, NULL);
    ferry_iov_t iov = {.buffer = region, .length = SOAK_REGION};
    if (ferry_mem_register(context, &iov, 1, FERRY_ACCESS_REMOTE_READ | FERRY_ACCESS_REMOTE_WRITE,
                           0, &mem) != FERRY_OK ||
        ferry_rkey_pack(mem, &key, &key_length) != FERRY_OK)
        _exit(1);
    ferry_worker_address(worker, &address, &address_length);
    memset(&m, 0, sizeof(m));
    m.type = MSG_ADDR;
    m.rank = rank;
    m.incarnation = incarnation;
    m.addr_len = (uint32_t)address_length;
    m.key_len = (uint32_t)key_length;
    memcpy(m.data, address, address_length);
    memcpy(m.data + address_length, key, key_length);
    ferry_rkey_buffer_release(key);
    if (send(ctl, &m, sizeof(m), 0) != (ssize_t)sizeof(m))
        _exit(1);
    for (unsigned p = 0; p < SOAK_PROCS; p++) {
        links[p].buf = malloc(SOAK_AM_MAX);
        if (links[p].buf == NULL)
            _exit(1);
    }
    uint64_t next_report = soak_now_ns();
    for (;;) {
        struct pollfd pfd = {.fd = ctl, .events = POLLIN};
        while (poll(&pfd, 1, 0) == 1) {
            ssize_t n = recv(ctl, &m, sizeof(m), 0);
            if (n <= 0)
                _exit(0); /* the conductor is gone */
            if (m.type != MSG_PEER || m.rank == rank || m.rank >= SOAK_PROCS)
                continue;
            soak_link_t *l = &links[m.rank];
            soak_link_drop(l, worker);
            ferry_ep_params_t params = {.error_cb = soak_on_error, .error_arg = l};
            l->failed = false;
            l->op = OP_AM;
            l->incarnation = m.incarnation;
            if (ferry_ep_create(worker, m.data, m.addr_len, &params, &l->ep) != FERRY_OK) {
                l->ep = NULL;
                st.errors++;
                continue;
            }
            if (ferry_rkey_unpack(l->ep, m.data + m.addr_len, m.key_len, &l->rkey) != FERRY_OK) {
                st.errors++;
                ferry_ep_destroy(l->ep);
                l->ep = NULL;
            }
        }
        for (unsigned p = 0; p < SOAK_PROCS; p++)
            soak_link_step(&links[p], p, region);
        ferry_worker_progress(worker);
        if (soak_now_ns() >= next_report) {
            next_report += 2000000000ull;
            st.fds = soak_count_fds();
            st.rss_kb = soak_rss_kb();
            memset(&m, 0, sizeof(m));
            m.type = MSG_STATS;
            m.rank = rank;
            m.incarnation = incarnation;
            m.stats = st;
            (void)send(ctl, &m, sizeof(m), MSG_DONTWAIT);
        }
    }
}

/* ------------------------------------------------------------------ the conductor */

typedef struct soak_member_slot {
    pid_t pid;
    int ctl;
    uint32_t incarnation;
    bool have_addr;
    soak_msg_t addr;
    soak_stats_t last;
    uint64_t start_ns;
} soak_slot_t;

static soak_slot_t slots[SOAK_PROCS];
static soak_stats_t retired;

static void soak_start(unsigned r)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
        perror("socketpair");
        exit(1);
    }
    slots[r].incarnation++;
    pid_t pid = fork();
    if (pid == 0) {
        close(sv[0]);
        for (unsigned q = 0; q < SOAK_PROCS; q++)
            if (q != r && slots[q].ctl >= 0)
                close(slots[q].ctl);
        soak_member(sv[1], r, slots[r].incarnation);
        _exit(0);
    }
    close(sv[1]);
    slots[r].pid = pid;
    slots[r].ctl = sv[0];
    slots[r].have_addr = false;
    memset(&slots[r].last, 0, sizeof(slots[r].last));
    slots[r].start_ns = soak_now_ns();
}

static void soak_add(soak_stats_t *a, const soak_stats_t *b)
{
    a->am_sent += b->am_sent;
    a->am_verified += b->am_verified;
    a->am_bytes += b->am_bytes;
    a->puts += b->puts;
    a->gets_verified += b->gets_verified;
    a->rma_bytes += b->rma_bytes;
    a->errors += b->errors;
    a->bad += b->bad;
}

static void soak_report(double elapsed, uint64_t kills, bool final)
{
    soak_stats_t total = retired;
    for (unsigned r = 0; r < SOAK_PROCS; r++)
        soak_add(&total, &slots[r].last);
    printf("%s%7.0f s  kills %4llu  AM sent %10llu verified %10llu (%6.1f GB)  put %9llu  get "
           "verified %9llu  errors %6llu  BAD %llu  |",
           final ? "TOTAL " : "", elapsed, (unsigned long long)kills,
           (unsigned long long)total.am_sent, (unsigned long long)total.am_verified,
           (double)(total.am_bytes + total.rma_bytes) / 1e9, (unsigned long long)total.puts,
           (unsigned long long)total.gets_verified, (unsigned long long)total.errors,
           (unsigned long long)total.bad);
    for (unsigned r = 0; r < SOAK_PROCS; r++)
        printf(" r%u: age %4.0fs fds %3llu rss %6llu KiB;", r,
               (double)(soak_now_ns() - slots[r].start_ns) / 1e9,
               (unsigned long long)slots[r].last.fds, (unsigned long long)slots[r].last.rss_kb);
    printf("\n");
    fflush(stdout);
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 1800;
    double kill_every = argc > 2 ? atof(argv[2]) : 5;
    double report_every = argc > 3 ? atof(argv[3]) : 60;
    uint64_t kills = 0;

    signal(SIGPIPE, SIG_IGN);
    srand((unsigned)time(NULL));
    for (unsigned r = 0; r < SOAK_PROCS; r++)
        slots[r].ctl = -1;
    for (unsigned r = 0; r < SOAK_PROCS; r++)
        soak_start(r);
    uint64_t start = soak_now_ns(), next_kill = start + (uint64_t)(kill_every * 1e9),
             next_report = start + (uint64_t)(report_every * 1e9);
    printf("soak: %d processes, %.0f s, one SIGKILL + restart every %.1f s\n", SOAK_PROCS, seconds,
           kill_every);
    while (soak_now_ns() - start < (uint64_t)(seconds * 1e9)) {
        struct pollfd pfd[SOAK_PROCS];
        for (unsigned r = 0; r < SOAK_PROCS; r++)
            pfd[r] = (struct pollfd){.fd = slots[r].ctl, .events = POLLIN};
        poll(pfd, SOAK_PROCS, 50);
        for (unsigned r = 0; r < SOAK_PROCS; r++) {
            if (!(pfd[r].revents & POLLIN))
                continue;
            soak_msg_t m;
            if (recv(slots[r].ctl, &m, sizeof(m), 0) != (ssize_t)sizeof(m))
                continue;
            if (m.type == MSG_STATS) {
                slots[r].last = m.stats;
            } else if (m.type == MSG_ADDR) {
                slots[r].addr = m;
                slots[r].have_addr = true;
                m.type = MSG_PEER;
                for (unsigned q = 0; q < SOAK_PROCS; q++) /* the new one to all */
                    if (q != r)
                        (void)send(slots[q].ctl, &m, sizeof(m), 0);
                for (unsigned q = 0; q < SOAK_PROCS; q++) { /* all to the new one */
                    if (q == r || !slots[q].have_addr)
                        continue;
                    soak_msg_t a = slots[q].addr;
                    a.type = MSG_PEER;
                    (void)send(slots[r].ctl, &a, sizeof(a), 0);
                }
            }
        }
        uint64_t now = soak_now_ns();
        if (kill_every > 0 && now >= next_kill) {
            next_kill = now + (uint64_t)(kill_every * 1e9);
            unsigned r = (unsigned)rand() % SOAK_PROCS;
            kill(slots[r].pid, SIGKILL);
            waitpid(slots[r].pid, NULL, 0);
            close(slots[r].ctl);
            soak_add(&retired, &slots[r].last);
            kills++;
            soak_start(r);
        }
        if (now >= next_report) {
            next_report = now + (uint64_t)(report_every * 1e9);
            soak_report((double)(now - start) / 1e9, kills, false);
        }
    }
    soak_report((double)(soak_now_ns() - start) / 1e9, kills, true);
    for (unsigned r = 0; r < SOAK_PROCS; r++) {
        kill(slots[r].pid, SIGKILL);
        waitpid(slots[r].pid, NULL, 0);
        close(slots[r].ctl);
    }
    return 0;
}
