// Communication: process groups and rank placement, traffic per parallel dimension, collective time
// on the cluster's links (docs/formulas.md §4).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "trainplan/core/hardware/collective.h"
#include "trainplan/core/job/job.h"
#include "trainplan/core/job/layout.h"

namespace trainplan {

enum class comm_phase { forward, backward, optimizer };
/// Parallel dimensions in Megatron's default rank order, fastest first: tp, cp, ep, dp, pp.
enum class parallel_dim { tp, cp, ep, dp, pp, embedding };
enum class link_kind { nvlink, network, hierarchical };

std::string_view to_string(comm_phase p);
std::string_view to_string(parallel_dim d);
std::string_view to_string(link_kind k);
std::string_view to_string(cp_comm_kind k);

/// Where a group's ranks sit and who else shares the node's network at the same time.
struct group_placement {
  std::int64_t group_size = 1;
  std::int64_t num_nodes = 1;            ///< nodes the group spans
  std::int64_t gpus_per_node = 1;        ///< group members per node (group_size / num_nodes)
  std::int64_t concurrent_groups_per_node = 1;  ///< groups of this dimension using one node's NICs at once
  link_kind link = link_kind::nvlink;
};

/// Time of one collective of `bytes` (the per-rank buffer as nccl-tests counts it: the full tensor for
/// all-reduce/all-gather/reduce-scatter/broadcast, the sent buffer for all-to-all and send/recv) on the
/// links of `where`: ring with per-step latency, or the double binary tree for an all-reduce where
/// that is faster (as NCCL's tuner picks); hierarchical for multi-node groups with several GPUs per
/// node (§4.3).
double collective_time_s(const cluster_spec& cluster, collective_kind kind, double bytes, const group_placement& where);

/// The same, with the algorithm it chose ("ring", "tree", "hierarchical ring", "p2p", ...).
struct collective_estimate {
  double time_s = 0;
  std::string_view algorithm;
};
collective_estimate estimate_collective(const cluster_spec& cluster, collective_kind kind, double bytes,
                                        const group_placement& where);

/// Placement of each group of a dimension under the job's rank order (§4.1). For dp it is the DP×CP
/// group the gradients are reduced in; for ep the expert generator's EP group; for embedding the
/// first and last pipeline stage. Throws input_error when the groups spread unevenly over nodes.
group_placement placement_of(const job_spec& job, parallel_dim dim);
/// "" when every group of every dimension of `job` can be placed (§4.1), else the message
/// placement_of would throw for the first that cannot: the search's prefilter, without exceptions.
std::string placement_violation(const job_spec& job);

/// What one MoE layer's token dispatch moves for one micro-batch on one rank (the combine moves the
/// same back; docs/formulas.md §4.2.5). Bytes.
struct moe_dispatch_volume {
  double tokens = 0;               ///< tokens the rank routes (sequence-parallel share with SP)
  double destination_nodes = 0;    ///< expected distinct nodes a token reaches (flex dispatcher)
  double gather_bytes = 0;         ///< allgather: hidden states gathered over EP (output size)
  double routing_bytes = 0;        ///< allgather: fp32 probabilities and the 1-byte routing map, gathered
  double all_to_all_bytes = 0;     ///< alltoall and flex: the busiest rank's buffer
  double etp_gather_bytes = 0;     ///< ETP > 1: the received tokens all-gathered over expert-TP (output size)
};
/// The volumes for `job` whose EP group spans `ep_nodes` nodes, `act_bytes` per element.
moe_dispatch_volume moe_dispatch_of(const job_spec& job, std::int64_t ep_nodes, double act_bytes);
/// Expected distinct nodes among a token's top-k experts, the experts spread evenly over `nodes`
/// nodes, with group-limited routing (router_num_groups groups, router_group_topk chosen) where set.
double expected_destination_nodes(const moe_spec& moe, std::int64_t nodes);

// ---- rank order and groups (§4.1) ----------------------------------------------------------------

/// "tp-cp-ep-dp-pp" (or comma-separated) → dims fastest first, as parallel_dim values. Throws
/// input_error naming --rank-order unless it is a permutation of tp, cp, ep, dp, pp.
std::array<std::int8_t, 5> parse_rank_order(std::string_view text);
/// The order as Megatron spells it, e.g. "tp-cp-ep-dp-pp".
std::string format_rank_order(const std::array<std::int8_t, 5>& order);
/// Device name of a global rank as seeds/003 prints it: n<node>_g<local gpu>.
std::string device_name(std::int64_t rank, std::int64_t gpus_per_node);

/// A set of process groups: every group of one kind, by global rank.
struct comm_group_set {
  std::string_view name;          ///< "tp", "cp", "ep", "dp", "dp-cp", "expert-dp", "pp", "embedding"
  std::int64_t group_size = 1;
  std::int64_t num_groups = 0;
  group_placement placement;
  std::vector<std::vector<std::int64_t>> ranks;  ///< every group's global ranks; empty in the summary
};

/// Every group of dimension `dim`, in Megatron's order (parallel_state.py generate_masked_orthogonal_rank_groups).
comm_group_set process_groups(const job_spec& job, parallel_dim dim);

// ---- traffic (§4.2) and time (§4.3) --------------------------------------------------------------

/// One collective of the iteration, as a GPU that runs it sees it.
struct comm_collective {
  collective_kind kind = collective_kind::all_reduce;
  comm_phase phase = comm_phase::forward;
  std::string_view what;            ///< e.g. "attention and MLP output all-reduce"
  std::string_view group;           ///< group it runs in ("tp", "dp-cp", "world", ...)
  std::int64_t group_size = 1;
  link_kind link = link_kind::nvlink;
  std::string_view algorithm;       ///< as estimate_collective chose it
  double bytes_per_call = 0;        ///< nccl-tests buffer size, bytes
  std::int64_t calls_per_iteration = 0;  ///< on one GPU of the stage where it moves the most bytes
  std::int64_t calls_per_iteration_cluster = 0;  ///< summed over every GPU that takes part
  double bytes_per_iteration_cluster = 0;        ///< Σ calls × bytes over every GPU, bytes
  double time_per_call_s = 0;
};

/// The collectives of one dimension: a fixed-capacity list held inside the report, so that the summary
/// allocates nothing (§4.4). Reads like a std::vector: size, empty, [], at, begin/end, front/back.
class collective_list {
 public:
  static constexpr std::size_t kCapacity = 14;  ///< the most rows a dimension has is 12 (TP with --tp-comm-overlap)

  collective_list() noexcept {}
  collective_list(const collective_list& o) noexcept : n_(o.n_) { std::memcpy(storage_, o.storage_, n_ * kSize); }
  collective_list& operator=(const collective_list& o) noexcept {
    n_ = o.n_;
    std::memmove(storage_, o.storage_, n_ * kSize);
    return *this;
  }

  std::size_t size() const noexcept { return n_; }
  bool empty() const noexcept { return n_ == 0; }
  static constexpr std::size_t capacity() noexcept { return kCapacity; }
  comm_collective* data() noexcept { return std::launder(reinterpret_cast<comm_collective*>(storage_)); }
  const comm_collective* data() const noexcept {
    return std::launder(reinterpret_cast<const comm_collective*>(storage_));
  }
  comm_collective* begin() noexcept { return data(); }
  comm_collective* end() noexcept { return data() + n_; }
  const comm_collective* begin() const noexcept { return data(); }
  const comm_collective* end() const noexcept { return data() + n_; }
  comm_collective& operator[](std::size_t i) noexcept { return data()[i]; }
  const comm_collective& operator[](std::size_t i) const noexcept { return data()[i]; }
  const comm_collective& at(std::size_t i) const {
    if (i >= n_) throw std::out_of_range("collective_list::at");
    return data()[i];
  }
  const comm_collective& front() const noexcept { return data()[0]; }
  const comm_collective& back() const noexcept { return data()[n_ - 1]; }
  /// Appends `c`; throws std::length_error past kCapacity.
  comm_collective& push_back(const comm_collective& c) {
    comm_collective& slot = next_slot();
    slot = c;
    commit();
    return slot;
  }
  /// The slot the next push_back would fill, as it is: write every field, then commit() to keep it.
  comm_collective& next_slot() {
    if (n_ == kCapacity) throw std::length_error("collective_list: more than kCapacity collectives");
    return data()[n_];
  }
  void commit() noexcept { ++n_; }
  void clear() noexcept { n_ = 0; }

 private:
  // Bytes, so that the collectives in it need no construction (comm_collective is an implicit-lifetime
  // aggregate: [intro.object]); only the first n_ are read.
  static constexpr std::size_t kSize = sizeof(comm_collective);
  static_assert(std::is_trivially_copyable_v<comm_collective> && std::is_aggregate_v<comm_collective>);
  std::size_t n_ = 0;
  alignas(comm_collective) std::byte storage_[kCapacity * kSize];
};

/// Traffic of one parallel dimension for one iteration. "Per GPU" is the busiest GPU (the pipeline
/// stage with the most bytes); "cluster" sums every GPU's calls and bytes (seeds/003's convention).
struct comm_dimension {
  parallel_dim dim = parallel_dim::tp;
  comm_group_set groups;            ///< the groups its collectives run in
  comm_group_set expert_groups;     ///< dp only, MoE: the expert-DP groups (group_size 0 when none)
  std::int64_t busiest_stage = 0;
  std::int64_t calls_per_iteration_per_gpu = 0;
  double bytes_per_iteration_per_gpu = 0;       ///< Σ calls × bytes_per_call, bytes
  double wire_bytes_per_iteration_per_gpu = 0;  ///< Σ calls × bytes × bus_factor: what a GPU sends, bytes
  std::int64_t calls_per_iteration_cluster = 0;
  double bytes_per_iteration_cluster = 0;
  double time_per_iteration_s = 0;  ///< Σ calls × time_per_call on the busiest GPU, no overlap
  collective_list collectives;
};

/// Where a collective's time sits in the iteration: the slot the time model places it in (§5.5).
enum class comm_slot : std::uint8_t {
  forward,       ///< inside each micro-batch's forward
  backward,      ///< inside each micro-batch's backward (recomputation's collectives included)
  grad_reduce,   ///< once per iteration after the last backward (DP reduction, tied embeddings)
  param_gather,  ///< after the optimizer step (ZeRO-1/2, distributed optimizer)
  optimizer,     ///< the step's own collectives (gradient norm, found-inf)
  pipeline,      ///< point-to-point between pipeline ranks: placed by the schedule (§5.4)
};
/// What a collective's time can hide under (§5.5); `none` is exposed on the GPU that runs it.
enum class comm_overlap : std::uint8_t {
  none,
  attention,  ///< CP's K/V exchange runs under the attention core of the same layer
  layer,      ///< ZeRO-3/FSDP per-layer gathers and reduce-scatters, prefetched under layer compute
  /// SP collectives pipelined with the column-parallel GEMMs of the same pass (--tp-comm-overlap, async TP;
  /// §5.5.1): the all-gathers before QKV and fc1, the backward's bulk re-gather and reduce-scatter
  column_gemm,
  shared_expert,  ///< EP all-to-alls under the shared experts' GEMMs (--moe-shared-expert-overlap, §5.5.3)
  /// SP collectives pipelined with the row-parallel GEMMs: the reduce-scatters after the projection and
  /// fc2, the output-gradient all-gathers under their data gradients (§5.5.1)
  row_gemm,
  /// PyTorch's ring attention's K/V all-gather, waited at the ring's second step: it runs beside the first
  /// step's attention alone, 1/CP of the layer's (§4.2.2, §5.5)
  attention_first_step,
};
constexpr std::size_t kNumCommSlots = 6;
constexpr std::size_t kNumCommOverlaps = 7;
std::string_view to_string(comm_slot s);
std::string_view to_string(comm_overlap o);

/// The seconds of every §4.2 row on one GPU of a run of pipeline stages that communicate alike, per
/// iteration, by slot and overlap: the one account the time model places (§5.5). An isend and the
/// irecv it is paired with run at once and are charged once.
struct stage_comm_account {
  std::int64_t first_stage = 0;
  std::int64_t num_stages = 0;
  std::array<std::array<double, kNumCommOverlaps>, kNumCommSlots> seconds{};  ///< [slot][overlap], s
  std::array<double, 7> dimension_s{};  ///< by parallel_dim, [6] the scalars; Σ equals Σ seconds
  /// The data-parallel dimension's and the scalars' part of `seconds` (ZeRO-2/3 and FSDP rows inside the
  /// passes, the loss all-reduce), s.
  std::array<std::array<double, kNumCommOverlaps>, kNumCommSlots> dp_seconds{};
  /// Megatron-Core's overlapped gradient reduction (§5.4): the buckets the class's first model chunk reduces
  /// in (the first pipeline rank's, by --ddp-bucket-size; 1 elsewhere, one bucket per chunk); 0 where the
  /// reduction is priced as continuous (other frameworks, PyTorch DDP, no overlap).
  double grad_reduce_buckets = 0;

  double at(comm_slot s, comm_overlap o = comm_overlap::none) const {
    return seconds[static_cast<std::size_t>(s)][static_cast<std::size_t>(o)];
  }
  double dp_at(comm_slot s, comm_overlap o = comm_overlap::none) const {
    return dp_seconds[static_cast<std::size_t>(s)][static_cast<std::size_t>(o)];
  }
  /// Every overlap of the slot.
  double slot_s(comm_slot s) const {
    double sum = 0;
    for (double x : seconds[static_cast<std::size_t>(s)]) sum += x;
    return sum;
  }
};

/// The communication of one iteration (§4).
struct comm_report {
  std::array<comm_dimension, 6> dimensions;  ///< indexed by parallel_dim
  comm_dimension scalars;           ///< loss and gradient-norm all-reduces (few bytes, latency-bound)
  std::array<std::int8_t, 5> rank_order{};
  std::int64_t world_size = 0;
  std::int64_t gpus_per_node = 0;
  std::int64_t num_nodes = 0;       ///< nodes the job uses
  std::int64_t num_microbatches = 0;
  std::int64_t calls_per_iteration_cluster = 0;  ///< all dimensions and scalars
  double bytes_per_iteration_cluster = 0;
  double time_per_iteration_per_gpu_s = 0;       ///< Σ of the dimensions' busiest-GPU times
  double pp_transfer_s = 0;  ///< one activation (or its gradient) between pipeline ranks, with the
                             ///< receiver's TP all-gather under scatter/gather (§4.2.3); 0 when p = 1

  const comm_dimension& operator[](parallel_dim d) const { return dimensions[static_cast<std::size_t>(d)]; }
};

/// The per-dimension summary without group lists: the fast path (§4.4). Allocates nothing for regular
/// layouts: stages that communicate alike are evaluated once as a class, a collective is priced once
/// per (group, kind) and each call's time is a multiply-add.
comm_report summarize_comm(const job_spec& job);
/// The same, and the per-stage account of every row's seconds by slot and overlap (§5.5) into
/// `stages` (its storage reused), one entry per run of alike stages, in stage order.
comm_report summarize_comm(const job_spec& job, std::vector<stage_comm_account>& stages);
/// The summary plus every group of every dimension.
comm_report analyze_comm(const job_spec& job);

namespace detail {
/// The same summary computed the plain way, for tests: every pipeline stage on its own (from
/// pipeline_layout), every collective priced by estimate_collective. Equals summarize_comm to rounding.
comm_report summarize_comm_reference(const job_spec& job);
comm_report summarize_comm_reference(const job_spec& job, std::vector<stage_comm_account>& stages);
}  // namespace detail

}  // namespace trainplan
