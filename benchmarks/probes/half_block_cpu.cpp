// How the block length of the float16 rows staged through float (kernels/cpu_kernels.cpp, kHalfBlock) sets their
// speed: selu_backward's arithmetic on two float16 operands, staged in blocks of 512, 256, 128 and 64 elements (halves
// to float with F16C, the float loop over the block, back to half) and fused in registers, on one core over 2^19-2^22
// elements out of place; the median of 9 interleaved runs each. Conversions in their zero-masked forms (all lanes
// kept), as the extension's: GCC 12 warns of an uninitialized pass-through in the others.
// Build and run from the repository root (GCC):
//   g++ -std=c++17 -O3 benchmarks/probes/half_block_cpu.cpp -o /tmp/half_block && /tmp/half_block
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define X86_64_V4 __attribute__((target("arch=x86-64-v4")))

constexpr float kScale = 1.0507009873554805f;
constexpr float kAlphaScale = 1.7580993408473766f;

X86_64_V4 inline float selu_backward(float grad, float result) {
  return result > 0.f ? grad * kScale : grad * (result + kAlphaScale);
}

X86_64_V4 void halves_to_float(const uint16_t* in, float* out, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __m256i halves = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i));
    _mm512_store_ps(out + i, _mm512_maskz_cvtph_ps(0xFFFF, halves));
  }
}

X86_64_V4 void floats_to_half(const float* in, uint16_t* out, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __m256i halves =
        _mm512_maskz_cvtps_ph(0xFFFF, _mm512_load_ps(in + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), halves);
  }
}

template <int kBlock>
X86_64_V4 __attribute__((noinline)) void staged(const uint16_t* grad, const uint16_t* result, uint16_t* out,
                                                int64_t n) {
  alignas(64) float block[3][kBlock];
  for (int64_t start = 0; start < n; start += kBlock) {
    halves_to_float(grad + start, block[1], kBlock);
    halves_to_float(result + start, block[2], kBlock);
    for (int i = 0; i < kBlock; ++i) block[0][i] = selu_backward(block[1][i], block[2][i]);
    floats_to_half(block[0], out + start, kBlock);
  }
}

X86_64_V4 __attribute__((noinline)) void fused(const uint16_t* grad, const uint16_t* result, uint16_t* out,
                                               int64_t n) {
  const __m512 scale = _mm512_set1_ps(kScale), alpha_scale = _mm512_set1_ps(kAlphaScale);
  for (int64_t i = 0; i < n; i += 16) {
    const __m512 g = _mm512_maskz_cvtph_ps(0xFFFF, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(grad + i)));
    const __m512 r = _mm512_maskz_cvtph_ps(0xFFFF, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(result + i)));
    const __mmask16 positive = _mm512_cmp_ps_mask(r, _mm512_setzero_ps(), _CMP_GT_OQ);
    const __m512 y = _mm512_mask_blend_ps(positive, _mm512_mul_ps(g, _mm512_add_ps(r, alpha_scale)),
                                          _mm512_mul_ps(g, scale));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i),
                        _mm512_maskz_cvtps_ph(0xFFFF, y, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
}

using Loop = void (*)(const uint16_t*, const uint16_t*, uint16_t*, int64_t);

double us_per_call(Loop loop, const uint16_t* grad, const uint16_t* result, uint16_t* out, int64_t n, int calls) {
  const auto start = std::chrono::steady_clock::now();
  for (int c = 0; c < calls; ++c) {
    loop(grad, result, out, n);
    asm volatile("" ::: "memory");
  }
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() / calls;
}

int main() {
  const std::vector<std::pair<const char*, Loop>> loops = {
      {"blocks of 512", staged<512>}, {"256", staged<256>}, {"128", staged<128>}, {"64", staged<64>},
      {"fused", fused}};
  for (int64_t n : {int64_t(1) << 19, int64_t(1) << 20, int64_t(1) << 21, int64_t(1) << 22}) {
    auto* grad = static_cast<uint16_t*>(std::aligned_alloc(64, n * 2));
    auto* result = static_cast<uint16_t*>(std::aligned_alloc(64, n * 2));
    auto* out = static_cast<uint16_t*>(std::aligned_alloc(64, n * 2));
    for (int64_t i = 0; i < n; ++i) {  // gradients in [1, 2), results of both signs, none zero
      grad[i] = uint16_t(0x3c00 + i % 500);
      result[i] = uint16_t((i & 1 ? 0xbc00 : 0x3c00) + i % 300);
    }
    const int calls = int(std::max<int64_t>(5, (int64_t(1) << 24) / n));
    std::vector<std::vector<double>> runs(loops.size());
    for (int run = 0; run < 9; ++run) {
      for (size_t k = 0; k < loops.size(); ++k) {
        runs[k].push_back(us_per_call(loops[k].second, grad, result, out, n, calls));
      }
    }
    std::printf("2^%d:", __builtin_ctzll(n));
    for (size_t k = 0; k < loops.size(); ++k) {
      std::nth_element(runs[k].begin(), runs[k].begin() + 4, runs[k].end());
      std::printf("  %s %.0f us", loops[k].first, runs[k][4]);
    }
    std::printf("\n");
    std::free(grad);
    std::free(result);
    std::free(out);
  }
}
