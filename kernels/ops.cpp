// The `act` operator schemas and their CPU/CUDA kernels: argument checks, output allocation,
// and describing the operands' layout to the backends.
#include <ATen/MemoryOverlap.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty_like.h>
#include <c10/core/ScalarType.h>
#include <c10/util/ArrayRef.h>
#include <c10/util/SmallVector.h>
#include <torch/library.h>

#include <cstdlib>
#include <string>
#include <utility>

#include "backends.h"

namespace act {
namespace {

const char* op_name(Activation kind) {
  switch (kind) {
    case Activation::selu_forward: return "act.selu";
    case Activation::selu_backward: return "act.selu_backward";
    case Activation::relu_forward: return "act.relu";
    case Activation::relu_backward: return "act.relu_backward";
  }
  return "act";
}

// "torch.int64", as Python prints a dtype: the same words whether the check fails here or in the fake
// kernel under torch.compile (streaming a ScalarType would say "Long").
std::string dtype_name(c10::ScalarType dtype) { return "torch." + std::string(c10::getDtypeNames(dtype).first); }

void check_dtype(Activation kind, const at::Tensor& t, const char* arg) {
  const auto dtype = t.scalar_type();
  TORCH_CHECK_TYPE(dtype == at::kFloat || dtype == at::kDouble || dtype == at::kHalf || dtype == at::kBFloat16,
                   op_name(kind), ": expected ", arg, " of dtype float32, float64, float16 or bfloat16, but got ",
                   dtype_name(dtype));
}

// "[4, 5]". Formatted here rather than by streaming an IntArrayRef, which crashed inside
// TORCH_CHECK's message builder with torch 2.11's headers.
std::string shape_str(c10::IntArrayRef sizes) {
  std::string s = "[";
  for (size_t i = 0; i < sizes.size(); ++i) s += (i ? ", " : "") + std::to_string(sizes[i]);
  return s + "]";
}

// `t` must match `like` in device, dtype and shape: the ops neither broadcast, cast nor resize.
void check_matches(Activation kind, const at::Tensor& t, const char* arg, const at::Tensor& like,
                   const char* like_arg) {
  TORCH_CHECK(t.device() == like.device(), op_name(kind), ": expected ", arg, " on the device of ", like_arg, " (",
              like.device(), "), but got ", t.device());
  TORCH_CHECK_TYPE(t.scalar_type() == like.scalar_type(), op_name(kind), ": expected ", arg, " of the dtype of ",
                   like_arg, " (", dtype_name(like.scalar_type()), "), but got ", dtype_name(t.scalar_type()));
  TORCH_CHECK(t.sizes() == like.sizes(), op_name(kind), ": expected ", arg, " of the shape of ", like_arg, " ",
              shape_str(like.sizes()), ", but got ", shape_str(t.sizes()));
}

// The operands as one StridedView: dimensions ordered innermost first by the output's strides
// (the inputs' break ties; a stride of 0 says nothing about order), size-1 dimensions dropped,
// and neighbours merged where every operand steps through them as through one. False when more
// than kMaxDims dimensions remain.
bool make_view(const at::Tensor& out, c10::ArrayRef<at::Tensor> inputs, StridedView& view) {
  c10::SmallVector<const at::Tensor*, kMaxOperands> operands{&out};
  for (const auto& input : inputs) operands.push_back(&input);
  c10::SmallVector<int64_t, 8> dims;
  for (int64_t d = out.dim() - 1; d >= 0; --d) {
    if (out.size(d) != 1) dims.push_back(d);
  }
  // Insertion sort, as TensorIterator does: skipping zero strides makes this order partial, which
  // std::sort does not allow.
  const auto inner_than = [&](int64_t a, int64_t b) {
    for (const at::Tensor* t : operands) {
      const int64_t sa = std::abs(t->stride(a)), sb = std::abs(t->stride(b));
      if (sa != sb && sa != 0 && sb != 0) return sa < sb;
    }
    return false;
  };
  for (size_t i = 1; i < dims.size(); ++i) {
    for (size_t j = i; j > 0 && inner_than(dims[j], dims[j - 1]); --j) std::swap(dims[j], dims[j - 1]);
  }
  view.ndim = 0;
  for (const int64_t d : dims) {
    const int last = view.ndim - 1;
    bool merges = last >= 0;
    for (size_t k = 0; merges && k < operands.size(); ++k) {
      merges = operands[k]->stride(d) == view.strides[k][last] * view.sizes[last];
    }
    if (merges) {
      view.sizes[last] *= out.size(d);
      continue;
    }
    if (view.ndim == kMaxDims) return false;
    view.sizes[view.ndim] = out.size(d);
    for (size_t k = 0; k < operands.size(); ++k) view.strides[k][view.ndim] = operands[k]->stride(d);
    ++view.ndim;
  }
  if (view.ndim == 0) {  // one element
    view.ndim = 1;
    view.sizes[0] = 1;
    for (size_t k = 0; k < operands.size(); ++k) view.strides[k][0] = 1;
  }
  for (size_t k = 0; k < operands.size(); ++k) {
    view.data[k] = static_cast<char*>(const_cast<void*>(operands[k]->const_data_ptr()));
  }
  return true;
}

void run_view(Activation kind, const at::Tensor& out, const StridedView& view) {
#ifdef ACT_WITH_CUDA
  if (out.is_cuda()) return cuda_activation(kind, out.scalar_type(), out.device(), view);
#endif
  TORCH_CHECK(out.is_cpu(), op_name(kind), ": tensors on ", out.device(), " are not supported by this build");
  cpu_activation(kind, out.scalar_type(), view);
}

// out = kind(inputs...), in one pass over any layouts: each operand is read and written where it
// lies, with no staging copies. Only a layout of more than kMaxDims unmergeable dimensions goes
// through dense copies.
void run(Activation kind, const at::Tensor& out, std::initializer_list<at::Tensor> operands) {
  if (out.numel() == 0) return;
  StridedView view;
  if (make_view(out, operands, view)) return run_view(kind, out, view);
  const at::Tensor dense_out = at::empty_like(out, at::MemoryFormat::Contiguous);
  c10::SmallVector<at::Tensor, 2> inputs;
  for (const auto& input : operands) inputs.push_back(input.contiguous());
  TORCH_INTERNAL_ASSERT(make_view(dense_out, inputs, view));
  run_view(kind, dense_out, view);
  out.copy_(dense_out);
}

template <Activation kind>
at::Tensor forward(const at::Tensor& x) {
  check_dtype(kind, x, "x");
  at::Tensor out = at::empty_like(x);
  run(kind, out, {x});
  return out;
}

template <Activation kind>
at::Tensor& forward_(at::Tensor& x) {
  check_dtype(kind, x, "x");
  at::assert_no_internal_overlap(x);
  run(kind, x, {x});
  return x;
}

template <Activation kind>
at::Tensor& forward_out(const at::Tensor& x, at::Tensor& out) {
  check_dtype(kind, x, "x");
  check_matches(kind, out, "out", x, "x");
  at::assert_no_internal_overlap(out);
  at::assert_no_partial_overlap(out, x);
  run(kind, out, {x});
  return out;
}

template <Activation kind>
at::Tensor backward(const at::Tensor& grad_output, const at::Tensor& result) {
  check_dtype(kind, result, "result");
  check_matches(kind, grad_output, "grad_output", result, "result");
  at::Tensor grad_input = at::empty_like(result);
  run(kind, grad_input, {grad_output, result});
  return grad_input;
}

void register_kernels(torch::Library& m) {
  m.impl("selu", &forward<Activation::selu_forward>);
  m.impl("selu_", &forward_<Activation::selu_forward>);
  m.impl("selu.out", &forward_out<Activation::selu_forward>);
  m.impl("selu_backward", &backward<Activation::selu_backward>);
  m.impl("relu", &forward<Activation::relu_forward>);
  m.impl("relu_", &forward_<Activation::relu_forward>);
  m.impl("relu.out", &forward_out<Activation::relu_forward>);
  m.impl("relu_backward", &backward<Activation::relu_backward>);
}

}  // namespace

TORCH_LIBRARY(act, m) {
  m.def("selu(Tensor x) -> Tensor");
  m.def("selu_(Tensor(a!) x) -> Tensor(a!)");
  m.def("selu.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("selu_backward(Tensor grad_output, Tensor result) -> Tensor");
  m.def("relu(Tensor x) -> Tensor");
  m.def("relu_(Tensor(a!) x) -> Tensor(a!)");
  m.def("relu.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("relu_backward(Tensor grad_output, Tensor result) -> Tensor");
}

TORCH_LIBRARY_IMPL(act, CPU, m) { register_kernels(m); }

#ifdef ACT_WITH_CUDA
TORCH_LIBRARY_IMPL(act, CUDA, m) { register_kernels(m); }
#endif

}  // namespace act
