#pragma once
// The words of the ops' error messages.

#include <torch/headeronly/core/ScalarType.h>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

namespace act {

// The name a schema begins with: "selu.out" for "selu.out(Tensor x, ...) -> ...".
inline std::string schema_name(const char* schema) { return std::string(schema, std::strcspn(schema, "(")); }

// "act.selu": how errors name an op (its in-place and out= forms go by the same name).
inline std::string op_name(const char* name, const char* suffix = "") { return std::string("act.") + name + suffix; }

// The dtypes every op takes, as its dtype check names them.
inline bool is_supported_dtype(c10::ScalarType dtype) {
  return dtype == c10::ScalarType::Float || dtype == c10::ScalarType::Double || dtype == c10::ScalarType::Half ||
         dtype == c10::ScalarType::BFloat16;
}
constexpr const char* kSupportedDtypes = "float32, float64, float16 or bfloat16";

// "[4, 5]". Formatted here rather than by streaming sizes, which
// crashed inside TORCH_CHECK's message builder with torch 2.11's headers.
template <typename T>
std::string shape_str(const T& t) {
  std::string s = "[";
  for (int64_t d = 0; d < t.dim(); ++d) s += (d ? ", " : "") + std::to_string(t.size(d));
  return s + "]";
}

// p with the shortest digits that read back as it, as Python prints it ("nan" too). Formatted here:
// streaming a double into a message crashed (in libstdc++'s codecvt) in builds against torch 2.11.
inline std::string probability_str(double p) {
  char value[32];
  const auto end = std::isnan(p) ? std::strcpy(value, "nan") + 3 : std::to_chars(value, value + sizeof(value), p).ptr;
  return std::string(value, end);
}

}  // namespace act
