/* A stream of small blocking puts from one source buffer that is rewritten
 * right after each put returns (a blocking put's source is free on
 * return), more of them between two quiets than the MPI proxy's 1 MiB of
 * put copies holds, and of odd sizes: every byte must arrive as it was
 * when its put was called. */
#include <shmem.h>
#include <stdio.h>
#include <string.h>
#include "test_util.h"

#define CHUNKS 400
#define MAXLEN 8192

static unsigned char pattern(int pe, int chunk, size_t i) { return (unsigned char)(pe * 31 + chunk * 7 + i * 13 + 1); }

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    int right = (me + 1) % npes, left = (me + npes - 1) % npes;
    size_t lens[CHUNKS], offs[CHUNKS], total = 0;
    for (int c = 0; c < CHUNKS; c++) {
        lens[c] = c % 3 == 0 ? MAXLEN : (size_t)(1 + (c * 2654435761u) % MAXLEN);
        offs[c] = total;
        total += lens[c];
    }
    unsigned char *dst = shmem_malloc(total);
    unsigned char src[MAXLEN];
    for (int round = 0; round < 2; round++) {
        shmem_barrier_all();
        for (int c = 0; c < CHUNKS; c++) {
            for (size_t i = 0; i < lens[c]; i++) src[i] = pattern(me + round, c, i);
            shmem_putmem(dst + offs[c], src, lens[c], right);
            memset(src, 0xEE, sizeof src); /* free on return */
        }
        shmem_barrier_all(); /* completes the puts */
        unsigned char *got = malloc(total);
        shmem_getmem(got, dst, total, me); /* heaps the host cannot load from too */
        for (int c = 0; c < CHUNKS; c++)
            for (size_t i = 0; i < lens[c]; i++)
                CHECK(got[offs[c] + i] == pattern(left + round, c, i),
                      "round %d: chunk %d byte %zu from PE %d is %u, expected %u", round, c, i, left,
                      got[offs[c] + i], pattern(left + round, c, i));
        free(got);
    }
    shmem_free(dst);
    if (me == 0) printf("put_stream ok\n");
    shmem_finalize();
    return 0;
}
