// Autograd for every `act` op, in C++ at the Autograd key: a Python-registered autograd
// formula costs about 3x the per-call host time of a C++ one (see README, "Design").
#include <ATen/core/grad_mode.h>
#include <ATen/TensorOperators.h>
#include <ATen/ops/where.h>
#include <torch/csrc/autograd/VariableTypeUtils.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/library.h>

#include "op_handles.h"

namespace act {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

bool records_graph(std::initializer_list<at::Tensor> tensors) {
  if (!at::GradMode::is_enabled()) return false;
  for (const auto& t : tensors) {
    if (t.requires_grad()) return true;
  }
  return false;
}

// Mutation must be visible to autograd's saved-tensor checks, as ATen's in-place ops make it.
at::Tensor& mutated(at::Tensor& t) {
  torch::autograd::impl::bump_version(t);
  return t;
}

// d(backward(grad, result)) / d(result), given the incoming gradient `gg`.
at::Tensor backward_grad_of_result(Selu, const at::Tensor& gg, const at::Tensor& grad, const at::Tensor& result) {
  return at::where(result <= 0, gg * grad, 0);
}

// relu_backward is piecewise constant in the result.
at::Tensor backward_grad_of_result(Relu, const at::Tensor&, const at::Tensor&, const at::Tensor&) {
  return at::Tensor();
}

// The gradient comes from the forward's result, so in-place forwards lose nothing they need.
template <class Op>
struct ForwardFunction : torch::autograd::Function<ForwardFunction<Op>> {
  static at::Tensor forward(AutogradContext* ctx, at::Tensor x, bool inplace) {
    at::AutoDispatchBelowADInplaceOrView guard;
    at::Tensor result;
    if (inplace) {
      result = mutated(inplace_op<Op>().call(x));
      ctx->mark_dirty({x});
    } else {
      result = forward_op<Op>().call(x);
    }
    ctx->save_for_backward({result});
    return result;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const at::Tensor result = ctx->get_saved_variables()[0];
    return {backward_op<Op>().call(grad_outputs[0], result), at::Tensor()};
  }
};

// The backward ops are differentiable too, for double backward.
template <class Op>
struct BackwardFunction : torch::autograd::Function<BackwardFunction<Op>> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& grad_output, const at::Tensor& result) {
    at::AutoDispatchBelowADInplaceOrView guard;
    ctx->save_for_backward({grad_output, result});
    return backward_op<Op>().call(grad_output, result);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& gg = grad_outputs[0];
    return {
        ctx->needs_input_grad(0) ? backward_op<Op>().call(gg, saved[1]) : at::Tensor(),
        ctx->needs_input_grad(1) ? backward_grad_of_result(Op{}, gg, saved[0], saved[1]) : at::Tensor(),
    };
  }
};

template <class Op>
at::Tensor forward_autograd(const at::Tensor& x) {
  if (records_graph({x})) return ForwardFunction<Op>::apply(x, false);
  at::AutoDispatchBelowADInplaceOrView guard;
  return forward_op<Op>().call(x);
}

template <class Op>
at::Tensor& inplace_autograd(at::Tensor& x) {
  if (records_graph({x})) {
    // Before any write: a refused in-place call leaves its input as it was.
    torch::autograd::check_inplace(x, /*requires_grad=*/true);
    ForwardFunction<Op>::apply(x, true);
    return x;
  }
  {
    at::AutoDispatchBelowADInplaceOrView guard;
    inplace_op<Op>().call(x);
  }
  return mutated(x);
}

template <class Op>
at::Tensor& out_autograd(const at::Tensor& x, at::Tensor& out) {
  if (records_graph({x, out})) torch::autograd::throw_error_out_requires_grad(Op::forward);
  {
    at::AutoDispatchBelowADInplaceOrView guard;
    out_op<Op>().call(x, out);
  }
  return mutated(out);
}

template <class Op>
at::Tensor backward_autograd(const at::Tensor& grad_output, const at::Tensor& result) {
  if (records_graph({grad_output, result})) return BackwardFunction<Op>::apply(grad_output, result);
  at::AutoDispatchBelowADInplaceOrView guard;
  return backward_op<Op>().call(grad_output, result);
}

template <class Op>
void register_autograd(torch::Library& m, const char* name) {
  const std::string base(name);
  m.impl(base.c_str(), &forward_autograd<Op>);
  m.impl((base + "_").c_str(), &inplace_autograd<Op>);
  m.impl((base + ".out").c_str(), &out_autograd<Op>);
  m.impl((base + "_backward").c_str(), &backward_autograd<Op>);
}

}  // namespace

TORCH_LIBRARY_IMPL(act, Autograd, m) {
  register_autograd<Selu>(m, "selu");
  register_autograd<Relu>(m, "relu");
}

}  // namespace act
