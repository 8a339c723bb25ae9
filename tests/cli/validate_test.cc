// `trainplan validate` on measurement tables (docs/formulas.md §5.8): reading rows, the statistics, and
// every bad row named by file:line and column.
#include "trainplan/cli/validate.h"
#include "cli/shipped_errors.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "trainplan/cli/args.h"
#include "trainplan/cli/cli.h"
#include "trainplan/core/base/error.h"
#include "trainplan/core/estimate/time.h"
#include "trainplan/report/report.h"

namespace trainplan {
namespace {

const std::string kHeader = "hidden,layers,heads,tp,pp,dp,mbs,gbs,zero_stage,precision,sec_per_iter,tflops\n";

std::string error_of(const std::string& csv) {
  try {
    read_measurements(csv, "mine.csv");
  } catch (const input_error& e) {
    return e.what();
  }
  return "no error";
}

// The expected-error bands read a table the build computed (src/cli/shipped_errors.h): it must be the
// shipped validation itself with its leave-one-source-out errors, row for row and bit for bit.
TEST(Validate, ThePrecomputedErrorsAreTheShippedValidation) {
  std::size_t n = 0;
  const detail::shipped_error* rows = detail::precomputed_shipped_errors(n);
  ASSERT_NE(rows, nullptr);
  validation_report r = shipped_validation();
  leave_one_source_out(r);
  std::vector<const validation_row*> live;
  for (const validation_row& v : r.rows)
    if (v.skipped.empty()) live.push_back(&v);
  ASSERT_EQ(n, live.size());
  int held_out = 0;
  for (std::size_t i = 0; i < n; ++i) {
    EXPECT_EQ(rows[i].generation, live[i]->generation) << i;
    EXPECT_EQ(rows[i].framework, live[i]->framework) << i;
    EXPECT_EQ(rows[i].error, live[i]->error) << i;
    EXPECT_EQ(rows[i].held_out_abs_error, live[i]->held_out_abs_error) << i;
    held_out += rows[i].held_out_abs_error >= 0;
  }
  EXPECT_EQ(held_out, 136 + 4);  // BLOOM's two tables (the A100 fit) and NeMo's B200 rows (Blackwell's attention)
}

// §5.8: a run of a source a constant was fitted on enters the expected-error band by its error without that
// fit. B200 FP8 under Megatron: NeMo's four long-sequence rows (in sample within 1.3%, without the fit
// 6-26%) and Megatron-Bridge's two (+7.4%, +1.2%): p80 of the six out-of-sample errors, 25.0% — not the
// 1.3% the in-sample errors would give.
TEST(Validate, FittedRowsEnterTheBandByTheirHeldOutError) {
  const error_band band = expected_error_of(parse_job_args({"--model", "llama3-8b", "--gpu", "b200-sxm-180gb",
                                                           "--num-gpus", "8", "--gbs", "64", "--fp8-format", "hybrid"})
                                                .job);
  EXPECT_EQ(band.runs, 6);
  EXPECT_NEAR(band.p80_abs_error, 0.25, 0.01);
}

TEST(Validate, ReadsRowsAndPredictsThem) {
  // Two BLOOM-like rows (14336 × 70, 112 heads) on 48 nodes: TP 4 PP 12 DP 8 at MBS 2 and 1.
  const std::string csv = kHeader + "14336,70,112,4,12,8,2,2048,1,bf16,105.22,149\n" +
                          "14336,70,112,4,12,8,1,2048,1,bf16,,\n";
  std::vector<validation_row> rows = read_measurements(csv, "mine.csv");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].table, "mine.csv");
  EXPECT_DOUBLE_EQ(rows[0].measured_s, 105.22);
  EXPECT_DOUBLE_EQ(rows[0].measured_tflops, 149);
  EXPECT_EQ(rows[1].skipped, "no time measured");
  const validation_report r = run_validation(rows);
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_GT(r.rows[0].predicted_s, 0);
  EXPECT_NEAR(r.rows[0].error, r.rows[0].predicted_s / 105.22 - 1, 1e-12);
  EXPECT_EQ(r.overall.rows, 1);  // the skipped row is not counted
  EXPECT_NEAR(r.overall.median_abs_error, std::fabs(r.rows[0].error), 1e-12);
}

TEST(Validate, BadRowsNameFileLineAndColumn) {
  EXPECT_EQ(error_of(kHeader + "14336,70,112,4,12,8,2,2048,1,bf16,abc,149\n"),
            "mine.csv:2 sec_per_iter expects a number, got 'abc'");
  EXPECT_EQ(error_of(kHeader + "14336,70,112,4,12,8,2,2048,1,bf16,-3,149\n"),
            "mine.csv:2 sec_per_iter must be positive, got -3");
  EXPECT_EQ(error_of(kHeader + "14336,70,112,four,12,8,2,2048,1,bf16,100,149\n"),
            "mine.csv:2 tp expects an integer, got 'four'");
  EXPECT_EQ(error_of("hidden,layers,pp,mbs,gbs,sec_per_iter\n14336,70,12,2,2048,100\n"),
            "mine.csv:2: column 'tp' is empty or missing");
}

TEST(Validate, SpearmanOfRanks) {
  EXPECT_DOUBLE_EQ(spearman({1, 2, 3, 4}, {10, 20, 30, 40}), 1.0);
  EXPECT_DOUBLE_EQ(spearman({1, 2, 3, 4}, {40, 30, 20, 10}), -1.0);
  EXPECT_DOUBLE_EQ(spearman({1, 2}, {5, 5}), 1.0);  // fewer than 2 distinct values: defined as 1
}

TEST(Validate, RanksByThroughputAndSaysHowMuchThePredictedFastestGivesUp) {
  // Issue 28's ranking target (§5.8): a layout table is ranked by throughput (model FLOPs/s per GPU),
  // which stays comparable where rows vary the batch, the GPUs or the model, and the row predicted
  // fastest is held against the measured fastest. Three layouts: the model prefers b, c ran fastest.
  auto row = [](double predicted, double measured) {
    validation_row v;
    v.predicted_model_flops_per_gpu_s = predicted;
    v.measured_model_flops_per_gpu_s = measured;
    v.error = measured / predicted - 1;
    return v;
  };
  const validation_row a = row(100e12, 100e12), b = row(130e12, 114e12), c = row(120e12, 120e12);
  const validation_stats s = stats_of("t", {&a, &b, &c});
  EXPECT_DOUBLE_EQ(s.spearman, 0.5);  // ranks (1, 3, 2) against (1, 2, 3)
  EXPECT_NEAR(s.fastest_shortfall, 0.05, 1e-12);  // b measured 114 of c's 120
  EXPECT_EQ(stats_of("t", {&a, &c}).fastest_shortfall, 0.0);
}

TEST(Validate, StatisticsCountRowsPredictedNotToFitAndRowsSkipped) {
  // Issue 27: a measured row ran, so "does not fit" contradicts it; it is counted, and its time is still
  // compared (the memory estimate does not remove the row).
  validation_row fit, tight, skipped;
  fit.error = 0.10;
  fit.predicted_s = 11;
  fit.measured_s = 10;
  tight.error = -0.20;
  tight.predicted_s = 8;
  tight.measured_s = 10;
  tight.fits = false;
  skipped.skipped = "column 'micro_batch_size' is empty";
  const validation_stats s = stats_of("t", {&fit, &tight, &skipped});
  EXPECT_EQ(s.rows, 2);
  EXPECT_EQ(s.not_fit, 1);
  EXPECT_EQ(s.skipped, 1);
  EXPECT_DOUBLE_EQ(s.median_abs_error, 0.15);
  EXPECT_DOUBLE_EQ(s.max_abs_error, 0.20);
}

}  // namespace
}  // namespace trainplan

// ---- `validate --csv` with published-measurements.csv's columns (issue 16, finding 8) ------------------------

TEST(ValidatePublishedSchema, EachRowIsItsOwnModelGpuLayoutAndPrecision) {
  // Before: every row of a user's CSV was taken as BLOOM on A100 (an H100 Llama row came out +453%).
  std::ifstream in(std::string(TRAINPLAN_TEST_DATA_DIR) + "/published-schema-sample.csv");
  std::stringstream text;
  text << in.rdbuf();
  const trainplan::validation_report r = trainplan::run_validation(trainplan::read_measurements(text.str(), "p.csv"));
  ASSERT_EQ(r.rows.size(), 8u);
  std::map<std::string, const trainplan::validation_row*> by;
  for (const auto& v : r.rows) by[v.label] = &v;
  EXPECT_EQ(by["11"]->skipped, "column 'micro_batch_size' is empty");
  EXPECT_EQ(by["22"]->skipped, "column 'gpu_type': 'V100 (DGX-2)' is not in the GPU catalog (`trainplan gpus`)");
  // FP8 rows run the linear layers in FP8 as NeMo does (--fp8-format hybrid); squared ReLU and untied
  // embeddings are read (issue 9).
  for (const char* row : {"38", "43"}) {
    ASSERT_TRUE(by[row]->skipped.empty()) << by[row]->skipped;
    EXPECT_NE(std::find(by[row]->args.begin(), by[row]->args.end(), "hybrid"), by[row]->args.end()) << row;
  }
  EXPECT_NE(std::find(by["43"]->args.begin(), by["43"]->args.end(), "--squared-relu"), by["43"]->args.end());
  EXPECT_NE(std::find(by["43"]->args.begin(), by["43"]->args.end(), "--untie-embeddings-and-output-weights"),
            by["43"]->args.end());
  const trainplan::validation_row& a = *by["26"];
  ASSERT_TRUE(a.skipped.empty()) << a.skipped;
  const std::vector<std::string> want = {"--cluster", "dgx-a100", "--gpu", "a100-sxm4-80gb", "--num-gpus", "1"};
  EXPECT_TRUE(std::equal(want.begin(), want.end(), a.args.begin()));
  for (const char* flag : {"--num-layers", "--hidden-size", "--ffn-hidden-size", "--seq-length", "--mbs", "--gbs", "--fp16"}) {
    EXPECT_NE(std::find(a.args.begin(), a.args.end(), flag), a.args.end()) << flag;
  }
  EXPECT_DOUBLE_EQ(a.measured_s, 1.076);
  // The same run with recomputation and the unfused kernel of 2020 is slower, as it must be.
  EXPECT_GT(by["26-full-unfused"]->predicted_s, 1.4 * a.predicted_s);
  // A row with TFLOPs and no time compares model TFLOPs.
  const trainplan::validation_row& t = *by["own-tflops"];
  ASSERT_TRUE(t.skipped.empty()) << t.skipped;
  EXPECT_TRUE(t.by_tflops);
  EXPECT_DOUBLE_EQ(t.error, 400.0 / t.predicted_tflops - 1);
  EXPECT_EQ(r.overall.rows, 6);
}

TEST(ValidatePublishedSchema, SuperchipsAreNotTakenForTheBoardsTheirNamesContain) {
  // "GB200 NVL72" contains "b200": it was read as a DGX B200 (8 GPUs per node, 180 GiB, 400 Gb/s NICs).
  const std::string header =
      "row,num_layers,hidden_size,ffn_hidden_size,num_attention_heads,vocab_size,seq_length,gpu_type,num_gpus,"
      "tp,pp,micro_batch_size,global_batch_size,precision,iteration_time_s\n";
  const std::string job = ",32,4096,14336,32,128256,8192,";
  const std::string rest = ",72,1,1,1,72,BF16,1.0\n";
  const trainplan::validation_report r = trainplan::run_validation(trainplan::read_measurements(
      header + "a" + job + "GB200 NVL72" + rest + "b" + job + "B200 (DGX-B200)" + ",8,1,1,1,8,BF16,1.0\n" + "c" +
          job + "GB300 NVL72" + rest + "d" + job + "HGX B300" + ",8,1,1,1,8,BF16,1.0\n",
      "s.csv"));
  ASSERT_EQ(r.rows.size(), 4u);
  const std::map<std::string, std::pair<std::string, std::string>> want = {
      {"a", {"gb200-nvl72", "gb200"}}, {"b", {"dgx-b200", "b200-sxm-180gb"}},
      {"c", {"gb300-nvl72", "gb300"}}, {"d", {"dgx-b300", "b300-sxm-288gb"}}};
  for (const auto& v : r.rows) {
    ASSERT_TRUE(v.skipped.empty()) << v.label << ": " << v.skipped;
    ASSERT_GE(v.args.size(), 4u);
    EXPECT_EQ(v.args[1], want.at(v.label).first) << v.label;
    EXPECT_EQ(v.args[3], want.at(v.label).second) << v.label;
  }
}

TEST(ValidatePublishedSchema, ARowWhoseDegreesContradictItsGpuCountIsPlannedOnItsDegrees) {
  // reconcile_gpu_count: TP × PP × CP × DP is the layout the figure was measured on; degrees past the
  // parallel limit are left to the job's rule (their product could overflow).
  const std::string header =
      "row,num_layers,hidden_size,ffn_hidden_size,num_attention_heads,vocab_size,seq_length,gpu_type,num_gpus,"
      "tp,pp,dp,micro_batch_size,global_batch_size,precision,iteration_time_s\n";
  const std::string job = ",32,4096,14336,32,128256,8192,H100-SXM 80GB,";
  const std::string huge = "4611686018427387904";
  const trainplan::validation_report r = trainplan::run_validation(trainplan::read_measurements(
      header + "x" + job + "8,2,1,2,1,64,BF16,1.0\n" + "y" + job + "8," + huge + "," + huge + "," + huge +
          ",1,64,BF16,1.0\n",
      "g.csv"));
  ASSERT_EQ(r.rows.size(), 2u);
  const trainplan::validation_row& x = r.rows[0];
  ASSERT_TRUE(x.skipped.empty()) << x.skipped;
  const auto at = std::find(x.args.begin(), x.args.end(), "--num-gpus");
  ASSERT_NE(at, x.args.end());
  EXPECT_EQ(*(at + 1), "4");
  EXPECT_THAT(x.assumed, ::testing::HasSubstr("num_gpus 8 contradicts the row's own TP 2 × PP 1 × CP 1 × DP 2 = 4"));
  EXPECT_EQ(r.rows[1].assumed, "");
  EXPECT_FALSE(r.rows[1].skipped.empty());
}

TEST(ValidatePublishedTable, ShippedWithItsConditionsAndPerGeneration) {
  // `trainplan validate` runs the published table (tests/data/published-measurements.csv) with the
  // conditions each source states in its text or that are assumed (published-conditions.csv).
  const trainplan::validation_report r = trainplan::validate_shipped();
  std::map<std::string, const trainplan::validation_row*> by;
  for (const auto& v : r.rows) {
    if (v.table == "published-measurements.csv") by[v.label] = &v;
  }
  ASSERT_EQ(by.size(), 58u);
  // Row 14 (Megatron-Core, H100, TP 8): the README's overlap flags, SP as --tp-comm-overlap needs it, MBS
  // 4 (GBS / DP) assumed and said why: with MBS 1 its DP traffic could not hide under one micro-batch.
  const trainplan::validation_row& mc = *by["14"];
  ASSERT_TRUE(mc.skipped.empty()) << mc.skipped;
  for (const char* flag : {"--tp-comm-overlap", "--sequence-parallel", "--overlap-param-gather"}) {
    EXPECT_NE(std::find(mc.args.begin(), mc.args.end(), flag), mc.args.end()) << flag;
  }
  EXPECT_THAT(mc.assumed, ::testing::HasSubstr("MBS not stated: 4, GBS / DP, one micro-batch"));
  const auto mbs = std::find(mc.args.begin(), mc.args.end(), "--mbs");
  ASSERT_NE(mbs, mc.args.end());
  EXPECT_EQ(*std::next(mbs), "4");
  EXPECT_FALSE(mc.hardware_tflops);  // model TFLOPs (989 TFLOPs MFU convention)
  EXPECT_TRUE(by["3"]->hardware_tflops);  // Narayanan et al. eq. 3 counts the recomputed forward
  // Per generation: A100 meets issue 9's targets (median ≤ 8%, max ≤ 20%); the others are reported,
  // with a floor at today's values so that a regression shows (docs/formulas.md §5.8 says why they miss).
  std::map<std::string, trainplan::validation_stats> gen;
  for (const auto& s : r.generations) gen[s.name] = s;
  ASSERT_EQ(gen.count("A100 FP16"), 1u);
  EXPECT_GE(gen["A100 FP16"].rows, 18);
  // 1.6% since Megatron-LM's 2020 README rows (26-33) run without the fusions their code lacked (§5.3) and the
  // 128-way ones with PyTorch's DDP (§5.4); 6.9% before.
  EXPECT_LE(gen["A100 FP16"].median_abs_error, 0.03);
  EXPECT_LE(gen["A100 FP16"].max_abs_error, 0.20);
  // Hopper's constants are measured on our own H100/H200 (§5.6), none fitted on these rows: every H100
  // row of both tables is out of sample. Floors at today's values (2026-11-27, with §5.5.1's GEMM slices,
  // NeMo's rows compared by their throughput, TFLOPs-only rows by their source's count of the whole s²
  // square (§5.8), FlashAttention-2 where the launcher disabled cuDNN's attention, and since 2026-11-27 the
  // SMs a hidden DP collective's kernel holds (§5.4): BF16 5.7% / 19.1%, FP8 3.8% / 9.2% over 19 rows
  // (16.7% / 42.9% with cuDNN's rates, the long-sequence rows 46-54 then −14% to −43%); the second table's
  // BF16 5.2%, FP8 7.2%). Megatron-Core r0.8.0's BF16 rows (11-19) were all too fast, −4% to −22%, at
  // Spearman 0.75 without the collectives' SMs; with them rows 11-13 stay fast and row 14 (32B, its 16 GB
  // fp32 reduce-scatter all hidden under its one backward) comes out +4%, Spearman 0.65. With MBS 1 for its
  // PP 1 rows they were 10.0% / 32.4% at Spearman 0.13 (published-conditions.csv says why not). Since
  // 2026-12-02 Megatron-Core's DDP buckets (§5.4: the first rank's gradients in ⌈Ψ/4e7⌉ buckets, each a
  // call with its own latency, the last one after the backward) put rows 13-15, whose reductions hide
  // under one micro-batch's backward, 1.6-3.1 points slower: 7.1% median (row 14 +7.1%).
  EXPECT_EQ(gen["H100 BF16"].rows, 9);
  EXPECT_LE(gen["H100 BF16"].median_abs_error, 0.075);
  EXPECT_LE(gen["H100 BF16"].max_abs_error, 0.20);
  EXPECT_GE(gen["H100 BF16"].spearman, 0.6);
  for (const char* row : {"11", "12", "13"}) EXPECT_LT(by[row]->error, 0) << row;
  // Since 2026-12-02 the fused attention runs at the GEMMs' sustained clock (§5.6): BF16 7.2% / 17.8%,
  // FP8 2.1% / 7.9% (3.6% / 9.0% at the warm card's attention rate).
  EXPECT_EQ(gen["H100 FP8"].rows, 19);
  EXPECT_LE(gen["H100 FP8"].median_abs_error, 0.03);
  EXPECT_LE(gen["H100 FP8"].max_abs_error, 0.09);
  EXPECT_LE(gen["H100 BF16, held out"].median_abs_error, 0.06);
  // Its worst: Megatron CI's VPP 8 run (−18%); torchtitan's eager runs are −7% and −8% (−12%, −13% at the
  // SXM card's peak; −31% and −33% before their eager RMSNorm, RoPE and K/V copies were priced, §5.3).
  EXPECT_LE(gen["H100 BF16, held out"].max_abs_error, 0.20);
  // 7.8% with torchtitan's compiled float8 runs (2026-12-01, rows 154-162, 162 with async TP −11.5%) on
  // their 500 W H100s priced at the midpoint of SXM's and NVL's peaks ("between SXM and NVL"); the
  // long-context CP rows 155-158 come out −13% to −40% (torchtitan's SDPA and ring attention at 32K-262K
  // tokens, issue 28's finding 4); 7.2% over the 16 rows before them.
  // 9.0% over 28 with torchtitan's 3-D and 4-D 405B rows (163-166: −15%, −16%, −15%, −40%), planned since
  // 2026-12-01 with the pipeline torchtitan builds by default (published-conditions.csv).
  // 6.7% since the attention runs at the sustained clock (2026-12-02, §5.6; CP rows −9% to −37%).
  EXPECT_EQ(gen["H100 FP8, held out"].rows, 28);  // 23 before async TP's row 162, 24 before the 405B rows
  EXPECT_LE(gen["H100 FP8, held out"].median_abs_error, 0.075);
  // The 500 W card's compiled and eager runs at 8K tokens (rows 152-154, 159-161): within 9% each. Its CP
  // runs under PyTorch's ring attention (§4.2.2, §5.3; 2026-12-02): CP 2 −3.5%, CP 4 and 8 −28% and −31%,
  // the 405B CP 8 row −26% (−9%, −33%, −36%, −37% priced as Transformer Engine's ring).
  for (const trainplan::validation_row& v : r.rows) {
    if (v.table != "published-measurements-more.csv") continue;
    for (const char* row : {"152", "153", "154", "159", "160", "161"}) {
      if (v.label == row) {
        EXPECT_LE(std::fabs(v.error), 0.09) << row;
      }
    }
    if (v.label == "156") {
      EXPECT_LE(std::fabs(v.error), 0.06);
    }
    for (const char* row : {"157", "158", "166"}) {
      if (v.label == row) {
        EXPECT_GE(v.error, -0.33) << row;
      }
    }
  }
  // Rows 15-19 (PP > 1) run interleaved, 1 layer per virtual stage, as published-conditions.csv says why.
  EXPECT_THAT(by["16"]->assumed, ::testing::HasSubstr("1 layer per virtual stage"));
  EXPECT_NE(std::find(by["19"]->args.begin(), by["19"]->args.end(), "--num-layers-per-virtual-pipeline-stage"),
            by["19"]->args.end());
  // Today (measured Hopper constants): −4% to −12%, all too fast.
  for (const char* row : {"15", "16", "17", "18", "19"}) EXPECT_LE(std::fabs(by[row]->error), 0.17) << row;
  // Blackwell's FP8 tiles take Hopper's measured FP8/BF16 ratio (not fitted) and its attention Hopper's
  // measured curve with the plateaus × 0.74, fitted on rows 55-58 (§5.6, 2026-11-27): +0.9%, −0.9%,
  // −0.5%, −1.3% (at Hopper's plateaus −6.0%, −22.1%, −25.0%, −26.3%). Rows 55-58 give 4× their degrees'
  // GPUs (NeMo's table listed the sequence length in K as the GPU count): planned on the degrees.
  EXPECT_EQ(gen["B200 FP8"].rows, 4);
  EXPECT_LE(gen["B200 FP8"].median_abs_error, 0.015);
  EXPECT_LE(gen["B200 FP8"].max_abs_error, 0.02);
  EXPECT_THAT(by["57"]->assumed, ::testing::HasSubstr("num_gpus 512 contradicts the row's own TP 4 × PP 1 × CP 8 × DP 4 = 128"));
  // Megatron-Bridge 25.11's B200 Llama rows (116, 117), not fitted on: +7.4%, +1.2% (+0.2%, −1.7% at
  // Hopper's attention plateaus; −17.6%, −22.2% before). The 8K-token row 116 spends 13% of its FLOPs in
  // attention, and the container is half a year newer than NeMo 25.04's.
  EXPECT_LE(gen["B200 FP8, held out"].median_abs_error, 0.055);
  EXPECT_LE(gen["B200 FP8, held out"].max_abs_error, 0.08);
  // §5.8: a TFLOPs figure counts the whole s² square of causal attention (NeMo's llama2 formula before its
  // August 2025 "Discount FLOPs in dot-product att"): at 1M tokens the attention is nearly all the FLOPs,
  // so its TFLOPs are twice trainplan's count, and the row is compared by the source's count. NeMo 24.03's
  // launcher ran it with cuDNN's attention off (NVTE_FUSED_ATTN=0), so FlashAttention-2: −4.1% (−42.9%
  // with cuDNN's rates).
  EXPECT_THAT(by["54"]->assumed, ::testing::HasSubstr("NVTE_FUSED_ATTN: 0"));
  EXPECT_NE(std::find(by["54"]->args.begin(), by["54"]->args.end(), "flash"), by["54"]->args.end());
  EXPECT_LT(std::fabs(by["54"]->error), 0.08);
}

TEST(ValidatePublishedTable, TheSecondTableIsHeldOutEachRowPredictedOrSkippedWithItsReason) {
  // published-measurements-more.csv (rows 59-180; shared/reference/README.md: "the two files together
  // are one table"), which no constant was fitted on, is run too: each row predicted or skipped with the
  // reason, its generations counted apart ("…, held out"), and both tables' rows per source.
  const trainplan::validation_report r = trainplan::validate_shipped();
  int more = 0, predicted = 0, not_fit = 0;
  for (const auto& v : r.rows) {
    if (v.table != "published-measurements-more.csv") continue;
    ++more;
    const int row = std::stoi(v.label);
    EXPECT_GE(row, 59);
    EXPECT_LE(row, 180);
    EXPECT_FALSE(v.source.empty()) << v.label;
    if (!v.skipped.empty()) continue;
    ++predicted;
    EXPECT_GT(v.predicted_s, 0) << v.label;
    EXPECT_GT(v.capacity_bytes, 0) << v.label;
    // "does not fit" is the memory model's verdict: reserved above what the GPU offers.
    EXPECT_EQ(v.fits, v.peak_reserved_bytes <= v.capacity_bytes) << v.label;
    not_fit += v.fits ? 0 : 1;
  }
  EXPECT_EQ(more, 122);
  std::map<std::string, trainplan::validation_stats> gen;
  for (const auto& s : r.generations) gen[s.name] = s;
  ASSERT_EQ(gen.count("H100 BF16, held out"), 1u);
  EXPECT_EQ(gen["H100 BF16"].rows, 9);  // the fitted rows keep their own line
  std::int64_t by_source = 0, by_source_not_fit = 0;
  for (const auto& s : r.sources) {
    by_source += s.rows + s.skipped;
    by_source_not_fit += s.not_fit;
  }
  EXPECT_EQ(by_source, 58 + 122);
  // Today (2026-11-27): 46 of the 122 predicted, 1 of them predicted not to fit although it ran (issue 27:
  // row 62, MT-NLG 530B at 79.8 of 79.3 GiB; 11 on 2026-11-26, 14 before the FP8 and Megatron-Bridge
  // recipes' bf16 gradient reduction was read). Floors at today's values, so that a regression fails and an
  // improvement shows.
  EXPECT_GE(predicted, 46);
  EXPECT_LE(not_fit, 1);
  EXPECT_EQ(by_source_not_fit, r.overall.not_fit);
  // and none of the first table's: its last, the long-sequence doc's LLAMA2-7B at 4K (row 46, NeMo 24.03.01),
  // fits since 2026-11-27 with that launcher's Apex optimizer read as NeMo 1 ran it (16-bit master
  // remainders, 10 bytes a parameter per shard); 5 before that day, when its NeMo 24.07 rows kept 16-bit
  // weights beside FP8 copies (NVIDIA's FP8 recipes of the period gather FP8 parameters) and Nemotron-4
  // 340B had fp32 optimizer states (its recipe's are bf16).
  EXPECT_EQ(r.overall.not_fit, not_fit);
}

TEST(ValidatePublishedTable, MeasuredPeakMemoryIsComparedAsTheSourceMeasuredIt) {
  // §3.10, issue 27: Megatron-LM's CI goldens log torch.cuda.max_memory_allocated on the last rank in GB
  // (rows 145-148, the A100 pair without a time); torchtitan's 'memory:' line max_memory_reserved in GiB,
  // the largest over the GPUs (rows 152 and 159, its two eager runs).
  const trainplan::validation_report r = trainplan::validate_shipped();
  std::map<std::string, const trainplan::validation_row*> by_row;
  for (const auto& v : r.rows) {
    if (v.table == "published-measurements-more.csv") by_row[v.label] = &v;
  }
  for (const char* row : {"145", "146", "147", "148"}) {
    const trainplan::validation_row& v = *by_row.at(row);
    EXPECT_EQ(v.memory_metric, "allocated, last rank") << row;
    EXPECT_TRUE(v.memory_skipped.empty()) << row << ": " << v.memory_skipped;
  }
  EXPECT_NEAR(by_row.at("146")->measured_memory_bytes, 57.144e9, 1);
  EXPECT_FALSE(by_row.at("147")->skipped.empty());  // no time: only the memory is compared
  EXPECT_NEAR(by_row.at("152")->measured_memory_bytes, 82.4 * 1073741824.0, 0.06 * 1073741824.0);
  EXPECT_EQ(by_row.at("152")->memory_metric, "reserved by PyTorch, busiest rank");
  std::map<std::string, trainplan::validation_stats> src;
  for (const auto& s : r.memory_sources) src[s.name] = s;
  const auto& ci = src.at("Megatron-LM functional-test golden values (measured in NVIDIA CI) (allocated, last rank)");
  // Issue 27's target: median ≤ 3%, max ≤ 6% (2026-11-26: 0.8% and 2.2% over 4 rows; row 149 leaves the
  // vocabulary empty, the release rows 150-151 the GPU count).
  EXPECT_EQ(ci.rows, 4);
  EXPECT_LE(ci.median_abs_error, 0.03);
  EXPECT_LE(ci.max_abs_error, 0.06);
  // torchtitan's two eager FSDP2 runs: issue 27's 5% per row, met since 2026-11-27 (−0.6% and −0.4%) by
  // the block the loss's backward strands in the caching allocator (§3.8); −5.4% and −6.3% with the root
  // unit and the last block gathered at the loss (§3.7), −6.9% and −8.1% with the loss backward's peak
  // alone (§3.6), −12.0% and −14.4% before.
  // The compiled runs (--torch-compile, §3.4.4, §5.3; 2026-12-01), selective and full recomputation alike:
  // 153 (bf16, op SAC: w2's output not saved) +0.7%, 154 and 160 (float8, op SAC) +2.1% and +2.4%, Table 2's
  // full-recomputation CP rows 155-158 +3.5% to +4.2%. Row 161 (70B, TP 8 with float8, full recomputation)
  // is −8.4% since its loss runs under loss_parallel's op-by-op DTensor handlers (2026-12-01, §3.6: 12 fp32
  // bytes per logit beside the logits in the forward, 16 at the backward's peak; −20.2% before).
  const auto& tt = src.at("torchtitan benchmarks (PyTorch team, Dec 2024) (reserved by PyTorch, busiest rank)");
  EXPECT_EQ(tt.rows, 15);
  for (const char* row : {"152", "153", "154", "155", "156", "157", "158", "159", "160"}) {
    const trainplan::validation_row& v = *by_row.at(row);
    EXPECT_LE(std::fabs(v.predicted_memory_bytes / v.measured_memory_bytes - 1), 0.05) << row;
  }
  EXPECT_LT(by_row.at("161")->predicted_memory_bytes, by_row.at("161")->measured_memory_bytes);
  EXPECT_GT(by_row.at("161")->predicted_memory_bytes, 0.9 * by_row.at("161")->measured_memory_bytes);
  // Trainy's June 2025 runs on H200s (rows 167, 168; torchtitan e7c0cae compiles the blocks and the loss,
  // --torch-compile-loss, §3.6): −7.4% and −9.8% (−7.0% and −9.3% before the gathered float8 weights took 1 byte), under issue 27's 5%; the eager loss's 12 bytes per logit
  // would put them 28-30% over. Their time (held out, nothing fitted): −1.6% and −2.8%.
  for (const char* row : {"167", "168"}) {
    const trainplan::validation_row& v = *by_row.at(row);
    EXPECT_EQ(v.skipped, "") << row;
    EXPECT_LE(std::fabs(v.predicted_memory_bytes / v.measured_memory_bytes - 1), 0.10) << row;
    EXPECT_LT(v.predicted_memory_bytes, v.measured_memory_bytes) << row;
    EXPECT_LE(std::fabs(v.error), 0.04) << row;
  }
  // Row 162, row 161 with async TP (--async-tensor-parallel, §5.5.1; 2026-12-01): memory −2.9%, time −11.5%
  // (predicted speed-up 1.15× over row 161 against 1.06× measured: the December 2024 implementation hid
  // less than the pass's patterns allow, which nothing here models). The 405B 3-D and 4-D rows (163, 165,
  // 166: FSDP 8/1 × TP 8 × PP 8, CP 1 or 8) run the pipeline torchtitan builds without split points or a
  // micro-batch count (15/16/15 layers, 8 micro-batches; published-conditions.csv) with the pipelining of
  // its day (receive buffers and every stage's kept outputs, §3.5.1) and the kept units' 1-byte float8
  // weights (§3.7): memory −22.8%, −15.4%, −25.0%, under issue 27's 5% (FSDP2 under pipelining, 1F1B: not
  // explained); 164 runs Interleaved1F1B over torchtitan's two-stages-a-rank split (a layout, §2.2.1):
  // −0.5% (its last rank's kept logits), time −16.0% (speed-up over 163 1.30×, 1.28× measured).
  const trainplan::validation_row& async = *by_row.at("162");
  EXPECT_EQ(async.skipped, "");
  EXPECT_LE(std::fabs(async.predicted_memory_bytes / async.measured_memory_bytes - 1), 0.05);
  EXPECT_LT(async.error, 0);
  EXPECT_GT(async.error, -0.15);
  for (const char* row : {"163", "165", "166"}) {
    const trainplan::validation_row& v = *by_row.at(row);
    EXPECT_EQ(v.skipped, "") << row;
    EXPECT_LT(v.predicted_memory_bytes, v.measured_memory_bytes) << row;
    EXPECT_GT(v.predicted_memory_bytes, 0.74 * v.measured_memory_bytes) << row;
  }
  const trainplan::validation_row& interleaved = *by_row.at("164");
  EXPECT_EQ(interleaved.skipped, "");
  EXPECT_LE(std::fabs(interleaved.predicted_memory_bytes / interleaved.measured_memory_bytes - 1), 0.05);
  const double speedup = by_row.at("163")->predicted_s / interleaved.predicted_s;
  const double measured = by_row.at("163")->measured_s / interleaved.measured_s;
  EXPECT_NEAR(speedup / measured, 1.0, 0.05);
}

TEST(ValidatePublishedTable, OptimizerShardingIsReadFromATableAndAnUnknownValueIsRefusedByName) {
  // Read silently as "none" until 2026-11-25: DeepSpeed ZeRO-3 kept the whole optimizer per GPU (2.8 TB
  // for Narayanan et al.'s 175B model), so the row was predicted not to fit and its time took the
  // allocator's penalty. A value not in the table is refused, naming the column.
  const std::string header =
      "row,source,model,num_layers,hidden_size,num_attention_heads,vocab_size,seq_length,gpu_type,num_gpus,gpus_per_node,"
      "tp,pp,micro_batch_size,global_batch_size,activation_recompute,zero_or_dist_opt,precision,tflops_per_gpu\n";
  auto row_with = [&](const std::string& sharding) {
    return header + "1,paper,GPT,96,12288,96,51200,2048,A100-SXM 80GB,384,8,1,1,4,1536,full," + sharding + ",mixed FP16,144\n";
  };
  auto run = [&](const std::string& sharding) {
    return trainplan::run_validation(trainplan::read_measurements(row_with(sharding), "mine.csv")).rows.at(0);
  };
  const trainplan::validation_row z3 = run("DeepSpeed ZeRO-3");
  ASSERT_TRUE(z3.skipped.empty()) << z3.skipped;
  for (const char* flag : {"--framework", "deepspeed", "--zero-stage", "3"}) {
    EXPECT_NE(std::find(z3.args.begin(), z3.args.end(), flag), z3.args.end()) << flag;
  }
  EXPECT_TRUE(z3.fits);  // 175B over 384 GPUs: ~7 GiB of state per GPU, not 2.8 TB
  const trainplan::validation_row none = run("none");
  ASSERT_TRUE(none.skipped.empty()) << none.skipped;
  EXPECT_FALSE(none.fits);  // the whole fp16 optimizer per GPU
  EXPECT_GT(none.peak_reserved_bytes, 100 * z3.peak_reserved_bytes / 10);
  const trainplan::validation_row dist = run("distributed optimizer (overlap grad-reduce/param-gather)");
  EXPECT_NE(std::find(dist.args.begin(), dist.args.end(), "--use-distributed-optimizer"), dist.args.end());
  EXPECT_EQ(run("ZeRO (stage/MP degree not verified)").skipped,
            "column 'zero_or_dist_opt': 'zero (stage/mp degree not verified)' is not modelled here (none, distributed "
            "optimizer, DeepSpeed ZeRO-0/1/3)");
  EXPECT_THAT(run("FSDP (sharding group 8)").skipped, ::testing::HasSubstr("'fsdp (sharding group 8)' is not modelled here"));
}

TEST(ValidatePublishedSchema, ThroughputBesideTflopsIsComparedAsATime) {
  // NeMo 24.07's table gives Llama-3-8B FP8 at 697 TFLOPs and 12,036 tokens/s/GPU: its formula counts the
  // full s² attention, 5.79e10 FLOPs a token against trainplan's causal 5.15e10, so its TFLOPs flattered the
  // prediction by 11%. The throughput is the measurement: the row is compared as GBS × seq / (tokens/s × GPUs).
  const std::string header =
      "row,num_layers,hidden_size,ffn_hidden_size,num_attention_heads,num_query_groups,vocab_size,seq_length,gpu_type,"
      "num_gpus,tp,pp,micro_batch_size,global_batch_size,precision,tflops_per_gpu,tokens_per_s_per_gpu\n";
  const std::string job = ",32,4096,14336,32,8,128256,8192,H100-SXM 80GB,8,1,1,1,";
  const trainplan::validation_report r = trainplan::run_validation(trainplan::read_measurements(
      header + "both" + job + "128,BF16,697,12036\n" + "tflops-alone" + job + "128,BF16,697,\n" + "no-batch" + job +
          ",BF16,697,12036\n",
      "mine.csv"));
  ASSERT_EQ(r.rows.size(), 3u);
  const trainplan::validation_row& both = r.rows[0];
  ASSERT_TRUE(both.skipped.empty()) << both.skipped;
  EXPECT_FALSE(both.by_tflops);
  EXPECT_DOUBLE_EQ(both.measured_s, 128.0 * 8192 / (12036.0 * 8));
  EXPECT_DOUBLE_EQ(both.error, both.predicted_s / both.measured_s - 1);
  // Without a throughput, or without the batch that turns it into a time, the TFLOPs are compared, by the
  // source's count (§5.8): trainplan's FLOPs over the predicted time plus the causal square's other half,
  // 3 × GBS × 32 layers × 32 heads × 8192² × (128 + 128), which flash does not execute.
  const trainplan::validation_row& alone = r.rows[1];
  EXPECT_TRUE(alone.by_tflops);
  EXPECT_TRUE(r.rows[2].by_tflops);
  const trainplan::time_report t = trainplan::estimate_time(trainplan::parse_job_args(alone.args).job);
  const double extra = 3.0 * 128 * 32 * 32 * 8192.0 * 8192.0 * (128 + 128);
  EXPECT_NEAR(alone.predicted_tflops, t.model_tflops_per_gpu + extra / (t.iteration_s * 8 * 1e12), 1e-9 * alone.predicted_tflops);
}

TEST(ValidatePublishedSchema, ACatalogModelStandsForTheShapeColumnsWhenTheyAgree) {
  // A row may name a catalog model (column catalog_model; the shipped MoE rows take it from
  // published-conditions.csv): planned as that model at the row's sequence, once the shape columns the
  // row fills agree with it; a mismatch or an unknown name skips the row, naming the column.
  const std::string header =
      "row,source,model,num_layers,hidden_size,num_attention_heads,num_query_groups,moe_experts,moe_topk,ffn_hidden_size,"
      "vocab_size,seq_length,gpu_type,num_gpus,gpus_per_node,tp,pp,ep,micro_batch_size,global_batch_size,precision,"
      "tokens_per_s_per_gpu,catalog_model\n";
  auto run = [&](const std::string& layers, const std::string& name) {
    const std::string text = header + "1,bench,GPT-OSS,"+ layers + ",2880,64,8,128,4,2880 per expert,201088,4096,H100-SXM 80GB,"
                             "64,8,1,4,8,1,1280,BF16,5824," + name + "\n";
    return trainplan::run_validation(trainplan::read_measurements(text, "mine.csv")).rows.at(0);
  };
  const trainplan::validation_row ok = run("36", "gpt-oss-120b");
  ASSERT_TRUE(ok.skipped.empty()) << ok.skipped;
  EXPECT_NE(std::find(ok.args.begin(), ok.args.end(), "gpt-oss-120b"), ok.args.end());
  EXPECT_EQ(std::find(ok.args.begin(), ok.args.end(), "--ffn-hidden-size"), ok.args.end());  // "2880 per expert" unread
  EXPECT_EQ(ok.group, "H100 BF16 MoE");
  EXPECT_EQ(run("24", "gpt-oss-120b").skipped, "column 'num_layers': 24 is not catalog model gpt-oss-120b's 36");
  EXPECT_THAT(run("36", "gpt-oss-1t").skipped, ::testing::StartsWith("column 'catalog_model': "));
}

TEST(ValidatePublishedSchema, AnMoeRowsFfnAndMlaColumnsAreCheckedAgainstTheCatalogModel) {
  // The given tables write an MoE row's FFN as "<dense> dense / <expert> per expert" and MLA's query groups
  // as "MLA" (DeepSeek-V3, rows 112 and 118); both are checked against the catalog model the conditions name.
  const std::string header =
      "row,model,num_layers,hidden_size,num_attention_heads,num_query_groups,moe_experts,moe_topk,ffn_hidden_size,"
      "seq_length,gpu_type,num_gpus,gpus_per_node,tp,pp,ep,micro_batch_size,global_batch_size,precision,"
      "tokens_per_s_per_gpu,catalog_model\n";
  auto run = [&](const std::string& groups, const std::string& ffn, const std::string& name) {
    const std::string text = header + "1,m,61,7168,128," + groups + ",256,8," + ffn +
                             ",4096,H100-SXM 80GB,256,8,1,1,32,1,256,BF16,1000," + name + "\n";
    return trainplan::run_validation(trainplan::read_measurements(text, "mine.csv")).rows.at(0);
  };
  const trainplan::validation_row ok = run("MLA", "18432 dense / 2048 per expert", "deepseek-v3");
  EXPECT_EQ(ok.skipped, "");
  EXPECT_EQ(run("MLA", "18432 dense / 1536 per expert", "deepseek-v3").skipped,
            "column 'ffn_hidden_size': 18432 dense / 1536 per expert is not catalog model deepseek-v3's 2048 per expert");
  EXPECT_EQ(run("MLA", "12288 dense / 2048 per expert", "deepseek-v3").skipped,
            "column 'ffn_hidden_size': 12288 dense / 2048 per expert is not catalog model deepseek-v3's 18432 dense");
  EXPECT_EQ(run("MLA", "2048 per expert", "deepseek-v3").skipped, "");
  EXPECT_EQ(run("8", "18432 dense / 2048 per expert", "deepseek-v3").skipped,
            "column 'num_query_groups': 8 is not catalog model deepseek-v3's 128");
}

namespace trainplan {
namespace {

validation_row band_row(const char* generation, const char* framework, double error) {
  validation_row v;
  v.generation = generation;
  v.framework = framework;
  v.error = error;
  return v;
}

TEST(ExpectedError, EightiethPercentileOfTheRunsOfItsKindWithFallbacks) {
  // Issue 28: the |error| that 80% of the validated runs of a prediction's kind stayed within (nearest
  // rank), read from its generation and framework when 5 or more ran, else its generation, else its GPU.
  validation_report r;
  for (double e : {0.01, -0.02, 0.03, -0.04, 0.05, 0.06, -0.07, 0.08, 0.09, -0.10}) {
    r.rows.push_back(band_row("H100 FP8", "megatron", e));
  }
  for (double e : {0.2, 0.3}) r.rows.push_back(band_row("H100 FP8", "fsdp", e));
  for (double e : {0.5, 0.5, 0.5, 0.5, 0.5}) r.rows.push_back(band_row("H100 BF16", "megatron", e));
  validation_row skipped = band_row("H100 FP8", "megatron", 9.0);
  skipped.skipped = "no vocabulary";
  r.rows.push_back(skipped);
  const error_band a = expected_error(r, "H100 FP8", "megatron");
  EXPECT_EQ(a.runs, 10);                    // the skipped row is not a run
  EXPECT_DOUBLE_EQ(a.p80_abs_error, 0.08);  // the 8th of 10 sorted |errors|
  EXPECT_EQ(a.scope, "H100 FP8, megatron");
  const error_band b = expected_error(r, "H100 FP8", "fsdp");  // 2 FSDP runs: the generation's 12
  EXPECT_EQ(b.runs, 12);
  EXPECT_EQ(b.scope, "H100 FP8");
  EXPECT_DOUBLE_EQ(b.p80_abs_error, 0.10);  // ceil(9.6) = 10th of 12; 0.2 and 0.3 lie above it
  const error_band c = expected_error(r, "H100 FP16", "megatron");  // no FP16 run: every H100 run, 17
  EXPECT_EQ(c.runs, 17);
  EXPECT_EQ(c.scope, "H100");
  EXPECT_EQ(expected_error(r, "B200 FP8", "megatron").runs, 0);
  EXPECT_EQ(expected_error(r, "", "megatron").runs, 0);
  // MoE runs are banded by MoE runs alone, never by the dense runs of their GPU: with fewer than 5 there
  // is no band, and the scope says what was sought.
  const error_band d = expected_error(r, "H100 FP8 MoE", "megatron");
  EXPECT_EQ(d.runs, 0);
  EXPECT_EQ(d.scope, "H100 FP8 MoE");
  for (double e : {0.4, -0.3, 0.2, 0.45, -0.35}) r.rows.push_back(band_row("H100 BF16 MoE", "megatron", e));
  const error_band m = expected_error(r, "H100 FP8 MoE", "megatron");  // the H100 MoE runs of any precision
  EXPECT_EQ(m.runs, 5);
  EXPECT_EQ(m.scope, "H100 MoE");
  EXPECT_DOUBLE_EQ(m.p80_abs_error, 0.40);
  EXPECT_EQ(expected_error(r, "H100 FP16", "megatron").runs, 17);  // and the dense band leaves them out
}

TEST(ExpectedError, TimeAndSearchCarryTheBandOfTheShippedValidation) {
  // The shipped validation's band for BLOOM's production job (A100 BF16, DeepSpeed), as `time` prints it.
  const parsed_job pj = parse_job_args({"--preset", "bloom-176b-production"});
  EXPECT_EQ(generation_of_job(pj.job), "A100 BF16");
  const error_band band = expected_error_of(pj.job);
  EXPECT_EQ(band.scope, "A100 BF16, deepspeed");
  EXPECT_GE(band.runs, 20);
  EXPECT_GT(band.p80_abs_error, 0.0);
  EXPECT_LT(band.p80_abs_error, 0.15);
  // Which generation a job's GPU is: the H800 and H200 are H100s to the model; an MI300X has none.
  EXPECT_EQ(generation_of_job(parse_job_args({"--model", "llama3-8b", "--gpu", "h200-sxm-141gb", "--num-gpus", "8",
                                              "--fp8-format", "hybrid"})
                                  .job),
            "H100 FP8");
  EXPECT_EQ(generation_of_job(parse_job_args({"--model", "llama3-8b", "--gpu", "mi300x", "--num-gpus", "8"}).job), "");
  EXPECT_EQ(generation_of_job(parse_job_args({"--model", "mixtral-8x7b", "--gpu", "h100-sxm5-80gb", "--num-gpus", "8",
                                              "--bf16"})
                                  .job),
            "H100 BF16 MoE");
  // The reports carry it: time's text and JSON, and a search's note on the rows it does not order.
  const run_context ctx = time_context(pj);
  EXPECT_EQ(ctx.expected_error.scope, band.scope);
  const std::string text = make_reporter(output_format::text)->time(ctx, estimate_time(pj.job));
  EXPECT_THAT(text, ::testing::HasSubstr("expected error"));
  EXPECT_THAT(text, ::testing::HasSubstr("validated runs, A100 BF16, deepspeed"));
  const std::string json_text = make_reporter(output_format::json)->time(ctx, estimate_time(pj.job));
  EXPECT_THAT(json_text, ::testing::HasSubstr("\"p80_abs_error\""));
  // A search says which of its first rows lie within the band of row 1's time (Llama-3 8B on 64 H100s,
  // ±14%: many), or that row 1 leads row 2 by more (BLOOM's default search, ±4%: row 1 leads by 6%).
  auto check = [](const search_request& req) {
    const search_result found = run_search(req.base.job, req.space);
    const run_context sc = search_context(req, found);
    for (std::int64_t i = 0; i < sc.rows_within_expected_error; ++i) {
      EXPECT_LE(found.candidates[static_cast<std::size_t>(i)].iteration_s,
                found.candidates.front().iteration_s * (1 + sc.expected_error.p80_abs_error));
    }
    const auto next = static_cast<std::size_t>(sc.rows_within_expected_error);
    if (next < found.candidates.size()) {
      EXPECT_GT(found.candidates[next].iteration_s,
                found.candidates.front().iteration_s * (1 + sc.expected_error.p80_abs_error));
    }
    const std::string text = make_reporter(output_format::text)->search(sc, req.space, found);
    if (sc.rows_within_expected_error > 1) {
      EXPECT_THAT(text, ::testing::HasSubstr("Rows 1-" + std::to_string(sc.rows_within_expected_error) + " lie within the ±"));
    } else {
      EXPECT_THAT(text, ::testing::HasSubstr("Row 1 leads row 2 by more than the ±"));
    }
    return sc.rows_within_expected_error;
  };
  EXPECT_GT(check(parse_search_request({"--model", "llama3-8b", "--cluster", "dgx-h100", "--num-gpus", "64", "--gbs", "512",
                                        "--bf16"})),
            1);
  EXPECT_EQ(check(parse_search_request({})), 1);
}

}  // namespace
}  // namespace trainplan

namespace trainplan {
namespace {

// §5.8: leave-one-source-out over the runs the A100 constants were fitted on. Each BLOOM measurement
// day (and the production log lines) is predicted by the tile fraction and host time refitted on the
// others; the out-of-sample median stays near the in-sample one (2026-11-26: 4.3% against 3.8%).
TEST(ValidateLeaveOneSourceOut, EverySourcePredictedByTheOthersFit) {
  validation_report r = shipped_validation();
  leave_one_source_out(r);
  const loso_report& l = r.loso;
  ASSERT_EQ(l.folds.size(), 10u);  // 9 days of the prequel table, the production log lines
  std::int64_t rows = 0;
  for (const loso_fold& f : l.folds) {
    rows += f.rows;
    EXPECT_GE(f.tile_fraction, l.tile_first - 1e-12) << f.source;
    EXPECT_LE(f.tile_fraction, l.tile_first + l.tile_step * static_cast<double>(l.tile_count - 1) + 1e-12) << f.source;
    EXPECT_GE(f.host_ms, l.host_first_ms - 1e-12) << f.source;
  }
  EXPECT_EQ(rows, 136);
  EXPECT_DOUBLE_EQ(l.shipped_tile_fraction, 0.80);
  EXPECT_DOUBLE_EQ(l.shipped_host_ms, 2.5);
  EXPECT_GE(l.median_abs_error, l.shipped_median_abs_error - 0.005);  // out of sample is not better by chance
  EXPECT_LT(l.median_abs_error, 0.06);
  // Rendered by the reporters (text, JSON) only when computed.
  const std::string text = make_reporter(output_format::text)->validation(r);
  EXPECT_THAT(text, ::testing::HasSubstr("Leave-one-source-out over BLOOM's tables"));
  EXPECT_THAT(make_reporter(output_format::text)->validation(shipped_validation()),
              ::testing::Not(::testing::HasSubstr("Leave-one-source-out")));
  // A group of no predicted row shows no figure (not a perfect 0.0%), one of one row no rank correlation.
  validation_report with_empty = shipped_validation();
  with_empty.generations.push_back(validation_stats{.name = "A100 FP8 MoE, held out"});
  EXPECT_THAT(make_reporter(output_format::text)->validation(with_empty),
              ::testing::AllOf(::testing::HasSubstr("A100 FP8 MoE, held out              0 rows  median |error|     —  "
                                                    "max     —  Spearman     —"),
                               ::testing::ContainsRegex("H100 BF16 MoE, held out +1 rows  median \\|error\\| +[0-9.]+%  "
                                                        "max +[0-9.]+%  Spearman     —")));
}

// §5.6: the one default fitted on a published source, Blackwell's attention plateaus (0.74 × Hopper's, on
// NeMo 25.04's four B200 long-sequence rows). Left out, nothing constrains it and it falls back to Hopper's
// curve: those rows are then 6-26% too fast (median 23.5%) where in sample they are within 1.3%.
TEST(ValidateLeaveOneSourceOut, TheBlackwellAttentionSourcePredictedWithoutItsFit) {
  validation_report r = shipped_validation();
  leave_one_source_out(r);
  ASSERT_EQ(r.loso.published.size(), 1u);
  const published_fold& f = r.loso.published.front();
  EXPECT_EQ(f.rows, 4);
  EXPECT_DOUBLE_EQ(f.shipped_value, 0.74);
  EXPECT_DOUBLE_EQ(f.refit_value, 1.0);
  EXPECT_NEAR(f.median_abs_error, 0.235, 0.01);
  EXPECT_NEAR(f.max_abs_error, 0.263, 0.01);
  EXPECT_LT(f.shipped_max_abs_error, 0.02);
  // The in-sample figures are the shipped validation's own rows of that source.
  for (const validation_stats& s : r.sources) {
    if (s.name == f.source) {
      EXPECT_DOUBLE_EQ(s.median_abs_error, f.shipped_median_abs_error);
    }
  }
  EXPECT_THAT(make_reporter(output_format::text)->validation(r),
              ::testing::HasSubstr("Leave-one-source-out for the default fitted on a published source"));
  EXPECT_THAT(make_reporter(output_format::json)->validation(r),
              ::testing::HasSubstr("\"leave_one_published_source_out\""));
}

// Issue 28's leave-one-source-out target: every published source of five runs or more within 10% median.
// No constant is fitted on any of them (Blackwell's attention, the one fitted on a published source, is
// fitted on NeMo's four B200 rows), so each source's own figure is its left-out one. torchtitan's Dec-2024
// table came under it on 2026-12-02 (12.8% → 8.7%), when the attention took the sustained clock (§5.6).
TEST(Validate, EveryPublishedSourceOfFiveRunsIsWithinTenPercent) {
  const validation_report r = shipped_validation();
  int sources = 0;
  for (const validation_stats& s : r.sources) {
    if (s.rows < 5) continue;
    ++sources;
    EXPECT_LE(s.median_abs_error, 0.10) << s.name;
    for (const published_fold& f : r.loso.published) EXPECT_NE(f.source, s.name) << "fitted on: " << s.name;
  }
  EXPECT_EQ(sources, 9);
}

// The JSON gives each row the job flags it was planned with, so that a row can be rerun with `trainplan time`.
TEST(Validate, JsonRowsCarryTheirJobFlags) {
  const validation_report r = shipped_validation();
  const auto j = nlohmann::json::parse(make_reporter(output_format::json)->validation(r));
  bool found = false;
  for (const auto& row : j["validation"]["rows"]) {
    if (row["row"] != "115") continue;
    found = true;
    const std::vector<std::string> flags = row["flags"].get<std::vector<std::string>>();
    EXPECT_THAT(flags, ::testing::Contains("--moe-grouped-gemm"));
    const std::vector<std::string> model = {"--model", "gpt-oss-120b"};
    EXPECT_NE(std::search(flags.begin(), flags.end(), model.begin(), model.end()), flags.end());
  }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace trainplan
