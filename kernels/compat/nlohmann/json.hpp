#pragma once
// torch's ATen/functorch/Interpreter.h (which batching.cpp needs for the vmap level and its randomness mode)
// includes this header, which the torch wheels do not ship. Interpreter.h uses the type only to serialize
// interpreters, which this project never does: the members it names are declared and never defined, so a
// use would fail to link rather than run. The build searches this directory after every other
// (-idirafter), so a real nlohmann/json.hpp comes first.
#include <string>

namespace nlohmann {
class json {
 public:
  json() = default;
  template <typename T>
  json(const T& value);  // NOLINT: implicit, as the real one
  std::string dump() const;
  static json parse(const std::string& text);
  template <typename T>
  T get() const;
};
}  // namespace nlohmann
