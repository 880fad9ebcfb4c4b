// The reverse-offload ring's speed (a benchmark, not a test).
// Run with every device operation through the ring, 2 PEs; PE 0 measures
// against PE 1:
//
//   ISHMEM_DEVICE_RING_ALL=1 ishmrun -n 2 ring_bench
//
// Rows (CSV: figure,threads,value,unit): the round trip of one thread's
// no-op request (the ring alone: built with -DRING_NOP and
// ring_bench_nop.cu, which reaches into the library's core.h for it), `g` and fetch_add (each also a host access
// to the target's GPU memory), and atomic_add (non-fetching: through the
// ring it is posted, so its figures are per call, with one quiet at the
// end of each block's calls), and `p` (posted the same way); requests per second from 1, 32, 1024 and
// 32 x 1024 threads with the one host proxy thread of PE 0 (about 40000
// no-op requests a figure, 4000 of the others: from 32 x 1024 threads one
// request each, a burst), and from 32 x 1024 threads sending 10 each, one
// after another ("rate (10 a thread)": the sustained rate).
#include <ishmem.h>
#include <ishmemx.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#ifdef RING_NOP
__device__ long ring_bench_nop(int peer); // ring_bench_nop.cu
#endif

#include "check.h"

__device__ inline unsigned long long gtime() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// op 0: no-op, 1: g, 2: fetch_add, 3: atomic_add, 4: p (both posted).
__device__ inline long request(int op, long *ctr, int peer) {
#ifdef RING_NOP
    if (op == 0) return ring_bench_nop(peer);
#endif
    if (op == 1) return ishmem_long_g(ctr, peer);
    if (op == 3) {
        ishmem_long_atomic_add(ctr, 1, peer);
        return 0;
    }
    if (op == 4) {
        ishmem_long_p(ctr + 1, 1, peer);
        return 0;
    }
    return ishmem_long_atomic_fetch_add(ctr, 1, peer);
}

__global__ void round_trip(int op, long *ctr, int peer, int iters, unsigned long long *ns, long *sink) {
    long s = 0;
    request(op, ctr, peer);
    unsigned long long t0 = gtime();
    for (int i = 0; i < iters; i++) s += request(op, ctr, peer);
    if (op >= 3) ishmem_quiet();
    *ns = (gtime() - t0) / iters;
    *sink = s;
}

__global__ void rate(int op, long *ctr, int peer, int per, long *sink) {
    long s = 0;
    for (int i = 0; i < per; i++) s += request(op, ctr, peer);
    if (op >= 3) {
        // One quiet per block completes every thread's adds (quiet
        // completes what the PE issued before it).
        __syncthreads();
        if (threadIdx.x == 0) ishmem_quiet();
    }
    if (s == -1) *sink = s;
}

int main() {
    ishmem_init();
    int me = ishmem_my_pe();
    long *ctr = (long *)ishmem_calloc(2, sizeof(long));
    unsigned long long *ns;
    long *sink;
    CK(cudaMallocManaged(&ns, 8));
    CK(cudaMalloc(&sink, 8));
    ishmem_barrier_all();
    if (me == 0) {
        const char *names[] = {"ring no-op", "ring g", "ring fetch_add", "ring atomic_add", "ring p"};
#ifdef RING_NOP
        int first = 0;
#else
        int first = 1;
#endif
        for (int op = first; op < 5; op++) {
            round_trip<<<1, 1>>>(op, ctr, 1, op == 0 ? 20000 : 2000, ns, sink);
            CK(cudaDeviceSynchronize());
            printf("%s %s,1,%.3f,us\n", names[op], op >= 3 ? "per call" : "round trip", *ns / 1e3);
            struct {
                int blocks, threads, per;
            } shapes[] = {{1, 1, 0}, {1, 32, 0}, {1, 1024, 0}, {32, 1024, 0}, {32, 1024, 10}};
            for (auto s : shapes) {
                long n = (long)s.blocks * s.threads;
                int per = s.per ? s.per : (int)((op == 0 ? 40000 : 4000) / n);
                if (per < 1) per = 1;
                rate<<<s.blocks, s.threads>>>(op, ctr, 1, 1, sink); // warm
                CK(cudaDeviceSynchronize());
                auto t0 = std::chrono::steady_clock::now();
                rate<<<s.blocks, s.threads>>>(op, ctr, 1, per, sink);
                CK(cudaDeviceSynchronize());
                double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
                printf("%s rate%s,%ld,%.3f,M requests/s\n", names[op], s.per ? " (10 a thread)" : "", n, n * per / sec / 1e6);
                fflush(stdout);
            }
        }
    }
    ishmem_barrier_all();
    ishmem_free(ctr);
    ishmem_finalize();
    return 0;
}
