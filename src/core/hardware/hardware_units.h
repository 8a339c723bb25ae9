// Unit factors of the GPU and cluster tables (src/core/hardware/hardware.cc, src/core/hardware/cluster_io.cc). Internal header.
#pragma once

#include <cstdint>

namespace trainplan::detail {

constexpr double kTera = 1e12;
constexpr double kGiga = 1e9;
constexpr std::int64_t kMiB = std::int64_t{1} << 20;
constexpr std::int64_t kGiB = std::int64_t{1} << 30;

}  // namespace trainplan::detail
