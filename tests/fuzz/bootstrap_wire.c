/* Fuzz bootstrap_wire_decode() and bootstrap_wire_reason_decode() (src/bootstrap/
 * bootstrap_wire.c), the checks of every message a tcp bootstrap peer sends, on arbitrary
 * bytes.
 *
 * Input: byte 0 picks the largest payload allowed (0, 8, 4096 or 1 MiB), the next 32 bytes
 * are the header, the rest is the payload. When the decoder accepts the header, every promise
 * of bootstrap_wire.h is checked: magic, version 1, a known type, flags 0, size >= 1 and
 * rank < size, no payload on HELLO/WELCOME/BARRIER, a reason of 4..204 bytes on REJECT/ABORT,
 * at most the allowed payload on ALLGATHER/RESULT; re-encoding gives the header back. A reason
 * whose bytes are present is decoded: its status must be an error and its text printable and
 * terminated. A violation aborts.
 *
 * Seeds (tests/fuzz/corpus/bootstrap_wire/): a valid message of each type. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap/bootstrap_wire.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const uint64_t limits[] = {0, 8, 4096, 1u << 20};
    bootstrap_wire_header_t h;
    const char *reason = NULL;
    uint8_t again[BOOTSTRAP_WIRE_HEADER_SIZE];

    if (size < 1 + BOOTSTRAP_WIRE_HEADER_SIZE)
        return 0;
    uint64_t max_length = limits[data[0] % 4];
    const uint8_t *bytes = data + 1;
    const uint8_t *payload = bytes + BOOTSTRAP_WIRE_HEADER_SIZE;
    size_t payload_size = size - 1 - BOOTSTRAP_WIRE_HEADER_SIZE;

    if (bootstrap_wire_decode(bytes, max_length, &h, &reason) != FERRY_OK) {
        if (reason == NULL || reason[0] == '\0')
            fuzz_fail("refused without a reason");
        return 0;
    }
    if (h.magic != BOOTSTRAP_WIRE_MAGIC || h.version != BOOTSTRAP_WIRE_VERSION || h.flags != 0)
        fuzz_fail("accepted a bad magic, version or flags");
    if (h.size == 0 || h.rank >= h.size)
        fuzz_fail("accepted rank >= size");
    switch (h.type) {
    case BOOTSTRAP_WIRE_HELLO:
    case BOOTSTRAP_WIRE_WELCOME:
    case BOOTSTRAP_WIRE_BARRIER:
        if (h.length != 0)
            fuzz_fail("accepted a payload on a message that has none");
        break;
    case BOOTSTRAP_WIRE_REJECT:
    case BOOTSTRAP_WIRE_ABORT:
        if (h.length < 4 || h.length > 4 + BOOTSTRAP_WIRE_REASON_MAX)
            fuzz_fail("accepted a reason of a bad length");
        if (payload_size >= h.length) {
            ferry_status_t status;
            char text[BOOTSTRAP_WIRE_REASON_MAX + 1];
            memset(text, 'x', sizeof(text));
            bootstrap_wire_reason_decode(payload, (size_t)h.length, &status, text);
            if (status >= 0)
                fuzz_fail("a reason decoded to a status that is not an error");
            size_t n = strnlen(text, sizeof(text));
            if (n != h.length - 4)
                fuzz_fail("a reason's text lost or gained bytes");
            for (size_t i = 0; i < n; i++) {
                if (text[i] < 0x20 || text[i] > 0x7e)
                    fuzz_fail("a reason's text is not printable");
            }
        }
        break;
    case BOOTSTRAP_WIRE_ALLGATHER:
    case BOOTSTRAP_WIRE_RESULT:
        if (h.length > max_length)
            fuzz_fail("accepted a payload over the limit");
        break;
    default:
        fuzz_fail("accepted an unknown type");
    }
    if (strcmp(bootstrap_wire_type_name(h.type), "unknown") == 0)
        fuzz_fail("an accepted type has no name");
    bootstrap_wire_encode(&h, again);
    if (memcmp(again, bytes, sizeof(again)) != 0)
        fuzz_fail("re-encoding the header does not give it back");
    return 0;
}
