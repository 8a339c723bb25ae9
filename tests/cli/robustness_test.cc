// Issue 15's findings, each reproduced: bounded work for absurd sizes, and a message naming the flag or
// the file's line for every bad input that used to crash, hang, wrap or print a raw library message.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "args_test_support.h"
#include "run_process.h"
#include "trainplan/core/hardware/calibration.h"
#include "trainplan/cli/cli.h"
#include "trainplan/core/search/search.h"
#include "trainplan/core/estimate/time.h"
#include "trainplan/cli/validate.h"

namespace trainplan {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using namespace args_testing;  // NOLINT(google-build-using-namespace): the shared helpers

/// The message of the input_error `f` throws, or "no error".
template <class F>
std::string what_of(F f) {
  try {
    f();
  } catch (const input_error& e) {
    return e.what();
  }
  return "no error";
}

std::string search_error(const args_t& args) {
  try {
    const search_request req = parse_search_request(args);
    run_search(req.base.job, req.space);
  } catch (const input_error& e) {
    return cli_message(e);
  }
  return "no error";
}

// ---- bounded work -----------------------------------------------------------------------------------

TEST(Robustness, ScheduleOfMillionsOfMicroBatchesDrawsAShortenedTimeline) {
  // 2^31 micro-batches grew past 6 GB; 5·10^8 now draw 1024 with the full schedule's totals.
  const parsed_job pj = parse({"--model", "llama3-8b", "--cluster", "dgx-h100", "--num-gpus", "8", "--pp", "4",
                               "--vpp", "2", "--gbs", "1e9"});
  const time_report r = schedule_timeline(pj.job, schedule_kind::interleaved);
  EXPECT_EQ(r.timeline_microbatches, kMaxTimelineMicrobatches);
  EXPECT_EQ(r.pipeline.events.size(), static_cast<std::size_t>(4 * 2 * 2 * kMaxTimelineMicrobatches));
  EXPECT_DOUBLE_EQ(r.iteration_s, estimate_time(pj.job, schedule_kind::interleaved, false).iteration_s);
  EXPECT_LT(r.timeline_s, r.pipeline.pipeline_s / 1e4);
  // A short schedule keeps every event.
  const parsed_job small = parse({"--model", "llama3-8b", "--cluster", "dgx-h100", "--num-gpus", "8", "--pp", "4",
                                  "--gbs", "16"});
  const time_report s = schedule_timeline(small.job, schedule_kind::one_f_one_b);
  EXPECT_EQ(s.timeline_microbatches, 8);
  EXPECT_DOUBLE_EQ(s.timeline_s, s.pipeline.pipeline_s);
}

TEST(Robustness, GlobalBatchIsAtMost2To30) {
  EXPECT_EQ(error_of({"--model", "llama3-8b", "--num-gpus", "2", "--gbs", "2147483648"}),
            "--global-batch-size must be at most 1073741824 samples (2^30), got 2147483648");
  EXPECT_EQ(search_error({"--model", "llama3-8b", "--num-nodes", "1", "--gbs", "2147483648"}),
            "--global-batch-size must be at most 1073741824 samples (2^30), got 2147483648");
}

TEST(Robustness, SearchOfAHugeBatchFinishes) {
  // Every micro-batch divisor was found by trial up to GBS/DP (over 30 s for 10^9); now O(√n).
  const search_request req = parse_search_request(
      {"--model", "llama3-8b", "--cluster", "dgx-h100", "--num-nodes", "4", "--gbs", "1e9", "--threads", "1"});
  const search_result r = run_search(req.base.job, req.space);
  ASSERT_FALSE(r.candidates.empty());
  EXPECT_EQ(1000000000 % (r.candidates.front().mbs * r.candidates.front().dp), 0);
}

TEST(Robustness, SearchNodeCountsAreBounded) {
  // --num-nodes 4294967297 allocated every node count (past 16 GB) before answering.
  EXPECT_EQ(search_error({"--model", "llama3-8b", "--cluster", "dgx-h100", "--num-nodes", "4294967297", "--gbs", "256"}),
            "--num-nodes 4294967297: a search tries every node count from 1, at most 1024; give the counts to try with "
            "--nodes (e.g. 1024,2048,4096)");
  EXPECT_THAT(search_error({"--model", "llama3-8b", "--cluster", "dgx-h100", "--max-gpus", "1e9", "--gbs", "256"}),
              StartsWith("--max-gpus 125000000: a search tries every node count from 1, at most 1024"));
  EXPECT_EQ(search_error({"--model", "llama3-8b", "--cluster", "dgx-h100", "--nodes", "3000000", "--gbs", "256"}),
            "3000000 nodes of 8 GPUs are more than 1048576 GPUs, more than any cluster");
  EXPECT_EQ(search_error({"--model", "llama3-8b", "--cluster", "dgx-h100", "--nodes", "1-2000", "--gbs", "256"}),
            "--nodes lists 2000 node counts, more than the 1024 a search tries");
}

// ---- messages that name the flag or the line ---------------------------------------------------------

TEST(Robustness, UsableMemoryAboveTheGpusIsNamed) {
  const std::string expected =
      "--gpu-memory-gib 100 is more than the 80 GiB of the GPU (h100-sxm5-80gb): it can only lower memory; give a bigger "
      "GPU with --gpu NAME (the catalog's NVIDIA GPUs of that size: h200-sxm-141gb (139.9 GiB usable), b200-sxm-180gb "
      "(178.5 GiB usable), gb200 (172.7 GiB usable), b300-sxm-288gb (286.0 GiB usable), gb300 (286.0 GiB usable)), or "
      "a cluster file with gpu.memory_bytes";
  EXPECT_EQ(error_of({"--model", "llama3-8b", "--cluster", "dgx-h100", "--num-nodes", "1", "--gpu-memory-gib", "100"}),
            expected);
  EXPECT_EQ(search_error({"--model", "llama3-8b", "--cluster", "dgx-h100", "--num-nodes", "1", "--gbs", "64",
                          "--gpu-memory-gib", "100"}),
            expected);
  // A card named by its HBM: asking an 80 GB H100 for 96 GiB names the 96 GB H100s, whose usable memory is less.
  EXPECT_THAT(error_of({"--model", "llama3-8b", "--cluster", "dgx-h100", "--num-nodes", "1", "--gpu-memory-gib", "96"}),
              HasSubstr("(the catalog's NVIDIA GPUs of that size: h100-sxm5-96gb-hbm2e (95.1 GiB usable), h20-96gb "
                        "(95.1 GiB usable), h200-sxm-141gb"));
}

TEST(Robustness, LaunchLineWorldSizeZeroIsRefused) {
  // torchrun --nproc_per_node 0 was read as "not given": 1 node × 8 GPUs.
  const args_t job = {"--model", "llama2-7b", "--cluster", "dgx-a100", "--"};
  EXPECT_EQ(error_of(concat(job, {"torchrun", "--nproc_per_node", "0", "pretrain_gpt.py"})),
            "launch line --nproc-per-node must be a positive integer, got 0");
  EXPECT_EQ(error_of(concat(job, {"torchrun", "--nproc_per_node", "8", "--nnodes", "0", "pretrain_gpt.py"})),
            "launch line --nnodes must be a positive integer, got 0");
  EXPECT_EQ(error_of(concat(job, {"torchrun", "--nproc_per_node", "8", "--nnodes", "1:0", "pretrain_gpt.py"})),
            "launch line --nnodes must be a positive integer, got 0");
  EXPECT_EQ(error_of(concat(job, {"torchrun", "--nproc_per_node", "30000", "--nnodes", "30000", "pretrain_gpt.py"})),
            "launch line: --nproc-per-node × --nnodes = 900000000 GPUs, more than 1048576");
}

TEST(Robustness, NumbersNoDoubleHoldsGiveTheFileLine) {
  const std::string model = write_temp("big.json", "{\n  \"base\": \"llama2-7b\",\n  \"hidden_size\": 1e310\n}\n");
  EXPECT_EQ(error_of({"--model", model}), model + ":3: a number is out of range: 1e310 (--model)");
  const std::string hf = write_temp("hf_config.json", "{\"model_type\": \"llama\",\n\"hidden_size\": -1e999}\n");
  EXPECT_EQ(error_of({"--model", hf}), hf + ":2: a number is out of range: -1e999 (--model)");
  EXPECT_EQ(what_of([] { parse_calibration("{\"gpu\": \"h100\",\n \"x\": 2e400}", "cal.json"); }),
            "cal.json:2: a number is out of range: 2e400");
}

TEST(Robustness, InvalidUtf8GivesTheFileLine) {
  EXPECT_EQ(error_of({"--model", write_temp("utf.yaml", "base: llama2-7b\nname: \"\xff\xfe\"\n")}),
            ::testing::TempDir() + "args_test_utf.yaml:2: not UTF-8 text (byte 0xFF) (--model)");
  EXPECT_EQ(error_of({"--model", write_temp("utf.json", "{\"base\": \"llama2-7b\",\n\"name\": \"\xc3\x28\"}")}),
            ::testing::TempDir() + "args_test_utf.json:2: not UTF-8 text (byte 0xC3) (--model)");
  EXPECT_EQ(error_of({"--model", "llama2-7b", "--cluster", write_temp("c.yaml", "name: x\n\xed\xa0\x80: 1\n")}),
            ::testing::TempDir() + "args_test_c.yaml:2: not UTF-8 text (byte 0xED) (--cluster)");
  EXPECT_EQ(what_of([] { read_measurements("a,b\n\xf8,1\n", "mine.csv"); }), "mine.csv:2: not UTF-8 text (byte 0xF8)");
  // Valid multi-byte text is untouched.
  EXPECT_NO_THROW(parse({"--model", write_temp("ok.yaml", "base: llama2-7b\nname: \"modèle 中\"\n")}));
}

TEST(Robustness, ControlCharactersInTextAreRefused) {
  // fuzz/regressions/model_file: a NUL inside a YAML scalar came back from yaml-cpp as bytes that are
  // not UTF-8, and printing the field's value threw from the JSON library (an internal error).
  const std::string yaml = write_temp("nul.yaml", std::string("# a\nseq_length: tributed_1ab_siz\">ibUtedb_N\0_siz\":e655.6\n", 57));
  EXPECT_EQ(error_of({"--model", yaml}), yaml + ":2: a control character (byte 0x00) in text (--model)");
  EXPECT_EQ(error_of({"--model", write_temp("bell.json", "{\"base\": \"llama2-7b\", \"name\": \"a\x07\"}")}),
            ::testing::TempDir() + "args_test_bell.json:1: a control character (byte 0x07) in text (--model)");
  // Tabs and Windows line ends are text.
  EXPECT_NO_THROW(parse({"--model", write_temp("crlf.yaml", "base: llama2-7b\r\nname:\tx\r\n")}));
}

TEST(Robustness, ShapesWithoutAModelAsksForOne) {
  // It complained about num_layers, a field the user never gave.
  EXPECT_THAT(what_of([] { parse_shapes_request({"--target-params", "7e9", "--num-nodes", "1", "--gbs", "64"}); }),
              StartsWith("no model: give --model NAME|FILE"));
}

TEST(Robustness, ValidationCsvWithoutRowsIsRefused) {
  auto message = [](const std::string& text) { return what_of([&] { read_measurements(text, "mine.csv"); }); };
  EXPECT_EQ(message(""), "mine.csv: empty file: expected a header line and measurement rows");
  EXPECT_EQ(message("source,date,gpus\n"), "mine.csv: a header line but no measurement rows");
  const testing::run_result r = testing::run_command(TRAINPLAN_BINARY, {"validate", "--csv", ::testing::TempDir()});
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("--csv '/tmp/': a directory; give a file in it"));
}

}  // namespace
}  // namespace trainplan
