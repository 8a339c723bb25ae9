// A YAML or JSON file as one tree with the 1-based line of each key: what model files, Hugging Face
// configs and the framework configs the command line reads (NeMo's YAML) parse into. YAML is bounded
// before it is walked (depth, nodes visited through aliases: docs/formulas.md §7.9).
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <unordered_map>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>

#include "trainplan/core/base/error.h"

namespace trainplan::detail {

using json = nlohmann::ordered_json;

/// A parsed file: its tree, where it came from and, for YAML, the 1-based line of each key
/// ("moe.num_experts" for nested keys) and the text of each number as written.
struct document {
  std::string origin;
  json root;
  std::unordered_map<std::string, int> lines;
  std::unordered_map<std::string, std::string> numbers;
  std::int64_t yaml_nodes = 0;  ///< YAML nodes visited so far (aliases included): bounded (§7.9)

  std::string where(const std::string& path) const {
    const auto it = lines.find(path);
    return it == lines.end() ? origin : fmt::format("{}:{}", origin, it->second);
  }
  [[noreturn]] void fail(const std::string& path, const std::string& what) const {
    throw input_error(fmt::format("{}: field '{}': {}", where(path), path, what));
  }
  /// The value as the user wrote it, for messages.
  std::string shown(const std::string& path, const json& v) const {
    const auto it = numbers.find(path);
    return it == numbers.end() ? v.dump(-1, ' ', false, json::error_handler_t::replace) : it->second;
  }
};

/// Parses `text` (JSON when `force_json` or it starts with '{', else YAML 1.2's core schema: plain
/// scalars become null, bool, integer or number). `kind` names the file in messages ("model file"),
/// `entries` what its top level maps ("model fields"). Throws input_error with origin:line for malformed
/// text, an empty file or a top level that is not a mapping. YAML top-level keys in `unread` keep their
/// line but not their contents (a mapping or sequence there becomes {}): sections the caller ignores
/// whole, not built; only when the text holds no anchor ('&'), so that no alias can name what was skipped.
document parse_document(const std::string& text, const std::string& origin, bool force_json,
                        std::string_view kind = "model file", std::string_view entries = "model fields",
                        std::span<const std::string_view> unread = {});

}  // namespace trainplan::detail
