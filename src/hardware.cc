// GPU and cluster catalogs, validation and cluster files (docs/formulas.md §6).
#include "trainplan/hardware.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <map>
#include <sstream>
#include <type_traits>
#include <variant>

#include "input_text.h"
#include "trainplan/error.h"

namespace trainplan {

namespace {

constexpr double kTera = 1e12;
constexpr double kGiga = 1e9;
constexpr std::int64_t kMiB = std::int64_t{1} << 20;
constexpr std::int64_t kGiB = std::int64_t{1} << 30;

/// Names of the dtypes, indexed by the enum value.
constexpr std::array<std::string_view, 5> kDtypeNames = {"fp32", "tf32", "bf16", "fp16", "fp8"};
/// Bytes per element, indexed by the enum value (tf32 is stored as fp32).
constexpr std::array<int, 5> kDtypeBytes = {4, 4, 2, 2, 1};

/// CUDA context + NCCL/cuBLAS workspaces measured on A100 (BLOOM notes, nvidia-smi with no tensors):
/// 1,573 MiB. Other NVIDIA GPUs scale it by SM count, rounded to whole MiB (§6.1).
constexpr std::int64_t kA100ContextBytes = 1573 * kMiB;
constexpr std::int64_t kHopperContextBytes = 1923 * kMiB;     ///< 1,573 x 132/108 = 1,922.6 MiB
constexpr std::int64_t kBlackwellContextBytes = 2156 * kMiB;  ///< 1,573 x 148/108 = 2,155.6 MiB

// The catalog tables name only the datasheet fields; later fields of the structs (e.g. gpu_spec::compute)
// keep their defaults on purpose.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

std::vector<gpu_spec> make_gpu_catalog() {
  return {
      gpu_spec{
          .name = "a100-sxm4-40gb",
          .vendor = "NVIDIA",
          .peak_fp32_flops = 19.5 * kTera,
          .peak_tf32_flops = 156 * kTera,
          .peak_bf16_flops = 312 * kTera,
          .peak_fp8_flops = 0,
          .memory_bytes = 40 * kGiB,
          .usable_memory_bytes = 40536 * kMiB,  // torch total_memory=40536MB ("39.59 GiB total capacity")
          .memory_bandwidth_bytes_per_s = 1.555e12,
          .sm_count = 108,
          .intra_node_bandwidth_bytes_per_s = 300 * kGiga,  // NVLink3: 600 GB/s bidirectional
          .cuda_context_bytes = kA100ContextBytes,
          .source = "NVIDIA A100 Tensor Core GPU datasheet (2021), A100 40GB SXM column",
      },
      gpu_spec{
          .name = "a100-sxm4-80gb",
          .vendor = "NVIDIA",
          .peak_fp32_flops = 19.5 * kTera,
          .peak_tf32_flops = 156 * kTera,
          .peak_bf16_flops = 312 * kTera,
          .peak_fp8_flops = 0,
          .memory_bytes = 80 * kGiB,
          .usable_memory_bytes = 85'198'045'184,  // torch total_memory: 81,251 MiB of nvidia-smi's 81,920
          .memory_bandwidth_bytes_per_s = 2.039e12,
          .sm_count = 108,
          .intra_node_bandwidth_bytes_per_s = 300 * kGiga,
          .cuda_context_bytes = kA100ContextBytes,
          .source = "NVIDIA A100 Tensor Core GPU datasheet (2021), A100 80GB SXM column",
      },
      gpu_spec{
          .name = "h100-sxm5-80gb",
          .vendor = "NVIDIA",
          .peak_fp32_flops = 67 * kTera,
          .peak_tf32_flops = 494.7 * kTera,   // datasheet 989 TF is with 2:4 sparsity
          .peak_bf16_flops = 989.4 * kTera,   // 132 SMs x 4096 FLOP/clk x 1.83 GHz
          .peak_fp8_flops = 1978.9 * kTera,
          .memory_bytes = 80 * kGiB,          // 5 active HBM3 stacks x 16 GiB
          .usable_memory_bytes = 81008 * kMiB,  // torch "total capacity of 79.11 GiB"
          .memory_bandwidth_bytes_per_s = 3.35e12,
          .sm_count = 132,
          .intra_node_bandwidth_bytes_per_s = 450 * kGiga,  // NVLink4: 900 GB/s bidirectional
          .cuda_context_bytes = kHopperContextBytes,
          .source = "NVIDIA H100 Tensor Core GPU datasheet, H100 SXM column (sparse figures halved)",
      },
      gpu_spec{
          .name = "h200-sxm-141gb",
          .vendor = "NVIDIA",
          .peak_fp32_flops = 67 * kTera,
          .peak_tf32_flops = 494.7 * kTera,
          .peak_bf16_flops = 989.4 * kTera,
          .peak_fp8_flops = 1978.9 * kTera,
          .memory_bytes = 141 * kGiB,  // 6 HBM3e stacks x 24 GiB = 144 GiB, 141 GiB enabled
          .usable_memory_bytes = (143771 - 551) * kMiB,  // nvidia-smi 143,771 MiB less H100's reserve
          .memory_bandwidth_bytes_per_s = 4.8e12,
          .sm_count = 132,
          .intra_node_bandwidth_bytes_per_s = 450 * kGiga,
          .cuda_context_bytes = kHopperContextBytes,
          .source = "NVIDIA H200 Tensor Core GPU datasheet, H200 SXM column (sparse figures halved)",
      },
      gpu_spec{
          .name = "b200-sxm-180gb",
          .vendor = "NVIDIA",
          .peak_fp32_flops = 80 * kTera,
          .peak_tf32_flops = 1100 * kTera,  // datasheet 2.2 PF is with 2:4 sparsity
          .peak_bf16_flops = 2250 * kTera,  // 4.5 PF sparse
          .peak_fp8_flops = 4500 * kTera,   // 9 PF sparse
          .memory_bytes = 180 * kGiB,       // 8 HBM3e stacks x 24 GiB = 192 GiB, 180 GiB on DGX B200
          .usable_memory_bytes = (183359 - 551) * kMiB,  // nvidia-smi 183,359 MiB less H100's reserve
          .memory_bandwidth_bytes_per_s = 8e12,
          .sm_count = 148,
          .intra_node_bandwidth_bytes_per_s = 900 * kGiga,  // NVLink5: 1.8 TB/s bidirectional
          .cuda_context_bytes = kBlackwellContextBytes,
          .source = "NVIDIA DGX B200 datasheet and Blackwell architecture technical brief (HGX B200, "
                    "sparse figures halved)",
      },
      gpu_spec{
          .name = "mi300x",
          .vendor = "AMD",
          .peak_fp32_flops = 163.4 * kTera,
          .peak_tf32_flops = 653.7 * kTera,
          .peak_bf16_flops = 1307.4 * kTera,
          .peak_fp8_flops = 2614.9 * kTera,
          .memory_bytes = 192 * kGiB,  // 8 HBM3 stacks x 24 GiB
          .usable_memory_bytes = 205'822'885'888,  // rocm-smi "VRAM Total Memory (B)"
          .memory_bandwidth_bytes_per_s = 5.3e12,
          .sm_count = 304,
          .intra_node_bandwidth_bytes_per_s = 448 * kGiga,  // 7 xGMI links x 64 GB/s one direction
          .cuda_context_bytes = kA100ContextBytes,
          .source = "AMD Instinct MI300X accelerator data sheet (dense figures)",
      },
  };
}

std::vector<cluster_spec> make_cluster_catalog() {
  const std::string dgx_source = "NVIDIA DGX datasheet (";
  return {
      cluster_spec{
          .name = "jean-zay-a100",
          .gpu = find_gpu("a100-sxm4-80gb"),
          .gpus_per_node = 8,
          .num_nodes = 48,
          .nics_per_node = 4,
          .nic_bandwidth_bytes_per_s = 100e9 / 8,
          .intra_node_latency_s = 5e-6,
          .inter_node_latency_s = 15e-6,
          .efficiency = {.intra_node = 0.80, .inter_node = 0.70},
          .interconnect = "8 x A100 on NVLink3/NVSwitch; 4 x 100 Gb/s Omni-Path per node",
          .source = "BLOOM model card 'Hardware' (bigscience/bloom): 48 nodes x 8 A100 80GB, "
                    "4 Omni-Path links; IDRIS Jean Zay documentation",
      },
      cluster_spec{
          .name = "dgx-a100",
          .gpu = find_gpu("a100-sxm4-80gb"),
          .gpus_per_node = 8,
          .num_nodes = 1,
          .nics_per_node = 8,
          .nic_bandwidth_bytes_per_s = 200e9 / 8,
          .intra_node_latency_s = 5e-6,
          .inter_node_latency_s = 10e-6,
          .efficiency = {.intra_node = 0.80, .inter_node = 0.80},
          .interconnect = "8 x A100 on NVLink3/NVSwitch; 8 x 200 Gb/s HDR InfiniBand per node",
          .source = dgx_source + "DGX A100 640GB)",
      },
      cluster_spec{
          .name = "dgx-h100",
          .gpu = find_gpu("h100-sxm5-80gb"),
          .gpus_per_node = 8,
          .num_nodes = 1,
          .nics_per_node = 8,
          .nic_bandwidth_bytes_per_s = 400e9 / 8,
          .intra_node_latency_s = 5e-6,
          .inter_node_latency_s = 10e-6,
          .efficiency = {.intra_node = 0.80, .inter_node = 0.80},
          .interconnect = "8 x H100 on NVLink4/NVSwitch; 8 x 400 Gb/s NDR InfiniBand per node",
          .source = dgx_source + "DGX H100)",
      },
      cluster_spec{
          .name = "dgx-h200",
          .gpu = find_gpu("h200-sxm-141gb"),
          .gpus_per_node = 8,
          .num_nodes = 1,
          .nics_per_node = 8,
          .nic_bandwidth_bytes_per_s = 400e9 / 8,
          .intra_node_latency_s = 5e-6,
          .inter_node_latency_s = 10e-6,
          .efficiency = {.intra_node = 0.80, .inter_node = 0.80},
          .interconnect = "8 x H200 on NVLink4/NVSwitch; 8 x 400 Gb/s NDR InfiniBand per node",
          .source = dgx_source + "DGX H200)",
      },
      cluster_spec{
          .name = "dgx-b200",
          .gpu = find_gpu("b200-sxm-180gb"),
          .gpus_per_node = 8,
          .num_nodes = 1,
          .nics_per_node = 8,
          .nic_bandwidth_bytes_per_s = 400e9 / 8,
          .intra_node_latency_s = 5e-6,
          .inter_node_latency_s = 10e-6,
          .efficiency = {.intra_node = 0.80, .inter_node = 0.80},
          .interconnect = "8 x B200 on NVLink5/NVSwitch; 8 x 400 Gb/s NDR InfiniBand per node",
          .source = dgx_source + "DGX B200)",
      },
  };
}

#pragma GCC diagnostic pop

// ---- Field tables: one row per file key; validation uses the rows whose key is the field itself. ----

/// What a field's value must satisfy.
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
  read_mapping(g, gpu_fields(), value, file, "gpu.", " in 'gpu'", {"base"},
               [](const std::string& k, const YAML::Node&, const YAML::Node&) { return k == "base"; });
  if (g.name.empty()) g.name = "custom-gpu";
  return g;
}

}  // namespace

std::string_view to_string(dtype d) { return kDtypeNames.at(static_cast<std::size_t>(d)); }

int bytes_of(dtype d) { return kDtypeBytes.at(static_cast<std::size_t>(d)); }

double gpu_spec::peak_flops(dtype d) const {
  switch (d) {
    case dtype::fp32: return peak_fp32_flops;
    case dtype::tf32: return peak_tf32_flops;
    case dtype::bf16:
    case dtype::fp16: return peak_bf16_flops;
    case dtype::fp8: return peak_fp8_flops;
  }
  return 0;
}

const std::vector<gpu_spec>& gpu_catalog() {
  static const std::vector<gpu_spec> catalog = make_gpu_catalog();
  return catalog;
}

const std::vector<cluster_spec>& cluster_catalog() {
  static const std::vector<cluster_spec> catalog = make_cluster_catalog();
  return catalog;
}

std::vector<std::string> gpu_names() {
  std::vector<std::string> names;
  for (const auto& g : gpu_catalog()) names.push_back(g.name);
  return names;
}

std::vector<std::string> cluster_names() {
  std::vector<std::string> names;
  for (const auto& c : cluster_catalog()) names.push_back(c.name);
  return names;
}

const gpu_spec& find_gpu(std::string_view name) {
  for (const auto& g : gpu_catalog()) {
    if (g.name == name) return g;
  }
  throw input_error(fmt::format("unknown GPU '{}'{}", name, did_you_mean(name, gpu_names())));
}

const cluster_spec& find_cluster(std::string_view name) {
  for (const auto& c : cluster_catalog()) {
    if (c.name == name) return c;
  }
  throw input_error(fmt::format("unknown cluster '{}'{}", name, did_you_mean(name, cluster_names())));
}

void validate_cluster(const cluster_spec& c, std::string_view origin) {
  check_fields(c, cluster_fields(), "", origin);
  check_fields(c.efficiency, efficiency_fields(), "efficiency.", origin);
  check_fields(c.gpu, gpu_fields(), "gpu.", origin);
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
  std::ifstream in(path, std::ios::binary);
  if (!in) throw input_error(fmt::format("{}: cannot open cluster file (no such file or not readable)", path));
  std::stringstream text;
  text << in.rdbuf();
  return parse_cluster_text(text.str(), path);
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
