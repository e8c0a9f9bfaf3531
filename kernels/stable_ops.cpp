// The ACT_STABLE_ABI build's operator layer: the same schemas, checks and kernels as ops.cpp, on
// torch's stable C ABI (torch/csrc/stable), so that one compiled library loads in every torch release
// from the targeted one on. That ABI (as of the targeted 2.11) carries no autograd, no generators and
// no typed errors: activations_ext/_stable.py registers the autograd, the functionalization and the
// random forward, and checks arguments first so that errors keep their Python types.
#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/ops.h>
#include <torch/csrc/stable/tensor.h>
#include <torch/headeronly/core/ScalarType.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "backends.h"
#include "layout.h"
#include "messages.h"

namespace act {
namespace {

using torch::stable::Tensor;

// As Python prints a dtype, so that a check failing here (under torch.inference_mode, where the Python
// layer is skipped) reads as the Python one does.
std::string dtype_name(c10::ScalarType dtype) {
  switch (dtype) {
    case c10::ScalarType::Float:
      return "torch.float32";
    case c10::ScalarType::Double:
      return "torch.float64";
    case c10::ScalarType::Half:
      return "torch.float16";
    case c10::ScalarType::BFloat16:
      return "torch.bfloat16";
    case c10::ScalarType::Long:
      return "torch.int64";
    case c10::ScalarType::Int:
      return "torch.int32";
    case c10::ScalarType::Bool:
      return "torch.bool";
    default:
      return std::string("torch.") + c10::toString(dtype);
  }
}

[[noreturn]] void fail(const std::string& message) { throw std::runtime_error(message); }
[[noreturn]] void fail_value(const std::string& message) { throw std::invalid_argument(message); }

void check_dtype(const std::string& op, const Tensor& t, const char* arg) {
  if (is_supported_dtype(t.scalar_type())) return;
  fail(op + ": expected " + arg + " of dtype " + kSupportedDtypes + ", but got " + dtype_name(t.scalar_type()));
}

std::string device_str(const Tensor& t) { return t.is_cuda() ? "cuda:" + std::to_string(t.get_device()) : "cpu"; }

void check_matches(const std::string& op, const Tensor& t, const char* arg, const Tensor& like, const char* like_arg) {
  if (t.is_cuda() != like.is_cuda() || t.get_device() != like.get_device()) {
    fail(op + ": expected " + arg + " on the device of " + like_arg + " (" + device_str(like) + "), but got " +
         device_str(t));
  }
  if (t.scalar_type() != like.scalar_type()) {
    fail(op + ": expected " + arg + " of the dtype of " + like_arg + " (" + dtype_name(like.scalar_type()) +
         "), but got " + dtype_name(t.scalar_type()));
  }
  if (shape_str(t) != shape_str(like)) {
    fail(op + ": expected " + arg + " of the shape of " + like_arg + " " + shape_str(like) + ", but got " +
         shape_str(t));
  }
}

void check_probability(const std::string& op, double p) {
  if (p >= 0 && p <= 1) return;
  fail_value(op + ": expected p in [0, 1], but got " + probability_str(p));
}

// Every element is one memory location apart, in some order of the dimensions (ATen's test).
bool non_overlapping_and_dense(const Tensor& t) {
  constexpr int64_t kMaxChecked = 64;  // more dimensions than this: reported as not dense, the safe side
  if (t.dim() > kMaxChecked) return false;
  int64_t dims[kMaxChecked];
  int64_t n = 0;
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.size(d) != 1) dims[n++] = d;
  }
  std::sort(dims, dims + n, [&](int64_t a, int64_t b) { return t.stride(a) < t.stride(b); });
  int64_t expected = 1;
  for (int64_t i = 0; i < n; ++i) {
    if (t.stride(dims[i]) != expected) return false;
    expected *= t.size(dims[i]);
  }
  return true;
}

// ATen's overlap checks for written tensors (at::assert_no_internal_overlap and
// assert_no_partial_overlap), in their words.
void check_no_internal_overlap(const Tensor& t) {
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.size(d) > 1 && t.stride(d) == 0) {
      fail("unsupported operation: more than one element of the written-to tensor refers to a single memory "
           "location. Please clone() the tensor before performing the operation.");
    }
  }
}

void check_no_partial_overlap(const Tensor& out, const Tensor& in) {
  if (out.numel() == 0 || in.numel() == 0) return;
  if (!non_overlapping_and_dense(out) || !non_overlapping_and_dense(in)) return;
  const char* a = static_cast<const char*>(out.const_data_ptr());
  const char* b = static_cast<const char*>(in.const_data_ptr());
  const char* a_end = a + out.numel() * out.element_size();
  const char* b_end = b + in.numel() * in.element_size();
  bool same_strides = out.dim() == in.dim();
  for (int64_t d = 0; same_strides && d < out.dim(); ++d) same_strides = out.stride(d) == in.stride(d);
  const bool full = a == b && a_end == b_end && same_strides;
  if (!full && a < b_end && b < a_end) {
    fail("unsupported operation: some elements of the input tensor and the written-to tensor refer to a single "
         "memory location. Please clone() the tensor before performing the operation.");
  }
}

// How this build hands a view to a backend, for layout.h's run_elementwise.
struct StableBuild {
  template <template <typename> class F>
  static void launch(const Tensor& out, const StridedView& view, const ArgsOf<F>& args) {
#ifdef ACT_WITH_CUDA
    if (out.is_cuda()) return cuda_elementwise<F>(out.scalar_type(), out.get_device(), view, args);
#endif
    cpu_elementwise<F>(out.scalar_type(), view, args);
  }
};

template <template <typename> class F>
void run(const Tensor& out, std::initializer_list<Tensor> operands, const ArgsOf<F>& args = {}) {
  run_elementwise<F, StableBuild>(out, operands, args);
}

template <class Op>
Tensor forward(Tensor x) {
  check_dtype(op_name(Op::name), x, "x");
  Tensor out = torch::stable::empty_like(x);
  run<Op::template Forward>(out, {x});
  return out;
}

template <class Op>
Tensor forward_(Tensor x) {
  check_dtype(op_name(Op::name), x, "x");
  check_no_internal_overlap(x);
  run<Op::template Forward>(x, {x});
  return x;
}

template <class Op>
Tensor forward_out(Tensor x, Tensor out) {
  const std::string op = op_name(Op::name);
  check_dtype(op, x, "x");
  check_matches(op, out, "out", x, "x");
  check_no_internal_overlap(out);
  check_no_partial_overlap(out, x);
  run<Op::template Forward>(out, {x});
  return out;
}

template <class Op>
Tensor backward(Tensor grad_output, Tensor result) {
  const std::string op = op_name(Op::name, "_backward");
  check_dtype(op, result, "result");
  check_matches(op, grad_output, "grad_output", result, "result");
  Tensor grad_input = torch::stable::empty_like(result);
  run<Op::template Backward>(grad_input, {grad_output, result});
  return grad_input;
}

void check_rng_state(const std::string& op, const Tensor& rng_state, const Tensor& x) {
  if (rng_state.scalar_type() == c10::ScalarType::Long && rng_state.numel() == 2 && rng_state.is_contiguous() &&
      rng_state.is_cuda() == x.is_cuda() && rng_state.get_device() == x.get_device()) {
    return;
  }
  fail(op + ": expected rng_state as the forward returned it (2 contiguous torch.int64 on the device of x), " +
       "but got " + (rng_state.is_contiguous() ? "" : "non-contiguous ") + dtype_name(rng_state.scalar_type()) +
       " of shape " + shape_str(rng_state) + " on " + device_str(rng_state));
}

// selu_alpha_dropout's train-mode forward from a drawn (seed, offset) pair: _stable.py draws it from the
// generator (on the device, so CUDA graphs replay fresh masks) and returns it beside this result.
Tensor selu_alpha_dropout_from_state(Tensor x, Tensor rng_state, double p) {
  const std::string op = op_name("selu_alpha_dropout");
  check_dtype(op, x, "x");
  check_probability(op, p);
  check_rng_state(op, rng_state, x);
  Tensor out = torch::stable::empty_like(x);
  PhiloxSource source;
  source.recorded = static_cast<const int64_t*>(rng_state.const_data_ptr());
  run<SeluAlphaDropoutForward>(out, {x}, alpha_dropout_args(p, source));
  return out;
}

Tensor selu_alpha_dropout_backward(Tensor grad_output, Tensor x, Tensor rng_state, double p) {
  const std::string op = op_name("selu_alpha_dropout_backward");
  check_dtype(op, x, "x");
  check_matches(op, grad_output, "grad_output", x, "x");
  check_probability(op, p);
  check_rng_state(op, rng_state, x);
  Tensor grad_input = torch::stable::empty_like(x);  // laid out as the forward's result: the same words
  PhiloxSource source;
  source.recorded = static_cast<const int64_t*>(rng_state.const_data_ptr());
  run<SeluAlphaDropoutBackward>(grad_input, {grad_output, x}, alpha_dropout_args(p, source));
  return grad_input;
}

template <class Op>
void register_kernels(torch::stable::detail::StableLibrary& m) {
  static const std::string name = Op::name, inplace = name + "_", out = name + ".out", back = name + "_backward";
  m.impl(name.c_str(), TORCH_BOX(&forward<Op>));
  m.impl(inplace.c_str(), TORCH_BOX(&forward_<Op>));
  m.impl(out.c_str(), TORCH_BOX(&forward_out<Op>));
  m.impl(back.c_str(), TORCH_BOX(&backward<Op>));
}

void register_all_kernels(torch::stable::detail::StableLibrary& m) {
#define ACT_REGISTER(Op) register_kernels<Op>(m);
  ACT_ACTIVATIONS(ACT_REGISTER)
#undef ACT_REGISTER
  m.impl("_selu_alpha_dropout_from_state", TORCH_BOX(&selu_alpha_dropout_from_state));
  m.impl("selu_alpha_dropout_backward", TORCH_BOX(&selu_alpha_dropout_backward));
}

template <class Op>
void define(torch::stable::detail::StableLibrary& m) {
  static const std::string name = Op::name;
  static const std::string schemas[] = {
      name + "(Tensor x) -> Tensor",
      name + "_(Tensor(a!) x) -> Tensor(a!)",
      name + ".out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)",
      name + "_backward(Tensor grad_output, Tensor result) -> Tensor",
  };
  for (const auto& schema : schemas) m.def(schema.c_str());
}

}  // namespace

// The two ops that take a generator, selu_alpha_dropout and _selu_alpha_dropout, are defined in
// _stable.py: this ABI cannot pass a generator, nor (before 2.12) tag an op nondeterministic_seeded.
STABLE_TORCH_LIBRARY(act, m) {
#define ACT_DEFINE(Op) define<Op>(m);
  ACT_ACTIVATIONS(ACT_DEFINE)
#undef ACT_DEFINE
  m.def("_selu_alpha_dropout_from_state(Tensor x, Tensor rng_state, float p) -> Tensor");
  m.def("selu_alpha_dropout_backward(Tensor grad_output, Tensor x, Tensor rng_state, float p) -> Tensor");
}

STABLE_TORCH_LIBRARY_IMPL(act, CPU, m) { register_all_kernels(m); }

#ifdef ACT_WITH_CUDA
STABLE_TORCH_LIBRARY_IMPL(act, CUDA, m) { register_all_kernels(m); }
#endif

}  // namespace act
