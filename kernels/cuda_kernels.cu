// CUDA backend: dtype dispatch, then the generic launcher on the view's device and current stream.
#include "strided_view.h"
#include "elementwise.cuh"
#include "torch_runtime.h"

namespace act {

template <template <typename> class F>
void cuda_elementwise(c10::ScalarType dtype, int device, const StridedView& view, const ArgsOf<F>& args) {
  const runtime::DeviceGuard device_guard(device);
  const cudaStream_t stream = runtime::current_stream(device);
  const DeviceLimits gpu = runtime::device_limits(device);
  dispatch_floating(dtype, [&](auto type) {
    using scalar_t = decltype(type);
    strided_elementwise<scalar_t>(make_functor<F, scalar_t>(args), view, gpu, stream);
  });
}

#define ACT_INSTANTIATE(F) \
  template void cuda_elementwise<F>(c10::ScalarType, int, const StridedView&, const ArgsOf<F>&);
#define ACT_INSTANTIATE_OP(Op) ACT_INSTANTIATE(Op::Forward) ACT_INSTANTIATE(Op::Backward)
ACT_ACTIVATIONS(ACT_INSTANTIATE_OP)
#define ACT_INSTANTIATE_GATED(Op) ACT_INSTANTIATE(GatedOf<Op>::Forward) ACT_INSTANTIATE(GatedOf<Op>::Backward)
ACT_GATED(ACT_INSTANTIATE_GATED)
ACT_OTHER_FUNCTORS(ACT_INSTANTIATE)

}  // namespace act
