/* Byte patterns: every message's bytes are a function of (sender, sequence number, size)
 * and of the offset in the message, so a receiver checks every byte without being told
 * what was sent, and a byte from another message, another offset or a stale buffer is
 * caught. Fill and check work on pieces too (offset = where the piece starts in the
 * message), for iov payloads. */
#ifndef FT_PATTERN_H
#define FT_PATTERN_H

#include <stddef.h>
#include <stdint.h>

uint64_t ft_pattern_seed(uint32_t sender, uint64_t seq, uint64_t size);

/* splitmix64 of x: a well-mixed 64-bit value, for tests that derive sizes or operands from a
 * counter (both sides compute the same). */
uint64_t ft_mix64(uint64_t x);

/* The byte of the pattern at offset. */
uint8_t ft_pattern_byte(uint64_t seed, uint64_t offset);

/* Fill buf[0..len) with the pattern bytes offset..offset+len. */
void ft_pattern_fill(void *buf, size_t len, uint64_t seed, uint64_t offset);

/* -1 when buf[0..len) holds pattern bytes offset..offset+len, else the first mismatching
 * index into buf. */
int64_t ft_pattern_mismatch(const void *buf, size_t len, uint64_t seed, uint64_t offset);

/* Fail unless buf holds the pattern: reports what (a description of the message), the
 * first mismatching offset, the bytes found and expected there, and how many bytes differ. */
void ft_pattern_check(const void *buf, size_t len, uint64_t seed, uint64_t offset,
                      const char *what);

#endif
