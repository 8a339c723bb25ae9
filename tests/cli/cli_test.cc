// The `trainplan` executable end to end (issue 2 §6 "Output" and "Bad input"): it is run as a user runs it,
// with stdout, stderr and the exit status captured separately. Golden cases pin whole `memory`, `time`,
// `comm` and `search` --json outputs (tests/data/golden/).
//
// Golden files: {"args": [...], "expected": <trainplan memory ... --json>}. Every value in "expected" must be
// in the output: strings and booleans exactly, numbers within a relative tolerance of 1e-6 (byte counts
// are whole numbers of order 1e9..1e11, so this is ~1 KiB..100 KiB: it absorbs a last-ulp change of
// floating-point evaluation order, and nothing a formula change would produce). Keys the output has and
// the golden file does not are allowed (schema additions are compatible); `elapsed_s` and `threads` are
// dropped. After an intended change to a model, regenerate with TRAINPLAN_UPDATE_GOLDEN=1 build/bin/trainplan_tests
// --gtest_filter='CliGolden*' and review the diff.
#include <gmock/gmock.h>

#include "trainplan/core/hardware/hardware.h"
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "cli_support.h"
#include "run_process.h"

namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;
using json = nlohmann::json;

using trainplan::testing::parse_json;
using trainplan::testing::read_file;
using trainplan::testing::run;
using trainplan::testing::run_result;
using trainplan::testing::shell_quote;

std::string data_path(const std::string& name) { return std::string(TRAINPLAN_TEST_DATA_DIR) + "/" + name; }

// ---- commands ----------------------------------------------------------------------------------------

TEST(CliRun, NoArgumentsAnalysesBloom176bOnItsCluster) {
  // The embedded default (README's main job): BLOOM-176B on its production cluster, 48 nodes of Jean Zay.
  // Issue 2 made it the memory analysis of the production layout; the layout search has since taken its
  // place and points at `trainplan memory` for that analysis, so this pins only what both share.
  const run_result r = run({});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_THAT(r.out, StartsWith("trainplan: "));
  EXPECT_THAT(r.out, HasSubstr("BLOOM-176B"));
  EXPECT_THAT(r.out, HasSubstr("jean-zay-a100"));
  EXPECT_THAT(r.out, HasSubstr("48 nodes"));
  EXPECT_THAT(r.out, HasSubstr("GiB"));
}

TEST(CliRun, MemoryWithoutFlagsIsTheBloomProductionAnalysis) {
  const run_result r = run({"memory"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_THAT(r.out, HasSubstr("bloom-176b (176,247,271,424 parameters) on jean-zay-a100"));
  EXPECT_THAT(r.out, HasSubstr("384 GPUs = 48 nodes × 8 a100-sxm4-80gb"));
  EXPECT_THAT(r.out, HasSubstr("DP 8 × TP 4 × PP 12"));
  EXPECT_THAT(r.out, HasSubstr("(GiB)"));  // units in the column headers
  EXPECT_THAT(r.out, HasSubstr("Peak: stage"));
  EXPECT_EQ(r.out, run({"memory", "--preset", "bloom-176b-production"}).out);
}

TEST(CliRun, ModelsListsTheCatalog) {
  const run_result r = run({"models"});
  EXPECT_EQ(r.status, 0) << r.err;
  for (const char* name : {"gpt3-175b", "bloom-176b", "opt-175b", "llama2-7b", "llama2-13b", "llama2-70b",
                           "llama3-8b", "llama3-70b", "llama3.1-405b", "mixtral-8x7b", "mixtral-8x22b",
                           "megatron-22b", "megatron-175b", "megatron-530b", "megatron-1t"}) {
    EXPECT_THAT(r.out, HasSubstr(std::string("\n") + name + " ")) << name;
  }
  const run_result j = run({"models", "--json"});
  EXPECT_EQ(j.status, 0);
  const json doc = parse_json(j.out);
  EXPECT_EQ(doc["schema_version"], 1);
  EXPECT_GE(doc["models"].size(), 15u);
}

TEST(CliRun, ModelJson) {
  const run_result r = run({"model", "--model", "bloom-176b", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  const json doc = parse_json(r.out);
  EXPECT_EQ(doc["schema_version"], 1);
  EXPECT_EQ(doc["model"]["name"], "bloom-176b");
  EXPECT_EQ(doc["model"]["parameters"].get<std::int64_t>(), 176'247'271'424);
  EXPECT_TRUE(doc["model"]["parameters"].is_number_integer());
}

TEST(CliRun, ModelText) {
  const run_result r = run({"model", "--model", "llama3-8b"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("8,030,261,248"));
}

TEST(CliRun, MemoryJsonHasTheSchemaTheIssueNames) {
  const run_result r = run({"memory", "--preset", "bloom-176b-production", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const json doc = parse_json(r.out);
  EXPECT_EQ(doc["schema_version"], 1);
  ASSERT_TRUE(doc.contains("model"));
  EXPECT_TRUE(doc["model"]["name"].is_string());
  EXPECT_TRUE(doc["model"]["parameters"].is_number_integer());
  for (const char* k : {"dp", "tp", "pp", "cp", "ep", "vpp", "mbs", "gbs", "zero_stage"}) {
    EXPECT_TRUE(doc["parallel"].contains(k)) << k;
    EXPECT_TRUE(doc["parallel"][k].is_number_integer()) << k;
  }
  const json& mem = doc["memory"];
  ASSERT_TRUE(mem["stages"].is_array());
  ASSERT_EQ(mem["stages"].size(), 12u);
  std::int64_t i = 0;
  for (const json& s : mem["stages"]) {
    for (const char* k : {"stage", "parameters", "weights_bytes", "gradients_bytes", "optimizer_bytes",
                          "activations_bytes", "other_bytes", "allocated_bytes", "reserved_bytes"}) {
      EXPECT_TRUE(s.contains(k) && s[k].is_number()) << "stage " << i << " " << k;
    }
    EXPECT_EQ(s["stage"], i++);
    EXPECT_GE(s["reserved_bytes"].get<double>(), s["allocated_bytes"].get<double>());
  }
  for (const char* k : {"peak_allocated_bytes", "peak_reserved_bytes", "capacity_bytes"}) {
    EXPECT_TRUE(mem.contains(k) && mem[k].is_number()) << k;
  }
  EXPECT_TRUE(mem["fits"].is_boolean());
  EXPECT_EQ(doc["parallel"]["dp"], 8);
  EXPECT_EQ(doc["parallel"]["tp"], 4);
  EXPECT_EQ(doc["parallel"]["pp"], 12);
  EXPECT_EQ(doc["parallel"]["zero_stage"], 1);
}

TEST(CliRun, MemoryHelpShowsDefaults) {
  const run_result r = run({"memory", "--help"});
  EXPECT_EQ(r.status, 0);
  EXPECT_THAT(r.out, HasSubstr("--tensor-model-parallel-size, --tp N"));
  EXPECT_THAT(r.out, HasSubstr("[default: 1]"));
  EXPECT_THAT(r.out, HasSubstr("--cluster NAME|FILE"));
  EXPECT_THAT(r.out, HasSubstr("[default: dgx-h100]"));
  EXPECT_THAT(r.out, HasSubstr("bloom-176b-production"));
  EXPECT_THAT(r.out, HasSubstr("--json"));
}

TEST(CliRun, HelpCommand) {
  const run_result top = run({"help"});
  EXPECT_EQ(top.status, 0) << top.err;
  for (const char* c : {"models", "model", "memory"}) EXPECT_THAT(top.out, HasSubstr(c));
  const run_result mem = run({"help", "memory"});
  EXPECT_EQ(mem.status, 0) << mem.err;
  EXPECT_EQ(mem.out, run({"memory", "--help"}).out);
  const run_result bad = run({"help", "memroy"});
  EXPECT_EQ(bad.status, 2);
  EXPECT_THAT(bad.err, AllOf(StartsWith("trainplan: error: help: unknown command 'memroy'"),
                             HasSubstr("did you mean 'memory'?")));
}

TEST(CliRun, HelpFlags) {
  const run_result r = run({"help", "flags"});
  EXPECT_EQ(r.status, 0);
  EXPECT_THAT(r.out, HasSubstr("--micro-batch-size, --mbs N"));
}

TEST(CliRun, LaunchLineThroughTheCli) {
  const std::vector<std::string> megatron = {"--num-layers", "32", "--hidden-size", "4096", "--num-attention-heads",
                                             "32", "--seq-length", "2048", "--max-position-embeddings", "2048",
                                             "--vocab-size", "50257", "--tensor-model-parallel-size", "2",
                                             "--pipeline-model-parallel-size", "2", "--micro-batch-size", "4",
                                             "--global-batch-size", "64", "--bf16"};
  std::vector<std::string> flags = {"memory", "--json", "--num-gpus", "16", "--gpus-per-node", "8"};
  flags.insert(flags.end(), megatron.begin(), megatron.end());
  std::vector<std::string> launch = {"memory", "--json", "--", "torchrun", "--nproc_per_node", "8", "--nnodes", "2",
                                     "pretrain_gpt.py", "--lr", "6e-4", "--train-iters", "1000"};
  launch.insert(launch.end(), megatron.begin(), megatron.end());
  const run_result a = run(flags);
  const run_result b = run(launch);
  ASSERT_EQ(a.status, 0) << a.err;
  ASSERT_EQ(b.status, 0) << b.err;
  json ja = parse_json(a.out);
  json jb = parse_json(b.out);
  EXPECT_EQ(jb["ignored_flags"], json::array({"--lr", "--train-iters"}));
  EXPECT_EQ(jb["context"]["ignored_flags"], jb["ignored_flags"]);
  EXPECT_EQ(jb["context"]["from_launch_line"], true);
  for (json* j : {&ja, &jb}) {  // what differs: where the flags came from
    j->erase("ignored_flags");
    (*j)["context"].erase("ignored_flags");
    (*j)["context"].erase("from_launch_line");
  }
  EXPECT_EQ(ja, jb);
}

// ---- errors --------------------------------------------------------------------------------------------

void expect_error(const std::vector<std::string>& args, const std::string& names) {
  const run_result r = run(args);
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_THAT(r.err, StartsWith("trainplan: error: "));
  EXPECT_THAT(r.err, HasSubstr(names));
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;  // one line, no stack trace
  EXPECT_EQ(r.out, "");
}

TEST(CliErrors, UnexpectedArgumentsAreNamedInTheOrderGiven) {
  expect_error({"models", "--foo", "--bar"},
               "these arguments were not expected: --foo --bar; `trainplan models --help` lists what it takes");
  expect_error({"models", "extra"}, "this argument was not expected: extra");
}

TEST(CliErrors, BadInputExitsTwoNamingTheFlag) {
  expect_error({"memory", "--model", "bloom-176b", "--tp", "5", "--num-gpus", "5"}, "--tensor-model-parallel-size");
  expect_error({"memory", "--model", "llama2-7b", "--tp", "four"}, "--tp expects an integer");
  expect_error({"memory", "--model", "llama2-7b", "--hidden-size", "99999999999"}, "--hidden-size");
  expect_error({"memory", "--model", "llama2-7b", "--num-gpus", "0"}, "--num-gpus must be a positive integer");
  expect_error({"memory", "--model", "llama2-7b", "--gbs", "100", "--mbs", "3", "--num-gpus", "8"},
               "--global-batch-size");
  expect_error({"memory", "--model", "llama2-7"}, "did you mean 'llama2-7b'?");
  expect_error({"memory", "--model", "llama2-7b", "--gpu", "h100"}, "unknown GPU 'h100'");
  expect_error({"memory", "--model", "llama2-7b", "--cluster", "dgx-h10"}, "did you mean 'dgx-h100'?");
  expect_error({"memory", "--model", "llama2-7b", "--tensor-parallel-size", "2"},
               "did you mean '--tensor-model-parallel-size'?");
  expect_error({"memory", "--model", "llama2-7b", "--tp"}, "--tp needs a value");
  expect_error({"memory", "--model", "llama2-7b", "--sequence-parallel=yes"}, "--sequence-parallel is a switch");
  expect_error({"memory", "--model", "llama2-7b", "--zero-stage", "3"}, "--zero-stage 3 needs --framework");
  expect_error({"model", "--model", data_path("cluster/malformed.yaml")}, data_path("cluster/malformed.yaml") + ":");
  expect_error({"memory", "--model", "llama2-7b", "--cluster", data_path("cluster/malformed.json")},
               data_path("cluster/malformed.json") + ":3: ");
  expect_error({"memory", "--", "torchrun", "--nproc_per_node", "8", "pretrain_gpt.py", "--model", "llama2-7b",
                "--distribute-saved-activations"},
               "--distribute-saved-activations would change the checkpointed activations' memory (split over TP), which "
               "trainplan does not model");
  expect_error({"models", "--model", "llama2-7b"}, "--model");
}

TEST(CliErrors, UnknownSubcommandSuggests) {
  const run_result r = run({"memroy", "--model", "llama2-7b"});
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, AllOf(StartsWith("trainplan: error: unknown command 'memroy'"), HasSubstr("did you mean 'memory'?")));
  const run_result m = run({"modles"});
  EXPECT_EQ(m.status, 2);
  EXPECT_THAT(m.err, HasSubstr("did you mean 'models'?"));
}

TEST(CliErrors, UnknownOptionOfTheTopLevel) {
  const run_result r = run({"--jsn"});
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, StartsWith("trainplan: error: "));
  EXPECT_EQ(r.out, "");
}

// ---- golden end-to-end cases ---------------------------------------------------------------------------

constexpr double kRelTol = 1e-6;

/// Every value of `expected` is in `actual` (see the top of this file); failures name the JSON path.
void expect_matches(const json& expected, const json& actual, const std::string& path) {
  if (expected.is_object()) {
    ASSERT_TRUE(actual.is_object()) << path << ": expected an object, got " << actual.dump();
    for (const auto& [k, v] : expected.items()) {
      if (!actual.contains(k)) {
        ADD_FAILURE() << path << "." << k << ": missing from the output";
        continue;
      }
      expect_matches(v, actual[k], path + "." + k);
    }
  } else if (expected.is_array()) {
    ASSERT_TRUE(actual.is_array()) << path << ": expected an array, got " << actual.dump();
    ASSERT_EQ(actual.size(), expected.size()) << path << ": array length";
    for (std::size_t i = 0; i < expected.size(); ++i) {
      expect_matches(expected[i], actual[i], path + "[" + std::to_string(i) + "]");
    }
  } else if (expected.is_number()) {
    ASSERT_TRUE(actual.is_number()) << path << ": expected a number, got " << actual.dump();
    const double e = expected.get<double>();
    const double a = actual.get<double>();
    const double tol = kRelTol * std::max(std::fabs(e), 1.0);
    EXPECT_NEAR(a, e, tol) << path << " (relative tolerance " << kRelTol << ")";
  } else {
    EXPECT_EQ(actual, expected) << path;
  }
}

/// Keys whose values differ from run to run (wall time, the machine's cores): dropped before comparing.
void drop_volatile(json& j) {
  if (j.is_object()) {
    j.erase("elapsed_s");
    j.erase("threads");
    for (auto& [k, v] : j.items()) drop_volatile(v);
  } else if (j.is_array()) {
    for (auto& v : j) drop_volatile(v);
  }
}

/// Arrays cut to their first `n` entries (a search's candidates: the top of the ranking is what is pinned).
void trim_arrays(json& j, std::size_t n) {
  if (j.is_object()) {
    for (auto& [k, v] : j.items()) trim_arrays(v, n);
  } else if (j.is_array()) {
    if (j.size() > n) j.erase(j.begin() + static_cast<std::ptrdiff_t>(n), j.end());
    for (auto& v : j) trim_arrays(v, n);
  }
}

/// `trainplan <command> <args> --json` against tests/data/golden/<file>; with `max_array`, arrays are
/// compared on their first max_array entries.
void check_golden(const std::string& command, const std::string& file, const std::vector<std::string>& args,
                  std::size_t max_array = 0) {
  const std::string path = data_path("golden/" + file);
  std::vector<std::string> cmd = {command};
  cmd.insert(cmd.end(), args.begin(), args.end());
  cmd.push_back("--json");
  const run_result r = run(cmd);
  ASSERT_EQ(r.status, 0) << r.err;
  json actual = parse_json(r.out);
  drop_volatile(actual);
  if (max_array > 0) trim_arrays(actual, max_array);
  if (std::getenv("TRAINPLAN_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(path) << json{{"args", args}, {"expected", actual}}.dump(2) << "\n";
    GTEST_SKIP() << "rewrote " << path;
  }
  std::ifstream in(path);
  ASSERT_TRUE(in.good()) << path << " is missing: run with TRAINPLAN_UPDATE_GOLDEN=1 once";
  const json golden = json::parse(in);
  // The golden file records the inputs it was made from; they must be these.
  ASSERT_EQ(golden["args"], json(args)) << path;
  expect_matches(golden["expected"], actual, "$");
}

TEST(CliGolden, MemoryBloomProduction) {
  check_golden("memory", "memory_bloom_production.json", {"--preset", "bloom-176b-production"});
}

TEST(CliGolden, MemoryLlama3_70bInterleaved) {
  // Llama-3-70B on 8 DGX-H100 nodes: TP 8 × PP 4 × DP 2, 4 model chunks of 5 layers per pipeline rank,
  // sequence parallel, selective recompute, flash attention, distributed optimizer, bf16.
  check_golden("memory", "memory_llama3_70b_vpp.json",
               {"--model", "llama3-70b", "--cluster", "dgx-h100", "--num-nodes", "8", "--tp", "8", "--pp", "4",
                "--num-layers-per-virtual-pipeline-stage", "5", "--sequence-parallel", "--recompute-granularity",
                "selective", "--use-flash-attn", "--use-distributed-optimizer", "--mbs", "1", "--gbs", "32",
                "--bf16"});
}

// The time, comm and search outputs (issue 17: pinned before the restructuring; a number that moves
// names the bug fix that moved it in its commit).
const std::vector<std::string> kLlama70bVpp = {
    "--model", "llama3-70b", "--cluster", "dgx-h100", "--num-nodes", "8", "--tp", "8", "--pp", "4",
    "--num-layers-per-virtual-pipeline-stage", "5", "--sequence-parallel", "--recompute-granularity", "selective",
    "--use-flash-attn", "--use-distributed-optimizer", "--mbs", "1", "--gbs", "32", "--bf16"};
// Mixtral-8x7B on 8 DGX-H100 nodes with experts over 8 GPUs: TP 2, EP 8, DP 32, all-to-all dispatch as
// Megatron-Core's Mixtral recipe sets it (the default dispatcher is allgather).
const std::vector<std::string> kMixtralEp8 = {"--model", "mixtral-8x7b", "--cluster", "dgx-h100", "--num-gpus", "64",
                                              "--tp", "2", "--ep", "8", "--sp", "--use-distributed-optimizer",
                                              "--use-flash-attn", "--gbs", "256", "--moe-token-dispatcher-type",
                                              "alltoall"};
// Megatron-530B on 630 DGX-A100 nodes, interleaved (VPP 7, one layer per chunk), block recomputation.
const std::vector<std::string> kMegatron530bBlock = {
    "--model", "megatron-530b", "--cluster", "dgx-a100", "--num-nodes", "630", "--tp", "4", "--pp", "15",
    "--num-layers-per-virtual-pipeline-stage", "1", "--sp", "--recompute-granularity", "full",
    "--recompute-method", "block", "--recompute-num-layers", "1", "--gbs", "2520"};
// GPT-3 175B with DeepSpeed ZeRO-3 on 1,536 A100s, MBS 1.
const std::vector<std::string> kGpt3Zero3 = {"--model", "gpt3-175b", "--cluster", "dgx-a100", "--num-gpus", "1536",
                                             "--framework", "deepspeed", "--zero-stage", "3", "--mbs", "1",
                                             "--gbs", "1536", "--use-flash-attn", "--recompute-granularity", "full"};

TEST(CliGolden, TimeBloomProduction) {
  check_golden("time", "time_bloom_production.json", {"--preset", "bloom-176b-production"});
}
TEST(CliGolden, TimeLlama3_70bInterleaved) { check_golden("time", "time_llama3_70b_vpp.json", kLlama70bVpp); }
TEST(CliGolden, TimeMixtralEp8) { check_golden("time", "time_mixtral_ep8.json", kMixtralEp8); }
TEST(CliGolden, TimeMegatron530bBlockRecompute) {
  check_golden("time", "time_megatron530b_block.json", kMegatron530bBlock);
}
TEST(CliGolden, TimeGpt3Zero3) { check_golden("time", "time_gpt3_zero3.json", kGpt3Zero3); }
TEST(CliGolden, CommBloomProduction) {
  check_golden("comm", "comm_bloom_production.json", {"--preset", "bloom-176b-production"}, 12);
}
TEST(CliGolden, CommMixtralEp8) { check_golden("comm", "comm_mixtral_ep8.json", kMixtralEp8, 12); }
TEST(CliGolden, CommGpt3Zero3) { check_golden("comm", "comm_gpt3_zero3.json", kGpt3Zero3, 12); }
TEST(CliGolden, SearchLlama3_8b) {
  check_golden("search", "search_llama3_8b.json",
               {"--model", "llama3-8b", "--cluster", "dgx-h100", "--num-nodes", "2", "--gbs", "256", "--top", "5", "--threads", "1"}, 8);
}
TEST(CliGolden, SearchMixtral8x7b) {
  check_golden("search", "search_mixtral_8x7b.json",
               {"--model", "mixtral-8x7b", "--cluster", "dgx-h100", "--num-nodes", "4", "--gbs", "512", "--top", "5", "--threads", "1"}, 8);
}

TEST(CliGolden, ToleranceCatchesRealChanges) {
  // The comparison itself: a change of 1 part in 1e5 fails, 1 part in 1e8 passes.
  const json e = {{"x", 1.0e10}};
  EXPECT_NONFATAL_FAILURE(expect_matches(e, json{{"x", 1.0e10 * (1 + 1e-5)}}, "$"), "$.x");
  expect_matches(e, json{{"x", 1.0e10 * (1 + 1e-8)}}, "$");
  EXPECT_NONFATAL_FAILURE(expect_matches(e, json::object(), "$"), "$.x: missing");
}

}  // namespace

namespace {

// ---- one number parser (issue 17): every command reads numbers alike ---------------------------------

TEST(CliNumbers, HexIsRefusedByEveryCommand) {
  // Before: `memory --tp 0x2` was refused while `search --tp 0x2` read 2.
  for (const char* cmd : {"memory", "search"}) {
    const run_result r = run({cmd, "--model", "llama3-8b", "--cluster", "dgx-h100", "--num-nodes", "1", "--gbs", "64",
                              "--tp", "0x2"});
    EXPECT_EQ(r.status, 2) << cmd;
    EXPECT_EQ(r.err, "trainplan: error: --tp expects an integer, got '0x2'\n") << cmd;
  }
}

// ---- reporters (issue 17): --format, and every JSON output says what it describes -------------------

TEST(CliFormat, EveryJobOutputCarriesTheContext) {
  // Before: `time` and `search` JSON did not say which job they describe.
  const std::vector<std::string> job = {"--model", "llama3-8b", "--cluster", "dgx-h100", "--num-gpus", "8", "--tp", "2",
                                        "--gbs", "32"};
  for (const char* cmd : {"memory", "comm", "time", "schedule", "search"}) {
    std::vector<std::string> args = {cmd, "--format", "json"};
    if (std::string(cmd) == "search") {
      args.insert(args.end(), {"--model", "llama3-8b", "--cluster", "dgx-h100", "--num-nodes", "1", "--gbs", "32"});
    } else {
      args.insert(args.end(), job.begin(), job.end());
    }
    const run_result r = run(args);
    ASSERT_EQ(r.status, 0) << cmd << ": " << r.err;
    const json j = parse_json(r.out);
    EXPECT_EQ(j["context"]["tool"], "trainplan") << cmd;
    EXPECT_EQ(j["context"]["schema_version"], 1) << cmd;
    EXPECT_EQ(j["context"]["model"], "llama3-8b") << cmd;
    EXPECT_EQ(j["context"]["cluster"], "dgx-h100") << cmd;
    // A search's context has no layout: each candidate states its own.
    EXPECT_EQ(j["context"].contains("parallel"), std::string(cmd) != "search") << cmd;
  }
}

TEST(CliFormat, FormatJsonEqualsJsonAndContradictionsAreRefused) {
  const run_result a = run({"time", "--json"});
  const run_result b = run({"time", "--format", "json"});
  ASSERT_EQ(a.status, 0);
  EXPECT_EQ(a.out, b.out);
  const run_result csv = run({"time", "--format", "csv"});
  EXPECT_EQ(csv.status, 2);
  EXPECT_EQ(csv.err, "trainplan: error: --format csv: `time` has no CSV form (search and validate have one); use "
                     "--format text or json\n");
  const run_result typo = run({"time", "--format", "jsn"});
  EXPECT_EQ(typo.status, 2);
  EXPECT_EQ(typo.err, "trainplan: error: --format must be text, json, csv or html, got 'jsn' (did you mean 'json'?)\n");
  // Before: `search --csv --json` silently dropped one, and `--explain N --json` printed text.
  const run_result both = run({"search", "--csv", "--json"});
  EXPECT_EQ(both.status, 2);
  EXPECT_EQ(both.err, "trainplan: error: --csv with --json or --format: give one output format\n");
  const run_result explain = run({"search", "--explain", "1", "--json"});
  EXPECT_EQ(explain.status, 2);
  const run_result validate_csv = run({"validate", "--format", "csv"});
  ASSERT_EQ(validate_csv.status, 0);
  EXPECT_THAT(validate_csv.out, StartsWith("table,label,date,measured_s,predicted_s,error,"));
}

// ---- issue 16: never a silent wrong answer -------------------------------------------------------------

TEST(CliNumbers, SearchThreadsAreBounded) {
  // Before: --threads 65536 aborted (SIGABRT) creating threads.
  const run_result r = run({"search", "--model", "llama3-8b", "--cluster", "dgx-h100", "--num-nodes", "4", "--gbs",
                            "256", "--threads", "65536"});
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "trainplan: error: --threads must be at most 1024, got 65536\n");
}

TEST(CliNumbers, ValidateCsvNamesFileLineAndColumn) {
  // Before: a non-number leaked as `trainplan: error: stod`, and nan gave "nan %" summaries.
  const std::string path = ::testing::TempDir() + "trainplan_bad_measurements.csv";
  for (const char* bad : {"abc", "nan", "inf"}) {
    std::ofstream(path) << "hidden,tp,pp,mbs,gbs,sec_per_iter,layers\n4096,1,1,1,8," << bad << ",32\n";
    const run_result r = run({"validate", "--csv", path});
    EXPECT_EQ(r.status, 2) << bad;
    EXPECT_EQ(r.err, "trainplan: error: " + path + ":2 sec_per_iter expects a number, got '" + bad + "'\n");
  }
}

}  // namespace
