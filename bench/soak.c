/* soak: long mixed traffic among processes that are killed and restarted (issue 11, item 7).
 *
 * A conductor forks SOAK_PROCS members. Each member registers a 1 MiB region, publishes a
 * named segment (SOAK_SEG_ID, 1 MiB) and sends its worker address and packed key to the
 * conductor, which sends every member's current address and key to all (again whenever a
 * member restarts). Each member keeps one link to every other member and cycles on it through
 * (one operation at a time, every byte checked):
 *   am      an active message of 8 B .. 1 MiB; the receiver checks length and bytes
 *   tag     a tagged message of every size class: eager (0 B .. 262144 B: one bulk buffer up
 *           to 32768 B, fragments placed into the receive above), just over the eager
 *           threshold, one size in each rendezvous calibration class (32 KiB .. 2 MiB), 3 MiB
 *           (split without calibration) and 33 MiB (more than one FERRY_RNDV_SECTION); the
 *           receiver (one receive posted per sending rank) checks length and bytes
 *   put/get 64 KiB into the member's own slice of the peer's region, a flush, a get of the
 *           same slice, checked against what was put
 *   atomic  swap, post add, post xor, flush, fetch-add, compare-and-swap (one that matches and,
 *           every other round, one that must not), alternately on an 8-byte and a 4-byte word;
 *           every fetched value is checked against the value the member expects
 *   segment connect to the peer's segment (asynchronously), map the member's slice and create a
 *           DMA queue on it; alternately write 64 KiB by DMA and check it through the map, or
 *           store it through the map (then a store barrier) and read it back by DMA; then a
 *           64-byte notify that the owner checks; every 16th round disconnect and reconnect.
 *           Where the segment cannot be mapped (FERRY_TRANSPORTS=tcp), a DMA write and a DMA
 *           read back, checked
 * Each member's FERRY_RNDV_MODE (unless set outside) follows its incarnation through auto,
 * get, put, coop, null and split. Ranks 0 .. SOAK_SURVIVORS-1 live throughout; every
 * kill_every seconds the conductor SIGKILLs one of the others at random and starts it again:
 * the others see their endpoints fail and connect to the new incarnation when its address
 * arrives. Members report every second: per kind, operations completed and verified, failed
 * checks, errors by status, descriptors and RSS. The conductor prints a line every
 * report_every seconds (with each survivor's descriptors and RSS) and a summary at the end:
 * counts are those of each member's last report (a killed member's last second is lost).
 * Exit status: 0 when no check failed, 1 otherwise.
 *
 * Usage: soak [seconds (1800)] [kill every seconds (5)] [report every seconds (60)] */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <ferry/ferry.h>

#include "ft_pattern.h"

#define SOAK_PROCS 4
#define SOAK_SURVIVORS 2
#define SOAK_REGION (1u << 20)
#define SOAK_SLICE (SOAK_REGION / SOAK_PROCS)
#define SOAK_RMA (64u << 10)
#define SOAK_ATOMIC_OFFSET SOAK_RMA /* in a member's slice: the 8-byte word, then the 4-byte */
#define SOAK_SEG_ID 77u
#define SOAK_SEG_SIZE (1u << 20)
#define SOAK_SEG_SLICE (SOAK_SEG_SIZE / SOAK_PROCS)
#define SOAK_SEG_XFER (64u << 10)
#define SOAK_SEG_ROUNDS 16 /* segment rounds per connection */
#define SOAK_AM_MAX (1u << 20)
#define SOAK_TAG_MAX ((33u << 20) + 7)
#define SOAK_BUF_MAX SOAK_TAG_MAX
#define SOAK_ID 9
#define SOAK_MSG_MAX 2048
#define SOAK_STATUS_SLOTS 72 /* errors by -status; the last slot counts unknown ones */
#define SOAK_SAMPLES 1024
#define SOAK_BAD_LINES 20 /* check failures described on stderr, per member */

enum { MSG_ADDR = 1, MSG_PEER, MSG_STATS };

/* What the statistics count, per kind of traffic. */
typedef enum {
    KIND_AM,
    KIND_TAG,
    KIND_PUT,
    KIND_GET,
    KIND_ATOMIC,
    KIND_SEG,
    KIND_NOTIFY,
    KIND_COUNT
} soak_kind_t;

static const char *const soak_kind_names[KIND_COUNT] = {
    "active message", "tagged message",      "put",           "get",
    "atomic",         "segment (DMA + map)", "segment notify"};

/* Where an error is seen, besides the operations of each kind. */
enum {
    SOAK_WHERE_EP = KIND_COUNT, /* an endpoint's error callback */
    SOAK_WHERE_CONNECT,         /* ferry_ep_create, ferry_rkey_unpack */
    SOAK_WHERE_TAG_RECV,        /* a tagged receive */
    SOAK_WHERE_COUNT
};
static const char *const soak_where_names[SOAK_WHERE_COUNT - KIND_COUNT] = {
    "endpoint error callback", "endpoint create / key unpack", "tagged receive"};

typedef struct soak_stats {
    uint64_t moved[KIND_COUNT];    /* completed by the initiator */
    uint64_t verified[KIND_COUNT]; /* checked to the byte (receiver, reader or owner) */
    uint64_t bad[KIND_COUNT];      /* failed a check */
    uint64_t bytes_verified;
    /* operations and endpoints that failed: by where (a kind, or SOAK_WHERE_*) and -status */
    uint64_t errors[SOAK_WHERE_COUNT][SOAK_STATUS_SLOTS];
    uint64_t seg_connects, seg_unmapped, seg_lost, ep_failures;
    uint64_t fds, rss_kb;
} soak_stats_t;

typedef struct soak_msg {
    uint32_t type, rank, incarnation, addr_len, key_len;
    soak_stats_t stats;
    uint8_t data[SOAK_MSG_MAX]; /* address, then key */
} soak_msg_t;

static uint64_t soak_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ------------------------------------------------------------------ a member */

/* One link's cycle of operations, in order. */
typedef enum {
    OP_AM,
    OP_TAG,
    OP_PUT,
    OP_PUT_FLUSH,
    OP_GET,
    OP_SWAP,
    OP_POST_ADD,
    OP_POST_XOR,
    OP_ATOMIC_FLUSH,
    OP_FETCH_ADD,
    OP_CSWAP,
    OP_SEG,
    OP_COUNT
} soak_op_t;

static const soak_kind_t soak_op_kind[OP_COUNT] = {[OP_AM] = KIND_AM,
                                                   [OP_TAG] = KIND_TAG,
                                                   [OP_PUT] = KIND_PUT,
                                                   [OP_PUT_FLUSH] = KIND_PUT,
                                                   [OP_GET] = KIND_GET,
                                                   [OP_SWAP] = KIND_ATOMIC,
                                                   [OP_POST_ADD] = KIND_ATOMIC,
                                                   [OP_POST_XOR] = KIND_ATOMIC,
                                                   [OP_ATOMIC_FLUSH] = KIND_ATOMIC,
                                                   [OP_FETCH_ADD] = KIND_ATOMIC,
                                                   [OP_CSWAP] = KIND_ATOMIC,
                                                   [OP_SEG] = KIND_SEG};

/* A remote atomic word: the value it must hold, once known (after the first swap). */
typedef struct soak_word {
    bool known;
    uint64_t value;
} soak_word_t;

typedef struct soak_link {
    ferry_ep_t *ep;
    ferry_rkey_t *rkey;
    bool failed;
    soak_op_t op;
    bool busy;
    ferry_completion_t comp;
    uint64_t seq;
    uint64_t seed;
    size_t size;
    uint8_t *buf;
    /* atomics: the word of this round, the operand in flight, the fetched value */
    soak_word_t words[2]; /* 8-byte, 4-byte */
    uint64_t operand, result;
    /* the peer's segment */
    ferry_rsegment_t *rseg;
    uint8_t *map;
    ferry_dma_queue_t *dma;
    unsigned seg_round;
    bool seg_read;        /* the DMA in flight reads (checks buf), else writes (checks the map) */
    uint64_t seg_written; /* no map (another host, or tcp): the seed the last write used */
} soak_link_t;

/* One tagged receive posted per sending rank. */
typedef struct soak_tag_recv {
    ferry_completion_t comp;
    ferry_tag_info_t info;
    uint8_t *buf;
    bool posted;
} soak_tag_recv_t;

static soak_stats_t st;
static unsigned my_rank;
static uint32_t my_incarnation;
static unsigned bad_lines;
static soak_link_t links[SOAK_PROCS];
static soak_tag_recv_t tag_recvs[SOAK_PROCS];

static const size_t soak_am_sizes[] = {8, 200, 4000, 40000, SOAK_AM_MAX};
#define SOAK_AM_SIZES (sizeof(soak_am_sizes) / sizeof(soak_am_sizes[0]))

/* Eager on shm up to 256 KiB (tag_rndv.c TAG_EAGER_PAYLOAD_CAP: one bulk buffer up to 32 KiB,
 * 12 KiB+3 and 24 KiB+3 too; 32769 B and up to TAG_EAGER_PLACED_CAP in fragments placed straight
 * into the receive); 262145 B just over; one size in each calibration class [2^k, 2^(k+1)),
 * k = 15 .. 20 (tag_calib.c; rendezvous from k = 18); 3 MiB (split, uncalibrated);
 * 33 MiB (crosses FERRY_RNDV_SECTION, 32 MiB by default). Over tcp, up to 1 MiB is eager. */
static const size_t soak_tag_sizes[] = {0,
                                        8,
                                        1000,
                                        8192,
                                        (12u << 10) + 3,
                                        (24u << 10) + 3,
                                        32768,
                                        32769,
                                        (48u << 10) + 3,
                                        (96u << 10) + 3,
                                        131072,
                                        (192u << 10) + 3,
                                        262144,
                                        262145,
                                        (384u << 10) + 3,
                                        (768u << 10) + 3,
                                        (1536u << 10) + 3,
                                        (3u << 20) + 5,
                                        SOAK_TAG_MAX};
#define SOAK_TAG_SIZES (sizeof(soak_tag_sizes) / sizeof(soak_tag_sizes[0]))

static const char *const soak_rndv_modes[] = {"auto", "get", "put", "coop", "null", "split"};

static void soak_error(unsigned where, ferry_status_t status)
{
    unsigned slot =
        status < 0 && -status < SOAK_STATUS_SLOTS - 1 ? (unsigned)-status : SOAK_STATUS_SLOTS - 1;
    st.errors[where][slot]++;
}

/* Check a received or read-back buffer; true when every byte is right. */
static bool soak_verify(soak_kind_t kind, const void *buf, size_t len, uint64_t seed, unsigned peer)
{
    int64_t at = ft_pattern_mismatch(buf, len, seed, 0);
    if (at < 0) {
        st.verified[kind]++;
        st.bytes_verified += len;
        return true;
    }
    st.bad[kind]++;
    if (bad_lines++ < SOAK_BAD_LINES)
        fprintf(stderr, "soak: rank %u: %s with rank %u: %zu bytes: first wrong byte at %lld\n",
                my_rank, soak_kind_names[kind], peer, len, (long long)at);
    return false;
}

static void soak_bad(soak_kind_t kind, unsigned peer, const char *what, uint64_t got, uint64_t want)
{
    st.bad[kind]++;
    if (bad_lines++ < SOAK_BAD_LINES)
        fprintf(stderr, "soak: rank %u: %s with rank %u: %s %llu, expected %llu\n", my_rank,
                soak_kind_names[kind], peer, what, (unsigned long long)got,
                (unsigned long long)want);
}

/* AM header: the pattern's seed and the length sent. */
typedef struct soak_am_header {
    uint64_t seed, length;
    uint32_t rank;
} soak_am_header_t;

static ferry_status_t soak_on_am(void *arg, const void *header, size_t header_length, void *data,
                                 size_t length, const ferry_am_recv_params_t *params)
{
    soak_am_header_t h;
    (void)arg, (void)params;
    if (header_length != sizeof(h)) {
        soak_bad(KIND_AM, SOAK_PROCS, "header length", header_length, sizeof(h));
        return FERRY_OK;
    }
    memcpy(&h, header, sizeof(h));
    if (length != h.length)
        soak_bad(KIND_AM, h.rank, "length", length, h.length);
    else
        soak_verify(KIND_AM, data, length, h.seed, h.rank);
    return FERRY_OK;
}

static void soak_on_error(void *arg, ferry_ep_t *ep, ferry_status_t status)
{
    (void)ep;
    st.ep_failures++;
    soak_error(SOAK_WHERE_EP, status);
    if (arg != NULL)
        ((soak_link_t *)arg)->failed = true;
}

/* Notify data: the seed, then 56 pattern bytes; the owner checks them. */
static void soak_on_segment(void *arg, ferry_segment_t *segment, const ferry_segment_event_t *ev)
{
    uint64_t seed;
    (void)arg, (void)segment;
    if (ev->type != FERRY_SEGMENT_EVENT_NOTIFY)
        return;
    if (ev->length != FERRY_SEGMENT_NOTIFY_MAX) {
        soak_bad(KIND_NOTIFY, SOAK_PROCS, "notify length", ev->length, FERRY_SEGMENT_NOTIFY_MAX);
        return;
    }
    memcpy(&seed, ev->data, sizeof(seed));
    soak_verify(KIND_NOTIFY, ev->data + sizeof(seed), ev->length - sizeof(seed), seed, SOAK_PROCS);
}

static void soak_on_rsegment(void *arg, ferry_rsegment_t *rsegment, const ferry_segment_event_t *ev)
{
    (void)arg, (void)rsegment;
    if (ev->type == FERRY_SEGMENT_EVENT_LOST)
        st.seg_lost++;
}

static unsigned soak_count_fds(void)
{
    unsigned n = 0;
    DIR *d = opendir("/proc/self/fd");
    if (d == NULL)
        return 0;
    while (readdir(d) != NULL)
        n++;
    closedir(d);
    return n - 3; /* ., .., the directory's own */
}

static uint64_t soak_rss_kb(void)
{
    unsigned long size = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f == NULL)
        return 0;
    if (fscanf(f, "%lu %lu", &size, &resident) != 2)
        resident = 0;
    fclose(f);
    return (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE) / 1024u;
}

/* Progress until cond(l) is false, at most 100 000 times. */
static void soak_progress_while(ferry_worker_t *worker, soak_link_t *l, bool (*cond)(soak_link_t *))
{
    for (int i = 0; cond(l) && i < 100000; i++)
        ferry_worker_progress(worker);
}

static bool soak_op_pending(soak_link_t *l)
{
    return l->busy && l->op != OP_SEG && l->comp.count > 0;
}

static bool soak_dma_running(soak_link_t *l)
{
    return ferry_dma_state(l->dma, NULL) == FERRY_DMA_RUNNING;
}

/* Let go of the peer's segment: the DMA queue, the map, the connection. */
static void soak_seg_drop(soak_link_t *l, ferry_worker_t *worker)
{
    if (l->dma != NULL) {
        if (soak_dma_running(l)) {
            (void)ferry_dma_abort(l->dma);
            soak_progress_while(worker, l, soak_dma_running);
        }
        if (ferry_dma_destroy(l->dma) != FERRY_OK)
            st.bad[KIND_SEG]++; /* still running after 100 000 progress calls */
        l->dma = NULL;
    }
    if (l->map != NULL) {
        (void)ferry_rsegment_unmap(l->rseg, l->map);
        l->map = NULL;
    }
    if (l->rseg != NULL) {
        ferry_status_t status = ferry_rsegment_disconnect(l->rseg);
        for (int i = 0; status == FERRY_ERR_NO_RESOURCE && i < 100000; i++) {
            ferry_worker_progress(worker);
            status = ferry_rsegment_disconnect(l->rseg);
        }
        if (status != FERRY_OK)
            soak_error(KIND_SEG, status);
        l->rseg = NULL;
    }
    if (l->busy && l->op == OP_SEG)
        l->busy = false;
}

static void soak_link_drop(soak_link_t *l, ferry_worker_t *worker)
{
    if (l->ep == NULL)
        return;
    /* its operation completes (with an error) before the endpoint can go */
    soak_progress_while(worker, l, soak_op_pending);
    soak_seg_drop(l, worker);
    l->busy = false;
    ferry_rkey_release(l->rkey);
    l->rkey = NULL;
    ferry_ep_destroy(l->ep);
    l->ep = NULL;
}

static uint64_t soak_tag_of(uint64_t seq, unsigned size_index)
{
    return ((uint64_t)my_rank << 60) | ((uint64_t)(my_incarnation & 0xfffffu) << 40) |
           ((uint64_t)size_index << 32) | (seq & 0xffffffffu);
}

static uint64_t soak_word_mask(size_t size)
{
    return size == 8 ? UINT64_MAX : UINT32_MAX;
}

/* Segment round: connect, map, create the queue; then a DMA write or read of the member's
 * slice. FERRY_INPROGRESS: the DMA runs (busy); FERRY_OK: nothing to wait for this round. */
static ferry_status_t soak_seg_issue(soak_link_t *l)
{
    ferry_status_t status;
    if (l->rseg == NULL) {
        status = ferry_rsegment_connect(l->ep, SOAK_SEG_ID, 2000, FERRY_RSEGMENT_CONNECT_ASYNC,
                                        soak_on_rsegment, l, &l->rseg);
        if (status != FERRY_INPROGRESS && status != FERRY_OK) {
            l->rseg = NULL;
            return status;
        }
        return FERRY_OK;
    }
    status = ferry_rsegment_status(l->rseg);
    if (status == FERRY_INPROGRESS)
        return FERRY_OK; /* still connecting: the next round */
    if (status != FERRY_OK)
        return status;
    uint64_t offset = (uint64_t)my_rank * SOAK_SEG_SLICE;
    if (l->dma == NULL) {
        st.seg_connects++;
        void *map;
        status = ferry_rsegment_map(l->rseg, offset, SOAK_SEG_XFER, 0, &map);
        if (status == FERRY_OK)
            l->map = map;
        else if (status == FERRY_ERR_UNSUPPORTED) /* no map (tcp; never on shm): DMA only */
            st.seg_unmapped++;
        else
            return status;
        if ((status = ferry_dma_create(l->rseg, &l->dma)) != FERRY_OK)
            return status;
        l->seg_round += l->seg_round & 1; /* a new connection starts with a write */
    }
    l->seg_read = (l->seg_round & 1) != 0;
    if (l->map == NULL && !l->seg_read)
        l->seg_written = l->seed;
    ferry_dma_entry_t entry = {.local = l->buf,
                               .remote_offset = offset,
                               .length = SOAK_SEG_XFER,
                               .direction = l->seg_read ? FERRY_DMA_READ : FERRY_DMA_WRITE};
    if (l->seg_read) {
        if (l->map != NULL) {
            ft_pattern_fill(l->map, SOAK_SEG_XFER, l->seed, 0);
            if ((status = ferry_rsegment_store_barrier(l->rseg)) != FERRY_OK)
                return status;
        }
        memset(l->buf, 0, SOAK_SEG_XFER);
    } else {
        ft_pattern_fill(l->buf, SOAK_SEG_XFER, l->seed, 0);
    }
    if ((status = ferry_dma_post(l->dma, &entry, 1)) != FERRY_OK)
        return status;
    return ferry_dma_start(l->dma, NULL, NULL);
}

/* The DMA of this round finished: check it, notify the owner, maybe disconnect. */
static void soak_seg_done(soak_link_t *l, unsigned peer, ferry_worker_t *worker)
{
    st.moved[KIND_SEG]++;
    if (l->seg_read) /* what the map stored, or without a map what the last DMA wrote */
        soak_verify(KIND_SEG, l->buf, SOAK_SEG_XFER, l->map != NULL ? l->seed : l->seg_written,
                    peer);
    else if (l->map != NULL)
        soak_verify(KIND_SEG, l->map, SOAK_SEG_XFER, l->seed, peer);
    uint8_t note[FERRY_SEGMENT_NOTIFY_MAX];
    uint64_t seed = l->seed ^ 0x6e6f74696679ull;
    memcpy(note, &seed, sizeof(seed));
    ft_pattern_fill(note + sizeof(seed), sizeof(note) - sizeof(seed), seed, 0);
    ferry_status_t status = ferry_rsegment_notify(l->rseg, note, sizeof(note));
    if (status == FERRY_OK)
        st.moved[KIND_NOTIFY]++;
    else if (status != FERRY_ERR_NO_RESOURCE)
        soak_error(KIND_NOTIFY, status);
    if (++l->seg_round % SOAK_SEG_ROUNDS == 0)
        soak_seg_drop(l, worker);
}

/* Start the link's current operation. FERRY_OK: done at once; FERRY_INPROGRESS: l->comp (or
 * the DMA queue) completes it; FERRY_ERR_NO_RESOURCE: retry; else the error. */
static ferry_status_t soak_issue(soak_link_t *l, unsigned peer)
{
    uint64_t offset = (uint64_t)my_rank * SOAK_SLICE;
    soak_word_t *word = &l->words[l->seq & 1];
    size_t wsize = (l->seq & 1) ? 4 : 8;
    uint64_t woffset = offset + SOAK_ATOMIC_OFFSET + ((l->seq & 1) ? 8 : 0);
    uint64_t mask = soak_word_mask(wsize);
    l->comp = (ferry_completion_t){.cb = NULL, .count = 1, .status = FERRY_OK};
    switch (l->op) {
    case OP_AM: {
        l->size = soak_am_sizes[l->seq % SOAK_AM_SIZES];
        l->seed = ft_pattern_seed(my_rank, ((uint64_t)my_incarnation << 40) ^ l->seq, l->size);
        soak_am_header_t h = {.seed = l->seed, .length = l->size, .rank = my_rank};
        ft_pattern_fill(l->buf, l->size, l->seed, 0);
        return ferry_am_send(l->ep, SOAK_ID, &h, sizeof(h),
                             &(ferry_iov_t){.buffer = l->buf, .length = l->size}, 1, &l->comp);
    }
    case OP_TAG: {
        unsigned index = (unsigned)(l->seq % SOAK_TAG_SIZES);
        uint64_t tag = soak_tag_of(l->seq, index);
        l->size = soak_tag_sizes[index];
        ft_pattern_fill(l->buf, l->size, ft_pattern_seed(my_rank, tag, l->size), 0);
        return ferry_tag_send(l->ep, &(ferry_iov_t){.buffer = l->buf, .length = l->size}, 1, tag,
                              &l->comp);
    }
    case OP_PUT:
        l->seed = ft_pattern_seed(my_rank, ((uint64_t)peer << 56) ^ l->seq, SOAK_RMA);
        ft_pattern_fill(l->buf, SOAK_RMA, l->seed, 0);
        return ferry_put(l->ep, l->buf, SOAK_RMA, offset, l->rkey, &l->comp);
    case OP_PUT_FLUSH:
    case OP_ATOMIC_FLUSH:
        return ferry_ep_flush(l->ep, &l->comp);
    case OP_GET:
        memset(l->buf, 0, SOAK_RMA);
        return ferry_get(l->ep, l->buf, SOAK_RMA, offset, l->rkey, &l->comp);
    case OP_SWAP:
        l->operand = ft_pattern_seed(my_rank, l->seq, 1) & mask;
        return ferry_atomic_fetch(l->ep, FERRY_ATOMIC_SWAP, l->operand, 0, wsize, woffset, l->rkey,
                                  &l->result, &l->comp);
    case OP_POST_ADD:
        l->operand = (l->seq * 0x10001u + 3) & mask;
        return ferry_atomic_post(l->ep, FERRY_ATOMIC_ADD, l->operand, wsize, woffset, l->rkey,
                                 &l->comp);
    case OP_POST_XOR:
        l->operand = ft_pattern_seed(my_rank, l->seq, 2) & mask;
        return ferry_atomic_post(l->ep, FERRY_ATOMIC_XOR, l->operand, wsize, woffset, l->rkey,
                                 &l->comp);
    case OP_FETCH_ADD:
        l->operand = (l->seq + 1) & mask;
        return ferry_atomic_fetch(l->ep, FERRY_ATOMIC_ADD, l->operand, 0, wsize, woffset, l->rkey,
                                  &l->result, &l->comp);
    case OP_CSWAP: {
        /* every other round a compare that must fail (the word keeps its value) */
        uint64_t compare = (l->seq & 2) ? word->value ^ 1 : word->value;
        l->operand = ft_pattern_seed(my_rank, l->seq, 3) & mask;
        return ferry_atomic_fetch(l->ep, FERRY_ATOMIC_CSWAP, l->operand, compare & mask, wsize,
                                  woffset, l->rkey, &l->result, &l->comp);
    }
    default:
        l->seed = ft_pattern_seed(my_rank, ((uint64_t)my_incarnation << 40) ^ l->seg_round,
                                  SOAK_SEG_XFER + peer);
        return soak_seg_issue(l);
    }
}

/* The operation completed without error: count and check it. */
static void soak_finish(soak_link_t *l, unsigned peer, ferry_worker_t *worker, bool issued_now)
{
    soak_word_t *word = &l->words[l->seq & 1];
    uint64_t mask = soak_word_mask((l->seq & 1) ? 4 : 8);
    switch (l->op) {
    case OP_AM:
        st.moved[KIND_AM]++;
        break;
    case OP_TAG:
        st.moved[KIND_TAG]++;
        break;
    case OP_PUT:
        st.moved[KIND_PUT]++;
        break;
    case OP_GET:
        st.moved[KIND_GET]++;
        soak_verify(KIND_GET, l->buf, SOAK_RMA, l->seed, peer);
        break;
    case OP_SWAP:
    case OP_FETCH_ADD:
    case OP_CSWAP:
        st.moved[KIND_ATOMIC]++;
        if (word->known && (l->result & mask) != word->value)
            soak_bad(KIND_ATOMIC, peer, "fetched", l->result & mask, word->value);
        else if (word->known)
            st.verified[KIND_ATOMIC]++;
        if (l->op == OP_SWAP)
            word->value = l->operand;
        else if (l->op == OP_FETCH_ADD)
            word->value = (word->value + l->operand) & mask;
        else if (!(l->seq & 2))
            word->value = l->operand;
        word->known = true;
        break;
    case OP_POST_ADD:
        st.moved[KIND_ATOMIC]++;
        word->value = (word->value + l->operand) & mask;
        break;
    case OP_POST_XOR:
        st.moved[KIND_ATOMIC]++;
        word->value ^= l->operand;
        break;
    case OP_SEG:
        if (!issued_now) /* a DMA finished */
            soak_seg_done(l, peer, worker);
        break;
    default:
        break;
    }
}

/* Start or finish the link's current operation. */
static void soak_link_step(soak_link_t *l, unsigned peer, ferry_worker_t *worker)
{
    if (l->ep == NULL || l->failed)
        return;
    ferry_status_t status;
    bool issued_now = !l->busy;
    if (l->busy) {
        if (l->op == OP_SEG) {
            if (ferry_dma_state(l->dma, &status) == FERRY_DMA_RUNNING)
                return;
        } else {
            if (l->comp.count > 0)
                return;
            status = l->comp.status;
        }
        l->busy = false;
    } else {
        status = soak_issue(l, peer);
        if (status == FERRY_ERR_NO_RESOURCE)
            return;
        if (status == FERRY_INPROGRESS) {
            l->busy = true;
            return;
        }
    }
    if (status == FERRY_OK) {
        soak_finish(l, peer, worker, issued_now);
    } else {
        soak_error(soak_op_kind[l->op], status);
        l->words[0].known = l->words[1].known = false;
        if (l->op == OP_SEG)
            soak_seg_drop(l, worker);
    }
    l->op = (soak_op_t)((l->op + 1) % OP_COUNT);
    if (l->op == OP_AM)
        l->seq++;
}

/* Post the receive for tagged messages from rank src, and check what it receives. */
static void soak_tag_recv_step(ferry_worker_t *worker, unsigned src)
{
    soak_tag_recv_t *r = &tag_recvs[src];
    ferry_status_t status;
    for (int n = 0; n < 4; n++) {
        if (!r->posted) {
            r->comp = (ferry_completion_t){.cb = NULL, .count = 1, .status = FERRY_OK};
            status =
                ferry_tag_recv(worker, &(ferry_iov_t){.buffer = r->buf, .length = SOAK_TAG_MAX}, 1,
                               (uint64_t)src << 60, UINT64_C(0xf) << 60, &r->info, &r->comp);
            if (status == FERRY_INPROGRESS) {
                r->posted = true;
                return;
            }
        } else {
            if (r->comp.count > 0)
                return;
            r->posted = false;
            status = r->comp.status;
        }
        if (status != FERRY_OK) {
            soak_error(SOAK_WHERE_TAG_RECV, status);
            if (status == FERRY_ERR_MESSAGE_TRUNCATED)
                st.bad[KIND_TAG]++;
            continue;
        }
        unsigned index = (unsigned)((r->info.tag >> 32) & 0xffu);
        size_t want = index < SOAK_TAG_SIZES ? soak_tag_sizes[index] : SIZE_MAX;
        if (r->info.length != want)
            soak_bad(KIND_TAG, src, "length", r->info.length, want);
        else
            soak_verify(KIND_TAG, r->buf, want, ft_pattern_seed(src, r->info.tag, want), src);
    }
}

static void soak_member(int ctl, unsigned rank, uint32_t incarnation)
{
    ferry_context_t *context;
    ferry_worker_t *worker;
    ferry_mem_t *mem;
    ferry_segment_t *segment;
    const void *address;
    size_t address_length, key_length;
    void *key;
    soak_msg_t m;

    my_rank = rank;
    my_incarnation = incarnation;
    setenv("FERRY_RNDV_MODE",
           soak_rndv_modes[(rank + incarnation - 1) %
                           (sizeof(soak_rndv_modes) / sizeof(soak_rndv_modes[0]))],
           0);
    uint8_t *region = calloc(1, SOAK_REGION);
    ferry_worker_params_t wparams = {.accepted_ep_error_cb = soak_on_error};
    if (region == NULL || ferry_context_create(NULL, &context) != FERRY_OK ||
        ferry_worker_create(context, &wparams, &worker) != FERRY_OK)
        _exit(1);
    ferry_am_set_handler(worker, SOAK_ID, soak_on_am, NULL);
    ferry_iov_t iov = {.buffer = region, .length = SOAK_REGION};
    if (ferry_mem_register(context, &iov, 1,
                           FERRY_ACCESS_REMOTE_READ | FERRY_ACCESS_REMOTE_WRITE |
                               FERRY_ACCESS_REMOTE_ATOMIC,
                           0, &mem) != FERRY_OK ||
        ferry_rkey_pack(mem, &key, &key_length) != FERRY_OK)
        _exit(1);
    if (ferry_segment_create(worker, SOAK_SEG_ID, SOAK_SEG_SIZE, 0, soak_on_segment, NULL,
                             &segment) != FERRY_OK ||
        ferry_segment_prepare(segment, 0) != FERRY_OK ||
        ferry_segment_set_available(segment) != FERRY_OK)
        _exit(1);
    ferry_worker_address(worker, &address, &address_length);
    memset(&m, 0, sizeof(m));
    m.type = MSG_ADDR;
    m.rank = rank;
    m.incarnation = incarnation;
    m.addr_len = (uint32_t)address_length;
    m.key_len = (uint32_t)key_length;
    memcpy(m.data, address, address_length);
    memcpy(m.data + address_length, key, key_length);
    ferry_rkey_buffer_release(key);
    if (send(ctl, &m, sizeof(m), 0) != (ssize_t)sizeof(m))
        _exit(1);
    for (unsigned p = 0; p < SOAK_PROCS; p++) {
        links[p].buf = malloc(SOAK_BUF_MAX);
        tag_recvs[p].buf = malloc(SOAK_TAG_MAX);
        if (links[p].buf == NULL || tag_recvs[p].buf == NULL)
            _exit(1);
    }
    uint64_t next_report = soak_now_ns();
    for (;;) {
        struct pollfd pfd = {.fd = ctl, .events = POLLIN};
        while (poll(&pfd, 1, 0) == 1) {
            ssize_t n = recv(ctl, &m, sizeof(m), 0);
            if (n <= 0)
                _exit(0); /* the conductor is gone */
            if (m.type != MSG_PEER || m.rank == rank || m.rank >= SOAK_PROCS)
                continue;
            soak_link_t *l = &links[m.rank];
            soak_link_drop(l, worker);
            ferry_ep_params_t params = {.error_cb = soak_on_error, .error_arg = l};
            l->failed = false;
            l->op = OP_AM;
            l->words[0].known = l->words[1].known = false;
            ferry_status_t status = ferry_ep_create(worker, m.data, m.addr_len, &params, &l->ep);
            if (status != FERRY_OK) {
                l->ep = NULL;
                soak_error(SOAK_WHERE_CONNECT, status);
                continue;
            }
            status = ferry_rkey_unpack(l->ep, m.data + m.addr_len, m.key_len, &l->rkey);
            if (status != FERRY_OK) {
                soak_error(SOAK_WHERE_CONNECT, status);
                ferry_ep_destroy(l->ep);
                l->ep = NULL;
            }
        }
        for (unsigned p = 0; p < SOAK_PROCS; p++) {
            if (p == rank)
                continue;
            soak_link_step(&links[p], p, worker);
            soak_tag_recv_step(worker, p);
        }
        ferry_worker_progress(worker);
        if (soak_now_ns() >= next_report) {
            next_report += 1000000000ull;
            st.fds = soak_count_fds();
            st.rss_kb = soak_rss_kb();
            memset(&m, 0, sizeof(m));
            m.type = MSG_STATS;
            m.rank = rank;
            m.incarnation = incarnation;
            m.stats = st;
            (void)send(ctl, &m, sizeof(m), MSG_DONTWAIT);
        }
    }
}

/* ------------------------------------------------------------------ the conductor */

typedef struct soak_sample {
    double t;
    uint64_t fds, rss_kb;
} soak_sample_t;

typedef struct soak_member_slot {
    pid_t pid;
    int ctl;
    uint32_t incarnation;
    bool have_addr;
    soak_msg_t addr;
    soak_stats_t last;
    uint64_t start_ns;
    soak_sample_t samples[SOAK_SAMPLES];
    unsigned nsamples;
} soak_slot_t;

static soak_slot_t slots[SOAK_PROCS];
static soak_stats_t retired;

static void soak_start(unsigned r)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
        perror("socketpair");
        exit(1);
    }
    slots[r].incarnation++;
    pid_t pid = fork();
    if (pid == 0) {
        close(sv[0]);
        for (unsigned q = 0; q < SOAK_PROCS; q++)
            if (q != r && slots[q].ctl >= 0)
                close(slots[q].ctl);
        soak_member(sv[1], r, slots[r].incarnation);
        _exit(0);
    }
    close(sv[1]);
    slots[r].pid = pid;
    slots[r].ctl = sv[0];
    slots[r].have_addr = false;
    memset(&slots[r].last, 0, sizeof(slots[r].last));
    slots[r].start_ns = soak_now_ns();
}

static void soak_add(soak_stats_t *a, const soak_stats_t *b)
{
    for (unsigned k = 0; k < KIND_COUNT; k++) {
        a->moved[k] += b->moved[k];
        a->verified[k] += b->verified[k];
        a->bad[k] += b->bad[k];
    }
    for (unsigned w = 0; w < SOAK_WHERE_COUNT; w++)
        for (unsigned s = 0; s < SOAK_STATUS_SLOTS; s++)
            a->errors[w][s] += b->errors[w][s];
    a->bytes_verified += b->bytes_verified;
    a->seg_connects += b->seg_connects;
    a->seg_unmapped += b->seg_unmapped;
    a->seg_lost += b->seg_lost;
    a->ep_failures += b->ep_failures;
}

static soak_stats_t soak_total(void)
{
    soak_stats_t total = retired;
    for (unsigned r = 0; r < SOAK_PROCS; r++)
        soak_add(&total, &slots[r].last);
    return total;
}

static uint64_t soak_bad_total(const soak_stats_t *s)
{
    uint64_t bad = 0;
    for (unsigned k = 0; k < KIND_COUNT; k++)
        bad += s->bad[k];
    return bad;
}

static void soak_report(double elapsed, uint64_t kills)
{
    soak_stats_t total = soak_total();
    uint64_t errors = 0;
    for (unsigned w = 0; w < SOAK_WHERE_COUNT; w++)
        for (unsigned s = 0; s < SOAK_STATUS_SLOTS; s++)
            errors += total.errors[w][s];
    printf("%6.0f s kills %4llu  am %llu/%llu tag %llu/%llu put %llu get %llu/%llu atomic "
           "%llu/%llu seg %llu/%llu notify %llu/%llu  %.1f GB checked  errors %llu  BAD %llu |",
           elapsed, (unsigned long long)kills, (unsigned long long)total.moved[KIND_AM],
           (unsigned long long)total.verified[KIND_AM], (unsigned long long)total.moved[KIND_TAG],
           (unsigned long long)total.verified[KIND_TAG], (unsigned long long)total.moved[KIND_PUT],
           (unsigned long long)total.moved[KIND_GET], (unsigned long long)total.verified[KIND_GET],
           (unsigned long long)total.moved[KIND_ATOMIC],
           (unsigned long long)total.verified[KIND_ATOMIC],
           (unsigned long long)total.moved[KIND_SEG], (unsigned long long)total.verified[KIND_SEG],
           (unsigned long long)total.moved[KIND_NOTIFY],
           (unsigned long long)total.verified[KIND_NOTIFY], (double)total.bytes_verified / 1e9,
           (unsigned long long)errors, (unsigned long long)soak_bad_total(&total));
    for (unsigned r = 0; r < SOAK_PROCS; r++) {
        uint64_t ops = 0; /* a member whose count stops is stuck */
        for (unsigned k = 0; k < KIND_COUNT; k++)
            ops += slots[r].last.moved[k];
        printf(" r%u: %4.0fs ops %7llu fds %3llu rss %6llu KiB;", r,
               (double)(soak_now_ns() - slots[r].start_ns) / 1e9, (unsigned long long)ops,
               (unsigned long long)slots[r].last.fds, (unsigned long long)slots[r].last.rss_kb);
        if (r < SOAK_SURVIVORS && slots[r].nsamples < SOAK_SAMPLES)
            slots[r].samples[slots[r].nsamples++] =
                (soak_sample_t){elapsed, slots[r].last.fds, slots[r].last.rss_kb};
    }
    printf("\n");
    fflush(stdout);
}

static void soak_summary(double elapsed, uint64_t kills)
{
    soak_stats_t total = soak_total();
    printf("\nsummary: %.0f s, %d processes (ranks 0..%d never killed), %llu kills and restarts\n",
           elapsed, SOAK_PROCS, SOAK_SURVIVORS - 1, (unsigned long long)kills);
    printf("%-22s %14s %14s %8s\n", "kind", "moved", "verified", "BAD");
    for (unsigned k = 0; k < KIND_COUNT; k++)
        printf("%-22s %14llu %14llu %8llu\n", soak_kind_names[k],
               (unsigned long long)total.moved[k], (unsigned long long)total.verified[k],
               (unsigned long long)total.bad[k]);
    printf("bytes checked: %.2f GB; segment connections %llu (%llu without a map: "
           "FERRY_ERR_UNSUPPORTED), lost %llu; endpoint failures %llu\n",
           (double)total.bytes_verified / 1e9, (unsigned long long)total.seg_connects,
           (unsigned long long)total.seg_unmapped, (unsigned long long)total.seg_lost,
           (unsigned long long)total.ep_failures);
    printf("errors by status and where they were seen:\n");
    for (unsigned s = 0; s < SOAK_STATUS_SLOTS; s++)
        for (unsigned w = 0; w < SOAK_WHERE_COUNT; w++)
            if (total.errors[w][s] > 0)
                printf("  %-30s %10llu  %s\n",
                       s == SOAK_STATUS_SLOTS - 1 ? "(other)"
                                                  : ferry_status_name((ferry_status_t) - (int)s),
                       (unsigned long long)total.errors[w][s],
                       w < KIND_COUNT ? soak_kind_names[w] : soak_where_names[w - KIND_COUNT]);
    printf("survivors (descriptors, RSS KiB) at the first, middle and last report:\n");
    for (unsigned r = 0; r < SOAK_SURVIVORS; r++) {
        unsigned n = slots[r].nsamples;
        if (n == 0)
            continue;
        const soak_sample_t *a = &slots[r].samples[0], *b = &slots[r].samples[n / 2],
                            *c = &slots[r].samples[n - 1];
        printf("  r%u: %5.0f s: %3llu %7llu   %5.0f s: %3llu %7llu   %5.0f s: %3llu %7llu\n", r,
               a->t, (unsigned long long)a->fds, (unsigned long long)a->rss_kb, b->t,
               (unsigned long long)b->fds, (unsigned long long)b->rss_kb, c->t,
               (unsigned long long)c->fds, (unsigned long long)c->rss_kb);
    }
    fflush(stdout);
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 1800;
    double kill_every = argc > 2 ? atof(argv[2]) : 5;
    double report_every = argc > 3 ? atof(argv[3]) : 60;
    uint64_t kills = 0;

    signal(SIGPIPE, SIG_IGN);
    srand((unsigned)time(NULL));
    for (unsigned r = 0; r < SOAK_PROCS; r++)
        slots[r].ctl = -1;
    for (unsigned r = 0; r < SOAK_PROCS; r++)
        soak_start(r);
    uint64_t start = soak_now_ns(), next_kill = start + (uint64_t)(kill_every * 1e9),
             next_report = start + (uint64_t)(report_every * 1e9);
    printf("soak: %d processes, %.0f s, one SIGKILL + restart every %.1f s (ranks %d..%d)\n"
           "per kind: moved/verified\n",
           SOAK_PROCS, seconds, kill_every, SOAK_SURVIVORS, SOAK_PROCS - 1);
    while (soak_now_ns() - start < (uint64_t)(seconds * 1e9)) {
        struct pollfd pfd[SOAK_PROCS];
        for (unsigned r = 0; r < SOAK_PROCS; r++)
            pfd[r] = (struct pollfd){.fd = slots[r].ctl, .events = POLLIN};
        poll(pfd, SOAK_PROCS, 50);
        for (unsigned r = 0; r < SOAK_PROCS; r++) {
            if (!(pfd[r].revents & POLLIN))
                continue;
            soak_msg_t m;
            if (recv(slots[r].ctl, &m, sizeof(m), 0) != (ssize_t)sizeof(m))
                continue;
            if (m.type == MSG_STATS) {
                slots[r].last = m.stats;
            } else if (m.type == MSG_ADDR) {
                slots[r].addr = m;
                slots[r].have_addr = true;
                m.type = MSG_PEER;
                for (unsigned q = 0; q < SOAK_PROCS; q++) /* the new one to all */
                    if (q != r)
                        (void)send(slots[q].ctl, &m, sizeof(m), 0);
                for (unsigned q = 0; q < SOAK_PROCS; q++) { /* all to the new one */
                    if (q == r || !slots[q].have_addr)
                        continue;
                    soak_msg_t a = slots[q].addr;
                    a.type = MSG_PEER;
                    (void)send(slots[r].ctl, &a, sizeof(a), 0);
                }
            }
        }
        uint64_t now = soak_now_ns();
        if (kill_every > 0 && now >= next_kill) {
            next_kill = now + (uint64_t)(kill_every * 1e9);
            unsigned r = SOAK_SURVIVORS + (unsigned)rand() % (SOAK_PROCS - SOAK_SURVIVORS);
            kill(slots[r].pid, SIGKILL);
            waitpid(slots[r].pid, NULL, 0);
            close(slots[r].ctl);
            soak_add(&retired, &slots[r].last);
            kills++;
            soak_start(r);
        }
        if (now >= next_report) {
            next_report = now + (uint64_t)(report_every * 1e9);
            soak_report((double)(now - start) / 1e9, kills);
        }
    }
    double elapsed = (double)(soak_now_ns() - start) / 1e9;
    soak_report(elapsed, kills);
    soak_summary(elapsed, kills);
    for (unsigned r = 0; r < SOAK_PROCS; r++) {
        kill(slots[r].pid, SIGKILL);
        waitpid(slots[r].pid, NULL, 0);
        close(slots[r].ctl);
    }
    soak_stats_t total = soak_total();
    return soak_bad_total(&total) == 0 ? 0 : 1;
}
