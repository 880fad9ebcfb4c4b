// CK(call): a CUDA runtime call that must succeed; otherwise the file, line,
// call and CUDA's message go to stderr and the program exits with 1 (the
// GPU benchmarks' check, bench_vs.cu's too; the tests print their PE and
// exit with 2).
#pragma once
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CK(call)                                                                                  \
    do {                                                                                          \
        cudaError_t e_ = (call);                                                                  \
        if (e_ != cudaSuccess) {                                                                  \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
            exit(1);                                                                              \
        }                                                                                         \
    } while (0)
