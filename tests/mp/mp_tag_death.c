/* A peer that dies (SIGKILL) in the middle of a rendezvous: the survivor's pending send or
 * receive completes with an endpoint error within one second, no buffer of the survivor stays
 * registered, and the survivor keeps working with another peer.
 *
 * This process is the survivor ("s"). Its peers, forked before it creates any ferry object:
 *   v_recv      receives a 256 MiB message from s into a posted buffer and watches that buffer;
 *               once the first bytes are there and the last are not, it says DYING (with the
 *               time) on its channel and SIGKILLs itself, while the transfer is in progress
 *               (in PUT mode s is writing into it at that moment). It is forked outside the
 *               test's peer registry, so that its death is not taken for a failure.
 *   v_send      sends s a 256 MiB message into a posted buffer; s watches its buffer and
 *               SIGKILLs v_send once the first bytes are there and the last are not;
 *   v_rts_recv  gets s's 8 MiB RTS and never posts a receive; s kills it once it saw the RTS;
 *   v_rts_send  sends s an eager message and an 8 MiB rendezvous that s has not posted a
 *               receive for; s kills it, then receives both: the eager one intact, the
 *               rendezvous with the endpoint's error (info.sender is NULL: the endpoint the
 *               worker accepted for the dead peer is gone);
 *   v_placed    sends s 13 eager messages of 32 KiB that s has posted no receive for, then a
 *               128 KiB eager message (32 KiB fragments) into a receive s posted, and makes no
 *               more progress: on shm three fragments find a buffer; s kills it, then progresses:
 *               the receive, matched and placed at the first fragment, completes with the
 *               endpoint's error, nothing written past it; the 13 messages are intact;
 *   v_read      (GET only) sends s 256 MiB and SIGKILLs itself as soon as s claimed its first
 *               section (INTERNAL: it watches its key table), that is while s reads it;
 *   echo        a tag echo peer (tests/common/ft_tag.h): round trips of 100 B, 100 000 B and
 *               4 MiB before and after every death.
 * After each death: the send or receive completed with an endpoint error within 1 s of the
 * SIGKILL, so did the endpoint's error callback, the context's registration slots are as before
 * (INTERNAL: it reads them), a new send on the dead endpoint fails at once; at the end
 * ferry_worker_destroy and ferry_context_destroy warn about nothing left behind.
 * Registered for every FERRY_RNDV_MODE (mp_tag_death_<mode>). */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ft.h"
#include "ft_tag.h"
#include "wireup/context.h"

#define TD_BIG ((size_t)256 << 20)
#define TD_MID ((size_t)8 << 20)
#define TD_DETECT_NS 1000000000ull

enum { TD_SURVIVOR = 1, TD_VICTIM = 2 };
enum {
    TD_TOKEN_POSTED = 0x504f5354,
    TD_TOKEN_DYING = 0x44594e47, /* v0: time of the SIGKILL (ns), v1: bytes seen */
    TD_TOKEN_LATE = 0x4c415445,  /* the whole message was there at the first look */
    TD_TOKEN_GO = 0x474f2121,
    TD_TOKEN_SENT = 0x53454e54,
    TD_TOKEN_SEEN = 0x5345454e,
    TD_TOKEN_NEVER = 0x4e455652,
};

#define TD_IMM_D2 0x1d0000000000d2d2ull
#define TD_TAG_A 0x6400000000000001ull
#define TD_TAG_B 0x6400000000000002ull
#define TD_TAG_C 0x6400000000000003ull
#define TD_TAG_D1 0x6400000000000004ull
#define TD_TAG_D2 0x6400000000000005ull
#define TD_TAG_E 0x6400000000000006ull
#define TD_TAG_F1 0x6400000000000007ull
#define TD_TAG_F2 0x6400000000000008ull
/* f: eager messages of one bulk buffer that fill 13 of the receiver's 16, then an eager message
 * of four 32 KiB fragments of which only three find a buffer */
#define TD_F_FILL 13u
#define TD_F_ONE ((size_t)32768)
#define TD_F_PLACED ((size_t)131072)

static const uint8_t td_guard8[8] = {FT_TAG_GUARD_BYTE, FT_TAG_GUARD_BYTE, FT_TAG_GUARD_BYTE,
                                     FT_TAG_GUARD_BYTE, FT_TAG_GUARD_BYTE, FT_TAG_GUARD_BYTE,
                                     FT_TAG_GUARD_BYTE, FT_TAG_GUARD_BYTE};

/* Has the first word of the message arrived / the last? (a pattern word equal to 8 guard bytes
 * has a chance of 2^-64) */
static bool td_word_written(const ft_tbuf_t *b, size_t offset)
{
    uint8_t word[8];
    for (size_t k = 0; k < 8; k++)
        word[k] = *(volatile const uint8_t *)ft_tbuf_at(b, offset + k);
    return memcmp(word, td_guard8, 8) != 0;
}

/* ------------------------------------------------------------------ victims */

static int td_v_recv_role(int chan, void *arg)
{
    (void)arg;
    ft_ferry_t f;
    ft_tag_recv_t r;
    ft_ferry_init(&f, NULL, NULL);
    ft_send_address(chan, f.worker);
    ft_tag_recv_init(&r, FT_SHAPE_CONTIG, TD_BIG);
    ft_tag_recv_post(f.worker, &r, TD_TAG_A, UINT64_MAX);
    ft_chan_send_token(chan, TD_TOKEN_POSTED, 0, 0, 0, 0);
    ft_deadline_t deadline = ft_deadline_in_ms(FT_TAG_TIMEOUT);
    for (unsigned spins = 1;; spins++) {
        ft_progress_once(f.worker);
        if (td_word_written(&r.buf, 0)) {
            if (td_word_written(&r.buf, TD_BIG - 8)) {
                ft_chan_send_token(chan, TD_TOKEN_LATE, 0, 0, 0, 0);
                return 3;
            }
            size_t seen = 0;
            for (size_t at = (size_t)1 << 20; at < TD_BIG && td_word_written(&r.buf, at);
                 at += (size_t)1 << 20)
                seen = at;
            ft_chan_send_token(chan, TD_TOKEN_DYING, ft_now_ns(), seen, 0, 0);
            raise(SIGKILL);
        }
        if ((spins & 0xff) == 0)
            FT_CHECK(!ft_deadline_passed(deadline), "the 256 MiB message did not start");
    }
}

/* Wait (blocking) for GO, send what the role sends, then keep progressing until killed. */
static void td_progress_until_killed(ferry_worker_t *w)
{
    ft_deadline_t deadline = ft_deadline_in_ms(2 * FT_TAG_TIMEOUT);
    for (unsigned spins = 1;; spins++) {
        ft_progress_once(w);
        if ((spins & 0xff) == 0)
            FT_CHECK(!ft_deadline_passed(deadline), "still alive: nobody killed this victim");
    }
}

static ferry_ep_t *td_victim_connect(int chan, ft_ferry_t *f)
{
    uint8_t address[FT_CHAN_MSG_MAX];
    ft_ferry_init(f, NULL, NULL);
    ft_send_address(chan, f->worker);
    size_t length = ft_recv_address(chan, address, sizeof(address), FT_TAG_TIMEOUT);
    return ft_ep_create(f->worker, address, length, NULL);
}

static int td_v_send_role(int chan, void *arg)
{
    (void)arg;
    ft_ferry_t f;
    ft_tag_send_t s;
    ferry_ep_t *ep = td_victim_connect(chan, &f);
    /* progress meanwhile: the connection's handshake (and tcp's keep-alive) needs it while s
     * runs the cases before this one, which take long under a sanitizer on a loaded machine */
    ft_progress_until_token(f.worker, chan, TD_TOKEN_GO, 8 * FT_TAG_TIMEOUT, NULL);
    ft_tag_send_start(f.worker, ep, &s, TD_VICTIM, TD_TAG_B, TD_BIG, FT_SHAPE_CONTIG);
    td_progress_until_killed(f.worker);
    return 1;
}

static int td_v_rts_recv_role(int chan, void *arg)
{
    (void)arg;
    ft_ferry_t f;
    ft_ferry_init(&f, NULL, NULL);
    ft_send_address(chan, f.worker);
    /* s reaches this case after the 256 MiB ones, which take long under a sanitizer on a
     * loaded machine: the probe's timeout starts when s says it sent */
    ft_progress_until_token(f.worker, chan, TD_TOKEN_GO, 8 * FT_TAG_TIMEOUT, NULL);
    ferry_tag_info_t info = ft_tag_probe_until(f.worker, 0, 0);
    FT_CHECK(info.tag == TD_TAG_C && info.length == TD_MID, "probe: tag 0x%llx, %zu bytes",
             (unsigned long long)info.tag, info.length);
    ft_chan_send_token(chan, TD_TOKEN_SEEN, 0, 0, 0, 0);
    ft_chan_expect_token(chan, TD_TOKEN_NEVER, 4 * FT_TAG_TIMEOUT); /* killed meanwhile */
    return 1;
}

static int td_v_rts_send_role(int chan, void *arg)
{
    (void)arg;
    ft_ferry_t f;
    ft_tag_send_t s1, s2;
    ferry_ep_t *ep = td_victim_connect(chan, &f);
    /* progress meanwhile: the connection's handshake (and tcp's keep-alive) needs it while s
     * runs the cases before this one, which take long under a sanitizer on a loaded machine */
    ft_progress_until_token(f.worker, chan, TD_TOKEN_GO, 8 * FT_TAG_TIMEOUT, NULL);
    ft_tag_send_start(f.worker, ep, &s1, TD_VICTIM, TD_TAG_D1, 1000, FT_SHAPE_UNEVEN3);
    /* the rendezvous carries immediate data: the survivor's probe sees it before the death */
    ferry_tag_send_params_t p = {.flags = FERRY_TAG_SEND_IMM, .imm = TD_IMM_D2};
    ft_tag_send_start_ext(f.worker, ep, &s2, TD_VICTIM, TD_TAG_D2, TD_MID, FT_SHAPE_UNEVEN3, &p);
    ft_chan_send_token(chan, TD_TOKEN_SENT, 0, 0, 0, 0);
    td_progress_until_killed(f.worker);
    return 1;
}

static int td_v_placed_send_role(int chan, void *arg)
{
    (void)arg;
    ft_ferry_t f;
    ft_tag_send_t fill[TD_F_FILL], placed;
    ferry_ep_t *ep = td_victim_connect(chan, &f);
    ft_progress_until_token(f.worker, chan, TD_TOKEN_GO, 8 * FT_TAG_TIMEOUT, NULL);
    for (unsigned i = 0; i < TD_F_FILL; i++)
        ft_tag_send_start(f.worker, ep, &fill[i], TD_VICTIM, TD_TAG_F1 + ((uint64_t)i << 32),
                          TD_F_ONE, FT_SHAPE_CONTIG);
    ft_tag_send_start(f.worker, ep, &placed, TD_VICTIM, TD_TAG_F2, TD_F_PLACED, FT_SHAPE_CONTIG);
    /* no progress from here: the last fragment stays queued until the SIGKILL */
    ft_chan_send_token(chan, TD_TOKEN_SENT, 0, 0, 0, 0);
    ft_chan_expect_token(chan, TD_TOKEN_NEVER, 4 * FT_TAG_TIMEOUT); /* killed meanwhile */
    return 1;
}

/* Has a peer claimed one of this context's single-use registrations (GET: the receiver is
 * about to read that section)? INTERNAL: reads the key table. */
static bool td_single_use_claimed(ferry_context_t *context)
{
    const mem_context_t *mc = &context->mem;
    for (uint32_t i = 0; i < mc->capacity; i++) {
        if (mc->slots[i] != NULL && (mc->slots[i]->flags & FERRY_MEM_SINGLE_USE) &&
            atomic_load(&mc->entries[i].uses) != 0)
            return true;
    }
    return false;
}

/* e (GET): sends 256 MiB and SIGKILLs itself as soon as the receiver claimed the first section,
 * that is while the receiver reads it. */
static int td_v_read_role(int chan, void *arg)
{
    (void)arg;
    ft_ferry_t f;
    ft_tag_send_t s;
    ferry_ep_t *ep = td_victim_connect(chan, &f);
    /* progress meanwhile: the connection's handshake (and tcp's keep-alive) needs it while s
     * runs the cases before this one, which take long under a sanitizer on a loaded machine */
    ft_progress_until_token(f.worker, chan, TD_TOKEN_GO, 8 * FT_TAG_TIMEOUT, NULL);
    ft_tag_send_start(f.worker, ep, &s, TD_VICTIM, TD_TAG_E, TD_BIG, FT_SHAPE_CONTIG);
    ft_deadline_t deadline = ft_deadline_in_ms(FT_TAG_TIMEOUT);
    for (unsigned spins = 1;; spins++) {
        if (td_single_use_claimed(f.context)) {
            ft_chan_send_token(chan, TD_TOKEN_DYING, ft_now_ns(), 0, 0, 0);
            raise(SIGKILL);
        }
        FT_CHECK(!ft_tag_send_done(&s), "the send completed before its section was claimed");
        ft_progress_once(f.worker);
        if ((spins & 0xff) == 0)
            FT_CHECK(!ft_deadline_passed(deadline), "nobody claimed the first section");
    }
}

/* A peer outside the registry of ft_peer.h (its death by its own SIGKILL is expected). */
typedef struct td_unregistered {
    pid_t pid;
    int chan;
} td_unregistered_t;

/* Forked before any registered peer, so that its copy of the registry is empty. */
static void td_fork_unregistered(td_unregistered_t *v, const char *name, ft_role_fn_t fn)
{
    int sv[2];
    pid_t parent = getpid();
    FT_CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0, "socketpair: %s",
             strerror(errno));
    fflush(NULL);
    pid_t pid = fork();
    FT_CHECK(pid >= 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(1);
        close(sv[0]);
        ft_set_role(name);
        int rc = fn(sv[1], NULL);
        fflush(NULL);
        _exit(rc);
    }
    close(sv[1]);
    v->pid = pid;
    v->chan = sv[0];
}

/* ------------------------------------------------------------------ the survivor */

typedef struct td_errors {
    unsigned count;
    ferry_status_t status;
    uint64_t when_ns;
    const ferry_completion_t *pending; /* an operation on the endpoint (may be NULL) */
    bool pending_done_first;           /* it had completed when the callback ran */
} td_errors_t;

/* The error callback of an endpoint: once, and after every operation pending on the endpoint
 * completed (ferry.h's ferry_ep_error_cb_t promises that order). */
static void td_error_cb(void *arg, ferry_ep_t *ep, ferry_status_t status)
{
    td_errors_t *e = arg;
    (void)ep;
    if (e->count++ == 0) {
        e->status = status;
        e->when_ns = ft_now_ns();
        e->pending_done_first = e->pending == NULL || e->pending->count == 0;
    }
}

static void td_check_order(const td_errors_t *e, const char *what)
{
    FT_CHECK(e->pending_done_first,
             "%s: the endpoint's error callback ran before the operation pending on it completed",
             what);
}

static bool td_error_seen(void *arg)
{
    return ((td_errors_t *)arg)->count > 0;
}

static ft_ferry_t td_f;
static ferry_ep_t *td_echo_ep;
static td_errors_t td_accepted; /* errors of endpoints the survivor's worker accepted */
static unsigned td_baseline;

static unsigned td_live_registrations(void)
{
    const mem_context_t *mc = &td_f.context->mem;
    unsigned live = 0;
    for (uint32_t i = 0; i < mc->capacity; i++)
        live += mc->slots[i] != NULL;
    return live;
}

static void td_check_registrations(const char *after)
{
    unsigned live = td_live_registrations();
    FT_CHECK(live == td_baseline,
             "after %s, %u registrations are live in the context (%u "
             "before): a buffer stayed registered",
             after, live, td_baseline);
}

static void td_echo(void)
{
    static uint64_t seq;
    ft_tag_echo_roundtrip(td_f.worker, td_echo_ep, 0x6500000000000000ull | ++seq, 100);
    ft_tag_echo_roundtrip(td_f.worker, td_echo_ep, 0x6500000000000000ull | ++seq, 100000);
    ft_tag_echo_roundtrip(td_f.worker, td_echo_ep, 0x6500000000000000ull | ++seq, FT_TAG_ECHO_MAX);
}

static void td_check_status(const char *what, ferry_status_t status, uint64_t done_ns,
                            uint64_t kill_ns)
{
    FT_CHECK(ft_tag_is_endpoint_error(status), "%s completed with %s (%s), not an endpoint error",
             what, ferry_status_name(status), ferry_status_string(status));
    FT_CHECK(done_ns != 0, "%s: no completion time", what);
    double ms = done_ns > kill_ns ? (double)(done_ns - kill_ns) / 1e6 : 0.0;
    FT_CHECK(done_ns <= kill_ns + TD_DETECT_NS,
             "%s completed %.1f ms after the SIGKILL (at most "
             "1000 ms)",
             what, ms);
    ft_note("%s: %s %.1f ms after the SIGKILL", what, ferry_status_name(status), ms);
}

static void td_check_dead_ep(ferry_ep_t *ep, const char *what)
{
    uint8_t byte = 0;
    ferry_iov_t iov = {.buffer = &byte, .length = 1};
    ferry_completion_t comp = {.cb = NULL, .count = 1, .status = FERRY_OK};
    ferry_status_t status = ferry_tag_send(ep, &iov, 1, 1, &comp);
    FT_CHECK(ft_tag_is_endpoint_error(status) && comp.count == 1,
             "a send on %s after its peer died returned %s", what, ferry_status_name(status));
    ft_tbuf_t big;
    ft_tbuf_init(&big, FT_SHAPE_CONTIG, TD_MID);
    ferry_iov_t biov = {.buffer = big.iov[0].buffer, .length = TD_MID};
    status = ferry_tag_send(ep, &biov, 1, 2, &comp);
    FT_CHECK(ft_tag_is_endpoint_error(status) && comp.count == 1,
             "a rendezvous send on %s after its peer died returned %s", what,
             ferry_status_name(status));
    ft_tbuf_free(&big);
}

/* a: the receiver dies while s's 256 MiB send is in progress */
static void td_reap_self_killed(td_unregistered_t *v, const char *name);

static void td_case_kill_receiver(td_unregistered_t *v)
{
    uint8_t address[FT_CHAN_MSG_MAX];
    td_errors_t err = {0};
    ferry_ep_params_t params = {.error_cb = td_error_cb, .error_arg = &err};
    ft_tag_send_t s;
    ft_token_t dying;

    size_t length = ft_recv_address(v->chan, address, sizeof(address), FT_TAG_TIMEOUT);
    ferry_ep_t *ep = ft_ep_create(td_f.worker, address, length, &params);
    ft_progress_until_token(td_f.worker, v->chan, TD_TOKEN_POSTED, FT_TAG_TIMEOUT, NULL);
    ft_tag_send_start(td_f.worker, ep, &s, TD_SURVIVOR, TD_TAG_A, TD_BIG, FT_SHAPE_CONTIG);
    err.pending = &s.comp;
    FT_CHECK(s.call_status == FERRY_INPROGRESS, "the 256 MiB send returned %s",
             ferry_status_name(s.call_status));
    ft_progress_until_token(td_f.worker, v->chan, TD_TOKEN_DYING, FT_TAG_TIMEOUT, &dying);
    uint64_t kill_ns = dying.v[0];
    ft_progress_until_completion(td_f.worker, 5000, &s.comp,
                                 "the 256 MiB send to the receiver that died");
    td_check_status("a: the 256 MiB send to a receiver killed mid-transfer", s.comp.status,
                    s.done_ns, kill_ns);
    ft_progress_until(td_f.worker, 5000, td_error_seen, &err, "the endpoint's error callback");
    td_check_status("a: the endpoint's error callback", err.status, err.when_ns, kill_ns);
    td_check_order(&err, "a");
    ft_note("a: the receiver had %zu MiB of 256 when it died", (size_t)(dying.v[1] >> 20));

    td_reap_self_killed(v, "v_recv");
    td_check_registrations("a: the send to a receiver that died");
    td_check_dead_ep(ep, "the endpoint to the receiver that died");
    ft_tbuf_free(&s.buf);
    ferry_ep_destroy(ep);
    td_check_registrations("a: ferry_ep_destroy");
}

/* b: the sender dies while s's 256 MiB receive is in progress */
static void td_case_kill_sender(ft_peer_t *v)
{
    ft_tag_recv_t r;
    td_accepted = (td_errors_t){0};
    ft_tag_recv_init(&r, FT_SHAPE_CONTIG, TD_BIG);
    ft_tag_recv_post(td_f.worker, &r, TD_TAG_B, UINT64_MAX);
    td_accepted.pending = &r.comp;
    ft_chan_send_token(v->chan, TD_TOKEN_GO, 0, 0, 0, 0);
    ft_deadline_t deadline = ft_deadline_in_ms(FT_TAG_TIMEOUT);
    for (unsigned spins = 1;; spins++) {
        ft_progress_once(td_f.worker);
        if (td_word_written(&r.buf, 0)) {
            FT_CHECK(!td_word_written(&r.buf, TD_BIG - 8) && !ft_tag_recv_poll(&r),
                     "b: the whole 256 MiB had arrived at the first look");
            break;
        }
        if ((spins & 0xff) == 0)
            FT_CHECK(!ft_deadline_passed(deadline), "b: the 256 MiB message did not start");
    }
    size_t seen = 0;
    for (size_t at = (size_t)1 << 20; at < TD_BIG && td_word_written(&r.buf, at);
         at += (size_t)1 << 20)
        seen = at;
    uint64_t kill_ns = ft_peer_kill(v);
    ft_note("b: killing the sender with %zu MiB of 256 received", seen >> 20);
    ft_tag_recv_wait(td_f.worker, &r);
    td_check_status("b: the 256 MiB receive from a sender killed mid-transfer", r.status, r.done_ns,
                    kill_ns);
    FT_CHECK(r.info.tag == TD_TAG_B && r.info.length == TD_BIG,
             "b: info says tag 0x%llx, %zu bytes", (unsigned long long)r.info.tag, r.info.length);
    ft_tbuf_check_guards(&r.buf, "b: the receive buffer of a transfer cut short");
    ft_progress_until(td_f.worker, 5000, td_error_seen, &td_accepted,
                      "the accepted endpoint's error callback");
    td_check_status("b: the accepted endpoint's error callback", td_accepted.status,
                    td_accepted.when_ns, kill_ns);
    td_check_order(&td_accepted, "b");
    td_check_registrations("b: the receive from a sender that died");
    ft_tag_recv_free(&r);
}

/* c: the receiver, which has the RTS but posted nothing, dies */
static void td_case_kill_rts_receiver(ft_peer_t *v)
{
    uint8_t address[FT_CHAN_MSG_MAX];
    td_errors_t err = {0};
    ferry_ep_params_t params = {.error_cb = td_error_cb, .error_arg = &err};
    ft_tag_send_t s;

    size_t length = ft_recv_address(v->chan, address, sizeof(address), FT_TAG_TIMEOUT);
    ferry_ep_t *ep = ft_ep_create(td_f.worker, address, length, &params);
    ft_tag_send_start(td_f.worker, ep, &s, TD_SURVIVOR, TD_TAG_C, TD_MID, FT_SHAPE_SEVEN);
    err.pending = &s.comp;
    ft_chan_send_token(v->chan, TD_TOKEN_GO, 0, 0, 0, 0);
    ft_progress_until_token(td_f.worker, v->chan, TD_TOKEN_SEEN, FT_TAG_TIMEOUT, NULL);
    FT_CHECK(!ft_tag_send_done(&s), "c: the send completed before the receiver posted");
    uint64_t kill_ns = ft_peer_kill(v);
    ft_progress_until_completion(td_f.worker, 5000, &s.comp,
                                 "the send whose receiver died before posting");
    td_check_status("c: an 8 MiB send whose RTS was unexpected at a receiver that died",
                    s.comp.status, s.done_ns, kill_ns);
    ft_progress_until(td_f.worker, 5000, td_error_seen, &err, "the endpoint's error callback");
    td_check_status("c: the endpoint's error callback", err.status, err.when_ns, kill_ns);
    td_check_order(&err, "c");
    td_check_registrations("c: the send to a receiver that died");
    td_check_dead_ep(ep, "the endpoint to the receiver that died before posting");
    ft_tbuf_free(&s.buf);
    ferry_ep_destroy(ep);
    td_check_registrations("c: ferry_ep_destroy");
}

/* d: the sender of an unexpected eager message and an unexpected RTS dies */
static void td_case_kill_rts_sender(ft_peer_t *v)
{
    ft_tag_recv_t r1, r2;
    ferry_tag_info_t info;
    td_accepted = (td_errors_t){0};
    ft_chan_send_token(v->chan, TD_TOKEN_GO, 0, 0, 0, 0);
    ft_progress_until_token(td_f.worker, v->chan, TD_TOKEN_SENT, FT_TAG_TIMEOUT, NULL);
    ferry_tag_info_t seen = ft_tag_probe_until(td_f.worker, TD_TAG_D2, UINT64_MAX);
    FT_CHECK((seen.flags & FERRY_TAG_INFO_IMM) && seen.imm == TD_IMM_D2,
             "d: the probe of the RTS sees imm 0x%llx (flags %u)", (unsigned long long)seen.imm,
             seen.flags);
    uint64_t kill_ns = ft_peer_kill(v);
    ft_progress_until(td_f.worker, 5000, td_error_seen, &td_accepted,
                      "the accepted endpoint's error callback");
    td_check_status("d: the accepted endpoint's error callback", td_accepted.status,
                    td_accepted.when_ns, kill_ns);
    /* both messages are still there, from a sender that is gone */
    FT_CHECK_OK(ferry_tag_probe(td_f.worker, 0, 0, 0, &info, NULL));
    FT_CHECK(info.tag == TD_TAG_D1 && info.length == 1000 && info.sender == NULL,
             "d: probe says tag 0x%llx, %zu bytes, sender %p (expected the eager message, "
             "sender NULL: its endpoint was freed)",
             (unsigned long long)info.tag, info.length, (void *)info.sender);
    ft_tag_recv_init(&r1, FT_SHAPE_SEVEN, 1000);
    ft_tag_recv_post(td_f.worker, &r1, TD_TAG_D1, UINT64_MAX);
    FT_CHECK(r1.inline_done && r1.status == FERRY_OK,
             "d: the unexpected eager message of a dead sender: %s (done in the call: %d)",
             ferry_status_name(r1.status), r1.inline_done);
    FT_CHECK(r1.info.sender == NULL && r1.info.tag == TD_TAG_D1 && r1.info.length == 1000,
             "d: info of the eager message of a dead sender: sender %p, tag 0x%llx, %zu bytes",
             (void *)r1.info.sender, (unsigned long long)r1.info.tag, r1.info.length);
    ft_tbuf_check(&r1.buf, TD_VICTIM, TD_TAG_D1, 1000, "d: the eager message of a dead sender");
    FT_CHECK_OK(ferry_tag_probe(td_f.worker, TD_TAG_D2, UINT64_MAX, 0, &info, NULL));
    FT_CHECK(info.length == TD_MID && info.sender == NULL, "d: the RTS: %zu bytes, sender %p",
             info.length, (void *)info.sender);
    FT_CHECK(info.imm == TD_IMM_D2 && info.peer != FERRY_PEER_ANY,
             "d: the RTS of a dead sender keeps its imm (0x%llx) and the sender's id",
             (unsigned long long)info.imm);
    ft_tag_recv_init(&r2, FT_SHAPE_UNEVEN3, TD_MID);
    uint64_t post_ns = ft_now_ns();
    ft_tag_recv_post(td_f.worker, &r2, TD_TAG_D2, UINT64_MAX);
    ft_tag_recv_wait(td_f.worker, &r2);
    FT_CHECK(ft_tag_is_endpoint_error(r2.status),
             "d: the receive of a dead sender's unexpected RTS completed with %s",
             ferry_status_name(r2.status));
    FT_CHECK(r2.done_ns - post_ns < TD_DETECT_NS, "d: it took %.1f ms",
             (double)(r2.done_ns - post_ns) / 1e6);
    ft_tbuf_check_prefix(&r2.buf, 0, 0, "d: the receive of a dead sender's RTS");
    FT_CHECK_STATUS(ferry_tag_probe(td_f.worker, 0, 0, 0, &info, NULL), FERRY_ERR_NO_ELEM);
    td_check_registrations("d: the unexpected messages of a sender that died");
    ft_note("d: unexpected eager message of a dead sender intact; its RTS: %s",
            ferry_status_name(r2.status));
    ft_tag_recv_free(&r1);
    ft_tag_recv_free(&r2);
}

static void td_reap_self_killed(td_unregistered_t *v, const char *name)
{
    int wstatus;
    pid_t r;
    while ((r = waitpid(v->pid, &wstatus, 0)) < 0 && errno == EINTR) {
    }
    char why[96];
    FT_CHECK(r == v->pid && WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGKILL, "%s %s", name,
             ft_wstatus_string(wstatus, why, sizeof(why)));
    close(v->chan);
}

/* e (GET): the sender dies while s reads its first section */
static void td_case_kill_while_reading(td_unregistered_t *v)
{
    ft_tag_recv_t r;
    ft_token_t dying;
    td_accepted = (td_errors_t){0};
    ft_tag_recv_init(&r, FT_SHAPE_SEVEN, TD_BIG);
    ft_tag_recv_post(td_f.worker, &r, TD_TAG_E, UINT64_MAX);
    ft_chan_send_token(v->chan, TD_TOKEN_GO, 0, 0, 0, 0);
    ft_progress_until_token(td_f.worker, v->chan, TD_TOKEN_DYING, FT_TAG_TIMEOUT, &dying);
    uint64_t kill_ns = dying.v[0];
    ft_tag_recv_wait(td_f.worker, &r);
    td_check_status("e: a 256 MiB GET receive whose sender died while it read", r.status, r.done_ns,
                    kill_ns);
    ft_tbuf_check_guards(&r.buf, "e: the receive buffer of a transfer cut short");
    ft_progress_until(td_f.worker, 5000, td_error_seen, &td_accepted,
                      "the accepted endpoint's error callback");
    td_check_status("e: the accepted endpoint's error callback", td_accepted.status,
                    td_accepted.when_ns, kill_ns);
    td_reap_self_killed(v, "v_read");
    td_check_registrations("e: the receive from a sender that died while it was read");
    ft_tag_recv_free(&r);
}

/* f: the sender of an eager message placed straight into a posted receive dies between its
 * fragments (on shm: 3 of 4 sent; the receive is matched at the first fragment) */
static void td_case_kill_placed_sender(ft_peer_t *v)
{
    ft_tag_recv_t r, fill[TD_F_FILL];
    td_accepted = (td_errors_t){0};
    ft_tag_recv_init(&r, FT_SHAPE_CONTIG, TD_F_PLACED);
    ft_tag_recv_post(td_f.worker, &r, TD_TAG_F2, UINT64_MAX);
    ft_chan_send_token(v->chan, TD_TOKEN_GO, 0, 0, 0, 0);
    /* no progress until the sender is dead: its fragments wait in our ring and buffers */
    ft_chan_expect_token(v->chan, TD_TOKEN_SENT, FT_TAG_TIMEOUT);
    uint64_t kill_ns = ft_peer_kill(v);
    ft_tag_recv_wait(td_f.worker, &r);
    if (strcmp(ft_remote_transport(), "shm") == 0) {
        td_check_status("f: the eager receive placed from a sender killed between fragments",
                        r.status, r.done_ns, kill_ns);
        FT_CHECK(td_word_written(&r.buf, 0), "f: the first fragment was not placed");
        ft_tbuf_check_guards(&r.buf, "f: the placed receive of a message cut short");
    } else { /* a stream may have carried it whole before the death */
        FT_CHECK(r.status == FERRY_OK || ft_tag_is_endpoint_error(r.status),
                 "f: the eager receive from a sender killed after sending: %s",
                 ferry_status_name(r.status));
    }
    ft_progress_until(td_f.worker, 5000, td_error_seen, &td_accepted,
                      "the accepted endpoint's error callback");
    /* the unexpected messages of one buffer before it are intact */
    for (unsigned i = 0; i < TD_F_FILL; i++) {
        uint64_t tag = TD_TAG_F1 + ((uint64_t)i << 32);
        ft_tag_recv_init(&fill[i], FT_SHAPE_SEVEN, TD_F_ONE);
        ft_tag_recv_post(td_f.worker, &fill[i], tag, UINT64_MAX);
        ft_tag_recv_wait(td_f.worker, &fill[i]);
        FT_CHECK(fill[i].status == FERRY_OK, "f: unexpected message %u: %s", i,
                 ferry_status_name(fill[i].status));
        ft_tbuf_check(&fill[i].buf, TD_VICTIM, tag, TD_F_ONE, "f: an unexpected message");
        ft_tag_recv_free(&fill[i]);
    }
    td_check_registrations("f: the placed receive from a sender that died");
    ft_note("f: eager receive placed from a sender killed between fragments: %s",
            ferry_status_name(r.status));
    ft_tag_recv_free(&r);
}

int main(void)
{
    uint8_t address[FT_CHAN_MSG_MAX];
    ft_files_t before;
    ft_peer_t v_send, v_rts_recv, v_rts_send, v_placed, echo;
    td_unregistered_t v_recv, v_read;
    bool get = strcmp(ft_tag_mode(), "get") == 0;

    ft_set_role("s");
    ft_watchdog(115);
    ft_files_snapshot(&before);
    td_fork_unregistered(&v_recv, "v_recv", td_v_recv_role);
    td_fork_unregistered(&v_read, "v_read", td_v_read_role);
    ft_peer_spawn(&v_send, "v_send", td_v_send_role, NULL);
    ft_peer_spawn(&v_rts_recv, "v_rts_recv", td_v_rts_recv_role, NULL);
    ft_peer_spawn(&v_rts_send, "v_rts_send", td_v_rts_send_role, NULL);
    ft_peer_spawn(&v_placed, "v_placed", td_v_placed_send_role, NULL);
    ft_peer_spawn(&echo, "echo", ft_tag_echo_role, NULL);

    ferry_worker_params_t wparams = {.accepted_ep_error_cb = td_error_cb,
                                     .accepted_ep_error_arg = &td_accepted};
    ft_ferry_init(&td_f, NULL, &wparams);
    size_t length = ft_recv_address(echo.chan, address, sizeof(address), FT_TAG_TIMEOUT);
    td_echo_ep = ft_ep_create(td_f.worker, address, length, NULL);
    const int senders[] = {v_send.chan, v_rts_send.chan, v_read.chan, v_placed.chan};
    for (size_t i = 0; i < 4; i++) {
        ft_recv_address(senders[i], address, sizeof(address), FT_TAG_TIMEOUT);
        ft_send_address(senders[i], td_f.worker);
    }
    td_echo();
    td_baseline = td_live_registrations();

    td_case_kill_receiver(&v_recv);
    td_echo();
    td_case_kill_sender(&v_send);
    td_echo();
    td_case_kill_rts_receiver(&v_rts_recv);
    td_echo();
    td_case_kill_rts_sender(&v_rts_send);
    td_echo();
    td_case_kill_placed_sender(&v_placed);
    td_echo();
    if (get) {
        td_case_kill_while_reading(&v_read);
        td_echo();
    } else {
        kill(v_read.pid, SIGKILL); /* e is for GET only */
        td_reap_self_killed(&v_read, "v_read");
    }
    ft_note("the survivor still works with the echo peer (100 B, 100 000 B, 4 MiB round trips "
            "after every death)");

    ft_files_check_self();
    ft_tag_echo_finish(td_f.worker, &echo);
    ferry_ep_destroy(td_echo_ep);
    td_check_registrations("the end");
    ft_capture_begin();
    ft_ferry_fini(&td_f);
    char *text = ft_capture_end();
    FT_CHECK(ft_count(text, "were not deregistered") == 0 &&
                 ft_count(text, "still in progress") == 0,
             "ferry_worker_destroy / ferry_context_destroy found something left behind:\n%s", text);
    free(text);
    ft_files_check_new(&before);
    ft_files_free(&before);
    ft_note("passed (rendezvous mode %s)", ft_tag_mode());
    return 0;
}
