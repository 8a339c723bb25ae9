// Integer helpers for layout sizes (include/trainplan/core/base/checked.h): the fast divisions equal C++'s, the checked
// arithmetic refuses to wrap.
#include "trainplan/core/base/checked.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "trainplan/core/base/error.h"

namespace {

using trainplan::detail::ceil_div;
using trainplan::detail::checked_add;
using trainplan::detail::checked_mul;
using trainplan::detail::size_div;
using trainplan::detail::size_mod;

// Every path: power-of-two divisors (shift, mask), 32-bit operands, operands past 32 bits, negatives.
TEST(SizeDivision, EqualsTheBuiltInOperatorsOnEveryPath) {
  const std::vector<std::int64_t> values = {0, 1, 2, 3, 7, 8, 12, 384, 1000, 4095, 4096, 65537, (1ll << 31) - 1,
                                            1ll << 32, (1ll << 32) + 5, 3'600'000'000ll, 1ll << 40, 123'456'789'012ll,
                                            std::numeric_limits<std::int64_t>::max(), -1, -8, -384,
                                            std::numeric_limits<std::int64_t>::min() + 1};
  for (const std::int64_t a : values) {
    for (const std::int64_t b : values) {
      if (b == 0) continue;
      EXPECT_EQ(size_div(a, b), a / b) << a << " / " << b;
      EXPECT_EQ(size_mod(a, b), a % b) << a << " % " << b;
    }
  }
}

TEST(SizeDivision, CeilDivRoundsUp) {
  EXPECT_EQ(ceil_div(72, 12), 6);
  EXPECT_EQ(ceil_div(73, 12), 7);
  EXPECT_EQ(ceil_div(3'600'000'000ll, 500'000'000), 8);  // BLOOM's first stage in DeepSpeed buckets
  EXPECT_EQ(ceil_div(1, 8), 1);
}

TEST(CheckedArithmetic, RefusesToWrapAndNamesWhat) {
  EXPECT_EQ(checked_mul(1ll << 31, 1ll << 31, "x"), 1ll << 62);
  EXPECT_THROW((void)checked_mul(1ll << 32, 1ll << 32, "QKV parameters"), trainplan::input_error);
  try {
    (void)checked_add(std::numeric_limits<std::int64_t>::max(), 1, "parameters");
    FAIL() << "no throw";
  } catch (const trainplan::input_error& e) {
    EXPECT_THAT(e.what(), ::testing::StartsWith("parameters overflows a 64-bit count"));
  }
}

}  // namespace
