/* nt_fault: a fault in the middle of transfers. Rank 0 streams tagged messages to and from
 * every other rank; the other ranks are idle towards each other (with 3 ranks: the victim's
 * link to rank 2 carries nothing, so only keep-alive can notice it). Once every stream is
 * running each rank prints "nt_fault: streaming"; run.sh then cuts the victim's link (cut) or
 * SIGKILLs the victim (kill), and sends SIGUSR1 to every rank still alive: the time of the fault.
 * Then:
 *   - every endpoint to the victim (and, cut: every endpoint of the victim) gets its error
 *     callback, once, within FERRY_TCP_TIMEOUT_MS + NT_FAULT_SLACK_MS of the fault (kill: within
 *     NT_FAULT_SLACK_MS), and every operation on it completes (sends with an error, receives
 *     with an error or canceled): nothing hangs;
 *   - streams between survivors go on, byte-exact, and end with an END message giving the count;
 *     the survivors' endpoints never fail.
 * Usage: nt_fault --fault cut|kill --victim RANK  (2 or more ranks; the victim is not rank 0). */
#define _GNU_SOURCE
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ft_check.h"
#include "ft_pattern.h"
#include "ft_progress.h"
#include "nt_job.h"

#define NT_MSG (256u << 10) /* rendezvous-sized messages */
#define NT_WINDOW 4         /* sends in flight and receives posted per stream */
#define NT_END_ID 21
#define NT_BYE_ID 22
#define NT_HELLO_ID 23
#define NT_STREAMING_AFTER 8 /* messages each way before "streaming" is printed */
#define NT_AFTER_FAULT 16    /* survivor messages each way after the fault (sends completed) */
#define NT_DONE_TIMEOUT_MS 30000

static nt_job_t job;
static unsigned victim;
static int fault_kill;
static volatile sig_atomic_t fault_signalled;
static uint64_t fault_ns;

typedef struct stream {
    bool active; /* a stream exists between this rank and that peer */
    /* sending */
    uint8_t *sbuf[NT_WINDOW];
    ferry_completion_t scomp[NT_WINDOW];
    uint64_t sent; /* messages started */
    uint64_t send_done;
    uint64_t send_errors;
    bool end_sent;
    /* receiving */
    uint8_t *rbuf[NT_WINDOW];
    ferry_completion_t rcomp[NT_WINDOW];
    ferry_tag_info_t rinfo[NT_WINDOW];
    uint64_t rseq[NT_WINDOW]; /* seq of the receive posted in each slot */
    bool rposted[NT_WINDOW];
    uint64_t posted; /* receives posted */
    uint64_t received;
    uint64_t recv_errors;
    int64_t end_count; /* -1 until END arrived */
    bool bye;
} stream_t;

static stream_t *streams;

static void on_sigusr1(int sig)
{
    struct timespec ts;
    (void)sig;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    fault_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    fault_signalled = 1;
}

static uint64_t tag_of(unsigned sender, uint64_t seq)
{
    return ((uint64_t)sender << 48) | seq;
}

static ferry_status_t end_handler(void *arg, const void *header, size_t header_length, void *data,
                                  size_t length, const ferry_am_recv_params_t *params)
{
    uint64_t h[2];
    (void)arg, (void)data, (void)length, (void)params;
    FT_CHECK(header_length == sizeof(h), "END header of %zu bytes", header_length);
    memcpy(h, header, sizeof(h));
    FT_CHECK(h[0] < job.size && streams[h[0]].active, "END from rank %llu",
             (unsigned long long)h[0]);
    streams[h[0]].end_count = (int64_t)h[1];
    return FERRY_OK;
}

static ferry_status_t bye_handler(void *arg, const void *header, size_t header_length, void *data,
                                  size_t length, const ferry_am_recv_params_t *params)
{
    uint64_t from;
    (void)arg, (void)data, (void)length, (void)params;
    FT_CHECK(header_length == sizeof(from), "BYE header of %zu bytes", header_length);
    memcpy(&from, header, sizeof(from));
    FT_CHECK(from < job.size, "BYE from rank %llu", (unsigned long long)from);
    streams[from].bye = true;
    return FERRY_OK;
}

static uint64_t hellos;

static ferry_status_t hello_handler(void *arg, const void *header, size_t header_length, void *data,
                                    size_t length, const ferry_am_recv_params_t *params)
{
    (void)arg, (void)header, (void)header_length, (void)data, (void)length, (void)params;
    hellos++;
    return FERRY_OK;
}

static bool failed(unsigned p)
{
    return job.peers[p].error_calls > 0;
}

/* Is the stream to p expected to end by a fault (rather than with END)? */
static bool doomed(unsigned p)
{
    return p == victim || job.rank == victim;
}

static void post_recv(unsigned p, unsigned slot)
{
    stream_t *s = &streams[p];
    ferry_iov_t iov = {s->rbuf[slot], NT_MSG};
    s->rcomp[slot] = (ferry_completion_t){.count = 1};
    s->rseq[slot] = s->posted;
    ferry_status_t st = ferry_tag_recv(job.worker, &iov, 1, tag_of(p, s->posted), ~0ull,
                                       &s->rinfo[slot], &s->rcomp[slot]);
    FT_CHECK(st == FERRY_OK || st == FERRY_INPROGRESS, "tag recv from rank %u: %s", p,
             ferry_status_name(st));
    if (st == FERRY_OK)
        s->rcomp[slot].count = 0;
    s->rposted[slot] = true;
    s->posted++;
}

/* One pass over a stream: reap completions, refill the windows. Returns true when it moved. */
static bool stream_step(unsigned p, bool keep_sending)
{
    stream_t *s = &streams[p];
    bool moved = false;
    for (unsigned slot = 0; slot < NT_WINDOW; slot++) {
        /* receives: check completed ones in seq order per slot, post the next */
        if (s->rposted[slot] && s->rcomp[slot].count == 0) {
            ferry_status_t st = s->rcomp[slot].status;
            s->rposted[slot] = false;
            moved = true;
            if (st == FERRY_OK) {
                FT_CHECK(s->rinfo[slot].length == NT_MSG, "message of %zu bytes from rank %u",
                         s->rinfo[slot].length, p);
                ft_pattern_check(s->rbuf[slot], NT_MSG, ft_pattern_seed(p, s->rseq[slot], NT_MSG),
                                 0, "streamed message");
                s->received++;
            } else {
                FT_CHECK(doomed(p), "a receive from survivor rank %u failed: %s", p,
                         ferry_status_name(st));
                s->recv_errors++;
            }
        }
        if (!s->rposted[slot] && !failed(p) &&
            (s->end_count < 0 || (int64_t)s->posted < s->end_count))
            post_recv(p, slot);

        /* sends: reap a completed one, start the next */
        if (s->scomp[slot].count == 0 && s->sbuf[slot] != NULL) {
            if (s->scomp[slot].status != FERRY_OK) {
                FT_CHECK(doomed(p), "a send to survivor rank %u failed: %s", p,
                         ferry_status_name(s->scomp[slot].status));
                s->send_errors++;
            } else {
                s->send_done++;
            }
            free(s->sbuf[slot]);
            s->sbuf[slot] = NULL;
            moved = true;
        }
        if (keep_sending && s->sbuf[slot] == NULL && !failed(p)) {
            s->sbuf[slot] = malloc(NT_MSG);
            ft_pattern_fill(s->sbuf[slot], NT_MSG, ft_pattern_seed(job.rank, s->sent, NT_MSG), 0);
            ferry_iov_t iov = {s->sbuf[slot], NT_MSG};
            s->scomp[slot] = (ferry_completion_t){.count = 1};
            ferry_status_t st = ferry_tag_send(job.peers[p].ep, &iov, 1, tag_of(job.rank, s->sent),
                                               &s->scomp[slot]);
            if (st == FERRY_ERR_NO_RESOURCE) {
                free(s->sbuf[slot]);
                s->sbuf[slot] = NULL;
                continue;
            }
            if (st == FERRY_OK)
                s->scomp[slot].count = 0;
            else if (st != FERRY_INPROGRESS) {
                FT_CHECK(doomed(p), "tag send to survivor rank %u: %s", p, ferry_status_name(st));
                s->scomp[slot] = (ferry_completion_t){.count = 0, .status = st};
            }
            s->sent++;
            moved = true;
        }
    }
    return moved;
}

static bool all_streaming(void)
{
    for (unsigned p = 0; p < job.size; p++) {
        if (streams[p].active &&
            (streams[p].received < NT_STREAMING_AFTER || streams[p].send_done < NT_STREAMING_AFTER))
            return false;
    }
    return true;
}

static void step_all(bool keep_sending)
{
    ft_progress_once(job.worker);
    for (unsigned p = 0; p < job.size; p++) {
        if (streams[p].active)
            stream_step(p, keep_sending);
    }
}

/* After the endpoint to p failed: nothing posted for p may stay pending. */
static void drain_failed(unsigned p)
{
    stream_t *s = &streams[p];
    for (unsigned slot = 0; slot < NT_WINDOW; slot++) {
        if (s->rposted[slot] && s->rcomp[slot].count != 0) {
            ferry_status_t st = ferry_tag_recv_cancel(job.worker, &s->rcomp[slot]);
            FT_CHECK(st == FERRY_OK || st == FERRY_ERR_NO_ELEM, "cancel: %s",
                     ferry_status_name(st));
        }
    }
    ft_deadline_t d = ft_deadline_in_ms(NT_DONE_TIMEOUT_MS);
    for (;;) {
        bool pending = false;
        for (unsigned slot = 0; slot < NT_WINDOW; slot++)
            pending |= s->rcomp[slot].count != 0 || s->scomp[slot].count != 0;
        if (!pending)
            break;
        FT_CHECK(!ft_deadline_passed(d),
                 "operations on the failed endpoint to rank %u did not "
                 "complete within %d ms",
                 p, NT_DONE_TIMEOUT_MS);
        step_all(true);
    }
    stream_step(p, false);
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {{"fault", required_argument, NULL, 'f'},
                                         {"victim", required_argument, NULL, 'v'},
                                         {NULL, 0, NULL, 0}};
    const char *fault = NULL;
    int c;
    victim = 1;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (c == 'f')
            fault = optarg;
        else if (c == 'v')
            victim = (unsigned)atoi(optarg);
        else
            return 2;
    }
    if (fault == NULL || (strcmp(fault, "cut") != 0 && strcmp(fault, "kill") != 0)) {
        fprintf(stderr, "usage: nt_fault --fault cut|kill --victim RANK\n");
        return 2;
    }
    fault_kill = strcmp(fault, "kill") == 0;
    signal(SIGUSR1, on_sigusr1);

    nt_job_init(&job, "nt_fault", 120);
    FT_CHECK(job.size >= 2 && victim > 0 && victim < job.size, "victim %u of %u ranks", victim,
             job.size);
    nt_job_check_transports(&job);
    long timeout_ms = nt_env_long("FERRY_TCP_TIMEOUT_MS", 2000);
    long slack_ms = nt_env_long("NT_FAULT_SLACK_MS", 3000);
    long bound_ms = fault_kill ? slack_ms : timeout_ms + slack_ms;

    streams = calloc(job.size, sizeof(*streams));
    for (unsigned p = 0; p < job.size; p++) {
        streams[p].active = p != job.rank && (job.rank == 0 || p == 0);
        streams[p].end_count = -1;
        for (unsigned slot = 0; slot < NT_WINDOW; slot++)
            streams[p].rbuf[slot] = malloc(NT_MSG);
    }
    FT_CHECK_OK(ferry_am_set_handler(job.worker, NT_END_ID, end_handler, NULL));
    FT_CHECK_OK(ferry_am_set_handler(job.worker, NT_BYE_ID, bye_handler, NULL));
    FT_CHECK_OK(ferry_am_set_handler(job.worker, NT_HELLO_ID, hello_handler, NULL));
    nt_job_barrier(&job);
    /* every endpoint carries a message first, so that every pair has a live connection (also
     * those that stay idle afterwards: only keep-alive can find their link cut) */
    ferry_completion_t hello_comp = {0};
    for (unsigned p = 0; p < job.size; p++) {
        if (p == job.rank)
            continue;
        ferry_status_t st = nt_am_send(&job, p, NT_HELLO_ID, NULL, 0, NULL, 0, &hello_comp, 10000);
        FT_CHECK(st == FERRY_OK || st == FERRY_INPROGRESS, "hello to rank %u: %s", p,
                 ferry_status_name(st));
    }
    ft_progress_until_count(job.worker, NT_DONE_TIMEOUT_MS, &hellos, job.size - 1,
                            "a hello from every rank");
    /* handed to the transport (a send queued until its connection is up moves only with this
     * process's progress, which stops in the blocking barrier below) */
    nt_wait_completion(&job, &hello_comp, NT_DONE_TIMEOUT_MS, "the hellos' local completion");
    nt_job_barrier(&job); /* the last collective: after the fault a rank may be gone */

    /* 1. stream until every stream runs, then tell run.sh */
    ft_deadline_t d = ft_deadline_in_ms(NT_DONE_TIMEOUT_MS);
    while (!all_streaming()) {
        FT_CHECK(!ft_deadline_passed(d), "the streams did not start within %d ms",
                 NT_DONE_TIMEOUT_MS);
        step_all(true);
    }
    printf("nt_fault: streaming (rank %u, pid %d)\n", job.rank, (int)getpid());
    ft_note("streaming; waiting for the fault (%s of rank %u)", fault, victim);

    /* 2. keep streaming until the fault was signalled and every doomed endpoint failed */
    uint64_t survivor_mark[64] = {0};
    bool marked = false;
    d = ft_deadline_in_ms(NT_DONE_TIMEOUT_MS);
    for (;;) {
        step_all(true);
        if (!fault_signalled) {
            FT_CHECK(!ft_deadline_passed(d), "no fault was signalled (SIGUSR1) within %d ms",
                     NT_DONE_TIMEOUT_MS);
            continue;
        }
        if (!marked) {
            for (unsigned p = 0; p < job.size && p < 64; p++)
                survivor_mark[p] = streams[p].send_done;
            marked = true;
        }
        bool waiting = false;
        for (unsigned p = 0; p < job.size; p++) {
            if (p == job.rank || !doomed(p) || failed(p))
                continue;
            waiting = true;
            FT_CHECK(nt_ms_since(fault_ns) <= (double)bound_ms,
                     "the endpoint to rank %u (%s) did not fail within %ld ms of the fault (%s)", p,
                     job.peers[p].host, bound_ms, fault);
        }
        if (!waiting)
            break;
    }
    for (unsigned p = 0; p < job.size; p++) {
        if (p == job.rank || !doomed(p))
            continue;
        double after = (double)((int64_t)job.peers[p].error_ns - (int64_t)fault_ns) / 1e6;
        ft_note("endpoint to rank %u failed %.0f ms after the fault: %s", p, after,
                ferry_status_name(job.peers[p].error));
        printf("nt_fault: rank %u: endpoint to rank %u failed after %.0f ms (bound %ld): %s\n",
               job.rank, p, after, bound_ms, ferry_status_name(job.peers[p].error));
        drain_failed(p);
    }
    if (job.rank == victim) {
        /* cut: every endpoint of the victim failed; it ends here (its peers cannot reach it) */
        nt_job_fini(&job, false);
        printf("nt_fault: rank %u (victim) passed\n", job.rank);
        return 0;
    }

    /* 3. survivors: go on until NT_AFTER_FAULT more sends to each survivor completed (a
     * rendezvous send completes once the peer received it), then END, then BYE. The condition
     * is on this rank's own sends: one on what it received would wait for a peer that met its
     * own condition earlier and stopped sending. */
    d = ft_deadline_in_ms(NT_DONE_TIMEOUT_MS);
    for (;;) {
        bool more = false;
        for (unsigned p = 0; p < job.size && p < 64; p++)
            more |= streams[p].active && !doomed(p) &&
                    streams[p].send_done < survivor_mark[p] + NT_AFTER_FAULT;
        if (!more)
            break;
        FT_CHECK(!ft_deadline_passed(d), "survivor streams stalled after the fault");
        step_all(true);
    }
    for (unsigned p = 0; p < job.size; p++) {
        stream_t *s = &streams[p];
        if (!s->active || doomed(p))
            continue;
        while (s->sbuf[0] || s->sbuf[1] || s->sbuf[2] || s->sbuf[3]) {
            FT_CHECK(!ft_deadline_passed(d), "sends to rank %u did not complete", p);
            step_all(false);
        }
        uint64_t h[2] = {job.rank, s->sent};
        ferry_status_t st = nt_am_send(&job, p, NT_END_ID, h, sizeof(h), NULL, 0, NULL, 10000);
        FT_CHECK(st == FERRY_OK || st == FERRY_INPROGRESS, "END to rank %u: %s", p,
                 ferry_status_name(st));
    }
    for (unsigned p = 0; p < job.size; p++) {
        stream_t *s = &streams[p];
        if (!s->active || doomed(p))
            continue;
        while (s->end_count < 0 || (int64_t)s->received < s->end_count) {
            FT_CHECK(!ft_deadline_passed(d), "rank %u: END or its messages did not arrive", p);
            step_all(false);
        }
        ft_note("survivor stream with rank %u: %llu messages received, %llu sent, all checked", p,
                (unsigned long long)s->received, (unsigned long long)s->sent);
    }
    /* 4. BYE to every survivor, and wait for theirs: nobody closes while others still check */
    for (unsigned p = 0; p < job.size; p++) {
        if (p == job.rank || doomed(p))
            continue;
        uint64_t me = job.rank;
        ferry_status_t st = nt_am_send(&job, p, NT_BYE_ID, &me, sizeof(me), NULL, 0, NULL, 10000);
        FT_CHECK(st == FERRY_OK || st == FERRY_INPROGRESS, "BYE to rank %u: %s", p,
                 ferry_status_name(st));
    }
    for (unsigned p = 0; p < job.size; p++) {
        if (p == job.rank || doomed(p))
            continue;
        while (!streams[p].bye) {
            FT_CHECK(!ft_deadline_passed(d), "no BYE from rank %u", p);
            FT_CHECK(!failed(p), "the endpoint to survivor rank %u failed: %s", p,
                     ferry_status_name(job.peers[p].error));
            ft_progress_once(job.worker);
        }
    }
    /* graceful close: a BYE still queued is delivered before the peer hears of the close */
    nt_job_close_all(&job, NT_DONE_TIMEOUT_MS);
    nt_job_fini(&job, false);
    printf("nt_fault: rank %u passed\n", job.rank);
    return 0;
}
