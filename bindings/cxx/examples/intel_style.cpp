// A program in the style of Intel SHMEM's host C++ API: templates deduce the
// type, collectives take the team as an optional first argument. It builds
// unchanged against ishmem-rs's <ishmem.h> and checks every result.
#include <ishmem.h>
#include <ishmemx.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(cond, what)                                                        \
    do {                                                                         \
        if (!(cond)) {                                                           \
            std::fprintf(stderr, "PE %d: %s:%d: %s\n", ishmem_my_pe(), __FILE__, \
                         __LINE__, what);                                        \
            std::exit(1);                                                        \
        }                                                                        \
    } while (0)

int main() {
    ishmem_init();
    const int me = ishmem_my_pe(), npes = ishmem_n_pes();
    const int right = (me + 1) % npes, left = (me + npes - 1) % npes;
    const size_t n = 1024;

    // RMA through templates
    auto *dst = static_cast<double *>(ishmem_calloc(n, sizeof(double)));
    std::vector<double> src(n);
    for (size_t i = 0; i < n; i++) src[i] = me + i * 0.5;
    ishmem_put(dst, src.data(), n, right);
    ishmem_barrier_all();
    // the heap may be GPU memory: read and write it with gets and puts to this PE
    std::vector<double> mine(n);
    ishmem_get(mine.data(), dst, n, me);
    for (size_t i = 0; i < n; i++) CHECK(mine[i] == left + i * 0.5, "put<double>");
    std::vector<double> back(n);
    ishmem_get(back.data(), dst, n, left);
    CHECK(back[3] == (left + npes - 1) % npes + 1.5, "get<double>");
    auto *iv = static_cast<long *>(ishmem_calloc(4, sizeof(long)));
    ishmem_p(iv, 42, right);  // int literal for a long*: non-deduced value
    ishmem_barrier_all();
    CHECK(ishmem_g(iv, right) == 42 && ishmem_g(iv, me) == 42, "p/g<long>");

    // AMOs, templated and typed
    auto *ctr = static_cast<int *>(ishmem_calloc(1, sizeof(int)));
    for (int k = 0; k < 100; k++) ishmem_atomic_fetch_add(ctr, 1, 0);
    ishmem_int_atomic_inc(ctr, 0);
    ishmem_barrier_all();
    CHECK(ishmem_atomic_fetch(ctr, 0) == 101 * npes, "atomics");

    // signals and waits
    auto *sig = static_cast<uint64_t *>(ishmem_calloc(1, sizeof(uint64_t)));
    ishmem_barrier_all();
    ishmem_put_signal(dst, src.data(), n, sig, 1, ISHMEM_SIGNAL_SET, right);
    ishmem_signal_wait_until(sig, ISHMEM_CMP_EQ, 1);
    CHECK(ishmem_g(dst + n - 1, me) == left + (n - 1) * 0.5, "put_signal data");
    ishmem_barrier_all();  // every SET has landed before any ADD
    ishmemx_signal_add(sig, 2, left);
    ishmem_wait_until(reinterpret_cast<unsigned long *>(sig), ISHMEM_CMP_EQ, 3ul);
    CHECK(ishmem_test(iv, ISHMEM_CMP_EQ, 42L) == 1, "test<long>");
    ishmem_barrier_all();

    // collectives: world forms (no team) and team forms under one name
    auto *a = static_cast<long *>(ishmem_calloc(16 * npes, sizeof(long)));
    auto *b = static_cast<long *>(ishmem_calloc(16 * npes, sizeof(long)));
    std::vector<long> vals(16);
    for (int i = 0; i < 16; i++) vals[i] = me * 100 + i;
    ishmem_put(a, vals.data(), 16, me);
    CHECK(ishmem_broadcast(b, a, 16, npes - 1) == 0, "broadcast (world)");
    CHECK(ishmem_g(b + 5, me) == (npes - 1) * 100 + 5, "broadcast data");
    CHECK(ishmem_long_sum_reduce(b, a, 16) == 0, "typed world reduce");
    CHECK(ishmem_g(b + 1, me) == 100L * npes * (npes - 1) / 2 + npes, "sum");
    CHECK(ishmem_fcollect(b, a, 16) == 0 && ishmem_g(b + 16 * (npes - 1), me) == (npes - 1) * 100, "fcollect");
    CHECK(ishmem_sum_inscan(b, a, 16) == 0, "inscan");
    long want = 0;
    for (int p = 0; p <= me; p++) want += p * 100 + 2;
    CHECK(ishmem_g(b + 2, me) == want, "inscan data");

    ishmem_team_t evens;
    ishmem_team_split_strided(ISHMEM_TEAM_WORLD, 0, 2, (npes + 1) / 2, nullptr, 0, &evens);
    if (evens != ISHMEM_TEAM_INVALID) {
        CHECK(ishmem_team_my_pe(evens) == me / 2, "team rank");
        CHECK(ishmem_max_reduce(evens, b, a, 16) == 0, "team reduce template");
        CHECK(ishmem_g(b, me) == ((npes + 1) / 2 - 1) * 2 * 100, "team max");
        CHECK(ishmem_long_broadcast(evens, b, a, 4, 0) == 0 && ishmem_g(b + 3, me) == 3, "typed team broadcast");
        CHECK(ishmem_team_sync(evens) == 0, "team_sync");
        ishmem_team_destroy(evens);
    }
    CHECK(ishmem_broadcastmem(b, a, 8, 0) == 0, "broadcastmem (world)");
    ishmem_barrier_all();
    ishmem_free(b);
    ishmem_free(a);
    ishmem_free(sig);
    ishmem_free(ctr);
    ishmem_free(iv);
    ishmem_free(dst);
    if (me == 0) std::printf("intel-style C++ ok on %d PEs\n", npes);
    ishmem_finalize();
    return 0;
}
