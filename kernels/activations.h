#pragma once
// The scalar math of every op, shared by the CPU loop and the CUDA launcher.
// Each functor works in the compute type `acc_t` (float for float/half/bfloat16,
// double for double) and says how many tensor inputs it reads.

#include <c10/macros/Macros.h>

#include <math.h>

namespace act {

// torch.selu's constants.
constexpr double kSeluAlpha = 1.6732632423543772848170429916717;
constexpr double kSeluScale = 1.0507009873554804934193349852946;

C10_HOST_DEVICE inline float expm1_of(float x) { return ::expm1f(x); }
C10_HOST_DEVICE inline double expm1_of(double x) { return ::expm1(x); }

// The expressions follow ATen's elu kernels term for term (alpha * scale folded in acc_t,
// `<= 0` picking the negative branch) so results round exactly as torch.selu's do.
template <typename acc_t>
struct SeluForward {
  static constexpr int arity = 1;
  C10_HOST_DEVICE acc_t operator()(acc_t x) const {
    constexpr acc_t neg_coef = acc_t(kSeluAlpha) * acc_t(kSeluScale);
    // expm1, not exp(x) - 1: the latter loses every digit as x -> 0.
    return x <= acc_t(0) ? expm1_of(x) * neg_coef : x * acc_t(kSeluScale);
  }
};

// d selu / dx from the result r: scale for r > 0, scale * alpha * exp(x) = r + scale * alpha otherwise.
template <typename acc_t>
struct SeluBackward {
  static constexpr int arity = 2;
  C10_HOST_DEVICE acc_t operator()(acc_t grad, acc_t result) const {
    constexpr acc_t neg_coef = acc_t(kSeluAlpha) * acc_t(kSeluScale);
    // One multiply by a selected factor: branch-free, so the CPU loop vectorizes.
    return grad * (result <= acc_t(0) ? result + neg_coef : acc_t(kSeluScale));
  }
};

template <typename acc_t>
struct ReluForward {
  static constexpr int arity = 1;
  C10_HOST_DEVICE acc_t operator()(acc_t x) const {
    // NaN fails both comparisons and passes through, as torch.relu lets it.
    return x > acc_t(0) || x != x ? x : acc_t(0);
  }
};

// threshold_backward's rule: the gradient is dropped wherever the result is <= 0.
template <typename acc_t>
struct ReluBackward {
  static constexpr int arity = 2;
  C10_HOST_DEVICE acc_t operator()(acc_t grad, acc_t result) const {
    return result <= acc_t(0) ? acc_t(0) : grad;
  }
};

enum class Activation { selu_forward, selu_backward, relu_forward, relu_backward };

// Calls `f` with the functor for `kind` in compute type acc_t; the backends use this to
// turn the run-time op choice into a compile-time functor.
template <typename acc_t, typename F>
void with_functor(Activation kind, F&& f) {
  switch (kind) {
    case Activation::selu_forward: return f(SeluForward<acc_t>{});
    case Activation::selu_backward: return f(SeluBackward<acc_t>{});
    case Activation::relu_forward: return f(ReluForward<acc_t>{});
    case Activation::relu_backward: return f(ReluBackward<acc_t>{});
  }
}

}  // namespace act
