// The limits as help text (include/trainplan/core/base/limits.h; docs/formulas.md §7.9).
#include "trainplan/core/base/limits.h"

#include <fmt/format.h>

namespace trainplan::limits {

std::string limits_help() {
  return fmt::format(
      "Limits (any input finishes in bounded time and memory; docs/formulas.md §7.9):\n"
      "  GPUs per job ≤ {} (2^24); TP, PP, CP, EP, DP ≤ {} (2^20); GBS ≤ {} samples (2^30)\n"
      "  search: every node count from 1 to --num-nodes, at most {} of them (--nodes LIST beyond); --threads ≤ {}\n"
      "  schedule: the events of at most {} micro-batches per pipeline (a shortened timeline beyond, full totals)\n"
      "  plan: at most 2^53 samples; files: UTF-8 text, numbers a double holds\n",
      kMaxGpus, kMaxParallel, kMaxGlobalBatch, kMaxSearchNodeCounts, kMaxSearchThreads, kMaxTimelineMicrobatches);
}

}  // namespace trainplan::limits
