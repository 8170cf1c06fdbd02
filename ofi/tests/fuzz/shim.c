/* Fuzz the provider's checkers of peer bytes on arbitrary input: the 64-byte endpoint name a
 * peer hands the application (fy_ofi_name_check, name.c: a compact ferry worker address) and
 * the 16-byte header in front of every message (fy_ofi_hdr_decode, temporary shims G3/G4).
 *
 * Input: byte 0 chooses (even: name, odd: header); the rest, cut or zero-padded to the size,
 * is the name or the header. When a name is accepted, ferry decodes it as a compact address of
 * a worker with a nonzero id and its source id is in range; when a header is accepted, its flags
 * are known ones, data is 0 without FY_OFI_HDR_DATA, and encoding it gives the input back. A
 * violation aborts.
 *
 * Seeds (ofi/tests/fuzz/corpus/shim/): a compact address (shm and tcp 127.0.0.1), two
 * headers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ferry/info.h>

#include "shim.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_fail(const char *what)
{
    fprintf(stderr, "fuzz_ofi_shim: %s\n", what);
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t buf[FY_OFI_NAME_LEN] = {0};
    size_t n = size - 1 < sizeof(buf) ? size - 1 : sizeof(buf);
    memcpy(buf, data + 1, n);
    if ((data[0] & 1u) == 0) {
        if (!fy_ofi_name_check(buf))
            return 0;
        ferry_address_info_t info = {.size = sizeof(info)};
        if (ferry_address_decode(buf, sizeof(buf), &info) != FERRY_OK || !info.compact ||
            info.worker_id == 0)
            fuzz_fail("accepted a name that is not a compact worker address");
        if ((fy_ofi_name_src_id(buf) >> FY_OFI_TAG_SRC_BITS) != 0)
            fuzz_fail("a source id wider than FY_OFI_TAG_SRC_BITS");
        return 0;
    }
    fy_ofi_hdr_t hdr;
    if (!fy_ofi_hdr_decode(buf, &hdr))
        return 0;
    if (hdr.flags & ~(FY_OFI_HDR_DATA | FY_OFI_HDR_ACK_REQ))
        fuzz_fail("accepted unknown flags");
    if (!(hdr.flags & FY_OFI_HDR_DATA) && hdr.data != 0)
        fuzz_fail("accepted data without its flag");
    uint8_t out[FY_OFI_HDR_LEN];
    fy_ofi_hdr_encode(&hdr, out);
    if (memcmp(out, buf, FY_OFI_HDR_LEN) != 0)
        fuzz_fail("re-encoding does not give the header back");
    return 0;
}
