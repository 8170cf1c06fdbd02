/* ft_pattern_check: ft_pattern_mismatch, failing the test with what differs (ft_pattern.h). */
#define _GNU_SOURCE
#include <stdio.h>

#include "ft_check.h"
#include "ft_pattern.h"

void ft_pattern_check(const void *buf, size_t len, uint64_t seed, uint64_t offset, const char *what)
{
    int64_t bad = ft_pattern_mismatch(buf, len, seed, offset);
    if (bad < 0)
        return;
    const uint8_t *p = buf;
    size_t differ = 0;
    for (size_t i = (size_t)bad; i < len; i++)
        differ += p[i] != ft_pattern_byte(seed, offset + i);
    char got[3 * 8 + 1] = "", want[3 * 8 + 1] = "";
    for (size_t i = (size_t)bad, k = 0; i < len && k < 8; i++, k++) {
        snprintf(got + 3 * k, 4, " %02x", p[i]);
        snprintf(want + 3 * k, 4, " %02x", ft_pattern_byte(seed, offset + i));
    }
    ft_fail_at(__FILE__, __LINE__,
               "%s: %zu bytes: first wrong byte at offset %llu (bytes there:%s; expected:%s); "
               "%zu of the %zu bytes from there on differ",
               what, len, (unsigned long long)(offset + (uint64_t)bad), got, want, differ,
               len - (size_t)bad);
}
