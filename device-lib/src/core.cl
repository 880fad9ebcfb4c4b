/* Non-typed device routines and the state install kernel. */
#include "core.h"

ISHMEMI_VAR ishmemx_device_state_t *ishmemi_state;

#ifndef __CUDACC__
kernel void ishmemi_install_state(global ishmemx_device_state_t *s) {
    ishmemi_state = s;
}
#endif

ISHMEMI_API int ishmem_my_pe(void) { return ISHMEMI_STATE->my_pe; }
ISHMEMI_API int ishmem_n_pes(void) { return ISHMEMI_STATE->n_pes; }

ISHMEMI_API void *ishmem_ptr(const void *dest, int pe) { return ishmemi_route_ptr(dest, pe); }

/* The load/store path completes every operation before returning, and the
 * single proxy serves ring requests in order: fence orders memory only;
 * quiet also waits for outstanding ring requests (none: no round trip). */
ISHMEMI_API void ishmem_fence(void) {
    ishmemi_fence_all();
    ishmemi_ring_fence();
}
ISHMEMI_API void ishmem_quiet(void) { ishmemi_ring_quiet(); ishmemi_fence_all(); }
ISHMEMI_API void ishmem_sync_all(void) { ishmemi_sync_world(); }
ISHMEMI_API void ishmem_barrier_all(void) {
    ishmem_quiet();
    /* quiet's fence orders what the sync's flags release */
    if (ishmemi_sync_in_heap())
        ishmemi_sync_team_fenced(0, ISHMEMI_SIG_SYNC);
    else
        ishmemi_sync_world();
}

ISHMEMI_API void ishmem_putmem(void *dest, const void *source, size_t nelems, int pe) {
    ishmemi_put_bytes(dest, source, nelems, pe, 0);
}
ISHMEMI_API void ishmem_getmem(void *dest, const void *source, size_t nelems, int pe) {
    ishmemi_get_bytes(dest, source, nelems, pe, 0);
}
ISHMEMI_API void ishmem_putmem_nbi(void *dest, const void *source, size_t nelems, int pe) {
    ishmemi_put_bytes(dest, source, nelems, pe, 1);
}
ISHMEMI_API void ishmem_getmem_nbi(void *dest, const void *source, size_t nelems, int pe) {
    ishmemi_get_bytes(dest, source, nelems, pe, 1);
}

ISHMEMI_API void ishmem_putmem_signal(void *dest, const void *source, size_t nelems,
                          ulong *sig_addr, ulong signal, int sig_op, int pe) {
    ishmemi_route_put_signal(ISHMEMI_TH, dest, source, nelems, sig_addr, signal, sig_op, pe);
}
ISHMEMI_API ulong ishmem_signal_fetch(const ulong *sig_addr) {
    return (ulong)ishmemi_load64((void *)sig_addr);
}
ISHMEMI_API ulong ishmem_signal_wait_until(ulong *sig_addr, int cmp, ulong cmp_value) {
    ulong v;
    ISHMEMI_WAIT_LOOP(!ISHMEMI_CMP(cmp, v = (ulong)ishmemi_load64(sig_addr), cmp_value), ;,
                      ISHMEMI_WAIT_WHAT(ISHMEMI_WAIT_SIGNAL, ISHMEMI_ELEM_U64, cmp), sig_addr, cmp_value);
    return v;
}

/* Work-group forms of the non-typed routines (Intel SHMEM's
 * ishmemx_*_work_group; the group is the calling work-group). */
ISHMEMI_API void ishmemx_putmem_work_group(void *dest, const void *source, size_t nelems, int pe) {
    ishmemi_wg_put_bytes(dest, source, nelems, pe, 0);
}
ISHMEMI_API void ishmemx_getmem_work_group(void *dest, const void *source, size_t nelems, int pe) {
    ishmemi_wg_get_bytes(dest, source, nelems, pe, 0);
}
ISHMEMI_API void ishmemx_putmem_nbi_work_group(void *dest, const void *source, size_t nelems, int pe) {
    ishmemi_wg_put_bytes(dest, source, nelems, pe, 1);
}
ISHMEMI_API void ishmemx_getmem_nbi_work_group(void *dest, const void *source, size_t nelems, int pe) {
    ishmemi_wg_get_bytes(dest, source, nelems, pe, 1);
}
ISHMEMI_API void ishmemx_putmem_signal_work_group(void *dest, const void *source, size_t nelems,
                                      ulong *sig_addr, ulong signal, int sig_op, int pe) {
    ishmemi_route_put_signal(ISHMEMI_WG, dest, source, nelems, sig_addr, signal, sig_op, pe);
}
ISHMEMI_API void ishmemx_fence_work_group(void) {
    work_group_barrier(CLK_GLOBAL_MEM_FENCE);
    if (get_local_linear_id() == 0) ishmem_fence();
    work_group_barrier(CLK_GLOBAL_MEM_FENCE);
}
ISHMEMI_API void ishmemx_quiet_work_group(void) {
    work_group_barrier(CLK_GLOBAL_MEM_FENCE);
    if (get_local_linear_id() == 0) ishmem_quiet();
    work_group_barrier(CLK_GLOBAL_MEM_FENCE);
}
ISHMEMI_API void ishmemx_barrier_all_work_group(void) {
    work_group_barrier(CLK_GLOBAL_MEM_FENCE);
    if (get_local_linear_id() == 0) ishmem_barrier_all();
    work_group_barrier(CLK_GLOBAL_MEM_FENCE);
}
ISHMEMI_API void ishmemx_sync_all_work_group(void) {
    work_group_barrier(CLK_GLOBAL_MEM_FENCE);
    if (get_local_linear_id() == 0) ishmem_sync_all();
    work_group_barrier(CLK_GLOBAL_MEM_FENCE);
}

#ifndef __CUDACC__
/* The kernels behind the host's ishmemx_*_on_queue routines (generated:
 * runtime/src/device/mod.rs, QUEUE_KERNELS). */
#include "queue_kernels.h"

/* The kernel a GPU device's runtime launches for a host AMO on device
 * memory (one work-item): atomic with device code's AMOs on the same word,
 * which the host's own atomics on GPU memory are not. Opcodes are the
 * runtime's AmoOp values; `out` receives the old value (0 for set). 16-bit
 * values: a compare-and-swap loop on the aligned 32-bit word that holds
 * them (little-endian lanes). */
kernel void ishmemi_host_amo(ulong addr, uint size, uint op, ulong operand, ulong cond, global ulong *out) {
    void *p = (void *)addr;
    ulong old;
    if (size == 8) {
        old = (ulong)ishmemi_amo64(p, (int)op, (long)operand, (long)cond);
    } else if (size == 4) {
        old = (ulong)(uint)ishmemi_amo32(p, (int)op, (int)operand, (int)cond);
    } else if (size == 1) {
        old = (ulong)(uchar)ishmemi_amo8(p, (int)op, (char)operand, (char)cond);
    } else {
        ishmemi_a32 *w = (ishmemi_a32 *)(addr & ~(ulong)3);
        int shift = (int)(addr & 3) * 8;
        uint lane = 0xffffu;
        int cur = atomic_load_explicit(w, memory_order_seq_cst, ISHMEMI_SCOPE);
        for (;;) {
            uint o = ((uint)cur >> shift) & lane, v = (uint)operand & lane, n;
            if (op == ISHMEMI_FETCH) break;
            switch (op) {
            case ISHMEMI_CSWAP: n = o == ((uint)cond & lane) ? v : o; break;
            case ISHMEMI_FADD: n = (o + v) & lane; break;
            case ISHMEMI_FAND: n = o & v; break;
            case ISHMEMI_FOR: n = o | v; break;
            case ISHMEMI_FXOR: n = o ^ v; break;
            default: n = v; break; /* set, swap */
            }
            int nw = (int)(((uint)cur & ~(lane << shift)) | (n << shift));
            if (nw == cur || atomic_compare_exchange_weak_explicit(w, &cur, nw, memory_order_seq_cst,
                                                                  memory_order_seq_cst, ISHMEMI_SCOPE))
                break;
        }
        old = ((uint)cur >> shift) & lane;
    }
    *out = op == ISHMEMI_SET ? 0 : old;
}
#endif

/* Teams and the non-typed collectives. */
ISHMEMI_API int ishmem_team_my_pe(int team) {
    const ishmemi_team_t *t = ishmemi_get_team(team);
    return t ? t->my_rank : -1;
}
ISHMEMI_API int ishmem_team_n_pes(int team) {
    const ishmemi_team_t *t = ishmemi_get_team(team);
    return t ? t->size : -1;
}
ISHMEMI_API int ishmem_team_translate_pe(int src_team, int src_pe, int dest_team) {
    const ishmemi_team_t *s = ishmemi_get_team(src_team), *d = ishmemi_get_team(dest_team);
    if (!s || !d || src_pe < 0 || src_pe >= s->size) return -1;
    int off = ishmemi_member(s, src_pe) - d->start;
    if (d->stride == 0) return off == 0 ? 0 : -1;
    if (off < 0) return -1;
    int q = off / d->stride; /* (no %: llvm-spirv 14 cannot translate the freeze -Os makes of both) */
    return q * d->stride == off && q < d->size ? q : -1;
}
ISHMEMI_API int ishmem_team_sync(int team) {
    if (!ishmemi_get_team(team)) return -1;
    ishmemi_sync_team(team, ISHMEMI_SIG_SYNC);
    return 0;
}
ISHMEMI_API int ishmem_broadcastmem(int team, void *dest, const void *source, size_t nelems, int root) {
    return ishmemi_broadcast_bytes(team, dest, source, nelems, root);
}
ISHMEMI_API int ishmem_fcollectmem(int team, void *dest, const void *source, size_t nelems) {
    return ishmemi_fcollect_bytes(team, dest, source, nelems);
}
ISHMEMI_API int ishmem_collectmem(int team, void *dest, const void *source, size_t nelems) {
    return ishmemi_collect_bytes(team, dest, source, nelems, 1);
}
ISHMEMI_API int ishmem_alltoallmem(int team, void *dest, const void *source, size_t nelems) {
    return ishmemi_alltoall_bytes(team, dest, source, nelems);
}

/* Work-group forms of the team sync and the byte collectives. */
ISHMEMI_API int ishmemx_team_sync_work_group(int team) { ISHMEMI_WG_COLL(team, 0, ishmem_team_sync(team)) }
ISHMEMI_API int ishmemx_broadcastmem_work_group(int team, void *dest, const void *source, size_t nelems, int root) {
    return ishmemi_wg_broadcast_bytes(team, dest, source, nelems, root);
}
ISHMEMI_API int ishmemx_collectmem_work_group(int team, void *dest, const void *source, size_t nelems) {
    ISHMEMI_WG_COLL(team, 0, ishmemi_collect_bytes(team, dest, source, nelems, 1))
}
ISHMEMI_API int ishmemx_fcollectmem_work_group(int team, void *dest, const void *source, size_t nelems) {
    return ishmemi_wg_fcollect_bytes(team, dest, source, nelems);
}
ISHMEMI_API int ishmemx_alltoallmem_work_group(int team, void *dest, const void *source, size_t nelems) {
    return ishmemi_wg_alltoall_bytes(team, dest, source, nelems);
}

/* Sub-group forms (every work-item of the calling sub-group calls them). */
ISHMEMI_API void ishmemx_putmem_sub_group(void *dest, const void *source, size_t nelems, int pe) {
    ishmemi_sg_put_bytes(dest, source, nelems, pe, 0);
}
ISHMEMI_API void ishmemx_getmem_sub_group(void *dest, const void *source, size_t nelems, int pe) {
    ishmemi_sg_get_bytes(dest, source, nelems, pe, 0);
}
ISHMEMI_API void ishmemx_putmem_nbi_sub_group(void *dest, const void *source, size_t nelems, int pe) {
    ishmemi_sg_put_bytes(dest, source, nelems, pe, 1);
}
ISHMEMI_API void ishmemx_getmem_nbi_sub_group(void *dest, const void *source, size_t nelems, int pe) {
    ishmemi_sg_get_bytes(dest, source, nelems, pe, 1);
}
ISHMEMI_API void ishmemx_putmem_signal_sub_group(void *dest, const void *source, size_t nelems,
                                      ulong *sig_addr, ulong signal, int sig_op, int pe) {
    ishmemi_route_put_signal(ISHMEMI_SG, dest, source, nelems, sig_addr, signal, sig_op, pe);
}
/* The sub-group's leader runs `CALL` between sub-group barriers. */
#define ISHMEMI_SG_ONE(CALL)                             \
    sub_group_barrier(CLK_GLOBAL_MEM_FENCE);             \
    if (get_sub_group_local_id() == 0) CALL;             \
    sub_group_barrier(CLK_GLOBAL_MEM_FENCE);
ISHMEMI_API void ishmemx_quiet_sub_group(void) { ISHMEMI_SG_ONE(ishmem_quiet()) }
ISHMEMI_API void ishmemx_fence_sub_group(void) { ISHMEMI_SG_ONE(ishmem_fence()) }
ISHMEMI_API void ishmemx_barrier_all_sub_group(void) { ISHMEMI_SG_ONE(ishmem_barrier_all()) }
ISHMEMI_API void ishmemx_sync_all_sub_group(void) { ISHMEMI_SG_ONE(ishmem_sync_all()) }
