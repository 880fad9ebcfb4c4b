// GPU tests of the CUDA device library: device-initiated RMA (every type,
// sizes 1..65536 elements at offsets, thread, block and warp forms), AMOs
// from thousands of threads on several PEs with exact totals, put_signal
// ping-pong between kernels, fence ordering, the device barrier, host and
// device operations mixed on one heap, device teams and collectives (every
// reduction of every type, broadcast, fcollect, collect, alltoall, scans;
// thread and block forms; the world and a split team), stream-ordered
// routines against kernels on the same stream, the same captured into a
// CUDA graph and replayed, and collective launch. Run on 2+ PEs by tests/cuda/run.sh;
// with ISHMEM_DEVICE_RING_ALL=1 every device operation goes through the
// reverse-offload ring (thousands of requests: the ring wraps around).
//
//   test_cuda MODE [small]   MODE: rma | amo | pingpong | fence | barrier | mixed | coll | stream | graph | basic | all
// ("stream" includes the graph section.)
#include <ishmem.h>
#include <ishmemx.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <unistd.h>

static int me, npes;
static int failures;
// "small": the AMO storm with fewer threads (for 2 PEs sharing one GPU with
// every operation through the ring: the two processes time-slice the GPU,
// so each host-performed request waits for a context switch).
static bool small;

#define CK(call)                                                                                    \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "PE %d: %s:%d: %s: %s\n", me, __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
            exit(2);                                                                               \
        }                                                                                          \
    } while (0)

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            if (failures++ < 20) {                                                                 \
                fprintf(stderr, "PE %d: check failed at %s:%d: ", me, __FILE__, __LINE__);         \
                fprintf(stderr, __VA_ARGS__);                                                      \
                fprintf(stderr, "\n");                                                             \
            }                                                                                      \
        }                                                                                          \
    } while (0)

static void sync_kernel() {
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
}

// ----- RMA ----------------------------------------------------------------

// Element `i` of PE `pe`'s source for type T: distinct across PEs and
// indices in every type's range.
template <typename T> __host__ __device__ T pattern(int pe, size_t i) {
    return (T)((pe * 37 + i * 11 + 1) % 97);
}

template <typename T> __global__ void fill(T *p, size_t n, int pe) {
    for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = pattern<T>(pe, i);
}

// How the kernel moves data: 0 thread put, 1 thread get, 2 block put, 3
// block get, 4 warp put, 5 warp get, 6 thread put_nbi + quiet, 7 thread
// get_nbi + quiet.
#define RMA_OPS(NAME, T)                                                                        \
    __global__ void rma_##NAME(int how, T *dst, const T *src, size_t n, int pe) {             \
        switch (how) {                                                                         \
        case 0: ishmem_##NAME##_put(dst, src, n, pe); break;                                   \
        case 1: ishmem_##NAME##_get(dst, src, n, pe); break;                                   \
        case 2: ishmemx_##NAME##_put_block(dst, src, n, pe); break;                            \
        case 3: ishmemx_##NAME##_get_block(dst, src, n, pe); break;                            \
        case 4: ishmemx_##NAME##_put_warp(dst, src, n, pe); break;                             \
        case 5: ishmemx_##NAME##_get_warp(dst, src, n, pe); break;                             \
        case 6: ishmem_##NAME##_put_nbi(dst, src, n, pe); ishmem_quiet(); break;               \
        default: ishmem_##NAME##_get_nbi(dst, src, n, pe); ishmem_quiet(); break;              \
        }                                                                                      \
    }                                                                                          \
    static void test_rma_##NAME() { test_rma_type<T>(#NAME, rma_##NAME); }

template <typename T> static void test_rma_type(const char *name, void (*kernel)(int, T *, const T *, size_t, int)) {
    const size_t maxn = 65536, pad = 8;
    T *src = (T *)ishmem_malloc((maxn + 2 * pad) * sizeof(T));
    T *dst = (T *)ishmem_malloc((maxn + 2 * pad) * sizeof(T));
    if (!src || !dst) {
        CHECK(false, "ishmem_malloc for %s", name);
        return;
    }
    fill<T><<<64, 256>>>(src, maxn + 2 * pad, me);
    sync_kernel();
    std::vector<T> host(maxn + 2 * pad);
    const size_t sizes[] = {1, 2, 7, 64, 1000, 4099, 65536};
    const int right = (me + 1) % npes, left = (me + npes - 1) % npes;
    for (int how = 0; how < 8; how++) {
        for (size_t n : sizes) {
            for (size_t off : {(size_t)0, (size_t)3}) {
                // cudaMemset is asynchronous: complete it before a peer
                // may write here (its kernel can run first, on this GPU).
                CK(cudaMemset(dst, 0, (maxn + 2 * pad) * sizeof(T)));
                CK(cudaDeviceSynchronize());
                ishmem_barrier_all();
                int put = how % 2 == 0;
                int threads = how == 2 || how == 3 ? 256 : how == 4 || how == 5 ? 32 : 1;
                // Puts write into the right neighbour; gets read from it.
                kernel<<<1, threads>>>(how, dst + off, src + off, n, right);
                sync_kernel();
                ishmem_barrier_all();
                CK(cudaMemcpy(host.data(), dst, (maxn + 2 * pad) * sizeof(T), cudaMemcpyDeviceToHost));
                int from = put ? left : right;
                size_t bad = 0;
                for (size_t i = 0; i < maxn + 2 * pad; i++) {
                    T want = i >= off && i < off + n ? pattern<T>(from, i) : (T)0;
                    if (memcmp(&host[i], &want, sizeof(T)) != 0) {
                        if (bad++ == 0)
                            CHECK(false, "%s how %d n %zu off %zu: element %zu wrong", name, how, n, off, i);
                    }
                }
            }
        }
    }
    ishmem_free(dst);
    ishmem_free(src);
}

RMA_OPS(float, float)
RMA_OPS(double, double)
RMA_OPS(char, char)
RMA_OPS(schar, signed char)
RMA_OPS(short, short)
RMA_OPS(int, int)
RMA_OPS(long, long)
RMA_OPS(longlong, long long)
RMA_OPS(uchar, unsigned char)
RMA_OPS(ushort, unsigned short)
RMA_OPS(uint, unsigned int)
RMA_OPS(ulong, unsigned long)
RMA_OPS(ulonglong, unsigned long long)
RMA_OPS(int8, int8_t)
RMA_OPS(int16, int16_t)
RMA_OPS(int32, int32_t)
RMA_OPS(int64, int64_t)
RMA_OPS(uint8, uint8_t)
RMA_OPS(uint16, uint16_t)
RMA_OPS(uint32, uint32_t)
RMA_OPS(uint64, uint64_t)
RMA_OPS(size, size_t)
RMA_OPS(ptrdiff, ptrdiff_t)

// Non-typed and element forms: putmem/getmem, p/g, iput/iget.
__global__ void rma_misc(char *bytes, long *words, int pe) {
    long buf[16];
    for (int i = 0; i < 16; i++) buf[i] = 1000 * ishmem_my_pe() + i;
    ishmem_putmem(bytes + 5, (const char *)buf, sizeof buf, pe);
    ishmem_long_p(words, 77 + ishmem_my_pe(), pe);
    // Strided: every other element of the peer's words[2..], from buf.
    ishmem_long_iput(words + 2, buf, 2, 1, 8, pe);
    ishmem_quiet();
}
__global__ void rma_misc_read(long *out, const long *words, int pe) {
    out[0] = ishmem_long_g(words, pe);
    ishmem_long_iget(out + 1, words + 2, 1, 2, 8, pe);
}

static void test_rma() {
    test_rma_float(); test_rma_double(); test_rma_char(); test_rma_schar(); test_rma_short(); test_rma_int();
    test_rma_long(); test_rma_longlong(); test_rma_uchar(); test_rma_ushort(); test_rma_uint(); test_rma_ulong();
    test_rma_ulonglong(); test_rma_int8(); test_rma_int16(); test_rma_int32(); test_rma_int64(); test_rma_uint8();
    test_rma_uint16(); test_rma_uint32(); test_rma_uint64(); test_rma_size(); test_rma_ptrdiff();
    char *bytes = (char *)ishmem_calloc(256, 1);
    long *words = (long *)ishmem_calloc(64, sizeof(long));
    long *out = nullptr;
    CK(cudaMalloc(&out, 16 * sizeof(long)));
    int right = (me + 1) % npes, left = (me + npes - 1) % npes;
    rma_misc<<<1, 1>>>(bytes, words, right);
    sync_kernel();
    ishmem_barrier_all();
    long got[16];
    CK(cudaMemcpy(got, bytes + 5, sizeof got, cudaMemcpyDeviceToHost));
    for (int i = 0; i < 16; i++) CHECK(got[i] == 1000 * left + i, "putmem element %d: %ld", i, got[i]);
    rma_misc_read<<<1, 1>>>(out, words, right);
    sync_kernel();
    long back[9];
    CK(cudaMemcpy(back, out, sizeof back, cudaMemcpyDeviceToHost));
    CHECK(back[0] == 77 + me, "g of the p this PE did: %ld", back[0]);
    for (int i = 0; i < 8; i++) CHECK(back[1 + i] == 1000 * me + i, "iget element %d: %ld", i, back[1 + i]);
    CK(cudaFree(out));
    ishmem_free(words);
    ishmem_free(bytes);
}

// ----- AMOs ---------------------------------------------------------------

// What thread `t`'s fetch_add of round `k` adds: 1, 2 or 3, so that an old
// value handed to the wrong request breaks the chain the test checks.
__host__ __device__ inline long amo_inc(size_t t, int k) { return 1 + (long)((t + k) % 3); }

__global__ void amo_storm(long *ctr, int *ictr, uint64_t *cas_ctr, uint64_t *bits,
                          long *fetched, int iters) {
    int n = ishmem_n_pes(), me = ishmem_my_pe();
    size_t tid = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    for (int k = 0; k < iters; k++) {
        int pe = (int)((tid + k + me) % n);
        fetched[tid * iters + k] = ishmem_long_atomic_fetch_add(ctr, amo_inc(tid, k), pe);
        ishmem_int_atomic_inc(ictr, pe);
    }
    // A compare-and-swap increment on PE 0 by one thread per block
    // (retries until it wins; every thread would make it quadratic).
    if (threadIdx.x == 0) {
        uint64_t v = ishmem_uint64_atomic_fetch(cas_ctr, 0);
        for (;;) {
            uint64_t seen = ishmem_uint64_atomic_compare_swap(cas_ctr, v, v + 1, 0);
            if (seen == v) break;
            v = seen;
        }
    }
    // Each thread of each PE sets one distinct bit on the last PE.
    size_t bit = (size_t)me * gridDim.x * blockDim.x + tid;
    ishmem_uint64_atomic_fetch_or(bits + bit / 64, (uint64_t)1 << (bit % 64), n - 1);
}

static void test_amo() {
    const int blocks = small ? 4 : 32, threads = 256, iters = small ? 1 : 4;
    const size_t nthreads = (size_t)blocks * threads;
    long *ctr = (long *)ishmem_calloc(1, sizeof(long));
    int *ictr = (int *)ishmem_calloc(1, sizeof(int));
    uint64_t *cas_ctr = (uint64_t *)ishmem_calloc(1, 8);
    size_t nbits = nthreads * npes;
    uint64_t *bits = (uint64_t *)ishmem_calloc((nbits + 63) / 64, 8);
    long *fetched = (long *)ishmem_calloc(nthreads * iters, sizeof(long));
    ishmem_barrier_all();
    amo_storm<<<blocks, threads>>>(ctr, ictr, cas_ctr, bits, fetched, iters);
    sync_kernel();
    ishmem_barrier_all();
    long c;
    int ic;
    uint64_t cc;
    CK(cudaMemcpy(&c, ctr, sizeof c, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(&ic, ictr, sizeof ic, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(&cc, cas_ctr, sizeof cc, cudaMemcpyDeviceToHost));
    // Every PE's threads spread iters requests each over the PEs evenly;
    // what they add to this PE's counter: the sum of their increments.
    long want = (long)(nthreads * iters), want_sum = 0;
    for (int origin = 0; origin < npes; origin++)
        for (size_t t = 0; t < nthreads; t++)
            for (int k = 0; k < iters; k++)
                if ((int)((t + k + origin) % npes) == me) want_sum += amo_inc(t, k);
    CHECK(c == want_sum, "fetch_add total %ld, want %ld", c, want_sum);
    // Each PE's counter gave out old values that chain: sorted, each is
    // the one before plus that one's increment, from 0 (PE 0 gathers every
    // PE's, with the host's get from GPU heaps). A value given to the
    // wrong request breaks the chain.
    if (me == 0) {
        std::vector<long> all(nthreads * iters);
        std::vector<std::vector<std::pair<long, long>>> got(npes);
        for (int origin = 0; origin < npes; origin++) {
            ishmem_getmem(all.data(), fetched, all.size() * sizeof(long), origin);
            for (size_t t = 0; t < nthreads; t++)
                for (int k = 0; k < iters; k++)
                    got[(t + k + origin) % npes].push_back({all[t * iters + k], amo_inc(t, k)});
        }
        for (int pe = 0; pe < npes; pe++) {
            std::sort(got[pe].begin(), got[pe].end());
            long next = 0;
            for (auto [old, inc] : got[pe]) {
                CHECK(old == next, "fetch_add old values on PE %d do not chain: %ld where %ld was next", pe, old, next);
                next = old + inc;
            }
        }
    }
    CHECK(ic == (int)want, "inc total %d, want %ld", ic, want);
    if (me == 0) CHECK(cc == (uint64_t)blocks * npes, "compare_swap counter %lu, want %d", (unsigned long)cc, blocks * npes);
    // The host's AMOs on GPU memory (a kernel each) are atomic with the
    // device's: add from the host too, once every PE has read its totals
    // (without this barrier the left neighbour's first adds could land
    // before this PE's read: seen in ring-all mode on 2 H200s).
    ishmem_barrier_all();
    for (int i = 0; i < 100; i++) ishmem_long_atomic_add(ctr, 1, (me + 1) % npes);
    ishmem_barrier_all();
    long c2 = ishmem_long_atomic_fetch(ctr, me);
    CHECK(c2 == want_sum + 100, "after host adds %ld, want %ld", c2, want_sum + 100);
    if (me == npes - 1) {
        std::vector<uint64_t> h((nbits + 63) / 64);
        CK(cudaMemcpy(h.data(), bits, h.size() * 8, cudaMemcpyDeviceToHost));
        for (size_t b = 0; b < nbits; b++)
            CHECK(h[b / 64] >> (b % 64) & 1, "bit %zu not set by fetch_or", b);
    }
    ishmem_free(fetched);
    ishmem_free(bits);
    ishmem_free(cas_ctr);
    ishmem_free(ictr);
    ishmem_free(ctr);
}

// ----- put_signal ping-pong between kernels ---------------------------------

__global__ void pingpong(long *data, uint64_t *sig, int iters) {
    int me = ishmem_my_pe(), peer = me ^ 1;
    for (int i = 1; i <= iters; i++) {
        if (me == 0) {
            long v = i * 3;
            ishmem_long_put_signal(data, &v, 1, sig, (uint64_t)i, ISHMEM_SIGNAL_SET, peer);
            ishmem_signal_wait_until(sig, ISHMEM_CMP_GE, (uint64_t)i);
        } else {
            ishmem_signal_wait_until(sig, ISHMEM_CMP_GE, (uint64_t)i);
            long got = *(volatile long *)data;
            long v = got == i * 3 ? got + 1 : -1;
            ishmem_long_put_signal(data, &v, 1, sig, (uint64_t)i, ISHMEM_SIGNAL_SET, peer);
        }
    }
}

static void test_pingpong() {
    const int iters = 1000;
    long *data = (long *)ishmem_calloc(1, sizeof(long));
    uint64_t *sig = (uint64_t *)ishmem_calloc(1, sizeof(uint64_t));
    ishmem_barrier_all();
    if (me < 2 && npes >= 2) {
        pingpong<<<1, 1>>>(data, sig, iters);
        sync_kernel();
    }
    ishmem_barrier_all();
    if (me == 0 && npes >= 2) {
        long v;
        CK(cudaMemcpy(&v, data, sizeof v, cudaMemcpyDeviceToHost));
        CHECK(v == iters * 3 + 1, "last reply %ld, want %d", v, iters * 3 + 1);
    }
    ishmem_free(sig);
    ishmem_free(data);
}

// ----- fence: a put, fence, a flag put arrive in order -----------------------

__global__ void fence_writer(long *data, long *flag, int iters, int peer) {
    for (int i = 1; i <= iters; i++) {
        ishmem_long_p(data + (i % 64), i, peer);
        ishmem_fence();
        ishmem_long_p(flag, i, peer);
        // Wait for the reader to acknowledge before reusing the slot.
        ishmem_long_wait_until(flag + 1, ISHMEM_CMP_GE, i);
    }
}
__global__ void fence_reader(long *data, long *flag, long *bad, int iters, int peer) {
    for (int i = 1; i <= iters; i++) {
        ishmem_long_wait_until(flag, ISHMEM_CMP_GE, i);
        if (*(volatile long *)(data + (i % 64)) != i) atomicAdd((unsigned long long *)bad, 1ull);
        ishmem_long_p(flag + 1, i, peer);
    }
}

static void test_fence() {
    const int iters = 2000;
    long *data = (long *)ishmem_calloc(64, sizeof(long));
    long *flag = (long *)ishmem_calloc(2, sizeof(long));
    long *bad = nullptr;
    CK(cudaMalloc(&bad, sizeof(long)));
    CK(cudaMemset(bad, 0, sizeof(long)));
    CK(cudaDeviceSynchronize());
    ishmem_barrier_all();
    if (npes >= 2 && me == 0) fence_writer<<<1, 1>>>(data, flag, iters, 1);
    if (npes >= 2 && me == 1) fence_reader<<<1, 1>>>(data, flag, bad, iters, 0);
    sync_kernel();
    ishmem_barrier_all();
    long b;
    CK(cudaMemcpy(&b, bad, sizeof b, cudaMemcpyDeviceToHost));
    CHECK(b == 0, "%ld flags arrived before the data they were fenced after", b);
    CK(cudaFree(bad));
    ishmem_free(flag);
    ishmem_free(data);
}

// ----- device barrier -----------------------------------------------------

__global__ void barrier_rounds(long *ctr, long *bad, int rounds, int block_form) {
    int n = ishmem_n_pes();
    for (int r = 1; r <= rounds; r++) {
        if (threadIdx.x == 0)
            for (int pe = 0; pe < n; pe++) ishmem_long_atomic_add(ctr, 1, pe);
        if (block_form)
            ishmemx_barrier_all_block();
        else if (threadIdx.x == 0)
            ishmem_barrier_all();
        if (threadIdx.x == 0 && ishmem_long_atomic_fetch(ctr, ishmem_my_pe()) != (long)r * n) (*bad)++;
        if (block_form)
            ishmemx_sync_all_block();
        else if (threadIdx.x == 0)
            ishmem_sync_all();
    }
}

static void test_barrier() {
    long *ctr = (long *)ishmem_calloc(1, sizeof(long));
    long *bad = nullptr;
    CK(cudaMalloc(&bad, sizeof(long)));
    for (int form = 0; form < 2; form++) {
        CK(cudaMemset(bad, 0, sizeof(long)));
        CK(cudaMemset(ctr, 0, sizeof(long)));
        CK(cudaDeviceSynchronize());
        ishmem_barrier_all();
        barrier_rounds<<<1, form ? 128 : 1>>>(ctr, bad, 200, form);
        sync_kernel();
        long b;
        CK(cudaMemcpy(&b, bad, sizeof b, cudaMemcpyDeviceToHost));
        CHECK(b == 0, "%ld rounds saw a counter short of every PE's adds (form %d)", b, form);
        ishmem_barrier_all();
    }
    CK(cudaFree(bad));
    ishmem_free(ctr);
}

// ----- host and device operations on one heap --------------------------------

__global__ void dev_put(long *dst, long base, int n, int pe) {
    for (int i = threadIdx.x; i < n; i += blockDim.x) ishmem_long_p(dst + i, base + i, pe);
    __syncthreads();
    if (threadIdx.x == 0) ishmem_quiet();
}

static void test_mixed() {
    const int n = 1000;
    long *a = (long *)ishmem_calloc(n, sizeof(long));
    long *b = (long *)ishmem_calloc(n, sizeof(long));
    int right = (me + 1) % npes, left = (me + npes - 1) % npes;
    std::vector<long> h(n);
    for (int i = 0; i < n; i++) h[i] = 5000 * me + i;
    // Host put into the neighbour's GPU heap, device put back.
    ishmem_long_put(a, h.data(), n, right);
    ishmem_barrier_all();
    dev_put<<<1, 256>>>(b, 7000 * me, n, left);
    sync_kernel();
    ishmem_barrier_all();
    std::vector<long> got(n);
    ishmem_long_get(got.data(), a, n, me); // host get of its own GPU heap
    for (int i = 0; i < n; i++) CHECK(got[i] == 5000 * left + i, "host put element %d: %ld", i, got[i]);
    ishmem_long_get(got.data(), b, n, me);
    for (int i = 0; i < n; i++) CHECK(got[i] == 7000 * right + i, "device put element %d: %ld", i, got[i]);
    // Host element forms and waits on GPU memory (after every PE has read
    // its heap above: the p writes into the right neighbour's a).
    ishmem_barrier_all();
    ishmem_long_p(a, 42, right);
    ishmem_barrier_all();
    CHECK(ishmem_long_g(a, me) == 42, "host p/g on GPU memory");
    ishmem_long_atomic_set(b, 0, me);
    ishmem_barrier_all();
    ishmem_long_atomic_add(b, 1, right);
    ishmem_long_wait_until(b, ISHMEM_CMP_EQ, 1);
    // Collectives over GPU heaps from the host.
    long *src = (long *)ishmem_malloc(4 * sizeof(long));
    long *dst = (long *)ishmem_malloc(4 * sizeof(long) * npes);
    long mine[4] = {me, me + 1, me + 2, me + 3};
    ishmem_long_put(src, mine, 4, me);
    ishmem_barrier_all();
    ishmem_long_sum_reduce(ISHMEM_TEAM_WORLD, dst, src, 4);
    long sum[4];
    ishmem_long_get(sum, dst, 4, me);
    long t = (long)npes * (npes - 1) / 2;
    for (int i = 0; i < 4; i++) CHECK(sum[i] == t + (long)npes * i, "sum_reduce element %d: %ld", i, sum[i]);
    ishmem_long_fcollect(ISHMEM_TEAM_WORLD, dst, src, 4);
    std::vector<long> all(4 * npes);
    ishmem_long_get(all.data(), dst, 4 * npes, me);
    for (int p = 0; p < npes; p++)
        for (int i = 0; i < 4; i++) CHECK(all[4 * p + i] == p + i, "fcollect block %d element %d", p, i);
    ishmem_free(dst);
    ishmem_free(src);
    ishmem_free(b);
    ishmem_free(a);
}

// ----- device teams and collectives -------------------------------------------

// Reduction ops, in the order of the kernels' switch: and, or, xor (integer
// types only), max, min, sum, prod.
enum { R_AND, R_OR, R_XOR, R_MAX, R_MIN, R_SUM, R_PROD };
static const char *red_names[] = {"and", "or", "xor", "max", "min", "sum", "prod"};

// Member `r`'s element `i` for reduction `op`: small values, so products and
// sums are exact in float and wrap the same way on both sides in narrow
// integer types (every step converts back to T).
template <typename T> __host__ __device__ T red_src(int op, int r, size_t i) {
    switch (op) {
    case R_AND: case R_OR: case R_XOR: return (T)(((r + 1) * 0x25 + i * 3) & 0x7f);
    case R_MAX: case R_MIN: return (T)((r * 13 + i * 5) % 100);
    case R_SUM: return (T)((r * 7 + i) % 50);
    default: return (T)((i + r) % 3 + 1);
    }
}
template <typename T> static T red_step(int op, T a, T b) {
    switch (op) {
    case R_AND: return (T)((long long)a & (long long)b);
    case R_OR: return (T)((long long)a | (long long)b);
    case R_XOR: return (T)((long long)a ^ (long long)b);
    case R_MAX: return a > b ? a : b;
    case R_MIN: return a < b ? a : b;
    case R_SUM: return (T)(a + b);
    default: return (T)(a * b);
    }
}

template <typename T> __global__ void red_fill(T *p, int op, int r, size_t n) {
    for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = red_src<T>(op, r, i);
}

// Thread form (one thread) or block form (the whole block) of one reduction.
#define RED_CASE(F, NAME, OP, SUFFIX) case R_##OP: r = F##NAME##_##SUFFIX(team, dst, src, n); break;
#define RED_ARITH(F, NAME, SFX)                                                                  \
    RED_CASE(F, NAME, MAX, max_reduce##SFX) RED_CASE(F, NAME, MIN, min_reduce##SFX)             \
    RED_CASE(F, NAME, SUM, sum_reduce##SFX) RED_CASE(F, NAME, PROD, prod_reduce##SFX)
#define RED_BITS(F, NAME, SFX)                                                                   \
    RED_CASE(F, NAME, AND, and_reduce##SFX) RED_CASE(F, NAME, OR, or_reduce##SFX)               \
    RED_CASE(F, NAME, XOR, xor_reduce##SFX)
#define RED_KERNEL(NAME, T, BITS)                                                                \
    __global__ void red_##NAME(int team, int op, int block, T *dst, const T *src, size_t n, int *ret) { \
        int r = -2;                                                                              \
        if (block) {                                                                             \
            switch (op) { RED_ARITH(ishmemx_, NAME, _block) BITS(ishmemx_, NAME, _block) }      \
        } else {                                                                                 \
            switch (op) { RED_ARITH(ishmem_, NAME, ) BITS(ishmem_, NAME, ) }                     \
        }                                                                                        \
        if (threadIdx.x == 0) *ret = r;                                                          \
    }
#define NO_BITS(F, NAME, SFX)
RED_KERNEL(float, float, NO_BITS)
RED_KERNEL(double, double, NO_BITS)
RED_KERNEL(char, char, RED_BITS)
RED_KERNEL(schar, signed char, RED_BITS)
RED_KERNEL(short, short, RED_BITS)
RED_KERNEL(int, int, RED_BITS)
RED_KERNEL(long, long, RED_BITS)
RED_KERNEL(longlong, long long, RED_BITS)
RED_KERNEL(uchar, unsigned char, RED_BITS)
RED_KERNEL(ushort, unsigned short, RED_BITS)
RED_KERNEL(uint, unsigned int, RED_BITS)
RED_KERNEL(ulong, unsigned long, RED_BITS)
RED_KERNEL(ulonglong, unsigned long long, RED_BITS)
RED_KERNEL(int8, int8_t, RED_BITS)
RED_KERNEL(int16, int16_t, RED_BITS)
RED_KERNEL(int32, int32_t, RED_BITS)
RED_KERNEL(int64, int64_t, RED_BITS)
RED_KERNEL(uint8, uint8_t, RED_BITS)
RED_KERNEL(uint16, uint16_t, RED_BITS)
RED_KERNEL(uint32, uint32_t, RED_BITS)
RED_KERNEL(uint64, uint64_t, RED_BITS)
RED_KERNEL(size, size_t, RED_BITS)
RED_KERNEL(ptrdiff, ptrdiff_t, RED_BITS)

static int *coll_ret; // device word for a collective's return value

static int ret_of() {
    int r;
    CK(cudaMemcpy(&r, coll_ret, sizeof r, cudaMemcpyDeviceToHost));
    return r;
}

// Every reduction of type T on `team`, thread and block forms, at several
// sizes, in place and not, against the fold computed here.
template <typename T>
static void test_red_type(const char *name, void (*k)(int, int, int, T *, const T *, size_t, int *), bool bits,
                          int team) {
    // Allocation is collective over the world: every PE allocates, members work.
    int tn = ishmem_team_n_pes(team), tr = ishmem_team_my_pe(team);
    std::vector<size_t> sizes = {1, 7, 1000, 20000};
    if (small) sizes = {1, 1000};
    T *src = (T *)ishmem_malloc(20000 * sizeof(T)), *dst = (T *)ishmem_malloc(20000 * sizeof(T));
    std::vector<T> got(20000);
    for (int op = bits ? R_AND : R_MAX; op <= R_PROD && team != ISHMEM_TEAM_INVALID; op++)
        for (int form = 0; form < 2; form++)
            for (size_t n : sizes)
                for (int inplace = 0; inplace < 2; inplace++) {
                    T *out = inplace ? src : dst;
                    red_fill<T><<<32, 256>>>(src, op, tr, n);
                    sync_kernel();
                    ishmem_team_sync(team);
                    k<<<1, form ? 256 : 1>>>(team, op, form, out, src, n, coll_ret);
                    sync_kernel();
                    CHECK(ret_of() == 0, "%s_%s_reduce (form %d, %zu) returned %d", name, red_names[op], form, n, ret_of());
                    CK(cudaMemcpy(got.data(), out, n * sizeof(T), cudaMemcpyDeviceToHost));
                    for (size_t i = 0; i < n; i++) {
                        T want = red_src<T>(op, 0, i);
                        for (int m = 1; m < tn; m++) want = red_step<T>(op, want, red_src<T>(op, m, i));
                        if (got[i] != want) {
                            CHECK(false, "%s_%s_reduce (form %d, %zu elements, in place %d, team of %d) [%zu]: got %g want %g",
                                  name, red_names[op], form, n, inplace, tn, i, (double)got[i], (double)want);
                            break;
                        }
                    }
                    ishmem_team_sync(team);
                }
    ishmem_free(dst);
    ishmem_free(src);
}

__global__ void k_bcast(int team, int block, long *dst, const long *src, size_t n, int root, int *ret) {
    int r = block ? ishmemx_long_broadcast_block(team, dst, src, n, root) : ishmem_long_broadcast(team, dst, src, n, root);
    if (threadIdx.x == 0) *ret = r;
}
__global__ void k_fcollect(int team, int block, long *dst, const long *src, size_t n, int *ret) {
    int r = block ? ishmemx_long_fcollect_block(team, dst, src, n) : ishmem_long_fcollect(team, dst, src, n);
    if (threadIdx.x == 0) *ret = r;
}
__global__ void k_collect(int team, int block, long *dst, const long *src, size_t n, int *ret) {
    int r = block ? ishmemx_long_collect_block(team, dst, src, n) : ishmem_long_collect(team, dst, src, n);
    if (threadIdx.x == 0) *ret = r;
}
__global__ void k_alltoall(int team, int block, long *dst, const long *src, size_t n, int *ret) {
    int r = block ? ishmemx_long_alltoall_block(team, dst, src, n) : ishmem_long_alltoall(team, dst, src, n);
    if (threadIdx.x == 0) *ret = r;
}
__global__ void k_scan(int team, int block, int ex, int *dst, const int *src, size_t n, int *ret) {
    int r;
    if (block)
        r = ex ? ishmemx_int_sum_exscan_block(team, dst, src, n) : ishmemx_int_sum_inscan_block(team, dst, src, n);
    else
        r = ex ? ishmem_int_sum_exscan(team, dst, src, n) : ishmem_int_sum_inscan(team, dst, src, n);
    if (threadIdx.x == 0) *ret = r;
}
// Team queries and sync: my_pe, n_pes, translate to and from the world,
// team_sync's return (thread or block form).
__global__ void k_team(int team, int block, int *out) {
    int s = block ? ishmemx_team_sync_block(team) : ishmem_team_sync(team);
    if (threadIdx.x == 0) {
        int n = ishmem_team_n_pes(team);
        out[0] = ishmem_team_my_pe(team);
        out[1] = n;
        out[2] = ishmem_team_translate_pe(team, n - 1, ISHMEM_TEAM_WORLD);
        out[3] = ishmem_team_translate_pe(ISHMEM_TEAM_WORLD, ishmem_my_pe(), team);
        out[4] = ishmem_team_translate_pe(team, n, ISHMEM_TEAM_WORLD);
        out[5] = s;
    }
}

template <typename T> static void put_self(T *sym, const std::vector<T> &h) {
    CK(cudaMemcpy(sym, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
}
template <typename T> static std::vector<T> get_self(const T *sym, size_t n) {
    std::vector<T> h(n);
    CK(cudaMemcpy(h.data(), sym, n * sizeof(T), cudaMemcpyDeviceToHost));
    return h;
}

// broadcast, fcollect, collect, alltoall, scans and the team queries on
// `team`, thread and block forms, small and large.
static void test_coll_team(int team) {
    // Allocation is collective over the world: every PE allocates, members work.
    int tn = ishmem_team_n_pes(team), tr = ishmem_team_my_pe(team);
    const size_t sizes[] = {1, 100, 65536};
    const size_t most = 65536;
    long *src = (long *)ishmem_malloc(most * sizeof(long)), *dst = (long *)ishmem_malloc(most * npes * sizeof(long));
    int *isrc = (int *)ishmem_malloc(most * sizeof(int)), *idst = (int *)ishmem_malloc(most * sizeof(int));
    int *q;
    CK(cudaMalloc(&q, 8 * sizeof(int)));
    for (int form = 0; form < 2 && team != ISHMEM_TEAM_INVALID; form++) {
        int threads = form ? 512 : 1;
        k_team<<<1, threads>>>(team, form, q);
        sync_kernel();
        std::vector<int> t = get_self(q, 6);
        CHECK(t[0] == tr && t[1] == tn, "team_my_pe/n_pes: %d/%d want %d/%d", t[0], t[1], tr, tn);
        CHECK(t[2] == ishmem_team_translate_pe(team, tn - 1, ISHMEM_TEAM_WORLD), "team_translate_pe to world: %d", t[2]);
        CHECK(t[3] == tr && t[4] == -1, "team_translate_pe from world %d, out of range %d", t[3], t[4]);
        CHECK(t[5] == 0, "team_sync (form %d) returned %d", form, t[5]);
        for (size_t n : sizes) {
            std::vector<long> h(most);
            for (size_t i = 0; i < most; i++) h[i] = tr * 1000000L + (long)i;
            put_self(src, h);
            std::vector<long> fill(most * npes, -7);
            put_self(dst, fill);
            ishmem_team_sync(team);
            // broadcast from the last member, three times in a row: the
            // fcollect after them sends on pair counts only the root's
            // messages moved (a member's send waits for the receiver's
            // acknowledgement of two counts back, which a root must give)
            for (int rep = 0; rep < 3; rep++) {
                k_bcast<<<1, threads>>>(team, form, dst, src, n, tn - 1, coll_ret);
                sync_kernel();
                CHECK(ret_of() == 0, "broadcast returned %d", ret_of());
            }
            std::vector<long> g = get_self(dst, n + 1);
            for (size_t i = 0; i < n; i++)
                if (g[i] != (tn - 1) * 1000000L + (long)i) { CHECK(false, "broadcast (form %d, %zu) [%zu] = %ld", form, n, i, g[i]); break; }
            if (tr != tn - 1) CHECK(g[n] == -7, "broadcast wrote past its end");
            ishmem_team_sync(team);
            // fcollect
            k_fcollect<<<1, threads>>>(team, form, dst, src, n, coll_ret);
            sync_kernel();
            CHECK(ret_of() == 0, "fcollect returned %d", ret_of());
            g = get_self(dst, n * tn);
            for (int m = 0; m < tn; m++)
                for (size_t i = 0; i < n; i++)
                    if (g[m * n + i] != m * 1000000L + (long)i) { CHECK(false, "fcollect (form %d, %zu) member %d [%zu] = %ld", form, n, m, i, g[m * n + i]); m = tn; break; }
            ishmem_team_sync(team);
            // collect: member m gives n / (m + 1) elements (at least 1)
            auto cnt = [n](int m) { return n / (m + 1) > 0 ? n / (m + 1) : (size_t)1; };
            put_self(dst, fill);
            ishmem_team_sync(team);
            k_collect<<<1, threads>>>(team, form, dst, src, cnt(tr), coll_ret);
            sync_kernel();
            CHECK(ret_of() == 0, "collect returned %d", ret_of());
            size_t total = 0;
            for (int m = 0; m < tn; m++) total += cnt(m);
            g = get_self(dst, total < most * npes ? total + 1 : total);
            size_t at = 0;
            for (int m = 0; m < tn; m++)
                for (size_t i = 0; i < cnt(m); i++, at++)
                    if (g[at] != m * 1000000L + (long)i) { CHECK(false, "collect (form %d, %zu) member %d [%zu] = %ld", form, n, m, i, g[at]); m = tn; break; }
            if (total < most * npes) CHECK(g[total] == -7, "collect wrote past its end");
            ishmem_team_sync(team);
            // alltoall: block j of member m's source goes to member j
            size_t per = n / tn > 0 ? n / tn : 1;
            for (int j = 0; j < tn; j++)
                for (size_t i = 0; i < per; i++) h[j * per + i] = tr * 1000000L + j * 1000L + (long)i;
            put_self(src, h);
            ishmem_team_sync(team);
            k_alltoall<<<1, threads>>>(team, form, dst, src, per, coll_ret);
            sync_kernel();
            CHECK(ret_of() == 0, "alltoall returned %d", ret_of());
            g = get_self(dst, per * tn);
            for (int m = 0; m < tn; m++)
                for (size_t i = 0; i < per; i++)
                    if (g[m * per + i] != m * 1000000L + tr * 1000L + (long)i) { CHECK(false, "alltoall (form %d, %zu) from %d [%zu] = %ld", form, per, m, i, g[m * per + i]); m = tn; break; }
            ishmem_team_sync(team);
            // scans, exclusive then inclusive in place
            size_t sn = n < 4096 ? n : 4096;
            std::vector<int> hi(sn);
            for (size_t i = 0; i < sn; i++) hi[i] = (tr + 1) * (int)(i % 100 + 1);
            put_self(isrc, hi);
            ishmem_team_sync(team);
            for (int ex = 1; ex >= 0; ex--) {
                k_scan<<<1, threads>>>(team, form, ex, ex ? idst : isrc, isrc, sn, coll_ret);
                sync_kernel();
                CHECK(ret_of() == 0, "scan returned %d", ret_of());
                std::vector<int> gi = get_self(ex ? idst : isrc, sn);
                for (size_t i = 0; i < sn; i++) {
                    int before = tr * (tr + 1) / 2 * (int)(i % 100 + 1);
                    int want = ex ? before : before + (tr + 1) * (int)(i % 100 + 1);
                    if (gi[i] != want) { CHECK(false, "sum_%s (form %d, %zu) [%zu] = %d want %d", ex ? "exscan" : "inscan", form, sn, i, gi[i], want); break; }
                }
                ishmem_team_sync(team);
            }
        }
    }
    CK(cudaFree(q));
    ishmem_free(idst);
    ishmem_free(isrc);
    ishmem_free(dst);
    ishmem_free(src);
}

#define RED_TEST(NAME, T, BITS) test_red_type<T>(#NAME, red_##NAME, BITS, team);

static void test_coll() {
    CK(cudaMalloc(&coll_ret, sizeof(int)));
    // The world, then the odd PEs (PE 0 alone on one PE).
    ishmem_team_t odd;
    ishmem_team_split_strided(ISHMEM_TEAM_WORLD, npes > 1 ? 1 : 0, 2, npes > 1 ? npes / 2 : 1, NULL, 0, &odd);
    for (int pass = 0; pass < 2; pass++) {
        ishmem_team_t team = pass == 0 ? ISHMEM_TEAM_WORLD : odd;
        ishmem_barrier_all();
        test_coll_team(team);
        RED_TEST(float, float, false) RED_TEST(double, double, false) RED_TEST(char, char, true)
        RED_TEST(schar, signed char, true) RED_TEST(short, short, true) RED_TEST(int, int, true)
        RED_TEST(long, long, true) RED_TEST(longlong, long long, true) RED_TEST(uchar, unsigned char, true)
        RED_TEST(ushort, unsigned short, true) RED_TEST(uint, unsigned int, true) RED_TEST(ulong, unsigned long, true)
        RED_TEST(ulonglong, unsigned long long, true) RED_TEST(int8, int8_t, true) RED_TEST(int16, int16_t, true)
        RED_TEST(int32, int32_t, true) RED_TEST(int64, int64_t, true) RED_TEST(uint8, uint8_t, true)
        RED_TEST(uint16, uint16_t, true) RED_TEST(uint32, uint32_t, true) RED_TEST(uint64, uint64_t, true)
        RED_TEST(size, size_t, true) RED_TEST(ptrdiff, ptrdiff_t, true)
    }
    ishmem_barrier_all();
    if (odd != ISHMEM_TEAM_INVALID) ishmem_team_destroy(odd);
    CK(cudaFree(coll_ret));
}

// ----- stream-ordered operations and collective launch --------------------------

__global__ void s_fill(long *p, long base, size_t n) {
    for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) p[i] = base + (long)i;
}
__global__ void s_check(const long *p, long base, size_t n, unsigned long long *bad) {
    for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        if (p[i] != base + (long)i) atomicAdd(bad, 1ull);
}

// Kernels and stream-ordered routines on one stream, with no host
// synchronization in between: each check kernel sees what the routine
// before it on the stream delivered.
// TEST_STREAM_STEPS=1: synchronize and report after every step (to find
// one that does not finish).
static void step(cudaStream_t s, const char *what) {
    static int on = getenv("TEST_STREAM_STEPS") != nullptr;
    if (!on) return;
    CK(cudaStreamSynchronize(s));
    fprintf(stderr, "PE %d: stream step done: %s\n", me, what);
}

static void test_stream() {
    int right = (me + 1) % npes, left = (me + npes - 1) % npes;
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    const size_t most = (size_t)1 << 21; // 16 MiB of longs: over the block form's copy-engine cutover
    long *src = (long *)ishmem_malloc(most * sizeof(long)), *dst = (long *)ishmem_calloc(most, sizeof(long));
    uint64_t *sig = (uint64_t *)ishmem_calloc(1, sizeof(uint64_t));
    unsigned long long *bad;
    CK(cudaMalloc(&bad, sizeof *bad));
    CK(cudaMemset(bad, 0, sizeof *bad));
    ishmem_barrier_all();
    const size_t sizes[] = {1, 1000, most};
    uint64_t round = 0;
    for (size_t n : sizes) {
        round++;
        long base = me * 100000000L + (long)round * 1000000L;
        long lbase = left * 100000000L + (long)round * 1000000L;
        s_fill<<<64, 256, 0, s>>>(src, base, n);
        ishmemx_putmem_on_stream(dst, src, n * sizeof(long), right, s); step(s, "ishmemx_putmem_on_stream");
        ishmemx_barrier_all_on_stream(s); step(s, "ishmemx_barrier_all_on_stream");
        s_check<<<64, 256, 0, s>>>(dst, lbase, n, bad);
        ishmemx_sync_all_on_stream(s); step(s, "ishmemx_sync_all_on_stream"); // the right PE has checked its dst before it is written again
        s_fill<<<64, 256, 0, s>>>(src, base + 7, n);
        ishmemx_putmem_signal_on_stream(dst, src, n * sizeof(long), sig, round, ISHMEM_SIGNAL_SET, right, s); step(s, "ishmemx_putmem_signal_on_stream");
        ishmemx_signal_wait_until_on_stream(sig, ISHMEM_CMP_EQ, round, s); step(s, "ishmemx_signal_wait_until_on_stream");
        s_check<<<64, 256, 0, s>>>(dst, lbase + 7, n, bad);
        // The right PE's dst holds this PE's data now: get it back.
        ishmemx_getmem_on_stream(src, dst, n * sizeof(long), right, s); step(s, "ishmemx_getmem_on_stream");
        ishmemx_quiet_on_stream(s); step(s, "ishmemx_quiet_on_stream");
        s_check<<<64, 256, 0, s>>>(src, base + 7, n, bad);
        ishmemx_sync_all_on_stream(s); // the left PE has got its data from this PE's dst
        ishmemx_putmem_nbi_on_stream(dst, src, n * sizeof(long), me, s); // to itself: base + 7 again
        ishmemx_quiet_on_stream(s);
        s_check<<<64, 256, 0, s>>>(dst, base + 7, n, bad);
        ishmemx_barrier_all_on_stream(s);
        CK(cudaStreamSynchronize(s));
        unsigned long long b;
        CK(cudaMemcpy(&b, bad, sizeof b, cudaMemcpyDeviceToHost));
        CHECK(b == 0, "stream-ordered operations, %zu elements: %llu elements wrong", n, b);
        if (me == 0) fprintf(stderr, "stream: %zu elements done\n", n);
    }
    // The default stream (0) works too.
    ishmemx_putmem_on_stream(dst, src, sizeof(long), me, 0);
    ishmemx_quiet_on_stream(0);
    CK(cudaDeviceSynchronize());
    ishmem_barrier_all();
    CK(cudaFree(bad));
    CK(cudaStreamDestroy(s));
    ishmem_free(sig);
    ishmem_free(dst);
    ishmem_free(src);
}

// ----- collectives ordered on a stream -----------------------------------------

// Checks of what the stream-ordered collectives delivered (one kernel, by
// mode), run on the same stream with no host synchronization between.
enum { SC_BCAST, SC_FCOLLECT, SC_ALLTOALL, SC_COLLECT, SC_ISUM, SC_IMAX, SC_DSUM, SC_INSCAN };
__global__ void sc_check(int mode, const void *p, long base, long round, size_t n, int me, int npes,
                         unsigned long long *bad) {
    size_t total = mode == SC_FCOLLECT || mode == SC_ALLTOALL ? n * npes
                   : mode == SC_COLLECT                     ? (size_t)npes * (npes + 1) / 2
                                                            : n;
    for (size_t k = blockIdx.x * blockDim.x + threadIdx.x; k < total; k += (size_t)gridDim.x * blockDim.x) {
        long want = 0, got = 0;
        size_t m = k / n, i = k % n;
        long f = (long)(i % 7 + 1), np = npes;
        switch (mode) {
        case SC_BCAST: want = base + (long)k; got = ((const long *)p)[k]; break;
        case SC_FCOLLECT: want = m * 1000000L + round * 1000 + (long)i; got = ((const long *)p)[k]; break;
        case SC_ALLTOALL: want = m * 1000000L + round * 1000 + (long)(me * n + i); got = ((const long *)p)[k]; break;
        case SC_COLLECT: { // member r gives r + 1 elements
            size_t r = 0, at = 0;
            while (at + r + 1 <= k) at += ++r;
            want = (long)r * 1000000L + round * 1000 + (long)(k - at);
            got = ((const long *)p)[k];
            break;
        }
        case SC_ISUM: want = f * np * (np + 1) / 2 + round; got = ((const int *)p)[k]; break;
        case SC_IMAX: want = f * np + round; got = ((const int *)p)[k]; break;
        case SC_DSUM: want = f * np * (np + 1) / 2 + round; got = (long)((const double *)p)[k]; break;
        default: want = f * (me + 1) * (me + 2) / 2 + round; got = ((const int *)p)[k]; break;
        }
        if (got != want) atomicAdd(bad, 1ull);
    }
}
// Member `me`'s sources: (me + 1) * (i % 7 + 1), plus the round on member 0
// (sums and scans) or on every member (max), so each result is closed-form.
__global__ void sc_fill_red(int *ip, double *dp, int me, int round, int npes, size_t n) {
    for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        int f = (int)(i % 7 + 1);
        // sum over members of (m + 1) * f, plus round from member 0
        ip[i] = (me + 1) * f + (me == 0 ? round : 0);
        dp[i] = (double)ip[i];
    }
}
__global__ void sc_fill_max(int *ip, int me, int round, size_t n) {
    for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        ip[i] = (me + 1) * (int)(i % 7 + 1) + round;
}
__global__ void sc_fill_scan(int *ip, int me, int round, size_t n) {
    for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        ip[i] = (me + 1) * (int)(i % 7 + 1) + (me == 0 ? round : 0);
}

static void test_stream_coll() {
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    const size_t sizes[] = {1, 1000, 100000}; // LL, push-and-signal, large
    const size_t most = 100000;
    long *src = (long *)ishmem_malloc(most * npes * sizeof(long));
    long *dst = (long *)ishmem_malloc(most * npes * sizeof(long));
    int *isrc = (int *)ishmem_malloc(most * sizeof(int)), *idst = (int *)ishmem_malloc(most * sizeof(int));
    double *dsrc = (double *)ishmem_malloc(most * sizeof(double)), *ddst = (double *)ishmem_malloc(most * sizeof(double));
    unsigned long long *bad;
    CK(cudaMalloc(&bad, sizeof *bad));
    CK(cudaMemset(bad, 0, sizeof *bad));
    CK(cudaDeviceSynchronize());
    ishmem_barrier_all();
    CHECK(ishmemx_long_broadcast_on_stream(ISHMEM_TEAM_INVALID, dst, src, 1, 0, s) != 0,
          "a stream broadcast on TEAM_INVALID returned 0");
    long round = 0;
    for (size_t n : sizes) {
        round++;
        int root = (int)(round % npes);
        long base = me * 1000000L + round * 1000;
        s_fill<<<64, 256, 0, s>>>(src, base, n * npes);
        CHECK(ishmemx_long_broadcast_on_stream(ISHMEM_TEAM_WORLD, dst, src, n, root, s) == 0, "broadcast_on_stream"); step(s, "broadcast_on_stream");
        sc_check<<<64, 256, 0, s>>>(SC_BCAST, dst, root * 1000000L + round * 1000, round, n, me, npes, bad);
        ishmemx_team_sync_on_stream(ISHMEM_TEAM_WORLD, s); // every member checked before dst is written again
        CHECK(ishmemx_long_fcollect_on_stream(ISHMEM_TEAM_WORLD, dst, src, n, s) == 0, "fcollect_on_stream"); step(s, "fcollect_on_stream");
        sc_check<<<64, 256, 0, s>>>(SC_FCOLLECT, dst, 0, round, n, me, npes, bad);
        ishmemx_team_sync_on_stream(ISHMEM_TEAM_WORLD, s);
        CHECK(ishmemx_long_alltoall_on_stream(ISHMEM_TEAM_WORLD, dst, src, n, s) == 0, "alltoall_on_stream"); step(s, "alltoall_on_stream");
        sc_check<<<64, 256, 0, s>>>(SC_ALLTOALL, dst, 0, round, n, me, npes, bad);
        ishmemx_team_sync_on_stream(ISHMEM_TEAM_WORLD, s);
        CHECK(ishmemx_long_collect_on_stream(ISHMEM_TEAM_WORLD, dst, src, (size_t)me + 1, s) == 0, "collect_on_stream"); step(s, "collect_on_stream");
        sc_check<<<64, 256, 0, s>>>(SC_COLLECT, dst, 0, round, 1, me, npes, bad); step(s, "check of collect_on_stream");
        ishmemx_team_sync_on_stream(ISHMEM_TEAM_WORLD, s); step(s, "team_sync_on_stream after collect");
        sc_fill_red<<<64, 256, 0, s>>>(isrc, dsrc, me, (int)round, npes, n);
        ishmemx_team_sync_on_stream(ISHMEM_TEAM_WORLD, s); step(s, "team_sync_on_stream"); // every source filled before any is read
        CHECK(ishmemx_int_sum_reduce_on_stream(ISHMEM_TEAM_WORLD, idst, isrc, n, s) == 0, "int_sum_reduce_on_stream"); step(s, "int_sum_reduce_on_stream");
        sc_check<<<64, 256, 0, s>>>(SC_ISUM, idst, 0, round, n, me, npes, bad);
        CHECK(ishmemx_double_sum_reduce_on_stream(ISHMEM_TEAM_WORLD, ddst, dsrc, n, s) == 0, "double_sum_reduce_on_stream"); step(s, "double_sum_reduce_on_stream");
        sc_check<<<64, 256, 0, s>>>(SC_DSUM, ddst, 0, round, n, me, npes, bad);
        ishmemx_team_sync_on_stream(ISHMEM_TEAM_WORLD, s);
        sc_fill_max<<<64, 256, 0, s>>>(isrc, me, (int)round, n);
        ishmemx_team_sync_on_stream(ISHMEM_TEAM_WORLD, s);
        CHECK(ishmemx_int_max_reduce_on_stream(ISHMEM_TEAM_WORLD, idst, isrc, n, s) == 0, "int_max_reduce_on_stream"); step(s, "int_max_reduce_on_stream");
        sc_check<<<64, 256, 0, s>>>(SC_IMAX, idst, 0, round, n, me, npes, bad);
        ishmemx_team_sync_on_stream(ISHMEM_TEAM_WORLD, s);
        size_t sn = n < 4096 ? n : 4096;
        sc_fill_scan<<<64, 256, 0, s>>>(isrc, me, (int)round, sn);
        ishmemx_team_sync_on_stream(ISHMEM_TEAM_WORLD, s);
        CHECK(ishmemx_int_sum_inscan_on_stream(ISHMEM_TEAM_WORLD, idst, isrc, sn, s) == 0, "int_sum_inscan_on_stream"); step(s, "int_sum_inscan_on_stream");
        sc_check<<<64, 256, 0, s>>>(SC_INSCAN, idst, 0, round, sn, me, npes, bad);
        ishmemx_team_sync_on_stream(ISHMEM_TEAM_WORLD, s);
        CK(cudaStreamSynchronize(s));
        unsigned long long b;
        CK(cudaMemcpy(&b, bad, sizeof b, cudaMemcpyDeviceToHost));
        CHECK(b == 0, "stream-ordered collectives, %zu elements: %llu elements wrong", n, b);
        if (me == 0) fprintf(stderr, "stream collectives: %zu elements done\n", n);
    }
    ishmem_barrier_all();
    CK(cudaFree(bad));
    CK(cudaStreamDestroy(s));
    ishmem_free(ddst);
    ishmem_free(dsrc);
    ishmem_free(idst);
    ishmem_free(isrc);
    ishmem_free(dst);
    ishmem_free(src);
}

// Every block waits for every other block of the grid (which only ends if
// all are resident at once); then the first block adds the grid's size to
// PE 0's counter and meets the other PEs in a device barrier. (Only after
// the others have left: an AMO through the ring on GPU memory is a kernel
// the host launches, which needs a free SM.)
__global__ void coop_grid(unsigned *arrived, long *ctr) {
    __syncthreads();
    if (threadIdx.x == 0) {
        atomicAdd(arrived, 1u);
        while (atomicAdd(arrived, 0u) < gridDim.x) {
        }
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        ishmem_long_atomic_add(ctr, (long)gridDim.x, 0);
        ishmem_barrier_all();
    }
}

// ----- stream-ordered routines captured into a CUDA graph --------------------

// One replay's round number lives in device memory (a replay repeats the
// captured arguments): g_next advances it, the fill and check kernels
// derive each element from it.
__global__ void g_next(long *it) { *it += 1; }
__device__ long g_value(int pe, long it, size_t i) { return (long)pe * 1000000000L + it * 100000L + (long)(i % 99991); }
__global__ void g_fill(long *p, int pe, const long *it, size_t n) {
    for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) p[i] = g_value(pe, *it, i);
}
// Checks p[i] against the value of `pe` (or, with pe < 0, the sum over
// every PE's value: the reduction) and counts the elements checked.
__global__ void g_check(const long *p, int pe, int npes, const long *it, size_t n, unsigned long long *bad,
                        unsigned long long *checked) {
    unsigned long long seen = 0;
    for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        long want = 0;
        if (pe >= 0) want = g_value(pe, *it, i);
        else
            for (int q = 0; q < npes; q++) want += g_value(q, *it, i);
        if (p[i] != want) atomicAdd(bad, 1ull);
        seen++;
    }
    if (seen) atomicAdd(checked, seen);
}
__global__ void g_reset(uint64_t *sig) { *sig = 0; }

// Puts, a put with signal and its wait, a get, quiet, barriers, a
// reduction, a broadcast and the program's own kernels, captured once from
// a stream (global capture mode: the strictest, in which any other
// thread's unsafe CUDA call would invalidate the capture, so the capture
// is held open past a watchdog tick) and replayed `replays` times with
// no host synchronization between; every replay's results are checked.
static void test_graph() {
    int right = (me + 1) % npes, left = (me + npes - 1) % npes;
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    const size_t most = (size_t)1 << 21; // 16 MiB of longs: past the copy-engine cutover
    long *src = (long *)ishmem_malloc(most * sizeof(long)), *dst = (long *)ishmem_calloc(most, sizeof(long));
    long *dst2 = (long *)ishmem_calloc(most, sizeof(long)), *red = (long *)ishmem_calloc(most, sizeof(long));
    long *bc = (long *)ishmem_calloc(most, sizeof(long)), *back = (long *)ishmem_calloc(most, sizeof(long));
    uint64_t *sig = (uint64_t *)ishmem_calloc(1, sizeof(uint64_t));
    int *any_failed = (int *)ishmem_calloc(1, sizeof(int));
    long *it;
    unsigned long long *bad, *checked;
    CK(cudaMalloc(&it, sizeof *it));
    CK(cudaMalloc(&bad, sizeof *bad));
    CK(cudaMalloc(&checked, sizeof *checked));
    ishmem_barrier_all();
    const size_t sizes[] = {1000, most};
    for (size_t n : sizes) {
        const int replays = n == most ? 20 : 1000;
        CK(cudaMemset(it, 0, sizeof *it));
        CK(cudaMemset(bad, 0, sizeof *bad));
        CK(cudaMemset(checked, 0, sizeof *checked));
        CK(cudaDeviceSynchronize());
        ishmem_barrier_all();
        const size_t bytes = n * sizeof(long);
        cudaGraph_t g;
        CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
        g_next<<<1, 1, 0, s>>>(it);
        g_fill<<<64, 256, 0, s>>>(src, me, it, n);
        ishmemx_barrier_all_on_stream(s); // every source filled, the last replay's checks done
        ishmemx_putmem_on_stream(dst, src, bytes, right, s);
        ishmemx_putmem_signal_on_stream(dst2, src, bytes, sig, 1, ISHMEM_SIGNAL_SET, right, s);
        ishmemx_signal_wait_until_on_stream(sig, ISHMEM_CMP_EQ, 1, s);
        g_check<<<64, 256, 0, s>>>(dst2, left, npes, it, n, bad, checked);
        g_reset<<<1, 1, 0, s>>>(sig); // before this replay's last barrier: the left PE signals again after it
        ishmemx_getmem_on_stream(back, src, bytes, right, s);
        ishmemx_quiet_on_stream(s);
        g_check<<<64, 256, 0, s>>>(back, right, npes, it, n, bad, checked);
        CHECK(ishmemx_long_sum_reduce_on_stream(ISHMEM_TEAM_WORLD, red, src, n, s) == 0, "sum_reduce_on_stream in a capture");
        g_check<<<64, 256, 0, s>>>(red, -1, npes, it, n, bad, checked);
        CHECK(ishmemx_long_broadcast_on_stream(ISHMEM_TEAM_WORLD, bc, src, n, 0, s) == 0, "broadcast_on_stream in a capture");
        g_check<<<64, 256, 0, s>>>(bc, 0, npes, it, n, bad, checked);
        ishmemx_barrier_all_on_stream(s); // every put complete
        g_check<<<64, 256, 0, s>>>(dst, left, npes, it, n, bad, checked);
        // The library's threads (ring server, watchdog) keep running while
        // the capture is open; none of their calls may invalidate it.
        usleep(300000);
        cudaError_t e = cudaStreamEndCapture(s, &g);
        CHECK(e == cudaSuccess, "capturing the stream routines (%zu elements) failed: %s", n, cudaGetErrorString(e));
        // Every PE replays or none does: the others would wait for one
        // that does not in the graph's barriers.
        int failed = e != cudaSuccess;
        CK(cudaMemcpy(any_failed, &failed, sizeof failed, cudaMemcpyHostToDevice));
        ishmem_int_max_reduce(ISHMEM_TEAM_WORLD, any_failed, any_failed, 1);
        CK(cudaMemcpy(&failed, any_failed, sizeof failed, cudaMemcpyDeviceToHost));
        if (failed) {
            CHECK(e != cudaSuccess, "another PE's capture (%zu elements) failed: no replays", n);
            if (e == cudaSuccess) CK(cudaGraphDestroy(g));
            break;
        }
        cudaGraphExec_t x;
        CK(cudaGraphInstantiate(&x, g, 0));
        for (int r = 0; r < replays; r++) CK(cudaGraphLaunch(x, s));
        CK(cudaStreamSynchronize(s));
        unsigned long long b = 0, c = 0;
        CK(cudaMemcpy(&b, bad, sizeof b, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(&c, checked, sizeof c, cudaMemcpyDeviceToHost));
        CHECK(b == 0, "graph of stream routines, %zu elements, %d replays: %llu elements wrong", n, replays, b);
        CHECK(c == 5ull * n * replays, "graph of stream routines, %zu elements: %llu elements checked, want %llu", n, c,
              5ull * n * replays);
        CK(cudaGraphExecDestroy(x));
        CK(cudaGraphDestroy(g));
        ishmem_barrier_all();
        if (me == 0) fprintf(stderr, "graph: %zu elements, %d replays done\n", n, replays);
    }
    CK(cudaFree(it));
    CK(cudaFree(bad));
    CK(cudaFree(checked));
    CK(cudaStreamDestroy(s));
    ishmem_free(any_failed);
    ishmem_free(sig);
    ishmem_free(back);
    ishmem_free(bc);
    ishmem_free(red);
    ishmem_free(dst2);
    ishmem_free(dst);
    ishmem_free(src);
}

static void test_collective_launch() {
    long *ctr = (long *)ishmem_calloc(1, sizeof(long));
    unsigned *arrived;
    CK(cudaMalloc(&arrived, sizeof *arrived));
    CK(cudaMemset(arrived, 0, sizeof *arrived));
    int grid = 0;
    dim3 block(256);
    CHECK(ishmemx_collective_launch_query_gridsize((const void *)coop_grid, block, nullptr, 0, &grid) == 0 && grid > 0,
          "collective launch query: grid %d", grid);
    void *args[] = {&arrived, &ctr};
    // PEs sharing a GPU split the grid the query gives (the whole GPU's).
    int ndev = 1;
    CK(cudaGetDeviceCount(&ndev));
    int share = (ishmem_team_n_pes(ISHMEMX_TEAM_NODE) + ndev - 1) / ndev;
    // Where the PEs do not share memory (ISHMEM_ENABLE_SHM=0) the node
    // team is this PE alone: the launcher says how many share the GPU.
    if (const char *v = getenv("TEST_PES_PER_GPU")) share = atoi(v);
    int mine = grid / (share > 0 ? share : 1);
    ishmem_barrier_all();
    if (me == 0) fprintf(stderr, "collective launch of %d blocks (%d PEs a GPU)\n", mine, share);
    int r = ishmemx_collective_launch((const void *)coop_grid, dim3(mine), block, args, 0, 0);
    CHECK(r == 0, "collective launch of %d blocks returned %d", mine, r);
    sync_kernel();
    ishmem_barrier_all();
    if (me == 0) CHECK(ishmem_long_g(ctr, 0) == (long)mine * npes, "collective launch: %ld blocks arrived, want %ld",
                       ishmem_long_g(ctr, 0), (long)mine * npes);
    // One block more than can be resident: refused with an error, nothing runs.
    r = ishmemx_collective_launch((const void *)coop_grid, dim3(grid + 1), block, args, 0, 0);
    CHECK(r != 0, "a collective launch of %d blocks (at most %d co-resident) was accepted", grid + 1, grid);
    CK(cudaDeviceSynchronize());
    CK(cudaFree(arrived));
    ishmem_barrier_all();
    ishmem_free(ctr);
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "all";
    small = argc > 2 && strcmp(argv[2], "small") == 0;
    ishmem_init();
    me = ishmem_my_pe();
    npes = ishmem_n_pes();
    // "basic": everything but the collectives and the stream routines.
    bool basic = strcmp(mode, "basic") == 0;
    bool all = strcmp(mode, "all") == 0 || basic;
    if (all || !strcmp(mode, "rma")) test_rma();
    if (all || !strcmp(mode, "amo")) test_amo();
    if (all || !strcmp(mode, "pingpong")) test_pingpong();
    if (all || !strcmp(mode, "fence")) test_fence();
    if (all || !strcmp(mode, "barrier")) test_barrier();
    if (all || !strcmp(mode, "mixed")) test_mixed();
    if ((all && !basic) || !strcmp(mode, "coll")) test_coll();
    if (!strcmp(mode, "graph")) test_graph();
    if ((all && !basic) || !strcmp(mode, "stream")) {
        test_stream();
        test_stream_coll();
        test_graph();
        // With every operation through the ring, the host performs each
        // AMO on GPU memory as a one-thread kernel, which needs a free SM:
        // a collective launch of a grid that fills every SM and waits on
        // the ring leaves none (docs/device.md, forced ring).
        const char *ring = getenv("ISHMEM_DEVICE_RING_ALL");
        if (!(ring && atoi(ring)))
            test_collective_launch();
        else if (me == 0)
            fprintf(stderr, "collective launch left out: every operation goes through the ring\n");
    }
    ishmem_barrier_all();
    if (failures == 0 && me == 0) printf("cuda %s ok on %d PEs\n", mode, npes);
    ishmem_finalize();
    return failures ? 1 : 0;
}
