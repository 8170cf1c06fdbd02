/* Named segments: DMA-style transfer queues, every byte checked at both ends.
 *
 * The owner (a forked peer) publishes segment 1 (256 MiB + 4 KiB, ferry_mem_alloc memory: the
 * importer reaches it through the mapping) and segment 2 (2 MiB of malloc'ed memory the owner
 * registered: cross-memory attach, or the owner's progress with FERRY_SHM_CMA=off). On each,
 * the importer (the parent) writes {1 B, 4 KiB, 1 MiB, 256 MiB (segment 1 only)} at an odd
 * offset with one-entry queues (completion by callback, by polling ferry_dma_state, by
 * ferry_dma_wait), the owner checks every byte and fills the range with its own pattern, the
 * importer reads it back and checks it; then a 1 000-entry scatter list of writes (lengths
 * 1..2 000, scattered offsets) and the same list read back into other buffers. Bad input:
 * entries past the end and with offset + length overflowing (FERRY_ERR_OUT_OF_RANGE, nothing
 * appended), an unknown direction and a NULL buffer (FERRY_ERR_INVALID_PARAM), start of an
 * empty queue (FERRY_ERR_NO_ELEM), post/start while running and destroy while running
 * (FERRY_ERR_BUSY), disconnect while a queue exists (FERRY_ERR_BUSY), abort of a running 64 MiB
 * transfer (FERRY_ERR_CANCELED, then the queue works again); a map of segment 2 (registered
 * memory) gets FERRY_ERR_UNSUPPORTED. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ft.h"
#include "ft_seg.h"

#define SD_MIB (1024u * 1024u)
#define SD_SIZE1 (256u * SD_MIB + 4096u)
#define SD_SIZE2 (2u * SD_MIB)
#define SD_TIMEOUT_MS 60000
#define SD_SCATTER 1000u

/* ------------------------------------------------------------------ owner */

/* ------------------------------------------------------------------ importer */

typedef struct sd {
    ft_ferry_t f;
    ft_peer_t owner;
    ferry_ep_t *ep;
    ferry_rsegment_t *rs[3];
    uint64_t seq;
    unsigned cb_calls;
    ferry_status_t cb_status;
} sd_t;

static void sd_cb(void *arg, ferry_dma_queue_t *q, ferry_status_t status)
{
    sd_t *d = arg;
    (void)q;
    d->cb_calls++;
    d->cb_status = status;
}

/* Run one entry on a new queue; how: 0 callback, 1 polling, 2 wait. */
static void sd_one(sd_t *d, unsigned s, uint64_t offset, size_t length, void *buf,
                   unsigned direction, unsigned how)
{
    ferry_dma_queue_t *q;
    FT_CHECK_OK(ferry_dma_create(d->rs[s], &q));
    ferry_dma_entry_t e = {
        .local = buf, .remote_offset = offset, .length = length, .direction = direction};
    FT_CHECK_OK(ferry_dma_post(q, &e, 1));
    unsigned calls = d->cb_calls;
    FT_CHECK_STATUS(ferry_dma_start(q, how == 0 ? sd_cb : NULL, d), FERRY_INPROGRESS);
    FT_CHECK_STATUS(ferry_dma_post(q, &e, 1), FERRY_ERR_BUSY);
    FT_CHECK_STATUS(ferry_dma_destroy(q), FERRY_ERR_BUSY);
    if (how == 0) {
        ft_deadline_t dl = ft_deadline_in_ms(SD_TIMEOUT_MS);
        while (d->cb_calls == calls) {
            FT_CHECK(!ft_deadline_passed(dl), "DMA callback never ran");
            ft_progress_once(d->f.worker);
        }
        FT_CHECK_OK(d->cb_status);
    } else if (how == 1) {
        ft_seg_dma_poll_done(d->f.worker, q, SD_TIMEOUT_MS);
    } else {
        FT_CHECK_OK(ferry_dma_wait(q, SD_TIMEOUT_MS));
    }
    FT_CHECK_OK(ferry_dma_destroy(q));
}

static void sd_owner_check(sd_t *d, unsigned s, uint64_t offset, uint64_t length)
{
    ft_seg_owner_check(d->f.worker, d->owner.chan, s, offset, length, d->seq, SD_TIMEOUT_MS);
}

static void sd_sizes(sd_t *d, unsigned s)
{
    static const size_t sizes[] = {1, 4096, SD_MIB, 256u * SD_MIB};
    for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        size_t length = sizes[i];
        uint64_t offset = 4095; /* odd, crossing pages */
        if (s == 2 && length > SD_SIZE2 - offset)
            continue;
        uint8_t *buf = malloc(length);
        FT_CHECK(buf != NULL, "malloc(%zu)", length);
        d->seq++;
        ft_pattern_fill(buf, length, ft_pattern_seed(FT_SEG_IMPORTER, d->seq, length), 0);
        sd_one(d, s, offset, length, buf, FERRY_DMA_WRITE, i % 3);
        sd_owner_check(d, s, offset, length);
        memset(buf, 0, length);
        sd_one(d, s, offset, length, buf, FERRY_DMA_READ, (i + 1) % 3);
        ft_pattern_check(buf, length, ft_pattern_seed(FT_SEG_OWNER, d->seq, length), 0,
                         "read back");
        free(buf);
    }
}

static void sd_scatter(sd_t *d, unsigned s)
{
    uint8_t *bufs;
    ferry_dma_entry_t *e = ft_seg_scatter(SD_SCATTER, 1000000, &bufs);
    ferry_dma_queue_t *q;
    FT_CHECK_OK(ferry_dma_create(d->rs[s], &q));
    FT_CHECK_OK(ferry_dma_post(q, e, 400));
    FT_CHECK_OK(ferry_dma_post(q, e + 400, SD_SCATTER - 400));
    FT_CHECK_STATUS(ferry_dma_start(q, NULL, NULL), FERRY_INPROGRESS);
    FT_CHECK_OK(ferry_dma_wait(q, SD_TIMEOUT_MS));
    for (unsigned k = 0; k < SD_SCATTER; k++) {
        d->seq = 1000000 + k;
        sd_owner_check(d, s, e[k].remote_offset, e[k].length);
    }
    memset(bufs, 0, (size_t)SD_SCATTER * 2000);
    for (unsigned k = 0; k < SD_SCATTER; k++)
        e[k].direction = FERRY_DMA_READ;
    FT_CHECK_OK(ferry_dma_post(q, e, SD_SCATTER)); /* a finished queue: a new list */
    FT_CHECK_STATUS(ferry_dma_start(q, NULL, NULL), FERRY_INPROGRESS);
    FT_CHECK_OK(ferry_dma_wait(q, SD_TIMEOUT_MS));
    for (unsigned k = 0; k < SD_SCATTER; k++)
        ft_pattern_check(e[k].local, e[k].length,
                         ft_pattern_seed(FT_SEG_OWNER, 1000000 + k, e[k].length), 0,
                         "scatter entry read back");
    FT_CHECK_OK(ferry_dma_destroy(q));
    free(bufs);
    free(e);
}

static void sd_bad(sd_t *d)
{
    ferry_dma_queue_t *q;
    uint8_t b[16];
    void *p;
    FT_CHECK_OK(ferry_dma_create(d->rs[1], &q));
    FT_CHECK_STATUS(ferry_dma_start(q, NULL, NULL), FERRY_ERR_NO_ELEM);
    ferry_dma_entry_t e[2] = {
        {.local = b, .remote_offset = 0, .length = 16, .direction = FERRY_DMA_WRITE},
        {.local = b, .remote_offset = SD_SIZE1 - 15, .length = 16, .direction = FERRY_DMA_WRITE}};
    FT_CHECK_STATUS(ferry_dma_post(q, e, 2), FERRY_ERR_OUT_OF_RANGE);
    e[1].remote_offset = UINT64_MAX - 7;
    FT_CHECK_STATUS(ferry_dma_post(q, e, 2), FERRY_ERR_OUT_OF_RANGE);
    e[1].remote_offset = 0;
    e[1].direction = 3;
    FT_CHECK_STATUS(ferry_dma_post(q, e, 2), FERRY_ERR_INVALID_PARAM);
    e[1].direction = FERRY_DMA_READ;
    e[1].local = NULL;
    FT_CHECK_STATUS(ferry_dma_post(q, e, 2), FERRY_ERR_INVALID_PARAM);
    FT_CHECK_STATUS(ferry_dma_start(q, NULL, NULL), FERRY_ERR_NO_ELEM); /* nothing appended */
    FT_CHECK_STATUS(ferry_rsegment_disconnect(d->rs[1]), FERRY_ERR_BUSY);
    FT_CHECK_STATUS(ferry_dma_abort(q), FERRY_ERR_ILLEGAL_STATE);

    /* abort a running 64 MiB write: canceled, then the queue works again */
    size_t big = 64u * SD_MIB;
    uint8_t *buf = malloc(big);
    FT_CHECK(buf != NULL, "malloc");
    memset(buf, 0x5a, big);
    ferry_dma_entry_t be = {
        .local = buf, .remote_offset = 0, .length = big, .direction = FERRY_DMA_WRITE};
    FT_CHECK_OK(ferry_dma_post(q, &be, 1));
    FT_CHECK_STATUS(ferry_dma_start(q, NULL, NULL), FERRY_INPROGRESS);
    FT_CHECK_OK(ferry_dma_abort(q));
    FT_CHECK_STATUS(ferry_dma_wait(q, SD_TIMEOUT_MS), FERRY_ERR_CANCELED);
    ferry_status_t st;
    FT_CHECK(ferry_dma_state(q, &st) == FERRY_DMA_FAILED && st == FERRY_ERR_CANCELED, "aborted");
    be.length = 4096;
    FT_CHECK_OK(ferry_dma_post(q, &be, 1));
    FT_CHECK_STATUS(ferry_dma_start(q, NULL, NULL), FERRY_INPROGRESS);
    FT_CHECK_OK(ferry_dma_wait(q, SD_TIMEOUT_MS));
    FT_CHECK_OK(ferry_dma_destroy(q));
    free(buf);

    FT_CHECK_STATUS(ferry_rsegment_map(d->rs[2], 0, 16, 0, &p), FERRY_ERR_UNSUPPORTED);
    FT_CHECK_STATUS(ferry_rsegment_map(d->rs[1], SD_SIZE1, 1, 0, &p), FERRY_ERR_OUT_OF_RANGE);
}

int main(void)
{
    static sd_t d;
    uint8_t address[FT_CHAN_MSG_MAX];

    ft_set_role("importer");
    ft_watchdog(175);
    ft_seg_sizes_t sizes = {.size1 = SD_SIZE1, .size2 = SD_SIZE2};
    ft_peer_spawn(&d.owner, "owner", ft_seg_owner, &sizes);
    ft_ferry_init(&d.f, NULL, NULL);
    size_t len = ft_recv_address(d.owner.chan, address, sizeof(address), SD_TIMEOUT_MS);
    d.ep = ft_ep_create(d.f.worker, address, len, NULL);
    for (unsigned s = 1; s <= 2; s++) {
        FT_CHECK_OK(ferry_rsegment_connect(d.ep, s, SD_TIMEOUT_MS, 0, NULL, NULL, &d.rs[s]));
        FT_CHECK(ferry_rsegment_size(d.rs[s]) == (s == 1 ? SD_SIZE1 : SD_SIZE2), "size");
    }
    uint64_t start = ft_now_ns();
    sd_sizes(&d, 1);
    sd_sizes(&d, 2);
    sd_scatter(&d, 1);
    sd_scatter(&d, 2);
    sd_bad(&d);
    for (unsigned s = 1; s <= 2; s++)
        FT_CHECK_OK(ferry_rsegment_disconnect(d.rs[s]));
    ft_chan_send_token(d.owner.chan, FT_SEG_EXIT, 0, 0, 0, 0);
    ft_peer_expect_exit(&d.owner, SD_TIMEOUT_MS, 0);
    ferry_ep_destroy(d.ep);
    ft_ferry_fini(&d.f);
    ft_note("DMA sizes, scatter lists, bad input: ok (%.2f s)",
            (double)(ft_now_ns() - start) / 1e9);
    return 0;
}
