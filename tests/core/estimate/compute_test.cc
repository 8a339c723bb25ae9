// Compute model: GEMM efficiency factors, pass ratios, FLOP counting (docs/formulas.md §5.1-§5.3).
#include "trainplan/cli/cli.h"
#include "trainplan/core/estimate/compute.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "trainplan/cli/args.h"
#include "trainplan/core/base/error.h"
#include "trainplan/core/estimate/memory.h"
#include "trainplan/core/estimate/time.h"

namespace trainplan {
namespace {

const gpu_spec& a100() { return find_gpu("a100-sxm4-80gb"); }

TEST(Compute, WaveQuantization) {
  // 108 SMs, 256×128 tiles: 108 tiles fill one wave; 109 need a second, nearly empty one.
  const compute_efficiency e = effective_compute_efficiency(a100());
  const auto full = estimate_gemm(a100(), e, dtype::bf16, {256 * 12, 128 * 9, 8192, 1});
  const auto spill = estimate_gemm(a100(), e, dtype::bf16, {256 * 12 + 256, 128 * 9, 8192, 1});
  EXPECT_GT(full.efficiency, spill.efficiency * 1.3);
}

TEST(Compute, TileQuantizationAndAlignment) {
  const compute_efficiency e = effective_compute_efficiency(a100());
  const auto aligned = estimate_gemm(a100(), e, dtype::fp16, {4096, 4096, 4096, 1});
  const auto ragged = estimate_gemm(a100(), e, dtype::fp16, {4096, 4100, 4096, 1});   // multiple of 4 only
  const auto odd8 = estimate_gemm(a100(), e, dtype::fp16, {4096, 4104, 4096, 1});     // multiple of 8 only
  EXPECT_LT(ragged.efficiency, 0.2 * aligned.efficiency);
  EXPECT_LT(odd8.efficiency, aligned.efficiency);
  EXPECT_GT(odd8.efficiency, 0.8 * aligned.efficiency);
}

/// §5.2 read literally: every tile of the menu, ⌈m/tm⌉·⌈n/tn⌉·b tiles in ⌈tiles/slots⌉ waves, the best
/// peak × m·n·b / (waves · slots · tm · tn); the model's one pass (shared tile counts, a tile skipped
/// once it cannot win, the wave count without a ceiling) must choose the same.
double brute_force_quantization(const gpu_spec& gpu, const compute_efficiency& e, const gemm_shape& s) {
  const double slots = static_cast<double>(gpu.sm_count) * e.tiles_per_sm;
  double best = 0;
  for (const gemm_tile& t : e.tiles) {
    const double tiles = std::ceil(static_cast<double>(s.m) / static_cast<double>(t.m)) *
                         std::ceil(static_cast<double>(s.n) / static_cast<double>(t.n)) * static_cast<double>(s.batch);
    const double waves = std::ceil(tiles / slots);
    best = std::max(best, t.peak_fraction * static_cast<double>(s.m) * static_cast<double>(s.n) *
                              static_cast<double>(s.batch) / (waves * slots * static_cast<double>(t.m) * static_cast<double>(t.n)));
  }
  return best;
}

TEST(Compute, OnePassTileChoiceEqualsEveryTileTried) {
  // The quantization factor is efficiency ÷ (alignment × prologue × ramp); a deterministic spread of
  // shapes (small, ragged, wave edges, batched) on every catalog GPU.
  std::uint64_t x = 12345;
  auto next = [&](std::int64_t hi) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return 1 + static_cast<std::int64_t>((x >> 33) % static_cast<std::uint64_t>(hi));
  };
  int checked = 0;
  for (const gpu_spec& g : gpu_catalog()) {
    const compute_efficiency e = effective_compute_efficiency(g);
    for (int i = 0; i < 300; ++i) {
      const std::int64_t scale = i % 3 == 0 ? 300 : (i % 3 == 1 ? 5000 : 60000);
      const gemm_shape s{next(scale), next(scale) * 8, next(scale) * 8, i % 7 == 0 ? next(64) : 1};
      const gemm_estimate est = estimate_gemm(g, e, dtype::bf16, s);
      const double k = static_cast<double>(s.k), flops = 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * k *
                                                          static_cast<double>(s.batch);
      // alignment: n and k are multiples of 8 here, so the factor is 1, align64 or align8 (§5.2).
      auto align = [&](std::int64_t d) { return d % 128 == 0 ? 1.0 : (d % 64 == 0 ? e.align64_factor : e.align8_factor); };
      const double rest = std::min(align(s.n), align(s.k)) * (k / (k + e.k_half)) * (flops / (flops + e.ramp_flops));
      EXPECT_NEAR(est.efficiency / rest, brute_force_quantization(g, e, s), 1e-12)
          << g.name << " m=" << s.m << " n=" << s.n << " k=" << s.k << " b=" << s.batch;
      ++checked;
    }
  }
  EXPECT_GT(checked, 1000);
}

TEST(Compute, ChunkScalesAreEachChunksShareOfItsRank) {
  // §5.4: rank 1 of Megatron's layout "E|ttttttt||L" (PP 2, VPP 2) runs 7 layers in its first chunk and
  // only the loss in its second; rank 0 the embedding alone, then nothing. Each chunk's forward over its
  // rank's mean chunk, by hand from the unit times.
  const parsed_job pj = parse_job_args({"--model", "llama3-8b", "--num-layers", "7", "--cluster", "dgx-h100", "--num-gpus",
                                        "8", "--tp", "4", "--pp", "2", "--gbs", "64", "--bf16",
                                        "--pipeline-model-parallel-layout", "E|ttttttt||L"});
  const compute_report r = estimate_compute(pj.job);
  ASSERT_EQ(r.chunk_forward_scale.size(), 4u);  // index chunk·PP + rank
  const double host_s = host_overhead_per_layer_pass_s(pj.job.training);
  const double layers_fwd = 7 * (r.of(layer_kind::dense).forward.total_s() + host_s);
  const double out_fwd = r.output.forward.total_s();
  EXPECT_NEAR(r.chunk_forward_scale[1], 2 * layers_fwd / (layers_fwd + out_fwd), 1e-12);
  EXPECT_NEAR(r.chunk_forward_scale[3], 2 * out_fwd / (layers_fwd + out_fwd), 1e-12);
  EXPECT_NEAR(r.chunk_forward_scale[0], 2.0, 1e-12);  // rank 0: all of its work in chunk 0
  EXPECT_NEAR(r.chunk_forward_scale[2], 0.0, 1e-12);
  for (std::size_t rank = 0; rank < 2; ++rank) {
    EXPECT_NEAR(r.chunk_forward_scale[rank] + r.chunk_forward_scale[2 + rank], 2.0, 1e-12);
    EXPECT_NEAR(r.chunk_backward_scale[rank] + r.chunk_backward_scale[2 + rank], 2.0, 1e-12);
  }
  // The layers' share, which carries the rank's per-layer collectives: rank 1's seven all in its first chunk;
  // rank 0 has none, its chunks share alike.
  ASSERT_EQ(r.chunk_layer_share.size(), 4u);
  EXPECT_DOUBLE_EQ(r.chunk_layer_share[1], 2.0);
  EXPECT_DOUBLE_EQ(r.chunk_layer_share[3], 0.0);
  EXPECT_DOUBLE_EQ(r.chunk_layer_share[0], 1.0);
  EXPECT_DOUBLE_EQ(r.chunk_layer_share[2], 1.0);
  // In the schedule a pass is compute and the TP collectives inside it: the loss-only chunk takes its compute
  // share of the rank's compute and none of its layers' collectives (§5.4). Rank 1's forward of chunk 1 for
  // micro-batch 0, from the event timeline, less its (blocking, warm-up) send.
  const time_report t = estimate_time(pj.job, true);
  const double compute_s = t.compute.stages[1].forward_s, pass_s = t.passes[1].forward_s;
  ASSERT_GT(pass_s - compute_s, 1e-6);  // TP 4 without overlap: collectives inside the pass
  bool found = false;
  for (const schedule_event& ev : t.pipeline.events) {
    if (ev.stage != 1 || ev.chunk != 1 || ev.microbatch != 0 || ev.backward) continue;
    EXPECT_NEAR(ev.end_s - ev.start_s, r.chunk_forward_scale[3] * compute_s, 1e-12);
    found = true;
  }
  EXPECT_TRUE(found);
  // An even interleaved split: the middle ranks' chunks are alike, the ends carry the embedding and output.
  const parsed_job even = parse_job_args({"--model", "llama3-8b", "--cluster", "dgx-h100", "--num-gpus", "32", "--tp", "4",
                                          "--pp", "4", "--vpp", "2", "--gbs", "64", "--bf16"});
  const compute_report e = estimate_compute(even.job);
  ASSERT_EQ(e.chunk_forward_scale.size(), 8u);
  EXPECT_NEAR(e.chunk_forward_scale[1], 1.0, 1e-12);
  EXPECT_NEAR(e.chunk_forward_scale[5], 1.0, 1e-12);
  EXPECT_GT(e.chunk_forward_scale[7], 1.0);  // rank 3's last chunk: 4 layers and the output layer
  EXPECT_GT(e.chunk_forward_scale[0], 1.0);  // rank 0's first chunk: the embedding
  // Without interleaving there is nothing to scale.
  EXPECT_TRUE(estimate_compute(parse_job_args({"--model", "llama3-8b", "--cluster", "dgx-h100", "--num-gpus", "8", "--tp",
                                               "4", "--pp", "2", "--gbs", "64"})
                                   .job)
                  .chunk_forward_scale.empty());
}

TEST(Compute, SmallGemmsRampDown) {
  const compute_efficiency e = effective_compute_efficiency(a100());
  EXPECT_LT(estimate_gemm(a100(), e, dtype::bf16, {64, 64, 64, 1}).efficiency, 0.05);
}

TEST(Compute, EveryCatalogGpuHasDefaults) {
  for (const gpu_spec& g : gpu_catalog()) {
    const compute_efficiency e = effective_compute_efficiency(g);
    SCOPED_TRACE(g.name);
    // An entry of its own: a GPU added to the catalog without one would silently take the nearest's.
    EXPECT_TRUE(has_own_compute_defaults(g.name));
    EXPECT_FALSE(e.tiles.empty());
    EXPECT_GT(e.memory_bandwidth_fraction, 0);
    EXPECT_GT(e.unaligned_factor, 0);
    EXPECT_GT(e.kernel_overhead_s, 0);
  }
}

TEST(Compute, AGpuFromAFileHasNoEntryOfItsOwn) {
  EXPECT_FALSE(has_own_compute_defaults("my-gpu"));  // it gets the nearest peak's entry
}

TEST(Compute, OverrideWinsOverDefault) {
  gpu_spec g = a100();
  g.compute.memory_bandwidth_fraction = 0.5;
  EXPECT_DOUBLE_EQ(effective_compute_efficiency(g).memory_bandwidth_fraction, 0.5);
  EXPECT_DOUBLE_EQ(effective_compute_efficiency(g).unaligned_factor,
                   effective_compute_efficiency(a100()).unaligned_factor);
}

TEST(Compute, BackwardIsTwiceForwardAndRecomputeAddsAForward) {
  parsed_job pj = parse_job_args({"--preset", "bloom-176b-production"});
  const compute_report r = estimate_compute(pj.job);
  EXPECT_DOUBLE_EQ(r.of(layer_kind::dense).backward.flops, 2 * r.of(layer_kind::dense).forward.flops);
  const double ratio = r.of(layer_kind::dense).backward.gemm_s / r.of(layer_kind::dense).forward.gemm_s;
  EXPECT_GT(ratio, 1.8);
  EXPECT_LT(ratio, 2.3);
  // The recomputed forward of each of the rank's 6 layers, plus its host time per pass (§5.9).
  const stage_compute& mid = r.stages[5];
  const double host = host_overhead_per_layer_pass_s(pj.job.training);
  EXPECT_DOUBLE_EQ(host, 2.5e-3);  // DeepSpeed with full recomputation
  EXPECT_NEAR(mid.recompute_s, 6 * (r.of(layer_kind::dense).forward.total_s() + host), 1e-12);
}

TEST(Compute, HostOverheadAndAccumulationFollowTheFramework) {
  // §5.9: DeepSpeed's checkpointing synchronises around every layer; Megatron-LM does not, and fuses
  // the gradient accumulation into the weight-gradient GEMM.
  parsed_job ds = parse_job_args({"--preset", "bloom-176b-production"});
  parsed_job mg = parse_job_args({"--preset", "bloom-176b-production", "--framework", "megatron"});
  EXPECT_DOUBLE_EQ(host_overhead_per_layer_pass_s(mg.job.training), 0.0);
  EXPECT_DOUBLE_EQ(accumulation_bytes_per_parameter(mg.job), 0.0);
  // bf16 with BF16_Optimizer: AccumulateGrad (3 × 2 bytes) + update_hp_grads (2 + 8 bytes).
  EXPECT_DOUBLE_EQ(accumulation_bytes_per_parameter(ds.job), 16.0);
  parsed_job own = parse_job_args({"--preset", "bloom-176b-production", "--host-overhead-ms", "1"});
  EXPECT_DOUBLE_EQ(host_overhead_per_layer_pass_s(own.job.training), 1e-3);
  // The overhead is per layer pass: forward, recomputed forward and backward of a 6-layer rank.
  const compute_report a = estimate_compute(own.job);
  parsed_job none = parse_job_args({"--preset", "bloom-176b-production", "--host-overhead-ms", "0"});
  const compute_report b = estimate_compute(none.job);
  EXPECT_NEAR(a.stages[5].forward_s - b.stages[5].forward_s, 6e-3, 1e-12);
  EXPECT_NEAR(a.stages[5].backward_s - b.stages[5].backward_s, 12e-3, 1e-12);
}

TEST(Compute, AllocatorSlowdownStartsAtNinetyPercent) {
  EXPECT_DOUBLE_EQ(allocator_slowdown(0.5), 1.0);
  EXPECT_DOUBLE_EQ(allocator_slowdown(0.9), 1.0);
  EXPECT_NEAR(allocator_slowdown(0.95), 1.10, 1e-12);
  EXPECT_NEAR(allocator_slowdown(1.0), 1.40, 1e-12);
  // Beyond capacity the job does not fit: flagged, and timed without the penalty (issue 27), so that a
  // memory over-estimate never becomes a time error.
  EXPECT_DOUBLE_EQ(allocator_slowdown(1.0 + 1e-9), 1.0);
  EXPECT_DOUBLE_EQ(allocator_slowdown(1.3), 1.0);
}

TEST(Compute, HardwareFlopsAreNarayananEq3) {
  // BLOOM's log line: 105.22 s/iteration → 149.02 TFLOPs on 384 GPUs (full recomputation).
  parsed_job pj = parse_job_args({"--preset", "bloom-176b-production"});
  const compute_report r = estimate_compute(pj.job);
  const double B = 2048, s = 2048, l = 70, h = 14336, V = 250880;
  const double eq3 = 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
  EXPECT_NEAR(r.hardware_flops / eq3, 1.0, 1e-9);
  EXPECT_NEAR(r.hardware_flops / (105.22 * 384 * 1e12), 149.02, 0.01);
  EXPECT_NEAR(r.model_flops / r.hardware_flops, 72.0 / 96 * (1 + s / (6 * h) + V / (12 * l * h)) /
                                                    (1 + s / (6 * h) + V / (16 * l * h)), 1e-9);
}

}  // namespace
}  // namespace trainplan

namespace trainplan {
namespace {

TEST(ComputeBackwardSplit, WeightGradientIsTheDwGemmsOfTheLayer) {
  // The backward's weight-gradient part (what zero-bubble schedules move) is exactly the dW GEMMs of
  // the layer's weight GEMMs: dW[k×n] = Xᵀ[k×m]·dY[m×n] for each forward [m×n×k].
  const job_spec job = parse_job_args({"--model", "llama3-8b", "--cluster", "dgx-h100", "--num-gpus", "8", "--tp", "2",
                                       "--gbs", "32"})
                           .job;
  const compute_efficiency e = effective_compute_efficiency(job.cluster.gpu);
  const unit_time u = layer_compute(job, e, false);
  double dw = 0;
  for (const named_gemm& g : layer_gemm_shapes(job, false)) {
    if (g.name == "logits" || g.name.starts_with("attention_s") || g.name.starts_with("attention_c")) continue;
    dw += estimate_gemm(job.cluster.gpu, e, job.training.precision, {g.shape.k, g.shape.n, g.shape.m, g.shape.batch})
              .time_s;
  }
  dw /= e.sustained_clock_factor;  // Hopper's GEMMs in training: 0.94 of the benchmark clock (§5.6)
  ASSERT_GT(e.sustained_clock_factor, 0.9);
  EXPECT_NEAR(u.backward.weight_gradient_s, dw, 1e-15);
  EXPECT_GT(u.backward.weight_gradient_s, 0.3 * u.backward.gemm_s);  // dX and dW have equal FLOPs
  EXPECT_LT(u.backward.weight_gradient_s, 0.7 * u.backward.gemm_s);
  // Per rank: a part of the backward, carried to the schedule's stage times.
  const time_report t = estimate_time(job);
  for (const stage_times& s : t.passes) {
    EXPECT_GT(s.backward_weight_s, 0);
    EXPECT_LT(s.backward_weight_s, s.backward_s);
  }
}

}  // namespace
}  // namespace trainplan

namespace trainplan {
namespace {

/// One layer of `kind` as the job of `base` and `extra` flags runs it (§5).
unit_time layer_of(const std::vector<std::string>& base, const std::vector<std::string>& extra,
                   layer_kind kind = layer_kind::dense) {
  std::vector<std::string> a = base;
  a.insert(a.end(), extra.begin(), extra.end());
  const job_spec job = parse_job_args(a).job;
  return layer_compute(job, effective_compute_efficiency(job.cluster.gpu), kind);
}

/// What a byte of a memory-bound kernel costs on the job's GPU (§5.3), s.
double seconds_per_byte(const job_spec& job) {
  const compute_efficiency e = effective_compute_efficiency(job.cluster.gpu);
  return 1.0 / (job.cluster.gpu.memory_bandwidth_bytes_per_s * e.memory_bandwidth_fraction);
}

// §5.3: the alltoall dispatcher sorts the rows it receives by local expert after the dispatch and back
// before the combine (Megatron-Core's MoEAlltoAllTokenDispatcher, sort_chunks_by_idxs); flex does not. Mixtral
// 8x7B at EP 2 (4 local experts), 4,096 tokens, top-2, balanced: 2·4096·2/8 = 2,048 rows per local expert,
// 8,192 rows of 4,096 bf16 elements read and written twice.
TEST(ComputeMoe, TheAllToAllDispatcherSortsTheReceivedRowsByLocalExpert) {
  auto layer = [](const char* dispatcher) {
    const job_spec job = parse_job_args({"--model", "mixtral-8x7b", "--cluster", "dgx-h100", "--num-gpus", "8", "--ep", "2",
                                         "--seq-length", "4096", "--moe-token-dispatcher-type", dispatcher})
                             .job;
    return layer_compute(job, effective_compute_efficiency(job.cluster.gpu), layer_kind::moe);
  };
  const job_spec job = parse_job_args({"--model", "mixtral-8x7b", "--cluster", "dgx-h100", "--num-gpus", "8"}).job;
  const compute_efficiency e = effective_compute_efficiency(job.cluster.gpu);
  const double per_byte = 1.0 / (job.cluster.gpu.memory_bandwidth_bytes_per_s * e.memory_bandwidth_fraction);
  const double sorted = 2.0 * 2 * 2 * 8192 * 4096;
  const unit_time a2a = layer("alltoall"), flex = layer("flex");
  EXPECT_NEAR(a2a.forward.memory_s - flex.forward.memory_s, sorted * per_byte + 2 * e.kernel_overhead_s, 1e-12);
  EXPECT_NEAR(a2a.backward.memory_s - flex.backward.memory_s, sorted * per_byte + 2 * e.kernel_overhead_s, 1e-12);
}

// §5.3: a layer's RMSNorm, RoPE and GQA copies as torchtitan's eager Llama runs them (framework.cc
// kLayerKernels), counted by hand from its code: RMSNorm 4e + 28 bytes per element in 7 kernels against one
// fused kernel's 2e; RoPE 2e + 16 in 3 kernels per tensor; repeat_kv's K/V copies and the output's contiguous
// copy. Llama-3-8B at 8,192 tokens on 8 GPUs (FSDP, bf16: e = 2), one dense layer's forward.
TEST(ComputeEagerKernels, TorchtitansNormsRopeAndGqaCopiesByTheBytesTheyMove) {
  const std::vector<std::string> base = {"--model", "llama3-8b", "--cluster", "dgx-h100", "--num-gpus", "8",
                                         "--seq-length", "8192", "--framework", "fsdp", "--zero-stage", "3"};
  auto layer = [&](const std::vector<std::string>& extra) { return layer_of(base, extra); };
  const job_spec job = parse_job_args(base).job;
  const compute_efficiency e = effective_compute_efficiency(job.cluster.gpu);
  const double per_byte = seconds_per_byte(job);
  const double hidden = 8192.0 * 4096;  // the norms' elements
  const unit_time eager = layer({});
  const unit_time fused = layer({"--norm-kernel", "fused"});
  // Two norms a layer: (4·2 + 28) − 2·2 = 32 bytes an element more, 6 kernels more each.
  EXPECT_NEAR(eager.forward.memory_s - fused.forward.memory_s, 2 * 32 * hidden * per_byte + 2 * 6 * e.kernel_overhead_s,
              1e-12);
  EXPECT_NEAR(eager.backward.memory_s - fused.backward.memory_s,
              2 * (2 * 32 * hidden * per_byte) + 2 * 6 * e.kernel_overhead_s, 1e-12);
  const layer_kernels& tt = layer_kernels_of(job.training);
  EXPECT_EQ(tt.rope.e_accesses, 2);
  EXPECT_EQ(tt.rope.fp32_bytes, 16);
  EXPECT_TRUE(tt.gqa_copies);
  EXPECT_FALSE(tt.residual_into_norm);
  training_config megatron;
  EXPECT_FALSE(layer_kernels_of(megatron).gqa_copies);
  // Megatron-Core on the same layer: Transformer Engine's fused RMSNorm and RoPE, no copies. Its eager norm
  // is what --norm-kernel eager prices.
  const std::vector<std::string> mc = {"--model", "llama3-8b", "--cluster", "dgx-h100", "--num-gpus", "8", "--seq-length", "8192"};
  const job_spec mjob = parse_job_args(mc).job;
  std::vector<std::string> mc_eager = mc;
  mc_eager.insert(mc_eager.end(), {"--norm-kernel", "eager"});
  const job_spec mjob_eager = parse_job_args(mc_eager).job;
  EXPECT_NEAR(layer_compute(mjob_eager, e, layer_kind::dense).forward.memory_s -
                  layer_compute(mjob, e, layer_kind::dense).forward.memory_s,
              2 * 32 * hidden * per_byte + 2 * 6 * e.kernel_overhead_s, 1e-12);
}

// §5.3: the same layer with torchtitan's torch.compile of each block (framework.cc's Inductor row): the
// RMSNorm as one fused kernel (32 bytes an element and 6 kernels fewer, twice), the attention block's
// residual add written by the MLP norm's kernel (its read of the sum, 2 bytes an element, and a kernel),
// and SwiGLU's silu · mul as one kernel (5e against 3e per output element: 2 bytes per input element of
// the 2·14,336-wide pair, and a kernel). RoPE and the GQA copies stay as eager.
TEST(ComputeEagerKernels, TorchCompileFusesTheNormsResidualAndSwiglu) {
  const std::vector<std::string> base = {"--model", "llama3-8b", "--cluster", "dgx-h100", "--num-gpus", "8",
                                         "--seq-length", "8192", "--framework", "fsdp", "--zero-stage", "3"};
  std::vector<std::string> compiled_args = base;
  compiled_args.push_back("--torch-compile");
  const job_spec eager_job = parse_job_args(base).job;
  const job_spec compiled_job = parse_job_args(compiled_args).job;
  EXPECT_TRUE(layer_kernels_of(compiled_job.training).residual_into_norm);
  const compute_efficiency e = effective_compute_efficiency(eager_job.cluster.gpu);
  const double per_byte = 1.0 / (eager_job.cluster.gpu.memory_bandwidth_bytes_per_s * e.memory_bandwidth_fraction);
  const double hidden = 8192.0 * 4096, gate_inputs = 8192.0 * 2 * 14336;
  const unit_time eager = layer_compute(eager_job, e, layer_kind::dense);
  const unit_time compiled = layer_compute(compiled_job, e, layer_kind::dense);
  const double bytes = 2 * 32 * hidden + 2 * hidden + 2 * gate_inputs;
  const int kernels = 2 * 6 + 1 + 1;
  EXPECT_NEAR(eager.forward.memory_s - compiled.forward.memory_s, bytes * per_byte + kernels * e.kernel_overhead_s, 1e-12);
  EXPECT_NEAR(eager.backward.memory_s - compiled.backward.memory_s, 2 * bytes * per_byte + kernels * e.kernel_overhead_s,
              1e-12);
  EXPECT_EQ(eager.forward.gemm_s, compiled.forward.gemm_s);
}

// §5.3: Megatron's fusion switches price the PyTorch kernels they leave. The 2020 GPT-2 1B of Megatron-LM's
// README (24 layers of 1,920, 15 heads, 1,024 tokens, MBS 16) on one A100, unfused attention core, biases
// and dropout 0.1: per layer forward, with H = 16,384 × 1,920 hidden elements, F = 4H and S = 16 × 15 × 1,024²
// scores:
// - --no-bias-gelu-fusion: the bias add apart, 2e·F more in 1 kernel more;
// - --no-bias-dropout-fusion: x + bias (2e), dropout (2e + 1) and the residual add (3e) instead of 3e + 1, twice
//   a layer: 2·4e·H more in 4 kernels more;
// - --no-masked-softmax-fusion: the softmax at unfused_softmax_factor × 2e·S in 3 kernels instead of 1.
// The backward moves twice the bytes in as many kernels. Under FSDP the switches are refused.
TEST(ComputeFusions, MegatronsSwitchesPriceThePyTorchKernelsTheyLeave) {
  const std::vector<std::string> base = {"--num-layers", "24", "--hidden-size", "1920", "--num-attention-heads", "15",
                                         "--vocab-size", "51200", "--seq-length", "1024", "--cluster", "dgx-a100",
                                         "--num-gpus", "1", "--mbs", "16", "--gbs", "16", "--fp16",
                                         "--attention-backend", "unfused"};
  auto layer = [&](const char* flag) {
    std::vector<std::string> a = base;
    if (flag != nullptr) a.emplace_back(flag);
    const job_spec job = parse_job_args(a).job;
    return layer_compute(job, effective_compute_efficiency(job.cluster.gpu), layer_kind::dense);
  };
  const job_spec job = parse_job_args(base).job;
  const compute_efficiency e = effective_compute_efficiency(job.cluster.gpu);
  const double per_byte = 1.0 / (job.cluster.gpu.memory_bandwidth_bytes_per_s * e.memory_bandwidth_fraction);
  const double hidden = 16384.0 * 1920, ffn = 4 * hidden, scores = 16.0 * 15 * 1024 * 1024;
  const unit_time fused = layer(nullptr);
  const unit_time gelu = layer("--no-bias-gelu-fusion");
  EXPECT_NEAR(gelu.forward.memory_s - fused.forward.memory_s, 2 * 2 * ffn * per_byte + e.kernel_overhead_s, 1e-12);
  EXPECT_NEAR(gelu.backward.memory_s - fused.backward.memory_s, 2 * 2 * 2 * ffn * per_byte + e.kernel_overhead_s,
              1e-12);
  const unit_time dropout = layer("--no-bias-dropout-fusion");
  EXPECT_NEAR(dropout.forward.memory_s - fused.forward.memory_s,
              2 * 4 * 2 * hidden * per_byte + 4 * e.kernel_overhead_s, 1e-12);
  const unit_time softmax = layer("--no-masked-softmax-fusion");
  EXPECT_DOUBLE_EQ(softmax.forward.memory_s, fused.forward.memory_s);
  EXPECT_NEAR(softmax.forward.attention_s - fused.forward.attention_s,
              (e.unfused_softmax_factor - 1) * 2 * 2 * scores * per_byte + 2 * e.kernel_overhead_s, 1e-12);
  // Memory is not theirs to change.
  std::vector<std::string> all = base;
  all.insert(all.end(), {"--no-bias-gelu-fusion", "--no-bias-dropout-fusion", "--no-masked-softmax-fusion"});
  EXPECT_DOUBLE_EQ(estimate_memory(parse_job_args(all).job).peak_allocated_bytes,
                   estimate_memory(job).peak_allocated_bytes);
  EXPECT_THAT([] { parse_job_args({"--model", "llama3-8b", "--num-gpus", "8", "--framework", "fsdp", "--zero-stage",
                                   "3", "--no-bias-dropout-fusion"}); },
              ::testing::ThrowsMessage<input_error>(::testing::HasSubstr(
                  "--no-bias-dropout-fusion turns off a kernel of Megatron-LM's (and Megatron-DeepSpeed's); "
                  "--framework fsdp runs PyTorch's own kernels")));
}

// §5.3: Megatron-Core's RoPE. Transformer Engine's fused kernel reads and writes each query and key element
// once (2e, one kernel per tensor; backward by the 2× rule); --no-rope-fusion, or a YaRN factor above 1 (whose
// concentration factor TE's kernel does not take), runs _apply_rotary_pos_emb_bshd: 12e in 6 kernels per
// tensor plus 6 small cos/sin kernels forward, 10e in 5 backward, counted by hand from rope_utils.py. Llama-3-8B
// at TP 1 and 8,192 tokens: query 4,096 + key 1,024 wide.
TEST(ComputeFusions, MegatronsUnfusedRopeIsPricedByItsKernels) {
  const std::vector<std::string> base = {"--model", "llama3-8b", "--cluster", "dgx-h100", "--num-gpus", "1",
                                         "--seq-length", "8192", "--mbs", "1", "--gbs", "1", "--bf16"};
  auto layer = [&](const std::vector<std::string>& extra) { return layer_of(base, extra); };
  const job_spec job = parse_job_args(base).job;
  const compute_efficiency e = effective_compute_efficiency(job.cluster.gpu);
  const double per_byte = seconds_per_byte(job);
  const double elems = 8192.0 * (4096 + 1024);
  const unit_time fused = layer({});
  const unit_time unfused = layer({"--no-rope-fusion"});
  EXPECT_NEAR(unfused.forward.memory_s - fused.forward.memory_s, 2 * (12 - 2) * elems * per_byte + 22 * e.kernel_overhead_s,
              1e-12);
  EXPECT_NEAR(unfused.backward.memory_s - fused.backward.memory_s, 2 * (10 - 4) * elems * per_byte + 8 * e.kernel_overhead_s,
              1e-12);
  EXPECT_DOUBLE_EQ(unfused.forward.gemm_s, fused.forward.gemm_s);
  // Time only: the unfused chain's autograd saves cos and sin, not the tensors.
  std::vector<std::string> off = base;
  off.push_back("--no-rope-fusion");
  EXPECT_DOUBLE_EQ(estimate_memory(parse_job_args(off).job).peak_allocated_bytes,
                   estimate_memory(job).peak_allocated_bytes);
  // gpt-oss's YaRN (factor 32: concentration 0.1·ln 32 + 1 = 1.35) takes the unfused path with the fusion on;
  // --no-rope-fusion then changes nothing.
  const std::vector<std::string> oss = {"--model", "gpt-oss-20b", "--cluster", "dgx-h100", "--num-gpus", "8",
                                        "--ep", "8", "--mbs", "1", "--gbs", "8", "--bf16"};
  std::vector<std::string> oss_off = oss;
  oss_off.push_back("--no-rope-fusion");
  EXPECT_DOUBLE_EQ(estimate_time(parse_job_args(oss).job).iteration_s,
                   estimate_time(parse_job_args(oss_off).job).iteration_s);
  job_spec unscaled = parse_job_args(oss).job;
  unscaled.model.rope_yarn_factor = 1;  // no scaling: concentration 1, TE's kernel
  EXPECT_LT(estimate_time(unscaled).iteration_s, estimate_time(parse_job_args(oss).job).iteration_s);
  // Megatron's flags: --position-embedding-type yarn with --rotary-scaling-factor (default 1: no scaling) and
  // the mscales (defaults 1 and 0, argument_utils.py); equal mscales cancel the concentration.
  auto yarn = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = base;
    a.insert(a.end(), {"--position-embedding-type", "yarn"});
    a.insert(a.end(), extra.begin(), extra.end());
    return parse_job_args(a).job.model.rope_yarn_factor;
  };
  EXPECT_DOUBLE_EQ(yarn({"--rotary-scaling-factor", "32"}), 32.0);
  EXPECT_DOUBLE_EQ(yarn({}), 0.0);
  EXPECT_DOUBLE_EQ(yarn({"--rotary-scaling-factor", "32", "--mscale", "1", "--mscale-all-dim", "1"}), 0.0);
  EXPECT_THAT([] { parse_job_args({"--model", "llama3-8b", "--position-embedding-type", "yarnx"}); },
              ::testing::ThrowsMessage<input_error>(::testing::HasSubstr(
                  "--position-embedding-type: unknown value 'yarnx'; one of: learned, learned_absolute, rope, alibi, "
                  "none, nope, yarn")));
  EXPECT_NEAR(layer({"--position-embedding-type", "yarn", "--rotary-scaling-factor", "32"}).forward.memory_s,
              unfused.forward.memory_s, 1e-15);
  for (const char* fw : {"deepspeed", "fsdp"}) {
    EXPECT_THAT([&] { parse_job_args({"--model", "llama3-8b", "--num-gpus", "8", "--framework", fw, "--zero-stage",
                                      "2", "--no-rope-fusion"}); },
                ::testing::ThrowsMessage<input_error>(::testing::HasSubstr(
                    std::string("--no-rope-fusion is Megatron-Core's switch for Transformer Engine's fused RoPE; "
                                "--framework ") + fw + " runs its own RoPE")));
  }
}

// §5.3: Megatron-Core's MoE permute without --moe-permute-fusion (its default) runs moe_utils.py's PyTorch
// path: the same row gather as Transformer Engine's kernels, plus 10 small index kernels and the
// unpermute's zeroed output that scatter_add_ fills, 2e per hidden element and 11 kernels forward; the
// index_select's gradient, a zeroed buffer and an index_add_, 2e and 1 kernel backward. Mixtral 8x7B at
// EP 8, 4,096 tokens of hidden 4,096.
TEST(ComputeFusions, MegatronsUnfusedMoePermuteAddsItsZeroedOutputAndIndexKernels) {
  const std::vector<std::string> base = {"--model", "mixtral-8x7b", "--cluster", "dgx-h100", "--num-gpus", "8",
                                         "--ep", "8", "--mbs", "1", "--gbs", "8", "--bf16"};
  const job_spec job = parse_job_args(base).job;
  const compute_efficiency e = effective_compute_efficiency(job.cluster.gpu);
  const double per_byte = seconds_per_byte(job);
  const double hidden = 4096.0 * 4096;
  const unit_time fused = layer_of(base, {"--moe-permute-fusion"}, layer_kind::moe);
  const unit_time unfused = layer_of(base, {}, layer_kind::moe);
  EXPECT_NEAR(unfused.forward.memory_s - fused.forward.memory_s, 2 * 2 * hidden * per_byte + 11 * e.kernel_overhead_s,
              1e-12);
  EXPECT_NEAR(unfused.backward.memory_s - fused.backward.memory_s, 2 * 2 * hidden * per_byte + e.kernel_overhead_s,
              1e-12);
  // A dense layer has nothing to permute.
  std::vector<std::string> dense = {"--model", "llama3-8b", "--cluster", "dgx-h100", "--num-gpus", "1", "--bf16"};
  const job_spec dj = parse_job_args(dense).job;
  dense.emplace_back("--moe-permute-fusion");
  EXPECT_DOUBLE_EQ(estimate_time(parse_job_args(dense).job).iteration_s, estimate_time(dj).iteration_s);
  EXPECT_THAT([] { parse_job_args({"--model", "mixtral-8x7b", "--num-gpus", "8", "--framework", "fsdp", "--zero-stage",
                                   "3", "--moe-permute-fusion"}); },
              ::testing::ThrowsMessage<input_error>(::testing::HasSubstr(
                  "--moe-permute-fusion is Megatron-Core's switch for Transformer Engine's fused permute; "
                  "--framework fsdp permutes its routed tokens its own way")));
}

// §5.1.1: without --moe-grouped-gemm (its default) Megatron-Core runs SequentialMLP (experts.py): each local
// expert's fc1 and fc2 a GEMM of its own, launched one after another (each quantised and ramped alone), its
// activation a kernel of its own, and the outputs concatenated (torch.cat: 2e per routed element forward, its
// backward views). Mixtral 8x7B at EP 2: 4 local experts of 4096·2·2/8 = 2,048 rows, SwiGLU (one fused
// kernel), bf16.
TEST(ComputeMoe, SequentialExpertsLaunchEachExpertsGemmsAndActivationApart) {
  const std::vector<std::string> base = {"--model", "mixtral-8x7b", "--cluster", "dgx-h100", "--num-gpus", "8",
                                         "--ep", "2", "--seq-length", "4096", "--bf16"};
  const job_spec job = parse_job_args(base).job;
  const compute_efficiency e = effective_compute_efficiency(job.cluster.gpu);
  const gpu_spec& gpu = job.cluster.gpu;
  const unit_time grouped = layer_of(base, {"--moe-grouped-gemm"}, layer_kind::moe);
  const unit_time sequential = layer_of(base, {}, layer_kind::moe);
  // The forward GEMMs: four of [2048 × 28672 × 4096] and [2048 × 4096 × 14336] against each batched by four;
  // GEMM time runs at the sustained clock (§5.6).
  auto gemm_s = [&](std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch) {
    return estimate_gemm(gpu, e, dtype::bf16, gemm_shape{m, n, k, batch}).time_s / e.sustained_clock_factor;
  };
  const double apart = 4 * (gemm_s(2048, 28672, 4096, 1) + gemm_s(2048, 4096, 14336, 1));
  const double together = gemm_s(2048, 28672, 4096, 4) + gemm_s(2048, 4096, 14336, 4);
  EXPECT_GT(apart, together);
  EXPECT_NEAR(sequential.forward.gemm_s - grouped.forward.gemm_s, apart - together, 1e-12);
  EXPECT_GT(sequential.backward.gemm_s, grouped.backward.gemm_s);
  const double per_byte = seconds_per_byte(job);
  EXPECT_NEAR(sequential.forward.memory_s - grouped.forward.memory_s,
              2 * 2 * 8192.0 * 4096 * per_byte + (1 + 3) * e.kernel_overhead_s, 1e-12);
  EXPECT_NEAR(sequential.backward.memory_s - grouped.backward.memory_s, 3 * e.kernel_overhead_s, 1e-12);
  // One local expert (EP 8) is one MLP either way.
  const std::vector<std::string> ep8 = {"--model", "mixtral-8x7b", "--cluster", "dgx-h100", "--num-gpus", "8",
                                        "--ep", "8", "--bf16"};
  EXPECT_DOUBLE_EQ(layer_of(ep8, {}, layer_kind::moe).forward.total_s(),
                   layer_of(ep8, {"--moe-grouped-gemm"}, layer_kind::moe).forward.total_s());
  EXPECT_THAT([] { parse_job_args({"--model", "mixtral-8x7b", "--num-gpus", "8", "--framework", "fsdp", "--zero-stage",
                                   "3", "--moe-grouped-gemm"}); },
              ::testing::ThrowsMessage<input_error>(::testing::HasSubstr(
                  "--moe-grouped-gemm is Megatron-Core's choice of TEGroupedMLP over SequentialMLP; "
                  "--framework fsdp runs its experts its own way")));
}

/// The loss's memory-bound time, forward and backward, of job `a` less that of job `b`, and what a byte
/// and a kernel cost on their GPU (§5.3).
struct loss_delta {
  double forward_s, backward_s, per_byte_s, kernel_s;
};
loss_delta loss_time_less(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  const job_spec ja = parse_job_args(a).job;
  const compute_report ra = estimate_compute(ja);
  const compute_report rb = estimate_compute(parse_job_args(b).job);
  const compute_efficiency e = effective_compute_efficiency(ja.cluster.gpu);
  return {ra.output.forward.memory_s - rb.output.forward.memory_s,
          ra.output.backward.memory_s - rb.output.backward.memory_s,
          1.0 / (ja.cluster.gpu.memory_bandwidth_bytes_per_s * e.memory_bandwidth_fraction), e.kernel_overhead_s};
}

// §5.3: the loss's kernels as each framework runs them (framework.cc kCrossEntropy). Llama-3-8B at TP 1,
// 8,192 tokens: 8,192 × 128,256 logits. Megatron's fused loss (--cross-entropy-loss-fusion) moves 16 fp32
// bytes fewer per logit in the forward (3 kernels fewer) and 8 fewer in the backward (1 fewer); its
// buffers beside the bf16 logits are one fp32 copy (4 bytes), PyTorch's F.cross_entropy two (8).
TEST(ComputeLoss, TheFrameworksKernelsByTheBytesTheyMove) {
  const std::vector<std::string> llama = {"--model", "llama3-8b", "--cluster", "dgx-h100", "--num-gpus", "8",
                                          "--seq-length", "8192"};
  std::vector<std::string> fused_args = llama;
  fused_args.push_back("--cross-entropy-loss-fusion");
  const job_spec plain = parse_job_args(llama).job;
  const compute_report fused = estimate_compute(parse_job_args(fused_args).job);
  const compute_efficiency e = effective_compute_efficiency(plain.cluster.gpu);
  const double per_byte = 1.0 / (plain.cluster.gpu.memory_bandwidth_bytes_per_s * e.memory_bandwidth_fraction);
  const double elems = 8192.0 * 128256.0;
  const loss_delta by_fusion = loss_time_less(llama, fused_args);
  EXPECT_NEAR(by_fusion.forward_s, 16 * elems * per_byte + 3 * e.kernel_overhead_s, 1e-12);
  EXPECT_NEAR(by_fusion.backward_s, 8 * elems * per_byte + 1 * e.kernel_overhead_s, 1e-12);
  training_config megatron, fsdp;
  fsdp.framework = framework_kind::fsdp;
  EXPECT_EQ(cross_entropy_of(megatron).buffer_fp32_bytes, 4);
  EXPECT_EQ(cross_entropy_of(fsdp).buffer_fp32_bytes, 8);
  // The backward's peak (§3.6): log_softmax's saved output, nll_loss's gradient and its own (torchtitan),
  // Megatron's in-place gradient.
  EXPECT_EQ(cross_entropy_of(fsdp).backward_peak_fp32_bytes, 12);
  EXPECT_EQ(cross_entropy_of(megatron).backward_peak_fp32_bytes, 4);
  // Megatron's fused loss is Megatron's.
  EXPECT_THROW(parse_job_args({"--model", "llama3-8b", "--num-gpus", "8", "--framework", "fsdp", "--zero-stage", "3",
                               "--cross-entropy-loss-fusion"}),
               input_error);
  // Transformer Engine's parallel_cross_entropy (--cross-entropy-fusion-impl te): two passes over the bf16
  // logits and the gradient written into them, 3e = 6 bytes in 2 kernels against the native fused loss's
  // e + 20 = 22 in 3; its backward scales that gradient in place, 2e = 4 against e + 4 = 6, one kernel each.
  std::vector<std::string> te = fused_args;
  te.insert(te.end(), {"--cross-entropy-fusion-impl", "te"});
  const compute_report by_te = estimate_compute(parse_job_args(te).job);
  EXPECT_NEAR(fused.output.forward.memory_s - by_te.output.forward.memory_s,
              16 * elems * per_byte + 1 * e.kernel_overhead_s, 1e-12);
  EXPECT_NEAR(fused.output.backward.memory_s - by_te.output.backward.memory_s, 2 * elems * per_byte, 1e-12);
  // From Transformer Engine's #3193 the gradient is an fp32 tensor: 2e + 4 = 8 bytes forward, e + 12 = 14
  // backward in 2 kernels (element_mul on it, autograd's cast back).
  te.push_back("--te-cross-entropy-fp32-gradient");
  const compute_report by_te_fp32 = estimate_compute(parse_job_args(te).job);
  EXPECT_NEAR(by_te_fp32.output.forward.memory_s - by_te.output.forward.memory_s, 2 * elems * per_byte, 1e-12);
  EXPECT_NEAR(by_te_fp32.output.backward.memory_s - by_te.output.backward.memory_s,
              10 * elems * per_byte + 1 * e.kernel_overhead_s, 1e-12);
}

// §3.6, §5.3: torchtitan's loss compiled by Inductor (--torch-compile-loss, compile.components "loss"):
// Llama-3-8B under FSDP2 at 8,192 tokens, 8,192 × 128,256 logits. Eager F.cross_entropy on pred.float()
// moves e + 20 bytes per logit in 2 kernels forward and e + 20 in 4 backward; compiled, one reduction
// kernel reads the bf16 logits twice (2e = 4) and one backward kernel reads them and writes the bf16
// gradient (2e = 4): 18 and 18 bytes fewer, 1 and 3 kernels fewer. No fp32 tensor of the logits' size
// exists: the backward's peak is the saved logits and their gradient, 2e = 4 bytes against eager's 12.
TEST(ComputeLoss, InductorsCompiledLossReadsTheLogitsAndWritesTheirGradient) {
  const std::vector<std::string> llama = {"--model", "llama3-8b", "--cluster", "dgx-h100", "--num-gpus", "8",
                                          "--seq-length", "8192", "--framework", "fsdp", "--zero-stage", "3",
                                          "--bf16"};
  std::vector<std::string> compiled_args = llama;
  compiled_args.push_back("--torch-compile-loss");
  const job_spec eager_job = parse_job_args(llama).job;
  const job_spec compiled_job = parse_job_args(compiled_args).job;
  const loss_delta d = loss_time_less(llama, compiled_args);
  const double elems = 8192.0 * 128256.0;
  EXPECT_NEAR(d.forward_s, 18 * elems * d.per_byte_s + 1 * d.kernel_s, 1e-12);
  EXPECT_NEAR(d.backward_s, 18 * elems * d.per_byte_s + 3 * d.kernel_s, 1e-12);
  // The loss is the last stage's largest transient here, so the transient is the loss's.
  EXPECT_DOUBLE_EQ(estimate_memory(eager_job).stages.back().transient_bytes, 12 * elems);
  EXPECT_DOUBLE_EQ(estimate_memory(compiled_job).stages.back().transient_bytes, 4 * elems);
  // Nothing else of the job changes: the blocks' kernels stay eager without --torch-compile.
  EXPECT_EQ(layer_kernels_of(compiled_job.training).runs, layer_kernels_of(eager_job.training).runs);
}

// §3.6, §5.3: torchtitan's loss at TP > 1 runs under loss_parallel (its default) on vocab-sharded DTensor
// logits: the DTensor handlers of torch/distributed/tensor/parallel/loss.py run log_softmax's decomposition
// op by op (e + 36 bytes per logit in 6 kernels, fp32 copy, shifted and exp alive at once: e + 12) and a
// fused nll/log-softmax backward (e + 36 in 6; its peak 16 fp32 bytes: the saved result, grad_input, exp's
// output and their sum). Llama-3-70B at TP 8 with SP, 8,192 tokens: 8,192 × 16,032 logits per rank.
TEST(MemoryLoss, TorchtitansLossParallelRunsTheDecompositionOpByOp) {
  training_config fsdp;
  fsdp.framework = framework_kind::fsdp;
  EXPECT_EQ(cross_entropy_of(fsdp, 8).buffer_fp32_bytes, 12);
  EXPECT_EQ(cross_entropy_of(fsdp, 8).backward_peak_fp32_bytes, 16);
  EXPECT_EQ(cross_entropy_of(fsdp, 8).forward_kernels, 6);
  EXPECT_EQ(cross_entropy_of(fsdp, 1).backward_peak_fp32_bytes, 12);  // TP 1: aten's fused log_softmax
  const std::vector<std::string> tp8 = {"--model", "llama3-70b", "--cluster", "dgx-h100", "--num-gpus", "64",
                                        "--framework", "fsdp", "--zero-stage", "3", "--tp", "8",
                                        "--sequence-parallel", "--recompute-granularity", "full", "--bf16",
                                        "--make-vocab-size-divisible-by", "1"};  // torchtitan's, unpadded
  const job_spec job = parse_job_args(tp8).job;
  EXPECT_DOUBLE_EQ(estimate_memory(job).stages.back().transient_bytes, 16.0 * 8192 * 16032);
  // The compiled loss is modelled at TP 1 alone.
  std::vector<std::string> compiled = tp8;
  compiled.push_back("--torch-compile-loss");
  EXPECT_THROW(parse_job_args(compiled), input_error);
}

// §3.6: the loss's transient at the last stage. GPT-OSS 120B as Megatron-Bridge's B200 recipe runs it
// (TP 1, MBS 4 × 4,096 tokens, 201,088 logits each): Megatron's fused loss holds an fp32 buffer beside the
// bf16 logits, e + 4 = 6 bytes per logit (18.4 GiB); Transformer Engine's writes the gradient into the
// logits, e = 2 (6.1 GiB); from TE's #3193 the fp32 gradient is back (e + 4). Here the loss is the stage's
// largest transient, so it is the transient.
TEST(MemoryLoss, TransformerEnginesCrossEntropyKeepsOnlyTheLogits) {
  const std::vector<std::string> oss = {"--model", "gpt-oss-120b", "--cluster", "dgx-b200", "--num-gpus", "64",
                                        "--ep", "8", "--mbs", "4", "--gbs", "1280", "--seq-length", "4096", "--bf16",
                                        "--use-distributed-optimizer", "--cross-entropy-loss-fusion"};
  auto transient = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = oss;
    args.insert(args.end(), extra.begin(), extra.end());
    return estimate_memory(parse_job_args(args).job).stages.back().transient_bytes;
  };
  const double logits = 4.0 * 4096 * 201088;
  EXPECT_DOUBLE_EQ(transient({}), 6 * logits);
  EXPECT_DOUBLE_EQ(transient({"--cross-entropy-fusion-impl", "te"}), 2 * logits);
  EXPECT_DOUBLE_EQ(transient({"--cross-entropy-fusion-impl", "te", "--te-cross-entropy-fp32-gradient"}), 6 * logits);
  // Megatron reads the implementation only for its fused loss, and the TE version only for TE's: else listed.
  const parsed_job unfused = parse_job_args({"--model", "llama3-8b", "--num-gpus", "8", "--cross-entropy-fusion-impl", "te"});
  EXPECT_EQ(unfused.job.training.cross_entropy_fusion_impl, training_config::cross_entropy_impl::native);
  EXPECT_THAT(unfused.ignored_flags,
              ::testing::Contains("--cross-entropy-fusion-impl te (read with --cross-entropy-loss-fusion alone)"));
  EXPECT_THAT(parse_job_args({"--model", "llama3-8b", "--num-gpus", "8", "--te-cross-entropy-fp32-gradient"}).ignored_flags,
              ::testing::Contains("--te-cross-entropy-fp32-gradient (read with --cross-entropy-fusion-impl te alone)"));
  EXPECT_THROW(parse_job_args({"--model", "llama3-8b", "--num-gpus", "8", "--cross-entropy-loss-fusion",
                               "--cross-entropy-fusion-impl", "triton"}),
               input_error);
}

}  // namespace
}  // namespace trainplan

namespace trainplan {
namespace {

// §5.2, issue 28 finding 2: a GEMM's alignment is its leading dimensions' (k and n of the forward, which
// the backward GEMMs stride by too). The token count m is none: an expert's 1,001 tokens cost tile
// quantization, not the unaligned factor (they were priced at 0.08 of the rate, 12x slower). An odd n
// or k (a head dim of 108 elements is aligned, 4,097 is not) keeps it.
TEST(ComputeGemm, TheTokenCountIsNoLeadingDimension) {
  const job_spec job = parse_job_args({"--model", "llama3-8b", "--cluster", "dgx-h100", "--num-gpus", "8"}).job;
  const compute_efficiency e = effective_compute_efficiency(job.cluster.gpu);
  const double aligned = estimate_gemm(job.cluster.gpu, e, dtype::bf16, {1000, 4096, 4096, 1}).efficiency;
  const double odd_tokens = estimate_gemm(job.cluster.gpu, e, dtype::bf16, {1001, 4096, 4096, 1}).efficiency;
  const double odd_width = estimate_gemm(job.cluster.gpu, e, dtype::bf16, {1000, 4097, 4096, 1}).efficiency;
  EXPECT_NEAR(odd_tokens / aligned, 1.0, 0.05);
  EXPECT_NEAR(odd_width / aligned, e.unaligned_factor, 0.01);
}

// §5.3: a GLU clamp (--activation-func-clamp-value, gpt-oss's 7) run unfused (Megatron-Core's glu():
// x_glu.clamp(max=v), x_linear.clamp(-v, v)): two kernels reading and writing every fc1 output element
// (2e), and two clamp_backward kernels reading the gradient and the saved input and writing the masked
// gradient (3e). The fused bias-SwiGLU kernel clamps in place: nothing more. Llama-3-8B, 8,192 tokens,
// TP 1: 8,192 × 2 × 14,336 fc1 output elements.
TEST(ComputeEagerKernels, UnfusedGluClampsMoveTheirBytesInTwoKernelsEachWay) {
  const std::vector<std::string> base = {"--model", "llama3-8b", "--cluster", "dgx-h100", "--num-gpus", "8",
                                         "--seq-length", "8192"};
  const job_spec job = parse_job_args(base).job;
  const compute_efficiency e = effective_compute_efficiency(job.cluster.gpu);
  const double per_byte = seconds_per_byte(job);
  const double elems = 8192.0 * 2 * 14336;
  const unit_time unfused = layer_of(base, {"--no-bias-swiglu-fusion"});
  const unit_time clamped = layer_of(base, {"--no-bias-swiglu-fusion", "--activation-func-clamp-value", "7"});
  EXPECT_NEAR(clamped.forward.memory_s - unfused.forward.memory_s, 2 * 2 * elems * per_byte + 2 * e.kernel_overhead_s,
              1e-12);
  EXPECT_NEAR(clamped.backward.memory_s - unfused.backward.memory_s,
              3 * 2 * elems * per_byte + 2 * e.kernel_overhead_s, 1e-12);
  EXPECT_DOUBLE_EQ(layer_of(base, {"--activation-func-clamp-value", "7"}).forward.total_s(),
                   layer_of(base, {}).forward.total_s());
  EXPECT_THAT([&] { parse_job_args({"--model", "llama3-8b", "--activation-func-clamp-value", "0"}); },
              ::testing::ThrowsMessage<input_error>(
                  ::testing::HasSubstr("--activation-func-clamp-value must be positive, got 0")));
}

}  // namespace
}  // namespace trainplan
