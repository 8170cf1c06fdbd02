/* The kind of stores a sender copies into its peer's bulk buffers with, chosen per endpoint by
 * measurement of its own traffic (docs/ARCHITECTURE.md, "shm", and "Medium messages").
 *
 * A bulk buffer's lines usually sit in the receiver's cache: it read them last. Plain stores
 * first pull each line back to the sender (a read for ownership), and the receiver then reads
 * the lines from the sender's cache; non-temporal stores write them to memory, and the receiver
 * reads them from there. Which is faster depends on where the two processes run: with the two
 * vCPUs of this project's machine one cache-line transfer apart (~50 ns one way) plain stores
 * streamed 64 KiB tagged messages at 1.9x the non-temporal rate; on the far placement (~225 ns)
 * they were 5-8 % slower. No constant is right on both, so unless FERRY_SHM_STREAM_MIN fixes
 * the threshold, each endpoint measures both kinds on its first bulk copies: up to eight short
 * blocks, one kind each, plain, non-temporal, non-temporal, plain, plain, non-temporal,
 * non-temporal, plain (neither always follows the other; few changes of kind, see below). A block's
 * first SHM_STORES_WARM bytes (the pool) are not timed: the buffers in flight then were filled with
 * the other kind, and a stream's copies wait for them to drain. Before the first block,
 * SHM_STORES_STARTUP more are not timed either: an endpoint's first copies ran 3-8x slower than
 * later ones (pages faulted in, the peer still starting). A block's next SHM_STORES_MEASURE bytes
 * are timed: from the copy that ends the untimed part to the copy that ends the block. In a stream
 * that is the rate the receiver drains the buffers at, in a ping-pong the round trips: both as the
 * application runs them. The best block of each kind decides for the endpoint's life; the best, not
 * the mean, because a block the scheduler preempted or the application paused is only slower (a
 * pause ran a block 10x slow). Plain stores win only by SHM_STORES_PLAIN_NUM / _DEN or more: on the
 * far placement the two kinds' best blocks of 512 KiB came within +-7 % of each other either
 * way. After four blocks (two of each kind) it decides early when the slowest block of one
 * kind is SHM_STORES_FIRST_NUM / _DEN times as fast as the other's fastest or more (the near
 * placement: about 2x), after six (three of each) at SHM_STORES_CLEAR_NUM / _DEN; a closer race
 * takes all eight. The slowest block of a kind is taken from the second block on: the first
 * still runs slow in every run (73-78 us for 512 KiB of plain stores where later plain blocks
 * took 30-36, non-temporal 55-65; non-temporal first, 207-328), and it kept every run from
 * deciding early. Changes of kind cost more than the blocks' rates say: a stream of 16 KiB
 * messages (Open MPI's tag_bw, 1 000 after 100, all eager) ran 15 GB/s with plain stores
 * fixed, 8.6 with non-temporal ones fixed, but 4.4-9.5 while measuring with the kinds
 * alternating N P P N N P P N (stalls of 0.2-1.8 ms inside blocks or between them), 8.6-12.3
 * as P P P P N N N N; the order above with the four-block decision runs it at 11.4-13.3
 * (session 17; 10 alternating rounds of the automatic choice: 16 KiB 7.38 -> 10.89 GB/s, 32
 * KiB 11.31 -> 14.07, 64 KiB unchanged, ob1 13.57, 16.35, 19.99).
 *
 * Cost: one clock reading per bulk copy (8-32 KiB) while calibrating, nothing afterwards. The
 * calibration covers 1 MiB + 8 x (512 KiB + 512 KiB) = 9 MiB of copies, 5 MiB when the kinds
 * differ clearly (it was six blocks of 2.5 MiB, 15 MiB); about half of them use the slower
 * kind. On the far placement that costs ~1 % of a 64 MB Open MPI stream (FERRY_RNDV_MODE=coop,
 * 1000 x 64 KiB: auto 20.9, always non-temporal 21.0, always plain 21.2 GB/s). What costs more
 * is that the rendezvous calibration of tagged messages (src/proto/tag_calib.c) waits for this
 * one (the ep_calibrating slot): this one's length delays that one, whose SPLIT blocks ran
 * 64 KiB at 0.3-0.5x COOP's rate on the far placement. */
#include <stdbool.h>
#include <stdint.h>

#include "core/log.h"
#include "core/time.h"
#include "transport/shm/shm.h"

/* Block order: plain first in the first and third pair, non-temporal first in the second and
 * fourth. */
static const uint8_t shm_stores_order[SHM_STORES_BLOCKS] = {
    SHM_STORES_PLAIN, SHM_STORES_STREAM, SHM_STORES_STREAM, SHM_STORES_PLAIN,
    SHM_STORES_PLAIN, SHM_STORES_STREAM, SHM_STORES_STREAM, SHM_STORES_PLAIN};
/* Blocks after which a very clear difference decides (two of each kind), and how clear: the
 * slowest block of one kind at least NUM / DEN times as fast as the fastest of the other. */
#define SHM_STORES_FIRST_BLOCKS 4u
#define SHM_STORES_FIRST_NUM 3u
#define SHM_STORES_FIRST_DEN 2u
/* The same after three of each kind, less clear. */
#define SHM_STORES_EARLY_BLOCKS 6u
#define SHM_STORES_CLEAR_NUM 5u
#define SHM_STORES_CLEAR_DEN 4u
/* Plain stores win the final verdict only with a best block this much faster than the
 * non-temporal one (NUM / DEN): on the far placement, where the two are within a few percent
 * and short blocks are noisy, a wrong plain costs 5-10 %; on the near one plain is ~2x. */
#define SHM_STORES_PLAIN_NUM 110u
#define SHM_STORES_PLAIN_DEN 100u

/* The threshold of a kind: non-temporal from the configured size, plain never. */
static uint64_t shm_stores_min_of(const fy_tl_worker_t *tlw, unsigned kind)
{
    return kind == SHM_STORES_PLAIN ? UINT64_MAX : tlw->stream_min;
}

/* Whether block a's rate is above num / den times block b's (fractions compared exactly). */
static bool shm_stores_rate_above(const shm_stores_t *s, unsigned a, unsigned b, unsigned num,
                                  unsigned den)
{
    return fy_rate_above(s->block_bytes[a], s->block_ns[a], s->block_bytes[b], s->block_ns[b], num,
                         den);
}

/* The fastest (fastest true) or slowest measured block of a kind among blocks from .. count - 1. */
static unsigned shm_stores_extreme(const shm_stores_t *s, unsigned kind, unsigned from,
                                   unsigned count, bool fastest)
{
    unsigned pick = SHM_STORES_BLOCKS;
    for (unsigned b = from; b < count; b++) {
        if (shm_stores_order[b] != kind)
            continue;
        if (pick == SHM_STORES_BLOCKS || shm_stores_rate_above(s, b, pick, 1, 1) == fastest)
            pick = b;
    }
    return pick;
}

void shm_stores_init(fy_tl_ep_t *tlep)
{
    shm_stores_t *s = &tlep->stores;
    const fy_tl_worker_t *tlw = tlep->tlw;
    *s = (shm_stores_t){.stream_min = tlw->stream_min};
    if (!tlw->stores_auto)
        return;
    s->calibrating = true;
    s->warm = SHM_STORES_STARTUP + SHM_STORES_WARM;
    s->stream_min = shm_stores_min_of(tlw, shm_stores_order[0]);
}

static void shm_stores_decide(fy_tl_ep_t *tlep, unsigned kind)
{
    shm_stores_t *s = &tlep->stores;
    uint32_t mbps[2];
    for (unsigned k = 0; k < 2; k++) {
        unsigned b = shm_stores_extreme(s, k, 0, s->block, true);
        mbps[k] = (uint32_t)(s->block_bytes[b] * 1000 / s->block_ns[b]);
    }
    for (unsigned b = 0; b < s->block; b++)
        fy_debug("shm: store calibration to pid %u: block %u (%s) %llu bytes in %llu ns",
                 tlep->peer_pid, b,
                 shm_stores_order[b] == SHM_STORES_PLAIN ? "plain" : "non-temporal",
                 (unsigned long long)s->block_bytes[b], (unsigned long long)s->block_ns[b]);
    s->calibrating = false;
    s->kind = (uint8_t)kind;
    s->rate_mbps = mbps[kind];
    s->stream_min = shm_stores_min_of(tlep->tlw, kind);
    fy_info("shm: copies into the bulk buffers of pid %u use %s stores (calibrated on the "
            "traffic, %u blocks: best non-temporal %u.%03u GB/s, plain %u.%03u GB/s)",
            tlep->peer_pid, kind == SHM_STORES_PLAIN ? "plain" : "non-temporal", s->block,
            mbps[SHM_STORES_STREAM] / 1000, mbps[SHM_STORES_STREAM] % 1000,
            mbps[SHM_STORES_PLAIN] / 1000, mbps[SHM_STORES_PLAIN] % 1000);
}

/* After a block: the kind decided, or SHM_STORES_BLOCKS to measure on. After the last block, the
 * faster best block; after SHM_STORES_FIRST_BLOCKS and SHM_STORES_EARLY_BLOCKS, a kind whose
 * slowest block from the second on beats the other's fastest clearly (a pause or preemption only
 * slows a block, so it can delay this decision but not make it). A tie or a plain lead under
 * SHM_STORES_PLAIN_NUM / _DEN: non-temporal. */
static unsigned shm_stores_verdict(const shm_stores_t *s)
{
    const unsigned p = SHM_STORES_PLAIN, n = SHM_STORES_STREAM;
    if (s->block == SHM_STORES_BLOCKS)
        return shm_stores_rate_above(s, shm_stores_extreme(s, p, 0, s->block, true),
                                     shm_stores_extreme(s, n, 0, s->block, true),
                                     SHM_STORES_PLAIN_NUM, SHM_STORES_PLAIN_DEN)
                   ? p
                   : n;
    if (s->block != SHM_STORES_FIRST_BLOCKS && s->block != SHM_STORES_EARLY_BLOCKS)
        return SHM_STORES_BLOCKS;
    bool first = s->block == SHM_STORES_FIRST_BLOCKS;
    for (unsigned k = 0; k < 2; k++)
        if (shm_stores_rate_above(s, shm_stores_extreme(s, k, 1, s->block, false),
                                  shm_stores_extreme(s, 1 - k, 0, s->block, true),
                                  first ? SHM_STORES_FIRST_NUM : SHM_STORES_CLEAR_NUM,
                                  first ? SHM_STORES_FIRST_DEN : SHM_STORES_CLEAR_DEN))
            return k;
    return SHM_STORES_BLOCKS;
}

void shm_stores_count(fy_tl_ep_t *tlep, size_t bytes)
{
    shm_stores_t *s = &tlep->stores;
    s->bytes += bytes;
    if (s->bytes < s->warm)
        return;
    uint64_t now = fy_time_now_ns();
    if (s->start_ns == 0) {
        s->start_ns = now;
        s->start_bytes = s->bytes;
        return;
    }
    uint64_t measured = s->bytes - s->start_bytes;
    if (measured < SHM_STORES_MEASURE)
        return;
    s->block_bytes[s->block] = measured;
    s->block_ns[s->block] = now > s->start_ns ? now - s->start_ns : 1;
    s->bytes = 0;
    s->start_ns = 0;
    s->block++;
    unsigned kind = shm_stores_verdict(s);
    if (kind != SHM_STORES_BLOCKS) {
        shm_stores_decide(tlep, kind);
        return;
    }
    s->warm = SHM_STORES_WARM;
    s->stream_min = shm_stores_min_of(tlep->tlw, shm_stores_order[s->block]);
}
