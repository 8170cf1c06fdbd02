/* The segment tests' owner peer and its checks (ft_seg.h). */
#define _GNU_SOURCE
#include "ft_seg.h"

#include <stdlib.h>
#include <string.h>

#include "ft.h"

int ft_seg_owner(int chan, void *arg)
{
    const ft_seg_sizes_t *sizes = arg;
    ft_ferry_t f;
    ferry_segment_t *s1, *s2;
    ferry_mem_t *mem2;

    ft_set_role("owner");
    ft_ferry_init(&f, NULL, NULL);
    uint8_t *buf2 = aligned_alloc(4096, sizes->size2);
    FT_CHECK(buf2 != NULL, "malloc");
    memset(buf2, 0, sizes->size2);
    ferry_iov_t iov = {.buffer = buf2, .length = sizes->size2};
    FT_CHECK_OK(ferry_mem_register(f.context, &iov, 1, FERRY_ACCESS_ALL, 0, &mem2));
    FT_CHECK_OK(ferry_segment_create(f.worker, 1, sizes->size1, 0, NULL, NULL, &s1));
    FT_CHECK_OK(ferry_segment_create_from_mem(f.worker, 2, mem2, 0, NULL, NULL, &s2));
    ferry_segment_t *segs[3] = {NULL, s1, s2};
    for (unsigned i = 1; i <= 2; i++) {
        FT_CHECK_OK(ferry_segment_prepare(segs[i], 0));
        FT_CHECK_OK(ferry_segment_set_available(segs[i]));
    }
    ft_send_address(chan, f.worker);
    for (;;) {
        ft_token_t t;
        size_t len;
        ft_progress_once(f.worker);
        if (!ft_chan_try_recv(chan, &t, sizeof(t), &len))
            continue;
        if (t.tag == FT_SEG_EXIT)
            break;
        FT_CHECK(t.tag == FT_SEG_CHECK, "tag %x", t.tag);
        FT_CHECK(t.v[0] == 1 || t.v[0] == 2, "segment %llu", (unsigned long long)t.v[0]);
        /* v0 segment, v1 offset, v2 length, v3 seq: check the importer's bytes, write ours */
        uint8_t *p = (uint8_t *)ferry_segment_ptr(segs[t.v[0]]) + t.v[1];
        ft_pattern_check(p, t.v[2], ft_pattern_seed(FT_SEG_IMPORTER, t.v[3], t.v[2]), 0,
                         "importer's write");
        ft_pattern_fill(p, t.v[2], ft_pattern_seed(FT_SEG_OWNER, t.v[3], t.v[2]), 0);
        ft_chan_send_token(chan, FT_SEG_OK, 0, 0, 0, 0);
    }
    ferry_segment_release(s1);
    ferry_segment_release(s2); /* no peer left: drops the segment's reference on mem2 */
    FT_CHECK_OK(ferry_mem_deregister(mem2));
    free(buf2);
    ft_ferry_fini(&f);
    return 0;
}

void ft_seg_owner_check(ferry_worker_t *worker, int chan, unsigned s, uint64_t offset,
                        uint64_t length, uint64_t seq, int timeout_ms)
{
    ft_token_t t;
    ft_chan_send_token(chan, FT_SEG_CHECK, s, offset, length, seq);
    ft_progress_until_token(worker, chan, FT_SEG_OK, timeout_ms, &t);
}

void ft_seg_dma_poll_done(ferry_worker_t *worker, const ferry_dma_queue_t *q, int timeout_ms)
{
    ft_deadline_t dl = ft_deadline_in_ms(timeout_ms);
    ferry_status_t st;
    while (ferry_dma_state(q, &st) == FERRY_DMA_RUNNING) {
        FT_CHECK(st == FERRY_INPROGRESS, "running state's status");
        FT_CHECK(!ft_deadline_passed(dl), "DMA never finished");
        ft_progress_once(worker);
    }
    FT_CHECK(ferry_dma_state(q, &st) == FERRY_DMA_DONE && st == FERRY_OK, "state");
}

ferry_dma_entry_t *ft_seg_scatter(size_t count, uint64_t seq0, uint8_t **bufs)
{
    ferry_dma_entry_t *e = calloc(count, sizeof(*e));
    *bufs = malloc(count * 2000);
    FT_CHECK(e != NULL && *bufs != NULL, "malloc for a scatter list of %zu entries", count);
    for (size_t k = 0; k < count; k++) {
        size_t length = 1 + (k * 7919u) % 2000u;
        if (length + (k % 13) > 2000)
            length = 2000 - (k % 13);
        e[k] = (ferry_dma_entry_t){.local = *bufs + k * 2000,
                                   .remote_offset = (uint64_t)k * 2000 + (k % 13),
                                   .length = length,
                                   .direction = FERRY_DMA_WRITE};
        ft_pattern_fill(e[k].local, length, ft_pattern_seed(FT_SEG_IMPORTER, seq0 + k, length), 0);
    }
    return e;
}
