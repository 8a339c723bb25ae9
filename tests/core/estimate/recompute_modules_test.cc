// Megatron-Core's --recompute-modules under selective recomputation (issue 27; docs/formulas.md §3.4.4
// and §5.4): what each module drops from a layer's saved tensors, what its backward redoes, and the
// checks Megatron makes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "args_test_support.h"
#include "trainplan/cli/args.h"
#include "trainplan/core/estimate/comm.h"
#include "trainplan/core/estimate/compute.h"
#include "trainplan/core/estimate/memory.h"

namespace trainplan {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using namespace args_testing;  // NOLINT(google-build-using-namespace): the shared helpers

const args_t kDeepSeek = {"--model", "deepseek-v3", "--num-gpus", "8", "--ep", "8", "--recompute-granularity", "selective"};

layer_activation_bytes moe_layer(const args_t& modules) { return layer_activations(parse(concat(kDeepSeek, modules)).job, true); }

// DeepSeek-V3, TP 1, bf16, 4,096 tokens (model_families_test's by-hand breakdown without recomputation:
// attention 186,880 bytes per token of which Q, K, V 2·(24,576 + 24,576 + 16,384) = 131,072; MoE 355,584
// of which each of the 8 routed copies' fc2 input 2·2,048, the router's input 2·7,168, the shared expert
// 3·2·2,048).
TEST(RecomputeModules, EachDropsWhatItRecomputes) {
  const double tokens = 4096;
  EXPECT_DOUBLE_EQ(moe_layer({"--recompute-modules", "mla_up_proj"}).attention, (186'880 - 131'072) * tokens);
  EXPECT_DOUBLE_EQ(moe_layer({"--recompute-modules", "moe_act"}).mlp, (355'584 - 8 * 4'096) * tokens);
  EXPECT_DOUBLE_EQ(moe_layer({"--recompute-modules", "layernorm"}).mlp, (355'584 - 14'336) * tokens);
  EXPECT_DOUBLE_EQ(moe_layer({"--recompute-modules", "shared_experts"}).mlp, (355'584 - 12'288) * tokens);
  // Several at once, Megatron's nargs='*' spelling or a comma list.
  EXPECT_DOUBLE_EQ(moe_layer({"--recompute-modules", "moe_act", "layernorm"}).mlp,
                   moe_layer({"--recompute-modules", "moe_act,layernorm"}).mlp);
  EXPECT_DOUBLE_EQ(moe_layer({"--recompute-modules", "moe_act", "layernorm"}).mlp, (355'584 - 8 * 4'096 - 14'336) * tokens);
  // The MoE layer checkpointed (EP 1): its input alone, the norm's output e·h.
  const args_t ep1 = {"--model", "deepseek-v3", "--num-gpus", "8", "--recompute-granularity", "selective",
                      "--recompute-modules", "moe"};
  EXPECT_DOUBLE_EQ(layer_activations(parse(ep1).job, true).mlp, 14'336 * tokens);
  // A dense layer's MLP checkpointed: nothing beyond the norm input the layer keeps anyway.
  EXPECT_DOUBLE_EQ(layer_activations(parse(concat(kDeepSeek, {"--recompute-modules", "mlp"})).job, false).mlp, 0);
  // The default is core_attn: Megatron's selective recomputation as before.
  EXPECT_DOUBLE_EQ(moe_layer({}).total(), moe_layer({"--recompute-modules", "core_attn"}).total());
}

// §5.4: the backward redoes the recomputed modules' forward: the dense MLP's two GEMMs (2·T·h·2f and
// 2·T·f·h FLOPs) and its activation.
TEST(RecomputeModules, TheBackwardRedoesTheirForward) {
  const args_t llama = {"--model", "llama3-8b", "--num-gpus", "8", "--seq-length", "8192", "--recompute-granularity",
                        "selective", "--recompute-modules"};
  const compute_report mlp = estimate_compute(parse(concat(llama, {"mlp"})).job);
  const unit_time& layer = mlp.layers[static_cast<std::size_t>(layer_kind::dense)];
  const double tokens = 8192, h = 4096, f = 14336;
  EXPECT_DOUBLE_EQ(layer.module_recompute_flops, 6 * tokens * h * f);
  EXPECT_GT(layer.module_recompute_s, 0);
  EXPECT_LT(layer.module_recompute_s, layer.forward.total_s());
  EXPECT_NEAR(mlp.stages[0].recompute_s, 32 * layer.module_recompute_s, 1e-12);
  const compute_report both = estimate_compute(parse(concat(llama, {"mlp", "core_attn"})).job);
  EXPECT_NEAR(both.stages[0].recompute_s, 32 * (layer.module_recompute_s + layer.forward.attention_s), 1e-12);
}

// At TP > 1 the recomputed MLP module (tensor_parallel.checkpoint of the MLP) redoes its block's
// collectives: with SP one all-gather before fc1 and one reduce-scatter after fc2 per dense layer and
// micro-batch, without SP one all-reduce (§4.2.1). Llama-3-8B, 32 layers, 8 GPUs at TP 2: DP 4, GBS 32
// at MBS 1 gives 8 micro-batches.
TEST(RecomputeModules, TheRecomputedMlpRedoesItsTensorParallelCollectives) {
  const args_t base = {"--model", "llama3-8b", "--num-gpus", "8", "--tp", "2", "--gbs", "32", "--mbs", "1"};
  auto tp_calls = [](const args_t& a, std::string_view what) -> std::int64_t {
    const comm_report r = analyze_comm(parse(a).job);
    for (const comm_collective& c : r[parallel_dim::tp].collectives) {
      if (c.what == what) return c.calls_per_iteration;
    }
    return 0;
  };
  const args_t sp = concat(base, {"--sequence-parallel", "--recompute-granularity", "selective", "--recompute-modules", "mlp"});
  EXPECT_EQ(tp_calls(sp, "recomputed forward all-gather (1 per recomputed block)"), 32 * 8);
  EXPECT_EQ(tp_calls(sp, "recomputed forward reduce-scatter (1 per recomputed block)"), 32 * 8);
  const args_t no_sp = concat(base, {"--recompute-granularity", "selective", "--recompute-modules", "mlp"});
  EXPECT_EQ(tp_calls(no_sp, "recomputed forward all-reduce (1 per recomputed block)"), 32 * 8);
  // The attention core alone (the default module) runs no collective again.
  const args_t core = concat(base, {"--sequence-parallel", "--recompute-granularity", "selective"});
  EXPECT_EQ(tp_calls(core, "recomputed forward all-gather (2 per recomputed layer)"), 0);
  EXPECT_EQ(tp_calls(core, "recomputed forward all-gather (1 per recomputed block)"), 0);
  // Full recomputation of every layer: both blocks of each layer, twice the MLP's.
  const args_t full = concat(base, {"--sequence-parallel", "--recompute-granularity", "full", "--recompute-method",
                                    "uniform", "--recompute-num-layers", "1"});
  EXPECT_EQ(tp_calls(full, "recomputed forward all-gather (2 per recomputed layer)"), 2 * 32 * 8);
}

TEST(RecomputeModules, MegatronsChecksAndWhatIsNotModelled) {
  const args_t llama = {"--model", "llama3-8b", "--num-gpus", "8", "--recompute-granularity", "selective"};
  EXPECT_THAT(error_of(concat(llama, {"--recompute-modules", "mla_up_proj"})),
              HasSubstr("--recompute-modules mla_up_proj is only supported with multi-latent attention"));
  EXPECT_THAT(error_of(concat(llama, {"--recompute-modules", "core_atn"})),
              HasSubstr("unknown module 'core_atn' (did you mean 'core_attn'?)"));
  EXPECT_THAT(error_of(concat(kDeepSeek, {"--recompute-modules", "shared_experts", "--tp", "2", "--ep", "4"})),
              HasSubstr("shared_experts is modelled at TP 1"));
  EXPECT_THAT(error_of(concat(kDeepSeek, {"--recompute-modules", "moe"})), HasSubstr("moe is modelled at TP, EP and expert-TP 1"));
  EXPECT_THAT(error_of(concat(kDeepSeek, {"--recompute-modules", "moe_act", "--fp8-format", "hybrid", "--cluster", "dgx-h100"})),
              HasSubstr("moe_act and layernorm with FP8 need a recipe other than delayed scaling"));
  // An empty list recomputes nothing; without selective the modules change nothing (Megatron reads them
  // there only); --moe-layer-recompute is selective with moe added.
  const parsed_job empty = parse(concat(llama, {"--recompute-modules"}));
  EXPECT_EQ(empty.job.training.recompute, recompute_granularity::none);
  const parsed_job full = parse({"--model", "llama3-8b", "--num-gpus", "8", "--recompute-granularity", "full",
                                 "--recompute-modules", "mlp"});
  EXPECT_THAT(full.ignored_flags, Contains(HasSubstr("--recompute-modules")));
  const parsed_job moe = parse({"--model", "deepseek-v3", "--num-gpus", "8", "--moe-layer-recompute"});
  EXPECT_EQ(moe.job.training.recompute, recompute_granularity::selective);
  EXPECT_TRUE(moe.job.training.recomputes(recompute_module::moe));
  EXPECT_TRUE(moe.job.training.recomputes(recompute_module::core_attn));
}

}  // namespace
}  // namespace trainplan
