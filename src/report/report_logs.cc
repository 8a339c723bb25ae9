// `trainplan logs`: the log report as text for people (with what to do about what was found), as JSON
// for tools, and the one-line updates of --follow. Formats only; src/core/logs/logs.cc computes.
#include <array>
#include <cmath>
#include <string>

#include <fmt/format.h>

#include "report_detail.h"
#include "reporters.h"
#include "trainplan/core/logs/logs.h"
#include "trainplan/report/report.h"

namespace trainplan {

namespace {

using detail::json;

/// "42 s", "12.5 min", "5.2 h", "124.97 days".
std::string duration(double s) {
  if (std::isnan(s)) return "unknown";
  if (s < 120) return fmt::format("{:.2f} s", s);
  if (s < 7200) return fmt::format("{:.1f} min", s / 60);
  if (s < 3 * 86400) return fmt::format("{:.1f} h", s / 3600);
  return fmt::format("{:.2f} days", s / 86400);
}

std::string where(const log_position& p) { return p.file + ":" + std::to_string(p.line); }

std::string_view cause_name(log_event e) {
  static constexpr std::array<std::string_view, 5> kNames = {"unexplained", "start or restart warm-up",
                                                             "checkpoint save", "evaluation", "fp16 overflow"};
  return kNames[static_cast<std::size_t>(e)];
}

std::string_view verdict_name(log_verdict v) {
  static constexpr std::array<std::string_view, 5> kNames = {"on_plan", "slowed_down", "slower_than_plan",
                                                             "faster_than_plan", "not_enough_data"};
  return kNames[static_cast<std::size_t>(v)];
}

/// What each verdict asks the engineer to do (§8.6).
std::string_view verdict_advice(log_verdict v) {
  static constexpr std::array<std::string_view, 5> kAdvice = {
      "on plan",
      "slower than its own first steady level: look for a slow rank with `trainplan-bench health`",
      "slower than predicted from the start: check that the log's layout and flags are the plan's, then measure "
      "GEMMs and collectives with `trainplan-bench` and plan with its calibration profile",
      "faster than predicted: the plan is pessimistic for this stack; a calibration profile from `trainplan-bench` "
      "tightens it",
      "not enough progress lines with a time per iteration to compare"};
  return kAdvice[static_cast<std::size_t>(v)];
}

std::string pct(double f) { return fmt::format("{:+.1f}%", 100 * f); }

void progress_text(std::string& o, const log_report& r) {
  o += "\nProgress\n";
  if (r.train_iterations > 0) {
    const std::int64_t remaining = std::max<std::int64_t>(0, r.train_iterations - r.last_iteration);
    o += fmt::format("  iteration            {} / {} ({:.1f}%), {} remaining\n", format_count(r.last_iteration),
                     format_count(r.train_iterations), 100.0 * static_cast<double>(r.last_iteration) / static_cast<double>(r.train_iterations),
                     format_count(remaining));
  } else {
    o += fmt::format("  iteration            {} (the run's total is not logged: --total-iters N)\n", format_count(r.last_iteration));
  }
  if (r.tokens_done >= 0) {
    o += fmt::format("  tokens               {} done", format_count(r.tokens_done));
    o += r.tokens_remaining >= 0 ? fmt::format(", {} remaining\n", format_count(r.tokens_remaining)) : "\n";
  }
  if (r.log_interval > 1) o += fmt::format("  log interval         every {} iterations\n", r.log_interval);
  o += fmt::format("  time per iteration   {} recent, {} mean", duration(r.recent_iteration_s), duration(r.mean_iteration_s));
  if (!std::isnan(r.wall_iteration_s)) o += fmt::format(", {} by the wall clock (checkpoints and evaluations included)", duration(r.wall_iteration_s));
  o += "\n";
  if (!std::isnan(r.recent_tflops)) o += fmt::format("  TFLOPs per GPU       {:.1f} recent, {:.1f} mean (as logged)\n", r.recent_tflops, r.mean_tflops);
  if (!std::isnan(r.recent_samples_per_s)) o += fmt::format("  samples per second   {:.2f} recent (as logged)\n", r.recent_samples_per_s);
  if (!std::isnan(r.eta_low_s)) {
    o += r.eta_high_s - r.eta_low_s < 1 ? fmt::format("  ETA                  {}\n", duration(r.eta_low_s))
                                        : fmt::format("  ETA                  {} to {} (recent, whole run{})\n", duration(r.eta_low_s),
                                                      duration(r.eta_high_s), std::isnan(r.wall_iteration_s) ? "" : ", wall clock");
  }
  for (const log_batch_change& b : r.batch_changes) {
    o += fmt::format("  batch size           {} → {} at iteration {}\n", b.before, b.after, format_count(b.iteration));
  }
}

void findings_text(std::string& o, const log_report& r) {
  o += fmt::format("\nThroughput steps: {}\n", r.step_count);
  for (const log_throughput_step& s : r.steps) {
    o += fmt::format("  iteration {} ({}): {:.2f} → {:.2f} s/iteration ({})", format_count(s.iteration), where(s.at),
                     s.before_s, s.after_s, pct(s.after_s / s.before_s - 1));
    if (!std::isnan(s.before_tflops) && !std::isnan(s.after_tflops)) o += fmt::format(", {:.1f} → {:.1f} TFLOPs", s.before_tflops, s.after_tflops);
    o += "\n";
  }
  if (r.open_level.present) {
    const log_open_level& l = r.open_level;
    o += fmt::format("  open: the last {} lines, from iteration {} ({}), run at {:.2f} s/iteration, {} against the level of "
                     "{:.2f} s: a step if it lasts --step-min-lines lines\n",
                     l.lines, format_count(l.first_iteration), where(l.at), l.run_s, pct(l.run_s / l.level_s - 1), l.level_s);
  }
  o += fmt::format("One-off slow lines: {}\n", r.slow_iteration_count);
  for (const log_slow_iteration& s : r.slow_iterations) {
    o += fmt::format("  iteration {} ({}): {:.2f} s, {} over the level of {:.2f} s ({})\n", format_count(s.iteration),
                     where(s.at), s.iteration_s, pct(s.iteration_s / s.level_s - 1), s.level_s, cause_name(s.cause));
  }
  o += fmt::format("Loss spikes: {}\n", r.spike_count);
  for (const log_spike& s : r.spikes) {
    o += fmt::format("  iterations {}-{} ({}): loss {:.3f} → {:.3f} at {}", format_count(s.first_iteration),
                     format_count(s.last_iteration), where(s.at), s.baseline_loss, s.peak_loss, format_count(s.peak_loss_iteration));
    if (!std::isnan(s.peak_grad_norm)) {
      o += fmt::format(", grad norm {} → {:.3f} at {}", std::isnan(s.baseline_grad_norm) ? std::string("?") : fmt::format("{:.3f}", s.baseline_grad_norm),
                       s.peak_grad_norm, format_count(s.peak_grad_norm_iteration));
    }
    o += s.recovered_iteration >= 0 ? fmt::format("; recovered at {}\n", format_count(s.recovered_iteration)) : "; not recovered yet\n";
  }
  o += fmt::format("Skipped iterations: {}; NaN iterations: {}; loss-scale drops: {}\n", r.skipped_total, r.nan_total,
                   r.loss_scale_drop_count);
  for (const log_flagged_iteration& f : r.skipped) o += fmt::format("  skipped at iteration {} ({}): {:.0f}\n", format_count(f.iteration), where(f.at), f.after);
  for (const log_flagged_iteration& f : r.nan) o += fmt::format("  NaN at iteration {} ({}): {:.0f}\n", format_count(f.iteration), where(f.at), f.after);
  for (const log_flagged_iteration& f : r.loss_scale_drops) {
    o += fmt::format("  loss scale {:g} → {:g} at iteration {} ({})\n", f.before, f.after, format_count(f.iteration), where(f.at));
  }
  o += fmt::format("NaN or infinite loss or grad norm: {} lines (loss {}, grad norm {})\n",
                   r.nonfinite_loss_lines + r.nonfinite_grad_norm_lines, r.nonfinite_loss_lines, r.nonfinite_grad_norm_lines);
  for (const log_nonfinite& x : r.nonfinite) {
    o += fmt::format("  {} at iteration {} ({}): {}\n", x.what, format_count(x.iteration), where(x.at), x.how);
  }
  if (!r.nonfinite.empty()) {
    o += "  → the run has diverged or its gradients overflow: an update with a NaN corrupts the weights; go back to "
         "the last checkpoint before the first one, and lower the learning rate or skip the data there\n";
  }
  o += fmt::format("Restarts: {}", r.restart_count);
  o += r.restart_count > 0 ? fmt::format(", {} lost\n", duration(r.restart_lost_s)) : "\n";
  for (const log_restart& x : r.restarts) {
    o += fmt::format("  {}: iteration {} → {} ({} re-done", where(x.at), format_count(x.last_iteration_before),
                     format_count(x.first_iteration_after), x.iterations_redone);
    o += std::isnan(x.gap_s) ? "; no timestamps, so the time without progress is unknown)\n"
                             : fmt::format(", {} without progress)\n", duration(x.gap_s));
  }
}

void stall_text(std::string& o, const log_stall& s) {
  if (!s.checked) return;
  if (s.finished) {
    o += "\nFinished: the last iteration is the run's last.\n";
  } else if (std::isnan(s.silence_s)) {
    o += "\nStall check: no timestamps in the log and no file time (standard input): cannot tell\n";
  } else if (s.stalled) {
    o += fmt::format("\nSTALLED: no progress for {} (expected one line per {}; alert after {}; last progress from the {})\n",
                     duration(s.silence_s), duration(s.expected_interval_s), duration(s.threshold_s), s.last_progress_source);
  } else {
    o += fmt::format("\nRunning: last progress {} ago ({}), alert after {}\n", duration(s.silence_s), s.last_progress_source,
                     duration(s.threshold_s));
  }
}

void plan_text(std::string& o, const log_plan_comparison& c) {
  o += "\nAgainst the plan\n";
  o += fmt::format("  predicted            {:.2f} s/iteration, {:.1f} TFLOPs/GPU\n", c.predicted_iteration_s, c.predicted_tflops_per_gpu);
  if (c.verdict == log_verdict::not_enough_data) {
    o += fmt::format("  → {}\n", verdict_advice(c.verdict));
    return;
  }
  o += fmt::format("  observed             {:.2f} s/iteration (now), {:.1f} TFLOPs/GPU by the plan's count", c.observed_iteration_s,
                   c.observed_tflops_our_count);
  o += std::isnan(c.observed_tflops_logged) ? "\n" : fmt::format(", {:.1f} as logged\n", c.observed_tflops_logged);
  o += fmt::format("  gap                  {} against the plan", pct(c.gap_vs_plan));
  if (!std::isnan(c.gap_vs_first)) o += fmt::format(", {} against its own first level ({:.2f} s)", pct(c.gap_vs_first), c.first_level_s);
  o += "\n";
  if (c.flops_mismatch) {
    o += fmt::format("  note                 the log counts {:.1f} TFLOPs/GPU at this speed, the plan {:.1f} ({}): the log "
                     "probably runs another model or sequence length than the plan (or counts recomputation, ×4/3, where "
                     "the plan does not); check --model and --seq-length\n",
                     c.observed_tflops_logged, c.observed_tflops_our_count, pct(c.tflops_logged_vs_plan));
  }
  if (c.log_global_batch_size > 0 && c.log_global_batch_size != c.plan_global_batch_size) {
    o += fmt::format("  note                 the log runs global batch {}, the plan {}\n", c.log_global_batch_size, c.plan_global_batch_size);
  }
  o += fmt::format("  → {}\n", verdict_advice(c.verdict));
}

json position_json(const log_position& p) { return json{{"file", p.file}, {"line", p.line}}; }

json findings_json(const log_report& r) {
  json f;
  json steps = json::array();
  for (const auto& s : r.steps) {
    steps.push_back({{"iteration", s.iteration}, {"at", position_json(s.at)}, {"before_s", s.before_s}, {"after_s", s.after_s},
                     {"change", s.after_s / s.before_s - 1}, {"before_tflops", s.before_tflops}, {"after_tflops", s.after_tflops}});
  }
  f["throughput_steps"] = {{"count", r.step_count}, {"listed", steps}};
  json slow = json::array();
  for (const auto& s : r.slow_iterations) {
    slow.push_back({{"iteration", s.iteration}, {"at", position_json(s.at)}, {"iteration_s", s.iteration_s}, {"level_s", s.level_s},
                    {"cause", cause_name(s.cause)}});
  }
  f["slow_iterations"] = {{"count", r.slow_iteration_count}, {"listed", slow}};
  json spikes = json::array();
  for (const auto& s : r.spikes) {
    spikes.push_back({{"first_iteration", s.first_iteration}, {"last_iteration", s.last_iteration}, {"at", position_json(s.at)},
                      {"baseline_loss", s.baseline_loss}, {"peak_loss", s.peak_loss}, {"peak_loss_iteration", s.peak_loss_iteration},
                      {"baseline_grad_norm", s.baseline_grad_norm}, {"peak_grad_norm", s.peak_grad_norm},
                      {"peak_grad_norm_iteration", s.peak_grad_norm_iteration},
                      {"recovered_iteration", s.recovered_iteration >= 0 ? json(s.recovered_iteration) : json(nullptr)}});
  }
  f["loss_spikes"] = {{"count", r.spike_count}, {"listed", spikes}};
  auto flagged = [](const std::vector<log_flagged_iteration>& list, std::string_view before, std::string_view after) {
    json a = json::array();
    for (const auto& x : list) a.push_back({{"iteration", x.iteration}, {"at", position_json(x.at)}, {before, x.before}, {after, x.after}});
    return a;
  };
  f["skipped_iterations"] = {{"total", r.skipped_total}, {"listed", flagged(r.skipped, "before", "count")}};
  f["nan_iterations"] = {{"total", r.nan_total}, {"listed", flagged(r.nan, "before", "count")}};
  f["loss_scale_drops"] = {{"count", r.loss_scale_drop_count}, {"listed", flagged(r.loss_scale_drops, "from", "to")}};
  json nonfinite = json::array();
  for (const auto& x : r.nonfinite) {
    nonfinite.push_back({{"iteration", x.iteration}, {"at", position_json(x.at)}, {"what", x.what}, {"how", x.how}});
  }
  f["nonfinite"] = {{"loss_lines", r.nonfinite_loss_lines}, {"grad_norm_lines", r.nonfinite_grad_norm_lines}, {"listed", nonfinite}};
  const log_open_level& l = r.open_level;
  f["open_level"] = l.present ? json{{"first_iteration", l.first_iteration}, {"at", position_json(l.at)}, {"lines", l.lines},
                                     {"level_s", l.level_s}, {"run_s", l.run_s}, {"change", l.run_s / l.level_s - 1}}
                              : json(nullptr);
  json restarts = json::array();
  for (const auto& x : r.restarts) {
    restarts.push_back({{"at", position_json(x.at)}, {"last_iteration_before", x.last_iteration_before},
                        {"first_iteration_after", x.first_iteration_after}, {"iterations_redone", x.iterations_redone},
                        {"gap_s", x.gap_s}, {"lost_s", x.lost_s}});
  }
  f["restarts"] = {{"count", r.restart_count}, {"lost_s", r.restart_lost_s}, {"listed", restarts}};
  json batches = json::array();
  for (const auto& b : r.batch_changes) batches.push_back({{"iteration", b.iteration}, {"before", b.before}, {"after", b.after}});
  f["batch_size_changes"] = batches;
  return f;
}

json logs_json(const log_report& r, const log_plan_comparison* c) {
  json j;
  j["files"] = r.files;
  j["format"] = r.has_format ? json(to_string(r.format)) : json(nullptr);
  j["lines"] = {{"total", r.lines}, {"progress", r.records}, {"unknown", r.unknown_lines}, {"duplicate", r.duplicate_records},
                {"other_format", r.other_format_records}, {"malformed", r.malformed_lines}, {"overlong", r.overlong_lines},
                {"binary", r.binary_lines},
                {"cut_short", r.cut_short_lines}, {"deepspeed_engine_companion", r.companion_lines}};
  j["warnings"] = r.warnings;
  j["progress"] = {{"first_iteration", r.first_iteration >= 0 ? json(r.first_iteration) : json(nullptr)},
                   {"last_iteration", r.last_iteration >= 0 ? json(r.last_iteration) : json(nullptr)},
                   {"train_iterations", r.train_iterations > 0 ? json(r.train_iterations) : json(nullptr)},
                   {"log_interval", r.log_interval}, {"global_batch_size", r.global_batch_size},
                   {"consumed_samples", r.consumed_samples >= 0 ? json(r.consumed_samples) : json(nullptr)},
                   {"tokens_done", r.tokens_done >= 0 ? json(r.tokens_done) : json(nullptr)},
                   {"tokens_remaining", r.tokens_remaining >= 0 ? json(r.tokens_remaining) : json(nullptr)},
                   {"mean_iteration_s", r.mean_iteration_s}, {"recent_iteration_s", r.recent_iteration_s},
                   {"wall_iteration_s", r.wall_iteration_s}, {"first_level_s", r.first_level_s},
                   {"mean_tflops", r.mean_tflops}, {"recent_tflops", r.recent_tflops},
                   {"recent_samples_per_s", r.recent_samples_per_s},
                   {"eta_low_s", r.eta_low_s}, {"eta_high_s", r.eta_high_s},
                   {"last_progress_timestamp_s", r.last_record_timestamp_s}};
  j["findings"] = findings_json(r);
  if (r.stall.checked) {
    const log_stall& s = r.stall;
    j["stall"] = {{"stalled", s.stalled}, {"finished", s.finished}, {"silence_s", s.silence_s},
                  {"expected_interval_s", s.expected_interval_s}, {"threshold_s", s.threshold_s},
                  {"last_progress_source", s.last_progress_source}};
  }
  if (c != nullptr) {
    j["against_plan"] = {{"predicted_iteration_s", c->predicted_iteration_s}, {"predicted_tflops_per_gpu", c->predicted_tflops_per_gpu},
                         {"observed_iteration_s", c->observed_iteration_s}, {"first_level_s", c->first_level_s},
                         {"observed_tflops_logged", c->observed_tflops_logged}, {"observed_tflops_plan_count", c->observed_tflops_our_count},
                         {"gap_vs_plan", c->gap_vs_plan}, {"gap_vs_first_level", c->gap_vs_first},
                         {"tflops_logged_vs_plan", c->tflops_logged_vs_plan}, {"flops_mismatch", c->flops_mismatch},
                         {"plan_global_batch_size", c->plan_global_batch_size}, {"log_global_batch_size", c->log_global_batch_size},
                         {"verdict", verdict_name(c->verdict)}, {"advice", verdict_advice(c->verdict)}};
  }
  return j;
}

}  // namespace

std::string text_reporter::logs(const run_context* ctx, const log_report& r, const log_plan_comparison* c) const {
  std::string files;
  for (const auto& f : r.files) files += (files.empty() ? "" : ", ") + f;
  std::string o = fmt::format("Log {} ({}; {}: {} progress, {} other, {} unknown)\n", files,
                              r.has_format ? display_name(r.format) : std::string_view("no progress lines recognised"),
                              detail::counted(r.lines, "line"), format_count(r.records),
                              format_count(r.lines - r.records - r.unknown_lines), format_count(r.unknown_lines));
  if (r.records == 0) {
    o += "No training-progress lines yet (read: Megatron-LM, Megatron-DeepSpeed, GPT-NeoX, NeMo 1 and 2, torchtitan, "
         "DeepSpeed's engine and pipeline).\n";
  } else {
    progress_text(o, r);
    findings_text(o, r);
  }
  stall_text(o, r.stall);
  if (c != nullptr) {
    if (ctx != nullptr && ctx->has_job) {
      o += fmt::format("\nPlan: {} on {} of {}{}", ctx->job.model.name, detail::counted(ctx->job.cluster.num_nodes, "node"),
                       ctx->job.cluster.name, ctx->preset.empty() ? "" : " (preset " + ctx->preset + ")");
    }
    plan_text(o, *c);
  }
  if (!r.warnings.empty()) {
    o += "\nWarnings\n";
    for (const auto& w : r.warnings) o += "  " + w + "\n";
  }
  return o;
}

namespace {

/// The logs document: indented, or on one line for --follow's JSON Lines.
std::string logs_document(const run_context* ctx, const log_report& r, const log_plan_comparison* c, bool one_line) {
  json j;
  j["schema_version"] = kSchemaVersion;
  j["context"] = detail::context_json(ctx);
  j["logs"] = logs_json(r, c);
  return j.dump(one_line ? -1 : 2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace

std::string json_reporter::logs(const run_context* ctx, const log_report& r, const log_plan_comparison* c) const {
  return logs_document(ctx, r, c, false);
}

std::string json_reporter::logs_update(const run_context* ctx, const log_report& r, const log_plan_comparison* c) const {
  return logs_document(ctx, r, c, true);
}

std::string text_reporter::logs_update(const run_context*, const log_report& r, const log_plan_comparison*) const {
  std::string o = fmt::format("iteration {}", format_count(r.last_iteration));
  if (r.train_iterations > 0) o += fmt::format("/{}", format_count(r.train_iterations));
  o += fmt::format(" | {} recent", duration(r.recent_iteration_s));
  if (!std::isnan(r.eta_low_s)) o += fmt::format(" | ETA {}-{}", duration(r.eta_low_s), duration(r.eta_high_s));
  o += fmt::format(" | steps {} | slow {} | spikes {} | restarts {}", r.step_count, r.slow_iteration_count, r.spike_count,
                   r.restart_count);
  if (r.nonfinite_loss_lines + r.nonfinite_grad_norm_lines > 0) {
    o += fmt::format(" | NaN/inf {} lines", r.nonfinite_loss_lines + r.nonfinite_grad_norm_lines);
  }
  if (r.stall.checked && r.stall.stalled) {
    o += fmt::format(" | STALLED: no progress for {} (expected one line per {})", duration(r.stall.silence_s),
                     duration(r.stall.expected_interval_s));
  }
  return o + "\n";
}

}  // namespace trainplan
