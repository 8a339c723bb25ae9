// Each command's computation and output, shared by the command line (apps/trainplan.cc) and the Python
// module (python/): one call computes the result and hands it to a reporter. Also the flags as data.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "local_flags.h"
#include "trainplan/core/base/input_file.h"
#include "trainplan/cli/cli.h"
#include "trainplan/core/estimate/comm.h"
#include "trainplan/core/base/checked.h"
#include "trainplan/core/base/error.h"
#include "trainplan/report/html.h"
#include "trainplan/core/estimate/memory.h"
#include "trainplan/core/model/model.h"
#include "trainplan/core/estimate/time.h"
#include "trainplan/cli/validate.h"

namespace trainplan {

std::string model_output(const parsed_job& pj, const reporter& rep) {
  const std::int64_t tp = pj.job.parallel.tp;
  return rep.model(pj.job.model, count_parameters(pj.job.model, tp), tp);
}

std::string memory_output(const parsed_job& pj, const reporter& rep) {
  // Where the groups sit (§4.1): memory refuses the layouts time and communication cannot place.
  if (std::string v = placement_violation(pj.job); !v.empty()) throw input_error(v);
  const parameter_breakdown p = count_parameters(pj.job.model, pj.job.parallel.tp);
  const memory_report r = estimate_memory(pj.job);
  const megatron_theoretical_memory megatron = megatron_theoretical(pj.job);
  const megatron_theoretical_memory* shown = megatron_theoretical_applies(pj.job) ? &megatron : nullptr;
  return rep.memory(context_of(pj), p, r, shown);
}

std::string comm_output(const parsed_job& pj, const reporter& rep) {
  return rep.comm(context_of(pj), analyze_comm(pj.job));
}

std::string time_output(const parsed_job& pj, const reporter& rep) {
  return rep.time(time_context(pj), estimate_time(pj.job));
}

std::string schedule_output(const parsed_job& pj, bool gpipe, const reporter& rep) {
  return rep.schedule(context_of(pj), schedule_timeline(pj.job, gpipe ? schedule_kind::gpipe : default_schedule(pj.job)));
}

std::string report_output(const parsed_job& pj, const reporter& rep) {
  const run_context ctx = time_context(pj);
  const parameter_breakdown p = count_parameters(pj.job.model, pj.job.parallel.tp);
  const memory_report m = estimate_memory(pj.job);
  const megatron_theoretical_memory megatron = megatron_theoretical(pj.job);
  const megatron_theoretical_memory* shown = megatron_theoretical_applies(pj.job) ? &megatron : nullptr;
  const time_report t = schedule_timeline(pj.job, default_schedule(pj.job));
  const comm_report c = analyze_comm(pj.job);
  switch (rep.format()) {
    case output_format::html:
      return html_page("Report: " + model_label(pj.job), &ctx,
                       {html_memory_section(m, shown), html_time_section(t), html_schedule_section(t), html_comm_section(c)});
    case output_format::text:
      return rep.memory(ctx, p, m, shown) + "\n" + rep.time(ctx, t) + "\n" + rep.comm(ctx, c);
    default:
      throw input_error("report has a text and an HTML form (--html FILE); for JSON use memory, time, schedule and comm --json");
  }
}

run_context search_context(const search_request& req) {
  run_context ctx = context_of(req.base);
  ctx.has_layout = false;  // the search chooses the layout: each candidate states its own
  if (!req.base.from_launch_line) ctx.job_args = req.job_args;
  ctx.candidate_args = [fw = req.base.job.training.framework](const search_candidate& c) {
    return candidate_flags(c, fw);
  };
  return ctx;
}

run_context search_context(const search_request& req, const search_result& r) {
  run_context ctx = search_context(req);
  // Issue 28: the leading rows that lie within the expected error of row 1 (their order is a coin toss).
  ctx.expected_error = expected_error_of(req.base.job);
  if (ctx.expected_error.runs > 0 && !r.candidates.empty()) {
    const double limit = r.candidates.front().iteration_s * (1 + ctx.expected_error.p80_abs_error);
    while (ctx.rows_within_expected_error < static_cast<std::int64_t>(r.candidates.size()) &&
           r.candidates[static_cast<std::size_t>(ctx.rows_within_expected_error)].iteration_s <= limit) {
      ++ctx.rows_within_expected_error;
    }
  }
  return ctx;
}

run_context time_context(const parsed_job& pj) {
  run_context ctx = context_of(pj);
  ctx.expected_error = expected_error_of(pj.job);
  return ctx;
}

std::string search_output(const search_request& req, const reporter& rep, const search_progress& progress) {
  const search_result r = run_search(req.base.job, req.space, progress);
  return rep.search(search_context(req, r), req.space, r);
}

std::string shapes_output(const shapes_request& req, const reporter& rep) {
  return rep.shapes(req.rules, run_shapes(req.base.job, req.rules, req.space));
}

std::string plan_output(const plan_request& req, const reporter& rep) {
  return rep.plan(make_plan(req.inputs), req.inputs.num_gpus);
}

std::string validation_output(const std::string& csv_path, const reporter& rep, bool loso) {
  validation_report r;
  if (csv_path.empty()) {
    r = validate_shipped();
  } else {
    const std::string text = read_input_file(csv_path, "--csv", kMaxTableFileBytes);
    r = run_validation(read_measurements(text, csv_path));
  }
  if (loso) leave_one_source_out(r);
  return rep.validation(r);
}

// ---- the flags as data ------------------------------------------------------------------------------

namespace {

/// Value names and what they hold: every value name a flag row uses is listed (a name missing here is an
/// internal fault, caught by tests/cli/fields_test.cc, not a number by default: FORMAT and RECIPE were).
struct value_name_kind {
  std::string_view value_name;
  value_kind kind;
};
constexpr value_name_kind kValueKinds[] = {
    {"", value_kind::none},          {"N", value_kind::integer},     {"K", value_kind::integer},
    {"LIST", value_kind::list},      {"MIN-MAX", value_kind::range}, {"NAME", value_kind::text},
    {"NAME|FILE", value_kind::text}, {"FILE", value_kind::text},     {"TYPE", value_kind::text},
    {"KIND", value_kind::text},      {"IMPL", value_kind::text},     {"METHOD", value_kind::text},
    {"ORDER", value_kind::text},     {"DTYPE", value_kind::text},   {"PATTERN", value_kind::text},
    {"on|off", value_kind::text},    {"FORMAT", value_kind::text},   {"RECIPE", value_kind::text},
    {"TIME", value_kind::text},      {"SCHEDULE", value_kind::text},
    {"N|PATTERN", value_kind::number_or_text},                     {"W|(L,0)", value_kind::number_or_text},
    // Numbers in a unit.
    {"B", value_kind::number},       {"BYTES", value_kind::number},  {"F", value_kind::number},
    {"GB/S", value_kind::number},    {"GBIT/S", value_kind::number}, {"GIB", value_kind::number},
    {"H", value_kind::number},       {"MIB", value_kind::number},    {"MIN", value_kind::number},
    {"MS", value_kind::number},      {"P", value_kind::number},      {"S", value_kind::number},
    {"TFLOPS", value_kind::number},  {"TOKENS", value_kind::number}, {"US", value_kind::number},
    {"X", value_kind::number},
};

value_kind kind_of(std::string_view value_name, int arity) {
  if (arity > 1) return value_kind::triple;
  for (const value_name_kind& v : kValueKinds)
    if (v.value_name == value_name) return v.kind;
  TRAINPLAN_CHECK_MSG(false, "a flag's value name has no kind in kValueKinds: " + std::string(value_name));
  return value_kind::text;
}

void add_rows(const std::vector<detail::local_flag>& rows, std::vector<command_flag>& out) {
  for (const detail::local_flag& f : rows) {
    out.push_back({f.name, f.aliases, f.value_name, kind_of(f.value_name, f.arity), "", f.help});
  }
}

/// True when `f` is named by a flag already in `out` (a command's own --tp shadows the job's).
bool shadowed(const command_flag& f, const std::vector<command_flag>& out) {
  auto names = [](const command_flag& c) {
    std::vector<std::string> n = c.aliases;
    n.push_back(c.name);
    return n;
  };
  for (const command_flag& o : out) {
    for (const std::string& a : names(o)) {
      for (const std::string& b : names(f))
        if (a == b) return true;
    }
  }
  return false;
}

}  // namespace

std::string_view to_string(value_kind k) {
  constexpr std::string_view kNames[] = {"switch", "integer", "number", "text", "list", "range", "triple",
                                           "number_or_text"};
  return kNames[static_cast<int>(k)];
}

std::vector<command_flag> command_flags(std::string_view command) {
  std::vector<command_flag> out;
  if (command == "search") {
    add_rows(detail::search_flag_rows(), out);
  } else if (command == "shapes") {
    add_rows(detail::shapes_flag_rows(), out);
    add_rows(detail::search_flag_rows(), out);
  } else if (command == "plan") {
    add_rows(detail::plan_flag_rows(), out);
  } else if (command == "logs") {
    add_rows(detail::logs_flag_rows(), out);
  } else if (command != "job") {
    throw input_error("unknown command '" + std::string(command) + "'" +
                      did_you_mean(command, {"job", "search", "shapes", "plan", "logs"}));
  }
  const std::size_t own = out.size();
  std::vector<command_flag> job;
  for (const flag_info& f : job_flags()) {
    command_flag c{f.name, f.aliases, f.value_name, kind_of(f.value_name, 1), f.default_value, f.help};
    if (!shadowed(c, out)) job.push_back(std::move(c));
  }
  job.push_back({"--preset", {}, "NAME", value_kind::text, "", "a named argument set (see presets)"});
  out.insert(out.begin() + static_cast<std::ptrdiff_t>(own), job.begin(), job.end());
  return out;
}

}  // namespace trainplan
