// A CUDA program written like an NVSHMEM or Intel SHMEM one: each PE's
// kernel puts its number into the next PE's symmetric buffer on the GPU,
// then the host checks what arrived.
//   nvcc -rdc=true -arch=sm_90 cuda_ring.cu $(pkg-config --cflags --libs ishmem-cuda) -o cuda_ring
//   ishmrun -n 2 ./cuda_ring
#include <ishmem.h>
#include <cstdio>

__global__ void ring_put(int *dst) {
    int me = ishmem_my_pe(), npes = ishmem_n_pes();
    ishmem_int_p(dst, me, (me + 1) % npes); // a store into the peer's GPU memory
    ishmem_quiet();
}

int main() {
    ishmem_init();
    int me = ishmem_my_pe(), npes = ishmem_n_pes();
    int *dst = (int *)ishmem_calloc(1, sizeof(int)); // symmetric, in GPU memory
    ring_put<<<1, 1>>>(dst);
    cudaDeviceSynchronize();
    ishmem_barrier_all();
    int got = -1;
    cudaMemcpy(&got, dst, sizeof got, cudaMemcpyDeviceToHost);
    printf("PE %d of %d received %d\n", me, npes, got);
    ishmem_free(dst);
    ishmem_finalize();
    return got == (me + npes - 1) % npes ? 0 : 1;
}
