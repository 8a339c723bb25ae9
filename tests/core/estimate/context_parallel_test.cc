// Context parallelism as PyTorch's ring attention runs it under FSDP/torchtitan (docs/formulas.md §4.2.2,
// §5.3, §5.5): the K/V all-gather and the fp32 dK/dV ring, the fp32 merges around each step's SDPA call,
// and the all-gather hidden under the ring's first step alone.
#include <algorithm>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "args_test_support.h"
#include "trainplan/cli/args.h"
#include "trainplan/core/estimate/comm.h"
#include "trainplan/core/estimate/compute.h"
#include "trainplan/core/estimate/time.h"

namespace trainplan {
namespace {

using namespace args_testing;  // NOLINT(google-build-using-namespace): the shared helpers

/// Llama-3-8B (32 query heads and 8 K/V groups of 128), 64K tokens over CP 8 on one H100 node: 8,192 tokens a rank.
const args_t kLlama8bCp8 = {"--model", "llama3-8b", "--cluster", "dgx-h100", "--num-gpus", "8", "--seq-length", "65536",
                            "--cp", "8", "--mbs", "1", "--gbs", "1"};
const args_t kTorchtitan = {"--framework", "fsdp", "--zero-stage", "3"};

const comm_collective* row_of(const comm_report& r, std::string_view what) {
  for (const comm_collective& c : r[parallel_dim::cp].collectives) {
    if (c.what == what) return &c;
  }
  return nullptr;
}

// torchtitan repeats grouped K/V out to every query head before SDPA (repeat_kv), so the ring carries
// 32 heads of K and V: 8,192 tokens × 2 × 4,096 columns, 2 bytes each, gathered from 8 ranks; the
// backward's dK/dV are accumulated in fp32 (convert_to_f32) and passed on after each of the 8 steps.
TEST(TorchRing, GathersTheRepeatedKvAndPassesFp32GradientsRoundTheRing) {
  const job_spec job = parse(concat(kLlama8bCp8, kTorchtitan)).job;
  EXPECT_EQ(job.parallel.cp_comm, cp_comm_kind::all_gather);  // PyTorch's rotate_method default
  const comm_report r = summarize_comm(job);
  const comm_collective* gather = row_of(r, "K/V all-gather, under the ring's first step");
  ASSERT_NE(gather, nullptr);
  EXPECT_EQ(gather->kind, collective_kind::all_gather);
  EXPECT_DOUBLE_EQ(gather->bytes_per_call, 8.0 * 8192 * 2 * 4096 * 2);
  EXPECT_EQ(gather->calls_per_iteration, 32);  // one per layer
  const comm_collective* passed = row_of(r, "fp32 dK/dV passed on after each step, under the next");
  const comm_collective* last = row_of(r, "fp32 dK/dV of the last step, waited after the loop (exposed)");
  ASSERT_NE(passed, nullptr);
  ASSERT_NE(last, nullptr);
  EXPECT_DOUBLE_EQ(passed->bytes_per_call, 8192.0 * 2 * 4096 * 4);
  EXPECT_EQ(passed->calls_per_iteration, 32 * 2 * 7);  // a send and a receive for each of the first 7 steps
  EXPECT_EQ(last->calls_per_iteration, 32 * 2);
  // torchtitan's "alltoall" rotation passes K/V round the ring instead (Megatron's p2p spelling).
  const comm_report ring = summarize_comm(parse(concat(concat(kLlama8bCp8, kTorchtitan), {"--cp-comm-type", "p2p"})).job);
  const comm_collective* kv = row_of(ring, "K/V passed round the ring (send + receive per step, c−1 steps)");
  ASSERT_NE(kv, nullptr);
  EXPECT_DOUBLE_EQ(kv->bytes_per_call, 8192.0 * 2 * 4096 * 2);
  EXPECT_EQ(row_of(ring, "K/V all-gather, under the ring's first step"), nullptr);
  // Megatron keeps Transformer Engine's p2p ring of the grouped K/V.
  EXPECT_EQ(parse(kLlama8bCp8).job.parallel.cp_comm, cp_comm_kind::p2p);
  EXPECT_EQ(row_of(summarize_comm(parse(kLlama8bCp8).job), "K/V all-gather, under the ring's first step"), nullptr);
  // PyTorch's context_parallel has no all-to-all of heads.
  EXPECT_THAT(error_of(concat(concat(kLlama8bCp8, kTorchtitan), {"--cp-comm-type", "a2a"})),
              ::testing::HasSubstr("--cp-comm-type a2a with --framework fsdp: PyTorch's context_parallel passes K/V by "
                                   "an all-gather or round a ring"));
  // Nor an unfused attention: it dispatches SDPA's fused kernels alone.
  EXPECT_EQ(error_of(concat(concat(kLlama8bCp8, kTorchtitan), {"--attention-backend", "unfused"})),
            "--attention-backend unfused with --context-parallel-size 8 and --framework fsdp: PyTorch's context_parallel "
            "runs SDPA's flash, memory-efficient and cuDNN kernels only");
}

// The memory-bound work around the SDPA calls, on the busiest CP rank, by hand: q = 8,192 × 32 × 128 output
// elements, kv = 2q (K and V repeated to 32 heads), 2-byte activations. The same job under Megatron with
// FlashAttention-2 (the same kernel rates, Transformer Engine's ring, no merges) gives the kernel alone.
TEST(TorchRing, MergesAndAccumulatesInFp32AroundEveryStep) {
  const job_spec titan = parse(concat(kLlama8bCp8, kTorchtitan)).job;
  const job_spec megatron = parse(concat(kLlama8bCp8, {"--attention-backend", "flash"})).job;
  const compute_efficiency e = default_compute_efficiency(titan.cluster.gpu);
  const unit_time t = layer_compute(titan, e, false), m = layer_compute(megatron, e, false);
  const double q = 8192.0 * 32 * 128, kv = 2 * q, c = 8;
  // Forward: K/V concatenated before 7 exchanges (read + write, 2 bytes), 7 merges of 32 bytes an output
  // element, 8 casts of each step's output to fp32 and one back (6 bytes each).
  const double forward_bytes = (c - 1) * (2 * 2 * kv + 32 * q) + (c + 1) * 6 * q;
  const int forward_kernels = 8 + 7 + 8 * 7 + 1;
  // Backward: dQ, dK, dV zeroed in fp32; K/V concatenated 7 times; step 0's dK/dV added in (2 + 4 + 4
  // bytes); 7 later steps' half-size dK/dV added into the first half (5 bytes an element of the whole)
  // and the halves concatenated (8); dK/dV concatenated for the ring every step (8); dQ added every step
  // (10); the three cast back (6).
  const double backward_bytes = 4 * (q + kv) + (c - 1) * 4 * kv + 10 * kv + (c - 1) * (5 + 8) * kv + c * 8 * kv +
                                c * 10 * q + 6 * (q + kv);
  const int backward_kernels = 3 + 8 + 2 + 4 * 7 + 8 + 7 + 2;
  const double rate = titan.cluster.gpu.memory_bandwidth_bytes_per_s * e.memory_bandwidth_fraction;
  EXPECT_NEAR(t.forward.attention_s - m.forward.attention_s,
              forward_bytes / rate + forward_kernels * e.kernel_overhead_s, 1e-12);
  EXPECT_NEAR(t.backward.attention_s - m.backward.attention_s,
              backward_bytes / rate + backward_kernels * e.kernel_overhead_s, 1e-12);
  // At CP 1 torchtitan runs plain SDPA: no merges.
  const job_spec cp1 = parse({"--model", "llama3-8b", "--cluster", "dgx-h100", "--num-gpus", "8", "--seq-length", "8192",
                              "--framework", "fsdp", "--zero-stage", "3", "--mbs", "1", "--gbs", "8"}).job;
  const job_spec cp1_megatron = parse({"--model", "llama3-8b", "--cluster", "dgx-h100", "--num-gpus", "8", "--seq-length",
                                       "8192", "--attention-backend", "flash", "--mbs", "1", "--gbs", "8"}).job;
  EXPECT_DOUBLE_EQ(layer_compute(cp1, e, false).forward.attention_s,
                   layer_compute(cp1_megatron, e, false).forward.attention_s);
}

// The all-gather is issued before the ring's first step and waited at the second: it hides under 1/CP of the
// layer's attention, not all of it. CP 16 over two H100 nodes gathers over the network: at 8K tokens a rank
// the gather outlasts the first step, and each layer's forward exposes the excess; the alltoall rotation,
// whose every transfer runs beside a step, exposes none of its K/V.
TEST(TorchRing, AllGatherHidesUnderTheFirstStepOnly) {
  const args_t two_nodes = {"--model", "llama3-8b", "--cluster", "dgx-h100", "--num-gpus", "16", "--seq-length", "131072",
                            "--cp", "16", "--mbs", "1", "--gbs", "1", "--framework", "fsdp", "--zero-stage", "3"};
  const job_spec job = parse(two_nodes).job;
  const time_report t = estimate_time(job);
  const comm_report r = summarize_comm(job);
  const comm_collective* gather = row_of(r, "K/V all-gather, under the ring's first step");
  ASSERT_NE(gather, nullptr);
  EXPECT_EQ(gather->link, link_kind::hierarchical);  // two nodes of 8
  ASSERT_EQ(t.compute.stages.size(), 1u);
  const double attention_fwd_s = t.compute.of(layer_kind::dense).forward.attention_s;
  const double first_step_s = attention_fwd_s / 16;
  ASSERT_GT(gather->time_per_call_s, first_step_s);
  ASSERT_EQ(t.comm.size(), 1u);
  EXPECT_GE(t.comm[0].forward_s, 32 * (gather->time_per_call_s - first_step_s) - 1e-12);
  const time_report ring = estimate_time(parse(concat(two_nodes, {"--cp-comm-type", "p2p"})).job);
  EXPECT_LT(ring.comm[0].forward_s, t.comm[0].forward_s);
}

}  // namespace
}  // namespace trainplan
