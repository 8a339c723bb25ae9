// trainplan-bench: who this process is (rank, node, GPU) and a control plane over MPI in which every
// wait has a deadline, so that a dead or hung peer is named instead of hanging the run (docs/bench.md).
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
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

class deadline;

/// How the ranks reach each other for control messages: MPI point-to-point under mpirun and srun, or
/// TCP through rank 0 (MASTER_ADDR:MASTER_PORT) under a torchrun-style launch. Messages go between rank
/// 0 and another rank only; each wait gives up at its deadline.
class control_plane {
 public:
  virtual ~control_plane() = default;
  virtual std::string_view name() const = 0;  ///< "mpi" or "tcp"
  /// Sends `bytes` to `to` (rank 0 to anyone, anyone to rank 0); false when it did not go before `d`.
  virtual bool send(std::int64_t to, int tag, const std::string& bytes, const deadline& d) = 0;
  /// The next message with `tag` from `from`, or nothing at `d` (a message already there is still taken).
  virtual std::optional<std::string> recv(std::int64_t from, int tag, const deadline& d) = 0;
  /// Ends every rank of the job with `status` (MPI_Abort; on TCP, this process, and its peers see the
  /// connection close). Never returns.
  [[noreturn]] virtual void abort(int status) = 0;
};

/// Every rank's host, in rank order (gathered once at start).
struct world_info {
  rank_info self;
  std::vector<std::string> hosts;
  std::vector<std::int64_t> nodes;       ///< node index of every rank
  std::vector<std::int64_t> local_ranks; ///< local rank of every rank
  std::string name_of(std::int64_t rank) const;  ///< n<node>_g<gpu>
  std::string mpi_version;
  std::shared_ptr<control_plane> control;  ///< MPI, or TCP under a torchrun-style launch
  bool mpi_world() const { return control && control->name() == "mpi"; }  ///< MPI_COMM_WORLD holds every rank
};

/// MPI_Init, the control plane and the rank/host exchange. Under mpirun or srun the ranks meet over
/// MPI. A torchrun-style environment (RANK, WORLD_SIZE > 1, LOCAL_RANK, MASTER_ADDR, MASTER_PORT) with
/// MPI seeing one process meets over TCP: rank 0 listens on MASTER_PORT and the others connect, each
/// within `timeout_s`. Missing or bad variables are an input_error naming them.
world_info start_world(int& argc, char**& argv, double timeout_s);

/// The TCP control plane (tcp_control.cc): rank 0 accepts `world − 1` connections on `port`; the others
/// connect to `addr:port`, retrying until the deadline. Throws input_error (the port is in use, the
/// address does not resolve) or names the ranks that did not connect.
std::shared_ptr<control_plane> connect_tcp(std::int64_t rank, std::int64_t world, const std::string& addr, int port,
                                           double timeout_s);

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

/// Rank 0's `bytes` to every rank; on the others, what rank 0 sent (false when it did not come in time).
bool broadcast(const world_info& w, std::string& bytes, int tag, double timeout_s);
/// Sum of `value` over the ranks that call it with the same `group` key; every rank of the world calls
/// it at once. A rank that does not take part within the timeout ends the job (named).
double group_sum(const world_info& w, double value, std::int64_t group, double timeout_s, const std::string& what);

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
