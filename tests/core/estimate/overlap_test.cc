// Communication overlap as Megatron-Core does it (issue 9, part 3; docs/formulas.md §5.4): each overlap
// flag reduces the exposed communication and never below zero; the flags' preconditions are Megatron's.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "args_test_support.h"
#include "trainplan/cli/args.h"
#include "trainplan/core/estimate/comm.h"
#include "trainplan/core/estimate/compute.h"
#include "trainplan/core/estimate/memory.h"
#include "trainplan/core/estimate/time.h"

namespace trainplan {
namespace {

using namespace args_testing;  // NOLINT(google-build-using-namespace): the shared helpers

const args_t kLlama70b = {"--model", "llama3-70b", "--cluster", "dgx-h100", "--num-gpus", "256", "--tp", "8",
                          "--pp", "2", "--sp", "--use-distributed-optimizer", "--gbs", "256"};

time_report time_with(const args_t& more) { return estimate_time(parse(concat(kLlama70b, more)).job); }

// §5.4: the interleaved schedule dispatches every rank's first gathers at its start (schedules.py
// param_sync_func, align_param_gather on), so each rank's gather runs under its own first forwards.
TEST(Overlap, ParamGatherHidesUnderTheFirstForwardAndNeverBelowZero) {
  const time_report plain = time_with({"--overlap-grad-reduce", "--num-virtual-stages-per-pipeline-rank", "2"});
  const time_report overlapped = time_with({"--overlap-grad-reduce", "--overlap-param-gather",
                                            "--num-virtual-stages-per-pipeline-rank", "2"});
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

// §5.4: without interleaving Megatron turns align_param_gather off and gives the later pipeline ranks one
// bucket (distributed_data_parallel.py, pp_rank > 0), which the first forward's pre-hook dispatches and waits
// for: rank 1's whole gather delays its first forward, and the pipeline phase by as much. The flag then buys
// nothing here: the gather no longer runs beside the other rank's optimizer step.
TEST(Overlap, WithoutInterleavingALaterRanksGatherDelaysItsFirstForward) {
  const time_report plain = time_with({"--overlap-grad-reduce"});
  const time_report overlapped = time_with({"--overlap-grad-reduce", "--overlap-param-gather"});
  ASSERT_EQ(overlapped.passes.size(), 2u);
  const double gather_s = overlapped.comm[1].param_gather_s;
  ASSERT_GT(gather_s, 0);
  EXPECT_EQ(overlapped.passes[0].first_forward_delay_s, 0.0);
  EXPECT_DOUBLE_EQ(overlapped.passes[1].first_forward_delay_s, gather_s);
  EXPECT_NEAR(overlapped.pipeline.pipeline_s, plain.pipeline.pipeline_s + gather_s, 1e-9);
  // Here that costs: rank 0's gather hides, rank 1's moved from beside the step onto the critical path, and
  // the hidden one holds SMs under rank 0's forward.
  EXPECT_GT(overlapped.iteration_s, plain.iteration_s);
  // The breakdown shows the delay with the parameter gather, not as bubble.
  EXPECT_NEAR(overlapped.breakdown.pipeline_s, plain.breakdown.pipeline_s, 1e-9);
}

/// What of a rank's overlapped gradient reduction R outlasts its last backward B (§5.4, one model chunk):
/// Megatron-Core's DDP reduces the first rank's gradients in n buckets as the backward fills them,
/// max(R − (1 − 1/n)·B, R/n), every other rank's in one bucket after it, R.
double bucketed_exposure(double r, double b, double n) { return n <= 1 ? r : std::max(r - (1 - 1 / n) * b, r / n); }

// §5.4: a DP collective hidden under compute still holds its NCCL kernel's SMs, one per channel, 32 on
// NVSwitch nodes: the backward under the gradient reduction runs 132 / (132 − 32) as long on an H100 for
// as long as they overlap. By hand per rank: exposed = E + (R − E) · 32 / 100, E the bucketed exposure.
TEST(Overlap, HiddenCollectivesStretchTheComputeBesideThemByTheirKernelsSms) {
  const time_report t = time_with({"--overlap-grad-reduce"});
  ASSERT_EQ(t.pipeline.stages.size(), 2u);
  for (std::size_t i = 0; i < t.passes.size(); ++i) {
    const double r = t.passes[i].grad_reduce_s, b = t.passes[i].backward_s, n = t.passes[i].grad_reduce_buckets;
    ASSERT_GT(r, 0);
    const double e = bucketed_exposure(r, b, n);
    EXPECT_NEAR(t.pipeline.stages[i].grad_reduce_exposed_s, e + (r - e) * 0.32, 1e-12) << i;
  }
  // The breakdown says which part of its DP line is that stretch: the critical rank's.
  const auto k = static_cast<std::size_t>(t.pipeline.critical_stage);
  const stage_times& pk = t.passes[k];
  EXPECT_NEAR(t.breakdown.collective_sm_stretch_s,
              (pk.grad_reduce_s - bucketed_exposure(pk.grad_reduce_s, pk.backward_s, pk.grad_reduce_buckets)) * 0.32,
              1e-12);
  EXPECT_LE(t.breakdown.collective_sm_stretch_s, t.breakdown.dp_comm_s);
}

// §5.4: Megatron-Core's DDP buckets (distributed_data_parallel.py): with --overlap-grad-reduce the first
// pipeline rank's gradients go in buckets of max(4e7, 1e6·DP) elements, --ddp-bucket-size otherwise, and
// every later rank's in one (bucket_size None for pp_rank > 0). Llama-3-70B at TP 8 PP 2, DP 16: the first
// rank's 40 layers and embedding in ⌈Ψ/4e7⌉ buckets; one bucket of the whole stage exposes it all.
TEST(Overlap, MegatronCoreBucketsTheFirstRanksGradientsAlone) {
  const time_report t = time_with({"--overlap-grad-reduce"});
  const memory_report mem = estimate_memory(parse(concat(kLlama70b, {"--overlap-grad-reduce"})).job);
  EXPECT_DOUBLE_EQ(t.passes[0].grad_reduce_buckets, std::ceil(static_cast<double>(mem.stages[0].parameters) / 4e7));
  EXPECT_DOUBLE_EQ(t.passes[1].grad_reduce_buckets, 1.0);
  const time_report whole = time_with({"--overlap-grad-reduce", "--ddp-bucket-size", "100000000000"});
  EXPECT_DOUBLE_EQ(whole.passes[0].grad_reduce_buckets, 1.0);
  EXPECT_NEAR(whole.pipeline.stages[0].grad_reduce_exposed_s, whole.passes[0].grad_reduce_s, 1e-12);
  EXPECT_GT(whole.iteration_s, t.iteration_s);
  // Without the overlap the bucket changes nothing (Megatron sets bucket_size None).
  EXPECT_DOUBLE_EQ(time_with({"--ddp-bucket-size", "1000000"}).iteration_s, time_with({}).iteration_s);
  EXPECT_THAT([] { parse({"--model", "llama3-8b", "--num-gpus", "8", "--framework", "deepspeed", "--zero-stage", "1",
                          "--ddp-bucket-size", "1000000"}); },
              ::testing::ThrowsMessage<input_error>(::testing::HasSubstr(
                  "--ddp-bucket-size is Megatron-Core's gradient bucket; --framework deepspeed buckets its own way")));
  EXPECT_THAT([] { parse({"--model", "llama3-8b", "--num-gpus", "8", "--ddp-bucket-size", "1000000",
                          "--bucket-size-bytes", "1000000"}); },
              ::testing::ThrowsMessage<input_error>(::testing::HasSubstr(
                  "--ddp-bucket-size and --bucket-size-bytes both size the gradient bucket: give one")));
}

// C is NCCL's channel count: 4 per NIC across nodes, up to 32, and 32 within a node. A DGX A100 job of one
// node and of 16 (8 NICs) holds 32 of the A100's 108 SMs; the same on p4d nodes (4 NICs) 16.
TEST(Overlap, TheSmsAHiddenReductionHoldsFollowNcclsChannelsPerNic) {
  auto stretch_of = [](const char* cluster, const char* gpus) {
    const time_report t = estimate_time(parse({"--model", "llama3-8b", "--cluster", cluster, "--num-gpus", gpus,
                                               "--use-distributed-optimizer", "--overlap-grad-reduce", "--gbs",
                                               gpus, "--bf16"}).job);
    const double r = t.passes[0].grad_reduce_s, b = t.passes[0].backward_s;
    EXPECT_GT(r, 0) << cluster << " " << gpus;
    return t.pipeline.stages[0].grad_reduce_stretch_s / (r - bucketed_exposure(r, b, t.passes[0].grad_reduce_buckets));
  };
  EXPECT_NEAR(stretch_of("dgx-a100", "8"), 32.0 / 76.0, 1e-12);
  EXPECT_NEAR(stretch_of("dgx-a100", "128"), 32.0 / 76.0, 1e-12);
  EXPECT_NEAR(stretch_of("aws-p4d", "128"), 16.0 / 92.0, 1e-12);
  EXPECT_NEAR(stretch_of("aws-p4d", "8"), 32.0 / 76.0, 1e-12);
}

// The same for FSDP's per-layer gathers and reduce-scatters hidden under the passes: one node's 32 SMs of
// the H100's 132, so each pass runs 0.32 of its hidden DP seconds longer, and the hidden figure is the
// collectives' own (Llama-3-8B on 8 GPUs, TP 1: every in-pass row is data-parallel).
TEST(Overlap, HiddenPerLayerCollectivesStretchThePassesTheyHideUnder) {
  const parsed_job pj = parse({"--model", "llama3-8b", "--cluster", "dgx-h100", "--num-gpus", "8", "--framework",
                               "fsdp", "--zero-stage", "3", "--mbs", "2", "--gbs", "32", "--seq-length", "8192",
                               "--recompute-granularity", "full"});
  const time_report t = estimate_time(pj.job);
  const double passes = static_cast<double>(pj.job.num_microbatches());
  ASSERT_EQ(t.comm.size(), 1u);
  const stage_comm& c = t.comm.front();
  ASSERT_GT(c.hidden_s, 0);
  EXPECT_NEAR(c.stretch_s, 0.32 * c.hidden_s / passes, 1e-12);
  EXPECT_NEAR(c.forward_dp_s + c.backward_dp_s, c.forward_s + c.backward_s, 1e-12);  // all of it data-parallel
  EXPECT_GE(c.forward_s + c.backward_s, c.stretch_s);
}

TEST(Overlap, GradReduceHidesUnderTheLastBackward) {
  const time_report plain = time_with({}), overlapped = time_with({"--overlap-grad-reduce"});
  EXPECT_LE(overlapped.breakdown.dp_comm_s, plain.breakdown.dp_comm_s);
  EXPECT_GE(overlapped.breakdown.dp_comm_s, 0);
}

// §5.4: Megatron-LM's --DDP-impl torch is PyTorch's DDP: 25 MiB buckets all-reduced under the last backward,
// as --overlap-grad-reduce prices it; local (the default) all-reduces after it. Megatron-LM's 2020 GPT-2 8B at
// TP 8 over 128 DGX-A100 nodes: the 2.03 GiB all-reduce (0.22 s) hides under the one micro-batch's backward.
TEST(Overlap, TorchDdpAllReducesItsBucketsUnderTheLastBackward) {
  const args_t gpt2 = {"--num-layers", "42", "--hidden-size", "4096", "--num-attention-heads", "32", "--vocab-size",
                       "51200", "--seq-length", "1024", "--cluster", "dgx-a100", "--num-gpus", "1024", "--tp", "8",
                       "--mbs", "16", "--gbs", "2048", "--fp16", "--recompute-granularity", "full"};
  const parsed_job torch = parse(concat(gpt2, {"--DDP-impl", "torch"}));
  EXPECT_TRUE(torch.job.training.overlap_grad_reduce);
  EXPECT_EQ(torch.job.training.bucket_size_bytes, 25 << 20);
  const time_report local = estimate_time(parse(gpt2).job);
  const time_report ddp = estimate_time(torch.job);
  EXPECT_GT(local.breakdown.dp_comm_s, 0.15);
  // Hidden, the all-reduce still holds 32 of the A100's 108 SMs: the backward under it takes 32/76 of it
  // longer (§5.4), which the breakdown books as DP communication.
  const stage_comm& c = ddp.comm.front();
  EXPECT_NEAR(ddp.pipeline.stages.front().grad_reduce_exposed_s, c.grad_reduce_s * 32.0 / 76.0, 1e-12);
  EXPECT_LT(ddp.breakdown.dp_comm_s, 0.5 * local.breakdown.dp_comm_s);
  EXPECT_DOUBLE_EQ(ddp.iteration_s, estimate_time(parse(concat(gpt2, {"--overlap-grad-reduce", "--bucket-size-bytes",
                                                                      std::to_string(25 << 20)})).job).iteration_s);
  EXPECT_DOUBLE_EQ(estimate_time(parse(concat(gpt2, {"--DDP-impl", "local"})).job).iteration_s, local.iteration_s);
  EXPECT_THAT(error_of(concat(gpt2, {"--DDP-impl", "torch", "--use-distributed-optimizer"})),
              ::testing::HasSubstr("--DDP-impl torch cannot run --use-distributed-optimizer"));
  EXPECT_THAT(error_of(concat(gpt2, {"--DDP-impl", "torch", "--framework", "deepspeed"})),
              ::testing::HasSubstr(
                  "--DDP-impl torch is Megatron-LM's own data-parallel wrapper; --framework deepspeed"));
}

TEST(Overlap, FlagsNeedWhatMegatronRequires) {
  EXPECT_EQ(error_of({"--model", "llama3-8b", "--cluster", "dgx-h100", "--num-gpus", "8", "--overlap-grad-reduce",
                      "--overlap-param-gather"}),
            "--overlap-param-gather is only supported with --use-distributed-optimizer (Megatron-LM's argument check)");
  EXPECT_EQ(error_of({"--model", "llama3-8b", "--cluster", "dgx-h100", "--num-gpus", "8",
                      "--use-distributed-optimizer", "--overlap-param-gather"}),
            "--overlap-param-gather must be used with --overlap-grad-reduce (Megatron-LM's argument check)");
}

TEST(Overlap, TpCommOverlapHidesTheSequenceParallelCollectivesUnderTheGemms) {
  // §5.5.1: the SP all-gathers and reduce-scatters of the layers run under their GEMMs; only the last
  // of the 4 pipelined reduce-scatter splits after the projection and fc2 stays exposed.
  const time_report plain = time_with({}), overlapped = time_with({"--tp-comm-overlap"});
  EXPECT_LT(overlapped.breakdown.tp_comm_s, 0.5 * plain.breakdown.tp_comm_s);
  EXPECT_GT(overlapped.breakdown.tp_comm_s, 0);
  EXPECT_LT(overlapped.iteration_s, plain.iteration_s);
  // The exposed remainder is at least the last splits: one a/4 reduce-scatter per block and micro-batch.
  const job_spec job = parse(concat(kLlama70b, {"--tp-comm-overlap"})).job;
  const comm_report r = summarize_comm(job);
  double last_split_s = 0;
  for (const comm_collective& c : r[parallel_dim::tp].collectives) {
    if (c.what == "reduce-scatter of the last GEMM split (exposed)") {
      last_split_s = static_cast<double>(c.calls_per_iteration) * c.time_per_call_s;
    }
  }
  ASSERT_GT(last_split_s, 0);
  const double per_micro = last_split_s / static_cast<double>(job.num_microbatches());
  EXPECT_GE(overlapped.passes[0].forward_s - overlapped.compute.stages[0].forward_s, per_micro * (1 - 1e-9));
}

TEST(Overlap, TpCommOverlapSlowsTheGemmsItSharesSmsWith) {
  // The pipelined reduce-scatter beside the projection's forward GEMM and the bulk overlaps beside QKV's
  // backward GEMMs take 16 of the H100's 132 SMs (TE's defaults): those GEMMs run 132/116 as long.
  const job_spec plain = parse(kLlama70b).job, ub = parse(concat(kLlama70b, {"--tp-comm-overlap"})).job;
  const compute_efficiency e = effective_compute_efficiency(plain.cluster.gpu);
  const unit_time a = layer_compute(plain, e, layer_kind::dense), b = layer_compute(ub, e, layer_kind::dense);
  // (Their exact time, with the slicing of the next test, is pinned there.)
  EXPECT_GT(b.forward.gemm_s, a.forward.gemm_s);
  EXPECT_GT(b.backward.gemm_s, a.backward.gemm_s);
  EXPECT_EQ(b.forward.flops, a.forward.flops);
}

TEST(Overlap, TpCommOverlapRunsItsGemmsAsSlicesOfTheTokens) {
  // §5.5.1, Transformer Engine's default methods (module/base.py initialize_ub; comm_gemm_overlap.cpp
  // split_overlap_ag, split_overlap_rs): QKV's and fc1's forward are ring exchanges, one GEMM per TP
  // rank's slice of the tokens as it arrives (8 of 1,024 rows for Llama-3-70B at TP 8, 8K tokens); the
  // projection's and fc2's forward are a 4-split pipeline and their data gradients ring exchanges.
  // Each slice is its own GEMM: tile, waves, ramp and launch (hand-summed here from estimate_gemm).
  const job_spec ub = parse(concat(kLlama70b, {"--tp-comm-overlap"})).job;
  const compute_efficiency e = effective_compute_efficiency(ub.cluster.gpu);
  const gpu_spec& gpu = ub.cluster.gpu;
  const double share = 132.0 / 116.0, clock = e.sustained_clock_factor;
  auto sliced_s = [&](const gemm_shape& g, std::int64_t n) {
    return static_cast<double>(n) * estimate_gemm(gpu, e, dtype::bf16, {g.m / n, g.n, g.k, g.batch}).time_s;
  };
  double forward_s = 0, backward_s = 0;
  for (const named_gemm& g : layer_gemm_shapes(ub, false)) {
    const gemm_shape dx{g.shape.m, g.shape.k, g.shape.n, 1}, dw{g.shape.k, g.shape.n, g.shape.m, 1};
    const double wgrad_s = estimate_gemm(gpu, e, dtype::bf16, dw).time_s;
    if (g.name == "qkv" || g.name == "mlp_up") {
      forward_s += sliced_s(g.shape, 8);
      backward_s += share * (estimate_gemm(gpu, e, dtype::bf16, dx).time_s + wgrad_s);
    } else if (g.name == "attention_out" || g.name == "mlp_down") {
      forward_s += share * sliced_s(g.shape, 4);
      backward_s += sliced_s(dx, 8) + wgrad_s;
    }
  }
  const unit_time u = layer_compute(ub, e, layer_kind::dense);
  EXPECT_NEAR(u.forward.gemm_s, forward_s / clock, 1e-9 * forward_s);
  EXPECT_NEAR(u.backward.gemm_s, backward_s / clock, 1e-9 * backward_s);
  // Without the flag the same GEMMs run whole: no slower.
  const unit_time whole = layer_compute(parse(kLlama70b).job, e, layer_kind::dense);
  EXPECT_LT(whole.forward.gemm_s, u.forward.gemm_s);
  EXPECT_EQ(whole.forward.flops, u.forward.flops);
}

TEST(Overlap, TpCommOverlapGathersInFp8UnderFp8) {
  // §5.5.1: under FP8 Transformer Engine's all-gather userbuffers hold FP8 (module/base.py:
  // layers_all_gather_overlap, fp8_buf): 1 byte per element; the reduce-scatters stay in bf16.
  const job_spec bf16 = parse(concat(kLlama70b, {"--tp-comm-overlap"})).job;
  const job_spec fp8 = parse(concat(kLlama70b, {"--tp-comm-overlap", "--fp8-format", "hybrid"})).job;
  auto bytes_of = [](const job_spec& job, std::string_view what) {
    const comm_report r = summarize_comm(job);
    for (const comm_collective& c : r[parallel_dim::tp].collectives) {
      if (c.what == what) return c.bytes_per_call;
    }
    ADD_FAILURE() << what;
    return 0.0;
  };
  const double tokens_x_hidden = 8192.0 * 8192.0;  // MBS 1, seq 8192, hidden 8192
  for (const std::string_view gather : {"sequence all-gather before QKV and fc1, ring exchange under the GEMM",
                                        "output-gradient all-gather, ring exchange under the projection's and fc2's data gradient",
                                        "input re-gather, bulk beside QKV's and fc1's data gradient"}) {
    EXPECT_DOUBLE_EQ(bytes_of(bf16, gather), 2 * tokens_x_hidden) << gather;
    EXPECT_DOUBLE_EQ(bytes_of(fp8, gather), tokens_x_hidden) << gather;
  }
  const std::string_view scatter = "reduce-scatter of the last GEMM split (exposed)";
  EXPECT_DOUBLE_EQ(bytes_of(fp8, scatter), bytes_of(bf16, scatter));
  EXPECT_DOUBLE_EQ(bytes_of(fp8, scatter), 2 * tokens_x_hidden / 4);
}

// §5.5.1: torchtitan's async TP (Inductor's micro-pipeline TP over symmetric memory): the block input's
// all-gather, the output reduce-scatters and the output gradient's all-gather, forward and recomputed, run
// under the matmuls they are fused with; the input gradient's reduce-scatter (a sum of data-gradient
// matmuls, which the pass does not match) stays exposed. Llama-3-70B at TP 8, full recomputation, compiled
// blocks: the TP time saved is at most the pipelined rows'.
TEST(Overlap, TorchtitansAsyncTpHidesAllButTheInputGradientsReduceScatter) {
  const args_t titan = {"--model", "llama3-70b", "--cluster", "dgx-h100", "--num-gpus", "64", "--framework", "fsdp",
                        "--zero-stage", "3", "--tp", "8", "--sequence-parallel", "--recompute-granularity", "full",
                        "--torch-compile", "--bf16", "--mbs", "4", "--gbs", "32"};
  const time_report plain = estimate_time(parse(titan).job);
  const job_spec async_job = parse(concat(titan, {"--async-tensor-parallel"})).job;
  const time_report async = estimate_time(async_job);
  const comm_report r = summarize_comm(async_job);
  double pipelined_s = 0;
  int pipelined_rows = 0;
  for (const comm_collective& c : r[parallel_dim::tp].collectives) {
    const bool pipelined = c.what.find("pipelined") != std::string_view::npos &&
                           c.what.find("not pipelined") == std::string_view::npos;
    if (pipelined) {
      pipelined_s += c.time_per_call_s * static_cast<double>(c.calls_per_iteration);
      ++pipelined_rows;
    }
  }
  EXPECT_EQ(pipelined_rows, 5);
  ASSERT_GT(pipelined_s, 0);
  EXPECT_LT(async.breakdown.tp_comm_s, plain.breakdown.tp_comm_s);
  EXPECT_GE(async.breakdown.tp_comm_s, plain.breakdown.tp_comm_s - pipelined_s - 1e-9);
  // The sliced GEMMs and the reduction of the received partials cost compute: less than the TP time saved.
  EXPECT_GT(async.breakdown.compute_s, plain.breakdown.compute_s);
  EXPECT_LT(async.iteration_s, plain.iteration_s);
}

// §5.5.1: a pipelined collective runs beside the GEMM it is fused with, not beside another block's. Llama-3-70B
// at TP 8 (8 GPUs: no DP traffic), 16 × 8K tokens, FP8, async TP: the reduce-scatter after the attention
// projection (8192 × 1024 per rank, 2 bytes an element out) outlasts that GEMM, the one after fc2 (8192 ×
// 3584) does not, so each layer's forward exposes the first's excess; pooled with fc2's spare time it would
// have hidden. By hand from the compute report's per-block GEMM seconds and the collective's time per call.
TEST(Overlap, EachPipelinedCollectiveHidesUnderItsOwnBlocksGemm) {
  const args_t titan = {"--model", "llama3-70b", "--cluster", "dgx-h100", "--num-gpus", "8", "--framework", "fsdp",
                        "--zero-stage", "3", "--tp", "8", "--sequence-parallel", "--recompute-granularity", "full",
                        "--torch-compile", "--bf16", "--fp8-format", "hybrid", "--fp8-recipe", "tensorwise",
                        "--mbs", "16", "--gbs", "16", "--async-tensor-parallel"};
  const job_spec job = parse(titan).job;
  const time_report t = estimate_time(job);
  const comm_report r = summarize_comm(job);
  auto per_call_s = [&](std::string_view what) {
    for (const comm_collective& c : r[parallel_dim::tp].collectives) {
      if (c.what == what) return c.time_per_call_s;
    }
    ADD_FAILURE() << what;
    return 0.0;
  };
  const double gather_s = per_call_s("block input all-gather, pipelined with QKV's and w1/w3's matmuls");
  const double scatter_s = per_call_s("reduce-scatter pipelined with wo's and w2's matmuls");
  ASSERT_EQ(t.compute.stages.size(), 1u);
  const stage_compute& sc = t.compute.stages[0];
  const tp_block_caps& attention = sc.tp_blocks[static_cast<std::size_t>(tp_block_kind::attention)];
  const tp_block_caps& mlp = sc.tp_blocks[static_cast<std::size_t>(tp_block_kind::mlp)];
  ASSERT_EQ(attention.count, 80);
  ASSERT_EQ(mlp.count, 80);
  EXPECT_LT(attention.forward_row_s, scatter_s);
  EXPECT_GT(mlp.forward_row_s, scatter_s);
  // The forward's exposed TP: each block's excess over its own GEMMs, plus the rows nothing hides (the
  // embedding's reduce-scatter, the output layer's gather, the cross-entropy all-reduces; one micro-batch).
  double unhidden_s = 0;
  for (const comm_collective& c : r[parallel_dim::tp].collectives) {
    if (c.phase == comm_phase::forward && c.what.find("pipelined") == std::string_view::npos) {
      unhidden_s += c.time_per_call_s * static_cast<double>(c.calls_per_iteration);
    }
  }
  auto excess = [](double c, double cap) { return std::max(0.0, c - cap); };
  const double expected_s = 80 * (excess(gather_s, attention.forward_column_s) + excess(gather_s, mlp.forward_column_s) +
                                  excess(scatter_s, attention.forward_row_s) + excess(scatter_s, mlp.forward_row_s)) +
                            unhidden_s;
  ASSERT_EQ(t.comm.size(), 1u);
  EXPECT_NEAR(t.comm[0].forward_s, expected_s, 1e-9 * expected_s);
  EXPECT_GT(t.comm[0].forward_s, unhidden_s + 80 * (scatter_s - attention.forward_row_s) - 1e-12);
}

TEST(Overlap, ExpertAllToAllsHideUnderAnotherMicroBatchsCompute) {
  // §5.5.3: Mixtral on 2 H100 nodes, EP 8 over the network with the all-to-all dispatcher.
  const args_t mixtral = {"--model", "mixtral-8x7b", "--cluster", "dgx-h100", "--num-gpus", "16", "--ep", "8",
                          "--moe-token-dispatcher-type", "alltoall", "--use-distributed-optimizer", "--gbs", "256",
                          "--seq-length", "4096"};
  const time_report plain = estimate_time(parse(mixtral).job);
  const time_report overlapped = estimate_time(parse(concat(mixtral, {"--overlap-moe-expert-parallel-comm"})).job);
  ASSERT_GT(plain.breakdown.tp_comm_s, 0);
  EXPECT_LT(overlapped.breakdown.tp_comm_s, plain.breakdown.tp_comm_s);
  EXPECT_GE(overlapped.breakdown.tp_comm_s, 0);
  EXPECT_LE(overlapped.iteration_s, plain.iteration_s);
  // Megatron-Core's checks on the flag.
  EXPECT_THAT(error_of({"--model", "mixtral-8x7b", "--num-gpus", "16", "--ep", "8", "--overlap-moe-expert-parallel-comm"}),
              ::testing::HasSubstr("alltoall/flex token dispatcher"));
  EXPECT_THAT(error_of({"--model", "llama3-8b", "--num-gpus", "8", "--overlap-moe-expert-parallel-comm"}),
              ::testing::HasSubstr("only supported with expert model parallelism"));
  EXPECT_THAT(error_of(concat(mixtral, {"--overlap-moe-expert-parallel-comm", "--recompute-granularity", "full"})),
              ::testing::HasSubstr("needs full recomputation disabled"));
  // At PP > 1 it needs interleaving, which a custom pipeline layout gives (Megatron-LM's arguments.py
  // derives VPP = stages / PP from it first): Mixtral's 32 layers in 8 stages over PP 2 is VPP 4, as
  // Megatron-LM's CI case gpt3_mcore_te_tp2_pp2_ep4_etp1_selective_recompute_experimental runs it.
  const args_t pp2 = {"--model", "mixtral-8x7b", "--cluster", "dgx-h100", "--num-gpus", "32", "--ep", "8", "--pp", "2",
                      "--moe-token-dispatcher-type", "alltoall", "--use-distributed-optimizer", "--gbs", "256",
                      "--seq-length", "4096", "--overlap-moe-expert-parallel-comm"};
  EXPECT_THAT(error_of(pp2), ::testing::HasSubstr("needs --virtual-pipeline-model-parallel-size when PP > 1"));
  const parsed_job laid_out = parse(concat(pp2, {"--pipeline-model-parallel-layout", "Et*3|(tttt|)*6t*5L"}));
  EXPECT_EQ(laid_out.job.parallel.vpp, 4);
}

TEST(Overlap, DelayedWeightGradientsAreTheCoverTheBoundAlreadyCounts) {
  // §5.5.3: --delay-wgrad-compute runs the weight-gradient GEMMs after the backward dispatch is launched
  // (model_chunk_schedule_plan.py, backward_dw), as cover for it. The bound counts every GEMM of the pass
  // as cover already, so the flag changes no figure; Megatron-Core refuses it without the overlap.
  const args_t mixtral = {"--model", "mixtral-8x7b", "--cluster", "dgx-h100", "--num-gpus", "16", "--ep", "8",
                          "--moe-token-dispatcher-type", "alltoall", "--use-distributed-optimizer", "--gbs", "256",
                          "--seq-length", "4096", "--overlap-moe-expert-parallel-comm"};
  const time_report overlapped = estimate_time(parse(mixtral).job);
  const time_report delayed = estimate_time(parse(concat(mixtral, {"--delay-wgrad-compute"})).job);
  EXPECT_DOUBLE_EQ(delayed.iteration_s, overlapped.iteration_s);
  EXPECT_DOUBLE_EQ(delayed.breakdown.tp_comm_s, overlapped.breakdown.tp_comm_s);
  EXPECT_EQ(error_of({"--model", "mixtral-8x7b", "--num-gpus", "16", "--ep", "8", "--moe-token-dispatcher-type", "alltoall",
                      "--delay-wgrad-compute"}),
            "--delay-wgrad-compute needs --overlap-moe-expert-parallel-comm (Megatron-Core's check: "
            "\"overlap_moe_expert_parallel_comm must be enabled when enabling delay_wgrad_compute\")");
}

TEST(Overlap, ExpertAllToAllOverlapWarmsUpOneMoreChunk) {
  // §3.5: with --overlap-moe-expert-parallel-comm the interleaved warm-up runs one more forward
  // (schedules.py get_pp_rank_microbatches): rank 1 of PP 4 × VPP 2 holds (4 − 1 − 1)·2 + 4 + 1 = 9
  // chunk-micro-batches, then 10, one more chunk of 4 Mixtral layers.
  const args_t mixtral = {"--model", "mixtral-8x7b", "--cluster", "dgx-h100", "--num-gpus", "32", "--ep", "8", "--pp", "4",
                          "--vpp", "2", "--moe-token-dispatcher-type", "alltoall", "--use-distributed-optimizer",
                          "--gbs", "256", "--seq-length", "4096"};
  const memory_report plain = estimate_memory(parse(mixtral).job);
  const memory_report overlapped = estimate_memory(parse(concat(mixtral, {"--overlap-moe-expert-parallel-comm"})).job);
  const stage_memory& a = plain.stages[1];
  const stage_memory& b = overlapped.stages[1];
  ASSERT_EQ(a.num_layers, 8);
  const double per_layer = a.activations_per_microbatch_bytes / 8;
  EXPECT_NEAR(b.activations_bytes - a.activations_bytes, 4 * per_layer, 1e-6 * a.activations_bytes);
}

TEST(Overlap, SharedExpertsHideTheirLayersAllToAlls) {
  // §5.5.3: Qwen2-57B-A14B (a 20480-wide shared expert) on 4 H100 nodes, EP 8 across two nodes.
  const args_t qwen = {"--model", "qwen2-57b-a14b", "--cluster", "dgx-h100", "--num-nodes", "4", "--tp", "2", "--ep",
                       "8", "--mbs", "1", "--gbs", "256", "--use-distributed-optimizer", "--sequence-parallel",
                       "--moe-token-dispatcher-type", "alltoall"};
  const job_spec plain_job = parse(qwen).job;
  const time_report plain = estimate_time(plain_job);
  const time_report overlapped = estimate_time(parse(concat(qwen, {"--moe-shared-expert-overlap"})).job);
  ASSERT_GT(plain.breakdown.tp_comm_s, 0);
  EXPECT_LT(overlapped.breakdown.tp_comm_s, plain.breakdown.tp_comm_s);
  EXPECT_GE(overlapped.breakdown.tp_comm_s, 0);
  EXPECT_EQ(overlapped.breakdown.compute_s, plain.breakdown.compute_s);
  // It hides no more than the shared experts' GEMMs of every MoE layer, forward and backward.
  const compute_report cr = estimate_compute(plain_job);
  const stage_compute& sc = cr.stages.front();
  const double budget = static_cast<double>(plain_job.num_microbatches()) *
                        (sc.forward_shared_expert_s + sc.backward_shared_expert_s);
  ASSERT_GT(budget, 0);
  EXPECT_LE(plain.breakdown.tp_comm_s - overlapped.breakdown.tp_comm_s, budget * (1 + 1e-9));
  // The backward's budget is its own shared-expert GEMMs; their forward is redone there only under
  // recomputation (full, or the moe/shared_experts modules at TP 1).
  double layers_backward_s = 0, layers_forward_s = 0;
  for (std::size_t k = 0; k < kNumLayerKinds; ++k) {
    const double n = static_cast<double>(plain_job.model.count_layer_kinds(0, plain_job.model.num_layers)[k]) /
                     static_cast<double>(plain_job.parallel.pp);
    layers_backward_s += n * cr.layers[k].backward.shared_expert_s;
    layers_forward_s += n * cr.layers[k].forward.shared_expert_s;
  }
  EXPECT_NEAR(sc.backward_shared_expert_s, layers_backward_s, 1e-9 * layers_backward_s);
  const job_spec redone = parse(concat(qwen, {"--recompute-granularity", "full", "--recompute-method", "uniform",
                                              "--recompute-num-layers", "1"})).job;
  EXPECT_NEAR(estimate_compute(redone).stages.front().backward_shared_expert_s, layers_backward_s + layers_forward_s,
              1e-9 * layers_backward_s);
  // Without shared experts the flag changes nothing (Megatron: "only effective when
  // moe-shared-expert-intermediate-size is set").
  const args_t mixtral = {"--model", "mixtral-8x7b", "--cluster", "dgx-h100", "--num-gpus", "16", "--ep", "8",
                          "--moe-token-dispatcher-type", "alltoall", "--use-distributed-optimizer", "--gbs", "256"};
  EXPECT_EQ(estimate_time(parse(concat(mixtral, {"--moe-shared-expert-overlap"})).job).iteration_s,
            estimate_time(parse(mixtral).job).iteration_s);
  // Megatron-Core's checks (transformer_config.py).
  args_t allgather = concat(qwen, {"--moe-shared-expert-overlap"});
  allgather[allgather.size() - 2] = "allgather";
  EXPECT_THAT(error_of(allgather), ::testing::HasSubstr("only works with alltoall or flex token dispatcher"));
  EXPECT_THAT(error_of(concat(qwen, {"--moe-shared-expert-overlap", "--overlap-moe-expert-parallel-comm"})),
              ::testing::HasSubstr("disable it when enabling --overlap-moe-expert-parallel-comm"));
}

TEST(Overlap, InterleavedTransfersRunBesideTheNextChunkByDefault) {
  // §5.4: Megatron's overlap_p2p_comm is on with interleaving; --no-overlap-p2p-communication makes every
  // transfer block its sender again. Llama-3-70B, PP 4 over four nodes, 4 layers per virtual stage.
  const args_t interleaved = {"--model", "llama3-70b", "--cluster", "dgx-h100", "--num-nodes", "16", "--tp", "4",
                              "--pp", "4", "--num-layers-per-virtual-pipeline-stage", "4", "--mbs", "1", "--gbs",
                              "256", "--use-distributed-optimizer", "--sequence-parallel"};
  const time_report overlapped = estimate_time(parse(interleaved).job);
  const time_report blocking = estimate_time(parse(concat(interleaved, {"--no-overlap-p2p-communication"})).job);
  ASSERT_GT(overlapped.p2p_s, 0);
  EXPECT_LT(overlapped.iteration_s, blocking.iteration_s);
  EXPECT_EQ(overlapped.breakdown.compute_s, blocking.breakdown.compute_s);
  // Without interleaving Megatron turns it off: the flag changes nothing.
  const args_t plain = {"--model", "llama3-70b", "--cluster", "dgx-h100", "--num-nodes", "16", "--tp", "4", "--pp",
                        "4", "--mbs", "1", "--gbs", "256", "--use-distributed-optimizer", "--sequence-parallel"};
  EXPECT_EQ(estimate_time(parse(plain).job).iteration_s,
            estimate_time(parse(concat(plain, {"--no-overlap-p2p-communication"})).job).iteration_s);
}

TEST(Overlap, TpCommOverlapNeedsSequenceParallelAndMegatron) {
  EXPECT_THAT(error_of({"--model", "llama3-8b", "--cluster", "dgx-h100", "--num-gpus", "8", "--tp", "2",
                        "--tp-comm-overlap"}),
              ::testing::HasSubstr("--tp-comm-overlap needs --sequence-parallel with TP > 1"));
  EXPECT_THAT(error_of({"--model", "llama3-8b", "--cluster", "dgx-h100", "--num-gpus", "8", "--tp", "2", "--sp",
                        "--framework", "deepspeed", "--tp-comm-overlap"}),
              ::testing::HasSubstr("--tp-comm-overlap is Megatron-Core's"));
}

}  // namespace
}  // namespace trainplan

namespace trainplan {
namespace {

// §5.4: --overlap-param-gather-with-optimizer-step starts the distributed optimizer's all-gather under
// the optimizer step too: what the first forwards leave exposed shrinks by up to the step's time. On a
// slow network (a 10 Gb/s NIC) the gather outlasts the forwards, so the step's share shows.
TEST(OverlapParamGather, WithTheOptimizerStepTheStepHidesPartOfTheGather) {
  const args_t base = {"--model", "gpt3-175b", "--cluster", "dgx-a100", "--num-nodes", "16", "--tp", "8", "--pp", "4",
                       "--vpp", "4", "--gbs", "64", "--mbs", "1", "--sp", "--use-distributed-optimizer",
                       "--overlap-grad-reduce", "--overlap-param-gather", "--nic-bandwidth-gbit-per-s", "10"};
  const time_report plain = estimate_time(parse(base).job);
  const time_report step = estimate_time(parse(concat(base, {"--overlap-param-gather-with-optimizer-step"})).job);
  for (std::size_t i = 0; i < plain.passes.size(); ++i) {
    const stage_compute& sc = plain.compute.stages[i];
    const stage_comm& c = plain.comm[i];
    const double forward_window = (sc.forward_s + c.forward_s) * 4;
    // What hides stretches the compute it runs beside by its kernel's 32 SMs of the A100's 108 (§5.4).
    auto exposed_in = [&](double window_s) {
      const double hidden = std::min(c.param_gather_s, window_s);
      return c.param_gather_s - hidden + hidden * 32.0 / 76.0;
    };
    const double exposed = exposed_in(forward_window);
    const double exposed_with_step = exposed_in(forward_window + sc.optimizer_s + c.optimizer_s);
    EXPECT_NEAR(plain.passes[i].optimizer_s - step.passes[i].optimizer_s, exposed - exposed_with_step, 1e-12) << i;
  }
  EXPECT_LE(step.iteration_s, plain.iteration_s);
  // Megatron-LM's argument checks.
  EXPECT_THAT(error_of({"--model", "llama3-8b", "--num-gpus", "8", "--use-distributed-optimizer", "--overlap-grad-reduce",
                        "--overlap-param-gather", "--overlap-param-gather-with-optimizer-step"}),
              ::testing::HasSubstr("is only supported with interleaved pipeline parallelism"));
  EXPECT_THAT(error_of(concat({"--model", "gpt3-175b", "--num-gpus", "128", "--tp", "8", "--pp", "4", "--vpp", "4",
                               "--use-distributed-optimizer"}, {"--overlap-param-gather-with-optimizer-step"})),
              ::testing::HasSubstr("must be used with --overlap-param-gather"));
}

}  // namespace
}  // namespace trainplan
