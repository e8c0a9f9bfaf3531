// What the probes share: an error check, and a launch's device time as the median of 21 runs on a cold L2.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

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

// n values of T in [-4, 4) from a hash of their index, signs mixed within every warp, as a benchmark's randn would be.
template <typename T>
__global__ void fill_kernel(T* out, long n) {
  const long i = blockIdx.x * long(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  uint32_t h = uint32_t(i) * 0x9E3779B9u;
  h ^= h >> 15;
  h *= 0x85EBCA6Bu;
  h ^= h >> 13;
  out[i] = T(float(h >> 8) * 0x1p-21f - 4.f);
}

template <typename T>
void fill(void* out, long bytes) {
  const long n = bytes / long(sizeof(T));
  fill_kernel<<<(n + 255) / 256, 256>>>(static_cast<T*>(out), n);
}

__global__ void copy_kernel(const Bytes16* in, Bytes16* out, long n) {
  const long i = blockIdx.x * long(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = in[i];
}
