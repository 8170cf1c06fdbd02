/* Fuzz seg_wire_decode() (src/proto/segment_wire.c), the checker of every segment-protocol header
 * a peer sends (CONNECT, REPLY, DISCONNECT, NOTIFY), on arbitrary bytes.
 *
 * Input: byte 0 picks the active-message id (FY_AM_ID_SEG_CONNECT + byte % 5: the four
 * segment ids and one that is not), byte 1 is the payload length, the rest is the header. When
 * the decoder accepts it, every promise segment.h makes about a decoded header is checked: the
 * exact size for the id, a payload only on NOTIFY and at most FERRY_SEGMENT_NOTIFY_MAX bytes, no
 * request or connection id 0, never the automatic segment id, reply statuses from the four
 * allowed and connection fields exactly on an accepting reply; and re-encoding the decoded
 * header must give the input back (nothing is ignored: reserved bytes are zero). A violation
 * aborts.
 *
 * Seeds (tests/fuzz/corpus/segment_wire/): one valid header of each kind. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "fuzz_common.h"
#include "proto/segment.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const size_t sizes[] = {SEG_WIRE_CONNECT_SIZE, SEG_WIRE_REPLY_SIZE,
                                   SEG_WIRE_DISCONNECT_SIZE, SEG_WIRE_NOTIFY_SIZE};
    uint8_t again[SEG_WIRE_MAX_SIZE];
    const char *reason = NULL;
    seg_wire_msg_t m;

    if (size < 2)
        return 0;
    unsigned id = FY_AM_ID_SEG_CONNECT + data[0] % 5u;
    size_t payload = data[1];
    const uint8_t *header = data + 2;
    size_t header_length = size - 2;
    if (seg_wire_decode(id, header, header_length, payload, &m, &reason) != FERRY_OK) {
        if (reason == NULL)
            fuzz_fail("refused without a reason");
        return 0;
    }
    if (id > FY_AM_ID_SEG_NOTIFY || m.id != id)
        fuzz_fail("accepted an unknown id");
    if (header_length != sizes[id - FY_AM_ID_SEG_CONNECT])
        fuzz_fail("accepted a header of the wrong size");
    if (id == FY_AM_ID_SEG_NOTIFY ? payload > FERRY_SEGMENT_NOTIFY_MAX : payload != 0)
        fuzz_fail("accepted a payload of the wrong size");
    switch (id) {
    case FY_AM_ID_SEG_CONNECT:
        if (m.request_id == 0 || m.segment_id == FERRY_SEGMENT_AUTO_ID)
            fuzz_fail("accepted request id 0 or the automatic segment id");
        break;
    case FY_AM_ID_SEG_REPLY:
        if (m.request_id == 0)
            fuzz_fail("accepted request id 0");
        if (m.status == FERRY_OK) {
            if (m.connection == 0 || m.size == 0)
                fuzz_fail("accepted an accepting reply without connection or size");
        } else if (m.status != FERRY_ERR_NO_ELEM && m.status != FERRY_ERR_NOT_AVAILABLE &&
                   m.status != FERRY_ERR_CONNECTION_REFUSED) {
            fuzz_fail("accepted an unknown reply status");
        } else if (m.connection != 0 || m.size != 0) {
            fuzz_fail("accepted connection fields on a refusal");
        }
        break;
    default:
        if (m.connection == 0)
            fuzz_fail("accepted connection id 0");
        break;
    }
    if (seg_wire_encode(&m, again) != header_length || memcmp(again, header, header_length) != 0)
        fuzz_fail("re-encoding differs: a field is ignored by the decoder");
    return 0;
}
