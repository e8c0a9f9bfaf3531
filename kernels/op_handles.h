#pragma once
// Typed dispatcher handles for the `act` ops, looked up once. The autograd and
// functionalization layers call the ops through these so each call re-enters the dispatcher
// below their own key.

#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>

namespace act {

struct Selu {
  static constexpr const char* forward = "act::selu";
  static constexpr const char* inplace = "act::selu_";
  static constexpr const char* backward = "act::selu_backward";
};

struct Relu {
  static constexpr const char* forward = "act::relu";
  static constexpr const char* inplace = "act::relu_";
  static constexpr const char* backward = "act::relu_backward";
};

template <typename Signature>
c10::TypedOperatorHandle<Signature> find_op(const char* name, const char* overload = "") {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, overload).typed<Signature>();
}

template <class Op>
const auto& forward_op() {
  static const auto op = find_op<at::Tensor(const at::Tensor&)>(Op::forward);
  return op;
}

template <class Op>
const auto& inplace_op() {
  static const auto op = find_op<at::Tensor&(at::Tensor&)>(Op::inplace);
  return op;
}

template <class Op>
const auto& out_op() {
  static const auto op = find_op<at::Tensor&(const at::Tensor&, at::Tensor&)>(Op::forward, "out");
  return op;
}

template <class Op>
const auto& backward_op() {
  static const auto op = find_op<at::Tensor(const at::Tensor&, const at::Tensor&)>(Op::backward);
  return op;
}

}  // namespace act
