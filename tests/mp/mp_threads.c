/* FERRY_THREAD_MULTI: one worker shared by several threads (ferry.h, ferry_thread_mode_t).
 *
 *   mp_threads msg   4 threads share one worker; each sends tagged messages of every size
 *                    class (inline, eager, rendezvous) and active messages to two peer
 *                    processes and receives their echoes, while a fifth thread only waits
 *                    (ferry_worker_wait); the peers check every byte and the order of each
 *                    sender thread's messages, the threads check every echoed byte and order
 *   mp_threads rma   3 threads put, get and fetch-add on one endpoint (disjoint ranges, one
 *                    shared counter) while a fourth flushes the endpoint in a loop and a fifth
 *                    progresses; every range read back, the counter exact
 *   mp_threads eps   one thread creates an endpoint, sends on it and closes it, again and
 *                    again, while two others send on their own endpoints and a fourth waits;
 *                    the peer checks every byte and each sender's order
 *   mp_threads reg   the multi-thread process is the target: one thread registers memory,
 *                    hands its key to a peer process that gets, puts and fetch-adds on it, then
 *                    deregisters it while the peer is still accessing it with the key (each
 *                    access either succeeds with the right bytes or is refused); two threads
 *                    register, pack keys, allocate and deregister all the while, one
 *                    progresses and one waits. Every byte and the counter checked
 *   mp_threads bias  the thread that created the worker (it holds the lock's bias) sends AMs
 *                    of every size to both peers and progresses in a loop; 20 ms in, a second
 *                    thread starts sending and progressing too, which revokes the bias while
 *                    the owner is inside its calls; the owner's completion callbacks call
 *                    ferry on the worker (nested calls) and it waits (ferry_worker_wait) now
 *                    and then. The peers check every byte and each sender's order
 *
 * Every thread's completions are callbacks that set atomics (callbacks run in the progressing
 * thread with the worker's lock held). Run under TSan in CI (label threads). */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ft.h"
#include "ft_rma.h"

#define TH_SENDERS 4
#define TH_PEERS 2
#define TH_MAGIC 0x44524854u /* "THRD" */

enum { TH_ID_DATA = 50, TH_ID_ECHO = 51 };
enum { TH_TOKEN_DONE = 0x444f4e45, TH_TOKEN_EXIT = 0x45584954, TH_TOKEN_COUNT = 0x434f554e };

static const size_t th_tag_sizes[] = {0, 8, 200, 4096, 20000, 100000, 1u << 20};
#define TH_NTAG (sizeof(th_tag_sizes) / sizeof(th_tag_sizes[0]))
static const size_t th_am_sizes[] = {0, 8, 200, 4096, 40000};
#define TH_NAM (sizeof(th_am_sizes) / sizeof(th_am_sizes[0]))

#define TH_ROUNDS 3 /* every tag size, this many times, per thread and peer */
#define TH_AM_PER_THREAD (TH_ROUNDS * TH_NTAG)

typedef struct th_hdr {
    uint32_t magic;
    uint32_t sender; /* thread (or endpoint) number */
    uint32_t seq;
    uint32_t size;
} th_hdr_t;

/* tag: [63:56] sender thread, [55:48] peer, [47:8] seq, [7:0] size index */
static uint64_t th_tag(unsigned thread, unsigned peer, uint64_t seq, unsigned size_index)
{
    return (uint64_t)thread << 56 | (uint64_t)peer << 48 | seq << 8 | size_index;
}

#define TH_TAG_FROM_MASK (0xffffull << 48)

/* A completion whose callback sets an atomic flag the owning thread waits for (the
 * completion itself is written under the worker's lock, by the progressing thread). */
typedef struct th_comp {
    ferry_completion_t comp; /* first: the callback's argument is this */
    atomic_int done;
    atomic_int status;
} th_comp_t;

static void th_comp_cb(ferry_completion_t *comp)
{
    th_comp_t *c = (th_comp_t *)comp;
    atomic_store(&c->status, comp->status);
    atomic_store(&c->done, 1);
}

static void th_comp_init(th_comp_t *c)
{
    c->comp = (ferry_completion_t){.cb = th_comp_cb, .count = 1};
    atomic_store(&c->done, 0);
    atomic_store(&c->status, FERRY_OK);
}

/* The operation's call returned st: wait (without progressing: another thread does) until it
 * completed, then check its final status. */
static void th_comp_finish(th_comp_t *c, ferry_status_t st, const char *what)
{
    FT_CHECK(st == FERRY_OK || st == FERRY_INPROGRESS, "%s: %s", what, ferry_status_name(st));
    if (st == FERRY_OK)
        return;
    ft_deadline_t deadline = ft_deadline_in_ms(60000);
    while (!atomic_load(&c->done)) {
        FT_CHECK(!ft_deadline_passed(deadline), "%s did not complete in 60 s", what);
        sched_yield();
    }
    FT_CHECK(atomic_load(&c->status) == FERRY_OK, "%s completed with %s", what,
             ferry_status_name((ferry_status_t)atomic_load(&c->status)));
}

/* Retry a send refused with FERRY_ERR_NO_RESOURCE (the progress thread makes room). */
static bool th_retry(ferry_status_t st, ft_deadline_t deadline, const char *what)
{
    if (st != FERRY_ERR_NO_RESOURCE)
        return false;
    FT_CHECK(!ft_deadline_passed(deadline), "%s: no room for 60 s", what);
    sched_yield();
    return true;
}

/* ------------------------------------------------------------------ the peers (single mode) */

typedef struct th_peer {
    ft_ferry_t f;
    unsigned index;
    ferry_ep_t *back; /* to the multi-thread worker */
    uint32_t am_next[256];
    uint64_t am_checked;
    uint64_t tag_next[TH_SENDERS];
    uint64_t tag_checked;
    uint8_t *buf;
    /* AM echoes not sent yet (the parent's ring may be full): sent from the main loop */
    struct th_echo {
        th_hdr_t h;
        uint8_t *data;
    } * echoes;
    size_t echo_head, echo_tail, echo_cap;
} th_peer_t;

static ferry_status_t th_peer_am_cb(void *arg, const void *header, size_t header_length, void *data,
                                    size_t length, const ferry_am_recv_params_t *params)
{
    th_peer_t *p = arg;
    th_hdr_t h;
    FT_CHECK(header_length == sizeof(h), "AM header of %zu bytes", header_length);
    memcpy(&h, header, sizeof(h));
    FT_CHECK(h.magic == TH_MAGIC && h.sender < 256 && h.size == length, "bad AM header");
    FT_CHECK(h.seq == p->am_next[h.sender], "sender %u: AM %u arrived where %u was expected",
             h.sender, h.seq, p->am_next[h.sender]);
    ft_pattern_check(data, length, ft_pattern_seed(h.sender, h.seq, h.size), 0, "an AM");
    p->am_next[h.sender]++;
    p->am_checked++;
    if (p->back != NULL) { /* msg: echo it (th_peer_echoes) */
        FT_CHECK(p->echo_tail < p->echo_cap, "too many echoes");
        struct th_echo *e = &p->echoes[p->echo_tail++];
        e->h = h;
        e->h.sender = h.sender * TH_PEERS + p->index;
        e->data = malloc(length ? length : 1);
        FT_CHECK(e->data != NULL, "malloc");
        if (length > 0) /* a 0-byte AM may come with data NULL */
            memcpy(e->data, data, length);
    }
    (void)params;
    return FERRY_OK;
}

/* Send the AM echoes queued, in order, while there is room. */
static void th_peer_echoes(th_peer_t *p)
{
    while (p->echo_head < p->echo_tail) {
        struct th_echo *e = &p->echoes[p->echo_head];
        ferry_iov_t iov = {e->data, e->h.size};
        ferry_completion_t comp = {.count = 1};
        ferry_status_t st = ferry_am_send(p->back, TH_ID_ECHO, &e->h, sizeof(e->h), &iov, 1, &comp);
        if (st == FERRY_ERR_NO_RESOURCE)
            return;
        if (st == FERRY_INPROGRESS)
            ft_progress_until_completion(p->f.worker, 30000, &comp, "an AM echo");
        else
            FT_CHECK_OK(st);
        free(e->data);
        p->echo_head++;
    }
}

/* Receive every tagged message waiting, check it, echo it (msg). */
static void th_peer_tags(th_peer_t *p)
{
    ferry_tag_info_t info;
    ferry_tag_message_t *msg;
    while (ferry_tag_probe(p->f.worker, 0, 0, 1, &info, &msg) == FERRY_OK) {
        unsigned thread = (unsigned)(info.tag >> 56);
        unsigned size_index = (unsigned)(info.tag & 0xff);
        uint64_t seq = (info.tag >> 8) & 0xffffffffffull;
        FT_CHECK(thread < TH_SENDERS && size_index < TH_NTAG &&
                     (unsigned)((info.tag >> 48) & 0xff) == p->index,
                 "bad tag %llx", (unsigned long long)info.tag);
        size_t size = th_tag_sizes[size_index];
        FT_CHECK(info.length == size, "tag %llx: %zu bytes", (unsigned long long)info.tag,
                 info.length);
        FT_CHECK(seq == p->tag_next[thread], "thread %u: tagged message %llu where %llu expected",
                 thread, (unsigned long long)seq, (unsigned long long)p->tag_next[thread]);
        ferry_iov_t iov = {p->buf, size};
        ferry_completion_t comp = {.count = 1};
        ferry_status_t st = ferry_tag_message_recv(p->f.worker, msg, &iov, 1, NULL, &comp);
        if (st == FERRY_INPROGRESS)
            ft_progress_until_completion(p->f.worker, 30000, &comp, "a tagged receive");
        else
            FT_CHECK_OK(st);
        FT_CHECK_OK(comp.status);
        ft_pattern_check(p->buf, size, ft_pattern_seed(thread, seq, size), 0, "a tagged message");
        p->tag_next[thread]++;
        p->tag_checked++;
        comp = (ferry_completion_t){.count = 1};
        do
            st = ferry_tag_send(p->back, &iov, 1, info.tag, &comp);
        while (st == FERRY_ERR_NO_RESOURCE && ft_progress_once(p->f.worker) < UINT32_MAX);
        if (st == FERRY_INPROGRESS)
            ft_progress_until_completion(p->f.worker, 30000, &comp, "an echo");
        else
            FT_CHECK_OK(st);
        FT_CHECK_OK(comp.status);
    }
}

typedef struct th_peer_arg {
    unsigned index;
    bool echo;
} th_peer_arg_t;

static int th_peer(int chan, void *arg)
{
    th_peer_arg_t *a = arg;
    static th_peer_t p;
    p.index = a->index;
    p.buf = malloc(1u << 20);
    p.echo_cap = 65536;
    p.echoes = calloc(p.echo_cap, sizeof(*p.echoes));
    FT_CHECK(p.buf != NULL && p.echoes != NULL, "malloc");
    ft_ferry_init(&p.f, NULL, NULL);
    FT_CHECK_OK(ferry_am_set_handler(p.f.worker, TH_ID_DATA, th_peer_am_cb, &p));
    ft_send_address(chan, p.f.worker);
    uint8_t addr[FT_CHAN_MSG_MAX];
    size_t alen = ft_recv_address(chan, addr, sizeof(addr), 20000);
    ferry_ep_t *back = ft_ep_create(p.f.worker, addr, alen, NULL);
    FT_CHECK_OK(ferry_ep_wait_connected(back, 20000));
    if (a->echo)
        p.back = back;
    ft_token_t tok;
    while (!ft_chan_try_token(chan, TH_TOKEN_DONE, &tok)) {
        ft_progress_once(p.f.worker);
        if (a->echo) {
            th_peer_tags(&p);
            th_peer_echoes(&p);
        }
    }
    /* tok.v[0]: AMs the parent sent here, v[1]: tagged messages */
    ft_deadline_t deadline = ft_deadline_in_ms(30000);
    while (p.am_checked < tok.v[0] || p.tag_checked < tok.v[1]) {
        FT_CHECK(!ft_deadline_passed(deadline), "peer %u: %llu/%llu AMs, %llu/%llu tagged", p.index,
                 (unsigned long long)p.am_checked, (unsigned long long)tok.v[0],
                 (unsigned long long)p.tag_checked, (unsigned long long)tok.v[1]);
        ft_progress_once(p.f.worker);
        if (a->echo) {
            th_peer_tags(&p);
            th_peer_echoes(&p);
        }
    }
    while (p.echo_head < p.echo_tail) {
        FT_CHECK(!ft_deadline_passed(deadline), "peer %u: echoes not sent", p.index);
        ft_progress_once(p.f.worker);
        th_peer_echoes(&p);
    }
    ft_chan_send_token(chan, TH_TOKEN_COUNT, p.am_checked, p.tag_checked, 0, 0);
    ft_progress_until_token(p.f.worker, chan, TH_TOKEN_EXIT, 30000, NULL);
    ferry_ep_destroy(back);
    ft_ferry_fini(&p.f);
    free(p.buf);
    free(p.echoes);
    return 0;
}

/* ------------------------------------------------------------------ the multi-thread side */

typedef struct th_main {
    ft_ferry_t f;
    ft_peer_t peers[TH_PEERS];
    th_peer_arg_t peer_args[TH_PEERS];
    ferry_ep_t *eps[TH_PEERS];
    atomic_int stop; /* the waiting thread stops */
    atomic_uint senders_done;
    /* echoes of AMs, checked in the handler (under the worker's lock) */
    uint32_t echo_next[TH_SENDERS * TH_PEERS];
    atomic_ulong echoes;
    atomic_ulong waits;
} th_main_t;

static th_main_t th;
/* the peers' addresses, for endpoints made later (eps) */
static uint8_t th_eps_addr[TH_PEERS][FT_CHAN_MSG_MAX];
static size_t th_eps_alen[TH_PEERS];

static ferry_status_t th_echo_cb(void *arg, const void *header, size_t header_length, void *data,
                                 size_t length, const ferry_am_recv_params_t *params)
{
    (void)arg;
    (void)params;
    th_hdr_t h;
    FT_CHECK(header_length == sizeof(h), "echo header of %zu bytes", header_length);
    memcpy(&h, header, sizeof(h));
    unsigned thread = h.sender / TH_PEERS;
    FT_CHECK(h.magic == TH_MAGIC && thread < TH_SENDERS && h.size == length, "bad echo");
    FT_CHECK(h.seq == th.echo_next[h.sender], "echo %u of stream %u where %u was expected", h.seq,
             h.sender, th.echo_next[h.sender]);
    ft_pattern_check(data, length, ft_pattern_seed(thread, h.seq, h.size), 0, "an echo");
    th.echo_next[h.sender]++;
    atomic_fetch_add(&th.echoes, 1);
    return FERRY_OK;
}

static void *th_waiter(void *arg)
{
    (void)arg;
    while (!atomic_load(&th.stop)) {
        ferry_status_t st = ferry_worker_wait(th.f.worker, 100);
        FT_CHECK(st == FERRY_OK || st == FERRY_ERR_TIMED_OUT, "ferry_worker_wait: %s",
                 ferry_status_name(st));
        atomic_fetch_add(&th.waits, 1);
    }
    return NULL;
}

static void th_send_am(ferry_ep_t *ep, unsigned sender, uint32_t seq, size_t size, uint8_t *buf)
{
    th_hdr_t h = {.magic = TH_MAGIC, .sender = sender, .seq = seq, .size = (uint32_t)size};
    ft_pattern_fill(buf, size, ft_pattern_seed(sender, seq, size), 0);
    ferry_iov_t iov = {buf, size};
    th_comp_t c;
    th_comp_init(&c);
    ft_deadline_t deadline = ft_deadline_in_ms(60000);
    ferry_status_t st;
    do
        st = ferry_am_send(ep, TH_ID_DATA, &h, sizeof(h), &iov, 1, &c.comp);
    while (th_retry(st, deadline, "ferry_am_send"));
    th_comp_finish(&c, st, "an AM");
}

static void *th_msg_sender(void *arg)
{
    unsigned t = (unsigned)(uintptr_t)arg;
    uint8_t *sbuf = malloc(1u << 20), *rbuf = malloc(1u << 20);
    FT_CHECK(sbuf != NULL && rbuf != NULL, "malloc");
    uint32_t am_seq = 0;
    uint64_t seq[TH_PEERS] = {0};
    for (unsigned round = 0; round < TH_ROUNDS; round++) {
        for (unsigned si = 0; si < TH_NTAG; si++) {
            for (unsigned p = 0; p < TH_PEERS; p++) {
                size_t size = th_tag_sizes[si];
                uint64_t tag = th_tag(t, p, seq[p], si);
                /* the echo's receive first: it may arrive before our send completed */
                th_comp_t rc;
                th_comp_init(&rc);
                ferry_iov_t riov = {rbuf, size};
                ferry_tag_info_t info;
                ferry_status_t rst =
                    ferry_tag_recv(th.f.worker, &riov, 1, tag, ~0ull, &info, &rc.comp);
                ft_pattern_fill(sbuf, size, ft_pattern_seed(t, seq[p], size), 0);
                ferry_iov_t iov = {sbuf, size};
                th_comp_t c;
                th_comp_init(&c);
                ft_deadline_t deadline = ft_deadline_in_ms(60000);
                ferry_status_t st;
                do
                    st = ferry_tag_send(th.eps[p], &iov, 1, tag, &c.comp);
                while (th_retry(st, deadline, "ferry_tag_send"));
                th_comp_finish(&c, st, "a tagged send");
                th_comp_finish(&rc, rst, "a tagged receive");
                ft_pattern_check(rbuf, size, ft_pattern_seed(t, seq[p], size), 0,
                                 "an echoed tagged message");
                seq[p]++;
                /* and an active message to the same peer */
                th_send_am(th.eps[p], t, am_seq / TH_PEERS, th_am_sizes[am_seq / TH_PEERS % TH_NAM],
                           sbuf);
                am_seq++;
            }
        }
    }
    free(sbuf);
    free(rbuf);
    atomic_fetch_add(&th.senders_done, 1);
    return NULL;
}

static void th_start(bool echo)
{
    for (unsigned p = 0; p < TH_PEERS; p++) {
        th.peer_args[p] = (th_peer_arg_t){.index = p, .echo = echo};
        ft_peer_spawn(&th.peers[p], p ? "peer1" : "peer0", th_peer, &th.peer_args[p]);
    }
    ferry_worker_params_t wp = {.thread_mode = FERRY_THREAD_MULTI};
    ft_ferry_init(&th.f, NULL, &wp);
    FT_CHECK_OK(ferry_am_set_handler(th.f.worker, TH_ID_ECHO, th_echo_cb, NULL));
    for (unsigned p = 0; p < TH_PEERS; p++) {
        uint8_t addr[FT_CHAN_MSG_MAX];
        size_t alen = ft_recv_address(th.peers[p].chan, addr, sizeof(addr), 20000);
        memcpy(th_eps_addr[p], addr, alen);
        th_eps_alen[p] = alen;
        th.eps[p] = ft_ep_create(th.f.worker, addr, alen, NULL);
        ft_send_address(th.peers[p].chan, th.f.worker);
    }
    for (unsigned p = 0; p < TH_PEERS; p++)
        FT_CHECK_OK(ferry_ep_wait_connected(th.eps[p], 20000));
}

/* Tell each peer how many AMs (ams[p]) and tagged messages (tags[p]) it must have seen, and
 * wait for its count while the waiter thread keeps progressing. */
static void th_finish(const uint64_t *ams, const uint64_t *tags)
{
    for (unsigned p = 0; p < TH_PEERS; p++)
        ft_chan_send_token(th.peers[p].chan, TH_TOKEN_DONE, ams[p], tags[p], 0, 0);
    for (unsigned p = 0; p < TH_PEERS; p++) {
        ft_token_t tok = ft_chan_expect_token(th.peers[p].chan, TH_TOKEN_COUNT, 60000);
        FT_CHECK(tok.v[0] == ams[p] && tok.v[1] == tags[p], "peer %u counted %llu AMs, %llu tagged",
                 p, (unsigned long long)tok.v[0], (unsigned long long)tok.v[1]);
        ft_chan_send_token(th.peers[p].chan, TH_TOKEN_EXIT, 0, 0, 0, 0);
    }
}

static void th_stop(pthread_t waiter)
{
    atomic_store(&th.stop, 1);
    FT_CHECK(pthread_join(waiter, NULL) == 0, "join the waiter");
    for (unsigned p = 0; p < TH_PEERS; p++)
        ft_peer_expect_exit(&th.peers[p], 30000, 0);
    for (unsigned p = 0; p < TH_PEERS; p++)
        if (th.eps[p] != NULL)
            ferry_ep_destroy(th.eps[p]);
    ft_ferry_fini(&th.f);
}

static int th_msg(void)
{
    th_start(true);
    pthread_t waiter, senders[TH_SENDERS];
    FT_CHECK(pthread_create(&waiter, NULL, th_waiter, NULL) == 0, "pthread_create");
    for (unsigned t = 0; t < TH_SENDERS; t++)
        FT_CHECK(pthread_create(&senders[t], NULL, th_msg_sender, (void *)(uintptr_t)t) == 0,
                 "pthread_create");
    for (unsigned t = 0; t < TH_SENDERS; t++)
        FT_CHECK(pthread_join(senders[t], NULL) == 0, "join a sender");
    uint64_t per_peer = (uint64_t)TH_SENDERS * TH_ROUNDS * TH_NTAG;
    uint64_t ams[TH_PEERS] = {per_peer, per_peer}, tags[TH_PEERS] = {per_peer, per_peer};
    ft_deadline_t deadline = ft_deadline_in_ms(60000);
    while (atomic_load(&th.echoes) < TH_PEERS * per_peer) {
        FT_CHECK(!ft_deadline_passed(deadline), "%lu of %llu AM echoes",
                 (unsigned long)atomic_load(&th.echoes), (unsigned long long)(TH_PEERS * per_peer));
        sched_yield();
    }
    th_finish(ams, tags);
    th_stop(waiter);
    ft_note("%u threads: %llu tagged messages and %llu AMs each way, checked; the waiter woke "
            "%lu times",
            TH_SENDERS, (unsigned long long)(TH_PEERS * per_peer),
            (unsigned long long)(TH_PEERS * per_peer), (unsigned long)atomic_load(&th.waits));
    return 0;
}

/* ------------------------------------------------------------------ mp_threads eps */

#define TH_EPS_STREAM 400 /* messages per long-lived sender */
#define TH_EPS_CYCLES 40  /* endpoints created and closed */

static void *th_eps_stream(void *arg)
{
    unsigned t = (unsigned)(uintptr_t)arg; /* 0, 1: on eps[t % peers] */
    uint8_t *buf = malloc(40000);
    FT_CHECK(buf != NULL, "malloc");
    for (uint32_t seq = 0; seq < TH_EPS_STREAM; seq++)
        th_send_am(th.eps[t % TH_PEERS], t, seq, th_am_sizes[seq % TH_NAM], buf);
    free(buf);
    atomic_fetch_add(&th.senders_done, 1);
    return NULL;
}

static void *th_eps_cycler(void *arg)
{
    (void)arg;
    uint8_t *buf = malloc(40000);
    FT_CHECK(buf != NULL, "malloc");
    for (unsigned k = 0; k < TH_EPS_CYCLES; k++) {
        unsigned p = k % TH_PEERS;
        ferry_ep_t *ep;
        FT_CHECK_OK(ferry_ep_create(th.f.worker, th_eps_addr[p], th_eps_alen[p], NULL, &ep));
        /* a fresh sender id each time: 100 + k, three messages */
        for (uint32_t seq = 0; seq < 3; seq++)
            th_send_am(ep, 100 + k, seq, th_am_sizes[(k + seq) % TH_NAM], buf);
        th_comp_t c;
        th_comp_init(&c);
        ferry_status_t st = ferry_ep_close(ep, 0, &c.comp);
        th_comp_finish(&c, st, "a graceful close");
        ferry_ep_destroy(ep);
    }
    free(buf);
    atomic_fetch_add(&th.senders_done, 1);
    return NULL;
}

static int th_eps(void)
{
    th_start(false);
    pthread_t waiter, threads[3];
    FT_CHECK(pthread_create(&waiter, NULL, th_waiter, NULL) == 0, "pthread_create");
    FT_CHECK(pthread_create(&threads[0], NULL, th_eps_stream, (void *)(uintptr_t)0) == 0, "create");
    FT_CHECK(pthread_create(&threads[1], NULL, th_eps_stream, (void *)(uintptr_t)1) == 0, "create");
    FT_CHECK(pthread_create(&threads[2], NULL, th_eps_cycler, NULL) == 0, "create");
    for (unsigned i = 0; i < 3; i++)
        FT_CHECK(pthread_join(threads[i], NULL) == 0, "join");
    uint64_t ams[TH_PEERS], tags[TH_PEERS] = {0, 0};
    for (unsigned p = 0; p < TH_PEERS; p++)
        ams[p] = TH_EPS_STREAM + (TH_EPS_CYCLES / TH_PEERS) * 3;
    th_finish(ams, tags);
    th_stop(waiter);
    ft_note("2 streams of %u AMs beside %u endpoints created, used and closed by a third thread",
            TH_EPS_STREAM, TH_EPS_CYCLES);
    return 0;
}

/* ------------------------------------------------------------------ mp_threads rma */

#define TH_RMA_THREADS 3
#define TH_RMA_RANGE (256u * 1024)
#define TH_RMA_ITERS 160
#define TH_RMA_ADDS 640
#define TH_RMA_SIZE (TH_RMA_THREADS * TH_RMA_RANGE + 4096)

static ferry_rkey_t *th_rkey;

static int th_rma_target(int chan, void *arg)
{
    (void)arg;
    ft_ferry_t f;
    ft_ferry_init(&f, NULL, NULL);
    ft_send_address(chan, f.worker);
    ferry_mem_t *mem;
    void *ptr;
    FT_CHECK_OK(ferry_mem_alloc(f.context, TH_RMA_SIZE, FERRY_ACCESS_ALL, &mem, &ptr));
    void *packed;
    size_t plen;
    FT_CHECK_OK(ferry_rkey_pack(mem, &packed, &plen));
    ft_chan_send(chan, packed, plen);
    ferry_rkey_buffer_release(packed);
    ft_progress_until_token(f.worker, chan, TH_TOKEN_EXIT, 60000, NULL);
    uint64_t counter;
    memcpy(&counter, (uint8_t *)ptr + TH_RMA_THREADS * TH_RMA_RANGE, sizeof(counter));
    FT_CHECK(counter == (uint64_t)TH_RMA_THREADS * TH_RMA_ADDS, "counter %llu",
             (unsigned long long)counter);
    FT_CHECK_OK(ferry_mem_deregister(mem));
    ft_ferry_fini(&f);
    return 0;
}

static void *th_rma_worker(void *arg)
{
    unsigned t = (unsigned)(uintptr_t)arg;
    uint8_t *out = malloc(TH_RMA_RANGE), *in = malloc(TH_RMA_RANGE);
    FT_CHECK(out != NULL && in != NULL, "malloc");
    ferry_ep_t *ep = th.eps[0];
    uint64_t base = (uint64_t)t * TH_RMA_RANGE;
    unsigned adds = 0;
    for (unsigned i = 0; i < TH_RMA_ITERS; i++) {
        size_t size = (size_t)1 << (3 + i % 16); /* 8 B .. 256 KiB */
        if (size > TH_RMA_RANGE)
            size = TH_RMA_RANGE;
        ft_pattern_fill(out, size, ft_pattern_seed(t, i, size), 0);
        th_comp_t c;
        th_comp_init(&c);
        ft_deadline_t deadline = ft_deadline_in_ms(60000);
        ferry_status_t st;
        do
            st = ferry_put(ep, out, size, base, th_rkey, &c.comp);
        while (th_retry(st, deadline, "ferry_put"));
        th_comp_finish(&c, st, "a put");
        /* a flush of our own before reading back: the put is then in the target's memory */
        th_comp_init(&c);
        th_comp_finish(&c, ferry_ep_flush(ep, &c.comp), "a flush");
        memset(in, 0, size);
        th_comp_init(&c);
        do
            st = ferry_get(ep, in, size, base, th_rkey, &c.comp);
        while (th_retry(st, deadline, "ferry_get"));
        th_comp_finish(&c, st, "a get");
        ft_pattern_check(in, size, ft_pattern_seed(t, i, size), 0, "a range read back");
        for (unsigned k = 0; k < TH_RMA_ADDS / TH_RMA_ITERS; k++, adds++) {
            uint64_t old = 0;
            th_comp_init(&c);
            do
                st = ferry_atomic_fetch(ep, FERRY_ATOMIC_ADD, 1, 0, 8,
                                        TH_RMA_THREADS * TH_RMA_RANGE, th_rkey, &old, &c.comp);
            while (th_retry(st, deadline, "ferry_atomic_fetch"));
            th_comp_finish(&c, st, "a fetch-add");
            FT_CHECK(old < (uint64_t)TH_RMA_THREADS * TH_RMA_ADDS, "fetched %llu",
                     (unsigned long long)old);
        }
    }
    FT_CHECK(adds == TH_RMA_ADDS, "adds");
    free(out);
    free(in);
    atomic_fetch_add(&th.senders_done, 1);
    return NULL;
}

static void *th_rma_flusher(void *arg)
{
    (void)arg;
    unsigned flushes = 0;
    while (atomic_load(&th.senders_done) < TH_RMA_THREADS) {
        th_comp_t c;
        th_comp_init(&c);
        th_comp_finish(&c, ferry_ep_flush(th.eps[0], &c.comp), "a flush");
        flushes++;
        sched_yield();
    }
    ft_note("the flusher flushed %u times", flushes);
    return NULL;
}

/* Fork peer 0 running role, start this process's multi-thread worker and create its endpoint
 * to the address the peer sends first (the rma and reg modes). */
static void th_connect_peer0(const char *name, ft_role_fn_t role)
{
    ft_peer_spawn(&th.peers[0], name, role, NULL);
    ferry_worker_params_t wp = {.thread_mode = FERRY_THREAD_MULTI};
    ft_ferry_init(&th.f, NULL, &wp);
    uint8_t addr[FT_CHAN_MSG_MAX];
    size_t alen = ft_recv_address(th.peers[0].chan, addr, sizeof(addr), 20000);
    th.eps[0] = ft_ep_create(th.f.worker, addr, alen, NULL);
}

static int th_rma(void)
{
    th_connect_peer0("target", th_rma_target);
    FT_CHECK_OK(ferry_ep_wait_connected(th.eps[0], 20000));
    uint8_t packed[FT_CHAN_MSG_MAX];
    size_t plen = ft_chan_recv(th.peers[0].chan, packed, sizeof(packed), 20000);
    FT_CHECK_OK(ferry_rkey_unpack(th.eps[0], packed, plen, &th_rkey));
    pthread_t waiter, flusher, threads[TH_RMA_THREADS];
    FT_CHECK(pthread_create(&waiter, NULL, th_waiter, NULL) == 0, "pthread_create");
    FT_CHECK(pthread_create(&flusher, NULL, th_rma_flusher, NULL) == 0, "pthread_create");
    for (unsigned t = 0; t < TH_RMA_THREADS; t++)
        FT_CHECK(pthread_create(&threads[t], NULL, th_rma_worker, (void *)(uintptr_t)t) == 0,
                 "pthread_create");
    for (unsigned t = 0; t < TH_RMA_THREADS; t++)
        FT_CHECK(pthread_join(threads[t], NULL) == 0, "join");
    FT_CHECK(pthread_join(flusher, NULL) == 0, "join");
    atomic_store(&th.stop, 1);
    FT_CHECK(pthread_join(waiter, NULL) == 0, "join");
    ft_chan_send_token(th.peers[0].chan, TH_TOKEN_EXIT, 0, 0, 0, 0);
    ft_peer_expect_exit(&th.peers[0], 30000, 0);
    ferry_rkey_release(th_rkey);
    ferry_ep_destroy(th.eps[0]);
    ft_ferry_fini(&th.f);
    ft_note("%u threads: puts, gets and %u fetch-adds on one endpoint beside a flusher",
            TH_RMA_THREADS, TH_RMA_THREADS * TH_RMA_ADDS);
    return 0;
}

/* ------------------------------------------------------------------ mp_threads reg */

#define TH_REG_ROUNDS 24
#define TH_REG_ADDS 16
#define TH_REG_CHURNERS 2
#define TH_REG_STALE_MAX 200000 /* accesses with a deregistered key before the peer gives up */
static const size_t th_reg_sizes[] = {64, 4096, 100000, 600000};
#define TH_REG_NSIZES (sizeof(th_reg_sizes) / sizeof(th_reg_sizes[0]))
enum {
    TH_TOKEN_CHECKED = 0x43484b44, /* the peer accessed round v[0]'s region */
    TH_TOKEN_RELEASE = 0x52454c53, /* round v[0]'s region is being deregistered */
    TH_TOKEN_STALE = 0x5354414c,   /* the peer saw its key refused: v[1] accesses succeeded */
};

/* Round k's region: [0, size - 8) the parent's pattern, of which the peer overwrites the second
 * half [half, size - 8) with its own; the last 8 bytes a counter the peer adds to. */
static size_t th_reg_half(size_t size)
{
    return (size - 8) / 2 & ~(size_t)7;
}

static int th_reg_peer(int chan, void *arg)
{
    (void)arg;
    ft_ferry_t f;
    ft_ferry_init(&f, NULL, NULL);
    ft_send_address(chan, f.worker);
    uint8_t addr[FT_CHAN_MSG_MAX];
    size_t alen = ft_recv_address(chan, addr, sizeof(addr), 20000);
    ferry_ep_t *ep = ft_ep_create(f.worker, addr, alen, NULL);
    FT_CHECK_OK(ferry_ep_wait_connected(ep, 20000));
    uint8_t *buf = malloc(th_reg_sizes[TH_REG_NSIZES - 1]);
    FT_CHECK(buf != NULL, "malloc");
    for (uint32_t k = 0; k < TH_REG_ROUNDS; k++) {
        size_t size = th_reg_sizes[k % TH_REG_NSIZES], half = th_reg_half(size);
        uint64_t counter = size - 8;
        ferry_rkey_t *rkey = ft_rkey_recv_unpack(chan, ep, 30000);
        memset(buf, 0, size);
        ft_rma_op_t get = ft_rma_get(buf, size - 8, 0);
        ft_rma_expect(f.worker, ep, rkey, &get, FERRY_OK, "get the region");
        ft_pattern_check(buf, size - 8, ft_pattern_seed(0, k, size), 0, "the region");
        ft_pattern_fill(buf + half, size - 8 - half, ft_pattern_seed(1, k, size), half);
        ft_rma_op_t put = ft_rma_put(buf + half, size - 8 - half, half);
        ft_rma_expect(f.worker, ep, rkey, &put, FERRY_OK, "put the second half");
        for (uint64_t i = 0; i < TH_REG_ADDS; i++) {
            uint64_t old = UINT64_MAX;
            ft_rma_op_t add = ft_rma_fetch(FERRY_ATOMIC_ADD, 1, 0, 8, counter, &old);
            ft_rma_expect(f.worker, ep, rkey, &add, FERRY_OK, "fetch-add the counter");
            FT_CHECK(old == i, "round %u: fetch-add %llu fetched %llu", k, (unsigned long long)i,
                     (unsigned long long)old);
        }
        ft_rma_flush_ep(f.worker, ep, 30000);
        ft_chan_send_token(chan, TH_TOKEN_CHECKED, k, 0, 0, 0);
        ft_token_t tok;
        ft_progress_until_token(f.worker, chan, TH_TOKEN_RELEASE, 30000, &tok);
        FT_CHECK(tok.v[0] == k, "release of round %llu in round %u", (unsigned long long)tok.v[0],
                 k);
        /* the parent deregisters now: every access either succeeds, with the bytes it had,
         * or is refused; none may crash the parent or return other bytes */
        uint64_t ok = 0, n;
        ferry_status_t st = FERRY_OK;
        for (n = 0; n < TH_REG_STALE_MAX && st == FERRY_OK; n++) {
            uint64_t word = UINT64_MAX;
            if (n % 2 == 0) {
                size_t length = half < 64 ? half : 64; /* of the parent's own pattern */
                memset(buf, 0, length);
                ft_rma_op_t g = ft_rma_get(buf, length, 0);
                st = ft_rma_run(f.worker, ep, rkey, &g, 30000, NULL);
                if (st == FERRY_OK)
                    ft_pattern_check(buf, length, ft_pattern_seed(0, k, size), 0, "a stale get");
            } else {
                ft_rma_op_t a = ft_rma_fetch(FERRY_ATOMIC_ADD, 0, 0, 8, counter, &word);
                st = ft_rma_run(f.worker, ep, rkey, &a, 30000, NULL);
                FT_CHECK(st != FERRY_OK || word == TH_REG_ADDS, "a stale fetch read %llu",
                         (unsigned long long)word);
            }
            ok += st == FERRY_OK;
        }
        FT_CHECK(st == FERRY_ERR_ACCESS,
                 "round %u: after %llu accesses: %s (expected the key "
                 "refused)",
                 k, (unsigned long long)n, ferry_status_name(st));
        ferry_rkey_release(rkey);
        ft_chan_send_token(chan, TH_TOKEN_STALE, k, ok, 0, 0);
    }
    ft_progress_until_token(f.worker, chan, TH_TOKEN_EXIT, 30000, NULL);
    free(buf);
    ferry_ep_destroy(ep);
    ft_ferry_fini(&f);
    return 0;
}

static void *th_progresser(void *arg)
{
    (void)arg;
    while (!atomic_load(&th.stop))
        ferry_worker_progress(th.f.worker);
    return NULL;
}

/* Register, pack keys, allocate and deregister, again and again, while the peer's accesses are
 * looked up: slots are emptied and reused beside them. */
static void *th_reg_churner(void *arg)
{
    unsigned t = (unsigned)(uintptr_t)arg, cycles = 0;
    ferry_context_t *context = th.f.context;
    while (!atomic_load(&th.stop)) {
        size_t size = 4096u * (1 + (t + cycles) % 4);
        uint8_t *buf = malloc(size);
        FT_CHECK(buf != NULL, "malloc");
        ferry_mem_t *mem, *again, *alloc;
        void *ptr, *packed;
        size_t plen;
        unsigned flags = cycles % 3 == 0 ? FERRY_MEM_SINGLE_USE : 0;
        FT_CHECK_OK(ferry_mem_register(context, &(ferry_iov_t){.buffer = buf, .length = size}, 1,
                                       FERRY_ACCESS_ALL, flags, &mem));
        FT_CHECK_OK(ferry_mem_register(context, &(ferry_iov_t){.buffer = buf, .length = size}, 1,
                                       FERRY_ACCESS_ALL, flags, &again));
        FT_CHECK_OK(ferry_rkey_pack(mem, &packed, &plen));
        ferry_rkey_buffer_release(packed);
        FT_CHECK_OK(ferry_mem_alloc(context, size, FERRY_ACCESS_ALL, &alloc, &ptr));
        memset(ptr, (int)t, size);
        FT_CHECK_OK(ferry_mem_deregister(again));
        FT_CHECK_OK(ferry_mem_deregister(mem));
        FT_CHECK_OK(ferry_mem_deregister(alloc));
        free(buf);
        cycles++;
        sched_yield();
    }
    ft_note("churner %u: %u cycles of register, pack, allocate, deregister", t, cycles);
    return NULL;
}

static int th_reg(void)
{
    th_connect_peer0("peer", th_reg_peer);
    ft_send_address(th.peers[0].chan, th.f.worker);
    FT_CHECK_OK(ferry_ep_wait_connected(th.eps[0], 20000));
    pthread_t waiter, progresser, churners[TH_REG_CHURNERS];
    FT_CHECK(pthread_create(&waiter, NULL, th_waiter, NULL) == 0, "pthread_create");
    FT_CHECK(pthread_create(&progresser, NULL, th_progresser, NULL) == 0, "pthread_create");
    for (unsigned t = 0; t < TH_REG_CHURNERS; t++)
        FT_CHECK(pthread_create(&churners[t], NULL, th_reg_churner, (void *)(uintptr_t)t) == 0,
                 "pthread_create");
    int chan = th.peers[0].chan;
    uint64_t stale_ok = 0;
    for (uint32_t k = 0; k < TH_REG_ROUNDS; k++) {
        size_t size = th_reg_sizes[k % TH_REG_NSIZES], half = th_reg_half(size);
        uint8_t *buf = NULL;
        FT_CHECK(posix_memalign((void **)&buf, 64, size) == 0, "posix_memalign(%zu)", size);
        ft_pattern_fill(buf, size - 8, ft_pattern_seed(0, k, size), 0);
        memset(buf + size - 8, 0, 8);
        ferry_mem_t *mem;
        FT_CHECK_OK(ferry_mem_register(th.f.context, &(ferry_iov_t){.buffer = buf, .length = size},
                                       1, FERRY_ACCESS_ALL, 0, &mem));
        ft_rkey_send(chan, mem);
        ft_token_t tok = ft_chan_expect_token(chan, TH_TOKEN_CHECKED, 60000);
        FT_CHECK(tok.v[0] == k, "peer checked round %llu in round %u", (unsigned long long)tok.v[0],
                 k);
        /* the peer's writes may have been made by another thread's progress (the target side
         * of the tcp transport): one progress call takes the worker's lock after it, so that
         * they happen before what this thread reads (ThreadSanitizer cannot see the peer) */
        ferry_worker_progress(th.f.worker);
        ft_pattern_check(buf, half, ft_pattern_seed(0, k, size), 0, "the first half");
        ft_pattern_check(buf + half, size - 8 - half, ft_pattern_seed(1, k, size), half,
                         "the half the peer put");
        /* atomic: the peer's stale fetch-adds (of 0) may write it again once it is released */
        uint64_t counter = __atomic_load_n((uint64_t *)(buf + size - 8), __ATOMIC_RELAXED);
        FT_CHECK(counter == TH_REG_ADDS, "round %u: counter %llu, expected %u", k,
                 (unsigned long long)counter, TH_REG_ADDS);
        ft_chan_send_token(chan, TH_TOKEN_RELEASE, k, 0, 0, 0);
        FT_CHECK_OK(ferry_mem_deregister(mem)); /* while the peer keeps using the key */
        tok = ft_chan_expect_token(chan, TH_TOKEN_STALE, 60000);
        FT_CHECK(tok.v[0] == k, "stale round %llu in round %u", (unsigned long long)tok.v[0], k);
        stale_ok += tok.v[1];
        free(buf); /* the peer saw the key refused: nothing reads it any more */
    }
    atomic_store(&th.stop, 1);
    for (unsigned t = 0; t < TH_REG_CHURNERS; t++)
        FT_CHECK(pthread_join(churners[t], NULL) == 0, "join");
    FT_CHECK(pthread_join(progresser, NULL) == 0, "join");
    FT_CHECK(pthread_join(waiter, NULL) == 0, "join");
    ft_chan_send_token(chan, TH_TOKEN_EXIT, 0, 0, 0, 0);
    ft_peer_expect_exit(&th.peers[0], 30000, 0);
    ferry_ep_destroy(th.eps[0]);
    ft_ferry_fini(&th.f);
    ft_note("%u regions accessed by the peer and deregistered under its accesses (%llu of them "
            "still succeeded, the next refused)",
            TH_REG_ROUNDS, (unsigned long long)stale_ok);
    return 0;
}

/* ------------------------------------------------------------------ mp_threads bias */

#define TH_BIAS_MIN 3000    /* AMs the owner sends at least, and the second thread sends */
#define TH_BIAS_DELAY_MS 20 /* after the owner's first send, the second thread starts */

static atomic_int th_bias_started, th_bias_second_done;
static atomic_ulong th_bias_nested;

/* The owner's completions: a nested call on the worker, from inside the progress call of
 * whichever thread completed it. */
static void th_bias_comp_cb(ferry_completion_t *comp)
{
    ferry_peer_id_t id;
    FT_CHECK_OK(ferry_worker_id(th.f.worker, &id));
    atomic_fetch_add(&th_bias_nested, 1);
    th_comp_cb(comp);
}

/* Send one AM (the sender's seq-th to peer p) and progress this thread until it completed. */
static void th_bias_send(unsigned sender, unsigned p, uint32_t seq, uint8_t *buf, bool nested)
{
    size_t size = th_am_sizes[seq % TH_NAM];
    th_hdr_t h = {.magic = TH_MAGIC, .sender = sender, .seq = seq, .size = (uint32_t)size};
    ft_pattern_fill(buf, size, ft_pattern_seed(sender, seq, size), 0);
    ferry_iov_t iov = {buf, size};
    th_comp_t c;
    th_comp_init(&c);
    if (nested)
        c.comp.cb = th_bias_comp_cb;
    ft_deadline_t deadline = ft_deadline_in_ms(60000);
    ferry_status_t st;
    while ((st = ferry_am_send(th.eps[p], TH_ID_DATA, &h, sizeof(h), &iov, 1, &c.comp)) ==
           FERRY_ERR_NO_RESOURCE) {
        FT_CHECK(!ft_deadline_passed(deadline), "ferry_am_send: no room for 60 s");
        ferry_worker_progress(th.f.worker);
    }
    FT_CHECK(st == FERRY_OK || st == FERRY_INPROGRESS, "ferry_am_send: %s", ferry_status_name(st));
    if (st == FERRY_OK)
        return;
    while (!atomic_load(&c.done)) {
        FT_CHECK(!ft_deadline_passed(deadline), "an AM did not complete in 60 s");
        ferry_worker_progress(th.f.worker);
    }
    FT_CHECK(atomic_load(&c.status) == FERRY_OK, "an AM completed with %s",
             ferry_status_name((ferry_status_t)atomic_load(&c.status)));
}

static void *th_bias_second(void *arg)
{
    (void)arg;
    uint8_t *buf = malloc(40000);
    FT_CHECK(buf != NULL, "malloc");
    while (!atomic_load(&th_bias_started))
        sched_yield();
    ft_sleep_ms(TH_BIAS_DELAY_MS);
    for (uint32_t seq = 0; seq < TH_BIAS_MIN; seq++)
        th_bias_send(1, seq % TH_PEERS, seq / TH_PEERS, buf, false);
    free(buf);
    atomic_store(&th_bias_second_done, 1);
    return NULL;
}

static int th_bias(void)
{
    th_start(false);
    uint8_t *buf = malloc(40000);
    FT_CHECK(buf != NULL, "malloc");
    pthread_t second;
    FT_CHECK(pthread_create(&second, NULL, th_bias_second, NULL) == 0, "pthread_create");
    uint32_t sent = 0, after = 0;
    while (sent < TH_BIAS_MIN || !atomic_load(&th_bias_second_done)) {
        th_bias_send(0, sent % TH_PEERS, sent / TH_PEERS, buf, sent % 3 == 0);
        if (sent == 0)
            atomic_store(&th_bias_started, 1);
        if (sent % 64 == 63) {
            ferry_status_t st = ferry_worker_wait(th.f.worker, 0);
            FT_CHECK(st == FERRY_OK || st == FERRY_ERR_TIMED_OUT, "ferry_worker_wait: %s",
                     ferry_status_name(st));
        }
        sent++;
        if (atomic_load(&th_bias_second_done))
            after++;
    }
    FT_CHECK(pthread_join(second, NULL) == 0, "join the second thread");
    uint64_t ams[TH_PEERS], tags[TH_PEERS] = {0, 0};
    for (unsigned p = 0; p < TH_PEERS; p++) /* sender 1 sent TH_BIAS_MIN / 2 to each */
        ams[p] = (sent + TH_PEERS - 1 - p) / TH_PEERS + TH_BIAS_MIN / TH_PEERS;
    /* the peers count while the owner progresses (no waiter thread here) */
    for (unsigned p = 0; p < TH_PEERS; p++)
        ft_chan_send_token(th.peers[p].chan, TH_TOKEN_DONE, ams[p], tags[p], 0, 0);
    for (unsigned p = 0; p < TH_PEERS; p++) {
        ft_token_t tok;
        ft_progress_until_token(th.f.worker, th.peers[p].chan, TH_TOKEN_COUNT, 60000, &tok);
        FT_CHECK(tok.v[0] == ams[p], "peer %u counted %llu AMs of %llu", p,
                 (unsigned long long)tok.v[0], (unsigned long long)ams[p]);
        ft_chan_send_token(th.peers[p].chan, TH_TOKEN_EXIT, 0, 0, 0, 0);
    }
    for (unsigned p = 0; p < TH_PEERS; p++)
        ft_peer_expect_exit(&th.peers[p], 30000, 0);
    for (unsigned p = 0; p < TH_PEERS; p++)
        ferry_ep_destroy(th.eps[p]);
    ft_ferry_fini(&th.f);
    free(buf);
    FT_CHECK(atomic_load(&th_bias_nested) > 0, "no nested call ran");
    ft_note("the owner sent %u AMs (%u after the second thread's %u), %lu nested calls from "
            "its callbacks; every byte and order checked",
            sent, after, TH_BIAS_MIN, (unsigned long)atomic_load(&th_bias_nested));
    return 0;
}

int main(int argc, char **argv)
{
    ft_set_role("parent");
    ft_watchdog(170);
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "msg") == 0)
        return th_msg();
    if (strcmp(mode, "rma") == 0)
        return th_rma();
    if (strcmp(mode, "eps") == 0)
        return th_eps();
    if (strcmp(mode, "reg") == 0)
        return th_reg();
    if (strcmp(mode, "bias") == 0)
        return th_bias();
    fprintf(stderr, "usage: mp_threads msg|rma|eps|reg|bias\n");
    return 2;
}
