// Communication traffic per parallel dimension and the per-dimension summary (docs/formulas.md §4.2,
// §4.4). Placement lives in comm_groups.cc, the stage classes in comm_stages.cc, collective pricing in
// comm_time.cc.
#include "trainplan/core/estimate/comm.h"

#include <algorithm>
#include <new>
#include <string>

#include "trainplan/core/base/checked.h"
#include "estimate/comm_detail.h"
#include "estimate/comm_rows.h"
#include "trainplan/core/base/error.h"

namespace trainplan {

namespace {

using namespace detail;  // NOLINT(google-build-using-namespace): this module's internals

constexpr std::array<std::string_view, 3> kPhaseNames = {"forward", "backward", "optimizer"};
constexpr std::array<std::string_view, kNumCommSlots> kSlotNames = {"forward",      "backward",  "grad_reduce",
                                                                    "param_gather", "optimizer", "pipeline"};
constexpr std::array<std::string_view, kNumCommOverlaps> kOverlapNames = {"none",        "attention",     "layer",
                                                                           "column_gemm", "shared_expert", "row_gemm",
                                                                           "attention_first_step"};

}  // namespace

std::string_view to_string(comm_phase p) { return kPhaseNames[static_cast<std::size_t>(p)]; }
std::string_view to_string(comm_slot s) { return kSlotNames[static_cast<std::size_t>(s)]; }
std::string_view to_string(comm_overlap o) { return kOverlapNames[static_cast<std::size_t>(o)]; }
std::string_view to_string(cp_comm_kind k) {
  switch (k) {
    case cp_comm_kind::framework_default: return "framework_default";
    case cp_comm_kind::p2p: return "p2p";
    case cp_comm_kind::all_gather: return "all_gather";
    case cp_comm_kind::a2a: return "a2a";
  }
  return "?";
}

namespace {

using namespace comm_rows;  // NOLINT(google-build-using-namespace): the table machinery

using ck = collective_kind;
using cph = comm_phase;

// -- TP with --tp-comm-overlap (§4.2.1, §5.5.1) --
/// Transformer Engine's userbuffers (transformer_engine/pytorch/module/base.py initialize_ub, default
/// methods): the all-gathers before QKV and fc1 and of the output gradients run as a ring exchange under
/// their GEMM (copy engines, 1 SM); the reduce-scatters after the projection and fc2 are pipelined with
/// their GEMM in 4 splits, the last split's exposed; the backward's input re-gather and input-gradient
/// reduce-scatter run in bulk beside the QKV and fc1 data- and weight-gradient GEMMs (16 SMs). `ag` is an
/// all-gathered tensor's bytes: under FP8 the all-gather buffers hold FP8 (`layers_all_gather_overlap`,
/// `fp8_buf`), 1 byte per element; the reduce-scatters stay in the activations' dtype (`a`).
void tp_overlap_rows(double a, double ag, row_sink& out) {
  constexpr double kSplits = 4;  // get_default_config: num_splits 4 for "pipeline"
  constexpr comm_overlap column = comm_overlap::column_gemm, row = comm_overlap::row_gemm;
  const double split = a / kSplits;
  out.row(ck::all_gather, cph::forward, "sequence all-gather before QKV and fc1, ring exchange under the GEMM", g_tp, ag, 1,
          per::block, column);
  out.row(ck::reduce_scatter, cph::forward, "reduce-scatter after projection and fc2, 3 of 4 splits under the GEMM",
          g_tp, split, kSplits - 1, per::block, row);
  out.row(ck::reduce_scatter, cph::forward, "reduce-scatter of the last GEMM split (exposed)", g_tp, split, 1,
          per::block);
  out.row(ck::all_gather, cph::backward,
          "output-gradient all-gather, ring exchange under the projection's and fc2's data gradient", g_tp, ag, 1,
          per::block, row);
  out.row(ck::all_gather, cph::backward, "input re-gather, bulk beside QKV's and fc1's data gradient", g_tp, ag, 1,
          per::block, column);
  out.row(ck::reduce_scatter, cph::backward, "input-gradient reduce-scatter, bulk under the weight-gradient GEMM",
          g_tp, a, 1, per::block, column);
  out.row(ck::all_gather, cph::backward, "recomputed forward all-gather under the GEMM", g_tp, ag, 1,
          per::recomputed_block, column);
  out.row(ck::reduce_scatter, cph::backward, "recomputed forward reduce-scatter, 3 of 4 splits under the GEMM", g_tp,
          split, kSplits - 1, per::recomputed_block, row);
  out.row(ck::reduce_scatter, cph::backward, "recomputed forward reduce-scatter of the last split", g_tp, split, 1,
          per::recomputed_block);
}

// -- TP (§4.2.1) --
/// One row of the per-block TP collectives, named for a transformer layer and for a hybrid's blocks.
struct tp_block_row {
  collective_kind kind;
  comm_phase phase;
  std::string_view transformer;
  std::string_view hybrid;
  double times;  ///< per block
  per per_;
  comm_overlap under = comm_overlap::none;  ///< what hides it (§5.5.1: the GEMMs it is pipelined with)
};
/// Without sequence parallelism: an all-reduce after each block's row-parallel output, and of the input
/// gradient of its column-parallel input (Megatron's mappings.py).
constexpr std::array<tp_block_row, 3> kTpBlockRows{{
    {ck::all_reduce, cph::forward, "attention and MLP output all-reduce (2 per layer)",
     "block output all-reduce (1 per block)", 1, per::block},
    {ck::all_reduce, cph::backward, "QKV and fc1 input-gradient all-reduce (2 per layer)",
     "block input-gradient all-reduce (1 per block)", 1, per::block},
    {ck::all_reduce, cph::backward, "recomputed forward all-reduce (2 per recomputed layer)",
     "recomputed forward all-reduce (1 per recomputed block)", 1, per::recomputed_block},
}};
/// With sequence parallelism: each all-reduce becomes an all-gather and a reduce-scatter, and the
/// backward re-gathers the input for the weight gradient.
constexpr std::array<tp_block_row, 6> kTpSpBlockRows{{
    {ck::all_gather, cph::forward, "sequence all-gather before QKV and fc1 (2 per layer)",
     "sequence all-gather at each block's input", 1, per::block},
    {ck::reduce_scatter, cph::forward, "reduce-scatter after projection and fc2 (2 per layer)",
     "reduce-scatter at each block's output", 1, per::block},
    {ck::all_gather, cph::backward, "output-gradient all-gather (2) and input re-gather for weight gradients (2) per layer",
     "output-gradient all-gather and input re-gather for weight gradients, per block", 2, per::block},
    {ck::reduce_scatter, cph::backward, "QKV and fc1 input-gradient reduce-scatter (2 per layer)",
     "input-gradient reduce-scatter per block", 1, per::block},
    {ck::all_gather, cph::backward, "recomputed forward all-gather (2 per recomputed layer)",
     "recomputed forward all-gather (1 per recomputed block)", 1, per::recomputed_block},
    {ck::reduce_scatter, cph::backward, "recomputed forward reduce-scatter (2 per recomputed layer)",
     "recomputed forward reduce-scatter (1 per recomputed block)", 1, per::recomputed_block},
}};

/// torchtitan's SP blocks as DTensor runs them (parallelize.py apply_tp: PrepareModuleInput gathers each
/// block's input, RowwiseParallel reduce-scatters its output): autograd saves the gathered input for the
/// weight gradients, so the backward gathers only the output gradient (Megatron re-gathers the input too).
/// With float8 linears (torchao float8_tensor_parallel: PrepareFloat8ModuleInput and Float8ColwiseParallel
/// cast the block's input to e4m3 before the all-gather, Float8RowwiseParallel the output gradient to e5m2
/// before its all-gather) every all-gather moves 1 byte per element; the reduce-scatters move the GEMMs'
/// 16-bit outputs.
constexpr std::array<tp_block_row, 6> kTorchtitanTpRows{{
    {ck::all_gather, cph::forward, "block input all-gather before QKV and w1/w3 (2 per layer)",
     "block input all-gather", 1, per::block},
    {ck::reduce_scatter, cph::forward, "reduce-scatter after wo and w2 (2 per layer)",
     "reduce-scatter at each block's output", 1, per::block},
    {ck::all_gather, cph::backward, "output-gradient all-gather before wo's and w2's data gradient (2 per layer)",
     "output-gradient all-gather per block", 1, per::block},
    {ck::reduce_scatter, cph::backward, "QKV and w1/w3 input-gradient reduce-scatter (2 per layer)",
     "input-gradient reduce-scatter per block", 1, per::block},
    {ck::all_gather, cph::backward, "recomputed forward all-gather (2 per recomputed layer)",
     "recomputed forward all-gather (1 per recomputed block)", 1, per::recomputed_block},
    {ck::reduce_scatter, cph::backward, "recomputed forward reduce-scatter (2 per recomputed layer)",
     "recomputed forward reduce-scatter (1 per recomputed block)", 1, per::recomputed_block},
}};

/// torchtitan's async TP (§5.5.1; torch/_inductor/fx_passes/micro_pipeline_tp.py over
/// torch/distributed/_symmetric_memory): an all-gather whose output feeds matmuls becomes
/// fused_all_gather_matmul (each peer's shard copied by the copy engine while the matmul of the shards
/// already here runs), a matmul whose output is reduce-scattered fused_matmul_reduce_scatter (each
/// destination's rows computed and written to it while the next are computed). The block input's gather
/// (before QKV, w1/w3), the output reduce-scatters (wo, w2) and the output gradient's gather (before wo's
/// and w2's data gradient), forward and recomputed, so overlap. The input gradient's reduce-scatter does
/// not: its input is the sum of the three (QKV) or two (w1, w3) data-gradient matmuls, not one matmul's
/// output, which the pass's pattern needs (_find_producer_matmul).
constexpr std::array<tp_block_row, 6> kTorchtitanAsyncTpRows{{
    {ck::all_gather, cph::forward, "block input all-gather, pipelined with QKV's and w1/w3's matmuls",
     "block input all-gather, pipelined with QKV's and w1/w3's matmuls", 1, per::block, comm_overlap::column_gemm},
    {ck::reduce_scatter, cph::forward, "reduce-scatter pipelined with wo's and w2's matmuls",
     "reduce-scatter pipelined with wo's and w2's matmuls", 1, per::block, comm_overlap::row_gemm},
    {ck::all_gather, cph::backward, "output-gradient all-gather, pipelined with wo's and w2's data gradient",
     "output-gradient all-gather, pipelined with wo's and w2's data gradient", 1, per::block, comm_overlap::row_gemm},
    {ck::reduce_scatter, cph::backward, "QKV and w1/w3 input-gradient reduce-scatter (a sum of matmuls: not pipelined)",
     "QKV and w1/w3 input-gradient reduce-scatter (a sum of matmuls: not pipelined)", 1, per::block},
    {ck::all_gather, cph::backward, "recomputed forward all-gather, pipelined",
     "recomputed forward all-gather, pipelined", 1, per::recomputed_block, comm_overlap::column_gemm},
    {ck::reduce_scatter, cph::backward, "recomputed forward reduce-scatter, pipelined",
     "recomputed forward reduce-scatter, pipelined", 1, per::recomputed_block, comm_overlap::row_gemm},
}};

void tp_table(const comm_context& x, row_sink& out) {
  const auto& p = x.job.parallel;
  if (p.tp == 1) return;
  const double a = x.tokens * static_cast<double>(x.job.model.hidden_size) * x.act_bytes;  // full tensor
  const double ce = x.tokens * 4.0;  // fp32 [s, b] of the vocab-parallel cross-entropy
  // One collective (or SP pair) per residual block: 2 per transformer layer, 1 per hybrid layer (§1.10).
  const bool hybrid = x.job.model.is_hybrid();
  // The recomputed dense MLP module (--recompute-modules mlp) redoes one block of its layer: named per block.
  const bool mlp_recompute = x.job.training.recomputes(recompute_module::mlp);
  const auto rows = [&](const auto& table, double gathered) {
    for (const tp_block_row& r : table) {
      const bool by_block = hybrid || (mlp_recompute && r.per_ == per::recomputed_block);
      out.row(r.kind, r.phase, by_block ? r.hybrid : r.transformer, g_tp, r.kind == ck::all_gather ? gathered : a,
              r.times, r.per_, r.under);
    }
  };
  const bool fp8 = x.job.resolved.roles.linear == dtype::fp8;
  if (!x.sp) {
    rows(kTpBlockRows, a);
    out.row(ck::all_reduce, cph::forward, "vocab-parallel embedding output all-reduce", g_tp, a, 1, per::first_stage);
    out.row(ck::all_reduce, cph::backward, "output layer input-gradient all-reduce", g_tp, a, 1, per::last_stage);
  } else if (x.job.training.framework == framework_kind::fsdp) {
    rows(x.job.training.async_tp ? kTorchtitanAsyncTpRows : kTorchtitanTpRows, fp8 ? a / x.act_bytes : a);
  } else if (!x.job.training.tp_comm_overlap) {
    rows(kTpSpBlockRows, a);
  } else {
    tp_overlap_rows(a, fp8 ? a / x.act_bytes : a, out);
  }
  if (x.sp) {
    out.row(ck::reduce_scatter, cph::forward, "vocab-parallel embedding output reduce-scatter", g_tp, a, 1,
            per::first_stage);
    out.row(ck::all_gather, cph::forward, "sequence all-gather before the output layer", g_tp, a, 1, per::last_stage);
    out.row(ck::reduce_scatter, cph::backward, "output layer input-gradient reduce-scatter", g_tp, a, 1,
            per::last_stage);
  }
  out.row(ck::all_reduce, cph::forward, "cross-entropy max, target logit and sum-exp all-reduces (3)", g_tp, ce, 3,
          per::last_stage);
}

// -- CP (§4.2.2) --

/// PyTorch's context_parallel ring attention (torchtitan; §4.2.2): K and V as its SDPA call reads them
/// (copied out to every query head where the model repeats grouped K/V), gathered once per attention call
/// (rotate_method ALL_GATHER) or passed round the ring (ALL_TO_ALL, torchtitan's "alltoall"); backward
/// the same for K/V, and every step's fp32 dK/dV passed on to the next rank.
void torch_ring_cp_table(const comm_context& x, row_sink& out) {
  const auto& p = x.job.parallel;
  const model_spec& md = x.job.model;
  const double kv_cols = attention_kv_columns(md, x.job.training, p.tp);
  const double kv = x.tokens * kv_cols * x.act_bytes;  // one rank's K and V
  const double dkv = x.tokens * kv_cols * 4.0;         // their gradients, accumulated in fp32
  const double steps = static_cast<double>(p.cp - 1);
  if (p.cp_comm == cp_comm_kind::all_gather) {
    // One all-gather of every rank's K/V (the concatenated buffer), issued before step 0, waited at step 1.
    constexpr comm_overlap under = comm_overlap::attention_first_step;
    const double gathered = kv * static_cast<double>(p.cp);
    out.row(ck::all_gather, cph::forward, "K/V all-gather, under the ring's first step", g_cp, gathered, 1, per::layer,
            under);
    out.row(ck::all_gather, cph::backward, "K/V re-gather for the backward, under its first step", g_cp, gathered, 1,
            per::layer, under);
    out.row(ck::all_gather, cph::backward, "recomputed forward K/V all-gather", g_cp, gathered, 1, per::recomputed_layer,
            under);
  } else {
    constexpr comm_overlap under = comm_overlap::attention;
    out.row(ck::send_recv, cph::forward, "K/V passed round the ring (send + receive per step, c−1 steps)", g_cp, kv,
            2 * steps, per::layer, under);
    out.row(ck::send_recv, cph::backward, "K/V passed round the ring for the backward", g_cp, kv, 2 * steps, per::layer,
            under);
    out.row(ck::send_recv, cph::backward, "recomputed forward K/V ring", g_cp, kv, 2 * steps, per::recomputed_layer,
            under);
  }
  // The backward sends each step's accumulated dK/dV on (ALL_TO_ALL rotater) and waits for the previous
  // rank's at the next step: c transfers, the last waited after the loop.
  out.row(ck::send_recv, cph::backward, "fp32 dK/dV passed on after each step, under the next", g_cp, dkv, 2 * steps,
          per::layer, comm_overlap::attention);
  out.row(ck::send_recv, cph::backward, "fp32 dK/dV of the last step, waited after the loop (exposed)", g_cp, dkv, 2,
          per::layer);
}

void cp_table(const comm_context& x, row_sink& out) {
  const auto& p = x.job.parallel;
  if (p.cp == 1) return;
  if (traits_of(x.job.training.framework).cp_attention == cp_attention_kind::torch_ring) {
    torch_ring_cp_table(x, out);
    return;
  }
  const model_spec& md = x.job.model;
  // K and V of the local sequence chunk and the local (TP-split) query groups.
  const double kv = x.tokens * static_cast<double>(size_div(md.k_width() + md.v_width(), p.tp)) * x.act_bytes;
  const double steps = static_cast<double>(p.cp - 1);
  if (p.cp_comm == cp_comm_kind::p2p) {
    // Transformer Engine overlaps each step's exchange with the attention of the chunk it holds (§5.5).
    constexpr comm_overlap under = comm_overlap::attention;
    out.row(ck::send_recv, cph::forward, "K/V ring exchange (isend + irecv per step, c−1 steps per layer)", g_cp, kv,
            2 * steps, per::layer, under);
    out.row(ck::send_recv, cph::backward, "K/V and dK/dV ring exchange (2 × (isend + irecv) per step)", g_cp, kv,
            4 * steps, per::layer, under);
    out.row(ck::send_recv, cph::backward, "recomputed forward K/V ring exchange", g_cp, kv, 2 * steps,
            per::recomputed_layer, under);
  } else if (p.cp_comm == cp_comm_kind::a2a) {
    // Ulysses-style (Transformer Engine's AttnFuncWithCPAndQKVOA2A): Q, K and V all-to-all'd from the local
    // sequence chunk and every local head to the whole sequence and heads / CP before the attention, the
    // output back after it; the backward the same for dO, dQ, dK and dV. Each buffer is the rank's chunk
    // of the tensor; exposed (the attention waits for them).
    const double q = x.tokens * static_cast<double>(size_div(md.q_width(), p.tp)) * x.act_bytes;
    const double o = x.tokens * static_cast<double>(size_div(md.v_width() * md.num_attention_heads /
                                                                 md.num_query_groups, p.tp)) * x.act_bytes;
    out.row(ck::all_to_all, cph::forward, "Q, K, V all-to-all before the attention, output after (per layer)", g_cp,
            q + kv + o, 1, per::layer);
    out.row(ck::all_to_all, cph::backward, "dO all-to-all before, dQ, dK, dV after the attention backward", g_cp,
            q + kv + o, 1, per::layer);
    out.row(ck::all_to_all, cph::backward, "recomputed forward all-to-alls", g_cp, q + kv + o, 1,
            per::recomputed_layer);
  } else {
    // The all-gather variant gathers K and V before the attention kernels: exposed.
    const double gathered = kv / 2.0 * static_cast<double>(p.cp);  // one of K or V, whole sequence
    out.row(ck::all_gather, cph::forward, "K and V all-gather (2 per layer)", g_cp, gathered, 2, per::layer);
    out.row(ck::all_gather, cph::backward, "K and V re-gather (2 per layer)", g_cp, gathered, 2, per::layer);
    out.row(ck::reduce_scatter, cph::backward, "dK and dV reduce-scatter (2 per layer)", g_cp, gathered, 2, per::layer);
    out.row(ck::all_gather, cph::backward, "recomputed forward K and V all-gather", g_cp, gathered, 2,
            per::recomputed_layer);
  }
}

// -- EP (§4.2.5) --
void ep_table(const comm_context& x, row_sink& out) {
  const auto& p = x.job.parallel;
  const model_spec& md = x.job.model;
  if (!md.is_moe() || (p.ep == 1 && x.job.resolved.etp == 1)) return;
  const moe_dispatch_volume v = moe_dispatch_of(x.job, x.placement[g_ep].num_nodes, x.act_bytes);
  // §5.5.3: --overlap-moe-expert-parallel-comm runs a micro-batch's forward beside another's backward
  // (Megatron-Core's combined 1F1B), each one's dispatch and combine under the other's compute.
  // --moe-shared-expert-overlap runs the shared experts' fc1 beside the tokens' dispatch all-to-all and
  // fc2 beside the combine, forward and backward (token_dispatcher.py MoEAlltoAllTokenDispatcher).
  const training_config& t = x.job.training;
  const comm_overlap under = t.overlap_moe_ep_comm ? comm_overlap::layer : comm_overlap::none;
  const bool shared = t.moe_shared_expert_overlap && md.moe.shared_expert_ffn_hidden_size > 0;
  // Dispatch and combine in the forward, their gradients in the backward, again under recomputation.
  auto both = [&](collective_kind kind, collective_kind back, std::string_view what, std::string_view what_back,
                  int group, double bytes) {
    if (bytes <= 0) return;
    const comm_overlap o = shared && kind == ck::all_to_all ? comm_overlap::shared_expert : under;
    const comm_overlap re = shared && kind == ck::all_to_all ? comm_overlap::shared_expert : comm_overlap::none;
    out.row(kind, cph::forward, what, group, bytes, 1, per::moe_layer, o);
    out.row(back, cph::forward, what_back, group, bytes, 1, per::moe_layer, o);
    out.row(back, cph::backward, what, group, bytes, 1, per::moe_layer, o);  // the combine's gradient
    out.row(kind, cph::backward, what_back, group, bytes, 1, per::moe_layer, o);
    out.row(kind, cph::backward, "recomputed forward dispatch", group, bytes, 1, per::recomputed_moe_layer, re);
    out.row(back, cph::backward, "recomputed forward combine", group, bytes, 1, per::recomputed_moe_layer, re);
  };
  if (p.ep > 1) {
    both(ck::all_gather, ck::reduce_scatter, "token dispatch: hidden states all-gathered (allgather dispatcher)",
         "token combine: expert outputs reduce-scattered", g_ep, v.gather_bytes);
    if (v.routing_bytes > 0) {
      out.row(ck::all_gather, cph::forward, "routing probabilities and map all-gather", g_ep, v.routing_bytes, 1,
              per::moe_layer);
    }
    const bool flex = p.moe_dispatcher == moe_dispatcher_kind::flex;
    const bool hybrid = flex && p.flex_backend == moe_flex_backend::hybridep;
    both(ck::all_to_all, ck::all_to_all,
         hybrid ? "token dispatch, one copy per destination node (flex/HybridEP)"
         : flex ? "token dispatch, one copy per destination node (flex/DeepEP)"
                : "token dispatch (one copy per expert)",
         flex ? "token combine, one copy per source node" : "token combine", g_ep, v.all_to_all_bytes);
  }
  both(ck::all_gather, ck::reduce_scatter, "received tokens all-gathered over expert-TP",
       "expert outputs reduce-scattered over expert-TP", g_etp, v.etp_gather_bytes);
}

// -- PP (§4.2.3) --
void pp_table(const comm_context& x, row_sink& out) {
  const auto& p = x.job.parallel;
  if (p.pp == 1) return;
  const bool split = x.sp || p.pp_scatter_gather;
  const double full = x.tokens * static_cast<double>(x.job.model.hidden_size) * x.act_bytes;
  const double msg = split ? full / static_cast<double>(p.tp) : full;
  // Forward: the isends of the chunks that have a next stage and the irecvs of those that have a
  // previous one; backward the same the other way (per::chunk_boundary counts either).
  out.row(ck::send_recv, cph::forward, "activation isend + irecv between stages", g_pp, msg, 1, per::chunk_boundary);
  out.row(ck::send_recv, cph::backward, "activation-gradient isend + irecv between stages", g_pp, msg, 1,
          per::chunk_boundary);
  if (p.pp_scatter_gather && !x.sp && p.tp > 1) {  // one all-gather per received activation
    out.row(ck::all_gather, cph::forward, "TP all-gather of each received 1/t chunk (scatter/gather)", g_tp, full, 1,
            per::chunk_boundary);
  }
}

// -- tied embedding (§4.2.6) --
void embedding_table(const comm_context& x, row_sink& out) {
  const auto& p = x.job.parallel;
  const model_spec& md = x.job.model;
  if (p.pp == 1 || !md.tie_embeddings) return;
  const parameter_breakdown& params = x.params;
  double elems = static_cast<double>(size_div(params.word_embeddings, p.tp));
  if (traits_of(x.job.training.framework).tied_embedding_module) {
    elems += static_cast<double>(params.position_embeddings + params.embedding_norm);  // the whole tied module
  }
  const double bytes = elems * x.grad_bytes;
  out.row(ck::all_reduce, cph::backward, "tied word-embedding gradient all-reduce, first and last stage", g_emb, bytes,
          1, per::end_stage);
}

// -- DP (§4.2.4): one table of (framework, ZeRO stage) → collectives --
enum class dp_count { per_iteration, per_microbatch, per_unit_per_microbatch };
enum class dp_bytes { grads, params };
struct dp_op {
  collective_kind kind;
  comm_phase phase;
  dp_bytes bytes;
  dp_count count;
  std::string_view what;
  std::string_view what_expert;  ///< the same over the expert-DP group
};
constexpr dp_op kGradAllReduce{ck::all_reduce, cph::backward, dp_bytes::grads, dp_count::per_iteration,
                               "gradient all-reduce", "expert gradient all-reduce"};
constexpr dp_op kGradReduceScatter{ck::reduce_scatter, cph::backward, dp_bytes::grads, dp_count::per_iteration,
                                   "gradient reduce-scatter", "expert gradient reduce-scatter"};
constexpr dp_op kParamAllGather{ck::all_gather, cph::optimizer, dp_bytes::params, dp_count::per_iteration,
                                "updated-parameter all-gather", "updated expert-parameter all-gather"};
constexpr dp_op kMicroReduceScatter{ck::reduce_scatter, cph::backward, dp_bytes::grads, dp_count::per_microbatch,
                                    "gradient reduce-scatter, every micro-batch",
                                    "expert gradient reduce-scatter, every micro-batch"};
constexpr dp_op kUnitReduceScatter{ck::reduce_scatter, cph::backward, dp_bytes::grads,
                                   dp_count::per_unit_per_microbatch, "gradient reduce-scatter per layer",
                                   "expert gradient reduce-scatter per layer"};
constexpr dp_op kGatherFwd{ck::all_gather, cph::forward, dp_bytes::params, dp_count::per_unit_per_microbatch,
                           "parameter all-gather per layer, forward", "expert parameter all-gather, forward"};
constexpr dp_op kGatherBwd{ck::all_gather, cph::backward, dp_bytes::params, dp_count::per_unit_per_microbatch,
                           "parameter all-gather per layer, backward", "expert parameter all-gather, backward"};
/// DeepSpeed ZeRO-1/2's reductions as today's DeepSpeed runs them (use_multi_rank_bucket_allreduce, §4.2.4):
/// each bucket all-reduced whole, every rank keeping its own slice.
constexpr dp_op kBucketAllReduce{ck::all_reduce, cph::backward, dp_bytes::grads, dp_count::per_iteration,
                                 "gradient all-reduce of each bucket (DeepSpeed ZeRO)",
                                 "expert gradient all-reduce of each bucket (DeepSpeed ZeRO)"};
constexpr dp_op kMicroBucketAllReduce{
    ck::all_reduce, cph::backward, dp_bytes::grads, dp_count::per_microbatch,
    "gradient all-reduce of each bucket, every micro-batch (DeepSpeed ZeRO-2)",
    "expert gradient all-reduce of each bucket, every micro-batch (DeepSpeed ZeRO-2)"};
/// Each data-parallel collective the frameworks' rows name (framework.h dp_collective), as the tables
/// price it.
constexpr std::array<dp_op, 7> kDpOps = {kGradAllReduce,      kGradReduceScatter, kParamAllGather, kMicroReduceScatter,
                                         kUnitReduceScatter, kGatherFwd,         kGatherBwd};
static_assert(static_cast<int>(dp_collective::param_gather_backward_per_unit) == 6, "kDpOps lists every dp_collective");

/// Buffers per reduction: Megatron without --overlap-grad-reduce uses one bucket; DeepSpeed buckets
/// reduce_bucket_size = allgather_bucket_size = 5e8 elements (--reduce-bucket-size, a DeepSpeed config's
/// zero_optimization.reduce_bucket_size); --bucket-size-bytes overrides (§4.2.4).
/// Counts and element sizes are whole numbers, so the ceiling is an integer one.
double bucket_calls(const training_config& t, double elements, double elem_bytes) {
  const auto n = static_cast<std::int64_t>(elements);
  if (n <= 0) return 0;
  if (t.bucket_size_bytes > 0) {
    return static_cast<double>(ceil_div(n * static_cast<std::int64_t>(elem_bytes), t.bucket_size_bytes));
  }
  const std::int64_t bucket = t.bucket_size_elements > 0 ? t.bucket_size_elements : traits_of(t.framework).bucket_elements;
  return bucket > 0 ? static_cast<double>(ceil_div(n, bucket)) : 1.0;
}

/// Megatron-Core's DDP under --overlap-grad-reduce (distributed_data_parallel.py, §5.4): buckets of
/// --ddp-bucket-size elements, default max(4e7, 1e6·DP) ("make buckets larger" at large DP), on the first
/// pipeline rank's first model chunk; every other rank (bucket_size None for pp_rank > 0) and every later
/// chunk (disable_bucketing) is one bucket. Not for PyTorch's DDP (--DDP-impl torch: 25 MiB everywhere) or
/// Megatron-FSDP.
bool megatron_core_buckets(const training_config& t) {
  return t.framework == framework_kind::megatron && t.overlap_grad_reduce && !t.torch_ddp && !t.megatron_fsdp &&
         t.bucket_size_bytes == 0 && t.bucket_size_elements == 0;
}

/// The buckets of `params` (one of class c's buffers: dense or expert) on its first model chunk under
/// megatron_core_buckets: the buffer split evenly over the chunks, one bucket off the first rank.
double megatron_first_chunk_buckets(const comm_context& x, const stage_class& c, double params) {
  if (c.first_stage != 0) return 1;
  const training_config& t = x.job.training;
  const std::int64_t bucket =
      t.ddp_bucket_elements > 0 ? t.ddp_bucket_elements : std::max<std::int64_t>(40'000'000, 1'000'000 * x.size[g_dp]);
  const auto chunk = static_cast<std::int64_t>(params / static_cast<double>(x.job.parallel.vpp));
  return static_cast<double>(ceil_div(std::max<std::int64_t>(chunk, 1), bucket));
}

/// Calls of a once-per-iteration DP reduction or gather of `params` on class c: Megatron-Core's buckets
/// (the first chunk's, one per later chunk), else bucket_calls.
double dp_calls(const comm_context& x, const stage_class& c, double params, double elem_bytes) {
  if (!megatron_core_buckets(x.job.training)) return bucket_calls(x.job.training, params, elem_bytes);
  return megatron_first_chunk_buckets(x, c, params) + static_cast<double>(x.job.parallel.vpp - 1);
}

/// §4.2.4: torchao's float8 linear modules a layer of `kind` holds as torchtitan builds it (Float8Linear
/// swaps nn.Linear; the routed experts are grouped parameters, not converted, and the router stays out):
/// the attention's query, key, value and output projections (MLA: its down and up projections and the
/// output), the dense MLP's or the shared experts' (w1, w3, w2 when gated, else two).
double float8_linears_per_layer(const model_spec& m, layer_kind kind) {
  const layer_makeup& mk = makeup_of(kind);
  const double mlp = is_gated(m.activation) ? 3.0 : 2.0;
  double n = 0;
  if (mk.attention) n += m.is_mla() ? (m.mla.q_lora_rank > 0 ? 2.0 : 1.0) + 2.0 + 1.0 : 4.0;
  if (mk.dense_mlp) n += mlp;
  if (mk.moe && m.moe.shared_expert_ffn_hidden_size > 0) n += mlp;
  return n;
}

/// §4.2.4: the float8 weights of a stage class, the amaxes its gathers or its precomputation reduce.
double float8_linears_of(const model_spec& m, const stage_class& c) {
  double n = 0;
  for (std::size_t k = 0; k < kNumLayerKinds; ++k) {
    n += static_cast<double>(c.kinds[k]) * float8_linears_per_layer(m, static_cast<layer_kind>(k));
  }
  return n;
}

/// §4.2.4: torchao's FSDP float8 all-gather casts each weight with a tensorwise scale of the whole weight.
/// Without precomputed scales each weight's fsdp_pre_all_gather all-reduces its shard's amax (one float)
/// before every all-gather of it, on the gather's stream; with them (precompute_float8_dynamic_scale_for_fsdp
/// after the step) one all-reduce carries every weight's amax.
void float8_amax_rows(const comm_context& x, const dp_op& gather, int group, comm_slot slot, comm_overlap overlap,
                      double per_gather, row_sink& out) {
  const training_config& t = x.job.training;
  if (t.framework != framework_kind::fsdp || !t.fp8_param_gather || gather.kind != ck::all_gather) return;
  const model_spec& m = x.job.model;
  if (t.fp8_precompute_scale) {
    if (gather.phase == cph::backward) return;  // one per iteration, counted with the forward's gather
    out.row_by_class(ck::all_reduce, cph::optimizer, "float8 weights' amax all-reduce after the step (precomputed scales)",
                     group, comm_slot::optimizer, comm_overlap::none, [&](const stage_class& c) {
      const double n = float8_linears_of(m, c);
      return calls_bytes{n > 0 ? 1.0 : 0.0, 4.0 * n};
    });
    return;
  }
  out.row_by_class(ck::all_reduce, gather.phase, "float8 weight amax all-reduce before each weight's all-gather",
                   group, slot, overlap, [&](const stage_class& c) {
    return calls_bytes{per_gather * float8_linears_of(m, c), 4.0};
  });
}

void dp_rows(const comm_context& x, bool expert, row_sink& out) {
  const training_config& t = x.job.training;
  const optimizer_row& row = x.job.resolved.row();  // the DP collectives of its step (§4.2.4)
  const double m = x.m;
  for (int i = 0; i < row.num_dp; ++i) {
    const dp_op& listed = kDpOps[static_cast<std::size_t>(row.dp[static_cast<std::size_t>(i)])];
    // The framework table's reduce-scatter is ZeRO-1/2's per-rank reduces (as many bytes); today's
    // DeepSpeed all-reduces each bucket instead (zero_bucket_all_reduce_on).
    const bool bucket_all_reduce =
        listed.bytes == dp_bytes::grads && listed.kind == ck::reduce_scatter && zero_bucket_all_reduce_on(t);
    const dp_op& op = !bucket_all_reduce                             ? listed
                      : listed.count == dp_count::per_microbatch ? kMicroBucketAllReduce
                                                                 : kBucketAllReduce;
    const double elem = op.bytes == dp_bytes::grads ? x.grad_bytes : x.param_bytes;
    const int group = expert ? g_edp : g_dp;
    // Placement (§5.5): once-per-iteration reductions after the last backward and gathers after the
    // step; per-micro-batch ones inside the backward; per-layer ones (ZeRO-3, FSDP) prefetched.
    const bool per_unit = op.count == dp_count::per_unit_per_microbatch;
    const comm_slot slot = op.count == dp_count::per_iteration
                               ? (op.bytes == dp_bytes::grads ? comm_slot::grad_reduce : comm_slot::param_gather)
                               : (op.phase == cph::forward ? comm_slot::forward : comm_slot::backward);
    // DeepSpeed reduce-scatters each micro-batch's gradients under the backward with overlap_comm (on
    // by default at stage 3 only: runtime/zero/config.py; §5.5.2); ZeRO-3/FSDP's per-layer gathers are
    // prefetched under the compute unless prefetch is off (--zero3-prefetch-bucket-size 0).
    const bool overlapped = per_unit ? t.zero3_prefetch_bucket_elements != 0
                                     : op.count == dp_count::per_microbatch && overlap_comm_on(t);
    const comm_overlap overlap = overlapped ? comm_overlap::layer : comm_overlap::none;
    auto of = [&](const stage_class& c) {
      const double params = expert ? c.expert_params : c.dense_params;
      if (params <= 0) return calls_bytes{0, 0};
      if (op.count == dp_count::per_unit_per_microbatch) {
        // ZeRO-3/FSDP units: one per transformer layer, plus the embedding and the output/root module.
        return calls_bytes{c.units * m, params * elem / c.units};  // the mean unit
      }
      const double buckets =
          op.count == dp_count::per_iteration ? dp_calls(x, c, params, elem) : bucket_calls(t, params, elem);
      const double bytes = buckets == 1 ? params * elem : params * elem / buckets;
      return calls_bytes{buckets * (op.count == dp_count::per_microbatch ? m : 1.0), bytes};
    };
    out.row_by_class(op.kind, op.phase, expert ? op.what_expert : op.what, group, slot, overlap, of);
    // A weight is gathered once a micro-batch per pass (ZeRO-3/FSDP units), or once an iteration (FSDP2
    // under a pipeline, after the step).
    if (!expert && op.bytes == dp_bytes::params) float8_amax_rows(x, op, group, slot, overlap, per_unit ? m : 1.0, out);
    if (per_unit && op.kind == ck::all_gather && op.phase == cph::backward && !expert && x.regather > 0) {
      // The recomputed layers' parameters released after the recomputed forward (§4.2.4).
      out.row_by_class(op.kind, op.phase, "parameter re-gather per recomputed layer, backward (reuse distance)",
                       group, slot, overlap, [&](const stage_class& c) {
        const calls_bytes e = of(c);
        return calls_bytes{c.per[static_cast<std::size_t>(per::recomputed_layer)], e.bytes * x.regather};
      });
    }
    const int replica_group = expert ? g_edpr : g_dpr;
    if (op.bytes == dp_bytes::grads && x.size[replica_group] > 1) {
      // HSDP (§2.5): each reduce-scatter's shard is all-reduced across the replicas, as it completes
      // (Megatron: param_and_grad_buffer.py start_grad_sync; FSDP2: _fsdp_collectives.py foreach_reduce).
      const double shard = static_cast<double>(x.size[group]);
      out.row_by_class(ck::all_reduce, op.phase,
                       expert ? "expert gradient-shard all-reduce across replicas (HSDP)"
                              : "gradient-shard all-reduce across replicas (HSDP)",
                       replica_group, slot, overlap, [&](const stage_class& c) {
        const calls_bytes e = of(c);
        return calls_bytes{e.calls, e.bytes / shard};
      });
    }
  }
}

void dp_table(const comm_context& x, row_sink& out) {
  if (x.size[g_dp] > 1 || x.size[g_dpr] > 1) dp_rows(x, false, out);
  if (x.job.model.is_moe() && x.size[g_edp] > 1) dp_rows(x, true, out);
}

// -- scalars (§4.2.7) --
void scalar_table(const comm_context& x, row_sink& out) {
  const training_config& t = x.job.training;
  if (x.size[g_dp] > 1) {
    out.row(ck::all_reduce, cph::forward, "loss average over DP", g_dp, 4, 1, per::last_stage);
  }
  // The gradient norm over the shards of a sharded step, else within the model-parallel group.
  const int norm_group = x.job.resolved.row().step_sharded() ? g_world : g_mp;
  if (x.size[static_cast<std::size_t>(norm_group)] > 1) {
    out.row(ck::all_reduce, cph::optimizer, "gradient-norm all-reduce", norm_group, 4, 1, per::iteration);
    if (t.precision == dtype::fp16) {
      out.row(ck::all_reduce, cph::optimizer, "fp16 found-inf all-reduce", norm_group, 4, 1, per::iteration);
    }
  }
}

using table_fn = void (*)(const comm_context&, row_sink&);
constexpr std::array<table_fn, 7> kTables = {tp_table, cp_table, ep_table, dp_table, pp_table, embedding_table,
                                             scalar_table};

/// The groups of `g` without their lists (set field by field: the empty rank list is left alone).
void set_summary(comm_group_set& s, const comm_context& x, int g) {
  s.name = x.name(g);
  s.group_size = x.size[static_cast<std::size_t>(g)];
  s.num_groups = x.num_groups[static_cast<std::size_t>(g)];
  s.placement = x.placement[static_cast<std::size_t>(g)];
}

/// Placement of a group of `n` ranks covering `a` and `b`'s nodes (the model-parallel group, §4.2.7).
group_placement combined_placement(std::int64_t n, const group_placement& a, const group_placement& b,
                                   std::int64_t gpn) {
  group_placement p;
  p.group_size = n;
  p.num_nodes = std::max<std::int64_t>(1, a.num_nodes * b.num_nodes);
  p.gpus_per_node = std::max<std::int64_t>(1, size_div(n, p.num_nodes));
  p.concurrent_groups_per_node = std::max<std::int64_t>(1, size_div(gpn, p.gpus_per_node));
  p.link = p.num_nodes == 1 ? link_kind::nvlink : p.gpus_per_node == 1 ? link_kind::network : link_kind::hierarchical;
  return p;
}

/// One activation transfer between pipeline ranks (§4.2.3): the send/recv row's time per call, and
/// under scatter/gather the receiver's TP all-gather.
double pp_transfer_s(const comm_dimension& pp) {
  double send_s = 0;
  double gather_s = 0;
  for (const comm_collective& c : pp.collectives) {
    if (c.kind == collective_kind::send_recv) send_s = c.time_per_call_s;  // forward and backward alike
    if (c.kind == collective_kind::all_gather) gather_s = c.time_per_call_s;
  }
  return send_s + gather_s;
}

/// The summary (§4.4): `reference` evaluates every stage on its own and prices with estimate_collective;
/// `accounts`, when given, receives the per-stage account (§5.5).
/// The job's element sizes, micro-batches and every group's size, count and placement (§4.1), once.
void set_up(comm_context& x) {
  const job_spec& job = x.job;
  const parallel_config& p = job.parallel;
  const training_config& t = job.training;
  const std::int64_t gpn = job.cluster.gpus_per_node;
  const precision_roles& roles = job.resolved.roles;
  x.act_bytes = static_cast<double>(bytes_of(roles.activations));
  x.grad_bytes = static_cast<double>(bytes_of(roles.grad_comm));
  x.param_bytes = static_cast<double>(bytes_of(roles.param_comm));
  x.m = static_cast<double>(job.num_microbatches());
  x.tokens = static_cast<double>(job.resolved.tokens);
  x.sp = p.sequence_parallel && p.tp > 1;
  x.regather = zero3_recompute_reuse(job).regather_fraction();

  const rank_generator dec = decoder_generator(job);
  x.placement[g_tp] = placement_for(dec, bit(parallel_dim::tp), gpn, "tp");
  x.placement[g_cp] = placement_for(dec, bit(parallel_dim::cp), gpn, "cp");
  if (t.dp_replicas == 1) {
    x.placement[g_dp] = placement_for(dec, bit(parallel_dim::dp) | bit(parallel_dim::cp), gpn, p.cp > 1 ? "dp-cp" : "dp");
  }
  x.placement[g_pp] = placement_for(dec, bit(parallel_dim::pp), gpn, "pp");
  x.placement[g_emb] = embedding_placement(dec, gpn);
  const resolved_job& r = job.resolved;
  const std::int64_t etp = r.etp;
  const std::int64_t replicas = r.dp_replicas;
  const std::int64_t shard = r.dp_shards;
  const std::int64_t edp = r.expert_dp;
  const std::int64_t expert_shard = r.expert_dp_shards;  // Megatron: expert-DP divisible by the instances
  x.size = {p.tp, p.cp, p.ep, shard, expert_shard, p.pp, p.pp > 1 ? 2 : 1, job.num_gpus, p.tp * p.pp, etp, replicas,
            replicas};
  if (p.cp > 1) x.dp_name = "dp-cp";
  x.num_groups = {p.cp * p.dp * p.pp, p.tp * p.dp * p.pp, etp * p.pp * edp, p.tp * p.pp * replicas,
                  etp * p.pp * p.ep * replicas, p.tp * p.cp * p.dp, p.tp * p.cp * p.dp, 1, p.cp * p.dp,
                  p.ep * edp * p.pp, p.tp * p.pp * shard, etp * p.pp * p.ep * expert_shard};
  if (replicas > 1) {  // HSDP (§2.5): the shards inside a replica, the all-reduce across replicas
    x.dp_name = p.cp > 1 ? "dp-cp-shard" : "dp-shard";
    x.placement[g_dp] = hsdp_placement(dec, replicas, false, gpn);
    x.placement[g_dpr] = hsdp_placement(dec, replicas, true, gpn);
  }
  if (p.ep > 1 || job.model.is_moe()) {
    const rank_generator exp = expert_generator(job);
    x.placement[g_ep] = placement_for(exp, bit(parallel_dim::ep), gpn, "ep");
    x.placement[g_edp] = placement_for(exp, bit(parallel_dim::dp), gpn, "expert-dp");
    x.placement[g_etp] = placement_for(exp, bit(parallel_dim::tp), gpn, "expert-tp");
    if (replicas > 1) {  // Megatron's intra- and inter-partial expert-DP groups (§2.5)
      x.edp_name = "expert-dp-shard";
      x.placement[g_edp] = hsdp_placement(exp, replicas, false, gpn);
      x.placement[g_edpr] = hsdp_placement(exp, replicas, true, gpn);
    }
  }
  x.placement[g_world] = combined_placement(job.num_gpus, {.num_nodes = detail::ceil_div(job.num_gpus, gpn)}, {}, gpn);
  x.placement[g_mp] = combined_placement(p.tp * p.pp, x.placement[g_tp], x.placement[g_pp], gpn);
  for (std::size_t g = 0; g < g_count; ++g) x.placement[g].group_size = x.size[g];
}

comm_report summarize(const job_spec& job, bool reference, std::vector<stage_comm_account>* accounts) {
  const parallel_config& p = job.parallel;
  const std::int64_t gpn = job.cluster.gpus_per_node;
  const parameter_breakdown params = count_parameters(job.model, p.tp);
  comm_context x{job, params};
  set_up(x);
  const std::int64_t microbatches = job.num_microbatches();

  class_list classes;
  stage_classes(job, params, microbatches, !reference, classes);

  comm_report r;
  r.rank_order = p.rank_order;
  r.world_size = job.num_gpus;
  r.gpus_per_node = gpn;
  r.num_nodes = detail::ceil_div(job.num_gpus, gpn);
  r.num_microbatches = microbatches;
  constexpr std::array<int, 6> kDimGroup = {g_tp, g_cp, g_ep, g_dp, g_pp, g_emb};
  std::array<traffic_sums, class_list::kInline> inline_totals;
  std::vector<traffic_sums> more_totals;
  traffic_sums* totals = inline_totals.data();
  if (classes.size() > inline_totals.size()) {
    more_totals.resize(classes.size());
    totals = more_totals.data();
  }
  stage_comm_account* account = nullptr;
  if (accounts != nullptr) {
    accounts->assign(classes.size(), stage_comm_account{});
    std::size_t i = 0;
    for (const stage_class& c : classes) {
      (*accounts)[i].first_stage = c.first_stage;
      (*accounts)[i++].num_stages = c.num_stages;
    }
    account = accounts->data();
    // §5.4: the buckets the gradient reduction's exposure is priced by (Megatron-Core's DDP only).
    if (megatron_core_buckets(job.training)) {
      i = 0;
      for (const stage_class& c : classes) {
        (*accounts)[i++].grad_reduce_buckets = megatron_first_chunk_buckets(x, c, c.dense_params);
      }
    }
  }
  const class_view view(classes);
  row_sink sink(x, view, totals, account, reference);
  auto fill = [&](table_fn table, comm_dimension& dim, std::size_t index) {
    sink.begin(dim, index);
    table(x, sink);
    sink.end();
  };
  for (std::size_t d = 0; d < r.dimensions.size(); ++d) {
    comm_dimension& dim = r.dimensions[d];
    dim.dim = static_cast<parallel_dim>(d);
    set_summary(dim.groups, x, kDimGroup[d]);
    if (dim.dim == parallel_dim::embedding && p.pp == 1) dim.groups.num_groups = 0;
    if (dim.dim == parallel_dim::dp && job.model.is_moe()) set_summary(dim.expert_groups, x, g_edp);
    else dim.expert_groups.group_size = 0;
    fill(kTables[d], dim, d);
    r.calls_per_iteration_cluster += dim.calls_per_iteration_cluster;
    r.bytes_per_iteration_cluster += dim.bytes_per_iteration_cluster;
    r.time_per_iteration_per_gpu_s += dim.time_per_iteration_s;
  }
  r.scalars.dim = parallel_dim::dp;
  set_summary(r.scalars.groups, x, job.resolved.row().step_sharded() ? g_world : g_mp);
  r.scalars.expert_groups.group_size = 0;
  fill(scalar_table, r.scalars, r.dimensions.size());
  r.pp_transfer_s = pp_transfer_s(r.dimensions[static_cast<std::size_t>(parallel_dim::pp)]);
  r.calls_per_iteration_cluster += r.scalars.calls_per_iteration_cluster;
  r.bytes_per_iteration_cluster += r.scalars.bytes_per_iteration_cluster;
  r.time_per_iteration_per_gpu_s += r.scalars.time_per_iteration_s;
  return r;
}

}  // namespace

comm_report summarize_comm(const job_spec& job) { return summarize(job, false, nullptr); }

comm_report summarize_comm(const job_spec& job, std::vector<stage_comm_account>& stages) {
  return summarize(job, false, &stages);
}

comm_report detail::summarize_comm_reference(const job_spec& job) { return summarize(job, true, nullptr); }

comm_report detail::summarize_comm_reference(const job_spec& job, std::vector<stage_comm_account>& stages) {
  return summarize(job, true, &stages);
}

comm_report analyze_comm(const job_spec& job) {
  comm_report r = summarize_comm(job);
  for (std::size_t d = 0; d < r.dimensions.size(); ++d) {
    comm_dimension& dim = r.dimensions[d];
    comm_group_set full = process_groups(job, dim.dim);
    dim.groups.ranks = std::move(full.ranks);
    if (dim.expert_groups.group_size > 0) {
      dim.expert_groups.ranks = job.training.dp_replicas > 1
                                    ? hsdp_groups(expert_generator(job), job.training.dp_replicas, false)
                                    : masked_groups(expert_generator(job), bit(parallel_dim::dp));
    }
  }
  return r;
}

}  // namespace trainplan
