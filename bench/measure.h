// trainplan-bench's multi-rank measurements: collective sweeps and the health check. They return plain
// results on rank 0 (empty elsewhere); renderers (report.h) print them (docs/bench.md).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "backend.h"
#include "bench_stats.h"
#include "launch.h"

namespace trainplan::bench {

struct sweep_options {
  std::vector<collective_kind> ops;
  std::vector<std::int64_t> sizes_bytes;
  int warmup = 5;     ///< untimed ops per size (nccl-tests -w)
  int iters = 20;     ///< timed ops per size (nccl-tests -n); time = mean, averaged over ranks (-a 1)
  bool check = true;  ///< one checked op per size and mode (nccl-tests -c 1)
  double timeout_s = 60;
  bool progress = false;  ///< a progress line on stderr (rank 0, a TTY)
};

/// One size of one collective over one group, as nccl-tests prints it.
struct collective_row {
  std::string group = "world";   ///< "world", or the planner's dimension ("tp", "dp", "pp", ...)
  collective_kind kind = collective_kind::all_reduce;
  std::int64_t ranks = 1;
  std::int64_t nodes = 1;
  std::int64_t bytes = 0;        ///< nccl-tests' size S
  std::int64_t count = 0;        ///< float32 elements received per rank
  double time_s = 0;             ///< out-of-place
  double algbw_bytes_per_s = 0;
  double busbw_bytes_per_s = 0;
  bool has_in_place = false;
  double in_place_time_s = 0;
  double in_place_algbw_bytes_per_s = 0;
  double in_place_busbw_bytes_per_s = 0;
  std::int64_t errors = -1;      ///< wrong elements over every rank and mode; -1: not checked
  double predicted_s = 0;        ///< the planner's estimate for this group and size; 0: no job given
};

/// The planner's predicted seconds for a collective of `bytes` on this group (0 when there is no job).
using predictor = std::function<double(collective_kind kind, double bytes)>;

/// Sweeps every op and size on `be`'s group. `group_key` tells this rank's group from the others of
/// its dimension (times are averaged and errors summed per group) and `nodes` is how many nodes the
/// group spans. Every rank of the world calls it at once (all groups of a dimension together); rank 0
/// of `be` returns the rows. A rank that stops answering is named and the run ends with kExitHung.
std::vector<collective_row> run_sweep(const world_info& w, collective_backend& be, const sweep_options& o,
                                      const std::string& group, std::int64_t group_key, std::int64_t nodes,
                                      const predictor& predict, int& step);

/// One rank's health probes.
struct health_rank {
  std::int64_t rank = 0;
  std::string name;   ///< n<node>_g<gpu>
  std::string host;
  double gemm_flops_per_s = 0;    ///< the median of its repeats
  double gemm_spread = 0;         ///< the repeats' robust relative σ (bench_stats.h sample_summary)
  double memory_bytes_per_s = 0;  ///< copy, bytes read + written per second: the median of its repeats
  double memory_spread = 0;
  double sendrecv_busbw_bytes_per_s = 0;  ///< to the next rank, from the previous one
};

struct health_options {
  double threshold = 0.03;   ///< slower than the others' median by more than this fraction is named ...
  double z_score = 3;        ///< ... and by more than this many σ of the repeats' spread
  int repeats = 5;           ///< each probe, on each rank
  double timeout_s = 60;
  std::optional<slowdown_injection> slowdown;  ///< test aid
  std::int64_t hang_rank = -1;                 ///< test aid: this rank stops answering
  bool serial = false;  ///< ranks probe in turn (ranks sharing CPU cores or a GPU), not all at once
  bool progress = false;
};

struct health_report {
  std::string backend;            ///< "nccl" or "mpi"
  std::string gemm_probe;         ///< what the GEMM probe ran, in words
  std::string memory_probe;
  std::int64_t world = 0;
  std::int64_t nodes = 0;
  std::vector<health_rank> ranks;
  double all_reduce_bytes = 0;
  double all_reduce_time_s = 0;
  double all_reduce_busbw_bytes_per_s = 0;
  std::int64_t all_reduce_errors = 0;
  std::vector<slow_finding> slow_gemm;
  std::vector<slow_finding> slow_memory;
  double threshold = 0;
  double z_score = 0;
  int repeats = 0;
  bool on_gpu = false;            ///< false: the probes ran on the CPU (no CUDA device)
};

/// Connectivity (every rank allocates, meets, all-reduces a checked buffer), then the same GEMM,
/// memory and send/recv probes on every rank; rank 0 names ranks and nodes slower than the median.
health_report run_health(const world_info& w, collective_backend& be, bool gpu, const health_options& o);

}  // namespace trainplan::bench
