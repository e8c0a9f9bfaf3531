#pragma once
// The backends. Each computes out[i] = kind(inputs[0][i], ...) over the flat memory of tensors
// that are non-overlapping and dense and share one layout (sizes, strides, dtype, device), so
// element i of every tensor sits at the same offset from its data pointer. ops.cpp brings
// every other layout to that form.

#include <ATen/core/Tensor.h>
#include <c10/util/ArrayRef.h>

#include "activations.h"

namespace act {

void cpu_activation(Activation kind, const at::Tensor& out, c10::ArrayRef<at::Tensor> inputs);

// Which compiled copy of the CPU loop runs on this machine: "x86-64-v3" or "baseline".
const char* cpu_loop_name();

#ifdef ACT_WITH_CUDA
void cuda_activation(Activation kind, const at::Tensor& out, c10::ArrayRef<at::Tensor> inputs);
#endif

}  // namespace act
