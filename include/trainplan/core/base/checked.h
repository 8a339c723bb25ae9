// Overflow-checked integer arithmetic for sizes derived from user input.
#pragma once

#include <bit>
#include <cstdint>
#include <string>

#include "trainplan/core/base/error.h"

namespace trainplan::detail {

/// a·b; throws input_error naming `what` when the product does not fit in int64.
inline std::int64_t checked_mul(std::int64_t a, std::int64_t b, const char* what) {
  std::int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) {
    throw input_error(std::string(what) + " overflows a 64-bit count: the sizes given are absurd");
  }
  return r;
}

inline std::int64_t checked_add(std::int64_t a, std::int64_t b, const char* what) {
  std::int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) {
    throw input_error(std::string(what) + " overflows a 64-bit count: the sizes given are absurd");
  }
  return r;
}

/// a / b and a mod b (C++'s truncating ones, for any operands) without a 64-bit divide where one can
/// be avoided: a shift or mask for a power-of-two divisor, a 32-bit divide when both are non-negative
/// and fit in 32 bits. The sizes of a layout almost always do, and a 64-bit idiv takes 40-90 cycles on
/// the Skylake/Cascade Lake servers the benchmarks run on, against about 26 for 32 bits and 1 for a
/// shift: the communication summary (docs/formulas.md §4.4) does a few dozen per layout.
inline std::int64_t size_div(std::int64_t a, std::int64_t b) {
  const auto ua = static_cast<std::uint64_t>(a);
  const auto ub = static_cast<std::uint64_t>(b);
  if (a >= 0 && b > 0) {
    if ((ub & (ub - 1)) == 0) return static_cast<std::int64_t>(ua >> std::countr_zero(ub));
    if (((ua | ub) >> 32) == 0) return static_cast<std::uint32_t>(ua) / static_cast<std::uint32_t>(ub);
  }
  return a / b;
}
inline std::int64_t size_mod(std::int64_t a, std::int64_t b) {
  const auto ua = static_cast<std::uint64_t>(a);
  const auto ub = static_cast<std::uint64_t>(b);
  if (a >= 0 && b > 0) {
    if ((ub & (ub - 1)) == 0) return static_cast<std::int64_t>(ua & (ub - 1));
    if (((ua | ub) >> 32) == 0) return static_cast<std::uint32_t>(ua) % static_cast<std::uint32_t>(ub);
  }
  return a % b;
}

inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return size_div(a + b - 1, b); }

}  // namespace trainplan::detail
