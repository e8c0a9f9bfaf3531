// Whether a select loop (ReLU: a compare and a select per element) runs faster with 512-bit or 256-bit vectors in the
// extension's x86-64-v4 copy (kernels/cpu_kernels.cpp, SelectsOnly): the same loop compiled for x86-64-v4, for
// x86-64-v3 and for x86-64-v4 with 256-bit vectors preferred, timed on one core over n float32 and float64 elements
// out of place (data in L2 to beyond L3), the median of 15 interleaved runs each.
// Build and run from the repository root (GCC):
//   g++ -std=c++17 -O3 benchmarks/probes/select_width_cpu.cpp -o /tmp/select_width && /tmp/select_width
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

template <typename T>
T relu(T x) {
  return x < T(0) ? T(0) : x;
}

#define SELECT_LOOP(name, target_text)                                                            \
  template <typename T>                                                                           \
  __attribute__((noinline, target(target_text))) void name(const T* __restrict in, T* __restrict out, long n) { \
    for (long i = 0; i < n; ++i) out[i] = relu(in[i]);                                            \
  }
SELECT_LOOP(loop_v4, "arch=x86-64-v4")
SELECT_LOOP(loop_v3, "arch=x86-64-v3")
SELECT_LOOP(loop_v4_256, "arch=x86-64-v4,prefer-vector-width=256")

template <typename T, typename F>
double ns_per_call(F loop, const T* in, T* out, long n, int calls) {
  const auto start = std::chrono::steady_clock::now();
  for (int c = 0; c < calls; ++c) {
    loop(in, out, n);
    asm volatile("" ::: "memory");
  }
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count() / calls;
}

template <typename T>
void measure(long n) {
  T* in = static_cast<T*>(std::aligned_alloc(64, n * sizeof(T)));
  T* out = static_cast<T*>(std::aligned_alloc(64, n * sizeof(T)));
  for (long i = 0; i < n; ++i) in[i] = T(long(i * 2654435761u % 1000) - 500);  // both signs, no zeros
  const int calls = int(std::max(10L, (1L << 28) / (n * long(sizeof(T)))));
  std::vector<double> v4, v3, v4_256;
  for (int run = 0; run < 15; ++run) {
    v4.push_back(ns_per_call<T>(loop_v4<T>, in, out, n, calls));
    v3.push_back(ns_per_call<T>(loop_v3<T>, in, out, n, calls));
    v4_256.push_back(ns_per_call<T>(loop_v4_256<T>, in, out, n, calls));
  }
  for (auto* runs : {&v4, &v3, &v4_256}) std::nth_element(runs->begin(), runs->begin() + 7, runs->end());
  std::printf("%s 2^%-2d  v4 512-bit %9.0f ns  v3 %9.0f ns  v4 256-bit %9.0f ns  v3 / v4 time %.3f\n",
              sizeof(T) == 4 ? "float32" : "float64", __builtin_ctzl(n), v4[7], v3[7], v4_256[7], v3[7] / v4[7]);
  std::free(in);
  std::free(out);
}

int main() {
  for (long n : {1L << 16, 1L << 18, 1L << 20, 1L << 22}) {
    measure<float>(n);
    measure<double>(n);
  }
}
