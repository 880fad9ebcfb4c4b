/* Device-initiated figures (a benchmark, not a test): ring round-trip
 * latency, ring requests per second with many work-items, device put
 * bandwidth (one work-item and one work-group) against a host memcpy.
 * Run under ishmrun on 2 PEs, with ISHMEM_DEVICE_RING_ALL=1 for the ring. */
#define _POSIX_C_SOURCE 200809L
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <ishmem.h>
#include <ishmemx.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static cl_command_queue q;
static cl_program prog;

static double launch(const char *name, size_t gsz, size_t lsz, void *a0, void *a1, long l, int pe) {
    cl_int e;
    cl_kernel k = clCreateKernel(prog, name, &e);
    int arg = 0;
    clSetKernelArgSVMPointer(k, arg++, a0);
    if (a1) clSetKernelArgSVMPointer(k, arg++, a1);
    clSetKernelArg(k, arg++, sizeof(long), &l);
    clSetKernelArg(k, arg++, sizeof(int), &pe);
    double best = 1e9;
    for (int t = 0; t < 5; t++) {
        double t0 = now();
        clEnqueueNDRangeKernel(q, k, 1, NULL, &gsz, lsz ? &lsz : NULL, 0, NULL, NULL);
        clFinish(q);
        double d = now() - t0;
        if (d < best) best = d;
    }
    clReleaseKernel(k);
    return best;
}

int main(int argc, char **argv) {
    ishmem_init();
    int me = ishmem_my_pe(), np = ishmem_n_pes(), right = (me + 1) % np;
    FILE *f = fopen(argv[1], "rb");
    static unsigned char spv[1 << 20];
    size_t len = fread(spv, 1, sizeof spv, f);
    fclose(f);
    q = (cl_command_queue)ishmemx_cl_queue();
    prog = (cl_program)ishmemx_cl_link_program(spv, len);
    const char *mode = getenv("ISHMEM_DEVICE_RING_ALL") && atoi(getenv("ISHMEM_DEVICE_RING_ALL")) ? "ring" : "load/store";
    long *c = ishmem_calloc(1, sizeof(long));
    size_t big = 16 << 20;
    char *src = ishmem_malloc(big), *dst = ishmem_malloc(big), *loc = malloc(big);
    memset(src, 1, big);
    memset(loc, 2, big);
    ishmem_barrier_all();
    if (me == 0) {
        long iters = 20000;
        double t = launch("amo_loop", 1, 1, c, NULL, iters, right);
        printf("device fetch_add (%s),8,%d,%.3f,us per op\n", mode, np, t / iters * 1e6);
        /* Requests per second from 1, 32, 1024, 4096 and 32 x 1024
         * work-items (work-groups of up to 64), about 800 K requests each. */
        size_t counts[] = {1, 32, 1024, 4096, 32768};
        for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
            size_t wi = counts[i], wg = wi < 64 ? wi : 64;
            long per = 819200 / (long)wi;
            t = launch("amo_many", wi, wg, c, NULL, per, right);
            printf("device fetch_add from %zu work-items (%s),8,%d,%.2f,M requests/s\n", wi, mode, np, wi * per / t / 1e6);
            if (wi < 1024) continue;
            t = launch("amo_many_sg8", wi, wg, c, NULL, per, right);
            printf("device fetch_add from %zu work-items in sub-groups of 8 (%s),8,%d,%.2f,M requests/s\n", wi, mode, np,
                   wi * per / t / 1e6);
        }
        for (size_t b = 4096; b <= big; b *= 16) {
            double t1 = launch("put_one", 1, 1, dst, src, (long)b, right);
            double tw = launch("put_wg", 64, 64, dst, src, (long)b, right);
            double tm = 1e9;
            for (int r = 0; r < 5; r++) {
                double t0 = now();
                memcpy(loc, src, b);
                __asm__ volatile("" ::: "memory");
                double d = now() - t0;
                if (d < tm) tm = d;
            }
            printf("device putmem 1 work-item (%s),%zu,%d,%.0f,MB/s\n", mode, b, np, b / t1 / 1e6);
            printf("device putmem work-group of 64 (%s),%zu,%d,%.0f,MB/s\n", mode, b, np, b / tw / 1e6);
            printf("host memcpy,%zu,%d,%.0f,MB/s\n", b, np, b / tm / 1e6);
        }
    }
    /* Every PE at once, 4096 work-items each (with the ring, each PE's
     * kernels and its ring's server share the cores with the others'):
     * the sum of the PEs' rates. */
    double *best = ishmem_malloc(2 * sizeof(double));
    const char *kernels[] = {"amo_many", "amo_many_sg8"};
    for (int k = 0; k < 2; k++) {
        size_t wi = 4096;
        long per = 20;
        ishmem_barrier_all();
        best[k] = wi * per / launch(kernels[k], wi, 64, c, NULL, per, right) / 1e6;
    }
    ishmem_barrier_all();
    if (me == 0) {
        for (int k = 0; k < 2; k++) {
            double sum = 0;
            for (int p = 0; p < np; p++) sum += ishmem_double_g(&best[k], p);
            printf("device fetch_add from 4096 work-items%s on every PE, sum (%s),8,%d,%.2f,M requests/s\n",
                   k ? " in sub-groups of 8" : "", mode, np, sum);
        }
    }
    ishmem_barrier_all();
    ishmem_finalize();
    return 0;
}
