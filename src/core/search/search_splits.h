// The pipeline splits a search tries at each (PP, embedding slots, VPP) (docs/formulas.md §2.2, §7.1):
// the even split, else Megatron's uneven ones. Internal header of src/core/search/search.cc.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "trainplan/core/model/model.h"
#include "trainplan/core/job/layout.h"

namespace trainplan::detail {

/// Megatron's uneven splits for layers that do not divide PP: ⌈L/p⌉ on every middle stage, the remainder
/// shared by the first and last stage in every way that leaves each end at least one layer and no more
/// than a middle stage (Llama 3 405B, 126 layers over 16: 6 + 8, 7 + 7 or 8 + 6 at the ends). Empty when
/// the layers divide PP or no split exists.
std::vector<std::pair<std::int64_t, std::int64_t>> uneven_splits(const model_spec& m, std::int64_t pp);

/// A way to split the layers over the pipeline: the ends' layers (-1: the even split) and the busiest rank's.
struct split_choice {
  std::int64_t first = -1, last = -1;
  std::int64_t stage_layers = 0;  ///< 0: invalid
  /// Transformer layers on the first rank, each middle rank and the last rank (split_layers' stage_split),
  /// for the pipeline fill and drain of the search's bound (§7.2).
  std::int64_t first_rank_layers = 0, middle_rank_layers = 0, last_rank_layers = 0;
};

/// Every split the search tries at (PP, embedding slots, VPP): the even one, else Megatron's uneven ones
/// that take the chunks (each rank's layers divisible by VPP); one invalid entry when there is none.
std::vector<split_choice> pipeline_splits(const model_spec& m, framework_kind fw, std::int64_t pp, bool emb,
                                          std::int64_t vpp);

}  // namespace trainplan::detail
