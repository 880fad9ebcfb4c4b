/* Device-initiated OpenSHMEM from OpenCL C kernels (linked at run time with
 * ishmem_device.spv). */
#include "ishmem_device.h"

kernel void put_ring(global long *dst, global const long *src) {
    size_t i = get_global_id(0);
    int me = ishmem_my_pe(), np = ishmem_n_pes();
    ishmem_long_p(dst + i, src[i] + 1000 * me, (me + 1) % np);
}

kernel void barrier_all(void) { ishmem_barrier_all(); }

kernel void count(global long *counter, global uint *mask) {
    ishmem_long_atomic_fetch_add(counter, 1, 0);
    ishmem_uint_atomic_or(mask, 1u << ishmem_my_pe(), 0);
}

kernel void bulk_put(global int *dst, global const int *src, long n) {
    if (get_global_id(0) == 0) {
        int me = ishmem_my_pe(), np = ishmem_n_pes();
        ishmem_int_put(dst, src, (size_t)n, (me + 1) % np);
        ishmem_quiet();
    }
}

kernel void signal_right(global double *dst, global const double *src, long n, global ulong *sig) {
    if (get_global_id(0) == 0) {
        int me = ishmem_my_pe(), np = ishmem_n_pes();
        ishmem_double_put_signal(dst, src, (size_t)n, sig, 7, ISHMEM_SIGNAL_SET, (me + 1) % np);
    }
}

kernel void get_left(global float *dst, global const float *src) {
    size_t i = get_global_id(0);
    int me = ishmem_my_pe(), np = ishmem_n_pes();
    dst[i] = ishmem_float_g(src + i, (me + np - 1) % np);
}

kernel void cswap_lock(global int *lock, global long *total, long rounds) {
    for (long r = 0; r < rounds; r++) {
        while (ishmem_int_atomic_compare_swap(lock, 0, 1, 0) != 0) ;
        long v = ishmem_long_g(total, 0);
        ishmem_long_p(total, v + 1, 0);
        ishmem_quiet();
        ishmem_int_atomic_set(lock, 0, 0);
    }
}

/* A p, a fence, then a posted flag (atomic_set, which does not wait when
 * it goes through the ring): the PE that sees the flag sees the data.
 * Every PE writes to its right neighbour, reads what its left one wrote
 * and acknowledges it, round after round. */
kernel void fence_flag(global long *data, global long *flag, global long *bad, long iters) {
    int me = ishmem_my_pe(), np = ishmem_n_pes();
    int right = (me + 1) % np, left = (me + np - 1) % np;
    for (long i = 1; i <= iters; i++) {
        ishmem_long_p(data + (i % 64), i, right);
        ishmem_fence();
        ishmem_long_atomic_set(flag, i, right);
        ishmem_long_wait_until(flag, ISHMEM_CMP_GE, i);
        if (((volatile global long *)data)[i % 64] != i) (*bad)++;
        ishmem_long_atomic_set(flag + 1, i, left);
        ishmem_long_wait_until(flag + 1, ISHMEM_CMP_GE, i);
    }
}

/* Non-fetching AMOs from one work-item, which do not wait when they go
 * through the ring (the host may send them on together): sums, masks and
 * a set followed by adds on one word, all to the right neighbour. */
kernel void posted_amos(global long *c, long n) {
    int right = (ishmem_my_pe() + 1) % ishmem_n_pes();
    for (long k = 1; k <= n; k++) {
        ishmem_long_atomic_add(c, k, right);
        ishmem_ulong_atomic_xor((global ulong *)(c + 1), (ulong)k, right);
        ishmem_int_atomic_inc((global int *)(c + 2), right);
    }
    ishmem_long_atomic_set(c + 3, 5, right);
    ishmem_long_atomic_add(c + 3, 3, right);
    ishmem_long_atomic_add(c + 3, 4, right);
    ishmem_ulong_atomic_set((global ulong *)(c + 4), 100, right);
    ishmem_ulong_atomic_and((global ulong *)(c + 4), 0x0f, right);
    ishmem_ulong_atomic_or((global ulong *)(c + 4), 0x30, right);
    ishmem_quiet();
}

/* Many requests at once: through the ring (forced-ring mode) 16384
 * work-items' three requests each wrap the 32768-slot ring (not the 1536
 * of device_host's small mode), with flow control and nbi requests. */
kernel void many(global long *counter, global int *slots) {
    size_t i = get_global_id(0);
    int me = ishmem_my_pe(), np = ishmem_n_pes();
    int right = (me + 1) % np;
    ishmem_long_atomic_fetch_add(counter, 1, right);
    int v = (int)i + me;
    slots[i] = v;
    ishmem_int_put_nbi(slots + get_global_size(0) + i, slots + i, 1, right);
    ishmem_quiet();
}

/* Work-group forms: each work-group moves one block together. */
kernel void wg_put(global double *dst, global const double *src, long block) {
    size_t g = get_group_id(0);
    int me = ishmem_my_pe(), np = ishmem_n_pes();
    ishmemx_double_put_work_group(dst + g * block, src + g * block, (size_t)block, (me + 1) % np);
    ishmemx_quiet_work_group();
}

kernel void wg_get_signal(global long *dst, global const long *src, long block, global ulong *sig) {
    size_t g = get_group_id(0);
    int me = ishmem_my_pe(), np = ishmem_n_pes();
    ishmemx_long_get_work_group(dst + g * block, src + g * block, (size_t)block, (me + np - 1) % np);
    ishmemx_putmem_signal_work_group(dst + g * block, dst + g * block, 8, sig, 1, ISHMEM_SIGNAL_ADD, me);
}

/* One work-group per PE: the group barrier is one barrier call per PE. */
kernel void wg_barrier(global long *flag) {
    int me = ishmem_my_pe(), np = ishmem_n_pes();
    if (get_local_linear_id() == 0) ishmem_long_p(flag, me + 1, (me + 1) % np);
    ishmemx_barrier_all_work_group();
    /* after the barrier every PE's flag holds its left neighbour's mark */
    if (get_local_linear_id() == 0 && *flag != (me + np - 1) % np + 1) ishmem_long_p(flag, -1, me);
}

kernel void fill(global long *buf, long base) {
    size_t i = get_global_id(0);
    buf[i] = base + (long)i;
}

/* Device collectives on a team given by the host (one work-item per PE). */
kernel void dev_coll(int team, global long *src, global long *dst, global long *res, long n) {
    int r = ishmem_team_my_pe(team), sz = ishmem_team_n_pes(team);
    for (long i = 0; i < n; i++) src[i] = r * 1000 + i;
    /* Three broadcasts from one root before the fcollect: with sync words
     * in the heap (ISHMEM_DEVICE_SYNC=heap) a member's next low-latency
     * send to the root waits for the root's acknowledgement of the pair's
     * count two back, which a root that received nothing must give too.
     * Each round's last element differs; the last round's is checked.
     * (No loops between the calls: llvm-spirv 14 misorders their blocks.) */
    src[n - 1] += 2000000;
    res[0] = ishmem_long_broadcast(team, dst, src, (size_t)n, sz - 1);
    src[n - 1] -= 1000000;
    res[0] |= ishmem_long_broadcast(team, dst, src, (size_t)n, sz - 1);
    src[n - 1] -= 1000000;
    res[0] |= ishmem_long_broadcast(team, dst, src, (size_t)n, sz - 1);
    res[1] = dst[n - 1];
    /* OpenSHMEM: dest must be ready on every member before any member
     * calls a collective that writes it. With sync words in the heap an
     * fcollect or alltoall pushes into the others' dest at once (no sync
     * of its own), so a member still reading dst is synced with first. */
    ishmem_team_sync(team);
    res[2] = ishmem_long_fcollect(team, dst, src, (size_t)n);
    res[3] = dst[(sz - 1) * n];
    res[4] = ishmem_long_sum_reduce(team, dst, src, (size_t)n);
    res[5] = dst[1];
    for (long i = 0; i < n; i++) src[i] = r + 1;
    res[6] = ishmem_long_prod_reduce(team, src, src, (size_t)n); /* in place */
    res[7] = src[n - 1];
    res[8] = ishmem_long_max_reduce(team, dst, src, 1);
    res[9] = dst[0];
    for (long i = 0; i < sz; i++) src[i] = r * 10 + i;
    ishmem_team_sync(team); /* dst was read above (see the fcollect) */
    res[10] = ishmem_long_alltoall(team, dst, src, 1);
    res[11] = dst[sz - 1];
    res[12] = ishmem_team_sync(team);
    res[13] = ishmem_team_translate_pe(team, sz - 1, ISHMEM_TEAM_WORLD);
    res[14] = ishmem_team_translate_pe(ISHMEM_TEAM_WORLD, ishmem_my_pe(), team);
    res[15] = ishmem_team_translate_pe(team, sz, ISHMEM_TEAM_WORLD); /* out of range: -1 */
}

/* Block-strided put, multi-element waits/tests, nbi AMOs. */
kernel void misc(global long *blk, global const long *bsrc, global int *iv, global long *fetch, global long *cnt,
                 global long *res) {
    int me = ishmem_my_pe(), np = ishmem_n_pes(), right = (me + 1) % np;
    ishmemx_long_ibput(blk, bsrc, 4, 2, 2, 8, right); /* 8 blocks of 2: dest stride 4, source stride 2 */
    ishmem_int_p(iv + 2, 7, right);
    res[0] = (long)ishmem_int_wait_until_any(iv, 4, 0, ISHMEM_CMP_EQ, 7);
    res[1] = ishmem_int_test_all(iv, 4, 0, ISHMEM_CMP_EQ, 0);
    res[2] = (long)ishmem_int_test_any(iv, 4, 0, ISHMEM_CMP_GT, 100);
    global size_t *idx = (global size_t *)(res + 8);
    res[3] = (long)ishmem_int_test_some(iv, 4, idx, 0, ISHMEM_CMP_EQ, 0);
    ishmem_long_atomic_fetch_add_nbi(fetch, cnt, 1, 0);
    ishmem_quiet();
    ishmem_barrier_all();
    res[4] = *fetch;
}

/* Sub-group forms: every sub-group moves one block. */
kernel void sg_put(global int *dst, global const int *src, long block) {
    size_t sg = get_global_id(0) / get_sub_group_size();
    int me = ishmem_my_pe(), np = ishmem_n_pes();
    ishmemx_int_put_sub_group(dst + sg * block, src + sg * block, (size_t)block, (me + 1) % np);
    ishmemx_quiet_sub_group();
}

/* Private and local buffers as the local side of RMA (the routines take
 * generic pointers): each work-item of one group of 64 puts 3 elements from
 * its private memory to the right PE and gets 3 from the left PE into the
 * group's local memory (through the ring, their bytes travel in the
 * messages: the host cannot reach either memory). */
kernel void private_local(global long *dst, global const long *src, global long *out) {
    local long lb[64 * 3];
    size_t i = get_local_id(0);
    int me = ishmem_my_pe(), np = ishmem_n_pes();
    long base = me * 1000 + 500 + (long)(3 * i);
    long priv[3] = {base, base + 1, base + 2}; /* no loops: llvm-spirv 14 */
    ishmem_long_put(dst + 3 * i, priv, 3, (me + 1) % np);
    ishmem_long_get(lb + 3 * i, src + 3 * i, 3, (me + np - 1) % np);
    out[3 * i] = lb[3 * i];
    out[3 * i + 1] = lb[3 * i + 1];
    out[3 * i + 2] = lb[3 * i + 2];
    ishmem_quiet();
}

/* collect with a different count per member (rank r gives r + 1 elements),
 * then in-place inclusive and out-of-place exclusive sum scans. The host
 * fills the sources (loops here trip llvm-spirv 14's block ordering). */
kernel void dev_collect_scan(int team, global long *src, global long *dst, global int *isrc, global int *idst, global long *res) {
    int r = ishmem_team_my_pe(team), sz = ishmem_team_n_pes(team);
    res[0] = ishmem_long_collect(team, dst, src, (size_t)(r + 1));
    res[1] = ishmem_int_sum_exscan(team, idst, isrc, 64);
    res[2] = ishmem_int_sum_inscan(team, isrc, isrc, 64); /* in place */
    res[3] = ishmem_collectmem(team, (global char *)dst + 512, (global const char *)src, (size_t)(8 * (sz - r)));
}

/* 8-bit AMOs on a byte array of PE 0 (each on a 32-bit CAS loop): every
 * work-item adds 1 to byte 1, toggles a bit of byte 2 (which bit depends on
 * the work-item and the PE, so the result is never 0), and PE 0's bytes 0
 * and 3 must stay untouched. */
kernel void schar_amo(global char *b, global long *res) { /* schar is OpenCL char */
    size_t id = get_global_id(0);
    ishmem_schar_atomic_add(b + 1, 1, 0);
    ishmem_schar_atomic_xor(b + 2, (char)(1 << ((id + ishmem_my_pe()) % 7)), 0);
    if (id == 0) {
        char old = ishmem_schar_atomic_compare_swap(b + 3, 5, 9, 0); /* never 5: no change */
        res[0] = old;
        res[1] = ishmem_schar_atomic_fetch(b, 0);
    }
}

/* Device-side argument checks (run only when the test asks for an abort). */
kernel void bad_pe(global long *x) { ishmem_long_p(x, 1, ishmem_n_pes() + 3); }
kernel void bad_addr(global long *x) { ishmem_long_p(x, 1, 0); }
/* Waits for a value nobody stores (lost_in_kernel: its PE must be ended
 * by the watchdog when another PE is lost). */
kernel void wait_forever(global long *x) { ishmem_long_wait_until(x, ISHMEM_CMP_EQ, 42); }
/* Waits until PE 1 stores 5 into one of two words (long_wait_ends): a
 * wait long enough to be recorded for the deadlock report, which ends. */
kernel void wait_any_long(global long *ivars, global long *out) {
    out[0] = (long)ishmem_long_wait_until_any(ivars, 2, 0, ISHMEM_CMP_EQ, 5);
}
/* Waits for a signal nobody sends (kernel_deadlock). */
kernel void wait_signal_forever(global ulong *s) { ishmem_signal_wait_until(s, ISHMEM_CMP_GE, 7); }
/* Collectives of the world team (team handle 0) that members call
 * differently (device_host coll_mismatch_*). */
kernel void coll_bcast(global long *dst, global const long *src, long nelems, long root) {
    ishmem_long_broadcast(0, dst, src, (size_t)nelems, (int)root);
}
kernel void coll_bcast_int(global int *dst, global const int *src, long nelems, long root) {
    ishmem_int_broadcast(0, dst, src, (size_t)nelems, (int)root);
}
kernel void coll_fcollect(global long *dst, global const long *src, long nelems) {
    ishmem_long_fcollect(0, dst, src, (size_t)nelems);
}
kernel void coll_reduce(global long *dst, global const long *src, long nelems) {
    ishmem_long_sum_reduce(0, dst, src, (size_t)nelems);
}
kernel void coll_wg_reduce(global long *dst, global const long *src, long nelems) {
    ishmemx_long_sum_reduce_work_group(0, dst, src, (size_t)nelems);
}

/* Work-group forms of collectives: one group of 64 work-items per PE (a
 * reduction of more elements than work-items, and one of fewer); the
 * broadcast has a bad root and must return -1 on every work-item and do
 * nothing. */
kernel void wg_coll(global long *src, global long *dst, global long *red, global long *res) {
    int np = ishmem_n_pes();
    int r0 = ishmemx_long_sum_reduce_work_group(ISHMEM_TEAM_WORLD, red, src, 256);
    int r1 = ishmemx_long_fcollect_work_group(ISHMEM_TEAM_WORLD, dst, src, 256);
    int r2 = ishmemx_team_sync_work_group(ISHMEM_TEAM_WORLD);
    int r3 = ishmemx_long_broadcast_work_group(ISHMEM_TEAM_WORLD, dst, src, 4, np);
    int r4 = ishmemx_long_sum_reduce_work_group(ISHMEM_TEAM_WORLD, red + 256, src, 7);
    res[get_local_id(0)] = r0 + 10 * r1 + 100 * r2 + 1000 * r3 + 10000 * r4;
}
