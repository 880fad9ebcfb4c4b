// The reverse-offload ring under load, meant for
// ISHMEM_DEVICE_RING_ALL=1 (every device operation through the ring; it
// passes without it too). Exact results, thousands of threads, many
// wrap-arounds of the 32768-slot ring, every request kind:
//
//   ring_test storm BLOCKS THREADS ITERS   every thread adds 1 to a counter
//       on every PE ITERS times, in a kernel on the legacy default stream
//       (each PE's counter must end at npes * BLOCKS * THREADS * ITERS);
//   ring_test mixed BLOCKS THREADS ITERS   every thread, ITERS times, to a
//       PE that changes each time: p then g of its own word, a put of 1 to
//       64 bytes from a local array then a get of them back, a put from
//       global memory, a fetch_add, a nbi put then quiet; every value read
//       back exactly; concurrently with the host's own atomics on the same
//       counters;
//   ring_test full BLOCKS THREADS ITERS [REPS]   REPS kernels (default 20)
//       in which every thread sends ITERS no-op requests carrying a value
//       unique to it and checks the host's echo (ring_bench_nop.cu): with
//       more threads than the ring's 32768 slots the ring is full, every
//       sender waits for its slot (back-pressure), and a request lost, run
//       twice or answered with another's completion shows as the proxy's
//       lost-request report (or a hang to the harness's limit) or a wrong
//       echo.
#include <ishmem.h>
#include <ishmemx.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

static int me, npes;

#define CK(call)                                                                                               \
    do {                                                                                                       \
        cudaError_t e_ = (call);                                                                               \
        if (e_ != cudaSuccess) {                                                                               \
            fprintf(stderr, "PE %d: %s:%d: %s: %s\n", me, __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
            exit(2);                                                                                           \
        }                                                                                                      \
    } while (0)

__global__ void storm(long *ctr, int iters) {
    int n = ishmem_n_pes();
    for (int i = 0; i < iters; i++)
        for (int pe = 0; pe < n; pe++) ishmem_long_atomic_add(ctr, 1, pe);
}

__device__ long ring_echo(int peer, long value); // ring_bench_nop.cu

__global__ void full(int iters, int rep, unsigned long long *bad) {
    long g = (long)blockIdx.x * blockDim.x + threadIdx.x;
    for (int i = 0; i < iters; i++) {
        long v = (long)rep << 48 | g << 20 | (long)(i & 0xfffff); // unique while g < 2^28, i < 2^20
        if (ring_echo(1 % ishmem_n_pes(), v) != v) atomicAdd(bad, 1ull);
    }
}

// The value thread `g` of PE `me` writes in round `k`.
__host__ __device__ static inline long word(int me, long g, int k) { return (long)me << 48 ^ g << 16 ^ (long)k; }

// words[npes * G]: word [me * G + g] is thread g of PE me's on every PE.
// bytes[npes * G * 64]: the same, 64 bytes a thread. glob: a global-memory
// source of 64 bytes a thread (not symmetric). bad: counts mismatches.
__global__ void mixed(long *words, unsigned char *bytes, unsigned char *glob, long *ctr, unsigned long long *bad,
                      int iters) {
    int me = ishmem_my_pe(), n = ishmem_n_pes();
    long G = (long)gridDim.x * blockDim.x, g = blockIdx.x * (long)blockDim.x + threadIdx.x;
    long slot = (long)me * G + g;
    unsigned char local[64];
    for (int k = 0; k < iters; k++) {
        int pe = (me + 1 + k) % n;
        long v = word(me, g, k);
        ishmem_long_p(&words[slot], v, pe);
        ishmem_quiet();
        if (ishmem_long_g(&words[slot], pe) != v) atomicAdd(bad, 1ull);
        int len = 1 + (int)((g + k) % 64);
        for (int b = 0; b < len; b++) local[b] = (unsigned char)(v >> (8 * (b % 8))) + b;
        ishmem_putmem(&bytes[slot * 64], local, len, pe);
        ishmem_quiet();
        unsigned char back[64];
        ishmem_getmem(back, &bytes[slot * 64], len, pe);
        for (int b = 0; b < len; b++)
            if (back[b] != local[b]) {
                atomicAdd(bad, 1ull);
                break;
            }
        // A put from global memory (the host reads it), nbi, then quiet.
        for (int b = 0; b < 64; b++) glob[g * 64 + b] = (unsigned char)(k + b);
        ishmem_putmem_nbi(&bytes[slot * 64], &glob[g * 64], 64, pe);
        ishmem_quiet();
        ishmem_getmem(back, &bytes[slot * 64], 64, pe);
        for (int b = 0; b < 64; b++)
            if (back[b] != (unsigned char)(k + b)) {
                atomicAdd(bad, 1ull);
                break;
            }
        ishmem_long_atomic_fetch_add(ctr, 1, pe);
    }
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: ring_test storm|mixed|full BLOCKS THREADS ITERS [REPS]\n");
        return 2;
    }
    const char *mode = argv[1];
    int blocks = atoi(argv[2]), threads = atoi(argv[3]), iters = atoi(argv[4]);
    ishmem_init();
    me = ishmem_my_pe();
    npes = ishmem_n_pes();
    long *ctr = (long *)ishmem_calloc(1, sizeof(long));
    long want = 0;
    int failed = 0;
    ishmem_barrier_all();
    if (!strcmp(mode, "storm")) {
        storm<<<blocks, threads>>>(ctr, iters);
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
        want = (long)npes * blocks * threads * iters;
    } else if (!strcmp(mode, "full")) {
        int reps = argc > 5 ? atoi(argv[5]) : 20;
        unsigned long long *bad;
        CK(cudaMallocManaged(&bad, 8));
        *bad = 0;
        for (int r = 0; r < reps; r++) {
            full<<<blocks, threads>>>(iters, r, bad);
            CK(cudaGetLastError());
            CK(cudaDeviceSynchronize());
        }
        if (*bad) {
            fprintf(stderr, "PE %d: full: %llu answers were not the request's own\n", me, *bad);
            failed = 1;
        }
        CK(cudaFree(bad));
        want = 0;
    } else {
        long G = (long)blocks * threads;
        long *words = (long *)ishmem_calloc(npes * G, sizeof(long));
        unsigned char *bytes = (unsigned char *)ishmem_calloc(npes * G * 64, 1);
        unsigned char *glob;
        unsigned long long *bad;
        CK(cudaMalloc(&glob, G * 64));
        CK(cudaMallocManaged(&bad, 8));
        *bad = 0;
        ishmem_barrier_all();
        cudaStream_t s;
        CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
        mixed<<<blocks, threads, 0, s>>>(words, bytes, glob, ctr, bad, iters);
        CK(cudaGetLastError());
        // The host adds to the same counters while the kernel runs.
        for (int i = 0; i < 1000; i++) ishmem_long_atomic_add(ctr, 1, (me + i) % npes);
        CK(cudaStreamSynchronize(s));
        if (*bad) {
            fprintf(stderr, "PE %d: mixed: %llu values read back wrong\n", me, *bad);
            failed = 1;
        }
        // Which values arrived comes from the (k = iters - 1) round's target.
        want = (long)blocks * threads * iters + 1000;
        CK(cudaStreamDestroy(s));
        ishmem_barrier_all();
        CK(cudaFree(glob));
        CK(cudaFree(bad));
        ishmem_free(bytes);
        ishmem_free(words);
    }
    ishmem_barrier_all();
    long got = ishmem_long_atomic_fetch(ctr, me);
    // mixed: every PE's adds spread evenly over the PEs when iters is a
    // multiple of npes (each thread targets me+1, me+2, ... in turn).
    if (!strcmp(mode, "mixed") && iters % npes) want = got;
    if (got != want) {
        fprintf(stderr, "PE %d: %s: counter %ld, want %ld\n", me, mode, got, want);
        failed = 1;
    }
    ishmem_barrier_all();
    if (!failed) printf("PE %d: ring %s ok (%d x %d threads, %d rounds)\n", me, mode, blocks, threads, iters);
    ishmem_free(ctr);
    ishmem_finalize();
    return failed;
}
