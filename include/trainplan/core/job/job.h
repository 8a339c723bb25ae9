// The job a plan is made for: the model, the cluster, the parallel layout and how it is trained, and the
// rules a job must meet (docs/formulas.md §2). finalize_job checks them and works out the resolved facts
// (resolved.h) every estimator reads; the pipeline split and what a GPU holds are layout.h's.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trainplan/core/hardware/hardware.h"
#include "trainplan/core/job/framework.h"
#include "trainplan/core/job/resolved.h"
#include "trainplan/core/model/model.h"

namespace trainplan {

/// What a layer's backward finds saved (§3.4.4): everything; all but the attention core (Megatron's
/// selective); only its input (full); or torchtitan's per-op selective checkpointing (`op`: the
/// outputs of the attention kernel and of every second matmul saved, the rest recomputed).
enum class recompute_granularity { none, selective, full, selective_op };
enum class recompute_method { uniform, block };
/// Megatron-Core's --recompute-modules under selective recomputation (transformer_config.py
/// recompute_modules; docs/formulas.md §3.4.4): bits of training_config::recompute_modules.
enum class recompute_module : std::uint8_t {
  core_attn = 1,       ///< the attention core (the default)
  layernorm = 2,       ///< input and pre-MLP norms, where they are modules of their own (output discarded)
  mlp = 4,             ///< the dense MLP (checkpointed)
  moe_act = 8,         ///< the routed experts' activation (output discarded)
  moe = 16,            ///< the MoE layer (checkpointed)
  shared_experts = 32, ///< the shared experts (checkpointed)
  mla_up_proj = 64,    ///< MLA's up-projections and RoPE (output discarded)
};
/// Megatron's names, in its order.
inline constexpr std::array<std::pair<const char*, recompute_module>, 7> kRecomputeModuleNames{
    {{"core_attn", recompute_module::core_attn},
     {"moe_act", recompute_module::moe_act},
     {"layernorm", recompute_module::layernorm},
     {"mla_up_proj", recompute_module::mla_up_proj},
     {"mlp", recompute_module::mlp},
     {"moe", recompute_module::moe},
     {"shared_experts", recompute_module::shared_experts}}};
enum class optimizer_kind { adam, sgd };
/// How MoE tokens reach their experts (Megatron --moe-token-dispatcher-type; §4.2.5): all-gather the
/// hidden states over EP×ETP and reduce-scatter back (Megatron-Core's default), all-to-all one copy per
/// routed expert, or flex (DeepEP: one copy per destination node over the network, forwarded over NVLink).
enum class moe_dispatcher_kind { framework_default, allgather, alltoall, flex };
/// The names the flags take (--moe-token-dispatcher-type), one table for parsing and printing.
inline constexpr std::array<std::pair<const char*, moe_dispatcher_kind>, 3> kMoeDispatcherNames{
    {{"allgather", moe_dispatcher_kind::allgather},
     {"alltoall", moe_dispatcher_kind::alltoall},
     {"flex", moe_dispatcher_kind::flex}}};
std::string_view to_string(moe_dispatcher_kind k);
/// The flex dispatcher's kernels (Megatron-Core --moe-flex-dispatcher-backend; §4.2.5, §3.7): DeepEP, or
/// NVIDIA's HybridEP (DeepEP's hybrid-ep branch). Both send a token once per destination node over the
/// network and forward it over NVLink; HybridEP permutes while it copies out of its registered buffers,
/// which it preallocates for the worst case.
enum class moe_flex_backend { deepep, hybridep };
inline constexpr std::array<std::pair<const char*, moe_flex_backend>, 2> kMoeFlexBackendNames{
    {{"deepep", moe_flex_backend::deepep}, {"hybridep", moe_flex_backend::hybridep}}};
/// FP8 GEMMs through Transformer Engine (Megatron --fp8-format: e4m3 everywhere, or hybrid with e5m2
/// gradients) and how tensors are scaled (--fp8-recipe; mxfp8 needs Blackwell's block-scaled tensor
/// cores). docs/formulas.md §5.1.3.
enum class fp8_format { none, e4m3, hybrid };
enum class fp8_recipe { delayed, tensorwise, mxfp8, blockwise };
/// The names --fp8-format and --fp8-recipe take, one table each for parsing and printing.
inline constexpr std::array<std::pair<const char*, fp8_format>, 2> kFp8FormatNames{
    {{"e4m3", fp8_format::e4m3}, {"hybrid", fp8_format::hybrid}}};
inline constexpr std::array<std::pair<const char*, fp8_recipe>, 4> kFp8RecipeNames{
    {{"delayed", fp8_recipe::delayed},
     {"tensorwise", fp8_recipe::tensorwise},
     {"mxfp8", fp8_recipe::mxfp8},
     {"blockwise", fp8_recipe::blockwise}}};
std::string_view to_string(fp8_format k);
std::string_view to_string(fp8_recipe k);


std::string_view to_string(recompute_granularity k);
std::string_view to_string(recompute_method k);
/// Selective recomputation's modules in Megatron's spelling and order ("core_attn" when left at its default).
std::vector<std::string_view> recompute_module_names(std::uint8_t bits);
std::string_view to_string(optimizer_kind k);

/// One stage of Megatron-Core's --pipeline-model-parallel-layout: what one model chunk of one pipeline
/// rank builds (docs/formulas.md §2.2.1).
struct layout_stage {
  std::int64_t decoder = 0;  ///< transformer layers ('t')
  std::int64_t mtp = 0;      ///< MTP layers ('m')
  bool embedding = false;    ///< 'E'
  bool loss = false;         ///< 'L': the final norm, output layer and loss
};

/// How the model is split over the GPUs. dp is derived: world / (tp·pp·cp).
struct parallel_config {
  std::int64_t tp = 1;
  std::int64_t pp = 1;
  std::int64_t cp = 1;
  std::int64_t ep = 1;
  /// Expert tensor parallelism (Megatron --expert-tensor-parallel-size); 0: = tp, Megatron's default.
  /// With "parallel folding" the experts' ETP×EP and attention's TP×CP×DP share a stage's ranks.
  std::int64_t etp = 0;
  std::int64_t dp = 1;
  std::int64_t vpp = 1;  ///< model chunks per pipeline rank (interleaved 1F1B when > 1)
  std::int64_t num_layers_per_virtual_stage = 0;  ///< Megatron's flag; 0 = not interleaved
  std::int64_t first_stage_layers = -1;  ///< --decoder-first-pipeline-num-layers; -1 = even split
  std::int64_t last_stage_layers = -1;   ///< --decoder-last-pipeline-num-layers
  bool sequence_parallel = false;
  bool embedding_as_stage = false;  ///< BLOOM: each embedding takes one layer slot of its stage
  /// Megatron-Core's --account-for-embedding-in-pipeline-split / --account-for-loss-in-pipeline-split: the
  /// input embedding (the loss) counts as one layer of the even split, so the first (last) rank builds one
  /// transformer layer fewer (transformer_block.py get_num_layers_to_build; docs/formulas.md §2.2).
  bool account_embedding_in_split = false;
  bool account_loss_in_split = false;
  /// Megatron-Core's --pipeline-model-parallel-layout, parsed (parse_pipeline_layout): PP × VPP stages in
  /// model order, stage i on rank i mod PP, chunk i div PP. Empty: the split follows the flags above.
  std::vector<layout_stage> layout_stages;
  /// Rank order, fastest-varying first, as parallel_dim values (tp 0, cp 1, ep 2, dp 3, pp 4):
  /// Megatron's default "tp-cp-ep-dp-pp" (--rank-order; docs/formulas.md §4.1).
  std::array<std::int8_t, 5> rank_order = {0, 1, 2, 3, 4};
  cp_comm_kind cp_comm = cp_comm_kind::framework_default;  ///< --cp-comm-type
  /// --moe-token-dispatcher-type; finalize_job resolves the framework default (Megatron: allgather;
  /// DeepSpeed and FSDP/torchtitan: alltoall).
  moe_dispatcher_kind moe_dispatcher = moe_dispatcher_kind::framework_default;
  /// Interleaved schedule: micro-batches run back to back in a chunk before the next (Megatron's
  /// --microbatch-group-size-per-virtual-pipeline-stage); 0 is PP, Megatron's default (§5.4, §3.5).
  std::int64_t microbatch_group_size = 0;
  moe_flex_backend flex_backend = moe_flex_backend::deepep;  ///< with the flex dispatcher
  /// SMs the flex dispatcher's kernels run on (--moe-flex-dispatcher-num-sms and its deprecated
  /// per-backend spellings); 0: the backend's default. §4.2.5 prices the dispatch at the links' rate,
  /// which the SM counts it accepts reach.
  std::int64_t flex_dispatch_sms = 0;
  /// Legacy Megatron's --scatter-gather-tensors-in-pipeline: each TP rank sends 1/t of the activation
  /// and the receiver all-gathers it (docs/formulas.md §4.2.3). Off: the full tensor (Megatron core).
  bool pp_scatter_gather = false;
};

/// Expert tensor parallel size as resolved (etp 0 means TP).
inline std::int64_t expert_tensor_parallel(const parallel_config& p) { return p.etp > 0 ? p.etp : p.tp; }
/// Replicas of each expert shard, whose gradients are reduced together: TP×CP×DP / (ETP×EP)
/// (Megatron-Core's expert data parallel group; with ETP = TP, DP×CP/EP; §2.4).
inline std::int64_t expert_data_parallel(const parallel_config& p) {
  const std::int64_t shard = expert_tensor_parallel(p) * p.ep;
  return shard > 0 ? p.tp * p.cp * p.dp / shard : 1;
}

/// How the model is trained.
struct training_config {
  std::int64_t micro_batch_size = 1;
  std::int64_t global_batch_size = 0;  ///< 0: micro_batch_size × dp (one micro-batch)
  /// DeepSpeed's gradient_accumulation_steps (0: not given): the global batch is MBS × this × DP, and a
  /// given global batch must equal it (runtime/config.py's batch assertion).
  std::int64_t gradient_accumulation_steps = 0;
  dtype precision = dtype::bf16;      ///< of weights and activations
  framework_kind framework = framework_kind::megatron;
  int zero_stage = 0;                 ///< DeepSpeed/ZeRO stage; Megatron distributed optimizer = 1
  bool distributed_optimizer = false; ///< Megatron --use-distributed-optimizer
  /// Megatron-FSDP (--use-megatron-fsdp; megatron/core/distributed/fsdp): the data-parallel sharding of
  /// --data-parallel-sharding-strategy, run by Megatron-Core's own FSDP (§3.1). Its stage is zero_stage:
  /// optim = 1 (the distributed optimizer's), optim_grads = 2, optim_grads_params = 3 (Megatron-LM's default).
  bool megatron_fsdp = false;
  int megatron_fsdp_stage = 3;
  bool megatron_fsdp_strategy_set = false;  ///< --data-parallel-sharding-strategy given (needs Megatron-FSDP)
  bool accumulate_allreduce_grads_in_fp32 = false;  ///< forced on by Megatron with bf16 ...
  /// ... unless --grad-reduce-in-bf16 (Megatron; NeMo's grad_reduce_in_fp32=False): the gradient buffer and
  /// its DP reduction in bf16 (megatron/training/arguments.py validate_args; docs/formulas.md §3.1).
  bool grad_reduce_in_bf16 = false;
  /// Megatron-Core's precision-aware optimizer (--use-precision-aware-optimizer: Transformer Engine's
  /// FusedAdam; megatron/core/optimizer/optimizer_config.py) and the dtypes it lets a job lower: the
  /// main gradients (bf16: the gradient buffer and its reduction), the master weights (fp16; at fp32,
  /// FusedAdam keeps only the 16 bits a bf16 weight lacks, store_param_remainders), Adam's two moments
  /// (fp32, fp16, bf16 or fp8). docs/formulas.md §3.1.
  bool precision_aware_optimizer = false;
  dtype main_grads_dtype = dtype::fp32;
  dtype main_params_dtype = dtype::fp32;
  dtype exp_avg_dtype = dtype::fp32;
  dtype exp_avg_sq_dtype = dtype::fp32;
  /// The attention kernel as asked (§5.2, §5.6): the framework's default (Megatron-Core: Transformer
  /// Engine's cuDNN attention; FSDP: SDPA's FlashAttention-2; Megatron-DeepSpeed: the unfused BLOOM-era
  /// core); `fused`, a fused kernel of the framework's choice (`--attention-backend auto`,
  /// `--use-flash-attn`); `cudnn`, cuDNN's (Megatron's AttnBackend.fused); `flash2`, FlashAttention-2
  /// (Megatron's AttnBackend.flash: TE's FlashAttention over the flash_attn package); or unfused.
  enum class attention_backend { framework_default, fused, cudnn, flash2, unfused } attention =
      attention_backend::framework_default;
  bool flash_attention = false;       ///< derived by finalize_job: a fused kernel (no s² scores kept)
  bool fa2_attention = false;         ///< derived by finalize_job: that kernel is FlashAttention-2's (§5.6)
  /// Fused bias+SwiGLU (Megatron-Core's bias_swiglu_impl) keeps its input alone, f bytes per token and
  /// layer fewer than the unfused silu·mul (§3.4). Unless set, the framework's default (apply_framework_defaults).
  bool bias_swiglu_fusion = false;
  bool swiglu_fusion_set = false;     ///< --bias-swiglu-fusion or --no-bias-swiglu-fusion given
  /// Megatron's other fused elementwise kernels (Megatron-LM and Megatron-DeepSpeed; §5.3), on unless
  /// --no-bias-gelu-fusion, --no-bias-dropout-fusion or --no-masked-softmax-fusion turns one off: the
  /// bias add beside GeLU, the bias-dropout-residual add and the scale-mask-softmax then run as PyTorch's
  /// separate kernels.
  bool bias_gelu_fusion = true;
  bool bias_dropout_fusion = true;
  bool masked_softmax_fusion = true;
  /// Megatron-Core's apply_rope_fusion, on unless --no-rope-fusion: Transformer Engine's fused RoPE. Off, or
  /// with a YaRN concentration factor other than 1 (model_spec::rope_yarn_factor), Megatron-Core runs the
  /// unfused _apply_rotary_pos_emb_bshd (§5.3).
  bool rope_fusion = true;
  /// Megatron-Core's --moe-permute-fusion (TransformerConfig moe_permute_fusion, off by default): Transformer
  /// Engine's fused permute and unpermute. Off, moe_utils.py's PyTorch path: masked_select index building,
  /// index_select, and a zeroed output that scatter_add_ fills (§5.3).
  bool moe_permute_fusion = false;
  /// Megatron-Core's --moe-grouped-gemm (TransformerConfig moe_grouped_gemm, off by default): the local experts
  /// as Transformer Engine's TEGroupedMLP (one grouped GEMM per projection). Off, SequentialMLP: an MLP per
  /// local expert, launched one after another, and its outputs concatenated (§5.1.1).
  bool moe_grouped_gemm = false;
  /// Megatron's --cross-entropy-loss-fusion: the loss's kernels fused by torch.compile (§5.3).
  bool cross_entropy_fusion = false;
  /// Megatron-Core's --cross-entropy-fusion-impl, read with the fused loss only: its own kernels (native) or
  /// Transformer Engine's parallel_cross_entropy (te) (§3.6, §5.3).
  enum class cross_entropy_impl { native, te } cross_entropy_fusion_impl = cross_entropy_impl::native;
  /// --te-cross-entropy-fp32-gradient: Transformer Engine from its #3193 (2026-07-09) on, whose loss writes
  /// the gradient into a new fp32 tensor; before it, into the logits in place (trainplan's default).
  bool te_cross_entropy_fp32_gradient = false;
  /// --norm-kernel: an RMSNorm's kernels, the framework's (layer_kernels_of), one fused kernel
  /// (torchtitan's fused_rmsnorm) or PyTorch eager ops (§5.3).
  enum class norm_kernel { framework_default, fused, eager } rmsnorm_kernel = norm_kernel::framework_default;
  /// --torch-compile: torchtitan's compile.enable with components ["model"] (the December 2024 schema's
  /// training.compile): each TransformerBlock compiled by torch.compile with Inductor, the rest eager. Its
  /// pointwise kernels fused (layer_kernels_of) and, under per-op SAC, only the kept outputs the backward
  /// reads saved (§3.4.4, §5.3). FSDP only.
  bool torch_compile = false;
  /// --torch-compile-loss: torchtitan's compile.components "loss" (its default, with "model"; the June 2025
  /// schema's training.compile): F.cross_entropy on pred.float() compiled by Inductor, the cast, log-softmax
  /// and gradient fused, the logits saved for a backward that writes a 16-bit gradient (§3.6, §5.3). FSDP only.
  bool torch_compile_loss = false;
  /// --async-tensor-parallel: torchtitan's parallelism.enable_async_tensor_parallel (with torch.compile):
  /// Inductor's micro-pipeline TP pass fuses each all-gather with the matmuls it feeds and each matmul with
  /// the reduce-scatter it feeds (torch/_inductor/fx_passes/micro_pipeline_tp.py, symmetric-memory
  /// fused_all_gather_matmul and fused_matmul_reduce_scatter): TP slices of those GEMMs, the transfers by
  /// the copy engines under them (§5.5.1). FSDP only.
  bool async_tp = false;
  /// --pipelining-output-cache: which stages of torch.distributed.pipelining keep every micro-batch's
  /// output until the step ends (stage.py forward_one_chunk's output_chunks, for the schedule's merged
  /// return value): every stage until PyTorch #153383 (2025-05-13), the last stage (its logits) until
  /// torchtitan e5ef99a (2025-10-22) passed step(return_outputs=False), none since (trainplan's default).
  /// Where outputs are kept, step() also concatenates the last stage's into a new tensor (§3.5.1). FSDP
  /// with PP > 1 only.
  enum class output_cache { none, last_stage, every_stage } pipelining_output_cache = output_cache::none;
  /// Megatron-LM's legacy models (--use-legacy-models, megatron/legacy/model/transformer.py): its flash
  /// path rearranges the kernel's output into a new tensor, the projection's input (§3.4).
  bool legacy_models = false;
  fp8_format fp8 = fp8_format::none;  ///< --fp8-format: the transformer layers' linear GEMMs in FP8
  fp8_recipe fp8_scaling = fp8_recipe::delayed;  ///< --fp8-recipe (Megatron's default: delayed; fsdp: tensorwise)
  bool fp8_scaling_set = false;                  ///< --fp8-recipe given (else the framework's default)
  bool fp8_param_gather = false;      ///< --fp8-param-gather: parameters kept and all-gathered in FP8
  /// --fp8-precompute-scale: torchtitan's precompute_float8_dynamic_scale_for_fsdp (with FSDP's float8
  /// all-gather, tensorwise): every float8 weight's amax in one foreach kernel and one all-reduce after the
  /// optimizer step (torchao float8/fsdp_utils.py precompute_float8_dynamic_scale_for_fsdp), where without it
  /// each weight's fsdp_pre_all_gather all-reduces its own amax before every all-gather (§4.2.4).
  bool fp8_precompute_scale = false;
  recompute_granularity recompute = recompute_granularity::none;
  recompute_method recompute_method_ = recompute_method::uniform;
  std::int64_t recompute_num_layers = 0;  ///< full: layers per chunk (uniform) or per stage (block)
  /// Selective: the recompute_module bits; 0 is Megatron's default, core_attn alone.
  std::uint8_t recompute_modules = 0;
  /// Whether selective recomputation redoes module `m` (never under none, full or op).
  bool recomputes(recompute_module m) const {
    if (recompute != recompute_granularity::selective) return false;
    const std::uint8_t bits = recompute_modules == 0 ? static_cast<std::uint8_t>(recompute_module::core_attn) : recompute_modules;
    return (bits & static_cast<std::uint8_t>(m)) != 0;
  }
  optimizer_kind optimizer = optimizer_kind::adam;
  bool offload_optimizer = false;     ///< optimizer states (and master weights) in CPU memory
  std::int64_t bucket_size_bytes = 0;  ///< gradient-reduction bucket; 0 = the framework's default
  /// The same in elements, DeepSpeed's unit (zero_optimization.reduce_bucket_size); 0 = the default.
  std::int64_t bucket_size_elements = 0;
  /// Megatron-Core's --ddp-bucket-size (elements) under --overlap-grad-reduce: the first pipeline rank's
  /// first model chunk reduces its gradients in buckets of this size; 0 = max(4e7, 1e6·DP) (§5.4).
  std::int64_t ddp_bucket_elements = 0;
  double allocator_reserve_fraction = 0.08;  ///< caching allocator's reserve above allocated (§3.8)
  /// Megatron's gradient_accumulation_fusion (on unless --no-gradient-accumulation-fusion): the wgrad
  /// GEMM adds into main_grad; off, the backward hook adds the 16-bit .grad into it (§5.9).
  bool gradient_accumulation_fusion = true;
  bool overlap_grad_reduce = false;   ///< DP reduction under the last backward (Megatron --overlap-grad-reduce, §5.4)
  /// Megatron-LM's --DDP-impl torch (until September 2023): PyTorch's DistributedDataParallel, whose
  /// bucketed all-reduce (bucket_cap_mb 25) runs under the backward of the last micro-batch, the others
  /// under no_sync; apply_framework_defaults sets overlap_grad_reduce and the bucket from it (§5.4).
  bool torch_ddp = false;
  /// Megatron --defer-embedding-wgrad-compute: the output layer's weight-gradient GEMMs of the first
  /// `wgrad_deferral_limit` micro-batches (0: all) are held, with their inputs and output gradients, and
  /// run after the last rank's last backward, in the pipeline flush (§3.6, §5.4); needs PP > 1 and
  /// gradient_accumulation_fusion.
  bool defer_embedding_wgrad = false;
  /// Megatron --cpu-offloading-num-layers N: the activations of the first N layers are copied to host
  /// memory after their forward and back before their backward, beside the next layer's work (Transformer
  /// Engine's CPU offload context; §3.4.8, §5.4); 0: none. Needs PP 1 and no recomputation.
  std::int64_t cpu_offload_layers = 0;
  std::int64_t wgrad_deferral_limit = 0;
  /// Micro-batches whose output-layer wgrad is deferred, of `microbatches` per iteration (§5.4).
  std::int64_t deferred_wgrad_microbatches(std::int64_t microbatches) const {
    if (!defer_embedding_wgrad) return 0;
    return wgrad_deferral_limit == 0 ? microbatches : std::min(wgrad_deferral_limit, microbatches);
  }
  /// The distributed optimizer's parameter all-gather under the next iteration's first forward
  /// (Megatron --overlap-param-gather, §5.4); needs --overlap-grad-reduce and the distributed optimizer.
  bool overlap_param_gather = false;
  /// Megatron --overlap-param-gather-with-optimizer-step: the all-gather also starts under the optimizer
  /// step (its first bucket there, §5.4); needs --overlap-param-gather and interleaving.
  bool overlap_param_gather_with_step = false;
  /// The job came through Megatron-LM's argument parser (pretrain_gpt.py), so its validate_args checks apply;
  /// false for Megatron-Bridge, which builds Megatron-Core's configs without them (--bridge-config).
  bool megatron_lm_arg_checks = true;
  /// Transformer Engine's userbuffers overlap of the sequence-parallel all-gathers and reduce-scatters
  /// with the linear layers' GEMMs (Megatron --tp-comm-overlap, §5.5.1); needs --sequence-parallel.
  bool tp_comm_overlap = false;
  /// Megatron-Core --overlap-moe-expert-parallel-comm: the EP all-to-alls of one micro-batch under the
  /// compute of another (combined 1F1B, §5.5.3).
  bool overlap_moe_ep_comm = false;
  /// Megatron-Core --delay-wgrad-compute: combined 1F1B runs the experts' and attention's weight-gradient
  /// GEMMs after the backward dispatch is launched (model_chunk_schedule_plan.py, backward_dw), as cover
  /// for it; needs overlap_moe_ep_comm. §5.5.3's bound already counts the pass's wgrad GEMMs as cover.
  bool delay_wgrad_compute = false;
  /// Megatron-Core's deallocate_pipeline_outputs false (Megatron-Bridge's DeepSeek providers): each sent
  /// stage output stays allocated until its micro-batch's backward (§3.5). Megatron-LM always frees it.
  bool keep_pipeline_outputs = false;
  /// Megatron-Core --moe-shared-expert-overlap: the shared experts' fc1 and fc2 on their own stream
  /// under the EP dispatch and combine all-to-alls of the same layer (§5.5.3).
  bool moe_shared_expert_overlap = false;
  /// Megatron's overlap_p2p_comm (on unless --no-overlap-p2p-communication): the interleaved schedule's
  /// pipeline transfers run beside the next chunk's work; arguments.py turns it off without
  /// interleaving (§5.4).
  bool overlap_p2p_comm = true;
  /// Megatron's --overlap-p2p-communication-warmup-flush: the warm-up and cool-down transfers overlap
  /// too; by default they block (schedules.py, §5.4). Needs overlap_p2p_comm.
  bool overlap_p2p_warmup_flush = false;
  /// Replicas of the sharded state over the data-parallel domain (HSDP, docs/formulas.md §2.5): the
  /// DP×CP ranks split into this many groups of consecutive ranks, each sharding the optimizer state
  /// (and with FSDP the gradients and parameters) among itself, with the gradient shards all-reduced
  /// across the groups. Megatron --num-distributed-optimizer-instances; torchtitan's
  /// data_parallel_replicate_degree (FSDP2 over a 2-D mesh). 1: one group, full sharding.
  std::int64_t dp_replicas = 1;
  /// DeepSpeed's zero_optimization.overlap_comm: gradient reduction under the backward (§5.5.2).
  /// framework_default: on at ZeRO stage 3, off below (deepspeed/runtime/zero/config.py).
  enum class toggle { framework_default, on, off } overlap_comm = toggle::framework_default;
  /// DeepSpeed ZeRO-1/2's gradient reduction (runtime/zero/stage_1_and_2.py `average_tensor`, §4.2.4): true,
  /// each bucket all-reduced whole and every rank keeping its slice (use_multi_rank_bucket_allreduce, on
  /// by default in today's DeepSpeed; reduce_scatter false all-reduces too); false, each rank's slice
  /// reduced to it with a dist.reduce of its own (use_multi_rank_bucket_allreduce off, and DeepSpeed
  /// before that key: 2021-2022's BLOOM and seeds/002), as many bytes as a reduce-scatter.
  /// framework_default: all-reduce (--zero-grad-reduce).
  toggle zero_bucket_all_reduce = toggle::framework_default;
  /// ZeRO-3/FSDP parameter prefetch (DeepSpeed stage3_prefetch_bucket_size, elements; FSDP's
  /// forward/backward prefetch): > 0 hides the per-layer gathers under compute, 0 exposes them; < 0 the
  /// framework's default (prefetch on).
  std::int64_t zero3_prefetch_bucket_elements = -1;
  /// DeepSpeed's stage3_max_reuse_distance, elements: a gathered parameter whose next use lies within
  /// this many parameter elements is kept, else released and gathered again. Under full recomputation
  /// the recomputed forward and the backward of a layer both use it (§4.2.4); < 0: the default, 1e9.
  std::int64_t zero3_max_reuse_elements = -1;
  /// ZeRO-3/FSDP launch and synchronisation cost per fetched module (6 per transformer layer: QKV,
  /// projection, fc1, fc2, two norms) per pass, that the GPU waits for (--zero3-fetch-overhead-us,
  /// §5.9); 0 for today's batched, asynchronous fetches.
  double zero3_fetch_overhead_s = 0;
  /// DeepSpeed before 0.5.5: each parameter tensor all-gathered on its own into a list of per-rank views,
  /// copied back rank by rank (--zero3-gather-per-parameter, §5.9).
  bool zero3_gather_per_parameter = false;
  /// NCCL buffers of one communicator on one GPU: NCCL_BUFFSIZE (4 MiB) × send/recv × channels (§3.8).
  std::int64_t nccl_buffer_bytes_per_communicator = 192ll << 20;
  /// DeepSpeed's data_types.grad_accum_dtype; bf16 training defaults to fp32 accumulation (BF16_Optimizer).
  dtype grad_accum_dtype = dtype::fp32;
  bool grad_accum_dtype_set = false;
  /// Host time per transformer layer per pass (forward, recomputed forward, backward) that the GPU
  /// waits for; < 0: the framework's default (docs/formulas.md §5.9).
  double host_overhead_per_layer_pass_s = -1;
};

/// Ranks that shard the state among themselves: DP×CP / dp_replicas (all of DP×CP without HSDP, §2.5).
inline std::int64_t dp_shard_size(const parallel_config& p, const training_config& t) {
  return t.dp_replicas > 1 ? p.dp * p.cp / t.dp_replicas : p.dp * p.cp;
}

/// DeepSpeed's overlap_comm as resolved: the flag, else on at ZeRO stage 3 (runtime/zero/config.py).
inline bool overlap_comm_on(const training_config& t) {
  if (t.framework != framework_kind::deepspeed) return false;
  if (t.overlap_comm == training_config::toggle::framework_default) return t.zero_stage == 3;
  return t.overlap_comm == training_config::toggle::on;
}

/// Whether DeepSpeed ZeRO-1/2 all-reduces each gradient bucket (§4.2.4): the flag, else today's default.
inline bool zero_bucket_all_reduce_on(const training_config& t) {
  return t.framework == framework_kind::deepspeed && (t.zero_stage == 1 || t.zero_stage == 2) &&
         t.zero_bucket_all_reduce != training_config::toggle::off;
}

/// Megatron-FSDP's strategy as the ZeRO stage, with the distributed optimizer it runs; optim (stage 1) is
/// the distributed optimizer itself, so the flag is cleared (§3.1). Nothing without --use-megatron-fsdp.
void resolve_megatron_fsdp(training_config& t);
/// What the framework forces on a training configuration whose ZeRO stage it runs (§3.1): Megatron's
/// distributed optimizer is its ZeRO-1 and bf16 accumulates in fp32 (arguments.py); DeepSpeed's
/// grad_accum_dtype (bf16 accumulates in fp32 unless given); FSDP keeps fp32 gradients.
void apply_framework_defaults(training_config& t);
/// Whether DeepSpeed's BF16_Optimizer runs (runtime/engine.py _do_optimizer_sanity_check): the one
/// expression memory, communication and compute read, through the job's optimizer row.
bool runs_bf16_optimizer(const training_config& t);
/// The (framework, ZeRO stage, optimizer wrapper) row a (finalized) training configuration runs (§3.1).
const optimizer_row& optimizer_of(const training_config& t);
/// The roles of a (finalized) training configuration running `row`. Mixed precision (bf16, fp16) keeps
/// 16-bit weights, activations and an fp32 master; fp32 keeps everything in fp32; FP8 GEMMs keep bf16
/// weights and activations (Transformer Engine casts at the GEMM). Gradients accumulate in fp32 with
/// accumulate_allreduce_grads_in_fp32 and the reduction moves what the row says: the accumulation
/// buffer, or the model's dtype (DeepSpeed's ZeRO optimizer, its communication_data_type).
precision_roles roles_of(const training_config& t, const optimizer_row& row);
/// The same with the row the configuration runs (optimizer_of).
precision_roles roles_of(const training_config& t);

/// Everything one estimate needs.
struct job_spec {
  model_spec model;
  cluster_spec cluster;
  parallel_config parallel;
  training_config training;
  std::int64_t num_gpus = 0;  ///< world size
  /// The facts every estimator reads, worked out once by finalize_job (layout_violation, resolve_job).
  resolved_job resolved;

  std::int64_t num_microbatches() const;  ///< per pipeline, per iteration: gbs / (mbs·dp)
  std::int64_t model_parallel_size() const { return parallel.tp * parallel.pp * parallel.cp; }
};

/// Check the layout against the model and derive everything the flag parser used to: the world size
/// (TP·PP·CP·DP when num_gpus is 0), dp, the nodes occupied (cluster.num_nodes), layers per model chunk
/// from vpp (or vpp from layers per chunk), the padded vocabulary and the defaults the
/// frameworks force (bf16 ⇒ fp32 grad accumulation in Megatron). Throws input_error naming the flags.
void finalize_job(job_spec& job);

/// finalize_job's layout rules and derivations without throwing, for callers that try many layouts
/// (the search's prefilter): "" once `job` is finalized, else the first rule it breaks, worded as
/// finalize_job throws it (the job is then left part-derived). The model and cluster are not
/// re-validated: finalize_model and validate_cluster have run on them.
std::string layout_violation(job_spec& job);
/// The attention kernel the job runs: the framework's default (fused for Megatron-Core and FSDP,
/// unfused for Megatron-DeepSpeed) unless --attention-backend or --use-flash-attn chose (§5.2).
/// finalize_job applies it; a search's base job, which is never finalized, needs it before its bound.
void resolve_attention(training_config& t);
/// Work out job.resolved from a job whose rules hold (layout_violation calls it last; the search's bound
/// calls it on candidates it prices before their rules are checked).
void resolve_job(job_spec& job);
/// The rules a job without a layout still needs (`trainplan model`, a search's base job): TP in range,
/// since it pads the vocabulary (§1.1), and the global batch at most 2^30 samples. "" when met.
std::string model_view_violation(const job_spec& job);

}  // namespace trainplan
