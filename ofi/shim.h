/*
 * libferry-fi — TEMPORARY SHIMS for what ferry's public API does not give yet (issue 12).
 *
 * Each piece below emulates one item of issue 12 inside the provider and goes away when the
 * item lands in ferry; nothing outside shim.c knows the byte layouts.
 *
 *   G2 (item 1 peer identity, item 2 directed receive): every tagged message carries the
 *      sender's source id — 19 bits of a hash of its name — in bits 62..44 of the ferry tag, so
 *      that a directed receive or probe masks them in and a completion names its source
 *      (FI_SOURCE). Exact while the senders in one AV have different hashes, which
 *      fi_av_insert checks: two names of one hash are marked ambiguous (a warning), a directed
 *      receive from either fails with -FI_EADDRINUSE and their completions report
 *      FI_ADDR_NOTAVAIL as source. Costs the application 20 tag bits (mem_tag_format has 44).
 *   G3 (item 3, immediate data) and G4 (item 4, synchronous send): every message starts with a
 *      16-byte header {magic, version, flags, send id, data} in front of the payload (one more
 *      iov entry on both sides, no copy of the payload). It carries the remote CQ data and the
 *      request for a delivery acknowledgement. A probe (FI_PEEK) cannot see it: a peeked
 *      message reports data 0 and no FI_REMOTE_CQ_DATA until ferry's probe returns the data.
 */
#ifndef FERRY_OFI_SHIM_H
#define FERRY_OFI_SHIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "name.h"

/* ---------------------------------------------------------------- G2: source ids in tags */

#define FY_OFI_TAG_USER_BITS 44u
#define FY_OFI_TAG_USER_MASK ((UINT64_C(1) << FY_OFI_TAG_USER_BITS) - 1u)
#define FY_OFI_TAG_SRC_SHIFT FY_OFI_TAG_USER_BITS
#define FY_OFI_TAG_SRC_BITS 19u
#define FY_OFI_TAG_SRC_MASK (((UINT64_C(1) << FY_OFI_TAG_SRC_BITS) - 1u) << FY_OFI_TAG_SRC_SHIFT)

/** The source id of a name (name.h): a hash of its FY_OFI_NAME_LEN bytes, FY_OFI_TAG_SRC_BITS wide.
 */
uint32_t fy_ofi_name_src_id(const uint8_t name[FY_OFI_NAME_LEN]);

/* ---------------------------------------------------------------- G3/G4: message header */

#define FY_OFI_HDR_LEN 16u
#define FY_OFI_HDR_DATA 0x1u    /* data carries remote CQ data */
#define FY_OFI_HDR_ACK_REQ 0x2u /* the receiver acknowledges delivery with send_id */

typedef struct fy_ofi_hdr {
    unsigned flags;   /* FY_OFI_HDR_* */
    uint32_t send_id; /* with FY_OFI_HDR_ACK_REQ: echoed in the acknowledgement */
    uint64_t data;    /* with FY_OFI_HDR_DATA */
} fy_ofi_hdr_t;

void fy_ofi_hdr_encode(const fy_ofi_hdr_t *hdr, uint8_t wire[FY_OFI_HDR_LEN]);

/** Decode and check a header a peer sent. Returns false when it is malformed. */
bool fy_ofi_hdr_decode(const uint8_t wire[FY_OFI_HDR_LEN], fy_ofi_hdr_t *hdr);

#endif
