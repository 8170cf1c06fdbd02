/* The tag protocol's wire headers: tag_wire_decode checks every field of a header a peer sent
 * before the protocol looks at it (fuzzed by tests/fuzz/tag_wire.c); tag_wire_encode writes
 * one. Both convert between host order and the wire's little-endian order. */
#define _GNU_SOURCE
#include <endian.h>
#include <stdbool.h>
#include <string.h>

#include "core/compiler.h"
#include "proto/tag.h"

/* A negative status a peer may legitimately report (an error of ferry_status_t's range). */
#define TAG_WIRE_STATUS_MIN (-127)

/* Whether length bytes are all zero: eight at a time, without an early exit (a byte loop that
 * stopped at the first non-zero byte cost ~300 instructions for an RTS's 56-byte rest of the
 * key, 6 % of the receiver's instructions in an 8 KiB ping-pong by GET by address). */
static bool tag_wire_zero(const uint8_t *bytes, size_t length)
{
    uint64_t any = 0;
    size_t i = 0;
    for (; i + sizeof(uint64_t) <= length; i += sizeof(uint64_t)) {
        uint64_t word;
        memcpy(&word, bytes + i, sizeof(word));
        any |= word;
    }
    for (; i < length; i++)
        any |= bytes[i];
    return any == 0;
}

static bool tag_wire_has_key(const uint8_t rkey[RKEY_PACKED_SIZE])
{
    return !tag_wire_zero(rkey, RKEY_PACKED_SIZE);
}

static size_t tag_wire_size(unsigned id)
{
    switch (id) {
    case FY_AM_ID_TAG_EAGER:
        return sizeof(tag_wire_eager_t);
    case FY_AM_ID_TAG_RTS:
        return sizeof(tag_wire_rts_t);
    case FY_AM_ID_TAG_CTS:
        return sizeof(tag_wire_cts_t);
    case FY_AM_ID_TAG_DATA:
        return sizeof(tag_wire_data_t);
    case FY_AM_ID_TAG_DONE:
        return sizeof(tag_wire_done_t);
    case FY_AM_ID_TAG_COOKIE:
        return sizeof(tag_wire_cookie_t);
    case FY_AM_ID_TAG_FLOW:
        return sizeof(tag_wire_flow_t);
    default:
        return 0;
    }
}

static ferry_status_t tag_wire_fail(const char **why, const char *reason)
{
    *why = reason;
    return FERRY_ERR_PROTOCOL;
}

/* The RTS by address (tag_wire_rts_addr_t, header_length 40 or 48) into out->u.rts. */
static ferry_status_t tag_wire_decode_rts_addr(const void *header, size_t header_length,
                                               size_t payload_length, tag_wire_msg_t *out,
                                               const char **why)
{
    tag_wire_rts_addr_t a;
    memset(&a, 0, sizeof(a));
    memcpy(&a, header, header_length);
    if (a.version != TAG_WIRE_VERSION)
        return tag_wire_fail(why, "unknown wire version");
    if (payload_length != 0)
        return tag_wire_fail(why, "payload on a message that carries none");
    if (!tag_wire_zero(a.reserved, sizeof(a.reserved)))
        return tag_wire_fail(why, "reserved bytes not zero");
    if ((a.flags & ~TAG_FLAGS_RTS) != 0 || !(a.flags & TAG_FLAG_ADDR) ||
        ((a.flags & TAG_FLAG_IMM) != 0) != (header_length == sizeof(a)))
        return tag_wire_fail(why, "an RTS of 40 or 48 bytes without ADDR, or IMM not matching "
                                  "its size");
    a.tag = le64toh(a.tag);
    a.length = le64toh(a.length);
    a.send_id = le64toh(a.send_id);
    uint64_t address = le64toh(a.address);
    if ((a.mode != TAG_RNDV_GET && a.mode != TAG_RNDV_SPLIT) || a.length == 0)
        return tag_wire_fail(why, "ADDR other than a GET or SPLIT of the whole message");
    if (a.send_id == 0)
        return tag_wire_fail(why, "send id 0");
    if (address == 0 || address > UINT64_MAX - a.length)
        return tag_wire_fail(why, "ADDR with address 0, or past the end");
    memset(&out->u.rts, 0, sizeof(out->u.rts));
    out->id = FY_AM_ID_TAG_RTS;
    out->u.rts.version = a.version;
    out->u.rts.mode = a.mode;
    out->u.rts.flags = a.flags;
    out->u.rts.tag = a.tag;
    out->u.rts.length = a.length;
    out->u.rts.send_id = a.send_id;
    out->u.rts.section = a.length;
    memcpy(out->u.rts.rkey, &a.address, sizeof(a.address)); /* as on the wire */
    out->u.rts.imm = le64toh(a.imm);
    return FERRY_OK;
}

ferry_status_t tag_wire_decode(unsigned id, const void *header, size_t header_length,
                               size_t payload_length, tag_wire_msg_t *out, const char **why)
{
    size_t size = tag_wire_size(id);
    tag_wire_msg_t m;

    if (fy_likely(id == FY_AM_ID_TAG_EAGER)) {
        /* the fast path's message: the same checks, without the generic copy of the union */
        const uint8_t *h = header;
        tag_wire_eager_t eager;
        if (header == NULL ||
            (header_length != TAG_WIRE_EAGER_SHORT && header_length != sizeof(eager)))
            return tag_wire_fail(why, "header of the wrong size for its message id");
        if (h[0] != TAG_WIRE_VERSION)
            return tag_wire_fail(why, "unknown wire version");
        memset(&eager, 0, sizeof(eager));
        memcpy(&eager, h, header_length);
        if (!tag_wire_zero(eager.reserved, sizeof(eager.reserved)))
            return tag_wire_fail(why, "reserved bytes not zero");
        uint32_t imm32 = le32toh(eager.imm32);
        eager.imm32 = 0;
        if (header_length == TAG_WIRE_EAGER_SHORT) {
            /* flags 0, or immediate data below 2^32 and nothing else */
            if (fy_unlikely(eager.flags != 0)) {
                if (eager.flags != TAG_FLAG_IMM)
                    return tag_wire_fail(why, "EAGER flags do not match the header's size");
                eager.imm = imm32;
            } else if (imm32 != 0) {
                return tag_wire_fail(why, "immediate data without its flag");
            }
        } else {
            if (eager.flags == 0 || (eager.flags & ~TAG_FLAGS_EAGER) != 0)
                return tag_wire_fail(why, "EAGER flags do not match the header's size");
            if (imm32 != 0)
                return tag_wire_fail(why, "the 16-byte form's immediate data in the 32-byte one");
            eager.imm = le64toh(eager.imm);
            eager.send_id = le64toh(eager.send_id);
            if (!(eager.flags & TAG_FLAG_IMM) && eager.imm != 0)
                return tag_wire_fail(why, "immediate data without its flag");
            if (eager.flags == TAG_FLAG_IMM && eager.imm <= UINT32_MAX)
                return tag_wire_fail(why, "immediate data below 2^32 alone in the 32-byte form");
            if ((eager.flags & TAG_FLAGS_DONE_ON_MATCH) == TAG_FLAGS_DONE_ON_MATCH)
                return tag_wire_fail(why, "EAGER with both SYNC and ACK");
            if ((eager.flags & TAG_FLAGS_DONE_ON_MATCH) ? eager.send_id == 0 : eager.send_id != 0)
                return tag_wire_fail(why, "a send id exactly when SYNC or ACK is set");
        }
        eager.tag = le64toh(eager.tag);
        out->id = id;
        out->u.eager = eager;
        return FERRY_OK;
    }
    if (size == 0)
        return tag_wire_fail(why, "unknown message id");
    if (id == FY_AM_ID_TAG_RTS && header != NULL &&
        (header_length == TAG_WIRE_RTS_ADDR_SHORT || header_length == sizeof(tag_wire_rts_addr_t)))
        return tag_wire_decode_rts_addr(header, header_length, payload_length, out, why);
    if (header == NULL || header_length != size)
        return tag_wire_fail(why, "header of the wrong size for its message id");
    memset(&m, 0, sizeof(m));
    m.id = id;
    memcpy(&m.u, header, size);
    if (((const uint8_t *)header)[0] != TAG_WIRE_VERSION)
        return tag_wire_fail(why, "unknown wire version");
    if (id != FY_AM_ID_TAG_EAGER && id != FY_AM_ID_TAG_DATA && payload_length != 0)
        return tag_wire_fail(why, "payload on a message that carries none");

    switch (id) {
    case FY_AM_ID_TAG_RTS: {
        tag_wire_rts_t *r = &m.u.rts;
        if (!tag_wire_zero(r->reserved, sizeof(r->reserved)))
            return tag_wire_fail(why, "reserved bytes not zero");
        r->tag = le64toh(r->tag);
        r->length = le64toh(r->length);
        r->send_id = le64toh(r->send_id);
        r->section = le64toh(r->section);
        r->imm = le64toh(r->imm);
        if ((r->flags & ~TAG_FLAGS_RTS) != 0)
            return tag_wire_fail(why, "unknown RTS flags");
        if (!(r->flags & TAG_FLAG_IMM) && r->imm != 0)
            return tag_wire_fail(why, "immediate data without its flag");
        if (r->mode < TAG_RNDV_GET || r->mode > TAG_RNDV_SPLIT)
            return tag_wire_fail(why, "unknown rendezvous mode");
        if (r->send_id == 0)
            return tag_wire_fail(why, "send id 0");
        if (r->flags & TAG_FLAG_ADDR) {
            return tag_wire_fail(why, "ADDR in the long RTS (it has a form of its own)");
        } else if ((r->mode == TAG_RNDV_GET || r->mode == TAG_RNDV_SPLIT) && r->length > 0) {
            if (r->section == 0 || r->section > r->length)
                return tag_wire_fail(why, "GET section empty or longer than the message");
            if (!tag_wire_has_key(r->rkey))
                return tag_wire_fail(why, "GET without a key");
        } else {
            if (r->section != 0)
                return tag_wire_fail(why, "a section without a key");
            if (tag_wire_has_key(r->rkey))
                return tag_wire_fail(why, "a key in a mode that carries none");
        }
        break;
    }
    case FY_AM_ID_TAG_CTS: {
        tag_wire_cts_t *c = &m.u.cts;
        if (!tag_wire_zero(c->reserved, sizeof(c->reserved)))
            return tag_wire_fail(why, "reserved bytes not zero");
        c->send_id = le64toh(c->send_id);
        c->recv_id = le64toh(c->recv_id);
        c->length = le64toh(c->length);
        if (c->mode != TAG_RNDV_PUT && c->mode != TAG_RNDV_COOP && c->mode != TAG_RNDV_NULL &&
            c->mode != TAG_RNDV_SPLIT)
            return tag_wire_fail(why, "CTS mode is not PUT, COOP, NULL or SPLIT");
        if (c->send_id == 0 || c->recv_id == 0)
            return tag_wire_fail(why, "id 0");
        if (c->mode == TAG_RNDV_SPLIT && c->length == 0)
            return tag_wire_fail(why, "SPLIT of nothing");
        if ((c->mode == TAG_RNDV_PUT || c->mode == TAG_RNDV_SPLIT) && c->length > 0) {
            if (!tag_wire_has_key(c->rkey))
                return tag_wire_fail(why, "PUT without a key");
        } else if (tag_wire_has_key(c->rkey)) {
            return tag_wire_fail(why, "a key in a CTS that carries none");
        }
        break;
    }
    case FY_AM_ID_TAG_DATA: {
        tag_wire_data_t *d = &m.u.data;
        if (!tag_wire_zero(d->reserved, sizeof(d->reserved)))
            return tag_wire_fail(why, "reserved bytes not zero");
        d->recv_id = le64toh(d->recv_id);
        d->offset = le64toh(d->offset);
        if (d->recv_id == 0)
            return tag_wire_fail(why, "id 0");
        if (payload_length == 0)
            return tag_wire_fail(why, "DATA without bytes");
        if (d->offset > UINT64_MAX - payload_length)
            return tag_wire_fail(why, "DATA offset + length overflows");
        break;
    }
    case FY_AM_ID_TAG_DONE: {
        tag_wire_done_t *d = &m.u.done;
        if (d->reserved != 0)
            return tag_wire_fail(why, "reserved bytes not zero");
        d->status = (int32_t)le32toh((uint32_t)d->status);
        d->id = le64toh(d->id);
        d->done = le64toh(d->done);
        d->reply_id = le64toh(d->reply_id);
        if (d->target != TAG_DONE_TO_SEND && d->target != TAG_DONE_TO_RECV)
            return tag_wire_fail(why, "unknown DONE target");
        if (d->final > 1)
            return tag_wire_fail(why, "DONE final is not 0 or 1");
        if (d->id == 0)
            return tag_wire_fail(why, "id 0");
        if (d->status > 0 || d->status < TAG_WIRE_STATUS_MIN)
            return tag_wire_fail(why, "DONE status is not FERRY_OK or an error");
        if (!d->final) {
            if (d->target != TAG_DONE_TO_SEND || d->status != FERRY_OK || d->reply_id == 0 ||
                d->done == 0)
                return tag_wire_fail(why,
                                     "a section DONE must go to the sender, succeed, say how far "
                                     "and name the receive");
        } else if (d->reply_id != 0) {
            return tag_wire_fail(why, "a final DONE names a receive");
        }
        break;
    }
    case FY_AM_ID_TAG_COOKIE: {
        tag_wire_cookie_t *c = &m.u.cookie;
        if (!tag_wire_zero(c->reserved, sizeof(c->reserved)))
            return tag_wire_fail(why, "reserved bytes not zero");
        c->recv_id = le64toh(c->recv_id);
        c->offset = le64toh(c->offset);
        c->length = le64toh(c->length);
        if (c->recv_id == 0)
            return tag_wire_fail(why, "id 0");
        if (c->length == 0)
            return tag_wire_fail(why, "empty section");
        if (c->offset > UINT64_MAX - c->length)
            return tag_wire_fail(why, "section offset + length overflows");
        if (!tag_wire_has_key(c->rkey))
            return tag_wire_fail(why, "COOKIE without a key");
        break;
    }
    case FY_AM_ID_TAG_FLOW:
        if (!tag_wire_zero(m.u.flow.reserved, sizeof(m.u.flow.reserved)))
            return tag_wire_fail(why, "reserved bytes not zero");
        if (m.u.flow.eager > TAG_FLOW_BUFFER)
            return tag_wire_fail(why, "FLOW eager is not OFF, ON, SMALL or BUFFER");
        break;
    }
    *out = m;
    return FERRY_OK;
}

size_t tag_wire_encode(const tag_wire_msg_t *msg, void *buffer)
{
    tag_wire_msg_t m = *msg;
    size_t size = tag_wire_size(m.id);

    switch (m.id) {
    case FY_AM_ID_TAG_EAGER:
        if (tag_wire_eager_is_short(m.u.eager.flags, m.u.eager.imm)) {
            m.u.eager.imm32 = htole32((uint32_t)m.u.eager.imm);
            m.u.eager.imm = 0;
            size = TAG_WIRE_EAGER_SHORT;
        }
        m.u.eager.tag = htole64(m.u.eager.tag);
        m.u.eager.imm = htole64(m.u.eager.imm);
        m.u.eager.send_id = htole64(m.u.eager.send_id);
        break;
    case FY_AM_ID_TAG_RTS:
        if (m.u.rts.flags & TAG_FLAG_ADDR) {
            tag_wire_rts_addr_t a = {.version = m.u.rts.version,
                                     .mode = m.u.rts.mode,
                                     .flags = m.u.rts.flags,
                                     .tag = htole64(m.u.rts.tag),
                                     .length = htole64(m.u.rts.length),
                                     .send_id = htole64(m.u.rts.send_id),
                                     .imm = htole64(m.u.rts.imm)};
            memcpy(&a.address, m.u.rts.rkey, sizeof(a.address)); /* little-endian already */
            size = (m.u.rts.flags & TAG_FLAG_IMM) ? sizeof(a) : TAG_WIRE_RTS_ADDR_SHORT;
            memcpy(buffer, &a, size);
            return size;
        }
        m.u.rts.tag = htole64(m.u.rts.tag);
        m.u.rts.imm = htole64(m.u.rts.imm);
        m.u.rts.length = htole64(m.u.rts.length);
        m.u.rts.send_id = htole64(m.u.rts.send_id);
        m.u.rts.section = htole64(m.u.rts.section);
        break;
    case FY_AM_ID_TAG_CTS:
        m.u.cts.send_id = htole64(m.u.cts.send_id);
        m.u.cts.recv_id = htole64(m.u.cts.recv_id);
        m.u.cts.length = htole64(m.u.cts.length);
        break;
    case FY_AM_ID_TAG_DATA:
        m.u.data.recv_id = htole64(m.u.data.recv_id);
        m.u.data.offset = htole64(m.u.data.offset);
        break;
    case FY_AM_ID_TAG_DONE:
        m.u.done.status = (int32_t)htole32((uint32_t)m.u.done.status);
        m.u.done.id = htole64(m.u.done.id);
        m.u.done.done = htole64(m.u.done.done);
        m.u.done.reply_id = htole64(m.u.done.reply_id);
        break;
    case FY_AM_ID_TAG_COOKIE:
        m.u.cookie.recv_id = htole64(m.u.cookie.recv_id);
        m.u.cookie.offset = htole64(m.u.cookie.offset);
        m.u.cookie.length = htole64(m.u.cookie.length);
        break;
    default:
        break;
    }
    if (size > 0)
        memcpy(buffer, &m.u, size);
    return size;
}
