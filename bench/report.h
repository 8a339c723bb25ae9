// trainplan-bench's renderers: text tables with units, JSON (schema_version, the run's context) and CSV.
// They format what the measurements returned and compute nothing (docs/bench.md "Output").
#pragma once

#include <string>
#include <vector>

#include "gpu.h"
#include "measure.h"

namespace trainplan::bench {

inline constexpr int kBenchSchemaVersion = 1;

enum class output_format { text, json, csv };

/// Who ran what, carried into every JSON output.
struct run_context {
  std::string command;      ///< "gemm", "memory", "collectives", "health", "calibrate"
  std::string backend;      ///< "nccl", "mpi", "cuda"
  std::string launcher;
  std::int64_t world = 1;
  std::int64_t nodes = 1;
  std::string host;
  std::string mpi_version;
  std::string library_version;  ///< NCCL or MPI for collectives
  std::string modelled_cluster; ///< collectives: the cluster whose model gives the predicted times
  std::string created_utc;
};

/// One GEMM, measured and predicted.
struct gemm_row {
  gemm_result measured;
  double flops_per_s = 0;             ///< fastest candidate
  double heuristic_flops_per_s = 0;   ///< the heuristic's first choice
  double reference_flops_per_s = 0;   ///< cublasGemmEx; 0 when not timed
  double peak_flops_per_s = 0;        ///< the catalog's dense peak for the precision; 0 when unknown
  double efficiency = 0;              ///< measured / peak
  double predicted_efficiency = 0;    ///< the planner's estimate_gemm (uncalibrated); 0 when unknown
};
struct gemm_report {
  gpu_device_info gpu;
  std::vector<gemm_row> rows;
};

struct memory_row {
  copy_result measured;
  double datasheet_bytes_per_s = 0;  ///< HBM bandwidth for device_to_device; 0 otherwise
  double fraction = 0;               ///< measured / datasheet
};
struct memory_report {
  gpu_device_info gpu;
  std::vector<memory_row> rows;
};

std::string render_gemm(const run_context& ctx, const gemm_report& r, output_format f);
std::string render_memory(const run_context& ctx, const memory_report& r, output_format f);
std::string render_collectives(const run_context& ctx, const std::vector<collective_row>& rows, output_format f);
std::string render_health(const run_context& ctx, const health_report& r, output_format f);

}  // namespace trainplan::bench
