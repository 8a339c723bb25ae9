// Lookup of a framework config's key table (nemo_config.cc, bridge_config.cc): rows with a dotted `path`,
// found through a hash index built once per table. Internal header of src/cli.
#pragma once

#include <string_view>
#include <type_traits>
#include <unordered_map>

namespace trainplan::args_detail {

/// The row of `kRows` (a static array of rows with a `path`) whose path is `path`, or null.
template <const auto& kRows>
const auto* find_row(std::string_view path) {
  using row = std::remove_cvref_t<decltype(kRows[0])>;
  static const std::unordered_map<std::string_view, const row*> index = [] {
    std::unordered_map<std::string_view, const row*> m;
    for (const row& r : kRows) m.emplace(r.path, &r);
    return m;
  }();
  const auto it = index.find(path);
  return it == index.end() ? nullptr : it->second;
}

}  // namespace trainplan::args_detail
