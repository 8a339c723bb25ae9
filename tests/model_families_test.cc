// The models people train now (issue 11): the same architecture from Megatron-Core's flags, our YAML
// and the catalog; their FLOPs and activation memory against the hand derivations of
// docs/formulas.md §1.7-§1.9, §3.4.5 and §5.1.2. Counts against published figures: tests/model_test.cc.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "args_test_support.h"
#include "trainplan/args.h"
#include "trainplan/compute.h"
#include "trainplan/error.h"
#include "trainplan/memory.h"
#include "trainplan/model.h"

namespace trainplan {
namespace {

using ::testing::HasSubstr;
using namespace args_testing;  // NOLINT(google-build-using-namespace): the shared helpers

/// DeepSeek-V3 as Megatron-Core's recipe describes it (examples/deepseek_v3, pretrain_gpt.py flags).
const args_t kDeepSeekV3Flags = {
    "--num-layers", "61", "--hidden-size", "7168", "--ffn-hidden-size", "18432", "--num-attention-heads", "128",
    "--multi-latent-attention", "--q-lora-rank", "1536", "--kv-lora-rank", "512", "--qk-head-dim", "128",
    "--qk-pos-emb-head-dim", "64", "--v-head-dim", "128", "--num-experts", "256", "--moe-layer-freq",
    "([0]*3+[1]*58)", "--moe-ffn-hidden-size", "2048", "--moe-shared-expert-intermediate-size", "2048",
    "--moe-router-topk", "8", "--moe-router-num-groups", "8", "--moe-router-group-topk", "4",
    "--moe-router-enable-expert-bias", "--mtp-num-layers", "1", "--vocab-size", "129280",
    "--untie-embeddings-and-output-weights", "--normalization", "RMSNorm", "--swiglu", "--disable-bias-linear",
    "--position-embedding-type", "rope", "--seq-length", "4096", "--num-gpus", "8"};

TEST(ModelFamilyFlags, DeepSeekV3FromMegatronFlagsEqualsTheCatalog) {
  const parsed_job pj = parse(kDeepSeekV3Flags);
  const parameter_breakdown flags = count_parameters(pj.job.model, 1);
  const parameter_breakdown catalog = count_parameters(find_model("deepseek-v3").spec, 1);
  EXPECT_EQ(flags.total, catalog.total);
  EXPECT_EQ(flags.main_model(), 671'026'419'200);
  EXPECT_EQ(flags.active_per_token, catalog.active_per_token);
  EXPECT_EQ(pj.job.model.moe.layer_pattern.size(), 61u);
}

TEST(ModelFamilyFlags, WindowAndNormFlags) {
  // Gemma-2-like: --window-size (4096, 0) with every second layer full, QK-norm, learnable sinks.
  const parsed_job pj = parse({"--model", "llama3-8b", "--window-size", "(4096,0)", "--window-attn-skip-freq", "2",
                               "--qk-layernorm", "--softmax-type", "learnable", "--num-gpus", "8"});
  const model_spec& m = pj.job.model;
  EXPECT_EQ(m.sliding_window, 4096);
  EXPECT_TRUE(m.is_window_layer(0));
  EXPECT_FALSE(m.is_window_layer(1));
  const parameter_breakdown p = count_parameters(m, 1);
  EXPECT_EQ(p.dense_layer.attention_norms, 2 * 128);
  EXPECT_EQ(p.dense_layer.sinks, 32);
  const parsed_job listed = parse({"--model", "llama3-8b", "--window-size", "4096", "--window-attn-skip-freq",
                                   "([1]*31+[0])", "--num-gpus", "8"});
  EXPECT_TRUE(listed.job.model.is_window_layer(30));
  EXPECT_FALSE(listed.job.model.is_window_layer(31));
}

TEST(ModelFamilyFlags, BadPatternsAndSizesNameTheFlag) {
  EXPECT_THAT(error_of({"--model", "mixtral-8x7b", "--moe-layer-freq", "([0]*3+[1]*28", "--num-gpus", "8"}),
              HasSubstr("--moe-layer-freq '([0]*3+[1]*28': ')' is missing at character 14"));
  EXPECT_THAT(error_of({"--model", "mixtral-8x7b", "--moe-layer-freq", "[1,2]", "--num-gpus", "8"}),
              HasSubstr("entries must be 0 or 1"));
  EXPECT_THAT(error_of({"--model", "mixtral-8x7b", "--moe-layer-freq", "([0]*3+[1]*28)", "--num-gpus", "8"}),
              HasSubstr("has 31 entries; it needs one per layer (32)"));
  EXPECT_THAT(error_of({"--model", "mixtral-8x7b", "--moe-layer-freq", "[1]*99999999", "--num-gpus", "8"}),
              HasSubstr("a number is too large"));
  EXPECT_THAT(error_of({"--model", "llama3-8b", "--kv-lora-rank", "512", "--num-gpus", "8"}),
              HasSubstr("need --multi-latent-attention"));
  EXPECT_THAT(error_of({"--model", "llama3-8b", "--multi-latent-attention", "--kv-lora-rank", "4096", "--num-gpus", "8"}),
              HasSubstr("must be a positive integer no larger than 4095"));
  EXPECT_THAT(error_of({"--model", "llama3-8b", "--window-size", "(4096,16)", "--num-gpus", "8"}),
              HasSubstr("only causal windows (left, 0) are modelled"));
  EXPECT_THAT(error_of({"--model", "mixtral-8x7b", "--moe-router-num-groups", "3", "--moe-router-group-topk", "1",
                        "--num-gpus", "8"}),
              HasSubstr("--num-experts (8) must be divisible by --moe-router-num-groups (3)"));
}

TEST(ModelFamilyYaml, OwnFormatHoldsEveryNewField) {
  const std::string path = write_temp("families.yaml", R"yaml(base: llama3-8b
name: mla-moe-toy
mla: {q_lora_rank: 512, kv_lora_rank: 256, qk_head_dim: 64, qk_pos_emb_head_dim: 32, v_head_dim: 64}
num_query_groups: 32
qk_norm: false
sandwich_norm: true
attention_sinks: true
mtp_num_layers: 2
sliding_window: 1024
window_kind: chunked
window_skip_freq: 4
moe:
  num_experts: 16
  router_topk: 2
  expert_ffn_hidden_size: 1024
  shared_expert_ffn_hidden_size: 1024
  shared_expert_gate: true
  layer_pattern: "([0]*2+[1]*30)"
  router_bias: true
  expert_score_bias: true
  router_num_groups: 4
  router_group_topk: 2
  load_imbalance: 1.5
)yaml");
  const model_spec m = load_model_file(path);
  EXPECT_TRUE(m.is_mla());
  EXPECT_EQ(m.kv_channels, 96);
  EXPECT_EQ(m.window, window_kind::chunked);
  EXPECT_EQ(m.num_moe_layers(), 30);
  EXPECT_DOUBLE_EQ(m.moe.load_imbalance, 1.5);
  const parameter_breakdown p = count_parameters(m, 1);
  EXPECT_EQ(p.moe_layer.router, 4096 * 16 + 16 + 16);
  EXPECT_EQ(p.moe_layer.shared_expert_gate, 4096);
  EXPECT_EQ(p.num_mtp_layers, 2);
  const std::string bad = write_temp("bad.yaml", "base: llama3-8b\nwindow_pattern: [1, 0, 2]\n");
  try {
    load_model_file(bad);
    FAIL();
  } catch (const input_error& e) {
    EXPECT_THAT(std::string(e.what()), HasSubstr("bad.yaml:2: field 'window_pattern': entry 2 (layer 2): expected 0 or 1, got 2"));
  }
}

}  // namespace
}  // namespace trainplan
