// Job flags, bad input (issue 2 §4 "Bad input"): every rule a job breaks, with the message that names
// the flag and the rule.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "args_test_support.h"
#include "trainplan/cli/args.h"
#include "trainplan/cli/cli.h"
#include "trainplan/core/base/error.h"

namespace trainplan {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using namespace args_testing;  // NOLINT(google-build-using-namespace): the shared helpers

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

TEST(ArgsBadInput, InterleavingWithUnevenEndsFollowsMegatronCoresRule) {
  // Issue 16 (6): refused outright before; Megatron-Core's transformer_config.py takes it when each end's
  // layers and the middle stages' divide by the chunks.
  const std::vector<std::string> base = {"--model", "llama3.1-405b", "--cluster", "dgx-h100", "--num-gpus", "2048", "--tp",
                                         "8", "--pp", "16", "--gbs", "2048", "--seq-length", "8192"};
  auto with = [&](std::initializer_list<const char*> more) {
    std::vector<std::string> a = base;
    a.insert(a.end(), more.begin(), more.end());
    return a;
  };
  EXPECT_EQ(error_of(with({"--decoder-first-pipeline-num-layers", "7", "--decoder-last-pipeline-num-layers", "7", "--vpp", "2"})),
            "the number of layers at the first stage (7) must be divisible by --virtual-pipeline-model-parallel-size (2), "
            "Megatron-Core's rule for interleaving with an uneven split");
  EXPECT_EQ(error_of(with({"--decoder-first-pipeline-num-layers", "8", "--decoder-last-pipeline-num-layers", "6", "--vpp", "4"})),
            "the number of layers at the last stage (6) must be divisible by --virtual-pipeline-model-parallel-size (4), "
            "Megatron-Core's rule for interleaving with an uneven split");
  EXPECT_EQ(error_of(with({"--decoder-first-pipeline-num-layers", "8", "--decoder-last-pipeline-num-layers", "6",
                           "--num-layers-per-virtual-pipeline-stage", "4"})),
            "--num-layers-per-virtual-pipeline-stage with an uneven split (--decoder-first-pipeline-num-layers / "
            "--decoder-last-pipeline-num-layers): give the model chunks per rank, --virtual-pipeline-model-parallel-size, "
            "as Megatron-Core does");
  const trainplan::parsed_job ok = trainplan::parse_job_args(
      with({"--decoder-first-pipeline-num-layers", "8", "--decoder-last-pipeline-num-layers", "6", "--vpp", "2"}));
  EXPECT_EQ(ok.job.parallel.vpp, 2);
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
            "expert TP × EP (2 × 4 = 8, --expert-tensor-parallel-size × --expert-model-parallel-size; expert TP "
            "defaults to TP) must divide the ranks of a pipeline stage, TP × CP × DP = 2 × 1 × 2 = 4 (Megatron-Core's "
            "expert parallel groups)");
  // Parallel folding: expert TP 1 lets EP 4 use the TP ranks too.
  EXPECT_EQ(error_of({"--model", "mixtral-8x7b", "--ep", "4", "--tp", "2", "--etp", "1", "--num-gpus", "4"}), "");
  EXPECT_EQ(error_of({"--model", "mixtral-8x7b", "--etp", "3", "--num-gpus", "6"}),
            "--moe-ffn-hidden-size (14336) must be divisible by --expert-tensor-parallel-size (3)");
}

TEST(ArgsBadInput, EpWithoutMoe) {
  EXPECT_EQ(error_of({"--model", "llama2-7b", "--ep", "2", "--num-gpus", "8"}),
            "--expert-model-parallel-size 2 needs an MoE model (--num-experts)");
}

TEST(ArgsBadInput, UnknownModelSuggests) {
  EXPECT_THAT(error_of({"--model", "llama2-7"}),
              AllOf(StartsWith("--model: unknown model 'llama2-7'"), HasSubstr("did you mean 'llama2-7b'?")));
  EXPECT_THAT(error_of({"--model", "mixtral-8x7"}, model_need::model_only), HasSubstr("did you mean 'mixtral-8x7b'?"));
}

TEST(ArgsBadInput, UnknownGpuAndClusterSuggest) {
  EXPECT_EQ(error_of({"--model", "llama2-7b", "--gpu", "h100-sxm5-80"}),
            "--gpu: unknown GPU 'h100-sxm5-80' (did you mean 'h100-sxm5-80gb'?)");
  EXPECT_EQ(error_of({"--model", "llama2-7b", "--cluster", "dgx-h10"}),
            "--cluster: unknown cluster 'dgx-h10' (did you mean 'dgx-h100'?)");
  // Even an empty name says which flag it came from.
  EXPECT_EQ(error_of({"--model", "llama2-7b", "--cluster", ""}), "--cluster: unknown cluster ''");
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
  EXPECT_THAT(error_of({"--model", "llama2-7b", "--gpu-memory-gib", "-80"}), HasSubstr("--gpu-memory-gib must be between 0.25 and 1e+06 GiB, got -80"));
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
            "--hidden-size must be a positive integer no larger than 4194304, got 99999999999");
  EXPECT_EQ(error_of({"--model", "llama2-7b", "--num-layers", "1e12"}),
            "--num-layers must be a positive integer no larger than 16384, got 1000000000000");
  EXPECT_EQ(error_of({"--model", "llama2-7b", "--num-layers", "99999999999999999999999"}),
            "--num-layers: 99999999999999999999999 is out of range");
  EXPECT_THAT(error_of({"--model", "llama2-7b", "--seq-length", "1e30"}), StartsWith("--seq-length"));
  EXPECT_THAT(error_of({"--model", "llama2-7b", "--num-gpus", "99999999999"}),
              HasSubstr("--num-gpus must be a positive integer no larger than 1048576"));
  EXPECT_THAT(error_of({"--model", "llama2-7b", "--tp", "4611686018427387904", "--pp", "4"}),
              HasSubstr("--tensor-model-parallel-size must be a positive integer no larger than 1048576"));
  // Sizes in GiB/MiB become bytes: values outside their physical range are named, never cast into a
  // negative int64 (§7.9).
  EXPECT_EQ(error_of({"--model", "llama2-7b", "--gpu-memory-gib", "1e300"}),
            "--gpu-memory-gib must be between 0.25 and 1e+06 GiB, got 1e300");
  EXPECT_EQ(error_of({"--model", "llama2-7b", "--cuda-context-mib", "1e300"}),
            "--cuda-context-mib must be between 1 and 1e+06 MiB, got 1e300");
  EXPECT_EQ(error_of({"--model", "llama2-7b", "--nccl-buffer-mib", "1e300"}),
            "--nccl-buffer-mib must be between 0 and 100000 MiB, got 1e300");
  EXPECT_EQ(error_of({"--model", "llama2-7b", "--gpu-memory-gib", "1e-300"}),
            "--gpu-memory-gib must be between 0.25 and 1e+06 GiB, got 1e-300");
  EXPECT_THAT(error_of({"--model", "llama2-7b", "--gpu-memory-gib", "100000"}), StartsWith("--gpu-memory-gib 100000 is more than the 80 GiB"));
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
  // A stray value after a switch names the switch it was meant for; elsewhere it is a positional argument.
  EXPECT_EQ(error_of({"--model", "llama2-7b", "--use-flash-attn", "true"}),
            "--use-flash-attn is a switch and takes no value, got 'true'");
  EXPECT_THAT(error_of({"true", "--model", "llama2-7b"}), StartsWith("unexpected argument 'true'"));
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
  // file:line first, then the flag that named the file.
  EXPECT_EQ(error_of({"--model", field}),
            field + ":2: field 'num_layers': expected a positive integer, got -3 (--model)");
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
                  " needs --framework deepspeed or fsdp, or Megatron-FSDP (--use-megatron-fsdp; without it "
                  "Megatron-LM shards only the optimizer: --use-distributed-optimizer, i.e. stage 1)");
  }
  // Megatron is the default framework.
  EXPECT_THAT(error_of({"--model", "llama2-7b", "--zero-stage", "3"}), StartsWith("--zero-stage 3 needs --framework"));
  EXPECT_EQ(error_of({"--model", "llama2-7b", "--zero-stage", "4", "--framework", "deepspeed"}),
            "--zero-stage must be 0, 1, 2 or 3, got 4");
  // They parse with DeepSpeed (no pipeline) and FSDP.
  EXPECT_EQ(parse({"--model", "llama2-7b", "--zero-stage", "3", "--framework", "deepspeed"}).job.training.zero_stage, 3);
  EXPECT_EQ(parse({"--model", "llama2-7b", "--zero-stage", "3", "--framework", "fsdp"}).job.training.zero_stage, 3);
}

// §5.3: --torch-compile is torchtitan's compile of each block: refused with another framework, and with the
// eager kernels it replaces, naming both flags.
TEST(ArgsBadInput, TorchCompileIsTorchtitansAndFusesItsKernels) {
  EXPECT_EQ(error_of({"--model", "llama2-7b", "--torch-compile"}),
            "--torch-compile is torchtitan's torch.compile of each block, modelled with --framework fsdp; megatron "
            "compiles its own way");
  const std::vector<std::string> fsdp = {"--model", "llama2-7b", "--framework", "fsdp", "--zero-stage", "3", "--torch-compile"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = fsdp;
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  EXPECT_EQ(error_of(with({"--norm-kernel", "eager"})),
            "--norm-kernel eager contradicts --torch-compile: Inductor lowers the RMSNorm to one fused kernel");
  EXPECT_EQ(error_of(with({"--no-bias-swiglu-fusion"})),
            "--no-bias-swiglu-fusion's unfused SwiGLU contradicts --torch-compile: Inductor fuses silu(w1(x)) * w3(x) into "
            "one kernel");
  EXPECT_TRUE(parse(fsdp).job.training.torch_compile);
  EXPECT_EQ(error_of({"--model", "llama2-7b", "--framework", "deepspeed", "--torch-compile-loss"}),
            "--torch-compile-loss is torchtitan's compiled F.cross_entropy, modelled with --framework fsdp; deepspeed "
            "runs its own loss (§3.6)");
  EXPECT_TRUE(parse(with({"--torch-compile-loss"})).job.training.torch_compile_loss);
  // Async TP is torchtitan's, under torch.compile, at TP > 1 (torchtitan's own checks).
  EXPECT_EQ(error_of({"--model", "llama2-7b", "--tp", "2", "--sequence-parallel", "--async-tensor-parallel"}),
            "--async-tensor-parallel is torchtitan's (symmetric-memory micro-pipelining under torch.compile), "
            "modelled with --framework fsdp; Megatron-Core overlaps TP with --tp-comm-overlap");
  EXPECT_EQ(error_of({"--model", "llama2-7b", "--framework", "fsdp", "--zero-stage", "3", "--tp", "2",
                      "--sequence-parallel", "--async-tensor-parallel"}),
            "--async-tensor-parallel needs --torch-compile: the micro-pipeline TP pass is Inductor's (torchtitan's "
            "check: \"Async TP requires torch.compile\")");
  EXPECT_EQ(error_of(with({"--async-tensor-parallel"})), "--async-tensor-parallel needs --tensor-model-parallel-size above 1");
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
  EXPECT_EQ(error_of({"--model", "llama2-7b", "--framework", "fsdp", "--pp", "2"}),
            "--framework fsdp with a pipeline is FSDP2's fully_shard under torch.distributed.pipelining (torchtitan): "
            "--zero-stage 3, not 0 with --pipeline-model-parallel-size 2");
  EXPECT_EQ(error_of({"--model", "llama2-7b", "--framework", "fsdp", "--zero-stage", "3", "--pp", "3", "--num-gpus", "24"}),
            "--num-layers (32 + 1 embedding + 1 output) must be divisible by --pipeline-model-parallel-size (3): "
            "torchtitan's split (generate_llm_fqn_per_model_part) gives the remainder to the first stages, which is not "
            "modelled");
  EXPECT_THAT(error_of({"--model", "llama2-7b", "--recompute-num-layers", "2"}),
              HasSubstr("--recompute-num-layers needs --recompute-granularity full"));
}

TEST(ArgsBadInput, SequenceAndContextParallelDivisibility) {
  EXPECT_THAT(error_of({"--model", "llama2-7b", "--seq-length", "4098", "--tp", "4", "--sp", "--num-gpus", "8"}),
              HasSubstr("(with --sequence-parallel)"));
  EXPECT_THAT(error_of({"--model", "llama2-7b", "--seq-length", "4098", "--cp", "2", "--num-gpus", "8"}),
              HasSubstr("--seq-length (4098) must be divisible by 2 × --context-parallel-size (4)"));
}

// `trainplan model` reads no layout but pads the vocabulary by TP: the TP rule still holds (issue 15:
// --tp 0 was a division by zero, --tp -1 padded the vocabulary down, 2^31 gave 274 billion rows).
TEST(ArgsBadInput, ModelOnlyStillChecksTp) {
  for (const char* tp : {"0", "-1", "2147483648"}) {
    EXPECT_EQ(error_of({"--model", "llama2-7b", "--tp", tp}, model_need::model_only),
              std::string("--tensor-model-parallel-size must be a positive integer no larger than 1048576, got ") + tp);
  }
}

}  // namespace
}  // namespace trainplan
