// Ranks, hosts and a control plane with deadlines over MPI (docs/bench.md "Launch" and "Hangs").
#include "launch.h"

#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "trainplan/error.h"

namespace trainplan::bench {

namespace {

std::int64_t env_int(const char* name, std::int64_t fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  const long long x = std::strtoll(v, &end, 10);
  return end != nullptr && *end == '\0' ? x : fallback;
}

constexpr int kHostChars = 256;
constexpr int kTagCheckin = 7001;
constexpr int kTagRelease = 7002;

}  // namespace

std::string rank_info::device_name() const { return fmt::format("n{}_g{}", node, local_rank); }

std::string world_info::name_of(std::int64_t rank) const {
  if (rank < 0 || rank >= static_cast<std::int64_t>(nodes.size())) return fmt::format("rank {}", rank);
  return fmt::format("n{}_g{}", nodes[rank], local_ranks[rank]);
}

world_info start_world(int& argc, char**& argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  world_info w;
  int r = 0, n = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  w.self.rank = r;
  w.self.world = n;
  char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  MPI_Get_library_version(version, &len);
  w.mpi_version = std::string(version, static_cast<std::size_t>(len));
  if (const auto nl = w.mpi_version.find_first_of(",\n"); nl != std::string::npos) w.mpi_version.resize(nl);

  if (std::getenv("OMPI_COMM_WORLD_RANK") != nullptr) {
    w.self.launcher = "mpirun";
  } else if (std::getenv("SLURM_PROCID") != nullptr) {
    w.self.launcher = "srun";
  } else if (std::getenv("RANK") != nullptr && std::getenv("WORLD_SIZE") != nullptr) {
    w.self.launcher = "torchrun-style env";
  } else {
    w.self.launcher = "singleton";
  }
  const std::int64_t env_world = env_int("WORLD_SIZE", n);
  if (w.self.launcher == "torchrun-style env" && env_world != n) {
    throw input_error(fmt::format(
        "WORLD_SIZE={} (torchrun-style environment) but MPI sees {} process(es): trainplan-bench ranks meet over "
        "MPI; start them with mpirun or srun (one process per GPU)",
        env_world, n));
  }

  // Hosts of every rank, in rank order; nodes numbered by first appearance.
  char host[kHostChars] = {};
  gethostname(host, sizeof(host) - 1);
  std::vector<char> all(static_cast<std::size_t>(kHostChars) * static_cast<std::size_t>(n));
  MPI_Allgather(host, kHostChars, MPI_CHAR, all.data(), kHostChars, MPI_CHAR, MPI_COMM_WORLD);
  std::vector<std::string> distinct;
  std::vector<std::int64_t> per_node_count;
  for (int i = 0; i < n; ++i) {
    std::string h(&all[static_cast<std::size_t>(i) * kHostChars]);
    auto it = std::find(distinct.begin(), distinct.end(), h);
    std::int64_t node = it - distinct.begin();
    if (it == distinct.end()) {
      distinct.push_back(h);
      per_node_count.push_back(0);
    }
    w.hosts.push_back(h);
    w.nodes.push_back(node);
    w.local_ranks.push_back(per_node_count[static_cast<std::size_t>(node)]++);
  }
  w.self.host = w.hosts[static_cast<std::size_t>(r)];
  w.self.node = w.nodes[static_cast<std::size_t>(r)];
  w.self.local_rank = w.local_ranks[static_cast<std::size_t>(r)];
  w.self.local_size = per_node_count[static_cast<std::size_t>(w.self.node)];
  w.self.num_nodes = static_cast<std::int64_t>(distinct.size());
  return w;
}

bool wait_for(MPI_Request& req, const deadline& d) {
  int done = 0;
  for (int spins = 0;; ++spins) {
    MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    if (done) return true;
    if (d.passed()) return false;
    if (spins > 1000) std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

std::vector<std::int64_t> checkin(const world_info& w, int step, double timeout_s) {
  const deadline d(timeout_s);
  const int n = static_cast<int>(w.self.world);
  std::vector<std::int64_t> missing;
  if (w.self.rank == 0) {
    std::vector<int> got(static_cast<std::size_t>(n), -1);
    std::vector<MPI_Request> reqs(static_cast<std::size_t>(n), MPI_REQUEST_NULL);
    for (int i = 1; i < n; ++i) MPI_Irecv(&got[static_cast<std::size_t>(i)], 1, MPI_INT, i, kTagCheckin, MPI_COMM_WORLD, &reqs[static_cast<std::size_t>(i)]);
    for (int i = 1; i < n; ++i) {
      if (!wait_for(reqs[static_cast<std::size_t>(i)], d)) missing.push_back(i);
    }
    if (!missing.empty()) return missing;  // the caller aborts; pending receives die with the job
    int go = step;
    std::vector<MPI_Request> sends(static_cast<std::size_t>(n), MPI_REQUEST_NULL);
    for (int i = 1; i < n; ++i) MPI_Isend(&go, 1, MPI_INT, i, kTagRelease, MPI_COMM_WORLD, &sends[static_cast<std::size_t>(i)]);
    for (int i = 1; i < n; ++i) wait_for(sends[static_cast<std::size_t>(i)], d);
    return missing;
  }
  int mine = step, go = -1;
  MPI_Request s = MPI_REQUEST_NULL, rq = MPI_REQUEST_NULL;
  MPI_Isend(&mine, 1, MPI_INT, 0, kTagCheckin, MPI_COMM_WORLD, &s);
  MPI_Irecv(&go, 1, MPI_INT, 0, kTagRelease, MPI_COMM_WORLD, &rq);
  // Rank 0 waits up to timeout_s for the slowest peer, then releases: allow it twice that.
  const deadline release(2 * timeout_s + 1);
  if (!wait_for(rq, release)) return {0};
  wait_for(s, release);
  return missing;
}

std::vector<std::vector<double>> gather_values(const world_info& w, const std::vector<double>& local, int tag,
                                               double timeout_s, std::vector<std::int64_t>& missing) {
  missing.clear();
  const int n = static_cast<int>(w.self.world);
  const int len = static_cast<int>(local.size());
  const deadline d(timeout_s);
  if (w.self.rank != 0) {
    MPI_Request s = MPI_REQUEST_NULL;
    MPI_Isend(local.data(), len, MPI_DOUBLE, 0, tag, MPI_COMM_WORLD, &s);
    if (!wait_for(s, d)) missing.push_back(0);
    return {};
  }
  std::vector<std::vector<double>> out(static_cast<std::size_t>(n), std::vector<double>(local.size()));
  out[0] = local;
  std::vector<MPI_Request> reqs(static_cast<std::size_t>(n), MPI_REQUEST_NULL);
  for (int i = 1; i < n; ++i) MPI_Irecv(out[static_cast<std::size_t>(i)].data(), len, MPI_DOUBLE, i, tag, MPI_COMM_WORLD, &reqs[static_cast<std::size_t>(i)]);
  for (int i = 1; i < n; ++i) {
    if (!wait_for(reqs[static_cast<std::size_t>(i)], d)) missing.push_back(i);
  }
  return out;
}

void abort_hung(const world_info& w, const std::string& what, const std::vector<std::int64_t>& ranks) {
  std::vector<std::string> names;
  for (const std::int64_t r : ranks) {
    names.push_back(fmt::format("{} (rank {}, host {})", w.name_of(r), r,
                                r < static_cast<std::int64_t>(w.hosts.size()) ? w.hosts[static_cast<std::size_t>(r)] : "?"));
  }
  std::fprintf(stderr, "trainplan-bench: error: %s: no answer from %s\n", what.c_str(), fmt::format("{}", fmt::join(names, ", ")).c_str());
  std::fflush(stderr);
  std::fflush(stdout);
  MPI_Abort(MPI_COMM_WORLD, kExitHung);
  std::_Exit(kExitHung);
}

struct watchdog::state {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::thread thread;
};

watchdog::watchdog(const world_info& w, std::string what, double timeout_s) : s_(new state) {
  const std::string who = fmt::format("{} (rank {}, host {})", w.self.device_name(), w.self.rank, w.self.host);
  s_->thread = std::thread([s = s_, what = std::move(what), who, timeout_s] {
    std::unique_lock lock(s->mu);
    if (s->cv.wait_for(lock, std::chrono::duration<double>(timeout_s), [&] { return s->done; })) return;
    std::fprintf(stderr, "trainplan-bench: error: %s: %s did not finish within %.0f s\n", who.c_str(), what.c_str(),
                 timeout_s);
    std::fflush(stderr);
    std::_Exit(kExitHung);
  });
}

watchdog::~watchdog() {
  {
    std::lock_guard lock(s_->mu);
    s_->done = true;
  }
  s_->cv.notify_all();
  s_->thread.join();
  delete s_;
}

}  // namespace trainplan::bench
