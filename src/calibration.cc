// Calibration profiles: the JSON format (docs/calibration.md) and how a profile replaces the planner's
// default efficiencies and link rates (docs/formulas.md §6.4).
#include "trainplan/calibration.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "trainplan/compute.h"
#include "input_text.h"
#include "trainplan/error.h"

namespace trainplan {

namespace {

using nlohmann::json;

constexpr std::array<std::pair<std::string_view, dtype>, 5> kDtypes = {
    {{"fp32", dtype::fp32}, {"tf32", dtype::tf32}, {"bf16", dtype::bf16}, {"fp16", dtype::fp16}, {"fp8", dtype::fp8}}};
constexpr std::array<std::pair<std::string_view, collective_kind>, 6> kCollectives = {
    {{"all_reduce", collective_kind::all_reduce},
     {"all_gather", collective_kind::all_gather},
     {"reduce_scatter", collective_kind::reduce_scatter},
     {"all_to_all", collective_kind::all_to_all},
     {"send_recv", collective_kind::send_recv},
     {"broadcast", collective_kind::broadcast}}};

/// Reads typed fields of one JSON object, naming `origin: path.field` in every error.
class reader {
 public:
  reader(const json& j, std::string origin, std::string path) : j_(j), origin_(std::move(origin)), path_(std::move(path)) {
    if (!j_.is_object()) fail("", "must be an object");
  }
  [[noreturn]] void fail(std::string_view field, std::string_view rule) const {
    throw input_error(fmt::format("{}: {}: {}", origin_, name(field), rule));
  }
  std::string name(std::string_view field) const {
    if (field.empty()) return path_.empty() ? std::string("(top level)") : path_;
    return path_.empty() ? std::string(field) : fmt::format("{}.{}", path_, field);
  }
  bool has(std::string_view field) const { return j_.contains(std::string(field)); }
  const json& at(std::string_view field) const {
    const auto it = j_.find(std::string(field));
    if (it == j_.end()) fail(field, "is required");
    return *it;
  }
  double number(std::string_view field, bool required, double lo_exclusive = -1) const {
    if (!required && !has(field)) return 0;
    const json& v = at(field);
    if (!v.is_number()) fail(field, "must be a number");
    const double d = v.get<double>();
    if (!std::isfinite(d)) fail(field, "must be finite");
    if (d <= lo_exclusive) fail(field, lo_exclusive == 0 ? "must be positive" : "must not be negative");
    return d;
  }
  std::int64_t integer(std::string_view field, std::int64_t lo, std::int64_t hi) const {
    const json& v = at(field);
    if (!v.is_number_integer()) fail(field, "must be an integer");
    const auto x = v.get<std::int64_t>();
    if (x < lo || x > hi) fail(field, fmt::format("must be between {} and {}, got {}", lo, hi, x));
    return x;
  }
  std::string text(std::string_view field) const {
    if (!has(field)) return "";
    const json& v = at(field);
    if (!v.is_string()) fail(field, "must be a string");
    return v.get<std::string>();
  }
  template <typename E, std::size_t N>
  E choice(std::string_view field, const std::array<std::pair<std::string_view, E>, N>& table) const {
    const std::string v = text(field);
    std::vector<std::string> names;
    for (const auto& [n, e] : table) {
      if (v == n) return e;
      names.emplace_back(n);
    }
    fail(field, fmt::format("unknown value '{}'{}; one of: {}", v, did_you_mean(v, names), fmt::join(names, ", ")));
  }
  const json& array(std::string_view field) const {
    const json& v = at(field);
    if (!v.is_array()) fail(field, "must be a list");
    return v;
  }
  const std::string& origin() const { return origin_; }

 private:
  const json& j_;
  std::string origin_;
  std::string path_;
};

template <typename E, std::size_t N>
std::string_view name_of(E e, const std::array<std::pair<std::string_view, E>, N>& table) {
  for (const auto& [n, v] : table)
    if (v == e) return n;
  return "?";
}

measured_gemm read_gemm(const reader& r) {
  measured_gemm g;
  g.precision = r.choice("dtype", kDtypes);
  constexpr std::int64_t kMaxDim = std::int64_t{1} << 24;
  g.m = r.integer("m", 1, kMaxDim);
  g.n = r.integer("n", 1, kMaxDim);
  g.k = r.integer("k", 1, kMaxDim);
  g.batch = r.has("batch") ? r.integer("batch", 1, kMaxDim) : 1;
  g.time_s = r.number("time_s", true, 0);
  g.flops_per_s = 2.0 * g.m * g.n * g.k * g.batch / g.time_s;
  return g;
}

measured_collective read_collective(const reader& r) {
  measured_collective c;
  c.kind = r.choice("collective", kCollectives);
  c.ranks = r.integer("ranks", 1, 10'000'000);
  c.nodes = r.integer("nodes", 1, c.ranks);
  c.link = c.nodes > 1 ? link_class::inter_node : link_class::intra_node;
  const json& pts = r.array("points");
  for (std::size_t i = 0; i < pts.size(); ++i) {
    const reader p(pts[i], r.origin(), r.name(fmt::format("points[{}]", i)));
    measured_collective_point x;
    x.bytes = p.number("bytes", true, 0);
    x.time_s = p.number("time_s", true, 0);
    x.algbw_bytes_per_s = x.bytes / x.time_s;
    x.busbw_bytes_per_s = x.algbw_bytes_per_s * bus_factor(c.kind, c.ranks);
    c.points.push_back(x);
  }
  return c;
}

json to_json(const measured_collective& c) {
  json pts = json::array();
  for (const measured_collective_point& p : c.points) {
    pts.push_back({{"bytes", p.bytes},
                   {"time_s", p.time_s},
                   {"algbw_bytes_per_s", p.algbw_bytes_per_s},
                   {"busbw_bytes_per_s", p.busbw_bytes_per_s}});
  }
  return {{"collective", name_of(c.kind, kCollectives)},
          {"ranks", c.ranks},
          {"nodes", c.nodes},
          {"link", to_string(c.link)},
          {"points", pts}};
}

/// Nearest measured points used by the interpolation (inverse distance weighting, power 2).
constexpr std::size_t kNeighbours = 4;

}  // namespace

std::string_view to_string(link_class c) { return c == link_class::intra_node ? "intra_node" : "inter_node"; }

std::string calibration_to_json(const calibration_profile& p) {
  json gemms = json::array();
  for (const measured_gemm& g : p.gemms) {
    gemms.push_back({{"dtype", name_of(g.precision, kDtypes)},
                     {"m", g.m},
                     {"n", g.n},
                     {"k", g.k},
                     {"batch", g.batch},
                     {"time_s", g.time_s},
                     {"flops_per_s", g.flops_per_s}});
  }
  json colls = json::array();
  for (const measured_collective& c : p.collectives) colls.push_back(to_json(c));
  json j = {{"schema_version", p.schema_version},
            {"kind", "trainplan-calibration"},
            {"created_utc", p.created_utc},
            {"host", p.host},
            {"backend", p.backend},
            {"gpu",
             {{"name", p.gpu_name},
              {"catalog_name", p.gpu_catalog_name},
              {"sm_count", p.sm_count},
              {"driver_version", p.driver_version},
              {"cuda_runtime_version", p.cuda_runtime_version},
              {"cublaslt_version", p.cublaslt_version},
              {"nccl_version", p.nccl_version},
              {"mpi_version", p.mpi_version}}},
            {"gemm", gemms},
            {"memory",
             {{"device_copy_bytes_per_s", p.device_copy_bytes_per_s},
              {"host_to_device_bytes_per_s", p.host_to_device_bytes_per_s},
              {"device_to_host_bytes_per_s", p.device_to_host_bytes_per_s}}},
            {"collectives", colls}};
  return j.dump(1, ' ', false, json::error_handler_t::replace) + "\n";
}

calibration_profile parse_calibration(const std::string& text, const std::string& origin) {
  detail::require_utf8(text, origin);
  json j;
  try {
    j = json::parse(text);
  } catch (const json::out_of_range& e) {
    detail::throw_number_out_of_range(text, origin, e.what());
  } catch (const json::parse_error& e) {
    throw input_error(fmt::format("{}:{}: not valid JSON (byte {})", origin, detail::line_of(text, e.byte), e.byte));
  }
  const reader top(j, origin, "");
  calibration_profile p;
  p.schema_version = static_cast<int>(top.integer("schema_version", 1, 1'000'000));
  if (p.schema_version != kCalibrationSchemaVersion) {
    top.fail("schema_version", fmt::format("this trainplan reads version {}, the file is version {}",
                                           kCalibrationSchemaVersion, p.schema_version));
  }
  if (top.text("kind") != "trainplan-calibration") top.fail("kind", "must be \"trainplan-calibration\"");
  p.created_utc = top.text("created_utc");
  p.host = top.text("host");
  p.backend = top.text("backend");
  if (top.has("gpu")) {
    const reader g(top.at("gpu"), origin, "gpu");
    p.gpu_name = g.text("name");
    p.gpu_catalog_name = g.text("catalog_name");
    if (!p.gpu_catalog_name.empty()) find_gpu(p.gpu_catalog_name);  // unknown names: "did you mean"
    p.sm_count = g.has("sm_count") ? g.integer("sm_count", 0, 1'000'000) : 0;
    p.driver_version = g.text("driver_version");
    p.cuda_runtime_version = g.text("cuda_runtime_version");
    p.cublaslt_version = g.text("cublaslt_version");
    p.nccl_version = g.text("nccl_version");
    p.mpi_version = g.text("mpi_version");
  }
  if (top.has("gemm")) {
    const json& list = top.array("gemm");
    for (std::size_t i = 0; i < list.size(); ++i) p.gemms.push_back(read_gemm(reader(list[i], origin, fmt::format("gemm[{}]", i))));
  }
  if (top.has("memory")) {
    const reader m(top.at("memory"), origin, "memory");
    p.device_copy_bytes_per_s = m.number("device_copy_bytes_per_s", false, -1);
    p.host_to_device_bytes_per_s = m.number("host_to_device_bytes_per_s", false, -1);
    p.device_to_host_bytes_per_s = m.number("device_to_host_bytes_per_s", false, -1);
  }
  if (top.has("collectives")) {
    const json& list = top.array("collectives");
    for (std::size_t i = 0; i < list.size(); ++i) {
      p.collectives.push_back(read_collective(reader(list[i], origin, fmt::format("collectives[{}]", i))));
    }
  }
  if (!p.gemms.empty() && p.gpu_catalog_name.empty()) {
    top.fail("gpu.catalog_name", "is required when the profile has GEMM measurements (which GPU were they taken on?)");
  }
  return p;
}

calibration_profile load_calibration(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw input_error(fmt::format("--calibration: '{}' is a directory; give the profile file in it (profile.json)", path));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw input_error(fmt::format("--calibration: cannot read '{}'", path));
  std::ostringstream ss;
  ss << in.rdbuf();
  return parse_calibration(ss.str(), path);
}

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
    throw input_error(fmt::format("--calibration {}: measured on {} ({}), but the job's GPU is {}", origin,
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
