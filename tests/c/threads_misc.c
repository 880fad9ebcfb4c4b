/* THREAD_MULTIPLE: threads of every PE hammer puts and AMOs concurrently,
 * with exact results. Also query_thread, pe/addr_accessible,
 * malloc_with_hints, info routines. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "test_util.h"

#define NT 4
#define ITERS 2000

static int me, npes;
static long *counter;   /* on every PE; everyone adds into every PE's copy */
static long *slots;     /* slots[pe][thread][iter % 64] */
static uint64_t *mask;

static void *worker(void *arg) {
    int t = (int)(intptr_t)arg;
    for (int i = 0; i < ITERS; i++) {
        int pe = (me + i) % npes;
        shmem_long_atomic_fetch_add(counter, 1, pe);
        long v = (long)me * 1000000 + t * 10000 + i;
        shmem_long_p(&slots[(me * NT + t) * 64 + i % 64], v, pe);
        shmem_uint64_atomic_or(mask, (uint64_t)1 << (me * NT + t), pe);
    }
    shmem_quiet();
    return NULL;
}

int main(void) {
    int provided = -1;
    CHECK(shmem_init_thread(SHMEM_THREAD_MULTIPLE, &provided) == 0, "init_thread");
    CHECK(provided == SHMEM_THREAD_MULTIPLE, "provided %d", provided);
    int q = -1;
    shmem_query_thread(&q);
    CHECK(q == SHMEM_THREAD_MULTIPLE, "query_thread %d", q);
    me = shmem_my_pe();
    npes = shmem_n_pes();

    counter = shmem_calloc(1, sizeof(long));
    slots = shmem_calloc((size_t)npes * NT * 64, sizeof(long));
    mask = shmem_malloc_with_hints(sizeof(uint64_t), SHMEM_MALLOC_ATOMICS_REMOTE | SHMEM_MALLOC_SIGNAL_REMOTE);
    CHECK(mask != NULL, "malloc_with_hints");
    SYM_STORE(mask, (uint64_t)0);
    shmem_barrier_all();
    pthread_t th[NT];
    for (int t = 0; t < NT; t++) pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t);
    for (int t = 0; t < NT; t++) pthread_join(th[t], NULL);
    shmem_barrier_all();
    /* every PE's counter got exactly the increments aimed at it */
    long want = 0;
    for (int p = 0; p < npes; p++)
        for (int i = 0; i < ITERS; i++) if ((p + i) % npes == me) want += NT;
    long got_counter = SYM_LOAD(counter);
    CHECK(got_counter == want, "counter %ld want %ld", got_counter, want);
    uint64_t all = 0;
    for (int p = 0; p < npes; p++)
        for (int t = 0; t < NT; t++) {
            int any = 0;
            for (int i = 0; i < ITERS; i++) if ((p + i) % npes == me) any = 1;
            if (any) all |= (uint64_t)1 << (p * NT + t);
        }
    uint64_t got_mask = SYM_LOAD(mask);
    CHECK(got_mask == all, "mask %llx want %llx", (unsigned long long)got_mask, (unsigned long long)all);
    /* the last value each (pe, thread, slot) wrote here */
    size_t nslots = (size_t)npes * NT * 64;
    long *got_slots = malloc(nslots * sizeof(long));
    CHECK(got_slots != NULL, "malloc");
    SYM_GET(got_slots, slots, nslots * sizeof(long));
    for (int p = 0; p < npes; p++)
        for (int t = 0; t < NT; t++)
            for (int s = 0; s < 64; s++) {
                long last = 0;
                for (int i = 0; i < ITERS; i++)
                    if ((p + i) % npes == me && i % 64 == s) last = (long)p * 1000000 + t * 10000 + i;
                CHECK(got_slots[(p * NT + t) * 64 + s] == last, "slot %d/%d/%d", p, t, s);
            }
    free(got_slots);

    CHECK(shmem_pe_accessible(npes - 1) == 1 && shmem_pe_accessible(npes) == 0 && shmem_pe_accessible(-1) == 0,
          "pe_accessible");
    long local = 0;
    CHECK(shmem_addr_accessible(counter, 0) == 1 && shmem_addr_accessible(&local, 0) == 0, "addr_accessible");
    CHECK(shmem_addr_accessible(counter, npes) == 0, "addr_accessible bad pe");
    int major, minor;
    char name[SHMEM_MAX_NAME_LEN];
    shmem_info_get_version(&major, &minor);
    shmem_info_get_name(name);
    CHECK(major == SHMEM_MAJOR_VERSION && minor == SHMEM_MINOR_VERSION, "version");
    shmem_barrier_all();
    shmem_free(mask);
    shmem_free(slots);
    shmem_free(counter);
    shmem_finalize();
    return 0;
}
