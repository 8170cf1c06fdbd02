/* Streams of numbered messages (ft_seq.h). */
#define _GNU_SOURCE
#include "ft_seq.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ft_check.h"
#include "ft_ferry.h"
#include "ft_pattern.h"
#include "ft_progress.h"

void ft_seq_recv(ft_seq_rx_t *rx, const void *header, size_t header_length, void *header_copy,
                 size_t header_size, const void *data, size_t length,
                 const ferry_am_recv_params_t *params)
{
    ft_seq_hdr_t h; /* headers are not aligned for 8-byte fields: copy */
    char what[64];
    FT_CHECK(header != NULL && header_length == header_size && header_size >= sizeof(h),
             "bad header (%zu bytes, %zu expected)", header_length, header_size);
    memcpy(header_copy, header, header_size);
    memcpy(&h, header, sizeof(h));
    FT_CHECK(h.magic == rx->magic, "bad magic 0x%x (0x%x expected)", h.magic, rx->magic);
    FT_CHECK(h.seq == rx->next_seq, "seq %u where %u was expected", h.seq, rx->next_seq);
    FT_CHECK(length == h.size, "seq %u: %zu bytes, the header says %llu", h.seq, length,
             (unsigned long long)h.size);
    snprintf(what, sizeof(what), "message seq %u from %u", h.seq, rx->sender);
    ft_pattern_check(data, length, ft_pattern_seed(rx->sender, h.seq, length), 0, what);
    rx->next_seq++;
    rx->received++;
    rx->reply_ep = params->reply_ep;
}

ferry_status_t ft_seq_handler(void *arg, const void *header, size_t header_length, void *data,
                              size_t length, const ferry_am_recv_params_t *params)
{
    ft_seq_hdr_t h;
    ft_seq_recv(arg, header, header_length, &h, sizeof(h), data, length, params);
    return FERRY_OK;
}

void ft_seq_send(ferry_worker_t *worker, ferry_ep_t *ep, unsigned id, uint32_t magic,
                 uint32_t sender, uint32_t seq, size_t size)
{
    ft_seq_hdr_t h = {.magic = magic, .seq = seq, .size = size};
    ferry_completion_t comp = {.cb = NULL, .count = 0, .status = FERRY_OK};
    uint8_t *buf = malloc(size ? size : 1);
    FT_CHECK(buf != NULL, "out of memory for a %zu-byte message", size);
    ft_pattern_fill(buf, size, ft_pattern_seed(sender, seq, size), 0);
    ft_am_send_ok(worker, ep, id, &h, sizeof(h), buf, size, &comp, 30000);
    ft_progress_until_completion(worker, 30000, &comp, "a send's completion");
    FT_CHECK(comp.status == FERRY_OK, "seq %u completed with %s", seq,
             ferry_status_name(comp.status));
    free(buf);
}
