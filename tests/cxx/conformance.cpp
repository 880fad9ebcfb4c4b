// The C++ forms OpenSHMEM 1.5's C11 generics have, through the header's
// templates: context-first overloads, long double (x86-64) and
// std::complex, the int/long bitwise AMOs and bitwise reductions on short,
// int and long, shmem_sync(team), the deprecated generic names; and the
// profiling header compiled as C++. Exact results on any PE count.
#include <shmem.h>
#include <shmemx.h>
#include <pshmem.h>
#include <complex>
#include <cstdio>
#include <cstdlib>

static int me, npes, right, left;

#define CHECK(c, what)                                                           \
    do {                                                                         \
        if (!(c)) {                                                              \
            std::fprintf(stderr, "PE %d: %s:%d: %s\n", me, __FILE__, __LINE__, what); \
            std::exit(1);                                                        \
        }                                                                        \
    } while (0)

static long la[4], lb[4];
static int amo_i;
static long amo_l;
static short rs[2], rd[2];
static std::complex<double> cs[2], cd[2];
static std::complex<float> cfs, cfd;
static long dep;
#if defined(__GNUC__)
static __complex__ double gs[2], gd[2];
static __complex__ float gfs, gfd;
#endif
#if defined(__x86_64__)
static long double lds[2], ldd[2];
#endif

int main() {
    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();
    right = (me + 1) % npes;
    left = (me + npes - 1) % npes;

    // context-first RMA and AMO overloads
    shmem_ctx_t ctx;
    CHECK(shmem_ctx_create(0, &ctx) == 0, "ctx_create");
    for (int i = 0; i < 4; i++) lb[i] = me * 10 + i;
    shmem_barrier_all();
    shmem_put(ctx, la, lb, 4, right);
    shmem_p(ctx, &la[3], 77L, right);
    shmem_ctx_quiet(ctx);
    shmem_barrier_all();
    CHECK(la[0] == left * 10 && la[2] == left * 10 + 2 && la[3] == 77, "ctx put / p");
    CHECK(shmem_g(ctx, &la[1], right) == me * 10 + 1, "ctx g");
    long got[2];
    shmem_get(ctx, got, lb, 2, right);
    shmem_get_nbi(ctx, got + 1, lb + 3, 1, right);
    shmem_ctx_quiet(ctx);
    CHECK(got[0] == right * 10 && got[1] == right * 10 + 3, "ctx get");
    amo_l = 0;
    shmem_barrier_all();
    shmem_atomic_add(ctx, &amo_l, 5L, right);
    CHECK(shmem_atomic_fetch_add(ctx, &amo_l, 1L, right) == 5, "ctx fetch_add");
    CHECK(shmem_atomic_compare_swap(ctx, &amo_l, 6L, 9L, right) == 6, "ctx compare_swap");
    shmem_ctx_destroy(ctx);

    // bitwise AMOs on int and long (int32_t / int64_t)
    amo_i = 0xF0;
    shmem_barrier_all();
    shmem_atomic_or(&amo_i, 0x0F, right);
    CHECK(shmem_atomic_fetch_and(&amo_i, 0x3C, right) == 0xFF, "int fetch_and");
    CHECK(shmem_atomic_fetch_xor(SHMEM_CTX_DEFAULT, &amo_l, 0L, right) == 9, "long fetch_xor (ctx)");
    shmem_barrier_all();
    CHECK(amo_i == 0x3C, "int bitwise result");

    // bitwise reductions on short
    rs[0] = (short)(1 << me);
    rs[1] = 0x100;
    shmem_barrier_all();
    CHECK(shmem_or_reduce(SHMEM_TEAM_WORLD, rd, rs, 2) == 0 && rd[0] == (1 << npes) - 1, "short or_reduce");
    CHECK(shmem_and_reduce(rd, rs, 2) == 0 && rd[1] == 0x100, "short and_reduce (world form)");

    // std::complex reductions
    cs[0] = std::complex<double>(me + 1, -me);
    cs[1] = std::complex<double>(0, 2);
    cfs = std::complex<float>(1, 1);
    shmem_barrier_all();
    CHECK(shmem_sum_reduce(SHMEM_TEAM_WORLD, cd, cs, 2) == 0, "complex sum");
    CHECK(cd[0] == std::complex<double>(npes * (npes + 1) / 2, -(npes * (npes - 1) / 2)), "complex sum value");
    CHECK(shmem_prod_reduce(SHMEM_TEAM_WORLD, cd, cs, 2) == 0, "complex prod");
    const double re[] = {0, -4, 0, 16}, im[] = {2, 0, -8, 0};
    CHECK(cd[1] == std::complex<double>(re[npes - 1], im[npes - 1]), "(2i)^n");
    CHECK(shmem_complexf_sum_reduce(SHMEM_TEAM_WORLD, &cfd, &cfs, 1) == 0 && cfd == std::complex<float>(npes, npes),
          "complexf sum");
#if defined(__GNUC__)
    // GNU complex types (C's _Complex in GNU C++), as code written for
    // Sandia OpenSHMEM passes them: the generic, typed and world forms.
    __real__ gs[0] = me + 1;
    __imag__ gs[0] = -me;
    __real__ gs[1] = 0;
    __imag__ gs[1] = 2;
    __real__ gfs = 1;
    __imag__ gfs = 1;
    shmem_barrier_all();
    CHECK(shmem_sum_reduce(SHMEM_TEAM_WORLD, gd, gs, 2) == 0 && __real__ gd[0] == npes * (npes + 1) / 2
              && __imag__ gd[0] == -(npes * (npes - 1) / 2),
          "GNU complex sum");
    CHECK(shmem_prod_reduce(gd, gs, 2) == 0 && __real__ gd[1] == re[npes - 1] && __imag__ gd[1] == im[npes - 1],
          "GNU complex prod (world form)");
    CHECK(shmem_complexf_sum_reduce(SHMEM_TEAM_WORLD, &gfd, &gfs, 1) == 0 && __real__ gfd == npes && __imag__ gfd == npes,
          "GNU complexf sum (typed)");
    CHECK(shmem_complexd_prod_reduce(gd, gs, 2) == 0 && __real__ gd[1] == re[npes - 1], "GNU complexd prod (typed world)");
#endif

#if defined(__x86_64__)
    // long double
    lds[0] = 1.0L + me * __LDBL_EPSILON__;
    shmem_barrier_all();
    shmem_put(ldd, lds, 1, right);
    shmem_p(&ldd[1], lds[0], right);
    shmem_barrier_all();
    CHECK(ldd[0] == 1.0L + left * __LDBL_EPSILON__ && ldd[1] == ldd[0], "long double put / p");
    CHECK(shmem_g(&ldd[1], right) == lds[0], "long double g");
    CHECK(shmem_max_reduce(SHMEM_TEAM_WORLD, ldd, lds, 1) == 0 && ldd[0] == 1.0L + (npes - 1) * __LDBL_EPSILON__,
          "long double max");
#endif

    // the team form of shmem_sync, and deprecated generic names
    CHECK(shmem_sync(SHMEM_TEAM_WORLD) == 0, "shmem_sync(team)");
    dep = 1;
    shmem_barrier_all();
    shmem_add(&dep, 2L, right);
    CHECK(shmem_fadd(&dep, 1L, right) == 3 && shmem_cswap(&dep, 4L, 8L, right) == 4, "deprecated AMO names");
    shmem_barrier_all();
    CHECK(dep == 8, "deprecated AMO result");
    shmem_pcontrol(1);

    shmem_finalize();
    if (me == 0) std::printf("C++ conformance ok\n");
    return 0;
}
