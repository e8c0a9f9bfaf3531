// The shipped SELU + AlphaDropout kernel (strided_activation_kernel over SeluAlphaDropoutForward on a dense view,
// 32-byte packs, one pack an iteration of its grid-stride loop) at several sizes and grids on this GPU, as % of a
// device copy of the same bytes (probe.cuh: cold L2, median of 21 runs). A grid gives each thread k packs (k = 1:
// the full grid), or is 14a61a4's launch plan on an issue-bound GPU: the full grid capped at 4 waves of resident
// blocks.
// Build from the repository root against torch's headers and libraries (TI: torch's include directory, TL: its lib
// directory, PI: Python's include directory):
//   nvcc -std=c++20 -O3 -arch=sm_90a --expt-relaxed-constexpr -I kernels -I $TI -I $TI/torch/csrc/api/include \
//       -I $PI benchmarks/probes/random_op_grid.cu -o /tmp/grid -L $TL -lc10 -ltorch_cpu -Xlinker -rpath -Xlinker $TL
#include <cuda_bf16.h>

#include <algorithm>

#include "activations.h"
#include "elementwise.cuh"
#include "probe.cuh"

using namespace act;

// The kernel over `bytes` of T on `blocks` blocks: milliseconds.
template <typename T>
float shipped_kernel_ms(void* in, void* out, long bytes, long blocks, void* flush) {
  constexpr int kVec = kRandomPackBytes / sizeof(T);
  PhiloxSource source;
  source.seed = 1234;
  source.offset = 8;
  const SeluAlphaDropoutForward<T> op(alpha_dropout_args(0.1, source));
  const Pointers<T, 2> ptr{{static_cast<T*>(out), static_cast<T*>(in)}};
  const Rows<2, 0> rows{};
  const uint32_t n_packs = uint32_t(bytes / kRandomPackBytes);
  return cold_median_ms(
      [&] {
        strided_activation_kernel<kVec, 1, T, SeluAlphaDropoutForward<T>, 0>
            <<<blocks, kThreads>>>(op, ptr, rows, n_packs, 0, 0);
      },
      flush);
}

template <typename T>
void report(const char* name, void* in, void* out, long bytes, float copy, long wave, void* flush) {
  const long full = (bytes / kRandomPackBytes + kThreads - 1) / kThreads;
  auto percent = [&](long blocks) { return 100 * copy / shipped_kernel_ms<T>(in, out, bytes, blocks, flush); };
  printf("%s %ld MiB (%.1f us copy): plan %.1f%% (%.2f waves);", name, bytes >> 20, copy * 1e3,
         percent(std::min(full, kRandomWaves * wave)), double(std::min(full, kRandomWaves * wave)) / wave);
  for (long k : {1, 2, 3, 4, 8}) {
    const long blocks = (full + k - 1) / k;
    printf(" %ld a thread %.1f%% (%.2f waves);", k, percent(blocks), double(blocks) / wave);
  }
  printf("\n");
}

int main() {
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  const long wave = long(prop.multiProcessorCount) * prop.maxThreadsPerMultiProcessor / kThreads;
  printf("%s: %d SMs, %ld blocks a wave\n", prop.name, prop.multiProcessorCount, wave);
  void* flush;
  CHECK(cudaMalloc(&flush, size_t(512) << 20));
  for (long bytes = 1L << 25; bytes <= 1L << 30; bytes <<= 1) {  // bf16 2^24 .. 2^29 elements
    void *in, *out;
    CHECK(cudaMalloc(&in, bytes));
    CHECK(cudaMalloc(&out, bytes));
    const long n = bytes / 16;
    const float copy = copy_ms(in, out, n, flush);
    fill<__nv_bfloat16>(in, bytes);
    report<c10::BFloat16>("bf16", in, out, bytes, copy, wave, flush);
    fill<float>(in, bytes);
    report<float>("fp32", in, out, bytes, copy, wave, flush);
    fill<double>(in, bytes);
    report<double>("fp64", in, out, bytes, copy, wave, flush);
    CHECK(cudaGetLastError());
    cudaFree(in);
    cudaFree(out);
  }
  return 0;
}
