// CUDA backend: dtype dispatch, then the generic launcher on the tensor's device and current stream.
#include <ATen/Dispatch.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "dense_kernels.h"
#include "vectorized_elementwise.cuh"

namespace act {

void cuda_activation(Activation kind, const at::Tensor& out, c10::ArrayRef<at::Tensor> inputs) {
  const c10::cuda::CUDAGuard device_guard(out.device());
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream(out.device().index());
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, out.scalar_type(), "act_cuda", [&] {
    with_functor<scalar_t>(kind, [&](auto op) {
      InputPointers<scalar_t, decltype(op)::arity> in;
      for (int k = 0; k < decltype(op)::arity; ++k) in.p[k] = inputs[k].const_data_ptr<scalar_t>();
      vectorized_elementwise(op, out.mutable_data_ptr<scalar_t>(), in, out.numel(), stream);
    });
  });
}

}  // namespace act
