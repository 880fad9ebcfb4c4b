/* Symmetric heap management: same addresses on every PE, reuse after free,
 * calloc zeroes, align aligns, realloc keeps contents, size 0 gives NULL,
 * exhaustion gives NULL (run with ISHMEM_SYMMETRIC_SIZE=4m), ptr gives
 * load/store access to peers. Uses the ishmem.h names. */
#include <ishmem.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#define shmem_my_pe ishmem_my_pe
#include "test_util.h"

int main(void) {
    ishmem_init();
    int me = ishmem_my_pe(), npes = ishmem_n_pes();
    int right = (me + 1) % npes;

    /* every PE gets the same heap offset: check through ptr on the peer */
    char *a = ishmem_malloc(1000);
    CHECK(a != NULL, "malloc(1000)");
    CHECK((uintptr_t)a % 16 == 0, "malloc alignment");
    SYM_STORE(a, (char)me);
    ishmem_barrier_all();
    char *peer_a = ishmem_ptr(a, right);
    CHECK((peer_a != NULL) == SHARES_MEMORY(right), "ptr is non-NULL exactly for PEs sharing memory");
    /* ptr gives load/store access where the host can reach the heap */
    if (peer_a && heap_host_direct())
        CHECK(peer_a[0] == (char)right, "ptr load from peer: got %d want %d", peer_a[0], right);
    CHECK(ishmem_char_g(a, right) == (char)right, "g from peer");
    CHECK(ishmem_ptr(a, me) == a, "ptr to self is the address itself");
    int on_stack = 0;
    CHECK(ishmem_ptr(&on_stack, right) == NULL, "ptr of a non-symmetric address is NULL");
    ishmem_barrier_all();

    /* reuse: free then malloc of the same size returns the same address */
    char *b = ishmem_malloc(4096);
    ishmem_free(a);
    char *c = ishmem_malloc(1000);
    CHECK(c == a, "freed block reused: %p vs %p", (void *)c, (void *)a);

    /* calloc zeroes, even memory that held data before */
    char junk[1000];
    memset(junk, 0x5a, sizeof junk);
    SYM_PUT(c, junk, sizeof junk);
    ishmem_free(c);
    int *z = ishmem_calloc(250, sizeof(int));
    CHECK(z != NULL, "calloc");
    int zs[250];
    memset(zs, 0x5a, sizeof zs);
    SYM_GET(zs, z, sizeof zs);
    for (int i = 0; i < 250; i++) CHECK(zs[i] == 0, "calloc element %d = %d", i, zs[i]);

    /* align */
    for (size_t al = sizeof(void *); al <= 65536; al *= 4) {
        void *p = ishmem_align(al, 24);
        CHECK(p != NULL && (uintptr_t)p % al == 0, "align(%zu) gave %p", al, p);
        ishmem_free(p);
    }

    /* size 0 */
    CHECK(ishmem_malloc(0) == NULL, "malloc(0)");
    CHECK(ishmem_calloc(0, 8) == NULL && ishmem_calloc(8, 0) == NULL, "calloc with 0");
    CHECK(ishmem_align(64, 0) == NULL, "align size 0");
    ishmem_free(NULL);

    /* realloc keeps contents, growing past a neighbour (moves) and shrinking */
    long *r = ishmem_malloc(16 * sizeof(long));
    long *blocker = ishmem_malloc(64);
    long rs[16];
    for (int i = 0; i < 16; i++) rs[i] = me * 100 + i;
    SYM_PUT(r, rs, sizeof rs);
    ishmem_barrier_all();
    long *r2 = ishmem_realloc(r, 4096 * sizeof(long));
    CHECK(r2 != NULL, "realloc grow");
    long kept[16];
    memset(kept, 0xff, sizeof kept); /* -1: not what is expected */
    SYM_GET(kept, r2, sizeof kept);
    for (int i = 0; i < 16; i++) CHECK(kept[i] == me * 100 + i, "realloc kept element %d", i);
    SYM_STORE(r2 + 4095, (long)me);
    ishmem_long_p(r2 + 4000, (long)me, right); /* the new block is symmetric */
    ishmem_barrier_all();
    CHECK(SYM_LOAD(r2 + 4000) == (me + npes - 1) % npes, "put into realloc'd block");
    long *r3 = ishmem_realloc(r2, 8 * sizeof(long));
    CHECK(r3 == r2, "shrinking stays in place");
    memset(kept, 0xff, sizeof kept); /* -1: not what is expected */
    SYM_GET(kept, r3, 8 * sizeof(long));
    for (int i = 0; i < 8; i++) CHECK(kept[i] == me * 100 + i, "shrink kept element %d", i);
    ishmem_free(r3);
    ishmem_free(blocker);

    /* exhaustion: NULL, the heap still works afterwards */
    void *huge = ishmem_malloc((size_t)1 << 40);
    CHECK(huge == NULL, "a 1 TiB allocation must fail");
    void *ok = ishmem_malloc(1024);
    CHECK(ok != NULL, "allocation after a failed one");

    /* many cycles do not leak heap space */
    for (int i = 0; i < 2000; i++) {
        void *p = ishmem_malloc(512 * 1024);
        CHECK(p != NULL, "cycle %d", i);
        ishmem_free(p);
    }
    ishmem_free(ok);
    ishmem_free(z);
    ishmem_free(b);

    int major = 0, minor = 0;
    char name[ISHMEM_MAX_NAME_LEN];
    ishmem_info_get_version(&major, &minor);
    ishmem_info_get_name(name);
    CHECK(major == 1 && minor == 5, "version %d.%d", major, minor);
    CHECK(strncmp(name, "ishmem-rs", 9) == 0, "name %s", name);
    const ishmemx_device_state_t *ds = ishmemx_get_device_state();
    CHECK(ds->magic == ISHMEMX_DEVICE_STATE_MAGIC && ds->my_pe == me && ds->n_pes == npes, "device state");
    CHECK(((const uint8_t *)(uintptr_t)ds->peer_is_local)[right] == SHARES_MEMORY(right), "peer is local");
    if (me == 0) printf("alloc ok\n");
    ishmem_finalize();
    return 0;
}
