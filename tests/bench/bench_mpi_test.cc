// trainplan-bench for real under mpirun on this machine (no GPU): checked collectives on 4 ranks, the
// planner's groups, a slowed and a hung rank named, bad input, and the calibration round trip from a
// CPU run into the planner (docs/bench.md "Tests").
#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "run_process.h"
#include "trainplan/core/estimate/calibration.h"
#include "trainplan/core/estimate/comm.h"
#include "trainplan/core/hardware/hardware.h"

namespace {

using ::testing::HasSubstr;
using json = nlohmann::json;

using trainplan::testing::run_result;
using trainplan::testing::shell_quote;

/// mpirun -np `ranks` trainplan-bench `args`, as root on one machine, ended after 120 s whatever happens;
/// `pin` is a taskset prefix (or empty) and `bind` mpirun's binding flags.
run_result mpirun_with(const std::string& pin, const std::string& bind, int ranks, const std::vector<std::string>& args) {
  std::string prefix =
      "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none "
      "timeout -k 5 120 ";
  prefix.append(pin).append(shell_quote(TRAINPLAN_MPIEXEC)).append(bind).append(" --oversubscribe -np ");
  prefix.append(std::to_string(ranks)).append(" ").append(shell_quote(TRAINPLAN_BENCH_BINARY));
  return trainplan::testing::run_command(prefix, args);
}

run_result mpirun(int ranks, const std::vector<std::string>& args) { return mpirun_with("", "", ranks, args); }

/// The same, every rank on this process's first allowed CPU. A test that says which rank is slow must
/// compare like with like: on the CI VM one vCPU ran the CPU probe 30% slower than the other for seconds
/// (a busy hyperthread sibling or host neighbour: a real gap, between cores, not ranks). With all ranks on
/// one core, in turn (--serial) and repeat by repeat, only an injected slowdown separates them.
run_result mpirun_one_cpu(int ranks, const std::vector<std::string>& args) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  int cpu = 0;
  if (sched_getaffinity(0, sizeof allowed, &allowed) == 0) {
    while (cpu < CPU_SETSIZE - 1 && !CPU_ISSET(cpu, &allowed)) ++cpu;
  }
  return mpirun_with("taskset -c " + std::to_string(cpu) + " ", " --bind-to none", ranks, args);
}

TEST(BenchMpi, CollectivesOnFourRanksAreCorrectWithPositiveBusBandwidth) {
  const run_result r = mpirun(4, {"collectives", "--backend", "mpi", "--max-bytes", "64K", "--iters", "5", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["context"]["tool"], "trainplan-bench");
  EXPECT_EQ(j["context"]["schema_version"], 1);
  EXPECT_EQ(j["context"]["world_size"], 4);
  EXPECT_EQ(j["context"]["backend"], "mpi");
  const json& rows = j["collectives"];
  ASSERT_EQ(rows.size(), 6u * 4u);  // six collectives × 1K, 4K, 16K, 64K (factor 4 on the MPI path)
  int in_place = 0;
  for (const json& row : rows) {
    SCOPED_TRACE(row.dump());
    EXPECT_EQ(row["ranks"], 4);
    EXPECT_EQ(row["errors"], 0);  // every element of every checked run right
    EXPECT_GT(row["time_s"].get<double>(), 0);
    EXPECT_GT(row["busbw_bytes_per_s"].get<double>(), 0);
    // busbw = algbw × nccl-tests' factor for 4 ranks.
    const double factor = trainplan::bus_factor(
        row["collective"] == "all_reduce"   ? trainplan::collective_kind::all_reduce
        : row["collective"] == "broadcast"  ? trainplan::collective_kind::broadcast
        : row["collective"] == "send_recv"  ? trainplan::collective_kind::send_recv
                                            : trainplan::collective_kind::all_gather,
        4);
    EXPECT_NEAR(row["busbw_bytes_per_s"].get<double>(), row["algbw_bytes_per_s"].get<double>() * factor,
                1e-6 * row["busbw_bytes_per_s"].get<double>());
    if (row.contains("in_place")) ++in_place;
  }
  EXPECT_EQ(in_place, 4 * 4);  // all-reduce, all-gather, reduce-scatter, broadcast
}

TEST(BenchMpi, TextAndCsvCarryUnits) {
  const run_result t = mpirun(2, {"collectives", "--backend", "mpi", "--ops", "all_reduce", "--max-bytes", "4K"});
  ASSERT_EQ(t.status, 0) << t.err;
  EXPECT_THAT(t.out, HasSubstr("size (B)"));
  EXPECT_THAT(t.out, HasSubstr("time (µs)"));
  EXPECT_THAT(t.out, HasSubstr("GB/s = 1e9 bytes/s"));
  const run_result c = mpirun(2, {"collectives", "--backend", "mpi", "--ops", "all_reduce", "--max-bytes", "4K", "--csv"});
  ASSERT_EQ(c.status, 0) << c.err;
  EXPECT_THAT(c.out, HasSubstr("group,collective,ranks,nodes,bytes,count,time_s,algbw_gb_per_s,busbw_gb_per_s"));
}

TEST(BenchMpi, PlannersGroupsAreMeasuredWithThePlannersPrediction) {
  const run_result r = mpirun(4, {"collectives", "--backend", "mpi", "--max-bytes", "16K", "--iters", "3", "--json", "--",
                                  "--model", "llama3-8b", "--tp", "2", "--pp", "2", "--gbs", "8"});
  ASSERT_EQ(r.status, 0) << r.err;
  const json j = json::parse(r.out);
  std::vector<std::string> groups;
  for (const json& row : j["collectives"]) {
    EXPECT_EQ(row["ranks"], 2);
    EXPECT_EQ(row["errors"], 0);
    EXPECT_GT(row["predicted_time_s"].get<double>(), 0);
    groups.push_back(row["group"]);
  }
  EXPECT_NE(std::find(groups.begin(), groups.end(), "tp"), groups.end());
  EXPECT_NE(std::find(groups.begin(), groups.end(), "pp"), groups.end());
  EXPECT_EQ(std::find(groups.begin(), groups.end(), "dp"), groups.end());  // DP 1: no group to measure
}

TEST(BenchMpi, TheModelColumnNamesTheClusterItModels) {
  // Issue 32: a "model (µs)" column for the dgx-h100 NVLink stood beside CPU/MPI timings, unnamed.
  const run_result r = mpirun(2, {"collectives", "--backend", "mpi", "--max-bytes", "4K", "--iters", "2", "--", "--model",
                                  "llama3-8b", "--tp", "2", "--gbs", "8", "--cluster", "dgx-h100"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("model µs, dgx-h100"));
  EXPECT_THAT(r.out, HasSubstr("on dgx-h100 (the job's --cluster), not on the machine measured"));
}

TEST(BenchMpi, AJobWithoutGroupsSaysSo) {
  const run_result r = mpirun(1, {"collectives", "--backend", "mpi", "--", "--model", "llama3-8b", "--tp", "1", "--gbs", "8"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("no collective to measure: every process group of the job has one rank"));
}

TEST(BenchMpi, HealthNamesTheSlowedRank) {
  const run_result r = mpirun_one_cpu(4, {"health", "--backend", "mpi", "--serial", "--inject-slowdown", "2:10", "--json"});
  ASSERT_EQ(r.status, 1) << r.out << r.err;  // slow ranks found
  const json j = json::parse(r.out);
  EXPECT_EQ(j["healthy"], false);
  EXPECT_EQ(j["all_reduce"]["errors"], 0);
  ASSERT_EQ(j["ranks"].size(), 4u);
  EXPECT_EQ(j["ranks"][2]["device"], "n0_g2");
  const json& slow = j["slow_gemm"];
  ASSERT_FALSE(slow.empty()) << r.out;
  // The injected rank is named and falls furthest short (ln 10 = 2.3 is outside any spread this VM
  // shows; another rank caught in a noisy spell may be named beside it).
  const auto worst = std::max_element(slow.begin(), slow.end(), [](const json& a, const json& b) {
    return a["shortfall"].get<double>() < b["shortfall"].get<double>();
  });
  EXPECT_EQ((*worst)["who"], "n0_g2 (rank 2)");
  EXPECT_NEAR((*worst)["shortfall"].get<double>(), 0.9, 0.05) << r.out;
}

/// Which of two ranks the health rule names by one probe ("gemm" or "memory"), from the levels and spreads
/// the report gives (docs/bench.md "Health"): {rank 0 named, rank 1 named}.
std::pair<bool, bool> rule_on_two_ranks(const json& ranks, const std::string& probe) {
  const std::string level = probe == "gemm" ? "gemm_flops_per_s" : "memory_bytes_per_s";
  const double s0 = ranks[0][probe + "_spread"].get<double>(), s1 = ranks[1][probe + "_spread"].get<double>();
  const double noise = std::sqrt(s0 * s0 + s1 * s1);
  const double ratio = ranks[1][level].get<double>() / ranks[0][level].get<double>();  // rank 1 / rank 0
  auto named = [&](double level_over_other) {
    return 1 - level_over_other > 0.03 && std::log(1 / level_over_other) > 3 * noise;
  };
  return {named(1 / ratio), named(ratio)};
}

/// Whether the report names rank 0 and rank 1 by one probe; any other name fails the test.
std::pair<bool, bool> named_by(const json& report, const std::string& probe) {
  bool rank0 = false, rank1 = false;
  for (const json& s : report["slow_" + probe]) {
    if (s["who"] == "n0_g1 (rank 1)") {
      rank1 = true;
    } else {
      EXPECT_EQ(s["who"], "n0_g0 (rank 0)") << report.dump();
      rank0 = true;
    }
  }
  return {rank0, rank1};
}

TEST(BenchMpi, HealthIsQuietWhenNothingIsSlowAndNamesATwentyPercentSlowdown) {
  // Issue 32: under mpirun -np 2 on the 2-core machine, a 3% threshold on one probe named a rank SLOW on
  // most runs. The probes now repeat and a rank must fall below the others by more than 3σ of the
  // repeats' spread as well (docs/bench.md "Health"). On one core, in turn (mpirun_one_cpu). Every
  // verdict of either probe must be the rule applied to the levels and spreads reported. What the verdicts
  // are is partly this VM's: its CPU probe has noisy spells (±20-30% over the repeats, or one rank's turns
  // at ~60% for a run), and its memcpy probe runs at a level of its own in each process, up to 12% apart
  // with spreads of 0.4-3% (a quiet CI run named a rank by the copy probe in two of five runs;
  // docs/bench.md). So: of five quiet runs at least four name no rank by the GEMM probe; with rank 1
  // slowed by 20%, the runs quiet enough to show it name it (below; tools/health_trials.sh counts 20 + 20
  // runs).
  int gemm_quiet = 0;
  for (int run = 0; run < 5; ++run) {
    const run_result q = mpirun_one_cpu(2, {"health", "--backend", "mpi", "--serial", "--json"});
    ASSERT_TRUE(q.status == 0 || q.status == 1) << "run " << run << ": " << q.out << q.err;
    const json j = json::parse(q.out);
    EXPECT_EQ(j["healthy"], q.status == 0);
    EXPECT_EQ(j["healthy"], j["slow_gemm"].empty() && j["slow_memory"].empty());
    EXPECT_EQ(j["probes_on"], "cpu");
    EXPECT_EQ(j["repeats"], 5);
    ASSERT_EQ(j["ranks"].size(), 2u);
    for (const json& r : j["ranks"]) EXPECT_GE(r["gemm_spread"].get<double>(), 0);
    for (const std::string probe : {"gemm", "memory"}) {
      EXPECT_EQ(named_by(j, probe), rule_on_two_ranks(j["ranks"], probe)) << probe << ": " << q.out;
    }
    gemm_quiet += j["slow_gemm"].empty();
  }
  EXPECT_GE(gemm_quiet, 4);
  // Slowed: rank 1's probes take 1.2× as long. Whether a run can show that depends on the machine: in a
  // spell the repeats spread by 14-48% (this VM, 2026-11-27: two of six runs), and 3σ of such a spread
  // hides any 20% gap, as the rule intends; rarely one rank's turns run at ~60% for a whole run. So the
  // power is counted on the runs whose GEMM spreads could show the gap with room to spare (combined spread
  // under ln(1.2)/6: 3σ at most half the gap), until two of them name rank 1, five such runs or fourteen
  // runs in all: two must. Fewer than two such runs in fourteen: the machine was too noisy to test the
  // power (skipped, saying so; every verdict was still checked against the rule). Before 2026-11-27 two of
  // seven runs of any kind had to name rank 1, and a noisy CI run gave one.
  const double conclusive_noise = std::log(1.2) / 6;
  int runs = 0, conclusive = 0, named_slowed = 0;
  for (; runs < 14 && conclusive < 5 && named_slowed < 2; ++runs) {
    const run_result r = mpirun_one_cpu(2, {"health", "--backend", "mpi", "--serial", "--inject-slowdown", "1:1.2", "--json"});
    ASSERT_TRUE(r.status == 0 || r.status == 1) << r.out << r.err;
    const json j = json::parse(r.out);
    const json& ranks = j["ranks"];
    ASSERT_EQ(ranks.size(), 2u);
    for (const std::string probe : {"gemm", "memory"}) {
      EXPECT_EQ(named_by(j, probe), rule_on_two_ranks(ranks, probe)) << probe << ": " << r.out;
    }
    for (const json& s : j["slow_gemm"]) {  // against rank 0 alone
      if (s["who"] == "n0_g1 (rank 1)") {
        EXPECT_NEAR(s["shortfall"].get<double>(),
                    1 - ranks[1]["gemm_flops_per_s"].get<double>() / ranks[0]["gemm_flops_per_s"].get<double>(), 1e-9);
      }
    }
    const double s0 = ranks[0]["gemm_spread"].get<double>(), s1 = ranks[1]["gemm_spread"].get<double>();
    if (std::sqrt(s0 * s0 + s1 * s1) >= conclusive_noise) continue;
    ++conclusive;
    named_slowed += named_by(j, "gemm").second;
  }
  if (conclusive < 2) {
    GTEST_SKIP() << "the CPU was too noisy in " << runs << " runs to test whether a 20% slowdown is named ("
                 << conclusive << " with a combined GEMM spread under " << conclusive_noise << ")";
  }
  EXPECT_GE(named_slowed, 2) << conclusive << " runs quiet enough to show the slowdown, of " << runs;
}

TEST(BenchMpi, HealthSaysItsProbesRanOnTheCpu) {
  // All ranks at once, as a user runs it: whether a core is slower is this machine's business, what the
  // report says about its probes is the bench's.
  const run_result r = mpirun(2, {"health", "--backend", "mpi"});
  ASSERT_TRUE(r.status == 0 || r.status == 1) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("CPU probes: no CUDA device here"));
  EXPECT_THAT(r.out, HasSubstr("probes (5 repeats each)"));
  EXPECT_THAT(r.out, ::testing::AnyOf(HasSubstr("healthy: no rank or node"), HasSubstr("SLOW GEMM"), HasSubstr("SLOW memory")));
}

TEST(BenchMpi, HealthNamesAHungRankWithinTheTimeoutAndExitsNonZero) {
  const run_result r = mpirun(4, {"health", "--backend", "mpi", "--inject-hang", "3", "--timeout-s", "3"});
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_THAT(r.err, HasSubstr("trainplan-bench: error: health: connectivity check: no answer from n0_g3 (rank 3, host "));
  EXPECT_LT(r.seconds, 60);  // named within the timeout, not at the test's 120 s limit
}

TEST(BenchMpi, BadInputIsExitTwoWithTheFlagNamed) {
  auto expect_error = [](int ranks, const std::vector<std::string>& args, const std::string& message) {
    const run_result r = mpirun(ranks, args);
    EXPECT_EQ(r.status, 2) << r.err;
    std::string want = "trainplan-bench: error: ";
    want.append(message);
    EXPECT_THAT(r.err, HasSubstr(want));
  };
  expect_error(2, {"health", "--backend", "mpi", "--inject-hang", "9"}, "--inject-hang: rank 9 does not exist (world size 2)");
  expect_error(2, {"health", "--backend", "mpi", "--inject-slowdown", "1"}, "--inject-slowdown expects RANK:FACTOR");
  expect_error(2, {"health", "--backend", "mpi", "--repeats", "2"},
               "--repeats must be between 3 and 1000 (a spread needs three), got 2");
  expect_error(2, {"collectives", "--backend", "mpi", "--ops", "allreduce"},
               "--ops: unknown collective 'allreduce' (did you mean 'all_reduce'?)");
  expect_error(2, {"collectives", "--backend", "mpi", "--min-bytes", "1M", "--max-bytes", "1K"},
               "--min-bytes/--max-bytes: the smallest size must be positive and not above the largest");
  expect_error(2, {"collectives", "--backend", "tcp"}, "--backend: unknown value 'tcp'");
  expect_error(2, {"collectives", "--backend", "mpi", "--timeout-s", "0"}, "--timeout-s must be between 0 and 86400 s");
  // The job's layout needs 4 GPUs (TP 2 × PP 2) but 3 ranks were started.
  expect_error(3, {"collectives", "--backend", "mpi", "--", "--model", "llama3-8b", "--tp", "2", "--pp", "2", "--num-gpus", "4"},
               "the job has 4 GPUs but 3 ranks were launched");
  expect_error(1, {"calibrate", "--backend", "mpi"}, "calibrate: --calibration-out FILE is required");
  expect_error(1, {"gemm", "--shapes", "8x8"}, "--shapes expects MxNxK");
  expect_error(1, {"gemm", "--samples", "0"}, "--samples must be between 1 and 100000, got 0");
  expect_error(1, {"gemm", "--algorithms", "100"}, "--algorithms must be between 1 and 64, got 100");
  expect_error(1, {"gemm", "--warmup", "-1"}, "--warmup must be between 0 and 10000, got -1");
  expect_error(1, {"gemm", "--device", "-3"}, "--device must not be negative, got -3");
  expect_error(1, {"helth"}, "unknown command 'helth' (did you mean 'health'?); one of: gemm, memory, collectives, health, calibrate");
}

TEST(BenchMpi, GpuMeasurementWithoutAGpuIsACleanError) {
  const run_result r = mpirun(1, {"memory"});
  if (r.status == 0) GTEST_SKIP() << "a GPU is visible here";
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_TRUE(r.err.find("no GPU is visible") != std::string::npos || r.err.find("built without CUDA") != std::string::npos)
      << r.err;
}

TEST(BenchMpi, ProfileFromACpuRunChangesThePlannerAsDocumented) {
  std::string path = ::testing::TempDir();
  path.append("bench_cpu_profile_").append(std::to_string(::getpid())).append(".json");
  const run_result r = mpirun(4, {"calibrate", "--backend", "mpi", "--max-bytes", "1M", "--iters", "5",
                                  "--calibration-out", path});
  ASSERT_EQ(r.status, 0) << r.err;
  const trainplan::calibration_profile p = trainplan::load_calibration(path);
  EXPECT_EQ(p.backend, "mpi");
  EXPECT_TRUE(p.gemms.empty());  // CPUs: links only
  ASSERT_EQ(p.collectives.size(), 3u);  // all-reduce, all-gather, reduce-scatter over the 4 ranks
  for (const auto& c : p.collectives) {
    EXPECT_EQ(c.ranks, 4);
    EXPECT_EQ(c.link, trainplan::link_class::intra_node);
    EXPECT_EQ(c.points.size(), 6u);  // 1K … 1M, factor 4
  }
  // §6.4: the intra-node efficiency and latency are the medians of the three sweeps' fits against the
  // GPU's NVLink rate, and an NVLink collective is then priced with them.
  trainplan::cluster_spec c = trainplan::find_cluster("dgx-h100");
  const double peak = c.gpu.intra_node_bandwidth_bytes_per_s;
  std::vector<double> eff, lat;
  for (const auto& sweep : p.collectives) {
    const trainplan::link_fit f = trainplan::fit_link(sweep, peak);
    eff.push_back(f.efficiency);
    lat.push_back(f.latency_s);
  }
  std::sort(eff.begin(), eff.end());
  std::sort(lat.begin(), lat.end());
  const trainplan::calibration_effect fx = trainplan::apply_calibration(c, p, path);
  EXPECT_DOUBLE_EQ(c.efficiency.intra_node, eff[1]);
  EXPECT_DOUBLE_EQ(fx.intra_node_efficiency, eff[1]);
  if (lat[1] > 0) {
    EXPECT_DOUBLE_EQ(c.intra_node_latency_s, lat[1]);
  }
  trainplan::group_placement tp;
  tp.group_size = 2;
  tp.gpus_per_node = 2;
  const double bytes = 64.0 * 1024 * 1024;
  const double ring = 2 * c.intra_node_latency_s + bytes * 1.0 / (peak * c.efficiency.intra_node);
  const double tree = 2 * c.intra_node_latency_s + bytes * 2.0 / (peak * c.efficiency.intra_node);
  EXPECT_NEAR(trainplan::collective_time_s(c, trainplan::collective_kind::all_reduce, bytes, tp), std::min(ring, tree),
              1e-12 * ring);
  std::remove(path.c_str());
}

}  // namespace

// ---- a torchrun-style launch: no mpirun; RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT ----

namespace {

/// True when nothing holds TCP `port` on this machine: a socket binds it without SO_REUSEADDR, so a port
/// in TIME_WAIT or held by another test's rank counts as taken.
bool port_is_free(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return ok;
}

/// The first of `count` consecutive free ports, looked for below Linux's ephemeral range (32768 and up,
/// /proc/sys/net/ipv4/ip_local_port_range), where no outgoing connection of a parallel test can take one
/// between this check and the bench's listen; the start depends on the process and the call, so two test
/// processes rarely probe the same ports.
int free_ports(int count) {
  static int counter = 0;
  constexpr int kFirst = 20000, kSpan = 12000;
  const int start = static_cast<int>((::getpid() * 7 + 101 * counter++) % kSpan);
  for (int i = 0; i < kSpan; ++i) {
    const int port = kFirst + (start + i) % (kSpan - count);
    bool all = true;
    for (int k = 0; k < count && all; ++k) all = port_is_free(port + k);
    if (all) return port;
  }
  ADD_FAILURE() << "no " << count << " consecutive free ports in " << kFirst << "-" << kFirst + kSpan;
  return kFirst;
}

/// Starts `ranks` processes as torchrun would (environment only) on 127.0.0.1 and a free port; returns
/// rank 0's stdout, every rank's stderr, and rank 0's exit status.
run_result torchrun(int ranks, const std::vector<std::string>& args) {
  const int port = free_ports(1);
  const std::string script =
      "n=$1; port=$2; shift 2; pids=; "
      "for r in $(seq $((n - 1)) -1 1); do RANK=$r WORLD_SIZE=$n LOCAL_RANK=$r MASTER_ADDR=127.0.0.1 "
      "MASTER_PORT=$port timeout -k 5 60 \"$BENCH\" \"$@\" >/dev/null & pids=\"$pids $!\"; done; "
      "RANK=0 WORLD_SIZE=$n LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port timeout -k 5 60 \"$BENCH\" \"$@\"; "
      "st=$?; wait $pids; exit $st";
  std::string prefix = "BENCH=";
  prefix.append(shell_quote(TRAINPLAN_BENCH_BINARY)).append(" bash -c ").append(shell_quote(script)).append(" _ ");
  prefix.append(std::to_string(ranks)).append(" ").append(std::to_string(port));
  return trainplan::testing::run_command(prefix, args);
}

TEST(BenchTorchrun, CollectivesThroughRankZeroAreCorrect) {
  const run_result r = torchrun(4, {"collectives", "--max-bytes", "16K", "--iters", "2", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["context"]["launcher"], "torchrun-style env");
  EXPECT_EQ(j["context"]["backend"], "star");  // no GPU, no MPI world
  EXPECT_EQ(j["context"]["world_size"], 4);
  ASSERT_EQ(j["collectives"].size(), 6u * 3u);
  for (const json& row : j["collectives"]) {
    EXPECT_EQ(row["errors"], 0) << row.dump();
    EXPECT_GT(row["time_s"].get<double>(), 0);
  }
}

TEST(BenchTorchrun, PlannersGroupsAndHealth) {
  const run_result g = torchrun(4, {"collectives", "--max-bytes", "4K", "--iters", "2", "--json", "--", "--model",
                                    "llama3-8b", "--tp", "2", "--pp", "2", "--gbs", "8"});
  ASSERT_EQ(g.status, 0) << g.err;
  const json groups = json::parse(g.out);  // kept alive: the loop iterates over a member
  for (const json& row : groups["collectives"]) {
    EXPECT_EQ(row["ranks"], 2);
    EXPECT_EQ(row["errors"], 0);
  }
  const run_result h = torchrun(4, {"health", "--serial", "--inject-slowdown", "1:10", "--threshold-pct", "35", "--json"});
  ASSERT_EQ(h.status, 1) << h.err;
  const json j = json::parse(h.out);
  const json& slow = j["slow_gemm"];
  ASSERT_FALSE(slow.empty());
  const auto worst = std::max_element(slow.begin(), slow.end(), [](const json& a, const json& b) {
    return a["shortfall"].get<double>() < b["shortfall"].get<double>();
  });
  EXPECT_EQ((*worst)["who"], "n0_g1 (rank 1)");
}

TEST(BenchTorchrun, UnderTorchrunsAgentStoreTheRanksMeetOnTheNextPort) {
  // Something (torchrun's agent, here a bench rank 0 of an unrelated run) holds MASTER_PORT.
  const int port = free_ports(2);  // MASTER_PORT for the holder, the next one for the ranks
  std::string holder = "RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=";
  holder.append(std::to_string(port)).append(" timeout -k 2 10 ").append(shell_quote(TRAINPLAN_BENCH_BINARY));
  holder.append(" health --timeout-s 6 >/dev/null 2>&1 & sleep 1; ");
  const std::string script =
      "n=$1; port=$2; shift 2; pids=; export TORCHELASTIC_USE_AGENT_STORE=True; "
      "for r in $(seq $((n - 1)) -1 1); do RANK=$r WORLD_SIZE=$n LOCAL_RANK=$r MASTER_ADDR=127.0.0.1 "
      "MASTER_PORT=$port timeout -k 5 60 \"$BENCH\" \"$@\" >/dev/null & pids=\"$pids $!\"; done; "
      "RANK=0 WORLD_SIZE=$n LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port timeout -k 5 60 \"$BENCH\" \"$@\"; "
      "st=$?; wait $pids; exit $st";
  std::string prefix = holder;
  prefix.append("BENCH=").append(shell_quote(TRAINPLAN_BENCH_BINARY)).append(" bash -c ").append(shell_quote(script));
  prefix.append(" _ 3 ").append(std::to_string(port));
  const run_result r = trainplan::testing::run_command(prefix, {"collectives", "--ops", "all_reduce", "--max-bytes", "4K"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("launched by torchrun-style env"));
}

TEST(BenchTorchrun, AHungRankIsNamedAndEveryRankEnds) {
  const run_result r = torchrun(4, {"health", "--inject-hang", "2", "--timeout-s", "3"});
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_THAT(r.err, HasSubstr("trainplan-bench: error: health: connectivity check: no answer from n0_g2 (rank 2, host "));
  EXPECT_LT(r.seconds, 30);  // the hung rank too has ended: the launcher's wait returned
}

TEST(BenchTorchrun, MissingOrBadVariablesAreNamed) {
  auto run_env = [](const std::string& env) {
    std::string prefix = env;
    prefix.append(" timeout -k 5 30 ").append(shell_quote(TRAINPLAN_BENCH_BINARY));
    return trainplan::testing::run_command(prefix, {"health", "--timeout-s", "2"});
  };
  run_result r = run_env("RANK=0 WORLD_SIZE=2");
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("trainplan-bench: error: torchrun-style launch: MASTER_ADDR and MASTER_PORT are not set"));
  r = run_env("RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=70000");
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("MASTER_PORT=70000 must be an integer between 1 and 65535"));
  r = run_env("RANK=5 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29999");
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("RANK=5 must be an integer between 0 and 1"));
  // A world size of 0 ran alone with exit 0.
  r = run_env("RANK=0 WORLD_SIZE=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=29999");
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("WORLD_SIZE=0 must be an integer between 1 and 100000"));
  // Rank 1 alone: rank 0 never listens — a rank that does not answer, exit 3 (docs/bench.md).
  r = run_env("RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29998");
  EXPECT_EQ(r.status, 3);
  EXPECT_THAT(r.err, HasSubstr("rank 1: rank 0 did not answer at 127.0.0.1:29998 within 2 s"));
  // Under torchrun's agent store the agent holds MASTER_PORT: the bench takes the next port, or
  // TRAINPLAN_BENCH_PORT.
  r = run_env("RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29998 TORCHELASTIC_USE_AGENT_STORE=True");
  EXPECT_THAT(r.err, HasSubstr("rank 0 did not answer at 127.0.0.1:29999 within 2 s"));
  r = run_env("RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29998 TORCHELASTIC_USE_AGENT_STORE=True "
              "TRAINPLAN_BENCH_PORT=29990");
  EXPECT_THAT(r.err, HasSubstr("rank 0 did not answer at 127.0.0.1:29990 within 2 s"));
  // --backend mpi without an MPI world.
  const run_result m = torchrun(2, {"collectives", "--backend", "mpi"});
  EXPECT_EQ(m.status, 2);
  EXPECT_THAT(m.err, HasSubstr("--backend mpi: these ranks were not started by mpirun or srun"));
}

}  // namespace
