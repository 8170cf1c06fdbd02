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
/* The rarely taken side of a fast path (e.g. multi-thread locking): kept out of line. */
#define fy_noinline __attribute__((noinline))
#define FERRY_CACHE_LINE 64
#define fy_container_of(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))
#define FERRY_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#endif
