#pragma once
// The default build's access to torch's CUDA generators (cuda_generator.cpp).

#include <ATen/core/Generator.h>
#include <c10/core/Device.h>

#include <optional>

#include "philox.h"

namespace act {

// The Philox stream of `device`'s generator (the default one when none is given) for one launch,
// advanced past the `increment` words per element group the launch draws.
PhiloxSource cuda_philox_source(const std::optional<at::Generator>& generator, c10::Device device,
                                uint64_t increment);

}  // namespace act
