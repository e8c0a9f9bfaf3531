// Functionalization of the mutating ops: under torch.compile (and torch.func.functionalize)
// selu_(x) becomes x <- selu(x) and selu(x, out=o) becomes o <- selu(x), so compiled graphs
// hold only functional ops. Written here rather than left to torch's automatic path because
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

template <class Op>
at::Tensor& out_functionalized(const at::Tensor& x, at::Tensor& out) {
  if (!functionalization::isFunctionalTensor(out)) {
    TORCH_CHECK(!functionalization::isFunctionalTensor(x), "act::", Op::name,
                ".out: cannot write a functional tensor's result into a non-functional out=");
    SkipFunctionalize skip;
    return out_op<Op>().call(x, out);
  }
  at::Tensor result;
  {
    SkipFunctionalize skip;
    result = forward_op<Op>().call(unwrapped(x));
  }
  assign(out, result);
  return out;
}

template <class Op>
void register_functionalization(torch::Library& m) {
  m.impl(schema_name(Op::schemas.inplace).c_str(), &inplace_functionalized<Op>);
  m.impl(schema_name(Op::schemas.out).c_str(), &out_functionalized<Op>);
}

}  // namespace

TORCH_LIBRARY_IMPL(act, Functionalize, m) {
#define ACT_REGISTER_FUNCTIONALIZATION(Op) register_functionalization<Op>(m);
  ACT_ACTIVATIONS(ACT_REGISTER_FUNCTIONALIZATION)
#undef ACT_REGISTER_FUNCTIONALIZATION
}

}  // namespace act
