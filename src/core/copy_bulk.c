/* The routines of fy_copy_bulk (copy_bulk.h) and their choice for this process. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "core/copy_bulk.h"

#include <pthread.h>
#include <stdbool.h>
#include <strings.h>
#include <unistd.h>

#include "core/config.h"
#include "core/log.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

static const fy_config_var_t copy_var = {
    .name = "FERRY_COPY",
    .type = FERRY_CONFIG_STRING,
    .default_value = "auto",
    .description = "copies of the direct one-sided path (a peer's memory mapped here): auto "
                   "(x86-64: a vector loop up to half the L1 data cache, REP MOVSB above it up "
                   "to twice the L2, memcpy elsewhere) or libc (memcpy always)",
    .flags = FY_CONFIG_PROCESS};
static const fy_config_var_t *const copy_reg
    __attribute__((used, section("ferry_config_registry"))) = &copy_var;

/* Before fy_copy_bulk_init(): memcpy for everything above the small sizes. */
fy_copy_tuning_t fy_copy_tuning = {
    .vec = NULL, .vec_max = 0, .rep_max = 0, .vec_name = "none", .reason = "not chosen yet"};

static pthread_once_t copy_once = PTHREAD_ONCE_INIT;

/* Without a cache size from the C library: 32 KiB L1D (most x86-64 cores), 1 MiB L2. */
#define COPY_L1D_DEFAULT (32u << 10)
#define COPY_L2_DEFAULT (1u << 20)

#if defined(__x86_64__)

void fy_copy_rep_movsb(void *dst, const void *src, size_t n)
{
    __asm__ volatile("rep movsb" : "+D"(dst), "+S"(src), "+c"(n) : : "memory");
}

/* One block of 256 bytes: every vector loaded, then every one stored (named vectors, not an
 * array: the compiler keeps them in registers). */
__attribute__((target("avx512f"))) static inline void copy_block_avx512(char *d, const char *s)
{
    __m512i v0 = _mm512_loadu_si512(s), v1 = _mm512_loadu_si512(s + 64),
            v2 = _mm512_loadu_si512(s + 128), v3 = _mm512_loadu_si512(s + 192);
    _mm512_storeu_si512(d, v0);
    _mm512_storeu_si512(d + 64, v1);
    _mm512_storeu_si512(d + 128, v2);
    _mm512_storeu_si512(d + 192, v3);
}

__attribute__((target("avx2"))) static inline void copy_block_avx2(char *d, const char *s)
{
    const __m256i *in = (const __m256i *)(const void *)s;
    __m256i *out = (__m256i *)(void *)d;
    __m256i v0 = _mm256_loadu_si256(in), v1 = _mm256_loadu_si256(in + 1),
            v2 = _mm256_loadu_si256(in + 2), v3 = _mm256_loadu_si256(in + 3),
            v4 = _mm256_loadu_si256(in + 4), v5 = _mm256_loadu_si256(in + 5),
            v6 = _mm256_loadu_si256(in + 6), v7 = _mm256_loadu_si256(in + 7);
    _mm256_storeu_si256(out, v0);
    _mm256_storeu_si256(out + 1, v1);
    _mm256_storeu_si256(out + 2, v2);
    _mm256_storeu_si256(out + 3, v3);
    _mm256_storeu_si256(out + 4, v4);
    _mm256_storeu_si256(out + 5, v5);
    _mm256_storeu_si256(out + 6, v6);
    _mm256_storeu_si256(out + 7, v7);
}

/* Blocks of 256 bytes in order; the last one overlaps the one before it (n >= 256). */
__attribute__((target("avx512f"))) static void copy_avx512(void *dst, const void *src, size_t n)
{
    size_t i = 0;
    for (; i + 256 < n; i += 256)
        copy_block_avx512((char *)dst + i, (const char *)src + i);
    copy_block_avx512((char *)dst + n - 256, (const char *)src + n - 256);
}

__attribute__((target("avx2"))) static void copy_avx2(void *dst, const void *src, size_t n)
{
    size_t i = 0;
    for (; i + 256 < n; i += 256)
        copy_block_avx2((char *)dst + i, (const char *)src + i);
    copy_block_avx2((char *)dst + n - 256, (const char *)src + n - 256);
}

/* ERMS (enhanced REP MOVSB): CPUID leaf 7, EBX bit 9. */
static bool copy_cpu_erms(void)
{
    unsigned a, b, c, d;
    return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & (1u << 9)) != 0;
}

/* The routines this CPU runs well (the compiler's runtime check covers the OS's state too). */
static void copy_choose_cpu(fy_copy_tuning_t *t, size_t l1d, size_t l2)
{
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) {
        t->vec = copy_avx512;
        t->vec_name = "avx512";
    } else if (__builtin_cpu_supports("avx2")) {
        t->vec = copy_avx2;
        t->vec_name = "avx2";
    }
    t->vec_max = t->vec != NULL ? l1d / 2 : 0;
    t->rep_max = copy_cpu_erms() ? 2 * l2 : 0;
    if (t->rep_max <= t->vec_max)
        t->rep_max = 0;
    t->reason = "chosen for this CPU";
}

#else

void fy_copy_rep_movsb(void *dst, const void *src, size_t n)
{
    memcpy(dst, src, n); /* never chosen: rep_max stays 0 */
}

static void copy_choose_cpu(fy_copy_tuning_t *t, size_t l1d, size_t l2)
{
    (void)l1d, (void)l2;
    t->reason = "memcpy: no routine of ferry's own for this architecture";
}

#endif

/* A cache's size from the C library, or dflt when it does not know. */
static size_t copy_cache_size(int name, size_t dflt)
{
    long size = sysconf(name);
    return size > 0 ? (size_t)size : dflt;
}

static void copy_init_once(void)
{
    fy_copy_tuning_t t = {
        .vec = NULL, .vec_max = 0, .rep_max = 0, .vec_name = "none", .reason = NULL};
    const char *mode = ferry_config_string(&copy_var);

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    const bool sanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) ||                         \
    __has_feature(memory_sanitizer)
    const bool sanitized = true;
#else
    const bool sanitized = false;
#endif
#else
    const bool sanitized = false;
#endif

    if (sanitized) {
        t.reason = "memcpy: a sanitizer build (its memcpy checks the ranges)";
    } else if (strcasecmp(mode, "libc") == 0) {
        t.reason = "memcpy: FERRY_COPY=libc";
    } else {
        if (strcasecmp(mode, "auto") != 0)
            fy_warn("invalid FERRY_COPY=\"%s\": expected auto or libc; using auto", mode);
        copy_choose_cpu(&t, copy_cache_size(_SC_LEVEL1_DCACHE_SIZE, COPY_L1D_DEFAULT),
                        copy_cache_size(_SC_LEVEL2_CACHE_SIZE, COPY_L2_DEFAULT));
    }
    fy_copy_tuning = t;
    fy_debug("copies on mapped memory: vector loop %s up to %zu bytes, REP MOVSB up to %zu "
             "bytes, memcpy elsewhere (%s)",
             t.vec_name, t.vec_max, t.rep_max, t.reason);
}

void fy_copy_bulk_init(void)
{
    pthread_once(&copy_once, copy_init_once);
}
