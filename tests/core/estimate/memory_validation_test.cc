// Memory against measurements (docs/formulas.md §3.10): seeds/003's four peaks, every BLOOM-prequel row
// with a memory figure, and Megatron-LM's own theoretical formula side by side.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <set>

#include "test_support.h"
#include "trainplan/cli/cli.h"
#include "trainplan/core/estimate/memory.h"

namespace trainplan {
namespace {

constexpr double kGiB = 1073741824.0;

/// seeds/003's GPT (tests/data/seed-003-memory-measurements.csv). The table does not state sequence,
/// vocabulary or FFN size; we assume what its printed example uses and what the table is consistent
/// with: sequence 2048, vocabulary padded to 50,432, Megatron's SwiGLU FFN rule (10,880), learned
/// positions, biases, tied embeddings, dropout 0.1, legacy Megatron (unfused SwiGLU, flash attention
/// through flash_attn with rearranged copies), on 8 × H800 (H100-80GB memory).
std::vector<std::string> seed003_args(const testing::csv_row& row) {
  return {"--num-layers", "32", "--hidden-size", "4096", "--num-attention-heads", "32", "--seq-length", "2048",
          "--max-position-embeddings", "2048", "--padded-vocab-size", "50432", "--swiglu", "--use-flash-attn",
          "--use-legacy-models",  // the seed's trace shows legacy Megatron's rearrange after core_attention_flash
          "--use-distributed-optimizer", "--bf16", "--no-bias-swiglu-fusion", "--gpu", "h100-sxm5-80gb",
          "--gpus-per-node", "8", "--num-gpus", "8", "--mbs", row.at("mbs"), "--gbs", row.at("gbs"), "--tp", row.at("tp"),
          "--pp", row.at("pp")};
}

TEST(MemoryValidation, Seed003PeakAllocatedWithin3Percent) {
  const auto rows = testing::read_csv(testing::data_path("seed-003-memory-measurements.csv"));
  ASSERT_EQ(rows.size(), 4u);
  for (const auto& row : rows) {
    const parsed_job pj = parse_job_args(seed003_args(row));
    ASSERT_EQ(pj.job.parallel.dp, std::stoll(row.at("dp")));
    const memory_report r = estimate_memory(pj.job);
    // The tool's "GB" are GiB: it printed 12.4GB for 6.64e9 bf16 weights (13.3e9 bytes).
    const double measured = std::stod(row.at("peak_memory_actual_gb")) * kGiB;
    const double err = (r.peak_allocated_bytes - measured) / measured;
    std::printf("seed-003 DP%s TP%s PP%s MBS%s: predicted %.2f GiB, measured %s GiB (%+.2f%%)\n", row.at("dp").c_str(),
                row.at("tp").c_str(), row.at("pp").c_str(), row.at("mbs").c_str(), r.peak_allocated_bytes / kGiB,
                row.at("peak_memory_actual_gb").c_str(), 100 * err);
    EXPECT_LT(std::fabs(err), 0.03) << "DP" << row.at("dp") << " TP" << row.at("tp") << " PP" << row.at("pp");
  }
}

TEST(MemoryValidation, Seed003OursAgainstMegatronTheoretical) {
  // Where Megatron's formula applies (no SP, no selective recompute: its generic branch), compare
  // both with the measurement; its weight term must agree with ours, its activations are lower
  // (it prices a GELU 34·sbh layer, not flash + SwiGLU); docs/formulas.md §3.9.
  for (const auto& row : testing::read_csv(testing::data_path("seed-003-memory-measurements.csv"))) {
    const parsed_job pj = parse_job_args(seed003_args(row));
    const memory_report ours = estimate_memory(pj.job);
    const megatron_theoretical_memory theirs = megatron_theoretical(pj.job);
    const auto& peak = ours.stages[static_cast<std::size_t>(ours.peak_stage)];
    const double our_states = peak.weights_bytes + peak.gradients_bytes + peak.optimizer_bytes;
    // Theirs splits every parameter by TP and leaves out biases and position embeddings (replicated
    // norms/biases/positions are 1.1% of a TP 8 shard here).
    EXPECT_NEAR(theirs.weight_and_optimizer_bytes / our_states, 1.0, pj.job.parallel.tp == 1 ? 0.005 : 0.02);
    const double measured = std::stod(row.at("peak_memory_actual_gb")) * kGiB;
    std::printf("DP%s TP%s PP%s: ours %.2f GiB, Megatron theoretical %.2f GiB, measured %.2f GiB\n",
                row.at("dp").c_str(), row.at("tp").c_str(), row.at("pp").c_str(), ours.peak_allocated_bytes / kGiB,
                theirs.total() / kGiB, measured / kGiB);
    EXPECT_LT(std::fabs(ours.peak_allocated_bytes - measured), std::fabs(theirs.total() - measured));
  }
}

/// Rows whose measurements contradict the seed's own measurements of the same layout; each is held
/// to a looser bound and the reason is docs/formulas.md §3.10's.
const std::set<std::string> kContradicted = {
    "506",  // 84 layers DP8 TP8 PP6: MBS 2 measured 65 GB, MBS 4 (line 507) 56 GB: memory fell as MBS doubled
    "636",  // same layout and day as line 635 (44 GB), measured 38 GB
    "535",  // ZeRO stage 0 "on the special branch" the seed says it could not retest on master
};

TEST(MemoryValidation, BloomPrequelReservedWithin15Percent) {
  const auto rows = testing::read_csv(testing::data_path("bloom-prequel-measurements.csv"));
  int checked = 0;
  double worst = 0;
  for (const auto& row : rows) {
    const std::string mem = row.at("mem_gb");
    if (mem.empty() || mem == "OOM") continue;
    const parsed_job pj = parse_job_args(testing::bloom_row_args(row));
    const memory_report r = estimate_memory(pj.job);
    // nvidia-smi of the first and last node: the stages holding the embeddings.
    const double predicted = std::max(r.stages.front().reserved_bytes, r.stages.back().reserved_bytes);
    const double measured = std::stod(mem) * kGiB;  // nvidia-smi MiB / 1024, written "GB"
    const double err = (predicted - measured) / measured;
    const std::string& line = row.at("source_line");
    if (kContradicted.count(line) != 0) {
      EXPECT_LT(std::fabs(err), 0.35) << "line " << line;
      continue;
    }
    worst = std::max(worst, std::fabs(err));
    EXPECT_LT(std::fabs(err), 0.15) << "line " << line << ": predicted " << predicted / kGiB << " GiB, measured " << mem;
    ++checked;
  }
  std::printf("BLOOM prequel: %d rows within 15%%, worst %.1f%% (3 contradicted rows held to 35%%)\n", checked,
              100 * worst);
  EXPECT_EQ(checked, 92);
}

TEST(MemoryValidation, BloomPrequelOomRowsDoNotFit) {
  int oom = 0;
  for (const auto& row : testing::read_csv(testing::data_path("bloom-prequel-measurements.csv"))) {
    if (row.at("mem_gb") != "OOM") continue;
    const memory_report r = estimate_memory(parse_job_args(testing::bloom_row_args(row)).job);
    if (row.at("source_line") == "761") {
      // 82 layers, MBS 2 went OOM while 70 layers at MBS 4 (line 756) ran at 73 GB on the same day: one
      // more layer per stage costs ~7 GB against ~14 GB for doubling MBS (lines 753→756), so no model
      // consistent with line 756 puts line 761 over 80 GB. We predict it fits with the least headroom
      // of its day's 82-layer class and say so (docs/formulas.md §3.10).
      EXPECT_TRUE(r.fits);
      EXPECT_LT(r.stages[0].headroom_bytes / r.capacity_bytes, 0.30);
      continue;
    }
    EXPECT_FALSE(r.fits) << "line " << row.at("source_line") << " predicted " << r.peak_reserved_bytes / kGiB;
    ++oom;
  }
  EXPECT_EQ(oom, 5);
}

TEST(MemoryValidation, BloomTooCloseToOomHasUnder5PercentHeadroom) {
  for (const auto& row : testing::read_csv(testing::data_path("bloom-prequel-measurements.csv"))) {
    if (row.at("notes").find("too close to OOM") == std::string::npos) continue;
    const memory_report r = estimate_memory(parse_job_args(testing::bloom_row_args(row)).job);
    const auto& peak = r.stages[static_cast<std::size_t>(r.peak_stage)];
    EXPECT_TRUE(r.fits) << "it ran";
    EXPECT_LT(peak.headroom_bytes / r.capacity_bytes, 0.05);
    return;
  }
  FAIL() << "no 'too close to OOM' row";
}

TEST(MemoryValidation, RowsWithUnstatedLayersResolveFromSizeLabels) {
  // Lines 388-396: PP 4..12 with the size label only.
  const std::vector<std::int64_t> expected = {80, 80, 78, 77, 80, 81, 80, 77, 72};
  std::vector<std::int64_t> got;
  for (const auto& row : testing::read_csv(testing::data_path("bloom-prequel-measurements.csv"))) {
    const int line = std::stoi(row.at("source_line"));
    if (line >= 388 && line <= 396) got.push_back(testing::bloom_row_layers(row));
  }
  EXPECT_EQ(got, expected);
}

}  // namespace
}  // namespace trainplan
