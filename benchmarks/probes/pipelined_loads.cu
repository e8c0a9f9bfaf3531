// Whether a heavy float32 op reaches a copy's speed when its loads overlap its arithmetic (docs/design/launch-plan.md).
// The shipped kernels give each thread one 16-byte pack at large sizes: it loads, waits, computes and stores, and
// while a warp computes it has no load in flight. float32 GELU on the H200 keeps its double unit about as busy as a
// copy's time allows and still reads 65-69% of a copy. Here each op runs in four kernel shapes: one pack a thread
// (the shipped one), a grid-stride loop over one wave of resident blocks, the same loop with the next pack loaded
// before the current one is computed (its loads in flight while it computes), and that over two waves. The ops are
// the shipped functors' float32 forms (GELU, tanh-GELU and SiLU in double, rounded once) and ReLU as the control; each
// shape's results are checked equal to the one-pack kernel's. Speed as % of a copy of the same bytes (probe.cuh: cold
// L2, median of 21 runs), on inputs of mixed signs; registers a thread and resident blocks an SM from the runtime.
// Build and run from the repository root:
//   nvcc -std=c++20 -O3 -arch=sm_90a -I kernels -I $(python3 -c "import torch.utils.cpp_extension as c; \
//       print(c.include_paths()[0])") benchmarks/probes/pipelined_loads.cu -o /tmp/pipelined_loads \
//     && /tmp/pipelined_loads
#include <cuda_runtime.h>

#include "probe.cuh"
#include "activations.h"

using namespace act;

struct GeluForm {
  static constexpr const char* name = "gelu";
  __device__ static float apply(float x) { return float(GeluMath<float>::value(double(x))); }
};
struct GeluTanhForm {
  static constexpr const char* name = "gelu_tanh";
  __device__ static float apply(float x) { return float(XSigmoidMath<float, GeluTanhArgument>::value(double(x))); }
};
struct SiluForm {
  static constexpr const char* name = "silu";
  __device__ static float apply(float x) { return float(SiluMath<float>::value(double(x))); }
};
struct ReluForm {
  static constexpr const char* name = "relu";
  __device__ static float apply(float x) { return x > 0.f ? x : (x == x ? 0.f : x); }
};

template <class Op>
__device__ __forceinline__ float4 apply_pack(float4 v) {
  return {Op::apply(v.x), Op::apply(v.y), Op::apply(v.z), Op::apply(v.w)};
}

template <class Op>
__global__ void __launch_bounds__(128) one_pack(const float4* in, float4* out, long n) {
  const long i = blockIdx.x * 128L + threadIdx.x;
  if (i < n) out[i] = apply_pack<Op>(in[i]);
}

template <class Op>
__global__ void __launch_bounds__(128) grid_stride(const float4* in, float4* out, long n) {
  for (long i = blockIdx.x * 128L + threadIdx.x; i < n; i += gridDim.x * 128L) out[i] = apply_pack<Op>(in[i]);
}

// The next pack's load is issued before the current pack's arithmetic.
template <class Op>
__global__ void __launch_bounds__(128) prefetched(const float4* in, float4* out, long n) {
  const long stride = gridDim.x * 128L;
  long i = blockIdx.x * 128L + threadIdx.x;
  if (i >= n) return;
  float4 current = in[i];
  while (i < n) {
    const long next = i + stride;
    float4 ahead{};
    if (next < n) ahead = in[next];
    out[i] = apply_pack<Op>(current);
    current = ahead;
    i = next;
  }
}

__global__ void count_differences(const float4* a, const float4* b, long n, unsigned long long* count) {
  const long i = blockIdx.x * long(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const float4 x = a[i], y = b[i];
  const int d = (__float_as_uint(x.x) != __float_as_uint(y.x)) + (__float_as_uint(x.y) != __float_as_uint(y.y)) +
                (__float_as_uint(x.z) != __float_as_uint(y.z)) + (__float_as_uint(x.w) != __float_as_uint(y.w));
  if (d) atomicAdd(count, (unsigned long long)d);
}

enum Shape { kOnePack, kOneWave, kOneWavePrefetched, kTwoWavesPrefetched, kShapes };
const char* kShapeNames[kShapes] = {"one pack a thread", "1 wave, loop", "1 wave, prefetched",
                                    "2 waves, prefetched"};

template <class Op>
int measure(const float4* in, float4* out, float4* reference, long packs, float copy_ms, void* flush, int round,
            unsigned long long* count) {
  void (*kernels[kShapes])(const float4*, float4*, long) = {one_pack<Op>, grid_stride<Op>, prefetched<Op>,
                                                             prefetched<Op>};
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  printf("round %d, 2^%d floats, %-9s:", round, __builtin_ctzl(packs * 4), Op::name);
  for (int s = 0; s < kShapes; ++s) {
    int resident = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, kernels[s], 128, 0));
    cudaFuncAttributes attributes;
    CHECK(cudaFuncGetAttributes(&attributes, kernels[s]));
    const long wave = long(resident) * sms;
    const long needed = (packs + 127) / 128;
    const long blocks = s == kOnePack ? needed : std::min(needed, wave * (s == kTwoWavesPrefetched ? 2 : 1));
    const float ms = cold_median_ms([&] { kernels[s]<<<unsigned(blocks), 128>>>(in, out, packs); }, flush);
    CHECK(cudaGetLastError());
    if (s == kOnePack) {
      CHECK(cudaMemcpy(reference, out, packs * 16, cudaMemcpyDeviceToDevice));
    } else {
      CHECK(cudaMemset(count, 0, sizeof(*count)));
      count_differences<<<unsigned((packs + 255) / 256), 256>>>(out, reference, packs, count);
      unsigned long long differences = 0;
      CHECK(cudaMemcpy(&differences, count, sizeof(differences), cudaMemcpyDeviceToHost));
      if (differences) printf(" [%llu results differ]", differences);
    }
    printf(" | %s %.1f%% (%d regs, %d blocks/SM)", kShapeNames[s], 100.f * copy_ms / ms, attributes.numRegs,
           resident);
  }
  printf("\n");
  return 0;
}

int main() {
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  printf("device: %s, %d SMs\n", prop.name, prop.multiProcessorCount);
  void* flush;
  unsigned long long* count;
  CHECK(cudaMalloc(&flush, size_t(512) << 20));
  CHECK(cudaMalloc(&count, sizeof(*count)));
  for (int round = 0; round < 2; ++round) {
    for (long n : {1L << 22, 1L << 24, 1L << 26}) {
      float4 *in, *out, *reference;
      CHECK(cudaMalloc(&in, n * 4));
      CHECK(cudaMalloc(&out, n * 4));
      CHECK(cudaMalloc(&reference, n * 4));
      fill<float>(in, n * 4);
      const long packs = n / 4;
      const float copy = copy_ms(in, out, packs, flush);
      printf("round %d, 2^%d floats: copy %.4f ms\n", round, __builtin_ctzl(n), copy);
      if (measure<GeluForm>(in, out, reference, packs, copy, flush, round, count) ||
          measure<GeluTanhForm>(in, out, reference, packs, copy, flush, round, count) ||
          measure<SiluForm>(in, out, reference, packs, copy, flush, round, count) ||
          measure<ReluForm>(in, out, reference, packs, copy, flush, round, count))
        return 1;
      cudaFree(in);
      cudaFree(out);
      cudaFree(reference);
    }
  }
  return 0;
}
