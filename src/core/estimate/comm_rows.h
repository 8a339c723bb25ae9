// The machinery of the traffic tables of src/core/estimate/comm.cc (docs/formulas.md §4.2, §4.4): the groups a row
// names, the per-job context, the price cache and the sink that turns rows into per-class totals and the
// per-dimension summary. Included by src/core/estimate/comm.cc only.
#pragma once

#include <algorithm>
#include <array>
#include <bitset>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#include "trainplan/core/base/checked.h"
#include "estimate/comm_detail.h"
#include "trainplan/core/estimate/comm.h"

namespace trainplan::comm_rows {

using namespace detail;  // NOLINT(google-build-using-namespace): this module's internals

/// g_dp is the group that shards (all of DP×CP, or one HSDP replica's ranks); g_dpr the ranks holding
/// the same shard in the other replicas (§2.5).
enum group_ref : int { g_tp, g_cp, g_ep, g_dp, g_edp, g_pp, g_emb, g_world, g_mp, g_etp, g_dpr, g_edpr, g_count };
constexpr std::array<std::string_view, g_count> kGroupNames = {
    "tp",        "cp",           "ep",        "dp",           "expert-dp",           "pp", "embedding", "world",
    "model-parallel", "expert-tp", "dp-replicate", "expert-dp-replicate"};
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
  double regather = 0;         ///< DeepSpeed ZeRO-3: share of a recomputed layer gathered again (§4.2.4)
  std::array<group_placement, g_count> placement;
  std::array<std::int64_t, g_count> size;
  std::array<std::int64_t, g_count> num_groups;  ///< world / size, as products of the other dimensions
  std::string_view dp_name = "dp";               ///< "dp-cp" when CP > 1: gradients are reduced over DP×CP

  std::string_view edp_name = "expert-dp";       ///< "expert-dp-shard" with HSDP (§2.5)

  std::string_view name(int g) const {
    return g == g_dp ? dp_name : g == g_edp ? edp_name : kGroupNames[static_cast<std::size_t>(g)];
  }
};

/// The price of each (group, collective kind) the tables use, worked out on first use (§4.3, §4.4).
class price_cache {
 public:
  explicit price_cache(const comm_context& x) : x_(x), links_(x.job.cluster) {}
  const collective_price& operator()(int group, collective_kind kind) {
    // An all-gather and a reduce-scatter cost the same on every link (§4.3): one price serves both.
    const collective_kind priced = kind == collective_kind::reduce_scatter ? collective_kind::all_gather : kind;
    const std::size_t i = static_cast<std::size_t>(group) * kNumKinds + static_cast<std::size_t>(priced);
    if (!known_[i]) {
      ::new (&slot_[i]) collective_price(price_of(links_, priced, x_.placement[static_cast<std::size_t>(group)]));
      known_[i] = true;
    }
    return slot_[i];
  }

 private:
  const comm_context& x_;
  link_rates links_;
  std::bitset<g_count * kNumKinds> known_;  ///< bit i: slot_[i] is set
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
    // The data-parallel rows and the scalars (the loss and gradient-norm all-reduces over DP or the world).
    if (dim_index_ == static_cast<std::size_t>(parallel_dim::dp) || dim_index_ == a.dimension_s.size() - 1) {
      a.dp_seconds[static_cast<std::size_t>(slot)][static_cast<std::size_t>(overlap)] += seconds;
    }
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

inline void row_sink::end() {
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

}  // namespace trainplan::comm_rows
