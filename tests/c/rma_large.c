/* Puts and gets of sizes around every threshold of the remote paths: the
 * MPI proxy's requests carry up to 8 KiB of a put to a heap it serves
 * (GPU and opaque heaps), larger data moves in 1 MiB messages, and the
 * core stages device memory through 4 MiB buffers. Each size moves from
 * a host buffer and from the symmetric heap, blocking and nbi, to the
 * right neighbour, and back by gets from the left neighbour into a host
 * buffer and into the heap; every byte is checked. */
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "test_util.h"

#define MAXLEN ((size_t)9 << 20 | 5)

/* Not periodic in any power of two, so a piece landing at another
 * piece's offset shows. */
static unsigned char pattern(int pe, int round, size_t i) {
    uint32_t v = (uint32_t)i * 2654435761u;
    v ^= v >> 15;
    return (unsigned char)((v >> 8) + pe * 29 + round * 11 + 3);
}

static void expect(const unsigned char *got, int pe, int round, size_t len, const char *what) {
    for (size_t i = 0; i < len; i++)
        CHECK(got[i] == pattern(pe, round, i), "%s of %zu bytes: byte %zu is %u, want %u", what, len, i, got[i],
              pattern(pe, round, i));
}

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    int right = (me + 1) % npes, left = (me + npes - 1) % npes;
    const size_t sizes[] = {1, 8191, 8192, 8193, ((size_t)1 << 20) - 1, ((size_t)1 << 20) + 1, ((size_t)4 << 20) + 3,
                            MAXLEN};
    unsigned char *sym_src = shmem_malloc(MAXLEN);
    unsigned char *sym_dst = shmem_malloc(MAXLEN);
    unsigned char *sym_back = shmem_malloc(MAXLEN);
    unsigned char *host = malloc(MAXLEN), *check = malloc(MAXLEN);
    CHECK(sym_src && sym_dst && sym_back && host && check, "allocation failed");
    int round = 0;
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t len = sizes[k];
        for (int from_heap = 0; from_heap < 2; from_heap++) {
            for (int nbi = 0; nbi < 2; nbi++, round++) {
                for (size_t i = 0; i < len; i++) host[i] = pattern(me, round, i);
                const unsigned char *src = host;
                if (from_heap) {
                    SYM_PUT(sym_src, host, len);
                    src = sym_src;
                }
                shmem_barrier_all();
                if (nbi) {
                    shmem_putmem_nbi(sym_dst, src, len, right);
                    shmem_quiet();
                } else {
                    shmem_putmem(sym_dst, src, len, right);
                }
                shmem_barrier_all();
                SYM_GET(check, sym_dst, len);
                expect(check, left, round, len, "put received");
                /* The left neighbour's copy of what this PE put to it
                 * comes back by a get: into a host buffer, and into the
                 * heap. */
                memset(check, 0, len);
                if (nbi) {
                    shmem_getmem_nbi(check, sym_dst, len, right);
                    shmem_quiet();
                } else {
                    shmem_getmem(check, sym_dst, len, right);
                }
                expect(check, me, round, len, "get into host memory");
                shmem_getmem(sym_back, sym_dst, len, right);
                SYM_GET(check, sym_back, len);
                expect(check, me, round, len, "get into the heap");
            }
        }
    }
    shmem_barrier_all();
    shmem_free(sym_back);
    shmem_free(sym_dst);
    shmem_free(sym_src);
    free(host);
    free(check);
    if (me == 0) printf("rma_large ok\n");
    shmem_finalize();
    return 0;
}
