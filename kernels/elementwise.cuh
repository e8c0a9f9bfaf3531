#pragma once
// One generic elementwise launcher for every op and every layout; an op supplies only its scalar
// functor. The iteration is rows along the view's innermost dimension: each row is a head of
// single elements up to the first 16-byte boundary, packs of 16 bytes, and a tail of single
// elements, with every operand loaded and stored a pack at a time when the rows allow it
// (innermost stride 1, every row at the same 16-byte phase in every operand); otherwise every
// element is a pack of one. A dense tensor is one row. Row starts come from the other dimensions'
// sizes and strides by fast division, offsets in 64 bits.

#include <cuda_runtime.h>
#include <torch/headeronly/macros/Macros.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>

#include "strided_view.h"
#include "torch_runtime.h"

namespace act {

template <typename T, int N>
struct alignas(sizeof(T) * N) Pack {
  T v[N];
};

// Launch shape. The defaults are the best of benchmarks/probe_launch.py's sweep on an H100 and an H200
// (docs/benchmarks/probe_launch_*.txt); the macros let benchmarks/tune_launch.py build alternatives.
#ifndef ACT_THREADS
#define ACT_THREADS 128
#endif
#ifndef ACT_ELEMENTS
#define ACT_ELEMENTS 4
#endif
#ifndef ACT_ONE_WAVE_UNROLL
#define ACT_ONE_WAVE_UNROLL 4
#endif
#ifndef ACT_RANDOM_UNROLL
#define ACT_RANDOM_UNROLL 4
#endif
#ifndef ACT_RANDOM_UNROLL_PACKS_LOG2
#define ACT_RANDOM_UNROLL_PACKS_LOG2 22
#endif
#ifndef ACT_RANDOM_WAVES
#define ACT_RANDOM_WAVES 4
#endif
#ifndef ACT_RANDOM_ISSUE_BOUND_BYTES
#define ACT_RANDOM_ISSUE_BOUND_BYTES 16
#endif
// The launch rules, each with its evidence: docs/design/launch-plan.md ("The launch shape").
constexpr int kThreads = ACT_THREADS;
// Elements a thread takes at every size: a 16-byte pack of float or a 16-bit type, two of double, four
// single elements of a strided view. More threads, not more bytes in flight per thread, fill the GPU.
constexpr int kElements = ACT_ELEMENTS;
// A dense view that one full wave would take at 2 or 4 times kElements (up to this many packs) gets the
// fewest that do, where the kernel's registers admit every thread: no block waits for another to retire.
constexpr int kOneWaveUnroll = ACT_ONE_WAVE_UNROLL;
// The random op: where DRAM moves fewer than kRandomIssueBoundBytes per SM cycle it is bound by memory and
// takes kRandomUnroll packs a thread from kRandomUnrollPacks packs; elsewhere it is bound by issue and
// takes kElements a thread over at most kRandomWaves waves of resident blocks.
constexpr int kRandomUnroll = ACT_RANDOM_UNROLL;
constexpr int64_t kRandomUnrollPacks = int64_t(1) << ACT_RANDOM_UNROLL_PACKS_LOG2;
constexpr int kRandomWaves = ACT_RANDOM_WAVES;
constexpr double kRandomIssueBoundBytes = ACT_RANDOM_ISSUE_BOUND_BYTES;
// A launch indexes its packs and elements in 32 bits, and describes at most as many dimensions as
// ATen's TensorIterator does on CUDA (kernel parameters grow with them): other views go in parts.
constexpr int64_t kMaxLaunchElements = (int64_t(1) << 31) - 1;
constexpr int kMaxLaunchDims = 25;

// n / divisor and n % divisor for n < 2^31 by a multiply-high and a shift (Granlund and Montgomery,
// "Division by invariant integers using multiplication", 1994): a row of the view is found per
// pack, and a hardware-free 32-bit division would cost more than the pack's memory traffic.
struct FastDivmod {
  uint32_t divisor = 1, magic = 1, shift = 0;
  FastDivmod() = default;
  explicit FastDivmod(uint32_t d) : divisor(d) {
    while (shift < 32 && (uint64_t(1) << shift) < d) ++shift;
    magic = uint32_t((uint64_t(1) << 32) * ((uint64_t(1) << shift) - d) / d + 1);
  }
  __device__ __forceinline__ uint32_t div(uint32_t n) const { return (__umulhi(n, magic) + n) >> shift; }
};

template <int N>
struct Offsets {
  int64_t v[N];  // elements from each operand's data pointer
};

template <typename T, int N>
struct Pointers {
  T* p[N];
};

// Where the view's rows start: up to D dimensions other than the innermost, innermost first. The
// outermost needs no division (the row index left is its index). D = 0 is a dense view's single
// row; D = 1 the 2-D views of a chunk, narrow or column slice; larger D anything else.
template <int N, int D>
struct RowStarts {
  int ndim = 0;
  FastDivmod sizes[D];
  int64_t strides[D][N];

  __device__ __forceinline__ Offsets<N> operator()(uint32_t row) const {
    Offsets<N> at{};
#pragma unroll(D < 4 ? D : 4)
    for (int d = 0; d < D && d < ndim; ++d) {
      uint32_t index = row;
      if (d + 1 < ndim) {
        row = sizes[d].div(index);
        index -= row * sizes[d].divisor;
      }
#pragma unroll
      for (int k = 0; k < N; ++k) at.v[k] += int64_t(index) * strides[d][k];
    }
    return at;
  }
};

template <int N>
struct RowStarts<N, 0> {
  __device__ __forceinline__ Offsets<N> operator()(uint32_t) const { return {}; }
};

// The iteration: rows of `head` single elements, `packs` packs of VEC, then single elements from
// column `tail` to the row's end.
template <int N, int D>
struct Rows {
  RowStarts<N, D> starts;
  int64_t step[N];  // innermost stride: 1 for every operand when VEC > 1
  FastDivmod packs;
  FastDivmod singles;
  uint32_t head = 0, tail = 0;

  template <int VEC>
  __device__ __forceinline__ Offsets<N> at(uint32_t row, uint32_t col) const {
    Offsets<N> o = starts(row);
#pragma unroll
    for (int k = 0; k < N; ++k) o.v[k] += VEC > 1 ? int64_t(col) : int64_t(col) * step[k];
    return o;
  }
};

// A pack's load: plain ld.global. The read-only path (ld.global.nc, which a __restrict__ output
// would let the compiler choose) left float64 gradients at 2^16 elements 8% slower on an H100 and
// gained nothing elsewhere (docs/benchmarks/probe_loads_*); ACT_READ_ONLY_LOADS builds it back for
// benchmarks/probe_launch.py to compare.
template <typename P>
__device__ __forceinline__ P load_pack(const P* p) {
#ifdef ACT_READ_ONLY_LOADS
  using Word = std::conditional_t<
      sizeof(P) == 16, uint4,
      std::conditional_t<sizeof(P) == 8, uint2, std::conditional_t<sizeof(P) == 4, unsigned int, unsigned short>>>;
  static_assert(sizeof(Word) == sizeof(P));
  const Word word = __ldg(reinterpret_cast<const Word*>(p));
  P pack;
  memcpy(&pack, &word, sizeof(P));
  return pack;
#else
  return *p;
#endif
}

// A random functor takes its element's word of the stream first; the others ignore `bits`.
template <typename Op, typename T, size_t... I>
__device__ __forceinline__ T apply_op(const Op& op, uint32_t bits, const T (&args)[sizeof...(I)],
                                      std::index_sequence<I...>) {
  if constexpr (IsRandom<Op>::value) {
    return static_cast<T>(op(bits, static_cast<typename Op::acc_t>(args[I])...));
  } else {
    return static_cast<T>(op(static_cast<typename Op::acc_t>(args[I])...));
  }
}

struct NoStream {};

// A random functor's stream, resolved once per thread (the first thread records it for the backward).
template <typename Op>
__device__ __forceinline__ auto stream_of(const Op& op, bool first_thread) {
  if constexpr (IsRandom<Op>::value) {
    return op.source.resolve(first_thread);
  } else {
    return NoStream{};
  }
}

// out = op(inputs) over `n` packs of VEC elements and `n_singles` single elements. Operand 0 of
// `ptr` is the output. A random op's element draws the word numbered by the element's offset in the
// output plus `index_base` (where this launch's part of the output starts), so the forward and a
// backward whose output is laid out alike draw the same words, whatever the other operands' layouts.
template <int VEC, int UNROLL, typename T, typename Op, int D>
__global__ void __launch_bounds__(kThreads)
strided_activation_kernel(Op op, Pointers<T, Op::arity + 1> ptr, Rows<Op::arity + 1, D> rows, uint32_t n_packs,
                          uint32_t n_singles, int64_t index_base) {
  constexpr int arity = Op::arity;
  constexpr bool random = IsRandom<Op>::value;
  using Seq = std::make_index_sequence<arity>;
  using P = Pack<T, VEC>;
  const uint32_t thread = blockIdx.x * kThreads + threadIdx.x;
  const uint32_t threads = gridDim.x * kThreads;
  const auto stream = stream_of(op, thread == 0);

  for (uint32_t s = thread; s < n_singles; s += threads) {
    const uint32_t row = D == 0 ? 0 : rows.singles.div(s);  // a dense view is one row
    const uint32_t q = s - row * rows.singles.divisor;
    const Offsets<arity + 1> o = rows.template at<VEC>(row, q < rows.head ? q : rows.tail + (q - rows.head));
    T args[arity];
#pragma unroll
    for (int k = 0; k < arity; ++k) args[k] = load_pack(ptr.p[k + 1] + o.v[k + 1]);
    uint32_t bits = 0;
    if constexpr (random) bits = stream.template word<Op::random_bits>(uint64_t(index_base + o.v[0]));
    ptr.p[0][o.v[0]] = apply_op(op, bits, args, Seq{});
  }

  for (uint32_t base = blockIdx.x * kThreads * UNROLL + threadIdx.x; base < n_packs; base += threads * UNROLL) {
    Offsets<arity + 1> o[UNROLL];
    P loaded[UNROLL][arity];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const uint32_t idx = base + u * kThreads;
      if (idx < n_packs) {
        const uint32_t row = D == 0 ? 0 : rows.packs.div(idx);
        o[u] = rows.template at<VEC>(row, rows.head + (idx - row * rows.packs.divisor) * VEC);
#pragma unroll
        for (int k = 0; k < arity; ++k) {
          loaded[u][k] = load_pack(reinterpret_cast<const P*>(ptr.p[k + 1] + o[u].v[k + 1]));
        }
      }
    }
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      if (base + u * kThreads < n_packs) {
        uint32_t bits[VEC] = {};
        if constexpr (random) stream.template words<Op::random_bits>(uint64_t(index_base + o[u].v[0]), bits);
        P result;
#pragma unroll
        for (int j = 0; j < VEC; ++j) {
          T args[arity];
#pragma unroll
          for (int k = 0; k < arity; ++k) args[k] = loaded[u][k].v[j];
          result.v[j] = apply_op(op, bits[j], args, Seq{});
        }
        *reinterpret_cast<P*>(ptr.p[0] + o[u].v[0]) = result;
      }
    }
  }
}

constexpr int64_t kUncapped = std::numeric_limits<int32_t>::max();

// launch_kernel(U, no cap) with the fewest packs a thread U, from `U` up to kOneWaveUnroll, at which one wave of
// every thread the GPU holds takes a dense view of `n_packs` packs, if that kernel's registers admit every
// thread; false otherwise.
template <int U, int VEC, typename T, typename Op, typename LaunchKernel>
bool launch_in_one_wave(int64_t n_packs, const runtime::DeviceLimits& gpu, const LaunchKernel& launch_kernel) {
  if constexpr (U > kOneWaveUnroll) {
    return false;
  } else {
    if (n_packs > U * gpu.resident_threads) return launch_in_one_wave<2 * U, VEC, T, Op>(n_packs, gpu, launch_kernel);
    const int64_t blocks_per_sm = runtime::once_per_device(gpu.device, [](int) {
      return runtime::resident_blocks_per_sm(strided_activation_kernel<VEC, U, T, Op, 0>, kThreads);
    });
    if (blocks_per_sm * gpu.sms * kThreads < gpu.resident_threads) return false;
    launch_kernel(std::integral_constant<int, U>{}, kUncapped);
    return true;
  }
}

template <int VEC, typename T, typename Op, int D>
void launch_with_shape(Op op, Pointers<T, Op::arity + 1> ptr, const Rows<Op::arity + 1, D>& rows, int64_t n_packs,
                       int64_t n_singles, int64_t index_base, const runtime::DeviceLimits& gpu, cudaStream_t stream) {
  constexpr int kUnroll = std::max(1, kElements / VEC);
  const auto launch_kernel = [&](auto unroll, int64_t max_blocks) {
    constexpr int U = decltype(unroll)::value;
    const int64_t needed = std::max((n_packs + int64_t(kThreads) * U - 1) / (int64_t(kThreads) * U),
                                    (n_singles + kThreads - 1) / kThreads);
    const auto blocks = static_cast<unsigned>(std::clamp<int64_t>(needed, 1, max_blocks));
    strided_activation_kernel<VEC, U><<<blocks, kThreads, 0, stream>>>(op, ptr, rows, n_packs, n_singles,
                                                                        index_base);
    runtime::check_launch();
  };
  if constexpr (!IsRandom<Op>::value && D == 0 && VEC > 1) {
    if (n_packs > kUnroll * gpu.resident_threads && launch_in_one_wave<2 * kUnroll, VEC, T, Op>(n_packs, gpu, launch_kernel)) {
      return;
    }
  }
  if constexpr (IsRandom<Op>::value) {
    if (gpu.dram_bytes_per_sm_cycle > kRandomIssueBoundBytes) {
      const int64_t max_blocks = std::max<int64_t>(1, kRandomWaves * gpu.resident_threads / kThreads);
      return launch_kernel(std::integral_constant<int, kUnroll>{}, max_blocks);
    }
    if (n_packs >= kRandomUnrollPacks) {
      return launch_kernel(std::integral_constant<int, std::max(kRandomUnroll, kUnroll)>{}, kUncapped);
    }
  }
  launch_kernel(std::integral_constant<int, kUnroll>{}, kUncapped);
}

// One launch over a view of at most kMaxLaunchElements elements with D + 1 dimensions or fewer.
template <int D, typename T, typename Op>
void launch_rows(Op op, const StridedView& view, int64_t index_base, const runtime::DeviceLimits& gpu,
                 cudaStream_t stream) {
  constexpr int N = Op::arity + 1;
  constexpr int kBytes = 16;
  constexpr int kVec = kBytes / sizeof(T);
  Pointers<T, N> ptr;
  Rows<N, D> rows;
  const int64_t cols = view.sizes[0];
  const int64_t n_rows = view.numel() / cols;
  if constexpr (D > 0) {
    rows.starts.ndim = view.ndim - 1;
    for (int d = 1; d < view.ndim; ++d) {
      rows.starts.sizes[d - 1] = FastDivmod(static_cast<uint32_t>(view.sizes[d]));
      for (int k = 0; k < N; ++k) rows.starts.strides[d - 1][k] = view.strides[k][d];
    }
  }
  // Packs need unit steps along rows and every row start at the same offset from a 16-byte
  // boundary in every operand; a random op's, the words of one Philox block each (an output that
  // starts at a 16-byte boundary, as a fresh one does, lays every pack out so).
  const auto phase = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % kBytes; };
  const int64_t head = (kBytes - phase(view.data[0])) % kBytes / int64_t(sizeof(T));
  bool packs = cols >= 2 * kVec && (!IsRandom<Op>::value || (index_base + head) % kVec == 0);
  for (int k = 0; k < N; ++k) {
    ptr.p[k] = reinterpret_cast<T*>(view.data[k]);
    rows.step[k] = view.strides[k][0];
    packs &= rows.step[k] == 1 && phase(view.data[k]) == phase(view.data[0]);
    for (int d = 1; d < view.ndim; ++d) packs &= view.strides[k][d] * int64_t(sizeof(T)) % kBytes == 0;
  }
  if (!packs) {
    rows.packs = FastDivmod(static_cast<uint32_t>(cols));
    rows.tail = static_cast<uint32_t>(cols);
    return launch_with_shape<1>(op, ptr, rows, view.numel(), 0, index_base, gpu, stream);
  }
  const int64_t row_packs = (cols - head) / kVec;
  const int64_t singles = cols - row_packs * kVec;
  rows.head = static_cast<uint32_t>(head);
  rows.tail = static_cast<uint32_t>(head + row_packs * kVec);
  rows.packs = FastDivmod(static_cast<uint32_t>(row_packs));
  rows.singles = FastDivmod(static_cast<uint32_t>(std::max<int64_t>(singles, 1)));
  launch_with_shape<kVec>(op, ptr, rows, n_rows * row_packs, n_rows * singles, index_base, gpu, stream);
}

// The smallest row description that holds the view: kernel parameters and index arithmetic grow with it.
template <typename T, typename Op>
void launch_part(Op op, const StridedView& view, int64_t index_base, const runtime::DeviceLimits& gpu,
                 cudaStream_t stream) {
  switch (view.ndim) {
    case 1: return launch_rows<0, T>(op, view, index_base, gpu, stream);
    case 2: return launch_rows<1, T>(op, view, index_base, gpu, stream);
    default: return launch_rows<kMaxLaunchDims - 1, T>(op, view, index_base, gpu, stream);
  }
}

// Calls f on parts of `view` that one launch takes. Past kMaxLaunchDims dimensions, a part per
// index of the smallest dimension other than the innermost: few parts, as every dimension has a size
// of at least 2 (26 dimensions over fewer than 2^40 elements give 2 parts). Past
// kMaxLaunchElements elements, parts along the outermost dimension (along the only one, multiples
// of 16 elements, which keeps each part's 16-byte phase).
template <typename F>
void for_each_part(const StridedView& view, int64_t item_size, int operands, F&& f) {
  if (view.ndim > kMaxLaunchDims) {
    int fixed = 1;
    for (int d = 2; d < view.ndim; ++d) {
      if (view.sizes[d] <= view.sizes[fixed]) fixed = d;
    }
    StridedView part = view;
    --part.ndim;
    for (int d = fixed; d < part.ndim; ++d) {
      part.sizes[d] = view.sizes[d + 1];
      for (int k = 0; k < operands; ++k) part.strides[k][d] = view.strides[k][d + 1];
    }
    for (int64_t i = 0; i < view.sizes[fixed]; ++i) {
      for (int k = 0; k < operands; ++k) part.data[k] = view.data[k] + i * view.strides[k][fixed] * item_size;
      for_each_part(part, item_size, operands, f);
    }
    return;
  }
  const int64_t numel = view.numel();
  if (numel <= kMaxLaunchElements) return f(view);
  const int d = view.ndim - 1;
  const int64_t inner = numel / view.sizes[d];
  StridedView part = view;
  int64_t step = 1;
  if (inner > kMaxLaunchElements) {
    part.ndim = d;  // one index of the outermost dimension at a time
  } else {
    step = kMaxLaunchElements / inner;
    if (d == 0) step -= step % 16;
  }
  for (int64_t start = 0; start < view.sizes[d]; start += step) {
    if (part.ndim > d) part.sizes[d] = std::min(step, view.sizes[d] - start);
    for (int k = 0; k < operands; ++k) part.data[k] = view.data[k] + start * view.strides[k][d] * item_size;
    for_each_part(part, item_size, operands, f);
  }
}

template <typename T, typename Op>
void strided_elementwise(Op op, const StridedView& view, const runtime::DeviceLimits& gpu, cudaStream_t stream) {
  for_each_part(view, sizeof(T), Op::arity + 1, [&](const StridedView& part) {
    launch_part<T>(op, part, (part.data[0] - view.data[0]) / int64_t(sizeof(T)), gpu, stream);
  });
}

}  // namespace act
