// Megatron-Core's --defer-embedding-wgrad-compute (issue 29; NeMo-Framework-Launcher's Llama-2 70B,
// Llama-3.1 405B and Nemotron-4 340B set it): the output layer's weight-gradient GEMMs of d micro-batches
// leave their backward and run after the last rank's last backward, their inputs and output gradients
// held until then (docs/formulas.md §3.6, §5.4).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "args_test_support.h"
#include "trainplan/cli/args.h"
#include "trainplan/core/base/error.h"
#include "trainplan/core/estimate/compute.h"
#include "trainplan/core/estimate/memory.h"
#include "trainplan/core/estimate/schedule.h"
#include "trainplan/core/estimate/time.h"

namespace trainplan {
namespace {

using ::testing::HasSubstr;
using args_testing::error_of;

/// Llama-2 70B at TP 8 (sequence parallel), PP 4, 64 micro-batches of 4,096 tokens on 32 GPUs.
std::vector<std::string> llama70b(std::vector<std::string> extra = {}) {
  std::vector<std::string> a = {"--model", "llama2-70b", "--cluster", "dgx-h100", "--num-gpus", "32", "--tp", "8",
                                "--pp", "4", "--sequence-parallel", "--mbs", "1", "--gbs", "64", "--seq-length", "4096",
                                "--use-distributed-optimizer", "--recompute-granularity", "full"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

// The last stage holds d micro-batches' output-layer inputs (sequence-sharded: 4,096 × 8,192 / 8) and
// output gradients (4,096 × 32,768 / 8: the vocabulary padded to 128 × TP), bf16, one input being the
// current micro-batch's; the other stages hold nothing more.
TEST(DeferEmbeddingWgrad, TheLastStageHoldsItsBuffers) {
  const job_spec plain = parse_job_args(llama70b()).job;
  const job_spec deferred = parse_job_args(llama70b({"--defer-embedding-wgrad-compute", "--wgrad-deferral-limit", "22"})).job;
  const memory_report a = estimate_memory(plain), b = estimate_memory(deferred);
  const double per_input = 2.0 * 4096 * 8192 / 8, per_grad = 2.0 * 4096 * 32768 / 8;
  EXPECT_DOUBLE_EQ(b.stages[3].activations_bytes - a.stages[3].activations_bytes, 21 * per_input + 22 * per_grad);
  for (std::size_t s = 0; s < 3; ++s) EXPECT_DOUBLE_EQ(b.stages[s].activations_bytes, a.stages[s].activations_bytes);
  // Limit 0 (Megatron's default): every micro-batch, 64.
  const job_spec all = parse_job_args(llama70b({"--defer-embedding-wgrad-compute"})).job;
  EXPECT_DOUBLE_EQ(estimate_memory(all).stages[3].activations_bytes - a.stages[3].activations_bytes,
                   63 * per_input + 64 * per_grad);
}

// The last stage's backward loses d/m of the output layer's wgrad per micro-batch on average; its drain
// is d of them; the iteration is no longer (here the drain hides in the flush).
TEST(DeferEmbeddingWgrad, TheWgradMovesToTheDrain) {
  const job_spec plain = parse_job_args(llama70b()).job;
  const job_spec deferred = parse_job_args(llama70b({"--defer-embedding-wgrad-compute", "--wgrad-deferral-limit", "22"})).job;
  const compute_report a = estimate_compute(plain), b = estimate_compute(deferred);
  const double w = a.output.backward.weight_gradient_s;
  ASSERT_GT(w, 0);
  EXPECT_NEAR(a.stages[3].backward_s - b.stages[3].backward_s, 22.0 / 64.0 * w, 1e-12);
  EXPECT_NEAR(b.stages[3].drain_s, 22 * w, 1e-12);
  EXPECT_DOUBLE_EQ(b.stages[0].backward_s, a.stages[0].backward_s);
  EXPECT_DOUBLE_EQ(b.stages[0].drain_s, 0.0);
  const time_report ta = estimate_time(plain), tb = estimate_time(deferred);
  EXPECT_LE(tb.iteration_s, ta.iteration_s);
  EXPECT_DOUBLE_EQ(tb.pipeline.drain_exposed_s, 0.0);
}

// The schedule: 1F1B, p 4, m 8, F 1, B 2: the last rank's last backward ends at 27 of 33, so a drain of
// 6 hides; one of 10 ends the iteration at 37, 4 exposed, and the DP reduction comes after it.
TEST(DeferEmbeddingWgrad, TheDrainHidesInTheFlushOrExtendsTheIteration) {
  schedule_input in;
  in.kind = schedule_kind::one_f_one_b;
  in.num_microbatches = 8;
  in.stages.assign(4, stage_times{1.0, 2.0, 0, 0});
  const schedule_result base = run_schedule(in);
  EXPECT_DOUBLE_EQ(base.iteration_s, 33.0);
  in.stages[3].drain_s = 6.0;
  EXPECT_DOUBLE_EQ(run_schedule(in).iteration_s, 33.0);
  in.stages[3].drain_s = 10.0;
  in.stages[3].grad_reduce_s = 1.0;
  const schedule_result r = run_schedule(in);
  EXPECT_DOUBLE_EQ(r.drain_exposed_s, 4.0);
  EXPECT_DOUBLE_EQ(r.grad_reduce_exposed_s, 1.0);
  EXPECT_DOUBLE_EQ(r.iteration_s, 38.0);
  EXPECT_EQ(r.critical_stage, 3);
}

// Megatron-Core's checks (model_parallel_config.py __post_init__).
TEST(DeferEmbeddingWgrad, MegatronsChecks) {
  EXPECT_THAT(error_of({"--model", "llama2-70b", "--num-gpus", "8", "--tp", "8", "--defer-embedding-wgrad-compute"}),
              HasSubstr("--defer-embedding-wgrad-compute cannot be used when pipeline model parallel is not used"));
  EXPECT_THAT(error_of(llama70b({"--defer-embedding-wgrad-compute", "--no-gradient-accumulation-fusion"})),
              HasSubstr("cannot be used when gradient accumulation fusion is not used"));
  EXPECT_THAT(error_of(llama70b({"--defer-embedding-wgrad-compute", "--wgrad-deferral-limit", "-1"})),
              HasSubstr("--wgrad-deferral-limit should be greater than or equal to 0"));
  EXPECT_THAT(error_of({"--model", "llama2-70b", "--num-gpus", "32", "--pp", "4", "--framework", "deepspeed",
                        "--defer-embedding-wgrad-compute"}),
              HasSubstr("is Megatron-Core's"));
}

}  // namespace
}  // namespace trainplan
