// The pipeline split and what one GPU of each pipeline stage holds (docs/formulas.md §2.2, §2.4): the one
// account memory, communication, compute and time read.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "trainplan/core/job/job.h"
#include "trainplan/core/model/model.h"

namespace trainplan {

/// What one pipeline stage holds (one pipeline rank; with VPP, all its chunks together).
struct stage_layout {
  std::int64_t stage = 0;          ///< pipeline rank
  std::int64_t num_layers = 0;     ///< transformer layers on this rank (all chunks)
  std::int64_t first_layer = 0;    ///< index of the first layer of its first chunk
  layer_counts kinds{};            ///< its layers by kind (model_spec::kind_of_layer; §1.10)
  bool has_embedding = false;      ///< the word (and position) embedding
  bool has_output = false;         ///< final norm, output layer (or tied copy), loss
  std::int64_t of(layer_kind k) const { return kinds[static_cast<std::size_t>(k)]; }
  /// Layers with an MoE block (transformer MoE layers, windowed or not, and hybrid E blocks).
  std::int64_t num_moe_layers() const {
    return of(layer_kind::moe) + of(layer_kind::moe_window) + of(layer_kind::moe_mlp);
  }
};

/// Whether two stages hold the same layers by kind and the same ends: memory, compute and the
/// communication account give them the same per-stage figures except what depends on the rank itself
/// (the micro-batches a schedule keeps in flight).
inline bool same_stage_class(const stage_layout& a, const stage_layout& b) {
  return a.num_layers == b.num_layers && a.kinds == b.kinds && a.has_embedding == b.has_embedding &&
         a.has_output == b.has_output;
}

// ---- what one GPU holds (§2.4): the one account memory, communication, compute and time read ------

/// Parameters of one layer, or one stage, held by one GPU: column/row-parallel weights split by t,
/// norms, row-parallel biases and the router whole; routed experts divided by EP, then by expert-TP = t.
struct layer_shard {
  std::int64_t dense = 0;   ///< replicated over DP×CP (their gradients are reduced there)
  std::int64_t expert = 0;  ///< routed experts, replicated over expert-DP = DP×CP/EP
  std::int64_t total() const { return dense + expert; }
};

/// What one GPU of a pipeline stage holds, worked out once per job from the parameter count at its TP.
struct rank_holdings {
  layer_shard dense_layer;      ///< a layer with a dense MLP (hybrid: the MLP block)
  layer_shard moe_layer;        ///< a layer with routed experts (hybrid: the MoE block; zero for dense models)
  layer_shard mamba_layer;      ///< hybrid: a Mamba-2 block (zero otherwise)
  layer_shard attention_layer;  ///< hybrid: an attention block (zero otherwise)
  std::int64_t embedding = 0;   ///< first stage: word-embedding shard V/t·h, positions, embedding norm
  std::int64_t output = 0;      ///< last stage: final norm, output shard, or the tied copy when p > 1
                                ///< (DeepSpeed ties the whole embedding module)
  /// Last stage: the multi-token-prediction modules (Megatron places them with the output layer, §1.8).
  layer_shard mtp;

  /// One layer of kind `k`, from the account kLayerMakeup names for it.
  const layer_shard& of(layer_kind k) const {
    static constexpr std::array<layer_shard rank_holdings::*, 4> kOf{
        &rank_holdings::dense_layer, &rank_holdings::moe_layer, &rank_holdings::mamba_layer,
        &rank_holdings::attention_layer};
    return this->*kOf[static_cast<std::size_t>(makeup_of(k).account)];
  }
  /// One GPU of a stage with `kinds` layers of each kind, and the ends it holds.
  layer_shard stage(const layer_counts& kinds, bool first, bool last) const {
    layer_shard s{(first ? embedding : 0) + (last ? output + mtp.dense : 0), last ? mtp.expert : 0};
    for (std::size_t k = 0; k < kNumLayerKinds; ++k) {
      const layer_shard& l = of(static_cast<layer_kind>(k));
      s.dense += kinds[k] * l.dense;
      s.expert += kinds[k] * l.expert;
    }
    return s;
  }
  layer_shard stage(const stage_layout& s) const { return stage(s.kinds, s.has_embedding, s.has_output); }
};

/// The holdings of `job` from `params` = count_parameters(job.model, job.parallel.tp).
rank_holdings holdings_of(const job_spec& job, const parameter_breakdown& params);

/// DeepSpeed ZeRO-3 (§4.2.4, §3.7) under full recomputation: a dense layer's four matrices (QKV,
/// projection, fc1, fc2; per-TP-rank elements) split by whether each stays gathered from its recomputed
/// forward to its backward. A module's next use lies 2·Σ(the elements of the modules after it) ahead
/// (the rest of the recomputed forward, then the backward back to it); it is kept when that is within
/// stage3_max_reuse_distance (runtime/zero/partitioned_param_coordinator.py `__params_to_release`).
/// Norms and biases persist (param_persistence_threshold) and are not counted here.
struct zero3_reuse {
  double kept_elements = 0;               ///< matrices kept gathered into the backward (a suffix of the layer)
  double released_elements = 0;           ///< matrices released after the recomputed forward, gathered again
  double largest_released_elements = 0;   ///< the largest of those, gathered alone for its backward
  double largest_matrix_elements = 0;     ///< the largest of the four
  double regather_fraction() const {
    const double all = kept_elements + released_elements;
    return all > 0 ? released_elements / all : 0.0;
  }
};

/// Zero for every job but DeepSpeed ZeRO-3; without full recomputation every matrix counts as kept.
zero3_reuse zero3_recompute_reuse(const job_spec& job);

/// The split of `num_layers` over `p.pp` ranks for framework `fw`; with p.vpp > 1 every rank holds
/// p.vpp chunks of `layers_per_chunk` (0: num_layers / pp / vpp).
stage_split split_layers(std::int64_t num_layers, const parallel_config& p, framework_kind fw,
                         std::int64_t layers_per_chunk = 0);

/// Items (layers, or layer slots with --embedding-as-stage) of pipeline rank `rank` under DeepSpeed's
/// uniform partition (deepspeed/runtime/utils.py partition_uniform, 2022: ceil-sized chunks, the last
/// rank takes what is left; docs/formulas.md §2.2).
std::int64_t deepspeed_items(std::int64_t items, std::int64_t parts, std::int64_t rank);

/// Layers of each kind over all the stages of a layout (§1.10).
inline layer_counts layer_kinds_of(const std::vector<stage_layout>& layout) {
  layer_counts n{};
  for (const stage_layout& s : layout)
    for (std::size_t k = 0; k < kNumLayerKinds; ++k) n[k] += s.kinds[k];
  return n;
}

/// Layers per pipeline rank following Megatron's rules: even split, or first/last stage counts with
/// the rest even; BLOOM's embedding-as-stage counts each embedding as one layer slot.
std::vector<stage_layout> pipeline_layout(const job_spec& job);
/// The same into `out` (its storage reused: no allocation once it has held as many stages).
void pipeline_layout(const job_spec& job, std::vector<stage_layout>& out);

/// What one model chunk of one pipeline rank holds (§2.2, §2.2.1): with interleaving or a custom layout
/// the chunks of a rank need not be alike (an embedding or loss slot, a layout's own counts, dense and MoE
/// layers in different chunks).
struct chunk_layout {
  std::int64_t stage = 0;        ///< pipeline rank
  std::int64_t chunk = 0;        ///< model chunk of that rank
  std::int64_t first_layer = 0;  ///< index of its first layer (model order)
  std::int64_t num_layers = 0;   ///< transformer layers
  layer_counts kinds{};          ///< its layers by kind
  bool has_embedding = false;    ///< the first rank's first chunk
  bool has_output = false;       ///< the last rank's last chunk: final norm, output layer, loss, MTP
};
/// The model chunks in model order, chunk c of rank r at index c·PP + r (PP × VPP of them; one per rank
/// without interleaving). pipeline_layout's stages are their sums by rank.
void pipeline_chunks(const job_spec& job, std::vector<chunk_layout>& out);

}  // namespace trainplan
