/* The tagged tests' byte pattern (keyed.h). */
#include "keyed.h"

#include <stdlib.h>
#include <string.h>

uint8_t perf_pattern_byte(size_t i)
{
    return (uint8_t)(i * 7 + (i >> 8) * 13 + 1);
}

static uint8_t keyed_block_key(uint64_t seed, uint64_t block)
{
    return (uint8_t)(seed * 0x9d + block * 31 + (block >> 8) * 7);
}

int perf_keyed_init(perf_keyed_t *k)
{
    k->period = malloc(PERF_KEYED_BLOCK);
    k->expect = malloc(PERF_KEYED_BLOCK);
    if (k->period == NULL || k->expect == NULL) {
        perf_keyed_cleanup(k);
        return -1;
    }
    for (size_t i = 0; i < PERF_KEYED_BLOCK; i++)
        k->period[i] = perf_pattern_byte(i);
    return 0;
}

void perf_keyed_cleanup(perf_keyed_t *k)
{
    free(k->period);
    free(k->expect);
    k->period = NULL;
    k->expect = NULL;
}

void perf_keyed_fill(const perf_keyed_t *k, uint8_t *p, size_t length, uint64_t seed)
{
    for (size_t done = 0, block = 0; done < length; done += PERF_KEYED_BLOCK, block++) {
        size_t n = length - done < PERF_KEYED_BLOCK ? length - done : PERF_KEYED_BLOCK;
        uint8_t key = keyed_block_key(seed, block);
        for (size_t i = 0; i < n; i++)
            p[done + i] = k->period[i] ^ key;
    }
}

uint64_t perf_keyed_check(perf_keyed_t *k, const uint8_t *p, size_t length, uint64_t seed,
                          uint64_t *first_p)
{
    uint64_t bad = 0;
    *first_p = UINT64_MAX;
    for (size_t done = 0, block = 0; done < length; done += PERF_KEYED_BLOCK, block++) {
        size_t n = length - done < PERF_KEYED_BLOCK ? length - done : PERF_KEYED_BLOCK;
        uint8_t key = keyed_block_key(seed, block);
        for (size_t i = 0; i < n; i++)
            k->expect[i] = k->period[i] ^ key;
        if (memcmp(p + done, k->expect, n) == 0)
            continue;
        for (size_t i = 0; i < n; i++) {
            if (p[done + i] != k->expect[i] && bad++ == 0)
                *first_p = done + i;
        }
    }
    return bad;
}
