// First GPU figures of the CUDA device backend (a benchmark, not a test):
// device-initiated put bandwidth by size (block form, nbi + quiet; one
// thread's and one block's blocking put, across the copy-engine cutover), 8-byte
// put_nbi+quiet latency, fetch_add latency (value used), p ping-pong and
// put_signal ping-pong half round trips, and the device barrier. PE 0 works
// against PE 1; timed with CUDA events around kernels that loop inside.
// Prints CSV: figure,bytes,value,unit.
//   ishmrun -n 2 bench_cuda
#include <ishmem.h>
#include <ishmemx.h>

#include <cstdint>
#include <cstdio>

#define CK(call)                                                                                     \
    do {                                                                                            \
        cudaError_t e_ = (call);                                                                    \
        if (e_ != cudaSuccess) {                                                                    \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_));  \
            return 2;                                                                               \
        }                                                                                           \
    } while (0)

__global__ void put_bw(char *dst, const char *src, size_t bytes, int iters, int peer) {
    size_t per = bytes / gridDim.x;
    for (int i = 0; i < iters; i++) ishmemx_putmem_nbi_block(dst + blockIdx.x * per, src + blockIdx.x * per, per, peer);
    ishmemx_quiet_block();
}

// One thread's blocking putmem, and one block's (the copy-engine cutover's
// figures: below it loads and stores, from it the copy engine).
__global__ void put_one_thread(char *dst, const char *src, size_t bytes, int iters, int peer) {
    for (int i = 0; i < iters; i++) ishmem_putmem(dst, src, bytes, peer);
}

__global__ void put_one_block(char *dst, const char *src, size_t bytes, int iters, int peer) {
    for (int i = 0; i < iters; i++) ishmemx_putmem_block(dst, src, bytes, peer);
}

__global__ void put_lat(long *dst, const long *src, int iters, int peer) {
    for (int i = 0; i < iters; i++) {
        ishmem_long_put_nbi(dst, src, 1, peer);
        ishmem_quiet();
    }
}

__global__ void fadd_lat(long *ctr, long *sink, int iters, int peer) {
    long acc = 0;
    for (int i = 0; i < iters; i++) acc += ishmem_long_atomic_fetch_add(ctr, 1, peer);
    *sink = acc;
}

__global__ void pingpong_p(long *flag, int iters) {
    int me = ishmem_my_pe();
    for (long i = 1; i <= iters; i++) {
        if (me == 0) {
            ishmem_long_p(flag, i, 1);
            ishmem_long_wait_until(flag, ISHMEM_CMP_EQ, -i);
        } else {
            ishmem_long_wait_until(flag, ISHMEM_CMP_EQ, i);
            ishmem_long_p(flag, -i, 0);
        }
    }
}

__global__ void pingpong_signal(long *data, uint64_t *sig, const long *src, int iters) {
    int me = ishmem_my_pe();
    for (uint64_t i = 1; i <= (uint64_t)iters; i++) {
        if (me == 0) {
            ishmem_long_put_signal(data, src, 1, sig, i, ISHMEM_SIGNAL_SET, 1);
            ishmem_signal_wait_until(sig, ISHMEM_CMP_GE, i);
        } else {
            ishmem_signal_wait_until(sig, ISHMEM_CMP_GE, i);
            ishmem_long_put_signal(data, src, 1, sig, i, ISHMEM_SIGNAL_SET, 0);
        }
    }
}

__global__ void barrier_loop(int iters) {
    for (int i = 0; i < iters; i++) ishmem_barrier_all();
}

static float elapsed(cudaEvent_t a, cudaEvent_t b) {
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    return ms;
}

int main() {
    ishmem_init();
    int me = ishmem_my_pe();
    if (ishmem_n_pes() < 2) {
        if (me == 0) fprintf(stderr, "bench_cuda needs 2 PEs\n");
        ishmem_finalize();
        return 1;
    }
    const size_t maxb = (size_t)256 << 20;
    char *src = (char *)ishmem_malloc(maxb);
    char *dst = (char *)ishmem_malloc(maxb);
    long *w = (long *)ishmem_calloc(16, sizeof(long));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    if (me == 0) printf("figure,bytes,value,unit\n");
    // Put bandwidth: 32 blocks x 1024 threads for large sizes.
    for (size_t bytes = 8; bytes <= maxb; bytes *= 4) {
        int blocks = bytes >= ((size_t)1 << 20) ? 32 : 1;
        int threads = bytes >= 4096 ? 512 : 32; // 1024 exceeds the registers per block
        int iters = bytes <= ((size_t)1 << 20) ? 200 : bytes <= ((size_t)16 << 20) ? 20 : 5;
        ishmem_barrier_all();
        if (me == 0) {
            put_bw<<<blocks, threads>>>(dst, src, bytes, 1, 1); // warm-up
            CK(cudaEventRecord(e0));
            put_bw<<<blocks, threads>>>(dst, src, bytes, iters, 1);
            CK(cudaEventRecord(e1));
            CK(cudaEventSynchronize(e1));
            CK(cudaGetLastError());
            double s = elapsed(e0, e1) / 1e3;
            printf("put_bw,%zu,%.2f,GB/s\n", bytes, (double)bytes * iters / s / 1e9);
            fflush(stdout);
        }
    }
    // One thread, then one block of 512, putting by size (blocking).
    for (int form = 0; form < 2; form++) {
        for (size_t bytes = 4096; bytes <= ((size_t)64 << 20); bytes *= 4) {
            int iters = bytes <= ((size_t)1 << 20) ? 50 : 5;
            ishmem_barrier_all();
            if (me == 0) {
                for (int k = 0; k < 2; k++) { // warm-up, then timed
                    if (k == 1) CK(cudaEventRecord(e0));
                    if (form == 0)
                        put_one_thread<<<1, 1>>>(dst, src, bytes, k ? iters : 1, 1);
                    else
                        put_one_block<<<1, 512>>>(dst, src, bytes, k ? iters : 1, 1);
                }
                CK(cudaEventRecord(e1));
                CK(cudaEventSynchronize(e1));
                CK(cudaGetLastError());
                double s = elapsed(e0, e1) / 1e3;
                printf("%s,%zu,%.2f,GB/s\n", form == 0 ? "put_thread" : "put_block1", bytes,
                       (double)bytes * iters / s / 1e9);
                fflush(stdout);
            }
        }
    }
    ishmem_barrier_all();
    const int lat_iters = 10000;
    if (me == 0) {
        put_lat<<<1, 1>>>(w, w + 8, 100, 1);
        CK(cudaEventRecord(e0));
        put_lat<<<1, 1>>>(w, w + 8, lat_iters, 1);
        CK(cudaEventRecord(e1));
        CK(cudaEventSynchronize(e1));
        printf("put_nbi+quiet,8,%.3f,us\n", elapsed(e0, e1) * 1e3 / lat_iters);
        fadd_lat<<<1, 1>>>(w + 2, w + 3, 100, 1);
        CK(cudaEventRecord(e0));
        fadd_lat<<<1, 1>>>(w + 2, w + 3, lat_iters, 1);
        CK(cudaEventRecord(e1));
        CK(cudaEventSynchronize(e1));
        printf("fetch_add,8,%.3f,us\n", elapsed(e0, e1) * 1e3 / lat_iters);
        fflush(stdout);
    }
    ishmem_barrier_all();
    for (int which = 0; which < 2; which++) {
        CK(cudaMemset(w, 0, 16 * sizeof(long)));
        CK(cudaDeviceSynchronize());
        ishmem_barrier_all();
        CK(cudaEventRecord(e0));
        if (which == 0)
            pingpong_p<<<1, 1>>>(w + 4, lat_iters);
        else
            pingpong_signal<<<1, 1>>>(w + 5, (uint64_t *)(w + 6), w + 8, lat_iters);
        CK(cudaEventRecord(e1));
        CK(cudaEventSynchronize(e1));
        CK(cudaGetLastError());
        if (me == 0)
            printf("%s,8,%.3f,us\n", which == 0 ? "p_pingpong_half_rtt" : "put_signal_pingpong_half_rtt",
                   elapsed(e0, e1) * 1e3 / (2.0 * lat_iters));
        fflush(stdout);
        ishmem_barrier_all();
    }
    CK(cudaEventRecord(e0));
    barrier_loop<<<1, 1>>>(1000);
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    if (me == 0) printf("device_barrier_all,0,%.3f,us\n", elapsed(e0, e1) * 1e3 / 1000);
    ishmem_barrier_all();
    ishmem_free(w);
    ishmem_free(dst);
    ishmem_free(src);
    ishmem_finalize();
    return 0;
}
