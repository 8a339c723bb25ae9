// The `logs` command's flags and request (docs/formulas.md §8): its local flag table, the log files, and
// job flags (or a launch line) for the plan to compare with. The reading is src/core/logs/logs_io.cc.
#include <cmath>
#include <string>
#include <vector>

#include "local_flags.h"
#include "trainplan/cli/cli.h"
#include "trainplan/core/base/error.h"
#include "trainplan/core/estimate/time.h"

namespace trainplan {

namespace {

using detail::local_flag;

/// "now" (the clock) or "YYYY-MM-DD HH:MM:SS" (local time, as logs print it).
double parse_now(const std::string& v, const std::string& flag) {
  if (v == "now") return local_now_s();
  const double t = parse_log_time(v);
  if (std::isnan(t) || v.size() > 29) {
    throw input_error(flag + " must be 'now' or a local time 'YYYY-MM-DD HH:MM:SS', got '" + v + "'");
  }
  return t;
}

/// A count of progress lines: 1 to 10^6 (the windows are held in memory).
std::int64_t window(const std::string& v, const std::string& flag) {
  const std::int64_t n = detail::parse_count(v, flag);
  if (n > 1000000) throw input_error(flag + " must be at most 1000000 progress lines, got " + v);
  return n;
}

std::vector<local_flag> logs_table(logs_request* r) {
  log_options* o = &r->follow.options;
  auto fraction = [](double* field) {
    return [field](const std::vector<std::string>& v, const std::string& f) {
      const double x = detail::parse_positive(v[0], f);
      if (x >= 1) throw input_error(f + " is a fraction below 1 (0.02 = 2%), got " + v[0]);
      *field = x;
    };
  };
  return {
      {"--follow", {"-f"}, "", 0, "keep reading as the log grows; exit 3 when it stalls, 0 when it finishes",
       [r](const auto&, const auto&) { r->follow_mode = true; }, "logs.follow"},
      {"--now", {}, "TIME", 1, "check for a stall at TIME ('now' or 'YYYY-MM-DD HH:MM:SS'); exit 3 when stalled",
       [r](const auto& v, const auto& f) {
         r->now_s = parse_now(v[0], f);
         r->now_is_clock = v[0] == "now";
       }},
      {"--stall-factor", {}, "X", 1, "a stall: silence over X expected intervals [5]",
       [o](const auto& v, const auto& f) { o->stall_factor = detail::parse_positive(v[0], f); }},
      {"--stall-min-s", {}, "S", 1, "... and over S seconds [60]",
       [o](const auto& v, const auto& f) { o->stall_min_s = detail::parse_nonnegative(v[0], f); }},
      {"--poll-s", {}, "S", 1, "--follow: look for new lines every S seconds [1]",
       [r](const auto& v, const auto& f) {
         r->follow.poll_s = detail::parse_positive(v[0], f);
         if (r->follow.poll_s > 3600) throw input_error(f + " must be at most 3600 seconds, got " + v[0]);
       }},
      {"--update-every-s", {}, "S", 1, "--follow: a progress line at most every S seconds [60]",
       [r](const auto& v, const auto& f) { r->follow.update_every_s = detail::parse_nonnegative(v[0], f); }},
      {"--recent", {}, "N", 1, "the recent window, in progress lines [50]",
       [o](const auto& v, const auto& f) { o->recent_records = window(v[0], f); }},
      {"--step-threshold", {}, "F", 1, "a throughput step: a sustained change over F (0.02 = 2%) [0.02]",
       fraction(&o->step_threshold)},
      {"--step-min-lines", {}, "N", 1, "... lasting N progress lines [10]",
       [o](const auto& v, const auto& f) { o->step_min_records = window(v[0], f); }},
      {"--slow-factor", {}, "F", 1, "a one-off slow line: F over the level (0.2 = 20%) [0.2]",
       [o](const auto& v, const auto& f) { o->slow_factor = detail::parse_positive(v[0], f); }},
      {"--spike-threshold", {}, "F", 1, "a loss spike: F over the trailing median (0.05 = 5%) [0.05]",
       fraction(&o->spike_threshold)},
      {"--total-iters", {}, "N", 1, "the run's iterations when the log does not print them",
       [o](const auto& v, const auto& f) { o->train_iterations = detail::parse_count(v[0], f); }},
  };
}

}  // namespace

logs_request parse_logs_request(const std::vector<std::string>& args) {
  logs_request r;
  std::vector<std::string> rest = detail::take_local_flags(logs_table(&r), args);
  std::size_t i = 0;
  for (; i < rest.size() && (rest[i] == "-" || !rest[i].starts_with("-")); ++i) r.files.push_back(rest[i]);
  if (r.files.empty()) {
    throw input_error(rest.empty() ? "logs: give a log file (or - for standard input): trainplan logs FILE… [--follow]"
                                   : "logs: give the log files first, then flags; got '" + rest.front() + "' first");
  }
  const std::vector<std::string> job_args(rest.begin() + static_cast<std::ptrdiff_t>(i), rest.end());
  for (const std::string& a : job_args) {
    if (a == "-" || (!a.starts_with("-") && (a.ends_with(".log") || a.ends_with(".txt") || a.ends_with(".out")))) {
      throw input_error("logs: '" + a + "' after the flags looks like a log file: give the files first");
    }
  }
  if (r.follow_mode && r.files.size() > 1 && std::count(r.files.begin(), r.files.end(), "-") > 0) {
    throw input_error("--follow reads standard input only as the last file");
  }
  if (!job_args.empty()) {
    r.has_job = true;
    r.job = parse_job_args(job_args);
    r.follow.options.seq_length = r.job.job.model.seq_length;
    r.follow.options.global_batch_size = r.job.job.training.global_batch_size;
  }
  return r;
}

std::vector<detail::local_flag> detail::logs_flag_rows() {
  static logs_request dummy;
  return logs_table(&dummy);
}

std::string logs_flags_help() {
  logs_request dummy;
  return detail::local_flags_help(logs_table(&dummy)) +
         "  FILE…                                     the log files in order ('-': standard input)\n"
         "  job flags or -- LAUNCH LINE               the plan to compare with (e.g. --preset bloom-176b-production)\n"
         "Exit status: 0, 2 for bad input, 3 when the job looks stalled (--follow or --now).\n";
}

log_plan_comparison logs_plan(const logs_request& req, const log_report& r) {
  TRAINPLAN_CHECK(req.has_job);
  return compare_with_plan(r, estimate_time(req.job.job), req.job.job.training.global_batch_size);
}

std::string logs_output(const logs_request& req, const reporter& rep, bool* stalled) {
  double last_write_s = kNotLogged;
  const log_analyzer a = read_logs(req.files, req.follow.options, &last_write_s);
  // --now now: this machine's clock against the file's last write (§8.5); --now TIME: a time in the log's
  // own clock, against its timestamps. Each falls back to the other where its own is missing.
  const bool log_clock = !req.now_is_clock && !std::isnan(a.report().last_record_timestamp_s);
  const log_report r = std::isnan(req.now_s) ? a.report()
                       : log_clock          ? a.report(req.now_s, kNotLogged, "")
                                            : a.report(req.now_s, last_write_s, "file modification time");
  if (r.stall.checked && r.stall.silence_s < 0) {
    throw input_error("--now is " + std::to_string(static_cast<std::int64_t>(-r.stall.silence_s)) +
                      " s before the log's last progress (" + r.stall.last_progress_source +
                      "): give a later time, or 'now'");
  }
  if (stalled != nullptr) *stalled = r.stall.stalled;
  if (!req.has_job) return rep.logs(nullptr, r, nullptr);
  const run_context ctx = context_of(req.job);
  const log_plan_comparison c = logs_plan(req, r);
  return rep.logs(&ctx, r, &c);
}

}  // namespace trainplan
