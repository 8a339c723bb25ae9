// Predicted against measured iteration times over measurement tables (docs/formulas.md §5.8).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace trainplan {

/// One measured run and what the model predicts for it.
struct validation_row {
  std::string table;               ///< file the row comes from
  std::string group;               ///< seed table it belongs to ("" when none)
  std::string label;               ///< source line or source
  std::string date;
  std::vector<std::string> args;   ///< job flags reproducing the row
  double measured_s = 0;
  double measured_tflops = 0;
  /// The source gives model TFLOPs per GPU but no time (Megatron-Core and NeMo tables): the row compares
  /// TFLOPs, error = measured / predicted model TFLOPs − 1 (positive: predicted slower, as for times).
  bool by_tflops = false;
  bool hardware_tflops = false;    ///< the source's TFLOPs count recomputation (Narayanan et al. eq. 3)
  std::string assumed;             ///< conditions the source does not state, as the row's `assumed` column gives them
  double environment_factor = 1;   ///< documented slowdown of the row's environment (§5.8)
  double predicted_s = 0;          ///< model × environment factor
  double predicted_tflops = 0;     ///< as Megatron reports it at the predicted time
  double error = 0;                ///< predicted / measured − 1
  std::string skipped;             ///< why the row has no prediction ("" when it has one)
};

/// Rank correlation and errors of a set of rows.
struct validation_stats {
  std::string name;
  std::int64_t rows = 0;
  double median_abs_error = 0;
  double max_abs_error = 0;
  double spearman = 0;             ///< NaN-free: 1 for fewer than 2 distinct values
};

struct validation_report {
  std::vector<validation_row> rows;
  std::vector<validation_stats> tables;  ///< per file
  std::vector<validation_stats> groups;  ///< per seed table (rows measured together, one thing varied)
  /// Published rows per GPU generation and precision ("H100 BF16", ...): issue 9's targets are per generation.
  std::vector<validation_stats> generations;
  validation_stats overall;
};

/// Spearman rank correlation (average ranks for ties).
double spearman(const std::vector<double>& a, const std::vector<double>& b);

/// Rows of a measurement CSV in the columns of the shipped tables (bloom-prequel or bloom-final
/// columns; hidden, layers or size_label, heads, tp, pp, dp or gpus, mbs, gbs, zero_stage, precision,
/// sec_per_iter). Unstated layers: the multiple of PP whose parameter count is nearest the size
/// label; unstated heads: 96 (the 2022-02-17 200B config). Throws input_error naming file:line.
std::vector<validation_row> read_measurements(const std::string& csv_text, const std::string& table);

/// Predict every row and gather the statistics.
validation_report run_validation(std::vector<validation_row> rows);

/// The shipped tables (embedded in the binary).
validation_report validate_shipped();

}  // namespace trainplan
