// Megatron-Core's literal config defaults, indexed once (src/cli/megatron_core_defaults.h).
#include "megatron_core_defaults.h"

#include <string>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

namespace trainplan::args_detail {

namespace {

struct core_default {
  std::string_view section, field, json_text;
};
constexpr core_default kCoreDefaults[] = {
#include "megatron_core_defaults.inc"
};

}  // namespace

const nlohmann::ordered_json* megatron_core_default_of(std::string_view key) {
  struct table {
    std::vector<std::string> keys;  ///< "section.field", owned here: the index's views point into it
    std::unordered_map<std::string_view, nlohmann::ordered_json> index;
  };
  static const table t = [] {
    table r;
    r.keys.reserve(std::size(kCoreDefaults));
    for (const core_default& d : kCoreDefaults) r.keys.push_back(fmt::format("{}.{}", d.section, d.field));
    for (std::size_t i = 0; i < r.keys.size(); ++i) {
      r.index.emplace(r.keys[i], nlohmann::ordered_json::parse(kCoreDefaults[i].json_text));
    }
    return r;
  }();
  const auto it = t.index.find(key);
  return it == t.index.end() ? nullptr : &it->second;
}

bool same_config_value(const nlohmann::ordered_json& a, const nlohmann::ordered_json& b) {
  if (a.is_number() && b.is_number()) return a.get<double>() == b.get<double>();
  return a == b;
}

}  // namespace trainplan::args_detail
