// Device- and host-initiated operations on a PE reached through the MPI
// proxy (GPU heaps across nodes; a benchmark, not a test). Run on 2 PEs
// with every peer remote, each PE on its own GPU:
//
//   mpirun -n 2 --bind-to none -x ISHMEM_ENABLE_SHM=0 -x ISHMEM_DEVICE=cuda remote_bench
//
// PE 0 measures against PE 1. Rows (CSV: figure,value,unit): one thread's
// device round trips (fetch_add, g, fetch) and non-fetching adds with and
// without a quiet each; one block's put+quiet and get by size, as latency
// and bandwidth (GPU memory on both sides); then host fetch_add with the
// target's GPU idle and with a kernel running there (a served AMO is a
// kernel at the target), and with a kernel running on the origin's GPU.

#include <ishmem.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "check.h"

__device__ inline unsigned long long gtime() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// op 0: fetch_add, 1: g, 2: fetch, 3: add, 4: add + quiet.
__global__ void device_ops(int op, long *ctr, int peer, int n, unsigned long long *ns, long *sink) {
    long s = 0;
    unsigned long long t0 = gtime();
    for (int i = 0; i < n; i++) {
        switch (op) {
        case 0: s += ishmem_long_atomic_fetch_add(ctr, 1, peer); break;
        case 1: s += ishmem_long_g(ctr, peer); break;
        case 2: s += ishmem_long_atomic_fetch(ctr, peer); break;
        case 3: ishmem_long_atomic_add(ctr, 1, peer); break;
        default: ishmem_long_atomic_add(ctr, 1, peer); ishmem_quiet(); break;
        }
    }
    if (op == 3) ishmem_quiet();
    *ns = (gtime() - t0) / n;
    *sink = s;
}

// One block: `n` puts (with a quiet each) or gets of `bytes`.
__global__ void device_xfer(int get, char *remote, char *local, size_t bytes, int peer, int n, unsigned long long *ns) {
    unsigned long long t0 = gtime();
    for (int i = 0; i < n; i++) {
        if (get) {
            ishmemx_getmem_block(local, remote, bytes, peer);
        } else {
            ishmemx_putmem_block(remote, local, bytes, peer);
            if (threadIdx.x == 0) ishmem_quiet();
            __syncthreads();
        }
    }
    if (threadIdx.x == 0) *ns = (gtime() - t0) / n;
}

__global__ void spin(volatile int *stop) {
    while (!*stop) __nanosleep(1000);
}

static double host_fetch_add_us(long *ctr, int peer, int n) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; i++) ishmem_long_atomic_fetch_add(ctr, 1, peer);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / n * 1e6;
}

int main() {
    ishmem_init();
    int me = ishmem_my_pe();
    if (ishmem_n_pes() != 2) {
        if (me == 0) fprintf(stderr, "remote_bench: run on 2 PEs\n");
        ishmem_finalize();
        return 2;
    }
    long *ctr = (long *)ishmem_calloc(1, sizeof(long));
    char *buf = (char *)ishmem_malloc((size_t)4 << 20), *lbuf;
    CK(cudaMalloc(&lbuf, (size_t)4 << 20));
    CK(cudaMemset(lbuf, 1, (size_t)4 << 20));
    unsigned long long *ns;
    long *sink;
    int *stop;
    CK(cudaMallocManaged(&ns, 8));
    CK(cudaMalloc(&sink, 8));
    CK(cudaMallocManaged(&stop, sizeof(int)));
    cudaStream_t side;
    CK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
    ishmem_barrier_all();
    if (me == 0) {
        printf("figure,value,unit\n");
        const char *names[] = {"device fetch_add", "device g", "device fetch", "device add (one quiet)",
                               "device add+quiet"};
        for (int op = 0; op < 5; op++) {
            device_ops<<<1, 1>>>(op, ctr, 1, 4, ns, sink); // warm
            CK(cudaDeviceSynchronize());
            device_ops<<<1, 1>>>(op, ctr, 1, 200, ns, sink);
            CK(cudaDeviceSynchronize());
            printf("%s,%.2f,us\n", names[op], *ns / 1e3);
            fflush(stdout);
        }
        for (int get = 0; get < 2; get++)
            for (size_t bytes : {(size_t)8, (size_t)4096, (size_t)65536, (size_t)1 << 20, (size_t)4 << 20}) {
                int n = bytes >= ((size_t)1 << 20) ? 10 : 50;
                device_xfer<<<1, 256>>>(get, buf, lbuf, bytes, 1, 2, ns); // warm
                CK(cudaDeviceSynchronize());
                device_xfer<<<1, 256>>>(get, buf, lbuf, bytes, 1, n, ns);
                CK(cudaDeviceSynchronize());
                printf("device block %s %zu B,%.2f,us\n", get ? "get" : "put+quiet", bytes, *ns / 1e3);
                printf("device block %s %zu B bandwidth,%.1f,MB/s\n", get ? "get" : "put+quiet", bytes,
                       bytes / (*ns / 1e3));
                fflush(stdout);
            }
        printf("host fetch_add,%.2f,us\n", host_fetch_add_us(ctr, 1, 200));
        *stop = 0;
        spin<<<1, 1, 0, side>>>(stop);
        printf("host fetch_add (origin GPU busy),%.2f,us\n", host_fetch_add_us(ctr, 1, 200));
        *stop = 1;
        CK(cudaStreamSynchronize(side));
        fflush(stdout);
    }
    ishmem_barrier_all();
    if (me == 1) {
        *stop = 0;
        spin<<<1, 1, 0, side>>>(stop);
    }
    ishmem_barrier_all();
    if (me == 0) {
        printf("host fetch_add (target GPU busy),%.2f,us\n", host_fetch_add_us(ctr, 1, 200));
        fflush(stdout);
    }
    ishmem_barrier_all();
    if (me == 1) {
        *stop = 1;
        CK(cudaStreamSynchronize(side));
    }
    ishmem_barrier_all();
    CK(cudaFree(lbuf));
    ishmem_free(buf);
    ishmem_free(ctr);
    ishmem_finalize();
    return 0;
}
