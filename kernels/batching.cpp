// Batching rules for torch.func.vmap: each act op runs once on the batch's physical tensor, as functorch's
// own rules run ATen's pointwise ops, in place of its per-sample fallback. The ops are elementwise and take
// any layout, so a batched operand goes to the kernel as it lies and the result keeps its batch dimension.
#include <ATen/TensorOperators.h>
#include <ATen/functorch/DynamicLayer.h>
#include <ATen/functorch/PlumbingHelper.h>
#include <ATen/functorch/VmapInterpreter.h>
#include <ATen/ops/ones_like.h>
#include <ATen/ops/scalar_tensor.h>
#include <ATen/ops/where.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/library.h>

#include <optional>
#include <string>
#include <tuple>

#include "activations.h"
#include "op_handles.h"

namespace act {
namespace {

namespace ft = at::functorch;

// The vmap level being processed; the guard sends the calls on physical tensors to the layers below.
struct VmapLevel {
  c10::impl::ExcludeDispatchKeyGuard guard{
      c10::DispatchKeySet({c10::DispatchKey::FuncTorchBatched, c10::DispatchKey::FuncTorchVmapMode})};
  ft::DynamicLayer layer = current();
  int64_t level = layer.layerId();

  bool batched(const at::Tensor& t) const { return ft::isBatchedAtLevel(t, level); }
  std::tuple<at::Tensor, std::optional<int64_t>> unwrap(const at::Tensor& t) const {
    return ft::unwrapTensorAtLevel(t, level);
  }
  at::Tensor wrap(const at::Tensor& t, int64_t bdim) const { return ft::makeBatched(t, bdim, level); }
  ft::RandomnessType randomness() const { return ft::VmapInterpreterPtr(&layer.interpreter()).randomness(); }
  c10::SymInt batch_size() const { return ft::VmapInterpreterPtr(&layer.interpreter()).batchSize(); }

 private:
  static ft::DynamicLayer current() {
    auto layer = ft::maybeCurrentDynamicLayer();
    TORCH_INTERNAL_ASSERT(layer.has_value(), "act: a batching rule ran outside vmap");
    return *layer;
  }
};

// A physical tensor with its batch dimension at `dim`: moved there, or, for an unbatched one, broadcast there.
at::Tensor batched_at(const at::Tensor& value, std::optional<int64_t> bdim, int64_t dim, const c10::SymInt& batch) {
  if (bdim) return value.movedim(*bdim, dim);
  auto sizes = value.sym_sizes().vec();
  sizes.insert(sizes.begin() + dim, batch);
  return value.unsqueeze(dim).expand_symint(sizes);
}

// An operand's physical tensor with the batch dimension in front: moved there, or broadcast there if unbatched.
at::Tensor batch_in_front(const VmapLevel& vmap, const at::Tensor& t) {
  auto [value, bdim] = vmap.unwrap(t);
  return batched_at(value, bdim, 0, vmap.batch_size());
}

// An out= form under vmap writes an out batched like its inputs, its batch dimension moved to the front (a view);
// an unbatched out cannot hold a result that varies over the batch.
at::Tensor out_batch_in_front(const VmapLevel& vmap, const std::string& op_out, const at::Tensor& out,
                              const std::string& instead) {
  TORCH_CHECK(vmap.batched(out), op_out,
              ": vmap cannot write a result that varies over the batch into out=, which does not; pass an out= "
              "tensor batched like the input, or call ",
              instead);
  auto [value, bdim] = vmap.unwrap(out);
  return value.movedim(*bdim, 0);
}

template <class Op>
at::Tensor forward_batched(const at::Tensor& x) {
  const VmapLevel vmap;
  if (!vmap.batched(x)) return forward_op<Op>().call(x);
  auto [value, bdim] = vmap.unwrap(x);
  return vmap.wrap(forward_op<Op>().call(value), *bdim);
}

template <class Op>
at::Tensor& inplace_batched(at::Tensor& x) {
  const VmapLevel vmap;
  if (!vmap.batched(x)) {
    inplace_op<Op>().call(x);
    return x;
  }
  auto [value, bdim] = vmap.unwrap(x);
  inplace_op<Op>().call(value);
  return x;
}

template <class Op>
at::Tensor& out_batched(const at::Tensor& x, at::Tensor& out) {
  const VmapLevel vmap;
  if (!vmap.batched(x) && !vmap.batched(out)) return out_op<Op>().call(x, out);
  const std::string op = std::string("act.") + Op::name;
  at::Tensor out_front = out_batch_in_front(vmap, op + ".out", out, op + "(x)");
  out_op<Op>().call(batch_in_front(vmap, x), out_front);
  return out;
}

template <class Op>
at::Tensor backward_batched(const at::Tensor& grad_output, const at::Tensor& self_or_result, bool is_result) {
  const VmapLevel vmap;
  if (!vmap.batched(grad_output) && !vmap.batched(self_or_result)) {
    return backward_op<Op>().call(grad_output, self_or_result, is_result);
  }
  return vmap.wrap(
      backward_op<Op>().call(batch_in_front(vmap, grad_output), batch_in_front(vmap, self_or_result), is_result), 0);
}

// selu_alpha_dropout under vmap follows the randomness= modes as torch's dropout does, and like torch's random
// ops its forward's rule sits at the vmap mode key, so it runs (and refuses 'error') whether or not its input
// is batched. 'different': one launch over the physical tensor (an unbatched input broadcast along a new
// dimension 0) draws every sample's words; the backward lays its output out alike and so replays them.
// 'same': an unbatched input is one call; over a batched input, one mask of a sample's shape, drawn by the
// kernel on a sample-shaped tensor and read back from its (seed, offset), is applied to every sample by ops
// that autograd and the other transforms see through. The backward replays words and draws none: under
// 'error' (a forward outside this vmap, on an unbatched input) it replays that input's single mask.
void check_randomness(const VmapLevel& vmap) {
  // functorch's words for its own random ops.
  TORCH_CHECK(vmap.randomness() != ft::RandomnessType::Error,
              "vmap: called random operation while in randomness error mode. Please either use the 'same' or "
              "'different' randomness flags on vmap or perform the randomness operation out of vmap");
}

// Where the mask drawn on `sample`'s layout keeps an element: the backward's kernel replays the mask, and at
// a grad and input of 1 its value is the kept scale times SELU's slope, nonzero exactly where kept.
at::Tensor kept_mask(const at::Tensor& sample, const at::Tensor& rng_state, double p) {
  const at::Tensor ones = at::ones_like(sample);
  return selu_alpha_dropout_backward_op().call(ones, ones, rng_state, p) != 0;
}

// The factor a kept element's SELU is scaled by (0 where dropped) and the bias added, in the compute type
// of `like` and folded there as the kernel folds them, broadcast along the batch dimension `dim`.
std::tuple<at::Tensor, at::Tensor> same_mask_scale_and_bias(const at::Tensor& kept, const at::Tensor& like,
                                                             int64_t dim, double p) {
  const AlphaDropoutArgs args = alpha_dropout_args(p, PhiloxSource{});
  const auto folded = [&](const auto& forward) {
    return std::make_tuple(double(forward.keep_scale), double(forward.kept_bias), double(forward.dropped_bias));
  };
  const auto [keep_scale, kept_bias, dropped_bias] = like.scalar_type() == at::kDouble
                                                         ? folded(SeluAlphaDropoutForward<double>(args))
                                                         : folded(SeluAlphaDropoutForward<float>(args));
  const auto options = like.options();
  const at::Tensor mask = kept.unsqueeze(dim);
  return {at::where(mask, at::scalar_tensor(keep_scale, options), at::scalar_tensor(0.0, options)),
          at::where(mask, at::scalar_tensor(kept_bias, options), at::scalar_tensor(dropped_bias, options))};
}

at::ScalarType compute_type(const at::Tensor& t) { return t.scalar_type() == at::kDouble ? at::kDouble : at::kFloat; }

std::tuple<at::Tensor, at::Tensor> selu_alpha_dropout_train_batched(const at::Tensor& x, double p,
                                                                    std::optional<at::Generator> generator) {
  const VmapLevel vmap;
  check_randomness(vmap);
  const auto& train = selu_alpha_dropout_train_op();
  const bool same = vmap.randomness() == ft::RandomnessType::Same;
  if (same && !vmap.batched(x)) return train.call(x, p, std::move(generator));
  auto [value, bdim] = vmap.unwrap(x);
  const int64_t dim = bdim.value_or(0);
  if (!same) {
    auto [result, rng_state] = train.call(batched_at(value, bdim, dim, vmap.batch_size()), p, std::move(generator));
    return {vmap.wrap(result, dim), rng_state};
  }
  const at::Tensor sample = value.select(dim, 0);
  const at::Tensor rng_state = std::get<1>(train.call(at::ones_like(sample), p, std::move(generator)));
  const at::Tensor x_acc = value.to(compute_type(value));
  const auto [scale, bias] = same_mask_scale_and_bias(kept_mask(sample, rng_state, p), x_acc, dim, p);
  const at::Tensor result = (forward_op<Selu>().call(x_acc) * scale + bias).to(value.scalar_type());
  return {vmap.wrap(result, dim), rng_state};
}

at::Tensor selu_alpha_dropout_backward_batched(const at::Tensor& grad_output, const at::Tensor& x,
                                               const at::Tensor& rng_state, double p) {
  const VmapLevel vmap;
  const auto& backward = selu_alpha_dropout_backward_op();
  if (!vmap.batched(grad_output) && !vmap.batched(x)) return backward.call(grad_output, x, rng_state, p);
  TORCH_CHECK(!vmap.batched(rng_state),
              "act.selu_alpha_dropout_backward: vmap over rng_state is not supported; pass the state the forward "
              "returned under the same vmap");
  TORCH_CHECK(vmap.randomness() != ft::RandomnessType::Error || !vmap.batched(x),
              "act.selu_alpha_dropout_backward: x is batched under a vmap with randomness='error', where no "
              "forward can have drawn its mask; use the randomness= the forward ran under");
  auto [grad_value, grad_bdim] = vmap.unwrap(grad_output);
  auto [x_value, x_bdim] = vmap.unwrap(x);
  const int64_t dim = x_bdim.value_or(0);
  const c10::SymInt batch = x_bdim ? x_value.sym_size(*x_bdim) : grad_value.sym_size(*grad_bdim);
  const at::Tensor grad_physical = batched_at(grad_value, grad_bdim, dim, batch);
  const at::Tensor x_physical = batched_at(x_value, x_bdim, dim, batch);
  if (vmap.randomness() == ft::RandomnessType::Different) {
    return vmap.wrap(backward.call(grad_physical, x_physical, rng_state, p), dim);
  }
  // The forward drew the mask on a tensor laid out as one sample (the input itself where it was not batched).
  const at::Tensor sample = x_bdim ? x_value.select(dim, 0) : x_value;
  const at::ScalarType acc = compute_type(x_value);
  const at::Tensor grad_acc = grad_physical.to(acc);
  const at::Tensor scale = std::get<0>(same_mask_scale_and_bias(kept_mask(sample, rng_state, p), grad_acc, dim, p));
  const at::Tensor grad =
      backward_op<Selu>().call(grad_acc * scale, x_physical.to(acc), /*is_result=*/false);
  return vmap.wrap(grad.to(x_value.scalar_type()), dim);
}

template <class Op>
void register_batching(torch::Library& m) {
  impl_activation<Op>(m, &forward_batched<Op>, &inplace_batched<Op>, &out_batched<Op>, &backward_batched<Op>);
}

// The gated forms act on the last dimension alone (the merged form's halves lie along it): each operand goes to
// the kernel with its batch dimension in front (batch_in_front).
template <class Op>
at::Tensor gated_merged_batched(const at::Tensor& x) {
  const VmapLevel vmap;
  if (!vmap.batched(x)) return gated_merged_op<Op>().call(x);
  return vmap.wrap(gated_merged_op<Op>().call(batch_in_front(vmap, x)), 0);
}

template <class Op>
at::Tensor gated_merged_backward_batched(const at::Tensor& grad_output, const at::Tensor& x) {
  const VmapLevel vmap;
  if (!vmap.batched(grad_output) && !vmap.batched(x)) return gated_merged_backward_op<Op>().call(grad_output, x);
  return vmap.wrap(
      gated_merged_backward_op<Op>().call(batch_in_front(vmap, grad_output), batch_in_front(vmap, x)), 0);
}

template <class Op>
at::Tensor gated_pair_batched(const at::Tensor& gate, const at::Tensor& up) {
  const VmapLevel vmap;
  if (!vmap.batched(gate) && !vmap.batched(up)) return gated_pair_op<Op>().call(gate, up);
  return vmap.wrap(gated_pair_op<Op>().call(batch_in_front(vmap, gate), batch_in_front(vmap, up)), 0);
}

template <class Op>
std::tuple<at::Tensor, at::Tensor> gated_pair_backward_batched(const at::Tensor& grad_output, const at::Tensor& gate,
                                                               const at::Tensor& up) {
  const VmapLevel vmap;
  const auto& backward = gated_pair_backward_op<Op>();
  if (!vmap.batched(grad_output) && !vmap.batched(gate) && !vmap.batched(up)) {
    return backward.call(grad_output, gate, up);
  }
  auto [grad_gate, grad_up] = backward.call(batch_in_front(vmap, grad_output), batch_in_front(vmap, gate),
                                            batch_in_front(vmap, up));
  return {vmap.wrap(grad_gate, 0), vmap.wrap(grad_up, 0)};
}

template <class Op>
at::Tensor& gated_merged_out_batched(const at::Tensor& x, at::Tensor& out) {
  const VmapLevel vmap;
  if (!vmap.batched(x) && !vmap.batched(out)) return gated_merged_out_op<Op>().call(x, out);
  const std::string op = "act." + schema_name(Op::gated.merged);
  at::Tensor out_front = out_batch_in_front(vmap, op + ".out", out, op + "(x)");
  gated_merged_out_op<Op>().call(batch_in_front(vmap, x), out_front);
  return out;
}

template <class Op>
at::Tensor& gated_pair_out_batched(const at::Tensor& gate, const at::Tensor& up, at::Tensor& out) {
  const VmapLevel vmap;
  if (!vmap.batched(gate) && !vmap.batched(up) && !vmap.batched(out)) {
    return gated_pair_out_op<Op>().call(gate, up, out);
  }
  const std::string op = "act." + schema_name(Op::gated.pair);
  at::Tensor out_front = out_batch_in_front(vmap, op + ".out", out, op + "(gate, up)");
  gated_pair_out_op<Op>().call(batch_in_front(vmap, gate), batch_in_front(vmap, up), out_front);
  return out;
}

template <class Op>
void register_gated_batching(torch::Library& m) {
  impl_gated<Op>(m, &gated_merged_batched<Op>, &gated_merged_out_batched<Op>, &gated_merged_backward_batched<Op>,
                 &gated_pair_batched<Op>, &gated_pair_out_batched<Op>, &gated_pair_backward_batched<Op>);
}

}  // namespace

TORCH_LIBRARY_IMPL(act, FuncTorchBatched, m) {
#define ACT_REGISTER_BATCHING(Op) register_batching<Op>(m);
  ACT_ACTIVATIONS(ACT_REGISTER_BATCHING)
#undef ACT_REGISTER_BATCHING
#define ACT_REGISTER_GATED_BATCHING(Op) register_gated_batching<Op>(m);
  ACT_GATED(ACT_REGISTER_GATED_BATCHING)
#undef ACT_REGISTER_GATED_BATCHING
  m.impl("selu_alpha_dropout_backward", &selu_alpha_dropout_backward_batched);
}

TORCH_LIBRARY_IMPL(act, FuncTorchVmapMode, m) { m.impl("_selu_alpha_dropout", &selu_alpha_dropout_train_batched); }

}  // namespace act
