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
 * Cost: one clock reading per send and completion of a class while it calibrates (messages of
 * 8 KiB or more: microseconds each), nothing afterwards. */
#include <stdint.h>

#include "core/time.h"
#include "proto/tag_int.h"

/* Block order: COOP first in the first and third pair, SPLIT first in the second. */
static const uint8_t calib_order[TAG_CALIB_BLOCKS] = {
    TAG_RNDV_COOP, TAG_RNDV_SPLIT, TAG_RNDV_SPLIT, TAG_RNDV_COOP, TAG_RNDV_COOP, TAG_RNDV_SPLIT};
/* Blocks after which a clear difference decides early (two of each mode), and how clear: the
 * slowest of those blocks of one mode at least NUM / DEN times as fast as the fastest of the
 * other's (a pause or preemption only slows a block: it can delay this, not cause it). */
#define CALIB_EARLY_BLOCKS 4u
#define CALIB_CLEAR_NUM 3u
#define CALIB_CLEAR_DEN 2u

/* The class of a length (floor of log2), or -1 outside the calibrated range. */
static int calib_class_index(uint64_t length)
{
    if (length < (UINT64_C(1) << TAG_CALIB_CLASS_MIN) ||
        length >= (UINT64_C(1) << (TAG_CALIB_CLASS_MAX + 1)))
        return -1;
    return 63 - __builtin_clzll(length) - TAG_CALIB_CLASS_MIN;
}

static uint32_t calib_per_block(int index)
{
    uint64_t size = UINT64_C(1) << (index + TAG_CALIB_CLASS_MIN);
    uint64_t n = (TAG_CALIB_BLOCK_BYTES + size - 1) / size;
    return n < TAG_CALIB_BLOCK_MIN ? TAG_CALIB_BLOCK_MIN : (uint32_t)n;
}

static void calib_decide(tag_calib_class_t *c, int index)
{
    /* the best rate of each mode, bytes per ns, as a fraction to avoid floating point in the
     * comparison: best_bytes / best_ns */
    uint64_t best_bytes[2] = {0, 0}, best_ns[2] = {0, 0};
    for (unsigned b = 0; b < TAG_CALIB_BLOCKS; b++) {
        const tag_calib_block_t *k = &c->block[b];
        if (k->end_ns <= k->first_ns)
            continue; /* the clock did not move: no figure */
        uint64_t ns = k->end_ns - k->first_ns;
        unsigned m = calib_order[b] == TAG_RNDV_SPLIT;
        if (best_ns[m] == 0 || fy_rate_above(k->bytes, ns, best_bytes[m], best_ns[m], 1, 1)) {
            best_bytes[m] = k->bytes;
            best_ns[m] = ns;
        }
    }
    /* without a figure for one mode, the other; without either, SPLIT (the larger classes'
     * choice) */
    if (best_ns[0] != 0 && best_ns[1] != 0)
        c->mode = fy_rate_above(best_bytes[0], best_ns[0], best_bytes[1], best_ns[1], 1, 1)
                      ? TAG_RNDV_COOP
                      : TAG_RNDV_SPLIT;
    else
        c->mode = best_ns[0] != 0 ? TAG_RNDV_COOP : TAG_RNDV_SPLIT;
    c->decided = true;
    for (unsigned m = 0; m < 2; m++)
        c->rate_mbps[m] = best_ns[m] != 0 ? (uint32_t)(best_bytes[m] * 1000 / best_ns[m]) : 0;
    fy_info("tagged messages: rendezvous of %llu..%llu bytes to endpoints with cross-memory "
            "attach use %s (calibrated on the traffic: best block coop %u.%03u GB/s, split "
            "%u.%03u GB/s)",
            (unsigned long long)(UINT64_C(1) << (index + TAG_CALIB_CLASS_MIN)),
            (unsigned long long)((UINT64_C(2) << (index + TAG_CALIB_CLASS_MIN)) - 1),
            c->mode == TAG_RNDV_COOP ? "coop" : "split", c->rate_mbps[0] / 1000,
            c->rate_mbps[0] % 1000, c->rate_mbps[1] / 1000, c->rate_mbps[1] % 1000);
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
    if (c->per_block == 0)
        c->per_block = calib_per_block(index);
    tag_calib_block_t *k = &c->block[c->issue];
    if (k->issued == c->per_block) {
        /* issued in full: until it completed, sends go uncounted in the next block's mode, so
         * that the next block starts with a pipeline of its own mode */
        if (c->issue + 1 == TAG_CALIB_BLOCKS)
            return TAG_RNDV_SPLIT;
        if (k->done != c->per_block)
            return (tag_rndv_mode_t)calib_order[c->issue + 1];
        k = &c->block[++c->issue];
    }
    if (k->issued++ == 0)
        k->first_ns = fy_time_now_ns();
    k->bytes += length;
    send->calib_class = (uint8_t)(index + 1);
    send->calib_block = c->issue;
    return (tag_rndv_mode_t)calib_order[c->issue];
}

void tag_calib_cancel(ferry_worker_t *worker, tag_send_t *send, uint64_t length)
{
    if (send->calib_class == 0)
        return;
    tag_calib_class_t *c = &fy_tag_worker_of(worker)->calib[send->calib_class - 1];
    tag_calib_block_t *k = &c->block[send->calib_block];
    send->calib_class = 0;
    k->issued--;
    k->bytes -= length;
}

/* Whether block a of c ran above num / den times block b's rate (both completed). */
static bool calib_block_above(const tag_calib_class_t *c, unsigned a, unsigned b, unsigned num,
                              unsigned den)
{
    const tag_calib_block_t *x = &c->block[a], *y = &c->block[b];
    return fy_rate_above(x->bytes, x->end_ns - x->first_ns, y->bytes, y->end_ns - y->first_ns, num,
                         den);
}

/* After the first CALIB_EARLY_BLOCKS blocks completed: whether one mode clearly won. */
static bool calib_clear(const tag_calib_class_t *c)
{
    for (unsigned b = 0; b < CALIB_EARLY_BLOCKS; b++)
        if (c->block[b].end_ns <= c->block[b].first_ns)
            return false; /* the clock did not move: no figure */
    for (unsigned a = 0; a < CALIB_EARLY_BLOCKS; a++) {
        bool beats_all = true; /* block a, the slowest of its mode, beats every other clearly */
        for (unsigned b = 0; b < CALIB_EARLY_BLOCKS && beats_all; b++) {
            if (calib_order[b] == calib_order[a])
                beats_all = b == a || !calib_block_above(c, a, b, 1, 1);
            else
                beats_all = calib_block_above(c, a, b, CALIB_CLEAR_NUM, CALIB_CLEAR_DEN);
        }
        if (beats_all)
            return true;
    }
    return false;
}

void tag_calib_done(ferry_worker_t *worker, tag_send_t *send)
{
    tag_calib_class_t *c = &fy_tag_worker_of(worker)->calib[send->calib_class - 1];
    tag_calib_block_t *k = &c->block[send->calib_block];
    send->calib_class = 0;
    if (++k->done != c->per_block)
        return;
    k->end_ns = fy_time_now_ns();
    /* no send joined the next block yet (tag_calib_choose waits for this one's completion) */
    if (send->calib_block + 1 == TAG_CALIB_BLOCKS ||
        (send->calib_block + 1 == CALIB_EARLY_BLOCKS && calib_clear(c)))
        calib_decide(c, (int)(c - fy_tag_worker_of(worker)->calib));
}
