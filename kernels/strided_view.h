#pragma once
// The backends, and the one description of an elementwise call's operands they all take: any
// strides, dimensions merged where memory allows, so that the layouts met in practice arrive as
// one dimension (dense) or two (rows of a slice, chunk or narrow).

#include <torch/headeronly/core/ScalarType.h>
#include <torch/headeronly/util/BFloat16.h>
#include <torch/headeronly/util/Half.h>

#include <cstdint>
#include <stdexcept>

#include "activations.h"

namespace act {

constexpr int kMaxOperands = 5;  // up to two outputs and three inputs (a gated op's backward)
// Every tensor's view fits: each dimension kept has a size of at least 2, and a tensor has fewer than
// 2^63 elements, so at most 62 remain.
constexpr int kMaxDims = 64;

// Element (i_0, i_1, ...) of operand k (the outputs first, then the inputs) sits at sum_d i_d * strides[k][d]
// elements from data[k]. Dimensions run innermost first; sizes are all > 1 except in a view of
// one element, which has one dimension of size 1.
struct StridedView {
  int operands = 0;
  int ndim = 0;
  int64_t sizes[kMaxDims];
  int64_t strides[kMaxOperands][kMaxDims];
  char* data[kMaxOperands];

  int64_t numel() const {
    int64_t n = 1;
    for (int d = 0; d < ndim; ++d) n *= sizes[d];
    return n;
  }
};

// f(scalar_t{}) for the storage type of `dtype`, one of the four the ops take (their checks come first).
template <class Fn>
void dispatch_floating(c10::ScalarType dtype, const Fn& f) {
  switch (dtype) {
    case c10::ScalarType::Float:
      return f(float{});
    case c10::ScalarType::Double:
      return f(double{});
    case c10::ScalarType::Half:
      return f(c10::Half{});
    case c10::ScalarType::BFloat16:
      return f(c10::BFloat16{});
    default:
      throw std::invalid_argument("act: a kernel was reached with a dtype the op's checks refuse");
  }
}

// outputs = F(inputs...) over the view, with F<scalar_t> built from `args` for the view's dtype. Each
// backend compiles these for the functors of activations.h's lists.
template <template <typename> class F>
void cpu_elementwise(c10::ScalarType dtype, const StridedView& view, const ArgsOf<F>& args);

// Which compiled copy of the CPU loop runs on this machine: "x86-64-v3" or "baseline".
const char* cpu_loop_name();

#ifdef ACT_WITH_CUDA
template <template <typename> class F>
void cuda_elementwise(c10::ScalarType dtype, int device, const StridedView& view, const ArgsOf<F>& args);
#endif

}  // namespace act
