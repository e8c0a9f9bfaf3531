// The SIMD variants of cpu_math.h's functions, for the x86-64 Vector Function ABI: _ZGV<isa>N<lanes>v_<name>,
// isa b (SSE2, 2 lanes), d (AVX2, 4) and e (AVX-512, 8). Every variant and the scalar function give the same
// bits at a given loop level, wherever an element falls in a loop (main part, peel or tail): Sleef's AVX2 and
// AVX-512 functions agree bit for bit (2 million inputs compared), and the narrower calls go through the AVX2
// one wherever the loop level is at least x86-64-v3.
#define ACT_CPU_MATH_DEFINITIONS
#include "cpu_math.h"

#include <math.h>

#include "torch_runtime.h"

#ifdef ACT_CPU_SIMD_MATH
#include <immintrin.h>

// Exported by libtorch_cpu, which every extension links: the entry points of ATen's Vectorized<double>.
extern "C" {
__m256d Sleef_expd4_u10(__m256d);
__m256d Sleef_expm1d4_u10(__m256d);
__m512d Sleef_expd8_u10(__m512d);
__m512d Sleef_expm1d8_u10(__m512d);
}
#endif

namespace act {

int cpu_vector_level() {
#ifdef ACT_CPU_SIMD_MATH
  static const int level = [] {
    __builtin_cpu_init();
    const int admitted = runtime::cpu_capability_level();
    if (admitted >= 2 && __builtin_cpu_supports("x86-64-v4")) return 2;
    return admitted >= 1 && __builtin_cpu_supports("x86-64-v3") ? 1 : 0;
  }();
  return level;
#else
  return 0;
#endif
}

}  // namespace act

#ifdef ACT_CPU_SIMD_MATH
namespace {

// Two lanes through the AVX2 function: the same bits as the 4- and 8-lane variants.
template <__m256d (*F)(__m256d)>
__attribute__((target("arch=x86-64-v3"))) __m128d two_lanes(__m128d x) {
  return _mm256_castpd256_pd128(F(_mm256_castpd128_pd256(x)));
}

}  // namespace

// A function of cpu_math.h: the scalar form and its 2-, 4- and 8-lane variants, on Sleef's AVX2 and AVX-512
// functions (libm's in the baseline loop).
#define ACT_CPU_SIMD_FUNCTION(name, libm, sleef4, sleef8)                                                        \
  double name(double x) {                                                                                     \
    return act::cpu_vector_level() >= 1 ? _mm_cvtsd_f64(two_lanes<sleef4>(_mm_set_sd(x))) : libm(x);          \
  }                                                                                                           \
  __m128d _ZGVbN2v_##name(__m128d x) {                                                                        \
    if (act::cpu_vector_level() >= 1) return two_lanes<sleef4>(x);                                            \
    return _mm_set_pd(libm(_mm_cvtsd_f64(_mm_unpackhi_pd(x, x))), libm(_mm_cvtsd_f64(x)));                    \
  }                                                                                                           \
  __attribute__((target("arch=x86-64-v3"))) __m256d _ZGVdN4v_##name(__m256d x) { return sleef4(x); }          \
  __attribute__((target("arch=x86-64-v4"))) __m512d _ZGVeN8v_##name(__m512d x) { return sleef8(x); }

extern "C" {

ACT_CPU_SIMD_FUNCTION(act_cpu_exp, ::exp, Sleef_expd4_u10, Sleef_expd8_u10)
ACT_CPU_SIMD_FUNCTION(act_cpu_expm1, ::expm1, Sleef_expm1d4_u10, Sleef_expm1d8_u10)

}  // extern "C"
#else
extern "C" {
double act_cpu_exp(double x) { return ::exp(x); }
double act_cpu_expm1(double x) { return ::expm1(x); }
}
#endif
