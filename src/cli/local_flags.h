// Command-local flags (search, shapes, plan): one table per command drives parsing and help; tokens
// no entry claims are handed back for parse_job_args. Internal header.
#pragma once

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "parse.h"
#include "trainplan/core/base/error.h"

namespace trainplan::detail {

struct local_flag {
  std::string name;                 ///< "--train-tokens"
  std::vector<std::string> aliases;
  std::string value_name;           ///< "" for switches
  int arity = 1;                    ///< values it takes (0: a switch)
  std::string help;
  std::function<void(const std::vector<std::string>& values, const std::string& flag)> apply;
  /// The fields it sets, as the core names them (${space.tp}), space-separated; "" when none.
  std::string fields = {};
};

inline double parse_nonnegative(const std::string& v, const std::string& flag) {
  const double d = parse_number(v, flag);
  if (d < 0) throw input_error(flag + " must not be negative, got " + v);
  return d;
}

inline double parse_positive(const std::string& v, const std::string& flag) {
  const double d = parse_number(v, flag);
  if (d <= 0) throw input_error(flag + " must be positive, got " + v);
  return d;
}

/// A number in [lo, hi] (lo excluded when `open_below`): a figure outside its range is a unit slip that would
/// print hundreds of digits or nothing at all (docs/formulas.md §7.9).
inline double parse_between(const std::string& v, const std::string& flag, double lo, double hi, bool open_below = false) {
  const double d = parse_number(v, flag);
  if (!((open_below ? d > lo : d >= lo) && d <= hi)) {
    char range[96];
    std::snprintf(range, sizeof range, open_below ? "above %g and at most %g" : "between %g and %g", lo, hi);
    throw input_error(flag + " must be " + range + ", got " + v);
  }
  return d;
}

/// A whole number (1e9 style accepted) of at least `lo`.
inline std::int64_t parse_count(const std::string& v, const std::string& flag, std::int64_t lo = 1) {
  return parse_integer(v, flag, lo);
}

/// Claim the table's flags from `args` (in order, "--flag v" or "--flag=v"); return the rest.
inline std::vector<std::string> take_local_flags(const std::vector<local_flag>& table,
                                                 const std::vector<std::string>& args) {
  std::vector<std::string> rest;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--") {  // a launch line: not ours
      rest.insert(rest.end(), args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
      break;
    }
    std::string tok = args[i];
    std::string inline_value;
    bool has_inline = false;
    if (auto eq = tok.find('='); tok.starts_with("--") && eq != std::string::npos) {
      inline_value = tok.substr(eq + 1);
      tok = tok.substr(0, eq);
      has_inline = true;
    }
    const local_flag* def = nullptr;
    for (const local_flag& f : table) {
      if (f.name == tok) def = &f;
      for (const std::string& a : f.aliases)
        if (a == tok) def = &f;
    }
    if (def == nullptr) {
      rest.push_back(args[i]);
      continue;
    }
    std::vector<std::string> values;
    if (has_inline) {
      if (def->arity != 1) throw input_error(tok + " takes " + std::to_string(def->arity) + " values, not '='");
      values.push_back(inline_value);
    }
    while (static_cast<int>(values.size()) < def->arity) {
      if (i + 1 >= args.size() || (args[i + 1].starts_with("--") && args[i + 1].size() > 2)) {
        throw input_error(tok + " needs " + (def->arity == 1 ? "a value" : std::to_string(def->arity) + " values") +
                          " (" + def->value_name + ")");
      }
      values.push_back(args[++i]);
    }
    def->apply(values, tok);
  }
  return rest;
}

inline std::string local_flags_help(const std::vector<local_flag>& table) {
  std::string out;
  for (const local_flag& f : table) {
    std::string left = "  " + f.name;
    for (const auto& a : f.aliases) left += ", " + a;
    if (!f.value_name.empty()) left += " " + f.value_name;
    if (left.size() < 44) left.resize(44, ' ');
    else left += "\n" + std::string(44, ' ');
    out += left + f.help + "\n";
  }
  return out;
}

/// "1,2,4,8", "4-16" or a mix ("1,2,8-12").
inline std::vector<std::int64_t> parse_int_list(const std::string& text, const std::string& flag, std::int64_t lo_allowed = 1) {
  std::vector<std::int64_t> out;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    std::size_t end = text.find(',', pos);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(pos, end - pos);
    if (item.empty()) throw input_error(flag + ": empty item in '" + text + "' (use e.g. 1,2,4 or 4-16)");
    if (auto dash = item.find('-'); dash != std::string::npos && dash > 0) {
      const std::int64_t lo = parse_count(item.substr(0, dash), flag, lo_allowed);
      const std::int64_t hi = parse_count(item.substr(dash + 1), flag, lo_allowed);
      if (hi < lo) throw input_error(flag + ": range " + item + " is empty");
      if (hi - lo > 100000) throw input_error(flag + ": range " + item + " is too wide");
      for (std::int64_t x = lo; x <= hi; ++x) out.push_back(x);
    } else {
      out.push_back(parse_count(item, flag, lo_allowed));
    }
    pos = end + 1;
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

/// Each command's own rows, for command_flags (names and help only: their handlers write to a dummy).
std::vector<local_flag> search_flag_rows();  // src/cli/search_request.cc
std::vector<local_flag> shapes_flag_rows();  // src/cli/shapes_request.cc
std::vector<local_flag> plan_flag_rows();    // src/cli/plan_request.cc: the plan's and the given-speed flags
std::vector<local_flag> logs_flag_rows();    // src/cli/logs_request.cc

}  // namespace trainplan::detail
