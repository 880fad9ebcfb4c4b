/* Host side of sweep.cl: every type x sizes 1..65536 (offsets 0 and 3) x
 * single work-item and work-group, then device-to-device signals and fence
 * ordering. With a second argument "few", one type of each size and kind
 * (char, short, int, long, float, double) instead of all 23: for runs where
 * every request waits for the host proxy on an oversubscribed machine. */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <ishmem.h>
#include <ishmemx.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(c, ...) do { if (!(c)) { fprintf(stderr, "PE %d: %s:%d: ", ishmem_my_pe(), __FILE__, __LINE__); \
    fprintf(stderr, __VA_ARGS__); fprintf(stderr, "\n"); exit(1); } } while (0)

static const char *types[] = {"float", "double", "char", "schar", "short", "int", "long", "longlong", "uchar",
    "ushort", "uint", "ulong", "ulonglong", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
    "uint64", "size", "ptrdiff"};

int main(int argc, char **argv) {
    ishmem_init();
    int me = ishmem_my_pe(), np = ishmem_n_pes();
    FILE *f = fopen(argv[1], "rb");
    CHECK(f != NULL, "cannot open the SPIR-V");
    static unsigned char spv[4 << 20];
    size_t len = fread(spv, 1, sizeof spv, f);
    fclose(f);
    cl_command_queue q = (cl_command_queue)ishmemx_cl_queue();
    cl_program prog = (cl_program)ishmemx_cl_link_program(spv, len);
    size_t maxb = (65536 + 8) * 8;
    void *sym = ishmem_calloc(maxb, 1), *src = ishmem_malloc(maxb), *loc = ishmem_malloc(maxb);
    long *err = ishmem_calloc(8, sizeof(long));
    int few = argc > 2 && strcmp(argv[2], "few") == 0;
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        if (few) {
            char key[32];
            snprintf(key, sizeof key, " %s ", types[t]);
            if (!strstr(" char short int long float double ", key)) continue;
        }
        char name[64];
        snprintf(name, sizeof name, "sweep_%s", types[t]);
        cl_int e;
        cl_kernel k = clCreateKernel(prog, name, &e);
        CHECK(e == 0, "kernel %s: %d", name, e);
        clSetKernelArgSVMPointer(k, 0, sym);
        clSetKernelArgSVMPointer(k, 1, src);
        clSetKernelArgSVMPointer(k, 2, loc);
        clSetKernelArgSVMPointer(k, 3, err);
        for (int wg = 0; wg < 2; wg++) {
            clSetKernelArg(k, 4, sizeof(int), &wg);
            for (int phase = 0; phase < 34; phase++) {
                clSetKernelArg(k, 5, sizeof(int), &phase);
                size_t g = wg ? 32 : 1;
                ishmem_barrier_all();
                CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &g, &g, 0, NULL, NULL) == 0, "enqueue");
                clFinish(q);
                CHECK(err[0] == 0 && err[2] == 0, "%s %s phase %d: put error at %ld (phase %ld), get error at %ld (phase %ld)",
                      types[t], wg ? "work-group" : "work-item", phase, err[0], err[1], err[2], err[3]);
            }
        }
        clReleaseKernel(k);
    }
    /* device to device */
    long *buf = ishmem_calloc(4096, sizeof(long)), *dsrc = ishmem_malloc(4096 * sizeof(long));
    unsigned long *sig = ishmem_calloc(1, sizeof(unsigned long));
    long *flag = ishmem_calloc(1, sizeof(long)), rounds = 40;
    cl_int e;
    cl_kernel k = clCreateKernel(prog, "d2d", &e);
    void *args[] = {buf, dsrc, sig, flag, err};
    for (int a = 0; a < 5; a++) clSetKernelArgSVMPointer(k, a, args[a]);
    clSetKernelArg(k, 5, sizeof(long), &rounds);
    size_t one = 1;
    ishmem_barrier_all();
    CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &one, &one, 0, NULL, NULL) == 0, "enqueue d2d");
    clFinish(q);
    CHECK(err[4] == 0, "device-to-device round %ld: data element %ld not there with the signal/flag", err[5], err[4] - 1);
    clReleaseKernel(k);
    ishmem_barrier_all();
    if (me == 0) printf("device sweep ok on %d PEs\n", np);
    ishmem_finalize();
    return 0;
}
