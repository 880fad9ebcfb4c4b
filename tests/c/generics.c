/* Every C11 generic selection OpenSHMEM 1.5 lists, written from the
 * specification's type tables (not from this library's generator): a
 * missing selection is a build error. Each call also runs, on the right
 * neighbour, with a few exact results checked; the fixed-width types are the
 * standard ones they alias on LP64 Linux, so their selections are these.
 *   RMA and data collectives: Table 5; AMOs: Tables 6 (standard), 7
 *   (extended), 8 (bitwise); reductions: Table 10; point-to-point
 *   synchronization: Table 11; the deprecated generics of 1.5's
 *   deprecation list. */
#define _POSIX_C_SOURCE 200809L
#include <shmem.h>
#include <complex.h>
#include <stdint.h>
#include <string.h>
#include "test_util.h"

static int me, npes, right, left;
static uint64_t sig;

#if defined(__x86_64__)
#define LONGDOUBLE(X) X(long double, ld)
#else
#define LONGDOUBLE(X)
#endif

/* Table 5 */
#define RMA_TYPES(X)                                                                              \
    X(float, f) X(double, d) LONGDOUBLE(X) X(char, c) X(signed char, sc) X(short, s) X(int, i)     \
    X(long, l) X(long long, ll) X(unsigned char, uc) X(unsigned short, us) X(unsigned int, ui)     \
    X(unsigned long, ul) X(unsigned long long, ull)

#define RMA_FN(T, N)                                                                              \
    static T N##_a[64], N##_b[64];                                                                \
    static void rma_##N(void) {                                                                   \
        T got[64];                                                                                \
        for (int i = 0; i < 4; i++) N##_b[i] = (T)(me * 4 + i + 1);                               \
        shmem_barrier_all();                                                                      \
        shmem_put(N##_a, N##_b, 4, right);                                                        \
        shmem_barrier_all();                                                                      \
        for (int i = 0; i < 4; i++) CHECK(N##_a[i] == (T)(left * 4 + i + 1), #T " put [%d]", i);  \
        shmem_barrier_all();                                                                      \
        shmem_put(SHMEM_CTX_DEFAULT, N##_a, N##_b, 4, right);                                     \
        shmem_p(&N##_a[4], (T)7, right);                                                          \
        shmem_p(SHMEM_CTX_DEFAULT, &N##_a[5], (T)8, right);                                       \
        shmem_iput(&N##_a[6], N##_b, 2, 1, 2, right);                                            \
        shmem_iput(SHMEM_CTX_DEFAULT, &N##_a[7], N##_b, 2, 1, 2, right);                          \
        shmem_put_nbi(&N##_a[12], N##_b, 2, right);                                               \
        shmem_put_nbi(SHMEM_CTX_DEFAULT, &N##_a[14], N##_b, 2, right);                            \
        shmem_put_signal(&N##_a[16], N##_b, 2, &sig, 1, SHMEM_SIGNAL_ADD, right);                  \
        shmem_put_signal(SHMEM_CTX_DEFAULT, &N##_a[18], N##_b, 2, &sig, 1, SHMEM_SIGNAL_ADD, right); \
        shmem_put_signal_nbi(&N##_a[20], N##_b, 2, &sig, 1, SHMEM_SIGNAL_ADD, right);              \
        shmem_put_signal_nbi(SHMEM_CTX_DEFAULT, &N##_a[22], N##_b, 2, &sig, 1, SHMEM_SIGNAL_ADD, right); \
        shmem_quiet();                                                                            \
        shmem_barrier_all();                                                                      \
        CHECK(shmem_g(&N##_a[4], right) == (T)7 && shmem_g(SHMEM_CTX_DEFAULT, &N##_a[5], right) == (T)8, #T " g"); \
        CHECK(N##_a[6] == (T)(left * 4 + 1) && N##_a[9] == (T)(left * 4 + 2), #T " iput");         \
        CHECK(N##_a[15] == (T)(left * 4 + 2) && N##_a[23] == (T)(left * 4 + 2), #T " nbi / signal"); \
        shmem_get(got, N##_b, 2, right);                                                          \
        shmem_get(SHMEM_CTX_DEFAULT, got + 2, N##_b, 2, right);                                   \
        shmem_iget(got + 4, N##_b, 1, 2, 2, right);                                               \
        shmem_iget(SHMEM_CTX_DEFAULT, got + 6, N##_b, 1, 2, 2, right);                            \
        shmem_get_nbi(got + 8, N##_b, 1, right);                                                  \
        shmem_get_nbi(SHMEM_CTX_DEFAULT, got + 9, N##_b + 3, 1, right);                           \
        shmem_quiet();                                                                            \
        CHECK(got[1] == (T)(right * 4 + 2) && got[3] == got[1] && got[5] == (T)(right * 4 + 3) && \
                  got[7] == got[5] && got[8] == (T)(right * 4 + 1) && got[9] == (T)(right * 4 + 4), \
              #T " get forms");                                                                   \
        /* data collectives */                                                                    \
        CHECK(shmem_broadcast(SHMEM_TEAM_WORLD, N##_a, N##_b, 4, 0) == 0 && N##_a[3] == (T)4, #T " broadcast"); \
        CHECK(shmem_fcollect(SHMEM_TEAM_WORLD, N##_a, N##_b, 2) == 0 && N##_a[2 * npes - 1] == (T)((npes - 1) * 4 + 2), \
              #T " fcollect");                                                                    \
        CHECK(shmem_collect(SHMEM_TEAM_WORLD, N##_a, N##_b, 1) == 0 && N##_a[npes - 1] == (T)((npes - 1) * 4 + 1), \
              #T " collect");                                                                     \
        for (int i = 0; i < npes; i++) N##_b[i] = (T)(me * 8 + i);                                \
        shmem_barrier_all();                                                                      \
        CHECK(shmem_alltoall(SHMEM_TEAM_WORLD, N##_a, N##_b, 1) == 0 && N##_a[npes - 1] == (T)((npes - 1) * 8 + me), \
              #T " alltoall");                                                                    \
        CHECK(shmem_alltoalls(SHMEM_TEAM_WORLD, N##_a, N##_b, 1, 1, 1) == 0 && N##_a[0] == (T)me, #T " alltoalls"); \
        shmem_barrier_all();                                                                      \
    }
RMA_TYPES(RMA_FN)

/* Table 7 (extended AMOs): fetch, set, swap */
#define EXT_TYPES(X)                                                                              \
    X(float, f) X(double, d) X(int, i) X(long, l) X(long long, ll) X(unsigned int, ui)             \
    X(unsigned long, ul) X(unsigned long long, ull)
#define EXT_FN(T, N)                                                                              \
    static T N##_x;                                                                               \
    static void ext_##N(void) {                                                                   \
        shmem_barrier_all();                                                                      \
        shmem_atomic_set(&N##_x, (T)3, right);                                                    \
        shmem_atomic_set(SHMEM_CTX_DEFAULT, &N##_x, (T)4, right);                                 \
        T a = shmem_atomic_fetch(&N##_x, right), b = shmem_atomic_fetch(SHMEM_CTX_DEFAULT, &N##_x, right); \
        T c = shmem_atomic_swap(&N##_x, (T)5, right), d = shmem_atomic_swap(SHMEM_CTX_DEFAULT, &N##_x, (T)6, right); \
        T e = 0, f = 0, g = 0, h = 0;                                                             \
        shmem_atomic_fetch_nbi(&e, &N##_x, right);                                                \
        shmem_quiet();                                                                            \
        shmem_atomic_fetch_nbi(SHMEM_CTX_DEFAULT, &f, &N##_x, right);                             \
        shmem_quiet();                                                                            \
        shmem_atomic_swap_nbi(&g, &N##_x, (T)7, right);                                           \
        shmem_quiet();                                                                            \
        shmem_atomic_swap_nbi(SHMEM_CTX_DEFAULT, &h, &N##_x, (T)8, right);                        \
        shmem_quiet();                                                                            \
        CHECK(a == (T)4 && b == (T)4 && c == (T)4 && d == (T)5 && e == (T)6 && f == (T)6 && g == (T)6 && h == (T)7, \
              #T " extended AMOs");                                                               \
        shmem_barrier_all();                                                                      \
        CHECK(N##_x == (T)8, #T " extended AMO final");                                           \
    }
EXT_TYPES(EXT_FN)

/* Table 6 (standard AMOs): compare_swap, fetch_inc, inc, fetch_add, add */
#define STD_TYPES(X)                                                                              \
    X(int, i) X(long, l) X(long long, ll) X(unsigned int, ui) X(unsigned long, ul) X(unsigned long long, ull)
#define STD_FN(T, N)                                                                              \
    static T N##_y;                                                                               \
    static void std_##N(void) {                                                                   \
        N##_y = 0;                                                                                \
        shmem_barrier_all();                                                                      \
        shmem_atomic_inc(&N##_y, right);                                                          \
        shmem_atomic_inc(SHMEM_CTX_DEFAULT, &N##_y, right);                                       \
        shmem_atomic_add(&N##_y, (T)2, right);                                                    \
        shmem_atomic_add(SHMEM_CTX_DEFAULT, &N##_y, (T)2, right);                                 \
        T a = shmem_atomic_fetch_inc(&N##_y, right), b = shmem_atomic_fetch_inc(SHMEM_CTX_DEFAULT, &N##_y, right); \
        T c = shmem_atomic_fetch_add(&N##_y, (T)10, right);                                       \
        T d = shmem_atomic_fetch_add(SHMEM_CTX_DEFAULT, &N##_y, (T)10, right);                    \
        T e = shmem_atomic_compare_swap(&N##_y, (T)28, (T)30, right);                             \
        T f = shmem_atomic_compare_swap(SHMEM_CTX_DEFAULT, &N##_y, (T)99, (T)0, right);           \
        T g = 0, h = 0, k = 0, m = 0, n = 0, o = 0;                                               \
        shmem_atomic_fetch_inc_nbi(&g, &N##_y, right);                                            \
        shmem_quiet();                                                                            \
        shmem_atomic_fetch_inc_nbi(SHMEM_CTX_DEFAULT, &h, &N##_y, right);                         \
        shmem_quiet();                                                                            \
        shmem_atomic_fetch_add_nbi(&k, &N##_y, (T)3, right);                                      \
        shmem_quiet();                                                                            \
        shmem_atomic_fetch_add_nbi(SHMEM_CTX_DEFAULT, &m, &N##_y, (T)3, right);                   \
        shmem_quiet();                                                                            \
        shmem_atomic_compare_swap_nbi(&n, &N##_y, (T)38, (T)1, right);                            \
        shmem_quiet();                                                                            \
        shmem_atomic_compare_swap_nbi(SHMEM_CTX_DEFAULT, &o, &N##_y, (T)1, (T)2, right);          \
        shmem_quiet();                                                                            \
        CHECK(a == 6 && b == 7 && c == 8 && d == 18 && e == 28 && f == 30 && g == 30 && h == 31 && k == 32 && \
                  m == 35 && n == 38 && o == 1,                                                   \
              #T " standard AMOs");                                                               \
        shmem_barrier_all();                                                                      \
        CHECK(N##_y == 2, #T " standard AMO final");                                              \
    }
STD_TYPES(STD_FN)

/* Table 8 (bitwise AMOs): unsigned int, unsigned long, unsigned long long,
 * int32_t (int), int64_t (long), uint32_t, uint64_t */
#define BIT_TYPES(X) X(unsigned int, ui) X(unsigned long, ul) X(unsigned long long, ull) X(int, i) X(long, l)
#define BIT_FN(T, N)                                                                              \
    static T N##_z;                                                                               \
    static void bit_##N(void) {                                                                   \
        N##_z = (T)0x0F;                                                                          \
        shmem_barrier_all();                                                                      \
        shmem_atomic_or(&N##_z, (T)0x30, right);                                                  \
        shmem_atomic_or(SHMEM_CTX_DEFAULT, &N##_z, (T)0x40, right);                               \
        shmem_atomic_and(&N##_z, (T)0x7E, right);                                                 \
        shmem_atomic_and(SHMEM_CTX_DEFAULT, &N##_z, (T)0x7C, right);                              \
        shmem_atomic_xor(&N##_z, (T)0x01, right);                                                 \
        shmem_atomic_xor(SHMEM_CTX_DEFAULT, &N##_z, (T)0x02, right);                              \
        T a = shmem_atomic_fetch_or(&N##_z, (T)0, right), b = shmem_atomic_fetch_or(SHMEM_CTX_DEFAULT, &N##_z, (T)0, right); \
        T c = shmem_atomic_fetch_and(&N##_z, (T)~0, right);                                       \
        T d = shmem_atomic_fetch_and(SHMEM_CTX_DEFAULT, &N##_z, (T)~0, right);                    \
        T e = shmem_atomic_fetch_xor(&N##_z, (T)0, right);                                        \
        T f = shmem_atomic_fetch_xor(SHMEM_CTX_DEFAULT, &N##_z, (T)0x80, right);                  \
        T g = 0, h = 0, k = 0, m = 0, n = 0, o = 0;                                               \
        shmem_atomic_fetch_and_nbi(&g, &N##_z, (T)~0, right);                                     \
        shmem_atomic_fetch_and_nbi(SHMEM_CTX_DEFAULT, &h, &N##_z, (T)~0, right);                  \
        shmem_atomic_fetch_or_nbi(&k, &N##_z, (T)0, right);                                       \
        shmem_atomic_fetch_or_nbi(SHMEM_CTX_DEFAULT, &m, &N##_z, (T)0, right);                    \
        shmem_atomic_fetch_xor_nbi(&n, &N##_z, (T)0, right);                                      \
        shmem_atomic_fetch_xor_nbi(SHMEM_CTX_DEFAULT, &o, &N##_z, (T)0, right);                   \
        shmem_quiet();                                                                            \
        CHECK(a == (T)0x7F && b == a && c == a && d == a && e == a && f == a && g == (T)0xFF && h == g && k == g && \
                  m == g && n == g && o == g,                                                     \
              #T " bitwise AMOs");                                                                \
        shmem_barrier_all();                                                                      \
    }
BIT_TYPES(BIT_FN)

/* Table 10: bitwise reductions (unsigned char, unsigned short, unsigned
 * int, unsigned long, unsigned long long and the fixed-width types: signed
 * char, short, int, long) */
#define REDBIT_TYPES(X)                                                                           \
    X(unsigned char, uc) X(unsigned short, us) X(unsigned int, ui) X(unsigned long, ul)            \
    X(unsigned long long, ull) X(signed char, sc) X(short, s) X(int, i) X(long, l)
#define REDBIT_FN(T, N)                                                                           \
    static T N##_rs[2], N##_rd[2];                                                                \
    static void redbit_##N(void) {                                                                \
        N##_rs[0] = (T)(1 << me);                                                                 \
        N##_rs[1] = (T)(0x10 | (1 << me));                                                       \
        shmem_barrier_all();                                                                      \
        T all = (T)((1 << npes) - 1);                                                             \
        CHECK(shmem_or_reduce(SHMEM_TEAM_WORLD, N##_rd, N##_rs, 2) == 0 && N##_rd[0] == all, #T " or_reduce"); \
        CHECK(shmem_and_reduce(SHMEM_TEAM_WORLD, N##_rd, N##_rs, 2) == 0 && N##_rd[1] == (T)(npes == 1 ? 0x11 : 0x10), \
              #T " and_reduce");                                                                  \
        CHECK(shmem_xor_reduce(SHMEM_TEAM_WORLD, N##_rd, N##_rs, 2) == 0 && N##_rd[0] == all, #T " xor_reduce"); \
    }
REDBIT_TYPES(REDBIT_FN)

/* Table 10: max, min, sum, prod */
#define ARITH_TYPES(X)                                                                            \
    X(char, c) X(signed char, sc) X(short, s) X(int, i) X(long, l) X(long long, ll)                \
    X(unsigned char, uc) X(unsigned short, us) X(unsigned int, ui) X(unsigned long, ul)            \
    X(unsigned long long, ull) X(float, f) X(double, d) LONGDOUBLE(X)
#define ARITH_FN(T, N)                                                                            \
    static T N##_as[2], N##_ad[2];                                                                \
    static void arith_##N(void) {                                                                 \
        N##_as[0] = (T)(me + 1);                                                                  \
        N##_as[1] = (T)2;                                                                         \
        shmem_barrier_all();                                                                      \
        CHECK(shmem_max_reduce(SHMEM_TEAM_WORLD, N##_ad, N##_as, 2) == 0 && N##_ad[0] == (T)npes, #T " max"); \
        CHECK(shmem_min_reduce(SHMEM_TEAM_WORLD, N##_ad, N##_as, 2) == 0 && N##_ad[0] == (T)1, #T " min"); \
        CHECK(shmem_sum_reduce(SHMEM_TEAM_WORLD, N##_ad, N##_as, 2) == 0 && N##_ad[0] == (T)(npes * (npes + 1) / 2), \
              #T " sum");                                                                         \
        CHECK(shmem_prod_reduce(SHMEM_TEAM_WORLD, N##_ad, N##_as, 2) == 0 && N##_ad[1] == (T)(1 << npes), #T " prod"); \
    }
ARITH_TYPES(ARITH_FN)

/* Table 10: the complex types (sum, prod) */
static float _Complex cf_s, cf_d;
static double _Complex cd_s, cd_d;
static void complex_fn(void) {
    cf_s = 1.0f * I;
    cd_s = 2.0 * I;
    shmem_barrier_all();
    CHECK(shmem_sum_reduce(SHMEM_TEAM_WORLD, &cf_d, &cf_s, 1) == 0 && cimagf(cf_d) == npes, "complexf sum");
    CHECK(shmem_prod_reduce(SHMEM_TEAM_WORLD, &cd_d, &cd_s, 1) == 0, "complexd prod");
    /* (2i)^n: 2i, -4, -8i, 16 */
    const double re[] = {0, -4, 0, 16}, im[] = {2, 0, -8, 0};
    CHECK(creal(cd_d) == re[npes - 1] && cimag(cd_d) == im[npes - 1], "(2i)^%d", npes);
}

/* Table 11: point-to-point synchronization */
#define SYNC_TYPES(X)                                                                             \
    X(int, i) X(long, l) X(long long, ll) X(unsigned int, ui) X(unsigned long, ul) X(unsigned long long, ull)
#define SYNC_FN(T, N)                                                                             \
    static T N##_w[3];                                                                            \
    static void sync_##N(void) {                                                                  \
        for (int i = 0; i < 3; i++) N##_w[i] = (T)(i + 1);                                        \
        T want[3] = {1, 2, 3};                                                                    \
        size_t idx[3];                                                                            \
        int st[3] = {0, 0, 0};                                                                    \
        shmem_wait_until(&N##_w[0], SHMEM_CMP_EQ, (T)1);                                          \
        shmem_wait_until_all(N##_w, 3, st, SHMEM_CMP_GE, (T)1);                                   \
        CHECK(shmem_wait_until_any(N##_w, 3, NULL, SHMEM_CMP_EQ, (T)2) == 1, #T " wait_until_any"); \
        CHECK(shmem_wait_until_some(N##_w, 3, idx, NULL, SHMEM_CMP_GT, (T)1) == 2, #T " wait_until_some"); \
        shmem_wait_until_all_vector(N##_w, 3, NULL, SHMEM_CMP_EQ, want);                          \
        CHECK(shmem_wait_until_any_vector(N##_w, 3, NULL, SHMEM_CMP_EQ, want) < 3, #T " wait_until_any_vector"); \
        CHECK(shmem_wait_until_some_vector(N##_w, 3, idx, NULL, SHMEM_CMP_EQ, want) == 3, #T " some_vector"); \
        CHECK(shmem_test(&N##_w[2], SHMEM_CMP_EQ, (T)3) == 1, #T " test");                        \
        CHECK(shmem_test_all(N##_w, 3, NULL, SHMEM_CMP_LT, (T)4) == 1, #T " test_all");           \
        CHECK(shmem_test_any(N##_w, 3, NULL, SHMEM_CMP_GT, (T)3) == SIZE_MAX, #T " test_any");    \
        CHECK(shmem_test_some(N##_w, 3, idx, NULL, SHMEM_CMP_LE, (T)2) == 2, #T " test_some");    \
        CHECK(shmem_test_all_vector(N##_w, 3, NULL, SHMEM_CMP_EQ, want) == 1, #T " test_all_vector"); \
        CHECK(shmem_test_any_vector(N##_w, 3, NULL, SHMEM_CMP_NE, want) == SIZE_MAX, #T " test_any_vector"); \
        CHECK(shmem_test_some_vector(N##_w, 3, idx, NULL, SHMEM_CMP_GE, want) == 3, #T " test_some_vector"); \
    }
SYNC_TYPES(SYNC_FN)

/* Deprecated generics (OpenSHMEM 1.5's deprecation list) */
#define DEP_TYPES(X) X(int, i) X(long, l) X(long long, ll)
#define DEP_FN(T, N)                                                                              \
    static T N##_q;                                                                               \
    static void dep_##N(void) {                                                                   \
        N##_q = 0;                                                                                \
        shmem_barrier_all();                                                                      \
        shmem_add(&N##_q, (T)2, right);                                                           \
        shmem_inc(&N##_q, right);                                                                 \
        T a = shmem_fadd(&N##_q, (T)1, right), b = shmem_finc(&N##_q, right);                     \
        T c = shmem_cswap(&N##_q, (T)5, (T)9, right), d = shmem_swap(&N##_q, (T)1, right);        \
        shmem_set(&N##_q, (T)4, right);                                                           \
        T e = shmem_fetch(&N##_q, right);                                                         \
        CHECK(a == 3 && b == 4 && c == 5 && d == 9 && e == 4, #T " deprecated AMOs");             \
        shmem_barrier_all();                                                                      \
        shmem_wait(&N##_q, (T)0);                                                                 \
    }
DEP_TYPES(DEP_FN)

static float dep_f;
static double dep_d;
static short dep_s;

static void dep_rest(void) {
    shmem_barrier_all();
    shmem_set(&dep_f, 1.5f, right);
    shmem_set(&dep_d, 2.5, right);
    shmem_short_p(&dep_s, 3, right);
    CHECK(shmem_fetch(&dep_f, right) == 1.5f && shmem_swap(&dep_d, 0.5, right) == 2.5, "deprecated float AMOs");
    shmem_barrier_all();
    shmem_wait(&dep_s, (short)0);
    CHECK(dep_s == 3 && dep_d == 0.5, "deprecated short wait, double swap");
}

int main(void) {
    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();
    right = (me + 1) % npes;
    left = (me + npes - 1) % npes;
#define RUN_RMA(T, N) rma_##N();
#define RUN_EXT(T, N) ext_##N();
#define RUN_STD(T, N) std_##N();
#define RUN_BIT(T, N) bit_##N();
#define RUN_REDBIT(T, N) redbit_##N();
#define RUN_ARITH(T, N) arith_##N();
#define RUN_SYNC(T, N) sync_##N();
#define RUN_DEP(T, N) dep_##N();
    RMA_TYPES(RUN_RMA)
    EXT_TYPES(RUN_EXT)
    STD_TYPES(RUN_STD)
    BIT_TYPES(RUN_BIT)
    REDBIT_TYPES(RUN_REDBIT)
    ARITH_TYPES(RUN_ARITH)
    complex_fn();
    SYNC_TYPES(RUN_SYNC)
    DEP_TYPES(RUN_DEP)
    dep_rest();
    CHECK(shmem_sync(SHMEM_TEAM_WORLD) == 0, "shmem_sync(team)");
    shmem_finalize();
    return 0;
}
