/* The portable core of the device library: address translation, copies,
 * comparisons, the barrier over the node's control segment. Written against
 * the target header's names only. */
#ifndef ISHMEMI_CORE_H
#define ISHMEMI_CORE_H

#ifdef __CUDACC__
#include "target_cuda.h"
#else
#include "target_opencl.h"
#endif
#include "device_state.h"

/* Targets without cheaper forms read the quiet words with acquire loads
 * and take the library's AMOs for the user's (see target_cuda.h). */
#ifndef ISHMEMI_HAVE_PEEK
#define ishmemi_peek64(p) ishmemi_load64(p)
#endif
#ifndef ISHMEMI_HAVE_USER_AMO
#define ishmemi_user_amo32 ishmemi_amo32
#define ishmemi_user_amo64 ishmemi_amo64
#endif

/* Installed once per program by the runtime (OpenCL: the kernel
 * ishmemi_install_state; CUDA: the library's registered install hook). */
extern ISHMEMI_VAR ISHMEMI_GLOBAL ishmemx_device_state_t *ishmemi_state;

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

/* ----- routing: load/store to local peers, the ring for the others ----- */

ISHMEMI_INLINE int ishmemi_is_local(int pe) {
    return ((ISHMEMI_GLOBAL uchar *)ishmemi_state->peer_is_local)[pe];
}

ISHMEMI_INLINE ISHMEMI_GLOBAL char *ishmemi_ring(void) { return (ISHMEMI_GLOBAL char *)ishmemi_state->ring; }

/* Claims a ticket, waits for the slot's previous lap to be acknowledged
 * (flow control), writes the message and publishes it (sequence last). */
ISHMEMI_INLINE ulong ishmemi_ring_send(uint op, ulong dest, ulong source, ulong value, ulong cond, ulong sig,
                                       int pe, uint amo, uint flags) {
    ISHMEMI_GLOBAL char *ring = ishmemi_ring();
    ulong t = (ulong)ishmemi_amo64(ring + ISHMEMI_RING_NEXT_SEND, ISHMEMI_FADD, 1, 0);
    ulong slot = t % ISHMEMI_RING_SLOTS;
    ISHMEMI_GLOBAL ishmemi_ring_completion_t *c =
        (ISHMEMI_GLOBAL ishmemi_ring_completion_t *)(ring + ISHMEMI_RING_COMPLETIONS) + slot;
    if (t >= ISHMEMI_RING_SLOTS)
        while ((ulong)ishmemi_load64(&c->ack) < t - ISHMEMI_RING_SLOTS + 1) ;
    ISHMEMI_GLOBAL ishmemi_ring_msg_t *m = (ISHMEMI_GLOBAL ishmemi_ring_msg_t *)(ring + ISHMEMI_RING_MSGS) + slot;
    m->dest = dest;
    m->source = source;
    m->value = value;
    m->cond = cond;
    m->sig = sig;
    m->pe = (uint)pe;
    m->op = op;
    m->amo = amo;
    m->flags = flags;
    ishmemi_store64(&m->sequence, (long)(t + 1));
    /* Counted once posted (after its ticket), so a quiet that reads the
     * count also sees the ticket in the ring's send counter. */
    ishmemi_amo64((ISHMEMI_GLOBAL char *)ishmemi_state->quiet_words, ISHMEMI_FADD, 1, 0);
    return t;
}

/* Waits for ticket t's completion, reads its value, frees the slot. */
ISHMEMI_INLINE ulong ishmemi_ring_wait(ulong t) {
    ISHMEMI_GLOBAL ishmemi_ring_completion_t *c =
        (ISHMEMI_GLOBAL ishmemi_ring_completion_t *)(ishmemi_ring() + ISHMEMI_RING_COMPLETIONS) + t % ISHMEMI_RING_SLOTS;
    while ((ulong)ishmemi_load64(&c->sequence) < t + 1) ;
    ulong v = (ulong)ishmemi_load64(&c->value);
    ishmemi_store64(&c->ack, (long)(t + 1));
    return v;
}

/* Quiet: every ticket issued so far is complete. The quiet words (in the
 * memory the device reaches fastest) count the messages posted and a number
 * known complete: when they agree, nothing is outstanding and the ring's
 * counters in host memory are not read at all. Otherwise wait for the ring
 * to complete every ticket sent by then, and record the count. (A racing
 * quiet may record a smaller count: later quiets only look again.) */
ISHMEMI_INLINE void ishmemi_ring_quiet(void) {
    ISHMEMI_GLOBAL char *q = (ISHMEMI_GLOBAL char *)ishmemi_state->quiet_words;
    long posted = ishmemi_peek64(q);
    if (ishmemi_peek64(q + 8) >= posted) return;
    ISHMEMI_GLOBAL char *ring = ishmemi_ring();
    long sent = ishmemi_load64(ring + ISHMEMI_RING_NEXT_SEND);
    while (ishmemi_load64(ring + ISHMEMI_RING_COMPLETED) < sent) ;
    ishmemi_store64(q + 8, posted);
}

/* ----- device-side argument checks: a bad PE, or a symmetric address
 * outside the symmetric heap, is reported to the host proxy, which aborts
 * the job with a message naming the operation, the PE and the value. The
 * work-item never resumes. `op` is the ring opcode naming the operation. */
ISHMEMI_INLINE void ishmemi_fail(ulong what, uint op, ulong bad, int pe) {
    ISHMEMI_GLOBAL char *ring = ishmemi_ring();
    ishmemi_ring_send(ISHMEMI_RING_OP_ERROR, bad, 0, what, op, 0, pe, 0, ISHMEMI_RING_OP_FLAG_NBI);
    while (ishmemi_load64(ring + ISHMEMI_RING_COMPLETED) >= 0) ; /* until the host ends the job */
}

ISHMEMI_INLINE void ishmemi_check(uint op, ISHMEMI_GLOBAL const void *sym, size_t n, int pe) {
    if ((uint)pe >= (uint)ishmemi_state->n_pes) ishmemi_fail(ISHMEMI_DEVICE_BAD_PE, op, 0, pe);
    ulong a = (ulong)sym, base = ishmemi_state->heap_base, size = ishmemi_state->heap_size;
    if (a < base || a - base > size || n > size - (a - base)) ishmemi_fail(ISHMEMI_DEVICE_BAD_ADDR, op, a, pe);
}

/* The extent of `nelems` elements of `elem` bytes at stride `stride`
 * (elements) from `sym`: checked at its first and last element. */
ISHMEMI_INLINE void ishmemi_check_strided(uint op, ISHMEMI_GLOBAL const void *sym, long stride, size_t elem, size_t nelems, int pe) {
    ishmemi_check(op, sym, nelems ? elem : 0, pe);
    if (nelems > 1) ishmemi_check(op, (ISHMEMI_GLOBAL const char *)sym + (long)(nelems - 1) * stride * (long)elem, elem, pe);
}

/* Whether the host proxy can read or write a local buffer the device
 * passes through the ring (CUDA: not a thread's local or a block's shared
 * memory; OpenCL: every pointer here is global). */
#ifndef ISHMEMI_HOST_REACHES
#define ISHMEMI_HOST_REACHES(p) 1
#endif

/* A put whose source the host cannot read (device-local memory): the bytes
 * travel in the ring messages, 8 at a time; the server performs them in
 * order, so waiting for the last one completes them all. */
ISHMEMI_INLINE void ishmemi_ring_put_inline(ISHMEMI_GLOBAL void *dest, ISHMEMI_GLOBAL const void *src, size_t n, int pe,
                                           int nbi) {
    ISHMEMI_GLOBAL const uchar *s = (ISHMEMI_GLOBAL const uchar *)src;
    for (size_t i = 0; i < n; i += 8) {
        size_t k = n - i < 8 ? n - i : 8;
        ulong bits = 0;
        for (size_t b = 0; b < k; b++) bits |= (ulong)s[i + b] << (8 * b);
        int last = i + 8 >= n;
        ulong t = ishmemi_ring_send(ISHMEMI_RING_OP_P, (ulong)dest + i, 0, bits, k, 0, pe, 0,
                                    last && !nbi ? 0 : ISHMEMI_RING_OP_FLAG_NBI);
        if (last && !nbi) ishmemi_ring_wait(t);
    }
}

/* A get into a buffer the host cannot write: 8 bytes per round trip. */
ISHMEMI_INLINE void ishmemi_ring_get_inline(ISHMEMI_GLOBAL void *dest, ISHMEMI_GLOBAL const void *src, size_t n, int pe) {
    ISHMEMI_GLOBAL uchar *d = (ISHMEMI_GLOBAL uchar *)dest;
    for (size_t i = 0; i < n; i += 8) {
        size_t k = n - i < 8 ? n - i : 8;
        ulong bits = ishmemi_ring_wait(ishmemi_ring_send(ISHMEMI_RING_OP_G, 0, (ulong)src + i, k, 0, 0, pe, 0, 0));
        for (size_t b = 0; b < k; b++) d[i + b] = (uchar)(bits >> (8 * b));
    }
}

/* Whether a transfer of n bytes to or from a PE on the node, whose local
 * buffer is `buf`, goes to a copy engine (through the ring: the host
 * performs it with the device's copy) rather than the caller's loads and
 * stores. Such a transfer is waited for even in the _nbi forms, so that
 * fence, which orders memory only, still orders it before later stores. */
ISHMEMI_INLINE int ishmemi_copy_engine(size_t n, ulong cutover, ISHMEMI_GLOBAL const void *buf) {
    return cutover != 0 && n >= cutover && ISHMEMI_HOST_REACHES(buf);
}

/* The copy engine takes one transfer of this PE at a time (the host serves
 * the ring's requests one by one): a transfer over the cutover that finds
 * it busy is made with loads and stores instead, so that many threads or
 * blocks putting at once keep their parallel stores rather than queueing
 * behind one another. The token is quiet word 2. */
ISHMEMI_INLINE int ishmemi_ce_claim(void) {
    return ishmemi_amo64((ISHMEMI_GLOBAL char *)ishmemi_state->quiet_words + 16, ISHMEMI_CSWAP, 1, 0) == 0;
}

ISHMEMI_INLINE void ishmemi_ce_release(void) {
    ishmemi_store64((ISHMEMI_GLOBAL char *)ishmemi_state->quiet_words + 16, 0);
}

/* A put through the ring (a remote PE, or the copy engine). */
ISHMEMI_INLINE void ishmemi_ring_put(ISHMEMI_GLOBAL void *dest, ISHMEMI_GLOBAL const void *src, size_t n, int pe, int nbi) {
    if (!ISHMEMI_HOST_REACHES(src)) {
        ishmemi_ring_put_inline(dest, src, n, pe, nbi);
        return;
    }
    ulong t = ishmemi_ring_send(ISHMEMI_RING_OP_PUT, (ulong)dest, (ulong)src, n, 0, 0, pe, 0, nbi ? ISHMEMI_RING_OP_FLAG_NBI : 0);
    if (!nbi) ishmemi_ring_wait(t);
}

/* A get through the ring. */
ISHMEMI_INLINE void ishmemi_ring_get(ISHMEMI_GLOBAL void *dest, ISHMEMI_GLOBAL const void *src, size_t n, int pe, int nbi) {
    if (!ISHMEMI_HOST_REACHES(dest)) {
        ishmemi_ring_get_inline(dest, src, n, pe);
        return;
    }
    ulong t = ishmemi_ring_send(ISHMEMI_RING_OP_GET, (ulong)dest, (ulong)src, n, 0, 0, pe, 0, nbi ? ISHMEMI_RING_OP_FLAG_NBI : 0);
    if (!nbi) ishmemi_ring_wait(t);
}

ISHMEMI_INLINE void ishmemi_put_bytes(ISHMEMI_GLOBAL void *dest, ISHMEMI_GLOBAL const void *src, size_t n, int pe, int nbi) {
    ishmemi_check(ISHMEMI_RING_OP_PUT, dest, n, pe);
    if (ishmemi_is_local(pe)) {
        if (ishmemi_copy_engine(n, ishmemi_state->copy_cutover, src) && ishmemi_ce_claim()) {
            ishmemi_ring_put(dest, src, n, pe, 0);
            ishmemi_ce_release();
        } else {
            ishmemi_copy(ishmemi_peer(dest, pe), (ISHMEMI_GLOBAL const char *)src, n);
        }
        return;
    }
    ishmemi_ring_put(dest, src, n, pe, nbi);
}

ISHMEMI_INLINE void ishmemi_get_bytes(ISHMEMI_GLOBAL void *dest, ISHMEMI_GLOBAL const void *src, size_t n, int pe, int nbi) {
    ishmemi_check(ISHMEMI_RING_OP_GET, src, n, pe);
    if (ishmemi_is_local(pe)) {
        if (ishmemi_copy_engine(n, ishmemi_state->copy_cutover, dest) && ishmemi_ce_claim()) {
            ishmemi_ring_get(dest, src, n, pe, 0);
            ishmemi_ce_release();
        } else {
            ishmemi_copy((ISHMEMI_GLOBAL char *)dest, ishmemi_peer(src, pe), n);
        }
        return;
    }
    ishmemi_ring_get(dest, src, n, pe, nbi);
}

ISHMEMI_INLINE void ishmemi_ring_p(ISHMEMI_GLOBAL void *dest, ulong bits, size_t size, int pe) {
    ishmemi_ring_wait(ishmemi_ring_send(ISHMEMI_RING_OP_P, (ulong)dest, 0, bits, size, 0, pe, 0, 0));
}

ISHMEMI_INLINE ulong ishmemi_ring_g(ISHMEMI_GLOBAL const void *src, size_t size, int pe) {
    return ishmemi_ring_wait(ishmemi_ring_send(ISHMEMI_RING_OP_G, 0, (ulong)src, size, 0, 0, pe, 0, 0));
}

ISHMEMI_INLINE void ishmemi_iput_bytes(ISHMEMI_GLOBAL void *dest, long dst, ISHMEMI_GLOBAL const void *src, long sst,
                                      size_t elem, size_t nelems, int pe) {
    ishmemi_check_strided(ISHMEMI_RING_OP_PUT, dest, dst, elem, nelems, pe);
    if (ishmemi_is_local(pe)) {
        ishmemi_strided(ishmemi_peer(dest, pe), dst, (ISHMEMI_GLOBAL const char *)src, sst, elem, nelems);
        return;
    }
    for (size_t i = 0; i < nelems; i++)
        ishmemi_put_bytes((ISHMEMI_GLOBAL char *)dest + (long)i * dst * (long)elem,
                          (ISHMEMI_GLOBAL const char *)src + (long)i * sst * (long)elem, elem, pe, 0);
}

ISHMEMI_INLINE void ishmemi_iget_bytes(ISHMEMI_GLOBAL void *dest, long dst, ISHMEMI_GLOBAL const void *src, long sst,
                                      size_t elem, size_t nelems, int pe) {
    ishmemi_check_strided(ISHMEMI_RING_OP_GET, src, sst, elem, nelems, pe);
    if (ishmemi_is_local(pe)) {
        ishmemi_strided((ISHMEMI_GLOBAL char *)dest, dst, ishmemi_peer(src, pe), sst, elem, nelems);
        return;
    }
    for (size_t i = 0; i < nelems; i++)
        ishmemi_get_bytes((ISHMEMI_GLOBAL char *)dest + (long)i * dst * (long)elem,
                          (ISHMEMI_GLOBAL const char *)src + (long)i * sst * (long)elem, elem, pe, 0);
}

ISHMEMI_INLINE char ishmemi_amo8_pe(ISHMEMI_GLOBAL void *dest, int op, char v, char cond, int pe) {
    ishmemi_check(ISHMEMI_RING_OP_AMO, dest, 1, pe);
    if (ishmemi_is_local(pe)) return ishmemi_amo8(ishmemi_peer(dest, pe), op, v, cond);
    return (char)ishmemi_ring_wait(ishmemi_ring_send(ISHMEMI_RING_OP_AMO, (ulong)dest, 0, (uchar)v, (uchar)cond, 0, pe,
                                                     (uint)op | (1u << 8), 0));
}

ISHMEMI_INLINE int ishmemi_amo32_pe(ISHMEMI_GLOBAL void *dest, int op, int v, int cond, int pe) {
    ishmemi_check(ISHMEMI_RING_OP_AMO, dest, 4, pe);
    if (ishmemi_is_local(pe)) return ishmemi_user_amo32(ishmemi_peer(dest, pe), op, v, cond);
    return (int)ishmemi_ring_wait(ishmemi_ring_send(ISHMEMI_RING_OP_AMO, (ulong)dest, 0, (uint)v, (uint)cond, 0, pe,
                                                    (uint)op | (4u << 8), 0));
}

ISHMEMI_INLINE long ishmemi_amo64_pe(ISHMEMI_GLOBAL void *dest, int op, long v, long cond, int pe) {
    ishmemi_check(ISHMEMI_RING_OP_AMO, dest, 8, pe);
    if (ishmemi_is_local(pe)) return ishmemi_user_amo64(ishmemi_peer(dest, pe), op, v, cond);
    return (long)ishmemi_ring_wait(ishmemi_ring_send(ISHMEMI_RING_OP_AMO, (ulong)dest, 0, (ulong)v, (ulong)cond, 0, pe,
                                                     (uint)op | (8u << 8), 0));
}

/* ----- work-group forms: every work-item of the group calls; the copy is
 * shared among them between group barriers; the leader talks to the ring. */

ISHMEMI_INLINE size_t ishmemi_wg_size(void) { return get_local_size(0) * get_local_size(1) * get_local_size(2); }

/* A group copy by `lsz` work-items, this one being `lid`. Interleaved 16-byte
 * pieces where the target coalesces them (GPUs: neighbouring work-items
 * touch neighbouring bytes), else one contiguous chunk each (CPU caches). */
ISHMEMI_INLINE void ishmemi_group_copy(ISHMEMI_GLOBAL char *dst, ISHMEMI_GLOBAL const char *src, size_t n, size_t lid,
                                      size_t lsz) {
#ifdef ISHMEMI_COALESCED_COPY
    if ((((ulong)dst | (ulong)src) & 15) == 0) {
        size_t vecs = n / 16;
        for (size_t i = lid; i < vecs; i += lsz)
            *(ISHMEMI_GLOBAL long2 *)(dst + 16 * i) = *(ISHMEMI_GLOBAL const long2 *)(src + 16 * i);
        for (size_t i = 16 * vecs + lid; i < n; i += lsz) dst[i] = src[i];
        return;
    }
#endif
    size_t chunk = ((n + lsz - 1) / lsz + 15) & ~(size_t)15;
    size_t lo = lid * chunk;
    if (lo < n) ishmemi_copy(dst + lo, src + lo, min(chunk, n - lo));
}

ISHMEMI_INLINE void ishmemi_wg_copy(ISHMEMI_GLOBAL char *dst, ISHMEMI_GLOBAL const char *src, size_t n) {
    ishmemi_group_copy(dst, src, n, get_local_linear_id(), ishmemi_wg_size());
}

ISHMEMI_INLINE void ishmemi_wg_put_bytes(ISHMEMI_GLOBAL void *dest, ISHMEMI_GLOBAL const void *src, size_t n, int pe, int nbi) {
    ishmemi_check(ISHMEMI_RING_OP_PUT, dest, n, pe);
    work_group_barrier(CLK_GLOBAL_MEM_FENCE);
    int near = ishmemi_is_local(pe);
    /* The group agrees on the leader's claim of the copy engine. */
    int ce = near && ishmemi_copy_engine(n, ishmemi_state->copy_cutover_group, src) &&
             ISHMEMI_WG_OR(get_local_linear_id() == 0 && ishmemi_ce_claim());
    if (near && !ce)
        ishmemi_wg_copy(ishmemi_peer(dest, pe), (ISHMEMI_GLOBAL const char *)src, n);
    else if (get_local_linear_id() == 0) {
        ishmemi_ring_put(dest, src, n, pe, nbi && !ce);
        if (ce) ishmemi_ce_release();
    }
    work_group_barrier(CLK_GLOBAL_MEM_FENCE);
}

ISHMEMI_INLINE void ishmemi_wg_get_bytes(ISHMEMI_GLOBAL void *dest, ISHMEMI_GLOBAL const void *src, size_t n, int pe, int nbi) {
    ishmemi_check(ISHMEMI_RING_OP_GET, src, n, pe);
    work_group_barrier(CLK_GLOBAL_MEM_FENCE);
    int near = ishmemi_is_local(pe);
    /* The group agrees on the leader's claim of the copy engine. */
    int ce = near && ishmemi_copy_engine(n, ishmemi_state->copy_cutover_group, dest) &&
             ISHMEMI_WG_OR(get_local_linear_id() == 0 && ishmemi_ce_claim());
    if (near && !ce)
        ishmemi_wg_copy((ISHMEMI_GLOBAL char *)dest, ishmemi_peer(src, pe), n);
    else if (get_local_linear_id() == 0) {
        ishmemi_ring_get(dest, src, n, pe, nbi && !ce);
        if (ce) ishmemi_ce_release();
    }
    work_group_barrier(CLK_GLOBAL_MEM_FENCE);
}

/* ----- sub-group forms: the same sharing over the calling sub-group ----- */

ISHMEMI_INLINE void ishmemi_sg_copy(ISHMEMI_GLOBAL char *dst, ISHMEMI_GLOBAL const char *src, size_t n) {
    ishmemi_group_copy(dst, src, n, get_sub_group_local_id(), get_sub_group_size());
}

ISHMEMI_INLINE void ishmemi_sg_put_bytes(ISHMEMI_GLOBAL void *dest, ISHMEMI_GLOBAL const void *src, size_t n, int pe, int nbi) {
    ishmemi_check(ISHMEMI_RING_OP_PUT, dest, n, pe);
    sub_group_barrier(CLK_GLOBAL_MEM_FENCE);
    int near = ishmemi_is_local(pe);
    /* The group agrees on the leader's claim of the copy engine. */
    int ce = near && ishmemi_copy_engine(n, ishmemi_state->copy_cutover_group, src) &&
             ISHMEMI_SG_OR(get_sub_group_local_id() == 0 && ishmemi_ce_claim());
    if (near && !ce)
        ishmemi_sg_copy(ishmemi_peer(dest, pe), (ISHMEMI_GLOBAL const char *)src, n);
    else if (get_sub_group_local_id() == 0) {
        ishmemi_ring_put(dest, src, n, pe, nbi && !ce);
        if (ce) ishmemi_ce_release();
    }
    sub_group_barrier(CLK_GLOBAL_MEM_FENCE);
}

ISHMEMI_INLINE void ishmemi_sg_get_bytes(ISHMEMI_GLOBAL void *dest, ISHMEMI_GLOBAL const void *src, size_t n, int pe, int nbi) {
    ishmemi_check(ISHMEMI_RING_OP_GET, src, n, pe);
    sub_group_barrier(CLK_GLOBAL_MEM_FENCE);
    int near = ishmemi_is_local(pe);
    /* The group agrees on the leader's claim of the copy engine. */
    int ce = near && ishmemi_copy_engine(n, ishmemi_state->copy_cutover_group, dest) &&
             ISHMEMI_SG_OR(get_sub_group_local_id() == 0 && ishmemi_ce_claim());
    if (near && !ce)
        ishmemi_sg_copy((ISHMEMI_GLOBAL char *)dest, ishmemi_peer(src, pe), n);
    else if (get_sub_group_local_id() == 0) {
        ishmemi_ring_get(dest, src, n, pe, nbi && !ce);
        if (ce) ishmemi_ce_release();
    }
    sub_group_barrier(CLK_GLOBAL_MEM_FENCE);
}

/* ----- teams: the host mirrors every team slot into the device table ----- */

typedef struct {
    int start, stride, size, my_rank;
} ishmemi_team_t;
_Static_assert(sizeof(ishmemi_team_t) == 16, "ishmemx_device_team_t layout");

#define ISHMEMI_TEAM_SLOTS 64

/* The team behind a handle, or 0 (TEAM_INVALID, or no team on this PE). */
ISHMEMI_INLINE ISHMEMI_GLOBAL const ishmemi_team_t *ishmemi_get_team(int team) {
    if (team < 0 || team >= ISHMEMI_TEAM_SLOTS) return 0;
    ISHMEMI_GLOBAL const ishmemi_team_t *t = (ISHMEMI_GLOBAL const ishmemi_team_t *)ishmemi_state->teams + team;
    return t->size > 0 ? t : 0;
}

ISHMEMI_INLINE int ishmemi_member(ISHMEMI_GLOBAL const ishmemi_team_t *t, int rank) { return t->start + rank * t->stride; }

/* Team sync (dissemination), interoperable with the host's: the same flags
 * and epoch in the node's control segment, slot = team handle. Flags of
 * PEs the device cannot reach are stored by the host (ring). */
/* PE `pe`'s synchronization record for team slot `slot` in this node's
 * control segment (flags, then epoch, then two scratch words). */
ISHMEMI_INLINE ISHMEMI_GLOBAL char *ishmemi_team_record(int slot, int pe) {
    return (ISHMEMI_GLOBAL char *)ishmemi_state->ctrl_team_base + slot * (ulong)ishmemi_state->ctrl_team_stride +
           pe * (ulong)ishmemi_state->ctrl_pe_stride;
}

ISHMEMI_INLINE void ishmemi_sync_team(int slot) {
    ISHMEMI_GLOBAL const ishmemi_team_t *t = ishmemi_get_team(slot);
    int n = t->size, rank = t->my_rank;
    ISHMEMI_GLOBAL char *mine = ishmemi_team_record(slot, ishmemi_member(t, rank));
    long epoch = ishmemi_load64(mine + ishmemi_state->ctrl_epoch_offset) + 1;
    ishmemi_store64(mine + ishmemi_state->ctrl_epoch_offset, epoch);
    for (int dist = 1, round = 0; dist < n; dist <<= 1, round++) {
        int to = ishmemi_member(t, (rank + dist) % n);
        ISHMEMI_GLOBAL char *flag = ishmemi_team_record(slot, to) + 8 * round;
        if (ishmemi_is_local(to))
            ishmemi_store64(flag, epoch);
        else /* another node: the host stores it (after this PE's operations complete) */
            ishmemi_ring_send(ISHMEMI_RING_OP_CTRL_SET, (ulong)flag, 0, (ulong)epoch, 0, 0, to, 0, ISHMEMI_RING_OP_FLAG_NBI);
        while (ishmemi_load64(mine + 8 * round) < epoch) ;
    }
    ishmemi_fence_all();
}

ISHMEMI_INLINE void ishmemi_sync_world(void) { ishmemi_sync_team(0); }

/* ----- collectives (one work-item per PE calls, as on the host): sync,
 * data phase through the routing helpers (load/store or ring), sync. */

ISHMEMI_INLINE int ishmemi_broadcast_bytes(int team, ISHMEMI_GLOBAL void *dest, ISHMEMI_GLOBAL const void *src, size_t n, int root) {
    ISHMEMI_GLOBAL const ishmemi_team_t *t = ishmemi_get_team(team);
    if (!t || root < 0 || root >= t->size) return -1;
    ishmemi_sync_team(team);
    if (n) ishmemi_get_bytes(dest, src, n, ishmemi_member(t, root), 0);
    ishmemi_sync_team(team);
    return 0;
}

ISHMEMI_INLINE int ishmemi_fcollect_bytes(int team, ISHMEMI_GLOBAL void *dest, ISHMEMI_GLOBAL const void *src, size_t n) {
    ISHMEMI_GLOBAL const ishmemi_team_t *t = ishmemi_get_team(team);
    if (!t) return -1;
    ishmemi_sync_team(team);
    for (int k = 0; k < t->size && n; k++) {
        int r = (t->my_rank + k) % t->size;
        ishmemi_put_bytes((ISHMEMI_GLOBAL char *)dest + t->my_rank * n, src, n, ishmemi_member(t, r), 0);
    }
    ishmemi_sync_team(team);
    return 0;
}

ISHMEMI_INLINE int ishmemi_alltoall_bytes(int team, ISHMEMI_GLOBAL void *dest, ISHMEMI_GLOBAL const void *src, size_t n) {
    ISHMEMI_GLOBAL const ishmemi_team_t *t = ishmemi_get_team(team);
    if (!t) return -1;
    ishmemi_sync_team(team);
    for (int k = 0; k < t->size && n; k++) {
        int j = (t->my_rank + k) % t->size;
        ishmemi_put_bytes((ISHMEMI_GLOBAL char *)dest + t->my_rank * n, (ISHMEMI_GLOBAL const char *)src + j * n, n,
                          ishmemi_member(t, j), 0);
    }
    ishmemi_sync_team(team);
    return 0;
}

/* Whether this PE reaches every member of the team by loads and stores. */
ISHMEMI_INLINE int ishmemi_team_all_local(ISHMEMI_GLOBAL const ishmemi_team_t *t) {
    for (int r = 0; r < t->size; r++)
        if (!ishmemi_is_local(ishmemi_member(t, r))) return 0;
    return 1;
}

/* ----- work-group collectives: the leader syncs the team, the whole group
 * moves the data (the group's put/get: its threads' loads and stores, the
 * copy engine past the group cutover, the ring to PEs it cannot reach),
 * and the leader completes and syncs again. */
ISHMEMI_INLINE void ishmemi_wg_sync_team(int team) {
    work_group_barrier(CLK_GLOBAL_MEM_FENCE);
    if (get_local_linear_id() == 0) {
        ishmemi_ring_quiet();
        ishmemi_fence_all(); /* the group's stores, ordered by the barrier before */
        ishmemi_sync_team(team);
    }
    work_group_barrier(CLK_GLOBAL_MEM_FENCE);
}

ISHMEMI_INLINE int ishmemi_wg_broadcast_bytes(int team, ISHMEMI_GLOBAL void *dest, ISHMEMI_GLOBAL const void *src, size_t n,
                                             int root) {
    ISHMEMI_GLOBAL const ishmemi_team_t *t = ishmemi_get_team(team);
    if (!t || root < 0 || root >= t->size) return -1;
    ishmemi_wg_sync_team(team);
    if (n) ishmemi_wg_get_bytes(dest, src, n, ishmemi_member(t, root), 0);
    ishmemi_wg_sync_team(team);
    return 0;
}

ISHMEMI_INLINE int ishmemi_wg_fcollect_bytes(int team, ISHMEMI_GLOBAL void *dest, ISHMEMI_GLOBAL const void *src, size_t n) {
    ISHMEMI_GLOBAL const ishmemi_team_t *t = ishmemi_get_team(team);
    if (!t) return -1;
    ishmemi_wg_sync_team(team);
    for (int k = 0; k < t->size && n; k++) {
        int r = (t->my_rank + k) % t->size;
        ishmemi_wg_put_bytes((ISHMEMI_GLOBAL char *)dest + t->my_rank * n, src, n, ishmemi_member(t, r), 0);
    }
    ishmemi_wg_sync_team(team);
    return 0;
}

ISHMEMI_INLINE int ishmemi_wg_alltoall_bytes(int team, ISHMEMI_GLOBAL void *dest, ISHMEMI_GLOBAL const void *src, size_t n) {
    ISHMEMI_GLOBAL const ishmemi_team_t *t = ishmemi_get_team(team);
    if (!t) return -1;
    ishmemi_wg_sync_team(team);
    for (int k = 0; k < t->size && n; k++) {
        int j = (t->my_rank + k) % t->size;
        ishmemi_wg_put_bytes((ISHMEMI_GLOBAL char *)dest + t->my_rank * n, (ISHMEMI_GLOBAL const char *)src + j * n, n,
                             ishmemi_member(t, j), 0);
    }
    ishmemi_wg_sync_team(team);
    return 0;
}

/* A team-sync scratch word of member `pe` (its address in this node's
 * control segment): loaded when the device reaches `pe`, else read by the
 * host (the ring's CTRL_GET). */
ISHMEMI_INLINE ulong ishmemi_ctrl_read(ISHMEMI_GLOBAL char *word, int pe) {
    if (ishmemi_is_local(pe)) return (ulong)ishmemi_load64(word);
    return ishmemi_ring_wait(ishmemi_ring_send(ISHMEMI_RING_OP_CTRL_GET, 0, (ulong)word, 0, 0, 0, pe, 0, 0));
}

/* collect (element counts differ per member): each member publishes its
 * count in its team record's scratch word for the next sync (the host's
 * protocol: parity of that sync's epoch), syncs, sums the counts of the
 * members before it for its offset, puts its block to every member, and
 * syncs again. `elem` is the element size in bytes. */
ISHMEMI_INLINE int ishmemi_collect_bytes(int team, ISHMEMI_GLOBAL void *dest, ISHMEMI_GLOBAL const void *src, size_t nelems,
                                        size_t elem) {
    ISHMEMI_GLOBAL const ishmemi_team_t *t = ishmemi_get_team(team);
    if (!t) return -1;
    ISHMEMI_GLOBAL char *mine = ishmemi_team_record(team, ishmemi_member(t, t->my_rank));
    long epoch = ishmemi_load64(mine + ishmemi_state->ctrl_epoch_offset) + 1;
    ulong scratch = ishmemi_state->ctrl_epoch_offset + 8 + 8 * (ulong)(epoch % 2);
    ishmemi_store64(mine + scratch, (long)nelems);
    ishmemi_sync_team(team);
    size_t off = 0;
    for (int r = 0; r < t->my_rank; r++) {
        int pe = ishmemi_member(t, r);
        off += ishmemi_ctrl_read(ishmemi_team_record(team, pe) + scratch, pe);
    }
    for (int k = 0; k < t->size && nelems; k++) {
        int r = (t->my_rank + k) % t->size;
        ishmemi_put_bytes((ISHMEMI_GLOBAL char *)dest + off * elem, src, nelems * elem, ishmemi_member(t, r), 0);
    }
    ishmemi_ring_quiet();
    ishmemi_sync_team(team);
    return 0;
}

/* sum_inscan / sum_exscan (Intel SHMEM): member r's dest gets the sum of
 * members 0..r's sources (exscan: 0..r-1; member 0 gets zeros). Member r
 * owns element slice r and walks the members in order with a running sum,
 * reading each member's source element before writing its dest element, so
 * in place is safe. */
#define ISHMEMI_SCAN(T, G, P, EXCLUSIVE)                                               \
    ISHMEMI_GLOBAL const ishmemi_team_t *t = ishmemi_get_team(team);                   \
    if (!t) return -1;                                                                 \
    ishmemi_sync_team(team);                                                           \
    size_t per = (nelems + t->size - 1) / t->size;                                     \
    size_t lo = min((size_t)t->my_rank * per, nelems), hi = min(lo + per, nelems);     \
    for (size_t i = lo; i < hi; i++) {                                                 \
        T a = 0;                                                                       \
        for (int r = 0; r < t->size; r++) {                                            \
            T b = G(source + i, ishmemi_member(t, r));                                 \
            if (EXCLUSIVE) P(dest + i, a, ishmemi_member(t, r));                       \
            a = (T)(a + b);                                                            \
            if (!(EXCLUSIVE)) P(dest + i, a, ishmemi_member(t, r));                    \
        }                                                                              \
    }                                                                                  \
    ishmemi_ring_quiet();                                                              \
    ishmemi_sync_team(team);                                                           \
    return 0;

/* Work-group form of a collective: the group's leader runs `CALL` between
 * group barriers (the data phase is the collective's own); every work-item
 * returns the result of the same argument check the collective makes. */
ISHMEMI_INLINE int ishmemi_coll_check(int team, int root) {
    ISHMEMI_GLOBAL const ishmemi_team_t *t = ishmemi_get_team(team);
    return t && root >= 0 && root < t->size ? 0 : -1;
}
#define ISHMEMI_WG_COLL(TEAM, ROOT, CALL)                                  \
    work_group_barrier(CLK_GLOBAL_MEM_FENCE);                              \
    int ok_ = ishmemi_coll_check(TEAM, ROOT);                              \
    if (ok_ == 0 && get_local_linear_id() == 0) (void)(CALL);              \
    work_group_barrier(CLK_GLOBAL_MEM_FENCE);                              \
    return ok_;

/* Reductions: member r owns slice r (reduce-scatter + allgather in one
 * pass), reading it from every member's source in member order and storing
 * the result into every member's dest; in place is safe because only the
 * owner touches its slice. When every member is reached by loads and
 * stores, the slice is read and written through the peers' addresses
 * directly (`LID` of `LSZ` work-items sharing it, neighbours on neighbouring
 * elements), the extents checked once; otherwise element by element with
 * `G`/`P`, the typed g/p routines (they route). */
#define ISHMEMI_REDUCE_SLICE(T, OP, LID, LSZ)                                                  \
    size_t per = (nreduce + t->size - 1) / t->size;                                            \
    size_t lo = min((size_t)t->my_rank * per, nreduce), hi = min(lo + per, nreduce);           \
    for (size_t i = lo + (LID); i < hi; i += (LSZ)) {                                          \
        T a = *(ISHMEMI_GLOBAL const T *)ishmemi_peer(source + i, ishmemi_member(t, 0));       \
        for (int r = 1; r < t->size; r++) {                                                    \
            T b = *(ISHMEMI_GLOBAL const T *)ishmemi_peer(source + i, ishmemi_member(t, r));   \
            a = OP;                                                                            \
        }                                                                                      \
        for (int r = 0; r < t->size; r++) *(ISHMEMI_GLOBAL T *)ishmemi_peer(dest + i, ishmemi_member(t, r)) = a; \
    }
#define ISHMEMI_REDUCE_CHECK(T)                                                               \
    ishmemi_check(ISHMEMI_RING_OP_GET, source, nreduce * sizeof(T), ishmemi_member(t, t->my_rank)); \
    ishmemi_check(ISHMEMI_RING_OP_PUT, dest, nreduce * sizeof(T), ishmemi_member(t, t->my_rank));
#define ISHMEMI_REDUCE(T, G, P, OP)                                                     \
    ISHMEMI_GLOBAL const ishmemi_team_t *t = ishmemi_get_team(team);                   \
    if (!t) return -1;                                                                 \
    ishmemi_sync_team(team);                                                           \
    if (ishmemi_team_all_local(t)) {                                                   \
        ISHMEMI_REDUCE_CHECK(T)                                                        \
        ISHMEMI_REDUCE_SLICE(T, OP, 0, 1)                                              \
    } else {                                                                           \
        size_t per = (nreduce + t->size - 1) / t->size;                                \
        size_t lo = min((size_t)t->my_rank * per, nreduce), hi = min(lo + per, nreduce); \
        for (size_t i = lo; i < hi; i++) {                                             \
            T a = G(source + i, ishmemi_member(t, 0));                                 \
            for (int r = 1; r < t->size; r++) {                                        \
                T b = G(source + i, ishmemi_member(t, r));                             \
                a = OP;                                                                \
            }                                                                          \
            for (int r = 0; r < t->size; r++) P(dest + i, a, ishmemi_member(t, r));    \
        }                                                                              \
    }                                                                                  \
    ishmemi_ring_quiet();                                                              \
    ishmemi_sync_team(team);                                                           \
    return 0;

/* Work-group reduction: the whole group shares the slice when every member
 * is reached by loads and stores; otherwise the leader runs `CALL`, the
 * thread form. */
#define ISHMEMI_WG_REDUCE(T, OP, CALL)                                                  \
    ISHMEMI_GLOBAL const ishmemi_team_t *t = ishmemi_get_team(team);                   \
    if (!t) return -1;                                                                 \
    if (!ishmemi_team_all_local(t)) {                                                  \
        ISHMEMI_WG_COLL(team, 0, CALL)                                                 \
    }                                                                                  \
    ISHMEMI_REDUCE_CHECK(T)                                                            \
    ishmemi_wg_sync_team(team);                                                        \
    ISHMEMI_REDUCE_SLICE(T, OP, get_local_linear_id(), ishmemi_wg_size())              \
    ishmemi_wg_sync_team(team);                                                        \
    return 0;

#endif
