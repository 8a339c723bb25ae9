// Iteration time, throughput, TFLOPs, MFU/HFU and where the time goes (docs/formulas.md §5.5, §5.7).
#pragma once

#include <cstdint>
#include <vector>

#include "trainplan/core/estimate/compute.h"
#include "trainplan/core/base/limits.h"
#include "trainplan/core/estimate/memory.h"
#include "trainplan/core/job/job.h"
#include "trainplan/core/job/layout.h"
#include "trainplan/core/estimate/schedule.h"

namespace trainplan {

/// Where one iteration's time goes, on the rank that sets it. Seconds; they add up to iteration_s.
struct time_breakdown {
  double compute_s = 0;          ///< forward, backward and recomputation kernels
  double tp_comm_s = 0;          ///< exposed TP/CP/EP communication inside micro-batches
  double pipeline_s = 0;         ///< pipeline bubble and point-to-point transfers
  /// exposed data-parallel communication: the gradient reduction (and embedding-group all-reduce) and
  /// ZeRO-2/3 and FSDP gathers and reduce-scatters inside micro-batches
  double dp_comm_s = 0;
  double optimizer_s = 0;        ///< optimizer step and the ZeRO parameter all-gather after it
  /// Of dp_comm_s and optimizer_s: the compute that DP collectives hidden under it stretch by the SMs
  /// their NCCL kernels hold (docs/formulas.md §5.4); the rest of those two is communication exposed.
  double collective_sm_stretch_s = 0;
};

/// Exposed communication of one rank, placed from comm's account (stage_comm_account, §5.5): per
/// micro-batch and chunk inside the passes, per iteration outside them. Seconds.
struct stage_comm {
  double forward_s = 0;
  double backward_s = 0;         ///< recomputation's collectives included
  double forward_dp_s = 0;       ///< the data-parallel part of forward_s (ZeRO-3/FSDP gathers)
  double backward_dp_s = 0;      ///< the data-parallel part of backward_s (ZeRO-2/3/FSDP gathers, reduce-scatters)
  double grad_reduce_s = 0;      ///< once per iteration, can overlap the last backward
  double grad_reduce_buckets = 0;  ///< stage_comm_account::grad_reduce_buckets (§5.4)
  double param_gather_s = 0;     ///< ZeRO-1/2 all-gather of updated weights after the step
  double optimizer_s = 0;        ///< the step's collectives (gradient norm, found-inf)
  double hidden_s = 0;           ///< per iteration: CP exchange and ZeRO-3/FSDP prefetch hidden under compute
  /// Per micro-batch and chunk, inside forward_s + backward_s and their _dp_s parts: how much longer the
  /// passes run while hidden DP collectives hold their kernels' SMs (docs/formulas.md §5.4).
  double stretch_s = 0;
};

struct time_report {
  double iteration_s = 0;
  double samples_per_s = 0;
  double tokens_per_s = 0;
  double tflops_per_gpu = 0;        ///< Megatron's report: with recomputation (Narayanan et al. eq. 3)
  double model_tflops_per_gpu = 0;  ///< no recomputation
  double mfu = 0;                   ///< model FLOPs / (time · GPUs · dense peak)
  double hfu = 0;                   ///< hardware FLOPs (with recomputation) likewise
  double bubble_fraction = 0;
  double p2p_s = 0;                 ///< one activation transfer between pipeline ranks
  schedule_kind schedule = schedule_kind::one_f_one_b;
  /// Whether the layout fits, from the memory report the time model used (§3.8): a time for a layout
  /// that cannot run is printed with a warning, never silently.
  bool fits = true;
  double peak_reserved_bytes = 0;   ///< the busiest rank's reserved memory
  double capacity_bytes = 0;        ///< usable per GPU
  std::int64_t peak_stage = 0;
  time_breakdown breakdown;
  compute_report compute;
  std::vector<stage_comm> comm;     ///< per pipeline rank
  /// Per pipeline rank, one micro-batch of one chunk: compute plus exposed communication, as the
  /// schedule runs it (what `time` prints per rank).
  std::vector<stage_times> passes;
  schedule_result pipeline;
  /// With events (schedule_timeline): the micro-batches per pipeline they cover and the span they
  /// take. Fewer than the job's when its schedule is too long to list: then the events are those of the
  /// same stages with kMaxTimelineMicrobatches micro-batches, and every total above is the full job's.
  std::int64_t timeline_microbatches = 0;
  double timeline_s = 0;
};

/// The most micro-batches per pipeline whose events `trainplan schedule` lists (bounded memory and time
/// whatever the batch: 2^31 micro-batches took 7.5 GB before this bound).
inline constexpr std::int64_t kMaxTimelineMicrobatches = limits::kMaxTimelineMicrobatches;

/// Full evaluation of `job` (finalized): compute, communication, schedule, totals. With
/// `record_events` the schedule is simulated and its events kept (trainplan schedule).
/// `kind` overrides Megatron's choice (interleaved when VPP > 1, else 1F1B), e.g. for GPipe.
time_report estimate_time(const job_spec& job, bool record_events = false);
time_report estimate_time(const job_spec& job, schedule_kind kind, bool record_events);
/// The same with the layout's memory already estimated (estimate_memory(job)); the time model uses it
/// for the allocator slowdown (§5.9) instead of estimating it again. Identical results.
time_report estimate_time(const job_spec& job, const memory_report& memory, bool record_events = false);
time_report estimate_time(const job_spec& job, const memory_report& memory, schedule_kind kind, bool record_events);
/// The same (Megatron's schedule, no events) into `out`, reusing its vectors.
void estimate_time(const job_spec& job, const memory_report& memory, time_report& out);

/// One layout's full evaluation: its memory (§3) and its time (§5), identical to estimate_memory(job)
/// and estimate_time(job), with what they share (parameter count, pipeline layout, memory) computed
/// once (§7.3).
struct layout_evaluation {
  memory_report memory;
  time_report time;
};
layout_evaluation evaluate_layout(const job_spec& job);
/// The same into `out`, reusing its vectors: no allocation but the schedule's stage vector once the
/// buffers have grown (the search keeps one per worker).
void evaluate_layout(const job_spec& job, layout_evaluation& out);
void evaluate_layout(const job_spec& job, schedule_kind kind, layout_evaluation& out);

/// The pipeline timeline of `job` under `kind`: the totals of estimate_time(job, kind) with the events
/// of at most kMaxTimelineMicrobatches micro-batches (a multiple of PP, for interleaving).
time_report schedule_timeline(const job_spec& job, schedule_kind kind);

/// The schedule Megatron runs for the layout.
schedule_kind default_schedule(const job_spec& job);

}  // namespace trainplan
