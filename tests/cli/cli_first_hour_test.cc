// A new user's first hour (issue 16): each test reproduces one finding of the issue through the
// `trainplan` executable, run as a user runs it, and passes with its fix.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "cli_support.h"
#include "trainplan/core/hardware/hardware.h"
#include "run_process.h"

namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;
using json = nlohmann::json;
using trainplan::testing::parse_json;
using trainplan::testing::read_file;
using trainplan::testing::run;
using trainplan::testing::run_result;
using trainplan::testing::shell_quote;

TEST(CliFirstHour, TimeAndPlanSayWhenTheLayoutDoesNotFit) {
  // Finding 3: a 156 GiB/GPU layout got "418 days" with no word that it cannot run.
  const std::vector<std::string> big = {"--model", "llama3-70b", "--cluster", "dgx-h100", "--num-gpus", "64", "--tp",
                                        "8", "--pp", "2", "--sp", "--use-distributed-optimizer", "--gbs", "512",
                                        "--transformer-impl", "local"};
  auto with = [](std::vector<std::string> a, std::initializer_list<const char*> more) {
    a.insert(a.begin(), more.begin(), more.end());
    return a;
  };
  const run_result t = run(with(big, {"time"}));
  ASSERT_EQ(t.status, 0) << t.err;
  EXPECT_THAT(t.out, HasSubstr("WARNING: this layout does not fit: stage 0 reserves"));
  const json tj = parse_json(run(with(big, {"time", "--json"})).out);
  EXPECT_EQ(tj["time"]["fits"], false);
  EXPECT_GT(tj["time"]["peak_reserved_bytes"].get<double>(), tj["time"]["capacity_bytes"].get<double>());
  std::vector<std::string> plan = with(big, {"plan"});
  plan.insert(plan.end(), {"--train-tokens", "1e12"});
  EXPECT_THAT(run(plan).out, HasSubstr("WARNING: the job's layout does not fit"));
  plan.push_back("--json");
  EXPECT_EQ(parse_json(run(plan).out)["plan"]["layout_fits"], false);
  // A layout that fits: no warning, fits true.
  std::vector<std::string> fits = big;
  fits.push_back("--use-flash-attn");
  const run_result ok = run(with(fits, {"time"}));
  EXPECT_THAT(ok.out, Not(HasSubstr("WARNING")));
  EXPECT_EQ(parse_json(run(with(fits, {"time", "--json"})).out)["time"]["fits"], true);
}

TEST(CliFirstHour, MegatronFormulaCaptionSaysWhichWayItDiffers) {
  // Finding 9: the caption said Megatron's figure omits the logits, buffers and allocator (so lower) when
  // it was 40 GiB higher than ours: its activation term is a GELU layer without flash attention.
  const run_result hi = run({"memory", "--model", "llama3-70b", "--cluster", "dgx-h100", "--num-gpus", "64", "--tp", "8",
                             "--pp", "2", "--sp", "--use-distributed-optimizer", "--gbs", "512"});
  ASSERT_EQ(hi.status, 0) << hi.err;
  EXPECT_THAT(hi.out, HasSubstr("105.35 GiB, higher than our 58.07 GiB allocated"));
  EXPECT_THAT(hi.out, HasSubstr("its activation term prices a GELU layer without flash attention"));
  const run_result lo = run({"memory", "--model", "llama2-7b", "--cluster", "dgx-h100", "--num-gpus", "8", "--tp", "8",
                             "--gbs", "8", "--seq-length", "4096", "--attention-backend", "unfused"});
  ASSERT_EQ(lo.status, 0) << lo.err;
  EXPECT_THAT(lo.out, HasSubstr("20.98 GiB, lower than our 23.80 GiB allocated"));
  EXPECT_THAT(lo.out, HasSubstr("it omits the logits, buffers and allocator"));
}

TEST(CliFirstHour, LongScheduleIsDrawnAsItsStartAndEnd) {
  // Finding 9: 512 passes per rank in 100 columns was an unreadable blur of F and B.
  const run_result r = run({"schedule", "--model", "llama3-70b", "--cluster", "dgx-h100", "--num-gpus", "64", "--tp", "8",
                            "--pp", "4", "--sp", "--use-distributed-optimizer", "--gbs", "512", "--seq-length", "8192"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("the first and the last 16 passes per rank"));
  std::istringstream lines(r.out);
  int rows = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("  rank ", 0) != 0) continue;
    ++rows;
    EXPECT_THAT(line, HasSubstr("| … |"));
    EXPECT_THAT(line, HasSubstr("FF"));  // a pass spans several columns
    EXPECT_THAT(line, HasSubstr("BBB"));
  }
  EXPECT_EQ(rows, 4);
  // A short schedule is still drawn whole.
  const run_result s = run({"schedule", "--preset", "bloom-176b-production", "--gbs", "96"});
  EXPECT_THAT(s.out, HasSubstr("one column = 0.124 s"));
  EXPECT_THAT(s.out, Not(HasSubstr("| … |")));
}

TEST(CliFirstHour, SearchRowsCarryTheCommandThatReproducesThem) {
  // Finding 9: a search row had no command line; each JSON row now has one, and `time` with it gives the
  // row's time. A Megatron search (SP, CP, distributed optimizer, uneven ends) and the default one.
  const std::vector<std::vector<std::string>> searches = {
      {"search", "--json", "--threads", "1"},
      {"search", "--json", "--threads", "1", "--model", "llama3.1-405b", "--cluster", "dgx-h100", "--num-gpus", "2048",
       "--gbs", "2048", "--seq-length", "8192", "--top", "5"}};
  for (const auto& args : searches) {
    const run_result r = run(args);
    ASSERT_EQ(r.status, 0) << r.err;
    const json cands = parse_json(r.out)["search"]["candidates"];
    ASSERT_GE(cands.size(), 3u);
    for (std::size_t i = 0; i < 3; ++i) {
      const std::string cmd = cands[i]["command"].get<std::string>();
      ASSERT_EQ(cmd.rfind("trainplan time ", 0), 0u) << cmd;
      const run_result t = trainplan::testing::run_command(shell_quote(TRAINPLAN_BINARY) + cmd.substr(9), {"--json"});
      ASSERT_EQ(t.status, 0) << cmd << "\n" << t.err;
      EXPECT_NEAR(parse_json(t.out)["time"]["iteration_s"].get<double>(), cands[i]["iteration_s"].get<double>(),
                  1e-9 * cands[i]["iteration_s"].get<double>())
          << cmd;
    }
  }
  const run_result text = run({"search", "--threads", "1"});
  EXPECT_THAT(text.out, HasSubstr("Row 1 alone: trainplan time --model bloom-176b"));
}

TEST(CliFirstHour, TimeHeaderShowsEveryDimensionAndTheSequence) {
  // Finding 8: the header said `TP 8 PP 2 DP 1` on 128 GPUs (CP and EP dropped).
  const run_result r = run({"time", "--model", "mixtral-8x7b", "--cluster", "dgx-h100", "--num-gpus", "64", "--tp", "2",
                            "--cp", "2", "--ep", "4", "--use-flash-attn", "--gbs", "256"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.out, StartsWith("mixtral-8x7b on 64 × h100-sxm5-80gb (dgx-h100), TP 2 PP 1 CP 2 EP 4 DP 16, MBS 1, "
                                "GBS 256, seq 4096 (the model's default; its context is 32768; --seq-length to plan another), 16 micro-batches,"));
}

TEST(CliFirstHour, SequenceLengthSaysWhereItCameFrom) {
  // Issue 16, finding 5: the planning sequence silently defaulted to the model's full context.
  const std::vector<std::string> job = {"memory", "--model", "llama3-8b", "--num-nodes", "1"};
  const run_result from_model = run(job);
  ASSERT_EQ(from_model.status, 0) << from_model.err;
  EXPECT_THAT(from_model.out, HasSubstr("sequence 8192 (the model's context; --seq-length to plan another)\n"));
  std::vector<std::string> given = job;
  given.insert(given.end(), {"--seq-length", "4096", "--json"});
  const run_result r = run(given);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("\"seq_length_source\": \"flag\""));
  given.resize(given.size() - 3);
  given.push_back("--json");
  EXPECT_THAT(run(given).out, HasSubstr("\"seq_length_source\": \"model\""));
  // Issue 29: a RoPE-scaled Hugging Face config says it is planned at its pretraining context.
  const std::string path = ::testing::TempDir() + "trainplan_llama31.json";
  std::ofstream(path) << R"({"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336,
    "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8, "vocab_size": 128256,
    "max_position_embeddings": 131072, "rope_scaling": {"factor": 8.0, "original_max_position_embeddings": 8192,
    "rope_type": "llama3"}})";
  const run_result scaled = run({"memory", "--model", path, "--num-nodes", "1"});
  ASSERT_EQ(scaled.status, 0) << scaled.err;
  EXPECT_THAT(scaled.out, HasSubstr("sequence 8192 (the model's pretraining context, before RoPE scaling to 131072; "
                                    "--seq-length to plan another)\n"));
}

TEST(CliFirstHour, VersionCatalogsAndPlurals) {
  // Finding 9's paper cuts: no --version, no GPU or cluster list, "1 nodes", "none recomputation".
  const run_result v = run({"--version"});
  EXPECT_EQ(v.status, 0);
  EXPECT_THAT(v.out, StartsWith("trainplan 0."));
  const json gpus = parse_json(run({"gpus", "--json"}).out);
  EXPECT_EQ(gpus["gpus"].size(), trainplan::gpu_catalog().size());
  EXPECT_EQ(gpus["gpus"][2]["name"], "h100-sxm5-80gb");
  const json clusters = parse_json(run({"clusters", "--json"}).out);
  EXPECT_EQ(clusters["clusters"].size(), trainplan::cluster_catalog().size());
  EXPECT_THAT(run({"clusters"}).out, HasSubstr("dgx-h100"));
  const run_result m = run({"memory", "--model", "llama3-8b", "--cluster", "dgx-h100", "--num-gpus", "8"});
  EXPECT_THAT(m.out, HasSubstr("8 GPUs = 1 node × 8 h100-sxm5-80gb"));
  EXPECT_THAT(m.out, HasSubstr("no recomputation"));
  EXPECT_THAT(m.out, Not(HasSubstr("none recomputation")));
}

TEST(CliFirstHour, LaunchLinesAreReadWhole) {
  // Finding 7 and 8: plan ignored the line's --train-iters; the TP-overlap and parameter-gather overlap
  // flags were "ignored" though they change the time; time did not list what it ignored; multi-value
  // flags were rejected; --attention-backend was unknown.
  const std::vector<std::string> line = {
      "--", "torchrun", "--nproc_per_node", "8", "--nnodes", "2", "pretrain_gpt.py", "--num-layers", "32",
      "--hidden-size", "4096", "--num-attention-heads", "32", "--seq-length", "2048", "--max-position-embeddings",
      "2048", "--vocab-size", "50257", "--tensor-model-parallel-size", "2", "--micro-batch-size", "4",
      "--global-batch-size", "64", "--bf16", "--train-iters", "1000", "--data-path", "0.5", "a", "0.5", "b",
      "--attention-backend", "fused"};
  auto cmd = [&](std::initializer_list<std::string> head, std::initializer_list<std::string> tail = {}) {
    std::vector<std::string> a = head;
    a.insert(a.end(), line.begin(), line.end());
    a.insert(a.end(), tail);
    return run(a);
  };
  const run_result plan = cmd({"plan", "--json"});
  ASSERT_EQ(plan.status, 0) << plan.err;
  EXPECT_EQ(parse_json(plan.out)["plan"]["total_iterations"], 1000);
  const run_result time = cmd({"time"});
  ASSERT_EQ(time.status, 0) << time.err;
  EXPECT_THAT(time.out, HasSubstr("Ignored (they change no estimate): --train-iters --data-path"));
  const json mem = parse_json(cmd({"memory", "--json"}).out);
  EXPECT_EQ(mem["parallel"]["flash_attention"], true);  // --attention-backend fused
  // --tp-comm-overlap is modelled (issue 9, §5.5.1): refused with Megatron's check without SP, faster with it.
  const run_result tp_overlap = cmd({"time"}, {"--tp-comm-overlap"});
  EXPECT_EQ(tp_overlap.status, 2);
  EXPECT_THAT(tp_overlap.err, HasSubstr("--tp-comm-overlap needs --sequence-parallel with TP > 1"));
  const run_result sp = cmd({"time", "--json"}, {"--sequence-parallel"});
  const run_result sp_overlap = cmd({"time", "--json"}, {"--sequence-parallel", "--tp-comm-overlap"});
  ASSERT_EQ(sp_overlap.status, 0) << sp_overlap.err;
  EXPECT_LT(parse_json(sp_overlap.out)["time"]["iteration_s"].get<double>(),
            parse_json(sp.out)["time"]["iteration_s"].get<double>());
  // --overlap-param-gather is modelled (issue 9): refused with Megatron's own precondition when unmet.
  const run_result gather = cmd({"time"}, {"--overlap-param-gather"});
  EXPECT_EQ(gather.status, 2);
  EXPECT_THAT(gather.err, HasSubstr("--overlap-param-gather"));
}

TEST(CliFirstHour, SlidingWindowIsPricedNotIgnored) {
  // Finding 5: a config's sliding_window was silently ignored (full attention priced); it was then
  // refused; now it is priced (issue 11, §5.1.2): a flash kernel executes w·s − w(w − 1)/2 pairs.
  const std::string path = ::testing::TempDir() + "trainplan_mistral_like.json";
  const std::string config = R"({"model_type": "mistral", "num_hidden_layers": 32, "hidden_size": 4096,
    "intermediate_size": 14336, "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 32000,
    "max_position_embeddings": 32768, "hidden_act": "silu")";
  std::ofstream(path) << config << R"(, "sliding_window": 4096})";
  const std::string full_path = ::testing::TempDir() + "trainplan_mistral_like_full.json";
  std::ofstream(full_path) << config << "}";
  const std::vector<std::string> layout = {"--cluster", "dgx-h100", "--num-gpus", "8", "--tp", "8", "--json"};
  auto time_of = [&](const std::string& model) {
    std::vector<std::string> a = {"time", "--model", model};
    a.insert(a.end(), layout.begin(), layout.end());
    const run_result r = run(a);
    EXPECT_EQ(r.status, 0) << r.err;
    return parse_json(r.out);
  };
  const auto windowed = time_of(path), full = time_of(full_path);
  // Model FLOPs (§5.1.2): a windowed layer's flash kernel executes 4096·32768 − 4096·4095/2 (query, key)
  // pairs against 32768²/2 without the window; every other FLOP is the same. The difference of the two
  // runs' model FLOPs is the attention saved: 3 passes × 32 layers × 32 heads × 2·(128 + 128) per pair.
  auto model_flops = [](const nlohmann::json& j) {
    return j["time"]["model_tflops_per_gpu"].get<double>() * 1e12 * j["time"]["iteration_s"].get<double>() * 8;
  };
  const double pairs_saved = 32768.0 * 32768 / 2 - (4096.0 * 32768 - 4096.0 * 4095 / 2);
  EXPECT_NEAR((model_flops(full) - model_flops(windowed)) / (3.0 * 32 * 32 * 2 * 256 * pairs_saved), 1.0, 1e-6);
  // At 32K the attention core is the largest part of a layer: windowing it to 23% saves over 15% (20% with
  // the FlashAttention-2-era kernel rate, 15% at the fitted Hopper rate of §5.6).
  EXPECT_LT(windowed["time"]["iteration_s"].get<double>(), 0.85 * full["time"]["iteration_s"].get<double>());
  const run_result mem = run({"memory", "--model", path, "--cluster", "dgx-h100", "--num-gpus", "8"});
  ASSERT_EQ(mem.status, 0) << mem.err;
  EXPECT_THAT(mem.out, HasSubstr("(1 micro-batch per pipeline), sequence 32768"));
}

TEST(CliFirstHour, MegatronMeansMegatronCoreWithFusedAttention) {
  // Finding 2: flash attention was off unless --use-flash-attn, so a current Megatron-Core run (TE's
  // fused attention) was judged not to fit: Llama-3-70B, 64 GPUs, TP 8 PP 2, SP, distributed optimizer.
  const std::vector<std::string> job = {"memory", "--json", "--model", "llama3-70b", "--cluster", "dgx-h100",
                                        "--num-gpus", "64", "--tp", "8", "--pp", "2", "--sp",
                                        "--use-distributed-optimizer", "--gbs", "512"};
  // Whether the layout fits with `more` flags, checking the attention kernel it was priced with.
  auto fits = [&](std::vector<std::string> more, bool fused) {
    std::vector<std::string> a = job;
    a.insert(a.end(), more.begin(), more.end());
    const run_result r = run(a);
    EXPECT_EQ(r.status, 0) << r.err;
    const json j = parse_json(r.out);
    EXPECT_EQ(j["parallel"]["flash_attention"], fused);
    return j["memory"]["fits"].get<bool>();
  };
  EXPECT_TRUE(fits({}, true));                                          // Megatron-Core's default: fused attention
  EXPECT_TRUE(fits({"--transformer-impl", "transformer_engine"}, true));  // no longer "ignored"
  EXPECT_FALSE(fits({"--transformer-impl", "local"}, false));            // Megatron's own modules, unfused core
  // Megatron-DeepSpeed keeps the BLOOM-era unfused core (the BLOOM validation is unchanged).
  const json ds = parse_json(run({"memory", "--json", "--preset", "bloom-176b-production"}).out);
  EXPECT_EQ(ds["parallel"]["flash_attention"], false);
}

TEST(CliFirstHour, MorePaperCuts) {
  // Finding 9: "--bf16 … (default) [default: off]", plan accepting 1e30 parameters, CSV train_days 0
  // where no token budget was given.
  EXPECT_THAT(run({"help", "flags"}).out, HasSubstr("bf16 mixed precision [default: on (bf16 unless --fp16 or --fp32)]"));
  const run_result plan = run({"plan", "--model-params", "1e30", "--tflops-per-gpu", "150", "--num-gpus", "8",
                               "--train-tokens", "1e9"});
  EXPECT_EQ(plan.status, 2);
  EXPECT_EQ(plan.err, "trainplan: error: --model-params must be at most 1e15, got 1e30\n");
  const run_result csv = run({"search", "--csv", "--top", "1"});
  ASSERT_EQ(csv.status, 0) << csv.err;
  const std::string first_row = csv.out.substr(csv.out.find('\n') + 1, csv.out.find('\n', csv.out.find('\n') + 1) -
                                                                        csv.out.find('\n') - 1);
  EXPECT_EQ(first_row.back(), ',') << first_row;  // train_days empty: no --train-tokens
}

TEST(CliFirstHour, MissingIsNotZero) {
  // Finding 9: "got 0" for a missing required dimension; "iterations 0" for a plan with no batch.
  const run_result m = run({"memory", "--num-layers", "32", "--num-gpus", "8"});
  EXPECT_EQ(m.status, 2);
  EXPECT_EQ(m.err, "trainplan: error: --hidden-size is missing: give it, or a --model to start from\n");
  const run_result p = run({"plan", "--tflops-per-gpu", "150", "--num-gpus", "8", "--model-params", "7e9",
                            "--train-tokens", "1e12"});
  ASSERT_EQ(p.status, 0) << p.err;
  EXPECT_THAT(p.out, HasSubstr("iterations                    -   (give --global-batch-size and --seq-length"));
}

TEST(CliFirstHour, TheReadmesFirstFiveMinutesRun) {
  // Finding 10: the README's first commands and its example files (examples/) work as shown.
  const std::string ex = std::string(TRAINPLAN_SOURCE_DIR) + "/examples/";
  const std::vector<std::string> llama = {"--model", "llama3-70b", "--cluster", "dgx-h100", "--num-gpus", "64", "--tp",
                                          "8", "--pp", "2", "--sp", "--use-distributed-optimizer", "--gbs", "512"};
  for (const char* cmd : {"memory", "time"}) {
    std::vector<std::string> a = {cmd};
    a.insert(a.end(), llama.begin(), llama.end());
    const run_result r = run(a);
    EXPECT_EQ(r.status, 0) << cmd << ": " << r.err;
  }
  const run_result s = run({"search", "--model", ex + "my-model.yaml", "--cluster", ex + "my-cluster.yaml", "--gbs",
                            "512", "--top", "10", "--threads", "2"});
  ASSERT_EQ(s.status, 0) << s.err;
  EXPECT_THAT(s.out, StartsWith("Search: my-10b (9.3B parameters) on my-h100-cluster (up to 16 nodes × 8"));
  const run_result p = run({"plan", "--model", "llama3-70b", "--cluster", "dgx-h100", "--num-gpus", "1024", "--tp", "8",
                            "--pp", "4", "--sp", "--use-distributed-optimizer", "--gbs", "1024", "--train-tokens",
                            "15e12"});
  EXPECT_EQ(p.status, 0) << p.err;
  EXPECT_THAT(p.out, HasSubstr("wall clock"));
}

}  // namespace
