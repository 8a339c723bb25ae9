// The layout rules, the precision roles and the resolved facts of a job (docs/formulas.md §2).
#include "trainplan/core/job/job.h"

#include <algorithm>
#include <string>

#include "trainplan/core/base/checked.h"
#include "job/job_rules.h"
#include "trainplan/core/base/error.h"
#include "trainplan/core/base/limits.h"
#include "trainplan/core/job/layout.h"

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

std::string_view to_string(recompute_granularity k) {
  switch (k) {
    case recompute_granularity::none: return "none";
    case recompute_granularity::selective: return "selective";
    case recompute_granularity::full: return "full";
    case recompute_granularity::selective_op: return "op";
  }
  return "?";
}
std::vector<std::string_view> recompute_module_names(std::uint8_t bits) {
  if (bits == 0) bits = static_cast<std::uint8_t>(recompute_module::core_attn);
  std::vector<std::string_view> out;
  for (const auto& [name, m] : kRecomputeModuleNames)
    if ((bits & static_cast<std::uint8_t>(m)) != 0) out.emplace_back(name);
  return out;
}
std::string_view to_string(recompute_method k) {
  return k == recompute_method::uniform ? "uniform" : "block";
}
std::string_view to_string(optimizer_kind k) { return k == optimizer_kind::adam ? "adam" : "sgd"; }

void resolve_megatron_fsdp(training_config& t) {
  if (!t.megatron_fsdp) return;
  // arguments.py validate_args: Megatron-FSDP v1 runs the distributed optimizer; its sharding strategy is
  // the stage, and optim (1) shards the optimizer state alone: the distributed optimizer's row (§3.1).
  t.distributed_optimizer = true;
  t.zero_stage = t.megatron_fsdp_stage;
  if (t.megatron_fsdp_stage == 1) t.megatron_fsdp = false;
}

void apply_framework_defaults(training_config& t) {
  // megatron/training/arguments.py: --no-bias-swiglu-fusion (store_false) leaves bias_swiglu_fusion on,
  // which Megatron-Core's MLP runs (bias_activation_fusion); legacy models' ParallelMLP, Megatron-DeepSpeed
  // and PyTorch models (torchtitan's silu(w1(x)) * w3(x)) run it unfused.
  // A compiled torchtitan block runs silu(w1(x)) * w3(x) as one Inductor kernel (§5.3).
  // §5.1.3: torchtitan's float8 is torchao's dynamic tensorwise scaling (its Float8LinearConfig default).
  if (!t.fp8_scaling_set && t.framework == framework_kind::fsdp) t.fp8_scaling = fp8_recipe::tensorwise;
  if (!t.swiglu_fusion_set) {
    t.bias_swiglu_fusion = (t.framework == framework_kind::megatron && !t.legacy_models) ||
                           (t.framework == framework_kind::fsdp && t.torch_compile);
  }
  switch (t.framework) {
    case framework_kind::megatron:
      resolve_megatron_fsdp(t);
      if (!t.megatron_fsdp) {
        if (t.zero_stage == 1) t.distributed_optimizer = true;
        t.zero_stage = t.distributed_optimizer ? 1 : 0;
      }
      // §5.4: PyTorch's DDP (--DDP-impl torch) all-reduces 25 MiB buckets as the last micro-batch's
      // backward produces them (torch.nn.parallel.DistributedDataParallel, bucket_cap_mb = 25).
      if (t.torch_ddp) {
        t.overlap_grad_reduce = true;
        if (t.bucket_size_bytes == 0 && t.bucket_size_elements == 0) t.bucket_size_bytes = std::int64_t{25} << 20;
      }
      // arguments.py validate_args: bf16 accumulates and all-reduces in fp32 unless --grad-reduce-in-bf16
      // or --main-grads-dtype bf16.
      if (t.precision == dtype::bf16) {
        t.accumulate_allreduce_grads_in_fp32 = !t.grad_reduce_in_bf16 && t.main_grads_dtype == dtype::fp32;
      }
      break;
    case framework_kind::deepspeed:
      // DeepSpeed's data_types.grad_accum_dtype. Unset, bf16 accumulates in fp32, as BLOOM's
      // Megatron-DeepSpeed ran it (BF16_Optimizer; docs/formulas.md §3.1 says which version this is).
      if (t.grad_accum_dtype_set) {
        t.accumulate_allreduce_grads_in_fp32 = t.grad_accum_dtype == dtype::fp32 && t.precision != dtype::fp32;
      } else if (t.precision == dtype::bf16) {
        t.accumulate_allreduce_grads_in_fp32 = true;
      }
      break;
    case framework_kind::fsdp:
      t.accumulate_allreduce_grads_in_fp32 = true;  // FSDP keeps fp32 sharded parameters and gradients
      break;
  }
}

bool runs_bf16_optimizer(const training_config& t) {
  // DeepSpeed runtime/engine.py _do_optimizer_sanity_check: bf16 weights with fp32 gradient accumulation
  // run BF16_Optimizer at stage 0, and at stage 1 without CPU offload; at stage 0 a pipeline runs it with
  // bf16 accumulation too (the rules refuse bf16 accumulation at stage 0 without one).
  if (t.framework != framework_kind::deepspeed || t.precision != dtype::bf16) return false;
  if (t.zero_stage == 0) return true;
  return t.zero_stage == 1 && t.accumulate_allreduce_grads_in_fp32 && !t.offload_optimizer;
}

const optimizer_row& optimizer_of(const training_config& t) {
  // Without a pipeline: a pipelined row (FSDP2 under pipelining) keeps the same roles as its stage's row.
  const optimizer_row* row = find_optimizer_row(t.framework, t.zero_stage, runs_bf16_optimizer(t), 1);
  TRAINPLAN_CHECK_MSG(row != nullptr, "no optimizer row for the framework and ZeRO stage (the rules allow only these)");
  return *row;
}

precision_roles roles_of(const training_config& t, const optimizer_row& row) {
  precision_roles r;
  r.compute = t.precision;
  const dtype stored = t.precision == dtype::fp32 ? dtype::fp32 : t.precision == dtype::fp16 ? dtype::fp16 : dtype::bf16;
  r.weights = stored;
  r.activations = stored;
  r.master_weights = stored != dtype::fp32;
  r.gradients = t.accumulate_allreduce_grads_in_fp32 ? dtype::fp32 : stored;
  r.grad_comm = row.reduces_in == reduce_dtype::model ? stored : r.gradients;
  r.param_comm = t.fp8_param_gather ? dtype::fp8 : stored;
  r.linear = t.fp8 != fp8_format::none ? dtype::fp8 : t.precision;
  r.moments = dtype::fp32;
  r.master_bytes = 4;
  r.moment_bytes = (t.optimizer == optimizer_kind::adam ? 2.0 : 1.0) * 4;
  if (t.precision_aware_optimizer) {
    // optimizer_config.py use_precision_aware_optimizer_no_fp8_or_ds_fp8: FusedAdam keeps the master
    // weights (master_weight_dtype = main_params_dtype) unless FP8 with a recipe other than delayed
    // scaling and an fp32 master, which Megatron-Core keeps itself (fp32). FusedAdam's
    // store_param_remainders (on from TE 2.1) stores an fp32 master of a bf16 weight as its low 16 bits.
    const bool te_master = t.main_params_dtype != dtype::fp32 || t.fp8 == fp8_format::none ||
                           t.fp8_scaling == fp8_recipe::delayed || t.offload_optimizer;
    if (t.main_params_dtype == dtype::fp16) r.master_bytes = 2;
    else if (te_master && stored == dtype::bf16) r.master_bytes = 2;
    r.moment_bytes = static_cast<double>(bytes_of(t.exp_avg_dtype) + bytes_of(t.exp_avg_sq_dtype));
  }
  return r;
}

precision_roles roles_of(const training_config& t) { return roles_of(t, optimizer_of(t)); }

namespace {

/// NCCL communicators one GPU holds buffers for (§3.8): the default (world) group, and each group of
/// size > 1 it runs collectives in — TP, CP, DP×CP (its shard group and, with HSDP, the replica group),
/// the expert groups where they differ from those, PP (DeepSpeed's pipeline engine opens one per
/// neighbour), the TP group of a pipeline's scatter/gather, and the tied-embedding group on the end
/// stages.
int communicators_of(const job_spec& job, const resolved_job& r, bool end_stage) {
  const parallel_config& p = job.parallel;
  const bool deepspeed = job.training.framework == framework_kind::deepspeed;
  int n = 1;
  n += p.tp > 1;
  n += p.cp > 1;
  n += p.dp * p.cp > 1;          // the gradients' DP×CP group
  n += 2 * (r.dp_replicas > 1);  // HSDP: its shard and replica groups
  n += p.ep > 1;
  n += job.model.is_moe() && p.ep > 1 && r.expert_dp > 1;  // expert-DP differs from DP×CP only with EP
  n += job.model.is_moe() && r.etp > 1 && r.etp != p.tp;   // expert TP differs from TP only when given
  n += p.pp > 1 ? (deepspeed ? 2 : 1) : 0;
  n += p.pp > 1 && p.tp > 1;
  n += end_stage && job.model.tie_embeddings && p.pp > 1;
  return n;
}

std::string_view split_rule_of(const job_spec& job) {
  const parallel_config& p = job.parallel;
  if (!p.layout_stages.empty()) return "Megatron-Core's custom pipeline layout";
  if (p.first_stage_layers >= 0 || p.last_stage_layers >= 0) {
    return p.vpp > 1 ? "Megatron-Core's explicit first/last stages, interleaved" : "Megatron-Core's explicit first/last stages";
  }
  if (p.vpp > 1) return "even, interleaved (Megatron-Core)";
  if (p.embedding_as_stage) return "with the embeddings as layer slots (BLOOM)";
  if (job.training.framework == framework_kind::fsdp && p.account_embedding_in_split && p.account_loss_in_split) {
    return "even, the embedding and the output each weighing a layer (torchtitan's generate_llm_fqn_per_model_part)";
  }
  if (p.account_embedding_in_split || p.account_loss_in_split) {
    return p.account_embedding_in_split && p.account_loss_in_split ? "even, the embedding and the loss counted as layers (Megatron-Core)"
           : p.account_embedding_in_split                          ? "even, the embedding counted as a layer (Megatron-Core)"
                                                                    : "even, the loss counted as a layer (Megatron-Core)";
  }
  if (traits_of(job.training.framework).uneven_pipeline_split) return "DeepSpeed's partition_uniform";
  return "even";
}

}  // namespace

void resolve_job(job_spec& job) {
  const parallel_config& p = job.parallel;
  const training_config& t = job.training;
  resolved_job& r = job.resolved;
  // Null only for a candidate the search or `shapes` prices before its rules run (a ZeRO stage its
  // framework lacks is refused then): its layer kernels read the tokens and roles, never the row.
  r.optimizer = find_optimizer_row(t.framework, t.zero_stage, runs_bf16_optimizer(t), p.pp);
  r.roles = roles_of(t, r.optimizer != nullptr ? *r.optimizer : *find_optimizer_row(t.framework, 0, false, 1));
  r.seq_per_rank = job.model.seq_length / p.cp;
  r.tokens = t.micro_batch_size * r.seq_per_rank;
  r.dp_replicas = t.dp_replicas;
  r.dp_shards = p.dp * p.cp / t.dp_replicas;
  r.etp = expert_tensor_parallel(p);
  r.expert_dp = expert_data_parallel(p);
  r.expert_dp_shards = r.expert_dp / t.dp_replicas;
  r.split = split_layers(job.model.num_layers, p, t.framework, p.num_layers_per_virtual_stage);
  r.split_rule = split_rule_of(job);
  r.communicators = communicators_of(job, r, false);
  r.end_stage_communicators = communicators_of(job, r, true);
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
    if (p.cp > 1) return "${parallel.cp} " + to_string(p.cp) + " with a hybrid model (${model.hybrid_pattern}) is not modelled";
  }
  if (p.sequence_parallel && p.tp == 1) p.sequence_parallel = false;  // Megatron turns it off too
  if (p.sequence_parallel) {
    TRAINPLAN_RETURN_VIOLATION(divisible(m.seq_length / p.cp, "${model.seq_length} / ${parallel.cp}", p.tp,
                      "${parallel.tp} (with ${parallel.sequence_parallel})"));
  }
  if (p.cp > 1) {
    TRAINPLAN_RETURN_VIOLATION(divisible(m.seq_length, "${model.seq_length}", 2 * p.cp, "2 × ${parallel.cp}"));
  }
  if (p.cp_comm == cp_comm_kind::framework_default) p.cp_comm = traits_of(t.framework).cp_comm_default;
  if (p.cp > 1 && p.cp_comm == cp_comm_kind::a2a && traits_of(t.framework).cp_attention == cp_attention_kind::torch_ring) {
    return "${parallel.cp_comm} a2a with ${training.framework} " + std::string(traits_of(t.framework).name) +
           ": PyTorch's context_parallel passes K/V by an all-gather or round a ring (torchtitan's "
           "context_parallel_rotate_method allgather or alltoall: all_gather or p2p); a2a is Transformer Engine's";
  }
  if (p.cp > 1 && p.cp_comm == cp_comm_kind::a2a) {
    // Each rank attends for its share of the heads (Transformer Engine asserts heads % CP == 0).
    TRAINPLAN_RETURN_VIOLATION(divisible(m.num_attention_heads / p.tp, "${model.num_attention_heads} / ${parallel.tp}",
                                         p.cp, "${parallel.cp} (with ${parallel.cp_comm} a2a)"));
    TRAINPLAN_RETURN_VIOLATION(divisible(std::max<std::int64_t>(1, m.num_query_groups / p.tp),
                                         "${model.num_query_groups} / ${parallel.tp}", p.cp,
                                         "${parallel.cp} (with ${parallel.cp_comm} a2a)"));
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
  if (t.gradient_accumulation_steps > 0) {
    // DeepSpeed (runtime/config.py _configure_train_batch_size): train_batch_size = micro × accumulation ×
    // world (data-parallel) size, derived when not given and asserted when it is.
    std::int64_t per_step = 0, batch = 0;
    TRAINPLAN_RETURN_VIOLATION(product(t.micro_batch_size, p.dp, "MBS×DP", per_step));
    TRAINPLAN_RETURN_VIOLATION(product(per_step, t.gradient_accumulation_steps, "MBS×accumulation×DP", batch));
    TRAINPLAN_RETURN_VIOLATION(batch_range(batch));
    if (t.global_batch_size == 0) {
      t.global_batch_size = batch;
    } else if (t.global_batch_size != batch) {
      return "${training.global_batch_size} (" + to_string(t.global_batch_size) + ") must equal ${training.micro_batch_size} × " +
             "${training.gradient_accumulation_steps} × DP (" + to_string(t.micro_batch_size) + " × " +
             to_string(t.gradient_accumulation_steps) + " × " + to_string(p.dp) + " = " + to_string(batch) +
             "): DeepSpeed's batch check";
    }
  }
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
  using backend = training_config::attention_backend;
  const framework_traits& f = traits_of(t.framework);
  t.flash_attention = t.attention == backend::framework_default ? f.fused_attention : t.attention != backend::unfused;
  t.fa2_attention = t.flash_attention && (t.attention == backend::flash2 ||
                                          ((t.attention == backend::framework_default || t.attention == backend::fused) &&
                                           f.fa2_attention));
}

namespace {

/// Megatron's checks on the interleaved schedule's micro-batch groups (schedules.py
/// forward_backward_pipelining_with_interleaving, §5.4): a group G in [PP, m] (PP unless
/// --microbatch-group-size-per-virtual-pipeline-stage), and a last group of 0 or at least PP; with G = PP,
/// m a multiple of PP. Empty when they hold.
std::string interleaving_microbatch_violation(const job_spec& job) {
  const std::int64_t m = job.num_microbatches(), pp = job.parallel.pp, given = job.parallel.microbatch_group_size;
  const std::int64_t g = given > 0 ? given : pp;
  if (given > 0 && (g < pp || g > m)) {
    return "${parallel.microbatch_group_size} (" + to_string(g) + ") must lie between ${parallel.pp} (" + to_string(pp) +
           ") and the micro-batches (" + to_string(m) + ") (Megatron's check)";
  }
  const std::int64_t rest = m % g;
  if (rest == 0 || rest >= pp) return {};
  if (given <= 0) {
    return std::string("the interleaved schedule needs the number of micro-batches (${training.global_batch_size} / "
                       "(${training.micro_batch_size} × DP) = " + to_string(m) +
                       ") to be a multiple of ${parallel.pp} (" + to_string(pp) + ")");
  }
  return "the micro-batches (" + to_string(m) + ") over ${parallel.microbatch_group_size} (" + to_string(g) + ") leave " +
         to_string(rest) + ", fewer than ${parallel.pp} (" + to_string(pp) + "): Megatron refuses the dependency bubbles";
}

/// The message of a split that fails (§2.2), from the reason split_layers gives.
std::string split_message(const job_spec& job, const stage_split& split) {
  const model_spec& m = job.model;
  const parallel_config& p = job.parallel;
  switch (split.failure) {
    case split_failure::ends_need_pp:
      return "${parallel.first_stage_layers} / ${parallel.last_stage_layers} need ${parallel.pp} > 1";
    case split_failure::rest_uneven:
      return "${model.num_layers} (" + to_string(m.num_layers) +
             ") minus ${parallel.first_stage_layers} and ${parallel.last_stage_layers} must split evenly over the "
             "other " + to_string(split.middle_stages) + " pipeline stages";
    case split_failure::end_not_in_chunks: {
      constexpr const char* kWhich[] = {"first", "middle", "last"};
      const std::int64_t layers = split.failed_end == 0 ? split.first : split.failed_end == 2 ? split.last : split.middle;
      return "the number of layers at the " + std::string(kWhich[split.failed_end]) + " stage (" + to_string(layers) +
             ") must be divisible by ${parallel.vpp} (" + to_string(p.vpp) +
             "), Megatron-Core's rule for interleaving with an uneven split";
    }
    case split_failure::chunks_uneven:
      return "${parallel.vpp} " + to_string(p.vpp) + " needs ${model.num_layers} divisible by ${parallel.pp} × it, with PP > 1";
    case split_failure::layers_not_divisible:
      if (job.training.framework == framework_kind::fsdp) {
        return "${model.num_layers} (" + to_string(m.num_layers) + " + 1 embedding + 1 output) must be divisible by ${parallel.pp} (" +
               to_string(p.pp) + "): torchtitan's split (generate_llm_fqn_per_model_part) gives the remainder to the first "
               "stages, which is not modelled";
      }
      return std::string("${model.num_layers} (") + to_string(m.num_layers) +
             (p.embedding_as_stage ? " + 2 embedding slots" : "") + (p.account_embedding_in_split ? " + 1 embedding" : "") +
             (p.account_loss_in_split ? " + 1 loss" : "") + ") must be divisible by ${parallel.pp} (" +
             to_string(p.pp) + ") without an explicit split (${parallel.first_stage_layers} / ${parallel.last_stage_layers})";
    case split_failure::stage_without_layer:
      if (job.training.framework == framework_kind::deepspeed) {
        // DeepSpeed splits unevenly (§2.2); every rank needs at least one transformer layer.
        return "${model.num_layers} (" + to_string(m.num_layers) + ") over ${parallel.pp} (" + to_string(p.pp) +
               ") leaves a pipeline stage without a transformer layer (DeepSpeed's pipeline needs one per stage)";
      }
      return p.embedding_as_stage ? "${parallel.embedding_as_stage} leaves the first or last pipeline stage without a transformer layer"
                                  : "the embedding or loss slot leaves the first or last pipeline stage without a transformer layer";
    case split_failure::none: break;
  }
  return {};
}

/// Megatron-Core's --pipeline-model-parallel-layout (§2.2.1): its own checks (training/arguments.py
/// validate_args; transformer_config.py __post_init__; PipelineParallelLayerLayout.validate_layer_layout),
/// then what is not modelled. Derives VPP from the stages.
std::string custom_layout_violation(job_spec& job) {
  const model_spec& m = job.model;
  parallel_config& p = job.parallel;
  const std::vector<layout_stage>& st = p.layout_stages;
  const std::string field = "${parallel.pipeline_layout}";
  // torchtitan places its stages the same way (pipelining_utils.py stage_ids_this_rank, style "loop": stage
  // i on rank i mod PP), from split points or module FQNs per model part; DeepSpeed's pipeline does not.
  if (job.training.framework == framework_kind::deepspeed) {
    return field + " is Megatron-Core's (and torchtitan's split points); not with ${training.framework} deepspeed";
  }
  if (p.first_stage_layers >= 0 || p.last_stage_layers >= 0 || p.account_embedding_in_split || p.account_loss_in_split) {
    const std::string other = p.first_stage_layers >= 0 ? "${parallel.first_stage_layers}"
                              : p.last_stage_layers >= 0 ? "${parallel.last_stage_layers}"
                              : p.account_embedding_in_split ? "${parallel.account_embedding_in_split}"
                                                             : "${parallel.account_loss_in_split}";
    return field + " cannot be set with " + other + " (Megatron-Core raises ValueError: the layout places every layer)";
  }
  if (p.embedding_as_stage) return field + " with ${parallel.embedding_as_stage}: choose one";
  if (p.num_layers_per_virtual_stage > 0) {
    return field + " with ${parallel.num_layers_per_virtual_stage}: no more than one of them can be set (Megatron's check); "
           "the layout gives the model chunks";
  }
  const auto n = static_cast<std::int64_t>(st.size());
  if (n % p.pp != 0) {
    return "the " + to_string(n) + " stages of " + field + " must be divisible by ${parallel.pp} (" + to_string(p.pp) + ")";
  }
  const std::int64_t v = n / p.pp;
  // More model chunks per rank than the model has layers (E, t, m, L) leaves all but a few empty: not a
  // layout anyone runs, and one that would only cost time and memory to step through.
  if (v > m.num_layers + m.mtp_num_layers + 2) {
    return field + " gives " + to_string(v) + " model chunks per rank, more than the model's " +
           to_string(m.num_layers + m.mtp_num_layers + 2) + " layers with the embedding and loss: not modelled";
  }
  if (p.vpp > 1 && p.vpp != v) {
    return "${parallel.vpp} (" + to_string(p.vpp) + ") conflicts with " + field + ": its " + to_string(n) +
           " stages over ${parallel.pp} (" + to_string(p.pp) + ") are " + to_string(v) + " model chunks per rank";
  }
  std::int64_t decoder = 0, mtp = 0, embedding_at = -1, loss_at = -1, mtp_at = -1;
  for (std::int64_t i = 0; i < n; ++i) {
    const layout_stage& s = st[static_cast<std::size_t>(i)];
    decoder += s.decoder;
    mtp += s.mtp;
    if (s.embedding) embedding_at = i;
    if (s.loss) loss_at = i;
    if (s.mtp > 0) {
      if (i / p.pp != v - 1) {
        return field + " puts MTP layers in model chunk " + to_string(i / p.pp) + " of pipeline rank " + to_string(i % p.pp) +
               "; Megatron-Core keeps them in a rank's last chunk";
      }
      if (s.mtp != m.mtp_num_layers) return field + ": all MTP layers must be in one stage (Megatron-Core's check)";
      mtp_at = i;
    }
  }
  if (decoder != m.num_layers) {
    return field + " places " + to_string(decoder) + " transformer layers (t); ${model.num_layers} is " + to_string(m.num_layers);
  }
  if (mtp != m.mtp_num_layers) {
    return field + " places " + to_string(mtp) + " MTP layers (m); ${model.mtp_num_layers} is " + to_string(m.mtp_num_layers);
  }
  // What is not modelled: the embedding off the first rank, the loss off the last (an empty first or
  // last stage moves them), MTP on a rank before the loss's (Megatron-Core's mtp_standalone).
  if (embedding_at % p.pp != 0) {
    return field + " puts the embedding on pipeline rank " + to_string(embedding_at % p.pp) +
           " (its stages before are empty); an embedding off the first rank is not modelled";
  }
  if (loss_at % p.pp != p.pp - 1) {
    return field + " puts the loss on pipeline rank " + to_string(loss_at % p.pp) + " of " + to_string(p.pp) +
           " (its stages after are empty); a loss off the last rank is not modelled";
  }
  if (mtp_at >= 0 && mtp_at % p.pp != p.pp - 1) {
    return field + " puts the MTP layers on pipeline rank " + to_string(mtp_at % p.pp) +
           ", before the loss's (Megatron-Core's standalone MTP stage): not modelled; place m beside L";
  }
  p.vpp = v;
  p.num_layers_per_virtual_stage = 0;  // not one number: each chunk's own (pipeline_layout)
  if (p.vpp > 1) TRAINPLAN_RETURN_VIOLATION(interleaving_microbatch_violation(job));
  return {};
}

/// The pipeline split and interleaving (§2.2); derives layers per chunk and VPP.
std::string pipeline_violation(job_spec& job) {
  const model_spec& m = job.model;
  parallel_config& p = job.parallel;
  const training_config& t = job.training;
  if (!p.layout_stages.empty()) return custom_layout_violation(job);
  const bool uneven = p.first_stage_layers >= 0 || p.last_stage_layers >= 0;
  if (t.framework == framework_kind::fsdp && p.pp > 1 && !uneven) {
    // torchtitan's split (distributed/pipeline_parallel.py generate_llm_fqn_per_model_part, input_weight =
    // output_weight = 1): the embedding and the norm with the output each weigh one transformer layer.
    p.account_embedding_in_split = p.account_loss_in_split = true;
  }
  if (p.account_embedding_in_split || p.account_loss_in_split) {
    // Megatron-Core's own checks (transformer_config.py __post_init__), and what is not modelled.
    const std::string which = p.account_embedding_in_split ? "${parallel.account_embedding_in_split}" : "${parallel.account_loss_in_split}";
    if (t.framework == framework_kind::deepspeed) return which + " is Megatron-Core's; not with ${training.framework} deepspeed";
    if (uneven) {
      return which + " cannot be set with ${parallel.first_stage_layers} / ${parallel.last_stage_layers} (Megatron-Core raises "
             "ValueError)";
    }
    if (p.embedding_as_stage) return which + " with ${parallel.embedding_as_stage}: choose one";
    if (p.num_layers_per_virtual_stage > 0 && p.vpp <= 1) {
      return which + " with ${parallel.num_layers_per_virtual_stage}: give the model chunks per rank, ${parallel.vpp}";
    }
    if (p.vpp > 1) {
      // transformer_block.py: each rank's (L + 1 [+ 1]) / PP layers in its chunks, the first (last) chunk
      // one short; the chunks' layers are not one number (pipeline_layout).
      p.num_layers_per_virtual_stage = 0;
      const stage_split split = split_layers(m.num_layers, p, t.framework);
      if (!split.valid) {
        return "${model.num_layers} (" + to_string(m.num_layers) + (p.account_embedding_in_split ? " + 1 embedding" : "") +
               (p.account_loss_in_split ? " + 1 loss" : "") + ") must be divisible by ${parallel.pp} × ${parallel.vpp} (" +
               to_string(p.pp) + " × " + to_string(p.vpp) + ") with " + which + " (Megatron-Core's check)";
      }
      TRAINPLAN_RETURN_VIOLATION(interleaving_microbatch_violation(job));
      return {};
    }
  }
  if (uneven) {
    // Megatron's --decoder-first/last-pipeline-num-layers; with VPP > 1 every rank's layers divisible by
    // the chunks (Megatron-Core transformer_config.py __post_init__).
    if (p.pp >= 2 && p.embedding_as_stage) {
      return "${parallel.embedding_as_stage} with ${parallel.first_stage_layers} / ${parallel.last_stage_layers}: choose one";
    }
    if (p.num_layers_per_virtual_stage > 0 && p.vpp <= 1) {
      return "${parallel.num_layers_per_virtual_stage} with an uneven split (${parallel.first_stage_layers} / "
             "${parallel.last_stage_layers}): give the model chunks per rank, ${parallel.vpp}, as Megatron-Core does";
    }
    p.num_layers_per_virtual_stage = 0;  // not one number: each rank's layers / vpp (pipeline_layout)
    const stage_split split = split_layers(m.num_layers, p, t.framework);
    if (!split.valid) return split_message(job, split);
    if (p.vpp > 1) TRAINPLAN_RETURN_VIOLATION(interleaving_microbatch_violation(job));
    return {};
  }
  // Model chunks given as a count (Megatron's --virtual-pipeline-model-parallel-size) become layers per
  // chunk.
  if (p.vpp > 1 && p.num_layers_per_virtual_stage == 0) {
    const stage_split split = split_layers(m.num_layers, p, t.framework);
    if (!split.valid) return split_message(job, split);
    p.num_layers_per_virtual_stage = m.num_layers / p.pp / p.vpp;
  }
  if (p.num_layers_per_virtual_stage > 0) {
    if (p.pp < 2) return "${parallel.num_layers_per_virtual_stage} needs ${parallel.pp} > 1";
    if (p.embedding_as_stage) return "${parallel.num_layers_per_virtual_stage} with ${parallel.embedding_as_stage} is not modelled";
    TRAINPLAN_RETURN_VIOLATION(divisible(m.num_layers, "${model.num_layers}", p.pp, "${parallel.pp}"));
    TRAINPLAN_RETURN_VIOLATION(divisible(m.num_layers / p.pp, "${model.num_layers} / ${parallel.pp}",
                                         p.num_layers_per_virtual_stage, "${parallel.num_layers_per_virtual_stage}"));
    p.vpp = m.num_layers / p.pp / p.num_layers_per_virtual_stage;
    if (p.vpp > 1) TRAINPLAN_RETURN_VIOLATION(interleaving_microbatch_violation(job));
  } else {
    p.vpp = 1;
  }
  if (p.vpp == 1) {
    const stage_split split = split_layers(m.num_layers, p, t.framework);
    if (!split.valid) return split_message(job, split);
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
  resolve_job(job);
  return {};
}

}  // namespace trainplan
