// The training campaign (docs/formulas.md §7.5-§7.8): ramp-up phases, days, GPU-hours, checkpoints,
// failures (Young/Daly), evaluation and goodput.
#include "trainplan/core/plan/plan.h"

#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "trainplan/core/base/error.h"
#include "trainplan/core/base/limits.h"
#include "trainplan/core/model/model.h"
#include "trainplan/core/estimate/time.h"

namespace trainplan {

namespace {

constexpr double kSecondsPerDay = 86400;
constexpr double kSecondsPerHour = 3600;

/// The phases of a step schedule (§7.5): the batch of the last step whose threshold the consumed samples
/// have reached (tokens // seq_length), switched at iteration boundaries as Megatron's calculator does;
/// until `total_samples` are consumed, or with --train-iters for its iterations after those done.
std::vector<plan_phase> scheduled_phases(const plan_inputs& in, double total_samples) {
  std::vector<plan_phase> out;
  const std::vector<batch_step>& steps = in.batch_schedule;
  const bool by_iterations = in.train_iters > 0;
  double skip = by_iterations ? static_cast<double>(in.start_iteration) : 0;  // done before the plan
  double left = by_iterations ? static_cast<double>(in.train_iters - in.start_iteration) : 0;
  double consumed = 0;
  for (std::size_t k = 0; k < steps.size(); ++k) {
    const auto batch = static_cast<double>(steps[k].global_batch_size);
    const double until = k + 1 < steps.size() ? static_cast<double>(steps[k + 1].from_tokens / in.seq_length)
                                              : std::numeric_limits<double>::infinity();
    if (consumed >= until) continue;
    double iters = std::ceil((until - consumed) / batch);  // to the next step (infinite for the last)
    const double done = std::min(skip, iters);
    skip -= done;
    consumed += done * batch;
    iters -= done;
    iters = by_iterations ? std::min(iters, left) : std::min(iters, std::ceil((total_samples - consumed) / batch));
    if (iters > 0) {
      const auto n = static_cast<std::int64_t>(iters);
      out.push_back({steps[k].global_batch_size, n, n * steps[k].global_batch_size, 0, 0});
      consumed += iters * batch;
      left -= iters;
    }
    if (by_iterations ? (left <= 0 && skip <= 0) : consumed >= total_samples) break;
  }
  return out;
}

std::vector<plan_phase> phases_of(const plan_inputs& in, double total_samples) {
  std::vector<plan_phase> out;
  if (!in.batch_schedule.empty()) return scheduled_phases(in, total_samples);
  double consumed = 0;
  if (in.rampup.enabled()) {
    const rampup_spec& r = in.rampup;
    if (r.start > in.global_batch_size) {
      throw input_error("${plan.rampup_batch_size} START (" + std::to_string(r.start) + ") exceeds ${training.global_batch_size} (" +
                        std::to_string(in.global_batch_size) + ")");
    }
    const std::int64_t diff = in.global_batch_size - r.start;
    if (diff % r.increment != 0) {
      throw input_error("${plan.rampup_batch_size}: ${training.global_batch_size} − START (" + std::to_string(diff) +
                        ") must be a multiple of INCR (" + std::to_string(r.increment) + "), as Megatron requires");
    }
    const std::int64_t increments = diff / r.increment;
    const double per_increment = increments > 0 ? static_cast<double>(r.samples) / increments : 0;
    for (std::int64_t k = 0; k < increments && consumed < total_samples; ++k) {
      const std::int64_t batch = r.start + k * r.increment;
      const double end = std::min(total_samples, (k + 1) * per_increment);
      if (end <= consumed) continue;
      const auto iters = static_cast<std::int64_t>(std::ceil((end - consumed) / batch));
      out.push_back({batch, iters, iters * batch, 0, 0});
      consumed += static_cast<double>(iters * batch);
    }
  }
  if (consumed < total_samples) {
    const auto iters = static_cast<std::int64_t>(std::ceil((total_samples - consumed) / in.global_batch_size - 1e-9));
    out.push_back({in.global_batch_size, iters, iters * in.global_batch_size, 0, 0});
  }
  return out;
}

}  // namespace

double checkpoint_bytes(double params, double bytes_per_param) { return params * bytes_per_param; }

double young_daly_interval_s(double save_s, double mtbf_s) {
  if (!(save_s > 0) || !(mtbf_s > 0) || !std::isfinite(mtbf_s)) return 0;
  return std::sqrt(2 * save_s * mtbf_s);
}

bool plan_has_given_speed(const plan_inputs& in) { return in.iteration_s > 0 || in.tflops_per_gpu > 0; }

void plan_from_job(const job_spec& job, plan_inputs& in) {
  in.global_batch_size = job.training.global_batch_size;
  in.seq_length = job.model.seq_length;
  in.num_gpus = job.num_gpus;
  if (in.model_params <= 0) in.model_params = static_cast<double>(count_parameters(job.model, job.parallel.tp).total);
  const time_report full = estimate_time(job);
  in.tflops_per_gpu = full.tflops_per_gpu;
  in.layout_fits = full.fits;
  in.peak_reserved_bytes = full.peak_reserved_bytes;
  in.capacity_bytes = full.capacity_bytes;
  auto cache = std::make_shared<std::map<std::int64_t, double>>();
  (*cache)[job.training.global_batch_size] = full.iteration_s;
  in.iteration_s_at_batch = [job, cache](std::int64_t batch) {
    if (auto it = cache->find(batch); it != cache->end()) return it->second;
    const std::int64_t step = job.training.micro_batch_size * job.parallel.dp;
    if (batch % step != 0) {
      throw input_error("batch " + std::to_string(batch) + " of ${plan.rampup_batch_size} or ${plan.batch_schedule} is not "
                        "a multiple of MBS × DP (" + std::to_string(step) + "), as Megatron requires of every batch it runs");
    }
    job_spec j = job;
    j.training.global_batch_size = batch;
    const double s = estimate_time(j).iteration_s;
    (*cache)[batch] = s;
    return s;
  };
}

namespace {

/// The work, the GPUs and a speed must be given, each once and consistently (§7.5).
void check_plan_inputs(const plan_inputs& in, bool from_job) {
  const int budgets = (in.train_tokens > 0) + (in.train_samples > 0) + (in.train_iters > 0);
  if (budgets != 1) {
    throw input_error(budgets == 0 ? "plan needs the work: ${plan.train_tokens}, ${plan.train_samples} or ${plan.train_iters}"
                                   : "give one of ${plan.train_tokens}, ${plan.train_samples}, ${plan.train_iters}");
  }
  if (in.num_gpus <= 0) throw input_error("plan needs the GPU count: ${num_gpus} (or a job's ${cluster.num_nodes})");
  if (!from_job && in.iteration_s <= 0 && in.tflops_per_gpu <= 0) {
    throw input_error("plan needs a speed: a job layout, ${plan.iteration_s} or ${plan.tflops_per_gpu}");
  }
  if (!from_job && in.iteration_s <= 0 && in.model_params <= 0) {
    throw input_error("${plan.tflops_per_gpu} needs the parameter count: ${model} NAME or ${plan.model_params} N");
  }
  if (in.start_iteration > 0 && in.train_iters == 0) {
    throw input_error("${plan.start_iteration} needs ${plan.train_iters} (the log line's 'iteration N/M')");
  }
  if (!in.batch_schedule.empty()) {
    // Megatron's own checks (num_microbatches_calculator.py, _validate_schedule), and one schedule.
    if (in.rampup.enabled()) {
      throw input_error("${plan.batch_schedule} and ${plan.rampup_batch_size}: give one batch-size schedule");
    }
    if (in.batch_schedule.front().from_tokens != 0) {
      throw input_error("${plan.batch_schedule}: the first step must start at 0, as Megatron requires");
    }
    for (std::size_t k = 1; k < in.batch_schedule.size(); ++k) {
      if (in.batch_schedule[k].from_tokens <= in.batch_schedule[k - 1].from_tokens) {
        throw input_error("${plan.batch_schedule}: thresholds must increase, as Megatron requires");
      }
    }
  }
  if (in.train_iters > 0 && in.rampup.enabled()) {
    throw input_error("${plan.rampup_batch_size} needs ${plan.train_samples} or ${plan.train_tokens} (Megatron rejects it with ${plan.train_iters})");
  }
  if (in.start_iteration >= in.train_iters && in.train_iters > 0) {
    throw input_error("${plan.start_iteration} (" + std::to_string(in.start_iteration) + ") must be below ${plan.train_iters} (" +
                      std::to_string(in.train_iters) + ")");
  }
}

/// Every figure a plan prints is a finite number within what a campaign can take (§7.9): the inputs'
/// ranges keep them so; this is the last check before anything is printed.
void check_figures(const plan_report& r) {
  const std::pair<const char*, double> figures[] = {
      {"the training time", r.train_s},          {"the wall-clock time", r.wall_s},
      {"the GPU-hours", r.gpu_hours},            {"the checkpoint interval", r.checkpoint_interval_s},
      {"the checkpoint size", r.checkpoint_bytes}, {"the expected failures", r.expected_failures},
      {"the goodput", r.goodput}};
  for (const auto& [what, value] : figures) {
    if (!std::isfinite(value) || value < 0 || value > 1e18) {
      throw input_error(fmt::format("the plan's inputs give {} as {:g}, which no campaign has: check the units of "
                                    "${{plan.train_tokens}}, ${{plan.tflops_per_gpu}} and the checkpoint and failure "
                                    "figures", what, value));
    }
  }
}

/// Samples and iterations are counted in int64 and doubles, exact to 2^53: a larger budget is refused
/// rather than wrapped or rounded (2^53 samples of 2,048 tokens are 10^4 times any run so far).
void check_sample_count(const plan_inputs& in, double samples) {
  if (samples <= limits::kMaxPlanSamples) return;
  const char* field = in.train_tokens > 0 ? "${plan.train_tokens}" : in.train_samples > 0 ? "${plan.train_samples}" : "${plan.train_iters}";
  throw input_error(fmt::format("{} gives {:.3g} samples, more than the 2^53 (9.0e15) a plan counts exactly: no training run is "
                                "that long",
                                field, samples));
}

/// Checkpoints, evaluation, failures and the wall time they give (§7.6-§7.8), from r.train_s.
void add_checkpoints_and_failures(const plan_inputs& in, double full_iteration_s, plan_report& r) {
  // Checkpoints and failures (§7.6, §7.7).
  r.checkpoint_bytes = checkpoint_bytes(in.model_params, in.checkpoint_bytes_per_param);
  r.checkpoint_save_s = r.checkpoint_bytes / in.checkpoint_write_bytes_per_s;
  r.job_mtbf_s = in.gpu_mtbf_hours > 0 ? in.gpu_mtbf_hours * kSecondsPerHour / in.num_gpus : 0;
  r.checkpoint_interval_s = young_daly_interval_s(r.checkpoint_save_s, r.job_mtbf_s);
  if (full_iteration_s > 0 && r.checkpoint_interval_s > 0) {
    r.checkpoint_interval_iters = std::max<std::int64_t>(1, std::llround(r.checkpoint_interval_s / full_iteration_s));
  }
  r.checkpoint_overhead_s = r.checkpoint_interval_s > 0 ? r.train_s / r.checkpoint_interval_s * r.checkpoint_save_s : 0;
  // Evaluation (§7.8): every N iterations costs E iterations (seeds/004: 7 per 1000).
  if (in.eval_interval_iters > 0 && r.total_iterations > 0) {
    r.eval_s = static_cast<double>(r.total_iterations / in.eval_interval_iters) * in.eval_cost_iters * full_iteration_s;
  }
  const double failure_free_s = r.train_s + r.checkpoint_overhead_s + r.eval_s;
  if (r.job_mtbf_s > 0) {
    // First order: failures over the failure-free time, each losing half an interval plus the restart.
    r.expected_failures = failure_free_s / r.job_mtbf_s;
    r.expected_lost_hours = r.expected_failures * (r.checkpoint_interval_s / 2 + in.restart_s) / kSecondsPerHour;
  }
  r.wall_s = failure_free_s + r.expected_lost_hours * kSecondsPerHour;
  r.goodput = r.wall_s > 0 ? r.train_s / r.wall_s : 0;
  r.train_days = r.wall_s / kSecondsPerDay;
  r.gpu_hours = r.wall_s * in.num_gpus / kSecondsPerHour;
  r.compute_gpu_hours = r.train_s * in.num_gpus / kSecondsPerHour;
  r.allocation_gpu_hours = in.allocation_gpu_hours;
  if (in.allocation_gpu_hours > 0) {
    r.allocation_sufficient = in.allocation_gpu_hours >= r.gpu_hours;
    r.allocation_margin = in.allocation_gpu_hours / r.gpu_hours;
  }
}

}  // namespace

plan_report make_plan(const plan_inputs& in) {
  plan_report r;
  r.from_job = static_cast<bool>(in.iteration_s_at_batch);
  r.layout_fits = in.layout_fits;
  r.peak_reserved_bytes = in.peak_reserved_bytes;
  r.capacity_bytes = in.capacity_bytes;
  check_plan_inputs(in, r.from_job);
  const bool by_tokens_only = in.global_batch_size <= 0 || in.seq_length <= 0;
  if (by_tokens_only && (in.iteration_s > 0 || in.train_iters > 0 || in.train_samples > 0 || in.rampup.enabled() ||
                         !in.batch_schedule.empty())) {
    throw input_error("plan needs ${training.global_batch_size} and ${model.seq_length} (or ${model}) for iterations and samples");
  }

  // Seconds per token at a given rate, seeds/000: flops_per_param_token · params / (GPUs · TFLOPs).
  const double per_token_s = in.tflops_per_gpu > 0 && in.model_params > 0
                                 ? in.flops_per_param_token * in.model_params / (in.num_gpus * in.tflops_per_gpu * 1e12)
                                 : 0;
  auto iteration_at = [&](std::int64_t batch) {
    if (in.iteration_s_at_batch) return in.iteration_s_at_batch(batch);
    if (in.iteration_s > 0) return in.iteration_s * batch / in.global_batch_size;  // time ∝ samples (§7.5)
    return per_token_s * static_cast<double>(batch * in.seq_length);
  };

  if (by_tokens_only) {
    // §7.9: the tokens of a plan without a batch are bounded as its samples are.
    if (in.train_tokens > limits::kMaxPlanSamples) {
      throw input_error(fmt::format("${{plan.train_tokens}} {:.3g} is more than the 2^53 (9.0e15) a plan counts "
                                    "exactly: no training run is that long (check the unit)",
                                    in.train_tokens));
    }
    plan_phase p;
    p.time_s = in.train_tokens * per_token_s;
    r.phases.push_back(p);
    r.total_tokens = in.train_tokens;
  } else {
    double samples = 0;
    if (in.train_tokens > 0) samples = std::ceil(in.train_tokens / in.seq_length);
    if (in.train_samples > 0) samples = static_cast<double>(in.train_samples);
    if (in.train_iters > 0) samples = static_cast<double>(in.train_iters - in.start_iteration) * in.global_batch_size;
    check_sample_count(in, samples);
    r.phases = phases_of(in, samples);
    for (plan_phase& p : r.phases) {
      p.iteration_s = iteration_at(p.global_batch_size);
      p.time_s = p.iteration_s * static_cast<double>(p.iterations);
      r.total_iterations += p.iterations;
      r.total_samples += static_cast<double>(p.samples);
    }
    r.total_tokens = r.total_samples * in.seq_length;
  }
  for (const plan_phase& p : r.phases) r.train_s += p.time_s;
  const double full_iteration_s = by_tokens_only ? 0 : iteration_at(in.global_batch_size);
  r.tflops_per_gpu = in.tflops_per_gpu;

  add_checkpoints_and_failures(in, full_iteration_s, r);
  check_figures(r);
  return r;
}

}  // namespace trainplan
