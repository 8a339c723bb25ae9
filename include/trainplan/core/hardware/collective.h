// The collectives NCCL runs and how nccl-tests counts their traffic (doc/PERFORMANCE.md in nccl-tests;
// docs/formulas.md §4.3): what a calibration profile measures and the communication model prices.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace trainplan {

enum class collective_kind { all_reduce, all_gather, reduce_scatter, all_to_all, send_recv, broadcast };
std::string_view to_string(collective_kind k);

/// One row of the collective table (nccl-tests' testColl): the bus factor F(n) = a·(n−1)/n + b, the
/// ring's latency steps c·(n−1) (at least one), and the flat algorithm's name.
struct collective_traits {
  std::string_view name;
  double factor_n_minus_1_over_n;  ///< a
  double factor_constant;          ///< b
  double ring_steps_per_rank;      ///< c (send/recv: one step)
  std::string_view algorithm;
};
inline constexpr std::array<collective_traits, 6> kCollectiveTable = {{
    {"all_reduce", 2.0, 0.0, 2.0, "ring"},      // 2(n−1)/n, 2(n−1) steps (the tree is the alternative)
    {"all_gather", 1.0, 0.0, 1.0, "ring"},      // (n−1)/n, n−1 steps
    {"reduce_scatter", 1.0, 0.0, 1.0, "ring"},  // (n−1)/n, n−1 steps
    {"all_to_all", 1.0, 0.0, 1.0, "pairwise"},  // (n−1)/n, n−1 pairwise exchanges
    {"send_recv", 0.0, 1.0, 0.0, "p2p"},        // 1, one step
    {"broadcast", 0.0, 1.0, 1.0, "ring"},       // 1, n−1 pipelined ring steps
}};
inline const collective_traits& traits_of(collective_kind k) { return kCollectiveTable[static_cast<std::size_t>(k)]; }

/// nccl-tests' bus-bandwidth factor (doc/PERFORMANCE.md): busbw = algbw × factor.
inline double bus_factor(collective_kind k, std::int64_t group_size) {
  const collective_traits& t = traits_of(k);
  if (group_size <= 1) return t.factor_constant;
  const double n = static_cast<double>(group_size);
  return t.factor_n_minus_1_over_n * (n - 1) / n + t.factor_constant;
}

/// Latency steps of the flat ring over `group_size` ranks (§4.3): 2(n−1) for an all-reduce, n−1 for
/// the other collectives, one for send/recv.
inline double ring_steps(collective_kind k, std::int64_t group_size) {
  if (k == collective_kind::send_recv) return 1.0;
  return traits_of(k).ring_steps_per_rank * (static_cast<double>(group_size) - 1);
}

}  // namespace trainplan
