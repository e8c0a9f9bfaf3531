// Autograd for every `act` op, in C++ at the Autograd key, built the way ATen's generated
// VariableType kernels are: a graph node per call, saved tensors, history set on the outputs.
// A Python-registered formula costs about 3x the per-call host time (see README, "Design"),
// and even torch::autograd::Function's generic bookkeeping costs ~30% more than this.
#include <ATen/TensorOperators.h>
#include <ATen/core/grad_mode.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/where.h>
#include <torch/csrc/autograd/VariableTypeUtils.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/csrc/autograd/saved_variable.h>
#include <torch/library.h>

#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "activations.h"
#include "op_handles.h"

namespace act {
namespace {

using torch::autograd::Node;
using torch::autograd::SavedVariable;
using torch::autograd::variable_list;

// Graph nodes are held by std::shared_ptr up to torch 2.13 and by c10::intrusive_ptr from 2.14;
// Node::getptr() has the holder's type in both.
using NodePtr = decltype(std::declval<Node&>().getptr());

template <class NodeT>
auto make_node() {
  if constexpr (std::is_same_v<NodePtr, std::shared_ptr<Node>>) {
    return std::make_shared<NodeT>();
  } else {
    return c10::make_intrusive<NodeT>();
  }
}

bool records_graph(std::initializer_list<at::Tensor> tensors) {
  if (!at::GradMode::is_enabled()) return false;
  for (const auto& t : tensors) {
    if (t.requires_grad()) return true;
  }
  return false;
}

// Mutation must be visible to autograd's saved-tensor checks, as ATen's in-place ops make it.
void mark_mutated(const at::Tensor& t) { torch::autograd::impl::bump_version(t); }

// d(backward(grad, result)) / d(result), given the incoming gradient `gg`.
at::Tensor backward_grad_of_result(Selu, const at::Tensor& gg, const at::Tensor& grad, const at::Tensor& result) {
  return at::where(result <= 0, gg * grad, 0);
}

// relu_backward is piecewise constant in the result.
at::Tensor backward_grad_of_result(Relu, const at::Tensor&, const at::Tensor&, const at::Tensor&) {
  return at::Tensor();
}

// Gradient of the forward ops, from their result: the input need not be saved, and in-place
// forwards keep everything the backward needs.
template <class Op>
struct ForwardNode : Node {
  SavedVariable result;

  variable_list apply(variable_list&& grads) override {
    if (!grads[0].defined()) return {at::Tensor()};
    return {backward_op<Op>().call(grads[0], result.unpack(this->getptr()))};
  }
  std::string name() const override { return std::string("act::") + Op::name + "_backward"; }
  void release_variables() override { result.reset_data(); }
};

// Gradient of the backward ops, for double backward.
template <class Op>
struct BackwardNode : Node {
  SavedVariable grad_output;
  SavedVariable result;

  variable_list apply(variable_list&& grads) override {
    const at::Tensor& gg = grads[0];
    if (!gg.defined()) return {at::Tensor(), at::Tensor()};
    const at::Tensor r = result.unpack();
    return {
        this->should_compute_output(0) ? backward_op<Op>().call(gg, r) : at::Tensor(),
        this->should_compute_output(1) ? backward_grad_of_result(Op{}, gg, grad_output.unpack(), r) : at::Tensor(),
    };
  }
  std::string name() const override { return std::string("act::") + Op::name + "_backward_backward"; }
  void release_variables() override {
    grad_output.reset_data();
    result.reset_data();
  }
};

template <class NodeT, typename... Tensors>
auto graph_node(const Tensors&... inputs) {
  decltype(make_node<NodeT>()) node;
  if (!records_graph({inputs...})) return node;
  node = make_node<NodeT>();
  node->set_next_edges(torch::autograd::collect_next_edges(inputs...));
  return node;
}

template <class Op>
at::Tensor forward_autograd(const at::Tensor& x) {
  auto node = graph_node<ForwardNode<Op>>(x);
  at::Tensor result;
  {
    at::AutoDispatchBelowADInplaceOrView guard;
    result = forward_op<Op>().call(x);
  }
  if (node) {
    torch::autograd::set_history(result, NodePtr(node));
    node->result = SavedVariable(result, /*is_output=*/true);
  }
  return result;
}

template <class Op>
at::Tensor& inplace_autograd(at::Tensor& x) {
  auto node = graph_node<ForwardNode<Op>>(x);
  // Before any write: a refused in-place call leaves its input as it was.
  if (node) torch::autograd::check_inplace(x, /*requires_grad=*/true);
  {
    at::AutoDispatchBelowADInplaceOrView guard;
    inplace_op<Op>().call(x);
  }
  mark_mutated(x);
  if (node) {
    torch::autograd::rebase_history(x, NodePtr(node));
    node->result = SavedVariable(x, /*is_output=*/true, /*is_inplace_on_view=*/x.is_view());
  }
  return x;
}

template <class Op>
at::Tensor& out_autograd(const at::Tensor& x, at::Tensor& out) {
  if (records_graph({x, out})) torch::autograd::throw_error_out_requires_grad((std::string("act::") + Op::name).c_str());
  {
    at::AutoDispatchBelowADInplaceOrView guard;
    out_op<Op>().call(x, out);
  }
  mark_mutated(out);
  return out;
}

template <class Op>
at::Tensor backward_autograd(const at::Tensor& grad_output, const at::Tensor& result) {
  auto node = graph_node<BackwardNode<Op>>(grad_output, result);
  at::Tensor grad_input;
  {
    at::AutoDispatchBelowADInplaceOrView guard;
    grad_input = backward_op<Op>().call(grad_output, result);
  }
  if (node) {
    torch::autograd::set_history(grad_input, NodePtr(node));
    node->grad_output = SavedVariable(grad_output, /*is_output=*/false);
    node->result = SavedVariable(result, /*is_output=*/false);
  }
  return grad_input;
}

// The input of a random op's node, as saved. A saved-tensor hook may hand a tensor back laid out anew
// (save_on_cpu's pinned copies are contiguous); the backward numbers its words by offsets in a result
// laid out like x, so x comes back in the layout that gives the forward's result layout.
struct SavedInput {
  SavedVariable x;
  std::vector<int64_t> strides, result_strides;

  void save(const at::Tensor& input, const at::Tensor& result) {
    x = SavedVariable(input, /*is_output=*/false);
    strides = input.strides().vec();
    result_strides = result.strides().vec();
  }
  at::Tensor unpack() const {
    const at::Tensor input = x.unpack();
    if (input.strides() == c10::IntArrayRef(strides)) return input;
    return at::empty_strided(input.sizes(), result_strides, input.options()).copy_(input);
  }
  void reset() { x.reset_data(); }
};

// selu_alpha_dropout's train-mode forward: the gradient replays the mask from the saved (seed,
// offset) and takes SELU's slope from the saved input (from the result it would lose the sign of
// inputs whose scaled SELU rounds to the bias).
struct SeluAlphaDropoutNode : Node {
  SavedInput x;
  SavedVariable rng_state;
  double p = 0;

  variable_list apply(variable_list&& grads) override {
    if (!grads[0].defined()) return {at::Tensor()};
    return {selu_alpha_dropout_backward_op().call(grads[0], x.unpack(), rng_state.unpack(), p)};
  }
  std::string name() const override { return "act::selu_alpha_dropout_backward"; }
  void release_variables() override {
    x.reset();
    rng_state.reset_data();
  }
};

// Its backward, grad * m * selu'(x), is linear in grad; in x its derivative is grad * m * selu'(x)
// again where x <= 0 (selu'' = selu' there) and 0 elsewhere.
struct SeluAlphaDropoutBackwardNode : Node {
  SavedVariable grad_output;
  SavedInput x;
  SavedVariable rng_state;
  double p = 0;

  variable_list apply(variable_list&& grads) override {
    const at::Tensor& gg = grads[0];
    if (!gg.defined()) return {at::Tensor(), at::Tensor()};
    const at::Tensor input = x.unpack(), state = rng_state.unpack();
    const auto& backward = selu_alpha_dropout_backward_op();
    return {
        this->should_compute_output(0) ? backward.call(gg, input, state, p) : at::Tensor(),
        this->should_compute_output(1)
            ? at::where(input > 0, 0, backward.call(gg * grad_output.unpack(), input, state, p))
            : at::Tensor(),
    };
  }
  std::string name() const override { return "act::selu_alpha_dropout_backward_backward"; }
  void release_variables() override {
    grad_output.reset_data();
    x.reset();
    rng_state.reset_data();
  }
};

std::tuple<at::Tensor, at::Tensor> selu_alpha_dropout_train_autograd(const at::Tensor& x, double p,
                                                                      std::optional<at::Generator> generator) {
  auto node = graph_node<SeluAlphaDropoutNode>(x);
  at::Tensor result, rng_state;
  {
    at::AutoDispatchBelowADInplaceOrView guard;
    std::tie(result, rng_state) = selu_alpha_dropout_train_op().call(x, p, std::move(generator));
  }
  if (node) {
    torch::autograd::set_history(result, NodePtr(node));  // rng_state is an integer tensor: no gradient
    node->x.save(x, result);
    node->rng_state = SavedVariable(rng_state, /*is_output=*/false);
    node->p = p;
  }
  return {result, rng_state};
}

at::Tensor selu_alpha_dropout_backward_autograd(const at::Tensor& grad_output, const at::Tensor& x,
                                                const at::Tensor& rng_state, double p) {
  auto node = graph_node<SeluAlphaDropoutBackwardNode>(grad_output, x);
  at::Tensor grad_input;
  {
    at::AutoDispatchBelowADInplaceOrView guard;
    grad_input = selu_alpha_dropout_backward_op().call(grad_output, x, rng_state, p);
  }
  if (node) {
    torch::autograd::set_history(grad_input, NodePtr(node));
    node->grad_output = SavedVariable(grad_output, /*is_output=*/false);
    node->x.save(x, grad_input);
    node->rng_state = SavedVariable(rng_state, /*is_output=*/false);
    node->p = p;
  }
  return grad_input;
}

template <class Op>
void register_autograd(torch::Library& m) {
  const std::string name = Op::name;
  m.impl(name.c_str(), &forward_autograd<Op>);
  m.impl((name + "_").c_str(), &inplace_autograd<Op>);
  m.impl((name + ".out").c_str(), &out_autograd<Op>);
  m.impl((name + "_backward").c_str(), &backward_autograd<Op>);
}

}  // namespace

TORCH_LIBRARY_IMPL(act, Autograd, m) {
#define ACT_REGISTER_AUTOGRAD(Op) register_autograd<Op>(m);
  ACT_ACTIVATIONS(ACT_REGISTER_AUTOGRAD)
#undef ACT_REGISTER_AUTOGRAD
  m.impl("_selu_alpha_dropout", &selu_alpha_dropout_train_autograd);
  m.impl("selu_alpha_dropout_backward", &selu_alpha_dropout_backward_autograd);
}

}  // namespace act
