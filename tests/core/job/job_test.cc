// The parallel layout (docs/formulas.md §2): the one account of the pipeline split and of what a GPU
// holds, against the frameworks' own rules written out literally.
#include "trainplan/core/job/job.h"
#include "trainplan/core/job/layout.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <numeric>
#include <string>
#include <vector>

#include "trainplan/cli/args.h"
#include "trainplan/core/base/error.h"
#include "trainplan/core/model/model.h"

namespace trainplan {
namespace {

TEST(ParallelSplit, DeepSpeedClosedFormIsPartitionUniform) {
  // split_layers' closed form against DeepSpeed's partition_uniform rank by rank (deepspeed_items), with
  // and without BLOOM's embedding slots, for every layer count and pipeline size up to 40.
  for (const bool emb : {false, true}) {
    for (std::int64_t layers = 1; layers <= 40; ++layers) {
      for (std::int64_t pp = 1; pp <= 40; ++pp) {
        parallel_config p;
        p.pp = pp;
        p.embedding_as_stage = emb;
        const stage_split s = split_layers(layers, p, framework_kind::deepspeed);
        const std::int64_t items = layers + (emb ? 2 : 0);
        bool valid = true;
        for (std::int64_t r = 0; r < pp; ++r) {
          std::int64_t n = deepspeed_items(items, pp, r);
          if (emb) n -= (r == 0 ? 1 : 0) + (r == pp - 1 ? 1 : 0);
          if (n < 1) valid = false;
          if (valid && s.valid) {
            EXPECT_EQ(s.of(r, pp), n) << layers << " layers, pp " << pp << ", rank " << r;
          }
        }
        EXPECT_EQ(s.valid, valid) << layers << " layers, pp " << pp << (emb ? ", embedding slots" : "");
      }
    }
  }
}

TEST(ParallelSplit, MegatronEvenExplicitAndInterleaved) {
  parallel_config p;
  p.pp = 4;
  EXPECT_FALSE(split_layers(30, p, framework_kind::megatron).valid);  // 30 is not a multiple of 4
  const stage_split even = split_layers(32, p, framework_kind::megatron);
  EXPECT_TRUE(even.valid);
  EXPECT_EQ(even.first, 8);
  EXPECT_EQ(even.middle, 8);
  EXPECT_EQ(even.last, 8);
  // Llama 3 405B's published split: 126 layers over PP 16 as 7 on the first and last, 8 in between.
  p.pp = 16;
  p.first_stage_layers = 7;
  p.last_stage_layers = 7;
  const stage_split uneven = split_layers(126, p, framework_kind::megatron);
  EXPECT_TRUE(uneven.valid);
  EXPECT_EQ(uneven.first, 7);
  EXPECT_EQ(uneven.middle, 8);
  EXPECT_EQ(uneven.last, 7);
  p.last_stage_layers = 6;  // 126 − 7 − 6 = 113 does not split over 14
  EXPECT_FALSE(split_layers(126, p, framework_kind::megatron).valid);
  parallel_config v;
  v.pp = 4;
  v.vpp = 5;
  EXPECT_EQ(split_layers(80, v, framework_kind::megatron).most(), 20);
  v.vpp = 3;
  EXPECT_FALSE(split_layers(80, v, framework_kind::megatron).valid);
}

TEST(ParallelSplit, MegatronCountsTheEmbeddingAndLossAsLayersWhenAsked) {
  // transformer_block.py get_num_layers_to_build: (L + 1 + 1) / PP per rank, the first rank one fewer for
  // the embedding, the last one fewer for the loss (Llama-3.1-405B: 126 + 2 = 128 over PP 16: 7, 8…, 7).
  parallel_config p;
  p.pp = 16;
  p.account_embedding_in_split = true;
  p.account_loss_in_split = true;
  const stage_split both = split_layers(126, p, framework_kind::megatron);
  ASSERT_TRUE(both.valid);
  EXPECT_EQ(both.first, 7);
  EXPECT_EQ(both.middle, 8);
  EXPECT_EQ(both.last, 7);
  p.account_loss_in_split = false;  // 127 over 16 does not divide
  EXPECT_EQ(split_layers(126, p, framework_kind::megatron).failure, split_failure::layers_not_divisible);
  const stage_split first_only = split_layers(127, p, framework_kind::megatron);
  EXPECT_EQ(first_only.first, 7);
  EXPECT_EQ(first_only.last, 8);
  // Through the flags, with Megatron-Core's own refusals named.
  const auto job = [](std::vector<std::string> more) {
    std::vector<std::string> a = {"--model", "llama3.1-405b", "--cluster", "dgx-h100", "--num-gpus", "128", "--tp", "8",
                                  "--pp", "16", "--gbs", "64", "--use-distributed-optimizer"};
    a.insert(a.end(), more.begin(), more.end());
    return parse_job_args(a);
  };
  const std::vector<stage_layout> layout =
      pipeline_layout(job({"--account-for-embedding-in-pipeline-split", "--account-for-loss-in-pipeline-split"}).job);
  EXPECT_EQ(layout.front().num_layers, 7);
  EXPECT_EQ(layout[1].num_layers, 8);
  EXPECT_EQ(layout.back().num_layers, 7);
  EXPECT_THROW(job({"--account-for-loss-in-pipeline-split", "--decoder-first-pipeline-num-layers", "7"}), input_error);
  // With interleaving (transformer_block.py get_num_layers_to_build): 126 + 2 over PP 16 is 8 a rank, 4 a
  // chunk at VPP 2, the first rank's first chunk and the last rank's last one layer short; the issue's
  // 126 + 2 = 8 × 8 × 2 at PP 8, VPP 8.
  const std::vector<stage_layout> vpp2 = pipeline_layout(
      job({"--account-for-embedding-in-pipeline-split", "--account-for-loss-in-pipeline-split", "--vpp", "2"}).job);
  EXPECT_EQ(vpp2.front().num_layers, 7);
  EXPECT_EQ(vpp2[1].num_layers, 8);
  EXPECT_EQ(vpp2.back().num_layers, 7);
  EXPECT_EQ(vpp2[1].first_layer, 3);  // rank 0's first chunk holds layers 0-2
  const parsed_job pp8 = parse_job_args({"--model", "llama3.1-405b", "--num-layers", "126", "--cluster", "dgx-h100",
                                         "--num-gpus", "64", "--tp", "8", "--pp", "8", "--vpp", "8", "--gbs", "64",
                                         "--account-for-embedding-in-pipeline-split",
                                         "--account-for-loss-in-pipeline-split"});
  EXPECT_EQ(pipeline_layout(pp8.job).front().num_layers, 15);
  try {
    job({"--account-for-embedding-in-pipeline-split", "--account-for-loss-in-pipeline-split", "--vpp", "3"});
    ADD_FAILURE() << "8 layers a rank in 3 chunks";
  } catch (const input_error& e) {
    EXPECT_THAT(std::string(e.what()), ::testing::HasSubstr("(126 + 1 embedding + 1 loss) must be divisible by --pipeline-model-parallel-size × --virtual-pipeline-model-parallel-size (16 × 3)"));
  }
}

TEST(ParallelLayout, StagesAddUpToTheModelAndFollowTheSplit) {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"--preset", "bloom-176b-production"},
           {"--model", "llama3.1-405b", "--cluster", "dgx-h100", "--num-gpus", "1024", "--tp", "8", "--pp", "16",
            "--decoder-first-pipeline-num-layers", "7", "--decoder-last-pipeline-num-layers", "7", "--gbs", "2048"},
           {"--model", "llama3-70b", "--cluster", "dgx-h100", "--num-gpus", "64", "--tp", "8", "--pp", "4",
            "--virtual-pipeline-model-parallel-size", "4", "--gbs", "64"},
           {"--model", "mixtral-8x7b", "--cluster", "dgx-h100", "--num-gpus", "64", "--tp", "2", "--pp", "4",
            "--ep", "4", "--gbs", "256"},
           // 3 dense then 58 MoE layers; 61 + 2 over PP 7 × VPP 3: chunks of 3, the two end ones of 2.
           {"--model", "deepseek-v3", "--cluster", "dgx-h100", "--num-gpus", "56", "--pp", "7", "--vpp", "3", "--ep", "8",
            "--gbs", "56", "--account-for-embedding-in-pipeline-split", "--account-for-loss-in-pipeline-split"},
       }) {
    const job_spec job = parse_job_args(args).job;
    const std::vector<stage_layout> stages = pipeline_layout(job);
    const stage_split split =
        split_layers(job.model.num_layers, job.parallel, job.training.framework,
                     job.parallel.num_layers_per_virtual_stage);
    std::int64_t total = 0;
    std::int64_t moe = 0;
    for (const stage_layout& s : stages) {
      EXPECT_EQ(s.num_layers, split.of(s.stage, job.parallel.pp)) << args[1];
      total += s.num_layers;
      moe += s.num_moe_layers();
    }
    EXPECT_EQ(total, job.model.num_layers) << args[1];
    EXPECT_EQ(moe, count_parameters(job.model).num_moe_layers) << args[1];
    EXPECT_TRUE(stages.front().has_embedding);
    EXPECT_TRUE(stages.back().has_output);
  }
}

TEST(ParallelLayout, ChunksSumToTheStagesAndAreTheStagesWithoutInterleaving) {
  // pipeline_chunks walks the model chunk by chunk (§2.2); by rank its chunks are pipeline_layout's stages,
  // and without interleaving each rank is one chunk, whatever the split rule.
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"--preset", "bloom-176b-production"},  // embedding slots, DeepSpeed's uneven split
           {"--model", "llama3.1-405b", "--cluster", "dgx-h100", "--num-gpus", "1024", "--tp", "8", "--pp", "16",
            "--gbs", "2048", "--account-for-embedding-in-pipeline-split", "--account-for-loss-in-pipeline-split"},
           {"--model", "deepseek-v3", "--cluster", "dgx-h100", "--num-gpus", "56", "--pp", "7", "--vpp", "3", "--ep", "8",
            "--gbs", "56", "--account-for-embedding-in-pipeline-split", "--account-for-loss-in-pipeline-split"},
       }) {
    const job_spec job = parse_job_args(args).job;
    const std::vector<stage_layout> stages = pipeline_layout(job);
    std::vector<chunk_layout> chunks;
    pipeline_chunks(job, chunks);
    ASSERT_EQ(chunks.size(), stages.size() * static_cast<std::size_t>(job.parallel.vpp)) << args[1];
    std::vector<std::int64_t> layers(stages.size(), 0);
    std::vector<layer_counts> kinds(stages.size(), layer_counts{});
    for (const chunk_layout& c : chunks) {
      layers[static_cast<std::size_t>(c.stage)] += c.num_layers;
      for (std::size_t k = 0; k < kNumLayerKinds; ++k) kinds[static_cast<std::size_t>(c.stage)][k] += c.kinds[k];
    }
    for (const stage_layout& s : stages) {
      EXPECT_EQ(layers[static_cast<std::size_t>(s.stage)], s.num_layers) << args[1] << " rank " << s.stage;
      EXPECT_EQ(kinds[static_cast<std::size_t>(s.stage)], s.kinds) << args[1] << " rank " << s.stage;
    }
    EXPECT_TRUE(chunks.front().has_embedding);
    EXPECT_TRUE(chunks.back().has_output);
  }
}

TEST(ParallelHoldings, MixtralExpertsDivideByEpAndTheRestDoesNot) {
  // Mixtral-8x7B, TP 2: a layer's attention, norms and router on every GPU, 8 experts / EP of them.
  const auto held = [](const char* ep) {
    const job_spec job = parse_job_args({"--model", "mixtral-8x7b", "--cluster", "dgx-h100", "--num-gpus", "64",
                                         "--tp", "2", "--ep", ep, "--gbs", "256"})
                             .job;
    return holdings_of(job, count_parameters(job.model, job.parallel.tp));
  };
  const rank_holdings ep1 = held("1");
  const rank_holdings ep8 = held("8");
  EXPECT_EQ(ep1.moe_layer.dense, ep8.moe_layer.dense);
  EXPECT_EQ(ep1.moe_layer.expert, 8 * ep8.moe_layer.expert);
  // One expert of Mixtral: 3 × 4096 × 14336 weights, half on each TP rank.
  EXPECT_EQ(ep8.moe_layer.expert, 3LL * 4096 * 14336 / 2);
  EXPECT_EQ(ep8.embedding, 32000LL * 4096 / 2);
}

TEST(ParallelPrecision, OneReadingOfEachRole) {
  training_config t;
  t.precision = dtype::bf16;
  t.accumulate_allreduce_grads_in_fp32 = true;  // Megatron forces it with bf16
  precision_roles r = roles_of(t);
  EXPECT_EQ(r.weights, dtype::bf16);
  EXPECT_EQ(r.activations, dtype::bf16);
  EXPECT_TRUE(r.master_weights);
  EXPECT_EQ(r.gradients, dtype::fp32);
  EXPECT_EQ(r.grad_comm, dtype::fp32);
  EXPECT_EQ(r.param_comm, dtype::bf16);
  t.framework = framework_kind::deepspeed;  // ZeRO-2 reduces in the model dtype
  t.zero_stage = 2;
  EXPECT_EQ(roles_of(t).grad_comm, dtype::bf16);
  EXPECT_EQ(roles_of(t).gradients, dtype::fp32);
  training_config f32;
  f32.precision = dtype::fp32;
  EXPECT_FALSE(roles_of(f32).master_weights);
  EXPECT_EQ(roles_of(f32).activations, dtype::fp32);
  // Before: memory read an fp8 `precision` as 2 bytes and communication as 1. FP8 GEMMs keep bf16
  // weights and activations; both read the roles.
  training_config f8;
  f8.precision = dtype::fp8;
  EXPECT_EQ(roles_of(f8).compute, dtype::fp8);
  EXPECT_EQ(roles_of(f8).activations, dtype::bf16);
  EXPECT_EQ(roles_of(f8).weights, dtype::bf16);
}

TEST(ParallelTraits, OneRowPerFrameworkWithItsRules) {
  for (const framework_kind k : {framework_kind::megatron, framework_kind::deepspeed, framework_kind::fsdp}) {
    EXPECT_EQ(traits_of(k).kind, k);
  }
  const framework_traits& megatron = traits_of(framework_kind::megatron);
  const framework_traits& deepspeed = traits_of(framework_kind::deepspeed);
  EXPECT_EQ(to_string(framework_kind::deepspeed), "deepspeed");
  // Megatron shards only the optimizer (distributed optimizer = ZeRO-1); DeepSpeed's pipeline engine
  // runs ZeRO 0-1; FSDP has no stage 1, and with a pipeline runs fully_shard under torch.distributed.pipelining.
  EXPECT_EQ(zero_stages_of(framework_kind::megatron, 1), (std::array<bool, 4>{true, true, false, false}));
  EXPECT_EQ(zero_stages_of(framework_kind::deepspeed, 1), (std::array<bool, 4>{true, true, true, true}));
  EXPECT_EQ(zero_stages_of(framework_kind::deepspeed, 2), (std::array<bool, 4>{true, true, false, false}));
  EXPECT_EQ(zero_stages_of(framework_kind::fsdp, 1), (std::array<bool, 4>{true, false, true, true}));
  EXPECT_EQ(zero_stages_of(framework_kind::fsdp, 2), (std::array<bool, 4>{false, false, false, true}));
  EXPECT_TRUE(find_optimizer_row(framework_kind::fsdp, 3, false, 2)->pipelined);
  EXPECT_FALSE(find_optimizer_row(framework_kind::fsdp, 3, false, 1)->pipelined);
  EXPECT_TRUE(megatron.interleaving && megatron.sequence_parallel);
  EXPECT_EQ(find_optimizer_row(framework_kind::megatron, 1, false, 1)->accumulation, grad_accumulation::in_gemm);
  EXPECT_TRUE(deepspeed.uneven_pipeline_split && deepspeed.tied_embedding_module);
  EXPECT_EQ(deepspeed.bucket_elements, 500'000'000);  // reduce_bucket_size (runtime/zero/config.py)
  EXPECT_EQ(megatron.bucket_elements, 0);             // one bucket without --overlap-grad-reduce
}

}  // namespace
}  // namespace trainplan
