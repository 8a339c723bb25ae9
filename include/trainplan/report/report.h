// Reporters: text, JSON and CSV from result structs, benchmark-style (a run context and one method per
// result). They format; they never compute estimates.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "trainplan/core/estimate/comm.h"
#include "trainplan/core/logs/logs.h"
#include "trainplan/core/estimate/memory.h"
#include "trainplan/core/model/model.h"
#include "trainplan/core/plan/plan.h"
#include "trainplan/core/search/search.h"
#include "trainplan/core/estimate/time.h"
#include "trainplan/core/validate/validation.h"

namespace trainplan {

inline constexpr int kSchemaVersion = 1;

/// The tool's version (the CMake project's).
std::string_view tool_version();

/// What a result describes (google/benchmark's Context): every JSON output carries it as "context"
/// (tool, version, schema version and, with a job, its model, cluster and layout and the flags that
/// changed no estimate); text outputs print the job line and the ignored flags.
struct run_context {
  job_spec job;                            ///< finalized; meaningful when has_job
  bool has_job = false;
  bool has_layout = true;                  ///< false for a search's base job (no layout chosen yet)
  std::vector<std::string> ignored_flags;  ///< accepted, change no estimate (launch lines)
  std::string preset;                      ///< the preset the job came from, if any
  bool from_launch_line = false;
  /// Whether the sequence length was given (--seq-length) or is the model's own context, which text
  /// outputs then say: a model's full context (32,768 for Qwen2.5) is rarely the one a run trains at.
  bool seq_length_given = true;
  /// The job flags as given (a search's base job), for the command line that reproduces a row; empty
  /// for a launch line, whose own layout flags would contend with the row's.
  std::vector<std::string> job_args;
  /// The job flags that set a search row's layout, from the command line (cli.h candidate_flags): with
  /// job_args, the command that reproduces the row. Unset: rows print no command.
  std::function<std::vector<std::string>(const search_candidate&)> candidate_args;
};

/// Bytes as GiB (2^30) with `digits` decimals.
std::string format_gib(double bytes, int digits = 2);
/// 176247271424 → "176,247,271,424".
std::string format_count(std::int64_t n);

std::string render_models_text();
std::string render_models_json();
/// The embedded GPU and cluster catalogs (`trainplan gpus`, `trainplan clusters`), with units.
std::string render_gpus_text();
std::string render_gpus_json();
std::string render_clusters_text();
std::string render_clusters_json();

std::string render_model_text(const model_spec& m, const parameter_breakdown& p, std::int64_t tp);
std::string render_model_json(const model_spec& m, const parameter_breakdown& p, std::int64_t tp);

/// `megatron`, when given, is shown beside ours (Megatron-LM's theoretical_memory_usage.py, §3.9).
std::string render_memory_text(const run_context& ctx, const parameter_breakdown& p, const memory_report& r,
                               const megatron_theoretical_memory* megatron = nullptr);
std::string render_memory_json(const run_context& ctx, const parameter_breakdown& p, const memory_report& r,
                               const megatron_theoretical_memory* megatron = nullptr);

/// Communication per iteration (docs/formulas.md §4): cluster summary and per-dimension detail with the
/// first groups of each dimension (text), or every group (JSON, {"comm":{"dimensions":{...}}}).
std::string render_comm_text(const run_context& ctx, const comm_report& r);
std::string render_comm_json(const run_context& ctx, const comm_report& r);

/// Iteration time (docs/formulas.md §5): totals, breakdown and per-stage work (text), or
/// {"schema_version":1,"time":{"iteration_s",…,"breakdown_s":{…},"stages":[…]}} (JSON).
std::string render_time_text(const run_context& ctx, const time_report& r);
std::string render_time_json(const run_context& ctx, const time_report& r);

/// The pipeline timeline as a text Gantt chart (one row per rank, `width` columns), or its events (JSON).
std::string render_schedule_text(const run_context& ctx, const time_report& r, int width = 100);
std::string render_schedule_json(const run_context& ctx, const time_report& r);

/// Predicted against measured per row, per table, per seed table and overall (§5.8); CSV: one line per row.
std::string render_validation_text(const validation_report& r);
std::string render_validation_json(const validation_report& r);
std::string render_validation_csv(const validation_report& r);

/// Layout search (docs/formulas.md §7.1-§7.3): the top K in the seed's column order with units and the
/// counts (text), every evaluated layout ranked (JSON {"schema_version":1,"search":{…,"candidates":[…]}}, CSV).
std::string render_search_text(const run_context& ctx, const search_space& s, const search_result& r);
std::string render_search_json(const run_context& ctx, const search_space& s, const search_result& r);
std::string render_search_csv(const search_result& r);
/// "N layouts enumerated, N pruned (…), N evaluated …, in S s on T threads".
std::string render_search_counts(const search_result& r);

/// Architecture shapes near a target size, each with its best layout (§7.4).
std::string render_shapes_text(const shape_rules& rules, const shapes_result& r);
std::string render_shapes_json(const shape_rules& rules, const shapes_result& r);

/// The training plan (§7.5-§7.8): phases, days, GPU-hours, checkpoints, failures, goodput.
std::string render_plan_text(const plan_report& r, std::int64_t num_gpus);
std::string render_plan_json(const plan_report& r);

/// A training log read (§8): progress, ETA, findings, the stall check and, with `plan`, the comparison with
/// the plan of the job `ctx` describes. JSON: {"schema_version":1,"context":{…},"logs":{…}}; one_line for
/// the JSON Lines of --follow.
std::string render_logs_text(const run_context* ctx, const log_report& r, const log_plan_comparison* plan);
std::string render_logs_json(const run_context* ctx, const log_report& r, const log_plan_comparison* plan,
                             bool one_line = false);
/// One line for --follow: iteration, recent speed, ETA, counts of findings, a stall.
std::string render_logs_update_text(const log_report& r);

// ---- reporters -----------------------------------------------------------------------------------

enum class output_format { text, json, csv, html };
std::string_view to_string(output_format f);
/// "text", "json", "csv" or "html"; anything else is an input_error naming --format, with "did you mean".
output_format parse_output_format(std::string_view name);

/// One method per result (google/benchmark's BenchmarkReporter): the command computes once and hands
/// the result to the reporter the user chose. A format without a form for a result throws input_error.
class reporter {
 public:
  virtual ~reporter() = default;
  virtual output_format format() const = 0;
  virtual std::string models() const = 0;
  virtual std::string gpus() const = 0;
  virtual std::string clusters() const = 0;
  virtual std::string model(const model_spec& m, const parameter_breakdown& p, std::int64_t tp) const = 0;
  virtual std::string memory(const run_context& ctx, const parameter_breakdown& p, const memory_report& r,
                             const megatron_theoretical_memory* megatron) const = 0;
  virtual std::string comm(const run_context& ctx, const comm_report& r) const = 0;
  virtual std::string time(const run_context& ctx, const time_report& r) const = 0;
  virtual std::string schedule(const run_context& ctx, const time_report& r) const = 0;
  virtual std::string validation(const validation_report& r) const = 0;
  virtual std::string search(const run_context& ctx, const search_space& s, const search_result& r) const = 0;
  virtual std::string shapes(const shape_rules& rules, const shapes_result& r) const = 0;
  virtual std::string plan(const plan_report& r, std::int64_t num_gpus) const = 0;
  virtual std::string logs(const run_context* ctx, const log_report& r, const log_plan_comparison* plan) const = 0;
};

/// The reporter of a format.
std::unique_ptr<reporter> make_reporter(output_format f);

}  // namespace trainplan
