// The training campaign: batch-size ramp-up, wall-clock days, GPU-hours against an allocation,
// checkpoint size and interval, failures, evaluation and goodput (docs/formulas.md §7.5-§7.8).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "trainplan/core/job/job.h"

namespace trainplan {

/// Megatron-LM --rampup-batch-size START INCREMENT SAMPLES: the batch grows from START by INCREMENT
/// over SAMPLES samples in equal sample slices (megatron/core/num_microbatches_calculator.py). All 0: none.
struct rampup_spec {
  std::int64_t start = 0;
  std::int64_t increment = 0;
  std::int64_t samples = 0;
  bool enabled() const { return start > 0; }
};

/// One step of Megatron-LM's --step-batch-size-schedule "THRESHOLD:BATCH …": from this many consumed
/// tokens (K, M, B, T suffixes; Megatron converts them to samples as tokens // seq_length), the global
/// batch is this (megatron/core/num_microbatches_calculator.py, StepBatchsizeNumMicroBatchesCalculator).
struct batch_step {
  std::int64_t from_tokens = 0;
  std::int64_t global_batch_size = 0;
};

/// What the campaign is planned from. Either a job (its iteration time comes from the time model, per
/// ramp-up batch) or given speed figures (iteration_s, or tflops_per_gpu with model_params).
struct plan_inputs {
  // Work.
  double train_tokens = 0;             ///< token budget; or
  std::int64_t train_samples = 0;      ///< samples; or
  std::int64_t train_iters = 0;        ///< iterations at the full batch (Megatron --train-iters)
  std::int64_t start_iteration = 0;    ///< iterations already done (a resumed run's log line)
  rampup_spec rampup;
  std::vector<batch_step> batch_schedule;  ///< empty: none; else the batch by consumed tokens
  // Shape of the job.
  std::int64_t global_batch_size = 0;  ///< samples per iteration at the full batch
  std::int64_t seq_length = 0;
  std::int64_t num_gpus = 0;
  double model_params = 0;             ///< parameter count (checkpoint size, FLOPs-based time)
  // Speed: one of these.
  double iteration_s = 0;              ///< at the full batch; ramp-up phases scale with the batch
  double tflops_per_gpu = 0;           ///< achieved, as Megatron reports it (with recomputation)
  double flops_per_param_token = 8;    ///< 2 forward + 4 backward + 2 recomputed (seeds/000's "8")
  /// Iteration time at a given global batch (the time model, for a job); empty: derived from the above.
  std::function<double(std::int64_t batch)> iteration_s_at_batch;
  /// From a job: whether its layout fits, and its peak against the usable memory (a plan for a layout
  /// that cannot run is printed with a warning).
  bool layout_fits = true;
  double peak_reserved_bytes = 0;
  double capacity_bytes = 0;
  // Resources and reliability.
  double allocation_gpu_hours = 0;     ///< 0: no allocation check
  double checkpoint_bytes_per_param = 14;  ///< bf16 weights + fp32 master + two fp32 Adam moments
  double checkpoint_write_bytes_per_s = 62e9;  ///< file system: seeds/004, 2.3 TiB in 40 s
  double gpu_mtbf_hours = 384.0 * 168.0;   ///< per GPU: seeds/004, ~1 failure a week on 384 GPUs
  double restart_s = 0;                ///< lost to each restart besides the work since the checkpoint
  std::int64_t eval_interval_iters = 0;  ///< 0: no evaluation
  double eval_cost_iters = 0;          ///< one evaluation's time in iterations (seeds/004: 7 per 1000)
};

/// One ramp-up phase (or the steady phase): a batch size held for a number of iterations.
struct plan_phase {
  std::int64_t global_batch_size = 0;
  std::int64_t iterations = 0;
  std::int64_t samples = 0;
  double iteration_s = 0;
  double time_s = 0;
};

struct plan_report {
  std::vector<plan_phase> phases;
  std::int64_t total_iterations = 0;   ///< remaining, after start_iteration
  double total_samples = 0;
  double total_tokens = 0;
  double train_s = 0;                  ///< compute time, no failures, checkpoints or evaluation
  double train_days = 0;               ///< wall clock with every overhead below
  double gpu_hours = 0;                ///< num_gpus × wall clock
  double compute_gpu_hours = 0;        ///< num_gpus × train_s (seeds/000's "compute hours")
  double allocation_gpu_hours = 0;
  bool allocation_sufficient = true;
  double allocation_margin = 0;        ///< allocation / gpu_hours (×)
  double checkpoint_bytes = 0;
  double checkpoint_save_s = 0;
  double job_mtbf_s = 0;               ///< per-GPU MTBF / GPUs
  double checkpoint_interval_s = 0;    ///< Young/Daly sqrt(2·C·MTBF)
  std::int64_t checkpoint_interval_iters = 0;
  double checkpoint_overhead_s = 0;    ///< saves over the run
  double expected_failures = 0;
  double expected_lost_hours = 0;      ///< (interval/2 + restart) per failure, wall-clock hours
  double eval_s = 0;                   ///< evaluations over the run
  double wall_s = 0;                   ///< train + checkpoints + lost work + evaluation
  double goodput = 0;                  ///< train_s / wall_s
  double tflops_per_gpu = 0;           ///< as given, or from the job
  bool from_job = false;
  bool layout_fits = true;             ///< from the job's memory (always true for a given speed)
  double peak_reserved_bytes = 0;
  double capacity_bytes = 0;
};

/// The campaign (§7.5-§7.8). Throws input_error naming the flag when the inputs cannot make a plan.
plan_report make_plan(const plan_inputs& in);

/// Checkpoint bytes of `params` parameters with mixed-precision Adam (§7.6).
double checkpoint_bytes(double params, double bytes_per_param = 14);

/// Young/Daly optimal checkpoint interval sqrt(2·C·MTBF), seconds (§7.7).
double young_daly_interval_s(double save_s, double mtbf_s);



/// True when `in` carries its own speed (iteration_s or tflops_per_gpu), so no job is needed.
bool plan_has_given_speed(const plan_inputs& in);

/// Fill the job-derived fields of `in` from a finalized job: batch, sequence, GPUs, parameters, and the
/// time model's iteration time at any ramp-up batch (estimate_time with that batch).
void plan_from_job(const job_spec& job, plan_inputs& in);

}  // namespace trainplan
