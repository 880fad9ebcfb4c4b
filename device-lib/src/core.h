/* The portable core of the device library: address translation, copies,
 * comparisons, the barrier over the node's control segment. Written against
 * the target header's names only. */
#ifndef ISHMEMI_CORE_H
#define ISHMEMI_CORE_H

#ifdef __CUDACC__
#include "target_cuda.h"
#else
#include "target_opencl.h"
#endif
#include "device_state.h"

/* Targets without cheaper forms read the quiet words with acquire loads
 * and take the library's AMOs for the user's (see target_cuda.h). */
#ifndef ISHMEMI_HAVE_PEEK
#define ishmemi_peek64(p) ishmemi_load64(p)
#endif
#ifndef ISHMEMI_NOINLINE
#define ISHMEMI_NOINLINE ISHMEMI_INLINE
#endif
/* A path kept out of line because it is rare (a failed check, a group's
 * request through the ring) or its work dwarfs a call (a group copy of more
 * than one piece a member): the hot path it branches from stays small. On
 * CUDA a group put of a few KiB is a fixed cost per call, and these paths
 * inlined into it about doubled that cost (0.58 against 0.3 us a block-form
 * call, 32 blocks of 1024 threads on H200s); on the CPU device's OpenCL
 * runtime they were most of the vectorizer's work when a program links
 * (the device test's kernels: 53 s, now 15 s). */
#ifndef ISHMEMI_COLD
#define ISHMEMI_COLD ISHMEMI_NOINLINE
#endif
/* The device syncs' loops over a team's members (ishmemi_load_pairs,
 * ishmemi_await_others) take them ISHMEMI_BATCH at a time in unrolled
 * inner loops, so that their loads are in flight together: one
 * member after another cost a memory latency each (a GPU issues in order
 * and waits where a loaded value is first used), and 4 PEs' syncs and
 * small collectives ran about 1 us a member slower than 2 PEs' on H200s. */
#ifndef ISHMEMI_UNROLL
#define ISHMEMI_UNROLL
#endif
#define ISHMEMI_BATCH 4
/* The small (LL) collectives share a block's work-items among the other
 * members and load their counts and words ISHMEMI_BATCH at a time too
 * (ishmemi_ll_counts, ishmemi_ll_send_all, ishmemi_ll_recv_all,
 * ISHMEMI_REDUCE_LL). A team of two keeps the plain one-member path: the
 * shared one was 4-22% slower there on H200s. */
#define ISHMEMI_LL_PAIR(t) ((t)->size == 2)
#ifndef ISHMEMI_HAVE_OWN_WORDS
#define ishmemi_own_load64(p) ishmemi_load64(p)
#define ishmemi_own_store64(p, v) ishmemi_store64(p, v)
#define ishmemi_fence_acquire() ishmemi_fence_all()
#define ishmemi_own_load2(p, a, b) \
    (*(a) = (ulong)ishmemi_load64(p), *(b) = (ulong)ishmemi_load64((ulong *)(p) + 1))
#define ishmemi_own_store2(p, a, b) \
    (ishmemi_store64((p), (long)(a)), ishmemi_store64((ulong *)(p) + 1, (long)(b)))
#define ishmemi_ll_store(p, v) ishmemi_store64((p), (long)(v))
#define ishmemi_fence_release() ishmemi_fence_all()
#define ishmemi_store_relaxed64(p, v) ishmemi_store64((p), (v))
#define ishmemi_ll_load(p) ((ulong)ishmemi_load64((void *)(p)))
#endif
#ifndef ISHMEMI_HAVE_SIGNAL_OP
#define ishmemi_signal_op(p, op, v) ((void)ishmemi_amo64((p), (op), (v), 0))
#endif
#ifndef ISHMEMI_HAVE_USER_AMO
#define ishmemi_user_amo32 ishmemi_amo32
#define ishmemi_user_amo64 ishmemi_amo64
#endif

/* Installed once per program by the runtime (OpenCL: the kernel
 * ishmemi_install_state; CUDA: the library's registered install hook). */
extern ISHMEMI_VAR ishmemx_device_state_t *ishmemi_state;

/* How device code reads the state and its peer tables. A target may keep
 * copies where reads are cheapest; by default through the installed
 * pointer. CUDA: copies in constant memory (installed by the library's
 * hook, cuda/ishmem_device.cu): the constant cache serves them, and the
 * system-scope fences of quiet and the syncs, which invalidate the L1,
 * leave it alone, so a call after a quiet does not go to L2 for them. The
 * tables' first ISHMEMI_CONST_PES entries are there. */
#ifdef __CUDACC__
#define ISHMEMI_CONST_PES 256
extern __constant__ ishmemx_device_state_t ishmemi_cstate;
extern __constant__ ulong ishmemi_cpeer_base[ISHMEMI_CONST_PES];
extern __constant__ uchar ishmemi_cpeer_local[ISHMEMI_CONST_PES];
#define ISHMEMI_STATE (&ishmemi_cstate)
#define ISHMEMI_PEER_BASE(pe) \
    ((uint)(pe) < ISHMEMI_CONST_PES ? ishmemi_cpeer_base[pe] : ((const ulong *)ishmemi_cstate.peer_heap_base)[pe])
#define ISHMEMI_PEER_LOCAL(pe) \
    ((uint)(pe) < ISHMEMI_CONST_PES ? ishmemi_cpeer_local[pe] : ((const uchar *)ishmemi_cstate.peer_is_local)[pe])
#endif
#ifndef ISHMEMI_STATE
#define ISHMEMI_STATE ishmemi_state
#endif
#ifndef ISHMEMI_PEER_BASE
#define ISHMEMI_PEER_BASE(pe) (((ulong *)ISHMEMI_STATE->peer_heap_base)[pe])
#define ISHMEMI_PEER_LOCAL(pe) (((uchar *)ISHMEMI_STATE->peer_is_local)[pe])
#endif

/* Address of symmetric `sym` on `pe`, for loads and stores from here. */
ISHMEMI_INLINE char *ishmemi_peer(const void *sym, int pe) {
    return (char *)(ISHMEMI_PEER_BASE(pe) + ((ulong)sym - ISHMEMI_STATE->heap_base));
}

/* Bulk copy: the widest words both ends' alignment allows (16, 8 or 4
 * bytes), then bytes: an aligned 8-byte put is one store. */
ISHMEMI_INLINE void ishmemi_copy(char *dst, const char *src, size_t n) {
    size_t i = 0;
    ulong a = (ulong)dst | (ulong)src;
    if ((a & 15) == 0)
        for (; i + 16 <= n; i += 16) *(long2 *)(dst + i) = *(const long2 *)(src + i);
    if ((a & 7) == 0)
        for (; i + 8 <= n; i += 8) *(long *)(dst + i) = *(const long *)(src + i);
    if ((a & 3) == 0)
        for (; i + 4 <= n; i += 4) *(int *)(dst + i) = *(const int *)(src + i);
    for (; i < n; i++) dst[i] = src[i];
}

ISHMEMI_INLINE void ishmemi_strided(char *dst, long dst_stride, const char *src,
                                   long src_stride, size_t elem, size_t nelems) {
    for (size_t i = 0; i < nelems; i++)
        ishmemi_copy(dst + (long)i * dst_stride * (long)elem, src + (long)i * src_stride * (long)elem, elem);
}

/* `a` compared with `b` by the API's operator `cmp` (ISHMEMI_CMP_LE when
 * none of the others: callers check `cmp` where the API asks them to). */
#define ISHMEMI_CMP(cmp, a, b)                                                                            \
    ((cmp) == ISHMEMI_CMP_EQ   ? (a) == (b)                                                               \
     : (cmp) == ISHMEMI_CMP_NE ? (a) != (b)                                                               \
     : (cmp) == ISHMEMI_CMP_GT ? (a) > (b)                                                                \
     : (cmp) == ISHMEMI_CMP_GE ? (a) >= (b)                                                               \
     : (cmp) == ISHMEMI_CMP_LT ? (a) < (b)                                                                \
                               : (a) <= (b))

/* ----- the reverse-offload ring: requests the device's loads and stores
 * cannot serve go to the host proxy (which PE and operation take it is
 * decided in the routing section, below) ----- */

ISHMEMI_INLINE char *ishmemi_ring(void) { return (char *)ISHMEMI_STATE->ring; }

/* The ring protocol (runtime/src/ring.rs says it in full): tickets from
 * quiet word 0 (the memory the device reaches fastest), messages validated
 * by a check word instead of ordered by a fence, completions validated the
 * same way, flow control that reads host memory only when the ring may be
 * full (quiet word 3 keeps a hint of the server's `completed`). */

/* Targets without their own forms (OpenCL): volatile accesses (relaxed
 * atomics are calls on Intel's CPU runtime), the sequence a release store,
 * one work-item a ticket. */
#ifndef ISHMEMI_HAVE_RING_PRIMS
ISHMEMI_INLINE ulong ishmemi_ring_rd64(void *p) { return *(volatile ulong *)p; }
ISHMEMI_INLINE void ishmemi_ring_wr64(void *p, ulong v) { *(volatile ulong *)p = v; }
/* The sequence, last: a release store costs nothing more on the CPU device. */
ISHMEMI_INLINE void ishmemi_ring_publish64(void *p, ulong v) {
    atomic_store_explicit((ishmemi_a64 *)p, (long)v, memory_order_release, ISHMEMI_SCOPE);
}
/* The check, then the value, both plain volatile loads (as the ring's
 * other polls of host memory, on the CPU and ze devices alike): the check
 * word validates the pair (a value older than its check never agrees
 * with it), so no acquire is needed (a get into device memory and quiet
 * fence after the wait); Intel's CPU runtime made an acquire load a
 * locked instruction, one per work-item per poll. */
ISHMEMI_INLINE void ishmemi_ring_rd2(void *p, ulong *a, ulong *b) {
    *b = *(volatile ulong *)((char *)p + 8);
    *a = *(volatile ulong *)p;
}
/* A ticket from `tickets` (the host learns of it from the message). */
ISHMEMI_INLINE ulong ishmemi_ring_claim(void *tickets) {
    return (ulong)atomic_fetch_add_explicit((ishmemi_a64 *)tickets, 1, memory_order_relaxed, ISHMEMI_SCOPE);
}
#endif

/* Between polls of host memory in the ring's waits: a few polls at once
 * (a round trip's worth), then a pause that doubles up to 2 us, so
 * thousands of waiting threads do not flood the bus with reads of lines
 * the host is writing. */
#ifndef ISHMEMI_RING_PAUSE
#define ISHMEMI_RING_PAUSE(ns) ((void)(ns))
#endif
#define ISHMEMI_RING_BACKOFF(polls, ns)                   \
    do {                                                  \
        if (++(polls) > 4) {                              \
            ISHMEMI_RING_PAUSE(ns);                       \
            if ((ns) < 2048) (ns) <<= 1;                  \
        }                                                 \
    } while (0)

#define ISHMEMI_RING_MIX 0x9e3779b97f4a7c15UL
ISHMEMI_INLINE ulong ishmemi_ring_mix(ulong h, ulong w) {
    ulong x = (h ^ w) * ISHMEMI_RING_MIX;
    return x ^ (x >> 32);
}
/* ring::msg_check and ring::cpl_check (runtime/src/ring.rs). */
ISHMEMI_INLINE ulong ishmemi_ring_check(ulong dest, ulong source, ulong value, ulong cond, ulong sig, ulong meta,
                                        ulong seq) {
    ulong h = ishmemi_ring_mix(ISHMEMI_RING_MIX, seq);
    h = ishmemi_ring_mix(h, dest);
    h = ishmemi_ring_mix(h, source);
    h = ishmemi_ring_mix(h, value);
    h = ishmemi_ring_mix(h, cond);
    h = ishmemi_ring_mix(h, sig);
    return ishmemi_ring_mix(h, meta);
}
ISHMEMI_INLINE ulong ishmemi_ring_cpl_check(ulong value, ulong seq) {
    return ishmemi_ring_mix(ishmemi_ring_mix(ISHMEMI_RING_MIX, seq), value);
}

/* For t >= SLOTS: slot t's previous lap (ticket t - SLOTS) may not have
 * been read by the server yet: the hint (quiet word 3) is behind. Reads
 * the server's `completed` count (host memory) and keeps it as the new
 * hint; when even that is behind (a whole lap outstanding), waits about
 * as long as the server takes for the requests ahead of it
 * (ISHMEMI_RING_ROOM_NS each, up to 262 us), then polls the slot's own
 * `taken` mark until the server has read ticket t - SLOTS's message.
 * This waits for the server alone, never for another work-item (the
 * server keeps the slot's completion until its waiter has read it, the
 * ack), and thousands of senders waiting for a full ring poll their own
 * slots' words, not one they all share. */
#define ISHMEMI_RING_ROOM_NS 32
ISHMEMI_NOINLINE void ishmemi_ring_room(ulong t) {
    char *ring = ishmemi_ring();
    ulong c = ishmemi_ring_rd64(ring + ISHMEMI_RING_COMPLETED);
    ishmemi_own_store64((char *)ISHMEMI_STATE->quiet_words + 24, (long)c);
    if (c + ISHMEMI_RING_SLOTS > t) return;
    ulong ahead = t + 1 - ISHMEMI_RING_SLOTS - c;
    ISHMEMI_RING_PAUSE(ahead < 8192 ? (uint)ahead * ISHMEMI_RING_ROOM_NS : 8192u * ISHMEMI_RING_ROOM_NS);
    char *taken = ring + ISHMEMI_RING_TAKEN + (t % ISHMEMI_RING_SLOTS) * 8;
    uint polls = 0, ns = 128;
    while (ishmemi_ring_rd64(taken) <= t - ISHMEMI_RING_SLOTS) ISHMEMI_RING_BACKOFF(polls, ns);
}

/* Claims a ticket, makes sure its slot is free (flow control: a host read
 * only when the hint says the ring may be full), writes the message with
 * its check word and sequence. Requests whose data the host reads from
 * device memory (PUT, PUT_SIGNAL) and team-sync flag stores (CTRL_SET)
 * order this work-item's earlier stores first; the others carry all they
 * need in the message. */
ISHMEMI_INLINE ulong ishmemi_ring_send(uint op, ulong dest, ulong source, ulong value, ulong cond, ulong sig,
                                       int pe, uint amo, uint flags) {
    char *ring = ishmemi_ring();
    char *q = (char *)ISHMEMI_STATE->quiet_words;
    if (op == ISHMEMI_RING_OP_PUT || op == ISHMEMI_RING_OP_PUT_SIGNAL || op == ISHMEMI_RING_OP_CTRL_SET)
        ishmemi_fence_release();
    ulong t = ishmemi_ring_claim(q);
    if (t >= ISHMEMI_RING_SLOTS && t - ISHMEMI_RING_SLOTS >= (ulong)ishmemi_own_load64(q + 24)) ishmemi_ring_room(t);
    char *m = ring + ISHMEMI_RING_MSGS + (t % ISHMEMI_RING_SLOTS) * ISHMEMI_RING_MSG_SIZE;
    ulong meta = (ulong)(uint)pe | (ulong)(op & 0xff) << 32 | (ulong)(amo & 0xffff) << 40 | (ulong)(flags & 0xff) << 56;
    ulong seq = t + 1;
    ishmemi_ring_wr64(m + ISHMEMI_RING_MSG_DEST, dest);
    ishmemi_ring_wr64(m + ISHMEMI_RING_MSG_SOURCE, source);
    ishmemi_ring_wr64(m + ISHMEMI_RING_MSG_VALUE, value);
    ishmemi_ring_wr64(m + ISHMEMI_RING_MSG_COND, cond);
    ishmemi_ring_wr64(m + ISHMEMI_RING_MSG_SIG, sig);
    ishmemi_ring_wr64(m + ISHMEMI_RING_MSG_META, meta);
    ishmemi_ring_wr64(m + ISHMEMI_RING_MSG_CHECK, ishmemi_ring_check(dest, source, value, cond, sig, meta, seq));
    ishmemi_ring_publish64(m + ISHMEMI_RING_MSG_SEQUENCE, seq);
    return t;
}

/* Waits for ticket t's completion (its value and check agreeing: no fence),
 * reads its value and frees the slot: the ack (which the server may be
 * waiting for before it writes the slot's next completion) is stored
 * right after the test of the value read, so it cannot overtake the read. The server has taken every ticket up to t: a waiter
 * whose ticket is a multiple of RING_SLOTS / 8 keeps the flow-control
 * hint (quiet word 3) fresh with it, so senders seldom read host memory
 * (a racing store of a smaller count only makes the hint older). */
ISHMEMI_INLINE ulong ishmemi_ring_wait(ulong t) {
    char *ring = ishmemi_ring();
    char *c = ring + ISHMEMI_RING_COMPLETIONS + (t % ISHMEMI_RING_SLOTS) * ISHMEMI_RING_COMPLETION_SIZE;
    ulong v, check, seq = t + 1;
    uint polls = 0, ns = 128;
    for (;;) {
        ishmemi_ring_rd2(c + ISHMEMI_RING_CPL_VALUE, &v, &check);
        if (check == ishmemi_ring_cpl_check(v, seq)) {
            ishmemi_ring_wr64(ring + ISHMEMI_RING_ACKS + (t % ISHMEMI_RING_SLOTS) * 8, seq);
            if (seq % (ISHMEMI_RING_SLOTS / 8) == 0)
                ishmemi_own_store64((char *)ISHMEMI_STATE->quiet_words + 24, (long)seq);
            return v;
        }
        ISHMEMI_RING_BACKOFF(polls, ns);
    }
}

/* Quiet: every ticket claimed so far is complete. Quiet word 0 counts the
 * tickets, word 1 a number known complete: when they agree, nothing is
 * outstanding and the ring's counters in host memory are not read at all.
 * Otherwise send the host's quiet (RING_OP_QUIET, below) and wait for it,
 * and record the count. (A racing quiet may record a smaller count: later
 * quiets only look again.) */
ISHMEMI_INLINE void ishmemi_ring_quiet(void) {
    /* With every PE reached by loads and stores, no ring request is ever
     * left outstanding (copy-engine transfers are waited for). */
    if (ISHMEMI_STATE->only_local) return;
    char *q = (char *)ISHMEMI_STATE->quiet_words;
    long posted = ishmemi_peek64(q);
    if (ishmemi_peek64(q + 8) >= posted) return;
    /* One more request, the host's quiet: the server takes tickets in
     * order, so when it completes every earlier request has been served,
     * and what the proxy posted for them to PEs of other nodes (puts to
     * their heaps, non-fetching AMOs) is complete there, as OpenSHMEM's
     * quiet requires (a third PE may read it next). */
    ulong t = ishmemi_ring_send(ISHMEMI_RING_OP_QUIET, 0, 0, 0, 0, 0, ISHMEMI_STATE->my_pe, 0, 0);
    ishmemi_ring_wait(t);
    ishmemi_fence_acquire(); /* what nbi gets brought in is visible */
    ishmemi_own_store64(q + 8, (long)(t + 1));
}

/* ----- long waits, named for the host's deadlock report -----
 * A wait of the device API (wait_until and its vector forms,
 * signal_wait_until) whose condition has not held for ISHMEMI_WAIT_LONG
 * polls records
 * itself in the ring's wait words (host memory, runtime/src/ring.rs): the
 * number of work-items in long waits, an epoch that changes whenever one
 * starts or ends, and what the latest one waits for (`what`: a WAIT_* code
 * | ELEM_* code << 8 | comparison << 16; the address; the value). The
 * host's watchdog reads them: a PE whose kernels wait while nothing of
 * its device waits and ring requests changes is named in the deadlock
 * report. A wait that ends sooner pays one counter; recording is out of
 * line. The
 * library's own waits through the device sync words (barriers, syncs and
 * collective steps on GPUs) do not count: there the counter cost 3-8% of
 * a device barrier's and a small collective's time on 2 H200s
 * (docs/device.md), and the watchdog infers their waits from the words
 * instead; team syncs through the control segment do (WAIT_TEAM_SYNC). */
#define ISHMEMI_WAIT_LONG (1u << 20)
ISHMEMI_COLD void ishmemi_wait_begin(uint what, ulong addr, ulong value) {
    char *ring = ishmemi_ring();
    ishmemi_amo64(ring + ISHMEMI_RING_WAIT_COUNT, ISHMEMI_FADD, 1, 0);
    ishmemi_ring_wr64(ring + ISHMEMI_RING_WAIT_WHAT, what);
    ishmemi_ring_wr64(ring + ISHMEMI_RING_WAIT_ADDR, addr);
    ishmemi_ring_wr64(ring + ISHMEMI_RING_WAIT_VALUE, value);
    ishmemi_amo64(ring + ISHMEMI_RING_WAIT_EPOCH, ISHMEMI_FADD, 1, 0);
}
ISHMEMI_COLD void ishmemi_wait_end(void) {
    char *ring = ishmemi_ring();
    ishmemi_amo64(ring + ISHMEMI_RING_WAIT_COUNT, ISHMEMI_FADD, -1, 0);
    ishmemi_amo64(ring + ISHMEMI_RING_WAIT_EPOCH, ISHMEMI_FADD, 1, 0);
}
/* Runs `poll` (a statement) while `busy` holds, recording the wait once it
 * lasts. On CUDA the polls that count hold no call (a call in the loop
 * costs a convergence barrier per poll: 0.09 us more a device barrier on
 * H200s); the SPIR-V targets keep one loop whose count stops at the limit
 * (llvm-spirv 14 misorders the blocks of two loops in a row, or of nested
 * ones). */
#ifdef __CUDACC__
#define ISHMEMI_WAIT_LOOP(busy, poll, what, addr, value)                \
    do {                                                               \
        uint ishmemi_polls_ = ISHMEMI_WAIT_LONG;                       \
        while ((busy) && --ishmemi_polls_) {                           \
            poll;                                                      \
        }                                                              \
        if (ishmemi_polls_ == 0) {                                     \
            ishmemi_wait_begin((what), (ulong)(addr), (ulong)(value)); \
            while (busy) {                                             \
                poll;                                                  \
            }                                                          \
            ishmemi_wait_end();                                        \
        }                                                              \
    } while (0)
#else
#define ISHMEMI_WAIT_LOOP(busy, poll, what, addr, value)                                      \
    do {                                                                                     \
        uint ishmemi_polls_ = 0;                                                             \
        while (busy) {                                                                       \
            poll;                                                                            \
            if (ishmemi_polls_ < ISHMEMI_WAIT_LONG && ++ishmemi_polls_ == ISHMEMI_WAIT_LONG) \
                ishmemi_wait_begin((what), (ulong)(addr), (ulong)(value));                   \
        }                                                                                    \
        if (ishmemi_polls_ == ISHMEMI_WAIT_LONG) ishmemi_wait_end();                         \
    } while (0)
#endif
/* The `what` word of a wait on an element of kind `elem` with `cmp`. */
#define ISHMEMI_WAIT_WHAT(code, elem, cmp) ((uint)(code) | (uint)(elem) << 8 | ((uint)(cmp) & 0xff) << 16)

/* ----- device-side argument checks: a bad PE, or a symmetric address
 * outside the symmetric heap, is reported to the host proxy, which aborts
 * the job with a message naming the operation, the PE and the value. The
 * work-item never resumes. `op` is the ring opcode naming the operation. */
ISHMEMI_COLD void ishmemi_fail(ulong what, uint op, ulong bad, int pe) {
    char *ring = ishmemi_ring();
    ishmemi_ring_send(ISHMEMI_RING_OP_ERROR, bad, 0, what, op, 0, pe, 0, ISHMEMI_RING_OP_FLAG_NBI);
    while ((long)ishmemi_ring_rd64(ring + ISHMEMI_RING_COMPLETED) >= 0) ; /* until the host ends the job */
}

ISHMEMI_INLINE void ishmemi_check(uint op, const void *sym, size_t n, int pe) {
    if ((uint)pe >= (uint)ISHMEMI_STATE->n_pes) ishmemi_fail(ISHMEMI_DEVICE_BAD_PE, op, 0, pe);
    ulong a = (ulong)sym, base = ISHMEMI_STATE->heap_base, size = ISHMEMI_STATE->heap_size;
    if (a < base || a - base > size || n > size - (a - base)) ishmemi_fail(ISHMEMI_DEVICE_BAD_ADDR, op, a, pe);
}

/* The extent of `nelems` elements of `elem` bytes at stride `stride`
 * (elements) from `sym`: checked at its first and last element. */
ISHMEMI_INLINE void ishmemi_check_strided(uint op, const void *sym, long stride, size_t elem, size_t nelems, int pe) {
    ishmemi_check(op, sym, nelems ? elem : 0, pe);
    if (nelems > 1) ishmemi_check(op, (const char *)sym + (long)(nelems - 1) * stride * (long)elem, elem, pe);
}

/* Whether the host proxy can read or write a local buffer the device
 * passes through the ring (CUDA: not a thread's local or a block's shared
 * memory; OpenCL: not private or local memory). */
#ifndef ISHMEMI_HOST_REACHES
#define ISHMEMI_HOST_REACHES(p) 1
#endif

/* A put whose source the host cannot read (device-local memory): the bytes
 * travel in the ring messages, 8 at a time, posted: once they are sent the
 * source may be reused, which is all a blocking put promises (quiet
 * completes them, fence orders them). */
ISHMEMI_INLINE void ishmemi_ring_put_inline(void *dest, const void *src, size_t n, int pe) {
    const uchar *s = (const uchar *)src;
    for (size_t i = 0; i < n; i += 8) {
        size_t k = n - i < 8 ? n - i : 8;
        ulong bits = 0;
        for (size_t b = 0; b < k; b++) bits |= (ulong)s[i + b] << (8 * b);
        ishmemi_ring_send(ISHMEMI_RING_OP_P, (ulong)dest + i, 0, bits, k, 0, pe, 0, ISHMEMI_RING_OP_FLAG_NBI);
    }
}

/* A get into a buffer the host cannot write: 8 bytes per round trip. */
ISHMEMI_INLINE void ishmemi_ring_get_inline(void *dest, const void *src, size_t n, int pe) {
    uchar *d = (uchar *)dest;
    for (size_t i = 0; i < n; i += 8) {
        size_t k = n - i < 8 ? n - i : 8;
        ulong bits = ishmemi_ring_wait(ishmemi_ring_send(ISHMEMI_RING_OP_G, 0, (ulong)src + i, k, 0, 0, pe, 0, 0));
        for (size_t b = 0; b < k; b++) d[i + b] = (uchar)(bits >> (8 * b));
    }
}

/* Whether a transfer of n bytes to or from a PE on the node, whose local
 * buffer is `buf`, goes to a copy engine (through the ring: the host
 * performs it with the device's copy) rather than the caller's loads and
 * stores. Such a transfer is waited for even in the _nbi forms, so that
 * fence, which orders memory only, still orders it before later stores. */
ISHMEMI_INLINE int ishmemi_copy_engine(size_t n, ulong cutover, const void *buf) {
    return cutover != 0 && n >= cutover && ISHMEMI_HOST_REACHES(buf);
}

/* The copy engine takes one transfer of this PE at a time (the host serves
 * the ring's requests one by one): a transfer over the cutover that finds
 * it busy is made with loads and stores instead, so that many threads or
 * blocks putting at once keep their parallel stores rather than queueing
 * behind one another. The token is quiet word 2. */
ISHMEMI_INLINE int ishmemi_ce_claim(void) {
    return ishmemi_amo64((char *)ISHMEMI_STATE->quiet_words + 16, ISHMEMI_CSWAP, 1, 0) == 0;
}

ISHMEMI_INLINE void ishmemi_ce_release(void) {
    ishmemi_store64((char *)ISHMEMI_STATE->quiet_words + 16, 0);
}

/* A put through the ring (a remote PE, or the copy engine). */
ISHMEMI_INLINE void ishmemi_ring_put(void *dest, const void *src, size_t n, int pe, int nbi) {
    if (!ISHMEMI_HOST_REACHES(src)) {
        ishmemi_ring_put_inline(dest, src, n, pe);
        return;
    }
    ulong t = ishmemi_ring_send(ISHMEMI_RING_OP_PUT, (ulong)dest, (ulong)src, n, 0, 0, pe, 0, nbi ? ISHMEMI_RING_OP_FLAG_NBI : 0);
    if (!nbi) ishmemi_ring_wait(t);
}

/* A get through the ring. */
ISHMEMI_INLINE void ishmemi_ring_get(void *dest, const void *src, size_t n, int pe, int nbi) {
    if (!ISHMEMI_HOST_REACHES(dest)) {
        ishmemi_ring_get_inline(dest, src, n, pe);
        return;
    }
    ulong t = ishmemi_ring_send(ISHMEMI_RING_OP_GET, (ulong)dest, (ulong)src, n, 0, 0, pe, 0, nbi ? ISHMEMI_RING_OP_FLAG_NBI : 0);
    if (!nbi) {
        ishmemi_ring_wait(t);
        ishmemi_fence_acquire(); /* the host wrote dest: no stale lines */
    }
}

/* A `p` through the ring: the value travels in the message, so the call
 * is done once it is sent (posted: quiet completes it, fence orders it). */
ISHMEMI_INLINE void ishmemi_ring_p(void *dest, ulong bits, size_t size, int pe) {
    ishmemi_ring_send(ISHMEMI_RING_OP_P, (ulong)dest, 0, bits, size, 0, pe, 0, ISHMEMI_RING_OP_FLAG_NBI);
}

ISHMEMI_INLINE ulong ishmemi_ring_g(const void *src, size_t size, int pe) {
    return ishmemi_ring_wait(ishmemi_ring_send(ISHMEMI_RING_OP_G, 0, (ulong)src, size, 0, 0, pe, 0, 0));
}

/* Non-fetching AMOs (atomic_set, add, inc, and, or, xor): to a PE the
 * ring reaches they are posted (FLAG_NBI) and not waited for. The host
 * posts them on in ticket order; quiet completes them, and fence orders
 * them before later requests (ishmemi_ring_fence). */
ISHMEMI_INLINE void ishmemi_amo_post_ring(void *dest, int op, ulong v, uint size, int pe) {
    ishmemi_ring_send(ISHMEMI_RING_OP_AMO, (ulong)dest, 0, v, 0, 0, pe, (uint)op | (size << 8), ISHMEMI_RING_OP_FLAG_NBI);
}

/* Fence's part for the PEs the ring reaches: the host's fence, sent
 * without waiting (the server performs it between the requests before
 * and after it), when some PE is reached so and some request of this PE
 * may be outstanding (quiet words, as in ishmemi_ring_quiet). */
ISHMEMI_INLINE void ishmemi_ring_fence(void) {
    if (ISHMEMI_STATE->only_local) return;
    char *q = (char *)ISHMEMI_STATE->quiet_words;
    if (ishmemi_peek64(q + 8) >= ishmemi_peek64(q)) return;
    ishmemi_ring_send(ISHMEMI_RING_OP_FENCE, 0, 0, 0, 0, 0, ISHMEMI_STATE->my_pe, 0, ISHMEMI_RING_OP_FLAG_NBI);
}

/* ----- group forms: every work-item of the group calls; the copy is
 * shared among them between group barriers; the leader talks to the ring. */

ISHMEMI_INLINE size_t ishmemi_wg_size(void) { return get_local_size(0) * get_local_size(1) * get_local_size(2); }

/* A group copy by `lsz` work-items, this one being `lid`. Interleaved 16-byte
 * pieces where the target coalesces them (GPUs: neighbouring work-items
 * touch neighbouring bytes), else one contiguous chunk each (CPU caches). */
ISHMEMI_COLD void ishmemi_group_copy_any(char *dst, const char *src, size_t n, size_t lid,
                                        size_t lsz) {
#ifdef ISHMEMI_COALESCED_COPY
    ulong a = (ulong)dst | (ulong)src;
    if ((a & 7) == 0) {
        size_t done = 0;
        if ((a & 15) == 0) {
            /* Two loads in flight per work-item before their stores (a
             * get's loads cross the link). Not four: a call saves the
             * callee-saved registers its function uses in local memory,
             * and with four pieces in registers that held 64 KiB block
             * gets (32 x 1024 threads, 2 H200s) at 0.65x NVSHMEM's rate
             * against 0.78-0.86x with two. Four were faster for one
             * block copying much more (broadcasts of 256 KiB: 14.6 against
             * 18.0 us), but any second function called from here, to keep
             * them for such copies, cost the block gets as much again. */
            long2 *d = (long2 *)dst;
            const long2 *s = (const long2 *)src;
            size_t vecs = n / 16, i = lid;
            for (; i + lsz < vecs; i += 2 * lsz) {
                long2 x0 = s[i], x1 = s[i + lsz];
                d[i] = x0;
                d[i + lsz] = x1;
            }
            for (; i < vecs; i += lsz) d[i] = s[i];
            done = 16 * vecs;
        }
        size_t words = (n - done) / 8;
        for (size_t i = lid; i < words; i += lsz)
            *(long *)(dst + done + 8 * i) = *(const long *)(src + done + 8 * i);
        for (size_t i = done + 8 * words + lid; i < n; i += lsz) dst[i] = src[i];
        return;
    }
#endif
    size_t chunk = ((n + lsz - 1) / lsz + 15) & ~(size_t)15;
    size_t lo = lid * chunk;
    if (lo < n) ishmemi_copy(dst + lo, src + lo, min(chunk, n - lo));
}

ISHMEMI_INLINE void ishmemi_group_copy(char *dst, const char *src, size_t n, size_t lid,
                                      size_t lsz) {
#ifdef ISHMEMI_COALESCED_COPY
    /* At most one aligned 16- or 8-byte piece a member: inline, and
     * nothing else here (the general copy is a call). */
    ulong a = (ulong)dst | (ulong)src | n;
    if ((a & 15) == 0 && n <= 16 * lsz) {
        if (16 * lid < n) ((long2 *)dst)[lid] = ((const long2 *)src)[lid];
        return;
    }
    if ((a & 7) == 0 && n <= 8 * lsz) {
        if (8 * lid < n) ((long *)dst)[lid] = ((const long *)src)[lid];
        return;
    }
#endif
    ishmemi_group_copy_any(dst, src, n, lid, lsz);
}

ISHMEMI_INLINE void ishmemi_wg_copy(char *dst, const char *src, size_t n) {
    ishmemi_group_copy(dst, src, n, get_local_linear_id(), ishmemi_wg_size());
}

ISHMEMI_INLINE void ishmemi_sg_copy(char *dst, const char *src, size_t n) {
    ishmemi_group_copy(dst, src, n, get_sub_group_local_id(), get_sub_group_size());
}

/* The group descriptor: who makes one call together. The work-group
 * (ISHMEMI_WG; CUDA: the block), the sub-group (ISHMEMI_SG; CUDA: the
 * warp), or the calling work-item alone (ISHMEMI_TH). Routines take it as
 * a constant, so after inlining each form keeps only its own code: the
 * work-item's has no barrier, vote or sharing. */
#define ISHMEMI_WG 0
#define ISHMEMI_SG 1
#define ISHMEMI_TH 2
ISHMEMI_FOLD size_t ishmemi_grp_id(int g) {
    return g == ISHMEMI_TH ? 0 : g == ISHMEMI_WG ? get_local_linear_id() : get_sub_group_local_id();
}
ISHMEMI_FOLD size_t ishmemi_grp_size(int g) {
    return g == ISHMEMI_TH ? 1 : g == ISHMEMI_WG ? ishmemi_wg_size() : get_sub_group_size();
}
ISHMEMI_FOLD void ishmemi_grp_barrier(int g) {
    if (g == ISHMEMI_WG)
        work_group_barrier(CLK_GLOBAL_MEM_FENCE);
    else if (g == ISHMEMI_SG)
        sub_group_barrier(CLK_GLOBAL_MEM_FENCE);
}
/* The group's vote: true on every member when `x` is true on one. A macro,
 * so that `x` is not evaluated where the target has no vote (OpenCL: 0). */
#define ISHMEMI_GRP_OR(g, x) \
    ((g) == ISHMEMI_TH ? (x) : (g) == ISHMEMI_WG ? ISHMEMI_WG_OR(x) : ISHMEMI_SG_OR(x))
/* A copy by the group's members together (a work-item alone: inline). */
ISHMEMI_FOLD void ishmemi_grp_copy(int g, char *dst, const char *src, size_t n) {
    if (g == ISHMEMI_TH)
        ishmemi_copy(dst, src, n);
    else
        ishmemi_group_copy(dst, src, n, ishmemi_grp_id(g), ishmemi_grp_size(g));
}

/* ----- teams: the host mirrors every team slot into the device table ----- */

typedef struct {
    int start, stride, size, my_rank;
} ishmemi_team_t;
_Static_assert(sizeof(ishmemi_team_t) == 16, "ishmemx_device_team_t layout");

#define ISHMEMI_TEAM_SLOTS 64

/* The team behind a handle, or 0 (TEAM_INVALID, or no team on this PE). */
ISHMEMI_INLINE const ishmemi_team_t *ishmemi_get_team(int team) {
    if (team < 0 || team >= ISHMEMI_TEAM_SLOTS) return 0;
    const ishmemi_team_t *t = (const ishmemi_team_t *)ISHMEMI_STATE->teams + team;
    return t->size > 0 ? t : 0;
}

ISHMEMI_INLINE int ishmemi_member(const ishmemi_team_t *t, int rank) { return t->start + rank * t->stride; }

/* Team rank `k` places after this PE's (0 < k < size). */
ISHMEMI_INLINE int ishmemi_rank_after(const ishmemi_team_t *t, int k) {
    int r = t->my_rank + k;
    return r >= t->size ? r - t->size : r;
}

/* Team sync. With sync words in the heap (GPU devices): signals through
 * them, below; device syncs then match device syncs only. Otherwise
 * dissemination interoperable with the host's: the same flags and epoch in
 * the node's control segment, slot = team handle; flags of PEs the device
 * cannot reach are stored by the host (ring). */
/* PE `pe`'s synchronization record for team slot `slot` in this node's
 * control segment (flags, then epoch, then two scratch words). */
ISHMEMI_INLINE char *ishmemi_team_record(int slot, int pe) {
    return (char *)ISHMEMI_STATE->ctrl_team_base + slot * (ulong)ISHMEMI_STATE->ctrl_team_stride +
           pe * (ulong)ISHMEMI_STATE->ctrl_pe_stride;
}

/* ===== routing: begin =====
 * The one place where the device decides how an operation reaches a PE.
 * A PE mapped here (ISHMEMI_PEER_LOCAL: this device, or one it reaches by
 * loads and stores) is served by the caller's loads, stores and atomics,
 * or by a copy engine (through the ring) for a large transfer; any other
 * PE through the ring to the host proxy. Code outside this section calls
 * these routines, and takes peers' addresses (ishmemi_peer) itself only
 * once ishmemi_team_all_local has said every member is mapped.
 * runtime/tests/layers.rs checks that nothing outside it asks whether a
 * PE is mapped. */

ISHMEMI_INLINE int ishmemi_is_local(int pe) {
    return ISHMEMI_PEER_LOCAL(pe);
}

/* ishmem_ptr: the load/store address of symmetric `sym` on `pe`, or 0. */
ISHMEMI_INLINE void *ishmemi_route_ptr(const void *sym, int pe) {
    ulong off = (ulong)sym - ISHMEMI_STATE->heap_base;
    if (pe < 0 || pe >= ISHMEMI_STATE->n_pes || off >= ISHMEMI_STATE->heap_size || !ishmemi_is_local(pe)) return 0;
    return ishmemi_peer(sym, pe);
}

/* Whether this PE reaches every member of the team by loads and stores
 * (the collectives' algorithms that address members directly). */
ISHMEMI_INLINE int ishmemi_team_all_local(const ishmemi_team_t *t) {
    for (int r = 0; r < t->size; r++)
        if (!ishmemi_is_local(ishmemi_member(t, r))) return 0;
    return 1;
}

/* The leader's part of a group transfer through the ring (out of line: a
 * rare path of the group forms). */
ISHMEMI_COLD void ishmemi_grp_ring(int put, void *dest, const void *src, size_t n, int pe,
                                   int nbi, int ce) {
    if (put)
        ishmemi_ring_put(dest, src, n, pe, nbi && !ce);
    else
        ishmemi_ring_get(dest, src, n, pe, nbi && !ce);
    if (ce) ishmemi_ce_release();
}

/* Every put and get: `n` bytes put (`put`) or got by group `g` (a
 * constant, so that after inlining each form keeps only its own code).
 * After the checks and a group barrier, the group agrees on the way: loads
 * and stores shared among its members to a peer mapped here, unless the
 * leader claims the copy engine for a large transfer; otherwise the
 * leader's request through the ring (the copy engine's, or one to a PE not
 * mapped here). A copy-engine transfer is waited for even in the _nbi
 * forms, so that fence, which orders memory only, still orders it. A
 * closing barrier makes the call complete for every member. A work-item
 * alone (ISHMEMI_TH) keeps its ring request inline. */
ISHMEMI_FOLD void ishmemi_route_rma(int g, int put, void *dest, const void *src, size_t n,
                                     int pe, int nbi) {
    ishmemi_check(put ? ISHMEMI_RING_OP_PUT : ISHMEMI_RING_OP_GET, put ? (const void *)dest : src, n, pe);
    ishmemi_grp_barrier(g);
    int near = ishmemi_is_local(pe);
    ulong cutover = g == ISHMEMI_TH ? ISHMEMI_STATE->copy_cutover : ISHMEMI_STATE->copy_cutover_group;
    int ce = near && ishmemi_copy_engine(n, cutover, put ? src : (const void *)dest) &&
             ISHMEMI_GRP_OR(g, ishmemi_grp_id(g) == 0 && ishmemi_ce_claim());
    if (near && !ce) {
        if (put)
            ishmemi_grp_copy(g, ishmemi_peer(dest, pe), (const char *)src, n);
        else
            ishmemi_grp_copy(g, (char *)dest, ishmemi_peer(src, pe), n);
    } else if (g == ISHMEMI_TH) {
        if (put)
            ishmemi_ring_put(dest, src, n, pe, nbi && !ce);
        else
            ishmemi_ring_get(dest, src, n, pe, nbi && !ce);
        if (ce) ishmemi_ce_release();
    } else if (ishmemi_grp_id(g) == 0) {
        ishmemi_grp_ring(put, dest, src, n, pe, nbi, ce);
    }
    ishmemi_grp_barrier(g);
}

ISHMEMI_INLINE void ishmemi_put_bytes(void *dest, const void *src, size_t n, int pe, int nbi) {
    ishmemi_route_rma(ISHMEMI_TH, 1, dest, src, n, pe, nbi);
}
ISHMEMI_INLINE void ishmemi_get_bytes(void *dest, const void *src, size_t n, int pe, int nbi) {
    ishmemi_route_rma(ISHMEMI_TH, 0, dest, src, n, pe, nbi);
}
ISHMEMI_INLINE void ishmemi_wg_put_bytes(void *dest, const void *src, size_t n, int pe, int nbi) {
    ishmemi_route_rma(ISHMEMI_WG, 1, dest, src, n, pe, nbi);
}
ISHMEMI_INLINE void ishmemi_wg_get_bytes(void *dest, const void *src, size_t n, int pe, int nbi) {
    ishmemi_route_rma(ISHMEMI_WG, 0, dest, src, n, pe, nbi);
}
ISHMEMI_INLINE void ishmemi_sg_put_bytes(void *dest, const void *src, size_t n, int pe, int nbi) {
    ishmemi_route_rma(ISHMEMI_SG, 1, dest, src, n, pe, nbi);
}
ISHMEMI_INLINE void ishmemi_sg_get_bytes(void *dest, const void *src, size_t n, int pe, int nbi) {
    ishmemi_route_rma(ISHMEMI_SG, 0, dest, src, n, pe, nbi);
}

/* Strided puts and gets of `nelems` elements of `elem` bytes (strides in
 * elements): one strided copy to a mapped peer, else element by element. */
ISHMEMI_INLINE void ishmemi_route_strided(int put, void *dest, long dst, const void *src, long sst,
                                         size_t elem, size_t nelems, int pe) {
    if (put)
        ishmemi_check_strided(ISHMEMI_RING_OP_PUT, dest, dst, elem, nelems, pe);
    else
        ishmemi_check_strided(ISHMEMI_RING_OP_GET, src, sst, elem, nelems, pe);
    if (ishmemi_is_local(pe)) {
        if (put)
            ishmemi_strided(ishmemi_peer(dest, pe), dst, (const char *)src, sst, elem, nelems);
        else
            ishmemi_strided((char *)dest, dst, ishmemi_peer(src, pe), sst, elem, nelems);
        return;
    }
    for (size_t i = 0; i < nelems; i++)
        ishmemi_route_rma(ISHMEMI_TH, put, (char *)dest + (long)i * dst * (long)elem,
                          (const char *)src + (long)i * sst * (long)elem, elem, pe, 0);
}
ISHMEMI_INLINE void ishmemi_iput_bytes(void *dest, long dst, const void *src, long sst,
                                      size_t elem, size_t nelems, int pe) {
    ishmemi_route_strided(1, dest, dst, src, sst, elem, nelems, pe);
}
ISHMEMI_INLINE void ishmemi_iget_bytes(void *dest, long dst, const void *src, long sst,
                                      size_t elem, size_t nelems, int pe) {
    ishmemi_route_strided(0, dest, dst, src, sst, elem, nelems, pe);
}

/* p and g of type T (named N in the routines' names): the typed routines'
 * one route, with the checks. The local access is of type T itself, so
 * that the compiler's type-based alias analysis sees the element's own
 * type where the routine is inlined into a kernel that reads it. */
#define ISHMEMI_ROUTE_PG(T, N)                                                      \
    ISHMEMI_INLINE void ishmemi_route_p_##N(T *dest, T value, int pe) {             \
        ishmemi_check(ISHMEMI_RING_OP_P, dest, sizeof(T), pe);                      \
        if (ishmemi_is_local(pe)) {                                                 \
            *(T *)ishmemi_peer(dest, pe) = value;                                   \
            return;                                                                 \
        }                                                                           \
        union { T v; ulong u; } x;                                                  \
        x.u = 0;                                                                    \
        x.v = value;                                                                \
        ishmemi_ring_p(dest, x.u, sizeof(T), pe);                                   \
    }                                                                               \
    ISHMEMI_INLINE T ishmemi_route_g_##N(const T *source, int pe) {                 \
        ishmemi_check(ISHMEMI_RING_OP_G, source, sizeof(T), pe);                    \
        if (ishmemi_is_local(pe)) return *(const T *)ishmemi_peer(source, pe);      \
        union { T v; ulong u; } x;                                                  \
        x.u = ishmemi_ring_g(source, sizeof(T), pe);                                \
        return x.v;                                                                 \
    }
ISHMEMI_ROUTE_PG(char, char)
ISHMEMI_ROUTE_PG(uchar, uchar)
ISHMEMI_ROUTE_PG(short, short)
ISHMEMI_ROUTE_PG(ushort, ushort)
ISHMEMI_ROUTE_PG(int, int)
ISHMEMI_ROUTE_PG(uint, uint)
ISHMEMI_ROUTE_PG(long, long)
ISHMEMI_ROUTE_PG(ulong, ulong)
ISHMEMI_ROUTE_PG(float, float)
ISHMEMI_ROUTE_PG(double, double)

/* One element of `size` bytes (1, 2, 4 or 8) as the low bits of a ulong,
 * without the checks: for library code whose addresses the host checked
 * (the CUDA stream kernels' reductions), which reaches these elements
 * through no other type. */
ISHMEMI_INLINE void ishmemi_route_p_bits(void *dest, ulong bits, uint size, int pe) {
    if (!ishmemi_is_local(pe)) {
        ishmemi_ring_p(dest, bits, size, pe);
        return;
    }
    char *d = ishmemi_peer(dest, pe);
    if (size == 1)
        *(uchar *)d = (uchar)bits;
    else if (size == 2)
        *(ushort *)d = (ushort)bits;
    else if (size == 4)
        *(uint *)d = (uint)bits;
    else
        *(ulong *)d = bits;
}
ISHMEMI_INLINE ulong ishmemi_route_g_bits(const void *src, uint size, int pe) {
    if (!ishmemi_is_local(pe)) return ishmemi_ring_g(src, size, pe);
    const char *s = ishmemi_peer(src, pe);
    if (size == 1) return *(const uchar *)s;
    if (size == 2) return *(const ushort *)s;
    if (size == 4) return *(const uint *)s;
    return *(const ulong *)s;
}

/* Fetching AMOs (`op`: ISHMEMI_FETCH, ..., with `cond` for compare-and-
 * swap): the device's atomics on a mapped peer, else a round trip. */
ISHMEMI_INLINE char ishmemi_amo8_pe(void *dest, int op, char v, char cond, int pe) {
    ishmemi_check(ISHMEMI_RING_OP_AMO, dest, 1, pe);
    if (ishmemi_is_local(pe)) return ishmemi_amo8(ishmemi_peer(dest, pe), op, v, cond);
    return (char)ishmemi_ring_wait(ishmemi_ring_send(ISHMEMI_RING_OP_AMO, (ulong)dest, 0, (uchar)v, (uchar)cond, 0, pe,
                                                     (uint)op | (1u << 8), 0));
}

ISHMEMI_INLINE int ishmemi_amo32_pe(void *dest, int op, int v, int cond, int pe) {
    ishmemi_check(ISHMEMI_RING_OP_AMO, dest, 4, pe);
    if (ishmemi_is_local(pe)) return ishmemi_user_amo32(ishmemi_peer(dest, pe), op, v, cond);
    return (int)ishmemi_ring_wait(ishmemi_ring_send(ISHMEMI_RING_OP_AMO, (ulong)dest, 0, (uint)v, (uint)cond, 0, pe,
                                                    (uint)op | (4u << 8), 0));
}

ISHMEMI_INLINE long ishmemi_amo64_pe(void *dest, int op, long v, long cond, int pe) {
    ishmemi_check(ISHMEMI_RING_OP_AMO, dest, 8, pe);
    if (ishmemi_is_local(pe)) return ishmemi_user_amo64(ishmemi_peer(dest, pe), op, v, cond);
    return (long)ishmemi_ring_wait(ishmemi_ring_send(ISHMEMI_RING_OP_AMO, (ulong)dest, 0, (ulong)v, (ulong)cond, 0, pe,
                                                     (uint)op | (8u << 8), 0));
}

/* Non-fetching AMOs: the device's atomics on a mapped peer, else posted
 * through the ring (ishmemi_amo_post_ring). */
#define ISHMEMI_AMO_POST(N, T, UT, AMO)                                \
    ISHMEMI_INLINE void ishmemi_amo##N##_post(void *dest, int op, T v, int pe) { \
        ishmemi_check(ISHMEMI_RING_OP_AMO, dest, N / 8, pe);            \
        if (ishmemi_is_local(pe))                                       \
            (void)AMO(ishmemi_peer(dest, pe), op, v, 0);                \
        else                                                            \
            ishmemi_amo_post_ring(dest, op, (UT)v, N / 8, pe);          \
    }
ISHMEMI_AMO_POST(8, char, uchar, ishmemi_amo8)
ISHMEMI_AMO_POST(32, int, uint, ishmemi_user_amo32)
ISHMEMI_AMO_POST(64, long, ulong, ishmemi_user_amo64)
#undef ISHMEMI_AMO_POST

/* put_signal by group `g`: the data, then the signal as an AMO that
 * releases it (CUDA: a release store or add at system scope; OpenCL: a
 * sequentially consistent AMO). A work-item alone sends a remote PE both
 * in one request, which the host performs in that order; a group puts the
 * data together and its leader signals. */
ISHMEMI_FOLD void ishmemi_route_put_signal(int g, void *dest, const void *source, size_t nelems,
                                            ulong *sig_addr, ulong signal, int sig_op, int pe) {
    int op = sig_op == ISHMEMI_SIGNAL_SET ? ISHMEMI_SET : ISHMEMI_FADD;
    if (g != ISHMEMI_TH) {
        ishmemi_check(ISHMEMI_RING_OP_PUT_SIGNAL, sig_addr, 8, pe);
        ishmemi_route_rma(g, 1, dest, source, nelems, pe, 0);
        if (ishmemi_grp_id(g) == 0) {
            if (ishmemi_is_local(pe)) {
                ishmemi_fence_all(); /* the group's stores, ordered by the barrier before */
                ishmemi_signal_op(ishmemi_peer(sig_addr, pe), op, (long)signal);
            } else
                ishmemi_amo64_pe(sig_addr, op, (long)signal, 0, pe);
        }
        ishmemi_grp_barrier(g);
        return;
    }
    ishmemi_check(ISHMEMI_RING_OP_PUT_SIGNAL, dest, nelems, pe);
    ishmemi_check(ISHMEMI_RING_OP_PUT_SIGNAL, sig_addr, 8, pe);
    if (ishmemi_is_local(pe)) {
        ishmemi_copy(ishmemi_peer(dest, pe), (const char *)source, nelems);
        ishmemi_signal_op(ishmemi_peer(sig_addr, pe), op, (long)signal);
        return;
    }
    if (!ISHMEMI_HOST_REACHES(source)) {
        /* The data in the messages, the host's fence (the data delivered
         * first, whatever way it takes), then the signal. */
        ishmemi_ring_put_inline(dest, source, nelems, pe);
        ishmemi_ring_fence();
        ishmemi_amo64_pe(sig_addr, op, (long)signal, 0, pe);
        return;
    }
    ishmemi_ring_wait(ishmemi_ring_send(ISHMEMI_RING_OP_PUT_SIGNAL, (ulong)dest, (ulong)source, nelems, signal,
                                        (ulong)sig_addr, pe, op, 0));
}

/* The library's own words on another PE. `word`, an address of this PE's
 * heap (its sync words), stored on `pe`: the caller has made what it
 * stored before visible (ishmemi_fence_release or a stronger fence);
 * through the ring the host performs it after this PE's earlier requests. */
ISHMEMI_INLINE void ishmemi_sync_store(ulong *word, ulong v, int pe) {
    if (ishmemi_is_local(pe))
        ishmemi_store_relaxed64(ishmemi_peer(word, pe), (long)v);
    else
        ishmemi_ring_send(ISHMEMI_RING_OP_P, (ulong)word, 0, v, 8, 0, pe, 0, ISHMEMI_RING_OP_FLAG_NBI);
}

/* A word of member `pe`'s team record in this node's control segment
 * (`word`: its address here), stored or read: by the device when it
 * reaches `pe`, else by the host (the ring's CTRL_SET, performed after
 * this PE's earlier requests, and CTRL_GET). */
ISHMEMI_INLINE void ishmemi_ctrl_store(char *word, long v, int pe) {
    if (ishmemi_is_local(pe))
        ishmemi_store64(word, v);
    else
        ishmemi_ring_send(ISHMEMI_RING_OP_CTRL_SET, (ulong)word, 0, (ulong)v, 0, 0, pe, 0, ISHMEMI_RING_OP_FLAG_NBI);
}
ISHMEMI_INLINE ulong ishmemi_ctrl_read(char *word, int pe) {
    if (ishmemi_is_local(pe)) return (ulong)ishmemi_load64(word);
    return ishmemi_ring_wait(ishmemi_ring_send(ISHMEMI_RING_OP_CTRL_GET, 0, (ulong)word, 0, 0, 0, pe, 0, 0));
}

/* ===== routing: end ===== */

/* ----- signals through the device sync words (GPU devices: the state's
 * sync_words, in a reserved part of each heap). PE p's FLAGS[s][q] is the
 * number of signals PE q has sent p on team slot s; SENT and RECV are the
 * sender's and the receiver's own counts of them (device_state.rs). A
 * signal is a release store of the new count into the receiver's GPU
 * memory (NVLink or the same GPU; through the ring for a PE the device
 * does not reach, which the host serves after this PE's earlier
 * requests); a wait polls this PE's own memory. Every signal is awaited
 * once, in order, by a member running the same team operation, so the
 * counts of a pair of PEs agree whatever teams used the slot before. */

ISHMEMI_INLINE int ishmemi_sync_in_heap(void) { return ISHMEMI_STATE->sync_words != 0; }

ISHMEMI_INLINE ulong *ishmemi_sync_word(ulong region, int slot, int pe) {
    return (ulong *)ISHMEMI_STATE->sync_words + region + (ulong)slot * ISHMEMI_SYNC_MAX_PES + (ulong)pe;
}

/* This PE's four words on the pair (this PE, `pe`) and `slot`: signals
 * sent, signals awaited, low-latency collectives, spare. */
ISHMEMI_INLINE ulong *ishmemi_pair_words(int slot, int pe) {
    return (ulong *)ISHMEMI_STATE->sync_words + ISHMEMI_SYNC_PAIRS +
           4 * ((ulong)slot * ISHMEMI_SYNC_MAX_PES + (ulong)pe);
}

/* Advances the pair's sent and awaited counts by (ds, dr); returns the new
 * sent count and stores the new awaited one in *recv. */
ISHMEMI_INLINE ulong ishmemi_pair_step(int slot, int pe, ulong ds, ulong dr, ulong *recv) {
    ulong *w = ishmemi_pair_words(slot, pe);
    ulong a, b;
    ishmemi_own_load2(w, &a, &b);
    a += ds;
    b += dr;
    ishmemi_own_store2(w, a, b);
    *recv = b;
    return a;
}

/* ----- collective signatures: members of a team that make different
 * collective calls in kernels are reported, not left to hang or to return
 * wrong data. A call's signature is its ISHMEMI_COLL_* kind (bits 0-3),
 * its element kind and operator (ISHMEMI_ELEM_* | ISHMEMI_ROP_* << 4, a
 * collect's element size; bits 4-15), its root (bits 16-31) and its bytes
 * or elements (bits 32-63). Each signal (flag = count << 16 | sig16) and
 * each LL word (flag = the count's low 16 bits | sig16 << 16) carries 16
 * bits of it: the kind and 12 bits of a hash of the rest. A member that
 * receives, for the count it awaits, another call's bits reports both
 * calls and ends the job (ishmemi_sig_mismatch). A signal from a member
 * already further on (a later count) is not compared. */
#define ISHMEMI_SIG(kind, code, root, count) \
    ((ulong)(kind) | (ulong)(code) << 4 | (ulong)((uint)(root) & 0xffff) << 16 | (ulong)(count) << 32)
#define ISHMEMI_SIG_SYNC ISHMEMI_SIG(ISHMEMI_COLL_TEAM_SYNC, 0, 0, 0)
ISHMEMI_INLINE uint ishmemi_sig16(ulong sig) {
    return (uint)(sig & 0xf) << 12 | (uint)(((sig >> 4) * 0x9E3779B97F4A7C15ul) >> 52);
}
/* Reports and waits until the host ends the job (ISHMEMI_ENDS_JOB). */
ISHMEMI_COLD ISHMEMI_ENDS_JOB void ishmemi_sig_mismatch(int slot, int pe, ulong sig, uint theirs) {
    char *ring = ishmemi_ring();
    ishmemi_ring_send(ISHMEMI_RING_OP_ERROR, sig, (ulong)slot, ISHMEMI_DEVICE_COLL_MISMATCH, theirs, 0, pe, 0,
                      ISHMEMI_RING_OP_FLAG_NBI);
    ISHMEMI_AWAIT_JOB_END(ring);
}

/* Stores this PE's signal count `v` of a call of signature bits `s16` into
 * its flag on `pe`. */
ISHMEMI_INLINE void ishmemi_flag_to(int slot, int pe, ulong v, uint s16) {
    ishmemi_sync_store(ishmemi_sync_word(ISHMEMI_SYNC_FLAGS, slot, ISHMEMI_STATE->my_pe), v << 16 | s16, pe);
}

/* Waits until `pe` has sent this PE `v` signals on `slot`: relaxed polls,
 * then one acquire load (cheaper than an acquire fence), after which what
 * `pe` made visible before its signal is visible here. Returns 0, or, when
 * the signal of count `v` came from a call whose bits are not `s16`, its
 * bits | ISHMEMI_SIG_BAD for the caller to report (ishmemi_sig_report)
 * once out of its loops: a call in a loop costs CUDA a convergence barrier
 * per pass. The check reads the polled value: with the acquire load's
 * value unused, CUDA keeps only its cache invalidation (using it cost a
 * device barrier 0.2 us on H200s). */
#define ISHMEMI_SIG_BAD 0x10000u
ISHMEMI_INLINE uint ishmemi_flag_wait(int slot, int pe, ulong v, uint s16) {
    ulong *flag = ishmemi_sync_word(ISHMEMI_SYNC_FLAGS, slot, pe);
    ulong want = v << 16, f;
    while ((f = (ulong)ishmemi_peek64(flag)) < want) ;
    (void)ishmemi_load64(flag);
    return (f >> 16) == v && (uint)(f & 0xffff) != s16 ? (uint)(f & 0xffff) | ISHMEMI_SIG_BAD : 0;
}

/* Reports `bad` (0, or another call's bits | ISHMEMI_SIG_BAD, from `pe`). */
ISHMEMI_INLINE void ishmemi_sig_report(uint bad, int slot, int pe, ulong sig) {
    if (bad) ishmemi_sig_mismatch(slot, pe, sig, bad & 0xffff);
}

/* Signals world PE `pe` on `slot` (after ishmemi_fence_release). */
ISHMEMI_INLINE void ishmemi_signal_pe(int slot, int pe, uint s16) {
    ulong r;
    ishmemi_flag_to(slot, pe, ishmemi_pair_step(slot, pe, 1, 0, &r), s16);
}

/* Waits for the next signal of world PE `pe` on `slot`. */
ISHMEMI_INLINE void ishmemi_await_pe(int slot, int pe, ulong sig) {
    ulong r;
    ishmemi_pair_step(slot, pe, 0, 1, &r);
    ishmemi_sig_report(ishmemi_flag_wait(slot, pe, r, ishmemi_sig16(sig)), slot, pe, sig);
}

/* Signals every other member of `t` on `slot`, then waits for each of
 * their signals: one flight of stores, each PE polling its own memory.
 * For up to ISHMEMI_SYNC_KEEP other members the pair counts are all loaded
 * first (their loads in flight together) and the awaited counts kept for
 * the second pass. (Ranks by wrapping, not %, and the loops in functions
 * of their own in the OpenCL build: llvm-spirv 14 places a block before
 * its dominator otherwise.) */
#define ISHMEMI_SYNC_KEEP 16
ISHMEMI_NOINLINE void ishmemi_load_pairs(int slot, const ishmemi_team_t *t, ulong *sent, ulong *keep) {
    int m = t->size - 1;
    if (m == 1) { /* (the batch's unused lanes cost 2-PE syncs 5-8% on H200s) */
        ishmemi_own_load2(ishmemi_pair_words(slot, ishmemi_member(t, ishmemi_rank_after(t, 1))), sent, keep);
        return;
    }
    for (int k0 = 0; k0 < m; k0 += ISHMEMI_BATCH) {
        ulong a[ISHMEMI_BATCH], b[ISHMEMI_BATCH];
        ISHMEMI_UNROLL
        for (int j = 0; j < ISHMEMI_BATCH; j++)
            if (k0 + j < m)
                ishmemi_own_load2(ishmemi_pair_words(slot, ishmemi_member(t, ishmemi_rank_after(t, k0 + j + 1))),
                                  &a[j], &b[j]);
        ISHMEMI_UNROLL
        for (int j = 0; j < ISHMEMI_BATCH && k0 + j < m; j++) sent[k0 + j] = a[j], keep[k0 + j] = b[j];
    }
}
ISHMEMI_NOINLINE void ishmemi_signal_loaded(int slot, const ishmemi_team_t *t, const ulong *sent,
                                           ulong *keep, uint s16) {
    for (int k = 1; k < t->size; k++) {
        int pe = ishmemi_member(t, ishmemi_rank_after(t, k));
        keep[k - 1] += 1;
        ishmemi_own_store2(ishmemi_pair_words(slot, pe), sent[k - 1] + 1, keep[k - 1]);
        ishmemi_flag_to(slot, pe, sent[k - 1] + 1, s16);
    }
}
ISHMEMI_NOINLINE void ishmemi_signal_each(int slot, const ishmemi_team_t *t, uint s16) {
    for (int k = 1; k < t->size; k++) {
        int pe = ishmemi_member(t, ishmemi_rank_after(t, k));
        ulong want;
        ishmemi_flag_to(slot, pe, ishmemi_pair_step(slot, pe, 1, 1, &want), s16);
    }
}
ISHMEMI_INLINE void ishmemi_signal_others(int slot, const ishmemi_team_t *t, ulong *keep, uint s16) {
    if (t->size - 1 <= ISHMEMI_SYNC_KEEP) {
        ulong sent[ISHMEMI_SYNC_KEEP];
        ishmemi_load_pairs(slot, t, sent, keep);
        ishmemi_signal_loaded(slot, t, sent, keep, s16);
    } else {
        ishmemi_signal_each(slot, t, s16);
    }
}
/* Signals every other member once, expecting nothing back (a broadcast's
 * root), the pair counts loaded together as above. */
ISHMEMI_NOINLINE void ishmemi_signal_loaded_oneway(int slot, const ishmemi_team_t *t,
                                                  const ulong *sent, const ulong *recv, uint s16) {
    for (int k = 1; k < t->size; k++) {
        int pe = ishmemi_member(t, ishmemi_rank_after(t, k));
        ishmemi_own_store2(ishmemi_pair_words(slot, pe), sent[k - 1] + 1, recv[k - 1]);
        ishmemi_flag_to(slot, pe, sent[k - 1] + 1, s16);
    }
}
ISHMEMI_INLINE void ishmemi_signal_members(int slot, const ishmemi_team_t *t, uint s16) {
    if (t->size - 1 <= ISHMEMI_SYNC_KEEP) {
        ulong sent[ISHMEMI_SYNC_KEEP], recv[ISHMEMI_SYNC_KEEP];
        ishmemi_load_pairs(slot, t, sent, recv);
        ishmemi_signal_loaded_oneway(slot, t, sent, recv, s16);
        return;
    }
    for (int k = 1; k < t->size; k++) ishmemi_signal_pe(slot, ishmemi_member(t, ishmemi_rank_after(t, k)), s16);
}

/* (With the awaited counts kept, ISHMEMI_BATCH members' flags are polled
 * together, each then acquired as ishmemi_flag_wait does.) */
ISHMEMI_NOINLINE void ishmemi_await_others(int slot, const ishmemi_team_t *t, const ulong *keep, ulong sig) {
    uint s16 = ishmemi_sig16(sig), bad = 0;
    int from = 0, m = t->size - 1;
    if (m == 1 || m > ISHMEMI_SYNC_KEEP) { /* one member at a time */
        for (int k = 1; k <= m; k++) {
            int pe = ishmemi_member(t, ishmemi_rank_after(t, k));
            ulong sent, want;
            if (m == 1)
                want = keep[0];
            else
                ishmemi_own_load2(ishmemi_pair_words(slot, pe), &sent, &want);
            uint b = ishmemi_flag_wait(slot, pe, want, s16);
            if (b) bad = b, from = pe;
        }
        ishmemi_sig_report(bad, slot, from, sig);
        return;
    }
    for (int k0 = 0; k0 < m; k0 += ISHMEMI_BATCH) {
        ulong *flag[ISHMEMI_BATCH], f[ISHMEMI_BATCH];
        int wait;
        ISHMEMI_UNROLL
        for (int j = 0; j < ISHMEMI_BATCH; j++)
            flag[j] = ishmemi_sync_word(ISHMEMI_SYNC_FLAGS, slot,
                                        k0 + j < m ? ishmemi_member(t, ishmemi_rank_after(t, k0 + j + 1)) : 0);
        do {
            wait = 0;
            ISHMEMI_UNROLL
            for (int j = 0; j < ISHMEMI_BATCH; j++)
                if (k0 + j < m) {
                    f[j] = (ulong)ishmemi_peek64(flag[j]);
                    wait |= f[j] < keep[k0 + j] << 16;
                }
        } while (wait);
        ISHMEMI_UNROLL
        for (int j = 0; j < ISHMEMI_BATCH && k0 + j < m; j++) {
            (void)ishmemi_load64(flag[j]);
            if ((f[j] >> 16) == keep[k0 + j] && (uint)(f[j] & 0xffff) != s16)
                bad = (uint)(f[j] & 0xffff) | ISHMEMI_SIG_BAD, from = ishmemi_member(t, ishmemi_rank_after(t, k0 + j + 1));
        }
    }
    ishmemi_sig_report(bad, slot, from, sig);
}
/* A sync of the members of `t` as part of a call of signature `sig`. */
ISHMEMI_INLINE void ishmemi_sync_heap(int slot, const ishmemi_team_t *t, ulong sig) {
    ulong keep[ISHMEMI_SYNC_KEEP];
    ishmemi_fence_release();
    ishmemi_signal_others(slot, t, keep, ishmemi_sig16(sig));
    ishmemi_await_others(slot, t, keep, sig);
}

/* A sync right after a system-scope fence (barrier_all's quiet, the group
 * forms' fence): no second fence. */
ISHMEMI_INLINE void ishmemi_sync_team_fenced(int slot, ulong sig) {
    const ishmemi_team_t *t = ishmemi_get_team(slot);
    ulong keep[ISHMEMI_SYNC_KEEP];
    ishmemi_signal_others(slot, t, keep, ishmemi_sig16(sig));
    ishmemi_await_others(slot, t, keep, sig);
}

/* ----- call signatures of team syncs through the control segment. Such
 * a sync interoperates with the host's, so it publishes its call as the
 * host's syncs do (collsig.rs, team.rs: team_sync_sig): the whole
 * signature in the host's words in its record (TeamCtrl::sig, by epoch
 * parity), and word 0 (epoch and hash) pushed into its successor's
 * TeamCtrl::sig_in before the sync's round-0 flag store there. After the
 * sync it compares what its predecessor pushed; a word of this epoch that
 * differs ends the job, and the host names every member's call from their
 * records (ring ERROR, DEVICE_CTRL_MISMATCH). Members form a ring, so if
 * any two differ, one of them sees it. The host's codes of the device's
 * collective, element and operator codes are generated (device_codes.h);
 * ctrl.rs asserts where sig and sig_in lie beside the epoch and flags.
 * A count above 32 bits is compared in its low 32 bits (ISHMEMI_SIG).
 * ISHMEM_COLL_CHECK=0 (the state's coll_check) turns this off, as on the
 * host. */
#define ISHMEMI_HOST_SIG_CODE(packed, c) (((packed) >> (4 * ((c) & 0xf))) & 0xf)

/* The host's words of device call `sig` at `epoch` (Sig::words): word 0
 * the epoch and a 32-bit fold of the FNV-1a hash of words 1-3, word 1 the
 * kind, operator, type and root, word 2 the count, word 3 0 (no device
 * call has strides). */
ISHMEMI_INLINE void ishmemi_host_sig_words(ulong sig, long epoch, ulong *w) {
    uint kind = (uint)(sig & 0xf), code = (uint)(sig >> 4) & 0xfff;
    ulong root = 0, op = 0, ty = 0;
    if (kind == ISHMEMI_COLL_BROADCAST) root = (sig >> 16) & 0xffff;
    if (kind == ISHMEMI_COLL_COLLECT) ty = code; /* the element size */
    if (kind == ISHMEMI_COLL_REDUCE) op = ISHMEMI_HOST_SIG_CODE(ISHMEMI_SIG_OPS, code >> 4);
    if (kind == ISHMEMI_COLL_REDUCE || kind == ISHMEMI_COLL_INSCAN || kind == ISHMEMI_COLL_EXSCAN)
        ty = ISHMEMI_HOST_SIG_CODE(ISHMEMI_SIG_TYPES, code);
    w[1] = ISHMEMI_HOST_SIG_CODE(ISHMEMI_SIG_KINDS, kind) | op << 8 | ty << 16 | root << 32;
    w[2] = sig >> 32;
    w[3] = 0;
    ulong h = 0xcbf29ce484222325ul;
    for (int k = 1; k < 4; k++)
        for (int b = 0; b < 64; b += 8) {
            h ^= (w[k] >> b) & 0xff;
            h *= 0x100000001b3ul;
        }
    w[0] = (ulong)(uint)epoch << 32 | (uint)(h ^ h >> 32);
}

/* Reports and waits until the host ends the job (ISHMEMI_ENDS_JOB). */
ISHMEMI_COLD ISHMEMI_ENDS_JOB void ishmemi_ctrl_sig_mismatch(int slot, long epoch) {
    char *ring = ishmemi_ring();
    ishmemi_ring_send(ISHMEMI_RING_OP_ERROR, (ulong)epoch, (ulong)slot, ISHMEMI_DEVICE_CTRL_MISMATCH, 0, 0,
                      ISHMEMI_STATE->my_pe, 0, ISHMEMI_RING_OP_FLAG_NBI);
    ISHMEMI_AWAIT_JOB_END(ring);
}

/* Publishes call `sig` for the sync at `epoch` of this PE's record `mine`
 * and pushes word 0 to member `next`; returns word 0. */
ISHMEMI_INLINE ulong ishmemi_ctrl_sig_publish(int slot, char *mine, int next, ulong sig, long epoch) {
    ulong w[4];
    ishmemi_host_sig_words(sig, epoch, w);
    char *words = mine + ISHMEMI_STATE->ctrl_epoch_offset + 24 + 32 * (ulong)(epoch % 2);
    for (int k = 1; k < 4; k++) ishmemi_store64(words + 8 * k, (long)w[k]);
    ishmemi_store64(words, (long)w[0]);
    char *in = ishmemi_team_record(slot, next) - 16 + 8 * (ulong)(epoch % 2);
    ishmemi_ctrl_store(in, (long)w[0], next); /* before the flag store that follows (ring order too) */
    return w[0];
}

/* Syncs team slot `slot` as part of a call of signature `sig`, compared
 * with the other members' calls: through the sync words, or through the
 * control segment (above), where device syncs interoperate with the
 * host's. */
ISHMEMI_COLD void ishmemi_sync_ctrl(int slot, const ishmemi_team_t *t, ulong sig);
ISHMEMI_INLINE void ishmemi_sync_team(int slot, ulong sig) {
    const ishmemi_team_t *t = ishmemi_get_team(slot);
    if (ishmemi_sync_in_heap())
        ishmemi_sync_heap(slot, t, sig);
    else
        ishmemi_sync_ctrl(slot, t, sig);
}

/* The control segment's sync, out of line: on GPUs only jobs above 256
 * PEs take it, and inlined (with its call signatures) it made the small
 * broadcasts of 4 PEs on one H200 4-9% slower, which took none of it
 * (docs/performance.md, "GPU: control-segment call signatures"). */
ISHMEMI_COLD void ishmemi_sync_ctrl(int slot, const ishmemi_team_t *t, ulong sig) {
    int n = t->size, rank = t->my_rank;
    char *mine = ishmemi_team_record(slot, ishmemi_member(t, rank));
    long epoch = ishmemi_load64(mine + ISHMEMI_STATE->ctrl_epoch_offset) + 1;
    ishmemi_store64(mine + ISHMEMI_STATE->ctrl_epoch_offset, epoch);
    int check = n > 1 && ISHMEMI_STATE->coll_check;
    ulong w0 = check ? ishmemi_ctrl_sig_publish(slot, mine, ishmemi_member(t, (rank + 1) % n), sig, epoch) : 0;
    for (int dist = 1, round = 0; dist < n; dist <<= 1, round++) {
        int to = ishmemi_member(t, (rank + dist) % n);
        char *flag = ishmemi_team_record(slot, to) + 8 * round;
        ishmemi_ctrl_store(flag, epoch, to); /* another node's: after this PE's operations complete */
        /* A long wait records itself for the deadlock report (the sync
         * words' waits need not: the watchdog reads those words). */
        int from = ishmemi_member(t, (rank + n - dist % n) % n);
        ISHMEMI_WAIT_LOOP(ishmemi_load64(mine + 8 * round) < epoch, ;,
                          ISHMEMI_WAIT_WHAT(ISHMEMI_WAIT_TEAM_SYNC, round, slot), from, epoch);
    }
    if (check) {
        /* The predecessor pushed before its round-0 flag, awaited above. */
        ulong got = (ulong)ishmemi_load64(mine - 16 + 8 * (ulong)(epoch % 2));
        if (got >> 32 == (ulong)(uint)epoch && got != w0) ishmemi_ctrl_sig_mismatch(slot, epoch);
    }
    ishmemi_fence_all();
}

ISHMEMI_INLINE void ishmemi_sync_world(void) { ishmemi_sync_team(0, ISHMEMI_SIG_SYNC); }

/* ----- low-latency (LL) collectives: small fcollect, alltoall and
 * reductions on GPU devices. Each member sends every other member one
 * message in LL words (sync_words.rs: 4 data bytes and a 4-byte flag in
 * one 8-byte store) into its buffer at the receiver, and reads the ones it
 * receives from its own memory as their flags arrive: one flight of
 * stores, no fence and no separate signal. Taken alike on every member:
 * the conditions depend on the team, the job and the size only. */
ISHMEMI_INLINE int ishmemi_ll_ok(int slot, const ishmemi_team_t *t, size_t bytes) {
    return ishmemi_sync_in_heap() && slot < ISHMEMI_SYNC_LL_SLOTS && ISHMEMI_STATE->n_pes <= ISHMEMI_SYNC_LL_PES &&
           bytes > 0 && bytes <= ISHMEMI_SYNC_LL_BYTES && t->size > 1 && ishmemi_team_all_local(t);
}

/* The count of the pair (this PE, `pe`)'s next LL collective on `slot`
 * (read by every work-item of a group before the leader advances it). */
ISHMEMI_INLINE ulong ishmemi_ll_next(int slot, int pe) {
    return (ulong)ishmemi_own_load64(ishmemi_pair_words(slot, pe) + 2) + 1;
}

/* The next LL counts with every member, by team rank (this PE's own entry
 * unused), with their flow control (ishmemi_ll_send_all): returns the
 * ranks (bit r) whose member has not yet finished reading what this PE
 * sent it at count c - 2, the buffer's previous use (its LLDONE word here,
 * usually there already). Loaded ISHMEMI_BATCH members at a time; in a
 * team of two, the count alone (see ISHMEMI_LL_PAIR). */
ISHMEMI_NOINLINE ulong ishmemi_ll_counts(int slot, const ishmemi_team_t *t, ulong *c) {
    int size = t->size, my = t->my_rank, start = t->start, stride = t->stride;
    ulong busy = 0;
    if (ISHMEMI_LL_PAIR(t)) { /* its flow control is read as it is sent to (ishmemi_ll_send) */
        c[my] = 0;
        c[1 - my] = ishmemi_ll_next(slot, start + (1 - my) * stride);
        return 0;
    }
    for (int r0 = 0; r0 < size; r0 += ISHMEMI_BATCH) {
        ulong x[ISHMEMI_BATCH], d[ISHMEMI_BATCH];
        ISHMEMI_UNROLL
        for (int j = 0; j < ISHMEMI_BATCH; j++) {
            int r = r0 + j, pe = start + r * stride;
            x[j] = d[j] = 0;
            if (r < size && r != my) {
                x[j] = ishmemi_ll_next(slot, pe);
                d[j] = (ulong)ishmemi_peek64(ishmemi_sync_word(ISHMEMI_SYNC_LLDONE, slot, pe));
            }
        }
        ISHMEMI_UNROLL
        for (int j = 0; j < ISHMEMI_BATCH; j++) {
            if (r0 + j >= size) break;
            c[r0 + j] = x[j];
            if (x[j] > 2 && d[j] < x[j] - 2) busy |= 1ul << (r0 + j);
        }
    }
    return busy;
}

/* Marks the pair (this PE, `pe`)'s LL collective of count `c` as one that
 * waits (the pair's word 3, by the first work-item of those waiting for
 * it: `lid` 0), before it waits for `pe`'s message or for `pe` to read an
 * earlier one: while a pair's marked count is above its done count (word
 * 2), the watchdog looks for what it waits for (runtime/src/watch.rs).
 * Stored where the work-item is about to wait anyway: marking every pair
 * when the collective began cost small collectives 5% on H200s. */
ISHMEMI_INLINE void ishmemi_ll_waits(int slot, int pe, ulong c, size_t lid) {
    if (lid == 0) ishmemi_own_store64(ishmemi_pair_words(slot, pe) + 3, (long)c);
}

/* The LL buffer of sender `from` for count `c` on `slot`, in this PE's heap. */
ISHMEMI_INLINE ulong *ishmemi_ll_buf(int slot, int from, ulong c) {
    return (ulong *)ISHMEMI_STATE->sync_words + ISHMEMI_SYNC_LL +
           (((ulong)slot * ISHMEMI_SYNC_LL_PES + (ulong)from) * 2 + (c & 1)) * ISHMEMI_SYNC_LL_WORDS;
}

/* Bytes 4k..4k+3 of the n bytes at src (zero past the end). */
ISHMEMI_INLINE uint ishmemi_ll_pack(const char *src, size_t n, size_t k) {
    size_t o = 4 * k;
    if (o + 4 <= n && (((ulong)src + o) & 3) == 0) return *(const uint *)(src + o);
    uint w = 0;
    for (size_t b = 0; b < 4 && o + b < n; b++) w |= (uint)(uchar)src[o + b] << (8 * b);
    return w;
}

ISHMEMI_INLINE void ishmemi_ll_unpack(char *dst, size_t n, size_t k, uint w) {
    size_t o = 4 * k;
    if (o + 4 <= n && (((ulong)dst + o) & 3) == 0) {
        *(uint *)(dst + o) = w;
        return;
    }
    for (size_t b = 0; b < 4 && o + b < n; b++) dst[o + b] = (char)(w >> (8 * b));
}

/* The flag half of an LL word of count `c` from a call of signature `sig`. */
ISHMEMI_INLINE ulong ishmemi_ll_flag(ulong c, ulong sig) { return (c & 0xffff | (ulong)ishmemi_sig16(sig) << 16) << 32; }

/* Waits for word `p` to carry count `c` and returns the word. (A buffer
 * holds count c - 2's words or c's: 16 bits of the count tell them
 * apart.) */
ISHMEMI_INLINE ulong ishmemi_ll_wait(const ulong *p, ulong c) {
    ulong w;
    do {
        w = ishmemi_ll_load(p);
    } while ((uint)(w >> 32 & 0xffff) != (uint)(c & 0xffff));
    return w;
}

/* 0, or, when LL word `w` came from a call whose bits are not `s16`, its
 * bits | ISHMEMI_SIG_BAD (reported by the caller out of its loops:
 * ishmemi_flag_wait). Only a message's first word is checked (by the
 * work-item that reads it): every word of a message carries the same bits, and a
 * member that expects other words than were sent (another size) finds
 * another call's bits in the first. */
ISHMEMI_INLINE uint ishmemi_ll_sig(ulong w, uint s16) {
    return (uint)(w >> 48) != s16 ? (uint)(w >> 48) | ISHMEMI_SIG_BAD : 0;
}

/* Work-item `lid` of `lsz` sends its share of the n bytes at src to `pe`
 * in the LL collective of count `c`, once `pe` has finished reading what
 * this PE sent it at count c - 2 (the buffer's previous use; its LLDONE
 * word here, usually there already): a team of two (ISHMEMI_LL_PAIR). */
ISHMEMI_INLINE void ishmemi_ll_send(int slot, int pe, ulong c, const char *src, size_t n, size_t lid,
                                   size_t lsz, ulong sig) {
    if (c > 2) {
        ulong *done = ishmemi_sync_word(ISHMEMI_SYNC_LLDONE, slot, pe);
        if ((ulong)ishmemi_peek64(done) < c - 2) {
            ishmemi_ll_waits(slot, pe, c, lid);
            while ((ulong)ishmemi_peek64(done) < c - 2) ;
        }
    }
    ulong *buf = (ulong *)ishmemi_peer(ishmemi_ll_buf(slot, ISHMEMI_STATE->my_pe, c), pe);
    ulong flag = ishmemi_ll_flag(c, sig);
    for (size_t k = lid; k < (n + 3) / 4; k += lsz) ishmemi_ll_store(buf + k, flag | ishmemi_ll_pack(src, n, k));
}

/* Waits until `pe` has finished reading what this PE sent it in the LL
 * collective of count c - 2 (ishmemi_ll_counts found it had not). */
ISHMEMI_NOINLINE void ishmemi_ll_wait_done(int slot, int pe, ulong c) {
    ulong *done = ishmemi_sync_word(ISHMEMI_SYNC_LLDONE, slot, pe);
    ishmemi_ll_waits(slot, pe, c, 0);
    while ((ulong)ishmemi_peek64(done) < c - 2) ;
}

/* How `lsz` work-items share the messages of a team's m other members
 * (k = 1..m places after this PE): with at least as many work-items as
 * members, lsz / m of them take each member (work-item lid: member lid /
 * sub + 1, its words from lid % sub by sub; the rest idle); with fewer,
 * each takes whole members (lid + 1, then by lsz). A work-item has one
 * member at a time, its values computed once, and different members'
 * stores and waits are in flight together. */
ISHMEMI_INLINE void ishmemi_ll_share(int m, size_t lid, size_t lsz, int *k0, int *kstep, uint *w0,
                                    uint *wstep) {
    if (lsz >= (size_t)m) {
        uint sub = (uint)lsz / (uint)m, q = (uint)lid / sub;
        *k0 = (int)q + 1;
        *kstep = m;
        *w0 = (uint)lid - q * sub;
        *wstep = sub;
    } else {
        *k0 = (int)lid + 1;
        *kstep = (int)lsz;
        *w0 = 0;
        *wstep = 1;
    }
}

/* Work-item `lid` of `lsz`'s share (ishmemi_ll_share) of sending every
 * other member its n bytes in the LL collective of counts `c` (member r:
 * the n bytes at src + r * stride), to members `busy` (ishmemi_ll_counts)
 * once they are ready. */
ISHMEMI_INLINE void ishmemi_ll_send_all(int slot, const ishmemi_team_t *t, const ulong *c, ulong busy,
                                       const char *src, size_t n, size_t stride, size_t lid, size_t lsz,
                                       ulong sig) {
    int m = t->size - 1, k0, kstep;
    uint w0, wstep, words = (uint)((n + 3) / 4);
    ishmemi_ll_share(m, lid, lsz, &k0, &kstep, &w0, &wstep);
    if (w0 >= words) return; /* no words here: not a waiter either */
    for (int k = k0; k <= m; k += kstep) {
        int r = ishmemi_rank_after(t, k), pe = ishmemi_member(t, r);
        if (busy >> r & 1) ishmemi_ll_wait_done(slot, pe, c[r]);
        ulong *buf = (ulong *)ishmemi_peer(ishmemi_ll_buf(slot, ISHMEMI_STATE->my_pe, c[r]), pe);
        ulong flag = ishmemi_ll_flag(c[r], sig);
        const char *s = src + (size_t)r * stride;
        for (uint w = w0; w < words; w += wstep) ishmemi_ll_store(buf + w, flag | ishmemi_ll_pack(s, n, w));
    }
}

/* Work-item `lid` of `lsz` receives its share of the n bytes `pe` sends
 * in the LL collective of count `c`; returns what ishmemi_ll_sig found in
 * the first word (0: a call of bits `s16`). Each work-item's first word
 * is received apart, out of the loop, and a word 0 of another call ends
 * the receive there: that call may have sent fewer words than this one
 * waits for. (Other work-items of the group may still wait for words the
 * other call never sent: the report of the one with word 0 ends the job.
 * A check that left the loop cost small GPU collectives 2-4%, and one made
 * by work-item 0 before the others began 6-20%: docs/performance.md.) */
ISHMEMI_INLINE uint ishmemi_ll_recv(int slot, int pe, ulong c, char *dst, size_t n, size_t lid,
                                   size_t lsz, uint s16) {
    const ulong *buf = ishmemi_ll_buf(slot, pe, c);
    size_t words = (n + 3) / 4, k = lid;
    uint bad = 0;
    ishmemi_ll_waits(slot, pe, c, lid);
    if (k < words) {
        ulong w = ishmemi_ll_wait(buf + k, c);
        if (k == 0) bad = ishmemi_ll_sig(w, s16);
        ishmemi_ll_unpack(dst, n, k, (uint)w);
        k += lsz;
    }
    if (!bad)
        for (; k < words; k += lsz) ishmemi_ll_unpack(dst, n, k, (uint)ishmemi_ll_wait(buf + k, c));
    return bad;
}

/* Work-item `lid` of `lsz`'s share (ishmemi_ll_share) of receiving every
 * other member's n bytes in the LL collective of counts `c`: member r's
 * into dest + r * n, or (dest 0) only waited for. The work-item with a
 * member's first word marks the pair as waiting and checks the word's
 * signature bits; returns 0, or another call's bits | ISHMEMI_SIG_BAD with
 * their sender in *from, at once (the other call may have sent fewer
 * words than this one waits for: the caller reports before it waits for
 * anything else). */
ISHMEMI_INLINE uint ishmemi_ll_recv_all(int slot, const ishmemi_team_t *t, const ulong *c, char *dest,
                                       size_t n, size_t lid, size_t lsz, uint s16, int *from) {
    int m = t->size - 1, k0, kstep;
    uint w0, wstep, words = (uint)((n + 3) / 4);
    ishmemi_ll_share(m, lid, lsz, &k0, &kstep, &w0, &wstep);
    for (int k = k0; k <= m; k += kstep) {
        int r = ishmemi_rank_after(t, k), pe = ishmemi_member(t, r);
        const ulong *buf = ishmemi_ll_buf(slot, pe, c[r]);
        if (w0 == 0) ishmemi_ll_waits(slot, pe, c[r], 0);
        for (uint w = w0; w < words; w += wstep) {
            ulong x = ishmemi_ll_wait(buf + w, c[r]);
            if (w == 0 && ishmemi_ll_sig(x, s16)) {
                *from = pe;
                return ishmemi_ll_sig(x, s16);
            }
            if (dest) ishmemi_ll_unpack(dest + (size_t)r * n, n, w, (uint)x);
        }
    }
    return 0;
}

/* The `sz` bytes (1, 2, 4 or 8, at a multiple of sz) at byte `off` of what
 * `pe` sends in the LL collective of count `c`, as a little-endian value,
 * waiting for them (a team of two: ISHMEMI_LL_PAIR). With `bad` (a
 * work-item's first element, out of its loop), at `off` 0 the first
 * word's signature bits as ishmemi_ll_sig finds them go to *bad first,
 * and another call's second word is not waited for (a call of 4 bytes or
 * less sends none). */
ISHMEMI_INLINE ulong ishmemi_ll_read(int slot, int pe, ulong c, size_t off, size_t sz, uint s16, uint *bad) {
    const ulong *buf = ishmemi_ll_buf(slot, pe, c) + off / 4;
    ulong w0 = ishmemi_ll_wait(buf, c);
    uint b = bad && off == 0 ? ishmemi_ll_sig(w0, s16) : 0;
    if (bad) *bad = b;
    if (sz == 8) return (ulong)(uint)w0 | (b ? 0 : (ulong)(uint)ishmemi_ll_wait(buf + 1, c) << 32);
    ulong w = (ulong)(uint)w0 >> (8 * (off % 4));
    return sz == 4 ? w : w & ((1ul << (8 * sz)) - 1);
}

/* The same bytes of what team ranks r0 .. r0 + ISHMEMI_BATCH - 1 send
 * (those in the team other than this PE; v[j] for rank r0 + j), waited
 * for with their loads in flight together; at `off` 0, a word of another
 * call sets *bad and *from as ishmemi_ll_recv_all does. A word once
 * arrived stays until this PE's ishmemi_ll_done, so reloading it is safe. */
ISHMEMI_INLINE void ishmemi_ll_read_batch(int slot, const ishmemi_team_t *t, const ulong *c, int r0, size_t off,
                                         size_t sz, uint s16, uint *bad, int *from, ulong *v) {
    const ulong *p[ISHMEMI_BATCH];
    ulong w0[ISHMEMI_BATCH], w1[ISHMEMI_BATCH];
    uint want[ISHMEMI_BATCH];
    int two = sz == 8, pending;
    ISHMEMI_UNROLL
    for (int j = 0; j < ISHMEMI_BATCH; j++) {
        int r = r0 + j, on = r < t->size && r != t->my_rank;
        p[j] = on ? ishmemi_ll_buf(slot, ishmemi_member(t, r), c[r]) + off / 4 : 0;
        want[j] = on ? (uint)(c[r] & 0xffff) : 0;
        w0[j] = w1[j] = 0;
    }
    do {
        pending = 0;
        ISHMEMI_UNROLL
        for (int j = 0; j < ISHMEMI_BATCH; j++)
            if (p[j]) {
                w0[j] = ishmemi_ll_load(p[j]);
                if (two) w1[j] = ishmemi_ll_load(p[j] + 1);
                /* The second word of another call's first element is not
                 * waited for (a call of 4 bytes or less sends none). */
                pending |= (uint)(w0[j] >> 32 & 0xffff) != want[j] ||
                           (two && (uint)(w1[j] >> 32 & 0xffff) != want[j] &&
                            !(off == 0 && ishmemi_ll_sig(w0[j], s16)));
            }
    } while (pending);
    ISHMEMI_UNROLL
    for (int j = 0; j < ISHMEMI_BATCH; j++) {
        ulong w = (uint)w0[j];
        if (p[j] && off == 0 && ishmemi_ll_sig(w0[j], s16))
            *bad = ishmemi_ll_sig(w0[j], s16), *from = ishmemi_member(t, r0 + j);
        if (two)
            w |= (ulong)(uint)w1[j] << 32;
        else
            w = sz == 4 ? w >> (8 * (off % 4)) : w >> (8 * (off % 4)) & ((1ul << (8 * sz)) - 1);
        v[j] = w;
    }
}

/* Ends an LL collective of counts `c` (after every work-item has read the
 * previous counts and finished reading what it received): the leader
 * stores them as the pairs' counts and tells the other member of each
 * pair that took part that it has finished reading (its LLDONE word
 * there). `root` < 0: every member sent every other one message; else
 * only team rank `root` sent (a broadcast), so only its pairs took part,
 * and the root acknowledges too although it received nothing: the pair's
 * count moved on, and the member's next send to it (an fcollect after
 * broadcasts) waits for the acknowledgement of count c - 2. */
ISHMEMI_INLINE void ishmemi_ll_done(int slot, const ishmemi_team_t *t, const ulong *c, size_t lid,
                                   int root) {
    if (lid != 0) return;
    for (int r = 0; r < t->size; r++) {
        if (r == t->my_rank || (root >= 0 && r != root && t->my_rank != root)) continue;
        int pe = ishmemi_member(t, r);
        ishmemi_own_store64(ishmemi_pair_words(slot, pe) + 2, (long)c[r]);
        ishmemi_store_relaxed64(ishmemi_peer(ishmemi_sync_word(ISHMEMI_SYNC_LLDONE, slot, ISHMEMI_STATE->my_pe), pe),
                                (long)c[r]);
    }
}

/* fcollect (alltoall = 0) or alltoall (1) of n bytes a member by LL words,
 * shared by `lid` of `lsz` work-items (the caller brackets it with group
 * barriers and calls ishmemi_ll_done after the last). */
ISHMEMI_INLINE void ishmemi_ll_exchange(int slot, const ishmemi_team_t *t, const ulong *c, ulong busy,
                                       char *dest, const char *src, size_t n, int alltoall,
                                       size_t lid, size_t lsz, ulong sig) {
    if (ISHMEMI_LL_PAIR(t)) {
        int r = 1 - t->my_rank, pe = ishmemi_member(t, r);
        ishmemi_ll_send(slot, pe, c[r], alltoall ? src + (size_t)r * n : src, n, lid, lsz, sig);
        ishmemi_group_copy(dest + (size_t)t->my_rank * n, alltoall ? src + (size_t)t->my_rank * n : src, n, lid, lsz);
        uint b = ishmemi_ll_recv(slot, pe, c[r], dest + (size_t)r * n, n, lid, lsz, ishmemi_sig16(sig));
        ishmemi_sig_report(b, slot, pe, sig);
        return;
    }
    ishmemi_ll_send_all(slot, t, c, busy, src, n, alltoall ? n : 0, lid, lsz, sig);
    ishmemi_group_copy(dest + (size_t)t->my_rank * n, alltoall ? src + (size_t)t->my_rank * n : src, n, lid, lsz);
#ifndef ISHMEMI_ITEMS_PROGRESS
    /* A work-item waits for members other work-items sent to: where
     * work-items need not progress independently (a CPU runtime runs a
     * group's items one after another between barriers), every send is
     * made before any wait. */
    if (lsz > 1) work_group_barrier(CLK_GLOBAL_MEM_FENCE);
#endif
    int from = 0;
    uint bad = ishmemi_ll_recv_all(slot, t, c, dest, n, lid, lsz, ishmemi_sig16(sig), &from);
    ishmemi_sig_report(bad, slot, from, sig);
}

/* broadcast of n bytes from team rank `root` by LL words, shared by `lid`
 * of `lsz` work-items: the root writes into every other member's buffer
 * and copies its own dest; the others read the root's words into dest. */
ISHMEMI_INLINE void ishmemi_ll_bcast(int slot, const ishmemi_team_t *t, const ulong *c, ulong busy,
                                    char *dest, const char *src, size_t n, int root,
                                    size_t lid, size_t lsz, ulong sig) {
    if (t->my_rank == root) {
        if (ISHMEMI_LL_PAIR(t))
            ishmemi_ll_send(slot, ishmemi_member(t, 1 - root), c[1 - root], src, n, lid, lsz, sig);
        else
            ishmemi_ll_send_all(slot, t, c, busy, src, n, 0, lid, lsz, sig);
        ishmemi_group_copy(dest, src, n, lid, lsz);
    } else {
        int from = ishmemi_member(t, root);
        ishmemi_sig_report(ishmemi_ll_recv(slot, from, c[root], dest, n, lid, lsz, ishmemi_sig16(sig)), slot, from, sig);
    }
}

/* ----- collectives (one work-item per PE calls, as on the host).
 * Through the control segment: sync, data phase through the routing
 * helpers (load/store or ring), sync. With sync words in the heap, the
 * data is pushed and signalled, with no sync before it: OpenSHMEM requires
 * every member's dest to be ready for the result when any member calls
 * (and pSync-free team collectives leave nothing else to wait for), and a
 * member's source is its own; each member returns once what it receives
 * has arrived. */

ISHMEMI_INLINE int ishmemi_broadcast_bytes(int team, void *dest, const void *src, size_t n, int root) {
    const ishmemi_team_t *t = ishmemi_get_team(team);
    if (!t || root < 0 || root >= t->size) return -1;
    ulong sig = ISHMEMI_SIG(ISHMEMI_COLL_BROADCAST, 0, root, n);
    if (ishmemi_ll_ok(team, t, n)) {
        ishmemi_check(ISHMEMI_RING_OP_PUT, dest, n, ISHMEMI_STATE->my_pe);
        ishmemi_check(ISHMEMI_RING_OP_GET, src, n, ISHMEMI_STATE->my_pe);
        ulong c[ISHMEMI_SYNC_LL_PES];
        ulong busy = ishmemi_ll_counts(team, t, c);
        ishmemi_ll_bcast(team, t, c, busy, (char *)dest, (const char *)src, n, root, 0, 1, sig);
        ishmemi_ll_done(team, t, c, 0, root);
        return 0;
    }
    if (ishmemi_sync_in_heap()) {
        /* The root puts into every member's dest and signals it; the
         * others wait for the root's signal. */
        int rpe = ishmemi_member(t, root);
        if (t->my_rank == root) {
            for (int k = 0; k < t->size && n; k++) ishmemi_put_bytes(dest, src, n, ishmemi_member(t, (root + k) % t->size), 0);
            ishmemi_fence_release();
            ishmemi_signal_members(team, t, ishmemi_sig16(sig));
        } else {
            ishmemi_await_pe(team, rpe, sig);
        }
        return 0;
    }
    ishmemi_sync_team(team, sig);
    if (n) ishmemi_get_bytes(dest, src, n, ishmemi_member(t, root), 0);
    ishmemi_sync_team(team, sig);
    return 0;
}

ISHMEMI_INLINE int ishmemi_fcollect_bytes(int team, void *dest, const void *src, size_t n) {
    const ishmemi_team_t *t = ishmemi_get_team(team);
    if (!t) return -1;
    ulong sig = ISHMEMI_SIG(ISHMEMI_COLL_FCOLLECT, 0, 0, n);
    if (ishmemi_ll_ok(team, t, n)) {
        ishmemi_check(ISHMEMI_RING_OP_PUT, dest, n * t->size, ISHMEMI_STATE->my_pe);
        ishmemi_check(ISHMEMI_RING_OP_GET, src, n, ISHMEMI_STATE->my_pe);
        ulong c[ISHMEMI_SYNC_LL_PES];
        ulong busy = ishmemi_ll_counts(team, t, c);
        ishmemi_ll_exchange(team, t, c, busy, (char *)dest, (const char *)src, n, 0, 0, 1, sig);
        ishmemi_ll_done(team, t, c, 0, -1);
        return 0;
    }
    int heap = ishmemi_sync_in_heap();
    if (!heap) ishmemi_sync_team(team, sig);
    for (int k = 0; k < t->size && n; k++) {
        int r = (t->my_rank + k) % t->size;
        ishmemi_put_bytes((char *)dest + t->my_rank * n, src, n, ishmemi_member(t, r), 0);
    }
    ishmemi_sync_team(team, sig);
    return 0;
}

ISHMEMI_INLINE int ishmemi_alltoall_bytes(int team, void *dest, const void *src, size_t n) {
    const ishmemi_team_t *t = ishmemi_get_team(team);
    if (!t) return -1;
    ulong sig = ISHMEMI_SIG(ISHMEMI_COLL_ALLTOALL, 0, 0, n);
    if (ishmemi_ll_ok(team, t, n)) {
        ishmemi_check(ISHMEMI_RING_OP_PUT, dest, n * t->size, ISHMEMI_STATE->my_pe);
        ishmemi_check(ISHMEMI_RING_OP_GET, src, n * t->size, ISHMEMI_STATE->my_pe);
        ulong c[ISHMEMI_SYNC_LL_PES];
        ulong busy = ishmemi_ll_counts(team, t, c);
        ishmemi_ll_exchange(team, t, c, busy, (char *)dest, (const char *)src, n, 1, 0, 1, sig);
        ishmemi_ll_done(team, t, c, 0, -1);
        return 0;
    }
    int heap = ishmemi_sync_in_heap();
    if (!heap) ishmemi_sync_team(team, sig);
    for (int k = 0; k < t->size && n; k++) {
        int j = (t->my_rank + k) % t->size;
        ishmemi_put_bytes((char *)dest + t->my_rank * n, (const char *)src + j * n, n,
                          ishmemi_member(t, j), 0);
    }
    ishmemi_sync_team(team, sig);
    return 0;
}

/* ----- work-group collectives: the leader syncs the team, the whole group
 * moves the data (the group's put/get: its threads' loads and stores, the
 * copy engine past the group cutover, the ring to PEs it cannot reach),
 * and the leader completes and syncs again. */
ISHMEMI_INLINE void ishmemi_wg_sync_team(int team, ulong sig) {
    work_group_barrier(CLK_GLOBAL_MEM_FENCE);
    if (get_local_linear_id() == 0) {
        ishmemi_ring_quiet();
        ishmemi_fence_all(); /* the group's stores, ordered by the barrier before */
        if (ishmemi_sync_in_heap())
            ishmemi_sync_team_fenced(team, sig);
        else
            ishmemi_sync_team(team, sig);
    }
    work_group_barrier(CLK_GLOBAL_MEM_FENCE);
}

ISHMEMI_INLINE int ishmemi_wg_broadcast_bytes(int team, void *dest, const void *src, size_t n,
                                             int root) {
    const ishmemi_team_t *t = ishmemi_get_team(team);
    if (!t || root < 0 || root >= t->size) return -1;
    ulong sig = ISHMEMI_SIG(ISHMEMI_COLL_BROADCAST, 0, root, n);
    if (ishmemi_ll_ok(team, t, n)) {
        size_t lid = get_local_linear_id();
        ishmemi_check(ISHMEMI_RING_OP_PUT, dest, n, ISHMEMI_STATE->my_pe);
        ishmemi_check(ISHMEMI_RING_OP_GET, src, n, ISHMEMI_STATE->my_pe);
        work_group_barrier(CLK_GLOBAL_MEM_FENCE);
        ulong c[ISHMEMI_SYNC_LL_PES];
        ulong busy = ishmemi_ll_counts(team, t, c);
        ishmemi_ll_bcast(team, t, c, busy, (char *)dest, (const char *)src, n, root, lid,
                         ishmemi_wg_size(), sig);
        work_group_barrier(CLK_GLOBAL_MEM_FENCE);
        ishmemi_ll_done(team, t, c, lid, root);
        work_group_barrier(CLK_GLOBAL_MEM_FENCE);
        return 0;
    }
    if (ishmemi_sync_in_heap()) {
        /* As the thread form: the root's group puts into every member's
         * dest, its leader signals them; the others' leaders wait. */
        if (t->my_rank == root) {
            for (int k = 0; k < t->size && n; k++)
                ishmemi_wg_put_bytes(dest, src, n, ishmemi_member(t, (root + k) % t->size), 0);
            if (get_local_linear_id() == 0) {
                ishmemi_ring_quiet();
                ishmemi_fence_all(); /* the group's stores, ordered by the barrier in the put */
                ishmemi_signal_members(team, t, ishmemi_sig16(sig));
            }
        } else if (get_local_linear_id() == 0) {
            ishmemi_await_pe(team, ishmemi_member(t, root), sig);
        }
        work_group_barrier(CLK_GLOBAL_MEM_FENCE);
        return 0;
    }
    ishmemi_wg_sync_team(team, sig);
    if (n) ishmemi_wg_get_bytes(dest, src, n, ishmemi_member(t, root), 0);
    ishmemi_wg_sync_team(team, sig);
    return 0;
}

ISHMEMI_INLINE int ishmemi_wg_fcollect_bytes(int team, void *dest, const void *src, size_t n) {
    const ishmemi_team_t *t = ishmemi_get_team(team);
    if (!t) return -1;
    ulong sig = ISHMEMI_SIG(ISHMEMI_COLL_FCOLLECT, 0, 0, n);
    if (ishmemi_ll_ok(team, t, n)) {
        size_t lid = get_local_linear_id();
        ishmemi_check(ISHMEMI_RING_OP_PUT, dest, n * t->size, ISHMEMI_STATE->my_pe);
        ishmemi_check(ISHMEMI_RING_OP_GET, src, n, ISHMEMI_STATE->my_pe);
        work_group_barrier(CLK_GLOBAL_MEM_FENCE);
        ulong c[ISHMEMI_SYNC_LL_PES];
        ulong busy = ishmemi_ll_counts(team, t, c);
        ishmemi_ll_exchange(team, t, c, busy, (char *)dest, (const char *)src, n, 0, lid,
                            ishmemi_wg_size(), sig);
        work_group_barrier(CLK_GLOBAL_MEM_FENCE);
        ishmemi_ll_done(team, t, c, lid, -1);
        work_group_barrier(CLK_GLOBAL_MEM_FENCE);
        return 0;
    }
    if (!ishmemi_sync_in_heap()) ishmemi_wg_sync_team(team, sig);
    for (int k = 0; k < t->size && n; k++) {
        int r = (t->my_rank + k) % t->size;
        ishmemi_wg_put_bytes((char *)dest + t->my_rank * n, src, n, ishmemi_member(t, r), 0);
    }
    ishmemi_wg_sync_team(team, sig);
    return 0;
}

ISHMEMI_INLINE int ishmemi_wg_alltoall_bytes(int team, void *dest, const void *src, size_t n) {
    const ishmemi_team_t *t = ishmemi_get_team(team);
    if (!t) return -1;
    ulong sig = ISHMEMI_SIG(ISHMEMI_COLL_ALLTOALL, 0, 0, n);
    if (ishmemi_ll_ok(team, t, n)) {
        size_t lid = get_local_linear_id();
        ishmemi_check(ISHMEMI_RING_OP_PUT, dest, n * t->size, ISHMEMI_STATE->my_pe);
        ishmemi_check(ISHMEMI_RING_OP_GET, src, n * t->size, ISHMEMI_STATE->my_pe);
        work_group_barrier(CLK_GLOBAL_MEM_FENCE);
        ulong c[ISHMEMI_SYNC_LL_PES];
        ulong busy = ishmemi_ll_counts(team, t, c);
        ishmemi_ll_exchange(team, t, c, busy, (char *)dest, (const char *)src, n, 1, lid,
                            ishmemi_wg_size(), sig);
        work_group_barrier(CLK_GLOBAL_MEM_FENCE);
        ishmemi_ll_done(team, t, c, lid, -1);
        work_group_barrier(CLK_GLOBAL_MEM_FENCE);
        return 0;
    }
    if (!ishmemi_sync_in_heap()) ishmemi_wg_sync_team(team, sig);
    for (int k = 0; k < t->size && n; k++) {
        int j = (t->my_rank + k) % t->size;
        ishmemi_wg_put_bytes((char *)dest + t->my_rank * n, (const char *)src + j * n, n,
                             ishmemi_member(t, j), 0);
    }
    ishmemi_wg_sync_team(team, sig);
    return 0;
}

/* collect (element counts differ per member): each member publishes its
 * count in its team record's scratch word for the next sync (the host's
 * protocol: parity of that sync's epoch), syncs, sums the counts of the
 * members before it for its offset, puts its block to every member, and
 * syncs again. `elem` is the element size in bytes. */
ISHMEMI_INLINE int ishmemi_collect_bytes(int team, void *dest, const void *src, size_t nelems,
                                        size_t elem) {
    const ishmemi_team_t *t = ishmemi_get_team(team);
    if (!t) return -1;
    ulong sig = ISHMEMI_SIG(ISHMEMI_COLL_COLLECT, elem, 0, 0);
    if (ishmemi_sync_in_heap()) {
        /* The counts go into every member's COUNTS[slot][parity][me] (the
         * parity of this slot's collect sequence: a member two collects
         * ahead has had this one's second signal from every member, sent
         * after they read these counts), then signals, offsets, data,
         * signals. */
        ulong *seq = (ulong *)ISHMEMI_STATE->sync_words + ISHMEMI_SYNC_CSEQ + team;
        ulong q = (ulong)ishmemi_own_load64(seq) + 1;
        ishmemi_own_store64(seq, (long)q);
        ulong counts = ISHMEMI_SYNC_COUNTS + (q & 1) * ISHMEMI_SYNC_SLOTS * ISHMEMI_SYNC_MAX_PES;
        int my = ishmemi_member(t, t->my_rank);
        ulong *mine = ishmemi_sync_word(counts, team, my);
        ishmemi_own_store64(mine, (long)nelems);
        for (int k = 1; k < t->size; k++) {
            int pe = ishmemi_member(t, (t->my_rank + k) % t->size);
            ishmemi_sync_store(mine, nelems, pe); /* the sync below fences it */
        }
        ishmemi_sync_heap(team, t, sig);
        size_t off = 0;
        for (int r = 0; r < t->my_rank; r++)
            off += (ulong)ishmemi_peek64(ishmemi_sync_word(counts, team, ishmemi_member(t, r)));
        for (int k = 0; k < t->size && nelems; k++) {
            int r = (t->my_rank + k) % t->size;
            ishmemi_put_bytes((char *)dest + off * elem, src, nelems * elem, ishmemi_member(t, r), 0);
        }
        ishmemi_sync_heap(team, t, sig);
        return 0;
    }
    char *mine = ishmemi_team_record(team, ishmemi_member(t, t->my_rank));
    long epoch = ishmemi_load64(mine + ISHMEMI_STATE->ctrl_epoch_offset) + 1;
    ulong scratch = ISHMEMI_STATE->ctrl_epoch_offset + 8 + 8 * (ulong)(epoch % 2);
    ishmemi_store64(mine + scratch, (long)nelems);
    ishmemi_sync_team(team, sig);
    size_t off = 0;
    for (int r = 0; r < t->my_rank; r++) {
        int pe = ishmemi_member(t, r);
        off += ishmemi_ctrl_read(ishmemi_team_record(team, pe) + scratch, pe);
    }
    for (int k = 0; k < t->size && nelems; k++) {
        int r = (t->my_rank + k) % t->size;
        ishmemi_put_bytes((char *)dest + off * elem, src, nelems * elem, ishmemi_member(t, r), 0);
    }
    ishmemi_ring_quiet();
    ishmemi_sync_team(team, sig);
    return 0;
}

/* Scratch half `part` of this PE's own on team slot `slot` (sync words
 * SCRATCH): where the chunked reductions and scans of teams with members on
 * other nodes gather a chunk and fold it. */
ISHMEMI_INLINE char *ishmemi_coll_scratch(int slot, int part) {
    return (char *)((ulong *)ISHMEMI_STATE->sync_words + ISHMEMI_SYNC_SCRATCH +
                                   ((ulong)slot * 2 + (ulong)part) * ISHMEMI_SYNC_SCRATCH_WORDS);
}

/* Whether a reduction or scan moves its slices in chunks: some member is
 * reached only through the ring (one bulk get per member and chunk instead
 * of a round trip per element) and the scratch words are in the heap.
 * Taken alike on every member only in effect: each member picks its own
 * way to move its own slice. */
ISHMEMI_INLINE int ishmemi_coll_chunked(const ishmemi_team_t *t) {
    return ishmemi_sync_in_heap() && !ishmemi_team_all_local(t);
}

/* sum_inscan / sum_exscan (Intel SHMEM): member r's dest gets the sum of
 * members 0..r's sources (exscan: 0..r-1; member 0 gets zeros). Member r
 * owns element slice r and walks the members in order with a running sum,
 * reading each member's source element before writing its dest element, so
 * in place is safe. Chunked (ishmemi_coll_chunked): the running sums of a
 * chunk live in scratch half 0, each member's source chunk comes into half
 * 1 by one get, and each member's dest chunk leaves by one blocking put
 * (before the sums change). */
#define ISHMEMI_SCAN(T, G, P, EXCLUSIVE, ELEM)                                         \
    const ishmemi_team_t *t = ishmemi_get_team(team);                   \
    if (!t) return -1;                                                                 \
    ulong sig_ = ISHMEMI_SIG((EXCLUSIVE) ? ISHMEMI_COLL_EXSCAN : ISHMEMI_COLL_INSCAN, ELEM, 0, nelems); \
    ishmemi_sync_team(team, sig_);                                                     \
    size_t per = (nelems + t->size - 1) / t->size;                                     \
    size_t lo = min((size_t)t->my_rank * per, nelems), hi = min(lo + per, nelems);     \
    if (ishmemi_coll_chunked(t)) {                                                     \
        T *acc_ = (T *)ishmemi_coll_scratch(team, 0);    \
        T *in_ = (T *)ishmemi_coll_scratch(team, 1);     \
        size_t ch_ = ISHMEMI_SYNC_SCRATCH_BYTES / sizeof(T);                           \
        for (size_t c0 = lo; c0 < hi; c0 += ch_) {                                     \
            size_t n_ = min(ch_, hi - c0);                                             \
            for (size_t i = 0; i < n_; i++) acc_[i] = 0;                               \
            for (int r = 0; r < t->size; r++) {                                        \
                int pe_ = ishmemi_member(t, r);                                        \
                ishmemi_get_bytes(in_, source + c0, n_ * sizeof(T), pe_, 0);           \
                if (EXCLUSIVE) ishmemi_put_bytes(dest + c0, acc_, n_ * sizeof(T), pe_, 0); \
                for (size_t i = 0; i < n_; i++) acc_[i] = (T)(acc_[i] + in_[i]);       \
                if (!(EXCLUSIVE)) ishmemi_put_bytes(dest + c0, acc_, n_ * sizeof(T), pe_, 0); \
            }                                                                          \
        }                                                                              \
    } else {                                                                           \
        for (size_t i = lo; i < hi; i++) {                                             \
            T a = 0;                                                                   \
            for (int r = 0; r < t->size; r++) {                                        \
                T b = G(source + i, ishmemi_member(t, r));                             \
                if (EXCLUSIVE) P(dest + i, a, ishmemi_member(t, r));                   \
                a = (T)(a + b);                                                        \
                if (!(EXCLUSIVE)) P(dest + i, a, ishmemi_member(t, r));                \
            }                                                                          \
        }                                                                              \
    }                                                                                  \
    ishmemi_ring_quiet();                                                              \
    ishmemi_sync_team(team, sig_);                                                     \
    return 0;

/* Work-group form of a collective: the group's leader runs `CALL` between
 * group barriers (the data phase is the collective's own); every work-item
 * returns the result of the same argument check the collective makes. */
ISHMEMI_INLINE int ishmemi_coll_check(int team, int root) {
    const ishmemi_team_t *t = ishmemi_get_team(team);
    return t && root >= 0 && root < t->size ? 0 : -1;
}
#define ISHMEMI_WG_COLL(TEAM, ROOT, CALL)                                  \
    work_group_barrier(CLK_GLOBAL_MEM_FENCE);                              \
    int ok_ = ishmemi_coll_check(TEAM, ROOT);                              \
    if (ok_ == 0 && get_local_linear_id() == 0) (void)(CALL);              \
    work_group_barrier(CLK_GLOBAL_MEM_FENCE);                              \
    return ok_;

/* Reductions: member r owns slice r (reduce-scatter + allgather in one
 * pass), reading it from every member's source in member order and storing
 * the result into every member's dest; in place is safe because only the
 * owner touches its slice. When every member is reached by loads and
 * stores, the slice is read and written through the peers' addresses
 * directly (`LID` of `LSZ` work-items sharing it, neighbours on neighbouring
 * elements), the extents checked once; otherwise element by element with
 * `G`/`P`, the typed g/p routines (they route). */
#define ISHMEMI_REDUCE_STEP(T, OP, ACC, VAL) \
    {                                         \
        T a = (ACC), b = (VAL);               \
        (ACC) = (OP);                         \
    }
#define ISHMEMI_REDUCE_SLICE(T, OP, LID, LSZ)                                                  \
    size_t per = (nreduce + t->size - 1) / t->size;                                            \
    size_t lo = min((size_t)t->my_rank * per, nreduce), hi = min(lo + per, nreduce);           \
    size_t i = lo + (LID);                                                                     \
    /* Four elements a work-item at a time: their loads from a member are in     \
     * flight together (loads from peers cross the link). */                     \
    for (; i + 3 * (LSZ) < hi; i += 4 * (LSZ)) {                                               \
        const T *s0 = (const T *)ishmemi_peer(source + i, ishmemi_member(t, 0)); \
        T x0 = s0[0], x1 = s0[(LSZ)], x2 = s0[2 * (LSZ)], x3 = s0[3 * (LSZ)];                  \
        for (int r = 1; r < t->size; r++) {                                                    \
            const T *sr = (const T *)ishmemi_peer(source + i, ishmemi_member(t, r)); \
            T y0 = sr[0], y1 = sr[(LSZ)], y2 = sr[2 * (LSZ)], y3 = sr[3 * (LSZ)];              \
            ISHMEMI_REDUCE_STEP(T, OP, x0, y0)                                                 \
            ISHMEMI_REDUCE_STEP(T, OP, x1, y1)                                                 \
            ISHMEMI_REDUCE_STEP(T, OP, x2, y2)                                                 \
            ISHMEMI_REDUCE_STEP(T, OP, x3, y3)                                                 \
        }                                                                                      \
        for (int r = 0; r < t->size; r++) {                                                    \
            T *d = (T *)ishmemi_peer(dest + i, ishmemi_member(t, r)); \
            d[0] = x0;                                                                         \
            d[(LSZ)] = x1;                                                                     \
            d[2 * (LSZ)] = x2;                                                                 \
            d[3 * (LSZ)] = x3;                                                                 \
        }                                                                                      \
    }                                                                                          \
    for (; i < hi; i += (LSZ)) {                                                               \
        T x = *(const T *)ishmemi_peer(source + i, ishmemi_member(t, 0));       \
        for (int r = 1; r < t->size; r++)                                                      \
            ISHMEMI_REDUCE_STEP(T, OP, x, *(const T *)ishmemi_peer(source + i, ishmemi_member(t, r))) \
        for (int r = 0; r < t->size; r++) *(T *)ishmemi_peer(dest + i, ishmemi_member(t, r)) = x; \
    }
#define ISHMEMI_REDUCE_CHECK(T)                                                               \
    ishmemi_check(ISHMEMI_RING_OP_GET, source, nreduce * sizeof(T), ishmemi_member(t, t->my_rank)); \
    ishmemi_check(ISHMEMI_RING_OP_PUT, dest, nreduce * sizeof(T), ishmemi_member(t, t->my_rank));
/* A reduction's slice moved in chunks (ishmemi_coll_chunked): member 0's
 * chunk comes into scratch half 0 by one get, every other member's into
 * half 1 and is folded into half 0 in member order, and the result leaves
 * for every member by one blocking put. */
#define ISHMEMI_REDUCE_CHUNKED(T, OP)                                                          \
    {                                                                                          \
        size_t per = (nreduce + t->size - 1) / t->size;                                        \
        size_t lo = min((size_t)t->my_rank * per, nreduce), hi = min(lo + per, nreduce);       \
        T *acc_ = (T *)ishmemi_coll_scratch(team, 0);            \
        T *in_ = (T *)ishmemi_coll_scratch(team, 1);             \
        size_t ch_ = ISHMEMI_SYNC_SCRATCH_BYTES / sizeof(T);                                   \
        for (size_t c0 = lo; c0 < hi; c0 += ch_) {                                             \
            size_t n_ = min(ch_, hi - c0);                                                     \
            ishmemi_get_bytes(acc_, source + c0, n_ * sizeof(T), ishmemi_member(t, 0), 0);     \
            for (int r = 1; r < t->size; r++) {                                                \
                ishmemi_get_bytes(in_, source + c0, n_ * sizeof(T), ishmemi_member(t, r), 0);  \
                for (size_t i = 0; i < n_; i++) ISHMEMI_REDUCE_STEP(T, OP, acc_[i], in_[i])    \
            }                                                                                  \
            for (int r = 0; r < t->size; r++)                                                  \
                ishmemi_put_bytes(dest + c0, acc_, n_ * sizeof(T), ishmemi_member(t, r), 0);   \
        }                                                                                      \
    }
/* Small reductions by LL words (ishmemi_ll_ok): every member sends its
 * source to every other; each folds them in member order into its own dest
 * (`LID` of `LSZ` work-items, `BARRIER` between sending and folding so that
 * an in-place dest is written only after all of the source was sent, and,
 * on runtimes that run a group's work-items one after another, every send
 * is made before any wait). An element's words from ISHMEMI_BATCH members
 * are waited for together as it is folded; with fewer elements than
 * work-items, the group first waits for every member's words, shared among
 * all of its work-items (ishmemi_ll_recv_all), so that spare work-items
 * wait too (4 PEs on 2 H200s, blocks of 256 threads: 8 B-512 B 1.06x-1.17x
 * faster that way, 4 KiB 3% slower). */
#define ISHMEMI_REDUCE_LL(T, OP, LID, LSZ, BARRIER)                                           \
    {                                                                                          \
        size_t nb_ = nreduce * sizeof(T);                                                      \
        ulong busy_ = ishmemi_ll_counts(team, t, c_);                                          \
        ishmemi_ll_send_all(team, t, c_, busy_, (const char *)source, nb_, 0, LID, LSZ, sig_); \
        BARRIER;                                                                               \
        for (int r_ = 0; r_ < t->size; r_++)                                                   \
            if (r_ != t->my_rank) ishmemi_ll_waits(team, ishmemi_member(t, r_), c_[r_], LID);  \
        uint s16_ = ishmemi_sig16(sig_), bad_ = 0;                                             \
        int from_ = 0;                                                                         \
        if (nreduce < (LSZ)) {                                                                 \
            uint b_ = ishmemi_ll_recv_all(team, t, c_, 0, nb_, LID, LSZ, s16_, &from_);        \
            ishmemi_sig_report(b_, team, from_, sig_);                                         \
            BARRIER;                                                                           \
        }                                                                                      \
        for (size_t i = (LID); i < nreduce; i += (LSZ)) {                                      \
            T a = 0;                                                                           \
            for (int r0_ = 0; r0_ < t->size; r0_ += ISHMEMI_BATCH) {                           \
                ulong u_[ISHMEMI_BATCH];                                                       \
                ishmemi_ll_read_batch(team, t, c_, r0_, i * sizeof(T), sizeof(T), s16_, &bad_, &from_, u_); \
                ISHMEMI_UNROLL                                                                 \
                for (int j_ = 0; j_ < ISHMEMI_BATCH && r0_ + j_ < t->size; j_++) {             \
                    union { T v; ulong u; } x_;                                                \
                    x_.u = u_[j_];                                                             \
                    T b = r0_ + j_ == t->my_rank ? source[i] : x_.v;                           \
                    a = r0_ + j_ == 0 ? b : (OP);                                              \
                }                                                                              \
            }                                                                                  \
            if (bad_) break; /* another call's words: report before waiting for more */       \
            dest[i] = a;                                                                       \
        }                                                                                      \
        ishmemi_sig_report(bad_, team, from_, sig_);                                           \
    }
/* The same in a team of two (ISHMEMI_LL_PAIR): one other member, no
 * batch. */
#define ISHMEMI_REDUCE_LL_PAIR(T, OP, LID, LSZ, BARRIER)                                      \
    {                                                                                          \
        size_t nb_ = nreduce * sizeof(T);                                                      \
        int ro_ = 1 - t->my_rank, po_ = ishmemi_member(t, ro_);                                \
        ishmemi_ll_counts(team, t, c_);                                                        \
        ishmemi_ll_send(team, po_, c_[ro_], (const char *)source, nb_, LID, LSZ, sig_);        \
        BARRIER;                                                                               \
        ishmemi_ll_waits(team, po_, c_[ro_], LID);                                             \
        /* A work-item's first element apart, out of the loop: another call's   \
         * words are reported before waiting for more (ishmemi_ll_recv; the     \
         * element stored meanwhile is of no use, and the report ends the job). */ \
        uint bad_ = 0;                                                                         \
        size_t i = (LID);                                                                      \
        if (i < nreduce) {                                                                     \
            union { T v; ulong u; } x_;                                                        \
            x_.u = ishmemi_ll_read(team, po_, c_[ro_], i * sizeof(T), sizeof(T), ishmemi_sig16(sig_), &bad_); \
            T a = ro_ ? source[i] : x_.v, b = ro_ ? x_.v : source[i];                          \
            dest[i] = (OP);                                                                    \
            i += (LSZ);                                                                        \
        }                                                                                      \
        if (!bad_)                                                                             \
            for (; i < nreduce; i += (LSZ)) {                                                  \
                union { T v; ulong u; } x_;                                                    \
                x_.u = ishmemi_ll_read(team, po_, c_[ro_], i * sizeof(T), sizeof(T), 0, 0);    \
                T a = ro_ ? source[i] : x_.v, b = ro_ ? x_.v : source[i];                      \
                dest[i] = (OP);                                                                \
            }                                                                                  \
        ishmemi_sig_report(bad_, team, po_, sig_);                                             \
    }
#define ISHMEMI_REDUCE(T, G, P, OP, CODE)                                               \
    const ishmemi_team_t *t = ishmemi_get_team(team);                   \
    if (!t) return -1;                                                                 \
    ulong sig_ = ISHMEMI_SIG(ISHMEMI_COLL_REDUCE, CODE, 0, nreduce);                   \
    if (ishmemi_ll_ok(team, t, nreduce * sizeof(T))) {                                 \
        ISHMEMI_REDUCE_CHECK(T)                                                        \
        ulong c_[ISHMEMI_SYNC_LL_PES];                                                 \
        if (ISHMEMI_LL_PAIR(t))                                                        \
            ISHMEMI_REDUCE_LL_PAIR(T, OP, 0, 1, (void)0)                               \
        else                                                                           \
            ISHMEMI_REDUCE_LL(T, OP, 0, 1, (void)0)                                    \
        ishmemi_ll_done(team, t, c_, 0, -1);                                               \
        return 0;                                                                      \
    }                                                                                  \
    ishmemi_sync_team(team, sig_);                                                     \
    if (ishmemi_team_all_local(t)) {                                                   \
        ISHMEMI_REDUCE_CHECK(T)                                                        \
        ISHMEMI_REDUCE_SLICE(T, OP, 0, 1)                                              \
    } else if (ishmemi_coll_chunked(t)) {                                              \
        ISHMEMI_REDUCE_CHECK(T)                                                        \
        ISHMEMI_REDUCE_CHUNKED(T, OP)                                                  \
    } else {                                                                           \
        size_t per = (nreduce + t->size - 1) / t->size;                                \
        size_t lo = min((size_t)t->my_rank * per, nreduce), hi = min(lo + per, nreduce); \
        for (size_t i = lo; i < hi; i++) {                                             \
            T a = G(source + i, ishmemi_member(t, 0));                                 \
            for (int r = 1; r < t->size; r++) {                                        \
                T b = G(source + i, ishmemi_member(t, r));                             \
                a = OP;                                                                \
            }                                                                          \
            for (int r = 0; r < t->size; r++) P(dest + i, a, ishmemi_member(t, r));    \
        }                                                                              \
    }                                                                                  \
    ishmemi_ring_quiet();                                                              \
    ishmemi_sync_team(team, sig_);                                                     \
    return 0;

/* Work-group reduction: the whole group shares the slice when every member
 * is reached by loads and stores; otherwise the leader runs `CALL`, the
 * thread form. */
#define ISHMEMI_WG_REDUCE(T, OP, CALL, CODE)                                            \
    const ishmemi_team_t *t = ishmemi_get_team(team);                   \
    if (!t) return -1;                                                                 \
    ulong sig_ = ISHMEMI_SIG(ISHMEMI_COLL_REDUCE, CODE, 0, nreduce);                   \
    if (ishmemi_ll_ok(team, t, nreduce * sizeof(T))) {                                 \
        ISHMEMI_REDUCE_CHECK(T)                                                        \
        work_group_barrier(CLK_GLOBAL_MEM_FENCE);                                      \
        ulong c_[ISHMEMI_SYNC_LL_PES];                                                 \
        if (ISHMEMI_LL_PAIR(t))                                                        \
            ISHMEMI_REDUCE_LL_PAIR(T, OP, get_local_linear_id(), ishmemi_wg_size(),    \
                                   work_group_barrier(CLK_GLOBAL_MEM_FENCE))           \
        else                                                                           \
            ISHMEMI_REDUCE_LL(T, OP, get_local_linear_id(), ishmemi_wg_size(),         \
                              work_group_barrier(CLK_GLOBAL_MEM_FENCE))                \
        work_group_barrier(CLK_GLOBAL_MEM_FENCE);                                      \
        ishmemi_ll_done(team, t, c_, get_local_linear_id(), -1);                           \
        work_group_barrier(CLK_GLOBAL_MEM_FENCE);                                      \
        return 0;                                                                      \
    }                                                                                  \
    if (!ishmemi_team_all_local(t)) {                                                  \
        ISHMEMI_WG_COLL(team, 0, CALL)                                                 \
    }                                                                                  \
    ISHMEMI_REDUCE_CHECK(T)                                                            \
    ishmemi_wg_sync_team(team, sig_);                                                  \
    ISHMEMI_REDUCE_SLICE(T, OP, get_local_linear_id(), ishmemi_wg_size())              \
    ishmemi_wg_sync_team(team, sig_);                                                  \
    return 0;

#endif
