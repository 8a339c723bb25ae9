// Text read from outside (model, cluster and calibration files, measurement CSVs): checks every reader
// makes before parsing, with "file:line: " messages. Internal header.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "trainplan/core/base/error.h"

namespace trainplan::detail {

/// The byte offset of the first byte sequence that is not UTF-8 (overlong forms, surrogates and code
/// points past U+10FFFF included), or npos when `text` is valid UTF-8 (RFC 3629 §4).
inline std::size_t first_invalid_utf8(std::string_view text) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const std::size_t n = text.size();
  std::size_t i = 0;
  while (i < n) {
    const unsigned char c = s[i];
    std::size_t len = 0;
    unsigned lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
    if (c < 0x80) {
      ++i;
      continue;
    } else if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    } else {
      return i;
    }
    if (i + len > n || s[i + 1] < lo || s[i + 1] > hi) return i;
    for (std::size_t k = 2; k < len; ++k)
      if (s[i + k] < 0x80 || s[i + k] > 0xBF) return i;
    i += len;
  }
  return std::string_view::npos;
}

/// The 1-based line of byte `offset`.
inline std::size_t line_of(std::string_view text, std::size_t offset) {
  offset = std::min(offset, text.size());
  return 1 + static_cast<std::size_t>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(offset), '\n'));
}

/// Throws "ORIGIN:LINE: not UTF-8 text (byte 0xFF)" when `text` is not UTF-8, and "ORIGIN:LINE: a
/// control character (byte 0x00) in text" for C0 controls other than tab, newline and carriage return,
/// which neither YAML nor JSON allows unescaped (yaml-cpp turned a NUL inside a scalar into bytes that
/// are not UTF-8; found by fuzz/fuzz_model_file).
inline void require_utf8(std::string_view text, std::string_view origin) {
  const std::size_t bad = first_invalid_utf8(text);
  if (bad != std::string_view::npos) {
    throw input_error(fmt::format("{}:{}: not UTF-8 text (byte 0x{:02X})", origin, line_of(text, bad),
                                  static_cast<unsigned>(static_cast<unsigned char>(text[bad]))));
  }
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7F) {
      throw input_error(fmt::format("{}:{}: a control character (byte 0x{:02X}) in text", origin, line_of(text, i),
                                    static_cast<unsigned>(c)));
    }
  }
}

/// "ORIGIN:LINE: a number is out of range: 1e310" for a JSON number no double holds (nlohmann's
/// out_of_range 406 names the number but not where it is: its first occurrence is).
[[noreturn]] inline void throw_number_out_of_range(std::string_view text, std::string_view origin, std::string_view what) {
  std::string number;
  if (const auto open = what.find('\''), close = what.rfind('\''); open != std::string_view::npos && close > open) {
    number = std::string(what.substr(open + 1, close - open - 1));
  }
  const std::size_t at = number.empty() ? std::string_view::npos : text.find(number);
  if (at == std::string_view::npos) throw input_error(fmt::format("{}: a number is out of range", origin));
  throw input_error(fmt::format("{}:{}: a number is out of range: {}", origin, line_of(text, at), number));
}

}  // namespace trainplan::detail
