// Megatron-Core's CPU activation offloading (--cpu-offloading-num-layers N; issue 27): the first N layers'
// activations are copied to host memory after their forward and back before their backward, beside the
// next layer's work (Transformer Engine's CPU offload context; docs/formulas.md §3.4.8, §5.4).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "args_test_support.h"
#include "trainplan/cli/args.h"
#include "trainplan/core/estimate/memory.h"
#include "trainplan/core/estimate/time.h"
#include "trainplan/core/hardware/hardware.h"

namespace trainplan {
namespace {

using ::testing::HasSubstr;
using args_testing::concat;
using args_testing::error_of;

/// Llama-3 8B on 8 H100s, FSDP-free Megatron DP, MBS 2 at 8,192 tokens, no recomputation.
std::vector<std::string> llama8b(const std::vector<std::string>& extra = {}) {
  return concat({"--model", "llama3-8b", "--cluster", "dgx-h100", "--num-gpus", "8", "--mbs", "2", "--gbs", "16",
                 "--seq-length", "8192", "--use-distributed-optimizer"},
                extra);
}

// Of 32 layers with 16 offloaded, 17 stay on the GPU at the peak (16 resident, one offloaded layer still
// copying): the activations fall by 15 layers' worth, and nothing else moves.
TEST(CpuOffloading, RemovesTheOffloadedActivations) {
  const memory_report plain = estimate_memory(parse_job_args(llama8b()).job);
  const memory_report off = estimate_memory(parse_job_args(llama8b({"--cpu-offloading-num-layers", "16"})).job);
  ASSERT_GT(off.stages[0].offloaded_layer_bytes, 0);
  EXPECT_DOUBLE_EQ(plain.stages[0].activations_bytes - off.stages[0].activations_bytes,
                   15 * off.stages[0].offloaded_layer_bytes);
  EXPECT_DOUBLE_EQ(off.stages[0].weights_bytes, plain.stages[0].weights_bytes);
  EXPECT_DOUBLE_EQ(plain.stages[0].offloaded_layer_bytes, 0.0);
}

// Each offloaded layer's copy runs over the host link (PCIe Gen5 x16, 64 GB/s one way) beside one layer's
// forward (the copy out) and one layer's backward (the copy back): what it outlasts is exposed.
TEST(CpuOffloading, ACopyLongerThanALayerIsExposed) {
  const job_spec plain_job = parse_job_args(llama8b()).job;
  const job_spec off_job = parse_job_args(llama8b({"--cpu-offloading-num-layers", "16"})).job;
  const time_report plain = estimate_time(plain_job), off = estimate_time(off_job);
  const double copy_s = estimate_memory(off_job).stages[0].offloaded_layer_bytes / 64e9;
  const unit_time& layer = off.compute.of(layer_kind::dense);
  EXPECT_NEAR(off.passes[0].forward_s - plain.passes[0].forward_s,
              16 * std::max(0.0, copy_s - layer.forward.total_s()), 1e-12);
  EXPECT_NEAR(off.passes[0].backward_s - plain.passes[0].backward_s,
              16 * std::max(0.0, copy_s - layer.backward.total_s()), 1e-12);
  EXPECT_GT(off.iteration_s, plain.iteration_s);  // 2 GiB a layer takes longer than the layer's forward
}

// Megatron-Core's own checks (transformer_config.py __post_init__), and the host link it needs.
TEST(CpuOffloading, MegatronsChecks) {
  EXPECT_THAT(error_of(llama8b({"--cpu-offloading-num-layers", "32"})),
              HasSubstr("--cpu-offloading-num-layers can be done only for layers less than --num-layers"));
  EXPECT_THAT(error_of(llama8b({"--cpu-offloading-num-layers", "4", "--pp", "2"})),
              HasSubstr("has no support for pipeline parallelism"));
  EXPECT_THAT(error_of(llama8b({"--cpu-offloading-num-layers", "4", "--recompute-granularity", "full"})),
              HasSubstr("does not work when activation recomputation is enabled"));
  EXPECT_THAT(error_of({"--model", "llama3-8b", "--num-gpus", "8", "--framework", "deepspeed", "--cpu-offloading-num-layers", "4"}),
              HasSubstr("is Megatron-Core's"));
}

// The catalog's host links: PCIe Gen4/Gen5 x16 one way, NVLink-C2C on GB200.
TEST(CpuOffloading, HostLinksOfTheCatalog) {
  EXPECT_DOUBLE_EQ(find_gpu("a100-sxm4-80gb").host_link_bytes_per_s, 32e9);
  EXPECT_DOUBLE_EQ(find_gpu("h100-sxm5-80gb").host_link_bytes_per_s, 64e9);
  EXPECT_DOUBLE_EQ(find_gpu("gb200").host_link_bytes_per_s, 450e9);
}

}  // namespace
}  // namespace trainplan
