// CPU backend: a plain loop per chunk, chunks spread over threads by at::parallel_for.
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>

#include <array>
#include <utility>

#include "dense_kernels.h"

namespace act {
namespace {

// Elements per task: large enough that the thread pool's overhead stays small (ATen's choice).
constexpr int64_t kGrainSize = 32768;

template <typename scalar_t, typename Op, size_t... I>
void cpu_loop(Op op, scalar_t* out, std::array<const scalar_t*, sizeof...(I)> in, int64_t n,
              std::index_sequence<I...>) {
  using acc_t = typename Op::acc_t;
  // Captured by value: with locals the compiler can see nothing else writes the pointers,
  // so it keeps them in registers and vectorizes the loop.
  at::parallel_for(0, n, kGrainSize, [=](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      out[i] = static_cast<scalar_t>(op(static_cast<acc_t>(in[I][i])...));
    }
  });
}

}  // namespace

void cpu_activation(Activation kind, const at::Tensor& out, c10::ArrayRef<at::Tensor> inputs) {
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, out.scalar_type(), "act_cpu", [&] {
    with_functor<scalar_t>(kind, [&](auto op) {
      constexpr int arity = decltype(op)::arity;
      std::array<const scalar_t*, arity> in;
      for (int k = 0; k < arity; ++k) in[k] = inputs[k].const_data_ptr<scalar_t>();
      cpu_loop(op, out.mutable_data_ptr<scalar_t>(), in, out.numel(), std::make_index_sequence<arity>{});
    });
  });
}

}  // namespace act
