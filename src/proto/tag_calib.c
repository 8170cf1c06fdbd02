/* The automatic choice between COOP and SPLIT for medium rendezvous messages, by measurement
 * of the traffic itself (docs/ARCHITECTURE.md, "Tagged messages").
 *
 * Which of the two is faster at a given size depends on where the two processes run (whether
 * their CPUs share a core, a cache, a socket) — the crossover moved from 64 KiB to 256 KiB
 * between two placements of this project's machines — so no constant is right everywhere. For
 * each power-of-two size class from TAG_CALIB_CLASS_MIN to TAG_CALIB_CLASS_MAX, the first
 * rendezvous messages a worker sends to endpoints where both modes work go in blocks of one
 * mode, alternating COOP, SPLIT, SPLIT, COOP, COOP, SPLIT (so neither always follows the
 * other), each block at least TAG_CALIB_BLOCK_BYTES and TAG_CALIB_BLOCK_MIN messages. Blocks
 * do not overlap: once a block is issued in full, further sends go uncounted in the next
 * block's mode until it completed, and the next block starts with the next send — so a window
 * of sends in flight (say 16) holds only the next mode's messages when its block starts, and
 * inflates both modes' times alike (by about the window over the block). A block's time runs
 * from its first send until its last message completed; its rate is its bytes over that
 * time. The best block of each mode decides the class, once, for the worker's life; the best,
 * not the mean, because a block the scheduler preempted is only slower. When after the first
 * four blocks (C S S C) the slower of one mode's two beats the faster of the other's by 1.5x or
 * more, they decide and the last two blocks are not run: at 64 KiB on the far placement SPLIT
 * ran at 0.3-0.5x COOP, and its third block cost ~5 % of a 1000-message Open MPI stream. Both
 * streaming (many sends in flight) and ping-pong (one at a time: the time is then the latency) are
 * measured as the application runs them. Classes above TAG_CALIB_CLASS_MAX always use SPLIT (two
 * kernel copies at once were faster than a copy through shared buffers at every placement measured
 * there). FERRY_RNDV_MODE or a non-zero FERRY_RNDV_SPLIT_MIN turns this off. While the endpoint's
 * transport still calibrates its own copies (shm: plain or non-temporal stores into the bulk
 * buffers, on its first ~9 MiB of them), sends go uncounted by COOP, whose copies finish that
 * calibration: otherwise COOP's blocks would measure a mix of the store kinds (on a near
 * placement COOP at 256 KiB ran 33 GB/s with plain stores, and the class chose SPLIT at 22).
 *
 * Eager or rendezvous. Where cross-memory attach works, a message of 16 KiB .. 256 KiB can go
 * eagerly (two copies through the bulk buffers, no handshake) or by a rendezvous that copies
 * once in the kernel (GET: the receiver reads all; SPLIT: each process copies half). Which wins
 * depends on the machine even more than COOP against SPLIT: on one host eager won at every
 * size up to 256 KiB and process_vm_readv cost 3-5 us even at 8 B; on another (kernel 6.18)
 * GET had 0.7x eager's latency at 16 KiB and SPLIT streamed 1.6-2.9x eager's rate from 64 KiB.
 * So the classes from TAG_CALIB_EAGER_CLASS_MIN measure the three the same way, in blocks G S
 * S G E E, after CALIB_LEAD_IN sends uncounted in GET (the eager sends before them, while the
 * transport measured its copies, may have left the receiver a backlog to copy); an eager
 * block's messages carry TAG_FLAG_ACK, so that they complete, as a rendezvous does, when the
 * receiver matched them (not when the transport took the data: a window of eager sends would
 * then measure the bulk buffers' fill, not the stream). Eager cannot run faster than the
 * copies through the peer's buffers it is made of, and the transport measured those on the
 * same traffic just before (fy_tl_ops_t.ep_copy_rate; shm: the best block of the store kind it
 * kept). So after the four rendezvous blocks, a class whose faster rendezvous mode's best block
 * ran above that rate decides for it without the eager blocks (calib_eager_bounded; at once
 * when GET and SPLIT differ clearly, by 3/2, else after a third block of each, S G, in place of
 * the eager ones: rndv_only): the eager blocks cost the most where eager loses, in a stream
 * that outruns the receiver's posted receives (Open MPI's 1000 x 64 KiB: eager blocks at 7-16
 * GB/s where SPLIT streams 22-24, the receiver restricting them; the stream went from 17.3 to
 * 19.3 GB/s, medians of 20 alternating runs, ob1 19.9, runs under 15 GB/s from 7 to 1).
 * Otherwise the eager blocks run, and a rendezvous mode takes the class only when its best
 * block ran at least CALIB_EAGER_MARGIN times eager's best: eager asks nothing of the receiver,
 * and a noisy block (preemption) only makes eager stay. While the class may still decide that
 * way, the sends between its fourth block and the first eager one go by the fourth block's mode,
 * not eagerly. A send the receiver keeps from going eagerly (FLOW back-pressure) gives up the
 * eager block it would start or join; a class whose eager blocks were all given up decides
 * between GET and SPLIT, and in a class that went eager such a send goes by the faster of them.
 *
 * Cost: one clock reading per send and completion of a class while it calibrates (messages of
 * 8 KiB or more: microseconds each), nothing afterwards. */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/compiler.h"
#include "core/log.h"
#include "core/time.h"
#include "proto/tag_int.h"

/* Block order: COOP first in the first and third pair, SPLIT first in the second. */
static const uint8_t calib_order[TAG_CALIB_BLOCKS] = {
    TAG_RNDV_COOP, TAG_RNDV_SPLIT, TAG_RNDV_SPLIT, TAG_RNDV_COOP, TAG_RNDV_COOP, TAG_RNDV_SPLIT};
/* The eager classes' order: each mode twice, mirrored. */
static const uint8_t calib_eager_order[TAG_CALIB_BLOCKS] = {TAG_RNDV_GET,
                                                            TAG_RNDV_SPLIT,
                                                            TAG_RNDV_SPLIT,
                                                            TAG_RNDV_GET,
                                                            FERRY_COUNTERS_MODE_EAGER,
                                                            FERRY_COUNTERS_MODE_EAGER};
/* The same once a rendezvous beat the copies but GET and SPLIT were close (rndv_only): a third
 * block of each instead of the eager ones. */
static const uint8_t calib_eager_order_rndv[TAG_CALIB_BLOCKS] = {
    TAG_RNDV_GET, TAG_RNDV_SPLIT, TAG_RNDV_SPLIT, TAG_RNDV_GET, TAG_RNDV_SPLIT, TAG_RNDV_GET};
/* The candidates of the eager classes. */
static const uint8_t calib_eager_modes[3] = {FERRY_COUNTERS_MODE_EAGER, TAG_RNDV_GET,
                                             TAG_RNDV_SPLIT};
/* A rendezvous mode takes an eager class when its best block ran at least NUM / DEN times
 * eager's best. */
#define CALIB_EAGER_MARGIN_NUM 11u
#define CALIB_EAGER_MARGIN_DEN 10u
/* A close call (the rendezvous's best block faster than eager's, but short of the margin) runs
 * the blocks again, up to this many rounds in all, each mode's best block taken over them: at
 * 32 KiB, where GET streams 1.28x eager's rate, eager blocks read 12.5-15.8 GB/s and GET ones
 * 16.5-18.2, and one round left the class eager in about 2 runs of 5. */
#define CALIB_EAGER_ROUNDS 2u
/* Blocks after which a clear difference decides early (two of each mode), and how clear: the
 * slowest of those blocks of one mode at least NUM / DEN times as fast as the fastest of the
 * other's (a pause or preemption only slows a block: it can delay this, not cause it). */
#define CALIB_EARLY_BLOCKS 4u
#define CALIB_CLEAR_NUM 3u
#define CALIB_CLEAR_DEN 2u
/* Sends of an eager class that go uncounted in its first block's mode before that block: the
 * eager sends before them (while the transport calibrated its copies) may have outrun the
 * receiver, which then still copies their backlog (without them, the first GET block of Open
 * MPI's 64 KiB stream read 10-15 GB/s in 4 runs of 8, 18-19 with them) */
#define CALIB_LEAD_IN 16u

/* The class of a length (floor of log2), or -1 outside the calibrated range. */
static int calib_class_index(uint64_t length)
{
    if (length < (UINT64_C(1) << TAG_CALIB_CLASS_MIN) ||
        length >= (UINT64_C(1) << (TAG_CALIB_CLASS_MAX + 1)))
        return -1;
    return 63 - __builtin_clzll(length) - TAG_CALIB_CLASS_MIN;
}

/* The same for the eager classes: TAG_CALIB_CLASSES + the index into calib_eager, or -1. */
static int calib_eager_class_index(uint64_t length)
{
    if (length < (UINT64_C(1) << TAG_CALIB_EAGER_CLASS_MIN) ||
        length >= (UINT64_C(1) << (TAG_CALIB_EAGER_CLASS_MAX + 1)))
        return -1;
    return 63 - __builtin_clzll(length) - TAG_CALIB_EAGER_CLASS_MIN + TAG_CALIB_CLASSES;
}

/* The smallest size of class index (either kind). */
static uint64_t calib_class_size(int index)
{
    return index < TAG_CALIB_CLASSES
               ? UINT64_C(1) << (index + TAG_CALIB_CLASS_MIN)
               : UINT64_C(1) << (index - TAG_CALIB_CLASSES + TAG_CALIB_EAGER_CLASS_MIN);
}

static uint32_t calib_per_block(int index)
{
    uint64_t size = calib_class_size(index);
    uint64_t bytes =
        index < TAG_CALIB_CLASSES ? TAG_CALIB_BLOCK_BYTES : TAG_CALIB_EAGER_BLOCK_BYTES;
    uint64_t n = (bytes + size - 1) / size;
    return n < TAG_CALIB_BLOCK_MIN ? TAG_CALIB_BLOCK_MIN : (uint32_t)n;
}

/* Class index of either kind (calib_class_index, calib_eager_class_index). */
static tag_calib_class_t *calib_class_of(ferry_worker_t *worker, int index)
{
    fy_tag_worker_t *tw = fy_tag_worker_of(worker);
    return index < TAG_CALIB_CLASSES ? &tw->calib[index]
                                     : &tw->calib_eager[index - TAG_CALIB_CLASSES];
}

/* The order of the blocks of class c (index). */
static const uint8_t *calib_order_of(const tag_calib_class_t *c, int index)
{
    if (index < TAG_CALIB_CLASSES)
        return calib_order;
    return c->rndv_only ? calib_eager_order_rndv : calib_eager_order;
}

/* The best block of each of the n modes (best_bytes[m] / best_ns[m]; 0 ns: no figure), and
 * its rate in MB/s (rate_mbps[m]), earlier rounds' included. The best, not the mean: a block the
 * scheduler preempted is only slower. */
static void calib_best(const tag_calib_class_t *c, const uint8_t *order, const uint8_t *modes,
                       unsigned n, uint64_t *best_bytes, uint64_t *best_ns, uint32_t *rate_mbps)
{
    for (unsigned m = 0; m < n; m++) {
        best_bytes[m] = c->prior_bytes[m];
        best_ns[m] = c->prior_ns[m];
    }
    for (unsigned b = 0; b < TAG_CALIB_BLOCKS; b++) {
        const tag_calib_block_t *k = &c->block[b];
        if (k->end_ns <= k->first_ns)
            continue; /* the clock did not move: no figure */
        uint64_t ns = k->end_ns - k->first_ns;
        for (unsigned m = 0; m < n; m++) {
            if (order[b] == modes[m] &&
                (best_ns[m] == 0 || fy_rate_above(k->bytes, ns, best_bytes[m], best_ns[m], 1, 1))) {
                best_bytes[m] = k->bytes;
                best_ns[m] = ns;
            }
        }
    }
    for (unsigned m = 0; m < n; m++)
        rate_mbps[m] = best_ns[m] != 0 ? (uint32_t)(best_bytes[m] * 1000 / best_ns[m]) : 0;
}

/* The decision of class index, at info level: "tagged messages: WHAT of LO..HI bytes to endpoints
 * with cross-memory attach CHOICE (calibrated on the traffic: FIGURES)". */
static void calib_say(int index, const char *what, const char *choice, const char *figures)
{
    fy_info("tagged messages: %s of %llu..%llu bytes to endpoints with cross-memory attach %s "
            "(calibrated on the traffic: %s)",
            what, (unsigned long long)calib_class_size(index),
            (unsigned long long)(2 * calib_class_size(index) - 1), choice, figures);
}

static void calib_decide(tag_calib_class_t *c, int index)
{
    static const uint8_t modes[2] = {TAG_RNDV_COOP, TAG_RNDV_SPLIT};
    uint64_t best_bytes[2], best_ns[2];
    calib_best(c, calib_order, modes, 2, best_bytes, best_ns, c->rate_mbps);
    /* without a figure for one mode, the other; without either, SPLIT (the larger classes'
     * choice) */
    if (best_ns[0] != 0 && best_ns[1] != 0)
        c->mode = fy_rate_above(best_bytes[0], best_ns[0], best_bytes[1], best_ns[1], 1, 1)
                      ? TAG_RNDV_COOP
                      : TAG_RNDV_SPLIT;
    else
        c->mode = best_ns[0] != 0 ? TAG_RNDV_COOP : TAG_RNDV_SPLIT;
    c->decided = true;
    char figures[96];
    snprintf(figures, sizeof(figures), "best block coop %u.%03u GB/s, split %u.%03u GB/s",
             c->rate_mbps[0] / 1000, c->rate_mbps[0] % 1000, c->rate_mbps[1] / 1000,
             c->rate_mbps[1] % 1000);
    calib_say(index, "rendezvous", c->mode == TAG_RNDV_COOP ? "use coop" : "use split", figures);
}

/* Whether bytes in ns (a rendezvous block of eager class c) ran faster than the copies through
 * the peer's buffers that eager would go through (c->copy_mbps; false without that figure). No
 * margin: that rate bounds eager's from above (the transport's best block, before the
 * receiver's copies out of the buffers and the receive's match), where an eager block's is a
 * figure of eager itself. */
static bool calib_above_copies(const tag_calib_class_t *c, uint64_t bytes, uint64_t ns)
{
    return c->copy_mbps != 0 && ns != 0 && fy_rate_above(bytes, ns, c->copy_mbps, 1000, 1, 1);
}

/* An eager class: the faster rendezvous mode (GET or SPLIT) when its best block beat eager's
 * best by the margin, else eager (also when a mode has no figure). */
static void calib_decide_eager(tag_calib_class_t *c, int index)
{
    uint64_t best_bytes[3], best_ns[3];
    uint32_t rate_mbps[3];
    calib_best(c, calib_order_of(c, index), calib_eager_modes, 3, best_bytes, best_ns, rate_mbps);
    unsigned rndv = 2; /* SPLIT unless GET ran faster */
    if (best_ns[1] != 0 && (best_ns[2] == 0 || fy_rate_above(best_bytes[1], best_ns[1],
                                                             best_bytes[2], best_ns[2], 1, 1)))
        rndv = 1;
    char rates[80];
    snprintf(rates, sizeof(rates), "best block eager %u.%03u GB/s, get %u.%03u, split %u.%03u",
             rate_mbps[0] / 1000, rate_mbps[0] % 1000, rate_mbps[1] / 1000, rate_mbps[1] % 1000,
             rate_mbps[2] / 1000, rate_mbps[2] % 1000);
    bool figures_both = best_ns[0] != 0 && best_ns[rndv] != 0;
    /* eager without a figure because the receiver kept the class's sends from going eagerly
     * (calib_skip_eager), or because the rendezvous beat the copies eager would go through
     * before its blocks (calib_eager_bounded): the rendezvous */
    bool clear =
        figures_both
            ? fy_rate_above(best_bytes[rndv], best_ns[rndv], best_bytes[0], best_ns[0],
                            CALIB_EAGER_MARGIN_NUM, CALIB_EAGER_MARGIN_DEN)
            : (c->eager_skipped || calib_above_copies(c, best_bytes[rndv], best_ns[rndv])) &&
                  best_ns[rndv] != 0;
    if (figures_both && !clear && c->rounds + 1u < CALIB_EAGER_ROUNDS &&
        fy_rate_above(best_bytes[rndv], best_ns[rndv], best_bytes[0], best_ns[0], 1, 1)) {
        /* a close call: the blocks again, each mode's best kept */
        for (unsigned m = 0; m < 3; m++) {
            c->prior_bytes[m] = best_bytes[m];
            c->prior_ns[m] = best_ns[m];
        }
        memset(c->block, 0, sizeof(c->block));
        c->issue = 0;
        c->rounds++;
        fy_debug("tagged messages of %llu..%llu bytes: a close call (%s): another round of blocks",
                 (unsigned long long)calib_class_size(index),
                 (unsigned long long)(2 * calib_class_size(index) - 1), rates);
        return;
    }
    c->mode = clear ? calib_eager_modes[rndv] : FERRY_COUNTERS_MODE_EAGER;
    c->rndv_mode = best_ns[rndv] != 0 ? calib_eager_modes[rndv] : 0;
    c->decided = true;
    char figures[200];
    snprintf(figures, sizeof(figures),
             "%s, copies through the bulk buffers %u.%03u (%u round%s); a rendezvous needs "
             "%u/%u of eager's",
             rates, c->copy_mbps / 1000, c->copy_mbps % 1000, c->rounds + 1u, c->rounds ? "s" : "",
             CALIB_EAGER_MARGIN_NUM, CALIB_EAGER_MARGIN_DEN);
    calib_say(index, "messages",
              c->mode == TAG_RNDV_GET     ? "go by rendezvous get"
              : c->mode == TAG_RNDV_SPLIT ? "go by rendezvous split"
                                          : "go eagerly",
              figures);
}

/* The mode of a send of decided eager class c: its mode, but a send the receiver keeps from
 * going eagerly (restricted) in a class that went eager goes by the faster rendezvous mode the
 * class measured (without one, FERRY_COUNTERS_MODE_EAGER: tag_rndv_choose's mode), instead of
 * calibrating COOP against SPLIT from scratch as the rendezvous classes do. */
static uint8_t calib_decided_mode(const tag_calib_class_t *c, bool restricted)
{
    if (restricted && c->mode == FERRY_COUNTERS_MODE_EAGER && c->rndv_mode != 0)
        return c->rndv_mode;
    return c->mode;
}

/* A send the receiver keeps from going eagerly (FLOW restricted, restricted true) would start
 * or join c's eager block c->issue, whose last send is not issued (the block's sends so far went
 * as plain eager sends; only the last is tracked): the block is given up, without a figure, and
 * the class goes on with the next block, or decides when it was the last. Under Open MPI's
 * window of 16 a 64 KiB stream outruns the reposted receives while it goes eagerly, and the
 * receiver restricts it in the middle of the class's blocks: the eager block then never ended,
 * the class never decided, and the restricted sends calibrated COOP against SPLIT from scratch
 * (about 200 more messages). */
static void calib_skip_eager(tag_calib_class_t *c, int index)
{
    tag_calib_block_t *k = &c->block[c->issue];
    k->issued = c->per_block;
    k->done = c->per_block;
    k->first_ns = 0;
    k->end_ns = 0;
    k->bytes = 0;
    c->eager_skipped = true;
    if (c->issue + 1 == TAG_CALIB_BLOCKS)
        calib_decide_eager(c, index); /* a close call starts another round at block 0 */
    else
        c->issue++;
}

/* Class index (calibrating, ep's transport done with its own) for a send of length bytes: the
 * current block's mode, the send counted in it (ticket), or, while the block before is issued
 * but not complete, the next block's mode uncounted. In an eager block only the last message
 * carries TAG_FLAG_ACK (ticket->ack) and is tracked to its completion: messages arrive and match
 * in order, so its match ends the block, and the others go as plain eager sends do (an ACK on
 * each cost the receiver a DONE per message: at 16 KiB the blocks read 12-14 GB/s where the
 * stream runs 16-17). A restricted send (restricted true: the receiver keeps it from going
 * eagerly) gives up an eager block it would start or join (calib_skip_eager) and goes uncounted
 * by SPLIT where it would go uncounted eagerly; when that decides the class, its mode. */
static uint8_t calib_join(tag_calib_class_t *c, int index, uint64_t length, bool restricted,
                          tag_calib_ticket_t *ticket)
{
    const uint8_t *order = calib_order_of(c, index);
    if (c->per_block == 0)
        c->per_block = calib_per_block(index);
    for (;;) {
        tag_calib_block_t *k = &c->block[c->issue];
        if (k->issued == c->per_block) {
            /* issued in full: until it completed, sends go uncounted in the next block's mode,
             * so that the next block starts with a pipeline of its own mode */
            if (c->issue + 1 == TAG_CALIB_BLOCKS || k->done != c->per_block) {
                uint8_t next = order[c->issue + 1 == TAG_CALIB_BLOCKS ? c->issue : c->issue + 1];
                /* not eagerly while the class may still decide without eager blocks */
                if (next == FERRY_COUNTERS_MODE_EAGER && c->issue + 1 == CALIB_EARLY_BLOCKS)
                    return order[c->issue];
                return restricted && next == FERRY_COUNTERS_MODE_EAGER ? TAG_RNDV_SPLIT : next;
            }
            c->issue++;
            continue;
        }
        if (c->issue == 0 && k->issued == 0 && index >= TAG_CALIB_CLASSES &&
            c->lead_in < CALIB_LEAD_IN) {
            c->lead_in++;
            return order[0];
        }
        if (restricted && order[c->issue] == FERRY_COUNTERS_MODE_EAGER) {
            calib_skip_eager(c, index);
            if (c->decided)
                return calib_decided_mode(c, restricted);
            continue;
        }
        if (k->issued++ == 0)
            k->first_ns = fy_time_now_ns();
        k->bytes += length;
        ticket->calib_class = (uint8_t)(index + 1);
        ticket->calib_block = c->issue;
        ticket->ack = order[c->issue] == FERRY_COUNTERS_MODE_EAGER && k->issued == c->per_block;
        return order[c->issue];
    }
}

tag_rndv_mode_t tag_calib_choose(ferry_worker_t *worker, const ferry_ep_t *ep, tag_send_t *send,
                                 uint64_t length)
{
    if (length < (UINT64_C(1) << TAG_CALIB_CLASS_MIN))
        return TAG_RNDV_COOP; /* below the classes (a forced eager threshold, EAGER_OFF) */
    int index = calib_class_index(length);
    if (index < 0)
        return TAG_RNDV_SPLIT;
    tag_calib_class_t *c = &fy_tag_worker_of(worker)->calib[index];
    if (c->decided)
        return (tag_rndv_mode_t)c->mode;
    /* the transport still calibrates its copies (shm: the store kind into its bulk buffers):
     * uncounted COOP, whose copies finish that calibration, so that the blocks below measure
     * the copies the endpoint keeps */
    if (ep->tl->ep_calibrating != NULL && ep->tl->ep_calibrating(ep->tl_ep))
        return TAG_RNDV_COOP;
    tag_calib_ticket_t ticket = {0, 0, 0};
    tag_rndv_mode_t mode = (tag_rndv_mode_t)calib_join(c, index, length, false, &ticket);
    send->calib_class = ticket.calib_class;
    send->calib_block = ticket.calib_block;
    return mode;
}

unsigned tag_calib_eager_choose(ferry_worker_t *worker, const ferry_ep_t *ep, uint64_t length,
                                bool restricted, tag_calib_ticket_t *ticket)
{
    fy_tag_worker_t *tw = fy_tag_worker_of(worker);
    int index = calib_eager_class_index(length);
    ticket->calib_class = 0;
    ticket->ack = 0;
    if (index < 0)
        return FERRY_COUNTERS_MODE_EAGER;
    if (fy_unlikely(tw->calib_eager == NULL)) {
        static atomic_int warned;
        tw->calib_eager = calloc(TAG_CALIB_EAGER_CLASSES, sizeof(*tw->calib_eager));
        if (tw->calib_eager == NULL) {
            if (atomic_exchange(&warned, 1) == 0)
                fy_warn("calloc(%zu) for the calibration of eager against rendezvous failed: "
                        "tagged messages of %llu bytes go eager without measuring",
                        TAG_CALIB_EAGER_CLASSES * sizeof(*tw->calib_eager),
                        (unsigned long long)length);
            return FERRY_COUNTERS_MODE_EAGER;
        }
    }
    tag_calib_class_t *c = calib_class_of(worker, index);
    if (c->decided)
        return calib_decided_mode(c, restricted);
    /* as above: eager, uncounted, finishes the transport's calibration of its copies */
    if (ep->tl->ep_calibrating != NULL && ep->tl->ep_calibrating(ep->tl_ep))
        return FERRY_COUNTERS_MODE_EAGER;
    if (c->copy_mbps == 0 && ep->tl->ep_copy_rate != NULL)
        c->copy_mbps = ep->tl->ep_copy_rate(ep->tl_ep);
    return calib_join(c, index, length, restricted, ticket);
}

/* Answers. An 8 KiB .. 16 KiB - 1 message is too small for the eager classes' blocks (an eager
 * block ends when the sender sees the last message's DONE, and a sender whose eager sends all
 * complete at once polls late: its 8 KiB blocks read 5-10 GB/s against a 13-15 GB/s stream).
 * Measured by hand on the host of kernel 6.18 (7 alternating runs, medians): a ping-pong of
 * 8 KiB by GET by address 1.28 us one way, eager 1.48, Open MPI (CMA) 1.32; a stream eager
 * 14-15 GB/s, by GET 0.75x that. So a message that answers the peer (what a ping-pong, an RPC's
 * reply or a request after a reply is) goes by address, and a stream eagerly. */
unsigned tag_reply_choose(ferry_ep_t *ep, size_t iovcnt)
{
    if (!tag_reply_due(ep))
        return FERRY_COUNTERS_MODE_EAGER;
    fy_tag_ep_of(ep)->reply_mark = fy_tag_worker_of(ep->worker)->rx_count;
    return iovcnt == 1 ? TAG_RNDV_GET : FERRY_COUNTERS_MODE_EAGER;
}

void tag_calib_ticket_cancel(ferry_worker_t *worker, const tag_calib_ticket_t *ticket,
                             uint64_t length)
{
    if (ticket == NULL || ticket->calib_class == 0)
        return;
    tag_calib_class_t *c = calib_class_of(worker, ticket->calib_class - 1);
    tag_calib_block_t *k = &c->block[ticket->calib_block];
    k->issued--;
    k->bytes -= length;
}

void tag_calib_cancel(ferry_worker_t *worker, tag_send_t *send, uint64_t length)
{
    tag_calib_ticket_t ticket = {send->calib_class, send->calib_block, 0};
    send->calib_class = 0;
    tag_calib_ticket_cancel(worker, &ticket, length);
}

/* Whether block a of c ran above num / den times block b's rate (both completed). */
static bool calib_block_above(const tag_calib_class_t *c, unsigned a, unsigned b, unsigned num,
                              unsigned den)
{
    const tag_calib_block_t *x = &c->block[a], *y = &c->block[b];
    return fy_rate_above(x->bytes, x->end_ns - x->first_ns, y->bytes, y->end_ns - y->first_ns, num,
                         den);
}

/* Whether each of the first CALIB_EARLY_BLOCKS blocks of c has a figure (its clock moved, and
 * it was not given up). */
static bool calib_early_timed(const tag_calib_class_t *c)
{
    for (unsigned b = 0; b < CALIB_EARLY_BLOCKS; b++)
        if (c->block[b].end_ns <= c->block[b].first_ns)
            return false;
    return true;
}

/* After the first CALIB_EARLY_BLOCKS blocks of a class (their modes in order) completed: whether
 * one mode clearly won. */
static bool calib_clear(const tag_calib_class_t *c, const uint8_t *order)
{
    if (!calib_early_timed(c))
        return false;
    for (unsigned a = 0; a < CALIB_EARLY_BLOCKS; a++) {
        bool beats_all = true; /* block a, the slowest of its mode, beats every other clearly */
        for (unsigned b = 0; b < CALIB_EARLY_BLOCKS && beats_all; b++) {
            if (order[b] == order[a])
                beats_all = b == a || !calib_block_above(c, a, b, 1, 1);
            else
                beats_all = calib_block_above(c, a, b, CALIB_CLEAR_NUM, CALIB_CLEAR_DEN);
        }
        if (beats_all)
            return true;
    }
    return false;
}

/* After the first CALIB_EARLY_BLOCKS blocks of an eager class (G S S G) completed: whether the
 * faster rendezvous mode's best block ran faster than the copies eager would go through
 * (calib_above_copies). Eager cannot stream faster than those copies ran in the same traffic,
 * so the class then decides without its two eager blocks: in Open MPI's 1 000-message stream of
 * 64 KiB they went eagerly into receives not posted yet, at 7-16 GB/s where SPLIT streams 22-24,
 * and a receiver that fell behind restricted them. */
static bool calib_eager_bounded(const tag_calib_class_t *c, int index)
{
    uint64_t best_bytes[3], best_ns[3];
    uint32_t rate_mbps[3];
    calib_best(c, calib_order_of(c, index), calib_eager_modes, 3, best_bytes, best_ns, rate_mbps);
    return calib_above_copies(c, best_bytes[1], best_ns[1]) ||
           calib_above_copies(c, best_bytes[2], best_ns[2]);
}

void tag_calib_done(ferry_worker_t *worker, tag_send_t *send)
{
    int index = send->calib_class - 1;
    tag_calib_class_t *c = calib_class_of(worker, index);
    tag_calib_block_t *k = &c->block[send->calib_block];
    send->calib_class = 0;
    /* an eager block's one tracked send, its last, ends it */
    if (calib_order_of(c, index)[send->calib_block] == FERRY_COUNTERS_MODE_EAGER)
        k->done = c->per_block;
    else if (++k->done != c->per_block)
        return;
    k->end_ns = fy_time_now_ns();
    /* no send joined the next block yet (calib_join waits for this one's completion) */
    bool last = send->calib_block + 1 == TAG_CALIB_BLOCKS;
    if (send->calib_block + 1 == CALIB_EARLY_BLOCKS) {
        if (index < TAG_CALIB_CLASSES) {
            last = calib_clear(c, calib_order);
        } else if (calib_eager_bounded(c, index)) {
            /* eager is out; GET against SPLIT decides now only when clear (3/2), else on a
             * third block of each: with two, a 128 KiB stream whose SPLIT blocks both ran
             * slow (18-35 GB/s from block to block, GET 17-23) chose GET in 1 run of 12 here
             * and in 2 of 3 of a sweep, at 0.75x SPLIT's rate for the worker's life */
            last = calib_clear(c, calib_eager_order);
            c->rndv_only = !last;
        }
    }
    if (!last)
        return;
    if (index >= TAG_CALIB_CLASSES)
        calib_decide_eager(c, index);
    else
        calib_decide(c, index);
}
