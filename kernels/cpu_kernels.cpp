// CPU backend: the view's elements in order, split into chunks that at::parallel_for spreads over
// threads; within a chunk, one plain loop per stretch of a row.
#include <algorithm>
#include <array>
#include <cstring>
#include <numeric>
#include <type_traits>
#include <utility>
#include <vector>

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#elif defined(_M_X64)
#include <pmmintrin.h>
#endif

#include "cpu_math.h"
#include "strided_view.h"
#include "torch_runtime.h"

namespace act {
namespace {

// Elements per task: large enough that the thread pool's overhead stays small (ATen's choice).
constexpr int64_t kGrainSize = 32768;

// The step of a row every operand walks element by element: a compile-time 1, so the loop over
// it vectorizes.
struct UnitStride {
  constexpr operator int64_t() const { return 1; }
};

// The random words of a deterministic op's row: none.
struct NoWords {};

// The output pointers of a functor's row: one per result.
template <typename scalar_t, typename Op>
using RowOutputs = std::array<scalar_t*, OutputsOf<Op>::value>;

// The float32 and float64 functors of a compare, a select and at most a multiply per element (ReLU's, and SELU's
// gradient from the result), whose loops are bound by memory. Their loops take two vectors an iteration, as ATen's
// vectorized loop does: with one, float32 ReLU's took up to 1.4x as long on two Zen 4 threads with its data in L2
// (benchmarks/probes/select_unroll_cpu.cpp; the staged float16 blocks, unrolled too, read 0.67-0.73x torch's
// selu_backward at 2^22 against 0.86-0.93x). Their rows out of place run the x86-64-v3 copy even where
// AVX-512 is, as ATen's clamp_min and threshold_backward do: on a Zen 4 core the 256-bit loop of two vectors an
// iteration was ahead of the 512-bit one or level with it at every size (the probe above); in place, ReLU read 3%
// slower with 256 bits. Their rows skip the prefetches, which the hardware's prefetchers make redundant for them:
// on Zen 4 they made relu_ on 2^22 float64 elements 0.70-0.87x torch's (0.99-1.07x without). The 16-bit functors
// compare bits, which AVX2 does in more steps.
template <typename Op>
struct MemoryBound : std::false_type {};
template <typename T>
struct MemoryBound<ReluForward<T>> : std::bool_constant<sizeof(T) >= 4> {};
template <typename T>
struct MemoryBound<ReluBackward<T>> : std::bool_constant<sizeof(T) >= 4> {};
template <typename T>
struct MemoryBound<SeluBackward<T>> : std::bool_constant<sizeof(T) >= 4> {};

// out_o[i * s_o] = op(in_k[i * s_k]...)[o] for i < n; a random op's element i takes words[i] first. Pointers
// may alias (in-place ops): with unit steps the compiler checks for overlap at run time and vectorizes.
template <typename scalar_t, typename Op, typename Stride, typename Words, size_t... I>
C10_ALWAYS_INLINE void cpu_row(Op op, RowOutputs<scalar_t, Op> out, std::array<const scalar_t*, sizeof...(I)> in,
                               std::array<Stride, OutputsOf<Op>::value + sizeof...(I)> step, Words words, int64_t n,
                               std::index_sequence<I...>) {
  using acc_t = typename Op::acc_t;
  constexpr int O = OutputsOf<Op>::value;
  // Inlined, or the loop is neither wide nor this copy's.
  const auto element = [&](int64_t i) __attribute__((always_inline)) {
    const auto result = [&]() __attribute__((always_inline)) {
      if constexpr (std::is_same_v<Words, NoWords>) {
        return op(static_cast<acc_t>(in[I][i * step[O + I]])...);
      } else {
        return op(uint32_t(words[i]), static_cast<acc_t>(in[I][i * step[O + I]])...);
      }
    }();
    for (int o = 0; o < O; ++o) out[o][i * step[o]] = result_at<scalar_t, O>(result, o);
  };
  if constexpr (MemoryBound<Op>::value) {
#pragma GCC unroll 2
    for (int64_t i = 0; i < n; ++i) element(i);
  } else {
    for (int64_t i = 0; i < n; ++i) element(i);
  }
}

// float16 rows staged through float: GCC converts c10::Half one element at a time (without F16C even
// in the x86-64-v3 and -v4 copies), which kept every float16 row scalar. In those copies a row goes in
// blocks: its halves to float with F16C (exact), the op's float loop over the block, the results back to
// half with F16C's round to nearest even (c10::Half's rounding). Ops that compute in the storage type
// (ReLU: no round trip through float that would change a NaN's bits) keep their own loop. Blocks of 128: on a
// Zen 4 core, blocks of 512 took up to twice as long on data beyond L2 (float16 selu_backward at 2^22 0.56-0.72x
// torch -> 0.85-0.87x; docs/performance.md, CPU).
constexpr int64_t kHalfBlock = 128;

#if defined(__GNUC__) && defined(__x86_64__)
// F16C's conversions at each copy's width: 8 lanes in the x86-64-v3 copy, 16 in the -v4 one (with 8, a binary
// float16 op's three conversions kept selu_backward at 0.82x torch 2.15.0's Vectorized<Half> at 2^20).
__attribute__((target("arch=x86-64-v3"))) void halves_to_float(std::integral_constant<int, 1>, const c10::Half* in,
                                                               float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_store_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i))));
  }
  for (; i < n; ++i) out[i] = static_cast<float>(in[i]);
}

__attribute__((target("arch=x86-64-v4"))) void halves_to_float(std::integral_constant<int, 2>, const c10::Half* in,
                                                               float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    // The zero-masked forms (all lanes kept): GCC 12 warns of an uninitialized pass-through in the others.
    const __m256i halves = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i));
    _mm512_store_ps(out + i, _mm512_maskz_cvtph_ps(0xFFFF, halves));
  }
  for (; i < n; ++i) out[i] = static_cast<float>(in[i]);
}

__attribute__((target("arch=x86-64-v3"))) void floats_to_half(std::integral_constant<int, 1>, const float* in,
                                                              c10::Half* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                     _mm256_cvtps_ph(_mm256_load_ps(in + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  for (; i < n; ++i) out[i] = static_cast<c10::Half>(in[i]);
}

__attribute__((target("arch=x86-64-v4"))) void floats_to_half(std::integral_constant<int, 2>, const float* in,
                                                              c10::Half* out, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i halves =
        _mm512_maskz_cvtps_ph(0xFFFF, _mm512_load_ps(in + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), halves);
  }
  for (; i < n; ++i) out[i] = static_cast<c10::Half>(in[i]);
}

template <typename scalar_t, typename Op, typename Stride>
constexpr bool kStagesHalf = std::is_same_v<scalar_t, c10::Half> && std::is_same_v<typename Op::acc_t, float> &&
                             std::is_same_v<Stride, UnitStride>;

template <typename Level, typename Op, typename Words, size_t... I>
C10_ALWAYS_INLINE void half_row(Level level, Op op, RowOutputs<c10::Half, Op> out,
                                std::array<const c10::Half*, sizeof...(I)> in, Words words, int64_t n,
                                std::index_sequence<I...> seq) {
  constexpr int O = OutputsOf<Op>::value;
  alignas(64) float block[O + sizeof...(I)][kHalfBlock];
  RowOutputs<float, Op> block_out;
  for (int o = 0; o < O; ++o) block_out[o] = block[o];
  for (int64_t start = 0; start < n; start += kHalfBlock) {
    const int64_t m = std::min(kHalfBlock, n - start);
    (halves_to_float(level, in[I] + start, block[O + I], m), ...);
    Words block_words = words;
    if constexpr (!std::is_same_v<Words, NoWords>) block_words += start;
    cpu_row<float>(op, block_out, {block[O + I]...}, std::array<UnitStride, O + sizeof...(I)>{}, block_words, m, seq);
    for (int o = 0; o < O; ++o) floats_to_half(level, block[o], out[o] + start, m);
  }
}
#endif

// The loops are compiled three times, for the baseline x86-64, x86-64-v3 (AVX2, FMA) and x86-64-v4
// (AVX-512), and each call takes the copy that cpu_vector_level() picks and cpu_loop_name() reports: a
// wheel must run on any x86-64 CPU, and each level doubles the lanes of every vectorized step. The choice
// follows ATen's CPU capability, so ATEN_CPU_CAPABILITY=avx2 runs the x86-64-v3 copy and =default the
// baseline (the tests check each). f(level) is compiled for each level (f inlines into each copy); kWidest
// caps the level an op's loop takes.
#if defined(__GNUC__) && defined(__x86_64__)
#define ACT_HAS_X86_64_LEVELS 1
template <typename F>
__attribute__((target("arch=x86-64-v3"), noinline)) void on_x86_64_v3(const F& f) {
  f(std::integral_constant<int, 1>{});
}

template <typename F>
__attribute__((target("arch=x86-64-v4"), noinline)) void on_x86_64_v4(const F& f) {
  f(std::integral_constant<int, 2>{});
}
#endif

template <int kWidest = 2, typename F>
void at_cpu_level(const F& f) {
#ifdef ACT_HAS_X86_64_LEVELS
  switch (std::min(cpu_vector_level(), kWidest)) {
    case 2: return on_x86_64_v4(f);
    case 1: return on_x86_64_v3(f);
    default: break;
  }
#endif
  f(std::integral_constant<int, 0>{});
}

// A unit-step row of more than kPrefetchedBytes, in steps of kPrefetchStep elements, each step first asking for
// its inputs' cache lines kPrefetchAhead elements on (into L2). On data from memory rather than cache a loop that
// calls Sleef's functions kept too few loads in flight for the hardware's prefetchers (float64 SELU took 2.3x its
// time on data in cache, torch's elu kernel 1.07x). Smaller rows are likely in cache, where the prefetches cost
// float64 GELU and silu_backward 5-6% (docs/design/launch-plan.md).
constexpr int64_t kPrefetchStep = 128;
constexpr int64_t kPrefetchAhead = 8 * kPrefetchStep;
constexpr int64_t kPrefetchedBytes = int64_t(16) << 20;

template <typename scalar_t, typename Op, typename Words, size_t... I>
C10_ALWAYS_INLINE void prefetched_row(Op op, RowOutputs<scalar_t, Op> out, std::array<const scalar_t*, sizeof...(I)> in,
                                      Words words, int64_t n, std::index_sequence<I...> seq) {
  constexpr int O = OutputsOf<Op>::value;
  constexpr int64_t kLine = 64 / sizeof(scalar_t);
  const auto step = [&](int64_t start, int64_t m) __attribute__((always_inline)) {
    RowOutputs<scalar_t, Op> step_out;
    for (int o = 0; o < O; ++o) step_out[o] = out[o] + start;
    Words step_words = words;
    if constexpr (!std::is_same_v<Words, NoWords>) step_words = words + start;
    cpu_row(op, step_out, {(in[I] + start)...}, std::array<UnitStride, O + sizeof...(I)>{}, step_words, m, seq);
  };
  int64_t start = 0;
  for (; start + kPrefetchStep <= n; start += kPrefetchStep) {
    const int64_t ahead_end = std::min(start + kPrefetchAhead + kPrefetchStep, n);
    for (int64_t i = start + kPrefetchAhead; i < ahead_end; i += kLine) (__builtin_prefetch(in[I] + i, 0, 2), ...);
    step(start, kPrefetchStep);  // a constant count: the vectorized loop without its remainder
  }
  step(start, n - start);
}

template <typename scalar_t, typename Op, typename Stride, typename Words, size_t... I>
void arithmetic_row(Op op, RowOutputs<scalar_t, Op> out, std::array<const scalar_t*, sizeof...(I)> in,
                    std::array<Stride, OutputsOf<Op>::value + sizeof...(I)> step, Words words, int64_t n,
                    std::index_sequence<I...> seq) {
  const auto row = [&](auto level) __attribute__((always_inline)) {
#ifdef ACT_HAS_X86_64_LEVELS
    if constexpr (decltype(level)::value >= 1 && kStagesHalf<scalar_t, Op, Stride>) {
      return half_row(level, op, out, in, words, n, seq);
    }
#endif
    if constexpr (std::is_same_v<Stride, UnitStride> && !MemoryBound<Op>::value) {
      constexpr int64_t kOperands = OutputsOf<Op>::value + sizeof...(I);
      if (n * int64_t(sizeof(scalar_t)) * kOperands > kPrefetchedBytes) {
        return prefetched_row<scalar_t>(op, out, in, words, n, seq);
      }
    }
    cpu_row(op, out, in, step, words, n, seq);
  };
  if constexpr (MemoryBound<Op>::value) {
    if (static_cast<const void*>(out[0]) != static_cast<const void*>(in[0])) return at_cpu_level<1>(row);
  }
  at_cpu_level(row);
}

// Whether an op's value costs more than a gather: an activation's Math says (`tabulated`); SELU's functors do.
template <typename Op, typename = void>
struct CostsMoreThanGather : std::true_type {};
template <typename Op>
struct CostsMoreThanGather<Op, std::void_t<typename Op::Math>> : std::bool_constant<Op::Math::tabulated> {};

// A deterministic one-input op on a 16-bit type that computes in float: 65536 inputs, so its contiguous rows look
// their results up in a table that the op's own loop fills once (its bits, in a gather and a store; one AVX-512 core:
// 0.3 ns an element, where SiLU's float arithmetic takes 0.6-1.0 and GELU's 1.3-1.6). Rows of other steps compute,
// and so do ops cheaper than a gather (squared ReLU), which a Zen 4 core's slower gathers would hold behind torch.
template <typename scalar_t, typename Op, typename Stride>
constexpr bool kLooksUp = sizeof(scalar_t) == 2 && Op::arity == 1 && OutputsOf<Op>::value == 1 &&
                          !IsRandom<Op>::value && std::is_same_v<typename Op::Args, NoArgs> &&
                          !std::is_same_v<typename Op::acc_t, scalar_t> && std::is_same_v<Stride, UnitStride> &&
                          CostsMoreThanGather<Op>::value;

// Keeps subnormal inputs and results while a table is filled: its entries are the op's results whatever
// flush-to-zero mode (torch.set_flush_denormal: x86's MXCSR, AArch64's FPCR) the thread that first needs it is in.
class SubnormalsKept {
 public:
  SubnormalsKept(const SubnormalsKept&) = delete;
  SubnormalsKept& operator=(const SubnormalsKept&) = delete;
#if defined(__x86_64__) || defined(_M_X64)
  SubnormalsKept() { _mm_setcsr(saved_ & ~kFlushBits); }
  ~SubnormalsKept() { _mm_setcsr(saved_); }

 private:
  static constexpr unsigned kFlushBits = _MM_FLUSH_ZERO_MASK | _MM_DENORMALS_ZERO_MASK;
  const unsigned saved_ = _mm_getcsr();
#elif defined(__aarch64__)
  SubnormalsKept() { write(saved_ & ~kFlushToZero); }
  ~SubnormalsKept() { write(saved_); }

 private:
  static uint64_t read() {
    uint64_t fpcr;
    __asm__ __volatile__("mrs %0, fpcr" : "=r"(fpcr));
    return fpcr;
  }
  static void write(uint64_t fpcr) { __asm__ __volatile__("msr fpcr, %0" : : "r"(fpcr)); }
  static constexpr uint64_t kFlushToZero = uint64_t(1) << 24;  // FPCR.FZ
  const uint64_t saved_ = read();
#else
  SubnormalsKept() = default;
#endif
};

// op's result for each 16-bit pattern, and one entry more: a gather reads an entry's 2 bytes and the next 2.
template <typename scalar_t, typename Op>
const uint16_t* result_table(const Op& op) {
  static const std::vector<uint16_t> table = [&] {
    [[maybe_unused]] const SubnormalsKept exact;
    std::vector<uint16_t> patterns(65536), results(65537);
    std::iota(patterns.begin(), patterns.end(), uint16_t(0));
    arithmetic_row(op, RowOutputs<scalar_t, Op>{reinterpret_cast<scalar_t*>(results.data())},
                   {reinterpret_cast<const scalar_t*>(patterns.data())}, std::array<UnitStride, 2>{}, NoWords{},
                   int64_t(patterns.size()), std::index_sequence<0>{});
    return results;
  }();
  return table.data();
}

// y[i] = table[x[i]] for i < n, a table of 16-bit results or of floats: one load an element in the baseline copy,
// a gather of 8 entries in the x86-64-v3 copy (scalar loads there held bfloat16 GELU to 0.72-1.34x torch's AVX2
// kernel in place) and of 16 in the x86-64-v4 copy.
template <typename Level, typename Entry>
C10_ALWAYS_INLINE void look_up(Level, const Entry* table, const uint16_t* x, Entry* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = table[x[i]];
}

#if defined(__GNUC__) && defined(__x86_64__)
// gather(x + i, y + i) for each whole vector of kLanes elements, then the tail one load an element.
template <int kLanes, typename Entry, typename Gather>
C10_ALWAYS_INLINE void gathered(const Entry* table, const uint16_t* x, Entry* y, int64_t n, Gather gather) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) gather(x + i, y + i);
  look_up(std::integral_constant<int, 0>{}, table, x + i, y + i, n - i);
}

// A 16-bit entry is gathered as 4 bytes, the entry in their low half (the tables hold one entry more).
template <typename Entry>
__attribute__((target("arch=x86-64-v3"))) void look_up(std::integral_constant<int, 1>, const Entry* table,
                                                       const uint16_t* x, Entry* y, int64_t n) {
  gathered<8>(table, x, y, n, [table](const uint16_t* xs, Entry* ys) __attribute__((target("arch=x86-64-v3"))) {
    const __m256i index = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(xs)));
    if constexpr (sizeof(Entry) == 2) {
      const __m256i low = _mm256_and_si256(_mm256_i32gather_epi32(reinterpret_cast<const int*>(table), index, 2),
                                           _mm256_set1_epi32(0xFFFF));
      const __m128i entries = _mm_packus_epi32(_mm256_castsi256_si128(low), _mm256_extracti128_si256(low, 1));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(ys), entries);
    } else {
      _mm256_storeu_ps(ys, _mm256_i32gather_ps(table, index, 4));
    }
  });
}

template <typename Entry>
__attribute__((target("arch=x86-64-v4"))) void look_up(std::integral_constant<int, 2>, const Entry* table,
                                                       const uint16_t* x, Entry* y, int64_t n) {
  gathered<16>(table, x, y, n, [table](const uint16_t* xs, Entry* ys) __attribute__((target("arch=x86-64-v4"))) {
    const __m512i index = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(xs)));
    if constexpr (sizeof(Entry) == 2) {
      const __m512i entries = _mm512_i32gather_epi32(index, table, 2);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(ys), _mm512_cvtepi32_epi16(entries));
    } else {
      _mm512_storeu_ps(ys, _mm512_i32gather_ps(index, table, 4));
    }
  });
}
#endif

// f(x) as a float for each 16-bit pattern x, filled once per f (each caller's lambda is a type of its own).
template <typename scalar_t, typename F>
const float* float_table(const F& f) {
  static const std::vector<float> table = [&] {
    [[maybe_unused]] const SubnormalsKept exact;
    std::vector<float> entries(65536);
    for (uint32_t pattern = 0; pattern < entries.size(); ++pattern) {
      entries[pattern] = f(static_cast<float>(bits_as<scalar_t>(uint16_t(pattern))));
    }
    return entries;
  }();
  return table.data();
}

// An activation's value and slope at each 16-bit pattern, as floats: one table each per Math and type, shared by
// its gradient and its gated forms.
template <typename scalar_t, class Math>
const float* value_table() {
  return float_table<scalar_t>([](float x) { return float(Math::value(x)); });
}
template <typename scalar_t, class Math>
const float* slope_table() {
  return float_table<scalar_t>([](float x) { return float(Math::gradient(1.f, x)); });
}

// The functors whose 16-bit rows can take their activation from those tables, where its Math is `tabulated` and
// computes in float (activations.h): the gradient, grad * slope(x); the gated forward, act(gate) * up; the gated
// backward, ((grad * up) * slope(gate), grad * act(gate)). Each is the functor's own rounding, and its contiguous
// rows take it; rows of other steps compute.
enum class Tables { none, slope, value, slope_and_value };
template <typename Op>
struct TablesOf : std::integral_constant<Tables, Tables::none> {};
template <class Math, typename T>
struct TablesOf<MathBackward<Math, T>> : std::integral_constant<Tables, Tables::slope> {};
template <class Math, typename T>
struct TablesOf<GatedForward<Math, T>> : std::integral_constant<Tables, Tables::value> {};
template <class Math, typename T>
struct TablesOf<GatedBackward<Math, T>> : std::integral_constant<Tables, Tables::slope_and_value> {};

template <typename scalar_t, typename Op, typename Stride>
constexpr Tables tables_taken() {
  if constexpr (sizeof(scalar_t) == 2 && TablesOf<Op>::value != Tables::none && std::is_same_v<Stride, UnitStride>) {
    using Math = typename Op::Math;
    if constexpr (Math::tabulated && std::is_same_v<typename Math::math_t, float>) return TablesOf<Op>::value;
  }
  return Tables::none;
}

// A 16-bit row's values in float and back, with F16C for float16 where the copy has it (as half_row's).
template <typename Level, typename scalar_t>
C10_ALWAYS_INLINE void to_floats(Level, const scalar_t* in, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(in[i]);
}
template <typename Level, typename scalar_t>
C10_ALWAYS_INLINE void from_floats(Level, const float* in, scalar_t* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<scalar_t>(in[i]);
}
#if defined(__GNUC__) && defined(__x86_64__)
template <int L, typename = std::enable_if_t<L >= 1>>
C10_ALWAYS_INLINE void to_floats(std::integral_constant<int, L> level, const c10::Half* in, float* out, int64_t n) {
  halves_to_float(level, in, out, n);
}
template <int L, typename = std::enable_if_t<L >= 1>>
C10_ALWAYS_INLINE void from_floats(std::integral_constant<int, L> level, const float* in, c10::Half* out, int64_t n) {
  floats_to_half(level, in, out, n);
}
#endif

// A row of a functor that takes tables: block k < K holds tables[k][x[i]], block K + f factors[f][i] (in float);
// combine(block, i) leaves the O results in blocks 0 to O - 1, which are rounded once to out.
template <typename Level, typename scalar_t, size_t K, size_t F, size_t O, typename Combine>
C10_ALWAYS_INLINE void table_row(Level level, const std::array<const float*, K>& tables, const scalar_t* x,
                                 const std::array<const scalar_t*, F>& factors, const std::array<scalar_t*, O>& out,
                                 int64_t n, Combine combine) {
  static_assert(O <= K + F);
  alignas(64) float block[K + F][kHalfBlock];
  for (int64_t start = 0; start < n; start += kHalfBlock) {
    const int64_t m = std::min(kHalfBlock, n - start);
    for (size_t k = 0; k < K; ++k) look_up(level, tables[k], reinterpret_cast<const uint16_t*>(x + start), block[k], m);
    for (size_t f = 0; f < F; ++f) to_floats(level, factors[f] + start, block[K + f], m);
    for (int64_t i = 0; i < m; ++i) combine(block, i);
    for (size_t o = 0; o < O; ++o) from_floats(level, block[o], out[o] + start, m);
  }
}

template <typename scalar_t, typename Op, typename Stride, typename Words, size_t... I>
void run_row(Op op, RowOutputs<scalar_t, Op> out, std::array<const scalar_t*, sizeof...(I)> in,
             std::array<Stride, OutputsOf<Op>::value + sizeof...(I)> step, Words words, int64_t n,
             std::index_sequence<I...> seq) {
  if constexpr (kLooksUp<scalar_t, Op, Stride>) {
    const uint16_t* table = result_table<scalar_t>(op);
    const auto* x = reinterpret_cast<const uint16_t*>(in[0]);
    auto* y = reinterpret_cast<uint16_t*>(out[0]);
    at_cpu_level([&](auto level) __attribute__((always_inline)) { look_up(level, table, x, y, n); });
  } else if constexpr (constexpr Tables tables = tables_taken<scalar_t, Op, Stride>(); tables != Tables::none) {
    using Math = typename Op::Math;
    const auto times_factor = [](auto& block, int64_t i) __attribute__((always_inline)) { block[0][i] *= block[1][i]; };
    at_cpu_level([&](auto level) __attribute__((always_inline)) {
      if constexpr (tables == Tables::slope) {  // op(grad, x)
        table_row(level, std::array{slope_table<scalar_t, Math>()}, in[1], std::array{in[0]}, std::array{out[0]}, n,
                  times_factor);
      } else if constexpr (tables == Tables::value) {  // op(gate, up)
        table_row(level, std::array{value_table<scalar_t, Math>()}, in[0], std::array{in[1]}, std::array{out[0]}, n,
                  times_factor);
      } else {  // op(grad, gate, up); blocks: slope, value, grad, up
        table_row(level, std::array{slope_table<scalar_t, Math>(), value_table<scalar_t, Math>()}, in[1],
                  std::array{in[0], in[2]}, std::array{out[0], out[1]}, n,
                  [](auto& block, int64_t i) __attribute__((always_inline)) {
                    block[0][i] *= block[2][i] * block[3][i];
                    block[1][i] *= block[2][i];
                  });
      }
    });
  } else {
    arithmetic_row(op, out, in, step, words, n, seq);
  }
}

// A row whose outputs step by 1 and whose inputs step by 1 or 0 (an expanded operand, as the gradient autograd
// passes back from a sum): each zero-step input repeated into a block, so that the row runs the unit-step loop,
// which vectorizes (element by element, relu_backward with a summed gradient ran 29x slower than torch's).
template <typename scalar_t, typename Op, size_t... I>
void repeated_input_row(Op op, RowOutputs<scalar_t, Op> out, std::array<const scalar_t*, sizeof...(I)> in,
                        const std::array<int64_t, OutputsOf<Op>::value + sizeof...(I)>& step, int64_t n,
                        std::index_sequence<I...> seq) {
  constexpr int O = OutputsOf<Op>::value;
  constexpr int64_t kBlock = 512;  // elements a repeated input holds on the stack
  alignas(64) scalar_t repeated[sizeof...(I)][kBlock];
  for (size_t k = 0; k < sizeof...(I); ++k) {
    if (step[O + k] == 0) std::fill_n(repeated[k], std::min(n, kBlock), *in[k]);
  }
  for (int64_t start = 0; start < n; start += kBlock) {
    RowOutputs<scalar_t, Op> block_out;
    for (int o = 0; o < O; ++o) block_out[o] = out[o] + start;
    run_row(op, block_out, {(step[O + I] == 0 ? repeated[I] : in[I] + start)...},
            std::array<UnitStride, O + sizeof...(I)>{}, NoWords{}, std::min(kBlock, n - start), seq);
  }
}

// The words of Philox blocks first .. first + n - 1, four a block, into `words`: independent blocks, a loop
// each level's copy vectorizes.
void run_philox_blocks(const PhiloxStream& stream, uint64_t first, int64_t n, uint32_t* words) {
  at_cpu_level([&](auto) __attribute__((always_inline)) {
    for (int64_t j = 0; j < n; ++j) {
      const PhiloxStream::Block b = stream.block(first + uint64_t(j));
      for (int w = 0; w < 4; ++w) words[4 * j + w] = b.v[w];
    }
  });
}

// A random op's row of unit steps, a chunk at a time: the chunk's Philox blocks, then the op over the chunk
// as over any row, element i taking word index + i (the element path's words, bit for bit).
template <typename scalar_t, typename Op, size_t... I>
void random_unit_row(const Op& op, const PhiloxStream& stream, int64_t index, scalar_t* out,
                     std::array<const scalar_t*, sizeof...(I)> in, int64_t n, std::index_sequence<I...> seq) {
  using Word = std::conditional_t<Op::random_bits == 16, uint16_t, uint32_t>;
  constexpr int64_t kPerBlock = 128 / Op::random_bits;
  constexpr int64_t kBlocks = 64;
  alignas(64) uint32_t block_words[4 * kBlocks];
  alignas(64) uint16_t words[sizeof(Word) == 2 ? kPerBlock * kBlocks : 1];
  for (int64_t i = 0; i < n;) {
    const uint64_t first = uint64_t(index + i);
    const int64_t skip = int64_t(first % kPerBlock);
    const int64_t m = std::min(n - i, kPerBlock * kBlocks - skip);
    const int64_t blocks = (skip + m + kPerBlock - 1) / kPerBlock;
    run_philox_blocks(stream, first / kPerBlock, blocks, block_words);
    const Word* row_words;
    if constexpr (sizeof(Word) == 2) {  // low halves first, as extract's
      std::memcpy(words, block_words, size_t(blocks) * 16);
      row_words = words + skip;
    } else {
      row_words = block_words + skip;
    }
    run_row(op, RowOutputs<scalar_t, Op>{out + i}, {(in[I] + i)...}, std::array<UnitStride, sizeof...(I) + 1>{},
            row_words, m, seq);
    i += m;
  }
}

// A random op's row, element by element: element i draws the word numbered by its offset in the output
// (`index` for i = 0), each Philox block computed once for the words it holds.
template <typename scalar_t, typename Op, size_t... I>
void random_row(const Op& op, const PhiloxStream& stream, int64_t index, scalar_t* out,
                std::array<const scalar_t*, sizeof...(I)> in, std::array<int64_t, sizeof...(I) + 1> step, int64_t n,
                std::index_sequence<I...>) {
  using acc_t = typename Op::acc_t;
  constexpr int kPerBlock = 128 / Op::random_bits;
  PhiloxStream::Block block{};
  uint64_t block_index = ~uint64_t(0);
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t word = uint64_t(index + i * step[0]);
    if (word / kPerBlock != block_index) {
      block_index = word / kPerBlock;
      block = stream.block(block_index);
    }
    const uint32_t bits = PhiloxStream::extract<Op::random_bits>(block, uint32_t(word % kPerBlock));
    out[i * step[0]] = static_cast<scalar_t>(op(bits, static_cast<acc_t>(in[I][i * step[I + 1]])...));
  }
}

// Elements [begin, end) of the view in order: rows along dimension 0, the other dimensions
// counted like an odometer so that only a chunk's first element needs divisions.
template <typename scalar_t, typename Op, size_t... I>
void cpu_strided_chunk(const Op& op, const StridedView& view, int64_t begin, int64_t end,
                       std::index_sequence<I...> seq) {
  constexpr int outputs = OutputsOf<Op>::value;
  constexpr int operands = kOperandsOf<Op>;
  static_assert(outputs == 1 || !IsRandom<Op>::value, "a random op has one output");
  const int64_t cols = view.sizes[0];
  bool unit_rows = true, repeated_inputs = true;
  for (int k = 0; k < operands; ++k) {
    unit_rows &= view.strides[k][0] == 1;
    repeated_inputs &= view.strides[k][0] == 1 || (k >= outputs && view.strides[k][0] == 0);
  }
  int64_t index[kMaxDims] = {};
  int64_t offset[operands] = {};  // of the current row's first element, in elements
  int64_t row = begin / cols;
  for (int d = 1; d < view.ndim; ++d) {
    index[d] = row % view.sizes[d];
    row /= view.sizes[d];
    for (int k = 0; k < operands; ++k) offset[k] += index[d] * view.strides[k][d];
  }
  int64_t col = begin % cols;
  while (begin < end) {
    const int64_t n = std::min(cols - col, end - begin);
    const auto at = [&](int k) {
      return reinterpret_cast<scalar_t*>(view.data[k]) + offset[k] + col * view.strides[k][0];
    };
    const std::array<const scalar_t*, Op::arity> in{at(outputs + I)...};
    std::array<int64_t, operands> step;
    RowOutputs<scalar_t, Op> out;
    for (int k = 0; k < operands; ++k) step[k] = view.strides[k][0];
    for (int o = 0; o < outputs; ++o) out[o] = at(o);
    if constexpr (IsRandom<Op>::value) {
      const int64_t index = offset[0] + col * step[0];
      if (unit_rows) {
        random_unit_row(op, op.source.resolve(false), index, at(0), in, n, seq);
      } else {
        random_row(op, op.source.resolve(false), index, at(0), in, step, n, seq);
      }
    } else if (unit_rows) {
      run_row(op, out, in, std::array<UnitStride, operands>{}, NoWords{}, n, seq);
    } else if (repeated_inputs) {
      repeated_input_row(op, out, in, step, n, seq);
    } else {
      run_row(op, out, in, step, NoWords{}, n, seq);
    }
    begin += n;
    col = 0;
    for (int d = 1; d < view.ndim; ++d) {  // next row
      for (int k = 0; k < operands; ++k) offset[k] += view.strides[k][d];
      if (++index[d] < view.sizes[d]) break;
      for (int k = 0; k < operands; ++k) offset[k] -= index[d] * view.strides[k][d];
      index[d] = 0;
    }
  }
}

}  // namespace

const char* cpu_loop_name() {
#ifdef ACT_HAS_X86_64_LEVELS
  static const char* const names[] = {"baseline", "x86-64-v3", "x86-64-v4"};
  return names[cpu_vector_level()];
#else
  return "baseline";
#endif
}

template <template <typename> class F>
void cpu_elementwise(c10::ScalarType dtype, const StridedView& view, const ArgsOf<F>& args) {
  dispatch_floating(dtype, [&](auto type) {
    using scalar_t = decltype(type);
    const auto op = make_functor<F, scalar_t>(args);
    runtime::parallel_for(0, view.numel(), kGrainSize, [&](int64_t begin, int64_t end) {
      cpu_strided_chunk<scalar_t>(op, view, begin, end, std::make_index_sequence<decltype(op)::arity>{});
    });
  });
}

#define ACT_INSTANTIATE(F) template void cpu_elementwise<F>(c10::ScalarType, const StridedView&, const ArgsOf<F>&);
#define ACT_INSTANTIATE_OP(Op) ACT_INSTANTIATE(Op::Forward) ACT_INSTANTIATE(Op::Backward)
ACT_ACTIVATIONS(ACT_INSTANTIATE_OP)
#define ACT_INSTANTIATE_GATED(Op) ACT_INSTANTIATE(GatedOf<Op>::Forward) ACT_INSTANTIATE(GatedOf<Op>::Backward)
ACT_GATED(ACT_INSTANTIATE_GATED)
ACT_OTHER_FUNCTORS(ACT_INSTANTIATE)

}  // namespace act
