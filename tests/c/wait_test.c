/* Point-to-point synchronization: every wait/test variant, status masks,
 * vector comparison values, every comparison operator, SIZE_MAX from _any
 * when nothing can match; deterministic local states for the tests, and
 * waits released by another PE's updates. */
#define _POSIX_C_SOURCE 200809L
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "test_util.h"

static int me, npes;

/* Local, deterministic checks of the test_* family on every sync type. The
 * _any forms return some satisfying index (the library rotates the start
 * of its search between calls, so repeated calls do not starve any). */
#define TEST_LOCAL(T, N)                                                                 \
static void local_##N(void) {                                                            \
    T *v = shmem_calloc(6, sizeof(T));                                                   \
    /* v = {0, 1, 2, 3, 4, 5} */                                                          \
    for (int i = 0; i < 6; i++) shmem_##N##_atomic_set(v + i, (T)i, me);                  \
    shmem_quiet(); /* non-fetching AMOs are complete at quiet (a library may queue them) */ \
    CHECK(shmem_##N##_test(v + 2, SHMEM_CMP_EQ, (T)2) == 1, #N " test EQ");              \
    CHECK(shmem_##N##_test(v + 2, SHMEM_CMP_NE, (T)2) == 0, #N " test NE");              \
    CHECK(shmem_##N##_test(v + 2, SHMEM_CMP_GT, (T)1) == 1, #N " test GT");              \
    CHECK(shmem_##N##_test(v + 2, SHMEM_CMP_GE, (T)3) == 0, #N " test GE");              \
    CHECK(shmem_##N##_test(v + 2, SHMEM_CMP_LT, (T)3) == 1, #N " test LT");              \
    CHECK(shmem_##N##_test(v + 2, SHMEM_CMP_LE, (T)1) == 0, #N " test LE");              \
    int st[6] = {0, 0, 0, 0, 0, 0};                                                      \
    size_t idx[6];                                                                       \
    CHECK(shmem_##N##_test_all(v, 6, NULL, SHMEM_CMP_GE, (T)0) == 1, #N " test_all");    \
    CHECK(shmem_##N##_test_all(v, 6, NULL, SHMEM_CMP_GE, (T)1) == 0, #N " test_all false"); \
    st[0] = 1;                                                                           \
    CHECK(shmem_##N##_test_all(v, 6, st, SHMEM_CMP_GE, (T)1) == 1, #N " test_all masked"); \
    CHECK(shmem_##N##_test_any(v, 6, NULL, SHMEM_CMP_GT, (T)9) == SIZE_MAX, #N " test_any none"); \
    CHECK(shmem_##N##_test_any(v, 6, NULL, SHMEM_CMP_EQ, (T)4) == 4, #N " test_any");    \
    CHECK(shmem_##N##_test_any(v, 6, st, SHMEM_CMP_LT, (T)2) == 1, #N " test_any skips masked"); \
    st[1] = 1;                                                                           \
    CHECK(shmem_##N##_test_any(v, 6, st, SHMEM_CMP_LT, (T)2) == SIZE_MAX, #N " test_any all matches masked"); \
    CHECK(shmem_##N##_test_some(v, 6, idx, st, SHMEM_CMP_NE, (T)3) == 3, #N " test_some count"); \
    CHECK(idx[0] == 2 && idx[1] == 4 && idx[2] == 5, #N " test_some indices");           \
    CHECK(shmem_##N##_test_some(v, 6, idx, NULL, SHMEM_CMP_GT, (T)7) == 0, #N " test_some none"); \
    T want[6] = {0, 9, 2, 9, 4, 9};                                                      \
    CHECK(shmem_##N##_test_all_vector(v, 6, NULL, SHMEM_CMP_EQ, want) == 0, #N " test_all_vector"); \
    int st2[6] = {0, 1, 0, 1, 0, 1};                                                     \
    CHECK(shmem_##N##_test_all_vector(v, 6, st2, SHMEM_CMP_EQ, want) == 1, #N " test_all_vector masked"); \
    CHECK(shmem_##N##_test_any_vector(v, 6, NULL, SHMEM_CMP_GT, want) == SIZE_MAX, #N " test_any_vector none"); \
    size_t a_ = shmem_##N##_test_any_vector(v, 6, st2, SHMEM_CMP_LE, want);              \
    CHECK(a_ == 0 || a_ == 2 || a_ == 4, #N " test_any_vector: %zu", a_);                \
    CHECK(shmem_##N##_test_some_vector(v, 6, idx, NULL, SHMEM_CMP_LT, want) == 3, #N " test_some_vector"); \
    CHECK(idx[0] == 1 && idx[1] == 3 && idx[2] == 5, #N " test_some_vector indices");    \
    /* waits that are already satisfied or have nothing to wait for return at once */   \
    shmem_##N##_wait_until(v + 5, SHMEM_CMP_GE, (T)5);                                   \
    shmem_##N##_wait_until_all(v, 6, NULL, SHMEM_CMP_LE, (T)5);                          \
    int all_masked[6] = {1, 1, 1, 1, 1, 1};                                              \
    shmem_##N##_wait_until_all(v, 6, all_masked, SHMEM_CMP_GT, (T)100);                  \
    CHECK(shmem_##N##_wait_until_any(v, 6, all_masked, SHMEM_CMP_EQ, (T)0) == SIZE_MAX, #N " wait_any all masked"); \
    CHECK(shmem_##N##_wait_until_any(v, 0, NULL, SHMEM_CMP_EQ, (T)0) == SIZE_MAX, #N " wait_any nelems 0"); \
    CHECK(shmem_##N##_wait_until_some(v, 6, idx, all_masked, SHMEM_CMP_EQ, (T)0) == 0, #N " wait_some all masked"); \
    a_ = shmem_##N##_wait_until_any(v, 6, st, SHMEM_CMP_GE, (T)3);                        \
    CHECK(a_ >= 3 && a_ <= 5, #N " wait_any: %zu", a_);                                  \
    CHECK(shmem_##N##_wait_until_some(v, 6, idx, NULL, SHMEM_CMP_GE, (T)4) == 2 && idx[0] == 4 && idx[1] == 5, \
          #N " wait_some");                                                              \
    shmem_##N##_wait_until_all_vector(v, 6, st2, SHMEM_CMP_EQ, want);                    \
    a_ = shmem_##N##_wait_until_any_vector(v, 6, NULL, SHMEM_CMP_LT, want);              \
    CHECK(a_ == 1 || a_ == 3 || a_ == 5, #N " wait_any_vector: %zu", a_);                \
    CHECK(shmem_##N##_wait_until_some_vector(v, 6, idx, st2, SHMEM_CMP_EQ, want) == 3, #N " wait_some_vector"); \
    shmem_barrier_all();                                                                 \
    shmem_free(v);                                                                       \
}

#define SYNC_TYPES(X)                                                                    \
    X(int, int) X(long, long) X(long long, longlong) X(unsigned int, uint)               \
    X(unsigned long, ulong) X(unsigned long long, ulonglong) X(int32_t, int32)           \
    X(int64_t, int64) X(uint32_t, uint32) X(uint64_t, uint64) X(size_t, size)            \
    X(ptrdiff_t, ptrdiff)
SYNC_TYPES(TEST_LOCAL)

/* Waits released by the left neighbour, which updates our variables one at a
 * time, in a known order, with pauses between. */
static void cross_pe(void) {
    int right = (me + 1) % npes, left = (me + npes - 1) % npes;
    long *v = shmem_calloc(8, sizeof(long));
    long *done = shmem_calloc(1, sizeof(long));
    struct timespec pause = {0, 2000000};
    /* writer, step 1: element 0 first (the reader masks it out), then 5 */
    shmem_long_atomic_set(v + 0, 10, right);
    nanosleep(&pause, NULL);
    shmem_long_atomic_set(v + 5, 10, right);
    /* reader: only element 5 can release the wait */
    int st[8] = {1, 0, 0, 0, 0, 0, 0, 0};
    size_t got = shmem_long_wait_until_any(v, 8, st, SHMEM_CMP_EQ, 10);
    CHECK(got == 5, "wait_until_any returned %zu, want 5 (element 0 is masked)", got);
    shmem_long_atomic_set(done, 1, left);
    shmem_long_wait_until(done, SHMEM_CMP_EQ, 1);
    /* writer, step 2: all elements, slowly */
    for (int i = 0; i < 8; i++) {
        shmem_long_atomic_set(v + i, 20 + i, right);
        if (i % 3 == 0) nanosleep(&pause, NULL);
    }
    long want[8];
    for (int i = 0; i < 8; i++) want[i] = 20 + i;
    shmem_long_wait_until_all_vector(v, 8, NULL, SHMEM_CMP_EQ, want);
    size_t idx[8];
    CHECK(shmem_long_wait_until_some(v, 8, idx, NULL, SHMEM_CMP_GE, 26) == 2 && idx[0] == 6 && idx[1] == 7,
          "wait_until_some");
    shmem_long_atomic_set(done, 2, left);
    shmem_long_wait_until(done, SHMEM_CMP_EQ, 2);
    /* writer, step 3 */
    nanosleep(&pause, NULL);
    shmem_long_atomic_add(v + 7, -100, right);
    shmem_long_wait_until(v + 7, SHMEM_CMP_LT, 0);
    long v7 = SYM_LOAD(v + 7);
    CHECK(v7 == -73, "wait_until LT");
    /* generic form */
    shmem_wait_until(v + 7, SHMEM_CMP_NE, 0L);
    shmem_barrier_all();
    shmem_free(done);
    shmem_free(v);
}

int main(void) {
    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();
#define RUN(T, N) local_##N();
    SYNC_TYPES(RUN)
    cross_pe();
    shmem_finalize();
    return 0;
}
