/* The watchdog (runtime/src/watch.rs), one case per mode (argv[1]):
 *   lost_outside   the last PE ends without finalizing while the others
 *                  run outside the library: they must end within seconds;
 *   deadlock       PE 0 waits for a flag nobody sets, the others wait in a
 *                  barrier: one report naming both waits, then the job ends;
 *   deadlock_exit  the last PE returns from main (finalize at exit) while
 *                  the others wait for a flag from it: the known host case;
 *   busy_thread    every PE's main thread waits in the library while
 *                  another of its threads computes for a few seconds and
 *                  then sets the flag: no report (the job ends well). */
#include <shmem.h>
#include <stdio.h>
#include <string.h>
#include <threads.h>
#include <time.h>
#include <unistd.h>

static long flag;

static double now_s(void) {
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Computes (no library call) for `s` seconds, then sets the flag of the
 * next PE. */
static int compute_then_set(void *arg) {
    double s = *(double *)arg, t0 = now_s();
    volatile unsigned long x = 0;
    while (now_s() - t0 < s) x++;
    int me = shmem_my_pe(), npes = shmem_n_pes();
    shmem_long_atomic_set(&flag, 1, (me + 1) % npes);
    return 0;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    if (!strcmp(mode, "busy_thread")) {
        int provided;
        shmem_init_thread(SHMEM_THREAD_MULTIPLE, &provided);
        if (provided != SHMEM_THREAD_MULTIPLE) {
            fprintf(stderr, "SHMEM_THREAD_MULTIPLE not provided\n");
            return 2;
        }
        /* Longer than ISHMEM_DEADLOCK_TIMEOUT (1 s in the test list) plus
         * the watchdog's sampling. */
        double s = 4.0;
        thrd_t t;
        thrd_create(&t, compute_then_set, &s);
        shmem_long_wait_until(&flag, SHMEM_CMP_EQ, 1);
        thrd_join(t, NULL);
        shmem_barrier_all();
        if (shmem_my_pe() == 0) printf("busy_thread ok\n");
        shmem_finalize();
        return 0;
    }
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    if (!strcmp(mode, "lost_outside")) {
        shmem_barrier_all();
        /* The barrier can return on one PE while others are still in it:
           each of the others says it is out, and the last PE ends only
           once all have. */
        static long out;
        if (me == npes - 1) {
            shmem_long_wait_until(&out, SHMEM_CMP_EQ, npes - 1);
            _exit(0);
        }
        shmem_long_atomic_add(&out, 1, npes - 1);
        /* Outside the library, as a host thread in a device synchronize
         * or a kernel waiting for a flag would be. */
        for (int i = 0; i < 600; i++) thrd_sleep(&(struct timespec){0, 100000000L}, NULL);
        printf("PE %d was not ended\n", me);
    } else if (!strcmp(mode, "deadlock")) {
        if (me == 0)
            shmem_long_wait_until(&flag, SHMEM_CMP_EQ, 42);
        else
            shmem_barrier_all();
        printf("PE %d got past the deadlock\n", me);
    } else if (!strcmp(mode, "deadlock_exit")) {
        if (me == npes - 1) return 0;
        shmem_long_wait_until(&flag, SHMEM_CMP_EQ, 1);
        printf("PE %d got past the deadlock\n", me);
    } else {
        fprintf(stderr, "unknown mode %s\n", mode);
        return 2;
    }
    shmem_finalize();
    return 0;
}
