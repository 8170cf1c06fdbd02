/* The tcp bootstrap's wire format (rank 0 <-> every other rank over one TCP connection).
 *
 * Every message is a 32-byte header, little-endian, then `length` bytes of payload:
 *
 *   offset size field
 *        0    4 magic    0x54534246 ("FBST" in memory)
 *        4    2 version  BOOTSTRAP_WIRE_VERSION (1)
 *        6    2 type     bootstrap_wire_type_t
 *        8    4 rank     the sender's rank (messages of rank 0: the addressee's rank)
 *       12    4 size     the job size the sender was given
 *       16    4 seq      collective number: 0 for HELLO/WELCOME/REJECT, then 1, 2, ...
 *       20    4 flags    0
 *       24    8 length   payload bytes
 *
 * Conversation: a rank connects and sends HELLO (no payload); rank 0 answers WELCOME (no
 * payload) or REJECT (a reason) and closes. A collective: each rank sends ALLGATHER (its
 * contribution) or BARRIER (no payload) with the next seq; rank 0 answers everyone RESULT
 * (size * length bytes; none for a barrier), or ABORT (a reason) when a rank failed.
 * Reason payload: status (int32, a ferry_status_t) then 0..BOOTSTRAP_WIRE_REASON_MAX bytes of
 * text (no NUL).
 *
 * Every header is checked (bootstrap_wire_decode) before its payload is read; the checks are
 * fuzzed (tests/fuzz/bootstrap_wire.c). */
#ifndef FERRY_BOOTSTRAP_WIRE_H
#define FERRY_BOOTSTRAP_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include <ferry/status.h>

#define BOOTSTRAP_WIRE_MAGIC 0x54534246u
#define BOOTSTRAP_WIRE_VERSION 1u
#define BOOTSTRAP_WIRE_HEADER_SIZE 32u
#define BOOTSTRAP_WIRE_REASON_MAX 200u

typedef enum bootstrap_wire_type {
    BOOTSTRAP_WIRE_HELLO = 1,
    BOOTSTRAP_WIRE_WELCOME = 2,
    BOOTSTRAP_WIRE_REJECT = 3,
    BOOTSTRAP_WIRE_ALLGATHER = 4,
    BOOTSTRAP_WIRE_BARRIER = 5,
    BOOTSTRAP_WIRE_RESULT = 6,
    BOOTSTRAP_WIRE_ABORT = 7,
} bootstrap_wire_type_t;

typedef struct bootstrap_wire_header {
    uint32_t magic;
    uint16_t version;
    uint16_t type;
    uint32_t rank;
    uint32_t size;
    uint32_t seq;
    uint32_t flags;
    uint64_t length;
} bootstrap_wire_header_t;

/* "HELLO", ..., "unknown". */
const char *bootstrap_wire_type_name(unsigned type);

void bootstrap_wire_encode(const bootstrap_wire_header_t *header,
                           uint8_t out[BOOTSTRAP_WIRE_HEADER_SIZE]);

/* Decode and check a header on its own: magic, version, a known type, flags 0, rank < size,
 * size >= 1, and a payload length within max_length (and for HELLO/WELCOME/BARRIER: 0; for
 * REJECT/ABORT: a reason). Returns FERRY_OK, or FERRY_ERR_PROTOCOL with *reason_p (static
 * text) saying what is wrong. *header is filled as far as it was read. */
ferry_status_t bootstrap_wire_decode(const uint8_t in[BOOTSTRAP_WIRE_HEADER_SIZE],
                                     uint64_t max_length, bootstrap_wire_header_t *header,
                                     const char **reason_p);

/* A reason payload: status, then text. Returns the bytes written into out (at most
 * 4 + BOOTSTRAP_WIRE_REASON_MAX); the text is cut to fit. */
size_t bootstrap_wire_reason_encode(ferry_status_t status, const char *text,
                                    uint8_t out[4 + BOOTSTRAP_WIRE_REASON_MAX]);

/* Decode a reason payload of length bytes (checked by bootstrap_wire_decode): *status_p, and
 * text copied into text (NUL-terminated, unprintable bytes replaced by '?'). A status that is
 * not an error becomes FERRY_ERR_PROTOCOL. */
void bootstrap_wire_reason_decode(const uint8_t *in, size_t length, ferry_status_t *status_p,
                                  char text[BOOTSTRAP_WIRE_REASON_MAX + 1]);

#endif
