#pragma once
// One generic elementwise launcher for every op and every layout; an op supplies only its scalar
// functor. The iteration is rows along the view's innermost dimension: each row is a head of
// single elements up to the first 16-byte boundary, packs of 16 bytes (a random op's: 32), and a tail of single
// elements, with every operand loaded and stored a pack at a time when the rows allow it
// (innermost stride 1, every row at the same 16-byte phase in every operand); otherwise every
// element is a pack of one. A dense tensor is one row. Row starts come from the other dimensions'
// sizes and strides by fast division, offsets in 64 bits. Which kernel shape and grid a view gets is
// launch_plan.h's plan_launch.

#include <cuda_runtime.h>
#include <torch/headeronly/macros/Macros.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "launch_plan.h"
#include "strided_view.h"
#include "torch_runtime.h"

namespace act {

// N elements loaded and stored as one vector, or as 16-byte vectors where they span more (a random op's pack).
template <typename T, int N>
struct alignas(std::min<size_t>(sizeof(T) * N, kPackBytes)) Pack {
  T v[N];
};

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
// row; D = 1 the 2-D views of a chunk, narrow or column slice (ndim is 1: the plan takes D = 1 for
// those alone, and the kernel then tests nothing); larger D anything else.
template <int N, int D>
struct RowStarts {
  int ndim = 0;
  FastDivmod sizes[D];
  int64_t strides[D][N];

  __device__ __forceinline__ Offsets<N> operator()(uint32_t row) const {
    Offsets<N> at{};
#pragma unroll(D < 4 ? D : 4)
    for (int d = 0; d < D && (D == 1 || d < ndim); ++d) {
      uint32_t index = row;
      if (D > 1 && d + 1 < ndim) {
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

// A pack's load: plain ld.global. The read-only path (ld.global.nc) left float64 gradients at 2^16
// elements 8% slower on an H100 and gained nothing elsewhere (docs/design/launch-plan.md).
template <typename P>
__device__ __forceinline__ P load_pack(const P* p) {
  return *p;
}

// The functor's result (or Results) on one element's inputs. A random functor takes its element's word of the
// stream first; the others ignore `bits`.
template <typename Op, typename T, size_t... I>
__device__ __forceinline__ auto apply_op(const Op& op, uint32_t bits, const T (&args)[sizeof...(I)],
                                         std::index_sequence<I...>) {
  if constexpr (IsRandom<Op>::value) {
    return op(bits, static_cast<typename Op::acc_t>(args[I])...);
  } else {
    return op(static_cast<typename Op::acc_t>(args[I])...);
  }
}

// Elements a pack of T in Op's kernels (launch_plan.h's pack_elements).
template <typename T, typename Op>
constexpr int kPackElementsOf = pack_elements(sizeof(T), IsRandom<Op>::value);

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

// outputs = op(inputs) over `n` packs of VEC elements and `n_singles` single elements. The first operands of
// `ptr` are the outputs. A random op's element draws the word numbered by the element's offset in the
// output plus `index_base` (where this launch's part of the output starts), so the forward and a
// backward whose output is laid out alike draw the same words, whatever the other operands' layouts.
template <int VEC, int UNROLL, typename T, typename Op, int D>
__global__ void __launch_bounds__(kThreads)
strided_activation_kernel(Op op, Pointers<T, kOperandsOf<Op>> ptr, Rows<kOperandsOf<Op>, D> rows,
                          uint32_t n_packs, uint32_t n_singles, int64_t index_base) {
  constexpr int arity = Op::arity;
  constexpr int O = OutputsOf<Op>::value;
  constexpr int N = O + arity;
  constexpr bool random = IsRandom<Op>::value;
  using Seq = std::make_index_sequence<arity>;
  using P = Pack<T, VEC>;
  const uint32_t thread = blockIdx.x * kThreads + threadIdx.x;
  const uint32_t threads = gridDim.x * kThreads;
  const auto stream = stream_of(op, thread == 0);

  for (uint32_t s = thread; s < n_singles; s += threads) {
    const uint32_t row = D == 0 ? 0 : rows.singles.div(s);  // a dense view is one row
    const uint32_t q = s - row * rows.singles.divisor;
    const Offsets<N> o = rows.template at<VEC>(row, q < rows.head ? q : rows.tail + (q - rows.head));
    T args[arity];
#pragma unroll
    for (int k = 0; k < arity; ++k) args[k] = load_pack(ptr.p[O + k] + o.v[O + k]);
    uint32_t bits = 0;
    if constexpr (random) bits = stream.template word<Op::random_bits>(uint64_t(index_base + o.v[0]));
    const auto result = apply_op(op, bits, args, Seq{});
#pragma unroll
    for (int r = 0; r < O; ++r) ptr.p[r][o.v[r]] = result_at<T, O>(result, r);
  }

  for (uint32_t base = blockIdx.x * kThreads * UNROLL + threadIdx.x; base < n_packs; base += threads * UNROLL) {
    Offsets<N> o[UNROLL];
    P loaded[UNROLL][arity];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const uint32_t idx = base + u * kThreads;
      if (idx < n_packs) {
        const uint32_t row = D == 0 ? 0 : rows.packs.div(idx);
        o[u] = rows.template at<VEC>(row, rows.head + (idx - row * rows.packs.divisor) * VEC);
#pragma unroll
        for (int k = 0; k < arity; ++k) {
          loaded[u][k] = load_pack(reinterpret_cast<const P*>(ptr.p[O + k] + o[u].v[O + k]));
        }
      }
    }
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      if (base + u * kThreads < n_packs) {
        uint32_t bits[VEC] = {};
        if constexpr (random) stream.template words<Op::random_bits>(uint64_t(index_base + o[u].v[0]), bits);
        P result[O];
#pragma unroll
        for (int j = 0; j < VEC; ++j) {
          T args[arity];
#pragma unroll
          for (int k = 0; k < arity; ++k) args[k] = loaded[u][k].v[j];
          const auto value = apply_op(op, bits[j], args, Seq{});
#pragma unroll
          for (int r = 0; r < O; ++r) result[r].v[j] = result_at<T, O>(value, r);
        }
#pragma unroll
        for (int r = 0; r < O; ++r) *reinterpret_cast<P*>(ptr.p[r] + o[u].v[r]) = result[r];
      }
    }
  }
}

// Blocks of the one-row packed kernel that one SM of `device` holds, at each unroll the one-wave rule
// can choose (read once per device).
template <typename T, typename Op>
OpTraits op_traits(int device) {
  constexpr bool random = IsRandom<Op>::value;
  constexpr int kVec = kPackElementsOf<T, Op>;
  OpTraits traits;
  traits.item_size = sizeof(T);
  traits.random = random;
  const auto blocks = runtime::once_per_device(device, [](int) {
    std::array<int, kMaxUnroll + 1> read{};
    const auto read_at = [&](auto unroll) {
      constexpr int U = decltype(unroll)::value;
      if constexpr (!random && U > base_unroll(kVec) && plannable(0, kVec, U, random, kVec)) {
        read[U] = runtime::resident_blocks_per_sm(strided_activation_kernel<kVec, U, T, Op, 0>, kThreads);
      }
    };
    read_at(std::integral_constant<int, 2>{});
    read_at(std::integral_constant<int, 4>{});
    return read;
  });
  std::copy(blocks.begin(), blocks.end(), traits.resident_blocks);
  return traits;
}

// The kernel of shape (D row dimensions, VEC elements a pack, U packs a thread) over one part, as `plan` says.
template <int D, int VEC, int U, typename T, typename Op>
void launch_kernel(const LaunchPlan& plan, const Op& op, const StridedView& part, int64_t index_base,
                   cudaStream_t stream) {
  constexpr int N = kOperandsOf<Op>;
  if constexpr (!plannable(D, VEC, U, IsRandom<Op>::value, kPackElementsOf<T, Op>)) {
    throw std::logic_error("act: a launch plan named a kernel shape that is not compiled");
  } else {
    Pointers<T, N> ptr;
    Rows<N, D> rows;
    if constexpr (D > 0) {
      if (D == 1 && part.ndim != 2) throw std::logic_error("act: a 2-D launch plan for a view of another rank");
      rows.starts.ndim = part.ndim - 1;
      for (int d = 1; d < part.ndim; ++d) {
        rows.starts.sizes[d - 1] = FastDivmod(static_cast<uint32_t>(part.sizes[d]));
        for (int k = 0; k < N; ++k) rows.starts.strides[d - 1][k] = part.strides[k][d];
      }
    }
    for (int k = 0; k < N; ++k) {
      ptr.p[k] = reinterpret_cast<T*>(part.data[k]);
      rows.step[k] = part.strides[k][0];
    }
    rows.head = static_cast<uint32_t>(plan.head);
    rows.tail = static_cast<uint32_t>(plan.tail);
    rows.packs = FastDivmod(static_cast<uint32_t>(plan.row_packs));
    rows.singles = FastDivmod(static_cast<uint32_t>(std::max<int64_t>(plan.row_singles, 1)));
    strided_activation_kernel<VEC, U, T, Op, D><<<static_cast<unsigned>(plan.blocks), kThreads, 0, stream>>>(
        op, ptr, rows, static_cast<uint32_t>(plan.n_packs), static_cast<uint32_t>(plan.n_singles), index_base);
    runtime::check_launch();
  }
}

// One switch over the plan's kernel shape; launch_kernel compiles only the shapes plan_launch can name.
template <typename T, typename Op>
void launch(const LaunchPlan& plan, const Op& op, const StridedView& part, int64_t index_base, cudaStream_t stream) {
  constexpr int kVec = kPackElementsOf<T, Op>;
  const auto with_dims = [&](auto dims) {
    const auto with_vec = [&](auto vec) {
      constexpr int D = decltype(dims)::value, VEC = decltype(vec)::value;
      switch (plan.unroll) {
        case 1: return launch_kernel<D, VEC, 1, T>(plan, op, part, index_base, stream);
        case 2: return launch_kernel<D, VEC, 2, T>(plan, op, part, index_base, stream);
        case 4: return launch_kernel<D, VEC, 4, T>(plan, op, part, index_base, stream);
        default: throw std::logic_error("act: a launch plan named an unroll that is not compiled");
      }
    };
    return plan.vec == 1 ? with_vec(std::integral_constant<int, 1>{}) : with_vec(std::integral_constant<int, kVec>{});
  };
  static_assert(kMaxUnroll == 4, "the switch names every unroll a plan can choose");
  switch (plan.dims) {
    case 0: return with_dims(std::integral_constant<int, 0>{});
    case 1: return with_dims(std::integral_constant<int, 1>{});
    case kMaxLaunchDims - 1: return with_dims(std::integral_constant<int, kMaxLaunchDims - 1>{});
    default: throw std::logic_error("act: a launch plan named row dimensions that are not compiled");
  }
}

template <typename T, typename Op>
void strided_elementwise(Op op, const StridedView& view, const DeviceLimits& gpu, cudaStream_t stream) {
  const OpTraits traits = op_traits<T, Op>(gpu.device);
  for_each_part(view, sizeof(T), [&](const StridedView& part) {
    const int64_t index_base = (part.data[0] - view.data[0]) / int64_t(sizeof(T));
    launch<T>(plan_launch(part, index_base, traits, gpu), op, part, index_base, stream);
  });
}

}  // namespace act
