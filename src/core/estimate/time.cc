// Iteration time: compute + communication placed in the pipeline schedule (docs/formulas.md §5.4-§5.7).
#include "trainplan/core/estimate/time.h"

#include <algorithm>
#include <array>
#include <tuple>

#include "trainplan/core/estimate/comm.h"
#include "trainplan/core/estimate/memory.h"
#include "trainplan/core/model/model.h"

namespace trainplan {

namespace {

/// SMs a data-parallel collective's NCCL kernel holds while it runs: one thread block per channel
/// (src/enqueue.cc, grid = nChannels). Across nodes every ring leaves the node through a NIC: the search
/// finds one ring per NIC (src/graph/search.cc), ncclTopoDupChannels doubles them and ncclTopoPostset
/// (src/graph/connect.cc) doubles them again, 4 channels per NIC up to the ring graph's cap of 32
/// (src/init.cc ringGraph->maxChannels = MAXCHANNELS / 2): 32 on DGX A100/H100 nodes (8 NICs), 16 with 4
/// NICs, 4 with one. Within one NVSwitch node the search reaches the cap (docs/formulas.md §5.4).
double collective_sms(const job_spec& job) {
  constexpr double kRingCap = 32;
  const cluster_spec& c = job.cluster;
  if (c.num_nodes <= 1) return kRingCap;  // the nodes the job occupies (finalize_job)
  return std::min(kRingCap, 4.0 * static_cast<double>(c.nics_per_node));
}

/// The compute beside an overlapped DP collective takes SMs / (SMs − C) as long (the GEMM's waves over
/// the SMs left, as §5.5.1 prices TE's userbuffers): extra seconds per second of collective hidden.
double overlap_compute_stretch(const job_spec& job) {
  const double sms = static_cast<double>(job.cluster.gpu.sm_count), held = collective_sms(job);
  return sms > 2 * held ? held / (sms - held) : 0.0;
}

/// The communication account (summarize_comm's per-stage seconds by slot and overlap) placed on each
/// rank (§5.5): rows inside the passes per micro-batch and chunk, CP's exchange less the attention it
/// runs under, ZeRO-3/FSDP's per-layer traffic less the compute it is prefetched under; the gradient
/// reduction, parameter gather and the step's collectives once per iteration. PP transfers are the
/// schedule's (p2p_s).
void place_communication(const job_spec& job, const compute_report& cr, const std::vector<stage_comm_account>& account,
                         std::vector<stage_comm>& out) {
  const double m = static_cast<double>(job.num_microbatches());
  const double v = static_cast<double>(job.parallel.vpp);
  const double per_pass = 1.0 / (m * v);
  const double stretch = overlap_compute_stretch(job);
  const double cp = static_cast<double>(job.parallel.cp);
  const pass_time& att_fwd = cr.of(layer_kind::dense).forward;
  const pass_time& att_bwd = cr.of(layer_kind::dense).backward;
  out.assign(cr.stages.size(), stage_comm{});
  std::size_t k = 0;
  for (std::size_t i = 0; i < cr.stages.size(); ++i) {
    while (k + 1 < account.size() && static_cast<std::int64_t>(i) >= account[k].first_stage + account[k].num_stages) ++k;
    const stage_comm_account& a = account[k];
    const stage_compute& sc = cr.stages[i];
    const double layers = static_cast<double>(sc.num_layers);  // per chunk
    // What each overlap can hide under, per micro-batch and chunk (§5.5).
    const double attention_fwd = layers * att_fwd.attention_s;
    const double attention_bwd = layers * att_bwd.attention_s + sc.recomputed_layers * att_fwd.attention_s;
    // Each overlap's rows hide under their part of the pass (§5.5): the attention core, the GEMMs of their
    // side of the TP block (a pipelined collective runs beside the GEMM it is fused with, not beside another
    // block's), the shared experts' GEMMs, the whole pass. The parts are shared: what one stream hides under
    // is not there for another, so the streams are packed into them from the narrowest part out, and no more
    // hides than the pass lasts (a slower GPU never finishes sooner).
    static_assert(kNumCommOverlaps == 7 && static_cast<int>(comm_overlap::attention_first_step) == 6,
                  "the packing below takes every comm_overlap");
    struct pass_parts {
      double attention_s, shared_expert_s, pass_s;
      bool backward;  ///< which of a TP block's sided GEMM seconds its collectives hide under
    };
    // §5.5.1: a side's pipelined collectives, the same on every TP block of the pass (one all-gather and one
    // reduce-scatter per block), each hidden under its own block's GEMMs of that side: Σ_b min(c, cap_b).
    double blocks = 0;
    for (const tp_block_caps& b : sc.tp_blocks) blocks += b.count;
    auto tp_hidden = [&](double side_s, bool backward, bool column) {
      if (side_s <= 0 || blocks <= 0) return 0.0;
      const double per_block = side_s / blocks;
      double hidden = 0;
      for (const tp_block_caps& b : sc.tp_blocks) {
        const double cap = backward ? (column ? b.backward_column_s : b.backward_row_s)
                                    : (column ? b.forward_column_s : b.forward_row_s);
        hidden += b.count * std::min(per_block, cap);
      }
      return hidden;
    };
    // Returns the exposed seconds per pass, the data-parallel dimension's part of them (each overlap's
    // exposed remainder split in proportion to its rows) and the stretch among them.
    auto exposed = [&](comm_slot slot, const pass_parts& part) {
      auto rows = [&](comm_overlap o) { return a.at(slot, o) * per_pass; };
      const double attention = rows(comm_overlap::attention), column = rows(comm_overlap::column_gemm);
      const double row = rows(comm_overlap::row_gemm), first_step = rows(comm_overlap::attention_first_step);
      const double shared = rows(comm_overlap::shared_expert), layer = rows(comm_overlap::layer);
      // A ring's first step is 1/CP of its attention (§4.2.2): what waits for its end hides under that alone.
      const double hid_first_step = std::min(first_step, part.attention_s / cp);
      const double hid_attention = std::min(attention, part.attention_s - hid_first_step);
      const double hid_shared = std::min(shared, part.shared_expert_s);
      const double hid_column = tp_hidden(column, part.backward, true);
      const double hid_row = tp_hidden(row, part.backward, false);
      const double hid_sided = hid_first_step + hid_attention + hid_shared + hid_column + hid_row;
      const double hid_layer = std::min(layer, std::max(0.0, part.pass_s - hid_sided));
      auto dp_part = [&](comm_overlap o, double all, double hidden) {
        return all > 0 ? (all - hidden) * a.dp_at(slot, o) * per_pass / all : 0.0;
      };
      // ZeRO-2/3 and FSDP's hidden per-layer collectives hold their kernel's SMs too (§5.4): the pass they
      // hide under runs longer by the stretch of their share of the hidden seconds, booked as DP traffic.
      const double dp_hidden = layer > 0 ? hid_layer * a.dp_at(slot, comm_overlap::layer) * per_pass / layer : 0.0;
      const double stretched = dp_hidden * stretch;
      const double dp = stretched + a.dp_at(slot) * per_pass +
                        dp_part(comm_overlap::attention, attention, hid_attention) +
                        dp_part(comm_overlap::attention_first_step, first_step, hid_first_step) +
                        dp_part(comm_overlap::column_gemm, column, hid_column) +
                        dp_part(comm_overlap::row_gemm, row, hid_row) +
                        dp_part(comm_overlap::shared_expert, shared, hid_shared) +
                        dp_part(comm_overlap::layer, layer, hid_layer);
      return std::tuple{stretched + a.at(slot) * per_pass + attention + first_step + column + row + shared + layer -
                            (hid_sided + hid_layer),
                        dp, stretched};
    };
    stage_comm& c = out[i];
    double stretch_fwd = 0, stretch_bwd = 0;
    std::tie(c.forward_s, c.forward_dp_s, stretch_fwd) =
        exposed(comm_slot::forward, {attention_fwd, sc.forward_shared_expert_s, sc.forward_s, false});
    std::tie(c.backward_s, c.backward_dp_s, stretch_bwd) =
        exposed(comm_slot::backward, {attention_bwd, sc.backward_shared_expert_s, sc.backward_s, true});
    c.stretch_s = stretch_fwd + stretch_bwd;
    c.grad_reduce_s = a.slot_s(comm_slot::grad_reduce);
    c.grad_reduce_buckets = a.grad_reduce_buckets;
    c.param_gather_s = a.slot_s(comm_slot::param_gather);
    c.optimizer_s = a.slot_s(comm_slot::optimizer);
    c.hidden_s = a.slot_s(comm_slot::forward) + a.slot_s(comm_slot::backward) -
                 (c.forward_s + c.backward_s - c.stretch_s) / per_pass;
  }
}

/// Shared pieces of one layout's evaluation, computed once: the parameter count at the job's TP and
/// the pipeline layout (buffers reused per thread).
struct shared_pieces {
  parameter_breakdown params;
  std::vector<stage_layout> layout;
};

shared_pieces& pieces_of(const job_spec& job) {
  thread_local shared_pieces s;
  s.params = count_parameters(job.model, job.parallel.tp);
  pipeline_layout(job, s.layout);
  return s;
}

/// The time model (§5.4-§5.7) from the shared pieces and the layout's memory (for the allocator
/// slowdown, §5.9). Fills `r`, reusing its vectors.
void time_from(const job_spec& job, const parameter_breakdown& params, const std::vector<stage_layout>& layout,
               const memory_report& mem, schedule_kind kind, bool record_events, time_report& r) {
  r.schedule = kind;
  r.fits = mem.fits;
  r.peak_reserved_bytes = mem.peak_reserved_bytes;
  r.capacity_bytes = mem.capacity_bytes;
  r.peak_stage = mem.peak_stage;
  estimate_compute(job, params, layout, r.compute);
  // §5.9: a rank whose reserved memory nears capacity runs its micro-batches slower (allocator retries),
  // where that was measured (the framework table's allocator_pressure).
  const bool pressure = traits_of(job.training.framework).allocator_pressure;
  for (std::size_t i = 0; pressure && i < r.compute.stages.size() && i < mem.stages.size(); ++i) {
    stage_compute& sc = r.compute.stages[i];
    const double f = allocator_slowdown(mem.stages[i].reserved_bytes / mem.capacity_bytes);
    sc.allocator_slowdown = f;
    sc.forward_s *= f;
    sc.backward_s *= f;
    sc.recompute_s *= f;
    sc.backward_weight_s *= f;
  }
  // One account of the traffic (§4.2), placed by slot (§5.5); the transfer between pipeline ranks is
  // the schedule's.
  thread_local std::vector<stage_comm_account> account;
  r.p2p_s = summarize_comm(job, account).pp_transfer_s;
  place_communication(job, r.compute, account, r.comm);
  const parallel_config& p = job.parallel;
  const training_config& tc = job.training;
  const model_spec& m = job.model;

  thread_local schedule_input in;
  in.kind = kind;
  in.num_microbatches = job.num_microbatches();
  in.num_chunks = kind == schedule_kind::interleaved ? p.vpp : 1;
  in.group_size = kind == schedule_kind::interleaved ? p.microbatch_group_size : 0;
  in.p2p_s = r.p2p_s;
  // Megatron overlaps the interleaved schedule's transfers with the next chunk (overlap_p2p_comm);
  // arguments.py turns it off without interleaving, and DeepSpeed does not interleave (§5.4).
  in.overlap_p2p = kind == schedule_kind::interleaved && tc.framework == framework_kind::megatron && tc.overlap_p2p_comm;
  in.overlap_p2p_warmup_flush = tc.overlap_p2p_warmup_flush;
  // DeepSpeed's overlap_comm at stage 0/1 reduces the buckets under the last backward as Megatron's
  // --overlap-grad-reduce does (§5.5.2).
  in.overlap_grad_reduce = tc.overlap_grad_reduce || (overlap_comm_on(tc) && tc.zero_stage <= 1);
  // §5.4: an overlapped DP collective's kernel holds SMs the compute under it would use.
  const double stretch = overlap_compute_stretch(job);
  in.overlap_compute_stretch = stretch;
  in.record_events = record_events;
  // Each rank's passes (compute + exposed communication, per micro-batch and chunk), then as the
  // schedule runs them: GPipe on a VPP layout runs a rank's chunks as one.
  const double chunks = static_cast<double>(p.vpp) / static_cast<double>(in.num_chunks);
  r.passes.resize(r.compute.stages.size());
  in.stages.resize(r.compute.stages.size());
  // §5.4: with --overlap-param-gather the all-gather of the updated parameters runs bucket by bucket
  // under the next iteration's first forward of this rank (every chunk of it); what does not fit
  // stays exposed. --overlap-param-gather-with-optimizer-step starts it under the rank's optimizer step
  // as well. FSDP2 under a pipeline gathers unit by unit, prefetching the next, under the first forward.
  // Returns the seconds of rank i's gather that hide.
  const bool gather_under_forward = tc.overlap_param_gather || job.resolved.row().pipelined;
  auto hidden_gather_s = [&](std::size_t i) {
    const stage_compute& sc = r.compute.stages[i];
    const stage_comm& c = r.comm[i];
    const double first_forward_s = (sc.forward_s + c.forward_s) * static_cast<double>(p.vpp);
    const double window_s = first_forward_s + (tc.overlap_param_gather_with_step ? sc.optimizer_s + c.optimizer_s : 0.0);
    return gather_under_forward ? std::min(c.param_gather_s, window_s) : 0.0;
  };
  // §5.4: without interleaving Megatron turns align_param_gather off (arguments.py) and buckets only the first
  // pipeline rank (distributed_data_parallel.py: bucket_size None for pp_rank > 0), so a later rank's gather is
  // one bucket that its first forward's pre-hook dispatches and waits for (finish_param_sync), after the input
  // arrived: a delay of that forward, which runs on down the pipeline.
  const bool gather_at_first_forward = kind == schedule_kind::one_f_one_b && tc.framework == framework_kind::megatron &&
                                       tc.overlap_param_gather && p.pp > 1;
  double first_forward_delays_s = 0;
  for (std::size_t i = 0; i < r.passes.size(); ++i) {
    const stage_compute& sc = r.compute.stages[i];
    const stage_comm& c = r.comm[i];
    stage_times& pass = r.passes[i];
    const bool delayed = gather_at_first_forward && i > 0;
    // What hides runs beside the forward, which its kernel's SMs stretch (§5.4).
    const double hidden_s = delayed ? 0.0 : hidden_gather_s(i);
    const double gather_s = delayed ? 0.0 : c.param_gather_s - hidden_s + hidden_s * stretch;
    pass = stage_times{sc.forward_s + c.forward_s, sc.backward_s + c.backward_s, c.grad_reduce_s,
                       sc.optimizer_s + gather_s + c.optimizer_s, sc.backward_weight_s, sc.drain_s,
                       c.grad_reduce_buckets, delayed ? c.param_gather_s : 0.0};
    first_forward_delays_s += pass.first_forward_delay_s;
    // §5.4: CPU offloading copies each of the first N layers' activations to host beside the next layer's
    // forward and back beside the following layer's backward (Transformer Engine's offload handler waits
    // for a copy one layer later); what a copy outlasts of a layer is exposed, per micro-batch.
    if (tc.cpu_offload_layers > 0 && i < mem.stages.size() && i < layout.size()) {
      const double copy_s = mem.stages[i].offloaded_layer_bytes / job.cluster.gpu.host_link_bytes_per_s;
      double layer_fwd = 0, layer_bwd = 0;
      for (std::size_t k = 0; k < kNumLayerKinds; ++k) {
        const double share = static_cast<double>(layout[i].kinds[k]) / static_cast<double>(std::max<std::int64_t>(1, layout[i].num_layers));
        layer_fwd += share * r.compute.layers[k].forward.total_s();
        layer_bwd += share * r.compute.layers[k].backward.total_s();
      }
      const double n = static_cast<double>(tc.cpu_offload_layers);
      pass.forward_s += n * std::max(0.0, copy_s - layer_fwd);
      pass.backward_s += n * std::max(0.0, copy_s - layer_bwd);
    }
    in.stages[i] = stage_times{pass.forward_s * chunks, pass.backward_s * chunks, pass.grad_reduce_s,
                               pass.optimizer_s, pass.backward_weight_s * chunks, pass.drain_s,
                               pass.grad_reduce_buckets, pass.first_forward_delay_s};
  }
  // §5.4: each model chunk its own share of the rank's work where the chunks differ (interleaved only;
  // GPipe runs a rank's chunks as one).
  // A pass is its compute and the communication inside it: the chunk's compute scale applies to the first, its
  // layer share to the rest (per-layer collectives, CPU offloading), so an embedding or a loss in a chunk does
  // not stretch its rank's TP/EP communication.
  if (in.num_chunks > 1 && !r.compute.chunk_forward_scale.empty()) {
    const std::size_t n = r.compute.chunk_forward_scale.size();
    in.chunk_forward_scale.resize(n);
    in.chunk_backward_scale.resize(n);
    const std::size_t ranks = r.passes.size();
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t rank = i % ranks;
      const stage_compute& sc = r.compute.stages[rank];
      const stage_times& pass = r.passes[rank];
      const double share = r.compute.chunk_layer_share[i];
      auto scaled = [share](double scale, double compute_s, double pass_s) {
        return pass_s > 0 ? (scale * compute_s + share * (pass_s - compute_s)) / pass_s : scale;
      };
      in.chunk_forward_scale[i] = scaled(r.compute.chunk_forward_scale[i], sc.forward_s, pass.forward_s);
      in.chunk_backward_scale[i] = scaled(r.compute.chunk_backward_scale[i], sc.backward_s, pass.backward_s);
    }
  } else {
    in.chunk_forward_scale.clear();
    in.chunk_backward_scale.clear();
  }
  r.pipeline = run_schedule(in);

  // Totals (§5.7).
  const double gpus = static_cast<double>(job.num_gpus);
  const double samples = static_cast<double>(tc.global_batch_size);
  r.iteration_s = r.pipeline.iteration_s;
  r.samples_per_s = samples / r.iteration_s;
  r.tokens_per_s = r.samples_per_s * static_cast<double>(m.seq_length);
  r.tflops_per_gpu = r.compute.hardware_flops / (r.iteration_s * gpus * 1e12);
  r.model_tflops_per_gpu = r.compute.model_flops / (r.iteration_s * gpus * 1e12);
  const double peak = job.cluster.gpu.peak_flops(tc.precision) / 1e12;
  r.mfu = r.model_tflops_per_gpu / peak;
  r.hfu = r.tflops_per_gpu / peak;
  r.bubble_fraction = r.pipeline.bubble_fraction;

  // Breakdown (§5.7): the busiest rank's micro-batch work split into compute and communication.
  // The busiest rank: the pipeline phase is its work plus bubble and transfers.
  std::size_t crit = 0;
  for (std::size_t i = 1; i < in.stages.size(); ++i) {
    if (in.stages[i].forward_s + in.stages[i].backward_s >
        in.stages[crit].forward_s + in.stages[crit].backward_s) {
      crit = i;
    }
  }
  const stage_compute& sc = r.compute.stages[crit];
  const stage_comm& c = r.comm[crit];
  const double work = static_cast<double>(in.num_microbatches) * static_cast<double>(p.vpp);
  time_breakdown& b = r.breakdown;
  // The deferred output-layer wgrad that outlasts the pipeline phase is compute too (§5.4).
  b.compute_s = work * (sc.forward_s + sc.backward_s) + r.pipeline.drain_exposed_s;
  // Inside the passes: the data-parallel rows (ZeRO-2/3, FSDP) are DP communication, the rest TP/CP/EP.
  const double in_pass_dp_s = work * (c.forward_dp_s + c.backward_dp_s);
  b.tp_comm_s = std::max(0.0, work * (c.forward_s + c.backward_s) - in_pass_dp_s);
  // What remains of the pipeline phase: bubble and transfers (never below zero: without a pipeline it
  // is only the rounding of the sum).
  b.pipeline_s =
      std::max(0.0, r.pipeline.pipeline_s + r.pipeline.drain_exposed_s - b.compute_s - b.tp_comm_s - in_pass_dp_s);
  b.dp_comm_s = r.pipeline.grad_reduce_exposed_s + in_pass_dp_s;
  b.optimizer_s = r.pipeline.optimizer_s;
  // The later ranks' first-forward gathers lengthen the pipeline phase by their sum where the stages are
  // alike (§5.4): shown with the parameter gather, not as bubble.
  const double delays_s = std::min(first_forward_delays_s, b.pipeline_s);
  b.pipeline_s -= delays_s;
  b.optimizer_s += delays_s;
  // §5.4: the stretch inside those, on the rank the iteration waits for (the busiest one's passes, the
  // critical one's reduction and gather).
  const auto critical = static_cast<std::size_t>(r.pipeline.critical_stage);
  const double reduce_stretch_s =
      critical < r.pipeline.stages.size()
          ? std::min(r.pipeline.grad_reduce_exposed_s, r.pipeline.stages[critical].grad_reduce_stretch_s)
          : 0.0;
  const double step_stretch_s = critical < r.comm.size() ? hidden_gather_s(critical) * stretch : 0.0;
  b.collective_sm_stretch_s = work * c.stretch_s + reduce_stretch_s + std::min(b.optimizer_s, step_stretch_s);
}

}  // namespace

schedule_kind default_schedule(const job_spec& job) {
  return job.parallel.vpp > 1 ? schedule_kind::interleaved : schedule_kind::one_f_one_b;
}

time_report estimate_time(const job_spec& job, bool record_events) {
  return estimate_time(job, default_schedule(job), record_events);
}

time_report estimate_time(const job_spec& job, schedule_kind kind, bool record_events) {
  const shared_pieces& sp = pieces_of(job);
  thread_local memory_report mem;
  estimate_memory(job, sp.params, sp.layout, mem);
  time_report r;
  time_from(job, sp.params, sp.layout, mem, kind, record_events, r);
  return r;
}

time_report estimate_time(const job_spec& job, const memory_report& memory, bool record_events) {
  return estimate_time(job, memory, default_schedule(job), record_events);
}

time_report estimate_time(const job_spec& job, const memory_report& memory, schedule_kind kind, bool record_events) {
  const shared_pieces& sp = pieces_of(job);
  time_report r;
  time_from(job, sp.params, sp.layout, memory, kind, record_events, r);
  return r;
}

void estimate_time(const job_spec& job, const memory_report& memory, time_report& out) {
  const shared_pieces& sp = pieces_of(job);
  time_from(job, sp.params, sp.layout, memory, default_schedule(job), false, out);
}

time_report schedule_timeline(const job_spec& job, schedule_kind kind) {
  const std::int64_t m = job.num_microbatches();
  if (m <= kMaxTimelineMicrobatches) {
    time_report r = estimate_time(job, kind, true);
    r.timeline_microbatches = m;
    r.timeline_s = r.pipeline.pipeline_s;
    return r;
  }
  // The same stages with fewer micro-batches: a multiple of PP keeps interleaving valid (§5.4).
  const std::int64_t pp = job.parallel.pp;
  job_spec shown = job;
  const std::int64_t shown_m = std::max(pp, kMaxTimelineMicrobatches / pp * pp);
  shown.training.global_batch_size = shown_m * job.training.micro_batch_size * job.parallel.dp;
  time_report r = estimate_time(job, kind, false);
  time_report events = estimate_time(shown, kind, true);
  r.pipeline.events = std::move(events.pipeline.events);
  r.timeline_microbatches = shown_m;
  r.timeline_s = events.pipeline.pipeline_s;
  return r;
}

void evaluate_layout(const job_spec& job, layout_evaluation& out) { evaluate_layout(job, default_schedule(job), out); }

void evaluate_layout(const job_spec& job, schedule_kind kind, layout_evaluation& out) {
  const shared_pieces& sp = pieces_of(job);
  estimate_memory(job, sp.params, sp.layout, out.memory);
  time_from(job, sp.params, sp.layout, out.memory, kind, false, out.time);
}

layout_evaluation evaluate_layout(const job_spec& job) {
  layout_evaluation e;
  evaluate_layout(job, e);
  return e;
}

}  // namespace trainplan
