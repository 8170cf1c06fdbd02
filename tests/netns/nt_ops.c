/* nt_ops: every operation of the API between two ranks (on two hosts of the test bed: over
 * tcp), both directions at once, every byte checked.
 *   1. active messages of 0 .. 16 MiB (header + payload, iov payloads)
 *   2. tagged messages: eager and rendezvous up to 16 MiB, expected and unexpected (found by
 *      ferry_tag_probe first), iov on both sides, truncation (eager and rendezvous)
 *   3. put/get and putv/getv on registered memory, then checked by the owner and read back;
 *      an access outside the region is refused and the endpoint stays usable
 *   4. atomics (4 and 8 bytes: add, and, or, xor, swap, cswap, fetch-add from many operations
 *      in flight), a fence ordering puts and atomics, ferry_ep_flush and ferry_worker_flush
 * Usage: nt_ops (2 ranks through the bootstrap environment or mpirun). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ft_check.h"
#include "ft_pattern.h"
#include "ft_progress.h"
#include "ft_rma.h"
#include "nt_job.h"

#define NT_TIMEOUT_MS 60000
#define NT_AM_ID 7
#define NT_REGION (4u << 20)
#define NT_ATOMIC_REGION 65536u
#define NT_FETCH_ADDS 1000u
#define NT_KEY_MAX 512

static nt_job_t job;
static unsigned peer;

/* ---------------------------------------------------------------- active messages */

static const size_t am_sizes[] = {
    0, 1, 7, 64, 255, 4095, 4096, 4097, 65536, 65537, (1u << 20), (1u << 20) + 3, 16u << 20};
#define AM_COUNT (sizeof(am_sizes) / sizeof(am_sizes[0]))

typedef struct am_header {
    uint32_t sender;
    uint32_t seq;
    uint64_t size;
} am_header_t;

static uint64_t am_received;

static ferry_status_t am_handler(void *arg, const void *header, size_t header_length, void *data,
                                 size_t length, const ferry_am_recv_params_t *params)
{
    am_header_t h;
    (void)arg;
    (void)params;
    FT_CHECK(header_length == sizeof(h), "AM header of %zu bytes", header_length);
    memcpy(&h, header, sizeof(h));
    FT_CHECK(h.sender == peer, "AM from rank %u, expected %u", h.sender, peer);
    FT_CHECK(h.seq == am_received, "AM %u arrived as number %llu (out of order)", h.seq,
             (unsigned long long)am_received);
    FT_CHECK(length == h.size && length == am_sizes[h.seq % AM_COUNT], "AM %u: %zu bytes", h.seq,
             length);
    ft_pattern_check(data, length, ft_pattern_seed(h.sender, h.seq, h.size), 0, "AM payload");
    am_received++;
    return FERRY_OK;
}

static void test_am(void)
{
    FT_CHECK_OK(ferry_am_set_handler(job.worker, NT_AM_ID, am_handler, NULL));
    nt_job_barrier(&job);
    uint64_t t0 = ft_now_ns();
    /* two rounds: contiguous payloads, then each payload in three pieces */
    uint8_t *bufs[AM_COUNT];
    ferry_completion_t comp = {0};
    for (unsigned round = 0; round < 2; round++) {
        for (unsigned i = 0; i < AM_COUNT; i++) {
            unsigned seq = round * AM_COUNT + i;
            size_t size = am_sizes[i];
            bufs[i] = malloc(size + 1);
            ft_pattern_fill(bufs[i], size, ft_pattern_seed(job.rank, seq, size), 0);
            am_header_t h = {.sender = job.rank, .seq = seq, .size = size};
            ferry_iov_t iov[3] = {{bufs[i], size / 3},
                                  {bufs[i] + size / 3, size / 3},
                                  {bufs[i] + 2 * (size / 3), size - 2 * (size / 3)}};
            ferry_iov_t one = {bufs[i], size};
            ferry_status_t s = round == 0 ? nt_am_send(&job, peer, NT_AM_ID, &h, sizeof(h), &one,
                                                       size ? 1 : 0, &comp, NT_TIMEOUT_MS)
                                          : nt_am_send(&job, peer, NT_AM_ID, &h, sizeof(h), iov, 3,
                                                       &comp, NT_TIMEOUT_MS);
            FT_CHECK(s == FERRY_OK || s == FERRY_INPROGRESS, "AM %u of %zu bytes: %s", seq, size,
                     ferry_status_name(s));
        }
        nt_wait_completion(&job, &comp, NT_TIMEOUT_MS, "local completion of the AMs");
        FT_CHECK_OK(comp.status);
        for (unsigned i = 0; i < AM_COUNT; i++)
            free(bufs[i]);
    }
    ft_progress_until_count(job.worker, NT_TIMEOUT_MS, &am_received, 2 * AM_COUNT,
                            "the peer's active messages");
    ft_note("AM: %zu messages of 0 .. 16 MiB each way in %.0f ms", 2 * AM_COUNT, nt_ms_since(t0));
    nt_job_barrier(&job);
}

/* ---------------------------------------------------------------- tagged messages */

static const size_t tag_sizes[] = {0,    1,    100,   4000,           4080,
                                   4096, 4097, 65536, (1u << 20) + 5, 16u << 20};
#define TAG_COUNT (sizeof(tag_sizes) / sizeof(tag_sizes[0]))
#define TAG_BASE 0x7a00000000000000ull
#define TAG_ALL ~0ull

static uint64_t tag_of(unsigned sender, unsigned set, unsigned i)
{
    return TAG_BASE | ((uint64_t)sender << 32) | ((uint64_t)set << 16) | i;
}

/* One receive per size from the peer (set), in buffers with a guard byte after the end. */
typedef struct tag_recvs {
    uint8_t *buf[TAG_COUNT];
    ferry_tag_info_t info[TAG_COUNT];
    ferry_completion_t comp[TAG_COUNT];
} tag_recvs_t;

static void tag_recv_post(tag_recvs_t *r, unsigned set, unsigned i, int expect_now)
{
    size_t size = tag_sizes[i];
    r->buf[i] = malloc(size + 1);
    r->buf[i][size] = 0xee;
    /* the receive side gathers into two pieces split elsewhere than the sender's */
    ferry_iov_t iov[2] = {{r->buf[i], size / 5}, {r->buf[i] + size / 5, size - size / 5}};
    r->comp[i] = (ferry_completion_t){.count = 1};
    ferry_status_t s =
        ferry_tag_recv(job.worker, iov, 2, tag_of(peer, set, i), TAG_ALL, &r->info[i], &r->comp[i]);
    if (s == FERRY_OK)
        r->comp[i].count = 0;
    FT_CHECK(s == FERRY_OK || s == FERRY_INPROGRESS, "tag recv %u/%u: %s", set, i,
             ferry_status_name(s));
    FT_CHECK(!expect_now || s == FERRY_OK || tag_sizes[i] > 4000,
             "eager message %u/%u was probed but not delivered at once (%s)", set, i,
             ferry_status_name(s));
}

static void tag_recv_check(tag_recvs_t *r, unsigned set)
{
    for (unsigned i = 0; i < TAG_COUNT; i++) {
        size_t size = tag_sizes[i];
        nt_wait_completion(&job, &r->comp[i], NT_TIMEOUT_MS, "a tagged receive");
        FT_CHECK_OK(r->comp[i].status);
        FT_CHECK(r->info[i].length == size, "tag %u/%u: length %zu, expected %zu", set, i,
                 r->info[i].length, size);
        FT_CHECK(r->info[i].tag == tag_of(peer, set, i), "tag %u/%u: tag %llx", set, i,
                 (unsigned long long)r->info[i].tag);
        ft_pattern_check(r->buf[i], size, ft_pattern_seed(peer, set * 100 + i, size), 0,
                         "tagged message");
        FT_CHECK(r->buf[i][size] == 0xee, "tag %u/%u: byte past the end written", set, i);
        free(r->buf[i]);
    }
}

static void tag_send_all(unsigned set, uint8_t **bufs, ferry_completion_t *comp)
{
    for (unsigned i = 0; i < TAG_COUNT; i++) {
        size_t size = tag_sizes[i];
        bufs[i] = malloc(size + 1);
        ft_pattern_fill(bufs[i], size, ft_pattern_seed(job.rank, set * 100 + i, size), 0);
        ferry_iov_t iov[3] = {{bufs[i], size / 2},
                              {bufs[i] + size / 2, size / 4},
                              {bufs[i] + size / 2 + size / 4, size - size / 2 - size / 4}};
        ferry_status_t s =
            nt_tag_send(&job, peer, iov, 3, tag_of(job.rank, set, i), comp, NT_TIMEOUT_MS);
        FT_CHECK(s == FERRY_OK || s == FERRY_INPROGRESS, "tag send %u/%u of %zu bytes: %s", set, i,
                 size, ferry_status_name(s));
    }
}

static void tag_sends_wait(uint8_t **bufs, ferry_completion_t *comp)
{
    nt_wait_completion(&job, comp, NT_TIMEOUT_MS, "the tagged sends");
    FT_CHECK_OK(comp->status);
    for (unsigned i = 0; i < TAG_COUNT; i++)
        free(bufs[i]);
}

typedef struct probe_arg {
    uint64_t tag;
    ferry_tag_info_t info;
} probe_arg_t;

static bool probe_found(void *arg)
{
    probe_arg_t *p = arg;
    return ferry_tag_probe(job.worker, p->tag, TAG_ALL, 0, &p->info, NULL) == FERRY_OK;
}

static void test_tag_truncation(void)
{
    /* eager (1000 into 500) and rendezvous (1 MiB into 64 KiB): the first bytes arrive, nothing
     * past the buffer is written, the real length is reported, the next message is fine */
    static const size_t lens[2][2] = {{1000, 500}, {1u << 20, 65536}};
    for (unsigned k = 0; k < 2; k++) {
        size_t len = lens[k][0], cap = lens[k][1];
        uint8_t *out = malloc(len), *in = malloc(cap + 1);
        in[cap] = 0xee;
        ft_pattern_fill(out, len, ft_pattern_seed(job.rank, 900 + k, len), 0);
        ferry_tag_info_t info;
        ferry_completion_t rc = {.count = 1}, sc = {0};
        ferry_iov_t riov = {in, cap}, siov = {out, len};
        ferry_status_t s =
            ferry_tag_recv(job.worker, &riov, 1, tag_of(peer, 9, k), TAG_ALL, &info, &rc);
        FT_CHECK(s == FERRY_INPROGRESS, "posting a receive: %s", ferry_status_name(s));
        nt_job_barrier(&job);
        s = nt_tag_send(&job, peer, &siov, 1, tag_of(job.rank, 9, k), &sc, NT_TIMEOUT_MS);
        FT_CHECK(s == FERRY_OK || s == FERRY_INPROGRESS, "tag send: %s", ferry_status_name(s));
        nt_wait_completion(&job, &rc, NT_TIMEOUT_MS, "the truncated receive");
        FT_CHECK(rc.status == FERRY_ERR_MESSAGE_TRUNCATED, "truncated receive of %zu into %zu: %s",
                 len, cap, ferry_status_name(rc.status));
        FT_CHECK(info.length == len, "truncated: info length %zu, expected %zu", info.length, len);
        ft_pattern_check(in, cap, ft_pattern_seed(peer, 900 + k, len), 0, "truncated message");
        FT_CHECK(in[cap] == 0xee, "a truncated receive wrote past its buffer");
        nt_wait_completion(&job, &sc, NT_TIMEOUT_MS, "the send of the truncated message");
        FT_CHECK(sc.status == FERRY_OK || sc.status == FERRY_ERR_MESSAGE_TRUNCATED,
                 "send of a message truncated at the receiver: %s", ferry_status_name(sc.status));
        free(out);
        free(in);
    }
}

static void test_tag(void)
{
    uint8_t *bufs[TAG_COUNT];
    ferry_completion_t sc = {0};
    tag_recvs_t *r = calloc(1, sizeof(*r));
    uint64_t t0 = ft_now_ns();

    /* set 1: expected (receives posted before the peer sends) */
    for (unsigned i = 0; i < TAG_COUNT; i++)
        tag_recv_post(r, 1, i, 0);
    nt_job_barrier(&job);
    tag_send_all(1, bufs, &sc);
    tag_recv_check(r, 1);
    tag_sends_wait(bufs, &sc);
    nt_job_barrier(&job);

    /* set 2: unexpected (sent first; each found by a probe before its receive is posted) */
    tag_send_all(2, bufs, &sc);
    for (unsigned i = 0; i < TAG_COUNT; i++) {
        probe_arg_t p = {.tag = tag_of(peer, 2, i)};
        ft_progress_until(job.worker, NT_TIMEOUT_MS, probe_found, &p, "an unexpected message");
        FT_CHECK(p.info.length == tag_sizes[i], "probe: length %zu, expected %zu", p.info.length,
                 tag_sizes[i]);
        tag_recv_post(r, 2, i, 1);
    }
    tag_recv_check(r, 2);
    tag_sends_wait(bufs, &sc);
    nt_job_barrier(&job);

    test_tag_truncation();
    nt_job_barrier(&job);
    ft_note("tag: %zu sizes x 2 sets each way, and truncation, in %.0f ms", TAG_COUNT,
            nt_ms_since(t0));
    free(r);
}

/* ---------------------------------------------------------------- one-sided */

typedef struct key_card {
    uint32_t length[2];
    uint8_t key[2][NT_KEY_MAX];
} key_card_t;

static uint8_t *region;        /* NT_REGION bytes, registered: peers put and get here */
static uint8_t *atomic_region; /* NT_ATOMIC_REGION bytes, ferry_mem_alloc */
static ferry_mem_t *region_mem, *atomic_mem;
static ferry_rkey_t *peer_region, *peer_atomic;

static const struct {
    uint64_t offset;
    size_t length;
} put_ranges[] = {{0, 1},
                  {8, 8},
                  {100, 100},
                  {4096, 4096},
                  {12345, 65537},
                  {1u << 20, (1u << 20) + 7},
                  {3u << 20, 512u << 10}};
#define PUT_COUNT (sizeof(put_ranges) / sizeof(put_ranges[0]))
#define PUTV_BASE ((7u << 20) / 2) /* after the last put range, 3 MiB + 512 KiB */

static void rma_setup(void)
{
    region = aligned_alloc(4096, NT_REGION);
    FT_CHECK(region != NULL, "out of memory");
    memset(region, 0, NT_REGION);
    ferry_iov_t iov = {region, NT_REGION};
    FT_CHECK_OK(ferry_mem_register(job.context, &iov, 1, FERRY_ACCESS_ALL, 0, &region_mem));
    FT_CHECK_OK(ferry_mem_alloc(job.context, NT_ATOMIC_REGION, FERRY_ACCESS_ALL, &atomic_mem,
                                (void **)&atomic_region));

    key_card_t *mine = calloc(1, sizeof(*mine));
    key_card_t *all = calloc(job.size, sizeof(*all));
    ferry_mem_t *mems[2] = {region_mem, atomic_mem};
    for (unsigned k = 0; k < 2; k++) {
        void *buf;
        size_t len;
        FT_CHECK_OK(ferry_rkey_pack(mems[k], &buf, &len));
        FT_CHECK(len <= NT_KEY_MAX, "packed key of %zu bytes", len);
        mine->length[k] = (uint32_t)len;
        memcpy(mine->key[k], buf, len);
        ferry_rkey_buffer_release(buf);
    }
    nt_job_allgather(&job, mine, sizeof(*mine), all);
    ferry_ep_t *ep = job.peers[peer].ep;
    FT_CHECK_OK(ferry_rkey_unpack(ep, all[peer].key[0], all[peer].length[0], &peer_region));
    FT_CHECK_OK(ferry_rkey_unpack(ep, all[peer].key[1], all[peer].length[1], &peer_atomic));
    void *ptr;
    if (!job.peers[peer].same_host) /* memory on another host cannot be mapped */
        FT_CHECK_STATUS(ferry_rkey_ptr(peer_atomic, 0, &ptr), FERRY_ERR_UNSUPPORTED);
    free(mine);
    free(all);
}

static void flush_ep(const char *what)
{
    ferry_completion_t c = {.count = 1};
    ferry_status_t s = ferry_ep_flush(job.peers[peer].ep, &c);
    if (s == FERRY_OK)
        return;
    FT_CHECK(s == FERRY_INPROGRESS, "ferry_ep_flush: %s", ferry_status_name(s));
    nt_wait_completion(&job, &c, NT_TIMEOUT_MS, what);
    FT_CHECK_OK(c.status);
}

/* Start a one-sided operation on peer_rkey: retried (with progress) while it finds no
 * resource (ft_rma_start); it must start, and c counts it while it is in flight. */
static void started(ferry_ep_t *ep, ferry_rkey_t *rkey, ft_rma_op_t op, ferry_completion_t *c,
                    const char *what)
{
    ferry_status_t s = ft_rma_start(job.worker, ep, rkey, &op, c, NT_TIMEOUT_MS);
    FT_CHECK(s == FERRY_OK || s == FERRY_INPROGRESS, "%s: %s", what, ferry_status_name(s));
}

static void test_put_get(void)
{
    ferry_ep_t *ep = job.peers[peer].ep;
    uint64_t t0 = ft_now_ns();
    uint8_t *src[PUT_COUNT];
    ferry_completion_t c = {0};
    for (unsigned i = 0; i < PUT_COUNT; i++) {
        src[i] = malloc(put_ranges[i].length);
        ft_pattern_fill(src[i], put_ranges[i].length,
                        ft_pattern_seed(job.rank, 300 + i, put_ranges[i].length), 0);
        started(ep, peer_region, ft_rma_put(src[i], put_ranges[i].length, put_ranges[i].offset), &c,
                "ferry_put");
    }
    /* putv: 4 local pieces onto 2 remote ranges */
    size_t pl[4] = {1000, 7, 70000, 3000};
    uint8_t *vsrc = malloc(74007);
    ft_pattern_fill(vsrc, 74007, ft_pattern_seed(job.rank, 400, 74007), 0);
    ferry_iov_t liov[4] = {
        {vsrc, pl[0]}, {vsrc + 1000, pl[1]}, {vsrc + 1007, pl[2]}, {vsrc + 71007, pl[3]}};
    ferry_remote_iov_t riov[2] = {{PUTV_BASE, 20000}, {PUTV_BASE + 40000, 54007}};
    started(ep, peer_region, ft_rma_putv(liov, 4, riov, 2), &c, "ferry_putv");
    nt_wait_completion(&job, &c, NT_TIMEOUT_MS, "local completion of the puts");
    FT_CHECK_OK(c.status);
    flush_ep("ferry_ep_flush after the puts");
    nt_job_barrier(&job);

    /* the owner sees what the peer put, where it put it, and nothing else changed */
    for (unsigned i = 0; i < PUT_COUNT; i++)
        ft_pattern_check(region + put_ranges[i].offset, put_ranges[i].length,
                         ft_pattern_seed(peer, 300 + i, put_ranges[i].length), 0,
                         "the peer's put, in the owner's memory");
    uint64_t seed = ft_pattern_seed(peer, 400, 74007);
    ft_pattern_check(region + PUTV_BASE, 20000, seed, 0, "putv range 1 in the owner's memory");
    ft_pattern_check(region + PUTV_BASE + 40000, 54007, seed, 20000, "putv range 2");
    for (size_t o = PUTV_BASE + 20000; o < PUTV_BASE + 40000; o++)
        FT_CHECK(region[o] == 0, "putv wrote between its ranges at %zu", o);
    for (size_t o = 16; o < 100; o++)
        FT_CHECK(region[o] == 0, "byte %zu written by no put changed", o);

    /* read it all back with get and getv */
    for (unsigned i = 0; i < PUT_COUNT; i++) {
        memset(src[i], 0, put_ranges[i].length);
        started(ep, peer_region, ft_rma_get(src[i], put_ranges[i].length, put_ranges[i].offset), &c,
                "ferry_get");
    }
    memset(vsrc, 0, 74007);
    ferry_iov_t giov[3] = {{vsrc, 5}, {vsrc + 5, 60000}, {vsrc + 60005, 14002}};
    started(ep, peer_region, ft_rma_getv(giov, 3, riov, 2), &c, "ferry_getv");
    nt_wait_completion(&job, &c, NT_TIMEOUT_MS, "the gets");
    FT_CHECK_OK(c.status);
    for (unsigned i = 0; i < PUT_COUNT; i++) {
        ft_pattern_check(src[i], put_ranges[i].length,
                         ft_pattern_seed(job.rank, 300 + i, put_ranges[i].length), 0,
                         "get of what this rank put");
        free(src[i]);
    }
    ft_pattern_check(vsrc, 74007, ft_pattern_seed(job.rank, 400, 74007), 0, "getv");
    free(vsrc);

    /* outside the region: refused (at once or at completion), nothing written, ep usable */
    uint64_t word = 0x1122334455667788ull;
    ferry_completion_t bad = {0};
    ft_rma_op_t past = ft_rma_put(&word, 8, NT_REGION - 4);
    ferry_status_t s = ft_rma_start(job.worker, ep, peer_region, &past, &bad, NT_TIMEOUT_MS);
    if (s == FERRY_INPROGRESS) {
        nt_wait_completion(&job, &bad, NT_TIMEOUT_MS, "the refused put");
        s = bad.status;
    }
    FT_CHECK(s == FERRY_ERR_ACCESS, "a put past the region's end: %s, expected FERRY_ERR_ACCESS",
             ferry_status_name(s));
    FT_CHECK(job.peers[peer].error_calls == 0, "the refused put failed the endpoint");
    nt_job_barrier(&job);
    for (size_t o = NT_REGION - 4; o < NT_REGION; o++)
        FT_CHECK(region[o] == 0, "a refused put wrote byte %zu", o);
    ft_note("put/get/putv/getv and a refused put in %.0f ms", nt_ms_since(t0));
}

enum {
    OFF_FADD = 0,   /* u64: NT_FETCH_ADDS fetch-adds of 1 */
    OFF_ADD32 = 8,  /* u32: NT_FETCH_ADDS posted adds of 3 */
    OFF_BITS = 16,  /* u64: or, and, xor, fenced */
    OFF_SWAP = 24,  /* u64: swap twice */
    OFF_CSWAP = 32, /* u64: cswap that succeeds, then one that fails */
    OFF_CSWAP32 = 40,
    OFF_FENCE = 64, /* u64: 100 fenced puts, last value wins */
    OFF_PUTADD = 72 /* u64: put 1000, fence, fetch-add 1 returns 1000 */
};

static uint64_t fetch(ferry_atomic_op_t op, uint64_t value, uint64_t compare, size_t size,
                      uint64_t offset)
{
    uint64_t result = ~0ull;
    ferry_completion_t c = {0};
    started(job.peers[peer].ep, peer_atomic,
            ft_rma_fetch(op, value, compare, size, offset, &result), &c, "ferry_atomic_fetch");
    nt_wait_completion(&job, &c, NT_TIMEOUT_MS, "an atomic fetch");
    FT_CHECK_OK(c.status);
    return result;
}

static void post(ferry_atomic_op_t op, uint64_t value, size_t size, uint64_t offset,
                 ferry_completion_t *c)
{
    started(job.peers[peer].ep, peer_atomic, ft_rma_post(op, value, size, offset), c,
            "ferry_atomic_post");
}

static void test_atomics(void)
{
    ferry_ep_t *ep = job.peers[peer].ep;
    uint64_t t0 = ft_now_ns();
    ferry_completion_t c = {0};

    /* many fetch-adds in flight: the old values are exactly 0 .. N-1 */
    uint64_t *results = malloc(NT_FETCH_ADDS * sizeof(*results));
    for (unsigned i = 0; i < NT_FETCH_ADDS; i++)
        started(ep, peer_atomic, ft_rma_fetch(FERRY_ATOMIC_ADD, 1, 0, 8, OFF_FADD, &results[i]), &c,
                "fetch-add");
    for (unsigned i = 0; i < NT_FETCH_ADDS; i++)
        post(FERRY_ATOMIC_ADD, 3, 4, OFF_ADD32, &c);
    nt_wait_completion(&job, &c, NT_TIMEOUT_MS, "the fetch-adds and adds");
    FT_CHECK_OK(c.status);
    uint8_t *seen = calloc(NT_FETCH_ADDS, 1);
    for (unsigned i = 0; i < NT_FETCH_ADDS; i++) {
        FT_CHECK(results[i] < NT_FETCH_ADDS && !seen[results[i]],
                 "fetch-add %u returned %llu (out of range or twice)", i,
                 (unsigned long long)results[i]);
        seen[results[i]] = 1;
    }
    free(seen);
    free(results);

    post(FERRY_ATOMIC_OR, 0xff00, 8, OFF_BITS, &c);
    FT_CHECK_OK(ferry_ep_fence(ep));
    post(FERRY_ATOMIC_AND, 0x0ff0, 8, OFF_BITS, &c);
    FT_CHECK_OK(ferry_ep_fence(ep));
    post(FERRY_ATOMIC_XOR, 0x1, 8, OFF_BITS, &c);
    FT_CHECK(fetch(FERRY_ATOMIC_SWAP, 0x1111, 0, 8, OFF_SWAP) == 0, "first swap: old value");
    FT_CHECK(fetch(FERRY_ATOMIC_SWAP, 0x2222, 0, 8, OFF_SWAP) == 0x1111, "second swap: old");
    FT_CHECK(fetch(FERRY_ATOMIC_CSWAP, 5, 0, 8, OFF_CSWAP) == 0, "cswap that succeeds");
    FT_CHECK(fetch(FERRY_ATOMIC_CSWAP, 6, 0, 8, OFF_CSWAP) == 5, "cswap that fails");
    FT_CHECK(fetch(FERRY_ATOMIC_CSWAP, 0xdeadbeef, 0, 4, OFF_CSWAP32) == 0, "4-byte cswap");
    FT_CHECK_STATUS(ferry_atomic_post(ep, FERRY_ATOMIC_ADD, 1, 8, 3, peer_atomic, NULL),
                    FERRY_ERR_INVALID_PARAM);
    FT_CHECK_STATUS(ferry_atomic_post(ep, FERRY_ATOMIC_ADD, 1, 2, 0, peer_atomic, NULL),
                    FERRY_ERR_INVALID_PARAM);

    /* fences order puts against puts and puts against atomics */
    uint64_t values[100];
    for (unsigned i = 0; i < 100; i++) {
        values[i] = 0xf00d000000000000ull + i;
        started(ep, peer_atomic, ft_rma_put(&values[i], 8, OFF_FENCE), &c, "put");
        FT_CHECK_OK(ferry_ep_fence(ep));
    }
    uint64_t thousand = 1000;
    started(ep, peer_atomic, ft_rma_put(&thousand, 8, OFF_PUTADD), &c, "put");
    FT_CHECK_OK(ferry_ep_fence(ep));
    FT_CHECK(fetch(FERRY_ATOMIC_ADD, 1, 0, 8, OFF_PUTADD) == 1000,
             "a fetch-add fenced after a put did not see the put");
    nt_wait_completion(&job, &c, NT_TIMEOUT_MS, "the atomics and fenced puts");
    FT_CHECK_OK(c.status);

    ferry_completion_t wf = {.count = 1};
    ferry_status_t s = ferry_worker_flush(job.worker, &wf);
    FT_CHECK(s == FERRY_OK || s == FERRY_INPROGRESS, "ferry_worker_flush: %s",
             ferry_status_name(s));
    if (s == FERRY_INPROGRESS)
        nt_wait_completion(&job, &wf, NT_TIMEOUT_MS, "ferry_worker_flush");
    nt_job_barrier(&job);

    /* the owner checks its words */
    uint64_t v64;
    uint32_t v32;
    __atomic_load(&((uint64_t *)atomic_region)[OFF_FADD / 8], &v64, __ATOMIC_SEQ_CST);
    FT_CHECK(v64 == NT_FETCH_ADDS, "fetch-add word: %llu", (unsigned long long)v64);
    __atomic_load((uint32_t *)(atomic_region + OFF_ADD32), &v32, __ATOMIC_SEQ_CST);
    FT_CHECK(v32 == 3 * NT_FETCH_ADDS, "4-byte add word: %u", v32);
    memcpy(&v64, atomic_region + OFF_BITS, 8);
    FT_CHECK(v64 == 0x0f01, "or/and/xor word: %#llx, expected 0xf01", (unsigned long long)v64);
    memcpy(&v64, atomic_region + OFF_SWAP, 8);
    FT_CHECK(v64 == 0x2222, "swap word: %#llx", (unsigned long long)v64);
    memcpy(&v64, atomic_region + OFF_CSWAP, 8);
    FT_CHECK(v64 == 5, "cswap word: %llu", (unsigned long long)v64);
    memcpy(&v32, atomic_region + OFF_CSWAP32, 4);
    FT_CHECK(v32 == 0xdeadbeef, "4-byte cswap word: %#x", v32);
    memcpy(&v64, atomic_region + OFF_CSWAP32 + 4, 4);
    FT_CHECK((uint32_t)v64 == 0, "the 4 bytes after the 4-byte cswap changed");
    memcpy(&v64, atomic_region + OFF_FENCE, 8);
    FT_CHECK(v64 == values[99], "fenced puts: %#llx, expected the last one",
             (unsigned long long)v64);
    memcpy(&v64, atomic_region + OFF_PUTADD, 8);
    FT_CHECK(v64 == 1001, "put then fetch-add: %llu", (unsigned long long)v64);
    ft_note("atomics, fences and flushes in %.0f ms", nt_ms_since(t0));
}

static void rma_teardown(void)
{
    nt_job_barrier(&job); /* the peer no longer uses our memory */
    ferry_rkey_release(peer_region);
    ferry_rkey_release(peer_atomic);
    FT_CHECK_OK(ferry_mem_deregister(region_mem));
    FT_CHECK_OK(ferry_mem_deregister(atomic_mem));
    free(region);
}

int main(void)
{
    nt_job_init(&job, "nt_ops", 240);
    FT_CHECK(job.size == 2, "nt_ops runs with 2 ranks, not %u", job.size);
    peer = 1 - job.rank;
    nt_job_check_transports(&job);
    test_am();
    test_tag();
    rma_setup();
    test_put_get();
    test_atomics();
    rma_teardown();
    FT_CHECK(job.peers[peer].error_calls == 0, "the endpoint failed: %s",
             ferry_status_name(job.peers[peer].error));
    nt_job_fini(&job, true);
    printf("nt_ops: rank %u passed\n", job.rank);
    return 0;
}
