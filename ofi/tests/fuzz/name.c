/* Fuzz the provider's checker of the 64-byte endpoint name a peer hands the application
 * (fy_ofi_name_check, name.c: a compact ferry worker address, whose worker id becomes the AV's
 * key of the sender) on arbitrary input, cut or zero-padded to the size. When a name is
 * accepted, ferry decodes it as a compact address of a worker with that nonzero id. A
 * violation aborts.
 *
 * Seed (ofi/tests/fuzz/corpus/name/): a compact address. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ferry/info.h>

#include "name.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_fail(const char *what)
{
    fprintf(stderr, "fuzz_ofi_name: %s\n", what);
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t buf[FY_OFI_NAME_LEN] = {0};
    memcpy(buf, data, size < sizeof(buf) ? size : sizeof(buf));
    ferry_peer_id_t peer = FERRY_PEER_ANY;
    if (!fy_ofi_name_check(buf, &peer))
        return 0;
    ferry_address_info_t info = {.size = sizeof(info)};
    if (ferry_address_decode(buf, sizeof(buf), &info) != FERRY_OK || !info.compact ||
        info.worker_id == 0)
        fuzz_fail("accepted a name that is not a compact worker address");
    if (peer != info.worker_id)
        fuzz_fail("the peer id is not the address's worker id");
    return 0;
}
