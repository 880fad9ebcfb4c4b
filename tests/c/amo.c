/* AMOs on every AMO type: a shared fetch_add counter returns unique values
 * in increasing order per PE with an exact total; inc/add totals; a
 * compare_swap spin lock protecting a non-atomic read-modify-write (once);
 * swap conservation; bitwise masks; fetch/set/swap on float and double; nbi
 * fetching AMOs complete at quiet. */
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "test_util.h"

static int me, npes, right;

/* Rounds per section: 600 for one type of each size and signedness (int,
 * unsigned int, long, unsigned long), 100 for the types that are aliases
 * of those in the library (long long, the fixed-width and size types), 25
 * for 1-byte types (the values fetch_add hands out must stay distinct in
 * a signed char at 4 PEs). */
static int k_for(const char *name, size_t size) {
    static const char *const full[] = {"int", "uint", "long", "ulong"};
    if (size == 1) return 25;
    for (size_t i = 0; i < sizeof full / sizeof full[0]; i++)
        if (strcmp(name, full[i]) == 0) return 600;
    return 100;
}

#define TEST_STD(T, N)                                                                 \
static void std_##N(void) {                                                            \
    const int K = k_for(#N, sizeof(T));                                                \
    int target = npes - 1;                                                             \
    T *counter = shmem_calloc(4, sizeof(T));                                           \
    T *got = shmem_calloc((size_t)K, sizeof(T));                                       \
    /* 1. fetch_add: unique, increasing per PE, exact total */                         \
    T *mine = malloc(sizeof(T) * K); /* private, then published in got */             \
    for (int i = 0; i < K; i++) {                                                      \
        mine[i] = shmem_##N##_atomic_fetch_add(counter, (T)1, target);                 \
        if (i) CHECK(mine[i] > mine[i - 1], #N " fetch_add not increasing: %lld then %lld", \
                     (long long)mine[i - 1], (long long)mine[i]);                      \
        T again = shmem_##N##_atomic_fetch(counter, target);                           \
        CHECK(again > mine[i], #N " fetch after fetch_add must see it");               \
    }                                                                                  \
    SYM_PUT(got, mine, sizeof(T) * K);                                                 \
    free(mine);                                                                        \
    shmem_barrier_all();                                                               \
    if (me == 0) {                                                                     \
        char *seen = calloc((size_t)K * npes, 1);                                      \
        T *all = malloc(sizeof(T) * K);                                                \
        for (int p = 0; p < npes; p++) {                                               \
            shmem_##N##_get(all, got, K, p);                                           \
            for (int i = 0; i < K; i++) {                                              \
                long long v = (long long)all[i];                                       \
                CHECK(v >= 0 && v < (long long)K * npes, #N " fetched %lld out of range", v); \
                CHECK(!seen[v], #N " value %lld fetched twice", v);                    \
                seen[v] = 1;                                                           \
            }                                                                          \
        }                                                                              \
        CHECK(shmem_##N##_atomic_fetch(counter, target) == (T)(K * npes), #N " total"); \
        free(seen); free(all);                                                         \
    }                                                                                  \
    /* 2. inc, fetch_inc, add */                                                       \
    for (int i = 0; i < K; i++) {                                                      \
        shmem_##N##_atomic_inc(counter + 1, target);                                   \
        (void)shmem_##N##_atomic_fetch_inc(counter + 1, target);                       \
    }                                                                                  \
    for (int i = 0; i < K / 2; i++) shmem_##N##_atomic_add(counter + 1, (T)2, target); \
    shmem_barrier_all();                                                               \
    CHECK(shmem_##N##_atomic_fetch(counter + 1, target) == (T)((2 * K + 2 * (K / 2)) * npes), \
          #N " inc/add total");                                                        \
    /* 3. compare_swap with a false condition (the lock: cswap_lock) */                \
    T *slot = counter + 2;                                                             \
    T old = shmem_##N##_atomic_compare_swap(slot, (T)(me + 100), (T)7, right);         \
    CHECK(old == (T)0, #N " compare_swap with a false condition returns the value");   \
    shmem_barrier_all();                                                               \
    CHECK(SYM_LOAD(slot) == (T)0, #N " compare_swap with a false condition must not write"); \
    /* 4. swap conservation: the old values and the final value are 0..npes */        \
    shmem_barrier_all();                                                               \
    T prev = shmem_##N##_atomic_swap(slot, (T)(me + 1), 0);                            \
    SYM_STORE(got, prev);                                                              \
    shmem_barrier_all();                                                               \
    if (me == 0) {                                                                     \
        int seen[64] = {0};                                                            \
        seen[(int)SYM_LOAD(slot)]++;                                                   \
        for (int p = 0; p < npes; p++) seen[(int)shmem_##N##_g(got, p)]++;            \
        for (int v = 0; v <= npes; v++) CHECK(seen[v] == 1, #N " swap lost value %d", v); \
    }                                                                                  \
    /* 5. nbi fetching forms */                                                        \
    shmem_barrier_all();                                                               \
    T *f = malloc(sizeof(T) * (K + 3));                                                \
    for (int i = 0; i < K; i++) shmem_##N##_atomic_fetch_add_nbi(&f[i], counter + 3, (T)1, target); \
    shmem_##N##_atomic_fetch_inc_nbi(&f[K], counter + 3, target);                      \
    shmem_quiet();                                                                     \
    for (int i = 1; i <= K; i++) CHECK(f[i] > f[i - 1], #N " fetch_add_nbi order");   \
    shmem_barrier_all();                                                               \
    shmem_##N##_atomic_fetch_nbi(&f[K + 1], counter + 3, target);                      \
    shmem_quiet();                                                                     \
    CHECK(f[K + 1] == (T)((K + 1) * npes), #N " fetch_nbi total");                     \
    shmem_barrier_all();                                                               \
    shmem_##N##_atomic_compare_swap_nbi(&f[K + 2], counter + 3, (T)((K + 1) * npes), (T)0, target); \
    shmem_quiet();                                                                     \
    shmem_barrier_all();                                                               \
    /* exactly one PE's compare_swap_nbi saw the total and reset it */               \
    int winner = f[K + 2] == (T)((K + 1) * npes);                                      \
    int *wins = shmem_calloc(1, sizeof(int));                                          \
    shmem_int_atomic_add(wins, winner, 0);                                             \
    shmem_barrier_all();                                                               \
    if (me == 0) CHECK(SYM_LOAD(wins) == 1, #N " compare_swap_nbi winners: %d", SYM_LOAD(wins)); \
    CHECK(shmem_##N##_atomic_fetch(counter + 3, target) == (T)0, #N " cswap_nbi reset"); \
    /* 6. set and fetch, swap_nbi */                                                   \
    shmem_##N##_atomic_set(slot, (T)(me + 3), right);                                  \
    shmem_barrier_all();                                                               \
    CHECK(shmem_##N##_atomic_fetch(slot, me) == (T)((me + npes - 1) % npes + 3), #N " set"); \
    shmem_barrier_all();                                                               \
    shmem_##N##_atomic_swap_nbi(&f[0], slot, (T)1, right);                             \
    shmem_quiet();                                                                     \
    CHECK(f[0] == (T)(me + 3), #N " swap_nbi old value");                           \
    shmem_barrier_all();                                                               \
    free(f);                                                                           \
    shmem_free(wins); shmem_free(got); shmem_free(counter); \
}

#define TEST_BIT(T, N)                                                                 \
static void bit_##N(void) {                                                            \
    T *mask = shmem_calloc(2, sizeof(T));                                              \
    T all = 0;                                                                         \
    int bits = npes < (int)(8 * sizeof(T)) ? npes : (int)(8 * sizeof(T));              \
    for (int p = 0; p < bits; p++) all |= (T)((T)1 << p);                              \
    if (me < bits) {                                                                   \
        T before = shmem_##N##_atomic_fetch_or(mask, (T)((T)1 << me), 0);              \
        CHECK(!(before & (T)((T)1 << me)), #N " bit %d set early", me);                \
    }                                                                                  \
    shmem_barrier_all();                                                               \
    CHECK(shmem_##N##_atomic_fetch(mask, 0) == all, #N " or mask");                    \
    shmem_barrier_all();                                                               \
    if (me < bits) shmem_##N##_atomic_and(mask, (T)~((T)1 << me), 0);                  \
    shmem_barrier_all();                                                               \
    CHECK(shmem_##N##_atomic_fetch(mask, 0) == (T)0, #N " and mask");                  \
    shmem_barrier_all();                                                               \
    if (me < bits) { shmem_##N##_atomic_xor(mask, (T)((T)1 << me), 0);                 \
                     shmem_##N##_atomic_or(mask + 1, (T)((T)1 << me), 0); }            \
    shmem_barrier_all();                                                               \
    CHECK(shmem_##N##_atomic_fetch(mask, 0) == all && shmem_##N##_atomic_fetch(mask + 1, 0) == all, \
          #N " xor/or mask");                                                          \
    shmem_barrier_all();                                                               \
    T f[3];                                                                            \
    if (me < bits) {                                                                   \
        shmem_##N##_atomic_fetch_xor_nbi(&f[0], mask, (T)((T)1 << me), 0);             \
        shmem_##N##_atomic_fetch_and_nbi(&f[1], mask + 1, (T)~((T)1 << me), 0);        \
        shmem_quiet();                                                                 \
        CHECK(f[0] & (T)((T)1 << me), #N " fetch_xor_nbi saw my bit");                 \
        CHECK(f[1] & (T)((T)1 << me), #N " fetch_and_nbi saw my bit");                 \
    }                                                                                  \
    shmem_barrier_all();                                                               \
    CHECK(shmem_##N##_atomic_fetch(mask, 0) == (T)0 && shmem_##N##_atomic_fetch(mask + 1, 0) == (T)0, \
          #N " masks cleared");                                                        \
    shmem_barrier_all();                                                               \
    if (me < bits) { shmem_##N##_atomic_fetch_or_nbi(&f[2], mask, (T)((T)1 << me), 0); shmem_quiet(); } \
    shmem_barrier_all();                                                               \
    if (me == 0) CHECK(shmem_##N##_atomic_fetch_and(mask, (T)0, 0) == all, #N " fetch_or_nbi mask"); \
    shmem_barrier_all();                                                               \
    shmem_free(mask);                                                                  \
}

#define TEST_EXT(T, N)                                                                 \
static void ext_##N(void) {                                                            \
    T *x = shmem_calloc(1, sizeof(T));                                                 \
    shmem_##N##_atomic_set(x, (T)(me + 0.5), right);                                   \
    shmem_barrier_all();                                                               \
    CHECK(SYM_LOAD(x) == (T)((me + npes - 1) % npes + 0.5), #N " set");                \
    CHECK(shmem_##N##_atomic_fetch(x, right) == (T)(me + 0.5), #N " fetch");           \
    shmem_barrier_all();                                                               \
    T old = shmem_##N##_atomic_swap(x, (T)-2.25, right);                               \
    CHECK(old == (T)(me + 0.5), #N " swap old");                                       \
    T f1, f2;                                                                          \
    shmem_##N##_atomic_swap_nbi(&f1, x, (T)4.75, right);                               \
    shmem_##N##_atomic_fetch_nbi(&f2, x, right);                                       \
    shmem_quiet();                                                                     \
    CHECK(f1 == (T)-2.25 && f2 == (T)4.75, #N " nbi swap/fetch");                      \
    shmem_barrier_all();                                                               \
    shmem_free(x);                                                                     \
}

#define STD_TYPES(X)                                                                   \
    X(signed char, schar) X(int, int) X(long, long) X(long long, longlong)            \
    X(unsigned int, uint) X(unsigned long, ulong) X(unsigned long long, ulonglong)    \
    X(int32_t, int32) X(int64_t, int64) X(uint32_t, uint32) X(uint64_t, uint64)        \
    X(size_t, size) X(ptrdiff_t, ptrdiff)
#define BIT_TYPES(X)                                                                   \
    X(signed char, schar) X(unsigned int, uint) X(unsigned long, ulong)                \
    X(unsigned long long, ulonglong) X(int32_t, int32) X(int64_t, int64)               \
    X(uint32_t, uint32) X(uint64_t, uint64)

/* A compare_swap spin lock (an int on PE 0) around a non-atomic
 * read-modify-write of a long there: once, not per type (it uses none of
 * them), as many rounds as a type's counter test. */
static void cswap_lock(void) {
    const int K = 600;
    long *data = shmem_calloc(1, sizeof(long));
    int *lock = shmem_calloc(1, sizeof(int));
    for (int i = 0; i < K; i++) {
        while (shmem_int_atomic_compare_swap(lock, 0, me + 1, 0) != 0) ;
        long v = shmem_long_g(data, 0);
        shmem_long_p(data, v + 1, 0);
        shmem_quiet();
        shmem_int_atomic_set(lock, 0, 0);
    }
    shmem_barrier_all();
    if (me == 0) CHECK(SYM_LOAD(data) == (long)K * npes, "cswap lock: count %ld want %ld",
                       SYM_LOAD(data), (long)K * npes);
    shmem_barrier_all();
    shmem_free(lock);
    shmem_free(data);
}

STD_TYPES(TEST_STD)
BIT_TYPES(TEST_BIT)
TEST_EXT(float, float)
TEST_EXT(double, double)

int main(void) {
    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();
    right = (me + 1) % npes;
#define RUN_STD(T, N) std_##N();
#define RUN_BIT(T, N) bit_##N();
    STD_TYPES(RUN_STD)
    cswap_lock();
    BIT_TYPES(RUN_BIT)
    ext_float();
    ext_double();
    /* C11 generic forms */
    long *g = shmem_calloc(1, sizeof(long));
    long before = shmem_atomic_fetch_add(g, 5L, 0);
    (void)before;
    shmem_atomic_inc(g, 0);
    shmem_barrier_all();
    CHECK(shmem_atomic_fetch(g, 0) == 6L * npes, "generic AMOs");
    shmem_barrier_all();
    shmem_free(g);
    shmem_finalize();
    return 0;
}
