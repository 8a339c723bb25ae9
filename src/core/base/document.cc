// YAML and JSON files as one tree with the line of each key (include/trainplan/core/base/document.h).
#include "trainplan/core/base/document.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>

#include "trainplan/core/base/input_text.h"

namespace trainplan::detail {

namespace {

/// "PATH:LINE: message" for nlohmann's parse errors; `byte` is the 1-based offset of the bad character.
[[noreturn]] void throw_json_error(const std::string& text, const std::string& origin,
                                   const nlohmann::json::parse_error& e) {
  const std::size_t line = detail::line_of(text, e.byte == 0 ? 0 : e.byte - 1);
  std::string msg = e.what();
  if (!msg.empty() && msg[0] == '[') msg = msg.substr(msg.find("] ") + 2);
  if (msg.rfind("parse error", 0) == 0 && msg.find(": ") != std::string::npos) msg = msg.substr(msg.find(": ") + 2);
  throw input_error(fmt::format("{}:{}: {}", origin, line, msg));
}

/// A YAML scalar as JSON: quoted scalars stay strings; plain ones become null, bool, integer or
/// number where they read as one (YAML 1.2 core schema).
json yaml_scalar(const YAML::Node& n, const std::string& path, document& d) {
  const std::string& s = n.Scalar();
  if (n.Tag() != "?") return s;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  const char* first = s.data();
  const char* last = s.data() + s.size();
  const char* digits = (!s.empty() && (s[0] == '+' || s[0] == '-')) ? first + 1 : first;
  if (digits != last && std::all_of(digits, last, [](char c) { return c >= '0' && c <= '9'; })) {
    d.numbers[path] = s;
    std::int64_t i = 0;
    const auto r = std::from_chars(s[0] == '+' ? first + 1 : first, last, i);
    if (r.ec == std::errc() && r.ptr == last) return i;
    return std::strtod(s.c_str(), nullptr);  // out of int64 range: kept as a (huge) number
  }
  if (std::none_of(first, last, [](char c) { return c >= '0' && c <= '9'; })) return s;  // not inf/nan
  double x = 0;
  const auto r = std::from_chars(s[0] == '+' ? first + 1 : first, last, x);
  if (r.ec == std::errc() && r.ptr == last) {
    d.numbers[path] = s;
    return x;
  }
  return s;
}

/// A YAML document's node graph is bounded before it is walked: an alias may name its own ancestor (`&a
/// [*a]`, a cycle) or nest aliases of aliases (the "billion laughs"). Depth and the nodes visited are
/// capped (§7.9); model files nest three levels and hold a few hundred nodes, NeMo configs a few hundred more.
constexpr int kMaxYamlDepth = 64;
constexpr std::int64_t kMaxYamlNodes = 20'000;

json yaml_to_json(const YAML::Node& n, const std::string& path, document& d, int depth = 0) {
  if (depth > kMaxYamlDepth) {
    throw input_error(fmt::format("{}:{}: nested deeper than {} levels (an alias that contains itself?)", d.origin,
                                  n.Mark().line + 1, kMaxYamlDepth));
  }
  if (++d.yaml_nodes > kMaxYamlNodes) {
    throw input_error(fmt::format("{}: aliases expand to more than {} nodes; a model file holds a few hundred",
                                  d.origin, kMaxYamlNodes));
  }
  switch (n.Type()) {
    case YAML::NodeType::Scalar:
      return yaml_scalar(n, path, d);
    case YAML::NodeType::Sequence: {
      json a = json::array();
      for (std::size_t i = 0; i < n.size(); ++i) a.push_back(yaml_to_json(n[i], fmt::format("{}[{}]", path, i), d, depth + 1));
      return a;
    }
    case YAML::NodeType::Map: {
      json o = json::object();
      for (const auto& kv : n) {
        const int line = kv.first.Mark().line + 1;
        if (!kv.first.IsScalar()) {
          throw input_error(fmt::format("{}:{}: keys must be plain names", d.origin, line));
        }
        const std::string key = kv.first.Scalar();
        const std::string child = path.empty() ? key : path + "." + key;
        if (o.contains(key)) throw input_error(fmt::format("{}:{}: duplicate key '{}'", d.origin, line, child));
        d.lines[child] = line;
        o[key] = yaml_to_json(kv.second, child, d, depth + 1);
      }
      return o;
    }
    default:
      return nullptr;
  }
}

}  // namespace

document parse_document(const std::string& text, const std::string& origin, bool force_json,
                        std::string_view kind, std::string_view entries) {
  document d;
  d.origin = origin;
  const auto first = text.find_first_not_of(" \t\r\n");
  detail::require_utf8(text, origin);
  if (force_json || (first != std::string::npos && text[first] == '{')) {
    try {
      d.root = json::parse(text);
    } catch (const nlohmann::json::parse_error& e) {
      throw_json_error(text, origin, e);
    } catch (const nlohmann::json::out_of_range& e) {
      detail::throw_number_out_of_range(text, origin, e.what());
    }
  } else {
    try {
      d.root = yaml_to_json(YAML::Load(text), "", d);
    } catch (const YAML::Exception& e) {
      throw input_error(fmt::format("{}:{}: {}", origin, e.mark.line + 1, e.msg));
    }
  }
  if (d.root.is_null()) throw input_error(fmt::format("{}: the {} is empty", origin, kind));
  if (!d.root.is_object()) {
    throw input_error(
        fmt::format("{}: expected a mapping of {} at the top level, got {}", origin, entries, d.root.type_name()));
  }
  return d;
}

}  // namespace trainplan::detail
