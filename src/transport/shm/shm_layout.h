/* Shared-memory layouts of the shm transport: fixed-size, versioned, checked before use.
 *
 * Every worker owns one REGION (a sealed memfd): a header page with the flags peers touch, then
 * a pool of SHM_BUF_COUNT x SHM_BUF_SIZE medium buffers (each in a slot of SHM_BUF_SLOT bytes) and
 * a pool of SHM_BULK_COUNT x SHM_BULK_SIZE bulk buffers, each reserved by senders with a 64-bit
 * atomic bitmap. Bulk buffers carry messages of up to 32 KiB and the fragments of larger ones: few,
 * large buffers keep the bitmap's cache line from bouncing between the cores for every 4 KiB. For
 * every connected peer it also owns one RING: the single-producer, single-consumer queue of 64-byte
 * cells that this peer sends into. Receive queues and buffers therefore belong to receivers: memory
 * grows linearly with the number of peers.
 *
 * Ring protocol (per cell, Vyukov style, no shared head or tail):
 *   the cell at position p is free for the producer when seq == p;
 *   the producer fills it and stores seq = p + 1 (release);
 *   the consumer reads it when seq == p + 1 (acquire), copies it out, and stores
 *   seq = p + cells (release), which frees it for the producer's next lap.
 */
#ifndef FERRY_SHM_LAYOUT_H
#define FERRY_SHM_LAYOUT_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stdint.h>

#define SHM_LAYOUT_VERSION 8u
#define SHM_REGION_MAGIC 0x4e4f494745524d53ull /* "SMREGION" */
#define SHM_RING_MAGIC 0x474e4952444d4853ull   /* "SHMDRING" */

#define SHM_BUF_COUNT 64u /* one bit each in a 64-bit word */
/* 8 KiB: an 8 KiB eager tagged message (its header in the cell) takes one medium buffer, of
 * which 64 can be in flight, not one of the 16 bulk buffers */
#define SHM_BUF_SIZE 8192u
/* Each medium buffer has a slot of SHM_BUF_SLOT bytes in the pool; contents of at least
 * SHM_BUF_SHIFT_MIN bytes start SHM_BUF_SHIFT bytes into it, smaller ones at its start
 * (shm_buf_shift). An 8 KiB payload that starts 3 KiB into a page streamed 1.2-1.35x the rate
 * of one at a page's start on a Sapphire Rapids host (tag_bw 8 KiB, 5 same-session A/B runs;
 * 6000 and 7000 bytes did not change, smaller ones were 1-5 % slower shifted: layout version 7) */
#define SHM_BUF_SLOT 12288u
#define SHM_BUF_SHIFT 3072u
#define SHM_BUF_SHIFT_MIN 7169u
#define SHM_BULK_COUNT 16u
#define SHM_BULK_SIZE 32768u
#define SHM_REGION_HEADER_SIZE 4096u
#define SHM_BULK_OFFSET (SHM_REGION_HEADER_SIZE + SHM_BUF_COUNT * SHM_BUF_SLOT)
#define SHM_REGION_SIZE (SHM_BULK_OFFSET + SHM_BULK_COUNT * SHM_BULK_SIZE)

#define SHM_CELL_SIZE 64u
#define SHM_CELL_DATA 44u       /* header + payload bytes that travel inside a cell */
#define SHM_CELL_EXTRA_DATA 56u /* bytes in a continuation cell: all but its seq */
#define SHM_INLINE_EXTRA_MAX 3u /* continuation cells an INLINE message may take */
#define SHM_INLINE_MAX (SHM_CELL_DATA + SHM_INLINE_EXTRA_MAX * SHM_CELL_EXTRA_DATA) /* 212 */
#define SHM_RING_HEADER_SIZE 128u

typedef struct shm_region {
    /* line 0: written once by the owner before the memfd is shared */
    uint64_t magic;
    uint32_t version;
    uint32_t buf_count;
    uint32_t buf_size;
    uint32_t header_size;
    uint64_t region_size;
    uint32_t owner_pid;
    /* line 1: the owner sets armed before sleeping; a sender that finds it set swaps it to 0
     * and writes the owner's eventfd (one wake-up per sleep) */
    alignas(64) _Atomic uint32_t armed;
    /* line 2: medium buffers, bit set = free */
    alignas(64) _Atomic uint64_t free_bufs;
    /* line 3: number of senders that wait for a ring cell or a buffer of this owner */
    alignas(64) _Atomic uint32_t waiters;
    /* lines 4..: who reserved each buffer (the sender id this owner gave it), so that the
     * buffers of a sender that died between reserving and posting can be reclaimed */
    alignas(64) _Atomic uint32_t buf_owner[SHM_BUF_COUNT];
    /* bulk buffers, bit set = free, and their owners */
    alignas(64) _Atomic uint64_t free_bulk;
    alignas(64) _Atomic uint32_t bulk_owner[SHM_BULK_COUNT];
} shm_region_t;

typedef struct shm_ring_header {
    uint64_t magic;
    uint32_t version;
    uint32_t cells;     /* a power of two */
    uint32_t cell_size; /* SHM_CELL_SIZE */
    uint32_t sender_id; /* the id the producer writes into buf_owner */
    /* line 1: the producer sets this when it waits for space; the consumer clears it and
     * signals the producer */
    alignas(64) _Atomic uint32_t sender_waiting;
} shm_ring_header_t;

enum shm_cell_type {
    SHM_CELL_INLINE = 1, /* header + payload in data[], continued in the next `flags` cells
                          * (bytes 8..63 of each; their seq is left to the consumer, which
                          * frees the cells of a message in position order) */
    SHM_CELL_MEDIUM = 2, /* header + payload in buffer buf of the receiver's medium pool, or
                          * of its bulk pool (flags SHM_CELL_BULK); with SHM_CELL_HEAD the
                          * header (<= SHM_CELL_DATA bytes) is in data[] and the buffer holds
                          * only the payload, from its first byte */
    SHM_CELL_FRAG = 3,   /* one fragment of a large message, in bulk buffer buf */
    SHM_CELL_CLOSE = 4,  /* the sender closed the connection gracefully: nothing follows */
};

#define SHM_FRAG_FIRST 0x1u /* data[0..7]: payload length of the whole message (u64) */
#define SHM_FRAG_LAST 0x2u
#define SHM_CELL_BULK 0x80u /* MEDIUM or FRAG: buf indexes the bulk pool */
/* MEDIUM: the header is in data[], the payload alone in the buffer. A first FRAG: the header
 * is in data[SHM_FRAG_HEAD_AT..] (after the message length), the fragment's payload alone in
 * the buffer, so that every fragment's payload starts at a buffer's first byte and fills it
 * (a 64 KiB message is two fragments, not two and 16 bytes) */
#define SHM_CELL_HEAD 0x40u
#define SHM_FRAG_HEAD_AT 8u
#define SHM_FRAG_HEAD_MAX (SHM_CELL_DATA - SHM_FRAG_HEAD_AT) /* 36 */

typedef struct shm_cell {
    _Atomic uint64_t seq;
    uint8_t type;
    uint8_t am_id;
    uint16_t header_length; /* header bytes at the start of data[] or the buffer */
    uint32_t length;        /* header + payload bytes in data[] or the buffer */
    uint8_t buf;            /* buffer index (MEDIUM, FRAG) */
    uint8_t flags;          /* SHM_FRAG_* */
    uint16_t reserved;
    uint8_t data[SHM_CELL_DATA];
} shm_cell_t;

_Static_assert(sizeof(shm_cell_t) == SHM_CELL_SIZE, "a cell is one cache line");
_Static_assert(SHM_BUF_SHIFT + SHM_BUF_SIZE <= SHM_BUF_SLOT && SHM_BUF_SLOT % 4096u == 0,
               "a shifted medium buffer fits its slot, and every slot starts a page");

/* Where a medium buffer's contents of `bytes` bytes start in its slot (SHM_BUF_SLOT). */
static inline uint32_t shm_buf_shift(uint64_t bytes)
{
    return bytes >= SHM_BUF_SHIFT_MIN ? SHM_BUF_SHIFT : 0u;
}
_Static_assert(sizeof(shm_region_t) <= SHM_REGION_HEADER_SIZE, "region header fits its page");
_Static_assert(sizeof(shm_ring_header_t) <= SHM_RING_HEADER_SIZE, "ring header size");

/* Handshake on the UNIX socket (SOCK_SEQPACKET), with 4 descriptors passed by SCM_RIGHTS:
 * the sender's region memfd, its eventfd, the ring memfd the receiver of this message will
 * send into, and the sender's context key table (src/mem/mem.h). */
#define SHM_HANDSHAKE_MAGIC 0x4b534e44u /* "DNSK" */
enum shm_handshake_type {
    SHM_HANDSHAKE_HELLO = 1,  /* connecting side */
    SHM_HANDSHAKE_ACCEPT = 2, /* accepting side */
};
#define SHM_HANDSHAKE_FDS 4

typedef struct shm_handshake {
    uint32_t magic;
    uint16_t version;
    uint16_t type;
    uint32_t pid;
    uint32_t ring_cells; /* cells of the ring passed with this message */
    uint64_t worker_uuid;
    uint32_t sender_id; /* the id the receiver of this message writes into buf_owner */
    uint32_t flags;     /* SHM_HANDSHAKE_MEMBARRIER; others must be 0 */
} shm_handshake_t;

/* The sender registered for membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED) and issues that barrier
 * whenever it goes to sleep (layout version 8, shm_wake.c): where both peers say so, neither
 * fences its sends and frees. */
#define SHM_HANDSHAKE_MEMBARRIER 0x1u
#define SHM_HANDSHAKE_FLAGS_KNOWN SHM_HANDSHAKE_MEMBARRIER

_Static_assert(sizeof(shm_handshake_t) == 32, "handshake layout is fixed");

#endif
