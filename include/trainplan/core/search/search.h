// Layout search: every valid combination of TP, PP, CP, EP, DP, VPP, MBS, sequence parallelism,
// recomputation, ZeRO stage, embedding placement and node count, pruned by divisibility and memory,
// timed with the full time model in parallel, ranked (docs/formulas.md §7.1-§7.3); and architecture
// shapes near a target size (§7.4).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "trainplan/core/job/job.h"
#include "trainplan/core/job/layout.h"

namespace trainplan {

enum class rank_kind { iteration_time, train_time, cost };
std::string_view to_string(rank_kind k);

/// Recomputation as the search varies it: block = full recomputation of the fewest layers per stage
/// that fit (Megatron --recompute-method block --recompute-num-layers N; fewer is faster, §7.1).
/// A layout's recomputation: none, Megatron's selective, full (every layer), block (the fewest layers per
/// stage that fit), or torchtitan's per-op checkpointing (`op`: FSDP jobs at TP and CP 1, dense models).
enum class recompute_choice { none, selective, full, block, op };
std::string_view to_string(recompute_choice k);

/// What the user allows per dimension. An empty list means every valid value (§7.1).
struct search_space {
  std::vector<std::int64_t> tp, pp, cp, ep, vpp, mbs, nodes;
  /// Expert tensor parallel sizes; empty: TP and, with TP > 1, 1 (parallel folding), for MoE models.
  std::vector<std::int64_t> etp;
  std::vector<recompute_choice> recompute;
  std::vector<int> zero_stage;
  std::vector<bool> sequence_parallel;
  std::vector<bool> embedding_as_stage;  ///< empty: the job's setting only
  std::int64_t max_nodes = 0;            ///< 0: the cluster's (or --num-nodes)
  std::int64_t max_gpus = 0;             ///< 0: no limit beyond the nodes
  std::int64_t dp_multiple_of = 1;
  double min_headroom_bytes = 0;
  double min_headroom_fraction = 0;      ///< of usable GPU memory
  rank_kind rank = rank_kind::iteration_time;
  double train_tokens = 0;               ///< for rank_kind::train_time and the days column
  std::int64_t top_k = 10;
  bool exhaustive = false;               ///< evaluate every layout that fits (no bound)
  unsigned threads = 0;                  ///< 0: every core
};

/// One evaluated layout.
struct search_candidate {
  std::int64_t num_gpus = 0;
  std::int64_t num_nodes = 0;
  std::int64_t tp = 1, pp = 1, cp = 1, ep = 1, dp = 1, vpp = 1, mbs = 1;
  std::int64_t etp = 1;  ///< expert tensor parallel size (= tp for dense models)
  /// The MoE dispatcher the search chose: alltoall for EP > 1 when the job left Megatron's default
  /// (allgather), as Megatron-Core's MoE README recommends; framework_default: the job's own.
  moe_dispatcher_kind dispatcher = moe_dispatcher_kind::framework_default;
  /// An uneven split where the layers do not divide PP (Megatron's --decoder-first/last-pipeline-num-layers:
  /// the ends take the remainder of ⌈L/p⌉ per middle stage); -1: the even split.
  std::int64_t first_stage_layers = -1, last_stage_layers = -1;
  bool sequence_parallel = false;
  bool embedding_as_stage = false;
  recompute_choice recompute = recompute_choice::none;
  std::int64_t recompute_num_layers = 0;  ///< block: layers per stage recomputed
  int zero_stage = 0;
  double iteration_s = 0;
  double tflops_per_gpu = 0;
  double mfu = 0;
  double samples_per_s = 0;
  double bubble_fraction = 0;
  double peak_reserved_bytes = 0;
  double headroom_bytes = 0;
  double lower_bound_s = 0;              ///< the compute bound used to skip layouts (§7.2)
  double train_days = 0;                 ///< for the token budget (0 when none)
  double gpu_hours_per_iteration = 0;
  double score = 0;                      ///< what the ranking sorts by (smaller is better)
};

struct search_result {
  std::int64_t enumerated = 0;
  std::int64_t pruned = 0;               ///< rejected before timing, every reason
  std::int64_t evaluated = 0;            ///< timed with the full model
  std::int64_t pruned_divisibility = 0;  ///< layout does not divide (heads, layers, batch, world)
  std::int64_t pruned_constraint = 0;    ///< --dp-multiple-of, --max-gpus
  std::int64_t pruned_memory = 0;        ///< does not fit, or less headroom than asked
  std::int64_t pruned_bound = 0;         ///< compute lower bound cannot enter the top K
  double elapsed_s = 0;
  unsigned threads = 1;
  double model_params = 0;
  double usable_bytes = 0;               ///< usable memory per GPU, the line layouts must stay under
  std::vector<search_candidate> candidates;  ///< every evaluated layout, best first
};

/// Progress: layouts settled so far and in all (called from worker threads, about 50 times).
using search_progress = std::function<void(std::int64_t done, std::int64_t total)>;

/// Run the search for `base` (model, cluster, training settings; its layout is ignored) over `space`.
/// Throws input_error naming the constraint that emptied the space.
search_result run_search(const job_spec& base, const search_space& space, const search_progress& progress = {});

/// The Pareto front of time per iteration against peak reserved memory: indices into r.candidates,
/// fastest first; each needs less memory than every faster layout (§7.3).
std::vector<std::size_t> pareto_front(const search_result& r);

/// The finalized job of a candidate (for --explain).
job_spec candidate_job(const job_spec& base, const search_candidate& c);



/// The README's main job as arguments.

// ---- shapes (§7.4) -------------------------------------------------------------------------------

struct shape_rules {
  double target_params = 0;
  double tolerance = 0.05;               ///< |params / target − 1|
  double min_ratio = 150, max_ratio = 200;  ///< hidden / layers (seeds/000)
  std::int64_t hidden_multiple = 128;    ///< tile alignment of hidden (and hidden / TP)
  std::vector<std::int64_t> head_dims = {64, 128};  ///< head-dim alignment
  std::int64_t tp_multiple = 0;          ///< heads divisible by it; 0: GPUs per node
  std::int64_t max_shapes = 12;          ///< best shapes searched for a layout
};

struct shape_candidate {
  std::int64_t hidden = 0, layers = 0, heads = 0;
  double params = 0;
  double ratio = 0;
  double gemm_efficiency = 0;            ///< of the layer GEMMs at TP, as compute prices them (§5.2, §7.4)
  bool has_layout = false;
  search_candidate best;                 ///< fastest layout
  double param_tokens_per_s = 0;         ///< tokens/s × parameters of the best layout (∝ model FLOP/s)
};

struct shapes_result {
  std::vector<shape_candidate> shapes;   ///< ranked by param_tokens_per_s, best first
  std::int64_t considered = 0;
  double elapsed_s = 0;
};

/// Shapes near the target on `base`'s vocabulary, sequence and cluster, each with its best layout.
shapes_result run_shapes(const job_spec& base, const shape_rules& rules, const search_space& space);



}  // namespace trainplan
