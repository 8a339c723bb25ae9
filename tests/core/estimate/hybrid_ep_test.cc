// The flex dispatcher's HybridEP backend (issues 27, 29; docs/formulas.md §3.8, §4.2.5): DeepEP's traffic,
// its worst-case preallocated buffers counted by hand, and the SM counts it is modelled at.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "args_test_support.h"
#include "trainplan/cli/args.h"
#include "trainplan/core/estimate/comm.h"
#include "trainplan/core/estimate/memory.h"

namespace trainplan {
namespace {

using ::testing::HasSubstr;
using namespace args_testing;  // NOLINT(google-build-using-namespace): the shared helpers

/// DeepSeek-V3 (h 7,168, 256 experts) on 8 DGX-H100 nodes at EP 64, 4,096 tokens a rank: the example of
/// DeepEP's docs/Hybrid-EP_Implementation.md §4.2 ("RDMA (8 ranks × 8 nodes)").
const args_t kDeepSeek = {"--model", "deepseek-v3", "--cluster", "dgx-h100", "--num-gpus", "64", "--ep", "64",
                          "--seq-length", "4096", "--mbs", "1", "--gbs", "64", "--bf16",
                          "--moe-token-dispatcher-type", "flex"};

TEST(HybridEp, ItsBuffersAreSizedForEveryTokenOfTheGroupOnOneRank) {
  const memory_report hybrid = estimate_memory(parse(concat(kDeepSeek, {"--moe-flex-dispatcher-backend", "hybridep"})).job);
  const memory_report deepep = estimate_memory(parse(kDeepSeek).job);
  // Per token 2·7,168 bytes of BF16 hidden state and 4 local experts × 8 ranks of fp32 probabilities; the
  // intra-node buffers hold 4,096 × 64 tokens, the RDMA ones 4,096 × 7 (the doc's 3.5 GB + 32 MB + 392 MB
  // + 3.5 MB, "~4 GB").
  const double per_token = 2 * 7168 + 4 * 4 * 8;
  const double expected = 4096.0 * 64 * per_token + 4096.0 * 7 * per_token;
  ASSERT_EQ(hybrid.stages.size(), 1u);
  EXPECT_DOUBLE_EQ(hybrid.stages[0].dispatch_buffer_bytes, expected);
  EXPECT_DOUBLE_EQ(deepep.stages[0].dispatch_buffer_bytes, 0.0);
  // Outside PyTorch's allocator: reserved grows by the buffers, allocated not at all.
  EXPECT_DOUBLE_EQ(hybrid.stages[0].allocated_bytes, deepep.stages[0].allocated_bytes);
  EXPECT_NEAR(hybrid.stages[0].reserved_bytes - deepep.stages[0].reserved_bytes, expected, 1e-6 * expected);
}

TEST(HybridEp, ItsTrafficIsDeepEpsOneCopyPerDestinationNode) {
  const comm_report hybrid = summarize_comm(parse(concat(kDeepSeek, {"--moe-flex-dispatcher-backend", "hybridep"})).job);
  const comm_report deepep = summarize_comm(parse(kDeepSeek).job);
  EXPECT_DOUBLE_EQ(hybrid[parallel_dim::ep].bytes_per_iteration_per_gpu, deepep[parallel_dim::ep].bytes_per_iteration_per_gpu);
  EXPECT_GT(hybrid[parallel_dim::ep].bytes_per_iteration_per_gpu, 0);
}

TEST(HybridEp, ItsSmCountsAndOtherBackendsAreCheckedByName) {
  const args_t hybrid = concat(kDeepSeek, {"--moe-flex-dispatcher-backend", "hybridep"});
  EXPECT_NO_THROW(parse(concat(hybrid, {"--moe-hybridep-num-sms", "32"})));
  EXPECT_THAT(error_of(concat(hybrid, {"--moe-hybridep-num-sms", "4"})),
              HasSubstr("--moe-hybridep-num-sms (Megatron-Core's moe_flex_dispatcher_num_sms, moe_hybridep_num_sms) "
                        "below 8 slows HybridEP's dispatch below the links' rate"));
  EXPECT_NO_THROW(parse(concat(kDeepSeek, {"--moe-deepep-num-sms", "20"})));
  EXPECT_THAT(error_of(concat(kDeepSeek, {"--moe-flex-dispatcher-num-sms", "24"})),
              HasSubstr("DeepEP's rate depends on its SMs, modelled at its default 20 alone"));
  EXPECT_THAT(error_of(concat(kDeepSeek, {"--moe-flex-dispatcher-backend", "ncclep"})),
              HasSubstr("--moe-flex-dispatcher-backend ncclep (NCCL EP through Transformer Engine) would change the estimate"));
  EXPECT_THAT(error_of(concat(hybrid, {"--tp", "2", "--num-gpus", "128"})),
              HasSubstr("--moe-flex-dispatcher-backend hybridep with expert TP > 1 (--expert-tensor-parallel-size) is "
                        "not modelled"));
  EXPECT_NO_THROW(parse(concat(hybrid, {"--tp", "2", "--etp", "1", "--num-gpus", "128"})));
  EXPECT_THAT(error_of({"--model", "deepseek-v3", "--num-gpus", "64", "--ep", "64", "--moe-token-dispatcher-type", "alltoall",
                        "--moe-flex-dispatcher-backend", "hybridep"}),
              HasSubstr("--moe-flex-dispatcher-backend is read with the flex token dispatcher alone"));
}

}  // namespace
}  // namespace trainplan
