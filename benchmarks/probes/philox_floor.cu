// How close a one-pass, mask-free SELU + AlphaDropout can come to a device copy on this GPU (docs/design/random-op.md):
// Philox4x32-10 alone; the affine dropout on its words; the same after a plain SELU (hardware exp for bf16, expm1f
// for fp32), one 16-byte pack and one Philox block a thread, and over grid-stride loops of 4 and 16 waves, on inputs
// of mixed signs; each as % of a copy of the same bytes (probe.cuh: cold L2, median of 21 runs).
// Build and run from the repository root:
//   nvcc -std=c++17 -O3 -arch=sm_90a -I kernels -I $(python3 -c "import torch.utils.cpp_extension as c; \
//       print(c.include_paths()[0])") benchmarks/probes/philox_floor.cu -o /tmp/philox_floor && /tmp/philox_floor
#include <cuda_bf16.h>

#include "philox.h"
#include "probe.cuh"

using act::PhiloxStream;

struct Dropout {
  uint32_t keep_below;
  float a, b, c;  // kept: a v + b, dropped: v * 0 + c
  __device__ float operator()(uint32_t word, float v) const { return word < keep_below ? v * a + b : v * 0.f + c; }
};

// bf16: 8 elements a pack, one block (8 words of 16 bits).
template <bool Selu>
__device__ void bf16_pack(Bytes16& p, const PhiloxStream::Block& block, const Dropout& dropout) {
  __nv_bfloat16* e = reinterpret_cast<__nv_bfloat16*>(&p.v);
#pragma unroll
  for (int k = 0; k < 8; ++k) {
    float x = __bfloat162float(e[k]);
    if (Selu) x = x > 0.f ? x * 1.0507f : (__expf(x) - 1.f) * 1.7581f;
    e[k] = __float2bfloat16(dropout((block.v[k >> 1] >> (16 * (k & 1))) & 0xFFFFu, x));
  }
}

// fp32: 4 elements a pack, one block (4 words of 32 bits).
template <bool Selu>
__device__ void f32_pack(Bytes16& p, const PhiloxStream::Block& block, const Dropout& dropout) {
  float* e = reinterpret_cast<float*>(&p.v);
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const float x = Selu ? (e[k] > 0.f ? e[k] * 1.0507f : expm1f(e[k]) * 1.7581f) : e[k];
    e[k] = dropout(block.v[k], x);
  }
}

template <bool Bf16, bool Selu>
__global__ void dropout_kernel(const Bytes16* in, Bytes16* out, long n, PhiloxStream s, Dropout dropout) {
  for (long i = blockIdx.x * long(blockDim.x) + threadIdx.x; i < n; i += long(gridDim.x) * blockDim.x) {
    Bytes16 p = in[i];
    const PhiloxStream::Block block = s.block(uint64_t(i));
    if (Bf16) {
      bf16_pack<Selu>(p, block, dropout);
    } else {
      f32_pack<Selu>(p, block, dropout);
    }
    out[i] = p;
  }
}

// Philox alone, its blocks written out (no data read, half a copy's bytes): a lower bound on the generator's rate.
__global__ void philox_only(Bytes16* out, long n, PhiloxStream s) {
  const long i = blockIdx.x * long(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const PhiloxStream::Block block = s.block(uint64_t(i));
  out[i].v = make_uint4(block.v[0], block.v[1], block.v[2], block.v[3]);
}

int main() {
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  printf("%s\n", prop.name);
  void* flush;
  CHECK(cudaMalloc(&flush, size_t(512) << 20));
  const Dropout bf16{58982u, 0.9f, 0.1f, -1.5f}, f32{3865470566u, 0.9f, 0.1f, -1.5f};  // keep 90%
  for (long bytes : {1L << 26, 1L << 28, 1L << 29}) {  // a tensor: bf16 2^25..2^28 elements, fp32 2^24..2^27
    const long n = bytes / 16;
    Bytes16 *in, *out;
    CHECK(cudaMalloc(&in, bytes));
    CHECK(cudaMalloc(&out, bytes));

    PhiloxStream s;
    s.seed = 1234;
    s.offset = 8;
    const int threads = 256;
    const long full = (n + threads - 1) / threads;
    const long wave = long(prop.multiProcessorCount) * (prop.maxThreadsPerMultiProcessor / threads);
    const float copy = cold_median_ms([&] { copy_kernel<<<full, threads>>>(in, out, n); }, flush);
    auto percent = [&](auto launch) { return 100 * copy / cold_median_ms(launch, flush); };
    const float gen = percent([&] { philox_only<<<full, threads>>>(out, n, s); });
    fill<__nv_bfloat16>(in, bytes);
    const float d16 = percent([&] { dropout_kernel<true, false><<<full, threads>>>(in, out, n, s, bf16); });
    const float s16 = percent([&] { dropout_kernel<true, true><<<full, threads>>>(in, out, n, s, bf16); });
    const float w4 = percent([&] { dropout_kernel<true, true><<<4 * wave, threads>>>(in, out, n, s, bf16); });
    const float w16 = percent([&] { dropout_kernel<true, true><<<16 * wave, threads>>>(in, out, n, s, bf16); });
    fill<float>(in, bytes);
    const float d32 = percent([&] { dropout_kernel<false, false><<<full, threads>>>(in, out, n, s, f32); });
    const float s32 = percent([&] { dropout_kernel<false, true><<<full, threads>>>(in, out, n, s, f32); });
    CHECK(cudaGetLastError());
    printf("   bf16 dropout + selu over a grid-stride loop: 4 waves %.1f%%, 16 waves %.1f%%\n", w4, w16);
    printf("%4ld MiB a tensor: copy %.1f us; %% of copy: philox alone, writes only (one block a pack) %.1f%%; "
           "bf16 dropout %.1f%%, + selu %.1f%%; fp32 dropout %.1f%%, + selu %.1f%%\n",
           bytes >> 20, copy * 1e3, gen, d16, s16, d32, s32);
    cudaFree(in);
    cudaFree(out);
  }
  return 0;
}
