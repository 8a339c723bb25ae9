// `trainplan validate`: the measurement tables read into rows, each row's job built from its flags and
// predicted (docs/formulas.md §5.8); the rows' types and statistics are the core's (validation.h).
#pragma once

#include <string>
#include <vector>

#include "trainplan/core/validate/validation.h"

namespace trainplan {

/// Rows of a measurement CSV in the columns of the shipped tables (bloom-prequel or bloom-final
/// columns; hidden, layers or size_label, heads, tp, pp, dp or gpus, mbs, gbs, zero_stage, precision,
/// sec_per_iter). Unstated layers: the multiple of PP whose parameter count is nearest the size
/// label; unstated heads: 96 (the 2022-02-17 200B config). Throws input_error naming file:line.
std::vector<validation_row> read_measurements(const std::string& csv_text, const std::string& table);

/// Predict every row and gather the statistics.
validation_report run_validation(std::vector<validation_row> rows);

/// The shipped tables (embedded in the binary).
validation_report validate_shipped();

/// Leave-one-source-out (§5.8) over `r`'s BLOOM rows, the runs the A100 constants were fitted on: for
/// each source (a measurement day of the prequel table, the production log lines), the large-GEMM tile
/// fraction and DeepSpeed's host time per layer pass refitted on the other sources (the grid point of
/// least median |error|), and the held-out rows predicted with them. Fills r.loso.
void leave_one_source_out(validation_report& r);

/// validate_shipped's report, computed once per process (the expected error of every prediction reads it).
const validation_report& shipped_validation();

/// The error band the shipped validation gives a job's prediction (issue 28, §5.8).
error_band expected_error_of(const job_spec& job);

}  // namespace trainplan
