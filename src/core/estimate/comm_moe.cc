// MoE token dispatch volumes per dispatcher (docs/formulas.md §4.2.5): Megatron-Core's
// MoEAllGatherTokenDispatcher and MoEAlltoAllTokenDispatcher (megatron/core/transformer/moe/
// token_dispatcher.py) and the flex dispatcher over DeepEP, which sends a token once per node.
#include <algorithm>
#include <cmath>

#include "trainplan/core/estimate/comm.h"

namespace trainplan {

double expected_destination_nodes(const moe_spec& moe, std::int64_t nodes) {
  const double k = static_cast<double>(moe.router_topk);
  const double n = static_cast<double>(std::max<std::int64_t>(1, nodes));
  // Nodes a token may reach: all, or with group-limited routing the nodes of its chosen groups (a
  // group spans n/G nodes when there are fewer groups than nodes, and lies in one node otherwise).
  double allowed = n;
  if (moe.router_num_groups > 0 && moe.router_group_topk > 0) {
    const double groups = static_cast<double>(moe.router_num_groups);
    const double chosen = static_cast<double>(moe.router_group_topk);
    allowed = std::min(n, groups >= n ? chosen : chosen * n / groups);
  }
  // k copies spread evenly over `allowed` nodes: E[distinct] = a·(1 − (1 − 1/a)^k).
  return allowed * (1.0 - std::pow(1.0 - 1.0 / allowed, k));
}

moe_dispatch_volume moe_dispatch_of(const job_spec& job, std::int64_t ep_nodes, double act_bytes) {
  const model_spec& m = job.model;
  const parallel_config& p = job.parallel;
  moe_dispatch_volume v;
  if (!m.is_moe()) return v;
  const double h = static_cast<double>(m.hidden_size);
  const double k = static_cast<double>(m.moe.router_topk);
  const double ep = static_cast<double>(p.ep);
  const double etp = static_cast<double>(job.resolved.etp);
  // Tokens of one micro-batch on this rank: the CP share, split over TP with sequence parallelism.
  v.tokens = static_cast<double>(job.resolved.tokens) / (p.sequence_parallel ? static_cast<double>(p.tp) : 1.0);
  // The busiest rank receives `load` times the balanced share (capacity factor, or dropless imbalance).
  const double load = m.moe.capacity_factor > 0 ? m.moe.capacity_factor : m.moe.load_imbalance;
  v.destination_nodes = expected_destination_nodes(m.moe, ep_nodes);
  switch (p.moe_dispatcher) {
    case moe_dispatcher_kind::allgather:
    case moe_dispatcher_kind::framework_default:
      // Every rank of the EP group gets every token (and its routing), keeps its experts' rows.
      v.gather_bytes = v.tokens * ep * h * act_bytes;
      v.routing_bytes = v.tokens * ep * static_cast<double>(m.moe.num_experts) * (4.0 + 1.0);
      break;
    case moe_dispatcher_kind::alltoall:
      v.all_to_all_bytes = v.tokens * k * h * act_bytes * load;  // one copy per routed expert
      break;
    case moe_dispatcher_kind::flex:
      v.all_to_all_bytes = v.tokens * v.destination_nodes * h * act_bytes * load;  // one copy per node
      break;
  }
  // ETP > 1 (alltoall, flex): the expert-TP ranks all-gather what each received (the allgather
  // dispatcher gathers over TP×EP at once: its gather is already that size).
  if (etp > 1 && p.moe_dispatcher != moe_dispatcher_kind::allgather) {
    const double received = p.moe_dispatcher == moe_dispatcher_kind::flex ? v.tokens * k * h * act_bytes * load
                                                                          : v.all_to_all_bytes;
    v.etp_gather_bytes = received * etp;
  } else if (etp > 1) {
    v.gather_bytes *= etp;
    v.routing_bytes *= etp;
  }
  return v;
}

}  // namespace trainplan
