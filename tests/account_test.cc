// One account per fact (issue 17): the models that read the same fact read it from one place, so the
// figures they print agree. Each test here failed before its fact had one home.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "trainplan/args.h"
#include "trainplan/comm.h"
#include "trainplan/memory.h"
#include "trainplan/time.h"

namespace trainplan {
namespace {

job_spec job_of(std::vector<std::string> args) { return parse_job_args(args).job; }

std::vector<std::string> with(std::vector<std::string> base, const std::vector<std::string>& more) {
  base.insert(base.end(), more.begin(), more.end());
  return base;
}

// ---- recomputation: one reading of --recompute-num-layers (per model chunk, as Megatron-LM) --------

// Megatron-530B on 630 DGX-A100 nodes, TP 4 × PP 15 × VPP 7: one layer per model chunk.
const std::vector<std::string> kMegatron530bVpp7 = {
    "--model", "megatron-530b", "--cluster", "dgx-a100", "--num-nodes", "630", "--tp", "4", "--pp", "15",
    "--num-layers-per-virtual-pipeline-stage", "1", "--sp", "--use-distributed-optimizer", "--gbs", "2520",
    "--recompute-granularity", "full", "--recompute-method", "block"};

TEST(AccountRecompute, BlockCountsLayersPerChunkInTimeAsInMemory) {
  // Each chunk has one layer: block with N = 1, 3 or 7 recomputes every layer, as uniform does. Before,
  // the time model read N per rank (1 of 7 layers: 20.38 s against 24.71 s) while memory read it per chunk.
  const job_spec uniform = job_of(with(kMegatron530bVpp7, {"--recompute-num-layers", "1"}));
  job_spec u = uniform;
  u.training.recompute_method_ = recompute_method::uniform;
  const double uniform_s = estimate_time(u).iteration_s;
  const double uniform_peak = estimate_memory(u).peak_reserved_bytes;
  for (const char* n : {"1", "3", "7"}) {
    const job_spec j = job_of(with(kMegatron530bVpp7, {"--recompute-num-layers", n}));
    EXPECT_NEAR(estimate_time(j).iteration_s, uniform_s, 1e-9 * uniform_s) << "block " << n;
    EXPECT_NEAR(estimate_memory(j).peak_reserved_bytes, uniform_peak, 1e-9 * uniform_peak) << "block " << n;
  }
}

TEST(AccountRecompute, BlockWithFewerLayersThanAChunkRecomputesThatMany) {
  // The same reading where it matters: 7 layers per chunk (VPP 1), block 1 recomputes 1 of 7 layers.
  const std::vector<std::string> base = {"--model", "megatron-530b", "--cluster", "dgx-a100", "--num-nodes", "630",
                                         "--tp", "4", "--pp", "15", "--sp", "--use-distributed-optimizer", "--gbs",
                                         "2520", "--recompute-granularity", "full", "--recompute-num-layers", "1"};
  const time_report block = estimate_time(job_of(with(base, {"--recompute-method", "block"})));
  const time_report uniform = estimate_time(job_of(with(base, {"--recompute-method", "uniform"})));
  const std::size_t middle = 7;  // a middle stage: seven layers, no embedding or output
  // Per layer the same work; the allocator's slowdown (§5.9) differs with the memory each keeps.
  const stage_compute& b = block.compute.stages[middle];
  const stage_compute& u = uniform.compute.stages[middle];
  const double block_s = b.recompute_s / b.allocator_slowdown;
  const double uniform_s = u.recompute_s / u.allocator_slowdown;
  EXPECT_NEAR(block_s, uniform_s / 7, 1e-9 * uniform_s);
}

// ---- what a rank holds: experts divided by EP everywhere ------------------------------------------

// Mixtral-8x7B on 64 H100s, TP 2, no distributed optimizer: every rank keeps the whole optimizer state
// of what it holds, so EP 8 holds an eighth of the routed experts.
const std::vector<std::string> kMixtral64 = {"--model", "mixtral-8x7b", "--cluster", "dgx-h100", "--num-gpus", "64",
                                             "--tp", "2", "--sp", "--use-flash-attn", "--gbs", "256"};

TEST(AccountHoldings, OptimizerStepFollowsTheMemoryModelsShare) {
  const job_spec ep1 = job_of(kMixtral64);
  const job_spec ep8 = job_of(with(kMixtral64, {"--ep", "8"}));
  const double mem_ratio =
      estimate_memory(ep8).stages[0].optimizer_bytes / estimate_memory(ep1).stages[0].optimizer_bytes;
  const double time_ratio =
      estimate_time(ep8).compute.stages[0].optimizer_s / estimate_time(ep1).compute.stages[0].optimizer_s;
  EXPECT_LT(mem_ratio, 0.25);  // 261 → ~40 GiB: most of Mixtral's parameters are routed experts
  // The step is memory-bound on the bytes of what it updates (plus a few kernel launches).
  EXPECT_NEAR(time_ratio, mem_ratio, 0.02);
}

}  // namespace
}  // namespace trainplan
