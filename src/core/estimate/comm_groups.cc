// Rank placement and process groups (docs/formulas.md §4.1): Megatron's rank generators, every group
// of every dimension, and where a dimension's groups sit on the nodes.
#include <algorithm>
#include <functional>
#include <bit>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "trainplan/core/base/checked.h"
#include "estimate/comm_detail.h"
#include "trainplan/core/estimate/comm.h"
#include "trainplan/core/base/error.h"

namespace trainplan {

namespace {

constexpr std::array<std::string_view, 6> kDimNames = {"tp", "cp", "ep", "dp", "pp", "embedding"};
constexpr std::array<std::string_view, 3> kLinkNames = {"nvlink", "network", "hierarchical"};

}  // namespace

std::string_view to_string(parallel_dim d) { return kDimNames[static_cast<std::size_t>(d)]; }
std::string_view to_string(link_kind k) { return kLinkNames[static_cast<std::size_t>(k)]; }

namespace detail {

void for_each_masked_group(const rank_generator& g, unsigned mask,
                           const std::function<void(const std::vector<std::int64_t>&)>& visit) {
  std::array<std::int64_t, kNumOrderedDims> in_size{}, in_stride{}, out_size{}, out_stride{};
  int n_in = 0;
  int n_out = 0;
  std::int64_t stride = 1;
  std::int64_t group_size = 1;
  for (int i = 0; i < kNumOrderedDims; ++i) {
    const auto d = static_cast<std::size_t>(g.order[static_cast<std::size_t>(i)]);
    if (mask & (1u << d)) {
      in_size[static_cast<std::size_t>(n_in)] = g.size[d];
      in_stride[static_cast<std::size_t>(n_in++)] = stride;
      group_size *= g.size[d];
    } else {
      out_size[static_cast<std::size_t>(n_out)] = g.size[d];
      out_stride[static_cast<std::size_t>(n_out++)] = stride;
    }
    stride *= g.size[d];
  }
  const std::int64_t num_groups = g.world / group_size;
  std::vector<std::int64_t> members(static_cast<std::size_t>(group_size));
  for (std::int64_t gi = 0; gi < num_groups; ++gi) {
    std::int64_t base = 0;
    std::int64_t rest = gi;
    for (int j = 0; j < n_out; ++j) {
      base += (rest % out_size[static_cast<std::size_t>(j)]) * out_stride[static_cast<std::size_t>(j)];
      rest /= out_size[static_cast<std::size_t>(j)];
    }
    for (std::int64_t ri = 0; ri < group_size; ++ri) {
      std::int64_t r = base;
      std::int64_t q = ri;
      for (int j = 0; j < n_in; ++j) {
        r += (q % in_size[static_cast<std::size_t>(j)]) * in_stride[static_cast<std::size_t>(j)];
        q /= in_size[static_cast<std::size_t>(j)];
      }
      members[static_cast<std::size_t>(ri)] = r;
    }
    visit(members);
  }
}

std::vector<std::vector<std::int64_t>> masked_groups(const rank_generator& g, unsigned mask) {
  std::vector<std::vector<std::int64_t>> groups;
  for_each_masked_group(g, mask, [&](const std::vector<std::int64_t>& members) { groups.push_back(members); });
  return groups;
}

namespace {

/// The embedding groups: first and last rank of every pipeline group (parallel_state.py).
std::vector<std::vector<std::int64_t>> embedding_groups(const rank_generator& g) {
  auto groups = masked_groups(g, bit(parallel_dim::pp));
  for (auto& members : groups) {
    if (members.size() > 1) members = {members.front(), members.back()};
  }
  return groups;
}

/// Placement found by looking at every group, one at a time (a million-GPU job's groups are not held at
/// once). When a group spreads unevenly over its nodes: throws, or with `violation` sets it to the message
/// and `failed()` turns true.
class placement_scanner {
 public:
  placement_scanner(std::int64_t world, std::int64_t gpn, std::string_view name, std::string* violation)
      : gpn_(gpn), name_(name), violation_(violation),
        groups_on_node_(static_cast<std::size_t>(std::max<std::int64_t>(0, world - 1) / gpn + 1), 0) {}

  void add(const std::vector<std::int64_t>& g) {
    if (failed_ || g.empty()) return;
    // The members per node, by sorting the nodes (O(g log g); a linear search per member was quadratic in
    // the nodes a group spans: a 64,252-GPU data-parallel group took 0.08 s, a million GPUs 14 s). The
    // members come in rank order, so the nodes are counted as they come and rarely sorted.
    per_node_.clear();
    auto count = [&](std::int64_t node) {
      if (per_node_.empty() || per_node_.back().first != node) per_node_.emplace_back(node, 1);
      else ++per_node_.back().second;
    };
    if (std::is_sorted(g.begin(), g.end())) {
      for (auto r : g) count(r / gpn_);
    } else {
      nodes_.clear();
      for (auto r : g) nodes_.push_back(r / gpn_);
      std::sort(nodes_.begin(), nodes_.end());
      for (const std::int64_t node : nodes_) count(node);
    }
    const std::int64_t m = per_node_.front().second;
    const bool even = std::all_of(per_node_.begin(), per_node_.end(), [&](const auto& e) { return e.second == m; });
    const auto k = static_cast<std::int64_t>(per_node_.size());
    if (!even || (!first_ && (k != p_.num_nodes || m != p_.gpus_per_node))) {
      fail(g);
      return;
    }
    if (first_) p_.group_size = static_cast<std::int64_t>(g.size());
    first_ = false;
    p_.num_nodes = k;
    p_.gpus_per_node = m;
    if (k > 1)
      for (const auto& e : per_node_) ++groups_on_node_[static_cast<std::size_t>(e.first)];
  }

  bool failed() const { return failed_; }

  group_placement result() {
    if (failed_ || first_) return {};
    p_.link = p_.num_nodes == 1 ? link_kind::nvlink : p_.gpus_per_node == 1 ? link_kind::network : link_kind::hierarchical;
    p_.concurrent_groups_per_node =
        std::max<std::int64_t>(1, *std::max_element(groups_on_node_.begin(), groups_on_node_.end()));
    return p_;
  }

 private:
  void fail(const std::vector<std::int64_t>& g) {
    // The group by its devices: every one for a small group, else the first eight, the last and the count.
    constexpr std::size_t kShown = 8;
    std::vector<std::string> names;
    for (std::size_t i = 0; i < g.size() && i < kShown; ++i) names.push_back(device_name(g[i], gpn_));
    if (g.size() > kShown + 1) names.push_back("…");
    if (g.size() > kShown) names.push_back(device_name(g.back(), gpn_));
    const std::string size = g.size() > kShown + 1 ? fmt::format(" of {} GPUs", g.size()) : std::string();
    std::string message = fmt::format(
        "the {} group [{}]{} cannot be placed: its GPUs spread unevenly over nodes of {} GPUs (${{cluster.gpus_per_node}}); "
        "trainplan models groups with the same number of GPUs on every node they span: choose sizes "
        "(${{parallel.tp}}, ${{parallel.cp}}, ${{parallel.ep}}, "
        "${{parallel.pp}}) or a ${{parallel.rank_order}} that divide or are multiples of it",
        name_, fmt::join(names, " "), size, gpn_);
    // Nodes of a size that is not a power of two (an NVL72 rack's 72 GPUs): jobs use a power of two of them.
    if ((gpn_ & (gpn_ - 1)) != 0) {
      std::int64_t fewer = 1;
      while (fewer * 2 <= gpn_) fewer *= 2;
      message += fmt::format(", or ${{cluster.gpus_per_node}} {} to use {} of each node's {} GPUs (as GB200 NVL72 jobs "
                             "of 128 GPUs run 64 a rack)",
                             fewer, fewer, gpn_);
    }
    if (violation_ == nullptr) throw input_error(message);
    *violation_ = std::move(message);
    failed_ = true;
  }

  std::int64_t gpn_;
  std::string_view name_;
  std::string* violation_;
  group_placement p_;
  bool first_ = true, failed_ = false;
  std::vector<std::int64_t> groups_on_node_, nodes_;
  std::vector<std::pair<std::int64_t, std::int64_t>> per_node_;  // (node, members)
};

}  // namespace

group_placement placement_by_scan(const rank_generator& g, unsigned mask, std::int64_t gpn, std::string_view name,
                                  std::string* violation) {
  placement_scanner scan(g.world, gpn, name, violation);
  for_each_masked_group(g, mask, [&](const std::vector<std::int64_t>& members) { scan.add(members); });
  return scan.result();
}

group_placement embedding_placement_by_scan(const rank_generator& g, std::int64_t gpn, std::string* violation) {
  placement_scanner scan(g.world, gpn, "embedding", violation);
  std::vector<std::int64_t> ends;
  for_each_masked_group(g, bit(parallel_dim::pp), [&](const std::vector<std::int64_t>& members) {
    ends = members.size() > 1 ? std::vector<std::int64_t>{members.front(), members.back()} : members;
    scan.add(ends);
  });
  return scan.result();
}

std::vector<std::vector<std::int64_t>> hsdp_groups(const rank_generator& g, std::int64_t replicas, bool across) {
  std::vector<std::vector<std::int64_t>> out;
  for (const auto& full : masked_groups(g, bit(parallel_dim::dp) | bit(parallel_dim::cp))) {
    const auto shard = static_cast<std::int64_t>(full.size()) / replicas;
    const std::int64_t n_groups = across ? shard : replicas;
    const std::int64_t n_members = across ? replicas : shard;
    for (std::int64_t i = 0; i < n_groups; ++i) {
      std::vector<std::int64_t>& members = out.emplace_back(static_cast<std::size_t>(n_members));
      for (std::int64_t j = 0; j < n_members; ++j) {
        members[static_cast<std::size_t>(j)] = full[static_cast<std::size_t>(across ? j * shard + i : i * shard + j)];
      }
    }
  }
  return out;
}

group_placement hsdp_placement(const rank_generator& g, std::int64_t replicas, bool across, std::int64_t gpn,
                               std::string* violation) {
  std::int64_t s = 1;
  std::int64_t n = 1;
  group_placement p;
  if (single_run(g, bit(parallel_dim::dp) | bit(parallel_dim::cp), s, n)) {
    const std::int64_t shard = n / replicas;
    if (across ? run_placement(s * shard, replicas, gpn, g.world, p) : run_placement(s, shard, gpn, g.world, p)) {
      return p;
    }
  }
  placement_scanner scan(g.world, gpn, across ? "dp-replicate" : "dp-shard", violation);
  for (const std::vector<std::int64_t>& group : hsdp_groups(g, replicas, across)) scan.add(group);
  return scan.result();
}

}  // namespace detail

using namespace detail;  // this file's own internals

namespace {

/// Which generator and mask a dimension's groups come from.
struct dim_groups {
  bool expert;
  unsigned mask;
  std::string_view name;
};

dim_groups groups_of(const job_spec& job, parallel_dim dim) {
  switch (dim) {
    case parallel_dim::tp: return {false, bit(parallel_dim::tp), "tp"};
    case parallel_dim::cp: return {false, bit(parallel_dim::cp), "cp"};
    case parallel_dim::ep: return {true, bit(parallel_dim::ep), "ep"};
    case parallel_dim::dp:
      return {false, bit(parallel_dim::dp) | bit(parallel_dim::cp), job.parallel.cp > 1 ? "dp-cp" : "dp"};
    case parallel_dim::pp: return {false, bit(parallel_dim::pp), "pp"};
    case parallel_dim::embedding: return {false, bit(parallel_dim::pp), "embedding"};
  }
  return {false, 0, ""};
}

std::int64_t group_size_of(const job_spec& job, parallel_dim dim) {
  const parallel_config& p = job.parallel;
  switch (dim) {
    case parallel_dim::tp: return p.tp;
    case parallel_dim::cp: return p.cp;
    case parallel_dim::ep: return p.ep;
    case parallel_dim::dp: return p.dp * p.cp;
    case parallel_dim::pp: return p.pp;
    case parallel_dim::embedding: return p.pp > 1 ? 2 : 1;
  }
  return 1;
}

}  // namespace

std::array<std::int8_t, 5> parse_rank_order(std::string_view text) {
  std::array<std::int8_t, 5> order{};
  int n = 0;
  unsigned seen = 0;
  std::size_t pos = 0;
  bool ok = true;
  while (ok && pos <= text.size()) {
    std::size_t end = text.find_first_of("-,", pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view tok = text.substr(pos, end - pos);
    const auto it = std::find(kDimNames.begin(), kDimNames.begin() + kNumOrderedDims, tok);
    const auto d = static_cast<int>(it - kDimNames.begin());
    if (it == kDimNames.begin() + kNumOrderedDims || (seen & (1u << d)) || n == kNumOrderedDims) {
      ok = false;
      break;
    }
    seen |= 1u << d;
    order[static_cast<std::size_t>(n++)] = static_cast<std::int8_t>(d);
    pos = end + 1;
  }
  if (!ok || n != kNumOrderedDims) {
    throw input_error("${parallel.rank_order}: '" + std::string(text) + "' is not a permutation of tp, cp, ep, dp, pp "
                      "(Megatron's order string, fastest-varying first, e.g. tp-cp-ep-dp-pp)");
  }
  return order;
}

std::string format_rank_order(const std::array<std::int8_t, 5>& order) {
  std::array<std::string_view, 5> names;
  for (std::size_t i = 0; i < order.size(); ++i) names[i] = kDimNames[static_cast<std::size_t>(order[i])];
  return fmt::format("{}", fmt::join(names, "-"));
}

std::string device_name(std::int64_t rank, std::int64_t gpus_per_node) {
  return fmt::format("n{}_g{}", rank / gpus_per_node, rank % gpus_per_node);
}

group_placement placement_of(const job_spec& job, parallel_dim dim) {
  const std::int64_t gpn = job.cluster.gpus_per_node;
  if (dim == parallel_dim::embedding) return embedding_placement(decoder_generator(job), gpn);
  if (dim == parallel_dim::dp && job.training.dp_replicas > 1) {
    group_placement p = hsdp_placement(decoder_generator(job), job.training.dp_replicas, false, gpn);
    p.group_size = job.resolved.dp_shards;
    return p;
  }
  const dim_groups dg = groups_of(job, dim);
  group_placement p = placement_for(dg.expert ? expert_generator(job) : decoder_generator(job), dg.mask, gpn, dg.name);
  p.group_size = group_size_of(job, dim);
  return p;
}

std::string placement_violation(const job_spec& job) {
  const std::int64_t gpn = job.cluster.gpus_per_node;
  const bool experts = job.parallel.ep > 1 || job.model.is_moe();
  std::string violation;
  const rank_generator dec = decoder_generator(job);
  for (const parallel_dim dim : {parallel_dim::tp, parallel_dim::cp, parallel_dim::dp, parallel_dim::pp}) {
    const dim_groups dg = groups_of(job, dim);
    placement_for(dec, dg.mask, gpn, dg.name, &violation);
    if (!violation.empty()) return violation;
  }
  embedding_placement(dec, gpn, &violation);
  if (violation.empty() && job.training.dp_replicas > 1) {
    for (const bool across : {false, true}) {
      if (violation.empty()) hsdp_placement(dec, job.training.dp_replicas, across, gpn, &violation);
    }
  }
  if (!violation.empty() || !experts) return violation;
  const rank_generator exp = expert_generator(job);
  placement_for(exp, bit(parallel_dim::ep), gpn, "ep", &violation);
  if (violation.empty()) placement_for(exp, bit(parallel_dim::dp), gpn, "expert-dp", &violation);
  if (job.training.dp_replicas > 1) {
    for (const bool across : {false, true}) {
      if (violation.empty()) hsdp_placement(exp, job.training.dp_replicas, across, gpn, &violation);
    }
  }
  return violation;
}

comm_group_set process_groups(const job_spec& job, parallel_dim dim) {
  comm_group_set set;
  const dim_groups dg = groups_of(job, dim);
  const rank_generator g = dg.expert ? expert_generator(job) : decoder_generator(job);
  set.name = dg.name;
  const bool hsdp = dim == parallel_dim::dp && job.training.dp_replicas > 1;
  if (hsdp) set.name = job.parallel.cp > 1 ? "dp-cp-shard" : "dp-shard";
  set.ranks = dim == parallel_dim::embedding ? embedding_groups(g)
              : hsdp                         ? hsdp_groups(g, job.training.dp_replicas, false)
                                             : masked_groups(g, dg.mask);
  set.group_size = set.ranks.empty() ? 0 : static_cast<std::int64_t>(set.ranks.front().size());
  set.num_groups = static_cast<std::int64_t>(set.ranks.size());
  set.placement = placement_of(job, dim);
  return set;
}

}  // namespace trainplan
