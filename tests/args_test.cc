// Job flags (issue 2 §4 "Parallel and training configuration" and "Bad input"): Megatron-LM's names and
// short aliases, --flag=value, --model with overrides, whole launch lines (torchrun, python -m
// torch.distributed.run, deepspeed), presets, and every bad-input rule with its message.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "trainplan/cli.h"
#include "trainplan/args.h"
#include "trainplan/error.h"
#include "trainplan/memory.h"
#include "trainplan/model.h"

namespace trainplan {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using args_t = std::vector<std::string>;

parsed_job parse(const args_t& args) { return parse_job_args(args); }

/// The input_error message of parsing `args`, or "" when it parses.
std::string error_of(const args_t& args, model_need need = model_need::full_job) {
  try {
    parse_job_args(args, need);
  } catch (const input_error& e) {
    return e.what();
  }
  return "";
}

args_t concat(args_t a, const args_t& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "args_test_" + name;
  std::ofstream(path) << text;
  return path;
}

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
  EXPECT_EQ(pj.job.model.kv_width(), 8 * 128);
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

TEST(ArgsLaunchLine, HarmlessFlagsAreIgnoredAndListed) {
  const parsed_job flags = parse(concat(kMegatronArgs, kSixteenGpus));
  const parsed_job launch = parse(concat(
      concat({"--", "torchrun", "--nproc_per_node", "8", "--nnodes", "2", "pretrain_gpt.py"}, kMegatronArgs),
      {"--lr", "3e-4", "--min-lr", "3e-5", "--train-iters", "500000", "--save", "/ckpt", "--load", "/ckpt",
       "--data-path", "/data/a_text_document", "--weight-decay", "0.1", "--clip-grad", "1.0", "--log-interval",
       "10", "--seed", "1234", "--adam-beta2", "0.95", "--tokenizer-type", "GPT2BPETokenizer", "--split",
       "949,50,1", "--wandb-project", "x", "--no-masked-softmax-fusion", "--lr-warmup-fraction", "0.01"}));
  for (const char* f : {"--lr", "--min-lr", "--train-iters", "--save", "--load", "--data-path", "--weight-decay",
                        "--clip-grad", "--log-interval", "--seed", "--adam-beta2", "--tokenizer-type", "--split",
                        "--wandb-project", "--no-masked-softmax-fusion", "--lr-warmup-fraction"}) {
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
  EXPECT_THAT(error_of(concat(line, {"--fp8-format", "hybrid"})),
              AllOf(StartsWith("--fp8-format "), HasSubstr("not modelled")));
  EXPECT_THAT(error_of(concat(line, {"--expert-tensor-parallel-size", "2"})),
              StartsWith("--expert-tensor-parallel-size would change the estimate but is not modelled"));
  // The same outside a launch line.
  EXPECT_THAT(error_of({"--model", "llama2-7b", "--fp8-format", "e4m3"}), StartsWith("--fp8-format "));
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

// ---- bad input: each rule with its message ---------------------------------------------------------

TEST(ArgsBadInput, HeadsNotDivisibleByTp) {
  EXPECT_EQ(error_of({"--model", "bloom-176b", "--tp", "5", "--num-gpus", "5"}),
            "--num-attention-heads (112) must be divisible by --tensor-model-parallel-size (5)");
}

TEST(ArgsBadInput, QueryGroupsNotDivisibleByTp) {
  // llama3-70b: 64 heads, 8 query groups; TP 16 divides the heads but not the groups.
  EXPECT_EQ(error_of({"--model", "llama3-70b", "--tp", "16", "--num-gpus", "16"}),
            "--num-query-groups (8) must be divisible by --tensor-model-parallel-size (16)");
}

TEST(ArgsBadInput, HeadsNotDivisibleByQueryGroups) {
  EXPECT_EQ(error_of({"--model", "llama2-7b", "--num-query-groups", "5", "--num-gpus", "8"}),
            "--num-attention-heads (32) must be divisible by --num-query-groups (5)");
}

TEST(ArgsBadInput, LayersNotDivisibleAcrossPp) {
  // llama2-7b has 32 layers.
  EXPECT_EQ(error_of({"--model", "llama2-7b", "--pp", "3", "--num-gpus", "3"}),
            "--num-layers (32) must be divisible by --pipeline-model-parallel-size (3) without an explicit split "
            "(--decoder-first-pipeline-num-layers / --decoder-last-pipeline-num-layers)");
  // With an explicit split it is fine: 10 + 11 + 11.
  const parsed_job pj = parse({"--model", "llama2-7b", "--pp", "3", "--num-gpus", "3",
                               "--decoder-first-pipeline-num-layers", "10"});
  const auto stages = pipeline_layout(pj.job);
  ASSERT_EQ(stages.size(), 3u);
  EXPECT_EQ(stages[0].num_layers, 10);
  EXPECT_EQ(stages[1].num_layers, 11);
  EXPECT_EQ(stages[2].num_layers, 11);
  // A split that does not add up.
  EXPECT_THAT(error_of({"--model", "llama2-7b", "--pp", "3", "--num-gpus", "3", "--decoder-first-pipeline-num-layers",
                        "9"}),
              HasSubstr("must split evenly over the other 2 pipeline stages"));
}

TEST(ArgsBadInput, LayersNotDivisibleAcrossPpTimesVpp) {
  // 32 layers, PP 4 → 8 per rank; VPP 3 does not divide it.
  EXPECT_EQ(error_of({"--model", "llama2-7b", "--pp", "4", "--vpp", "3", "--num-gpus", "8", "--gbs", "8"}),
            "--virtual-pipeline-model-parallel-size 3 needs --num-layers divisible by "
            "--pipeline-model-parallel-size × it, with PP > 1");
  EXPECT_EQ(error_of({"--model", "llama2-7b", "--pp", "4", "--num-layers-per-virtual-pipeline-stage", "3",
                      "--num-gpus", "8", "--gbs", "8"}),
            "--num-layers / --pipeline-model-parallel-size (8) must be divisible by "
            "--num-layers-per-virtual-pipeline-stage (3)");
  EXPECT_EQ(error_of({"--model", "llama2-7b", "--pp", "1", "--vpp", "2", "--num-gpus", "8"}),
            "--virtual-pipeline-model-parallel-size 2 needs --num-layers divisible by "
            "--pipeline-model-parallel-size × it, with PP > 1");
  // Interleaving also needs the micro-batches to be a multiple of PP.
  EXPECT_THAT(error_of({"--model", "llama2-7b", "--pp", "4", "--vpp", "2", "--num-gpus", "8", "--gbs", "6"}),
              HasSubstr("to be a multiple of --pipeline-model-parallel-size (4)"));
}

TEST(ArgsBadInput, GbsNotAMultipleOfMbsTimesDp) {
  EXPECT_EQ(error_of({"--model", "llama2-7b", "--num-gpus", "8", "--mbs", "2", "--gbs", "100"}),
            "--global-batch-size (100) must be a multiple of --micro-batch-size × DP (2 × 8 = 16)");
}

TEST(ArgsBadInput, WorldSizeNotAMultipleOfModelParallel) {
  EXPECT_EQ(error_of({"--model", "llama2-7b", "--tp", "4", "--pp", "2", "--cp", "2", "--num-gpus", "24"}),
            "world size 24 (--num-gpus, or --num-nodes × --gpus-per-node) is not a multiple of TP×PP×CP = 4×2×2 = 16 "
            "(--tensor-model-parallel-size, --pipeline-model-parallel-size, --context-parallel-size)");
  // --dp that does not make the world size given.
  EXPECT_EQ(error_of({"--model", "llama2-7b", "--tp", "2", "--dp", "3", "--num-gpus", "8"}),
            "--dp 3 × TP×PP×CP 2 does not make the world size 8 (--num-gpus or --num-nodes × --gpus-per-node)");
  EXPECT_THAT(error_of({"--model", "llama2-7b", "--num-nodes", "2", "--gpus-per-node", "4", "--num-gpus", "16"}),
              HasSubstr("--num-gpus 16 exceeds --num-nodes × --gpus-per-node = 8"));
}

TEST(ArgsBadInput, EpMustDivideExperts) {
  EXPECT_EQ(error_of({"--model", "mixtral-8x7b", "--ep", "3", "--num-gpus", "24"}),
            "--num-experts (8) must be divisible by --expert-model-parallel-size (3)");
  EXPECT_EQ(error_of({"--model", "mixtral-8x7b", "--ep", "4", "--tp", "2", "--num-gpus", "4"}),
            "DP×CP (2) must be divisible by --expert-model-parallel-size (4)");
}

TEST(ArgsBadInput, EpWithoutMoe) {
  EXPECT_EQ(error_of({"--model", "llama2-7b", "--ep", "2", "--num-gpus", "8"}),
            "--expert-model-parallel-size 2 needs an MoE model (--num-experts)");
}

TEST(ArgsBadInput, UnknownModelSuggests) {
  EXPECT_THAT(error_of({"--model", "llama2-7"}),
              AllOf(StartsWith("unknown model 'llama2-7'"), HasSubstr("did you mean 'llama2-7b'?")));
  EXPECT_THAT(error_of({"--model", "mixtral-8x7"}, model_need::model_only), HasSubstr("did you mean 'mixtral-8x7b'?"));
}

TEST(ArgsBadInput, UnknownGpuAndClusterSuggest) {
  EXPECT_EQ(error_of({"--model", "llama2-7b", "--gpu", "h100-sxm5-80"}),
            "unknown GPU 'h100-sxm5-80' (did you mean 'h100-sxm5-80gb'?)");
  EXPECT_EQ(error_of({"--model", "llama2-7b", "--cluster", "dgx-h10"}),
            "unknown cluster 'dgx-h10' (did you mean 'dgx-h100'?)");
  EXPECT_THAT(error_of({"--model", "llama2-7b", "--cluster", "jean-zay-a10"}), HasSubstr("did you mean 'jean-zay-a100'?"));
  // A name cut short is too far in edits but begins a known one: the shortest such is suggested.
  EXPECT_THAT(error_of({"--model", "llama2-7b", "--cluster", "jean-zay"}), HasSubstr("did you mean 'jean-zay-a100'?"));
}

TEST(ArgsBadInput, ShortenedNamesSuggestTheShortestCompletion) {
  EXPECT_EQ(nearest_name("jean-zay", {"dgx-a100", "jean-zay-v100-32gb", "jean-zay-a100"}), "jean-zay-a100");
  EXPECT_EQ(nearest_name("--micro-batch", {"--micro-batch-size", "--global-batch-size"}), "--micro-batch-size");
  EXPECT_EQ(nearest_name("--mic", {"--micro-batch-size"}), "");  // three letters: too short to guess from
  EXPECT_EQ(nearest_name("zzzzzzzz", {"dgx-a100", "jean-zay-a100"}), "");
}

TEST(ArgsBadInput, UnknownFlagSuggests) {
  EXPECT_EQ(error_of({"--model", "llama2-7b", "--tesnor-model-parallel-size", "2"}),
            "unknown flag --tesnor-model-parallel-size (did you mean '--tensor-model-parallel-size'?); "
            "`trainplan help flags` lists them");
  EXPECT_THAT(error_of({"--model", "llama2-7b", "--micro-batch-sizes", "2"}), HasSubstr("did you mean '--micro-batch-size'?"));
  EXPECT_THAT(error_of({"--model", "llama2-7b", "--micro-batch", "2"}), HasSubstr("did you mean '--micro-batch-size'?"));
  EXPECT_THAT(error_of({"--model", "llama2-7b", "--use-flash-attention", "2"}), HasSubstr("did you mean"));
  EXPECT_THAT(error_of({"--model", "llama2-7b", "--framework", "deepsped"}),
              AllOf(StartsWith("--framework: unknown value 'deepsped'"), HasSubstr("did you mean 'deepspeed'?")));
  EXPECT_THAT(error_of({"--model", "llama2-7b", "--recompute-granularity", "selectve"}),
              HasSubstr("did you mean 'selective'?"));
}

TEST(ArgsBadInput, NegativeSizes) {
  EXPECT_EQ(error_of({"--model", "llama2-7b", "--tp", "-2"}),
            "--tensor-model-parallel-size must be a positive integer no larger than 1048576, got -2");
  EXPECT_EQ(error_of({"--model", "llama2-7b", "--mbs", "-1"}),
            "--micro-batch-size must be a positive integer no larger than 1048576, got -1");
  EXPECT_EQ(error_of({"--model", "llama2-7b", "--gbs", "-8"}), "--gbs must be a positive integer, got -8");
  EXPECT_EQ(error_of({"--model", "llama2-7b", "--num-layers", "-4"}), "--num-layers must be a positive integer, got -4");
  EXPECT_EQ(error_of({"--model", "mixtral-8x7b", "--num-experts", "-8"}), "--num-experts must not be negative, got -8");
  EXPECT_THAT(error_of({"--model", "llama2-7b", "--num-gpus", "-8"}), HasSubstr("--num-gpus must be a positive integer"));
  EXPECT_THAT(error_of({"--model", "llama2-7b", "--num-nodes", "-1"}), HasSubstr("--num-nodes must be a positive integer"));
  EXPECT_THAT(error_of({"--model", "llama2-7b", "--gpus-per-node", "-8"}),
              HasSubstr("--gpus-per-node must be a positive integer"));
  EXPECT_THAT(error_of({"--model", "llama2-7b", "--zero-stage", "-1", "--framework", "deepspeed"}),
              HasSubstr("--zero-stage must be 0, 1, 2 or 3, got -1"));
  EXPECT_THAT(error_of({"--model", "llama2-7b", "--gpu-memory-gib", "-80"}), HasSubstr("--gpu-memory-gib must be positive"));
  EXPECT_THAT(error_of({"--model", "llama2-7b", "--pp", "4", "--num-layers-per-virtual-pipeline-stage", "-2"}),
              HasSubstr("--num-layers-per-virtual-pipeline-stage"));
  EXPECT_THAT(error_of({"--model", "llama2-7b", "--pp", "4", "--decoder-first-pipeline-num-layers", "-5"}),
              HasSubstr("--decoder-first-pipeline-num-layers"));
}

TEST(ArgsBadInput, ZeroSizes) {
  EXPECT_EQ(error_of({"--model", "llama2-7b", "--tp", "0"}),
            "--tensor-model-parallel-size must be a positive integer no larger than 1048576, got 0");
  EXPECT_EQ(error_of({"--model", "llama2-7b", "--pp", "0"}),
            "--pipeline-model-parallel-size must be a positive integer no larger than 1048576, got 0");
  EXPECT_EQ(error_of({"--model", "llama2-7b", "--mbs", "0"}),
            "--micro-batch-size must be a positive integer no larger than 1048576, got 0");
  EXPECT_EQ(error_of({"--model", "llama2-7b", "--num-layers", "0"}), "--num-layers must be a positive integer, got 0");
  EXPECT_EQ(error_of({"--model", "llama2-7b", "--virtual-pipeline-model-parallel-size", "0"}),
            "--virtual-pipeline-model-parallel-size must be a positive integer, got 0");
  // Zero where 0 is also an internal "not given": must not fall back silently to a default.
  for (const char* flag : {"--num-gpus", "--num-nodes", "--gpus-per-node", "--hidden-size", "--ffn-hidden-size",
                           "--seq-length", "--vocab-size", "--kv-channels", "--num-query-groups", "--gbs"}) {
    SCOPED_TRACE(flag);
    EXPECT_THAT(error_of({"--model", "llama2-7b", flag, "0"}),
                AllOf(StartsWith(std::string(flag)), HasSubstr("must be a positive integer"), HasSubstr("got 0")));
  }
}

TEST(ArgsBadInput, AbsurdSizesDoNotWrap) {
  EXPECT_EQ(error_of({"--model", "llama2-7b", "--hidden-size", "99999999999"}),
            "model field 'hidden_size' (--hidden-size) must be a positive integer no larger than 4194304, got "
            "99999999999");
  EXPECT_EQ(error_of({"--model", "llama2-7b", "--num-layers", "1e12"}),
            "model field 'num_layers' (--num-layers) must be a positive integer no larger than 16384, got "
            "1000000000000");
  EXPECT_EQ(error_of({"--model", "llama2-7b", "--num-layers", "99999999999999999999999"}),
            "--num-layers: 99999999999999999999999 is out of range");
  EXPECT_THAT(error_of({"--model", "llama2-7b", "--seq-length", "1e30"}), StartsWith("--seq-length"));
  EXPECT_THAT(error_of({"--model", "llama2-7b", "--num-gpus", "99999999999"}),
              HasSubstr("--num-gpus must be a positive integer no larger than 16777216"));
  EXPECT_THAT(error_of({"--model", "llama2-7b", "--tp", "4611686018427387904", "--pp", "4"}),
              HasSubstr("--tensor-model-parallel-size must be a positive integer no larger than 1048576"));
  // Sizes in GiB/MiB become bytes: huge values are named, not cast into a negative int64.
  EXPECT_EQ(error_of({"--model", "llama2-7b", "--gpu-memory-gib", "1e300"}),
            "--gpu-memory-gib: 1e300 is absurdly large (more than 2^62 bytes)");
  EXPECT_EQ(error_of({"--model", "llama2-7b", "--cuda-context-mib", "1e300"}),
            "--cuda-context-mib: 1e300 is absurdly large (more than 2^62 bytes)");
  EXPECT_EQ(error_of({"--model", "llama2-7b", "--nccl-buffer-mib", "1e300"}),
            "--nccl-buffer-mib: 1e300 is absurdly large (more than 2^62 bytes)");
  EXPECT_EQ(error_of({"--model", "llama2-7b", "--gpu-memory-gib", "1e-300"}),
            "--gpu-memory-gib: 1e-300 is less than one byte");
  EXPECT_THAT(error_of({"--model", "llama2-7b", "--gpu-memory-gib", "100000"}), HasSubstr("must not exceed"));
  // The largest sizes each field allows still give a finite answer or a clear error, never a wrapped count.
  const std::string big = error_of({"--num-layers", "16384", "--hidden-size", "4194304", "--num-attention-heads",
                                    "65536", "--ffn-hidden-size", "4194304", "--seq-length", "67108864",
                                    "--vocab-size", "67108864", "--num-gpus", "1"});
  if (!big.empty()) {
    EXPECT_THAT(big, HasSubstr("absurd"));
  }
}

TEST(ArgsBadInput, NonNumericValues) {
  EXPECT_EQ(error_of({"--model", "llama2-7b", "--tp", "four"}), "--tp expects an integer, got 'four'");
  EXPECT_EQ(error_of({"--model", "llama2-7b", "--num-layers", "3.5"}), "--num-layers expects an integer, got '3.5'");
  EXPECT_EQ(error_of({"--model", "llama2-7b", "--mbs", "2x"}), "--mbs expects an integer, got '2x'");
  EXPECT_EQ(error_of({"--model", "llama2-7b", "--tp="}), "--tp expects an integer, got ''");
  EXPECT_EQ(error_of({"--model", "llama2-7b", "--tp", "0x4"}), "--tp expects an integer, got '0x4'");
  EXPECT_EQ(error_of({"--model", "llama2-7b", "--tp", "inf"}), "--tp expects an integer, got 'inf'");
  EXPECT_EQ(parse({"--model", "llama2-7b", "--num-gpus", "1.6e1"}).job.num_gpus, 16);  // 1e9-style whole numbers
  EXPECT_EQ(error_of({"--model", "llama2-7b", "--gpu-memory-gib", "lots"}),
            "--gpu-memory-gib expects a number, got 'lots'");
  EXPECT_EQ(error_of({"--model", "llama2-7b", "--hidden-dropout", "nan"}), "--hidden-dropout expects a number, got 'nan'");
}

TEST(ArgsBadInput, MissingValue) {
  EXPECT_EQ(error_of({"--model", "llama2-7b", "--tp"}), "--tp needs a value (N)");
  EXPECT_EQ(error_of({"--model"}), "--model needs a value (NAME|FILE)");
  // A flag where the value should be: the value is missing, not "--pp".
  EXPECT_EQ(error_of({"--model", "llama2-7b", "--tp", "--pp", "2"}), "--tp needs a value (N)");
}

TEST(ArgsBadInput, SwitchGivenAValue) {
  EXPECT_EQ(error_of({"--model", "llama2-7b", "--sequence-parallel=true"}),
            "--sequence-parallel is a switch and takes no value");
  EXPECT_EQ(error_of({"--model", "llama2-7b", "--bf16=1"}), "--bf16 is a switch and takes no value");
  // A stray value after a switch is a positional argument, named.
  EXPECT_THAT(error_of({"--model", "llama2-7b", "--use-flash-attn", "true"}), StartsWith("unexpected argument 'true'"));
}

TEST(ArgsBadInput, NoModel) {
  EXPECT_THAT(error_of({"--tp", "2"}), StartsWith("no model: give --model NAME|FILE"));
}

TEST(ArgsBadInput, MalformedModelFilesGiveTheirLine) {
  const std::string json = write_temp("bad.json", "{\n  \"num_layers\": 4,\n  \"hidden_size\": ,\n}\n");
  EXPECT_THAT(error_of({"--model", json}), AllOf(StartsWith(json + ":3: "), HasSubstr("syntax error")));
  const std::string yaml = write_temp("bad.yaml", "num_layers: 4\n  hidden_size: 3\n");
  EXPECT_THAT(error_of({"--model", yaml}), StartsWith(yaml + ":2: "));
  const std::string field = write_temp("field.yaml", "base: llama2-7b\nnum_layers: -3\n");
  EXPECT_EQ(error_of({"--model", field}), field + ":2: field 'num_layers': expected a positive integer, got -3");
  const std::string hf = write_temp("config.json", "{\n  \"model_type\": \"llama\",\n  \"hidden_size\": 4096\n  \"x\": 1\n}\n");
  EXPECT_THAT(error_of({"--model", hf}), StartsWith(hf + ":4: "));
  EXPECT_THAT(error_of({"--model", "/nonexistent/model.yaml"}), HasSubstr("/nonexistent/model.yaml"));
}

TEST(ArgsBadInput, MalformedClusterFilesGiveTheirLine) {
  const std::string dir = TRAINPLAN_TEST_DATA_DIR;
  EXPECT_THAT(error_of({"--model", "llama2-7b", "--cluster", dir + "/cluster/malformed.yaml"}),
              StartsWith(dir + "/cluster/malformed.yaml:3: "));
  EXPECT_THAT(error_of({"--model", "llama2-7b", "--cluster", dir + "/cluster/malformed.json"}),
              StartsWith(dir + "/cluster/malformed.json:3: "));
}

TEST(ArgsBadInput, ZeroTwoAndThreeNeedDeepSpeedOrFsdp) {
  for (const char* stage : {"2", "3"}) {
    EXPECT_EQ(error_of({"--model", "llama2-7b", "--framework", "megatron", "--zero-stage", stage}),
              std::string("--zero-stage ") + stage +
                  " needs --framework deepspeed or fsdp (Megatron-LM shards only the optimizer: "
                  "--use-distributed-optimizer, i.e. stage 1)");
  }
  // Megatron is the default framework.
  EXPECT_THAT(error_of({"--model", "llama2-7b", "--zero-stage", "3"}), StartsWith("--zero-stage 3 needs --framework"));
  EXPECT_EQ(error_of({"--model", "llama2-7b", "--zero-stage", "4", "--framework", "deepspeed"}),
            "--zero-stage must be 0, 1, 2 or 3, got 4");
  // They parse with DeepSpeed (no pipeline) and FSDP.
  EXPECT_EQ(parse({"--model", "llama2-7b", "--zero-stage", "3", "--framework", "deepspeed"}).job.training.zero_stage, 3);
  EXPECT_EQ(parse({"--model", "llama2-7b", "--zero-stage", "3", "--framework", "fsdp"}).job.training.zero_stage, 3);
}

TEST(ArgsBadInput, DeepSpeedZeroTwoWithPipeline) {
  EXPECT_EQ(error_of({"--model", "llama2-7b", "--framework", "deepspeed", "--zero-stage", "2", "--pp", "2"}),
            "DeepSpeed's pipeline engine runs ZeRO stage 0 or 1 only: --zero-stage 2 with "
            "--pipeline-model-parallel-size 2");
  EXPECT_THAT(error_of({"--model", "llama2-7b", "--deepspeed", "--zero-stage", "3", "--pp", "4"}),
              HasSubstr("--zero-stage 3 with --pipeline-model-parallel-size 4"));
}

TEST(ArgsBadInput, FrameworkMismatches) {
  EXPECT_THAT(error_of({"--model", "llama2-7b", "--framework", "deepspeed", "--use-distributed-optimizer"}),
              StartsWith("--use-distributed-optimizer is Megatron-LM's"));
  EXPECT_THAT(error_of({"--model", "llama2-7b", "--framework", "fsdp", "--zero-stage", "1"}),
              StartsWith("--framework fsdp has no ZeRO stage 1"));
  EXPECT_THAT(error_of({"--model", "llama2-7b", "--framework", "fsdp", "--pp", "2"}),
              HasSubstr("--framework fsdp with --pipeline-model-parallel-size > 1 is not modelled"));
  EXPECT_THAT(error_of({"--model", "llama2-7b", "--recompute-num-layers", "2"}),
              HasSubstr("--recompute-num-layers needs --recompute-granularity full"));
}

TEST(ArgsBadInput, SequenceAndContextParallelDivisibility) {
  EXPECT_THAT(error_of({"--model", "llama2-7b", "--seq-length", "4098", "--tp", "4", "--sp", "--num-gpus", "8"}),
              HasSubstr("(with --sequence-parallel)"));
  EXPECT_THAT(error_of({"--model", "llama2-7b", "--seq-length", "4098", "--cp", "2", "--num-gpus", "8"}),
              HasSubstr("--seq-length (4098) must be divisible by 2 × --context-parallel-size (4)"));
}

}  // namespace
}  // namespace trainplan
