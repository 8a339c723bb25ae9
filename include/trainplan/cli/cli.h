// The command line over the core (library trainplan_cli): the job flags (args.h), each command's own
// flag table and request, and the run context the reporters print. The core (trainplan_core) takes
// job_spec, search_space and plan_inputs and knows nothing of flags.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "trainplan/cli/args.h"
#include "trainplan/core/base/error.h"
#include "trainplan/core/logs/logs.h"
#include "trainplan/core/plan/plan.h"
#include "trainplan/report/report.h"
#include "trainplan/core/search/search.h"

namespace trainplan {

/// The flag that sets a job field the core names in its messages ("parallel.tp" →
/// "--tensor-model-parallel-size"); the field path itself when no flag sets it.
std::string flag_of_field(std::string_view field);
/// An input_error's message with its fields named by their flags.
std::string cli_message(const input_error& e);

/// The run context of a parsed job (the job, its preset, the flags it ignored).
run_context context_of(const parsed_job& pj);

// ---- search (src/cli/search_request.cc) ----

std::vector<std::string> default_search_args();
/// A parsed `search` command.
struct search_request {
  search_space space;
  parsed_job base;                       ///< model, cluster and training flags (layout not finalized)
  std::vector<std::string> job_args;     ///< the job flags of `base`, as given
  std::int64_t explain_row = 0;          ///< 1-based row of --explain; 0: none
  bool csv = false;
};
/// Search flags (table-driven, src/cli/search_request.cc) then job flags for the rest; no arguments: the
/// README's main job, BLOOM-176B on jean-zay-a100, 48 nodes, GBS 2048. Throws input_error naming the flag.
search_request parse_search_request(const std::vector<std::string>& args);
std::string search_flags_help();
/// The job flags that set a search candidate's layout (the search's apply_candidate, read back).
std::vector<std::string> candidate_flags(const search_candidate& c, framework_kind framework);

// ---- shapes (src/cli/shapes_request.cc) ----

struct shapes_request {
  shape_rules rules;
  search_space space;
  parsed_job base;
};
shapes_request parse_shapes_request(const std::vector<std::string>& args);
std::string shapes_flags_help();

// ---- plan (src/cli/plan_request.cc) ----

/// Split the `plan` command's own flags off `args`: they fill `in`, the rest (job flags) is returned.
/// Table-driven (src/cli/plan_request.cc); throws input_error naming the flag.
std::vector<std::string> parse_plan_flags(const std::vector<std::string>& args, plan_inputs& in);
/// Help text of the plan flags.
std::string plan_flags_help();

/// A parsed `plan` command: its inputs and, unless speed figures were given, the job they come from.
struct plan_request {
  plan_inputs inputs;
  bool has_job = false;
  parsed_job job;
};
/// Plan flags, then either given-speed flags (--num-gpus, --gbs, --seq-length, --model or
/// --model-params) or job flags (parse_job_args) for the rest. Throws input_error naming the flag.
plan_request parse_plan_request(const std::vector<std::string>& args);

// ---- logs (src/cli/logs_request.cc) ----

/// A parsed `logs` command: the files, the detectors' thresholds, --follow, the stall check's time and,
/// when job flags or a launch line follow the files, the job to compare with.
struct logs_request {
  std::vector<std::string> files;
  log_follow_options follow;          ///< its options are the detectors' thresholds
  bool follow_mode = false;
  double now_s = kNotLogged;          ///< --now: check for a stall at this time; NaN: no check
  bool now_is_clock = false;          ///< --now now: this machine's clock (else a time in the log's clock)
  bool has_job = false;
  parsed_job job;
};
/// Logs flags (table-driven), then the files, then job flags. Throws input_error naming the flag.
logs_request parse_logs_request(const std::vector<std::string>& args);
std::string logs_flags_help();
/// The comparison of a log's report with the plan of the request's job.
log_plan_comparison logs_plan(const logs_request& req, const log_report& r);
/// Read the files and report (not --follow, which the CLI runs); `stalled` says whether the stall check
/// found the job stalled.
std::string logs_output(const logs_request& req, const reporter& rep, bool* stalled = nullptr);

// ---- each command's output (src/cli/commands.cc) ----
// Compute once, through the reporter the caller chose: the CLI prints the string, the Python module
// parses its JSON, so both show the same result structs serialized the same way.

std::string model_output(const parsed_job& pj, const reporter& rep);
/// Ours, and Megatron-LM's theoretical figure beside it where it models the job (§3.9).
std::string memory_output(const parsed_job& pj, const reporter& rep);
std::string comm_output(const parsed_job& pj, const reporter& rep);
std::string time_output(const parsed_job& pj, const reporter& rep);
/// Memory, time, the pipeline timeline and communication of one job: one HTML page, or the text outputs.
std::string report_output(const parsed_job& pj, const reporter& rep);
/// The timeline of Megatron's schedule for the job, or GPipe's.
std::string schedule_output(const parsed_job& pj, bool gpipe, const reporter& rep);
/// The run context of a search: its base job, with no layout (each candidate states its own).
run_context search_context(const search_request& req);
/// search_context with what the result adds: the expected error of the search's kind of prediction and
/// how many leading rows lie within it of row 1 (issue 28).
run_context search_context(const search_request& req, const search_result& r);
/// context_of with the expected error of the job's prediction (issue 28): what `time` prints.
run_context time_context(const parsed_job& pj);
/// The search's ranking (not --explain, which the CLI prints as text).
std::string search_output(const search_request& req, const reporter& rep, const search_progress& progress = {});
std::string shapes_output(const shapes_request& req, const reporter& rep);
std::string plan_output(const plan_request& req, const reporter& rep);
/// The shipped tables, or the measurements in the CSV file at `csv_path` (`validate --csv FILE`).
/// `loso`: add leave-one-source-out over the BLOOM rows (the A100 constants' fit; §5.8).
std::string validation_output(const std::string& csv_path, const reporter& rep, bool loso = false);

// ---- the flags as data, for front ends other than the command line (the Python module) ----

/// What a flag's value is, from its value name ("N": integer, "LIST": list, "" : a switch).
/// number_or_text: a count or Megatron's pattern string (--moe-layer-freq N|PATTERN, --window-size W|(W,0)).
enum class value_kind { none, integer, number, text, list, range, triple, number_or_text };
std::string_view to_string(value_kind k);

/// One flag a command takes.
struct command_flag {
  std::string name;                  ///< "--tensor-model-parallel-size"
  std::vector<std::string> aliases;  ///< "--tp"
  std::string value_name;            ///< "N", "LIST", "" for a switch
  value_kind kind = value_kind::none;
  std::string default_value;         ///< as help shows it ("" when the help line states it)
  std::string help;
};
/// The flags of `command` ("job" for the job flags alone; "search", "shapes", "plan"): the command's own
/// first, then the job flags none of them shadows. Throws input_error for another name.
std::vector<command_flag> command_flags(std::string_view command);

}  // namespace trainplan
