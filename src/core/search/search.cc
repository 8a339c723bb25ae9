// Layout search and architecture shapes (docs/formulas.md §7.1-§7.4): enumerate, prune by divisibility
// and memory, bound by compute, time the rest with the full model on every core, rank.
#include "trainplan/core/search/search.h"

#include "search/search_arena.h"
#include "search/search_splits.h"
#include "search/search_workers.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bitset>
#include <chrono>
#include <cstdio>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <queue>
#include <set>
#include <string>
#include <system_error>
#include <thread>
#include <tuple>

#include "trainplan/core/base/checked.h"
#include "trainplan/core/estimate/comm.h"
#include "trainplan/core/estimate/compute.h"
#include "trainplan/core/base/error.h"
#include "trainplan/core/base/limits.h"
#include "trainplan/core/estimate/memory.h"
#include "trainplan/core/model/model.h"
#include "trainplan/core/estimate/time.h"

namespace trainplan {

using detail::pipeline_splits;
using detail::split_choice;
using detail::uneven_splits;

std::string_view to_string(rank_kind k) {
  switch (k) {
    case rank_kind::iteration_time: return "iteration";
    case rank_kind::train_time: return "train-time";
    case rank_kind::cost: return "cost";
  }
  return "?";
}

std::string_view to_string(recompute_choice k) {
  switch (k) {
    case recompute_choice::none: return "none";
    case recompute_choice::selective: return "selective";
    case recompute_choice::full: return "full";
    case recompute_choice::block: return "block";
    case recompute_choice::op: return "op";
  }
  return "?";
}

namespace {

using clock_type = std::chrono::steady_clock;


/// The divisors of n ≥ 1, ascending, in O(√n) (a per-replica batch of 10^9 has 100).
std::vector<std::int64_t> divisors(std::int64_t n) {
  std::vector<std::int64_t> low, high;
  for (std::int64_t d = 1; d <= n / d; ++d) {
    if (n % d != 0) continue;
    low.push_back(d);
    if (d != n / d) high.push_back(n / d);
  }
  low.insert(low.end(), high.rbegin(), high.rend());
  return low;
}

std::vector<std::int64_t> range(std::int64_t lo, std::int64_t hi) {
  std::vector<std::int64_t> v;
  for (std::int64_t x = lo; x <= hi; ++x) v.push_back(x);
  return v;
}

/// Does TP (and TP×CP) split the model, and sit evenly on the nodes (§7.1)?
bool tp_divides(const model_spec& m, std::int64_t tp) {
  if (m.num_attention_heads % tp != 0 || m.num_query_groups % tp != 0 || m.ffn_hidden_size % tp != 0) return false;
  return !m.is_moe() || m.moe.expert_ffn_hidden_size % tp == 0;
}
bool even_on_nodes(std::int64_t group, std::int64_t gpus_per_node) {
  return gpus_per_node % group == 0 || group % gpus_per_node == 0;
}

/// The ZeRO stages the framework's optimizer rows run at this pipeline size (framework.h), one per
/// distinct row: DeepSpeed's BF16_Optimizer runs alike at stage 0 and 1, and only stage 0 is tried.
std::vector<int> zero_stages_for(const training_config& base, std::int64_t pp) {
  const std::array<bool, 4> stages = zero_stages_of(base.framework, pp, base.megatron_fsdp);
  std::vector<int> out;
  std::vector<const optimizer_row*> rows;
  for (int z = 0; z < 4; ++z) {
    if (!stages[static_cast<std::size_t>(z)]) continue;
    training_config t = base;
    t.zero_stage = z;
    t.megatron_fsdp_stage = z;
    t.distributed_optimizer = false;
    apply_framework_defaults(t);
    const optimizer_row* row = find_optimizer_row(t.framework, t.zero_stage, runs_bf16_optimizer(t), pp);
    if (row == nullptr) continue;
    if (std::any_of(rows.begin(), rows.end(), [&](const optimizer_row* r) { return runs_alike(*r, *row); })) continue;
    rows.push_back(row);
    out.push_back(z);
  }
  return out;
}

/// A group of layouts: the sizes that place the ranks (nodes, TP, CP, PP, EP, ETP, DP), the dispatcher and
/// the ZeRO stages its layouts try, packed (36 bytes; each size ≤ limits::kMaxGpus = 2^20).
struct layout_group {
  std::int32_t num_gpus = 0, num_nodes = 0, tp = 1, cp = 1, pp = 1, ep = 1, etp = 1, dp = 1;
  moe_dispatcher_kind dispatcher = moe_dispatcher_kind::framework_default;
  std::uint8_t zero_stages = 0;  ///< bit z set: ZeRO stage z is tried
  bool tries_zero(int z) const { return (zero_stages >> z & 1) != 0; }
};

/// A block of layouts before memory and time, packed (16 bytes: a 530B search enumerates 217 thousand
/// blocks of 1.7 million layouts): its group (nodes, TP, CP, PP, EP, ETP, DP), pipeline split, micro-batch
/// and SP; its layouts are every recomputation searched × every ZeRO stage of the group. They share the
/// bound's layer compute and differ in it only by the recomputed forward, so one key, the least of
/// theirs, stands for all of them until the search reaches it (§7.2).
struct packed_block {
  std::uint32_t group = 0;   ///< index into enumeration::groups
  std::uint32_t split = 0;   ///< index into enumeration::splits
  std::int32_t mbs = 1;      ///< ≤ the global batch, 2^30
  bool sp = false;
};
static_assert(sizeof(packed_block) <= 16);

/// One layout of a block: its recomputation and ZeRO stage.
struct block_member {
  recompute_choice recompute = recompute_choice::none;
  int zero = 0;
};

/// A pipeline split of a (PP, embedding slots, VPP), shared by every group at that PP.
struct split_entry {
  std::int64_t first = -1, last = -1;
  std::int64_t stage_layers = 0;  ///< transformer layers on the busiest rank
  std::int64_t first_rank = 0, middle_rank = 0, last_rank = 0;  ///< layers on the first, each middle, the last rank
  std::int64_t vpp = 1;
  bool emb = false;
};

/// A layout's bound as the search orders them: score of the compute lower bound, then enumeration order.
struct bound_key {
  double score = 0;
  std::uint32_t index = 0;
  bool operator<(const bound_key& o) const { return score != o.score ? score < o.score : index < o.index; }
};

using bound_keys = std::vector<bound_key, detail::huge_page_allocator<bound_key>>;

/// Per-(TP, CP, EP, MBS, SP) dense-layer compute, shared by every layout that differs only in PP, DP,
/// recomputation or ZeRO (§7.2).
struct layer_key {
  std::int64_t tp, cp, ep, etp, mbs;
  bool sp;
  auto operator<=>(const layer_key&) const = default;
};

/// The job of a candidate, without finalizing (the caller finalizes).
void apply_candidate(job_spec& j, const job_spec& base, const search_candidate& c) {
  j.parallel = base.parallel;
  j.training = base.training;
  parallel_config& p = j.parallel;
  training_config& t = j.training;
  p.tp = c.tp;
  p.pp = c.pp;
  p.cp = c.cp;
  p.ep = c.ep;
  p.etp = c.etp == c.tp ? 0 : c.etp;
  if (c.dispatcher != moe_dispatcher_kind::framework_default) p.moe_dispatcher = c.dispatcher;
  p.dp = 1;
  p.vpp = c.vpp;  // finalize_job derives the layers per chunk (uniform) or checks each rank's (uneven)
  p.num_layers_per_virtual_stage = 0;
  p.first_stage_layers = c.first_stage_layers;
  p.last_stage_layers = c.last_stage_layers;
  p.sequence_parallel = c.sequence_parallel;
  p.embedding_as_stage = c.embedding_as_stage;
  t.micro_batch_size = c.mbs;
  t.zero_stage = c.zero_stage;
  t.megatron_fsdp_stage = c.zero_stage;  // with Megatron-FSDP its strategy is the stage
  t.distributed_optimizer = t.framework == framework_kind::megatron && (c.zero_stage == 1 || t.megatron_fsdp);
  t.recompute_num_layers = 0;
  t.recompute_method_ = recompute_method::uniform;
  switch (c.recompute) {
    case recompute_choice::none: t.recompute = recompute_granularity::none; break;
    case recompute_choice::selective: t.recompute = recompute_granularity::selective; break;
    case recompute_choice::full: t.recompute = recompute_granularity::full; t.recompute_num_layers = 1; break;
    case recompute_choice::block:
      t.recompute = recompute_granularity::full;
      t.recompute_method_ = recompute_method::block;
      t.recompute_num_layers = c.recompute_num_layers;
      break;
    case recompute_choice::op: t.recompute = recompute_granularity::selective_op; break;
  }
  j.num_gpus = c.num_gpus;
  j.cluster.num_nodes = c.num_nodes;
}


double score_of(const search_space& s, double iteration_s, std::int64_t gpus) {
  return s.rank == rank_kind::cost ? iteration_s * static_cast<double>(gpus) : iteration_s;
}

/// Orders candidates best first; ties broken by fewer GPUs, then the layout integers (deterministic).
bool better(const search_candidate& a, const search_candidate& b) {
  if (a.score != b.score) return a.score < b.score;
  return std::tie(a.num_gpus, a.tp, a.pp, a.cp, a.ep, a.vpp, a.mbs, a.sequence_parallel, a.recompute,
                  a.recompute_num_layers, a.zero_stage, a.embedding_as_stage) <
         std::tie(b.num_gpus, b.tp, b.pp, b.cp, b.ep, b.vpp, b.mbs, b.sequence_parallel, b.recompute,
                  b.recompute_num_layers, b.zero_stage, b.embedding_as_stage);
}

std::string fmt_gib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", bytes / 1073741824.0);
  return buf;
}

std::string join(const std::vector<std::int64_t>& v) {
  std::string s;
  for (auto x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

/// Keep the user's values that the model allows; an empty result names the rule (contradictory input).
std::vector<std::int64_t> filter_given(const std::vector<std::int64_t>& given, const std::vector<std::int64_t>& all,
                                       const std::function<bool(std::int64_t)>& ok, const std::string& flag,
                                       const std::string& rule) {
  if (given.empty()) {
    std::vector<std::int64_t> out;
    for (auto x : all)
      if (ok(x)) out.push_back(x);
    return out;
  }
  std::vector<std::int64_t> out;
  for (auto x : given)
    if (ok(x)) out.push_back(x);
  if (out.empty()) throw input_error(flag + " " + join(given) + ": no value is valid: " + rule);
  return out;
}

/// The values of each dimension the search tries (§7.1), after the user's lists and the model's rules.
struct search_axes {
  std::vector<std::int64_t> nodes, tps, pps, cps, eps;
  std::vector<std::int64_t> etps;  ///< 0 stands for "the layout's TP"
  std::vector<recompute_choice> recomputes;
  std::vector<bool> sps, embs;
};

using limits::kMaxGpus;
constexpr std::int64_t kMaxNodeCounts = limits::kMaxSearchNodeCounts;

/// The node counts searched: --nodes, else 1..--max-nodes (the cluster's size), within --max-gpus.
std::vector<std::int64_t> nodes_of(const cluster_spec& cl, const search_space& s) {
  const std::int64_t gpn = cl.gpus_per_node;
  // The most nodes: --num-nodes, else as many as --max-gpus (--num-gpus) needs, else the cluster's.
  const std::int64_t most = s.max_nodes > 0 ? s.max_nodes
                            : s.max_gpus > 0 ? detail::ceil_div(s.max_gpus, gpn)
                                             : cl.num_nodes;
  // Bounded work: each node count is a search of its own (§7.2).
  const char* field = s.max_nodes > 0 ? "${space.max_nodes}" : s.max_gpus > 0 ? "${space.max_gpus}" : "${cluster.num_nodes}";
  if (s.nodes.empty() && most > kMaxNodeCounts) {
    throw input_error(fmt::format("{} {}: a search tries every node count from 1, at most {}; give the counts to try "
                                  "with ${{space.nodes}} (e.g. 1024,2048,4096)",
                                  field, most, kMaxNodeCounts));
  }
  std::vector<std::int64_t> nodes = s.nodes.empty() ? range(1, most) : s.nodes;
  if (nodes.size() > static_cast<std::size_t>(kMaxNodeCounts)) {
    throw input_error(fmt::format("${{space.nodes}} lists {} node counts, more than the {} a search tries", nodes.size(),
                                  kMaxNodeCounts));
  }
  for (std::int64_t n : nodes) {
    if (n > kMaxGpus / gpn) {
      throw input_error(fmt::format("{} nodes of {} GPUs are more than {} GPUs, more than any cluster", n, gpn, kMaxGpus));
    }
  }
  if (s.max_gpus <= 0) return nodes;
  std::vector<std::int64_t> kept;
  for (auto n : nodes)
    if (n * gpn <= s.max_gpus) kept.push_back(n);
  if (kept.empty()) {
    throw input_error("${space.max_gpus} " + std::to_string(s.max_gpus) + " is below one node (" + std::to_string(gpn) +
                      " GPUs): nothing to search");
  }
  return kept;
}

/// Every dimension's values (§7.1); throws input_error when the user's values leave none.
search_axes axes_of(const job_spec& base, const search_space& s) {
  const model_spec& m = base.model;
  const std::int64_t gpn = base.cluster.gpus_per_node;
  const framework_kind fw = base.training.framework;
  search_axes x;
  x.nodes = nodes_of(base.cluster, s);
  x.tps = filter_given(
      s.tp, range(1, gpn), [&](std::int64_t t) { return tp_divides(m, t) && even_on_nodes(t, gpn); }, "${space.tp}",
      "TP must divide ${model.num_attention_heads} (" + std::to_string(m.num_attention_heads) + "), the query groups (" +
          std::to_string(m.num_query_groups) + ") and ${model.ffn_hidden_size} (" + std::to_string(m.ffn_hidden_size) +
          "), and sit evenly on nodes of " + std::to_string(gpn) + " GPUs");
  x.pps = filter_given(
      s.pp, range(1, m.num_layers), [&](std::int64_t p) { return p <= m.num_layers; }, "${space.pp}",
      "PP cannot exceed ${model.num_layers} (" + std::to_string(m.num_layers) + ")");
  std::vector<std::int64_t> cp_default = {1};
  if (m.seq_length >= 8192)
    for (std::int64_t c = 2; c <= 16; c *= 2) cp_default.push_back(c);
  x.cps = filter_given(
      s.cp, s.cp.empty() ? cp_default : s.cp, [&](std::int64_t c) { return c == 1 || m.seq_length % (2 * c) == 0; },
      "${space.cp}", "CP > 1 needs ${model.seq_length} (" + std::to_string(m.seq_length) + ") divisible by 2 × CP");
  x.eps = filter_given(
      s.ep, m.is_moe() ? range(1, m.moe.num_experts) : std::vector<std::int64_t>{1},
      [&](std::int64_t e) { return e == 1 || (m.is_moe() && m.moe.num_experts % e == 0); }, "${space.ep}",
      m.is_moe() ? "EP must divide ${model.moe.num_experts} (" + std::to_string(m.moe.num_experts) + ")"
                 : "EP > 1 needs an MoE model (${model.moe.num_experts})");
  // ETP: the layout's TP (Megatron's default) and 1 (parallel folding), or the sizes given.
  for (std::int64_t v : s.etp) {
    if (v < 1) throw input_error("${space.etp}: sizes must be positive, got " + std::to_string(v));
  }
  x.etps = !m.is_moe() ? std::vector<std::int64_t>{0} : s.etp.empty() ? std::vector<std::int64_t>{0, 1} : s.etp;
  x.recomputes = s.recompute.empty() ? std::vector<recompute_choice>{recompute_choice::none, recompute_choice::selective,
                                                                     recompute_choice::full, recompute_choice::block}
                                     : s.recompute;
  // torchtitan's per-op checkpointing, where it is modelled (job_rules: FSDP, dense transformer layers; the
  // layouts at TP or CP > 1 are refused one by one).
  const bool op_modelled = fw == framework_kind::fsdp && !m.is_moe() && !m.is_mla() && !m.is_hybrid();
  if (s.recompute.empty() && op_modelled) x.recomputes.push_back(recompute_choice::op);
  if (!op_modelled && std::find(x.recomputes.begin(), x.recomputes.end(), recompute_choice::op) != x.recomputes.end()) {
    throw input_error("${space.recompute} op is torchtitan's per-op checkpointing, modelled with ${training.framework} "
                      "fsdp for dense transformer layers");
  }
  x.sps = s.sequence_parallel.empty()
              ? (traits_of(fw).sequence_parallel ? std::vector<bool>{false, true} : std::vector<bool>{false})
              : s.sequence_parallel;
  x.embs = s.embedding_as_stage.empty() ? std::vector<bool>{base.parallel.embedding_as_stage} : s.embedding_as_stage;
  if (!s.vpp.empty() && !traits_of(fw).interleaving && s.vpp != std::vector<std::int64_t>{1}) {
    throw input_error("${space.vpp} " + join(s.vpp) + ": interleaving is Megatron-LM's (${training.framework} megatron)");
  }
  for (int z : s.zero_stage) {
    bool ok = false;
    for (std::int64_t p : x.pps) {
      ok = ok || (z >= 0 && z < 4 && zero_stages_of(fw, p, base.training.megatron_fsdp)[static_cast<std::size_t>(z)]);
    }
    if (!ok) {
      throw input_error("${training.zero_stage} " + std::to_string(z) + " is not available with ${training.framework} " +
                        std::string(to_string(fw)) + " and the pipeline sizes searched");
    }
  }
  return x;
}

/// The layouts to evaluate, and what the enumeration rejected on the way (for the empty-space message).
struct enumeration {
  std::vector<layout_group> groups;
  std::vector<split_entry> splits;
  std::map<std::tuple<std::int64_t, bool, std::int64_t>, std::pair<std::uint32_t, std::uint32_t>> split_ranges;
  std::vector<packed_block, detail::huge_page_allocator<packed_block>> blocks;
  std::int64_t layouts = 0;  ///< in all the blocks
  search_candidate candidate(const packed_block& p, block_member member) const {
    const layout_group& g = groups[p.group];
    search_candidate c;
    c.num_gpus = g.num_gpus;
    c.num_nodes = g.num_nodes;
    c.tp = g.tp;
    c.cp = g.cp;
    c.pp = g.pp;
    c.ep = g.ep;
    c.etp = g.etp;
    c.dp = g.dp;
    c.dispatcher = g.dispatcher;
    const split_entry& s = splits[p.split];
    c.first_stage_layers = s.first;
    c.last_stage_layers = s.last;
    c.vpp = s.vpp;
    c.embedding_as_stage = s.emb;
    c.mbs = p.mbs;
    c.sequence_parallel = p.sp;
    c.recompute = member.recompute;
    c.zero_stage = member.zero;
    return c;
  }
  std::int64_t had_world = 0, had_batch = 0, had_dp_multiple = 0;
  std::int64_t bad_split_pp = 0, bad_mbs = 0, bad_vpp_pp = 0, bad_zero_pp = 0;
  bool bad_sp = false;
};

/// The user's values that `all` allows, or all of them when none given.
template <typename T>
std::vector<T> kept_of(const std::vector<T>& all, const std::vector<T>& given, bool keep_one = false) {
  if (given.empty()) return all;
  std::vector<T> kept;
  for (const T& v : given)
    if ((keep_one && v == T{1}) || std::find(all.begin(), all.end(), v) != all.end()) kept.push_back(v);
  return kept;
}

/// Micro-batch, chunk, SP, recomputation and ZeRO combinations of one (nodes, TP, CP, PP, EP, DP).
void enumerate_inner(const job_spec& base, const search_space& s, const search_axes& x, layout_group c,
                     enumeration& e, search_result& res) {
  const model_spec& m = base.model;
  const framework_kind fw = base.training.framework;
  const std::int64_t gbs = base.training.global_batch_size;
  std::vector<std::int64_t> mbss = s.mbs;
  if (mbss.empty()) mbss = divisors(gbs / c.dp);  // every micro-batch that divides the per-replica batch
  // The stages asked for as given (each that runs at this PP), else one per distinct optimizer row.
  std::vector<int> zeros;
  if (s.zero_stage.empty()) {
    zeros = zero_stages_for(base.training, c.pp);
  } else {
    for (int z : s.zero_stage)
      if (z >= 0 && z < 4 && zero_stages_of(fw, c.pp, base.training.megatron_fsdp)[static_cast<std::size_t>(z)]) zeros.push_back(z);
  }
  std::vector<std::int64_t> vpps = {1};
  // A hybrid pattern interleaves only through its '|' segments, which fix the layout (Megatron-Core's
  // select_pipeline_segment refuses VPP without them): the search gives hybrids VPP 1 (§7.1).
  const bool interleaves = traits_of(fw).interleaving && !m.is_hybrid();
  if (interleaves && c.pp > 1 && m.num_layers % c.pp == 0) {
    for (std::int64_t v = 2; v <= m.num_layers / c.pp; ++v)
      if ((m.num_layers / c.pp) % v == 0) vpps.push_back(v);
  } else if (interleaves) {
    // Interleaving with an uneven split, as Megatron-Core allows it: every rank's layers divisible by
    // the chunks (§7.1; Llama 3 405B's 8, 8 × 14, 6 takes VPP 2).
    const std::int64_t middle = detail::ceil_div(m.num_layers, c.pp);
    for (std::int64_t v = 2; v <= middle; ++v) {
      for (const auto& [f, l] : uneven_splits(m, c.pp)) {
        if (f % v == 0 && l % v == 0 && middle % v == 0) {
          vpps.push_back(v);
          break;
        }
      }
    }
  }
  vpps = kept_of(vpps, s.vpp, true);
  if (zeros.empty()) e.bad_zero_pp = c.pp;
  // The splits at each (embedding slots, VPP), which depend on neither the micro-batch nor the group's other
  // sizes: worked out once per (PP, embedding slots, VPP) and shared.
  std::vector<std::pair<std::uint32_t, std::uint32_t>> ranges;
  std::size_t split_count = 0;
  for (bool emb : x.embs) {
    for (std::int64_t vpp : vpps) {
      auto [it, fresh] = e.split_ranges.try_emplace({c.pp, emb, vpp});
      if (fresh) {
        const std::vector<split_choice> found = pipeline_splits(m, fw, c.pp, emb, vpp);
        it->second = {static_cast<std::uint32_t>(e.splits.size()), static_cast<std::uint32_t>(found.size())};
        for (const split_choice& sc : found) {
          e.splits.push_back({sc.first, sc.last, sc.stage_layers, sc.first_rank_layers, sc.middle_rank_layers,
                              sc.last_rank_layers, vpp, emb});
        }
      }
      ranges.push_back(it->second);
      split_count += it->second.second;
    }
  }
  const auto group = static_cast<std::uint32_t>(e.groups.size());
  for (int z : zeros) c.zero_stages = static_cast<std::uint8_t>(c.zero_stages | 1u << z);
  e.groups.push_back(c);
  const auto members = static_cast<std::int64_t>(std::bitset<4>(c.zero_stages).count() * x.recomputes.size());
  const auto per_mbs = static_cast<std::int64_t>(split_count * x.sps.size()) * members;
  for (std::int64_t mbs : mbss) {
    if (gbs % (mbs * c.dp) != 0) {
      e.bad_mbs = mbs;
      res.enumerated += std::max<std::int64_t>(per_mbs, 1);
      res.pruned_divisibility += std::max<std::int64_t>(per_mbs, 1);
      continue;
    }
    const std::int64_t micro = gbs / (mbs * c.dp);
    for (const auto& [first, count] : ranges) {
      for (std::uint32_t si = first; si < first + count; ++si) {
        const split_entry& split = e.splits[si];
        const bool vpp_ok = split.vpp == 1 || micro % c.pp == 0;
        for (bool sp : x.sps) {
          const bool sp_ok = !sp || (c.tp > 1 && (m.seq_length / c.cp) % c.tp == 0);
          res.enumerated += members;
          if (members == 0) continue;
          if (split.stage_layers == 0 || !vpp_ok || !sp_ok) {
            if (split.stage_layers == 0) e.bad_split_pp = c.pp;
            if (!vpp_ok) e.bad_vpp_pp = c.pp;
            e.bad_sp = e.bad_sp || !sp_ok;
            res.pruned_divisibility += members;
            continue;
          }
          e.blocks.push_back({group, si, static_cast<std::int32_t>(mbs), sp});
          e.layouts += members;
        }
      }
    }
  }
}

/// Every layout of the axes that divides (§7.1), with the counts of what did not.
enumeration enumerate_layouts(const job_spec& base, const search_space& s, const search_axes& x, search_result& res) {
  const model_spec& m = base.model;
  const std::int64_t gbs = base.training.global_batch_size;
  const std::int64_t gpn = base.cluster.gpus_per_node;
  const auto inner = static_cast<std::int64_t>(x.recomputes.size() * x.sps.size() * x.embs.size());
  enumeration e;
  e.blocks.reserve(detail::huge_page_allocator<packed_block>::kHuge / sizeof(packed_block));  // grows on huge pages
  auto reject = [&](std::int64_t& counter) {
    res.enumerated += inner;
    counter += inner;
  };
  for (std::int64_t n : x.nodes) {
    for (std::int64_t tp : x.tps) {
      for (std::int64_t cp : x.cps) {
        for (std::int64_t pp : x.pps) {
          for (std::int64_t ep : x.eps) {
           for (std::int64_t etp_given : x.etps) {
            const std::int64_t etp = etp_given == 0 ? tp : etp_given;  // 0: the TP of this layout
            if (etp_given == 1 && tp == 1 && x.etps.size() > 1 && x.etps.front() == 0) continue;  // = TP, counted once
            const std::int64_t gpus = n * gpn;
            const std::int64_t mp = tp * pp * cp;
            if (gpus % mp != 0 || !even_on_nodes(tp * cp, gpn)) {
              reject(res.pruned_divisibility);
              continue;
            }
            ++e.had_world;
            const std::int64_t dp = gpus / mp;
            // Parallel folding: ETP×EP must divide a stage's TP×CP×DP ranks (§2.1).
            const bool experts_fit = !m.is_moe() || ((tp * cp * dp) % (etp * ep) == 0 &&
                                                     m.moe.expert_ffn_hidden_size % etp == 0);
            if (gbs % dp != 0 || !experts_fit || (cp > 1 && m.seq_length % (2 * cp) != 0)) {
              reject(res.pruned_divisibility);
              continue;
            }
            ++e.had_batch;
            if (dp % s.dp_multiple_of != 0) {
              reject(res.pruned_constraint);
              continue;
            }
            ++e.had_dp_multiple;
            layout_group c;  // each size ≤ gpus ≤ kMaxGpus (nodes_of)
            c.num_gpus = static_cast<std::int32_t>(gpus);
            c.num_nodes = static_cast<std::int32_t>(n);
            c.tp = static_cast<std::int32_t>(tp);
            c.pp = static_cast<std::int32_t>(pp);
            c.cp = static_cast<std::int32_t>(cp);
            c.ep = static_cast<std::int32_t>(ep);
            c.etp = static_cast<std::int32_t>(m.is_moe() ? etp : tp);
            c.dispatcher = m.is_moe() && ep > 1 && base.training.framework == framework_kind::megatron &&
                                   base.parallel.moe_dispatcher == moe_dispatcher_kind::framework_default
                               ? moe_dispatcher_kind::alltoall
                               : moe_dispatcher_kind::framework_default;
            c.dp = static_cast<std::int32_t>(dp);
            enumerate_inner(base, s, x, c, e, res);
           }
          }
        }
      }
    }
  }
  return e;
}

/// Why nothing divides: the first filter that rejected everything, or the rules that did.
std::string empty_space_reason(const job_spec& base, const search_space& s, const search_axes& x,
                               const enumeration& e) {
  const std::int64_t gpn = base.cluster.gpus_per_node;
  if (e.had_world == 0) {
    return "no TP×PP×CP of the values searched divides the GPU counts (" + std::to_string(x.nodes.front() * gpn) +
           "..." + std::to_string(x.nodes.back() * gpn) + " GPUs)";
  }
  if (e.had_batch == 0) {
    return "${training.global_batch_size} " + std::to_string(base.training.global_batch_size) +
           " is not a multiple of any data-parallel size the layouts give";
  }
  if (e.had_dp_multiple == 0) return "${space.dp_multiple_of} " + std::to_string(s.dp_multiple_of) + " leaves no data-parallel size";
  std::vector<std::string> rules;  // only the rules that rejected something
  if (e.bad_split_pp > 0) {
    rules.push_back("${space.pp} " + std::to_string(e.bad_split_pp) + " does not split the " +
                    std::to_string(base.model.num_layers) +
                    " layers (pick a divisor, or ${parallel.embedding_as_stage} / ${training.framework} deepspeed for uneven splits)");
  }
  if (e.bad_mbs > 0) rules.push_back("${space.mbs} " + std::to_string(e.bad_mbs) + " does not divide GBS/DP");
  if (e.bad_vpp_pp > 0) {
    rules.push_back("${space.vpp} needs the micro-batches to be a multiple of PP (" + std::to_string(e.bad_vpp_pp) + ")");
  }
  if (e.bad_sp) rules.push_back("${parallel.sequence_parallel} needs TP > 1 dividing the sequence");
  if (e.bad_zero_pp > 0) {
    rules.push_back("${space.zero_stage} keeps none of the ZeRO stages " + std::string(to_string(base.training.framework)) +
                    " allows at PP " + std::to_string(e.bad_zero_pp));
  }
  if (rules.empty()) rules.push_back("no combination of the values searched passes them (try fewer restrictions)");
  std::string why = "every combination breaks a layout rule: ";
  for (std::size_t i = 0; i < rules.size(); ++i) why += (i ? "; " : "") + rules[i];
  return why;
}

/// A worker's per-(TP, CP, EP, MBS, SP) layer compute, and the last entry looked up for each SP value
/// (neighbouring layouts share the key but for SP, so most lookups skip the map).
struct layer_cache {
  std::map<layer_key, unit_time> layers;
  std::array<const std::pair<const layer_key, unit_time>*, 2> last{};
  /// (group, split, ZeRO stage) whose weights, gradients and optimizer state alone overflow a GPU: no
  /// micro-batch, recomputation or SP makes them fit (§7.3).
  std::set<std::tuple<std::uint32_t, std::uint32_t, std::uint8_t>> static_overflow;
  /// (group, split, ZeRO, SP, recomputation) → the smallest micro-batch found not to fit: memory never falls
  /// as the micro-batch grows (tests/core/estimate/property_test.cc), so no larger one fits either.
  std::map<std::tuple<std::uint32_t, std::uint32_t, std::uint8_t, bool, std::uint8_t>, std::int32_t> no_fit_mbs;
};

/// The search's workers, each with its own job buffer and layer cache.
using worker_pool = detail::search_workers<layer_cache>;
using detail::top_k_threshold;

/// A layout's iteration lower bound (§7.2) from the cheapest layer's forward f, backward b and attention
/// core a (held in `u` as bound_layer sets it): for each pipeline rank k, every micro-batch passes each of
/// its layers (m · work(L_k)), and its first forward waits for the first micro-batch's first chunk on the
/// k ranks before it, as the last chunk's backward on them waits for its last backward (Σ_{i<k} L_i/v ·
/// (f + b)). The largest over the first, the last middle and the last rank; with one rank, m · work(L).
double pipeline_lower_bound_s(const unit_time& u, const split_entry& split, std::int64_t pp, recompute_choice rc,
                              double micro) {
  const double f = u.forward.gemm_s, b = u.backward.gemm_s, a = u.forward.attention_s;
  auto work = [&](std::int64_t layers_i) {
    const double layers = static_cast<double>(layers_i);
    double extra = 0;
    switch (rc) {
      case recompute_choice::none: break;
      case recompute_choice::selective: extra = layers * a; break;
      case recompute_choice::full: extra = layers * f; break;
      case recompute_choice::block: extra = f; break;  // at least one recomputed layer
      case recompute_choice::op: break;                 // some matmuls and kernels: at least nothing
    }
    return micro * (layers * (f + b) + extra);
  };
  const double per_layer_fill = (f + b) / static_cast<double>(split.vpp);
  const auto first = static_cast<double>(split.first_rank), middle = static_cast<double>(split.middle_rank);
  double bound = work(split.first_rank);
  if (pp >= 2) {
    const double before_last = first + static_cast<double>(pp - 2) * middle;
    bound = std::max(bound, work(split.last_rank) + before_last * per_layer_fill);
  }
  if (pp >= 3) {
    const double before_middle = first + static_cast<double>(pp - 3) * middle;
    bound = std::max(bound, work(split.middle_rank) + before_middle * per_layer_fill);
  }
  return bound;
}

/// The bound's layer compute of a block's (TP, CP, EP, ETP, MBS, SP), from the worker's cache (§7.2):
/// the cheapest layer of each kind the model has (§1.10), field by field, so that the bound stays below
/// every stage's real sum: held as forward.gemm_s (all of the forward), backward.gemm_s and
/// forward.attention_s (what selective recomputation redoes).
const unit_time& bound_layer(const job_spec& base, const enumeration& e, const packed_block& p, job_spec& j,
                             layer_cache& cache) {
  const layout_group& g = e.groups[p.group];
  const layer_key key{g.tp, g.cp, g.ep, g.etp, p.mbs, p.sp};
  const auto* last = cache.last[p.sp];
  if (last != nullptr && last->first == key) return last->second;
  auto it = cache.layers.find(key);
  if (it == cache.layers.end()) {
    const compute_efficiency eff = effective_compute_efficiency(base.cluster.gpu);
    const layer_counts kinds = base.model.count_layer_kinds(0, base.model.num_layers);
    const search_candidate c = e.candidate(p, {});
    apply_candidate(j, base, c);
    j.parallel.dp = c.dp;
    apply_framework_defaults(j.training);  // the kernels the framework runs (fused SwiGLU), as the layout will
    resolve_job(j);  // the tokens and precision roles the layer's kernels read
    unit_time u;
    bool first = true;
    for (std::size_t k = 0; k < kNumLayerKinds; ++k) {
      if (kinds[k] == 0) continue;
      const unit_time l = layer_compute(j, eff, static_cast<layer_kind>(k));
      const double f = l.forward.total_s(), b = l.backward.total_s(), a = l.forward.attention_s;
      u.forward.gemm_s = first ? f : std::min(u.forward.gemm_s, f);
      u.backward.gemm_s = first ? b : std::min(u.backward.gemm_s, b);
      u.forward.attention_s = first ? a : std::min(u.forward.attention_s, a);
      first = false;
    }
    it = cache.layers.emplace(key, u).first;
  }
  cache.last[p.sp] = &*it;  // std::map nodes stay put
  return it->second;
}

/// The score's lower bound of one layout of a block (§7.2).
double layout_bound(const job_spec& base, const search_space& s, const enumeration& e, const packed_block& p,
                    const unit_time& u, recompute_choice rc) {
  const layout_group& g = e.groups[p.group];
  const double micro = static_cast<double>(base.training.global_batch_size / (p.mbs * g.dp));
  return score_of(s, pipeline_lower_bound_s(u, e.splits[p.split], g.pp, rc, micro), g.num_gpus);
}

/// Each block's key: the least lower bound of its layouts (§7.2), over the recomputations searched.
bound_keys bound_blocks(const job_spec& base, const search_space& s, const search_axes& x, const enumeration& e,
                        worker_pool& pool) {
  bound_keys keys(e.blocks.size());
  pool.run(e.blocks.size(), [&](std::size_t i, job_spec& j, layer_cache& cache) {
    const packed_block& p = e.blocks[i];
    const unit_time& u = bound_layer(base, e, p, j, cache);
    double least = std::numeric_limits<double>::infinity();
    for (recompute_choice rc : x.recomputes) least = std::min(least, layout_bound(base, s, e, p, u, rc));
    keys[i] = {least, static_cast<std::uint32_t>(i)};
  });
  return keys;
}

enum class fate : char { bounded, invalid, no_fit, evaluated };

/// Whether a group's ranks sit on the nodes as the collectives need (placement_violation depends on the
/// group's sizes alone): worked out by the first layout of the group that gets that far, then read.
class placement_cache {
 public:
  explicit placement_cache(std::size_t groups) : state_(groups) {
    for (auto& x : state_) x.store(kUnknown, std::memory_order_relaxed);
  }
  bool placed(std::uint32_t group, const job_spec& j) {
    signed char v = state_[group].load(std::memory_order_relaxed);
    if (v == kUnknown) {
      v = placement_violation(j).empty() ? kPlaced : kNotPlaced;
      state_[group].store(v, std::memory_order_relaxed);  // a race computes the same answer twice
    }
    return v == kPlaced;
  }

 private:
  static constexpr signed char kUnknown = -1, kPlaced = 1, kNotPlaced = 0;
  std::vector<std::atomic<signed char>> state_;
};

/// Memory and time of one layout into `c` (§7.3), or why it was dropped. Block recomputation takes the
/// fewest recomputed layers per chunk that fit (fewer is faster; §7.1), by bisection.
fate evaluate_one(const job_spec& base, const search_space& s, search_candidate& c, const packed_block& p,
                  std::int64_t stage_layers, placement_cache& placements, layer_cache& cache, job_spec& j,
                  double capacity, double need_headroom) {

  // One evaluation's buffers per worker thread, reused from layout to layout; the memory report of the
  // last fit check is the one the time model uses (§7.3).
  thread_local layout_evaluation ev;
  thread_local std::vector<stage_layout> layout;
  parameter_breakdown params;
  auto fits_now = [&]() {
    memory_report& mr = ev.memory;
    estimate_memory(j, params, layout, mr);
    c.peak_reserved_bytes = mr.peak_reserved_bytes;
    c.headroom_bytes = capacity - mr.peak_reserved_bytes;
    return mr.fits && c.headroom_bytes >= need_headroom;
  };
  const bool block = c.recompute == recompute_choice::block;
  const std::int64_t chunk_layers = stage_layers / std::max<std::int64_t>(1, c.vpp);
  if (block) {
    if (chunk_layers < 2) return fate::invalid;  // one layer per chunk: block is full recomputation
    c.recompute_num_layers = chunk_layers - 1;
  }
  apply_candidate(j, base, c);
  if (!layout_violation(j).empty() || !placements.placed(p.group, j)) return fate::invalid;
  const auto zero = static_cast<std::uint8_t>(c.zero_stage);
  const auto static_key = std::make_tuple(p.group, p.split, zero);
  if (cache.static_overflow.count(static_key) != 0) return fate::no_fit;
  const auto fit_key = std::make_tuple(p.group, p.split, zero, p.sp, static_cast<std::uint8_t>(c.recompute));
  if (const auto it = cache.no_fit_mbs.find(fit_key); it != cache.no_fit_mbs.end() && p.mbs >= it->second) {
    return fate::no_fit;
  }
  params = count_parameters(j.model, j.parallel.tp);
  pipeline_layout(j, layout);
  bool fits = fits_now();
  if (block && fits) {
    std::int64_t lo = 1, hi = c.recompute_num_layers;
    while (lo < hi) {
      const std::int64_t mid = (lo + hi) / 2;
      j.training.recompute_num_layers = mid;
      if (fits_now()) hi = mid;
      else lo = mid + 1;
    }
    c.recompute_num_layers = hi;
    j.training.recompute_num_layers = hi;
    fits = fits_now();
  }
  if (!fits) {
    double static_bytes = 0;
    for (const stage_memory& st : ev.memory.stages) {
      static_bytes = std::max(static_bytes, st.weights_bytes + st.gradients_bytes + st.optimizer_bytes);
    }
    if (static_bytes > capacity - need_headroom) cache.static_overflow.insert(static_key);
    auto [it, fresh] = cache.no_fit_mbs.try_emplace(fit_key, p.mbs);
    if (!fresh) it->second = std::min(it->second, p.mbs);
    return fate::no_fit;
  }
  time_report& t = ev.time;
  estimate_time(j, ev.memory, t);
  c.iteration_s = t.iteration_s;
  c.tflops_per_gpu = t.tflops_per_gpu;
  c.mfu = t.mfu;
  c.samples_per_s = t.samples_per_s;
  c.bubble_fraction = t.bubble_fraction;
  c.gpu_hours_per_iteration = c.iteration_s * static_cast<double>(c.num_gpus) / 3600;
  const double samples = static_cast<double>(base.training.global_batch_size);
  if (s.train_tokens > 0) c.train_days = s.train_tokens / (samples * base.model.seq_length) * c.iteration_s / 86400;
  c.score = score_of(s, c.iteration_s, c.num_gpus);
  return fate::evaluated;
}

/// Memory, then the full time model (§7.3), best bound first, until the bound passes the K-th best score.
/// The blocks' keys are not sorted whole: each round selects the next `chunk` lowest (nth_element, O(n))
/// and sorts only those, so a search that stops after a few hundred of 217 thousand blocks never sorts
/// the rest. Within a round the workers skip what the bound rules out, block by block and then layout by
/// layout (each layout's own bound, with its recomputation); the round after the bound passed the
/// threshold is never started (the threshold only falls, the keys only rise).
void evaluate_bounded(const job_spec& base, const search_space& s, const search_axes& x, const enumeration& e,
                      bound_keys& keys, worker_pool& pool, search_result& res) {
  const double capacity = static_cast<double>(base.cluster.gpu.usable_memory_bytes);
  const double need_headroom = std::max(s.min_headroom_bytes, s.min_headroom_fraction * capacity);
  top_k_threshold best(static_cast<std::size_t>(std::max<std::int64_t>(1, s.top_k)));
  placement_cache placements(e.groups.size());
  std::mutex mu;  // guards res.candidates: evaluated layouts are few
  std::atomic<std::int64_t> invalid{0}, no_fit{0};
  std::size_t done = 0;
  std::size_t chunk = 1024;
  while (done < keys.size()) {
    const std::size_t end = std::min(keys.size(), done + chunk);
    const auto first = keys.begin() + static_cast<std::ptrdiff_t>(done);
    const auto last = keys.begin() + static_cast<std::ptrdiff_t>(end);
    if (end < keys.size()) std::nth_element(first, last, keys.end());
    std::sort(first, last);
    if (!s.exhaustive && first->score > best.threshold()) break;  // every later key is larger still
    pool.run(end - done, [&](std::size_t k, job_spec& j, layer_cache& cache) {
      const bound_key& key = keys[done + k];
      if (!s.exhaustive && key.score > best.threshold()) return;
      const packed_block& p = e.blocks[key.index];
      const unit_time& u = bound_layer(base, e, p, j, cache);
      for (recompute_choice rc : x.recomputes) {
        const double bound = layout_bound(base, s, e, p, u, rc);
        if (!s.exhaustive && bound > best.threshold()) continue;
        for (int z = 0; z < 4; ++z) {
          if (!e.groups[p.group].tries_zero(z)) continue;
          search_candidate c = e.candidate(p, {rc, z});
          c.lower_bound_s = s.rank == rank_kind::cost ? bound / static_cast<double>(c.num_gpus) : bound;
          const fate f = evaluate_one(base, s, c, p, e.splits[p.split].stage_layers, placements, cache, j, capacity,
                                      need_headroom);
          if (f == fate::invalid) invalid.fetch_add(1, std::memory_order_relaxed);
          if (f == fate::no_fit) no_fit.fetch_add(1, std::memory_order_relaxed);
          if (f == fate::evaluated) {
            best.offer(c.score);
            std::lock_guard<std::mutex> lock(mu);
            res.candidates.push_back(c);
          }
        }
      }
    });
    done = end;
    chunk *= 2;  // few rounds even when the bound prunes little
  }
  res.pruned_divisibility += invalid.load();
  res.pruned_memory += no_fit.load();
  res.pruned_bound += e.layouts - invalid.load() - no_fit.load() - static_cast<std::int64_t>(res.candidates.size());
}

/// The evaluated layouts best first, and the counts of the others (§7.3).
void rank_results(const job_spec& base, const search_space& s, std::int64_t layouts, search_result& res) {
  if (res.candidates.empty()) {
    const double capacity = static_cast<double>(base.cluster.gpu.usable_memory_bytes);
    const double need_headroom = std::max(s.min_headroom_bytes, s.min_headroom_fraction * capacity);
    throw input_error("nothing fits: all " + std::to_string(layouts) + " layouts that divide need more memory than " +
                      (need_headroom > 0 ? "the GPU has after the headroom asked (${space.min_headroom_bytes} / ${space.min_headroom_fraction})"
                                         : fmt_gib(capacity) + " GiB usable per GPU"));
  }
  res.evaluated = static_cast<std::int64_t>(res.candidates.size());
  std::sort(res.candidates.begin(), res.candidates.end(), better);
  res.pruned = res.pruned_divisibility + res.pruned_constraint + res.pruned_memory + res.pruned_bound;
}

}  // namespace

job_spec candidate_job(const job_spec& base, const search_candidate& c) {
  job_spec j = base;
  apply_candidate(j, base, c);
  finalize_job(j);
  return j;
}

search_result run_search(const job_spec& base_in, const search_space& s, const search_progress& progress) {
  const auto t0 = clock_type::now();
  job_spec base = base_in;
  finalize_model(base.model);
  resolve_attention(base.training);  // the bound must price the attention kernel the layouts run (§7.2)
  validate_cluster(base.cluster, "cluster");
  if (base.training.global_batch_size <= 0) throw input_error("search needs the global batch: ${training.global_batch_size}");
  search_result res;
  res.model_params = static_cast<double>(count_parameters(base.model).total);
  res.usable_bytes = static_cast<double>(base.cluster.gpu.usable_memory_bytes);

  const search_axes axes = axes_of(base, s);
  enumeration e = enumerate_layouts(base, s, axes, res);
  if (e.blocks.empty()) throw input_error("nothing to search: " + empty_space_reason(base, s, axes, e));
  if (e.blocks.size() > std::numeric_limits<std::uint32_t>::max()) {
    throw input_error(fmt::format("{} layouts to search in {} blocks, more than 2^32 blocks: give fewer node counts "
                                  "(${{space.nodes}}) or fix some sizes (${{space.tp}}, ${{space.pp}}, ${{space.mbs}})",
                                  e.layouts, e.blocks.size()));
  }

  const unsigned threads = s.threads > 0 ? s.threads : std::max(1u, std::thread::hardware_concurrency());
  res.threads = threads;
  const auto total_work = static_cast<std::int64_t>(e.blocks.size()) * 2;  // the pool's items: blocks, twice
  worker_pool pool(base, threads, total_work, progress);
  // Best bound first: once a layout's bound exceeds the K-th best score, it cannot enter the top K.
  bound_keys keys = bound_blocks(base, s, axes, e, pool);
  evaluate_bounded(base, s, axes, e, keys, pool, res);
  rank_results(base, s, e.layouts, res);
  res.elapsed_s = std::chrono::duration<double>(clock_type::now() - t0).count();
  if (progress) progress(total_work, total_work);
  return res;
}


}  // namespace trainplan
