// Issue 31's findings, each kept with its smallest reproduction: what crashed, hung, grew without bound,
// printed NaN or infinity with exit 0, lost its output, or named an internal field instead of the flag.
// Each runs the `trainplan` executable as a user runs it, under a time limit.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "run_process.h"

namespace {

using ::testing::HasSubstr;
using ::testing::Not;

/// `trainplan ARGS`, bounded by `timeout 30` (a hang is exit 124).
trainplan::testing::run_result run(const std::vector<std::string>& args) {
  return trainplan::testing::run_command("timeout 30 " + trainplan::testing::shell_quote(TRAINPLAN_BINARY), args);
}

std::string temp(const std::string& name) { return ::testing::TempDir() + "reliability_" + name; }

std::string written(const std::string& name, const std::string& text) {
  const std::string path = temp(name);
  std::ofstream(path) << text;
  return path;
}

TEST(Reliability, YamlAliasesAreBounded) {
  // A self-referencing alias recursed without end (SIGSEGV); ten levels of ten aliases grew past 4 GB.
  const auto cycle = run({"model", "--model", written("cycle.yaml", "&a [*a]\n")});
  EXPECT_EQ(cycle.status, 2);
  EXPECT_THAT(cycle.err, HasSubstr("the alias *a names no anchored node before it"));
  std::string deep;
  for (int i = 0; i < 70; ++i) deep += "[";
  const auto nested = run({"model", "--model", written("deep.yaml", deep + "\n")});
  EXPECT_EQ(nested.status, 2);
  EXPECT_THAT(nested.err, HasSubstr("nested deeper than 64 levels"));
  std::string laughs = "a0: &a0 [x,x,x,x,x,x,x,x,x,x]\n";
  for (int i = 1; i < 10; ++i) {
    const std::string level = std::to_string(i), below = std::to_string(i - 1);
    laughs.append("a").append(level).append(": &a").append(level).append(" [");
    for (int k = 0; k < 10; ++k) laughs.append(k ? ",*a" : "*a").append(below);
    laughs.append("]\n");
  }
  const auto bomb = run({"model", "--model", written("laughs.yaml", laughs)});
  EXPECT_EQ(bomb.status, 2);
  EXPECT_THAT(bomb.err, HasSubstr("aliases expand to more than 20000 nodes"));
}

TEST(Reliability, SpecialFilesAreRefusedAtOnce) {
  // /dev/zero read until bad_alloc (exit 70 after 2-4 GB); a FIFO without a writer hung every reader.
  const std::string zero = temp("zero.yaml");
  std::filesystem::remove(zero);
  std::filesystem::create_symlink("/dev/zero", zero);
  const std::string fifo = temp("fifo.yaml");
  std::filesystem::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string& path : {zero, fifo}) {
    for (const char* flag : {"--model", "--cluster", "--calibration"}) {
      std::vector<std::string> args = {"memory", flag, path, "--num-gpus", "8"};
      if (std::string(flag) != "--model") args.insert(args.begin() + 1, {"--model", "llama3-8b"});
      const auto r = run(args);
      EXPECT_EQ(r.status, 2) << flag << " " << path << ": " << r.err;
      EXPECT_THAT(r.err, HasSubstr("not a file: give a regular file")) << flag << " " << path;
    }
    const auto csv = run({"validate", "--csv", path});
    EXPECT_EQ(csv.status, 2) << csv.err;
  }
  const auto logs = run({"logs", fifo});  // a FIFO is a log source, but one without a writer is refused
  EXPECT_EQ(logs.status, 2);
  EXPECT_THAT(logs.err, HasSubstr("(a FIFO without a writer?)"));
}

TEST(Reliability, ShapesOfAnAbsurdTargetEnd) {
  // 1e30 never finished; from ~1e56 an int64 overflowed in the loop.
  const auto r = run({"shapes", "--target-params", "1e30", "--model", "llama3-8b", "--gbs", "256"});
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("--target-params must be at most 1e+15 parameters"));
}

TEST(Reliability, NoFigureIsPrintedNonFinite) {
  // iteration inf s, -nan %, -nan hours, a 0 s checkpoint interval and 300-digit times, all with exit 0.
  const std::vector<std::vector<std::string>> cases = {
      {"time", "--model", "llama3-8b", "--num-gpus", "16", "--gpu-peak-tflops", "1e-307"},
      {"time", "--model", "llama3-8b", "--num-gpus", "16", "--inter-node-latency-us", "1e300"},
      {"plan", "--preset", "bloom-176b-production", "--train-tokens", "350e9", "--checkpoint-bytes-per-param", "1e300"},
      {"plan", "--preset", "bloom-176b-production", "--train-tokens", "350e9", "--gpu-mtbf-hours", "1.7e308"},
      {"plan", "--tflops-per-gpu", "150", "--model-params", "200e9", "--num-gpus", "350", "--train-tokens", "1e300"},
      {"time", "--model", "llama3-8b", "--num-gpus", "16", "--gpu-peak-tflops", "1e300"},
      {"time", "--model", "llama3-8b", "--num-gpus", "16", "--gpu-memory-gib", "1e-9"},
  };
  for (const auto& args : cases) {
    const auto r = run(args);
    EXPECT_EQ(r.status, 2) << r.out;
    EXPECT_THAT(r.err, HasSubstr("trainplan: error: --"));  // named by its flag, not an internal field
    EXPECT_THAT(r.err, Not(HasSubstr("gpu.")));
  }
}

TEST(Reliability, ASlowerGpuIsNeverFaster) {
  auto iteration = [](const std::string& tflops) {
    std::vector<std::string> a = {"time", "--model", "gemma2-27b", "--cluster", "jean-zay-a100", "--num-nodes", "2",
                                  "--tp", "8", "--cp", "2", "--gbs", "16", "--framework", "fsdp", "--zero-stage", "2",
                                  "--json"};
    if (!tflops.empty()) a.insert(a.end(), {"--gpu-peak-tflops", tflops});
    const auto r = run(a);
    EXPECT_EQ(r.status, 0) << r.err;
    const std::size_t at = r.out.find("\"iteration_s\": ");
    return std::stod(r.out.substr(at + 15));
  };
  EXPECT_GE(iteration("156"), iteration(""));  // 40.06 s at 312 TFLOP/s gave 39.54 s at 156
  EXPECT_GE(iteration("100"), iteration("156"));
}

TEST(Reliability, OutputsGoOnlyWhereTheyCan) {
  // --html replaced /dev/null, a FIFO or a symbolic link with a regular file; '' printed text with exit 0;
  // a full disk lost the output with exit 0.
  const std::string link = temp("page_link.html");
  std::filesystem::remove(link);
  std::filesystem::create_symlink(temp("elsewhere.html"), link);
  for (const std::string& target : {std::string("/dev/null"), link, std::string()}) {
    const auto r = run({"memory", "--preset", "bloom-176b-production", "--html", target});
    EXPECT_EQ(r.status, 2) << target;
  }
  EXPECT_TRUE(std::filesystem::is_character_file("/dev/null"));
  EXPECT_TRUE(std::filesystem::is_symlink(link));
  const auto full =
      trainplan::testing::run_command("timeout 30 " + trainplan::testing::shell_quote(TRAINPLAN_BINARY) + " models >/dev/full", {});
  EXPECT_EQ(full.status, 74);
  EXPECT_THAT(full.err, HasSubstr("cannot write the output"));
}

TEST(Reliability, QuietAcceptancesAreRefused) {
  EXPECT_EQ(run({"time", "--model", "llama3-8b", "--num-gpus", "8", "--fp16", "--fp32"}).status, 2);
  const auto date = run({"logs", std::string(TRAINPLAN_TEST_DATA_DIR) + "/logs/bloom_slow_gpu.log", "--now",
                         "2025-02-30 10:00:00"});
  EXPECT_EQ(date.status, 2);
  const auto before = run({"logs", std::string(TRAINPLAN_TEST_DATA_DIR) + "/logs/bloom_slow_gpu.log", "--now",
                           "2000-01-01 00:00:00"});
  EXPECT_EQ(before.status, 2);
  EXPECT_THAT(before.err, HasSubstr("before the log's last progress"));
}

TEST(Reliability, MemoryRefusesWhatTimeAndCommCannotPlace) {
  // memory accepted GB200 NVL72 layouts whose CP groups time and comm refuse.
  const std::vector<std::string> job = {"--model", "llama3-8b", "--cluster", "gb200-nvl72", "--num-gpus", "72",
                                        "--tp", "4", "--cp", "3", "--seq-length", "8190"};
  std::vector<int> statuses;
  for (const char* command : {"memory", "time", "comm"}) {
    std::vector<std::string> a = {command};
    a.insert(a.end(), job.begin(), job.end());
    statuses.push_back(run(a).status);
  }
  EXPECT_EQ(statuses[0], statuses[1]);
  EXPECT_EQ(statuses[1], statuses[2]);
}

TEST(Reliability, AGroupOverThousandsOfNodesIsNamedShortlyAndQuickly) {
  // Fuzzing (job_flags, 2026-11-25): 64,252 GPUs put a data-parallel group over 8,032 nodes unevenly; the
  // placement check searched its node list once per member (quadratic: 4 s under ASan, 14 s for a million
  // GPUs) and the message listed all 64,252 devices (540 KB).
  const auto r = run({"time", "--model", "mixtral-8x7b", "--num-gpus", "64252"});
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("the dp group [n0_g0 n0_g1 n0_g2 n0_g3 n0_g4 n0_g5 n0_g6 n0_g7 … n8031_g3] of 64252 GPUs "
                               "cannot be placed"));
  EXPECT_LT(r.err.size(), 1000u);
  const auto million = run({"time", "--model", "mixtral-8x7b", "--num-gpus", "1000004"});
  EXPECT_EQ(million.status, 2);
  EXPECT_LT(million.seconds, 5);
}

TEST(Reliability, AGroupSplitOverNvl72RacksSaysHowGb200JobsRun) {
  // Issue 29: 128 GPUs on NVL72 racks spread a data-parallel group unevenly over nodes of 72; the message
  // says what such jobs do (64 GPUs a rack) and the flag that says it.
  const auto r = run({"time", "--model", "llama3-70b", "--cluster", "gb200-nvl72", "--num-gpus", "128", "--tp", "4",
                      "--pp", "4", "--gbs", "512"});
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("or --gpus-per-node 64 to use 64 of each node's 72 GPUs (as GB200 NVL72 jobs of 128 "
                               "GPUs run 64 a rack)"));
  const auto fixed = run({"time", "--model", "llama3-70b", "--cluster", "gb200-nvl72", "--num-gpus", "128",
                          "--gpus-per-node", "64", "--tp", "4", "--pp", "4", "--gbs", "512"});
  EXPECT_EQ(fixed.status, 0) << fixed.err;
}

TEST(Reliability, AnIterationTimeNoJobHasIsReadAsAbsent) {
  // The campaign (tools/adversarial.py, seed 31, run 13,207) put 1e308 into a DeepSpeed line's
  // "iter time (s)": the log's report printed "+inf% over the level of 1.23 s" with exit 0.
  std::string text;
  for (int step = 10; step <= 60; step += 10) {
    text += "steps: " + std::to_string(step) + " loss: 7.2600 iter time (s): " + (step == 40 ? "1.2371e308" : "1.232") +
            " samples/sec: 415.638\n";
  }
  const auto r = run({"logs", written("huge_iteration.log", text), "--preset", "bloom-176b-production"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.out, Not(::testing::ContainsRegex("[^A-Za-z_](nan|inf)[^A-Za-z_]")));  // as the campaign reads it
  EXPECT_THAT(r.out, HasSubstr(":4: an iteration time of 1.2371e+308 s is not in (0 s, one week]; the line is read without it"));
}

}  // namespace
