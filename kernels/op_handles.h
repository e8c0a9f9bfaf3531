#pragma once
// Typed dispatcher handles for the `act` ops, looked up once. The autograd and functionalization
// layers, and the composite selu_alpha_dropout, call the ops through these so each call re-enters
// the dispatcher below their own key.

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

#include <optional>
#include <string>
#include <tuple>

#include "error_text.h"

namespace act {

// The op named `name` ("selu", "selu.out": an overload after the dot) in the act namespace.
template <typename Signature>
c10::TypedOperatorHandle<Signature> find_op(const std::string& name) {
  const size_t dot = name.find('.');
  const std::string overload = dot == std::string::npos ? "" : name.substr(dot + 1);
  return c10::Dispatcher::singleton()
      .findSchemaOrThrow(("act::" + name.substr(0, dot)).c_str(), overload.c_str())
      .typed<Signature>();
}

// One dispatch key's kernels for the four ops of an activation `Op` (activations.h), registered by the names
// its schemas begin with.
template <class Op, typename Forward, typename Inplace, typename Out, typename Backward>
void impl_activation(torch::Library& m, Forward forward, Inplace inplace, Out out, Backward backward) {
  m.impl(schema_name(Op::schemas.forward).c_str(), forward);
  m.impl(schema_name(Op::schemas.inplace).c_str(), inplace);
  m.impl(schema_name(Op::schemas.out).c_str(), out);
  m.impl(schema_name(Op::schemas.backward).c_str(), backward);
}

// The ops of an activation `Op` (activations.h), by its schemas: the forward, its in-place and out= forms,
// and its backward.
template <class Op>
const auto& forward_op() {
  static const auto op = find_op<at::Tensor(const at::Tensor&)>(schema_name(Op::schemas.forward));
  return op;
}

template <class Op>
const auto& inplace_op() {
  static const auto op = find_op<at::Tensor&(at::Tensor&)>(schema_name(Op::schemas.inplace));
  return op;
}

template <class Op>
const auto& out_op() {
  static const auto op = find_op<at::Tensor&(const at::Tensor&, at::Tensor&)>(schema_name(Op::schemas.out));
  return op;
}

template <class Op>
const auto& backward_op() {
  static const auto op =
      find_op<at::Tensor(const at::Tensor&, const at::Tensor&, bool)>(schema_name(Op::schemas.backward));
  return op;
}

// One dispatch key's kernels for the six gated ops of an activation `Op` (activations.h), by its `gated` schemas.
template <class Op, typename Merged, typename MergedOut, typename MergedBackward, typename Pair, typename PairOut,
          typename PairBackward>
void impl_gated(torch::Library& m, Merged merged, MergedOut merged_out, MergedBackward merged_backward, Pair pair,
                PairOut pair_out, PairBackward pair_backward) {
  const auto& s = Op::gated;
  m.impl(schema_name(s.merged).c_str(), merged);
  m.impl(schema_name(s.merged_out).c_str(), merged_out);
  m.impl(schema_name(s.merged_backward).c_str(), merged_backward);
  m.impl(schema_name(s.pair).c_str(), pair);
  m.impl(schema_name(s.pair_out).c_str(), pair_out);
  m.impl(schema_name(s.pair_backward).c_str(), pair_backward);
}

// The gated ops of an activation `Op`, by its `gated` schemas.
template <class Op>
const auto& gated_merged_op() {
  static const auto op = find_op<at::Tensor(const at::Tensor&)>(schema_name(Op::gated.merged));
  return op;
}

template <class Op>
const auto& gated_merged_out_op() {
  static const auto op = find_op<at::Tensor&(const at::Tensor&, at::Tensor&)>(schema_name(Op::gated.merged_out));
  return op;
}

template <class Op>
const auto& gated_merged_backward_op() {
  static const auto op =
      find_op<at::Tensor(const at::Tensor&, const at::Tensor&)>(schema_name(Op::gated.merged_backward));
  return op;
}

template <class Op>
const auto& gated_pair_op() {
  static const auto op = find_op<at::Tensor(const at::Tensor&, const at::Tensor&)>(schema_name(Op::gated.pair));
  return op;
}

template <class Op>
const auto& gated_pair_out_op() {
  static const auto op = find_op<at::Tensor&(const at::Tensor&, const at::Tensor&, at::Tensor&)>(
      schema_name(Op::gated.pair_out));
  return op;
}

template <class Op>
const auto& gated_pair_backward_op() {
  static const auto op =
      find_op<std::tuple<at::Tensor, at::Tensor>(const at::Tensor&, const at::Tensor&, const at::Tensor&)>(
          schema_name(Op::gated.pair_backward));
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
