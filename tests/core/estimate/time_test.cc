// Iteration time against BLOOM's measurements, and the effects its engineers found
// (docs/formulas.md §5.8; tests/data/bloom-*-measurements.csv).
#include "trainplan/cli/cli.h"
#include "trainplan/core/estimate/time.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "test_support.h"
#include "trainplan/cli/args.h"
#include "trainplan/core/base/error.h"
#include "trainplan/core/estimate/compute.h"
#include "trainplan/core/estimate/memory.h"
#include "trainplan/core/job/framework.h"
#include "trainplan/core/model/model.h"
#include "trainplan/core/hardware/hardware.h"
#include "trainplan/cli/validate.h"

namespace trainplan {
namespace {

/// Prediction for a bloom-prequel row by source line (the job from the shared test helper).
double predicted_s(int source_line) {
  static const auto rows = testing::read_csv(testing::data_path("bloom-prequel-measurements.csv"));
  for (const auto& r : rows) {
    if (r.at("source_line") == std::to_string(source_line)) {
      return estimate_time(parse_job_args(testing::bloom_row_args(r)).job).iteration_s;
    }
  }
  ADD_FAILURE() << "no row " << source_line;
  return 0;
}

const validation_report& shipped() {
  static const validation_report r = validate_shipped();
  return r;
}

// Issue 28, finding 9: one bubble figure. The report's bubble fraction is the busiest rank's idle and send
// share of the pipeline phase, which is what the breakdown's "pipeline bubble + p2p" counts; it averaged
// the lighter ranks' imbalance in (GPT-3 175B, TP 4 PP 8 VPP 12: 12.9% against 0.5%).
// Issue 28, finding 8: --no-gradient-accumulation-fusion costs Megatron's backward hook
// main_grad.add_(grad) per micro-batch: 2 + 4 + 4 bytes per parameter on the rank (bf16 grad read, fp32
// main_grad read and written), at the GPU's copy rate. Llama-3-8B on 8 H100s (DP 8, 16 micro-batches):
// 8.03e9 · 10 B per micro-batch, at ~2-3.35 TB/s ≈ 24-40 ms each.
TEST(Time, UnfusedGradientAccumulationAddsAPassOverTheGradients) {
  const std::vector<std::string> base = {"--model", "llama3-8b", "--cluster", "dgx-h100", "--num-gpus", "8", "--gbs",
                                         "128", "--bf16", "--use-distributed-optimizer"};
  std::vector<std::string> unfused = base;
  unfused.push_back("--no-gradient-accumulation-fusion");
  const job_spec fused_job = parse_job_args(base).job, unfused_job = parse_job_args(unfused).job;
  const double delta_s = estimate_time(unfused_job).iteration_s - estimate_time(fused_job).iteration_s;
  const double bytes = static_cast<double>(count_parameters(fused_job.model, 1).total) * 10 * 16;
  const double implied_bytes_per_s = bytes / delta_s;
  EXPECT_GT(implied_bytes_per_s, 0.5 * fused_job.cluster.gpu.memory_bandwidth_bytes_per_s);
  EXPECT_LT(implied_bytes_per_s, 1.0 * fused_job.cluster.gpu.memory_bandwidth_bytes_per_s);
  EXPECT_DOUBLE_EQ(estimate_memory(unfused_job).peak_reserved_bytes, estimate_memory(fused_job).peak_reserved_bytes);
}

// Issue 27: a layout predicted not to fit is flagged and timed without the allocator's slowdown, so an
// over-estimate of memory never becomes a time error: with less memory still, its time is the same.
TEST(Time, ALayoutThatDoesNotFitIsTimedWithoutTheAllocatorSlowdown) {
  const std::vector<std::string> base = {"--model", "llama3-8b", "--cluster", "dgx-h100", "--num-gpus", "8", "--cp", "2",
                                         "--gbs", "128", "--bf16", "--fp8-format", "hybrid", "--use-distributed-optimizer"};
  std::vector<std::string> smaller = base;
  smaller.insert(smaller.end(), {"--gpu-memory-gib", "60"});
  const time_report a = estimate_time(parse_job_args(base).job), b = estimate_time(parse_job_args(smaller).job);
  ASSERT_FALSE(a.fits);
  ASSERT_GT(a.peak_reserved_bytes, a.capacity_bytes);
  for (const stage_compute& s : a.compute.stages) EXPECT_EQ(s.allocator_slowdown, 1.0);
  EXPECT_LT(b.capacity_bytes, a.capacity_bytes);
  EXPECT_DOUBLE_EQ(b.iteration_s, a.iteration_s);
}

// §5.9: the allocator's slowdown near capacity was measured with DeepSpeed only (BLOOM); a Megatron-Core
// rank at 95-100% of its memory runs at its compute's speed. The framework table says which.
TEST(Time, AllocatorSlowdownOnlyWhereItWasMeasured) {
  const job_spec megatron = parse_job_args({"--model", "llama3-70b", "--cluster", "dgx-h100", "--num-gpus", "64", "--tp", "4",
                                            "--pp", "8", "--vpp", "5", "--gbs", "128", "--fp8-format", "hybrid",
                                            "--use-distributed-optimizer", "--sequence-parallel"})
                                .job;
  const memory_report mem = estimate_memory(megatron);
  bool near_capacity = false;
  for (const stage_memory& s : mem.stages) {
    near_capacity |= s.reserved_bytes > 0.9 * mem.capacity_bytes && s.reserved_bytes <= mem.capacity_bytes;
  }
  ASSERT_TRUE(near_capacity);
  for (const stage_compute& s : estimate_time(megatron).compute.stages) EXPECT_EQ(s.allocator_slowdown, 1.0);
  EXPECT_FALSE(traits_of(framework_kind::megatron).allocator_pressure);
  EXPECT_FALSE(traits_of(framework_kind::fsdp).allocator_pressure);
  EXPECT_TRUE(traits_of(framework_kind::deepspeed).allocator_pressure);
}

TEST(Time, BubbleFractionIsTheBreakdownsBubble) {
  for (const std::vector<std::string>& a : std::vector<std::vector<std::string>>{
           {"--model", "gpt3-175b", "--cluster", "dgx-a100", "--num-nodes", "16", "--tp", "4", "--pp", "8", "--vpp", "12",
            "--gbs", "1536", "--bf16", "--use-distributed-optimizer"},
           {"--preset", "bloom-176b-production"}}) {
    const time_report r = estimate_time(parse_job_args(a).job);
    ASSERT_GT(r.pipeline.pipeline_s, 0);
    EXPECT_NEAR(r.bubble_fraction, r.breakdown.pipeline_s / r.pipeline.pipeline_s, 1e-9) << a[1];
  }
}

TEST(TimeValidation, PrequelMedianErrorWithinFivePercent) {
  const validation_report& r = shipped();
  ASSERT_EQ(r.tables.front().name, "bloom-prequel-measurements.csv");
  EXPECT_GE(r.tables.front().rows, 125);
  EXPECT_LE(r.tables.front().median_abs_error, 0.05);
  // Reported, and bounded so that a regression shows: the worst row today is under 30%.
  EXPECT_LT(r.tables.front().max_abs_error, 0.30);
  RecordProperty("max_abs_error", std::to_string(r.tables.front().max_abs_error));
}

TEST(TimeValidation, LibraryRowsMatchTheSharedTestHelper) {
  // validate's own reading of the CSV builds the same jobs as the memory tests' helper.
  const auto rows = testing::read_csv(testing::data_path("bloom-prequel-measurements.csv"));
  std::size_t i = 0;
  for (const validation_row& v : shipped().rows) {
    if (v.table != "bloom-prequel-measurements.csv") continue;
    const auto& row = rows[i++];
    // Rows 525-527: validate corrects the GBS to the seed's heading (512). Both set 16-bit gradient
    // accumulation for the bf16 rows before 2022-02-28 (the fp16 optimizer then).
    if (!v.skipped.empty() || v.label == "525" || v.label == "526" || v.label == "527") continue;
    EXPECT_NEAR(v.predicted_s / v.environment_factor /
                    estimate_time(parse_job_args(testing::bloom_row_args(row)).job).iteration_s,
                1.0, 0.003)
        << v.label;
  }
}

TEST(TimeValidation, SpearmanWithinSeedTables) {
  // Every seed table must rank ≥ 0.8, except these, whose own rows contradict each other or differ by
  // less than the seed's run-to-run noise (docs/formulas.md §5.8 gives each in full). Each keeps a
  // floor at today's value so that a regression fails.
  struct exception {
    double floor;
    const char* why;
  };
  const std::map<std::string, exception> exceptions = {
      {"02-20 MBS at PP12", {0.5, "MBS 2 and 4 differ by 0.8% (161.96 vs 163.32 s), inside the noise"}},
      {"02-23 heads at 14336",
       {0.6, "112 heads (head dim 128) +15% at TP 8; the same shape at TP 4 (row 754) runs at par"}},
      {"02-24 heads at 12288",
       {0.5, "96 heads (head dim 128) +12% at TP 8; the same shape at TP 4 (rows 709, 723, 725) at par"}},
      {"02-25 GBS", {0.45, "row 613: GBS 1568 in the time of GBS 2048 (row 614), 23% fewer samples"}},
      // Ranked by throughput (model FLOPs/s per GPU, 2026-11-27; by iteration time before: 0.88 each).
      {"02-20 PP sweep",
       {-0.3, "nine models of 183-205B on 320-384 GPUs whose measured TFLOPs lie within 6% (88.8-94.4): the "
              "model's fall 7% from PP 4 to PP 12, the measured do not"}},
      {"02-23 final round", {0.75, "models of 177-182B; rows 555/560 (the same layout) ran 1.4% apart"}},
      {"02-25 TP",
       {0.6, "five of nine rows within 2.8%, the spread of the repeated layout 635/636 (110.48/113.54 s)"}},
      {"02-28 13312/82", {0.6, "104 heads (head dim 128) +18% over 64 and 128 heads at TP 4"}},
  };
  int passing = 0;
  for (const validation_stats& g : shipped().groups) {
    if (g.rows < 3) continue;
    SCOPED_TRACE(g.name);
    auto ex = exceptions.find(g.name);
    if (ex == exceptions.end()) {
      EXPECT_GE(g.spearman, 0.8);
      ++passing;
    } else {
      EXPECT_GE(g.spearman, ex->second.floor - 1e-9) << ex->second.why;
    }
  }
  EXPECT_GE(passing, 18);  // of 26 (20 when ranked by iteration time, before 2026-11-27)
}

TEST(TimeValidation, PredictedFastestLayoutWithinThreePercentOfTheMeasuredFastest) {
  // Issue 28's target (§5.8): in every table of five or more layouts the layout ranked first by predicted
  // throughput measured within 3% of the table's fastest (2026-11-27: at most 2.9%, 02-20 PP sweep); the
  // smaller tables keep a floor at today's worst (3.1%, 02-23 heads at 14336: four rows).
  int large = 0;
  for (const validation_stats& g : shipped().groups) {
    SCOPED_TRACE(g.name);
    EXPECT_GE(g.fastest_shortfall, 0.0);
    if (g.rows >= 5) {
      EXPECT_LE(g.fastest_shortfall, 0.03);
      ++large;
    } else {
      EXPECT_LE(g.fastest_shortfall, 0.032);
    }
  }
  EXPECT_EQ(large, 10);
}

TEST(TimeValidation, ProductionLayoutWithinThreePercent) {
  const parsed_job pj = parse_job_args(testing::bloom_production_args());
  const time_report r = estimate_time(pj.job);
  EXPECT_NEAR(r.iteration_s / 105.22, 1.0, 0.03);
  EXPECT_NEAR(r.tflops_per_gpu / 149.02, 1.0, 0.03);
  EXPECT_NEAR(r.samples_per_s / 19.463, 1.0, 0.03);
  const time_breakdown& b = r.breakdown;
  EXPECT_NEAR(b.compute_s + b.tp_comm_s + b.pipeline_s + b.dp_comm_s + b.optimizer_s, r.iteration_s, 1e-6);
  EXPECT_GT(r.mfu, 0.3);
  EXPECT_LT(r.mfu, r.hfu);
}

TEST(TimeFastPath, ProductionLayoutAgreesWithTheEventSimulation) {
  // estimate_time runs the schedule's fast path (uneven stages: embedding and logits in their own
  // slots); with events it runs the event simulation. Both give the same times (§5.4 "Fast path").
  for (const auto& args : {testing::bloom_production_args(),
                           std::vector<std::string>{"--preset", "bloom-176b-production", "--gbs", "192"}}) {
    const parsed_job pj = parse_job_args(args);
    for (schedule_kind kind : {schedule_kind::one_f_one_b, schedule_kind::gpipe}) {
      const time_report fast = estimate_time(pj.job, kind, false);
      const time_report sim = estimate_time(pj.job, kind, true);
      EXPECT_FALSE(fast.pipeline.closed_form);
      EXPECT_FALSE(sim.pipeline.events.empty());
      EXPECT_NEAR(fast.iteration_s / sim.iteration_s, 1.0, 1e-9);
      EXPECT_NEAR(fast.bubble_fraction, sim.bubble_fraction, 1e-9);
      EXPECT_NEAR(fast.breakdown.pipeline_s / sim.breakdown.pipeline_s, 1.0, 1e-9);
      for (std::size_t i = 0; i < sim.pipeline.stages.size(); ++i) {
        EXPECT_NEAR(fast.pipeline.stages[i].pipeline_end_s / sim.pipeline.stages[i].pipeline_end_s, 1.0, 1e-9);
      }
    }
  }
}

// ---- one evaluation path (issue 5 Speed): shared pieces computed once, identical results ----------

void expect_identical(const memory_report& a, const memory_report& b) {
  EXPECT_EQ(a.peak_allocated_bytes, b.peak_allocated_bytes);
  EXPECT_EQ(a.peak_reserved_bytes, b.peak_reserved_bytes);
  EXPECT_EQ(a.peak_stage, b.peak_stage);
  EXPECT_EQ(a.fits, b.fits);
  EXPECT_EQ(a.full_weights_bytes, b.full_weights_bytes);
  EXPECT_EQ(a.full_activations_bytes, b.full_activations_bytes);
  EXPECT_EQ(a.layer_activations.total(), b.layer_activations.total());
  ASSERT_EQ(a.stages.size(), b.stages.size());
  for (std::size_t i = 0; i < a.stages.size(); ++i) {
    EXPECT_EQ(a.stages[i].num_layers, b.stages[i].num_layers);
    EXPECT_EQ(a.stages[i].parameters, b.stages[i].parameters);
    EXPECT_EQ(a.stages[i].allocated_bytes, b.stages[i].allocated_bytes);
    EXPECT_EQ(a.stages[i].reserved_bytes, b.stages[i].reserved_bytes);
    EXPECT_EQ(a.stages[i].activations_bytes, b.stages[i].activations_bytes);
    EXPECT_EQ(a.stages[i].buffers_bytes, b.stages[i].buffers_bytes);
  }
}

void expect_identical(const time_report& a, const time_report& b) {
  EXPECT_EQ(a.iteration_s, b.iteration_s);
  EXPECT_EQ(a.samples_per_s, b.samples_per_s);
  EXPECT_EQ(a.tflops_per_gpu, b.tflops_per_gpu);
  EXPECT_EQ(a.mfu, b.mfu);
  EXPECT_EQ(a.hfu, b.hfu);
  EXPECT_EQ(a.bubble_fraction, b.bubble_fraction);
  EXPECT_EQ(a.p2p_s, b.p2p_s);
  EXPECT_EQ(a.schedule, b.schedule);
  EXPECT_EQ(a.breakdown.compute_s, b.breakdown.compute_s);
  EXPECT_EQ(a.breakdown.tp_comm_s, b.breakdown.tp_comm_s);
  EXPECT_EQ(a.breakdown.pipeline_s, b.breakdown.pipeline_s);
  EXPECT_EQ(a.breakdown.dp_comm_s, b.breakdown.dp_comm_s);
  EXPECT_EQ(a.breakdown.optimizer_s, b.breakdown.optimizer_s);
  EXPECT_EQ(a.compute.model_flops, b.compute.model_flops);
  EXPECT_EQ(a.compute.hardware_flops, b.compute.hardware_flops);
  EXPECT_EQ(a.compute.of(layer_kind::moe).forward.total_s(), b.compute.of(layer_kind::moe).forward.total_s());
  EXPECT_EQ(a.pipeline.closed_form, b.pipeline.closed_form);
  ASSERT_EQ(a.compute.stages.size(), b.compute.stages.size());
  ASSERT_EQ(a.comm.size(), b.comm.size());
  ASSERT_EQ(a.pipeline.stages.size(), b.pipeline.stages.size());
  for (std::size_t i = 0; i < a.comm.size(); ++i) {
    EXPECT_EQ(a.compute.stages[i].forward_s, b.compute.stages[i].forward_s);
    EXPECT_EQ(a.compute.stages[i].backward_s, b.compute.stages[i].backward_s);
    EXPECT_EQ(a.compute.stages[i].optimizer_s, b.compute.stages[i].optimizer_s);
    EXPECT_EQ(a.compute.stages[i].allocator_slowdown, b.compute.stages[i].allocator_slowdown);
    EXPECT_EQ(a.comm[i].forward_s, b.comm[i].forward_s);
    EXPECT_EQ(a.comm[i].backward_s, b.comm[i].backward_s);
    EXPECT_EQ(a.comm[i].grad_reduce_s, b.comm[i].grad_reduce_s);
    EXPECT_EQ(a.comm[i].param_gather_s, b.comm[i].param_gather_s);
    EXPECT_EQ(a.pipeline.stages[i].pipeline_end_s, b.pipeline.stages[i].pipeline_end_s);
  }
}

TEST(TimeEvaluation, EvaluateLayoutEqualsTheSeparateEstimates) {
  // A spread of layouts, evaluated in turn into one reused evaluation (as a search worker does): dense
  // and MoE, PP 1 to 12, uneven and even splits, interleaving, CP, ZeRO stages and frameworks. Each must
  // equal estimate_memory + estimate_time bit for bit, whatever the previous layout left in the buffers.
  const std::vector<std::vector<std::string>> layouts = {
      testing::bloom_production_args(),
      {"--model", "mixtral-8x7b", "--num-gpus", "64", "--tp", "2", "--pp", "4", "--ep", "8", "--sequence-parallel",
       "--use-distributed-optimizer", "--mbs", "1", "--gbs", "64", "--bf16"},
      {"--model", "llama3-70b", "--cluster", "dgx-h100", "--num-nodes", "8", "--tp", "8", "--pp", "4",
       "--num-layers-per-virtual-pipeline-stage", "5", "--sequence-parallel", "--recompute-granularity", "selective",
       "--use-flash-attn", "--use-distributed-optimizer", "--mbs", "1", "--gbs", "32", "--bf16"},
      {"--model", "llama2-7b", "--num-gpus", "8", "--mbs", "4", "--gbs", "64", "--bf16"},
      {"--preset", "bloom-176b-production", "--gbs", "192"},
      {"--model", "llama3-70b", "--cluster", "dgx-h100", "--num-nodes", "4", "--tp", "8", "--cp", "2", "--pp", "2",
       "--mbs", "1", "--gbs", "16", "--seq-length", "16384", "--bf16", "--use-flash-attn"},
      {"--model", "bloom-176b", "--cluster", "jean-zay-a100", "--num-nodes", "40", "--tp", "4", "--pp", "10",
       "--mbs", "2", "--gbs", "2048", "--bf16", "--use-distributed-optimizer", "--recompute-granularity", "full"},
      {"--model", "llama2-7b", "--num-gpus", "16", "--framework", "deepspeed", "--zero-stage", "3", "--mbs", "2",
       "--gbs", "64", "--bf16"},
  };
  layout_evaluation reused;
  for (int round = 0; round < 2; ++round) {
    for (const auto& args : layouts) {
      std::string line;
      for (const auto& a : args) line += a + " ";
      SCOPED_TRACE(line);
      const parsed_job pj = parse_job_args(args);
      const memory_report mem = estimate_memory(pj.job);
      const time_report t = estimate_time(pj.job);
      evaluate_layout(pj.job, reused);
      expect_identical(reused.memory, mem);
      expect_identical(reused.time, t);
      const layout_evaluation fresh = evaluate_layout(pj.job);
      expect_identical(fresh.memory, mem);
      expect_identical(fresh.time, t);
      expect_identical(estimate_time(pj.job, mem), t);
      for (schedule_kind kind : {schedule_kind::gpipe, default_schedule(pj.job)}) {
        if (kind == schedule_kind::gpipe && pj.job.parallel.vpp > 1) continue;
        expect_identical(estimate_time(pj.job, mem, kind, false), estimate_time(pj.job, kind, false));
      }
    }
  }
}

// ---- the effects under "Why" in issue 4 ---------------------------------------------------------

TEST(TimeEffects, Hidden13824BeatsHidden14400) {
  // Rows 464/465: 221.21 s → 160.29 s (head dim 150 is not a multiple of 8).
  const double ratio = predicted_s(465) / predicted_s(464);
  EXPECT_LT(ratio, 0.80);
  EXPECT_GT(ratio, 0.60);  // measured 0.72
}

TEST(TimeEffects, HeadDim108IsSlow) {
  // Rows 589 (128 heads, head dim 108) vs 560 (64 heads): 162.72 s vs 121.28 s (+34%).
  const double ratio = predicted_s(589) / predicted_s(560);
  EXPECT_GT(ratio, 1.15);
  EXPECT_LT(ratio, 1.50);
}

TEST(TimeEffects, MicroBatchTwoBeatsOneAndEight) {
  // Rows 394/420/421/422 (PP 10): 221.21, 207.92, 208.18, 229.69 s.
  const double mbs1 = predicted_s(394), mbs2 = predicted_s(420), mbs8 = predicted_s(422);
  EXPECT_LT(mbs2, mbs1);
  EXPECT_LT(mbs2, mbs8);
  EXPECT_GT(mbs1 / mbs2, 1.01);
  EXPECT_GT(mbs8 / mbs2, 1.03);
}

TEST(TimeEffects, TensorParallel4BeatsTensorParallel8) {
  // Rows 753 (TP 4, DP 8) vs 752 (TP 8, DP 4), PP 12: 102.03 s vs 121.63 s.
  const double ratio = predicted_s(753) / predicted_s(752);
  EXPECT_LT(ratio, 0.95);
  EXPECT_GT(ratio, 0.75);  // measured 0.84
}

TEST(TimeEffects, GlobalBatch512LosesTflopsToTheBubble) {
  // Rows 689/692: GBS 512 at 113.52 TFLOPs, 2048 at 151.64 (ratio 0.75).
  const double t512 = 512 / predicted_s(689), t2048 = 2048 / predicted_s(692);
  EXPECT_GT(t512 / t2048, 0.65);
  EXPECT_LT(t512 / t2048, 0.85);
}

TEST(TimeEffects, ZeroStage0IsSlowerThanStage1) {
  // Rows 535 (ZeRO 0) vs 534 (ZeRO 1): 137.34 s vs 120.29 s. The model reproduces the direction only
  // (an unsharded optimizer step; the seed ran the two on different code branches, §5.8).
  EXPECT_GT(predicted_s(535), predicted_s(534));
}

TEST(TimeBadInput, InterleavingNeedsMicrobatchesMultipleOfStages) {
  try {
    parse_job_args({"--model", "bloom-176b", "--num-layers", "72", "--cluster", "jean-zay-a100", "--num-nodes", "48",
                    "--tp", "4", "--pp", "12", "--mbs", "2", "--gbs", "96",
                    "--num-layers-per-virtual-pipeline-stage", "2"});
    FAIL() << "expected input_error";
  } catch (const input_error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("--pipeline-model-parallel-size"), std::string::npos) << m;
    EXPECT_NE(m.find("--global-batch-size"), std::string::npos) << m;
  }
}

TEST(TimeCli, TimeJsonHasTheSchema) {
  const std::string cmd = std::string(TRAINPLAN_BINARY) + " time --preset bloom-176b-production --json";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, p)) out += buf;
  EXPECT_EQ(pclose(p), 0);
  for (const char* key : {"\"schema_version\": 1", "\"iteration_s\"", "\"samples_per_s\"", "\"tokens_per_s\"",
                          "\"tflops_per_gpu\"", "\"model_tflops_per_gpu\"", "\"mfu\"", "\"hfu\"",
                          "\"bubble_fraction\"", "\"breakdown_s\""}) {
    EXPECT_NE(out.find(key), std::string::npos) << key;
  }
}

TEST(TimeCli, VppWithoutEnoughLayersExitsTwo) {
  const std::string cmd = std::string(TRAINPLAN_BINARY) +
                          " time --preset bloom-176b-production --num-layers-per-virtual-pipeline-stage 4 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, p)) out += buf;
  const int rc = pclose(p);
  EXPECT_EQ(WEXITSTATUS(rc), 2);
  EXPECT_NE(out.find("--num-layers-per-virtual-pipeline-stage"), std::string::npos) << out;
}

}  // namespace
}  // namespace trainplan

// ---- attention FLOPs: one convention for counting and timing (docs/formulas.md §5.1; issue 16 finding 8) ----

namespace {

trainplan::time_report llama8b(const std::string& seq, std::vector<std::string> extra) {
  std::vector<std::string> args = {"--model", "llama3-8b", "--cluster", "dgx-h100", "--num-gpus", "64", "--tp", "4", "--cp",
                                   "16", "--seq-length", seq, "--max-position-embeddings", seq, "--gbs", "8", "--sp",
                                   "--use-distributed-optimizer", "--recompute-granularity", "full", "--recompute-method",
                                   "uniform", "--recompute-num-layers", "1"};
  args.insert(args.end(), extra.begin(), extra.end());
  return trainplan::estimate_time(trainplan::parse_job_args(args).job);
}

}  // namespace

TEST(TimeAttentionConvention, FlashCountsTheCausalHalfItExecutes) {
  // The unfused kernels compute the whole s² square, flash the causal half: the counts differ by half the
  // batched attention GEMMs, 2·GBS·a·s²·d per layer forward, ×3 for the model FLOPs.
  const trainplan::time_report flash = llama8b("8192", {});
  const trainplan::time_report unfused = llama8b("8192", {"--attention-backend", "unfused"});
  const double s = 8192, layers = 32, gbs = 8, heads = 32, dh = 128;
  EXPECT_NEAR(unfused.compute.model_flops - flash.compute.model_flops, 3 * layers * 2 * gbs * heads * s * s * dh,
              1e-9 * unfused.compute.model_flops);
}

TEST(TimeAttentionConvention, LongContextUtilisationStaysUnderTheKernelCeiling) {
  // At 128K the attention core is most of the work. Counted in full but timed as the causal half, HFU
  // reached 67% and MFU 50%, above what any kernel of the model runs at.
  const trainplan::time_report r = llama8b("131072", {});
  const trainplan::gpu_spec& gpu = trainplan::find_gpu("h100-sxm5-80gb");
  const trainplan::compute_efficiency e = trainplan::effective_compute_efficiency(gpu);
  double ceiling = e.flash_attention_fraction;
  for (const auto& t : e.tiles) ceiling = std::max(ceiling, t.peak_fraction);
  EXPECT_LE(r.hfu, ceiling);
  EXPECT_LT(r.mfu, r.hfu);
}
