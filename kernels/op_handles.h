#pragma once
// Typed dispatcher handles for the `act` ops, looked up once. The autograd and functionalization
// layers, and the composite selu_alpha_dropout, call the ops through these so each call re-enters
// the dispatcher below their own key.

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <optional>
#include <string>
#include <tuple>

namespace act {

template <typename Signature>
c10::TypedOperatorHandle<Signature> find_op(const std::string& name, const char* overload = "") {
  return c10::Dispatcher::singleton().findSchemaOrThrow(("act::" + name).c_str(), overload).typed<Signature>();
}

// The ops of an activation `Op` (activations.h): Op::name, its in-place and out= forms, and its backward.
template <class Op>
const auto& forward_op() {
  static const auto op = find_op<at::Tensor(const at::Tensor&)>(Op::name);
  return op;
}

template <class Op>
const auto& inplace_op() {
  static const auto op = find_op<at::Tensor&(at::Tensor&)>(std::string(Op::name) + "_");
  return op;
}

template <class Op>
const auto& out_op() {
  static const auto op = find_op<at::Tensor&(const at::Tensor&, at::Tensor&)>(Op::name, "out");
  return op;
}

template <class Op>
const auto& backward_op() {
  static const auto op =
      find_op<at::Tensor(const at::Tensor&, const at::Tensor&, bool)>(std::string(Op::name) + "_backward");
  return op;
}

// selu_alpha_dropout's train-mode forward, returning the result and the (seed, offset) it drew, and its backward.
inline const auto& selu_alpha_dropout_train_op() {
  static const auto op =
      find_op<std::tuple<at::Tensor, at::Tensor>(const at::Tensor&, double, std::optional<at::Generator>)>(
          "_selu_alpha_dropout");
  return op;
}

inline const auto& selu_alpha_dropout_backward_op() {
  static const auto op =
      find_op<at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&, double)>(
          "selu_alpha_dropout_backward");
  return op;
}

}  // namespace act
