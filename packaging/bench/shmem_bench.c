/* Side-by-side OpenSHMEM benchmark: only standard OpenSHMEM 1.5 calls, so
 * the same source builds against ishmem-rs (shmem.h) and against any other
 * OpenSHMEM (e.g. Open MPI's oshcc). PE 0 drives, PE n-1 is the target.
 * Method (after Intel SHMEM's perf tests): warm up until 2 ms have passed,
 * then 10 trials; each trial times enough iterations to last about 1 ms
 * (calibrated during warm-up); report best and median time per operation.
 * Collectives use the active-set interfaces (pSync), which every OpenSHMEM
 * up to 1.5 provides (Open MPI 4.1's OSHMEM implements 1.4: no team
 * collectives, no put_signal); put_signal is measured where the library
 * defines SHMEM_SIGNAL_ADD.
 * Output: CSV lines "figure,bytes,pes,best,median,unit" on PE 0.
 *
 * --coll: the many-PE set instead. Every PE runs back-to-back calls (no
 * barrier between them; active-set collectives alternate two pSync and
 * pWrk arrays, as OpenSHMEM 1.4 allows), and each trial's figure is the
 * largest per-PE time per call over all PEs ("_max" figures): barrier_all,
 * broadcast, collect, fcollect, alltoall and sum_to_all at 8 bytes and
 * 64 KiB, fetch_add by every PE to PE 0 (contended), and puts of 8 bytes
 * and 64 KiB by every PE to the next (a ring) with quiet. --pin binds PE i
 * to CPU i (mod the CPUs it may use), the same way in every build.
 * --device: the heap may be memory the host cannot touch (GPU memory):
 * the program never loads or stores it, and leaves out the memcpy row.
 * Usage: shmem_bench [--quick] [--coll] [--pin] [--device] */
#define _GNU_SOURCE
#include <sched.h>
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TRIALS 10
static int me, npes, target;
static int quick;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static int cmpd(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* All PEs agree on the iteration count (PE 0 decides, broadcast through a
 * symmetric variable) so that collective figures stay collective. */
static long *iters_sym;

typedef void (*op_fn)(long iters, size_t bytes);

static void report(const char *fig, size_t bytes, double *t, const char *unit, double scale) {
    qsort(t, TRIALS, sizeof(double), cmpd);
    if (me == 0) printf("%s,%zu,%d,%.4f,%.4f,%s\n", fig, bytes, npes, t[0] * scale, t[TRIALS / 2] * scale, unit);
    fflush(stdout);
}

/* Times `fn` (per-op seconds per trial). Collective figures: every PE runs
 * fn. PE 0 makes every warm-up decision and hands it to all PEs, so all
 * PEs run the same number of collective calls. */
/* Warm-up and calibration: returns the iteration count for each trial.
 * PE 0 decides every step and hands it to all PEs; `runs` says whether
 * this PE runs fn. */
static long calibrate(size_t bytes, op_fn fn, int runs) {
    long iters = 1;
    double start = now(), last = 0;
    for (;;) {
        if (me == 0) {
            int more = now() - start < (quick ? 2e-4 : 2e-3);
            if (last > 0 && last < 2.5e-4) iters *= 2;
            long msg[2] = {more, iters};
            for (int pe = 0; pe < npes; pe++) shmem_long_put(iters_sym, msg, 2, pe);
        }
        shmem_barrier_all();
        long got[2];
        shmem_long_get(got, iters_sym, 2, me); /* the heap may be device memory */
        long more = got[0];
        iters = got[1];
        shmem_barrier_all();
        if (!more) break;
        double t0 = now();
        if (runs) fn(iters, bytes);
        last = now() - t0;
    }
    if (quick && iters > 64) iters = 64;
    return iters;
}

static void measure(const char *fig, size_t bytes, op_fn fn, int collective, const char *unit) {
    double t[TRIALS];
    long iters = calibrate(bytes, fn, collective || me == 0);
    for (int k = 0; k < TRIALS; k++) {
        if (collective) shmem_barrier_all();
        double t0 = now();
        if (collective || me == 0) fn(iters, bytes);
        t[k] = (now() - t0) / iters;
    }
    shmem_barrier_all();
    if (strcmp(unit, "MB/s") == 0) {
        for (int k = 0; k < TRIALS; k++) t[k] = bytes / t[k] / 1e6;
        /* best bandwidth is the largest: sort descending by negating */
        for (int k = 0; k < TRIALS; k++) t[k] = -t[k];
        qsort(t, TRIALS, sizeof(double), cmpd);
        for (int k = 0; k < TRIALS; k++) t[k] = -t[k];
        if (me == 0) printf("%s,%zu,%d,%.1f,%.1f,%s\n", fig, bytes, npes, t[0], t[TRIALS / 2], unit);
        fflush(stdout);
        return;
    }
    report(fig, bytes, t, unit, 1e6);
}

static char *sbuf, *dbuf, *lbuf;
static long *lsym;
static uint64_t *sig;

static void f_put_lat(long it, size_t b) { for (long i = 0; i < it; i++) { shmem_putmem(dbuf, lbuf, b, target); shmem_quiet(); } }
static void f_get_lat(long it, size_t b) { for (long i = 0; i < it; i++) shmem_getmem(lbuf, sbuf, b, target); }
static void f_p_lat(long it, size_t b) { (void)b; for (long i = 0; i < it; i++) { shmem_long_p(lsym, i, target); shmem_quiet(); } }
static void f_g_lat(long it, size_t b) { (void)b; long s = 0; for (long i = 0; i < it; i++) s += shmem_long_g(lsym + 1, target); if (s == -1) puts(""); }
static void f_fadd(long it, size_t b) { (void)b; for (long i = 0; i < it; i++) shmem_long_atomic_fetch_add(lsym + 2, 1, target); }
static void f_add(long it, size_t b) { (void)b; for (long i = 0; i < it; i++) shmem_long_atomic_add(lsym + 3, 1, target); shmem_quiet(); }
#ifdef SHMEM_SIGNAL_ADD
static void f_sig(long it, size_t b) { for (long i = 0; i < it; i++) { shmem_putmem_signal(dbuf, lbuf, b, sig, 1, SHMEM_SIGNAL_ADD, target); shmem_quiet(); } }
#endif
static void f_put_bw(long it, size_t b) { for (long i = 0; i < it; i++) shmem_putmem(dbuf, lbuf, b, target); shmem_quiet(); }
static void f_nbi_bw(long it, size_t b) { for (long i = 0; i < it; i++) shmem_putmem_nbi(dbuf, lbuf, b, target); shmem_quiet(); }
static void f_get_bw(long it, size_t b) { for (long i = 0; i < it; i++) shmem_getmem(lbuf, sbuf, b, target); }
static void f_memcpy(long it, size_t b) { for (long i = 0; i < it; i++) { memcpy(dbuf, lbuf, b); __asm__ volatile("" ::: "memory"); } }
static void f_barrier(long it, size_t b) { (void)b; for (long i = 0; i < it; i++) shmem_barrier_all(); }
static long psync[SHMEM_REDUCE_SYNC_SIZE > SHMEM_BCAST_SYNC_SIZE ? SHMEM_REDUCE_SYNC_SIZE : SHMEM_BCAST_SYNC_SIZE];
static long psync_a2a[SHMEM_ALLTOALL_SYNC_SIZE];
static long pwrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE + 65536];
/* Consecutive active-set collectives on one pSync need a barrier between
 * them on some libraries (the 1.4 rules); every figure pays it alike. */
static void f_bcast(long it, size_t b) { for (long i = 0; i < it; i++) { shmem_broadcast64(dbuf, sbuf, b / 8, 0, 0, 0, npes, psync); shmem_barrier_all(); } }
static void f_fcollect(long it, size_t b) { for (long i = 0; i < it; i++) { shmem_fcollect64(dbuf, sbuf, b / 8, 0, 0, npes, psync); shmem_barrier_all(); } }
static void f_alltoall(long it, size_t b) { for (long i = 0; i < it; i++) { shmem_alltoall64(dbuf, sbuf, b / 8, 0, 0, npes, psync_a2a); shmem_barrier_all(); } }
static void f_reduce(long it, size_t b) { for (long i = 0; i < it; i++) { shmem_long_sum_to_all((long *)dbuf, (long *)sbuf, b / sizeof(long), 0, 0, npes, pwrk, psync); shmem_barrier_all(); } }

/* ----- --coll: back-to-back calls, max over PEs ----- */
static long psyncs[2][SHMEM_REDUCE_SYNC_SIZE > SHMEM_ALLTOALL_SYNC_SIZE ? SHMEM_REDUCE_SYNC_SIZE : SHMEM_ALLTOALL_SYNC_SIZE];
static long pwrks[2][SHMEM_REDUCE_MIN_WRKDATA_SIZE + 65536];
static long psync_max[SHMEM_REDUCE_SYNC_SIZE];
static double dwrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE + TRIALS];
static double tmine[TRIALS], tall[TRIALS];

/* As measure() for a collective figure, then the maximum over PEs of each
 * trial's time per call; reports best and median of those maxima. */
static void measure_max(const char *fig, size_t bytes, op_fn fn) {
    long iters = calibrate(bytes, fn, 1);
    for (int k = 0; k < TRIALS; k++) {
        shmem_barrier_all();
        double t0 = now();
        fn(iters, bytes);
        tmine[k] = (now() - t0) / iters;
    }
    shmem_barrier_all();
    shmem_double_max_to_all(tall, tmine, TRIALS, 0, 0, npes, dwrk, psync_max);
    shmem_barrier_all();
    char name[64];
    snprintf(name, sizeof name, "%s_max", fig);
    report(name, bytes, tall, "us", 1e6);
}

static void c_barrier(long it, size_t b) { (void)b; for (long i = 0; i < it; i++) shmem_barrier_all(); }
static void c_bcast(long it, size_t b) { for (long i = 0; i < it; i++) shmem_broadcast64(dbuf, sbuf, b / 8, 0, 0, 0, npes, psyncs[i & 1]); }
static void c_collect(long it, size_t b) { for (long i = 0; i < it; i++) shmem_collect64(dbuf, sbuf, b / 8, 0, 0, npes, psyncs[i & 1]); }
static void c_fcollect(long it, size_t b) { for (long i = 0; i < it; i++) shmem_fcollect64(dbuf, sbuf, b / 8, 0, 0, npes, psyncs[i & 1]); }
static void c_alltoall(long it, size_t b) { for (long i = 0; i < it; i++) shmem_alltoall64(dbuf, sbuf, b / 8, 0, 0, npes, psyncs[i & 1]); }
static void c_sum(long it, size_t b) { for (long i = 0; i < it; i++) shmem_long_sum_to_all((long *)dbuf, (long *)sbuf, b / 8, 0, 0, npes, pwrks[i & 1], psyncs[i & 1]); }
static void c_fadd0(long it, size_t b) { (void)b; long s = 0; for (long i = 0; i < it; i++) s += shmem_long_atomic_fetch_add(lsym + 4, 1, 0); if (s == -1) puts(""); }
static void c_ring_put(long it, size_t b) { int to = (me + 1) % npes; for (long i = 0; i < it; i++) { shmem_putmem(dbuf, lbuf, b, to); shmem_quiet(); } }

static void coll_set(void) {
    for (int k = 0; k < 2; k++)
        for (size_t i = 0; i < sizeof psyncs[0] / sizeof psyncs[0][0]; i++) psyncs[k][i] = SHMEM_SYNC_VALUE;
    for (size_t i = 0; i < sizeof psync_max / sizeof psync_max[0]; i++) psync_max[i] = SHMEM_SYNC_VALUE;
    shmem_barrier_all();
    measure_max("barrier_all", 0, c_barrier);
    size_t csz[] = {8, 65536};
    for (int i = 0; i < 2; i++) {
        measure_max("broadcast", csz[i], c_bcast);
        measure_max("collect", csz[i], c_collect);
        measure_max("fcollect", csz[i], c_fcollect);
        measure_max("alltoall", csz[i], c_alltoall);
        measure_max("sum_reduce", csz[i], c_sum);
    }
    measure_max("fetch_add_to_pe0", 8, c_fadd0);
    measure_max("ring_put+quiet", 8, c_ring_put);
    measure_max("ring_put+quiet", 65536, c_ring_put);
}

int main(int argc, char **argv) {
    int coll = 0, pin = 0, device = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) quick = 1;
        else if (strcmp(argv[i], "--coll") == 0) coll = 1;
        else if (strcmp(argv[i], "--pin") == 0) pin = 1;
        else if (strcmp(argv[i], "--device") == 0) device = 1;
        else { fprintf(stderr, "shmem_bench: unknown argument %s\n", argv[i]); return 2; }
    }
    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();
    if (pin) {
        cpu_set_t allowed, one;
        sched_getaffinity(0, sizeof allowed, &allowed);
        int ncpu = CPU_COUNT(&allowed), k = me % ncpu;
        for (int c = 0; c < CPU_SETSIZE; c++) {
            if (CPU_ISSET(c, &allowed) && k-- == 0) {
                CPU_ZERO(&one);
                CPU_SET(c, &one);
                sched_setaffinity(0, sizeof one, &one);
                break;
            }
        }
    }
    target = npes - 1;
    size_t maxb = (size_t)4 << 20;
    sbuf = shmem_malloc(maxb * npes);
    dbuf = shmem_malloc(maxb * npes);
    lbuf = malloc(maxb * npes);
    lsym = shmem_calloc(8, sizeof(long));
    sig = shmem_calloc(1, sizeof(uint64_t));
    iters_sym = shmem_calloc(2, sizeof(long));
    memset(lbuf, 1, maxb * npes);
    for (size_t i = 0; i < sizeof psync / sizeof psync[0]; i++) psync[i] = SHMEM_SYNC_VALUE;
    for (size_t i = 0; i < sizeof psync_a2a / sizeof psync_a2a[0]; i++) psync_a2a[i] = SHMEM_SYNC_VALUE;
    shmem_barrier_all();
    memset(lbuf, 2, maxb * npes);
    shmem_putmem(sbuf, lbuf, maxb * npes, me);
    shmem_barrier_all();
    if (me == 0) printf("figure,bytes,pes,best,median,unit\n");
    if (coll) {
        coll_set();
        shmem_barrier_all();
        fflush(stdout);
        shmem_finalize();
        return 0;
    }
    measure("put+quiet", 8, f_put_lat, 0, "us");
    measure("get", 8, f_get_lat, 0, "us");
    measure("p+quiet", 8, f_p_lat, 0, "us");
    measure("g", 8, f_g_lat, 0, "us");
    measure("fetch_add", 8, f_fadd, 0, "us");
    measure("add", 8, f_add, 0, "us");
#ifdef SHMEM_SIGNAL_ADD
    measure("put_signal+quiet", 8, f_sig, 0, "us");
#endif
    measure("barrier_all", 0, f_barrier, 1, "us");
    size_t sizes[] = {64, 4096, 65536, 1 << 20, 4 << 20};
    for (int i = 0; i < 5; i++) {
        size_t b = sizes[i];
        measure("put_bw", b, f_put_bw, 0, "MB/s");
        measure("put_nbi_bw", b, f_nbi_bw, 0, "MB/s");
        measure("get_bw", b, f_get_bw, 0, "MB/s");
        if (!device) measure("memcpy_bw", b, f_memcpy, 0, "MB/s");
    }
    size_t csz[] = {8, 65536};
    for (int i = 0; i < 2; i++) {
        measure("broadcast", csz[i], f_bcast, 1, "us");
        measure("fcollect", csz[i], f_fcollect, 1, "us");
        measure("alltoall", csz[i], f_alltoall, 1, "us");
        measure("sum_reduce", csz[i], f_reduce, 1, "us");
    }
    shmem_barrier_all();
    fflush(stdout);
    shmem_finalize();
    return 0;
}
