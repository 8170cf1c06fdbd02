/* Tagged messages: matching (posted and unexpected queues, probe, cancel), the eager protocol,
 * and the rendezvous protocol with its four large-message-transfer modes.
 *
 * Every tag protocol message is an internal active message (src/proto/am.h) whose header is
 * one of the fixed little-endian structs below, checked by tag_wire_decode() before any field
 * is used (fuzzed: tests/fuzz/tag_wire.c). Active messages of one endpoint arrive in order,
 * so messages from one sender match in the order they were sent.
 *
 * Matching: a message matches the first posted receive with (tag & mask) == (recv tag & mask);
 * a receive matches the first unexpected message (eager or RTS, in arrival order). Posted and
 * unexpected queues are per worker; ferry_tag_probe(remove) moves a message to a "probed" list
 * until ferry_tag_message_recv receives it.
 *
 * Eager (length <= the endpoint's eager threshold): EAGER carries the data. On arrival it
 * matches the first posted receive (a payload the transport receives in pieces — shm
 * fragments, tcp's large frames — is matched at its first piece and placed straight into that
 * receive when its first piece holds it all: tag_place_eager), or waits in the unexpected queue,
 * under two bounds
 * (back-pressure, never loss):
 *   bytes  FERRY_TAG_UNEXPECTED_MAX (cache-sized) payload bytes of the buffered messages of
 *          more than TAG_FLOW_SMALL_MAX bytes: past it the receiver sends EAGER_SMALL to the
 *          sender whose large message crossed it, which then sends only messages of up to
 *          TAG_FLOW_SMALL_MAX bytes eagerly and larger ones by rendezvous (an RTS holds no
 *          data: the receiver reads the data when it posts the receive, from the sender's
 *          buffer, in cache or not, instead of keeping a copy);
 *   count  FERRY_TAG_UNEXPECTED_COUNT past that many buffered messages (generous: a small
 *          message costs a descriptor) the receiver sends EAGER_OFF to the sender whose
 *          message crossed it, which then uses rendezvous for everything, even 0 bytes.
 * EAGER_ON lifts either once the buffered bytes and messages are both at most half their
 * bounds. Messages already in flight when EAGER_SMALL/OFF is sent are still buffered: each
 * bound is soft by at most what the transport had in flight.
 * Messages in pieces (more than one transport buffer: eager only where the transport places
 * them, shm) pay off only when their receive is posted: found unexpected, each is placed into
 * one of a few recycled buffers (8 of 256 KiB per worker) and copied again on the match, while
 * the rendezvous it replaces keeps the data with the sender until the match. A few such
 * messages cost a copy each; a receiver that falls behind would cost a fresh allocation each
 * (page faults) once those buffers are all out: a message in pieces that finds no posted
 * receive then makes the receiver send its sender EAGER_BUFFER: it then sends eagerly only what
 * one transport buffer carries, larger messages by rendezvous, until TAG_FLOW_BUFFER_LIFT RTS
 * in a row from it (4 times as many each time it is told again) found their receive posted
 * (receives are posted ahead again): then EAGER_ON (or EAGER_BUFFER again in place of EAGER_ON
 * after a bound's restriction). Open MPI's receivers post each receive after the previous one
 * completed but take every message the transport holds at each poll: its tag_bw at 64 KiB fell
 * to 0.5 GB/s with placed eager messages that went unexpected into malloc'ed buffers (issue
 * 13), 20 GB/s by rendezvous; with EAGER_BUFFER at the first unexpected one, a single message
 * whose first piece came a moment before its receive made every later one go by rendezvous.
 * The same on tcp, whose large frames are placed too (EAGER_BUFFER: eager up to 32 KiB).
 *
 * Rendezvous (larger): the sender sends RTS {tag, length, send id, mode, [section, key]} (by
 * address, TAG_FLAG_ADDR: {tag, length, send id, address} in the short form tag_wire_rts_addr_t);
 * it matches like an eager message. Modes (FERRY_RNDV_MODE=get|put|coop|null|split forces one;
 * by default tag_rndv_choose, the one place the choice is made, picks COOP or SPLIT when the
 * endpoint has FY_TL_CAP_RMA and FY_TL_CAP_CMA (cross-memory attach to the peer works: its
 * transport probes that once per endpoint) — whichever the worker measured faster on its own
 * first messages of that size class (tag_calib.c), SPLIT from 2 MiB, or by the fixed threshold
 * FERRY_RNDV_SPLIT_MIN when set — else COOP (measurements: docs/ARCHITECTURE.md); over a byte
 * stream (FY_TL_CAP_STREAM) NULL). Where GET and SPLIT work and nothing is forced, a message of
 * 16 KiB up to what the transport places (shm: 256 KiB) goes eager, by GET or by SPLIT as the
 * worker measured on its first messages of that size class (tag_calib.c, "eager or
 * rendezvous"; fy_tag_ep_t.eager_measured), and one of 8 KiB .. 16 KiB - 1 from one piece, with a
 * completion, by GET when it answers the peer, else eagerly (tag_reply_choose):
 *   GET   the sender registers its buffer (single use, read) and puts the key in RTS; on match
 *         the receiver reads it with one ferry_getv and sends DONE(to send, final). A buffer
 *         larger than FERRY_RNDV_SECTION bytes (or of more than FERRY_MEM_IOV_MAX pieces) is
 *         registered one section at a time: RTS.section says how many bytes the first key
 *         covers; after each section the receiver sends DONE(to send, not final, done = bytes
 *         so far, reply id = its recv id) and the sender answers COOKIE {recv id, offset,
 *         length, key of the next section}, releasing the previous one. In automatic mode a
 *         receiver that cannot read the sender's memory (cross-memory attach may be allowed in
 *         one direction only) answers the RTS with CTS(COOP) instead; the sender releases the
 *         key and continues as COOP. A sender that cannot register uses COOP from the start.
 *   PUT   on match the receiver registers its buffer (single use, write) and sends CTS {send
 *         id, recv id, accepted length, key}; the sender writes it with one ferry_putv,
 *         flushes the endpoint, and sends DONE(to recv, final). A receiver that cannot register
 *         (more than FERRY_MEM_IOV_MAX pieces, no slot left) answers CTS with mode COOP.
 *   COOP  on match the receiver sends CTS {send id, recv id, accepted length}; the sender
 *         copies the data into shared buffers as DATA {recv id, offset} messages of at most
 *         the transport's max_bcopy (capped at 64 KiB), which the receiver copies straight into
 *         the posted buffer as they arrive (both processes copy at once: a pipeline).
 *   SPLIT GET and PUT at once, so that both processes copy (each one half, by cross-memory
 *         attach on shm): RTS as for GET (mode SPLIT, section, key). On match the receiver
 *         picks a split point s (half the accepted length, 4 KiB-aligned), registers its bytes
 *         [s, accepted) (single use, write) and sends CTS {mode SPLIT, accepted length, key of
 *         those bytes}: s = length - the key's length. Then it reads [0, s) like GET (in
 *         sections, with DONE(not final)/COOKIE) while the sender writes [s, accepted) with one
 *         ferry_putv, flushes and sends DONE(to recv, final, done = accepted). The receiver
 *         completes when it has read its part and that DONE arrived, and only then sends
 *         DONE(to send, final): the sender's registration stays until the reads are over.
 *         A receiver that does not split (too short to pay off, cannot register, cannot read
 *         the sender) sends no CTS and reads everything as GET.
 *   NULL  like COOP, but DATA messages are FERRY_RNDV_NULL_CHUNK bytes (auto: one transport
 *         buffer on shared memory, 1 MiB on tcp) sent as
 *         ordinary active messages that the transport fragments over its send path, at most
 *         TAG_NULL_WINDOW in flight: the mode for transports without RMA and shared buffers.
 * DATA must arrive in order (offset == bytes received so far) and end exactly at the accepted
 * length; the receive completes when the last byte is in place (COOP/NULL need no DONE; the
 * sender completes when its last DATA was handed over).
 * A receive shorter than the message accepts only its length (CTS/GET read only that much) and
 * completes with FERRY_ERR_MESSAGE_TRUNCATED; the sender completes normally.
 * Either side may abort a transfer with DONE(final, status < 0) to the other (a key that does
 * not match, DATA out of order, a failed one-sided operation): the other side completes with
 * that status.
 *
 * Ids carried on the wire (send id, recv id) are (generation << 32 | index) into per-worker
 * tables: a peer's id is looked up, never trusted as a pointer, and a message about a transfer
 * is accepted only from the endpoint that transfer uses; an unknown or stale id (a DONE for an
 * unknown transfer, a CTS for a finished send) is dropped with one warning per worker and kind
 * (then debug lines). A peer that dies fails every send and receive in progress with it
 * (within the endpoint's failure detection) with the endpoint's error and releases their
 * registrations; an unexpected RTS from it stays queued and the receive that takes it completes
 * with that error. Unexpected eager messages outlive their endpoint (info->sender is then
 * NULL). */
#ifndef FERRY_PROTO_TAG_H
#define FERRY_PROTO_TAG_H

#include <endian.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <ferry/counters.h>
#include <ferry/ferry.h>

#include "core/list.h"
#include "core/pool.h"
#include "mem/mem.h"
#include "progress/worker.h"
#include "proto/am_ids.h"
#include "proto/module_list.h"
#include "wireup/ep.h"

/* 3: TAG_FLAG_ACK; 4: the RTS by address in 40 or 48 bytes; 5: EAGER's 32-bit immediate data in
 * its 16-byte form */
#define TAG_WIRE_VERSION 5u

/* NULL mode: DATA messages in flight per send. */
#define TAG_NULL_WINDOW 4u

/* The numbers are ferry_counters_mode_t's (include/ferry/counters.h). */
typedef enum tag_rndv_mode {
    TAG_RNDV_GET = FERRY_COUNTERS_MODE_GET,
    TAG_RNDV_PUT = FERRY_COUNTERS_MODE_PUT,
    TAG_RNDV_COOP = FERRY_COUNTERS_MODE_COOP,
    TAG_RNDV_NULL = FERRY_COUNTERS_MODE_NULL,
    TAG_RNDV_SPLIT = FERRY_COUNTERS_MODE_SPLIT,
} tag_rndv_mode_t;

/* The sender's address of an RTS with TAG_FLAG_ADDR. */
static inline uint64_t tag_wire_rts_address(const uint8_t rkey[RKEY_PACKED_SIZE])
{
    uint64_t address;
    memcpy(&address, rkey, sizeof(address));
    return le64toh(address);
}

/* DONE.target: which table DONE.id indexes. */
#define TAG_DONE_TO_SEND 1u /* the sender's send id (GET: from the receiver; aborts) */
#define TAG_DONE_TO_RECV 2u /* the receiver's recv id (PUT: from the sender; aborts) */

/* EAGER and RTS flags. */
#define TAG_FLAG_IMM 0x1u  /* the message carries immediate data (imm) */
#define TAG_FLAG_SYNC 0x2u /* EAGER: the sender waits for DONE(to send, send_id) on the match */
/* EAGER: as SYNC (DONE on the match), but the application did not ask for it: the sender times
 * an eager calibration block (tag_calib.c), and the receiver's info does not say
 * FERRY_TAG_INFO_SYNC. Never together with SYNC. */
#define TAG_FLAG_ACK 0x4u
#define TAG_FLAGS_EAGER (TAG_FLAG_IMM | TAG_FLAG_SYNC | TAG_FLAG_ACK)
#define TAG_FLAGS_DONE_ON_MATCH (TAG_FLAG_SYNC | TAG_FLAG_ACK) /* EAGER: send_id is set */
/* RTS (GET or SPLIT of one contiguous buffer): no key; the first 8 bytes of rkey are the
 * buffer's address in the sender (little-endian, not 0), the rest zero, and section is the whole
 * length: the receiver reads it (SPLIT: its head) by cross-memory attach
 * (fy_tl_ops_t.ep_peer_read), the sender registers nothing. On the wire: tag_wire_rts_addr_t. */
#define TAG_FLAG_ADDR 0x8u
#define TAG_FLAGS_RTS (TAG_FLAG_IMM | TAG_FLAG_ADDR) /* a rendezvous completes after the match */

/* Wire headers (little-endian, packed by explicit layout, sizes fixed). */
/* EAGER has two forms, one encoding per message: 16 bytes when flags are 0, or only TAG_FLAG_IMM
 * with immediate data below 2^32 (imm32: an MPI layer's source rank, so that its 8 to 28-byte
 * messages travel in one shm cell); 32 bytes otherwise (SYNC or ACK, or immediate data of 2^32
 * or more), imm32 0. Decoded (tag_wire_decode), the immediate data is in imm and imm32 is 0. */
typedef struct tag_wire_eager {
    uint8_t version;
    uint8_t flags; /* TAG_FLAG_IMM | TAG_FLAG_SYNC or _ACK */
    uint8_t reserved[2];
    uint32_t imm32; /* the 16-byte form with TAG_FLAG_IMM: the immediate data; else 0 */
    uint64_t tag;
    /* only in the 32-byte form: */
    uint64_t imm;                /* TAG_FLAG_IMM: the immediate data (2^32 or more); else 0 */
    uint64_t send_id;            /* SYNC or ACK: the sender's send id, for its DONE; else 0 */
} tag_wire_eager_t;              /* 16 or 32 B (above); payload = the message */
#define TAG_WIRE_EAGER_SHORT 16u /* the 16-byte form: the common case */

/* Whether an EAGER header of these flags and immediate data takes the 16-byte form (above): its
 * one encoding, for the encoder, the sender's inline header and the fuzz target alike. */
static inline bool tag_wire_eager_is_short(unsigned flags, uint64_t imm)
{
    return flags == 0 || (flags == TAG_FLAG_IMM && imm <= UINT32_MAX);
}

typedef struct tag_wire_rts {
    uint8_t version;
    uint8_t mode;  /* tag_rndv_mode_t */
    uint8_t flags; /* TAG_FLAG_IMM, TAG_FLAG_ADDR */
    uint8_t reserved[5];
    uint64_t tag;
    uint64_t length; /* message length */
    uint64_t send_id;
    uint64_t section;               /* GET: bytes the key covers (from offset 0); else 0 */
    uint8_t rkey[RKEY_PACKED_SIZE]; /* GET (length > 0): key of the first section (ADDR: the
                                     * address); else 0 */
    uint64_t imm;                   /* TAG_FLAG_IMM: the immediate data; else 0 */
} tag_wire_rts_t;                   /* 112 B, no payload */

/* An RTS with TAG_FLAG_ADDR travels in this form, and only in it: 40 bytes, 48 with
 * TAG_FLAG_IMM (one shm cell holds 44 bytes of header: the long form took three cells, three
 * cache lines to cross the cores per message). Decoded into tag_wire_rts_t: the address in
 * rkey's first 8 bytes (little-endian, tag_wire_rts_address), section = length. */
typedef struct tag_wire_rts_addr {
    uint8_t version;
    uint8_t mode;  /* TAG_RNDV_GET or TAG_RNDV_SPLIT (the receiver reads the head) */
    uint8_t flags; /* TAG_FLAG_ADDR, and TAG_FLAG_IMM exactly when imm is there */
    uint8_t reserved[5];
    uint64_t tag;
    uint64_t length; /* message length (> 0), the section the address covers */
    uint64_t send_id;
    uint64_t address;  /* of the sender's buffer (not 0; address + length does not wrap) */
    uint64_t imm;      /* TAG_FLAG_IMM only: the immediate data */
} tag_wire_rts_addr_t; /* 40 or 48 B, no payload */
#define TAG_WIRE_RTS_ADDR_SHORT 40u /* without TAG_FLAG_IMM */

typedef struct tag_wire_cts {
    uint8_t version;
    uint8_t mode; /* PUT, COOP or NULL: what the receiver accepted */
    uint8_t reserved[6];
    uint64_t send_id;
    uint64_t recv_id;
    uint64_t length;                /* accepted: min(message, posted buffer) */
    uint8_t rkey[RKEY_PACKED_SIZE]; /* PUT (length > 0): key of the receiver's buffer; else 0 */
} tag_wire_cts_t;                   /* 96 B, no payload */

typedef struct tag_wire_data {
    uint8_t version;
    uint8_t reserved[7];
    uint64_t recv_id;
    uint64_t offset;
} tag_wire_data_t; /* 24 B; payload (> 0 bytes) = bytes [offset, offset + payload length) */

typedef struct tag_wire_done {
    uint8_t version;
    uint8_t target; /* TAG_DONE_TO_SEND or TAG_DONE_TO_RECV */
    uint8_t final;  /* 1: the transfer is over; 0 (GET, to send, OK): send the next section */
    uint8_t reserved;
    int32_t status;    /* FERRY_OK, or why the transfer failed (a negative ferry_status_t) */
    uint64_t id;       /* the addressee's id */
    uint64_t done;     /* bytes transferred so far */
    uint64_t reply_id; /* not final: the receiver's recv id, for COOKIE; else 0 */
} tag_wire_done_t;     /* 32 B, no payload */

typedef struct tag_wire_cookie {
    uint8_t version;
    uint8_t reserved[7];
    uint64_t recv_id;
    uint64_t offset; /* the section starts here in the message */
    uint64_t length; /* and has this many bytes (> 0) */
    uint8_t rkey[RKEY_PACKED_SIZE];
} tag_wire_cookie_t; /* 96 B, no payload */

/* FLOW.eager: what the receiver lets its sender send eagerly from now on */
#define TAG_FLOW_OFF 0u   /* nothing: rendezvous for everything, even 0 bytes (EAGER_OFF) */
#define TAG_FLOW_ON 1u    /* up to the endpoint's eager threshold (EAGER_ON) */
#define TAG_FLOW_SMALL 2u /* up to TAG_FLOW_SMALL_MAX bytes only (EAGER_SMALL) */
#define TAG_FLOW_SMALL_MAX 256u
#define TAG_FLOW_BUFFER 3u /* up to what one transport buffer carries (EAGER_BUFFER) */
/* RTS in a row that found their receive posted before a receiver lifts EAGER_BUFFER */
#define TAG_FLOW_BUFFER_LIFT 1024u
/* and 4 times as many after each further EAGER_BUFFER to the same sender, up to 4^this times:
 * an RTS throttles its sender, so that receives look posted ahead until eager sends outrun
 * them again (Open MPI's tag_bw) */
#define TAG_FLOW_BUFFER_LIFT_MAX_STEPS 8u

typedef struct tag_wire_flow {
    uint8_t version;
    uint8_t eager; /* TAG_FLOW_OFF, TAG_FLOW_ON, TAG_FLOW_SMALL or TAG_FLOW_BUFFER */
    uint8_t reserved[6];
} tag_wire_flow_t; /* 8 B, no payload */

_Static_assert(sizeof(tag_wire_eager_t) == 32, "EAGER header is 16 or 32 bytes");
_Static_assert(offsetof(tag_wire_eager_t, imm) == TAG_WIRE_EAGER_SHORT &&
                   offsetof(tag_wire_eager_t, imm32) == 4,
               "EAGER short form");
_Static_assert(sizeof(tag_wire_rts_t) == 112, "RTS header is 112 bytes");
_Static_assert(sizeof(tag_wire_rts_addr_t) == 48 &&
                   offsetof(tag_wire_rts_addr_t, imm) == TAG_WIRE_RTS_ADDR_SHORT,
               "RTS by address is 40 or 48 bytes");
_Static_assert(sizeof(tag_wire_cts_t) == 96, "CTS header is 96 bytes");
_Static_assert(sizeof(tag_wire_data_t) == 24, "DATA header is 24 bytes");
_Static_assert(sizeof(tag_wire_done_t) == 32, "DONE header is 32 bytes");
_Static_assert(sizeof(tag_wire_cookie_t) == 96, "COOKIE header is 96 bytes");
_Static_assert(sizeof(tag_wire_flow_t) == 8, "FLOW header is 8 bytes");

/* A decoded message: which header, and a private copy of it in host byte order. */
typedef struct tag_wire_msg {
    unsigned id; /* FY_AM_ID_TAG_* */
    union {
        tag_wire_eager_t eager;
        tag_wire_rts_t rts;
        tag_wire_cts_t cts;
        tag_wire_data_t data;
        tag_wire_done_t done;
        tag_wire_cookie_t cookie;
        tag_wire_flow_t flow;
    } u;
} tag_wire_msg_t;

/* Check a tag protocol header received as active message id (its exact size for that id and
 * form: EAGER 16 or 32 bytes, RTS 112, or 40/48 by address, tag_wire_rts_addr_t; the
 * version, known mode, reserved bytes zero, payload only where allowed, lengths and offsets
 * consistent and not overflowing, keys present exactly where the mode needs one) and copy it
 * into out in host byte order (for EAGER, the fast path's message, only out->id and
 * out->u.eager). Returns FERRY_OK or FERRY_ERR_PROTOCOL with a static reason in *why. Pure: no
 * logging, no state (the caller logs). */
ferry_status_t tag_wire_decode(unsigned id, const void *header, size_t header_length,
                               size_t payload_length, tag_wire_msg_t *out, const char **why);

/* The fast case of tag_wire_decode for EAGER: the 16-byte header without flags (a plain send)
 * starts with one 8-byte word that is exactly the version (flags 0, reserved and imm32 zero), so
 * one compare checks what tag_wire_decode checks of it. Returns true with the tag in host order;
 * false for any other header (tag_wire_decode then decodes or refuses it). header_length == 16
 * implies a readable header (the transport's). */
static inline bool tag_wire_eager_plain(const void *header, size_t header_length, uint64_t *tag_p)
{
    uint64_t first, tag;
    if (header_length != TAG_WIRE_EAGER_SHORT)
        return false;
    memcpy(&first, header, sizeof(first));
    memcpy(&tag, (const uint8_t *)header + sizeof(first), sizeof(tag));
    *tag_p = le64toh(tag);
    return le64toh(first) == TAG_WIRE_VERSION;
}

/* The second fast case of tag_wire_decode for EAGER: a send with immediate data and nothing
 * else (what libfabric's remote CQ data makes of every Open MPI message). In the 16-byte form
 * the first word's low half is exactly the version and TAG_FLAG_IMM (reserved bytes zero) and
 * its high half the immediate data; in the 32-byte form the first word is exactly the version
 * and TAG_FLAG_IMM, the immediate data at least 2^32 and the send id 0. That is all
 * tag_wire_decode checks of such a header. Returns true with the tag and the immediate data in
 * host order; false for any other header. header_length 16 or 32 implies a readable header
 * (the transport's). */
static inline bool tag_wire_eager_imm(const void *header, size_t header_length, uint64_t *tag_p,
                                      uint64_t *imm_p)
{
    uint64_t w[4];
    const uint64_t first = TAG_WIRE_VERSION | (uint64_t)TAG_FLAG_IMM << 8;
    if (header_length == TAG_WIRE_EAGER_SHORT) {
        memcpy(w, header, TAG_WIRE_EAGER_SHORT);
        *tag_p = le64toh(w[1]);
        *imm_p = le64toh(w[0]) >> 32;
        return (le64toh(w[0]) & UINT32_MAX) == first;
    }
    if (header_length != sizeof(w))
        return false;
    memcpy(w, header, sizeof(w));
    *tag_p = le64toh(w[1]);
    *imm_p = le64toh(w[2]);
    return le64toh(w[0]) == first && *imm_p > UINT32_MAX && w[3] == 0;
}

/* Write msg's header (host byte order in, little-endian out) into buffer, which holds at least
 * sizeof the header of msg->id; returns its size (0 for an unknown id). */
size_t tag_wire_encode(const tag_wire_msg_t *msg, void *buffer);

/* ------------------------------------------------------------------ state */

/* A table of transfers addressed by wire ids: id = (generation << 32) | index. */
typedef struct tag_table {
    void **slots;          /* slots[index]: the transfer, or NULL */
    uint32_t *generations; /* current generation of each slot (never 0) */
    uint32_t *free_slots;  /* stack of free indices */
    uint32_t capacity;
    uint32_t free_count;
} tag_table_t;

/* Eager sends restricted by FLOW, in increasing strictness (fy_tag_ep_t.eager_limit on the
 * sender, told_limit on the receiver; 0: not restricted, eager up to the threshold). */
#define TAG_LIMIT_BUFFER 1u /* EAGER_BUFFER: eager only up to fy_tag_ep_t.eager_buffer_max */
#define TAG_LIMIT_SMALL 2u  /* EAGER_SMALL: eager only up to TAG_FLOW_SMALL_MAX bytes */
#define TAG_LIMIT_OFF 3u    /* EAGER_OFF: rendezvous for everything */

/* Per endpoint (the module's endpoint state); all-zero is the initial state, then ep is set. */
typedef struct fy_tag_ep {
    ferry_ep_t *ep;             /* the endpoint this state belongs to */
    fy_list_link_t flow_link;   /* in the worker's flow_off list while told_limit */
    struct tag_recv *placing;   /* matched by the EAGER message the transport places now */
    void *placing_buf;          /* or the recycled buffer it places an unexpected one in */
    unsigned placing_class;     /* placing_buf's class (tag_spare_class) */
    size_t eager_max;           /* largest eager payload without measuring (ready) */
    size_t eager_buffer_max;    /* of it, what one transport buffer carries (ready) */
    size_t chunk;               /* COOP DATA payload (ready) */
    uint32_t ctl_queued;        /* control messages queued for it (kept in order) */
    uint32_t ctl_pass;          /* the control-queue pass in which it had no room */
    uint8_t ready;              /* eager_max and chunk are set */
    uint8_t eager_limit;        /* the peer restricts eager sends (TAG_LIMIT_*, 0: no) */
    uint8_t told_limit;         /* we restricted the peer's eager sends (TAG_LIMIT_SMALL or
                                 * _OFF: our backlog's bounds, 0: no) */
    uint8_t told_buffer;        /* we told it EAGER_BUFFER (its messages in pieces found no
                                 * receive posted), not lifted yet */
    uint8_t buffer_told;        /* times we told it EAGER_BUFFER (up to
                                 * TAG_FLOW_BUFFER_LIFT_MAX_STEPS + 1) */
    uint32_t rts_posted;        /* while told_buffer: its RTS in a row that found their
                                 * receive posted (TAG_FLOW_BUFFER_LIFT << 2 * (buffer_told - 1)
                                 * lift it) */
    uint8_t coop_fallback_said; /* forced COOP fell back to NULL here: said once */
    uint8_t eager_measured;     /* above eager_max, up to tag_eager_placed_max: eager or
                                 * rendezvous as the worker measured (tag_calib.c; ready) */
    size_t reply_min;           /* from here up to eager_max, a send that answers the peer
                                 * goes by GET (tag_reply_choose; SIZE_MAX: none; ready) */
    uint64_t reply_mark;        /* the worker's rx_count at this endpoint's last send that
                                 * answered (tag_reply_choose) */
} fy_tag_ep_t;

/* Classes of recycled unexpected-message buffers (tag_int.h): 8 KiB, 32 KiB, then 64 KiB to
 * 1 MiB by powers of two. */
#define TAG_SPARE_CLASSES 7

/* Per worker (the module's state). */
/* Calibration of the automatic COOP/SPLIT choice (tag_calib.c): power-of-two size classes
 * 2^TAG_CALIB_CLASS_MIN (8 KiB) .. 2^(TAG_CALIB_CLASS_MAX+1) - 1 (2 MiB - 1), each measured in
 * TAG_CALIB_BLOCKS blocks of one mode of at least TAG_CALIB_BLOCK_BYTES and
 * TAG_CALIB_BLOCK_MIN messages. */
#define TAG_CALIB_CLASS_MIN 13
#define TAG_CALIB_CLASS_MAX 20
#define TAG_CALIB_CLASSES (TAG_CALIB_CLASS_MAX - TAG_CALIB_CLASS_MIN + 1)
/* And of the choice between eager and rendezvous (GET or SPLIT) where a message could go
 * either way: 2^TAG_CALIB_EAGER_CLASS_MIN (16 KiB) .. 2^(TAG_CALIB_EAGER_CLASS_MAX+1) - 1
 * (fy_tag_worker_t.calib_eager). */
#define TAG_CALIB_EAGER_CLASS_MIN 14
#define TAG_CALIB_EAGER_CLASS_MAX 18
#define TAG_CALIB_EAGER_CLASSES (TAG_CALIB_EAGER_CLASS_MAX - TAG_CALIB_EAGER_CLASS_MIN + 1)
/* Below those classes, from 2^TAG_REPLY_GET_SHIFT (8 KiB), on the same endpoints: a send from
 * one contiguous buffer, with a completion, that answers the peer (the worker's last tagged
 * message came from it, after the endpoint's last answer) goes by GET by address, the others
 * eager (tag_calib.c, tag_reply_choose; fy_tag_ep_t.reply_min). */
#define TAG_REPLY_GET_SHIFT 13
#define TAG_CALIB_EAGER_BLOCK_BYTES (8u << 20)
#define TAG_CALIB_BLOCKS 6
#define TAG_CALIB_BLOCK_BYTES (2u << 20)
#define TAG_CALIB_BLOCK_MIN 16u

typedef struct tag_calib_block {
    uint64_t first_ns; /* its first send */
    uint64_t end_ns;   /* its last completion (0: not yet) */
    uint64_t bytes;    /* of its sends */
    uint32_t issued, done;
} tag_calib_block_t;

typedef struct tag_calib_class {
    bool decided;
    uint8_t mode;          /* once decided: TAG_RNDV_COOP or TAG_RNDV_SPLIT (eager classes:
                            * FERRY_COUNTERS_MODE_EAGER, TAG_RNDV_GET or TAG_RNDV_SPLIT) */
    uint8_t issue;         /* the block new sends join */
    uint32_t per_block;    /* messages per block (0: not started) */
    uint32_t rate_mbps[2]; /* once decided: the best block of COOP, SPLIT, in MB/s (eager
                            * classes: unused) */
    uint8_t rounds;        /* eager classes: rounds of blocks before the current one (a close
                            * call measures again, tag_calib.c) */
    uint32_t copy_mbps;    /* eager classes: the rate of the endpoint's copies through the
                            * peer's buffers (fy_tl_ops_t.ep_copy_rate) at the class's first
                            * counted send, MB/s: what eager streams at most (0: no figure) */
    uint8_t rndv_mode;     /* eager classes, once decided: the faster rendezvous mode of the
                            * calibration (TAG_RNDV_GET or TAG_RNDV_SPLIT; 0: no figure), what
                            * a send kept from going eagerly uses when the class went eager */
    bool rndv_only;        /* eager classes: a rendezvous block beat the copies eager would go
                            * through, but GET and SPLIT were close: the last two blocks run
                            * SPLIT and GET instead of eager (tag_calib.c) */
    uint8_t lead_in;       /* eager classes: sends that went uncounted in the first block's
                            * mode before it (tag_calib.c, CALIB_LEAD_IN) */
    bool eager_skipped;    /* eager classes: an eager block was given up, the receiver keeping
                            * the sends from going eagerly (tag_calib.c, calib_skip_eager) */
    uint64_t prior_bytes[3], prior_ns[3]; /* and the best block of each mode in them */
    tag_calib_block_t block[TAG_CALIB_BLOCKS];
} tag_calib_class_t;

typedef struct fy_tag_worker {
    fy_list_t posted; /* receives not matched yet, in post order */
    /* tagged messages received (matched) from any endpoint, and the worker id of the last one's
     * sender: whether a send answers its peer (tag_reply_choose) */
    uint64_t rx_count;
    uint64_t rx_last_peer;
    fy_list_t unexpected; /* messages not matched yet, in arrival order */
    fy_list_t probed;     /* taken by ferry_tag_probe(remove), not received yet */
    fy_list_t ctl;        /* control messages waiting for transport room, in order */
    fy_list_t retry;      /* transfers whose one-sided step got FERRY_ERR_NO_RESOURCE */
    fy_list_t pump;       /* COOP/NULL sends with DATA to hand to the transport */
    fy_list_t flow_off;   /* endpoints told EAGER_OFF (fy_tag_ep_t.flow_link) */
    fy_pool_t recvs, sends, unexp, ctls; /* tag_recv_t, tag_send_t, tag_unexp_t, tag_ctl_t */
    /* recycled unexpected-message buffers, a chain per class (tag_int.h), and the bytes of
     * them all (at most FERRY_TAG_SPARE_MAX beyond each class's floor, tag.c) */
    void *spare_bufs[TAG_SPARE_CLASSES];
    unsigned spare_count[TAG_SPARE_CLASSES];
    size_t spare_bytes;
    size_t spare_max; /* FERRY_TAG_SPARE_MAX */
    tag_table_t send_table, recv_table;
    uint64_t unexpected_bytes;     /* payload bytes of the eager messages of more than
                                    * TAG_FLOW_SMALL_MAX bytes buffered in unexpected/probed */
    uint64_t unexpected_count;     /* eager messages buffered in unexpected/probed */
    uint64_t unexpected_max;       /* FERRY_TAG_UNEXPECTED_MAX */
    uint64_t unexpected_count_max; /* FERRY_TAG_UNEXPECTED_COUNT */
    /* marks past which an arrival looks at the peaks and the bounds: min(peak, bound) */
    uint64_t count_watch, bytes_watch;
    size_t thresh_forced; /* FERRY_RNDV_THRESH, or SIZE_MAX (automatic) */
    unsigned mode_forced; /* FERRY_RNDV_MODE, or 0 (automatic) */
    uint64_t section;     /* FERRY_RNDV_SECTION */
    uint64_t null_chunk;  /* FERRY_RNDV_NULL_CHUNK (0: automatic, tag_null_chunk) */
    uint64_t split_min;   /* FERRY_RNDV_SPLIT_MIN (0: calibrated, tag_calib.c) */
    tag_calib_class_t calib[TAG_CALIB_CLASSES]; /* the automatic COOP/SPLIT choice, by size */
    unsigned need_progress; /* ctl + retry + pump entries: fy_tag_progress has work */
    uint32_t ctl_pass;      /* passes over the control queue */
    unsigned warned[8];     /* warnings already given, per kind (tag_warn_kind_t) */
    /* recycled buffers handed out by tag_spare_get and not given back yet, per class: from
     * TAG_SPARE_PIECES_FIRST on, the unexpected messages in pieces and those being placed
     * (last: the fields of the fast paths keep their places) */
    unsigned spare_out[TAG_SPARE_CLASSES];
    /* the automatic choice between eager and rendezvous, by size class (tag_calib.c: index
     * TAG_CALIB_CLASSES + i): TAG_CALIB_EAGER_CLASSES of them, allocated by the first send
     * that could go either way (NULL before: a worker that sends none has its layout of old) */
    tag_calib_class_t *calib_eager;
} fy_tag_worker_t;

/* The module (proto/module_list.c) and its state. Its init registers the handlers; its
 * cleanup runs after the endpoints were freed and the deferred callbacks and the one-sided
 * module's cleanup ran: receives still posted complete with FERRY_ERR_CANCELED. */
extern const fy_module_ops_t fy_tag_module;

static inline fy_tag_worker_t *fy_tag_worker_of(const ferry_worker_t *worker)
{
    return (fy_tag_worker_t *)fy_worker_module_state(worker, FY_MODULE_TAG);
}

static inline fy_tag_ep_t *fy_tag_ep_of(const ferry_ep_t *ep)
{
    return (fy_tag_ep_t *)fy_ep_module_state(ep, FY_MODULE_TAG);
}

/* The endpoint stopped working (the module's ep_stop): fail every tagged send and receive in
 * progress with it with status, release their registrations, drop its queued control
 * messages, mark its unexpected RTS failed. Idempotent. */
void fy_tag_ep_failed(ferry_ep_t *ep, ferry_status_t status);

#endif
