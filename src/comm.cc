// Communication traffic per parallel dimension and the per-dimension summary (docs/formulas.md §4.2,
// §4.4). Placement lives in comm_groups.cc, the stage classes in comm_stages.cc, collective pricing in
// comm_time.cc.
#include "trainplan/comm.h"

#include <algorithm>
#include <new>
#include <string>

#include "checked.h"
#include "comm_detail.h"
#include "trainplan/error.h"

namespace trainplan {

namespace {

using namespace detail;  // NOLINT(google-build-using-namespace): this module's internals

constexpr std::array<std::string_view, 3> kPhaseNames = {"forward", "backward", "optimizer"};
constexpr std::array<std::string_view, kNumCommSlots> kSlotNames = {"forward",      "backward",  "grad_reduce",
                                                                    "param_gather", "optimizer", "pipeline"};
constexpr std::array<std::string_view, kNumCommOverlaps> kOverlapNames = {"none", "attention", "layer"};

}  // namespace

std::string_view to_string(comm_phase p) { return kPhaseNames[static_cast<std::size_t>(p)]; }
std::string_view to_string(comm_slot s) { return kSlotNames[static_cast<std::size_t>(s)]; }
std::string_view to_string(comm_overlap o) { return kOverlapNames[static_cast<std::size_t>(o)]; }
std::string_view to_string(cp_comm_kind k) { return k == cp_comm_kind::p2p ? "p2p" : "all_gather"; }

namespace {

enum group_ref : int { g_tp, g_cp, g_ep, g_dp, g_edp, g_pp, g_emb, g_world, g_mp, g_etp, g_count };
constexpr std::array<std::string_view, g_count> kGroupNames = {
    "tp", "cp", "ep", "dp", "expert-dp", "pp", "embedding", "world", "model-parallel", "expert-tp"};
constexpr std::size_t kNumKinds = 6;

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
  std::array<group_placement, g_count> placement;
  std::array<std::int64_t, g_count> size;
  std::array<std::int64_t, g_count> num_groups;  ///< world / size, as products of the other dimensions
  std::string_view dp_name = "dp";               ///< "dp-cp" when CP > 1: gradients are reduced over DP×CP

  std::string_view name(int g) const { return g == g_dp ? dp_name : kGroupNames[static_cast<std::size_t>(g)]; }
};

/// The price of each (group, collective kind) the tables use, worked out on first use (§4.3, §4.4).
class price_cache {
 public:
  explicit price_cache(const comm_context& x) : x_(x), links_(x.job.cluster) {}
  const collective_price& operator()(int group, collective_kind kind) {
    // An all-gather and a reduce-scatter cost the same on every link (§4.3): one price serves both.
    const collective_kind priced = kind == collective_kind::reduce_scatter ? collective_kind::all_gather : kind;
    const std::size_t i = static_cast<std::size_t>(group) * kNumKinds + static_cast<std::size_t>(priced);
    if (!(known_ & (std::uint64_t{1} << i))) {
      ::new (&slot_[i]) collective_price(price_of(links_, priced, x_.placement[static_cast<std::size_t>(group)]));
      known_ |= std::uint64_t{1} << i;
    }
    return slot_[i];
  }

 private:
  static_assert(g_count * kNumKinds <= 64);
  const comm_context& x_;
  link_rates links_;
  std::uint64_t known_ = 0;  ///< bit i: slot_[i] is set
  union {
    collective_price slot_[g_count * kNumKinds];  ///< left uninitialised: only the known ones are read
  };
};

/// A collective's calls per iteration on one GPU of a stage class, and its buffer (bytes per call).
struct calls_bytes {
  double calls;
  double bytes;
};

/// Two doubles in one SSE2 register (a GCC/Clang vector extension): a row adds to a class's four sums
/// in two multiply-adds.
using double2 = double __attribute__((vector_size(16)));

/// What one stage class adds up in the dimension being filled: calls and bytes (Σ calls × buffer),
/// wire bytes (Σ calls × buffer × bus factor) and seconds (Σ calls × time per call).
struct traffic_sums {
  double2 calls_bytes;
  double2 wire_time;
};
constexpr traffic_sums kNoTraffic = {{0, 0}, {0, 0}};

/// The stage classes as the rows read them (§4.4): each class's `per` figures, and over all classes
/// the most (a row's calls on its busiest stage) and the sum over every GPU (the cluster's calls).
struct class_view {
  const stage_class* classes;
  std::size_t size;
  std::array<double, kNumPer> most{};
  std::array<double, kNumPer> cluster{};

  explicit class_view(const class_list& list) : classes(list.begin()), size(list.size()) {
    for (const stage_class& c : list) {
      for (std::size_t f = 0; f < kNumPer; ++f) {
        most[f] = std::max(most[f], c.per[f]);
        cluster[f] += c.gpus * c.per[f];
      }
    }
  }
};

/// Receives the collectives of one dimension's table (§4.4). A row whose buffer is the same on every
/// stage runs `times` × `per` calls on a GPU of each class: its calls are those of the class with the
/// most and the cluster's sum every GPU (both known per `per` before any row), and each class adds its
/// calls × {1, buffer, wire factor × buffer, time} to its totals. A row whose buffer differs between
/// stages (DP) is evaluated class by class. end() takes the busiest class (the most bytes; ties: the
/// most calls) for the per-GPU figures. Rows that never run are dropped. The summary prices a (kind,
/// group) once and evaluates the price per buffer; the reference prices every call with
/// estimate_collective.
class row_sink {
 public:
  /// `accounts` (one per class, zeroed) receives each row's seconds by slot and overlap; may be null.
  row_sink(const comm_context& x, const class_view& classes, traffic_sums* totals, stage_comm_account* accounts,
           bool reference)
      : x_(x), prices_(x), classes_(classes), totals_(totals), accounts_(accounts), reference_(reference) {
    for (std::size_t i = 0; i < classes_.size; ++i) totals_[i] = kNoTraffic;
  }

  /// Start a dimension (the sums are zero: set so by the constructor and by end()); `index` is its
  /// place in stage_comm_account::dimension_s.
  void begin(comm_dimension& dim, std::size_t index) {
    dim_ = &dim;
    dim_index_ = index;
  }

  /// A collective of buffer `bytes` that runs `times` × `p` calls per iteration on a GPU of each stage;
  /// its time sits in the slot of its phase (PP transfers in the schedule's, the tied-embedding
  /// all-reduce with the gradient reduction) and hides under `overlap`.
  void row(collective_kind kind, comm_phase phase, std::string_view what, int group, double bytes, double times,
           per p, comm_overlap overlap = comm_overlap::none) {
    const auto f = static_cast<std::size_t>(p);
    const double most = times * classes_.most[f];
    if (most <= 0) return;  // never runs
    const collective_price& price = prices_(group, kind);
    TRAINPLAN_CHECK(!price.none && bytes > 0);  // rows exist for groups of several ranks, with a buffer
    const collective_estimate est = reference_ ? estimate(kind, group, bytes) : price.at(bytes);
    const double2 calls_bytes = {times, times * bytes};
    const double2 wire_time = {times * bytes * price.wire_factor, times * est.time_s * price.time_factor};
    const comm_slot slot = p == per::chunk_boundary ? comm_slot::pipeline
                           : p == per::end_stage    ? comm_slot::grad_reduce
                                                    : slot_of(phase);
    // Only the first (last) class holds the first (last) stage.
    const std::size_t begin = p == per::last_stage ? classes_.size - 1 : 0;
    const std::size_t end = p == per::first_stage ? 1 : classes_.size;
    for (std::size_t i = begin; i < end; ++i) {
      const double n = classes_.classes[i].per[f];
      totals_[i].calls_bytes += n * calls_bytes;
      totals_[i].wire_time += n * wire_time;
      credit(i, slot, overlap, n * wire_time[1]);
    }
    const double cluster = times * classes_.cluster[f];
    emit(kind, phase, what, group, est, bytes, most, cluster, cluster * bytes);
  }

  /// A collective whose buffer differs between stages (DP: the parameters of the stage): `of(c)` gives
  /// its calls and buffer on a GPU of class c; the row shows the class where it moves the most bytes.
  template <class F>
  void row_by_class(collective_kind kind, comm_phase phase, std::string_view what, int group, comm_slot slot,
                    comm_overlap overlap, F&& of) {
    const collective_price& price = prices_(group, kind);
    TRAINPLAN_CHECK(!price.none);
    double best = 0;
    calls_bytes best_e{0, 0};
    collective_estimate best_est;
    double cluster_calls = 0;
    double cluster_bytes = 0;
    for (std::size_t i = 0; i < classes_.size; ++i) {
      const stage_class& c = classes_.classes[i];
      const calls_bytes e = of(c);
      if (e.calls <= 0) continue;
      const collective_estimate est = reference_ ? estimate(kind, group, e.bytes) : price.at(e.bytes);
      const double moved = e.calls * e.bytes;
      if (moved > best || best_e.calls == 0) {
        best = moved;
        best_e = e;
        best_est = est;
      }
      cluster_calls += c.gpus * e.calls;
      cluster_bytes += c.gpus * moved;
      const double2 calls_bytes = {1.0, e.bytes};
      const double2 wire_time = {e.bytes * price.wire_factor, est.time_s * price.time_factor};
      totals_[i].calls_bytes += e.calls * calls_bytes;
      totals_[i].wire_time += e.calls * wire_time;
      credit(i, slot, overlap, e.calls * wire_time[1]);
    }
    if (best_e.calls > 0) {
      emit(kind, phase, what, group, best_est, best_e.bytes, best_e.calls, cluster_calls, cluster_bytes);
    }
  }

  /// The per-GPU figures of the dimension from its busiest class; the sums start again.
  void end();

 private:
  static comm_slot slot_of(comm_phase phase) {
    constexpr std::array<comm_slot, 3> kSlot = {comm_slot::forward, comm_slot::backward, comm_slot::optimizer};
    return kSlot[static_cast<std::size_t>(phase)];
  }

  void credit(std::size_t cls, comm_slot slot, comm_overlap overlap, double seconds) {
    if (accounts_ == nullptr) return;
    stage_comm_account& a = accounts_[cls];
    a.seconds[static_cast<std::size_t>(slot)][static_cast<std::size_t>(overlap)] += seconds;
    a.dimension_s[dim_index_] += seconds;
  }

  collective_estimate estimate(collective_kind kind, int group, double bytes) const {
    return estimate_collective(x_.job.cluster, kind, bytes, x_.placement[static_cast<std::size_t>(group)]);
  }

  void emit(collective_kind kind, comm_phase phase, std::string_view what, int group, const collective_estimate& est,
            double bytes, double calls, double cluster_calls, double cluster_bytes) {
    const auto g = static_cast<std::size_t>(group);
    const auto calls_cluster = static_cast<std::int64_t>(cluster_calls);  // a sum of whole numbers
    comm_collective& out = dim_->collectives.next_slot();
    out.kind = kind;
    out.phase = phase;
    out.what = what;
    out.group = x_.name(group);
    const group_placement& where = x_.placement[g];
    out.group_size = where.group_size;
    out.link = where.link;  // nvlink for groups of one rank
    out.algorithm = est.algorithm;
    out.bytes_per_call = bytes;
    out.calls_per_iteration = static_cast<std::int64_t>(calls);
    out.calls_per_iteration_cluster = calls_cluster;
    out.bytes_per_iteration_cluster = cluster_bytes;
    out.time_per_call_s = est.time_s;
    dim_->collectives.commit();
    dim_->calls_per_iteration_cluster += calls_cluster;
    dim_->bytes_per_iteration_cluster += cluster_bytes;
  }

  const comm_context& x_;
  price_cache prices_;
  const class_view& classes_;
  traffic_sums* totals_;  ///< per class
  stage_comm_account* accounts_;  ///< per class, or null
  bool reference_;
  comm_dimension* dim_ = nullptr;
  std::size_t dim_index_ = 0;
};

void row_sink::end() {
  comm_dimension& dim = *dim_;
  if (dim.collectives.empty()) return;  // nothing ran: the figures stay zero, and so do the sums
  // The busiest class: the most bytes, ties the most calls. The sums start again at zero.
  std::size_t best = 0;
  traffic_sums most = totals_[0];
  totals_[0] = kNoTraffic;
  for (std::size_t i = 1; i < classes_.size; ++i) {
    const traffic_sums t = totals_[i];
    totals_[i] = kNoTraffic;
    if (t.calls_bytes[1] > most.calls_bytes[1] ||
        (t.calls_bytes[1] == most.calls_bytes[1] && t.calls_bytes[0] > most.calls_bytes[0])) {
      best = i;
      most = t;
    }
  }
  dim.busiest_stage = classes_.classes[best].first_stage;
  dim.calls_per_iteration_per_gpu = static_cast<std::int64_t>(most.calls_bytes[0]);
  dim.bytes_per_iteration_per_gpu = most.calls_bytes[1];
  dim.wire_bytes_per_iteration_per_gpu = most.wire_time[0];
  dim.time_per_iteration_s = most.wire_time[1];
}

// Gradient and parameter dtypes on the wire (§4.2.4) are precision_roles' grad_comm and param_comm:
// Megatron reduces its main grads (fp32 with --accumulate-allreduce-grads-in-fp32, forced with bf16);
// DeepSpeed's BF16_Optimizer (stage 0/1) reduces fp32 grads, stages 2/3 reduce in the model dtype;
// FSDP in its reduce dtype (fp32 here).

// The tables: each collective with its buffer and its calls per iteration on a GPU of a stage, as
// times × `per` (per::layer: layers × m, and so on), or class by class where the buffer differs.
using ck = collective_kind;
using cph = comm_phase;

// -- TP (§4.2.1) --
void tp_table(const comm_context& x, row_sink& out) {
  const auto& p = x.job.parallel;
  if (p.tp == 1) return;
  const double a = x.tokens * static_cast<double>(x.job.model.hidden_size) * x.act_bytes;  // full tensor
  const double ce = x.tokens * 4.0;  // fp32 [s, b] of the vocab-parallel cross-entropy
  if (!x.sp) {
    out.row(ck::all_reduce, cph::forward, "attention and MLP output all-reduce (2 per layer)", g_tp, a, 2, per::layer);
    out.row(ck::all_reduce, cph::backward, "QKV and fc1 input-gradient all-reduce (2 per layer)", g_tp, a, 2,
            per::layer);
    out.row(ck::all_reduce, cph::backward, "recomputed forward all-reduce (2 per recomputed layer)", g_tp, a, 2,
            per::recomputed_layer);
    out.row(ck::all_reduce, cph::forward, "vocab-parallel embedding output all-reduce", g_tp, a, 1, per::first_stage);
    out.row(ck::all_reduce, cph::backward, "output layer input-gradient all-reduce", g_tp, a, 1, per::last_stage);
  } else {
    out.row(ck::all_gather, cph::forward, "sequence all-gather before QKV and fc1 (2 per layer)", g_tp, a, 2,
            per::layer);
    out.row(ck::reduce_scatter, cph::forward, "reduce-scatter after projection and fc2 (2 per layer)", g_tp, a, 2,
            per::layer);
    out.row(ck::all_gather, cph::backward,
            "output-gradient all-gather (2) and input re-gather for weight gradients (2) per layer", g_tp, a, 4,
            per::layer);
    out.row(ck::reduce_scatter, cph::backward, "QKV and fc1 input-gradient reduce-scatter (2 per layer)", g_tp, a, 2,
            per::layer);
    out.row(ck::all_gather, cph::backward, "recomputed forward all-gather (2 per recomputed layer)", g_tp, a, 2,
            per::recomputed_layer);
    out.row(ck::reduce_scatter, cph::backward, "recomputed forward reduce-scatter (2 per recomputed layer)", g_tp, a,
            2, per::recomputed_layer);
    out.row(ck::reduce_scatter, cph::forward, "vocab-parallel embedding output reduce-scatter", g_tp, a, 1,
            per::first_stage);
    out.row(ck::all_gather, cph::forward, "sequence all-gather before the output layer", g_tp, a, 1, per::last_stage);
    out.row(ck::reduce_scatter, cph::backward, "output layer input-gradient reduce-scatter", g_tp, a, 1,
            per::last_stage);
  }
  out.row(ck::all_reduce, cph::forward, "cross-entropy max, target logit and sum-exp all-reduces (3)", g_tp, ce, 3,
          per::last_stage);
}

// -- CP (§4.2.2) --
void cp_table(const comm_context& x, row_sink& out) {
  const auto& p = x.job.parallel;
  if (p.cp == 1) return;
  const model_spec& md = x.job.model;
  // K and V of the local sequence chunk and the local (TP-split) query groups.
  const double kv = x.tokens * static_cast<double>(size_div(md.k_width() + md.v_width(), p.tp)) * x.act_bytes;
  const double steps = static_cast<double>(p.cp - 1);
  if (p.cp_comm == cp_comm_kind::p2p) {
    // Transformer Engine overlaps each step's exchange with the attention of the chunk it holds (§5.5).
    constexpr comm_overlap under = comm_overlap::attention;
    out.row(ck::send_recv, cph::forward, "K/V ring exchange (isend + irecv per step, c−1 steps per layer)", g_cp, kv,
            2 * steps, per::layer, under);
    out.row(ck::send_recv, cph::backward, "K/V and dK/dV ring exchange (2 × (isend + irecv) per step)", g_cp, kv,
            4 * steps, per::layer, under);
    out.row(ck::send_recv, cph::backward, "recomputed forward K/V ring exchange", g_cp, kv, 2 * steps,
            per::recomputed_layer, under);
  } else {
    // The all-gather variant gathers K and V before the attention kernels: exposed.
    const double gathered = kv / 2.0 * static_cast<double>(p.cp);  // one of K or V, whole sequence
    out.row(ck::all_gather, cph::forward, "K and V all-gather (2 per layer)", g_cp, gathered, 2, per::layer);
    out.row(ck::all_gather, cph::backward, "K and V re-gather (2 per layer)", g_cp, gathered, 2, per::layer);
    out.row(ck::reduce_scatter, cph::backward, "dK and dV reduce-scatter (2 per layer)", g_cp, gathered, 2, per::layer);
    out.row(ck::all_gather, cph::backward, "recomputed forward K and V all-gather", g_cp, gathered, 2,
            per::recomputed_layer);
  }
}

// -- EP (§4.2.5) --
void ep_table(const comm_context& x, row_sink& out) {
  const auto& p = x.job.parallel;
  const model_spec& md = x.job.model;
  if (!md.is_moe() || (p.ep == 1 && expert_tensor_parallel(p) == 1)) return;
  const moe_dispatch_volume v = moe_dispatch_of(x.job, x.placement[g_ep].num_nodes, x.act_bytes);
  // Dispatch and combine in the forward, their gradients in the backward, again under recomputation.
  auto both = [&](collective_kind kind, collective_kind back, std::string_view what, std::string_view what_back,
                  int group, double bytes) {
    if (bytes <= 0) return;
    out.row(kind, cph::forward, what, group, bytes, 1, per::moe_layer);
    out.row(back, cph::forward, what_back, group, bytes, 1, per::moe_layer);
    out.row(back, cph::backward, what, group, bytes, 1, per::moe_layer);  // the combine's gradient
    out.row(kind, cph::backward, what_back, group, bytes, 1, per::moe_layer);
    out.row(kind, cph::backward, "recomputed forward dispatch", group, bytes, 1, per::recomputed_moe_layer);
    out.row(back, cph::backward, "recomputed forward combine", group, bytes, 1, per::recomputed_moe_layer);
  };
  if (p.ep > 1) {
    both(ck::all_gather, ck::reduce_scatter, "token dispatch: hidden states all-gathered (allgather dispatcher)",
         "token combine: expert outputs reduce-scattered", g_ep, v.gather_bytes);
    if (v.routing_bytes > 0) {
      out.row(ck::all_gather, cph::forward, "routing probabilities and map all-gather", g_ep, v.routing_bytes, 1,
              per::moe_layer);
    }
    const bool flex = p.moe_dispatcher == moe_dispatcher_kind::flex;
    both(ck::all_to_all, ck::all_to_all,
         flex ? "token dispatch, one copy per destination node (flex/DeepEP)" : "token dispatch (one copy per expert)",
         flex ? "token combine, one copy per source node" : "token combine", g_ep, v.all_to_all_bytes);
  }
  both(ck::all_gather, ck::reduce_scatter, "received tokens all-gathered over expert-TP",
       "expert outputs reduce-scattered over expert-TP", g_etp, v.etp_gather_bytes);
}

// -- PP (§4.2.3) --
void pp_table(const comm_context& x, row_sink& out) {
  const auto& p = x.job.parallel;
  if (p.pp == 1) return;
  const bool split = x.sp || p.pp_scatter_gather;
  const double full = x.tokens * static_cast<double>(x.job.model.hidden_size) * x.act_bytes;
  const double msg = split ? full / static_cast<double>(p.tp) : full;
  // Forward: the isends of the chunks that have a next stage and the irecvs of those that have a
  // previous one; backward the same the other way (per::chunk_boundary counts either).
  out.row(ck::send_recv, cph::forward, "activation isend + irecv between stages", g_pp, msg, 1, per::chunk_boundary);
  out.row(ck::send_recv, cph::backward, "activation-gradient isend + irecv between stages", g_pp, msg, 1,
          per::chunk_boundary);
  if (p.pp_scatter_gather && !x.sp && p.tp > 1) {  // one all-gather per received activation
    out.row(ck::all_gather, cph::forward, "TP all-gather of each received 1/t chunk (scatter/gather)", g_tp, full, 1,
            per::chunk_boundary);
  }
}

// -- tied embedding (§4.2.6) --
void embedding_table(const comm_context& x, row_sink& out) {
  const auto& p = x.job.parallel;
  const model_spec& md = x.job.model;
  if (p.pp == 1 || !md.tie_embeddings) return;
  const parameter_breakdown& params = x.params;
  double elems = static_cast<double>(size_div(params.word_embeddings, p.tp));
  if (traits_of(x.job.training.framework).tied_embedding_module) {
    elems += static_cast<double>(params.position_embeddings + params.embedding_norm);  // the whole tied module
  }
  const double bytes = elems * x.grad_bytes;
  out.row(ck::all_reduce, cph::backward, "tied word-embedding gradient all-reduce, first and last stage", g_emb, bytes,
          1, per::end_stage);
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
/// Counts and element sizes are whole numbers, so the ceiling is an integer one.
double bucket_calls(const training_config& t, double elements, double elem_bytes) {
  const auto n = static_cast<std::int64_t>(elements);
  if (n <= 0) return 0;
  if (t.bucket_size_bytes > 0) {
    return static_cast<double>(ceil_div(n * static_cast<std::int64_t>(elem_bytes), t.bucket_size_bytes));
  }
  const std::int64_t bucket = traits_of(t.framework).bucket_elements;
  return bucket > 0 ? static_cast<double>(ceil_div(n, bucket)) : 1.0;
}

void dp_rows(const comm_context& x, bool expert, row_sink& out) {
  const training_config& t = x.job.training;
  const dp_schedule& s = dp_schedule_for(t);
  const double m = x.m;
  for (int i = 0; i < s.num_ops; ++i) {
    const dp_op& op = s.ops[static_cast<std::size_t>(i)];
    const double elem = op.bytes == dp_bytes::grads ? x.grad_bytes : x.param_bytes;
    const int group = expert ? g_edp : g_dp;
    // Placement (§5.5): once-per-iteration reductions after the last backward and gathers after the
    // step; per-micro-batch ones inside the backward; per-layer ones (ZeRO-3, FSDP) prefetched.
    const bool per_unit = op.count == dp_count::per_unit_per_microbatch;
    const comm_slot slot = op.count == dp_count::per_iteration
                               ? (op.bytes == dp_bytes::grads ? comm_slot::grad_reduce : comm_slot::param_gather)
                               : (op.phase == cph::forward ? comm_slot::forward : comm_slot::backward);
    // DeepSpeed ZeRO-3 reduce-scatters each micro-batch's gradients under the backward (overlap_comm
    // defaults on at stage 3 only: runtime/zero/config.py); ZeRO-2's waits (overlap_comm off).
    const bool overlapped = per_unit || (op.count == dp_count::per_microbatch && t.zero_stage == 3);
    const comm_overlap overlap = overlapped ? comm_overlap::layer : comm_overlap::none;
    out.row_by_class(op.kind, op.phase, expert ? op.what_expert : op.what, group, slot, overlap,
                     [&](const stage_class& c) {
      const double params = expert ? c.expert_params : c.dense_params;
      if (params <= 0) return calls_bytes{0, 0};
      if (op.count == dp_count::per_unit_per_microbatch) {
        // ZeRO-3/FSDP units: one per transformer layer, plus the embedding and the output/root module.
        return calls_bytes{c.units * m, params * elem / c.units};  // the mean unit
      }
      const double buckets = bucket_calls(t, params, elem);
      const double bytes = buckets == 1 ? params * elem : params * elem / buckets;
      return calls_bytes{buckets * (op.count == dp_count::per_microbatch ? m : 1.0), bytes};
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
    out.row(ck::all_reduce, cph::forward, "loss average over DP", g_dp, 4, 1, per::last_stage);
  }
  const int norm_group = t.zero_stage >= 1 ? g_world : g_mp;
  if (x.size[static_cast<std::size_t>(norm_group)] > 1) {
    out.row(ck::all_reduce, cph::optimizer, "gradient-norm all-reduce", norm_group, 4, 1, per::iteration);
    if (t.precision == dtype::fp16) {
      out.row(ck::all_reduce, cph::optimizer, "fp16 found-inf all-reduce", norm_group, 4, 1, per::iteration);
    }
  }
}

using table_fn = void (*)(const comm_context&, row_sink&);
constexpr std::array<table_fn, 7> kTables = {tp_table, cp_table, ep_table, dp_table, pp_table, embedding_table,
                                             scalar_table};

/// The groups of `g` without their lists (set field by field: the empty rank list is left alone).
void set_summary(comm_group_set& s, const comm_context& x, int g) {
  s.name = x.name(g);
  s.group_size = x.size[static_cast<std::size_t>(g)];
  s.num_groups = x.num_groups[static_cast<std::size_t>(g)];
  s.placement = x.placement[static_cast<std::size_t>(g)];
}

/// Placement of a group of `n` ranks covering `a` and `b`'s nodes (the model-parallel group, §4.2.7).
group_placement combined_placement(std::int64_t n, const group_placement& a, const group_placement& b,
                                   std::int64_t gpn) {
  group_placement p;
  p.group_size = n;
  p.num_nodes = std::max<std::int64_t>(1, a.num_nodes * b.num_nodes);
  p.gpus_per_node = std::max<std::int64_t>(1, size_div(n, p.num_nodes));
  p.concurrent_groups_per_node = std::max<std::int64_t>(1, size_div(gpn, p.gpus_per_node));
  p.link = p.num_nodes == 1 ? link_kind::nvlink : p.gpus_per_node == 1 ? link_kind::network : link_kind::hierarchical;
  return p;
}

/// One activation transfer between pipeline ranks (§4.2.3): the send/recv row's time per call, and
/// under scatter/gather the receiver's TP all-gather.
double pp_transfer_s(const comm_dimension& pp) {
  double send_s = 0;
  double gather_s = 0;
  for (const comm_collective& c : pp.collectives) {
    if (c.kind == collective_kind::send_recv) send_s = c.time_per_call_s;  // forward and backward alike
    if (c.kind == collective_kind::all_gather) gather_s = c.time_per_call_s;
  }
  return send_s + gather_s;
}

/// The summary (§4.4): `reference` evaluates every stage on its own and prices with estimate_collective;
/// `accounts`, when given, receives the per-stage account (§5.5).
/// The job's element sizes, micro-batches and every group's size, count and placement (§4.1), once.
void set_up(comm_context& x) {
  const job_spec& job = x.job;
  const parallel_config& p = job.parallel;
  const training_config& t = job.training;
  const std::int64_t gpn = job.cluster.gpus_per_node;
  const precision_roles roles = roles_of(t);
  x.act_bytes = static_cast<double>(bytes_of(roles.activations));
  x.grad_bytes = static_cast<double>(bytes_of(roles.grad_comm));
  x.param_bytes = static_cast<double>(bytes_of(roles.param_comm));
  x.m = static_cast<double>(job.num_microbatches());
  x.tokens = static_cast<double>(size_div(job.model.seq_length, p.cp) * t.micro_batch_size);
  x.sp = p.sequence_parallel && p.tp > 1;

  const rank_generator dec = decoder_generator(job);
  x.placement[g_tp] = placement_for(dec, bit(parallel_dim::tp), gpn, "tp");
  x.placement[g_cp] = placement_for(dec, bit(parallel_dim::cp), gpn, "cp");
  x.placement[g_dp] = placement_for(dec, bit(parallel_dim::dp) | bit(parallel_dim::cp), gpn, p.cp > 1 ? "dp-cp" : "dp");
  x.placement[g_pp] = placement_for(dec, bit(parallel_dim::pp), gpn, "pp");
  x.placement[g_emb] = embedding_placement(dec, gpn);
  const std::int64_t etp = expert_tensor_parallel(p);
  x.size = {p.tp, p.cp, p.ep, p.dp * p.cp, expert_data_parallel(p), p.pp, p.pp > 1 ? 2 : 1, job.num_gpus,
            p.tp * p.pp, etp};
  if (p.cp > 1) x.dp_name = "dp-cp";
  const std::int64_t edp = x.size[g_edp];
  x.num_groups = {p.cp * p.dp * p.pp, p.tp * p.dp * p.pp, etp * p.pp * edp, p.tp * p.pp, etp * p.pp * p.ep,
                  p.tp * p.cp * p.dp, p.tp * p.cp * p.dp, 1, p.cp * p.dp, p.ep * edp * p.pp};
  if (p.ep > 1 || job.model.is_moe()) {
    const rank_generator exp = expert_generator(job);
    x.placement[g_ep] = placement_for(exp, bit(parallel_dim::ep), gpn, "ep");
    x.placement[g_edp] = placement_for(exp, bit(parallel_dim::dp), gpn, "expert-dp");
    x.placement[g_etp] = placement_for(exp, bit(parallel_dim::tp), gpn, "expert-tp");
  }
  x.placement[g_world] = combined_placement(job.num_gpus, {.num_nodes = detail::ceil_div(job.num_gpus, gpn)}, {}, gpn);
  x.placement[g_mp] = combined_placement(p.tp * p.pp, x.placement[g_tp], x.placement[g_pp], gpn);
  for (std::size_t g = 0; g < g_count; ++g) x.placement[g].group_size = x.size[g];
}

comm_report summarize(const job_spec& job, bool reference, std::vector<stage_comm_account>* accounts) {
  const parallel_config& p = job.parallel;
  const training_config& t = job.training;
  const std::int64_t gpn = job.cluster.gpus_per_node;
  const parameter_breakdown params = count_parameters(job.model, p.tp);
  comm_context x{job, params};
  set_up(x);
  const std::int64_t microbatches = job.num_microbatches();

  class_list classes;
  stage_classes(job, params, microbatches, !reference, classes);

  comm_report r;
  r.rank_order = p.rank_order;
  r.world_size = job.num_gpus;
  r.gpus_per_node = gpn;
  r.num_nodes = detail::ceil_div(job.num_gpus, gpn);
  r.num_microbatches = microbatches;
  constexpr std::array<int, 6> kDimGroup = {g_tp, g_cp, g_ep, g_dp, g_pp, g_emb};
  std::array<traffic_sums, class_list::kInline> inline_totals;
  std::vector<traffic_sums> more_totals;
  traffic_sums* totals = inline_totals.data();
  if (classes.size() > inline_totals.size()) {
    more_totals.resize(classes.size());
    totals = more_totals.data();
  }
  stage_comm_account* account = nullptr;
  if (accounts != nullptr) {
    accounts->assign(classes.size(), stage_comm_account{});
    std::size_t i = 0;
    for (const stage_class& c : classes) {
      (*accounts)[i].first_stage = c.first_stage;
      (*accounts)[i++].num_stages = c.num_stages;
    }
    account = accounts->data();
  }
  const class_view view(classes);
  row_sink sink(x, view, totals, account, reference);
  auto fill = [&](table_fn table, comm_dimension& dim, std::size_t index) {
    sink.begin(dim, index);
    table(x, sink);
    sink.end();
  };
  for (std::size_t d = 0; d < r.dimensions.size(); ++d) {
    comm_dimension& dim = r.dimensions[d];
    dim.dim = static_cast<parallel_dim>(d);
    set_summary(dim.groups, x, kDimGroup[d]);
    if (dim.dim == parallel_dim::embedding && p.pp == 1) dim.groups.num_groups = 0;
    if (dim.dim == parallel_dim::dp && job.model.is_moe()) set_summary(dim.expert_groups, x, g_edp);
    else dim.expert_groups.group_size = 0;
    fill(kTables[d], dim, d);
    r.calls_per_iteration_cluster += dim.calls_per_iteration_cluster;
    r.bytes_per_iteration_cluster += dim.bytes_per_iteration_cluster;
    r.time_per_iteration_per_gpu_s += dim.time_per_iteration_s;
  }
  r.scalars.dim = parallel_dim::dp;
  set_summary(r.scalars.groups, x, t.zero_stage >= 1 ? g_world : g_mp);
  r.scalars.expert_groups.group_size = 0;
  fill(scalar_table, r.scalars, r.dimensions.size());
  r.pp_transfer_s = pp_transfer_s(r.dimensions[static_cast<std::size_t>(parallel_dim::pp)]);
  r.calls_per_iteration_cluster += r.scalars.calls_per_iteration_cluster;
  r.bytes_per_iteration_cluster += r.scalars.bytes_per_iteration_cluster;
  r.time_per_iteration_per_gpu_s += r.scalars.time_per_iteration_s;
  return r;
}

}  // namespace

comm_report summarize_comm(const job_spec& job) { return summarize(job, false, nullptr); }

comm_report summarize_comm(const job_spec& job, std::vector<stage_comm_account>& stages) {
  return summarize(job, false, &stages);
}

comm_report detail::summarize_comm_reference(const job_spec& job) { return summarize(job, true, nullptr); }

comm_report detail::summarize_comm_reference(const job_spec& job, std::vector<stage_comm_account>& stages) {
  return summarize(job, true, &stages);
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
