// The CUDA generator's Philox state for one launch of a random op.
#include <ATen/cuda/CUDAGeneratorImpl.h>

#include <mutex>

#include "cuda_generator.h"

namespace act {

PhiloxSource cuda_philox_source(const std::optional<at::Generator>& generator, c10::Device device,
                                uint64_t increment) {
  auto* gen = at::get_generator_or_default<at::CUDAGeneratorImpl>(
      generator, at::cuda::detail::getDefaultCUDAGenerator(device.index()));
  at::PhiloxCudaState state;
  {
    // As torch's own random ops: the generator's state is shared by every thread that draws from it.
    const std::lock_guard<std::mutex> lock(gen->mutex_);
    state = gen->philox_cuda_state(increment);
  }
  PhiloxSource source;
  if (state.captured_) {
    source.captured_seed = state.seed_.ptr;
    source.captured_offset = state.offset_.ptr;
    source.offset_in_graph = state.offset_intragraph_;
  } else {
    source.seed = state.seed_.val;
    source.offset = state.offset_.val;
  }
  return source;
}

}  // namespace act
