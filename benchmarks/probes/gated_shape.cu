// The gated forward at the benchmark's shapes (bfloat16, rows x d): where its % of a copy goes below 97% at
// 4096x4096, whether the cause is the kernel's launch shape, the merged layout, or the traffic itself (2 bytes read a
// byte written, where a copy reads one). Each as % of a copy kernel moving the same bytes (probe.cuh: cold L2, median
// of 21 runs), and cudaMemcpy's, which torch's copy_ calls (the benchmark's roofline). Build from the repository root
// as random_op_grid.cu.
#include <cuda_bf16.h>

#include "activations.h"
#include "elementwise.cuh"
#include "probe.cuh"

using namespace act;
using T = c10::BFloat16;
constexpr int kVec = 8;

// out = a ^ b over n packs of contiguous a and b: the least work a pass reading 2 bytes a byte written can do.
__global__ void xor_kernel(const Bytes16* a, const Bytes16* b, Bytes16* out, long n) {
  const long i = blockIdx.x * long(blockDim.x) + threadIdx.x;
  if (i < n) {
    const uint4 x = a[i].v, y = b[i].v;
    out[i].v = make_uint4(x.x ^ y.x, x.y ^ y.y, x.z ^ y.z, x.w ^ y.w);
  }
}

// The shipped kernel over the merged layout (D = 1: out[r, :] = op(x[r, :d], x[r, d:])) or over two contiguous
// tensors (D = 0), at Unroll packs a thread on `blocks` blocks (0: every pack its thread's Unroll).
template <typename Op, int D, int Unroll>
float gated_ms(T* x, T* up, T* out, long rows, long d, long blocks, void* flush) {
  constexpr int N = 3;
  const Pointers<T, N> ptr{{out, x, D == 1 ? x + d : up}};
  Rows<N, D> rows_of{};
  if constexpr (D == 1) {
    rows_of.starts.ndim = 1;
    rows_of.starts.sizes[0] = FastDivmod(uint32_t(rows));
    rows_of.starts.strides[0][0] = d;
    rows_of.starts.strides[0][1] = rows_of.starts.strides[0][2] = 2 * d;
  }
  for (int k = 0; k < N; ++k) rows_of.step[k] = 1;
  rows_of.tail = uint32_t(D == 1 ? d : rows * d);
  rows_of.packs = FastDivmod(uint32_t((D == 1 ? d : rows * d) / kVec));
  const uint32_t n_packs = uint32_t(rows * d / kVec);
  if (blocks == 0) blocks = (n_packs + kThreads * Unroll - 1) / (kThreads * Unroll);
  const auto launch = [&] {
    strided_activation_kernel<kVec, Unroll, T, Op, D><<<blocks, kThreads>>>(Op{}, ptr, rows_of, n_packs, 0, 0);
  };
  return cold_median_ms(launch, flush);
}

int main() {
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  const long wave = long(prop.multiProcessorCount) * prop.maxThreadsPerMultiProcessor / kThreads;
  printf("%s: %d SMs, %ld blocks a wave; bfloat16, %% of a copy of the same bytes\n", prop.name,
         prop.multiProcessorCount, wave);
  void* flush;
  CHECK(cudaMalloc(&flush, size_t(512) << 20));
  using Relu = GatedOf<act::Relu>::Forward<T>;
  using Silu = GatedOf<act::Silu>::Forward<T>;
  const long shapes[][2] = {{2048, 4096}, {4096, 4096}, {8192, 4096}, {16384, 4096}, {8192, 14336}};
  for (const auto& shape : shapes) {
    const long rows = shape[0], d = shape[1], bytes = 3 * rows * d * 2;
    void *x, *up, *out, *copy_in, *copy_out;
    CHECK(cudaMalloc(&x, 2 * rows * d * 2));
    CHECK(cudaMalloc(&up, rows * d * 2));
    CHECK(cudaMalloc(&out, rows * d * 2));
    CHECK(cudaMalloc(&copy_in, bytes / 2));
    CHECK(cudaMalloc(&copy_out, bytes / 2));
    fill<__nv_bfloat16>(x, 2 * rows * d * 2);
    fill<__nv_bfloat16>(up, rows * d * 2);
    const long n = bytes / 2 / 16, half = rows * d * 2 / 16;
    const float copy = copy_ms(copy_in, copy_out, n, flush);
    const float memcpy_ms = cold_median_ms(
        [&] { cudaMemcpyAsync(copy_out, copy_in, bytes / 2, cudaMemcpyDeviceToDevice); }, flush);
    const auto *xb = static_cast<const Bytes16*>(x), *ub = static_cast<const Bytes16*>(up);
    const float two_to_one = cold_median_ms(
        [&] { xor_kernel<<<(half + 255) / 256, 256>>>(xb, ub, static_cast<Bytes16*>(out), half); }, flush);
    T *xt = static_cast<T*>(x), *ut = static_cast<T*>(up), *ot = static_cast<T*>(out);
    const auto pct = [&](float ms) { return 100 * copy / ms; };
    const float relu_u1 = gated_ms<Relu, 1, 1>(xt, ut, ot, rows, d, 0, flush);
    const float relu_u2 = gated_ms<Relu, 1, 2>(xt, ut, ot, rows, d, 0, flush);
    const float relu_u4 = gated_ms<Relu, 1, 4>(xt, ut, ot, rows, d, 0, flush);
    const float relu_4_waves = gated_ms<Relu, 1, 1>(xt, ut, ot, rows, d, 4 * wave, flush);
    const float relu_8_waves = gated_ms<Relu, 1, 1>(xt, ut, ot, rows, d, 8 * wave, flush);
    const float relu_pair_u1 = gated_ms<Relu, 0, 1>(xt, ut, ot, rows, d, 0, flush);
    const float relu_pair_u2 = gated_ms<Relu, 0, 2>(xt, ut, ot, rows, d, 0, flush);
    const float silu_u1 = gated_ms<Silu, 1, 1>(xt, ut, ot, rows, d, 0, flush);
    const float silu_u2 = gated_ms<Silu, 1, 2>(xt, ut, ot, rows, d, 0, flush);
    const float silu_pair_u1 = gated_ms<Silu, 0, 1>(xt, ut, ot, rows, d, 0, flush);
    printf("%ldx%ld (%ld MiB, copy %.1f us, cudaMemcpy %.1f%%): 2-to-1 xor %.1f%% | relu merged U1 %.1f%%, "
           "U2 %.1f%%, U4 %.1f%%, U1 over 4 waves %.1f%%, 8 waves %.1f%% | relu pair U1 %.1f%%, U2 %.1f%% | "
           "silu merged U1 %.1f%%, U2 %.1f%%, pair U1 %.1f%%\n",
           rows, d, bytes >> 20, copy * 1e3, pct(memcpy_ms), pct(two_to_one), pct(relu_u1), pct(relu_u2),
           pct(relu_u4), pct(relu_4_waves), pct(relu_8_waves), pct(relu_pair_u1), pct(relu_pair_u2), pct(silu_u1),
           pct(silu_u2), pct(silu_pair_u1));
    CHECK(cudaGetLastError());
    for (void* p : {x, up, out, copy_in, copy_out}) cudaFree(p);
  }
  return 0;
}
