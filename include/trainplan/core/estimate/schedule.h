// Pipeline schedules: GPipe, 1F1B and interleaved 1F1B, simulated event by event or in closed form
// (docs/formulas.md §5.4).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace trainplan {

enum class schedule_kind { gpipe, one_f_one_b, interleaved };
std::string_view to_string(schedule_kind k);

/// Activations a pipeline rank holds at its peak (§3.5): whole micro-batches, and model chunks ×
/// micro-batches (equal without interleaving).
struct in_flight {
  std::int64_t microbatches = 1;
  std::int64_t chunk_microbatches = 1;
};

/// What a schedule is: one row per schedule_kind (src/core/estimate/schedule.cc), with its operation order, the
/// transfer count of its closed form and its fast path beside it (the event simulation is every
/// schedule's fallback). Memory reads `held` (§3.5), the time model the rest (§5.4).
struct schedule_traits {
  schedule_kind kind;
  std::string_view name;
  bool chunks;  ///< runs v > 1 model chunks per rank
  /// Activations rank `rank` of `p` holds at its peak with `m` micro-batches of `v` chunks, run in
  /// groups of `group` micro-batches per chunk (interleaved; 0 is p, Megatron's default).
  in_flight (*held)(std::int64_t rank, std::int64_t p, std::int64_t m, std::int64_t v, std::int64_t group);
};
const schedule_traits& traits_of(schedule_kind k);
/// Interleaved (§3.5): of a rank's first `held` virtual micro-batches (forwards), those that run model chunk
/// `chunk`, in Megatron's schedule table with micro-batch groups of `group` (0: p).
std::int64_t chunk_microbatches_held(std::int64_t chunk, std::int64_t held, std::int64_t p, std::int64_t m,
                                     std::int64_t v, std::int64_t group);

/// One pipeline rank's work per micro-batch and model chunk. Seconds.
struct stage_times {
  double forward_s = 0;   ///< compute + the TP/CP/EP communication inside the forward
  double backward_s = 0;  ///< the same for the backward, recomputation included
  double grad_reduce_s = 0;  ///< DP gradient reduction of this rank, once per iteration
  double optimizer_s = 0;    ///< optimizer step of this rank
  /// The weight-gradient part of backward_s; backward_s − it is the input gradient the previous rank
  /// waits for. The 1F1B, interleaved and GPipe schedules run the two together; it is here for the
  /// schedules that split them (zero-bubble).
  double backward_weight_s = 0;
  /// Work after the rank's last backward, before its DP reduction, once per iteration: the deferred
  /// output-layer wgrad GEMMs (§5.4).
  double drain_s = 0;
  /// Megatron-Core's DDP (§5.4): the buckets the rank's first model chunk reduces in, its later chunks one
  /// each, every bucket launched when its gradients are done; 0: the reduction flows continuously with the
  /// last backward of each chunk.
  double grad_reduce_buckets = 0;
  /// Waited on the rank once per iteration, after its first forward's input arrived and before that forward's
  /// work (1F1B only): Megatron-Core's parameter all-gather dispatched and waited by the first forward's
  /// pre-hook on a later pipeline rank without --align-param-gather (§5.4). Not busy time: it counts as idle.
  double first_forward_delay_s = 0;
};

struct schedule_input {
  schedule_kind kind = schedule_kind::one_f_one_b;
  std::int64_t num_microbatches = 1;
  std::int64_t num_chunks = 1;       ///< model chunks per rank (interleaved); 1 otherwise
  /// Interleaved: micro-batches run back to back in one chunk before the next (Megatron's
  /// --microbatch-group-size-per-virtual-pipeline-stage, schedules.py get_schedule_table); 0 is the
  /// pipeline size, Megatron's default.
  std::int64_t group_size = 0;
  std::vector<stage_times> stages;   ///< one per pipeline rank
  /// Interleaved only: chunk c of rank r runs forward_s × chunk_forward_scale[c·p + r] (backward_s ×
  /// chunk_backward_scale[…]); a rank's scales sum to num_chunks, so stages[r] stays its mean chunk.
  /// Empty: every chunk its rank's mean (§5.4).
  std::vector<double> chunk_forward_scale;
  std::vector<double> chunk_backward_scale;
  double p2p_s = 0;                  ///< one activation (or gradient) transfer; blocks the sender
  /// Interleaved only: transfers run beside the next chunk's work (Megatron's overlap_p2p_comm, on by
  /// default with interleaving): the sender is free when its work ends, the receiver waits for the
  /// transfer's arrival (§5.4).
  bool overlap_p2p = false;
  /// With overlap_p2p: the warm-up forwards and cool-down backwards overlap their transfers too
  /// (Megatron's --overlap-p2p-communication-warmup-flush); off, they block as Megatron's default runs
  /// them (schedules.py: send_forward_recv_forward and send_backward_recv_backward outside the steady
  /// 1F1B loop; §5.4).
  bool overlap_p2p_warmup_flush = false;
  bool overlap_grad_reduce = false;  ///< the DP reduction runs under the last micro-batch's backward
  /// With overlap_grad_reduce: how much longer the compute runs while the reduction's NCCL kernel holds
  /// its SMs, per second of reduction hidden (C / (SMs − C), C the kernel's SMs; §5.4).
  double overlap_compute_stretch = 0;
  bool record_events = false;        ///< fill schedule_result::events (the simulation then always runs)
};

/// One forward or backward of one micro-batch on one rank, in the timeline.
struct schedule_event {
  std::int64_t stage = 0;
  std::int64_t chunk = 0;
  std::int64_t microbatch = 0;
  bool backward = false;
  double start_s = 0;
  double end_s = 0;  ///< the rank is free again: after the send when sends block, at the work's end when overlapped
};

struct stage_usage {
  double busy_s = 0;        ///< forward and backward work (sends excluded)
  double send_s = 0;        ///< time blocked sending activations/gradients
  double idle_s = 0;        ///< waiting inside the pipeline phase
  double pipeline_end_s = 0;  ///< end of this rank's last backward
  double grad_reduce_exposed_s = 0;
  double grad_reduce_stretch_s = 0;  ///< of grad_reduce_exposed_s: the backward the hidden part stretches (§5.4)
};

struct schedule_result {
  double iteration_s = 0;
  double pipeline_s = 0;          ///< from the first forward to the last backward on any rank
  double bubble_fraction = 0;     ///< the busiest rank's idle + send share of the pipeline phase
  double grad_reduce_exposed_s = 0;  ///< what the DP reduction adds after the pipeline phase
  double drain_exposed_s = 0;     ///< what the ranks' drain work adds after the pipeline phase
  double optimizer_s = 0;
  std::int64_t critical_stage = 0;  ///< rank whose end sets the iteration
  bool closed_form = false;       ///< true when the closed form gave the result
  std::vector<stage_usage> stages;
  std::vector<schedule_event> events;
};

/// The schedule Megatron runs for the layout: interleaved when chunks > 1, else 1F1B (GPipe on request).
/// Throws input_error naming the flags when the layout cannot run it (micro-batches not a multiple of
/// the pipeline size for interleaving, as Megatron requires).
void check_schedule(const schedule_input& in);

/// Event-driven simulation: each rank runs its operation list in Megatron's order (schedules.py); an
/// operation starts when the rank is free and its input has arrived.
schedule_result simulate_schedule(const schedule_input& in);

/// Closed form for uniform stages (§5.4): (m·v + p − 1)·(F + B + sends) for 1F1B and interleaved,
/// GPipe likewise. Precondition: every stage has the same forward and backward times.
schedule_result closed_form_schedule(const schedule_input& in);

/// True when every stage has the same forward and backward time (relative 1e-9).
bool stages_uniform(const schedule_input& in);

/// The simulation's result without events and without its polling (§5.4, "Fast path"): 1F1B and GPipe
/// in one pass over the operations in a fixed dependency order (1F1B: step by step, each rank's forward
/// then its backward; the steady state, once the ranks' end times advance by one common amount per
/// micro-batch, is extrapolated instead of stepped); interleaved by the simulation's rule evaluated in
/// dependency order (a rank that misses an input hands over to the rank that owes it). Buffers are
/// reused per thread: no per-operation allocation. Agrees with simulate_schedule to 1e-9 relative (tests/core/estimate/schedule_test.cc).
/// Ignores record_events.
schedule_result fast_schedule(const schedule_input& in);

/// Closed form when the stages are uniform (and, interleaved, without transfers) and no events are
/// wanted, the simulation when events are wanted, else fast_schedule.
schedule_result run_schedule(const schedule_input& in);

}  // namespace trainplan
