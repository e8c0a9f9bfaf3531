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

#ifdef ACT_WITH_CUDA
void cuda_activation(Activation kind, const at::Tensor& out, c10::ArrayRef<at::Tensor> inputs);
#endif

}  // namespace act
