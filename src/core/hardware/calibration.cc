// Calibration profiles: the JSON format (docs/calibration.md).
#include "trainplan/core/hardware/calibration.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "trainplan/core/base/input_file.h"
#include "trainplan/core/base/input_text.h"
#include "trainplan/core/base/error.h"

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
  return parse_calibration(read_input_file(path, "${calibration}", kMaxCalibrationFileBytes), path);
}

}  // namespace trainplan
