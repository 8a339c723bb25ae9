#include "trainplan/core/base/error.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace trainplan {

namespace {
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0u : 1u)});
      diag = up;
    }
  }
  return row[b.size()];
}
}  // namespace

std::string name_fields(std::string_view text, const field_namer& name) {
  std::string out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t open = text.find("${", pos);
    const std::size_t close = open == std::string_view::npos ? open : text.find('}', open);
    if (close == std::string_view::npos) {
      out.append(text.substr(pos));
      break;
    }
    if (open > pos && text[open - 1] == '$') {  // "$${": a literal "${" (literal_text)
      out.append(text.substr(pos, open - 1 - pos));
      out += "${";
      pos = open + 2;
      continue;
    }
    out.append(text.substr(pos, open - pos));
    out += name(text.substr(open + 2, close - open - 2));
    pos = close + 1;
  }
  return out;
}

input_error::input_error(const std::string& message)
    : std::runtime_error(name_fields(message, [](std::string_view f) { return std::string(f); })),
      template_(message) {}

std::string input_error::message(const field_namer& name) const { return name_fields(template_, name); }

std::vector<std::string> input_error::fields() const {
  std::vector<std::string> out;
  name_fields(template_, [&](std::string_view f) {
    out.emplace_back(f);
    return std::string();
  });
  return out;
}

std::string nearest_name(std::string_view name, const std::vector<std::string>& candidates) {
  // Suggest only when at most a third of the name would change (at least one edit allowed). The distance is
  // at least the difference in length, so a candidate beyond the limit by length alone is not compared: a
  // 4,000-byte unknown flag costs one pass over the names, not 4,000 × their length each.
  const std::size_t limit = std::max<std::size_t>(2, name.size() / 3);
  std::string best;
  std::size_t best_distance = std::string::npos;
  for (const auto& c : candidates) {
    const std::size_t length_gap = c.size() > name.size() ? c.size() - name.size() : name.size() - c.size();
    if (length_gap > limit) continue;
    const std::size_t d = edit_distance(name, c);
    if (d < best_distance) {
      best_distance = d;
      best = c;
    }
  }
  if (best_distance <= limit) return best;
  // Else the shortest name that begins with it ("jean-zay" → "jean-zay-a100", "--micro-batch" →
  // "--micro-batch-size"), for a start long enough to mean something: four characters after any dashes.
  best.clear();
  if (name.size() - std::min(name.find_first_not_of('-'), name.size()) >= 4) {
    for (const auto& c : candidates) {
      if (c.size() > name.size() && c.compare(0, name.size(), name) == 0 && (best.empty() || c.size() < best.size())) {
        best = c;
      }
    }
  }
  return best;
}

std::string did_you_mean(std::string_view name, const std::vector<std::string>& candidates) {
  const std::string n = nearest_name(name, candidates);
  if (n.empty()) return {};
  // A start several names share ("h100": the SXM, PCIe and NVL cards), with no name a few edits away,
  // names them all, in their order.
  if (n.size() > name.size() && n.compare(0, name.size(), name) == 0 &&
      edit_distance(name, n) > std::max<std::size_t>(2, name.size() / 3)) {
    std::string all;
    int count = 0;
    for (const auto& c : candidates) {
      if (c.size() <= name.size() || c.compare(0, name.size(), name) != 0) continue;
      all += (count++ == 0 ? "'" : "', '") + c;
    }
    if (count > 1) return " (did you mean one of " + all + "'?)";
  }
  std::string s = " (did you mean '";
  s += n;
  s += "'?)";
  return s;
}

namespace detail {
void check_failed(const char* expr, const char* file, int line, const std::string& what) {
  std::fprintf(stderr, "trainplan: internal error: CHECK(%s) failed at %s:%d%s%s\n", expr, file, line,
               what.empty() ? "" : ": ", what.c_str());
  std::abort();
}
}  // namespace detail

}  // namespace trainplan
