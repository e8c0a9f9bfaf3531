// CPU backend: a plain loop per chunk, chunks spread over threads by at::parallel_for.
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <ATen/Version.h>

#include <array>
#include <string>
#include <utility>

#include "dense_kernels.h"

namespace act {
namespace {

// Elements per task: large enough that the thread pool's overhead stays small (ATen's choice).
constexpr int64_t kGrainSize = 32768;

// Pointers may alias (in-place ops): the compiler checks for overlap at run time and vectorizes.
template <typename scalar_t, typename Op, size_t... I>
C10_ALWAYS_INLINE void cpu_chunk(Op op, scalar_t* out, std::array<const scalar_t*, sizeof...(I)> in, int64_t begin,
                                 int64_t end, std::index_sequence<I...>) {
  using acc_t = typename Op::acc_t;
  for (int64_t i = begin; i < end; ++i) {
    out[i] = static_cast<scalar_t>(op(static_cast<acc_t>(in[I][i])...));
  }
}

// The loop is compiled twice, for the baseline x86-64 and for x86-64-v3 (AVX2, FMA), and each call
// takes the copy that cpu_loop_name() reports: a wheel must run on any x86-64 CPU, and AVX2 doubles
// the lanes of every vectorized step. The choice follows ATen's CPU capability, so
// ATEN_CPU_CAPABILITY=default runs the baseline copy (the tests use that to check both).
#if defined(__GNUC__) && defined(__x86_64__)
#define ACT_HAS_X86_64_V3 1
template <typename scalar_t, typename Op, size_t... I>
__attribute__((target("arch=x86-64-v3"), noinline)) void cpu_chunk_x86_64_v3(
    Op op, scalar_t* out, std::array<const scalar_t*, sizeof...(I)> in, int64_t begin, int64_t end,
    std::index_sequence<I...> seq) {
  cpu_chunk(op, out, in, begin, end, seq);
}

bool use_x86_64_v3() {
  static const bool use = [] {
    const std::string capability = at::get_cpu_capability();
    __builtin_cpu_init();
    return (capability == "AVX2" || capability == "AVX512") && __builtin_cpu_supports("x86-64-v3");
  }();
  return use;
}
#endif

template <typename scalar_t, typename Op, size_t... I>
void cpu_loop(Op op, scalar_t* out, std::array<const scalar_t*, sizeof...(I)> in, int64_t n,
              std::index_sequence<I...> seq) {
  at::parallel_for(0, n, kGrainSize, [=](int64_t begin, int64_t end) {
#ifdef ACT_HAS_X86_64_V3
    if (use_x86_64_v3()) return cpu_chunk_x86_64_v3(op, out, in, begin, end, seq);
#endif
    cpu_chunk(op, out, in, begin, end, seq);
  });
}

}  // namespace

const char* cpu_loop_name() {
#ifdef ACT_HAS_X86_64_V3
  if (use_x86_64_v3()) return "x86-64-v3";
#endif
  return "baseline";
}

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
