/* Fuzz rkey_decode() (src/mem/rkey.c), the unpacker of remote keys, on arbitrary bytes.
 *
 * When it accepts the input, the key must be exactly RKEY_PACKED_SIZE bytes with the right
 * magic, version and size; its generation non-zero, its access and flags within the known
 * bits, no memfd fields unless it names ferry_mem_alloc memory; and re-encoding it must give
 * the input back (nothing in a key is ignored). A violation aborts.
 *
 * Seeds (tests/fuzz/corpus/rkey/): a key of plain memory and one of ferry_mem_alloc memory. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "fuzz_common.h"
#include "mem/mem.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    rkey_packed_t key;
    uint8_t again[RKEY_PACKED_SIZE];

    if (rkey_decode(data, size, &key) != FERRY_OK)
        return 0;
    if (size != RKEY_PACKED_SIZE)
        fuzz_fail("accepted a key of the wrong size");
    if (key.generation == 0)
        fuzz_fail("accepted generation 0");
    if ((key.access & ~(uint32_t)FERRY_ACCESS_ALL) != 0)
        fuzz_fail("accepted unknown access bits");
    if ((key.flags & ~(uint32_t)(FERRY_MEM_SINGLE_USE | MEM_FLAG_ALLOC)) != 0)
        fuzz_fail("accepted unknown flags");
    if (!(key.flags & MEM_FLAG_ALLOC) && (key.alloc_fd != 0 || key.alloc_inode != 0))
        fuzz_fail("accepted memfd fields on plain memory");
    rkey_encode(&key, again);
    if (memcmp(again, data, RKEY_PACKED_SIZE) != 0)
        fuzz_fail("re-encoding differs: a field is ignored by the decoder");
    return 0;
}
