// FSDP2 with pipeline parallelism (issue 27: torchtitan's 3-D and 4-D layouts; docs/formulas.md §3.1,
// §4.2.4, §5.4): fully_shard under torch.distributed.pipelining, counted by hand.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "args_test_support.h"
#include "trainplan/cli/args.h"
#include "trainplan/core/estimate/comm.h"
#include "trainplan/core/estimate/memory.h"
#include "trainplan/core/estimate/time.h"
#include "trainplan/core/job/framework.h"
#include "trainplan/core/job/layout.h"
#include "trainplan/core/model/model.h"

namespace trainplan {
namespace {

using namespace args_testing;  // NOLINT(google-build-using-namespace): the shared helpers

/// Llama-3 8B on two DGX-H100 nodes as torchtitan runs it with a pipeline: FSDP over 8, PP 2, bf16
/// parameters, fp32 reduction.
args_t llama_pp(const args_t& extra = {}) {
  return concat({"--model", "llama3-8b", "--cluster", "dgx-h100", "--num-gpus", "16", "--framework", "fsdp",
                 "--zero-stage", "3", "--pp", "2", "--gbs", "64", "--seq-length", "4096", "--bf16"},
                extra);
}

TEST(FsdpPipeline, UnitsStayUnshardedFromTheFirstForwardToTheLastBackward) {
  // torchtitan apply_fsdp: reshard_after_forward = not pp_enabled; pipelining's backward_maybe_with_nosync:
  // no reshard and no gradient sync but after the last backward. Per parameter held, D = 8: the fp32
  // shard (4/D) and the bf16 unsharded parameter (2), the gradient accumulated unsharded in fp32 (4),
  // Adam's moments sharded (8/D).
  const parsed_job pj = parse(llama_pp());
  ASSERT_TRUE(pj.job.resolved.row().pipelined);
  const memory_report mem = estimate_memory(pj.job);
  ASSERT_EQ(mem.stages.size(), 2u);
  for (const stage_memory& s : mem.stages) {
    const double held = static_cast<double>(s.parameters);
    EXPECT_NEAR(s.weights_bytes, (4.0 / 8 + 2.0) * held, 1e-9 * s.weights_bytes);
    EXPECT_NEAR(s.gradients_bytes, 4.0 * held, 1e-9 * s.gradients_bytes);
    EXPECT_NEAR(s.optimizer_bytes, 8.0 / 8 * held, 1e-9 * s.optimizer_bytes);
  }
  // torchtitan's split weighs the embedding and the output as a layer each: 32 + 2 over 2 stages.
  EXPECT_EQ(mem.stages[0].num_layers, 16);
  EXPECT_EQ(mem.stages[1].num_layers, 16);
  EXPECT_EQ(pj.job.resolved.split_rule, "even, the embedding and the output each weighing a layer (torchtitan's "
                                   "generate_llm_fqn_per_model_part)");
}

TEST(FsdpPipeline, OneGatherUnderTheFirstForwardAndOneReductionAfterTheLastBackward) {
  const parsed_job pj = parse(llama_pp());
  const comm_report c = summarize_comm(pj.job);
  const auto& dp = c.dimensions[static_cast<std::size_t>(parallel_dim::dp)].collectives;
  ASSERT_EQ(dp.size(), 2u);
  const double held = static_cast<double>(estimate_memory(pj.job).stages[1].parameters);
  int gathers = 0, scatters = 0;
  for (const comm_collective& col : dp) {
    EXPECT_EQ(col.calls_per_iteration, 1) << col.what;  // once per iteration, not per micro-batch or unit
    if (col.kind == collective_kind::all_gather) {
      ++gathers;
      EXPECT_NEAR(col.bytes_per_call, 2.0 * held, 1e-3 * col.bytes_per_call);  // the bf16 parameters
    }
    if (col.kind == collective_kind::reduce_scatter) {
      ++scatters;
      EXPECT_NEAR(col.bytes_per_call, 4.0 * held, 1e-3 * col.bytes_per_call);  // the fp32 gradients
    }
  }
  EXPECT_EQ(gathers, 1);
  EXPECT_EQ(scatters, 1);
  // The reduction waits for the last backward (post_backward of every unit): all of it exposed. The
  // gather runs unit by unit under the first micro-batch's forward, here shorter than it: hidden, but its
  // kernel's 32 SMs stretch that forward by 32 / (132 − 32) of the gather (§5.4).
  const time_report t = estimate_time(pj.job);
  ASSERT_EQ(pj.job.cluster.gpu.sm_count, 132);
  for (std::size_t i = 0; i < t.pipeline.stages.size(); ++i) {
    EXPECT_GT(t.passes[i].grad_reduce_s, 0);
    EXPECT_DOUBLE_EQ(t.pipeline.stages[i].grad_reduce_exposed_s, t.passes[i].grad_reduce_s);
    ASSERT_LT(t.comm[i].param_gather_s, t.compute.stages[i].forward_s + t.comm[i].forward_s);
    EXPECT_NEAR(t.passes[i].optimizer_s,
                t.compute.stages[i].optimizer_s + t.comm[i].optimizer_s + t.comm[i].param_gather_s * 32.0 / 100.0,
                1e-12);
  }
}

TEST(FsdpPipeline, OtherStagesAndUnevenSplitsAreRefusedByName) {
  EXPECT_EQ(error_of(llama_pp({"--zero-stage", "2"})),
            "--framework fsdp with a pipeline is FSDP2's fully_shard under torch.distributed.pipelining (torchtitan): "
            "--zero-stage 3, not 2 with --pipeline-model-parallel-size 2");
  EXPECT_THAT(error_of(llama_pp({"--pp", "4", "--num-gpus", "32"})),
              ::testing::HasSubstr("(32 + 1 embedding + 1 output) must be divisible by --pipeline-model-parallel-size (4)"));
}

TEST(FsdpPipeline, TheLastStageKeepsItsLogitsCachedThroughTheLossBackward) {
  // §3.6, §3.8: pipelining's forward cache holds the last stage's output (the 16-bit logits) until that
  // micro-batch's backward_one_chunk, so they are alive at the loss backward's peak (12 fp32 bytes a logit
  // beside them) and no freed block is stranded, unlike torchtitan's train step without a pipeline.
  const parsed_job pj = parse(llama_pp());
  const memory_report mem = estimate_memory(pj.job);
  const stage_memory& last = mem.stages.back();
  const double logits = 128256.0 * 4096;  // MBS 1 × 4,096 tokens
  EXPECT_DOUBLE_EQ(last.stranded_bytes, 0.0);
  EXPECT_DOUBLE_EQ(last.transient_bytes, (2 + 12) * logits);
  const parsed_job flat = parse({"--model", "llama3-8b", "--cluster", "dgx-h100", "--num-gpus", "16", "--framework",
                                 "fsdp", "--zero-stage", "3", "--gbs", "64", "--seq-length", "4096", "--bf16"});
  EXPECT_DOUBLE_EQ(estimate_memory(flat.job).stages.front().stranded_bytes, 2 * logits);
}

// §3.7: with FSDP's float8 all-gather the kept units' linear weights are torchao's Float8Tensors over the
// gathered bytes: 1 byte a layer parameter less than bf16 (the embedding and output layer stay 16-bit).
TEST(FsdpPipeline, KeptFloat8WeightsTakeOneByte) {
  const args_t f8 = {"--fp8-format", "hybrid", "--fp8-recipe", "tensorwise"};
  const parsed_job bf = parse(llama_pp(f8));
  const parsed_job gathered = parse(llama_pp(concat(f8, {"--fp8-param-gather"})));
  const memory_report a = estimate_memory(bf.job), b = estimate_memory(gathered.job);
  const rank_holdings holds = holdings_of(bf.job, count_parameters(bf.job.model, 1));
  const double layers = 16 * static_cast<double>(holds.dense_layer.total());
  for (std::size_t i = 0; i < 2; ++i) EXPECT_DOUBLE_EQ(a.stages[i].weights_bytes - b.stages[i].weights_bytes, layers) << i;
}

// §3.5.1: torch.distributed.pipelining allocates a receive buffer per micro-batch and direction and keeps
// it. PP 2, FSDP 8, 4,096 tokens a micro-batch: B = 2 bytes × 4,096 tokens × 4,096 wide. Rank 0 (first
// stage, 2 held) has m gradient buffers; rank 1 (last stage, 1 held) m activation buffers, of which the
// held one is its first layer's input already. Doubling m (8 → 16) adds 8·B to each, nothing else.
TEST(FsdpPipeline, ReceiveBuffersAreKeptForEveryMicroBatchAndDirection) {
  const memory_report m8 = estimate_memory(parse(llama_pp()).job);
  const memory_report m16 = estimate_memory(parse(llama_pp({"--gbs", "128"})).job);
  const double boundary = 2.0 * 4096 * 4096;
  ASSERT_EQ(m8.stages[0].microbatches_in_flight, 2);
  ASSERT_EQ(m8.stages[1].microbatches_in_flight, 1);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_DOUBLE_EQ(m16.stages[i].buffers_bytes - m8.stages[i].buffers_bytes, 8 * boundary) << i;
    EXPECT_DOUBLE_EQ(m16.stages[i].activations_bytes, m8.stages[i].activations_bytes) << i;
  }
  // Rank 1's buffers less rank 0's: 7 activation buffers against 8 gradient ones (the class's own buffers,
  // a unit's gradient, are alike: both stages hold 16 layers).
  EXPECT_DOUBLE_EQ(m8.stages[0].buffers_bytes - m8.stages[1].buffers_bytes, boundary);
}

// §3.5.1: the outputs step() returns. every-stage (PyTorch before #153383) keeps rank 0's 8 outputs, 2 of
// them held already; every mode but none keeps the last stage's logits, 7 beyond the loss's own
// (L = 2 bytes × 128,256 × 4,096 tokens). Time is untouched.
TEST(FsdpPipeline, KeptOutputsFollowThePyTorchVersion) {
  const parsed_job none = parse(llama_pp());
  const parsed_job last = parse(llama_pp({"--pipelining-output-cache", "last-stage"}));
  const parsed_job every = parse(llama_pp({"--pipelining-output-cache", "every-stage"}));
  const memory_report a = estimate_memory(none.job), b = estimate_memory(last.job), c = estimate_memory(every.job);
  const double boundary = 2.0 * 4096 * 4096, logits = 2.0 * 128256 * 4096;
  EXPECT_DOUBLE_EQ(b.stages[0].activations_bytes, a.stages[0].activations_bytes);
  EXPECT_DOUBLE_EQ(c.stages[0].activations_bytes - a.stages[0].activations_bytes, 6 * boundary);
  EXPECT_DOUBLE_EQ(b.stages[1].activations_bytes - a.stages[1].activations_bytes, 7 * logits);
  EXPECT_DOUBLE_EQ(c.stages[1].activations_bytes - a.stages[1].activations_bytes, 7 * logits);
  EXPECT_DOUBLE_EQ(estimate_time(every.job).iteration_s, estimate_time(none.job).iteration_s);
}

// §3.5.1: with many micro-batches the last stage peaks after its last backward, when step() concatenates
// the m kept logits beside them: resharded units (16/8 bytes a parameter: fp32 shard, fp32 gradient shard,
// Adam's moments), the m − 1 activation buffers beyond the held one, 2·m·L. m = 128.
TEST(FsdpPipeline, TheMergedOutputsSetTheLastStagesPeakWithManyMicroBatches) {
  const memory_report mem = estimate_memory(parse(llama_pp({"--gbs", "1024", "--pipelining-output-cache", "last-stage"})).job);
  const stage_memory& s = mem.stages[1];
  const double boundary = 2.0 * 4096 * 4096, logits = 2.0 * 128256 * 4096;
  const double expected = 2.0 * static_cast<double>(s.parameters) + 127 * boundary + 2 * 128 * logits;
  EXPECT_NEAR(s.allocated_bytes, expected, 1e-9 * expected);
}

TEST(FsdpPipeline, TheOutputCacheIsRefusedOutsideAPipelinedFsdpJob) {
  EXPECT_EQ(error_of({"--model", "llama3-8b", "--pipelining-output-cache", "every-stage"}),
            "--pipelining-output-cache is torch.distributed.pipelining's, modelled with --framework fsdp; megatron "
            "runs its own pipeline schedule");
  EXPECT_EQ(error_of(llama_pp({"--pp", "1", "--pipelining-output-cache", "last-stage"})),
            "--pipelining-output-cache needs --pipeline-model-parallel-size above 1 (without a pipeline torchtitan runs "
            "no pipeline schedule)");
  EXPECT_THAT(error_of(llama_pp({"--pipelining-output-cache", "some"})), ::testing::HasSubstr("--pipelining-output-cache"));
}

}  // namespace
}  // namespace trainplan
