// torchtitan jobs (issue 29): the TOML config of a launch line (or --torchtitan-config) with the line's
// --section.option overrides, as torchtitan reads them; and torchtitan's per-op selective checkpointing
// (issue 27), which its Llama configs run by default.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "args_test_support.h"
#include "test_support.h"
#include "trainplan/cli/args.h"
#include "trainplan/cli/cli.h"
#include "trainplan/core/base/error.h"
#include "trainplan/core/estimate/compute.h"
#include "trainplan/core/estimate/memory.h"
#include "trainplan/core/model/model.h"
#include "trainplan/core/search/search.h"

namespace trainplan {
namespace {

using ::testing::AllOf;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using namespace args_testing;  // NOLINT(google-build-using-namespace): the shared helpers

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

args_t run_train(const std::string& config, const args_t& overrides = {}, const args_t& own = {}) {
  args_t a = concat(concat({"--cluster", "dgx-h100"}, own),
                    {"--", "torchrun", "--nproc_per_node=8", "--rdzv_backend", "c10d", "-m", "torchtitan.train",
                     "--job.config_file", config});
  return concat(a, overrides);
}

std::string toml(const std::string& name, const std::string& body) {
  return write_temp(name, "[model]\nname = \"llama3\"\nflavor = \"8B\"\n\n[training]\nseq_len = 4096\n" + body);
}

// torchtitan's own Llama-3 8B config as run_train.sh launches it: the catalog model, FSDP fully sharded,
// op SAC, local batch 1 at 8,192 tokens on 8 GPUs.
TEST(TorchtitanConfig, ItsLlama3_8bConfigIsTheJob) {
  const parsed_job pj = parse(run_train(testing::data_path("launch/torchtitan/llama3_8b.toml")));
  EXPECT_EQ(count_parameters(pj.job.model, 1).total, count_parameters(find_model("llama3-8b").spec, 1).total);
  EXPECT_EQ(pj.job.training.framework, framework_kind::fsdp);
  EXPECT_EQ(pj.job.training.zero_stage, 3);
  EXPECT_EQ(pj.job.training.recompute, recompute_granularity::selective_op);
  EXPECT_EQ(pj.job.training.precision, dtype::bf16);
  EXPECT_EQ(pj.job.training.micro_batch_size, 1);
  EXPECT_EQ(pj.job.training.global_batch_size, 8);
  EXPECT_EQ(pj.job.model.seq_length, 8192);
  EXPECT_EQ(pj.job.num_gpus, 8);
  EXPECT_EQ(pj.job.parallel.tp, 1);
  EXPECT_THAT(pj.ignored_flags, Contains("llama3_8b.toml:metrics.*"));
  EXPECT_THAT(pj.ignored_flags, Contains("llama3_8b.toml:training.steps"));
  EXPECT_THAT(pj.derived_flags, Contains(StartsWith("torchtitan: llama3_8b.toml")));
  // The 70B config: TP 8 with sequence-parallel norms, full checkpointing, on 64 GPUs.
  const parsed_job big = parse(run_train(testing::data_path("launch/torchtitan/llama3_70b.toml"), {},
                                         {"--num-nodes", "8"}));
  EXPECT_EQ(count_parameters(big.job.model, 1).total, count_parameters(find_model("llama3-70b").spec, 1).total);
  EXPECT_EQ(big.job.parallel.tp, 8);
  EXPECT_TRUE(big.job.parallel.sequence_parallel);
  EXPECT_EQ(big.job.parallel.dp, 8);
  EXPECT_EQ(big.job.training.recompute, recompute_granularity::full);
  // Its Qwen3 32B config (torchtitan/models/qwen3/__init__.py qwen3_args "32B": Qwen/Qwen3-32B's shapes):
  // FSDP over all 8 GPUs, full checkpointing, local batch 2 at 4,096 tokens.
  const parsed_job qwen = parse(run_train(testing::data_path("launch/torchtitan/qwen3_32b.toml")));
  EXPECT_EQ(count_parameters(qwen.job.model, 1).total, 32762123264);
  EXPECT_EQ(qwen.job.training.framework, framework_kind::fsdp);
  EXPECT_EQ(qwen.job.training.recompute, recompute_granularity::full);
  EXPECT_EQ(qwen.job.training.micro_batch_size, 2);
  EXPECT_EQ(qwen.job.model.seq_length, 4096);
  // Its MoE flavours and its small tied-embedding ones are the catalog's too; its debug models are not.
  EXPECT_EQ(count_parameters(parse(run_train(toml("tt_qwen3_moe.toml", ""), {"--model.name", "qwen3", "--model.flavor",
                                                                                  "30B-A3B"}))
                                 .job.model,
                             1)
                .total,
            30532122624);
  const parsed_job small = parse(run_train(toml("tt_qwen3_small.toml", ""), {"--model.name", "qwen3", "--model.flavor", "0.6B"}));
  EXPECT_EQ(count_parameters(small.job.model, 1).total, 596049920);
  EXPECT_TRUE(small.job.model.tie_embeddings);
  EXPECT_THAT(error_of(run_train(toml("tt_qwen3_debug.toml", ""), {"--model.name", "qwen3", "--model.flavor",
                                                                  "debugmodel"})),
              HasSubstr("model.flavor \"debugmodel\" is not one trainplan knows"));
  // Llama 4 Scout as torchtitan builds "17bx16e": the catalog's parameters (16 routed experts and a shared
  // one of 8,192, auto_scale_hidden_dim), but causal attention over the whole sequence on every layer (no
  // "_irope": every_n_layers_nope None), where Meta's checkpoint attends in chunks on three of four.
  const parsed_job scout = parse(run_train(testing::data_path("launch/torchtitan/llama4_17bx16e.toml"), {},
                                           {"--num-nodes", "8"}));
  EXPECT_EQ(count_parameters(scout.job.model, 1).total, 107769861120);
  EXPECT_EQ(scout.job.model.window_skip_freq, 1);
  EXPECT_EQ(scout.job.parallel.tp, 8);
  EXPECT_EQ(scout.job.training.recompute, recompute_granularity::full);
  EXPECT_THAT(error_of(run_train(toml("tt_llama4_irope.toml", ""), {"--model.name", "llama4", "--model.flavor",
                                                                   "17bx16e_irope"})),
              HasSubstr("model.flavor \"17bx16e_irope\" is not one trainplan knows"));
  // torchtitan's Qwen3 has no pipeline split (get_train_spec: pipelining_fn=None).
  EXPECT_THAT(error_of(run_train(testing::data_path("launch/torchtitan/qwen3_32b.toml"),
                                 {"--parallelism.pipeline_parallel_degree", "2"})),
              HasSubstr("torchtitan's qwen3 has no pipeline split"));
}

// With a pipeline (torchtitan's 3-D layouts): fully_shard under torch.distributed.pipelining, the
// pipelined ZeRO-3 row (§3.1), torchtitan's default split (generate_llm_fqn_per_model_part, the remainder
// to the first stages) under 1F1B or Interleaved1F1B, each local batch split into micro-batches of
// pipeline_parallel_microbatch_size; its other splits and schedules are refused by key, and at PP 1 the
// pipeline's keys change nothing.
TEST(TorchtitanConfig, APipelineRunsFsdp2UnderPipeliningWithTorchtitansSplit) {
  const std::string config = testing::data_path("launch/torchtitan/llama3_70b.toml");
  const args_t pp2 = {"--parallelism.pipeline_parallel_degree", "2", "--training.local_batch_size", "8"};
  const parsed_job pj = parse(run_train(config, pp2, {"--num-nodes", "16"}));
  EXPECT_EQ(pj.job.parallel.pp, 2);
  EXPECT_EQ(pj.job.parallel.tp, 8);
  EXPECT_EQ(pj.job.training.zero_stage, 3);
  EXPECT_TRUE(pj.job.resolved.row().pipelined);
  EXPECT_EQ(pj.job.training.micro_batch_size, 1);  // pipeline_parallel_microbatch_size's default
  EXPECT_EQ(pj.job.num_microbatches(), 8);          // the local batch of 8 in micro-batches of 1
  EXPECT_EQ(pj.job.resolved.split_rule,
            "even, the embedding and the output each weighing a layer (torchtitan's generate_llm_fqn_per_model_part)");
  const memory_report mem = estimate_memory(pj.job);
  EXPECT_EQ(mem.stages.front().num_layers, 40);  // (80 + 2) / 2 = 41: the embedding and 40 layers
  EXPECT_EQ(mem.stages.back().num_layers, 40);
  // 80 + 2 over 4 stages leaves 2, which torchtitan gives to the first two stages: 21 effective layers
  // each (the embedding and 20 layers, then 21), then 20 and 19 with the output.
  auto layers_of = [](const parsed_job& j) {
    std::vector<std::int64_t> n;
    for (const stage_memory& s : estimate_memory(j.job).stages) n.push_back(s.num_layers);
    return n;
  };
  const parsed_job pp4 = parse(run_train(config, {"--parallelism.pipeline_parallel_degree", "4"}, {"--num-nodes", "16"}));
  EXPECT_EQ(layers_of(pp4), (std::vector<std::int64_t>{20, 21, 20, 19}));
  EXPECT_EQ(pp4.job.parallel.vpp, 1);
  // Interleaved1F1B: two stages a rank over 8 stages, 82 = 8 × 10 + 2: stage i on rank i mod 4.
  const parsed_job il = parse(run_train(config, {"--parallelism.pipeline_parallel_degree", "4",
                                                 "--parallelism.pipeline_parallel_schedule", "Interleaved1F1B"},
                                        {"--num-nodes", "16"}));
  EXPECT_EQ(il.job.parallel.vpp, 2);
  EXPECT_EQ(layers_of(il), (std::vector<std::int64_t>{20, 21, 20, 19}));
  EXPECT_THAT(error_of(run_train(config, concat(pp2, {"--parallelism.pipeline_parallel_schedule", "ZBVZeroBubble"}),
                                 {"--num-nodes", "16"})),
              HasSubstr("parallelism.pipeline_parallel_schedule"));
  EXPECT_THAT(error_of(run_train(config, concat(pp2, {"--parallelism.pipeline_parallel_microbatch_size", "3"}),
                                 {"--num-nodes", "16"})),
              HasSubstr("the local batch (8) must be a multiple of the pipeline's micro-batch size (3)"));
  EXPECT_THAT(error_of(run_train(config, concat(pp2, {"--parallelism.fsdp_reshard_after_forward", "always"}),
                                 {"--num-nodes", "16"})),
              HasSubstr("would gather every unit again for each micro-batch"));
  EXPECT_THAT(error_of(run_train(config, concat(pp2, {"--parallelism.pipeline_parallel_layers_per_stage", "10"}),
                                 {"--num-nodes", "16"})),
              HasSubstr("would set the pipeline's stages or micro-batches itself"));
  const parsed_job flat =
      parse(run_train(config, {"--parallelism.pipeline_parallel_schedule", "GPipe"}, {"--num-nodes", "8"}));
  EXPECT_EQ(flat.job.parallel.pp, 1);
  EXPECT_THAT(flat.ignored_flags, Contains(HasSubstr("parallelism.pipeline_parallel_schedule")));
}

// §3.5.1: the December 2024 schema's pipeline key ran on the PyTorch of its day, whose every stage kept
// each micro-batch's output until the step ended; the later schema's spelling keeps the default (none:
// torchtitan's return_outputs=False).
TEST(TorchtitanConfig, TheDecember2024PipelineKeepsEveryStagesOutputs) {
  using oc = training_config::output_cache;
  const args_t old_pp = {"--experimental.pipeline_parallel_degree", "2", "--training.batch_size", "8"};
  const parsed_job old = parse(run_train(testing::data_path("launch/torchtitan/llama3_70b-2024-12.toml"), old_pp,
                                         {"--num-nodes", "16"}));
  EXPECT_EQ(old.job.parallel.pp, 2);
  EXPECT_EQ(old.job.training.pipelining_output_cache, oc::every_stage);
  EXPECT_THAT(old.derived_flags, Contains(HasSubstr("--pipelining-output-cache every-stage")));
  const parsed_job now = parse(run_train(testing::data_path("launch/torchtitan/llama3_70b.toml"),
                                         {"--parallelism.pipeline_parallel_degree", "2", "--training.local_batch_size", "8"},
                                         {"--num-nodes", "16"}));
  EXPECT_EQ(now.job.training.pipelining_output_cache, oc::none);
}

// §5.3: the December 2024 schema's norm_type: rmsnorm is torchtitan's eager RMSNorm (the framework's row),
// fused_rmsnorm its Triton kernel, one kernel.
TEST(TorchtitanConfig, ItsNormTypeChoosesTheNormsKernels) {
  const std::string config = testing::data_path("launch/torchtitan/llama3_8b-2024-12.toml");
  EXPECT_EQ(parse(run_train(config)).job.training.rmsnorm_kernel, training_config::norm_kernel::framework_default);
  EXPECT_EQ(parse(run_train(config, {"--model.norm_type", "fused_rmsnorm"})).job.training.rmsnorm_kernel,
            training_config::norm_kernel::fused);
}

TEST(TorchtitanConfig, TheLinesOverridesThenTheUsersFlagsWin) {
  const std::string config = testing::data_path("launch/torchtitan/llama3_8b.toml");
  const parsed_job over = parse(run_train(config, {"--training.local_batch_size", "2", "--parallelism.fsdp_reshard_after_forward=never"}));
  EXPECT_EQ(over.job.training.micro_batch_size, 2);
  EXPECT_EQ(over.job.training.zero_stage, 2);
  EXPECT_THAT(over.overridden_flags,
              Contains("training.local_batch_size 1 (torchtitan config) → --training.local_batch_size 2 (launch line)"));
  const parsed_job user = parse(run_train(config, {"--training.local_batch_size", "2"}, {"--mbs", "4"}));
  EXPECT_EQ(user.job.training.micro_batch_size, 4);
  EXPECT_THAT(user.overridden_flags, Contains("--training.local_batch_size 2 (launch line) → --mbs 4 (your flags)"));
  // The December 2024 schema's spelling of the same key (the benchmark's Table 1 launch).
  const parsed_job old = parse(run_train(testing::data_path("launch/torchtitan/llama3_8b-2024-12.toml"),
                                         {"--training.batch_size", "2"}));
  EXPECT_EQ(old.job.training.micro_batch_size, 2);
  EXPECT_EQ(old.job.training.recompute, recompute_granularity::selective_op);
  // Without a file: torchtitan's defaults, with the line's options.
  const parsed_job bare = parse({"--cluster", "dgx-h100", "--", "torchrun", "--nproc_per_node", "8", "-m",
                                 "torchtitan.train", "--model.flavor", "8B"});
  EXPECT_EQ(bare.job.training.micro_batch_size, 8);
  EXPECT_EQ(bare.job.model.seq_length, 2048);
}

// activation_checkpoint.py _apply_layer_sac: "selective" with a number k checkpoints every k-th block,
// floor(L/k) of them: Megatron's block method with that many layers.
TEST(TorchtitanConfig, LayerCheckpointingIsTheBlockMethod) {
  const std::string every2 = toml("tt_every2.toml", "\n[activation_checkpoint]\nmode = \"selective\"\nselective_ac_option = \"3\"\n");
  const parsed_job pj = parse(run_train(every2));
  EXPECT_EQ(pj.job.training.recompute, recompute_granularity::full);
  EXPECT_EQ(pj.job.training.recompute_method_, recompute_method::block);
  EXPECT_EQ(pj.job.training.recompute_num_layers, 10);  // 32 / 3
  EXPECT_THAT(pj.derived_flags, Contains(HasSubstr("--recompute-method block --recompute-num-layers 10")));
  const parsed_job flags = parse({"--model", "llama3-8b", "--cluster", "dgx-h100", "--num-gpus", "8", "--framework",
                                  "fsdp", "--zero-stage", "3", "--mbs", "8", "--seq-length", "4096",
                                  "--recompute-granularity", "full", "--recompute-method", "block",
                                  "--recompute-num-layers", "10"});
  EXPECT_DOUBLE_EQ(estimate_memory(pj.job).peak_reserved_bytes, estimate_memory(flags.job).peak_reserved_bytes);
  // Its default, "2": every second block.
  EXPECT_EQ(parse(run_train(toml("tt_default_ac.toml", ""))).job.training.recompute_num_layers, 16);
  const parsed_job every1 = parse(run_train(toml("tt_every1.toml", "\n[activation_checkpoint]\nselective_ac_option = \"1\"\n")));
  EXPECT_EQ(every1.job.training.recompute_method_, recompute_method::uniform);
  EXPECT_EQ(every1.job.training.recompute_num_layers, 1);
}

TEST(TorchtitanConfig, DegreesAndShardingAsParallelDimsReadsThem) {
  const parsed_job ddp = parse(run_train(toml("tt_ddp.toml", "\n[parallelism]\ndata_parallel_shard_degree = 1\n"
                                                               "data_parallel_replicate_degree = 8\n")));
  EXPECT_EQ(ddp.job.training.zero_stage, 0);
  EXPECT_EQ(ddp.job.parallel.dp, 8);
  const parsed_job hsdp = parse(run_train(toml("tt_hsdp.toml", "\n[parallelism]\ndata_parallel_replicate_degree = 2\n"),
                                          {}, {"--num-nodes", "2"}));
  EXPECT_EQ(hsdp.job.training.zero_stage, 3);
  EXPECT_EQ(hsdp.job.parallel.dp, 16);
  EXPECT_EQ(hsdp.job.resolved.dp_shards, 8);
  const parsed_job tp = parse(run_train(toml("tt_tp.toml", "\n[parallelism]\ntensor_parallel_degree = 2\n"
                                                             "[activation_checkpoint]\nmode = \"full\"\n")));
  EXPECT_EQ(tp.job.parallel.tp, 2);
  EXPECT_TRUE(tp.job.parallel.sequence_parallel);
  EXPECT_EQ(tp.job.parallel.dp, 4);
  // CP's load balancer: head-tail (the default) is §4.2.2's split; another is refused at CP > 1.
  const std::string cp2 = toml("tt_cp.toml", "\n[parallelism]\ncontext_parallel_degree = 2\n");
  EXPECT_EQ(parse(run_train(cp2)).job.parallel.cp, 2);
  EXPECT_THAT(error_of(run_train(cp2, {"--parallelism.context_parallel_load_balancer", "None"})),
              HasSubstr("would leave causal attention unbalanced over the CP ranks"));
  EXPECT_THAT(error_of(run_train(cp2, {"--parallelism.context_parallel_load_balancer", "ptrr"})),
              HasSubstr("is FlexAttention's balancer"));
  EXPECT_THAT(parse(run_train(toml("tt_cp1.toml", ""), {"--parallelism.context_parallel_load_balancer", "ptrr"})).ignored_flags,
              Contains("--parallelism.context_parallel_load_balancer (CP 1)"));
  // parallel_dims.py's check, naming the key that broke it.
  EXPECT_THAT(error_of(run_train(toml("tt_shard.toml", "\n[parallelism]\ndata_parallel_shard_degree = 4\n"))),
              StartsWith("parallelism.data_parallel_shard_degree 4 × TP×PP×CP 1 does not make the world size 8"));
}

TEST(TorchtitanConfig, Float8IsTorchaoTensorwise) {
  const parsed_job f8 = parse(run_train(toml("tt_f8.toml", ""), {"--model.converters", "float8",
                                                                 "--quantize.linear.float8.filter_fqns", "output"}));
  EXPECT_EQ(f8.job.training.fp8, fp8_format::hybrid);
  EXPECT_EQ(f8.job.training.fp8_scaling, fp8_recipe::tensorwise);
  const std::string gathered = write_temp("tt_f8g.toml", "[model]\nflavor = \"8B\"\nconverters = [\"quantize.linear.float8\"]\n"
                                                          "[quantize.linear.float8]\nenable_fsdp_float8_all_gather = true\n"
                                                          "filter_fqns = [\"output\"]\n");
  EXPECT_TRUE(parse(run_train(gathered)).job.training.fp8_param_gather);
  const std::string rowwise = write_temp("tt_rowwise.toml", "[model]\nflavor = \"8B\"\nconverters = [\"float8\"]\n"
                                                             "[float8]\nrecipe_name = \"rowwise\"\nfilter_fqns = [\"output\"]\n");
  EXPECT_THAT(error_of(run_train(rowwise)),
              HasSubstr("tt_rowwise.toml:5: float8.recipe_name: torchao's per-row scales are not modelled"));
  // Trainy's June 2025 invocation (torchtitan benchmarks/llama3-8b_h200_202506_trainy-whitefiber.md): the
  // weight's FP8 recompute in the backward is what trainplan models; false matters only without checkpointing.
  const std::vector<std::string> trainy = {"--model.converters", "quantize.linear.float8",
                                           "--quantize.linear.float8.enable_fsdp_float8_all_gather",
                                           "--quantize.linear.float8.precompute_float8_dynamic_scale_for_fsdp",
                                           "--quantize.linear.float8.force_recompute_fp8_weight_in_bwd",
                                           "--compile.enable"};
  const parsed_job tr = parse(run_train(testing::data_path("launch/torchtitan/llama3_8b.toml"), trainy));
  EXPECT_TRUE(tr.job.training.fp8_param_gather && tr.job.training.torch_compile && tr.job.training.torch_compile_loss);
  // §4.2.4: the precomputed scales, modelled with the float8 all-gather; without it torchtitan ignores them.
  EXPECT_TRUE(tr.job.training.fp8_precompute_scale);
  const parsed_job alone = parse(run_train(gathered, {"--quantize.linear.float8.enable_fsdp_float8_all_gather", "false",
                                                      "--quantize.linear.float8.precompute_float8_dynamic_scale_for_fsdp"}));
  EXPECT_FALSE(alone.job.training.fp8_precompute_scale);
  EXPECT_THAT(alone.ignored_flags, Contains("--quantize.linear.float8.precompute_float8_dynamic_scale_for_fsdp (without "
                                            "enable_fsdp_float8_all_gather)"));
  const std::string kept = write_temp("tt_f8keep.toml", "[model]\nflavor = \"8B\"\nconverters = [\"float8\"]\n"
                                                         "[float8]\nfilter_fqns = [\"output\"]\n"
                                                         "force_recompute_fp8_weight_in_bwd = false\n"
                                                         "[activation_checkpoint]\nmode = \"none\"\n");
  EXPECT_THAT(error_of(run_train(kept)),
              HasSubstr("tt_f8keep.toml:6: float8.force_recompute_fp8_weight_in_bwd: false with "
                        "activation_checkpoint.mode \"none\" keeps every layer's gathered FP8 weight"));
  EXPECT_EQ(error_of(run_train(kept, {"--activation_checkpoint.mode", "full"})), "");
}

// §5.1.3: which linears torchao converts. The December 2024 converter left the output layer out itself;
// from a6524d8 (2025-04-07) filter_fqns decides, default [] (the output then runs float8, not modelled).
// "output" and "router.gate" are what trainplan prices; anything else is refused by key and line.
TEST(TorchtitanConfig, Float8FilterFqnsMustLeaveOutWhatTrainplanPricesInBf16) {
  auto with = [](const char* name, const std::string& float8) {
    return write_temp(name, "[model]\nflavor = \"8B\"\nconverters = [\"float8\"]\n[quantize.linear.float8]\n" + float8);
  };
  EXPECT_EQ(error_of(run_train(with("tt_ff_ok.toml", "filter_fqns = [\"output\", \"router.gate\"]\n"))), "");
  EXPECT_THAT(error_of(run_train(with("tt_ff_none.toml", "enable_fsdp_float8_all_gather = false\n"))),
              HasSubstr("tt_ff_none.toml:3: model.converters: float8 without quantize.linear.float8.filter_fqns converts "
                        "the output layer too"));
  EXPECT_THAT(error_of(run_train(with("tt_ff_empty.toml", "filter_fqns = []\n"))),
              HasSubstr("tt_ff_empty.toml:5: quantize.linear.float8.filter_fqns: without \"output\" the output layer runs "
                        "float8"));
  EXPECT_THAT(error_of(run_train(with("tt_ff_wq.toml", "filter_fqns = [\"attention.wq\", \"output\"]\n"))),
              HasSubstr("tt_ff_wq.toml:5: quantize.linear.float8.filter_fqns: 'attention.wq' kept out of float8 is not "
                        "modelled"));
  // 2025's float8 rowwise MoE prototype converts the experts' grouped GEMMs: refused when it names any.
  EXPECT_THAT(error_of(run_train(with("tt_ff_moe.toml", "filter_fqns = [\"output\"]\nmoe_fqns_prototype = [\"experts\"]\n"))),
              HasSubstr("tt_ff_moe.toml:6: quantize.linear.float8.moe_fqns_prototype: would change the routed experts' "
                        "grouped GEMMs"));
  EXPECT_EQ(error_of(run_train(with("tt_ff_moe0.toml", "filter_fqns = [\"output\"]\nmoe_fqns_prototype = []\n"))), "");
  // The December 2024 schema: [float8] enable_float8_linear, the output left out by the converter itself.
  EXPECT_EQ(error_of(run_train(testing::data_path("launch/torchtitan/llama3_8b-2024-12.toml"),
                               {"--float8.enable_float8_linear"})), "");
}

// §3.6, §5.3: torch.compile of each block (components "model") is --torch-compile, of the loss ("loss")
// --torch-compile-loss; torchtitan's default components compile both; another name is refused by key and line.
TEST(TorchtitanConfig, CompileIsTheBlocksAndTheLossAsComponentsName) {
  const std::string blocks = toml("tt_compile_model.toml", "\n[compile]\nenable = true\ncomponents = [\"model\"]\n");
  const parsed_job pj = parse(run_train(blocks));
  EXPECT_TRUE(pj.job.training.torch_compile);
  EXPECT_FALSE(pj.job.training.torch_compile_loss);
  EXPECT_TRUE(pj.job.training.bias_swiglu_fusion);  // Inductor's silu · mul
  EXPECT_FALSE(parse(run_train(blocks, {"--compile.enable", "false"})).job.training.torch_compile);
  const std::string defaults = toml("tt_compile.toml", "\n[compile]\nenable = true\n");
  const parsed_job both = parse(run_train(defaults));
  EXPECT_TRUE(both.job.training.torch_compile);
  EXPECT_TRUE(both.job.training.torch_compile_loss);
  const parsed_job loss = parse(run_train(defaults, {"--compile.components", "loss"}));
  EXPECT_FALSE(loss.job.training.torch_compile);
  EXPECT_TRUE(loss.job.training.torch_compile_loss);
  EXPECT_FALSE(loss.job.training.bias_swiglu_fusion);  // the blocks stay eager
  EXPECT_THAT(error_of(run_train(defaults, {"--compile.components", "optimizer"})),
              HasSubstr("launch line: --compile.components optimizer: names 'optimizer', which torchtitan does not "
                        "compile"));
  // Async TP (parallelism.enable_async_tensor_parallel) under the compiled blocks at TP > 1; at TP 1
  // torchtitan's apply_tp never runs, so it changes nothing and is listed.
  const parsed_job async = parse(run_train(blocks, {"--parallelism.tensor_parallel_degree", "2",
                                                    "--parallelism.enable_async_tensor_parallel"}));
  EXPECT_TRUE(async.job.training.async_tp);
  EXPECT_EQ(async.job.parallel.tp, 2);
  const parsed_job async1 = parse(run_train(blocks, {"--parallelism.enable_async_tensor_parallel"}));
  EXPECT_FALSE(async1.job.training.async_tp);
  EXPECT_THAT(async1.ignored_flags, Contains("--parallelism.enable_async_tensor_parallel (TP 1)"));
  const parsed_job off = parse(run_train(defaults, {"--compile.enable", "false"}));
  EXPECT_FALSE(off.job.training.torch_compile || off.job.training.torch_compile_loss);
  // The December 2024 schema's switch compiled the blocks alone (torchtitan e8977b0 turned the loss's off).
  const parsed_job dec = parse(run_train(toml("tt_compile_2024.toml", "compile = true\n")));
  EXPECT_TRUE(dec.job.training.torch_compile);
  EXPECT_FALSE(dec.job.training.torch_compile_loss);
  EXPECT_THAT(dec.derived_flags, Contains(HasSubstr("training.compile read as the blocks alone")));
  // The same switch on the launch line (read as the later compile.enable until 2026-12-02: the loss too).
  const parsed_job dec_line = parse(run_train(testing::data_path("launch/torchtitan/llama3_8b-2024-12.toml"),
                                              {"--training.compile"}));
  EXPECT_TRUE(dec_line.job.training.torch_compile);
  EXPECT_FALSE(dec_line.job.training.torch_compile_loss);
}

TEST(TorchtitanConfig, WhatItDoesNotModelIsRefusedByKeyAndLine) {
  const std::string autograd = toml("tt_cautograd.toml", "\n[parallelism]\nenable_compiled_autograd = true\n");
  EXPECT_THAT(error_of(run_train(autograd)),
              AllOf(HasSubstr("tt_cautograd.toml:9: parallelism.enable_compiled_autograd: would change the backward's"),
                    HasSubstr("`--parallelism.enable_compiled_autograd false` on the launch line plans the job")));
  EXPECT_EQ(error_of(run_train(autograd, {"--parallelism.enable_compiled_autograd", "false"})), "");
  EXPECT_THAT(error_of(run_train(toml("tt_unknown.toml", "fancy = 3\n"))),
              HasSubstr("tt_unknown.toml:7: training.fancy: not a torchtitan setting trainplan knows"));
  EXPECT_THAT(error_of(run_train(write_temp("tt_bad.toml", "[model]\nflavor = \"8B\n"))),
              HasSubstr("tt_bad.toml:2: not valid TOML"));
  EXPECT_THAT(error_of(run_train(testing::data_path("launch/torchtitan/llama3_8b.toml"), {"--training.fancy", "1"})),
              HasSubstr("launch line: --training.fancy: not a torchtitan option trainplan knows"));
  EXPECT_THAT(error_of(run_train(testing::data_path("launch/torchtitan/llama3_8b.toml"), {"--training.seq_len", "lots"})),
              HasSubstr("launch line: --training.seq_len lots: expected a whole number"));
  EXPECT_THAT(error_of(run_train("/nonexistent/llama3.toml")), StartsWith("--job.config_file /nonexistent/llama3.toml: "));
  // A flavour not in the catalog: the user names the model.
  const std::string debug = write_temp("tt_debug.toml", "[model]\nflavor = \"debugmodel\"\n");
  EXPECT_THAT(error_of(run_train(debug)), HasSubstr("give the model with --model NAME|FILE before '--'"));
  EXPECT_EQ(parse(run_train(debug, {}, {"--model", "llama2-7b"})).job.model.num_layers, 32);
}

// §3.4.4: what op SAC keeps of a Llama-3-8B block per token: its input, the attention output and fp32
// log-sum-exp, and the outputs of wq, wv, w1 and w2 (the 1st, 3rd, 5th and 7th matmul), in bf16:
// 2·(4096 + 4096 + 4096 + 1024 + 14336 + 4096) + 4·32 = 63,616 bytes, under float8 too (the policy sees
// torchao's aten.mm, and its output is bf16). A compiled block saves what its backward reads: not w2's
// output (the residual add's input), 2·4096 less.
TEST(TorchtitanOpCheckpointing, KeepsEverySecondMatmulAndTheAttention) {
  const args_t job = {"--model", "llama3-8b", "--cluster", "dgx-h100", "--num-gpus", "8", "--framework", "fsdp",
                      "--zero-stage", "3", "--mbs", "2", "--seq-length", "8192", "--recompute-granularity", "op"};
  const memory_report r = estimate_memory(parse(job).job);
  const double tokens = 2 * 8192;
  EXPECT_DOUBLE_EQ(r.stages[0].activations_per_microbatch_bytes, 32 * 63616 * tokens);
  const memory_report f8 = estimate_memory(parse(concat(job, {"--fp8-format", "hybrid", "--fp8-recipe", "tensorwise"})).job);
  EXPECT_DOUBLE_EQ(f8.stages[0].activations_per_microbatch_bytes, 32 * 63616 * tokens);
  const memory_report compiled = estimate_memory(parse(concat(job, {"--torch-compile"})).job);
  EXPECT_DOUBLE_EQ(compiled.stages[0].activations_per_microbatch_bytes, 32 * (63616 - 2 * 4096) * tokens);
}

// torchtitan's benchmark (benchmarks/llama3_h100_202412_torchtitan.md, Tables 1 and 3: Llama 3.1 8B, FSDP,
// local batch 2 at 8,192 tokens, op SAC, no compile): 82.4 GiB on 8 GPUs and 67.0 on 128. Predicted 74.7
// and 59.5 GiB reserved (-9% and -11%); Megatron's attention-core "selective" gave 129.7 (+57%).
TEST(TorchtitanOpCheckpointing, MemoryAgainstTorchtitansBenchmark) {
  const std::string config = testing::data_path("launch/torchtitan/llama3_8b-2024-12.toml");
  for (const auto& [nodes, measured_gib] : {std::pair{"1", 82.4}, std::pair{"16", 67.0}}) {
    const parsed_job pj = parse(run_train(config, {"--training.batch_size", "2"}, {"--num-nodes", nodes}));
    const double predicted_gib = estimate_memory(pj.job).peak_reserved_bytes / kGiB;
    EXPECT_NEAR(predicted_gib / measured_gib, 1.0, 0.12) << nodes << " nodes: " << predicted_gib << " GiB";
  }
}

// §5.4: op SAC recomputes the memory-bound kernels and the matmuls it did not keep (wk, wo, w3: 19,456 of
// 53,248 parts of a Llama-3-8B block's linear FLOPs), under float8 too; never w2, whose output no backward
// reads (the recomputation stops once the saved tensors are rebuilt).
TEST(TorchtitanOpCheckpointing, RecomputesTheMatmulsItDidNotKeep) {
  const args_t job = {"--model", "llama3-8b", "--cluster", "dgx-h100", "--num-gpus", "8", "--framework", "fsdp",
                      "--zero-stage", "3", "--mbs", "2", "--seq-length", "8192", "--recompute-granularity", "op"};
  const compute_report c = estimate_compute(parse(job).job);
  const unit_time& layer = c.layers[static_cast<std::size_t>(layer_kind::dense)];
  const double share = 19456.0 / 53248.0;
  EXPECT_NEAR(c.stages[0].recompute_s, 32 * (layer.forward.memory_s + share * layer.forward.gemm_s), 1e-12);
  const compute_report f8 = estimate_compute(parse(concat(job, {"--fp8-format", "hybrid"})).job);
  const unit_time& f8_layer = f8.layers[static_cast<std::size_t>(layer_kind::dense)];
  EXPECT_NEAR(f8.stages[0].recompute_s, 32 * (f8_layer.forward.memory_s + share * f8_layer.forward.gemm_s), 1e-12);
}

// A search of an FSDP job tries op SAC beside the other recomputations; elsewhere asking for it is an error.
TEST(TorchtitanOpCheckpointing, TheSearchTriesItForFsdp) {
  const search_request req = parse_search_request({"--model", "llama3-8b", "--cluster", "dgx-h100", "--num-nodes", "1",
                                                   "--framework", "fsdp", "--gbs", "16", "--seq-length", "8192",
                                                   "--threads", "1", "--exhaustive"});
  const search_result r = run_search(req.base.job, req.space);
  const auto op = std::find_if(r.candidates.begin(), r.candidates.end(),
                               [](const search_candidate& c) { return c.recompute == recompute_choice::op; });
  ASSERT_NE(op, r.candidates.end());
  EXPECT_EQ(op->tp, 1);
  try {
    const search_request megatron = parse_search_request({"--model", "llama3-8b", "--cluster", "dgx-h100", "--num-nodes",
                                                          "1", "--gbs", "16", "--recompute", "op"});
    run_search(megatron.base.job, megatron.space);
    ADD_FAILURE() << "no error";
  } catch (const input_error& e) {
    EXPECT_THAT(std::string(e.what()), HasSubstr("op is torchtitan's per-op checkpointing"));
  }
}

TEST(TorchtitanOpCheckpointing, ModelledWhereItsMatmulOrderIsKnown) {
  const args_t base = {"--model", "llama3-8b", "--num-gpus", "8", "--recompute-granularity", "op"};
  EXPECT_THAT(error_of(base), HasSubstr("--recompute-granularity op is torchtitan's, modelled with --framework fsdp"));
  EXPECT_THAT(error_of(concat(base, {"--framework", "fsdp", "--zero-stage", "3", "--tp", "2"})),
              HasSubstr("--recompute-granularity op is modelled at TP 1"));
  EXPECT_THAT(error_of({"--model", "mixtral-8x7b", "--num-gpus", "8", "--framework", "fsdp", "--zero-stage", "3",
                        "--recompute-granularity", "op"}),
              HasSubstr("not MoE, MLA or hybrid ones"));
}

}  // namespace
}  // namespace trainplan
