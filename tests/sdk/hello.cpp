// A C++ program using the C headers through the installed SDK.
#include <shmem.h>
#include <cstdio>
#include <vector>

int main() {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    long *x = static_cast<long *>(shmem_calloc(1, sizeof(long)));
    shmem_long_atomic_add(x, me + 1, 0);
    shmem_barrier_all();
    std::vector<long> got(1);
    shmem_long_get(got.data(), x, 1, 0);
    long want = static_cast<long>(n) * (n + 1) / 2;
    if (me == 0) std::printf("cxx sum %ld\n", got[0]);
    shmem_free(x);
    shmem_finalize();
    return got[0] == want ? 0 : 1;
}
