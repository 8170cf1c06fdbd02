/*
 * libferry-fi — TEMPORARY SHIMS (see shim.h): the source id of a name (G2), the message header
 * (G3, G4). All byte layouts are little-endian and checked before use: a peer is not trusted.
 */
#include <string.h>

#include "shim.h"
#include "wire.h"

#define HDR_MAGIC 0xfeu
#define HDR_VERSION 1u
#define HDR_KNOWN_FLAGS (FY_OFI_HDR_DATA | FY_OFI_HDR_ACK_REQ)

uint32_t fy_ofi_name_src_id(const uint8_t name[FY_OFI_NAME_LEN])
{
    /* FNV-1a over the whole name (the compact worker address names the worker uniquely), folded
     * to FY_OFI_TAG_SRC_BITS */
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < FY_OFI_NAME_LEN; i++) {
        h ^= name[i];
        h *= 0x100000001b3ull;
    }
    h ^= h >> 32;
    h ^= h >> FY_OFI_TAG_SRC_BITS;
    return (uint32_t)(h & ((UINT64_C(1) << FY_OFI_TAG_SRC_BITS) - 1u));
}

/* Header: u8 magic, u8 version, u8 flags, u8 0, u32 send id, u64 data. */

void fy_ofi_hdr_encode(const fy_ofi_hdr_t *hdr, uint8_t wire[FY_OFI_HDR_LEN])
{
    wire[0] = HDR_MAGIC;
    wire[1] = HDR_VERSION;
    wire[2] = (uint8_t)hdr->flags;
    wire[3] = 0;
    fy_ofi_put_u32(wire + 4, hdr->send_id);
    fy_ofi_put_u64(wire + 8, hdr->data);
}

bool fy_ofi_hdr_decode(const uint8_t wire[FY_OFI_HDR_LEN], fy_ofi_hdr_t *hdr)
{
    if (wire[0] != HDR_MAGIC || wire[1] != HDR_VERSION || wire[3] != 0 ||
        (wire[2] & ~HDR_KNOWN_FLAGS) != 0)
        return false;
    hdr->flags = wire[2];
    hdr->send_id = fy_ofi_get_u32(wire + 4);
    hdr->data = fy_ofi_get_u64(wire + 8);
    if (!(hdr->flags & FY_OFI_HDR_DATA) && hdr->data != 0)
        return false;
    return true;
}
