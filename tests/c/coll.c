/* Teams and collectives against independently computed expectations: every
 * type and reduction op, counts from 1 up (to 1M for some types), world and
 * split teams (start 1 stride 2, negative stride, 2-D), in-place reductions,
 * back-to-back collectives on the same buffers, team slot reuse. */
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "test_util.h"

static int me, npes;
#define MAXR (1 << 20)

/* Value element k of member r contributes: small, so sums and products of
 * up to 4 members fit every type exactly. */
#define SV(r, k) ((((r) + 1) * ((int)((k) % 7) + 1)) % 30)
#define PV(r, k) (((r) + (int)(k)) % 2 + 1)
#define BV(r, k) ((((k) * 37u) >> (r % 5)) ^ (unsigned)(r * 11))

static long counts_small[] = {1, 3, 17, 100, 1000, 4097};

#define RED_TEST(T, N)                                                                  \
static void red_##N(shmem_team_t team, int big) {                                       \
    int tn = shmem_team_n_pes(team), tr = shmem_team_my_pe(team);                       \
    T *src = shmem_malloc(MAXR * sizeof(T));                                            \
    T *dst = shmem_malloc(MAXR * sizeof(T));                                            \
    T *psrc = malloc(MAXR * sizeof(T)), *pout = malloc(MAXR * sizeof(T));               \
    CHECK(psrc != NULL && pout != NULL, "malloc");                                      \
    long counts[8]; int nc = 0;                                                         \
    for (int i = 0; i < 6; i++) counts[nc++] = counts_small[i];                         \
    if (big) { counts[nc++] = 65536; counts[nc++] = MAXR; }                              \
    if (tr < 0) goto out;                                                                \
    for (int ci = 0; ci < nc; ci++) {                                                   \
        long n = counts[ci];                                                            \
        for (int op = 0; op < 5; op++) {                                                \
            int in_place = op == 4;                                                     \
            for (long k = 0; k < n; k++)                                                \
                psrc[k] = (T)(op == 3 ? PV(tr, k) : SV(tr, k));                         \
            SYM_PUT(src, psrc, n * sizeof(T));                                          \
            T *out = in_place ? src : dst;                                              \
            int rc;                                                                     \
            switch (op) {                                                               \
            case 0: rc = shmem_##N##_sum_reduce(team, out, src, n); break;              \
            case 1: rc = shmem_##N##_max_reduce(team, out, src, n); break;              \
            case 2: rc = shmem_##N##_min_reduce(team, out, src, n); break;              \
            case 3: rc = shmem_##N##_prod_reduce(team, out, src, n); break;             \
            default: rc = shmem_##N##_sum_reduce(team, out, out, n); break;             \
            }                                                                           \
            CHECK(rc == 0, #N " reduce rc %d", rc);                                     \
            SYM_GET(pout, out, n * sizeof(T));                                          \
            for (long k = 0; k < n; k++) {                                              \
                T want = (T)(op == 3 ? PV(0, k) : SV(0, k));                            \
                for (int r = 1; r < tn; r++) {                                          \
                    T v = (T)(op == 3 ? PV(r, k) : SV(r, k));                           \
                    if (op == 0 || op == 4) want = (T)(want + v);                       \
                    else if (op == 1) want = v > want ? v : want;                       \
                    else if (op == 2) want = v < want ? v : want;                       \
                    else want = (T)(want * v);                                          \
                }                                                                       \
                if (pout[k] != want) {                                                  \
                    CHECK(0, #N " op %d n=%ld element %ld: got %g want %g (team of %d)", \
                          op, n, k, (double)pout[k], (double)want, tn);                 \
                }                                                                       \
            }                                                                           \
        }                                                                               \
    }                                                                                   \
out:                                                                                    \
    shmem_barrier_all();                                                                \
    free(pout); free(psrc);                                                             \
    shmem_free(dst); shmem_free(src);                                                   \
}

#define BIT_TEST(T, N)                                                                  \
static void bit_##N(shmem_team_t team) {                                                \
    int tn = shmem_team_n_pes(team), tr = shmem_team_my_pe(team);                       \
    T *src = shmem_malloc(5000 * sizeof(T));                                            \
    T *dst = shmem_malloc(5000 * sizeof(T));                                            \
    T *psrc = malloc(5000 * sizeof(T)), *pout = malloc(5000 * sizeof(T));               \
    CHECK(psrc != NULL && pout != NULL, "malloc");                                      \
    if (tr >= 0)                                                                        \
    for (int ci = 0; ci < 6; ci++) {                                                    \
        long n = counts_small[ci];                                                      \
        for (int op = 0; op < 3; op++) {                                                \
            for (long k = 0; k < n; k++) psrc[k] = (T)BV(tr, k);                         \
            SYM_PUT(src, psrc, n * sizeof(T));                                          \
            int rc = op == 0 ? shmem_##N##_and_reduce(team, dst, src, n)                \
                   : op == 1 ? shmem_##N##_or_reduce(team, dst, src, n)                 \
                             : shmem_##N##_xor_reduce(team, src, src, n);               \
            CHECK(rc == 0, #N " bit reduce rc");                                        \
            T *out = op == 2 ? src : dst;                                               \
            SYM_GET(pout, out, n * sizeof(T));                                          \
            for (long k = 0; k < n; k++) {                                              \
                T want = (T)BV(0, k);                                                   \
                for (int r = 1; r < tn; r++) {                                          \
                    T v = (T)BV(r, k);                                                  \
                    want = op == 0 ? (T)(want & v) : op == 1 ? (T)(want | v) : (T)(want ^ v); \
                }                                                                       \
                CHECK(pout[k] == want, #N " bit op %d n=%ld element %ld", op, n, k);    \
            }                                                                           \
        }                                                                               \
    }                                                                                   \
    shmem_barrier_all();                                                                \
    free(pout); free(psrc);                                                             \
    shmem_free(dst); shmem_free(src);                                                   \
}

/* Data-movement collectives on one type. */
#define MOVE_TEST(T, N)                                                                 \
static void move_##N(shmem_team_t team) {                                               \
    int tn = shmem_team_n_pes(team), tr = shmem_team_my_pe(team);                       \
    const long M = 3000;                                                                \
    T *src = shmem_malloc(M * 4 * sizeof(T));                                           \
    T *dst = shmem_malloc(M * 4 * 4 * sizeof(T));                                       \
    T *psrc = malloc(M * 4 * sizeof(T)), *pdst = malloc(M * 4 * 4 * sizeof(T));         \
    CHECK(psrc != NULL && pdst != NULL, "malloc");                                      \
    if (tr >= 0) {                                                                      \
        for (long n = 1; n <= M; n = n * 7 + 1) {                                       \
            /* broadcast from every root, back to back on the same buffers */           \
            for (int root = 0; root < tn; root++) {                                     \
                for (long k = 0; k < n; k++) psrc[k] = (T)((root * 3 + k) % 100);       \
                SYM_PUT(src, psrc, n * sizeof(T));                                      \
                CHECK(shmem_##N##_broadcast(team, dst, src, n, root) == 0, "bcast rc"); \
                SYM_GET(pdst, dst, n * sizeof(T));                                      \
                for (long k = 0; k < n; k++)                                            \
                    CHECK(pdst[k] == (T)((root * 3 + k) % 100), #N " broadcast root %d n=%ld k=%ld", root, n, k); \
            }                                                                           \
            /* fcollect */                                                              \
            for (long k = 0; k < n; k++) psrc[k] = (T)((tr * 5 + k) % 100);             \
            SYM_PUT(src, psrc, n * sizeof(T));                                          \
            CHECK(shmem_##N##_fcollect(team, dst, src, n) == 0, "fcollect rc");         \
            SYM_GET(pdst, dst, tn * n * sizeof(T));                                     \
            for (int r = 0; r < tn; r++)                                                \
                for (long k = 0; k < n; k++)                                            \
                    CHECK(pdst[r * n + k] == (T)((r * 5 + k) % 100), #N " fcollect n=%ld r=%d k=%ld", n, r, k); \
            /* collect: member r contributes n + r elements */                          \
            for (long k = 0; k < n + tr; k++) psrc[k] = (T)((tr * 7 + k) % 100);        \
            SYM_PUT(src, psrc, (n + tr) * sizeof(T));                                   \
            CHECK(shmem_##N##_collect(team, dst, src, n + tr) == 0, "collect rc");      \
            SYM_GET(pdst, dst, (tn * n + (long)tn * (tn - 1) / 2) * sizeof(T));         \
            long pos = 0;                                                               \
            for (int r = 0; r < tn; r++)                                                \
                for (long k = 0; k < n + r; k++, pos++)                                 \
                    CHECK(pdst[pos] == (T)((r * 7 + k) % 100), #N " collect n=%ld r=%d k=%ld", n, r, k); \
            /* alltoall: block j of my source goes to member j */                       \
            for (int j = 0; j < tn; j++)                                                \
                for (long k = 0; k < n; k++) psrc[j * n + k] = (T)((tr * 13 + j * 3 + k) % 100); \
            SYM_PUT(src, psrc, tn * n * sizeof(T));                                     \
            CHECK(shmem_##N##_alltoall(team, dst, src, n) == 0, "alltoall rc");         \
            SYM_GET(pdst, dst, tn * n * sizeof(T));                                     \
            for (int r = 0; r < tn; r++)                                                \
                for (long k = 0; k < n; k++)                                            \
                    CHECK(pdst[r * n + k] == (T)((r * 13 + tr * 3 + k) % 100), #N " alltoall n=%ld r=%d k=%ld", n, r, k); \
            /* alltoalls with dst stride 3, src stride 2 */                             \
            if (n <= M / 2) {                                                           \
                for (long k = 0; k < 2 * n * tn; k++) psrc[k] = (T)((tr * 17 + k) % 100); \
                SYM_PUT(src, psrc, 2 * n * tn * sizeof(T));                             \
                for (long k = 0; k < 3 * n * tn; k++) pdst[k] = (T)0;                   \
                SYM_PUT(dst, pdst, 3 * n * tn * sizeof(T));                             \
                shmem_team_sync(team);                                                  \
                CHECK(shmem_##N##_alltoalls(team, dst, src, 3, 2, n) == 0, "alltoalls rc"); \
                SYM_GET(pdst, dst, 3 * n * tn * sizeof(T));                             \
                for (int r = 0; r < tn; r++)                                            \
                    for (long k = 0; k < n; k++) {                                      \
                        long si = (tr * n + k) * 2;                                     \
                        CHECK(pdst[(r * n + k) * 3] == (T)((r * 17 + si) % 100),        \
                              #N " alltoalls n=%ld r=%d k=%ld", n, r, k);               \
                        CHECK(pdst[(r * n + k) * 3 + 1] == (T)0, #N " alltoalls hole"); \
                    }                                                                   \
            }                                                                           \
            /* scans */                                                                 \
            for (long k = 0; k < n; k++) psrc[k] = (T)((tr + 1) * (k % 3 + 1));        \
            SYM_PUT(src, psrc, n * sizeof(T));                                          \
            CHECK(shmemx_##N##_sum_inscan(team, dst, src, n) == 0, "inscan rc");        \
            SYM_GET(pdst, dst, n * sizeof(T));                                          \
            for (long k = 0; k < n; k++) {                                              \
                T want = 0;                                                             \
                for (int r = 0; r <= tr; r++) want = (T)(want + (r + 1) * (k % 3 + 1)); \
                CHECK(pdst[k] == want, #N " inscan n=%ld k=%ld", n, k);                 \
            }                                                                           \
            CHECK(shmemx_##N##_sum_exscan(team, src, src, n) == 0, "exscan rc");        \
            SYM_GET(psrc, src, n * sizeof(T));                                          \
            for (long k = 0; k < n; k++) {                                              \
                T want = 0;                                                             \
                for (int r = 0; r < tr; r++) want = (T)(want + (r + 1) * (k % 3 + 1));  \
                CHECK(psrc[k] == want, #N " exscan (in place) n=%ld k=%ld", n, k);      \
            }                                                                           \
        }                                                                               \
    }                                                                                   \
    shmem_barrier_all();                                                                \
    free(pdst); free(psrc);                                                             \
    shmem_free(dst); shmem_free(src);                                                   \
}

#define ALL_TYPES(X)                                                                     \
    X(float, float) X(double, double) X(char, char) X(signed char, schar)               \
    X(short, short) X(int, int) X(long, long) X(long long, longlong)                    \
    X(unsigned char, uchar) X(unsigned short, ushort) X(unsigned int, uint)             \
    X(unsigned long, ulong) X(unsigned long long, ulonglong)                            \
    X(int8_t, int8) X(int16_t, int16) X(int32_t, int32) X(int64_t, int64)               \
    X(uint8_t, uint8) X(uint16_t, uint16) X(uint32_t, uint32) X(uint64_t, uint64)       \
    X(size_t, size) X(ptrdiff_t, ptrdiff)
#define BIT_TYPES(X)                                                                     \
    X(signed char, schar) X(unsigned char, uchar) X(unsigned short, ushort)              \
    X(unsigned int, uint) X(unsigned long, ulong) X(unsigned long long, ulonglong)       \
    X(int8_t, int8) X(int16_t, int16) X(int32_t, int32) X(int64_t, int64)               \
    X(uint8_t, uint8) X(uint16_t, uint16) X(uint32_t, uint32) X(uint64_t, uint64)       \
    X(size_t, size)
ALL_TYPES(RED_TEST)
BIT_TYPES(BIT_TEST)
MOVE_TEST(int, int)
MOVE_TEST(double, double)
MOVE_TEST(unsigned char, uchar)

/* The largest counts (64 Ki and 1 Mi elements, where reductions work in
 * chunks) for one C type of each size, signedness and kind: the library
 * reduces by those (the other types are their aliases there), and the
 * smaller counts still run for every type. */
static int big_type(const char *name) {
    static const char *const list[] = {"char", "uchar", "short", "ushort", "int", "uint",
                                       "long", "ulong", "float", "double"};
    for (size_t i = 0; i < sizeof list / sizeof list[0]; i++)
        if (strcmp(name, list[i]) == 0) return 1;
    return 0;
}

static void run_all(shmem_team_t team, int big) {
#define R(T, N) red_##N(team, big && big_type(#N));
    ALL_TYPES(R)
#define B(T, N) bit_##N(team);
    BIT_TYPES(B)
    move_int(team);
    move_double(team);
    move_uchar(team);
}

static void teams(void) {
    CHECK(shmem_team_my_pe(SHMEM_TEAM_WORLD) == me && shmem_team_n_pes(SHMEM_TEAM_WORLD) == npes, "world");
    {
        /* SHARED and NODE: exactly the PEs this one can reach by load/store */
        static long probe;
        int reachable = 0;
        for (int pe = 0; pe < npes; pe++) {
            int shared = SHARES_MEMORY(pe);
            CHECK((shmem_ptr(&probe, pe) != NULL) == shared, "shmem_ptr to PE %d vs TEAM_SHARED membership", pe);
            reachable += shared;
        }
        CHECK(shmem_team_n_pes(SHMEM_TEAM_SHARED) == reachable && shmem_team_n_pes(SHMEMX_TEAM_NODE) == reachable,
              "shared/node size %d, %d PEs reachable", shmem_team_n_pes(SHMEM_TEAM_SHARED), reachable);
        CHECK(shmem_team_translate_pe(SHMEM_TEAM_SHARED, shmem_team_my_pe(SHMEM_TEAM_SHARED), SHMEM_TEAM_WORLD) == me,
              "my rank in TEAM_SHARED");
    }
    CHECK(shmem_team_my_pe(SHMEM_TEAM_INVALID) == -1 && shmem_team_n_pes(SHMEM_TEAM_INVALID) == -1, "invalid");

    /* odd PEs: start 1, stride 2 */
    shmem_team_t odd;
    shmem_team_config_t cfg = {.num_contexts = 3};
    int rc = shmem_team_split_strided(SHMEM_TEAM_WORLD, npes > 1 ? 1 : 0, 2, npes > 1 ? npes / 2 : 1, &cfg,
                                      SHMEM_TEAM_NUM_CONTEXTS, &odd);
    CHECK(rc == 0, "split_strided rc %d", rc);
    int is_member = npes > 1 ? (me % 2 == 1) : 1;
    if (is_member) {
        int want_rank = npes > 1 ? me / 2 : 0;
        CHECK(shmem_team_my_pe(odd) == want_rank, "odd team rank %d", shmem_team_my_pe(odd));
        CHECK(shmem_team_translate_pe(odd, shmem_team_my_pe(odd), SHMEM_TEAM_WORLD) == me, "translate to world");
        shmem_team_config_t got = {0};
        CHECK(shmem_team_get_config(odd, SHMEM_TEAM_NUM_CONTEXTS, &got) == 0 && got.num_contexts == 3, "get_config");
        long *x = shmem_malloc(8);
        CHECK((shmem_team_ptr(odd, x, 0) != NULL) == SHARES_MEMORY(shmem_team_translate_pe(odd, 0, SHMEM_TEAM_WORLD)),
              "team_ptr");
        shmem_free(x);
    } else {
        CHECK(odd == SHMEM_TEAM_INVALID, "non-member gets TEAM_INVALID");
        long *x = shmem_malloc(8);
        shmem_free(x);
    }
    CHECK(shmem_team_translate_pe(SHMEM_TEAM_WORLD, me, odd) == (is_member ? shmem_team_my_pe(odd) : -1), "translate");
    run_all(odd, 0);
    if (is_member) shmem_team_destroy(odd);

    /* reversed world: start n-1, stride -1 */
    shmem_team_t rev;
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, npes - 1, -1, npes, NULL, 0, &rev) == 0, "negative stride");
    CHECK(shmem_team_my_pe(rev) == npes - 1 - me, "reversed rank");
    run_all(rev, 0);

    /* stride 0, size 1: a team of PE 0 */
    shmem_team_t solo;
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 0, 1, NULL, 0, &solo) == 0, "stride 0");
    CHECK((me == 0) == (solo != SHMEM_TEAM_INVALID), "stride-0 membership");
    if (solo != SHMEM_TEAM_INVALID) {
        CHECK(shmem_team_n_pes(solo) == 1, "solo size");
        shmem_team_destroy(solo);
    }

    /* 2-D: rows of 2 */
    shmem_team_t xt, yt;
    CHECK(shmem_team_split_2d(rev, 2, NULL, 0, &xt, NULL, 0, &yt) == 0, "split_2d");
    int rr = npes - 1 - me;
    CHECK(shmem_team_my_pe(xt) == rr % 2 && shmem_team_my_pe(yt) == rr / 2, "2d ranks");
    CHECK(shmem_team_n_pes(yt) == (npes - rr % 2 + 1) / 2, "y size");
    run_all(xt, 0);
    run_all(yt, 0);
    shmem_team_destroy(xt);
    shmem_team_destroy(yt);
    shmem_team_destroy(rev);

    /* slots are reused: hundreds of create/destroy cycles */
    for (int i = 0; i < 300; i++) {
        shmem_team_t t;
        CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, npes, NULL, 0, &t) == 0, "cycle %d", i);
        long one = 1, sum = 0;
        long *s = shmem_malloc(2 * sizeof(long));
        SYM_STORE(s, one);
        rc = shmem_long_sum_reduce(t, s + 1, s, 1);
        sum = SYM_LOAD(s + 1);
        CHECK(rc == 0 && sum == npes, "cycle %d sum %ld", i, sum);
        shmem_free(s);
        shmem_team_destroy(t);
    }
    /* every team slot in use: the split fails on every PE (status non-zero,
       TEAM_INVALID, a warning naming the cause); destroying frees them */
    {
        enum { MAX_TEAMS = 128 };
        shmem_team_t made[MAX_TEAMS];
        int n = 0, split_rc = 0;
        while (n < MAX_TEAMS) {
            shmem_team_t t;
            split_rc = shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, npes, NULL, 0, &t);
            if (split_rc != 0) {
                CHECK(t == SHMEM_TEAM_INVALID, "a failed split returns TEAM_INVALID");
                break;
            }
            made[n++] = t;
        }
        CHECK(split_rc != 0 && n > 8, "slots run out after %d teams", n);
        for (int i = 0; i < n; i++) shmem_team_destroy(made[i]);
        shmem_team_t t;
        CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, npes, NULL, 0, &t) == 0, "a split after the destroys");
        shmem_team_destroy(t);
    }
    /* collectives on TEAM_INVALID return non-zero */
    CHECK(shmem_team_sync(SHMEM_TEAM_INVALID) != 0, "team_sync invalid");
}

int main(void) {
    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();
    teams();
    run_all(SHMEM_TEAM_WORLD, 1);
    shmem_finalize();
    return 0;
}
