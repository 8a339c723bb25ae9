// trainplan: a thin command-line layer over the core library. Subcommands are a table; each parses
// its job flags with the library (parse_job_args), computes once, and hands the result to a renderer.
#include <CLI/CLI.hpp>

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <functional>
#include <memory>
#include <optional>
#include <iostream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "trainplan/cli/cli.h"
#include "trainplan/core/estimate/comm.h"
#include "trainplan/core/base/error.h"
#include "trainplan/report/html.h"
#include "trainplan/core/estimate/memory.h"
#include "trainplan/core/model/model.h"
#include "trainplan/core/plan/plan.h"
#include "trainplan/report/report.h"
#include "trainplan/core/search/search.h"
#include "trainplan/core/estimate/time.h"
#include "trainplan/cli/validate.h"

namespace {

using namespace trainplan;

/// Exit status when the output could not be written (sysexits' EX_IOERR): a full disk, a closed pipe.
constexpr int kOutputErrorStatus = 74;

/// The output could not be written while a command was still running (logs --follow).
struct output_lost : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Flushes standard output; false (errno set) when what was printed did not reach it.
bool output_written() { return std::fflush(stdout) == 0 && !std::ferror(stdout); }

/// The output format: --format text|json|csv|html, with --json for json and --html FILE for an HTML page
/// written to FILE.
struct output_options {
  bool json = false;
  std::string format = "text";
  std::string html;  ///< --html FILE

  /// The reporter asked for; --json with another --format, or --html with another format, contradict.
  std::unique_ptr<reporter> make() const {
    if (json && format != "text" && format != "json") {
      throw input_error("--json and --format " + format + " contradict each other: give one");
    }
    if (!html.empty() && (json || (format != "text" && format != "html"))) {
      throw input_error("--html writes an HTML page: drop --json and --format");
    }
    if (!html.empty()) return make_reporter(output_format::html);
    return make_reporter(json ? output_format::json : parse_output_format(format));
  }

  /// Print the output, or with --html write it to the file (whole or not at all) and say so.
  void emit(const std::string& text) const {
    if (html.empty()) {
      std::cout << text;
      return;
    }
    write_file_atomically(html, text);
    std::cout << "wrote " << html << " (" << (text.size() + 1023) / 1024 << " KiB)\n";
  }
};

using command_fn = std::function<int(const std::vector<std::string>& args, const output_options& out)>;

struct command {
  const char* name;
  const char* summary;
  bool takes_job_flags;
  command_fn run;
};

int cmd_models(const std::vector<std::string>& args, const output_options& out) {
  if (!args.empty()) throw input_error("models takes no job flags, got '" + args.front() + "'");
  std::cout << out.make()->models();
  return 0;
}

int cmd_gpus(const std::vector<std::string>& args, const output_options& out) {
  if (!args.empty()) throw input_error("gpus takes no job flags, got '" + args.front() + "'");
  std::cout << out.make()->gpus();
  return 0;
}

int cmd_clusters(const std::vector<std::string>& args, const output_options& out) {
  if (!args.empty()) throw input_error("clusters takes no job flags, got '" + args.front() + "'");
  std::cout << out.make()->clusters();
  return 0;
}

/// Job flags with the production preset when none are given.
parsed_job job_or_default(const std::vector<std::string>& args) {
  return parse_job_args(args.empty() ? std::vector<std::string>{"--preset", "bloom-176b-production"} : args);
}

int cmd_model(const std::vector<std::string>& args, const output_options& out) {
  out.emit(model_output(parse_job_args(args, model_need::model_only), *out.make()));
  return 0;
}

int cmd_memory(const std::vector<std::string>& args, const output_options& out) {
  out.emit(memory_output(job_or_default(args), *out.make()));
  return 0;
}

int cmd_comm(const std::vector<std::string>& args, const output_options& out) {
  out.emit(comm_output(job_or_default(args), *out.make()));
  return 0;
}

int cmd_time(const std::vector<std::string>& args, const output_options& out) {
  out.emit(time_output(job_or_default(args), *out.make()));
  return 0;
}

int cmd_schedule(const std::vector<std::string>& args, const output_options& out) {
  // "--gpipe" picks GPipe instead of Megatron's schedule; the rest are job flags.
  std::vector<std::string> rest;
  bool gpipe = false;
  for (const std::string& a : args) {
    if (a == "--gpipe") gpipe = true;
    else rest.push_back(a);
  }
  out.emit(schedule_output(job_or_default(rest), gpipe, *out.make()));
  return 0;
}

int cmd_validate(const std::vector<std::string>& args, const output_options& out) {
  std::string csv;
  bool loso = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--loso") {
      loso = true;
    } else if (args[i] == "--csv") {
      if (i + 1 >= args.size()) throw input_error("--csv needs a value (FILE: your measurements)");
      csv = args[++i];
    } else {
      throw input_error("validate takes no job flags; use --csv FILE for your own measurements and --loso for "
                        "leave-one-source-out over BLOOM's tables, got '" + args[i] + "'");
    }
  }
  std::cout << validation_output(csv, *out.make(), loso);
  return 0;
}

/// A progress bar on stderr when it is a terminal and the search has run for over a second.
search_progress progress_bar() {
  if (isatty(STDERR_FILENO) == 0) return {};
  const auto start = std::chrono::steady_clock::now();
  return [start](std::int64_t done, std::int64_t total) {
    if (std::chrono::steady_clock::now() - start < std::chrono::seconds(1)) return;
    const int width = 40;
    const int filled = total > 0 ? static_cast<int>(width * done / total) : width;
    std::fprintf(stderr, "\r[%s%s] %3d%%", std::string(static_cast<std::size_t>(filled), '#').c_str(),
                 std::string(static_cast<std::size_t>(width - filled), ' ').c_str(),
                 total > 0 ? static_cast<int>(100 * done / total) : 100);
    if (done >= total) std::fprintf(stderr, "\r%s\r", std::string(width + 8, ' ').c_str());
  };
}

int cmd_search(const std::vector<std::string>& args, const output_options& out_in) {
  const search_request req = parse_search_request(args);
  output_options out = out_in;
  if (req.csv) {  // the search's own --csv: --format csv
    if (out.json || out.format != "text") throw input_error("--csv with --json or --format: give one output format");
    out.format = "csv";
  }
  const std::unique_ptr<reporter> rep = out.make();  // checked before the search runs
  if (req.explain_row > 0 && rep->format() != output_format::text) {
    throw input_error("--explain prints the text analysis of one row: drop --json, --csv or --format");
  }
  const search_result r = run_search(req.base.job, req.space, progress_bar());
  if (req.explain_row > 0) {
    if (req.explain_row > static_cast<std::int64_t>(r.candidates.size())) {
      throw input_error("--explain " + std::to_string(req.explain_row) + ": the search evaluated only " +
                        std::to_string(r.candidates.size()) + " layouts");
    }
    parsed_job pj = req.base;
    pj.job = candidate_job(req.base.job, r.candidates[static_cast<std::size_t>(req.explain_row - 1)]);
    const run_context ctx = time_context(pj);
    const parameter_breakdown p = count_parameters(pj.job.model, pj.job.parallel.tp);
    std::cout << "Row " << req.explain_row << " of the search\n\n"
              << rep->memory(ctx, p, estimate_memory(pj.job), nullptr) << "\n"
              << rep->comm(ctx, summarize_comm(pj.job)) << "\n"
              << rep->time(ctx, estimate_time(pj.job));
    return 0;
  }
  out.emit(rep->search(search_context(req, r), req.space, r));
  if (rep->format() != output_format::text) std::cerr << search_summary(r);
  return 0;
}

int cmd_shapes(const std::vector<std::string>& args, const output_options& out) {
  out.emit(shapes_output(parse_shapes_request(args), *out.make()));
  return 0;
}

int cmd_report(const std::vector<std::string>& args, const output_options& out) {
  out.emit(report_output(job_or_default(args), *out.make()));
  return 0;
}

int cmd_plan(const std::vector<std::string>& args, const output_options& out) {
  out.emit(plan_output(parse_plan_request(args), *out.make()));
  return 0;
}

/// Exit status of `logs` when the job looks stalled (§8.5): a cron check's signal.
constexpr int kStalledStatus = 3;

int cmd_logs(const std::vector<std::string>& args, const output_options& out) {
  const logs_request req = parse_logs_request(args);
  const std::unique_ptr<reporter> rep = out.make();  // checked before reading
  if (!req.follow_mode) {
    bool stalled = false;
    std::cout << logs_output(req, *rep, &stalled);
    return stalled ? kStalledStatus : 0;
  }
  // --follow: the files before the last are read whole; the last is followed.
  const std::vector<std::string> before(req.files.begin(), req.files.end() - 1);
  log_analyzer a = before.empty() ? log_analyzer(req.follow.options) : read_logs(before, req.follow.options, nullptr);
  const bool json = rep->format() == output_format::json;
  std::optional<run_context> ctx;
  if (req.has_job) ctx = context_of(req.job);
  log_report last;
  const bool stalled = follow_log(req.files.back(), a, req.follow, [&](const log_report& r, bool) {
    last = r;
    const log_plan_comparison c = req.has_job && json ? logs_plan(req, r) : log_plan_comparison{};
    std::cout << rep->logs_update(ctx ? &*ctx : nullptr, r, req.has_job && json ? &c : nullptr);
    std::cout.flush();
    if (!output_written()) {  // the reader went away: stop following (main reports it)
      throw output_lost(std::strerror(errno));
    }
  });
  if (!json) {
    const log_plan_comparison c = req.has_job ? logs_plan(req, last) : log_plan_comparison{};
    std::cout << "\n" << rep->logs(ctx ? &*ctx : nullptr, last, req.has_job ? &c : nullptr);
  }
  return stalled ? kStalledStatus : 0;
}

const std::vector<command>& commands() {
  static const std::vector<command> table = {
      {"models", "list the embedded model catalog", false, cmd_models},
      {"gpus", "list the embedded GPUs: memory, peaks, bandwidths", false, cmd_gpus},
      {"clusters", "list the embedded clusters: GPUs per node, NICs, interconnect", false, cmd_clusters},
      {"model", "parameter tree of a model, with shapes and exact counts", true, cmd_model},
      {"memory", "memory per GPU for every pipeline stage; does the layout fit", true, cmd_memory},
      {"comm", "process groups, traffic per parallel dimension and collective time per iteration", true, cmd_comm},
      {"time", "iteration time, throughput, TFLOPs, MFU and where the time goes", true, cmd_time},
      {"schedule", "the pipeline timeline as a text Gantt chart (--json: its events; --gpipe: GPipe)", true,
       cmd_schedule},
      {"validate",
       "predicted against measured over the shipped tables (--csv FILE: your own; --loso: leave-one-source-out over "
       "BLOOM's)",
       true, cmd_validate},
      {"search", "every valid layout ranked by time per iteration (no flags: BLOOM-176B, 48 nodes, GBS 2048)", true,
       cmd_search},
      {"shapes", "(hidden, layers, heads) near --target-params, each with its fastest layout", true, cmd_shapes},
      {"plan", "the campaign: ramp-up, days, GPU-hours, checkpoints, failures, goodput (--train-tokens N)", true,
       cmd_plan},
      {"report", "memory, time, the pipeline timeline and communication of one job on one page (--html FILE)", true,
       cmd_report},
      {"logs", "read a training log: progress, ETA, slowdowns, spikes, restarts, stalls, against the plan", true,
       cmd_logs},
  };
  return table;
}

/// Commands with flags of their own (parsed in the library), listed before the job flags in their help.
std::string local_flags_of(const std::string& name) {
  static const std::vector<std::pair<std::string, std::string (*)()>> table = {
      {"search", search_flags_help}, {"shapes", shapes_flags_help}, {"plan", plan_flags_help}, {"logs", logs_flags_help}};
  for (const auto& [n, help] : table)
    if (n == name) return name + " flags:\n" + help() + "\n";
  return "";
}

std::vector<std::string> command_names() {
  std::vector<std::string> names;
  for (const auto& c : commands()) names.push_back(c.name);
  return names;
}

/// `trainplan` alone (the main job), `help flags`, `help [COMMAND]` (rewritten to --help) and unknown
/// commands, before CLI11 parses: a status when the arguments were handled here, else nullopt.
std::optional<int> handle_early(std::vector<std::string>& argv_s) {
  if (argv_s.empty()) {
    // The main job: the layout search for BLOOM-176B on its cluster, 48 nodes, GBS 2048 (README).
    std::cout << "trainplan: the layout search for BLOOM-176B on jean-zay-a100, 48 nodes, GBS 2048 "
                 "(`trainplan search`; `trainplan memory` for the production layout)\n\n";
    return cmd_search({}, {});
  }
  if (argv_s.size() == 1 && (argv_s.front() == "--version" || argv_s.front() == "version")) {
    std::cout << "trainplan " << tool_version() << " (JSON schema_version " << kSchemaVersion << ")\n";
    return 0;
  }
  if (argv_s.front() == "help" && argv_s.size() > 1 && argv_s[1] == "flags") {
    std::cout << "Job flags (Megatron-LM names are accepted as they are):\n" << job_flags_help()
              << classified_flags_help();
    return 0;
  }
  auto known = [](const std::string& name) {
    for (const auto& c : commands()) {
      if (name == c.name) return true;
    }
    return false;
  };
  if (argv_s.front() == "help") {
    // `trainplan help` and `trainplan help COMMAND` are --help of the program or the command.
    if (argv_s.size() > 2) throw input_error("help takes at most one command, got '" + argv_s[2] + "'");
    if (argv_s.size() == 2 && !known(argv_s[1])) {
      throw input_error("help: unknown command '" + argv_s[1] + "'" + did_you_mean(argv_s[1], command_names()) +
                        "; `trainplan --help` lists them");
    }
    argv_s = argv_s.size() == 2 ? std::vector<std::string>{argv_s[1], "--help"} : std::vector<std::string>{"--help"};
  }
  const std::string& first = argv_s.front();
  if (!first.starts_with("-") && !known(first) && first != "help") {
    throw input_error("unknown command '" + first + "'" + did_you_mean(first, command_names()) +
                      "; `trainplan --help` lists them");
  }
  return std::nullopt;
}

int run(int argc, char** argv) {
  std::vector<std::string> argv_s(argv + 1, argv + argc);
  if (const std::optional<int> status = handle_early(argv_s)) return *status;
  CLI::App app{"trainplan: plan LLM training on GPU clusters before a GPU-hour is spent", "trainplan"};
  app.require_subcommand(0, 1);
  app.footer("With no command: the layout search for BLOOM-176B on jean-zay-a100, 48 nodes, GBS 2048.\n"
             "`trainplan help flags` lists every job flag with its default.");
  int rc = 0;
  std::vector<std::pair<CLI::App*, const command*>> subs;
  output_options out;
  for (const auto& c : commands()) {
    CLI::App* sub = app.add_subcommand(c.name, c.summary);
    sub->add_flag("--json", out.json, "JSON output (schema_version 1; = --format json)");
    sub->add_option("--format", out.format, "output: text, json, csv (search, validate) or html")->default_val("text");
    sub->add_option("--html", out.html, "write an HTML page of charts to FILE (memory, time, schedule, comm, search, shapes, plan, report)")
        ->each([](const std::string& v) {
          if (v.empty()) throw input_error("--html needs a file name (got an empty one)");
        });
    if (c.takes_job_flags) {
      sub->allow_extras();
      // Built only when help is printed (it was 37% of a `trainplan time` process's instructions).
      const std::string name = c.name;
      sub->footer([name] {
        return local_flags_of(name) +
               "Job flags (Megatron-LM names accepted; `-- torchrun ... pretrain_gpt.py <flags>` reads a launch line):\n" +
               job_flags_help();
      });
    }
    subs.emplace_back(sub, &c);
  }
  // Everything after "--" is a launch line: keep it away from CLI11.
  std::vector<std::string> launch;
  if (auto it = std::find(argv_s.begin(), argv_s.end(), std::string("--")); it != argv_s.end()) {
    launch.assign(it, argv_s.end());
    argv_s.erase(it, argv_s.end());
  }
  std::vector<std::string> reversed(argv_s.rbegin(), argv_s.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ExtrasError&) {
    // CLI11 2.1 names the extras in reverse order (it joins remaining() with rjoin): name them as given.
    std::vector<std::string> extras = app.remaining();
    std::string where = "trainplan";
    for (auto& [sub, c] : subs) {
      if (!sub->parsed()) continue;
      const std::vector<std::string> r = sub->remaining();
      extras.insert(extras.end(), r.begin(), r.end());
      where += " " + std::string(c->name);
    }
    const std::string message =
        fmt::format("{} not expected: {}; `{} --help` lists what it takes",
                    extras.size() > 1 ? "these arguments were" : "this argument was", fmt::join(extras, " "), where);
    std::fprintf(stderr, "trainplan: error: %s\n", message.c_str());
    return 2;
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::fprintf(stderr, "trainplan: error: %s\n", e.what());
    return 2;
  }
  for (auto& [sub, c] : subs) {
    if (!sub->parsed()) continue;
    std::vector<std::string> rest = sub->remaining();
    rest.insert(rest.end(), launch.begin(), launch.end());
    rc = c->run(rest, out);
  }
  return rc;
}

}  // namespace

/// Exit status of an internal error (an exception that is not bad input).
constexpr int kInternalErrorStatus = 70;

int main(int argc, char** argv) {
  // A closed pipe is a write error like any other (exit 74, said on stderr), not a silent SIGPIPE.
  std::signal(SIGPIPE, SIG_IGN);
  try {
    const int status = run(argc, argv);
    if (!output_written()) {
      std::fprintf(stderr, "trainplan: error: cannot write the output: %s\n", std::strerror(errno));
      return kOutputErrorStatus;
    }
    return status;
  } catch (const trainplan::input_error& e) {
    std::fprintf(stderr, "trainplan: error: %s\n", trainplan::cli_message(e).c_str());
    return 2;
  } catch (const output_lost& e) {
    std::fprintf(stderr, "trainplan: error: cannot write the output: %s\n", e.what());
    return kOutputErrorStatus;
  } catch (const std::exception& e) {
    // Not bad input but a fault of trainplan's own: say so, with its own status (sysexits' EX_SOFTWARE).
    std::fprintf(stderr, "trainplan: internal error: %s (please report it with the command line)\n", e.what());
    return kInternalErrorStatus;
  }
}
