/* Host side of the SYCL declarations check (tests/device/test-device.sh): links
 * kernels.spv (C++ for OpenCL including ishmem/ishmem_sycl.h) with the
 * device library and checks what its kernel did on every PE. */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <ishmem.h>
#include <ishmemx.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(c, ...) do { if (!(c)) { fprintf(stderr, "PE %d: %s:%d: ", ishmem_my_pe(), __FILE__, __LINE__); \
    fprintf(stderr, __VA_ARGS__); fprintf(stderr, "\n"); exit(1); } } while (0)
#define CL(call) do { cl_int e_ = (call); CHECK(e_ == CL_SUCCESS, "%s = %d", #call, e_); } while (0)

int main(int argc, char **argv) {
    ishmem_init();
    int me = ishmem_my_pe(), np = ishmem_n_pes(), left = (me + np - 1) % np;
    CHECK(argc > 1, "usage: decls_host kernels.spv");
    FILE *f = fopen(argv[1], "rb");
    CHECK(f != NULL, "cannot open %s", argv[1]);
    static unsigned char spv[1 << 20];
    size_t len = fread(spv, 1, sizeof spv, f);
    CHECK(feof(f), "%s is larger than %zu bytes", argv[1], sizeof spv);
    fclose(f);
    cl_command_queue q = (cl_command_queue)ishmemx_cl_queue();
    cl_program prog = (cl_program)ishmemx_cl_link_program(spv, len);

    long long *dst = ishmem_calloc(132, sizeof(long long)), *src = ishmem_malloc(64 * sizeof(long long));
    long long *red = ishmem_calloc(64, sizeof(long long)), *res = ishmem_calloc(129, sizeof(long long));
    unsigned long *sig = ishmem_calloc(1, sizeof(unsigned long));
    long *counter = ishmem_calloc(1, sizeof(long));
    for (int i = 0; i < 64; i++) src[i] = (long long)me * 1000000000000LL + i;
    ishmem_barrier_all();

    cl_int err;
    cl_kernel k = clCreateKernel(prog, "decls", &err);
    CHECK(err == CL_SUCCESS, "clCreateKernel(decls) = %d", err);
    void *args[] = {dst, src, sig, counter, red, res};
    for (int a = 0; a < 6; a++) CL(clSetKernelArgSVMPointer(k, a, args[a]));
    size_t n = 64;
    CL(clEnqueueNDRangeKernel(q, k, 1, NULL, &n, &n, 0, NULL, NULL));
    CL(clFinish(q));
    ishmem_barrier_all();

    for (int i = 0; i < 64; i++) {
        long long l = (long long)left * 1000000000000LL + i;
        CHECK(dst[i] == l + 1, "p %d: %lld", i, dst[i]);
        CHECK(dst[64 + i] == l, "put_work_group %d: %lld", i, dst[64 + i]);
        CHECK(res[i] == l, "g %d: %lld", i, res[i]);
        CHECK(res[64 + i] == 0, "sum_reduce_work_group returned %lld", res[64 + i]);
        long long sum = 0;
        for (int p = 0; p < np; p++) sum += (long long)p * 1000000000000LL + i;
        CHECK(red[i] == sum, "sum_reduce %d: %lld, not %lld", i, red[i], sum);
    }
    for (int i = 0; i < 4; i++) CHECK(dst[128 + i] == (long long)left * 1000000000000LL + i, "put_signal %d", i);
    CHECK(res[128] >= 1 && *sig == 1, "signal %lld/%lu", res[128], *sig);
    if (me == 0) CHECK(*counter == 64L * np, "atomic_add total %ld", *counter);
    clReleaseKernel(k);
    ishmem_barrier_all();
    if (me == 0) printf("sycl declarations ok on %d PEs\n", np);
    ishmem_finalize();
    return 0;
}
