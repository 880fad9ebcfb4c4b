// The kernel the runtime launches for a host AMO on GPU memory (a host
// shmem_atomic_* on a heap in GPU memory): one thread, system-scope
// atomics, so it is atomic with device code's AMOs on the same word (CPU
// atomics on device memory are not). Compiled to PTX by gen-host-amo.sh
// into runtime/src/device/cuda/host_amo.ptx, which is checked in (the
// runtime JIT-compiles it with the driver: building libishmem needs no
// CUDA compiler). Opcodes are the runtime's AmoOp values.
#include <cuda/atomic>

namespace {
typedef unsigned long long u64;
typedef unsigned int u32;

template <typename T>
__device__ T apply(T old, u32 op, T v, T cond) {
    switch (op) {
    case 0: return old;                     // fetch
    case 1: case 2: return v;               // set, swap
    case 3: return old == cond ? v : old;   // compare-and-swap
    case 4: return (T)(old + v);            // fetch-add
    case 5: return old & v;                 // fetch-and
    case 6: return old | v;                 // fetch-or
    default: return old ^ v;                // fetch-xor
    }
}

template <typename T>
__device__ T native(T *p, u32 op, T v, T cond) {
    cuda::atomic_ref<T, cuda::thread_scope_system> a(*p);
    switch (op) {
    case 0: return a.load();
    case 1: a.store(v); return 0;
    case 2: return a.exchange(v);
    case 3: a.compare_exchange_strong(cond, v); return cond;
    case 4: return a.fetch_add(v);
    case 5: return a.fetch_and(v);
    case 6: return a.fetch_or(v);
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
        if (op == 0) return o;
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
