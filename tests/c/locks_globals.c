/* Locks (heap and global lock variables) and the symmetric data segment:
 * RMA and AMOs on global and static variables. */
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "test_util.h"

long global_lock = 0;            /* .bss */
static long counter_data = 5;    /* .data */
static int table[1000];          /* .bss */
static long owners[4 * 300 + 8];
static long big_bss[1 << 20];    /* 8 MiB of zeros: must cost nothing to share */

#define K 300

static void locked_count(long *lock, long *count_on_pe0, int use_test) {
    int me = shmem_my_pe();
    for (int i = 0; i < K; i++) {
        if (use_test && i % 2) {
            while (shmem_test_lock(lock) != 0) ;
        } else {
            shmem_set_lock(lock);
        }
        long v = shmem_long_g(count_on_pe0, 0);   /* non-atomic read-modify-write */
        shmem_long_p(&owners[v % (4 * K)], me, 0);
        shmem_long_p(count_on_pe0, v + 1, 0);
        shmem_clear_lock(lock);
    }
}

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    int right = (me + 1) % npes, left = (me + npes - 1) % npes;

    /* globals keep their initial values and are symmetric */
    CHECK(counter_data == 5, "initialized data kept across init");
    CHECK(shmem_addr_accessible(&counter_data, right) && shmem_addr_accessible(table, right), "globals accessible");
    CHECK((shmem_ptr(table, right) != NULL) == SHARES_MEMORY(right), "ptr to a peer's global");
    shmem_barrier_all(); /* everyone checked the initial values before updates */
    int vals[1000];
    for (int i = 0; i < 1000; i++) vals[i] = me * 10000 + i;
    shmem_int_put(table, vals, 1000, right);
    shmem_long_atomic_add(&counter_data, me + 1, 0);
    big_bss[(1 << 20) - 1] = me;
    shmem_barrier_all();
    for (int i = 0; i < 1000; i++) CHECK(table[i] == left * 10000 + i, "global put element %d", i);
    if (me == 0) CHECK(counter_data == 5 + (long)npes * (npes + 1) / 2, "AMO on a global: %ld", counter_data);
    CHECK(shmem_long_g(&big_bss[(1 << 20) - 1], right) == right, "g of a peer's bss");
    int got[10];
    shmem_int_get(got, table + 5, 10, right);
    CHECK(got[0] == me * 10000 + 5, "global get");
    shmem_barrier_all();

    /* locks: global lock variable, then a heap lock variable */
    long *count = shmem_calloc(1, sizeof(long));
    locked_count(&global_lock, count, 0);
    shmem_barrier_all();
    if (me == 0) {
        long got = SYM_LOAD(count);
        CHECK(got == (long)K * npes, "global lock count %ld want %ld", got, (long)K * npes);
    }
    long *heap_lock = shmem_calloc(1, sizeof(long));
    SYM_STORE(count, 0L);
    shmem_barrier_all();
    locked_count(heap_lock, count, 1);
    shmem_barrier_all();
    if (me == 0) {
        long got = SYM_LOAD(count);
        CHECK(got == (long)K * npes, "heap lock count %ld", got);
        /* fairness report (not asserted: timing-dependent) */
        int turns[4] = {0}, switches = 0;
        for (int i = 0; i < K * npes; i++) {
            turns[owners[i]]++;
            if (i && owners[i] != owners[i - 1]) switches++;
        }
        for (int p = 0; p < npes; p++) CHECK(turns[p] == K, "PE %d held the lock %d times", p, turns[p]);
        if (getenv("LOCK_REPORT")) printf("owner switches: %d of %d acquisitions\n", switches, K * npes);
    }
    /* test_lock on a held lock */
    shmem_barrier_all();
    if (me == 0) shmem_set_lock(heap_lock);
    shmem_barrier_all();
    if (me != 0) CHECK(shmem_test_lock(heap_lock) == 1, "test_lock on a held lock");
    shmem_barrier_all();
    if (me == 0) shmem_clear_lock(heap_lock);
    shmem_barrier_all();
    if (me == 0) {
        long word = SYM_LOAD(heap_lock);
        CHECK(word == 0, "a free lock's word is 0 again: %lx", word);
    }
    shmem_free(heap_lock);
    shmem_free(count);
    shmem_finalize();
    return 0;
}
