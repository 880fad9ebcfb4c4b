/* Collective latency benchmark (not a test): median time per call of
 * barrier_all, team_sync, broadcast, fcollect, alltoall and sum_reduce at a
 * few sizes, on the world team. Run: ishmrun -n N ./coll_latency */
#define _POSIX_C_SOURCE 200809L
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

#define TRIALS 11
#define ITERS 200

/* Median over TRIALS of the mean time per call over ITERS calls. */
#define BENCH(label, bytes, stmt)                                          \
    do {                                                                   \
        double t[TRIALS];                                                  \
        for (int w = 0; w < 20; w++) { stmt; }                             \
        for (int tr = 0; tr < TRIALS; tr++) {                              \
            shmem_barrier_all();                                           \
            double t0 = now_us();                                          \
            for (int i = 0; i < ITERS; i++) { stmt; }                      \
            t[tr] = (now_us() - t0) / ITERS;                               \
        }                                                                  \
        qsort(t, TRIALS, sizeof(double), cmp);                             \
        if (me == 0) printf("%-12s %9zu %10.2f\n", label, (size_t)(bytes), t[TRIALS / 2]); \
    } while (0)

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    size_t big = 1 << 17; /* longs: 1 MiB */
    long *src = shmem_calloc(big * n, sizeof(long));
    long *dst = shmem_calloc(big * n, sizeof(long));
    if (me == 0) printf("# %d PEs; median us per call\n%-12s %9s %10s\n", n, "op", "bytes", "us");
    BENCH("barrier_all", 0, shmem_barrier_all());
    BENCH("team_sync", 0, shmem_team_sync(SHMEM_TEAM_WORLD));
    size_t sizes[] = {1, 1024, big};
    for (int s = 0; s < 3; s++) {
        size_t m = sizes[s];
        BENCH("broadcast", m * 8, shmem_long_broadcast(SHMEM_TEAM_WORLD, dst, src, m, 0));
        if (m <= 1024) {
            BENCH("fcollect", m * 8, shmem_long_fcollect(SHMEM_TEAM_WORLD, dst, src, m));
            BENCH("alltoall", m * 8, shmem_long_alltoall(SHMEM_TEAM_WORLD, dst, src, m));
        }
        BENCH("sum_reduce", m * 8, shmem_long_sum_reduce(SHMEM_TEAM_WORLD, dst, src, m));
    }
    shmem_free(dst);
    shmem_free(src);
    shmem_finalize();
    return 0;
}
