/* Little-endian fields of ferry's wire formats and shared-memory layouts: every encoder and
 * parser reads and writes them through these (any alignment: memcpy, one load or store where
 * the CPU allows it; byte order from <endian.h>). */
#ifndef FERRY_CORE_WIRE_H
#define FERRY_CORE_WIRE_H

#include <endian.h>
#include <stdint.h>
#include <string.h>

static inline uint16_t fy_le_get16(const uint8_t *p)
{
    uint16_t v;
    memcpy(&v, p, sizeof(v));
    return le16toh(v);
}

static inline uint32_t fy_le_get32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof(v));
    return le32toh(v);
}

static inline uint64_t fy_le_get64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof(v));
    return le64toh(v);
}

static inline void fy_le_put16(uint8_t *p, uint16_t v)
{
    v = htole16(v);
    memcpy(p, &v, sizeof(v));
}

static inline void fy_le_put32(uint8_t *p, uint32_t v)
{
    v = htole32(v);
    memcpy(p, &v, sizeof(v));
}

static inline void fy_le_put64(uint8_t *p, uint64_t v)
{
    v = htole64(v);
    memcpy(p, &v, sizeof(v));
}

#endif
