// Megatron-FSDP (issue 27: `--use-megatron-fsdp`, `--data-parallel-sharding-strategy`; docs/formulas.md
// §3.1, §3.7): Megatron-Core's own FSDP, its sharding strategy the ZeRO stage, counted by hand.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "args_test_support.h"
#include "trainplan/cli/args.h"
#include "trainplan/cli/cli.h"
#include "trainplan/core/estimate/comm.h"
#include "trainplan/core/estimate/memory.h"
#include "trainplan/core/estimate/time.h"
#include "trainplan/core/model/model.h"
#include "trainplan/core/search/search.h"

namespace trainplan {
namespace {

using ::testing::HasSubstr;
using namespace args_testing;  // NOLINT(google-build-using-namespace): the shared helpers

/// Llama-3 8B on one DGX-H100, DP 8, bf16 (fp32 main gradients), with `extra`.
args_t llama(const args_t& extra) {
  return concat({"--model", "llama3-8b", "--cluster", "dgx-h100", "--num-gpus", "8", "--gbs", "64", "--bf16"}, extra);
}

TEST(MegatronFsdp, TheStrategyShardsParametersGradientsAndOptimizerByHand) {
  // Per parameter held, D = 8: optim_grads_params keeps 2/D bytes of bf16 weights, 4/D of fp32 main
  // gradients and 12/D of main parameters and moments; optim_grads keeps the weights whole (2); optim is
  // the distributed optimizer (2 + 4 + 12/D).
  const double params = static_cast<double>(count_parameters(find_model("llama3-8b").spec, 1).total);
  const stage_memory z3 = estimate_memory(parse(llama({"--use-megatron-fsdp"})).job).stages[0];
  EXPECT_NEAR(z3.weights_bytes, 2.0 * params / 8, 1e-6 * z3.weights_bytes);
  EXPECT_NEAR(z3.gradients_bytes, 4.0 * params / 8, 1e-6 * z3.gradients_bytes);
  EXPECT_NEAR(z3.optimizer_bytes, 12.0 * params / 8, 1e-6 * z3.optimizer_bytes);
  const stage_memory z2 =
      estimate_memory(parse(llama({"--use-megatron-fsdp", "--data-parallel-sharding-strategy", "optim_grads"})).job).stages[0];
  EXPECT_NEAR(z2.weights_bytes, 2.0 * params, 1e-6 * z2.weights_bytes);
  EXPECT_NEAR(z2.gradients_bytes, 4.0 * params / 8, 1e-6 * z2.gradients_bytes);
  const parsed_job optim = parse(llama({"--use-megatron-fsdp", "--data-parallel-sharding-strategy", "optim"}));
  const parsed_job dist = parse(llama({"--use-distributed-optimizer"}));
  EXPECT_EQ(optim.job.training.zero_stage, 1);
  EXPECT_DOUBLE_EQ(estimate_memory(optim.job).stages[0].allocated_bytes, estimate_memory(dist.job).stages[0].allocated_bytes);
  // The gathered units (§3.7): the layer being computed, the next one prefetched and the unit's unsharded
  // gradient, in Megatron-FSDP's double buffers: 3 layers of bf16 more than the weights' shard.
  EXPECT_GT(z3.buffers_bytes, 3 * 2.0 * (params - 2.0 * 128256 * 4096) / 32 * 0.99);
}

TEST(MegatronFsdp, EachUnitIsGatheredTwiceAndItsGradientsReduceScatteredPerMicroBatch) {
  const parsed_job pj = parse(llama({"--use-megatron-fsdp"}));
  const comm_report r = analyze_comm(pj.job);
  int gathers = 0, scatters = 0;
  for (const comm_collective& c : r[parallel_dim::dp].collectives) {
    if (c.kind == collective_kind::all_gather && c.phase != comm_phase::optimizer) ++gathers;
    if (c.kind == collective_kind::reduce_scatter) ++scatters;
  }
  EXPECT_EQ(gathers, 2);   // before each unit's forward and again before its backward
  EXPECT_EQ(scatters, 1);  // every micro-batch, each unit
  // Prefetched under the compute: far less of it exposed than its traffic takes.
  const time_report t = estimate_time(pj.job);
  EXPECT_LT(t.breakdown.dp_comm_s, 0.5 * r[parallel_dim::dp].time_per_iteration_s);
  EXPECT_NEAR(t.breakdown.tp_comm_s, 0.0, 1e-12);
}

TEST(MegatronFsdp, RulesAndTheSearch) {
  EXPECT_THAT(error_of(llama({"--data-parallel-sharding-strategy", "optim_grads"})),
              HasSubstr("--data-parallel-sharding-strategy is read by Megatron-FSDP alone: give --use-megatron-fsdp"));
  EXPECT_THAT(error_of(llama({"--use-megatron-fsdp", "--data-parallel-sharding-strategy", "no_shard"})),
              HasSubstr("unknown value 'no_shard'"));
  EXPECT_THAT(error_of(concat(llama({"--use-megatron-fsdp"}), {"--pp", "2"})),
              HasSubstr("--use-megatron-fsdp with --pipeline-model-parallel-size > 1 is not modelled"));
  EXPECT_THAT(error_of(llama({"--framework", "fsdp", "--zero-stage", "3", "--use-megatron-fsdp"})),
              HasSubstr("--use-megatron-fsdp is Megatron-LM's"));
  // A Megatron search without the flag never tries Megatron-FSDP; with it, its two sharding stages alone.
  const search_request plain = parse_search_request({"--model", "llama3-8b", "--cluster", "dgx-h100", "--num-gpus", "8",
                                                      "--gbs", "64", "--bf16", "--pp", "1"});
  for (const search_candidate& c : run_search(plain.base.job, plain.space).candidates) EXPECT_LE(c.zero_stage, 1);
  const search_request fsdp = parse_search_request({"--model", "llama3-8b", "--cluster", "dgx-h100", "--num-gpus", "8",
                                                     "--gbs", "64", "--bf16", "--pp", "1", "--use-megatron-fsdp"});
  const search_result found = run_search(fsdp.base.job, fsdp.space);
  ASSERT_FALSE(found.candidates.empty());
  for (const search_candidate& c : found.candidates) EXPECT_GE(c.zero_stage, 2);
}

}  // namespace
}  // namespace trainplan
