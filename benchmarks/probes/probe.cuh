// What the probes share: an error check, and a launch's device time as the median of 21 runs on a cold L2.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#define CHECK(x)                                 \
  do {                                           \
    cudaError_t e = (x);                         \
    if (e != cudaSuccess) {                      \
      printf("%s\n", cudaGetErrorString(e));     \
      return 1;                                  \
    }                                            \
  } while (0)

// Milliseconds; `flush` (512 MiB) is written before each run, so that no operand is left in L2.
template <typename Launch>
float cold_median_ms(Launch launch, void* flush) {
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  std::vector<float> times;
  for (int r = 0; r < 21; ++r) {
    cudaMemsetAsync(flush, r, size_t(512) << 20);
    cudaEventRecord(start);
    launch();
    cudaEventRecord(stop);
    cudaEventSynchronize(stop);
    float t;
    cudaEventElapsedTime(&t, start, stop);
    times.push_back(t);
  }
  std::sort(times.begin(), times.end());
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return times[10];
}

struct alignas(16) Bytes16 {
  uint4 v;
};

__global__ void copy_kernel(const Bytes16* in, Bytes16* out, long n) {
  const long i = blockIdx.x * long(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = in[i];
}
