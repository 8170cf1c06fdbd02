/* The byte patterns ferry_perf writes and checks, so that a broken path cannot report a fast
 * time: byte i of the base pattern is position-dependent (bytes 4 KiB apart differ, so a
 * misplaced fragment shows); a run's pattern is the base XORed with its seed (1..255), repeating
 * every PERF_PATTERN_PERIOD bytes; seed 0 is all zeros. */
#include <stdlib.h>
#include <string.h>

#include "perf.h"

int perf_pattern_init(perf_pattern_t *pattern)
{
    pattern->seed = UINT64_MAX;
    pattern->period = malloc(PERF_PATTERN_PERIOD);
    return pattern->period != NULL ? 0 : -1;
}

void perf_pattern_cleanup(perf_pattern_t *pattern)
{
    free(pattern->period);
    pattern->period = NULL;
}

/* One period of the pattern of seed (computed once per seed). */
static const uint8_t *pattern_period(perf_pattern_t *pattern, uint64_t seed)
{
    if (pattern->seed != seed) {
        for (size_t i = 0; i < PERF_PATTERN_PERIOD; i++)
            pattern->period[i] = seed == 0 ? 0 : perf_pattern_byte(i) ^ (uint8_t)seed;
        pattern->seed = seed;
    }
    return pattern->period;
}

void perf_pattern_fill(perf_pattern_t *pattern, uint8_t *p, size_t length, uint64_t seed)
{
    const uint8_t *period = pattern_period(pattern, seed);
    for (size_t done = 0; done < length; done += PERF_PATTERN_PERIOD)
        memcpy(p + done, period,
               length - done < PERF_PATTERN_PERIOD ? length - done : PERF_PATTERN_PERIOD);
}

uint64_t perf_pattern_check(perf_pattern_t *pattern, const uint8_t *p, size_t length, uint64_t seed,
                            uint64_t *first_p)
{
    const uint8_t *period = pattern_period(pattern, seed);
    uint64_t bad = 0, first = UINT64_MAX;
    for (size_t done = 0; done < length; done += PERF_PATTERN_PERIOD) {
        size_t n = length - done < PERF_PATTERN_PERIOD ? length - done : PERF_PATTERN_PERIOD;
        if (memcmp(p + done, period, n) == 0)
            continue;
        for (size_t i = 0; i < n; i++) {
            if (p[done + i] != period[i] && bad++ == 0)
                first = done + i;
        }
    }
    *first_p = first;
    return bad;
}
