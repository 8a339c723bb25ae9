// Communication analysis: process groups, traffic per parallel dimension, collective time
// (docs/formulas.md §4).
#include "trainplan/comm.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <optional>
#include <string>

#include "checked.h"
#include "trainplan/error.h"

namespace trainplan {

namespace {

constexpr int kNumOrderedDims = 5;  // tp, cp, ep, dp, pp
constexpr std::array<std::string_view, 6> kDimNames = {"tp", "cp", "ep", "dp", "pp", "embedding"};
constexpr std::array<std::string_view, 6> kCollectiveNames = {"all_reduce",     "all_gather", "reduce_scatter",
                                                              "all_to_all",     "send_recv",  "broadcast"};
constexpr std::array<std::string_view, 3> kPhaseNames = {"forward", "backward", "optimizer"};
constexpr std::array<std::string_view, 3> kLinkNames = {"nvlink", "network", "hierarchical"};

/// One row of the collective table (nccl-tests' testColl): bus-bandwidth factor as a function of n,
/// and the latency steps of the ring (§4.3).
struct collective_traits {
  double factor_n_minus_1_over_n;  ///< coefficient of (n−1)/n in the bus factor
  double factor_constant;          ///< constant bus factor (broadcast, send/recv)
  double ring_steps_per_rank;      ///< latency steps = this × (n−1), or 1 when zero
};
constexpr std::array<collective_traits, 6> kCollectiveTable = {{
    {2.0, 0.0, 2.0},  // all_reduce: 2(n−1)/n, 2(n−1) steps
    {1.0, 0.0, 1.0},  // all_gather: (n−1)/n
    {1.0, 0.0, 1.0},  // reduce_scatter: (n−1)/n
    {1.0, 0.0, 1.0},  // all_to_all: (n−1)/n, n−1 pairwise exchanges
    {0.0, 1.0, 0.0},  // send_recv: 1, one step
    {0.0, 1.0, 1.0},  // broadcast: 1, n−1 pipelined ring steps
}};

const collective_traits& traits(collective_kind k) { return kCollectiveTable[static_cast<std::size_t>(k)]; }

// ---- rank generators (§4.1) ----------------------------------------------------------------------

/// Megatron's RankGenerator: the size of each dimension and the order, fastest first.
struct rank_generator {
  std::array<std::int64_t, kNumOrderedDims> size{};  ///< indexed by parallel_dim value
  std::array<std::int8_t, kNumOrderedDims> order{};
  std::int64_t world = 1;

  /// Product of the sizes of the dimensions before `dim` in the order.
  std::int64_t stride(int dim) const {
    std::int64_t s = 1;
    for (int i = 0; i < kNumOrderedDims && order[static_cast<std::size_t>(i)] != dim; ++i)
      s *= size[static_cast<std::size_t>(order[static_cast<std::size_t>(i)])];
    return s;
  }
};

constexpr unsigned bit(parallel_dim d) { return 1u << static_cast<unsigned>(d); }

/// The decoder generator (parallel_state.py: ep = 1): TP, CP, DP, DP×CP, PP groups.
rank_generator decoder_generator(const job_spec& job) {
  const parallel_config& p = job.parallel;
  return {{p.tp, p.cp, 1, p.dp, p.pp}, p.rank_order, job.num_gpus};
}

/// The expert generator: expert-TP = TP, CP folded into the expert-DP size, EP carved out of DP×CP.
rank_generator expert_generator(const job_spec& job) {
  const parallel_config& p = job.parallel;
  return {{p.tp, 1, p.ep, p.dp * p.cp / p.ep, p.pp}, p.rank_order, job.num_gpus};
}

/// Megatron's generate_masked_orthogonal_rank_groups: every group varies the masked dimensions.
std::vector<std::vector<std::int64_t>> masked_groups(const rank_generator& g, unsigned mask) {
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
  std::vector<std::vector<std::int64_t>> groups(static_cast<std::size_t>(num_groups));
  for (std::int64_t gi = 0; gi < num_groups; ++gi) {
    std::int64_t base = 0;
    std::int64_t rest = gi;
    for (int j = 0; j < n_out; ++j) {
      base += (rest % out_size[static_cast<std::size_t>(j)]) * out_stride[static_cast<std::size_t>(j)];
      rest /= out_size[static_cast<std::size_t>(j)];
    }
    auto& members = groups[static_cast<std::size_t>(gi)];
    members.resize(static_cast<std::size_t>(group_size));
    for (std::int64_t ri = 0; ri < group_size; ++ri) {
      std::int64_t r = base;
      std::int64_t q = ri;
      for (int j = 0; j < n_in; ++j) {
        r += (q % in_size[static_cast<std::size_t>(j)]) * in_stride[static_cast<std::size_t>(j)];
        q /= in_size[static_cast<std::size_t>(j)];
      }
      members[static_cast<std::size_t>(ri)] = r;
    }
  }
  return groups;
}

/// The embedding groups: first and last rank of every pipeline group (parallel_state.py).
std::vector<std::vector<std::int64_t>> embedding_groups(const rank_generator& g) {
  auto groups = masked_groups(g, bit(parallel_dim::pp));
  for (auto& members : groups) {
    if (members.size() > 1) members = {members.front(), members.back()};
  }
  return groups;
}

// ---- placement (§4.1) ----------------------------------------------------------------------------

/// Placement of groups that are one arithmetic run of `n` ranks at stride `s`, when the run is aligned
/// with the nodes; nullopt when it is not (then the groups are scanned).
std::optional<group_placement> run_placement(std::int64_t s, std::int64_t n, std::int64_t gpn, std::int64_t world) {
  group_placement p;
  p.group_size = n;
  if (n == 1 || world <= gpn || (s * n <= gpn && gpn % (s * n) == 0)) {
    p.concurrent_groups_per_node = std::max<std::int64_t>(1, std::min(gpn, world) / n);
    return p;  // one node, NVLink
  }
  if (s >= gpn) {
    if (s % gpn != 0) return std::nullopt;
    p.num_nodes = n;
    p.gpus_per_node = 1;
    p.concurrent_groups_per_node = gpn;
    p.link = link_kind::network;
    return p;
  }
  if (gpn % s != 0 || (s * n) % gpn != 0) return std::nullopt;
  p.gpus_per_node = gpn / s;
  p.num_nodes = n / p.gpus_per_node;
  p.concurrent_groups_per_node = s;
  p.link = link_kind::hierarchical;
  return p;
}

/// Placement found by looking at every group; throws when a group spreads unevenly over its nodes.
group_placement scan_placement(const std::vector<std::vector<std::int64_t>>& groups, std::int64_t gpn,
                               std::string_view name) {
  group_placement p;
  if (groups.empty()) return p;
  p.group_size = static_cast<std::int64_t>(groups.front().size());
  std::int64_t max_rank = 0;
  for (const auto& g : groups)
    for (auto r : g) max_rank = std::max(max_rank, r);
  std::vector<std::int64_t> groups_on_node(static_cast<std::size_t>(max_rank / gpn + 1), 0);
  bool first = true;
  for (const auto& g : groups) {
    std::vector<std::pair<std::int64_t, std::int64_t>> per_node;  // (node, members)
    for (auto r : g) {
      const std::int64_t node = r / gpn;
      auto it = std::find_if(per_node.begin(), per_node.end(), [&](const auto& e) { return e.first == node; });
      if (it == per_node.end()) per_node.emplace_back(node, 1);
      else ++it->second;
    }
    const std::int64_t m = per_node.front().second;
    const bool even = std::all_of(per_node.begin(), per_node.end(), [&](const auto& e) { return e.second == m; });
    const auto k = static_cast<std::int64_t>(per_node.size());
    if (!even || (!first && (k != p.num_nodes || m != p.gpus_per_node))) {
      std::string names;
      for (auto r : g) names += (names.empty() ? "" : " ") + device_name(r, gpn);
      throw input_error("the " + std::string(name) + " group [" + names + "] cannot be placed: its GPUs spread "
                        "unevenly over nodes of " + std::to_string(gpn) + " GPUs (--gpus-per-node); trainplan "
                        "models groups with the same number of GPUs on every node they span: choose sizes "
                        "(--tensor-model-parallel-size, --context-parallel-size, --expert-model-parallel-size, "
                        "--pipeline-model-parallel-size) or a --rank-order that divide or are multiples of it");
    }
    first = false;
    p.num_nodes = k;
    p.gpus_per_node = m;
    if (k > 1)
      for (const auto& e : per_node) ++groups_on_node[static_cast<std::size_t>(e.first)];
  }
  p.link = p.num_nodes == 1 ? link_kind::nvlink : p.gpus_per_node == 1 ? link_kind::network : link_kind::hierarchical;
  p.concurrent_groups_per_node =
      std::max<std::int64_t>(1, *std::max_element(groups_on_node.begin(), groups_on_node.end()));
  return p;
}

/// The masked dimensions of size > 1 as one run (stride, size), when they are consecutive in the order.
std::optional<std::pair<std::int64_t, std::int64_t>> single_run(const rank_generator& g, unsigned mask) {
  std::int64_t stride = 1;
  std::int64_t run_stride = 0;
  std::int64_t run_size = 1;
  bool open = false;
  bool closed = false;
  for (int i = 0; i < kNumOrderedDims; ++i) {
    const auto d = static_cast<std::size_t>(g.order[static_cast<std::size_t>(i)]);
    const std::int64_t n = g.size[d];
    if (n > 1) {
      if (mask & (1u << d)) {
        if (closed) return std::nullopt;
        if (!open) run_stride = stride;
        open = true;
        run_size *= n;
      } else if (open) {
        closed = true;
      }
    }
    stride *= n;
  }
  return std::make_pair(open ? run_stride : 1, run_size);
}

group_placement placement_for(const rank_generator& g, unsigned mask, std::int64_t gpn, std::string_view name) {
  if (auto run = single_run(g, mask)) {
    if (auto p = run_placement(run->first, run->second, gpn, g.world)) return *p;
  }
  return scan_placement(masked_groups(g, mask), gpn, name);
}

group_placement embedding_placement(const rank_generator& g, std::int64_t gpn) {
  const std::int64_t pp = g.size[static_cast<std::size_t>(parallel_dim::pp)];
  if (pp == 1) return {};
  const std::int64_t s = g.stride(static_cast<int>(parallel_dim::pp));
  const std::int64_t distance = (pp - 1) * s;
  if (g.world <= gpn || (distance + s <= gpn && gpn % (pp * s) == 0)) {
    group_placement p;
    p.group_size = 2;
    return p;
  }
  if (s % gpn == 0) {  // every stage fills whole nodes: first and last stage on different nodes
    group_placement p;
    p.group_size = 2;
    p.num_nodes = 2;
    p.gpus_per_node = 1;
    p.concurrent_groups_per_node = gpn;
    p.link = link_kind::network;
    return p;
  }
  return scan_placement(embedding_groups(g), gpn, "embedding");
}

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

// ---- time (§4.3) ---------------------------------------------------------------------------------

struct link_rate {
  double bytes_per_s;
  double latency_s;
};

/// Flat ring (or tree for all-reduce) over `n` ranks on one kind of link.
collective_estimate flat_time(collective_kind kind, double bytes, std::int64_t n, const link_rate& link) {
  if (n <= 1 && kind != collective_kind::send_recv) return {0, "none"};
  const collective_traits& t = traits(kind);
  const double steps = t.ring_steps_per_rank > 0 ? t.ring_steps_per_rank * static_cast<double>(n - 1) : 1.0;
  const double ring = steps * link.latency_s + bytes * bus_factor(kind, n) / link.bytes_per_s;
  if (kind == collective_kind::send_recv) return {ring, "p2p"};
  if (kind == collective_kind::all_to_all) return {ring, "pairwise"};
  if (kind != collective_kind::all_reduce) return {ring, "ring"};
  // NCCL's double binary tree: 2·⌈log2 n⌉ steps, each node sends and receives the buffer once per
  // phase (reduce, broadcast): 2·bytes (§4.3).
  const auto log2n = static_cast<double>(std::bit_width(static_cast<std::uint64_t>(n - 1)));  // ⌈log2 n⌉
  const double tree = 2.0 * log2n * link.latency_s + 2.0 * bytes / link.bytes_per_s;
  return tree < ring ? collective_estimate{tree, "tree"} : collective_estimate{ring, "ring"};
}

}  // namespace

std::string_view to_string(collective_kind k) { return kCollectiveNames[static_cast<std::size_t>(k)]; }
std::string_view to_string(comm_phase p) { return kPhaseNames[static_cast<std::size_t>(p)]; }
std::string_view to_string(parallel_dim d) { return kDimNames[static_cast<std::size_t>(d)]; }
std::string_view to_string(link_kind k) { return kLinkNames[static_cast<std::size_t>(k)]; }
std::string_view to_string(cp_comm_kind k) { return k == cp_comm_kind::p2p ? "p2p" : "all_gather"; }

double bus_factor(collective_kind k, std::int64_t group_size) {
  const collective_traits& t = traits(k);
  if (group_size <= 1) return t.factor_constant;
  const double n = static_cast<double>(group_size);
  return t.factor_n_minus_1_over_n * (n - 1) / n + t.factor_constant;
}

collective_estimate estimate_collective(const cluster_spec& c, collective_kind kind, double bytes,
                                        const group_placement& where) {
  const link_rate nvlink{c.gpu.intra_node_bandwidth_bytes_per_s * c.efficiency.intra_node, c.intra_node_latency_s};
  if (where.group_size <= 1 || bytes <= 0) return {0, "none"};
  if (where.link == link_kind::nvlink || where.num_nodes <= 1) return flat_time(kind, bytes, where.group_size, nvlink);

  // Across nodes: the node's NICs are shared by every GPU of the node sending at once (§4.3).
  const double node_bw = c.node_network_bandwidth_bytes_per_s() * c.efficiency.inter_node;
  const std::int64_t m = where.gpus_per_node;
  const std::int64_t k = where.num_nodes;
  const bool p2p = kind == collective_kind::send_recv;
  const double flows = static_cast<double>(where.concurrent_groups_per_node * (p2p ? 1 : m));
  const link_rate net{node_bw / std::max(1.0, flows), c.inter_node_latency_s};
  if (m <= 1 || p2p) return flat_time(kind, bytes, p2p ? 2 : k, net);

  // Hierarchical: inside the node on NVLink, across nodes on 1/m of the buffer per GPU.
  const double shard = bytes / static_cast<double>(m);
  switch (kind) {
    case collective_kind::all_reduce: {
      const collective_estimate inter = flat_time(collective_kind::all_reduce, shard, k, net);
      const double t = flat_time(collective_kind::reduce_scatter, bytes, m, nvlink).time_s + inter.time_s +
                       flat_time(collective_kind::all_gather, bytes, m, nvlink).time_s;
      return {t, inter.algorithm == std::string_view("tree") ? "hierarchical tree" : "hierarchical ring"};
    }
    case collective_kind::all_gather:
    case collective_kind::reduce_scatter:
      return {flat_time(kind, shard, k, net).time_s + flat_time(kind, bytes, m, nvlink).time_s, "hierarchical ring"};
    case collective_kind::broadcast:
      return {flat_time(kind, bytes, k, net).time_s + flat_time(kind, bytes, m, nvlink).time_s, "hierarchical ring"};
    case collective_kind::all_to_all: {
      const double n = static_cast<double>(where.group_size);
      const double md = static_cast<double>(m);
      const double off_node = bytes * (n - md) / n / net.bytes_per_s;
      const double on_node = bytes * (md - 1) / n / nvlink.bytes_per_s;
      const double lat = static_cast<double>(k - 1) * net.latency_s + static_cast<double>(m - 1) * nvlink.latency_s;
      return {lat + std::max(off_node, on_node), "pairwise"};
    }
    case collective_kind::send_recv: break;
  }
  return flat_time(kind, bytes, k, net);
}

double collective_time_s(const cluster_spec& cluster, collective_kind kind, double bytes, const group_placement& where) {
  return estimate_collective(cluster, kind, bytes, where).time_s;
}

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
    throw input_error("--rank-order: '" + std::string(text) + "' is not a permutation of tp, cp, ep, dp, pp "
                      "(Megatron's order string, fastest-varying first, e.g. tp-cp-ep-dp-pp)");
  }
  return order;
}

std::string format_rank_order(const std::array<std::int8_t, 5>& order) {
  std::string s;
  for (auto d : order) s += (s.empty() ? "" : "-") + std::string(kDimNames[static_cast<std::size_t>(d)]);
  return s;
}

std::string device_name(std::int64_t rank, std::int64_t gpus_per_node) {
  return "n" + std::to_string(rank / gpus_per_node) + "_g" + std::to_string(rank % gpus_per_node);
}

group_placement placement_of(const job_spec& job, parallel_dim dim) {
  const std::int64_t gpn = job.cluster.gpus_per_node;
  if (dim == parallel_dim::embedding) return embedding_placement(decoder_generator(job), gpn);
  const dim_groups dg = groups_of(job, dim);
  group_placement p = placement_for(dg.expert ? expert_generator(job) : decoder_generator(job), dg.mask, gpn, dg.name);
  p.group_size = group_size_of(job, dim);
  return p;
}

comm_group_set process_groups(const job_spec& job, parallel_dim dim) {
  comm_group_set set;
  const dim_groups dg = groups_of(job, dim);
  const rank_generator g = dg.expert ? expert_generator(job) : decoder_generator(job);
  set.name = dg.name;
  set.ranks = dim == parallel_dim::embedding ? embedding_groups(g) : masked_groups(g, dg.mask);
  set.group_size = set.ranks.empty() ? 0 : static_cast<std::int64_t>(set.ranks.front().size());
  set.num_groups = static_cast<std::int64_t>(set.ranks.size());
  set.placement = placement_of(job, dim);
  return set;
}

// ---- traffic (§4.2) ------------------------------------------------------------------------------

namespace {

/// Pipeline stages that communicate alike (same layers, parameters, ends), with how many there are.
struct stage_class {
  std::int64_t first_stage = 0;
  std::int64_t num_stages = 0;
  std::int64_t layers = 0;
  std::int64_t moe_layers = 0;
  std::int64_t recomputed_layers = 0;
  std::int64_t recomputed_moe_layers = 0;
  bool first = false;  ///< holds the embedding
  bool last = false;   ///< holds the output layer and the loss
  double dense_params = 0;   ///< on one GPU, replicated over DP×CP
  double expert_params = 0;  ///< on one GPU, replicated over expert-DP
  bool same_as(const stage_class& o) const {
    return layers == o.layers && moe_layers == o.moe_layers && recomputed_layers == o.recomputed_layers &&
           recomputed_moe_layers == o.recomputed_moe_layers && first == o.first && last == o.last &&
           dense_params == o.dense_params && expert_params == o.expert_params;
  }
};

/// Parameters of one layer on one GPU (§2.4: column/row-parallel weights split by t, norms and
/// row-parallel biases replicated; routed experts split by EP, then by expert-TP = t).
std::pair<double, double> layer_params_on_gpu(const model_spec& m, const layer_parameters& l, std::int64_t tp,
                                              std::int64_t ep, bool moe) {
  const double dense = static_cast<double>((l.qkv_weight + l.qkv_bias + l.proj_weight + l.fc1_weight + l.fc1_bias +
                                            l.fc2_weight) / tp + l.norms() + l.proj_bias + l.fc2_bias + l.router);
  double expert = 0;
  if (moe) {
    const std::int64_t gate = is_gated(m.activation) ? 2 : 1;
    const std::int64_t fe = m.moe.expert_ffn_hidden_size;
    const std::int64_t h = m.hidden_size;
    const std::int64_t split = h * fe * gate + (m.add_bias_linear ? fe * gate : 0) + fe * h;
    expert = static_cast<double>((m.moe.num_experts / ep) * (split / tp + (m.add_bias_linear ? h : 0)));
  }
  return {dense, expert};
}

std::vector<stage_class> stage_classes(const job_spec& job, const parameter_breakdown& params) {
  const model_spec& m = job.model;
  const parallel_config& p = job.parallel;
  const training_config& t = job.training;
  const auto dense_layer = layer_params_on_gpu(m, params.dense_layer, p.tp, p.ep, false);
  const auto moe_layer = m.is_moe() ? layer_params_on_gpu(m, params.moe_layer, p.tp, p.ep, true) : std::pair{0.0, 0.0};
  const double word = static_cast<double>(params.word_embeddings / p.tp);
  const double embedding = word + static_cast<double>(params.position_embeddings + params.embedding_norm);
  const bool deepspeed = t.framework == framework_kind::deepspeed;
  std::vector<stage_class> classes;
  classes.reserve(3);
  auto add = [&](std::int64_t stage, std::int64_t count, std::int64_t layers, std::int64_t moe_layers, bool first,
                 bool last) {
    stage_class c;
    c.first_stage = stage;
    c.num_stages = count;
    c.layers = layers;
    c.moe_layers = moe_layers;
    c.first = first;
    c.last = last;
    if (t.recompute == recompute_granularity::full) {
      // §4.2.1: uniform recomputes every layer; block the first N layers of each model chunk.
      c.recomputed_layers = t.recompute_method_ == recompute_method::uniform
                                ? c.layers
                                : std::min(c.layers, t.recompute_num_layers * p.vpp);
      c.recomputed_moe_layers = c.layers > 0 ? c.moe_layers * c.recomputed_layers / c.layers : 0;
    }
    const std::int64_t n_dense = c.layers - c.moe_layers;
    c.dense_params = static_cast<double>(n_dense) * (dense_layer.first + dense_layer.second) +
                     static_cast<double>(c.moe_layers) * moe_layer.first;
    c.expert_params = static_cast<double>(c.moe_layers) * moe_layer.second;
    if (c.first) c.dense_params += embedding;
    if (c.last) {
      c.dense_params += static_cast<double>(params.final_norm + params.output_layer / p.tp);
      if (m.tie_embeddings && p.pp > 1) c.dense_params += deepspeed ? embedding : word;
    }
    if (!classes.empty() && classes.back().same_as(c)) {
      classes.back().num_stages += count;
    } else {
      classes.push_back(c);
    }
  };
  // Regular layouts (even split, every layer alike): first, middle and last stage without walking the
  // layers (§2.2). Everything else follows pipeline_layout stage by stage.
  const bool all_alike = !m.is_moe() || (m.moe.layer_freq == 1 && m.moe.first_dense_layers == 0);
  const bool even = p.first_stage_layers < 0 && p.last_stage_layers < 0 && !p.embedding_as_stage &&
                    m.num_layers % p.pp == 0;
  if (all_alike && even) {
    const std::int64_t n = m.num_layers / p.pp;
    const std::int64_t n_moe = m.is_moe() ? n : 0;
    add(0, 1, n, n_moe, true, p.pp == 1);
    if (p.pp > 2) add(1, p.pp - 2, n, n_moe, false, false);
    if (p.pp > 1) add(p.pp - 1, 1, n, n_moe, false, true);
    return classes;
  }
  for (const stage_layout& st : pipeline_layout(job)) {
    add(st.stage, 1, st.num_layers, st.num_moe_layers, st.has_embedding, st.has_output);
  }
  return classes;
}

/// A collective the table emits for one stage class: calls per iteration on one GPU and the buffer.
struct emitted {
  collective_kind kind;
  comm_phase phase;
  std::string_view what;
  int group;            ///< index into the analysis' group table
  double calls;         ///< per iteration, one GPU of the class
  double bytes;         ///< per call
};

/// The rows one table emits for one stage class, and the collectives being accumulated from them;
/// fixed capacity, made once per analysis and reused by every dimension.
struct row_sink {
  static constexpr std::size_t kCapacity = 16;
  std::array<emitted, kCapacity> rows;
  std::array<comm_collective, kCapacity> collectives;
  std::size_t n = 0;
  void push_back(const emitted& e) {
    TRAINPLAN_CHECK(n < kCapacity);
    rows[n++] = e;
  }
  void clear() { n = 0; }
  std::size_t size() const { return n; }
  const emitted& operator[](std::size_t i) const { return rows[i]; }
};

enum group_ref : int { g_tp, g_cp, g_ep, g_dp, g_edp, g_pp, g_emb, g_world, g_mp, g_count };
constexpr std::array<std::string_view, g_count> kGroupNames = {"tp", "cp", "ep", "dp", "expert-dp",
                                                               "pp", "embedding", "world", "model-parallel"};

/// Everything the traffic tables need, computed once per job.
struct comm_context {
  const job_spec& job;
  const parameter_breakdown& params;
  double act_bytes = 2;        ///< bytes of one activation element
  double grad_bytes = 4;       ///< bytes of one gradient element as it is reduced (§4.2.4)
  double param_bytes = 2;      ///< bytes of one parameter element as it is gathered
  double m = 1;                ///< micro-batches per iteration
  double tokens = 0;           ///< s/c · b: tokens of one micro-batch on one CP rank
  bool sp = false;
  std::array<group_placement, g_count> placement{};
  std::array<std::int64_t, g_count> size{};
  std::array<std::string_view, g_count> name{};

  /// Estimates already made in this analysis, by (kind, group, bytes): most rows share a buffer.
  struct priced_entry {
    double bytes;
    int key;  ///< kind × g_count + group
    collective_estimate est;
  };
  mutable std::array<priced_entry, 16> memo;
  mutable std::size_t memo_size = 0;
  collective_estimate price(collective_kind kind, int group, double bytes) const {
    const int key = static_cast<int>(kind) * g_count + group;
    for (std::size_t i = 0; i < memo_size; ++i) {
      const priced_entry& e = memo[i];
      if (e.bytes == bytes && e.key == key) return e.est;
    }
    const collective_estimate est =
        estimate_collective(job.cluster, kind, bytes, placement[static_cast<std::size_t>(group)]);
    if (memo_size < memo.size()) memo[memo_size++] = {bytes, key, est};
    return est;
  }
};

/// Gradient and parameter dtypes on the wire (§4.2.4): Megatron reduces its main grads (fp32 with
/// --accumulate-allreduce-grads-in-fp32, forced with bf16); DeepSpeed's BF16_Optimizer (stage 0/1)
/// reduces fp32 grads, stages 2/3 reduce in the model dtype; FSDP in its reduce dtype (fp32 here).
double wire_grad_bytes(const training_config& t) {
  const bool fp32 = t.accumulate_allreduce_grads_in_fp32 &&
                    !(t.framework == framework_kind::deepspeed && t.zero_stage >= 2);
  return fp32 ? 4.0 : static_cast<double>(bytes_of(t.precision));
}

// -- TP (§4.2.1) --
void tp_table(const comm_context& x, const stage_class& c, row_sink& out) {
  const auto& p = x.job.parallel;
  if (p.tp == 1) return;
  const double a = x.tokens * static_cast<double>(x.job.model.hidden_size) * x.act_bytes;  // full tensor
  const double L = static_cast<double>(c.layers) * x.m;
  const double R = static_cast<double>(c.recomputed_layers) * x.m;
  const double first = c.first ? x.m : 0;
  const double last = c.last ? x.m : 0;
  const double ce = x.tokens * 4.0;  // fp32 [s, b] of the vocab-parallel cross-entropy
  using k = collective_kind;
  using ph = comm_phase;
  if (!x.sp) {
    out.push_back({k::all_reduce, ph::forward, "attention and MLP output all-reduce (2 per layer)", g_tp, 2 * L, a});
    out.push_back({k::all_reduce, ph::backward, "QKV and fc1 input-gradient all-reduce (2 per layer)", g_tp, 2 * L, a});
    out.push_back({k::all_reduce, ph::backward, "recomputed forward all-reduce (2 per recomputed layer)", g_tp, 2 * R, a});
    out.push_back({k::all_reduce, ph::forward, "vocab-parallel embedding output all-reduce", g_tp, first, a});
    out.push_back({k::all_reduce, ph::backward, "output layer input-gradient all-reduce", g_tp, last, a});
  } else {
    out.push_back({k::all_gather, ph::forward, "sequence all-gather before QKV and fc1 (2 per layer)", g_tp, 2 * L, a});
    out.push_back({k::reduce_scatter, ph::forward, "reduce-scatter after projection and fc2 (2 per layer)", g_tp, 2 * L, a});
    out.push_back({k::all_gather, ph::backward,
                   "output-gradient all-gather (2) and input re-gather for weight gradients (2) per layer", g_tp, 4 * L, a});
    out.push_back({k::reduce_scatter, ph::backward, "QKV and fc1 input-gradient reduce-scatter (2 per layer)", g_tp, 2 * L, a});
    out.push_back({k::all_gather, ph::backward, "recomputed forward all-gather (2 per recomputed layer)", g_tp, 2 * R, a});
    out.push_back({k::reduce_scatter, ph::backward, "recomputed forward reduce-scatter (2 per recomputed layer)", g_tp, 2 * R, a});
    out.push_back({k::reduce_scatter, ph::forward, "vocab-parallel embedding output reduce-scatter", g_tp, first, a});
    out.push_back({k::all_gather, ph::forward, "sequence all-gather before the output layer", g_tp, last, a});
    out.push_back({k::reduce_scatter, ph::backward, "output layer input-gradient reduce-scatter", g_tp, last, a});
  }
  out.push_back({k::all_reduce, ph::forward, "cross-entropy max, target logit and sum-exp all-reduces (3)", g_tp,
                 3 * last, ce});
}

// -- CP (§4.2.2) --
void cp_table(const comm_context& x, const stage_class& c, row_sink& out) {
  const auto& p = x.job.parallel;
  if (p.cp == 1) return;
  const model_spec& md = x.job.model;
  // K and V of the local sequence chunk and the local (TP-split) query groups.
  const double kv = 2.0 * x.tokens * static_cast<double>(md.kv_width() / p.tp) * x.act_bytes;
  const double L = static_cast<double>(c.layers) * x.m;
  const double R = static_cast<double>(c.recomputed_layers) * x.m;
  const double steps = static_cast<double>(p.cp - 1);
  using k = collective_kind;
  using ph = comm_phase;
  if (p.cp_comm == cp_comm_kind::p2p) {
    out.push_back({k::send_recv, ph::forward, "K/V ring exchange (isend + irecv per step, c−1 steps per layer)", g_cp,
                   2 * steps * L, kv});
    out.push_back({k::send_recv, ph::backward, "K/V and dK/dV ring exchange (2 × (isend + irecv) per step)", g_cp,
                   4 * steps * L, kv});
    out.push_back({k::send_recv, ph::backward, "recomputed forward K/V ring exchange", g_cp, 2 * steps * R, kv});
  } else {
    const double gathered = kv / 2.0 * static_cast<double>(p.cp);  // one of K or V, whole sequence
    out.push_back({k::all_gather, ph::forward, "K and V all-gather (2 per layer)", g_cp, 2 * L, gathered});
    out.push_back({k::all_gather, ph::backward, "K and V re-gather (2 per layer)", g_cp, 2 * L, gathered});
    out.push_back({k::reduce_scatter, ph::backward, "dK and dV reduce-scatter (2 per layer)", g_cp, 2 * L, gathered});
    out.push_back({k::all_gather, ph::backward, "recomputed forward K and V all-gather", g_cp, 2 * R, gathered});
  }
}

// -- EP (§4.2.5) --
void ep_table(const comm_context& x, const stage_class& c, row_sink& out) {
  const auto& p = x.job.parallel;
  const model_spec& md = x.job.model;
  if (p.ep == 1 || !md.is_moe()) return;
  const double tokens = x.tokens / (x.sp ? static_cast<double>(p.tp) : 1.0);
  const double sent = tokens * static_cast<double>(md.moe.router_topk * md.hidden_size) * x.act_bytes;
  const double L = static_cast<double>(c.moe_layers) * x.m;
  const double R = static_cast<double>(c.recomputed_moe_layers) * x.m;
  using k = collective_kind;
  out.push_back({k::all_to_all, comm_phase::forward, "token dispatch and combine (2 per MoE layer)", g_ep, 2 * L, sent});
  out.push_back({k::all_to_all, comm_phase::backward, "gradient dispatch and combine (2 per MoE layer)", g_ep, 2 * L, sent});
  out.push_back({k::all_to_all, comm_phase::backward, "recomputed forward dispatch and combine", g_ep, 2 * R, sent});
}

// -- PP (§4.2.3) --
void pp_table(const comm_context& x, const stage_class& c, row_sink& out) {
  const auto& p = x.job.parallel;
  if (p.pp == 1) return;
  const bool split = x.sp || p.pp_scatter_gather;
  const double full = x.tokens * static_cast<double>(x.job.model.hidden_size) * x.act_bytes;
  const double msg = split ? full / static_cast<double>(p.tp) : full;
  const double v = static_cast<double>(p.vpp);
  // Per micro-batch, each model chunk sends its output forward and its input gradient backward; the
  // first chunk of stage 0 receives nothing forward and the last chunk of the last stage sends nothing.
  const double fwd = (v - (c.last ? 1 : 0)) + (v - (c.first ? 1 : 0));  // isends + irecvs
  const double bwd = (v - (c.first ? 1 : 0)) + (v - (c.last ? 1 : 0));
  using k = collective_kind;
  out.push_back({k::send_recv, comm_phase::forward, "activation isend + irecv between stages", g_pp, fwd * x.m, msg});
  out.push_back({k::send_recv, comm_phase::backward, "activation-gradient isend + irecv between stages", g_pp,
                 bwd * x.m, msg});
  if (p.pp_scatter_gather && !x.sp && p.tp > 1) {
    const double recvs = ((v - (c.first ? 1 : 0)) + (v - (c.last ? 1 : 0))) * x.m;
    out.push_back({k::all_gather, comm_phase::forward, "TP all-gather of each received 1/t chunk (scatter/gather)",
                   g_tp, recvs, full});
  }
}

// -- tied embedding (§4.2.6) --
void embedding_table(const comm_context& x, const stage_class& c, row_sink& out) {
  const auto& p = x.job.parallel;
  const model_spec& md = x.job.model;
  if (p.pp == 1 || !md.tie_embeddings) return;
  const parameter_breakdown& params = x.params;
  double elems = static_cast<double>(params.word_embeddings / p.tp);
  if (x.job.training.framework == framework_kind::deepspeed) {
    elems += static_cast<double>(params.position_embeddings + params.embedding_norm);  // the whole tied module
  }
  out.push_back({collective_kind::all_reduce, comm_phase::backward,
                 "tied word-embedding gradient all-reduce, first and last stage", g_emb,
                 (c.first || c.last) ? 1.0 : 0.0, elems * x.grad_bytes});
}

// -- DP (§4.2.4): one table of (framework, ZeRO stage) → collectives --
enum class dp_count { per_iteration, per_microbatch, per_unit_per_microbatch };
enum class dp_bytes { grads, params };
struct dp_op {
  collective_kind kind;
  comm_phase phase;
  dp_bytes bytes;
  dp_count count;
  std::string_view what;
  std::string_view what_expert;  ///< the same over the expert-DP group
};
struct dp_schedule {
  framework_kind framework;
  int zero_stage;
  bool bf16_optimizer;  ///< DeepSpeed bf16 stage 0/1: BF16_Optimizer all-reduces fp32 grads
  std::array<dp_op, 3> ops;
  int num_ops;
};
using ck = collective_kind;
using cph = comm_phase;
constexpr dp_op kGradAllReduce{ck::all_reduce, cph::backward, dp_bytes::grads, dp_count::per_iteration,
                               "gradient all-reduce", "expert gradient all-reduce"};
constexpr dp_op kGradReduceScatter{ck::reduce_scatter, cph::backward, dp_bytes::grads, dp_count::per_iteration,
                                   "gradient reduce-scatter", "expert gradient reduce-scatter"};
constexpr dp_op kParamAllGather{ck::all_gather, cph::optimizer, dp_bytes::params, dp_count::per_iteration,
                                "updated-parameter all-gather", "updated expert-parameter all-gather"};
constexpr dp_op kMicroReduceScatter{ck::reduce_scatter, cph::backward, dp_bytes::grads, dp_count::per_microbatch,
                                    "gradient reduce-scatter, every micro-batch",
                                    "expert gradient reduce-scatter, every micro-batch"};
constexpr dp_op kUnitReduceScatter{ck::reduce_scatter, cph::backward, dp_bytes::grads,
                                   dp_count::per_unit_per_microbatch, "gradient reduce-scatter per layer",
                                   "expert gradient reduce-scatter per layer"};
constexpr dp_op kGatherFwd{ck::all_gather, cph::forward, dp_bytes::params, dp_count::per_unit_per_microbatch,
                           "parameter all-gather per layer, forward", "expert parameter all-gather, forward"};
constexpr dp_op kGatherBwd{ck::all_gather, cph::backward, dp_bytes::params, dp_count::per_unit_per_microbatch,
                           "parameter all-gather per layer, backward", "expert parameter all-gather, backward"};
constexpr std::array<dp_schedule, 10> kDpSchedules = {{
    {framework_kind::megatron, 0, false, {kGradAllReduce}, 1},
    {framework_kind::megatron, 1, false, {kGradReduceScatter, kParamAllGather}, 2},
    {framework_kind::deepspeed, 0, false, {kGradAllReduce}, 1},
    {framework_kind::deepspeed, 1, true, {kGradAllReduce, kParamAllGather}, 2},
    {framework_kind::deepspeed, 1, false, {kGradReduceScatter, kParamAllGather}, 2},
    {framework_kind::deepspeed, 2, false, {kMicroReduceScatter, kParamAllGather}, 2},
    {framework_kind::deepspeed, 3, false, {kGatherFwd, kGatherBwd, kMicroReduceScatter}, 3},
    {framework_kind::fsdp, 0, false, {kGradAllReduce}, 1},
    {framework_kind::fsdp, 2, false, {kGatherFwd, kUnitReduceScatter}, 2},
    {framework_kind::fsdp, 3, false, {kGatherFwd, kGatherBwd, kUnitReduceScatter}, 3},
}};

const dp_schedule& dp_schedule_for(const training_config& t) {
  const bool bf16_opt = t.framework == framework_kind::deepspeed && t.zero_stage <= 1 && t.precision == dtype::bf16;
  for (const auto& s : kDpSchedules) {
    if (s.framework == t.framework && s.zero_stage == t.zero_stage && (s.zero_stage != 1 || s.bf16_optimizer == bf16_opt))
      return s;
  }
  return kDpSchedules.front();
}

/// Buffers per reduction: Megatron without --overlap-grad-reduce uses one bucket; DeepSpeed buckets
/// reduce_bucket_size = allgather_bucket_size = 5e8 elements; --bucket-size-bytes overrides (§4.2.4).
double bucket_calls(const training_config& t, double elements, double elem_bytes) {
  if (elements <= 0) return 0;
  if (t.bucket_size_bytes > 0) return std::ceil(elements * elem_bytes / static_cast<double>(t.bucket_size_bytes));
  if (t.framework == framework_kind::deepspeed) return std::ceil(elements / 5e8);
  return 1;
}

void dp_rows(const comm_context& x, const stage_class& c, double params, bool expert, row_sink& out) {
  const training_config& t = x.job.training;
  const dp_schedule& s = dp_schedule_for(t);
  // ZeRO-3/FSDP units: one per transformer layer, plus the embedding and the output/root module.
  const double units = static_cast<double>(c.layers) + (c.first ? 1 : 0) + (c.last && !c.first ? 1 : 0);
  for (int i = 0; i < s.num_ops; ++i) {
    const dp_op& op = s.ops[static_cast<std::size_t>(i)];
    const double elem = op.bytes == dp_bytes::grads ? x.grad_bytes : x.param_bytes;
    double calls = 0;
    double bytes = 0;
    if (params > 0) {
      if (op.count == dp_count::per_unit_per_microbatch) {
        calls = units * x.m;
        bytes = params * elem / units;  // the mean unit
      } else {
        const double buckets = bucket_calls(t, params, elem);
        calls = buckets * (op.count == dp_count::per_microbatch ? x.m : 1.0);
        bytes = params * elem / buckets;
      }
    }
    out.push_back({op.kind, op.phase, expert ? op.what_expert : op.what, expert ? g_edp : g_dp, calls, bytes});
  }
}

void dp_table(const comm_context& x, const stage_class& c, row_sink& out) {
  if (x.size[g_dp] > 1) dp_rows(x, c, c.dense_params, false, out);
  if (x.job.model.is_moe() && x.size[g_edp] > 1) dp_rows(x, c, c.expert_params, true, out);
}

// -- scalars (§4.2.7) --
void scalar_table(const comm_context& x, const stage_class& c, row_sink& out) {
  const training_config& t = x.job.training;
  if (x.size[g_dp] > 1) {
    out.push_back({collective_kind::all_reduce, comm_phase::forward, "loss average over DP", g_dp, c.last ? x.m : 0, 4});
  }
  const int norm_group = t.zero_stage >= 1 ? g_world : g_mp;
  if (x.size[norm_group] > 1) {
    out.push_back({collective_kind::all_reduce, comm_phase::optimizer, "gradient-norm all-reduce", norm_group, 1, 4});
    if (t.precision == dtype::fp16) {
      out.push_back({collective_kind::all_reduce, comm_phase::optimizer, "fp16 found-inf all-reduce", norm_group, 1, 4});
    }
  }
}

using table_fn = void (*)(const comm_context&, const stage_class&, row_sink&);
constexpr std::array<table_fn, 7> kTables = {tp_table, cp_table, ep_table, dp_table, pp_table, embedding_table,
                                             scalar_table};

/// Run one table over the stage classes and fill `dim` (§4.4: per-GPU = busiest stage, cluster = Σ).
/// A row's displayed calls and buffer are those of the class where it moves the most bytes; rows that
/// never run are dropped.
void fill_dimension(const comm_context& x, const std::vector<stage_class>& classes, table_fn table,
                    row_sink& scratch, comm_dimension& dim) {
  const double gpus_per_stage = static_cast<double>(x.job.num_gpus / x.job.parallel.pp);
  std::array<double, row_sink::kCapacity> row_best;
  std::array<comm_collective, row_sink::kCapacity>& rows = scratch.collectives;
  std::size_t num_rows = 0;
  double best_bytes = -1;
  for (const stage_class& c : classes) {
    scratch.clear();
    table(x, c, scratch);
    if (scratch.size() == 0) return;  // this dimension does not talk in this job
    if (num_rows == 0) {
      num_rows = scratch.size();
      for (std::size_t i = 0; i < scratch.size(); ++i) {
        const emitted& e = scratch[i];
        comm_collective& out = rows[i];
        out = comm_collective{};
        const group_placement& where = x.placement[static_cast<std::size_t>(e.group)];
        out.kind = e.kind;
        out.phase = e.phase;
        out.what = e.what;
        out.group = x.name[static_cast<std::size_t>(e.group)];
        out.group_size = x.size[static_cast<std::size_t>(e.group)];
        out.link = where.group_size > 1 ? where.link : link_kind::nvlink;
        row_best[i] = 0;
      }
    }
    double calls = 0, bytes = 0, wire = 0, time = 0;
    for (std::size_t i = 0; i < scratch.size(); ++i) {
      const emitted& e = scratch[i];
      if (e.calls <= 0) continue;
      comm_collective& out = rows[i];
      const collective_estimate est = x.price(e.kind, e.group, e.bytes);
      const double moved = e.calls * e.bytes;
      if (moved > row_best[i] || out.calls_per_iteration == 0) {
        row_best[i] = moved;
        out.bytes_per_call = e.bytes;
        out.calls_per_iteration = static_cast<std::int64_t>(e.calls);
        out.time_per_call_s = est.time_s;
        out.algorithm = est.algorithm;
      }
      const double n = gpus_per_stage * static_cast<double>(c.num_stages);
      out.calls_per_iteration_cluster += static_cast<std::int64_t>(n * e.calls);
      out.bytes_per_iteration_cluster += n * moved;
      calls += e.calls;
      bytes += moved;
      // What the GPU sends: the bus factor; of a row of isends and irecvs, the isends.
      wire += e.kind == collective_kind::send_recv ? moved / 2 : moved * bus_factor(e.kind, out.group_size);
      time += e.calls * est.time_s;
    }
    if (bytes > best_bytes || (bytes == best_bytes && calls > static_cast<double>(dim.calls_per_iteration_per_gpu))) {
      best_bytes = bytes;
      dim.busiest_stage = c.first_stage;
      dim.calls_per_iteration_per_gpu = static_cast<std::int64_t>(calls);
      dim.bytes_per_iteration_per_gpu = bytes;
      dim.wire_bytes_per_iteration_per_gpu = wire;
      dim.time_per_iteration_s = time;
    }
  }
  std::size_t running = 0;
  for (std::size_t i = 0; i < num_rows; ++i) running += rows[i].calls_per_iteration > 0 ? 1 : 0;
  dim.collectives.reserve(running);
  for (std::size_t i = 0; i < num_rows; ++i) {
    const comm_collective& c = rows[i];
    if (c.calls_per_iteration == 0) continue;
    dim.collectives.push_back(c);
    dim.calls_per_iteration_cluster += c.calls_per_iteration_cluster;
    dim.bytes_per_iteration_cluster += c.bytes_per_iteration_cluster;
  }
}

comm_group_set summary_set(const comm_context& x, int g) {
  comm_group_set s;
  s.name = x.name[static_cast<std::size_t>(g)];
  s.group_size = x.size[static_cast<std::size_t>(g)];
  s.num_groups = s.group_size > 0 ? x.job.num_gpus / s.group_size : 0;
  s.placement = x.placement[static_cast<std::size_t>(g)];
  return s;
}

/// Placement of a group of `n` ranks covering `a` and `b`'s nodes (the model-parallel group, §4.2.7).
group_placement combined_placement(std::int64_t n, const group_placement& a, const group_placement& b,
                                   std::int64_t gpn) {
  group_placement p;
  p.group_size = n;
  p.num_nodes = std::max<std::int64_t>(1, a.num_nodes * b.num_nodes);
  p.gpus_per_node = std::max<std::int64_t>(1, n / p.num_nodes);
  p.concurrent_groups_per_node = std::max<std::int64_t>(1, gpn / p.gpus_per_node);
  p.link = p.num_nodes == 1 ? link_kind::nvlink : p.gpus_per_node == 1 ? link_kind::network : link_kind::hierarchical;
  return p;
}

}  // namespace

comm_report summarize_comm(const job_spec& job) {
  const parallel_config& p = job.parallel;
  const training_config& t = job.training;
  const std::int64_t gpn = job.cluster.gpus_per_node;
  const parameter_breakdown params = count_parameters(job.model, p.tp);
  comm_context x{job, params};
  x.act_bytes = static_cast<double>(bytes_of(t.precision));
  x.grad_bytes = wire_grad_bytes(t);
  x.param_bytes = static_cast<double>(bytes_of(t.precision));
  x.m = static_cast<double>(job.num_microbatches());
  x.tokens = static_cast<double>(job.model.seq_length / p.cp * t.micro_batch_size);
  x.sp = p.sequence_parallel && p.tp > 1;

  const rank_generator dec = decoder_generator(job);
  x.placement[g_tp] = placement_for(dec, bit(parallel_dim::tp), gpn, "tp");
  x.placement[g_cp] = placement_for(dec, bit(parallel_dim::cp), gpn, "cp");
  x.placement[g_dp] = placement_for(dec, bit(parallel_dim::dp) | bit(parallel_dim::cp), gpn, p.cp > 1 ? "dp-cp" : "dp");
  x.placement[g_pp] = placement_for(dec, bit(parallel_dim::pp), gpn, "pp");
  x.placement[g_emb] = embedding_placement(dec, gpn);
  x.size = {p.tp, p.cp, p.ep, p.dp * p.cp, p.dp * p.cp / p.ep, p.pp, p.pp > 1 ? 2 : 1, job.num_gpus, p.tp * p.pp};
  x.name = kGroupNames;
  x.name[g_dp] = p.cp > 1 ? "dp-cp" : "dp";
  if (p.ep > 1 || job.model.is_moe()) {
    const rank_generator exp = expert_generator(job);
    x.placement[g_ep] = placement_for(exp, bit(parallel_dim::ep), gpn, "ep");
    x.placement[g_edp] = placement_for(exp, bit(parallel_dim::dp), gpn, "expert-dp");
  }
  x.placement[g_world] = combined_placement(job.num_gpus, {.num_nodes = detail::ceil_div(job.num_gpus, gpn)}, {}, gpn);
  x.placement[g_mp] = combined_placement(p.tp * p.pp, x.placement[g_tp], x.placement[g_pp], gpn);
  for (int g = 0; g < g_count; ++g) x.placement[static_cast<std::size_t>(g)].group_size = x.size[static_cast<std::size_t>(g)];

  const std::vector<stage_class> classes = stage_classes(job, params);

  comm_report r;
  r.rank_order = p.rank_order;
  r.world_size = job.num_gpus;
  r.gpus_per_node = gpn;
  r.num_nodes = detail::ceil_div(job.num_gpus, gpn);
  r.num_microbatches = job.num_microbatches();
  constexpr std::array<int, 6> kDimGroup = {g_tp, g_cp, g_ep, g_dp, g_pp, g_emb};
  row_sink scratch;
  for (std::size_t d = 0; d < r.dimensions.size(); ++d) {
    comm_dimension& dim = r.dimensions[d];
    dim.dim = static_cast<parallel_dim>(d);
    dim.groups = summary_set(x, kDimGroup[d]);
    if (dim.dim == parallel_dim::embedding) dim.groups.num_groups = p.pp > 1 ? job.num_gpus / p.pp : 0;
    if (dim.dim == parallel_dim::dp && job.model.is_moe()) dim.expert_groups = summary_set(x, g_edp);
    else dim.expert_groups.group_size = 0;
    fill_dimension(x, classes, kTables[d], scratch, dim);
    r.calls_per_iteration_cluster += dim.calls_per_iteration_cluster;
    r.bytes_per_iteration_cluster += dim.bytes_per_iteration_cluster;
    r.time_per_iteration_per_gpu_s += dim.time_per_iteration_s;
  }
  r.scalars.dim = parallel_dim::dp;
  r.scalars.groups = summary_set(x, t.zero_stage >= 1 ? g_world : g_mp);
  r.scalars.expert_groups.group_size = 0;
  fill_dimension(x, classes, scalar_table, scratch, r.scalars);
  r.calls_per_iteration_cluster += r.scalars.calls_per_iteration_cluster;
  r.bytes_per_iteration_cluster += r.scalars.bytes_per_iteration_cluster;
  r.time_per_iteration_per_gpu_s += r.scalars.time_per_iteration_s;
  return r;
}

comm_report analyze_comm(const job_spec& job) {
  comm_report r = summarize_comm(job);
  for (std::size_t d = 0; d < r.dimensions.size(); ++d) {
    comm_dimension& dim = r.dimensions[d];
    comm_group_set full = process_groups(job, dim.dim);
    dim.groups.ranks = std::move(full.ranks);
    if (dim.expert_groups.group_size > 0) {
      dim.expert_groups.ranks = masked_groups(expert_generator(job), bit(parallel_dim::dp));
    }
  }
  return r;
}

}  // namespace trainplan
