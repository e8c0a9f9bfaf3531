#pragma once
// What the backends take from torch while they run: the thread pool, the CPU capability it chose,
// and on CUDA the device guard, the current stream and the launch check.

#include <stdint.h>

#include <mutex>
#include <string>

#include <ATen/Parallel.h>
#include <ATen/Version.h>

#ifdef __CUDACC__
#include <cuda_runtime.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "launch_plan.h"
#endif

namespace act::runtime {

// f(begin, end) over chunks of [begin, end) spread on torch's intra-op threads.
template <class F>
void parallel_for(int64_t begin, int64_t end, int64_t grain_size, const F& f) {
  at::parallel_for(begin, end, grain_size, f);
}

// The widest x86 vector level torch's CPU capability admits: 0 for the baseline (ATEN_CPU_CAPABILITY=default),
// 1 for AVX2, 2 for AVX-512.
inline int cpu_capability_level() {
  const std::string capability = at::get_cpu_capability();
  return capability == "AVX512" ? 2 : capability == "AVX2" ? 1 : 0;
}

#ifdef __CUDACC__
// Makes `device` current for the guard's lifetime.
using DeviceGuard = c10::cuda::CUDAGuard;

inline cudaStream_t current_stream(int device) {
  return c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device)).stream();
}

// Raises the launch's error, if any, as torch's own kernels do.
inline void check_launch() { C10_CUDA_KERNEL_LAUNCH_CHECK(); }

// An attribute that cannot be read counts as 0, which selects the shapes of a GPU bound by memory: the
// shape is a matter of speed, and the device was checked before any launch asks.
inline int device_attribute(cudaDeviceAttr attribute, int device) {
  int value = 0;
  if (cudaDeviceGetAttribute(&value, attribute, device) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return value;
}

// read(device), once per device and kept, as every launch asks (a cache per call site: each lambda is a
// type of its own).
template <typename Read>
auto once_per_device(int device, const Read& read) {
  using Value = decltype(read(device));
  constexpr int kCached = 128;  // C10_COMPILE_TIME_MAX_GPUS is at most 120
  static std::once_flag read_once[kCached];
  static Value values[kCached];
  if (device < 0 || device >= kCached) return read(device);
  std::call_once(read_once[device], [&] { values[device] = read(device); });
  return values[device];
}

// The GPU's limits: its SMs, the threads that fit on it at once, and the peak bytes its DRAM moves per
// clock cycle of one SM (two transfers a memory clock over the bus, spread over the SMs).
inline DeviceLimits device_limits(int device) {
  return once_per_device(device, [](int d) {
    const int64_t sms = device_attribute(cudaDevAttrMultiProcessorCount, d);
    const double dram_bytes_per_second = 2e3 * device_attribute(cudaDevAttrMemoryClockRate, d) *
                                         (device_attribute(cudaDevAttrGlobalMemoryBusWidth, d) / 8);
    const double sm_cycles_per_second = 1e3 * double(sms) * device_attribute(cudaDevAttrClockRate, d);
    return DeviceLimits{d, sms, sms * device_attribute(cudaDevAttrMaxThreadsPerMultiProcessor, d),
                    sm_cycles_per_second > 0 ? dram_bytes_per_second / sm_cycles_per_second : 0};
  });
}

// Blocks of `threads` threads of `kernel` that one SM of the current device holds at once (its registers
// count), or 0 where that cannot be read.
template <typename Kernel>
int resident_blocks_per_sm(Kernel kernel, int threads) {
  int blocks = 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, threads, 0) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return blocks;
}
#endif

}  // namespace act::runtime
