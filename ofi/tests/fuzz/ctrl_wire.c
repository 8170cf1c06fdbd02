/* Fuzz fy_ofi_ctrl_decode() (ofi/ctrl_wire.c), the checker of every control message a peer's
 * provider sends (key requests and replies, remote-write notifications), on arbitrary bytes.
 *
 * Input: byte 0 picks the active-message id (ID_FIRST + byte % 5: the three ids and two that
 * are not), bytes 1..2 the payload length (u16, little-endian), the rest is the header.
 * When the decoder accepts it: the id is one of the three, only a KEY_REP with FERRY_OK has a
 * payload (1..FY_OFI_KEY_PACKED_MAX bytes), a KEY_REP's status is FERRY_OK or negative, a
 * WDATA without data carries data 0; and encoding the decoded message gives the input header
 * back (nothing is ignored: reserved bytes are zero). A violation aborts.
 *
 * Seeds (ofi/tests/fuzz/corpus/ctrl_wire/): one valid message of each kind. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctrl_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* the first id byte 0 picks: the one before FY_OFI_AM_KEY_REQ (unknown: it was the delivery
 * ack), so that the seeds' byte 0 keeps its meaning */
#define ID_FIRST (FY_OFI_AM_KEY_REQ - 1u)

static void fuzz_fail(const char *what)
{
    fprintf(stderr, "fuzz_ofi_ctrl_wire: %s\n", what);
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3)
        return 0;
    unsigned id = ID_FIRST + data[0] % 5u;
    size_t payload = (size_t)data[1] | ((size_t)data[2] << 8);
    const uint8_t *header = data + 3;
    size_t header_length = size - 3;
    fy_ofi_ctrl_msg_t msg;
    if (!fy_ofi_ctrl_decode(id, header, header_length, payload, &msg))
        return 0;
    if (id < FY_OFI_AM_KEY_REQ || id > FY_OFI_AM_WDATA || msg.id != id)
        fuzz_fail("accepted an unknown id");
    if (payload > 0 && !(id == FY_OFI_AM_KEY_REP && msg.status == FERRY_OK))
        fuzz_fail("accepted a payload where none belongs");
    if (id == FY_OFI_AM_KEY_REP) {
        if (msg.status > 0)
            fuzz_fail("accepted a positive status");
        if (msg.status == FERRY_OK && (payload == 0 || payload > FY_OFI_KEY_PACKED_MAX))
            fuzz_fail("accepted FERRY_OK without a key, or a key too long");
    }
    if (id == FY_OFI_AM_WDATA && !msg.has_data && msg.data != 0)
        fuzz_fail("accepted data without its flag");
    uint8_t out[FY_OFI_CTRL_HEADER_MAX];
    size_t len = fy_ofi_ctrl_encode(&msg, out);
    if (len != header_length || memcmp(out, header, len) != 0)
        fuzz_fail("re-encoding does not give the input back");
    return 0;
}
