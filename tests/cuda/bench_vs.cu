// One benchmark, built twice: against ishmem-rs (default) and against
// NVSHMEM (-DBENCH_NVSHMEM), so that the two libraries run the same kernels
// on the same grids and sizes, timed the same way (CUDA events around
// kernels that loop inside, in each PE's process). A benchmark, not a test;
// tests/cuda/bench-vs-nvshmem.sh builds both, runs both in one run and
// prints the side-by-side table.
//
// PE 0 works against PE 1 (RMA, AMO, ping-pong); barriers and collectives
// run on every PE. Prints CSV on PE 0: figure,scope,bytes,value,unit.
//   ishmrun -n 2 bench_vs [ring]       (ring: the reverse-offload ring's
//                                       figures, run with ISHMEM_DEVICE_RING_ALL=1)
//   ishmrun -n 2 bench_vs coll [FIRST] (the collectives only, from FIRST of
//                                       enum Coll; BENCH_TRACE=1 names each
//                                       size on stderr before it runs)
//   ishmrun -n 2 bench_vs sync         (the ping-pongs, barriers and
//                                       collectives, no bandwidths)
//   mpirun -n 2 bench_vs_nvshmem
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#ifdef BENCH_NVSHMEM
#include <mpi.h>
#include <nvshmem.h>
#include <nvshmemx.h>
#define SH(x) nvshmem_##x
#define SHX(x) nvshmemx_##x
#define SH_TEAM_WORLD NVSHMEM_TEAM_WORLD
#define SH_CMP_EQ NVSHMEM_CMP_EQ
#define SH_CMP_GE NVSHMEM_CMP_GE
#define SH_SIGNAL_SET NVSHMEM_SIGNAL_SET
#define BENCH_STR2(x) #x
#define BENCH_STR(x) BENCH_STR2(x)
static const char *lib_name = "NVSHMEM " BENCH_STR(NVSHMEM_VENDOR_MAJOR_VERSION) "." BENCH_STR(
    NVSHMEM_VENDOR_MINOR_VERSION) "." BENCH_STR(NVSHMEM_VENDOR_PATCH_VERSION);
#else
#include <ishmem.h>
#include <ishmemx.h>
#define SH(x) ishmem_##x
#define SHX(x) ishmemx_##x
#define SH_TEAM_WORLD ISHMEM_TEAM_WORLD
#define SH_CMP_EQ ISHMEM_CMP_EQ
#define SH_CMP_GE ISHMEM_CMP_GE
#define SH_SIGNAL_SET ISHMEM_SIGNAL_SET
static const char *lib_name = "ishmem-rs";
#endif

#include "check.h"

// ----- kernels (the same source for both libraries) -----

enum Scope { THREAD = 0, WARP = 1, BLOCK = 2 };
static const char *scope_name[] = {"thread", "warp", "block"};

// `bytes` split evenly among the grid's units (threads, warps or blocks),
// each unit at least 8 bytes; `iters` rounds of nbi transfers, then quiet.
template <int S, bool GET>
__global__ void rma_bw(char *dst, char *src, size_t bytes, int iters, int peer) {
    size_t units, unit;
    if (S == THREAD) {
        units = (size_t)gridDim.x * blockDim.x;
        unit = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    } else if (S == WARP) {
        units = (size_t)gridDim.x * (blockDim.x / 32);
        unit = (size_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    } else {
        units = gridDim.x;
        unit = blockIdx.x;
    }
    size_t chunk = bytes / units;
    if (chunk < 8) chunk = 8;
    size_t off = unit * chunk;
    if (off < bytes) {
        size_t n = bytes - off < chunk ? bytes - off : chunk;
        for (int i = 0; i < iters; i++) {
            if (S == THREAD) {
                if (GET) SH(getmem_nbi)(dst + off, src + off, n, peer);
                else SH(putmem_nbi)(dst + off, src + off, n, peer);
            } else if (S == WARP) {
                if (GET) SHX(getmem_nbi_warp)(dst + off, src + off, n, peer);
                else SHX(putmem_nbi_warp)(dst + off, src + off, n, peer);
            } else {
                if (GET) SHX(getmem_nbi_block)(dst + off, src + off, n, peer);
                else SHX(putmem_nbi_block)(dst + off, src + off, n, peer);
            }
        }
    }
    // NVSHMEM has no block quiet: both libraries get the same one.
    if (S == BLOCK) {
        __syncthreads();
        if (threadIdx.x == 0) SH(quiet)();
        __syncthreads();
    } else {
        SH(quiet)();
    }
}

__global__ void put_lat(long *dst, const long *src, int iters, int peer) {
    for (int i = 0; i < iters; i++) {
        SH(long_put_nbi)(dst, src, 1, peer);
        SH(quiet)();
    }
}

__global__ void fadd_lat(long *ctr, long *sink, int iters, int peer) {
    long acc = 0;
    for (int i = 0; i < iters; i++) acc += SH(long_atomic_fetch_add)(ctr, 1, peer);
    *sink = acc;
}

// Many threads, each its own counter word: fetch_adds per second.
__global__ void fadd_rate(long *ctr, long *sink, int iters, int peer) {
    long acc = 0;
    size_t me = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (int i = 0; i < iters; i++) acc += SH(long_atomic_fetch_add)(ctr + me % 4096, 1, peer);
    sink[me] = acc;
}

// Through the ring (ring mode): op 0 a g, op 1 a fetch_add, each thread on
// its own word, the value used.
__global__ void ring_op(int op, long *ctr, long *sink, int iters, int peer) {
    long acc = 0;
    size_t me = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (int i = 0; i < iters; i++)
        acc += op == 0 ? SH(long_g)(ctr + me % 4096, peer) : SH(long_atomic_fetch_add)(ctr + me % 4096, 1, peer);
    sink[me] = acc;
}

__global__ void pingpong_p(long *flag, int iters) {
    int me = SH(my_pe)();
    for (long i = 1; i <= iters; i++) {
        if (me == 0) {
            SH(long_p)(flag, i, 1);
            SH(long_wait_until)(flag, SH_CMP_EQ, -i);
        } else if (me == 1) {
            SH(long_wait_until)(flag, SH_CMP_EQ, i);
            SH(long_p)(flag, -i, 0);
        }
    }
}

__global__ void pingpong_signal(long *data, uint64_t *sig, const long *src, int iters) {
    int me = SH(my_pe)();
    for (uint64_t i = 1; i <= (uint64_t)iters; i++) {
        if (me == 0) {
            SH(long_put_signal)(data, src, 1, sig, i, SH_SIGNAL_SET, 1);
            SH(signal_wait_until)(sig, SH_CMP_GE, i);
        } else if (me == 1) {
            SH(signal_wait_until)(sig, SH_CMP_GE, i);
            SH(long_put_signal)(data, src, 1, sig, i, SH_SIGNAL_SET, 0);
        }
    }
}

__global__ void barrier_loop(int iters) {
    for (int i = 0; i < iters; i++) SH(barrier_all)();
}
__global__ void team_sync_loop(int iters) {
    for (int i = 0; i < iters; i++) SH(team_sync)(SH_TEAM_WORLD);
}
__global__ void barrier_block_loop(int iters) {
    for (int i = 0; i < iters; i++) SHX(barrier_all_block)();
}

enum Coll { C_BCAST = 0, C_FCOLLECT = 1, C_ALLTOALL = 2, C_REDUCE = 3 };
static const char *coll_name[] = {"broadcast", "fcollect", "alltoall", "sum_reduce"};

// One block per PE; `n` ints per PE (fcollect/alltoall: per pair).
__global__ void coll_loop(int which, int *dst, const int *src, size_t n, int iters) {
    for (int i = 0; i < iters; i++) {
        if (which == C_BCAST) SHX(int_broadcast_block)(SH_TEAM_WORLD, dst, src, n, 0);
        else if (which == C_FCOLLECT) SHX(int_fcollect_block)(SH_TEAM_WORLD, dst, src, n);
        else if (which == C_ALLTOALL) SHX(int_alltoall_block)(SH_TEAM_WORLD, dst, src, n);
        else SHX(int_sum_reduce_block)(SH_TEAM_WORLD, dst, src, n);
    }
}

// ----- host side -----

static int me, npes;
static cudaEvent_t ev0, ev1;

static void host_barrier() {
    CK(cudaDeviceSynchronize());
    SH(barrier_all)();
}

static double elapsed_s() {
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, ev0, ev1));
    return ms / 1e3;
}

static void emit(const char *fig, const char *scope, size_t bytes, double v, const char *unit) {
    if (me != 0) return;
    printf("%s,%s,%zu,%.4g,%s\n", fig, scope, bytes, v, unit);
    fflush(stdout);
}

static int max_threads(const void *k) {
    cudaFuncAttributes a;
    CK(cudaFuncGetAttributes(&a, k));
    return a.maxThreadsPerBlock < 1024 ? a.maxThreadsPerBlock : 1024;
}

template <int S, bool GET> static void rma_sweep(char *dst, char *src, size_t maxb) {
    const void *k = (const void *)rma_bw<S, GET>;
    int threads = max_threads(k);
    threads -= threads % 32;
    const int blocks = 32;
    for (size_t bytes = 8; bytes <= maxb; bytes *= 4) {
        int iters = bytes <= ((size_t)1 << 20) ? 100 : bytes <= ((size_t)16 << 20) ? 20 : 5;
        host_barrier();
        if (me == 0) {
            rma_bw<S, GET><<<blocks, threads>>>(dst, src, bytes, 1, 1);
            CK(cudaEventRecord(ev0));
            rma_bw<S, GET><<<blocks, threads>>>(dst, src, bytes, iters, 1);
            CK(cudaEventRecord(ev1));
            CK(cudaEventSynchronize(ev1));
            CK(cudaGetLastError());
            char fig[32];
            snprintf(fig, sizeof fig, "%s_bw_%dx%d", GET ? "get" : "put", blocks, threads);
            emit(fig, scope_name[S], bytes, (double)bytes * iters / elapsed_s() / 1e9, "GB/s");
        }
    }
}

template <typename K, typename... A> static double time_kernel(K k, int grid, int block, int iters, A... a) {
    k<<<grid, block>>>(1, a...);
    CK(cudaEventRecord(ev0));
    k<<<grid, block>>>(iters, a...);
    CK(cudaEventRecord(ev1));
    CK(cudaEventSynchronize(ev1));
    CK(cudaGetLastError());
    return elapsed_s();
}

int main(int argc, char **argv) {
    bool ring = argc > 1 && strcmp(argv[1], "ring") == 0;
    // "coll [FIRST]": only the collectives, from collective FIRST (enum Coll).
    bool coll_only = argc > 1 && strcmp(argv[1], "coll") == 0;
    // "sync": the ping-pongs, barriers and collectives (no bandwidths).
    bool sync_only = argc > 1 && strcmp(argv[1], "sync") == 0;
    int first_coll = coll_only && argc > 2 ? atoi(argv[2]) : 0;
    const bool trace = getenv("BENCH_TRACE") != nullptr;
#ifdef BENCH_NVSHMEM
    MPI_Init(&argc, &argv);
    int rank, size, ndev = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm local;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local);
    int lrank;
    MPI_Comm_rank(local, &lrank);
    CK(cudaGetDeviceCount(&ndev));
    CK(cudaSetDevice(lrank % ndev));
    nvshmemx_uniqueid_t id = NVSHMEMX_UNIQUEID_INITIALIZER;
    if (rank == 0) nvshmemx_get_uniqueid(&id);
    MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
    nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
    nvshmemx_set_attr_uniqueid_args(rank, size, &id, &attr);
    nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &attr);
#else
    ishmem_init();
#endif
    me = SH(my_pe)();
    npes = SH(n_pes)();
    if (npes < 2) {
        if (me == 0) fprintf(stderr, "bench_vs needs 2 PEs or more\n");
        return 1;
    }
    int dev = 0;
    cudaDeviceProp prop;
    CK(cudaGetDevice(&dev));
    CK(cudaGetDeviceProperties(&prop, dev));
    if (me == 0) {
        printf("# %s, %d PEs, %s\n", lib_name, npes, prop.name);
        printf("figure,scope,bytes,value,unit\n");
    }
    const size_t maxb = (size_t)256 << 20;
    char *src = (char *)SH(malloc)(maxb);
    char *dst = (char *)SH(malloc)(maxb);
    long *w = (long *)SH(malloc)(16 * sizeof(long));
    long *sink = (long *)SH(malloc)(32 * 1024 * sizeof(long));
    long *ctr = (long *)SH(malloc)(4096 * sizeof(long));
    CK(cudaMemset(src, 1, maxb));
    CK(cudaMemset(w, 0, 16 * sizeof(long)));
    CK(cudaMemset(ctr, 0, 4096 * sizeof(long)));
    CK(cudaEventCreate(&ev0));
    CK(cudaEventCreate(&ev1));
    host_barrier();
    const int lat_iters = 10000;

    if (ring) {
        // The ring: every operation crosses it (ISHMEM_DEVICE_RING_ALL=1).
        // Round trip by one thread, then requests per second from many.
        for (int op = 0; op < 2; op++) {
            const char *name = op == 0 ? "ring_g" : "ring_fetch_add";
            if (me == 0) {
                ring_op<<<1, 1>>>(op, ctr, sink, 10, 1);
                CK(cudaEventRecord(ev0));
                ring_op<<<1, 1>>>(op, ctr, sink, 2000, 1);
                CK(cudaEventRecord(ev1));
                CK(cudaEventSynchronize(ev1));
                CK(cudaGetLastError());
                emit(name, "round_trip", 8, elapsed_s() * 1e6 / 2000, "us");
                for (int grid = 1; grid <= 64; grid *= 4) {
                    const int threads = 256, iters = 16;
                    ring_op<<<grid, threads>>>(op, ctr, sink, 1, 1);
                    CK(cudaEventRecord(ev0));
                    ring_op<<<grid, threads>>>(op, ctr, sink, iters, 1);
                    CK(cudaEventRecord(ev1));
                    CK(cudaEventSynchronize(ev1));
                    CK(cudaGetLastError());
                    char scope[32];
                    snprintf(scope, sizeof scope, "rate_%dx%d", grid, threads);
                    emit(name, scope, 8, (double)grid * threads * iters / elapsed_s() / 1e6, "M requests/s");
                }
            }
            host_barrier();
        }
        SH(free)(ctr);
        SH(free)(sink);
        SH(free)(w);
        SH(free)(dst);
        SH(free)(src);
        SH(finalize)();
        return 0;
    }

    if (!coll_only && !sync_only) {
        rma_sweep<BLOCK, false>(dst, src, maxb);
        rma_sweep<WARP, false>(dst, src, maxb);
        rma_sweep<THREAD, false>(dst, src, maxb);
        rma_sweep<BLOCK, true>(dst, src, maxb);

        host_barrier();
        if (me == 0) {
            put_lat<<<1, 1>>>(w, w + 8, 100, 1);
            CK(cudaEventRecord(ev0));
            put_lat<<<1, 1>>>(w, w + 8, lat_iters, 1);
            CK(cudaEventRecord(ev1));
            CK(cudaEventSynchronize(ev1));
            emit("put_nbi+quiet", "thread", 8, elapsed_s() * 1e6 / lat_iters, "us");
            fadd_lat<<<1, 1>>>(w + 2, w + 3, 100, 1);
            CK(cudaEventRecord(ev0));
            fadd_lat<<<1, 1>>>(w + 2, w + 3, lat_iters, 1);
            CK(cudaEventRecord(ev1));
            CK(cudaEventSynchronize(ev1));
            emit("fetch_add", "thread", 8, elapsed_s() * 1e6 / lat_iters, "us");
            const int threads = 1024, iters = 64;
            fadd_rate<<<32, threads>>>(ctr, sink, 1, 1);
            CK(cudaEventRecord(ev0));
            fadd_rate<<<32, threads>>>(ctr, sink, iters, 1);
            CK(cudaEventRecord(ev1));
            CK(cudaEventSynchronize(ev1));
            CK(cudaGetLastError());
            emit("fetch_add_rate", "32x1024", 8, 32.0 * threads * iters / elapsed_s() / 1e6, "M ops/s");
        }
    }
    if (!coll_only) {
        for (int which = 0; which < 2; which++) {
            CK(cudaMemset(w, 0, 16 * sizeof(long)));
            host_barrier();
            CK(cudaEventRecord(ev0));
            if (which == 0) pingpong_p<<<1, 1>>>(w + 4, lat_iters);
            else pingpong_signal<<<1, 1>>>(w + 5, (uint64_t *)(w + 6), w + 8, lat_iters);
            CK(cudaEventRecord(ev1));
            CK(cudaEventSynchronize(ev1));
            CK(cudaGetLastError());
            emit(which == 0 ? "p_pingpong_half_rtt" : "put_signal_pingpong_half_rtt", "thread", 8,
                 elapsed_s() * 1e6 / (2.0 * lat_iters), "us");
        }
        host_barrier();
        emit("barrier_all", "thread", 0, time_kernel(barrier_loop, 1, 1, 1000) * 1e6 / 1000, "us");
        host_barrier();
        emit("team_sync", "thread", 0, time_kernel(team_sync_loop, 1, 1, 1000) * 1e6 / 1000, "us");
        host_barrier();
        emit("barrier_all", "block", 0, time_kernel(barrier_block_loop, 1, 256, 1000) * 1e6 / 1000, "us");
    }

    // Collectives: one block of 256 threads per PE, n ints per PE.
    int *cs = (int *)src, *cd = (int *)dst;
    for (int which = first_coll; which < 4; which++) {
        for (size_t bytes = 8; bytes <= ((size_t)4 << 20); bytes *= 8) {
            size_t n = bytes / sizeof(int);
            if ((which == C_FCOLLECT || which == C_ALLTOALL) && bytes * npes > maxb) break;
            int iters = bytes <= ((size_t)64 << 10) ? 200 : 20;
            if (trace) fprintf(stderr, "PE %d: %s %zu bytes\n", me, coll_name[which], bytes);
            host_barrier();
            coll_loop<<<1, 256>>>(which, cd, cs, n, 1);
            CK(cudaEventRecord(ev0));
            coll_loop<<<1, 256>>>(which, cd, cs, n, iters);
            CK(cudaEventRecord(ev1));
            CK(cudaEventSynchronize(ev1));
            CK(cudaGetLastError());
            // Every PE timed its own calls; PE 0's are reported.
            emit(coll_name[which], "block", bytes, elapsed_s() * 1e6 / iters, "us");
        }
    }
    host_barrier();
    SH(free)(ctr);
    SH(free)(sink);
    SH(free)(w);
    SH(free)(dst);
    SH(free)(src);
    SH(finalize)();
#ifdef BENCH_NVSHMEM
    MPI_Finalize();
#endif
    return 0;
}
