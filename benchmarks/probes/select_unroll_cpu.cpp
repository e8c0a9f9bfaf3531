// Whether the CPU loop's select (ReLU: a compare and a select per element) runs faster with one vector an iteration,
// as GCC vectorizes kernels/cpu_kernels.cpp's cpu_row by default, or with two (`#pragma GCC unroll 2`, the shape of
// ATen's vectorized loop), in the x86-64-v3 and -v4 copies: n float32 and float64 elements out of place, split over
// 1 and 2 OpenMP threads as at::parallel_for splits them, the median of 24 interleaved runs (3 placements).
// Build and run from the repository root (GCC):
//   g++ -std=c++17 -O3 -fopenmp benchmarks/probes/select_unroll_cpu.cpp -o /tmp/select_unroll && /tmp/select_unroll
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

template <typename T>
T relu(T x) {
  return x < T(0) ? T(0) : x;
}

#define SELECT_LOOP(name, target_text, unroll)                                                          \
  template <typename T>                                                                                 \
  __attribute__((noinline, target(target_text))) void name(const T* in, T* out, long n) {               \
    _Pragma(unroll) for (long i = 0; i < n; ++i) out[i] = relu(in[i]);                                  \
  }
SELECT_LOOP(v3_one, "arch=x86-64-v3", "GCC unroll 1")
SELECT_LOOP(v3_two, "arch=x86-64-v3", "GCC unroll 2")
SELECT_LOOP(v4_one, "arch=x86-64-v4", "GCC unroll 1")
SELECT_LOOP(v4_two, "arch=x86-64-v4", "GCC unroll 2")

template <typename T>
void measure(int log2_n, int threads) {
  using Loop = void (*)(const T*, T*, long);
  const Loop loops[] = {v3_one<T>, v3_two<T>, v4_one<T>, v4_two<T>};
  const char* names[] = {"v3 one", "v3 two", "v4 one", "v4 two"};
  const long n = 1L << log2_n;
  std::vector<double> us[4];
  for (int placement = 0; placement < 3; ++placement) {
    T* in = static_cast<T*>(std::malloc(n * sizeof(T) + 64 * placement));
    T* out = static_cast<T*>(std::malloc(n * sizeof(T)));
    for (long i = 0; i < n; ++i) in[i] = T(long(i * 2654435761u % 1000) - 500);  // both signs, no zeros
    std::memset(out, 1, n * sizeof(T));
    const int calls = int(std::max(10L, (1L << 27) / (n * long(sizeof(T)))));
    for (int run = 0; run < 8; ++run) {
      for (int k = 0; k < 4; ++k) {
        const int j = (k + run) % 4;
        const auto start = std::chrono::steady_clock::now();
        for (int c = 0; c < calls; ++c) {
#pragma omp parallel num_threads(threads)
          {
            const long chunk = (n + omp_get_num_threads() - 1) / omp_get_num_threads();
            const long begin = omp_get_thread_num() * chunk, end = std::min(n, begin + chunk);
            if (begin < end) loops[j](in + begin, out + begin, end - begin);
          }
        }
        us[j].push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() /
                        calls);
      }
    }
    std::free(in);
    std::free(out);
  }
  std::printf("%s 2^%-2d %d thread%s:", sizeof(T) == 4 ? "float32" : "float64", log2_n, threads,
              threads > 1 ? "s" : " ");
  for (int k = 0; k < 4; ++k) {
    std::nth_element(us[k].begin(), us[k].begin() + 12, us[k].end());
    std::printf("  %s %8.1f us", names[k], us[k][12]);
  }
  std::printf("\n");
}

int main() {
  for (int threads : {1, 2}) {
    for (int log2_n : {16, 18, 20, 22}) {
      measure<float>(log2_n, threads);
      measure<double>(log2_n, threads);
    }
  }
}
