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
  std::vector<std::string> overridden_flags;  ///< given twice: the earlier value and the one that counts
  std::vector<std::string> derived_flags;     ///< values the flags imply and did not give, with why
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
  /// The error the shipped validation observed for predictions of this kind (issue 28); runs = 0: none.
  error_band expected_error;
  /// A search's leading rows whose time lies within the expected error of row 1's (row 1 counted): their
  /// order is not resolved by the model (issue 28). 0: not computed.
  std::int64_t rows_within_expected_error = 0;
};

/// The model as a page title names it: its catalog or file name, or, for a model given by Megatron's
/// flags alone ("custom"), its shape: "custom model: 32 layers, hidden 4096, 32 heads".
std::string model_label(const job_spec& job);

/// Bytes as GiB (2^30) with `digits` decimals.
std::string format_gib(double bytes, int digits = 2);
/// 176247271424 → "176,247,271,424".
std::string format_count(std::int64_t n);

/// "N layouts enumerated, N pruned (…), N evaluated …, in S s on T threads": the search's counts, which
/// the command line prints to stderr beside a JSON or CSV search.
std::string search_summary(const search_result& r);

// ---- reporters -----------------------------------------------------------------------------------

enum class output_format { text, json, csv, html };
std::string_view to_string(output_format f);
/// "text", "json", "csv" or "html"; anything else is an input_error naming --format, with "did you mean".
output_format parse_output_format(std::string_view name);

/// One method per result (google/benchmark's BenchmarkReporter): the command computes once and hands
/// the result to the reporter the user chose, which owns its formatting (src/report/reporters.h). A
/// format without a form for a result throws input_error.
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
  /// One update of `logs --follow`: a progress line (text) or one JSON line.
  virtual std::string logs_update(const run_context* ctx, const log_report& r, const log_plan_comparison* plan) const = 0;
};

/// The reporter of a format.
std::unique_ptr<reporter> make_reporter(output_format f);

}  // namespace trainplan
