/* The segment protocol's wire format (layouts in segment.h): encoding, and the checks every
 * received header passes before any field is used. Fuzzed: tests/fuzz/segment_wire.c. */
#define _GNU_SOURCE
#include <endian.h>
#include <string.h>

#include "proto/segment.h"

static void put_u32(uint8_t *p, uint32_t v)
{
    v = htole32(v);
    memcpy(p, &v, sizeof(v));
}

static void put_u64(uint8_t *p, uint64_t v)
{
    v = htole64(v);
    memcpy(p, &v, sizeof(v));
}

static uint32_t get_u32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof(v));
    return le32toh(v);
}

static uint64_t get_u64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof(v));
    return le64toh(v);
}

static int all_zero(const uint8_t *p, size_t length)
{
    for (size_t i = 0; i < length; i++) {
        if (p[i] != 0)
            return 0;
    }
    return 1;
}

size_t seg_wire_encode(const seg_wire_msg_t *m, uint8_t *buf)
{
    memset(buf, 0, SEG_WIRE_MAX_SIZE);
    buf[0] = SEG_WIRE_VERSION;
    switch (m->id) {
    case FY_AM_ID_SEG_CONNECT:
        put_u32(buf + 4, m->segment_id);
        put_u64(buf + 8, m->request_id);
        put_u32(buf + 16, m->flags);
        return SEG_WIRE_CONNECT_SIZE;
    case FY_AM_ID_SEG_REPLY:
        put_u32(buf + 4, (uint32_t)m->status);
        put_u64(buf + 8, m->request_id);
        put_u64(buf + 16, m->connection);
        put_u64(buf + 24, m->size);
        memcpy(buf + 32, m->rkey, RKEY_PACKED_SIZE);
        return SEG_WIRE_REPLY_SIZE;
    case FY_AM_ID_SEG_DISCONNECT:
        put_u64(buf + 8, m->connection);
        return SEG_WIRE_DISCONNECT_SIZE;
    case FY_AM_ID_SEG_NOTIFY:
        put_u64(buf + 8, m->connection);
        return SEG_WIRE_NOTIFY_SIZE;
    default:
        return 0;
    }
}

static ferry_status_t wire_bad(const char **reason_p, const char *reason)
{
    if (reason_p != NULL)
        *reason_p = reason;
    return FERRY_ERR_PROTOCOL;
}

ferry_status_t seg_wire_decode(unsigned id, const void *header, size_t header_length,
                               size_t payload_length, seg_wire_msg_t *out, const char **reason_p)
{
    const uint8_t *h = header;
    seg_wire_msg_t m;
    size_t expected;

    memset(&m, 0, sizeof(m));
    m.id = id;
    switch (id) {
    case FY_AM_ID_SEG_CONNECT:
        expected = SEG_WIRE_CONNECT_SIZE;
        break;
    case FY_AM_ID_SEG_REPLY:
        expected = SEG_WIRE_REPLY_SIZE;
        break;
    case FY_AM_ID_SEG_DISCONNECT:
        expected = SEG_WIRE_DISCONNECT_SIZE;
        break;
    case FY_AM_ID_SEG_NOTIFY:
        expected = SEG_WIRE_NOTIFY_SIZE;
        break;
    default:
        return wire_bad(reason_p, "unknown message id");
    }
    if (header == NULL || header_length != expected)
        return wire_bad(reason_p, "header of the wrong size");
    if (h[0] != SEG_WIRE_VERSION)
        return wire_bad(reason_p, "unknown protocol version");
    if (id == FY_AM_ID_SEG_NOTIFY ? payload_length > FERRY_SEGMENT_NOTIFY_MAX : payload_length != 0)
        return wire_bad(reason_p, "payload of the wrong size");

    switch (id) {
    case FY_AM_ID_SEG_CONNECT:
        if (!all_zero(h + 1, 3) || !all_zero(h + 20, 4))
            return wire_bad(reason_p, "reserved bytes are not zero");
        m.segment_id = get_u32(h + 4);
        m.request_id = get_u64(h + 8);
        m.flags = get_u32(h + 16);
        if (m.segment_id == FERRY_SEGMENT_AUTO_ID)
            return wire_bad(reason_p, "connect to the automatic id");
        if (m.request_id == 0)
            return wire_bad(reason_p, "request id 0");
        break;
    case FY_AM_ID_SEG_REPLY:
        if (!all_zero(h + 1, 3))
            return wire_bad(reason_p, "reserved bytes are not zero");
        m.status = (int32_t)get_u32(h + 4);
        m.request_id = get_u64(h + 8);
        m.connection = get_u64(h + 16);
        m.size = get_u64(h + 24);
        memcpy(m.rkey, h + 32, RKEY_PACKED_SIZE);
        if (m.request_id == 0)
            return wire_bad(reason_p, "request id 0");
        if (m.status == FERRY_OK) {
            if (m.connection == 0 || m.size == 0)
                return wire_bad(reason_p, "accepting reply without connection or size");
        } else if (m.status == FERRY_ERR_NO_ELEM || m.status == FERRY_ERR_NOT_AVAILABLE ||
                   m.status == FERRY_ERR_CONNECTION_REFUSED) {
            if (m.connection != 0 || m.size != 0 || !all_zero(m.rkey, RKEY_PACKED_SIZE))
                return wire_bad(reason_p, "refusing reply with connection fields");
        } else {
            return wire_bad(reason_p, "unknown reply status");
        }
        break;
    case FY_AM_ID_SEG_DISCONNECT:
    case FY_AM_ID_SEG_NOTIFY:
        if (!all_zero(h + 1, 7))
            return wire_bad(reason_p, "reserved bytes are not zero");
        m.connection = get_u64(h + 8);
        if (m.connection == 0)
            return wire_bad(reason_p, "connection id 0");
        m.payload_length = payload_length;
        break;
    default:
        break;
    }
    *out = m;
    return FERRY_OK;
}
