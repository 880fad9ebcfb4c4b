/* Raw MPI-3 RMA: the floor under the MPI proxy. The point-to-point
 * figures of shmem_bench.c, with the same names, method and CSV, made
 * with MPI one-sided calls on a window over 2 x 4 MiB per rank: a put is
 * MPI_Put then MPI_Win_flush (shmem_putmem + quiet), a get MPI_Get then
 * MPI_Win_flush, fetch_add MPI_Fetch_and_op then MPI_Win_flush, add
 * MPI_Accumulate (flushed once at the end), the bandwidth figures as
 * shmem_bench's (blocking gets: a flush after each). Rank 0 drives, rank
 * n-1 is the target; every rank holds a passive-target epoch on the
 * window (MPI_Win_lock_all) for the whole run, as the proxy does.
 * Window kind: --allocate (default; MPI_Win_allocate) or --create
 * (MPI_Win_create over malloc'd memory, as the proxy exposes its heap).
 * Usage: mpi_rma_bench [--quick] [--allocate|--create] */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TRIALS 10
#define MAXB ((size_t)4 << 20)
static int me, npes, target, quick;
static MPI_Win win;
static char *wbase, *lbuf;
/* Displacements in the window: data at 0 (4 MiB), source of gets at MAXB,
 * longs for the element and atomic figures after both. */
#define D_DATA 0
#define D_SRC MAXB
#define D_LONG (2 * MAXB)

static double now(void) { return MPI_Wtime(); }

static int cmpd(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef void (*op_fn)(long iters, size_t bytes);

/* As shmem_bench.c: rank 0 decides every warm-up step and broadcasts it. */
static long calibrate(size_t bytes, op_fn fn) {
    long iters = 1;
    double start = now(), last = 0;
    for (;;) {
        long msg[2] = {0, iters};
        if (me == 0) {
            msg[0] = now() - start < (quick ? 2e-4 : 2e-3);
            if (last > 0 && last < 2.5e-4) msg[1] = iters * 2;
        }
        MPI_Bcast(msg, 2, MPI_LONG, 0, MPI_COMM_WORLD);
        iters = msg[1];
        if (!msg[0]) break;
        double t0 = now();
        if (me == 0) fn(iters, bytes);
        last = now() - t0;
    }
    if (quick && iters > 64) iters = 64;
    return iters;
}

static void measure(const char *fig, size_t bytes, op_fn fn, const char *unit) {
    double t[TRIALS];
    long iters = calibrate(bytes, fn);
    for (int k = 0; k < TRIALS; k++) {
        double t0 = now();
        if (me == 0) fn(iters, bytes);
        t[k] = (now() - t0) / iters;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    int bw = strcmp(unit, "MB/s") == 0;
    for (int k = 0; k < TRIALS; k++) t[k] = bw ? -(bytes / t[k] / 1e6) : t[k] * 1e6;
    qsort(t, TRIALS, sizeof(double), cmpd); /* best first (bandwidths negated) */
    if (me == 0) {
        if (bw) printf("%s,%zu,%d,%.1f,%.1f,%s\n", fig, bytes, npes, -t[0], -t[TRIALS / 2], unit);
        else printf("%s,%zu,%d,%.4f,%.4f,%s\n", fig, bytes, npes, t[0], t[TRIALS / 2], unit);
    }
    fflush(stdout);
}

static void f_put_lat(long it, size_t b) {
    for (long i = 0; i < it; i++) {
        MPI_Put(lbuf, (int)b, MPI_BYTE, target, D_DATA, (int)b, MPI_BYTE, win);
        MPI_Win_flush(target, win);
    }
}
static void f_get_lat(long it, size_t b) {
    for (long i = 0; i < it; i++) {
        MPI_Get(lbuf, (int)b, MPI_BYTE, target, D_SRC, (int)b, MPI_BYTE, win);
        MPI_Win_flush(target, win);
    }
}
static void f_fadd(long it, size_t b) {
    (void)b;
    long one = 1, old = 0;
    for (long i = 0; i < it; i++) {
        MPI_Fetch_and_op(&one, &old, MPI_LONG, target, D_LONG + 16, MPI_SUM, win);
        MPI_Win_flush(target, win);
    }
}
static void f_add(long it, size_t b) {
    (void)b;
    long one = 1;
    for (long i = 0; i < it; i++) MPI_Accumulate(&one, 1, MPI_LONG, target, D_LONG + 24, 1, MPI_LONG, MPI_SUM, win);
    MPI_Win_flush(target, win);
}
static void f_put_bw(long it, size_t b) {
    for (long i = 0; i < it; i++) MPI_Put(lbuf, (int)b, MPI_BYTE, target, D_DATA, (int)b, MPI_BYTE, win);
    MPI_Win_flush(target, win);
}

int main(int argc, char **argv) {
    int create = 0, provided;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) quick = 1;
        else if (strcmp(argv[i], "--create") == 0) create = 1;
        else if (strcmp(argv[i], "--allocate") == 0) create = 0;
        else { fprintf(stderr, "mpi_rma_bench: unknown argument %s\n", argv[i]); return 2; }
    }
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &npes);
    target = npes - 1;
    MPI_Aint size = (MPI_Aint)(2 * MAXB + 64);
    if (create) {
        wbase = malloc(size);
        memset(wbase, 0, size);
        MPI_Win_create(wbase, size, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    } else {
        MPI_Win_allocate(size, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &wbase, &win);
        memset(wbase, 0, size);
    }
    lbuf = malloc(MAXB);
    memset(lbuf, 1, MAXB);
    MPI_Win_lock_all(MPI_MODE_NOCHECK, win);
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == 0) printf("figure,bytes,pes,best,median,unit\n");
    measure("put+quiet", 8, f_put_lat, "us");
    measure("get", 8, f_get_lat, "us");
    measure("p+quiet", 8, f_put_lat, "us");
    measure("g", 8, f_get_lat, "us");
    measure("fetch_add", 8, f_fadd, "us");
    measure("add", 8, f_add, "us");
    size_t sizes[] = {64, 4096, 65536, 1 << 20, 4 << 20};
    for (int i = 0; i < 5; i++) {
        measure("put_bw", sizes[i], f_put_bw, "MB/s");
        measure("put_nbi_bw", sizes[i], f_put_bw, "MB/s");
        measure("get_bw", sizes[i], f_get_lat, "MB/s");
    }
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_free(&win);
    if (create) free(wbase);
    free(lbuf);
    MPI_Finalize();
    return 0;
}
