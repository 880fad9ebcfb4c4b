// A small kernel over the device library's core (the inline routines every
// device function is made of), compiled for each architecture of the
// default build that a quicker build leaves out: `tests/cuda/build.sh`
// builds the whole library for one architecture and this file for the
// others, which catches code that compiles only for some (the whole
// library takes minutes per architecture on two cores).
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "names.h"
#include "../src/core.h"
#include "decls.h"

__global__ void ishmemi_arch_check(long *dest, const long *src, size_t n, int pe, int team) {
    size_t b = n * sizeof(long);
    ishmemi_put_bytes(dest, src, b, pe, 0);
    ishmemi_get_bytes(dest, src, b, pe, 1);
    ishmemi_wg_put_bytes(dest, src, b, pe, 0);
    ishmemi_sg_get_bytes(dest, src, b, pe, 0);
    (void)ishmemi_amo64_pe(dest, ISHMEMI_FETCH, 1, 0, pe);
    ishmemi_route_p_double((double *)dest, ishmemi_route_g_float((const float *)src, pe), pe);
    ishmemi_route_p_bits(dest, ishmemi_route_g_bits(src, 4, pe), 4, pe);
    ishmemi_ring_quiet();
    ishmemi_sync_team(team, ISHMEMI_SIG_SYNC);
    (void)ishmemi_broadcast_bytes(team, dest, src, b, 0);
    (void)ishmemi_fcollect_bytes(team, dest, src, sizeof(long));
    (void)ishmemi_wg_alltoall_bytes(team, dest, src, sizeof(long));
}
