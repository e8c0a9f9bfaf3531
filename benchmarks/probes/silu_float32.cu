// What float32 SiLU's accuracy costs on this GPU (docs/design/silu.md): the shipped form (double arithmetic, one
// rounding) against forms in float alone: float pairs with one rounding, a float exp to about
// 2^-25 with the quotient corrected by its remainder, CUDA's expf so corrected, and the plain form torch's kind
// computes. For each: the largest error over every float32 against double math (in ulps of the value, or of the
// gradient's terms), and the speed as % of a copy of the same bytes (probe.cuh: cold L2, median of 21 runs; one
// 16-byte pack a thread), on inputs of mixed signs.
// Build and run from the repository root:
//   nvcc -std=c++20 -O3 -arch=sm_90a -I kernels -I $(python3 -c "import torch.utils.cpp_extension as c; \
//       print(c.include_paths()[0])") benchmarks/probes/silu_float32.cu -o /tmp/silu_float32 && /tmp/silu_float32
#include <cuda_runtime.h>

#include "probe.cuh"
#include "activations.h"

using namespace act;

#ifdef __CUDA_ARCH__
// The float exp the kernels took until 2026-11-27 (now this probe's alone), for the float forms below.
// x = k ln2 + r + r_lo for float x in [-300, 0] (Cody-Waite: ln2 in two parts, the first exact in k ln2 for
// |k| < 512), k rounded by adding kRound, whose bits then hold k as an integer.
struct ReducedExpArgument {
  float r, r_lo;
  int k;
};

__device__ __forceinline__ ReducedExpArgument reduce_exp_argument(float x) {
  using A = ExpArithmetic<float>;
  const float shifted = __fmaf_rn(x, A::kLog2e, A::kRound);
  const float k = __fadd_rn(shifted, -A::kRound);
  const float r_hi = __fmaf_rn(-k, A::kLn2Hi, x);
  const float k_ln2_lo = __fmul_rn(k, A::kLn2Lo);
  const float r = __fadd_rn(r_hi, -k_ln2_lo);
  return {r, __fadd_rn(__fadd_rn(r_hi, -r), -k_ln2_lo), __float_as_int(shifted) - __float_as_int(A::kRound)};
}

// exp(x) for float x in [-300, 0] as (head + lo) 2^k within 2^-29 relative, from float arithmetic: the GPU's float
// throughput is many times its double's, and double's exp took most of float32 SiLU's instructions (0.89-0.93x
// torch on the H100). exp(r) = 1 + r + r^2 / 2 + r^3 (1/6 + ... + r^5 / 8!) with the rounding errors of the two
// leading sums and of r^2 kept (the cut-off and the roundings of the last terms leave 1.3e-9 at worst against
// mpmath), exp(r_lo) = 1 + r_lo, each step rounded as written (the intrinsics keep the compiler from fusing them).
// lo holds the cubic term too, up to 1% of head.
struct ExpParts {
  float head, lo;
  int k;
};

__device__ __forceinline__ ExpParts exp_nonpositive_parts(float x) {
  const ReducedExpArgument a = reduce_exp_argument(x);
  const float r = a.r;
  const float square = __fmul_rn(r, r);
  float cubic = __fmaf_rn(1.f / 40320, r, 1.f / 5040);
  cubic = __fmaf_rn(cubic, r, 1.f / 720);
  cubic = __fmaf_rn(cubic, r, 1.f / 120);
  cubic = __fmaf_rn(cubic, r, 1.f / 24);
  cubic = __fmaf_rn(cubic, r, 1.f / 6);
  const float linear = __fadd_rn(1.f, r);
  const float linear_lo = __fadd_rn(__fadd_rn(1.f, -linear), r);
  const float half_square = __fmul_rn(0.5f, square);
  const float head = __fadd_rn(linear, half_square);
  const float head_lo = __fadd_rn(__fadd_rn(linear, -head), half_square);
  const float square_lo = __fmaf_rn(r, r, -square);
  const float tail = __fadd_rn(__fadd_rn(linear_lo, head_lo),
                               __fmaf_rn(0.5f, square_lo, __fmul_rn(__fmul_rn(square, r), cubic)));
  return {head, __fmaf_rn(head, a.r_lo, tail), a.k};
}

struct Pair {
  float hi, lo;
};

// 1 + t, t = exp(-|x|) as a pair, and the pair itself; |x| <= 80.
struct Terms {
  float t, t_lo, d, d_lo;
};
__device__ __forceinline__ Terms terms_of(float x) {
  const ExpParts e = exp_nonpositive_parts(-fabsf(x));
  const float scale = __int_as_float((e.k + 127) << 23);
  // lo carries the cubic term (up to 1% of head): renormalized, as the quotient's correction is first-order.
  const float head = __fadd_rn(e.head, e.lo);
  const float t = __fmul_rn(head, scale), t_lo = __fmul_rn(__fadd_rn(__fadd_rn(e.head, -head), e.lo), scale);
  const float d = __fadd_rn(1.f, t);
  return {t, t_lo, d, __fadd_rn(__fadd_rn(__fadd_rn(1.f, -d), t), t_lo)};
}

// n / d for pairs, d in [1, 4]: q + q_lo, the quotient's remainder by fma.
__device__ __forceinline__ Pair quotient(float n, float n_lo, float d, float d_lo) {
  const float r = approximate_reciprocal(d);
  const float q = __fmul_rn(n, r);
  const float rem = __fmaf_rn(-q, d, n);
  return {q, __fmul_rn(__fmaf_rn(-q, d_lo, __fadd_rn(rem, n_lo)), r)};
}

__device__ __forceinline__ Pair silu_pair(float x) {
  const Terms s = terms_of(x);
  const float m = x < 0.f ? s.t : 1.f, m_lo = x < 0.f ? s.t_lo : 0.f;
  const float n = __fmul_rn(x, m);
  const float n_lo = __fmaf_rn(x, m_lo, __fmaf_rn(x, m, -n));
  return quotient(n, n_lo, s.d, s.d_lo);
}

// One rounding in float pairs; beyond |x| = 80 (and NaN) the shipped form.
__device__ __forceinline__ float silu_float(float x) {
  if (fabsf(x) <= 80.f) {
    const Pair p = silu_pair(x);
    return __fadd_rn(p.hi, p.lo);
  }
  return x > 0.f ? x : float(silu_value_from_float(x));
}

__device__ __forceinline__ Pair two_sum(float a, float b) {
  const float s = __fadd_rn(a, b);
  const float bb = __fadd_rn(s, -a);
  return {s, __fadd_rn(__fadd_rn(a, -__fadd_rn(s, -bb)), __fadd_rn(b, -bb))};
}

// sigmoid(x) (1 + x (1 - sigmoid(x))) = S (D + x C) / D^2 as a pair.
__device__ __forceinline__ Pair silu_slope_pair(float x) {
  const Terms s = terms_of(x);
  const bool negative = x < 0.f;
  const float c = negative ? 1.f : s.t, c_lo = negative ? 0.f : s.t_lo;
  const float sg = negative ? s.t : 1.f, sg_lo = negative ? s.t_lo : 0.f;
  const float xc = __fmul_rn(x, c);
  const float xc_lo = __fmaf_rn(x, c_lo, __fmaf_rn(x, c, -xc));
  const Pair p = two_sum(s.d, xc);
  const float p_lo = __fadd_rn(p.lo, __fadd_rn(s.d_lo, xc_lo));
  const float n = __fmul_rn(sg, p.hi);
  const float n_lo = __fmaf_rn(sg, p_lo, __fmaf_rn(sg_lo, p.hi, __fmaf_rn(sg, p.hi, -n)));
  const float e = __fmul_rn(s.d, s.d);
  const float e_lo = __fmaf_rn(2.f * s.d, s.d_lo, __fmaf_rn(s.d, s.d, -e));
  return quotient(n, n_lo, e, e_lo);
}

// grad times the slope, rounded once.
__device__ __forceinline__ float silu_gradient_float(float grad, float x) {
  if (fabsf(x) <= 80.f) {
    const Pair p = silu_slope_pair(x);
    return __fmaf_rn(grad, p.hi, __fmul_rn(grad, p.lo));
  }
  return x > 0.f ? grad : float(silu_gradient_from_float(grad, x));
}

// exp(-|x|) to about 2^-25: Cody-Waite with r's rounding error kept, exp(r) - 1 = r + r^2 P(r) (P of degree 5) rounded
// once, 1 + that as a pair; then the quotient as silu_pair's. |x| <= 80.
__device__ __forceinline__ float silu_mid(float x) {
  if (!(fabsf(x) <= 80.f)) return x > 0.f ? x : float(silu_value_from_float(x));
  const ReducedExpArgument a = reduce_exp_argument(-fabsf(x));
  const float r = a.r;
  float p = __fmaf_rn(1.f / 5040, r, 1.f / 720);
  p = __fmaf_rn(p, r, 1.f / 120);
  p = __fmaf_rn(p, r, 1.f / 24);
  p = __fmaf_rn(p, r, 1.f / 6);
  p = __fmaf_rn(p, r, 0.5f);
  const float em1 = __fmaf_rn(__fmul_rn(r, r), p, r);
  const float e = __fadd_rn(1.f, em1);
  const float e_lo = __fmaf_rn(a.r_lo, e, __fadd_rn(__fadd_rn(1.f, -e), em1));
  const float scale = __int_as_float((a.k + 127) << 23);
  const float t = __fmul_rn(e, scale), t_lo = __fmul_rn(e_lo, scale);
  const float d = __fadd_rn(1.f, t);
  const float m = x < 0.f ? t : 1.f, m_lo = x < 0.f ? t_lo : 0.f;
  const float n = __fmul_rn(x, m);
  const Pair q = quotient(n, __fmaf_rn(x, m_lo, __fmaf_rn(x, m, -n)), d,
                          __fadd_rn(__fadd_rn(__fadd_rn(1.f, -d), t), t_lo));
  return __fadd_rn(q.hi, q.lo);
}

// CUDA's expf, the quotient corrected by its remainder: the error is expf's (scaled by 1 / (1 + t)) and one rounding.
__device__ __forceinline__ float silu_expf_exact_division(float x) {
  if (!(fabsf(x) <= 80.f)) return x > 0.f ? x : float(silu_value_from_float(x));
  const float t = expf(-fabsf(x));
  const float n = x < 0.f ? __fmul_rn(x, t) : x;
  const float n_lo = x < 0.f ? __fmaf_rn(x, t, -n) : 0.f;
  const float d = __fadd_rn(1.f, t);
  const Pair q = quotient(n, n_lo, d, __fadd_rn(__fadd_rn(1.f, -d), t));
  return __fadd_rn(q.hi, q.lo);
}

// The plain float form for speed's sake: x (x < 0 ? t : 1) / (1 + t), CUDA's expf, the hardware reciprocal.
__device__ __forceinline__ float silu_plain(float x) {
  const float t = expf(-fabsf(x));
  return (x < 0.f ? x * t : x) * approximate_reciprocal(1.f + t);
}

#endif

enum Variant { kDouble, kFloat, kPlain, kGradDouble, kGradFloat, kExpf, kMid };

template <int V>
__device__ __forceinline__ float apply(float x, float g) {
#ifndef __CUDA_ARCH__
  return 0;
#else
  if (V == kDouble) return float(silu_value_from_float(x));
  if (V == kFloat) return silu_float(x);
  if (V == kPlain) return silu_plain(x);
  if (V == kGradDouble) return float(silu_gradient_from_float(double(g), x));
  if (V == kExpf) return silu_expf_exact_division(x);
  if (V == kMid) return silu_mid(x);
  return silu_gradient_float(g, x);
#endif
}

template <int V>
__global__ void run(const float4* in, const float4* grad, float4* out, long n) {
  const long i = blockIdx.x * long(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  float4 v = in[i];
  float4 g = V == kGradDouble || V == kGradFloat ? grad[i] : v;
  v.x = apply<V>(v.x, g.x);
  v.y = apply<V>(v.y, g.y);
  v.z = apply<V>(v.z, g.z);
  v.w = apply<V>(v.w, g.w);
  out[i] = v;
}

// Max error over every float32 (NaNs skipped), in ulps of the value or of the slope's terms; worst x kept.
__global__ void accuracy(unsigned long long* worst, uint32_t base) {
  const uint32_t bits = base + blockIdx.x * blockDim.x + threadIdx.x;
  const float x = __uint_as_float(bits);
  if (isnan(x)) return;
  const double xd = x, t = exp(-fabs(xd));
  const double s = xd >= 0 ? 1 / (1 + t) : t / (1 + t), c = xd >= 0 ? t / (1 + t) : 1 / (1 + t);
  const double value = isinf(xd) ? (xd > 0 ? xd : 0.0) : xd * s;
  const double slope = isinf(xd) ? (xd > 0 ? 1.0 : 0.0) : s * (1 + xd * c);
  const double terms = isinf(xd) ? 1.0 : s * (1 + fabs(xd * c));
  const float results[7] = {apply<kDouble>(x, 1.f),     apply<kFloat>(x, 1.f),     apply<kPlain>(x, 1.f),
                            apply<kGradDouble>(x, 1.f), apply<kGradFloat>(x, 1.f), apply<kExpf>(x, 1.f),
                            apply<kMid>(x, 1.f)};
  if (isinf(xd)) {
    for (int v = 0; v < 7; ++v) printf("variant %d at %g: %g\n", v, x, results[v]);
    return;
  }
  for (int v = 0; v < 7; ++v) {
    const bool is_value = v < 3 || v >= kExpf;
    const double ref = is_value ? value : slope;
    record_error(&worst[v], fabs(double(results[v]) - ref) / float32_ulp_of(is_value ? ref : terms), bits);
  }
}

int main() {
  const char* names[] = {"double (shipped)",          "float pairs",          "plain float",
                         "gradient double (shipped)", "gradient float pairs", "expf, exact division",
                         "float exp to 2^-25, exact division"};
  if (sweep_every_float32(accuracy, names, 7)) return 1;
  void* flush;
  CHECK(cudaMalloc(&flush, size_t(512) << 20));
  for (long n : {1L << 24, 1L << 26, 1L << 28}) {
    float4 *in, *grad, *out;
    CHECK(cudaMalloc(&in, n * 4));
    CHECK(cudaMalloc(&grad, n * 4));
    CHECK(cudaMalloc(&out, n * 4));
    fill<float>(in, n * 4);
    fill<float>(grad, n * 4);
    const long packs = n / 4;
    const int blocks = int((packs + 255) / 256);
    const float copy = copy_ms(in, out, packs, flush);
    const float copy3 = cold_median_ms(
        [&] {
          copy_kernel<<<blocks, 256>>>((Bytes16*)in, (Bytes16*)out, packs);
          copy_kernel<<<blocks / 2, 256>>>((Bytes16*)grad, (Bytes16*)out, packs / 2);
        },
        flush);
    float ms[7];
    ms[0] = cold_median_ms([&] { run<kDouble><<<blocks, 256>>>(in, grad, out, packs); }, flush);
    ms[1] = cold_median_ms([&] { run<kFloat><<<blocks, 256>>>(in, grad, out, packs); }, flush);
    ms[2] = cold_median_ms([&] { run<kPlain><<<blocks, 256>>>(in, grad, out, packs); }, flush);
    ms[3] = cold_median_ms([&] { run<kGradDouble><<<blocks, 256>>>(in, grad, out, packs); }, flush);
    ms[4] = cold_median_ms([&] { run<kGradFloat><<<blocks, 256>>>(in, grad, out, packs); }, flush);
    ms[5] = cold_median_ms([&] { run<kExpf><<<blocks, 256>>>(in, grad, out, packs); }, flush);
    ms[6] = cold_median_ms([&] { run<kMid><<<blocks, 256>>>(in, grad, out, packs); }, flush);
    CHECK(cudaDeviceSynchronize());
    printf("n = 2^%d: copy %.3f ms", __builtin_ctzl(n), copy);
    for (int v = 0; v < 7; ++v)
      printf(" | %s %.1f%%", names[v], 100.f * (v == kGradDouble || v == kGradFloat ? copy3 : copy) / ms[v]);
    printf("\n");
    cudaFree(in);
    cudaFree(grad);
    cudaFree(out);
  }
  return 0;
}
