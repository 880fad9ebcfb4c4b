/* An end-to-end OpenSHMEM 1.5 program in the style of the specification's
 * examples: a 1-D heat equation on a ring-distributed rod. Each PE owns a
 * block; halos move by put_signal (signal = iteration), the residual is a
 * max reduction, the total heat a sum reduction, and the final field is
 * gathered with fcollect and checked on every PE against a serial run. */
#include <math.h>
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "test_util.h"

#define LOCAL 256
#define STEPS 200

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    int N = LOCAL * npes;
    /* u[0] and u[LOCAL+1] are halos, written by the neighbours */
    double *u = shmem_calloc(LOCAL + 2, sizeof(double));
    /* private copies of u: the heap is read and written through gets and
       puts to this PE (it may be GPU memory) */
    double *cur = malloc((LOCAL + 2) * sizeof(double));
    double *next = malloc((LOCAL + 2) * sizeof(double));
    uint64_t *sig = shmem_calloc(2, sizeof(uint64_t)); /* [0]: from left, [1]: from right */
    double *res = shmem_malloc(2 * sizeof(double));
    double *all = shmem_malloc(N * sizeof(double));
    for (int i = 1; i <= LOCAL; i++) {
        int g = me * LOCAL + i - 1;
        cur[i] = (g == N / 3) ? 1000.0 : sin(g * 0.01);
    }
    SYM_PUT(&u[1], &cur[1], LOCAL * sizeof(double));
    int left = (me + npes - 1) % npes, right = (me + 1) % npes;
    shmem_barrier_all();
    for (uint64_t s = 1; s <= STEPS; s++) {
        /* my first cell is my left neighbour's right halo, and vice versa */
        shmem_double_put_signal(&u[LOCAL + 1], &u[1], 1, &sig[1], s, SHMEM_SIGNAL_SET, left);
        shmem_double_put_signal(&u[0], &u[LOCAL], 1, &sig[0], s, SHMEM_SIGNAL_SET, right);
        shmem_signal_wait_until(&sig[0], SHMEM_CMP_EQ, s);
        shmem_signal_wait_until(&sig[1], SHMEM_CMP_EQ, s);
        SYM_GET(cur, u, (LOCAL + 2) * sizeof(double));
        for (int i = 1; i <= LOCAL; i++) next[i] = cur[i] + 0.25 * (cur[i - 1] - 2 * cur[i] + cur[i + 1]);
        /* my halos must not be overwritten with step s+1 values before I
           have used them: the neighbours wait here too. */
        shmem_barrier_all();
        SYM_PUT(&u[1], &next[1], LOCAL * sizeof(double));
        shmem_barrier_all();
    }
    double local_heat = 0, local_max = 0;
    SYM_GET(cur, u, (LOCAL + 2) * sizeof(double));
    for (int i = 1; i <= LOCAL; i++) {
        local_heat += cur[i];
        if (fabs(cur[i]) > local_max) local_max = fabs(cur[i]);
    }
    SYM_STORE(&res[0], local_heat);
    double *out = shmem_malloc(2 * sizeof(double));
    shmem_double_sum_reduce(SHMEM_TEAM_WORLD, out, res, 1);
    SYM_STORE(&res[1], local_max);
    shmem_double_max_reduce(SHMEM_TEAM_WORLD, out + 1, res + 1, 1);
    shmem_double_fcollect(SHMEM_TEAM_WORLD, all, &u[1], LOCAL);
    double *gathered = malloc(N * sizeof(double)), o[2];
    SYM_GET(gathered, all, N * sizeof(double));
    SYM_GET(o, out, sizeof o);

    /* serial reference */
    double *ref = malloc((N + 2) * sizeof(double)), *tmp = malloc((N + 2) * sizeof(double));
    for (int g = 0; g < N; g++) ref[g + 1] = (g == N / 3) ? 1000.0 : sin(g * 0.01);
    for (int s = 0; s < STEPS; s++) {
        ref[0] = ref[N];
        ref[N + 1] = ref[1];
        for (int i = 1; i <= N; i++) tmp[i] = ref[i] + 0.25 * (ref[i - 1] - 2 * ref[i] + ref[i + 1]);
        for (int i = 1; i <= N; i++) ref[i] = tmp[i];
    }
    double heat = 0, mx = 0;
    for (int i = 1; i <= N; i++) {
        if (fabs(gathered[i - 1] - ref[i]) > 1e-9) {
            fprintf(stderr, "PE %d: cell %d: %.12f vs serial %.12f\n", me, i - 1, gathered[i - 1], ref[i]);
            return 1;
        }
        heat += ref[i];
        if (fabs(ref[i]) > mx) mx = fabs(ref[i]);
    }
    if (fabs(o[0] - heat) > 1e-6 * fabs(heat) || o[1] != mx) {
        fprintf(stderr, "PE %d: heat %.9f vs %.9f, max %.9f vs %.9f\n", me, o[0], heat, o[1], mx);
        return 1;
    }
    if (me == 0) printf("heat ok: %d PEs, %d cells, total %.6f\n", npes, N, o[0]);
    shmem_finalize();
    return 0;
}
