/* Target header: CUDA C++ (nvcc, sm_70 and later). The portable core
 * (core.h) and the generated families use only these names, so the same
 * sources build the OpenCL library (target_opencl.h) and this one.
 *
 * Memory model: symmetric memory of peers is reached by plain loads and
 * stores (NVLink or the same GPU); synchronization words and the ring use
 * system-scope atomics (libcu++ cuda::atomic_ref), so they order with the
 * host proxy thread and with other GPUs; the user's AMOs are relaxed
 * GPU-scope atomics (see ishmemi_amo_relaxed). */
#ifndef ISHMEMI_TARGET_CUDA_H
#define ISHMEMI_TARGET_CUDA_H

#include <cuda/atomic>
#include <cstddef>
#include <cstdint>

#define ISHMEMI_INLINE static __device__ inline
/* Inlined whatever the optimizer's size estimate (target_opencl.h). */
#define ISHMEMI_FOLD static __device__ __forceinline__
/* Rare or long paths, kept out of line (core.h says why); `unused`: a
 * program that includes the core need not call them all. */
#define ISHMEMI_COLD static __device__ __noinline__ __attribute__((unused))
#define ISHMEMI_API extern "C" __device__
/* After a device-side error report: waits until the host ends the job,
 * never returning (so that CUDA needs no convergence barrier around the
 * calls; target_opencl.h says why the SPIR-V targets differ). */
#define ISHMEMI_ENDS_JOB __attribute__((noreturn))
#define ISHMEMI_AWAIT_JOB_END(ring) for (;;) (void)ishmemi_ring_rd64((ring) + ISHMEMI_RING_COMPLETED)
/* Threads progress independently (sm_70 and later): one may spin while
 * another of its block has yet to store what a peer waits for. */
#define ISHMEMI_ITEMS_PROGRESS 1
/* A loop the compiler unrolls, so that its loads are in flight together. */
#define ISHMEMI_UNROLL _Pragma("unroll")
#define ISHMEMI_VAR __device__

typedef unsigned long ulong;
typedef unsigned int uint;
typedef unsigned short ushort;
typedef unsigned char uchar;

/* C11 spelling in the shared layout header. */
#ifndef _Static_assert
#define _Static_assert static_assert
#endif

/* The host proxy reaches global memory (and registered host memory), not a
 * thread's local memory or a block's shared memory. */
#define ISHMEMI_HOST_REACHES(p) __isGlobal((const void *)(p))

/* Group copies interleave 16-byte pieces across the threads (coalesced). */
#define ISHMEMI_COALESCED_COPY 1

#define ISHMEMI_SYS cuda::thread_scope_system
template <typename T> using ishmemi_ref = cuda::atomic_ref<T, ISHMEMI_SYS>;

ISHMEMI_INLINE int ishmemi_load32(void *p) {
    return ishmemi_ref<int>(*(int *)p).load(cuda::memory_order_acquire);
}
ISHMEMI_INLINE long ishmemi_load64(void *p) {
    return ishmemi_ref<long>(*(long *)p).load(cuda::memory_order_acquire);
}
ISHMEMI_INLINE long ishmemi_load64(const void *p) { return ishmemi_load64((void *)p); }
ISHMEMI_INLINE void ishmemi_store64(void *p, long v) {
    ishmemi_ref<long>(*(long *)p).store(v, cuda::memory_order_release);
}
ISHMEMI_INLINE void ishmemi_fence_all(void) {
    cuda::atomic_thread_fence(cuda::memory_order_seq_cst, ISHMEMI_SYS);
}

/* The quiet words: a relaxed load (quiet's fence follows), not an acquire. */
#define ISHMEMI_HAVE_PEEK 1
ISHMEMI_INLINE long ishmemi_peek64(void *p) { return ishmemi_ref<long>(*(long *)p).load(cuda::memory_order_relaxed); }

/* Words only this PE's device code touches (its sync counters): relaxed
 * GPU-scope accesses, so a thread on any SM sees the last value another
 * wrote (not a stale L1 line). */
#define ISHMEMI_HAVE_OWN_WORDS 1
ISHMEMI_INLINE long ishmemi_own_load64(void *p) {
    return cuda::atomic_ref<long, cuda::thread_scope_device>(*(long *)p).load(cuda::memory_order_relaxed);
}
ISHMEMI_INLINE void ishmemi_own_store64(void *p, long v) {
    cuda::atomic_ref<long, cuda::thread_scope_device>(*(long *)p).store(v, cuda::memory_order_relaxed);
}
/* Two adjacent own words (16-byte aligned) in one access. */
ISHMEMI_INLINE void ishmemi_own_load2(void *p, ulong *a, ulong *b) {
    ulong x, y;
    asm volatile("ld.volatile.global.v2.u64 {%0, %1}, [%2];" : "=l"(x), "=l"(y) : "l"(p) : "memory");
    *a = x;
    *b = y;
}
ISHMEMI_INLINE void ishmemi_own_store2(void *p, ulong a, ulong b) {
    asm volatile("st.volatile.global.v2.u64 [%0], {%1, %2};" ::"l"(p), "l"(a), "l"(b) : "memory");
}
/* Low-latency words: one 8-byte store carries data and flag together
 * (single-copy atomic), read back by polling 8-byte loads; no fence. */
ISHMEMI_INLINE void ishmemi_ll_store(void *p, ulong v) { *(volatile ulong *)p = v; }
ISHMEMI_INLINE ulong ishmemi_ll_load(const void *p) { return *(const volatile ulong *)p; }
/* After relaxed polls saw flags (of any number of writers): what each
 * writer released is visible. On sm_90 the one-way fence.acquire.sys (PTX
 * ISA 8.6): an L1 invalidation, no memory barrier; before it libcu++'s
 * fence.acq_rel.sys, a full system-scope barrier. */
ISHMEMI_INLINE void ishmemi_fence_acquire(void) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("fence.acquire.sys;" ::: "memory");
#else
    cuda::atomic_thread_fence(cuda::memory_order_acquire, ISHMEMI_SYS);
#endif
}
/* Before relaxed flag stores: what this thread stored before is visible
 * to whoever acquires one of them (one system-scope fence for any number
 * of flags; a system-scope fence costs about 1.7 us on an H100 pair).
 * libcu++ emits the two-way fence.acq_rel.sys for it, and its acquire half
 * is needed: a blocking copy-engine put reads the host's completion with a
 * relaxed load, and this fence is what makes the copy's data part of the
 * release. The one-way fence.release.sys (PTX ISA 8.6, sm_90) costs 0.6 us
 * less (tests/cuda/fence_probe.cu) but needs an acquire after each
 * copy-engine completion first (docs/performance.md, team_sync). */
ISHMEMI_INLINE void ishmemi_fence_release(void) {
    cuda::atomic_thread_fence(cuda::memory_order_release, ISHMEMI_SYS);
}
ISHMEMI_INLINE void ishmemi_store_relaxed64(void *p, long v) {
    ishmemi_ref<long>(*(long *)p).store(v, cuda::memory_order_relaxed);
}

/* The reverse-offload ring (core.h): relaxed system-scope accesses to the
 * ring in host memory (volatile: relaxed at system scope in PTX's model),
 * completions polled as one 16-byte load, tickets claimed one per
 * work-item (a GPU-memory atomic, and nothing in host memory: a
 * system-scope add there a request held the ring to 13-16 M requests/s
 * on an H200, tests/cuda/ring_floor.cu). */
#define ISHMEMI_HAVE_RING_PRIMS 1
ISHMEMI_INLINE ulong ishmemi_ring_rd64(void *p) {
    ulong v;
    asm volatile("ld.volatile.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
ISHMEMI_INLINE void ishmemi_ring_wr64(void *p, ulong v) {
    asm volatile("st.volatile.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
#define ishmemi_ring_publish64 ishmemi_ring_wr64
#define ISHMEMI_RING_PAUSE(ns) __nanosleep(ns)
ISHMEMI_INLINE void ishmemi_ring_rd2(void *p, ulong *a, ulong *b) {
    ulong x, y;
    asm volatile("ld.volatile.global.v2.u64 {%0, %1}, [%2];" : "=l"(x), "=l"(y) : "l"(p) : "memory");
    *a = x;
    *b = y;
}
/* One ticket per work-item: a GPU-memory atomic (as fast as one a warp in
 * tests/cuda/ring_floor.cu). A claim by one lane for its warp's active
 * lanes (__activemask, the leader's atomic, a shuffle; cooperative groups'
 * coalesced_threads() does the same) left claimed tickets without their
 * messages under a full ring, for reasons not understood: on 2
 * H200s (2026-11-27) every run of 200 storms of 32 x 1024 x 4 no-op
 * requests stopped within its first storm, the server waiting on a slot
 * whose message never came (the drain's report: served 365862, the slot
 * holding the previous lap's sequence), while one ticket per lane passed
 * every run. */
ISHMEMI_INLINE ulong ishmemi_ring_claim(void *tickets) {
    return cuda::atomic_ref<ulong, cuda::thread_scope_device>(*(ulong *)tickets).fetch_add(1, cuda::memory_order_relaxed);
}

/* AMO opcodes: generated from the runtime's AmoOp (device_codes.h). */
#include "device_codes.h"
static_assert(ISHMEMI_AMO_COUNT == 8, "the AMO switches below handle each of the 8 opcodes");

template <typename T> ISHMEMI_INLINE T ishmemi_amo(void *p, int op, T v, T cond) {
    ishmemi_ref<T> a(*(T *)p);
    switch (op) {
    case ISHMEMI_FETCH: return a.load();
    case ISHMEMI_SET: a.store(v); return 0;
    case ISHMEMI_SWAP: return a.exchange(v);
    case ISHMEMI_CSWAP: a.compare_exchange_strong(cond, v); return cond;
    case ISHMEMI_FADD: return a.fetch_add(v);
    case ISHMEMI_FAND: return a.fetch_and(v);
    case ISHMEMI_FOR: return a.fetch_or(v);
    default: return a.fetch_xor(v);
    }
}
/* The library's own words (ring tickets, counters, control words) take
 * sequentially consistent system-scope AMOs. The user's AMOs are relaxed,
 * as OpenSHMEM orders them with other operations only through fence and
 * quiet, and GPU-scope: a GPU performs every atomic on its memory in its
 * own L2, whichever GPU (over NVLink) or kernel (the host's AMOs are a
 * kernel on the owning GPU) issues it, so they stay atomic with respect to
 * each other, without a system-scope fence each (ishmemi_user_amo*). */
template <typename T> ISHMEMI_INLINE T ishmemi_amo_relaxed(void *p, int op, T v, T cond) {
    cuda::atomic_ref<T, cuda::thread_scope_device> a(*(T *)p);
    const cuda::memory_order r = cuda::memory_order_relaxed;
    switch (op) {
    case ISHMEMI_FETCH: return a.load(r);
    case ISHMEMI_SET: a.store(v, r); return 0;
    case ISHMEMI_SWAP: return a.exchange(v, r);
    case ISHMEMI_CSWAP: a.compare_exchange_strong(cond, v, r, r); return cond;
    case ISHMEMI_FADD: return a.fetch_add(v, r);
    case ISHMEMI_FAND: return a.fetch_and(v, r);
    case ISHMEMI_FOR: return a.fetch_or(v, r);
    default: return a.fetch_xor(v, r);
    }
}
#define ISHMEMI_HAVE_USER_AMO 1
ISHMEMI_INLINE int ishmemi_user_amo32(void *p, int op, int v, int cond) {
    return ishmemi_amo_relaxed<int>(p, op, v, cond);
}
ISHMEMI_INLINE long ishmemi_user_amo64(void *p, int op, long v, long cond) {
    return ishmemi_amo_relaxed<long>(p, op, v, cond);
}
ISHMEMI_INLINE int ishmemi_amo32(void *p, int op, int v, int cond) { return ishmemi_amo<int>(p, op, v, cond); }
ISHMEMI_INLINE long ishmemi_amo64(void *p, int op, long v, long cond) { return ishmemi_amo<long>(p, op, v, cond); }

/* The signal of a put_signal: a release store (SET) or a release add
 * (ADD) at system scope, after the data the caller stored before it. */
#define ISHMEMI_HAVE_SIGNAL_OP 1
ISHMEMI_INLINE void ishmemi_signal_op(void *p, int op, long v) {
    ishmemi_ref<long> a(*(long *)p);
    if (op == ISHMEMI_SET)
        a.store(v, cuda::memory_order_release);
    else
        a.fetch_add(v, cuda::memory_order_release);
}

/* 8-bit AMOs: a compare-and-swap loop on the aligned 32-bit word that holds
 * the byte (little-endian), as the OpenCL target does. */
ISHMEMI_INLINE char ishmemi_amo8(void *p, int op, char v, char cond) {
    ulong a = (ulong)p;
    ishmemi_ref<int> w(*(int *)(a & ~(ulong)3));
    int shift = (int)(a & 3) * 8;
    int old = w.load();
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
        if (w.compare_exchange_weak(old, nw)) return o;
    }
}

/* Thread groups: an OpenCL work-group is a CUDA block, a sub-group a warp
 * (the library's _work_group and _sub_group forms are built as _block and
 * _warp, see names.h). Warp forms expect the whole warp to call. */
#define CLK_GLOBAL_MEM_FENCE 0
ISHMEMI_INLINE size_t get_local_size(int d) { return d == 0 ? blockDim.x : d == 1 ? blockDim.y : blockDim.z; }
ISHMEMI_INLINE size_t get_local_linear_id(void) {
    return threadIdx.x + (size_t)blockDim.x * (threadIdx.y + (size_t)blockDim.y * threadIdx.z);
}
ISHMEMI_INLINE void work_group_barrier(int) { __syncthreads(); }
ISHMEMI_INLINE uint get_sub_group_local_id(void) { return (uint)(get_local_linear_id() % warpSize); }
ISHMEMI_INLINE uint get_sub_group_size(void) { return warpSize; }
ISHMEMI_INLINE void sub_group_barrier(int) { __syncwarp(); }
/* Group votes (every thread of the block, or of the warp, calls): nonzero
 * when x is nonzero in any of them. */
#define ISHMEMI_WG_OR(x) __syncthreads_or(x)
#define ISHMEMI_SG_OR(x) __any_sync(0xffffffffu, (x))

/* OpenCL's reinterpreting conversions (same size, bits kept). */
template <typename To, typename From> ISHMEMI_INLINE To ishmemi_bits(From f) {
    static_assert(sizeof(To) == sizeof(From), "as_type needs equal sizes");
    To t;
    __builtin_memcpy(&t, &f, sizeof t);
    return t;
}
#define as_char(x) ishmemi_bits<char>(x)
#define as_uchar(x) ishmemi_bits<uchar>(x)
#define as_short(x) ishmemi_bits<short>(x)
#define as_ushort(x) ishmemi_bits<ushort>(x)
#define as_int(x) ishmemi_bits<int>(x)
#define as_uint(x) ishmemi_bits<uint>(x)
#define as_long(x) ishmemi_bits<long>(x)
#define as_ulong(x) ishmemi_bits<ulong>(x)
#define as_float(x) ishmemi_bits<float>(x)
#define as_double(x) ishmemi_bits<double>(x)

#endif
