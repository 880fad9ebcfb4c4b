/* Device benchmark kernels (tests/device/device_bench.c). */
#include "ishmem_device.h"

/* One work-item, `iters` blocking fetch_adds: with ISHMEM_DEVICE_RING_ALL=1
 * each is a ring round trip. */
kernel void amo_loop(global long *c, long iters, int pe) {
    for (long i = 0; i < iters; i++) ishmem_long_atomic_fetch_add(c, 1, pe);
}

/* Every work-item: `per` blocking fetch_adds (requests per second). */
kernel void amo_many(global long *c, long per, int pe) {
    for (long i = 0; i < per; i++) ishmem_long_atomic_fetch_add(c, 1, pe);
}

/* The same, in sub-groups of 8 the CPU runtime runs as one vector: each
 * thread then keeps 8 requests in flight (it runs amo_many one work-item
 * at a time, one request in flight). */
__attribute__((intel_reqd_sub_group_size(8)))
kernel void amo_many_sg8(global long *c, long per, int pe) {
    for (long i = 0; i < per; i++) ishmem_long_atomic_fetch_add(c, 1, pe);
}

kernel void put_one(global char *dst, global const char *src, long nbytes, int pe) {
    ishmem_putmem(dst, src, (size_t)nbytes, pe);
}

kernel void put_wg(global char *dst, global const char *src, long nbytes, int pe) {
    ishmemx_putmem_work_group(dst, src, (size_t)nbytes, pe);
}
