// The shipped SELU + AlphaDropout kernel (strided_activation_kernel over SeluAlphaDropoutForward on a dense view) at
// several grid shapes, packs a thread and pack sizes (16 bytes, 32 as shipped since 2026-11-28) on this GPU, as % of
// a device copy (probe.cuh: cold L2, median of 21 runs).
// Build from the repository root against torch's headers and libraries (TI: torch's include directory, TL: its lib
// directory, PI: Python's include directory):
//   nvcc -std=c++17 -O3 -arch=sm_90a --expt-relaxed-constexpr -I kernels -I $TI -I $TI/torch/csrc/api/include \
//       -I $PI benchmarks/probes/random_op_grid.cu -o /tmp/grid -L $TL -lc10 -ltorch_cpu -Xlinker -rpath -Xlinker $TL
#include <cuda_bf16.h>

#include "activations.h"
#include "elementwise.cuh"
#include "probe.cuh"

using namespace act;

// The kernel over `bytes` of T at `unroll` packs a thread on `blocks` blocks: milliseconds.
template <typename T, int Unroll, int PackBytes = 16>
float shipped_kernel_ms(void* in, void* out, long bytes, long blocks, void* flush) {
  constexpr int kVec = PackBytes / sizeof(T);
  PhiloxSource source;
  source.seed = 1234;
  source.offset = 8;
  const SeluAlphaDropoutForward<T> op(alpha_dropout_args(0.1, source));
  const Pointers<T, 2> ptr{{static_cast<T*>(out), static_cast<T*>(in)}};
  const Rows<2, 0> rows{};
  const uint32_t n_packs = uint32_t(bytes / PackBytes);
  return cold_median_ms(
      [&] {
        strided_activation_kernel<kVec, Unroll, T, SeluAlphaDropoutForward<T>, 0>
            <<<blocks, kThreads>>>(op, ptr, rows, n_packs, 0, 0);
      },
      flush);
}

template <typename T>
void report(const char* name, void* in, void* out, long bytes, float copy, long wave, void* flush) {
  const long full = (bytes / 16 + kThreads - 1) / kThreads;
  auto percent = [&](float ms) { return 100 * copy / ms; };
  printf("%s %ld MiB: %% of copy (%.1f us): 1 pack a thread, 4 waves %.1f%%, 16 waves %.1f%%, full grid %.1f%%; "
         "4 packs a thread, full %.1f%%, 4 waves %.1f%%; 32-byte packs, 4 waves %.1f%%, 16 waves %.1f%%\n",
         name, bytes >> 20, copy * 1e3, percent(shipped_kernel_ms<T, 1>(in, out, bytes, 4 * wave, flush)),
         percent(shipped_kernel_ms<T, 1>(in, out, bytes, 16 * wave, flush)),
         percent(shipped_kernel_ms<T, 1>(in, out, bytes, full, flush)),
         percent(shipped_kernel_ms<T, 4>(in, out, bytes, full / 4, flush)),
         percent(shipped_kernel_ms<T, 4>(in, out, bytes, 4 * wave, flush)),
         percent(shipped_kernel_ms<T, 1, 32>(in, out, bytes, 4 * wave, flush)),
         percent(shipped_kernel_ms<T, 1, 32>(in, out, bytes, 16 * wave, flush)));
}

int main() {
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  const long wave = long(prop.multiProcessorCount) * prop.maxThreadsPerMultiProcessor / kThreads;
  printf("%s: %d SMs, %ld blocks a wave\n", prop.name, prop.multiProcessorCount, wave);
  void* flush;
  CHECK(cudaMalloc(&flush, size_t(512) << 20));
  for (long bytes : {1L << 25, 1L << 29}) {  // bf16 2^24 / 2^28 elements
    void *in, *out;
    CHECK(cudaMalloc(&in, bytes));
    CHECK(cudaMalloc(&out, bytes));
    const long n = bytes / 16;
    const float copy = cold_median_ms(
        [&] { copy_kernel<<<(n + 255) / 256, 256>>>(static_cast<const Bytes16*>(in), static_cast<Bytes16*>(out), n); },
        flush);
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
