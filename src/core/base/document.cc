// YAML and JSON files as one tree with the line of each key (include/trainplan/core/base/document.h).
#include "trainplan/core/base/document.h"

#include <yaml.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <map>
#include <unordered_set>
#include <utility>
#include <vector>

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

/// A YAML scalar as JSON: quoted (or explicitly tagged) scalars stay strings; plain ones become null,
/// bool, integer or number where they read as one (YAML 1.2 core schema).
json yaml_scalar(const std::string& s, bool plain, const std::string& path, document& d) {
  if (!plain) return s;
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  const char* first = s.data();
  const char* last = s.data() + s.size();
  const char* digits = (s[0] == '+' || s[0] == '-') ? first + 1 : first;
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

/// A YAML document's node graph is bounded while it is built: nesting is capped, and the nodes an alias
/// stands for count again where it is used (the "billion laughs"); an alias names a node that is
/// complete, so none can contain itself (§7.9). Model files nest three levels and hold a few hundred
/// nodes, NeMo configs a few hundred more.
constexpr std::size_t kMaxYamlDepth = 64;
constexpr std::int64_t kMaxYamlNodes = 20'000;

/// libyaml's events (its parser: YAML 1.1 syntax, scalars typed above) built into the document's tree.
class yaml_builder {
 public:
  explicit yaml_builder(document& d) : d_(d) {}

  void parse(const std::string& text) {
    yaml_parser_t parser;
    yaml_parser_initialize(&parser);
    yaml_parser_set_input_string(&parser, reinterpret_cast<const unsigned char*>(text.data()), text.size());
    try {
      for (bool done = false; !done;) {
        yaml_event_t e;
        if (yaml_parser_parse(&parser, &e) == 0) {
          const std::string problem = parser.problem != nullptr ? parser.problem : "not valid YAML";
          const std::size_t line = parser.problem_mark.line + 1;
          throw input_error(literal_text(fmt::format("{}:{}: {}", d_.origin, line, problem)));
        }
        try {
          // The first document is the file (a second is not read, as yaml-cpp's Load did not).
          done = e.type == YAML_STREAM_END_EVENT || e.type == YAML_DOCUMENT_END_EVENT;
          event(e);
        } catch (...) {
          yaml_event_delete(&e);
          throw;
        }
        yaml_event_delete(&e);
      }
    } catch (...) {
      yaml_parser_delete(&parser);
      throw;
    }
    yaml_parser_delete(&parser);
  }

 private:
  /// A mapping or sequence being built, with where its entries go.
  struct open_node {
    json value;
    std::string path;
    std::string anchor;
    bool has_key = false;  ///< a mapping: its next event is the value of `key`
    std::string key;
    std::unordered_set<std::string> keys;  ///< a mapping's keys so far (ordered_json finds by linear search)
  };
  struct anchored {
    json value;
    std::string path;  ///< where it was defined: its lines and numbers are copied from there
  };

  [[noreturn]] void fail(std::size_t line, const std::string& what) const {
    throw input_error(literal_text(fmt::format("{}:{}: {}", d_.origin, line, what)));
  }

  void count(std::int64_t nodes) {
    d_.yaml_nodes += nodes;
    if (d_.yaml_nodes > kMaxYamlNodes) {
      throw input_error(literal_text(fmt::format("{}: aliases expand to more than {} nodes; a model file holds a few hundred",
                                                 d_.origin, kMaxYamlNodes)));
    }
  }

  /// The path of the next value, or none when the next scalar is a mapping's key.
  std::string child_path() const {
    if (stack_.empty()) return "";
    const open_node& top = stack_.back();
    if (top.value.is_array()) return fmt::format("{}[{}]", top.path, top.value.size());
    return top.path.empty() ? top.key : top.path + "." + top.key;
  }
  bool expects_key() const { return !stack_.empty() && stack_.back().value.is_object() && !stack_.back().has_key; }

  /// A mapping key: a plain name, unique in its mapping.
  void take_key(const std::string& key, std::size_t line) {
    open_node& top = stack_.back();
    const std::string child = top.path.empty() ? key : top.path + "." + key;
    if (!top.keys.insert(key).second) fail(line, fmt::format("duplicate key '{}'", child));
    d_.lines[child] = static_cast<int>(line);
    top.key = key;
    top.has_key = true;
  }

  /// A complete value: into its parent (or the root), and under its anchor.
  void place(json value, const std::string& path, const std::string& anchor) {
    if (!anchor.empty()) anchors_[anchor] = anchored{value, path};
    if (stack_.empty()) {
      d_.root = std::move(value);
      return;
    }
    open_node& top = stack_.back();
    if (top.value.is_array()) {
      top.value.push_back(std::move(value));
    } else {
      top.value.get_ref<json::object_t&>().emplace_back(top.key, std::move(value));  // unique: take_key
      top.has_key = false;
    }
  }

  /// The entries of `marks` under `from` (a line or a number as written) again under `to`: an alias's copy.
  template <class V>
  static void copy_marks(std::map<std::string, V>& marks, const std::string& from, const std::string& to) {
    std::vector<std::pair<std::string, V>> add;
    for (auto it = marks.lower_bound(from); it != marks.end() && it->first.starts_with(from); ++it) {
      const std::string rest = it->first.substr(from.size());
      if (!rest.empty() && rest[0] != '.' && rest[0] != '[') continue;
      add.emplace_back(to + rest, it->second);
    }
    for (auto& [k, v] : add) marks[k] = std::move(v);
  }

  static std::int64_t size_of(const json& v) {
    std::int64_t n = 1;
    if (v.is_structured())
      for (const json& e : v) n += size_of(e);
    return n;
  }

  static std::string text_of(const yaml_char_t* s, std::size_t n) {
    return std::string(reinterpret_cast<const char*>(s), n);
  }
  static std::string text_of(const yaml_char_t* s) { return s == nullptr ? "" : reinterpret_cast<const char*>(s); }

  void event(const yaml_event_t& e) {
    const std::size_t line = e.start_mark.line + 1;
    switch (e.type) {
      case YAML_SCALAR_EVENT: {
        count(1);
        const std::string text = text_of(e.data.scalar.value, e.data.scalar.length);
        const bool plain = e.data.scalar.style == YAML_PLAIN_SCALAR_STYLE && e.data.scalar.tag == nullptr;
        if (expects_key()) {
          take_key(text, line);
          return;
        }
        const std::string path = child_path();
        place(yaml_scalar(text, plain, path, d_), path, text_of(e.data.scalar.anchor));
        return;
      }
      case YAML_SEQUENCE_START_EVENT:
      case YAML_MAPPING_START_EVENT: {
        count(1);
        if (expects_key()) fail(line, "keys must be plain names");
        if (stack_.size() >= kMaxYamlDepth) fail(line, fmt::format("nested deeper than {} levels", kMaxYamlDepth));
        const bool map = e.type == YAML_MAPPING_START_EVENT;
        const yaml_char_t* anchor = map ? e.data.mapping_start.anchor : e.data.sequence_start.anchor;
        stack_.push_back(open_node{.value = map ? json::object() : json::array(),
                                   .path = child_path(),
                                   .anchor = text_of(anchor),
                                   .has_key = false,
                                   .key = {},
                                   .keys = {}});
        return;
      }
      case YAML_SEQUENCE_END_EVENT:
      case YAML_MAPPING_END_EVENT: {
        open_node done = std::move(stack_.back());
        stack_.pop_back();
        place(std::move(done.value), done.path, done.anchor);
        return;
      }
      case YAML_ALIAS_EVENT: {
        const std::string name = text_of(e.data.alias.anchor);
        const auto it = anchors_.find(name);
        // libyaml reports an alias before its node completes as such: the node is not in the table yet.
        if (it == anchors_.end()) {
          fail(line, fmt::format("the alias *{} names no anchored node before it (an alias inside its own anchor "
                                 "would contain itself)",
                                 name));
        }
        count(size_of(it->second.value));
        if (expects_key()) {
          if (!it->second.value.is_string()) fail(line, "keys must be plain names");
          take_key(it->second.value.get<std::string>(), line);
          return;
        }
        const std::string path = child_path();
        copy_marks(d_.lines, it->second.path, path);
        copy_marks(d_.numbers, it->second.path, path);
        place(it->second.value, path, "");
        return;
      }
      default:
        return;  // stream and document starts, no content
    }
  }

  document& d_;
  std::vector<open_node> stack_;
  std::map<std::string, anchored> anchors_;
};

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
    yaml_builder(d).parse(text);
  }
  if (d.root.is_null()) throw input_error(fmt::format("{}: the {} is empty", origin, kind));
  if (!d.root.is_object()) {
    throw input_error(
        fmt::format("{}: expected a mapping of {} at the top level, got {}", origin, entries, d.root.type_name()));
  }
  return d;
}

}  // namespace trainplan::detail
