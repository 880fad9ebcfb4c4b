// GPU tests of the CUDA device library: device-initiated RMA (every type,
// sizes 1..65536 elements at offsets, thread, block and warp forms), AMOs
// from thousands of threads on several PEs with exact totals, put_signal
// ping-pong between kernels, fence ordering, the device barrier, host and
// device operations mixed on one heap. Run on 2+ PEs by tests/cuda/run.sh;
// with ISHMEM_DEVICE_RING_ALL=1 every device operation goes through the
// reverse-offload ring (thousands of requests: the ring wraps around).
//
//   test_cuda MODE [small]   MODE: rma | amo | pingpong | fence | barrier | mixed | all
#include <ishmem.h>
#include <ishmemx.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

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

__global__ void amo_storm(long *ctr, int *ictr, uint64_t *cas_ctr, uint64_t *bits,
                          long *fetched, int iters) {
    int n = ishmem_n_pes(), me = ishmem_my_pe();
    size_t tid = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    for (int k = 0; k < iters; k++) {
        int pe = (int)((tid + k + me) % n);
        long old = ishmem_long_atomic_fetch_add(ctr, 1, pe);
        if (k == 0) fetched[tid] = old;
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
    long *fetched = (long *)ishmem_calloc(nthreads, sizeof(long));
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
    // Every PE's threads spread iters adds each over the PEs evenly.
    long want = (long)(nthreads * iters);
    CHECK(c == want, "fetch_add total %ld, want %ld", c, want);
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
    CHECK(c2 == want + 100, "after host adds %ld, want %ld", c2, want + 100);
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
    // Host element forms and waits on GPU memory.
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

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "all";
    small = argc > 2 && strcmp(argv[2], "small") == 0;
    ishmem_init();
    me = ishmem_my_pe();
    npes = ishmem_n_pes();
    bool all = strcmp(mode, "all") == 0;
    if (all || !strcmp(mode, "rma")) test_rma();
    if (all || !strcmp(mode, "amo")) test_amo();
    if (all || !strcmp(mode, "pingpong")) test_pingpong();
    if (all || !strcmp(mode, "fence")) test_fence();
    if (all || !strcmp(mode, "barrier")) test_barrier();
    if (all || !strcmp(mode, "mixed")) test_mixed();
    ishmem_barrier_all();
    if (failures == 0 && me == 0) printf("cuda %s ok on %d PEs\n", mode, npes);
    ishmem_finalize();
    return failures ? 1 : 0;
}
