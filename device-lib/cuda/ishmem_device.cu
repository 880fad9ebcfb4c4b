// The CUDA device library (libishmem_device.a): the shared device sources
// built for CUDA (target_cuda.h), plus the host part that registers the
// library with libishmem and installs each PE's device state.
//
// Link with -rdc=true. A program that includes <ishmem.h> in CUDA code
// references ishmemi_cuda_device_library_anchor, which pulls this object
// (and so its constructor) into the program.
#include <cuda_runtime.h>

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
    uint32_t version;
    uint32_t reserved;
    int (*install)(int device, void *state);
} ishmemx_cuda_device_library_t;
void ishmemx_cuda_register_device_library(const ishmemx_cuda_device_library_t *lib);
int ishmemi_cuda_device_library_anchor = 1;
}

namespace {
// Makes `device` current for the program's CUDA runtime (the runtime set up
// that GPU's primary context) and stores the GPU address of the state.
int install(int device, void *state) {
    cudaError_t e = cudaSetDevice(device);
    if (e == cudaSuccess) e = cudaMemcpyToSymbol(ishmemi_state, &state, sizeof state);
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    return (int)e;
}

const ishmemx_cuda_device_library_t library = {1, 0, install};

__attribute__((constructor)) void register_library() { ishmemx_cuda_register_device_library(&library); }
} // namespace
