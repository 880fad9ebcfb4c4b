/* A program written only with deprecated OpenSHMEM names (1.0-1.4 style):
 * start_pes, _my_pe, shmalloc, pSync/pWrk active-set collectives with
 * global pSync arrays, *_to_all reductions, fadd/finc/swap/cswap/fetch/set,
 * shmem_wait, cache no-ops, _SHMEM_* constants. */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "test_util.h"

#undef CHECK /* this program's own, with _my_pe */
#define CHECK(c, ...) do { if (!(c)) { fprintf(stderr, "PE %d: line %d: ", _my_pe(), __LINE__); \
    fprintf(stderr, __VA_ARGS__); fprintf(stderr, "\n"); exit(1); } } while (0)

long pSync[_SHMEM_BCAST_SYNC_SIZE];
long pSync2[SHMEM_REDUCE_SYNC_SIZE];
long pSyncB[_SHMEM_BARRIER_SYNC_SIZE];
int ipWrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE + 100];
double dpWrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE + 100];
short spWrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE + 100];
static long target;
static int flag;

int main(void) {
    int i;
    for (i = 0; i < _SHMEM_BCAST_SYNC_SIZE; i++) pSync[i] = _SHMEM_SYNC_VALUE;
    for (i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++) pSync2[i] = SHMEM_SYNC_VALUE;
    for (i = 0; i < _SHMEM_BARRIER_SYNC_SIZE; i++) pSyncB[i] = SHMEM_SYNC_VALUE;
    start_pes(0);
    int me = _my_pe(), n = _num_pes();
    shmem_barrier_all();

    /* world as an active set: PE_start 0, logPE_stride 0, PE_size n */
    long *src = (long *)shmalloc(64 * sizeof(long));
    long *dst = (long *)shmalloc(64 * n * sizeof(long));
    /* private copies: the heap is written and read through puts and gets
       to this PE (it may be GPU memory) */
    long lsrc[64], *ldst = (long *)malloc(64 * n * sizeof(long));
    for (i = 0; i < 64; i++) { lsrc[i] = me * 100 + i; ldst[i] = -1; }
    SYM_PUT(src, lsrc, 64 * sizeof(long));
    SYM_PUT(dst, ldst, 64 * sizeof(long));
    shmem_sync(0, 0, n, pSyncB);
    shmem_broadcast64(dst, src, 8, 0, 0, 0, n, pSync);
    SYM_GET(ldst, dst, 8 * sizeof(long));
    for (i = 0; i < 8; i++)
        CHECK(ldst[i] == (me == 0 ? -1 : i), "broadcast64 element %d = %ld (root dest untouched)", i, ldst[i]);
    shmem_barrier(0, 0, n, pSyncB);
    shmem_fcollect64(dst, src, 4, 0, 0, n, pSync);
    SYM_GET(ldst, dst, 4 * n * sizeof(long));
    for (i = 0; i < 4 * n; i++) CHECK(ldst[i] == (i / 4) * 100 + i % 4, "fcollect64 %d", i);
    shmem_barrier(0, 0, n, pSyncB);
    int *isrc = (int *)shmalloc(16 * sizeof(int));
    int *idst = (int *)shmalloc(16 * n * sizeof(int));
    int lisrc[16], *lidst = (int *)malloc(16 * n * sizeof(int));
    for (i = 0; i < me + 1; i++) lisrc[i] = me * 10 + i;
    SYM_PUT(isrc, lisrc, (me + 1) * sizeof(int));
    shmem_collect32(idst, isrc, me + 1, 0, 0, n, pSync);
    SYM_GET(lidst, idst, n * (n + 1) / 2 * sizeof(int));
    int pos = 0;
    for (int p = 0; p < n; p++)
        for (i = 0; i < p + 1; i++, pos++) CHECK(lidst[pos] == p * 10 + i, "collect32 %d", pos);
    shmem_barrier(0, 0, n, pSyncB);
    for (i = 0; i < n; i++) lisrc[i] = me * 10 + i;
    SYM_PUT(isrc, lisrc, n * sizeof(int));
    shmem_alltoall32(idst, isrc, 1, 0, 0, n, pSync);
    SYM_GET(lidst, idst, n * sizeof(int));
    for (int p = 0; p < n; p++) CHECK(lidst[p] == p * 10 + me, "alltoall32 %d", p);
    shmem_barrier(0, 0, n, pSyncB);
    for (i = 0; i < 2 * n; i++) lsrc[i] = me * 100 + i;
    SYM_PUT(src, lsrc, 2 * n * sizeof(long));
    shmem_alltoalls64(dst, src, 1, 2, 1, 0, 0, n, pSync);
    SYM_GET(ldst, dst, n * sizeof(long));
    for (int p = 0; p < n; p++) CHECK(ldst[p] == p * 100 + 2 * me, "alltoalls64 %d", p);

    /* reductions */
    for (i = 0; i < 10; i++) lisrc[i] = me + i;
    SYM_PUT(isrc, lisrc, 10 * sizeof(int));
    shmem_int_sum_to_all(idst, isrc, 10, 0, 0, n, ipWrk, pSync2);
    SYM_GET(lidst, idst, 10 * sizeof(int));
    for (i = 0; i < 10; i++) CHECK(lidst[i] == n * (n - 1) / 2 + n * i, "int_sum_to_all %d", i);
    double *dsrc = (double *)shmalloc(8 * sizeof(double));
    double *ddst = (double *)shmalloc(8 * sizeof(double));
    double ldsrc[8], lddst[8];
    for (i = 0; i < 8; i++) ldsrc[i] = (double)((me * 7 + i) % 5);
    SYM_PUT(dsrc, ldsrc, sizeof ldsrc);
    shmem_double_max_to_all(ddst, dsrc, 8, 0, 0, n, dpWrk, pSync2);
    SYM_GET(lddst, ddst, sizeof lddst);
    for (i = 0; i < 8; i++) {
        double m = 0;
        for (int p = 0; p < n; p++) if ((p * 7 + i) % 5 > m) m = (p * 7 + i) % 5;
        CHECK(lddst[i] == m, "double_max_to_all %d", i);
    }
    short *ssrc = (short *)shmalloc(4 * sizeof(short));
    short *sdst = (short *)shmalloc(4 * sizeof(short));
    short lssrc[4];
    for (i = 0; i < 4; i++) lssrc[i] = (short)(0x7ff0 | me);
    SYM_PUT(ssrc, lssrc, sizeof lssrc);
    shmem_short_and_to_all(sdst, ssrc, 4, 0, 0, n, spWrk, pSync2);
    short want = 0x7fff;
    for (int p = 0; p < n; p++) want &= (short)(0x7ff0 | p);
    CHECK(SYM_LOAD(sdst) == want, "short_and_to_all");
    /* odd PEs only: PE_start 1, logPE_stride 1 */
    if (n > 1 && me % 2 == 1) {
        int m = n / 2;
        SYM_STORE(isrc, me);
        shmem_int_max_to_all(idst, isrc, 1, 1, 1, m, ipWrk, pSync2);
        int got = SYM_LOAD(idst);
        CHECK(got == 2 * m - 1, "max over odd PEs: %d", got);
        shmem_barrier(1, 1, m, pSyncB);
    }
    shmem_barrier_all();
    /* The synchronization words (the first 64) are restored; the rest hold
     * the headers of small staged calls, tagged with their active set and
     * epoch, so the array is reusable without re-initialization (pSync2
     * served the whole world and then the odd PEs above). */
    for (i = 0; i < 64; i++) CHECK(pSyncB[i] == SHMEM_SYNC_VALUE, "pSync restored");
    for (i = 0; i < 64; i++) CHECK(pSync2[i] == SHMEM_SYNC_VALUE, "pSync2 restored");

    /* deprecated AMO names on a global */
    long old = shmem_long_fadd(&target, 5, 0);
    (void)old;
    shmem_long_finc(&target, 0);
    shmem_long_add(&target, 1, 0);
    shmem_long_inc(&target, 0);
    shmem_barrier_all();
    CHECK(shmem_long_fetch(&target, 0) == 8L * n, "fadd/finc/add/inc total %ld", shmem_long_fetch(&target, 0));
    shmem_barrier_all();
    if (me == 0) {
        CHECK(shmem_long_cswap(&target, 8L * n, 1, 0) == 8L * n, "cswap");
        CHECK(shmem_long_swap(&target, 2, 0) == 1, "swap");
        shmem_long_set(&target, 3, 0);
        double before = SYM_LOAD(ddst);
        CHECK(shmem_double_swap(ddst, 1.5, 0) == before && SYM_LOAD(ddst) == 1.5, "double_swap");
    }
    shmem_barrier_all();
    /* shmem_int_wait: PE 0 releases everyone */
    if (me == 0) for (int p = 1; p < n; p++) shmem_int_p(&flag, 1, p);
    else shmem_int_wait(&flag, 0);
    shmem_wait(&target, 12345);
    shmem_clear_cache_inv();
    shmem_set_cache_inv();
    shmem_clear_cache_line_inv(&flag);
    shmem_set_cache_line_inv(&flag);
    shmem_udcflush();
    shmem_udcflush_line(&flag);

    long *r = (long *)shrealloc(src, 128 * sizeof(long));
    CHECK(SYM_LOAD(r + 3) == me * 100 + 3, "shrealloc keeps data");
    void *al = shmemalign(256, 100);
    CHECK(((unsigned long)al % 256) == 0, "shmemalign");
    shfree(al);
    shfree(r);
    free(lidst);
    free(ldst);
    shmem_barrier_all();
    if (me == 0) printf("deprecated ok: %s %d.%d\n", _SHMEM_VENDOR_STRING, _SHMEM_MAJOR_VERSION, _SHMEM_MINOR_VERSION);
    return 0;
}
