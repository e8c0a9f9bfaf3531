// CUDA backend: dtype dispatch, then the generic launcher on the view's device and current stream.
#include <ATen/Dispatch.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "backends.h"
#include "elementwise.cuh"

namespace act {

void cuda_activation(Activation kind, c10::ScalarType dtype, c10::Device device, const StridedView& view) {
  const c10::cuda::CUDAGuard device_guard(device);
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream(device.index());
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, dtype, "act_cuda", [&] {
    with_functor<scalar_t>(kind, [&](auto op) { strided_elementwise<scalar_t>(op, view, stream); });
  });
}

}  // namespace act
