#pragma once
// The scalar math of every op, shared by the CPU loop and the CUDA launcher.
// Each functor is instantiated for a storage type `scalar_t`, computes in `acc_t` (for the
// arithmetic ops float for float/half/bfloat16, double for double) and says how many tensor
// inputs it reads.

#include <ATen/OpMathType.h>
#include <c10/macros/Macros.h>
#include <c10/util/bit_cast.h>

#include <math.h>
#include <stdint.h>

#include <type_traits>

namespace act {

// torch.selu's constants.
constexpr double kSeluAlpha = 1.6732632423543772848170429916717;
constexpr double kSeluScale = 1.0507009873554804934193349852946;

C10_HOST_DEVICE inline float expm1_of(float x) { return ::expm1f(x); }
C10_HOST_DEVICE inline double expm1_of(double x) { return ::expm1(x); }

#ifndef __CUDA_ARCH__
// expm1(x) for float x <= 0 on the CPU, in double arithmetic the compiler vectorizes (a call to
// expm1f keeps the whole loop scalar): x = k ln2 + r with |r| <= ln2 / 2, expm1(r) by its Taylor
// series to r^11 (relative error < 1e-12), and expm1(x) = 2^k expm1(r) + (2^k - 1). Rounded to
// float that is expm1f's correctly rounded value, barring near-ties. Positive x is clamped to 0
// (SELU discards that branch), x < -100 to -100 (the result is -1 either way); NaN passes.
inline float expm1_nonpositive_host(float x_in) {
  const double x = x_in > 0.f ? 0.0 : x_in < -100.f ? -100.0 : double(x_in);
  constexpr double kRound = 0x1.8p52;  // adding it rounds to an integer, kept in the low bits
  constexpr double kLn2Hi = 0x1.62e42feep-1;  // k * kLn2Hi is exact for |k| < 2^11
  constexpr double kLn2Lo = 0x1.a39ef35793c76p-33;
  const double shifted = x * 0x1.71547652b82fep0 + kRound;
  const double k = shifted - kRound;
  const double r = (x - k * kLn2Hi) - k * kLn2Lo;
  // r * (1 + ...), not r + r^2 (...): -0.0 stays -0.0.
  const double p =
      r * (1 + r * (1. / 2 + r * (1. / 6 + r * (1. / 24 + r * (1. / 120 + r * (1. / 720 + r * (1. / 5040 +
      r * (1. / 40320 + r * (1. / 362880 + r * (1. / 3628800 + r * (1. / 39916800)))))))))));
  const uint64_t k_bits = c10::bit_cast<uint64_t>(shifted) - c10::bit_cast<uint64_t>(kRound);  // k, two's complement
  const double two_k = c10::bit_cast<double>((k_bits + 1023) << 52);
  return static_cast<float>(k == 0 ? p : two_k * p + (two_k - 1));
}
#endif

// expm1(x) for x <= 0. On the GPU, for results rounded to a 16-bit type, the hardware exp2
// (1 - 2^-18 accurate here) and a short series near 0, where exp(x) - 1 would cancel (error
// below x^5 / 120), are far inside half a 16-bit ulp and cost a fraction of expm1f, whose
// instruction count otherwise keeps 16-bit SELU off the memory roofline.
template <typename scalar_t, typename acc_t>
C10_HOST_DEVICE inline acc_t expm1_nonpositive(acc_t x) {
#ifdef __CUDA_ARCH__
  if constexpr (sizeof(scalar_t) == 2) {
    const float series = x * (1.f + x * (0.5f + x * (1.f / 6 + x * (1.f / 24))));
    return x > -0.03125f ? series : __expf(x) - 1.f;
  }
#else
  if constexpr (std::is_same_v<acc_t, float>) return expm1_nonpositive_host(x);
#endif
  return expm1_of(x);
}

// The expressions follow ATen's elu kernels term for term (alpha * scale folded in acc_t,
// `<= 0` picking the negative branch) so results round exactly as torch.selu's do.
template <typename scalar_t>
struct SeluForward {
  using acc_t = at::opmath_type<scalar_t>;
  static constexpr int arity = 1;
  C10_HOST_DEVICE acc_t operator()(acc_t x) const {
    constexpr acc_t neg_coef = acc_t(kSeluAlpha) * acc_t(kSeluScale);
    // expm1, not exp(x) - 1: the latter loses every digit as x -> 0.
    return x <= acc_t(0) ? expm1_nonpositive<scalar_t>(x) * neg_coef : x * acc_t(kSeluScale);
  }
};

// d selu / dx from the result r: scale for r > 0, scale * alpha * exp(x) = r + scale * alpha otherwise.
template <typename scalar_t>
struct SeluBackward {
  using acc_t = at::opmath_type<scalar_t>;
  static constexpr int arity = 2;
  C10_HOST_DEVICE acc_t operator()(acc_t grad, acc_t result) const {
    constexpr acc_t neg_coef = acc_t(kSeluAlpha) * acc_t(kSeluScale);
    // One multiply by a selected factor: branch-free, so the CPU loop vectorizes. A NaN result
    // takes the negative branch and yields NaN, as torch's elu_backward does.
    return grad * (result > acc_t(0) ? acc_t(kSeluScale) : result + neg_coef);
  }
};

// ReLU only selects, so it works on the stored values themselves (acc_t = scalar_t): no round trip
// through float that would change a 16-bit NaN's bits.
template <typename scalar_t>
struct ReluForward {
  using acc_t = scalar_t;
  static constexpr int arity = 1;
  C10_HOST_DEVICE acc_t operator()(acc_t x) const {
    // NaN passes through. torch.relu keeps -0.0 on the CPU and returns +0.0 for it on CUDA.
#ifdef __CUDA_ARCH__
    return x <= acc_t(0) ? acc_t(0) : x;
#else
    return x < acc_t(0) ? acc_t(0) : x;
#endif
  }
};

// threshold_backward's rule: the gradient is dropped wherever the result is <= 0.
template <typename scalar_t>
struct ReluBackward {
  using acc_t = scalar_t;
  static constexpr int arity = 2;
  C10_HOST_DEVICE acc_t operator()(acc_t grad, acc_t result) const {
    return result <= acc_t(0) ? acc_t(0) : grad;
  }
};

enum class Activation { selu_forward, selu_backward, relu_forward, relu_backward };

// Calls `f` with the functor for `kind` on storage type scalar_t; the backends use this to
// turn the run-time op choice into a compile-time functor.
template <typename scalar_t, typename F>
void with_functor(Activation kind, F&& f) {
  switch (kind) {
    case Activation::selu_forward: return f(SeluForward<scalar_t>{});
    case Activation::selu_backward: return f(SeluBackward<scalar_t>{});
    case Activation::relu_forward: return f(ReluForward<scalar_t>{});
    case Activation::relu_backward: return f(ReluBackward<scalar_t>{});
  }
}

}  // namespace act
