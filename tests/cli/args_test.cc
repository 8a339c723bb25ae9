// Job flags (issue 2 §4 "Parallel and training configuration" and "Bad input"): Megatron-LM's names and
// short aliases, --flag=value, --model with overrides, whole launch lines (torchrun, python -m
// torch.distributed.run, deepspeed) and presets. Every bad-input rule with its message is in
// tests/cli/args_bad_input_test.cc.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "trainplan/cli/cli.h"
#include "trainplan/cli/args.h"
#include "trainplan/core/estimate/comm.h"
#include "trainplan/core/base/error.h"
#include "trainplan/core/estimate/memory.h"
#include "trainplan/core/estimate/time.h"
#include "trainplan/core/model/model.h"
#include "args_test_support.h"

namespace trainplan {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using namespace args_testing;  // NOLINT(google-build-using-namespace): the shared helpers

/// Every field of two memory estimates is identical (same inputs must give bit-identical doubles).
void expect_same_memory(const memory_report& a, const memory_report& b) {
  ASSERT_EQ(a.stages.size(), b.stages.size());
  for (std::size_t i = 0; i < a.stages.size(); ++i) {
    const stage_memory& x = a.stages[i];
    const stage_memory& y = b.stages[i];
    SCOPED_TRACE("stage " + std::to_string(i));
    EXPECT_EQ(x.stage, y.stage);
    EXPECT_EQ(x.num_layers, y.num_layers);
    EXPECT_EQ(x.parameters, y.parameters);
    EXPECT_EQ(x.weights_bytes, y.weights_bytes);
    EXPECT_EQ(x.gradients_bytes, y.gradients_bytes);
    EXPECT_EQ(x.optimizer_bytes, y.optimizer_bytes);
    EXPECT_EQ(x.activations_bytes, y.activations_bytes);
    EXPECT_EQ(x.other_bytes, y.other_bytes);
    EXPECT_EQ(x.allocated_bytes, y.allocated_bytes);
    EXPECT_EQ(x.reserved_bytes, y.reserved_bytes);
    EXPECT_EQ(x.headroom_bytes, y.headroom_bytes);
    EXPECT_EQ(x.fits, y.fits);
    EXPECT_EQ(x.microbatches_in_flight, y.microbatches_in_flight);
    EXPECT_EQ(x.buffers_bytes, y.buffers_bytes);
    EXPECT_EQ(x.transient_bytes, y.transient_bytes);
    EXPECT_EQ(x.offloaded_bytes, y.offloaded_bytes);
  }
  EXPECT_EQ(a.peak_allocated_bytes, b.peak_allocated_bytes);
  EXPECT_EQ(a.peak_reserved_bytes, b.peak_reserved_bytes);
  EXPECT_EQ(a.peak_stage, b.peak_stage);
  EXPECT_EQ(a.capacity_bytes, b.capacity_bytes);
  EXPECT_EQ(a.fits, b.fits);
  EXPECT_EQ(a.full_activations_bytes, b.full_activations_bytes);
}

void expect_same_layout(const job_spec& a, const job_spec& b) {
  EXPECT_EQ(a.num_gpus, b.num_gpus);
  EXPECT_EQ(a.parallel.tp, b.parallel.tp);
  EXPECT_EQ(a.parallel.pp, b.parallel.pp);
  EXPECT_EQ(a.parallel.cp, b.parallel.cp);
  EXPECT_EQ(a.parallel.ep, b.parallel.ep);
  EXPECT_EQ(a.parallel.dp, b.parallel.dp);
  EXPECT_EQ(a.parallel.vpp, b.parallel.vpp);
  EXPECT_EQ(a.parallel.num_layers_per_virtual_stage, b.parallel.num_layers_per_virtual_stage);
  EXPECT_EQ(a.parallel.sequence_parallel, b.parallel.sequence_parallel);
  EXPECT_EQ(a.training.micro_batch_size, b.training.micro_batch_size);
  EXPECT_EQ(a.training.global_batch_size, b.training.global_batch_size);
  EXPECT_EQ(a.training.zero_stage, b.training.zero_stage);
  EXPECT_EQ(a.training.distributed_optimizer, b.training.distributed_optimizer);
  EXPECT_EQ(a.training.recompute, b.training.recompute);
  EXPECT_EQ(a.training.flash_attention, b.training.flash_attention);
  EXPECT_EQ(a.cluster.gpus_per_node, b.cluster.gpus_per_node);
  EXPECT_EQ(a.cluster.num_nodes, b.cluster.num_nodes);
  EXPECT_EQ(count_parameters(a.model, a.parallel.tp).total, count_parameters(b.model, b.parallel.tp).total);
}

// A Megatron model and layout as pretrain_gpt.py takes it: Llama-2-7B-like, 16 GPUs.
const args_t kMegatronModel = {"--num-layers", "32", "--hidden-size", "4096", "--ffn-hidden-size", "11008",
                               "--num-attention-heads", "32", "--seq-length", "4096",
                               "--max-position-embeddings", "4096", "--vocab-size", "32000", "--swiglu",
                               "--untie-embeddings-and-output-weights", "--position-embedding-type", "rope",
                               "--normalization", "RMSNorm", "--disable-bias-linear"};
const args_t kLongLayout = {"--tensor-model-parallel-size", "2", "--pipeline-model-parallel-size", "4",
                            "--num-layers-per-virtual-pipeline-stage", "4", "--micro-batch-size", "1",
                            "--global-batch-size", "64", "--sequence-parallel", "--bf16", "--use-flash-attn",
                            "--use-distributed-optimizer", "--recompute-granularity", "selective"};
const args_t kShortLayout = {"--tp", "2", "--pp", "4", "--vpp", "2", "--mbs", "1", "--gbs", "64", "--sp", "--bf16",
                             "--use-flash-attn", "--use-distributed-optimizer", "--recompute-granularity",
                             "selective"};
const args_t kSixteenGpus = {"--num-gpus", "16", "--gpus-per-node", "8"};

// ---- names, aliases, forms ---------------------------------------------------------------------------

TEST(ArgsFlags, ShortAliasesGiveTheSameJob) {
  const parsed_job a = parse(concat(concat(kMegatronModel, kLongLayout), kSixteenGpus));
  const parsed_job b = parse(concat(concat(kMegatronModel, kShortLayout), kSixteenGpus));
  expect_same_layout(a.job, b.job);
  EXPECT_EQ(a.job.parallel.tp, 2);
  EXPECT_EQ(a.job.parallel.pp, 4);
  EXPECT_EQ(a.job.parallel.dp, 2);
  EXPECT_EQ(a.job.parallel.vpp, 2);
  EXPECT_EQ(b.job.parallel.num_layers_per_virtual_stage, 4);  // --vpp 2 sets 32 / 4 / 2 layers per chunk
  expect_same_memory(estimate_memory(a.job), estimate_memory(b.job));
}

TEST(ArgsFlags, ContextAndExpertAliases) {
  const args_t base = {"--model", "mixtral-8x7b", "--num-gpus", "64", "--mbs", "1", "--bf16"};
  const parsed_job a = parse(concat(base, {"--tensor-model-parallel-size", "2", "--pipeline-model-parallel-size",
                                           "2", "--context-parallel-size", "2", "--expert-model-parallel-size", "4"}));
  const parsed_job b = parse(concat(base, {"--tp", "2", "--pp", "2", "--cp", "2", "--ep", "4"}));
  expect_same_layout(a.job, b.job);
  EXPECT_EQ(b.job.parallel.cp, 2);
  EXPECT_EQ(b.job.parallel.ep, 4);
  EXPECT_EQ(b.job.parallel.dp, 8);
  expect_same_memory(estimate_memory(a.job), estimate_memory(b.job));
}

TEST(ArgsFlags, EqualsFormMatchesSeparateValue) {
  const parsed_job a = parse({"--model", "llama2-13b", "--tp", "4", "--pp", "2", "--mbs", "2", "--gbs", "128",
                              "--num-gpus", "32", "--recompute-granularity", "full"});
  const parsed_job b = parse({"--model=llama2-13b", "--tp=4", "--pipeline-model-parallel-size=2",
                              "--micro-batch-size=2", "--gbs=128", "--num-gpus=32", "--recompute-granularity=full"});
  expect_same_layout(a.job, b.job);
  EXPECT_EQ(b.job.parallel.dp, 4);
  expect_same_memory(estimate_memory(a.job), estimate_memory(b.job));
}

TEST(ArgsFlags, UnderscoreSpellingIsAccepted) {
  const parsed_job a = parse({"--model", "llama2-7b", "--tensor_model_parallel_size", "2", "--num_gpus", "8"});
  EXPECT_EQ(a.job.parallel.tp, 2);
  EXPECT_EQ(a.job.parallel.dp, 4);
}

TEST(ArgsFlags, MegatronModelFlagsBuildTheModel) {
  const parsed_job pj = parse(concat(kMegatronModel, {"--num-gpus", "8"}));
  const model_spec& m = pj.job.model;
  EXPECT_EQ(m.name, "custom");
  EXPECT_EQ(m.num_layers, 32);
  EXPECT_EQ(m.kv_channels, 128);
  EXPECT_EQ(m.num_query_groups, 32);
  // Llama-2-7B's published count: vocabulary 32000 stays unpadded at TP 1 (32000 = 250 × 128).
  EXPECT_EQ(count_parameters(m, 1).total, 6'738'415'616);
}

TEST(ArgsFlags, GroupQueryAttention) {
  const parsed_job pj = parse(concat(kMegatronModel, {"--group-query-attention", "--num-query-groups", "8",
                                                      "--num-gpus", "8"}));
  EXPECT_EQ(pj.job.model.num_query_groups, 8);
  EXPECT_EQ(pj.job.model.k_width(), 8 * 128);
}

TEST(ArgsFlags, DefaultsWhenOnlyAModelIsGiven) {
  const parsed_job pj = parse({"--model", "llama2-7b"});
  // Cluster dgx-h100, whole cluster as world; TP = PP = CP = 1.
  EXPECT_EQ(pj.job.cluster.name, "dgx-h100");
  EXPECT_EQ(pj.job.parallel.tp, 1);
  EXPECT_EQ(pj.job.parallel.pp, 1);
  EXPECT_EQ(pj.job.parallel.dp, pj.job.num_gpus);
  EXPECT_EQ(pj.job.training.micro_batch_size, 1);
  EXPECT_EQ(pj.job.training.global_batch_size, pj.job.parallel.dp);
  EXPECT_TRUE(pj.ignored_flags.empty());
  EXPECT_FALSE(pj.from_launch_line);
}

TEST(ArgsFlags, DpSetsTheWorldSize) {
  const parsed_job pj = parse({"--model", "llama2-7b", "--tp", "2", "--pp", "2", "--dp", "3"});
  EXPECT_EQ(pj.job.num_gpus, 12);
  EXPECT_EQ(pj.job.parallel.dp, 3);
}

TEST(ArgsFlags, NumNodesTimesGpusPerNode) {
  const parsed_job pj = parse({"--model", "llama2-7b", "--cluster", "dgx-a100", "--num-nodes", "3", "--tp", "8"});
  EXPECT_EQ(pj.job.num_gpus, 24);
  EXPECT_EQ(pj.job.parallel.dp, 3);
  EXPECT_EQ(pj.job.cluster.num_nodes, 3);
}

// ---- --model with overrides ------------------------------------------------------------------------

TEST(ArgsModelOverrides, HiddenSizeReDerivesFfnAndHeadDim) {
  const parsed_job pj = parse({"--model", "gpt3-175b", "--hidden-size", "4096", "--num-attention-heads", "32",
                               "--num-gpus", "8"});
  const model_spec& m = pj.job.model;
  EXPECT_EQ(m.hidden_size, 4096);
  EXPECT_EQ(m.ffn_hidden_size, 16384);  // 4h, re-derived from the new h
  EXPECT_EQ(m.kv_channels, 128);        // h / a, re-derived
  EXPECT_EQ(m.num_query_groups, 32);    // MHA follows the new head count
  EXPECT_EQ(m.num_layers, 96);          // untouched fields stay
}

TEST(ArgsModelOverrides, HiddenSizeAloneKeepsTheHeadsAndMustDivide) {
  // gpt3-175b has 96 heads; 4096 / 96 is not whole, so Megatron's h/a rule fails, with the flags named.
  EXPECT_THAT(error_of({"--model", "gpt3-175b", "--hidden-size", "4096", "--num-gpus", "8"}),
              AllOf(HasSubstr("--hidden-size (4096)"), HasSubstr("--num-attention-heads (96)"),
                    HasSubstr("--kv-channels")));
  const parsed_job pj = parse({"--model", "gpt3-175b", "--hidden-size", "6144", "--num-gpus", "8"});
  EXPECT_EQ(pj.job.model.ffn_hidden_size, 4 * 6144);
  EXPECT_EQ(pj.job.model.kv_channels, 64);
}

TEST(ArgsModelOverrides, SwigluRuleAndNonRuleFfn) {
  // Megatron's SwiGLU rule int(8h/3/64)·64: h 4096 gives 10880.
  const parsed_job a = parse({"--num-layers", "2", "--hidden-size", "4096", "--num-attention-heads", "32",
                              "--seq-length", "1024", "--vocab-size", "1000", "--swiglu", "--num-gpus", "8"});
  EXPECT_EQ(a.job.model.ffn_hidden_size, 10880);
  // llama2-7b's 11008 is not that rule (Meta's multiple-of-256 rule): it is a given size and stays.
  const parsed_job b = parse({"--model", "llama2-7b", "--hidden-size", "2048", "--num-gpus", "8"});
  EXPECT_EQ(b.job.model.ffn_hidden_size, 11008);
  EXPECT_EQ(b.job.model.kv_channels, 64);
}

TEST(ArgsModelOverrides, ExplicitFieldsWinAndNonRuleFieldsStay) {
  const parsed_job a =
      parse({"--model", "gpt3-175b", "--hidden-size", "4096", "--num-attention-heads", "32", "--ffn-hidden-size",
             "10000", "--num-gpus", "8"});
  EXPECT_EQ(a.job.model.ffn_hidden_size, 10000);
  // llama3-70b's 28672 is not the SwiGLU rule for 8192 and is kept; GQA's 8 groups are kept.
  const parsed_job b = parse({"--model", "llama3-70b", "--num-layers", "40", "--num-gpus", "8"});
  EXPECT_EQ(b.job.model.ffn_hidden_size, 28672);
  EXPECT_EQ(b.job.model.num_query_groups, 8);
  EXPECT_EQ(b.job.model.num_layers, 40);
  // Flag order does not matter: --model is applied first.
  const parsed_job c = parse({"--num-layers", "40", "--num-gpus", "8", "--model", "llama3-70b"});
  EXPECT_EQ(c.job.model.num_layers, 40);
  EXPECT_EQ(count_parameters(b.job.model).total, count_parameters(c.job.model).total);
}

TEST(ArgsModelOverrides, ModelOnlyNeedsNoLayout) {
  const parsed_job pj = parse_job_args({"--model", "bloom-176b"}, model_need::model_only);
  EXPECT_EQ(count_parameters(pj.job.model, 1).total, 176'247'271'424);
}

// ---- launch lines ------------------------------------------------------------------------------------

const args_t kMegatronArgs = concat(kMegatronModel, kLongLayout);

TEST(ArgsLaunchLine, TorchrunEqualsFlags) {
  const parsed_job flags = parse(concat(kMegatronArgs, kSixteenGpus));
  const parsed_job launch =
      parse(concat({"--", "torchrun", "--nproc_per_node", "8", "--nnodes", "2", "pretrain_gpt.py"}, kMegatronArgs));
  EXPECT_TRUE(launch.from_launch_line);
  EXPECT_EQ(launch.job.num_gpus, 16);
  EXPECT_EQ(launch.job.cluster.gpus_per_node, 8);
  EXPECT_EQ(launch.job.cluster.num_nodes, 2);
  expect_same_layout(flags.job, launch.job);
  expect_same_memory(estimate_memory(flags.job), estimate_memory(launch.job));
}

TEST(ArgsLaunchLine, TorchrunWithRendezvousAndEqualsForms) {
  const parsed_job flags = parse(concat(kMegatronArgs, kSixteenGpus));
  const parsed_job launch = parse(concat({"--", "torchrun", "--nproc-per-node=8", "--nnodes=1:2", "--node_rank",
                                          "0", "--rdzv_backend", "c10d", "--rdzv_endpoint", "host:29500",
                                          "/path/to/Megatron-LM/pretrain_gpt.py"},
                                         kMegatronArgs));
  EXPECT_EQ(launch.job.num_gpus, 16);
  expect_same_memory(estimate_memory(flags.job), estimate_memory(launch.job));
  // Launcher flags are listed as ignored.
  EXPECT_THAT(launch.ignored_flags, ::testing::Contains("--node-rank"));
}

TEST(ArgsLaunchLine, PythonDashMTorchDistributedRun) {
  const parsed_job flags = parse(concat(kMegatronArgs, kSixteenGpus));
  const parsed_job launch = parse(concat({"--", "python", "-m", "torch.distributed.run", "--nproc_per_node", "8",
                                          "--nnodes", "2", "--master_addr", "10.0.0.1", "--master_port", "6000",
                                          "pretrain_gpt.py"},
                                         kMegatronArgs));
  expect_same_layout(flags.job, launch.job);
  expect_same_memory(estimate_memory(flags.job), estimate_memory(launch.job));
}

TEST(ArgsLaunchLine, DeepSpeedLauncher) {
  const args_t ds = {"--model", "bloom-176b", "--tp", "4", "--pp", "4", "--mbs", "1", "--gbs", "64", "--bf16",
                     "--deepspeed", "--zero-stage", "1", "--checkpoint-activations"};
  const parsed_job flags = parse(concat(ds, kSixteenGpus));
  const parsed_job launch =
      parse(concat({"--", "deepspeed", "--num_gpus", "8", "--num_nodes", "2", "pretrain_gpt.py"}, ds));
  EXPECT_EQ(launch.job.training.framework, framework_kind::deepspeed);
  EXPECT_EQ(launch.job.num_gpus, 16);
  expect_same_layout(flags.job, launch.job);
  expect_same_memory(estimate_memory(flags.job), estimate_memory(launch.job));
}

TEST(ArgsLaunchLine, OwnFlagsBeforeTheLaunchLine) {
  const parsed_job pj = parse(concat({"--cluster", "dgx-a100", "--", "torchrun", "--nproc_per_node", "8",
                                      "--nnodes", "2", "pretrain_gpt.py"},
                                     kMegatronArgs));
  EXPECT_EQ(pj.job.cluster.gpu.name, find_cluster("dgx-a100").gpu.name);
  EXPECT_EQ(pj.job.num_gpus, 16);
}

// Issue 29: a flag before `--` is the user's what-if on the line: it overrides the launch line's value
// (TP, world size), and the answer lists what it overrode. It used to lose without a word.
TEST(ArgsLaunchLine, YourFlagsOverrideTheLaunchLineAndAreListed) {
  const parsed_job pj = parse(concat({"--tp", "4", "--num-nodes", "4", "--cluster", "dgx-a100", "--", "torchrun",
                                      "--nproc_per_node", "8", "pretrain_gpt.py"},
                                     kMegatronArgs));
  EXPECT_EQ(pj.job.parallel.tp, 4);
  EXPECT_EQ(pj.job.num_gpus, 32);
  EXPECT_THAT(pj.overridden_flags, ::testing::Contains("--tensor-model-parallel-size 2 (launch line) → --tp 4 (your flags)"));
  EXPECT_THAT(pj.overridden_flags, ::testing::Contains("--nnodes 1 (launch line) → --num-nodes 4 (your flags)"));
  // --num-gpus replaces the launcher's world size whole.
  const parsed_job gpus = parse(concat({"--num-gpus", "16", "--", "torchrun", "--nproc_per_node", "8", "pretrain_gpt.py"},
                                       kMegatronArgs));
  EXPECT_EQ(gpus.job.num_gpus, 16);
  EXPECT_THAT(gpus.overridden_flags, ::testing::Contains("--nnodes 1 (launch line) → --num-gpus (your flags)"));
}

// Each launcher's own defaults and flags (torch/distributed/run.py; deepspeed/launcher/runner.py; srun;
// Open MPI's mpirun), nested ones too.
TEST(ArgsLaunchLine, LaunchersSizeTheWorldAsTheyRunIt) {
  auto world = [&](const args_t& launcher) {
    const parsed_job pj = parse(concat(concat({"--cluster", "dgx-a100", "--"}, launcher), kMegatronArgs));
    return std::pair(pj.job.num_gpus, pj.job.cluster.gpus_per_node);
  };
  using w = std::pair<std::int64_t, std::int64_t>;
  // torchrun starts one process per node unless told (--nproc-per-node's default is 1).
  EXPECT_EQ(world({"torchrun", "--nnodes", "8", "pretrain_gpt.py"}), w(8, 1));
  EXPECT_EQ(world({"torchrun", "--nnodes", "2", "--nproc-per-node", "gpu", "pretrain_gpt.py"}), w(16, 8));
  EXPECT_EQ(world({"srun", "-N", "4", "--ntasks-per-node", "8", "python", "pretrain_gpt.py"}), w(32, 8));
  EXPECT_EQ(world({"srun", "--nodes=2", "-n", "16", "python", "pretrain_gpt.py"}), w(16, 8));
  EXPECT_EQ(world({"srun", "-N", "2", "torchrun", "--nproc_per_node", "8", "pretrain_gpt.py"}), w(16, 8));
  EXPECT_EQ(world({"mpirun", "-np", "32", "-N", "8", "python", "pretrain_gpt.py"}), w(32, 8));
  EXPECT_EQ(world({"mpirun", "-np", "16", "--map-by", "ppr:4:node", "--bind-to", "none", "python", "pretrain_gpt.py"}),
            w(16, 4));
  // deepspeed: --num_nodes with every GPU of a node, a hostfile it can read, --include.
  EXPECT_EQ(world({"deepspeed", "--num_nodes=4", "pretrain_gpt.py"}), w(32, 8));
  const std::string hosts = write_temp("hostfile", "# two hosts\nworker-0 slots=8\nworker-1 slots=8\n");
  EXPECT_EQ(world({"deepspeed", "--hostfile", hosts, "pretrain_gpt.py"}), w(16, 8));
  EXPECT_EQ(world({"deepspeed", "--include", "worker-0:0,1,2,3@worker-1:0,1,2,3", "pretrain_gpt.py"}), w(8, 4));
  const parsed_job unread = parse(concat({"--cluster", "dgx-a100", "--", "deepspeed", "--num_nodes=4", "--hostfile",
                                          "/nonexistent/hf", "pretrain_gpt.py"},
                                         kMegatronArgs));
  EXPECT_EQ(unread.job.num_gpus, 32);
  EXPECT_THAT(unread.ignored_flags,
              ::testing::Contains("--hostfile /nonexistent/hf (not readable here: every GPU of a node assumed)"));
}

// The environment a line sets (`NAME=VALUE …`, `env … NAME=VALUE`): one table (src/cli/launch_env.cc) of
// variables that change no estimate (listed), change one only at other values, or change one trainplan
// does not model from the variable (refused naming it); an unknown one is refused.
TEST(ArgsLaunchLine, EnvironmentAssignmentsAreClassified) {
  const parsed_job pj = parse(concat({"--cluster", "dgx-a100", "--", "CUDA_DEVICE_MAX_CONNECTIONS=1",
                                      "PYTORCH_ALLOC_CONF=\"expandable_segments:True\"", "srun", "-N", "2", "env", "-u",
                                      "FOO", "NCCL_DEBUG=INFO", "torchrun", "--nproc_per_node", "8", "pretrain_gpt.py"},
                                     kMegatronArgs));
  EXPECT_EQ(pj.job.num_gpus, 16);
  EXPECT_THAT(pj.ignored_flags, ::testing::Contains("CUDA_DEVICE_MAX_CONNECTIONS=1 (the kernel queue order Megatron requires)"));
  EXPECT_THAT(pj.ignored_flags, ::testing::Contains("NCCL_DEBUG=INFO"));
  EXPECT_THAT(pj.ignored_flags, ::testing::Contains(HasSubstr("PYTORCH_ALLOC_CONF=expandable_segments:True (the allocator reserve")));
  auto refused = [&](const std::string& assignment) {
    return error_of(concat({"--", assignment, "torchrun", "--nproc_per_node", "8", "pretrain_gpt.py"}, kMegatronArgs));
  };
  EXPECT_THAT(refused("PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:128"),
              AllOf(HasSubstr("launch line: PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:128 would change what the caching "
                              "allocator reserves"),
                    HasSubstr("--allocator-reserve-fraction")));
  EXPECT_THAT(refused("NCCL_ALGO=Tree"), HasSubstr("NCCL_ALGO=Tree would change the collectives' algorithms"));
  EXPECT_THAT(refused("NVTE_FUSED_ATTN=2"), HasSubstr("NVTE_FUSED_ATTN=2 would change the attention kernel; "
                                                      "--attention-backend says it"));
  EXPECT_EQ(refused("NVTE_FUSED_ATTN=1"), "");
  EXPECT_THAT(refused("CUDA_LAUNCH_BLOCKING=1"), HasSubstr("every kernel launch"));
  EXPECT_THAT(refused("MY_SETTING=1"), HasSubstr("MY_SETTING=1: an environment variable trainplan does not know"));
}

// §5.2: Transformer Engine's attention switches choose the kernel Megatron-Core's default (auto) leaves to
// TE, as NeMo-Framework-Launcher's NVTE_FUSED_ATTN=0 did for its 2024 runs; an explicit backend that
// disagrees is refused as Megatron-Core refuses it; another framework runs no TE attention.
TEST(ArgsLaunchLine, TransformerEnginesAttentionSwitchesChooseTheKernel) {
  auto job = [&](std::vector<std::string> env, std::vector<std::string> extra = {}) {
    std::vector<std::string> a = {"--"};
    a.insert(a.end(), env.begin(), env.end());
    a.insert(a.end(), {"torchrun", "--nproc_per_node", "8", "pretrain_gpt.py"});
    a.insert(a.end(), kMegatronArgs.begin(), kMegatronArgs.end());
    a.insert(a.end(), extra.begin(), extra.end());
    return parse(a);
  };
  using kind = training_config::attention_backend;
  const parsed_job flash = job({"NVTE_FUSED_ATTN=0"});
  EXPECT_EQ(flash.job.training.attention, kind::flash2);
  EXPECT_TRUE(flash.job.training.fa2_attention);
  EXPECT_THAT(flash.derived_flags, ::testing::Contains("--attention-backend flash (NVTE_FUSED_ATTN=0 on the launch line)"));
  EXPECT_EQ(job({"NVTE_FLASH_ATTN=0"}).job.training.attention, kind::cudnn);
  const parsed_job unfused = job({"NVTE_FUSED_ATTN=0", "NVTE_FLASH_ATTN=0"});
  EXPECT_EQ(unfused.job.training.attention, kind::unfused);
  EXPECT_FALSE(unfused.job.training.flash_attention);
  EXPECT_EQ(job({"NVTE_FUSED_ATTN=0"}, {"--attention-backend", "flash"}).job.training.attention, kind::flash2);
  EXPECT_EQ(job({"NVTE_FUSED_ATTN=1"}).job.training.attention, job({}).job.training.attention);  // TE's own choice
  // Megatron's own modules (--transformer-impl local) run no TE attention: the switches change nothing.
  const parsed_job local = job({"NVTE_FUSED_ATTN=0"}, {"--transformer-impl", "local"});
  EXPECT_EQ(local.job.training.attention, job({}, {"--transformer-impl", "local"}).job.training.attention);
  EXPECT_THAT(local.ignored_flags, ::testing::Contains(HasSubstr("NVTE_FUSED_ATTN=0 (Transformer Engine's attention switches")));
  EXPECT_EQ(error_of(concat({"--", "NVTE_FUSED_ATTN=0", "torchrun", "--nproc_per_node", "8", "pretrain_gpt.py"},
                            concat(kMegatronArgs, {"--attention-backend", "fused"}))),
            "launch line: NVTE_FUSED_ATTN=0 selects the flash attention backend, which the --attention-backend given "
            "contradicts; Megatron-Core refuses the pair (language_module.py _set_attention_backend): keep one of them");
}

TEST(ArgsLaunchLine, AWorldSizeTheLineDoesNotSayIsAskedFor) {
  EXPECT_EQ(error_of(concat({"--", "deepspeed", "--exclude", "worker-1:0", "pretrain_gpt.py"}, kMegatronArgs)),
            "launch line: the world size is not known: deepspeed: its --exclude leaves GPUs of the hostfile that "
            "trainplan does not read; give --num-nodes N (and --gpus-per-node N) before '--'");
  EXPECT_EQ(parse(concat({"--num-nodes", "4", "--", "deepspeed", "--exclude", "worker-1:0", "pretrain_gpt.py"},
                         kMegatronArgs))
                .job.num_gpus,
            32);
  EXPECT_THAT(error_of(concat({"--", "mpirun", "-np", "12", "-N", "8", "python", "pretrain_gpt.py"}, kMegatronArgs)),
              HasSubstr("not whole nodes"));
  // Found by fuzzing launch_line: an empty --include divided by zero GPUs per node.
  EXPECT_EQ(error_of(concat({"--", "deepspeed", "--include", "", "pretrain_gpt.py"}, kMegatronArgs)),
            "launch line --include: no host given (host:gpu,gpu@host:gpu)");
  EXPECT_THAT(error_of(concat({"--", "deepspeed", "--include", "a:0@@b:0", "pretrain_gpt.py"}, kMegatronArgs)),
              HasSubstr("an empty host between '@'s"));
  const std::string uneven = write_temp("hostfile_uneven", "a slots=8\nb slots=4\n");
  EXPECT_THAT(error_of(concat({"--", "deepspeed", "--hostfile", uneven, "pretrain_gpt.py"}, kMegatronArgs)),
              HasSubstr(":2: hosts with 8 and 4 slots"));
}

// Issue 29: flags listed as "changes no estimate" that change one, now modelled as the frameworks read them.
TEST(ArgsLaunchLine, FlagsThatChangeAnEstimateAreNotIgnored) {
  const args_t base = concat(kMegatronArgs, kSixteenGpus);
  // Megatron-LM's --use-tp-pp-dp-mapping: the rank order tp-cp-ep-pp-dp (training/initialize.py).
  const parsed_job mapped = parse(concat(base, {"--use-tp-pp-dp-mapping"}));
  const parsed_job ordered = parse(concat(base, {"--rank-order", "tp-cp-ep-pp-dp"}));
  EXPECT_EQ(mapped.job.parallel.rank_order, ordered.job.parallel.rank_order);
  EXPECT_NE(mapped.job.parallel.rank_order, parse(base).job.parallel.rank_order);
  EXPECT_THAT(mapped.ignored_flags, ::testing::Not(::testing::Contains("--use-tp-pp-dp-mapping")));
  // Megatron-DeepSpeed's --pad-vocab-size-to: the padded vocabulary itself (tokenizer.py).
  const parsed_job padded = parse(concat(base, {"--pad-vocab-size-to", "32768"}));
  EXPECT_EQ(count_parameters(padded.job.model, 2).padded_vocab_size, 32768);
  EXPECT_THAT(padded.ignored_flags, ::testing::Not(::testing::Contains("--pad-vocab-size-to")));
}

// Issue 29: the DeepSpeed JSON a Megatron-DeepSpeed line names is read as DeepSpeed reads it (it was listed
// as "changes no estimate" while it set ZeRO 3, bf16 and CPU offload).
TEST(ArgsDeepSpeedConfig, ItsSettingsAreTheJobsAndOverrideTheLine) {
  const std::string json = write_temp("ds_config.json", R"({
  "train_micro_batch_size_per_gpu": 1,
  "train_batch_size": 64,
  "steps_per_print": 10,
  "zero_optimization": {"stage": 3, "overlap_comm": false, "reduce_bucket_size": 2e8,
                        "offload_optimizer": {"device": "cpu", "pin_memory": true}},
  "gradient_clipping": 1.0,
  "bf16": {"enabled": true}
})");
  const args_t model = {"--num-layers", "8", "--hidden-size", "2048", "--num-attention-heads", "16", "--seq-length",
                        "2048", "--max-position-embeddings", "2048", "--vocab-size", "50257", "--deepspeed"};
  const parsed_job ds = parse(concat(concat({"--cluster", "dgx-a100", "--", "deepspeed", "--num_gpus", "8", "pretrain_gpt.py"}, model),
                                     {"--micro-batch-size", "2", "--global-batch-size", "128", "--fp16",
                                      "--deepspeed_config", json}));
  const parsed_job flags = parse(concat(concat({"--cluster", "dgx-a100", "--num-gpus", "8"}, model),
                                        {"--micro-batch-size", "1", "--global-batch-size", "64", "--bf16", "--zero-stage",
                                         "3", "--offload-optimizer", "--overlap-comm", "off", "--reduce-bucket-size",
                                         "200000000"}));
  EXPECT_EQ(ds.job.training.zero_stage, 3);
  EXPECT_TRUE(ds.job.training.offload_optimizer);
  EXPECT_EQ(ds.job.training.precision, dtype::bf16);
  EXPECT_EQ(ds.job.training.micro_batch_size, 1);
  EXPECT_EQ(ds.job.training.global_batch_size, 64);
  EXPECT_EQ(ds.job.training.bucket_size_elements, 200000000);
  expect_same_memory(estimate_memory(flags.job), estimate_memory(ds.job));
  EXPECT_THAT(ds.overridden_flags, ::testing::Contains("--fp16 (launch line) → bf16.enabled (DeepSpeed config)"));
  EXPECT_THAT(ds.overridden_flags,
              ::testing::Contains("--micro-batch-size 2 (launch line) → train_micro_batch_size_per_gpu 1 (DeepSpeed config)"));
  EXPECT_THAT(ds.ignored_flags, ::testing::Contains("args_test_ds_config.json:steps_per_print"));
  // The user's flags before `--` still win.
  const parsed_job what_if = parse(concat(concat({"--cluster", "dgx-a100", "--zero-stage", "1", "--", "deepspeed",
                                                  "--num_gpus", "8", "pretrain_gpt.py"}, model),
                                          {"--deepspeed_config", json}));
  EXPECT_EQ(what_if.job.training.zero_stage, 1);
}

// DeepSpeed's batch (runtime/config.py _configure_train_batch_size): train_batch_size = micro ×
// gradient_accumulation_steps × DP, derived when the config leaves it out and checked when it gives it
// (gradient_accumulation_steps was listed as ignored while the command line's batch counted).
TEST(ArgsDeepSpeedConfig, GradientAccumulationStepsSetOrCheckTheGlobalBatch) {
  const args_t model = {"--model", "llama2-7b", "--cluster", "dgx-a100", "--num-gpus", "8", "--deepspeed", "--deepspeed-config"};
  const parsed_job derived = parse(concat(model, {write_temp("ds_gas.json", R"({"train_micro_batch_size_per_gpu": 2,
      "gradient_accumulation_steps": 4, "zero_optimization": {"stage": 1}})")}));
  EXPECT_EQ(derived.job.training.micro_batch_size, 2);
  EXPECT_EQ(derived.job.training.global_batch_size, 2 * 4 * 8);
  EXPECT_EQ(derived.job.num_microbatches(), 4);
  EXPECT_THAT(derived.ignored_flags, ::testing::Not(::testing::Contains(HasSubstr("gradient_accumulation_steps"))));
  EXPECT_NO_THROW(parse(concat(model, {write_temp("ds_gas_ok.json", R"({"train_batch_size": 64,
      "train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 4})")})));
  EXPECT_THAT(error_of(concat(model, {write_temp("ds_gas_bad.json", R"({"train_batch_size": 32,
      "train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 4})")})),
              HasSubstr("train_batch_size (32) must equal train_micro_batch_size_per_gpu × gradient_accumulation_steps "
                        "× DP (2 × 4 × 8 = 64): DeepSpeed's batch check"));  // the keys that set them
}

// DeepSpeed ZeRO-1/2's gradient reduction (stage_1_and_2.py average_tensor, docs/formulas.md §4.2.4): each
// bucket all-reduced whole unless reduce_scatter is on and use_multi_rank_bucket_allreduce off (both default
// on), when each rank's slice is reduced to it; reduce_scatter was listed as changing nothing.
TEST(ArgsDeepSpeedConfig, TheGradientReductionIsReadFromBothKeys) {
  const args_t model = {"--model", "llama2-7b", "--cluster",     "dgx-a100", "--num-gpus",
                        "16",      "--gbs",     "64",            "--deepspeed", "--deepspeed-config"};
  using tg = training_config::toggle;
  auto mode = [&](const std::string& name, const std::string& zero) {
    const parsed_job j = parse(concat(model, {write_temp(name, R"({"zero_optimization": )" + zero + "}")}));
    EXPECT_THAT(j.ignored_flags, ::testing::Not(::testing::Contains(HasSubstr("reduce_scatter")))) << zero;
    return j.job.training.zero_bucket_all_reduce;
  };
  EXPECT_EQ(mode("ds_r0.json", R"({"stage": 2})"), tg::framework_default);
  EXPECT_EQ(mode("ds_r1.json", R"({"stage": 2, "reduce_scatter": true})"), tg::on);
  EXPECT_EQ(mode("ds_r2.json", R"({"stage": 1, "use_multi_rank_bucket_allreduce": false})"), tg::off);
  EXPECT_EQ(mode("ds_r3.json", R"({"stage": 2, "reduce_scatter": false, "use_multi_rank_bucket_allreduce": false})"),
            tg::on);
  // At ZeRO-0 and ZeRO-3 neither key changes an estimate, and both are listed so.
  const parsed_job z3 = parse(concat(model, {write_temp("ds_r4.json",
      R"({"zero_optimization": {"stage": 3, "reduce_scatter": true, "use_multi_rank_bucket_allreduce": false}})")}));
  EXPECT_EQ(z3.job.training.zero_bucket_all_reduce, tg::framework_default);
  EXPECT_THAT(z3.ignored_flags, ::testing::Contains("args_test_ds_r4.json:zero_optimization.reduce_scatter"));
  const std::string bad = write_temp("ds_r5.json", R"({"zero_optimization": {"stage": 2, "reduce_scatter": 1}})");
  EXPECT_THAT(error_of(concat(model, {bad})),
              HasSubstr("zero_optimization.reduce_scatter: expected true or false, got 1"));
  // The flag itself: DeepSpeed ZeRO-1/2 only.
  EXPECT_THAT(error_of({"--model", "llama2-7b", "--num-gpus", "8", "--zero-grad-reduce", "reduce"}),
              HasSubstr("--zero-grad-reduce is DeepSpeed ZeRO-1/2's gradient reduction"));
  EXPECT_THAT(error_of({"--model", "llama2-7b", "--num-gpus", "8", "--framework", "deepspeed", "--zero-stage", "3",
                        "--zero-grad-reduce", "reduce"}),
              HasSubstr("needs --framework deepspeed with --zero-stage 1 or 2"));
}

TEST(ArgsDeepSpeedConfig, WhatItDoesNotModelIsRefusedByKey) {
  const args_t model = {"--model", "llama2-7b", "--num-gpus", "8", "--deepspeed", "--deepspeed-config"};
  auto error_with = [&](const std::string& name, const std::string& text) {
    return error_of(concat(model, {write_temp(name, text)}));
  };
  EXPECT_THAT(error_with("ds_unknown.json", "{\n  \"train_batch_size\": 64,\n  \"fancy_new_feature\": {}\n}"),
              AllOf(HasSubstr("ds_unknown.json:3: fancy_new_feature: not a DeepSpeed setting trainplan knows")));
  // contiguous_gradients: true is the default the memory model counts (the reduce bucket, §3.7); false
  // would drop that bucket, and is refused by name.
  EXPECT_THAT(error_with("ds_contig.json", R"({"zero_optimization": {"stage": 3, "contiguous_gradients": false}})"),
              HasSubstr("zero_optimization.contiguous_gradients: false would change the reduce bucket's memory"));
  EXPECT_THAT(error_with("ds_contig2.json", R"({"zero_optimization": {"stage": 3, "contiguous_gradients": 1}})"),
              HasSubstr("zero_optimization.contiguous_gradients: expected true or false, got 1"));
  EXPECT_EQ(error_with("ds_contig3.json", R"({"zero_optimization": {"stage": 3, "contiguous_gradients": true}})"),
            "");  // accepted
  EXPECT_THAT(error_with("ds_param.json", R"({"zero_optimization": {"stage": 3, "offload_param": {"device": "cpu"}}})"),
              HasSubstr("zero_optimization.offload_param.device: \"cpu\" would change where the parameters live"));
  EXPECT_THAT(error_with("ds_twin.json", R"({"zero_optimization": {"offload_optimizer": {"device": "cpu", "ratio": 0.3}}})"),
              HasSubstr("zero_optimization.offload_optimizer.ratio: 0.3 would change the share of the optimizer step"));
  EXPECT_THAT(error_with("ds_gather.json", R"({"zero_optimization": {"stage": 2, "reduce_bucket_size": 2e8,
                                            "allgather_bucket_size": 5e8}})"),
              HasSubstr("zero_optimization.allgather_bucket_size: 500000000.0 differs from the reduce bucket (200000000)"));
  EXPECT_NO_THROW(parse(concat(model, {write_temp("ds_same.json", R"({"zero_optimization": {"stage": 2,
      "reduce_bucket_size": 2e8, "allgather_bucket_size": 2e8}})")})));
  EXPECT_THAT(error_with("ds_nvme.json", R"({"zero_optimization": {"offload_optimizer": {"device": "nvme"}}})"),
              HasSubstr("NVMe offload is not modelled"));
  // NVMe's read and write pipelining does nothing for an offload to the CPU (Megatron-DeepSpeed's
  // examples_deepspeed/azure configs set it beside device cpu).
  EXPECT_TRUE(parse(concat(model, {write_temp("ds_pipeline_read.json", R"({"zero_optimization": {"stage": 1,
      "offload_optimizer": {"device": "cpu", "pipeline_read": false, "pipeline_write": false}}})")}))
                  .job.training.offload_optimizer);
  // DeepSpeed's data efficiency library changes a step only through random-LTD or a curriculum
  // (Megatron-DeepSpeed's data_efficiency examples enable the section with both off: sampling order only).
  const parsed_job efficiency = parse(concat(model, {write_temp("ds_efficiency.json", R"({"dataloader_drop_last": true,
      "data_efficiency": {
      "enabled": true, "seed": 1234, "data_routing": {"enabled": false, "random_ltd": {"enabled": false}},
      "data_sampling": {"enabled": true, "num_workers": 0, "curriculum_learning": {"enabled": false}}}})")}));
  EXPECT_THAT(efficiency.ignored_flags, ::testing::Contains(HasSubstr("data_efficiency")));
  EXPECT_THAT(efficiency.ignored_flags, ::testing::Contains(HasSubstr("dataloader_drop_last")));
  EXPECT_THAT(error_with("ds_ltd.json", R"({"data_efficiency": {"enabled": true,
      "data_routing": {"enabled": true, "random_ltd": {"enabled": true}}}})"),
              HasSubstr("data_efficiency: random-LTD, a curriculum or dynamic batching would change the sequence lengths"));
  EXPECT_THAT(error_with("ds_cl.json", R"({"data_efficiency": {"enabled": true,
      "data_sampling": {"enabled": true, "curriculum_learning": {"enabled": true}}}})"),
              HasSubstr("data_efficiency: random-LTD, a curriculum or dynamic batching would change"));
  EXPECT_THAT(error_with("ds_dyn.json", R"({"data_efficiency": {"enabled": true,
      "data_sampling": {"enabled": true, "dynamic_batching": {"enabled": true}}}})"),
              HasSubstr("data_efficiency: random-LTD, a curriculum or dynamic batching would change"));
  EXPECT_THAT(error_with("ds_auto.json", R"({"train_batch_size": "auto"})"),
              HasSubstr("train_batch_size: expected a whole number, got \"auto\""));
  EXPECT_THAT(error_with("ds_bad.json", "{\n  \"train_batch_size\": 64,\n}"), HasSubstr("ds_bad.json:3: not valid JSON"));
  EXPECT_THAT(error_of(concat(model, {"/nonexistent/ds_config.json"})),
              AllOf(StartsWith("--deepspeed-config /nonexistent/ds_config.json: "),
                    HasSubstr("give the file, or its settings as flags")));
}

// Issue 29: what Megatron-LM's own CI model configs (tests/functional_tests/test_cases/*/model_config.yaml at
// d98e8a6) run, read as Megatron reads it.
TEST(ArgsLaunchLine, MegatronCiConfigsAreReadAsMegatronReadsThem) {
  const args_t gpt = {"--num-layers", "12", "--hidden-size", "512", "--num-attention-heads", "8", "--seq-length", "1024",
                      "--max-position-embeddings", "1024", "--vocab-size", "32000", "--num-gpus", "8"};
  // gpt3_mcore_te_tp2_pp2_cp2_etp4_*: expert TP on a dense model builds no expert layer (listed, not refused).
  const parsed_job etp = parse(concat(gpt, {"--tp", "2", "--pp", "2", "--cp", "2", "--expert-tensor-parallel-size", "4",
                                            "--gbs", "8"}));
  EXPECT_THAT(etp.ignored_flags, ::testing::Contains("--expert-tensor-parallel-size 4 (a dense model: no expert layers)"));
  EXPECT_EQ(etp.job.parallel.etp, 0);
  // gpt3_mcore_te_tp1_pp4_vp1_*_overlap_optimizer: --num-layers-per-virtual-pipeline-stage 1 over 12 layers and
  // PP 4 is VPP 3, which Megatron derives before its check on the optimizer-step overlap.
  const parsed_job vpp = parse(concat(gpt, {"--pp", "4", "--num-layers-per-virtual-pipeline-stage", "1", "--gbs", "32",
                                            "--mbs", "4", "--use-distributed-optimizer", "--overlap-grad-reduce",
                                            "--overlap-param-gather", "--overlap-param-gather-with-optimizer-step"}));
  EXPECT_EQ(vpp.job.parallel.vpp, 3);
  EXPECT_TRUE(vpp.job.training.overlap_param_gather_with_step);
  EXPECT_THAT(error_of(concat(gpt, {"--pp", "4", "--gbs", "32", "--mbs", "4", "--use-distributed-optimizer",
                                    "--overlap-param-gather", "--overlap-param-gather-with-optimizer-step"})),
              HasSubstr("only supported with interleaved pipeline parallelism"));
  // The interleaved schedule's warm-up and cool-down transfers overlap only when asked, and only with
  // the steady phase's overlap (Megatron-Core's check).
  const args_t interleaved = concat(gpt, {"--pp", "4", "--vpp", "3", "--gbs", "32", "--mbs", "4"});
  EXPECT_FALSE(parse(interleaved).job.training.overlap_p2p_warmup_flush);
  EXPECT_TRUE(parse(concat(interleaved, {"--overlap-p2p-communication-warmup-flush"})).job.training.overlap_p2p_warmup_flush);
  EXPECT_THAT(error_of(concat(interleaved, {"--overlap-p2p-communication-warmup-flush", "--no-overlap-p2p-communication"})),
              HasSubstr("--overlap-p2p-communication-warmup-flush needs the steady phase's overlap, which "
                        "--no-overlap-p2p-communication turns off"));
  // --microbatch-group-size-per-virtual-pipeline-stage: larger groups warm up longer, (v − 1)·G more
  // chunk-micro-batches held on every rank (§3.5): rank 3 of PP 4, VPP 3 holds 2·4 + 1 at G = 4 and 2·8 + 1
  // at G = 8, 8 more chunks of one layer each.
  const args_t grouped = concat(gpt, {"--pp", "4", "--vpp", "3", "--gbs", "64", "--mbs", "4"});
  const memory_report by_p = estimate_memory(parse(grouped).job);
  const memory_report by_8 =
      estimate_memory(parse(concat(grouped, {"--microbatch-group-size-per-virtual-pipeline-stage", "8"})).job);
  const stage_memory& a = by_p.stages[3];
  EXPECT_NEAR(by_8.stages[3].activations_bytes - a.activations_bytes,
              8 * (a.activations_per_microbatch_bytes / static_cast<double>(a.num_layers)), 1e-6 * a.activations_bytes);
  EXPECT_GT(estimate_time(parse(concat(grouped, {"--microbatch-group-size-per-virtual-pipeline-stage", "8"})).job).iteration_s, 0);
  // Without interleaving the group changes nothing, and the answer says so.
  const parsed_job ungrouped =
      parse(concat(gpt, {"--pp", "4", "--gbs", "64", "--mbs", "4", "--microbatch-group-size-per-virtual-pipeline-stage", "8"}));
  EXPECT_EQ(ungrouped.job.parallel.microbatch_group_size, 0);
  EXPECT_THAT(ungrouped.ignored_flags, ::testing::Contains(HasSubstr("--microbatch-group-size-per-virtual-pipeline-stage 8 (no interleaving")));
  // Megatron's other optimizers are refused by name.
  EXPECT_EQ(error_of(concat(gpt, {"--optimizer", "muon"})),
            "--optimizer muon would change the optimizer's states and step (Megatron-LM's choice), which trainplan "
            "does not model; adam or sgd");
}

// Issue 29: common real inputs that were refused or unknown, as their frameworks read them.
TEST(ArgsLaunchLine, MegatronDeepSpeedAndBloomFlagsAreRead) {
  const args_t base = {"--model", "llama2-7b", "--num-gpus", "8", "--gbs", "64", "--deepspeed"};
  // Megatron-DeepSpeed's spellings of modelled settings.
  EXPECT_EQ(parse(concat(base, {"--num-key-value-heads", "8"})).job.model.num_query_groups, 8);
  EXPECT_EQ(parse(concat(base, {"--use-flash-attn-triton"})).job.training.attention,
            training_config::attention_backend::fused);
  EXPECT_TRUE(parse(concat(base, {"--cpu-optimizer", "--zero-stage", "1"})).job.training.offload_optimizer);
  // Defaults that change nothing are listed; other values are refused by what they would change.
  const parsed_job defaults = parse(concat(base, {"--moe-expert-parallel-size", "1",
                                                  "--checkpoint-num-layers", "1", "--no-pipeline-parallel",
                                                  "--lr-decay-tokens", "300e9", "--no-query-key-layer-scaling",
                                                  "--train-weighted-split-paths-path", "/data/train.txt",
                                                  "--valid-num-workers", "2", "--mtp-loss-scaling-factor", "0.1",
                                                  "--fp8-amax-history-len", "1024", "--moe-token-drop-policy", "probs"}));
  EXPECT_THAT(defaults.ignored_flags, ::testing::IsSupersetOf({"--moe-expert-parallel-size", "--valid-num-workers",
                                                               "--mtp-loss-scaling-factor", "--moe-token-drop-policy"}));
  // Megatron-DeepSpeed's dense examples (examples_deepspeed/MoE/ds_pretrain_gpt_*_dense.sh at 4efb479) pass
  // DeepSpeed-MoE's settings with one expert, and its compression examples the teacher's sizes: read only by
  // DeepSpeed-MoE and by --kd, both refused.
  const parsed_job dense_moe = parse(concat(base, {"--moe-loss-coeff", "0.01", "--moe-train-capacity-factor", "1.0",
                                                   "--moe-min-capacity", "4", "--create-moe-param-group",
                                                   "--num-layers-teacher", "24", "--no-load-lr-state"}));
  EXPECT_THAT(dense_moe.ignored_flags, ::testing::IsSupersetOf({"--moe-loss-coeff", "--moe-train-capacity-factor",
                                                                "--num-layers-teacher", "--no-load-lr-state"}));
  EXPECT_THAT(error_of(concat(base, {"--kd", "--num-layers-teacher", "24"})), HasSubstr("--kd would change a teacher model's memory and its forward pass each step"));
  EXPECT_THAT(error_of(concat(base, {"--ds-sequence-parallel-fpdt"})),
              HasSubstr("--ds-sequence-parallel-fpdt would change the sequence split and host offload"));
  // DeepSpeed-Ulysses is context parallelism by all-to-all: the same job as --cp N --cp-comm-type a2a, and
  // an error about its size names it.
  const parsed_job ulysses = parse(concat(base, {"--ds-sequence-parallel-size", "4"}));
  EXPECT_EQ(ulysses.job.parallel.cp, 4);
  EXPECT_EQ(ulysses.job.parallel.cp_comm, cp_comm_kind::a2a);
  const comm_report by_cp = summarize_comm(parse(concat(base, {"--cp", "4", "--cp-comm-type", "a2a"})).job);
  EXPECT_DOUBLE_EQ(summarize_comm(ulysses.job)[parallel_dim::cp].bytes_per_iteration_per_gpu,
                   by_cp[parallel_dim::cp].bytes_per_iteration_per_gpu);
  EXPECT_GT(by_cp[parallel_dim::cp].bytes_per_iteration_per_gpu, 0);
  EXPECT_EQ(parse(concat(base, {"--ds-sequence-parallel-size", "1"})).job.parallel.cp_comm, cp_comm_kind::p2p);
  EXPECT_THAT(error_of(concat(base, {"--ds-sequence-parallel-size", "3"})),
              HasSubstr("TP×PP×CP = 1×1×3 = 3 (--tensor-model-parallel-size, --pipeline-model-parallel-size, "
                        "--ds-sequence-parallel-size)"));
  EXPECT_THAT(error_of(concat(base, {"--no-pipeline-parallel", "--pp", "2"})),
              HasSubstr("Megatron-DeepSpeed's pipeline without the DeepSpeed engine is not modelled"));
  // Megatron-DeepSpeed's --num-experts defaults to [1], a dense model; DeepSpeed-MoE is refused by name.
  const args_t mds = {"--deepspeed", "--num-gpus", "8", "--num-layers", "4", "--hidden-size", "512",
                      "--num-attention-heads", "8", "--seq-length", "512", "--max-position-embeddings", "512",
                      "--vocab-size", "32000", "--gbs", "8"};
  EXPECT_FALSE(parse(concat(mds, {"--num-experts", "1"})).job.model.is_moe());
  EXPECT_THAT(error_of(concat(mds, {"--num-experts", "8"})), HasSubstr("DeepSpeed-MoE"));
}

// Issue 27: --recompute-num-layers 0 as Megatron-Core runs it (recompute.py): block checkpoints no layer
// (it was planned as one recomputed layer per chunk: +4% time, −2.7 GiB), uniform never ends its loop.
TEST(ArgsLaunchLine, RecomputeZeroLayersIsNoRecomputation) {
  const args_t base = {"--model", "llama3-8b", "--num-gpus", "8"};
  const parsed_job none = parse(base);
  const parsed_job block0 = parse(concat(base, {"--recompute-granularity", "full", "--recompute-method", "block",
                                                "--recompute-num-layers", "0"}));
  EXPECT_EQ(block0.job.training.recompute, recompute_granularity::none);
  expect_same_memory(estimate_memory(none.job), estimate_memory(block0.job));
  EXPECT_DOUBLE_EQ(estimate_time(none.job).iteration_s, estimate_time(block0.job).iteration_s);
  EXPECT_THAT(block0.derived_flags, ::testing::Contains(::testing::StartsWith("--recompute-granularity none")));
  EXPECT_THAT(error_of(concat(base, {"--recompute-granularity", "full", "--recompute-num-layers", "0"})),
              HasSubstr("uniform loop never advances"));
}

// Issue 29: Transformer Engine's userbuffer tuning flags change nothing without --tp-comm-overlap
// (model_parallel_config.py: "Don't care if tp_comm_overlap is False"); with it they are refused.
TEST(ArgsLaunchLine, TpCommTuningFlagsMatterOnlyWithTheOverlap) {
  const args_t base = {"--model", "llama3-8b", "--num-gpus", "8", "--tp", "2", "--sequence-parallel"};
  const parsed_job off = parse(concat(base, {"--disable-tp-comm-overlap-rs", "--tp-comm-overlap-cfg", "ub.yaml"}));
  EXPECT_THAT(off.ignored_flags, ::testing::IsSupersetOf({"--disable-tp-comm-overlap-rs", "--tp-comm-overlap-cfg"}));
  EXPECT_THAT(error_of(concat(base, {"--tp-comm-overlap", "--disable-tp-comm-overlap-rs"})),
              StartsWith("--disable-tp-comm-overlap-rs tunes --tp-comm-overlap's userbuffers"));
}

TEST(ArgsLaunchLine, HarmlessFlagsAreIgnoredAndListed) {
  const parsed_job flags = parse(concat(kMegatronArgs, kSixteenGpus));
  const parsed_job launch = parse(concat(
      concat({"--", "torchrun", "--nproc_per_node", "8", "--nnodes", "2", "pretrain_gpt.py"}, kMegatronArgs),
      {"--lr", "3e-4", "--min-lr", "3e-5", "--train-iters", "500000", "--save", "/ckpt", "--load", "/ckpt",
       "--data-path", "/data/a_text_document", "--weight-decay", "0.1", "--clip-grad", "1.0", "--log-interval",
       "10", "--seed", "1234", "--adam-beta2", "0.95", "--tokenizer-type", "GPT2BPETokenizer", "--split",
       "949,50,1", "--wandb-project", "x", "--no-load-optim", "--lr-warmup-fraction", "0.01"}));
  for (const char* f : {"--lr", "--min-lr", "--train-iters", "--save", "--load", "--data-path", "--weight-decay",
                        "--clip-grad", "--log-interval", "--seed", "--adam-beta2", "--tokenizer-type", "--split",
                        "--wandb-project", "--no-load-optim", "--lr-warmup-fraction"}) {
    EXPECT_THAT(launch.ignored_flags, ::testing::Contains(std::string(f)));
  }
  expect_same_memory(estimate_memory(flags.job), estimate_memory(launch.job));
}

TEST(ArgsLaunchLine, HarmlessFlagsOutsideALaunchLineAreIgnoredToo) {
  // The arguments of pretrain_gpt.py can be pasted as flags: harmless ones are listed as ignored.
  const parsed_job pj = parse({"--model", "llama2-7b", "--lr", "3e-4", "--train-iters", "1000"});
  EXPECT_THAT(pj.ignored_flags, ::testing::ElementsAre("--lr", "--train-iters"));
  // A real typo is still an error with a suggestion.
  EXPECT_THAT(error_of({"--model", "llama2-7b", "--micro-batch-sise", "2"}), StartsWith("unknown flag --micro-batch-sise"));
}

TEST(ArgsLaunchLine, UnmodelledFlagIsAnErrorNamingIt) {
  const args_t line = {"--", "torchrun", "--nproc_per_node", "8", "pretrain_gpt.py", "--model", "llama2-7b"};
  EXPECT_THAT(error_of(concat(line, {"--distribute-saved-activations"})),
              AllOf(StartsWith("--distribute-saved-activations "), HasSubstr("which trainplan does not model")));
  EXPECT_THAT(error_of(concat(line, {"--moe-latent-size", "128"})),
              StartsWith("--moe-latent-size would change the experts' parameters and FLOPs (latent MoE"));
  // Expert TP on a dense model builds nothing (Megatron accepts it): listed, not refused.
  EXPECT_THAT(parse(concat(line, {"--expert-tensor-parallel-size", "2"})).ignored_flags,
              ::testing::Contains("--expert-tensor-parallel-size 2 (a dense model: no expert layers)"));
  // The same outside a launch line.
  EXPECT_THAT(error_of({"--model", "llama2-7b", "--distribute-saved-activations"}),
              StartsWith("--distribute-saved-activations "));
}

TEST(ArgsLaunchLine, UnknownFlagInLaunchLineSuggests) {
  EXPECT_THAT(error_of({"--", "torchrun", "--nproc_per_node", "8", "pretrain_gpt.py", "--model", "llama2-7b",
                        "--tensor-model-parallel-sise", "2"}),
              AllOf(StartsWith("unknown flag --tensor-model-parallel-sise"),
                    HasSubstr("did you mean '--tensor-model-parallel-size'?")));
}

TEST(ArgsLaunchLine, Malformed) {
  EXPECT_THAT(error_of({"--model", "llama2-7b", "--"}), HasSubstr("nothing after '--'"));
  EXPECT_THAT(error_of({"--", "torchrun", "--nproc_per_node", "8", "--model", "llama2-7b"}),
              HasSubstr("no training script"));
  EXPECT_THAT(error_of({"--", "torchrun", "--nproc_per_node", "eight", "pretrain_gpt.py", "--model", "llama2-7b"}),
              HasSubstr("--nproc-per-node expects an integer, got 'eight'"));
  EXPECT_THAT(error_of({"--", "torchrun", "--nproc_per_node", "8", "pretrain_gpt.py", "llama2-7b"}),
              HasSubstr("unexpected argument 'llama2-7b' in the launch line"));
}

// ---- presets -----------------------------------------------------------------------------------------

TEST(ArgsPreset, BloomProduction) {
  const parsed_job pj = parse({"--preset", "bloom-176b-production"});
  EXPECT_EQ(pj.preset, "bloom-176b-production");
  const job_spec& j = pj.job;
  EXPECT_EQ(j.model.name, "bloom-176b");
  EXPECT_EQ(count_parameters(j.model, j.parallel.tp).total, 176'247'271'424);
  EXPECT_EQ(j.cluster.name, "jean-zay-a100");
  EXPECT_EQ(j.num_gpus, 384);
  EXPECT_EQ(j.cluster.num_nodes, 48);
  EXPECT_EQ(j.parallel.tp, 4);
  EXPECT_EQ(j.parallel.pp, 12);
  EXPECT_EQ(j.parallel.dp, 8);
  EXPECT_EQ(j.training.micro_batch_size, 2);
  EXPECT_EQ(j.training.global_batch_size, 2048);
  EXPECT_EQ(j.num_microbatches(), 128);
  EXPECT_EQ(j.training.precision, dtype::bf16);
  EXPECT_EQ(j.training.framework, framework_kind::deepspeed);
  EXPECT_EQ(j.training.zero_stage, 1);
  EXPECT_EQ(j.training.recompute, recompute_granularity::full);
  EXPECT_TRUE(j.parallel.embedding_as_stage);
  const memory_report r = estimate_memory(j);
  EXPECT_EQ(r.stages.size(), 12u);
  EXPECT_TRUE(r.fits);
}

TEST(ArgsPreset, LaterFlagsOverrideThePreset) {
  const parsed_job pj = parse({"--preset=bloom-176b-production", "--gbs", "1024"});
  EXPECT_EQ(pj.job.training.global_batch_size, 1024);
  EXPECT_EQ(pj.job.parallel.tp, 4);
}

TEST(ArgsPreset, UnknownPresetSuggests) {
  EXPECT_EQ(error_of({"--preset", "bloom-176b-prodution"}),
            "--preset: unknown preset 'bloom-176b-prodution' (did you mean 'bloom-176b-production'?)");
  EXPECT_EQ(error_of({"--preset", "gpt"}), "--preset: unknown preset 'gpt'");  // nothing close: no suggestion
  EXPECT_EQ(error_of({"--preset"}), "--preset needs a value");
}

TEST(ArgsPreset, HelpListsPresetsAndDefaults) {
  const std::string help = job_flags_help();
  EXPECT_THAT(help, HasSubstr("bloom-176b-production"));
  EXPECT_THAT(help, HasSubstr("--tensor-model-parallel-size, --tp N"));
  EXPECT_THAT(help, HasSubstr("[default: 1]"));
  EXPECT_THAT(help, HasSubstr("[default: dgx-h100]"));
}

}  // namespace
}  // namespace trainplan

// ---- every Megatron-Core flag classified (issue 16, finding 7) -------------------------------------------

TEST(ArgsMegatronCore, EveryFlagOfTheCurrentReleaseIsClassified) {
  // tests/data/megatron-core-flags.txt: every flag of Megatron-LM's pretrain scripts at the commit its
  // header names (tools/megatron_core_flags.py). Each is modelled (sets the job), ignored (changes no
  // estimate; listed as such) or refused (would change one, not modelled): none is unknown.
  std::ifstream in(std::string(TRAINPLAN_TEST_DATA_DIR) + "/megatron-core-flags.txt");
  ASSERT_TRUE(in) << "tests/data/megatron-core-flags.txt";
  std::vector<std::string> unknown;
  int flags = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    ++flags;
    if (trainplan::classify_flag(line) == trainplan::flag_class::unknown) unknown.push_back(line);
  }
  EXPECT_GT(flags, 800);
  std::string list;
  for (const auto& f : unknown) list += f + "\n";
  EXPECT_TRUE(unknown.empty()) << unknown.size() << " unclassified:\n" << list;
  using trainplan::flag_class;
  EXPECT_EQ(trainplan::classify_flag("--num-virtual-stages-per-pipeline-rank"), flag_class::modelled);  // = --vpp
  EXPECT_EQ(trainplan::classify_flag("--tensor_model_parallel_size"), flag_class::modelled);
  EXPECT_EQ(trainplan::classify_flag("--wandb-project"), flag_class::ignored);
  EXPECT_EQ(trainplan::classify_flag("--fp8-recipe"), flag_class::modelled);  // issue 9, FP8
  EXPECT_EQ(trainplan::classify_flag("--fp4-format"), flag_class::refused);
  EXPECT_EQ(trainplan::classify_flag("--moe-router-group-topk"), flag_class::modelled);  // issue 11
  EXPECT_EQ(trainplan::classify_flag("--moe-latent-size"), flag_class::refused);
  EXPECT_EQ(trainplan::classify_flag("--cuda-graph-impl"), flag_class::refused);
  EXPECT_EQ(trainplan::classify_flag("--no-such-flag"), flag_class::unknown);
}

namespace trainplan {
namespace {

using namespace args_testing;  // NOLINT(google-build-using-namespace): the shared helpers

// Issue 29: --spec MODULE NAME. pretrain_hybrid.py requires one (hybrid_builders.py); the hybrid stack spec
// is what trainplan models, listed as ignored; any other spec builds other layers and is refused by name.
TEST(ArgsLaunchLine, TheHybridStackSpecIsAcceptedOthersRefused) {
  const args_t line = {"--vocab-size", "131072", "--", "torchrun", "--nproc_per_node", "8", "pretrain_hybrid.py",
                       "--hybrid-layer-pattern", "M-M-*-", "--hidden-size", "1024", "--num-attention-heads", "16",
                       "--seq-length", "4096", "--max-position-embeddings", "4096", "--position-embedding-type", "none",
                       "--spec"};
  const parsed_job pj = parse(concat(line, {"megatron.core.models.hybrid.hybrid_layer_specs", "hybrid_stack_spec"}));
  EXPECT_TRUE(pj.job.model.is_hybrid());
  EXPECT_THAT(pj.ignored_flags,
              ::testing::Contains("--spec megatron.core.models.hybrid.hybrid_layer_specs hybrid_stack_spec"));
  EXPECT_THAT(error_of(concat(line, {"my.module", "my_spec"})),
              ::testing::StartsWith("--spec my.module my_spec would change the layers built"));
}

}  // namespace
}  // namespace trainplan
