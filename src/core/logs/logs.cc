// The streaming pass over a log's lines (docs/formulas.md §8): constant memory (fixed windows, capped
// lists), one call per line. Progress and ETA (§8.1), throughput steps and one-off slow lines (§8.2),
// loss spikes (§8.3), skipped/NaN iterations, loss-scale drops and restarts (§8.4), stalls (§8.5) and the
// comparison with the plan (§8.6).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
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

/// Megatron-LM, Megatron-DeepSpeed and GPT-NeoX print the same line: one family.
bool megatron_family(log_format f) {
  return f == log_format::megatron_lm || f == log_format::megatron_deepspeed || f == log_format::gpt_neox;
}
bool same_family(log_format a, log_format b) { return a == b || (megatron_family(a) && megatron_family(b)); }

/// Lines of a run at a new speed that make it an open level at the log's end (§8.2).
constexpr std::int64_t kOpenLevelLines = 3;

}  // namespace

log_analyzer::log_analyzer(log_options options) : o_(options) {}
log_analyzer::~log_analyzer() = default;

log_analyzer::log_analyzer(const log_analyzer& other) { *this = other; }

log_analyzer& log_analyzer::operator=(const log_analyzer& other) {
  if (this == &other) return *this;
  // Every member but the engine's analyzer is a value; that one is copied deep.
  std::unique_ptr<log_analyzer> engine = other.engine_ ? std::make_unique<log_analyzer>(*other.engine_) : nullptr;
  o_ = other.o_;
  r_ = other.r_;
  file_ = other.file_;
  line_ = other.line_;
  engine_pending_ = other.engine_pending_;
  engine_step_ = other.engine_step_;
  engine_step_line_ = other.engine_step_line_;
  pending_event_ = other.pending_event_;
  startup_seen_ = other.startup_seen_;
  since_start_ = other.since_start_;
  prev_iteration_ = other.prev_iteration_;
  last_delta_ = other.last_delta_;
  prev_timestamp_s_ = other.prev_timestamp_s_;
  prev_elapsed_s_ = other.prev_elapsed_s_;
  prev_loss_scale_ = other.prev_loss_scale_;
  prev_skipped_cumulative_ = other.prev_skipped_cumulative_;
  loss_seen_ = other.loss_seen_;
  last_record_ts_ = other.last_record_ts_;
  consumed_tokens_ = other.consumed_tokens_;
  seq_from_log_ = other.seq_from_log_;
  warmup_ = other.warmup_;
  level_s_ = other.level_s_;
  level_sum_s_ = other.level_sum_s_;
  level_sum_tflops_ = other.level_sum_tflops_;
  level_n_ = other.level_n_;
  level_tflops_n_ = other.level_tflops_n_;
  first_segment_open_ = other.first_segment_open_;
  step_open_ = other.step_open_;
  run_sign_ = other.run_sign_;
  run_n_ = other.run_n_;
  run_tflops_n_ = other.run_tflops_n_;
  run_sum_s_ = other.run_sum_s_;
  run_sum_tflops_ = other.run_sum_tflops_;
  run_iteration_ = other.run_iteration_;
  run_at_ = other.run_at_;
  slow_run_ = other.slow_run_;
  recent_s_ = other.recent_s_;
  recent_tflops_ = other.recent_tflops_;
  recent_samples_ = other.recent_samples_;
  sum_s_ = other.sum_s_;
  sum_tflops_ = other.sum_tflops_;
  n_s_ = other.n_s_;
  n_tflops_ = other.n_tflops_;
  wall_sum_s_ = other.wall_sum_s_;
  wall_iterations_ = other.wall_iterations_;
  losses_ = other.losses_;
  grad_norms_ = other.grad_norms_;
  in_spike_ = other.in_spike_;
  spike_ = other.spike_;
  engine_ = std::move(engine);
  return *this;
}

std::int64_t log_analyzer::records() const {
  return r_.records > 0 || !engine_ ? r_.records : engine_->r_.records + (engine_->engine_pending_ ? 1 : 0);
}

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
  add_parsed(parse_log_line(text));
}

void log_analyzer::add_parsed(const log_line& l) {
  if (l.format == log_format::deepspeed_engine && l.what != log_line::kind::unknown) {
    if (!engine_) engine_ = std::make_unique<log_analyzer>(o_);
    engine_->file_ = file_;
    engine_->line_ = line_;
    if (engine_->r_.files.empty() || engine_->r_.files.back() != file_) engine_->r_.files.push_back(file_);
    ++engine_->r_.lines;
    engine_->add_engine_line(l);
    ++r_.companion_lines;
    return;
  }
  if (engine_ && l.what == log_line::kind::event && l.event == log_event::startup) {
    engine_->startup_seen_ = true;  // a restart restarts the engine's count too
  }
  switch (l.what) {
    case log_line::kind::unknown:
    case log_line::kind::throughput:
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

// ---- DeepSpeed's engine lines (§8.0): a step line, completed by the throughput line after it ------------

void log_analyzer::add_engine_line(const log_line& l) {
  switch (l.what) {
    case log_line::kind::record:
      commit_engine_step();
      engine_pending_ = true;
      engine_step_ = l.record;
      engine_step_line_ = line_;
      return;
    case log_line::kind::throughput:
      if (engine_pending_ && (l.step < 0 || l.step == engine_step_.iteration)) {
        engine_step_.samples_per_s = l.samples_per_s;
        commit_engine_step();
      } else if (!engine_pending_ && l.step >= 0) {  // a timer line alone (steps_per_print off)
        log_record rec;
        rec.iteration = l.step;
        rec.samples_per_s = l.samples_per_s;
        rec.timestamp_s = l.timestamp_s;
        engine_pending_ = true;
        engine_step_ = rec;
        engine_step_line_ = line_;
        commit_engine_step();
      }
      return;
    case log_line::kind::event:  // an fp16 overflow: the scaler's own report of the scale it drops
      if (!std::isnan(l.scale_after) && l.scale_after < l.scale_before) {
        ++r_.loss_scale_drop_count;
        const std::int64_t it = engine_pending_ ? engine_step_.iteration : std::max<std::int64_t>(prev_iteration_, 0);
        push_capped(r_.loss_scale_drops, log_flagged_iteration{it, here(), l.scale_before, l.scale_after});
      }
      return;
    case log_line::kind::malformed:
      ++r_.malformed_lines;
      warn("a malformed DeepSpeed engine line (" + l.problem + "); skipped");
      return;
    case log_line::kind::unknown:
      return;
  }
}

void log_analyzer::commit_engine_step() {
  if (!engine_pending_) return;
  engine_pending_ = false;
  log_record rec = engine_step_;
  // The step time from the timestamps (add_record, Δt / Δstep), or else from the job's samples/s.
  if (std::isnan(rec.timestamp_s) && std::isnan(rec.iteration_s) && !std::isnan(rec.samples_per_s) &&
      o_.global_batch_size > 0) {
    rec.iteration_s = static_cast<double>(o_.global_batch_size) / rec.samples_per_s;
  }
  const std::int64_t line = line_;
  line_ = engine_step_line_;
  r_.has_format = true;
  r_.format = log_format::deepspeed_engine;
  add_record(rec, log_format::deepspeed_engine);
  line_ = line;
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
  if (r_.format == log_format::megatron_lm && (f == log_format::megatron_deepspeed || f == log_format::gpt_neox)) r_.format = f;
  if (prev_iteration_ >= 0 && rec.iteration == prev_iteration_ && !startup_seen_) {
    ++r_.duplicate_records;  // every rank printed it
    return;
  }
  if (rec.cut_short && r_.cut_short_lines++ == 0) {
    warn("a progress line cut short; the fields before the cut are read");
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
  // The wall clock between two lines: their timestamps, or a progress bar's own elapsed clock.
  double dt = kNotLogged;
  if (!std::isnan(rec.timestamp_s) && !std::isnan(prev_timestamp_s_) && rec.timestamp_s >= prev_timestamp_s_) {
    dt = rec.timestamp_s - prev_timestamp_s_;
  } else if (std::isnan(rec.timestamp_s) && !std::isnan(rec.elapsed_s) && !std::isnan(prev_elapsed_s_) &&
             rec.elapsed_s >= prev_elapsed_s_) {
    dt = rec.elapsed_s - prev_elapsed_s_;
  }
  if (delta > 0 && !std::isnan(dt)) {
    wall_sum_s_ += dt;
    wall_iterations_ += delta;
    if (std::isnan(rec.iteration_s)) rec.iteration_s = dt / static_cast<double>(delta);  // torchtitan, DeepSpeed engine
  }
  // An iteration time no job has (not positive, or past a week: a corrupted or garbled field; the
  // adversarial campaign's 1e308 ms) would make every level and percentage after it absurd ("+inf%"):
  // the line is read without it.
  constexpr double kMaxIterationS = 7 * 24 * 3600.0;
  if (!std::isnan(rec.iteration_s) && !(rec.iteration_s > 0 && rec.iteration_s <= kMaxIterationS)) {
    char shown[32];
    std::snprintf(shown, sizeof shown, "%g", rec.iteration_s);
    warn(std::string("an iteration time of ") + shown + " s is not in (0 s, one week]; the line is read without it");
    rec.iteration_s = kNotLogged;
  }
  if (!std::isnan(rec.samples_per_s) && std::isfinite(rec.samples_per_s) && rec.samples_per_s > 0) {
    push_window(recent_samples_, rec.samples_per_s, static_cast<std::size_t>(o_.recent_records));
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
  track_nonfinite(rec, f, delta);
  track_speed(rec);
  track_loss(rec);
  prev_iteration_ = rec.iteration;
  prev_timestamp_s_ = rec.timestamp_s;
  prev_elapsed_s_ = rec.elapsed_s;
  pending_event_ = log_event::none;
  ++since_start_;
}

void log_analyzer::track_flags(const log_record& in) {
  log_record rec = in;
  if (rec.skipped_cumulative >= 0) {  // DeepSpeed counts since the start; a restart starts again from 0
    const std::int64_t before = prev_skipped_cumulative_ >= 0 && rec.skipped_cumulative >= prev_skipped_cumulative_
                                    ? prev_skipped_cumulative_
                                    : 0;
    rec.skipped_iterations = rec.skipped_cumulative - before;
    prev_skipped_cumulative_ = rec.skipped_cumulative;
  }
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

/// §8.4: a loss or grad norm printed as nan or inf; or, in Megatron's line, a loss that earlier lines carried
/// and this one omits: training.py training_log prints an average only when `avg > 0.0`, false for NaN (and
/// for an interval whose iterations were all skipped, which the skipped count tells apart).
void log_analyzer::track_nonfinite(const log_record& rec, log_format f, std::int64_t delta) {
  auto note = [&](std::string what, std::string how) {
    push_capped(r_.nonfinite, log_nonfinite{rec.iteration, here(), std::move(what), std::move(how)});
  };
  if (rec.loss_nonfinite) {
    ++r_.nonfinite_loss_lines;
    note("loss", "logged as NaN or infinity");
  } else if (std::isnan(rec.loss) && loss_seen_ && megatron_family(f) && f != log_format::gpt_neox && !rec.cut_short &&
             delta > 0 && rec.skipped_iterations < delta) {
    ++r_.nonfinite_loss_lines;
    note("loss", "omitted: Megatron prints no average that is NaN");
  }
  if (!std::isnan(rec.loss)) loss_seen_ = true;
  if (rec.grad_norm_nonfinite) {
    ++r_.nonfinite_grad_norm_lines;
    note("grad norm", "logged as NaN or infinity");
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

/// §8.2: the first level. The median of the warm-up lines, unless they fall into two levels: a split into
/// two runs of at least 3 lines each whose means differ by more than the step
/// threshold and more than twice either run's own spread. Then the level is the first run's mean and the
/// second run is judged against it (4 lines at 88 s then 4 at 127 s: a level of 88 s and a new one open).
double warmup_level(const std::vector<double>& xs, double step_threshold) {
  const std::size_t n = xs.size();
  double best_sse = std::numeric_limits<double>::infinity();
  std::size_t best_k = 0;
  auto stats = [&](std::size_t from, std::size_t to, double& mean, double& spread) {
    mean = 0;
    for (std::size_t i = from; i < to; ++i) mean += xs[i];
    mean /= static_cast<double>(to - from);
    spread = 0;
    double sse = 0;
    for (std::size_t i = from; i < to; ++i) {
      spread = std::max(spread, std::fabs(xs[i] / mean - 1));
      sse += (xs[i] - mean) * (xs[i] - mean);
    }
    return sse;
  };
  for (std::size_t k = 3; k + 3 <= n; ++k) {
    double m1 = 0, m2 = 0, s1 = 0, s2 = 0;
    const double sse = stats(0, k, m1, s1) + stats(k, n, m2, s2);
    const double gap = std::fabs(m2 / m1 - 1);
    if (gap > step_threshold && gap > 2 * std::max(s1, s2) && sse < best_sse) {
      best_sse = sse;
      best_k = k;
    }
  }
  if (best_k == 0) return median_of(std::vector<double>(xs));
  double m1 = 0, s1 = 0;
  stats(0, best_k, m1, s1);
  return m1;
}

void log_analyzer::flush_warmup() {
  if (warmup_.empty()) return;
  std::vector<double> xs;
  for (const segment& s : warmup_) xs.push_back(s.iteration_s);
  level_s_ = warmup_level(xs, o_.step_threshold);
  const std::vector<segment> buffered = std::move(warmup_);
  warmup_.clear();
  for (const segment& s : buffered) classify(s);
}

/// The lines over --slow-factor held so far are one-offs: a line back near the level ended them.
void log_analyzer::flush_slow_run() {
  for (const segment& s : slow_run_) {
    ++r_.slow_iteration_count;
    push_capped(r_.slow_iterations, log_slow_iteration{s.iteration, s.at, s.iteration_s, level_s_, s.cause});
  }
  slow_run_.clear();
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
  if (ratio >= o_.slow_factor) {
    // A one-off (checkpoint, evaluation, warm-up, unexplained) unless --step-min-lines of them in a row
    // hold one speed: then the job runs slower from their first line, a step (§8.2).
    slow_run_.push_back(s);
    if (static_cast<std::int64_t>(slow_run_.size()) < o_.step_min_records) return;
    double sum = 0;
    for (const segment& x : slow_run_) sum += x.iteration_s;
    const double mean = sum / static_cast<double>(slow_run_.size());
    double spread = 0;
    for (const segment& x : slow_run_) spread = std::max(spread, std::fabs(x.iteration_s / mean - 1));
    if (spread > o_.slow_factor / 2) {  // slow but not one speed: the oldest is a one-off
      const segment oldest = slow_run_.front();
      slow_run_.erase(slow_run_.begin());
      ++r_.slow_iteration_count;
      push_capped(r_.slow_iterations, log_slow_iteration{oldest.iteration, oldest.at, oldest.iteration_s, level_s_, oldest.cause});
      return;
    }
    log_throughput_step step;
    step.iteration = slow_run_.front().iteration;
    step.at = slow_run_.front().at;
    step.before_s = level_s_;
    step.after_s = mean;
    if (level_tflops_n_ > 0) step.before_tflops = level_sum_tflops_ / static_cast<double>(level_tflops_n_);
    double tf_sum = 0;
    std::int64_t tf_n = 0;
    for (const segment& x : slow_run_) {
      add_steady(x);
      if (!std::isnan(x.tflops)) {
        tf_sum += x.tflops;
        ++tf_n;
      }
    }
    if (tf_n > 0) step.after_tflops = tf_sum / static_cast<double>(tf_n);
    ++r_.step_count;
    push_capped(r_.steps, step);
    step_open_ = r_.steps.size() <= log_report::kMaxListed && r_.step_count == static_cast<std::int64_t>(r_.steps.size());
    level_sum_s_ = sum;
    level_n_ = static_cast<std::int64_t>(slow_run_.size());
    level_sum_tflops_ = tf_sum;
    level_tflops_n_ = tf_n;
    level_s_ = mean;
    first_segment_open_ = false;
    run_n_ = 0;
    slow_run_.clear();
    return;
  }
  flush_slow_run();
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
  return a.summary();
}

log_report log_analyzer::summary() {
  commit_engine_step();
  if (std::isnan(level_s_)) flush_warmup();
  if (r_.records == 0 && engine_ && engine_->records() > 0) {
    // A plain DeepSpeed job: the engine's lines are its progress.
    log_report e = engine_->summary();
    e.files = r_.files;
    e.lines = r_.lines;
    e.unknown_lines = r_.unknown_lines;
    e.overlong_lines = r_.overlong_lines;
    e.binary_lines = r_.binary_lines;
    e.malformed_lines += r_.malformed_lines;
    e.other_format_records = r_.other_format_records;
    e.warnings.insert(e.warnings.begin(), r_.warnings.begin(), r_.warnings.end());
    e.stall = r_.stall;
    return e;
  }
  if (engine_ && r_.format == log_format::deepspeed) {
    // The pipeline engine's line has no skipped count: the engine's step lines and its scaler have them.
    const log_report e = engine_->summary();
    r_.skipped = e.skipped;
    r_.skipped_total = e.skipped_total;
    r_.loss_scale_drops = e.loss_scale_drops;
    r_.loss_scale_drop_count = e.loss_scale_drop_count;
  }
  // §8.2: the log's tail at a new speed, not yet --step-min-lines long, is an open level.
  if (static_cast<std::int64_t>(slow_run_.size()) >= kOpenLevelLines) {
    double sum = 0;
    for (const segment& x : slow_run_) sum += x.iteration_s;
    r_.open_level = {true, slow_run_.front().iteration, slow_run_.front().at, static_cast<std::int64_t>(slow_run_.size()),
                     level_s_, sum / static_cast<double>(slow_run_.size())};
    for (const segment& x : slow_run_) add_steady(x);  // the job runs at this speed now: the recent rate says so
    slow_run_.clear();
  } else {
    flush_slow_run();
    if (run_n_ >= kOpenLevelLines) {
      r_.open_level = {true, run_iteration_, run_at_, run_n_, level_s_, run_sum_s_ / static_cast<double>(run_n_)};
    }
  }
  const log_analyzer& a = *this;
  log_report r = a.r_;
  if (a.in_spike_) {
    ++r.spike_count;
    push_capped(r.spikes, a.spike_);
  }
  if (a.n_s_ > 0) r.mean_iteration_s = a.sum_s_ / static_cast<double>(a.n_s_);
  r.recent_iteration_s = mean_of(a.recent_s_);
  if (a.n_tflops_ > 0) r.mean_tflops = a.sum_tflops_ / static_cast<double>(a.n_tflops_);
  r.recent_tflops = mean_of(a.recent_tflops_);
  r.recent_samples_per_s = mean_of(a.recent_samples_);
  if (a.wall_iterations_ > 0) r.wall_iteration_s = a.wall_sum_s_ / static_cast<double>(a.wall_iterations_);
  if (r.train_iterations == 0 && o_.train_iterations > 0) r.train_iterations = o_.train_iterations;
  const std::int64_t seq = o_.seq_length > 0 ? o_.seq_length : a.seq_from_log_;
  // Token counts from the log's numbers: unknown (-1) where the product leaves int64 (a corrupt or
  // hostile line; found by fuzz/fuzz_log_file).
  auto product = [](std::int64_t x, std::int64_t y, std::int64_t z = 1) -> std::int64_t {
    std::int64_t xy = 0, xyz = 0;
    if (__builtin_mul_overflow(x, y, &xy) || __builtin_mul_overflow(xy, z, &xyz)) return -1;
    return xyz;
  };
  if (a.consumed_tokens_ >= 0) r.tokens_done = a.consumed_tokens_;
  else if (r.consumed_samples >= 0 && seq > 0) r.tokens_done = product(r.consumed_samples, seq);
  if (r.train_iterations > 0 && r.last_iteration >= 0) {
    const std::int64_t remaining = std::max<std::int64_t>(0, r.train_iterations - r.last_iteration);
    if (r.global_batch_size > 0 && seq > 0) r.tokens_remaining = product(remaining, r.global_batch_size, seq);
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
  // The job's speed now: an open level at the log's tail, else the recent window.
  c.observed_iteration_s = r.open_level.present ? r.open_level.run_s : r.recent_iteration_s;
  if (std::isnan(c.observed_iteration_s) && !std::isnan(r.recent_samples_per_s) && plan_gbs > 0) {
    c.observed_iteration_s = static_cast<double>(plan_gbs) / r.recent_samples_per_s;  // DeepSpeed's samples/s
  }
  c.first_level_s = r.first_level_s;
  c.observed_tflops_logged = r.recent_tflops;
  if (std::isnan(c.observed_iteration_s) || c.observed_iteration_s <= 0 || p.iteration_s <= 0) return c;
  c.observed_tflops_our_count = p.tflops_per_gpu * p.iteration_s / c.observed_iteration_s;
  // §8.6: both counts at the same observed speed differ only by the FLOPs each counts per iteration.
  if (!std::isnan(c.observed_tflops_logged) && c.observed_tflops_our_count > 0) {
    c.tflops_logged_vs_plan = c.observed_tflops_logged / c.observed_tflops_our_count - 1;
    constexpr double kFlopsMismatch = 0.2;
    c.flops_mismatch = std::fabs(c.tflops_logged_vs_plan) > kFlopsMismatch;
  }
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
