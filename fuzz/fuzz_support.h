// Shared by the fuzz targets: input bytes as command-line tokens, and the one rule every target checks:
// bad input is an input_error (the CLI's exit status 2); anything else escapes and libFuzzer reports it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace trainplan::fuzz {

/// The input split at newlines into tokens ("--tp\n8\n--sp"), as a shell would hand them to main.
inline std::vector<std::string> tokens_of(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> out(1);
  for (std::size_t i = 0; i < size; ++i) {
    if (data[i] == '\n') out.emplace_back();
    else out.back().push_back(static_cast<char>(data[i]));
  }
  if (out.back().empty()) out.pop_back();
  return out;
}

inline std::string text_of(const std::uint8_t* data, std::size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

}  // namespace trainplan::fuzz
