// The limits that bound trainplan's work on any input (docs/formulas.md §7.9): one home for each, read
// by the rules that enforce them and by `trainplan help flags`, which states them.
#pragma once

#include <cstdint>
#include <string>

namespace trainplan::limits {

/// GPUs in one job or searched layout: 2^20, over 5 times the largest clusters of 2026 (about 200,000
/// GPUs); it bounds the placement scan of one group (a 6-million-GPU group took over a second under the
/// sanitizers, found by fuzzing).
inline constexpr std::int64_t kMaxGpus = std::int64_t{1} << 20;
/// TP, PP, CP, EP, DP and the like: 2^20.
inline constexpr std::int64_t kMaxParallel = std::int64_t{1} << 20;
/// Samples per iteration: 2^30, 10^5 times today's largest batches; keeps the search's divisor
/// enumeration (√GBS per DP) bounded.
inline constexpr std::int64_t kMaxGlobalBatch = std::int64_t{1} << 30;
/// Node counts one search tries (every count from 1 to --num-nodes); past it --nodes lists them.
inline constexpr std::int64_t kMaxSearchNodeCounts = 1024;
/// Search worker threads: more only adds start-up cost (and past the system's limit creation fails).
inline constexpr std::int64_t kMaxSearchThreads = 1024;
/// Micro-batches per pipeline whose events `trainplan schedule` lists; past it, a shortened timeline.
inline constexpr std::int64_t kMaxTimelineMicrobatches = 1024;
/// Samples a plan counts exactly (int64 and doubles): 2^53.
inline constexpr double kMaxPlanSamples = 9007199254740992.0;


}  // namespace trainplan::limits
