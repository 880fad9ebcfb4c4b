/* OpenSHMEM 1.5 conformance items an independent test suite found missing:
 * context routines on SHMEM_CTX_INVALID, fair test_any/wait_until_any,
 * shmem_align below sizeof(void *), the int/long generic selections of the
 * bitwise AMOs and the short/int/long ones of the bitwise reductions,
 * shmem_sync(team), the deprecated AMO and wait generics, long double RMA
 * and reductions (x86-64), complex reductions, the deprecated short
 * wait_until/test, shmemx.h and shmem_pcontrol. Exact results at any PE
 * count; each PE works on its right neighbour. */
#define _POSIX_C_SOURCE 200809L
#include <shmem.h>
#include <shmemx.h>
#include <complex.h>
#include <float.h>
#include <stdint.h>
#include <string.h>
#include "test_util.h"

static int me, npes, right, left;

static void ctx_invalid(void) {
    /* "no operation is performed" (§9.5.2, §9.10) */
    shmem_ctx_fence(SHMEM_CTX_INVALID);
    shmem_ctx_quiet(SHMEM_CTX_INVALID);
    shmem_ctx_destroy(SHMEM_CTX_INVALID);
    shmem_team_t t = SHMEM_TEAM_WORLD;
    CHECK(shmem_ctx_get_team(SHMEM_CTX_INVALID, &t) != 0 && t == SHMEM_TEAM_INVALID, "ctx_get_team(INVALID)");
    /* a failed creation yields SHMEM_CTX_INVALID, which the program may
     * then destroy without checking */
    shmem_ctx_t bad;
    CHECK(shmem_team_create_ctx(SHMEM_TEAM_INVALID, 0, &bad) != 0 && bad == SHMEM_CTX_INVALID, "create on INVALID");
    shmem_ctx_quiet(bad);
    shmem_ctx_destroy(bad);
}

static void align_small(void) {
    for (size_t a = 1; a <= 4096; a *= 2) {
        unsigned char *p = shmem_align(a, 100);
        CHECK(p != NULL, "shmem_align(%zu, 100) returned NULL", a);
        CHECK((uintptr_t)p % a == 0 && (uintptr_t)p % sizeof(void *) == 0, "shmem_align(%zu): %p", a, (void *)p);
        unsigned char zero[100] = {0};
        SYM_PUT(p, zero, sizeof zero);
        shmem_barrier_all();
        unsigned char v = (unsigned char)(a + me);
        shmem_uchar_p(p + 99, v, right);
        shmem_barrier_all();
        CHECK(SYM_LOAD(p + 99) == (unsigned char)(a + left), "put into the aligned block");
        shmem_free(p);
    }
}

/* Every satisfied index comes back once in N calls (rotating order). */
#define ROUND(expr, n, what)                                                        \
    do {                                                                            \
        int seen_[16] = {0};                                                        \
        for (int k_ = 0; k_ < (n); k_++) {                                          \
            size_t i_ = (expr);                                                     \
            CHECK(i_ < 16 && !seen_[i_], "%s: call %d returned %zu again", what, k_, i_); \
            seen_[i_] = 1;                                                          \
        }                                                                           \
    } while (0)

static void fair_any(void) {
    enum { N = 7 };
    int *f = shmem_calloc(N, sizeof(int));
    int want[N];
    for (int i = 0; i < N; i++) want[i] = 1;
    SYM_PUT(f, want, sizeof want); /* every f[i] = 1 */
    ROUND(shmem_int_test_any(f, N, NULL, SHMEM_CMP_EQ, 1), N, "test_any");
    ROUND(shmem_int_wait_until_any(f, N, NULL, SHMEM_CMP_EQ, 1), N, "wait_until_any");
    ROUND(shmem_int_test_any_vector(f, N, NULL, SHMEM_CMP_EQ, want), N, "test_any_vector");
    ROUND(shmem_int_wait_until_any_vector(f, N, NULL, SHMEM_CMP_EQ, want), N, "wait_until_any_vector");
    ROUND(shmem_test_any(f, N, NULL, SHMEM_CMP_EQ, 1), N, "generic test_any");
    /* with a status mask: the 5 included satisfied elements, each once */
    int st[N] = {0, 1, 0, 0, 1, 0, 0};
    ROUND(shmem_int_test_any(f, N, st, SHMEM_CMP_EQ, 1), N - 2, "masked test_any");
    /* A loop until every index has been returned, the flags set by the
     * left neighbour: ends (at most 4 passes) only if no element starves. */
    long *slots = shmem_calloc(N, sizeof(long));
    shmem_barrier_all();
    for (int i = 0; i < N; i++) shmem_long_atomic_set(slots + i, 1, right);
    shmem_long_wait_until_all(slots, N, NULL, SHMEM_CMP_EQ, 1);
    int seen[N] = {0}, distinct = 0;
    for (int iter = 0; distinct < N && iter < 4 * N; iter++) {
        size_t i = shmem_long_wait_until_any(slots, N, NULL, SHMEM_CMP_EQ, 1);
        CHECK(i < N, "wait_until_any index %zu", i);
        if (!seen[i]++) distinct++;
    }
    CHECK(distinct == N, "wait_until_any returned %d distinct indices of %d", distinct, N);
    shmem_barrier_all();
    shmem_free(slots);
    shmem_free(f);
}

static int amo_i;
static long amo_l;

static void bitwise_amo_generics(void) {
    amo_i = 0xF0F0;
    amo_l = 0x0F0F0F0F0F0F0F0FL;
    shmem_barrier_all();
    int oi = shmem_atomic_fetch_and(&amo_i, 0xFF00, right);
    shmem_atomic_or(&amo_i, 0x000F, right);
    shmem_atomic_xor(&amo_i, 0x0101, right);
    int oi2 = shmem_atomic_fetch_or(&amo_i, 0, right);
    int oi3 = shmem_atomic_fetch_xor(&amo_i, 0, right);
    shmem_atomic_and(&amo_i, ~0, right);
    long ol = shmem_atomic_fetch_and(&amo_l, 0x00FF00FF00FF00FFL, right);
    shmem_atomic_or(SHMEM_CTX_DEFAULT, &amo_l, 0x1000000000000000L, right);
    long ol2 = shmem_atomic_fetch_xor(SHMEM_CTX_DEFAULT, &amo_l, 0x1L, right);
    int fi = 0;
    long fl = 0;
    shmem_atomic_fetch_and_nbi(&fi, &amo_i, ~0, right);
    shmem_atomic_fetch_or_nbi(&fl, &amo_l, 0, right);
    shmem_quiet();
    CHECK(oi == 0xF0F0 && oi2 == 0xF10E && oi3 == 0xF10E && fi == 0xF10E, "int bitwise AMOs %#x %#x %#x %#x", oi,
          oi2, oi3, fi);
    CHECK(ol == 0x0F0F0F0F0F0F0F0FL && ol2 == 0x100F000F000F000FL && fl == 0x100F000F000F000EL,
          "long bitwise AMOs %#lx %#lx %#lx", ol, ol2, fl);
    shmem_barrier_all();
    CHECK(amo_i == 0xF10E && amo_l == 0x100F000F000F000EL, "final values %#x %#lx", amo_i, amo_l);
}

static short rs_s[3], rd_s[3];
static int rs_i[3], rd_i[3];
static long rs_l[3], rd_l[3];

static void bitwise_reduce_generics(void) {
    long all = (1L << npes) - 1, x = (npes % 2) ? 0x100 : 0;
    for (int k = 0; k < 3; k++) {
        rs_s[k] = (short)((1 << me) | 0x100);
        rs_i[k] = (1 << me) | 0x100;
        rs_l[k] = (1L << me) | 0x100 | (long)k << 40;
    }
    shmem_barrier_all();
    CHECK(shmem_and_reduce(SHMEM_TEAM_WORLD, rd_s, rs_s, 3) == 0, "and short");
    CHECK(rd_s[2] == (short)(npes == 1 ? 0x101 : 0x100), "short and: %#x", rd_s[2]);
    CHECK(shmem_or_reduce(SHMEM_TEAM_WORLD, rd_i, rs_i, 3) == 0, "or int");
    CHECK(rd_i[1] == (int)(all | 0x100), "int or: %#x", rd_i[1]);
    CHECK(shmem_xor_reduce(SHMEM_TEAM_WORLD, rd_l, rs_l, 3) == 0, "xor long");
    long wantx = all | x | ((npes % 2) ? 2L << 40 : 0);
    CHECK(rd_l[2] == wantx, "long xor: %#lx want %#lx", rd_l[2], wantx);
    CHECK(shmem_or_reduce(SHMEM_TEAM_WORLD, rd_s, rs_s, 3) == 0 && rd_s[0] == (short)(all | 0x100), "or short");
    CHECK(shmem_and_reduce(SHMEM_TEAM_WORLD, rd_l, rs_l, 3) == 0 && rd_l[1] == ((npes == 1 ? 1 : 0) | 0x100 | 1L << 40),
          "and long %#lx", rd_l[1]);
    CHECK(shmem_xor_reduce(SHMEM_TEAM_WORLD, rd_i, rs_i, 3) == 0 && rd_i[0] == (int)(all | x), "xor int");
}

static long psync[SHMEM_SYNC_SIZE];

static void sync_forms(void) {
    for (int i = 0; i < SHMEM_SYNC_SIZE; i++) psync[i] = SHMEM_SYNC_VALUE;
    shmem_barrier_all();
    CHECK(shmem_sync(SHMEM_TEAM_WORLD) == 0, "shmem_sync(team)");
    shmem_sync(0, 0, npes, psync); /* the deprecated active-set form */
    CHECK(shmem_sync(SHMEM_TEAM_SHARED) == 0, "shmem_sync(SHARED)");
}

static int d_i;
static long d_l;
static long long d_ll;
static float d_f;
static double d_d;
static long d_flag;

#define DEP_INT(T, var, what)                                                                   \
    do {                                                                                        \
        var = 5;                                                                                \
        shmem_barrier_all();                                                                    \
        shmem_add(&var, (T)3, right);                                                           \
        T a_ = shmem_fadd(&var, (T)2, right);                                                   \
        shmem_inc(&var, right);                                                                 \
        T b_ = shmem_finc(&var, right);                                                         \
        T c_ = shmem_cswap(&var, (T)12, (T)100, right);                                         \
        T d_ = shmem_swap(&var, (T)7, right);                                                   \
        T e_ = shmem_fetch(&var, right);                                                        \
        shmem_set(&var, (T)42, right);                                                          \
        T f_ = shmem_fetch(&var, right);                                                        \
        CHECK(a_ == 8 && b_ == 11 && c_ == 12 && d_ == 100 && e_ == 7 && f_ == 42, "%s: %lld %lld %lld %lld %lld %lld", \
              what, (long long)a_, (long long)b_, (long long)c_, (long long)d_, (long long)e_, (long long)f_); \
        shmem_barrier_all();                                                                    \
        CHECK(var == 42, "%s final %lld", what, (long long)var);                                \
    } while (0)

#define DEP_FLOAT(T, var, what)                                                                 \
    do {                                                                                        \
        shmem_barrier_all();                                                                    \
        shmem_set(&var, (T)1.5, right);                                                         \
        T a_ = shmem_fetch(&var, right);                                                        \
        T b_ = shmem_swap(&var, (T)2.5, right);                                                 \
        CHECK(a_ == (T)1.5 && b_ == (T)1.5, "%s: %g %g", what, (double)a_, (double)b_);         \
        shmem_barrier_all();                                                                    \
        CHECK(var == (T)2.5, "%s final %g", what, (double)var);                                 \
    } while (0)

static void deprecated_generics(void) {
    DEP_INT(int, d_i, "int");
    DEP_INT(long, d_l, "long");
    DEP_INT(long long, d_ll, "long long");
    DEP_FLOAT(float, d_f, "float");
    DEP_FLOAT(double, d_d, "double");
    d_flag = 0;
    shmem_barrier_all();
    shmem_set(&d_flag, 1L + left, right);
    shmem_wait(&d_flag, 0L); /* until != 0 */
    CHECK(d_flag == 1 + ((left + npes - 1) % npes), "shmem_wait: %ld", d_flag);
    shmem_barrier_all();
}

#if defined(__x86_64__)
static long double ld_src[4], ld_dst[4], ld_all[4 * 8], ld_rs[3], ld_rd[3];
static long ld_psync[SHMEM_REDUCE_SYNC_SIZE];
static long double ld_wrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE + 3];

static void long_double(void) {
    const long double tiny = LDBL_EPSILON; /* 2^-63: lost in a double */
    for (int i = 0; i < 4; i++) ld_src[i] = 1.0L + (me * 4 + i) * tiny;
    shmem_barrier_all();
    shmem_longdouble_put(ld_dst, ld_src, 4, right);
    shmem_barrier_all();
    for (int i = 0; i < 4; i++) CHECK(ld_dst[i] == 1.0L + (left * 4 + i) * tiny, "longdouble_put [%d]", i);
    long double got[4];
    shmem_get(got, ld_src, 4, right); /* generic */
    for (int i = 0; i < 4; i++) CHECK(got[i] == 1.0L + (right * 4 + i) * tiny, "generic get [%d]", i);
    shmem_barrier_all();
    long double v = 1.5L + me * tiny;
    shmem_longdouble_p(&ld_dst[0], v, right);
    shmem_p(&ld_dst[1], v + tiny, right);
    shmem_ctx_longdouble_p(SHMEM_CTX_DEFAULT, &ld_dst[2], v + 2 * tiny, right);
    shmem_ctx_t ctx;
    CHECK(shmem_ctx_create(0, &ctx) == 0, "ctx_create");
    shmem_p(ctx, &ld_dst[3], v + 3 * tiny, right);
    shmem_ctx_quiet(ctx);
    shmem_barrier_all();
    long double lv = 1.5L + left * tiny;
    CHECK(ld_dst[0] == lv && ld_dst[1] == lv + tiny && ld_dst[2] == lv + 2 * tiny && ld_dst[3] == lv + 3 * tiny,
          "p forms");
    /* right's slots hold this PE's values */
    long double g0 = shmem_longdouble_g(&ld_dst[0], right);
    long double g1 = shmem_g(&ld_dst[1], right);
    long double g2 = shmem_ctx_longdouble_g(ctx, &ld_dst[2], right);
    long double g3 = shmem_g(SHMEM_CTX_DEFAULT, &ld_dst[3], right);
    CHECK(g0 == v && g1 == v + tiny && g2 == v + 2 * tiny && g3 == v + 3 * tiny, "g forms");
    shmem_ctx_destroy(ctx);
    /* a g result used in arithmetic right away (the x87 return) */
    CHECK(shmem_longdouble_g(&ld_dst[0], right) - v == 0.0L, "g result in an expression");
    shmem_barrier_all();
    /* strided and non-blocking */
    shmem_longdouble_iput(ld_dst, ld_src, 2, 1, 2, right);
    shmem_longdouble_put_nbi(&ld_dst[1], &ld_src[3], 1, right);
    shmem_quiet();
    shmem_barrier_all();
    CHECK(ld_dst[0] == 1.0L + (left * 4) * tiny && ld_dst[2] == 1.0L + (left * 4 + 1) * tiny &&
              ld_dst[1] == 1.0L + (left * 4 + 3) * tiny,
          "iput / put_nbi");
    /* collectives */
    CHECK(shmem_fcollect(SHMEM_TEAM_WORLD, ld_all, ld_src, 4) == 0, "fcollect");
    for (int i = 0; i < 4 * npes; i++) CHECK(ld_all[i] == 1.0L + i * tiny, "fcollect [%d]", i);
    CHECK(shmem_longdouble_broadcast(SHMEM_TEAM_WORLD, ld_dst, ld_src, 4, npes - 1) == 0, "broadcast");
    for (int i = 0; i < 4; i++) CHECK(ld_dst[i] == 1.0L + ((npes - 1) * 4 + i) * tiny, "broadcast [%d]", i);
    /* reductions, in long double precision (every partial sum is below 1,
     * where multiples of 2^-63 are exact) */
    for (int k = 0; k < 3; k++) ld_rs[k] = 0.125L + (me + k) * tiny;
    shmem_barrier_all();
    CHECK(shmem_sum_reduce(SHMEM_TEAM_WORLD, ld_rd, ld_rs, 3) == 0, "sum");
    for (int k = 0; k < 3; k++) {
        long double want = 0.125L * npes + (npes * (npes - 1) / 2 + npes * k) * tiny;
        CHECK(ld_rd[k] == want, "longdouble sum [%d]: %.21Lg want %.21Lg", k, ld_rd[k], want);
    }
    CHECK(shmem_longdouble_max_reduce(SHMEM_TEAM_WORLD, ld_rd, ld_rs, 3) == 0 && ld_rd[1] == 0.125L + npes * tiny, "max");
    CHECK(shmem_min_reduce(SHMEM_TEAM_WORLD, ld_rd, ld_rs, 3) == 0 && ld_rd[2] == 0.125L + 2 * tiny, "min");
    for (int k = 0; k < 3; k++) ld_rs[k] = (long double)(me + 2) + k;
    shmem_barrier_all();
    CHECK(shmem_longdouble_prod_reduce(SHMEM_TEAM_WORLD, ld_rd, ld_rs, 3) == 0, "prod");
    long double p0 = 1.0L;
    for (int q = 0; q < npes; q++) p0 *= (long double)(q + 2);
    CHECK(ld_rd[0] == p0, "longdouble prod: %Lg want %Lg", ld_rd[0], p0);
    /* deprecated active-set form */
    for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++) ld_psync[i] = SHMEM_SYNC_VALUE;
    for (int k = 0; k < 3; k++) ld_rs[k] = 0.125L + (me + k) * tiny;
    shmem_barrier_all();
    shmem_longdouble_sum_to_all(ld_rd, ld_rs, 3, 0, 0, npes, ld_wrk, ld_psync);
    CHECK(ld_rd[0] == 0.125L * npes + (npes * (npes - 1) / 2) * tiny, "longdouble sum_to_all");
    shmem_barrier_all();
}
#endif

static float _Complex cf_s[2], cf_d[2];
static double _Complex cd_s[2], cd_d[2];
static long c_psync[SHMEM_REDUCE_SYNC_SIZE];
static double _Complex c_wrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE + 2];

static void complex_reductions(void) {
    cf_s[0] = (float)(me + 1) + (float)me * I;
    cf_s[1] = 1.0f + 1.0f * I;
    cd_s[0] = (double)(me + 1) - (double)me * I;
    cd_s[1] = 1.0 + 1.0 * I;
    shmem_barrier_all();
    CHECK(shmem_complexf_sum_reduce(SHMEM_TEAM_WORLD, cf_d, cf_s, 2) == 0, "complexf sum");
    CHECK(crealf(cf_d[0]) == npes * (npes + 1) / 2 && cimagf(cf_d[0]) == npes * (npes - 1) / 2, "complexf sum value");
    CHECK(shmem_prod_reduce(SHMEM_TEAM_WORLD, cd_d, cd_s, 2) == 0, "generic complexd prod");
    /* (1+i)^n: 1+i, 2i, -2+2i, -4 */
    const double re[] = {1, 0, -2, -4}, im[] = {1, 2, 2, 0};
    CHECK(creal(cd_d[1]) == re[npes - 1] && cimag(cd_d[1]) == im[npes - 1], "(1+i)^%d = %g%+gi", npes,
          creal(cd_d[1]), cimag(cd_d[1]));
    CHECK(shmem_sum_reduce(SHMEM_TEAM_WORLD, cd_d, cd_s, 2) == 0, "generic complexd sum");
    CHECK(creal(cd_d[0]) == npes * (npes + 1) / 2 && cimag(cd_d[0]) == -(npes * (npes - 1) / 2), "complexd sum");
    CHECK(shmem_complexf_prod_reduce(SHMEM_TEAM_WORLD, cf_d, cf_s, 2) == 0 && crealf(cf_d[1]) == (float)re[npes - 1] &&
              cimagf(cf_d[1]) == (float)im[npes - 1],
          "complexf prod");
    for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++) c_psync[i] = SHMEM_SYNC_VALUE;
    shmem_barrier_all();
    shmem_complexd_sum_to_all(cd_d, cd_s, 2, 0, 0, npes, c_wrk, c_psync);
    CHECK(creal(cd_d[1]) == npes && cimag(cd_d[1]) == npes, "complexd sum_to_all");
    shmem_barrier_all();
}

static short w_s;
static unsigned short w_us;

static void short_waits(void) {
    w_s = 0;
    w_us = 0;
    shmem_barrier_all();
    shmem_short_p(&w_s, (short)(-7 - left), right);
    shmem_ushort_p(&w_us, (unsigned short)(60000 + left), right);
    shmem_quiet();
    shmem_short_wait_until(&w_s, SHMEM_CMP_LT, 0);
    shmem_wait_until(&w_us, SHMEM_CMP_GE, (unsigned short)60000);
    CHECK(w_s == -7 - ((left + npes - 1) % npes) && w_us == 60000 + (left + npes - 1) % npes, "short waits");
    CHECK(shmem_short_test(&w_s, SHMEM_CMP_LE, (short)-7) == 1 && shmem_ushort_test(&w_us, SHMEM_CMP_LT, 60000) == 0,
          "short tests");
    CHECK(shmem_test(&w_s, SHMEM_CMP_EQ, w_s) == 1, "generic short test");
    shmem_barrier_all();
}

static int sc_s[2], sc_d[2];

static void extensions(void) {
    CHECK(shmem_team_n_pes(SHMEMX_TEAM_NODE) >= 1, "SHMEMX_TEAM_NODE");
    sc_s[0] = me + 1;
    sc_s[1] = 1;
    shmem_barrier_all();
    CHECK(shmemx_sum_inscan(SHMEM_TEAM_WORLD, sc_d, sc_s, 2) == 0, "shmemx_sum_inscan");
    CHECK(sc_d[0] == (me + 1) * (me + 2) / 2 && sc_d[1] == me + 1, "inscan values");
    shmem_pcontrol(0);
    shmem_pcontrol(2, "any", 3);
    shmem_pcontrol(1);
}

int main(void) {
    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();
    right = (me + 1) % npes;
    left = (me + npes - 1) % npes;
    ctx_invalid();
    align_small();
    fair_any();
    bitwise_amo_generics();
    bitwise_reduce_generics();
    sync_forms();
    deprecated_generics();
#if defined(__x86_64__)
    long_double();
#endif
    complex_reductions();
    short_waits();
    extensions();
    shmem_finalize();
    return 0;
}
