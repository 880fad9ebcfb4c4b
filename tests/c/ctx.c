/* Contexts: creation options, team contexts with team-relative PE numbers,
 * every kind of routine in context form (typed, sized, mem, strided, AMO,
 * nbi, put_signal), per-context fence/quiet, C11 generics with a ctx, get_team,
 * TEAM_INVALID, many create/destroy cycles. */
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "test_util.h"

#define N 4096

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    int right = (me + 1) % npes, left = (me + npes - 1) % npes;
    long *a = shmem_calloc(N, sizeof(long));
    long *b = shmem_calloc(N, sizeof(long));
    long *flag = shmem_calloc(2, sizeof(long));
    uint64_t *sig = shmem_calloc(1, sizeof(uint64_t));
    long src[N], got_n[N];

    shmem_ctx_t ca, cb;
    CHECK(shmem_ctx_create(SHMEM_CTX_PRIVATE, &ca) == 0 && ca != SHMEM_CTX_INVALID, "ctx_create");
    CHECK(shmem_ctx_create(SHMEM_CTX_SERIALIZED | SHMEM_CTX_NOSTORE, &cb) == 0 && cb != ca, "second ctx");
    shmem_team_t t;
    CHECK(shmem_ctx_get_team(ca, &t) == 0 && t == SHMEM_TEAM_WORLD, "ctx team is world");
    CHECK(shmem_ctx_get_team(SHMEM_CTX_DEFAULT, &t) == 0 && t == SHMEM_TEAM_WORLD, "default ctx team");
    CHECK(shmem_ctx_get_team(SHMEM_CTX_INVALID, &t) != 0 && t == SHMEM_TEAM_INVALID, "invalid ctx team");

    /* two contexts with outstanding nbi puts; each quiet completes its own */
    for (int i = 0; i < N; i++) src[i] = me * 100000 + i;
    shmem_ctx_long_put_nbi(ca, a, src, N, right);
    shmem_ctx_putmem_nbi(cb, b, src, N * sizeof(long), right);
    shmem_ctx_quiet(cb);
    shmem_ctx_long_atomic_set(cb, flag, 1, right);
    shmem_ctx_quiet(ca);
    shmem_ctx_long_atomic_set(ca, flag + 1, 1, right);
    shmem_long_wait_until(flag, SHMEM_CMP_EQ, 1);
    SYM_GET(got_n, b, N * sizeof(long));
    for (int i = 0; i < N; i++) CHECK(got_n[i] == left * 100000 + i, "ctx b data %d", i);
    shmem_long_wait_until(flag + 1, SHMEM_CMP_EQ, 1);
    SYM_GET(got_n, a, N * sizeof(long));
    for (int i = 0; i < N; i++) CHECK(got_n[i] == left * 100000 + i, "ctx a data %d", i);
    shmem_barrier_all();

    /* every routine kind through a context, incl. generics with ctx */
    long v = shmem_ctx_long_g(ca, a + 3, right);
    CHECK(v == me * 100000 + 3, "ctx g");
    shmem_ctx_long_p(ca, b, -1, right);
    shmem_ctx_long_iput(ca, b + 10, src, 2, 1, 5, right);
    shmem_ctx_put64(cb, b + 100, src, 3, right);
    shmem_ctx_long_atomic_add(ca, flag, 10, right);
    long old = shmem_ctx_long_atomic_fetch_add(cb, flag, 5, right);
    shmem_ctx_fence(ca);
    shmem_ctx_long_put_signal(ca, b + 200, src, 2, sig, 9, SHMEM_SIGNAL_SET, right);
    long gsrc[2] = {7, 8};
    shmem_put(ca, b + 300, gsrc, 2, right);
    long gold = shmem_atomic_fetch_inc(cb, flag + 1, right);
    shmem_ctx_quiet(ca);
    shmem_ctx_quiet(cb);
    CHECK(old >= 11 && gold >= 1, "ctx fetching AMOs");
    shmem_signal_wait_until(sig, SHMEM_CMP_EQ, 9);
    shmem_barrier_all();
    long bv[302], fv[2];
    SYM_GET(bv, b, 302 * sizeof(long));
    SYM_GET(fv, flag, sizeof fv);
    CHECK(bv[0] == -1 && bv[10] == left * 100000 && bv[12] == left * 100000 + 1, "ctx p/iput");
    CHECK(bv[100] == left * 100000 && bv[102] == left * 100000 + 2, "ctx put64");
    CHECK(bv[200] == left * 100000 && bv[300] == 7 && bv[301] == 8, "ctx put_signal / generic put");
    CHECK(fv[0] == 16 && fv[1] == 2, "ctx AMOs: %ld %ld", fv[0], fv[1]);
    long got[2];
    shmem_get(cb, got, b + 300, 2, me);
    CHECK(got[0] == 7, "generic get with ctx");
    shmem_barrier_all();

    /* a context on the reversed world: PE numbers are team-relative */
    shmem_team_t rev;
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, npes - 1, -1, npes, NULL, 0, &rev) == 0, "split");
    shmem_ctx_t cr;
    CHECK(shmem_team_create_ctx(rev, 0, &cr) == 0, "team_create_ctx");
    CHECK(shmem_ctx_get_team(cr, &t) == 0 && t == rev, "ctx team");
    /* team PE 0 is world PE npes-1 */
    shmem_ctx_long_atomic_add(cr, flag, 1000, 0);
    shmem_barrier_all();
    long f0 = SYM_LOAD(flag);
    if (me == npes - 1) CHECK(f0 == 16 + 1000L * npes, "team ctx targets team PE 0 = world PE %d", npes - 1);
    else CHECK(f0 == 16, "team ctx did not target world PE %d", me);
    shmem_ctx_destroy(cr);
    shmem_team_destroy(rev);

    shmem_ctx_t bad;
    CHECK(shmem_team_create_ctx(SHMEM_TEAM_INVALID, 0, &bad) != 0 && bad == SHMEM_CTX_INVALID, "ctx on TEAM_INVALID");
    for (int i = 0; i < 5000; i++) {
        shmem_ctx_t c;
        CHECK(shmem_ctx_create(0, &c) == 0, "cycle %d", i);
        shmem_ctx_quiet(c);
        shmem_ctx_destroy(c);
    }
    shmem_ctx_destroy(ca);
    shmem_ctx_destroy(cb);
    shmem_barrier_all();
    shmem_free(sig);
    shmem_free(flag);
    shmem_free(b);
    shmem_free(a);
    shmem_finalize();
    return 0;
}
