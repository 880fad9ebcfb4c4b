// The reverse-offload ring's physical floor on this machine (a
// benchmark, not a test; no library): what a GPU thread's request to a host
// thread and its answer cost with nothing but stores and polls.
//
//   nvcc -arch=sm_90 -O2 -std=c++17 ring_floor.cu -o ring_floor && ./ring_floor
//
// Rows (CSV: figure,value,unit):
// * floor: one thread stores a 64-byte line into host-pinned memory (8-byte
//   volatile stores, the last one the line's sequence), a host thread sees
//   the sequence and stores it into an answer word in host-pinned memory,
//   the thread polls that word. GPUs without GPUDirect copies (no gdrcopy)
//   cannot be written by the host with a store, so the answer is polled
//   across PCIe: this round trip is the floor of any ring on the machine.
// * the same with a system-scope release fence before the sequence store;
// * latency of one relaxed system-scope atomic add on host memory (a ticket
//   counter there) and on GPU memory;
// * a ring of 4096 lines (tickets from a counter in GPU memory, one atomic
//   per warp; completions as answer words in host memory): requests per
//   second from 1, 32, 1024 and 32 x 1024 threads with one host thread.
// * the library's ring costs one at a time on that raw ring (rows
//   "costs ..."; the library's protocol is in runtime/src/ring.rs): a
//   ticket a lane instead of one atomic a warp; a system-scope add to a
//   count in host memory per request (the library's `published`) or one
//   per warp; the line written as four 16-byte stores instead of eight
//   8-byte ones; a 16-byte answer (value, check) polled as one load. Each
//   at 1024 and 32 x 1024 threads, 10 requests a thread and 1 (a burst,
//   as ring_bench's 32 x 1024 figure is), and with a ring of 32768 lines.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <cuda_runtime.h>

#include "check.h"

typedef unsigned long long u64;
constexpr int SLOTS = 4096;
constexpr int MAX_SLOTS = 8 * SLOTS; // the costs rows' larger ring

struct alignas(64) Line {
    u64 w[8]; // w[7]: ticket + 1, stored last
};

__device__ inline u64 gtime() {
    u64 t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
__device__ inline void vst(u64 *p, u64 v) { asm volatile("st.volatile.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory"); }
__device__ inline u64 vld(const u64 *p) {
    u64 v;
    asm volatile("ld.volatile.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
__device__ inline void fence_release_sys() { asm volatile("fence.acq_rel.sys;" ::: "memory"); }

__device__ inline void send(Line *l, u64 t, bool fence) {
    for (int i = 0; i < 7; i++) vst(&l->w[i], t * 8 + i);
    if (fence) fence_release_sys();
    vst(&l->w[7], t + 1);
}

// Mode 0: floor; 1: floor with a release fence; 2: atomic add on `ctr`.
__global__ void round_trip(int mode, Line *line, u64 *answer, u64 *ctr, int iters, u64 *ns) {
    u64 t0 = gtime();
    for (int i = 0; i < iters; i++) {
        if (mode == 2) {
            u64 v;
            asm volatile("atom.relaxed.sys.global.add.u64 %0, [%1], 1;" : "=l"(v) : "l"(ctr) : "memory");
            if (v == ~0ull) *ns = 0; // keep the result live
            continue;
        }
        send(line, i, mode == 1);
        while (vld(answer) != (u64)i + 1) {
        }
    }
    *ns = (gtime() - t0) / iters;
}

// Every thread sends `per` requests through the ring and waits for each.
__global__ void ring_rate(Line *ring, u64 *answers, u64 *tickets, int per) {
    for (int k = 0; k < per; k++) {
        unsigned mask = __activemask();
        int lane = threadIdx.x % 32, leader = __ffs(mask) - 1;
        int rank = __popc(mask & ((1u << lane) - 1));
        u64 base = 0;
        if (lane == leader)
            base = atomicAdd(tickets, (u64)__popc(mask));
        base = __shfl_sync(mask, base, leader);
        u64 t = base + rank;
        u64 *a = &answers[t % SLOTS];
        if (t >= SLOTS)
            while (vld(a) < t - SLOTS + 1) {
            }
        send(&ring[t % SLOTS], t, false);
        while (vld(a) < t + 1) {
        }
    }
}

// The costs rows: `flags` adds the library's costs one at a time.
enum { PER_LANE = 1, PUBLISH = 2, PUBLISH_WARP = 4, WIDE = 8, CPL16 = 16, CPL_LINE = 32, ACK = 64, BIG = 128 };
__host__ __device__ inline u64 ring_slots(int flags) { return flags & BIG ? MAX_SLOTS : SLOTS; }
// Words between answers: 1 (8-byte answers), 2 (16-byte), 8 (one 64-byte line each).
__host__ __device__ inline int answer_stride(int flags) { return flags & CPL_LINE ? 8 : flags & CPL16 ? 2 : 1; }
__device__ inline void vst2(u64 *p, u64 a, u64 b) {
    asm volatile("st.volatile.global.v2.u64 [%0], {%1, %2};" ::"l"(p), "l"(a), "l"(b) : "memory");
}
__device__ inline void vld2(const u64 *p, u64 *a, u64 *b) {
    asm volatile("ld.volatile.global.v2.u64 {%0, %1}, [%2];" : "=l"(*a), "=l"(*b) : "l"(p) : "memory");
}
__global__ void ring_costs(Line *ring, u64 *answers, u64 *tickets, u64 *published, int per, int flags) {
    for (int k = 0; k < per; k++) {
        u64 t;
        if (flags & PER_LANE) {
            t = atomicAdd(tickets, (u64)1);
        } else {
            unsigned mask = __activemask();
            int lane = threadIdx.x % 32, leader = __ffs(mask) - 1;
            u64 base = 0;
            if (lane == leader) base = atomicAdd(tickets, (u64)__popc(mask));
            t = __shfl_sync(mask, base, leader) + __popc(mask & ((1u << lane) - 1));
        }
        if (flags & PUBLISH)
            asm volatile("red.relaxed.sys.global.add.u64 [%0], %1;" ::"l"(published), "l"((u64)1) : "memory");
        if (flags & PUBLISH_WARP) {
            unsigned mask = __activemask();
            if (threadIdx.x % 32 == __ffs(mask) - 1)
                asm volatile("red.relaxed.sys.global.add.u64 [%0], %1;" ::"l"(published), "l"((u64)__popc(mask)) : "memory");
        }
        int stride = answer_stride(flags);
        const u64 slots = ring_slots(flags);
        u64 *a = &answers[(t % slots) * stride];
        if (t >= slots)
            while (vld(a) < t - slots + 1) {
            }
        Line *l = &ring[t % slots];
        if (flags & WIDE) {
            for (int i = 0; i < 6; i += 2) vst2(&l->w[i], t * 8 + i, t * 8 + i + 1);
            vst2(&l->w[6], t * 8 + 6, t + 1);
        } else {
            send(l, t, false);
        }
        if (flags & CPL16) {
            u64 v, c;
            do vld2(a, &v, &c);
            while (v < t + 1 || c != v * 3);
            // The ack: in the answer's line, or packed after the answers.
            if (flags & ACK) vst(flags & CPL_LINE ? a + 2 : answers + 8 * MAX_SLOTS + t % slots, t + 1);
        } else {
            while (vld(a) < t + 1) {
            }
        }
    }
}

static void host_echo(Line *ring, u64 *answers, u64 total, bool single, std::atomic<bool> *stop, int stride,
                      u64 slots) {
    volatile Line *r = ring;
    volatile u64 *a = answers;
    for (u64 next = 0; next < total && !stop->load(std::memory_order_relaxed);) {
        volatile Line *l = single ? &r[0] : &r[next % slots];
        if (l->w[7] != next + 1) continue;
        std::atomic_thread_fence(std::memory_order_acquire);
        if (stride > 1) {
            a[(next % slots) * stride + 1] = (next + 1) * 3;
            a[(next % slots) * stride] = next + 1;
        } else {
            a[single ? 0 : next % slots] = next + 1;
        }
        next++;
    }
}

// Millions of requests a second: `launch` starts a kernel that sends
// `total` requests, which a host thread echoes (`stride`, `slots`: the
// answers' layout); the ring, the answers and the tickets are reset first.
template <typename F>
static double ring_rate_of(Line *ring, u64 *answers, u64 *dtickets, u64 total, int stride, u64 slots, F launch) {
    memset(ring, 0, sizeof(Line) * MAX_SLOTS);
    memset(answers, 0, 72 * MAX_SLOTS);
    CK(cudaMemset(dtickets, 0, 8));
    std::atomic<bool> stop{false};
    std::thread h(host_echo, ring, answers, total, false, &stop, stride, slots);
    auto t0 = std::chrono::steady_clock::now();
    launch();
    CK(cudaDeviceSynchronize());
    double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    h.join();
    return total / sec / 1e6;
}

int main() {
    Line *ring;
    u64 *answers, *hctr, *dctr, *dtickets, *ns;
    CK(cudaHostAlloc(&ring, sizeof(Line) * MAX_SLOTS, cudaHostAllocMapped));
    CK(cudaHostAlloc(&answers, 72 * MAX_SLOTS, cudaHostAllocMapped));
    CK(cudaHostAlloc(&hctr, 64, cudaHostAllocMapped));
    CK(cudaMalloc(&dctr, 64));
    CK(cudaMalloc(&dtickets, 64));
    CK(cudaMallocManaged(&ns, 8));
    const int iters = 20000;
    const char *names[] = {"floor: 64-byte line to the host and an answer word back", "floor with a release fence",
                           "atomic add on host memory"};
    for (int mode = 0; mode < 3; mode++) {
        memset(ring, 0, sizeof(Line) * SLOTS);
        memset(answers, 0, 8 * SLOTS);
        std::atomic<bool> stop{false};
        std::thread h;
        if (mode < 2) h = std::thread(host_echo, ring, answers, (u64)iters, true, &stop, 1, (u64)SLOTS);
        round_trip<<<1, 1>>>(mode, ring, answers, hctr, iters, ns);
        CK(cudaDeviceSynchronize());
        if (h.joinable()) h.join();
        printf("%s,%.3f,us\n", names[mode], *ns / 1e3);
    }
    round_trip<<<1, 1>>>(2, ring, answers, dctr, iters, ns);
    CK(cudaDeviceSynchronize());
    printf("atomic add on GPU memory,%.3f,us\n", *ns / 1e3);
    struct {
        int blocks, threads, per;
    } shapes[] = {{1, 1, 20000}, {1, 32, 2000}, {1, 1024, 100}, {32, 1024, 10}};
    for (auto s : shapes) {
        u64 total = (u64)s.blocks * s.threads * s.per;
        double r = ring_rate_of(ring, answers, dtickets, total, 1, SLOTS,
                                [&] { ring_rate<<<s.blocks, s.threads>>>(ring, answers, dtickets, s.per); });
        printf("raw ring rate from %d x %d threads,%.2f,M requests/s\n", s.blocks, s.threads, r);
    }
    struct {
        int flags;
        const char *name;
    } costs[] = {{0, "raw"},
                 {PER_LANE, "+ticket a lane"},
                 {PUBLISH, "+published a request"},
                 {PUBLISH_WARP, "+published a warp"},
                 {WIDE, "+16-byte stores"},
                 {CPL16, "+16-byte answer"},
                 {CPL16 | CPL_LINE, "+16-byte answer a line"},
                 {CPL16 | CPL_LINE | ACK, "+16-byte answer a line and an ack"},
                 {PER_LANE | PUBLISH | CPL16 | CPL_LINE | ACK, "library until 2026-11-29 (lane tickets; published; answer a line; ack)"},
                 {PER_LANE | PUBLISH_WARP | CPL16 | CPL_LINE | ACK, "library with published a warp"},
                 {PER_LANE | PUBLISH | CPL16 | ACK, "library with packed answers"},
                 {PER_LANE | PUBLISH_WARP | CPL16 | ACK, "library with packed answers and published a warp"},
                 {PER_LANE | PUBLISH_WARP | CPL16 | ACK | WIDE, "library with packed answers, published a warp, 16-byte stores"},
                 {PER_LANE | CPL16 | ACK, "library now (lane tickets; packed answers and acks)"},
                 {PER_LANE | CPL16 | ACK | BIG, "library now with 32768 slots"},
                 {BIG, "raw with 32768 slots"}};
    struct {
        int blocks, threads, per;
    } cshapes[] = {{1, 1024, 100}, {32, 1024, 10}, {32, 1024, 1}};
    for (int round = 0; round < 3; round++)
        for (auto c : costs)
            for (auto s : cshapes) {
                u64 total = (u64)s.blocks * s.threads * s.per;
                double r = ring_rate_of(ring, answers, dtickets, total, answer_stride(c.flags), ring_slots(c.flags), [&] {
                    ring_costs<<<s.blocks, s.threads>>>(ring, answers, dtickets, hctr, s.per, c.flags);
                });
                printf("costs %s from %d x %d threads x %d,%.2f,M requests/s\n", c.name, s.blocks, s.threads, s.per, r);
                fflush(stdout);
            }
    return 0;
}
