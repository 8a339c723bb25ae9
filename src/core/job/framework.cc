// The frameworks' tables (include/trainplan/core/job/framework.h; docs/formulas.md §3.1-§3.3, §4.2.4).
#include "trainplan/core/job/framework.h"

#include "trainplan/core/job/job.h"

#include "trainplan/core/base/checked.h"

namespace trainplan {

namespace {

// Sources: Megatron-LM arguments.py (--sequence-parallel, --num-layers-per-virtual-pipeline-stage),
// DeepSpeed runtime/utils.py partition_uniform, runtime/zero/config.py (reduce_bucket_size =
// allgather_bucket_size = 5e8), activation_checkpointing (RNG state save/restore per layer: 2.5 ms
// fitted on seeds/000, §5.9). Attention: Megatron-Core's default --transformer-impl transformer_engine
// runs TE's fused attention (--attention-backend auto); PyTorch's scaled_dot_product_attention picks
// its flash kernel; Megatron-DeepSpeed (BLOOM) ran the unfused core. A sent stage output (§3.5):
// Megatron-Core schedules.py deallocate_output_tensor (Megatron-LM's arguments.py sets
// deallocate_pipeline_outputs; Megatron-Core's own default is False); DeepSpeed runtime/pipe/engine.py
// _exec_forward_pass frees the whole output and keeps the TP partition it sends (PartitionedTensor,
// is_pipe_partitioned) in pipe_buffers['outputs']; PyTorch
// torch/distributed/pipelining/stage.py forward_one_chunk keeps output_tuple in fwd_cache until
// backward_one_chunk. Context parallelism: Megatron-Core's TransformerEngine attention (--cp-comm-type,
// default p2p); torchtitan wraps each step in PyTorch's context_parallel (torch/distributed/tensor/
// experimental/_attention.py: _ContextParallelOptions rotate_method ALL_GATHER, convert_to_f32 True).
constexpr std::array<framework_traits, 3> kFrameworks = {{
    {framework_kind::megatron, "megatron", true, true, false, false, 0, 0.0, true, false, false, sent_output_hold::freed,
     true, false},
    {framework_kind::deepspeed, "deepspeed", false, false, true, true, 500'000'000, 2.5e-3, false, true, true,
     sent_output_hold::kept_tp_partitioned, true, false},
    {framework_kind::fsdp, "fsdp", false, false, false, false, 0, 0.0, true, false, true, sent_output_hold::kept,
     false, true, cp_attention_kind::torch_ring, cp_comm_kind::all_gather},
}};

using su = state_unit;
using dc = dp_collective;
using ga = grad_accumulation;

// One row per (framework, ZeRO stage, optimizer wrapper), §3.1-§3.3 and §4.2.4. Sources:
// - Megatron: megatron/core/distributed (DDP: a main_grad buffer in fp32 with bf16,
//   accumulate_allreduce_grads_in_fp32; its all-reduce, or with the distributed optimizer its
//   reduce-scatter), core/optimizer/distrib_optimizer.py (fp32 master and moments sharded over DP, the
//   updated parameters all-gathered), gradient_accumulation_fusion (wgrad GEMMs add into main_grad).
// - DeepSpeed: runtime/engine.py _do_optimizer_sanity_check (which wrapper runs: BF16_Optimizer for
//   bf16 at stage 0, and at stage 1 with fp32 grad_accum_dtype and no offload; else the ZeRO optimizer
//   from stage 1, FP16_Optimizer or none at stage 0); runtime/bf16_optimizer.py
//   _setup_for_real_optimizer (partition_count = the DP world size: the fp32 master and moments are
//   partitioned at stage 0 too; a full grad_acc_dtype gradient buffer beside the 16-bit .grad;
//   update_hp_grads after every micro-batch; the engine all-reduces the buffer and all_gather_dp_groups
//   gathers the updated 16-bit partitions); zero/stage_1_and_2.py (16-bit grads and the fp32 gradient of
//   the rank's partition; reduce-scatter in communication_data_type, the model's by default; stage 2 every
//   micro-batch); fp16/fused_optimizer.py (FP16_Optimizer's step: per-parameter fp32 copies and their
//   concatenation, 8 bytes); estimate_zero2_model_states_mem_needs (2Ψ + 18Ψ/N), estimate_zero3 (18Ψ/N);
//   zero/stage3.py (with contiguous_gradients, on by default, a flat IPG buffer of reduce_bucket_size
//   elements per communication dtype, allocated at start-up).
// - PyTorch FSDP: the fp32 sharded FlatParameter is the master; SHARD_GRAD_OP keeps the 16-bit unsharded
//   parameters between forward and backward; reduce_dtype fp32 (torchtitan's mixed_precision_reduce).
// - FSDP2 with a pipeline (torchtitan parallelize.py apply_fsdp: reshard_after_forward = not pp_enabled;
//   torch/distributed/pipelining/stage.py backward_maybe_with_nosync: set_reshard_after_backward(False)
//   and set_requires_gradient_sync(False) but for the last backward, whose post_backward reduce-scatters
//   every unit): the 16-bit unsharded parameters live from the first forward to the last backward, the
//   gradients accumulate unsharded in reduce_dtype (FSDPParam.to_accumulated_grad_if_needed), one
//   all-gather and one reduce-scatter per iteration.
constexpr std::array<optimizer_row, 14> kOptimizerRows = {{
    {framework_kind::megatron, 0, false, true, "Megatron DDP, Float16OptimizerWithFloat16Params",
     {{{1, su::weight}}}, {{{1, su::grad_buffer}}}, {{{1, su::optimizer}}}, {}, false, false,
     {dc::grad_all_reduce}, 1, ga::in_gemm, reduce_dtype::grad_buffer},
    {framework_kind::megatron, 1, false, true, "Megatron DDP, DistributedOptimizer",
     {{{1, su::weight}}}, {{{1, su::grad_buffer}}}, {{{1, su::optimizer, true}}}, {}, false, false,
     {dc::grad_reduce_scatter, dc::param_all_gather}, 2, ga::in_gemm, reduce_dtype::grad_buffer},
    // Megatron-FSDP (megatron/core/distributed/fsdp; docs/user-guide/features/megatron_fsdp.md): main
    // parameters and Adam's moments sharded as the distributed optimizer's (12/D), the main gradients
    // sharded and reduce-scattered after every backward; optim_grads_params shards the 16-bit parameters
    // too and gathers each unit (a transformer layer) before its forward and again before its backward.
    {framework_kind::megatron, 2, false, false, "Megatron-FSDP optim_grads",
     {{{1, su::weight}}}, {{{1, su::grad_buffer, true}}}, {{{1, su::optimizer, true}}}, {}, false, false,
     {dc::grad_reduce_scatter_per_unit, dc::param_all_gather}, 2, ga::in_gemm, reduce_dtype::grad_buffer, true},
    {framework_kind::megatron, 3, false, false, "Megatron-FSDP optim_grads_params",
     {{{1, su::weight, true}}}, {{{1, su::grad_buffer, true}}}, {{{1, su::optimizer, true}}}, {}, false, false,
     {dc::param_gather_forward_per_unit, dc::param_gather_backward_per_unit, dc::grad_reduce_scatter_per_unit}, 3,
     ga::in_gemm, reduce_dtype::grad_buffer, true},
    {framework_kind::deepspeed, 0, true, true, "DeepSpeed BF16_Optimizer",
     {{{1, su::weight}}}, {{{1, su::weight}, {1, su::grad_buffer}}}, {{{1, su::optimizer, true}}}, {}, false, true,
     {dc::grad_all_reduce, dc::param_all_gather}, 2, ga::autograd_then_buffer, reduce_dtype::grad_buffer},
    {framework_kind::deepspeed, 1, true, true, "DeepSpeed BF16_Optimizer",
     {{{1, su::weight}}}, {{{1, su::weight}, {1, su::grad_buffer}}}, {{{1, su::optimizer, true}}}, {}, false, true,
     {dc::grad_all_reduce, dc::param_all_gather}, 2, ga::autograd_then_buffer, reduce_dtype::grad_buffer},
    {framework_kind::deepspeed, 0, false, true, "DeepSpeed FP16_Optimizer (or the bare optimizer in fp32)",
     {{{1, su::weight}}}, {{{1, su::weight}}}, {{{1, su::optimizer}}}, {{{2, su::fp32_if_mixed}}}, false, true,
     {dc::grad_all_reduce}, 1, ga::autograd, reduce_dtype::model},
    {framework_kind::deepspeed, 1, false, true, "DeepSpeed ZeRO stage 1",
     {{{1, su::weight}}}, {{{1, su::weight}, {1, su::fp32_if_mixed, true}}}, {{{1, su::optimizer, true}}}, {},
     false, true, {dc::grad_reduce_scatter, dc::param_all_gather}, 2, ga::autograd, reduce_dtype::model},
    {framework_kind::deepspeed, 2, false, false, "DeepSpeed ZeRO stage 2",
     {{{1, su::weight}}}, {{{1, su::weight, true}, {1, su::fp32, true}}}, {{{1, su::optimizer, true}}}, {}, true, true,
     {dc::grad_reduce_scatter_per_microbatch, dc::param_all_gather}, 2, ga::autograd, reduce_dtype::model},
    {framework_kind::deepspeed, 3, false, false, "DeepSpeed ZeRO stage 3",
     {{{1, su::weight, true}}}, {{{1, su::fp32, true}}}, {{{1, su::optimizer, true}}}, {}, true, true,
     {dc::param_gather_forward_per_unit, dc::param_gather_backward_per_unit, dc::grad_reduce_scatter_per_microbatch},
     3, ga::autograd, reduce_dtype::model},
    {framework_kind::fsdp, 0, false, false, "PyTorch FSDP NO_SHARD",
     {{{1, su::fp32}, {1, su::weight_if_mixed}}}, {{{1, su::fp32}}}, {{{1, su::moments}}}, {}, false, false,
     {dc::grad_all_reduce}, 1, ga::autograd, reduce_dtype::grad_buffer},
    {framework_kind::fsdp, 2, false, false, "PyTorch FSDP SHARD_GRAD_OP",
     {{{1, su::fp32, true}, {1, su::weight_if_mixed}}}, {{{1, su::fp32, true}}}, {{{1, su::moments, true}}}, {},
     false, false, {dc::param_gather_forward_per_unit, dc::grad_reduce_scatter_per_unit}, 2, ga::autograd,
     reduce_dtype::grad_buffer},
    {framework_kind::fsdp, 3, false, false, "PyTorch FSDP FULL_SHARD",
     {{{1, su::fp32, true}}}, {{{1, su::fp32, true}}}, {{{1, su::moments, true}}}, {}, false, false,
     {dc::param_gather_forward_per_unit, dc::param_gather_backward_per_unit, dc::grad_reduce_scatter_per_unit}, 3,
     ga::autograd, reduce_dtype::grad_buffer},
    {framework_kind::fsdp, 3, false, true, "PyTorch FSDP2 fully_shard under torch.distributed.pipelining",
     {{{1, su::fp32, true}, {1, su::weight_if_mixed}}}, {{{1, su::fp32}}}, {{{1, su::moments, true}}}, {}, false, false,
     {dc::param_all_gather, dc::grad_reduce_scatter}, 2, ga::upcast_into_buffer, reduce_dtype::grad_buffer, false, true},
}};

}  // namespace

const framework_traits& traits_of(framework_kind k) {
  const framework_traits& t = kFrameworks[static_cast<std::size_t>(k)];
  TRAINPLAN_CHECK(t.kind == k);
  return t;
}

std::string_view to_string(framework_kind k) { return traits_of(k).name; }

namespace {

// §3.6, §5.3: the loss kernels, counted from each framework's code (16-bit logits of e bytes, fp32 math):
// - Megatron-Core tensor_parallel/cross_entropy.py (_VocabParallelCrossEntropy; Megatron-DeepSpeed's
//   mpu/cross_entropy.py after the caller's output.float() is the same sequence): forward .float() (e in, 4
//   out), max (4), in-place subtract (4 + 4), exp into itself (4 + 4), sum (4), in-place divide (4 + 4):
//   e + 36 in 6 kernels; backward in-place scale (4 + 4) and autograd's cast back (4 in, e out): e + 12 in
//   2. One fp32 buffer lives beside the 16-bit logits: e + 4.
// - Megatron-Core fusions/fused_cross_entropy.py (--cross-entropy-loss-fusion, jit_fuser = torch.compile):
//   calculate_logits_max (e in, 4 out), calculate_predicted_logits (4 in, 4 out), calculate_cross_entropy_loss
//   (4 + 4): e + 20 in 3; calculate_gradients reads the softmax and writes the bf16 gradient: e + 4 in 1.
// - PyTorch F.cross_entropy on pred.float() (torchtitan components/loss.py): .float() (e + 4), log_softmax
//   (max, sum-exp and write passes: 4 + 4 + 4 + 4): e + 20 in 2; backward nll_loss's zeroed gradient (4),
//   log_softmax's backward (4 + 4 + 4), the cast back (4 + e): e + 20 in 4. The fp32 copy and the
//   log-softmax output live at once: e + 8. In the backward (torchtitan's train step deletes the logits
//   first, "need to free to before bwd to avoid peaking memory") log_softmax's backward holds its saved
//   output, the gradient nll_loss hands it and its own: 12 fp32 bytes. Megatron's backward works in place
//   on the saved softmax: 4. The deleted logits' block (e) is smaller than either fp32 buffer the backward
//   allocates, so the caching allocator cannot hand it out and it stays reserved, unused, through that
//   peak (strands_logits_block, §3.8). Megatron's backward allocates only its cast back (e), which takes
//   the freed logits' block: nothing stranded.
// - Transformer Engine's parallel_cross_entropy (--cross-entropy-fusion-impl te; Megatron-Core
//   extensions/transformer_engine.py te_parallel_cross_entropy; transformer_engine/pytorch/cross_entropy.py
//   CrossEntropyFunction and triton/cross_entropy.py): online_softmax_kernel reads the logits (e) for each
//   row's max, sum and target logit, cross_entropy_kernel reads them again and writes the gradient. Until
//   TE's #3193 (2026-07-09, "Fix the numerical issue with the Fused CE loss") it writes it into the logits
//   in place (e): 3e in 2 kernels, nothing beside the logits, and the logits are the gradient autograd
//   gets (no cast); the backward's element_mul_kernel scales it in place (e + e, 1 kernel; skipped only
//   for a scalar 1.0, and Megatron hands it a per-token tensor). From #3193 the gradient is a new fp32
//   tensor: 2e + 4 in 2, 4 beside the logits; element_mul on it (4 + 4) and autograd's cast back (4 + e):
//   e + 12 in 2, as Megatron's own.
// - The same F.cross_entropy compiled by Inductor (torchtitan components/loss.py build_cross_entropy_loss:
//   torch.compile(loss_fn) when compile.components names "loss"): the fp32 cast, log_softmax and nll_loss
//   lower to one reduction kernel per row (the max and the sum of exponentials, each a loop over the row's
//   16-bit logits: 2e read, nothing written but per-row statistics), so no fp32 tensor of the logits' size
//   exists. AOTAutograd's partitioner saves the logits themselves (a graph input) and the per-row
//   statistics rather than the log-softmax, and the backward recomputes exp(x - lse) from them in one kernel
//   that writes the 16-bit gradient, the cast back fused (e read beside the e written). At the backward's
//   peak the saved logits and the gradient live together: 2e, and torchtitan's `del pred` frees nothing.
//   (PyTorch compiler developers: "memory-wise it's ~0 for just fwd and ~d_input for fw+bw",
//   Dao-AILab/quack#48, 2025-10-07.)
// - The same F.cross_entropy at TP > 1, where torchtitan's logits are a DTensor sharded over the vocabulary
//   and loss_parallel (its default; disabling it is refused by the reader) replaces log_softmax and
//   nll_loss with DTensor handlers (torch/distributed/tensor/parallel/loss.py): `_log_softmax` runs the
//   decomposition op by op with all-reduces of the max and the sum between: amax (4), x − max (4 + 4), exp
//   (4 + 4), sum (4), shifted − logsumexp (4 + 4), after the caller's .float() (e + 4): e + 36 in 6 kernels,
//   the fp32 copy, the shifted tensor and exp's or the result's alive at once: e + 12.
//   `_nll_loss_and_log_softmax_backward` fuses the two backwards without an all-gather: zeros_like (4), the
//   index_put of −1 at the targets, exp of the saved log-softmax (4 + 4), their sum (4 + 4 + 4), times the
//   gradient (4 + 4), then autograd's cast back (4 + e): e + 36 in 6; the saved result, grad_input (a local
//   alive until the handler returns), exp's output or the product, and the sum: 16 fp32 bytes at its peak.
//   The logits' freed block is stranded as for the eager loss.
constexpr std::array<cross_entropy_kernels, 8> kCrossEntropy = {{
    {"Megatron vocab_parallel_cross_entropy", 36, 6, 12, 2, 4, 4},
    {"Megatron fused_vocab_parallel_cross_entropy", 20, 3, 4, 1, 4, 4},
    {"Megatron-DeepSpeed vocab_parallel_cross_entropy", 36, 6, 12, 2, 4, 4},
    {"PyTorch F.cross_entropy (fp32)", 20, 2, 20, 4, 8, 12, 0, 0, true, true},
    {"Transformer Engine parallel_cross_entropy (gradient in place)", 0, 2, 0, 1, 0, 0, 2, 1, false},
    {"Transformer Engine parallel_cross_entropy (fp32 gradient)", 4, 2, 12, 2, 4, 4, 1, 0, true},
    {"PyTorch F.cross_entropy (fp32) compiled by Inductor", 0, 1, 0, 1, 0, 0, 1, 1, false, false, 2},
    {"PyTorch F.cross_entropy (fp32) on vocab-sharded DTensor logits (loss_parallel)", 36, 6, 36, 6, 12, 16, 0, 0,
     true, true},
}};
constexpr std::size_t kCompiledLossRow = 6;
constexpr std::size_t kLossParallelRow = 7;

}  // namespace

const cross_entropy_kernels& cross_entropy_of(const training_config& t, std::int64_t tp) {
  using impl = training_config::cross_entropy_impl;
  switch (t.framework) {
    case framework_kind::megatron:
      if (!t.cross_entropy_fusion) return kCrossEntropy[0];
      switch (t.cross_entropy_fusion_impl) {
        case impl::native: return kCrossEntropy[1];
        case impl::te: return kCrossEntropy[t.te_cross_entropy_fp32_gradient ? 5 : 4];
      }
      return kCrossEntropy[1];
    case framework_kind::deepspeed: return kCrossEntropy[2];
    case framework_kind::fsdp:
      return kCrossEntropy[t.torch_compile_loss ? kCompiledLossRow : tp > 1 ? kLossParallelRow : 3];
  }
  return kCrossEntropy[0];
}

namespace {

// §5.3: a layer's RMSNorm and RoPE kernels as each framework's model code runs them (16-bit accesses ×e,
// fp32 bytes, kernels; the backward is priced at twice the forward's bytes, as every memory-bound kernel):
// - Megatron-Core: Transformer Engine's fused RMSNorm (inside LayerNormLinear) and fused RoPE
//   (apply_rope_fusion): read and write once; attention takes grouped K/V as they are.
// - Megatron-DeepSpeed (BLOOM): Apex's fused LayerNorm; RoPE priced as fused (BLOOM runs ALiBi).
// - PyTorch eager as torchtitan's Llama runs it (torchtitan/models/norms.py RMSNorm, models/llama/model.py
//   apply_rotary_emb and repeat_kv, December 2024): RMSNorm is x.float() (e + 4), pow (4 + 4), mean (4),
//   rsqrt, the multiply (4 + 4), type_as (4 + e) and the weight's multiply (e + e): 4e + 28 in 7 kernels;
//   RoPE casts q and k to fp32 (e + 4), multiplies as complex numbers (4 + 4) and casts back (4 + e): 2e + 16
//   per element in 3 kernels each; repeat_kv expands K and V to every head (reshape of an expanded view: a
//   copy) and the output is made contiguous after its transpose.
// - torchtitan with torch.compile (parallelize.py apply_compile: torch.compile(transformer_block,
//   fullgraph=True) per block; embeddings, final norm, output and loss stay eager): Inductor lowers the
//   RMSNorm's fp32 chain (cast, pow, mean, rsqrt, multiplies) to one reduction kernel that reads x and
//   writes the output, and fuses a pointwise producer into it, so the attention block's residual add
//   (h = x + wo(·)) is written by the MLP norm's kernel; the second residual add ends the compiled graph
//   and stays a kernel of its own. RoPE's complex multiply is not lowered (Inductor has no codegen for
//   complex dtypes and falls back to the aten kernels, torch/_inductor/lowering.py "does not support code
//   generation for complex operators"), so RoPE is priced as eager; repeat_kv's reshape of an expanded
//   view and the output's transpose stay copies. SwiGLU's silu · mul is one kernel (apply_framework_defaults).
constexpr std::array<layer_kernels, 4> kLayerKernels = {{
    {"Transformer Engine's fused RMSNorm and RoPE", kFusedNorm, {2, 0, 2}, false},
    {"Apex's fused norms (Megatron-DeepSpeed)", kFusedNorm, {2, 0, 2}, false},
    {"PyTorch eager (torchtitan's RMSNorm, complex RoPE, repeat_kv)", kEagerRmsNorm, {2, 16, 6}, true},
    {"Inductor (torch.compile per block: fused RMSNorm with the residual add; complex RoPE and repeat_kv eager)",
     kFusedNorm, {2, 16, 6}, true, true},
}};
constexpr std::size_t kInductorRow = 3;

}  // namespace

const layer_kernels& layer_kernels_of(const training_config& t) {
  if (t.torch_compile && t.framework == framework_kind::fsdp) return kLayerKernels[kInductorRow];
  return kLayerKernels[static_cast<std::size_t>(t.framework)];
}

double attention_kv_columns(const model_spec& m, const training_config& t, std::int64_t tp) {
  if (layer_kernels_of(t).gqa_copies && !m.is_mla()) {
    return 2.0 * static_cast<double>(m.num_attention_heads / tp) * static_cast<double>(m.kv_channels);
  }
  return static_cast<double>(m.k_width() / tp + m.v_width() / tp);
}

const std::array<optimizer_row, 14>& optimizer_rows() { return kOptimizerRows; }

namespace {

bool same_terms(const state_terms& a, const state_terms& b) {
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].coef != b[i].coef || a[i].of != b[i].of || a[i].sharded != b[i].sharded) return false;
  }
  return true;
}

}  // namespace

bool runs_alike(const optimizer_row& a, const optimizer_row& b) {
  return a.framework == b.framework && same_terms(a.weights, b.weights) && same_terms(a.gradients, b.gradients) &&
         same_terms(a.optimizer, b.optimizer) && same_terms(a.step_transient, b.step_transient) &&
         a.offload_gradients == b.offload_gradients && a.reduce_bucket == b.reduce_bucket && a.dp == b.dp && a.num_dp == b.num_dp &&
         a.accumulation == b.accumulation && a.reduces_in == b.reduces_in && a.megatron_fsdp == b.megatron_fsdp &&
         a.pipelined == b.pipelined;
}

const optimizer_row* find_optimizer_row(framework_kind framework, int zero_stage, bool bf16_optimizer, std::int64_t pp) {
  const optimizer_row* plain = nullptr;
  for (const optimizer_row& r : kOptimizerRows) {
    if (r.framework != framework || r.zero_stage != zero_stage || r.bf16_optimizer != bf16_optimizer) continue;
    if (r.pipelined && pp > 1) return &r;  // a pipeline runs its own row where the framework has one
    if (!r.pipelined && plain == nullptr) plain = &r;
  }
  return plain;
}

std::array<bool, 4> zero_stages_of(framework_kind framework, std::int64_t pp, bool megatron_fsdp) {
  std::array<bool, 4> out{};
  for (const optimizer_row& r : kOptimizerRows) {
    if (r.framework == framework && r.megatron_fsdp == megatron_fsdp && (pp <= 1 ? !r.pipelined : r.with_pp)) {
      out[static_cast<std::size_t>(r.zero_stage)] = true;
    }
  }
  return out;
}

}  // namespace trainplan
