/* The profiling interface (OpenSHMEM 1.5 §10): the program defines its own
 * shmem_ wrappers, which count calls and reach the library through the
 * pshmem_ names, as a profiling tool does. Checks that the wrappers replaced
 * the library's routines (the counts) and that the pshmem_ ones did the
 * work (the data). Built against the shared library here and against the
 * static one by the SDK test. */
#define _POSIX_C_SOURCE 200809L
#include <pshmem.h>
#include <stdio.h>
#include <stdlib.h>

static long n_p, n_putmem, n_barrier, n_sum, n_ctx_g, n_pcontrol;
static int pcontrol_level = -1;

void shmem_long_p(long *dest, long value, int pe) {
    n_p++;
    pshmem_long_p(dest, value, pe);
}

void shmem_putmem(void *dest, const void *source, size_t nelems, int pe) {
    n_putmem++;
    pshmem_putmem(dest, source, nelems, pe);
}

void shmem_barrier_all(void) {
    n_barrier++;
    pshmem_barrier_all();
}

int shmem_long_sum_reduce(shmem_team_t team, long *dest, const long *source, size_t nreduce) {
    n_sum++;
    return pshmem_long_sum_reduce(team, dest, source, nreduce);
}

long shmem_ctx_long_g(shmem_ctx_t ctx, const long *source, int pe) {
    n_ctx_g++;
    return pshmem_ctx_long_g(ctx, source, pe);
}

void shmem_pcontrol(const int level, ...) {
    n_pcontrol++;
    pcontrol_level = level;
    pshmem_pcontrol(level);
}

static long x[4], s[2], d[2];

#define CHECK(c, what)                                                               \
    do {                                                                             \
        if (!(c)) {                                                                  \
            fprintf(stderr, "PE %d: %s:%d: %s\n", pshmem_my_pe(), __FILE__, __LINE__, what); \
            exit(1);                                                                 \
        }                                                                            \
    } while (0)

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes(), right = (me + 1) % npes, left = (me + npes - 1) % npes;
    shmem_pcontrol(2, "detail");
    long v = 100 + me;
    shmem_long_p(&x[0], v, right);
    shmem_putmem(&x[1], &v, sizeof v, right);
    shmem_barrier_all();
    CHECK(x[0] == 100 + left && x[1] == 100 + left, "data through pshmem_long_p / pshmem_putmem");
    CHECK(shmem_ctx_long_g(SHMEM_CTX_DEFAULT, &x[0], right) == v, "data through pshmem_ctx_long_g");
    s[0] = me;
    s[1] = 1;
    shmem_barrier_all();
    CHECK(shmem_long_sum_reduce(SHMEM_TEAM_WORLD, d, s, 2) == 0 && d[0] == npes * (npes - 1) / 2 && d[1] == npes,
          "sum through pshmem_long_sum_reduce");
    /* the C11 generic reaches the wrapper too: it names shmem_long_p */
    shmem_p(&x[2], 5L, right);
    shmem_barrier_all();
    CHECK(n_p == 2 && n_putmem == 1 && n_barrier == 3 && n_sum == 1 && n_ctx_g == 1, "wrapper call counts");
    CHECK(n_pcontrol == 1 && pcontrol_level == 2, "shmem_pcontrol wrapper");
    /* the library's own entry points stay reachable under both names */
    CHECK(pshmem_n_pes() == npes && pshmem_team_my_pe(SHMEM_TEAM_WORLD) == me, "pshmem queries");
    shmem_finalize();
    if (me == 0) printf("profiling ok\n");
    return 0;
}
