/*
 * cuda_check.h — CK(call): the standalone CUDA benchmarks' check of a runtime call; on failure it
 * prints where and why and exits (these tools are not the library: they own their process).
 */
#ifndef RSSM_BENCH_CUDA_CHECK_H
#define RSSM_BENCH_CUDA_CHECK_H

#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#define CK(x)                                                                                                          \
    do {                                                                                                               \
        cudaError_t e_ = (x);                                                                                          \
        if (e_ != cudaSuccess) {                                                                                       \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));                         \
            exit(1);                                                                                                   \
        }                                                                                                              \
    } while (0)

#endif /* RSSM_BENCH_CUDA_CHECK_H */
