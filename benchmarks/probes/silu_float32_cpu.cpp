// What float32 SiLU's accuracy costs on an AVX-512 CPU (docs/design/silu.md): torch's CPU form (Sleef's expf and a
// division, 16 lanes), the shipped one (x / (1 + exp(-x)) in double over Sleef's exp, 8 lanes, one rounding), and three
// in float alone, 16 lanes: float pairs rounded once, an exp to about 2^-26 with the quotient corrected by its
// remainder (within 1 ulp), and the same exp in torch's arithmetic, uncorrected (the least a form that keeps exp's
// argument nonpositive spends). For each: the time per element over 2^16 inputs of mixed signs in L2 on one core (the
// fastest of 40 interleaved runs, as a ratio to torch's form), and with any argument the largest error over every
// float32 against double math, in ulps of the value (a few minutes on two cores).
// Build and run from the repository root (GCC; flags as the extension's x86-64-v4 loop, 512-bit vectors as there),
// with T the lib folder of the torch install:
//   g++ -std=c++17 -O3 -march=x86-64-v4 -mprefer-vector-width=512 -ffp-contract=off -fno-trapping-math
//       benchmarks/probes/silu_float32_cpu.cpp -L$T -ltorch_cpu -Wl,-rpath,$T -o /tmp/silu_cpu && /tmp/silu_cpu all
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

// Exported by libtorch_cpu: the exps of ATen's Vectorized<float> and Vectorized<double>.
extern "C" __m512 Sleef_expf16_u10(__m512);
extern "C" __m512d Sleef_expd8_u10(__m512d);

template <typename To, typename From>
To bits_as(const From& from) {
  To to;
  std::memcpy(&to, &from, sizeof(To));
  return to;
}

using Loop = void (*)(float* __restrict, const float* __restrict, int);

// torch's CPU silu: x / (1 + exp(-x)) on Vectorized<float>.
void torch_form(float* __restrict y, const float* __restrict x, int n) {
  for (int i = 0; i < n; i += 16) {
    const __m512 v = _mm512_loadu_ps(x + i);
    const __m512 e = Sleef_expf16_u10(_mm512_sub_ps(_mm512_setzero_ps(), v));
    _mm512_storeu_ps(y + i, _mm512_div_ps(v, _mm512_add_ps(_mm512_set1_ps(1.f), e)));
  }
}

// The shipped form: the same in double, rounded once to float.
void shipped_form(float* __restrict y, const float* __restrict x, int n) {
  for (int i = 0; i < n; i += 8) {
    const __m512d v = _mm512_cvtps_pd(_mm256_loadu_ps(x + i));
    const __m512d e = Sleef_expd8_u10(_mm512_sub_pd(_mm512_setzero_pd(), v));
    _mm256_storeu_ps(y + i, _mm512_cvtpd_ps(_mm512_div_pd(v, _mm512_add_pd(_mm512_set1_pd(1.0), e))));
  }
}

// a = k ln2 + r + r_lo for a in [-112, 0] (Cody-Waite, r's rounding error kept).
struct Reduced {
  float r, r_lo;
  int32_t k;
};
inline Reduced reduce(float a) {
  const float round = 0x1.8p23f;
  const float shifted = __builtin_fmaf(a, 0x1.715476p+0f, round);
  const float k = shifted - round;
  const float r_hi = __builtin_fmaf(-k, 0x1.62e4p-1f, a);
  const float k_ln2_lo = k * 0x1.7f7d1cp-20f;
  const float r = r_hi - k_ln2_lo;
  return {r, (r_hi - r) - k_ln2_lo, int32_t(bits_as<uint32_t>(shifted) - bits_as<uint32_t>(round))};
}

// exp(a) as (head + lo) 2^k to about 2^-30: the Taylor series to r^8 with the two leading sums' and r^2's errors kept
// (the GPU's exp_nonpositive_parts).
struct ExpParts {
  float head, lo;
  int32_t k;
};
inline ExpParts exp_parts(float a) {
  const Reduced e = reduce(a);
  const float r = e.r;
  const float cubic = __builtin_fmaf(__builtin_fmaf(__builtin_fmaf(__builtin_fmaf(__builtin_fmaf(1.f / 40320, r,
                      1.f / 5040), r, 1.f / 720), r, 1.f / 120), r, 1.f / 24), r, 1.f / 6);
  const float square = r * r, half_square = 0.5f * square;
  const float linear = 1.f + r, linear_lo = (1.f - linear) + r;
  const float head = linear + half_square, head_lo = (linear - head) + half_square;
  const float tail = (linear_lo + head_lo) + __builtin_fmaf(0.5f, __builtin_fmaf(r, r, -square), square * r * cubic);
  return {head, __builtin_fmaf(head, e.r_lo, tail), e.k};
}

inline float power_of_two(int32_t k) { return bits_as<float>(uint32_t(k + 127) << 23); }

// x (x < 0 ? p : 1) / (1 + p 2^k1) 2^k2 from exp(-|x|) = (p + p_lo) 2^k, k1 = max(k, -100), k2 = k - k1 for x < 0:
// the numerator and 1 + t as pairs, the quotient corrected by its remainder; one more rounding for a subnormal result.
inline float silu_from(float x, float p, float p_lo, int32_t k) {
  const bool negative = x < 0.f;
  const int32_t k1 = std::max(k, -100);
  const float t = p * power_of_two(k1), t_lo = p_lo * power_of_two(k1);
  const float d = 1.f + t, d_lo = ((1.f - d) + t) + t_lo;
  const float m = negative ? t : 1.f, m_lo = negative ? t_lo : 0.f;
  const float n = x * m, n_lo = __builtin_fmaf(x, m_lo, __builtin_fmaf(x, m, -n));
  const float inverse = 1.f / d;
  const float q = n * inverse;
  const float q_lo = __builtin_fmaf(-q, d_lo, __builtin_fmaf(-q, d, n) + n_lo) * inverse;
  const float value = (q + q_lo) * (negative ? power_of_two(k - k1) : 1.f);
  return x < -112.f ? x * 0.f : value;  // -0, and NaN at -inf as torch's
}

// Float pairs throughout.
inline float silu_pairs(float x) {
  const ExpParts e = exp_parts(std::max(-std::fabs(x), -112.f));
  const float p = e.head + e.lo;
  return silu_from(x, p, (e.head - p) + e.lo, e.k);
}

// expm1(r) = r + r^2 P(r) (P of degree 5: Taylor's series to r^7) rounded once.
inline float expm1_reduced(float r) {
  const float p = __builtin_fmaf(__builtin_fmaf(__builtin_fmaf(__builtin_fmaf(__builtin_fmaf(1.f / 5040, r, 1.f / 720),
                  r, 1.f / 120), r, 1.f / 24), r, 1.f / 6), r, 0.5f);
  return __builtin_fmaf(r * r, p, r);
}

// exp to about 2^-26: r's rounding error kept, 1 + expm1_reduced(r) as a pair.
inline float silu_corrected(float x) {
  const Reduced e = reduce(std::max(-std::fabs(x), -112.f));
  const float em1 = expm1_reduced(e.r);
  const float one_plus = 1.f + em1;
  return silu_from(x, one_plus, __builtin_fmaf(e.r_lo, one_plus, (1.f - one_plus) + em1), e.k);
}

// The same exp rounded to p 2^k, then torch's arithmetic: x (x < 0 ? t : 1) / (1 + t) with t = exp(-|x|), the
// numerator scaled as in silu_from; no corrections.
inline float silu_plain(float x) {
  const Reduced e = reduce(std::max(-std::fabs(x), -112.f));
  const float p = 1.f + expm1_reduced(e.r);
  const bool negative = x < 0.f;
  const int32_t k1 = std::max(e.k, -100);
  const float t = p * power_of_two(k1);
  const float value = x * (negative ? t : 1.f) / (1.f + t) * (negative ? power_of_two(e.k - k1) : 1.f);
  return x < -112.f ? x * 0.f : value;
}

template <float (*F)(float)>
__attribute__((noinline)) void loop(float* __restrict y, const float* __restrict x, int n) {
  for (int i = 0; i < n; ++i) y[i] = F(x[i]);
}

// The largest error of `loop` over every finite float32, in ulps of the value (double math's, to 2^-50).
double worst_error(Loop loop) {
  double worst[2] = {0, 0};
  auto part = [&](int id) {
    constexpr int kBlock = 4096;
    alignas(64) float xs[kBlock], ys[kBlock];
    for (uint64_t base = uint64_t(id) * kBlock; base < (uint64_t(1) << 32); base += 2 * kBlock) {
      for (int j = 0; j < kBlock; ++j) xs[j] = bits_as<float>(uint32_t(base + j));
      loop(ys, xs, kBlock);
      for (int j = 0; j < kBlock; ++j) {
        if (!std::isfinite(xs[j])) continue;
        const double x = xs[j], exact = x / (1 + std::exp(-x));
        int exponent;
        std::frexp(exact, &exponent);
        const double ulp = std::ldexp(1.0, std::max(exponent - 24, -149));
        const double error = std::fabs(double(ys[j]) - exact) / ulp;
        worst[id] = std::isnan(error) ? INFINITY : std::max(worst[id], error);
      }
    }
  };
  std::thread a(part, 0), b(part, 1);
  a.join();
  b.join();
  return std::max(worst[0], worst[1]);
}

int main(int argc, char**) {
  const char* names[] = {"torch's form (expf, division)", "shipped (double)", "float pairs, one rounding",
                         "float, corrected quotient", "float, torch's arithmetic"};
  const Loop loops[] = {torch_form, shipped_form, loop<silu_pairs>, loop<silu_corrected>, loop<silu_plain>};
  constexpr int kForms = 5, n = 1 << 16;
  std::vector<float> x(n), y(n);
  std::mt19937 gen(1);
  std::normal_distribution<float> normal(0.f, 4.f);
  for (float& v : x) v = normal(gen);
  double best[kForms];
  std::fill_n(best, kForms, 1e9);
  for (int run = 0; run < 40; ++run) {
    for (int f = 0; f < kForms; ++f) {
      const auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < 100; ++i) loops[f](y.data(), x.data(), n);
      const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
      best[f] = std::min(best[f], took.count() / 100 / n * 1e9);
    }
  }
  for (int f = 0; f < kForms; ++f) {
    printf("%-32s %.3f ns an element, %.2fx torch's form", names[f], best[f], best[0] / best[f]);
    if (argc > 1) printf(", max error %.4f ulp", worst_error(loops[f]));
    printf("\n");
  }
}
