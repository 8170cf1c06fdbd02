/* What every fuzz target under tests/fuzz shares (tests/fuzz/common/fuzz_common.c, linked into
 * each target by cmake/FerryFuzz.cmake):
 *  - a default LLVMFuzzerInitialize that turns ferry's logs down to errors, since every input a
 *    parser refuses logs a warning and would flood the fuzzer's output (a target that needs
 *    more set-up defines its own, which takes the place of this weak one);
 *  - fuzz_fail(), which names the target and the broken rule and aborts, so that libFuzzer
 *    reports the input;
 *  - unaligned little-endian-as-stored reads of the input's fields. */
#ifndef FERRY_FUZZ_COMMON_H
#define FERRY_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Turn ferry's logs down to errors (what the default LLVMFuzzerInitialize does). */
void fuzz_quiet_logs(void);

/* Print "fuzz_<target>: <what>" and abort. */
_Noreturn void fuzz_fail(const char *what);

static inline uint16_t fuzz_get16(const uint8_t *p)
{
    uint16_t v;
    memcpy(&v, p, sizeof(v));
    return v;
}

static inline uint32_t fuzz_get32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof(v));
    return v;
}

static inline uint64_t fuzz_get64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof(v));
    return v;
}

#endif
