// Iteration time: compute + communication placed in the pipeline schedule (docs/formulas.md §5.4-§5.7).
#include "trainplan/time.h"

#include <algorithm>

#include "trainplan/comm.h"
#include "trainplan/memory.h"
#include "trainplan/model.h"

namespace trainplan {

namespace {

/// Communication of each rank per micro-batch and per iteration (§5.5). Collective times come from the
/// communication model (collective_time_s, placement_of; §4).
void stage_communication(const job_spec& job, const compute_report& cr, const parameter_breakdown& params,
                         const std::vector<stage_layout>& layout, std::vector<stage_comm>& out) {
  const model_spec& m = job.model;
  const parallel_config& p = job.parallel;
  const training_config& tc = job.training;
  const cluster_spec& cl = job.cluster;
  const double eb = bytes_of(tc.precision);
  const double tokens = static_cast<double>(tc.micro_batch_size) * m.seq_length / p.cp;
  const double act_bytes = tokens * m.hidden_size * eb;
  const bool full_recompute = tc.recompute == recompute_granularity::full;

  // TP: two all-reduces per layer per pass (with SP: two all-gathers + two reduce-scatters).
  double tp_layer_fwd = 0;
  double tp_embed = 0;
  if (p.tp > 1) {
    const group_placement tp = placement_of(job, parallel_dim::tp);
    tp_embed = collective_time_s(cl, collective_kind::all_reduce, act_bytes, tp);
    tp_layer_fwd = p.sequence_parallel
                       ? 2 * (collective_time_s(cl, collective_kind::all_gather, act_bytes, tp) +
                              collective_time_s(cl, collective_kind::reduce_scatter, act_bytes, tp))
                       : 2 * tp_embed;
  }
  // CP: K and V gathered around the ring, overlapped with the attention core (§5.5).
  double cp_layer_fwd = 0, cp_layer_bwd = 0;
  if (p.cp > 1) {
    const double kv = 2 * tokens * m.kv_width() / p.tp * eb * p.cp;
    const double t = collective_time_s(cl, collective_kind::all_gather, kv, placement_of(job, parallel_dim::cp));
    cp_layer_fwd = std::max(0.0, t - cr.dense_layer.forward.attention_s);
    cp_layer_bwd = std::max(0.0, 2 * t - cr.dense_layer.backward.attention_s);
  }
  // EP: dispatch and combine all-to-alls per MoE layer and pass.
  double ep_layer_fwd = 0;
  if (m.is_moe() && p.ep > 1) {
    const double bytes = tokens * m.moe.router_topk * m.hidden_size * eb;
    ep_layer_fwd = 2 * collective_time_s(cl, collective_kind::all_to_all, bytes, placement_of(job, parallel_dim::ep));
  }
  // ZeRO-3: each layer's weights gathered before forward and backward (and recompute), gradients
  // reduce-scattered; prefetch hides them under the previous layer's compute.
  const group_placement dp = placement_of(job, parallel_dim::dp);
  double z3_fwd = 0, z3_bwd = 0;
  if (tc.zero_stage == 3 && p.dp > 1) {
    const double w = static_cast<double>(params.dense_layer.total()) / p.tp * eb;
    const double gather = collective_time_s(cl, collective_kind::all_gather, w, dp);
    const double grad_rs = collective_time_s(cl, collective_kind::reduce_scatter, w * (tc.accumulate_allreduce_grads_in_fp32 ? 2 : 1), dp);
    z3_fwd = std::max(0.0, gather - cr.dense_layer.forward.total_s());
    z3_bwd = std::max(0.0, gather * (full_recompute ? 2 : 1) + grad_rs - cr.dense_layer.backward.total_s());
  }

  const double grad_bytes_per_param = tc.accumulate_allreduce_grads_in_fp32 ? 4.0 : eb;
  out.assign(layout.size(), stage_comm{});
  // The embedding group's all-reduce (tied embeddings, PP > 1): the same on the first and last rank.
  double tied_embedding_s = 0;
  if (m.tie_embeddings && p.pp > 1) {
    const double emb = static_cast<double>(params.word_embeddings) / p.tp * grad_bytes_per_param;
    tied_embedding_s = collective_time_s(cl, collective_kind::all_reduce, emb, placement_of(job, parallel_dim::embedding));
  }
  const double vpp = static_cast<double>(p.vpp);
  for (std::size_t i = 0; i < layout.size(); ++i) {
    const stage_layout& sl = layout[i];
    stage_comm& c = out[i];
    const double layers = static_cast<double>(sl.num_layers);
    const double moe = static_cast<double>(sl.num_moe_layers);
    const double per_layer_fwd = tp_layer_fwd + cp_layer_fwd + z3_fwd;
    double fwd = layers * per_layer_fwd + moe * ep_layer_fwd;
    double bwd = layers * (tp_layer_fwd + cp_layer_bwd + z3_bwd) + moe * ep_layer_fwd;
    if (full_recompute) bwd += layers * (tp_layer_fwd + cp_layer_fwd) + moe * ep_layer_fwd;
    if (sl.has_embedding) fwd += tp_embed;   // vocab-parallel embedding: all-reduce of its output
    if (sl.has_output) bwd += tp_embed;      // output layer: all-reduce of the input gradient
    c.forward_s = fwd / vpp;
    c.backward_s = bwd / vpp;
    // DP: gradients of this rank's parameters (§5.5).
    if (p.dp > 1 && tc.zero_stage < 3) {
      double rank_params = (layers - moe) * static_cast<double>(params.dense_layer.total()) / p.tp +
                           moe * static_cast<double>(params.moe_layer.total()) / p.tp;
      if (sl.has_embedding) rank_params += static_cast<double>(params.embedding()) / p.tp;
      if (sl.has_output) rank_params += static_cast<double>(params.output_layer + params.final_norm) / p.tp;
      const double grads = rank_params * grad_bytes_per_param;
      if (tc.zero_stage == 0) {
        c.grad_reduce_s = collective_time_s(cl, collective_kind::all_reduce, grads, dp);
      } else {
        c.grad_reduce_s = collective_time_s(cl, collective_kind::reduce_scatter, grads, dp);
        c.param_gather_s = collective_time_s(cl, collective_kind::all_gather, rank_params * eb, dp);
      }
    }
    // Tied embeddings with PP > 1: the first and last ranks all-reduce the embedding gradient.
    if (m.tie_embeddings && p.pp > 1 && (sl.has_embedding || sl.has_output)) c.grad_reduce_s += tied_embedding_s;
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
  estimate_compute(job, params, layout, r.compute);
  // §5.9: a rank whose reserved memory nears capacity runs its micro-batches slower (allocator retries).
  for (std::size_t i = 0; i < r.compute.stages.size() && i < mem.stages.size(); ++i) {
    stage_compute& sc = r.compute.stages[i];
    const double f = allocator_slowdown(mem.stages[i].reserved_bytes / mem.capacity_bytes);
    sc.allocator_slowdown = f;
    sc.forward_s *= f;
    sc.backward_s *= f;
    sc.recompute_s *= f;
  }
  stage_communication(job, r.compute, params, layout, r.comm);
  const parallel_config& p = job.parallel;
  const training_config& tc = job.training;
  const model_spec& m = job.model;

  // Point-to-point transfer of one micro-batch's activations between neighbouring ranks.
  r.p2p_s = 0;
  if (p.pp > 1) {
    const double bytes = static_cast<double>(tc.micro_batch_size) * m.seq_length / p.cp * m.hidden_size *
                         bytes_of(tc.precision);
    r.p2p_s = collective_time_s(job.cluster, collective_kind::send_recv, bytes, placement_of(job, parallel_dim::pp));
  }

  thread_local schedule_input in;
  in.kind = kind;
  in.num_microbatches = job.num_microbatches();
  in.num_chunks = kind == schedule_kind::interleaved ? p.vpp : 1;
  in.p2p_s = r.p2p_s;
  in.overlap_grad_reduce = tc.overlap_grad_reduce;
  in.record_events = record_events;
  in.stages.resize(r.compute.stages.size());
  for (std::size_t i = 0; i < in.stages.size(); ++i) {
    const stage_compute& sc = r.compute.stages[i];
    const stage_comm& c = r.comm[i];
    const double chunks = static_cast<double>(p.vpp) / static_cast<double>(in.num_chunks);
    in.stages[i] = stage_times{(sc.forward_s + c.forward_s) * chunks, (sc.backward_s + c.backward_s) * chunks,
                               c.grad_reduce_s, sc.optimizer_s + c.param_gather_s};
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
  b.compute_s = work * (sc.forward_s + sc.backward_s);
  b.tp_comm_s = work * (c.forward_s + c.backward_s);
  b.pipeline_s = r.pipeline.pipeline_s - b.compute_s - b.tp_comm_s;
  b.dp_comm_s = r.pipeline.grad_reduce_exposed_s;
  b.optimizer_s = r.pipeline.optimizer_s;
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
