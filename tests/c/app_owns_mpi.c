/* An application that owns MPI: it initializes MPI itself with
 * MPI_THREAD_FUNNELED (not MULTIPLE), uses MPI, hands a communicator to
 * ishmemx_init_attr, uses OpenSHMEM and MPI side by side, finalizes
 * ishmem, and finally MPI. Built with the MPI's compiler wrapper.
 *
 * With an argument "other_thread", a second thread makes a remote put after
 * init: that must fail with a clear error when MPI is FUNNELED and the
 * target is only reachable through MPI. */
#include <ishmem.h>
#include <ishmemx.h>
#include <shmem.h>
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "test_util.h"

static long *sym;

static void *put_from_other_thread(void *arg) {
    long v = 42;
    ishmem_long_put(sym, &v, 1, *(int *)arg);
    return NULL;
}

int main(int argc, char **argv) {
    int provided = -1;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    if (provided < MPI_THREAD_FUNNELED) {
        fprintf(stderr, "MPI provides only thread level %d\n", provided);
        return 1;
    }
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    /* the application's own communicator, in reverse rank order: ishmem's
     * PE numbers follow it, not MPI_COMM_WORLD */
    MPI_Comm comm;
    MPI_Comm_split(MPI_COMM_WORLD, 0, size - 1 - rank, &comm);
    int sum = 0;
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, comm);

    ishmemx_attr_t attr;
    memset(&attr, 0, sizeof attr);
    attr.runtime = ISHMEMX_RUNTIME_MPI;
    attr.initialize_runtime = false;
    attr.mpi_comm = &comm;
    ishmemx_init_attr(&attr);
    int me = ishmem_my_pe(), npes = ishmem_n_pes();
    int crank;
    MPI_Comm_rank(comm, &crank);
    CHECK(me == crank && npes == size, "PE %d of %d, comm rank %d of %d", me, npes, crank, size);
    CHECK(ishmemx_runtime_get_type() == ISHMEMX_RUNTIME_MPI, "runtime type");
    int level = -1;
    ishmem_query_thread(&level);
    int right = (me + 1) % npes;
    int all_shared = 1;
    for (int p = 0; p < npes; p++) all_shared &= SHARES_MEMORY(p);
    /* FUNNELED MPI limits us to FUNNELED only when some PE is remote */
    CHECK(level == (all_shared ? ISHMEM_THREAD_MULTIPLE : ISHMEM_THREAD_FUNNELED), "thread level %d", level);

    sym = ishmem_calloc(npes, sizeof(long));
    long *counter = ishmem_calloc(1, sizeof(long));
    ishmem_long_p(&sym[me], me + 100, right);
    long old = ishmem_long_atomic_fetch_add(counter, 1, 0);
    CHECK(old >= 0 && old < npes, "fetch_add returned %ld", old);
    ishmem_barrier_all();
    /* The heap may be memory the host cannot touch (test_util.h). */
    if (me == 0) CHECK(SYM_LOAD(counter) == npes, "counter %ld", SYM_LOAD(counter));
    int left = (me + npes - 1) % npes;
    CHECK(SYM_LOAD(&sym[left]) == left + 100, "p from the left: %ld", SYM_LOAD(&sym[left]));

    /* MPI still works in between, on the application's communicator */
    int got = -1;
    MPI_Sendrecv(&me, 1, MPI_INT, right, 7, &got, 1, MPI_INT, left, 7, comm, MPI_STATUS_IGNORE);
    CHECK(got == left, "MPI_Sendrecv after ishmem init");
    long *r = ishmem_malloc(sizeof(long));
    SYM_STORE(r, (long)me);
    ishmem_long_sum_reduce(ISHMEM_TEAM_WORLD, r, r, 1);
    CHECK(SYM_LOAD(r) == (long)npes * (npes - 1) / 2, "sum_reduce %ld", SYM_LOAD(r));
    ishmem_free(r);

    if (argc > 1 && strcmp(argv[1], "other_thread") == 0) {
        pthread_t t;
        pthread_create(&t, NULL, put_from_other_thread, &right);
        pthread_join(t, NULL);
        /* only reached when the put could be made from another thread */
        printf("PE %d: put from another thread done\n", me);
    }

    ishmem_free(counter);
    ishmem_free(sym);
    ishmem_finalize();
    int flag = 0;
    MPI_Finalized(&flag);
    CHECK(!flag, "ishmem_finalize must leave the application's MPI alone");
    MPI_Allreduce(MPI_IN_PLACE, &sum, 1, MPI_INT, MPI_SUM, comm);
    MPI_Comm_free(&comm);
    MPI_Finalize();
    if (me == 0) printf("app owns mpi ok\n");
    return 0;
}
