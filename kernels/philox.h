#pragma once
// The counter-based random stream of the random ops, shared by the CPU loop and the CUDA launcher:
// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011). An element's
// random word depends only on (seed, offset, its index), so the backward replays the forward's mask
// from the saved pair alone, and no mask is stored.

#include <torch/headeronly/macros/Macros.h>

#include <stdint.h>

// nvcc unrolls these loops for the GPU; host compilers know no `#pragma unroll` and choose for themselves.
#ifdef __CUDA_ARCH__
#define ACT_UNROLL _Pragma("unroll")
#else
#define ACT_UNROLL
#endif

namespace act {

// The bits of a random op's word for an element of `item_size` bytes: 16 for the 16-bit types, whose forward
// would otherwise spend more time computing Philox blocks than moving its bytes (a block is 8 such words);
// 32 for the others.
constexpr int random_word_bits(int item_size) { return item_size == 2 ? 16 : 32; }

// One call's stream of random words, Bits (32 or 16) bits each: the 128 bits of the Philox block at
// counter (offset / 4, j) under key `seed` give words 128 / Bits * j onwards, low bits first. Block j is
// the one curand_init(seed, j, offset) starts with, the layout torch's own CUDA random kernels use, so a
// call that reserves an increment of 4 from the generator (philox_cuda_state(4)) shares no block with
// any other call.
struct PhiloxStream {
  uint64_t seed = 0, offset = 0;

  struct Block {
    uint32_t v[4];
  };

  C10_HOST_DEVICE static uint32_t mulhilo(uint32_t a, uint32_t b, uint32_t& hi) {
#ifdef __CUDA_ARCH__
    hi = __umulhi(a, b);
    return a * b;
#else
    const uint64_t product = uint64_t(a) * b;
    hi = uint32_t(product >> 32);
    return uint32_t(product);
#endif
  }

  C10_HOST_DEVICE Block block(uint64_t j) const {
    const uint64_t base = offset / 4;
    uint32_t c[4] = {uint32_t(base), uint32_t(base >> 32), uint32_t(j), uint32_t(j >> 32)};
    uint32_t k0 = uint32_t(seed), k1 = uint32_t(seed >> 32);
ACT_UNROLL
    for (int round = 0; round < 10; ++round) {
      uint32_t hi0, hi1;
      const uint32_t lo0 = mulhilo(0xD2511F53u, c[0], hi0);
      const uint32_t lo1 = mulhilo(0xCD9E8D57u, c[2], hi1);
      const uint32_t next[4] = {hi1 ^ c[1] ^ k0, lo1, hi0 ^ c[3] ^ k1, lo0};
ACT_UNROLL
      for (int w = 0; w < 4; ++w) c[w] = next[w];
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    return {{c[0], c[1], c[2], c[3]}};
  }

  // Word k of a block. Selects rather than indexes, so that a run-time k keeps the block in registers.
  template <int Bits>
  C10_HOST_DEVICE static uint32_t extract(const Block& b, uint32_t k) {
    static_assert(Bits == 32 || Bits == 16, "32- or 16-bit words");
    const uint32_t w = Bits == 32 ? k : k >> 1;
    const uint32_t word = w == 0 ? b.v[0] : w == 1 ? b.v[1] : w == 2 ? b.v[2] : b.v[3];
    return Bits == 32 ? word : (word >> (16 * (k & 1))) & 0xFFFFu;
  }

  template <int Bits>
  C10_HOST_DEVICE uint32_t word(uint64_t i) const {
    constexpr int kPerBlock = 128 / Bits;
    return extract<Bits>(block(i / kPerBlock), uint32_t(i % kPerBlock));
  }

  // Words i .. i + N - 1 of a pack: N divides the block's 128 / Bits words and i is a multiple of N (one block
  // holds them all), or N is a multiple of them and i starts a block (whole blocks). The launcher sends a random
  // op's other packs element by element.
  template <int Bits, int N>
  C10_HOST_DEVICE void words(uint64_t i, uint32_t (&w)[N]) const {
    constexpr int kPerBlock = 128 / Bits;
    static_assert(kPerBlock % N == 0 || N % kPerBlock == 0, "a pack's words lie in whole blocks or in one");
    constexpr int kBlocks = N < kPerBlock ? 1 : N / kPerBlock, kWords = N < kPerBlock ? N : kPerBlock;
ACT_UNROLL
    for (int k = 0; k < kBlocks; ++k) {
      const Block b = block(i / kPerBlock + k);
ACT_UNROLL
      for (int n = 0; n < kWords; ++n) {
        w[k * kWords + n] = extract<Bits>(b, N < kPerBlock ? uint32_t(i % kPerBlock) + n : n);
      }
    }
  }
};

// Where a random op's stream comes from. A forward on CUDA passes the generator's (seed, offset) for
// the launch: values, or, while a CUDA graph is captured, pointers into device memory that each replay
// updates plus the launch's offset within the graph. Its first thread records the pair at `record` for
// the backward to replay. The backward, and every forward that draws its pair before the launch (the
// CPU's), read the recorded pair.
struct PhiloxSource {
  uint64_t seed = 0, offset = 0;
  const int64_t* captured_seed = nullptr;
  const int64_t* captured_offset = nullptr;
  uint64_t offset_in_graph = 0;
  const int64_t* recorded = nullptr;
  int64_t* record = nullptr;

  C10_HOST_DEVICE PhiloxStream resolve(bool first_thread) const {
    if (recorded != nullptr) return {uint64_t(recorded[0]), uint64_t(recorded[1])};
    const bool captured = captured_seed != nullptr;
    const uint64_t s = captured ? uint64_t(*captured_seed) : seed;
    const uint64_t o = captured ? uint64_t(*captured_offset) + offset_in_graph : offset;
    if (first_thread && record != nullptr) {
      record[0] = int64_t(s);
      record[1] = int64_t(o);
    }
    return {s, o};
  }
};

}  // namespace act
