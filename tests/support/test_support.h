// Helpers shared by the validation tests: CSV rows and BLOOM-prequel layouts as job flags.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "trainplan/cli/args.h"

namespace trainplan::testing {

using csv_row = std::map<std::string, std::string>;

/// Path of a file under tests/data.
std::string data_path(const std::string& name);

/// Rows of a CSV file with a header line; quoted fields may hold commas.
std::vector<csv_row> read_csv(const std::string& path);

/// Layers of a bloom-prequel row. Rows of 2022-02-20 do not state them ("layers tweaked per PP and not
/// stated; size label only"): we take the multiple of PP whose parameter count (hidden 14400,
/// vocabulary 250,880, tied embeddings, embedding norm) is nearest the size label, which gives
/// 80, 80, 78, 77, 80, 81, 80, 77, 72 layers for PP 4..12 (docs/formulas.md §3.10).
std::int64_t bloom_row_layers(const csv_row& row);

/// Heads of a bloom-prequel row; rows that do not state them used the 200B config of 2022-02-17
/// (96 heads), which we assume.
std::int64_t bloom_row_heads(const csv_row& row);

/// Job flags reproducing a bloom-prequel row: Megatron-DeepSpeed, ZeRO stage as stated, full
/// recomputation, sequence 2048, vocabulary 250,880, ALiBi, tied embeddings with embedding norm, fp16
/// or bf16 as stated, each embedding its own pipeline slot where the notes say so. The world size is the
/// row's GPU count (row 518 states DP 8 with 320 GPUs; the seed says 40 nodes, so DP is 4).
std::vector<std::string> bloom_row_args(const csv_row& row);

/// Flags of the production layout of bloom-final-measurements.csv (the preset, spelled out).
std::vector<std::string> bloom_production_args();

}  // namespace trainplan::testing
