// The pipeline splits a search tries (src/core/search/search_splits.h; docs/formulas.md §2.2, §7.1).
#include "search/search_splits.h"

#include <algorithm>

#include "trainplan/core/base/checked.h"

namespace trainplan::detail {

namespace {

/// The split as the search keeps it: the ends' layers as given (-1: the even split), and each rank's.
split_choice choice_of(const stage_split& split, std::int64_t first, std::int64_t last) {
  if (!split.valid) return split_choice{};
  return split_choice{first, last, split.most(), split.first, split.middle, split.last};
}

/// The even split (§2.2, split_layers), or an invalid choice.
split_choice even_split(const model_spec& m, framework_kind fw, std::int64_t pp, bool emb, std::int64_t vpp) {
  parallel_config p;
  p.pp = pp;
  p.vpp = vpp;
  p.embedding_as_stage = emb;
  if (vpp > 1 && emb) return split_choice{};  // interleaving takes an even split only
  return choice_of(split_layers(m.num_layers, p, fw), -1, -1);
}

}  // namespace

std::vector<std::pair<std::int64_t, std::int64_t>> uneven_splits(const model_spec& m, std::int64_t pp) {
  std::vector<std::pair<std::int64_t, std::int64_t>> out;
  if (pp < 2 || m.num_layers % pp == 0) return out;
  const std::int64_t middle = detail::ceil_div(m.num_layers, pp);
  const std::int64_t ends = m.num_layers - middle * (pp - 2);
  for (std::int64_t first = std::max<std::int64_t>(1, ends - middle); first <= std::min(middle, ends - 1); ++first) {
    out.emplace_back(first, ends - first);
  }
  return out;
}

std::vector<split_choice> pipeline_splits(const model_spec& m, framework_kind fw, std::int64_t pp, bool emb,
                                          std::int64_t vpp) {
  if (const split_choice even = even_split(m, fw, pp, emb, vpp); even.stage_layers > 0) return {even};
  std::vector<split_choice> out;
  if (!emb && !traits_of(fw).uneven_pipeline_split) {
    for (const auto& [first, last] : uneven_splits(m, pp)) {
      parallel_config p;  // the busiest rank of that split, from the one account of splits
      p.pp = pp;
      p.vpp = vpp;
      p.first_stage_layers = first;
      p.last_stage_layers = last;
      if (const stage_split split = split_layers(m.num_layers, p, fw); split.valid) {
        out.push_back(choice_of(split, first, last));
      }
    }
  }
  if (out.empty()) out.push_back(split_choice{});
  return out;
}

}  // namespace trainplan::detail
