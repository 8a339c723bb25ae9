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

/// Flat ring (or tree for all-reduce) over `n` ranks on one kind of link: latency steps × α plus the
/// buffer × bus factor F(n) / bandwidth, the steps and F as kCollectiveTable has them (§4.3).
[[gnu::always_inline]] inline collective_estimate flat_time(collective_kind kind, double bytes, std::int64_t n,
                                                          const link_rate& link) {
  if (n <= 1 && kind != collective_kind::send_recv) return {0, "none"};
  const double nd = static_cast<double>(n);
  const double lat = link.latency_s;
  const double bw = link.bytes_per_s;
  switch (kind) {
    case collective_kind::all_reduce: {  // 2(n−1) steps, F = 2(n−1)/n
      const double ring = 2.0 * (nd - 1) * lat + bytes * (2.0 * (nd - 1) / nd) / bw;
      // NCCL's double binary tree: 2·⌈log2 n⌉ steps, each node sends and receives the buffer once per
      // phase (reduce, broadcast): 2·bytes (§4.3).
      const auto log2n = static_cast<double>(std::bit_width(static_cast<std::uint64_t>(n - 1)));  // ⌈log2 n⌉
      const double tree = 2.0 * log2n * lat + 2.0 * bytes / bw;
      return tree < ring ? collective_estimate{tree, "tree"} : collective_estimate{ring, "ring"};
    }
    case collective_kind::all_gather:
    case collective_kind::reduce_scatter:  // n−1 steps, F = (n−1)/n
      return {1.0 * (nd - 1) * lat + bytes * (1.0 * (nd - 1) / nd) / bw, "ring"};
    case collective_kind::all_to_all:  // n−1 pairwise exchanges, F = (n−1)/n
      return {1.0 * (nd - 1) * lat + bytes * (1.0 * (nd - 1) / nd) / bw, "pairwise"};
    case collective_kind::send_recv:  // one step, F = 1
      return {lat + bytes * 1.0 / bw, "p2p"};
    case collective_kind::broadcast:  // n−1 pipelined steps, F = 1
      return {1.0 * (nd - 1) * lat + bytes * 1.0 / bw, "ring"};
  }
  return {0, "none"};
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

namespace {

/// The link rates of one group, worked out once (§4.3): NVLink inside a node; across nodes the node's
/// NICs shared by every GPU of the node sending at once (collectives: concurrent groups × members per
/// node; send/recv: one flow per concurrent group).
struct link_pricer {
  link_rate nvlink;
  link_rate net;      ///< collectives across nodes
  link_rate net_p2p;  ///< send/recv across nodes
  std::int64_t n;     ///< group size
  std::int64_t m;     ///< members per node
  std::int64_t k;     ///< nodes
  bool flat_nvlink;

  link_pricer() = default;  // uninitialised: a summary sets the pricers of the groups it uses
  link_pricer(const cluster_spec& c, const group_placement& where)
      : nvlink{c.gpu.intra_node_bandwidth_bytes_per_s * c.efficiency.intra_node, c.intra_node_latency_s},
        n(where.group_size), m(where.gpus_per_node), k(where.num_nodes),
        flat_nvlink(where.link == link_kind::nvlink || where.num_nodes <= 1) {
    if (flat_nvlink || n <= 1) return;
    const double node_bw = c.node_network_bandwidth_bytes_per_s() * c.efficiency.inter_node;
    const double flows = static_cast<double>(where.concurrent_groups_per_node * m);
    const double flows_p2p = static_cast<double>(where.concurrent_groups_per_node);
    net = {node_bw / std::max(1.0, flows), c.inter_node_latency_s};
    net_p2p = {node_bw / std::max(1.0, flows_p2p), c.inter_node_latency_s};
  }

  [[gnu::always_inline]] collective_estimate estimate(collective_kind kind, double bytes) const {
    if (n <= 1 || bytes <= 0) return {0, "none"};
    if (flat_nvlink) return flat_time(kind, bytes, n, nvlink);
    if (kind == collective_kind::send_recv) return flat_time(kind, bytes, 2, net_p2p);
    if (m <= 1) return flat_time(kind, bytes, k, net);

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
        const double nd = static_cast<double>(n);
        const double md = static_cast<double>(m);
        const double off_node = bytes * (nd - md) / nd / net.bytes_per_s;
        const double on_node = bytes * (md - 1) / nd / nvlink.bytes_per_s;
        const double lat = static_cast<double>(k - 1) * net.latency_s + static_cast<double>(m - 1) * nvlink.latency_s;
        return {lat + std::max(off_node, on_node), "pairwise"};
      }
      case collective_kind::send_recv: break;
    }
    return flat_time(kind, bytes, k, net);
  }
};

}  // namespace

collective_estimate estimate_collective(const cluster_spec& c, collective_kind kind, double bytes,
                                        const group_placement& where) {
  if (where.group_size <= 1 || bytes <= 0) return {0, "none"};
  return link_pricer(c, where).estimate(kind, bytes);
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
  // Per iteration (× m micro-batches), as the tables count calls:
  double mb_layers = 0;          ///< L = layers × m
  double mb_recomputed = 0;      ///< R = recomputed layers × m
  double mb_moe_layers = 0;      ///< MoE layers × m
  double mb_recomputed_moe = 0;  ///< recomputed MoE layers × m
  double mb_first = 0;           ///< m on the first stage, else 0
  double mb_last = 0;            ///< m on the last stage, else 0
  double gpus = 0;               ///< GPUs of the class: num_stages × GPUs per stage
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
  /// A new class at the end, default-initialised, to be filled in place.
  stage_class& append() {
    if (spill_.empty() && n_ < kInline) return *std::construct_at(inline_ + n_++);
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

/// The pipeline stages, grouped into classes of adjacent stages that communicate alike when `merge`
/// (the summary), one class per stage otherwise (the reference).
[[gnu::noinline]] void stage_classes(const job_spec& job, const parameter_breakdown& params, bool merge, class_list& classes) {
  const model_spec& m = job.model;
  const parallel_config& p = job.parallel;
  const training_config& t = job.training;
  const auto dense_layer = layer_params_on_gpu(m, params.dense_layer, p.tp, p.ep, false);
  const auto moe_layer = m.is_moe() ? layer_params_on_gpu(m, params.moe_layer, p.tp, p.ep, true) : std::pair{0.0, 0.0};
  const double word = static_cast<double>(params.word_embeddings / p.tp);
  const double embedding = word + static_cast<double>(params.position_embeddings + params.embedding_norm);
  const bool deepspeed = t.framework == framework_kind::deepspeed;
  const double mb = static_cast<double>(job.num_microbatches());
  const double gpus_per_stage = static_cast<double>(job.num_gpus / p.pp);
  auto add = [&](std::int64_t stage, std::int64_t count, std::int64_t layers, std::int64_t moe_layers, bool first,
                 bool last) {
    // Everything below follows from (layers, MoE layers, first, last): a stage like the one before
    // joins its class.
    if (merge && !classes.empty()) {
      stage_class& b = classes.back();
      if (b.layers == layers && b.moe_layers == moe_layers && b.first == first && b.last == last) {
        b.num_stages += count;
        b.gpus = gpus_per_stage * static_cast<double>(b.num_stages);
        return;
      }
    }
    stage_class& c = classes.append();
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
    c.mb_layers = static_cast<double>(c.layers) * mb;
    c.mb_recomputed = static_cast<double>(c.recomputed_layers) * mb;
    c.mb_moe_layers = static_cast<double>(c.moe_layers) * mb;
    c.mb_recomputed_moe = static_cast<double>(c.recomputed_moe_layers) * mb;
    c.mb_first = c.first ? mb : 0;
    c.mb_last = c.last ? mb : 0;
    if (c.first) c.dense_params += embedding;
    if (c.last) {
      c.dense_params += static_cast<double>(params.final_norm + params.output_layer / p.tp);
      if (m.tie_embeddings && p.pp > 1) c.dense_params += deepspeed ? embedding : word;
    }
    c.gpus = gpus_per_stage * static_cast<double>(c.num_stages);
  };
  // Regular layouts (even split, every layer alike): first, middle and last stage without walking the
  // layers (§2.2). Everything else follows pipeline_layout stage by stage.
  const bool all_alike = !m.is_moe() || (m.moe.layer_freq == 1 && m.moe.first_dense_layers == 0);
  const bool even = p.first_stage_layers < 0 && p.last_stage_layers < 0 && !p.embedding_as_stage &&
                    m.num_layers % p.pp == 0;
  if (merge && all_alike && even) {
    const std::int64_t n = m.num_layers / p.pp;
    const std::int64_t n_moe = m.is_moe() ? n : 0;
    add(0, 1, n, n_moe, true, p.pp == 1);
    if (p.pp > 2) add(1, p.pp - 2, n, n_moe, false, false);
    if (p.pp > 1) add(p.pp - 1, 1, n, n_moe, false, true);
    return;
  }
  if (merge && all_alike) {
    // Every layer alike: the layers of each stage as pipeline_layout counts them, without the layer
    // walk, and runs of like stages added as one class.
    const std::int64_t items = m.num_layers + (p.embedding_as_stage ? 2 : 0);
    const bool explicit_split = p.first_stage_layers >= 0 || p.last_stage_layers >= 0;
    const std::int64_t first_n = std::max<std::int64_t>(0, p.first_stage_layers);
    const std::int64_t last_n = std::max<std::int64_t>(0, p.last_stage_layers);
    const std::int64_t middle_stages = p.pp - (p.first_stage_layers >= 0) - (p.last_stage_layers >= 0);
    const std::int64_t middle = middle_stages > 0 ? (m.num_layers - first_n - last_n) / middle_stages : 0;
    const std::int64_t chunk = detail::ceil_div(items, p.pp);
    std::int64_t run_start = 0, run_count = 0, run_n = 0;
    bool run_first = false, run_last = false;
    const bool ds_uniform = p.vpp <= 1 && !explicit_split && t.framework == framework_kind::deepspeed;
    for (std::int64_t r = 0; r < p.pp; ++r) {
      const bool first = r == 0;
      const bool last = r == p.pp - 1;
      // Middle stages alike in a row count as one step: stages r..r_end have the same layers.
      std::int64_t r_end = r;
      if (!first && !last) {
        r_end = p.pp - 2;
        if (ds_uniform && chunk * (r + 1) <= items) r_end = std::min(r_end, items / chunk - 1);
        else if (ds_uniform && chunk * r < items) r_end = r;
      }
      std::int64_t n = 0;
      if (p.vpp > 1) {
        n = p.num_layers_per_virtual_stage * p.vpp;
      } else if (explicit_split) {
        n = (first && p.first_stage_layers >= 0) ? first_n : (last && p.last_stage_layers >= 0) ? last_n : middle;
      } else {
        // DeepSpeed's partition_uniform: ceil-sized chunks, the last rank takes what is left.
        n = t.framework == framework_kind::deepspeed
                ? std::min(chunk * (r + 1), items) - std::min(chunk * r, items)
                : items / p.pp;
        if (p.embedding_as_stage) n -= (first ? 1 : 0) + (last ? 1 : 0);
      }
      const std::int64_t count = r_end - r + 1;
      if (run_count > 0 && n == run_n && first == run_first && last == run_last) {
        run_count += count;
        r = r_end;
        continue;
      }
      if (run_count > 0) add(run_start, run_count, run_n, m.is_moe() ? run_n : 0, run_first, run_last);
      run_start = r;
      run_count = count;
      r = r_end;
      run_n = n;
      run_first = first;
      run_last = last;
    }
    add(run_start, run_count, run_n, m.is_moe() ? run_n : 0, run_first, run_last);
    return;
  }
  thread_local std::vector<stage_layout> stages;  // reused: no allocation once it has held pp stages
  pipeline_layout(job, stages);
  for (const stage_layout& st : stages) {
    add(st.stage, 1, st.num_layers, st.num_moe_layers, st.has_embedding, st.has_output);
  }
}

enum group_ref : int { g_tp, g_cp, g_ep, g_dp, g_edp, g_pp, g_emb, g_world, g_mp, g_count };
constexpr std::array<std::string_view, g_count> kGroupNames = {"tp", "cp", "ep", "dp", "expert-dp",
                                                               "pp", "embedding", "world", "model-parallel"};

/// Everything the traffic tables need, computed once per job.
struct comm_context {
  comm_context(const job_spec& j, const parameter_breakdown& p) : job(j), params(p) {}
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
  std::array<link_pricer, g_count> pricer;  ///< each group's link rates (§4.3), set once placed
};

/// A collective's calls per iteration on one GPU of a stage class, and its buffer (bytes per call).
struct calls_bytes {
  double calls;
  double bytes;
};

/// What one stage class adds up in the dimension being filled.
struct class_totals {
  double calls;
  double bytes;
  double wire;
  double time;
};

/// Receives the collectives of one dimension's table and evaluates each over every stage class as it
/// comes (§4.4): the row shows the class where it moves the most bytes, the cluster sums every GPU of
/// every class, each class adds to its own totals, and the busiest class gives the per-GPU figures.
/// Rows that never run are dropped. A collective is priced once per distinct (kind, group, buffer) in a
/// row (the reference prices every call with estimate_collective).
class row_sink {
 public:
  row_sink(const comm_context& x, const class_list& classes, class_totals* totals, bool reference)
      : x_(x), classes_(classes.begin()), num_classes_(classes.size()), totals_(totals), reference_(reference) {
    for (std::size_t i = 0; i < num_classes_; ++i) totals_[i] = {0, 0, 0, 0};
  }

  /// Start a dimension (the class totals are zero: set so by the constructor and by end()).
  void begin(comm_dimension& dim) {
    dim_ = &dim;
    any_ = false;
  }

  /// One collective of the table: `of(c)` gives its calls_bytes on a GPU of stage class c.
  template <class F>
  void row(collective_kind kind, comm_phase phase, std::string_view what, int group, F&& of) {
    any_ = true;
    const auto g = static_cast<std::size_t>(group);
    // What the GPU sends per byte: the bus factor; of a row of isends and irecvs, the isends.
    const double factor = kind == collective_kind::send_recv ? 0.5 : bus_factor(kind, x_.size[g]);
    if (kind != last_kind_ || group != last_group_) last_bytes_ = -1;  // the last price is another's
    last_kind_ = kind;
    last_group_ = group;
    // The class where it moves the most bytes, and the cluster's sums.
    double best = 0, best_bytes = 0, best_time = 0;
    std::int64_t best_calls = 0;
    std::string_view best_algorithm;
    std::int64_t cluster_calls = 0;
    double cluster_bytes = 0;
    for (std::size_t i = 0; i < num_classes_; ++i) {
      const stage_class& c = classes_[i];
      const calls_bytes e = of(c);
      if (e.calls <= 0) continue;
      if (e.bytes != last_bytes_ || reference_) {
        last_est_ = reference_ ? estimate_collective(x_.job.cluster, kind, e.bytes, x_.placement[g])
                               : x_.pricer[g].estimate(kind, e.bytes);
        last_bytes_ = e.bytes;
      }
      const double time = last_est_.time_s;
      const double moved = e.calls * e.bytes;
      if (moved > best || best_calls == 0) {
        best = moved;
        best_bytes = e.bytes;
        best_calls = static_cast<std::int64_t>(e.calls);
        best_time = time;
        best_algorithm = last_est_.algorithm;
      }
      cluster_calls += static_cast<std::int64_t>(c.gpus * e.calls);
      cluster_bytes += c.gpus * moved;
      class_totals& t = totals_[i];
      t.calls += e.calls;
      t.bytes += moved;
      t.wire += moved * factor;
      t.time += e.calls * time;
    }
    if (best_calls == 0) return;  // never runs
    comm_collective& out = dim_->collectives.next_slot();
    out.kind = kind;
    out.phase = phase;
    out.what = what;
    out.group = x_.name[g];
    out.group_size = x_.size[g];
    out.link = x_.placement[g].group_size > 1 ? x_.placement[g].link : link_kind::nvlink;
    out.algorithm = best_algorithm;
    out.bytes_per_call = best_bytes;
    out.calls_per_iteration = best_calls;
    out.calls_per_iteration_cluster = cluster_calls;
    out.bytes_per_iteration_cluster = cluster_bytes;
    out.time_per_call_s = best_time;
    dim_->collectives.commit();
    dim_->calls_per_iteration_cluster += cluster_calls;
    dim_->bytes_per_iteration_cluster += cluster_bytes;
  }

  /// Per GPU: the busiest class (the most bytes; ties: the most calls); the class totals start again.
  void end() {
    comm_dimension& dim = *dim_;
    double best_bytes = -1;
    for (std::size_t i = 0; i < num_classes_; ++i) {
      class_totals& t = totals_[i];
      if (any_ && (t.bytes > best_bytes ||
                   (t.bytes == best_bytes && t.calls > static_cast<double>(dim.calls_per_iteration_per_gpu)))) {
        best_bytes = t.bytes;
        dim.busiest_stage = classes_[i].first_stage;
        dim.calls_per_iteration_per_gpu = static_cast<std::int64_t>(t.calls);
        dim.bytes_per_iteration_per_gpu = t.bytes;
        dim.wire_bytes_per_iteration_per_gpu = t.wire;
        dim.time_per_iteration_s = t.time;
      }
      t = {0, 0, 0, 0};
    }
  }

 private:
  const comm_context& x_;
  const stage_class* classes_;
  std::size_t num_classes_;
  class_totals* totals_;
  bool reference_;
  comm_dimension* dim_ = nullptr;
  bool any_ = false;
  // The last price made: most rows share their buffer with the class before or the row before.
  double last_bytes_ = -1;  ///< −1: none for (last_kind_, last_group_)
  collective_kind last_kind_ = collective_kind::all_reduce;
  int last_group_ = -1;
  collective_estimate last_est_;
};

/// Gradient and parameter dtypes on the wire (§4.2.4): Megatron reduces its main grads (fp32 with
/// --accumulate-allreduce-grads-in-fp32, forced with bf16); DeepSpeed's BF16_Optimizer (stage 0/1)
/// reduces fp32 grads, stages 2/3 reduce in the model dtype; FSDP in its reduce dtype (fp32 here).
double wire_grad_bytes(const training_config& t) {
  const bool fp32 = t.accumulate_allreduce_grads_in_fp32 &&
                    !(t.framework == framework_kind::deepspeed && t.zero_stage >= 2);
  return fp32 ? 4.0 : static_cast<double>(bytes_of(t.precision));
}

// The tables: each collective with its calls on a GPU of stage class c (per iteration: L = layers × m,
// R = recomputed layers × m, first/last = m on the end stages; stage_class::mb_*) and its buffer.
using ck = collective_kind;
using cph = comm_phase;

// -- TP (§4.2.1) --
void tp_table(const comm_context& x, row_sink& out) {
  const auto& p = x.job.parallel;
  if (p.tp == 1) return;
  const double a = x.tokens * static_cast<double>(x.job.model.hidden_size) * x.act_bytes;  // full tensor
  const double ce = x.tokens * 4.0;  // fp32 [s, b] of the vocab-parallel cross-entropy
  using C = const stage_class&;
  if (!x.sp) {
    out.row(ck::all_reduce, cph::forward, "attention and MLP output all-reduce (2 per layer)", g_tp,
            [&](C c) { return calls_bytes{2 * c.mb_layers, a}; });
    out.row(ck::all_reduce, cph::backward, "QKV and fc1 input-gradient all-reduce (2 per layer)", g_tp,
            [&](C c) { return calls_bytes{2 * c.mb_layers, a}; });
    out.row(ck::all_reduce, cph::backward, "recomputed forward all-reduce (2 per recomputed layer)", g_tp,
            [&](C c) { return calls_bytes{2 * c.mb_recomputed, a}; });
    out.row(ck::all_reduce, cph::forward, "vocab-parallel embedding output all-reduce", g_tp,
            [&](C c) { return calls_bytes{c.mb_first, a}; });
    out.row(ck::all_reduce, cph::backward, "output layer input-gradient all-reduce", g_tp,
            [&](C c) { return calls_bytes{c.mb_last, a}; });
  } else {
    out.row(ck::all_gather, cph::forward, "sequence all-gather before QKV and fc1 (2 per layer)", g_tp,
            [&](C c) { return calls_bytes{2 * c.mb_layers, a}; });
    out.row(ck::reduce_scatter, cph::forward, "reduce-scatter after projection and fc2 (2 per layer)", g_tp,
            [&](C c) { return calls_bytes{2 * c.mb_layers, a}; });
    out.row(ck::all_gather, cph::backward,
            "output-gradient all-gather (2) and input re-gather for weight gradients (2) per layer", g_tp,
            [&](C c) { return calls_bytes{4 * c.mb_layers, a}; });
    out.row(ck::reduce_scatter, cph::backward, "QKV and fc1 input-gradient reduce-scatter (2 per layer)", g_tp,
            [&](C c) { return calls_bytes{2 * c.mb_layers, a}; });
    out.row(ck::all_gather, cph::backward, "recomputed forward all-gather (2 per recomputed layer)", g_tp,
            [&](C c) { return calls_bytes{2 * c.mb_recomputed, a}; });
    out.row(ck::reduce_scatter, cph::backward, "recomputed forward reduce-scatter (2 per recomputed layer)", g_tp,
            [&](C c) { return calls_bytes{2 * c.mb_recomputed, a}; });
    out.row(ck::reduce_scatter, cph::forward, "vocab-parallel embedding output reduce-scatter", g_tp,
            [&](C c) { return calls_bytes{c.mb_first, a}; });
    out.row(ck::all_gather, cph::forward, "sequence all-gather before the output layer", g_tp,
            [&](C c) { return calls_bytes{c.mb_last, a}; });
    out.row(ck::reduce_scatter, cph::backward, "output layer input-gradient reduce-scatter", g_tp,
            [&](C c) { return calls_bytes{c.mb_last, a}; });
  }
  out.row(ck::all_reduce, cph::forward, "cross-entropy max, target logit and sum-exp all-reduces (3)", g_tp,
          [&](C c) { return calls_bytes{3 * c.mb_last, ce}; });
}

// -- CP (§4.2.2) --
void cp_table(const comm_context& x, row_sink& out) {
  const auto& p = x.job.parallel;
  if (p.cp == 1) return;
  const model_spec& md = x.job.model;
  // K and V of the local sequence chunk and the local (TP-split) query groups.
  const double kv = 2.0 * x.tokens * static_cast<double>(md.kv_width() / p.tp) * x.act_bytes;
  const double steps = static_cast<double>(p.cp - 1);
  using C = const stage_class&;
  if (p.cp_comm == cp_comm_kind::p2p) {
    out.row(ck::send_recv, cph::forward, "K/V ring exchange (isend + irecv per step, c−1 steps per layer)", g_cp,
            [&](C c) { return calls_bytes{2 * steps * c.mb_layers, kv}; });
    out.row(ck::send_recv, cph::backward, "K/V and dK/dV ring exchange (2 × (isend + irecv) per step)", g_cp,
            [&](C c) { return calls_bytes{4 * steps * c.mb_layers, kv}; });
    out.row(ck::send_recv, cph::backward, "recomputed forward K/V ring exchange", g_cp,
            [&](C c) { return calls_bytes{2 * steps * c.mb_recomputed, kv}; });
  } else {
    const double gathered = kv / 2.0 * static_cast<double>(p.cp);  // one of K or V, whole sequence
    out.row(ck::all_gather, cph::forward, "K and V all-gather (2 per layer)", g_cp,
            [&](C c) { return calls_bytes{2 * c.mb_layers, gathered}; });
    out.row(ck::all_gather, cph::backward, "K and V re-gather (2 per layer)", g_cp,
            [&](C c) { return calls_bytes{2 * c.mb_layers, gathered}; });
    out.row(ck::reduce_scatter, cph::backward, "dK and dV reduce-scatter (2 per layer)", g_cp,
            [&](C c) { return calls_bytes{2 * c.mb_layers, gathered}; });
    out.row(ck::all_gather, cph::backward, "recomputed forward K and V all-gather", g_cp,
            [&](C c) { return calls_bytes{2 * c.mb_recomputed, gathered}; });
  }
}

// -- EP (§4.2.5) --
void ep_table(const comm_context& x, row_sink& out) {
  const auto& p = x.job.parallel;
  const model_spec& md = x.job.model;
  if (p.ep == 1 || !md.is_moe()) return;
  const double tokens = x.tokens / (x.sp ? static_cast<double>(p.tp) : 1.0);
  const double sent = tokens * static_cast<double>(md.moe.router_topk * md.hidden_size) * x.act_bytes;
  using C = const stage_class&;
  out.row(ck::all_to_all, cph::forward, "token dispatch and combine (2 per MoE layer)", g_ep,
          [&](C c) { return calls_bytes{2 * c.mb_moe_layers, sent}; });
  out.row(ck::all_to_all, cph::backward, "gradient dispatch and combine (2 per MoE layer)", g_ep,
          [&](C c) { return calls_bytes{2 * c.mb_moe_layers, sent}; });
  out.row(ck::all_to_all, cph::backward, "recomputed forward dispatch and combine", g_ep,
          [&](C c) { return calls_bytes{2 * c.mb_recomputed_moe, sent}; });
}

// -- PP (§4.2.3) --
void pp_table(const comm_context& x, row_sink& out) {
  const auto& p = x.job.parallel;
  if (p.pp == 1) return;
  const bool split = x.sp || p.pp_scatter_gather;
  const double full = x.tokens * static_cast<double>(x.job.model.hidden_size) * x.act_bytes;
  const double msg = split ? full / static_cast<double>(p.tp) : full;
  const double v = static_cast<double>(p.vpp);
  const double m = x.m;
  using C = const stage_class&;
  // Per micro-batch, each model chunk sends its output forward and its input gradient backward; the
  // first chunk of stage 0 receives nothing forward and the last chunk of the last stage sends nothing.
  out.row(ck::send_recv, cph::forward, "activation isend + irecv between stages", g_pp, [&](C c) {
    const double fwd = (v - (c.last ? 1 : 0)) + (v - (c.first ? 1 : 0));  // isends + irecvs
    return calls_bytes{fwd * m, msg};
  });
  out.row(ck::send_recv, cph::backward, "activation-gradient isend + irecv between stages", g_pp, [&](C c) {
    const double bwd = (v - (c.first ? 1 : 0)) + (v - (c.last ? 1 : 0));
    return calls_bytes{bwd * m, msg};
  });
  if (p.pp_scatter_gather && !x.sp && p.tp > 1) {
    out.row(ck::all_gather, cph::forward, "TP all-gather of each received 1/t chunk (scatter/gather)", g_tp,
            [&](C c) { return calls_bytes{((v - (c.first ? 1 : 0)) + (v - (c.last ? 1 : 0))) * m, full}; });
  }
}

// -- tied embedding (§4.2.6) --
void embedding_table(const comm_context& x, row_sink& out) {
  const auto& p = x.job.parallel;
  const model_spec& md = x.job.model;
  if (p.pp == 1 || !md.tie_embeddings) return;
  const parameter_breakdown& params = x.params;
  double elems = static_cast<double>(params.word_embeddings / p.tp);
  if (x.job.training.framework == framework_kind::deepspeed) {
    elems += static_cast<double>(params.position_embeddings + params.embedding_norm);  // the whole tied module
  }
  const double bytes = elems * x.grad_bytes;
  out.row(ck::all_reduce, cph::backward, "tied word-embedding gradient all-reduce, first and last stage", g_emb,
          [&](const stage_class& c) { return calls_bytes{(c.first || c.last) ? 1.0 : 0.0, bytes}; });
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

void dp_rows(const comm_context& x, bool expert, row_sink& out) {
  const training_config& t = x.job.training;
  const dp_schedule& s = dp_schedule_for(t);
  const double m = x.m;
  for (int i = 0; i < s.num_ops; ++i) {
    const dp_op& op = s.ops[static_cast<std::size_t>(i)];
    const double elem = op.bytes == dp_bytes::grads ? x.grad_bytes : x.param_bytes;
    out.row(op.kind, op.phase, expert ? op.what_expert : op.what, expert ? g_edp : g_dp, [&](const stage_class& c) {
      const double params = expert ? c.expert_params : c.dense_params;
      if (params <= 0) return calls_bytes{0, 0};
      if (op.count == dp_count::per_unit_per_microbatch) {
        // ZeRO-3/FSDP units: one per transformer layer, plus the embedding and the output/root module.
        const double units = static_cast<double>(c.layers) + (c.first ? 1 : 0) + (c.last && !c.first ? 1 : 0);
        return calls_bytes{units * m, params * elem / units};  // the mean unit
      }
      const double buckets = bucket_calls(t, params, elem);
      return calls_bytes{buckets * (op.count == dp_count::per_microbatch ? m : 1.0), params * elem / buckets};
    });
  }
}

void dp_table(const comm_context& x, row_sink& out) {
  if (x.size[g_dp] > 1) dp_rows(x, false, out);
  if (x.job.model.is_moe() && x.size[g_edp] > 1) dp_rows(x, true, out);
}

// -- scalars (§4.2.7) --
void scalar_table(const comm_context& x, row_sink& out) {
  const training_config& t = x.job.training;
  if (x.size[g_dp] > 1) {
    out.row(ck::all_reduce, cph::forward, "loss average over DP", g_dp,
            [&](const stage_class& c) { return calls_bytes{c.mb_last, 4}; });
  }
  const int norm_group = t.zero_stage >= 1 ? g_world : g_mp;
  if (x.size[static_cast<std::size_t>(norm_group)] > 1) {
    auto once = [](const stage_class&) { return calls_bytes{1, 4}; };
    out.row(ck::all_reduce, cph::optimizer, "gradient-norm all-reduce", norm_group, once);
    if (t.precision == dtype::fp16) out.row(ck::all_reduce, cph::optimizer, "fp16 found-inf all-reduce", norm_group, once);
  }
}

using table_fn = void (*)(const comm_context&, row_sink&);
constexpr std::array<table_fn, 7> kTables = {tp_table, cp_table, ep_table, dp_table, pp_table, embedding_table,
                                             scalar_table};

/// The groups of `g` without their lists (set field by field: the empty rank list is left alone).
void set_summary(comm_group_set& s, const comm_context& x, int g) {
  s.name = x.name[static_cast<std::size_t>(g)];
  s.group_size = x.size[static_cast<std::size_t>(g)];
  s.num_groups = s.group_size > 0 ? x.job.num_gpus / s.group_size : 0;
  s.placement = x.placement[static_cast<std::size_t>(g)];
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

/// The summary (§4.4): `reference` evaluates every stage on its own and prices with estimate_collective.
comm_report summarize(const job_spec& job, bool reference) {
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
  for (std::size_t g = 0; g < g_count; ++g) {
    x.placement[g].group_size = x.size[g];
    if (reference) continue;
    if (x.size[g] > 1) x.pricer[g] = link_pricer(job.cluster, x.placement[g]);
    else x.pricer[g].n = 1;  // priced as "none"
  }

  class_list classes;
  stage_classes(job, params, !reference, classes);

  comm_report r;
  r.rank_order = p.rank_order;
  r.world_size = job.num_gpus;
  r.gpus_per_node = gpn;
  r.num_nodes = detail::ceil_div(job.num_gpus, gpn);
  r.num_microbatches = job.num_microbatches();
  constexpr std::array<int, 6> kDimGroup = {g_tp, g_cp, g_ep, g_dp, g_pp, g_emb};
  std::array<class_totals, class_list::kInline> inline_totals;
  std::vector<class_totals> more_totals;
  class_totals* totals = inline_totals.data();
  if (classes.size() > inline_totals.size()) {
    more_totals.resize(classes.size());
    totals = more_totals.data();
  }
  row_sink sink(x, classes, totals, reference);
  auto fill = [&](table_fn table, comm_dimension& dim) {
    sink.begin(dim);
    table(x, sink);
    sink.end();
  };
  for (std::size_t d = 0; d < r.dimensions.size(); ++d) {
    comm_dimension& dim = r.dimensions[d];
    dim.dim = static_cast<parallel_dim>(d);
    set_summary(dim.groups, x, kDimGroup[d]);
    if (dim.dim == parallel_dim::embedding) dim.groups.num_groups = p.pp > 1 ? job.num_gpus / p.pp : 0;
    if (dim.dim == parallel_dim::dp && job.model.is_moe()) set_summary(dim.expert_groups, x, g_edp);
    else dim.expert_groups.group_size = 0;
    fill(kTables[d], dim);
    r.calls_per_iteration_cluster += dim.calls_per_iteration_cluster;
    r.bytes_per_iteration_cluster += dim.bytes_per_iteration_cluster;
    r.time_per_iteration_per_gpu_s += dim.time_per_iteration_s;
  }
  r.scalars.dim = parallel_dim::dp;
  set_summary(r.scalars.groups, x, t.zero_stage >= 1 ? g_world : g_mp);
  r.scalars.expert_groups.group_size = 0;
  fill(scalar_table, r.scalars);
  r.calls_per_iteration_cluster += r.scalars.calls_per_iteration_cluster;
  r.bytes_per_iteration_cluster += r.scalars.bytes_per_iteration_cluster;
  r.time_per_iteration_per_gpu_s += r.scalars.time_per_iteration_s;
  return r;
}

}  // namespace

comm_report summarize_comm(const job_spec& job) { return summarize(job, false); }

comm_report detail::summarize_comm_reference(const job_spec& job) { return summarize(job, true); }

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
