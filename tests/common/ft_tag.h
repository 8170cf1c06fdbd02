/* Tagged messages for the tests (ferry_tag_*): buffers of pieces with guard bytes around every
 * piece, sends and receives started with retries and checked to the byte, probes with deadlines,
 * and a tag echo peer ("does this process still work with others?").
 *
 * Message bytes are the pattern of (sender, tag, size) (ft_pattern.h): a receiver checks every
 * byte knowing only who sent which tag and how long it was. Receive pieces sit in one allocation
 * with FT_TAG_GUARD bytes of FT_TAG_GUARD_BYTE before, between and after them; the pieces are
 * filled with the same byte, so a check also catches a write past the message's end. */
#ifndef FT_TAG_H
#define FT_TAG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ferry/ferry.h>

#include "ft_peer.h"

#define FT_TAG_GUARD 64
#define FT_TAG_GUARD_BYTE 0xa5
#define FT_TAG_TIMEOUT 30000

/* Shapes of a list of pieces of a given total. */
typedef enum ft_shape {
    FT_SHAPE_CONTIG,  /* one piece */
    FT_SHAPE_UNEVEN3, /* 1/7, 4/7, the rest */
    FT_SHAPE_SEVEN,   /* 7 pieces: 3/32, 1/32, 0, 7/32, 5/32, 1 byte, the rest */
    FT_SHAPE_ZEROS,   /* 1, 0, up to 1000, 0, the rest */
    FT_SHAPE_SMALL,   /* pieces of 300 bytes (the last shorter): many pieces */
    FT_SHAPE_2000,    /* 2000 pieces of equal size, the rest in the last */
} ft_shape_t;

const char *ft_shape_name(ft_shape_t shape);

typedef struct ft_tbuf {
    uint8_t *base;
    size_t alloc;
    ferry_iov_t *iov;
    size_t count;
    size_t capacity; /* total bytes of the pieces */
} ft_tbuf_t;

/* Pieces of shape totalling capacity bytes, guards around each, all bytes FT_TAG_GUARD_BYTE. */
void ft_tbuf_init(ft_tbuf_t *b, ft_shape_t shape, size_t capacity);
void ft_tbuf_free(ft_tbuf_t *b);

/* Seed of the message (sender, tag, size). */
uint64_t ft_tag_seed(uint32_t sender, uint64_t tag, size_t size);

/* Fill the pieces with the first capacity bytes of message (sender, tag, size). */
void ft_tbuf_fill(ft_tbuf_t *b, uint32_t sender, uint64_t tag, size_t size);

/* The pieces hold bytes [0, written) of the message of seed, everything else (the rest of the
 * pieces, the guards) is untouched; fails naming what, the piece and the offset otherwise. */
void ft_tbuf_check_prefix(const ft_tbuf_t *b, uint64_t seed, size_t written, const char *what);

/* The pieces hold message (sender, tag, size), truncated at their capacity. */
void ft_tbuf_check(const ft_tbuf_t *b, uint32_t sender, uint64_t tag, size_t size,
                   const char *what);

/* Only the guards (before, between and after the pieces) are untouched: for a transfer that
 * stopped at an unknown point. */
void ft_tbuf_check_guards(const ft_tbuf_t *b, const char *what);

/* Byte at message offset of the pieces (for watching a transfer arrive). */
const uint8_t *ft_tbuf_at(const ft_tbuf_t *b, size_t offset);

/* ------------------------------------------------------------------ sends */

typedef struct ft_tag_send {
    ft_tbuf_t buf;
    ferry_completion_t comp; /* its callback records done_ns */
    uint64_t tag;
    size_t size;
    uint32_t sender;
    ferry_status_t call_status; /* what ferry_tag_send returned */
    uint64_t done_ns;           /* when the completion ran (0: not yet, or completed inline) */
} ft_tag_send_t;

/* Fill a message (sender, tag, size) in shape and send it, retrying FERRY_ERR_NO_RESOURCE with
 * progress; the call must return FERRY_OK or FERRY_INPROGRESS (a FERRY_OK send has count 0). */
void ft_tag_send_start(ferry_worker_t *w, ferry_ep_t *ep, ft_tag_send_t *s, uint32_t sender,
                       uint64_t tag, size_t size, ft_shape_t shape);
/* ft_tag_send_start with options (ferry_tag_send_ext; params may be NULL). */
void ft_tag_send_start_ext(ferry_worker_t *w, ferry_ep_t *ep, ft_tag_send_t *s, uint32_t sender,
                           uint64_t tag, size_t size, ft_shape_t shape,
                           const ferry_tag_send_params_t *params);
/* The same from a buffer already filled (s->buf set): returns the status of the call (any
 * other than NO_RESOURCE) without checking it. */
ferry_status_t ft_tag_send_buf(ferry_worker_t *w, ferry_ep_t *ep, ft_tag_send_t *s, uint64_t tag,
                               size_t size);
bool ft_tag_send_done(const ft_tag_send_t *s);
/* A send of a window slot: when it completed, checks it completed with FERRY_OK (what names the
 * stream in the failure), frees its buffer and returns true; else false. */
bool ft_tag_send_reap(ft_tag_send_t *s, const char *what);
/* Wait for the completion (timeout_ms), fail unless its status is expected; frees the buffer. */
void ft_tag_send_wait(ferry_worker_t *w, ft_tag_send_t *s, ferry_status_t expected);

/* ------------------------------------------------------------------ receives */

typedef struct ft_tag_recv {
    ft_tbuf_t buf;
    ferry_completion_t comp;
    ferry_tag_info_t info;
    ferry_status_t status; /* final (valid once done) */
    bool done;
    bool inline_done; /* completed by the call itself (FERRY_OK / TRUNCATED returned) */
    uint64_t done_ns;
} ft_tag_recv_t;

void ft_tag_recv_init(ft_tag_recv_t *r, ft_shape_t shape, size_t capacity);
/* Ready a completed receive to be posted again into the same buffer (its bytes stay). */
void ft_tag_recv_rearm(ft_tag_recv_t *r);
/* ferry_tag_recv; the call must return INPROGRESS, OK or TRUNCATED (then comp untouched). */
void ft_tag_recv_post(ferry_worker_t *w, ft_tag_recv_t *r, uint64_t tag, uint64_t mask);
/* ferry_tag_message_recv of a probed message. */
void ft_tag_recv_message(ferry_worker_t *w, ft_tag_recv_t *r, ferry_tag_message_t *msg);
/* Mark done if the completion ran; true when done. */
bool ft_tag_recv_poll(ft_tag_recv_t *r);
void ft_tag_recv_wait(ferry_worker_t *w, ft_tag_recv_t *r);
/* Done, status OK or TRUNCATED as size and capacity say, info (tag, length, sender not NULL,
 * over shm), every byte. */
void ft_tag_recv_check(const ft_tag_recv_t *r, uint32_t sender, uint64_t tag, size_t size,
                       const char *what);
void ft_tag_recv_free(ft_tag_recv_t *r);

/* FT_TAG_IMM=1 in the environment: every send of these helpers without options carries
 * immediate data (FERRY_TAG_SEND_IMM, ft_tag_imm_of(tag, size): below 2^32 for about half the
 * messages, above for the others, so both forms of EAGER go), and ft_tag_recv_check checks
 * it arrived; otherwise it checks that none did. */
bool ft_tag_imm_all(void);
uint64_t ft_tag_imm_of(uint64_t tag, size_t size);
/* The immediate data (or its absence) of a message of (tag, size) as ft_tag_imm_all says. */
void ft_tag_imm_check(const ferry_tag_info_t *info, uint64_t tag, size_t size, const char *what);

/* Progress until ferry_tag_probe(tag, mask, no remove) finds a message; returns its info. */
ferry_tag_info_t ft_tag_probe_until(ferry_worker_t *w, uint64_t tag, uint64_t mask);

/* ------------------------------------------------------------------ environment */

/* A status of the endpoint group (-30 .. -59): the peer died, closed, broke the protocol. */
bool ft_tag_is_endpoint_error(ferry_status_t status);

/* The largest eager message: FERRY_RNDV_THRESH if set to a number, else shm's automatic one
 * (8192: 8 KiB of payload, the header beside it in the ring cell). */
size_t ft_tag_eager_max(void);

/* FERRY_RNDV_MODE, or "auto". */
const char *ft_tag_mode(void);

/* ------------------------------------------------------------------ a tag echo peer */

enum { FT_TAG_ECHO_CLIENT = 0x45430001u, FT_TAG_ECHO_SERVER = 0x45430002u };
#define FT_TAG_ECHO_TOKEN_DONE 0x54454e44u
#define FT_TAG_ECHO_MAX (4u << 20)

/* A role for ft_peer_spawn: creates a worker, sends its address over the channel, then answers
 * every tagged message (any tag, at most FT_TAG_ECHO_MAX bytes, bytes checked: pattern of
 * FT_TAG_ECHO_CLIENT) with one of the same tag and size (pattern of FT_TAG_ECHO_SERVER) to its
 * sender, until FT_TAG_ECHO_TOKEN_DONE; sleeps in ferry_worker_wait while idle. Exits 0. */
int ft_tag_echo_role(int chan, void *arg);

/* One round trip of size bytes with the echo peer over ep (both directions checked). */
void ft_tag_echo_roundtrip(ferry_worker_t *w, ferry_ep_t *ep, uint64_t tag, size_t size);

/* Tell the echo peer DONE and expect it to exit 0. */
void ft_tag_echo_finish(ferry_worker_t *w, ft_peer_t *echo);

#endif
