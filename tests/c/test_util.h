/* Helpers shared by the C PE programs: failures print the PE, the place and
 * the values, and exit non-zero so ishmrun (and the harness) report them. */
#ifndef TEST_UTIL_H
#define TEST_UTIL_H
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond, ...)                                                        \
    do {                                                                        \
        if (!(cond)) {                                                          \
            fprintf(stderr, "PE %d: %s:%d: check failed: %s: ", shmem_my_pe(),  \
                    __FILE__, __LINE__, #cond);                                 \
            fprintf(stderr, __VA_ARGS__);                                       \
            fprintf(stderr, "\n");                                              \
            exit(1);                                                            \
        }                                                                       \
    } while (0)

/* Polls a word written by another PE until it equals want. */
#define WAIT_EQ(ptr, want)                                                      \
    do {                                                                        \
        long spins_ = 0;                                                        \
        while (*(volatile __typeof__(*(ptr)) *)(ptr) != (want)) {               \
            if (++spins_ > 64) sched_yield();                                   \
        }                                                                       \
        __atomic_thread_fence(__ATOMIC_ACQUIRE);                                \
    } while (0)

/* True when world PE pe shares memory with this one (SHMEM_TEAM_SHARED):
 * always under ishmrun; under MPI, PEs of the same node unless
 * ISHMEM_ENABLE_SHM=0. shmem_ptr to pe is non-NULL exactly then. */
#ifdef SHMEM_H
#define SHARES_MEMORY(pe) (shmem_team_translate_pe(SHMEM_TEAM_WORLD, (pe), SHMEM_TEAM_SHARED) != -1)
#else
#define SHARES_MEMORY(pe) (ishmem_team_translate_pe(ISHMEM_TEAM_WORLD, (pe), ISHMEM_TEAM_SHARED) != -1)
#endif

#endif
