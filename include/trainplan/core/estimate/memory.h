// Per-GPU memory for every pipeline stage (docs/formulas.md §3).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "trainplan/core/job/job.h"
#include "trainplan/core/job/layout.h"

namespace trainplan {

/// Activation bytes of one transformer layer for one micro-batch on one GPU, by part
/// (docs/formulas.md §3.4). What a layer keeps for its backward pass.
struct layer_activation_bytes {
  double norms = 0;        ///< inputs of the blocks' norms (two in a transformer layer)
  double attention = 0;    ///< QKV input, Q/K/V, scores or flash outputs, projection input
  double mlp = 0;          ///< fc1 input, activation inputs/outputs, fc2 input (or the experts')
  double mamba = 0;        ///< a Mamba-2 block: in_proj input, its output, the gated norm's and out_proj's inputs
  double dropout_masks = 0;
  double total() const { return norms + attention + mlp + mamba + dropout_masks; }
};

/// Memory of one pipeline rank (one GPU of it). Bytes.
struct stage_memory {
  std::int64_t stage = 0;
  std::int64_t num_layers = 0;
  std::int64_t parameters = 0;          ///< parameters held by this GPU (after TP/EP split, before ZeRO)
  double weights_bytes = 0;             ///< 16-bit (or fp32) model weights resident on the GPU
  double gradients_bytes = 0;           ///< gradient buffers (fp32 main grads in Megatron)
  double optimizer_bytes = 0;           ///< fp32 master weights + optimizer moments on the GPU
  double activations_bytes = 0;         ///< stored activations of the micro-batches in flight
  double other_bytes = 0;               ///< transients at the peak (logits/loss, working layer), buffers
  double allocated_bytes = 0;           ///< peak of torch.cuda.max_memory_allocated
  double reserved_bytes = 0;            ///< what nvidia-smi shows: allocator reserve + CUDA context
  /// What torch.cuda.max_memory_reserved reports: the caching allocator's segments, allocated plus its
  /// reserve, without the CUDA context and NCCL's own buffers (§3.8).
  double torch_reserved_bytes = 0;
  /// A freed block the caching allocator keeps reserved but cannot reuse at the loss's backward (the
  /// deleted 16-bit logits under PyTorch's F.cross_entropy, §3.8), where that moment sets
  /// torch_reserved_bytes (which then includes it); 0 otherwise. Never in allocated_bytes.
  double stranded_bytes = 0;
  double headroom_bytes = 0;            ///< usable memory − reserved (negative: does not fit)
  bool fits = false;
  std::int64_t microbatches_in_flight = 0;  ///< activations held at once (1F1B warm-up + 1)
  double activations_per_microbatch_bytes = 0;
  /// --cpu-offloading-num-layers: what one offloaded layer copies to host and back per micro-batch (its
  /// stored activations, §3.4.8); 0 without offloading.
  double offloaded_layer_bytes = 0;
  double buffers_bytes = 0;             ///< communication buckets, ZeRO-3 gathered parameters
  double transient_bytes = 0;           ///< logits/loss or recompute working set at the peak
  double offloaded_bytes = 0;           ///< optimizer state kept in CPU memory
  /// HybridEP's registered dispatch/combine buffers, preallocated for the worst case outside PyTorch's
  /// caching allocator (in reserved_bytes, not in allocated_bytes; §3.8); 0 for other dispatchers.
  double dispatch_buffer_bytes = 0;
};

struct memory_report {
  std::vector<stage_memory> stages;
  std::string_view optimizer;             ///< what runs, in the framework's names (framework.h's row)
  layer_activation_bytes layer_activations;  ///< one dense layer, one micro-batch, stored (no recompute)
  double peak_allocated_bytes = 0;
  double peak_reserved_bytes = 0;
  std::int64_t peak_stage = 0;          ///< stage with the largest reserved bytes
  double capacity_bytes = 0;            ///< usable memory of one GPU
  bool fits = false;
  // Whole model, one replica, no parallelism (seeds/003 "Full Model without Parallel").
  double full_weights_bytes = 0;
  double full_gradients_bytes = 0;
  double full_optimizer_bytes = 0;
  double full_activations_bytes = 0;    ///< one micro-batch, all layers, no recomputation
};

/// Evaluate the memory of `job` (finalized). No rendering, no allocation beyond the stage vector.
memory_report estimate_memory(const job_spec& job);
/// The same from the job's parameter count (count_parameters(job.model, tp)) and pipeline_layout(job),
/// computed once by the caller; fills `out`, reusing its stage vector. Identical results.
void estimate_memory(const job_spec& job, const parameter_breakdown& params, const std::vector<stage_layout>& layout,
                     memory_report& out);

/// Activations of one layer for one micro-batch on one GPU without recomputation (§3.4).
layer_activation_bytes layer_activations(const job_spec& job, bool moe_layer);
/// The same for a layer of kind `kind` (§1.10, §3.4.7).
layer_activation_bytes layer_activations(const job_spec& job, layer_kind kind);

/// Megatron-LM's own theoretical formula (megatron/training/theoretical_memory_usage.py), for the
/// side-by-side comparison of docs/formulas.md §3.9. Bytes of the most loaded GPU.
struct megatron_theoretical_memory {
  double weight_and_optimizer_bytes = 0;
  double activation_bytes = 0;
  double total() const { return weight_and_optimizer_bytes + activation_bytes; }
};
megatron_theoretical_memory megatron_theoretical(const job_spec& job);
/// Whether Megatron's formula models `job` at all: Megatron-LM, no full recomputation, no ZeRO-2/3,
/// no context parallelism, a dense model (§3.9).
bool megatron_theoretical_applies(const job_spec& job);

}  // namespace trainplan
