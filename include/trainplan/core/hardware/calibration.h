// Calibration profiles: what trainplan-bench measured on a real cluster, in the format of
// docs/calibration.md. The core reads and writes the format; only the bench measures; how the planner
// applies a profile is the estimators' (trainplan/core/estimate/calibration.h, docs/formulas.md §6.4).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "trainplan/core/hardware/collective.h"
#include "trainplan/core/hardware/hardware.h"

namespace trainplan {

/// Version of the profile format this build writes and reads.
inline constexpr int kCalibrationSchemaVersion = 1;

/// One measured GEMM: C[m×n] = A[m×k]·B[k×n], `batch` products, in `precision` (TN layout, fp32
/// accumulation; fp8 writes bf16).
struct measured_gemm {
  dtype precision = dtype::bf16;
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  std::int64_t batch = 1;
  double time_s = 0;       ///< one GEMM, median over the timed samples
  double flops_per_s = 0;  ///< 2·m·n·k·batch / time_s
};

/// One size of a collective's sweep, as nccl-tests defines them (doc/PERFORMANCE.md).
struct measured_collective_point {
  double bytes = 0;              ///< nccl-tests' size S: the full buffer (all-gather: the gathered output)
  double time_s = 0;             ///< one operation, mean over iterations, averaged over ranks
  double algbw_bytes_per_s = 0;  ///< S / time
  double busbw_bytes_per_s = 0;  ///< algbw × bus_factor(kind, ranks)
};

/// Where a measured group's ranks sat: which link class its bus bandwidth describes.
enum class link_class { intra_node, inter_node };
std::string_view to_string(link_class c);

/// A size sweep of one collective over one group.
struct measured_collective {
  collective_kind kind = collective_kind::all_reduce;
  std::int64_t ranks = 1;           ///< group size
  std::int64_t nodes = 1;           ///< nodes the group spans
  link_class link = link_class::intra_node;  ///< inter_node when nodes > 1
  std::vector<measured_collective_point> points;
};

/// A whole profile. Fields left at zero (or empty) were not measured and leave the planner's default.
struct calibration_profile {
  int schema_version = kCalibrationSchemaVersion;
  std::string created_utc;        ///< ISO 8601
  std::string host;               ///< node the profile was written on (rank 0)
  std::string backend;            ///< "nccl" or "mpi"
  std::string gpu_name;           ///< as the driver names it ("NVIDIA H100 80GB HBM3"); "" on CPU runs
  std::string gpu_catalog_name;   ///< trainplan's name for it ("h100-sxm5-80gb"); "" when unknown
  std::int64_t sm_count = 0;
  std::string driver_version;
  std::string cuda_runtime_version;
  std::string cublaslt_version;
  std::string nccl_version;
  std::string mpi_version;
  std::vector<measured_gemm> gemms;
  double device_copy_bytes_per_s = 0;      ///< device-to-device copy, bytes read + bytes written per second
  double host_to_device_bytes_per_s = 0;   ///< pinned host memory
  double device_to_host_bytes_per_s = 0;
  std::vector<measured_collective> collectives;
};

/// The profile as JSON text (docs/calibration.md).
std::string calibration_to_json(const calibration_profile& p);
/// Parse a profile; errors are input_error "origin:line: …" for syntax and "origin: field.path: rule"
/// for content (a wrong schema_version, a negative time, an unknown dtype or collective).
calibration_profile parse_calibration(const std::string& text, const std::string& origin);
/// Read and parse a file; a missing file is an input_error naming it.
calibration_profile load_calibration(const std::string& path);


}  // namespace trainplan
