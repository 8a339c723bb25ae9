// Communication overlap as Megatron-Core does it (issue 9, part 3; docs/formulas.md §5.4): each overlap
// flag reduces the exposed communication and never below zero; the flags' preconditions are Megatron's.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "args_test_support.h"
#include "trainplan/args.h"
#include "trainplan/time.h"

namespace trainplan {
namespace {

using namespace args_testing;  // NOLINT(google-build-using-namespace): the shared helpers

const args_t kLlama70b = {"--model", "llama3-70b", "--cluster", "dgx-h100", "--num-gpus", "256", "--tp", "8",
                          "--pp", "2", "--sp", "--use-distributed-optimizer", "--gbs", "256"};

time_report time_with(const args_t& more) { return estimate_time(parse(concat(kLlama70b, more)).job); }

TEST(Overlap, ParamGatherHidesUnderTheFirstForwardAndNeverBelowZero) {
  const time_report plain = time_with({"--overlap-grad-reduce"});
  const time_report overlapped = time_with({"--overlap-grad-reduce", "--overlap-param-gather"});
  // The gather (16 DP ranks over the network) is exposed without the flag ...
  double gather_s = 0;
  for (const stage_comm& c : plain.comm) gather_s = std::max(gather_s, c.param_gather_s);
  ASSERT_GT(gather_s, 0);
  // ... and the flag hides up to one first forward of it: the optimizer phase shrinks, by no more than
  // the gather itself.
  EXPECT_LT(overlapped.breakdown.optimizer_s, plain.breakdown.optimizer_s);
  EXPECT_LE(plain.breakdown.optimizer_s - overlapped.breakdown.optimizer_s, gather_s + 1e-12);
  EXPECT_GE(overlapped.breakdown.optimizer_s, 0);
  EXPECT_LT(overlapped.iteration_s, plain.iteration_s);
}

TEST(Overlap, GradReduceHidesUnderTheLastBackward) {
  const time_report plain = time_with({}), overlapped = time_with({"--overlap-grad-reduce"});
  EXPECT_LE(overlapped.breakdown.dp_comm_s, plain.breakdown.dp_comm_s);
  EXPECT_GE(overlapped.breakdown.dp_comm_s, 0);
}

TEST(Overlap, FlagsNeedWhatMegatronRequires) {
  EXPECT_EQ(error_of({"--model", "llama3-8b", "--cluster", "dgx-h100", "--num-gpus", "8", "--overlap-grad-reduce",
                      "--overlap-param-gather"}),
            "--overlap-param-gather is only supported with --use-distributed-optimizer (Megatron-LM's argument check)");
  EXPECT_EQ(error_of({"--model", "llama3-8b", "--cluster", "dgx-h100", "--num-gpus", "8",
                      "--use-distributed-optimizer", "--overlap-param-gather"}),
            "--overlap-param-gather must be used with --overlap-grad-reduce (Megatron-LM's argument check)");
}

}  // namespace
}  // namespace trainplan
