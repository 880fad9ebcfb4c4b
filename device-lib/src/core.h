/* The portable core of the device library: address translation, copies,
 * comparisons, the barrier over the node's control segment. Written against
 * the target header's names only. */
#ifndef ISHMEMI_CORE_H
#define ISHMEMI_CORE_H

#include "target_opencl.h"
#include "device_state.h"

/* Installed once per program by the runtime (kernel ishmemi_install_state). */
extern ISHMEMI_GLOBAL ishmemx_device_state_t *ishmemi_state;

/* Address of symmetric `sym` on `pe`, for loads and stores from here. */
ISHMEMI_INLINE ISHMEMI_GLOBAL char *ishmemi_peer(ISHMEMI_GLOBAL const void *sym, int pe) {
    ISHMEMI_GLOBAL ulong *tab = (ISHMEMI_GLOBAL ulong *)ishmemi_state->peer_heap_base;
    return (ISHMEMI_GLOBAL char *)(tab[pe] + ((ulong)sym - ishmemi_state->heap_base));
}

/* Bulk copy: 16-byte vectors when both ends allow it, else bytes. */
ISHMEMI_INLINE void ishmemi_copy(ISHMEMI_GLOBAL char *dst, ISHMEMI_GLOBAL const char *src, size_t n) {
    size_t i = 0;
    if ((((ulong)dst | (ulong)src) & 15) == 0) {
        for (; i + 16 <= n; i += 16)
            *(ISHMEMI_GLOBAL long2 *)(dst + i) = *(ISHMEMI_GLOBAL const long2 *)(src + i);
    }
    for (; i < n; i++) dst[i] = src[i];
}

ISHMEMI_INLINE void ishmemi_strided(ISHMEMI_GLOBAL char *dst, long dst_stride, ISHMEMI_GLOBAL const char *src,
                                   long src_stride, size_t elem, size_t nelems) {
    for (size_t i = 0; i < nelems; i++)
        ishmemi_copy(dst + (long)i * dst_stride * (long)elem, src + (long)i * src_stride * (long)elem, elem);
}

#define ISHMEMI_CMP(cmp, a, b)                                                        \
    ((cmp) == 1 ? (a) == (b) : (cmp) == 2 ? (a) != (b) : (cmp) == 3 ? (a) > (b)      \
     : (cmp) == 4 ? (a) >= (b) : (cmp) == 5 ? (a) < (b) : (a) <= (b))

/* World-team sync, interoperable with the host's (same flags and epoch). */
ISHMEMI_INLINE void ishmemi_sync_world(void) {
    ISHMEMI_GLOBAL char *base = (ISHMEMI_GLOBAL char *)ishmemi_state->ctrl_team_base;
    int me = ishmemi_state->my_pe, n = ishmemi_state->n_pes;
    ulong stride = ishmemi_state->ctrl_pe_stride;
    ISHMEMI_GLOBAL char *mine = base + me * stride;
    long epoch = ishmemi_load64(mine + ishmemi_state->ctrl_epoch_offset) + 1;
    ishmemi_store64(mine + ishmemi_state->ctrl_epoch_offset, epoch);
    for (int dist = 1, round = 0; dist < n; dist <<= 1, round++) {
        int to = (me + dist) % n;
        ishmemi_store64(base + to * stride + 8 * round, epoch);
        while (ishmemi_load64(mine + 8 * round) < epoch) ;
    }
    ishmemi_fence_all();
}

#endif
