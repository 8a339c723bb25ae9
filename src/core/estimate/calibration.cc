// A calibration profile applied (docs/formulas.md §6.4): the measured GEMM table the compute model
// corrects its efficiencies with, and the links' efficiencies and latencies fitted to the sweeps.
#include "trainplan/core/estimate/calibration.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <memory>
#include <vector>

#include <fmt/format.h>

#include "trainplan/core/base/error.h"
#include "trainplan/core/estimate/compute.h"

namespace trainplan {

namespace {

/// Nearest measured points used by the interpolation (inverse distance weighting, power 2).
constexpr std::size_t kNeighbours = 4;

}  // namespace

std::uint64_t measured_gemm_table::next_id() {
  static std::atomic<std::uint64_t> counter{1};
  return counter.fetch_add(1, std::memory_order_relaxed);
}

double measured_gemm_table::correction(dtype precision, std::int64_t m, std::int64_t n, std::int64_t k,
                                       std::int64_t batch) const {
  // A direct-mapped memo per thread: a search evaluates the same few dozen shapes over and over.
  struct entry {
    std::uint64_t table = 0;
    std::int64_t m = 0, n = 0, k = 0, batch = 0;
    dtype precision = dtype::fp32;
    double value = 0;
  };
  constexpr std::size_t kSlots = 1024;
  thread_local std::array<entry, kSlots> memo{};
  std::uint64_t h = static_cast<std::uint64_t>(m) * 0x9E3779B97F4A7C15ull;
  h ^= static_cast<std::uint64_t>(n) * 0xC2B2AE3D27D4EB4Full + (h << 6) + (h >> 2);
  h ^= static_cast<std::uint64_t>(k) * 0x165667B19E3779F9ull + (h << 6) + (h >> 2);
  h ^= static_cast<std::uint64_t>(batch) * 0x27D4EB2F165667C5ull + static_cast<std::uint64_t>(precision) + (h >> 29);
  entry& e = memo[h % kSlots];
  if (e.table == id && e.m == m && e.n == n && e.k == k && e.batch == batch && e.precision == precision) return e.value;
  e = {id, m, n, k, batch, precision, compute_correction(precision, m, n, k, batch)};
  return e.value;
}

double measured_gemm_table::compute_correction(dtype precision, std::int64_t m, std::int64_t n, std::int64_t k,
                                               std::int64_t batch) const {
  const double q[4] = {std::log2(static_cast<double>(m)), std::log2(static_cast<double>(n)),
                       std::log2(static_cast<double>(k)), std::log2(static_cast<double>(batch))};
  // The kNeighbours nearest points of this precision by squared distance in log2 shape space.
  std::array<std::pair<double, double>, kNeighbours> best;  // (distance², ratio)
  best.fill({1e300, 1.0});
  std::size_t found = 0;
  for (const point& p : points) {
    if (p.precision != precision) continue;
    const double d2 = (p.log2_m - q[0]) * (p.log2_m - q[0]) + (p.log2_n - q[1]) * (p.log2_n - q[1]) +
                      (p.log2_k - q[2]) * (p.log2_k - q[2]) + (p.log2_batch - q[3]) * (p.log2_batch - q[3]);
    if (d2 < 1e-18) return p.ratio;  // a measured shape: its own measurement
    ++found;
    if (d2 >= best.back().first) continue;
    best.back() = {d2, p.ratio};
    std::sort(best.begin(), best.end());
  }
  if (found == 0) return 1.0;
  double weights = 0, sum = 0;
  for (std::size_t i = 0; i < std::min(found, kNeighbours); ++i) {
    const double w = 1.0 / best[i].first;
    weights += w;
    sum += w * best[i].second;
  }
  return sum / weights;
}

link_fit fit_link(const measured_collective& sweep, double peak_bytes_per_s) {
  // t ≈ x1·u + x2·v with u = ring steps, v = S·F/peak; minimise Σ((x1·u + x2·v − t)/t)² (§6.4).
  const double steps = ring_steps(sweep.kind, sweep.ranks);  // the planner's own count (§4.3)
  const double factor = bus_factor(sweep.kind, sweep.ranks);
  double saa = 0, sab = 0, sbb = 0, sa = 0, sb = 0;
  for (const measured_collective_point& p : sweep.points) {
    const double a = steps / p.time_s;
    const double b = p.bytes * factor / peak_bytes_per_s / p.time_s;
    saa += a * a;
    sab += a * b;
    sbb += b * b;
    sa += a;
    sb += b;
  }
  link_fit f;
  if (sweep.points.empty() || sbb <= 0) return f;
  const double det = saa * sbb - sab * sab;
  double x1 = det > 0 ? (sa * sbb - sb * sab) / det : 0;
  double x2 = det > 0 ? (saa * sb - sab * sa) / det : 0;
  if (x1 <= 0 || x2 <= 0) {  // one point, or noise: bandwidth from the sizes alone, no latency term
    x1 = 0;
    x2 = sb / sbb;
  }
  f.efficiency = 1.0 / x2;
  f.latency_s = x1;
  return f;
}

calibration_effect apply_calibration(cluster_spec& c, const calibration_profile& p, std::string_view origin) {
  calibration_effect fx;
  gpu_spec& gpu = c.gpu;
  const bool gpu_measured = !p.gemms.empty() || p.device_copy_bytes_per_s > 0;
  if (gpu_measured && p.gpu_catalog_name != gpu.name) {
    throw input_error(fmt::format("${{calibration}} {}: measured on {} ({}), but the job's GPU is {}", origin,
                                  p.gpu_catalog_name.empty() ? "an unknown GPU" : p.gpu_catalog_name, p.gpu_name,
                                  gpu.name));
  }
  if (!p.gemms.empty()) {
    // Ratios against the model as it stands (catalog defaults and any cluster-file override).
    compute_efficiency model = effective_compute_efficiency(gpu);
    model.measured.reset();
    auto table = std::make_shared<measured_gemm_table>();
    for (const measured_gemm& g : p.gemms) {
      const gemm_shape s{g.m, g.n, g.k, g.batch};
      const double modelled = estimate_gemm(gpu, model, g.precision, s).efficiency;
      const double peak = gpu.peak_flops(g.precision);
      if (modelled <= 0 || peak <= 0) continue;  // a precision this GPU has no rate for
      const double achieved = g.flops_per_s / peak;
      table->points.push_back({g.precision, std::log2(static_cast<double>(g.m)), std::log2(static_cast<double>(g.n)),
                               std::log2(static_cast<double>(g.k)), std::log2(static_cast<double>(g.batch)),
                               achieved / modelled});
    }
    fx.gemm_points = static_cast<std::int64_t>(table->points.size());
    if (!table->points.empty()) gpu.compute.measured = std::move(table);
  }
  if (p.device_copy_bytes_per_s > 0) {
    // The elementwise kernels of §5.3 move bytes read + written, as the copy measures them.
    fx.memory_bandwidth_fraction = p.device_copy_bytes_per_s / gpu.memory_bandwidth_bytes_per_s;
    gpu.compute.memory_bandwidth_fraction = fx.memory_bandwidth_fraction;
  }
  // Links: the median fit over the sweeps of each class (§6.4).
  for (const link_class cls : {link_class::intra_node, link_class::inter_node}) {
    std::vector<link_fit> fits;
    for (const measured_collective& m : p.collectives) {
      if (m.link != cls || m.ranks < 2 || m.points.empty()) continue;
      const double peak = cls == link_class::intra_node
                              ? gpu.intra_node_bandwidth_bytes_per_s
                              : c.node_network_bandwidth_bytes_per_s() * static_cast<double>(m.nodes) /
                                    static_cast<double>(m.ranks);
      const link_fit f = fit_link(m, peak);
      if (f.efficiency > 0) fits.push_back(f);
    }
    if (fits.empty()) continue;
    auto median = [&](double link_fit::*field) {
      std::vector<double> v;
      for (const link_fit& f : fits) v.push_back(f.*field);
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    const double eff = median(&link_fit::efficiency);
    const double lat = median(&link_fit::latency_s);
    if (cls == link_class::intra_node) {
      fx.intra_node_efficiency = c.efficiency.intra_node = eff;
      if (lat > 0) fx.intra_node_latency_s = c.intra_node_latency_s = lat;
    } else {
      fx.inter_node_efficiency = c.efficiency.inter_node = eff;
      if (lat > 0) fx.inter_node_latency_s = c.inter_node_latency_s = lat;
    }
  }
  return fx;
}

}  // namespace trainplan
