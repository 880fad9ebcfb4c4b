/* The device test on Intel GPUs (ISHMEM_DEVICE=ze): the kernels of
 * tests/device/kernels.spv, the SPIR-V the CPU device's test runs, linked
 * with the device library through ishmemx_ze_link_module and launched on
 * this PE's Level Zero command list; the host reads and writes the heap (GPU
 * memory) only through the library. Run by tests/ze/run.sh. UNVERIFIED: no
 * Intel GPU has run it yet; CI only compiles it. */
#include <ishmem.h>
#include <ishmemx.h>
#include <level_zero/ze_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(c, ...) do { if (!(c)) { fprintf(stderr, "PE %d: %s:%d: ", ishmem_my_pe(), __FILE__, __LINE__); \
    fprintf(stderr, __VA_ARGS__); fprintf(stderr, "\n"); exit(1); } } while (0)
#define ZE(call) do { ze_result_t r_ = (call); CHECK(r_ == ZE_RESULT_SUCCESS, "%s = %#x", #call, (unsigned)r_); } while (0)

/* Kernels that call the device API reach memory they were not given (the
   peers' heaps, the library's state). */
#define INDIRECT (ZE_KERNEL_INDIRECT_ACCESS_FLAG_HOST | ZE_KERNEL_INDIRECT_ACCESS_FLAG_DEVICE | \
                  ZE_KERNEL_INDIRECT_ACCESS_FLAG_SHARED)

static ze_command_list_handle_t list;
static ze_module_handle_t mod;
static ze_event_handle_t done;

/* One kernel argument: its size and where its value is. */
typedef struct { size_t size; const void *value; } arg_t;
#define PTR(p) ((arg_t){sizeof(void *), &(p)})
#define VAL(v) ((arg_t){sizeof(v), &(v)})

/* Runs kernel `name` on `n` work-items in groups of `wg` and waits. */
static void run_wg(const char *name, uint32_t n, uint32_t wg, int nargs, const arg_t *args) {
    ze_kernel_desc_t kd = {ZE_STRUCTURE_TYPE_KERNEL_DESC, NULL, 0, name};
    ze_kernel_handle_t k;
    ZE(zeKernelCreate(mod, &kd, &k));
    ZE(zeKernelSetGroupSize(k, wg, 1, 1));
    ZE(zeKernelSetIndirectAccess(k, INDIRECT));
    for (int a = 0; a < nargs; a++) ZE(zeKernelSetArgumentValue(k, a, args[a].size, args[a].value));
    ze_group_count_t g = {n / wg, 1, 1};
    ZE(zeCommandListAppendLaunchKernel(list, k, &g, done, 0, NULL));
    ZE(zeEventHostSynchronize(done, UINT64_MAX));
    ZE(zeEventHostReset(done));
    ZE(zeKernelDestroy(k));
}
static void run(const char *name, uint32_t n, int nargs, const arg_t *args) {
    run_wg(name, n, n % 64 == 0 ? 64 : 1, nargs, args);
}

/* Host access to symmetric memory (GPU memory): through the library. */
static void sym_put(void *dst, const void *src, size_t n) { ishmem_putmem(dst, src, n, ishmem_my_pe()); }
static void sym_get(void *dst, const void *src, size_t n) { ishmem_getmem(dst, src, n, ishmem_my_pe()); }

int main(int argc, char **argv) {
    ishmem_init();
    int me = ishmem_my_pe(), np = ishmem_n_pes();
    int left = (me + np - 1) % np;
    CHECK(argc > 1, "usage: ze_device KERNELS.spv");
    FILE *f = fopen(argv[1], "rb");
    CHECK(f != NULL, "cannot open %s", argv[1]);
    static unsigned char spv[1 << 20];
    size_t len = fread(spv, 1, sizeof spv, f);
    fclose(f);
    ze_context_handle_t ctx = (ze_context_handle_t)ishmemx_ze_context();
    ze_device_handle_t dev = (ze_device_handle_t)ishmemx_ze_device();
    list = (ze_command_list_handle_t)ishmemx_ze_command_list();
    mod = (ze_module_handle_t)ishmemx_ze_link_module(spv, len);
    ze_event_pool_desc_t pd = {ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, NULL, ZE_EVENT_POOL_FLAG_HOST_VISIBLE, 2};
    ze_event_pool_handle_t pool;
    ZE(zeEventPoolCreate(ctx, &pd, 1, &dev, &pool));
    ze_event_desc_t ed = {ZE_STRUCTURE_TYPE_EVENT_DESC, NULL, 0, ZE_EVENT_SCOPE_FLAG_HOST, ZE_EVENT_SCOPE_FLAG_HOST};
    ZE(zeEventCreate(pool, &ed, &done));
    ze_event_handle_t filled;
    ed.index = 1;
    ZE(zeEventCreate(pool, &ed, &filled));

    /* 1. put ring: every work-item stores one element to the right PE */
    enum { N = 1024 };
    long *src = ishmem_malloc(N * sizeof(long)), *dst = ishmem_calloc(N, sizeof(long));
    long *h = malloc(65536 * sizeof(long));
    for (int i = 0; i < N; i++) h[i] = i;
    sym_put(src, h, N * sizeof(long));
    ishmem_barrier_all();
    run("put_ring", N, 2, (arg_t[]){PTR(dst), PTR(src)});
    run("barrier_all", 1, 0, NULL);
    sym_get(h, dst, N * sizeof(long));
    for (int i = 0; i < N; i++) CHECK(h[i] == i + 1000L * left, "put_ring %d: %ld", i, h[i]);

    /* 2. AMOs from many work-items, and from the host on GPU memory */
    long *counter = ishmem_calloc(1, sizeof(long));
    unsigned *mask = ishmem_calloc(1, sizeof(unsigned));
    ishmem_barrier_all();
    run("count", 4096, 2, (arg_t[]){PTR(counter), PTR(mask)});
    ishmem_long_atomic_add(counter, 1, 0);
    ishmem_barrier_all();
    if (me == 0) {
        long c = ishmem_long_atomic_fetch(counter, 0);
        unsigned m = ishmem_uint_atomic_fetch(mask, 0);
        CHECK(c == 4097L * np, "device and host fetch_add total %ld", c);
        CHECK(m == (1u << np) - 1, "device atomic_or mask %x", m);
    }

    /* 3. bulk put from one work-item */
    int *ib = ishmem_malloc(65536 * sizeof(int)), *ob = ishmem_calloc(65536, sizeof(int));
    int *hi = malloc(65536 * sizeof(int));
    for (int i = 0; i < 65536; i++) hi[i] = me * 100000 + i;
    sym_put(ib, hi, 65536 * sizeof(int));
    long n64k = 65536;
    ishmem_barrier_all();
    run("bulk_put", 1, 3, (arg_t[]){PTR(ob), PTR(ib), VAL(n64k)});
    ishmem_barrier_all();
    sym_get(hi, ob, 65536 * sizeof(int));
    for (int i = 0; i < 65536; i++) CHECK(hi[i] == left * 100000 + i, "bulk put %d", i);

    /* 4. put_signal from a kernel, waited for by the host */
    double *dsrc = ishmem_malloc(512 * sizeof(double)), *ddst = ishmem_calloc(512, sizeof(double));
    uint64_t *sig = ishmem_calloc(1, sizeof(uint64_t));
    double hd[512];
    for (int i = 0; i < 512; i++) hd[i] = me + i * 0.5;
    sym_put(dsrc, hd, sizeof hd);
    long n512 = 512;
    ishmem_barrier_all();
    run("signal_right", 1, 4, (arg_t[]){PTR(ddst), PTR(dsrc), VAL(n512), PTR(sig)});
    CHECK(ishmem_signal_wait_until(sig, ISHMEM_CMP_EQ, 7) == 7, "signal");
    sym_get(hd, ddst, sizeof hd);
    for (int i = 0; i < 512; i++) CHECK(hd[i] == left + i * 0.5, "put_signal data %d", i);

    /* 5. a compare_swap spin lock taken by kernels of every PE */
    int *lock = ishmem_calloc(1, sizeof(int));
    long *total = ishmem_calloc(1, sizeof(long));
    long rounds = 200;
    ishmem_barrier_all();
    run("cswap_lock", 1, 3, (arg_t[]){PTR(lock), PTR(total), VAL(rounds)});
    ishmem_barrier_all();
    if (me == 0) CHECK(ishmem_long_g(total, 0) == rounds * np, "lock-protected total");

    /* 6. 16384 work-items issuing requests at once */
    enum { M = 16384 };
    long *c2 = ishmem_calloc(1, sizeof(long));
    int *slots = ishmem_calloc(2 * M, sizeof(int));
    ishmem_barrier_all();
    run("many", M, 2, (arg_t[]){PTR(c2), PTR(slots)});
    ishmem_barrier_all();
    CHECK(ishmem_long_g(c2, me) == M, "many: counter");
    sym_get(hi, slots + M, M * sizeof(int));
    for (int i = 0; i < M; i++) CHECK(hi[i] == i + left, "many: nbi put %d = %d", i, hi[i]);

    /* 7. work-group forms: 8 groups of 64 work-items, one block each */
    enum { B = 4096, G = 8 };
    long *wsrc = ishmem_malloc(B * G * sizeof(long)), *wdst = ishmem_calloc(B * G, sizeof(long));
    uint64_t *wsig = ishmem_calloc(1, sizeof(uint64_t));
    for (int i = 0; i < B * G; i++) h[i] = me * 1000000L + i;
    sym_put(wsrc, h, B * G * sizeof(long));
    long block = B;
    ishmem_barrier_all();
    run_wg("wg_get_signal", 64 * G, 64, 4, (arg_t[]){PTR(wdst), PTR(wsrc), VAL(block), PTR(wsig)});
    CHECK(ishmem_uint64_atomic_fetch(wsig, me) == G, "work-group signals");
    sym_get(h, wdst, B * G * sizeof(long));
    for (int i = 0; i < B * G; i++) CHECK(h[i] == left * 1000000L + i, "wg_get %d", i);

    /* 8. on_queue: a kernel fills a buffer, a put ordered after it on the
       command list sends it right, a barrier follows; the host waits on the
       last event only. */
    enum { Q = 8192 };
    long *qsrc = ishmem_malloc(Q * sizeof(long)), *qdst = ishmem_calloc(Q, sizeof(long));
    long base = me * 1000000L;
    ishmem_barrier_all();
    ze_kernel_desc_t kd = {ZE_STRUCTURE_TYPE_KERNEL_DESC, NULL, 0, "fill"};
    ze_kernel_handle_t fk;
    ZE(zeKernelCreate(mod, &kd, &fk));
    ZE(zeKernelSetGroupSize(fk, 64, 1, 1));
    ZE(zeKernelSetIndirectAccess(fk, INDIRECT));
    ZE(zeKernelSetArgumentValue(fk, 0, sizeof(void *), &qsrc));
    ZE(zeKernelSetArgumentValue(fk, 1, sizeof(long), &base));
    ze_group_count_t g = {Q / 64, 1, 1};
    ZE(zeCommandListAppendLaunchKernel(list, fk, &g, filled, 0, NULL));
    void *put = ishmemx_long_put_on_queue(qdst, qsrc, Q, (me + 1) % np, list, 1, (void *const *)&filled);
    void *bar = ishmemx_barrier_all_on_queue(list, 1, (void *const *)&put);
    ishmemx_ze_wait_events((void *const *)&bar, 1);
    ishmemx_ze_wait_events((void *const *)&put, 1);
    sym_get(h, qdst, Q * sizeof(long));
    for (int i = 0; i < Q; i++) CHECK(h[i] == left * 1000000L + i, "on_queue put %d: %ld", i, h[i]);
    ZE(zeKernelDestroy(fk));

    ishmem_barrier_all();
    if (me == 0) printf("ze device ok on %d PEs\n", np);
    ZE(zeEventDestroy(filled));
    ZE(zeEventDestroy(done));
    ZE(zeEventPoolDestroy(pool));
    free(h);
    free(hi);
    ishmem_finalize();
    return 0;
}
