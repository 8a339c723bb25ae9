// The training plan (docs/formulas.md §7.5-§7.8) against the seeds' own estimates.
#include <gtest/gtest.h>

#include <cmath>

#include "test_support.h"
#include "trainplan/cli/cli.h"
#include "trainplan/core/base/error.h"
#include "trainplan/core/model/model.h"
#include "trainplan/core/plan/plan.h"

namespace trainplan {
namespace {

plan_report plan_of(const std::vector<std::string>& args) {
  plan_request req = parse_plan_request(args);
  return make_plan(req.inputs);
}

// seeds/000 "Train time estimation": 8·300e9·200e9 / (350 · 150e12) s = 105.82 days, and "Allocated hours
// sufficiency check": 8·300e9·200e9 / 150e12 / 3600 = 888,888.89 compute hours, within a 3M allocation.
TEST(Plan, ReproducesSeed000TrainTimeEstimate) {
  const plan_report r = plan_of({"--train-tokens", "300e9", "--model-params", "200e9", "--num-gpus", "350",
                                 "--tflops-per-gpu", "150", "--gpu-mtbf-hours", "0", "--allocation-gpu-hours", "3e6"});
  EXPECT_NEAR(r.train_s / 86400, 105.82, 0.005);
  EXPECT_NEAR(r.train_days, 105.82, 0.005);  // no failures: wall clock = compute
  EXPECT_NEAR(r.compute_gpu_hours, 888888.89, 0.5);
  EXPECT_TRUE(r.allocation_sufficient);
  EXPECT_NEAR(r.allocation_margin, 3e6 / 888888.89, 1e-3);
}

// seeds/004: "(115311-12695)*105/(3600*24)=124.7", with the log line's 105.22 s: 124.97, "125 days more".
TEST(Plan, ReproducesSeed004RemainingDays) {
  const plan_report r =
      plan_of({"--iteration-s", "105.22", "--train-iters", "115311", "--start-iteration", "12695", "--gbs", "2048",
               "--num-gpus", "384", "--model", "bloom-176b", "--gpu-mtbf-hours", "0"});
  EXPECT_EQ(r.total_iterations, 115311 - 12695);
  EXPECT_NEAR(r.train_days, (115311 - 12695) * 105.22 / 86400, 1e-9);
  EXPECT_NEAR(r.train_days, 125, 0.5);
}

// BLOOM's checkpoint: 176,247,271,424 parameters × 14 bytes = 2.467e12 B = 2.244 TiB. The chronicles'
// "2.3TB" matches in TiB (−2.4%); read as 1e12 bytes it would be 7.3% over.
TEST(Plan, BloomCheckpointSizeWithin5PercentOf2_3TiB) {
  const double params = static_cast<double>(count_parameters(find_model("bloom-176b").spec).total);
  EXPECT_EQ(params, 176247271424.0);
  const double bytes = checkpoint_bytes(params);
  const double tib = bytes / std::pow(2.0, 40);
  EXPECT_NEAR(tib / 2.3 - 1, 0, 0.05);
  EXPECT_GT(std::fabs(bytes / 2.3e12 - 1), 0.05);  // decimal TB would not match
}

// Young/Daly on seeds/004's numbers: 40 s saves, about one failure a week over 384 GPUs → an interval of
// sqrt(2·40·604800) = 6956 s ≈ 66 iterations of 105 s; BLOOM chose 100 iterations (~3 h), the same order.
TEST(Plan, YoungDalyIntervalOnBloomFailureRate) {
  EXPECT_NEAR(young_daly_interval_s(40, 7 * 86400), std::sqrt(2.0 * 40 * 604800), 1e-9);
  const plan_report r = plan_of({"--iteration-s", "105.22", "--train-iters", "115311", "--start-iteration", "12695",
                                 "--gbs", "2048", "--num-gpus", "384", "--model", "bloom-176b",
                                 "--checkpoint-write-gb-per-s", "61.7", "--eval-interval", "1000",
                                 "--eval-cost-iterations", "7"});
  EXPECT_NEAR(r.checkpoint_save_s, 40, 0.1);
  EXPECT_NEAR(r.job_mtbf_s, 7 * 86400, 1);  // default per-GPU MTBF: 384 weeks
  EXPECT_NEAR(r.checkpoint_interval_s, 6956, 5);
  EXPECT_GE(r.checkpoint_interval_iters, 60);
  EXPECT_LE(r.checkpoint_interval_iters, 100);
  // Evaluation: 102 evaluations × 7 iterations = 0.7% of training (seeds/004).
  EXPECT_NEAR(r.eval_s / r.train_s, 0.007, 0.0005);
  EXPECT_GT(r.expected_lost_hours, 0);
  EXPECT_GT(r.goodput, 0.95);
  EXPECT_LT(r.goodput, 1.0);
  EXPECT_NEAR(r.wall_s, r.train_s + r.checkpoint_overhead_s + r.eval_s + r.expected_lost_hours * 3600, 1e-6);
}

// Megatron's ramp-up: BLOOM's --rampup-batch-size 192 32 9765625 with GBS 2048 has 58 increments of
// 168,373 samples each; every phase's batch is a multiple of MBS·DP = 16, and the job's time model gives
// shorter iterations for smaller batches.
TEST(Plan, RampupPhasesFromTheJob) {
  std::vector<std::string> args = testing::bloom_production_args();
  for (const char* a : {"--train-tokens", "350e9", "--rampup-batch-size", "192", "32", "9765625"}) args.push_back(a);
  const plan_request req = parse_plan_request(args);
  ASSERT_TRUE(req.has_job);
  const plan_report r = make_plan(req.inputs);
  ASSERT_EQ(r.phases.size(), 59u);
  EXPECT_EQ(r.phases.front().global_batch_size, 192);
  EXPECT_EQ(r.phases[57].global_batch_size, 2048 - 32);
  EXPECT_EQ(r.phases.back().global_batch_size, 2048);
  EXPECT_LT(r.phases.front().iteration_s, r.phases.back().iteration_s);
  std::int64_t rampup_samples = 0;
  for (std::size_t i = 0; i + 1 < r.phases.size(); ++i) rampup_samples += r.phases[i].samples;
  EXPECT_NEAR(static_cast<double>(rampup_samples), 9765625, 2048);
  EXPECT_GE(r.total_tokens, 350e9);
  EXPECT_LT(r.total_tokens, 350e9 + 2048.0 * 2048 * 60);
  EXPECT_NEAR(r.checkpoint_bytes, 176247271424.0 * 14, 1);
  EXPECT_GT(r.tflops_per_gpu, 100);
  EXPECT_NEAR(r.gpu_hours, r.wall_s * 384 / 3600, 1e-6);
}

// Megatron's --step-batch-size-schedule (num_microbatches_calculator.py): thresholds in tokens, converted
// to samples as tokens // seq_length, the batch switched at iteration boundaries. Hand-worked: seq 1000,
// "0:10 50.5K:20" switches at 50 samples: 5 iterations of 10, then 20s. 150 samples: 5 + 5 iterations.
// --train-iters 8 with 3 done: 2 iterations of 10 left, then 3 of 20.
TEST(Plan, StepBatchSizeScheduleByTokens) {
  const std::vector<std::string> given = {"--iteration-s", "2", "--gbs", "20", "--seq-length", "1000", "--num-gpus",
                                          "8", "--model-params", "1e9", "--step-batch-size-schedule", "0:10 50.5K:20"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = given;
    a.insert(a.end(), extra.begin(), extra.end());
    return plan_of(a);
  };
  const plan_report by_samples = with({"--train-samples", "150"});
  ASSERT_EQ(by_samples.phases.size(), 2u);
  EXPECT_EQ(by_samples.phases[0].global_batch_size, 10);
  EXPECT_EQ(by_samples.phases[0].iterations, 5);
  EXPECT_EQ(by_samples.phases[1].global_batch_size, 20);
  EXPECT_EQ(by_samples.phases[1].iterations, 5);
  EXPECT_DOUBLE_EQ(by_samples.phases[0].iteration_s, 1.0);  // given time ∝ batch: 2 s at 20
  EXPECT_DOUBLE_EQ(by_samples.total_samples, 150);
  const plan_report by_iterations = with({"--train-iters", "8", "--start-iteration", "3"});
  ASSERT_EQ(by_iterations.phases.size(), 2u);
  EXPECT_EQ(by_iterations.phases[0].iterations, 2);
  EXPECT_EQ(by_iterations.phases[1].iterations, 3);
  EXPECT_EQ(by_iterations.total_iterations, 5);
  // Megatron's rules, named by the flag.
  auto message = [&](std::vector<std::string> extra) {
    try {
      with(extra);
    } catch (const input_error& e) {
      return cli_message(e);
    }
    return std::string("no error");
  };
  EXPECT_EQ(message({"--train-samples", "150", "--step-batch-size-schedule", "1K:10 2K:20"}),
            "--step-batch-size-schedule: the first step must start at 0, as Megatron requires");
  EXPECT_EQ(message({"--train-samples", "150", "--rampup-batch-size", "10", "10", "100"}),
            "--step-batch-size-schedule and --rampup-batch-size: give one batch-size schedule");
  EXPECT_EQ(message({"--train-samples", "150", "--step-batch-size-schedule", "0:10 5x:20"}),
            "--step-batch-size-schedule threshold expects a number, got '5x'");
}

// GPT-3 175B as Megatron-LM's examples/gpt3/train_gpt3_175b_distributed.sh trains it: the schedule on the
// launch line is read by `plan` (it was ignored: the plan ran every iteration at 1,536).
TEST(Plan, TheLaunchLinesScheduleIsRead) {
  const std::vector<std::string> line = {
      "--cluster", "dgx-a100", "--", "torchrun", "--nproc_per_node", "8", "--nnodes", "16", "pretrain_gpt.py",
      "--num-layers", "96", "--hidden-size", "12288", "--num-attention-heads", "96", "--seq-length", "2048",
      "--max-position-embeddings", "2048", "--micro-batch-size", "1", "--global-batch-size", "1536",
      "--step-batch-size-schedule", "0:16 2.4B:320 4.8B:624 7.2B:928 9.6B:1232 12B:1536", "--train-iters", "500000",
      "--fp16", "--tensor-model-parallel-size", "8", "--pipeline-model-parallel-size", "16", "--vocab-file",
      "/nonexistent/gpt2-vocab.json", "--merge-file", "/nonexistent/gpt2-merges.txt"};
  const plan_report r = plan_of(line);
  ASSERT_EQ(r.phases.size(), 6u);
  EXPECT_EQ(r.phases[0].global_batch_size, 16);
  // 2.4e9 tokens // 2048 = 1,171,875 samples at 16 per iteration: ⌈73,242.19⌉ iterations.
  EXPECT_EQ(r.phases[0].iterations, 73243);
  EXPECT_EQ(r.total_iterations, 500000);
  EXPECT_EQ(r.phases.back().global_batch_size, 1536);
}

TEST(Plan, BadInputNamesTheFlag) {
  auto message = [](const std::vector<std::string>& args) {
    try {
      plan_of(args);
    } catch (const input_error& e) {
      return cli_message(e);  // as the command line names the fields
    }
    return std::string("no error");
  };
  EXPECT_NE(message({"--tflops-per-gpu", "150", "--num-gpus", "8", "--model-params", "1e9"}).find("--train-tokens"),
            std::string::npos);
  EXPECT_NE(message({"--train-tokens", "1e9", "--tflops-per-gpu", "150", "--num-gpus", "8"}).find("--model-params"),
            std::string::npos);
  EXPECT_NE(message({"--train-iters", "10", "--iteration-s", "1", "--gbs", "64", "--seq-length", "2048",
                     "--num-gpus", "8", "--model-params", "1e9", "--start-iteration", "20"})
                .find("--start-iteration"),
            std::string::npos);
  EXPECT_NE(message({"--train-tokens", "1e9", "--rampup-batch-size", "100", "30", "1000", "--iteration-s", "1",
                     "--gbs", "512", "--seq-length", "2048", "--num-gpus", "8", "--model-params", "1e9"})
                .find("INCR"),
            std::string::npos);
  EXPECT_NE(message({"--train-tokens", "-5"}).find("--train-tokens must be above 0 and at most 1e+18, got -5"), std::string::npos);
  EXPECT_NE(message({"--rampup-batch-size", "1", "2"}).find("3 values"), std::string::npos);
}

// Issue 15: 1e26 tokens printed -9223372036854775808 iterations (a double → int64 overflow) and 1e25 a
// token total off by 10^3; a budget past 2^53 samples is refused, naming the flag that gave it.
TEST(Plan, BudgetsPastExactCountsAreRefused) {
  const std::vector<std::string> speed = {"--iteration-s", "1", "--gbs", "256", "--seq-length", "8192", "--num-gpus", "16",
                                          "--model-params", "8e9"};
  auto message = [&](std::vector<std::string> args) {
    args.insert(args.end(), speed.begin(), speed.end());
    try {
      plan_of(args);
    } catch (const input_error& e) {
      return cli_message(e);
    }
    return std::string("no error");
  };
  // Tokens stop at 1e18 (§7.9), below any count past 2^53 samples; samples and iterations reach it.
  EXPECT_EQ(message({"--train-tokens", "1e26"}), "--train-tokens must be above 0 and at most 1e+18, got 1e26");
  EXPECT_EQ(message({"--train-samples", "1e17"}).substr(0, 22), "--train-samples gives ");
  EXPECT_EQ(message({"--train-iters", "1e15"}).substr(0, 20), "--train-iters gives ");
  // At the edge it still counts exactly: 2^53 / 256 iterations of 256 samples.
  const plan_report r = plan_of({"--train-samples", "9007199254740992", "--iteration-s", "1", "--gbs", "256",
                                 "--seq-length", "8192", "--num-gpus", "16", "--model-params", "8e9"});
  EXPECT_EQ(r.total_iterations, 35184372088832);
  EXPECT_EQ(r.total_samples, 9007199254740992.0);
}

}  // namespace
}  // namespace trainplan
