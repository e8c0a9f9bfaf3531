// CUDA backend: dtype dispatch, then the generic launcher on the view's device and current stream;
// and the generator state the random ops draw from.
#include <ATen/Dispatch.h>
#include <ATen/cuda/CUDAGeneratorImpl.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <mutex>

#include "backends.h"
#include "elementwise.cuh"

namespace act {

template <template <typename> class F>
void cuda_elementwise(c10::ScalarType dtype, c10::Device device, const StridedView& view, const ArgsOf<F>& args) {
  const c10::cuda::CUDAGuard device_guard(device);
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream(device.index());
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, dtype, "act_cuda", [&] {
    strided_elementwise<scalar_t>(make_functor<F, scalar_t>(args), view, stream);
  });
}

#define ACT_INSTANTIATE(F) \
  template void cuda_elementwise<F>(c10::ScalarType, c10::Device, const StridedView&, const ArgsOf<F>&);
#define ACT_INSTANTIATE_OP(Op) ACT_INSTANTIATE(Op::Forward) ACT_INSTANTIATE(Op::Backward)
ACT_ACTIVATIONS(ACT_INSTANTIATE_OP)
ACT_RANDOM_FUNCTORS(ACT_INSTANTIATE)

at::PhiloxCudaState cuda_philox_state(const std::optional<at::Generator>& generator, c10::Device device,
                                      uint64_t increment) {
  auto* gen = at::get_generator_or_default<at::CUDAGeneratorImpl>(
      generator, at::cuda::detail::getDefaultCUDAGenerator(device.index()));
  // As torch's own random ops: the generator's state is shared by every thread that draws from it.
  const std::lock_guard<std::mutex> lock(gen->mutex_);
  return gen->philox_cuda_state(increment);
}

}  // namespace act
