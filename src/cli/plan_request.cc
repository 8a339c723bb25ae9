// The `plan` command's flags and request (docs/formulas.md §7.5-§7.8): its own flag tables, then a
// given speed or job flags. The plan itself is src/core/plan/plan.cc.
#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "local_flags.h"
#include "trainplan/cli/cli.h"
#include "trainplan/core/base/error.h"
#include "trainplan/core/model/model.h"
#include "trainplan/core/plan/plan.h"

namespace trainplan {

namespace {

using detail::local_flag;
using detail::parse_count;
using detail::parse_nonnegative;
using detail::parse_positive;


/// A count with Megatron's suffixes (num_microbatches_calculator.py, _parse_numeric_value: K 1e3, M 1e6,
/// B 1e9, T 1e12; int(float(x) · multiplier)).
std::int64_t parse_suffixed(std::string v, const std::string& what) {
  double mult = 1;
  if (!v.empty()) {
    switch (std::toupper(static_cast<unsigned char>(v.back()))) {
      case 'T': mult = 1e12; break;
      case 'B': mult = 1e9; break;
      case 'M': mult = 1e6; break;
      case 'K': mult = 1e3; break;
      default: break;
    }
    if (mult != 1) v.pop_back();
  }
  const double x = detail::parse_between(v, what, 0, 1e18 / mult, false) * mult;
  return static_cast<std::int64_t>(x);
}

/// --step-batch-size-schedule "THRESHOLD:BATCH …" (spaces or commas between steps), sorted by threshold
/// as Megatron sorts it (_parse_schedule); its rules are checked by the plan.
std::vector<batch_step> parse_batch_schedule(const std::string& text, const std::string& f) {
  std::vector<batch_step> steps;
  std::string entry;
  auto flush = [&] {
    if (entry.empty()) return;
    const std::size_t colon = entry.find(':');
    if (colon == std::string::npos) throw input_error(f + " entry '" + entry + "': expected THRESHOLD:BATCH_SIZE");
    steps.push_back({parse_suffixed(entry.substr(0, colon), f + " threshold"),
                     parse_suffixed(entry.substr(colon + 1), f + " batch size")});
    if (steps.back().global_batch_size < 1) throw input_error(f + " entry '" + entry + "': the batch size must be positive");
    if (steps.size() > 10000) throw input_error(f + ": more than 10,000 steps");
    entry.clear();
  };
  for (char c : text) {
    if (c == ' ' || c == ',' || c == '\t') flush();
    else entry += c;
  }
  flush();
  if (steps.empty()) throw input_error(f + ": no THRESHOLD:BATCH_SIZE step");
  std::stable_sort(steps.begin(), steps.end(), [](const batch_step& a, const batch_step& b) { return a.from_tokens < b.from_tokens; });
  return steps;
}

/// The plan command's own flags (§7.5-§7.8). `in` is bound when parsing.
std::vector<local_flag> plan_table(plan_inputs* in) {
  // Each figure within its range (§7.9): above 0 (or from 0) up to what a campaign can take.
  auto num = [in](double plan_inputs::*field, bool positive, double hi) {
    return [in, field, positive, hi](const std::vector<std::string>& v, const std::string& f) {
      in->*field = detail::parse_between(v[0], f, 0, hi, positive);
    };
  };
  auto count = [in](std::int64_t plan_inputs::*field, std::int64_t lo) {
    return [in, field, lo](const std::vector<std::string>& v, const std::string& f) { in->*field = parse_count(v[0], f, lo); };
  };
  return {
      {"--train-tokens", {}, "TOKENS", 1, "token budget, e.g. 350e9", num(&plan_inputs::train_tokens, true, 1e18), "plan.train_tokens"},
      {"--train-samples", {}, "N", 1, "sample budget (Megatron --train-samples)", count(&plan_inputs::train_samples, 1), "plan.train_samples"},
      {"--train-iters", {}, "N", 1, "iterations at the full batch (Megatron --train-iters)", count(&plan_inputs::train_iters, 1), "plan.train_iters"},
      {"--start-iteration", {}, "N", 1, "iterations already done (a log line's 'iteration N/M')",
       count(&plan_inputs::start_iteration, 0), "plan.start_iteration"},
      {"--rampup-batch-size", {}, "START INCR SAMPLES", 3,
       "Megatron batch ramp-up: from START by INCR over SAMPLES samples",
       [in](const std::vector<std::string>& v, const std::string& f) {
         in->rampup = {parse_count(v[0], f + " START"), parse_count(v[1], f + " INCR"), parse_count(v[2], f + " SAMPLES")};
       }, "plan.rampup_batch_size"},
      {"--step-batch-size-schedule", {}, "SCHEDULE", 1,
       "Megatron's step schedule: batch B from T consumed tokens (K, M, B, T suffixes), e.g. \"0:16 2.4B:320\"",
       [in](const std::vector<std::string>& v, const std::string& f) { in->batch_schedule = parse_batch_schedule(v[0], f); },
       "plan.batch_schedule"},
      {"--iteration-s", {}, "S", 1, "given iteration time at the full batch (no job needed)",
       num(&plan_inputs::iteration_s, true, 1e7), "plan.iteration_s"},
      {"--tflops-per-gpu", {}, "TFLOPS", 1, "given achieved TFLOP/s per GPU (no job needed; with --model-params)",
       num(&plan_inputs::tflops_per_gpu, true, 1e5), "plan.tflops_per_gpu"},
      {"--model-params", {}, "N", 1, "parameter count when no --model is given (e.g. 200e9)",
       [in](const std::vector<std::string>& v, const std::string& f) {
         in->model_params = parse_positive(v[0], f);
         // The largest models trained have ~2e12 parameters; 1e15 leaves room and catches unit slips.
         if (in->model_params > 1e15) throw input_error(f + " must be at most 1e15, got " + v[0]);
       }, "plan.model_params"},
      {"--flops-per-param-token", {}, "X", 1, "FLOPs per parameter per token [8: fwd 2 + bwd 4 + recompute 2]",
       num(&plan_inputs::flops_per_param_token, true, 1e3)},
      {"--allocation-gpu-hours", {}, "H", 1, "GPU-hours allocated: the sufficiency check",
       num(&plan_inputs::allocation_gpu_hours, true, 1e15)},
      {"--checkpoint-bytes-per-param", {}, "B", 1, "checkpoint bytes per parameter [14: bf16 + fp32 master + 2 moments]",
       num(&plan_inputs::checkpoint_bytes_per_param, true, 1e3)},
      {"--checkpoint-write-gb-per-s", {}, "GB/S", 1, "file-system write bandwidth, 1e9 B/s [62: seeds/004]",
       [in](const std::vector<std::string>& v, const std::string& f) {
         in->checkpoint_write_bytes_per_s = detail::parse_between(v[0], f, 1e-3, 1e6) * 1e9;
       }},
      {"--gpu-mtbf-hours", {}, "H", 1, "mean time between failures of one GPU [64512: 1/week on 384 GPUs]; 0: none",
       num(&plan_inputs::gpu_mtbf_hours, false, 1e9)},
      {"--restart-minutes", {}, "MIN", 1, "time lost to each restart besides the lost work [0]",
       [in](const std::vector<std::string>& v, const std::string& f) { in->restart_s = detail::parse_between(v[0], f, 0, 1e6) * 60; }},
      {"--eval-interval", {}, "N", 1, "evaluate every N iterations [0: never]", count(&plan_inputs::eval_interval_iters, 0)},
      {"--eval-cost-iterations", {}, "X", 1, "one evaluation's time in iterations [seeds/004: 7]",
       num(&plan_inputs::eval_cost_iters, false, 1e6)},
  };
}

/// Flags of a plan from given speed figures, where no layout exists (§7.5).
std::vector<local_flag> given_table(plan_inputs* in) {
  return {
      {"--num-gpus", {"--world-size"}, "N", 1, "GPUs", [in](const auto& v, const auto& f) { in->num_gpus = parse_count(v[0], f); }},
      {"--global-batch-size", {"--gbs"}, "N", 1, "samples per iteration",
       [in](const auto& v, const auto& f) { in->global_batch_size = parse_count(v[0], f); }},
      {"--seq-length", {"--seq-len"}, "N", 1, "sequence length",
       [in](const auto& v, const auto& f) { in->seq_length = parse_count(v[0], f); }},
  };
}

struct phase_plan {
  std::int64_t batch;
  double samples;
};

}  // namespace

std::vector<std::string> parse_plan_flags(const std::vector<std::string>& args, plan_inputs& in) {
  return detail::take_local_flags(plan_table(&in), args);
}

std::vector<detail::local_flag> detail::plan_flag_rows() {
  static plan_inputs dummy;
  std::vector<local_flag> rows = plan_table(&dummy);
  for (local_flag& f : given_table(&dummy)) rows.push_back(std::move(f));
  return rows;
}

std::string plan_flags_help() {
  plan_inputs dummy;
  return detail::local_flags_help(plan_table(&dummy)) +
         "  with --iteration-s or --tflops-per-gpu (no layout): --num-gpus N, --gbs N, --seq-length N, and\n"
         "  --model NAME or --model-params N\n";
}

namespace {
std::vector<std::string> parse_plan_given_flags(const std::vector<std::string>& args, plan_inputs& in) {
  return detail::take_local_flags(given_table(&in), args);
}
}  // namespace

namespace {

/// The work a launch line states (Megatron's --train-iters, --train-samples) and its batch schedule
/// (--rampup-batch-size, --step-batch-size-schedule), each taken when the plan's own flags give none:
/// the job's line says how long it trains and at which batches.
void work_from_launch_line(const std::vector<std::string>& args, plan_inputs& in) {
  const bool work_given = in.train_tokens > 0 || in.train_samples > 0 || in.train_iters > 0;
  const bool schedule_given = in.rampup.enabled() || !in.batch_schedule.empty();
  const auto launch = std::find(args.begin(), args.end(), std::string("--"));
  if (launch == args.end()) return;
  std::vector<std::string> line(launch + 1, args.end());
  std::vector<std::string> work;  // the work flags of the line, with their values
  for (std::size_t i = 0; i < line.size(); ++i) {
    const std::string& t = line[i];
    const std::string name = t.substr(0, t.find('='));
    const bool is_work = name == "--train-iters" || name == "--train-samples";
    const bool is_schedule = name == "--rampup-batch-size" || name == "--step-batch-size-schedule";
    if (!(is_work && !work_given) && !(is_schedule && !schedule_given)) continue;
    work.push_back(t);
    if (t.find('=') != std::string::npos) continue;
    const std::size_t values = name == "--rampup-batch-size" ? 3 : 1;
    for (std::size_t k = 0; k < values && i + 1 < line.size(); ++k) work.push_back(line[++i]);
  }
  if (!work.empty()) parse_plan_flags(work, in);
}

}  // namespace

plan_request parse_plan_request(const std::vector<std::string>& args) {
  plan_request req;
  std::vector<std::string> rest = parse_plan_flags(args, req.inputs);
  work_from_launch_line(rest, req.inputs);
  if (plan_has_given_speed(req.inputs)) {
    rest = parse_plan_given_flags(rest, req.inputs);
    if (!rest.empty()) {
      const parsed_job pj = parse_job_args(rest, model_need::model_only);
      if (req.inputs.model_params <= 0) req.inputs.model_params = static_cast<double>(count_parameters(pj.job.model).total);
      if (req.inputs.seq_length <= 0) req.inputs.seq_length = pj.job.model.seq_length;
    }
    return req;
  }
  req.job = parse_job_args(rest.empty() ? std::vector<std::string>{"--preset", "bloom-176b-production"} : rest);
  req.has_job = true;
  plan_from_job(req.job.job, req.inputs);
  return req;
}

}  // namespace trainplan
