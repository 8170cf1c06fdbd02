/* Byte patterns: splitmix64 of (seed + word index), 8 bytes per word, little-endian.
 * Self-contained (libc only): bench/soak compiles it too. ft_pattern_check, which fails the
 * test, is in ft_pattern_check.c. */
#define _GNU_SOURCE
#include "ft_pattern.h"

#include <string.h>

static inline uint64_t ft_splitmix64(uint64_t x)
{
    uint64_t z = x + 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

uint64_t ft_mix64(uint64_t x)
{
    return ft_splitmix64(x);
}

uint64_t ft_pattern_seed(uint32_t sender, uint64_t seq, uint64_t size)
{
    return ft_splitmix64(ft_splitmix64(((uint64_t)sender << 32) ^ 0x5eed) ^ ft_splitmix64(seq) ^
                         (size * 0x2545f4914f6cdd1dull));
}

static inline uint64_t ft_pattern_word(uint64_t seed, uint64_t index)
{
    return ft_splitmix64(seed + index * 0xd1342543de82ef95ull);
}

uint8_t ft_pattern_byte(uint64_t seed, uint64_t offset)
{
    return (uint8_t)(ft_pattern_word(seed, offset >> 3) >> ((offset & 7) * 8));
}

void ft_pattern_fill(void *buf, size_t len, uint64_t seed, uint64_t offset)
{
    uint8_t *p = buf;
    size_t i = 0;
    /* head: up to the next multiple of 8 in message offsets */
    while (i < len && ((offset + i) & 7) != 0) {
        p[i] = ft_pattern_byte(seed, offset + i);
        i++;
    }
    for (; i + 8 <= len; i += 8) {
        uint64_t w = ft_pattern_word(seed, (offset + i) >> 3);
        memcpy(p + i, &w, 8);
    }
    for (; i < len; i++)
        p[i] = ft_pattern_byte(seed, offset + i);
}

int64_t ft_pattern_mismatch(const void *buf, size_t len, uint64_t seed, uint64_t offset)
{
    const uint8_t *p = buf;
    size_t i = 0;
    while (i < len && ((offset + i) & 7) != 0) {
        if (p[i] != ft_pattern_byte(seed, offset + i))
            return (int64_t)i;
        i++;
    }
    for (; i + 8 <= len; i += 8) {
        uint64_t w = ft_pattern_word(seed, (offset + i) >> 3), got;
        memcpy(&got, p + i, 8);
        if (got != w)
            break; /* the byte loop below finds which */
    }
    for (; i < len; i++) {
        if (p[i] != ft_pattern_byte(seed, offset + i))
            return (int64_t)i;
    }
    return -1;
}
