/* The SYCL header's declarations against the host headers', compiled by the
 * host's C++ compiler (tests/device/test-device.sh): a routine that exists on both
 * sides must be declared with the same types, or a SYCL program that
 * includes ishmem.h does not compile. No SYCL runtime: the names the
 * header needs from it are declared here. */
#define SYCL_LANGUAGE_VERSION 202001
#define SYCL_EXTERNAL
namespace sycl {
struct sub_group {};
template <int D> struct group {};
template <typename T> constexpr bool is_group_v = false;
template <> constexpr bool is_group_v<sub_group> = true;
template <int D> constexpr bool is_group_v<group<D>> = true;
}
#include <ishmem.h>

int ishmemi_sycl_host_decls(long long *d, sycl::sub_group sg, sycl::group<1> g) {
    ishmemx_longlong_put_work_group(d, d, 1, 0, g);
    ishmemx_longlong_put_work_group(d, d, 1, 0, sg);
    ishmemx_barrier_all_work_group(g);
    return ishmemx_longlong_sum_reduce_work_group(ISHMEM_TEAM_WORLD, d, d, 1, g);
}
