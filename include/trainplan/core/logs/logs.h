// Reading a training job's log (`trainplan logs`): each framework's progress lines parsed into records,
// then one streaming pass (constant memory) that finds progress and ETA, throughput steps, one-off slow
// iterations, loss spikes, skipped and NaN iterations, loss-scale drops, restarts and stalls, and sets
// the observed speed beside the plan's. Formulas and thresholds: docs/formulas.md §8.
#pragma once

#include <cmath>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "trainplan/core/estimate/time.h"

namespace trainplan {

inline constexpr double kNotLogged = std::numeric_limits<double>::quiet_NaN();

/// The frameworks whose progress lines are read (src/core/logs/logs_parse.cc has one parser per row).
/// Megatron-LM, Megatron-DeepSpeed and GPT-NeoX print one line (one family); `deepspeed` is the pipeline
/// engine's line, `deepspeed_engine` the engine's `step=N, skipped=K` report with its throughput timer.
enum class log_format { megatron_lm, megatron_deepspeed, nemo, nemo_progress_bar, torchtitan, deepspeed, gpt_neox,
                        deepspeed_engine };
/// "megatron-lm", "megatron-deepspeed", "nemo", "nemo-progress-bar", "torchtitan", "deepspeed", "gpt-neox",
/// "deepspeed-engine".
std::string_view to_string(log_format f);
/// "Megatron-LM", "Megatron-DeepSpeed", ...: for people.
std::string_view display_name(log_format f);

/// One training-progress line as the framework printed it; kNotLogged (NaN) or -1 where it did not say.
/// Frameworks average the timing fields over their log interval.
struct log_record {
  std::int64_t iteration = -1;
  std::int64_t train_iterations = 0;  ///< the run's total ("iteration N/ TOTAL"); 0: not logged
  double iteration_s = kNotLogged;    ///< time per iteration the framework measured
  double tflops_per_gpu = kNotLogged; ///< as the framework counts them
  double loss = kNotLogged;
  double grad_norm = kNotLogged;
  double loss_scale = kNotLogged;
  double learning_rate = kNotLogged;
  std::int64_t skipped_iterations = 0;  ///< in the line's log interval
  std::int64_t nan_iterations = 0;
  std::int64_t consumed_samples = -1;
  std::int64_t consumed_tokens = -1;
  std::int64_t global_batch_size = -1;
  double timestamp_s = kNotLogged;    ///< the line's wall clock: seconds since 1970 read as UTC (local time)
  double elapsed_s = kNotLogged;      ///< a progress bar's own clock: seconds since its start (tqdm's elapsed)
  double samples_per_s = kNotLogged;  ///< global samples per second, as the framework measured them
  std::int64_t skipped_cumulative = -1;  ///< skipped steps since the start (DeepSpeed's `skipped=`); -1: not logged
  bool loss_nonfinite = false;        ///< the loss was printed as nan or inf
  bool grad_norm_nonfinite = false;   ///< the grad norm was printed as nan or inf
  bool cut_short = false;             ///< the line ended before its last field; the complete fields were read
};

/// Lines that are not progress but explain what follows them.
enum class log_event { none, startup, checkpoint_save, evaluation, overflow };

/// What one line of a log holds.
struct log_line {
  /// throughput: DeepSpeed's throughput-timer line, which completes the engine's step line before it.
  enum class kind { unknown, record, event, malformed, throughput };
  kind what = kind::unknown;
  log_format format = log_format::megatron_lm;  ///< for records and malformed progress lines
  log_record record;
  log_event event = log_event::none;
  double timestamp_s = kNotLogged;              ///< any line's leading timestamp
  std::string problem;                           ///< malformed: which field and why
  std::int64_t step = -1;                        ///< throughput: the step it measured (-1: not printed)
  double samples_per_s = kNotLogged;             ///< throughput: global samples per second
  double scale_before = kNotLogged;              ///< overflow: the loss scale attempted
  double scale_after = kNotLogged;               ///< overflow: the loss scale after (NaN: unchanged, hysteresis)
};

/// Parse one line (no line terminator). Never throws; bytes of any kind are accepted.
log_line parse_log_line(std::string_view line);

/// "2022-03-18 10:41:37" (also with 'T', and ",123" or ".123456") as seconds since 1970 read as UTC;
/// NaN when `text` does not start with such a time.
double parse_log_time(std::string_view text);

/// The thresholds of the detectors (docs/formulas.md §8.2-§8.5); the CLI's flags set the first ones.
struct log_options {
  double stall_factor = 5;          ///< silence longer than this many expected intervals is a stall
  double stall_min_s = 60;          ///< and never below this
  std::int64_t recent_records = 50; ///< the "recent" window of progress lines
  double step_threshold = 0.02;     ///< a throughput step: a sustained change of at least this fraction
  std::int64_t step_min_records = 10; ///< ... lasting at least this many progress lines
  double slow_factor = 0.2;         ///< a one-off slow line: this much above the level
  double spike_threshold = 0.05;    ///< loss above the trailing median by this fraction starts a spike
  double spike_recover = 0.03;      ///< ... which lasts while the loss stays this far above it
  double grad_norm_spike_factor = 10; ///< ... or the grad norm this many times its trailing median
  std::int64_t train_iterations = 0; ///< the run's total when the log does not say it; 0: from the log
  std::int64_t seq_length = 0;       ///< tokens per sample, to count tokens; 0: unknown
  std::int64_t global_batch_size = 0; ///< samples per iteration, to turn samples/s into s/iteration; 0: unknown
};

/// Where a line came from, for messages and findings.
struct log_position {
  std::string file;
  std::int64_t line = 0;
};

struct log_throughput_step {
  std::int64_t iteration = 0;       ///< first progress line at the new level
  log_position at;
  double before_s = 0;              ///< level before (mean s/iteration)
  double after_s = 0;
  double before_tflops = kNotLogged;
  double after_tflops = kNotLogged;
};

struct log_slow_iteration {
  std::int64_t iteration = 0;
  log_position at;
  double iteration_s = 0;
  double level_s = 0;
  log_event cause = log_event::none;  ///< checkpoint save or evaluation logged just before; none: unexplained
};

struct log_spike {
  std::int64_t first_iteration = 0;
  std::int64_t last_iteration = 0;    ///< last progress line still in the spike
  log_position at;
  double baseline_loss = 0;           ///< trailing median before it
  double peak_loss = 0;
  std::int64_t peak_loss_iteration = 0;
  double baseline_grad_norm = kNotLogged;
  double peak_grad_norm = kNotLogged;
  std::int64_t peak_grad_norm_iteration = 0;
  std::int64_t recovered_iteration = -1;  ///< first line back to normal; -1: not yet
};

struct log_restart {
  log_position at;                     ///< first progress line after it
  std::int64_t last_iteration_before = 0;
  std::int64_t first_iteration_after = 0;
  std::int64_t iterations_redone = 0;
  double gap_s = kNotLogged;           ///< wall time without progress (timestamps needed)
  double lost_s = 0;                   ///< gap plus the re-done iterations at the run's mean speed
};

struct log_flagged_iteration {         ///< skipped or NaN iterations, or a loss-scale drop
  std::int64_t iteration = 0;
  log_position at;
  double before = 0;
  double after = 0;
};

/// A progress line whose loss or grad norm is not a number (§8.4).
struct log_nonfinite {
  std::int64_t iteration = 0;
  log_position at;
  std::string what;                   ///< "loss" or "grad norm"
  std::string how;                    ///< "printed as nan", "printed as inf", "omitted (Megatron prints no NaN average)"
};

/// A run of lines at a new speed that has not lasted --step-min-lines yet (short logs; the log's tail).
struct log_open_level {
  bool present = false;
  std::int64_t first_iteration = 0;
  log_position at;
  std::int64_t lines = 0;
  double level_s = kNotLogged;        ///< the level before it
  double run_s = kNotLogged;          ///< the run's mean s/iteration
};

struct log_batch_change {
  std::int64_t iteration = 0;
  std::int64_t before = 0;
  std::int64_t after = 0;
};

/// The stall check (§8.5): only with --follow or a given current time.
struct log_stall {
  bool checked = false;
  bool stalled = false;
  bool finished = false;            ///< the last iteration reached the run's total
  double now_s = kNotLogged;
  double last_progress_s = kNotLogged;
  std::string last_progress_source; ///< "log timestamp" or "file modification time"
  double silence_s = kNotLogged;
  double expected_interval_s = kNotLogged;  ///< one progress line at the recent speed
  double threshold_s = kNotLogged;
};

/// Everything `trainplan logs` reports. Lists keep their first kMaxListed entries; the counts count all.
struct log_report {
  static constexpr std::size_t kMaxListed = 20;
  std::vector<std::string> files;
  bool has_format = false;
  log_format format = log_format::megatron_lm;
  std::int64_t lines = 0;
  std::int64_t records = 0;
  std::int64_t unknown_lines = 0;
  std::int64_t duplicate_records = 0;     ///< the same iteration printed again (several ranks)
  std::int64_t other_format_records = 0;  ///< progress lines of a second framework, skipped
  std::int64_t malformed_lines = 0;
  std::int64_t overlong_lines = 0;        ///< longer than kMaxLogLineBytes, skipped
  std::int64_t binary_lines = 0;          ///< holding NUL bytes, skipped
  std::int64_t cut_short_lines = 0;       ///< progress lines cut short; their complete fields were read
  std::int64_t companion_lines = 0;       ///< DeepSpeed engine lines beside another format's progress lines
  std::vector<std::string> warnings;      ///< "file:line: ..." for the first malformed or odd lines

  // Progress (§8.1)
  std::int64_t first_iteration = -1;
  std::int64_t last_iteration = -1;
  std::int64_t train_iterations = 0;      ///< 0: unknown
  std::int64_t log_interval = 0;          ///< iterations per progress line (the step seen twice in a row)
  std::int64_t global_batch_size = -1;    ///< last logged
  std::int64_t consumed_samples = -1;
  std::int64_t tokens_done = -1;          ///< logged, or samples × --seq-length; -1: unknown
  std::int64_t tokens_remaining = -1;
  double mean_iteration_s = kNotLogged;   ///< over the steady lines (not one-offs, not warm-up)
  double recent_iteration_s = kNotLogged; ///< over the last recent_records steady lines
  double wall_iteration_s = kNotLogged;   ///< from timestamps: checkpoints and evaluations included
  double first_level_s = kNotLogged;      ///< the first steady level at the last batch size
  double mean_tflops = kNotLogged;
  double recent_tflops = kNotLogged;
  double recent_samples_per_s = kNotLogged;  ///< the framework's own samples/s over the recent window
  double eta_low_s = kNotLogged;          ///< remaining iterations at the fastest of the rates above
  double eta_high_s = kNotLogged;         ///< ... at the slowest
  double last_record_timestamp_s = kNotLogged;  ///< of the last progress line; NaN: not logged

  // Findings (§8.2-§8.4)
  std::vector<log_throughput_step> steps;
  std::int64_t step_count = 0;
  std::vector<log_slow_iteration> slow_iterations;
  std::int64_t slow_iteration_count = 0;
  std::vector<log_spike> spikes;
  std::int64_t spike_count = 0;
  std::vector<log_flagged_iteration> skipped;  ///< before/after: counts in the line
  std::int64_t skipped_total = 0;
  std::vector<log_flagged_iteration> nan;
  std::int64_t nan_total = 0;
  std::vector<log_flagged_iteration> loss_scale_drops;
  std::int64_t loss_scale_drop_count = 0;
  std::vector<log_nonfinite> nonfinite;       ///< lines with a NaN or infinite loss or grad norm
  std::int64_t nonfinite_loss_lines = 0;
  std::int64_t nonfinite_grad_norm_lines = 0;
  log_open_level open_level;                  ///< the tail's run at a new speed, not yet a step
  std::vector<log_restart> restarts;
  std::int64_t restart_count = 0;
  double restart_lost_s = 0;
  std::vector<log_batch_change> batch_changes;

  log_stall stall;
};

/// Lines longer than this are counted and skipped: reading memory stays bounded.
inline constexpr std::size_t kMaxLogLineBytes = 1 << 20;

/// The streaming pass: feed lines in order, then ask for the report (any time; it does not consume).
class log_analyzer {
 public:
  explicit log_analyzer(log_options options = {});
  log_analyzer(const log_analyzer& other);
  log_analyzer& operator=(const log_analyzer& other);
  log_analyzer(log_analyzer&&) noexcept = default;
  log_analyzer& operator=(log_analyzer&&) noexcept = default;
  ~log_analyzer();
  void begin_file(std::string name);
  void add_line(std::string_view line);
  void add_overlong_line();
  void add_binary_line();
  log_report report() const;
  /// The same with the stall check at `now_s` (§8.5): silence from `written_s`, the file's last write on
  /// this machine's clock (`written_source` names it), or, where there is none (NaN: a pipe, or a time
  /// given in the log's own clock), from the last progress line's timestamp.
  log_report report(double now_s, double written_s, std::string_view written_source) const;
  std::int64_t records() const;

 private:
  /// A progress line's speed, as the speed tracking keeps it.
  struct segment {
    std::int64_t iteration = 0;
    log_position at;
    double iteration_s = 0;
    double tflops = kNotLogged;
    log_event cause = log_event::none;
  };
  void add_parsed(const log_line& l);
  void add_engine_line(const log_line& l);
  void commit_engine_step();
  void add_record(const log_record& rec, log_format f);
  void track_flags(const log_record& rec);
  void track_nonfinite(const log_record& rec, log_format f, std::int64_t delta);
  void flush_slow_run();
  /// The report of the lines so far (on a copy: the warm-up, the pending engine step and the slow run
  /// are settled as if the log ended here).
  log_report summary();
  void track_speed(const log_record& rec);
  void flush_warmup();
  void reset_level();
  void classify(const segment& s);
  void add_steady(const segment& s);
  void track_loss(const log_record& rec);
  void note_restart(const log_record& rec);
  void warn(const std::string& what);
  log_position here() const { return {file_, line_}; }

  log_options o_;
  /// DeepSpeed's engine lines (`step=N, skipped=K` and the throughput timer), read apart: they are the
  /// progress of a plain DeepSpeed job, and companions of Megatron-DeepSpeed's or GPT-NeoX's own lines.
  std::unique_ptr<log_analyzer> engine_;
  bool engine_pending_ = false;                ///< a step line waiting for its throughput line
  log_record engine_step_;
  std::int64_t engine_step_line_ = 0;
  log_report r_;
  std::string file_;
  std::int64_t line_ = 0;
  log_event pending_event_ = log_event::none;  ///< an event since the last progress line
  bool startup_seen_ = false;                  ///< a startup marker since the last progress line
  std::int64_t since_start_ = 0;               ///< progress lines since the start or the last restart
  // the last progress line
  std::int64_t prev_iteration_ = -1;
  std::int64_t last_delta_ = 0;                ///< iterations between the last two progress lines
  double prev_timestamp_s_ = kNotLogged;
  double prev_elapsed_s_ = kNotLogged;
  double prev_loss_scale_ = kNotLogged;
  std::int64_t prev_skipped_cumulative_ = -1;
  bool loss_seen_ = false;                     ///< an earlier progress line carried a loss
  double last_record_ts_ = kNotLogged;
  std::int64_t consumed_tokens_ = -1;
  std::int64_t seq_from_log_ = 0;              ///< consumed tokens / consumed samples
  // speed (§8.2): the warm-up buffer, the level of the current segment, a candidate step, the windows
  std::vector<segment> warmup_;
  double level_s_ = kNotLogged;
  double level_sum_s_ = 0, level_sum_tflops_ = 0;
  std::int64_t level_n_ = 0, level_tflops_n_ = 0;
  bool first_segment_open_ = true;
  bool step_open_ = false;                     ///< the last listed step's level is the current one
  int run_sign_ = 0;
  std::int64_t run_n_ = 0, run_tflops_n_ = 0;
  double run_sum_s_ = 0, run_sum_tflops_ = 0;
  std::int64_t run_iteration_ = 0;
  log_position run_at_;
  std::vector<segment> slow_run_;              ///< consecutive lines over --slow-factor, not yet judged
  std::deque<double> recent_s_, recent_tflops_, recent_samples_;
  double sum_s_ = 0, sum_tflops_ = 0;
  std::int64_t n_s_ = 0, n_tflops_ = 0;
  double wall_sum_s_ = 0;
  std::int64_t wall_iterations_ = 0;
  // loss (§8.3): trailing windows and the spike in progress
  std::deque<double> losses_, grad_norms_;
  bool in_spike_ = false;
  log_spike spike_;
};

/// The stall check (§8.5) of a report at `now_s`, the last progress at `last_progress_s` (both seconds
/// since 1970 read as UTC, local time), which `source` names.
log_stall check_stall(const log_report& r, const log_options& o, double now_s, double last_progress_s,
                      std::string_view source);

/// Read log files in order (a path of "-": standard input) through one analyzer. Throws input_error for
/// a missing, unreadable, empty or binary file, naming it. `last_write_s` gets the last file's
/// modification time (seconds since 1970 read as UTC, local time; NaN for standard input).
log_analyzer read_logs(const std::vector<std::string>& paths, const log_options& options, double* last_write_s);

/// How `trainplan logs --follow` watches a growing file.
struct log_follow_options {
  double poll_s = 1;            ///< how often to look for new lines
  double update_every_s = 60;   ///< a progress update at most this often (findings at once)
  log_options options;
};
/// Read `path` (tail -f; "-": standard input until it closes) into `a`, calling `on_update` with a report
/// at the start, on each new finding, every update_every_s, and at the end. Returns true when the job
/// stalled (§8.5), false when it reached its last iteration or its input closed. A truncated file
/// (copytruncate) is read again from its start.
bool follow_log(const std::string& path, log_analyzer& a, const log_follow_options& f,
                const std::function<void(const log_report&, bool stalled)>& on_update);

/// Seconds since 1970 of the wall clock, as a local time read as UTC (what log timestamps hold).
double local_now_s();

/// What the gap between the log and the plan suggests (§8.6).
enum class log_verdict { on_plan, slowed_down, slower_than_plan, faster_than_plan, not_enough_data };

/// The observed speed beside the plan's prediction for the job the log runs.
struct log_plan_comparison {
  double predicted_iteration_s = 0;
  double predicted_tflops_per_gpu = 0;      ///< Megatron's count (with recomputation)
  double observed_iteration_s = kNotLogged; ///< recent
  double first_level_s = kNotLogged;        ///< the log's own first steady level
  double observed_tflops_logged = kNotLogged;
  double observed_tflops_our_count = kNotLogged;  ///< the plan's FLOPs at the observed speed
  double gap_vs_plan = kNotLogged;          ///< observed / predicted − 1 (positive: slower)
  double gap_vs_first = kNotLogged;         ///< observed / first level − 1
  double tflops_logged_vs_plan = kNotLogged; ///< the log's TFLOPs / the plan's count at the observed speed − 1
  bool flops_mismatch = false;              ///< beyond ±20%: the log runs another model, sequence or count
  std::int64_t plan_global_batch_size = 0;
  std::int64_t log_global_batch_size = -1;
  log_verdict verdict = log_verdict::not_enough_data;
};
log_plan_comparison compare_with_plan(const log_report& r, const time_report& predicted,
                                      std::int64_t plan_global_batch_size);

}  // namespace trainplan
