// The `act` operator schemas and their CPU/CUDA kernels: argument checks, output allocation,
// and describing the operands' layout to the backends. Every activation of activations.h's list gets
// its forward, in-place, out= and backward ops from the templates here; selu_alpha_dropout follows.
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/TensorIterator.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <c10/core/ScalarType.h>
#include <torch/library.h>

#include <cstdlib>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

#include "strided_view.h"
#include "layout.h"
#include "error_text.h"
#include "op_handles.h"
#ifdef ACT_WITH_CUDA
#include "cuda_generator.h"
#endif

namespace act {
namespace {

// "torch.int64", as Python prints a dtype: the same words whether the check fails here or in the fake
// kernel under torch.compile (streaming a ScalarType would say "Long").
std::string dtype_name(c10::ScalarType dtype) { return "torch." + std::string(c10::getDtypeNames(dtype).first); }

void check_dtype(const std::string& op, const at::Tensor& t, const char* arg) {
  TORCH_CHECK_TYPE(is_supported_dtype(t.scalar_type()), op, ": expected ", arg, " of dtype ", kSupportedDtypes,
                   ", but got ", dtype_name(t.scalar_type()));
}

// `t` must match `like` in device, dtype and shape: the ops neither broadcast, cast nor resize.
void check_matches(const std::string& op, const at::Tensor& t, const char* arg, const at::Tensor& like,
                   const char* like_arg) {
  TORCH_CHECK(t.device() == like.device(), op, ": expected ", arg, " on the device of ", like_arg, " (",
              like.device(), "), but got ", t.device());
  TORCH_CHECK_TYPE(t.scalar_type() == like.scalar_type(), op, ": expected ", arg, " of the dtype of ",
                   like_arg, " (", dtype_name(like.scalar_type()), "), but got ", dtype_name(t.scalar_type()));
  TORCH_CHECK(t.sizes() == like.sizes(), op, ": expected ", arg, " of the shape of ", like_arg, " ",
              shape_str(like), ", but got ", shape_str(t));
}

// How the default build hands a view to a backend, for layout.h's run_elementwise.
struct AtenBuild {
  template <template <typename> class F>
  static void run_backend(const at::Tensor& out, const StridedView& view, const ArgsOf<F>& args) {
#ifdef ACT_WITH_CUDA
    if (out.is_cuda()) return cuda_elementwise<F>(out.scalar_type(), out.device().index(), view, args);
#endif
    cpu_elementwise<F>(out.scalar_type(), view, args);  // the dispatcher brings CUDA tensors only to a CUDA build
  }
};

template <template <typename> class F>
void compute(const at::Tensor& out, std::initializer_list<at::Tensor> inputs, const ArgsOf<F>& args = {}) {
  run_elementwise<F, AtenBuild>({out}, inputs, args);
}

// The output of an elementwise op on `inputs`, laid out as ATen's TensorIterator lays out the output of
// ATen's own op on them, listed in that op's order: where the inputs share one dense layout, that layout;
// otherwise TensorIterator itself decides (from every input's strides) and allocates it.
at::Tensor output_like(std::initializer_list<at::Tensor> inputs) {
  const at::Tensor& first = *inputs.begin();
  bool same_strides = first.is_non_overlapping_and_dense();
  for (const auto& t : inputs) same_strides &= t.strides() == first.strides();
  if (same_strides) return at::empty_like(first);
  at::TensorIteratorConfig config;
  config.add_owned_output(at::Tensor()).check_all_same_dtype(true);
  for (const auto& t : inputs) config.add_const_input(t);
  return config.build().output();
}

template <class Op>
at::Tensor forward(const at::Tensor& x) {
  check_dtype(op_name(Op::name), x, "x");
  at::Tensor out = output_like({x});
  compute<Op::template Forward>(out, {x});
  return out;
}

template <class Op>
at::Tensor& forward_(at::Tensor& x) {
  check_dtype(op_name(Op::name), x, "x");
  at::assert_no_internal_overlap(x);
  compute<Op::template Forward>(x, {x});
  return x;
}

template <class Op>
at::Tensor& forward_out(const at::Tensor& x, at::Tensor& out) {
  const std::string op = op_name(Op::name);
  check_dtype(op, x, "x");
  check_matches(op, out, "out", x, "x");
  at::assert_no_internal_overlap(out);
  at::assert_no_partial_overlap(out, x);
  compute<Op::template Forward>(out, {x});
  return out;
}

// The gradient from the input (`is_result` false) or from the result (not for an activation whose gradient
// needs the input). The output is laid out as ATen's elu_backward and silu_backward (grad_output first) or
// threshold_backward (the saved tensor first) lay out their own.
template <class Op>
at::Tensor backward(const at::Tensor& grad_output, const at::Tensor& self_or_result, bool is_result) {
  const std::string op = op_name(schema_name(Op::schemas.backward).c_str());
  check_dtype(op, self_or_result, "self_or_result");
  check_matches(op, grad_output, "grad_output", self_or_result, "self_or_result");
  if constexpr (Op::gradient_needs_input) {
    TORCH_CHECK(!is_result, op, ": ", Op::name, "'s gradient is taken from its input (is_result=False): its result ",
                "does not determine it");
    at::Tensor grad_input = output_like({grad_output, self_or_result});
    compute<Op::template Backward>(grad_input, {grad_output, self_or_result});
    return grad_input;
  } else if constexpr (HasInputBackward<Op>::value) {
    at::Tensor grad_input = output_like({grad_output, self_or_result});
    if (is_result) {
      compute<Op::template Backward>(grad_input, {grad_output, self_or_result});
    } else {
      compute<Op::template InputBackward>(grad_input, {grad_output, self_or_result});
    }
    return grad_input;
  } else {
    at::Tensor grad_input = output_like({self_or_result, grad_output});
    compute<Op::template Backward>(grad_input, {grad_output, self_or_result});
    return grad_input;
  }
}

// Whether `schema` is `name` + `rest`: the pattern every activation's schemas follow.
constexpr bool spells(const char* schema, const char* name, const char* rest) {
  while (*name) {
    if (*schema++ != *name++) return false;
  }
  while (*rest) {
    if (*schema++ != *rest++) return false;
  }
  return true;
}

template <class Op>
void define(torch::Library& m) {
  constexpr Schemas s = Op::schemas;
  static_assert(spells(s.forward, Op::name, "(Tensor x) -> Tensor") && spells(s.inplace, Op::name, "_(") &&
                    spells(s.out, Op::name, ".out(") && spells(s.backward, Op::name, "_backward("),
                "an activation's schemas are name(Tensor x) -> Tensor, name_(, name.out( and name_backward(");
  m.def(s.forward);
  m.def(s.inplace);
  m.def(s.out);
  m.def(s.backward);
}

template <class Op>
void register_kernels(torch::Library& m) {
  impl_activation<Op>(m, &forward<Op>, &forward_<Op>, &forward_out<Op>, &backward<Op>);
}

// The gated forms: act(gate) * up in one pass, and both gradients in one pass, over the halves of a merged x (strided
// views, read where they lie) or over two tensors.
template <template <typename> class F>
void compute_two(const at::Tensor& out0, const at::Tensor& out1, std::initializer_list<at::Tensor> inputs) {
  run_elementwise<F, AtenBuild>({out0, out1}, inputs, {});
}

std::string gated_op(const char* schema) { return op_name(schema_name(schema).c_str()); }

// The two halves of t = [..., 2d] along its last dimension (views).
std::pair<at::Tensor, at::Tensor> halves(const at::Tensor& t) {
  const int64_t d = t.size(-1) / 2;
  return {t.narrow(-1, 0, d), t.narrow(-1, d, d)};
}

// x = [..., 2d]: its gate and up halves.
std::pair<at::Tensor, at::Tensor> checked_halves(const std::string& op, const at::Tensor& x) {
  check_dtype(op, x, "x");
  TORCH_CHECK(x.dim() >= 1 && x.size(-1) % 2 == 0, op, ": expected x of shape [..., 2d] (the gate and up halves ",
              "along its last dimension), but got ", shape_str(x));
  return halves(x);
}

// out may be gate or up itself (each element is read before it is written), not a part of either, as far as ATen
// can tell (as for its own elementwise ops: views it cannot compare are let through).
void check_out_overlap(const at::Tensor& out, const at::Tensor& gate, const at::Tensor& up) {
  at::assert_no_internal_overlap(out);
  at::assert_no_partial_overlap(out, gate);
  at::assert_no_partial_overlap(out, up);
}

void check_pair(const std::string& op, const at::Tensor& gate, const at::Tensor& up) {
  check_dtype(op, gate, "gate");
  check_matches(op, up, "up", gate, "gate");
}

template <class Op>
at::Tensor gated_merged(const at::Tensor& x) {
  const auto [gate, up] = checked_halves(gated_op(Op::gated.merged), x);
  at::Tensor out = output_like({gate, up});
  compute<GatedOf<Op>::template Forward>(out, {gate, up});
  return out;
}

template <class Op>
at::Tensor& gated_merged_out(const at::Tensor& x, at::Tensor& out) {
  const std::string op = gated_op(Op::gated.merged);  // out= goes by the op's name, as the activations'
  const auto [gate, up] = checked_halves(op, x);
  check_matches(op, out, "out", gate, "x[..., :d]");
  check_out_overlap(out, gate, up);
  compute<GatedOf<Op>::template Forward>(out, {gate, up});
  return out;
}

// The [..., 2d] gradient of x, laid out as x where x is dense.
template <class Op>
at::Tensor gated_merged_backward(const at::Tensor& grad_output, const at::Tensor& x) {
  const std::string op = gated_op(Op::gated.merged_backward);
  const auto [gate, up] = checked_halves(op, x);
  check_matches(op, grad_output, "grad_output", gate, "x[..., :d]");
  at::Tensor grad_x = at::empty_like(x);
  const auto [grad_gate, grad_up] = halves(grad_x);
  compute_two<GatedOf<Op>::template Backward>(grad_gate, grad_up, {grad_output, gate, up});
  return grad_x;
}

template <class Op>
at::Tensor gated_pair(const at::Tensor& gate, const at::Tensor& up) {
  check_pair(gated_op(Op::gated.pair), gate, up);
  at::Tensor out = output_like({gate, up});
  compute<GatedOf<Op>::template Forward>(out, {gate, up});
  return out;
}

template <class Op>
at::Tensor& gated_pair_out(const at::Tensor& gate, const at::Tensor& up, at::Tensor& out) {
  const std::string op = gated_op(Op::gated.pair);
  check_pair(op, gate, up);
  check_matches(op, out, "out", gate, "gate");
  check_out_overlap(out, gate, up);
  compute<GatedOf<Op>::template Forward>(out, {gate, up});
  return out;
}

// Each gradient laid out as ATen lays out an op on (grad_output, its input).
template <class Op>
std::tuple<at::Tensor, at::Tensor> gated_pair_backward(const at::Tensor& grad_output, const at::Tensor& gate,
                                                       const at::Tensor& up) {
  const std::string op = gated_op(Op::gated.pair_backward);
  check_pair(op, gate, up);
  check_matches(op, grad_output, "grad_output", gate, "gate");
  at::Tensor grad_gate = output_like({grad_output, gate}), grad_up = output_like({grad_output, up});
  compute_two<GatedOf<Op>::template Backward>(grad_gate, grad_up, {grad_output, gate, up});
  return {grad_gate, grad_up};
}

template <class Op>
void define_gated(torch::Library& m) {
  constexpr GatedSchemas s = Op::gated;
  static_assert(spells(s.merged, Op::name, "_and_mul(Tensor x) -> Tensor") &&
                    spells(s.merged_out, Op::name, "_and_mul.out(") &&
                    spells(s.merged_backward, Op::name, "_and_mul_backward(") &&
                    spells(s.pair, Op::name, "_mul(Tensor gate, Tensor up) -> Tensor") &&
                    spells(s.pair_out, Op::name, "_mul.out(") && spells(s.pair_backward, Op::name, "_mul_backward("),
                "a gated activation's schemas are name_and_mul(Tensor x) -> Tensor, name_and_mul.out(, "
                "name_and_mul_backward(, name_mul(Tensor gate, Tensor up) -> Tensor, name_mul.out( and "
                "name_mul_backward(");
  for (const char* schema : {s.merged, s.merged_out, s.merged_backward, s.pair, s.pair_out, s.pair_backward}) {
    m.def(schema);
  }
}

template <class Op>
void register_gated_kernels(torch::Library& m) {
  impl_gated<Op>(m, &gated_merged<Op>, &gated_merged_out<Op>, &gated_merged_backward<Op>, &gated_pair<Op>,
                 &gated_pair_out<Op>, &gated_pair_backward<Op>);
}

// selu_alpha_dropout: SELU, then AlphaDropout in train mode, in one pass. The train-mode forward
// draws a (seed, offset) pair and returns it beside the result; the backward replays the mask from it.
void check_probability(const std::string& op, double p) {
  TORCH_CHECK_VALUE(p >= 0 && p <= 1, op, ": expected p in [0, 1], but got ", probability_str(p));
}

std::tuple<at::Tensor, at::Tensor> selu_alpha_dropout_train(const at::Tensor& x, double p,
                                                             std::optional<at::Generator> generator) {
  const std::string op = op_name("selu_alpha_dropout");
  check_dtype(op, x, "x");
  check_probability(op, p);
  at::Tensor out = at::empty_like(x);
  at::Tensor rng_state = at::empty({2}, x.options().dtype(at::kLong));
  PhiloxSource source;
  if (x.is_cpu()) {
    auto* gen = at::get_generator_or_default<at::CPUGeneratorImpl>(generator, at::detail::getDefaultCPUGenerator());
    int64_t* pair = rng_state.mutable_data_ptr<int64_t>();
    {
      const std::lock_guard<std::mutex> lock(gen->mutex_);
      pair[0] = static_cast<int64_t>(gen->random64());  // no Philox offset on the CPU: a fresh key per call
    }
    pair[1] = 0;
    source.recorded = pair;
  }
#ifdef ACT_WITH_CUDA
  if (x.is_cuda()) {
    source = cuda_philox_source(generator, x.device(), 4);  // one Philox block (4 words) per element group
    source.record = rng_state.mutable_data_ptr<int64_t>();
    if (x.numel() == 0) rng_state.zero_();  // no kernel runs to record it
  }
#endif
  compute<SeluAlphaDropoutForward>(out, {x}, alpha_dropout_args(p, source));
  return {out, rng_state};
}

at::Tensor selu_alpha_dropout_backward(const at::Tensor& grad_output, const at::Tensor& x,
                                       const at::Tensor& rng_state, double p) {
  const std::string op = op_name("selu_alpha_dropout_backward");
  check_dtype(op, x, "x");
  check_matches(op, grad_output, "grad_output", x, "x");
  check_probability(op, p);
  TORCH_CHECK(rng_state.scalar_type() == at::kLong && rng_state.numel() == 2 && rng_state.is_contiguous() &&
                  rng_state.device() == x.device(),
              op, ": expected rng_state as the forward returned it (2 contiguous torch.int64 on the device of x), ",
              "but got ", rng_state.is_contiguous() ? "" : "non-contiguous ", dtype_name(rng_state.scalar_type()),
              " of shape ", shape_str(rng_state), " on ", rng_state.device());
  // Laid out as the forward's result (empty_like(x) both; autograd restores x's layout where a saved-tensor
  // hook changed it), so each element replays the word its offset drew.
  at::Tensor grad_input = at::empty_like(x);
  PhiloxSource source;
  source.recorded = rng_state.const_data_ptr<int64_t>();
  compute<SeluAlphaDropoutBackward>(grad_input, {grad_output, x}, alpha_dropout_args(p, source));
  return grad_input;
}

// Train mode draws the mask; eval mode, or p = 0, is SELU.
at::Tensor selu_alpha_dropout(const at::Tensor& x, double p, bool train, std::optional<at::Generator> generator) {
  const std::string op = op_name("selu_alpha_dropout");
  check_dtype(op, x, "x");
  check_probability(op, p);
  if (!train || p == 0) return forward_op<Selu>().call(x);
  return std::get<0>(selu_alpha_dropout_train_op().call(x, p, std::move(generator)));
}

// gelu with torch's `approximate` argument: "none" is act::gelu, "tanh" act::gelu_tanh.
bool gelu_is_tanh(const char* op, c10::string_view approximate) {
  TORCH_CHECK_VALUE(approximate == "none" || approximate == "tanh", op_name(op),
                    ": expected approximate \"none\" or \"tanh\", but got \"", std::string(approximate), "\"");
  return approximate == "tanh";
}

at::Tensor gelu_approximate(const at::Tensor& x, c10::string_view approximate) {
  return gelu_is_tanh("gelu", approximate) ? forward_op<GeluTanh>().call(x) : forward_op<Gelu>().call(x);
}

at::Tensor& gelu_approximate_(at::Tensor& x, c10::string_view approximate) {
  return gelu_is_tanh("gelu_", approximate) ? inplace_op<GeluTanh>().call(x) : inplace_op<Gelu>().call(x);
}

at::Tensor& gelu_approximate_out(const at::Tensor& x, c10::string_view approximate, at::Tensor& out) {
  return gelu_is_tanh("gelu.out", approximate) ? out_op<GeluTanh>().call(x, out) : out_op<Gelu>().call(x, out);
}

at::Tensor gelu_backward_approximate(const at::Tensor& grad_output, const at::Tensor& self,
                                     c10::string_view approximate) {
  return gelu_is_tanh("gelu_backward", approximate) ? backward_op<GeluTanh>().call(grad_output, self, false)
                                                    : backward_op<Gelu>().call(grad_output, self, false);
}

void register_gelu_approximate(torch::Library& m) {
  m.impl("gelu.approximate", &gelu_approximate);
  m.impl("gelu_.approximate", &gelu_approximate_);
  m.impl("gelu.approximate_out", &gelu_approximate_out);
  m.impl("gelu_backward.approximate", &gelu_backward_approximate);
}

void register_all_kernels(torch::Library& m) {
#define ACT_REGISTER(Op) register_kernels<Op>(m);
  ACT_ACTIVATIONS(ACT_REGISTER)
#undef ACT_REGISTER
#define ACT_REGISTER_GATED(Op) register_gated_kernels<Op>(m);
  ACT_GATED(ACT_REGISTER_GATED)
#undef ACT_REGISTER_GATED
  m.impl("_selu_alpha_dropout", &selu_alpha_dropout_train);
  m.impl("selu_alpha_dropout_backward", &selu_alpha_dropout_backward);
}

}  // namespace

TORCH_LIBRARY(act, m) {
#define ACT_DEFINE(Op) define<Op>(m);
  ACT_ACTIVATIONS(ACT_DEFINE)
#undef ACT_DEFINE
#define ACT_DEFINE_GATED(Op) define_gated<Op>(m);
  ACT_GATED(ACT_DEFINE_GATED)
#undef ACT_DEFINE_GATED
  m.def("selu_alpha_dropout(Tensor x, float p, bool train, *, Generator? generator=None) -> Tensor");
  m.def("_selu_alpha_dropout(Tensor x, float p, *, Generator? generator=None) -> (Tensor result, Tensor rng_state)",
        {at::Tag::nondeterministic_seeded});
  m.def("selu_alpha_dropout_backward(Tensor grad_output, Tensor x, Tensor rng_state, float p) -> Tensor");
  // torch's gelu signatures, each one of the two GELU activations' ops.
  m.def("gelu.approximate(Tensor x, *, str approximate) -> Tensor");
  m.def("gelu_.approximate(Tensor(a!) x, *, str approximate) -> Tensor(a!)");
  m.def("gelu.approximate_out(Tensor x, *, str approximate, Tensor(a!) out) -> Tensor(a!)");
  m.def("gelu_backward.approximate(Tensor grad_output, Tensor self, *, str approximate) -> Tensor");
}

TORCH_LIBRARY_IMPL(act, CompositeImplicitAutograd, m) {
  m.impl("selu_alpha_dropout", &selu_alpha_dropout);
  register_gelu_approximate(m);
}

// Under vmap too they are their parts (whose batching rules batching.cpp registers), as functorch decomposes
// ATen's composite ops.
TORCH_LIBRARY_IMPL(act, FuncTorchBatchedDecomposition, m) {
  m.impl("selu_alpha_dropout", &selu_alpha_dropout);
  register_gelu_approximate(m);
}

TORCH_LIBRARY_IMPL(act, CPU, m) { register_all_kernels(m); }

#ifdef ACT_WITH_CUDA
TORCH_LIBRARY_IMPL(act, CUDA, m) { register_all_kernels(m); }
#endif

}  // namespace act
