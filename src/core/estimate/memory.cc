// Per-GPU memory of every pipeline stage (docs/formulas.md §3).
#include "trainplan/core/estimate/memory.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "trainplan/core/base/checked.h"
#include "trainplan/core/estimate/comm.h"
#include "trainplan/core/estimate/compute.h"
#include "trainplan/core/estimate/schedule.h"

namespace trainplan {

namespace {

/// DeepSpeed's default reduce_bucket_size, in elements (deepspeed/runtime/zero/config.py).
constexpr double kDeepSpeedBucketElements = 5e8;
/// DeepSpeed's stage3_prefetch_bucket_size default, elements (runtime/zero/config.py: 5e7).
constexpr double kDeepSpeedPrefetchElements = 5e7;

/// What one layer keeps, for one micro-batch, in the settings that matter (§3.4).
struct activation_setting {
  double tokens = 0;         ///< s·b/c tokens of one micro-batch on one GPU
  double seq_kv = 0;         ///< keys each query attends to (s)
  double t = 1;              ///< tensor-parallel size
  bool sp = false;           ///< sequence parallel: replicated parts split by t too
  bool flash = false;
  bool selective = false;    ///< attention core recomputed
  // Megatron-Core's other recompute modules (§3.4.4): what each drops from a layer's saved tensors.
  bool layernorm = false;    ///< an MoE layer's pre-MLP norm output (TE fuses dense layers' norms into linears)
  bool mlp = false;          ///< the dense MLP: all of it (its input is the norm input already kept)
  bool moe = false;          ///< the MoE layer: all but its input
  bool moe_act = false;      ///< each routed copy's activation output (fc2's input)
  bool shared_experts = false;  ///< the shared experts: all of them
  bool mla_up_proj = false;  ///< MLA's Q, K, V (the up-projections' outputs after RoPE)
  double e = 2;              ///< bytes per activation element
  double lin = 2;            ///< bytes of a linear layer's saved input (1 under FP8: TE keeps the cast copy)
  double expert_lin = 2;     ///< the same for a routed expert's (16-bit where the framework's FP8 skips them)
  /// The flash kernel's output is the projection's input, one tensor (Megatron-Core: TE's sbhd output
  /// viewed, not copied); legacy Megatron, Megatron-DeepSpeed and FSDP models rearrange it into a new one.
  bool flash_output_is_projection_input = false;
  /// The QKV and fc1 inputs kept are the sequence-parallel all-gather's output, every token (torchtitan's
  /// DTensor blocks: the matmul saves the tensor PrepareModuleInput gathered, §4.2.1); Megatron keeps its
  /// shard and re-gathers it in the backward.
  bool gathered_input_saved = false;
};

/// §3.4: the attention block's saved tensors per token.
double attention_bytes(const model_spec& m, const activation_setting& a) {
  const double h = static_cast<double>(m.hidden_size);
  const double q = static_cast<double>(m.q_width());
  const double k = static_cast<double>(m.k_width());
  const double v = static_cast<double>(m.v_width());
  const double o = static_cast<double>(m.attention_out_width());
  const double heads = static_cast<double>(m.num_attention_heads);
  const double t = a.t;
  const double rep = a.sp ? t : 1.0;
  const double e = a.e;
  const double lin = a.lin;
  const bool attn_dropout = m.attention_dropout > 0;
  double attn = lin * h / (a.gathered_input_saved ? 1.0 : rep);  // QKV (or MLA down-projection) input
  if (!a.mla_up_proj) attn += e * (q + k + v) / t;            // Q, K, V
  if (m.is_mla()) {
    // §3.4.5: the latent norms' inputs and outputs (the up-projections' inputs), whole on every TP
    // rank: the down-projections are duplicated, their outputs cover every token of the micro-batch.
    const double ql = static_cast<double>(m.mla.q_lora_rank), kvl = static_cast<double>(m.mla.kv_lora_rank);
    attn += (e + lin) * (ql + kvl);  // norm inputs, and their outputs the up-projections read
  } else if (m.qk_norm) {
    attn += e * (q + k) / t;                                  // QK-norm inputs
  }
  if (a.flash && !a.selective) {
    // The kernel keeps its output O and the fp32 log-sum-exp. In Megatron-Core O is also the
    // projection's input (linear_proj saves the tensor it is given), so it counts once; under FP8
    // Transformer Engine keeps its own cast copy beside it. Elsewhere the projection's input is a
    // rearranged copy (§3.4).
    attn += e * o / t + 4 * heads / t;
    if (!a.flash_output_is_projection_input || lin < e) attn += lin * o / t;
    return attn;
  }
  if (!a.flash && !a.selective) {
    // softmax output, its dropout mask and dropout output (Korthikanti et al. 2022, §4.1: 5as²b)
    attn += (attn_dropout ? 2 * e + 1 : e) * heads * a.seq_kv / t;
  }
  attn += lin * o / t;                                        // projection input
  return attn;
}

/// §3.4, §3.4.3: the MLP (or MoE) block's saved tensors per token.
double mlp_bytes(const model_spec& m, const activation_setting& a, bool moe_layer, bool swiglu_fusion) {
  const double h = static_cast<double>(m.hidden_size);
  const double t = a.t;
  const double rep = a.sp ? t : 1.0;
  const double e = a.e;
  const double lin = a.lin;
  // fc2_lin: the bytes of fc2's saved input (a routed expert's may differ, activation_setting::expert_lin).
  auto mlp_bytes = [&](double ffn, double tp, double fc2_lin, bool without_output = false) {
    // activation input(s) and output, and fc2's input: 2f (plain), 4f (gated), 3f (fused bias-SwiGLU);
    // unfused with a clamp (§3.4), the clamped gate too, which the SiLU saves (5f).
    const double clamped = m.glu_clamp_limit > 0 ? 1.0 : 0.0;
    const double units = is_gated(m.activation) ? (swiglu_fusion ? 3.0 : 4.0 + clamped) : 2.0;
    return ((units - 1) * e + (without_output ? 0.0 : fc2_lin)) * ffn / tp;  // the last unit is fc2's input
  };
  if (!moe_layer && a.mlp) return 0.0;                       // checkpointed: its input is the kept norm input
  if (moe_layer && a.moe) return e * h / rep;                // checkpointed: its input, the norm's output
  const double fc1_input_shards = !moe_layer && a.gathered_input_saved ? 1.0 : rep;
  double mlp = moe_layer && a.layernorm ? 0.0 : (moe_layer ? e : lin) * h / fc1_input_shards;  // fc1 (or router) input
  if (!moe_layer) {
    mlp += mlp_bytes(static_cast<double>(m.ffn_hidden_size), t, lin);
  } else {
    const double topk = static_cast<double>(m.moe.router_topk);
    const double experts = static_cast<double>(m.moe.num_experts);
    mlp += (4 + 1) * experts / rep;                           // fp32 router probabilities, 1-byte routing map
    // §3.4.3: each token reaches k experts; expert inputs and the combine's inputs are k copies, as
    // many more on the busiest rank as the capacity factor (or, dropless, the load imbalance) allows.
    const double load = m.moe.capacity_factor > 0 ? m.moe.capacity_factor : m.moe.load_imbalance;
    const double expert_ffn = static_cast<double>(m.moe.expert_ffn_hidden_size);
    mlp += topk * load * ((e + a.expert_lin) * h / rep + mlp_bytes(expert_ffn, t, a.expert_lin, a.moe_act));
    if (m.moe.shared_expert_ffn_hidden_size > 0 && !a.shared_experts) {
      mlp += mlp_bytes(static_cast<double>(m.moe.shared_expert_ffn_hidden_size), t, lin);
    }
  }
  return mlp;
}

/// §3.4.7: a Mamba-2 block's saved tensors per token (Megatron's MambaMixer on mamba_ssm's
/// mamba_split_conv1d_scan_combined, which recomputes the convolution and the chunk states in
/// backward): in_proj's input, its output [z, x, B, C, dt], the gated norm's input and fp32 rstd per
/// group, and out_proj's input.
double mamba_bytes(const model_spec& m, const activation_setting& a) {
  const mamba_spec& x = m.mamba;
  const double h = static_cast<double>(m.hidden_size);
  const double t = a.t;
  const double rep = a.sp ? t : 1.0;
  const double d = static_cast<double>(x.d_inner());
  const double in_width = 2 * d + 2 * static_cast<double>(x.num_groups * x.state_dim) + static_cast<double>(x.num_heads);
  return a.lin * h / rep + a.e * in_width / t + a.e * d / t + 4 * static_cast<double>(x.num_groups) / t + a.lin * d / t;
}

/// §3.4.4: what a dense layer keeps per token under torchtitan's per-op selective checkpointing: the
/// block's input, the attention kernel's output and fp32 log-sum-exp, and the outputs of the matmuls it
/// keeps (compute.h op_sac_matmuls). At TP 1 (job_rules), so no shard divisors.
/// Eager SAC caches every kept output (torch.utils.checkpoint's caching dispatch mode); a compiled block
/// saves only those its backward reads (`compiled`: w2's output is not saved).
double op_checkpoint_bytes(const model_spec& m, const activation_setting& a, bool compiled) {
  double kept = a.e * static_cast<double>(m.hidden_size);  // the block's input
  kept += a.e * static_cast<double>(m.attention_out_width()) + 4.0 * static_cast<double>(m.num_attention_heads);
  const op_sac_block block = op_sac_matmuls(m);
  for (std::size_t i = 0; i < block.count; ++i)
    if (block.mm[i].kept && (block.mm[i].feeds_backward || !compiled)) kept += a.e * block.mm[i].out_width;
  return kept;
}

/// §3.4: bytes one layer stores for its backward pass, block by block (§1.10).
layer_activation_bytes layer_bytes(const model_spec& m, const activation_setting& a, layer_kind kind,
                                   bool swiglu_fusion) {
  const layer_makeup& mk = makeup_of(kind);
  const double h = static_cast<double>(m.hidden_size);
  const double rep = a.sp ? a.t : 1.0;  // divisor of the parts TP alone does not split
  layer_activation_bytes l;
  const double blocks = static_cast<double>(mk.blocks());
  l.norms = blocks * a.e * h / rep;                                  // inputs of the blocks' norms
  l.dropout_masks = m.hidden_dropout > 0 ? blocks * h / rep : 0;     // 1-byte masks after each block
  if (mk.mamba) l.mamba = mamba_bytes(m, a);
  if (mk.attention) l.attention = attention_bytes(m, a);
  if (mk.dense_mlp || mk.moe) l.mlp = mlp_bytes(m, a, mk.moe, swiglu_fusion);
  l.norms *= a.tokens;
  l.dropout_masks *= a.tokens;
  l.attention *= a.tokens;
  l.mlp *= a.tokens;
  l.mamba *= a.tokens;
  return l;
}

activation_setting setting_for(const job_spec& job) {
  const model_spec& m = job.model;
  activation_setting a;
  a.tokens = static_cast<double>(job.resolved.tokens);
  a.seq_kv = static_cast<double>(m.seq_length);
  a.t = static_cast<double>(job.parallel.tp);
  a.sp = job.parallel.sequence_parallel;
  a.flash = job.training.flash_attention;
  a.flash_output_is_projection_input =
      job.training.framework == framework_kind::megatron && !job.training.legacy_models;
  a.gathered_input_saved = job.training.framework == framework_kind::fsdp && a.sp && a.t > 1;
  const training_config& t = job.training;
  a.selective = t.recomputes(recompute_module::core_attn);
  a.layernorm = t.recomputes(recompute_module::layernorm);
  a.mlp = t.recomputes(recompute_module::mlp);
  a.moe = t.recomputes(recompute_module::moe);
  a.moe_act = t.recomputes(recompute_module::moe_act);
  a.shared_experts = t.recomputes(recompute_module::shared_experts);
  a.mla_up_proj = t.recomputes(recompute_module::mla_up_proj);
  a.e = bytes_of(job.resolved.roles.activations);
  a.lin = std::min(a.e, static_cast<double>(bytes_of(job.resolved.roles.linear)));
  a.expert_lin = traits_of(t.framework).fp8_routed_experts ? a.lin : a.e;
  return a;
}

/// §3.1–3.3: bytes per parameter held by a GPU, for a shard count D.
struct state_bytes {
  double weights = 0;
  double gradients = 0;
  double optimizer = 0;
  double offloaded = 0;
  double step_transient = 0;  ///< extra bytes per parameter while the optimizer steps
  /// What stays once every unit is resharded and its gradients reduce-scattered (FSDP2 under
  /// torch.distributed.pipelining after the last backward, §3.5.1): the sharded weight terms, the
  /// gradients over the shards, the optimizer state.
  double resharded = 0;
};

/// §3.1–3.3: what the job's optimizer row keeps per parameter held, with the sharded terms over `shards`.
state_bytes bytes_per_parameter(const job_spec& job, double shards) {
  const training_config& t = job.training;
  const optimizer_row& row = job.resolved.row();
  const precision_roles& roles = job.resolved.roles;
  const double e = bytes_of(roles.weights);
  const bool mixed = roles.master_weights;
  const double moments = roles.moment_bytes;  // m, v / momentum
  const std::array<double, kNumStateUnits> bytes = {0.0,
                                       e,
                                       static_cast<double>(bytes_of(roles.gradients)),
                                       4.0,
                                       mixed ? 4.0 : 0.0,
                                       mixed ? e : 0.0,
                                       (mixed ? roles.master_bytes : 0.0) + moments,
                                       moments};
  auto sum = [&](const state_terms& ts) {
    double b = 0;
    for (const state_term& x : ts) b += x.coef * bytes[static_cast<std::size_t>(x.of)] / (x.sharded ? shards : 1.0);
    return b;
  };
  auto sharded_part = [&](const state_terms& ts, bool all) {
    double part = 0;
    for (const state_term& x : ts) {
      if (all || x.sharded) part += x.coef * bytes[static_cast<std::size_t>(x.of)] / shards;
    }
    return part;
  };
  state_bytes b{sum(row.weights), sum(row.gradients), sum(row.optimizer), 0.0, sum(row.step_transient)};
  double resharded_gradients = row.pipelined ? sharded_part(row.gradients, true) : 0.0;
  if (t.offload_optimizer) {
    b.offloaded = b.optimizer;
    b.optimizer = 0;
    b.step_transient = 0;
    if (row.offload_gradients) {
      b.offloaded += b.gradients;  // gradients stream to CPU (estimate_zero2: 2Ψ with offload)
      b.gradients = 0;
      resharded_gradients = 0;
    }
  }
  if (row.pipelined) b.resharded = sharded_part(row.weights, false) + resharded_gradients + b.optimizer;
  return b;
}

}  // namespace

layer_activation_bytes layer_activations(const job_spec& job, bool moe_layer) {
  return layer_activations(job, moe_layer ? layer_kind::moe : layer_kind::dense);
}

layer_activation_bytes layer_activations(const job_spec& job, layer_kind kind) {
  return layer_bytes(job.model, setting_for(job), kind, job.training.bias_swiglu_fusion);
}

namespace {

/// Layer-micro-batches rank `rank` holds at its interleaved peak (§3.5): its first `held` virtual
/// micro-batches, k = 0 … held − 1, before any backward frees one; k runs the model chunk of Megatron's
/// schedule table (get_model_chunk_id: micro-batch groups of p, or of the group size given), whose
/// layers it holds. Even chunks give held × layers / v.
double held_chunk_layers(const std::vector<chunk_layout>& chunks, std::int64_t rank, std::int64_t p, std::int64_t m,
                         std::int64_t v, std::int64_t group, std::int64_t held) {
  double layers = 0;
  for (std::int64_t c = 0; c < v; ++c) {
    const std::int64_t n = chunk_microbatches_held(c, held, p, m, v, group);
    layers += static_cast<double>(n) * static_cast<double>(chunks[static_cast<std::size_t>(c * p + rank)].num_layers);
  }
  return layers;
}

/// §3.5.1: what torch.distributed.pipelining holds on a rank beyond the activations counted. Every stage
/// allocates a receive buffer per micro-batch and direction when the schedule first runs and keeps them
/// (stage.py _prepare_forward_infra / _prepare_backward_infra; PyTorch #136380, NeMo Automodel #3780):
/// m activation buffers unless it is the first stage, of which the held micro-batches' are the first
/// layer's stored input already, and m gradient buffers unless it is the last. Where the schedule returns
/// the outputs (`cache`), each stage that keeps them (forward_one_chunk's output_chunks) holds every
/// micro-batch's output until the step ends, beyond the held ones its forward cache keeps: a stage
/// boundary tensor each, on the last stage the logits (the current micro-batch's are the loss's); and
/// step() concatenates the last stage's into one tensor more (merge_chunks).
struct pipelining_hold {
  double recv_bytes = 0;        ///< receive buffers beyond the held inputs, alive all step
  double cached_bytes = 0;      ///< kept outputs beyond the activations counted, at the training peak
  double cached_all_bytes = 0;  ///< every kept output, after the last backward
  double merged_bytes = 0;      ///< the last stage's outputs concatenated by step()
};
pipelining_hold pipelining_hold_of(std::int64_t rank, std::int64_t p, std::int64_t m, std::int64_t v, std::int64_t group,
                                   std::int64_t held, double boundary_bytes, double logits_bytes,
                                   training_config::output_cache cache) {
  using oc = training_config::output_cache;
  pipelining_hold h;
  const std::int64_t last = p * v - 1;  // the last stage's index
  const auto md = static_cast<double>(m);
  for (std::int64_t c = 0; c < v; ++c) {
    const std::int64_t stage = c * p + rank;
    const auto held_c = static_cast<double>(v > 1 ? chunk_microbatches_held(c, held, p, m, v, group) : held);
    if (stage > 0) h.recv_bytes += (md - held_c) * boundary_bytes;
    if (stage < last) h.recv_bytes += md * boundary_bytes;
    if (cache == oc::every_stage && stage < last) {
      h.cached_bytes += (md - held_c) * boundary_bytes;
      h.cached_all_bytes += md * boundary_bytes;
    }
    if (cache != oc::none && stage == last) {
      h.cached_bytes += (md - 1) * logits_bytes;
      h.cached_all_bytes += md * logits_bytes;
      h.merged_bytes = md * logits_bytes;
    }
  }
  return h;
}

/// §3.8: HybridEP's registered buffers (DeepEP docs/Hybrid-EP_Implementation.md §4.2, "worst-case
/// preallocation"), one set per rank shared by dispatch and combine, sized for every token of the EP
/// group landing on one rank: T tokens a rank (the dispatcher's input), R ranks per NVLink domain over N
/// domains, E local experts, BF16 tokens (Megatron-Core dispatches HybridEP in BF16) and fp32
/// probabilities: T·R·N·(2h + 4·E·R), and with N > 1 the RDMA buffers T·(N − 1)·(2h + 4·E·R).
double hybrid_ep_buffer_bytes(const job_spec& job) {
  const parallel_config& p = job.parallel;
  if (!job.model.is_moe() || p.moe_dispatcher != moe_dispatcher_kind::flex || p.flex_backend != moe_flex_backend::hybridep) {
    return 0.0;
  }
  const group_placement ep = placement_of(job, parallel_dim::ep);
  const double tokens = moe_dispatch_of(job, ep.num_nodes, 2.0).tokens;
  const double h = static_cast<double>(job.model.hidden_size);
  const double domains = static_cast<double>(ep.num_nodes);
  const double per_domain = static_cast<double>(ep.gpus_per_node);
  const double local_experts = static_cast<double>(job.model.moe.num_experts / p.ep);
  const double per_token = 2 * h + 4 * local_experts * per_domain;
  return tokens * per_domain * domains * per_token + tokens * (domains - 1) * per_token;
}

/// §3.5: of the `held` chunk-micro-batches of rank `rank`, those whose output was sent on: every one but
/// the last rank's last chunk's (which ends in the loss), counted as held_chunk_layers counts chunks.
double held_sent_outputs(std::int64_t rank, std::int64_t p, std::int64_t m, std::int64_t v, std::int64_t group,
                         std::int64_t held) {
  if (rank != p - 1) return static_cast<double>(held);
  return static_cast<double>(held - chunk_microbatches_held(v - 1, held, p, m, v, group));
}

}  // namespace

memory_report estimate_memory(const job_spec& job) {
  memory_report r;
  estimate_memory(job, count_parameters(job.model, job.parallel.tp), pipeline_layout(job), r);
  return r;
}

void estimate_memory(const job_spec& job, const parameter_breakdown& params, const std::vector<stage_layout>& layout,
                     memory_report& r) {
  const model_spec& m = job.model;
  const parallel_config& par = job.parallel;
  const training_config& tr = job.training;
  const gpu_spec& gpu = job.cluster.gpu;
  const std::int64_t pp = par.pp;
  {
    std::vector<stage_memory> keep = std::move(r.stages);  // reuse its storage
    r = memory_report{};
    keep.clear();
    r.stages = std::move(keep);
  }
  r.capacity_bytes = static_cast<double>(gpu.usable_memory_bytes);
  r.optimizer = job.resolved.row().runs;
  const activation_setting act = setting_for(job);
  const double e = act.e;
  const double tokens = act.tokens;
  const double h = static_cast<double>(m.hidden_size);
  const double rep = act.sp ? act.t : 1.0;
  const double vocab_shard = static_cast<double>(params.padded_vocab_size) / act.t;

  // One layer of each kind the stages hold, and the last layer's (MTP, §3.4.6); the report shows a dense
  // one (a hybrid model's first layer).
  const layer_counts present = layer_kinds_of(layout);
  const auto last_kind = static_cast<std::size_t>(m.kind_of_layer(m.num_layers - 1));
  std::array<double, kNumLayerKinds> kind_act{};
  // Recompute modules (§3.4.4): the largest layer's tensors they rebuild during its backward.
  activation_setting kept_modules = act;
  kept_modules.layernorm = kept_modules.mlp = kept_modules.moe = kept_modules.moe_act = false;
  kept_modules.shared_experts = kept_modules.mla_up_proj = false;
  const bool modules = act.layernorm || act.mlp || act.moe || act.moe_act || act.shared_experts || act.mla_up_proj;
  double module_working = 0;
  for (std::size_t k = 0; k < kNumLayerKinds; ++k) {
    if (present[k] > 0 || k == last_kind) {
      kind_act[k] = layer_bytes(m, act, static_cast<layer_kind>(k), tr.bias_swiglu_fusion).total();
      if (modules) {
        module_working = std::max(module_working, layer_bytes(m, kept_modules, static_cast<layer_kind>(k),
                                                              tr.bias_swiglu_fusion).total() - kind_act[k]);
      }
    }
  }
  r.layer_activations = layer_bytes(m, act, m.is_hybrid() ? m.kind_of_layer(0) : layer_kind::dense, tr.bias_swiglu_fusion);

  // Recomputation (§3.4.4): what a layer keeps when checkpointed, and the working set rebuilt.
  const bool full = tr.recompute == recompute_granularity::full;
  const double checkpoint_bytes = e * h * tokens / rep;  // a checkpointed layer's input
  const double n_recompute = static_cast<double>(tr.recompute_num_layers);
  const bool op_sac = tr.recompute == recompute_granularity::selective_op;
  const double op_kept_bytes =
      op_sac ? op_checkpoint_bytes(m, act, tr.torch_compile) * tokens : 0.0;

  const double dp_shards = static_cast<double>(job.resolved.dp_shards);  // DP×CP, or one HSDP replica (§2.5)
  const double ep_shards = static_cast<double>(job.resolved.expert_dp_shards);  // §2.5
  const state_bytes dense_state = bytes_per_parameter(job, dp_shards);
  const state_bytes expert_state = bytes_per_parameter(job, ep_shards);

  const rank_holdings holds = holdings_of(job, params);
  // Only dense transformer layers (zero3_recompute_reuse reads the dense layer's four matrices).
  const bool dense_layers_only =
      holds.moe_layer.total() == 0 && holds.mamba_layer.total() == 0 && holds.attention_layer.total() == 0;
  double largest_layer = 0;
  // §3.7: gathered in FP8 (--fp8-param-gather) a unit's weights take 1 byte each where the framework's FP8
  // covers them (the routed experts stay 16-bit under torchao); the bytes per element of the largest layer.
  const bool fp8_experts = traits_of(tr.framework).fp8_routed_experts;
  double largest_layer_gathered_bytes = 0;
  for (std::size_t k = 0; k < kNumLayerKinds; ++k) {
    const layer_shard& l = holds.of(static_cast<layer_kind>(k));
    if (static_cast<double>(l.total()) < largest_layer) continue;
    largest_layer = static_cast<double>(l.total());
    largest_layer_gathered_bytes = tr.fp8_param_gather ? static_cast<double>(l.dense) +
                                                             (fp8_experts ? 1.0 : e) * static_cast<double>(l.expert)
                                                       : e * static_cast<double>(l.total());
  }

  const std::int64_t m_micro = job.num_microbatches();
  // §3.5: a sent stage output held until its backward (the framework's rule, or Megatron-Core's
  // deallocate_pipeline_outputs false), per chunk-micro-batch held: DeepSpeed's TP partition, else the
  // tensor as sent (a sequence shard with SP).
  const sent_output_hold hold = tr.keep_pipeline_outputs ? sent_output_hold::kept : traits_of(tr.framework).sent_output;
  const double sent_output_bytes = hold == sent_output_hold::freed ? 0.0
                                   : hold == sent_output_hold::kept_tp_partitioned ? e * h * tokens / act.t
                                                                                   : e * h * tokens / rep;
  const bool fp8_copies = tr.fp8 != fp8_format::none && !tr.fp8_param_gather;

  const double dispatch_buffer = hybrid_ep_buffer_bytes(job);
  const bool pipelined = job.resolved.row().pipelined;  // FSDP2 under torch.distributed.pipelining (§3.5.1)
  double peak_reserved = -1;
  r.stages.reserve(layout.size());
  // §3.5: with interleaving the layers held count chunk by chunk (a rank's chunks need not be alike).
  thread_local std::vector<chunk_layout> chunks;
  if (par.vpp > 1) pipeline_chunks(job, chunks);
  // What a stage's class (layers by kind, ends) decides, computed when the class changes: a deep
  // pipeline's middle stages differ only in the micro-batches in flight.
  struct {
    stage_memory s;  // the class's fields; the rank's are set below
    double step_transient = 0, stored_per_layer = 0, per_microbatch_extra = 0, output_stored = 0;
    double static_bytes = 0, communicators = 0;
    /// What the class keeps once resharded after the last backward (FSDP2 under pipelining, §3.5.1).
    double resharded_bytes = 0;
    /// Gathered bytes held while a layer runs backward but not at the loss (FSDP2's root stage, §3.7).
    double layer_phase_buffers = 0;
    /// The loss's transient on the last stage, and the freed block its backward cannot reuse (§3.8).
    double loss_transient = 0, loss_stranded = 0;
  } cls;
  const stage_layout* previous = nullptr;
  for (const stage_layout& st : layout) {
    if (previous == nullptr || !same_stage_class(*previous, st)) {
      stage_memory& s = cls.s;
      s = stage_memory{};
      cls.layer_phase_buffers = 0;
      s.num_layers = st.num_layers;
      // §2.4: parameters held by this GPU.
      const layer_shard held = holds.stage(st);
      const std::int64_t dense = held.dense;
      const std::int64_t expert = held.expert;
      s.parameters = held.total();
      const double dn = static_cast<double>(dense);
      const double ex = static_cast<double>(expert);
      s.weights_bytes = dn * dense_state.weights + ex * expert_state.weights;
      // §5.1.3: Transformer Engine keeps each FP8 linear weight and its transpose beside the 16-bit one
      // (with --fp8-param-gather the FP8 parameter replaces the 16-bit copy instead). Under ZeRO-3/FSDP
      // no whole weight stays on the GPU, so neither do its FP8 casts: they exist while a layer is
      // gathered (below; torchao's Float8Linear casts the gathered weight each pass).
      if (fp8_copies && tr.zero_stage != 3) {
        s.weights_bytes += 2.0 * static_cast<double>(holds.stage(st.kinds, false, false).total());
      }
      // §3.7: FSDP2 under a pipeline keeps its gathered units; with FSDP's float8 all-gather a layer's
      // unsharded linear weights are torchao's Float8Tensors over the gathered bytes (fsdp_post_all_gather),
      // 1 byte each, the norms too as counted here (the embedding and output layer stay 16-bit), the routed
      // experts where the framework's FP8 covers them.
      if (pipelined && tr.fp8_param_gather) {
        const layer_shard layers = holds.stage(st.kinds, false, false);
        s.weights_bytes -= (e - 1.0) * static_cast<double>(layers.dense + (fp8_experts ? layers.expert : 0));
      }
      s.gradients_bytes = dn * dense_state.gradients + ex * expert_state.gradients;
      s.optimizer_bytes = dn * dense_state.optimizer + ex * expert_state.optimizer;
      s.offloaded_bytes = dn * dense_state.offloaded + ex * expert_state.offloaded;
      cls.step_transient = dn * dense_state.step_transient + ex * expert_state.step_transient;
      cls.resharded_bytes = dn * dense_state.resharded + ex * expert_state.resharded;

      // §3.7: communication buckets and gathered parameters.
      const double params_here = static_cast<double>(s.parameters);
      if (job.resolved.row().reduce_bucket) {
        const double elements = tr.bucket_size_elements > 0 ? static_cast<double>(tr.bucket_size_elements)
                                                            : kDeepSpeedBucketElements;
        const double bucket = tr.bucket_size_bytes > 0 ? static_cast<double>(tr.bucket_size_bytes)
                                                       : e * std::min(elements, params_here);
        s.buffers_bytes += bucket;
      }
      if (pipelined) {
        // FSDP2 under a pipeline keeps every unit unsharded (the weights above): a unit's 16-bit gradient
        // before it is added into the reduce-dtype buffer, and under float8 the unit's FP8 casts (§3.7).
        s.buffers_bytes += e * largest_layer + (fp8_copies ? 2.0 * largest_layer : 0.0);
      } else if (tr.zero_stage == 3) {
        // The gathered layer being computed, what is prefetched ahead of it and, FSDP, the unit's
        // unsharded gradient before its reduce-scatter (§3.7). DeepSpeed prefetches up to
        // stage3_prefetch_bucket_size elements ahead (5e7 by default), at most the next layer; FSDP the
        // next unit. --zero3-prefetch-bucket-size 0: nothing ahead.
        const bool prefetch = tr.zero3_prefetch_bucket_elements != 0;
        const double bucket = tr.zero3_prefetch_bucket_elements > 0 ? static_cast<double>(tr.zero3_prefetch_bucket_elements)
                                                                     : kDeepSpeedPrefetchElements;
        // Megatron-FSDP holds a unit's parameters and gradients in its double buffers as FSDP does.
        const bool per_unit = tr.framework != framework_kind::deepspeed;
        const double ahead = !prefetch ? 0.0 : per_unit ? largest_layer : std::min(bucket, largest_layer);
        // §3.7: gathered in FP8 (--fp8-param-gather: torchao's float8 all-gather, Megatron-FSDP's FP8
        // parameters), a gathered layer's weights hold 1 byte each where FP8 covers them; gradients stay
        // 16-bit. DeepSpeed gathers 16 bits.
        const double gathered_e = !per_unit || largest_layer <= 0 ? e : largest_layer_gathered_bytes / largest_layer;
        double gathered = largest_layer;
        double gradient = per_unit ? largest_layer : 0.0;
        if (!per_unit && dense_layers_only) {
          // DeepSpeed: a layer's modules stay gathered from the recomputed forward into the backward only
          // within stage3_max_reuse_distance; the others are gathered one at a time for their backward (the
          // regather of §4.2.4). Autograd writes the module's whole gradient before ZeRO-3 copies it into
          // its reduce bucket or reduces it (stage3.py __add_grad_to_ipg_bucket).
          const zero3_reuse reuse = zero3_recompute_reuse(job);
          const double matrices = reuse.kept_elements + reuse.released_elements;
          const double small = std::max(0.0, largest_layer - matrices);  // norms, biases
          gathered = std::min(largest_layer, small + std::max(reuse.kept_elements, reuse.largest_released_elements));
          gradient = reuse.largest_matrix_elements;
        }
        if (tr.framework == framework_kind::fsdp && (st.has_embedding || st.has_output)) {
          // §3.7, FSDP2 as torchtitan applies it: the root unit (embeddings, final norm, output layer) is
          // not resharded after forward (FSDPState._lazy_init: the root's post_forward_mesh_info = None),
          // nor is the last block (torchtitan apply_fsdp: reshard_after_forward = layer_id < n − 1). At
          // the loss both are gathered and nothing else; a block's backward adds the prefetched block,
          // its unsharded gradient and the root's first gradient (the output layer's, or the tied
          // matrix's), held until the root's post-backward at the end.
          const double root = static_cast<double>((st.has_embedding ? holds.embedding : 0) +
                                                  (st.has_output ? holds.output : 0));
          const double root_gradient =
              !st.has_output ? 0.0 : static_cast<double>(m.tie_embeddings ? holds.embedding : holds.output);
          s.buffers_bytes += e * root + gathered_e * largest_layer;
          cls.layer_phase_buffers = gathered_e * ahead + e * (gradient + root_gradient);
        } else {
          s.buffers_bytes += gathered_e * (gathered + ahead) + e * gradient;
        }
        // FP8: the gathered layers' FP8 weight and its transpose (1 + 1 byte), while they are gathered.
        if (fp8_copies) s.buffers_bytes += 2.0 * (gathered + ahead);
      } else if (tr.zero_stage == 2 && tr.framework != framework_kind::deepspeed) {
        s.buffers_bytes += e * largest_layer;
      }

      double stage_act = 0;
      for (std::size_t k = 0; k < kNumLayerKinds; ++k) stage_act += static_cast<double>(st.kinds[k]) * kind_act[k];
      const double per_layer = st.num_layers > 0 ? stage_act / static_cast<double>(st.num_layers) : 0.0;

      // Stored per layer-micro-batch, and the working set rebuilt during backward (§3.4.4).
      double& stored_per_layer = cls.stored_per_layer;
      stored_per_layer = per_layer;
      double working = module_working;
      if (op_sac) {
        stored_per_layer = op_kept_bytes;
        working = per_layer;  // the layer's recomputed tensors while its backward runs
      }
      if (full) {
        // A rank's layers per chunk: their mean where the first or last chunk holds one fewer (§2.2).
        const double chunk_layers = static_cast<double>(st.num_layers) / static_cast<double>(par.vpp);
        if (tr.recompute_method_ == recompute_method::uniform) {
          const double chunks = std::ceil(chunk_layers / n_recompute);
          stored_per_layer = chunk_layers > 0 ? chunks * checkpoint_bytes / chunk_layers : 0.0;
          working = std::min(n_recompute, chunk_layers) * per_layer;
        } else {
          const double recomputed = std::min(n_recompute, chunk_layers);
          stored_per_layer = chunk_layers > 0
                                 ? (recomputed * checkpoint_bytes + (chunk_layers - recomputed) * per_layer) / chunk_layers
                                 : 0.0;
          working = recomputed > 0 ? per_layer : 0.0;
        }
      }
      double& per_microbatch_extra = cls.per_microbatch_extra;
      per_microbatch_extra = 0;  // embedding and output-layer tensors, per micro-batch
      if (st.has_embedding) {
        per_microbatch_extra += (m.hidden_dropout > 0 ? h * tokens / rep : 0.0);   // embedding dropout mask
        per_microbatch_extra += m.embedding_norm ? e * h * tokens : 0.0;           // embedding norm input
      }
      double& output_stored = cls.output_stored;
      output_stored = 0;
      double& loss_transient = cls.loss_transient;
      loss_transient = 0;
      cls.loss_stranded = 0;
      if (st.has_output) {
        output_stored = 2 * e * h * tokens / rep;  // final norm input, output layer input
        // §3.6: --defer-embedding-wgrad-compute holds the output layer's input and output gradient of d
        // micro-batches until the pipeline flush (tensor_parallel/layers.py embedding_activation_buffer,
        // grad_output_buffer): at the d-th, d of each, one input being the current micro-batch's above.
        if (const auto d = static_cast<double>(tr.deferred_wgrad_microbatches(m_micro)); d > 0) {
          output_stored += e * tokens * ((d - 1) * h / rep + d * vocab_shard);
        }
        // §3.4.6: each MTP module keeps a layer like the last one, its two input norms' and projection's
        // inputs (2h wide), its final norm's and the shared output layer's inputs, per micro-batch.
        per_microbatch_extra += static_cast<double>(m.mtp_num_layers) *
                                (kind_act[last_kind] + (2 + 2 + 2) * e * h * tokens / rep);
        // §3.6: the logits (e·V/t) and the loss's fp32 buffers, as the framework runs it: the forward's
        // peak, the backward's, or the cast of the fp32 gradient back to the logits' dtype (4 + e).
        const cross_entropy_kernels& ce = cross_entropy_of(tr, par.tp);
        // §3.6: torch.distributed.pipelining keeps the last stage's output, the logits, in its forward cache
        // until that micro-batch's backward (stage.py backward_one_chunk pops it then): alive at the
        // backward's peak, not freed before it (a compiled loss's backward_peak_16bit counts them already:
        // the cached logits are the tensor its graph saved).
        const bool logits_cached = pipelined;
        const double backward_16bit = ce.backward_peak_16bit > 0 ? ce.backward_peak_16bit * e : logits_cached ? e : 0.0;
        loss_transient = std::max({e + ce.buffer_fp32_bytes, ce.backward_peak_fp32_bytes + backward_16bit,
                                   ce.fp32_gradient ? 4 + e : 0.0}) *
                         vocab_shard * tokens;
        // §3.8: the deleted 16-bit logits' block, too small for the backward's fp32 buffers (none when the
        // logits are fp32 themselves: their block fits the first of them; none when they stay cached).
        if (ce.strands_logits_block && e < 4 && !logits_cached) cls.loss_stranded = e * vocab_shard * tokens;
      }
      // Backward working tensors: the activation gradient in and out of a layer, and the largest
      // intermediate gradient (the gated fc1 output).
      const double grad_working =
          e * tokens * (2 * h / rep + (is_gated(m.activation) ? 2.0 : 1.0) * static_cast<double>(m.ffn_hidden_size) / act.t);

      s.activations_per_microbatch_bytes = stored_per_layer * static_cast<double>(st.num_layers) + per_microbatch_extra;
      // Under full recomputation the rebuilt layer's activations are freed as its gradients appear, so
      // the gradient tensors do not add to the rebuilt working set.
      s.transient_bytes =
          std::max((full || op_sac ? working : working + grad_working) + cls.layer_phase_buffers, loss_transient);
      cls.static_bytes = s.weights_bytes + s.gradients_bytes + s.optimizer_bytes + s.buffers_bytes;
      // §3.8: the caching allocator's reserve, then the CUDA context and NCCL's buffers, outside PyTorch.
      cls.communicators = static_cast<double>(
          st.has_embedding || st.has_output ? job.resolved.end_stage_communicators : job.resolved.communicators);
    }
    previous = &st;
    stage_memory& s = r.stages.emplace_back(cls.s);  // the class's figures, then this stage's own
    s.stage = st.stage;
    // §3.5: micro-batches whose activations are held at once, as Megatron's schedule runs them
    // (interleaved with model chunks, else 1F1B; the schedule's own `held`).
    const schedule_kind kind = par.vpp > 1 ? schedule_kind::interleaved : schedule_kind::one_f_one_b;
    in_flight peak = traits_of(kind).held(st.stage, pp, m_micro, par.vpp, par.microbatch_group_size);
    // With the EP all-to-all overlap the interleaved warm-up runs one more forward so that every combined
    // 1F1B step pairs independent micro-batches (schedules.py get_pp_rank_microbatches: "we schedule one
    // extra micro-batch forward step before the 1f1b stages"): one more chunk-micro-batch held. The
    // time model prices the combined steps by §5.5.3's cover bound, not by this order.
    if (kind == schedule_kind::interleaved && tr.overlap_moe_ep_comm) {
      peak.chunk_microbatches = std::min(peak.chunk_microbatches + 1, m_micro * par.vpp);
    }
    const std::int64_t in_flight = peak.microbatches;
    // layer-micro-batches stored. §3.4.8: with CPU offloading (PP 1) the first N layers' activations leave
    // the GPU after their forward, one of them at most still on it while its copy runs.
    const std::int64_t offloaded = tr.cpu_offload_layers;
    const double resident_layers =
        static_cast<double>(st.num_layers - offloaded + std::min<std::int64_t>(offloaded, 1));
    const double layers_in_flight =
        par.vpp > 1 ? held_chunk_layers(chunks, st.stage, pp, m_micro, par.vpp, par.microbatch_group_size,
                                        peak.chunk_microbatches)
                    : static_cast<double>(peak.chunk_microbatches) * resident_layers;
    s.offloaded_layer_bytes = offloaded > 0 ? cls.stored_per_layer : 0.0;
    s.microbatches_in_flight = in_flight;
    s.activations_bytes = cls.stored_per_layer * layers_in_flight +
                          cls.per_microbatch_extra * static_cast<double>(in_flight) + cls.output_stored +
                          sent_output_bytes * held_sent_outputs(st.stage, pp, m_micro, par.vpp, par.microbatch_group_size,
                                                                peak.chunk_microbatches);
    // §3.5.1: torch.distributed.pipelining's receive buffers and kept outputs (FSDP2 under a pipeline).
    const pipelining_hold ph =
        pipelined ? pipelining_hold_of(st.stage, pp, m_micro, par.vpp, par.microbatch_group_size, peak.chunk_microbatches,
                                       checkpoint_bytes, e * vocab_shard * tokens, tr.pipelining_output_cache)
                  : pipelining_hold{};
    s.buffers_bytes += ph.recv_bytes;
    s.activations_bytes += ph.cached_bytes;
    const double static_bytes = cls.static_bytes + ph.recv_bytes;
    const double train_peak = static_bytes + s.activations_bytes + s.transient_bytes;
    // The optimizer steps on resharded units under a pipeline, the kept outputs still alive (output_chunks
    // is cleared when the next step starts); before it, step() concatenates the last stage's outputs.
    const double after_backward = pipelined ? cls.resharded_bytes + ph.recv_bytes + ph.cached_all_bytes : static_bytes;
    const double step_peak = after_backward + cls.step_transient;
    const double merge_peak = after_backward + ph.merged_bytes;
    s.allocated_bytes = std::max({train_peak, step_peak, merge_peak});
    s.other_bytes = s.allocated_bytes - (s.weights_bytes + s.gradients_bytes + s.optimizer_bytes + s.activations_bytes);
    // §3.8: the allocator's reserve over the peak, or over the loss's backward with the block it strands
    // there (reserved never shrinks, so a later, higher allocated peak may reuse that block).
    const double reserve = 1.0 + tr.allocator_reserve_fraction;
    const double at_peak = s.allocated_bytes * reserve;
    const double at_loss = (static_bytes + s.activations_bytes + cls.loss_transient) * reserve + cls.loss_stranded;
    s.stranded_bytes = at_loss > at_peak ? cls.loss_stranded : 0.0;
    s.torch_reserved_bytes = std::max(at_peak, at_loss);
    // A rank whose stage has no MoE layer never dispatches: no buffer.
    bool dispatches = false;
    for (std::size_t k = 0; k < kNumLayerKinds; ++k) dispatches = dispatches || (kLayerMakeup[k].moe && st.kinds[k] > 0);
    s.dispatch_buffer_bytes = dispatches ? dispatch_buffer : 0.0;
    s.reserved_bytes = s.torch_reserved_bytes + static_cast<double>(gpu.cuda_context_bytes) +
                       cls.communicators * static_cast<double>(tr.nccl_buffer_bytes_per_communicator) +
                       s.dispatch_buffer_bytes;
    s.headroom_bytes = r.capacity_bytes - s.reserved_bytes;
    s.fits = s.headroom_bytes >= 0;
    if (s.reserved_bytes > peak_reserved) {
      peak_reserved = s.reserved_bytes;
      r.peak_stage = s.stage;
    }
    r.peak_allocated_bytes = std::max(r.peak_allocated_bytes, s.allocated_bytes);
  }
  r.peak_reserved_bytes = peak_reserved;
  r.fits = r.peak_reserved_bytes <= r.capacity_bytes;

  // Whole model on one GPU, one micro-batch, no parallelism or recomputation (seeds/003's first table).
  const state_bytes single = bytes_per_parameter(job, 1.0);
  const double total = static_cast<double>(params.total);
  r.full_weights_bytes = total * single.weights;
  r.full_gradients_bytes = total * single.gradients;
  r.full_optimizer_bytes = total * (single.optimizer + single.offloaded);
  activation_setting whole = act;
  whole.t = 1;
  whole.sp = false;
  whole.selective = false;
  whole.layernorm = whole.mlp = whole.moe = whole.moe_act = whole.shared_experts = whole.mla_up_proj = false;
  whole.tokens = static_cast<double>(m.seq_length) * static_cast<double>(tr.micro_batch_size);
  const layer_counts all = m.count_layer_kinds(0, m.num_layers);
  r.full_activations_bytes = 0;
  for (std::size_t k = 0; k < kNumLayerKinds; ++k) {
    if (all[k] == 0) continue;
    r.full_activations_bytes +=
        static_cast<double>(all[k]) * layer_bytes(m, whole, static_cast<layer_kind>(k), tr.bias_swiglu_fusion).total();
  }
}

bool megatron_theoretical_applies(const job_spec& job) {
  const training_config& t = job.training;
  return t.framework == framework_kind::megatron && t.recompute != recompute_granularity::full &&
         job.parallel.cp == 1 && !job.model.is_moe() && !job.model.is_hybrid() && !t.offload_optimizer;
}

megatron_theoretical_memory megatron_theoretical(const job_spec& job) {
  // megatron/training/theoretical_memory_usage.py, as quoted in docs/formulas.md §3.9.
  const model_spec& m = job.model;
  const parallel_config& p = job.parallel;
  const double h = static_cast<double>(m.hidden_size);
  const double L = static_cast<double>(m.num_layers);
  const double a = static_cast<double>(m.num_attention_heads);
  const double g = static_cast<double>(m.num_query_groups);
  const double f = static_cast<double>(m.ffn_hidden_size);
  const double V = static_cast<double>(padded_vocab(m, p.tp));
  const double s = static_cast<double>(m.seq_length);
  const double b = static_cast<double>(job.training.micro_batch_size);
  const double t = static_cast<double>(p.tp);
  const double pp = static_cast<double>(p.pp);
  const double experts = m.is_moe() ? static_cast<double>(m.moe.num_experts) : 1.0;
  const double gated = is_gated(m.activation) ? 1.5 : 1.0;
  const double q_ratio = static_cast<double>(m.q_width()) / h;
  const double layer_params =
      2 * L * h * h * ((1 + g / a) * q_ratio + (f / h) * experts * gated + 2 / h + 1 / (L * h));
  const double embedding = h * V;
  double most_loaded = (layer_params / pp + embedding) / t;
  if (!m.tie_embeddings && p.pp == 1) most_loaded += embedding / t;
  const double bytes_per_param =
      job.training.distributed_optimizer ? 6 + 12 / static_cast<double>(p.dp) : 18;
  megatron_theoretical_memory r;
  r.weight_and_optimizer_bytes = most_loaded * bytes_per_param;

  const double m_micro = static_cast<double>(job.num_microbatches());
  const double v = static_cast<double>(p.vpp);
  double phi = 1;
  if (p.vpp > 1) {
    phi = 1 + (pp - 1) / (pp * v);
  } else if (p.pp > 1) {
    phi = std::min(1.0, m_micro / pp);
  }
  const bool sp_selective = p.sequence_parallel && job.training.recompute == recompute_granularity::selective;
  double act = 0;
  if (sp_selective) {
    act = (s * b * h * (18 + 4 * f / h) * L + 8 * s * b * pp + s * b * h * pp) * phi;
    if (p.pp == 1) act += s * b * h * 4 * (1 + V / h);
    act /= t;
  } else {
    act = 1.05 * (s * b * h * (10 + 24 / t) * L + 8 * s * b * pp + s * b * h * pp) * phi;
  }
  r.activation_bytes = act;
  return r;
}

}  // namespace trainplan
