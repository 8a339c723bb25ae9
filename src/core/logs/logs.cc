// The streaming pass over a log's lines (docs/formulas.md §8): constant memory (fixed windows, capped
// lists), one call per line. Progress and ETA (§8.1), throughput steps and one-off slow lines (§8.2),
// loss spikes (§8.3), skipped/NaN iterations, loss-scale drops and restarts (§8.4), stalls (§8.5) and the
// comparison with the plan (§8.6).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "trainplan/core/logs/logs.h"

namespace trainplan {

namespace {

/// Progress lines collected before the first level is set (their median).
constexpr std::size_t kWarmupRecords = 8;
/// Trailing window of the loss and grad-norm baselines (§8.3).
constexpr std::size_t kLossWindow = 32;
/// Progress lines after a start or restart whose slowness is put down to warm-up.
constexpr std::int64_t kStartRecords = 2;
/// Warnings kept.
constexpr std::size_t kMaxWarnings = 10;

double median_of(std::vector<double> v) {
  if (v.empty()) return kNotLogged;
  const std::size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  double m = v[mid];
  if (v.size() % 2 == 0) m = (m + *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid))) / 2;
  return m;
}

double median_of(const std::deque<double>& d) { return median_of(std::vector<double>(d.begin(), d.end())); }

/// Median absolute deviation about `m`, scaled to a normal σ (×1.4826).
double robust_sigma(const std::deque<double>& d, double m) {
  std::vector<double> dev;
  dev.reserve(d.size());
  for (double x : d) dev.push_back(std::fabs(x - m));
  return 1.4826 * median_of(std::move(dev));
}

template <class T>
void push_capped(std::vector<T>& list, T item) {
  if (list.size() < log_report::kMaxListed) list.push_back(std::move(item));
}

void push_window(std::deque<double>& d, double x, std::size_t cap) {
  d.push_back(x);
  if (d.size() > cap) d.pop_front();
}

double mean_of(const std::deque<double>& d) {
  if (d.empty()) return kNotLogged;
  double s = 0;
  for (double x : d) s += x;
  return s / static_cast<double>(d.size());
}

/// Megatron-LM and Megatron-DeepSpeed print the same line: one family.
bool same_family(log_format a, log_format b) {
  auto megatron = [](log_format f) { return f == log_format::megatron_lm || f == log_format::megatron_deepspeed; };
  return a == b || (megatron(a) && megatron(b));
}

}  // namespace

log_analyzer::log_analyzer(log_options options) : o_(options) {}

void log_analyzer::begin_file(std::string name) {
  file_ = std::move(name);
  line_ = 0;
  r_.files.push_back(file_);
}

void log_analyzer::warn(const std::string& what) {
  if (r_.warnings.size() < kMaxWarnings) r_.warnings.push_back(file_ + ":" + std::to_string(line_) + ": " + what);
}

void log_analyzer::add_overlong_line() {
  ++line_;
  ++r_.lines;
  ++r_.overlong_lines;
  warn("a line longer than " + std::to_string(kMaxLogLineBytes >> 20) + " MiB; skipped");
}

void log_analyzer::add_binary_line() {
  ++line_;
  ++r_.lines;
  ++r_.binary_lines;
  warn("a line holding NUL bytes (binary data); skipped");
}

void log_analyzer::add_line(std::string_view text) {
  ++line_;
  ++r_.lines;
  const log_line l = parse_log_line(text);
  switch (l.what) {
    case log_line::kind::unknown:
      ++r_.unknown_lines;
      return;
    case log_line::kind::event:
      if (l.event == log_event::startup) startup_seen_ = true;
      else pending_event_ = l.event;
      return;
    case log_line::kind::malformed:
      ++r_.malformed_lines;
      warn(std::string("a malformed ") + std::string(display_name(l.format)) + " progress line (" + l.problem +
           "); skipped");
      return;
    case log_line::kind::record:
      break;
  }
  if (!r_.has_format) {
    r_.has_format = true;
    r_.format = l.format;
  } else if (!same_family(l.format, r_.format)) {
    if (r_.other_format_records++ == 0) {
      warn("a " + std::string(display_name(l.format)) + " progress line in a " +
           std::string(display_name(r_.format)) + " log; lines of a second format are counted and skipped");
    }
    return;
  }
  add_record(l.record, l.format);
}

void log_analyzer::note_restart(const log_record& rec) {
  log_restart x;
  x.at = here();
  x.last_iteration_before = prev_iteration_;
  x.first_iteration_after = rec.iteration;
  const std::int64_t interval = std::max<std::int64_t>(1, r_.log_interval);
  x.iterations_redone = std::max<std::int64_t>(0, prev_iteration_ - rec.iteration + interval);
  const double step_s = std::isnan(rec.iteration_s) ? 0 : rec.iteration_s * static_cast<double>(interval);
  if (!std::isnan(rec.timestamp_s) && !std::isnan(prev_timestamp_s_)) {
    x.gap_s = std::max(0.0, rec.timestamp_s - prev_timestamp_s_ - step_s);
  }
  const double speed_s = n_s_ > 0 ? sum_s_ / static_cast<double>(n_s_) : (std::isnan(rec.iteration_s) ? 0 : rec.iteration_s);
  x.lost_s = (std::isnan(x.gap_s) ? 0 : x.gap_s) + static_cast<double>(x.iterations_redone) * speed_s;
  ++r_.restart_count;
  r_.restart_lost_s += x.lost_s;
  push_capped(r_.restarts, x);
  since_start_ = 0;
}

void log_analyzer::add_record(const log_record& in, log_format f) {
  log_record rec = in;
  if (r_.format == log_format::megatron_lm && f == log_format::megatron_deepspeed) r_.format = f;
  if (prev_iteration_ >= 0 && rec.iteration == prev_iteration_ && !startup_seen_) {
    ++r_.duplicate_records;  // every rank printed it
    return;
  }
  ++r_.records;
  const bool restart = prev_iteration_ >= 0 && (rec.iteration <= prev_iteration_ || startup_seen_);
  if (restart) note_restart(rec);
  startup_seen_ = false;
  std::int64_t delta = 0;
  if (prev_iteration_ >= 0 && !restart && rec.iteration > prev_iteration_) {
    delta = rec.iteration - prev_iteration_;
    // The interval: the first step, then any step seen twice in a row (torchtitan logs 1, 10, 20, …).
    if (r_.log_interval == 0 || delta == last_delta_) r_.log_interval = delta;
    last_delta_ = delta;
  }
  if (delta > 0 && !std::isnan(rec.timestamp_s) && !std::isnan(prev_timestamp_s_) && rec.timestamp_s >= prev_timestamp_s_) {
    const double dt = rec.timestamp_s - prev_timestamp_s_;
    wall_sum_s_ += dt;
    wall_iterations_ += delta;
    if (std::isnan(rec.iteration_s)) rec.iteration_s = dt / static_cast<double>(delta);  // torchtitan
  }
  if (r_.first_iteration < 0) r_.first_iteration = rec.iteration;
  r_.last_iteration = rec.iteration;
  if (rec.train_iterations > 0) r_.train_iterations = rec.train_iterations;
  if (rec.consumed_samples >= 0) r_.consumed_samples = rec.consumed_samples;
  if (rec.consumed_tokens >= 0) consumed_tokens_ = rec.consumed_tokens;
  if (rec.consumed_tokens > 0 && rec.consumed_samples > 0) seq_from_log_ = rec.consumed_tokens / rec.consumed_samples;
  if (rec.global_batch_size > 0) {
    if (r_.global_batch_size > 0 && rec.global_batch_size != r_.global_batch_size) {
      push_capped(r_.batch_changes, log_batch_change{rec.iteration, r_.global_batch_size, rec.global_batch_size});
      reset_level();  // a new batch size runs at a new speed: not a throughput step
    }
    r_.global_batch_size = rec.global_batch_size;
  }
  if (!std::isnan(rec.timestamp_s)) last_record_ts_ = rec.timestamp_s;
  track_flags(rec);
  track_speed(rec);
  track_loss(rec);
  prev_iteration_ = rec.iteration;
  prev_timestamp_s_ = rec.timestamp_s;
  pending_event_ = log_event::none;
  ++since_start_;
}

void log_analyzer::track_flags(const log_record& rec) {
  if (rec.skipped_iterations > 0) {
    r_.skipped_total += rec.skipped_iterations;
    push_capped(r_.skipped, log_flagged_iteration{rec.iteration, here(), 0, static_cast<double>(rec.skipped_iterations)});
  }
  if (rec.nan_iterations > 0) {
    r_.nan_total += rec.nan_iterations;
    push_capped(r_.nan, log_flagged_iteration{rec.iteration, here(), 0, static_cast<double>(rec.nan_iterations)});
  }
  if (!std::isnan(rec.loss_scale)) {
    if (!std::isnan(prev_loss_scale_) && rec.loss_scale < prev_loss_scale_) {
      ++r_.loss_scale_drop_count;
      push_capped(r_.loss_scale_drops, log_flagged_iteration{rec.iteration, here(), prev_loss_scale_, rec.loss_scale});
    }
    prev_loss_scale_ = rec.loss_scale;
  }
}

// ---- speed (§8.2) -------------------------------------------------------------------------------------

void log_analyzer::reset_level() {
  level_s_ = kNotLogged;
  warmup_.clear();
  level_sum_s_ = level_sum_tflops_ = 0;
  level_n_ = level_tflops_n_ = 0;
  run_n_ = 0;
  first_segment_open_ = true;
  r_.first_level_s = kNotLogged;
  step_open_ = false;
}

void log_analyzer::track_speed(const log_record& rec) {
  const double x = rec.iteration_s;
  if (std::isnan(x) || !std::isfinite(x) || x <= 0) return;
  const log_event cause = since_start_ < kStartRecords ? log_event::startup : pending_event_;
  segment s{rec.iteration, here(), x, rec.tflops_per_gpu, cause};
  if (std::isnan(level_s_)) {
    warmup_.push_back(s);
    if (warmup_.size() >= kWarmupRecords) flush_warmup();
    return;
  }
  classify(s);
}

void log_analyzer::flush_warmup() {
  if (warmup_.empty()) return;
  std::vector<double> xs;
  for (const segment& s : warmup_) xs.push_back(s.iteration_s);
  level_s_ = median_of(std::move(xs));
  const std::vector<segment> buffered = std::move(warmup_);
  warmup_.clear();
  for (const segment& s : buffered) classify(s);
}

void log_analyzer::add_steady(const segment& s) {
  sum_s_ += s.iteration_s;
  ++n_s_;
  push_window(recent_s_, s.iteration_s, static_cast<std::size_t>(o_.recent_records));
  if (!std::isnan(s.tflops)) {
    sum_tflops_ += s.tflops;
    ++n_tflops_;
    push_window(recent_tflops_, s.tflops, static_cast<std::size_t>(o_.recent_records));
  }
}

void log_analyzer::classify(const segment& s) {
  const double ratio = s.iteration_s / level_s_ - 1;
  if (ratio >= o_.slow_factor) {  // a one-off: checkpoint, evaluation, warm-up or unexplained
    ++r_.slow_iteration_count;
    push_capped(r_.slow_iterations, log_slow_iteration{s.iteration, s.at, s.iteration_s, level_s_, s.cause});
    return;
  }
  add_steady(s);
  const int sign = std::fabs(ratio) >= o_.step_threshold ? (ratio > 0 ? 1 : -1) : 0;
  if (sign == 0) {
    run_n_ = 0;
    level_sum_s_ += s.iteration_s;
    ++level_n_;
    if (!std::isnan(s.tflops)) {
      level_sum_tflops_ += s.tflops;
      ++level_tflops_n_;
    }
    level_s_ = level_sum_s_ / static_cast<double>(level_n_);
    if (first_segment_open_) r_.first_level_s = level_s_;
    if (step_open_ && !r_.steps.empty()) {
      r_.steps.back().after_s = level_s_;
      if (level_tflops_n_ > 0) r_.steps.back().after_tflops = level_sum_tflops_ / static_cast<double>(level_tflops_n_);
    }
    return;
  }
  if (sign != run_sign_ || run_n_ == 0) {
    run_sign_ = sign;
    run_n_ = run_tflops_n_ = 0;
    run_sum_s_ = run_sum_tflops_ = 0;
    run_iteration_ = s.iteration;
    run_at_ = s.at;
  }
  ++run_n_;
  run_sum_s_ += s.iteration_s;
  if (!std::isnan(s.tflops)) {
    run_sum_tflops_ += s.tflops;
    ++run_tflops_n_;
  }
  if (run_n_ < o_.step_min_records) return;
  // A sustained step: the run becomes the new level.
  log_throughput_step step;
  step.iteration = run_iteration_;
  step.at = run_at_;
  step.before_s = level_s_;
  step.after_s = run_sum_s_ / static_cast<double>(run_n_);
  if (level_tflops_n_ > 0) step.before_tflops = level_sum_tflops_ / static_cast<double>(level_tflops_n_);
  if (run_tflops_n_ > 0) step.after_tflops = run_sum_tflops_ / static_cast<double>(run_tflops_n_);
  ++r_.step_count;
  push_capped(r_.steps, step);
  step_open_ = r_.steps.size() <= log_report::kMaxListed && r_.step_count == static_cast<std::int64_t>(r_.steps.size());
  level_sum_s_ = run_sum_s_;
  level_n_ = run_n_;
  level_sum_tflops_ = run_sum_tflops_;
  level_tflops_n_ = run_tflops_n_;
  level_s_ = step.after_s;
  first_segment_open_ = false;
  run_n_ = 0;
}

// ---- loss (§8.3) --------------------------------------------------------------------------------------

void log_analyzer::track_loss(const log_record& rec) {
  if (std::isnan(rec.loss) || !std::isfinite(rec.loss)) return;
  const bool has_grad = !std::isnan(rec.grad_norm) && std::isfinite(rec.grad_norm);
  if (in_spike_) {
    const bool loss_high = rec.loss > spike_.baseline_loss * (1 + o_.spike_recover);
    const bool grad_high = has_grad && !std::isnan(spike_.baseline_grad_norm) &&
                           rec.grad_norm > o_.grad_norm_spike_factor * spike_.baseline_grad_norm;
    if (loss_high || grad_high) {
      spike_.last_iteration = rec.iteration;
      if (rec.loss > spike_.peak_loss) {
        spike_.peak_loss = rec.loss;
        spike_.peak_loss_iteration = rec.iteration;
      }
      if (has_grad && (std::isnan(spike_.peak_grad_norm) || rec.grad_norm > spike_.peak_grad_norm)) {
        spike_.peak_grad_norm = rec.grad_norm;
        spike_.peak_grad_norm_iteration = rec.iteration;
      }
      return;
    }
    spike_.recovered_iteration = rec.iteration;
    ++r_.spike_count;
    push_capped(r_.spikes, spike_);
    in_spike_ = false;
  } else if (losses_.size() >= 2) {
    const double base = median_of(losses_);
    const double sigma = robust_sigma(losses_, base);
    if (rec.loss > base * (1 + o_.spike_threshold) && rec.loss - base > 4 * sigma) {
      in_spike_ = true;
      spike_ = log_spike{};
      spike_.first_iteration = spike_.last_iteration = rec.iteration;
      spike_.at = here();
      spike_.baseline_loss = base;
      spike_.peak_loss = rec.loss;
      spike_.peak_loss_iteration = rec.iteration;
      if (!grad_norms_.empty()) spike_.baseline_grad_norm = median_of(grad_norms_);
      if (has_grad) {
        spike_.peak_grad_norm = rec.grad_norm;
        spike_.peak_grad_norm_iteration = rec.iteration;
      }
      return;
    }
  }
  push_window(losses_, rec.loss, kLossWindow);
  if (has_grad) push_window(grad_norms_, rec.grad_norm, kLossWindow);
}

// ---- the report ---------------------------------------------------------------------------------------

log_report log_analyzer::report() const {
  log_analyzer a = *this;
  if (std::isnan(a.level_s_)) a.flush_warmup();
  log_report r = a.r_;
  if (a.in_spike_) {
    ++r.spike_count;
    push_capped(r.spikes, a.spike_);
  }
  if (a.n_s_ > 0) r.mean_iteration_s = a.sum_s_ / static_cast<double>(a.n_s_);
  r.recent_iteration_s = mean_of(a.recent_s_);
  if (a.n_tflops_ > 0) r.mean_tflops = a.sum_tflops_ / static_cast<double>(a.n_tflops_);
  r.recent_tflops = mean_of(a.recent_tflops_);
  if (a.wall_iterations_ > 0) r.wall_iteration_s = a.wall_sum_s_ / static_cast<double>(a.wall_iterations_);
  if (r.train_iterations == 0 && o_.train_iterations > 0) r.train_iterations = o_.train_iterations;
  const std::int64_t seq = o_.seq_length > 0 ? o_.seq_length : a.seq_from_log_;
  if (a.consumed_tokens_ >= 0) r.tokens_done = a.consumed_tokens_;
  else if (r.consumed_samples >= 0 && seq > 0) r.tokens_done = r.consumed_samples * seq;
  if (r.train_iterations > 0 && r.last_iteration >= 0) {
    const std::int64_t remaining = std::max<std::int64_t>(0, r.train_iterations - r.last_iteration);
    if (r.global_batch_size > 0 && seq > 0) r.tokens_remaining = remaining * r.global_batch_size * seq;
    double lo = kNotLogged, hi = kNotLogged;
    for (double rate : {r.mean_iteration_s, r.recent_iteration_s, r.wall_iteration_s}) {
      if (std::isnan(rate)) continue;
      lo = std::isnan(lo) ? rate : std::min(lo, rate);
      hi = std::isnan(hi) ? rate : std::max(hi, rate);
    }
    if (!std::isnan(lo)) {
      r.eta_low_s = static_cast<double>(remaining) * lo;
      r.eta_high_s = static_cast<double>(remaining) * hi;
    }
  }
  r.last_record_timestamp_s = a.last_record_ts_;
  return r;
}

log_stall check_stall(const log_report& r, const log_options& o, double now_s, double last_progress_s,
                      std::string_view source) {
  log_stall s;
  s.checked = true;
  s.now_s = now_s;
  s.finished = r.train_iterations > 0 && r.last_iteration >= r.train_iterations;
  s.last_progress_s = last_progress_s;
  s.last_progress_source = std::string(source);
  const double rate = !std::isnan(r.recent_iteration_s) ? r.recent_iteration_s : r.wall_iteration_s;
  if (!std::isnan(rate)) s.expected_interval_s = rate * static_cast<double>(std::max<std::int64_t>(1, r.log_interval));
  s.threshold_s = std::isnan(s.expected_interval_s) ? o.stall_min_s : std::max(o.stall_min_s, o.stall_factor * s.expected_interval_s);
  if (std::isnan(last_progress_s) || std::isnan(now_s)) return s;
  s.silence_s = now_s - last_progress_s;
  s.stalled = !s.finished && r.records > 0 && s.silence_s > s.threshold_s;
  return s;
}

log_report log_analyzer::report(double now_s, double written_s, std::string_view written_source) const {
  log_report r = report();
  // §8.5: the file's last write is an instant on this machine's clock; a log timestamp has no zone and can
  // step (a clock set back, a summer-time change), so it is used only where there is no file time (a pipe).
  const bool written = !std::isnan(written_s);
  r.stall = check_stall(r, o_, now_s, written ? written_s : r.last_record_timestamp_s,
                        written ? written_source : std::string_view("log timestamp"));
  return r;
}

// ---- against the plan (§8.6) ---------------------------------------------------------------------------

log_plan_comparison compare_with_plan(const log_report& r, const time_report& p, std::int64_t plan_gbs) {
  log_plan_comparison c;
  c.predicted_iteration_s = p.iteration_s;
  c.predicted_tflops_per_gpu = p.tflops_per_gpu;
  c.plan_global_batch_size = plan_gbs;
  c.log_global_batch_size = r.global_batch_size;
  c.observed_iteration_s = r.recent_iteration_s;
  c.first_level_s = r.first_level_s;
  c.observed_tflops_logged = r.recent_tflops;
  if (std::isnan(c.observed_iteration_s) || c.observed_iteration_s <= 0 || p.iteration_s <= 0) return c;
  c.observed_tflops_our_count = p.tflops_per_gpu * p.iteration_s / c.observed_iteration_s;
  c.gap_vs_plan = c.observed_iteration_s / p.iteration_s - 1;
  if (!std::isnan(c.first_level_s) && c.first_level_s > 0) c.gap_vs_first = c.observed_iteration_s / c.first_level_s - 1;
  constexpr double kSlowedDown = 0.02, kOffPlan = 0.05;  // §8.6
  if (!std::isnan(c.gap_vs_first) && c.gap_vs_first > kSlowedDown) c.verdict = log_verdict::slowed_down;
  else if (c.gap_vs_plan > kOffPlan) c.verdict = log_verdict::slower_than_plan;
  else if (c.gap_vs_plan < -kOffPlan) c.verdict = log_verdict::faster_than_plan;
  else c.verdict = log_verdict::on_plan;
  return c;
}

}  // namespace trainplan
