// What each refused flag would change (issue 29: "refused naming what it would change"): one row per
// mechanism, matched by the flag's longest prefix. Every refused name and pattern of src/cli/args.cc and
// megatron_core_refused.inc has a row (tests/cli/refused_effects_test.cc); the wording names the
// quantities the flag moves (parameters, FLOPs, time, memory, communication) and the mechanism.
#include <algorithm>
#include <string>
#include <string_view>

#include "trainplan/cli/args.h"

namespace trainplan {

namespace {

struct refused_effect_row {
  std::string_view prefix;  ///< a flag name, or the start every flag of the mechanism shares
  std::string_view would_change;
};

constexpr std::string_view kCudaGraphs =
    "the time and the memory (kernel launches replayed from captured CUDA graphs, and the graphs' static "
    "memory pools)";
constexpr std::string_view kActivationOffload =
    "the activation memory and the time of its copies to and from the host (activation offloading)";
constexpr std::string_view kOptimizerOffload =
    "the optimizer's GPU memory and its step time (optimizer state and step on the host)";
constexpr std::string_view kEncoderDecoder = "the layer stack and sequence lengths (an encoder-decoder model)";
constexpr std::string_view kSparseAttention =
    "the attention's parameters, FLOPs and memory (DeepSeek sparse attention's indexer and top-k selection)";
constexpr std::string_view kVocabPadding = "the vocabulary's padding, so the embedding's and output layer's size";
constexpr std::string_view kHyperConnections =
    "the residual streams (manifold hyper-connections): parameters, FLOPs and activations";
constexpr std::string_view kLinearAttention =
    "the attention layers' parameters, FLOPs and activations (gated delta-net linear attention)";
constexpr std::string_view kWeightSharding =
    "how weights and gradients are sharded and communicated (generalized tensor/data parallelism)";
constexpr std::string_view kDistillation =
    "a teacher model's memory and its forward pass each step (knowledge distillation)";
constexpr std::string_view kQuantization =
    "the GEMMs' precision and time and the weights' bytes (a quantization recipe)";
constexpr std::string_view kBf16EdgeLayers =
    "the precision of the first and last layers' GEMMs (bf16 under FP8): their time and FP8 weight copies";
constexpr std::string_view kLogits = "the output layer's logits and the loss's buffers (their precision)";
constexpr std::string_view kFp4 = "the GEMM rate and the weight copies of FP4 (NVFP4) training";
constexpr std::string_view kFrozen = "the gradients, optimizer states and weight-gradient GEMMs of frozen parameters";
constexpr std::string_view kFsdpVariant =
    "the FSDP buffers, sharding and communication (Megatron-FSDP and torch FSDP2 under Megatron)";
constexpr std::string_view kContextParallel = "the sequence split and the context-parallel communication";
constexpr std::string_view kMtp = "the multi-token-prediction heads' parameters, FLOPs and memory";
constexpr std::string_view kGroupedGemm = "the GEMM kernels (grouped GEMMs over experts or layers)";
constexpr std::string_view kHybridEp = "HybridEP's dispatch kernels, SMs and buffers";
constexpr std::string_view kPagedStash = "the expert activations' memory (paged stash)";
constexpr std::string_view kSharp = "the collectives' time (SHARP in-network reduction)";
constexpr std::string_view kSavedActivationsSplit = "the checkpointed activations' memory (split over TP)";
constexpr std::string_view kLayerStack = "the layer stack (per-layer shapes or a dense/MoE layer mix)";
constexpr std::string_view kFpdt = "the sequence split and host offload (FPDT over sequence chunks)";

/// Sorted by name. A name ending in '-' is a prefix; a flag takes the longest prefix it starts with, or
/// the row of its exact name.
constexpr refused_effect_row kRefusedEffects[] = {
    {"--activation-offload-fraction", kActivationOffload},
    {"--attention-output-gate", "the attention's parameters, FLOPs and activations (the output gate's projection)"},
    {"--batch-invariant-mode",
     "the time of batch-invariant kernels (GEMMs, norms and attention with one fixed reduction order and split)"},
    {"--batch-size", "the micro-batch size (Megatron's old --batch-size; give --micro-batch-size)"},
    {"--cpu-offloading", kActivationOffload},
    {"--cpu-offloading-retain-pinned-cpu-buffers", kActivationOffload},
    {"--create-all-gather-group",
     "the distributed optimizer's communicators and their buffers (a separate all-gather group)"},
    {"--cuda-graph-", kCudaGraphs},
    {"--ddp-reduce-scatter-with-fp32-accumulation",
     "the gradient reduce-scatter's time and buffers (fp32 accumulation inside the collective)"},
    {"--decoder-num-layers", kEncoderDecoder},
    {"--decoder-seq-length", kEncoderDecoder},
    {"--delay-offload-until-cuda-graph", kActivationOffload},
    {"--delta-offload-bytes-across-pp-ranks", kActivationOffload},
    {"--deterministic-mode", "the time of deterministic kernels (the attention backward, NCCL's fixed algorithms)"},
    {"--disable-dsa-", kSparseAttention},
    {"--disable-fp8-wgrad", "the weight-gradient GEMMs' precision and time (bf16 weight gradients under FP8)"},
    {"--disable-jit-fuser",
     "the time of Megatron's jit-fused elementwise kernels (bias-GeLU, SwiGLU, bias-dropout-add and the fused loss "
     "run as eager PyTorch ops, one kernel per operator)"},
    {"--disable-mamba-mem-eff-path", "Mamba's activation memory and kernels (its unfused path)"},
    {"--disable-pad-vocab-size", kVocabPadding},
    {"--distribute-saved-activations", kSavedActivationsSplit},
    {"--ds-sequence-parallel-fpdt", kFpdt},
    {"--ds-sequence-parallel-fpdt-", kFpdt},
    {"--dsa-", kSparseAttention},
    {"--enable-cuda-graph", kCudaGraphs},
    {"--enable-full-sharding-in-hsdp",
     "the parameters' sharding over HSDP's replica groups (memory and communication)"},
    {"--enable-mhc-connections", kHyperConnections},
    {"--encoder-num-layers", kEncoderDecoder},
    {"--encoder-pipeline-model-parallel-size", kEncoderDecoder},
    {"--encoder-seq-length", kEncoderDecoder},
    {"--ep-overlap-early-attn-memory-release", "the activation memory of the EP-overlapped schedule (early release)"},
    {"--experimental-attention-variant", kLinearAttention},
    {"--expert-tensor-parallel-num-weight-shards", kWeightSharding},
    {"--export-kd-teacher-load", kDistillation},
    {"--export-offline-model",
     "the layer stack (ModelOpt's offline model: no decoder layers, the embedding and output alone)"},
    {"--export-quant-cfg", kQuantization},
    {"--export-real-quant-cfg", kQuantization},
    {"--external-cuda-graph", kCudaGraphs},
    {"--fine-grained-activation-offloading", kActivationOffload},
    {"--fine-grained-offloading-max-inflight-offloads", kActivationOffload},
    {"--first-k-dense-replace", kLayerStack},
    {"--first-last-layers-bf16", kBf16EdgeLayers},
    {"--flash-attention-version", "the attention kernel's rate (the FlashAttention version)"},
    {"--fp16-lm-cross-entropy", kLogits},
    {"--fp32-residual-connection", "the residual stream's activations and adds (kept in fp32)"},
    {"--fp4-", kFp4},
    {"--fp8", "FP8 GEMMs without a format (give --fp8-format)"},
    {"--fp8-output-proj", "the output layer's GEMM precision and time (MXFP8)"},
    {"--fp8-quantizer-factory", kQuantization},
    {"--freeze-", kFrozen},
    {"--fsdp-", kFsdpVariant},
    {"--gdp-", kWeightSharding},
    {"--gtp-", kWeightSharding},
    {"--heterogeneous-layers-config-", kLayerStack},
    {"--hierarchical-context-parallel-sizes", kContextParallel},
    {"--hybrid-context-parallel", kContextParallel},
    {"--kd", kDistillation},
    {"--keep-fp8-transpose-cache", "the FP8 transposes kept in memory (Megatron-FSDP)"},
    {"--kitchen-", kQuantization},
    {"--linear-", kLinearAttention},
    {"--mamba-training-ssm-states-dtype", "Mamba's SSM state precision in training (activation memory)"},
    {"--max-seqlen-per-dp-cp-rank", kContextParallel},
    {"--megatron-fsdp-", kFsdpVariant},
    {"--mhc-", kHyperConnections},
    {"--min-offloaded-tensor-size", kActivationOffload},
    {"--mlp-chunks-for-training", "the MLP's activation memory and kernels (the MLP run in chunks)"},
    {"--model-parallel-size",
     "the TP degree (Megatron's old --model-parallel-size; give --tensor-model-parallel-size)"},
    {"--moe-apply-probs-on-input", "the expert activations (router probabilities applied before the experts)"},
    {"--moe-combine-bwd-dtype", "the all-to-all's bytes (the combine's backward precision)"},
    {"--moe-dispatch-fwd-dtype", "the all-to-all's bytes (the dispatch's forward precision)"},
    {"--moe-expert-rank-capacity-factor", "the tokens each expert rank processes (per-rank capacity and dropping)"},
    {"--moe-hybridep-", kHybridEp},
    {"--moe-latent-size", "the experts' parameters and FLOPs (latent MoE: experts in a smaller dimension)"},
    {"--moe-mlp-glu-interleave-size", kGroupedGemm},
    {"--moe-ncclep-zero-copy", "the NCCL EP dispatcher's buffers and copies"},
    {"--moe-paged-stash", kPagedStash},
    {"--moe-paged-stash-", kPagedStash},
    {"--moe-shared-expert-glu-interleave-size", kGroupedGemm},
    {"--moe-single-grouped-", kGroupedGemm},
    {"--moe-use-grouped-tensor", kGroupedGemm},
    {"--mos", kDistillation},
    {"--mtp-", kMtp},
    {"--no-dsa-", kSparseAttention},
    {"--no-fp8-wgrad", "the weight-gradient GEMMs' precision and time (bf16 weight gradients under FP8)"},
    {"--no-pad-vocab-size", kVocabPadding},
    {"--num-layers-at-", kBf16EdgeLayers},
    {"--offload-modules", kActivationOffload},
    {"--optimizer-cuda-graph", kCudaGraphs},
    {"--optimizer-offload-fraction", kOptimizerOffload},
    {"--outer-dp-sharding-strategy", "the parameters' sharding over HSDP's replica groups (memory and communication)"},
    {"--output-logit-dtype", kLogits},
    {"--overlap-cpu-optimizer-d2h-h2d", kOptimizerOffload},
    {"--overlap-dispatch-backward-with-experts-wgrad",
     "the exposed dispatch time (overlapped with the experts' weight gradients)"},
    {"--partition-activations", kSavedActivationsSplit},
    {"--qad-train-target", kFrozen},  // which side of an MTP model trains; the other is frozen
    {"--reuse-grad-buf-for-mxfp8-param-ag", "the memory of the MXFP8 parameter all-gather (its buffer)"},
    {"--sharp-enabled-group", kSharp},
    {"--suggested-communication-unit-size", kFsdpVariant},
    {"--te-precision-config-file", kQuantization},
    {"--tensor-parallel-num-weight-shards", kWeightSharding},
    {"--torch-fsdp2-no-reshard-after-forward", kFsdpVariant},
    {"--use-grouped-gemm-for-", kGroupedGemm},
    {"--use-kitchen-attention", kQuantization},
    {"--use-mup", "the scaling kernels on the embeddings and logits (muP's multipliers)"},
    {"--use-nccl-ub", "NCCL user buffers: the collectives' time and their registered memory"},
    {"--use-sharp", kSharp},
    {"--use-torch-fsdp2", kFsdpVariant},
    {"--use-torch-optimizer-for-cpu-offload", kOptimizerOffload},
};

}  // namespace

std::string_view refused_flag_effect(std::string_view flag) {
  std::string_view best;
  std::size_t best_length = 0;
  for (const refused_effect_row& row : kRefusedEffects) {
    const bool prefix = row.prefix.ends_with('-');
    if ((prefix ? flag.starts_with(row.prefix) : flag == row.prefix) && row.prefix.size() > best_length) {
      best = row.would_change;
      best_length = row.prefix.size();
    }
  }
  return best;
}

}  // namespace trainplan
