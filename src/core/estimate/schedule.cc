// Pipeline schedules: Megatron's operation orders, the event simulation and the closed forms
// (docs/formulas.md §5.4); the fast paths are src/core/estimate/schedule_fast.cc.
#include "trainplan/core/estimate/schedule.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <string>

#include "estimate/schedule_detail.h"
#include "trainplan/core/base/error.h"

namespace trainplan {

using namespace detail;  // NOLINT(google-build-using-namespace): this module's internals (src/core/estimate/schedule_detail.h)

namespace {

/// Megatron's interleaved order (core/pipeline_parallel/schedules.py, get_model_chunk_id): virtual
/// micro-batch k runs chunk (k / p) % v (backward: v − 1 − that), and micro-batch (k / (p·v))·p + k % p.
/// Counted for k = 0, 1, 2, … without integer divisions (they dominated building the lists).
struct interleaved_counter {
  std::int64_t p, v;
  std::int64_t i = 0, c = 0, group = 0;  ///< k % p, (k / p) % v, k / (p·v)
  op next(bool backward) {
    op o;
    o.backward = backward;
    o.chunk = backward ? v - 1 - c : c;
    o.microbatch = group * p + i;
    if (++i == p) {
      i = 0;
      if (++c == v) {
        c = 0;
        ++group;
      }
    }
    return o;
  }
};

// Each schedule's operation order on one rank, as Megatron's schedules.py builds it.

void gpipe_order(std::int64_t, std::int64_t, std::int64_t m, std::int64_t, std::int64_t, std::vector<op>& out) {
  for (std::int64_t j = 0; j < m; ++j) out.push_back({false, 0, j});  // all forwards, then all backwards
  for (std::int64_t j = 0; j < m; ++j) out.push_back({true, 0, j});
}

void one_f_one_b_order(std::int64_t rank, std::int64_t p, std::int64_t m, std::int64_t, std::int64_t,
                       std::vector<op>& out) {
  const std::int64_t warm = std::min(p - rank - 1, m);  // warm-up p − r − 1 forwards, steady 1F1B, cool-down
  for (std::int64_t j = 0; j < warm; ++j) out.push_back({false, 0, j});
  for (std::int64_t j = 0; j < m - warm; ++j) {
    out.push_back({false, 0, j + warm});
    out.push_back({true, 0, j});
  }
  for (std::int64_t j = m - warm; j < m; ++j) out.push_back({true, 0, j});
}

void interleaved_order(std::int64_t rank, std::int64_t p, std::int64_t m, std::int64_t v, std::int64_t group,
                       std::vector<op>& out) {
  const std::int64_t total = m * v;
  const std::int64_t warm = warmup_operations(schedule_kind::interleaved, rank, p, m, v, group);  // virtual forwards
  out.reserve(static_cast<std::size_t>(2 * total));
  if (group == p && m % p == 0) {
    interleaved_counter fwd{p, v}, bwd{p, v};  // virtual micro-batch k of each direction, in order
    for (std::int64_t k = 0; k < warm; ++k) out.push_back(fwd.next(false));
    for (std::int64_t k = 0; k < total - warm; ++k) {
      out.push_back(fwd.next(false));
      out.push_back(bwd.next(true));
    }
    for (std::int64_t k = total - warm; k < total; ++k) out.push_back(bwd.next(true));
    return;
  }
  // Another group size: the schedule table, the backward running chunk v − 1 − the table's.
  auto at = [&](std::int64_t k, bool backward) {
    const table_entry t = schedule_table_entry(k, m, v, group);
    return op{backward, backward ? v - 1 - t.chunk : t.chunk, t.microbatch};
  };
  for (std::int64_t k = 0; k < warm; ++k) out.push_back(at(k, false));
  for (std::int64_t k = 0; k < total - warm; ++k) {
    out.push_back(at(k + warm, false));
    out.push_back(at(k, true));
  }
  for (std::int64_t k = total - warm; k < total; ++k) out.push_back(at(k, true));
}

// Activations held at the peak (§3.5): the forwards a rank has run before its first backward.

in_flight gpipe_held(std::int64_t, std::int64_t, std::int64_t m, std::int64_t, std::int64_t) { return {m, m}; }

in_flight one_f_one_b_held(std::int64_t rank, std::int64_t p, std::int64_t m, std::int64_t, std::int64_t) {
  const std::int64_t n = std::min(p - rank, m);
  return {n, n};
}

in_flight interleaved_held(std::int64_t rank, std::int64_t p, std::int64_t m, std::int64_t v, std::int64_t group) {
  const std::int64_t g = group > 0 ? group : p;
  return {std::min(p - rank, m), std::min((p - rank - 1) * 2 + (v - 1) * g + 1, m * v)};
}

// Transfers on the critical path of the closed form for uniform stages (§5.4):
//   GPipe        2(m − 1) + 2(p − 1)        (each phase: fill, then a send per micro-batch)
//   1F1B, p = 2  (m − 1) + 2                 (each rank sends once per steady micro-batch)
//   1F1B, p ≥ 3  2(m − 1) + 2(p − 1) − 1     (middle ranks send twice per steady micro-batch;
//                m = 1: 2(p − 1), as GPipe)
//   interleaved  m·(2v − 1) + 2p − 3         (while a transfer is short against a chunk's work)

double gpipe_sends(double m, double p, double) { return 2 * (m - 1) + 2 * (p - 1); }

double one_f_one_b_sends(double m, double p, double) {
  return p == 2 ? (m - 1) + 2 : m == 1 ? 2 * (p - 1) : 2 * (m - 1) + 2 * (p - 1) - 1;
}

double interleaved_sends(double m, double p, double v) { return m * (2 * v - 1) + 2 * p - 3; }

/// One row per schedule: what it is (the public traits), its order, its closed form's transfer count
/// and its fast path. The event simulation is every schedule's fallback and reference.
struct schedule_row {
  schedule_traits traits;
  void (*order)(std::int64_t rank, std::int64_t p, std::int64_t m, std::int64_t v, std::int64_t group, std::vector<op>& out);
  double (*closed_form_sends)(double m, double p, double v);
  void (*fast)(const schedule_input& in, schedule_result& r);
};

constexpr std::array<schedule_row, 3> kSchedules = {{
    {{schedule_kind::gpipe, "gpipe", false, gpipe_held}, gpipe_order, gpipe_sends, gpipe_fast},
    {{schedule_kind::one_f_one_b, "1f1b", false, one_f_one_b_held}, one_f_one_b_order, one_f_one_b_sends,
     one_f_one_b_fast},
    {{schedule_kind::interleaved, "interleaved-1f1b", true, interleaved_held}, interleaved_order, interleaved_sends,
     interleaved_fast_or_chase},
}};

const schedule_row& row_of(schedule_kind k) {
  const schedule_row& row = kSchedules[static_cast<std::size_t>(k)];
  TRAINPLAN_CHECK(row.traits.kind == k);
  return row;
}


/// What of a rank's DP reduction (`reduce_s` per iteration) outlasts its last backward (§5.4). With
/// overlap each model chunk's buckets are reduced from its last micro-batch's backward on (Megatron's
/// interleaved schedule enables grad sync per chunk, schedules.py backward_step_helper_preprocess), one
/// collective after another: chunk j from the end (j = 0 is chunk 0, the last to finish) has j·p chunk
/// backwards after its own, so the reductions of chunks j..0, (j + 1)·reduce/v, have at least
/// (j·p + 1)·B of wall time. One chunk: max(0, reduce − B).
///
/// Megatron-Core's DDP (`buckets` > 0) launches each bucket when its gradients are done and reduces them one
/// after another: the first chunk's `buckets` buckets fill evenly through its last backward, every later
/// chunk is one bucket launched at the end of its last backward. The reduction then ends at the latest of
/// each bucket's ready time plus the reductions from it on; within the first chunk that is linear in the
/// bucket, so its first and last bucket bound it: reduce/v − (1 − 1/n)·B and reduce/(v·n); chunk j ≥ 1 ends
/// (j + 1)·reduce/v − j·p·B after the rank's last backward.
double exposed_reduction_s(double reduce_s, double chunk_backward_s, std::int64_t p, std::int64_t v, bool overlap,
                           double buckets) {
  if (!overlap) return reduce_s;
  const double per_chunk = reduce_s / static_cast<double>(v);
  double exposed = 0;
  if (buckets > 0) {
    exposed = std::max({exposed, per_chunk - (1 - 1 / buckets) * chunk_backward_s, per_chunk / buckets});
    for (std::int64_t j = 1; j < v; ++j) {
      const double after = static_cast<double>(j * p) * chunk_backward_s;  // one bucket, after its last backward
      exposed = std::max(exposed, static_cast<double>(j + 1) * per_chunk - after);
    }
    return exposed;
  }
  for (std::int64_t j = 0; j < v; ++j) {
    const double after = static_cast<double>(j * p + 1) * chunk_backward_s;
    exposed = std::max(exposed, static_cast<double>(j + 1) * per_chunk - after);
  }
  return exposed;
}

/// The DP reduction and optimizer after the pipeline phase (§5.4): with overlap the reduction hides
/// under the last micro-batch's backward of each model chunk.
void finish(const schedule_input& in, schedule_result& r) {
  double end = 0;
  double opt = 0;
  double drained = 0;  // the latest end of a rank's drain work
  const auto p = static_cast<std::int64_t>(in.stages.size());
  for (std::size_t i = 0; i < in.stages.size(); ++i) {
    const stage_times& s = in.stages[i];
    stage_usage& u = r.stages[i];
    u.grad_reduce_exposed_s =
        exposed_reduction_s(s.grad_reduce_s, s.backward_s, p, in.num_chunks, in.overlap_grad_reduce,
                            s.grad_reduce_buckets);
    // What the reduction hides under runs slower by the SMs its kernel holds (§5.4).
    u.grad_reduce_stretch_s = (s.grad_reduce_s - u.grad_reduce_exposed_s) * in.overlap_compute_stretch;
    u.grad_reduce_exposed_s += u.grad_reduce_stretch_s;
    drained = std::max(drained, u.pipeline_end_s + s.drain_s);
    const double stage_end = u.pipeline_end_s + s.drain_s + u.grad_reduce_exposed_s;
    if (stage_end > end) {
      end = stage_end;
      r.critical_stage = static_cast<std::int64_t>(i);
    }
    opt = std::max(opt, s.optimizer_s);
  }
  r.drain_exposed_s = std::max(0.0, drained - r.pipeline_s);
  r.grad_reduce_exposed_s = end - r.pipeline_s - r.drain_exposed_s;
  r.optimizer_s = opt;
  r.iteration_s = end + opt;
  // The bubble of the pipeline phase as the breakdown counts it (§5.4, §5.7): the busiest rank's idle and
  // send share, the time no schedule can give back to it. Lighter ranks idle longer (imbalance), which the
  // per-rank table shows; averaging them in said 12.9% for GPT-3 175B at TP 4 PP 8 VPP 12 where the
  // breakdown's "pipeline bubble + p2p" is 0.5%.
  double busiest = 0;
  for (const stage_usage& u : r.stages) busiest = std::max(busiest, u.busy_s);
  r.bubble_fraction = r.stages.empty() || !(r.pipeline_s > 0) ? 0 : std::max(0.0, r.pipeline_s - busiest) / r.pipeline_s;
}

}  // namespace

void detail::build_ops(schedule_kind kind, std::int64_t rank, std::int64_t p, std::int64_t m, std::int64_t v,
                       std::int64_t group, std::vector<op>& out) {
  out.clear();
  row_of(kind).order(rank, p, m, v, group, out);
}

void check_schedule(const schedule_input& in) {
  const auto p = static_cast<std::int64_t>(in.stages.size());
  TRAINPLAN_CHECK(p >= 1 && in.num_microbatches >= 1 && in.num_chunks >= 1);
  if (in.kind == schedule_kind::interleaved) {
    if (p < 2) {
      throw input_error("the interleaved schedule (${parallel.num_layers_per_virtual_stage}) needs "
                        "${parallel.pp} > 1");
    }
    // schedules.py forward_backward_pipelining_with_interleaving: a group of G in [p, m] micro-batches,
    // and a last group of 0 or at least p (G = p: m a multiple of p).
    const std::int64_t g = group_of(in), m = in.num_microbatches;
    if (in.group_size > 0 && (g < p || g > m)) {
      throw input_error("${parallel.microbatch_group_size} (" + std::to_string(g) + ") must lie between ${parallel.pp} (" +
                        std::to_string(p) + ") and the micro-batches (" + std::to_string(m) + ") (Megatron's check)");
    }
    if (const std::int64_t rest = m % g; rest != 0 && rest < p) {
      if (in.group_size <= 0) {
        throw input_error("the interleaved schedule needs the number of micro-batches (${training.global_batch_size} / "
                          "(${training.micro_batch_size} × DP) = " + std::to_string(m) +
                          ") to be a multiple of ${parallel.pp} (" + std::to_string(p) + ")");
      }
      throw input_error("the micro-batches (" + std::to_string(m) + ") over ${parallel.microbatch_group_size} (" +
                        std::to_string(g) + ") leave " + std::to_string(rest) + ", fewer than ${parallel.pp} (" +
                        std::to_string(p) + "): Megatron refuses the dependency bubbles");
    }
  } else if (in.num_chunks != 1) {
    throw input_error("model chunks (${parallel.num_layers_per_virtual_stage}) need the interleaved schedule");
  }
}

bool stages_uniform(const schedule_input& in) {
  const stage_times& a = in.stages.front();
  auto same = [](double x, double y) { return std::fabs(x - y) <= 1e-9 * std::max(std::fabs(x), std::fabs(y)); };
  for (const stage_times& s : in.stages) {
    if (!same(s.forward_s, a.forward_s) || !same(s.backward_s, a.backward_s)) return false;
  }
  return true;
}

schedule_result simulate_schedule(const schedule_input& in) {
  check_schedule(in);
  const auto p = static_cast<std::int64_t>(in.stages.size());
  const std::int64_t m = in.num_microbatches;
  const std::int64_t v = in.num_chunks;
  schedule_result r;
  r.stages.resize(static_cast<std::size_t>(p));
  // Buffers reused across calls on this thread (the search simulates many layouts).
  thread_local std::vector<double> done;
  thread_local std::vector<std::vector<op>> ops;
  thread_local std::vector<std::size_t> next;
  thread_local std::vector<double> free_at;
  // Finish time of every (rank, chunk, micro-batch, direction); < 0 while not run.
  done.assign(static_cast<std::size_t>(p * v * m * 2), -1.0);
  auto at = [&](std::int64_t rank, std::int64_t c, std::int64_t j, bool bwd) -> double& {
    return done[static_cast<std::size_t>(((rank * v + c) * m + j) * 2 + (bwd ? 1 : 0))];
  };
  if (ops.size() < static_cast<std::size_t>(p)) ops.resize(static_cast<std::size_t>(p));
  const std::int64_t group = group_of(in);
  for (std::int64_t rank = 0; rank < p; ++rank) build_ops(in.kind, rank, p, m, v, group, ops[static_cast<std::size_t>(rank)]);
  next.assign(static_cast<std::size_t>(p), 0);
  free_at.assign(static_cast<std::size_t>(p), 0.0);
  const std::size_t total_ops = static_cast<std::size_t>(2 * p * v * m);
  if (in.record_events) r.events.reserve(total_ops);
  std::size_t scheduled = 0;
  while (scheduled < total_ops) {
    std::size_t progress = 0;
    for (std::int64_t rank = 0; rank < p; ++rank) {
      const auto ri = static_cast<std::size_t>(rank);
      const stage_times& st = in.stages[ri];
      while (next[ri] < ops[ri].size()) {
        const op& o = ops[ri][next[ri]];
        // The input this operation waits for (§5.4).
        double ready = 0;
        if (!o.backward) {
          if (rank > 0) ready = at(rank - 1, o.chunk, o.microbatch, false);
          else if (o.chunk > 0) ready = at(p - 1, o.chunk - 1, o.microbatch, false);
        } else {
          if (rank < p - 1) ready = at(rank + 1, o.chunk, o.microbatch, true);
          else if (o.chunk < v - 1) ready = at(0, o.chunk + 1, o.microbatch, true);
          else ready = at(rank, o.chunk, o.microbatch, false);
        }
        if (ready < 0) break;
        const double work =
            o.backward ? chunk_backward_s(in, st, rank, o.chunk) : chunk_forward_s(in, st, rank, o.chunk);
        const double send = o.backward ? send_bwd(in, rank, o.chunk) : send_fwd(in, rank, o.chunk, p);
        const double start = std::max(free_at[ri], ready);
        // The rank's first operation (a forward in every order) waits its delay first (§5.4).
        const double delay = next[ri] == 0 ? st.first_forward_delay_s : 0.0;
        const double end = start + delay + work + send;
        at(rank, o.chunk, o.microbatch, o.backward) = end;  // when the input reaches its consumer
        const bool steady =
            steady_operation(next[ri], ops[ri].size(), warmup_operations(in.kind, rank, p, m, v, group));
        free_at[ri] = rank_free_s(in, start + delay + work, send, steady);
        stage_usage& u = r.stages[ri];
        u.busy_s += work;
        u.send_s += blocked_send_s(in, send, steady);
        if (in.record_events) r.events.push_back({rank, o.chunk, o.microbatch, o.backward, start, free_at[ri]});
        ++next[ri];
        ++progress;
      }
    }
    TRAINPLAN_CHECK_MSG(progress > 0, "pipeline schedule deadlocked");
    scheduled += progress;
  }
  for (std::int64_t rank = 0; rank < p; ++rank) {
    stage_usage& u = r.stages[static_cast<std::size_t>(rank)];
    u.pipeline_end_s = free_at[static_cast<std::size_t>(rank)];
    r.pipeline_s = std::max(r.pipeline_s, u.pipeline_end_s);
  }
  for (stage_usage& u : r.stages) u.idle_s = r.pipeline_s - u.busy_s - u.send_s;
  finish(in, r);
  return r;
}

std::string_view to_string(schedule_kind k) { return row_of(k).traits.name; }

const schedule_traits& traits_of(schedule_kind k) { return row_of(k).traits; }

std::int64_t chunk_microbatches_held(std::int64_t chunk, std::int64_t held, std::int64_t p, std::int64_t m,
                                     std::int64_t v, std::int64_t group) {
  const std::int64_t g = group > 0 ? group : p;
  if (g == p && m % p == 0) {
    // Whole groups of p: chunk c is held ⌊held/(p·v)⌋·p + clamp(held mod p·v − c·p, 0, p) times.
    const std::int64_t cycle = p * v;
    return held / cycle * p + std::clamp<std::int64_t>(held % cycle - chunk * p, 0, p);
  }
  std::int64_t n = 0;
  for (std::int64_t k = 0; k < held; ++k) n += schedule_table_entry(k, m, v, g).chunk == chunk ? 1 : 0;
  return n;
}

schedule_result closed_form_schedule(const schedule_input& in) {
  check_schedule(in);
  const auto p = static_cast<std::int64_t>(in.stages.size());
  const double m = static_cast<double>(in.num_microbatches);
  const double v = static_cast<double>(in.num_chunks);
  const double f = in.stages.front().forward_s;
  const double b = in.stages.front().backward_s;
  const double c = in.p2p_s;
  const double pd = static_cast<double>(p);
  schedule_result r;
  r.closed_form = true;
  r.stages.resize(static_cast<std::size_t>(p));
  // Without transfers every schedule takes (m·v + p − 1)·(F + B) with per-chunk F, B (Narayanan et al.
  // 2021: GPipe and 1F1B (p − 1)/m, interleaved (p − 1)/(v·m) of the ideal). Blocking sends add a fixed
  // count of transfer times on the critical path (§5.4; each schedule's closed_form_sends).
  const double sends = p > 1 ? row_of(in.kind).closed_form_sends(m, pd, v) : 0.0;
  const double total = (m * v + pd - 1) * (f + b) + sends * c;
  r.pipeline_s = total;
  for (std::int64_t rank = 0; rank < p; ++rank) {
    stage_usage& u = r.stages[static_cast<std::size_t>(rank)];
    u.busy_s = m * v * (f + b);
    // Every operation sends except the last rank's last-chunk forwards and the first rank's first-chunk
    // backwards.
    const double fwd_sends = p > 1 ? m * v - (rank == p - 1 ? m : 0.0) : 0.0;
    const double bwd_sends = p > 1 ? m * v - (rank == 0 ? m : 0.0) : 0.0;
    u.send_s = (fwd_sends + bwd_sends) * c;
    // Rank r's last backward ends r backward passes (and sends) before rank 0's.
    u.pipeline_end_s = total - (rank > 0 ? b + static_cast<double>(rank - 1) * (b + c) : 0.0);
  }
  // Idle as the simulation counts it: up to the end of the pipeline phase on any rank.
  for (stage_usage& u : r.stages) u.idle_s = total - u.busy_s - u.send_s;
  finish(in, r);
  return r;
}


schedule_result fast_schedule(const schedule_input& in) {
  check_schedule(in);
  schedule_result r;
  row_of(in.kind).fast(in, r);
  finish(in, r);
  return r;
}

schedule_result run_schedule(const schedule_input& in) {
  if (in.record_events) return simulate_schedule(in);
  // First-forward delays have a fast path in 1F1B only (Megatron's, the one schedule that runs them).
  const bool delays = has_first_forward_delays(in);
  if (delays && in.kind != schedule_kind::one_f_one_b) return simulate_schedule(in);
  // The interleaved count of sends holds while a transfer is short against a chunk's work; with
  // transfers the simulation decides.
  const bool closed = !delays && stages_uniform(in) && in.chunk_forward_scale.empty() && in.chunk_backward_scale.empty() &&
                      (in.kind != schedule_kind::interleaved ||
                       (in.p2p_s == 0 && group_of(in) == static_cast<std::int64_t>(in.stages.size())));
  if (closed) return closed_form_schedule(in);
  return fast_schedule(in);
}

}  // namespace trainplan
