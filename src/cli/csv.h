// One CSV line into fields: commas separate, double quotes group (no escaped quotes in our tables).
#pragma once

#include <string>
#include <vector>

namespace trainplan::detail {

inline std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (char ch : line) {
    if (ch == '"') {
      quoted = !quoted;
    } else if (ch == ',' && !quoted) {
      out.push_back(cur);
      cur.clear();
    } else if (ch != '\r') {
      cur += ch;
    }
  }
  out.push_back(cur);
  return out;
}

}  // namespace trainplan::detail
