#pragma once
// The backends, and the one description of an elementwise call's operands they all take: any
// strides, dimensions merged where memory allows, so that the layouts met in practice arrive as
// one dimension (dense) or two (rows of a slice, chunk or narrow).

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>
#include <c10/util/ArrayRef.h>

#include <cstdint>
#include <optional>

#include "activations.h"

namespace act {

constexpr int kMaxOperands = 3;  // the output and up to two inputs
constexpr int kMaxDims = 25;     // as ATen's TensorIterator; ops.cpp copies rarer layouts to dense first

// Element (i_0, i_1, ...) of operand k (0 is the output) sits at sum_d i_d * strides[k][d]
// elements from data[k]. Dimensions run innermost first; sizes are all > 1 except in a view of
// one element, which has one dimension of size 1.
struct StridedView {
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

// out = F(inputs...) over the view, with F<scalar_t> built from `args` for the view's dtype. Each
// backend compiles these for the functors of activations.h's lists.
template <template <typename> class F>
void cpu_elementwise(c10::ScalarType dtype, const StridedView& view, const ArgsOf<F>& args);

// Which compiled copy of the CPU loop runs on this machine: "x86-64-v3" or "baseline".
const char* cpu_loop_name();

#ifdef ACT_WITH_CUDA
template <template <typename> class F>
void cuda_elementwise(c10::ScalarType dtype, c10::Device device, const StridedView& view, const ArgsOf<F>& args);

// The Philox state of `device`'s generator (the default one when none is given) for one launch,
// advanced past the `increment` words per element group the launch draws.
at::PhiloxCudaState cuda_philox_state(const std::optional<at::Generator>& generator, c10::Device device,
                                      uint64_t increment);
#endif

}  // namespace act
