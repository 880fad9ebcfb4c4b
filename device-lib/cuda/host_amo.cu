// The kernels the runtime launches for AMOs the host performs on GPU memory
// (a host shmem_atomic_* on a heap in GPU memory; a device request the
// ring server performs): system-scope atomics, so they are atomic with
// device code's AMOs on the same word (CPU atomics on device memory are
// not). Compiled to PTX by gen-host-amo.sh into
// runtime/src/device/cuda/host_amo.ptx, which is checked in (the runtime
// JIT-compiles it with the driver: building libishmem needs no CUDA
// compiler). Opcodes are the runtime's AmoOp values (device_codes.h,
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
__device__ T native(T *p, u32 op, T v, T cond, cuda::memory_order mo) {
    cuda::atomic_ref<T, cuda::thread_scope_system> a(*p);
    switch (op) {
    case ISHMEMI_FETCH: return a.load(mo);
    case ISHMEMI_SET: a.store(v, mo); return 0;
    case ISHMEMI_SWAP: return a.exchange(v, mo);
    case ISHMEMI_CSWAP: a.compare_exchange_strong(cond, v, mo); return cond;
    case ISHMEMI_FADD: return a.fetch_add(v, mo);
    case ISHMEMI_FAND: return a.fetch_and(v, mo);
    case ISHMEMI_FOR: return a.fetch_or(v, mo);
    default: return a.fetch_xor(v, mo);
    }
}

// 8- and 16-bit: a compare-and-swap loop on the aligned 32-bit word that
// holds the value (little-endian lanes).
__device__ u32 narrow(u64 addr, u32 bytes, u32 op, u32 v, u32 cond, cuda::memory_order mo) {
    u32 *w = (u32 *)(addr & ~(u64)3);
    u32 shift = (u32)(addr & 3) * 8;
    u32 lane = bytes == 1 ? 0xffu : 0xffffu;
    cuda::atomic_ref<u32, cuda::thread_scope_system> a(*w);
    u32 old = a.load(mo);
    for (;;) {
        u32 o = (old >> shift) & lane;
        if (op == ISHMEMI_FETCH) return o;
        u32 n = apply<u32>(o, op, v & lane, cond & lane) & lane;
        u32 nw = (old & ~(lane << shift)) | (n << shift);
        if (nw == old || a.compare_exchange_weak(old, nw, mo)) return o;
    }
}

__device__ u64 one(u64 addr, u32 size, u32 op, u64 operand, u64 cond, cuda::memory_order mo) {
    switch (size) {
    case 8: return native<u64>((u64 *)addr, op, operand, cond, mo);
    case 4: return native<u32>((u32 *)addr, op, (u32)operand, (u32)cond, mo);
    default: return narrow(addr, size, op, (u32)operand, (u32)cond, mo);
    }
}
} // namespace

extern "C" __global__ void ishmemi_host_amo(u64 addr, u32 size, u32 op, u64 operand, u64 cond, u64 *out) {
    cuda::atomic_ref<u64, cuda::thread_scope_system>(*out).store(
        one(addr, size, op, operand, cond, cuda::memory_order_seq_cst));
}

// Several AMOs in one launch (the ring server's run of AMOs and gs on this
// node's GPU heaps), one thread each: request i is the 32-byte record at
// reqs + 32 * i (address; size | opcode << 32 | wave << 48; operand;
// compare value: the runtime's cuda::atomics), its old value goes to
// out[i]. Waves 0..=waves run one after another, the requests of a wave
// at once, relaxed: the host (the runtime's pass_waves) puts a request
// after the posted (non-blocking) ones before it on its word, which its
// issuer may have issued before it. Launched with n threads, one block.
extern "C" __global__ void ishmemi_host_amo_batch(const u64 *reqs, u32 n, u32 waves, u64 *out) {
    u32 i = threadIdx.x;
    const u64 *r = reqs + 4 * i;
    u32 wave = i < n ? (u32)(r[1] >> 48) : 0;
    for (u32 w = 0; w <= waves; w++) {
        if (i < n && wave == w) {
            u32 size = (u32)r[1], op = (u32)(r[1] >> 32) & 0xffff;
            out[i] = one(r[0], size, op, r[2], r[3], cuda::memory_order_relaxed);
        }
        if (w < waves) {
            cuda::atomic_thread_fence(cuda::memory_order_seq_cst, cuda::thread_scope_system);
            __syncthreads();
        }
    }
    cuda::atomic_thread_fence(cuda::memory_order_seq_cst, cuda::thread_scope_system);
}
