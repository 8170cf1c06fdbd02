/*
 * libferry-fi — the byte layout of the provider's control messages (ferry active messages),
 * fixed, versioned, little-endian, checked before use (fuzzed: ofi/tests/fuzz/ctrl_wire.c).
 *
 *   KEY_REQ  u8 version 1, 3 zero bytes, u32 fetch id, u64 key                (16 bytes)
 *   KEY_REP  u8 version 1, 3 zero bytes, u32 fetch id, i32 ferry status,
 *            4 zero bytes                                                     (16 bytes)
 *            payload: the packed ferry key, 1..FY_OFI_KEY_PACKED_MAX bytes, exactly when the
 *            status is FERRY_OK (an error status is negative)
 *   WDATA    u8 version 1, u8 flags (1: data is remote CQ data), 2 zero bytes, 4 zero bytes,
 *            u64 data, u64 length                                             (24 bytes)
 *
 * Only KEY_REP has a payload.
 */
#ifndef FERRY_OFI_CTRL_WIRE_H
#define FERRY_OFI_CTRL_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ferry/status.h>

/* Active-message ids the provider takes from ferry's user range (100 was the delivery ack of
 * the provider's acknowledged sends, which ferry's synchronous send replaced). */
#define FY_OFI_AM_KEY_REQ 101u /* key fetch request */
#define FY_OFI_AM_KEY_REP 102u /* key fetch reply */
#define FY_OFI_AM_WDATA 103u   /* remote write notification */

#define FY_OFI_CTRL_HEADER_MAX 24u
#define FY_OFI_KEY_PACKED_MAX 1024u

typedef struct fy_ofi_ctrl_msg {
    unsigned id;           /* FY_OFI_AM_* */
    uint32_t fetch_id;     /* KEY_REQ, KEY_REP */
    uint64_t key;          /* KEY_REQ */
    ferry_status_t status; /* KEY_REP: FERRY_OK or an error */
    bool has_data;         /* WDATA: data is remote CQ data */
    uint64_t data;         /* WDATA */
    uint64_t length;       /* WDATA: bytes written */
} fy_ofi_ctrl_msg_t;

/** The header of msg into out; returns its length (0 for an unknown id). */
size_t fy_ofi_ctrl_encode(const fy_ofi_ctrl_msg_t *msg, uint8_t out[FY_OFI_CTRL_HEADER_MAX]);

/** Check and decode the header of a message of active-message id that came with
 *  payload_length bytes of payload. Returns false when anything is off (length, version,
 *  reserved bytes, flags, a payload where none belongs, a status out of range). */
bool fy_ofi_ctrl_decode(unsigned id, const void *header, size_t header_length,
                        size_t payload_length, fy_ofi_ctrl_msg_t *msg);

#endif
