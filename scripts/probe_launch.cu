// Launch-shape probe for scripts/probe_launch.py: the shipped kernel (kernels/elementwise.cuh) on a
// dense tensor with the packs per thread and the grid chosen at run time, so one build on a GPU
// times every shape; and candidate functors beside the shipped ones. Not part of the package.
#include <torch/extension.h>

#include <c10/cuda/CUDAStream.h>

#include "../kernels/elementwise.cuh"

namespace act {

// Candidate for the random op's 16-bit forward: the kept value a * selu(x) + b_keep with a and b_keep
// folded into SELU's constants (a dropped one is that value * 0 + b_drop: NaN and +inf still give NaN,
// as torch's v * 0 + b_drop does), and expm1 near 0 by x + x^2 / 2 from x = -2^-6 (relative error below
// 2^-14.6, where the hardware exp2 minus 1 is within 2^-16). In SASS for sm_90 the one-pack-a-thread
// kernel's float instructions are 74 against the shipped functor's 116 (FFMA, FMUL, FADD, FSEL, FSETP).
// Meant to stay within one 16-bit rounding of the float64 math, as the shipped functor is.
template <typename scalar_t>
struct FoldedSeluAlphaDropoutForward : SeluAlphaDropoutForward<scalar_t> {  // its mask and dropped value
  float neg_scale, pos_scale, folded_bias, exp_bias;  // folded_bias: b_keep, -0.0 where it is zero

  explicit FoldedSeluAlphaDropoutForward(const AlphaDropoutArgs& args) : SeluAlphaDropoutForward<scalar_t>(args) {
    // At p = 1 nothing is kept and a dropped value is selu(x) * 0 + -0.0: the kept value is selu(x)
    // there. A zero bias (p = 0 or 1) is -0.0, so that a -0.0 stays -0.0.
    const bool none_kept = args.keep_scale == 0;
    const double a = none_kept ? 1 : args.keep_scale;
    neg_scale = float(kSeluAlpha * kSeluScale * a);
    pos_scale = float(kSeluScale * a);
    folded_bias = none_kept || args.kept_bias == 0 ? -0.f : float(args.kept_bias);
    exp_bias = float((none_kept ? 0 : args.kept_bias) - kSeluAlpha * kSeluScale * a);
  }

  __device__ float operator()(uint32_t bits, float x) const {
#ifndef __CUDA_ARCH__
    return 0;  // device code only: exp_flush_subnormal exists in the device pass alone
#else
    const float series = x * (neg_scale + x * (0.5f * neg_scale)) + folded_bias;
    const float exp_branch = exp_flush_subnormal(x) * neg_scale + exp_bias;
    const float negative = x > -0.015625f ? series : exp_branch;
    const float kept_value = x <= 0.f ? negative : x * pos_scale + folded_bias;
    return this->kept(bits) ? kept_value : kept_value * 0.f + this->dropped_bias;
#endif
  }
};

template <int U, typename T, typename Op>
void launch_shape(Op op, torch::Tensor& out, const torch::Tensor& x, int64_t blocks) {
  constexpr int kVec = 16 / sizeof(T);
  Pointers<T, 2> ptr{{reinterpret_cast<T*>(out.data_ptr()), reinterpret_cast<T*>(x.data_ptr())}};
  Rows<2, 0> rows;
  rows.step[0] = rows.step[1] = 1;
  rows.tail = static_cast<uint32_t>(x.numel());
  const uint32_t n_packs = static_cast<uint32_t>(x.numel() / kVec);
  const int64_t needed = (n_packs + int64_t(kThreads) * U - 1) / (int64_t(kThreads) * U);
  const auto grid = static_cast<unsigned>(blocks > 0 ? std::min(blocks, needed) : needed);
  strided_activation_kernel<kVec, U, T, Op, 0>
      <<<grid, kThreads, 0, c10::cuda::getCurrentCUDAStream()>>>(op, ptr, rows, n_packs, 0, 0);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

template <typename T, typename Op>
void by_unroll(Op op, torch::Tensor& out, const torch::Tensor& x, int64_t unroll, int64_t blocks) {
  switch (unroll) {
    case 1: return launch_shape<1, T>(op, out, x, blocks);
    case 2: return launch_shape<2, T>(op, out, x, blocks);
    case 4: return launch_shape<4, T>(op, out, x, blocks);
    case 8: return launch_shape<8, T>(op, out, x, blocks);
    default: TORCH_CHECK(false, "unroll 1, 2, 4 or 8");
  }
}

template <typename T>
void by_op(const std::string& op, torch::Tensor& out, const torch::Tensor& x, int64_t unroll, int64_t blocks) {
  if (op == "selu") return by_unroll<T>(SeluForward<T>{}, out, x, unroll, blocks);
  if (op == "relu") return by_unroll<T>(ReluForward<T>{}, out, x, unroll, blocks);
  PhiloxSource source;
  source.seed = 12345;
  const AlphaDropoutArgs args = alpha_dropout_args(0.1, source);
  if constexpr (sizeof(T) == 2) {
    if (op == "selu_alpha_dropout_folded") {
      return by_unroll<T>(FoldedSeluAlphaDropoutForward<T>(args), out, x, unroll, blocks);
    }
  }
  TORCH_CHECK(op == "selu_alpha_dropout", "unknown op ", op, " for this dtype");
  by_unroll<T>(SeluAlphaDropoutForward<T>(args), out, x, unroll, blocks);
}

void run(const std::string& op, torch::Tensor out, torch::Tensor x, int64_t unroll, int64_t blocks) {
  TORCH_CHECK(x.is_cuda() && x.is_contiguous() && out.is_contiguous() && x.numel() % 8 == 0 &&
              x.numel() < (int64_t(1) << 31) && out.sizes() == x.sizes() && out.dtype() == x.dtype());
  if (x.scalar_type() == torch::kFloat) return by_op<float>(op, out, x, unroll, blocks);
  TORCH_CHECK(x.scalar_type() == torch::kBFloat16, "float32 or bfloat16");
  by_op<c10::BFloat16>(op, out, x, unroll, blocks);
}

}  // namespace act

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("run", &act::run); }
