/* Fuzz the checkers of the provider's temporary shims (ofi/shim.c) on arbitrary bytes: the
 * 256-byte endpoint name a peer hands the application (fy_ofi_name_unwrap, shim G1) and the
 * 16-byte header in front of every message (fy_ofi_hdr_decode, shims G3/G4).
 *
 * Input: byte 0 chooses (even: name, odd: header); the rest, cut or zero-padded to the size,
 * is the name or the header. When a name is accepted, the address it points at lies inside it
 * and wrapping that address gives the name back; when a header is accepted, its flags are
 * known ones, data is 0 without FY_OFI_HDR_DATA, and encoding it gives the input back. A
 * violation aborts.
 *
 * Seeds (ofi/tests/fuzz/corpus/shim/): a name around a made-up address, two headers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
        const void *address;
        size_t length;
        if (!fy_ofi_name_unwrap(buf, &address, &length))
            return 0;
        const uint8_t *a = address;
        if (a < buf || length == 0 || a + length > buf + sizeof(buf))
            fuzz_fail("accepted an address outside the name");
        uint8_t again[FY_OFI_NAME_LEN];
        if (!fy_ofi_name_wrap(address, length, again) || memcmp(again, buf, sizeof(buf)) != 0)
            fuzz_fail("wrapping the address does not give the name back");
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
