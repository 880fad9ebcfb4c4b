// What ordering costs between two GPUs, with no library (a benchmark and a
// litmus probe, not a test): the price of each way of making a store
// visible to the other GPU before a flag, and whether the order held.
//
// Two kernels, one per GPU (peer access on), ping-pong: side A stores a
// data word in its own memory, orders it by variant V, stores a flag into
// B's memory, and waits for B's answer; B waits for the flag, reads A's
// data word across the link and counts the times it was not there yet,
// then answers the same way. This is a team sync's pattern: the caller's
// earlier stores must be visible to the members when they leave the sync.
//
//   nvcc -arch=sm_90 -O2 -std=c++17 tests/cuda/fence_probe.cu -o fence_probe && ./fence_probe [iters]
//
// Variants (the ordering before the flag store, and after the flag is
// seen): relaxed (none), gpu-scope fences, a system-scope acq_rel fence, a
// system-scope sequentially consistent fence (__threadfence_system), and a
// release store / acquire load of the flag itself at system scope, and the
// one-way system-scope fences (fence.release.sys before the flag,
// fence.acquire.sys after it: PTX ISA 8.6, sm_90). A
// count of stale reads above 0 shows an order that does not hold; 0 does
// not prove one that does.
#include <cuda/atomic>

#include "check.h"

enum {
    RELAXED,
    FENCE_GPU_ACQREL,
    FENCE_GPU_SC,
    FENCE_SYS_ACQREL,
    FENCE_SYS_SC,
    STORE_SYS_RELEASE,
    FENCE_SYS_ONEWAY,
    FENCE_SYS_RELEASE_LD_ACQUIRE,
    VARIANTS
};
static const char *names[] = {"relaxed (no fence)",
                              "fence.acq_rel.gpu",
                              "fence.sc.gpu (__threadfence)",
                              "fence.acq_rel.sys",
                              "fence.sc.sys (__threadfence_system)",
                              "st.release.sys / ld.acquire.sys on the flag",
                              "fence.release.sys / fence.acquire.sys",
                              "fence.release.sys / ld.acquire.sys on the flag"};

// The one-way fences exist from PTX ISA 8.6 (CUDA 12.8) on sm_90; older
// builds fall back to the two-way fence (the variant's row then says so).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && \
    (__CUDACC_VER_MAJOR__ > 12 || (__CUDACC_VER_MAJOR__ == 12 && __CUDACC_VER_MINOR__ >= 8))
#define ONEWAY 1
__device__ __forceinline__ void fence_release_sys() { asm volatile("fence.release.sys;" ::: "memory"); }
__device__ __forceinline__ void fence_acquire_sys() { asm volatile("fence.acquire.sys;" ::: "memory"); }
#else
#define ONEWAY 0
__device__ __forceinline__ void fence_release_sys() { asm volatile("fence.acq_rel.sys;" ::: "memory"); }
__device__ __forceinline__ void fence_acquire_sys() { asm volatile("fence.acq_rel.sys;" ::: "memory"); }
#endif

using sys_ref = cuda::atomic_ref<unsigned long long, cuda::thread_scope_system>;

__global__ void oneway_built(int *o) { *o = ONEWAY; }

__device__ __forceinline__ void order_before(int v) {
    switch (v) {
    case FENCE_GPU_ACQREL: cuda::atomic_thread_fence(cuda::memory_order_release, cuda::thread_scope_device); break;
    case FENCE_GPU_SC: __threadfence(); break;
    case FENCE_SYS_ACQREL: cuda::atomic_thread_fence(cuda::memory_order_release, cuda::thread_scope_system); break;
    case FENCE_SYS_SC: __threadfence_system(); break;
    case FENCE_SYS_ONEWAY:
    case FENCE_SYS_RELEASE_LD_ACQUIRE: fence_release_sys(); break;
    default: break;
    }
}

__device__ __forceinline__ void order_after(int v) {
    switch (v) {
    case FENCE_GPU_ACQREL: cuda::atomic_thread_fence(cuda::memory_order_acquire, cuda::thread_scope_device); break;
    case FENCE_GPU_SC: __threadfence(); break;
    case FENCE_SYS_ACQREL: cuda::atomic_thread_fence(cuda::memory_order_acquire, cuda::thread_scope_system); break;
    case FENCE_SYS_SC: __threadfence_system(); break;
    case FENCE_SYS_ONEWAY: fence_acquire_sys(); break;
    default: break;
    }
}

__device__ __forceinline__ void flag_store(unsigned long long *f, unsigned long long x, int v) {
    if (v == STORE_SYS_RELEASE) sys_ref(*f).store(x, cuda::memory_order_release);
    else sys_ref(*f).store(x, cuda::memory_order_relaxed);
}

__device__ __forceinline__ void flag_wait(unsigned long long *f, unsigned long long x, int v) {
    if (v == STORE_SYS_RELEASE || v == FENCE_SYS_RELEASE_LD_ACQUIRE)
        while (sys_ref(*f).load(cuda::memory_order_acquire) != x) {
        }
    else
        while (sys_ref(*f).load(cuda::memory_order_relaxed) != x) {
        }
}

// mine: this GPU's words (data, flag); theirs: the other GPU's. Word 0 is
// the data word, word 32 (its own line) the flag.
__global__ void pingpong(int side, int v, unsigned long long *mine, unsigned long long *theirs, int iters,
                         unsigned long long *stale, long long *cycles) {
    unsigned long long bad = 0;
    long long t0 = clock64();
    for (unsigned long long i = 1; i <= (unsigned long long)iters; i++) {
        if (side == 0) {
            // A plain store, as a program's own store before a sync.
            *(volatile unsigned long long *)&mine[0] = i;
            order_before(v);
            flag_store(&theirs[32], i, v);
            flag_wait(&mine[32], i, v);
            order_after(v);
        } else {
            flag_wait(&mine[32], i, v);
            order_after(v);
            if (*(volatile unsigned long long *)&theirs[0] < i) bad++;
            *(volatile unsigned long long *)&mine[0] = i;
            order_before(v);
            flag_store(&theirs[32], i, v);
        }
    }
    *cycles = clock64() - t0;
    *stale = bad;
}

int main(int argc, char **argv) {
    int iters = argc > 1 ? atoi(argv[1]) : 20000;
    int n = 0;
    CK(cudaGetDeviceCount(&n));
    if (n < 2) {
        fprintf(stderr, "fence_probe needs two GPUs\n");
        return 1;
    }
    unsigned long long *w[2], *stale[2];
    long long *cyc[2];
    for (int d = 0; d < 2; d++) {
        CK(cudaSetDevice(d));
        CK(cudaDeviceEnablePeerAccess(1 - d, 0));
        CK(cudaMalloc(&w[d], 64 * sizeof(unsigned long long)));
        CK(cudaMallocManaged(&stale[d], sizeof(unsigned long long)));
        CK(cudaMallocManaged(&cyc[d], sizeof(long long)));
    }
    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, 0));
    printf("# %s x2, %d iterations per variant; half round trip = one order + flag + wait\n", p.name, iters);
    int *oneway;
    CK(cudaMallocManaged(&oneway, sizeof(int)));
    oneway_built<<<1, 1>>>(oneway);
    CK(cudaDeviceSynchronize());
    printf("# one-way fences (fence.release.sys, fence.acquire.sys): %s\n",
           *oneway ? "built" : "not in this build (the two-way fence instead)");
    printf("variant,half_round_trip_us,stale_reads\n");
    for (int round = 0; round < 2; round++) {
        for (int v = 0; v < VARIANTS; v++) {
            cudaEvent_t e0, e1;
            for (int d = 0; d < 2; d++) {
                CK(cudaSetDevice(d));
                CK(cudaMemset(w[d], 0, 64 * sizeof(unsigned long long)));
                CK(cudaDeviceSynchronize());
            }
            CK(cudaSetDevice(0));
            CK(cudaEventCreate(&e0));
            CK(cudaEventCreate(&e1));
            CK(cudaEventRecord(e0));
            for (int d = 1; d >= 0; d--) {
                CK(cudaSetDevice(d));
                pingpong<<<1, 1>>>(d, v, w[d], w[1 - d], iters, stale[d], cyc[d]);
                CK(cudaGetLastError());
            }
            CK(cudaSetDevice(0));
            CK(cudaEventRecord(e1));
            for (int d = 0; d < 2; d++) {
                CK(cudaSetDevice(d));
                CK(cudaDeviceSynchronize());
            }
            float ms = 0;
            CK(cudaEventElapsedTime(&ms, e0, e1));
            if (round == 1) printf("%s,%.3f,%llu\n", names[v], ms * 1e3 / (2.0 * iters), *stale[1]);
            CK(cudaEventDestroy(e0));
            CK(cudaEventDestroy(e1));
        }
    }
    return 0;
}
