// What each training framework allows and runs (docs/formulas.md §3.1-§3.3, §4.2.4, §5.9): one row per
// framework for the layout it allows, and one row per (framework, ZeRO stage, optimizer wrapper) for the
// state it keeps, the data-parallel collectives of a step and how gradients accumulate. Memory,
// communication, compute and the search read these rows; none of them decides on its own which
// optimizer a job runs.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace trainplan {

enum class framework_kind { megatron, deepspeed, fsdp };
std::string_view to_string(framework_kind k);

struct training_config;  // job.h
struct model_spec;       // model.h

/// What a pipeline stage does with the output it sent to the next stage, until that micro-batch's
/// backward (§3.5): Megatron frees its storage after the send (deallocate_output_tensor), DeepSpeed's
/// pipeline engine keeps it partitioned over the TP group, torch.distributed.pipelining keeps it as it was
/// sent (a sequence shard with SP).
enum class sent_output_hold : std::uint8_t { freed, kept_tp_partitioned, kept };

/// How context parallelism exchanges the sequence (Megatron --cp-comm-type; docs/formulas.md §4.2.2): the
/// K/V ring (p2p), an all-gather of K and V, or all-to-alls of Q, K, V and the output (a2a, Ulysses-style:
/// each rank attends over the whole sequence for heads / CP). framework_default: finalize_job takes the
/// framework's (framework_traits::cp_comm_default).
enum class cp_comm_kind { framework_default, p2p, all_gather, a2a };

/// Whose code runs context-parallel attention (§4.2.2, §5.3): Transformer Engine's AttnFuncWithCP*
/// (Megatron), or PyTorch's context_parallel ring attention (torch/distributed/tensor/experimental/
/// _attention.py `_templated_ring_attention`, which torchtitan runs): an SDPA call per ring step, its
/// outputs merged in fp32 and dK/dV accumulated in fp32 and passed round the ring.
enum class cp_attention_kind : std::uint8_t { transformer_engine, torch_ring };

/// What a training framework allows and does beside its optimizer: one row per framework
/// (src/core/job/framework.cc), read by the layout rules, the search, the pipeline split, the traffic
/// tables and the compute model instead of switches on framework_kind.
struct framework_traits {
  framework_kind kind;
  std::string_view name;
  bool interleaving;                        ///< Megatron's virtual pipeline (interleaved 1F1B)
  bool sequence_parallel;                   ///< Megatron's --sequence-parallel
  bool uneven_pipeline_split;               ///< DeepSpeed's partition_uniform (§2.2)
  bool tied_embedding_module;               ///< tied copy = the whole embedding module (DeepSpeed), else the word embedding
  std::int64_t bucket_elements;             ///< default reduce/gather bucket, elements; 0: one bucket (§4.2.4)
  double host_s_per_recomputed_layer_pass;  ///< host time per layer pass with full recomputation (§5.9)
  bool fused_attention;                     ///< its default attention is a fused (flash) kernel
  /// Near capacity its ranks slow down (the caching allocator frees and retries, §5.9): measured only
  /// with DeepSpeed (BLOOM's 2022 runs); the others get no such term, since a memory estimate's own
  /// error would otherwise become a time error.
  bool allocator_pressure;
  /// Its fused attention is FlashAttention-2 (PyTorch SDPA's flash backend, the flash_attn package), not
  /// Transformer Engine's cuDNN kernel (§5.6).
  bool fa2_attention;
  sent_output_hold sent_output;  ///< its default; Megatron-Core's deallocate_pipeline_outputs false keeps it
  /// Under --fp8-format its routed experts run in FP8 too (Transformer Engine's grouped linear, §5.1.3);
  /// torchtitan's float8 converter swaps nn.Linear modules alone (torchao Float8Linear), the routed experts
  /// being grouped parameters that only its quantize.grouped_mm converter (rowwise, refused) takes.
  bool fp8_routed_experts = true;
  /// Under --fp8-format each linear casts its 16-bit weight to FP8 in every forward (torchao's Float8Linear:
  /// its amax, then the cast), where Transformer Engine casts once an iteration (§5.1.3).
  bool fp8_weight_cast_each_pass = false;
  cp_attention_kind cp_attention = cp_attention_kind::transformer_engine;
  /// --cp-comm-type when none is given: Megatron's p2p; PyTorch's context_parallel all-gathers K/V once
  /// (_ContextParallelOptions.rotate_method = ALL_GATHER; torchtitan's context_parallel_rotate_method
  /// "allgather").
  cp_comm_kind cp_comm_default = cp_comm_kind::p2p;
};
const framework_traits& traits_of(framework_kind k);

// ---- the loss (§3.6, §5.3) ----------------------------------------------------------------------

/// The cross-entropy over the logits as a framework runs it: the bytes each logit element costs its
/// memory-bound kernels (e·(16-bit accesses) + fp32 bytes; e the logits' element size) and the buffers
/// that exist at once. One row per (framework, fused); src/core/job/framework.cc gives each row's source.
struct cross_entropy_kernels {
  std::string_view runs;        ///< in the framework's own names
  double forward_fp32_bytes;    ///< per element, beside one 16-bit read of the logits
  int forward_kernels;
  double backward_fp32_bytes;   ///< per element, beside one 16-bit write of the logits' gradient
  int backward_kernels;
  double buffer_fp32_bytes;     ///< per element at the forward's peak, beside the 16-bit logits
  /// Per element at the backward's peak, the 16-bit logits freed by then (fp32 tensors alive together).
  double backward_peak_fp32_bytes;
  /// 16-bit accesses per element beyond the forward's one read and the backward's one write (a kernel that
  /// reads the logits twice, or writes the gradient into them).
  double forward_extra_16bit = 0, backward_extra_16bit = 0;
  /// The loss hands autograd an fp32 gradient, cast back to the logits' dtype (4 + e at once).
  bool fp32_gradient = true;
  /// The 16-bit logits are freed before the loss's backward, whose new fp32 buffers are larger than their
  /// block: PyTorch's caching allocator keeps that block reserved and unused through the backward's peak,
  /// e per element above allocated (§3.8).
  bool strands_logits_block = false;
  /// 16-bit tensors per element alive at the backward's peak (×e): a compiled loss keeps the logits it saved
  /// and writes the 16-bit gradient beside them.
  double backward_peak_16bit = 0;
};
/// The row a job runs: Megatron's fused loss with --cross-entropy-loss-fusion (native or Transformer
/// Engine's, --cross-entropy-fusion-impl), else the framework's own; FSDP's at TP > 1 (`tp`) is torchtitan's
/// loss_parallel on vocab-sharded DTensor logits.
const cross_entropy_kernels& cross_entropy_of(const training_config& t, std::int64_t tp = 1);

// ---- a layer's memory-bound kernels (§5.3) -------------------------------------------------------

/// One memory-bound operation per element: 16-bit accesses (×e bytes), fp32 bytes and kernels.
struct elementwise_cost {
  double e_accesses = 0;
  double fp32_bytes = 0;
  int kernels = 0;
};
/// A layer's RMSNorm and RoPE as a framework's model code runs them, and whether its attention copies
/// grouped K/V out to every head (repeat_kv) and the output back to a contiguous layout. One row per
/// framework; src/core/job/framework.cc gives each row's source.
struct layer_kernels {
  std::string_view runs;
  elementwise_cost rmsnorm;  ///< per hidden element
  elementwise_cost rope;     ///< per query and key element (both tensors' kernels)
  bool gqa_copies;
  /// The attention block's residual add written by the MLP norm's kernel, which reads its two inputs and
  /// writes the sum and the normalised output in one pass (Inductor, within one compiled block).
  bool residual_into_norm = false;
};
/// The row of a job's framework, or Inductor's when torchtitan compiles each block (--torch-compile).
const layer_kernels& layer_kernels_of(const training_config& t);
/// K and V columns per token that one TP rank's attention call reads (§4.2.2, §5.3): every query head's
/// where the framework's model repeats grouped K/V (repeat_kv), else the groups' (MLA's own heads).
double attention_kv_columns(const model_spec& m, const training_config& t, std::int64_t tp);
/// The fused RMSNorm (Transformer Engine's, torchtitan's fused_rmsnorm): read and write, one kernel.
inline constexpr elementwise_cost kFusedNorm{2, 0, 1};
/// The eager RMSNorm (torchtitan's RMSNorm module as PyTorch ops in fp32, src/core/job/framework.cc).
inline constexpr elementwise_cost kEagerRmsNorm{4, 28, 7};

// ---- the optimizer a job runs (§3.1-§3.3, §4.2.4) ------------------------------------------------

/// What one parameter's state costs, in units the precision roles give (§3.1-§3.3).
enum class state_unit : std::uint8_t {
  none,
  weight,           ///< the stored weight dtype (2 bytes mixed, 4 in fp32)
  grad_buffer,      ///< the buffer the backward accumulates into (precision_roles::gradients)
  fp32,             ///< 4 bytes
  fp32_if_mixed,    ///< 4 bytes under mixed precision, else nothing
  weight_if_mixed,  ///< a 16-bit copy under mixed precision, else nothing
  optimizer,        ///< master (mixed precision) + moments
  moments,          ///< Adam m and v, or SGD momentum
};
inline constexpr std::size_t kNumStateUnits = 8;
/// coef × unit per parameter held, divided by the D ranks that shard the state when `sharded`.
struct state_term {
  double coef = 0;
  state_unit of = state_unit::none;
  bool sharded = false;
};
using state_terms = std::array<state_term, 2>;

/// A data-parallel collective of a step (§4.2.4); the communication model prices each.
enum class dp_collective : std::uint8_t {
  grad_all_reduce,                 ///< once per iteration, after the last backward
  grad_reduce_scatter,             ///< once per iteration (Megatron's distributed optimizer)
  param_all_gather,                ///< the updated parameters, after the step
  grad_reduce_scatter_per_microbatch,  ///< DeepSpeed ZeRO-2/3: every micro-batch's gradients
  grad_reduce_scatter_per_unit,    ///< FSDP: each unit's gradients, every micro-batch
  param_gather_forward_per_unit,   ///< ZeRO-3/FSDP: each layer's parameters before its forward
  param_gather_backward_per_unit,  ///< ZeRO-3/FSDP FULL_SHARD: again before its backward
};

/// How a micro-batch's weight gradients reach the buffer the optimizer reads (§5.9).
enum class grad_accumulation : std::uint8_t {
  in_gemm,        ///< Megatron's gradient_accumulation_fusion: the wgrad GEMM adds into main_grad
  autograd,       ///< PyTorch's AccumulateGrad into the 16-bit .grad: read old, read new, write
  autograd_then_buffer,  ///< and then copied into the optimizer's own buffer every micro-batch (DeepSpeed
                         ///< BF16_Optimizer.update_hp_grads: read the 16-bit grad, read and write the buffer)
  upcast_into_buffer,    ///< FSDP2 without gradient sync: the unit's 16-bit .grad added into its unsharded
                         ///< reduce-dtype buffer (FSDPParam.accumulate_unsharded_grad_if_needed: read the
                         ///< 16-bit grad, read and write the buffer)
};

/// Which dtype the data-parallel reduction moves (§4.2.4).
enum class reduce_dtype : std::uint8_t {
  grad_buffer,  ///< the accumulation buffer's (Megatron's main_grad, BF16_Optimizer's, FSDP's reduce_dtype)
  model,        ///< the model's 16-bit dtype (DeepSpeed ZeRO's communication_data_type default)
};

/// One (framework, ZeRO stage, optimizer wrapper) row: what the job keeps per parameter a GPU holds,
/// what a step's data-parallel traffic is, and how gradients accumulate. Sources per row in
/// src/core/job/framework.cc and docs/formulas.md §3.1.
struct optimizer_row {
  framework_kind framework;
  int zero_stage;
  bool bf16_optimizer;   ///< DeepSpeed's BF16_Optimizer (runtime/bf16_optimizer.py)
  bool with_pp;          ///< the framework runs this stage with pipeline parallelism
  std::string_view runs;  ///< what runs, in the framework's own names
  state_terms weights, gradients, optimizer, step_transient;
  bool offload_gradients;  ///< with --offload-optimizer the gradients stream to CPU too
  /// The gradients are reduced through a flat bucket of reduce_bucket_size elements (DeepSpeed's engine
  /// buffered_allreduce_fallback and its ZeRO optimizer's IPG bucket; §3.7).
  bool reduce_bucket;
  std::array<dp_collective, 3> dp;
  int num_dp;
  grad_accumulation accumulation;
  reduce_dtype reduces_in;
  /// Megatron-FSDP's rows: a Megatron job runs them with --use-megatron-fsdp alone.
  bool megatron_fsdp = false;
  /// The row a pipeline runs (PP > 1) in place of the framework's row of that stage: FSDP2 under
  /// torch.distributed.pipelining, whose units stay unsharded from the first forward to the last
  /// backward, gathered under the first micro-batch's forward and reduced once after the last backward.
  bool pipelined = false;
  /// The optimizer step updates 1/D of the parameters: its state is sharded (§5.5).
  bool step_sharded() const { return optimizer[0].sharded; }
};

/// Whether two rows keep the same state, run the same collectives and accumulate alike (DeepSpeed's
/// BF16_Optimizer at stage 0 and 1): a search tries one of them.
bool runs_alike(const optimizer_row& a, const optimizer_row& b);
/// Every row, for the account tests and the docs.
const std::array<optimizer_row, 14>& optimizer_rows();
/// The row of `framework` at `zero_stage`, with or without BF16_Optimizer, at pipeline size `pp` (a
/// pipelined row where the framework has one); null when the framework has no such stage (the layout
/// rules refuse it first).
const optimizer_row* find_optimizer_row(framework_kind framework, int zero_stage, bool bf16_optimizer, std::int64_t pp);
/// The ZeRO stages `framework` runs at this pipeline size, ascending; for Megatron, with or without
/// Megatron-FSDP (`megatron_fsdp`: its rows alone, else the others).
std::array<bool, 4> zero_stages_of(framework_kind framework, std::int64_t pp, bool megatron_fsdp = false);

}  // namespace trainplan
