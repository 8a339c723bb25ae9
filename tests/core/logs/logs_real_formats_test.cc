// `trainplan logs` on the formats of real logs (issue 32): each file in tests/data/logs/real/ keeps the
// exact line format of a log pasted in a public issue thread (its README names the thread), and each test
// pins what an engineer must be told: NaN losses and grad norms, DeepSpeed's skipped steps and loss-scale
// drops, GPT-NeoX's FLOPs, the NeMo 1 bar's s/it and clock, lines cut short, the levels of a short log and
// a plan that counts other FLOPs than the log.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "trainplan/core/estimate/time.h"
#include "trainplan/core/logs/logs.h"

namespace trainplan {
namespace {

log_report read_real(const std::string& name, log_options o = {}) {
  return read_logs({std::string(TRAINPLAN_TEST_DATA_DIR) + "/logs/real/" + name}, o, nullptr).report();
}

log_report feed(const std::vector<std::string>& lines) {
  log_analyzer a;
  a.begin_file("t.log");
  for (const auto& l : lines) a.add_line(l);
  return a.report();
}

TEST(LogsRealFormats, MegatronDeepSpeedGradNormNanIsAFindingNotHealth) {
  // Megatron's own nan counter says 0 on every line; the grad norm says nan on every line.
  const log_report r = read_real("megatron_deepspeed_grad_norm_nan.log");
  EXPECT_EQ(r.format, log_format::megatron_deepspeed);
  EXPECT_EQ(r.records, 6);
  EXPECT_EQ(r.nan_total, 0);
  EXPECT_EQ(r.nonfinite_grad_norm_lines, 6);
  EXPECT_EQ(r.nonfinite_loss_lines, 0);  // no line carried a loss: nothing went missing
  ASSERT_FALSE(r.nonfinite.empty());
  EXPECT_EQ(r.nonfinite[0].iteration, 3101);
  EXPECT_EQ(r.nonfinite[0].what, "grad norm");
  EXPECT_NEAR(r.mean_iteration_s, 4.229, 0.005);
}

TEST(LogsRealFormats, MegatronLossThatDisappearsIsNaN) {
  // training.py training_log prints the loss only when its average is > 0: NaN is left out.
  const log_report r = read_real("megatron_loss_omitted.log");
  EXPECT_EQ(r.nonfinite_loss_lines, 3);
  ASSERT_EQ(r.nonfinite.size(), 3u);
  EXPECT_EQ(r.nonfinite[0].iteration, 1204);
  EXPECT_EQ(r.nonfinite[0].how, "omitted: Megatron prints no average that is NaN");
}

TEST(LogsRealFormats, MegatronLossLeftOutBecauseEveryIterationWasSkippedIsNoNaN) {
  // fp16's first iterations: all 10 skipped, so the average is 0 and the loss is left out (nccl issue 743's log).
  const std::string with_loss =
      " iteration       10/ 1000000 | consumed samples:           40 | elapsed time per iteration (ms): 140.6 | "
      "learning rate: 2.020E-08 | global batch size:     4 | lm loss: 1.005022E+01 | loss scale: 32768.0 | "
      "number of skipped iterations:   0 | number of nan iterations:   0 |";
  const std::string all_skipped =
      " iteration       20/ 1000000 | consumed samples:           80 | elapsed time per iteration (ms): 356.2 | "
      "learning rate: 0.000E+00 | global batch size:     4 | loss scale: 8388608.0 | number of skipped iterations:  10 | "
      "number of nan iterations:   0 |";
  const log_report r = feed({with_loss, all_skipped});
  EXPECT_EQ(r.nonfinite_loss_lines, 0);
  EXPECT_EQ(r.skipped_total, 10);
}

TEST(LogsRealFormats, DeepSpeedEngineStepAndTimerLines) {
  // deepspeed 0.5: "[Rank 0] step=N, skipped=K, lr=[...]" and "0/N, SamplesPerSec=...", notebook noise between.
  const log_report r = read_real("deepspeed_engine_0.5.log");
  EXPECT_EQ(r.format, log_format::deepspeed_engine);
  EXPECT_EQ(r.records, 6);
  EXPECT_EQ(r.last_iteration, 60);
  EXPECT_EQ(r.log_interval, 10);
  // skipped= counts since the start: 1 by step 10, 3 by step 40.
  EXPECT_EQ(r.skipped_total, 3);
  ASSERT_EQ(r.skipped.size(), 2u);
  EXPECT_EQ(r.skipped[1].iteration, 40);
  // The step time from the timestamps: 15.1-15.3 s per 10 steps.
  EXPECT_NEAR(r.mean_iteration_s, 1.52, 0.005);
  EXPECT_NEAR(r.recent_samples_per_s, 84.275, 0.01);
}

TEST(LogsRealFormats, DeepSpeedEngineTimerOfTodayAndTheScalersOverflows) {
  const log_report r = read_real("deepspeed_engine_0.9.log");
  EXPECT_EQ(r.format, log_format::deepspeed_engine);
  EXPECT_EQ(r.records, 12);
  EXPECT_EQ(r.malformed_lines, 0);  // the timer's "global_step=" is not a NeMo bar
  EXPECT_EQ(r.skipped_total, 2);
  // Two overflows halve the scale; the one that only spends hysteresis does not.
  EXPECT_EQ(r.loss_scale_drop_count, 2);
  ASSERT_EQ(r.loss_scale_drops.size(), 2u);
  EXPECT_EQ(r.loss_scale_drops[0].before, 65536);
  EXPECT_EQ(r.loss_scale_drops[0].after, 32768);
  EXPECT_NEAR(r.mean_iteration_s, 3.80, 0.02);
  EXPECT_NEAR(r.recent_samples_per_s, 8.45, 0.01);
}

TEST(LogsRealFormats, DeepSpeedEngineWithoutTimestampsTakesTheStepTimeFromSamplesPerSecond) {
  log_options o;
  o.global_batch_size = 64;
  log_analyzer a(o);
  a.begin_file("t.log");
  for (int step = 1; step <= 4; ++step) {
    a.add_line("[Rank 0] step=" + std::to_string(step) + ", skipped=0, lr=[1e-05], mom=[[0.9, 0.999]]");
    a.add_line("epoch=0/micro_step=" + std::to_string(step) + "/global_step=" + std::to_string(step) +
               ", RunningAvgSamplesPerSec=16.0, CurrSamplesPerSec=16.0, MemAllocated=1.0GB, MaxMemAllocated=2.0GB");
  }
  const log_report r = a.report();
  EXPECT_EQ(r.records, 4);
  EXPECT_DOUBLE_EQ(r.mean_iteration_s, 4.0);  // 64 samples / 16 samples/s
}

TEST(LogsRealFormats, GptNeoxLinesWithTheirFlopsAndLossBesideTheEngineLines) {
  const log_report r = read_real("gpt_neox.log");
  EXPECT_EQ(r.format, log_format::gpt_neox);
  EXPECT_EQ(r.records, 12);
  EXPECT_EQ(r.other_format_records, 0);
  EXPECT_EQ(r.companion_lines, 24);  // the engine's step and timer lines
  EXPECT_EQ(r.malformed_lines, 0);
  EXPECT_EQ(r.train_iterations, 10000);
  EXPECT_NEAR(r.mean_tflops, 112.9, 0.6);  // "approx flops per GPU: 112.3TFLOPS" … "113.9TFLOPS"
  EXPECT_NEAR(r.mean_iteration_s, 4.1, 0.01);
  const log_line l = parse_log_line(
      " samples/sec: 7.812 | iteration       34/   10000 | elapsed time per iteration (ms): 4103.1 | learning rate: "
      "2.111E-06 | approx flops per GPU: 0.2PFLOPS | lm_loss: 1.118665E+01 | number of skipped iterations:   0 | "
      "number of nan iterations:   0 |");
  ASSERT_EQ(l.what, log_line::kind::record);
  EXPECT_DOUBLE_EQ(l.record.tflops_per_gpu, 200);
  EXPECT_DOUBLE_EQ(l.record.loss, 11.18665);
  EXPECT_DOUBLE_EQ(l.record.samples_per_s, 7.812);
}

TEST(LogsRealFormats, NemoOneBarWithSecondsPerIterationAndItsClock) {
  // No train_step_timing: the bar's own "41.32s/it" and its elapsed clock "6:59:53".
  const log_report r = read_real("nemo1_bar_s_it.log");
  EXPECT_EQ(r.format, log_format::nemo_progress_bar);
  EXPECT_EQ(r.records, 12);
  EXPECT_EQ(r.train_iterations, 77225);
  EXPECT_EQ(r.last_iteration, 620);
  EXPECT_NEAR(r.mean_iteration_s, 41.31, 0.02);
  EXPECT_NEAR(r.wall_iteration_s, 41.3, 0.2);  // from the elapsed clock
  EXPECT_FALSE(std::isnan(r.eta_low_s));
  const log_line fast = parse_log_line("Epoch 0:  10%|█         | 50/500 [00:20<03:00, 2.50it/s, reduced_train_loss=4.2, global_step=49.0]");
  ASSERT_EQ(fast.what, log_line::kind::record);
  EXPECT_DOUBLE_EQ(fast.record.iteration_s, 0.4);
  EXPECT_DOUBLE_EQ(fast.record.elapsed_s, 20);
}

TEST(LogsRealFormats, NemoOneBarWithANanLossAndARoundedGlobalStep) {
  // "reduced_train_loss=nan.0"; tqdm prints global_step=1.2e+4, so the bar's exact counter is read.
  const log_report r = read_real("nemo1_bar_nan.log");
  EXPECT_EQ(r.records, 12);
  EXPECT_EQ(r.malformed_lines, 0);
  EXPECT_EQ(r.last_iteration, 12011);
  EXPECT_EQ(r.nonfinite_loss_lines, 6);
  ASSERT_FALSE(r.nonfinite.empty());
  EXPECT_EQ(r.nonfinite[0].iteration, 12006);
}

TEST(LogsRealFormats, LinesCutShortAreReadForTheFieldsTheyHave) {
  // seeds/004 quotes BLOOM's lines wrapped at a fixed width: the first piece holds the iteration and time.
  const log_report r = read_real("bloom_wrapped.log");
  EXPECT_EQ(r.records, 5);
  EXPECT_EQ(r.cut_short_lines, 5);
  EXPECT_EQ(r.malformed_lines, 0);
  EXPECT_EQ(r.last_iteration, 42784);
  EXPECT_NEAR(r.mean_iteration_s, (105.16 + 105.17 + 106.25 + 110.17 + 111.14) / 5, 0.01);
  // A field cut in the middle is not read: "elapsed time per itera" has no value.
  const log_line l = parse_log_line(" iteration        3/    1000 | consumed samples:          768 | elapsed time per itera");
  ASSERT_EQ(l.what, log_line::kind::record);
  EXPECT_TRUE(l.record.cut_short);
  EXPECT_EQ(l.record.consumed_samples, 768);
  EXPECT_TRUE(std::isnan(l.record.iteration_s));
}

std::string bloom_line(std::int64_t it, double s, double tflops) {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                " iteration %8lld/ 115311 | consumed samples: %12lld | elapsed time per iteration (s): %.2f | "
                "learning rate: 6.000E-05 | global batch size:  2048 | lm loss: 2.500000E+00 | grad norm: 0.200 | "
                "number of skipped iterations:   0 | number of nan iterations:   0 | TFLOPs: %.2f |",
                static_cast<long long>(it), static_cast<long long>(it * 2048), s, tflops);
  return buf;
}

TEST(LogsRealFormats, AShortLogReportsBothLevels) {
  // 4 lines at ~88 s then 4 at ~127 s: a level of 88 s and an open one at 127 s (+44%), no one-offs.
  std::vector<std::string> lines;
  const double times[] = {88.2, 87.9, 88.4, 88.0, 127.1, 126.8, 127.4, 126.9};
  for (int i = 0; i < 8; ++i) lines.push_back(bloom_line(100 + i, times[i], 150));
  const log_report r = feed(lines);
  EXPECT_EQ(r.slow_iteration_count, 0);
  ASSERT_TRUE(r.open_level.present);
  EXPECT_EQ(r.open_level.first_iteration, 104);
  EXPECT_EQ(r.open_level.lines, 4);
  EXPECT_NEAR(r.open_level.level_s, 88.125, 1e-9);
  EXPECT_NEAR(r.open_level.run_s, 127.05, 1e-9);
  EXPECT_NEAR(r.first_level_s, 88.125, 1e-9);
  // Against a plan, the speed now is the open level's.
  time_report p;
  p.iteration_s = 107;
  p.tflops_per_gpu = 150;
  const log_plan_comparison c = compare_with_plan(r, p, 2048);
  EXPECT_DOUBLE_EQ(c.observed_iteration_s, 127.05);
  EXPECT_EQ(c.verdict, log_verdict::slowed_down);
}

TEST(LogsRealFormats, ASustainedSlowdownOverTheSlowFactorIsAStepNotOneOffs) {
  // 20 lines at 100 s, then 12 at 130 s: before, each of the 12 was a "one-off slow line".
  std::vector<std::string> lines;
  for (int i = 0; i < 20; ++i) lines.push_back(bloom_line(i + 1, 100 + 0.1 * (i % 3), 150));
  for (int i = 0; i < 12; ++i) lines.push_back(bloom_line(21 + i, 130 + 0.1 * (i % 3), 115));
  const log_report r = feed(lines);
  EXPECT_EQ(r.slow_iteration_count, 0);
  ASSERT_EQ(r.step_count, 1);
  EXPECT_EQ(r.steps[0].iteration, 21);
  EXPECT_NEAR(r.steps[0].after_s / r.steps[0].before_s - 1, 0.3, 0.005);
  EXPECT_NEAR(r.recent_iteration_s, (20 * 100.1 + 12 * 130.1) / 32, 0.1);
}

TEST(LogsRealFormats, APlanThatCountsOtherFlopsThanTheLogIsNamed) {
  log_report r;
  r.recent_iteration_s = 100;
  r.recent_tflops = 462;
  time_report p;
  p.iteration_s = 100;
  p.tflops_per_gpu = 231;
  log_plan_comparison c = compare_with_plan(r, p, 2048);
  EXPECT_TRUE(c.flops_mismatch);
  EXPECT_NEAR(c.tflops_logged_vs_plan, 1.0, 1e-12);
  r.recent_tflops = 231 * 1.15;  // within 20%: conventions differ that much (recomputation counted or not)
  c = compare_with_plan(r, p, 2048);
  EXPECT_FALSE(c.flops_mismatch);
}

}  // namespace
}  // namespace trainplan
