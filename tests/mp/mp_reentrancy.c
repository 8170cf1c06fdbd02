/* What callbacks may do (include/ferry/ferry.h, "Callbacks"): an active-message handler, a
 * completion callback and an endpoint's error callback may send, receive, close endpoints and
 * destroy the endpoints the program created, including the one the message came on or whose
 * error is reported; the endpoint is then freed at the end of that progress call and nothing
 * more is delivered for it. Run under ASan in CI: a use of a freed endpoint fails.
 *
 * Two processes, a (this one) and b:
 *   1. a's AM ping reaches b's handler, which from inside the handler replies on reply_ep (an
 *      AM and a tagged message) and posts a tagged receive that a's next message matches;
 *   2. b answers on reply_ep: the answer arrives at a on the endpoint a created; a's handler
 *      destroys that endpoint from inside the handler, while b keeps sending to it (every
 *      message after the one that destroyed it is dropped, none reaches a handler);
 *   3. a completion callback destroys the endpoint its send went on;
 *   4. b's handler force-closes its reply endpoint (the accepted one): a's endpoint fails with
 *      FERRY_ERR_ENDPOINT_CLOSED, and a's error callback destroys it;
 *   5. b's handler closes its reply endpoint gracefully; a's next endpoint works meanwhile;
 *   6. a handler that destroys another endpoint created to the same peer.
 * After each step both processes still exchange messages on a fresh endpoint. */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ft.h"

enum {
    RE_PING = 40,    /* a -> b: header {step}; b's handler reacts per step */
    RE_ANSWER = 41,  /* b -> a on reply_ep: header {step, seq} */
    RE_CHECK = 42,   /* either way: a message on a fresh endpoint */
    RE_TAG = 0x5245, /* tagged messages of step 1 */
};
enum { RE_TOKEN_READY = 0x52454459, RE_TOKEN_DONE = 0x444f4e45 };

#define RE_ANSWERS 20
#define T_MS 20000

typedef struct re_hdr {
    uint32_t step;
    uint32_t seq;
} re_hdr_t;

/* ------------------------------------------------------------------ b */

static ferry_worker_t *b_worker;
static unsigned b_checks;
static ferry_completion_t b_tag_recv_comp;
static uint8_t b_tag_buf[64];
static ferry_tag_info_t b_tag_info;

static void b_send(ferry_ep_t *ep, uint32_t step, uint32_t seq, unsigned id)
{
    re_hdr_t h = {step, seq};
    ferry_status_t st;
    /* from a handler: no progress here; an inject-sized AM returns OK or NO_RESOURCE */
    do
        st = ferry_am_send(ep, id, &h, sizeof(h), NULL, 0, NULL);
    while (st == FERRY_ERR_NO_RESOURCE && (ft_sleep_ms(1), 1));
    FT_CHECK(st == FERRY_OK || st == FERRY_ERR_ENDPOINT_CLOSED, "b: send from a handler: %s",
             ferry_status_name(st));
}

static ferry_status_t b_ping(void *arg, const void *header, size_t header_length, void *data,
                             size_t length, const ferry_am_recv_params_t *params)
{
    re_hdr_t h;
    (void)arg, (void)data, (void)length;
    FT_CHECK(header_length == sizeof(h), "ping header %zu bytes", header_length);
    memcpy(&h, header, sizeof(h));
    switch (h.step) {
    case 1: {
        /* reply (AM and tagged) and post a receive, all from the handler */
        b_send(params->reply_ep, 1, 0, RE_ANSWER);
        uint8_t msg[16] = "from a handler";
        ferry_iov_t iov = {msg, sizeof(msg)};
        ferry_status_t st = ferry_tag_send(params->reply_ep, &iov, 1, RE_TAG, NULL);
        FT_CHECK(st == FERRY_OK, "b: tagged send from a handler: %s", ferry_status_name(st));
        ferry_iov_t riov = {b_tag_buf, sizeof(b_tag_buf)};
        b_tag_recv_comp = (ferry_completion_t){.count = 1};
        st = ferry_tag_recv(b_worker, &riov, 1, RE_TAG + 1, UINT64_MAX, &b_tag_info,
                            &b_tag_recv_comp);
        FT_CHECK(st == FERRY_INPROGRESS || st == FERRY_OK, "b: receive posted from a handler: %s",
                 ferry_status_name(st));
        if (st == FERRY_OK)
            b_tag_recv_comp.count = 0;
        break;
    }
    case 2:
        for (uint32_t i = 0; i < RE_ANSWERS; i++)
            b_send(params->reply_ep, 2, i, RE_ANSWER);
        break;
    case 4:
        FT_CHECK_OK(ferry_ep_close(params->reply_ep, FERRY_EP_CLOSE_FORCE, NULL));
        b_send(params->reply_ep, 4, 0, RE_ANSWER); /* closed: ENDPOINT_CLOSED, no crash */
        break;
    case 6:
        b_send(params->reply_ep, 6, 0, RE_ANSWER);
        break;
    case 5: {
        ferry_status_t st = ferry_ep_close(params->reply_ep, 0, NULL);
        FT_CHECK(st == FERRY_OK || st == FERRY_INPROGRESS, "b: graceful close from a handler: %s",
                 ferry_status_name(st));
        break;
    }
    default:
        break;
    }
    return FERRY_OK;
}

static ferry_status_t b_check(void *arg, const void *header, size_t header_length, void *data,
                              size_t length, const ferry_am_recv_params_t *params)
{
    (void)arg, (void)header, (void)header_length, (void)data, (void)length;
    b_send(params->reply_ep, 0, b_checks, RE_CHECK);
    b_checks++;
    return FERRY_OK;
}

static int b_role(int chan, void *arg)
{
    (void)arg;
    ft_ferry_t f;
    ft_ferry_init(&f, NULL, NULL);
    b_worker = f.worker;
    FT_CHECK_OK(ferry_am_set_handler(f.worker, RE_PING, b_ping, NULL));
    FT_CHECK_OK(ferry_am_set_handler(f.worker, RE_CHECK, b_check, NULL));
    ft_send_address(chan, f.worker);
    ft_token_t t;
    for (;;) { /* serve until a says DONE */
        ft_progress_once(f.worker);
        if (ft_chan_try_token(chan, RE_TOKEN_DONE, &t))
            break;
    }
    FT_CHECK(b_tag_recv_comp.count == 0 && b_tag_recv_comp.status == FERRY_OK,
             "b: the receive posted from a handler did not complete (%s)",
             ferry_status_name(b_tag_recv_comp.status));
    ft_ferry_fini(&f);
    return 0;
}

/* ------------------------------------------------------------------ a */

static ferry_worker_t *a_worker;
static uint8_t b_address[FT_CHAN_MSG_MAX];
static size_t b_address_length;

typedef struct a_state {
    ferry_ep_t *ep;      /* the endpoint a handler or callback destroys */
    ferry_ep_t *other;   /* step 6: another endpoint to the same peer */
    unsigned answers;    /* answers that reached the handler */
    unsigned after_free; /* answers delivered after the destroy (must stay 0) */
    bool destroyed;
    ferry_status_t error; /* step 4: the error callback's status */
    unsigned errors;
    unsigned checks;
} a_state_t;

static a_state_t st;

static ferry_status_t a_answer(void *arg, const void *header, size_t header_length, void *data,
                               size_t length, const ferry_am_recv_params_t *params)
{
    re_hdr_t h;
    (void)arg, (void)data, (void)length;
    memcpy(&h, header, header_length < sizeof(h) ? header_length : sizeof(h));
    if (st.destroyed)
        st.after_free++;
    st.answers++;
    if (h.step == 2 && !st.destroyed) {
        /* the answer came on the endpoint a created: destroy it from its own handler */
        FT_CHECK(params->reply_ep == st.ep, "step 2: the answer came on %p, not a's endpoint %p",
                 (void *)params->reply_ep, (void *)st.ep);
        ferry_ep_destroy(st.ep);
        st.destroyed = true;
    }
    if (h.step == 6 && st.other != NULL) {
        ferry_ep_destroy(st.other); /* another endpoint to the same peer */
        st.other = NULL;
    }
    return FERRY_OK;
}

static ferry_status_t a_check(void *arg, const void *header, size_t header_length, void *data,
                              size_t length, const ferry_am_recv_params_t *params)
{
    (void)arg, (void)header, (void)header_length, (void)data, (void)length, (void)params;
    st.checks++;
    return FERRY_OK;
}

static void a_error_cb(void *arg, ferry_ep_t *ep, ferry_status_t status)
{
    (void)arg;
    st.errors++;
    st.error = status;
    ferry_ep_destroy(ep); /* from its own error callback */
}

static void a_destroy_in_completion(ferry_completion_t *comp)
{
    (void)comp;
    ferry_ep_destroy(st.ep); /* the endpoint the send went on */
    st.destroyed = true;
}

static ferry_ep_t *a_connect(ferry_ep_params_t *params)
{
    return ft_ep_create(a_worker, b_address, b_address_length, params);
}

static void a_ping(ferry_ep_t *ep, uint32_t step)
{
    re_hdr_t h = {step, 0};
    ft_am_send_ok(a_worker, ep, RE_PING, &h, sizeof(h), NULL, 0, NULL, T_MS);
}

static bool a_checks_reached(void *arg)
{
    return st.checks >= *(unsigned *)arg;
}

/* Both still work: a fresh endpoint, a message there and back. */
static void a_still_works(const char *after)
{
    ferry_ep_t *ep = a_connect(NULL);
    unsigned want = st.checks + 1;
    re_hdr_t h = {0, 0};
    ft_am_send_ok(a_worker, ep, RE_CHECK, &h, sizeof(h), NULL, 0, NULL, T_MS);
    ft_progress_until(a_worker, T_MS, a_checks_reached, &want, after);
    ferry_ep_destroy(ep);
}

static bool a_answers_reached(void *arg)
{
    return st.answers >= *(unsigned *)arg;
}

static bool a_error_seen(void *arg)
{
    (void)arg;
    return st.errors > 0;
}

int main(int argc, char **argv)
{
    (void)argc, (void)argv;
    ft_peer_t b;
    ft_watchdog(120);
    ft_set_role("a");
    ft_peer_spawn(&b, "b", b_role, NULL);
    ft_ferry_t f;
    ft_ferry_init(&f, NULL, NULL);
    a_worker = f.worker;
    FT_CHECK_OK(ferry_am_set_handler(f.worker, RE_ANSWER, a_answer, NULL));
    FT_CHECK_OK(ferry_am_set_handler(f.worker, RE_CHECK, a_check, NULL));
    b_address_length = ft_recv_address(b.chan, b_address, sizeof(b_address), T_MS);

    /* 1: b sends, replies and posts receives from a handler */
    st = (a_state_t){0};
    st.ep = a_connect(NULL);
    a_ping(st.ep, 1);
    unsigned want = 1;
    ft_progress_until(f.worker, T_MS, a_answers_reached, &want, "step 1: b's AM reply");
    uint8_t buf[64];
    ferry_tag_info_t info;
    ferry_completion_t rc = {.count = 1};
    ferry_iov_t iov = {buf, sizeof(buf)};
    ferry_status_t s = ferry_tag_recv(f.worker, &iov, 1, RE_TAG, UINT64_MAX, &info, &rc);
    if (s == FERRY_INPROGRESS)
        ft_progress_until_completion(f.worker, T_MS, &rc, "step 1: b's tagged reply");
    else
        FT_CHECK_OK(s);
    FT_CHECK(memcmp(buf, "from a handler", 14) == 0, "step 1: the tagged reply's bytes");
    ferry_iov_t tiov = {buf, 8};
    for (;;) { /* matches the receive b's handler posted */
        s = ferry_tag_send(st.ep, &tiov, 1, RE_TAG + 1, NULL);
        if (s != FERRY_ERR_NO_RESOURCE)
            break;
        ft_progress_once(f.worker);
    }
    FT_CHECK_OK(s);
    ferry_ep_destroy(st.ep);
    a_still_works("after step 1");

    /* 2: a's handler destroys the endpoint the answer came on, b keeps sending to it */
    st = (a_state_t){.checks = st.checks};
    st.ep = a_connect(NULL);
    a_ping(st.ep, 2);
    want = 1;
    ft_progress_until(f.worker, T_MS, a_answers_reached, &want, "step 2: the first answer");
    ft_progress_for_ms(f.worker, 200); /* the other answers arrive for a freed endpoint */
    FT_CHECK(st.after_free == 0,
             "step 2: %u answers reached a handler after the endpoint was "
             "destroyed in the handler of the first",
             st.after_free);
    a_still_works("after step 2");

    /* 3: a completion callback destroys the endpoint its send went on */
    st = (a_state_t){.checks = st.checks};
    st.ep = a_connect(NULL);
    static uint8_t big[1 << 20];
    ferry_iov_t biov = {big, sizeof(big)};
    ferry_completion_t sc = {.cb = a_destroy_in_completion, .count = 1};
    re_hdr_t h = {3, 0};
    for (;;) {
        s = ferry_am_send(st.ep, RE_CHECK, &h, sizeof(h), &biov, 1, &sc);
        if (s != FERRY_ERR_NO_RESOURCE)
            break;
        ft_progress_once(f.worker);
    }
    if (s == FERRY_OK) /* copied at once: the callback will not run; destroy it here */
        a_destroy_in_completion(&sc);
    else
        FT_CHECK(s == FERRY_INPROGRESS, "step 3: send returned %s", ferry_status_name(s));
    ft_progress_until_completion(f.worker, T_MS, &sc, "step 3: the send");
    FT_CHECK(st.destroyed, "step 3: the completion callback did not run");
    a_still_works("after step 3");

    /* 4: b force-closes its reply endpoint in a handler; a's error callback destroys its own */
    st = (a_state_t){.checks = st.checks};
    ferry_ep_params_t params = {.error_cb = a_error_cb};
    st.ep = a_connect(&params);
    a_ping(st.ep, 4);
    ft_progress_until(f.worker, T_MS, a_error_seen, NULL, "step 4: the endpoint's error callback");
    FT_CHECK(st.errors == 1 && st.error == FERRY_ERR_ENDPOINT_CLOSED,
             "step 4: %u error callbacks, %s", st.errors, ferry_status_name(st.error));
    a_still_works("after step 4");

    /* 5: b closes its reply endpoint gracefully in a handler */
    st = (a_state_t){.checks = st.checks};
    st.ep = a_connect(&params);
    a_ping(st.ep, 5);
    ft_progress_until(f.worker, T_MS, a_error_seen, NULL, "step 5: the endpoint's error callback");
    FT_CHECK(st.error == FERRY_ERR_ENDPOINT_CLOSED, "step 5: %s", ferry_status_name(st.error));
    a_still_works("after step 5");

    /* 6: a handler destroys another endpoint to the same peer (busy: a message is on its way) */
    st = (a_state_t){.checks = st.checks};
    st.ep = a_connect(NULL);
    st.other = a_connect(NULL);
    a_ping(st.other, 7); /* b answers nothing to 7: the other endpoint just carries traffic */
    a_ping(st.ep, 6);
    want = 1;
    ft_progress_until(f.worker, T_MS, a_answers_reached, &want, "step 6: the answer");
    FT_CHECK(st.other == NULL, "step 6: the handler did not destroy the other endpoint");
    ferry_ep_destroy(st.ep);
    a_still_works("after step 6");

    ft_chan_send_token(b.chan, RE_TOKEN_DONE, 0, 0, 0, 0);
    ft_peer_expect_exit(&b, T_MS, 0);
    ft_ferry_fini(&f);
    printf("mp_reentrancy: passed\n");
    return 0;
}
