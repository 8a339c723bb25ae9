// The models people train now (issue 11): the same architecture from Megatron-Core's flags, our YAML
// and the catalog; their FLOPs and activation memory against the hand derivations of
// docs/formulas.md §1.7-§1.9, §3.4.5 and §5.1.2. Counts against published figures: tests/core/model/model_test.cc.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "args_test_support.h"
#include "trainplan/cli/args.h"
#include "trainplan/cli/cli.h"
#include "trainplan/core/estimate/comm.h"
#include "trainplan/core/estimate/compute.h"
#include "trainplan/core/base/error.h"
#include "trainplan/core/estimate/memory.h"
#include "trainplan/core/model/model.h"
#include "trainplan/core/search/search.h"
#include "trainplan/core/estimate/time.h"

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

TEST(ModelFamilyFlags, APatternAndItsRuleGiveTheSameEstimates) {
  // "([0]*3+[1]*58)" and first_k_dense_replace 3 are the same model: memory, communication and time agree
  // (the communication's stage classes once took a pattern with layer_freq 1 for "every layer MoE").
  args_t flags = kDeepSeekV3Flags;
  flags.insert(flags.end(), {"--pp", "8", "--ep", "8", "--decoder-first-pipeline-num-layers", "5", "--cluster",
                             "dgx-h100", "--num-gpus", "512", "--gbs", "1024", "--moe-token-dispatcher-type", "alltoall"});
  const job_spec from_flags = parse(flags).job;
  job_spec from_catalog = from_flags;
  from_catalog.model = find_model("deepseek-v3").spec;
  from_catalog.model.attention_dropout = from_flags.model.attention_dropout;  // Megatron's flags default 0.1
  from_catalog.model.hidden_dropout = from_flags.model.hidden_dropout;
  ASSERT_EQ(count_parameters(from_flags.model, 1).total, count_parameters(from_catalog.model, 1).total);
  const comm_report a = summarize_comm(from_flags), b = summarize_comm(from_catalog);
  EXPECT_DOUBLE_EQ(a.time_per_iteration_per_gpu_s, b.time_per_iteration_per_gpu_s);
  EXPECT_DOUBLE_EQ(a.bytes_per_iteration_cluster, b.bytes_per_iteration_cluster);
  EXPECT_DOUBLE_EQ(estimate_time(from_flags).iteration_s, estimate_time(from_catalog).iteration_s);
  EXPECT_DOUBLE_EQ(estimate_memory(from_flags).peak_reserved_bytes, estimate_memory(from_catalog).peak_reserved_bytes);
}

TEST(ModelFamilyFlags, WindowAndNormFlags) {
  // Gemma-2-like: --window-size (4095, 0), a 4096-token window (flash-attention's left + 1 tokens), with
  // every second layer full, QK-norm, learnable sinks.
  const parsed_job pj = parse({"--model", "llama3-8b", "--window-size", "(4095,0)", "--window-attn-skip-freq", "2",
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
  EXPECT_THAT(error_of({"--model", "llama3-8b", "--multi-latent-attention", "--kv-lora-rank", "8388608", "--num-gpus", "8"}),
              HasSubstr("must be a positive integer no larger than 4194304"));
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

namespace trainplan {
namespace {

using ::testing::HasSubstr;
using namespace args_testing;  // NOLINT(google-build-using-namespace)

TEST(ModelFamilyMemory, MlaAndMoeLayerActivationsByHand) {
  // docs/formulas.md §3.4.5, DeepSeek-V3, TP 1, no SP, flash attention, bf16, b = 1, s = 4096, no
  // dropout. Per token, attention: the down-projections' input e·h, Q, K, V e·(24576 + 24576 + 16384),
  // the latent norms' inputs and outputs e·2·(1536 + 512), the flash output e·16384 (also the
  // projection's input: one tensor) and its fp32 log-sum-exp 4·128: 186,880 bytes. Norms 2·e·h = 28,672.
  const job_spec job = parse({"--model", "deepseek-v3", "--num-gpus", "8", "--ep", "8"}).job;
  const layer_activation_bytes moe = layer_activations(job, true);
  const double tokens = 4096;
  EXPECT_DOUBLE_EQ(moe.attention, 186'880 * tokens);
  EXPECT_DOUBLE_EQ(moe.norms, 28'672 * tokens);
  EXPECT_DOUBLE_EQ(moe.dropout_masks, 0);
  // MoE: router input e·h, fp32 probabilities and the routing map (4 + 1)·256, then for each of the 8
  // routed copies the expert input and the combine input 2·e·h plus the fused bias-SwiGLU's 3·e·2048
  // (Megatron-Core's default: its 2f input and fc2's input), and the shared expert's 3·e·2048:
  // 14,336 + 1,280 + 8 × 40,960 + 12,288 = 355,584 bytes per token.
  EXPECT_DOUBLE_EQ(moe.mlp, 355'584 * tokens);
  const layer_activation_bytes dense = layer_activations(job, false);
  EXPECT_DOUBLE_EQ(dense.mlp, (14'336 + 3 * 2 * 18'432) * tokens);
  // Dropless with a 1.5× busiest expert: the routed copies' part grows by half.
  job_spec skewed = job;
  skewed.model.moe.load_imbalance = 1.5;
  EXPECT_DOUBLE_EQ(layer_activations(skewed, true).mlp - moe.mlp, 0.5 * 8 * 40'960 * tokens);
}

TEST(ModelFamilyCompute, WindowedLayersExecuteOnlyTheWindow) {
  // gpt-oss-120b at 4096 tokens: a sliding layer's flash kernel runs 128·4096 − 128·127/2 pairs of the
  // 4096²/2 a full layer runs (§5.1.2).
  const job_spec job = parse({"--model", "gpt-oss-120b", "--num-gpus", "8", "--ep", "8"}).job;
  const double fraction = causal_pairs_fraction(job.model, true);
  EXPECT_NEAR(fraction, (128.0 * 4096 - 128.0 * 127 / 2) / (4096.0 * 4096 / 2), 1e-12);
  const compute_efficiency eff = effective_compute_efficiency(job.cluster.gpu);
  const unit_time full = layer_compute(job, eff, true, false);
  const unit_time window = layer_compute(job, eff, true, true);
  // Q·Kᵀ and P·V over 64 dims each: 0.5 · 2 · 64 heads · 4096² · 128 FLOPs a full layer.
  const double attention_full = 0.5 * 2 * 64 * 4096.0 * 4096 * (64 + 64);
  EXPECT_NEAR(full.forward.flops - window.forward.flops, attention_full * (1 - fraction), 1.0);
  EXPECT_LT(window.forward.attention_s, full.forward.attention_s);
  EXPECT_EQ(window.forward.gemm_s, full.forward.gemm_s);  // the projections and experts are the same
  // Llama 4's chunks of 8192: (w + 1)/s of the pairs at 32K.
  model_spec scout = find_model("llama4-scout").spec;
  scout.seq_length = 32768;
  EXPECT_NEAR(causal_pairs_fraction(scout, true), 8193.0 / 32768, 1e-12);
}

TEST(ModelFamilyCompute, ExpertGemmsFollowEtpAndTheBusiestExpert) {
  // Mixtral, TP 2: expert TP 2 splits each expert's FFN, expert TP 1 keeps it whole and gives each rank
  // half the rows (parallel folding, §5.1).
  auto expert_up = [](const args_t& more) {
    args_t a = {"--model", "mixtral-8x7b", "--tp", "2", "--ep", "4", "--sp", "--num-gpus", "8", "--seq-length", "4096"};
    a.insert(a.end(), more.begin(), more.end());
    for (const named_gemm& g : layer_gemm_shapes(parse(a).job, true))
      if (g.name == "expert_up") return g.shape;
    return gemm_shape{};
  };
  const gemm_shape etp2 = expert_up({});
  EXPECT_EQ(etp2.m, 4 * 4096 * 2 / 8);  // ep · tokens · k / E
  EXPECT_EQ(etp2.n, 2 * 14336 / 2);
  EXPECT_EQ(etp2.batch, 2);
  const gemm_shape etp1 = expert_up({"--etp", "1"});
  EXPECT_EQ(etp1.m, etp2.m / 2);
  EXPECT_EQ(etp1.n, 2 * 14336);
  const gemm_shape busy = expert_up({"--moe-load-imbalance", "1.25"});
  EXPECT_EQ(busy.m, etp2.m * 5 / 4);
  const gemm_shape capped = expert_up({"--moe-expert-capacity-factor", "1.0", "--moe-load-imbalance", "1.25"});
  EXPECT_EQ(capped.m, etp2.m);  // a capacity factor drops what exceeds it
}

TEST(ModelFamilyComm, DestinationNodesOfATokenByHand) {
  // k = 8 experts over 8 nodes: 8·(1 − (7/8)^8) = 5.2514 nodes; limited to 4 of 8 groups (one per
  // node, DeepSeek-V3's node-limited routing): 4·(1 − (3/4)^8) = 3.5995 (§4.2.5).
  moe_spec x = find_model("deepseek-v3").spec.moe;
  EXPECT_NEAR(expected_destination_nodes(x, 8), 4 * (1 - std::pow(0.75, 8)), 1e-12);
  x.router_num_groups = 0;
  x.router_group_topk = 0;
  EXPECT_NEAR(expected_destination_nodes(x, 8), 8 * (1 - std::pow(7.0 / 8, 8)), 1e-12);
  EXPECT_NEAR(expected_destination_nodes(x, 1), 1.0, 1e-12);
}

TEST(ModelFamilyComm, DeepSeekV3AcrossNodesIsCommunicationHeavyAndNodeLimitedRoutingHelps) {
  // The DeepSeek-V3 report's layout: PP 16, EP 64 over 8 nodes, ZeRO-1 DP, 2048 GPUs (H800 there, H100
  // here). EP traffic is a large part of the iteration; routing each token to at most 4 nodes cuts
  // the deduplicated (flex/DeepEP) dispatch by 3.60/5.25 (§4.2.5, report §3.2.2).
  const args_t layout = {"--model", "deepseek-v3", "--cluster", "dgx-h100", "--num-gpus", "2048", "--pp", "16",
                         "--ep", "64", "--gbs", "15360", "--use-distributed-optimizer",
                         "--decoder-first-pipeline-num-layers", "1", "--recompute-granularity", "full",
                         "--recompute-method", "uniform", "--recompute-num-layers", "1",
                         "--moe-token-dispatcher-type", "flex"};
  auto ep_seconds = [](const args_t& a) {
    const comm_report r = summarize_comm(parse(a).job);
    return r[parallel_dim::ep].time_per_iteration_s;
  };
  const double limited = ep_seconds(layout);
  args_t unlimited = layout;
  unlimited.insert(unlimited.end(), {"--moe-router-num-groups", "0"});
  const double free = ep_seconds(unlimited);
  EXPECT_NEAR(limited / free, 3.5995 / 5.2514, 0.05);
  const time_report t = estimate_time(parse(layout).job);
  EXPECT_GT(t.breakdown.tp_comm_s / t.iteration_s, 0.15);
  // Plain all-to-all sends a copy per expert: node-limited routing does not shrink it.
  args_t a2a = layout;
  a2a.insert(a2a.end(), {"--moe-token-dispatcher-type", "alltoall"});
  args_t a2a_free = a2a;
  a2a_free.insert(a2a_free.end(), {"--moe-router-num-groups", "0"});
  EXPECT_NEAR(ep_seconds(a2a), ep_seconds(a2a_free), 1e-9);
  EXPECT_GT(ep_seconds(a2a), free);
}

TEST(ModelFamilySearch, ShapesKeepTheFamilysLayerMix) {
  // DeepSeek-V3's own shape (hidden 7168, 61 layers: 3 dense, 58 MoE, MTP) is among the shapes near 680B,
  // counted exactly as the catalog counts it (MLA ranks, expert widths and the FFN/h ratio stay; §7.4).
  shapes_request req = parse_shapes_request({"--target-params", "680e9", "--model", "deepseek-v3", "--cluster",
                                             "dgx-h100", "--num-gpus", "1024", "--gbs", "1024", "--ratio", "100-130",
                                             "--max-shapes", "2", "--threads", "2"});
  const shapes_result r = run_shapes(req.base.job, req.rules, req.space);
  bool found = false;
  for (const shape_candidate& c : r.shapes) {
    if (c.hidden == 7168 && c.layers == 61) {
      found = true;
      // The shape's own model (its head count sizes MLA's up-projections and output), and at 128 heads
      // the catalog's.
      model_spec m = find_model("deepseek-v3").spec;
      m.num_attention_heads = c.heads;
      m.num_query_groups = 0;
      m.kv_channels = 0;
      finalize_model(m);
      EXPECT_EQ(c.params, static_cast<double>(count_parameters(m, 1).total));
      if (c.heads == 128) {
        EXPECT_EQ(c.params, static_cast<double>(count_parameters(find_model("deepseek-v3").spec, 1).total));
      }
    }
  }
  EXPECT_TRUE(found);
}

TEST(ModelFamilySearch, SearchAndShapesRunOnTheNewFamilies) {
  for (const char* model : {"deepseek-v3", "qwen3-30b-a3b", "gpt-oss-20b", "gemma2-9b", "llama4-scout"}) {
    SCOPED_TRACE(model);
    const std::string name = model;
    const std::string nodes = name == "deepseek-v3" ? "64" : name == "llama4-scout" ? "8" : "2";
    const search_request req = parse_search_request(
        {"--model", model, "--cluster", "dgx-h100", "--num-nodes", nodes, "--gbs", "1024", "--top", "3", "--threads", "2"});
    const search_result r = run_search(req.base.job, req.space);
    ASSERT_FALSE(r.candidates.empty());
    // The bound never exceeds the full estimate (§7.2), windows and MTP included.
    for (const search_candidate& c : r.candidates) EXPECT_LE(c.lower_bound_s, c.iteration_s * (1 + 1e-9));
  }
}

}  // namespace
}  // namespace trainplan
