/* Small collectives on the publish-and-pull path (runtime/src/stage.rs):
 * every result checked right after each call, with no barrier between
 * calls, so a member that runs ahead and rewrites a slot (or a dest) that
 * another still reads shows up as a wrong value.
 *  - long runs of broadcasts (several times the stage slot count) with the
 *    root moving every call, and with one root while member 1 lags
 *    (the root runs as far ahead as the slots allow), then runs mixing
 *    broadcast, fcollect and reductions, in place and not;
 *  - on the world team, a strided split team (every other PE, from 1), a
 *    reversed team, and a non-power-of-two team (3 of the PEs);
 *  - the deprecated active-set forms, back to back alternating two pSync
 *    arrays, on the whole job and on a strided set (logPE_stride 1), with
 *    PE_root != 0, then a pSync array reused by another active set, then
 *    re-initialized and used by the first set again;
 *  - sizes on both sides of the staged limits (alltoall: the whole source
 *    in a slot; collect: blocks of different sizes, some too large).
 * Usage: coll_small */
#define _DEFAULT_SOURCE
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "test_util.h"

static int me, npes;
#define ROUNDS 40
#define MAXE 128 /* longs: 1 KiB */
static long sizes[] = {1, 3, 25, 60, 61, 128};

/* The value member r contributes at element k in call c. */
static long val(int c, int r, long k) { return (long)c * 1000003L + r * 1009L + k; }

static void team_runs(shmem_team_t team, const char *name) {
    int tn = shmem_team_n_pes(team), tr = shmem_team_my_pe(team);
    long *src = shmem_malloc(MAXE * sizeof(long) * (npes + 1));
    long *dst = shmem_malloc(MAXE * sizeof(long) * (npes + 1));
    /* private copies: the program fills and checks these, and moves them
     * to and from the symmetric buffers with one put or get each */
    long *psrc = malloc(MAXE * sizeof(long) * (npes + 1));
    long *pdst = malloc(MAXE * sizeof(long) * (npes + 1));
    CHECK(psrc != NULL && pdst != NULL, "malloc");
    if (tr >= 0) {
        for (int si = 0; si < 6; si++) {
            long m = sizes[si];
            /* broadcasts only: the root moves, every call checked */
            for (int c = 0; c < ROUNDS; c++) {
                int root = (c * 3 + 1) % tn;
                for (long k = 0; k < m; k++) psrc[k] = val(c, tr, k);
                SYM_PUT(src, psrc, m * sizeof(long));
                CHECK(shmem_long_broadcast(team, dst, src, m, root) == 0, "%s broadcast rc", name);
                SYM_GET(pdst, dst, m * sizeof(long));
                for (long k = 0; k < m; k++)
                    if (pdst[k] != val(c, root, k))
                        CHECK(0, "%s broadcast call %d m=%ld root %d element %ld: got %ld want %ld", name, c, m,
                              root, k, pdst[k], val(c, root, k));
            }
            /* one root for the whole run while member 1 lags now and
             * then: the root runs ahead by as many calls as it may */
            for (int c = 0; c < ROUNDS; c++) {
                if (tr == 1 % tn && c % 10 == 0) usleep(2000);
                for (long k = 0; k < m; k++) psrc[k] = val(c, tr, k);
                SYM_PUT(src, psrc, m * sizeof(long));
                CHECK(shmem_long_broadcast(team, dst, src, m, 0) == 0, "%s broadcast rc", name);
                SYM_GET(pdst, dst, m * sizeof(long));
                for (long k = 0; k < m; k++)
                    if (pdst[k] != val(c, 0, k))
                        CHECK(0, "%s fixed-root broadcast call %d m=%ld element %ld: got %ld want %ld", name, c, m, k,
                              pdst[k], val(c, 0, k));
            }
            /* mixed: broadcast, fcollect, sum (in place every other call),
             * alltoall, collect (member r contributes r + 1 blocks, or m
             * elements times r + 1: some blocks too large for a slot) */
            for (int c = 0; c < ROUNDS; c++) {
                int kind = c % 5;
                for (long k = 0; k < m; k++) psrc[k] = val(c, tr, k);
                if (kind == 0) {
                    int root = tn - 1 - c % tn;
                    SYM_PUT(src, psrc, m * sizeof(long));
                    CHECK(shmem_long_broadcast(team, src, src, m, root) == 0, "bcast rc");
                    SYM_GET(psrc, src, m * sizeof(long));
                    for (long k = 0; k < m; k++)
                        if (psrc[k] != val(c, root, k))
                            CHECK(0, "%s in-place broadcast call %d root %d element %ld: got %ld", name, c, root, k,
                                  psrc[k]);
                } else if (kind == 1) {
                    SYM_PUT(src, psrc, m * sizeof(long));
                    CHECK(shmem_long_fcollect(team, dst, src, m) == 0, "fcollect rc");
                    SYM_GET(pdst, dst, tn * m * sizeof(long));
                    for (int r = 0; r < tn; r++)
                        for (long k = 0; k < m; k++)
                            if (pdst[r * m + k] != val(c, r, k))
                                CHECK(0, "%s fcollect call %d m=%ld block %d element %ld: got %ld want %ld", name, c,
                                      m, r, k, pdst[r * m + k], val(c, r, k));
                } else if (kind == 3) {
                    for (int r = 0; r < tn; r++)
                        for (long k = 0; k < m; k++) psrc[r * m + k] = val(c, tr, r * 100 + k);
                    SYM_PUT(src, psrc, tn * m * sizeof(long));
                    CHECK(shmem_long_alltoall(team, dst, src, m) == 0, "alltoall rc");
                    SYM_GET(pdst, dst, tn * m * sizeof(long));
                    for (int r = 0; r < tn; r++)
                        for (long k = 0; k < m; k++)
                            if (pdst[r * m + k] != val(c, r, tr * 100 + k))
                                CHECK(0, "%s alltoall call %d m=%ld block %d element %ld: got %ld want %ld", name, c,
                                      m, r, k, pdst[r * m + k], val(c, r, tr * 100 + k));
                } else if (kind == 4) {
                    long mine_n = m * (tr + 1) < MAXE ? m * (tr + 1) : MAXE;
                    for (long k = 0; k < mine_n; k++) psrc[k] = val(c, tr, k);
                    SYM_PUT(src, psrc, mine_n * sizeof(long));
                    CHECK(shmem_long_collect(team, dst, src, mine_n) == 0, "collect rc");
                    long total = 0;
                    for (int r = 0; r < tn; r++) total += m * (r + 1) < MAXE ? m * (r + 1) : MAXE;
                    SYM_GET(pdst, dst, total * sizeof(long));
                    long at = 0;
                    for (int r = 0; r < tn; r++) {
                        long rn = m * (r + 1) < MAXE ? m * (r + 1) : MAXE;
                        for (long k = 0; k < rn; k++)
                            if (pdst[at + k] != val(c, r, k))
                                CHECK(0, "%s collect call %d m=%ld block %d element %ld: got %ld want %ld", name, c, m,
                                      r, k, pdst[at + k], val(c, r, k));
                        at += rn;
                    }
                } else {
                    long *out = c % 2 ? src : dst;
                    SYM_PUT(src, psrc, m * sizeof(long));
                    CHECK(shmem_long_sum_reduce(team, out, src, m) == 0, "sum rc");
                    SYM_GET(pdst, out, m * sizeof(long));
                    for (long k = 0; k < m; k++) {
                        long want = 0;
                        for (int r = 0; r < tn; r++) want += val(c, r, k);
                        if (pdst[k] != want)
                            CHECK(0, "%s sum call %d m=%ld element %ld: got %ld want %ld", name, c, m, k, pdst[k],
                                  want);
                    }
                }
            }
        }
        /* A reduction whose operator is not commutative in floating point:
         * every member must get the bitwise-same result. */
        double *fs = (double *)src, *fd = (double *)dst;
        SYM_STORE(fs, 1.0 / (3.0 + tr) * (tr % 2 ? 1e16 : 1.0));
        CHECK(shmem_double_sum_reduce(team, fd, fs, 1) == 0, "double sum rc");
        double mine = SYM_LOAD(fd);
        double *all = (double *)(dst + MAXE);
        CHECK(shmem_double_fcollect(team, all, &fd[0], 1) == 0, "fcollect rc");
        (void)mine;
        double *pall = (double *)pdst;
        SYM_GET(pall, all, tn * sizeof(double));
        for (int r = 1; r < tn; r++) CHECK(memcmp(&pall[r], &pall[0], sizeof(double)) == 0, "%s double sum differs", name);
    }
    shmem_barrier_all();
    free(pdst);
    free(psrc);
    shmem_free(dst);
    shmem_free(src);
}

static long pSyncA[SHMEM_BCAST_SYNC_SIZE], pSyncB[SHMEM_BCAST_SYNC_SIZE];
static long pWrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE + MAXE];

static void active_runs(int start, int logstride, int size, const char *name) {
    int stride = 1 << logstride;
    int in = me >= start && (me - start) % stride == 0 && (me - start) / stride < size;
    long *src = shmem_malloc(MAXE * sizeof(long) * (npes + 1));
    long *dst = shmem_malloc(MAXE * sizeof(long) * (npes + 1));
    long *psrc = malloc(MAXE * sizeof(long) * (npes + 1));
    long *pdst = malloc(MAXE * sizeof(long) * (npes + 1));
    CHECK(psrc != NULL && pdst != NULL, "malloc");
    if (in) {
        int ar = (me - start) / stride;
        for (int si = 0; si < 6; si++) {
            long m = sizes[si];
            for (int c = 0; c < ROUNDS; c++) {
                long *ps = c % 2 ? pSyncB : pSyncA;
                int kind = c < ROUNDS / 2 ? 0 : c % 6;
                if (ar == 1 % size && c % 10 == 0) usleep(2000);
                for (long k = 0; k < m; k++) psrc[k] = val(c, ar, k);
                if (kind < 2) {
                    /* first half: one root, member 1 lagging */
                    int root = c < ROUNDS / 2 ? size - 2 + (size == 1) : (c + 1) % size;
                    SYM_PUT(src, psrc, m * sizeof(long));
                    for (long k = 0; k < m; k++) pdst[k] = -1;
                    SYM_PUT(dst, pdst, m * sizeof(long));
                    shmem_broadcast64(dst, src, m, root, start, logstride, size, ps);
                    SYM_GET(pdst, dst, m * sizeof(long));
                    for (long k = 0; k < m; k++) {
                        long want = ar == root ? -1 : val(c, root, k); /* the root's dest is not written */
                        if (pdst[k] != want)
                            CHECK(0, "%s broadcast64 call %d m=%ld root %d element %ld: got %ld want %ld", name, c,
                                  m, root, k, pdst[k], want);
                    }
                } else if (kind == 2) {
                    SYM_PUT(src, psrc, m * sizeof(long));
                    shmem_fcollect64(dst, src, m, start, logstride, size, ps);
                    SYM_GET(pdst, dst, size * m * sizeof(long));
                    for (int r = 0; r < size; r++)
                        for (long k = 0; k < m; k++)
                            if (pdst[r * m + k] != val(c, r, k))
                                CHECK(0, "%s fcollect64 call %d m=%ld block %d element %ld: got %ld", name, c, m, r,
                                      k, pdst[r * m + k]);
                } else if (kind == 4) {
                    for (int r = 0; r < size; r++)
                        for (long k = 0; k < m; k++) psrc[r * m + k] = val(c, ar, r * 100 + k);
                    SYM_PUT(src, psrc, size * m * sizeof(long));
                    shmem_alltoall64(dst, src, m, start, logstride, size, ps);
                    SYM_GET(pdst, dst, size * m * sizeof(long));
                    for (int r = 0; r < size; r++)
                        for (long k = 0; k < m; k++)
                            if (pdst[r * m + k] != val(c, r, ar * 100 + k))
                                CHECK(0, "%s alltoall64 call %d m=%ld block %d element %ld: got %ld", name, c, m, r,
                                      k, pdst[r * m + k]);
                } else if (kind == 5) {
                    long mine_n = m * (ar + 1) < MAXE ? m * (ar + 1) : MAXE;
                    for (long k = 0; k < mine_n; k++) psrc[k] = val(c, ar, k);
                    SYM_PUT(src, psrc, mine_n * sizeof(long));
                    shmem_collect64(dst, src, mine_n, start, logstride, size, ps);
                    long total = 0;
                    for (int r = 0; r < size; r++) total += m * (r + 1) < MAXE ? m * (r + 1) : MAXE;
                    SYM_GET(pdst, dst, total * sizeof(long));
                    long at = 0;
                    for (int r = 0; r < size; r++) {
                        long rn = m * (r + 1) < MAXE ? m * (r + 1) : MAXE;
                        for (long k = 0; k < rn; k++)
                            if (pdst[at + k] != val(c, r, k))
                                CHECK(0, "%s collect64 call %d m=%ld block %d element %ld: got %ld", name, c, m, r, k,
                                      pdst[at + k]);
                        at += rn;
                    }
                } else {
                    SYM_PUT(src, psrc, m * sizeof(long));
                    shmem_long_sum_to_all(dst, src, m, start, logstride, size, pWrk, ps);
                    SYM_GET(pdst, dst, m * sizeof(long));
                    for (long k = 0; k < m; k++) {
                        long want = 0;
                        for (int r = 0; r < size; r++) want += val(c, r, k);
                        if (pdst[k] != want)
                            CHECK(0, "%s sum_to_all call %d m=%ld element %ld: got %ld want %ld", name, c, m, k,
                                  pdst[k], want);
                    }
                }
            }
        }
    }
    shmem_barrier_all();
    free(pdst);
    free(psrc);
    shmem_free(dst);
    shmem_free(src);
}

int main(void) {
    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();
    for (int i = 0; i < SHMEM_BCAST_SYNC_SIZE; i++) pSyncA[i] = pSyncB[i] = SHMEM_SYNC_VALUE;
    shmem_barrier_all();

    team_runs(SHMEM_TEAM_WORLD, "world");
    shmem_team_t odd = SHMEM_TEAM_INVALID, rev = SHMEM_TEAM_INVALID, three = SHMEM_TEAM_INVALID;
    if (npes > 2) {
        CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 2, npes / 2, NULL, 0, &odd) == 0, "split odd");
        team_runs(odd, "odd PEs");
    }
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, npes - 1, -1, npes, NULL, 0, &rev) == 0, "split rev");
    team_runs(rev, "reversed");
    if (npes > 3) {
        CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, 3, NULL, 0, &three) == 0, "split three");
        team_runs(three, "three PEs");
    }

    active_runs(0, 0, npes, "all PEs");
    if (npes > 2) active_runs(1, 1, npes / 2, "odd PEs");
    /* pSyncA and pSyncB now serve another active set without being reset
     * (active_runs ends with a barrier over the job). */
    if (npes > 1) active_runs(0, 0, npes - 1, "all but the last");
    /* ...then are re-initialized on every PE, after a barrier, and serve
     * the first set again: members that last used them with different
     * sets must still agree on the epochs. */
    for (int i = 0; i < SHMEM_BCAST_SYNC_SIZE; i++) pSyncA[i] = pSyncB[i] = SHMEM_SYNC_VALUE;
    shmem_barrier_all();
    active_runs(0, 0, npes, "all PEs after re-initialization");

    if (odd != SHMEM_TEAM_INVALID) shmem_team_destroy(odd);
    if (three != SHMEM_TEAM_INVALID) shmem_team_destroy(three);
    shmem_team_destroy(rev);
    shmem_barrier_all();
    if (me == 0) printf("coll_small ok on %d PEs\n", npes);
    shmem_finalize();
    return 0;
}
