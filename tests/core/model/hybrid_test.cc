// Hybrid Mamba-2/attention models (issue 11; docs/formulas.md §1.10, §3.4.7, §5.1.4): exact counts of
// Nemotron-H, a Mamba-2 block's parameters, activations and FLOPs against their hand derivations, the
// flags and their bad input, and the layer-kind accounts checked against each other: a transformer
// written as a hybrid pattern of attention and MLP blocks is the same model in every estimate.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "args_test_support.h"
#include "trainplan/cli/args.h"
#include "trainplan/cli/cli.h"
#include "trainplan/core/estimate/comm.h"
#include "trainplan/core/estimate/compute.h"
#include "trainplan/core/estimate/memory.h"
#include "trainplan/core/model/model.h"
#include "trainplan/core/search/search.h"
#include "trainplan/core/estimate/time.h"

namespace trainplan {
namespace {

using ::testing::HasSubstr;
using namespace args_testing;  // NOLINT(google-build-using-namespace): the shared helpers

std::string repeated(const std::string& unit, int times) {
  std::string out;
  for (int i = 0; i < times; ++i) out += unit;
  return out;
}

TEST(HybridModel, NemotronHCountsByHand) {
  // §1.10 works Nemotron-H 8B through: a Mamba-2 block is its norm h, in_proj h·(2d + 2GN + H), the
  // convolution (d + 2GN)·(4 + 1), dt_bias/A_log/D 3H, the gated norm d and out_proj d·h.
  const std::int64_t h = 4096, d = 8192, g = 8, n = 128, heads = 128;
  const std::int64_t mamba = h + h * (2 * d + 2 * g * n + heads) + (d + 2 * g * n) * 5 + 3 * heads + d + d * h;
  EXPECT_EQ(mamba, 109'640'064);
  const parameter_breakdown p = count_parameters(find_model("nemotron-h-8b").spec, 1);
  EXPECT_EQ(p.mamba_layer.total(), mamba);
  EXPECT_EQ(p.attention_layer.total(), h + h * (h + 2 * 1024) + h * h);  // norm, QKV (GQA 8 × 128), projection
  EXPECT_EQ(p.dense_layer.total(), h + 2 * h * 21504);                    // norm, squared-ReLU fc1 and fc2
  EXPECT_EQ(p.num_mamba_layers, 24);
  EXPECT_EQ(p.num_attention_layers, 4);
  EXPECT_EQ(p.num_dense_layers, 24);
  EXPECT_EQ(p.total, 8'100'852'736);
  EXPECT_EQ(p.active_per_token, p.total);
}

TEST(HybridModel, CatalogMatchesThePublishedSizesAndLayerMix) {
  // Nemotron-H report (arXiv 2504.03624) Table 1: 8B with 24 Mamba-2, 24 MLP and 4 attention layers;
  // 56B with 54, 54 and 10. The report rounds the totals.
  const parameter_breakdown small = count_parameters(find_model("nemotron-h-8b").spec, 1);
  const parameter_breakdown big = count_parameters(find_model("nemotron-h-56b").spec, 1);
  EXPECT_NEAR(static_cast<double>(small.total) / 1e9, 8, 0.15);
  EXPECT_NEAR(static_cast<double>(big.total) / 1e9, 56, 0.5);
  EXPECT_EQ(big.total, 56'324'350'464);
  EXPECT_EQ(big.num_mamba_layers, 54);
  EXPECT_EQ(big.num_dense_layers, 54);
  EXPECT_EQ(big.num_attention_layers, 10);
}

TEST(HybridModel, MegatronFlagsGiveTheCatalogModel) {
  const args_t flags = {"--hybrid-layer-pattern", find_model("nemotron-h-8b").spec.hybrid_pattern,
                        "--hidden-size", "4096", "--ffn-hidden-size", "21504", "--num-attention-heads", "32",
                        "--group-query-attention", "--num-query-groups", "8", "--kv-channels", "128",
                        "--mamba-num-heads", "128", "--mamba-state-dim", "128", "--mamba-head-dim", "64",
                        "--mamba-num-groups", "8", "--squared-relu", "--normalization", "RMSNorm",
                        "--position-embedding-type", "rope", "--disable-bias-linear",
                        "--untie-embeddings-and-output-weights", "--vocab-size", "131072", "--seq-length", "8192",
                        "--num-gpus", "8"};
  const parsed_job pj = parse(flags);
  EXPECT_EQ(pj.job.model.num_layers, 52);  // from the pattern, as Megatron derives --num-layers
  EXPECT_EQ(count_parameters(pj.job.model, 1).total, 8'100'852'736);
  // The deprecated spelling is the same flag.
  args_t old = flags;
  old[0] = "--hybrid-override-pattern";
  EXPECT_EQ(count_parameters(parse(old).job.model, 1).total, 8'100'852'736);
}

TEST(HybridModel, OurYamlHoldsThePatternAndTheMambaSizes) {
  const std::string path = write_temp("hybrid.yaml",
                                      "name: small-hybrid\nhidden_size: 1024\nnum_attention_heads: 8\n"
                                      "num_query_groups: 8\nvocab_size: 32000\nseq_length: 2048\n"
                                      "activation: squared_relu\nnorm: rmsnorm\nposition_embedding: rope\n"
                                      "add_bias_linear: false\ntie_embeddings: false\nffn_hidden_size: 4096\n"
                                      "hybrid_pattern: 'M-M*-M--'\n"
                                      "mamba: {state_dim: 64, head_dim: 32, num_groups: 4}\n");
  const model_spec m = resolve_model(path);
  EXPECT_EQ(m.num_layers, 8);
  EXPECT_EQ(m.mamba.num_heads, 2 * 1024 / 32);  // Megatron's default: 2h / head dim
  const parameter_breakdown p = count_parameters(m, 1);
  EXPECT_EQ(p.num_mamba_layers, 3);
  EXPECT_EQ(p.num_attention_layers, 1);
  EXPECT_EQ(p.num_dense_layers, 4);
  const std::int64_t h = 1024, d = 2048, g = 4, n = 64, heads = 64;
  EXPECT_EQ(p.mamba_layer.total(), h + h * (2 * d + 2 * g * n + heads) + (d + 2 * g * n) * 5 + 3 * heads + d + d * h);
}

TEST(HybridModel, MoeBlocksAreAnMoeWithoutAttention) {
  // Nemotron 3 Nano's shape (Megatron-Bridge Nemotron3NanoProvider): E blocks of 128 squared-ReLU experts
  // top-6 with a shared expert and the score-bias router, each block one norm; they run under EP.
  const args_t flags = {"--model", "nemotron-h-8b", "--hybrid-layer-pattern",
                        "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME", "--hidden-size", "2688",
                        "--num-query-groups", "2", "--mamba-num-heads", "64", "--ffn-hidden-size", "1856",
                        "--num-experts", "128", "--moe-ffn-hidden-size", "1856",
                        "--moe-shared-expert-intermediate-size", "3712", "--moe-router-topk", "6",
                        "--moe-router-enable-expert-bias", "--cluster", "dgx-h100", "--num-gpus", "16", "--ep", "8",
                        "--gbs", "64", "--use-distributed-optimizer"};
  const job_spec job = parse(flags).job;
  const parameter_breakdown p = count_parameters(job.model, 1);
  const std::int64_t h = 2688, e = 128, fe = 1856, fs = 3712;
  EXPECT_EQ(p.num_moe_layers, 23);
  EXPECT_EQ(p.num_mamba_layers, 23);
  EXPECT_EQ(p.num_attention_layers, 6);
  EXPECT_EQ(p.num_dense_layers, 0);
  EXPECT_EQ(p.moe_layer.total(), h + (e * h + e) + e * 2 * h * fe + 2 * h * fs);
  EXPECT_EQ(p.active_per_token, p.total - 23 * (e - 6) * 2 * h * fe);
  // Each E block dispatches over EP once per micro-batch and pass (4 micro-batches of 1 on DP 16).
  const comm_report r = summarize_comm(job);
  EXPECT_GT(r[parallel_dim::ep].calls_per_iteration_per_gpu, 0);
  EXPECT_EQ(r[parallel_dim::ep].calls_per_iteration_per_gpu % (23 * 4), 0);
  EXPECT_GT(estimate_time(job).iteration_s, 0);
}

TEST(HybridModel, BadPatternsAndLayoutsAreRefusedByName) {
  const args_t base = {"--model", "nemotron-h-8b", "--num-gpus", "8"};
  EXPECT_THAT(error_of(concat(base, {"--hybrid-layer-pattern", "M*-X"})),
              HasSubstr("character 4 'X' is not a layer: use M (Mamba), * (attention), - (MLP) or E (MoE)"));
  EXPECT_THAT(error_of(concat(base, {"--hybrid-layer-pattern", "M*G-"})),
              HasSubstr("character 3 'G' is a gated DeltaNet layer, which is not modelled"));
  // '|' ends a pipeline segment (tests/core/job/layout_string_test.cc, HybridSegments): one per stage.
  EXPECT_THAT(error_of(concat(base, {"--hybrid-layer-pattern", "M-|M-"})),
              HasSubstr("--hybrid-layer-pattern's 2 pipeline segments need --pipeline-model-parallel-size > 1"));
  EXPECT_THAT(error_of(concat(base, {"--num-layers", "50"})),
              HasSubstr("--num-layers (50) must equal the length of --hybrid-layer-pattern (52 layers)"));
  EXPECT_THAT(error_of(concat(base, {"--hybrid-layer-pattern", "MEME"})),
              HasSubstr("--hybrid-layer-pattern has MoE layers (E): give --num-experts"));
  EXPECT_THAT(error_of(concat(base, {"--mamba-num-groups", "3"})),
              HasSubstr("--mamba-num-heads (128) must be divisible by --mamba-num-groups (3)"));
  EXPECT_THAT(error_of(concat(base, {"--tp", "8", "--mamba-num-groups", "4"})), HasSubstr("--mamba-num-groups"));
  EXPECT_THAT(error_of(concat(base, {"--cp", "2"})),
              HasSubstr("--context-parallel-size 2 with a hybrid model (--hybrid-layer-pattern) is not modelled"));
  EXPECT_THAT(error_of(concat(base, {"--window-size", "1024"})),
              HasSubstr("--window-size with --hybrid-layer-pattern is not modelled"));
}

/// Nemotron-H 8B on one DGX H100 node, TP 2 with sequence parallelism.
job_spec nemotron_job(const args_t& more = {}) {
  return parse(concat({"--model", "nemotron-h-8b", "--cluster", "dgx-h100", "--num-gpus", "8", "--tp", "2",
                       "--sequence-parallel", "--use-distributed-optimizer", "--gbs", "64"},
                      more))
      .job;
}

TEST(HybridModel, MambaActivationsByHand) {
  // §3.4.7, per token on one GPU (bf16, TP 2 with SP): the norm's input and in_proj's input 2·2·h/t,
  // in_proj's output 2·(2d + 2GN + H)/t, the gated norm's input 2·d/t and its fp32 rstd 4·G/t,
  // out_proj's input 2·d/t; no dropout.
  const job_spec job = nemotron_job();
  const double t = 2, h = 4096, d = 8192, g = 8, n = 128, heads = 128;
  const double per_token = 2 * 2 * h / t + 2 * (2 * d + 2 * g * n + heads) / t + 2 * d / t + 4 * g / t + 2 * d / t;
  const layer_activation_bytes a = layer_activations(job, layer_kind::mamba);
  EXPECT_DOUBLE_EQ(a.total(), per_token * 8192);
  EXPECT_EQ(a.attention, 0);
  EXPECT_EQ(a.mlp, 0);
  // An MLP block alone: one norm, fc1's input (SP: gathered, 1/t), relu² input and fc2's input.
  const layer_activation_bytes mlp = layer_activations(job, layer_kind::mlp);
  EXPECT_DOUBLE_EQ(mlp.total(), (2 * h / t + 2 * h / t + 2 * 21504 / t + 2 * 21504 / t) * 8192);
}

TEST(HybridModel, MambaFlopsByHand) {
  // §5.1.4, forward on one GPU: in_proj and out_proj as GEMMs, 2·T·h·(2d + 2GN + H)/t and 2·T·d·h/t; the
  // SSD scan T·(2·Q·N·G + 2·Q·d + 4·N·d)/t with Q = 128.
  const job_spec job = nemotron_job();
  const compute_efficiency e = effective_compute_efficiency(job.cluster.gpu);
  const double tokens = 8192, t = 2, h = 4096, d = 8192, g = 8, n = 128, heads = 128, q = 128;
  const double gemms = 2 * tokens * h * (2 * d + 2 * g * n + heads) / t + 2 * tokens * d * h / t;
  const double scan = tokens * (2 * q * n * g + 2 * q * d + 4 * n * d) / t;
  const unit_time u = layer_compute(job, e, layer_kind::mamba);
  EXPECT_DOUBLE_EQ(u.forward.flops, gemms + scan);
  EXPECT_DOUBLE_EQ(u.backward.flops, 2 * (gemms + scan));
  EXPECT_EQ(u.forward.attention_s, 0);  // nothing for selective recomputation to redo
  // The scan is a small part of the block, as Megatron's FLOPs count has it (7·T·d·N there).
  EXPECT_LT(scan / (gemms + scan), 0.06);
}

TEST(HybridModel, TensorParallelCollectivesArePerBlock) {
  // One all-reduce per block and pass without SP (§4.2.1): 52 blocks × 16 micro-batches forward.
  job_spec job = parse({"--model", "nemotron-h-8b", "--cluster", "dgx-h100", "--num-gpus", "8", "--tp", "2",
                        "--use-distributed-optimizer", "--gbs", "64"})
                     .job;
  const comm_report r = summarize_comm(job);
  bool found = false;
  for (const comm_collective& row : r[parallel_dim::tp].collectives) {
    if (row.what == "block output all-reduce (1 per block)") {
      found = true;
      EXPECT_EQ(row.calls_per_iteration, 52 * 16);
    }
  }
  EXPECT_TRUE(found);
}

TEST(HybridModel, ATransformerWrittenAsBlocksIsTheSameModel) {
  // Llama-3-8B's 32 layers as 64 hybrid blocks "*-*-...": the same parameters, memory, communication
  // and iteration time, from the per-kind accounts (attention block + MLP block = transformer layer).
  const args_t layout = {"--cluster", "dgx-h100", "--num-gpus", "16", "--tp", "2", "--pp", "2",
                         "--sequence-parallel", "--use-distributed-optimizer", "--gbs", "64", "--seq-length", "4096"};
  const job_spec transformer = parse(concat({"--model", "llama3-8b"}, layout)).job;
  const job_spec hybrid =
      parse(concat({"--model", "llama3-8b", "--num-layers", "64", "--hybrid-layer-pattern", repeated("*-", 32)}, layout))
          .job;
  ASSERT_TRUE(hybrid.model.is_hybrid());
  EXPECT_EQ(count_parameters(hybrid.model, 2).total, count_parameters(transformer.model, 2).total);
  const memory_report ma = estimate_memory(transformer), mb = estimate_memory(hybrid);
  ASSERT_EQ(ma.stages.size(), mb.stages.size());
  for (std::size_t i = 0; i < ma.stages.size(); ++i) {
    EXPECT_EQ(ma.stages[i].parameters, mb.stages[i].parameters);
    EXPECT_NEAR(ma.stages[i].activations_bytes, mb.stages[i].activations_bytes, 1e-9 * ma.stages[i].activations_bytes);
  }
  const time_report ta = estimate_time(transformer), tb = estimate_time(hybrid);
  EXPECT_NEAR(ta.iteration_s, tb.iteration_s, 1e-9 * ta.iteration_s);
  EXPECT_NEAR(ta.model_tflops_per_gpu, tb.model_tflops_per_gpu, 1e-9 * ta.model_tflops_per_gpu);
  const comm_report ca = summarize_comm(transformer), cb = summarize_comm(hybrid);
  EXPECT_EQ(ca[parallel_dim::tp].calls_per_iteration_per_gpu, cb[parallel_dim::tp].calls_per_iteration_per_gpu);
  EXPECT_NEAR(ca.time_per_iteration_per_gpu_s, cb.time_per_iteration_per_gpu_s, 1e-9 * ca.time_per_iteration_per_gpu_s);
}

TEST(HybridModel, SearchAndShapesRun) {
  const search_request req = parse_search_request(
      {"--model", "nemotron-h-8b", "--cluster", "dgx-h100", "--num-nodes", "2", "--gbs", "256", "--top", "3",
       "--threads", "2"});
  const search_result r = run_search(req.base.job, req.space);
  ASSERT_FALSE(r.candidates.empty());
  for (const search_candidate& c : r.candidates) {
    EXPECT_LE(c.lower_bound_s, c.iteration_s * (1 + 1e-9));
    EXPECT_EQ(c.cp, 1);  // Mamba's context parallelism is not modelled: never proposed
  }
  // Shapes near 4B keep the hybrid's mix of blocks (its pattern stretched to each depth).
  shapes_request sr = parse_shapes_request({"--target-params", "4e9", "--model", "nemotron-h-8b", "--cluster",
                                            "dgx-h100", "--num-gpus", "8", "--gbs", "64", "--max-shapes", "2",
                                            "--ratio", "50-100", "--threads", "2"});
  const shapes_result shapes = run_shapes(sr.base.job, sr.rules, sr.space);
  ASSERT_FALSE(shapes.shapes.empty());
  for (const shape_candidate& c : shapes.shapes) EXPECT_NEAR(c.params / 4e9, 1, sr.rules.tolerance);
}

}  // namespace
}  // namespace trainplan
