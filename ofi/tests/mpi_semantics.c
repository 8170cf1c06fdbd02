/*
 * MPI point-to-point semantics and collectives, every byte checked: run under Open MPI over
 * the ferry provider (ofi/mpi.sh: pml cm, mtl ofi) with 2 or more ranks.
 *
 *   blocking and non-blocking sends of 0 B .. 4 MiB; directed and MPI_ANY_SOURCE receives of
 *   the same tag from several senders (the source of each checked); MPI_Ssend; MPI_Probe,
 *   MPI_Iprobe, MPI_Mprobe/MPI_Mrecv reporting source and size; a truncated receive
 *   (MPI_ERR_TRUNCATE, the next message whole); MPI_Cancel of an unmatched receive; barrier,
 *   bcast, allreduce, alltoall.
 *
 * Arguments name the tests to run (sizes sources ssend probe truncate cancel collectives;
 * default all). Prints "ok <test>" per test and "mpi_semantics: N ranks passed" from rank 0
 * and exits 0; any failure aborts the job.
 */
#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size;
static uint8_t *buf_a, *buf_b; /* 4 MiB each */

static void fail(int line, const char *what)
{
    fprintf(stderr, "mpi_semantics: rank %d: FAIL line %d: %s\n", rank, line, what);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond))                                                                               \
            fail(__LINE__, #cond);                                                                 \
    } while (0)

static void fill(uint8_t *p, size_t len, unsigned seed)
{
    for (size_t i = 0; i < len; i++)
        p[i] = (uint8_t)(seed * 131u + i * 7u + (i >> 8));
}

static void check(const uint8_t *p, size_t len, unsigned seed)
{
    for (size_t i = 0; i < len; i++) {
        if (p[i] != (uint8_t)(seed * 131u + i * 7u + (i >> 8))) {
            fprintf(stderr, "rank %d: byte %zu of %zu (seed %u) differs\n", rank, i, len, seed);
            fail(__LINE__, "data");
        }
    }
}

/* Ring: every rank sends to the next, blocking and non-blocking, each size. */
static void test_sizes(uint8_t *a, uint8_t *b)
{
    static const int sizes[] = {0, 1, 8, 4096, 65536, 1 << 20, 4 << 20};
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        int n = sizes[i];
        fill(a, (size_t)n, (unsigned)(rank * 100 + i));
        memset(b, 0, (size_t)n);
        MPI_Status st;
        MPI_Sendrecv(a, n, MPI_BYTE, next, 10, b, n, MPI_BYTE, prev, 10, MPI_COMM_WORLD, &st);
        check(b, (size_t)n, (unsigned)(prev * 100 + i));
        int count;
        MPI_Get_count(&st, MPI_BYTE, &count);
        CHECK(count == n && st.MPI_SOURCE == prev);
        MPI_Request req[2];
        memset(b, 0, (size_t)n);
        MPI_Irecv(b, n, MPI_BYTE, prev, 11, MPI_COMM_WORLD, &req[0]);
        MPI_Isend(a, n, MPI_BYTE, next, 11, MPI_COMM_WORLD, &req[1]);
        MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
        check(b, (size_t)n, (unsigned)(prev * 100 + i));
    }
}

/* Every other rank sends tag 20 to rank 0 twice; rank 0 receives from the last rank first
 * (directed), then from anyone, checking the sources and the per-source order. */
static void test_sources(void)
{
    if (rank == 0) {
        int got[64] = {0};
        for (int k = 0; k < 2; k++) {
            int v = -1;
            MPI_Status st;
            MPI_Recv(&v, 1, MPI_INT, size - 1, 20, MPI_COMM_WORLD, &st);
            CHECK(st.MPI_SOURCE == size - 1 && v == (size - 1) * 10 + k);
        }
        got[size - 1] = 2;
        for (int m = 0; m < 2 * (size - 2); m++) {
            int v = -1;
            MPI_Status st;
            MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 20, MPI_COMM_WORLD, &st);
            CHECK(st.MPI_SOURCE > 0 && st.MPI_SOURCE < size - 1);
            CHECK(v == st.MPI_SOURCE * 10 + got[st.MPI_SOURCE]); /* in order per source */
            got[st.MPI_SOURCE]++;
        }
    } else {
        for (int k = 0; k < 2; k++) {
            int v = rank * 10 + k;
            MPI_Send(&v, 1, MPI_INT, 0, 20, MPI_COMM_WORLD);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

/* MPI_Ssend to the last rank, which receives from anyone after a barrier. */
static void test_ssend(void)
{
    int last = size - 1;
    if (rank == 0) {
        int v = 42;
        MPI_Ssend(&v, 1, MPI_INT, last, 30, MPI_COMM_WORLD);
        MPI_Request req;
        MPI_Issend(&v, 1, MPI_INT, last, 31, MPI_COMM_WORLD, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    } else if (rank == last) {
        int v = 0;
        MPI_Status st;
        MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 30, MPI_COMM_WORLD, &st);
        CHECK(v == 42 && st.MPI_SOURCE == 0);
        v = 0;
        MPI_Recv(&v, 1, MPI_INT, 0, 31, MPI_COMM_WORLD, &st);
        CHECK(v == 42);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

/* Probe, Iprobe, Mprobe/Mrecv: the source and size of a message before it is received. */
static void test_probe(uint8_t *a, uint8_t *b)
{
    int n = 70000;
    if (rank == 1) {
        fill(a, (size_t)n, 40);
        MPI_Send(a, n, MPI_BYTE, 0, 40, MPI_COMM_WORLD);
        MPI_Send(a, 100, MPI_BYTE, 0, 41, MPI_COMM_WORLD);
    } else if (rank == 0) {
        MPI_Status st;
        MPI_Probe(MPI_ANY_SOURCE, 40, MPI_COMM_WORLD, &st);
        int count;
        MPI_Get_count(&st, MPI_BYTE, &count);
        CHECK(st.MPI_SOURCE == 1 && count == n);
        MPI_Recv(b, n, MPI_BYTE, st.MPI_SOURCE, 40, MPI_COMM_WORLD, &st);
        check(b, (size_t)n, 40);
        int flag = 0;
        while (!flag)
            MPI_Iprobe(MPI_ANY_SOURCE, 41, MPI_COMM_WORLD, &flag, &st);
        CHECK(st.MPI_SOURCE == 1);
        MPI_Message msg;
        MPI_Mprobe(1, 41, MPI_COMM_WORLD, &msg, &st);
        MPI_Get_count(&st, MPI_BYTE, &count);
        CHECK(count == 100);
        MPI_Mrecv(b, 100, MPI_BYTE, &msg, &st);
        check(b, 100, 40);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

/* A receive shorter than the message: MPI_ERR_TRUNCATE; the next message arrives whole. */
static void test_truncate(uint8_t *a, uint8_t *b)
{
    if (rank == 1) {
        fill(a, 1000, 50);
        MPI_Send(a, 1000, MPI_BYTE, 0, 50, MPI_COMM_WORLD);
        fill(a, 300, 51);
        MPI_Send(a, 300, MPI_BYTE, 0, 50, MPI_COMM_WORLD);
    } else if (rank == 0) {
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        MPI_Status st;
        int rc = MPI_Recv(b, 100, MPI_BYTE, 1, 50, MPI_COMM_WORLD, &st);
        int cls;
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_TRUNCATE);
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
        MPI_Recv(b, 1000, MPI_BYTE, 1, 50, MPI_COMM_WORLD, &st);
        int count;
        MPI_Get_count(&st, MPI_BYTE, &count);
        CHECK(count == 300);
        check(b, 300, 51);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

static void test_cancel(void)
{
    int v;
    MPI_Request req;
    MPI_Irecv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 60, MPI_COMM_WORLD, &req);
    MPI_Cancel(&req);
    MPI_Status st;
    MPI_Wait(&req, &st);
    int cancelled = 0;
    MPI_Test_cancelled(&st, &cancelled);
    CHECK(cancelled);
    MPI_Barrier(MPI_COMM_WORLD);
}

static void test_collectives(void)
{
    MPI_Barrier(MPI_COMM_WORLD);
    int v = rank == 0 ? 1234 : 0;
    MPI_Bcast(&v, 1, MPI_INT, 0, MPI_COMM_WORLD);
    CHECK(v == 1234);
    long sum = 0, mine = rank + 1;
    MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    CHECK(sum == (long)size * (size + 1) / 2);
    int *out = malloc(sizeof(int) * (size_t)size * 1000),
        *in = malloc(sizeof(int) * (size_t)size * 1000);
    CHECK(out != NULL && in != NULL);
    for (int r = 0; r < size; r++)
        for (int i = 0; i < 1000; i++)
            out[r * 1000 + i] = rank * 1000000 + r * 1000 + i;
    MPI_Alltoall(out, 1000, MPI_INT, in, 1000, MPI_INT, MPI_COMM_WORLD);
    for (int r = 0; r < size; r++)
        for (int i = 0; i < 1000; i++)
            CHECK(in[r * 1000 + i] == r * 1000000 + rank * 1000 + i);
    /* the same on a split communicator */
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    int hsize;
    MPI_Comm_size(half, &hsize);
    long hsum = 0;
    MPI_Allreduce(&mine, &hsum, 1, MPI_LONG, MPI_SUM, half);
    long want = 0;
    for (int r = rank % 2; r < size; r += 2)
        want += r + 1;
    CHECK(hsum == want);
    MPI_Comm_free(&half);
    free(out);
    free(in);
}

static void run_sizes(void)
{
    test_sizes(buf_a, buf_b);
}

static void run_probe(void)
{
    test_probe(buf_a, buf_b);
}

static void run_truncate(void)
{
    test_truncate(buf_a, buf_b);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2 || size > 64) {
        if (rank == 0)
            fprintf(stderr, "mpi_semantics: run with 2..64 ranks\n");
        MPI_Finalize();
        return 1;
    }
    uint8_t *a = malloc(4 << 20), *b = malloc(4 << 20);
    CHECK(a != NULL && b != NULL);
    buf_a = a;
    buf_b = b;
    const struct {
        const char *name;
        void (*fn)(void);
    } tests[] = {{"sizes", run_sizes},
                 {"sources", test_sources},
                 {"ssend", test_ssend},
                 {"probe", run_probe},
                 {"truncate", run_truncate},
                 {"cancel", test_cancel},
                 {"collectives", test_collectives}};
    /* arguments name the tests to run (default: all, in this order) */
    for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
        bool wanted = argc < 2;
        for (int k = 1; k < argc; k++)
            wanted |= strcmp(argv[k], tests[i].name) == 0;
        if (!wanted)
            continue;
        tests[i].fn();
        if (rank == 0)
            printf("ok %s\n", tests[i].name);
        fflush(stdout);
    }
    free(a);
    free(b);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        printf("mpi_semantics: %d ranks passed\n", size);
    MPI_Finalize();
    return 0;
}
