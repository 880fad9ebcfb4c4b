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

#include "names.h"
#include "../src/core.h"
#include "decls.h"
#include "../src/core.cl"
#include "../src/sync.cl"
#include "../src/typed.cl"

// The registration interface of libishmem (ishmem/ishmem_api.h; repeated
// here because that header's ishmemx_device_state_t is the host's view).
extern "C" {
typedef struct {
    uint32_t kind;
    int32_t pe;
    int32_t op;
    uint32_t reserved;
    void *dest;
    const void *source;
    uint64_t nbytes;
    uint64_t *sig_addr;
    uint64_t value;
} ishmemx_cuda_queue_op_t;
typedef struct {
    uint32_t version;
    uint32_t reserved;
    int (*install)(int device, void *state);
    int (*enqueue)(const ishmemx_cuda_queue_op_t *op, void *stream, void *const *deps, uint32_t num_deps);
} ishmemx_cuda_device_library_t;
void ishmemx_cuda_register_device_library(const ishmemx_cuda_device_library_t *lib);
int shmem_my_pe(void); // libishmem's (the ishmem_ name is the device routine here)
int ishmemi_cuda_device_library_anchor = 1;
}
// The layout libishmem has (runtime/src/device/cuda/library.rs asserts the same).
static_assert(sizeof(ishmemx_cuda_queue_op_t) == 56, "ishmemx_cuda_queue_op_t layout");
static_assert(offsetof(ishmemx_cuda_queue_op_t, dest) == 16, "ishmemx_cuda_queue_op_t layout");
static_assert(offsetof(ishmemx_cuda_queue_op_t, value) == 48, "ishmemx_cuda_queue_op_t layout");
static_assert(offsetof(ishmemx_cuda_device_library_t, enqueue) == 16, "ishmemx_cuda_device_library_t layout");

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
    case 0: ishmemi_stream_put<<<1, block, 0, stream>>>(op->dest, op->source, op->nbytes, op->pe); break;
    case 1: ishmemi_stream_get<<<1, block, 0, stream>>>(op->dest, op->source, op->nbytes, op->pe); break;
    case 2: ishmemi_stream_barrier_all<<<1, 1, 0, stream>>>(); break;
    case 3: ishmemi_stream_quiet<<<1, 1, 0, stream>>>(); break;
    case 4:
        ishmemi_stream_put_signal<<<1, block, 0, stream>>>(op->dest, op->source, op->nbytes, op->sig_addr, op->value,
                                                           op->op, op->pe);
        break;
    case 5: ishmemi_stream_signal_wait<<<1, 1, 0, stream>>>(op->sig_addr, op->op, op->value); break;
    case 6: ishmemi_stream_sync_all<<<1, 1, 0, stream>>>(); break;
    default: return (int)cudaErrorInvalidValue;
    }
    return (int)cudaGetLastError();
}

const ishmemx_cuda_device_library_t library = {3, 0, install, enqueue};

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
