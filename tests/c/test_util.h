/* Helpers shared by the C PE programs: failures print the PE, the place and
 * the values, and exit non-zero so ishmrun (and the harness) report them. */
#ifndef TEST_UTIL_H
#define TEST_UTIL_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* True when world PE pe shares memory with this one (SHMEM_TEAM_SHARED):
 * always under ishmrun; under MPI, PEs of the same node unless
 * ISHMEM_ENABLE_SHM=0. shmem_ptr to pe is non-NULL exactly then. */
#ifdef SHMEM_H
#define SHARES_MEMORY(pe) (shmem_team_translate_pe(SHMEM_TEAM_WORLD, (pe), SHMEM_TEAM_SHARED) != -1)
#else
#define SHARES_MEMORY(pe) (ishmem_team_translate_pe(ISHMEM_TEAM_WORLD, (pe), ISHMEM_TEAM_SHARED) != -1)
#endif

/* Symmetric heap memory may be memory the host cannot load from or store
 * to: a GPU heap (ISHMEM_DEVICE=cuda), or the opaque test device that
 * behaves alike on any machine (ISHMEM_DEVICE=opaque, tests/cuda/host-suite.sh).
 * The programs move it only through the library, with a get or put to
 * their own PE. (Symmetric globals and statics are host memory.) */
#ifdef SHMEM_H
#define SYM_GET(dst, src, nbytes) shmem_getmem((dst), (src), (nbytes), shmem_my_pe())
#define SYM_PUT(dst, src, nbytes) shmem_putmem((dst), (src), (nbytes), shmem_my_pe())
#else
#define SYM_GET(dst, src, nbytes) ishmem_getmem((dst), (src), (nbytes), ishmem_my_pe())
#define SYM_PUT(dst, src, nbytes) ishmem_putmem((dst), (src), (nbytes), ishmem_my_pe())
#endif
/* Whether the host may load from and store to heap addresses directly
 * (what shmem_ptr returns): not on a GPU heap or the opaque test device,
 * where shmem_ptr gives the address device code uses. */
static inline int heap_host_direct(void) {
    const char *d = getenv("ISHMEM_DEVICE");
    return !d || (strcmp(d, "cuda") != 0 && strcmp(d, "opaque") != 0);
}
/* The value of symmetric object *p. */
#define SYM_LOAD(p)                                                             \
    __extension__({                                                             \
        __typeof__(*(p)) v_;                                                    \
        SYM_GET(&v_, (p), sizeof v_);                                           \
        v_;                                                                     \
    })
/* *p = v for symmetric object *p. */
#define SYM_STORE(p, v)                                                         \
    do {                                                                        \
        __typeof__(*(p)) v_ = (v);                                              \
        SYM_PUT((p), &v_, sizeof v_);                                           \
    } while (0)

#endif
