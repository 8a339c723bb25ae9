// Compute time of every kernel of a layer, forward and backward (docs/formulas.md §5.1-§5.3).
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "trainplan/core/hardware/hardware.h"
#include "trainplan/core/job/job.h"
#include "trainplan/core/job/layout.h"

namespace trainplan {

/// The measured GEMM table as the compute model reads it (docs/formulas.md §6.4; a calibration profile
/// is turned into one by apply_calibration, trainplan/core/estimate/calibration.h): per point, the
/// ratio of measured to modelled efficiency, interpolated over log2 shape space.
struct measured_gemm_table {
  struct point {
    dtype precision = dtype::bf16;
    double log2_m = 0, log2_n = 0, log2_k = 0, log2_batch = 0;
    double ratio = 1;  ///< measured efficiency ÷ the uncalibrated model's efficiency at this shape
  };
  std::vector<point> points;
  /// Unique per table, for the per-thread memo of corrections (an address could be reused).
  std::uint64_t id = next_id();
  static std::uint64_t next_id();
  /// Factor (> 0) that turns the uncalibrated model's efficiency at this shape into the calibrated one:
  /// a measured shape's own ratio, else the inverse-distance-weighted ratio of the nearest measured
  /// shapes of the same precision; 1 when none was measured in that precision.
  double correction(dtype precision, std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch) const;
  /// The same without the memo (what the memo stores).
  double compute_correction(dtype precision, std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch) const;
};


/// The catalog default efficiencies of `gpu` (by name; unknown GPUs get the entry of the catalog GPU
/// with the nearest peak). One table, src/core/estimate/compute_defaults.cc; reasons in docs/formulas.md §5.6.
compute_efficiency default_compute_efficiency(const gpu_spec& gpu);
/// The same entry, by reference into the table (no copy of its tile list; hot path).
const compute_efficiency& default_compute_efficiency_ref(const gpu_spec& gpu);
/// A default fitted on a published table rather than measured (§5.6), for leave-one-source-out: the rows
/// of `source` (their `source` column) set `value`; without them it would be `prior`.
struct published_fit {
  std::string_view constant;
  std::string_view source;
  double value = 1;
  double prior = 1;
  /// Sets the constant on `gpu` (overriding its default) to the given value.
  void (*set)(gpu_spec& gpu, double value) = nullptr;
};
/// Blackwell's attention plateaus over Hopper's (the one such default today).
const published_fit& blackwell_attention_fit();
/// Sets `gpu`'s fused-attention plateaus (forward and backward) to `scale` × Hopper's measured ones,
/// overriding its default (what blackwell_attention_fit's value does for Blackwell).
void set_attention_plateaus_over_hopper(gpu_spec& gpu, double scale);

/// Whether the table has an entry of its own for the GPU named `gpu_name` (not the nearest one's).
bool has_own_compute_defaults(std::string_view gpu_name);

/// The efficiencies the model uses: the catalog default with every nonzero field of gpu.compute on top.
compute_efficiency effective_compute_efficiency(const gpu_spec& gpu);
/// The same into `out`, reusing its tile list's storage (no allocation once it has held a list).
void effective_compute_efficiency(const gpu_spec& gpu, compute_efficiency& out);

/// C[m×n] = A[m×k]·B[k×n], `batch` independent products.
struct gemm_shape {
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  std::int64_t batch = 1;
};

struct gemm_estimate {
  double flops = 0;       ///< 2·m·n·k·batch
  double efficiency = 0;  ///< achieved / dense peak, all factors together
  double time_s = 0;      ///< including the per-kernel overhead
};

/// One GEMM of a layer, named as the bench and the reports show it ("qkv", "mlp_up", "logits", ...).
struct named_gemm {
  std::string_view name;
  gemm_shape shape;  ///< forward; its backward runs (m, k, n) for the input gradient and (k, n, m) for the weight gradient
};
/// The forward GEMMs of one transformer layer (dense, or MoE with `moe_layer`) and the output layer's
/// logits GEMM, for one micro-batch on one GPU of a finalized job: the shapes the compute model times
/// (§5.1) and trainplan-bench measures.
std::vector<named_gemm> layer_gemm_shapes(const job_spec& job, bool moe_layer);

/// One GEMM timed as FLOPs ÷ (peak × efficiency) + overhead, efficiency from the best tile's tile and
/// wave quantization, alignment, the reduction-length prologue and the small-problem ramp (§5.2).
gemm_estimate estimate_gemm(const gpu_spec& gpu, const compute_efficiency& eff, dtype precision,
                            const gemm_shape& shape);

/// Time and work of one pass over one unit (a layer, the embedding, the output) for one micro-batch on
/// one GPU. Seconds and FLOPs.
struct pass_time {
  double gemm_s = 0;       ///< dense GEMMs (QKV, projection, MLP, experts, router, logits)
  double attention_s = 0;  ///< attention core: score/context GEMMs and softmax/dropout, or flash
  double memory_s = 0;     ///< memory-bound kernels: norms, activations, dropout, residuals, loss
  double flops = 0;        ///< as Megatron counts them (full s² attention)
  /// Backward only: the weight-gradient GEMMs (dW = Xᵀ·dY), a part of gemm_s. The rest of the backward
  /// is the input gradient, which the previous stage waits for; zero-bubble schedules move this part.
  double weight_gradient_s = 0;
  /// MoE layers: the shared experts' GEMMs, a part of gemm_s (what --moe-shared-expert-overlap hides the
  /// EP all-to-alls under, §5.5.3).
  double shared_expert_s = 0;
  /// The seconds of gemm_s a pipelined TP collective can run beside (§5.5.1), by block (0: the mixer,
  /// attention or Mamba; 1: the dense MLP) and by the side of the block it pairs with: the column-parallel
  /// GEMMs (QKV, fc1: the all-gather before them in the forward, the input re-gather and input-gradient
  /// reduce-scatter beside their backward) and the row-parallel ones (projection, fc2: the reduce-scatter
  /// after their forward, the output-gradient all-gather under their data gradient). A pipeline of n
  /// slices runs its collective beside n − 1 of them.
  std::array<double, 2> tp_column_gemm_s{};
  std::array<double, 2> tp_row_gemm_s{};
  double total_s() const { return gemm_s + attention_s + memory_s; }
};

/// One aten.mm of a dense block as torchtitan's per-op checkpointing sees it (§3.4.4, §5.4): its input and
/// output widths, and whether op SAC keeps its output.
struct op_sac_matmul {
  double in_width = 0, out_width = 0;
  bool kept = false;
  /// Whether the block's backward reads the output or a tensor made from it: all but w2's, whose one
  /// consumer, the residual add, saves nothing. Recomputation never redoes w2 (torch.utils.checkpoint
  /// stops once the saved tensors are rebuilt), and under torch.compile a kept output nobody reads is
  /// not saved (AOTAutograd's partitioner saves backward inputs only; §3.4.4).
  bool feeds_backward = true;
};
/// The block's matmuls in forward order (wq, wk, wv, wo, w1, w3 where the MLP is gated, w2), every second
/// kept, under float8 too: SAC's dispatch mode sees torchao's aten.mm before Float8Tensor's
/// __torch_dispatch__ turns it into _scaled_mm, and keeps its 16-bit output (§3.4.4). `count` of `mm` are used.
struct op_sac_block {
  std::array<op_sac_matmul, 7> mm{};
  std::size_t count = 0;
};
op_sac_block op_sac_matmuls(const model_spec& m);

/// A unit's forward and backward (the backward excludes recomputation).
struct unit_time {
  pass_time forward;
  pass_time backward;
  /// Selective recomputation's modules other than the attention core (--recompute-modules; §5.4): the
  /// part of the forward they redo in backward, seconds and FLOPs.
  double module_recompute_s = 0;
  double module_recompute_flops = 0;
};

/// The blocks a layer is made of, as TP's collectives see them: one all-gather before and one
/// reduce-scatter after each (§4.2.1), pipelined with the block's own GEMMs where they are (§5.5.1).
enum class tp_block_kind : std::uint8_t { attention, mamba, mlp, moe };
inline constexpr std::size_t kNumTpBlockKinds = 4;
/// One kind of block of a chunk: its count per micro-batch and one block's sided GEMM seconds (§5.5.1).
struct tp_block_caps {
  double count = 0;
  double forward_column_s = 0, forward_row_s = 0;
  double backward_column_s = 0, backward_row_s = 0;
};

/// What one pipeline rank does per micro-batch (with VPP: per model chunk). Seconds, FLOPs.
struct stage_compute {
  std::int64_t stage = 0;
  std::int64_t num_layers = 0;   ///< per chunk
  double forward_s = 0;          ///< forward of the chunk's layers (+ embedding, + output and loss)
  double backward_s = 0;         ///< backward including the recomputed forward
  double recompute_s = 0;        ///< the recomputed part of backward_s
  double recomputed_layers = 0;  ///< per chunk: layers whose whole forward is redone (full recomputation)
  double backward_weight_s = 0;  ///< the weight-gradient part of backward_s (GEMMs and accumulation)
  double forward_shared_expert_s = 0;   ///< the shared experts' GEMMs in forward_s (§5.5.3)
  double backward_shared_expert_s = 0;  ///< in backward_s, their recomputed forward included
  /// The chunk's TP blocks by what they run (tp_block_kind): how many per micro-batch and what one block's
  /// pipelined TP collectives can hide under, by side, in the forward and in the backward (its recomputed
  /// forward included; pass_time::tp_column_gemm_s). Each block has its own collectives (§5.5.1).
  std::array<tp_block_caps, kNumTpBlockKinds> tp_blocks{};
  double forward_flops = 0;      ///< counted FLOPs, per micro-batch per chunk
  double backward_flops = 0;     ///< including recomputation
  double optimizer_s = 0;        ///< optimizer step of this rank, once per iteration
  /// Deferred output-layer wgrad GEMMs (--defer-embedding-wgrad-compute) after the rank's last backward,
  /// once per iteration; backward_s holds the rest (§5.4).
  double drain_s = 0;
  double allocator_slowdown = 1; ///< factor already applied to forward/backward near capacity (§5.9)
};

struct compute_report {
  /// One layer of each kind the model has (zero for the kinds it has not), indexed by layer_kind.
  std::array<unit_time, kNumLayerKinds> layers;
  unit_time embedding;
  unit_time output;              ///< final norm, logits, cross-entropy
  double layer_recompute_fraction = 0;  ///< of a layer's forward redone in backward (full: 1)
  std::vector<stage_compute> stages;    ///< one per pipeline rank
  /// With interleaving: each model chunk's forward (backward) work over its rank's mean chunk, chunk c of
  /// rank r at c·PP + r (pipeline_chunks); a rank's scales sum to VPP. Empty when every chunk is its
  /// rank's mean (§5.4).
  std::vector<double> chunk_forward_scale;
  std::vector<double> chunk_backward_scale;
  /// Beside them, each chunk's transformer layers over its rank's mean chunk (a rank's sum to VPP; 1 on a rank
  /// without layers): the share of the rank's per-layer communication the chunk carries (§5.4).
  std::vector<double> chunk_layer_share;
  bool fused_softmax = true;     ///< Megatron's fused softmax kernel applies (§5.3)
  /// Whole job, one iteration (all GPUs together).
  double model_flops = 0;        ///< no recomputation: 3 × forward
  double hardware_flops = 0;     ///< with recomputation (Narayanan et al. eq. 3 with full recompute)
  const unit_time& of(layer_kind k) const { return layers[static_cast<std::size_t>(k)]; }
};

/// Host time per layer per pass that the GPU waits for: the job's setting or the framework's default
/// (docs/formulas.md §5.9). Seconds.
double host_overhead_per_layer_pass_s(const training_config& t);
/// §5.9: the host time per layer pass of DeepSpeed's per-parameter list all-gathers (N per-rank copies
/// per parameter tensor), 0 unless --zero3-gather-per-parameter.
double zero3_list_gather_copies_per_layer_pass_s(const job_spec& job);
/// Memory traffic per parameter per micro-batch for gradient accumulation outside the GEMMs, as the job's
/// optimizer row accumulates (§5.9). Bytes.
double accumulation_bytes_per_parameter(const job_spec& job);
/// Memory traffic per parameter the optimizer step updates, from the precision roles (§5.5). Bytes.
double optimizer_step_bytes_per_parameter(const job_spec& job);
/// Slowdown (≥ 1) of a rank's forward and backward when the memory it reserves fills `reserved_fraction`
/// of the usable memory: PyTorch's caching allocator frees its cache and retries (§5.9).
double allocator_slowdown(double reserved_fraction);

/// Compute time of `job` (finalized). Allocates only the stage vector.
compute_report estimate_compute(const job_spec& job);
/// The same from the job's parameter count (count_parameters(job.model, tp)) and pipeline_layout(job),
/// computed once by the caller; fills `out` reusing its stage vector. Identical results.
void estimate_compute(const job_spec& job, const parameter_breakdown& params, const std::vector<stage_layout>& layout,
                      compute_report& out);

/// Forward and backward of one layer of kind `kind` (§1.10) for one micro-batch on one GPU.
unit_time layer_compute(const job_spec& job, const compute_efficiency& eff, layer_kind kind);
/// The same for a transformer layer: dense or MoE, attending through the model's window or not
/// (model_spec::is_window_layer).
inline unit_time layer_compute(const job_spec& job, const compute_efficiency& eff, bool moe_layer,
                               bool windowed = false) {
  return layer_compute(job, eff,
                       moe_layer ? (windowed ? layer_kind::moe_window : layer_kind::moe)
                                 : (windowed ? layer_kind::dense_window : layer_kind::dense));
}
/// (Query, key) pairs a flash kernel executes in a layer, over full causal attention's s²/2 (§5.1.2).
double causal_pairs_fraction(const model_spec& m, bool windowed);

}  // namespace trainplan
