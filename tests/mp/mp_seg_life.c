/* Named segments: the whole life cycle between processes, four importers, and the local bad
 * input.
 *
 * The parent owns segment 42 (1 MiB, ferry_mem_alloc memory). Before publishing it, it checks
 * the state machine: a duplicate id (FERRY_ERR_ALREADY_EXISTS), set_available / set_unavailable
 * before prepare, prepare twice, set_available twice (FERRY_ERR_ILLEGAL_STATE), and an automatic
 * id. Importers I1..I3 connect (synchronously), check the size, map their own 4 KiB slice,
 * write a pattern there through the map, issue a store barrier, and notify the owner with 16
 * bytes naming them. The owner sees 3 CONNECTs and 3 NOTIFYs (each with its data) and finds
 * every importer's pattern in its memory (PIO through a map seen by the owner). It then sets
 * the segment unavailable: I4's connect gets FERRY_ERR_NOT_AVAILABLE, and to id 999
 * FERRY_ERR_NO_ELEM, while I1..I3 still notify successfully (the owner sees those). The owner
 * writes a pattern into [512 KiB, 768 KiB) and REMOVES the segment while I1..I3 are connected:
 * ptr NULL, size 0, prepare / set_available / set_unavailable / remove -> FERRY_ERR_REMOVED; I4's
 * connect to 42 now gets FERRY_ERR_NO_ELEM; a new segment may take id 42 again. I1..I3 read the
 * pattern through a read-only map and through a DMA read, every byte checked; disconnect while
 * mapped gets FERRY_ERR_BUSY; a map beyond the end FERRY_ERR_OUT_OF_RANGE; they unmap and
 * disconnect. The owner sees 3 DISCONNECTs (the connection ids of the CONNECTs), and the
 * registration that held the memory is gone (INTERNAL: the context's slots), so nothing leaks
 * (ASan checks the rest). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ft.h"
#include "wireup/context.h"

enum { SL_TAG_GO = 0x474f2020, SL_TAG_DONE = 0x444f4e45, SL_TAG_RESULT = 0x52534c54 };
enum { SL_STEP_CONNECT = 1, SL_STEP_UNAVAILABLE, SL_STEP_REMOVED, SL_STEP_READ, SL_STEP_EXIT };

#define SL_ID 42u
#define SL_SIZE (1024u * 1024u)
#define SL_SLICE 4096u
#define SL_R_OFFSET (512u * 1024u)
#define SL_R_LENGTH (256u * 1024u)
#define SL_TIMEOUT_MS 20000
#define SL_IMPORTERS 4

static uint64_t sl_slice_seed(unsigned k)
{
    return ft_pattern_seed(k, 0x51, SL_SLICE);
}

static uint64_t sl_r_seed(void)
{
    return ft_pattern_seed(0, 0x52, SL_R_LENGTH);
}

static unsigned sl_live_slots(ferry_context_t *context)
{
    const mem_context_t *mc = &context->mem;
    unsigned live = 0;
    for (uint32_t i = 0; i < mc->capacity; i++)
        live += mc->slots[i] != NULL;
    return live;
}

/* ------------------------------------------------------------------ importers */

static int sl_importer(int chan, void *arg)
{
    unsigned k = (unsigned)(uintptr_t)arg; /* 1..4 */
    static char role[16];
    uint8_t address[FT_CHAN_MSG_MAX];
    ft_ferry_t f;
    ft_token_t token;
    ferry_rsegment_t *rseg = NULL;

    snprintf(role, sizeof(role), "importer%u", k);
    ft_set_role(role);
    ft_ferry_init(&f, NULL, NULL);
    size_t len = ft_recv_address(chan, address, sizeof(address), SL_TIMEOUT_MS);
    ferry_ep_t *ep = ft_ep_create(f.worker, address, len, NULL);

    if (k < SL_IMPORTERS) {
        ft_progress_until_token(f.worker, chan, SL_TAG_GO, SL_TIMEOUT_MS, &token);
        FT_CHECK(token.v[0] == SL_STEP_CONNECT, "step %llu", (unsigned long long)token.v[0]);
        FT_CHECK_OK(ferry_rsegment_connect(ep, SL_ID, SL_TIMEOUT_MS, 0, NULL, NULL, &rseg));
        FT_CHECK(ferry_rsegment_size(rseg) == SL_SIZE, "size %zu", ferry_rsegment_size(rseg));
        FT_CHECK_STATUS(ferry_rsegment_status(rseg), FERRY_OK);
        void *p = NULL;
        FT_CHECK_OK(ferry_rsegment_map(rseg, (uint64_t)k * SL_SLICE, SL_SLICE, 0, &p));
        ft_pattern_fill(p, SL_SLICE, sl_slice_seed(k), 0);
        FT_CHECK_OK(ferry_rsegment_store_barrier(rseg));
        char note[16];
        memset(note, 0, sizeof(note));
        snprintf(note, sizeof(note), "hello from %u", k);
        FT_CHECK_OK(ferry_rsegment_notify(rseg, note, sizeof(note)));
        FT_CHECK_OK(ferry_rsegment_unmap(rseg, p));
        FT_CHECK_STATUS(ferry_rsegment_unmap(rseg, p), FERRY_ERR_NO_ELEM);
        ft_chan_send_token(chan, SL_TAG_DONE, SL_STEP_CONNECT, 0, 0, 0);

        ft_progress_until_token(f.worker, chan, SL_TAG_GO, SL_TIMEOUT_MS, &token);
        FT_CHECK(token.v[0] == SL_STEP_UNAVAILABLE, "step");
        FT_CHECK_OK(ferry_rsegment_notify(rseg, "still here", 10));
        ft_chan_send_token(chan, SL_TAG_DONE, SL_STEP_UNAVAILABLE, 0, 0, 0);

        ft_progress_until_token(f.worker, chan, SL_TAG_GO, SL_TIMEOUT_MS, &token);
        FT_CHECK(token.v[0] == SL_STEP_READ, "step");
        /* the segment was removed: its data is still there for us */
        void *ro = NULL;
        FT_CHECK_OK(
            ferry_rsegment_map(rseg, SL_R_OFFSET, SL_R_LENGTH, FERRY_RSEGMENT_MAP_READONLY, &ro));
        ft_pattern_check(ro, SL_R_LENGTH, sl_r_seed(), 0, "R through a read-only map");
        FT_CHECK_STATUS(ferry_rsegment_disconnect(rseg), FERRY_ERR_BUSY);
        FT_CHECK_STATUS(ferry_rsegment_map(rseg, SL_SIZE - 10, 11, 0, &p), FERRY_ERR_OUT_OF_RANGE);
        FT_CHECK_STATUS(ferry_rsegment_map(rseg, UINT64_MAX - 2, 8, 0, &p), FERRY_ERR_OUT_OF_RANGE);
        FT_CHECK_OK(ferry_rsegment_unmap(rseg, ro));
        uint8_t *buf = malloc(SL_R_LENGTH);
        FT_CHECK(buf != NULL, "malloc");
        memset(buf, 0, SL_R_LENGTH);
        ferry_dma_queue_t *q = NULL;
        FT_CHECK_OK(ferry_dma_create(rseg, &q));
        ferry_dma_entry_t e = {.local = buf,
                               .remote_offset = SL_R_OFFSET,
                               .length = SL_R_LENGTH,
                               .direction = FERRY_DMA_READ};
        FT_CHECK_OK(ferry_dma_post(q, &e, 1));
        FT_CHECK_STATUS(ferry_dma_start(q, NULL, NULL), FERRY_INPROGRESS);
        FT_CHECK_STATUS(ferry_rsegment_disconnect(rseg), FERRY_ERR_BUSY);
        FT_CHECK_OK(ferry_dma_wait(q, SL_TIMEOUT_MS));
        ft_pattern_check(buf, SL_R_LENGTH, sl_r_seed(), 0, "R through a DMA read");
        FT_CHECK_OK(ferry_dma_destroy(q));
        free(buf);
        FT_CHECK_OK(ferry_rsegment_disconnect(rseg));
        ft_chan_send_token(chan, SL_TAG_DONE, SL_STEP_READ, 0, 0, 0);
    } else {
        ft_progress_until_token(f.worker, chan, SL_TAG_GO, SL_TIMEOUT_MS, &token);
        FT_CHECK(token.v[0] == SL_STEP_UNAVAILABLE, "step");
        FT_CHECK_STATUS(ferry_rsegment_connect(ep, SL_ID, SL_TIMEOUT_MS, 0, NULL, NULL, &rseg),
                        FERRY_ERR_NOT_AVAILABLE);
        FT_CHECK_STATUS(ferry_rsegment_connect(ep, 999, SL_TIMEOUT_MS, 0, NULL, NULL, &rseg),
                        FERRY_ERR_NO_ELEM);
        FT_CHECK(rseg == NULL, "rseg set on failure");
        ft_chan_send_token(chan, SL_TAG_DONE, SL_STEP_UNAVAILABLE, 0, 0, 0);

        ft_progress_until_token(f.worker, chan, SL_TAG_GO, SL_TIMEOUT_MS, &token);
        FT_CHECK(token.v[0] == SL_STEP_REMOVED, "step");
        FT_CHECK_STATUS(ferry_rsegment_connect(ep, SL_ID, SL_TIMEOUT_MS, 0, NULL, NULL, &rseg),
                        FERRY_ERR_NO_ELEM);
        ft_chan_send_token(chan, SL_TAG_DONE, SL_STEP_REMOVED, 0, 0, 0);
    }
    ft_progress_until_token(f.worker, chan, SL_TAG_GO, SL_TIMEOUT_MS, &token);
    FT_CHECK(token.v[0] == SL_STEP_EXIT, "step");
    ferry_ep_destroy(ep);
    ft_ferry_fini(&f);
    return 0;
}

/* ------------------------------------------------------------------ owner */

static ft_peer_t sl_peers[SL_IMPORTERS];

static void sl_go(unsigned first, unsigned last, uint64_t step)
{
    for (unsigned i = first; i <= last; i++)
        ft_chan_send_token(sl_peers[i - 1].chan, SL_TAG_GO, step, 0, 0, 0);
}

static void sl_wait_done(ferry_worker_t *w, unsigned first, unsigned last, uint64_t step)
{
    ft_token_t token;
    for (unsigned i = first; i <= last; i++) {
        ft_progress_until_token(w, sl_peers[i - 1].chan, SL_TAG_DONE, SL_TIMEOUT_MS, &token);
        FT_CHECK(token.v[0] == step, "importer %u finished step %llu, expected %llu", i,
                 (unsigned long long)token.v[0], (unsigned long long)step);
    }
}

static ferry_segment_event_t sl_event(ferry_segment_t *seg, ferry_segment_event_type_t type)
{
    ferry_segment_event_t ev;
    ferry_status_t status = FERRY_OK;
    for (int i = 0; i < SL_TIMEOUT_MS / 100; i++) {
        status = ferry_segment_wait_event(seg, 100, &ev);
        if (status == FERRY_OK)
            break;
        FT_CHECK(status == FERRY_ERR_TIMED_OUT, "wait_event: %s", ferry_status_name(status));
        ft_peers_check();
    }
    FT_CHECK_OK(status);
    FT_CHECK(ev.type == type, "event type %d, expected %d", (int)ev.type, (int)type);
    return ev;
}

int main(void)
{
    ft_files_t before;
    ft_ferry_t f;
    ferry_segment_t *seg, *other, *dup;
    uint64_t connections[SL_IMPORTERS] = {0};

    ft_set_role("owner");
    ft_watchdog(55);
    ft_files_snapshot(&before);
    for (unsigned i = 0; i < SL_IMPORTERS; i++)
        ft_peer_spawn(&sl_peers[i], "importer", sl_importer, (void *)(uintptr_t)(i + 1));
    ft_ferry_init(&f, NULL, NULL);
    ferry_worker_t *w = f.worker;
    unsigned slots_before = sl_live_slots(f.context);

    /* state machine and ids */
    FT_CHECK_OK(ferry_segment_create(w, SL_ID, SL_SIZE, 0, NULL, NULL, &seg));
    FT_CHECK_STATUS(ferry_segment_create(w, SL_ID, 4096, 0, NULL, NULL, &dup),
                    FERRY_ERR_ALREADY_EXISTS);
    FT_CHECK_STATUS(ferry_segment_create(w, 7, 0, 0, NULL, NULL, &dup), FERRY_ERR_INVALID_PARAM);
    FT_CHECK_STATUS(ferry_segment_set_available(seg), FERRY_ERR_ILLEGAL_STATE);
    FT_CHECK_STATUS(ferry_segment_set_unavailable(seg), FERRY_ERR_ILLEGAL_STATE);
    FT_CHECK_OK(ferry_segment_prepare(seg, 0));
    FT_CHECK_STATUS(ferry_segment_prepare(seg, 0), FERRY_ERR_ILLEGAL_STATE);
    FT_CHECK_STATUS(ferry_segment_set_unavailable(seg), FERRY_ERR_ILLEGAL_STATE);
    FT_CHECK_OK(ferry_segment_set_available(seg));
    FT_CHECK_STATUS(ferry_segment_set_available(seg), FERRY_ERR_ILLEGAL_STATE);
    FT_CHECK(ferry_segment_id(seg) == SL_ID && ferry_segment_size(seg) == SL_SIZE &&
                 ferry_segment_ptr(seg) != NULL,
             "id, size, ptr");
    FT_CHECK_OK(ferry_segment_create(w, FERRY_SEGMENT_AUTO_ID, 4096, 0, NULL, NULL, &other));
    FT_CHECK(ferry_segment_id(other) >= FERRY_SEGMENT_AUTO_ID_BASE &&
                 ferry_segment_id(other) != FERRY_SEGMENT_AUTO_ID,
             "automatic id %u", ferry_segment_id(other));
    ferry_segment_release(other);

    for (unsigned i = 0; i < SL_IMPORTERS; i++)
        ft_send_address(sl_peers[i].chan, w);

    /* three importers connect, write through their maps, notify */
    sl_go(1, 3, SL_STEP_CONNECT);
    unsigned notified = 0, connected = 0;
    while (connected < 3 || notified < 3) {
        ferry_segment_event_t ev;
        ferry_status_t status = ferry_segment_wait_event(seg, 100, &ev);
        ft_peers_check();
        if (status == FERRY_ERR_TIMED_OUT)
            continue;
        FT_CHECK_OK(status);
        if (ev.type == FERRY_SEGMENT_EVENT_CONNECT) {
            FT_CHECK(ev.connection != 0 && ev.ep != NULL, "CONNECT without peer");
            connections[connected++] = ev.connection;
        } else {
            FT_CHECK(ev.type == FERRY_SEGMENT_EVENT_NOTIFY, "event %d", (int)ev.type);
            unsigned k = 0;
            FT_CHECK(ev.length == 16 && sscanf((const char *)ev.data, "hello from %u", &k) == 1 &&
                         k >= 1 && k <= 3,
                     "NOTIFY data");
            notified++;
        }
    }
    FT_CHECK(ferry_segment_connections(seg) == 3, "%u connections", ferry_segment_connections(seg));
    sl_wait_done(w, 1, 3, SL_STEP_CONNECT);
    for (unsigned k = 1; k <= 3; k++)
        ft_pattern_check((char *)ferry_segment_ptr(seg) + (size_t)k * SL_SLICE, SL_SLICE,
                         sl_slice_seed(k), 0, "an importer's slice, seen by the owner");

    /* unavailable: the 4th is refused, the first 3 keep working */
    FT_CHECK_OK(ferry_segment_set_unavailable(seg));
    FT_CHECK_STATUS(ferry_segment_set_unavailable(seg), FERRY_ERR_ILLEGAL_STATE);
    sl_go(1, 4, SL_STEP_UNAVAILABLE);
    for (unsigned i = 0; i < 3; i++) {
        ferry_segment_event_t ev = sl_event(seg, FERRY_SEGMENT_EVENT_NOTIFY);
        FT_CHECK(ev.length == 10 && memcmp(ev.data, "still here", 10) == 0, "NOTIFY data");
    }
    sl_wait_done(w, 1, 4, SL_STEP_UNAVAILABLE);

    /* remove while connected */
    ft_pattern_fill((char *)ferry_segment_ptr(seg) + SL_R_OFFSET, SL_R_LENGTH, sl_r_seed(), 0);
    FT_CHECK_OK(ferry_segment_remove(seg));
    FT_CHECK(ferry_segment_ptr(seg) == NULL && ferry_segment_size(seg) == 0,
             "ptr/size after remove");
    FT_CHECK(ferry_segment_id(seg) == SL_ID, "id after remove");
    FT_CHECK_STATUS(ferry_segment_prepare(seg, 0), FERRY_ERR_REMOVED);
    FT_CHECK_STATUS(ferry_segment_set_available(seg), FERRY_ERR_REMOVED);
    FT_CHECK_STATUS(ferry_segment_set_unavailable(seg), FERRY_ERR_REMOVED);
    FT_CHECK_STATUS(ferry_segment_remove(seg), FERRY_ERR_REMOVED);
    FT_CHECK(sl_live_slots(f.context) == slots_before + 1, "the memory must live on");
    sl_go(4, 4, SL_STEP_REMOVED);
    sl_wait_done(w, 4, 4, SL_STEP_REMOVED);
    FT_CHECK_OK(ferry_segment_create(w, SL_ID, 4096, 0, NULL, NULL, &other)); /* id free again */
    ferry_segment_release(other);

    sl_go(1, 3, SL_STEP_READ);
    for (unsigned i = 0; i < 3; i++) {
        ferry_segment_event_t ev = sl_event(seg, FERRY_SEGMENT_EVENT_DISCONNECT);
        FT_CHECK_OK(ev.status);
        int known = 0;
        for (unsigned j = 0; j < 3; j++)
            known |= connections[j] == ev.connection;
        FT_CHECK(known, "DISCONNECT of connection %llu", (unsigned long long)ev.connection);
    }
    sl_wait_done(w, 1, 3, SL_STEP_READ);
    FT_CHECK(ferry_segment_connections(seg) == 0, "connections left");
    FT_CHECK(sl_live_slots(f.context) == slots_before, "the removed segment's memory is freed");
    ferry_segment_release(seg);

    sl_go(1, 4, SL_STEP_EXIT);
    for (unsigned i = 0; i < SL_IMPORTERS; i++)
        ft_peer_expect_exit(&sl_peers[i], SL_TIMEOUT_MS, 0);
    ft_ferry_fini(&f);
    ft_files_check_new(&before);
    ft_files_free(&before);
    ft_note("life cycle, 4 importers, remove while connected: ok");
    return 0;
}
