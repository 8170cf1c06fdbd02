/* Named segments: connect timeouts, asynchronous connect, and the owner's death.
 *
 * The owner (a forked peer) publishes segment 5 and then does NOT progress until told: the
 * importer's synchronous connect with a 300 ms timeout gets FERRY_ERR_TIMED_OUT after 300 ms
 * (and before 5 s), an asynchronous one with a 300 ms timeout reports a CONNECTED event with
 * FERRY_ERR_TIMED_OUT through ferry_rsegment_wait_event. The owner then progresses: it sees the
 * two late connects as CONNECT + DISCONNECT pairs (the importer answered the late replies). An
 * asynchronous connect with a callback succeeds (CONNECTED, FERRY_OK). The owner is SIGKILLed:
 * the importer's callback sees LOST within 1 s; afterwards map, notify, DMA and store barrier on
 * that remote segment fail with the endpoint's error, its memory stays readable through a map
 * made before, and disconnect frees it. A second remote segment, never mapped, is mapped right
 * after the owner is reaped and before any progress: FERRY_ERR_CONNECTION_RESET (the owner's
 * death), then the LOST status once progress has seen it. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ft.h"

enum { SX_TAG_GO = 0x474f2020, SX_TAG_SEEN = 0x5345454e };

#define SX_ID 5u
#define SX_SIZE 65536u
#define SX_TIMEOUT_MS 20000

static int sx_owner(int chan, void *arg)
{
    (void)arg;
    ft_ferry_t f;
    ferry_segment_t *seg;

    ft_set_role("owner");
    ft_ferry_init(&f, NULL, NULL);
    FT_CHECK_OK(ferry_segment_create(f.worker, SX_ID, SX_SIZE, 0, NULL, NULL, &seg));
    FT_CHECK_OK(ferry_segment_prepare(seg, 0));
    FT_CHECK_OK(ferry_segment_set_available(seg));
    ft_pattern_fill(ferry_segment_ptr(seg), SX_SIZE, ft_pattern_seed(5, 5, SX_SIZE), 0);
    ft_send_address(chan, f.worker);
    (void)ft_chan_expect_token(chan, SX_TAG_GO, SX_TIMEOUT_MS); /* no progress meanwhile */
    unsigned connects = 0, disconnects = 0;
    while (connects < 2 || disconnects < 2) {
        ferry_segment_event_t ev;
        ferry_status_t status = ferry_segment_wait_event(seg, 100, &ev);
        if (status == FERRY_ERR_TIMED_OUT)
            continue;
        FT_CHECK_OK(status);
        connects += ev.type == FERRY_SEGMENT_EVENT_CONNECT;
        disconnects += ev.type == FERRY_SEGMENT_EVENT_DISCONNECT;
    }
    ft_chan_send_token(chan, SX_TAG_SEEN, connects, disconnects, 0, 0);
    for (;;) /* serve until killed */
        ferry_segment_wait_event(seg, 100, &(ferry_segment_event_t){0});
    return 0;
}

typedef struct sx_events {
    unsigned connected, lost;
    ferry_status_t connected_status, lost_status;
    uint64_t lost_ns;
} sx_events_t;

static void sx_cb(void *arg, ferry_rsegment_t *rseg, const ferry_segment_event_t *ev)
{
    sx_events_t *e = arg;
    (void)rseg;
    if (ev->type == FERRY_SEGMENT_EVENT_CONNECTED) {
        e->connected++;
        e->connected_status = ev->status;
    } else if (ev->type == FERRY_SEGMENT_EVENT_LOST) {
        e->lost++;
        e->lost_status = ev->status;
        e->lost_ns = ft_now_ns();
    }
}

int main(void)
{
    ft_peer_t owner;
    ft_ferry_t f;
    uint8_t address[FT_CHAN_MSG_MAX];
    ferry_rsegment_t *rseg = NULL, *arseg = NULL;
    ferry_segment_event_t ev;
    static sx_events_t e;

    ft_set_role("importer");
    ft_watchdog(55);
    ft_peer_spawn(&owner, "owner", sx_owner, NULL);
    ft_ferry_init(&f, NULL, NULL);
    size_t len = ft_recv_address(owner.chan, address, sizeof(address), SX_TIMEOUT_MS);
    ferry_ep_t *ep = ft_ep_create(f.worker, address, len, NULL);

    uint64_t t0 = ft_now_ns();
    FT_CHECK_STATUS(ferry_rsegment_connect(ep, SX_ID, 300, 0, NULL, NULL, &rseg),
                    FERRY_ERR_TIMED_OUT);
    uint64_t ms = (ft_now_ns() - t0) / 1000000u;
    FT_CHECK(ms >= 299 && ms < 5000, "timed out after %llu ms", (unsigned long long)ms);
    FT_CHECK(rseg == NULL, "rseg set on timeout");

    FT_CHECK_STATUS(
        ferry_rsegment_connect(ep, SX_ID, 300, FERRY_RSEGMENT_CONNECT_ASYNC, NULL, NULL, &arseg),
        FERRY_INPROGRESS);
    FT_CHECK_STATUS(ferry_rsegment_status(arseg), FERRY_INPROGRESS);
    FT_CHECK_OK(ferry_rsegment_wait_event(arseg, SX_TIMEOUT_MS, &ev));
    FT_CHECK(ev.type == FERRY_SEGMENT_EVENT_CONNECTED && ev.status == FERRY_ERR_TIMED_OUT,
             "async timeout: event %d status %s", (int)ev.type, ferry_status_name(ev.status));
    FT_CHECK_STATUS(ferry_rsegment_status(arseg), FERRY_ERR_TIMED_OUT);
    void *p;
    FT_CHECK_STATUS(ferry_rsegment_map(arseg, 0, 1, 0, &p), FERRY_ERR_TIMED_OUT);
    FT_CHECK_OK(ferry_rsegment_disconnect(arseg));

    ft_chan_send_token(owner.chan, SX_TAG_GO, 0, 0, 0, 0);
    ft_token_t t;
    ft_progress_until_token(f.worker, owner.chan, SX_TAG_SEEN, SX_TIMEOUT_MS, &t);
    FT_CHECK(t.v[0] == 2 && t.v[1] == 2, "owner saw %llu CONNECTs, %llu DISCONNECTs",
             (unsigned long long)t.v[0], (unsigned long long)t.v[1]);

    FT_CHECK_STATUS(
        ferry_rsegment_connect(ep, SX_ID, -1, FERRY_RSEGMENT_CONNECT_ASYNC, sx_cb, &e, &rseg),
        FERRY_INPROGRESS);
    ft_deadline_t dl = ft_deadline_in_ms(SX_TIMEOUT_MS);
    while (e.connected == 0) {
        FT_CHECK(!ft_deadline_passed(dl), "no CONNECTED event");
        ft_progress_once(f.worker);
    }
    FT_CHECK_OK(e.connected_status);
    FT_CHECK(ferry_rsegment_size(rseg) == SX_SIZE, "size");
    void *ro;
    FT_CHECK_OK(ferry_rsegment_map(rseg, 0, SX_SIZE, FERRY_RSEGMENT_MAP_READONLY, &ro));

    ferry_rsegment_t *unmapped; /* connected, never mapped before the owner dies */
    FT_CHECK_OK(ferry_rsegment_connect(ep, SX_ID, SX_TIMEOUT_MS, 0, NULL, NULL, &unmapped));

    uint64_t killed = ft_peer_kill(&owner);
    /* The owner is reaped and this worker has not progressed since: the endpoint is still open,
     * and the first map finds the owner's memory gone. That is its death, not a lack of
     * support (bench/soak saw FERRY_ERR_UNSUPPORTED here). */
    FT_CHECK_STATUS(ferry_rsegment_map(unmapped, 0, 1, 0, &p), FERRY_ERR_CONNECTION_RESET);
    dl = ft_deadline_in_ms(SX_TIMEOUT_MS);
    while (e.lost == 0) {
        FT_CHECK(!ft_deadline_passed(dl), "no LOST event");
        ferry_worker_wait(f.worker, 10);
    }
    uint64_t lost_ms = (e.lost_ns - killed) / 1000000u;
    FT_CHECK(lost_ms < 1000, "LOST after %llu ms", (unsigned long long)lost_ms);
    FT_CHECK(e.lost_status < 0, "LOST status");
    FT_CHECK_STATUS(ferry_rsegment_status(rseg), e.lost_status);
    FT_CHECK_STATUS(ferry_rsegment_map(rseg, 0, 1, 0, &p), e.lost_status);
    FT_CHECK_STATUS(ferry_rsegment_map(unmapped, 0, 1, 0, &p), e.lost_status);
    FT_CHECK_OK(ferry_rsegment_disconnect(unmapped));
    FT_CHECK_STATUS(ferry_rsegment_notify(rseg, "x", 1), e.lost_status);
    FT_CHECK_STATUS(ferry_rsegment_store_barrier(rseg), e.lost_status);
    ferry_dma_queue_t *q;
    FT_CHECK_STATUS(ferry_dma_create(rseg, &q), e.lost_status);
    ft_pattern_check(ro, SX_SIZE, ft_pattern_seed(5, 5, SX_SIZE), 0, "a dead owner's memory");
    FT_CHECK_STATUS(ferry_rsegment_disconnect(rseg), FERRY_ERR_BUSY);
    FT_CHECK_OK(ferry_rsegment_unmap(rseg, ro));
    FT_CHECK_OK(ferry_rsegment_disconnect(rseg));
    ft_note("timeouts ok; LOST %llu ms after SIGKILL (%s)", (unsigned long long)lost_ms,
            ferry_status_name(e.lost_status));
    ferry_ep_destroy(ep);
    ft_ferry_fini(&f);
    return 0;
}
