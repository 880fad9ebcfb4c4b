/* The main job of the README: every PE sends its number around a ring with
 * a put, then PE 0 gathers everything with gets and prints the sum. */
#include <shmem.h>
#include <stdio.h>

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    long *from_left = shmem_malloc(sizeof(long));
    long mine = 1000 + me;

    shmem_long_put(from_left, &mine, 1, (me + 1) % n); /* to my right neighbour */
    shmem_barrier_all();

    long expect_left = 1000 + (me + n - 1) % n;
    long got = shmem_long_g(from_left, me); /* read through the library: the heap may be GPU memory */
    int ok = (got == expect_left);
    if (me == 0) {
        long sum = 0;
        for (int pe = 0; pe < n; pe++)
            sum += shmem_long_g(from_left, pe);
        char name[SHMEM_MAX_NAME_LEN];
        shmem_info_get_name(name);
        printf("%s: %d PEs passed their numbers around a ring; sum = %ld (expected %ld)\n",
               name, n, sum, 1000L * n + (long)n * (n - 1) / 2);
    }
    shmem_barrier_all();
    if (!ok)
        fprintf(stderr, "PE %d: got %ld from the left, expected %ld\n", me, got, expect_left);
    shmem_free(from_left);
    shmem_finalize();
    return ok ? 0 : 1;
}
