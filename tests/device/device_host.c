/* Host side of the device test: links kernels.spv with the device library,
 * runs the kernels on this PE's OpenCL CPU device, checks every result. */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <ishmem.h>
#include <ishmemx.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHECK(c, ...) do { if (!(c)) { fprintf(stderr, "PE %d: %s:%d: ", ishmem_my_pe(), __FILE__, __LINE__); \
    fprintf(stderr, __VA_ARGS__); fprintf(stderr, "\n"); exit(1); } } while (0)
#define CL(call) do { cl_int e_ = (call); CHECK(e_ == CL_SUCCESS, "%s = %d", #call, e_); } while (0)

static cl_command_queue q;
static cl_program prog;

static void run_wg(const char *name, size_t n, size_t wg, int nargs, void **svm, size_t *sizes, const void **vals);
static void run(const char *name, size_t n, int nargs, void **svm, size_t *sizes, const void **vals) {
    run_wg(name, n, 0, nargs, svm, sizes, vals);
}
static void run_wg(const char *name, size_t n, size_t wg, int nargs, void **svm, size_t *sizes, const void **vals) {
    cl_int err;
    cl_kernel k = clCreateKernel(prog, name, &err);
    CHECK(err == CL_SUCCESS, "kernel %s: %d", name, err);
    for (int a = 0; a < nargs; a++) {
        if (svm[a]) CL(clSetKernelArgSVMPointer(k, a, svm[a]));
        else CL(clSetKernelArg(k, a, sizes[a], vals[a]));
    }
    CL(clEnqueueNDRangeKernel(q, k, 1, NULL, &n, wg ? &wg : NULL, 0, NULL, NULL));
    CL(clFinish(q));
    clReleaseKernel(k);
}

int main(int argc, char **argv) {
    ishmem_init();
    int me = ishmem_my_pe(), np = ishmem_n_pes();
    int left = (me + np - 1) % np;
    FILE *f = fopen(argv[1], "rb");
    CHECK(f != NULL, "cannot open %s", argc > 1 ? argv[1] : "(no SPIR-V given)");
    static unsigned char spv[1 << 20];
    size_t len = fread(spv, 1, sizeof spv, f);
    fclose(f);
    q = (cl_command_queue)ishmemx_cl_queue();
    prog = (cl_program)ishmemx_cl_link_program(spv, len);
    const ishmemx_device_state_t *ds = ishmemx_get_device_state();
    CHECK(ds->version == ISHMEMX_DEVICE_STATE_VERSION, "device state version");

    /* "small": the many-work-item parts with fewer work-items (the
       1536 of part 7 still send 4608 requests through the ring),
       for paths where each request costs a network round trip (every peer
       remote over MPI). */
    int small = argc > 2 && strcmp(argv[2], "small") == 0;
    /* Device-side argument checks: asked for by the test script, which
       expects the job to abort with the library's message. */
    if (argc > 2 && !small) {
        long *x = ishmem_calloc(1, sizeof(long));
        long *y = calloc(1, sizeof(long)); /* not symmetric */
        ishmem_barrier_all();
        if (strcmp(argv[2], "lost_in_kernel") == 0) {
            /* The last PE ends without finalizing while the others' kernels
               wait for a value it would have stored: the watchdog must end
               them with a message. */
            if (me == np - 1) _exit(0);
            run("wait_forever", 1, 1, (void *[]){x}, NULL, NULL);
            printf("PE %d: wait_forever returned\n", me);
            return 1;
        }
        if (strcmp(argv[2], "long_wait_ends") == 0) {
            /* PE 0's kernel waits (long enough to be recorded for the
               deadlock report) until PE 1's host stores 5 into the second
               of two words 2 s later; it must return index 1. Then every
               PE's host waits for a value nobody stores: the report must
               be the one of host waits (the ended device wait no longer
               counts) and end the job. */
            long *ivars = ishmem_calloc(2, sizeof(long)), *out = ishmem_calloc(1, sizeof(long));
            ishmem_barrier_all();
            if (me == 0) {
                run("wait_any_long", 1, 2, (void *[]){ivars, out}, NULL, NULL);
                printf("PE 0: the long wait returned %ld\n", *out);
                fflush(stdout);
            } else if (me == 1) {
                sleep(2);
                ishmem_long_p(ivars + 1, 5, 0);
                ishmem_quiet();
            }
            ishmem_long_wait_until(x, ISHMEM_CMP_EQ, 42);
            printf("PE %d: long_wait_ends returned\n", me);
            return 1;
        }
        if (strncmp(argv[2], "coll_mismatch_", 14) == 0) {
            /* Members of the world team make different collective calls in
               kernels (sync words in the heap): _ll, PE 0 an fcollect and
               PE 1 a broadcast, both of low-latency words; _signal, PE 0 a
               barrier and PE 1 (the root) a broadcast of 64 KiB, through
               signals; _mixed, PE 0 an fcollect of low-latency words and
               PE 1 a barrier (neither hears the other: a deadlock);
               _llroot, PE 0 an fcollect and PE 1 (the root) a broadcast,
               both of low-latency words; _wgreduce, PE 0 a work-group
               reduction of 7 elements and PE 1 (the root) a broadcast of
               fewer words; _reduce, the same with a work-item's reduction
               (on 2 PEs the pair's path, on 3 the batched one); _reduce4,
               that reduction (of 8-byte elements) against a broadcast of
               one int, which sends one word where each element takes two. On 3 PEs PE 2 calls as PE 0 does, so that PE 0
               awaits several members' words at once.
               The others' hosts then wait for nothing: only the library's
               report may end the job. */
            const char *how = argv[2] + 14;
            long *src = ishmem_calloc(16384, sizeof(long)), *dst = ishmem_calloc(16384, sizeof(long));
            long one = 1, seven = 7, big = 8192, root0 = 0, root1 = 1;
            ishmem_barrier_all();
            if ((me == 0 || me == 2) && strcmp(how, "wgreduce") == 0)
                run_wg("coll_wg_reduce", 64, 64, 3, (void *[]){dst, src, NULL}, (size_t[]){0, 0, sizeof(long)},
                       (const void *[]){0, 0, &seven});
            else if ((me == 0 || me == 2) && strncmp(how, "reduce", 6) == 0)
                run("coll_reduce", 1, 3, (void *[]){dst, src, NULL}, (size_t[]){0, 0, sizeof(long)},
                    (const void *[]){0, 0, &seven});
            else if ((me == 0 || me == 2) && strcmp(how, "signal") != 0)
                run("coll_fcollect", 1, 3, (void *[]){dst, src, NULL}, (size_t[]){0, 0, sizeof(long)},
                    (const void *[]){0, 0, &one});
            else if (me == 0 || me == 2 || (me == 1 && strcmp(how, "mixed") == 0))
                run("barrier_all", 1, 0, NULL, NULL, NULL);
            else if (me == 1 && strcmp(how, "ll") == 0)
                run("coll_bcast", 1, 4, (void *[]){dst, src, NULL, NULL}, (size_t[]){0, 0, sizeof(long), sizeof(long)},
                    (const void *[]){0, 0, &one, &root0});
            else if (me == 1 && strcmp(how, "reduce4") == 0)
                run("coll_bcast_int", 1, 4, (void *[]){dst, src, NULL, NULL}, (size_t[]){0, 0, sizeof(long), sizeof(long)},
                    (const void *[]){0, 0, &one, &root1});
            else if (me == 1 && (strcmp(how, "llroot") == 0 || strcmp(how, "wgreduce") == 0 || strcmp(how, "reduce") == 0))
                run("coll_bcast", 1, 4, (void *[]){dst, src, NULL, NULL}, (size_t[]){0, 0, sizeof(long), sizeof(long)},
                    (const void *[]){0, 0, &one, &root1});
            else if (me == 1)
                run("coll_bcast", 1, 4, (void *[]){dst, src, NULL, NULL}, (size_t[]){0, 0, sizeof(long), sizeof(long)},
                    (const void *[]){0, 0, &big, &root1});
            ishmem_long_wait_until(x, ISHMEM_CMP_EQ, 42);
            printf("PE %d: %s returned\n", me, argv[2]);
            return 1;
        }
        if (strcmp(argv[2], "coll_host_device") == 0 || strcmp(argv[2], "coll_host_mismatch") == 0) {
            /* PE 1 calls on the host what the others call in kernels (a
               device team sync through the control segment interoperates
               with the host's, and publishes its call as the host's do):
               coll_host_device, the same broadcast of 8 KiB from PE 1 and the
               same sum reductions, whose results every PE checks;
               coll_host_mismatch, an fcollect of 8
               KiB instead, which the library reports. */
            int same = strcmp(argv[2], "coll_host_device") == 0;
            enum { HN = 1024 };
            long *src = ishmem_malloc(HN * sizeof(long)), *dst = ishmem_calloc(HN * np, sizeof(long));
            for (int i = 0; i < HN; i++) src[i] = me * 100000L + i;
            long hn = HN, root1 = 1;
            ishmem_barrier_all();
            if (me == 1 && same)
                ishmem_long_broadcast(ISHMEM_TEAM_WORLD, dst, src, HN, 1);
            else if (me == 1)
                ishmem_long_fcollect(ISHMEM_TEAM_WORLD, dst, src, HN);
            else
                run("coll_bcast", 1, 4, (void *[]){dst, src, NULL, NULL}, (size_t[]){0, 0, sizeof(long), sizeof(long)},
                    (const void *[]){0, 0, &hn, &root1});
            if (!same) {
                ishmem_long_wait_until(x, ISHMEM_CMP_EQ, 42);
                printf("PE %d: %s returned\n", me, argv[2]);
                return 1;
            }
            for (int i = 0; i < HN; i++) CHECK(dst[i] == 100000L + i, "host/device broadcast %d: %ld", i, dst[i]);
            /* and sum reductions of 1024 longs, a work-item's and a
               work-group's: the element type and the operator are compared
               too, and PE 1 checks what the others stored into its dest as
               soon as its reduction returns */
            for (int wg = 0; wg < 2; wg++) {
                ishmem_barrier_all();
                for (int i = 0; i < HN; i++) dst[i] = -1;
                ishmem_barrier_all();
                if (me == 1)
                    ishmem_long_sum_reduce(ISHMEM_TEAM_WORLD, dst, src, HN);
                else if (wg)
                    run_wg("coll_wg_reduce", 64, 64, 3, (void *[]){dst, src, NULL}, (size_t[]){0, 0, sizeof(long)},
                           (const void *[]){0, 0, &hn});
                else
                    run("coll_reduce", 1, 3, (void *[]){dst, src, NULL}, (size_t[]){0, 0, sizeof(long)},
                        (const void *[]){0, 0, &hn});
                for (int i = 0; i < HN; i++)
                    CHECK(dst[i] == 100000L * np * (np - 1) / 2 + (long)np * i, "host/device sum_reduce (%s) %d: %ld",
                          wg ? "work-group" : "work-item", i, dst[i]);
            }
            ishmem_barrier_all();
            printf("PE %d: coll_host_device ok\n", me);
            ishmem_finalize();
            return 0;
        }
        if (strcmp(argv[2], "host_device_barrier") == 0) {
            /* PE 0 calls barrier_all on the host, the others in kernels.
               Through the control segment the two meet; with sync words in
               the heap (GPUs) they cannot, and the watchdog ends the job:
               every kernel waits in the library's own barrier for PE 0,
               whose device runs nothing. */
            if (me == 0)
                ishmem_barrier_all();
            else
                run("barrier_all", 1, 0, NULL, NULL, NULL);
            ishmem_barrier_all();
            printf("PE %d: host_device_barrier ok\n", me);
            ishmem_finalize();
            return 0;
        }
        if (strcmp(argv[2], "coll_host_form") == 0 || strcmp(argv[2], "coll_host_staged") == 0) {
            /* PE 1 makes on the host a sum reduction the others make in
               kernels, of a size where the host reduces in a form of its
               own: coll_host_form, 128 longs (1 KiB: each member reduces
               for itself), which the signatures report; coll_host_staged,
               7 longs (56 bytes: the publish-and-pull path, which a device
               sync never meets), which the watchdog reports. */
            long n = strcmp(argv[2], "coll_host_form") == 0 ? 128 : 7;
            long *src = ishmem_calloc(128, sizeof(long)), *dst = ishmem_calloc(128, sizeof(long));
            ishmem_barrier_all();
            if (me == 1)
                ishmem_long_sum_reduce(ISHMEM_TEAM_WORLD, dst, src, (size_t)n);
            else
                run("coll_reduce", 1, 3, (void *[]){dst, src, NULL}, (size_t[]){0, 0, sizeof(long)},
                    (const void *[]){0, 0, &n});
            ishmem_long_wait_until(x, ISHMEM_CMP_EQ, 42);
            printf("PE %d: %s returned\n", me, argv[2]);
            return 1;
        }
        if (strcmp(argv[2], "kernel_barrier_host_flag") == 0) {
            /* PE 0's kernel waits in a device barrier for PE 1, whose host
               waits for a flag (it might go on and call the barrier: the
               host cannot tell), so the deadlock report only warns. */
            if (me == 0)
                run("barrier_all", 1, 0, NULL, NULL, NULL);
            else
                ishmem_long_wait_until(x, ISHMEM_CMP_EQ, 42);
            printf("PE %d: kernel_barrier_host_flag returned\n", me);
            return 1;
        }
        if (strcmp(argv[2], "kernel_barrier_deadlock") == 0) {
            /* PE 0's kernel waits in a device barrier that the others'
               kernels never reach: they wait for a value nobody stores.
               The watchdog names the barrier's wait (recorded through the
               control segment, inferred from the sync words in the heap)
               and the others' waits. */
            if (me == 0)
                run("barrier_all", 1, 0, NULL, NULL, NULL);
            else
                run("wait_forever", 1, 1, (void *[]){x}, NULL, NULL);
            printf("PE %d: kernel_barrier_deadlock returned\n", me);
            return 1;
        }
        if (strcmp(argv[2], "kernel_deadlock") == 0) {
            /* A deadlock among kernels: PE 0's waits for a value nobody
               stores, the others' for a signal nobody sends, every host
               thread in clFinish. The watchdog names each wait (a warning,
               or the job's end with ISHMEM_DEADLOCK_DEVICE_ABORT=1). */
            if (me == 0)
                run("wait_forever", 1, 1, (void *[]){x}, NULL, NULL);
            else
                run("wait_signal_forever", 1, 1, (void *[]){x}, NULL, NULL);
            printf("PE %d: kernel_deadlock returned\n", me);
            return 1;
        }
        if (me == np - 1) run(argv[2], 1, 1, (void *[]){strcmp(argv[2], "bad_addr") == 0 ? (void *)y : (void *)x}, NULL, NULL);
        ishmem_barrier_all();
        printf("PE %d: %s returned\n", me, argv[2]);
        ishmem_finalize();
        return 0;
    }

    /* 1. put ring: every work-item stores one element to the right PE */
    enum { N = 1024 };
    long *src = ishmem_malloc(N * sizeof(long)), *dst = ishmem_calloc(N, sizeof(long));
    for (int i = 0; i < N; i++) src[i] = i;
    ishmem_barrier_all();
    run("put_ring", N, 2, (void *[]){dst, src}, NULL, NULL);
    run("barrier_all", 1, 0, NULL, NULL, NULL); /* device barrier, interoperating with the host's */
    for (int i = 0; i < N; i++) CHECK(dst[i] == i + 1000L * left, "put_ring %d: %ld", i, dst[i]);

    /* 2. AMOs from many work-items: exact count and mask */
    long *counter = ishmem_calloc(1, sizeof(long));
    unsigned *mask = ishmem_calloc(1, sizeof(unsigned));
    ishmem_barrier_all();
    const long counters = small ? 1024 : 4096;
    run("count", (size_t)counters, 2, (void *[]){counter, mask}, NULL, NULL);
    ishmem_barrier_all();
    if (me == 0) {
        CHECK(*counter == counters * np, "device fetch_add total %ld", *counter);
        CHECK(*mask == (1u << np) - 1, "device atomic_or mask %x", *mask);
    }

    /* 3. bulk put from one work-item, host sees it after a barrier */
    int *ib = ishmem_malloc(65536 * sizeof(int)), *ob = ishmem_calloc(65536, sizeof(int));
    for (int i = 0; i < 65536; i++) ib[i] = me * 100000 + i;
    long n64k = 65536;
    ishmem_barrier_all();
    run("bulk_put", 1, 3, (void *[]){ob, ib, NULL}, (size_t[]){0, 0, sizeof(long)}, (const void *[]){0, 0, &n64k});
    ishmem_barrier_all();
    for (int i = 0; i < 65536; i++) CHECK(ob[i] == left * 100000 + i, "bulk put %d", i);

    /* 4. put_signal from a kernel, waited for by the host */
    double *dsrc = ishmem_malloc(512 * sizeof(double)), *ddst = ishmem_calloc(512, sizeof(double));
    uint64_t *sig = ishmem_calloc(1, sizeof(uint64_t));
    for (int i = 0; i < 512; i++) dsrc[i] = me + i * 0.5;
    long n512 = 512;
    ishmem_barrier_all();
    run("signal_right", 1, 4, (void *[]){ddst, dsrc, NULL, sig}, (size_t[]){0, 0, sizeof(long), 0},
        (const void *[]){0, 0, &n512, 0});
    CHECK(ishmem_signal_wait_until(sig, ISHMEM_CMP_EQ, 7) == 7, "signal");
    for (int i = 0; i < 512; i++) CHECK(ddst[i] == left + i * 0.5, "put_signal data %d", i);

    /* 5. device g from the left PE */
    float *fs = ishmem_malloc(256 * sizeof(float)), *fd = ishmem_calloc(256, sizeof(float));
    for (int i = 0; i < 256; i++) fs[i] = me * 10.0f + i;
    ishmem_barrier_all();
    run("get_left", 256, 2, (void *[]){fd, fs}, NULL, NULL);
    for (int i = 0; i < 256; i++) CHECK(fd[i] == left * 10.0f + i, "g %d", i);

    /* 6. a compare_swap spin lock taken by kernels of every PE */
    int *lock = ishmem_calloc(1, sizeof(int));
    long *total = ishmem_calloc(1, sizeof(long));
    long rounds = 200;
    ishmem_barrier_all();
    run("cswap_lock", 1, 3, (void *[]){lock, total, NULL}, (size_t[]){0, 0, sizeof(long)}, (const void *[]){0, 0, &rounds});
    ishmem_barrier_all();
    if (me == 0) CHECK(*total == rounds * np, "lock-protected total %ld", *total);

    /* 6b. a fence orders a p before a posted flag */
    long *fdata = ishmem_calloc(64, sizeof(long)), *fflag = ishmem_calloc(2, sizeof(long));
    long *fbad = ishmem_calloc(1, sizeof(long));
    long fiters = small ? 300 : 1000;
    ishmem_barrier_all();
    run("fence_flag", 1, 4, (void *[]){fdata, fflag, fbad, NULL}, (size_t[]){0, 0, 0, sizeof(long)},
        (const void *[]){0, 0, 0, &fiters});
    CHECK(*fbad == 0, "fence: %ld flags arrived before the data fenced before them", *fbad);
    ishmem_barrier_all();

    /* 6c. non-fetching AMOs from one work-item, in order */
    long *pc = ishmem_calloc(5, sizeof(long));
    long pn = small ? 500 : 2000, pxor = 0;
    for (long k = 1; k <= pn; k++) pxor ^= k;
    ishmem_barrier_all();
    run("posted_amos", 1, 2, (void *[]){pc, NULL}, (size_t[]){0, sizeof(long)}, (const void *[]){0, &pn});
    ishmem_barrier_all();
    CHECK(pc[0] == pn * (pn + 1) / 2, "posted adds: %ld, want %ld", pc[0], pn * (pn + 1) / 2);
    CHECK(pc[1] == pxor, "posted xors: %ld, want %ld", pc[1], pxor);
    CHECK(*(int *)(pc + 2) == (int)pn, "posted incs: %d, want %ld", *(int *)(pc + 2), pn);
    CHECK(pc[3] == 12, "posted set 5, add 3, add 4: %ld, want 12", pc[3]);
    CHECK(pc[4] == 52, "posted set 100, and 0x0f, or 0x30: %ld, want 52", pc[4]);

    /* 7. 16384 work-items issuing requests at once, three each (1536
       when small) */
    const int M = small ? 1536 : 16384;
    long *c2 = ishmem_calloc(1, sizeof(long));
    int *slots = ishmem_calloc(2 * M, sizeof(int));
    ishmem_barrier_all();
    run("many", M, 2, (void *[]){c2, slots}, NULL, NULL);
    ishmem_barrier_all();
    CHECK(*c2 == M, "many: counter %ld want %d", *c2, M);
    for (int i = 0; i < M; i++) CHECK(slots[M + i] == i + left, "many: nbi put %d = %d", i, slots[M + i]);

    /* 8. work-group forms: 8 groups of 64 work-items, one block each */
    enum { B = 4096, G = 8 };
    double *wsrc = ishmem_malloc(B * G * sizeof(double)), *wdst = ishmem_calloc(B * G, sizeof(double));
    for (int i = 0; i < B * G; i++) wsrc[i] = me * 1e6 + i;
    long block = B;
    ishmem_barrier_all();
    run_wg("wg_put", 64 * G, 64, 3, (void *[]){wdst, wsrc, NULL}, (size_t[]){0, 0, sizeof(long)}, (const void *[]){0, 0, &block});
    ishmem_barrier_all();
    for (int i = 0; i < B * G; i++) CHECK(wdst[i] == left * 1e6 + i, "wg_put %d", i);
    long *lsrc = ishmem_malloc(B * G * sizeof(long)), *ldst = ishmem_calloc(B * G, sizeof(long));
    uint64_t *wsig = ishmem_calloc(1, sizeof(uint64_t));
    for (int i = 0; i < B * G; i++) lsrc[i] = me * 1000000L + i;
    ishmem_barrier_all();
    run_wg("wg_get_signal", 64 * G, 64, 4, (void *[]){ldst, lsrc, NULL, wsig}, (size_t[]){0, 0, sizeof(long), 0},
           (const void *[]){0, 0, &block, 0});
    CHECK(*wsig == G, "work-group signals: %llu", (unsigned long long)*wsig);
    for (int i = 0; i < B * G; i++) CHECK(ldst[i] == left * 1000000L + i, "wg_get %d", i);
    long *wflag = ishmem_calloc(1, sizeof(long));
    ishmem_barrier_all();
    run_wg("wg_barrier", 64, 64, 1, (void *[]){wflag}, NULL, NULL);
    CHECK(*wflag == left + 1, "work-group barrier: flag %ld", *wflag);

    /* 9. on_queue: a kernel fills a buffer, a put ordered after it on the
       queue sends it right, a barrier on the queue follows; nothing waits on
       the host until the last event. */
    enum { Q = 8192 };
    long *qsrc = ishmem_malloc(Q * sizeof(long)), *qdst = ishmem_calloc(Q, sizeof(long));
    long base = me * 1000000L;
    ishmem_barrier_all();
    cl_int err;
    cl_kernel fk = clCreateKernel(prog, "fill", &err);
    CL(clSetKernelArgSVMPointer(fk, 0, qsrc));
    CL(clSetKernelArg(fk, 1, sizeof(long), &base));
    size_t qn = Q;
    cl_event filled, put, bar;
    CL(clEnqueueNDRangeKernel(q, fk, 1, NULL, &qn, NULL, 0, NULL, &filled));
    put = (cl_event)ishmemx_long_put_on_queue(qdst, qsrc, Q, (me + 1) % np, q, 1, (void *const *)&filled); /* typed form */
    bar = (cl_event)ishmemx_barrier_all_on_queue(q, 1, (void *const *)&put);
    CL(clWaitForEvents(1, &bar));
    for (int i = 0; i < Q; i++) CHECK(qdst[i] == left * 1000000L + i, "on_queue put %d: %ld", i, qdst[i]);
    long *qback = ishmem_calloc(16, sizeof(long));
    cl_event got = (cl_event)ishmemx_getmem_on_queue(qback, qdst, 16 * sizeof(long), (me + 1) % np, q, 0, NULL);
    cl_event qq = (cl_event)ishmemx_quiet_on_queue(q, 1, (void *const *)&got);
    CL(clWaitForEvents(1, &qq));
    CHECK(qback[3] == me * 1000000L + 3, "on_queue get: %ld", qback[3]);
    clReleaseEvent(filled); clReleaseEvent(put); clReleaseEvent(bar); clReleaseEvent(got); clReleaseEvent(qq);
    clReleaseKernel(fk);
    /* 9b. put_signal, signal wait and sync_all on the queue: the wait holds
       the queue until the left PE's signal arrived */
    uint64_t *qsig = ishmem_calloc(1, sizeof(uint64_t));
    long *qs2 = ishmem_malloc(Q * sizeof(long)), *qd2 = ishmem_calloc(Q, sizeof(long));
    for (int i = 0; i < Q; i++) qs2[i] = me * 7L + i;
    ishmem_barrier_all();
    cl_event ps = (cl_event)ishmemx_putmem_signal_on_queue(qd2, qs2, Q * sizeof(long), qsig, 5, ISHMEM_SIGNAL_ADD,
                                                           (me + 1) % np, q, 0, NULL);
    cl_event sw = (cl_event)ishmemx_signal_wait_until_on_queue(qsig, ISHMEM_CMP_EQ, 5, q, 1, (void *const *)&ps);
    cl_event sa = (cl_event)ishmemx_sync_all_on_queue(q, 1, (void *const *)&sw);
    CL(clWaitForEvents(1, &sa));
    CHECK(*qsig == 5, "on_queue put_signal: signal %llu", (unsigned long long)*qsig);
    for (int i = 0; i < Q; i++) CHECK(qd2[i] == left * 7L + i, "on_queue put_signal data %d: %ld", i, qd2[i]);
    clReleaseEvent(ps); clReleaseEvent(sw); clReleaseEvent(sa);

    /* 10. device collectives: world team, then the odd PEs (or PE 0 alone) */
    enum { CN = 1000 };
    long *csrc = ishmem_calloc(CN, sizeof(long)), *cdst = ishmem_calloc(CN * 4, sizeof(long));
    long *res = ishmem_calloc(16, sizeof(long));
    ishmem_team_t odd;
    ishmem_team_split_strided(ISHMEM_TEAM_WORLD, np > 1 ? 1 : 0, 2, np > 1 ? np / 2 : 1, NULL, 0, &odd);
    for (int pass = 0; pass < 2; pass++) {
        ishmem_team_t team = pass == 0 ? ISHMEM_TEAM_WORLD : odd;
        ishmem_barrier_all();
        if (team != ISHMEM_TEAM_INVALID) {
            int tn = ishmem_team_n_pes(team), tr = ishmem_team_my_pe(team);
            long n = CN;
            run("dev_coll", 1, 5, (void *[]){NULL, csrc, cdst, res, NULL}, (size_t[]){sizeof(int), 0, 0, 0, sizeof(long)},
                (const void *[]){&team, 0, 0, 0, &n});
            for (int k = 0; k <= 12; k += 2) CHECK(res[k] == 0, "collective %d returned %ld", k, res[k]);
            CHECK(res[1] == (tn - 1) * 1000 + CN - 1, "device broadcast: %ld", res[1]);
            CHECK(res[3] == (tn - 1) * 1000, "device fcollect: %ld", res[3]);
            CHECK(res[5] == 1000L * tn * (tn - 1) / 2 + tn, "device sum_reduce: %ld", res[5]);
            long fact = 1;
            for (int r = 1; r <= tn; r++) fact *= r;
            CHECK(res[7] == fact, "device in-place prod_reduce: %ld", res[7]);
            CHECK(res[9] == fact, "device max_reduce (of the in-place product): %ld", res[9]);
            CHECK(res[11] == (tn - 1) * 10 + tr, "device alltoall: %ld", res[11]);
            CHECK(res[13] == ishmem_team_translate_pe(team, tn - 1, ISHMEM_TEAM_WORLD) && res[13] >= 0,
                  "device team_translate_pe to the world: %ld", res[13]);
            CHECK(res[14] == tr, "device team_translate_pe from the world: %ld, want %d", res[14], tr);
            CHECK(res[15] == -1, "device team_translate_pe of a PE out of range: %ld", res[15]);
        }
    }
    /* 10b. collect with per-member counts, scans (world, then odd PEs) */
    long *ksrc = ishmem_calloc(64, sizeof(long)), *kdst = ishmem_calloc(256, sizeof(long));
    int *kis = ishmem_calloc(64, sizeof(int)), *kid = ishmem_calloc(64, sizeof(int));
    for (int pass = 0; pass < 2; pass++) {
        ishmem_team_t team = pass == 0 ? ISHMEM_TEAM_WORLD : odd;
        ishmem_barrier_all();
        if (team == ISHMEM_TEAM_INVALID) continue;
        int tn = ishmem_team_n_pes(team), tr = ishmem_team_my_pe(team);
        for (int i = 0; i < 256; i++) kdst[i] = -1;
        for (int i = 0; i < 64; i++) ksrc[i] = tr * 100 + i;
        for (int i = 0; i < 64; i++) kis[i] = (tr + 1) * (i + 1);
        ishmem_team_sync(team);
        run("dev_collect_scan", 1, 6, (void *[]){NULL, ksrc, kdst, kis, kid, res}, (size_t[]){sizeof(int), 0, 0, 0, 0, 0},
            (const void *[]){&team, 0, 0, 0, 0, 0});
        for (int k = 0; k < 4; k++) CHECK(res[k] == 0, "collect/scan %d returned %ld", k, res[k]);
        int at = 0;
        for (int j = 0; j < tn; j++)
            for (int i = 0; i <= j; i++, at++) CHECK(kdst[at] == j * 100 + i, "device collect [%d] = %ld (member %d)", at, kdst[at], j);
        CHECK(kdst[at] == -1, "device collect wrote past its end: %ld", kdst[at]);
        for (int i = 0; i < 64; i++) {
            long before = (long)tr * (tr + 1) / 2 * (i + 1);
            CHECK(kid[i] == before, "device sum_exscan [%d] = %d want %ld", i, kid[i], before);
            CHECK(kis[i] == before + (long)(tr + 1) * (i + 1), "device in-place sum_inscan [%d] = %d", i, kis[i]);
        }
        /* collectmem: member j gave 8 * (tn - j) bytes of its src */
        char *cm = (char *)kdst + 512;
        size_t off = 0;
        for (int j = 0; j < tn; j++) {
            /* member j's src starts with j * 100, j * 100 + 1, ... (as longs) */
            long first;
            memcpy(&first, cm + off, sizeof first);
            CHECK(first == j * 100, "device collectmem block %d starts with %ld", j, first);
            off += 8 * (size_t)(tn - j);
        }
    }

    if (odd != ISHMEM_TEAM_INVALID) ishmem_team_destroy(odd);

    /* 10d. work-group forms of collectives */
    long *gsrc = ishmem_malloc(256 * sizeof(long)), *gdst = ishmem_calloc(256 * 4, sizeof(long));
    long *gred = ishmem_calloc(256 + 7, sizeof(long)), *gres = ishmem_calloc(64, sizeof(long));
    for (int i = 0; i < 256; i++) gsrc[i] = me * 1000L + i;
    ishmem_barrier_all();
    run_wg("wg_coll", 64, 64, 4, (void *[]){gsrc, gdst, gred, gres}, NULL, NULL);
    for (int i = 0; i < 64; i++) CHECK(gres[i] == -1000, "work-group collective results on work-item %d: %ld", i, gres[i]);
    for (int i = 0; i < 256 + 7; i++) {
        int k = i < 256 ? i : i - 256;
        CHECK(gred[i] == 1000L * np * (np - 1) / 2 + (long)np * k, "sum_reduce_work_group [%d] = %ld", i, gred[i]);
    }
    for (int j = 0; j < np; j++)
        for (int i = 0; i < 256; i++) CHECK(gdst[j * 256 + i] == j * 1000L + i, "fcollect_work_group [%d][%d] = %ld", j, i, gdst[j * 256 + i]);

    /* 10c. 8-bit AMOs from 1000 work-items per PE (a count that does not
       wrap to 0 in 8 bits) */
    signed char *bytes = ishmem_calloc(8, 1);
    if (me == 0) { bytes[0] = 11; bytes[3] = 7; }
    ishmem_barrier_all();
    run("schar_amo", 1000, 2, (void *[]){bytes, res}, NULL, NULL);
    ishmem_barrier_all();
    CHECK(res[0] == 7 && res[1] == 11, "schar compare_swap/fetch: %ld %ld", res[0], res[1]);
    if (me == 0) {
        signed char x = 0;
        for (int p = 0; p < np; p++)
            for (int id = 0; id < 1000; id++) x ^= (signed char)(1 << ((id + p) % 7));
        CHECK(bytes[1] == (signed char)(1000 * np), "schar add: %d", bytes[1]);
        CHECK(bytes[2] == x, "schar xor: %d want %d", bytes[2], x);
        CHECK(bytes[0] == 11 && bytes[3] == 7, "schar neighbours changed: %d %d", bytes[0], bytes[3]);
    }

    /* 11. ibput, multi-element wait/test, nbi AMO */
    long *blk = ishmem_calloc(32, sizeof(long)), *bsrc = ishmem_malloc(16 * sizeof(long));
    int *iv = ishmem_calloc(4, sizeof(int));
    long *fetchv = ishmem_calloc(1, sizeof(long)), *cntv = ishmem_calloc(1, sizeof(long)), *mres = ishmem_calloc(16, sizeof(long));
    for (int i = 0; i < 16; i++) bsrc[i] = me * 100 + i;
    ishmem_barrier_all();
    run("misc", 1, 6, (void *[]){blk, bsrc, iv, fetchv, cntv, mres}, NULL, NULL);
    for (int b = 0; b < 8; b++) {
        CHECK(blk[4 * b] == left * 100 + 2 * b && blk[4 * b + 1] == left * 100 + 2 * b + 1, "ibput block %d", b);
        CHECK(blk[4 * b + 2] == 0 && blk[4 * b + 3] == 0, "ibput gap %d", b);
    }
    CHECK(mres[0] == 2, "device wait_until_any: %ld", mres[0]);
    CHECK(mres[1] == 0 && mres[2] == -1 && mres[3] == 3, "device test_all/any/some: %ld %ld %ld", mres[1], mres[2], mres[3]);
    CHECK(mres[4] >= 0 && mres[4] < np, "device fetch_add_nbi: %ld", mres[4]);
    if (me == 0) CHECK(*cntv == np, "nbi total %ld", *cntv);

    /* 12. sub-group forms: 64 work-items, one block per sub-group */
    int *sgs = ishmem_malloc(64 * 1024 * sizeof(int)), *sgd = ishmem_calloc(64 * 1024, sizeof(int));
    for (int i = 0; i < 64 * 1024; i++) sgs[i] = me * 1000000 + i;
    long sblock = 1024;
    ishmem_barrier_all();
    run_wg("sg_put", 64, 64, 3, (void *[]){sgd, sgs, NULL}, (size_t[]){0, 0, sizeof(long)}, (const void *[]){0, 0, &sblock});
    ishmem_barrier_all();
    int nonzero = 0;
    for (int i = 0; i < 64 * 1024; i++) {
        if (sgd[i] == 0) continue;
        nonzero++;
        CHECK(sgd[i] == left * 1000000 + i, "sub-group put %d: %d", i, sgd[i]);
    }
    CHECK(nonzero >= 1024, "sub-group put moved %d elements", nonzero);

    /* 12b. private and local buffers as the local side of put and get */
    long *pd = ishmem_calloc(192, sizeof(long)), *psrc = ishmem_malloc(192 * sizeof(long));
    long *pout = ishmem_calloc(192, sizeof(long));
    for (int i = 0; i < 192; i++) psrc[i] = me * 1000 + i;
    ishmem_barrier_all();
    run_wg("private_local", 64, 64, 3, (void *[]){pd, psrc, pout}, NULL, NULL);
    ishmem_barrier_all();
    for (int i = 0; i < 192; i++) {
        CHECK(pd[i] == left * 1000 + 500 + i, "put from private memory %d: %ld", i, pd[i]);
        CHECK(pout[i] == left * 1000 + i, "get into local memory %d: %ld", i, pout[i]);
    }

    ishmem_barrier_all();
    /* 13. The device library's host-AMO kernel, which a GPU device (ze)
       launches for a host AMO on GPU memory: every op and size, at every
       lane of a word, against the expected value; the word's other bytes
       must not change. */
    {
        uint64_t *word = ishmem_calloc(1, sizeof(uint64_t)), *out = ishmem_calloc(1, sizeof(uint64_t));
        const uint64_t init = 0x8877665544332211ull, operand_all = 0x0fedcba987654321ull;
        for (unsigned size = 1; size <= 8; size *= 2)
            for (unsigned off = 0; off < 8; off += size)
                for (unsigned op = 0; op < 8; op++)
                    for (int match = 0; match < 2; match++) {
                        uint64_t lane = size == 8 ? ~0ull : ((1ull << (8 * size)) - 1);
                        uint64_t old = (init >> (8 * off)) & lane, v = operand_all & lane, n;
                        uint64_t cond = match ? old : (old ^ 1) & lane;
                        switch (op) {
                        case 0: n = old; break;
                        case 3: n = old == cond ? v : old; break;
                        case 4: n = (old + v) & lane; break;
                        case 5: n = old & v; break;
                        case 6: n = old | v; break;
                        case 7: n = old ^ v; break;
                        default: n = v; break;
                        }
                        *word = init;
                        *out = 0xdeadbeefull;
                        uint64_t addr = (uint64_t)(uintptr_t)word + off;
                        run("ishmemi_host_amo", 1, 6, (void *[]){NULL, NULL, NULL, NULL, NULL, out},
                            (size_t[]){8, 4, 4, 8, 8, 0}, (const void *[]){&addr, &size, &op, &v, &cond, NULL});
                        uint64_t want_word = (init & ~(lane << (8 * off))) | (n << (8 * off));
                        CHECK(*word == want_word, "host_amo size %u off %u op %u: word %llx, want %llx", size, off,
                              op, (unsigned long long)*word, (unsigned long long)want_word);
                        CHECK(*out == (op == 1 ? 0 : old), "host_amo size %u off %u op %u: returned %llx, want %llx",
                              size, off, op, (unsigned long long)*out, (unsigned long long)(op == 1 ? 0 : old));
                    }
        ishmem_barrier_all();
        ishmem_free(word);
        ishmem_free(out);
    }

    if (me == 0) printf("device ok on %d PEs\n", np);
    ishmem_finalize();
    return 0;
}
