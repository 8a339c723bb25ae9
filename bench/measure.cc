// Collective sweeps and the health check (docs/bench.md "Collectives" and "Health").
#include "measure.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "gpu.h"

namespace trainplan::bench {

namespace {

void meet(const world_info& w, int& step, double timeout_s, const std::string& what) {
  const std::vector<std::int64_t> missing = checkin(w, ++step, timeout_s);
  if (!missing.empty()) abort_hung(w, what, missing);
}

void show_progress(bool on, const std::string& line) {
  if (!on) return;
  std::fprintf(stderr, "\r\033[K%s", line.c_str());
  std::fflush(stderr);
}

/// Wrong elements of one checked op of `kind` in one mode on this rank.
std::int64_t check_once(collective_backend& be, collective_kind kind, const buffer_counts& c, bool in_place,
                        const deadline& d) {
  const std::int64_t r = be.rank(), n = be.size();
  std::vector<float> in(static_cast<std::size_t>(kind == collective_kind::reduce_scatter && in_place ? c.send : c.send));
  for (std::int64_t i = 0; i < c.send; ++i) in[static_cast<std::size_t>(i)] = send_value(kind, r, n, i, c.send);
  be.clear_output(c);
  be.write_input(kind, c, in_place, in);
  if (be.run(kind, c, in_place, 1, d) < 0) return -1;
  const std::vector<float> out = be.read_output(kind, c, in_place);
  std::int64_t wrong = 0;
  for (std::int64_t i = 0; i < c.recv; ++i) {
    if (out[static_cast<std::size_t>(i)] != expected_value(kind, r, n, i, c.recv)) ++wrong;
  }
  return wrong;
}

/// A collective that did not finish by its deadline: the ranks still answering check in over the control
/// plane, and those that do not are named (a rank stopped inside the collective), then the job ends with
/// kExitHung.
[[noreturn]] void abort_collective(const world_info& w, const std::string& what, double timeout_s) {
  constexpr int kCollectiveTimeoutStep = 1 << 20;  // a check-in of its own, apart from the steps' numbers
  const std::vector<std::int64_t> missing = checkin(w, kCollectiveTimeoutStep, timeout_s);
  abort_hung(w, what + fmt::format(" did not finish within {:.0f} s", timeout_s), missing);
}

/// Mean seconds per op over `iters` after `warmup`, averaged over the ranks of the communicator.
double timed(const world_info& w, collective_backend& be, collective_kind kind, const buffer_counts& c, bool in_place,
             const sweep_options& o, std::int64_t group_key, const std::string& what) {
  const deadline d(o.timeout_s);
  if (o.warmup > 0 && be.run(kind, c, in_place, o.warmup, d) < 0) abort_collective(w, what, o.timeout_s);
  const double t = be.run(kind, c, in_place, o.iters, d);
  if (t < 0) abort_collective(w, what, o.timeout_s);
  return group_sum(w, t, group_key, o.timeout_s, what) / static_cast<double>(be.size());
}

/// A CPU matrix product of fixed size: the health probe of a rank without a GPU (FLOP/s of one core).
/// The fastest of nine repeats: interference (other processes, a VM's stolen time) only slows a run.
double cpu_gemm_probe() {
  constexpr int kN = 256;
  std::vector<float> a(kN * kN, 0.5f), b(kN * kN, 0.25f), c(kN * kN, 0.f);
  std::vector<double> rates;
  for (int rep = 0; rep < 9; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kN; ++i)
      for (int k = 0; k < kN; ++k) {
        const float aik = a[i * kN + k];
        for (int j = 0; j < kN; ++j) c[i * kN + j] += aik * b[k * kN + j];
      }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    rates.push_back(2.0 * kN * kN * kN / s);
  }
  volatile float sink = c[kN + 1];
  (void)sink;
  return *std::max_element(rates.begin(), rates.end());
}

/// memcpy of 32 MiB: bytes read + written per second, the fastest of nine.
double cpu_memory_probe() {
  constexpr std::size_t kBytes = 32u << 20;
  std::vector<char> src(kBytes, 1), dst(kBytes, 0);
  std::vector<double> rates;
  for (int rep = 0; rep < 9; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    std::memcpy(dst.data(), src.data(), kBytes);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    rates.push_back(2.0 * kBytes / s);
  }
  volatile char sink = dst[12345];
  (void)sink;
  return *std::max_element(rates.begin(), rates.end());
}

/// Runs `probe` (returns a rate); on the slowed rank the probe takes `factor` × as long (test aid). The
/// extra time is spent busy, as a slow device is: a sleeping rank left its core idle, and on the CI VM
/// the rank probing next on that core then ran up to 40% slower (an idle vCPU wakes slowly).
double probe_with_slowdown(const std::function<double()>& probe, const health_options& o, std::int64_t rank) {
  const auto t0 = std::chrono::steady_clock::now();
  const double rate = probe();
  if (!o.slowdown || o.slowdown->rank != rank || o.slowdown->factor <= 1) return rate;
  const auto took = std::chrono::steady_clock::now() - t0;
  const auto until = t0 + took + std::chrono::duration_cast<std::chrono::steady_clock::duration>((o.slowdown->factor - 1) * took);
  volatile std::uint64_t spins = 0;
  while (std::chrono::steady_clock::now() < until) spins = spins + 1;
  return rate / o.slowdown->factor;
}

/// The GEMM and memory probes of this rank (FLOP/s, bytes/s), `o.repeats` times each (GEMM, copy, GEMM,
/// copy, …: a slow spell touches both), all ranks at once or in turn.
std::pair<std::vector<double>, std::vector<double>> run_probes(const world_info& w, bool gpu, const health_options& o,
                                                               int& step, health_report& rep) {
  std::vector<double> gemms, mems;
  auto probe_once = [&] {
    double gemm = 0, mem = 0;
    if (gpu) {
      const int device = static_cast<int>(w.self.local_rank % std::max(1, gpu_count()));
      gemm_timing t;
      t.samples = 10;
      t.algorithms = 1;
      t.reference = false;
      const gemm_request req{"probe", dtype::bf16, {8192, 8192, 8192, 1}};
      gemm = probe_with_slowdown(
          [&] { return 2.0 * 8192 * 8192 * 8192 / run_gemms(device, {req}, t, {}).front().time_s; }, o, w.self.rank);
      mem = probe_with_slowdown([&] { return run_copies(device, std::int64_t{1} << 30, 10).front().bytes_per_s; }, o,
                                w.self.rank);
    } else {
      gemm = probe_with_slowdown(cpu_gemm_probe, o, w.self.rank);
      mem = probe_with_slowdown(cpu_memory_probe, o, w.self.rank);
    }
    gemms.push_back(gemm);
    mems.push_back(mem);
  };
  rep.gemm_probe = gpu ? "bf16 GEMM 8192×8192×8192 (cuBLASLt)" : "fp32 CPU matrix product 256×256×256 (one core, fastest of 9)";
  rep.memory_probe = gpu ? "device-to-device copy of 1 GiB" : "memcpy of 32 MiB (fastest of 9)";
  if (o.serial) {
    // One rank at a time, each repeat in turn (rank 0, 1, …, then again): a slow spell of the machine
    // falls on every rank's repeats alike and widens their spread instead of lowering one rank's level.
    for (int k = 0; k < o.repeats; ++k) {
      for (std::int64_t r = 0; r < w.self.world; ++r) {
        meet(w, step, o.timeout_s, fmt::format("health: before the probes of {}", w.name_of(r)));
        if (r == w.self.rank) probe_once();
      }
    }
  } else {
    for (int k = 0; k < o.repeats; ++k) probe_once();
  }
  return {gemms, mems};
}

}  // namespace

std::vector<collective_row> run_sweep(const world_info& w, collective_backend& be, const sweep_options& o,
                                      const std::string& group, std::int64_t group_key, std::int64_t nodes,
                                      const predictor& predict, int& step) {
  std::vector<collective_row> rows;
  const std::int64_t n = be.size();
  const bool show = o.progress && be.rank() == 0 && w.self.rank == 0;
  std::size_t done = 0;
  const std::size_t total = o.ops.size() * o.sizes_bytes.size();
  for (const collective_kind kind : o.ops) {
    for (const std::int64_t size : o.sizes_bytes) {
      const buffer_counts c = counts_for(kind, size, n);
      const std::string what = fmt::format("{} of {} bytes over {} ({} ranks)", to_string(kind), c.bytes, group, n);
      show_progress(show, fmt::format("collectives: {} ({}/{})", what, ++done, total));
      meet(w, step, o.timeout_s, "collectives: before " + what);
      collective_row row;
      row.group = group;
      row.kind = kind;
      row.ranks = n;
      row.nodes = nodes;
      row.bytes = c.bytes;
      row.count = c.recv;
      row.time_s = timed(w, be, kind, c, false, o, group_key, what);
      const bandwidth bw = bandwidth_of(kind, n, static_cast<double>(c.bytes), row.time_s);
      row.algbw_bytes_per_s = bw.algbw_bytes_per_s;
      row.busbw_bytes_per_s = bw.busbw_bytes_per_s;
      row.has_in_place = be.has_in_place(kind);
      if (row.has_in_place) {
        row.in_place_time_s = timed(w, be, kind, c, true, o, group_key, what + " in place");
        const bandwidth ib = bandwidth_of(kind, n, static_cast<double>(c.bytes), row.in_place_time_s);
        row.in_place_algbw_bytes_per_s = ib.algbw_bytes_per_s;
        row.in_place_busbw_bytes_per_s = ib.busbw_bytes_per_s;
      }
      if (o.check) {
        const deadline d(o.timeout_s);
        std::int64_t wrong = check_once(be, kind, c, false, d);
        if (wrong >= 0 && row.has_in_place) {
          const std::int64_t w2 = check_once(be, kind, c, true, d);
          wrong = w2 < 0 ? -1 : wrong + w2;
        }
        if (wrong < 0) abort_hung(w, what + fmt::format(" (checked run) did not finish within {:.0f} s", o.timeout_s), {});
        row.errors = static_cast<std::int64_t>(group_sum(w, static_cast<double>(wrong), group_key, o.timeout_s, what));
      }
      if (predict) row.predicted_s = predict(kind, static_cast<double>(c.bytes));
      if (be.rank() == 0) rows.push_back(row);
    }
  }
  show_progress(show, "");
  return rows;
}

health_report run_health(const world_info& w, collective_backend& be, bool gpu, const health_options& o) {
  health_report rep;
  rep.backend = std::string(be.name());
  rep.world = w.self.world;
  rep.nodes = w.self.num_nodes;
  rep.threshold = o.threshold;
  rep.z_score = o.z_score;
  rep.repeats = o.repeats;
  rep.on_gpu = gpu;
  const bool show = o.progress && w.self.rank == 0;
  int step = 0;
  // 1. Connectivity: every rank is alive and reports (seeds/001's torch-distributed-gpu-test).
  if (o.hang_rank == w.self.rank) {  // test aid: never answers, until the job is ended
    constexpr int kTagNever = 7999;  // nobody sends it; a TCP peer's close still ends this rank
    for (;;) {
      if (w.self.rank == 0) {
        std::this_thread::sleep_for(std::chrono::seconds(1));
      } else {
        w.control->recv(0, kTagNever, deadline(1));
      }
    }
  }
  show_progress(show, "health: connectivity");
  meet(w, step, o.timeout_s, "health: connectivity check");

  // 2. The same probes on every rank.
  show_progress(show, "health: GEMM and memory probes");
  const auto [gemms, mems] = run_probes(w, gpu, o, step, rep);
  meet(w, step, o.timeout_s, "health: after the GEMM and memory probes");

  // 3. A checked all-reduce over every rank, and each rank's send/recv to its neighbour.
  show_progress(show, "health: all-reduce and send/recv");
  sweep_options so;
  so.ops = {collective_kind::all_reduce};
  so.sizes_bytes = {gpu ? std::int64_t{256} << 20 : std::int64_t{4} << 20};
  so.timeout_s = o.timeout_s;
  so.iters = 10;
  const std::vector<collective_row> ar = run_sweep(w, be, so, "world", 0, w.self.num_nodes, {}, step);
  const buffer_counts c = counts_for(collective_kind::send_recv, so.sizes_bytes.front(), be.size());
  const deadline d(o.timeout_s);
  be.run(collective_kind::send_recv, c, false, 2, d);
  const double sr = be.run(collective_kind::send_recv, c, false, 10, d);
  if (sr < 0) abort_hung(w, fmt::format("health: send/recv from {}", w.self.device_name()), {});

  // 4. Rank 0 gathers and judges.
  std::vector<std::int64_t> missing;
  std::vector<double> mine = gemms;  // [GEMM × repeats, copy × repeats, send/recv]
  mine.insert(mine.end(), mems.begin(), mems.end());
  mine.push_back(static_cast<double>(c.bytes) / sr);
  const auto all = gather_values(w, mine, 7200, o.timeout_s, missing);
  if (!missing.empty()) abort_hung(w, "health: gathering the probes", missing);
  show_progress(show, "");
  if (w.self.rank != 0) return rep;
  if (!ar.empty()) {
    rep.all_reduce_bytes = static_cast<double>(ar.front().bytes);
    rep.all_reduce_time_s = ar.front().time_s;
    rep.all_reduce_busbw_bytes_per_s = ar.front().busbw_bytes_per_s;
    rep.all_reduce_errors = ar.front().errors;
  }
  std::vector<rank_samples> g, m;
  const auto n = static_cast<std::ptrdiff_t>(o.repeats);
  for (std::int64_t r = 0; r < w.self.world; ++r) {
    const auto& v = all[static_cast<std::size_t>(r)];
    rank_samples gs{r, w.name_of(r), w.hosts[static_cast<std::size_t>(r)], {v.begin(), v.begin() + n}};
    rank_samples ms{r, gs.name, gs.host, {v.begin() + n, v.begin() + 2 * n}};
    const sample_summary gsum = summarize_samples(gs.values), msum = summarize_samples(ms.values);
    rep.ranks.push_back({r, gs.name, gs.host, gsum.level, gsum.spread, msum.level, msum.spread, v[static_cast<std::size_t>(2 * n)]});
    g.push_back(std::move(gs));
    m.push_back(std::move(ms));
  }
  rep.slow_gemm = find_slow(g, o.threshold, o.z_score);
  rep.slow_memory = find_slow(m, o.threshold, o.z_score);
  return rep;
}

}  // namespace trainplan::bench
