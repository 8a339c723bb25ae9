// Layout validation and the per-stage layer split (docs/formulas.md §2).
#include "trainplan/core/job/job.h"

#include <algorithm>
#include <string>

#include "trainplan/core/base/checked.h"
#include "job/job_rules.h"
#include "trainplan/core/base/error.h"
#include "trainplan/core/base/limits.h"

namespace trainplan {

namespace {

using std::to_string;

using limits::kMaxGlobalBatch;
using limits::kMaxParallel;

}  // namespace

// The rules return the violation's message, "" when met: layout_violation returns the first one.
std::string detail::positive(std::int64_t v, const char* flag, std::int64_t hi) {
  if (v < 1 || v > hi) {
    return std::string(flag) + " must be a positive integer no larger than " + to_string(hi) + ", got " + to_string(v);
  }
  return {};
}

namespace {

using detail::positive;

std::string divisible(std::int64_t a, const std::string& a_flag, std::int64_t b, const std::string& b_flag) {
  if (a % b != 0) return a_flag + " (" + to_string(a) + ") must be divisible by " + b_flag + " (" + to_string(b) + ")";
  return {};
}

/// a·b into `out`, or the overflow's message.
std::string product(std::int64_t a, std::int64_t b, const char* what, std::int64_t& out) {
  if (__builtin_mul_overflow(a, b, &out)) return std::string(what) + " overflows a 64-bit count: the sizes given are absurd";
  return {};
}

}  // namespace

namespace {

/// One layer on one GPU (§2.4).
layer_shard shard_layer(const model_spec& m, const layer_parameters& l, std::int64_t tp, std::int64_t ep,
                        std::int64_t etp, bool moe_layer) {
  layer_shard s;
  // Split by TP: column- and row-parallel weights, column biases, per-head sinks. Whole on every TP
  // rank: norms, row-parallel biases, MLA's duplicated down-projections, the router and gates.
  // A Mamba-2 block (§1.10): every mixer tensor split by TP but out_proj's bias.
  const std::int64_t mamba_out_bias = l.mamba_out_proj > 0 && m.add_bias_linear ? m.hidden_size : 0;
  s.dense = detail::size_div(l.qkv_weight + l.qkv_bias + l.sinks + l.proj_weight + l.fc1_weight + l.fc1_bias +
                                 l.fc2_weight + l.mamba() - mamba_out_bias,
                             tp) +
            l.norms() + l.attention_norms + l.qkv_down_weight + l.proj_bias + l.fc2_bias + l.router +
            l.shared_expert_gate + mamba_out_bias;
  if (moe_layer) {
    const std::int64_t gate = is_gated(m.activation) ? 2 : 1;
    const std::int64_t fe = m.moe.expert_ffn_hidden_size;
    const std::int64_t h = m.hidden_size;
    const std::int64_t split = h * fe * gate + (m.add_bias_linear ? fe * gate : 0) + fe * h;
    const std::int64_t replicated = m.add_bias_linear ? h : 0;  // the row-parallel fc2 bias
    s.expert = detail::size_div(m.moe.num_experts, ep) * (detail::size_div(split, etp) + replicated);
  }
  return s;
}

}  // namespace

rank_holdings holdings_of(const job_spec& job, const parameter_breakdown& params) {
  const model_spec& m = job.model;
  const parallel_config& p = job.parallel;
  rank_holdings h;
  const std::int64_t etp = p.etp > 0 ? p.etp : p.tp;
  h.dense_layer = shard_layer(m, params.dense_layer, p.tp, p.ep, etp, false);
  if (m.is_moe()) h.moe_layer = shard_layer(m, params.moe_layer, p.tp, p.ep, etp, true);
  h.mamba_layer = shard_layer(m, params.mamba_layer, p.tp, p.ep, etp, false);
  h.attention_layer = shard_layer(m, params.attention_layer, p.tp, p.ep, etp, false);
  const std::int64_t word = detail::size_div(params.word_embeddings, p.tp);
  h.embedding = word + params.position_embeddings + params.embedding_norm;
  h.output = params.final_norm + detail::size_div(params.output_layer, p.tp);
  if (m.tie_embeddings && p.pp > 1) {
    h.output += traits_of(job.training.framework).tied_embedding_module ? h.embedding : word;
  }
  if (params.num_mtp_layers > 0) {
    // §1.8: a layer like the last one, the column-parallel 2h → h projection and three norms.
    const bool moe = m.is_moe_layer(m.num_layers - 1);
    const layer_shard layer = moe ? h.moe_layer : h.dense_layer;
    const std::int64_t own = 3 * (params.final_norm > 0 ? params.final_norm : m.hidden_size) +
                             detail::size_div(2 * m.hidden_size * m.hidden_size, p.tp);
    h.mtp = {params.num_mtp_layers * (layer.dense + own), params.num_mtp_layers * layer.expert};
  }
  return h;
}

stage_split split_layers(std::int64_t num_layers, const parallel_config& p, framework_kind fw,
                         std::int64_t layers_per_chunk) {
  stage_split s;
  const std::int64_t pp = p.pp;
  if (pp < 1 || num_layers < 1) return s;
  if (p.first_stage_layers >= 0 || p.last_stage_layers >= 0) {
    const std::int64_t first_n = std::max<std::int64_t>(0, p.first_stage_layers);
    const std::int64_t last_n = std::max<std::int64_t>(0, p.last_stage_layers);
    const std::int64_t middle_stages = pp - (p.first_stage_layers >= 0) - (p.last_stage_layers >= 0);
    const std::int64_t rest = num_layers - first_n - last_n;
    if (pp < 2 || rest < 0 || (middle_stages == 0 && rest != 0) || (middle_stages > 0 && rest % middle_stages != 0)) {
      return s;
    }
    s.middle = middle_stages > 0 ? rest / middle_stages : 0;
    s.first = p.first_stage_layers >= 0 ? first_n : s.middle;
    s.last = p.last_stage_layers >= 0 ? last_n : s.middle;
    // Interleaved with uneven ends (Megatron-Core transformer_config.py): every rank's layers split
    // evenly over its model chunks.
    if (p.vpp > 1 && (s.first % p.vpp != 0 || s.last % p.vpp != 0 || (middle_stages > 0 && s.middle % p.vpp != 0))) {
      return s;
    }
  } else if (p.vpp > 1) {
    if (layers_per_chunk == 0) {
      if (pp < 2 || num_layers % pp != 0 || (num_layers / pp) % p.vpp != 0) return s;
      layers_per_chunk = num_layers / pp / p.vpp;
    }
    s.first = s.middle = s.last = layers_per_chunk * p.vpp;
  } else {
    // BLOOM's embedding-as-stage: each embedding takes one layer slot of the end ranks.
    const std::int64_t emb = p.embedding_as_stage ? 1 : 0;
    const std::int64_t items = num_layers + 2 * emb;
    if (traits_of(fw).uneven_pipeline_split) {
      // partition_uniform: ceil-sized chunks, the last rank takes what is left (deepspeed_items).
      s.middle = detail::ceil_div(items, pp);
      if (items - s.middle * (pp - 1) < 1) return s;  // a rank left without items
      s.last = items - s.middle * (pp - 1) - emb;
    } else {
      if (items % pp != 0) return s;
      s.middle = items / pp;
      s.last = s.middle - emb;
    }
    s.first = s.middle - emb - (pp == 1 ? emb : 0);
    if (pp == 1) s.last = s.first;
  }
  s.valid = s.first >= 1 && s.last >= 1 && (pp <= 2 || s.middle >= 1);
  return s;
}

std::int64_t deepspeed_items(std::int64_t items, std::int64_t parts, std::int64_t rank) {
  const std::int64_t chunk = detail::ceil_div(items, parts);
  const std::int64_t begin = std::min(chunk * rank, items);
  const std::int64_t end = std::min(chunk * (rank + 1), items);
  return end - begin;
}

namespace {

// Sources: Megatron-LM arguments.py (distributed optimizer = ZeRO-1; --sequence-parallel,
// --num-layers-per-virtual-pipeline-stage; gradient_accumulation_fusion), DeepSpeed
// runtime/pipe/engine.py (ZeRO ≤ 1 with pipelines), runtime/utils.py partition_uniform,
// runtime/zero/config.py (reduce_bucket_size = allgather_bucket_size = 5e8), activation_checkpointing
// (RNG state save/restore per layer: 2.5 ms fitted on seeds/000, §5.9); PyTorch FSDP (NO_SHARD,
// SHARD_GRAD_OP, FULL_SHARD; no pipeline here). Attention: Megatron-Core's default
// --transformer-impl transformer_engine runs TE's fused attention (--attention-backend auto);
// PyTorch's scaled_dot_product_attention picks its flash kernel; Megatron-DeepSpeed (BLOOM) ran the
// unfused core.
constexpr std::array<framework_traits, 3> kFrameworks = {{
    {framework_kind::megatron, "megatron", {true, true, false, false}, {true, true, false, false}, true, true, false,
     false, 0, 0.0, true, true},
    {framework_kind::deepspeed, "deepspeed", {true, true, true, true}, {true, true, false, false}, false, false, true,
     true, 500'000'000, 2.5e-3, false, false},
    {framework_kind::fsdp, "fsdp", {true, false, true, true}, {false, false, false, false}, false, false, false, false,
     0, 0.0, false, true},
}};

}  // namespace

const framework_traits& traits_of(framework_kind k) {
  const framework_traits& t = kFrameworks[static_cast<std::size_t>(k)];
  TRAINPLAN_CHECK(t.kind == k);
  return t;
}

namespace {

/// The name of `k` in a flag's name table, or `otherwise` for the value no flag spells.
template <typename E, std::size_t N>
std::string_view name_in(const std::array<std::pair<const char*, E>, N>& table, E k, std::string_view otherwise) {
  for (const auto& [name, value] : table)
    if (value == k) return name;
  return otherwise;
}

}  // namespace

std::string_view to_string(fp8_format k) { return name_in(kFp8FormatNames, k, "none"); }
std::string_view to_string(fp8_recipe k) { return name_in(kFp8RecipeNames, k, "?"); }
std::string_view to_string(moe_dispatcher_kind k) { return name_in(kMoeDispatcherNames, k, "framework default"); }

std::string_view to_string(framework_kind k) { return traits_of(k).name; }
std::string_view to_string(recompute_granularity k) {
  switch (k) {
    case recompute_granularity::none: return "none";
    case recompute_granularity::selective: return "selective";
    case recompute_granularity::full: return "full";
  }
  return "?";
}
std::string_view to_string(recompute_method k) {
  return k == recompute_method::uniform ? "uniform" : "block";
}
std::string_view to_string(optimizer_kind k) { return k == optimizer_kind::adam ? "adam" : "sgd"; }

precision_roles roles_of(const training_config& t) {
  precision_roles r;
  r.compute = t.precision;
  const dtype stored = t.precision == dtype::fp32 ? dtype::fp32 : t.precision == dtype::fp16 ? dtype::fp16 : dtype::bf16;
  r.weights = stored;
  r.activations = stored;
  r.master_weights = stored != dtype::fp32;
  r.gradients = t.accumulate_allreduce_grads_in_fp32 ? dtype::fp32 : stored;
  const bool model_dtype_reduce = t.framework == framework_kind::deepspeed && t.zero_stage >= 2;
  r.grad_comm = t.accumulate_allreduce_grads_in_fp32 && !model_dtype_reduce ? dtype::fp32 : stored;
  r.param_comm = t.fp8_param_gather ? dtype::fp8 : stored;
  r.linear = t.fp8 != fp8_format::none ? dtype::fp8 : t.precision;
  r.moments = dtype::fp32;
  return r;
}

std::int64_t job_spec::num_microbatches() const {
  return detail::size_div(training.global_batch_size, training.micro_batch_size * parallel.dp);
}

void finalize_job(job_spec& job) {
  finalize_model(job.model);
  validate_cluster(job.cluster, "cluster");
  if (std::string v = layout_violation(job); !v.empty()) throw input_error(v);
}

namespace {

/// The sizes of the parallel dimensions, the world size and DP, and what TP, CP and EP must divide (§2.1).
std::string size_violation(job_spec& job) {
  [[maybe_unused]] model_spec& m = job.model;
  [[maybe_unused]] parallel_config& p = job.parallel;
  [[maybe_unused]] training_config& t = job.training;

  TRAINPLAN_RETURN_VIOLATION(positive(p.tp, "${parallel.tp}"));
  TRAINPLAN_RETURN_VIOLATION(positive(p.pp, "${parallel.pp}"));
  TRAINPLAN_RETURN_VIOLATION(positive(p.cp, "${parallel.cp}"));
  TRAINPLAN_RETURN_VIOLATION(positive(p.ep, "${parallel.ep}"));
  TRAINPLAN_RETURN_VIOLATION(positive(p.dp, "${parallel.dp}"));
  TRAINPLAN_RETURN_VIOLATION(positive(t.micro_batch_size, "${training.micro_batch_size}"));
  if (t.global_batch_size < 0) TRAINPLAN_RETURN_VIOLATION(positive(t.global_batch_size, "${training.global_batch_size}"));

  std::int64_t mp = 0;
  TRAINPLAN_RETURN_VIOLATION(product(p.tp * p.pp, p.cp, "TP×PP×CP", mp));  // each ≤ 2^20: TP·PP fits
  if (job.num_gpus == 0) TRAINPLAN_RETURN_VIOLATION(product(mp, p.dp, "world size", job.num_gpus));
  TRAINPLAN_RETURN_VIOLATION(positive(job.num_gpus, "${num_gpus}", limits::kMaxGpus));
  if (job.num_gpus % mp != 0) {
    return std::string("world size " + to_string(job.num_gpus) +
                      " (${num_gpus}, or ${cluster.num_nodes} × ${cluster.gpus_per_node}) is not a multiple of TP×PP×CP = " +
                      to_string(p.tp) + "×" + to_string(p.pp) + "×" + to_string(p.cp) + " = " + to_string(mp) +
                      " (${parallel.tp}, ${parallel.pp}, ${parallel.cp})");
  }
  p.dp = job.num_gpus / mp;
  // The nodes the job occupies (a cluster file's size is an upper bound, not the job's).
  job.cluster.num_nodes = detail::ceil_div(job.num_gpus, job.cluster.gpus_per_node);

  TRAINPLAN_RETURN_VIOLATION(divisible(m.num_attention_heads, "${model.num_attention_heads}", p.tp, "${parallel.tp}"));
  TRAINPLAN_RETURN_VIOLATION(divisible(m.num_query_groups, "${model.num_query_groups}", p.tp, "${parallel.tp}"));
  TRAINPLAN_RETURN_VIOLATION(divisible(m.ffn_hidden_size, "${model.ffn_hidden_size}", p.tp, "${parallel.tp}"));
  if (m.is_hybrid()) {
    // MambaMixer's asserts: heads and groups split evenly over TP (§1.10). Mamba's own context
    // parallelism (an all-to-all of heads) is not modelled.
    TRAINPLAN_RETURN_VIOLATION(divisible(m.mamba.num_heads, "${model.mamba.num_heads}", p.tp, "${parallel.tp}"));
    TRAINPLAN_RETURN_VIOLATION(divisible(m.mamba.num_groups, "${model.mamba.num_groups}", p.tp, "${parallel.tp}"));
    if (p.cp > 1) return "${parallel.cp} " + to_string(p.cp) + " with a hybrid model (--hybrid-layer-pattern) is not modelled";
  }
  if (p.sequence_parallel && p.tp == 1) p.sequence_parallel = false;  // Megatron turns it off too
  if (p.sequence_parallel) {
    TRAINPLAN_RETURN_VIOLATION(divisible(m.seq_length / p.cp, "${model.seq_length} / ${parallel.cp}", p.tp,
                      "${parallel.tp} (with ${parallel.sequence_parallel})"));
  }
  if (p.cp > 1) {
    TRAINPLAN_RETURN_VIOLATION(divisible(m.seq_length, "${model.seq_length}", 2 * p.cp, "2 × ${parallel.cp}"));
  }
  if (p.etp > 0 && p.etp != p.tp && !m.is_moe()) {
    return std::string("${parallel.etp} " + to_string(p.etp) + " needs an MoE model (${model.moe.num_experts})");
  }
  if (p.ep > 1 && !m.is_moe()) {
    return std::string("${parallel.ep} " + to_string(p.ep) + " needs an MoE model (${model.moe.num_experts})");
  }
  if (p.etp < 0) return "${parallel.etp} must be a positive integer, got " + to_string(p.etp);
  const std::int64_t etp = expert_tensor_parallel(p);  // 0: = TP, never written back (a search changes TP)
  if (p.moe_dispatcher == moe_dispatcher_kind::framework_default) {
    p.moe_dispatcher = t.framework == framework_kind::megatron ? moe_dispatcher_kind::allgather : moe_dispatcher_kind::alltoall;
  }
  if (m.is_moe()) {
    TRAINPLAN_RETURN_VIOLATION(divisible(m.moe.num_experts, "${model.moe.num_experts}", p.ep, "${parallel.ep}"));
    TRAINPLAN_RETURN_VIOLATION(divisible(m.moe.expert_ffn_hidden_size, "${model.moe.expert_ffn_hidden_size}", etp,
                                         p.etp > 0 ? "${parallel.etp}" : "${parallel.tp} (= expert TP)"));
    // Megatron-Core parallel_state (parallel folding): expert ETP×EP×EDP = TP×CP×DP, a stage's ranks.
    if ((p.tp * p.cp * p.dp) % (etp * p.ep) != 0) {
      return "expert TP × EP (" + to_string(etp) + " × " + to_string(p.ep) + " = " + to_string(etp * p.ep) +
             ", ${parallel.etp} × ${parallel.ep}; expert TP defaults to TP) must divide the ranks of a pipeline "
             "stage, TP × CP × DP = " + to_string(p.tp) + " × " + to_string(p.cp) + " × " + to_string(p.dp) + " = " +
             to_string(p.tp * p.cp * p.dp) + " (Megatron-Core's expert parallel groups)";
    }
  }

  return {};
}

std::string batch_range(std::int64_t global_batch_size) {
  if (global_batch_size > kMaxGlobalBatch) {
    return "${training.global_batch_size} must be at most " + to_string(kMaxGlobalBatch) + " samples (2^30), got " +
           to_string(global_batch_size);
  }
  return {};
}

/// The batch against MBS × DP (§2.3).
std::string batch_violation(job_spec& job) {
  [[maybe_unused]] model_spec& m = job.model;
  [[maybe_unused]] parallel_config& p = job.parallel;
  [[maybe_unused]] training_config& t = job.training;
  // Batch (§2.3).
  TRAINPLAN_RETURN_VIOLATION(batch_range(t.global_batch_size));
  if (t.global_batch_size == 0) t.global_batch_size = t.micro_batch_size * p.dp;
  std::int64_t per_step = 0;
  TRAINPLAN_RETURN_VIOLATION(product(t.micro_batch_size, p.dp, "MBS×DP", per_step));
  if (t.global_batch_size % per_step != 0) {
    return std::string("${training.global_batch_size} (" + to_string(t.global_batch_size) +
                      ") must be a multiple of ${training.micro_batch_size} × DP (" + to_string(t.micro_batch_size) + " × " +
                      to_string(p.dp) + " = " + to_string(per_step) + ")");
  }

  return {};
}

}  // namespace

void resolve_attention(training_config& t) {
  switch (t.attention) {
    case training_config::attention_backend::framework_default: t.flash_attention = traits_of(t.framework).fused_attention; break;
    case training_config::attention_backend::fused: t.flash_attention = true; break;
    case training_config::attention_backend::unfused: t.flash_attention = false; break;
  }
}

namespace {

std::string interleaving_microbatch_violation(const job_spec& job) {
  return std::string("the interleaved schedule needs the number of micro-batches (${training.global_batch_size} / "
                     "(${training.micro_batch_size} × DP) = " + to_string(job.num_microbatches()) +
                     ") to be a multiple of ${parallel.pp} (" + to_string(job.parallel.pp) + ")");
}

/// Explicit first/last stages (Megatron's --decoder-first/last-pipeline-num-layers): PP > 1, not with the
/// embedding slots, and the rest splitting evenly over the middle stages (§2.2). "" when they hold.
std::string uneven_split_violation(const job_spec& job) {
  const model_spec& m = job.model;
  const parallel_config& p = job.parallel;
  if (p.pp < 2) return std::string("${parallel.first_stage_layers} / ${parallel.last_stage_layers} need ${parallel.pp} > 1");
  if (p.embedding_as_stage) {
    return std::string("${parallel.embedding_as_stage} with ${parallel.first_stage_layers} / ${parallel.last_stage_layers}: choose one");
  }
  const std::int64_t first = std::max<std::int64_t>(0, p.first_stage_layers);
  const std::int64_t last = std::max<std::int64_t>(0, p.last_stage_layers);
  const std::int64_t middle_stages = p.pp - (p.first_stage_layers >= 0) - (p.last_stage_layers >= 0);
  const std::int64_t rest = m.num_layers - first - last;
  if (rest < 0 || (middle_stages == 0 && rest != 0) || (middle_stages > 0 && rest % middle_stages != 0)) {
    return std::string("${model.num_layers} (" + to_string(m.num_layers) +
                       ") minus ${parallel.first_stage_layers} and ${parallel.last_stage_layers} must split "
                       "evenly over the other " + to_string(middle_stages) + " pipeline stages");
  }
  return {};
}

/// Interleaving with uneven first/last stages, as Megatron-Core allows it (transformer_config.py
/// __post_init__): each end's layers, and the middle stages', divisible by the model chunks per rank.
std::string uneven_interleaving_violation(job_spec& job) {
  const model_spec& m = job.model;
  parallel_config& p = job.parallel;
  TRAINPLAN_RETURN_VIOLATION(uneven_split_violation(job));
  const std::int64_t first = std::max<std::int64_t>(0, p.first_stage_layers);
  const std::int64_t last = std::max<std::int64_t>(0, p.last_stage_layers);
  const std::int64_t middle_stages = p.pp - (p.first_stage_layers >= 0) - (p.last_stage_layers >= 0);
  const stage_split split = split_layers(m.num_layers, p, job.training.framework);
  auto chunks = [&](std::int64_t layers, const char* which) {
    return std::string("the number of layers at the " + std::string(which) + " stage (" + to_string(layers) +
                       ") must be divisible by ${parallel.vpp} (" + to_string(p.vpp) +
                       "), Megatron-Core's rule for interleaving with an uneven split");
  };
  if (p.first_stage_layers >= 0 && first % p.vpp != 0) return chunks(first, "first");
  if (p.last_stage_layers >= 0 && last % p.vpp != 0) return chunks(last, "last");
  if (middle_stages > 0 && split.middle % p.vpp != 0) return chunks(split.middle, "middle");
  TRAINPLAN_CHECK(split.valid);
  p.num_layers_per_virtual_stage = 0;  // not one number: each rank's layers / vpp (pipeline_layout)
  if (job.num_microbatches() % p.pp != 0) return interleaving_microbatch_violation(job);
  return {};
}

/// The pipeline split and interleaving (§2.2); derives layers per chunk and VPP.
std::string pipeline_violation(job_spec& job) {
  [[maybe_unused]] model_spec& m = job.model;
  [[maybe_unused]] parallel_config& p = job.parallel;
  [[maybe_unused]] training_config& t = job.training;
  const bool uneven = p.first_stage_layers >= 0 || p.last_stage_layers >= 0;
  if (uneven && p.vpp > 1) return uneven_interleaving_violation(job);
  if (uneven && p.num_layers_per_virtual_stage > 0) {
    return std::string("${parallel.num_layers_per_virtual_stage} with an uneven split (${parallel.first_stage_layers} / "
                       "${parallel.last_stage_layers}): give the model chunks per rank, ${parallel.vpp}, as Megatron-Core does");
  }
  // Pipeline split (§2.2). Model chunks given as a count (Megatron's
  // --virtual-pipeline-model-parallel-size) become layers per chunk.
  if (p.vpp > 1 && p.num_layers_per_virtual_stage == 0) {
    if (p.pp < 2 || m.num_layers % p.pp != 0 || (m.num_layers / p.pp) % p.vpp != 0) {
      return std::string("${parallel.vpp} " + to_string(p.vpp) +
                        " needs ${model.num_layers} divisible by ${parallel.pp} × it, with PP > 1");
    }
    p.num_layers_per_virtual_stage = m.num_layers / p.pp / p.vpp;
  }
  if (p.num_layers_per_virtual_stage > 0) {
    if (p.pp < 2) {
      return std::string("${parallel.num_layers_per_virtual_stage} needs ${parallel.pp} > 1");
    }
    if (p.embedding_as_stage) {
      return std::string("${parallel.num_layers_per_virtual_stage} with ${parallel.embedding_as_stage} is not modelled");
    }
    TRAINPLAN_RETURN_VIOLATION(divisible(m.num_layers, "${model.num_layers}", p.pp, "${parallel.pp}"));
    TRAINPLAN_RETURN_VIOLATION(divisible(m.num_layers / p.pp, "${model.num_layers} / ${parallel.pp}",
                      p.num_layers_per_virtual_stage, "${parallel.num_layers_per_virtual_stage}"));
    p.vpp = m.num_layers / p.pp / p.num_layers_per_virtual_stage;
    if (p.vpp > 1 && job.num_microbatches() % p.pp != 0) return interleaving_microbatch_violation(job);
  } else {
    p.vpp = 1;
  }
  if (p.first_stage_layers >= 0 || p.last_stage_layers >= 0) {
    TRAINPLAN_RETURN_VIOLATION(uneven_split_violation(job));
  } else if (p.vpp == 1 && !split_layers(m.num_layers, p, t.framework).valid) {
    const std::int64_t items = m.num_layers + (p.embedding_as_stage ? 2 : 0);
    if (t.framework == framework_kind::deepspeed) {
      // DeepSpeed splits unevenly (§2.2); every rank needs at least one transformer layer.
      return std::string("${model.num_layers} (" + to_string(m.num_layers) + ") over ${parallel.pp} (" +
                        to_string(p.pp) + ") leaves a pipeline stage without a transformer layer (DeepSpeed's " +
                        "pipeline needs one per stage)");
    }
    if (items % p.pp != 0) {
      return std::string(std::string("${model.num_layers} (") + to_string(m.num_layers) + (p.embedding_as_stage ? " + 2 embedding slots" : "") +
                        ") must be divisible by ${parallel.pp} (" + to_string(p.pp) +
                        ") without an explicit split (${parallel.first_stage_layers} / ${parallel.last_stage_layers})");
    }
    return std::string("${parallel.embedding_as_stage} leaves the first or last pipeline stage without a transformer layer");
  }
  return {};
}

}  // namespace

std::string model_view_violation(const job_spec& job) {
  TRAINPLAN_RETURN_VIOLATION(positive(job.parallel.tp, "${parallel.tp}"));
  return batch_range(job.training.global_batch_size);
}

std::string layout_violation(job_spec& job) {
  using namespace detail;  // NOLINT(google-build-using-namespace): the training knobs' rules
  for (auto rule : {size_violation, batch_violation, framework_violation, training_violation, sharding_violation,
                    fp8_violation, overlap_violation, pipeline_violation}) {
    TRAINPLAN_RETURN_VIOLATION(rule(job));
  }
  return {};
}

std::vector<stage_layout> pipeline_layout(const job_spec& job) {
  std::vector<stage_layout> stages;
  pipeline_layout(job, stages);
  return stages;
}

void pipeline_layout(const job_spec& job, std::vector<stage_layout>& stages) {
  const model_spec& m = job.model;
  const parallel_config& p = job.parallel;
  stages.assign(static_cast<std::size_t>(p.pp), stage_layout{});
  // Counts the layers of [first, first + n) by kind into `s`.
  auto count = [&](std::int64_t first, std::int64_t n, stage_layout& s) {
    for (std::int64_t i = first; i < first + n; ++i) ++s.kinds[static_cast<std::size_t>(m.kind_of_layer(i))];
  };
  const stage_split split = split_layers(m.num_layers, p, job.training.framework, p.num_layers_per_virtual_stage);
  TRAINPLAN_CHECK(split.valid);  // finalize_job refused every invalid split
  std::int64_t next = 0;
  for (std::int64_t r = 0; r < p.pp; ++r) {
    stage_layout& s = stages[static_cast<std::size_t>(r)];
    s.stage = r;
    s.num_layers = split.of(r, p.pp);
    if (p.vpp > 1) {
      // Chunk c of rank r holds k_r = layers_r / v layers starting at c·R + Σ_{r' < r} k_r', with R = Σ k_r
      // the layers of one round over the ranks (Megatron-Core get_transformer_layer_offset; with an even
      // split, (c·p + r)·k).
      const std::int64_t k = s.num_layers / p.vpp;
      std::int64_t before = 0, round = 0;
      for (std::int64_t q = 0; q < p.pp; ++q) {
        const std::int64_t kq = split.of(q, p.pp) / p.vpp;
        round += kq;
        if (q < r) before += kq;
      }
      s.first_layer = before;
      for (std::int64_t c = 0; c < p.vpp; ++c) count(c * round + before, k, s);
    } else {
      s.first_layer = next;
      count(next, s.num_layers, s);
      next += s.num_layers;
    }
  }
  stages.front().has_embedding = true;
  stages.back().has_output = true;
}

}  // namespace trainplan
