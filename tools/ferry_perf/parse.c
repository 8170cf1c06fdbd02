/* Option values (parse.h). */
#include "parse.h"

#include <errno.h>
#include <stdlib.h>

int perf_parse_u64(const char *text, bool suffix, uint64_t max, uint64_t *value_p)
{
    char *end;
    if (text == NULL || *text < '0' || *text > '9')
        return -1;
    errno = 0;
    unsigned long long value = strtoull(text, &end, 10);
    if (errno != 0 || end == text)
        return -1;
    if (suffix && *end != '\0' && end[1] == '\0') {
        unsigned shift = 0;
        switch (*end) {
        case 'k':
        case 'K':
            shift = 10;
            break;
        case 'm':
        case 'M':
            shift = 20;
            break;
        case 'g':
        case 'G':
            shift = 30;
            break;
        default:
            return -1;
        }
        if (value > (UINT64_MAX >> shift))
            return -1;
        value <<= shift;
        end++;
    }
    if (*end != '\0' || value > max)
        return -1;
    *value_p = value;
    return 0;
}
