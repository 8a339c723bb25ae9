// Internals of the communication module shared by its four files: rank placement
// (src/core/estimate/comm_groups.cc, docs/formulas.md §4.1), collective pricing (src/core/estimate/comm_time.cc, §4.3), the stage
// classes (src/core/estimate/comm_stages.cc, §4.4) and the traffic tables with the summary (src/core/estimate/comm.cc, §4.2, §4.4).
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "trainplan/core/base/checked.h"
#include "trainplan/core/estimate/comm.h"

namespace trainplan::detail {

constexpr int kNumOrderedDims = 5;  // tp, cp, ep, dp, pp
constexpr unsigned bit(parallel_dim d) { return 1u << static_cast<unsigned>(d); }

// ---- rank generators and placement (§4.1) --------------------------------------------------------

/// Megatron's RankGenerator: the size of each dimension and the order, fastest first.
struct rank_generator {
  rank_generator(const std::array<std::int64_t, kNumOrderedDims>& sizes, const std::array<std::int8_t, 5>& rank_order,
                 std::int64_t world_size)
      : size(sizes), order(rank_order), world(world_size) {
    std::int64_t s = 1;
    for (std::size_t i = 0; i < kNumOrderedDims; ++i) {
      const auto d = static_cast<std::size_t>(order[i]);
      strides[d] = s;
      s *= size[d];
    }
  }

  std::array<std::int64_t, kNumOrderedDims> size;     ///< indexed by parallel_dim value
  std::array<std::int8_t, kNumOrderedDims> order;     ///< fastest first
  std::int64_t world;
  std::array<std::int64_t, kNumOrderedDims> strides;  ///< Π sizes of the dimensions before each in the order

  /// Product of the sizes of the dimensions before `dim` in the order.
  std::int64_t stride(int dim) const { return strides[static_cast<std::size_t>(dim)]; }
};

/// The decoder generator (parallel_state.py: ep = 1): TP, CP, DP, DP×CP, PP groups.
inline rank_generator decoder_generator(const job_spec& job) {
  const parallel_config& p = job.parallel;
  return {{p.tp, p.cp, 1, p.dp, p.pp}, p.rank_order, job.num_gpus};
}

/// The expert generator (parallel_state.py expert_decoder_rank_generator): ETP, EP and expert-DP over a
/// stage's TP×CP×DP ranks (parallel folding); with ETP = TP, EP is carved out of DP×CP.
inline rank_generator expert_generator(const job_spec& job) {
  const parallel_config& p = job.parallel;
  return {{job.resolved.etp, 1, p.ep, job.resolved.expert_dp, p.pp}, p.rank_order, job.num_gpus};
}

/// Megatron's generate_masked_orthogonal_rank_groups: every group varies the masked dimensions.
std::vector<std::vector<std::int64_t>> masked_groups(const rank_generator& g, unsigned mask);
/// The same groups one at a time, in one reused buffer of members in rank order.
void for_each_masked_group(const rank_generator& g, unsigned mask,
                           const std::function<void(const std::vector<std::int64_t>&)>& visit);

/// Placement by looking at every group of the `mask` dimensions (out of line: the summary needs it
/// only for layouts whose groups are not one aligned run). When a group spreads unevenly over its
/// nodes: throws input_error naming `name`, or with `violation` sets the message there instead.
group_placement placement_by_scan(const rank_generator& g, unsigned mask, std::int64_t gpn, std::string_view name,
                                  std::string* violation = nullptr);
group_placement embedding_placement_by_scan(const rank_generator& g, std::int64_t gpn,
                                            std::string* violation = nullptr);

/// Placement of groups that are one arithmetic run of `n` ranks at stride `s` on nodes of `gpn` GPUs
/// (§4.1), into `p`; false when the run is not aligned with the nodes (then the groups are scanned).
inline bool run_placement(std::int64_t s, std::int64_t n, std::int64_t gpn, std::int64_t world, group_placement& p) {
  p = group_placement{};
  p.group_size = n;
  if (n == 1 || world <= gpn || (s * n <= gpn && size_mod(gpn, s * n) == 0)) {
    p.concurrent_groups_per_node = std::max<std::int64_t>(1, size_div(std::min(gpn, world), n));
    return true;  // one node, NVLink
  }
  if (s >= gpn) {
    if (size_mod(s, gpn) != 0) return false;
    p.num_nodes = n;
    p.gpus_per_node = 1;
    p.concurrent_groups_per_node = gpn;
    p.link = link_kind::network;
    return true;
  }
  if (size_mod(gpn, s) != 0 || size_mod(s * n, gpn) != 0) return false;
  p.gpus_per_node = size_div(gpn, s);
  p.num_nodes = size_div(n, p.gpus_per_node);
  p.concurrent_groups_per_node = s;
  p.link = link_kind::hierarchical;
  return true;
}

/// The masked dimensions of size > 1 as one run (stride `s`, size `n`), when they are consecutive in
/// the order; false when they are not.
inline bool single_run(const rank_generator& g, unsigned mask, std::int64_t& s, std::int64_t& n) {
  std::int64_t stride = 1;
  s = 1;
  n = 1;
  bool open = false;
  bool closed = false;
  for (int i = 0; i < kNumOrderedDims; ++i) {
    const auto d = static_cast<std::size_t>(g.order[static_cast<std::size_t>(i)]);
    const std::int64_t size = g.size[d];
    if (size > 1) {
      if (mask & (1u << d)) {
        if (closed) return false;
        if (!open) s = stride;
        open = true;
        n *= size;
      } else if (open) {
        closed = true;
      }
    }
    stride *= size;
  }
  return true;
}

/// Placement of the groups of the `mask` dimensions of `g` on nodes of `gpn` GPUs (§4.1): closed form
/// when they form one aligned run (one dimension always does), else every group scanned.
inline group_placement placement_for(const rank_generator& g, unsigned mask, std::int64_t gpn, std::string_view name,
                                     std::string* violation = nullptr) {
  std::int64_t s = 1;
  std::int64_t n = 1;
  bool run = true;
  if ((mask & (mask - 1)) == 0) {  // one dimension (std::has_single_bit calls libgcc without POPCNT)
    const int d = std::countr_zero(mask);
    s = g.stride(d);
    n = g.size[static_cast<std::size_t>(d)];
  } else {
    run = single_run(g, mask, s, n);
  }
  group_placement p;
  if (run && run_placement(s, n, gpn, g.world, p)) return p;
  return placement_by_scan(g, mask, gpn, name, violation);
}

/// HSDP (§2.5): every DP×CP group cut into `replicas` runs of consecutive members (the groups that
/// shard, Megatron's intra-instance groups) or, `across`, the members at one place of every run (the
/// groups whose gradient shards are all-reduced, Megatron's inter-instance groups).
std::vector<std::vector<std::int64_t>> hsdp_groups(const rank_generator& g, std::int64_t replicas, bool across);
/// Their placement: closed form when DP×CP is one aligned run, else every group scanned (a group
/// spread unevenly over nodes throws, or sets `violation`).
group_placement hsdp_placement(const rank_generator& g, std::int64_t replicas, bool across, std::int64_t gpn,
                               std::string* violation = nullptr);

/// Placement of the embedding groups (first and last stage of every pipeline).
inline group_placement embedding_placement(const rank_generator& g, std::int64_t gpn, std::string* violation = nullptr) {
  group_placement p;
  const std::int64_t pp = g.size[static_cast<std::size_t>(parallel_dim::pp)];
  if (pp == 1) return p;
  p.group_size = 2;
  const std::int64_t s = g.stride(static_cast<int>(parallel_dim::pp));
  const std::int64_t distance = (pp - 1) * s;
  if (g.world <= gpn || (distance + s <= gpn && size_mod(gpn, pp * s) == 0)) return p;
  if (size_mod(s, gpn) == 0) {  // every stage fills whole nodes: first and last stage on different nodes
    p.num_nodes = 2;
    p.gpus_per_node = 1;
    p.concurrent_groups_per_node = gpn;
    p.link = link_kind::network;
    return p;
  }
  return embedding_placement_by_scan(g, gpn, violation);
}

// ---- stage classes (§4.4, src/core/estimate/comm_stages.cc) ----------------------------------------------------

/// What a collective's calls per iteration on a GPU of a pipeline stage are proportional to (§4.2):
/// each uniform row of a traffic table is `times` × one of these.
enum class per : std::uint8_t {
  layer,                 ///< transformer layers of the stage × m micro-batches
  recomputed_layer,      ///< layers recomputed (full recomputation) × m
  block,                 ///< residual blocks (2 per transformer layer, 1 per hybrid layer; §1.10) × m
  recomputed_block,      ///< blocks of the recomputed layers × m
  moe_layer,             ///< MoE layers × m
  recomputed_moe_layer,  ///< recomputed MoE layers × m
  first_stage,           ///< m on the first stage, 0 elsewhere
  last_stage,            ///< m on the last stage, 0 elsewhere
  chunk_boundary,        ///< (2v − [first stage] − [last stage]) × m: PP sends (or receives) of v model chunks
  end_stage,             ///< 1 on the first and on the last stage (the tied-embedding all-reduce)
  iteration,             ///< 1 on every stage
};
constexpr std::size_t kNumPer = 11;

/// Pipeline stages that communicate alike (same layers, parameters, ends), with how many there are.
struct stage_class {
  std::int64_t first_stage;
  std::int64_t num_stages;
  std::int64_t layers;
  layer_counts kinds;  ///< its layers by kind
  bool first;  ///< holds the embedding
  bool last;   ///< holds the output layer and the loss
  double dense_params;   ///< on one GPU, replicated over DP×CP
  double expert_params;  ///< on one GPU, replicated over expert-DP
  double units;          ///< ZeRO-3/FSDP gather units: one per layer, the embedding, the output/root module
  double gpus;           ///< GPUs of the class: num_stages × GPUs per stage
  std::array<double, kNumPer> per;  ///< per iteration on one GPU, indexed by `per`
};

/// The stage classes of one analysis: up to kInline held in place, more (irregular layouts with many
/// distinct stages) spill to the heap.
class class_list {
 public:
  static constexpr std::size_t kInline = 8;
  class_list() {}
  class_list(const class_list&) = delete;
  class_list& operator=(const class_list&) = delete;
  ~class_list() {}
  std::size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  const stage_class* begin() const { return data(); }
  const stage_class* end() const { return data() + n_; }
  stage_class& back() { return (spill_.empty() ? inline_ : spill_.data())[n_ - 1]; }
  /// A new class at the end, its fields unset: the caller writes every one.
  stage_class& append() {
    if (spill_.empty() && n_ < kInline) return inline_[n_++];
    if (spill_.empty()) spill_.assign(inline_, inline_ + kInline);
    ++n_;
    return spill_.emplace_back();
  }

 private:
  const stage_class* data() const { return spill_.empty() ? inline_ : spill_.data(); }
  union {
    stage_class inline_[kInline];  ///< the first n_ are set (left uninitialised: nothing to construct)
  };
  std::vector<stage_class> spill_;
  std::size_t n_ = 0;
};

/// The pipeline stages of `job`, grouped into classes of adjacent stages that communicate alike when
/// `merge` (the summary), one class per stage otherwise (the reference); `params` are its parameter counts
/// for its TP size (count_parameters).
void stage_classes(const job_spec& job, const parameter_breakdown& params, std::int64_t microbatches, bool merge,
                   class_list& classes);

// ---- pricing (§4.3) ------------------------------------------------------------------------------

/// One algorithm of a collective on one group: time = latency_s + bytes × s_per_byte.
struct linear_cost {
  double latency_s = 0;
  double s_per_byte = 0;
  std::string_view algorithm = "none";
};

/// A collective of one kind on one group, priced for any buffer: the faster of two algorithms (ring
/// and double binary tree for an all-reduce; the same one twice otherwise), and the bus factor of
/// what a GPU sends per byte of buffer. Worked out once per (kind, group) by price_of.
struct collective_price {
  linear_cost first;         ///< the ring (or the only algorithm)
  linear_cost second;        ///< the tree, taken when strictly faster
  double wire_factor = 0;    ///< nccl-tests' bus factor; 0.5 for send/recv rows (isends of isend + irecv)
  double time_factor = 1;    ///< 0.5 for send/recv rows: a GPU's paired isend and irecv run at once
  bool none = true;          ///< a group of one rank: nothing moves

  /// The time of one call with a buffer of `bytes` > 0 on a group of more than one rank (!none).
  collective_estimate at(double bytes) const {
    const double t1 = first.latency_s + bytes * first.s_per_byte;
    const double t2 = second.latency_s + bytes * second.s_per_byte;
    return t2 < t1 ? collective_estimate{t2, second.algorithm} : collective_estimate{t1, first.algorithm};
  }
};

/// A cluster's links as the pricing uses them, worked out once per job: NVLink per GPU and the node's
/// network (all its NICs), each × its achieved-to-peak efficiency, as seconds per byte (§4.3).
struct link_rates {
  explicit link_rates(const cluster_spec& c);
  double nvlink_s_per_byte;
  double nvlink_latency_s;        ///< per algorithm step
  double node_network_s_per_byte; ///< the whole node's NICs; a flow gets 1/flows of them
  double network_latency_s;       ///< per algorithm step
};

/// The price of `kind` on groups placed as `where` on the cluster's links (§4.3).
collective_price price_of(const link_rates& links, collective_kind kind, const group_placement& where);

}  // namespace trainplan::detail
