/* Non-fetching AMOs are complete at their target when quiet returns. Each
 * PE adds to its own word on the last PE, quiets, and reads the word back
 * with a get, while the last PE computes outside the library: through the
 * MPI proxy the AMOs are messages its progress thread applies and the get
 * is MPI RMA, a different channel, so only quiet's completion makes the
 * get see every add. Then the same for inc, for a context's quiet, and
 * after a fence (which through the proxy completes too, and must at least
 * order the adds before a later fetching AMO). */
#include <shmem.h>
#include <stdio.h>
#include <time.h>
#include "test_util.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    int target = npes - 1;
    long *words = shmem_calloc((size_t)npes, sizeof(long));
    const long K = 3000;
    shmem_ctx_t ctx = SHMEM_CTX_DEFAULT;
    CHECK(shmem_ctx_create(SHMEM_CTX_PRIVATE, &ctx) == 0, "shmem_ctx_create");
    shmem_barrier_all();
    for (int round = 0; round < 4; round++) {
        if (me == target) {
            /* compute outside the library for 100 ms */
            volatile double x = 0;
            double t0 = now();
            while (now() - t0 < 0.1) x += 1;
        } else {
            for (long i = 0; i < K; i++) {
                switch (round) {
                case 0: shmem_long_atomic_add(&words[me], 1, target); break;
                case 1: shmem_long_atomic_inc(&words[me], target); break;
                case 2: shmem_ctx_long_atomic_add(ctx, &words[me], 1, target); break;
                default: shmem_long_atomic_add(&words[me], 1, target); break;
                }
            }
            long expect = (round + 1) * K, got;
            if (round == 2) {
                shmem_ctx_quiet(ctx);
                got = shmem_ctx_long_g(ctx, &words[me], target);
            } else if (round == 3) {
                shmem_fence();
                got = shmem_long_atomic_fetch(&words[me], target);
            } else {
                shmem_quiet();
                got = shmem_long_g(&words[me], target);
            }
            CHECK(got == expect, "round %d: PE %d's word on PE %d reads %ld after quiet, expected %ld", round, me,
                  target, got, expect);
        }
        shmem_barrier_all();
    }
    if (me == target)
        for (int p = 0; p < npes - 1; p++) {
            long w = shmem_long_g(&words[p], me); /* heaps the host cannot load from too */
            CHECK(w == 4 * K, "PE %d's word is %ld, expected %ld", p, w, 4 * K);
        }
    shmem_ctx_destroy(ctx);
    shmem_free(words);
    if (me == 0) printf("amo_quiet ok\n");
    shmem_finalize();
    return 0;
}
