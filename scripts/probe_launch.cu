// Launch-shape probe for scripts/probe_launch.py: the shipped kernel (kernels/elementwise.cuh) on a
// dense tensor with the packs per thread and the grid chosen at run time, so one build on a GPU
// times every shape. Not part of the package.
#include <torch/extension.h>

#include <c10/cuda/CUDAStream.h>

#include "../kernels/elementwise.cuh"

namespace act {

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
  TORCH_CHECK(op == "selu_alpha_dropout", "unknown op ", op);
  PhiloxSource source;
  source.seed = 12345;
  by_unroll<T>(SeluAlphaDropoutForward<T>(alpha_dropout_args(0.1, source)), out, x, unroll, blocks);
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
