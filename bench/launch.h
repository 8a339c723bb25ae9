// trainplan-bench: who this process is (rank, node, GPU) and a control plane over MPI in which every
// wait has a deadline, so that a dead or hung peer is named instead of hanging the run (docs/bench.md).
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace trainplan::bench {

/// Exit status when a peer is dead or hung (0 ok, 1 slow ranks found, 2 bad input).
inline constexpr int kExitHung = 3;

/// Where this process sits. Ranks are numbered node by node (mpirun --map-by slot, srun's block
/// distribution, torchrun), so node = the index of this host among the distinct hosts in rank order.
struct rank_info {
  std::int64_t rank = 0;
  std::int64_t world = 1;
  std::int64_t local_rank = 0;   ///< on this node
  std::int64_t local_size = 1;
  std::int64_t node = 0;
  std::int64_t num_nodes = 1;
  std::string host;
  std::string launcher;          ///< "mpirun", "srun", "torchrun-style env" or "singleton"
  std::string device_name() const;  ///< n<node>_g<local_rank>, as the planner names devices
};

/// Every rank's host, in rank order (gathered once at start).
struct world_info {
  rank_info self;
  std::vector<std::string> hosts;
  std::vector<std::int64_t> nodes;       ///< node index of every rank
  std::vector<std::int64_t> local_ranks; ///< local rank of every rank
  std::string name_of(std::int64_t rank) const;  ///< n<node>_g<gpu>
  std::string mpi_version;
};

/// MPI_Init and the rank/host exchange. Reads the launcher from the environment (OMPI_*, SLURM_*,
/// RANK/WORLD_SIZE/LOCAL_RANK); a torchrun-style RANK/WORLD_SIZE that disagrees with MPI's world is an
/// input_error (trainplan-bench ranks meet over MPI: launch them with mpirun or srun).
world_info start_world(int& argc, char**& argv);

/// A point in time after which a wait gives up.
class deadline {
 public:
  explicit deadline(double seconds)
      : at_(std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                    std::chrono::duration<double>(seconds))),
        seconds_(seconds) {}
  bool passed() const { return std::chrono::steady_clock::now() >= at_; }
  double seconds() const { return seconds_; }

 private:
  std::chrono::steady_clock::time_point at_;
  double seconds_;
};

/// Polls `req` until it completes or `d` passes; false on timeout (the request is left pending).
bool wait_for(MPI_Request& req, const deadline& d);

/// A barrier that names who did not arrive: every rank reports `step` to rank 0, which waits until
/// `timeout_s`; then rank 0 releases everyone. Returns the ranks that did not arrive (rank 0's view;
/// other ranks get {} or, when rank 0 itself does not answer, {0}).
std::vector<std::int64_t> checkin(const world_info& w, int step, double timeout_s);

/// Rank 0 gathers `local` (the same length on every rank) from every rank, each within the deadline;
/// returns every rank's values in rank order on rank 0 (empty elsewhere) and the ranks that did not
/// send in `missing`.
std::vector<std::vector<double>> gather_values(const world_info& w, const std::vector<double>& local, int tag,
                                               double timeout_s, std::vector<std::int64_t>& missing);

/// Rank 0 prints why, then every process is ended with kExitHung (MPI_Abort). Never returns.
[[noreturn]] void abort_hung(const world_info& w, const std::string& what, const std::vector<std::int64_t>& ranks);

/// A last line of defence for calls that cannot be polled (NCCL initialisation, a blocking MPI call):
/// if the call is still running after the deadline, this rank prints what it was doing and exits with
/// kExitHung.
class watchdog {
 public:
  watchdog(const world_info& w, std::string what, double timeout_s);
  ~watchdog();
  watchdog(const watchdog&) = delete;
  watchdog& operator=(const watchdog&) = delete;

 private:
  struct state;
  state* s_;
};

}  // namespace trainplan::bench
