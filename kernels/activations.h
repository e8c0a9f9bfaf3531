#pragma once
// The scalar math of every op, shared by the CPU loop and the CUDA launcher, and the one list of
// the ops from which their registrations follow.
// Each functor is instantiated for a storage type `scalar_t`, computes in `acc_t` (for the
// arithmetic ops float for float/half/bfloat16, double for double), says how many tensor inputs it
// reads (`arity`) and what it is built from (`Args`: NoArgs, or the run-time values it needs). A
// random functor also has a PhiloxSource `source`; it takes its element's random word first. A functor of several
// results says how many (`outputs`).

#include <torch/headeronly/macros/Macros.h>
#include <torch/headeronly/util/BFloat16.h>
#include <torch/headeronly/util/Half.h>

#include <math.h>
#include <stdint.h>

#include <array>
#include <cstring>
#include <type_traits>
#include <utility>

#include "cpu_math.h"
#include "philox.h"

namespace act {

struct NoArgs {};

// A functor with several results (`outputs`, as a gated op's backward) returns them as Results; the others return
// their one value. The backends write result o to operand o: the outputs come first.
template <typename T, int N>
struct Results {
  T v[N];
};

template <typename Op, typename = void>
struct OutputsOf : std::integral_constant<int, 1> {};
template <typename Op>
struct OutputsOf<Op, std::void_t<decltype(Op::outputs)>> : std::integral_constant<int, Op::outputs> {};

// The operands of a functor's call: its outputs, then its inputs.
template <typename Op>
constexpr int kOperandsOf = OutputsOf<Op>::value + Op::arity;

// Result o of a functor's call, in the storage type.
template <typename scalar_t, int O, typename R>
C10_HOST_DEVICE inline scalar_t result_at(const R& r, int o) {
  if constexpr (O == 1) {
    return static_cast<scalar_t>(r);
  } else {
    return static_cast<scalar_t>(r.v[o]);
  }
}

// The type the arithmetic ops compute in: float for the 16-bit types, as ATen's opmath_type.
template <typename scalar_t>
using opmath_t = std::conditional_t<std::is_same_v<scalar_t, double>, double, float>;

// torch.selu's constants.
constexpr double kSeluAlpha = 1.6732632423543772848170429916717;
constexpr double kSeluScale = 1.0507009873554804934193349852946;

C10_HOST_DEVICE inline float expm1_of(float x) { return ::expm1f(x); }
C10_HOST_DEVICE inline float exp_of(float x) { return ::expf(x); }
#ifdef __CUDA_ARCH__
__device__ inline double expm1_of(double x) { return ::expm1(x); }
__device__ inline double exp_of(double x) { return ::exp(x); }
__device__ inline double fma_of(double a, double b, double c) { return ::fma(a, b, c); }
#else
inline double expm1_of(double x) { return act_cpu_expm1(x); }  // vectorized: cpu_math.h
inline double exp_of(double x) { return act_cpu_exp(x); }
inline double fma_of(double a, double b, double c) { return __builtin_fma(a, b, c); }  // an instruction from AVX2 up
#endif

// The constants of exp_nonpositive_series's arithmetic (exp_by_table takes double's range and rounding
// constant too): its range, ln2 in two parts (the first exact in k ln2), the Taylor series' degree, and how 2^k is
// built from the bits.
template <typename T>
struct ExpArithmetic;

template <>
struct ExpArithmetic<float> {
  using Bits = uint32_t;
  static constexpr float kLowest = -104.f, kRound = 0x1.8p23f;
  static constexpr float kLog2e = 0x1.715476p+0f, kLn2Hi = 0x1.62e4p-1f, kLn2Lo = 0x1.7f7d1cp-20f;
  static constexpr int kDegree = 7, kBias = 127, kMantissaBits = 23;
};

template <>
struct ExpArithmetic<double> {
  using Bits = uint64_t;
  static constexpr double kLowest = -746.0, kRound = 0x1.8p52;
  static constexpr double kLog2e = 0x1.71547652b82fep0, kLn2Hi = 0x1.62e42fee00000p-1, kLn2Lo = 0x1.a39ef35793c76p-33;
  static constexpr int kDegree = 8, kBias = 1023, kMantissaBits = 52;
};

// std::bit_cast, which C++17 lacks: torch 2.11 builds extensions as C++17.
template <typename To, typename From>
C10_HOST_DEVICE inline To bits_as(From from) {
  static_assert(sizeof(To) == sizeof(From), "same size");
  To to;
  memcpy(&to, &from, sizeof(To));
  return to;
}

// Tables of double constants, which the GPU reads from constant memory (global_copy, below, for a table read at an
// index that differs across a warp): `table<kName>()`, on the host the constexpr
// table itself. A double literal does not fit an instruction, so each use costs two moves, repeated for every element
// a thread computes; a table entry is one load they share (float32 GELU's forward: 1284 SASS instructions for 8
// elements with literals, 786 with tables). The device copy is writable, so that the compiler loads it rather than
// folds its values back into literals.
template <size_t N>
struct DoubleTable {
  double c[N];
};

// A table's entries times a power of two (each exact).
template <size_t N>
constexpr DoubleTable<N> scaled_table(const DoubleTable<N>& table, double power_of_two) {
  DoubleTable<N> scaled{};
  for (size_t i = 0; i < N; ++i) scaled.c[i] = table.c[i] * power_of_two;
  return scaled;
}

#ifdef __CUDACC__
template <const auto& kHost>
__constant__ std::remove_cv_t<std::remove_reference_t<decltype(kHost)>> device_copy = kHost;
#endif

template <const auto& kTable>
C10_HOST_DEVICE C10_ALWAYS_INLINE const auto& table() {
#ifdef __CUDA_ARCH__
  return device_copy<kTable>.c;
#else
  return kTable.c;
#endif
}

#ifndef __CUDA_ARCH__

// x's high and low 12 bits, for Dekker's exact products.
inline void split_float(float x, float& hi, float& lo) {
  const float scaled = x * 4097.f;
  hi = scaled - (scaled - x);
  lo = x - hi;
}

// coef * expm1(x) for float x <= 0 on the CPU, rounded once, in float arithmetic the compiler vectorizes
// (16 lanes with AVX-512; a call to expm1f keeps the loop scalar). x = k ln2 + r with |r| <= ln2 / 2
// (Cody-Waite), expm1(x) = (2^k - 1) + 2^k (r + r^2 / 2 + rest), the leading terms added with their rounding
// errors kept (Fast2Sum, each sum's first term the larger; r^2 exact as Dekker's product): expm1 = head +
// tail to about 0.05 ulp of head. The product with coef = coef_hi + coef_lo is Dekker's too, so that only the
// last sum rounds.
// k = 0 is the same formula (2^k - 1 = 0). Positive x is clamped to 0 (SELU discards that branch), x < -64
// to -64 (the result is -coef either way).
inline float expm1_nonpositive_times(float coef_hi, float coef_lo, float x_in) {
  const float x = x_in > 0.f ? 0.f : x_in < -64.f ? -64.f : x_in;
  constexpr float kRound = 0x1.8p23f;  // adding it rounds to an integer
  const float k = (x * 0x1.715476p+0f + kRound) - kRound;
  const float r_hi = x - k * 0x1.62e4p-1f;  // exact: ln2 in two parts, the first exact in k * ln2
  const float k_ln2_lo = k * 0x1.7f7d1cp-20f;
  const float r = r_hi - k_ln2_lo;
  const float r_lo = (r_hi - r) - k_ln2_lo;
  float r1, r2;
  split_float(r, r1, r2);
  const float square = r * r;
  const float square_lo = ((r1 * r1 - square) + 2.f * r1 * r2) + r2 * r2;
  const float cube_coef = 1.f / 6 + r * (1.f / 24 + r * (1.f / 120 + r * (1.f / 720 + r * (1.f / 5040 +
                          r * (1.f / 40320)))));
  const float rest = r_lo + (0.5f * square_lo + square * r * cube_coef);
  const float two_k = bits_as<float>(uint32_t(int32_t(k) + 127) << 23);
  const float c = two_k - 1.f;
  const float c_lo = (-1.f - c) + two_k;  // inexact below k = -24
  const float linear = two_k * r, quadratic = two_k * (0.5f * square);
  const float head1 = c + linear;
  const float error1 = (c - head1) + linear;
  const float head = head1 + quadratic;
  const float error2 = (head1 - head) + quadratic;
  const float tail = ((error1 + error2) + c_lo) + two_k * rest;
  float coef1, coef2, head_hi, head_lo;
  split_float(coef_hi, coef1, coef2);
  split_float(head, head_hi, head_lo);
  const float product = coef_hi * head;
  const float product_lo = ((coef1 * head_hi - product) + coef1 * head_lo + coef2 * head_hi) + coef2 * head_lo;
  const float result = product + (product_lo + (coef_hi * tail + coef_lo * head));
  // Below 2^-90 in magnitude expm1(x) rounds to x, and Dekker's product is no longer exact; -0.0 stays -0.0.
  return x > -0x1p-90f ? coef_hi * x : result;
}
#endif

// exp_nonpositive_series's c_5..c_2 for results rounded to a 16-bit type: degree 5 fitted for relative error over
// |r| <= ln2 / 2, 1.6e-7 in float arithmetic (Taylor's series to that degree leaves 3.3e-6, a few thousandths of a
// float16 ulp; to r^7 7e-8, at two more steps a term).
constexpr float kExpSeriesFor16Bit[] = {0x1.106290p-7f, 0x1.5729f4p-5f, 0x1.5557aep-3f, 0x1.fffdfcp-2f};

// c[0] s^(N-1) + ... + c[N-1], a product and a sum a step, from c[0] (0 * s + c[0] is an instruction the compiler may
// not fold: NaN at infinite s, which no caller passes). Unfused on the CPU, where -ffp-contract=off rounds each as the
// decompositions' `poly * t + c` does (horner below fuses them); the GPU's compiler contracts them.
template <typename T, size_t N>
C10_HOST_DEVICE inline T polynomial(const T (&c)[N], T s) {
  static_assert(N >= 2, "a polynomial of degree 1 or more");
  T p = c[0];
  for (size_t i = 1; i < N; ++i) p = p * s + c[i];
  return p;
}

// exp_nonpositive_series's Taylor coefficients in T: 1 / n! for n = kDegree down to 2, rounded to T at compile time
// (as the literal 1.f / 6 is), highest first as polynomial takes them.
template <typename T>
struct ExpSeries {
  T c[ExpArithmetic<T>::kDegree - 1];
};

template <typename T>
constexpr ExpSeries<T> exp_series() {
  constexpr int kDegree = ExpArithmetic<T>::kDegree;
  ExpSeries<T> series{};
  int64_t factorial = 1;
  for (int n = 2; n <= kDegree; ++n) {
    factorial *= n;
    series.c[kDegree - n] = T(1) / T(factorial);
  }
  return series;
}

// exp(x) for x <= 0 in arithmetic the CPU's compiler vectorizes (a call to expf keeps the loop scalar): float for
// float and 16-bit results on the CPU (twice the lanes of double; no cancellation to guard against, unlike expm1),
// double for float32 results computed in double on the CPU (the GPU takes exp_by_table, below).
// x = k ln2 + r, exp(r) = 1 + r + r^2 (c_2 + r
// (c_3 + ...)): Taylor's series to r^7 in float (relative error < 6e-9), r^8 in double (< 3e-10, a hundredth of a
// float32 ulp); for results rounded to a 16-bit type, kExpSeriesFor16Bit's c_2..c_5. Then times 2^k as 2^(k + 64)
// 2^-64: the first product exact, the second rounding a subnormal result once. x is clamped to [kLowest, 0]: below,
// exp rounds to 0, and positive x takes the other branch.
template <typename T, bool kForSixteenBit = false>
C10_HOST_DEVICE inline T exp_nonpositive_series(T x_in) {
  using A = ExpArithmetic<T>;
  using Bits = typename A::Bits;
  static_assert(!kForSixteenBit || std::is_same_v<T, float>, "16-bit results take exp in float");
  constexpr ExpSeries<T> kTaylor = exp_series<T>();
  const T x = x_in > T(0) ? T(0) : x_in < A::kLowest ? A::kLowest : x_in;
  const T shifted = x * A::kLog2e + A::kRound;  // adding kRound rounds to an integer, k, which its low bits hold
  const T k = shifted - A::kRound;
  const T r = (x - k * A::kLn2Hi) - k * A::kLn2Lo;
  T series;
  if constexpr (kForSixteenBit) {
    series = polynomial(kExpSeriesFor16Bit, r);
  } else {
    series = polynomial(kTaylor.c, r);
  }
  const T p = T(1) + (r + r * r * series);
  constexpr int kScaleOffset = 64;  // 2^(k + 64) is normal for every k from kLowest up
  const T scale = bits_as<T>((bits_as<Bits>(shifted) - bits_as<Bits>(A::kRound) + Bits(A::kBias + kScaleOffset))
                             << A::kMantissaBits);
  return p * scale * bits_as<T>(Bits(A::kBias - kScaleOffset) << A::kMantissaBits);  // 2^-kScaleOffset
}

// exp_by_table's constants: 2^(j / 32) for j = 0..31, rounded (mpmath); k 32 / ln2, ln2 / (32 k), Taylor's 1 / 4!,
// 1 / 3!, 1 / 2!, 1 / 1! times k^4, k^3, k^2, k, and 1.5 * 2^52 (adding it rounds to an integer, which its low bits
// hold).
constexpr DoubleTable<32> kExp2Fractions{
    {0x1.0000000000000p+0, 0x1.059b0d3158574p+0, 0x1.0b5586cf9890fp+0, 0x1.11301d0125b51p+0, 0x1.172b83c7d517bp+0,
     0x1.1d4873168b9aap+0, 0x1.2387a6e756238p+0, 0x1.29e9df51fdee1p+0, 0x1.306fe0a31b715p+0, 0x1.371a7373aa9cbp+0,
     0x1.3dea64c123422p+0, 0x1.44e086061892dp+0, 0x1.4bfdad5362a27p+0, 0x1.5342b569d4f82p+0, 0x1.5ab07dd485429p+0,
     0x1.6247eb03a5585p+0, 0x1.6a09e667f3bcdp+0, 0x1.71f75e8ec5f74p+0, 0x1.7a11473eb0187p+0, 0x1.82589994cce13p+0,
     0x1.8ace5422aa0dbp+0, 0x1.93737b0cdc5e5p+0, 0x1.9c49182a3f090p+0, 0x1.a5503b23e255dp+0, 0x1.ae89f995ad3adp+0,
     0x1.b7f76f2fb5e47p+0, 0x1.c199bdd85529cp+0, 0x1.cb720dcef9069p+0, 0x1.d5818dcfba487p+0, 0x1.dfc97337b9b5fp+0,
     0x1.ea4afa2a490dap+0, 0x1.f50765b6e4540p+0}};
// For exp(k s) of s >= 0 with k = -1 (sigmoid's exp(-|v|) from |v|) or -1/2 (GELU's exp(-x^2 / 2) from x^2, exact in
// double for float32 x): k folded into them, a power of two, so that s takes no product or negation and every step is
// exp(k s)'s own times a power of two (the same bits, but where a product is subnormal: far below float32's range).
constexpr DoubleTable<7> exp_by_table_constants(double k) {
  return {{0x1.71547652b82fep+5 * k, 0x1.62e42fefa39efp-6 / k, k * k * k * k / 24, k * k * k / 6, k * k / 2, k,
           ExpArithmetic<double>::kRound}};
}
constexpr DoubleTable<7> kExpOfNegatedByTable = exp_by_table_constants(-1);
constexpr DoubleTable<7> kExpOfNegatedHalfByTable = exp_by_table_constants(-0.5);

// What exp_by_table takes of its argument s >= 0: exp(-s) or exp(-s / 2).
enum class ExpOf { kNegated, kNegatedHalf };

#ifdef __CUDACC__
// A table read at an index that differs across a warp: from global memory, whose cache serves the warp's differing
// addresses together (constant memory serializes them).
template <const auto& kHost>
__device__ std::remove_cv_t<std::remove_reference_t<decltype(kHost)>> global_copy = kHost;
#endif

#ifdef __CUDA_ARCH__
// exp(-s) or exp(-s / 2) for s >= 0 (NaN too) in double for float32 results on the GPU, of x = k s: x = (32 m + j)
// ln2 / 32 + r with |r| <= ln2 / 64, exp(x) = 2^m 2^(j / 32) exp(r), exp(r) = 1 + r q(r) by Taylor's series to r^4
// (relative error below 1.3e-12), with r / k in place of r (the same bits). 10 double instructions where
// exp_nonpositive_series takes 17: float32 SiLU and GELU are bound by issue there. As in exp_nonpositive_series, x is
// clamped at -746 and 2^m is 2^(m + 64) 2^-64, so that exp(-746) rounds to 0; 2^(j / 32) 2^(m + 64) adds m + 64 to the
// table entry's exponent (always normal), not a product.
template <ExpOf Of>
__device__ __forceinline__ double exp_by_table(double s) {
  const auto& c = table<Of == ExpOf::kNegated ? kExpOfNegatedByTable : kExpOfNegatedHalfByTable>();
  constexpr double kHighest = ExpArithmetic<double>::kLowest / (Of == ExpOf::kNegated ? -1 : -0.5);
  const double clamped = s > kHighest ? kHighest : s;
  const double shifted = fma(clamped, c[0], c[6]);
  const double n = shifted - c[6];
  const double r = fma(-n, c[1], clamped);
  const int low_bits = __double2loint(shifted);  // n in two's complement
  double q = fma(c[2], r, c[3]);
  q = fma(q, r, c[4]);
  q = fma(q, r, c[5]);
  const double fraction = __ldg(&global_copy<kExp2Fractions>.c[low_bits & 31]);
  // unsigned, so that a NaN's bits (any m, and a NaN result either way) shift and add without overflow
  const unsigned exponent_step = unsigned((low_bits >> 5) + 64) << 20;
  const double scaled =
      __hiloint2double(int(unsigned(__double2hiint(fraction)) + exponent_step), __double2loint(fraction));
  return fma(scaled * r, q, scaled) * 0x1p-64;
}
#endif

#ifdef __CUDA_ARCH__
// The hardware exp2 with subnormal results flushed to zero: where the callers below meet them, their
// result is -1 either way, and exp2f spends four more instructions on them.
__device__ __forceinline__ float exp2_flush_subnormal(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// __expf(x): the hardware exp2 of x * log2(e).
__device__ __forceinline__ float exp_flush_subnormal(float x) { return exp2_flush_subnormal(x * 1.4426950408889634f); }

// The hardware's approximate reciprocal of a float (within an ulp; subnormal inputs and results flushed to zero).
__device__ __forceinline__ float approximate_reciprocal(float d) {
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(d));
  return r;
}

// The hardware's approximate double reciprocal, of d's leading 32 bits (within about 2^-20).
__device__ __forceinline__ double hardware_reciprocal(double d) {
  double r;
  asm("rcp.approx.ftz.f64 %0, %1;" : "=d"(r) : "d"(d));
  return r;
}

// 1 / d for finite d >= 1 (NaN too), to double's precision: the hardware's approximate double reciprocal r (of d's
// leading 32 bits, so within about 2^-20) times 1 + e + e^2, e = 1 - d r (error about e^3), where a double
// division's dozen instructions held float32 SiLU to 72% of a copy on the H200 (a float reciprocal refined once:
// 75%, and 95% -> 100% on the H100; its two conversions between float and double are gone here).
__device__ __forceinline__ double refined_reciprocal(double d) {
  const double r = hardware_reciprocal(d);
  const double e = fma(-d, r, 1.0);
  return fma(r, fma(e, e, e), r);
}

// 1 / d to about 2^-40, one Newton step: for a polynomial's argument whose fit errs by more (float32 GELU's t), where
// refined_reciprocal's last fma would buy nothing.
__device__ __forceinline__ double reciprocal_for_argument(double d) {
  const double r = hardware_reciprocal(d);
  return fma(r, fma(-d, r, 1.0), r);
}

// expm1f(x) for x < 0: CUDA's own algorithm, step for step (its constants, its roundings, so its bits:
// compared over every negative float on an H100), less what only x >= 0 needs (the x = 0 shortcut, the
// rescaling near 2^128, the overflow to inf). 20 instructions in place of 28: float32 SELU's forward
// spends most of its instructions here, and the fused dropout's (a Philox block a pack besides) is
// bound by them. x = j ln2 + r with j = 0 for |x| < 0.41, expm1(r) by a polynomial, then
// 2^j expm1(r) + (2^j - 1); below j = -25 the result rounds to -1.
__device__ __forceinline__ float expm1f_negative(float x) {
  const float j = fabsf(x) < 0x1.a3d70ap-2f ? 0.f : rintf(x * 0x1.715476p+0f);
  float r = __fmaf_rn(-j, 0x1.62e4p-1f, x);  // ln2 in two parts, the first exact in j * ln2
  r = __fmaf_rn(-j, 0x1.7f7d1cp-20f, r);
  float poly = __fmaf_rn(0x1.6bd7ccp-10f, r, 0x1.12acc6p-7f);
  poly = __fmaf_rn(poly, r, 0x1.5557c6p-5f);
  poly = __fmaf_rn(poly, r, 0x1.5553ecp-3f);
  poly = __fmaf_rn(poly, r, 0x1.fffffcp-2f);
  const float expm1_r = __fmaf_rn(__fmul_rn(r, poly), r, r);
  const float two_j = exp2_flush_subnormal(j);
  const float result = __fmaf_rn(expm1_r, two_j, __fadd_rn(two_j, -1.f));
  return j < -25.f ? -1.f : result;
}
#endif

// expm1(x) for x <= 0 (on the GPU for float, x < 0: it returns +0 for -0). On the GPU, for results
// rounded to a 16-bit type, the hardware exp2 (1 - 2^-18 accurate here) and a short series near 0,
// where exp(x) - 1 would cancel (error below x^5 / 120), are far inside half a 16-bit ulp and cost a
// fraction of expm1f, whose instruction count otherwise keeps 16-bit SELU off the memory roofline.
template <typename scalar_t, typename acc_t>
C10_HOST_DEVICE inline acc_t expm1_nonpositive(acc_t x) {
#ifdef __CUDA_ARCH__
  if constexpr (sizeof(scalar_t) == 2) {
    const float series = x * (1.f + x * (0.5f + x * (1.f / 6 + x * (1.f / 24))));
    return x > -0.03125f ? series : exp_flush_subnormal(x) - 1.f;
  }
  if constexpr (std::is_same_v<acc_t, float>) return expm1f_negative(x);
#endif
  return expm1_of(x);
}

#ifndef __CUDA_ARCH__
// negative ? coef * f(x) : positive, for the CPU loop: every select made before the call and only
// arithmetic after it (-0.0 adds nothing, and f(0) is finite), the form in which GCC vectorizes a loop
// calling cpu_math.h's SIMD functions. The same bits as the select.
template <typename acc_t, typename F>
inline acc_t negative_branch_or(bool negative, acc_t coef, F f, acc_t x, acc_t positive) {
  const acc_t negative_coef = negative ? coef : acc_t(-0.0);
  const acc_t positive_term = negative ? acc_t(-0.0) : positive;
  const acc_t at = negative ? x : acc_t(0);
  return negative_coef * f(at) + positive_term;
}
#endif

// The expressions follow ATen's elu kernels (alpha * scale folded in acc_t, `<= 0` picking the negative
// branch), except that on the CPU for float the negative branch's product is rounded once (0.72 ulp at
// worst over every negative float, where torch's CPU kernel reaches 1.60).
template <typename scalar_t>
struct SeluForward {
  using Args = NoArgs;
  using acc_t = opmath_t<scalar_t>;
  static constexpr int arity = 1;
  C10_HOST_DEVICE acc_t operator()(acc_t x) const {
    constexpr acc_t neg_coef = acc_t(kSeluAlpha) * acc_t(kSeluScale);
    // expm1, not exp(x) - 1: the latter loses every digit as x -> 0.
#ifdef __CUDA_ARCH__
    // Both branches, then a select. As a branch, a warp of mixed signs ran both anyway, plus the
    // divergence's own instructions: enough to keep 16-bit SELU off the copy roofline on the H200
    // and the fused dropout's forward off it on the H100. Zero takes the positive branch, whose
    // x * scale keeps its sign as expm1(x) * alpha * scale would: the same bits as torch's `<= 0`.
    const acc_t negative = expm1_nonpositive<scalar_t>(x) * neg_coef;
    const acc_t positive = x * acc_t(kSeluScale);
    return x < acc_t(0) ? negative : positive;
#else
    const auto negative = [](acc_t v) {
      // alpha * scale to twice float's precision, for a product rounded once.
      constexpr double exact_coef = kSeluAlpha * kSeluScale;
      if constexpr (std::is_same_v<acc_t, float>) {
        return expm1_nonpositive_times(float(exact_coef), float(exact_coef - float(exact_coef)), v);
      }
      return neg_coef * expm1_of(v);
    };
    return negative_branch_or(x <= acc_t(0), acc_t(1), negative, x, x * acc_t(kSeluScale));
#endif
  }
};

// d selu / dx from the result r, for the in-place form (which keeps nothing else): scale for r > 0,
// scale * alpha * exp(x) = r + scale * alpha otherwise. As torch's elu_backward with is_result, the
// test is `r <= 0`, so a NaN result takes the positive branch. In 16-bit types r + scale * alpha cancels
// for x below about -2: the out-of-place form takes its gradient from the input instead.
template <typename scalar_t>
struct SeluBackward {
  using Args = NoArgs;
  using acc_t = opmath_t<scalar_t>;
  static constexpr int arity = 2;
  C10_HOST_DEVICE acc_t operator()(acc_t grad, acc_t result) const {
    constexpr acc_t neg_coef = acc_t(kSeluAlpha) * acc_t(kSeluScale);
    // One multiply by a selected factor: branch-free, so the CPU loop vectorizes.
    return grad * (result <= acc_t(0) ? result + neg_coef : acc_t(kSeluScale));
  }
};

// exp(x) for x <= 0: on the GPU for 16-bit results the hardware exp2, as in expm1_nonpositive; on the CPU
// for float in float arithmetic that vectorizes (a call to expf keeps the loop scalar).
template <typename scalar_t, typename acc_t>
C10_HOST_DEVICE inline acc_t exp_nonpositive(acc_t x) {
#ifdef __CUDA_ARCH__
  if constexpr (sizeof(scalar_t) == 2) return __expf(x);
#else
  if constexpr (std::is_same_v<acc_t, float>) return exp_nonpositive_series<float, sizeof(scalar_t) == 2>(x);
#endif
  return exp_of(x);
}

// 1 / d for d >= 1 (inf and NaN too), in float for 16-bit results: on the GPU the hardware's approximate reciprocal
// (within an ulp of float, far inside half a 16-bit ulp), where a division's dozen instructions held bfloat16 GELU to
// 80% of a copy; on the CPU a division, which vectorizes.
C10_HOST_DEVICE inline float reciprocal_for_16_bit(float d) {
#ifdef __CUDA_ARCH__
  return approximate_reciprocal(d);
#else
  return 1.f / d;
#endif
}

// erfc(z) in float arithmetic for the 16-bit types' GELU (CUDA's erfcf held bfloat16 GELU to 54% of a copy; Sleef's
// float erfc on the CPU, a call, to a fifth of torch's GELU): t exp(-|z|^2 + P(t)) with t = 1 / (1 + |z| / 2),
// Numerical Recipes' form of erfc, P of degree 5 fitted to log(erfc(z) / t) + z^2 over z in [0, 11] (error below
// 7.7e-6, and in float about 2^-17 at |z| = 10 from z^2's rounding: a few hundredths of a 16-bit ulp), and
// 2 - erfc(-z) for z < 0. exp_nonpositive's exp keeps subnormal results on either device.
template <typename scalar_t>
C10_HOST_DEVICE inline float erfc_in_float(float z) {
  const float a = fabsf(z);
  const float t = reciprocal_for_16_bit(1.f + 0.5f * a);
  constexpr float kCoefficients[] = {0.22879079f, -0.70919234f, 0.47449490f, 0.25444227f, 1.01801378f, -1.26654178f};
  const float tail = t * exp_nonpositive<scalar_t, float>(polynomial(kCoefficients, t) - a * a);
  return z >= 0.f ? tail : 2.f - tail;
}

#ifdef __CUDA_ARCH__
// Phi(x) = erfc(-x / sqrt 2) / 2 for the 16-bit types on the GPU: erfc_in_float's form with its constants folded, as
// t 2^(P(t) log2(e) - w^2 - 1) with t = 1 / (1 + |x| / (2 sqrt 2)) and w = x sqrt(log2(e) / 2), so that the hardware
// exp2 takes its argument as computed (no z, no scaling by log2(e), no halving after). The exponent is raised by 24
// (in P's constant) and the product scaled back by 2^-24: exp2's flush-to-zero form then only flushes results that
// round to 0 anyway, and a subnormal tail is rounded once (exp2 that keeps subnormals spends four more instructions).
// On the H200 16-bit GELU is bound by its instructions per element.
__device__ inline float normal_cdf_16_bit(float x) {
  constexpr double kLog2e = ExpArithmetic<double>::kLog2e;
  constexpr float kScaled[] = {float(0.22879079 * kLog2e), float(-0.70919234 * kLog2e), float(0.47449490 * kLog2e),
                               float(0.25444227 * kLog2e), float(1.01801378 * kLog2e),
                               float(-1.26654178 * kLog2e + 23)};
  const float t = approximate_reciprocal(__fmaf_rn(fabsf(x), 0.35355339f, 1.f));
  float p = kScaled[0];  // from c[0], as polynomial's
  for (size_t i = 1; i < sizeof(kScaled) / sizeof(float); ++i) p = __fmaf_rn(p, t, kScaled[i]);
  const float w = x * 0.84932180f;
  const float tail = __fmul_rn(t * 0x1p-24f, exp2_flush_subnormal(__fmaf_rn(-w, w, p)));  // erfc(|x| / sqrt 2) / 2
  return x <= 0.f ? tail : 1.f - tail;
}
#endif

// d selu / dx from the input, for the out-of-place form, as torch's elu_backward without is_result:
// scale * alpha * exp(x) for x <= 0, scale otherwise (NaN too). exp(x) is the last factor, as in torch:
// where it is subnormal, a product taken after it would round its error up again.
template <typename scalar_t>
struct SeluInputBackward {
  using Args = NoArgs;
  using acc_t = opmath_t<scalar_t>;
  static constexpr int arity = 2;
  C10_HOST_DEVICE acc_t operator()(acc_t grad, acc_t x) const {
    constexpr acc_t neg_coef = acc_t(kSeluAlpha) * acc_t(kSeluScale);
#ifdef __CUDA_ARCH__
    return x <= acc_t(0) ? grad * neg_coef * exp_nonpositive<scalar_t>(x) : grad * acc_t(kSeluScale);
#else
    return negative_branch_or(x <= acc_t(0), grad * neg_coef, exp_nonpositive<scalar_t, acc_t>, x,
                              grad * acc_t(kSeluScale));
#endif
  }
};

#ifndef __CUDA_ARCH__
// The sign and order tests of a 16-bit value on its bits, for the CPU loop: GCC converts c10::Half to float
// one element at a time without F16C, which kept float16 ReLU scalar; integer tests vectorize on every level.
template <typename scalar_t>
struct SixteenBitTests {
  static constexpr uint16_t kMagnitude = 0x7FFF, kSign = 0x8000;
  static constexpr uint16_t kInf = std::is_same_v<scalar_t, c10::BFloat16> ? 0x7F80 : 0x7C00;
  // x < 0: the sign set on a nonzero magnitude that is not NaN.
  static bool negative(uint16_t x) { return (x & kSign) && (x & kMagnitude) != 0 && (x & kMagnitude) <= kInf; }
  // x <= 0: a zero of either sign, or negative.
  static bool not_positive(uint16_t x) { return (x & kMagnitude) == 0 || negative(x); }
};
#endif

// ReLU only selects, so it works on the stored values themselves (acc_t = scalar_t): no round trip
// through float that would change a 16-bit NaN's bits.
template <typename scalar_t>
struct ReluForward {
  using Args = NoArgs;
  using acc_t = scalar_t;
  static constexpr int arity = 1;
  C10_HOST_DEVICE acc_t operator()(acc_t x) const {
    // NaN passes through. torch.relu keeps -0.0 on the CPU and returns +0.0 for it on CUDA.
#ifdef __CUDA_ARCH__
    return x <= acc_t(0) ? acc_t(0) : x;
#else
    if constexpr (sizeof(scalar_t) == 2) {
      return acc_t(SixteenBitTests<scalar_t>::negative(x.x) ? uint16_t(0) : x.x, acc_t::from_bits());
    } else {
      return x < acc_t(0) ? acc_t(0) : x;
    }
#endif
  }
};

// threshold_backward's rule: the gradient is dropped wherever the result is <= 0.
template <typename scalar_t>
struct ReluBackward {
  using Args = NoArgs;
  using acc_t = scalar_t;
  static constexpr int arity = 2;
  C10_HOST_DEVICE acc_t operator()(acc_t grad, acc_t result) const {
#ifndef __CUDA_ARCH__
    if constexpr (sizeof(scalar_t) == 2) {
      return acc_t(SixteenBitTests<scalar_t>::not_positive(result.x) ? uint16_t(0) : grad.x, acc_t::from_bits());
    }
#endif
    return result <= acc_t(0) ? acc_t(0) : grad;
  }
};

// An activation's `Math`: its value at x and its gradient (grad times its slope at x) in its math type, unrounded,
// from which its functors round each result once (MathForward, MathBackward, GatedForward, GatedBackward).
// `tabulated`: for the 16-bit types, whose math type is float, gradient(grad, x) is grad * gradient(1, x) rounded
// once, and value(x) and gradient(1, x) cost more than a gather, so the CPU's contiguous rows take them from tables
// (cpu_kernels.cpp). ReLU's, in acc_t: the gradient selected, as threshold_backward's (kept where x is NaN, 0 where
// x <= 0 whatever grad is), and the value a compare; the value of -0 is -0 on the CPU and +0 on CUDA, as
// torch.relu's. Its single-op functors above work on the stored values.
template <typename scalar_t>
struct ReluMath {
  using math_t = opmath_t<scalar_t>;
  static constexpr bool tabulated = false;
  C10_HOST_DEVICE static math_t value(math_t x) {
#ifdef __CUDA_ARCH__
    return x <= math_t(0) ? math_t(0) : x;
#else
    return x < math_t(0) ? math_t(0) : x;
#endif
  }
  C10_HOST_DEVICE static math_t gradient(math_t grad, math_t x) { return x <= math_t(0) ? math_t(0) : grad; }
};

// The math type of the activations computed wider than they are stored (all but SELU and ReLU): float for the 16-bit
// types, double for float32 (so that a float32 result is rounded once) and float64.
template <typename scalar_t>
using wide_math_t = std::conditional_t<sizeof(scalar_t) == 2, float, double>;

// Squared ReLU, relu(x)^2 (Primer's; the MLPs of Nemotron-4): x^2 is exact in float for float16 and bfloat16 (but
// where it leaves float's range, past |x| = 2^64) and in double for float32, so each value is its square correctly
// rounded; a gated form rounds its product once from that math type, as the other gated forms. The gradient is
// 2 relu(x) grad, dropped where x <= 0 whatever grad is (as torch's composition through threshold_backward) and NaN
// where x is; x grad first, so that it overflows only where the result does (torch's 2 x overflows from half the
// dtype's largest value).
template <typename scalar_t>
struct SquaredReluMath {
  using math_t = wide_math_t<scalar_t>;
  static constexpr bool tabulated = false;  // a product costs less than a gather
  C10_HOST_DEVICE static math_t value(math_t x) { return x <= math_t(0) ? math_t(0) : x * x; }
  C10_HOST_DEVICE static math_t gradient(math_t grad, math_t x) { return x <= math_t(0) ? math_t(0) : x * grad * 2; }
};

// The functors over an activation's Math, each result rounded once from its math type: its forward, its gradient
// from the input, and its gated forms. They and the larger Maths are always inlined: GCC leaves a body of GELU's
// float64 size out of line, and a call in the CPU's vector loop keeps it scalar (0.03x torch).
template <class Math_, typename scalar_t, int Arity, int Outputs = 1>
struct OverMath {
  using Args = NoArgs;
  using Math = Math_;
  using acc_t = opmath_t<scalar_t>;
  static constexpr int arity = Arity;
  static constexpr int outputs = Outputs;
};

template <class Math, typename scalar_t>
struct MathForward : OverMath<Math, scalar_t, 1> {
  using acc_t = opmath_t<scalar_t>;
  C10_HOST_DEVICE C10_ALWAYS_INLINE acc_t operator()(acc_t x) const { return acc_t(Math::value(x)); }
};

template <class Math, typename scalar_t>
struct MathBackward : OverMath<Math, scalar_t, 2> {
  using acc_t = opmath_t<scalar_t>;
  C10_HOST_DEVICE C10_ALWAYS_INLINE acc_t operator()(acc_t grad, acc_t x) const {
    return acc_t(Math::gradient(grad, x));
  }
};

// A gated activation, act(gate) * up (GLU variants: SwiGLU, GeGLU, ReGLU): the product taken in the math type and
// rounded once (torch's composition rounds act(gate) first).
template <class Math, typename scalar_t>
struct GatedForward : OverMath<Math, scalar_t, 2> {
  using acc_t = opmath_t<scalar_t>;
  C10_HOST_DEVICE C10_ALWAYS_INLINE acc_t operator()(acc_t gate, acc_t up) const {
    using math_t = typename Math::math_t;
    return acc_t(Math::value(math_t(gate)) * math_t(up));
  }
};

// Its two gradients from (grad, gate, up) in one pass: act'(gate) (grad * up) and grad * act(gate), each rounded
// once, in the order of torch's composition (act_backward(grad * up, gate), grad * act(gate)).
template <class Math, typename scalar_t>
struct GatedBackward : OverMath<Math, scalar_t, 3, 2> {
  using acc_t = opmath_t<scalar_t>;
  C10_HOST_DEVICE C10_ALWAYS_INLINE Results<acc_t, 2> operator()(acc_t grad, acc_t gate, acc_t up) const {
    using math_t = typename Math::math_t;
    const math_t g = grad, x = gate;
    return {{acc_t(Math::gradient(g * math_t(up), x)), acc_t(g * Math::value(x))}};
  }
};

// SiLU, x sigmoid(x), computed in double for float32 and float64 (one rounding of a float32 result; on the GPU
// float32 takes exp from float arithmetic, below) and in float for the 16-bit types, with exp_nonpositive's exp
// (on the CPU in float arithmetic, which vectorizes; on the GPU the hardware exp2). With t = exp(-|x|) <= 1,
// sigmoid(x) and 1 - sigmoid(x) are t / (1 + t) and 1 / (1 + t), the one or the other by the sign of x: neither
// cancels, where torch's 1 - sigmoid(x) does for large x, and exp(-x) overflows below x = -88 in float.

template <typename math_t>
struct SigmoidTerms {
  math_t denominator;  // 1 + exp(-|x|)
  math_t sigmoid_numerator, complement_numerator;  // over the denominator: sigmoid(x) and 1 - sigmoid(x)
};

// From t = exp(-|x|) and the sign of x (negative: 1 or 0, chosen before the call), by arithmetic alone: on the CPU
// exp in double is a call, and a select after it keeps the loop scalar.
template <typename math_t>
C10_HOST_DEVICE inline SigmoidTerms<math_t> sigmoid_terms_from(math_t negative, math_t t) {
  return {math_t(1) + t, t * negative + (math_t(1) - negative), t * (math_t(1) - negative) + negative};
}

// The same in float, where exp is inline: by selects, two instructions fewer a term (float16 and bfloat16
// silu_backward 0.71x -> 0.87x torch 2.15.0's on one AVX-512 core, measured on the loop alone).
C10_HOST_DEVICE inline SigmoidTerms<float> sigmoid_terms_selected(bool negative, float t) {
  return {1.f + t, negative ? t : 1.f, negative ? 1.f : t};
}

template <typename scalar_t, typename math_t>
C10_HOST_DEVICE inline SigmoidTerms<math_t> sigmoid_terms(math_t x) {
  const math_t magnitude = x < math_t(0) ? x : -x;  // -|x|
  if constexpr (std::is_same_v<math_t, float>) {
    return sigmoid_terms_selected(x < 0.f, exp_nonpositive<scalar_t, float>(magnitude));
  } else {
    const math_t negative = x < math_t(0) ? math_t(1) : math_t(0);
    return sigmoid_terms_from(negative, exp_nonpositive<scalar_t, math_t>(magnitude));
  }
}

// n / d for sigmoid's terms, d in [1, 4]. On the GPU times a reciprocal: reciprocal_for_16_bit's in float (the
// 16-bit types), refined_reciprocal's in double for float32 results (a double division is a dozen instructions of
// the double unit, which bounds float32 there); elsewhere a division.
template <typename scalar_t, typename math_t>
C10_HOST_DEVICE inline math_t sigmoid_quotient(math_t n, math_t d) {
#ifdef __CUDA_ARCH__
  if constexpr (std::is_same_v<math_t, float>) return n * reciprocal_for_16_bit(d);
  if constexpr (std::is_same_v<scalar_t, float>) return n * refined_reciprocal(d);
#endif
  return n / d;
}

// x sigmoid(v) differentiated in x, for v = v(x) with dv/dx = slope: sigmoid(v) (1 + x slope (1 - sigmoid(v))),
// with sigmoid(v) = s / D and 1 - sigmoid(v) = c / D. Over one division, s (D + x slope c) / D^2 (on the GPU one
// reciprocal: a division is dear there), but for float64 results, which keep two: D^2's rounding takes float64 SiLU's
// gradient past its bound (docs/design/silu.md).
template <typename scalar_t, typename math_t>
C10_HOST_DEVICE inline math_t x_sigmoid_slope(const SigmoidTerms<math_t>& terms, math_t x, math_t slope) {
  const math_t d = terms.denominator;
  if constexpr (std::is_same_v<scalar_t, double>) {
    return terms.sigmoid_numerator / d * (1 + x * slope * (terms.complement_numerator / d));
  }
#ifdef __CUDA_ARCH__
  if constexpr (std::is_same_v<scalar_t, float>) {  // D^-2 from the value's reciprocal (a gated backward takes both)
    const math_t r = refined_reciprocal(d);
    return terms.sigmoid_numerator * (d + x * slope * terms.complement_numerator) * (r * r);
  }
#endif
  return sigmoid_quotient<scalar_t>(terms.sigmoid_numerator * (d + x * slope * terms.complement_numerator), d * d);
}

#ifdef __CUDA_ARCH__
// float32 SiLU's value and gradient on the GPU, in double as on the CPU (over refined_reciprocal's reciprocal),
// unrounded (SiLU's ops round them; its gated forms take the products with up and grad * up first). exp(-|x|) is
// exp_by_table in double: a float exp handed over as two floats was bound by the H200's conversion
// unit. From x = -745.1 exp is 0 (its clamp at -746) and the value x * 0 (NaN at -inf, as torch's x / (1 + exp(-x)));
// above, the value is the double it is (below -200, times any finite float32 factor, it rounds to 0), so that a gated
// form's product with an infinite factor is +-inf, the float64 answer. Below -300 the gradient times any float32
// factor (grad * up reaches 1.2e77) rounds to 0, and there it is 0 (x taken at -300); at +inf it is NaN (torch's
// inf * 0). Value and gradient take the same exp(-|x|), so that a gated backward computes it once.
__device__ __forceinline__ double silu_exp_from_float(float x) {
  return exp_by_table<ExpOf::kNegated>(fabs(double(x)));
}

__device__ __forceinline__ double silu_value_from_float(float x) {
  const double t = silu_exp_from_float(x);
  return double(x) * (x < 0.f ? t : 1.0) * refined_reciprocal(1.0 + t);
}

__device__ __forceinline__ double silu_gradient_from_float(double grad, float x_in) {
  const double t = silu_exp_from_float(x_in);
  const double x = x_in < -300.f ? double(x_in) * 0 - 300 : double(x_in);
  const double d = 1.0 + t;
  const double sigmoid_numerator = x_in < 0.f ? t : 1.0;
  const double complement_numerator = x_in < 0.f ? 1.0 : (x_in > 300.f ? x * 0 : t);
  const double r = refined_reciprocal(d);
  return grad * (sigmoid_numerator * (d + x * complement_numerator)) * (r * r);
}
#endif

// SiLU's value and slope. The value in double is torch's x / (1 + exp(-x)) (float64: torch's bits), whose exp
// overflows only below x = -709, where a float32 result is -0 either way. The slope is sigmoid(x) (1 + x (1 -
// sigmoid(x))), torch's silu_backward formula, from sigmoid's terms (in double too: torch's 1 - sigmoid(x) cancels
// for large x).
template <typename scalar_t>
struct SiluMath {
  using math_t = wide_math_t<scalar_t>;
  static constexpr bool tabulated = true;
  C10_HOST_DEVICE static math_t value(math_t x) {
#ifdef __CUDA_ARCH__
    if constexpr (std::is_same_v<scalar_t, float>) return silu_value_from_float(float(x));
#endif
    if constexpr (std::is_same_v<math_t, double>) return x / (1 + exp_of(-x));
    const SigmoidTerms<math_t> terms = sigmoid_terms<scalar_t>(x);
    return sigmoid_quotient<scalar_t>(x * terms.sigmoid_numerator, terms.denominator);
  }
  C10_HOST_DEVICE static math_t gradient(math_t grad, math_t x) {
#ifdef __CUDA_ARCH__
    if constexpr (std::is_same_v<scalar_t, float>) return silu_gradient_from_float(grad, float(x));
#endif
    return grad * x_sigmoid_slope<scalar_t>(sigmoid_terms<scalar_t>(x), x, math_t(1));
  }
};

// GELU, x Phi(x) with Phi the standard normal CDF (torch's approximate="none"), as x erfc(-x / sqrt 2) / 2: erfc does
// not cancel where torch's 1 + erf(x / sqrt 2) does (float32: half its bits gone at x = -4, all from -5.5 down, where
// torch returns -0). Computed in double for float32 and float64 (float32 rounded once) and in float for the 16-bit
// types (erfc_in_float, within 7.7e-6: a 16-bit result rounded once). In float64 erfc(|z|), z = -x / sqrt 2, is
// exp(-x^2 / 2) erfc_scaled(|z|, its rounding error), where exp takes x^2's rounding error: z's own rounding in
// erfc(z) would cost about z^2 ulps (hundreds in the negative tail).
constexpr double kSqrtHalf = 0.70710678118654757;       // sqrt(1/2), rounded
constexpr double kSqrtHalfLo = -4.8336466567264567e-17;  // sqrt(1/2) - kSqrtHalf
constexpr double kTwoOverSqrtPi = 1.1283791670955126;
constexpr double kInvSqrtTwoPi = 0.3989422804014327;

// Phi(x) = erfc(z) / 2, z = -x / sqrt 2, in double for float32 results, in place of the Sleef erfc libtorch exports
// on the CPU (12 ms per 2^20 elements on one AVX-512 core, where torch's own float32 GELU takes 0.4 ms) and CUDA's
// erfc on the GPU (float32 GELU at 34% of a copy on the H200): erfc(z) = t exp(-z^2) Q(t) with t = 1 / (1 + 0.3 |z|),
// Q of degree 10 fitted to erfc(z) exp(z^2) / t over z in [0, 9.4] (relative error below 3.1e-10; with t = 1 / (1 +
// |z| / 2) degree 12 left 1.1e-9 over [0, 27]). Past 9.4 every float32 GELU value made from it is subnormal or 0, and
// in its slope Phi is under 1% of x phi(x); there Q stays within 2e-8 up to z = 11 and above 0.169 at every t, so no
// sign changes. 1 - Phi(-x) for x > 0. exp(-z^2) is the caller's: GELU's exp(-x^2 / 2), which its slope takes too.
// z is never formed (t from |x| with 0.3 / sqrt 2, the sign from x) and the 1/2 is in Q's coefficients: a product
// fewer each, as on the GPU the double unit bounds float32 GELU. There t is reciprocal_for_argument's, fewer double
// instructions than a division; from |x| = 42 on, where exp(-x^2 / 2) is 0 (NaN at NaN), t is any finite value.
constexpr DoubleTable<11> kErfcForFloat32{
    {0.055873871038741224, -0.333895682925951, 0.7475678189253344, -0.8461284739589974, 0.7799818581579242,
     -0.2885068987696715, 0.270299054328413, 0.10898316183355025, 0.16789912261481743, 0.16864244356362051,
     0.1692837248845803}};
constexpr double kErfcForFloat32Scale = 0.3;  // t's p (benchmarks/probes/fit_erfc.py: SCALE)
constexpr DoubleTable<11> kHalfErfcForFloat32 = scaled_table(kErfcForFloat32, 0.5);
constexpr double kErfcForFloat32ScaleOfX = kErfcForFloat32Scale * kSqrtHalf;

C10_HOST_DEVICE inline double normal_cdf_for_float32(double x, double exp_half_square_x) {
  const double a = fabs(x);
#ifdef __CUDA_ARCH__
  const double t = reciprocal_for_argument(1 + kErfcForFloat32ScaleOfX * (a < 42 ? a : 42));
#else
  const double t = 1 / (1 + kErfcForFloat32ScaleOfX * a);
#endif
  const double half_tail = t * exp_half_square_x * polynomial(table<kHalfErfcForFloat32>(), t);
  return x <= 0 ? half_tail : 1 - half_tail;
}

// g s^K + c[first] s^(K-1) + ... + c[first + K - 1]: K steps of Horner's rule, one fma each, unrolled here: GCC
// peels at most 16 steps of a loop unasked, and a loop left inside keeps the CPU loop scalar.
template <size_t N, size_t... I>
C10_HOST_DEVICE inline double horner_steps(double g, const double (&c)[N], size_t first, double s,
                                           std::index_sequence<I...>) {
  ((g = fma_of(g, s, c[first + I])), ...);
  return g;
}

// c[0] s^(N-1) + ... + c[N-1].
template <size_t N>
C10_HOST_DEVICE inline double horner(const double (&c)[N], double s) {
  static_assert(N >= 2, "a polynomial of degree 1 or more");
  return horner_steps(c[0], c, 1, s, std::make_index_sequence<N - 1>{});
}

// s^E for a constant E, by squaring.
template <size_t E>
C10_HOST_DEVICE inline double power(double s) {
  static_assert(E >= 1, "a positive power");
  if constexpr (E == 1) {
    return s;
  } else if constexpr (E % 2 == 0) {
    const double half = power<E / 2>(s);
    return half * half;
  } else {
    return power<E - 1>(s) * s;
  }
}

// The same sum for s in [0, 1] on the CPU in about half the latency of one chain, which bounds float64 GELU's loop
// there (its erfc takes 20 steps): the higher and the lower coefficients as two chains side by side, the first (the
// same steps as Horner's) joined to the second by a power of s, then Horner's last three steps, which damp the join's
// rounding by s^3 where the higher part adds little, as in erfc_scaled. (Chains of the odd and the even powers in s^2
// cancel there: a value up to 0.44 ulp further off.) The GPU, bound by the double unit's throughput, keeps one chain
// and the power's four products fewer.
template <size_t N>
C10_HOST_DEVICE inline double horner_in_two_chains(const double (&c)[N], double s) {
#ifdef __CUDA_ARCH__
  return horner(c, s);
#else
  constexpr size_t kLast = 3, kHigh = (N - kLast) / 2, kLow = N - kLast - kHigh;
  static_assert(kHigh >= 1, "a polynomial of degree 4 or more");
  const double high = horner_steps(c[0], c, 1, s, std::make_index_sequence<kHigh - 1>{});
  const double low = horner_steps(c[kHigh], c, kHigh + 1, s, std::make_index_sequence<kLow - 1>{});
  return horner_steps(fma_of(high, power<kLow>(s), low), c, N - kLast, s, std::make_index_sequence<kLast>{});
#endif
}

// erfc(a + a_lo) exp((a + a_lo)^2) for a >= 0 and a's rounding error a_lo, in double for float64 GELU, which multiplies
// it by exp(-x^2 / 2) = exp(-(a + a_lo)^2) with x^2's rounding error folded in: t G(t) with
// t = 3 / (3 + a) in (0, 1], G of degree 20 fitted to erfc(a) exp(a^2) / t over a in [1/2, 30], where GELU takes it
// (benchmarks/probes/fit_erfc.py --float64: relative error 2.0e-17 with the coefficients as rounded; in powers of t,
// whose sum does not cancel by more than 1.19x; below a = 1/2, where GELU discards it, G stays finite), t's two
// roundings (3 + a's, the quotient's) folded in as a factor, and a_lo by the derivative. Plain
// arithmetic, so the CPU loop vectorizes it. a is clamped to 30, past which exp(-a^2) is 0; the clamp also keeps the
// result finite at a = inf and NaN, where that factor (0, NaN) gives the product's answer. Always inlined, as
// the functors over a Math.
constexpr DoubleTable<21> kErfcScaled{
    {-0.003912958297731842, 0.03315938711141853, -0.12311284192358232, 0.2576333230248582, -0.32179003672408907,
     0.22442100825727157, -0.047285267572097174, -0.06900257694629061, 0.10269388670504982, -0.07879222695264922,
     0.026885665131318546, -0.02116947277392937, 0.007937293259741561, 0.025356890456798443, 0.05712748432140936,
     0.09227092310984948, 0.12711869150689, 0.15671919343252855, 0.17761524582225877, 0.1880631943227805,
     0.18806319451852146}};

C10_HOST_DEVICE C10_ALWAYS_INLINE double erfc_scaled(double a_in, double a_lo_in) {
  const bool in_range = a_in < 30;
  const double a = in_range ? a_in : 30, a_lo = in_range ? a_lo_in : 0;
  const double d = 3 + a, t = 3 / d;
  const double d_lo = (a - (d - (d - a))) + (3 - (d - a));  // 3 + a - d, exactly (TwoSum)
  const double correction = fma_of(-d_lo, t, fma_of(-t, d, 3)) * (1.0 / 3);  // 3 / (d + d_lo) = t (1 + correction)
  const double g = horner_in_two_chains(table<kErfcScaled>(), t);
  const double scaled = t * fma_of(g, correction, g);
  return fma_of(fma_of(2 * a, scaled, -kTwoOverSqrtPi), a_lo, scaled);  // + a_lo d/da, d/da = 2a (.) - 2 / sqrt(pi)
}

// erf(z) / z as a polynomial in w = z^2 of degree 12 (Chebyshev interpolation over w in [0, 1], truncation error
// below 1e-17), for float64 GELU near x = 0, where 1 - erfc(|z|) / 2 or erfc(|z|) / 2 from erfc_scaled's several
// roundings would lose what torch's 1 + erf keeps.
constexpr DoubleTable<13> kErfOverZ{
    {5.957176147748911e-11, -1.1372848856791674e-09, 1.4659775274047436e-08, -1.6350312701054695e-07,
     1.6461000484121368e-06, -1.4925595266831182e-05, 0.0001205533111164271, -0.000854832698083379,
     0.0052239776248180145, -0.026866170645076792, 0.11283791670954879, -0.3761263890318375,
     1.1283791670955126}};

C10_HOST_DEVICE inline double erf_over_z(double w) { return horner(table<kErfOverZ>(), w); }

// exp(-x^2 / 2); in float64 with x^2's rounding error (exact by fma) folded in. Past |x| = 1e150 it is 0 either way.
template <typename scalar_t, typename math_t>
C10_HOST_DEVICE inline math_t exp_half_square(math_t x) {
  const math_t square = x * x;
  if constexpr (std::is_same_v<math_t, float>) {
    return exp_nonpositive<scalar_t, float>(-0.5f * square);
  } else if constexpr (!std::is_same_v<scalar_t, double>) {
#ifdef __CUDA_ARCH__
    return exp_by_table<ExpOf::kNegatedHalf>(square);
#else
    return exp_nonpositive_series(-0.5 * square);  // which vectorizes (a table would be a gather)
#endif
  } else {
    const double square_lo = fabs(x) < 1e150 ? fma_of(x, x, -square) : 0.0;  // inf and NaN: no inf - inf
    return exp_of(-0.5 * square) * (1 - 0.5 * square_lo);
  }
}

// Phi(x) = erfc(-x / sqrt 2) / 2, given exp(-x^2 / 2), erfc's factor in double (float64's away from 0; the float
// arithmetic of the 16-bit types takes its own). Always inlined, as
// the functors over a Math.
template <typename scalar_t, typename math_t>
C10_HOST_DEVICE C10_ALWAYS_INLINE math_t normal_cdf(math_t x, math_t exp_half_square_x) {
  if constexpr (std::is_same_v<math_t, float>) {
#ifdef __CUDA_ARCH__
    return normal_cdf_16_bit(x);
#else
    return 0.5f * erfc_in_float<scalar_t>(-x * float(kSqrtHalf));
#endif
  } else if constexpr (!std::is_same_v<scalar_t, double>) {
    return normal_cdf_for_float32(x, exp_half_square_x);
  } else {
    const double z = -x * kSqrtHalf;
    // Near 0, (1 - erf(z)) / 2, a sum that does not cancel for z in (-1, 1/2); elsewhere erfc(z) / 2 from erfc(|z|),
    // as 1 - erfc(-z) / 2 for z < 0. Each form chosen by a factor of 0 or 1 (a select of exp's result would keep the
    // CPU loop scalar), so the other adds an exact 0.
    const bool near = z > -1 && z < 0.5;
    const double near_zero = near ? 1.0 : 0.0, z_near = near ? z : 0.0;  // z * 0 would be NaN at infinite z
    const double from_erf = fma_of(-0.5 * z_near, erf_over_z(z_near * z_near), 0.5);
    const double base = z >= 0 ? 0.0 : 1.0, sign = z >= 0 ? 0.5 : -0.5;
    const double a = fabs(z), a_lo = fma_of(fabs(x), kSqrtHalf, -a) + fabs(x) * kSqrtHalfLo;
    const double from_erfc = fma_of(sign, exp_half_square_x * erfc_scaled(a, a_lo), base);
    return near_zero * from_erf + (1 - near_zero) * from_erfc;
  }
}

// GELU's value and slope, Phi(x) + x phi(x) with phi(x) = exp(-x^2 / 2) / sqrt(2 pi). The slope's two terms
// cancel near its root x = -0.75 (in any arithmetic): bounds there are in ulps of the terms. Always inlined, as
// the functors over a Math.
template <typename scalar_t>
struct GeluMath {
  using math_t = wide_math_t<scalar_t>;
  static constexpr bool tabulated = true;
  C10_HOST_DEVICE C10_ALWAYS_INLINE static math_t value(math_t x) {
    const math_t e = std::is_same_v<math_t, double> ? exp_half_square<scalar_t>(x) : math_t(0);
    return x * normal_cdf<scalar_t>(x, e);
  }
  C10_HOST_DEVICE C10_ALWAYS_INLINE static math_t gradient(math_t grad, math_t x) {
    const math_t e = exp_half_square<scalar_t>(x);
    return grad * (normal_cdf<scalar_t>(x, e) + x * e * math_t(kInvSqrtTwoPi));
  }
};

// Activations of the form x sigmoid(v), v = v(x): GELU's tanh approximation and quick GELU. From sigmoid's terms,
// which do not cancel where torch's 1 + tanh(v / 2) or 1 - sigmoid(v) does; in double (float for the 16-bit types),
// and in float64 with v carried to twice double's precision (its rounding would cost |v| ulps of a result in the
// negative tail).
struct SigmoidArgument {
  double v, v_lo;  // v + v_lo
};

// Each step rounded as written: the error terms below are exact only so (on the GPU the compiler would otherwise
// fuse a product into the sum after it; on the CPU -ffp-contract=off keeps them apart).
C10_HOST_DEVICE inline double add_rn(double a, double b) {
#ifdef __CUDA_ARCH__
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}

C10_HOST_DEVICE inline double mul_rn(double a, double b) {
#ifdef __CUDA_ARCH__
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}

// sigmoid's terms of v + v_lo: exp(-|v| - |v|_lo) = exp(-|v|) (1 - |v|_lo); in float, of v.
template <typename scalar_t, class Argument, typename math_t>
C10_HOST_DEVICE inline SigmoidTerms<math_t> x_sigmoid_terms(math_t x) {
  if constexpr (std::is_same_v<math_t, float>) {
    const float v = Argument::v(x);
    return sigmoid_terms_selected(v < 0.f, exp_nonpositive<scalar_t, float>(v < 0.f ? v : -v));
  } else {
    const SigmoidArgument a = Argument::template v<scalar_t>(x);
#ifdef __CUDA_ARCH__
    // float32 results on the GPU: the table form (fewer instructions than CUDA's exp) of -|v| with the sign in its
    // constants, and selects, not the double unit's arithmetic, for the terms (v_lo is 0 there).
    if constexpr (!std::is_same_v<scalar_t, double>) {
      const double t = exp_by_table<ExpOf::kNegated>(fabs(a.v));
      return {1 + t, a.v < 0 ? t : 1.0, a.v < 0 ? 1.0 : t};
    } else  // the CPU's arithmetic, and float64's on both devices
#endif
    {
      const double negative = a.v < 0 ? 1.0 : 0.0;
      const double magnitude_lo = a.v < 0 ? -a.v_lo : a.v_lo;
      const double exp_argument = a.v < 0 ? a.v : -a.v;
      const double t = exp_of(exp_argument);  // Sleef's on the CPU, a call
      return sigmoid_terms_from(negative, t * (1 - magnitude_lo));
    }
  }
}

// x sigmoid(v)'s value and slope, sigmoid(v) (1 + x v' (1 - sigmoid(v))) with v' = dv/dx. `Argument` gives v (in
// float, and in double with its rounding error for float64), v' and the x the slope's arithmetic takes (in float,
// x v' would overflow for the largest finite x, and x v' (1 - sigmoid(v)) be inf * 0: beyond where the slope is 1
// or 0 already in float, x is taken there; infinities and NaN kept).
template <typename scalar_t, class Argument>
struct XSigmoidMath {
  using math_t = wide_math_t<scalar_t>;
  static constexpr bool tabulated = true;
  C10_HOST_DEVICE static math_t value(math_t x) {
    const SigmoidTerms<math_t> terms = x_sigmoid_terms<scalar_t, Argument>(x);
    return sigmoid_quotient<scalar_t>(x * terms.sigmoid_numerator, terms.denominator);
  }
  C10_HOST_DEVICE static math_t gradient(math_t grad, math_t x_in) {
    const math_t x = in_range(x_in);
    const math_t v_slope = Argument::slope(x);
    return grad * x_sigmoid_slope<scalar_t>(x_sigmoid_terms<scalar_t, Argument>(x_in), x, v_slope);
  }
  C10_HOST_DEVICE static math_t in_range(math_t x) {
    if constexpr (std::is_same_v<math_t, float>) {
      const bool finite_beyond = !(fabsf(x) <= Argument::kFloatRange) && fabsf(x) < INFINITY;
      return finite_beyond ? (x < 0.f ? -Argument::kFloatRange : Argument::kFloatRange) : x;
    } else {
      return x;
    }
  }
};

// GELU with torch's approximate="tanh": x (1 + tanh(u)) / 2, u = sqrt(2 / pi) (x + 0.044715 x^3), which is
// x sigmoid(v) with v = 2u. The constants are torch's, as doubles. The slope cancels near its root x = -0.75.
// Beyond |x| = 20, |v| > 600 and exp(-|v|) is 0, so the slope is 1 or 0 there (bfloat16's x^3 overflows float).
constexpr double kGeluTanhScale = 2 * 0.7978845608028654;  // 2 sqrt(2 / pi), torch's kBeta doubled (exact)
constexpr double kGeluTanhCubic = 0.044715;

struct GeluTanhArgument {
  static constexpr float kFloatRange = 20.f;
  C10_HOST_DEVICE static float v(float x) {
    return float(kGeluTanhScale) * (x + float(kGeluTanhCubic) * (x * x * x));
  }
  template <typename scalar_t>
  C10_HOST_DEVICE static SigmoidArgument v(double x) {
    const double square = mul_rn(x, x);
    const double cube = mul_rn(square, x);
    const double cubic = mul_rn(kGeluTanhCubic, cube);
    const double inner = add_rn(x, cubic);
    const double v = mul_rn(kGeluTanhScale, inner);
    if constexpr (!std::is_same_v<scalar_t, double>) return {v, 0.0};
    // Each product's and sum's rounding error (exact by fma and TwoSum), carried to first order.
    const double square_lo = fma_of(x, x, -square);
    const double cube_lo = fma_of(square, x, -cube) + square_lo * x;
    const double cubic_lo = fma_of(kGeluTanhCubic, cube, -cubic) + kGeluTanhCubic * cube_lo;
    const double x_part = add_rn(inner, -cubic);
    const double inner_lo = add_rn(add_rn(x, -x_part), add_rn(cubic, -add_rn(inner, -x_part))) + cubic_lo;
    const double v_lo = fma_of(kGeluTanhScale, inner, -v) + kGeluTanhScale * inner_lo;
    return {v, fabs(x) < 1e100 ? v_lo : 0.0};  // beyond, inf and NaN: no inf - inf
  }
  template <typename math_t>
  C10_HOST_DEVICE static math_t slope(math_t x) {
    return math_t(kGeluTanhScale) * (1 + 3 * math_t(kGeluTanhCubic) * (x * x));
  }
};

template <typename scalar_t>
using GeluTanhMath = XSigmoidMath<scalar_t, GeluTanhArgument>;

// Quick GELU, x sigmoid(1.702 x) (CLIP's GELU approximation): v = 1.702 x, the constant as a double, as the
// composition `x * torch.sigmoid(1.702 * x)` takes it. Beyond |x| = 100, exp(-|v|) is 0 in float.
constexpr double kQuickGeluSlope = 1.702;

struct QuickGeluArgument {
  static constexpr float kFloatRange = 100.f;
  C10_HOST_DEVICE static float v(float x) { return float(kQuickGeluSlope) * x; }
  template <typename scalar_t>
  C10_HOST_DEVICE static SigmoidArgument v(double x) {
    const double v = mul_rn(kQuickGeluSlope, x);
    if constexpr (!std::is_same_v<scalar_t, double>) return {v, 0.0};
    return {v, fabs(x) < 1e300 ? fma_of(kQuickGeluSlope, x, -v) : 0.0};  // beyond, inf and NaN: no inf - inf
  }
  template <typename math_t>
  C10_HOST_DEVICE static math_t slope(math_t) {
    return math_t(kQuickGeluSlope);
  }
};

template <typename scalar_t>
using QuickGeluMath = XSigmoidMath<scalar_t, QuickGeluArgument>;

// torch.nn.functional.alpha_dropout in train mode, with drop probability p: a kept value v becomes
// a * v + b_keep and a dropped one b_drop (torch computes v * 0 + b_drop: NaN stays NaN), where
// a = 1 / sqrt((alpha'^2 p + 1)(1 - p)), b_keep = alpha' a p, b_drop = alpha' a (p - 1) and
// alpha' = alpha * scale, SELU's negative saturation.
struct AlphaDropoutArgs {
  double p = 0, keep_scale = 0, kept_bias = 0, alpha_a = 0;
  PhiloxSource source;
};

// p in [0, 1]. At p = 1 torch returns v * 0: nothing is kept and the dropped value is v * 0 + -0.0,
// which keeps v * 0's sign.
inline AlphaDropoutArgs alpha_dropout_args(double p, const PhiloxSource& source) {
  AlphaDropoutArgs args;
  args.p = p;
  args.source = source;
  if (p >= 1) return args;
  constexpr double alpha = kSeluAlpha * kSeluScale;
  args.keep_scale = 1 / ::sqrt((alpha * alpha * p + 1) * (1 - p));
  args.alpha_a = alpha * args.keep_scale;
  args.kept_bias = args.alpha_a * p;
  return args;
}

// The mask's random words, random_word_bits(sizeof(scalar_t)) bits an element. An element is kept when its word
// is below keep_below, 2^Bits (1 - p) rounded (2^Bits at p = 0: every word): probability 1 - p to within
// 2^-(Bits + 1), finer than the 16-bit types resolve their own values.
template <typename scalar_t>
struct AlphaDropoutMask {
  static constexpr int random_bits = random_word_bits(sizeof(scalar_t));
  using Threshold = std::conditional_t<random_bits == 16, uint32_t, uint64_t>;  // holds 2^Bits
  Threshold keep_below;
  PhiloxSource source;

  explicit AlphaDropoutMask(const AlphaDropoutArgs& args)
      : keep_below(Threshold(::nearbyint((1 - args.p) * double(uint64_t(1) << random_bits)))), source(args.source) {}

  C10_HOST_DEVICE bool kept(uint32_t bits) const { return bits < keep_below; }
};

// selu(x) then alpha dropout, in torch's order of operations: (s * (kept ? a : 0)) + bias, with the bias
// (mask - 1) * (alpha' a) + alpha' a p folded in acc_t. torch rounds each step to the tensor's dtype, so
// for the 16-bit types ours is the more accurate; on CUDA the multiply-add is fused.
// On the GPU for the 16-bit types, a and b_keep are folded into SELU's constants instead: the kept value is
// x * (C + x * C / 2) + b_keep for -2^-6 < x <= 0 (expm1 by x + x^2 / 2, relative error below 2^-14.6),
// exp2(x log2 e) * C + (b_keep - C) below, x * scale * a + b_keep above 0, with C = alpha' a. A dropped one
// is (x > 0 ? x : that value) * 0 + b_drop: NaN and +inf give NaN as torch's selu(x) * 0 + b_drop does, and
// a finite bfloat16 input whose folded product overflows float gives b_drop, not NaN. Every finite half and
// bfloat16 input stays within 0.58 of a 16-bit ulp of the float64 composition (an emulation over all of
// them, p from 0 to 0.99), including bfloat16 inputs above 3.2e38, whose scale * x overflows float in torch's
// composition and the generic path (inf where kept, NaN where dropped there). The kernel runs 92 float
// instructions a pack of 8 in place of 116: the Philox block a pack already costs most of what keeps the
// forward off a copy's bandwidth.
template <typename scalar_t>
struct SeluAlphaDropoutForward : AlphaDropoutMask<scalar_t> {
  using acc_t = opmath_t<scalar_t>;
  using Args = AlphaDropoutArgs;
  static constexpr int arity = 1;
  acc_t keep_scale, kept_bias, dropped_bias;
  float neg_scale, pos_scale, exp_bias;  // the 16-bit GPU path's folded constants

  // A zero kept bias (p = 0) is -0.0, so that a kept -0.0 stays -0.0 as in selu. At p = 1 nothing is kept
  // and a dropped value is selu(x) * 0 + -0.0: the folded kept value is selu(x) there (a = 1).
  explicit SeluAlphaDropoutForward(const Args& args)
      : AlphaDropoutMask<scalar_t>(args),
        keep_scale(acc_t(args.keep_scale)),
        kept_bias(args.kept_bias == 0 ? -acc_t(0) : acc_t(args.kept_bias)),
        dropped_bias(args.keep_scale == 0 ? -acc_t(0) : -acc_t(args.alpha_a) + acc_t(args.kept_bias)) {
    const double a = args.keep_scale == 0 ? 1 : args.keep_scale;
    neg_scale = float(kSeluAlpha * kSeluScale * a);
    pos_scale = float(kSeluScale * a);
    exp_bias = float(args.kept_bias - kSeluAlpha * kSeluScale * a);
  }

  C10_HOST_DEVICE acc_t operator()(uint32_t bits, acc_t x) const {
#ifdef __CUDA_ARCH__
    if constexpr (sizeof(scalar_t) == 2) {
      const float series = x * (neg_scale + x * (0.5f * neg_scale)) + kept_bias;
      const float negative = x > -0.015625f ? series : exp_flush_subnormal(x) * neg_scale + exp_bias;
      const float kept_value = x <= 0.f ? negative : x * pos_scale + kept_bias;
      return this->kept(bits) ? kept_value : (x <= 0.f ? negative : x) * 0.f + dropped_bias;
    }
#endif
    const bool keep = this->kept(bits);
    return SeluForward<scalar_t>{}(x) * (keep ? keep_scale : acc_t(0)) + (keep ? kept_bias : dropped_bias);
  }
};

// The gradient of SeluAlphaDropoutForward with respect to x, from x and the replayed mask:
// grad * (kept ? a : 0) * selu'(x), selu'(x) = alpha * scale * exp(x) for x <= 0, scale otherwise (NaN
// too), as torch's elu_backward takes it from the input.
template <typename scalar_t>
struct SeluAlphaDropoutBackward : AlphaDropoutMask<scalar_t> {
  using acc_t = opmath_t<scalar_t>;
  using Args = AlphaDropoutArgs;
  static constexpr int arity = 2;
  acc_t keep_scale;

  explicit SeluAlphaDropoutBackward(const Args& args)
      : AlphaDropoutMask<scalar_t>(args), keep_scale(acc_t(args.keep_scale)) {}

  C10_HOST_DEVICE acc_t operator()(uint32_t bits, acc_t grad, acc_t x) const {
    constexpr acc_t neg_coef = acc_t(kSeluAlpha) * acc_t(kSeluScale);
#ifdef __CUDA_ARCH__
    const acc_t slope = x <= acc_t(0) ? neg_coef * exp_nonpositive<scalar_t>(x) : acc_t(kSeluScale);
    return grad * (this->kept(bits) ? keep_scale : acc_t(0)) * slope;
#else
    const acc_t kept_grad = grad * (this->kept(bits) ? keep_scale : acc_t(0));
    return kept_grad * negative_branch_or(x <= acc_t(0), neg_coef, exp_nonpositive<scalar_t, acc_t>, x,
                                          acc_t(kSeluScale));
#endif
  }
};

// Functors with a `source` draw one random word of `random_bits` bits per element.
template <typename Op, typename = void>
struct IsRandom : std::false_type {};
template <typename Op>
struct IsRandom<Op, std::void_t<decltype(Op::source)>> : std::true_type {};

template <template <typename> class F>
using ArgsOf = typename F<float>::Args;

template <template <typename> class F, typename scalar_t>
F<scalar_t> make_functor(const ArgsOf<F>& args) {
  if constexpr (std::is_empty_v<ArgsOf<F>>) {
    return F<scalar_t>{};
  } else {
    return F<scalar_t>(args);
  }
}

// An activation's four ops, each spelled once as its schema: ops.cpp defines them, and every layer
// registers and names them by the name a schema begins with (`schema_name`). They follow one pattern,
// which ops.cpp checks at compile time: `name(`, `name_(`, `name.out(` and `name_backward(`.
struct Schemas {
  const char* forward;
  const char* inplace;
  const char* out;
  const char* backward;
};

// A gated activation's six ops: on the merged layout of a fused gate/up projection, x = [..., 2d] ->
// act(x[..., :d]) * x[..., d:] (`name_and_mul(`, `.out(`, `_backward(` with the [..., 2d] gradient), and on two
// tensors, act(gate) * up (`name_mul(`, `.out(`, `_backward(` with both gradients).
struct GatedSchemas {
  const char* merged;
  const char* merged_out;
  const char* merged_backward;
  const char* pair;
  const char* pair_out;
  const char* pair_backward;
};

// The elementwise activations, each once: its name, its schemas, its functors, and what its
// out-of-place form saves for the backward (`saves_input`: the input, else the result). `Backward`
// takes the gradient from the result; an activation whose out-of-place gradient needs the input has an
// `InputBackward` too. ACT_ACTIVATIONS lists them; ops.cpp, autograd.cpp, functionalize.cpp and
// batching.cpp register every entry's ops from this alone, and the backends compile every functor it
// names.
struct Selu {
  static constexpr const char* name = "selu";
  static constexpr Schemas schemas{
      "selu(Tensor x) -> Tensor",
      "selu_(Tensor(a!) x) -> Tensor(a!)",
      "selu.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)",
      "selu_backward(Tensor grad_output, Tensor self_or_result, *, bool is_result=True) -> Tensor",
  };
  static constexpr bool saves_input = true;  // as torch.selu: from the result, 16-bit gradients cancel
  static constexpr bool gradient_needs_input = false;
  template <typename T>
  using Forward = SeluForward<T>;
  template <typename T>
  using Backward = SeluBackward<T>;
  template <typename T>
  using InputBackward = SeluInputBackward<T>;
};

struct Relu {
  static constexpr const char* name = "relu";
  static constexpr Schemas schemas{
      "relu(Tensor x) -> Tensor",
      "relu_(Tensor(a!) x) -> Tensor(a!)",
      "relu.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)",
      "relu_backward(Tensor grad_output, Tensor self_or_result, *, bool is_result=True) -> Tensor",
  };
  static constexpr bool saves_input = false;  // relu'(x) and relu'(relu(x)) agree everywhere, NaN included
  static constexpr bool gradient_needs_input = false;
  static constexpr GatedSchemas gated{
      "relu_and_mul(Tensor x) -> Tensor",
      "relu_and_mul.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)",
      "relu_and_mul_backward(Tensor grad_output, Tensor x) -> Tensor",
      "relu_mul(Tensor gate, Tensor up) -> Tensor",
      "relu_mul.out(Tensor gate, Tensor up, *, Tensor(a!) out) -> Tensor(a!)",
      "relu_mul_backward(Tensor grad_output, Tensor gate, Tensor up) -> (Tensor grad_gate, Tensor grad_up)",
  };
  template <typename T>
  using Math = ReluMath<T>;
  template <typename T>
  using Forward = ReluForward<T>;
  template <typename T>
  using Backward = ReluBackward<T>;
};

// An activation computed by its `Math`, whose gradient comes from the input alone (its result does not determine
// its input, or not without a square root): `gradient_needs_input`, and its in-place form saves a copy of the input
// before overwriting it. Its descriptor adds its name and schemas.
template <template <typename> class MathOf>
struct GradientFromInput {
  static constexpr bool saves_input = true;
  static constexpr bool gradient_needs_input = true;
  template <typename T>
  using Math = MathOf<T>;
  template <typename T>
  using Forward = MathForward<MathOf<T>, T>;
  template <typename T>
  using Backward = MathBackward<MathOf<T>, T>;  // from the input
};

// Squared ReLU's result determines relu(x), but its gradient is taken from the input, as SiLU's (no square root).
struct SquaredRelu : GradientFromInput<SquaredReluMath> {
  static constexpr const char* name = "squared_relu";
  static constexpr Schemas schemas{
      "squared_relu(Tensor x) -> Tensor",
      "squared_relu_(Tensor(a!) x) -> Tensor(a!)",
      "squared_relu.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)",
      "squared_relu_backward(Tensor grad_output, Tensor self_or_result, *, bool is_result=False) -> Tensor",
  };
  static constexpr GatedSchemas gated{
      "squared_relu_and_mul(Tensor x) -> Tensor",
      "squared_relu_and_mul.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)",
      "squared_relu_and_mul_backward(Tensor grad_output, Tensor x) -> Tensor",
      "squared_relu_mul(Tensor gate, Tensor up) -> Tensor",
      "squared_relu_mul.out(Tensor gate, Tensor up, *, Tensor(a!) out) -> Tensor(a!)",
      "squared_relu_mul_backward(Tensor grad_output, Tensor gate, Tensor up) -> (Tensor grad_gate, Tensor grad_up)",
  };
};

// SiLU's result does not determine its input (silu has a minimum).
struct Silu : GradientFromInput<SiluMath> {
  static constexpr const char* name = "silu";
  static constexpr Schemas schemas{
      "silu(Tensor x) -> Tensor",
      "silu_(Tensor(a!) x) -> Tensor(a!)",
      "silu.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)",
      "silu_backward(Tensor grad_output, Tensor self_or_result, *, bool is_result=False) -> Tensor",
  };
  static constexpr GatedSchemas gated{
      "silu_and_mul(Tensor x) -> Tensor",
      "silu_and_mul.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)",
      "silu_and_mul_backward(Tensor grad_output, Tensor x) -> Tensor",
      "silu_mul(Tensor gate, Tensor up) -> Tensor",
      "silu_mul.out(Tensor gate, Tensor up, *, Tensor(a!) out) -> Tensor(a!)",
      "silu_mul_backward(Tensor grad_output, Tensor gate, Tensor up) -> (Tensor grad_gate, Tensor grad_up)",
  };
};

// GELU has a minimum too: its gradient comes from the input alone, as SiLU's.
struct Gelu : GradientFromInput<GeluMath> {
  static constexpr const char* name = "gelu";
  static constexpr Schemas schemas{
      "gelu(Tensor x) -> Tensor",
      "gelu_(Tensor(a!) x) -> Tensor(a!)",
      "gelu.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)",
      "gelu_backward(Tensor grad_output, Tensor self_or_result, *, bool is_result=False) -> Tensor",
  };
  static constexpr GatedSchemas gated{
      "gelu_and_mul(Tensor x) -> Tensor",
      "gelu_and_mul.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)",
      "gelu_and_mul_backward(Tensor grad_output, Tensor x) -> Tensor",
      "gelu_mul(Tensor gate, Tensor up) -> Tensor",
      "gelu_mul.out(Tensor gate, Tensor up, *, Tensor(a!) out) -> Tensor(a!)",
      "gelu_mul_backward(Tensor grad_output, Tensor gate, Tensor up) -> (Tensor grad_gate, Tensor grad_up)",
  };
};

struct GeluTanh : GradientFromInput<GeluTanhMath> {
  static constexpr const char* name = "gelu_tanh";
  static constexpr Schemas schemas{
      "gelu_tanh(Tensor x) -> Tensor",
      "gelu_tanh_(Tensor(a!) x) -> Tensor(a!)",
      "gelu_tanh.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)",
      "gelu_tanh_backward(Tensor grad_output, Tensor self_or_result, *, bool is_result=False) -> Tensor",
  };
  static constexpr GatedSchemas gated{
      "gelu_tanh_and_mul(Tensor x) -> Tensor",
      "gelu_tanh_and_mul.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)",
      "gelu_tanh_and_mul_backward(Tensor grad_output, Tensor x) -> Tensor",
      "gelu_tanh_mul(Tensor gate, Tensor up) -> Tensor",
      "gelu_tanh_mul.out(Tensor gate, Tensor up, *, Tensor(a!) out) -> Tensor(a!)",
      "gelu_tanh_mul_backward(Tensor grad_output, Tensor gate, Tensor up) -> (Tensor grad_gate, Tensor grad_up)",
  };
};

struct QuickGelu : GradientFromInput<QuickGeluMath> {
  static constexpr const char* name = "quick_gelu";
  static constexpr Schemas schemas{
      "quick_gelu(Tensor x) -> Tensor",
      "quick_gelu_(Tensor(a!) x) -> Tensor(a!)",
      "quick_gelu.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)",
      "quick_gelu_backward(Tensor grad_output, Tensor self_or_result, *, bool is_result=False) -> Tensor",
  };
  static constexpr GatedSchemas gated{
      "quick_gelu_and_mul(Tensor x) -> Tensor",
      "quick_gelu_and_mul.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)",
      "quick_gelu_and_mul_backward(Tensor grad_output, Tensor x) -> Tensor",
      "quick_gelu_mul(Tensor gate, Tensor up) -> Tensor",
      "quick_gelu_mul.out(Tensor gate, Tensor up, *, Tensor(a!) out) -> Tensor(a!)",
      "quick_gelu_mul_backward(Tensor grad_output, Tensor gate, Tensor up) -> (Tensor grad_gate, Tensor grad_up)",
  };
};

#define ACT_ACTIVATIONS(X) X(Selu) X(Relu) X(Silu) X(Gelu) X(GeluTanh) X(SquaredRelu) X(QuickGelu)

// The activations with gated forms (a `gated` member: their schemas, and `Math`), and those forms' functors.
#define ACT_GATED(X) X(Relu) X(Silu) X(Gelu) X(GeluTanh) X(SquaredRelu) X(QuickGelu)

template <class Op>
struct GatedOf {
  template <typename T>
  using Forward = GatedForward<typename Op::template Math<T>, T>;
  template <typename T>
  using Backward = GatedBackward<typename Op::template Math<T>, T>;
};

// Whether an activation has a gradient from the input beside the one from the result.
template <typename Op, typename = void>
struct HasInputBackward : std::false_type {};
template <typename Op>
struct HasInputBackward<Op, std::void_t<typename Op::template InputBackward<float>>> : std::true_type {};

// The functors the backends compile beside every activation's Forward and Backward: the gradients from
// the input, and those of the random op (selu_alpha_dropout, in ops.cpp).
#define ACT_OTHER_FUNCTORS(X) X(SeluInputBackward) X(SeluAlphaDropoutForward) X(SeluAlphaDropoutBackward)

}  // namespace act
