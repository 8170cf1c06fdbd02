/* A bootstrap collective that progresses a worker (ferry_bootstrap_set_progress).
 * 1. Rank 0 goes straight into ferry_bootstrap_barrier while rank 1 writes 4 MiB into rank 0's
 *    memory (over tcp the target performs it: it needs rank 0's progress) and flushes before it
 *    joins the barrier. Without the progress hook rank 0 would sit in the barrier and rank 1 in
 *    its flush until the bootstrap's timeout. Every byte written is checked.
 * 2. Rank 0 creates an endpoint to rank 1, sends one active message at once (the endpoint is
 *    still connecting: ferry keeps a copy and answers FERRY_OK) and goes into the barrier; rank 1
 *    joins the barrier only after that message arrived. The message leaves rank 0 only when the
 *    handshake finishes, in rank 0's progress: without the hook both would wait for good (what
 *    the netns suite's mpirun job hit, intermittently, in a PMIx fence).
 * Run by tests/netns/local_job.sh (2 ranks, the tcp method), over tcp and over shm. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ferry/bootstrap.h>
#include <ferry/ferry.h>

#include "ft_check.h"
#include "ft_pattern.h"
#include "ft_progress.h"

#define SIZE ((size_t)4 << 20)
#define ADDR_MAX 1024
#define KEY_MAX 256
#define AM_LAST 7

static bool am_arrived;

static ferry_status_t on_last(void *arg, const void *header, size_t header_length, void *data,
                              size_t length, const ferry_am_recv_params_t *params)
{
    uint64_t v;
    (void)arg, (void)data, (void)params;
    FT_CHECK(header_length == sizeof(v) && length == 0, "message of %zu + %zu bytes", header_length,
             length);
    memcpy(&v, header, sizeof(v));
    FT_CHECK(v == 0x1a57, "message 0x%llx", (unsigned long long)v);
    am_arrived = true;
    return FERRY_OK;
}

static bool arrived(void *arg)
{
    (void)arg;
    return am_arrived;
}

typedef struct card {
    uint32_t address_length;
    uint32_t key_length;
    uint8_t address[ADDR_MAX];
    uint8_t key[KEY_MAX];
} card_t;

int main(void)
{
    ferry_bootstrap_t *bs;
    ferry_context_t *context;
    ferry_worker_t *worker;
    ft_watchdog(90);
    FT_CHECK_OK(ferry_bootstrap_init(NULL, &bs));
    unsigned rank = ferry_bootstrap_rank(bs), size = ferry_bootstrap_size(bs);
    FT_CHECK(size == 2, "2 ranks, not %u", size);
    FT_CHECK_OK(ferry_context_create(NULL, &context));
    FT_CHECK_OK(ferry_worker_create(context, NULL, &worker));
    FT_CHECK_OK(ferry_bootstrap_set_progress(bs, worker));
    FT_CHECK_OK(ferry_am_set_handler(worker, AM_LAST, on_last, NULL));

    /* rank 0 exposes 4 MiB; both allgather address and key */
    ferry_mem_t *mem = NULL;
    card_t mine = {0}, all[2];
    const void *address;
    size_t length;
    FT_CHECK_OK(ferry_worker_address(worker, &address, &length));
    FT_CHECK(length <= ADDR_MAX, "address of %zu bytes", length);
    memcpy(mine.address, address, length);
    mine.address_length = (uint32_t)length;
    uint8_t *target = NULL;
    if (rank == 0) {
        target = calloc(1, SIZE);
        FT_CHECK(target != NULL, "out of memory");
        ferry_iov_t iov = {target, SIZE};
        FT_CHECK_OK(ferry_mem_register(context, &iov, 1, FERRY_ACCESS_REMOTE_WRITE, 0, &mem));
        void *key;
        size_t key_length;
        FT_CHECK_OK(ferry_rkey_pack(mem, &key, &key_length));
        FT_CHECK(key_length <= KEY_MAX, "key of %zu bytes", key_length);
        memcpy(mine.key, key, key_length);
        mine.key_length = (uint32_t)key_length;
        ferry_rkey_buffer_release(key);
    }
    FT_CHECK_OK(ferry_bootstrap_allgather(bs, &mine, sizeof(mine), all));

    if (rank == 1) {
        ferry_ep_t *ep;
        ferry_rkey_t *rkey;
        FT_CHECK_OK(ferry_ep_create(worker, all[0].address, all[0].address_length, NULL, &ep));
        FT_CHECK_OK(ferry_rkey_unpack(ep, all[0].key, all[0].key_length, &rkey));
        uint8_t *source = malloc(SIZE);
        FT_CHECK(source != NULL, "out of memory");
        ft_pattern_fill(source, SIZE, ft_pattern_seed(1, 0, SIZE), 0);
        ferry_completion_t put = {.count = 1}, flush = {.count = 1};
        ferry_status_t st;
        while ((st = ferry_put(ep, source, SIZE, 0, rkey, &put)) == FERRY_ERR_NO_RESOURCE)
            ferry_worker_progress(worker);
        if (st == FERRY_OK)
            put.count = 0;
        else
            FT_CHECK(st == FERRY_INPROGRESS, "ferry_put: %s", ferry_status_name(st));
        FT_CHECK(ferry_ep_flush(ep, &flush) == FERRY_INPROGRESS, "flush did not start");
        /* rank 0 is in the barrier by now: only its bootstrap's progress serves the put */
        ft_progress_until_completion(worker, 60000, &flush, "the flush to a rank in a barrier");
        FT_CHECK_OK(flush.status);
        ft_progress_until_completion(worker, 60000, &put, "the put");
        FT_CHECK_OK(put.status);
        FT_CHECK_OK(ferry_bootstrap_barrier(bs));
        ferry_rkey_release(rkey);
        ferry_ep_destroy(ep);
        free(source);
    } else {
        FT_CHECK_OK(ferry_bootstrap_barrier(bs)); /* progresses the worker meanwhile */
        ft_pattern_check(target, SIZE, ft_pattern_seed(1, 0, SIZE), 0, "the written region");
    }
    FT_CHECK_OK(ferry_bootstrap_barrier(bs));

    /* 2: a message sent while its endpoint connects, then a barrier */
    if (rank == 0) {
        ferry_ep_t *ep;
        uint64_t v = 0x1a57;
        FT_CHECK_OK(ferry_ep_create(worker, all[1].address, all[1].address_length, NULL, &ep));
        ferry_status_t st;
        while ((st = ferry_am_send(ep, AM_LAST, &v, sizeof(v), NULL, 0, NULL)) ==
               FERRY_ERR_NO_RESOURCE)
            ferry_worker_progress(worker);
        FT_CHECK(st == FERRY_OK, "ferry_am_send: %s", ferry_status_name(st));
        FT_CHECK_OK(ferry_bootstrap_barrier(bs)); /* the message leaves from in here */
        ferry_ep_destroy(ep);
    } else {
        FT_CHECK(ft_progress_try_until(worker, 30000, arrived, NULL),
                 "rank 0's message, sent while its endpoint connected, did not leave rank 0 "
                 "while rank 0 waited in ferry_bootstrap_barrier");
        FT_CHECK_OK(ferry_bootstrap_barrier(bs));
    }
    FT_CHECK_OK(ferry_bootstrap_barrier(bs));
    if (mem != NULL)
        FT_CHECK_OK(ferry_mem_deregister(mem));
    free(target);
    ferry_worker_destroy(worker);
    ferry_context_destroy(context);
    ferry_bootstrap_finalize(bs);
    printf("mp_bootstrap_progress: rank %u passed\n", rank);
    return 0;
}
