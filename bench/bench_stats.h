// trainplan-bench: the arithmetic of the measurements, apart from MPI and CUDA so that it can be tested
// alone: size sweeps, nccl-tests' bandwidths and buffer sizes, the values a correct collective leaves,
// medians, and which ranks are slow (docs/bench.md).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trainplan/core/estimate/comm.h"

namespace trainplan::bench {

/// Sizes from `min_bytes` to `max_bytes` (both included), each `factor` × the last (nccl-tests -b -e -f).
/// Throws input_error naming `flag` unless 0 < min ≤ max and factor ≥ 2.
std::vector<std::int64_t> size_sweep(std::int64_t min_bytes, std::int64_t max_bytes, std::int64_t factor,
                                     std::string_view flag);
/// A whole decimal number with nothing around it ("12"; not "12x", " 1", "0x10"), or nothing.
std::optional<long long> parse_whole(const std::string& text);
/// "MxNxK" or "MxNxKxBATCH", each 1 … 2^24 → {m, n, k, batch}; throws input_error naming `flag`.
std::array<std::int64_t, 4> parse_gemm_shape(const std::string& text, std::string_view flag);
/// "64", "4K", "256M", "1G" (powers of 1024) → bytes; throws input_error naming `flag`.
std::int64_t parse_size(const std::string& text, std::string_view flag);

/// Element counts of one collective over `ranks` ranks for nccl-tests' size S of `bytes` (float32
/// elements): what each rank sends and receives. S is the full buffer (all-gather: the gathered output,
/// reduce-scatter: the input); counts are rounded down to a multiple of `ranks` where the op splits.
struct buffer_counts {
  std::int64_t send = 0;  ///< elements in the send buffer
  std::int64_t recv = 0;  ///< elements in the receive buffer
  std::int64_t bytes = 0; ///< S as reported (after rounding)
};
buffer_counts counts_for(collective_kind kind, std::int64_t bytes, std::int64_t ranks);

/// nccl-tests' algbw = S / t and busbw = algbw × factor (doc/PERFORMANCE.md), bytes per second.
struct bandwidth {
  double algbw_bytes_per_s = 0;
  double busbw_bytes_per_s = 0;
};
bandwidth bandwidth_of(collective_kind kind, std::int64_t ranks, double bytes, double time_s);

/// What each rank writes into its send buffer before a checked run: small integers, exact in float32,
/// so that the expected result is exact too. Element `i` of rank `rank`.
float send_value(collective_kind kind, std::int64_t rank, std::int64_t ranks, std::int64_t i, std::int64_t send_count);
/// The value element `i` of rank `rank`'s receive buffer must hold afterwards (broadcast root: rank 0;
/// send/recv: each rank sends to rank+1 and receives from rank−1, as nccl-tests' sendrecv does).
float expected_value(collective_kind kind, std::int64_t rank, std::int64_t ranks, std::int64_t i, std::int64_t recv_count);

/// Every rank's output of one collective over `inputs.size()` ranks, computed directly from every rank's
/// input (float32 sums in rank order): the star backend's result, and the reference its tests use.
std::vector<std::vector<float>> reference_collective(collective_kind kind, const buffer_counts& c,
                                                     const std::vector<std::vector<float>>& inputs);

double median(std::vector<double> v);

/// One probe repeated on one rank (higher is better: FLOP/s, bytes/s), and what to call the rank.
struct rank_samples {
  std::int64_t rank = 0;
  std::string name;  ///< n<node>_g<gpu>
  std::string host;
  std::vector<double> values;  ///< one rate per repeat
};

/// A rank's level and how much its repeats scatter (docs/bench.md "Health").
struct sample_summary {
  double level = 0;   ///< the median of the repeats
  double spread = 0;  ///< their robust σ of ln x: 1.4826 × median |ln(x / level)| (≈ relative σ when small)
};
sample_summary summarize_samples(std::vector<double> values);

/// A rank or node slower than its peers by more than the threshold and by more than the noise.
struct slow_finding {
  std::string who;          ///< "n0_g3 (rank 3)" or "node n1 (host)"
  double value = 0;         ///< its level (median of its repeats; a node: the mean of its ranks' levels)
  double median = 0;        ///< the median level of the others
  double shortfall = 0;     ///< 1 − value / median
  double noise = 0;         ///< σ of ln(median / value): √(own spread² + the others' median spread²)
};
/// A rank is slow when 1 − level / (the median of the other ranks' levels) exceeds `threshold` and
/// ln(median / level) exceeds `z_score` × noise; nodes likewise (their ranks' mean level, its spread over √ranks), when there are two
/// or more. The others exclude the rank itself, so with two ranks the slow one is measured against the
/// healthy one, not against their mean.
std::vector<slow_finding> find_slow(const std::vector<rank_samples>& ranks, double threshold, double z_score = 3);

/// --inject-slowdown RANK:FACTOR (test aid): the rank's probes take FACTOR × their time.
struct slowdown_injection {
  std::int64_t rank = -1;
  double factor = 1;
};
std::optional<slowdown_injection> parse_slowdown(const std::string& text, std::string_view flag);

/// trainplan's catalog name for a GPU the driver names ("NVIDIA H100 80GB HBM3" → "h100-sxm5-80gb"),
/// or "" when it has none.
std::string catalog_gpu_name(std::string_view driver_name);

}  // namespace trainplan::bench
