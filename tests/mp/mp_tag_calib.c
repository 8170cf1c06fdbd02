/* The automatic choices calibrating on live traffic, between two processes, every byte checked.
 *
 * Process "a" (this one) streams tagged messages to "b" (forked) in bursts of 64 with 16 sends
 * in flight while b keeps 16 receives posted (each for one tag, re-posted in order), as tag_bw
 * does — in the eager classes all 64 of a burst, so that a's eager sends never wait unexpected
 * and b's back-pressure never sends them by COOP — in five size classes (sizes vary inside the
 * class, iov shapes differ on the two sides):
 *   eager or rendezvous (tag_calib.c: blocks G S S G E E, eager ones acknowledged on the match,
 *     the eager ones not run when a rendezvous mode beat the rate of the transport's copies):
 *     16 KiB + 1 .. 32 KiB - 1 and 64 KiB + 1 .. 128 KiB - 1;
 *   COOP or SPLIT (blocks C S S C C S, or the first four when one mode is clearly faster):
 *     256 KiB + 1 .. 512 KiB - 1 (256 KiB itself may go eager), 512 KiB .. 1 MiB - 1 and
 *     1 MiB .. 2 MiB - 1.
 * b checks status, tag, length and every byte of every message. After each burst a reads its
 * endpoint's counters (ferry_ep_counters: how each message moved) and goes on until the class is
 * calibrated (blocks of max(16, 8 or 2 MiB / size) messages, and the sends between blocks, whose
 * number depends on the timing): with cross-memory attach (the default), every mode of the class
 * moved messages (in the eager classes GET and SPLIT; eager too when the store kind is fixed,
 * FERRY_SHM_STREAM_MIN set, as in mp_tag_calib_eager: the transport then has no rate of its
 * copies and the eager blocks always run), then one mode alone for longer than any stretch of
 * the calibration, then two more bursts of it; with FERRY_SHM_CMA=off (mp_tag_calib_nocma)
 * eager alone in the first two classes, COOP alone in the others.
 *
 * With MP_TAG_CALIB_RESTRICTED=1 (mp_tag_calib_restricted, the store kind fixed) only the class
 * of 64 KiB + 1 .. 128 KiB - 1: after the first burst in which a's class sent eagerly (its
 * eager blocks began), b posts no receive for the next burst until it restricted a (the
 * unexpected messages in pieces used up its recycled buffers: FLOW EAGER_BUFFER, then
 * EAGER_SMALL), as Open MPI's window of receives did: a's class goes on while its sends are
 * kept from going eagerly, so its eager blocks are given up (tag_calib.c, calib_skip_eager) and
 * the class decides between GET and SPLIT; none of its messages goes by COOP (before, the
 * restricted sends calibrated COOP against SPLIT from scratch). */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ft.h"
#include "ft_pair.h"
#include "ft_tag.h"
#include <ferry/counters.h>

enum { TK_A = FT_PAIR_A, TK_B = FT_PAIR_B };
/* NEXT carries 1 (another burst of this class), TK_NEXT_LATE (another, its receives posted
 * only once b restricted a) or 0 (the next class) */
#define TK_NEXT_LATE 2u
enum { TK_TOKEN_READY = 0x52454459, TK_TOKEN_NEXT = 0x4e455854 };
/* the end of the test (after the last class's DONE) */

#define TK_WINDOW 16

/* the classes: [base, 2 * base); the first TK_EAGER_CLASSES choose between eager and rendezvous */
static const size_t tk_bases[] = {16384, 65536, 262144, 524288, 1048576};
#define TK_CLASSES (sizeof(tk_bases) / sizeof(tk_bases[0]))
#define TK_EAGER_CLASSES 2u

/* The modes a class may move messages by (the calibration's candidates); without cross-memory
 * attach only the first. */
static const unsigned tk_eager_modes[] = {FERRY_COUNTERS_MODE_EAGER, FERRY_COUNTERS_MODE_GET,
                                          FERRY_COUNTERS_MODE_SPLIT};
static const unsigned tk_rndv_modes[] = {FERRY_COUNTERS_MODE_COOP, FERRY_COUNTERS_MODE_SPLIT};
#define TK_MODES_MAX 3u

static unsigned tk_modes_of(unsigned cls, const unsigned **modes)
{
    *modes = cls < TK_EAGER_CLASSES ? tk_eager_modes : tk_rndv_modes;
    return cls < TK_EAGER_CLASSES ? 3u : 2u;
}

static const char *tk_mode_name(unsigned mode)
{
    /* ferry_counters_mode_t's order */
    static const char *const names[FERRY_COUNTERS_MODES] = {"eager", "get",  "put",
                                                            "coop",  "null", "split"};
    return mode < FERRY_COUNTERS_MODES ? names[mode] : "?";
}
/* messages of one burst */
#define TK_BURST 64u

/* messages of one calibration block of a class (tag_calib.c: at least 16, and 8 MiB in the
 * eager classes, 2 MiB in the others) */
static unsigned tk_per_block(unsigned cls)
{
    size_t n = ((size_t)(cls < TK_EAGER_CLASSES ? 8 : 2) << 20) / tk_bases[cls];
    return n < 16 ? 16 : (unsigned)n;
}

typedef ft_pair_t tk_proc_t;

static uint64_t tk_tag(unsigned cls, unsigned burst, unsigned i)
{
    return 0x6b00000000000000ull | ((uint64_t)cls << 40) | ((uint64_t)burst << 32) | i;
}

/* base + 1 .. 2 * base - 1: a 256 KiB message (the first class's base) goes eager */
static size_t tk_size(unsigned cls, unsigned i)
{
    size_t base = tk_bases[cls];
    return base + 1 + ((size_t)i * 7919u) % (base - 1);
}

static ft_shape_t tk_shape(unsigned i)
{
    static const ft_shape_t shapes[] = {FT_SHAPE_CONTIG, FT_SHAPE_UNEVEN3, FT_SHAPE_SEVEN,
                                        FT_SHAPE_ZEROS};
    return shapes[i % 4];
}

static ft_tag_send_t tk_sends[TK_WINDOW];
static ft_tag_recv_t tk_recvs[TK_BURST];

/* b's receives posted at once: a whole burst in the eager classes, whose eager sends complete
 * at once on a's side (with fewer, a burst ran ahead of them and b's back-pressure, EAGER_SMALL,
 * sent the rest by COOP: "16 messages moved by mode 3" under ctest -j2), else TK_WINDOW */
static unsigned tk_recv_window(unsigned cls)
{
    return cls < TK_EAGER_CLASSES ? TK_BURST : TK_WINDOW;
}

/* a: n messages of the class with TK_WINDOW in flight. */
static void tk_send_burst(tk_proc_t *p, unsigned cls, unsigned burst, unsigned n)
{
    bool busy[TK_WINDOW] = {false};
    unsigned next = 0, done = 0;
    char what[48];
    snprintf(what, sizeof(what), "class %u burst %u", cls, burst);
    uint64_t deadline = ft_now_ns() + (uint64_t)FT_TAG_TIMEOUT * 1000000u;
    while (done < n) {
        for (unsigned s = 0; s < TK_WINDOW; s++) {
            if (busy[s] && ft_tag_send_reap(&tk_sends[s], what)) {
                busy[s] = false;
                done++;
            }
            if (!busy[s] && next < n) {
                ft_tag_send_start(p->worker, p->ep, &tk_sends[s], p->self, tk_tag(cls, burst, next),
                                  tk_size(cls, next), tk_shape(next));
                busy[s] = true;
                next++;
            }
        }
        ft_progress_once(p->worker);
        FT_CHECK(ft_now_ns() < deadline, "class %u burst %u: %u of %u sends done after %d ms", cls,
                 burst, done, n, FT_TAG_TIMEOUT);
    }
}

/* b, late: after READY, progress without a receive posted until b restricted a's eager sends
 * once more (its worker's counters). */
static void tk_restrict(tk_proc_t *p)
{
    uint64_t deadline = ft_now_ns() + (uint64_t)FT_TAG_TIMEOUT * 1000000u;
    uint64_t before = UINT64_MAX;
    for (;;) {
        ferry_counters_t c = {.size = sizeof(c)};
        FT_CHECK(ferry_worker_counters(p->worker, &c) == FERRY_OK, "ferry_worker_counters failed");
        if (before == UINT64_MAX)
            before = c.tag_flow_limited;
        if (c.tag_flow_limited > before) {
            ft_note("b restricted a with %llu unexpected messages (%llu bytes) buffered",
                    (unsigned long long)c.tag_unexpected_peak_count,
                    (unsigned long long)c.tag_unexpected_peak_bytes);
            return;
        }
        ft_progress_once(p->worker);
        FT_CHECK(ft_now_ns() < deadline,
                 "a's eager sends were not restricted after %d ms without receives (peak %llu "
                 "unexpected messages)",
                 FT_TAG_TIMEOUT, (unsigned long long)c.tag_unexpected_peak_count);
    }
}

/* b: n messages of the class, tk_recv_window(cls) receives posted, each checked; late: the
 * receives posted only once a is restricted (tk_restrict), then TK_WINDOW of them. */
static void tk_recv_burst(tk_proc_t *p, unsigned cls, unsigned burst, unsigned n, bool late)
{
    unsigned window = late ? TK_WINDOW : tk_recv_window(cls);
    unsigned slot_msg[TK_BURST];
    bool busy[TK_BURST] = {false};
    unsigned next = 0, done = 0;
    char what[100];
    uint64_t deadline = ft_now_ns() + (uint64_t)FT_TAG_TIMEOUT * 1000000u;
    if (late) {
        ft_chan_send_token(p->chan, TK_TOKEN_READY, 0, 0, 0, 0);
        tk_restrict(p);
    }
    for (unsigned s = 0; s < window && next < n; s++, next++) {
        ft_tag_recv_init(&tk_recvs[s], tk_shape(next + 1), tk_size(cls, next));
        ft_tag_recv_post(p->worker, &tk_recvs[s], tk_tag(cls, burst, next), UINT64_MAX);
        slot_msg[s] = next;
        busy[s] = true;
    }
    if (!late)
        ft_chan_send_token(p->chan, TK_TOKEN_READY, 0, 0, 0, 0);
    while (done < n) {
        for (unsigned s = 0; s < window; s++) {
            if (!busy[s] || !ft_tag_recv_poll(&tk_recvs[s]))
                continue;
            unsigned i = slot_msg[s];
            snprintf(what, sizeof(what), "class %u burst %u message %u", cls, burst, i);
            ft_tag_recv_check(&tk_recvs[s], TK_A, tk_tag(cls, burst, i), tk_size(cls, i), what);
            ft_tag_recv_free(&tk_recvs[s]);
            busy[s] = false;
            done++;
            if (next < n) {
                ft_tag_recv_init(&tk_recvs[s], tk_shape(next + 1), tk_size(cls, next));
                ft_tag_recv_post(p->worker, &tk_recvs[s], tk_tag(cls, burst, next), UINT64_MAX);
                slot_msg[s] = next;
                busy[s] = true;
                next++;
            }
        }
        ft_progress_once(p->worker);
        FT_CHECK(ft_now_ns() < deadline, "class %u burst %u: %u of %u receives done after %d ms",
                 cls, burst, done, n, FT_TAG_TIMEOUT);
    }
}

/* The messages of the class so far on a's endpoint, by each of its modes (counts[i]: modes[i]);
 * none by another mode. */
static void tk_modes(const tk_proc_t *p, unsigned cls, uint64_t *counts)
{
    ferry_counters_t c = {.size = sizeof(c)};
    const unsigned *modes;
    unsigned n = tk_modes_of(cls, &modes);
    FT_CHECK(ferry_ep_counters(p->ep, &c) == FERRY_OK, "ferry_ep_counters failed");
    unsigned k = ferry_counters_size_class(tk_bases[cls]);
    for (unsigned m = 0; m < FERRY_COUNTERS_MODES; m++) {
        bool candidate = false;
        for (unsigned i = 0; i < n; i++) {
            if (modes[i] == m) {
                counts[i] = c.tag_modes[k][m];
                candidate = true;
            }
        }
        FT_CHECK(candidate || c.tag_modes[k][m] == 0,
                 "class %u: %llu messages moved by mode %u (not one of the class's)", cls,
                 (unsigned long long)c.tag_modes[k][m], m);
    }
}

/* a: bursts until the class was calibrated: every mode seen (with cross-memory attach), then
 * one mode for longer than any stretch of the calibration (two blocks and the sends between
 * them), then two more bursts of that mode. */
static void tk_run_a(tk_proc_t *p, unsigned cls, bool nocma, bool eager_blocks, bool restricted)
{
    unsigned per_block = tk_per_block(cls);
    unsigned stable_after = 4 * per_block + 4 * TK_BURST;
    unsigned max_messages = 16 * per_block + 40 * TK_BURST;
    const unsigned *modes;
    unsigned n = tk_modes_of(cls, &modes);
    uint64_t counts[TK_MODES_MAX] = {0}, t0 = ft_now_ns();
    unsigned burst = 0, streak = 0, extra = 0, calib_messages = 0;
    int streak_mode = -1; /* the index of the one mode of the last bursts, -1: several */
    /* eager may move none in an eager class: the rendezvous beat the transport's copies */
    bool eager_optional = cls < TK_EAGER_CLASSES && !eager_blocks;
    bool late_sent = false;
    for (;;) {
        uint64_t now[TK_MODES_MAX] = {0}, sum = 0;
        int moved = -1; /* the one mode that moved this burst's messages, -1: several */
        ft_progress_until_token(p->worker, p->chan, TK_TOKEN_READY, FT_TAG_TIMEOUT, NULL);
        tk_send_burst(p, cls, burst, TK_BURST);
        burst++;
        tk_modes(p, cls, now);
        for (unsigned i = 0; i < n; i++) {
            sum += now[i];
            if (now[i] == counts[i] + TK_BURST)
                moved = (int)i;
            FT_CHECK(!nocma || i == 0 || now[i] == 0,
                     "class %u: %llu %s messages without cross-memory attach", cls,
                     (unsigned long long)now[i], tk_mode_name(modes[i]));
        }
        FT_CHECK(sum == (uint64_t)burst * TK_BURST, "class %u: counted %llu messages, sent %u", cls,
                 (unsigned long long)sum, burst * TK_BURST);
        streak = moved >= 0 && moved == streak_mode ? streak + TK_BURST : moved >= 0 ? TK_BURST : 0;
        streak_mode = moved;
        memcpy(counts, now, sizeof(counts));
        bool all_seen = true;
        for (unsigned i = 0; i < n; i++)
            all_seen = all_seen && (counts[i] > 0 || (i == 0 && eager_optional));
        if ((nocma || all_seen) && streak >= stable_after) {
            if (calib_messages == 0)
                calib_messages = burst * TK_BURST - streak;
            extra += TK_BURST;
        }
        if (extra >= 2 * TK_BURST || burst * TK_BURST >= max_messages) {
            ft_chan_send_token(p->chan, TK_TOKEN_NEXT, 0, 0, 0, 0);
            break;
        }
        /* restricted: the burst after the first eager sends (the class's eager blocks) late */
        bool late = restricted && !late_sent && counts[0] > 0;
        late_sent = late_sent || late;
        ft_chan_send_token(p->chan, TK_TOKEN_NEXT, late ? TK_NEXT_LATE : 1, 0, 0, 0);
    }
    char seen[120];
    size_t used = 0;
    for (unsigned i = 0; i < n; i++)
        used += (size_t)snprintf(seen + used, sizeof(seen) - used, "%s%s %llu", i ? ", " : "",
                                 tk_mode_name(modes[i]), (unsigned long long)counts[i]);
    ft_note("class %zu..%zu B: %u messages, %s; one mode (%s) from message %u on: %.1f ms",
            tk_bases[cls], 2 * tk_bases[cls] - 1, burst * TK_BURST, seen,
            streak_mode >= 0 ? tk_mode_name(modes[streak_mode]) : "none", calib_messages,
            (double)(ft_now_ns() - t0) / 1e6);
    for (unsigned i = 0; i < n; i++)
        FT_CHECK(nocma ? (i == 0) == (counts[i] > 0) : counts[i] > 0 || (i == 0 && eager_optional),
                 "class %u: the calibration moved %s, expected %s", cls, seen,
                 nocma ? "the first mode alone" : "every mode");
    FT_CHECK(!restricted || late_sent, "class %u: no eager send to restrict (%s)", cls, seen);
    FT_CHECK(extra >= 2 * TK_BURST,
             "class %u: no single mode after %u messages (%s; the last %u in one mode)", cls,
             burst * TK_BURST, seen, streak);
}

/* b: receive bursts until a says the class is over (the one a says, late). */
static void tk_run_b(tk_proc_t *p, unsigned cls)
{
    bool late = false;
    for (unsigned burst = 0;; burst++) {
        ft_token_t token;
        tk_recv_burst(p, cls, burst, TK_BURST, late);
        ft_progress_until_token(p->worker, p->chan, TK_TOKEN_NEXT, FT_TAG_TIMEOUT, &token);
        if (token.v[0] == 0)
            break;
        late = token.v[0] == TK_NEXT_LATE;
    }
}

static void tk_run(tk_proc_t *p)
{
    const char *cma = getenv("FERRY_SHM_CMA");
    bool nocma = cma != NULL && strcmp(cma, "off") == 0;
    const char *restrict_env = getenv("MP_TAG_CALIB_RESTRICTED");
    bool restricted = restrict_env != NULL && strcmp(restrict_env, "1") == 0;
    /* a fixed store kind: no rate of the transport's copies, so the eager blocks run */
    bool eager_blocks = getenv("FERRY_SHM_STREAM_MIN") != NULL;
    for (unsigned cls = restricted ? 1 : 0; cls < (restricted ? 2 : TK_CLASSES); cls++) {
        if (p->self == TK_A)
            tk_run_a(p, cls, nocma, eager_blocks, restricted);
        else
            tk_run_b(p, cls);
    }
}

static void tk_pair(ft_pair_t *p, void *arg)
{
    (void)arg;
    tk_run(p);
}

int main(void)
{
    ft_watchdog(110);
    double seconds = ft_pair_run(tk_pair, NULL);
    ft_note("passed in %.2f s", seconds);
    return 0;
}
