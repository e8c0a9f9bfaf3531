#pragma once
// exp and expm1 in double for the CPU loop, declared as SIMD functions (the x86-64 Vector Function ABI):
// GCC vectorizes a loop that calls them with their 2-, 4- and 8-lane variants, which cpu_math.cpp
// defines on the AVX2 and AVX-512 Sleef functions torch's own CPU kernels call (1 ulp), so the double
// ops run vectorized as torch's do. Elsewhere (the baseline loop, other compilers and CPUs) they are libm's.
// The vectorizer takes a loop with such a call only where no select follows the call: callers choose
// their operands before it and combine its result by arithmetic alone.

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(__CUDACC__)
#define ACT_CPU_SIMD_MATH 1
#endif
// cpu_math.cpp defines the variants itself: there the attribute would have GCC generate them too.
#if defined(ACT_CPU_SIMD_MATH) && !defined(ACT_CPU_MATH_DEFINITIONS)
#define ACT_SIMD_FUNCTION __attribute__((simd("notinbranch"), const, nothrow))
#else
#define ACT_SIMD_FUNCTION
#endif

extern "C" {
ACT_SIMD_FUNCTION double act_cpu_exp(double x);
ACT_SIMD_FUNCTION double act_cpu_expm1(double x);
}

namespace act {

// The copy of the CPU loop that runs here: 0 for the baseline x86-64, 1 for x86-64-v3 (AVX2, FMA), 2 for
// x86-64-v4 (AVX-512), the widest that both the CPU and ATen's CPU capability admit.
int cpu_vector_level();

}  // namespace act
