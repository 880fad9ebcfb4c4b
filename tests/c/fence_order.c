/* Ordering: put data; fence; p flag. When the flag is seen, all of the data
 * must be there. Each PE sends to its right neighbour and receives from its
 * left, round after round, with an acknowledgement for flow control. Also
 * put_nbi; quiet; p flag. */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include "test_util.h"

#define N 8192
#define ROUNDS 300

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    int right = (me + 1) % npes, left = (me + npes - 1) % npes;
    long *data = shmem_calloc(N, sizeof(long));
    long *flag = shmem_calloc(1, sizeof(long));
    long *ack = shmem_calloc(1, sizeof(long));
    long *src = malloc(N * sizeof(long));
    long *got = malloc(N * sizeof(long)); /* private copy of data */
    for (long r = 1; r <= ROUNDS; r++) {
        for (int i = 0; i < N; i++) src[i] = r * 100000 + me * 1000 + i % 1000;
        if (r % 2) {
            shmem_long_put(data, src, N, right);
            shmem_fence();
        } else {
            shmem_long_put_nbi(data, src, N, right);
            shmem_quiet();
        }
        shmem_long_p(flag, r, right);
        shmem_long_wait_until(flag, SHMEM_CMP_EQ, r);
        SYM_GET(got, data, N * sizeof(long));
        for (int i = 0; i < N; i++)
            CHECK(got[i] == r * 100000 + left * 1000 + i % 1000,
                  "round %ld: flag seen before data element %d (got %ld)", r, i, got[i]);
        shmem_long_p(ack, r, left);
        shmem_long_wait_until(ack, SHMEM_CMP_EQ, r);
    }
    shmem_barrier_all();
    free(got);
    free(src);
    shmem_free(ack);
    shmem_free(flag);
    shmem_free(data);
    shmem_finalize();
    return 0;
}
