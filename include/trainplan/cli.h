// The command line over the core (library trainplan_cli): the job flags (args.h), each command's own
// flag table and request, and the run context the reporters print. The core (trainplan_core) takes
// job_spec, search_space and plan_inputs and knows nothing of flags.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "trainplan/args.h"
#include "trainplan/error.h"
#include "trainplan/plan.h"
#include "trainplan/report.h"
#include "trainplan/search.h"

namespace trainplan {

/// The flag that sets a job field the core names in its messages ("parallel.tp" →
/// "--tensor-model-parallel-size"); the field path itself when no flag sets it.
std::string flag_of_field(std::string_view field);
/// An input_error's message with its fields named by their flags.
std::string cli_message(const input_error& e);

/// The run context of a parsed job (the job, its preset, the flags it ignored).
run_context context_of(const parsed_job& pj);

// ---- search (src/search_request.cc) ----

std::vector<std::string> default_search_args();
/// A parsed `search` command.
struct search_request {
  search_space space;
  parsed_job base;                       ///< model, cluster and training flags (layout not finalized)
  std::int64_t explain_row = 0;          ///< 1-based row of --explain; 0: none
  bool csv = false;
};
/// Search flags (table-driven, src/search.cc) then job flags for the rest; no arguments: the README's
/// main job, BLOOM-176B on jean-zay-a100, 48 nodes, GBS 2048. Throws input_error naming the flag.
search_request parse_search_request(const std::vector<std::string>& args);
std::string search_flags_help();

// ---- shapes (src/shapes_request.cc) ----

struct shapes_request {
  shape_rules rules;
  search_space space;
  parsed_job base;
};
shapes_request parse_shapes_request(const std::vector<std::string>& args);
std::string shapes_flags_help();

// ---- plan (src/plan_request.cc) ----

/// Split the `plan` command's own flags off `args`: they fill `in`, the rest (job flags) is returned.
/// Table-driven (src/plan.cc); throws input_error naming the flag.
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

}  // namespace trainplan
