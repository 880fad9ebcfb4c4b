/* Target header: OpenCL C 3.0 with the generic address space. The library's
 * routines take generic pointers, as CUDA's do and as SYCL code passes them;
 * its atomics convert to global pointers first, because Intel's CPU runtime
 * cannot build 64-bit atomics through generic ones (see device-lib/README.md;
 * the build declares the builtins' global-pointer forms beside the generic
 * ones). The portable core (core.h) uses only these names; a CUDA build
 * supplies the same names in another target header. */
#ifndef ISHMEMI_TARGET_OPENCL_H
#define ISHMEMI_TARGET_OPENCL_H

#define ISHMEMI_INLINE static inline
/* Inlined whatever the optimizer's size estimate: core.h's routing
 * routines, which take the group as a constant argument and must keep
 * only the calling form's code (a work-item's put must not carry the
 * group barriers). */
#define ISHMEMI_FOLD static inline __attribute__((always_inline))
/* A helper kept out of line (see its uses in core.h). */
#define ISHMEMI_NOINLINE static __attribute__((noinline))
/* After a device-side error report: waits until the host ends the job.
 * Not marked noreturn here: a noreturn call inside a work-group routine
 * made Intel's CPU OpenCL compiler let the group's leader run past a later
 * work-group barrier before the other work-items (a work-group reduction
 * signalled its sync before its stores). The loop's condition never
 * fails in practice (the completion count never reaches ~0). */
#define ISHMEMI_ENDS_JOB
#define ISHMEMI_AWAIT_JOB_END(ring) while ((ulong)ishmemi_ring_rd64((ring) + ISHMEMI_RING_COMPLETED) != ~0ul) {}
/* An exported routine of the library, and its program-scope state. */
#define ISHMEMI_API
#define ISHMEMI_VAR

#define ISHMEMI_SCOPE memory_scope_all_svm_devices

typedef volatile global atomic_int ishmemi_a32;
typedef volatile global atomic_long ishmemi_a64;

ISHMEMI_INLINE int ishmemi_load32(void *p) {
    return atomic_load_explicit((ishmemi_a32 *)p, memory_order_acquire, ISHMEMI_SCOPE);
}
ISHMEMI_INLINE long ishmemi_load64(void *p) {
    return atomic_load_explicit((ishmemi_a64 *)p, memory_order_acquire, ISHMEMI_SCOPE);
}
ISHMEMI_INLINE void ishmemi_store64(void *p, long v) {
    atomic_store_explicit((ishmemi_a64 *)p, v, memory_order_release, ISHMEMI_SCOPE);
}
ISHMEMI_INLINE void ishmemi_fence_all(void) {
    atomic_work_item_fence(CLK_GLOBAL_MEM_FENCE, memory_order_seq_cst, ISHMEMI_SCOPE);
}

/* Whether the host proxy can read or write a buffer the device passes
 * through the ring: global memory, not a work-item's private or a
 * work-group's local memory (whose bytes travel in the ring's messages). */
#define ISHMEMI_HOST_REACHES(p) (to_global((const void *)(p)) != 0)

/* AMO opcodes: generated from the runtime's AmoOp (device_codes.h). */
#include "device_codes.h"
_Static_assert(ISHMEMI_AMO_COUNT == 8, "the AMO switches below handle each of the 8 opcodes");

#define ISHMEMI_AMO_BODY(A, T)                                                              \
    switch (op) {                                                                            \
    case ISHMEMI_FETCH: return atomic_load_explicit((A *)p, memory_order_seq_cst, ISHMEMI_SCOPE); \
    case ISHMEMI_SET: atomic_store_explicit((A *)p, v, memory_order_seq_cst, ISHMEMI_SCOPE); return 0; \
    case ISHMEMI_SWAP: return atomic_exchange_explicit((A *)p, v, memory_order_seq_cst, ISHMEMI_SCOPE); \
    case ISHMEMI_CSWAP: {                                                                    \
        T expected = cond;                                                                   \
        atomic_compare_exchange_strong_explicit((A *)p, &expected, v, memory_order_seq_cst,  \
                                                memory_order_seq_cst, ISHMEMI_SCOPE);        \
        return expected;                                                                     \
    }                                                                                        \
    case ISHMEMI_FADD: return atomic_fetch_add_explicit((A *)p, v, memory_order_seq_cst, ISHMEMI_SCOPE); \
    case ISHMEMI_FAND: return atomic_fetch_and_explicit((A *)p, v, memory_order_seq_cst, ISHMEMI_SCOPE); \
    case ISHMEMI_FOR: return atomic_fetch_or_explicit((A *)p, v, memory_order_seq_cst, ISHMEMI_SCOPE);   \
    default: return atomic_fetch_xor_explicit((A *)p, v, memory_order_seq_cst, ISHMEMI_SCOPE);          \
    }

ISHMEMI_INLINE int ishmemi_amo32(void *p, int op, int v, int cond) { ISHMEMI_AMO_BODY(ishmemi_a32, int) }
ISHMEMI_INLINE long ishmemi_amo64(void *p, int op, long v, long cond) { ISHMEMI_AMO_BODY(ishmemi_a64, long) }

/* 8-bit AMOs (OpenCL has no 8- or 16-bit atomics): a compare-and-swap loop
 * on the aligned 32-bit word that holds the byte (little-endian, as every
 * device we target). Atomic against other AMOs on the byte, host ones too
 * (the host's byte atomics and this word CAS are both locked RMWs). */
ISHMEMI_INLINE char ishmemi_amo8(void *p, int op, char v, char cond) {
    ulong a = (ulong)p;
    ishmemi_a32 *w = (ishmemi_a32 *)(a & ~(ulong)3);
    int shift = (int)(a & 3) * 8;
    int old = atomic_load_explicit(w, memory_order_seq_cst, ISHMEMI_SCOPE);
    if (op == ISHMEMI_FETCH) return (char)(old >> shift);
    for (;;) {
        char o = (char)(old >> shift), n;
        switch (op) {
        case ISHMEMI_CSWAP: if (o != cond) return o; n = v; break;
        case ISHMEMI_FADD: n = (char)(o + v); break;
        case ISHMEMI_FAND: n = o & v; break;
        case ISHMEMI_FOR: n = o | v; break;
        case ISHMEMI_FXOR: n = o ^ v; break;
        default: n = v; break; /* set, swap */
        }
        int nw = (old & ~(0xff << shift)) | ((int)(uchar)n << shift);
        if (atomic_compare_exchange_weak_explicit(w, &old, nw, memory_order_seq_cst, memory_order_seq_cst, ISHMEMI_SCOPE))
            return o;
    }
}

/* Group votes: not used here. The OpenCL targets' group forms never hand a
 * transfer to a copy engine (the CPU device's cutovers are 0), so the vote
 * is 0 and its argument (the leader's claim) is not evaluated. */
#define ISHMEMI_WG_OR(x) 0
#define ISHMEMI_SG_OR(x) 0

#endif
