/* Active-message ping-pong, every byte checked both ways.
 *
 *   mp_am_pingpong        two processes over shm (the parent is the client, a forked child
 *                         the server, which replies on the endpoint ferry accepted for it)
 *   mp_am_pingpong self   one process whose worker pings itself over an endpoint to its own
 *                         address (registered as am_self, with FERRY_TRANSPORTS=self)
 *
 * Sizes: 0, 1, 7, 8, 63, 64, 65, 4095, 4096, 4097, 8191, 8192, 8193 (shm's medium buffer),
 * 64 KiB, 1 MiB, 64 MiB, in four shapes:
 * a 16-byte header + contiguous payload, a 16-byte header + a 3-piece iov of uneven sizes,
 * no header + contiguous payload, and a 256-byte (FERRY_AM_HEADER_MAX) header + 3-piece iov.
 * The server replies to the no-header pings from inside its handler (the others after it
 * returned). Both sides follow the same schedule, so the receiver knows what each message must be:
 * header length and contents, payload length, and every payload byte (a pattern seeded by
 * sender, sequence number and size). */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ft.h"

enum { PP_ID_PING = 5, PP_ID_PONG = 6 };
enum { PP_CLIENT = 1, PP_SERVER = 2 };
enum { PP_TOKEN_DONE = 0x444f4e45 };

#define PP_MAGIC 0x474e5050u /* "PPNG" */

typedef enum pp_shape {
    PP_HDR16_CONTIG,
    PP_HDR16_IOV3,
    PP_NOHDR_CONTIG,
    PP_HDRMAX_IOV3,
    PP_SHAPES,
} pp_shape_t;

static const char *const pp_shape_names[PP_SHAPES] = {
    "16-byte header, contiguous", "16-byte header, 3-piece iov", "no header, contiguous",
    "256-byte header, 3-piece iov"};

static const size_t pp_sizes[] = {0,    1,    7,    8,    63,   64,    65,       4095,
                                  4096, 4097, 8191, 8192, 8193, 65536, 1u << 20, 64u << 20};
#define PP_NSIZES (sizeof(pp_sizes) / sizeof(pp_sizes[0]))

typedef struct pp_hdr {
    uint32_t magic;
    uint32_t seq;
    uint32_t size;
    uint16_t shape;
    uint16_t sender;
} pp_hdr_t;

_Static_assert(sizeof(pp_hdr_t) == 16, "the small header is 16 bytes");

#define PP_MAX_STEPS (PP_SHAPES * PP_NSIZES * 8)

/* One step of the schedule. */
typedef struct pp_step {
    uint32_t seq;
    size_t size;
    pp_shape_t shape;
} pp_step_t;

static unsigned pp_reps(size_t size)
{
    if (size <= 65536)
        return 8;
    if (size <= (1u << 20))
        return 3;
    return 1;
}

/* The whole schedule: every shape x size x repetition. Returns the number of steps. */
static size_t pp_schedule(pp_step_t *steps, size_t cap)
{
    size_t n = 0;
    for (int shape = 0; shape < PP_SHAPES; shape++) {
        for (size_t i = 0; i < PP_NSIZES; i++) {
            for (unsigned r = 0; r < pp_reps(pp_sizes[i]); r++) {
                FT_CHECK(n < cap, "schedule too long");
                steps[n].seq = (uint32_t)n;
                steps[n].size = pp_sizes[i];
                steps[n].shape = (pp_shape_t)shape;
                n++;
            }
        }
    }
    return n;
}

static size_t pp_header_length(pp_shape_t shape)
{
    switch (shape) {
    case PP_NOHDR_CONTIG:
        return 0;
    case PP_HDRMAX_IOV3:
        return FERRY_AM_HEADER_MAX;
    default:
        return sizeof(pp_hdr_t);
    }
}

static bool pp_is_iov(pp_shape_t shape)
{
    return shape == PP_HDR16_IOV3 || shape == PP_HDRMAX_IOV3;
}

/* The header a sender puts on step's message: the fields, then (for the big header) pattern
 * bytes of a seed of their own. */
static void pp_header_build(uint8_t *buf, uint16_t sender, const pp_step_t *step)
{
    size_t len = pp_header_length(step->shape);
    if (len == 0)
        return;
    pp_hdr_t h = {.magic = PP_MAGIC,
                  .seq = step->seq,
                  .size = (uint32_t)step->size,
                  .shape = (uint16_t)step->shape,
                  .sender = sender};
    memcpy(buf, &h, sizeof(h));
    if (len > sizeof(h))
        ft_pattern_fill(buf + sizeof(h), len - sizeof(h),
                        ft_pattern_seed(sender, step->seq, step->size) ^ 0x48445221u, sizeof(h));
}

/* A message being sent: its header and payload pieces (separately allocated). */
typedef struct pp_msg {
    uint8_t header[FERRY_AM_HEADER_MAX];
    size_t header_length;
    ferry_iov_t iov[3];
    size_t iovcnt;
} pp_msg_t;

static void pp_msg_build(pp_msg_t *m, uint16_t sender, const pp_step_t *step)
{
    uint64_t seed = ft_pattern_seed(sender, step->seq, step->size);
    size_t size = step->size;
    m->header_length = pp_header_length(step->shape);
    pp_header_build(m->header, sender, step);
    if (pp_is_iov(step->shape)) {
        /* uneven: 1/7, 4/7 (+1 when odd), the rest */
        size_t a = size / 7, b = size * 4 / 7 + (size & 1);
        if (a + b > size)
            b = size - a;
        size_t len[3] = {a, b, size - a - b};
        size_t offset = 0;
        m->iovcnt = 3;
        for (int i = 0; i < 3; i++) {
            m->iov[i].length = len[i];
            m->iov[i].buffer = malloc(len[i] ? len[i] : 1);
            FT_CHECK(m->iov[i].buffer != NULL, "malloc(%zu)", len[i]);
            ft_pattern_fill(m->iov[i].buffer, len[i], seed, offset);
            offset += len[i];
        }
    } else {
        m->iovcnt = 1;
        m->iov[0].length = size;
        m->iov[0].buffer = malloc(size ? size : 1);
        FT_CHECK(m->iov[0].buffer != NULL, "malloc(%zu)", size);
        ft_pattern_fill(m->iov[0].buffer, size, seed, 0);
    }
}

static void pp_msg_free(pp_msg_t *m)
{
    for (size_t i = 0; i < m->iovcnt; i++)
        free(m->iov[i].buffer);
    m->iovcnt = 0;
}

/* Send and wait until the payload buffers are free again. */
static void pp_send(ferry_worker_t *worker, ferry_ep_t *ep, unsigned id, uint16_t sender,
                    const pp_step_t *step)
{
    pp_msg_t m;
    ferry_completion_t comp = {.cb = NULL, .count = 0, .status = FERRY_OK};
    pp_msg_build(&m, sender, step);
    ferry_status_t status = ft_am_send(worker, ep, id, m.header_length ? m.header : NULL,
                                       m.header_length, m.iov, m.iovcnt, &comp, 30000, NULL);
    FT_CHECK(status == FERRY_OK || status == FERRY_INPROGRESS,
             "ferry_am_send(seq %u, %zu bytes, %s) returned %s", step->seq, step->size,
             pp_shape_names[step->shape], ferry_status_name(status));
    ft_progress_until_completion(worker, 30000, &comp, "the send's completion");
    FT_CHECK(comp.status == FERRY_OK, "send of seq %u completed with %s", step->seq,
             ferry_status_name(comp.status));
    pp_msg_free(&m);
}

/* One side's receive state. */
typedef struct pp_side {
    const pp_step_t *steps;
    size_t nsteps;
    uint16_t peer;        /* who sends what this side receives */
    uint64_t received;    /* messages received and checked (= next step expected) */
    ferry_ep_t *reply_ep; /* the endpoint of the last message's sender */
    /* the server answers pings of the no-header shape from inside the handler */
    bool reply_in_handler;
    uint64_t replied_in_handler; /* replies sent from the handler */
    bool replied[PP_MAX_STEPS];  /* which steps the handler replied to */
    uint64_t replies_pending;    /* of those, sends whose completion has not run yet */
} pp_side_t;

/* A reply sent from inside a handler: freed by its completion. */
typedef struct pp_reply {
    ferry_completion_t comp; /* first: the callback gets &comp */
    pp_side_t *side;
    uint32_t seq;
    pp_msg_t m;
} pp_reply_t;

static void pp_reply_free(pp_reply_t *r)
{
    pp_msg_free(&r->m);
    free(r);
}

static void pp_reply_done(ferry_completion_t *comp)
{
    pp_reply_t *r = (pp_reply_t *)comp;
    FT_CHECK(comp->status == FERRY_OK,
             "the reply to seq %u (sent from the handler) completed "
             "with %s",
             r->seq, ferry_status_name(comp->status));
    r->side->replies_pending--;
    pp_reply_free(r);
}

/* Reply to step from inside the handler; false when ferry had no room (the main loop then
 * replies). */
static bool pp_reply_from_handler(pp_side_t *side, ferry_ep_t *ep, const pp_step_t *step)
{
    pp_reply_t *r = calloc(1, sizeof(*r));
    FT_CHECK(r != NULL, "out of memory");
    r->side = side;
    r->seq = step->seq;
    r->comp.cb = pp_reply_done;
    r->comp.count = 1;
    r->comp.status = FERRY_OK;
    pp_msg_build(&r->m, PP_SERVER, step);
    ferry_status_t status = ferry_am_send(ep, PP_ID_PONG, r->m.header_length ? r->m.header : NULL,
                                          r->m.header_length, r->m.iov, r->m.iovcnt, &r->comp);
    if (status == FERRY_INPROGRESS) {
        side->replies_pending++;
    } else {
        FT_CHECK(status == FERRY_OK || status == FERRY_ERR_NO_RESOURCE,
                 "a reply from the handler (seq %u, %zu bytes) returned %s", step->seq, step->size,
                 ferry_status_name(status));
        pp_reply_free(r);
        if (status == FERRY_ERR_NO_RESOURCE)
            return false;
    }
    side->replied_in_handler++;
    side->replied[step->seq] = true;
    return true;
}

static ferry_status_t pp_handler(void *arg, const void *header, size_t header_length, void *data,
                                 size_t length, const ferry_am_recv_params_t *params)
{
    pp_side_t *side = arg;
    char what[160];
    FT_CHECK(side->received < side->nsteps, "a message beyond the schedule (%llu steps)",
             (unsigned long long)side->nsteps);
    const pp_step_t *step = &side->steps[side->received];
    snprintf(what, sizeof(what), "message seq %u from %s (%zu bytes, %s)", step->seq,
             side->peer == PP_CLIENT ? "the client" : "the server", step->size,
             pp_shape_names[step->shape]);

    size_t expect_hlen = pp_header_length(step->shape);
    if (header_length != expect_hlen || length != step->size) {
        /* which message is it? (a duplicate, or one from later in the schedule) */
        long long match = -1;
        for (size_t i = 0; i < side->nsteps && match < 0; i++) {
            const pp_step_t *other = &side->steps[i];
            if (other->size == length && pp_header_length(other->shape) == header_length &&
                ft_pattern_mismatch(data, length, ft_pattern_seed(side->peer, other->seq, length),
                                    0) < 0)
                match = (long long)i;
        }
        ft_fail_at(__FILE__, __LINE__,
                   "%s: got a message with a %zu-byte header and %zu payload bytes, expected %zu "
                   "and %zu; its bytes are those of step %lld (-1: of none)",
                   what, header_length, length, expect_hlen, step->size, match);
    }
    if (expect_hlen > 0) {
        uint8_t expect[FERRY_AM_HEADER_MAX];
        FT_CHECK(header != NULL, "%s: header is NULL", what);
        pp_header_build(expect, side->peer, step);
        for (size_t i = 0; i < expect_hlen; i++)
            FT_CHECK(((const uint8_t *)header)[i] == expect[i],
                     "%s: header byte %zu is 0x%02x, expected 0x%02x", what, i,
                     ((const uint8_t *)header)[i], expect[i]);
    }
    FT_CHECK(length == step->size, "%s: payload of %zu bytes", what, length);
    FT_CHECK(length == 0 || data != NULL, "%s: data is NULL", what);
    ft_pattern_check(data, length, ft_pattern_seed(side->peer, step->seq, step->size), 0, what);
    FT_CHECK(params != NULL && params->reply_ep != NULL, "%s: no reply endpoint", what);
    side->reply_ep = params->reply_ep;
    side->received++;
    if (side->reply_in_handler && step->shape == PP_NOHDR_CONTIG)
        pp_reply_from_handler(side, params->reply_ep, step);
    return FERRY_OK;
}

/* The client's and the server's halves of one step. */
static void pp_client_step(ferry_worker_t *worker, ferry_ep_t *ep, pp_side_t *client,
                           const pp_step_t *step)
{
    uint64_t target = client->received + 1;
    pp_send(worker, ep, PP_ID_PING, PP_CLIENT, step);
    ft_progress_until_count(worker, 30000, &client->received, target, "the pong");
}

/* The server's half of a step: wait for its ping, and reply unless the handler did. A ping can
 * arrive before the main loop gets to its step (the handler answered the previous one at once,
 * and the client was quick): steps are told apart by their index, not by arrival. */
static void pp_server_step(ferry_worker_t *worker, pp_side_t *server, const pp_step_t *step)
{
    ft_progress_until_count(worker, 30000, &server->received, step->seq + 1ull, "the next ping");
    if (!server->replied[step->seq])
        pp_send(worker, server->reply_ep, PP_ID_PONG, PP_SERVER, step);
}

static bool pp_replies_done(void *arg)
{
    return ((pp_side_t *)arg)->replies_pending == 0;
}

static void pp_server_finish(ferry_worker_t *worker, pp_side_t *server)
{
    ft_progress_until(worker, 30000, pp_replies_done, server,
                      "the completions of replies sent from the handler");
    FT_CHECK(server->replied_in_handler > 0, "no reply was sent from the handler");
    ft_note("%llu replies were sent from inside the handler",
            (unsigned long long)server->replied_in_handler);
}

typedef struct pp_args {
    const pp_step_t *steps;
    size_t nsteps;
} pp_args_t;

static int pp_server_role(int chan, void *arg)
{
    pp_args_t *a = arg;
    pp_side_t server = {
        .steps = a->steps, .nsteps = a->nsteps, .peer = PP_CLIENT, .reply_in_handler = true};
    ft_ferry_t f;
    ft_ferry_init(&f, NULL, NULL);
    FT_CHECK_OK(ferry_am_set_handler(f.worker, PP_ID_PING, pp_handler, &server));
    ft_send_address(chan, f.worker);
    for (size_t i = 0; i < a->nsteps; i++) {
        pp_server_step(f.worker, &server, &a->steps[i]);
        if (i == 0) {
            FT_CHECK(strcmp(ferry_ep_transport_name(server.reply_ep), ft_remote_transport()) == 0,
                     "the accepted endpoint uses %s, expected %s",
                     ferry_ep_transport_name(server.reply_ep), ft_remote_transport());
            ft_files_check_self();
        }
    }
    pp_server_finish(f.worker, &server);
    ft_chan_expect_token(chan, PP_TOKEN_DONE, 30000);
    ft_ferry_fini(&f);
    return 0;
}

static void pp_run_self(const pp_step_t *steps, size_t nsteps)
{
    pp_side_t client = {.steps = steps, .nsteps = nsteps, .peer = PP_SERVER};
    pp_side_t server = {
        .steps = steps, .nsteps = nsteps, .peer = PP_CLIENT, .reply_in_handler = true};
    const void *address;
    size_t length;
    ft_ferry_t f;

    ft_ferry_init(&f, NULL, NULL);
    FT_CHECK_OK(ferry_am_set_handler(f.worker, PP_ID_PING, pp_handler, &server));
    FT_CHECK_OK(ferry_am_set_handler(f.worker, PP_ID_PONG, pp_handler, &client));
    FT_CHECK_OK(ferry_worker_address(f.worker, &address, &length));
    ferry_ep_t *ep = ft_ep_create(f.worker, address, length, NULL);
    FT_CHECK(strcmp(ferry_ep_transport_name(ep), "self") == 0,
             "an endpoint to the worker's own address uses %s, expected self",
             ferry_ep_transport_name(ep));
    for (size_t i = 0; i < nsteps; i++) {
        uint64_t target = client.received + 1;
        pp_send(f.worker, ep, PP_ID_PING, PP_CLIENT, &steps[i]);
        pp_server_step(f.worker, &server, &steps[i]);
        FT_CHECK(server.reply_ep == ep, "self: the reply endpoint is not the sending endpoint");
        ft_progress_until_count(f.worker, 30000, &client.received, target, "the pong");
    }
    pp_server_finish(f.worker, &server);
    ferry_ep_destroy(ep);
    ft_ferry_fini(&f);
}

static void pp_run_two_processes(const pp_step_t *steps, size_t nsteps)
{
    pp_args_t args = {.steps = steps, .nsteps = nsteps};
    pp_side_t client = {.steps = steps, .nsteps = nsteps, .peer = PP_SERVER};
    uint8_t address[FT_CHAN_MSG_MAX];
    ft_files_t before;
    ft_peer_t server;
    ft_ferry_t f;

    ft_files_snapshot(&before);
    ft_peer_spawn(&server, "server", pp_server_role, &args);
    ft_ferry_init(&f, NULL, NULL);
    FT_CHECK_OK(ferry_am_set_handler(f.worker, PP_ID_PONG, pp_handler, &client));
    size_t length = ft_recv_address(server.chan, address, sizeof(address), 30000);
    ferry_ep_t *ep = ft_ep_create(f.worker, address, length, NULL);
    FT_CHECK(strcmp(ferry_ep_transport_name(ep), ft_remote_transport()) == 0,
             "an endpoint to another process uses %s, expected %s", ferry_ep_transport_name(ep),
             ft_remote_transport());
    uint64_t start = ft_now_ns();
    pp_shape_t shape = PP_SHAPES;
    for (size_t i = 0; i < nsteps; i++) {
        if (steps[i].shape != shape) {
            shape = steps[i].shape;
            ft_note("%s: sizes 0 .. 64 MiB", pp_shape_names[shape]);
        }
        pp_client_step(f.worker, ep, &client, &steps[i]);
        if (i == 0)
            ft_files_check_self();
    }
    ft_note("%zu round trips in %.2f s", nsteps, (double)(ft_now_ns() - start) / 1e9);
    ferry_completion_t close_comp = {.cb = NULL, .count = 1, .status = FERRY_OK};
    ferry_status_t status = ferry_ep_close(ep, 0, &close_comp);
    FT_CHECK(status == FERRY_OK || status == FERRY_INPROGRESS, "ferry_ep_close returned %s",
             ferry_status_name(status));
    if (status == FERRY_INPROGRESS)
        ft_progress_until_completion(f.worker, 10000, &close_comp, "the graceful close");
    ft_chan_send_token(server.chan, PP_TOKEN_DONE, 0, 0, 0, 0);
    ft_peer_expect_exit(&server, 30000, 0);
    ferry_ep_destroy(ep);
    ft_ferry_fini(&f);
    ft_files_check_new(&before);
    ft_files_free(&before);
}

int main(int argc, char **argv)
{
    static pp_step_t steps[PP_MAX_STEPS];
    bool self = argc > 1 && strcmp(argv[1], "self") == 0;
    ft_set_role(self ? "self" : "client");
    ft_watchdog(55);
    size_t nsteps = pp_schedule(steps, sizeof(steps) / sizeof(steps[0]));
    if (self)
        pp_run_self(steps, nsteps);
    else
        pp_run_two_processes(steps, nsteps);
    ft_note("passed");
    return 0;
}
