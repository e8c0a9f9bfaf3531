// The `act` operator schemas and their CPU/CUDA kernels: argument checks, output allocation,
// and bringing any layout to the dense form the backends compute on.
#include <ATen/MemoryOverlap.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty_like.h>
#include <c10/util/SmallVector.h>
#include <torch/library.h>

#include <string>

#include "dense_kernels.h"

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

void check_dtype(Activation kind, const at::Tensor& t, const char* arg) {
  const auto dtype = t.scalar_type();
  TORCH_CHECK_TYPE(dtype == at::kFloat || dtype == at::kDouble || dtype == at::kHalf || dtype == at::kBFloat16,
                   op_name(kind), ": expected ", arg, " of dtype float32, float64, float16 or bfloat16, but got ",
                   dtype);
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
                   like_arg, " (", like.scalar_type(), "), but got ", t.scalar_type());
  TORCH_CHECK(t.sizes() == like.sizes(), op_name(kind), ": expected ", arg, " of the shape of ", like_arg, " ",
              shape_str(like.sizes()), ", but got ", shape_str(t.sizes()));
}

// Same element at the same memory offset: strides agree wherever a dimension has more than one element.
bool same_layout(const at::Tensor& a, const at::Tensor& b) {
  for (int64_t d = 0; d < a.dim(); ++d) {
    if (a.size(d) > 1 && a.stride(d) != b.stride(d)) return false;
  }
  return true;
}

void run_dense(Activation kind, const at::Tensor& out, c10::ArrayRef<at::Tensor> inputs) {
#ifdef ACT_WITH_CUDA
  if (out.is_cuda()) return cuda_activation(kind, out, inputs);
#endif
  TORCH_CHECK(out.is_cpu(), op_name(kind), ": tensors on ", out.device(), " are not supported by this build");
  cpu_activation(kind, out, inputs);
}

// out = kind(inputs...) for any layouts. The common case (out dense, inputs laid out alike,
// in-place included) goes straight to the backend; otherwise operands are copied into a
// dense layout first, and the result copied back into a non-dense `out`.
void run(Activation kind, const at::Tensor& out, std::initializer_list<at::Tensor> operands) {
  if (out.numel() == 0) return;
  const at::Tensor dense_out =
      out.is_non_overlapping_and_dense() ? out : at::empty_like(out, at::MemoryFormat::Contiguous);
  c10::SmallVector<at::Tensor, 2> inputs(operands.begin(), operands.end());
  for (auto& input : inputs) {
    if (!same_layout(input, dense_out)) input = at::empty_like(dense_out).copy_(input);
  }
  run_dense(kind, dense_out, inputs);
  if (!dense_out.is_same(out)) out.copy_(dense_out);
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
