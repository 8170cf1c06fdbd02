/* The bootstrap's all-to-all job for the tests (ft_alltoall.h). */
#include "ft_alltoall.h"

#include <stdlib.h>
#include <string.h>

#include "ft.h"

enum { AA_ID = 7 };
#define AA_TIMEOUT_MS 30000

static const size_t aa_sizes[] = {0, 1, 100, 5000, 200 * 1024};
#define AA_SIZES (sizeof(aa_sizes) / sizeof(aa_sizes[0]))

typedef struct aa_header {
    uint32_t sender;
    uint32_t size_index;
} aa_header_t;

typedef struct aa_state {
    unsigned rank, size;
    uint64_t received; /* messages received, every byte checked */
    uint64_t closed;   /* other ranks that closed their endpoint to us */
    uint8_t *seen;     /* [sender * AA_SIZES + size_index] */
} aa_state_t;

static ferry_status_t aa_on_message(void *arg, const void *header, size_t header_length, void *data,
                                    size_t length, const ferry_am_recv_params_t *params)
{
    aa_state_t *aa = arg;
    aa_header_t h;
    (void)params;

    FT_CHECK(header_length == sizeof(h), "rank %u: header of %zu bytes, expected %zu", aa->rank,
             header_length, sizeof(h));
    memcpy(&h, header, sizeof(h));
    FT_CHECK(h.sender < aa->size && h.sender != aa->rank && h.size_index < AA_SIZES,
             "rank %u: message from rank %u, size index %u: out of range", aa->rank, h.sender,
             h.size_index);
    size_t expected = aa_sizes[h.size_index];
    FT_CHECK(length == expected, "rank %u: %zu bytes from rank %u, expected %zu", aa->rank, length,
             h.sender, expected);
    uint8_t *seen = &aa->seen[h.sender * AA_SIZES + h.size_index];
    FT_CHECK(*seen == 0, "rank %u: message %u from rank %u arrived twice", aa->rank, h.size_index,
             h.sender);
    ft_pattern_check(data, length, ft_pattern_seed(h.sender, aa->rank, length), 0,
                     "an all-to-all message");
    *seen = 1;
    aa->received++;
    return FERRY_OK;
}

static void aa_on_accepted_error(void *arg, ferry_ep_t *ep, ferry_status_t status)
{
    aa_state_t *aa = arg;
    (void)ep;
    FT_CHECK(status == FERRY_ERR_ENDPOINT_CLOSED, "rank %u: an accepted endpoint failed: %s",
             aa->rank, ferry_status_name(status));
    aa->closed++;
}

/* Allgather the worker addresses (lengths first, then padded to the longest). */
static uint8_t *aa_exchange(ferry_bootstrap_t *bs, ferry_worker_t *worker, uint64_t **lengths_p,
                            size_t *stride_p)
{
    unsigned size = ferry_bootstrap_size(bs);
    const void *address;
    size_t length;
    uint64_t mine, longest = 0;

    FT_CHECK_OK(ferry_worker_address(worker, &address, &length));
    uint64_t *lengths = calloc(size, sizeof(*lengths));
    FT_CHECK(lengths != NULL, "out of memory");
    mine = length;
    FT_CHECK_OK(ferry_bootstrap_allgather(bs, &mine, sizeof(mine), lengths));
    FT_CHECK(lengths[ferry_bootstrap_rank(bs)] == length, "allgather lost our own length");
    for (unsigned r = 0; r < size; r++)
        longest = lengths[r] > longest ? lengths[r] : longest;
    uint8_t *padded = calloc(1, longest);
    uint8_t *all = calloc(size, longest);
    FT_CHECK(padded != NULL && all != NULL, "out of memory");
    memcpy(padded, address, length);
    FT_CHECK_OK(ferry_bootstrap_allgather(bs, padded, longest, all));
    FT_CHECK(memcmp(all + ferry_bootstrap_rank(bs) * longest, padded, longest) == 0,
             "allgather changed our own address");
    free(padded);
    *lengths_p = lengths;
    *stride_p = longest;
    return all;
}

void ft_bootstrap_alltoall(ferry_bootstrap_t *bs)
{
    aa_state_t aa = {.rank = ferry_bootstrap_rank(bs), .size = ferry_bootstrap_size(bs)};
    ferry_worker_params_t wparams = {.accepted_ep_error_cb = aa_on_accepted_error,
                                     .accepted_ep_error_arg = &aa};
    ferry_completion_t comp = {.cb = NULL, .count = 0, .status = FERRY_OK};
    uint64_t *lengths;
    size_t stride;
    ft_ferry_t f;

    FT_CHECK(aa.size >= 1 && aa.rank < aa.size, "rank %u of %u", aa.rank, aa.size);
    FT_CHECK(ferry_bootstrap_is_local(bs, aa.rank), "rank %u: not local to itself", aa.rank);
    aa.seen = calloc((size_t)aa.size * AA_SIZES, 1);
    FT_CHECK(aa.seen != NULL, "out of memory");
    ft_ferry_init(&f, NULL, &wparams);
    FT_CHECK_OK(ferry_am_set_handler(f.worker, AA_ID, aa_on_message, &aa));
    uint8_t *addresses = aa_exchange(bs, f.worker, &lengths, &stride);

    ferry_ep_t **eps = calloc(aa.size, sizeof(*eps));
    uint8_t **buffers = calloc((size_t)aa.size * AA_SIZES, sizeof(*buffers));
    FT_CHECK(eps != NULL && buffers != NULL, "out of memory");
    for (unsigned step = 1; step < aa.size; step++) {
        unsigned to = (aa.rank + step) % aa.size;
        eps[to] = ft_ep_create(f.worker, addresses + to * stride, (size_t)lengths[to], NULL);
        for (unsigned s = 0; s < AA_SIZES; s++) {
            size_t length = aa_sizes[s];
            uint8_t *buffer = malloc(length + 1);
            FT_CHECK(buffer != NULL, "out of memory");
            ft_pattern_fill(buffer, length, ft_pattern_seed(aa.rank, to, length), 0);
            buffers[to * AA_SIZES + s] = buffer;
            aa_header_t h = {.sender = aa.rank, .size_index = s};
            ferry_iov_t iov = {.buffer = buffer, .length = length};
            ferry_status_t status = ft_am_send(f.worker, eps[to], AA_ID, &h, sizeof(h), &iov, 1,
                                               &comp, AA_TIMEOUT_MS, NULL);
            FT_CHECK(status == FERRY_OK || status == FERRY_INPROGRESS,
                     "rank %u: ferry_am_send to rank %u (%zu bytes): %s", aa.rank, to, length,
                     ferry_status_name(status));
        }
    }
    ft_progress_until_completion(f.worker, AA_TIMEOUT_MS, &comp, "our all-to-all sends");
    FT_CHECK(comp.status == FERRY_OK, "rank %u: a send completed with %s", aa.rank,
             ferry_status_name(comp.status));
    ft_progress_until_count(f.worker, AA_TIMEOUT_MS, &aa.received,
                            (uint64_t)(aa.size - 1) * AA_SIZES, "every other rank's messages");

    /* Close ours, wait until every other rank closed theirs: nobody leaves a peer behind. */
    for (unsigned r = 0; r < aa.size; r++) {
        if (eps[r] == NULL)
            continue;
        comp.count++;
        ferry_status_t status = ferry_ep_close(eps[r], 0, &comp);
        if (status != FERRY_INPROGRESS)
            comp.count--;
        FT_CHECK(status == FERRY_OK || status == FERRY_INPROGRESS, "ferry_ep_close: %s",
                 ferry_status_name(status));
    }
    ft_progress_until_completion(f.worker, AA_TIMEOUT_MS, &comp, "our endpoints to close");
    ft_progress_until_count(f.worker, AA_TIMEOUT_MS, &aa.closed, aa.size - 1,
                            "every other rank to close its endpoint to us");
    FT_CHECK_OK(ferry_bootstrap_barrier(bs));

    for (unsigned r = 0; r < aa.size; r++)
        ferry_ep_destroy(eps[r]);
    for (size_t i = 0; i < (size_t)aa.size * AA_SIZES; i++)
        free(buffers[i]);
    free(buffers);
    free(eps);
    free(addresses);
    free(lengths);
    ft_ferry_fini(&f);
    free(aa.seen);
    ft_note("rank %u of %u: %llu messages sent and %llu received, every byte checked", aa.rank,
            aa.size, (unsigned long long)(aa.size - 1) * AA_SIZES, (unsigned long long)aa.received);
}
