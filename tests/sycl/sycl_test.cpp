/* A SYCL program calling the device API from its kernels (tests/sycl/run.sh
 * builds it with AdaptiveCpp and runs it on the CPU OpenCL device): RMA,
 * AMOs, signals, barriers, Intel SHMEM's group-taking work-group forms
 * (with a work-group and a sub-group) and a collective, on 1-4 PEs. */
#include <sycl/sycl.hpp>
#include <ishmem.h>
#include <cstdio>
#include <cstdlib>

#define CHECK(c, ...)                                                                   \
    do {                                                                                \
        if (!(c)) {                                                                     \
            std::fprintf(stderr, "PE %d: %s:%d: ", ishmem_my_pe(), __FILE__, __LINE__); \
            std::fprintf(stderr, __VA_ARGS__);                                          \
            std::fprintf(stderr, "\n");                                                 \
            std::exit(1);                                                               \
        }                                                                               \
    } while (0)

constexpr int W = 64; /* work-items, one work-group */

int main() {
    ishmem_init();
    const int me = ishmem_my_pe(), np = ishmem_n_pes(), left = (me + np - 1) % np;
    /* The OpenCL device (the device library is SPIR-V), not a host backend. */
#if defined(__ACPP__) || defined(__HIPSYCL__)
    const auto ocl = sycl::backend::ocl;
#else
    const auto ocl = sycl::backend::opencl;
#endif
    sycl::queue q{[&](const sycl::device &d) { return d.get_backend() == ocl ? 1 : -1; }};
    auto *src = static_cast<long long *>(ishmem_malloc(W * sizeof(long long)));
    auto *dst = static_cast<long long *>(ishmem_calloc(4 * W, sizeof(long long)));
    auto *red = static_cast<long long *>(ishmem_calloc(W, sizeof(long long)));
    auto *res = static_cast<long long *>(ishmem_calloc(4 * W, sizeof(long long)));
    auto *counter = static_cast<long *>(ishmem_calloc(2, sizeof(long)));
    auto *sig = static_cast<uint64_t *>(ishmem_calloc(1, sizeof(uint64_t)));
    auto *wins = static_cast<long *>(ishmem_calloc(1, sizeof(long)));
    for (int i = 0; i < W; i++) src[i] = me * 100000LL + i;
    ishmem_barrier_all();

    q.parallel_for(sycl::nd_range<1>(W, W), [=](sycl::nd_item<1> it) {
         const int i = static_cast<int>(it.get_local_id(0));
         const int pe = ishmem_my_pe(), n = ishmem_n_pes(), right = (pe + 1) % n, from = (pe + n - 1) % n;
         auto g = it.get_group();
         auto sg = it.get_sub_group();
         ishmem_longlong_p(dst + i, src[i] + 1, right);                     /* one element each */
         ishmem_long_atomic_fetch_add(counter, 1, 0);                       /* AMOs on PE 0 */
         ishmemx_longlong_put_work_group(dst + W, src, W, right, g);        /* the whole group */
         const int s0 = static_cast<int>(sg.get_group_linear_id() * sg.get_local_linear_range());
         const int sn = static_cast<int>(sg.get_local_linear_range());
         ishmemx_longlong_put_work_group(dst + 2 * W + s0, src + s0, sn, right, sg); /* each sub-group */
         ishmemx_barrier_all_work_group(g);
         res[i] = ishmem_longlong_g(src + i, from);
         res[W + i] = ishmemx_longlong_sum_reduce_work_group(ISHMEM_TEAM_WORLD, red, src, W, g);
         if (i == 0) {
             res[2 * W] = ishmem_long_atomic_compare_swap(counter + 1, 0, pe + 1, 0) == 0; /* one PE wins */
             ishmem_longlong_put_signal(dst + 3 * W, src, 4, sig, 1, ISHMEM_SIGNAL_ADD, right);
             res[2 * W + 1] = static_cast<long long>(ishmem_signal_wait_until(sig, ISHMEM_CMP_GE, 1));
             ishmem_barrier_all();
         }
     }).wait();
    ishmem_barrier_all();

    for (int i = 0; i < W; i++) {
        const long long l = left * 100000LL + i;
        CHECK(dst[i] == l + 1, "p %d: %lld", i, dst[i]);
        CHECK(dst[W + i] == l, "put_work_group (work-group) %d: %lld", i, dst[W + i]);
        CHECK(dst[2 * W + i] == l, "put_work_group (sub-group) %d: %lld", i, dst[2 * W + i]);
        CHECK(res[i] == l, "g %d: %lld", i, res[i]);
        CHECK(res[W + i] == 0, "sum_reduce_work_group returned %lld", res[W + i]);
        long long sum = 0;
        for (int p = 0; p < np; p++) sum += p * 100000LL + i;
        CHECK(red[i] == sum, "sum_reduce %d: %lld, not %lld", i, red[i], sum);
    }
    for (int i = 0; i < 4; i++) CHECK(dst[3 * W + i] == left * 100000LL + i, "put_signal %d", i);
    CHECK(res[2 * W + 1] >= 1 && *sig == 1, "signal %lld/%llu", res[2 * W + 1], (unsigned long long)*sig);
    /* compare_swap: exactly one PE won, and PE 0's word names it. */
    if (res[2 * W]) ishmem_long_atomic_add(wins, 1, 0);
    ishmem_barrier_all();
    const long winner = ishmem_long_g(counter + 1, 0) - 1;
    CHECK((res[2 * W] != 0) == (winner == me), "compare_swap: PE %ld holds the word, this PE's result %lld", winner,
          res[2 * W]);
    if (me == 0) {
        CHECK(counter[0] == static_cast<long>(W) * np, "fetch_add total %ld", counter[0]);
        CHECK(*wins == 1, "compare_swap won by %ld PEs", *wins);
    }
    ishmem_barrier_all();
    if (me == 0) std::printf("sycl ok on %d PEs\n", np);
    ishmem_finalize();
    return 0;
}
