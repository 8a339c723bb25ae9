// What a search returns, read back: the flags that set a candidate's layout (beside apply_candidate's
// fields in src/core/search/search.cc, one mapping each way) and the Pareto front of time against memory (§7.3).
#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "trainplan/core/search/search.h"

namespace trainplan {

std::vector<std::string> candidate_flags(const search_candidate& c, framework_kind framework) {
  // apply_candidate's fields as the job flags that set them.
  auto n = [](std::int64_t v) { return std::to_string(v); };
  std::vector<std::string> a = {"--num-gpus", n(c.num_gpus), "--tp", n(c.tp), "--pp", n(c.pp), "--mbs", n(c.mbs)};
  auto add = [&a](std::initializer_list<std::string> more) { a.insert(a.end(), more); };
  if (c.cp > 1) add({"--cp", n(c.cp)});
  if (c.ep > 1) add({"--ep", n(c.ep)});
  if (c.etp != c.tp) add({"--etp", n(c.etp)});
  if (c.dispatcher != moe_dispatcher_kind::framework_default) {
    add({"--moe-token-dispatcher-type", std::string(to_string(c.dispatcher))});
  }
  if (c.vpp > 1) add({"--vpp", n(c.vpp)});
  if (c.first_stage_layers >= 0) add({"--decoder-first-pipeline-num-layers", n(c.first_stage_layers)});
  if (c.last_stage_layers >= 0) add({"--decoder-last-pipeline-num-layers", n(c.last_stage_layers)});
  if (c.sequence_parallel) add({"--sequence-parallel"});
  if (c.embedding_as_stage) add({"--embedding-as-stage"});
  switch (c.recompute) {
    case recompute_choice::none: break;
    case recompute_choice::selective: add({"--recompute-granularity", "selective"}); break;
    case recompute_choice::full: add({"--recompute-granularity", "full", "--recompute-method", "uniform", "--recompute-num-layers", "1"}); break;
    case recompute_choice::block:
      add({"--recompute-granularity", "full", "--recompute-method", "block", "--recompute-num-layers", n(c.recompute_num_layers)});
      break;
  }
  if (framework == framework_kind::megatron && c.zero_stage == 1) add({"--use-distributed-optimizer"});
  else if (c.zero_stage > 0) add({"--zero-stage", std::to_string(c.zero_stage)});
  return a;
}

std::vector<std::size_t> pareto_front(const search_result& r) {
  // Ranked by time: a layout is on the front when it needs less memory than every faster one (§7.3).
  std::vector<std::size_t> order(r.candidates.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const auto& ca = r.candidates[a];
    const auto& cb = r.candidates[b];
    if (ca.iteration_s != cb.iteration_s) return ca.iteration_s < cb.iteration_s;
    return ca.peak_reserved_bytes < cb.peak_reserved_bytes;
  });
  std::vector<std::size_t> front;
  double best_bytes = std::numeric_limits<double>::infinity();
  for (std::size_t i : order) {
    if (r.candidates[i].peak_reserved_bytes < best_bytes) {
      front.push_back(i);
      best_bytes = r.candidates[i].peak_reserved_bytes;
    }
  }
  return front;
}

}  // namespace trainplan
