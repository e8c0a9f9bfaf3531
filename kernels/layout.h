#pragma once
// Describing an elementwise call's operands to the backends.

#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <memory>
#include <stdexcept>
#include <utility>

#include "strided_view.h"

namespace act {

// The operands (the outputs, then the inputs; all of one shape) as one StridedView: dimensions ordered
// innermost first by the first output's strides (the other operands' break ties; a stride of 0 says nothing
// about order), size-1 dimensions dropped, and neighbours merged where every operand steps through them as
// through one.
template <class Tensor>
void make_view(std::initializer_list<Tensor> outputs, std::initializer_list<Tensor> inputs, StridedView& view) {
  if (outputs.size() + inputs.size() > size_t(kMaxOperands)) throw std::logic_error("act: too many operands");
  const Tensor* operands[kMaxOperands];
  int n_operands = 0;
  for (const Tensor& t : outputs) operands[n_operands++] = &t;
  for (const Tensor& t : inputs) operands[n_operands++] = &t;
  const Tensor& out = *outputs.begin();
  constexpr int64_t kLocalDims = 32;
  int64_t local_dims[kLocalDims];
  std::unique_ptr<int64_t[]> heap_dims;
  int64_t* dims = out.dim() <= kLocalDims ? local_dims : (heap_dims = std::make_unique<int64_t[]>(out.dim())).get();
  int64_t n_dims = 0;
  for (int64_t d = out.dim() - 1; d >= 0; --d) {
    if (out.size(d) != 1) dims[n_dims++] = d;
  }
  // Insertion sort, as TensorIterator does: skipping zero strides makes this order partial, which
  // std::sort does not allow.
  const auto inner_than = [&](int64_t a, int64_t b) {
    for (int k = 0; k < n_operands; ++k) {
      const int64_t sa = std::abs(operands[k]->stride(a)), sb = std::abs(operands[k]->stride(b));
      if (sa != sb && sa != 0 && sb != 0) return sa < sb;
    }
    return false;
  };
  for (int64_t i = 1; i < n_dims; ++i) {
    for (int64_t j = i; j > 0 && inner_than(dims[j], dims[j - 1]); --j) std::swap(dims[j], dims[j - 1]);
  }
  view.operands = n_operands;
  view.ndim = 0;
  for (int64_t i = 0; i < n_dims; ++i) {
    const int64_t d = dims[i];
    const int last = view.ndim - 1;
    bool merges = last >= 0;
    for (int k = 0; merges && k < n_operands; ++k) {
      merges = operands[k]->stride(d) == view.strides[k][last] * view.sizes[last];
    }
    if (merges) {
      view.sizes[last] *= out.size(d);
      continue;
    }
    if (view.ndim == kMaxDims) throw std::length_error("act: more dimensions of size > 1 than elements allow");
    view.sizes[view.ndim] = out.size(d);
    for (int k = 0; k < n_operands; ++k) view.strides[k][view.ndim] = operands[k]->stride(d);
    ++view.ndim;
  }
  if (view.ndim == 0) {  // one element
    view.ndim = 1;
    view.sizes[0] = 1;
    for (int k = 0; k < n_operands; ++k) view.strides[k][0] = 1;
  }
  for (int k = 0; k < n_operands; ++k) {
    view.data[k] = static_cast<char*>(const_cast<void*>(operands[k]->const_data_ptr()));
  }
}

// outputs = F(inputs...), in one pass over any layouts: each operand is read and written where it
// lies, with no staging copies. `Build::run_backend<F>(out, view, args)` runs the build's backend.
template <template <typename> class F, class Build, class Tensor>
void run_elementwise(std::initializer_list<Tensor> outputs, std::initializer_list<Tensor> inputs,
                     const ArgsOf<F>& args) {
  static_assert(kOperandsOf<F<float>> <= kMaxOperands, "a functor's operands fit a view");
  const Tensor& out = *outputs.begin();
  if (out.numel() == 0) return;
  StridedView view;
  make_view(outputs, inputs, view);
  Build::template run_backend<F>(out, view, args);
}

}  // namespace act
