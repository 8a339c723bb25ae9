// Megatron-Core's pipeline layout string, --pipeline-model-parallel-layout (docs/formulas.md §2.2.1):
// "Et*3|(tt|)*29,m|L" read as Megatron reads it, into the stages of parallel_config::layout_stages.
#pragma once

#include <string_view>
#include <vector>

#include "trainplan/core/job/job.h"

namespace trainplan {

/// The most layer characters a layout may unroll to: far above any model's layers, below what would
/// take real memory (a layout of `t*1000000000` is refused, not unrolled).
inline constexpr std::size_t kMaxLayoutChars = 1 << 20;

/// Parses a layout string as Megatron-Core's PipelineParallelLayerLayout.parse_str_to_list does
/// (megatron/core/transformer/pipeline_parallel_layer_layout.py): commas dropped, each `(…)*n` then each
/// `x*n` unrolled, stages split at `|`, a stage's characters E (embedding), t (transformer layer), m (MTP
/// layer), L (loss). Also its order rules, which need no model (validate_layer_layout): E first and L
/// last of all, each exactly once, no t after an m. The stages come in model order: stage i is pipeline
/// rank i mod PP, model chunk i div PP. Throws input_error naming ${parallel.pipeline_layout}.
std::vector<layout_stage> parse_pipeline_layout(std::string_view text);

/// A hybrid pattern's pipeline segments (Megatron-Core's --hybrid-layer-pattern "M-M*|M-M-", split at '|'
/// by hybrid_layer_allocation.py select_pipeline_segment): one stage per segment with its layers, the
/// embedding on the first and the loss on the last, as a layout string would give them; segment i is
/// pipeline rank i mod PP, model chunk i div PP. Empty when the pattern has no '|'. The part after a '/'
/// (MTP patterns) is left out.
std::vector<layout_stage> hybrid_pipeline_segments(std::string_view pattern);

}  // namespace trainplan
