// Launch-shape probe for scripts/probe_launch.py: the shipped kernel (kernels/elementwise.cuh) on a
// dense tensor with the packs per thread and the grid chosen at run time, so one build on a GPU
// times every shape. Not part of the package.
#include <torch/extension.h>

#include <c10/cuda/CUDAStream.h>

#include "../kernels/elementwise.cuh"

namespace act {

// blocks < 0: no launch; the kernel's resident blocks per SM (for the shipped shape's one-wave rule).
template <int U, typename T, typename Op>
int64_t launch_shape(Op op, torch::Tensor& out, const std::vector<torch::Tensor>& inputs, int64_t blocks) {
  constexpr int kVec = 16 / sizeof(T);
  constexpr int N = Op::arity + 1;
  TORCH_CHECK(inputs.size() == size_t(Op::arity), "the op takes ", Op::arity, " inputs");
  if (blocks < 0) return runtime::resident_blocks_per_sm(strided_activation_kernel<kVec, U, T, Op, 0>, kThreads);
  Pointers<T, N> ptr;
  Rows<N, 0> rows;
  for (int k = 0; k < N; ++k) {
    ptr.p[k] = reinterpret_cast<T*>((k == 0 ? out : inputs[k - 1]).data_ptr());
    rows.step[k] = 1;
  }
  rows.tail = static_cast<uint32_t>(out.numel());
  const uint32_t n_packs = static_cast<uint32_t>(out.numel() / kVec);
  const int64_t needed = (n_packs + int64_t(kThreads) * U - 1) / (int64_t(kThreads) * U);
  const auto grid = static_cast<unsigned>(blocks > 0 ? std::min(blocks, needed) : needed);
  strided_activation_kernel<kVec, U, T, Op, 0>
      <<<grid, kThreads, 0, c10::cuda::getCurrentCUDAStream()>>>(op, ptr, rows, n_packs, 0, 0);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return 0;
}

template <typename T, typename Op>
int64_t by_unroll(Op op, torch::Tensor& out, const std::vector<torch::Tensor>& inputs, int64_t unroll, int64_t blocks) {
  switch (unroll) {
    case 1: return launch_shape<1, T>(op, out, inputs, blocks);
    case 2: return launch_shape<2, T>(op, out, inputs, blocks);
    case 4: return launch_shape<4, T>(op, out, inputs, blocks);
    case 8: return launch_shape<8, T>(op, out, inputs, blocks);
    default: TORCH_CHECK(false, "unroll 1, 2, 4 or 8");
  }
}

template <typename T>
int64_t by_op(const std::string& op, torch::Tensor& out, const std::vector<torch::Tensor>& inputs, int64_t unroll,
           int64_t blocks) {
  if (op == "selu") return by_unroll<T>(SeluForward<T>{}, out, inputs, unroll, blocks);
  if (op == "relu") return by_unroll<T>(ReluForward<T>{}, out, inputs, unroll, blocks);
  if (op == "relu_backward") return by_unroll<T>(ReluBackward<T>{}, out, inputs, unroll, blocks);
  TORCH_CHECK(op == "selu_alpha_dropout", "unknown op ", op);
  PhiloxSource source;
  source.seed = 12345;
  by_unroll<T>(SeluAlphaDropoutForward<T>(alpha_dropout_args(0.1, source)), out, inputs, unroll, blocks);
}

// out = op(inputs...) on dense tensors alike; relu_backward takes (grad, result). With blocks < 0, the
// kernel's resident blocks per SM instead.
int64_t run(const std::string& op, torch::Tensor out, std::vector<torch::Tensor> inputs, int64_t unroll,
         int64_t blocks) {
  TORCH_CHECK(out.is_cuda() && out.is_contiguous() && out.numel() % 8 == 0 && out.numel() < (int64_t(1) << 31));
  for (const auto& x : inputs) {
    TORCH_CHECK(x.is_cuda() && x.is_contiguous() && x.sizes() == out.sizes() && x.dtype() == out.dtype(),
                "inputs like out");
  }
  switch (out.scalar_type()) {
    case torch::kFloat: return by_op<float>(op, out, inputs, unroll, blocks);
    case torch::kDouble: return by_op<double>(op, out, inputs, unroll, blocks);
    case torch::kBFloat16: return by_op<c10::BFloat16>(op, out, inputs, unroll, blocks);
    default: TORCH_CHECK(false, "float32, float64 or bfloat16");
  }
}

}  // namespace act

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("run", &act::run); }
