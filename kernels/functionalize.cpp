// Functionalization of the mutating ops: under torch.compile (and torch.func.functionalize)
// selu_(x) becomes x <- selu(x) and selu(x, out=o) becomes o <- selu(x) (so too the gated out= forms), so
// compiled graphs hold only functional ops. Written here rather than left to torch's automatic path because
// that path only accepts ops returning their mutated input from torch 2.14 on.
#include <ATen/FunctionalTensorWrapper.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/library.h>

#include <string>

#include "activations.h"
#include "op_handles.h"

namespace act {
namespace {

namespace functionalization = at::functionalization::impl;

struct SkipFunctionalize {
  c10::impl::ExcludeDispatchKeyGuard guard{c10::DispatchKey::Functionalize};
};

at::Tensor unwrapped(const at::Tensor& t) {
  if (!functionalization::isFunctionalTensor(t)) return t;
  functionalization::sync(t);
  return functionalization::from_functional_tensor(t);
}

void assign(at::Tensor& target, const at::Tensor& value) {
  functionalization::replace_(target, value);
  functionalization::commit_update(target);
  functionalization::sync(target);
}

template <class Op>
at::Tensor& inplace_functionalized(at::Tensor& x) {
  if (!functionalization::isFunctionalTensor(x)) {
    SkipFunctionalize skip;
    return inplace_op<Op>().call(x);
  }
  at::Tensor result;
  {
    SkipFunctionalize skip;
    result = forward_op<Op>().call(unwrapped(x));
  }
  assign(x, result);
  return x;
}

// out <- functional(inputs, unwrapped), or, where out is not functional, out_call(): the out= form itself.
template <typename Functional, typename OutCall>
at::Tensor& functionalized_out(const std::string& op, std::initializer_list<at::Tensor> inputs, at::Tensor& out,
                               Functional functional, OutCall out_call) {
  if (!functionalization::isFunctionalTensor(out)) {
    for (const auto& t : inputs) {
      TORCH_CHECK(!functionalization::isFunctionalTensor(t), "act::", op,
                  ": cannot write a functional tensor's result into a non-functional out=");
    }
    SkipFunctionalize skip;
    return out_call();
  }
  at::Tensor result;
  {
    SkipFunctionalize skip;
    result = functional();
  }
  assign(out, result);
  return out;
}

template <class Op>
at::Tensor& out_functionalized(const at::Tensor& x, at::Tensor& out) {
  return functionalized_out(
      schema_name(Op::schemas.out), {x}, out, [&] { return forward_op<Op>().call(unwrapped(x)); },
      [&]() -> at::Tensor& { return out_op<Op>().call(x, out); });
}

template <class Op>
void register_functionalization(torch::Library& m) {
  m.impl(schema_name(Op::schemas.inplace).c_str(), &inplace_functionalized<Op>);
  m.impl(schema_name(Op::schemas.out).c_str(), &out_functionalized<Op>);
}

template <class Op>
at::Tensor& gated_merged_out_functionalized(const at::Tensor& x, at::Tensor& out) {
  return functionalized_out(
      schema_name(Op::gated.merged_out), {x}, out, [&] { return gated_merged_op<Op>().call(unwrapped(x)); },
      [&]() -> at::Tensor& { return gated_merged_out_op<Op>().call(x, out); });
}

template <class Op>
at::Tensor& gated_pair_out_functionalized(const at::Tensor& gate, const at::Tensor& up, at::Tensor& out) {
  return functionalized_out(
      schema_name(Op::gated.pair_out), {gate, up}, out,
      [&] { return gated_pair_op<Op>().call(unwrapped(gate), unwrapped(up)); },
      [&]() -> at::Tensor& { return gated_pair_out_op<Op>().call(gate, up, out); });
}

template <class Op>
void register_gated_functionalization(torch::Library& m) {
  m.impl(schema_name(Op::gated.merged_out).c_str(), &gated_merged_out_functionalized<Op>);
  m.impl(schema_name(Op::gated.pair_out).c_str(), &gated_pair_out_functionalized<Op>);
}

}  // namespace

TORCH_LIBRARY_IMPL(act, Functionalize, m) {
#define ACT_REGISTER_FUNCTIONALIZATION(Op) register_functionalization<Op>(m);
  ACT_ACTIVATIONS(ACT_REGISTER_FUNCTIONALIZATION)
#undef ACT_REGISTER_FUNCTIONALIZATION
#define ACT_REGISTER_GATED_FUNCTIONALIZATION(Op) register_gated_functionalization<Op>(m);
  ACT_GATED(ACT_REGISTER_GATED_FUNCTIONALIZATION)
#undef ACT_REGISTER_GATED_FUNCTIONALIZATION
}

}  // namespace act
