// Time and the pipeline schedule in text and JSON (docs/formulas.md §5). They format; they never compute.
#include "trainplan/report/report.h"

#include <algorithm>
#include <fmt/format.h>

#include <cmath>

#include "report_detail.h"
#include "reporters.h"

namespace trainplan {

using detail::append_ignored_flags;
using detail::context_json;
using detail::json;
using detail::kGiB;
using detail::parallel_json;
using detail::whole_bytes;

namespace {

json time_json(const time_report& r) {
  json t;
  t["iteration_s"] = r.iteration_s;
  t["samples_per_s"] = r.samples_per_s;
  t["tokens_per_s"] = r.tokens_per_s;
  t["tflops_per_gpu"] = r.tflops_per_gpu;
  t["model_tflops_per_gpu"] = r.model_tflops_per_gpu;
  t["mfu"] = r.mfu;
  t["hfu"] = r.hfu;
  t["bubble_fraction"] = r.bubble_fraction;
  t["schedule"] = to_string(r.schedule);
  t["p2p_s"] = r.p2p_s;
  t["fits"] = r.fits;
  t["peak_reserved_bytes"] = whole_bytes(r.peak_reserved_bytes);
  t["capacity_bytes"] = whole_bytes(r.capacity_bytes);
  const time_breakdown& b = r.breakdown;
  t["breakdown_s"] = {{"compute", b.compute_s},     {"tp_cp_ep_comm", b.tp_comm_s}, {"pipeline_bubble_and_p2p", b.pipeline_s},
                      {"dp_comm", b.dp_comm_s},     {"optimizer", b.optimizer_s}};
  // Not a cause of its own: the part of dp_comm and optimizer that is compute slowed by hidden DP
  // collectives' SMs (§5.4), so breakdown_s still sums to the iteration.
  t["collective_sm_stretch_s"] = b.collective_sm_stretch_s;
  json stages = json::array();
  for (std::size_t i = 0; i < r.compute.stages.size(); ++i) {
    const stage_compute& s = r.compute.stages[i];
    const stage_usage& u = r.pipeline.stages[i];
    stages.push_back({{"stage", s.stage},
                      {"layers", s.num_layers},
                      {"forward_s", r.passes[i].forward_s},
                      {"backward_s", r.passes[i].backward_s},
                      {"busy_s", u.busy_s},
                      {"send_s", u.send_s},
                      {"idle_s", u.idle_s},
                      {"first_forward_delay_s", r.passes[i].first_forward_delay_s},
                      {"grad_reduce_exposed_s", u.grad_reduce_exposed_s}});
  }
  t["stages"] = stages;
  return t;
}

}  // namespace

std::string json_reporter::time(const run_context& ctx, const time_report& r) const {
  json j;
  j["schema_version"] = kSchemaVersion;
  j["context"] = context_json(&ctx);
  j["time"] = time_json(r);
  const error_band& band = ctx.expected_error;
  j["time"]["expected_error"] = detail::error_band_json(band);
  return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

std::string text_reporter::time(const run_context& ctx, const time_report& r) const {
  const job_spec& job = ctx.job;
  const parallel_config& p = job.parallel;
  auto dim = [](const char* name, std::int64_t n) { return n > 1 ? fmt::format(" {} {}", name, n) : std::string(); };
  std::string o = fmt::format("{} on {} × {} ({}), TP {} PP {}{}{} DP {}{}, MBS {}, GBS {}, seq {}{}, {}, {}\n",
                              job.model.name, job.num_gpus, job.cluster.gpu.name, job.cluster.name, p.tp, p.pp,
                              dim("CP", p.cp), dim("EP", p.ep), p.dp, dim("VPP", p.vpp), job.training.micro_batch_size,
                              job.training.global_batch_size, job.model.seq_length,
                              ctx.seq_length_given ? "" : detail::default_sequence_note(job.model),
                              detail::counted(job.num_microbatches(), "micro-batch", "micro-batches"), to_string(r.schedule));
  if (!r.fits) {
    o += fmt::format("WARNING: this layout does not fit: stage {} reserves {} GiB of {} GiB usable per GPU "
                     "(`trainplan memory` with the same flags shows where); the times below are for a layout that "
                     "cannot run\n",
                     r.peak_stage, format_gib(r.peak_reserved_bytes, 1), format_gib(r.capacity_bytes, 1));
  }
  o += "\n";
  o += fmt::format("  iteration            {:10.2f} s\n", r.iteration_s);
  if (const error_band& band = ctx.expected_error; band.runs > 0) {
    o += fmt::format("  expected error         ±{:.0f}%   (p80 of |error| over {} validated runs, {}; `trainplan validate`)\n",
                     100 * band.p80_abs_error, band.runs, band.scope);
  } else {
    o += fmt::format("  expected error             —   (fewer than {} validated runs of {}; `trainplan validate`)\n",
                     kMinBandRuns, band.scope.empty() ? std::string("this GPU generation") : band.scope);
  }
  o += fmt::format("  samples/s            {:10.2f}\n", r.samples_per_s);
  o += fmt::format("  tokens/s             {:10.0f}\n", r.tokens_per_s);
  o += fmt::format("  TFLOPs per GPU       {:10.2f}   (Megatron's report: Narayanan et al. eq. 3, recomputation counted)\n",
                   r.tflops_per_gpu);
  o += fmt::format("  model TFLOPs per GPU {:10.2f}\n", r.model_tflops_per_gpu);
  o += fmt::format("  MFU / HFU            {:9.1f}% / {:.1f}%\n", 100 * r.mfu, 100 * r.hfu);
  o += fmt::format("  bubble fraction      {:9.1f}%\n\n", 100 * r.bubble_fraction);
  const time_breakdown& b = r.breakdown;
  o += "Where the time goes (busiest pipeline rank):\n";
  auto line = [&](const char* name, double s) {
    o += fmt::format("  {:<28} {:9.2f} s {:6.1f}%\n", name, s, 100 * s / r.iteration_s);
  };
  line("compute", b.compute_s);
  line("exposed TP/CP/EP comm", b.tp_comm_s);
  line("pipeline bubble + p2p", b.pipeline_s);
  line("exposed DP comm", b.dp_comm_s);
  line("optimizer (+ param gather)", b.optimizer_s);
  if (b.collective_sm_stretch_s > 0) {
    o += fmt::format("  of the last two, {:.2f} s is compute slowed by the SMs that hidden DP collectives hold "
                     "(docs/formulas.md §5.4)\n",
                     b.collective_sm_stretch_s);
  }
  o += "\nPer pipeline rank (one micro-batch; busy/idle over the iteration):\n";
  o += "  stage layers  forward_s backward_s     busy_s     send_s     idle_s\n";
  for (std::size_t i = 0; i < r.compute.stages.size(); ++i) {
    const stage_compute& s = r.compute.stages[i];
    const stage_usage& u = r.pipeline.stages[i];
    o += fmt::format("  {:5} {:6} {:10.4f} {:10.4f} {:10.2f} {:10.2f} {:10.2f}\n", s.stage, s.num_layers,
                     r.passes[i].forward_s, r.passes[i].backward_s, u.busy_s, u.send_s,
                     u.idle_s);
  }
  append_ignored_flags(o, ctx);
  return o;
}

std::string json_reporter::schedule(const run_context& ctx, const time_report& r) const {
  json j;
  j["schema_version"] = kSchemaVersion;
  j["context"] = context_json(&ctx);
  json s;
  s["kind"] = to_string(r.schedule);
  s["iteration_s"] = r.iteration_s;
  s["pipeline_s"] = r.pipeline.pipeline_s;
  s["bubble_fraction"] = r.bubble_fraction;
  s["microbatches"] = ctx.job.num_microbatches();
  s["timeline_microbatches"] = r.timeline_microbatches;  // fewer than microbatches: a shortened timeline
  s["timeline_s"] = r.timeline_s;
  json ev = json::array();
  for (const schedule_event& e : r.pipeline.events) {
    ev.push_back({{"stage", e.stage},
                  {"chunk", e.chunk},
                  {"microbatch", e.microbatch},
                  {"pass", e.backward ? "backward" : "forward"},
                  {"start_s", e.start_s},
                  {"end_s", e.end_s}});
  }
  s["events"] = ev;
  j["schedule"] = s;
  return j.dump(1, ' ', false, json::error_handler_t::replace) + "\n";
}

namespace {

/// One text panel of the timeline over [t0, t1] in `cols` columns: a row per rank.
std::vector<std::string> schedule_panel(const time_report& r, double t0, double t1, std::size_t cols) {
  std::vector<std::string> rows(r.pipeline.stages.size(), std::string(cols, '.'));
  const double span = std::max(t1 - t0, 1e-12);
  auto col = [&](double t) {
    const double c = (std::clamp(t, t0, t1) - t0) / span * static_cast<double>(cols);
    return std::min(cols - 1, static_cast<std::size_t>(c));
  };
  for (const schedule_event& e : r.pipeline.events) {
    if (e.end_s <= t0 || e.start_s >= t1) continue;
    const char mark = e.chunk > 0 ? (e.backward ? 'b' : 'f') : (e.backward ? 'B' : 'F');
    for (std::size_t c = col(e.start_s); c <= col(std::max(e.start_s, e.end_s - 1e-12)); ++c) {
      rows[static_cast<std::size_t>(e.stage)][c] = mark;
    }
  }
  return rows;
}

}  // namespace

std::string text_reporter::schedule(const run_context& ctx, const time_report& r) const {
  constexpr int width = 100;  // columns of the chart
  const double total = r.timeline_s > 0 ? r.timeline_s : r.pipeline.pipeline_s;
  const std::size_t ranks = r.pipeline.stages.size();
  std::string o = fmt::format("{} schedule, {} micro-batches, {} ranks: pipeline {:.2f} s, iteration {:.2f} s, bubble {:.1f}%\n",
                              to_string(r.schedule), ctx.job.num_microbatches(), ranks, r.pipeline.pipeline_s, r.iteration_s,
                              100 * r.bubble_fraction);
  if (r.timeline_microbatches < ctx.job.num_microbatches()) {
    o += fmt::format("(too many micro-batches to draw: the timeline shows the same stages with {}, {:.2f} s; the "
                     "totals above are the full schedule's)\n",
                     r.timeline_microbatches, total);
  }
  o += "F/B forward/backward (f/b: later model chunks), '.' idle or sending; ";
  // Passes per rank: past a third of the columns they blur into one another, so the start and the end of
  // the iteration are drawn side by side at their own scales, 16 passes each (the HTML report does the same).
  const double passes = ranks > 0 ? static_cast<double>(r.pipeline.events.size()) / static_cast<double>(ranks) : 0;
  const auto cols = static_cast<std::size_t>(std::max(width, 8));
  if (passes <= static_cast<double>(cols) / 3) {
    o += fmt::format("one column = {:.3f} s\n", total / static_cast<double>(cols));
    const std::vector<std::string> rows = schedule_panel(r, 0, total, cols);
    for (std::size_t i = 0; i < ranks; ++i) o += fmt::format("  rank {:3} |{}|\n", i, rows[i]);
    return o;
  }
  const double window = total * 16 / passes;
  const std::size_t half = cols / 2 - 2;
  o += fmt::format("the first and the last 16 passes per rank; one column = {:.3f} s\n", window / static_cast<double>(half));
  const std::vector<std::string> first = schedule_panel(r, 0, window, half);
  const std::vector<std::string> last = schedule_panel(r, total - window, total, half);
  o += fmt::format("  {:8} |{:<{}}| … |{:>{}}|\n", "", fmt::format("0 s"), half, fmt::format("{:.2f} s", total), half);
  for (std::size_t i = 0; i < ranks; ++i) o += fmt::format("  rank {:3} |{}| … |{}|\n", i, first[i], last[i]);
  return o;
}

}  // namespace trainplan
