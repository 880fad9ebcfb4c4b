// The no-op request of ring_bench.cu and ring_test.cu: a white-box reach into the library's
// core (device-lib/src/core.h), kept in its own translation unit because
// core.h's device-side declarations clash with <ishmem.h>'s host ones.
#include "core.h"

__device__ long ring_bench_nop(int peer) {
    return (long)ishmemi_ring_wait(ishmemi_ring_send(ISHMEMI_RING_OP_NOP, 0, 0, 0, 0, 0, peer, 0, 0));
}

// The no-op with a value the host echoes back (ring_test full).
__device__ long ring_echo(int peer, long value) {
    return (long)ishmemi_ring_wait(ishmemi_ring_send(ISHMEMI_RING_OP_NOP, 0, 0, (ulong)value, 0, 0, peer, 0, 0));
}
