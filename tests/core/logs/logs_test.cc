// `trainplan logs` (issue 12, docs/formulas.md §8): one test per format (a line in each framework's
// exact format, tests/data/logs/README.md names where each comes from), per detector, for restarts and
// stalls, for bad input, and the seeds' BLOOM figures: the ETA of iteration 12695 of 115311 at 105.22 s
// (≈125 days), the spike at 31216-31222 with its grad norms, and the slow GPU's step (synthetic log
// built from bloom-final-measurements.csv's last two rows).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/stat.h>
#include <utime.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "cli_support.h"
#include "run_process.h"
#include "trainplan/cli/cli.h"
#include "trainplan/core/base/error.h"
#include "trainplan/core/logs/logs.h"
#include "trainplan/core/estimate/time.h"

namespace trainplan {
namespace {

std::string log_path(const std::string& name) { return std::string(TRAINPLAN_TEST_DATA_DIR) + "/logs/" + name; }

log_report read_one(const std::string& name, log_options o = {}) {
  return read_logs({log_path(name)}, o, nullptr).report();
}

/// Feed lines to an analyzer as one file named "t.log".
log_report feed(const std::vector<std::string>& lines, log_options o = {}) {
  log_analyzer a(o);
  a.begin_file("t.log");
  for (const auto& l : lines) a.add_line(l);
  return a.report();
}

std::string temp_file(const std::string& name, const std::string& content) {
  const std::string path = ::testing::TempDir() + "trainplan_logs_" + name;
  std::ofstream(path, std::ios::binary) << content;
  return path;
}

/// A Megatron-LM core line (megatron/training/training.py training_log) with the fields the tests vary.
std::string megatron_line(std::int64_t it, double ms, double loss, std::int64_t gbs = 256, const std::string& time = "") {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "%s iteration %8lld/%8d | consumed samples: %12lld | elapsed time per iteration (ms): %.1f | "
                "learning rate: 3.000000E-04 | global batch size: %5lld | lm loss: %.6E | loss scale: 1.0 | "
                "grad norm: 1.000 | number of skipped iterations:   0 | number of nan iterations:   0 |",
                time.empty() ? "" : (" [" + time + "]").c_str(), static_cast<long long>(it), 1000,
                static_cast<long long>(it * gbs), ms, static_cast<long long>(gbs), loss);
  return buf;
}

// ---- one test per format ------------------------------------------------------------------------------

TEST(LogsFormat, MegatronDeepSpeedSeedLine) {
  // seeds/004 line 45, verbatim (the [default7]: prefix torchrun adds included).
  const log_line l = parse_log_line(
      "[default7]: iteration    12695/  115311 | consumed samples:      9841584 | consumed tokens:  20155564032 | "
      "elapsed time per iteration (s): 105.22 | learning rate: 5.969E-05 | global batch size:  2048 | lm loss: "
      "2.463556E+00 | grad norm: 0.174 | num zeros: 0.0 | number of skipped iterations:   0 | number of nan "
      "iterations:   0 | samples per second: 19.463 | TFLOPs: 149.02 |");
  ASSERT_EQ(l.what, log_line::kind::record) << l.problem;
  EXPECT_EQ(l.format, log_format::megatron_deepspeed);
  EXPECT_EQ(l.record.iteration, 12695);
  EXPECT_EQ(l.record.train_iterations, 115311);
  EXPECT_EQ(l.record.consumed_samples, 9841584);
  EXPECT_EQ(l.record.consumed_tokens, 20155564032);
  EXPECT_DOUBLE_EQ(l.record.iteration_s, 105.22);
  EXPECT_DOUBLE_EQ(l.record.tflops_per_gpu, 149.02);
  EXPECT_DOUBLE_EQ(l.record.loss, 2.463556);
  EXPECT_DOUBLE_EQ(l.record.grad_norm, 0.174);
  EXPECT_EQ(l.record.global_batch_size, 2048);
  EXPECT_TRUE(std::isnan(l.record.timestamp_s));
}

TEST(LogsFormat, MegatronLmCoreLine) {
  const log_line l = parse_log_line(
      " [2025-08-01 07:19:37] iteration        1/    5000 | consumed samples:          128 | elapsed time per "
      "iteration (ms): 19138.8 | throughput per GPU (TFLOP/s/GPU): 80.2 | learning rate: 6.976744E-08 | global "
      "batch size:   128 | lm loss: 1.043863E+01 | loss scale: 1.0 | grad norm: 26.203 | number of skipped "
      "iterations:   0 | number of nan iterations:   0 |");
  ASSERT_EQ(l.what, log_line::kind::record) << l.problem;
  EXPECT_EQ(l.format, log_format::megatron_lm);
  EXPECT_EQ(l.record.iteration, 1);
  EXPECT_EQ(l.record.train_iterations, 5000);
  EXPECT_DOUBLE_EQ(l.record.iteration_s, 19.1388);
  EXPECT_DOUBLE_EQ(l.record.tflops_per_gpu, 80.2);
  EXPECT_DOUBLE_EQ(l.record.loss_scale, 1.0);
  EXPECT_DOUBLE_EQ(l.record.timestamp_s, 1754032777.0);  // 2025-08-01 07:19:37 read as UTC
}

TEST(LogsFormat, NemoProgressPrinterLine) {
  const log_line l = parse_log_line(
      "Training epoch 0, iteration 9/99 | lr: 1.5e-05 | global_batch_size: 8 | global_step: 9 | "
      "reduced_train_loss: 10.91 | train_step_timing in s: 2.7 | consumed_samples: 80 | tflops_per_sec_per_gpu: 512.3");
  ASSERT_EQ(l.what, log_line::kind::record) << l.problem;
  EXPECT_EQ(l.format, log_format::nemo);
  EXPECT_EQ(l.record.iteration, 9);
  EXPECT_EQ(l.record.train_iterations, 99);
  EXPECT_DOUBLE_EQ(l.record.iteration_s, 2.7);
  EXPECT_DOUBLE_EQ(l.record.loss, 10.91);
  EXPECT_DOUBLE_EQ(l.record.tflops_per_gpu, 512.3);
  EXPECT_EQ(l.record.consumed_samples, 80);
  EXPECT_EQ(l.record.global_batch_size, 8);
}

TEST(LogsFormat, NemoProgressBarLineAndCarriageReturns) {
  // NeMo's README "Expected Performance" line, verbatim.
  const log_line l = parse_log_line(
      "Epoch 0: : 100%|██████████| 50/50 [31:51<00:00, reduced_train_loss=6.130, global_step=50.0, "
      "consumed_samples=76800.0, train_step_timing in s=5.900, val_loss=6.250]");
  ASSERT_EQ(l.what, log_line::kind::record) << l.problem;
  EXPECT_EQ(l.format, log_format::nemo_progress_bar);
  EXPECT_EQ(l.record.iteration, 50);
  EXPECT_EQ(l.record.train_iterations, 50);
  EXPECT_DOUBLE_EQ(l.record.iteration_s, 5.9);
  EXPECT_EQ(l.record.consumed_samples, 76800);
  // The bar redraws itself with '\r': each redraw is a progress line.
  const log_report r = read_one("nemo1_bar.log");
  EXPECT_EQ(r.records, 50);
  EXPECT_EQ(r.last_iteration, 49);
  EXPECT_NEAR(r.mean_iteration_s, 5.9, 0.05);
}

TEST(LogsFormat, TorchtitanLineWithColours) {
  const log_line l = parse_log_line(
      "[rank0]:[titan] 2025-03-12 10:00:06,600 - root - INFO - \x1b[31mstep: 10  \x1b[32mloss:  7.9500  "
      "\x1b[38;2;255;165;0mgrad_norm:  1.5000  \x1b[38;2;54;234;195mmemory: 42.12GiB(44.34%)  \x1b[34mtps: 6,200  "
      "\x1b[36mtflops: 1,359.12  \x1b[35mmfu: 36.31%\x1b[39m");
  ASSERT_EQ(l.what, log_line::kind::record) << l.problem;
  EXPECT_EQ(l.format, log_format::torchtitan);
  EXPECT_EQ(l.record.iteration, 10);
  EXPECT_DOUBLE_EQ(l.record.loss, 7.95);
  EXPECT_DOUBLE_EQ(l.record.grad_norm, 1.5);
  EXPECT_DOUBLE_EQ(l.record.tflops_per_gpu, 1359.12);
  EXPECT_NEAR(l.record.timestamp_s, parse_log_time("2025-03-12 10:00:06") + 0.6, 1e-6);
  // torchtitan prints no step time: it comes from the timestamps (0.66 s per step in the file).
  const log_report r = read_one("torchtitan.log");
  EXPECT_EQ(r.log_interval, 10);
  EXPECT_NEAR(r.mean_iteration_s, 0.66, 0.01);
}

TEST(LogsFormat, DeepSpeedPipeLine) {
  const log_line l = parse_log_line("steps: 10 loss: 7.1234 iter time (s): 1.234 samples/sec: 12.340");
  ASSERT_EQ(l.what, log_line::kind::record) << l.problem;
  EXPECT_EQ(l.format, log_format::deepspeed);
  EXPECT_EQ(l.record.iteration, 10);
  EXPECT_DOUBLE_EQ(l.record.iteration_s, 1.234);
  EXPECT_DOUBLE_EQ(l.record.loss, 7.1234);
  const log_line v = parse_log_line("step:   200 /  1000 loss: 6.5000 iter time (s): 0.500 samples/sec: 1024.000 eta (h): 0.111");
  ASSERT_EQ(v.what, log_line::kind::record) << v.problem;
  EXPECT_EQ(v.record.iteration, 200);
  EXPECT_EQ(v.record.train_iterations, 1000);
}

TEST(LogsFormat, EventsAndUnknownLines) {
  EXPECT_EQ(parse_log_line("saving checkpoint at iteration      30 to /ckpt in torch_dist format").event,
            log_event::checkpoint_save);
  EXPECT_EQ(parse_log_line(" validation loss at iteration 40 | lm loss value: 6.1E+00 |").event, log_event::evaluation);
  EXPECT_EQ(parse_log_line("> initializing torch distributed ...").event, log_event::startup);
  EXPECT_EQ(parse_log_line("NCCL INFO Channel 00/32 : 0 1 2 3").what, log_line::kind::unknown);
  EXPECT_EQ(parse_log_line("").what, log_line::kind::unknown);
}

TEST(LogsFormat, Timestamps) {
  EXPECT_DOUBLE_EQ(parse_log_time("2022-03-18 10:41:37"), 1647600097.0);
  EXPECT_DOUBLE_EQ(parse_log_time("2022-03-18T10:41:37.250000"), 1647600097.25);
  EXPECT_TRUE(std::isnan(parse_log_time("2022-13-18 10:41:37")));
  EXPECT_TRUE(std::isnan(parse_log_time("2022-03-18")));
  // Megatron's print_datetime lines carry the time after "datetime: ".
  EXPECT_DOUBLE_EQ(parse_log_line("[after training is done] datetime: 2022-03-18 10:41:37 ").timestamp_s, 1647600097.0);
}

// ---- progress and ETA (§8.1) ------------------------------------------------------------------------------

TEST(LogsProgress, BloomEtaOfTheChronicles) {
  // seeds/004: iteration 12695 of 115311 at 105.22 s/iteration, "~125 days" remaining.
  const log_report r = read_one("bloom_eta.log");
  EXPECT_EQ(r.format, log_format::megatron_deepspeed);
  EXPECT_EQ(r.last_iteration, 12695);
  EXPECT_EQ(r.train_iterations, 115311);
  EXPECT_DOUBLE_EQ(r.eta_low_s, 102616 * 105.22);
  EXPECT_DOUBLE_EQ(r.eta_high_s, 102616 * 105.22);
  EXPECT_NEAR(r.eta_low_s / 86400, 124.97, 0.005);
  EXPECT_EQ(r.tokens_done, 20155564032);
  EXPECT_EQ(r.tokens_remaining, 102616LL * 2048 * 2048);  // sequence length from tokens / samples
}

TEST(LogsProgress, EtaRangeIsRecentAgainstWholeRun) {
  std::vector<std::string> lines;
  for (int it = 1; it <= 100; ++it) lines.push_back(megatron_line(it, it <= 50 ? 1000 : 1010, 5.0));
  log_options o;
  o.recent_records = 10;
  const log_report r = feed(lines, o);
  EXPECT_NEAR(r.recent_iteration_s, 1.010, 1e-9);
  EXPECT_NEAR(r.mean_iteration_s, 1.005, 1e-9);
  EXPECT_NEAR(r.eta_low_s, 900 * 1.005, 1e-6);
  EXPECT_NEAR(r.eta_high_s, 900 * 1.010, 1e-6);
}

TEST(LogsProgress, TotalFromOptionWhenNotLogged) {
  log_options o;
  o.train_iterations = 1000;
  const log_report r = read_one("deepspeed.log", o);
  EXPECT_EQ(r.train_iterations, 1000);
  EXPECT_EQ(r.log_interval, 10);
  EXPECT_NEAR(r.eta_low_s, 600 * r.mean_iteration_s, 600 * 0.01);
}

// ---- throughput (§8.2) -----------------------------------------------------------------------------------

TEST(LogsThroughput, SlowGpuStepOfTheChronicles) {
  // Synthetic (generate.py): 105.17 s / 149.09 TFLOPs to 42781, 111.14 s / 141.09 from 42782.
  const log_report r = read_one("bloom_slow_gpu.log");
  ASSERT_EQ(r.step_count, 1);
  const log_throughput_step& s = r.steps.front();
  EXPECT_EQ(s.iteration, 42782);
  EXPECT_EQ(s.at.line, 81);
  EXPECT_NEAR(s.before_s, 105.17, 105.17 * 0.002);
  EXPECT_NEAR(s.after_s, 111.14, 111.14 * 0.002);
  EXPECT_NEAR(s.before_tflops, 149.09, 0.5);
  EXPECT_NEAR(s.after_tflops, 141.09, 0.5);
  EXPECT_EQ(r.slow_iteration_count, 0);
  EXPECT_NEAR(r.first_level_s, 105.17, 105.17 * 0.002);
}

TEST(LogsThroughput, NoStepInSteadyNoiseOrAfterABatchSizeChange) {
  std::vector<std::string> lines;
  for (int it = 1; it <= 200; ++it) {
    const double wobble = 1 + 0.015 * std::sin(1.3 * it);  // ±1.5%, under the 2% threshold
    lines.push_back(megatron_line(it, 1000 * wobble * (it > 100 ? 2 : 1), 5.0, it > 100 ? 512 : 256));
  }
  const log_report r = feed(lines);
  EXPECT_EQ(r.step_count, 0);
  ASSERT_EQ(r.batch_changes.size(), 1u);
  EXPECT_EQ(r.batch_changes[0].iteration, 101);
  EXPECT_EQ(r.batch_changes[0].before, 256);
  EXPECT_EQ(r.batch_changes[0].after, 512);
  EXPECT_NEAR(r.first_level_s, 2.0, 0.03);  // the first level at the last batch size
}

TEST(LogsThroughput, OneOffSlowLinesAndTheirCauses) {
  const log_report r = read_one("megatron_lm.log");
  ASSERT_EQ(r.slow_iteration_count, 3);
  EXPECT_EQ(r.slow_iterations[0].iteration, 1);
  EXPECT_EQ(r.slow_iterations[0].cause, log_event::startup);
  EXPECT_EQ(r.slow_iterations[1].iteration, 31);
  EXPECT_EQ(r.slow_iterations[1].cause, log_event::checkpoint_save);
  EXPECT_EQ(r.slow_iterations[2].iteration, 41);
  EXPECT_EQ(r.slow_iterations[2].cause, log_event::evaluation);
  EXPECT_EQ(r.step_count, 0);
  EXPECT_NEAR(r.mean_iteration_s, 1.5, 0.01);  // one-offs are not in the mean
  EXPECT_GT(r.wall_iteration_s, r.mean_iteration_s);  // ... but the wall clock has them
}

// ---- instabilities (§8.3, §8.4) ------------------------------------------------------------------------

TEST(LogsInstability, BloomSpikeOfTheChronicles) {
  // seeds/004 lines 202-213: the lm-loss spike of 2022-04-12 and the grad norms around it.
  const log_report r = read_one("bloom_spike.log");
  ASSERT_EQ(r.spike_count, 1);
  const log_spike& s = r.spikes.front();
  EXPECT_EQ(s.first_iteration, 31216);
  EXPECT_EQ(s.last_iteration, 31222);
  EXPECT_DOUBLE_EQ(s.peak_loss, 5.098124);
  EXPECT_EQ(s.peak_loss_iteration, 31219);
  EXPECT_DOUBLE_EQ(s.peak_grad_norm, 960.351);
  EXPECT_EQ(s.peak_grad_norm_iteration, 31219);
  EXPECT_EQ(s.recovered_iteration, 31250);
  EXPECT_NEAR(s.baseline_loss, (2.198845 + 2.220424) / 2, 1e-9);
  EXPECT_EQ(r.unknown_lines, 1);  // the seed's "[...]"
}

TEST(LogsInstability, FallingLossIsNoSpikeAndAnOpenSpikeIsReported) {
  std::vector<std::string> lines;
  for (int it = 1; it <= 100; ++it) lines.push_back(megatron_line(it, 1000, 11.0 * std::exp(-it / 30.0) + 2));
  EXPECT_EQ(feed(lines).spike_count, 0);
  lines.push_back(megatron_line(101, 1000, 9.0));
  const log_report r = feed(lines);
  ASSERT_EQ(r.spike_count, 1);
  EXPECT_EQ(r.spikes[0].recovered_iteration, -1);
}

TEST(LogsInstability, SkippedNanAndLossScale) {
  const log_report m = read_one("megatron_lm.log");
  ASSERT_EQ(m.loss_scale_drop_count, 1);
  EXPECT_EQ(m.loss_scale_drops[0].iteration, 50);
  EXPECT_DOUBLE_EQ(m.loss_scale_drops[0].before, 65536);
  EXPECT_DOUBLE_EQ(m.loss_scale_drops[0].after, 32768);
  std::string line = megatron_line(7, 1000, 5.0);
  line.replace(line.find("skipped iterations:   0"), 23, "skipped iterations:   2");
  line.replace(line.find("nan iterations:   0"), 19, "nan iterations:   1");
  const log_report r = feed({megatron_line(6, 1000, 5.0), line});
  EXPECT_EQ(r.skipped_total, 2);
  EXPECT_EQ(r.nan_total, 1);
  ASSERT_EQ(r.skipped.size(), 1u);
  EXPECT_EQ(r.skipped[0].iteration, 7);
  EXPECT_EQ(r.skipped[0].at.line, 2);
}

// ---- restarts and stalls (§8.4, §8.5) --------------------------------------------------------------------

TEST(LogsRestart, GapAndRedoneIterations) {
  // restart.log: 1-20 every 2 s, a crash, a restart 10 minutes later resuming at 16.
  const log_report r = read_one("restart.log");
  ASSERT_EQ(r.restart_count, 1);
  const log_restart& x = r.restarts.front();
  EXPECT_EQ(x.last_iteration_before, 20);
  EXPECT_EQ(x.first_iteration_after, 16);
  EXPECT_EQ(x.iterations_redone, 5);
  EXPECT_NEAR(x.gap_s, 600, 1e-6);
  EXPECT_NEAR(x.lost_s, 600 + 5 * 2, 1e-6);
  EXPECT_EQ(r.last_iteration, 30);
  EXPECT_NEAR(r.wall_iteration_s, 2.0, 1e-9);  // the gap is not in the wall-clock speed
}

TEST(LogsRestart, WithoutTimestampsOnlyTheRedoneWork) {
  const log_report r = feed({megatron_line(10, 2000, 5), megatron_line(11, 2000, 5), megatron_line(12, 2000, 5),
                             megatron_line(11, 2000, 5)});
  ASSERT_EQ(r.restart_count, 1);
  EXPECT_TRUE(std::isnan(r.restarts[0].gap_s));
  EXPECT_EQ(r.restarts[0].iterations_redone, 2);
  EXPECT_NEAR(r.restarts[0].lost_s, 4.0, 1e-9);
}

TEST(LogsRestart, DuplicateLinesOfSeveralRanksAreNotRestarts) {
  const log_report r = feed({megatron_line(1, 1000, 5), megatron_line(1, 1000, 5), megatron_line(2, 1000, 5)});
  EXPECT_EQ(r.records, 2);
  EXPECT_EQ(r.duplicate_records, 1);
  EXPECT_EQ(r.restart_count, 0);
}

TEST(LogsStall, SilenceAgainstTheRecentInterval) {
  const log_analyzer a = read_logs({log_path("restart.log")}, {}, nullptr);
  const double last = parse_log_time("2025-08-02 12:11:10");  // iteration 30
  EXPECT_DOUBLE_EQ(a.report().last_record_timestamp_s, last);
  const log_report running = a.report(last + 59, kNotLogged, "");
  EXPECT_TRUE(running.stall.checked);
  EXPECT_FALSE(running.stall.stalled);
  EXPECT_DOUBLE_EQ(running.stall.threshold_s, 60);  // max(60 s, 5 × 2 s)
  const log_report stalled = a.report(last + 61, kNotLogged, "");
  EXPECT_TRUE(stalled.stall.stalled);
  EXPECT_EQ(stalled.stall.last_progress_source, "log timestamp");
  log_options o;
  o.stall_min_s = 0;
  const log_stall s = check_stall(a.report(), o, last + 11, last, "t");
  EXPECT_DOUBLE_EQ(s.threshold_s, 10);  // 5 × 2 s
  EXPECT_TRUE(s.stalled);
}

TEST(LogsStall, AFinishedRunIsNotStalled) {
  const log_report r = feed({megatron_line(999, 1000, 5, 256, "2025-01-01 00:00:00"),
                             megatron_line(1000, 1000, 5, 256, "2025-01-01 00:00:01")});
  const log_stall s = check_stall(r, {}, parse_log_time("2025-06-01 00:00:00"), r.last_record_timestamp_s, "t");
  EXPECT_TRUE(s.finished);
  EXPECT_FALSE(s.stalled);
}

// ---- the CLI: stall exit status, file time, --follow, the plan ---------------------------------------------

TEST(LogsCli, OldLogWithoutTimestampsIsStalledByItsFileTime) {
  const std::string path = temp_file("old.log", testing::read_file(log_path("deepspeed.log")));
  const utimbuf old{1000000000, 1000000000};  // 2001
  ASSERT_EQ(::utime(path.c_str(), &old), 0);
  const auto r = testing::run({"logs", path, "--now", "now"});
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_NE(r.out.find("STALLED: no progress for"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("file modification time"), std::string::npos) << r.out;
  const auto fresh = testing::run({"logs", log_path("deepspeed.log")});  // no --now: no stall check
  EXPECT_EQ(fresh.status, 0) << fresh.err;
}

TEST(LogsCli, FollowExitsWhenTheJobStalls) {
  const std::string path = temp_file("follow.log", "steps: 10 loss: 7.0 iter time (s): 0.010 samples/sec: 10\n"
                                                   "steps: 20 loss: 7.0 iter time (s): 0.010 samples/sec: 10\n");
  // One line per 0.1 s expected; silence over 5 × 0.1 s is a stall.
  const auto r = testing::run({"logs", path, "--follow", "--poll-s", "0.05", "--stall-min-s", "0"});
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_NE(r.out.find("STALLED"), std::string::npos) << r.out;
  EXPECT_LT(r.seconds, 30);
}

TEST(LogsCli, FollowEndsWhenTheRunFinishesAndReadsStdin) {
  const auto r = testing::run_command(
      "printf 'steps: 10 / 20 loss: 7.0 iter time (s): 0.010 samples/sec: 10\\nsteps: 20 / 20 loss: 7.0 iter time (s): "
      "0.010 samples/sec: 10\\n' | " + testing::shell_quote(TRAINPLAN_BINARY),
      {"logs", "-", "--follow", "--json", "--poll-s", "0.05"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("\"finished\":true"), std::string::npos) << r.out;
}

TEST(LogsCli, AgainstThePlanOfAPreset) {
  const auto r = testing::run({"logs", log_path("bloom_slow_gpu.log"), "--preset", "bloom-176b-production", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  const auto& p = j["logs"]["against_plan"];
  EXPECT_EQ(p["verdict"], "slowed_down");
  EXPECT_NEAR(p["gap_vs_first_level"].get<double>(), 111.14 / 105.17 - 1, 0.003);
  EXPECT_EQ(j["context"]["preset"], "bloom-176b-production");
  EXPECT_EQ(j["schema_version"], 1);
}

TEST(LogsCli, BadInputNamesTheFileOrFlag) {
  const std::string empty = temp_file("empty.log", "");
  const std::string binary = temp_file("binary.log", std::string("\x7f" "ELF\0\0\0", 7));
  auto err = [](const std::vector<std::string>& args) {
    const auto r = testing::run(args);
    EXPECT_EQ(r.status, 2) << r.out;
    return r.err;
  };
  EXPECT_EQ(err({"logs", "/nonexistent/x.log"}),
            "trainplan: error: cannot open log '/nonexistent/x.log': No such file or directory\n");
  EXPECT_EQ(err({"logs", empty}), "trainplan: error: " + empty + ": the log is empty: no lines to read\n");
  EXPECT_EQ(err({"logs", binary}),
            "trainplan: error: " + binary + ": a binary file (a NUL byte at offset 4), not a text log\n");
  EXPECT_EQ(err({"logs", std::string(TRAINPLAN_TEST_DATA_DIR)}),
            "trainplan: error: '" + std::string(TRAINPLAN_TEST_DATA_DIR) + "' is a directory, not a log file (a file, a pipe or - for standard input)\n");
  EXPECT_EQ(err({"logs"}), "trainplan: error: logs: give a log file (or - for standard input): trainplan logs FILE… [--follow]\n");
  EXPECT_EQ(err({"logs", log_path("deepspeed.log"), "--step-threshold", "2"}),
            "trainplan: error: --step-threshold is a fraction below 1 (0.02 = 2%), got 2\n");
  EXPECT_EQ(err({"logs", log_path("deepspeed.log"), "--now", "yesterday"}),
            "trainplan: error: --now must be 'now' or a local time 'YYYY-MM-DD HH:MM:SS', got 'yesterday'\n");
  EXPECT_EQ(err({"logs", log_path("deepspeed.log"), "--format", "csv"}),
            "trainplan: error: --format csv: `logs` has no CSV form (search and validate have one); use --format text or json\n");
}

// ---- bad lines inside a log ------------------------------------------------------------------------------

TEST(LogsBadLines, MalformedTruncatedMixedOverlongAndBinaryLinesAreCountedWithTheirPlace) {
  std::string text = megatron_line(1, 1000, 5) + "\n";
  text += " iteration        2/    1000 | consumed samples:          512 | lm loss: abc |\n";
  text += " iteration        3/    1000 | consumed samples:          768 | elapsed time per itera\n";
  text += "steps: 10 loss: 7.0 iter time (s): 1.0 samples/sec: 10\n";
  text += std::string(kMaxLogLineBytes + 10, 'x') + "\n";
  text += std::string("a\0b", 3) + "\n";
  text += megatron_line(4, 1000, 5);  // no final newline: a job still writing
  const std::string path = temp_file("bad_lines.log", text);
  const log_report r = read_logs({path}, {}, nullptr).report();
  // The line cut short is read for its complete fields: its iteration and consumed samples.
  EXPECT_EQ(r.records, 3);
  EXPECT_EQ(r.cut_short_lines, 1);
  EXPECT_EQ(r.last_iteration, 4);
  EXPECT_EQ(r.malformed_lines, 1);
  EXPECT_EQ(r.other_format_records, 1);
  EXPECT_EQ(r.overlong_lines, 1);
  EXPECT_EQ(r.binary_lines, 1);
  ASSERT_EQ(r.warnings.size(), 5u);
  EXPECT_EQ(r.warnings[0], path + ":2: a malformed Megatron-LM progress line (field 'lm loss': 'abc' is not a number); skipped");
  EXPECT_EQ(r.warnings[1], path + ":3: a progress line cut short; the fields before the cut are read");
  EXPECT_EQ(r.warnings[2], path + ":4: a DeepSpeed (pipeline) progress line in a Megatron-LM log; lines of a second format "
                                  "are counted and skipped");
  EXPECT_EQ(r.warnings[3], path + ":5: a line longer than 1 MiB; skipped");
  EXPECT_EQ(r.warnings[4], path + ":6: a line holding NUL bytes (binary data); skipped");
}

TEST(LogsBadLines, NoProgressLinesIsNoError) {
  const std::string path = temp_file("startup.log", "> initializing torch distributed ...\nbuilding GPT model ...\n");
  const log_report r = read_logs({path}, {}, nullptr).report();
  EXPECT_EQ(r.records, 0);
  EXPECT_FALSE(r.has_format);
  EXPECT_EQ(r.lines, 2);
}

TEST(LogsPlan, Verdicts) {
  log_report r;
  r.recent_iteration_s = 104;
  r.first_level_s = 104;
  time_report p;
  p.iteration_s = 100;
  p.tflops_per_gpu = 150;
  EXPECT_EQ(compare_with_plan(r, p, 2048).verdict, log_verdict::on_plan);
  r.recent_iteration_s = 111;
  log_plan_comparison c = compare_with_plan(r, p, 2048);
  EXPECT_EQ(c.verdict, log_verdict::slowed_down);
  EXPECT_NEAR(c.gap_vs_plan, 0.11, 1e-12);
  EXPECT_NEAR(c.observed_tflops_our_count, 150 * 100 / 111.0, 1e-9);
  r.first_level_s = 111;
  EXPECT_EQ(compare_with_plan(r, p, 2048).verdict, log_verdict::slower_than_plan);
  r.recent_iteration_s = r.first_level_s = 90;
  EXPECT_EQ(compare_with_plan(r, p, 2048).verdict, log_verdict::faster_than_plan);
  r.recent_iteration_s = kNotLogged;
  EXPECT_EQ(compare_with_plan(r, p, 2048).verdict, log_verdict::not_enough_data);
}

}  // namespace
}  // namespace trainplan
