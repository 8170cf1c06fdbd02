/*
 * libferry-fi — control message headers: see ctrl_wire.h.
 */
#include <string.h>

#include "ctrl_wire.h"
#include "wire.h"

#define CTRL_VERSION 1u
#define KEY_REQ_LEN 16u
#define KEY_REP_LEN 16u
#define WDATA_LEN 24u
#define WDATA_HAS_DATA 1u

size_t fy_ofi_ctrl_encode(const fy_ofi_ctrl_msg_t *msg, uint8_t out[FY_OFI_CTRL_HEADER_MAX])
{
    memset(out, 0, FY_OFI_CTRL_HEADER_MAX);
    out[0] = CTRL_VERSION;
    switch (msg->id) {
    case FY_OFI_AM_KEY_REQ:
        fy_ofi_put_u32(out + 4, msg->fetch_id);
        fy_ofi_put_u64(out + 8, msg->key);
        return KEY_REQ_LEN;
    case FY_OFI_AM_KEY_REP:
        fy_ofi_put_u32(out + 4, msg->fetch_id);
        fy_ofi_put_u32(out + 8, (uint32_t)(int32_t)msg->status);
        return KEY_REP_LEN;
    case FY_OFI_AM_WDATA:
        out[1] = msg->has_data ? WDATA_HAS_DATA : 0;
        fy_ofi_put_u64(out + 8, msg->data);
        fy_ofi_put_u64(out + 16, msg->length);
        return WDATA_LEN;
    default:
        return 0;
    }
}

static bool zero(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (p[i] != 0)
            return false;
    }
    return true;
}

bool fy_ofi_ctrl_decode(unsigned id, const void *header, size_t header_length,
                        size_t payload_length, fy_ofi_ctrl_msg_t *msg)
{
    const uint8_t *h = header;
    if (header == NULL || header_length < 4 || h[0] != CTRL_VERSION || !zero(h + 2, 2))
        return false;
    memset(msg, 0, sizeof(*msg));
    msg->id = id;
    switch (id) {
    case FY_OFI_AM_KEY_REQ:
        if (header_length != KEY_REQ_LEN || h[1] != 0 || payload_length != 0)
            return false;
        msg->fetch_id = fy_ofi_get_u32(h + 4);
        msg->key = fy_ofi_get_u64(h + 8);
        return true;
    case FY_OFI_AM_KEY_REP: {
        if (header_length != KEY_REP_LEN || h[1] != 0 || !zero(h + 12, 4) ||
            payload_length > FY_OFI_KEY_PACKED_MAX)
            return false;
        int32_t status = (int32_t)fy_ofi_get_u32(h + 8);
        /* FERRY_OK with a key, or an error (negative) without one */
        if (status > 0 || (status == 0) != (payload_length > 0))
            return false;
        msg->fetch_id = fy_ofi_get_u32(h + 4);
        msg->status = (ferry_status_t)status;
        return true;
    }
    case FY_OFI_AM_WDATA:
        if (header_length != WDATA_LEN || (h[1] & ~WDATA_HAS_DATA) != 0 || !zero(h + 4, 4) ||
            payload_length != 0)
            return false;
        msg->has_data = (h[1] & WDATA_HAS_DATA) != 0;
        msg->data = fy_ofi_get_u64(h + 8);
        msg->length = fy_ofi_get_u64(h + 16);
        if (!msg->has_data && msg->data != 0)
            return false;
        return true;
    default:
        return false;
    }
}
