/* Every RMA type, element counts doubling 1..65536 with element offsets,
 * single work-item and work-group forms; device-to-device put_signal and
 * fence ordering. Kernels write 0 in err[] when everything checks out. */
#include "ishmem_device.h"

#define VAL(T, pe, i, n) ((T)(((pe) * 37 + (i) * 11 + (n)) % 113 + 1))

#define SWEEP(T, N)                                                                          \
kernel void sweep_##N(global T *sym, global T *src, global T *loc, global long *err, int wg, int phase) { \
    int me = ishmem_my_pe(), np = ishmem_n_pes(), right = (me + 1) % np, left = (me + np - 1) % np; \
    size_t lid = get_local_linear_id();                                                      \
    long n = 1L << (phase / 2);                                                              \
    int off = phase % 2 ? 3 : 0;                                                             \
    if (phase < 0) return;                                                                   \
    /* put my values into the right PE at offset `off` */                                    \
    if (lid == 0) for (long i = 0; i < n; i++) src[i] = VAL(T, me, i, n);                    \
    work_group_barrier(CLK_GLOBAL_MEM_FENCE);                                                \
    if (wg) ishmemx_##N##_put_work_group(sym + off, src, (size_t)n, right);                  \
    else if (lid == 0) ishmem_##N##_put(sym + off, src, (size_t)n, right);                   \
    if (lid == 0) {                                                                          \
        ishmem_quiet();                                                                      \
        ishmem_sync_all();                                                                   \
        for (long i = 0; i < n; i++)                                                         \
            if (sym[off + i] != VAL(T, left, i, n)) { err[0] = 1 + i; err[1] = phase; }      \
    }                                                                                        \
    work_group_barrier(CLK_GLOBAL_MEM_FENCE);                                                \
    /* get the right PE's copy (which holds my values) */                                    \
    if (wg) ishmemx_##N##_get_work_group(loc, sym + off, (size_t)n, right);                  \
    else if (lid == 0) ishmem_##N##_get(loc, sym + off, (size_t)n, right);                   \
    if (lid == 0) {                                                                          \
        for (long i = 0; i < n; i++)                                                         \
            if (loc[i] != VAL(T, me, i, n)) { err[2] = 1 + i; err[3] = phase; }              \
        ishmem_sync_all();                                                                   \
    }                                                                                        \
}

SWEEP(float, float) SWEEP(double, double) SWEEP(char, char) SWEEP(char, schar)
SWEEP(short, short) SWEEP(int, int) SWEEP(long, long) SWEEP(long, longlong)
SWEEP(uchar, uchar) SWEEP(ushort, ushort) SWEEP(uint, uint) SWEEP(ulong, ulong)
SWEEP(ulong, ulonglong) SWEEP(char, int8) SWEEP(short, int16) SWEEP(int, int32)
SWEEP(long, int64) SWEEP(uchar, uint8) SWEEP(ushort, uint16) SWEEP(uint, uint32)
SWEEP(ulong, uint64) SWEEP(ulong, size) SWEEP(long, ptrdiff)

/* Device to device: PE me sends 4096 longs and a signal to the right; the
 * right PE's kernel waits for the signal on the device and checks the data.
 * Then fence ordering: data; fence; flag by p; the receiver sees the data
 * whenever it sees the flag. */
kernel void d2d(global long *buf, global long *src, global ulong *sig, global long *flag, global long *err, long rounds) {
    int me = ishmem_my_pe(), np = ishmem_n_pes(), right = (me + 1) % np, left = (me + np - 1) % np;
    for (long r = 1; r <= rounds; r++) {
        for (long i = 0; i < 4096; i++) src[i] = r * 100000 + me * 1000 + i % 1000;
        if (r % 2) {
            ishmem_long_put_signal(buf, src, 4096, sig, (ulong)r, ISHMEM_SIGNAL_SET, right);
            ishmem_signal_wait_until(sig, ISHMEM_CMP_EQ, (ulong)r);
        } else {
            ishmem_long_put(buf, src, 4096, right);
            ishmem_fence();
            ishmem_long_p(flag, r, right);
            ishmem_long_wait_until(flag, ISHMEM_CMP_EQ, r);
        }
        for (long i = 0; i < 4096; i++)
            if (buf[i] != r * 100000 + left * 1000 + i % 1000) { err[4] = 1 + i; err[5] = r; }
        ishmem_sync_all(); /* everyone read before the next round overwrites */
    }
}
