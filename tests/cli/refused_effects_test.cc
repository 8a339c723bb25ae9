// Refused flags say what they would change (issue 29), and the generated Megatron-Core lists classify
// every name they hold as they say (src/cli/refused_effects.cc, megatron_core_{ignored,refused}.inc).
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "args_test_support.h"
#include "trainplan/cli/args.h"

namespace trainplan {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr const char* kRefusedList[] = {
#include "cli/megatron_core_refused.inc"
};
constexpr const char* kIgnoredList[] = {
#include "cli/megatron_core_ignored.inc"
};

TEST(RefusedEffects, EveryRefusedMegatronCoreFlagIsRefusedAndSaysWhatItWouldChange) {
  for (const char* flag : kRefusedList) {
    EXPECT_EQ(classify_flag(flag), flag_class::refused) << flag << ": listed as refused but read otherwise";
    EXPECT_FALSE(refused_flag_effect(flag).empty()) << flag << ": no row in refused_effects.cc";
  }
}

TEST(RefusedEffects, EveryIgnoredMegatronCoreFlagIsIgnored) {
  for (const char* flag : kIgnoredList) {
    const std::string name = flag;
    if (name.ends_with("*")) continue;
    EXPECT_EQ(classify_flag(name), flag_class::ignored) << name;
  }
}

TEST(RefusedEffects, LongestPrefixOrExactName) {
  EXPECT_THAT(std::string(refused_flag_effect("--cuda-graph-scope")), HasSubstr("CUDA graphs"));
  EXPECT_THAT(std::string(refused_flag_effect("--fp4-recipe")), HasSubstr("NVFP4"));
  // "--fp8" is an exact row: it does not describe the FP8 flags that start with it.
  EXPECT_THAT(std::string(refused_flag_effect("--fp8")), HasSubstr("--fp8-format"));
  EXPECT_TRUE(refused_flag_effect("--fp8-recipe").empty());
  EXPECT_TRUE(refused_flag_effect("--tensor-model-parallel-size").empty());
  EXPECT_THAT(std::string(refused_flag_effect("--ds-sequence-parallel-fpdt-chunk-size")), HasSubstr("FPDT"));
}

using namespace args_testing;  // NOLINT(google-build-using-namespace): the shared helpers

TEST(RefusedEffects, TheRefusalNamesTheFlagAndWhatItWouldChange) {
  const args_t base = {"--model", "llama3-8b", "--num-gpus", "8"};
  auto with = [&](const args_t& extra) { return concat(base, extra); };
  EXPECT_EQ(error_of(with({"--cuda-graph-impl", "local"})),
            "--cuda-graph-impl would change the time and the memory (kernel launches replayed from captured CUDA "
            "graphs, and the graphs' static memory pools), which trainplan does not model; remove it to get the "
            "estimate without it");
  EXPECT_THAT(error_of(with({"--first-last-layers-bf16"})),
              HasSubstr("--first-last-layers-bf16 would change the precision of the first and last layers' GEMMs"));
  EXPECT_THAT(error_of(with({"--batch-size", "4"})), HasSubstr("give --micro-batch-size"));
  // Reclassified from refused: deprecated or inference-only, they change no training estimate.
  for (const char* ignored : {"--fp8-interval", "--fp8-margin", "--cache-mla-latents"}) {
    EXPECT_EQ(classify_flag(ignored), flag_class::ignored) << ignored;
  }
  // Modelled flags the generated refused list once shadowed.
  EXPECT_EQ(classify_flag("--use-precision-aware-optimizer"), flag_class::modelled);
}

TEST(RefusedEffects, HelpFlagsListsIgnoredAndRefusedFlagsWithWhatTheyWouldChange) {
  const std::string help = classified_flags_help();
  EXPECT_THAT(help, HasSubstr("read and ignored"));
  EXPECT_THAT(help, HasSubstr("--tensorboard-dir"));
  EXPECT_THAT(help, HasSubstr("--moe-expert-parallel-size 1 (another value would change"));
  EXPECT_THAT(help, HasSubstr("the GEMM rate and the weight copies of FP4 (NVFP4) training:\n    --fp4-format"));
  // No refused flag without its mechanism: an empty effect would print a bare "  :" heading.
  EXPECT_THAT(help, Not(HasSubstr("\n  :\n")));
}

}  // namespace
}  // namespace trainplan
