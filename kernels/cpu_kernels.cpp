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

// The loop is compiled for x86-64-v3 (AVX2, FMA) and for the baseline, and the loader picks one:
// a wheel must run on any x86-64 CPU, and AVX2 doubles the lanes of every vectorized step.
#if defined(__GNUC__) && defined(__x86_64__) && defined(__linux__)
#define ACT_CPU_CLONES __attribute__((target_clones("arch=x86-64-v3", "default"), noinline))
#else
#define ACT_CPU_CLONES
#endif

// Pointers may alias (in-place ops): the compiler checks for overlap at run time and vectorizes.
template <typename scalar_t, typename Op, size_t... I>
ACT_CPU_CLONES void cpu_chunk(Op op, scalar_t* out, std::array<const scalar_t*, sizeof...(I)> in, int64_t begin,
                              int64_t end, std::index_sequence<I...>) {
  using acc_t = typename Op::acc_t;
  for (int64_t i = begin; i < end; ++i) {
    out[i] = static_cast<scalar_t>(op(static_cast<acc_t>(in[I][i])...));
  }
}

template <typename scalar_t, typename Op, size_t... I>
void cpu_loop(Op op, scalar_t* out, std::array<const scalar_t*, sizeof...(I)> in, int64_t n,
              std::index_sequence<I...> seq) {
  at::parallel_for(0, n, kGrainSize, [=](int64_t begin, int64_t end) { cpu_chunk(op, out, in, begin, end, seq); });
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
