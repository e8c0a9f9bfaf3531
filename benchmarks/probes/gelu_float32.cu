// What float32 GELU's one rounding costs on this GPU (docs/design/gelu.md): the shipped form (double arithmetic,
// one rounding) against a form in float alone, exp(-x^2 / 2) E(|x|) with the rounding errors of x^2, of exp's
// reduced argument, of t = 1 / (1 + |x| / 4) and of the products kept (E = t P(t), P of degree 10 in float
// Horner, its last step's rounding kept: within 1.5 ulp, where P's earlier roundings remain), and against torch's
// formula, x (1 + erff(x / sqrt 2)) / 2, and CUDA's erfcf. For each: the largest error over every float32 against
// double math (in ulps of the value; ulps of 2^-149 for subnormal values), and the speed as % of a copy of the same
// bytes (probe.cuh: cold L2, median of 21 runs; one 16-byte pack a thread), on inputs of mixed signs.
// Build and run from the repository root:
//   nvcc -std=c++20 -O3 -arch=sm_90a -I kernels -I $(python3 -c "import torch.utils.cpp_extension as c; \
//       print(c.include_paths()[0])") benchmarks/probes/gelu_float32.cu -o /tmp/gelu_float32 && /tmp/gelu_float32
#include <cuda_runtime.h>

#include "probe.cuh"
#include "activations.h"

using namespace act;

// P(t) of t = 1 / (1 + a / 4) as a polynomial in u = t - kCenter (the sums of its Horner steps do not cancel, and
// u is exact), fitted in relative error to erfc(a / sqrt 2) exp(a^2 / 2) / (2 t) over a in [0, 15] (1.8e-9 with
// the coefficients as rounded; as fit_erfc.py fits Q: least squares in relative error at Chebyshev nodes of t,
// reweighted toward the minimax, each coefficient then rounded to float in turn, the constant first, the others
// refitted): kPHigh's terms over u, then kPConstant, on a grid of 2^-25, so that its difference from P is exact (the
// center chosen so that P there lies within 6e-10 of that grid).
constexpr float kCenter = 0x1.eb0p-3f, kPConstant = 0x1.0b081cp-3f;
__constant__ float kPHigh[10] = {-0x1.71cf12p-7f, 0x1.d38fdep-5f, -0x1.692ddep-4f, 0x1.063406p-6f, 0x1.17be62p-7f,
                                 0x1.4e9e1cp-4f,  0x1.190126p-3f, 0x1.63f62ep-3f,  0x1.727926p-3f, 0x1.4d91e2p-3f};
// 1 + t P'(t) / P(t) in u, to 0.01: what a relative error e of t does to t P(t) is e times it.
__constant__ float kSensitivity[4] = {-0x1.699d54p+0f, 0x1.4854bep+1f, 0x1.5c70ccp+0f, 0x1.4da760p+0f};
// (exp(r) - 1 - r) / r^2 for |r| <= ln2 / 2 (exp's relative error 4.4e-9).
__constant__ float kExpTail[5] = {0x1.6a234ep-10f, 0x1.123a6cp-7f, 0x1.5558f4p-5f, 0x1.55549p-3f, 0x1.fffffcp-2f};

#ifdef __CUDA_ARCH__
template <int N>
__device__ __forceinline__ float horner_float(const float (&c)[N], float s) {
  float p = c[0];
#pragma unroll
  for (int i = 1; i < N; ++i) p = __fmaf_rn(p, s, c[i]);
  return p;
}

// gelu(x) in float: gelu(-a) = -a Phi(-a) = -a 2^k exp(r + r_lo) t P(t) with -a^2 / 2 = k ln2 + r + r_lo, and
// gelu(a) = a + gelu(-a); each product's rounding error kept and the sum rounded once (twice where subnormal).
__device__ __forceinline__ float gelu_float(float x) {
  using A = ExpArithmetic<float>;
  const float a = fabsf(x);
  const float h = __fmul_rn(a, a), l = __fmaf_rn(a, a, -h);  // a^2 = h + l
  const float shifted = __fmaf_rn(h, -0.5f * A::kLog2e, A::kRound);
  const float k = __fadd_rn(shifted, -A::kRound);
  const float r1 = __fmaf_rn(k, -A::kLn2Hi, __fmul_rn(-0.5f, h));  // exact: ln2's leading 16 bits
  const float r = __fmaf_rn(k, -A::kLn2Lo, r1);
  const float r_lo = __fmaf_rn(l, -0.5f, __fmaf_rn(k, -A::kLn2Lo, __fadd_rn(r1, -r)));
  const float square_tail = __fmul_rn(__fmul_rn(r, r), horner_float(kExpTail, r));
  const float exp_r = __fadd_rn(1.f, __fadd_rn(r, square_tail));
  const float tail = __fmaf_rn(r_lo, exp_r, square_tail);  // exp(r + r_lo) = 1 + r + tail
  const float d = __fmaf_rn(a, 0.25f, 1.f), d_lo = __fmaf_rn(a, 0.25f, __fadd_rn(1.f, -d));
  const float t = approximate_reciprocal(d);
  const float e = __fmaf_rn(-d_lo, t, __fmaf_rn(-d, t, 1.f));  // 1 / (d + d_lo) = t (1 + e)
  const float u = __fadd_rn(t, -kCenter);
  const float high = horner_float(kPHigh, u);
  const float p = __fmaf_rn(high, u, kPConstant), p_lo = __fmaf_rn(high, u, __fadd_rn(kPConstant, -p));
  const float e_s = __fmul_rn(e, horner_float(kSensitivity, u));
  const float m1 = __fmul_rn(a, t), m1_lo = __fmaf_rn(a, t, -m1);
  const float m = __fmul_rn(m1, p);
  const float m_lo = __fmaf_rn(m1, p_lo, __fmaf_rn(m1_lo, p, __fmaf_rn(m1, p, -m)));
  const float correction =
      __fmaf_rn(m, r, __fmaf_rn(m, __fmaf_rn(e_s, exp_r, tail), __fmul_rn(m_lo, exp_r)));  // -gelu(-a) 2^-k - m
  const int k_bits = __float_as_int(shifted) - __float_as_int(A::kRound);
  const float scale = __int_as_float((k_bits + A::kBias + 64) << A::kMantissaBits);  // 2^(k + 64), normal
  const float negative = -__fmul_rn(__fmaf_rn(m, scale, __fmul_rn(correction, scale)), 0x1p-64f);
  const float scale_k = __fmul_rn(scale, 0x1p-64f);
  const float head = __fmul_rn(m, scale_k), head_lo = __fmul_rn(correction, scale_k);
  const float sum = __fadd_rn(x, -head);
  const float sum_lo = __fadd_rn(-head, -__fadd_rn(sum, -x));  // x - head = sum + sum_lo (|x| >= head)
  const float positive = __fadd_rn(sum, -__fadd_rn(head_lo, -sum_lo));
  const float result = x < 0.f ? negative : positive;
  return a < 0x1p-25f ? 0.5f * x : (a < 15.f ? result : x * (x > 0.f ? 1.f : 0.f));
}
#endif

enum Variant { kDouble, kFloat, kTorch, kErfcf, kVariants };

template <int V>
__device__ __forceinline__ float apply(float x) {
#ifndef __CUDA_ARCH__
  return 0;
#else
  if (V == kDouble) return float(GeluMath<float>::value(double(x)));
  if (V == kFloat) return gelu_float(x);
  if (V == kTorch) return x * 0.5f * (1.f + erff(x * float(M_SQRT1_2)));
  return x * 0.5f * erfcf(-x * float(M_SQRT1_2));
#endif
}

template <int V>
__global__ void run(const float4* in, float4* out, long n) {
  const long i = blockIdx.x * long(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  float4 v = in[i];
  v.x = apply<V>(v.x);
  v.y = apply<V>(v.y);
  v.z = apply<V>(v.z);
  v.w = apply<V>(v.w);
  out[i] = v;
}

// Max error over every float32 (NaNs skipped), in ulps of the value; worst x kept. Infinities and zeros printed.
__global__ void accuracy(unsigned long long* worst, uint32_t base) {
  const uint32_t bits = base + blockIdx.x * blockDim.x + threadIdx.x;
  const float x = __uint_as_float(bits);
  if (isnan(x)) return;
  const double xd = x;
  const double value = xd >= 0 ? xd - 0.5 * xd * erfc(xd * M_SQRT1_2) : 0.5 * xd * erfc(-xd * M_SQRT1_2);
  const float results[kVariants] = {apply<kDouble>(x), apply<kFloat>(x), apply<kTorch>(x), apply<kErfcf>(x)};
  if (isinf(xd) || x == 0.f) {
    for (int v = 0; v < kVariants; ++v) printf("variant %d at %g: %g\n", v, x, results[v]);
    return;
  }
  for (int v = 0; v < kVariants; ++v) {
    const double err = fabs(double(results[v]) - value) / float32_ulp_of(value);
    record_error(&worst[v], signbit(results[v]) == signbit(value) ? err : 2e9, bits);  // -0 for +0 too
  }
}

int main() {
  const char* names[kVariants] = {"double (shipped)", "float, products kept", "torch's 1 + erff", "erfcf"};
  if (sweep_every_float32(accuracy, names, kVariants)) return 1;
  void* flush;
  CHECK(cudaMalloc(&flush, size_t(512) << 20));
  for (int round = 0; round < 2; ++round) {
    for (long n : {1L << 24, 1L << 26, 1L << 28}) {
      float4 *in, *out;
      CHECK(cudaMalloc(&in, n * 4));
      CHECK(cudaMalloc(&out, n * 4));
      fill<float>(in, n * 4);
      const long packs = n / 4;
      const int blocks = int((packs + 255) / 256);
      const float copy = copy_ms(in, out, packs, flush);
      float ms[kVariants];
      ms[0] = cold_median_ms([&] { run<kDouble><<<blocks, 256>>>(in, out, packs); }, flush);
      ms[1] = cold_median_ms([&] { run<kFloat><<<blocks, 256>>>(in, out, packs); }, flush);
      ms[2] = cold_median_ms([&] { run<kTorch><<<blocks, 256>>>(in, out, packs); }, flush);
      ms[3] = cold_median_ms([&] { run<kErfcf><<<blocks, 256>>>(in, out, packs); }, flush);
      CHECK(cudaDeviceSynchronize());
      printf("round %d, n = 2^%d: copy %.3f ms", round, __builtin_ctzl(n), copy);
      for (int v = 0; v < kVariants; ++v) printf(" | %s %.1f%%", names[v], 100.f * copy / ms[v]);
      printf("\n");
      cudaFree(in);
      cudaFree(out);
    }
  }
  return 0;
}
