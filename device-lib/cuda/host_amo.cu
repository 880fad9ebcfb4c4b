// The kernel the runtime launches for a host AMO on GPU memory (a host
// shmem_atomic_* on a heap in GPU memory): one thread, system-scope
// atomics, so it is atomic with device code's AMOs on the same word (CPU
// atomics on device memory are not). Compiled to PTX by gen-host-amo.sh
// into runtime/src/device/cuda/host_amo.ptx, which is checked in (the
// runtime JIT-compiles it with the driver: building libishmem needs no
// CUDA compiler). Opcodes are the runtime's AmoOp values (device_codes.h,
// generated from it).
#include <cuda/atomic>

#include "../src/device_codes.h"
static_assert(ISHMEMI_AMO_COUNT == 8, "the AMO switches below handle each of the 8 opcodes");

namespace {
typedef unsigned long long u64;
typedef unsigned int u32;

template <typename T>
__device__ T apply(T old, u32 op, T v, T cond) {
    switch (op) {
    case ISHMEMI_FETCH: return old;
    case ISHMEMI_SET: case ISHMEMI_SWAP: return v;
    case ISHMEMI_CSWAP: return old == cond ? v : old;
    case ISHMEMI_FADD: return (T)(old + v);
    case ISHMEMI_FAND: return old & v;
    case ISHMEMI_FOR: return old | v;
    default: return old ^ v; /* ISHMEMI_FXOR */
    }
}

template <typename T>
__device__ T native(T *p, u32 op, T v, T cond) {
    cuda::atomic_ref<T, cuda::thread_scope_system> a(*p);
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

// 8- and 16-bit: a compare-and-swap loop on the aligned 32-bit word that
// holds the value (little-endian lanes).
__device__ u32 narrow(u64 addr, u32 bytes, u32 op, u32 v, u32 cond) {
    u32 *w = (u32 *)(addr & ~(u64)3);
    u32 shift = (u32)(addr & 3) * 8;
    u32 lane = bytes == 1 ? 0xffu : 0xffffu;
    cuda::atomic_ref<u32, cuda::thread_scope_system> a(*w);
    u32 old = a.load();
    for (;;) {
        u32 o = (old >> shift) & lane;
        if (op == ISHMEMI_FETCH) return o;
        u32 n = apply<u32>(o, op, v & lane, cond & lane) & lane;
        u32 nw = (old & ~(lane << shift)) | (n << shift);
        if (nw == old || a.compare_exchange_weak(old, nw)) return o;
    }
}
} // namespace

extern "C" __global__ void ishmemi_host_amo(u64 addr, u32 size, u32 op, u64 operand, u64 cond, u64 *out) {
    u64 old;
    switch (size) {
    case 8: old = native<u64>((u64 *)addr, op, operand, cond); break;
    case 4: old = native<u32>((u32 *)addr, op, (u32)operand, (u32)cond); break;
    default: old = narrow(addr, size, op, (u32)operand, (u32)cond); break;
    }
    cuda::atomic_ref<u64, cuda::thread_scope_system>(*out).store(old);
}
