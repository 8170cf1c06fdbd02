/* The one implementation of ferry's remote atomics on a word of memory: the CPU's own atomic
 * instructions, sequentially consistent, so that they are atomic with respect to every other
 * CPU atomic on that word (other ferry atomics, and a local peer's through a mapping). Used by
 * the direct path on mapped memory, by shm, and by the target of the target-executed protocol. */
#ifndef FERRY_MEM_ATOMIC_H
#define FERRY_MEM_ATOMIC_H

#include <stdbool.h>
#include <stdint.h>

#include <ferry/ferry.h>

/* Apply op to the naturally aligned size-byte (4 or 8) word at addr; returns the old value
 * (zero-extended for 4 bytes; value and compare use their low 32 bits then). */
static inline uint64_t mem_atomic_apply(void *addr, unsigned size, ferry_atomic_op_t op,
                                        uint64_t value, uint64_t compare)
{
    if (size == 4) {
        uint32_t *p = addr, v = (uint32_t)value, expected = (uint32_t)compare;
        switch (op) {
        case FERRY_ATOMIC_ADD:
            return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
        case FERRY_ATOMIC_AND:
            return __atomic_fetch_and(p, v, __ATOMIC_SEQ_CST);
        case FERRY_ATOMIC_OR:
            return __atomic_fetch_or(p, v, __ATOMIC_SEQ_CST);
        case FERRY_ATOMIC_XOR:
            return __atomic_fetch_xor(p, v, __ATOMIC_SEQ_CST);
        case FERRY_ATOMIC_SWAP:
            return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST);
        case FERRY_ATOMIC_CSWAP:
            __atomic_compare_exchange_n(p, &expected, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
            return expected;
        }
        return 0;
    }
    uint64_t *p = addr, expected = compare;
    switch (op) {
    case FERRY_ATOMIC_ADD:
        return __atomic_fetch_add(p, value, __ATOMIC_SEQ_CST);
    case FERRY_ATOMIC_AND:
        return __atomic_fetch_and(p, value, __ATOMIC_SEQ_CST);
    case FERRY_ATOMIC_OR:
        return __atomic_fetch_or(p, value, __ATOMIC_SEQ_CST);
    case FERRY_ATOMIC_XOR:
        return __atomic_fetch_xor(p, value, __ATOMIC_SEQ_CST);
    case FERRY_ATOMIC_SWAP:
        return __atomic_exchange_n(p, value, __ATOMIC_SEQ_CST);
    case FERRY_ATOMIC_CSWAP:
        __atomic_compare_exchange_n(p, &expected, value, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
        return expected;
    }
    return 0;
}

#endif
