// The facts of a job every estimator reads, worked out once by finalize_job (docs/formulas.md §2, §3.1,
// §3.8): the optimizer that runs, the dtype of each role, the tokens of one micro-batch on one GPU, the
// shard counts of every data-parallel group, the pipeline split and the NCCL communicators per GPU.
// Memory, communication, compute and the search read these instead of deriving them.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string_view>

#include "trainplan/core/base/checked.h"
#include "trainplan/core/hardware/hardware.h"
#include "trainplan/core/job/framework.h"

namespace trainplan {

/// The dtype of each role in training: one account that memory (§3.1-§3.4), communication (§4.2)
/// and compute (§5.1-§5.3) read instead of each reading `precision` its own way.
struct precision_roles {
  dtype compute = dtype::bf16;      ///< GEMM inputs; the peak MFU is measured against
  dtype weights = dtype::bf16;      ///< the model's weights as stored (16-bit under mixed precision)
  dtype activations = dtype::bf16;  ///< saved activations and the tensors TP, CP, EP and PP move
  dtype gradients = dtype::bf16;    ///< the buffer the backward accumulates into (fp32 main_grad when asked)
  bool master_weights = true;       ///< an fp32 master copy beside 16-bit weights
  /// Bytes the master copy keeps per parameter: 4 (fp32); 2 with the precision-aware optimizer's fp16
  /// master, or its fp32 master stored as the 16-bit remainder of a bf16 weight (§3.1).
  double master_bytes = 4;
  dtype moments = dtype::fp32;      ///< optimizer state (Adam m and v, SGD momentum)
  /// Bytes of the optimizer's moments per parameter: Adam's m and v (each its own dtype under the
  /// precision-aware optimizer), SGD's momentum.
  double moment_bytes = 8;
  dtype grad_comm = dtype::bf16;    ///< gradients as the DP reduction moves them (§4.2.4)
  dtype param_comm = dtype::bf16;   ///< parameters as ZeRO/FSDP gathers them
  /// The transformer layers' linear GEMMs (QKV, projection, MLP, experts; not the router, the attention
  /// core or the output layer) and the inputs they save for backward: fp8 under --fp8-format.
  dtype linear = dtype::bf16;
};

/// Why a pipeline split fails, for the layout rules' messages (§2.2).
enum class split_failure : std::uint8_t {
  none,
  ends_need_pp,        ///< explicit first/last stage sizes with PP < 2
  rest_uneven,         ///< the layers between the explicit ends do not split evenly over the middle stages
  end_not_in_chunks,   ///< interleaved with explicit ends: a rank's layers not divisible by the chunks
  chunks_uneven,       ///< interleaved: the layers not divisible by PP × chunks
  layers_not_divisible,  ///< an even split of the layers (and embedding slots) over PP does not exist
  stage_without_layer,   ///< a rank is left without a transformer layer
};

/// Transformer layers of the first, of each middle and of the last pipeline rank (all chunks): the one
/// account of the split (§2.2) that pipeline_layout, the communication stage classes, the layout rules and
/// the search read. Every rule of Megatron (even split, --decoder-first/last-pipeline-num-layers,
/// interleaving with `layers_per_chunk` each) and DeepSpeed (partition_uniform) gives at most these three
/// counts.
struct stage_split {
  std::int64_t first = 0;
  std::int64_t middle = 0;  ///< each of the p − 2 middle ranks
  std::int64_t last = 0;    ///< equals first when p = 1
  bool valid = false;       ///< every rank has at least one layer and the split adds up
  split_failure failure = split_failure::none;  ///< why not valid
  std::int64_t middle_stages = 0;  ///< with explicit ends: the ranks between them
  int failed_end = 0;              ///< end_not_in_chunks: whose layers failed (0 first, 1 middle, 2 last)
  std::int64_t most() const { return std::max(first, std::max(middle, last)); }
  std::int64_t of(std::int64_t rank, std::int64_t pp) const {
    return rank == 0 ? first : rank == pp - 1 ? last : middle;
  }
};

/// A job's facts as finalize_job resolves them (job_spec::resolved).
struct resolved_job {
  const optimizer_row* optimizer = nullptr;  ///< the (framework, ZeRO stage, wrapper) row that runs
  /// The row, once the job's rules hold (finalize_job).
  const optimizer_row& row() const {
    TRAINPLAN_CHECK_MSG(optimizer != nullptr, "an estimate of a job whose rules were not checked (finalize_job)");
    return *optimizer;
  }
  precision_roles roles;
  std::int64_t seq_per_rank = 0;   ///< tokens of one sequence on one CP rank: s / CP
  std::int64_t tokens = 0;         ///< of one micro-batch on one GPU: MBS · s / CP, the rows of its GEMMs
  std::int64_t dp_shards = 1;      ///< ranks the dense state is sharded over: DP×CP / R (§2.5)
  std::int64_t dp_replicas = 1;    ///< R, HSDP's replicas (1: none)
  std::int64_t etp = 1;            ///< expert tensor parallel size (TP unless given)
  std::int64_t expert_dp = 1;      ///< expert data parallel: TP×CP×DP / (ETP×EP) (§2.4)
  std::int64_t expert_dp_shards = 1;  ///< ranks the expert state is sharded over: expert-DP / R (§2.5)
  stage_split split;               ///< transformer layers per pipeline rank (§2.2)
  std::string_view split_rule;     ///< which rule gave the split, in words
  /// NCCL communicators one GPU holds buffers for: the default group and every group of size > 1 it runs
  /// collectives in (§3.8); on the first and last pipeline stage the tied-embedding group too.
  int communicators = 0;
  int end_stage_communicators = 0;
};

}  // namespace trainplan
