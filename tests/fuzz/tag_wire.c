/* Fuzz tag_wire_decode() (src/proto/tag_wire.c), the checker of every tagged-message protocol
 * header a peer sends, on arbitrary bytes.
 *
 * Input: byte 0 picks the active-message id (FY_AM_ID_TAG_EAGER + byte % 8: the seven tag
 * ids and one that is not), bytes 1..4 are the payload length (u32, little-endian), the rest is
 * the header. When the decoder accepts it, every promise tag.h makes about a decoded header is
 * checked: the exact size for the id (EAGER: 16 bytes without flags or with immediate data
 * below 2^32 alone, 32 otherwise; RTS by address: 40 bytes without immediate data, 48 with), the
 * current version,
 * EAGER's flags (immediate data, synchronous send id), payload only on EAGER and DATA (and never an
 * empty DATA), modes, ids never 0, sections, offsets and lengths that do not overflow, keys
 * exactly where the mode needs one, DONE's target/final/status/reply id rules; and re-encoding
 * the decoded header must give the input back (nothing is ignored: reserved bytes are zero).
 * The fast cases of EAGER must take exactly the headers of their kind the decoder accepts, with
 * the same fields: tag_wire_eager_plain the flag-less ones (the tag), tag_wire_eager_imm those
 * whose only flag is TAG_FLAG_IMM, in either form (the tag and the immediate data). A violation
 * aborts.
 *
 * Seeds (tests/fuzz/corpus/tag_wire/): one valid header of each kind, some with payload. */
#define _GNU_SOURCE
#include <endian.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "fuzz_common.h"
#include "proto/tag.h"

static int fuzz_zero(const uint8_t *bytes, size_t length)
{
    for (size_t i = 0; i < length; i++) {
        if (bytes[i] != 0)
            return 0;
    }
    return 1;
}

static void fuzz_check(const tag_wire_msg_t *m, size_t header_length, size_t payload)
{
    static const size_t sizes[] = {sizeof(tag_wire_eager_t), sizeof(tag_wire_rts_t),
                                   sizeof(tag_wire_cts_t),   sizeof(tag_wire_data_t),
                                   sizeof(tag_wire_done_t),  sizeof(tag_wire_cookie_t),
                                   sizeof(tag_wire_flow_t)};
    if (m->id < FY_AM_ID_TAG_EAGER || m->id > FY_AM_ID_TAG_FLOW)
        fuzz_fail("accepted an unknown id");
    /* EAGER has two sizes: the short form without flags or with immediate data below 2^32
     * alone, the full one otherwise; an RTS by address has a form of its own, 40 bytes without
     * immediate data, 48 with */
    size_t expected = m->id == FY_AM_ID_TAG_EAGER &&
                              (m->u.eager.flags == 0 ||
                               (m->u.eager.flags == TAG_FLAG_IMM && m->u.eager.imm <= UINT32_MAX))
                          ? TAG_WIRE_EAGER_SHORT
                          : sizes[m->id - FY_AM_ID_TAG_EAGER];
    if (m->id == FY_AM_ID_TAG_RTS && (m->u.rts.flags & TAG_FLAG_ADDR))
        expected =
            (m->u.rts.flags & TAG_FLAG_IMM) ? sizeof(tag_wire_rts_addr_t) : TAG_WIRE_RTS_ADDR_SHORT;
    if (header_length != expected)
        fuzz_fail("accepted a header of the wrong size");
    if (payload != 0 && m->id != FY_AM_ID_TAG_EAGER && m->id != FY_AM_ID_TAG_DATA)
        fuzz_fail("accepted a payload on a message without one");
    switch (m->id) {
    case FY_AM_ID_TAG_EAGER: {
        const tag_wire_eager_t *e = &m->u.eager;
        if (e->version != TAG_WIRE_VERSION)
            fuzz_fail("EAGER version");
        if ((e->flags & ~TAG_FLAGS_EAGER) != 0 || (!(e->flags & TAG_FLAG_IMM) && e->imm != 0))
            fuzz_fail("EAGER unknown flag, or immediate data without its flag");
        if (e->imm32 != 0 || e->reserved[0] != 0 || e->reserved[1] != 0)
            fuzz_fail("EAGER decoded with imm32 or reserved bytes set");
        if ((e->flags & TAG_FLAGS_DONE_ON_MATCH) == TAG_FLAGS_DONE_ON_MATCH ||
            ((e->flags & TAG_FLAGS_DONE_ON_MATCH) ? e->send_id == 0 : e->send_id != 0))
            fuzz_fail("EAGER with SYNC and ACK, or a send id without one of them, or 0 with it");
        break;
    }
    case FY_AM_ID_TAG_RTS: {
        const tag_wire_rts_t *r = &m->u.rts;
        int key = !fuzz_zero(r->rkey, sizeof(r->rkey));
        if (r->version != TAG_WIRE_VERSION || r->mode < TAG_RNDV_GET || r->mode > TAG_RNDV_SPLIT)
            fuzz_fail("RTS version or mode");
        if (r->send_id == 0)
            fuzz_fail("RTS send id 0");
        if (r->flags & TAG_FLAG_ADDR) {
            uint64_t address = tag_wire_rts_address(r->rkey);
            if ((r->mode != TAG_RNDV_GET && r->mode != TAG_RNDV_SPLIT) || r->length == 0 ||
                r->section != r->length || address == 0 || address > UINT64_MAX - r->length ||
                !fuzz_zero(r->rkey + sizeof(address), sizeof(r->rkey) - sizeof(address)))
                fuzz_fail("RTS ADDR rules");
        } else if ((r->mode == TAG_RNDV_GET || r->mode == TAG_RNDV_SPLIT) && r->length > 0) {
            if (r->section == 0 || r->section > r->length || !key)
                fuzz_fail("GET RTS section or key");
        } else if (r->section != 0 || key) {
            fuzz_fail("RTS section or key where none belongs");
        }
        break;
    }
    case FY_AM_ID_TAG_CTS: {
        const tag_wire_cts_t *c = &m->u.cts;
        int key = !fuzz_zero(c->rkey, sizeof(c->rkey));
        if (c->version != TAG_WIRE_VERSION ||
            (c->mode != TAG_RNDV_PUT && c->mode != TAG_RNDV_COOP && c->mode != TAG_RNDV_NULL &&
             c->mode != TAG_RNDV_SPLIT))
            fuzz_fail("CTS version or mode");
        if (c->send_id == 0 || c->recv_id == 0 || (c->mode == TAG_RNDV_SPLIT && c->length == 0))
            fuzz_fail("CTS id 0 or empty SPLIT");
        if (key != ((c->mode == TAG_RNDV_PUT || c->mode == TAG_RNDV_SPLIT) && c->length > 0))
            fuzz_fail("CTS key presence");
        break;
    }
    case FY_AM_ID_TAG_DATA:
        if (m->u.data.version != TAG_WIRE_VERSION || m->u.data.recv_id == 0 || payload == 0 ||
            m->u.data.offset > UINT64_MAX - payload)
            fuzz_fail("DATA version, id, payload or offset");
        break;
    case FY_AM_ID_TAG_DONE: {
        const tag_wire_done_t *d = &m->u.done;
        if (d->version != TAG_WIRE_VERSION || d->id == 0 || d->final > 1 ||
            (d->target != TAG_DONE_TO_SEND && d->target != TAG_DONE_TO_RECV))
            fuzz_fail("DONE version, id, final or target");
        if (d->status > 0)
            fuzz_fail("DONE with a positive status");
        if (!d->final &&
            (d->target != TAG_DONE_TO_SEND || d->status != 0 || d->reply_id == 0 || d->done == 0))
            fuzz_fail("section DONE rules");
        if (d->final && d->reply_id != 0)
            fuzz_fail("final DONE with a reply id");
        break;
    }
    case FY_AM_ID_TAG_COOKIE: {
        const tag_wire_cookie_t *c = &m->u.cookie;
        if (c->version != TAG_WIRE_VERSION || c->recv_id == 0 || c->length == 0 ||
            c->offset > UINT64_MAX - c->length || fuzz_zero(c->rkey, sizeof(c->rkey)))
            fuzz_fail("COOKIE version, id, section or key");
        break;
    }
    case FY_AM_ID_TAG_FLOW:
        if (m->u.flow.version != TAG_WIRE_VERSION || m->u.flow.eager > TAG_FLOW_BUFFER)
            fuzz_fail("FLOW version or value");
        break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tag_wire_msg_t msg;
    uint8_t again[sizeof(tag_wire_rts_t)];
    const char *why = NULL;
    uint32_t payload;

    if (size < 5)
        return 0;
    unsigned id = FY_AM_ID_TAG_EAGER + data[0] % 8;
    memcpy(&payload, data + 1, sizeof(payload));
    payload = le32toh(payload);
    const uint8_t *header = data + 5;
    size_t header_length = size - 5;

    /* a private copy: the decoder must not read past header_length */
    uint8_t *copy = malloc(header_length ? header_length : 1);
    if (copy == NULL)
        return 0;
    memcpy(copy, header, header_length);
    ferry_status_t status = tag_wire_decode(id, copy, header_length, payload, &msg, &why);
    /* the receiver's fast case of EAGER takes exactly the plain headers the decoder accepts */
    uint64_t plain_tag = 0;
    bool plain = id == FY_AM_ID_TAG_EAGER && tag_wire_eager_plain(copy, header_length, &plain_tag);
    uint64_t imm_tag = 0, imm_data = 0;
    bool imm =
        id == FY_AM_ID_TAG_EAGER && tag_wire_eager_imm(copy, header_length, &imm_tag, &imm_data);
    if (status != FERRY_OK) {
        if (status != FERRY_ERR_PROTOCOL || why == NULL)
            fuzz_fail("a refusal without FERRY_ERR_PROTOCOL and a reason");
        if (plain || imm)
            fuzz_fail("an EAGER fast case took a header the decoder refuses");
        free(copy);
        return 0;
    }
    if (msg.id != id)
        fuzz_fail("decoded id differs");
    if (id == FY_AM_ID_TAG_EAGER &&
        (plain != (msg.u.eager.flags == 0) || (plain && plain_tag != msg.u.eager.tag)))
        fuzz_fail("the EAGER fast case and the decoder disagree");
    if (id == FY_AM_ID_TAG_EAGER &&
        (imm != (msg.u.eager.flags == TAG_FLAG_IMM) ||
         (imm && (imm_tag != msg.u.eager.tag || imm_data != msg.u.eager.imm))))
        fuzz_fail("the EAGER immediate-data fast case and the decoder disagree");
    fuzz_check(&msg, header_length, payload);
    if (header_length > sizeof(again) || tag_wire_encode(&msg, again) != header_length ||
        memcmp(again, copy, header_length) != 0)
        fuzz_fail("re-encoding differs: a field is ignored by the decoder");
    free(copy);
    return 0;
}
