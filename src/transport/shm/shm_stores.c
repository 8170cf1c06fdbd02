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
 * the threshold, each endpoint measures both kinds on its first bulk copies: six blocks, one
 * kind each, non-temporal, plain, plain, non-temporal, non-temporal, plain (neither always
 * follows the other). A block's first SHM_STORES_WARM bytes are not timed (the buffers in
 * flight then were filled with the other kind); its next SHM_STORES_MEASURE bytes are: the time
 * from the copy that ends the warm part to the copy that ends the block. In a stream that is
 * the rate the receiver drains the buffers at, in a ping-pong the round trips: both as the
 * application runs them. The best block of each kind decides for the endpoint's life; the best,
 * not the mean, because a block the scheduler preempted or the application paused is only
 * slower. Cost: one clock reading per bulk copy (8-32 KiB) while calibrating (about 15 MiB),
 * nothing afterwards. */
#include <stdbool.h>
#include <stdint.h>

#include "core/log.h"
#include "core/time.h"
#include "transport/shm/shm.h"

/* Block order: non-temporal first in the first and third pair, plain first in the second. */
static const uint8_t shm_stores_order[SHM_STORES_BLOCKS] = {SHM_STORES_STREAM, SHM_STORES_PLAIN,
                                                            SHM_STORES_PLAIN,  SHM_STORES_STREAM,
                                                            SHM_STORES_STREAM, SHM_STORES_PLAIN};

/* The threshold of a kind: non-temporal from the configured size, plain never. */
static uint64_t shm_stores_min_of(const fy_tl_worker_t *tlw, unsigned kind)
{
    return kind == SHM_STORES_PLAIN ? UINT64_MAX : tlw->stream_min;
}

/* Whether a_bytes in a_ns is a higher rate than b_bytes in b_ns (fractions compared exactly). */
static bool shm_stores_rate_above(uint64_t a_bytes, uint64_t a_ns, uint64_t b_bytes, uint64_t b_ns)
{
    return (unsigned __int128)a_bytes * b_ns > (unsigned __int128)b_bytes * a_ns;
}

void shm_stores_init(fy_tl_ep_t *tlep)
{
    shm_stores_t *s = &tlep->stores;
    const fy_tl_worker_t *tlw = tlep->tlw;
    *s = (shm_stores_t){.stream_min = tlw->stream_min};
    if (!tlw->stores_auto)
        return;
    s->calibrating = true;
    s->stream_min = shm_stores_min_of(tlw, shm_stores_order[0]);
}

static void shm_stores_decide(fy_tl_ep_t *tlep)
{
    shm_stores_t *s = &tlep->stores;
    /* bytes over ns, compared as fractions: best_bytes[k] / best_ns[k] */
    unsigned kind = SHM_STORES_STREAM; /* a tie or no figure: non-temporal, as before */
    if (s->best_ns[SHM_STORES_PLAIN] != 0 &&
        (s->best_ns[SHM_STORES_STREAM] == 0 ||
         shm_stores_rate_above(s->best_bytes[SHM_STORES_PLAIN], s->best_ns[SHM_STORES_PLAIN],
                               s->best_bytes[SHM_STORES_STREAM], s->best_ns[SHM_STORES_STREAM])))
        kind = SHM_STORES_PLAIN;
    uint32_t mbps[2];
    for (unsigned k = 0; k < 2; k++)
        mbps[k] = s->best_ns[k] != 0 ? (uint32_t)(s->best_bytes[k] * 1000 / s->best_ns[k]) : 0;
    s->calibrating = false;
    s->kind = (uint8_t)kind;
    s->stream_min = shm_stores_min_of(tlep->tlw, kind);
    fy_info("shm: copies into the bulk buffers of pid %u use %s stores (calibrated on the "
            "traffic: best block non-temporal %u.%03u GB/s, plain %u.%03u GB/s)",
            tlep->peer_pid, kind == SHM_STORES_PLAIN ? "plain" : "non-temporal",
            mbps[SHM_STORES_STREAM] / 1000, mbps[SHM_STORES_STREAM] % 1000,
            mbps[SHM_STORES_PLAIN] / 1000, mbps[SHM_STORES_PLAIN] % 1000);
}

void shm_stores_count(fy_tl_ep_t *tlep, size_t bytes)
{
    shm_stores_t *s = &tlep->stores;
    s->bytes += bytes;
    if (s->bytes < SHM_STORES_WARM)
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
    unsigned kind = shm_stores_order[s->block];
    uint64_t ns = now > s->start_ns ? now - s->start_ns : 1;
    if (s->best_ns[kind] == 0 ||
        shm_stores_rate_above(measured, ns, s->best_bytes[kind], s->best_ns[kind])) {
        s->best_bytes[kind] = measured;
        s->best_ns[kind] = ns;
    }
    s->bytes = 0;
    s->start_ns = 0;
    if (++s->block == SHM_STORES_BLOCKS) {
        shm_stores_decide(tlep);
        return;
    }
    s->stream_min = shm_stores_min_of(tlep->tlw, shm_stores_order[s->block]);
}
