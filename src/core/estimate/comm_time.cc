// Time of a collective on the links its group crosses (docs/formulas.md §4.3): nccl-tests' bus
// factors, ring and double binary tree, the link by placement, hierarchical algorithms.
#include <algorithm>
#include <bit>
#include <tuple>

#include "estimate/comm_detail.h"
#include "trainplan/core/estimate/comm.h"

namespace trainplan {

namespace {

/// A kind of link as a group sees it: seconds per byte of bus traffic and latency per algorithm step.
struct link_rate {
  double s_per_byte;
  double latency_s;
};

/// The flat algorithms over `n` ranks on one link, for a buffer scaled by `share` (1/m of it crosses
/// the network in a hierarchical algorithm): the ring as kCollectiveTable (collective.h) has it, and for an
/// all-reduce NCCL's double binary tree, 2·⌈log2 n⌉ steps in which each node sends and receives the
/// buffer once per phase (reduce, broadcast): 2·bytes (§4.3).
[[gnu::always_inline]] inline std::pair<detail::linear_cost, detail::linear_cost> flat(
    collective_kind kind, std::int64_t n, const link_rate& link, double share = 1.0) {
  const collective_traits& t = traits_of(kind);
  const detail::linear_cost ring{ring_steps(kind, n) * link.latency_s, bus_factor(kind, n) * share * link.s_per_byte,
                                 t.algorithm};
  if (kind != collective_kind::all_reduce) return {ring, ring};
  const auto log2n = static_cast<double>(std::bit_width(static_cast<std::uint64_t>(n - 1)));  // ⌈log2 n⌉
  return {ring, {2.0 * log2n * link.latency_s, 2.0 * share * link.s_per_byte, "tree"}};
}

detail::linear_cost plus(const detail::linear_cost& a, const detail::linear_cost& b, std::string_view algorithm) {
  return {a.latency_s + b.latency_s, a.s_per_byte + b.s_per_byte, algorithm};
}

}  // namespace


detail::link_rates::link_rates(const cluster_spec& c)
    : nvlink_s_per_byte(1.0 / (c.gpu.intra_node_bandwidth_bytes_per_s * c.efficiency.intra_node)),
      nvlink_latency_s(c.intra_node_latency_s),
      node_network_s_per_byte(1.0 / (c.node_network_bandwidth_bytes_per_s() * c.efficiency.inter_node)),
      network_latency_s(c.inter_node_latency_s) {}

detail::collective_price detail::price_of(const link_rates& c, collective_kind kind, const group_placement& where) {
  collective_price p;
  const std::int64_t n = where.group_size;
  if (n <= 1) return p;
  p.none = false;
  p.wire_factor = kind == collective_kind::send_recv ? 0.5 : bus_factor(kind, n);
  p.time_factor = kind == collective_kind::send_recv ? 0.5 : 1.0;
  const link_rate nvlink{c.nvlink_s_per_byte, c.nvlink_latency_s};
  if (where.link == link_kind::nvlink || where.num_nodes <= 1) {
    std::tie(p.first, p.second) = flat(kind, n, nvlink);
    return p;
  }
  // Across nodes the node's NICs are shared by every GPU of the node sending at once: for
  // collectives the concurrent groups × their members on the node, for send/recv one flow per group.
  const std::int64_t m = where.gpus_per_node;
  const std::int64_t k = where.num_nodes;
  if (kind == collective_kind::send_recv) {
    const double flows = static_cast<double>(std::max<std::int64_t>(1, where.concurrent_groups_per_node));
    std::tie(p.first, p.second) = flat(kind, 2, {c.node_network_s_per_byte * flows, c.network_latency_s});
    return p;
  }
  const double flows = static_cast<double>(std::max<std::int64_t>(1, where.concurrent_groups_per_node * m));
  const link_rate net{c.node_network_s_per_byte * flows, c.network_latency_s};
  if (m <= 1) {
    std::tie(p.first, p.second) = flat(kind, k, net);
    return p;
  }
  // Hierarchical: inside the node on NVLink, across nodes on 1/m of the buffer per GPU.
  const double share = 1.0 / static_cast<double>(m);
  switch (kind) {
    case collective_kind::all_reduce: {  // reduce-scatter in the node, all-reduce across, all-gather in
      const detail::linear_cost scatter = flat(collective_kind::reduce_scatter, m, nvlink).first;  // = the gather
      const detail::linear_cost intra = plus(scatter, scatter, "");
      const auto [ring, tree] = flat(collective_kind::all_reduce, k, net, share);
      p.first = plus(intra, ring, "hierarchical ring");
      p.second = plus(intra, tree, "hierarchical tree");
      return p;
    }
    case collective_kind::all_gather:
    case collective_kind::reduce_scatter:
      p.first = plus(flat(kind, k, net, share).first, flat(kind, m, nvlink).first, "hierarchical ring");
      break;
    case collective_kind::broadcast:
      p.first = plus(flat(kind, k, net).first, flat(kind, m, nvlink).first, "hierarchical ring");
      break;
    case collective_kind::all_to_all: {  // (n−m)/n of the buffer over the network, (m−1)/n over NVLink
      const double nd = static_cast<double>(n);
      const double md = static_cast<double>(m);
      p.first = {static_cast<double>(k - 1) * net.latency_s + static_cast<double>(m - 1) * nvlink.latency_s,
                 std::max((nd - md) / nd * net.s_per_byte, (md - 1) / nd * nvlink.s_per_byte), "pairwise"};
      break;
    }
    case collective_kind::send_recv: break;  // handled above
  }
  p.second = p.first;
  return p;
}

collective_estimate estimate_collective(const cluster_spec& c, collective_kind kind, double bytes,
                                        const group_placement& where) {
  if (where.group_size <= 1 || bytes <= 0) return {0, "none"};
  return detail::price_of(detail::link_rates(c), kind, where).at(bytes);
}

double collective_time_s(const cluster_spec& cluster, collective_kind kind, double bytes, const group_placement& where) {
  return estimate_collective(cluster, kind, bytes, where).time_s;
}

}  // namespace trainplan
