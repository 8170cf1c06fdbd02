/* physical_limits: what this host can do at best, for bench/compare_seg.sh to set ferry's
 * segment figures beside. Plain C, no ferry; built by compare_seg.sh with `cc -O2`.
 *
 *   physical_limits [-2] [-r REPEAT] [-n ROUNDTRIPS] [-a CORE] [-b CORE] [SIZE...]
 *
 * 1. A cache-line ping-pong between two processes through a MAP_SHARED anonymous mapping: one
 *    8-byte word in its own cache line; the measuring process (core b, default 1) stores an odd
 *    value, the other (forked, core a, default 0) waits for it and stores the next even value,
 *    and so on, with __atomic release stores and acquire loads and nothing else. One repeat
 *    times ROUNDTRIPS round trips (default 200000) with one clock reading at each end; its
 *    one-way time is elapsed / (2 ROUNDTRIPS). Reported: the median, min and max over REPEAT
 *    repeats (default 7), after one unmeasured repeat.
 * 2. Single-thread memcpy bandwidth (core b) at each SIZE (bytes, suffix K/M/G; default 1M,
 *    16M, 256M): source and destination 2 MiB-aligned with madvise(MADV_HUGEPAGE) and written
 *    once beforehand; one repeat copies SIZE bytes as often as fits in 512 MiB (at least once)
 *    and counts SIZE bytes per copy (GB = 10^9 B); median, min, max over REPEAT repeats after
 *    one unmeasured copy. memcpy_to_memfd / memcpy_from_memfd are the same into / out of a
 *    MAP_SHARED memfd on the host's shmem page size (what ferry_mem_alloc memory is, and so a
 *    segment's), from / into the huge-page buffer.
 * 3. Two-process copy bandwidth at each SIZE (copy2): the ideal of a transfer in which both
 *    processes copy different halves at once (ferry's SPLIT rendezvous), and so the shape its
 *    bandwidth can have against the size: source and destination are MAP_SHARED anonymous
 *    mappings of SIZE bytes; a forked process on core a copies the first half, the measuring one
 *    on core b the second, each as often as fits in 512 MiB for the pair; one repeat is the time
 *    from the measurer's start signal until both halves are done (GB = 10^9 B over SIZE bytes
 *    per copy); median, min, max over REPEAT repeats after one unmeasured repeat. Where the
 *    source and destination outgrow the last-level cache (SIZE about half of it) this falls as
 *    every copy does: a drop there in a transfer's bandwidth is the machine's, not the protocol's.
 *    Run with -2, which runs the ping-pong, this and 4 instead of 2 (bench/compare_tag.sh: the
 *    placement of each round and the shape of the physical copy).
 * 4. Two-process cross-memory-attach copy at each SIZE (cma2, with -2): the copies SPLIT itself
 *    makes, in the kernel, without the protocol: each process has its own private buffer
 *    (2 MiB-aligned, MADV_HUGEPAGE, like ferry_perf's); the forked one (core a, the sender)
 *    writes the tail [split, SIZE) of its source into the measurer's destination with
 *    process_vm_writev, the measurer (core b, the receiver) reads the head [0, split) with
 *    process_vm_readv, split = SIZE / 2 rounded down to 4 KiB, calls of at most 4 MiB
 *    (FERRY_SHM_CMA_CHUNK's default); repeats as in 3. The kernel copies page by page
 *    (copy_to_iter of pinned 4 KiB pages), so it falls further than copy2's memcpy where the
 *    buffers outgrow the cache: the fall a SPLIT transfer inherits from its copies. Skipped, with a
 *    note on stderr and no line, where process_vm_readv/writev are not allowed.
 *
 * Output (stdout, CSV): test,size,median,min,max
 *   cacheline_pingpong_oneway_ns,64,...   memcpy_GBps,SIZE,...   memcpy_to_memfd_GBps,SIZE,...
 *   memcpy_from_memfd_GBps,SIZE,...   copy2_GBps,SIZE,...   cma2_GBps,SIZE,...
 * Exit status: 0, 1 when something failed (said on stderr), 2 bad options. */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PL_MAX_SIZES 16
#define PL_MAX_REPEAT 101
#define PL_HUGE (2ul << 20)
#define PL_BYTES_PER_REPEAT (512ul << 20)
#define PL_STOP UINT64_MAX /* odd: the responder never answers it */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int pin(int core)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(core, &set);
    if (sched_setaffinity(0, sizeof(set), &set) != 0) {
        fprintf(stderr, "physical_limits: sched_setaffinity(core %d): %s\n", core, strerror(errno));
        return -1;
    }
    return 0;
}

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void print_stats(const char *test, unsigned long long size, double *v, unsigned n)
{
    qsort(v, n, sizeof(*v), compare_double);
    double median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    printf("%s,%llu,%.4f,%.4f,%.4f\n", test, size, median, v[0], v[n - 1]);
    fflush(stdout);
}

/* ---------------------------------------------------------------- ping-pong */

/* Answers 1 with 2, 3 with 4, ... (the flag starts at 0) until PL_STOP. */
static void responder(uint64_t *flag)
{
    for (uint64_t expect = 1;; expect += 2) {
        uint64_t v;
        while ((v = __atomic_load_n(flag, __ATOMIC_ACQUIRE)) != expect) {
            if (v == PL_STOP)
                _exit(0);
        }
        __atomic_store_n(flag, expect + 1, __ATOMIC_RELEASE);
    }
}

/* Forks a child that dies with its parent and runs pinned to core: returns its pid in the
 * parent, 0 in the child, -1 (told, map of map_size bytes unmapped) when fork failed. */
static pid_t fork_pinned(int core, void *map, size_t map_size)
{
    pid_t parent = getpid();
    pid_t child = fork();
    if (child < 0) {
        fprintf(stderr, "physical_limits: fork: %s\n", strerror(errno));
        munmap(map, map_size);
        return -1;
    }
    if (child == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent || pin(core) != 0)
            _exit(1);
    }
    return child;
}

static int pingpong(int core_a, int core_b, unsigned repeat, uint64_t roundtrips)
{
    double v[PL_MAX_REPEAT];
    uint64_t *flag = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (flag == MAP_FAILED) {
        fprintf(stderr, "physical_limits: mmap(4096, MAP_SHARED|MAP_ANONYMOUS): %s\n",
                strerror(errno));
        return -1;
    }
    *flag = 0;
    pid_t child = fork_pinned(core_a, flag, 4096);
    if (child < 0)
        return -1;
    if (child == 0) {
        __atomic_store_n(&flag[8], 1, __ATOMIC_RELEASE); /* ready: its own cache line */
        responder(flag);
    }
    int result = -1;
    if (pin(core_b) != 0)
        goto out;
    /* The responder may share this core until it has pinned itself (and, under chrt, have the
     * same real-time priority): let it run before spinning here. */
    while (__atomic_load_n(&flag[8], __ATOMIC_ACQUIRE) == 0) {
        if (waitpid(child, NULL, WNOHANG) == child) {
            fprintf(stderr, "physical_limits: the ping-pong responder could not start\n");
            munmap(flag, 4096);
            return -1;
        }
        sched_yield();
    }
    uint64_t value = 0;
    for (unsigned r = 0; r <= repeat; r++) {
        uint64_t n = r == 0 ? roundtrips / 10 + 1 : roundtrips; /* repeat 0: warm-up */
        uint64_t start = now_ns();
        for (uint64_t i = 0; i < n; i++) {
            __atomic_store_n(flag, value + 1, __ATOMIC_RELEASE);
            value += 2;
            while (__atomic_load_n(flag, __ATOMIC_ACQUIRE) != value) {
            }
        }
        uint64_t elapsed = now_ns() - start;
        if (r > 0)
            v[r - 1] = (double)elapsed / (2.0 * (double)n);
    }
    print_stats("cacheline_pingpong_oneway_ns", 64, v, repeat);
    result = 0;
out:
    __atomic_store_n(flag, PL_STOP, __ATOMIC_RELEASE);
    int status;
    if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "physical_limits: the ping-pong responder failed\n");
        result = -1;
    }
    munmap(flag, 4096);
    return result;
}

/* ---------------------------------------------------------------- memcpy */

static void *huge_alloc(size_t size)
{
    size_t rounded = (size + PL_HUGE - 1) / PL_HUGE * PL_HUGE;
    void *p = aligned_alloc(PL_HUGE, rounded);
    if (p == NULL)
        return NULL;
    madvise(p, rounded, MADV_HUGEPAGE); /* a hint: may fail */
    memset(p, 1, size);
    return p;
}

static int copy_bw(const char *test, uint8_t *dst, const uint8_t *src, size_t size, unsigned repeat)
{
    double v[PL_MAX_REPEAT];
    uint64_t copies = PL_BYTES_PER_REPEAT / size ? PL_BYTES_PER_REPEAT / size : 1;
    memcpy(dst, src, size); /* warm-up */
    for (unsigned r = 0; r < repeat; r++) {
        uint64_t start = now_ns();
        for (uint64_t i = 0; i < copies; i++) {
            memcpy(dst, src, size);
            __asm__ volatile("" : : "r"(dst) : "memory"); /* every copy happens */
        }
        uint64_t elapsed = now_ns() - start;
        v[r] = (double)size * (double)copies / (double)(elapsed ? elapsed : 1);
    }
    if (dst[size - 1] != src[size - 1]) {
        fprintf(stderr, "physical_limits: memcpy of %zu bytes did not copy\n", size);
        return -1;
    }
    print_stats(test, size, v, repeat);
    return 0;
}

static int memcpy_bw(int core, const size_t *sizes, unsigned count, unsigned repeat)
{
    size_t max = 0;
    int result = -1;
    for (unsigned i = 0; i < count; i++)
        max = sizes[i] > max ? sizes[i] : max;
    if (pin(core) != 0)
        return -1;
    uint8_t *src = huge_alloc(max), *dst = huge_alloc(max);
    int fd = memfd_create("physical_limits", MFD_CLOEXEC);
    uint8_t *shm = MAP_FAILED;
    if (src == NULL || dst == NULL) {
        fprintf(stderr, "physical_limits: out of memory for two %zu-byte buffers\n", max);
        goto out;
    }
    if (fd < 0 || ftruncate(fd, (off_t)max) != 0 ||
        (shm = mmap(NULL, max, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
        fprintf(stderr, "physical_limits: a %zu-byte memfd mapping: %s\n", max, strerror(errno));
        goto out;
    }
    memset(shm, 0, max);
    for (unsigned i = 0; i < count; i++) {
        if (copy_bw("memcpy_GBps", dst, src, sizes[i], repeat) != 0 ||
            copy_bw("memcpy_to_memfd_GBps", shm, src, sizes[i], repeat) != 0 ||
            copy_bw("memcpy_from_memfd_GBps", dst, shm, sizes[i], repeat) != 0)
            goto out;
    }
    result = 0;
out:
    if (shm != MAP_FAILED)
        munmap(shm, max);
    if (fd >= 0)
        close(fd);
    free(src);
    free(dst);
    return result;
}

/* ---------------------------------------------------------------- two-process copy */

/* The control word of the two-process copy: the helper stores 1 in ready once it runs on its
 * core; the measurer stores repeat r + 1 in go to start the helper's half of repeat r (PL_STOP
 * to end), and the helper stores r + 1 in done when its half is copied. */
struct copy2_control {
    uint64_t ready;
    uint64_t go;
    uint8_t pad[56]; /* go and done in different cache lines */
    uint64_t done;
};

/* One side's half: `copies` copies of [offset, offset + half) from src to dst. */
static void copy2_half(uint8_t *dst, const uint8_t *src, size_t offset, size_t half,
                       uint64_t copies)
{
    for (uint64_t i = 0; i < copies; i++) {
        memcpy(dst + offset, src + offset, half);
        __asm__ volatile("" : : "r"(dst) : "memory"); /* every copy happens */
    }
}

static int copy2_bw(int core_a, int core_b, size_t size, unsigned repeat)
{
    double v[PL_MAX_REPEAT];
    size_t half = size / 2;
    uint64_t copies = PL_BYTES_PER_REPEAT / size ? PL_BYTES_PER_REPEAT / size : 1;
    size_t map_size = size + 4096;
    uint8_t *map =
        mmap(NULL, 2 * map_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED) {
        fprintf(stderr, "physical_limits: mmap(%zu, MAP_SHARED|MAP_ANONYMOUS): %s\n", 2 * map_size,
                strerror(errno));
        return -1;
    }
    struct copy2_control *control = (struct copy2_control *)map;
    uint8_t *src = map + 4096, *dst = map + 4096 + map_size;
    memset(src, 1, size);
    memset(dst, 0, size);
    control->ready = 0;
    control->go = 0;
    control->done = 0;
    pid_t child = fork_pinned(core_a, map, 2 * map_size);
    if (child < 0)
        return -1;
    if (child == 0) {
        __atomic_store_n(&control->ready, 1, __ATOMIC_RELEASE);
        for (uint64_t expect = 1;; expect++) {
            uint64_t go;
            while ((go = __atomic_load_n(&control->go, __ATOMIC_ACQUIRE)) != expect) {
                if (go == PL_STOP)
                    _exit(0);
            }
            copy2_half(dst, src, 0, half, copies);
            __atomic_store_n(&control->done, expect, __ATOMIC_RELEASE);
        }
    }
    int result = -1;
    if (pin(core_b) != 0)
        goto out;
    /* The helper inherits this process's core (and, under chrt, its real-time priority): let it
     * run until it has moved to its own core before spinning here. */
    while (__atomic_load_n(&control->ready, __ATOMIC_ACQUIRE) == 0) {
        if (waitpid(child, NULL, WNOHANG) == child) {
            fprintf(stderr, "physical_limits: the two-process copy's helper could not start\n");
            munmap(map, 2 * map_size);
            return -1;
        }
        sched_yield();
    }
    for (unsigned r = 0; r <= repeat; r++) { /* repeat 0: warm-up */
        uint64_t start = now_ns();
        __atomic_store_n(&control->go, r + 1, __ATOMIC_RELEASE);
        copy2_half(dst, src, half, size - half, copies);
        while (__atomic_load_n(&control->done, __ATOMIC_ACQUIRE) != r + 1) {
        }
        uint64_t elapsed = now_ns() - start;
        if (r > 0)
            v[r - 1] = (double)size * (double)copies / (double)(elapsed ? elapsed : 1);
    }
    if (dst[0] != 1 || dst[size - 1] != 1) {
        fprintf(stderr, "physical_limits: the two-process copy of %zu bytes did not copy\n", size);
        goto out;
    }
    print_stats("copy2_GBps", size, v, repeat);
    result = 0;
out:
    __atomic_store_n(&control->go, PL_STOP, __ATOMIC_RELEASE);
    int status;
    if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "physical_limits: the two-process copy's helper failed\n");
        result = -1;
    }
    munmap(map, 2 * map_size);
    return result;
}

/* ---------------------------------------------------------------- two-process CMA copy */

#define PL_CMA_CHUNK (4ul << 20) /* bytes per system call: FERRY_SHM_CMA_CHUNK's default */

/* One side's part of a cma2 copy: `copies` times, [offset, offset + length) of remote into
 * local (read) or of local into remote (write), in calls of at most PL_CMA_CHUNK bytes.
 * Returns 0, or the errno of a failed call. */
static int cma2_part(pid_t peer, int write, uint8_t *local, uint8_t *remote, size_t offset,
                     size_t length, uint64_t copies)
{
    for (uint64_t i = 0; i < copies; i++) {
        for (size_t done = 0; done < length;) {
            size_t n = length - done < PL_CMA_CHUNK ? length - done : PL_CMA_CHUNK;
            struct iovec l = {local + offset + done, n}, r = {remote + offset + done, n};
            ssize_t got = write ? process_vm_writev(peer, &l, 1, &r, 1, 0)
                                : process_vm_readv(peer, &l, 1, &r, 1, 0);
            if (got <= 0)
                return got < 0 ? errno : EIO;
            done += (size_t)got;
        }
    }
    return 0;
}

/* The control word of cma2: as copy2's, plus each side's buffer address and its error. */
struct cma2_control {
    struct copy2_control c;
    uint8_t pad[56];
    uint64_t src; /* the sender's (helper's) source buffer */
    uint64_t dst; /* the receiver's (measurer's) destination buffer */
    int64_t error;
};

/* cma2: copy2's shape made of the copies ferry's SPLIT rendezvous does, each process with its
 * own private buffer (2 MiB-aligned, MADV_HUGEPAGE, as ferry_perf's): the helper on core a (the
 * sender) owns the source and writes its tail [split, size) into the measurer's destination
 * with process_vm_writev, the measurer on core b (the receiver) reads the head [0, split) with
 * process_vm_readv; split = size / 2 rounded down to 4 KiB, calls of PL_CMA_CHUNK bytes. A
 * kernel copy per 4 KiB page of pinned memory, not memcpy: it falls further than copy2 where the
 * buffers outgrow the cache. Returns 1 (said on stderr, no line) when cross-memory attach is not
 * allowed here. */
static int cma2_bw(int core_a, int core_b, size_t size, unsigned repeat)
{
    double v[PL_MAX_REPEAT];
    size_t split = size / 2 & ~(size_t)4095;
    uint64_t copies = PL_BYTES_PER_REPEAT / size ? PL_BYTES_PER_REPEAT / size : 1;
    struct cma2_control *control =
        mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (control == MAP_FAILED) {
        fprintf(stderr, "physical_limits: mmap(4096, MAP_SHARED|MAP_ANONYMOUS): %s\n",
                strerror(errno));
        return -1;
    }
    memset(control, 0, sizeof(*control));
    pid_t parent = getpid();
    pid_t child = fork_pinned(core_a, control, 4096);
    if (child < 0)
        return -1;
    if (child == 0) {
        uint8_t *src = huge_alloc(size); /* bytes of 1 */
        if (src == NULL)
            _exit(1);
        __atomic_store_n(&control->src, (uint64_t)(uintptr_t)src, __ATOMIC_RELEASE);
        uint64_t dst;
        while ((dst = __atomic_load_n(&control->dst, __ATOMIC_ACQUIRE)) == 0) {
        }
        __atomic_store_n(&control->c.ready, 1, __ATOMIC_RELEASE);
        for (uint64_t expect = 1;; expect++) {
            uint64_t go;
            while ((go = __atomic_load_n(&control->c.go, __ATOMIC_ACQUIRE)) != expect) {
                if (go == PL_STOP)
                    _exit(0);
            }
            int err =
                cma2_part(parent, 1, src, (uint8_t *)(uintptr_t)dst, split, size - split, copies);
            if (err != 0)
                __atomic_store_n(&control->error, err, __ATOMIC_RELEASE);
            __atomic_store_n(&control->c.done, expect, __ATOMIC_RELEASE);
        }
    }
    int result = -1, err = 0;
    uint8_t *dst = NULL, *src;
    if (pin(core_b) != 0 || (dst = huge_alloc(size)) == NULL)
        goto out;
    memset(dst, 0, size);
    /* under Yama's ptrace_scope 1 a child may not write its parent's memory unless let */
    prctl(PR_SET_PTRACER, (unsigned long)child, 0, 0, 0); /* EINVAL without Yama: harmless */
    __atomic_store_n(&control->dst, (uint64_t)(uintptr_t)dst, __ATOMIC_RELEASE);
    while (__atomic_load_n(&control->c.ready, __ATOMIC_ACQUIRE) == 0) {
        if (waitpid(child, NULL, WNOHANG) == child) {
            fprintf(stderr, "physical_limits: the CMA copy's helper could not start\n");
            child = -1;
            goto out;
        }
        sched_yield();
    }
    src = (uint8_t *)(uintptr_t)__atomic_load_n(&control->src, __ATOMIC_ACQUIRE);
    for (unsigned r = 0; r <= repeat && err == 0; r++) { /* repeat 0: warm-up */
        uint64_t start = now_ns();
        __atomic_store_n(&control->c.go, r + 1, __ATOMIC_RELEASE);
        err = cma2_part(child, 0, dst, src, 0, split, copies);
        while (__atomic_load_n(&control->c.done, __ATOMIC_ACQUIRE) != r + 1) {
        }
        if (err == 0)
            err = (int)__atomic_load_n(&control->error, __ATOMIC_ACQUIRE);
        uint64_t elapsed = now_ns() - start;
        if (r > 0)
            v[r - 1] = (double)size * (double)copies / (double)(elapsed ? elapsed : 1);
    }
    if (err == EPERM || err == ENOSYS || err == EACCES) {
        fprintf(stderr, "physical_limits: cma2 skipped: process_vm_readv/writev: %s\n",
                strerror(err));
        result = 1;
        goto out;
    }
    if (err != 0 || dst[0] != 1 || dst[split - 1] != 1 || dst[split] != 1 || dst[size - 1] != 1) {
        fprintf(stderr, "physical_limits: the CMA copy of %zu bytes failed: %s\n", size,
                err != 0 ? strerror(err) : "wrong bytes");
        goto out;
    }
    print_stats("cma2_GBps", size, v, repeat);
    result = 0;
out:
    __atomic_store_n(&control->c.go, PL_STOP, __ATOMIC_RELEASE);
    int status;
    if (child > 0 &&
        (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0)) {
        fprintf(stderr, "physical_limits: the CMA copy's helper failed\n");
        result = -1;
    }
    free(dst);
    munmap(control, 4096);
    return result;
}

/* ---------------------------------------------------------------- options */

static int parse_u64(const char *text, unsigned long long *value_p)
{
    char *end;
    errno = 0;
    if (text[0] < '0' || text[0] > '9')
        return -1;
    unsigned long long value = strtoull(text, &end, 10);
    if (errno != 0 || end == text)
        return -1;
    unsigned shift = 0;
    if (*end == 'K' || *end == 'k')
        shift = 10;
    else if (*end == 'M' || *end == 'm')
        shift = 20;
    else if (*end == 'G' || *end == 'g')
        shift = 30;
    if (shift != 0)
        end++;
    if (*end != '\0' || value > (UINT64_MAX >> shift))
        return -1;
    *value_p = value << shift;
    return 0;
}

static int usage(const char *why)
{
    fprintf(stderr,
            "physical_limits: %s\nusage: physical_limits [-2] [-r REPEAT (1..%d)] [-n ROUNDTRIPS] "
            "[-a CORE] [-b CORE] [SIZE...]\n",
            why, PL_MAX_REPEAT);
    return 2;
}

int main(int argc, char **argv)
{
    unsigned long long repeat = 7, roundtrips = 200000, core_a = 0, core_b = 1, value;
    size_t sizes[PL_MAX_SIZES] = {1ul << 20, 16ul << 20, 256ul << 20};
    unsigned count = 3;
    int c, copy2_only = 0;

    while ((c = getopt(argc, argv, "2r:n:a:b:")) != -1) {
        if (c == '2') {
            copy2_only = 1;
            continue;
        }
        unsigned long long *target = c == 'r'   ? &repeat
                                     : c == 'n' ? &roundtrips
                                     : c == 'a' ? &core_a
                                     : c == 'b' ? &core_b
                                                : NULL;
        if (target == NULL)
            return usage("unknown option");
        if (parse_u64(optarg, target) != 0)
            return usage("bad number");
    }
    if (repeat < 1 || repeat > PL_MAX_REPEAT || roundtrips < 1 || core_a >= CPU_SETSIZE ||
        core_b >= CPU_SETSIZE)
        return usage("value out of range");
    if (optind < argc) {
        count = 0;
        for (; optind < argc; optind++) {
            if (count == PL_MAX_SIZES)
                return usage("too many sizes");
            if (parse_u64(argv[optind], &value) != 0 || value == 0 || value > (1ull << 34))
                return usage("bad size (bytes, suffix K/M/G, at most 16G)");
            sizes[count++] = (size_t)value;
        }
    }
    printf("test,size,median,min,max\n");
    if (pingpong((int)core_a, (int)core_b, (unsigned)repeat, roundtrips) != 0)
        return 1;
    if (!copy2_only)
        return memcpy_bw((int)core_b, sizes, count, (unsigned)repeat) != 0;
    for (unsigned i = 0; i < count; i++) {
        if (copy2_bw((int)core_a, (int)core_b, sizes[i], (unsigned)repeat) != 0)
            return 1;
    }
    for (unsigned i = 0; i < count; i++) {
        int rc = cma2_bw((int)core_a, (int)core_b, sizes[i], (unsigned)repeat);
        if (rc < 0)
            return 1;
        if (rc > 0)
            break; /* no cross-memory attach here: said once */
    }
    return 0;
}
