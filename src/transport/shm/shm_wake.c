/* How shm wakes a sleeping peer without a fence on every message (docs/ARCHITECTURE.md,
 * "Progress: fast when busy, asleep when idle").
 *
 * Two Dekker-style handshakes decide whether a peer that went to sleep is woken:
 *   - a sender publishes a cell, then reads the receiver's `armed`; a receiver going to sleep
 *     stores `armed`, then reads its rings;
 *   - a receiver frees cells, then reads `waiters` and `sender_waiting`; a sender going to sleep
 *     for room stores `sender_waiting`, then looks for room.
 * Each needs a store-load barrier on both sides. On the side that runs for every message (the
 * publish, the free) that barrier is the costly one: it waits for the store, which must first
 * take the cell's cache line from the other core (~60 ns here, the whole of a cache-line
 * transfer, on the path of every message: ferry_perf's 8 B tag_lat 0.211 -> 0.181 us and
 * am_lat 0.201 -> 0.164 us without them, same session). The side going to sleep runs rarely and
 * may pay more. So, where the kernel has membarrier(2), every worker registers for
 * MEMBARRIER_CMD_GLOBAL_EXPEDITED, and one that goes to sleep issues that barrier between its
 * stores and its loads: the kernel makes every CPU that runs a registered process execute a full
 * barrier before the call returns. The
 * per-message side then needs no fence instruction, only a compiler barrier: either its load
 * came after the sleeper's barrier (and sees the sleeper's store), or its store was made
 * visible by that barrier (and the sleeper's loads after it see the store).
 *
 * Both peers must take part: the handshake says whether a worker registered and issues the
 * barrier when it sleeps (SHM_HANDSHAKE_MEMBARRIER). An endpoint publishes without a fence only
 * when both did (fy_tl_ep_t.tx_fence_free), and a worker frees without a fence only while every
 * peer it accepted did (fy_tl_worker_t.fenced_frees stays set after the first that did not).
 * FERRY_SHM_MEMBARRIER=off keeps the fences (both handshakes sequentially consistent).
 *
 * Cost: the barrier, once per sleep, 0.14 us here when no other registered process runs and
 * ~15 us when one does (an inter-processor interrupt to a vCPU), paid before sleeping, when the
 * worker had nothing to do for FERRY_WAIT_SPIN_US. */
#include <errno.h>
#include <linux/membarrier.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/log.h"
#include "transport/shm/shm.h"

static int shm_membarrier(int cmd)
{
    return (int)syscall(__NR_membarrier, cmd, 0, 0);
}

bool shm_wake_register(void)
{
    const char *call = "MEMBARRIER_CMD_QUERY";
    int commands = shm_membarrier(MEMBARRIER_CMD_QUERY);
    int needed = MEMBARRIER_CMD_GLOBAL_EXPEDITED | MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED;
    if (commands >= 0 && (commands & needed) != needed) {
        fy_info("shm: the kernel's membarrier(2) lacks MEMBARRIER_CMD_GLOBAL_EXPEDITED "
                "(commands 0x%x): sends and receives fence (about 30 ns a message)",
                (unsigned)commands);
        return false;
    }
    if (commands >= 0) {
        call = "MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED";
        if (shm_membarrier(MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED) == 0)
            return true;
    }
    fy_info("shm: membarrier(%s) failed: %s: sends and receives fence (about 30 ns a message)",
            call, strerror(errno));
    return false;
}

static fy_log_limit_t shm_wake_barrier_log_limit;

bool shm_wake_barrier(void)
{
    if (shm_membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED) == 0)
        return true;
    fy_warn_limited(&shm_wake_barrier_log_limit,
                    "shm: membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED) failed: %s; the worker "
                    "keeps polling instead of sleeping",
                    strerror(errno));
    return false;
}
