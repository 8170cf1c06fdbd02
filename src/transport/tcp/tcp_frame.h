/* The tcp transport's wire formats: the frame header, the HELLO payload and the address
 * record. Fixed-size, little-endian, versioned; every decoder checks everything before a field
 * is used (and is fuzzed: tests/fuzz/tcp_frame.c).
 *
 * Frame header (24 bytes), in front of every frame on a connection:
 *     0  u32 magic "FTCP" (0x50435446)   4  u8 version (1)   5  u8 type   6  u8 am id
 *     7  u8 flags (TCP_FRAME_FLAG_*)     8  u16 am header length          10 u16 0
 *    12  u32 channel id                 16  u64 payload length
 * then, for AM frames, the am header and the payload; for HELLO, the HELLO payload.
 *
 * Types: HELLO (first frame each way: protocol version and the sender's worker address),
 * AM (one active message of a channel), OPEN (a channel opened by the sender: the receiver
 * creates its accepted endpoint), CLOSE (the sender closed the channel), PING (nothing to say
 * for a while: keeps the peer's silence timer quiet), IDLE (the sender has no channel left and
 * opens none on this connection any more; both IDLE: the socket closes).
 * A channel is named by (who opened it, its id): TCP_FRAME_FLAG_SENDER_OPENED says the sender
 * opened it, so ids of the two sides never collide. Ids are never reused on a connection.
 *
 * HELLO payload: 0 u32 flags (TCP_HELLO_*)   4 u32 address length   8 worker address
 * (src/wireup/address.h, parsed by fy_address_parse).
 *
 * Address record (4 + 20 * count bytes, in the worker address under transport id 3):
 *     0 u8 version (1)   1 u8 count (1..8)   2 u16 port
 *     4 count entries of 20 bytes: u8 family (4 or 6), u8[3] 0, u8[16] address
 *       (IPv4: the 4 bytes then zeros; network byte order as in sockaddr).
 */
#ifndef FERRY_TCP_FRAME_H
#define FERRY_TCP_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TCP_FRAME_MAGIC 0x50435446u
#define TCP_FRAME_VERSION 1u
#define TCP_FRAME_HEADER_SIZE 24u

enum tcp_frame_type {
    TCP_FRAME_HELLO = 1,
    TCP_FRAME_AM = 2,
    TCP_FRAME_OPEN = 3,
    TCP_FRAME_CLOSE = 4,
    TCP_FRAME_PING = 5,
    TCP_FRAME_IDLE = 6,
};

#define TCP_FRAME_FLAG_SENDER_OPENED 0x1u /* the channel id is one the sender allocated */
#define TCP_FRAME_FLAGS_KNOWN 0x1u

/* HELLO flags: a request (initiator), or the acceptor's answer. */
#define TCP_HELLO_ACCEPT 0x1u /* the acceptor keeps this connection */
#define TCP_HELLO_REJECT 0x2u /* duplicate of a connection the acceptor initiated: closed */
#define TCP_HELLO_FLAGS_KNOWN 0x3u
#define TCP_HELLO_FIXED_SIZE 8u
#define TCP_HELLO_MAX (TCP_HELLO_FIXED_SIZE + 1024u)

#define TCP_RECORD_VERSION 1u
#define TCP_RECORD_MAX_ADDRS 8u
#define TCP_RECORD_FIXED_SIZE 4u
#define TCP_RECORD_ENTRY_SIZE 20u
#define TCP_RECORD_MAX_SIZE (TCP_RECORD_FIXED_SIZE + TCP_RECORD_MAX_ADDRS * TCP_RECORD_ENTRY_SIZE)

typedef struct tcp_frame {
    uint8_t type;
    uint8_t am_id;
    uint8_t flags;
    uint16_t header_length; /* am header bytes (AM frames), else 0 */
    uint32_t channel;
    uint64_t length; /* payload bytes after the am header */
} tcp_frame_t;

typedef enum tcp_frame_verdict {
    TCP_FRAME_OK = 0,
    TCP_FRAME_BAD_MAGIC,
    TCP_FRAME_BAD_VERSION,
    TCP_FRAME_BAD_TYPE,
    TCP_FRAME_BAD_FLAGS,
    TCP_FRAME_BAD_HEADER_LENGTH,
    TCP_FRAME_TOO_LONG,
    TCP_FRAME_BAD_LENGTH,
} tcp_frame_verdict_t;

void tcp_frame_encode(const tcp_frame_t *frame, uint8_t raw[TCP_FRAME_HEADER_SIZE]);

/* Check and decode a header: magic, version, a known type, known flags, reserved bytes zero,
 * an am header length <= FERRY_AM_HEADER_MAX (AM frames; 0 for others), a payload length
 * <= max_payload (AM), within TCP_HELLO_MAX (HELLO) or 0 (others). *frame is written only on
 * TCP_FRAME_OK. */
tcp_frame_verdict_t tcp_frame_decode(const uint8_t raw[TCP_FRAME_HEADER_SIZE], uint64_t max_payload,
                                     tcp_frame_t *frame);
const char *tcp_frame_verdict_string(tcp_frame_verdict_t verdict);

typedef struct tcp_hello {
    uint32_t flags;
    uint32_t address_length;
    const uint8_t *address; /* points into the decoded bytes */
} tcp_hello_t;

/* Encode into buffer (TCP_HELLO_FIXED_SIZE + address_length bytes); returns the length. */
size_t tcp_hello_encode(uint32_t flags, const void *address, uint32_t address_length,
                        uint8_t *buffer);
/* Check a HELLO payload of length bytes (known flags, not both ACCEPT and REJECT, the address
 * length exactly what follows). Returns false when malformed. */
bool tcp_hello_decode(const uint8_t *bytes, size_t length, tcp_hello_t *hello);

typedef struct tcp_record_addr {
    uint8_t family; /* 4 or 6 */
    uint8_t bytes[16];
} tcp_record_addr_t;

typedef struct tcp_record {
    uint16_t port;
    uint8_t count;
    tcp_record_addr_t addrs[TCP_RECORD_MAX_ADDRS];
} tcp_record_t;

size_t tcp_record_encode(const tcp_record_t *record, uint8_t buffer[TCP_RECORD_MAX_SIZE]);
/* Check a record of length bytes: version, 1..8 entries, length exactly 4 + 20 * count,
 * families 4 or 6, reserved bytes zero, port not 0. Returns false when malformed. */
bool tcp_record_decode(const uint8_t *bytes, size_t length, tcp_record_t *record);

#endif
