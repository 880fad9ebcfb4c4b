/* Bad input and failures, one per mode (argv[1]). Each mode must end the
 * job with a non-zero status and a clear message; the harness checks both. */
#include <shmem.h>
#include <shmemx.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <threads.h>
#include <time.h>
#include <stdlib.h>
#include <unistd.h>

/* A pause of `ms` milliseconds (C11 has no sleep; spinning on clock()
 * would take a core from the PEs). */
static void sleep_ms(int ms) {
    struct timespec ts = {0, ms * 1000000L};
    thrd_sleep(&ts, NULL);
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    if (!strcmp(mode, "child_init")) {
        /* Started by a PE: inherits ISHMRUN_* but not the PE's socket, so it
         * is a job of its own (a singleton). */
        shmem_init();
        int ok = shmem_n_pes() == 1 && shmem_my_pe() == 0;
        printf("child: %d of %d\n", shmem_my_pe(), shmem_n_pes());
        shmem_finalize();
        return ok ? 0 : 3;
    }
    if (!strcmp(mode, "exit_before_init")) {
        /* The last PE ends before shmem_init (ISHMRUN_PE is the launcher's
         * word for which PE this process is); the others wait for it in
         * shmem_init. */
        const char *pe = getenv("ISHMRUN_PE"), *n = getenv("ISHMRUN_NPES");
        if (pe && n && atoi(pe) == atoi(n) - 1) return 0;
    }
    if (!strcmp(mode, "before_init")) {
        shmem_barrier_all();
        return 0;
    }
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    long *x = shmem_malloc(64 * sizeof(long));
    long local = 0;
    if (!strcmp(mode, "bad_pe")) {
        if (me == 0) shmem_long_p(x, 1, npes);
    } else if (!strcmp(mode, "negative_pe")) {
        if (me == npes - 1) shmem_long_put(x, &local, 1, -3);
    } else if (!strcmp(mode, "not_symmetric")) {
        if (me == 0) shmem_long_put(&local, x, 1, 0);
    } else if (!strcmp(mode, "past_end")) {
        if (me == 0) shmem_putmem(x, &local, (size_t)1 << 40, 0);
    } else if (!strcmp(mode, "null_dest")) {
        if (me == 0) shmem_putmem(NULL, &local, 8, 0);
    } else if (!strcmp(mode, "null_get_dest")) {
        if (me == 0) shmem_getmem(NULL, x, 8, 0);
    } else if (!strcmp(mode, "after_finalize")) {
        shmem_finalize();
        shmem_barrier_all();
    } else if (!strcmp(mode, "malloc_mismatch")) {
        shmem_malloc(me == npes - 1 ? 128 : 64);
    } else if (!strcmp(mode, "free_mismatch")) {
        long *y = shmem_malloc(64);
        shmem_free(me == npes - 1 ? y : x);
    } else if (!strcmp(mode, "free_bad")) {
        shmem_free(x + 1);
    } else if (!strcmp(mode, "bad_align")) {
        shmem_align(24, 64);
    } else if (!strcmp(mode, "sigkill")) {
        if (me == npes - 1) raise(SIGKILL);
    } else if (!strcmp(mode, "eat_memory")) {
        /* The last PE touches memory until the kernel stops it (a test puts
         * the job in a memory cgroup with a small limit). */
        if (me == npes - 1)
            for (;;) {
                char *p = malloc(1 << 20);
                if (!p) break;
                memset(p, 1, 1 << 20);
            }
    } else if (!strcmp(mode, "segv")) {
        if (me == 0) raise(SIGSEGV);
    } else if (!strcmp(mode, "exit_code")) {
        /* exit without finalize: the library finalizes at exit */
        if (me == npes - 1) exit(3);
    } else if (!strcmp(mode, "amo_bad_pe")) {
        if (me == 0) shmem_long_atomic_fetch_add(x, 1, npes + 5);
    } else if (!strcmp(mode, "wait_not_symmetric")) {
        if (me == 0) shmem_long_wait_until(&local, SHMEM_CMP_EQ, 0);
    } else if (!strcmp(mode, "wait_bad_cmp")) {
        if (me == 0) shmem_long_wait_until(x, 42, 0);
    } else if (!strcmp(mode, "bad_sig_op")) {
        if (me == 0) shmem_long_put_signal(x, &local, 1, (uint64_t *)(x + 8), 1, 7, 0);
    } else if (!strcmp(mode, "amo_misaligned")) {
        if (me == 0) shmem_int_atomic_add((int *)((char *)x + 2), 1, 0);
    } else if (!strcmp(mode, "bad_team")) {
        if (me == 0) shmem_int_sum_reduce(40, (int *)x, (int *)x, 1);
    } else if (!strcmp(mode, "destroy_world")) {
        shmem_team_destroy(SHMEM_TEAM_WORLD);
    } else if (!strcmp(mode, "bad_root")) {
        shmem_long_broadcast(SHMEM_TEAM_WORLD, x, x + 1, 1, 9);
    } else if (!strcmp(mode, "global_exit")) {
        if (me == npes - 1) {
            printf("PE %d exits the job\n", me);
            shmem_global_exit(7);
        }
        if (me == 0 && npes > 1) for (;;) sleep(1); /* busy outside the library */
    } else if (!strcmp(mode, "ctx_destroyed")) {
        shmem_ctx_t c;
        shmem_ctx_create(0, &c);
        shmem_ctx_destroy(c);
        if (me == 0) shmem_ctx_long_put(c, x, &local, 1, 0);
    } else if (!strcmp(mode, "ctx_invalid_put")) {
        if (me == 0) shmem_ctx_long_put(SHMEM_CTX_INVALID, x, &local, 1, 0);
    } else if (!strcmp(mode, "ctx_bad_pe")) {
        shmem_ctx_t c;
        shmem_ctx_create(0, &c);
        if (me == 0) shmem_ctx_long_p(c, x, 1, 5);
    } else if (!strcmp(mode, "aset_not_member")) {
        static long psync[SHMEM_BARRIER_SYNC_SIZE];
        if (me == 0) shmem_barrier(1, 0, 2, psync);
    } else if (!strcmp(mode, "coll_not_symmetric")) {
        shmem_long_broadcast(SHMEM_TEAM_WORLD, x, &local, 1, 0);
    } else if (!strcmp(mode, "exit_without_finalize")) {
        /* The last PE leaves without finalizing while the others wait in
         * shmem_barrier_all. It leaves once every other PE is past the
         * allocations' syncs (each adds one to its counter), so that no PE
         * is still waiting in those when it goes. */
        long *arrived = shmem_calloc(1, sizeof(long));
        if (me == npes - 1) {
            shmem_long_wait_until(arrived, SHMEM_CMP_EQ, npes - 1);
            _exit(0);
        }
        shmem_long_atomic_inc(arrived, npes - 1);
        shmem_barrier_all();
    } else if (!strcmp(mode, "finalize_mismatch")) {
        /* The last PE returns (finalize at exit, whose barrier matches the
         * others' first barrier); the others then wait for it again. */
        if (me == npes - 1) return 0;
        shmem_barrier_all();
        shmem_barrier_all();
    } else if (!strcmp(mode, "ignore_term")) {
        /* PEs that ignore SIGTERM: ishmrun must escalate. */
        signal(SIGTERM, SIG_IGN);
        if (me == 0) printf("ignoring SIGTERM\n");
        fflush(stdout);
        for (;;) sleep(1);
    } else if (!strcmp(mode, "global_exit_256")) {
        if (me == npes - 1) shmem_global_exit(256);
        for (;;) sleep(1);
    } else if (!strcmp(mode, "spawn_child")) {
        if (me == 0) {
            char cmd[4096];
            snprintf(cmd, sizeof cmd, "'%s' child_init", argv[0]);
            int rc = system(cmd);
            if (rc != 0) {
                fprintf(stderr, "child exited with %d\n", rc);
                return 1;
            }
            printf("child ok\n");
        }
    } else if (!strcmp(mode, "calloc_overflow")) {
        void *p = shmem_calloc(SIZE_MAX / 2, 4);
        if (p != NULL) return 1;
        if (me == 0) printf("calloc overflow gave NULL\n");
    } else if (!strcmp(mode, "free_global")) {
        static long global_var[4];
        shmem_free(global_var);
    } else if (!strcmp(mode, "psync_reuse")) {
        /* A pSync array moved to a smaller active set (PEs 0 and 1)
         * while the PEs of the whole set may still be in their calls
         * on it (no barrier between): the specification forbids it;
         * it must end with a report naming both sets, never hang. */
        static long psync[SHMEM_REDUCE_SYNC_SIZE];
        static long pwrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
        static long a, b;
        for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++) psync[i] = SHMEM_SYNC_VALUE;
        shmem_barrier_all();
        for (int k = 0; k < 1000; k++) {
            a = me + k;
            shmem_long_min_to_all(&b, &a, 1, 0, 0, npes, pwrk, psync);
            if (me < 2) shmem_long_min_to_all(&b, &a, 1, 0, 0, 2, pwrk, psync);
        }
        /* Where the PEs keep pace (enough cores) the reductions above may
         * never overwrite a slot still needed. An active-set broadcast's
         * root returns once it has published, so: the root moves the
         * array to the smaller set for more calls than it has slots while
         * PEs 2 and up have not yet entered the whole set's broadcast. */
        for (int k = 0; k < 200; k++) {
            if (me >= 2) sleep_ms(2);
            shmem_broadcast64(&b, &a, 1, 0, 0, 0, npes, psync);
            if (me < 2)
                for (int j = 0; j < 9; j++) shmem_broadcast64(&b, &a, 1, 0, 0, 0, 2, psync);
        }
    } else if (!strncmp(mode, "mm_", 3)) {
        /* Mismatched collective calls: the last PE differs from the others.
         * Each must end with the check's report, never corrupt or hang. */
        int odd = me == npes - 1;
        long *big = shmem_calloc(64 * (size_t)npes, sizeof(long));
        if (!strcmp(mode, "mm_fcollect")) {
            shmem_long_fcollect(SHMEM_TEAM_WORLD, big, x, odd ? 8 : 48);
        } else if (!strcmp(mode, "mm_bcast_size")) {
            shmem_long_broadcast(SHMEM_TEAM_WORLD, big, x, odd ? 4 : 8, 0);
        } else if (!strcmp(mode, "mm_bcast_root")) {
            shmem_long_broadcast(SHMEM_TEAM_WORLD, big, x, 4, odd ? 1 : 0);
        } else if (!strcmp(mode, "mm_bcast_self_root") || !strcmp(mode, "mm_bcast_two_roots")) {
            /* Back-to-back small broadcasts whose members disagree on the
             * root: every PE names itself, or the first half names PE 0
             * and the others the last PE. No PE may return from one (each
             * would hold different data, and pass it on). */
            for (int k = 0; k < 12; k++) {
                int root = mode[9] == 's' ? me : (me < npes / 2 ? 0 : npes - 1);
                shmem_long_broadcast(SHMEM_TEAM_WORLD, big, x, 4, root);
                printf("PE %d returned from broadcast %d\n", me, k);
                fflush(stdout);
                shmem_long_put(big + 8, big, 4, (me + 1) % npes);
            }
        } else if (!strcmp(mode, "mm_reduce_count")) {
            shmem_int_sum_reduce(SHMEM_TEAM_WORLD, (int *)big, (int *)x, odd ? 2 : 4);
        } else if (!strcmp(mode, "mm_reduce_op")) {
            if (odd) shmem_int_max_reduce(SHMEM_TEAM_WORLD, (int *)big, (int *)x, 4);
            else shmem_int_sum_reduce(SHMEM_TEAM_WORLD, (int *)big, (int *)x, 4);
        } else if (!strcmp(mode, "mm_reduce_type")) {
            if (odd) shmem_float_sum_reduce(SHMEM_TEAM_WORLD, (float *)big, (float *)x, 4);
            else shmem_int_sum_reduce(SHMEM_TEAM_WORLD, (int *)big, (int *)x, 4);
        } else if (!strcmp(mode, "mm_barrier_reduce")) {
            if (odd) shmem_barrier_all();
            else shmem_long_sum_reduce(SHMEM_TEAM_WORLD, big, x, 2);
        } else if (!strcmp(mode, "mm_alltoall")) {
            shmem_long_alltoall(SHMEM_TEAM_WORLD, big, x, odd ? 1 : 2);
        } else if (!strcmp(mode, "mm_scan")) {
            if (odd) shmemx_long_sum_exscan(SHMEM_TEAM_WORLD, big, x, 4);
            else shmemx_long_sum_inscan(SHMEM_TEAM_WORLD, big, x, 4);
        } else if (!strcmp(mode, "mm_split")) {
            /* Valid on the others, out of range on the last PE: without the
             * check the others wait in the creation's second sync. */
            shmem_team_t t;
            shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, odd ? npes + 5 : npes, NULL, 0, &t);
        } else if (!strcmp(mode, "mm_team")) {
            shmem_team_t t;
            shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, npes, NULL, 0, &t);
            if (odd) shmem_team_sync(t);
            else shmem_long_broadcast(t, big, x, 4, 0);
        } else {
            fprintf(stderr, "unknown mode %s\n", mode);
            return 2;
        }
    } else if (!strcmp(mode, "hang")) {
        if (me == 0) for (;;) pause();
    } else if (!strcmp(mode, "ok") || !strcmp(mode, "exit_before_init")) {
        if (me == 0) printf("ok\n");
    } else {
        fprintf(stderr, "unknown mode %s\n", mode);
        return 2;
    }
    shmem_barrier_all();
    shmem_finalize();
    return 0;
}
