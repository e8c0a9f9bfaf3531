// Autograd for every `act` op, in C++ at the Autograd key, built the way ATen's generated
// VariableType kernels are: a graph node per call, saved tensors, history set on the outputs; and, as ATen's
// ADInplaceOrView kernels, the version counters of the tensors the in-place and out= forms write.
// A Python-registered formula costs about 3x the per-call host time (see README, "Design"),
// and even torch::autograd::Function's generic bookkeeping costs ~30% more than this.
#include <ATen/TensorOperators.h>
#include <ATen/core/grad_mode.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/threshold_backward.h>
#include <ATen/ops/zeros_like.h>
#include <torch/csrc/autograd/VariableTypeUtils.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/csrc/autograd/saved_variable.h>
#include <torch/library.h>

#include <algorithm>
#include <array>
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

// Forward-mode AD, as ATen's generated kernels do it: torch.func's jvp, jacfwd and hessian run on the one
// forward-AD level, 0. A formula takes the primals (the tensors without their tangents), so that it is not
// itself traced at this level, and calls the ops through the dispatcher, so that it is differentiable.
constexpr uint64_t kForwardLevel = 0;

at::Tensor tangent_of(const at::Tensor& t) { return t.defined() ? t._fw_grad(kForwardLevel) : at::Tensor(); }
at::Tensor primal_of(const at::Tensor& t) { return t._fw_primal(kForwardLevel); }

void set_tangent(const at::Tensor& result, const at::Tensor& tangent) {
  if (tangent.defined()) result._set_fw_grad(tangent, kForwardLevel, /*is_inplace_op=*/false);
}

// An in-place form's tangent is updated in place, as ATen's in-place ops update theirs.
void set_tangent_inplace(const at::Tensor& x, const at::Tensor& old_tangent, const at::Tensor& tangent) {
  x._set_fw_grad(old_tangent.copy_(tangent), kForwardLevel, /*is_inplace_op=*/true);
}

at::Tensor sum_defined(const at::Tensor& a, const at::Tensor& b) {
  if (!a.defined()) return b;
  return b.defined() ? a + b : a;
}

// gg times d backward(grad, self_or_result) / d self_or_result: ATen's elu_double_backward for SELU, whose
// mask is `< 0` (so the second derivative at +-0 is 0 as torch's) and multiplies (so NaN propagates as
// torch's does).
at::Tensor backward_grad_of_saved(Selu, const at::Tensor& gg, const at::Tensor& grad, const at::Tensor& saved,
                                  bool is_result) {
  const at::Tensor negative = (saved < 0).type_as(gg);
  if (is_result) return gg * grad * negative;
  return backward_op<Selu>().call(gg * grad, saved, false) * negative;
}

// silu''(x) = sigmoid(x) (1 - sigmoid(x)) (2 + x (1 - 2 sigmoid(x))), as torch differentiates silu_backward.
at::Tensor backward_grad_of_saved(Silu, const at::Tensor& gg, const at::Tensor& grad, const at::Tensor& x, bool) {
  const at::Tensor sigmoid = x.sigmoid();
  return gg * grad * sigmoid * (1 - sigmoid) * (2 + x * (1 - 2 * sigmoid));
}

// gelu''(x) = phi(x) (2 - x^2), as torch differentiates gelu_backward.
at::Tensor backward_grad_of_saved(Gelu, const at::Tensor& gg, const at::Tensor& grad, const at::Tensor& x, bool) {
  const at::Tensor square = x * x;
  return gg * grad * (square * -0.5).exp() * kInvSqrtTwoPi * (2 - square);
}

// gg grad f''(x) for f = x sigmoid(v(x)): sigmoid(v) sigmoid(-v) (2 v' + x (sigmoid(-v) - sigmoid(v)) v'^2 + x v''),
// from sigmoids, where torch's 1 - tanh^2 (gelu_tanh) cancels in the negative tail (float64 over x in [-4.35, -4.25]:
// relative error 1.7e-12, against 3.3e-15 here). In float for the 16-bit types, whose x v'^2 overflows from |x| of
// about 10 for gelu_tanh (torch's form stays finite there). `terms` gives v, v' and x v'' from x in that type.
template <class Terms>
at::Tensor x_sigmoid_grad_of_saved(const at::Tensor& gg, const at::Tensor& grad, const at::Tensor& x_in, Terms terms) {
  const bool narrow = at::isReducedFloatingType(x_in.scalar_type());
  const at::Tensor x = narrow ? x_in.to(at::kFloat) : x_in;
  const auto [v, slope, x_curvature] = terms(x);
  const at::Tensor sigmoid = v.sigmoid(), complement = (-v).sigmoid();
  const at::Tensor second =
      sigmoid * complement * (2 * slope + x * (complement - sigmoid) * slope * slope + x_curvature);
  return gg * grad * (narrow ? second.to(x_in.scalar_type()) : second);
}

// gelu_tanh: v = k (x + c x^3), v' = k (1 + 3 c x^2), v'' = 6 k c x.
at::Tensor backward_grad_of_saved(GeluTanh, const at::Tensor& gg, const at::Tensor& grad, const at::Tensor& x_in,
                                  bool) {
  return x_sigmoid_grad_of_saved(gg, grad, x_in, [](const at::Tensor& x) {
    const at::Tensor square = x * x;
    return std::make_tuple(x * (1 + kGeluTanhCubic * square) * kGeluTanhScale,
                           (1 + 3 * kGeluTanhCubic * square) * kGeluTanhScale,
                           x * (x * (6 * kGeluTanhCubic * kGeluTanhScale)));
  });
}

// quick_gelu: v = k x, v' = k, v'' = 0.
at::Tensor backward_grad_of_saved(QuickGelu, const at::Tensor& gg, const at::Tensor& grad, const at::Tensor& x_in,
                                  bool) {
  return x_sigmoid_grad_of_saved(gg, grad, x_in, [](const at::Tensor& x) {
    return std::make_tuple(x * kQuickGeluSlope, kQuickGeluSlope, 0.0);
  });
}

// squared_relu_backward, 2 relu(x) grad, differentiated in x: 2 grad where x > 0 or NaN, else 0 whatever gg and grad
// are (a select, not a product with the mask): ATen's threshold_backward, as torch differentiates relu(x)^2, so that
// the next derivative in x is its zero too.
at::Tensor backward_grad_of_saved(SquaredRelu, const at::Tensor& gg, const at::Tensor& grad, const at::Tensor& x,
                                  bool) {
  return at::threshold_backward(gg * grad * 2, x, 0);
}

// relu_backward is piecewise constant in its saved tensor: a zero, as torch's threshold_backward gives its `self`
// (an undefined gradient would tell autograd that x was not used).
at::Tensor backward_grad_of_saved(Relu, const at::Tensor&, const at::Tensor& grad, const at::Tensor&, bool) {
  return at::zeros_like(grad);
}

// Gradient of the forward ops: from the input where Op::saves_input (the out-of-place form), else from the
// result (so too the in-place form, unless its gradient needs the input).
template <class Op>
struct ForwardNode : Node {
  SavedVariable saved;
  bool is_result = true;

  variable_list apply(variable_list&& grads) override {
    if (!grads[0].defined()) return {at::Tensor()};
    return {backward_op<Op>().call(grads[0], saved.unpack(this->getptr()), is_result)};
  }
  std::string name() const override { return "act::" + schema_name(Op::schemas.backward); }
  void release_variables() override { saved.reset_data(); }
};

// Gradient of the backward ops, for double backward.
template <class Op>
struct BackwardNode : Node {
  SavedVariable grad_output;
  SavedVariable saved;
  bool is_result = true;

  variable_list apply(variable_list&& grads) override {
    const at::Tensor& gg = grads[0];
    if (!gg.defined()) return {at::Tensor(), at::Tensor()};
    const at::Tensor s = saved.unpack();
    return {
        this->should_compute_output(0) ? backward_op<Op>().call(gg, s, is_result) : at::Tensor(),
        this->should_compute_output(1) ? backward_grad_of_saved(Op{}, gg, grad_output.unpack(), s, is_result)
                                       : at::Tensor(),
    };
  }
  std::string name() const override { return "act::" + schema_name(Op::schemas.backward) + "_backward"; }
  void release_variables() override {
    grad_output.reset_data();
    saved.reset_data();
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
  const at::Tensor x_tangent = tangent_of(x);
  at::Tensor result;
  {
    at::AutoDispatchBelowADInplaceOrView guard;
    result = forward_op<Op>().call(x);
  }
  if (node) {
    torch::autograd::set_history(result, NodePtr(node));
    node->saved = Op::saves_input ? SavedVariable(x, /*is_output=*/false) : SavedVariable(result, /*is_output=*/true);
    node->is_result = !Op::saves_input;
  }
  if (x_tangent.defined()) {
    const at::Tensor saved = Op::saves_input ? primal_of(x) : result;
    set_tangent(result, backward_op<Op>().call(x_tangent, saved, !Op::saves_input));
  }
  return result;
}

// The in-place form's gradient comes from its result, or, where the gradient needs the input, from a copy of the
// input taken before the write (as ATen's in-place ops save `original_self`), itself differentiable.
template <class Op>
at::Tensor& inplace_autograd(at::Tensor& x) {
  auto node = graph_node<ForwardNode<Op>>(x);
  // Before any write: a refused in-place call leaves its input as it was.
  if (node) torch::autograd::check_inplace(x, /*requires_grad=*/true);
  const at::Tensor x_tangent = tangent_of(x);
  at::Tensor original;
  if (Op::gradient_needs_input && (node || x_tangent.defined())) original = x.clone();
  {
    at::AutoDispatchBelowAutograd guard;  // through the ADInplaceOrView kernel, which bumps x's version
    inplace_op<Op>().call(x);
  }
  if (node) {
    torch::autograd::rebase_history(x, NodePtr(node));
    node->saved = Op::gradient_needs_input ? SavedVariable(original, /*is_output=*/false)
                                           : SavedVariable(x, /*is_output=*/true, /*is_inplace_on_view=*/x.is_view());
    node->is_result = !Op::gradient_needs_input;
  }
  if (x_tangent.defined()) {
    const at::Tensor saved = primal_of(Op::gradient_needs_input ? original : x);
    set_tangent_inplace(x, x_tangent, backward_op<Op>().call(x_tangent, saved, !Op::gradient_needs_input));
  }
  return x;
}

// The out= forms record no graph and take no forward-mode AD, as torch's own out= ops: `op` refuses both,
// naming the call to make instead.
void refuse_out_autograd(const std::string& op, const std::string& instead, std::initializer_list<at::Tensor> tensors) {
  if (records_graph(tensors)) torch::autograd::throw_error_out_requires_grad(op.c_str());
  for (const auto& t : tensors) {
    TORCH_CHECK_NOT_IMPLEMENTED(!tangent_of(t).defined(), op,
                                ".out: forward-mode AD does not support out= forms (as torch's own out= ops); call ",
                                instead, " instead");
  }
}

template <class Op>
at::Tensor& out_autograd(const at::Tensor& x, at::Tensor& out) {
  const std::string name = std::string("act::") + Op::name;
  refuse_out_autograd(name, name + "(x)", {x, out});
  {
    at::AutoDispatchBelowAutograd guard;
    out_op<Op>().call(x, out);
  }
  return out;
}

template <class Op>
at::Tensor backward_autograd(const at::Tensor& grad_output, const at::Tensor& self_or_result, bool is_result) {
  auto node = graph_node<BackwardNode<Op>>(grad_output, self_or_result);
  const at::Tensor grad_tangent = tangent_of(grad_output), saved_tangent = tangent_of(self_or_result);
  at::Tensor grad_input;
  {
    at::AutoDispatchBelowADInplaceOrView guard;
    grad_input = backward_op<Op>().call(grad_output, self_or_result, is_result);
  }
  if (node) {
    torch::autograd::set_history(grad_input, NodePtr(node));
    node->grad_output = SavedVariable(grad_output, /*is_output=*/false);
    node->saved = SavedVariable(self_or_result, /*is_output=*/false);
    node->is_result = is_result;
  }
  if (grad_tangent.defined() || saved_tangent.defined()) {
    const at::Tensor saved = primal_of(self_or_result);
    set_tangent(grad_input,
                sum_defined(grad_tangent.defined() ? backward_op<Op>().call(grad_tangent, saved, is_result)
                                                   : at::Tensor(),
                            saved_tangent.defined() ? backward_grad_of_saved(Op{}, saved_tangent,
                                                                             primal_of(grad_output), saved, is_result)
                                                    : at::Tensor()));
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
// again where x < 0 (selu'' = selu' there) and 0 elsewhere, as ATen's elu_double_backward masks it.
at::Tensor alpha_dropout_backward_grad_of_x(const at::Tensor& gg, const at::Tensor& grad, const at::Tensor& x,
                                            const at::Tensor& rng_state, double p) {
  return selu_alpha_dropout_backward_op().call(gg * grad, x, rng_state, p) * (x < 0).type_as(gg);
}

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
            ? alpha_dropout_backward_grad_of_x(gg, grad_output.unpack(), input, state, p)
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
  const at::Tensor x_tangent = tangent_of(x);
  at::Tensor result, rng_state;
  {
    at::AutoDispatchBelowADInplaceOrView guard;
    std::tie(result, rng_state) = selu_alpha_dropout_train_op().call(x, p, std::move(generator));
  }
  // The tangent is the backward's product with the same mask: its output is laid out as the result.
  if (x_tangent.defined()) {
    set_tangent(result, selu_alpha_dropout_backward_op().call(x_tangent, primal_of(x), rng_state, p));
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
  const at::Tensor grad_tangent = tangent_of(grad_output), x_tangent = tangent_of(x);
  const auto& backward = selu_alpha_dropout_backward_op();
  at::Tensor grad_input;
  {
    at::AutoDispatchBelowADInplaceOrView guard;
    grad_input = backward.call(grad_output, x, rng_state, p);
  }
  if (grad_tangent.defined() || x_tangent.defined()) {
    const at::Tensor x_primal = primal_of(x);
    set_tangent(grad_input,
                sum_defined(grad_tangent.defined() ? backward.call(grad_tangent, x_primal, rng_state, p) : at::Tensor(),
                            x_tangent.defined() ? alpha_dropout_backward_grad_of_x(x_tangent, primal_of(grad_output),
                                                                                   x_primal, rng_state, p)
                                                : at::Tensor()));
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
  impl_activation<Op>(m, &forward_autograd<Op>, &inplace_autograd<Op>, &out_autograd<Op>, &backward_autograd<Op>);
}

// The gated forms, y = act(g) * u, and their backward, (dg, du) = (grad u act'(g), grad act(g)). Their derivatives
// come from the activation's own differentiable ops (act(g); act'(g) t, its backward from the input; act''(g) a b,
// backward_grad_of_saved), so every order of derivative is available. An undefined tensor is a zero.
at::Tensor product_defined(const at::Tensor& a, const at::Tensor& b) { return a.defined() ? a * b : at::Tensor(); }

template <class Op>
struct GatedTerms {
  at::Tensor g, u;  // the gate and up primals

  at::Tensor act() const { return forward_op<Op>().call(g); }
  at::Tensor slope_times(const at::Tensor& t) const {
    return t.defined() ? backward_op<Op>().call(t, g, /*is_result=*/false) : at::Tensor();
  }
  at::Tensor curvature_times(const at::Tensor& a, const at::Tensor& b) const {
    return a.defined() ? backward_grad_of_saved(Op{}, a, b, g, /*is_result=*/false) : at::Tensor();
  }

  // y's tangent for tangents (tg, tu) of (g, u).
  at::Tensor forward_tangent(const at::Tensor& tg, const at::Tensor& tu) const {
    return sum_defined(slope_times(product_defined(tg, u)), product_defined(tu, act()));
  }
  // (dg, du)'s tangents for tangents (t_grad, tg, tu) of (grad, g, u).
  std::tuple<at::Tensor, at::Tensor> backward_tangents(const at::Tensor& grad, const at::Tensor& t_grad,
                                                       const at::Tensor& tg, const at::Tensor& tu) const {
    return {sum_defined(slope_times(sum_defined(product_defined(t_grad, u), product_defined(tu, grad))),
                        curvature_times(tg, grad * u)),
            sum_defined(product_defined(t_grad, act()), slope_times(product_defined(tg, grad)))};
  }
  // The gradients of (grad, g, u) for gradients (a_g, a_u) of (dg, du): the transpose of backward_tangents.
  std::tuple<at::Tensor, at::Tensor, at::Tensor> backward_gradients(const at::Tensor& grad, const at::Tensor& a_g,
                                                                    const at::Tensor& a_u) const {
    return {sum_defined(slope_times(product_defined(a_g, u)), product_defined(a_u, act())),
            sum_defined(curvature_times(a_g, grad * u), slope_times(product_defined(a_u, grad))),
            slope_times(product_defined(a_g, grad))};
  }
};

std::pair<at::Tensor, at::Tensor> split_halves(const at::Tensor& t) {
  if (!t.defined()) return {};
  const int64_t d = t.size(-1) / 2;
  return {t.narrow(-1, 0, d), t.narrow(-1, d, d)};
}

// The [..., 2d] tensor of two halves, zeros for an undefined one; undefined where both are.
at::Tensor join_halves(const at::Tensor& a, const at::Tensor& b) {
  if (!a.defined() && !b.defined()) return at::Tensor();
  return at::cat({a.defined() ? a : at::zeros_like(b), b.defined() ? b : at::zeros_like(a)}, -1);
}

// The two layouts alike: the merged form's x = [..., 2d] and the pair form's (gate, up) as the halves (gate, up) of
// their primals, tangents and gradients, and back; their ops and names.
template <class Op>
struct MergedForm {
  using Tensors = std::array<at::Tensor, 1>;
  static std::pair<at::Tensor, at::Tensor> halves(const Tensors& t) { return split_halves(t[0]); }
  static Tensors from_halves(const at::Tensor& a, const at::Tensor& b) { return {join_halves(a, b)}; }
  static at::Tensor forward(const Tensors& x) { return gated_merged_op<Op>().call(x[0]); }
  static Tensors backward(const at::Tensor& grad, const Tensors& x) {
    return {gated_merged_backward_op<Op>().call(grad, x[0])};
  }
  static std::string backward_name() { return schema_name(Op::gated.merged_backward); }
};

template <class Op>
struct PairForm {
  using Tensors = std::array<at::Tensor, 2>;
  static std::pair<at::Tensor, at::Tensor> halves(const Tensors& t) { return {t[0], t[1]}; }
  static Tensors from_halves(const at::Tensor& a, const at::Tensor& b) { return {a, b}; }
  static at::Tensor forward(const Tensors& in) { return gated_pair_op<Op>().call(in[0], in[1]); }
  static Tensors backward(const at::Tensor& grad, const Tensors& in) {
    auto [grad_gate, grad_up] = gated_pair_backward_op<Op>().call(grad, in[0], in[1]);
    return {grad_gate, grad_up};
  }
  static std::string backward_name() { return schema_name(Op::gated.pair_backward); }
};

template <class Op, class Form>
GatedTerms<Op> terms_of(const typename Form::Tensors& primals) {
  auto [g, u] = Form::halves(primals);
  return {g, u};
}

template <size_t N>
std::array<at::Tensor, N> each_of(const std::array<at::Tensor, N>& tensors, at::Tensor (*f)(const at::Tensor&)) {
  std::array<at::Tensor, N> result;
  for (size_t i = 0; i < N; ++i) result[i] = f(tensors[i]);
  return result;
}

template <size_t N>
std::array<at::Tensor, N> unpacked(const std::array<SavedVariable, N>& saved) {
  std::array<at::Tensor, N> result;
  for (size_t i = 0; i < N; ++i) result[i] = saved[i].unpack();
  return result;
}

template <size_t N>
void save_inputs(std::array<SavedVariable, N>& saved, const std::array<at::Tensor, N>& inputs) {
  for (size_t i = 0; i < N; ++i) saved[i] = SavedVariable(inputs[i], /*is_output=*/false);
}

bool any_defined(at::ArrayRef<at::Tensor> tensors) {
  return std::any_of(tensors.begin(), tensors.end(), [](const at::Tensor& t) { return t.defined(); });
}

template <class Op, class Form>
struct GatedNode : Node {
  std::array<SavedVariable, std::tuple_size_v<typename Form::Tensors>> inputs;

  variable_list apply(variable_list&& grads) override {
    if (!grads[0].defined()) return variable_list(inputs.size());
    const auto grad_inputs = Form::backward(grads[0], unpacked(inputs));
    return {grad_inputs.begin(), grad_inputs.end()};
  }
  std::string name() const override { return "act::" + Form::backward_name(); }
  void release_variables() override {
    for (auto& input : inputs) input.reset_data();
  }
};

template <class Op, class Form>
struct GatedBackwardNode : Node {
  SavedVariable grad_output;
  std::array<SavedVariable, std::tuple_size_v<typename Form::Tensors>> inputs;

  variable_list apply(variable_list&& grads) override {
    if (!any_defined(grads)) return variable_list(1 + inputs.size());
    typename Form::Tensors grads_of_outputs;
    std::copy_n(grads.begin(), grads_of_outputs.size(), grads_of_outputs.begin());
    auto [a_g, a_u] = Form::halves(grads_of_outputs);
    auto [d_grad, d_g, d_u] = terms_of<Op, Form>(unpacked(inputs)).backward_gradients(grad_output.unpack(), a_g, a_u);
    const auto d_inputs = Form::from_halves(d_g, d_u);
    variable_list result{d_grad};
    result.insert(result.end(), d_inputs.begin(), d_inputs.end());
    return result;
  }
  std::string name() const override { return "act::" + Form::backward_name() + "_backward"; }
  void release_variables() override {
    grad_output.reset_data();
    for (auto& input : inputs) input.reset_data();
  }
};

template <class Op, class Form>
at::Tensor gated_autograd(const typename Form::Tensors& inputs) {
  auto node = std::apply([](const auto&... t) { return graph_node<GatedNode<Op, Form>>(t...); }, inputs);
  const auto tangents = each_of(inputs, tangent_of);
  at::Tensor result;
  {
    at::AutoDispatchBelowADInplaceOrView guard;
    result = Form::forward(inputs);
  }
  if (node) {
    torch::autograd::set_history(result, NodePtr(node));
    save_inputs(node->inputs, inputs);
  }
  if (any_defined(tangents)) {
    auto [tg, tu] = Form::halves(tangents);
    set_tangent(result, terms_of<Op, Form>(each_of(inputs, primal_of)).forward_tangent(tg, tu));
  }
  return result;
}

template <class Op, class Form>
typename Form::Tensors gated_backward_autograd(const at::Tensor& grad_output, const typename Form::Tensors& inputs) {
  auto node = std::apply(
      [&](const auto&... t) { return graph_node<GatedBackwardNode<Op, Form>>(grad_output, t...); }, inputs);
  const at::Tensor grad_tangent = tangent_of(grad_output);
  const auto tangents = each_of(inputs, tangent_of);
  typename Form::Tensors grad_inputs;
  {
    at::AutoDispatchBelowADInplaceOrView guard;
    grad_inputs = Form::backward(grad_output, inputs);
  }
  if (node) {
    torch::autograd::set_history(std::vector<at::Tensor>(grad_inputs.begin(), grad_inputs.end()), NodePtr(node));
    node->grad_output = SavedVariable(grad_output, /*is_output=*/false);
    save_inputs(node->inputs, inputs);
  }
  if (grad_tangent.defined() || any_defined(tangents)) {
    auto [tg, tu] = Form::halves(tangents);
    auto [t_dg, t_du] = terms_of<Op, Form>(each_of(inputs, primal_of))
                            .backward_tangents(primal_of(grad_output), grad_tangent, tg, tu);
    const auto grad_input_tangents = Form::from_halves(t_dg, t_du);
    for (size_t i = 0; i < grad_inputs.size(); ++i) set_tangent(grad_inputs[i], grad_input_tangents[i]);
  }
  return grad_inputs;
}

template <class Op>
at::Tensor gated_merged_autograd(const at::Tensor& x) {
  return gated_autograd<Op, MergedForm<Op>>({x});
}

template <class Op>
at::Tensor gated_pair_autograd(const at::Tensor& gate, const at::Tensor& up) {
  return gated_autograd<Op, PairForm<Op>>({gate, up});
}

template <class Op>
at::Tensor gated_merged_backward_autograd(const at::Tensor& grad_output, const at::Tensor& x) {
  return gated_backward_autograd<Op, MergedForm<Op>>(grad_output, {x})[0];
}

template <class Op>
std::tuple<at::Tensor, at::Tensor> gated_pair_backward_autograd(const at::Tensor& grad_output, const at::Tensor& gate,
                                                                const at::Tensor& up) {
  const auto grads = gated_backward_autograd<Op, PairForm<Op>>(grad_output, {gate, up});
  return {grads[0], grads[1]};
}

template <class Op>
at::Tensor& gated_merged_out_autograd(const at::Tensor& x, at::Tensor& out) {
  const std::string name = "act::" + schema_name(Op::gated.merged);
  refuse_out_autograd(name, name + "(x)", {x, out});
  {
    at::AutoDispatchBelowAutograd guard;
    gated_merged_out_op<Op>().call(x, out);
  }
  return out;
}

template <class Op>
at::Tensor& gated_pair_out_autograd(const at::Tensor& gate, const at::Tensor& up, at::Tensor& out) {
  const std::string name = "act::" + schema_name(Op::gated.pair);
  refuse_out_autograd(name, name + "(gate, up)", {gate, up, out});
  {
    at::AutoDispatchBelowAutograd guard;
    gated_pair_out_op<Op>().call(gate, up, out);
  }
  return out;
}

template <class Op>
void register_gated_autograd(torch::Library& m) {
  impl_gated<Op>(m, &gated_merged_autograd<Op>, &gated_merged_out_autograd<Op>, &gated_merged_backward_autograd<Op>,
                 &gated_pair_autograd<Op>, &gated_pair_out_autograd<Op>, &gated_pair_backward_autograd<Op>);
}

// The version counter, as ATen's ADInplaceOrView kernels keep it: every in-place and out= call bumps its output's
// version below autograd, so that a write under torch.inference_mode (which skips the Autograd key) still makes
// autograd refuse what it saved of that tensor, and a write to an inference tensor outside that mode is refused.
template <typename Call>
at::Tensor& bumping_version(at::Tensor& written, Call call) {
  {
    at::AutoDispatchBelowADInplaceOrView guard;
    call();
  }
  torch::autograd::increment_version(written);
  return written;
}

template <class Op>
at::Tensor& inplace_versioned(at::Tensor& x) {
  return bumping_version(x, [&] { inplace_op<Op>().call(x); });
}

template <class Op>
at::Tensor& out_versioned(const at::Tensor& x, at::Tensor& out) {
  return bumping_version(out, [&] { out_op<Op>().call(x, out); });
}

template <class Op>
at::Tensor& gated_merged_out_versioned(const at::Tensor& x, at::Tensor& out) {
  return bumping_version(out, [&] { gated_merged_out_op<Op>().call(x, out); });
}

template <class Op>
at::Tensor& gated_pair_out_versioned(const at::Tensor& gate, const at::Tensor& up, at::Tensor& out) {
  return bumping_version(out, [&] { gated_pair_out_op<Op>().call(gate, up, out); });
}

}  // namespace

// Only the ops that write their arguments: the others fall through this key.
TORCH_LIBRARY_IMPL(act, ADInplaceOrView, m) {
#define ACT_REGISTER_VERSIONED(Op)                                          \
  m.impl(schema_name(Op::schemas.inplace).c_str(), &inplace_versioned<Op>); \
  m.impl(schema_name(Op::schemas.out).c_str(), &out_versioned<Op>);
  ACT_ACTIVATIONS(ACT_REGISTER_VERSIONED)
#undef ACT_REGISTER_VERSIONED
#define ACT_REGISTER_GATED_VERSIONED(Op)                                                \
  m.impl(schema_name(Op::gated.merged_out).c_str(), &gated_merged_out_versioned<Op>); \
  m.impl(schema_name(Op::gated.pair_out).c_str(), &gated_pair_out_versioned<Op>);
  ACT_GATED(ACT_REGISTER_GATED_VERSIONED)
#undef ACT_REGISTER_GATED_VERSIONED
}

TORCH_LIBRARY_IMPL(act, Autograd, m) {
#define ACT_REGISTER_AUTOGRAD(Op) register_autograd<Op>(m);
  ACT_ACTIVATIONS(ACT_REGISTER_AUTOGRAD)
#undef ACT_REGISTER_AUTOGRAD
#define ACT_REGISTER_GATED_AUTOGRAD(Op) register_gated_autograd<Op>(m);
  ACT_GATED(ACT_REGISTER_GATED_AUTOGRAD)
#undef ACT_REGISTER_GATED_AUTOGRAD
  m.impl("_selu_alpha_dropout", &selu_alpha_dropout_train_autograd);
  m.impl("selu_alpha_dropout_backward", &selu_alpha_dropout_backward_autograd);
}

}  // namespace act
