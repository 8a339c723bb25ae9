// The command line's contract on generated argument lists (issue 15): a fixed seed, a bounded number of
// runs; every run exits 0 or 2, on 2 with "trainplan: error: " naming a flag, and within the time limit.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "run_process.h"

namespace trainplan {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

/// Flags with values a user or a script might give: good ones, typos of the kind seen, and absurd ones.
struct flag_pool {
  const char* flag;
  std::vector<const char*> values;  // empty: a switch
};

const std::vector<flag_pool>& pool() {
  static const std::vector<flag_pool> p = {
      {"--model", {"llama2-7b", "llama3-8b", "mixtral-8x7b", "gpt3-175b", "llama3-70", "", "/nonexistent.yaml"}},
      {"--cluster", {"dgx-a100", "dgx-h100", "jean-zay-a100", "dgx-h10", ""}},
      {"--num-nodes", {"1", "2", "8", "0", "-1", "4294967297", "abc", "1e3"}},
      {"--num-gpus", {"8", "16", "3", "0", "1e9"}},
      {"--tp", {"1", "2", "8", "0", "-1", "3", "2147483648", "1.5"}},
      {"--pp", {"1", "2", "4", "7", "0", "99999999999999999999"}},
      {"--cp", {"1", "2", "0"}},
      {"--ep", {"1", "2", "8"}},
      {"--mbs", {"1", "2", "0", "-3"}},
      {"--gbs", {"64", "256", "1024", "0", "2147483648", "1e30", "nan"}},
      {"--seq-length", {"2048", "4096", "131072", "0", "inf"}},
      {"--zero-stage", {"0", "1", "3", "4"}},
      {"--framework", {"megatron", "deepspeed", "fsdp", "megatorn"}},
      {"--recompute-granularity", {"none", "selective", "full", "ful"}},
      {"--gpu-memory-gib", {"40", "100", "0", "-1", "1e-300"}},
      {"--threads", {"1", "2", "65536", "0"}},
      {"--train-tokens", {"1e12", "1e26", "-5", "0"}},
      {"--top", {"3", "0"}},
      {"--sequence-parallel", {}},
      {"--use-distributed-optimizer", {}},
      {"--json", {}},
      {"--bogus-flag", {}},
  };
  return p;
}

const std::vector<const char*> kCommands = {"memory", "time", "comm", "schedule", "model", "search", "plan", "shapes"};

TEST(CliRandom, EveryRunExitsZeroOrTwoNamingAFlag) {
  std::mt19937_64 rng(20261123);
  auto pick = [&rng](std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng); };
  int ok = 0, bad = 0;
  for (int run = 0; run < 120; ++run) {
    std::vector<std::string> args = {kCommands[pick(kCommands.size())]};
    const std::size_t flags = 1 + pick(6);
    for (std::size_t f = 0; f < flags; ++f) {
      const flag_pool& fp = pool()[pick(pool().size())];
      args.push_back(fp.flag);
      if (!fp.values.empty()) args.push_back(fp.values[pick(fp.values.size())]);
    }
    // `timeout` makes a hang a failure with its own status (124) instead of a stuck test.
    const testing::run_result r = testing::run_command(std::string("timeout 20 ") + TRAINPLAN_BINARY, args);
    std::string line;
    for (const auto& a : args) line += " " + a;
    ASSERT_TRUE(r.status == 0 || r.status == 2) << "exit " << r.status << ":" << line << "\n" << r.err;
    if (r.status == 2) {
      EXPECT_THAT(r.err, StartsWith("trainplan: error: ")) << line;
      EXPECT_THAT(r.err, HasSubstr("--")) << "names no flag:" << line << "\n" << r.err;
      ++bad;
    } else {
      ++ok;
    }
  }
  // Both outcomes are exercised.
  EXPECT_GT(ok, 5);
  EXPECT_GT(bad, 5);
}

}  // namespace
}  // namespace trainplan
