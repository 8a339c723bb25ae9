// The one number parser and the one enum parser of the command line, the flag tables and the CSV/log readers: decimal text
// only (no hex, no leading or trailing space, no inf or nan), integers also in 1e9 style. Each throws
// input_error naming `what` (a flag, or file:line and column).
#pragma once

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <algorithm>
#include <initializer_list>
#include <string>
#include <array>
#include <type_traits>
#include <utility>
#include <vector>

#include "trainplan/core/base/error.h"

namespace trainplan::detail {

/// Decimal digits, sign, point and exponent only: what strtod reads beyond that (hex, inf, nan,
/// leading space) is refused.
inline bool decimal_text(const std::string& v) {
  return !v.empty() && v.find_first_not_of("0123456789+-.eE") == std::string::npos;
}

/// A finite decimal number.
inline double parse_number(const std::string& v, const std::string& what) {
  char* end = nullptr;
  errno = 0;
  const double d = decimal_text(v) ? std::strtod(v.c_str(), &end) : 0.0;
  if (!decimal_text(v) || end != v.c_str() + v.size() || errno != 0 || !std::isfinite(d)) {
    throw input_error(what + " expects a number, got '" + v + "'");
  }
  return d;
}

/// A whole number (4, -1, 1e9) within int64; below `lo` is refused naming the bound.
inline std::int64_t parse_integer(const std::string& v, const std::string& what,
                                  std::int64_t lo = INT64_MIN) {
  std::int64_t out = 0;
  const char* last = v.data() + v.size();
  auto [ptr, ec] = std::from_chars(v.data(), last, out);
  if (ec == std::errc::result_out_of_range) throw input_error(what + ": " + v + " is out of range");
  if (ec != std::errc() || ptr != last) {
    char* end = nullptr;
    errno = 0;
    const double d = decimal_text(v) ? std::strtod(v.c_str(), &end) : 0.0;
    if (!decimal_text(v) || end != v.c_str() + v.size() || errno != 0 || !std::isfinite(d) || d != std::floor(d)) {
      throw input_error(what + " expects an integer, got '" + v + "'");
    }
    if (std::fabs(d) >= 9.2e18) throw input_error(what + ": " + v + " is out of range");
    out = static_cast<std::int64_t>(d);
  }
  if (out < lo) {
    throw input_error(what + (lo == 1   ? " must be a positive integer, got "
                              : lo == 0 ? " must not be negative, got "
                                        : " must be at least " + std::to_string(lo) + ", got ") +
                      v);
  }
  return out;
}

/// One of a table's names (the one enum parser): an unknown name gets "did you mean" and the list.
template <typename E>
E parse_enum(const std::string& v, const std::string& what, std::initializer_list<std::pair<const char*, E>> table) {
  std::vector<std::string> names;
  for (const auto& [n, e] : table) {
    if (v == n) return e;
    names.push_back(n);
  }
  std::string all;
  for (const auto& n : names) all += (all.empty() ? "" : ", ") + n;
  throw input_error(what + ": unknown value '" + v + "'" + did_you_mean(v, names) + "; one of: " + all);
}

/// The same over a name table kept as an array or vector of (name, value) (one table for parsing and printing).
template <typename Table, typename E = std::remove_cvref_t<decltype(std::declval<Table>().begin()->second)>>
E parse_enum(const std::string& v, const std::string& what, const Table& table) {
  for (const auto& [n, e] : table)
    if (v == n) return e;
  std::vector<std::string> names;
  std::string all;
  for (const auto& [n, e] : table) {
    names.push_back(n);
    all += (all.empty() ? "" : ", ") + std::string(n);
  }
  throw input_error(what + ": unknown value '" + v + "'" + did_you_mean(v, names) + "; one of: " + all);
}

/// A comma-separated list of a table's names, each read by parse_enum, without repeats.
template <typename E>
std::vector<E> parse_enum_list(const std::string& text, const std::string& what,
                               std::initializer_list<std::pair<const char*, E>> table) {
  std::vector<E> out;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    std::size_t end = text.find(',', pos);
    if (end == std::string::npos) end = text.size();
    const E e = parse_enum(text.substr(pos, end - pos), what, table);
    if (std::find(out.begin(), out.end(), e) == out.end()) out.push_back(e);
    pos = end + 1;
  }
  return out;
}

}  // namespace trainplan::detail
