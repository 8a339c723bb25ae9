// Pipeline schedule simulator and closed forms (docs/formulas.md §5.4).
#include "trainplan/schedule.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "trainplan/error.h"

namespace trainplan {

std::string_view to_string(schedule_kind k) {
  switch (k) {
    case schedule_kind::gpipe: return "gpipe";
    case schedule_kind::one_f_one_b: return "1f1b";
    case schedule_kind::interleaved: return "interleaved-1f1b";
  }
  return "?";
}

namespace {

struct op {
  bool backward = false;
  std::int64_t chunk = 0;
  std::int64_t microbatch = 0;
};

/// Megatron's interleaved order (core/pipeline_parallel/schedules.py, get_model_chunk_id): virtual
/// micro-batch k runs chunk (k / p) % v, and micro-batch (k / (p·v))·p + k % p.
op interleaved_op(std::int64_t k, std::int64_t p, std::int64_t v, bool backward) {
  op o;
  o.backward = backward;
  const std::int64_t c = (k / p) % v;
  o.chunk = backward ? v - 1 - c : c;
  o.microbatch = (k / (p * v)) * p + k % p;
  return o;
}

/// One rank's operation order. A table of schedules: each builds the list as schedules.py does.
void build_ops(schedule_kind kind, std::int64_t rank, std::int64_t p, std::int64_t m, std::int64_t v,
               std::vector<op>& out) {
  out.clear();
  switch (kind) {
    case schedule_kind::gpipe:  // all forwards, then all backwards (flush)
      for (std::int64_t j = 0; j < m; ++j) out.push_back({false, 0, j});
      for (std::int64_t j = 0; j < m; ++j) out.push_back({true, 0, j});
      return;
    case schedule_kind::one_f_one_b: {  // warm-up p − r − 1 forwards, steady 1F1B, cool-down
      const std::int64_t warm = std::min(p - rank - 1, m);
      for (std::int64_t j = 0; j < warm; ++j) out.push_back({false, 0, j});
      for (std::int64_t j = 0; j < m - warm; ++j) {
        out.push_back({false, 0, j + warm});
        out.push_back({true, 0, j});
      }
      for (std::int64_t j = m - warm; j < m; ++j) out.push_back({true, 0, j});
      return;
    }
    case schedule_kind::interleaved: {  // warm-up (p − r − 1)·2 + (v − 1)·p virtual forwards
      const std::int64_t total = m * v;
      const std::int64_t warm = std::min((p - rank - 1) * 2 + (v - 1) * p, total);
      for (std::int64_t k = 0; k < warm; ++k) out.push_back(interleaved_op(k, p, v, false));
      for (std::int64_t k = 0; k < total - warm; ++k) {
        out.push_back(interleaved_op(k + warm, p, v, false));
        out.push_back(interleaved_op(k, p, v, true));
      }
      for (std::int64_t k = total - warm; k < total; ++k) out.push_back(interleaved_op(k, p, v, true));
      return;
    }
  }
}

/// The DP reduction and optimizer after the pipeline phase (§5.4): with overlap the reduction hides
/// under the last micro-batch's backward.
void finish(const schedule_input& in, schedule_result& r) {
  double end = 0;
  double opt = 0;
  for (std::size_t i = 0; i < in.stages.size(); ++i) {
    const stage_times& s = in.stages[i];
    stage_usage& u = r.stages[i];
    const double window = in.overlap_grad_reduce ? s.backward_s : 0.0;
    u.grad_reduce_exposed_s = std::max(0.0, s.grad_reduce_s - window);
    const double stage_end = u.pipeline_end_s + u.grad_reduce_exposed_s;
    if (stage_end > end) {
      end = stage_end;
      r.critical_stage = static_cast<std::int64_t>(i);
    }
    opt = std::max(opt, s.optimizer_s);
  }
  r.grad_reduce_exposed_s = end - r.pipeline_s;
  r.optimizer_s = opt;
  r.iteration_s = end + opt;
  double idle = 0;
  for (const stage_usage& u : r.stages) idle += (r.pipeline_s - u.busy_s) / r.pipeline_s;
  r.bubble_fraction = r.stages.empty() ? 0 : idle / static_cast<double>(r.stages.size());
}

double send_fwd(const schedule_input& in, std::int64_t r, std::int64_t c, std::int64_t p) {
  return (r == p - 1 && c == in.num_chunks - 1) ? 0.0 : in.p2p_s;
}
double send_bwd(const schedule_input& in, std::int64_t r, std::int64_t c) {
  return (r == 0 && c == 0) ? 0.0 : in.p2p_s;
}

}  // namespace

void check_schedule(const schedule_input& in) {
  const auto p = static_cast<std::int64_t>(in.stages.size());
  TRAINPLAN_CHECK(p >= 1 && in.num_microbatches >= 1 && in.num_chunks >= 1);
  if (in.kind == schedule_kind::interleaved) {
    if (p < 2) {
      throw input_error("the interleaved schedule (--num-layers-per-virtual-pipeline-stage) needs "
                        "--pipeline-model-parallel-size > 1");
    }
    if (in.num_microbatches % p != 0) {
      throw input_error("the interleaved schedule needs the number of micro-batches (--global-batch-size / "
                        "(--micro-batch-size × DP) = " + std::to_string(in.num_microbatches) +
                        ") to be a multiple of --pipeline-model-parallel-size (" + std::to_string(p) + ")");
    }
  } else if (in.num_chunks != 1) {
    throw input_error("model chunks (--num-layers-per-virtual-pipeline-stage) need the interleaved schedule");
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
  // Finish time of every (rank, chunk, micro-batch, direction); < 0 while not run.
  std::vector<double> done(static_cast<std::size_t>(p * v * m * 2), -1.0);
  auto at = [&](std::int64_t rank, std::int64_t c, std::int64_t j, bool bwd) -> double& {
    return done[static_cast<std::size_t>(((rank * v + c) * m + j) * 2 + (bwd ? 1 : 0))];
  };
  std::vector<std::vector<op>> ops(static_cast<std::size_t>(p));
  for (std::int64_t rank = 0; rank < p; ++rank) build_ops(in.kind, rank, p, m, v, ops[static_cast<std::size_t>(rank)]);
  std::vector<std::size_t> next(static_cast<std::size_t>(p), 0);
  std::vector<double> free_at(static_cast<std::size_t>(p), 0.0);
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
        const double work = o.backward ? st.backward_s : st.forward_s;
        const double send = o.backward ? send_bwd(in, rank, o.chunk) : send_fwd(in, rank, o.chunk, p);
        const double start = std::max(free_at[ri], ready);
        const double end = start + work + send;
        at(rank, o.chunk, o.microbatch, o.backward) = end;
        free_at[ri] = end;
        stage_usage& u = r.stages[ri];
        u.busy_s += work;
        u.send_s += send;
        if (in.record_events) r.events.push_back({rank, o.chunk, o.microbatch, o.backward, start, end});
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
  // count of transfer times on the critical path (§5.4):
  //   GPipe        2(m − 1) + 2(p − 1)        (each phase: fill, then a send per micro-batch)
  //   1F1B, p = 2  (m − 1) + 2                 (each rank sends once per steady micro-batch)
  //   1F1B, p ≥ 3  2(m − 1) + 2(p − 1) − 1     (middle ranks send twice per steady micro-batch)
  //   interleaved  m·(2v − 1) + 2p − 3
  double sends = 0;
  if (p > 1) {
    switch (in.kind) {
      case schedule_kind::gpipe: sends = 2 * (m - 1) + 2 * (pd - 1); break;
      case schedule_kind::one_f_one_b: sends = p == 2 ? (m - 1) + 2 : 2 * (m - 1) + 2 * (pd - 1) - 1; break;
      case schedule_kind::interleaved: sends = m * (2 * v - 1) + 2 * pd - 3; break;
    }
  }
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
    u.idle_s = u.pipeline_end_s - u.busy_s - u.send_s;
  }
  finish(in, r);
  return r;
}

schedule_result run_schedule(const schedule_input& in) {
  // The interleaved count of sends holds while a transfer is short against a chunk's work; with
  // transfers the simulation decides.
  const bool closed = stages_uniform(in) && (in.kind != schedule_kind::interleaved || in.p2p_s == 0);
  if (!in.record_events && closed) return closed_form_schedule(in);
  return simulate_schedule(in);
}

}  // namespace trainplan
