#pragma once
// One generic elementwise launcher for every op: 16-byte loads and stores, several packs in
// flight per thread, 64-bit indexing, and a scalar path for the elements before the first
// 16-byte boundary and after the last whole pack. An op supplies only its scalar functor.

#include <c10/cuda/CUDAException.h>
#include <c10/macros/Macros.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <utility>

namespace act {

template <typename T, int N>
struct alignas(sizeof(T) * N) Pack {
  T v[N];
};

template <typename T, int N>
struct InputPointers {
  const T* p[N];
};

// Launch shape. The defaults are the best of scripts/tune_launch.py's sweep on an H100; the
// macros let that script build the alternatives.
#ifndef ACT_THREADS
#define ACT_THREADS 128
#endif
#ifndef ACT_UNROLL_LARGE
#define ACT_UNROLL_LARGE 4
#endif
#ifndef ACT_LARGE_PACKS_LOG2
#define ACT_LARGE_PACKS_LOG2 22
#endif
constexpr int kThreads = ACT_THREADS;
// Packs each thread loads before it uses the first: several in flight cover DRAM latency on
// large tensors, but on mid-size ones they leave too few threads to fill the GPU.
constexpr int kUnrollLarge = ACT_UNROLL_LARGE;
// From this many packs (2^22 packs: 64 MiB) every SM stays busy at kUnrollLarge.
constexpr int64_t kLargePacks = int64_t(1) << ACT_LARGE_PACKS_LOG2;

template <typename T, typename Op, size_t... I>
__device__ __forceinline__ T apply_op(const Op& op, const T (&args)[sizeof...(I)], std::index_sequence<I...>) {
  return static_cast<T>(op(static_cast<typename Op::acc_t>(args[I])...));
}

template <int VEC, int UNROLL, typename T, typename Op>
__global__ void __launch_bounds__(kThreads)
vectorized_elementwise_kernel(Op op, T* __restrict__ out, InputPointers<T, Op::arity> in, int64_t n,
                              int64_t head, int64_t n_packs) {
  constexpr int arity = Op::arity;
  using Seq = std::make_index_sequence<arity>;
  using P = Pack<T, VEC>;

  // Fewer than VEC elements each: block 0 takes them while it also works on its packs.
  const int64_t thread = int64_t(blockIdx.x) * kThreads + threadIdx.x;
  const int64_t tail = head + n_packs * VEC;
  const auto scalar_element = [&](int64_t i) {
    T args[arity];
#pragma unroll
    for (int k = 0; k < arity; ++k) args[k] = in.p[k][i];
    out[i] = apply_op(op, args, Seq{});
  };
  if (thread < head) scalar_element(thread);
  if (tail + thread < n) scalar_element(tail + thread);

  P* out_packs = reinterpret_cast<P*>(out + head);
  const int64_t stride = int64_t(gridDim.x) * kThreads * UNROLL;
  for (int64_t base = int64_t(blockIdx.x) * kThreads * UNROLL + threadIdx.x; base < n_packs; base += stride) {
    P loaded[UNROLL][arity];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const int64_t idx = base + int64_t(u) * kThreads;
      if (idx < n_packs) {
#pragma unroll
        for (int k = 0; k < arity; ++k) loaded[u][k] = reinterpret_cast<const P*>(in.p[k] + head)[idx];
      }
    }
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const int64_t idx = base + int64_t(u) * kThreads;
      if (idx < n_packs) {
        P result;
#pragma unroll
        for (int j = 0; j < VEC; ++j) {
          T args[arity];
#pragma unroll
          for (int k = 0; k < arity; ++k) args[k] = loaded[u][k].v[j];
          result.v[j] = apply_op(op, args, Seq{});
        }
        out_packs[idx] = result;
      }
    }
  }
}

template <int VEC, int UNROLL, typename T, typename Op>
void launch_kernel(Op op, T* out, InputPointers<T, Op::arity> in, int64_t n, int64_t head, int64_t n_packs,
                   cudaStream_t stream) {
  constexpr int64_t packs_per_block = int64_t(kThreads) * UNROLL;
  constexpr int64_t max_blocks = (int64_t(1) << 31) - 1;
  const int64_t blocks = std::min(std::max<int64_t>(1, (n_packs + packs_per_block - 1) / packs_per_block), max_blocks);
  vectorized_elementwise_kernel<VEC, UNROLL><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
      op, out, in, n, head, n_packs);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// out[i] = op(in.p[0][i], ...) for i in [0, n). Packs need every pointer at the same offset
// from a 16-byte boundary; when they disagree (views at different odd offsets) it runs scalar.
template <typename T, typename Op>
void vectorized_elementwise(Op op, T* out, InputPointers<T, Op::arity> in, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  constexpr int kBytes = 16;
  constexpr int kVec = kBytes / sizeof(T);
  const auto misalignment = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % kBytes; };
  bool same_misalignment = true;
  for (int k = 0; k < Op::arity; ++k) same_misalignment &= misalignment(in.p[k]) == misalignment(out);
  if (!same_misalignment) {
    launch_kernel<1, kUnrollLarge>(op, out, in, n, 0, n, stream);
    return;
  }
  const int64_t head = std::min<int64_t>(n, (kBytes - misalignment(out)) % kBytes / sizeof(T));
  const int64_t n_packs = (n - head) / kVec;
  if (n_packs >= kLargePacks) {
    launch_kernel<kVec, kUnrollLarge>(op, out, in, n, head, n_packs, stream);
  } else {
    launch_kernel<kVec, 1>(op, out, in, n, head, n_packs, stream);
  }
}

}  // namespace act
