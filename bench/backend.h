// trainplan-bench: one interface for running collectives on NCCL (GPU memory) or MPI (host memory), so
// that the sweep, the timing and the correctness check are written once (docs/bench.md).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "bench_stats.h"
#include "launch.h"

namespace trainplan::bench {

/// Runs float32 sum collectives over one communicator. In-place follows NCCL's conventions: all-gather
/// input at the rank's slot of the output, reduce-scatter output at the rank's slot of the input.
class collective_backend {
 public:
  virtual ~collective_backend() = default;
  virtual std::string_view name() const = 0;  ///< "nccl" or "mpi"
  virtual std::int64_t rank() const = 0;      ///< in this communicator
  virtual std::int64_t size() const = 0;
  /// Whether the op has an in-place form here.
  virtual bool has_in_place(collective_kind kind) const = 0;
  /// Writes this rank's input (send_value) for one op of `c`.
  virtual void write_input(collective_kind kind, const buffer_counts& c, bool in_place,
                           const std::vector<float>& values) = 0;
  /// Clears the output to a sentinel that no correct result holds.
  virtual void clear_output(const buffer_counts& c) = 0;
  /// Reads back the output of one op of `c` (c.recv elements).
  virtual std::vector<float> read_output(collective_kind kind, const buffer_counts& c, bool in_place) = 0;
  /// Runs `iters` ops back to back and returns this rank's seconds per op; < 0 when they did not finish
  /// before `d`.
  virtual double run(collective_kind kind, const buffer_counts& c, bool in_place, int iters, const deadline& d) = 0;
  /// Library version, e.g. "NCCL 2.28.3" or "Open MPI v4.1.4".
  virtual std::string version() const = 0;
};

/// Host-memory collectives on `comm` with MPI's non-blocking operations, each polled until its deadline.
std::unique_ptr<collective_backend> make_mpi_backend(MPI_Comm comm, const world_info& w);

/// A fresh NCCL unique id (rank 0 makes one per group and sends it over the control plane).
std::string new_nccl_id();
/// GPU collectives with NCCL: this rank is `group_rank` of `group_size`, the group's communicator made
/// from `id` (one GPU per rank, the local rank's device). Throws input_error when the bench was built
/// without CUDA or no GPU is visible.
std::unique_ptr<collective_backend> make_nccl_backend(const world_info& w, std::int64_t group_rank,
                                                      std::int64_t group_size, const std::string& id, double timeout_s);

/// Host-memory collectives through rank 0 over the control plane: every rank sends its input, rank 0
/// computes each group's outputs (reference_collective) and sends them back. For a torchrun-style launch
/// without GPUs: a correctness and connectivity check, not a bandwidth measurement. Every rank of the
/// world runs each op at once; `group` tells rank 0 which ranks belong together.
std::unique_ptr<collective_backend> make_star_backend(const world_info& w, std::int64_t group, std::int64_t group_rank,
                                                      std::int64_t group_size);

/// Whether this build has the CUDA path and a GPU is visible.
bool gpu_available();

}  // namespace trainplan::bench
