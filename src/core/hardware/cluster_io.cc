// Cluster files (docs/formulas.md §6.3): YAML or JSON read through one table of keys per struct, with
// units in the key names, and the checks every cluster (file or catalog) must pass.
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <map>
#include <sstream>
#include <type_traits>
#include <variant>

#include "trainplan/core/base/input_file.h"
#include "trainplan/core/base/input_text.h"
#include "hardware/hardware_units.h"
#include "trainplan/core/base/error.h"
#include "trainplan/core/hardware/hardware.h"

namespace trainplan {

namespace {

using detail::kGiB;
using detail::kGiga;
using detail::kMiB;
using detail::kTera;

enum class rule {
  none,          ///< any value
  non_empty,     ///< text with at least one character
  positive,      ///< finite and > 0
  non_negative,  ///< finite and >= 0
  fraction,      ///< finite, in (0, 1]
};

/// One key a file may set. `scale` converts the file's unit to the field's unit (1 for the field itself).
template <class S>
struct field_def {
  std::string_view key;
  std::string_view field;
  std::variant<double S::*, std::int64_t S::*, std::string S::*> member;
  rule check = rule::none;
  double scale = 1;
};

const std::vector<field_def<gpu_spec>>& gpu_fields() {
  using g = gpu_spec;
  static const std::vector<field_def<g>> fields = {
      {"name", "name", &g::name, rule::non_empty},
      {"vendor", "vendor", &g::vendor},
      {"peak_fp32_flops", "peak_fp32_flops", &g::peak_fp32_flops, rule::positive},
      {"peak_fp32_tflops", "peak_fp32_flops", &g::peak_fp32_flops, rule::positive, kTera},
      {"peak_tf32_flops", "peak_tf32_flops", &g::peak_tf32_flops, rule::positive},
      {"peak_tf32_tflops", "peak_tf32_flops", &g::peak_tf32_flops, rule::positive, kTera},
      {"peak_bf16_flops", "peak_bf16_flops", &g::peak_bf16_flops, rule::positive},
      {"peak_bf16_tflops", "peak_bf16_flops", &g::peak_bf16_flops, rule::positive, kTera},
      {"peak_fp8_flops", "peak_fp8_flops", &g::peak_fp8_flops, rule::non_negative},
      {"peak_fp8_tflops", "peak_fp8_flops", &g::peak_fp8_flops, rule::non_negative, kTera},
      {"memory_bytes", "memory_bytes", &g::memory_bytes, rule::positive},
      {"memory_gib", "memory_bytes", &g::memory_bytes, rule::positive, double(kGiB)},
      {"memory_gb", "memory_bytes", &g::memory_bytes, rule::positive, kGiga},
      {"usable_memory_bytes", "usable_memory_bytes", &g::usable_memory_bytes, rule::positive},
      {"usable_memory_gib", "usable_memory_bytes", &g::usable_memory_bytes, rule::positive, double(kGiB)},
      {"usable_memory_mib", "usable_memory_bytes", &g::usable_memory_bytes, rule::positive, double(kMiB)},
      {"memory_bandwidth_bytes_per_s", "memory_bandwidth_bytes_per_s", &g::memory_bandwidth_bytes_per_s,
       rule::positive},
      {"memory_bandwidth_gb_per_s", "memory_bandwidth_bytes_per_s", &g::memory_bandwidth_bytes_per_s,
       rule::positive, kGiga},
      {"memory_bandwidth_tb_per_s", "memory_bandwidth_bytes_per_s", &g::memory_bandwidth_bytes_per_s,
       rule::positive, kTera},
      {"sm_count", "sm_count", &g::sm_count, rule::positive},
      {"intra_node_bandwidth_bytes_per_s", "intra_node_bandwidth_bytes_per_s",
       &g::intra_node_bandwidth_bytes_per_s, rule::positive},
      {"intra_node_bandwidth_gb_per_s", "intra_node_bandwidth_bytes_per_s",
       &g::intra_node_bandwidth_bytes_per_s, rule::positive, kGiga},
      {"host_link_bytes_per_s", "host_link_bytes_per_s", &g::host_link_bytes_per_s, rule::non_negative},
      {"host_link_gb_per_s", "host_link_bytes_per_s", &g::host_link_bytes_per_s, rule::non_negative, kGiga},
      {"cuda_context_bytes", "cuda_context_bytes", &g::cuda_context_bytes, rule::non_negative},
      {"cuda_context_mib", "cuda_context_bytes", &g::cuda_context_bytes, rule::non_negative, double(kMiB)},
      {"source", "source", &g::source},
  };
  return fields;
}

const std::vector<field_def<cluster_spec>>& cluster_fields() {
  using c = cluster_spec;
  static const std::vector<field_def<c>> fields = {
      {"name", "name", &c::name, rule::non_empty},
      {"gpus_per_node", "gpus_per_node", &c::gpus_per_node, rule::positive},
      {"num_nodes", "num_nodes", &c::num_nodes, rule::positive},
      {"nics_per_node", "nics_per_node", &c::nics_per_node, rule::positive},
      {"nic_bandwidth_bytes_per_s", "nic_bandwidth_bytes_per_s", &c::nic_bandwidth_bytes_per_s,
       rule::positive},
      {"nic_bandwidth_gbit_per_s", "nic_bandwidth_bytes_per_s", &c::nic_bandwidth_bytes_per_s,
       rule::positive, kGiga / 8},
      {"nic_bandwidth_gbps", "nic_bandwidth_bytes_per_s", &c::nic_bandwidth_bytes_per_s, rule::positive,
       kGiga / 8},  // Gb/s, as NICs are sold (200 for HDR InfiniBand)
      {"nic_bandwidth_gb_per_s", "nic_bandwidth_bytes_per_s", &c::nic_bandwidth_bytes_per_s, rule::positive,
       kGiga},
      {"intra_node_latency_s", "intra_node_latency_s", &c::intra_node_latency_s, rule::positive},
      {"intra_node_latency_us", "intra_node_latency_s", &c::intra_node_latency_s, rule::positive, 1e-6},
      {"inter_node_latency_s", "inter_node_latency_s", &c::inter_node_latency_s, rule::positive},
      {"inter_node_latency_us", "inter_node_latency_s", &c::inter_node_latency_s, rule::positive, 1e-6},
      {"interconnect", "interconnect", &c::interconnect},
      {"source", "source", &c::source},
  };
  return fields;
}

/// `gpu: {compute: {...}}`: the compute model's free constants (§5.6), each replacing the catalog default.
const std::vector<field_def<compute_efficiency>>& compute_fields() {
  using e = compute_efficiency;
  static const std::vector<field_def<e>> fields = {
      {"tiles_per_sm", "tiles_per_sm", &e::tiles_per_sm, rule::positive},
      {"align8_factor", "align8_factor", &e::align8_factor, rule::fraction},
      {"align64_factor", "align64_factor", &e::align64_factor, rule::fraction},
      {"unaligned_factor", "unaligned_factor", &e::unaligned_factor, rule::fraction},
      {"k_half", "k_half", &e::k_half, rule::positive},
      {"ramp_flops", "ramp_flops", &e::ramp_flops, rule::positive},
      {"attention_bmm_factor", "attention_bmm_factor", &e::attention_bmm_factor, rule::positive},
      {"flash_attention_fraction", "flash_attention_fraction", &e::flash_attention_fraction, rule::fraction},
      {"flash_backward_fraction", "flash_backward_fraction", &e::flash_backward_fraction, rule::fraction},
      {"flash_half_seq", "flash_half_seq", &e::flash_half_seq, rule::positive},
      {"flash_backward_half_seq", "flash_backward_half_seq", &e::flash_backward_half_seq, rule::positive},
      {"sustained_clock_factor", "sustained_clock_factor", &e::sustained_clock_factor, rule::fraction},
      {"memory_bandwidth_fraction", "memory_bandwidth_fraction", &e::memory_bandwidth_fraction, rule::fraction},
      {"kernel_overhead_s", "kernel_overhead_s", &e::kernel_overhead_s, rule::positive},
      {"kernel_overhead_us", "kernel_overhead_s", &e::kernel_overhead_s, rule::positive, 1e-6},
      {"unfused_softmax_factor", "unfused_softmax_factor", &e::unfused_softmax_factor, rule::positive},
  };
  return fields;
}

const std::vector<field_def<gemm_tile>>& tile_fields() {
  using t = gemm_tile;
  static const std::vector<field_def<t>> fields = {
      {"m", "m", &t::m, rule::positive},
      {"n", "n", &t::n, rule::positive},
      {"peak_fraction", "peak_fraction", &t::peak_fraction, rule::fraction},
  };
  return fields;
}

const std::vector<field_def<link_efficiency>>& efficiency_fields() {
  using e = link_efficiency;
  static const std::vector<field_def<e>> fields = {
      {"intra_node", "intra_node", &e::intra_node, rule::fraction},
      {"inter_node", "inter_node", &e::inter_node, rule::fraction},
  };
  return fields;
}

/// The words of a rule, as they follow "must be".
std::string_view rule_words(rule r) {
  switch (r) {
    case rule::none: return "anything";
    case rule::non_empty: return "non-empty";
    case rule::positive: return "positive and finite";
    case rule::non_negative: return "non-negative and finite";
    case rule::fraction: return "in (0, 1]";
  }
  return "";
}

bool satisfies(rule r, double v) {
  switch (r) {
    case rule::none:
    case rule::non_empty: return true;
    case rule::positive: return std::isfinite(v) && v > 0;
    case rule::non_negative: return std::isfinite(v) && v >= 0;
    case rule::fraction: return std::isfinite(v) && v > 0 && v <= 1;
  }
  return false;
}

/// "ORIGIN: field 'FIELD' must be RULE, got VALUE".
[[noreturn]] void fail_rule(std::string_view origin, std::string_view field, rule r, std::string_view got) {
  throw input_error(fmt::format("{}: field '{}' must be {}, got {}", origin, field, rule_words(r), got));
}

template <class S>
void check_fields(const S& s, const std::vector<field_def<S>>& fields, std::string_view prefix,
                  std::string_view origin) {
  for (const auto& f : fields) {
    if (f.key != f.field || f.check == rule::none) continue;
    const std::string name = fmt::format("{}{}", prefix, f.field);
    std::visit(
        [&](auto member) {
          const auto& v = s.*member;
          using value_type = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<value_type, std::string>) {
            if (f.check == rule::non_empty && v.empty()) fail_rule(origin, name, f.check, "''");
          } else {
            if (!satisfies(f.check, static_cast<double>(v))) fail_rule(origin, name, f.check, fmt::format("{}", v));
          }
        },
        f.member);
  }
}

// ---- Cluster files ----

/// A cluster file being read: its path, for "PATH:LINE: " prefixes.
struct file_context {
  std::string path;

  /// "PATH:LINE" of a node; yaml-cpp's lines are 0-based. An empty value (whose mark is the next token)
  /// or one with no mark takes the line of `key`.
  std::string where(const YAML::Node& node, const YAML::Node& key = YAML::Node()) const {
    int line = node.Mark().line;
    if ((line < 0 || node.IsNull()) && key.IsDefined()) line = key.Mark().line;
    return line < 0 ? path : fmt::format("{}:{}", path, line + 1);
  }
};

/// Words for what a node holds, for "got ..." in type errors.
std::string describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null: return "nothing";
    case YAML::NodeType::Scalar: return fmt::format("'{}'", node.Scalar());
    case YAML::NodeType::Sequence: return "a sequence";
    case YAML::NodeType::Map: return "a mapping";
    case YAML::NodeType::Undefined: return "nothing";
  }
  return "nothing";
}

[[noreturn]] void fail_type(const file_context& file, const YAML::Node& key, const YAML::Node& value,
                            std::string_view field, std::string_view wanted) {
  throw input_error(
      fmt::format("{}: field '{}' must be {}, got {}", file.where(value, key), field, wanted, describe(value)));
}

std::string read_text(const file_context& file, const YAML::Node& key, const YAML::Node& value,
                      std::string_view field) {
  if (!value.IsScalar()) fail_type(file, key, value, field, "a string");
  return value.Scalar();
}

double read_number(const file_context& file, const YAML::Node& key, const YAML::Node& value,
                   std::string_view field) {
  if (!value.IsScalar()) fail_type(file, key, value, field, "a number");
  try {
    return value.as<double>();
  } catch (const YAML::Exception&) {
    fail_type(file, key, value, field, "a number");
  }
}

/// Sets one field from the file; checks the field's rule against the value as written (in the key's unit).
template <class S>
void set_field(S& s, const field_def<S>& f, const file_context& file, const YAML::Node& key,
               const YAML::Node& value, std::string_view prefix) {
  const std::string name = fmt::format("{}{}", prefix, f.key);
  const std::string origin = file.where(value, key);
  std::visit(
      [&](auto member) {
        auto& target = s.*member;
        using value_type = std::decay_t<decltype(target)>;
        if constexpr (std::is_same_v<value_type, std::string>) {
          target = read_text(file, key, value, name);
          if (f.check == rule::non_empty && target.empty()) fail_rule(origin, name, f.check, "''");
        } else {
          const double v = read_number(file, key, value, name);
          if (!satisfies(f.check, v)) fail_rule(origin, name, f.check, value.Scalar());
          const double scaled = v * f.scale;
          if constexpr (std::is_same_v<value_type, double>) {
            target = scaled;
          } else {
            if (f.scale == 1 && v != std::floor(v)) fail_type(file, key, value, name, "a whole number");
            if (!(std::fabs(scaled) < 9.2e18)) fail_type(file, key, value, name, "a number that fits 64 bits");
            target = static_cast<std::int64_t>(std::llround(scaled));
          }
        }
      },
      f.member);
}

template <class S>
std::vector<std::string> keys_of(const std::vector<field_def<S>>& fields,
                                 std::initializer_list<std::string_view> extra) {
  std::vector<std::string> keys;
  for (const auto& f : fields) keys.emplace_back(f.key);
  for (auto e : extra) keys.emplace_back(e);
  return keys;
}

/// The unit a key's suffix names, in words ("" when it names none): the longest suffix first.
constexpr std::pair<std::string_view, std::string_view> kKeyUnits[] = {
    {"_bytes_per_s", "bytes per second"},  {"_gbit_per_s", "gigabits per second"},
    {"_gb_per_s", "gigabytes (10^9 bytes) per second"}, {"_tb_per_s", "terabytes (10^12 bytes) per second"},
    {"_gbps", "gigabits per second"},      {"_mbps", "megabits per second"},
    {"_tflops", "TFLOP/s"},                {"_flops", "FLOP/s"},
    {"_bytes", "bytes"},                   {"_gib", "GiB (2^30 bytes)"},
    {"_mib", "MiB (2^20 bytes)"},          {"_gb", "GB (10^9 bytes)"},
    {"_us", "microseconds"},               {"_ms", "milliseconds"},
    {"_s", "seconds"},
};

std::string_view unit_suffix(std::string_view key) {
  std::string_view best;
  for (const auto& [suffix, words] : kKeyUnits) {
    if (key.ends_with(suffix) && suffix.size() > best.size()) best = suffix;
  }
  return best;
}

std::string_view unit_words(std::string_view suffix) {
  for (const auto& [s, words] : kKeyUnits) {
    if (s == suffix) return words;
  }
  return {};
}

/// The unknown-key message. "Did you mean" never offers a key in other units than the one typed (a
/// Gb/s figure under a GB/s key is 8× off): when the nearest key's unit differs, every spelling of
/// its field is listed with its unit instead.
template <class S>
std::string unknown_key_message(const std::string& where, const std::string& k, std::string_view where_words,
                                const std::vector<field_def<S>>& fields,
                                std::initializer_list<std::string_view> special_keys) {
  const std::vector<std::string> keys = keys_of(fields, special_keys);
  const std::string near = nearest_name(k, keys);
  const field_def<S>* def = nullptr;
  for (const auto& f : fields) {
    if (f.key == near) def = &f;
  }
  if (def == nullptr || unit_suffix(k) == unit_suffix(near)) {
    return fmt::format("{}: unknown key '{}'{}{}", where, k, where_words, did_you_mean(k, keys));
  }
  std::vector<std::string> spellings;
  for (const auto& f : fields) {
    if (f.field == def->field) spellings.push_back(fmt::format("{} ({})", f.key, unit_words(unit_suffix(f.key))));
  }
  const std::string_view typed = unit_words(unit_suffix(k));
  return fmt::format("{}: unknown key '{}'{}{}; '{}' is given as one of: {}", where, k, where_words,
                     typed.empty() ? std::string(" (no unit)") : fmt::format(" (in {})", typed), def->field,
                     fmt::join(spellings, ", "));
}

/// Reads the mapping `map` into `s`. `special` handles keys outside the table (returns false if it does
/// not know the key). `where_words` names the mapping in unknown-key messages.
template <class S, class Special>
void read_mapping(S& s, const std::vector<field_def<S>>& fields, const YAML::Node& map,
                  const file_context& file, std::string_view prefix, std::string_view where_words,
                  std::initializer_list<std::string_view> special_keys, Special&& special) {
  std::map<std::string_view, std::string> set_by;  // field -> the key that set it (one unit per field)
  for (auto it = map.begin(); it != map.end(); ++it) {
    const YAML::Node key = it->first;
    const YAML::Node value = it->second;
    if (!key.IsScalar()) {
      throw input_error(fmt::format("{}: keys{} must be strings, got {}", file.where(key), where_words,
                                    describe(key)));
    }
    const std::string& k = key.Scalar();
    if (special(k, key, value)) continue;
    const field_def<S>* def = nullptr;
    for (const auto& f : fields) {
      if (f.key == k) def = &f;
    }
    if (def == nullptr) {
      throw input_error(unknown_key_message(file.where(key), k, where_words, fields, special_keys));
    }
    if (auto [pos, inserted] = set_by.emplace(def->field, k); !inserted) {
      throw input_error(fmt::format("{}: keys '{}{}' and '{}{}' both set field '{}{}'; give one",
                                    file.where(key), prefix, pos->second, prefix, k, prefix, def->field));
    }
    set_field(s, *def, file, key, value, prefix);
  }
}

/// `value` must be a mapping for `field`.
void require_map(const file_context& file, const YAML::Node& key, const YAML::Node& value,
                 std::string_view field) {
  if (!value.IsMap()) fail_type(file, key, value, field, "a mapping");
}

/// `base:` of a mapping: the value node (for positions) and the name.
struct base_ref {
  YAML::Node node;
  std::string name;
};

/// Finds `base:` in a mapping, or nullopt.
std::optional<base_ref> find_base(const file_context& file, const YAML::Node& map, std::string_view field) {
  for (auto it = map.begin(); it != map.end(); ++it) {
    if (it->first.IsScalar() && it->first.Scalar() == "base") {
      return base_ref{it->second, read_text(file, it->first, it->second, field)};
    }
  }
  return std::nullopt;
}

/// Runs `lookup` (find_gpu / find_cluster) and prefixes its error with the file position.
template <class Lookup>
auto lookup_at(const file_context& file, const YAML::Node& node, Lookup&& lookup, const std::string& name) {
  try {
    return lookup(name);
  } catch (const input_error& e) {
    throw input_error(fmt::format("{}: {}", file.where(node), e.what()));
  }
}

/// `compute:` under `gpu`: scalar constants, and `tiles:` as a list of {m, n, peak_fraction}.
void read_compute(const file_context& file, const YAML::Node& key, const YAML::Node& value, compute_efficiency& e) {
  require_map(file, key, value, "gpu.compute");
  read_mapping(e, compute_fields(), value, file, "gpu.compute.", " in 'gpu.compute'", {"tiles"},
               [&](const std::string& k, const YAML::Node& tkey, const YAML::Node& tiles) {
                 if (k != "tiles") return false;
                 if (!tiles.IsSequence() || tiles.size() == 0) {
                   fail_type(file, tkey, tiles, "gpu.compute.tiles", "a list of {m, n, peak_fraction}");
                 }
                 e.tiles.clear();
                 for (const YAML::Node& t : tiles) {
                   require_map(file, tkey, t, "gpu.compute.tiles[]");
                   gemm_tile tile;
                   read_mapping(tile, tile_fields(), t, file, "gpu.compute.tiles[].", " in a tile", {},
                                [](const std::string&, const YAML::Node&, const YAML::Node&) { return false; });
                   if (tile.m <= 0 || tile.n <= 0 || tile.peak_fraction <= 0) {
                     throw input_error(fmt::format("{}: a tile needs m, n and peak_fraction", file.where(t)));
                   }
                   e.tiles.push_back(tile);
                 }
                 return true;
               });
}

gpu_spec read_gpu(const file_context& file, const YAML::Node& key, const YAML::Node& value,
                  const gpu_spec& inherited) {
  if (value.IsScalar()) {
    return lookup_at(file, value, find_gpu, value.Scalar());
  }
  if (!value.IsMap()) fail_type(file, key, value, "gpu", "a GPU name or a mapping");
  gpu_spec g = inherited;
  if (auto base = find_base(file, value, "gpu.base")) {
    g = lookup_at(file, base->node, find_gpu, base->name);
  }
  read_mapping(g, gpu_fields(), value, file, "gpu.", " in 'gpu'", {"base", "compute"},
               [&](const std::string& k, const YAML::Node& ckey, const YAML::Node& cvalue) {
                 if (k == "compute") read_compute(file, ckey, cvalue, g.compute);
                 return k == "base" || k == "compute";
               });
  if (g.name.empty()) g.name = "custom-gpu";
  return g;
}

}  // namespace

namespace {

/// The physical range of a hardware figure (docs/formulas.md §7.9): a value outside it is a unit slip,
/// and would print times of hundreds of digits or none at all.
struct physical_range {
  std::string_view field;
  double lo, hi;
  std::string_view unit;
  double value;
};

void check_ranges(const cluster_spec& c, std::string_view origin) {
  const gpu_spec& g = c.gpu;
  const physical_range ranges[] = {
      {"gpu.peak_bf16_flops", 1e12, 1e17, "FLOP/s", g.peak_bf16_flops},
      {"gpu.peak_fp32_flops", 1e10, 1e17, "FLOP/s", g.peak_fp32_flops},
      {"gpu.peak_tf32_flops", 1e10, 1e17, "FLOP/s", g.peak_tf32_flops},
      {"gpu.peak_fp8_flops", 0, 2e17, "FLOP/s", g.peak_fp8_flops},
      {"gpu.memory_bytes", 268435456, 1125899906842624, "bytes", static_cast<double>(g.memory_bytes)},
      {"gpu.usable_memory_bytes", 268435456, 1125899906842624, "bytes", static_cast<double>(g.usable_memory_bytes)},
      {"gpu.memory_bandwidth_bytes_per_s", 1e9, 1e15, "bytes/s", g.memory_bandwidth_bytes_per_s},
      {"gpu.intra_node_bandwidth_bytes_per_s", 1e8, 1e15, "bytes/s", g.intra_node_bandwidth_bytes_per_s},
      {"gpu.host_link_bytes_per_s", 0, 1e13, "bytes/s", g.host_link_bytes_per_s},
      {"gpu.sm_count", 1, 1e6, "", static_cast<double>(g.sm_count)},
      {"nic_bandwidth_bytes_per_s", 1e7, 1e14, "bytes/s", c.nic_bandwidth_bytes_per_s},
      {"nics_per_node", 1, 1024, "", static_cast<double>(c.nics_per_node)},
      {"gpus_per_node", 1, 16384, "", static_cast<double>(c.gpus_per_node)},
      {"intra_node_latency_s", 1e-9, 1, "s", c.intra_node_latency_s},
      {"inter_node_latency_s", 1e-9, 1, "s", c.inter_node_latency_s},
      {"gpu.compute.kernel_overhead_s", 0, 1, "s", g.compute.kernel_overhead_s},
      {"gpu.compute.tiles_per_sm", 0, 1e3, "", g.compute.tiles_per_sm},
      {"gpu.compute.k_half", 0, 1e9, "", g.compute.k_half},
      {"gpu.compute.ramp_flops", 0, 1e18, "FLOPs", g.compute.ramp_flops},
      {"gpu.compute.attention_bmm_factor", 0, 1e3, "", g.compute.attention_bmm_factor},
      {"gpu.compute.unfused_softmax_factor", 0, 1e3, "", g.compute.unfused_softmax_factor},
  };
  for (const physical_range& r : ranges) {
    if (!(r.value >= r.lo && r.value <= r.hi)) {
      throw input_error(fmt::format("{}: field '{}' must be between {:g} and {:g}{}{}, got {:g}", origin, r.field, r.lo,
                                    r.hi, r.unit.empty() ? "" : " ", r.unit, r.value));
    }
  }
}

}  // namespace

void validate_cluster(const cluster_spec& c, std::string_view origin) {
  check_fields(c, cluster_fields(), "", origin);
  check_fields(c.efficiency, efficiency_fields(), "efficiency.", origin);
  check_fields(c.gpu, gpu_fields(), "gpu.", origin);
  check_ranges(c, origin);
  if (c.gpu.usable_memory_bytes > c.gpu.memory_bytes) {
    throw input_error(fmt::format("{}: field 'gpu.usable_memory_bytes' must not exceed 'gpu.memory_bytes' ({}), "
                                  "got {}",
                                  origin, c.gpu.memory_bytes, c.gpu.usable_memory_bytes));
  }
  if (c.gpu.cuda_context_bytes >= c.gpu.usable_memory_bytes) {
    throw input_error(fmt::format("{}: field 'gpu.cuda_context_bytes' must be less than "
                                  "'gpu.usable_memory_bytes' ({}), got {}",
                                  origin, c.gpu.usable_memory_bytes, c.gpu.cuda_context_bytes));
  }
}

cluster_spec load_cluster_file(const std::string& path) {
  return parse_cluster_text(read_input_file(path, "${cluster}", kMaxConfigFileBytes), path);
}

cluster_spec parse_cluster_text(const std::string& text, const std::string& path) {
  const file_context file{path};
  detail::require_utf8(text, path);
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    throw input_error(fmt::format("{}:{}: {}", path, e.mark.line + 1, e.msg));
  }
  if (root.IsNull() || !root.IsDefined()) {
    throw input_error(fmt::format("{}: cluster file is empty; expected a mapping of cluster fields", path));
  }
  if (!root.IsMap()) {
    throw input_error(fmt::format("{}: expected a mapping of cluster fields, got {}", file.where(root),
                                  describe(root)));
  }

  cluster_spec c;
  bool has_base = false;
  if (auto base = find_base(file, root, "base")) {
    c = lookup_at(file, base->node, find_cluster, base->name);
    has_base = true;
  }
  c.name = std::filesystem::path(path).stem().string();

  bool has_gpu = false;
  const auto special = [&](const std::string& k, const YAML::Node& key, const YAML::Node& value) {
    if (k == "base") return true;
    if (k == "gpu") {
      c.gpu = read_gpu(file, key, value, c.gpu);
      has_gpu = true;
      return true;
    }
    if (k == "efficiency") {
      require_map(file, key, value, "efficiency");
      read_mapping(c.efficiency, efficiency_fields(), value, file, "efficiency.", " in 'efficiency'", {},
                   [](const std::string&, const YAML::Node&, const YAML::Node&) { return false; });
      return true;
    }
    return false;
  };
  read_mapping(c, cluster_fields(), root, file, "", "", {"base", "gpu", "efficiency"}, special);

  if (!has_base && !has_gpu) {
    throw input_error(fmt::format("{}: cluster file needs 'gpu' (a GPU name or mapping) or 'base' (one of: {})",
                                  path, fmt::join(cluster_names(), ", ")));
  }
  validate_cluster(c, fmt::format("cluster file {}", path));
  return c;
}

}  // namespace trainplan