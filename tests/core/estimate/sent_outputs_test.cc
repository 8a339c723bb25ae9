// A pipeline stage's sent output held until its micro-batch's backward (issue 27; docs/formulas.md §3.5):
// freed by Megatron-LM, kept by Megatron-Core with deallocate_pipeline_outputs false
// (--keep-pipeline-outputs), by DeepSpeed as its TP partition and by torch.distributed.pipelining as sent.
// Counted by hand.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "args_test_support.h"
#include "trainplan/cli/args.h"
#include "trainplan/core/estimate/memory.h"

namespace trainplan {
namespace {

using ::testing::HasSubstr;
using namespace args_testing;  // NOLINT(google-build-using-namespace): the shared helpers

/// Each stage's activations with the outputs kept minus with them freed, bytes.
std::vector<double> kept_minus_freed(const args_t& args) {
  const memory_report kept = estimate_memory(parse(concat(args, {"--keep-pipeline-outputs"})).job);
  const memory_report freed = estimate_memory(parse(args).job);
  std::vector<double> out;
  for (std::size_t i = 0; i < kept.stages.size(); ++i) {
    out.push_back(kept.stages[i].activations_bytes - freed.stages[i].activations_bytes);
  }
  return out;
}

// Llama-3 8B (h 4,096) at TP 2 with SP, PP 4, 4,096 tokens a micro-batch in bf16: one output is
// 4,096 × 4,096 × 2 / 2 bytes. 1F1B: rank r holds min(4 − r, m) micro-batches, the last rank's ends in
// the loss (nothing sent).
TEST(SentOutputs, MegatronCoreKeepsOnePerMicroBatchHeld) {
  const args_t llama = {"--model", "llama3-8b", "--cluster", "dgx-h100", "--num-gpus", "32", "--tp", "2",
                        "--sequence-parallel", "--pp", "4", "--gbs", "64", "--seq-length", "4096", "--bf16"};
  const double one = 4096.0 * 4096 * 2 / 2;
  EXPECT_THAT(kept_minus_freed(llama), ::testing::ElementsAre(4 * one, 3 * one, 2 * one, 0.0));
  // Without SP the output is the whole sequence on every TP rank.
  args_t no_sp = llama;
  no_sp.erase(std::find(no_sp.begin(), no_sp.end(), "--sequence-parallel"));
  EXPECT_DOUBLE_EQ(kept_minus_freed(no_sp)[0], 4 * 2 * one);
}

// Interleaved, PP 4 × VPP 2 (32 layers, 4 a chunk): rank r holds (4 − r − 1)·2 + (2 − 1)·4 + 1 chunk-
// micro-batches; of the last rank's 5, virtual micro-batches 0-3 ran chunk 0 and the 5th chunk 1, whose
// output is the loss: 4 sent.
TEST(SentOutputs, TheLastRanksLastChunkSendsNothing) {
  const args_t llama = {"--model", "llama3-8b", "--cluster", "dgx-h100", "--num-gpus", "32", "--tp", "2",
                        "--sequence-parallel", "--pp", "4", "--num-layers-per-virtual-pipeline-stage", "4",
                        "--gbs", "64", "--seq-length", "4096", "--bf16"};
  const double one = 4096.0 * 4096 * 2 / 2;
  EXPECT_THAT(kept_minus_freed(llama), ::testing::ElementsAre(11 * one, 9 * one, 7 * one, 4 * one));
}

// DeepSpeed (its TP partition) and torch.distributed.pipelining (the tensor as sent) keep them without
// asking; the switch is Megatron-Core's. (DeepSpeed's bytes are pinned by BLOOM's memory tables.)
TEST(SentOutputs, OnlyMegatronCoreHasTheChoice) {
  const args_t llama = {"--model", "llama3-8b", "--cluster", "dgx-h100", "--num-gpus", "32", "--tp", "2",
                        "--pp", "4", "--gbs", "64", "--seq-length", "4096", "--bf16", "--keep-pipeline-outputs"};
  EXPECT_THAT(error_of(concat(llama, {"--framework", "deepspeed"})),
              HasSubstr("--keep-pipeline-outputs is Megatron-Core's deallocate_pipeline_outputs false; deepspeed keeps "
                        "each sent stage output until its backward already"));
  EXPECT_THAT(error_of(concat(llama, {"--framework", "fsdp", "--zero-stage", "3"})),
              HasSubstr("fsdp keeps each sent stage output"));
}

}  // namespace
}  // namespace trainplan
