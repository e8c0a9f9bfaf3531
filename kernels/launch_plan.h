#pragma once
// How the CUDA launcher takes a view: every launch rule as pure host code, so that the CPU-only build
// tests it (tests/test_launch_plan.py, through _C.launch_plans). Evidence for each constant:
// docs/design/launch-plan.md ("The launch shape").

#include <algorithm>
#include <cstdint>
#include <stdexcept>

#include "philox.h"
#include "strided_view.h"

namespace act {

constexpr int kThreads = 128;  // a block
constexpr int kPackBytes = 16;  // one vector load or store
// Elements a thread takes at every size: a 16-byte pack of float or a 16-bit type, two of double, four
// single elements of a strided view (a random op: one 32-byte pack). More threads, not more bytes in flight per
// thread, fill the GPU.
constexpr int kElements = 4;
// A dense view that one full wave would take at 2 or 4 times the usual packs a thread (up to this many)
// gets the fewest that do, where the kernel's registers admit every thread: no block waits for another.
constexpr int kOneWaveUnroll = 4;
// The random op: a pack is two 16-byte vectors, whole Philox blocks in every dtype (float64's one, the others'
// two, which a thread interleaves). Where DRAM moves fewer than kRandomIssueBoundBytes per SM cycle it is bound by
// memory and takes kRandomUnroll packs a thread (64 bytes) from kRandomUnrollPacks packs (64 MiB); elsewhere it is
// bound by issue and takes one pack an iteration over at most kRandomWaves waves of resident blocks, or over a grid
// that gives each thread kRandomThreadBlocks Philox blocks where that grid is larger (from 256 MiB a tensor, float64's
// from 512 MiB).
constexpr int kRandomPackBytes = 32;
constexpr int kRandomUnroll = 2;
constexpr int64_t kRandomUnrollPacks = int64_t(1) << 21;
constexpr int kRandomWaves = 4;
constexpr int kRandomThreadBlocks = 8;
constexpr double kRandomIssueBoundBytes = 16;
// A launch indexes its packs and elements in 32 bits, and describes at most as many dimensions as
// ATen's TensorIterator does on CUDA (kernel parameters grow with them): other views go in parts.
constexpr int64_t kMaxLaunchElements = (int64_t(1) << 31) - 1;
constexpr int kMaxLaunchDims = 25;
constexpr int64_t kMaxBlocks = (int64_t(1) << 31) - 1;  // a grid's x dimension
// The unrolls a plan can name: the kernel is compiled for each.
constexpr int kMaxUnroll = 4;

// What a launch depends on in the GPU: its SMs, the threads that fit on it at once, and the peak bytes
// its DRAM moves per clock cycle of one SM.
struct DeviceLimits {
  int device = 0;
  int64_t sms = 0;
  int64_t resident_threads = 0;
  double dram_bytes_per_sm_cycle = 0;
};

// What a launch depends on in the op: its operands' element size, whether it draws random words, and,
// for the one-wave rule, the blocks of its one-row packed kernel one SM holds at each unroll
// (`resident_blocks[u]` for u packs a thread; 0 where unknown or not compiled).
struct OpTraits {
  int item_size = 4;
  bool random = false;
  int resident_blocks[kMaxUnroll + 1] = {};
};

// One launch: the kernel's template shape (row-start dimensions, elements a pack, packs a thread per
// step), its rows (`head` single elements, `row_packs` packs, single elements from column `tail` to the
// row's end) and its grid.
struct LaunchPlan {
  int dims = 0;    // 0 (one row), 1, or kMaxLaunchDims - 1
  int vec = 1;     // pack_elements (16 bytes' worth, a random op's 32), or 1 where the rows take no packs
  int unroll = 1;  // packs a thread per step of the grid-stride loop
  int64_t cols = 0, head = 0, tail = 0, row_packs = 0, row_singles = 0;
  int64_t n_packs = 0, n_singles = 0;
  int64_t blocks = 0;
};

// Elements a pack: 16 bytes' worth, one vector load or store; a random op's, 32 bytes' worth.
constexpr int pack_elements(int item_size, bool random) {
  return (random ? kRandomPackBytes : kPackBytes) / item_size;
}

// Elements whose random words make one Philox block: a random op's packs start at a multiple of it.
constexpr int philox_block_elements(int item_size) { return 128 / random_word_bits(item_size); }

// The usual packs a thread: kElements elements, at least one pack.
constexpr int base_unroll(int vec) { return std::max(1, kElements / vec); }

// Whether plan_launch can choose `unroll` for packs of `vec` elements over `dims` row dimensions of
// an op of `full_vec` elements a full pack: the kernels the launcher compiles, and no others.
constexpr bool plannable(int dims, int vec, int unroll, bool random, int full_vec) {
  if (vec == 1) return unroll == base_unroll(1);
  if (vec != full_vec) return false;
  if (unroll == base_unroll(vec)) return true;
  if (random) return unroll == std::max(kRandomUnroll, base_unroll(vec));
  return dims == 0 && unroll > base_unroll(vec) && unroll <= kOneWaveUnroll;
}

// The launch of one part (at most kMaxLaunchElements elements, at most kMaxLaunchDims dimensions) of a
// view, whose output starts `index_base` elements into the whole view's (a random op's word numbers).
inline LaunchPlan plan_launch(const StridedView& view, int64_t index_base, const OpTraits& op,
                              const DeviceLimits& gpu) {
  if (view.ndim < 1 || view.ndim > kMaxLaunchDims || view.numel() > kMaxLaunchElements) {
    throw std::logic_error("act: a launch was planned for a view that is not one part");
  }
  LaunchPlan plan;
  // The smallest row description that holds the view: kernel parameters and index arithmetic grow with it.
  plan.dims = view.ndim == 1 ? 0 : view.ndim == 2 ? 1 : kMaxLaunchDims - 1;
  plan.cols = view.sizes[0];
  const int64_t n_rows = view.numel() / plan.cols;
  const int full_vec = pack_elements(op.item_size, op.random);

  // Packs need unit steps along rows and every row start at the same offset from a 16-byte boundary in
  // every operand; a random op's each start a Philox block's words, in every row of the output (a fresh output's
  // first row does; its row strides must keep it).
  const auto phase = [](const char* p) { return reinterpret_cast<uintptr_t>(p) % kPackBytes; };
  const int64_t head = (kPackBytes - phase(view.data[0])) % kPackBytes / op.item_size;
  const int block = philox_block_elements(op.item_size);
  bool packs = plan.cols >= 2 * full_vec && (!op.random || (index_base + head) % block == 0);
  for (int k = 0; k < view.operands; ++k) {
    packs &= view.strides[k][0] == 1 && phase(view.data[k]) == phase(view.data[0]);
    for (int d = 1; d < view.ndim; ++d) packs &= view.strides[k][d] * op.item_size % kPackBytes == 0;
  }
  for (int d = 1; d < view.ndim; ++d) packs &= !op.random || view.strides[0][d] % block == 0;
  if (packs) {
    plan.vec = full_vec;
    plan.head = head;
    plan.row_packs = (plan.cols - head) / full_vec;
    plan.tail = head + plan.row_packs * full_vec;
    plan.row_singles = plan.cols - plan.row_packs * full_vec;
  } else {  // every element a pack of one
    plan.tail = plan.cols;
    plan.row_packs = plan.cols;
  }
  plan.n_packs = n_rows * plan.row_packs;
  plan.n_singles = n_rows * plan.row_singles;

  const int usual = base_unroll(plan.vec);
  plan.unroll = usual;
  int64_t max_blocks = kMaxBlocks;
  if (op.random) {
    if (gpu.dram_bytes_per_sm_cycle > kRandomIssueBoundBytes) {
      max_blocks = std::max<int64_t>(1, kRandomWaves * gpu.resident_threads / kThreads);
      if (plan.vec > 1) {
        const int64_t pack_blocks = plan.vec / block;  // Philox blocks a pack
        max_blocks = std::max(max_blocks, plan.n_packs * pack_blocks / (kRandomThreadBlocks * kThreads));
      }
    } else if (plan.n_packs >= kRandomUnrollPacks) {
      plan.unroll = std::max(kRandomUnroll, usual);
    }
  } else if (plan.dims == 0 && plan.vec > 1 && plan.n_packs > usual * gpu.resident_threads) {
    // The fewest packs a thread, doubling up to kOneWaveUnroll, at which one wave takes the view.
    int unroll = 2 * usual;
    while (unroll <= kOneWaveUnroll && plan.n_packs > unroll * gpu.resident_threads) unroll *= 2;
    if (unroll <= kOneWaveUnroll && op.resident_blocks[unroll] * gpu.sms * kThreads >= gpu.resident_threads) {
      plan.unroll = unroll;
    }
  }
  const int64_t per_block = int64_t(kThreads) * plan.unroll;
  const int64_t needed =
      std::max((plan.n_packs + per_block - 1) / per_block, (plan.n_singles + kThreads - 1) / kThreads);
  plan.blocks = std::clamp<int64_t>(needed, 1, max_blocks);
  return plan;
}

// Calls f(part) on parts of `view` that one launch takes. Past kMaxLaunchDims dimensions, a part per index of the
// smallest dimension other than the innermost: few parts, as every dimension has a size of at least 2
// (26 dimensions over fewer than 2^40 elements give 2 parts). Past kMaxLaunchElements elements, parts
// along the outermost dimension (along the only one, multiples of 16 elements, which keeps each
// part's 16-byte phase).
template <typename F>
void for_each_part(const StridedView& view, int64_t item_size, F&& f) {
  if (view.ndim > kMaxLaunchDims) {
    int fixed = 1;
    for (int d = 2; d < view.ndim; ++d) {
      if (view.sizes[d] <= view.sizes[fixed]) fixed = d;
    }
    StridedView part = view;
    --part.ndim;
    for (int d = fixed; d < part.ndim; ++d) {
      part.sizes[d] = view.sizes[d + 1];
      for (int k = 0; k < view.operands; ++k) part.strides[k][d] = view.strides[k][d + 1];
    }
    for (int64_t i = 0; i < view.sizes[fixed]; ++i) {
      for (int k = 0; k < view.operands; ++k) part.data[k] = view.data[k] + i * view.strides[k][fixed] * item_size;
      for_each_part(part, item_size, f);
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
    for (int k = 0; k < view.operands; ++k) part.data[k] = view.data[k] + start * view.strides[k][d] * item_size;
    for_each_part(part, item_size, f);
  }
}

}  // namespace act
