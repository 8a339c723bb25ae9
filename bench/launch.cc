// Ranks, hosts and a control plane with deadlines over MPI (docs/bench.md "Launch" and "Hangs").
#include "launch.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "trainplan/core/base/error.h"

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

namespace {

/// Control messages over MPI point-to-point on MPI_COMM_WORLD.
class mpi_control final : public control_plane {
 public:
  std::string_view name() const override { return "mpi"; }
  bool send(std::int64_t to, int tag, const std::string& bytes, const deadline& d) override {
    // The buffer must outlive a send that does not complete: it is kept (and the job ends) on timeout.
    auto* buf = new std::string(bytes);
    MPI_Request req = MPI_REQUEST_NULL;
    MPI_Isend(buf->data(), static_cast<int>(buf->size()), MPI_BYTE, static_cast<int>(to), tag, MPI_COMM_WORLD, &req);
    if (!wait_for(req, d)) return false;
    delete buf;
    return true;
  }
  std::optional<std::string> recv(std::int64_t from, int tag, const deadline& d) override {
    // A control message's latency is never measured, but a waiting rank's polling is felt by a rank that
    // measures on the same core (health --serial with ranks sharing cores): after 100 polls the wait
    // sleeps, 50 µs doubling to 2 ms.
    MPI_Status st{};
    auto nap = std::chrono::microseconds(50);
    for (int spins = 0;; ++spins) {
      int flag = 0;
      const bool late = d.passed();
      MPI_Iprobe(static_cast<int>(from), tag, MPI_COMM_WORLD, &flag, &st);
      if (flag) break;
      if (late) return std::nullopt;
      if (spins > 100) {
        std::this_thread::sleep_for(nap);
        nap = std::min(2 * nap, std::chrono::microseconds(2000));
      }
    }
    int count = 0;
    MPI_Get_count(&st, MPI_BYTE, &count);
    std::string out(static_cast<std::size_t>(count), '\0');
    MPI_Recv(out.data(), count, MPI_BYTE, static_cast<int>(from), tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    return out;
  }
  [[noreturn]] void abort(int status) override {
    MPI_Abort(MPI_COMM_WORLD, status);
    std::_Exit(status);
  }
};

constexpr int kTagHosts = 7003;
constexpr int kTagSum = 7004;
constexpr int kTagSumResult = 7005;

std::string env_text(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? std::string() : std::string(v);
}

/// Under a torchrun-style launch: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, checked.
std::shared_ptr<control_plane> torchrun_control(rank_info& self, double timeout_s) {
  std::vector<std::string> unset;
  for (const char* name : {"RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"})
    if (env_text(name).empty()) unset.emplace_back(name);
  if (!unset.empty()) {
    throw input_error(fmt::format("torchrun-style launch: {} {} not set", fmt::join(unset, " and "),
                                  unset.size() == 1 ? "is" : "are"));
  }
  auto need = [](const char* name) {
    const std::string v = env_text(name);
    if (v.empty()) throw input_error(fmt::format("torchrun-style launch: {} is not set", name));
    return v;
  };
  auto number = [&](const char* name, std::int64_t lo, std::int64_t hi) {
    const std::string v = need(name);
    char* end = nullptr;
    const long long x = std::strtoll(v.c_str(), &end, 10);
    if (end == v.c_str() || *end != '\0' || x < lo || x > hi) {
      throw input_error(fmt::format("torchrun-style launch: {}={} must be an integer between {} and {}", name, v, lo, hi));
    }
    return static_cast<std::int64_t>(x);
  };
  self.world = number("WORLD_SIZE", 1, 100000);
  self.rank = number("RANK", 0, self.world - 1);
  // torchrun's agent serves its own TCPStore on MASTER_PORT when TORCHELASTIC_USE_AGENT_STORE=True
  // (torch/distributed/rendezvous.py, _create_c10d_store): rank 0 then listens on the port after it,
  // unless TRAINPLAN_BENCH_PORT names one.
  int port = static_cast<int>(number("MASTER_PORT", 1, 65535));
  if (!env_text("TRAINPLAN_BENCH_PORT").empty()) {
    port = static_cast<int>(number("TRAINPLAN_BENCH_PORT", 1, 65535));
  } else if (env_text("TORCHELASTIC_USE_AGENT_STORE") == "True") {
    if (port == 65535) throw input_error("torchrun-style launch: MASTER_PORT=65535 is the agent's; set TRAINPLAN_BENCH_PORT");
    ++port;
  }
  return connect_tcp(self.rank, self.world, need("MASTER_ADDR"), port, timeout_s);
}

}  // namespace

namespace {

/// The rank a launcher gave this process, from its environment, before MPI knows it ("?" when none did).
std::string launcher_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID", "RANK"}) {
    if (const std::string v = env_text(name); !v.empty()) return v;
  }
  return "?";
}

/// MPI_Init can wait without end for a rank that never starts or was stopped: after the timeout this
/// process says which rank it is and where, and ends with kExitHung (docs/bench.md "Hangs and timeouts").
class init_watchdog {
 public:
  explicit init_watchdog(double timeout_s)
      : thread_([this, timeout_s] {
          std::unique_lock<std::mutex> lock(mutex_);
          if (done_cv_.wait_for(lock, std::chrono::duration<double>(timeout_s), [this] { return done_; })) return;
          char host[kHostChars] = {};
          gethostname(host, sizeof(host) - 1);
          std::fprintf(stderr,
                       "trainplan-bench: error: rank %s (%s, pid %ld) did not finish MPI_Init within %.0f s: a rank of "
                       "the job did not start or was stopped\n",
                       launcher_rank().c_str(), host, static_cast<long>(::getpid()), timeout_s);
          std::fflush(stderr);
          std::_Exit(kExitHung);
        }) {}
  ~init_watchdog() {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    done_cv_.notify_all();
    thread_.join();
  }
  init_watchdog(const init_watchdog&) = delete;
  init_watchdog& operator=(const init_watchdog&) = delete;

 private:
  std::mutex mutex_;
  std::condition_variable done_cv_;
  bool done_ = false;
  std::thread thread_;
};

/// A process no MPI launcher started (a torchrun-style launch starts every rank so, as may srun without PMI)
/// initialises Open MPI as a singleton, which creates the host's session directory in /tmp if it is missing;
/// singletons started together race on that ("A call to mkdir was unable to create the desired directory
/// ... File exists", Open MPI 4's session_dir.c), and the loser's orte_init fails and hangs until its
/// launcher's timeout (seen once in CI). Such processes take turns through MPI_Init under an exclusive lock
/// on a file in $TMPDIR, which the kernel releases when the holder ends, however it ends. Returns the lock's
/// descriptor (-1: none taken).
int lock_singleton_init() {
  for (const char* launched : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"}) {
    if (std::getenv(launched) != nullptr) return -1;
  }
  const char* tmp = std::getenv("TMPDIR");
  const std::string path = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/trainplan-bench-mpi-init.lock";
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) return -1;  // no lock: Open MPI as it is
  while (::flock(fd, LOCK_EX) != 0 && errno == EINTR) {
  }
  return fd;
}

}  // namespace

world_info start_world(int& argc, char**& argv, double timeout_s) {
  int provided = 0;
  {
    const init_watchdog guard(timeout_s);  // the wait for the lock counts towards the timeout
    const int lock = lock_singleton_init();
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    if (lock >= 0) ::close(lock);
  }
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

  // A torchrun-style launch sets WORLD_SIZE (and RANK) for one-process MPI worlds; a value that is no world
  // size is refused rather than run alone.
  if (n == 1 && !env_text("WORLD_SIZE").empty()) {
    const std::string v = env_text("WORLD_SIZE");
    char* end = nullptr;
    const long long size = std::strtoll(v.c_str(), &end, 10);
    if (end == v.c_str() || *end != '\0' || size < 1 || size > 100000) {
      throw input_error(fmt::format("torchrun-style launch: WORLD_SIZE={} must be an integer between 1 and 100000", v));
    }
  }
  const bool torchrun = n == 1 && !env_text("RANK").empty() && env_int("WORLD_SIZE", 1) > 1;
  if (std::getenv("OMPI_COMM_WORLD_RANK") != nullptr) {
    w.self.launcher = "mpirun";
  } else if (std::getenv("SLURM_PROCID") != nullptr && n > 1) {
    w.self.launcher = "srun";
  } else if (torchrun) {
    w.self.launcher = "torchrun-style env";
  } else {
    w.self.launcher = "singleton";
  }
  w.control = torchrun ? torchrun_control(w.self, timeout_s) : std::make_shared<mpi_control>();

  // Hosts of every rank, in rank order, through rank 0; nodes numbered by first appearance.
  char host[kHostChars] = {};
  gethostname(host, sizeof(host) - 1);
  std::string hosts;
  if (w.self.rank == 0) {
    hosts = host;
    for (std::int64_t i = 1; i < w.self.world; ++i) {
      const std::optional<std::string> h = w.control->recv(i, kTagHosts, deadline(timeout_s));
      if (!h) throw input_error(fmt::format("rank {} did not report its host within {:.0f} s", i, timeout_s));
      hosts += '\n' + *h;
    }
  } else if (!w.control->send(0, kTagHosts, host, deadline(timeout_s))) {
    throw input_error(fmt::format("rank 0 did not take this rank's host within {:.0f} s", timeout_s));
  }
  if (!broadcast(w, hosts, kTagHosts, timeout_s)) throw input_error("rank 0 did not send the host list in time");
  std::vector<std::string> distinct;
  std::vector<std::int64_t> per_node_count;
  std::size_t pos = 0;
  for (std::int64_t i = 0; i < w.self.world; ++i) {
    const std::size_t end = std::min(hosts.find('\n', pos), hosts.size());
    std::string h = hosts.substr(pos, end - pos);
    pos = end + 1;
    auto it = std::find(distinct.begin(), distinct.end(), h);
    const std::int64_t node = it - distinct.begin();
    if (it == distinct.end()) {
      distinct.push_back(h);
      per_node_count.push_back(0);
    }
    w.hosts.push_back(h);
    w.nodes.push_back(node);
    w.local_ranks.push_back(per_node_count[static_cast<std::size_t>(node)]++);
  }
  const auto me = static_cast<std::size_t>(w.self.rank);
  w.self.host = w.hosts[me];
  w.self.node = w.nodes[me];
  w.self.local_rank = torchrun ? env_int("LOCAL_RANK", w.local_ranks[me]) : w.local_ranks[me];
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

bool broadcast(const world_info& w, std::string& bytes, int tag, double timeout_s) {
  const deadline d(timeout_s);
  if (w.self.rank == 0) {
    bool ok = true;
    for (std::int64_t i = 1; i < w.self.world; ++i) ok = w.control->send(i, tag, bytes, d) && ok;
    return ok;
  }
  std::optional<std::string> got = w.control->recv(0, tag, d);
  if (!got) return false;
  bytes = std::move(*got);
  return true;
}

std::vector<std::int64_t> checkin(const world_info& w, int step, double timeout_s) {
  const deadline d(timeout_s);
  std::vector<std::int64_t> missing;
  const std::string mine = std::to_string(step);
  if (w.self.rank == 0) {
    for (std::int64_t i = 1; i < w.self.world; ++i) {
      if (!w.control->recv(i, kTagCheckin, d)) missing.push_back(i);
    }
    if (!missing.empty()) return missing;  // the caller ends the job
    for (std::int64_t i = 1; i < w.self.world; ++i) w.control->send(i, kTagRelease, mine, d);
    return missing;
  }
  // Rank 0 waits up to timeout_s for the slowest peer, then releases: allow it twice that.
  const deadline release(2 * timeout_s + 1);
  if (!w.control->send(0, kTagCheckin, mine, release) || !w.control->recv(0, kTagRelease, release)) return {0};
  return missing;
}

std::vector<std::vector<double>> gather_values(const world_info& w, const std::vector<double>& local, int tag,
                                               double timeout_s, std::vector<std::int64_t>& missing) {
  missing.clear();
  const deadline d(timeout_s);
  const std::string mine(reinterpret_cast<const char*>(local.data()), local.size() * sizeof(double));
  if (w.self.rank != 0) {
    if (!w.control->send(0, tag, mine, d)) missing.push_back(0);
    return {};
  }
  std::vector<std::vector<double>> out(static_cast<std::size_t>(w.self.world), std::vector<double>(local.size()));
  out[0] = local;
  for (std::int64_t i = 1; i < w.self.world; ++i) {
    const std::optional<std::string> got = w.control->recv(i, tag, d);
    if (!got || got->size() != mine.size()) {
      missing.push_back(i);
      continue;
    }
    std::memcpy(out[static_cast<std::size_t>(i)].data(), got->data(), got->size());
  }
  return out;
}

double group_sum(const world_info& w, double value, std::int64_t group, double timeout_s, const std::string& what) {
  const deadline d(timeout_s);
  struct item {
    double value;
    std::int64_t group;
  };
  const item mine{value, group};
  const std::string bytes(reinterpret_cast<const char*>(&mine), sizeof mine);
  if (w.self.rank != 0) {
    const deadline answer(2 * timeout_s + 1);
    if (!w.control->send(0, kTagSum, bytes, answer)) abort_hung(w, what, {0});
    const std::optional<std::string> got = w.control->recv(0, kTagSumResult, answer);
    if (!got || got->size() != sizeof(double)) abort_hung(w, what, {0});
    double sum = 0;
    std::memcpy(&sum, got->data(), sizeof sum);
    return sum;
  }
  std::vector<item> all{mine};
  std::vector<std::int64_t> missing;
  for (std::int64_t i = 1; i < w.self.world; ++i) {
    const std::optional<std::string> got = w.control->recv(i, kTagSum, d);
    if (!got || got->size() != sizeof(item)) {
      missing.push_back(i);
      continue;
    }
    item x{};
    std::memcpy(&x, got->data(), sizeof x);
    all.push_back(x);
  }
  if (!missing.empty()) abort_hung(w, what, missing);
  auto sum_of = [&](std::int64_t g) {
    double s = 0;
    for (const item& x : all)
      if (x.group == g) s += x.value;
    return s;
  };
  for (std::int64_t i = 1; i < w.self.world; ++i) {
    const double s = sum_of(all[static_cast<std::size_t>(i)].group);
    w.control->send(i, kTagSumResult, std::string(reinterpret_cast<const char*>(&s), sizeof s), d);
  }
  return sum_of(group);
}

void abort_hung(const world_info& w, const std::string& what, const std::vector<std::int64_t>& ranks) {
  std::vector<std::string> names;
  for (const std::int64_t r : ranks) {
    names.push_back(fmt::format("{} (rank {}, host {})", w.name_of(r), r,
                                r < static_cast<std::int64_t>(w.hosts.size()) ? w.hosts[static_cast<std::size_t>(r)] : "?"));
  }
  if (names.empty()) {
    std::fprintf(stderr, "trainplan-bench: error: %s\n", what.c_str());
  } else {
    std::fprintf(stderr, "trainplan-bench: error: %s: no answer from %s\n", what.c_str(),
                 fmt::format("{}", fmt::join(names, ", ")).c_str());
  }
  std::fflush(stderr);
  std::fflush(stdout);
  if (w.control) w.control->abort(kExitHung);
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
