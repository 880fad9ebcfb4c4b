// GPU failures must end the job with a message, never hang.
// One case per mode (argv[1]); the last PE (or FAIL_PE) is the one that fails, the
// others wait in a kernel for a flag it never sets (their host threads sit
// in cudaDeviceSynchronize, outside the library). tests/cuda/failures.sh
// runs each and checks the message, the exit status and the time.
//
//   lost          the last PE calls _exit(0) without finalizing;
//   trap_barrier  the last PE's kernel traps, then it calls
//                 ishmem_barrier_all;
//   trap_idle     the last PE's kernel traps, then it sleeps outside the
//                 library (no further call: the watchdog must notice);
//   bad_address   the last PE's kernel stores to an invalid address;
//   deadlock      every PE's host waits in the library for a flag nobody
//                 sets (ISHMEM_DEADLOCK_TIMEOUT): one report;
//   kernel_deadlock  PE 0's kernel waits for a flag nobody sets, the
//                 others' kernels for a signal nobody sends, every host in
//                 cudaDeviceSynchronize: one report naming each
//                 PE's device wait (ends the job with
//                 ISHMEM_DEADLOCK_DEVICE_ABORT=1, which failures.sh sets);
//   kernel_barrier_deadlock  PE 0's kernel waits in a device barrier the
//                 others' kernels never reach (they wait for a flag nobody
//                 sets): the report names the barrier's wait, which the
//                 watchdog reads from the device sync words;
//   coll_mismatch_ll, coll_mismatch_signal  the world team's members make
//                 different collective calls in kernels: _ll, PE 0 an
//                 fcollect and the others a broadcast from PE 0, both of
//                 low-latency words; _signal, PE 0 a barrier and the
//                 others a broadcast of 64 KiB from PE 1, through signals.
//                 A member names both calls and the job ends (the hosts
//                 wait for nothing meanwhile); _reduce4, PE 0 a sum
//                 reduction of 7 longs and the others a broadcast of one
//                 int from PE 1 (one low-latency word where the
//                 reduction's first element takes two); _mixed, PE 0 an
//                 fcollect of low-latency words and the others a barrier
//                 (neither hears the other: the watchdog ends the job,
//                 ISHMEM_DEADLOCK_DEVICE_ABORT=0 as well);
//   host_device_barrier  PE 0 calls barrier_all on the host, the others in
//                 kernels: the two sync differently on GPUs, so the
//                 watchdog ends the job (ISHMEM_DEADLOCK_DEVICE_ABORT=0
//                 as well: the kernels wait in the library's own barrier
//                 for a PE whose device runs nothing); through the control
//                 segment (ISHMEM_DEVICE_SYNC=control) they meet and the
//                 job ends well;
//   kernel_busy   PE 0's host waits in the library for a flag the last
//                 PE's kernel sets after spinning for 4 s while that PE's
//                 host waits in a barrier: no deadlock report (the
//                 kernel runs), the job ends well.
#include <ishmem.h>
#include <ishmemx.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

__global__ void wait_flag(long *flag) { ishmem_long_wait_until(flag, ISHMEM_CMP_EQ, 1); }

__global__ void trap_kernel() { __trap(); }

__global__ void wait_signal(unsigned long *sig) { ishmem_signal_wait_until(sig, ISHMEM_CMP_GE, 7); }

__global__ void barrier_kernel() { ishmem_barrier_all(); }

__global__ void fcollect_kernel(long *dst, const long *src, size_t n) {
    ishmem_long_fcollect(ISHMEM_TEAM_WORLD, dst, src, n);
}

__global__ void bcast_kernel(long *dst, const long *src, size_t n, int root) {
    ishmem_long_broadcast(ISHMEM_TEAM_WORLD, dst, src, n, root);
}

__global__ void reduce_kernel(long *dst, const long *src, size_t n) {
    ishmem_long_sum_reduce(ISHMEM_TEAM_WORLD, dst, src, n);
}

__global__ void bcast_int_kernel(int *dst, const int *src, size_t n, int root) {
    ishmem_int_broadcast(ISHMEM_TEAM_WORLD, dst, src, n, root);
}

__global__ void bad_store(int *p) { *(volatile int *)p = 1; }

// Spins for about `ns` nanoseconds of GPU time, then sets `flag` on `pe`.
__global__ void spin_then_set(long *flag, unsigned long long ns, int pe) {
    unsigned long long t0;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    for (;;) {
        unsigned long long t;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
        if (t - t0 >= ns) break;
    }
    ishmem_long_atomic_set(flag, 1, pe);
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    ishmem_init();
    int me = ishmem_my_pe(), npes = ishmem_n_pes(), last = npes - 1;
    // FAIL_PE (the GPU soak): which PE fails, instead of the last.
    if (getenv("FAIL_PE")) last = atoi(getenv("FAIL_PE")) % npes;
    long *flag = (long *)ishmem_calloc(1, sizeof(long));
    ishmem_barrier_all();
    if (!strcmp(mode, "deadlock")) {
        ishmem_long_wait_until(flag, ISHMEM_CMP_EQ, 42);
        printf("PE %d got past the deadlock\n", me);
        return 1;
    }
    if (!strcmp(mode, "kernel_deadlock")) {
        if (me == 0)
            wait_flag<<<1, 1>>>(flag);
        else
            wait_signal<<<1, 1>>>((unsigned long *)flag);
        cudaError_t e = cudaDeviceSynchronize();
        printf("PE %d: the deadlocked kernel ended (%s): it should not have\n", me, cudaGetErrorString(e));
        return 1;
    }
    if (!strcmp(mode, "kernel_barrier_deadlock")) {
        if (me == 0)
            barrier_kernel<<<1, 1>>>();
        else
            wait_flag<<<1, 1>>>(flag);
        cudaError_t e = cudaDeviceSynchronize();
        printf("PE %d: the deadlocked kernel ended (%s): it should not have\n", me, cudaGetErrorString(e));
        return 1;
    }
    if (!strcmp(mode, "host_device_barrier")) {
        if (me == 0)
            ishmem_barrier_all();
        else
            barrier_kernel<<<1, 1>>>();
        cudaDeviceSynchronize();
        // Through the control segment (ISHMEM_DEVICE_SYNC=control) the
        // two meet.
        ishmem_barrier_all();
        if (me == 0) printf("host_device_barrier ok\n");
        ishmem_finalize();
        return 0;
    }
    if (!strncmp(mode, "coll_mismatch_", 14)) {
        const char *how = mode + 14;
        bool ll = !strcmp(how, "ll");
        long *src = (long *)ishmem_calloc(8192, sizeof(long)), *dst = (long *)ishmem_calloc(8192 * npes, sizeof(long));
        ishmem_barrier_all();
        if (me == 0 && (ll || !strcmp(how, "mixed")))
            fcollect_kernel<<<1, 1>>>(dst, src, 1);
        else if (me == 0 && !strcmp(how, "reduce4"))
            reduce_kernel<<<1, 1>>>(dst, src, 7);
        else if (me == 0 || !strcmp(how, "mixed"))
            barrier_kernel<<<1, 1>>>();
        else if (!strcmp(how, "reduce4"))
            bcast_int_kernel<<<1, 1>>>((int *)dst, (const int *)src, 1, 1);
        else
            bcast_kernel<<<1, 1>>>(dst, src, ll ? 1 : 8192, ll ? 0 : 1);
        ishmem_long_wait_until(flag, ISHMEM_CMP_EQ, 42);
        printf("PE %d: %s returned: it should not have\n", me, mode);
        return 1;
    }
    if (!strcmp(mode, "kernel_busy")) {
        if (me == last) {
            spin_then_set<<<1, 1>>>(flag, 4000000000ull, last == 0 ? 1 : 0);
            ishmem_barrier_all();
            cudaDeviceSynchronize();
        } else {
            if (me == (last == 0 ? 1 : 0)) ishmem_long_wait_until(flag, ISHMEM_CMP_EQ, 1);
            ishmem_barrier_all();
        }
        ishmem_barrier_all();
        if (me == 0) printf("kernel_busy ok\n");
        ishmem_finalize();
        return 0;
    }
    if (me != last) {
        // Wait in a kernel, the host outside the library.
        wait_flag<<<1, 1>>>(flag);
        cudaError_t e = cudaDeviceSynchronize();
        printf("PE %d: the waiting kernel ended (%s): it should not have\n", me, cudaGetErrorString(e));
        return 1;
    }
    usleep(300000); // the others are in their kernels
    if (!strcmp(mode, "lost")) {
        _exit(0);
    } else if (!strcmp(mode, "trap_barrier") || !strcmp(mode, "trap_idle")) {
        trap_kernel<<<1, 1>>>();
        cudaError_t e = cudaDeviceSynchronize();
        fprintf(stderr, "PE %d: the kernel trapped: %s\n", me, cudaGetErrorString(e));
        if (!strcmp(mode, "trap_barrier")) {
            ishmem_barrier_all();
        } else {
            sleep(60);
        }
    } else if (!strcmp(mode, "bad_address")) {
        bad_store<<<1, 1>>>((int *)0x10);
        cudaError_t e = cudaDeviceSynchronize();
        fprintf(stderr, "PE %d: the kernel faulted: %s\n", me, cudaGetErrorString(e));
        sleep(60);
    } else {
        fprintf(stderr, "unknown mode %s\n", mode);
        return 2;
    }
    printf("PE %d was not ended\n", me);
    return 1;
}
