// The CUDA device library (libishmem_device.a): the shared device sources
// built for CUDA (target_cuda.h), plus the host part that registers the
// library with libishmem and installs each PE's device state.
//
// Link with -rdc=true. A program that includes <ishmem.h> in CUDA code
// references ishmemi_cuda_device_library_anchor, which pulls this object
// (and so its constructor) into the program.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdio>
#include <type_traits>

#include "names.h"
#include "../src/core.h"
#include "decls.h"
#include "../src/core.cl"
#include "../src/sync.cl"
#include "../src/typed.cl"

// The registration interface of libishmem, generated from the runtime's
// structs with every field asserted (ishmem/ishmem_api.h has the same, but
// its ishmemx_device_state_t is the host's view).
#include "library_abi.h"
extern "C" {
int shmem_my_pe(void); // libishmem's (the ishmem_ name is the device routine here)
int ishmemi_cuda_device_library_anchor = 1;
}

// Kernels behind the stream-ordered routines (ishmemx_*_on_stream): one
// block; RMA by its block form (whose copy-engine cutover applies), then
// quiet, so the operation is complete before the stream's next work.
__global__ void ishmemi_stream_put(void *dest, const void *source, size_t n, int pe) {
    ishmemx_putmem_block(dest, source, n, pe);
    ishmemx_quiet_block();
}
__global__ void ishmemi_stream_get(void *dest, const void *source, size_t n, int pe) {
    ishmemx_getmem_block(dest, source, n, pe);
}
__global__ void ishmemi_stream_put_signal(void *dest, const void *source, size_t n, uint64_t *sig, uint64_t v, int op,
                                          int pe) {
    ishmemx_putmem_signal_block(dest, source, n, (unsigned long *)sig, v, op, pe);
    ishmemx_quiet_block();
}
__global__ void ishmemi_stream_signal_wait(uint64_t *sig, int cmp, uint64_t v) {
    ishmem_signal_wait_until((unsigned long *)sig, cmp, v);
}
__global__ void ishmemi_stream_quiet() { ishmem_quiet(); }
// Reductions and scans launched on a stream: one generic routine per
// element kind (ishmemx_cuda_queue_op_t.dtype: ISHMEMI_ELEM_*, from
// device_codes.h), not the typed block
// forms, so that this kernel keeps few routines alive in a program linked
// with -dlto. Arithmetic in T, as the typed routines do. Members' elements
// by loads and stores where the device reaches them, else through the ring.
static_assert(ISHMEMI_ROP_COUNT == 7, "ishmemi_stream_rop has a case for each of the 7 operators (the last as default)");
template <typename T> static __device__ T ishmemi_stream_rop(int rop, T a, T b) {
    if constexpr (std::is_integral<T>::value) {
        if (rop == ISHMEMI_ROP_AND) return (T)(a & b);
        if (rop == ISHMEMI_ROP_OR) return (T)(a | b);
        if (rop == ISHMEMI_ROP_XOR) return (T)(a ^ b);
    }
    if (rop == ISHMEMI_ROP_MAX) return b > a ? b : a;
    if (rop == ISHMEMI_ROP_MIN) return b < a ? b : a;
    if (rop == ISHMEMI_ROP_SUM) return (T)(a + b);
    return (T)(a * b); /* ISHMEMI_ROP_PROD */
}
static_assert(sizeof(ulong) == 8, "ring values are 8 bytes");
template <typename T> static __device__ T ishmemi_elem_get(const T *sym, int pe) {
    static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8, "an element of 1, 2, 4 or 8 bytes");
    union { T v; ulong u; } x;
    x.u = ishmemi_route_g_bits(sym, sizeof(T), pe);
    return x.v;
}
template <typename T> static __device__ void ishmemi_elem_put(T *sym, T v, int pe) {
    static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8, "an element of 1, 2, 4 or 8 bytes");
    union { T v; ulong u; } x;
    x.u = 0;
    x.v = v;
    ishmemi_route_p_bits(sym, x.u, sizeof(T), pe);
}
// The same with members on other nodes (ishmemi_coll_chunked): thread 0
// moves the slice in chunks through this PE's scratch words, one bulk get
// per member and chunk and one put of the result per member and chunk
// (core.h's chunked reductions and scans), then waits for its puts.
template <typename T>
static __device__ void ishmemi_stream_reduce_chunked(const ishmemx_cuda_queue_op_t &op, const ishmemi_team_t *t,
                                                     T *dest, const T *src, size_t lo, size_t hi) {
    T *acc = (T *)ishmemi_coll_scratch(op.team, 0), *in = (T *)ishmemi_coll_scratch(op.team, 1);
    const size_t ch = ISHMEMI_SYNC_SCRATCH_BYTES / sizeof(T);
    const bool reduce = op.coll == ISHMEMI_COLL_REDUCE;
    for (size_t c0 = lo; c0 < hi; c0 += ch) {
        size_t n = min(ch, hi - c0), bytes = n * sizeof(T);
        if (!reduce)
            for (size_t i = 0; i < n; i++) acc[i] = 0;
        for (int r = 0; r < t->size; r++) {
            int pe = ishmemi_member(t, r);
            T *into = reduce && r == 0 ? acc : in;
            ishmemi_get_bytes(into, src + c0, bytes, pe, 0);
            if (op.coll == ISHMEMI_COLL_EXSCAN) ishmemi_put_bytes(dest + c0, acc, bytes, pe, 0);
            if (into == in)
                for (size_t i = 0; i < n; i++)
                    acc[i] = reduce ? ishmemi_stream_rop<T>((int)op.rop, acc[i], in[i]) : (T)(acc[i] + in[i]);
            if (op.coll == ISHMEMI_COLL_INSCAN) ishmemi_put_bytes(dest + c0, acc, bytes, pe, 0);
        }
        if (reduce)
            for (int r = 0; r < t->size; r++) ishmemi_put_bytes(dest + c0, acc, bytes, ishmemi_member(t, r), 0);
    }
    ishmemi_ring_quiet();
}
// Reduction (ISHMEMI_COLL_REDUCE): member r owns slice r, reads it from
// every member's source in member order and stores it into every member's
// dest, between team syncs. Scans (ISHMEMI_COLL_INSCAN, _EXSCAN): member r owns slice r and
// walks the members in order with a running sum.
template <typename T> static __device__ void ishmemi_stream_reduce(const ishmemx_cuda_queue_op_t &op) {
    const ishmemi_team_t *t = ishmemi_get_team(op.team);
    T *dest = (T *)op.dest;
    const T *src = (const T *)op.source;
    size_t n = op.nbytes, per = (n + t->size - 1) / t->size;
    size_t lo = min((size_t)t->my_rank * per, n), hi = min(lo + per, n);
    // The signature of the kernel forms (core.h's ISHMEMI_REDUCE and ISHMEMI_SCAN).
    const ulong sig = ISHMEMI_SIG(op.coll, op.dtype | (op.coll == ISHMEMI_COLL_REDUCE ? op.rop << 4 : 0), 0, n);
    ishmemi_wg_sync_team(op.team, sig);
    if (ishmemi_coll_chunked(t)) {
        if (threadIdx.x == 0) ishmemi_stream_reduce_chunked<T>(op, t, dest, src, lo, hi);
        __syncthreads();
        ishmemi_wg_sync_team(op.team, sig);
        return;
    }
    for (size_t i = lo + threadIdx.x; i < hi; i += blockDim.x) {
        T a = 0;
        for (int r = 0; r < t->size; r++) {
            int pe = ishmemi_member(t, r);
            T b = ishmemi_elem_get(src + i, pe);
            if (op.coll == ISHMEMI_COLL_EXSCAN) ishmemi_elem_put(dest + i, a, pe);
            a = r == 0 && op.coll == ISHMEMI_COLL_REDUCE ? b
                : op.coll == ISHMEMI_COLL_REDUCE        ? ishmemi_stream_rop<T>((int)op.rop, a, b)
                                                        : (T)(a + b);
            if (op.coll == ISHMEMI_COLL_INSCAN) ishmemi_elem_put(dest + i, a, pe);
        }
        if (op.coll == ISHMEMI_COLL_REDUCE)
            for (int r = 0; r < t->size; r++) ishmemi_elem_put(dest + i, a, ishmemi_member(t, r));
    }
    ishmemi_wg_sync_team(op.team, sig);
}
static_assert(ISHMEMI_ELEM_COUNT == 10, "ishmemi_stream_typed has a case for each of the 10 element kinds (the last as default)");
static __device__ void ishmemi_stream_typed(const ishmemx_cuda_queue_op_t &op) {
    switch (op.dtype) {
    case ISHMEMI_ELEM_F32: ishmemi_stream_reduce<float>(op); break;
    case ISHMEMI_ELEM_F64: ishmemi_stream_reduce<double>(op); break;
    case ISHMEMI_ELEM_I8: ishmemi_stream_reduce<signed char>(op); break;
    case ISHMEMI_ELEM_U8: ishmemi_stream_reduce<unsigned char>(op); break;
    case ISHMEMI_ELEM_I16: ishmemi_stream_reduce<short>(op); break;
    case ISHMEMI_ELEM_U16: ishmemi_stream_reduce<unsigned short>(op); break;
    case ISHMEMI_ELEM_I32: ishmemi_stream_reduce<int>(op); break;
    case ISHMEMI_ELEM_U32: ishmemi_stream_reduce<unsigned int>(op); break;
    case ISHMEMI_ELEM_I64: ishmemi_stream_reduce<long long>(op); break;
    default: ishmemi_stream_reduce<unsigned long long>(op); break; /* ISHMEMI_ELEM_U64 */
    }
}

// A collective launched on a stream (ISHMEMI_COLL_*, the runtime's
// device::COLL_*), by the block forms; the runtime checked the arguments.
static_assert(ISHMEMI_COLL_COUNT == 8, "ishmemi_stream_coll has a case for each of the 8 collectives (reductions and scans as default)");
__global__ void ishmemi_stream_coll(ishmemx_cuda_queue_op_t op) {
    size_t bytes = op.nbytes * op.elem;
    switch (op.coll) {
    case ISHMEMI_COLL_TEAM_SYNC: ishmemx_team_sync_block(op.team); break;
    case ISHMEMI_COLL_BROADCAST: ishmemx_broadcastmem_block(op.team, op.dest, op.source, bytes, op.root); break;
    case ISHMEMI_COLL_COLLECT:
        __syncthreads();
        if (threadIdx.x == 0) ishmemi_collect_bytes(op.team, op.dest, op.source, op.nbytes, op.elem);
        __syncthreads();
        break;
    case ISHMEMI_COLL_FCOLLECT: ishmemx_fcollectmem_block(op.team, op.dest, op.source, bytes); break;
    case ISHMEMI_COLL_ALLTOALL: ishmemx_alltoallmem_block(op.team, op.dest, op.source, bytes); break;
    default: ishmemi_stream_typed(op); break; /* reductions and scans */
    }
}
__global__ void ishmemi_stream_barrier_all() { ishmem_barrier_all(); }
__global__ void ishmemi_stream_sync_all() { ishmem_sync_all(); }

// The state and the first entries of its peer tables, in constant memory
// (core.h: ISHMEMI_STATE, ISHMEMI_PEER_BASE, ISHMEMI_PEER_LOCAL).
__constant__ ishmemx_device_state_t ishmemi_cstate;
__constant__ ulong ishmemi_cpeer_base[ISHMEMI_CONST_PES];
__constant__ uchar ishmemi_cpeer_local[ISHMEMI_CONST_PES];

namespace {
// Makes `device` current for the program's CUDA runtime (the runtime set up
// that GPU's primary context), stores the GPU address of the state, and
// copies the state and its peer tables (which do not change while the PE
// runs) into constant memory.
int install(int device, void *state) {
    ishmemx_device_state_t st = {};
    cudaError_t e = cudaSetDevice(device);
    if (e == cudaSuccess) e = cudaMemcpyToSymbol(ishmemi_state, &state, sizeof state);
    if (e == cudaSuccess) e = cudaMemcpy(&st, state, sizeof st, cudaMemcpyDeviceToHost);
    if (e == cudaSuccess) e = cudaMemcpyToSymbol(ishmemi_cstate, &st, sizeof st);
    size_t n = st.n_pes < ISHMEMI_CONST_PES ? (size_t)st.n_pes : ISHMEMI_CONST_PES;
    if (e == cudaSuccess)
        e = cudaMemcpyToSymbol(ishmemi_cpeer_base, (const void *)st.peer_heap_base, n * sizeof(ulong), 0,
                               cudaMemcpyDeviceToDevice);
    if (e == cudaSuccess)
        e = cudaMemcpyToSymbol(ishmemi_cpeer_local, (const void *)st.peer_is_local, n, 0, cudaMemcpyDeviceToDevice);
    // Every kernel of the library is loaded now. Under CUDA's lazy loading
    // (the default since CUDA 12.2) a kernel is otherwise loaded at its
    // first launch, which can wait until the GPU's running kernels end; a
    // stream routine queued behind one that waits on the ring or on another
    // PE then never started (back-to-back stream routines hung with
    // ISHMEM_DEVICE_RING_ALL=1). cudaFuncGetAttributes loads the function.
    const void *kernels[] = {(const void *)ishmemi_stream_put,        (const void *)ishmemi_stream_get,
                             (const void *)ishmemi_stream_put_signal, (const void *)ishmemi_stream_signal_wait,
                             (const void *)ishmemi_stream_quiet,      (const void *)ishmemi_stream_coll,
                             (const void *)ishmemi_stream_barrier_all, (const void *)ishmemi_stream_sync_all};
    for (const void *k : kernels) {
        cudaFuncAttributes a;
        if (e == cudaSuccess) e = cudaFuncGetAttributes(&a, k);
    }
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    return (int)e;
}

// Launches a stream-ordered operation (the runtime checked its arguments).
int enqueue(const ishmemx_cuda_queue_op_t *op, void *stream_, void *const *deps, uint32_t num_deps) {
    cudaStream_t stream = (cudaStream_t)stream_;
    for (uint32_t i = 0; i < num_deps; i++) {
        cudaError_t e = cudaStreamWaitEvent(stream, (cudaEvent_t)deps[i], 0);
        if (e != cudaSuccess) return (int)e;
    }
    const unsigned block = 1024;
    switch (op->kind) {
    case ISHMEMI_CUDA_OP_PUT: ishmemi_stream_put<<<1, block, 0, stream>>>(op->dest, op->source, op->nbytes, op->pe); break;
    case ISHMEMI_CUDA_OP_GET: ishmemi_stream_get<<<1, block, 0, stream>>>(op->dest, op->source, op->nbytes, op->pe); break;
    case ISHMEMI_CUDA_OP_BARRIER_ALL: ishmemi_stream_barrier_all<<<1, 1, 0, stream>>>(); break;
    case ISHMEMI_CUDA_OP_QUIET: ishmemi_stream_quiet<<<1, 1, 0, stream>>>(); break;
    case ISHMEMI_CUDA_OP_PUT_SIGNAL:
        ishmemi_stream_put_signal<<<1, block, 0, stream>>>(op->dest, op->source, op->nbytes, op->sig_addr, op->value,
                                                           op->op, op->pe);
        break;
    case ISHMEMI_CUDA_OP_SIGNAL_WAIT_UNTIL: ishmemi_stream_signal_wait<<<1, 1, 0, stream>>>(op->sig_addr, op->op, op->value); break;
    case ISHMEMI_CUDA_OP_SYNC_ALL: ishmemi_stream_sync_all<<<1, 1, 0, stream>>>(); break;
    case ISHMEMI_CUDA_OP_COLL: ishmemi_stream_coll<<<1, block, 0, stream>>>(*op); break;
    default: return (int)cudaErrorInvalidValue;
    }
    return (int)cudaGetLastError();
}

const ishmemx_cuda_device_library_t library = {ISHMEMI_CUDA_LIBRARY_VERSION, 0, install, enqueue};

__attribute__((constructor)) void register_library() { ishmemx_cuda_register_device_library(&library); }
} // namespace

// Collective launch. Exported as ishmemx_collective_launch and
// ishmemx_collective_launch_query_gridsize (build.sh renames them after
// making the object's ishmem_/ishmemx_ host stubs local).
extern "C" int ishmemi_cuda_collective_launch_query_gridsize(const void *func, dim3 block, void **args,
                                                             size_t shared_mem, int *gridsize) {
    (void)args;
    int dev = 0, sms = 0, per = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    if (e == cudaSuccess)
        e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, func, (int)(block.x * block.y * block.z), shared_mem);
    if (e != cudaSuccess) {
        fprintf(stderr, "ishmem: PE %d: ishmemx_collective_launch_query_gridsize: %s\n", shmem_my_pe(),
                cudaGetErrorString(e));
        return (int)e;
    }
    if (gridsize) *gridsize = per * sms;
    return 0;
}

extern "C" int ishmemi_cuda_collective_launch(const void *func, dim3 grid, dim3 block, void **args,
                                              size_t shared_mem, cudaStream_t stream) {
    int dev = 0, coop = 0, most = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev);
    if (e == cudaSuccess && !coop) {
        fprintf(stderr, "ishmem: PE %d: ishmemx_collective_launch: GPU %d does not support cooperative launches\n",
                shmem_my_pe(), dev);
        return (int)cudaErrorNotSupported;
    }
    if (e == cudaSuccess) {
        int r = ishmemi_cuda_collective_launch_query_gridsize(func, block, args, shared_mem, &most);
        if (r) return r;
        unsigned long long want = (unsigned long long)grid.x * grid.y * grid.z;
        if (want > (unsigned long long)most) {
            fprintf(stderr,
                    "ishmem: PE %d: ishmemx_collective_launch: a grid of %llu blocks of %u threads (%zu bytes of "
                    "shared memory) cannot be co-resident on GPU %d: at most %d blocks "
                    "(ishmemx_collective_launch_query_gridsize)\n",
                    shmem_my_pe(), want, block.x * block.y * block.z, shared_mem, dev, most);
            return (int)cudaErrorCooperativeLaunchTooLarge;
        }
        e = cudaLaunchCooperativeKernel(func, grid, block, args, shared_mem, stream);
    }
    if (e != cudaSuccess)
        fprintf(stderr, "ishmem: PE %d: ishmemx_collective_launch: %s\n", shmem_my_pe(), cudaGetErrorString(e));
    return (int)e;
}
