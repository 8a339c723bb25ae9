// Overflow-checked integer arithmetic for sizes derived from user input.
#pragma once

#include <cstdint>
#include <string>

#include "trainplan/error.h"

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

inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

}  // namespace trainplan::detail
