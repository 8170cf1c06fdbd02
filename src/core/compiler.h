/* Small compiler helpers shared by all layers. */
#ifndef FERRY_CORE_COMPILER_H
#define FERRY_CORE_COMPILER_H

#include <stddef.h>

#define FERRY_EXPORT __attribute__((visibility("default")))
#define fy_likely(x) __builtin_expect(!!(x), 1)
#define fy_unlikely(x) __builtin_expect(!!(x), 0)
/* A fast-path helper with more than one caller that the compiler would otherwise call (its
 * prologue and epilogue cost more than its body on an 8-byte send). */
#define fy_always_inline inline __attribute__((always_inline))
/* A function on the path of every small message (the 8-byte send, its arrival, its completion,
 * the poll that finds it): GCC puts these in .text.hot, which the linker places together ahead
 * of the rest, each starting a cache line. So they share few pages, and where each lies against
 * the cache lines no longer moves when other code grows or shrinks: Open MPI's 8 B latency over
 * the provider moved by 0.03 us (about 10 %) between builds that differed only in cold code of
 * shm.c; with this, 0.26-0.27 us against 0.29-0.31 before (docs/ARCHITECTURE.md, "Code
 * placement"). */
#define fy_hot __attribute__((hot, aligned(64)))
/* The rarely taken side of a fast path (e.g. multi-thread locking): kept out of line. */
#define fy_noinline __attribute__((noinline))
#define FERRY_CACHE_LINE 64
#define fy_container_of(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))
#define FERRY_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#endif
