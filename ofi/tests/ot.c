/*
 * Helpers of the provider's tests: see ot.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ot.h"

static int ot_rank = -1;
static ot_ep_t *ot_progress_ep; /* progressed while collectives wait */

void ot_fail(const char *file, int line, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fprintf(stderr, "[ot rank %d pid %d] FAIL %s:%d: %s\n", ot_rank, (int)getpid(), file, line,
            msg);
    fflush(stderr);
    _exit(1);
}

void ot_require_provider(void)
{
    struct fi_info *hints = ot_hints(0, 0);
    struct fi_info *info = NULL;
    int rc = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info);
    fi_freeinfo(hints);
    if (rc != 0) {
        printf("skipped: fi_getinfo finds no provider \"ferry\" (FI_PROVIDER_PATH=%s): %s\n",
               getenv("FI_PROVIDER_PATH") ? getenv("FI_PROVIDER_PATH") : "(unset)",
               fi_strerror(-rc));
        exit(77);
    }
    fi_freeinfo(info);
}

struct fi_info *ot_hints(uint64_t caps, uint64_t tx_op_flags)
{
    struct fi_info *hints = fi_allocinfo();
    OT_CHECK(hints != NULL);
    hints->fabric_attr->prov_name = strdup("ferry");
    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = caps;
    hints->mode = FI_CONTEXT;
    hints->tx_attr->op_flags = tx_op_flags;
    hints->domain_attr->mr_mode = FI_MR_PROV_KEY;
    return hints;
}

struct fi_info *ot_getinfo(struct fi_info *hints)
{
    struct fi_info *info = NULL;
    OT_EXPECT(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info), 0);
    OT_CHECK(info != NULL && info->next == NULL);
    return info;
}

void ot_ep_open(ot_ep_t *t, uint64_t caps, uint64_t tx_op_flags, enum fi_cq_format format)
{
    struct fi_info *hints = ot_hints(caps, tx_op_flags);
    ot_ep_open_hints(t, hints, format);
    fi_freeinfo(hints);
}

void ot_ep_open_hints(ot_ep_t *t, struct fi_info *hints, enum fi_cq_format format)
{
    memset(t, 0, sizeof(*t));
    t->info = ot_getinfo(hints);
    OT_EXPECT(fi_fabric(t->info->fabric_attr, &t->fabric, NULL), 0);
    OT_EXPECT(fi_domain(t->fabric, t->info, &t->domain, NULL), 0);
    struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
    OT_EXPECT(fi_av_open(t->domain, &av_attr, &t->av, NULL), 0);
    struct fi_cq_attr cq_attr = {.format = format, .wait_obj = FI_WAIT_FD};
    OT_EXPECT(fi_cq_open(t->domain, &cq_attr, &t->cq, NULL), 0);
    OT_EXPECT(fi_endpoint(t->domain, t->info, &t->ep, NULL), 0);
    OT_EXPECT(fi_ep_bind(t->ep, &t->av->fid, 0), 0);
    OT_EXPECT(fi_ep_bind(t->ep, &t->cq->fid, FI_TRANSMIT | FI_RECV), 0);
    OT_EXPECT(fi_enable(t->ep), 0);
    t->namelen = sizeof(t->name);
    OT_EXPECT(fi_getname(&t->ep->fid, t->name, &t->namelen), 0);
    /* a compact ferry worker address: 64 bytes in every process */
    OT_CHECK(t->namelen == OT_NAME_MAX);
    OT_EXPECT(fi_control(&t->cq->fid, FI_GETWAIT, &t->wait_fd), 0);
    ot_progress_ep = t;
}

ot_ep_t *ot_collectives_progress(ot_ep_t *t)
{
    ot_ep_t *before = ot_progress_ep;
    ot_progress_ep = t;
    return before;
}

void ot_ep_close(ot_ep_t *t)
{
    if (ot_progress_ep == t)
        ot_progress_ep = NULL;
    OT_EXPECT(fi_close(&t->ep->fid), 0);
    OT_EXPECT(fi_close(&t->cq->fid), 0);
    OT_EXPECT(fi_close(&t->av->fid), 0);
    OT_EXPECT(fi_close(&t->domain->fid), 0);
    OT_EXPECT(fi_close(&t->fabric->fid), 0);
    fi_freeinfo(t->info);
}

fi_addr_t ot_insert(ot_ep_t *t, const void *name)
{
    fi_addr_t addr = FI_ADDR_NOTAVAIL;
    OT_EXPECT(fi_av_insert(t->av, name, 1, &addr, 0, NULL), 1);
    OT_CHECK(addr != FI_ADDR_NOTAVAIL);
    return addr;
}

int64_t ot_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int ot_cq_next(ot_ep_t *t, struct fi_cq_tagged_entry *entry, struct fi_cq_err_entry *err)
{
    int64_t deadline = ot_now_ms() + OT_TIMEOUT_MS;
    for (;;) {
        ssize_t rc = fi_cq_read(t->cq, entry, 1);
        if (rc == 1)
            return 1;
        if (rc == -FI_EAVAIL) {
            memset(err, 0, sizeof(*err));
            OT_EXPECT(fi_cq_readerr(t->cq, err, 0), 1);
            OT_CHECK(err->err > 0);
            return -err->err;
        }
        if (rc != -FI_EAGAIN)
            ot_fail(__FILE__, __LINE__, "fi_cq_read = %zd (%s)", rc, fi_strerror((int)-rc));
        if (ot_now_ms() > deadline)
            ot_fail(__FILE__, __LINE__, "no completion within %d ms", OT_TIMEOUT_MS);
    }
}

void ot_cq_expect(ot_ep_t *t, void *context, struct fi_cq_tagged_entry *entry)
{
    struct fi_cq_tagged_entry e;
    struct fi_cq_err_entry err;
    int rc = ot_cq_next(t, &e, &err);
    if (rc != 1)
        ot_fail(__FILE__, __LINE__, "error entry %d (%s), context %p, expected success of %p",
                err.err, fi_strerror(err.err), err.op_context, context);
    if (e.op_context != context)
        ot_fail(__FILE__, __LINE__, "entry of context %p, expected %p", e.op_context, context);
    if (entry != NULL)
        *entry = e;
}

void ot_cq_empty(ot_ep_t *t)
{
    struct fi_cq_tagged_entry e;
    OT_EXPECT(fi_cq_read(t->cq, &e, 1), -FI_EAGAIN);
}

static uint8_t pattern_byte(size_t i, unsigned seed)
{
    return (uint8_t)(seed * 131u + i * 7u + (i >> 8));
}

void ot_fill(void *buf, size_t len, unsigned seed)
{
    uint8_t *p = buf;
    for (size_t i = 0; i < len; i++)
        p[i] = pattern_byte(i, seed);
}

void ot_check(const void *buf, size_t len, unsigned seed, const char *what)
{
    const uint8_t *p = buf;
    for (size_t i = 0; i < len; i++) {
        if (p[i] != pattern_byte(i, seed))
            ot_fail(__FILE__, __LINE__, "%s: byte %zu of %zu is 0x%02x, expected 0x%02x", what, i,
                    len, p[i], pattern_byte(i, seed));
    }
}

/* ---------------------------------------------------------------- jobs
 *
 * Each rank has a SOCK_SEQPACKET socketpair to the parent. A collective is one message from
 * every rank {op, length, data}; the parent answers each rank once all sent theirs. */

enum { OP_ALLGATHER = 1, OP_BARRIER = 2 };

#define JOB_MAX 8
#define MSG_MAX (JOB_MAX * OT_NAME_MAX + 16)
/* a reply carries a 4-byte op in front of the data */

static void xsend(int fd, const void *buf, size_t len)
{
    if (send(fd, buf, len, MSG_NOSIGNAL) != (ssize_t)len)
        ot_fail(__FILE__, __LINE__, "send(fd %d, %zu bytes): %s", fd, len, strerror(errno));
}

static size_t xrecv(int fd, void *buf, size_t cap)
{
    ssize_t n = recv(fd, buf, cap, 0);
    if (n <= 0)
        ot_fail(__FILE__, __LINE__, "recv(fd %d): %s", fd, n == 0 ? "closed" : strerror(errno));
    return (size_t)n;
}

/* Until the parent's reply is there: progress the endpoint, and sleep on the CQ's fd and the
 * parent's socket once fi_trywait says nothing is pending. */
static void wait_reply(ot_job_t *job)
{
    ot_ep_t *t = ot_progress_ep;
    for (;;) {
        struct pollfd pfd[2] = {{.fd = job->fd, .events = POLLIN}};
        nfds_t n = 1;
        int timeout = 1000;
        if (t != NULL) {
            ssize_t rc = fi_cq_read(t->cq, NULL, 0);
            OT_CHECK(rc == 0);
            struct fid *fids[1] = {&t->cq->fid};
            if (fi_trywait(t->fabric, fids, 1) == 0) {
                pfd[1] = (struct pollfd){.fd = t->wait_fd, .events = POLLIN};
                n = 2;
            } else {
                timeout = 0;
            }
        }
        int rc = poll(pfd, n, timeout);
        OT_CHECK(rc >= 0 || errno == EINTR);
        if (pfd[0].revents != 0)
            return;
    }
}

static void collective(ot_job_t *job, uint32_t op, const void *mine, size_t len, void *all)
{
    uint8_t msg[MSG_MAX];
    OT_CHECK(len + 8 <= sizeof(msg) && 4 + len * (size_t)job->size <= sizeof(msg));
    memcpy(msg, &op, 4);
    uint32_t l = (uint32_t)len;
    memcpy(msg + 4, &l, 4);
    if (len > 0)
        memcpy(msg + 8, mine, len);
    xsend(job->fd, msg, len + 8);
    wait_reply(job);
    /* the reply: the op (so that it is never empty) and everyone's data */
    size_t n = xrecv(job->fd, msg, sizeof(msg));
    OT_CHECK(n == 4 + len * (size_t)job->size && memcmp(msg, &op, 4) == 0);
    if (all != NULL && n > 4)
        memcpy(all, msg + 4, n - 4);
}

void ot_allgather(ot_job_t *job, const void *mine, size_t len, void *all)
{
    collective(job, OP_ALLGATHER, mine, len, all);
}

void ot_barrier(ot_job_t *job)
{
    collective(job, OP_BARRIER, NULL, 0, NULL);
}

/* The parent: serve collectives until every rank closed its socket; a rank that breaks the
 * sequence (another op or length) or a timeout ends the job. */
static int serve(int size, int *fds, int timeout_s)
{
    int64_t deadline = ot_now_ms() + (int64_t)timeout_s * 1000;
    static uint8_t msgs[JOB_MAX][MSG_MAX];
    size_t lens[JOB_MAX];
    bool open[JOB_MAX];
    int live = size;
    for (int r = 0; r < size; r++)
        open[r] = true;
    while (live > 0) {
        /* one message (or EOF) from each open rank */
        bool have[JOB_MAX] = {false};
        int need = live;
        while (need > 0) {
            struct pollfd pfd[JOB_MAX];
            int map[JOB_MAX], n = 0;
            for (int r = 0; r < size; r++) {
                if (open[r] && !have[r]) {
                    pfd[n] = (struct pollfd){.fd = fds[r], .events = POLLIN};
                    map[n++] = r;
                }
            }
            int left = (int)(deadline - ot_now_ms());
            if (left <= 0 || poll(pfd, (nfds_t)n, left) == 0) {
                fprintf(stderr, "[ot parent] the job did not finish within %d s\n", timeout_s);
                return 1;
            }
            for (int i = 0; i < n; i++) {
                if (!(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
                    continue;
                int r = map[i];
                ssize_t got = recv(fds[r], msgs[r], MSG_MAX, 0);
                need--;
                if (got <= 0) {
                    open[r] = false;
                    live--;
                } else {
                    have[r] = true;
                    lens[r] = (size_t)got;
                }
            }
        }
        int first = -1;
        for (int r = 0; r < size; r++) {
            if (!have[r])
                continue;
            if (first < 0)
                first = r;
            if (live != size || lens[r] != lens[first] || memcmp(msgs[r], msgs[first], 4) != 0) {
                fprintf(stderr, "[ot parent] ranks disagree on a collective (or one exited)\n");
                return 1;
            }
        }
        if (first < 0)
            break;
        uint8_t all[MSG_MAX + 4];
        size_t len = lens[first] - 8;
        memcpy(all, msgs[first], 4);
        for (int r = 0; r < size; r++)
            memcpy(all + 4 + (size_t)r * len, msgs[r] + 8, len);
        for (int r = 0; r < size; r++)
            xsend(fds[r], all, 4 + len * (size_t)size);
    }
    return 0;
}

int ot_job_run(int size, int timeout_s, ot_rank_fn fn, void *arg)
{
    OT_CHECK(size > 0 && size <= JOB_MAX);
    int fds[JOB_MAX];
    pid_t pids[JOB_MAX];
    fflush(stdout);
    fflush(stderr);
    for (int r = 0; r < size; r++) {
        int sv[2];
        OT_CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0);
        pids[r] = fork();
        OT_CHECK(pids[r] >= 0);
        if (pids[r] == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            for (int q = 0; q < r; q++)
                close(fds[q]);
            close(sv[0]);
            ot_rank = r;
            ot_job_t job = {.rank = r, .size = size, .fd = sv[1]};
            fn(&job, arg);
            /* exit, not _exit: LeakSanitizer checks the rank at exit in sanitizer builds */
            exit(0);
        }
        close(sv[1]);
        fds[r] = sv[0];
    }
    int rc = serve(size, fds, timeout_s);
    if (rc != 0) {
        for (int r = 0; r < size; r++)
            kill(pids[r], SIGKILL);
    }
    for (int r = 0; r < size; r++) {
        int status;
        while (waitpid(pids[r], &status, 0) < 0 && errno == EINTR)
            ;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            fprintf(stderr, "[ot parent] rank %d %s %d\n", r,
                    WIFEXITED(status) ? "exited with" : "was killed by signal",
                    WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
            rc = 1;
        }
        close(fds[r]);
    }
    return rc;
}
