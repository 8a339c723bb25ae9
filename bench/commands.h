// trainplan-bench's subcommands: their options and the work each does (measure, render, write the
// profile). bench/main.cc parses the command line into these and maps errors to exit statuses.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "launch.h"

namespace trainplan::bench {

inline constexpr int kExitSlow = 1;      ///< slow ranks found, or wrong elements
inline constexpr int kExitInternal = 4;  ///< CUDA, cuBLAS, NCCL or internal error

/// Set once every flag is checked and the first measurement or rank-to-rank exchange starts. Errors
/// before it are the same on every rank (rank 0 reports, all exit 2); after it they are this rank's own
/// (it reports with its name, and the job is ended so that no peer waits for it).
bool measuring_started();

/// Prints `text` on rank 0 (every rank computes the same result; one prints it).
void emit(const world_info& w, const std::string& text);

struct common_options {
  std::string format = "text";
  bool json = false;
  bool csv = false;
  double timeout_s = 60;
  std::string backend = "auto";
  std::string calibration_out;
  std::vector<std::string> job_args;  ///< the planner's job flags, after "--"
};

struct gemm_options {
  std::vector<std::string> dtypes{"bf16"};
  std::int64_t grid_min = 1024, grid_max = 16384;
  bool grid = false;
  std::vector<std::string> shapes;  ///< --shapes MxNxK[xB]
  int warmup = 5, samples = 20, algorithms = 8;
  bool no_reference = false;
  int device = -1;
};

struct sweep_flags {
  std::vector<std::string> ops;
  std::string min_bytes = "1K", max_bytes, step_factor;
  int warmup = 5, iters = 20;
  bool no_check = false;
};

struct health_flags {
  double threshold_pct = 3;
  int repeats = 5;
  double z_score = 3;
  std::string inject_slowdown;
  std::int64_t inject_hang = -1;
  bool serial = false;
};

struct memory_flags {
  std::int64_t buffer_mib = 1024;
  int samples = 20;
};

struct all_options {
  common_options common;
  gemm_options gemm;
  memory_flags memory;
  sweep_flags sweep;
  health_flags health;
};

int run_gemm(const world_info& w, all_options& o);
int run_memory(const world_info& w, all_options& o);
int run_collectives(const world_info& w, all_options& o);
int run_health_cmd(const world_info& w, all_options& o);
int run_calibrate(const world_info& w, all_options& o);

}  // namespace trainplan::bench
