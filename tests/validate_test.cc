// `trainplan validate` on measurement tables (docs/formulas.md §5.8): reading rows, the statistics, and
// every bad row named by file:line and column.
#include "trainplan/validate.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "trainplan/error.h"

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

}  // namespace
}  // namespace trainplan
