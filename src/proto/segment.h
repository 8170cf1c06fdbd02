/* Named segments: local segments (owner side, segment.c), remote segments (importer side,
 * rsegment.c), DMA-style transfer queues (segment_dma.c) and the wire format of the segment
 * protocol (segment_wire.c).
 *
 * Protocol (internal active messages; every header fixed-size, little-endian, version 1, checked
 * by seg_wire_decode before any field is used; fuzzed: tests/fuzz/segment_wire.c):
 *   CONNECT    importer -> owner  {segment id, request id, flags}
 *   REPLY      owner -> importer  {request id, status, connection id, size, packed key}
 *              status: FERRY_OK (connection, size and key set), FERRY_ERR_NO_ELEM,
 *              FERRY_ERR_NOT_AVAILABLE, FERRY_ERR_CONNECTION_REFUSED (all else zero)
 *   DISCONNECT importer -> owner  {connection id}
 *   NOTIFY     importer -> owner  {connection id}, payload: 0..FERRY_SEGMENT_NOTIFY_MAX bytes
 * Request ids are the importer's, connection ids the owner's (never 0); each side looks them up
 * among its own objects on the endpoint the message came from, never trusts them as pointers,
 * and drops a message about an unknown one (a warning per kind, then debug lines). A REPLY for
 * a request that is gone (the connect timed out) is answered with DISCONNECT.
 *
 * Layouts (byte offsets):
 *   CONNECT (24)    0 u8 version  1 u8[3] 0  4 u32 segment id  8 u64 request id
 *                   16 u32 flags  20 u32 0
 *   REPLY (96)      0 u8 version  1 u8[3] 0  4 i32 status  8 u64 request id
 *                   16 u64 connection  24 u64 size  32 u8[64] packed key
 *   DISCONNECT (16) 0 u8 version  1 u8[7] 0  8 u64 connection
 *   NOTIFY (16)     0 u8 version  1 u8[7] 0  8 u64 connection
 */
#ifndef FERRY_MEM_SEGMENT_H
#define FERRY_MEM_SEGMENT_H

#include <stddef.h>
#include <stdint.h>

#include <ferry/ferry.h>

#include "core/list.h"
#include "mem/mem.h"
#include "progress/worker.h"
#include "proto/am_ids.h"
#include "proto/module_list.h"

#define SEG_WIRE_VERSION 1u
#define SEG_WIRE_CONNECT_SIZE 24u
#define SEG_WIRE_REPLY_SIZE 96u
#define SEG_WIRE_DISCONNECT_SIZE 16u
#define SEG_WIRE_NOTIFY_SIZE 16u
#define SEG_WIRE_MAX_SIZE SEG_WIRE_REPLY_SIZE

/* A decoded message; fields not used by its kind are 0. */
typedef struct seg_wire_msg {
    unsigned id; /* FY_AM_ID_SEG_* */
    uint32_t segment_id;
    uint32_t flags;
    uint64_t request_id;
    int32_t status;
    uint64_t connection;
    uint64_t size;
    uint8_t rkey[RKEY_PACKED_SIZE];
    size_t payload_length; /* NOTIFY */
} seg_wire_msg_t;

/* Encode m (its id says the kind) into buf (SEG_WIRE_MAX_SIZE bytes); returns the header size. */
size_t seg_wire_encode(const seg_wire_msg_t *m, uint8_t *buf);

/* Check and decode the header of a message of active-message id with payload_length bytes of
 * payload. Returns FERRY_OK or FERRY_ERR_PROTOCOL (*reason_p says why; static string). */
ferry_status_t seg_wire_decode(unsigned id, const void *header, size_t header_length,
                               size_t payload_length, seg_wire_msg_t *out, const char **reason_p);

/* ------------------------------------------------------------------ per-worker state */

typedef struct fy_segment_worker {
    fy_list_t segments;   /* ferry_segment_t whose handle is live or whose memory is */
    fy_list_t conns;      /* owner side: seg_conn_t, one per connected peer */
    fy_list_t rsegments;  /* importer side: ferry_rsegment_t */
    fy_list_t events;     /* events queued for callbacks (each also a deferred call) */
    fy_list_t unsent;     /* control messages that found no room, in order */
    fy_list_t dma_active; /* running DMA queues */
    fy_list_t dma_queues; /* every DMA queue (freed at worker destruction) */
    uint64_t next_request_id;
    uint64_t next_connection_id;
    unsigned connecting;        /* asynchronous connects with a deadline */
    unsigned need_progress;     /* > 0: the module's progress bit is set (seg_update_need) */
    unsigned warned;            /* malformed or unknown messages reported at warn level */
    uint64_t dma_chunk;         /* FERRY_SEGMENT_DMA_CHUNK */
    unsigned copy_threads;      /* FERRY_SEGMENT_COPY_THREADS (0: copies run in progress) */
    uint64_t copy_chunk;        /* FERRY_SEGMENT_COPY_CHUNK */
    struct seg_copy_pool *copy; /* the copy threads (segment_copy.c); NULL until first used */
} fy_segment_worker_t;

/* The module (proto/module_list.c). Its init registers the handlers; its cleanup frees every
 * segment, remote segment, queue and event left (after the endpoints were freed). Its ep_stop
 * ends the owner side's connections over the endpoint (DISCONNECT) and makes the importer
 * side's remote segments LOST; its ep_free makes sure nothing refers to the endpoint. */
extern const fy_module_ops_t fy_segment_module;

static inline fy_segment_worker_t *fy_segment_worker_of(const ferry_worker_t *worker)
{
    return (fy_segment_worker_t *)fy_worker_module_state(worker, FY_MODULE_SEGMENT);
}

#endif
