// What the probes share: an error check, and a launch's device time as the median of 21 runs on a cold L2.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include <algorithm>
#include <cstdio>
#include <cstring>
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

// The time of a device copy of `packs` 16-byte packs from `in` to `out` (cold_median_ms): the probes' roofline.
inline float copy_ms(const void* in, void* out, long packs, void* flush) {
  const unsigned blocks = unsigned((packs + 255) / 256);
  const auto* from = static_cast<const Bytes16*>(in);
  auto* to = static_cast<Bytes16*>(out);
  return cold_median_ms([&] { copy_kernel<<<blocks, 256>>>(from, to, packs); }, flush);
}

// A float32 ulp at a double r: of r's binade, or 2^-149 below float's normal range.
__device__ inline double float32_ulp_of(double r) {
  if (r == 0) return 0x1p-149;  // frexp's exponent of 0 is 0
  int e;
  frexp(fabs(r), &e);  // |r| in [2^(e-1), 2^e)
  return ldexp(1.0, max(e - 1, -126) - 23);
}

// A variant's largest error so far and its input, as one key for atomicMax: the error's float bits over the input's.
__device__ inline void record_error(unsigned long long* worst, double err, uint32_t bits) {
  if (!(err == err)) err = 2e9;
  atomicMax(worst, (unsigned long long)(__float_as_uint(float(err))) << 32 | bits);
}

// Runs `accuracy` (a thread an input, record_error per variant into worst[variant]) over every float32 and prints
// each variant's largest error and where.
inline int sweep_every_float32(void (*accuracy)(unsigned long long*, uint32_t), const char* const* names,
                               int variants) {
  unsigned long long* worst;
  CHECK(cudaMalloc(&worst, variants * sizeof(unsigned long long)));
  CHECK(cudaMemset(worst, 0, variants * sizeof(unsigned long long)));
  for (uint64_t base = 0; base < (uint64_t(1) << 32); base += uint64_t(1) << 30)
    accuracy<<<(1 << 30) / 256, 256>>>(worst, uint32_t(base));
  CHECK(cudaDeviceSynchronize());
  std::vector<unsigned long long> keys(variants);
  CHECK(cudaMemcpy(keys.data(), worst, variants * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
  for (int v = 0; v < variants; ++v) {
    const uint32_t e = uint32_t(keys[v] >> 32), b = uint32_t(keys[v]);
    float err, x;
    memcpy(&err, &e, 4);
    memcpy(&x, &b, 4);
    printf("%-34s max error %.4f ulp at x = %.9g\n", names[v], err, x);
  }
  return cudaFree(worst) == cudaSuccess ? 0 : 1;
}
