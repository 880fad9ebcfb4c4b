/* put_signal: over many rounds, a PE that sees the signal sees all of the
 * (large) data; SIGNAL_SET and SIGNAL_ADD; blocking and nbi; typed, sized
 * and mem forms; signal_fetch; signal_set/add without data. */
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "test_util.h"

#define N (1 << 17) /* 128 Ki longs = 1 MiB */
#define ROUNDS 40

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    int right = (me + 1) % npes, left = (me + npes - 1) % npes;
    long *data = shmem_calloc(N, sizeof(long));
    uint64_t *sig = shmem_calloc(4, sizeof(uint64_t));
    uint64_t *ack = shmem_calloc(1, sizeof(uint64_t));
    long *src = malloc(N * sizeof(long));
    long *got = malloc(N * sizeof(long)); /* private copy of data */

    for (uint64_t r = 1; r <= ROUNDS; r++) {
        for (int i = 0; i < N; i++) src[i] = (long)r * 1000003 + me * 7 + i;
        switch (r % 4) {
        case 0: shmem_long_put_signal(data, src, N, sig, r, SHMEM_SIGNAL_SET, right); break;
        case 1: shmem_long_put_signal_nbi(data, src, N, sig, r, SHMEM_SIGNAL_SET, right); break;
        case 2: shmem_putmem_signal(data, src, N * sizeof(long), sig + 1, 1, SHMEM_SIGNAL_ADD, right); break;
        case 3: shmem_put64_signal_nbi(data, src, N, sig + 1, 1, SHMEM_SIGNAL_ADD, right); break;
        }
        if (r % 4 < 2) {
            uint64_t v = shmem_signal_wait_until(sig, SHMEM_CMP_EQ, r);
            CHECK(v == r, "signal_wait_until returned %llu, want %llu", (unsigned long long)v, (unsigned long long)r);
        } else {
            uint64_t want = r / 4 * 2 + (r % 4 == 3 ? 2 : 1);
            shmem_signal_wait_until(sig + 1, SHMEM_CMP_GE, want);
            CHECK(shmem_signal_fetch(sig + 1) == want, "ADD signal %llu", (unsigned long long)shmem_signal_fetch(sig + 1));
        }
        SYM_GET(got, data, N * sizeof(long));
        for (int i = 0; i < N; i++)
            CHECK(got[i] == (long)r * 1000003 + left * 7 + i,
                  "round %llu: signal seen before data element %d", (unsigned long long)r, i);
        shmem_quiet(); /* complete nbi puts before reusing src */
        shmem_signal_set(ack, r, left);
        shmem_signal_wait_until(ack, SHMEM_CMP_EQ, r);
    }

    /* small typed and sized forms, zero-length data with a signal */
    shmem_barrier_all();
    int ivals[3] = {me, me + 1, me + 2};
    int *idst = shmem_calloc(3, sizeof(int));
    shmem_int_put_signal(idst, ivals, 3, sig + 2, 5, SHMEM_SIGNAL_ADD, right);
    shmem_putmem_signal(idst, ivals, 0, sig + 2, 5, SHMEM_SIGNAL_ADD, right);
    shmem_signal_add(sig + 3, 3, right);
    shmem_signal_wait_until(sig + 2, SHMEM_CMP_EQ, 10);
    shmem_signal_wait_until(sig + 3, SHMEM_CMP_GT, 2);
    int igot[3] = {-1, -1, -1};
    SYM_GET(igot, idst, sizeof igot);
    CHECK(igot[0] == left && igot[2] == left + 2, "small put_signal data");
    shmem_barrier_all();
    /* generic form */
    shmem_put_signal(idst, ivals, 1, sig + 2, 0, SHMEM_SIGNAL_SET, right);
    shmem_signal_wait_until(sig + 2, SHMEM_CMP_EQ, 0);
    shmem_barrier_all();

    free(got);
    free(src);
    shmem_free(idst);
    shmem_free(ack);
    shmem_free(sig);
    shmem_free(data);
    shmem_finalize();
    return 0;
}
