// The training knobs' layout rules (src/core/job/job_rules.h): what each framework allows, recomputation
// and memory knobs, FP8, the overlap flags and HSDP, with the frameworks' own argument checks.
#include <array>
#include <string>
#include <utility>

#include "job/job_rules.h"
#include "trainplan/core/job/job.h"

namespace trainplan::detail {

using std::to_string;
using trainplan::to_string;

/// A framework's words when a job asks for a ZeRO stage it does not run (framework.h's rows decide).
struct stage_messages {
  const char* missing;  ///< the framework has no such stage
  const char* no_pp;    ///< not with pipeline parallelism
};
constexpr std::array<stage_messages, 3> kStageMessages = {{
    {" needs ${training.framework} deepspeed or fsdp, or Megatron-FSDP (${training.megatron_fsdp}; without it Megatron-LM "
     "shards only the optimizer: ${training.distributed_optimizer}, i.e. stage 1)",
     ""},
    {"", "DeepSpeed's pipeline engine runs ZeRO stage 0 or 1 only: ${training.zero_stage} "},
    {"${training.framework} fsdp has no ZeRO stage 1: use ${training.zero_stage} 0 (NO_SHARD), 2 (SHARD_GRAD_OP) or 3 "
     "(FULL_SHARD)",
     "${training.framework} fsdp with a pipeline is FSDP2's fully_shard under torch.distributed.pipelining (torchtitan): "
     "${training.zero_stage} 3, not "},
}};

/// What the framework allows and forces: ZeRO stages (framework.h's rows), distributed optimizer,
/// gradient accumulation dtype (§3.1).
std::string framework_violation(job_spec& job) {
  [[maybe_unused]] model_spec& m = job.model;
  [[maybe_unused]] parallel_config& p = job.parallel;
  [[maybe_unused]] training_config& t = job.training;
  resolve_attention(t);
  // §4.2.2: PyTorch's context_parallel dispatches SDPA's fused kernels alone (_attention.py _sdpa_handler).
  if (p.cp > 1 && !t.flash_attention && traits_of(t.framework).cp_attention == cp_attention_kind::torch_ring) {
    return "${training.attention} unfused with ${parallel.cp} " + to_string(p.cp) + " and ${training.framework} " +
           std::string(traits_of(t.framework).name) +
           ": PyTorch's context_parallel runs SDPA's flash, memory-efficient and cuDNN kernels only";
  }
  // Framework and optimizer sharding (§3.1).
  if (t.zero_stage < 0 || t.zero_stage > 3) {
    return std::string("${training.zero_stage} must be 0, 1, 2 or 3, got " + to_string(t.zero_stage));
  }
  const framework_kind fw = t.framework;
  if (t.distributed_optimizer && fw != framework_kind::megatron) {
    return "${training.distributed_optimizer} is Megatron-LM's; with ${training.framework} " + std::string(to_string(fw)) +
           " use ${training.zero_stage}";
  }
  if (t.megatron_fsdp_strategy_set && !t.megatron_fsdp) {
    return "${training.megatron_fsdp_stage} is read by Megatron-FSDP alone: give ${training.megatron_fsdp}";
  }
  if (t.megatron_fsdp) {
    // Megatron-FSDP (§3.1): Megatron-LM's, its strategy the stage; with a pipeline it is not modelled.
    if (fw != framework_kind::megatron) {
      return "${training.megatron_fsdp} is Megatron-LM's; with ${training.framework} " + std::string(to_string(fw)) +
             " use ${training.zero_stage}";
    }
    if (p.pp > 1) return "${training.megatron_fsdp} with ${parallel.pp} > 1 is not modelled";
    resolve_megatron_fsdp(t);  // the stage the checks below read
  }
  const auto z = static_cast<std::size_t>(t.zero_stage);
  const std::array<bool, 4> any = zero_stages_of(fw, 1, t.megatron_fsdp);
  const std::array<bool, 4> at_pp = zero_stages_of(fw, p.pp, t.megatron_fsdp);
  const stage_messages& words = kStageMessages[static_cast<std::size_t>(fw)];
  if (at_pp == std::array<bool, 4>{}) return words.no_pp;  // no stage at all with this pipeline
  if (!any[z]) {
    return fw == framework_kind::megatron ? "${training.zero_stage} " + to_string(t.zero_stage) + words.missing
                                          : std::string(words.missing);
  }
  if (!at_pp[z]) {
    return std::string(words.no_pp) + to_string(t.zero_stage) + " with ${parallel.pp} " + to_string(p.pp);
  }
  if (t.grad_reduce_in_bf16) {
    if (fw != framework_kind::megatron) {
      return "${training.grad_reduce_in_bf16} is Megatron-LM's; DeepSpeed's is ${training.grad_accum_dtype} bf16, and FSDP "
             "reduces in its mixed-precision policy's reduce dtype";
    }
    if (t.precision != dtype::bf16) {
      return "${training.grad_reduce_in_bf16} needs bf16 weights (Megatron reduces fp16 gradients in fp16 already, and fp32 in fp32)";
    }
    if (t.accumulate_allreduce_grads_in_fp32) {
      return "${training.grad_reduce_in_bf16} contradicts ${training.accumulate_allreduce_grads_in_fp32}: give one of them";
    }
  }
  // Megatron-Core's precision-aware optimizer: its own argument checks (optimizer_config.py __post_init__,
  // optimizer/__init__.py get_megatron_optimizer, arguments.py validate_args).
  if (!t.precision_aware_optimizer) {
    for (const auto& [value, key] : {std::pair{t.main_grads_dtype, "${training.main_grads_dtype}"},
                                     {t.main_params_dtype, "${training.main_params_dtype}"},
                                     {t.exp_avg_dtype, "${training.exp_avg_dtype}"},
                                     {t.exp_avg_sq_dtype, "${training.exp_avg_sq_dtype}"}}) {
      if (value != dtype::fp32) {
        return std::string(key) + " can only be fp32 without ${training.precision_aware_optimizer} (Megatron-Core's check)";
      }
    }
  } else {
    if (fw != framework_kind::megatron) {
      return "${training.precision_aware_optimizer} is Megatron-Core's (Transformer Engine's FusedAdam); not with "
             "${training.framework} " + std::string(to_string(fw));
    }
    if (!t.distributed_optimizer && t.zero_stage != 1) {
      return std::string("${training.precision_aware_optimizer} is only supported with ${training.distributed_optimizer} "
                         "(Megatron-Core raises ValueError)");
    }
    if (t.optimizer != optimizer_kind::adam) {
      return std::string("${training.precision_aware_optimizer} is only supported with adam (Megatron-Core's check)");
    }
    if (t.main_grads_dtype == dtype::bf16 && t.accumulate_allreduce_grads_in_fp32) {
      return std::string("${training.main_grads_dtype} bf16 contradicts ${training.accumulate_allreduce_grads_in_fp32}: "
                         "Megatron asserts main grads are fp32 with it");
    }
    if (t.main_grads_dtype == dtype::bf16 && t.precision != dtype::bf16) {
      return std::string("${training.main_grads_dtype} bf16 needs bf16 weights");
    }
  }
  apply_framework_defaults(t);
  switch (fw) {
    case framework_kind::megatron:
    case framework_kind::fsdp:
      break;
    case framework_kind::deepspeed:
      // runtime/engine.py _do_optimizer_sanity_check: what DeepSpeed itself refuses at stage 0.
      if (t.zero_stage == 0 && t.precision == dtype::bf16 && !t.accumulate_allreduce_grads_in_fp32 && p.pp == 1) {
        return "${training.grad_accum_dtype} bf16 with bf16 weights at ${training.zero_stage} 0 needs pipeline parallelism: DeepSpeed "
               "raises \"Bfloat16 wrapper must use a gradient accumulation type of fp32, enable ZeRO to use Bfloat16 "
               "gradient accumulation\"";
      }
      if (t.zero_stage == 0 && t.precision == dtype::fp16 && t.accumulate_allreduce_grads_in_fp32) {
        return "${training.grad_accum_dtype} fp32 with fp16 weights at ${training.zero_stage} 0: DeepSpeed raises \"unsupported mix of "
               "model dtype and gradient accumulation type\"";
      }
      break;
  }
  if (t.offload_optimizer && t.zero_stage == 0 && fw != framework_kind::megatron) {
    return std::string("${training.offload_optimizer} needs ${training.zero_stage} 1 or more with ${training.framework} " + std::string(to_string(fw)));
  }

  return {};
}

namespace {

/// Model chunks per pipeline rank as Megatron's validate_args derives them before these checks: from a
/// custom pipeline layout's stages (PP × VPP of them, arguments.py: num_stages // PP), or from the layers
/// per virtual stage where those are given (pipeline_violation resolves the field later).
std::int64_t chunks_per_rank(const job_spec& job) {
  const parallel_config& p = job.parallel;
  if (!p.layout_stages.empty() && p.pp > 0) return static_cast<std::int64_t>(p.layout_stages.size()) / p.pp;
  if (p.vpp > 1 || p.num_layers_per_virtual_stage <= 0 || p.pp < 2) return p.vpp;
  return job.model.num_layers / p.pp / p.num_layers_per_virtual_stage;
}

}  // namespace

/// Recomputation and the memory knobs (§3.4, §3.8).
std::string training_violation(job_spec& job) {
  [[maybe_unused]] model_spec& m = job.model;
  [[maybe_unused]] parallel_config& p = job.parallel;
  [[maybe_unused]] training_config& t = job.training;
  // Recomputation (§3.4).
  if (t.recompute == recompute_granularity::full) {
    if (t.recompute_num_layers == 0) t.recompute_num_layers = 1;
    TRAINPLAN_RETURN_VIOLATION(positive(t.recompute_num_layers, "${training.recompute_num_layers}", m.num_layers));
  } else if (t.recompute_num_layers != 0) {
    return std::string("${training.recompute_num_layers} needs ${training.recompute} full");
  }
  if (t.cross_entropy_fusion && t.framework != framework_kind::megatron) {
    return std::string("${training.cross_entropy_fusion} is Megatron-Core's fused loss (${training.framework} megatron)");
  }
  // §5.4: Megatron-LM's DDP choice (arguments.py: the distributed optimizer asserts DDP_impl == 'local').
  if (t.torch_ddp && t.framework != framework_kind::megatron) {
    return "${training.torch_ddp} torch is Megatron-LM's own data-parallel wrapper; ${training.framework} " +
           std::string(to_string(t.framework)) + " reduces the gradients its own way";
  }
  if (t.torch_ddp && t.distributed_optimizer) {
    return std::string("${training.torch_ddp} torch cannot run ${training.distributed_optimizer} (Megatron-LM's "
                       "argument check: the distributed optimizer needs --DDP-impl local)");
  }
  // §5.3: Megatron-LM's and Megatron-DeepSpeed's fusion switches; FSDP's model code has none of those kernels.
  if (t.framework == framework_kind::fsdp) {
    for (const auto& [on, name] : {std::pair{t.bias_gelu_fusion, "${training.bias_gelu_fusion}"},
                                   std::pair{t.bias_dropout_fusion, "${training.bias_dropout_fusion}"},
                                   std::pair{t.masked_softmax_fusion, "${training.masked_softmax_fusion}"}}) {
      if (!on) {
        return std::string(name) + " turns off a kernel of Megatron-LM's (and Megatron-DeepSpeed's); "
                                   "${training.framework} fsdp runs PyTorch's own kernels, which it does not fuse";
      }
    }
  }
  // §5.3: Megatron-Core's RoPE fusion switch (arguments.py: "the fusion is available only when using
  // megatron-core"); Megatron-DeepSpeed's and torchtitan's RoPE are their own code.
  if (!t.rope_fusion && t.framework != framework_kind::megatron) {
    return "${training.rope_fusion} is Megatron-Core's switch for Transformer Engine's fused RoPE; "
           "${training.framework} " + std::string(to_string(t.framework)) + " runs its own RoPE";
  }
  // §5.4: Megatron-Core's DDP bucket (distributed_data_parallel.py); the other frameworks size their own.
  if (t.ddp_bucket_elements > 0 && t.framework != framework_kind::megatron) {
    return "${training.ddp_bucket_elements} is Megatron-Core's gradient bucket; ${training.framework} " +
           std::string(to_string(t.framework)) + " buckets its own way (DeepSpeed: ${training.bucket_size_elements})";
  }
  if (t.ddp_bucket_elements > 0 && t.torch_ddp) {
    return std::string("${training.ddp_bucket_elements} is Megatron-Core's gradient bucket; ${training.torch_ddp} torch "
                       "runs PyTorch's DistributedDataParallel, whose buckets are its bucket_cap_mb (25 MiB)");
  }
  if (t.ddp_bucket_elements > 0 && (t.bucket_size_bytes > 0 || t.bucket_size_elements > 0)) {
    return std::string("${training.ddp_bucket_elements} and ") +
           (t.bucket_size_bytes > 0 ? "${training.bucket_size_bytes}" : "${training.bucket_size_elements}") +
           " both size the gradient bucket: give one";
  }
  if (t.moe_permute_fusion && t.framework != framework_kind::megatron) {
    return "${training.moe_permute_fusion} is Megatron-Core's switch for Transformer Engine's fused permute; "
           "${training.framework} " + std::string(to_string(t.framework)) + " permutes its routed tokens its own way";
  }
  if (t.moe_grouped_gemm && t.framework != framework_kind::megatron) {
    return "${training.moe_grouped_gemm} is Megatron-Core's choice of TEGroupedMLP over SequentialMLP; "
           "${training.framework} " + std::string(to_string(t.framework)) + " runs its experts its own way";
  }
  // torch.compile as torchtitan applies it (§5.3): its Inductor kernels replace the eager RMSNorm and SwiGLU.
  if (t.torch_compile) {
    if (t.framework != framework_kind::fsdp) {
      return "${training.torch_compile} is torchtitan's torch.compile of each block, modelled with "
             "${training.framework} fsdp; " + std::string(to_string(t.framework)) + " compiles its own way";
    }
    if (t.rmsnorm_kernel == training_config::norm_kernel::eager) {
      return std::string("${training.rmsnorm_kernel} eager contradicts ${training.torch_compile}: Inductor lowers the "
                         "RMSNorm to one fused kernel");
    }
    if (t.swiglu_fusion_set && !t.bias_swiglu_fusion) {
      return std::string("${training.bias_swiglu_fusion}'s unfused SwiGLU contradicts ${training.torch_compile}: "
                         "Inductor fuses silu(w1(x)) * w3(x) into one kernel");
    }
  }
  if (t.torch_compile_loss && t.framework != framework_kind::fsdp) {
    return "${training.torch_compile_loss} is torchtitan's compiled F.cross_entropy, modelled with "
           "${training.framework} fsdp; " + std::string(to_string(t.framework)) + " runs its own loss (§3.6)";
  }
  if (t.async_tp) {
    if (t.framework != framework_kind::fsdp) {
      return "${training.async_tp} is torchtitan's (symmetric-memory micro-pipelining under torch.compile), "
             "modelled with ${training.framework} fsdp; Megatron-Core overlaps TP with ${training.tp_comm_overlap}";
    }
    if (!t.torch_compile) {
      return "${training.async_tp} needs ${training.torch_compile}: the micro-pipeline TP pass is Inductor's "
             "(torchtitan's check: \"Async TP requires torch.compile\")";
    }
    if (job.parallel.tp <= 1) return "${training.async_tp} needs ${parallel.tp} above 1";
  }
  if (t.torch_compile_loss && job.parallel.tp > 1) {
    return "${training.torch_compile_loss} is modelled at TP 1 (${parallel.tp}): at TP > 1 torchtitan's loss_parallel "
           "runs the loss on vocab-sharded DTensor logits, whose compiled kernels are not modelled (§3.6)";
  }
  if (t.recompute == recompute_granularity::selective_op) {
    // torchtitan's per-op policy (§3.4.4) as its Llama-style block runs it: at TP or CP > 1 the
    // recomputed forward also redoes collectives (TP's all-gathers, the CP ring) not modelled here.
    const char* why = t.framework != framework_kind::fsdp ? "is torchtitan's, modelled with ${training.framework} fsdp"
                      : job.parallel.tp > 1 ? "is modelled at TP 1 (${parallel.tp}): its recomputed forward would "
                                              "redo TP's all-gathers"
                      : job.parallel.cp > 1 ? "is modelled at CP 1 (${parallel.cp}): its recomputed forward would "
                                              "redo the context-parallel exchange"
                      : m.is_moe() || m.is_mla() || m.is_hybrid()
                          ? "is modelled for dense transformer layers (Llama-style attention and MLP), not MoE, MLA "
                            "or hybrid ones, whose matmul order differs"
                          : nullptr;
    if (why != nullptr) return std::string("${training.recompute} op ") + why;
  }
  if (t.recompute == recompute_granularity::selective && t.recompute_modules != 0) {
    // transformer_config.py __post_init__'s checks, then what trainplan does not model: a recomputed
    // module whose forward runs collectives it does not price again (the EP all-to-alls, the shared
    // experts' TP pair). The dense MLP's TP collectives are priced again (§4.2.1).
    using rm = recompute_module;
    const parallel_config& p = job.parallel;
    const char* why =
        t.recomputes(rm::mla_up_proj) && !m.is_mla() ? "mla_up_proj is only supported with multi-latent attention (Megatron-Core's check)"
        : (t.recomputes(rm::moe_act) || t.recomputes(rm::layernorm)) && t.fp8 != fp8_format::none &&
                t.fp8_scaling == fp8_recipe::delayed
            ? "moe_act and layernorm with FP8 need a recipe other than delayed scaling (Megatron-Core's check)"
        : t.recomputes(rm::shared_experts) && t.moe_shared_expert_overlap
            ? "shared_experts cannot be recomputed with ${training.moe_shared_expert_overlap} (Megatron-Core's check)"
        : t.recomputes(rm::moe) && m.is_moe() && (p.tp > 1 || p.ep > 1 || (p.etp > 0 ? p.etp : p.tp) > 1)
            ? "moe is modelled at TP, EP and expert-TP 1: its recomputed forward would redo the dispatch and combine"
        : t.recomputes(rm::shared_experts) && m.moe.shared_expert_ffn_hidden_size > 0 && p.tp > 1
            ? "shared_experts is modelled at TP 1: its recomputed forward would redo TP's collectives"
            : nullptr;
    if (why != nullptr) return std::string("${training.recompute_modules} ") + why;
  }
  if (t.nccl_buffer_bytes_per_communicator < 0) {
    return std::string("${training.nccl_buffer_bytes_per_communicator} must not be negative");
  }
  if (!(t.allocator_reserve_fraction >= 0 && t.allocator_reserve_fraction < 4)) {
    return std::string("${training.allocator_reserve_fraction} must be in [0, 4), got " + std::to_string(t.allocator_reserve_fraction));
  }
  // DeepSpeed's and ZeRO-3's own knobs (§5.5.2, §5.9).
  if (t.overlap_comm != training_config::toggle::framework_default && t.framework != framework_kind::deepspeed) {
    return "${training.overlap_comm} is DeepSpeed's (zero_optimization.overlap_comm); with " + std::string(to_string(t.framework)) +
           " use its own overlap flags";
  }
  if (t.zero_bucket_all_reduce != training_config::toggle::framework_default &&
      (t.framework != framework_kind::deepspeed || (t.zero_stage != 1 && t.zero_stage != 2))) {
    return "${training.zero_bucket_all_reduce} is DeepSpeed ZeRO-1/2's gradient reduction "
           "(zero_optimization.use_multi_rank_bucket_allreduce): it needs ${training.framework} deepspeed with "
           "${training.zero_stage} 1 or 2";
  }
  if (t.zero3_max_reuse_elements >= 0 && (t.framework != framework_kind::deepspeed || t.zero_stage != 3)) {
    return "${training.zero3_max_reuse_elements} is DeepSpeed's (stage3_max_reuse_distance): it needs ${training.framework} "
           "deepspeed with ${training.zero_stage} 3";
  }
  if (t.zero3_gather_per_parameter && (t.framework != framework_kind::deepspeed || t.zero_stage != 3)) {
    return "${training.zero3_gather_per_parameter} is DeepSpeed's ZeRO-3 before 0.5.5: it needs ${training.framework} "
           "deepspeed with ${training.zero_stage} 3";
  }
  if ((t.zero3_prefetch_bucket_elements >= 0 || t.zero3_fetch_overhead_s > 0) && t.zero_stage != 3) {
    return std::string(t.zero3_fetch_overhead_s > 0 ? "${training.zero3_fetch_overhead_s}" : "${training.zero3_prefetch_bucket_elements}") +
           " needs ${training.zero_stage} 3";
  }

  return {};
}

/// FP8 (§5.1.3): the GPU has FP8 tensor cores (MX block scaling for mxfp8), and Megatron's argument
/// checks on --fp8-param-gather (megatron/training/arguments.py).
std::string fp8_violation(job_spec& job) {
  const training_config& t = job.training;
  const gpu_spec& gpu = job.cluster.gpu;
  if (t.precision == dtype::bf16 && !gpu.bf16) {
    return "bf16 (${training.precision}) needs bf16 tensor cores; " + gpu.name + " has fp16 only: train in fp16";
  }
  if (t.fp8 == fp8_format::none) {
    if (t.fp8_param_gather) return "${training.fp8_param_gather} needs ${training.fp8} (e4m3 or hybrid)";
    if (t.fp8_precompute_scale) return "${training.fp8_precompute_scale} needs ${training.fp8} (e4m3 or hybrid)";
    return {};
  }
  if (t.fp8_precompute_scale) {
    // torchtitan's Float8Converter: precompute_scale = enable_fsdp_float8_all_gather and
    // precompute_float8_dynamic_scale_for_fsdp; torchao's precompute is tensorwise scaling's (§4.2.4).
    const char* why = t.framework != framework_kind::fsdp ? "is torchtitan's (torchao under FSDP2), modelled with ${training.framework} fsdp"
                      : !t.fp8_param_gather || t.zero_stage == 0
                          ? "needs ${training.fp8_param_gather} with ${training.zero_stage} 2 or 3 (FSDP's float8 all-gather, whose "
                            "scales it precomputes)"
                      : t.fp8_scaling != fp8_recipe::tensorwise ? "needs ${training.fp8_scaling} tensorwise (torchao's dynamic tensorwise scales)"
                                                                : nullptr;
    if (why != nullptr) return std::string("${training.fp8_precompute_scale} ") + why;
  }
  if (!(gpu.peak_fp8_flops > 0)) {
    return "${training.fp8} " + std::string(to_string(t.fp8)) + " needs FP8 tensor cores; " + gpu.name +
           " has none (Hopper and later do: ${cluster.gpu} h100-sxm5-80gb, h200-sxm-141gb, b200-sxm-180gb)";
  }
  if (t.fp8_scaling == fp8_recipe::mxfp8 && !gpu.mx_block_scaling) {
    return "${training.fp8_scaling} mxfp8 needs Blackwell's block-scaled tensor cores; " + gpu.name +
           " has none (use delayed, tensorwise or blockwise)";
  }
  if (t.framework == framework_kind::fsdp && t.fp8_scaling != fp8_recipe::tensorwise) {
    // torchtitan's float8 converter is torchao's Float8Linear with dynamic tensorwise scales; its rowwise
    // recipe and MX converter are refused by the reader, and Transformer Engine's delayed or block scaling
    // is not what it runs (§5.1.3).
    return "${training.fp8_scaling} " + std::string(to_string(t.fp8_scaling)) +
           " is not torchtitan's: ${training.framework} fsdp runs torchao's float8 with dynamic tensorwise scales "
           "(${training.fp8_scaling} tensorwise, its default)";
  }
  if (t.fp8_param_gather && t.framework == framework_kind::deepspeed) {
    // DeepSpeed has no FP8 parameters: ZeRO gathers its partitions in the model's 16-bit dtype (§4.2.4).
    return "${training.fp8_param_gather} is Megatron-Core's (${training.distributed_optimizer}, ${training.megatron_fsdp}) "
           "and torchao's (${training.framework} fsdp); ${training.framework} deepspeed gathers its parameters in 16 bits";
  }
  if (t.fp8_param_gather && !t.distributed_optimizer && t.zero_stage == 0 && t.framework != framework_kind::fsdp) {
    return "${training.fp8_param_gather} is only supported with ${training.distributed_optimizer} (or FSDP), as Megatron-LM's "
           "argument check says";
  }
  return {};
}

/// Megatron's argument checks on --overlap-param-gather (megatron/training/arguments.py).
std::string overlap_violation(job_spec& job) {
  const training_config& t = job.training;
  if (t.tp_comm_overlap) {
    if (t.framework != framework_kind::megatron) {
      return "${training.tp_comm_overlap} is Megatron-Core's (Transformer Engine userbuffers), not " +
             std::string(to_string(t.framework)) + "'s";
    }
    // megatron/training/arguments.py; SP is turned off at TP 1, so TP 1 fails here too.
    if (!job.parallel.sequence_parallel) {
      return "${training.tp_comm_overlap} needs ${parallel.sequence_parallel} with TP > 1 (Megatron-LM's argument check: \"Tensor "
             "parallel communication/GEMM overlap can happen only when sequence parallelism is enabled\")";
    }
  }
  if (t.overlap_moe_ep_comm) {
    // megatron/core/transformer/transformer_config.py, __post_init__'s checks for the flag.
    const parallel_config& p = job.parallel;
    const char* why = p.ep <= 1 ? "is only supported with expert model parallelism (${parallel.ep} > 1)"
                      : p.moe_dispatcher != moe_dispatcher_kind::alltoall && p.moe_dispatcher != moe_dispatcher_kind::flex
                          ? "is supported with the alltoall/flex token dispatcher (${parallel.moe_dispatcher})"
                      : t.recompute == recompute_granularity::full ? "needs full recomputation disabled (${training.recompute})"
                      : p.pp > 1 && chunks_per_rank(job) <= 1 ? "needs ${parallel.vpp} when PP > 1"
                      : t.precision != dtype::bf16 && t.precision != dtype::fp16 ? "is only supported with bf16 or fp16"
                      : job.model.mtp_num_layers > 1 ? "supports at most one MTP layer (${model.mtp_num_layers})"
                                                     : nullptr;
    if (why != nullptr) return std::string("${training.overlap_moe_ep_comm} ") + why + " (Megatron-Core's check)";
  }
  if (t.keep_pipeline_outputs && t.framework != framework_kind::megatron) {
    // DeepSpeed and torch.distributed.pipelining keep them already (§3.5): the switch is Megatron-Core's.
    return std::string("${training.keep_pipeline_outputs} is Megatron-Core's deallocate_pipeline_outputs false; ") +
           std::string(to_string(t.framework)) + " keeps each sent stage output until its backward already";
  }
  if (t.pipelining_output_cache != training_config::output_cache::none &&
      (t.framework != framework_kind::fsdp || job.parallel.pp <= 1)) {
    // §3.5.1: the cache is torch.distributed.pipelining's, which runs FSDP2's pipeline and nothing else here.
    return t.framework != framework_kind::fsdp
               ? "${training.pipelining_output_cache} is torch.distributed.pipelining's, modelled with "
                 "${training.framework} fsdp; " + std::string(to_string(t.framework)) + " runs its own pipeline schedule"
               : std::string("${training.pipelining_output_cache} needs ${parallel.pp} above 1 (without a pipeline "
                             "torchtitan runs no pipeline schedule)");
  }
  if (t.delay_wgrad_compute && !t.overlap_moe_ep_comm) {
    // megatron/core/transformer/transformer_config.py __post_init__ ("Check delay_wgrad_compute compatibility").
    return std::string("${training.delay_wgrad_compute} needs ${training.overlap_moe_ep_comm} (Megatron-Core's check: "
                       "\"overlap_moe_expert_parallel_comm must be enabled when enabling delay_wgrad_compute\")");
  }
  {
    // The flex dispatcher's kernels (§4.2.5): read with flex alone; an SM count only where the dispatch
    // still runs at the links' rate: HybridEP's own H100 measurements (DeepEP docs/README_Hybrid-EP.md:
    // 8 and 16 SMs within 1-9% at 16-64 ranks, 4 SMs up to 30% slower), DeepEP at its default 20 (its
    // B200 NVLink rate grows from 348 GB/s at 16 SMs to 646 at 48).
    const parallel_config& p = job.parallel;
    const bool flex = p.moe_dispatcher == moe_dispatcher_kind::flex;
    if (!flex && (p.flex_backend != moe_flex_backend::deepep || p.flex_dispatch_sms != 0)) {
      return std::string(p.flex_backend != moe_flex_backend::deepep ? "${parallel.flex_backend}" : "${parallel.flex_dispatch_sms}") +
             " is read with the flex token dispatcher alone (${parallel.moe_dispatcher} flex)";
    }
    if (flex && p.flex_backend == moe_flex_backend::hybridep && job.model.is_moe() && expert_tensor_parallel(p) > 1) {
      // Its group is then expert TP × EP (tp_ep_group) and its buffers grow with it: not counted here.
      return std::string("${parallel.flex_backend} hybridep with expert TP > 1 (${parallel.etp}) is not modelled: "
                         "its buffers and dispatch span expert TP × EP");
    }
    if (flex && p.flex_dispatch_sms != 0) {
      const bool hybrid = p.flex_backend == moe_flex_backend::hybridep;
      if (hybrid && p.flex_dispatch_sms < 8) {
        return std::string("${parallel.flex_dispatch_sms} (Megatron-Core's moe_flex_dispatcher_num_sms, moe_hybridep_num_sms) below 8 "
                           "slows HybridEP's dispatch below the links' rate (its own H100 measurements), which "
                           "trainplan does not model");
      }
      if (!hybrid && p.flex_dispatch_sms != 20) {
        return std::string("${parallel.flex_dispatch_sms} (Megatron-Core's moe_flex_dispatcher_num_sms, moe_deepep_num_sms): DeepEP's "
                           "rate depends on its SMs, modelled at its default 20 alone");
      }
    }
  }
  if (t.moe_shared_expert_overlap) {
    // megatron/core/transformer/transformer_config.py: a ValueError for other dispatchers, an assert
    // beside --overlap-moe-expert-parallel-comm.
    const moe_dispatcher_kind d = job.parallel.moe_dispatcher;
    if (t.framework != framework_kind::megatron) {
      return "${training.moe_shared_expert_overlap} is Megatron-Core's, not " + std::string(to_string(t.framework)) + "'s";
    }
    if (job.model.is_moe() && d != moe_dispatcher_kind::alltoall && d != moe_dispatcher_kind::flex) {
      return std::string("${training.moe_shared_expert_overlap} only works with alltoall or flex token dispatcher "
                         "(${parallel.moe_dispatcher}; Megatron-Core's check)");
    }
    if (t.overlap_moe_ep_comm) {
      return std::string("${training.moe_shared_expert_overlap}: disable it when enabling ${training.overlap_moe_ep_comm} "
                         "(Megatron-Core's check)");
    }
  }
  if (t.cpu_offload_layers != 0) {
    // megatron/core/transformer/transformer_config.py __post_init__.
    const char* why = t.framework != framework_kind::megatron ? "is Megatron-Core's (${training.framework})"
                      : t.cpu_offload_layers < 0 || t.cpu_offload_layers >= job.model.num_layers
                          ? "can be done only for layers less than ${model.num_layers}"
                      : job.parallel.pp > 1 ? "has no support for pipeline parallelism (${parallel.pp})"
                      : t.recompute != recompute_granularity::none
                          ? "does not work when activation recomputation is enabled (${training.recompute})"
                      : job.cluster.gpu.host_link_bytes_per_s <= 0
                          ? "needs the GPU's host link bandwidth (a cluster file's gpu.host_link_gb_per_s)"
                          : nullptr;
    if (why != nullptr) return std::string("${training.cpu_offload_layers} ") + why + " (Megatron-Core's check)";
  }
  if (t.defer_embedding_wgrad) {
    // megatron/core/model_parallel_config.py __post_init__.
    const char* why = t.framework != framework_kind::megatron ? "is Megatron-Core's (${training.framework})"
                      : job.parallel.pp <= 1 ? "cannot be used when pipeline model parallel is not used (${parallel.pp})"
                      : !t.gradient_accumulation_fusion ? "cannot be used when gradient accumulation fusion is not used "
                                                          "(${training.gradient_accumulation_fusion})"
                                                        : nullptr;
    if (why != nullptr) return std::string("${training.defer_embedding_wgrad} ") + why + " (Megatron-Core's check)";
    if (t.wgrad_deferral_limit < 0) {
      return "${training.wgrad_deferral_limit} should be greater than or equal to 0, got " + to_string(t.wgrad_deferral_limit) +
             " (Megatron-Core's check)";
    }
  }
  if (t.overlap_p2p_warmup_flush) {
    // megatron/core/model_parallel_config.py __post_init__: "only compatible with overlap_p2p_comm".
    if (t.framework != framework_kind::megatron) {
      return "${training.overlap_p2p_warmup_flush} is Megatron's interleaved schedule's, not " +
             std::string(to_string(t.framework)) + "'s";
    }
    if (!t.overlap_p2p_comm) {
      return std::string("${training.overlap_p2p_warmup_flush} needs the steady phase's overlap, which "
                         "${training.overlap_p2p_comm} turns off (Megatron-Core's check)");
    }
  }
  if (t.overlap_param_gather_with_step) {
    // megatron/training/arguments.py validate_args.
    const char* why = !t.overlap_param_gather ? "must be used with ${training.overlap_param_gather}"
                      : chunks_per_rank(job) <= 1 ? "is only supported with interleaved pipeline parallelism (${parallel.vpp})"
                                               : nullptr;
    if (why != nullptr) return std::string("${training.overlap_param_gather_with_step} ") + why + " (Megatron-LM's argument check)";
  }
  if (!t.overlap_param_gather) return {};
  if (!t.distributed_optimizer && !(t.framework == framework_kind::megatron && t.zero_stage >= 1)) {
    return "${training.overlap_param_gather} is only supported with ${training.distributed_optimizer} (Megatron-LM's argument "
           "check)";
  }
  if (!t.overlap_grad_reduce && t.megatron_lm_arg_checks) {
    return "${training.overlap_param_gather} must be used with ${training.overlap_grad_reduce} (Megatron-LM's argument check)";
  }
  return {};
}

/// Sharding over part of the data-parallel domain (HSDP, §2.5): Megatron's partial distributed
/// optimizer (core/distributed/distributed_data_parallel.py: "Partial DistOpt cannot be used without
/// DistOpt"; parallel_state.py: DP×CP divisible by the instances) or FSDP2 over a 2-D mesh (torchtitan:
/// replicate × shard = DP).
std::string sharding_violation(job_spec& job) {
  const training_config& t = job.training;
  const parallel_config& p = job.parallel;
  if (t.dp_replicas == 1) return {};
  const bool megatron = t.framework == framework_kind::megatron;
  // Megatron's flag and torchtitan's name for the same count (§2.5).
  const std::string flag = megatron ? "${training.dp_replicas}" : "${training.dp_replicate_degree}";
  if (t.dp_replicas < 1) return flag + " must be a positive integer, got " + to_string(t.dp_replicas);
  if (t.framework == framework_kind::deepspeed) {
    return "${training.dp_replicas} / ${training.dp_replicate_degree} are Megatron-LM's and FSDP2's; "
           "DeepSpeed's hierarchical partitioning (ZeRO++ hpZ, MiCS) is not modelled";
  }
  if (megatron && !t.distributed_optimizer) {
    return flag + " needs ${training.distributed_optimizer} (Megatron-Core's check: \"Partial DistOpt cannot be used "
                  "without DistOpt\")";
  }
  if (!megatron && t.zero_stage < 2) {
    return flag + " needs ${training.zero_stage} 2 or 3 with ${training.framework} fsdp (HSDP shards within a "
                  "replica; NO_SHARD has nothing to shard)";
  }
  if (job.model.is_moe() && !megatron) {
    return flag + " with an MoE model is not modelled for FSDP (torchtitan's expert meshes)";
  }
  const std::int64_t domain = megatron ? p.dp * p.cp : p.dp;
  if (domain % t.dp_replicas != 0) {
    return flag + " (" + to_string(t.dp_replicas) + ") must divide " + (megatron ? "DP×CP (" : "DP (") +
           to_string(domain) + ")";
  }
  if (job.model.is_moe()) {
    // parallel_state.py: "Expert data parallel size should be divisible by partial DistOpt shard factor".
    const std::int64_t edp = expert_data_parallel(p);
    // One expert rank per replica is legal (Megatron's CI runs 2 instances over expert DP 2): the experts'
    // state is then unsharded.
    if (edp % t.dp_replicas != 0) {
      return flag + " (" + to_string(t.dp_replicas) + ") must divide the expert data-parallel size (" +
             to_string(edp) + ")";
    }
  }
  if (dp_shard_size(p, t) < 2) {
    return flag + " (" + to_string(t.dp_replicas) + ") leaves one rank per replica, which shards nothing: use plain "
           "data parallelism (" + (megatron ? "without ${training.distributed_optimizer})" : "${training.zero_stage} 0)");
  }
  return {};
}

}  // namespace trainplan::detail
