/* Runs across "hosts" (network + UTS namespaces, tests/mpi/multihost.sh):
 * checks that PEs on the same host share memory and PEs on other hosts do
 * not, then RMA, AMOs, put-with-signal, a reduction and a lock across
 * hosts. Expects TEST_PES_PER_HOST PEs per host, in rank blocks. The heap
 * is moved only through the library (test_util.h), so the test also runs
 * on heaps the host cannot touch (ISHMEM_DEVICE=opaque, as GPU heaps). */
#define _DEFAULT_SOURCE
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_util.h"

#define N 4096

long lock;

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    const char *per = getenv("TEST_PES_PER_HOST");
    CHECK(per != NULL, "TEST_PES_PER_HOST is set by the test script");
    int per_host = atoi(per);
    CHECK(per_host > 0 && npes % per_host == 0 && npes / per_host >= 2, "%d PEs, %d per host", npes, per_host);

    /* host names differ between hosts, and shared memory follows them */
    char host[256] = {0};
    gethostname(host, sizeof host - 1);
    char *hosts = shmem_calloc(npes, 256);
    shmem_barrier_all();
    for (int p = 0; p < npes; p++) shmem_putmem(hosts + 256 * me, host, 256, p);
    shmem_barrier_all();
    char *names = malloc((size_t)npes * 256);
    SYM_GET(names, hosts, (size_t)npes * 256);
    for (int p = 0; p < npes; p++) {
        int same_host = p / per_host == me / per_host;
        CHECK((strcmp(names + 256 * p, host) == 0) == same_host, "PE %d runs on %s, I on %s", p, names + 256 * p, host);
        CHECK(SHARES_MEMORY(p) == same_host, "PE %d shares memory with me: %d", p, SHARES_MEMORY(p));
    }
    CHECK(shmem_team_n_pes(SHMEM_TEAM_SHARED) == per_host, "TEAM_SHARED has %d PEs", shmem_team_n_pes(SHMEM_TEAM_SHARED));

    /* RMA to the PE on the next host, and back */
    int other = (me + per_host) % npes;
    int from = (me - per_host + npes) % npes;
    long *buf = shmem_calloc(N, sizeof(long));
    long src[N];
    for (int i = 0; i < N; i++) src[i] = me * 100000L + i;
    shmem_barrier_all();
    shmem_long_put(buf, src, N, other);
    shmem_barrier_all();
    long got[N];
    SYM_GET(got, buf, sizeof got);
    for (int i = 0; i < N; i++) CHECK(got[i] == from * 100000L + i, "put across hosts element %d: %ld", i, got[i]);
    long back[N];
    shmem_long_get(back, buf, N, other);
    for (int i = 0; i < N; i++) CHECK(back[i] == me * 100000L + i, "get across hosts element %d", i);

    /* AMOs from every PE on one word of PE 0 (remote for the other host) */
    long *ctr = shmem_calloc(1, sizeof(long));
    shmem_barrier_all();
    for (int i = 0; i < 100; i++) shmem_long_atomic_add(ctr, 1, 0);
    long f = shmem_long_atomic_fetch_add(ctr, 1000, 0);
    CHECK(f >= 100, "fetch_add saw %ld", f);
    shmem_barrier_all();
    if (me == 0) CHECK(SYM_LOAD(ctr) == npes * 1100L, "AMO total %ld", SYM_LOAD(ctr));

    /* put-with-signal: the data is there when the signal is */
    uint64_t *sig = shmem_calloc(1, sizeof(uint64_t));
    shmem_barrier_all();
    for (int i = 0; i < N; i++) src[i] = me * 7L + i;
    shmem_long_put_signal(buf, src, N, sig, 1, SHMEM_SIGNAL_ADD, other);
    shmem_signal_wait_until(sig, SHMEM_CMP_EQ, 1);
    SYM_GET(got, buf, sizeof got);
    for (int i = 0; i < N; i++) CHECK(got[i] == from * 7L + i, "put_signal data element %d", i);

    /* a reduction over every host */
    long *r = shmem_malloc(2 * sizeof(long));
    long mine[2] = {me, 1}, sum[2];
    SYM_PUT(r, mine, sizeof mine);
    shmem_long_sum_reduce(SHMEM_TEAM_WORLD, r, r, 2);
    SYM_GET(sum, r, sizeof sum);
    CHECK(sum[0] == (long)npes * (npes - 1) / 2 && sum[1] == npes, "sum_reduce %ld %ld", sum[0], sum[1]);

    /* a lock taken by PEs of every host */
    long *in = shmem_calloc(1, sizeof(long));
    shmem_barrier_all();
    for (int i = 0; i < 20; i++) {
        shmem_set_lock(&lock);
        long v = shmem_long_g(in, 0);
        shmem_long_p(in, v + 1, 0);
        shmem_quiet();
        shmem_clear_lock(&lock);
    }
    shmem_barrier_all();
    if (me == 0) CHECK(SYM_LOAD(in) == 20L * npes, "lock-protected counter %ld", SYM_LOAD(in));

    shmem_free(in);
    shmem_free(r);
    shmem_free(sig);
    shmem_free(ctr);
    shmem_free(buf);
    shmem_free(hosts);
    free(names);
    if (me == 0) printf("multihost ok: %d PEs on %d hosts\n", npes, npes / per_host);
    shmem_finalize();
    return 0;
}
