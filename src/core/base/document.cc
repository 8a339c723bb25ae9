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
template <class PathOf>
json yaml_scalar(std::string&& s, bool plain, const PathOf& path, document& d) {
  if (!plain) return std::move(s);
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  const char* first = s.data();
  const char* last = s.data() + s.size();
  const char* digits = (s[0] == '+' || s[0] == '-') ? first + 1 : first;
  if (digits != last && std::all_of(digits, last, [](char c) { return c >= '0' && c <= '9'; })) {
    d.numbers[path()] = s;
    std::int64_t i = 0;
    const auto r = std::from_chars(s[0] == '+' ? first + 1 : first, last, i);
    if (r.ec == std::errc() && r.ptr == last) return i;
    return std::strtod(s.c_str(), nullptr);  // out of int64 range: kept as a (huge) number
  }
  if (std::none_of(first, last, [](char c) { return c >= '0' && c <= '9'; })) return std::move(s);  // not inf/nan
  double x = 0;
  const auto r = std::from_chars(s[0] == '+' ? first + 1 : first, last, x);
  if (r.ec == std::errc() && r.ptr == last) {
    d.numbers[path()] = s;
    return x;
  }
  return std::move(s);
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
  yaml_builder(document& d, std::span<const std::string_view> unread) : d_(d), unread_(unread) {}

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
    const std::string* key_path = nullptr;  ///< path.key, where the value of `key` goes (a key of lines)
    /// A mapping's entries so far, moved into `value` when it ends (ordered_json's entries have const
    /// keys, so growing them in place copies every key).
    std::vector<std::pair<std::string, json>> entries;
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
    return *top.key_path;
  }
  bool expects_key() const { return !stack_.empty() && stack_.back().value.is_object() && !stack_.back().has_key; }

  /// A mapping key: a plain name, unique in its mapping. Its path's line doubles as the uniqueness
  /// check: a path is taken once, by its key or by an alias's copy of a whole value placed there.
  void take_key(std::string key, std::size_t line) {
    open_node& top = stack_.back();
    std::string child = top.path.empty() ? key : top.path + "." + key;
    const auto [at, fresh] = d_.lines.emplace(std::move(child), static_cast<int>(line));
    if (!fresh) fail(line, fmt::format("duplicate key '{}'", at->first));
    skip_next_ = stack_.size() == 1 && std::find(unread_.begin(), unread_.end(), key) != unread_.end();
    top.key = std::move(key);
    top.key_path = &at->first;  // unordered_map keys stay where they are
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
      top.entries.emplace_back(std::move(top.key), std::move(value));  // unique: take_key
      top.key.clear();
      top.has_key = false;
    }
  }

  /// The entries of `marks` under `from` (a line or a number as written) again under `to`: an alias's copy.
  template <class V>
  static void copy_marks(std::unordered_map<std::string, V>& marks, const std::string& from, const std::string& to) {
    std::vector<std::pair<std::string, V>> add;
    for (const auto& [key, value] : marks) {
      if (!key.starts_with(from)) continue;
      const std::string rest = key.substr(from.size());
      if (!rest.empty() && rest[0] != '.' && rest[0] != '[') continue;
      add.emplace_back(to + rest, value);
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

  /// Inside a top-level value in `unread_`: its events are counted (the node bound holds) but not built.
  /// Returns true when the event was consumed so.
  bool skipped(const yaml_event_t& e) {
    const bool start = e.type == YAML_SEQUENCE_START_EVENT || e.type == YAML_MAPPING_START_EVENT;
    const bool end = e.type == YAML_SEQUENCE_END_EVENT || e.type == YAML_MAPPING_END_EVENT;
    if (skip_depth_ == 0) {
      if (!skip_next_ || !start) return false;  // a scalar or alias there is built as usual (cheap)
      skip_next_ = false;
      skip_depth_ = 1;
      count(1);
      return true;
    }
    if (start) {
      if (stack_.size() + skip_depth_ >= kMaxYamlDepth) {
        fail(e.start_mark.line + 1, fmt::format("nested deeper than {} levels", kMaxYamlDepth));
      }
      ++skip_depth_;
      count(1);
    } else if (end) {
      if (--skip_depth_ == 0) place(json::object(), "", "");
    } else {
      count(1);
    }
    return true;
  }

  void event(const yaml_event_t& e) {
    const std::size_t line = e.start_mark.line + 1;
    if ((skip_next_ || skip_depth_ > 0) && skipped(e)) return;
    skip_next_ = false;
    switch (e.type) {
      case YAML_SCALAR_EVENT: {
        count(1);
        std::string text = text_of(e.data.scalar.value, e.data.scalar.length);
        const bool plain = e.data.scalar.style == YAML_PLAIN_SCALAR_STYLE && e.data.scalar.tag == nullptr;
        if (expects_key()) {
          take_key(std::move(text), line);
          return;
        }
        // The path is built only where it is kept: a number's spelling, an anchor.
        const std::string anchor = text_of(e.data.scalar.anchor);
        json value = yaml_scalar(std::move(text), plain, [&] { return child_path(); }, d_);
        place(std::move(value), anchor.empty() ? std::string() : child_path(), anchor);
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
                                   .key_path = nullptr,
                                   .entries = {}});
        return;
      }
      case YAML_SEQUENCE_END_EVENT:
      case YAML_MAPPING_END_EVENT: {
        open_node done = std::move(stack_.back());
        stack_.pop_back();
        if (done.value.is_object()) {
          json::object_t& object = done.value.get_ref<json::object_t&>();
          object.reserve(done.entries.size());
          for (auto& [key, value] : done.entries) object.emplace_back(std::move(key), std::move(value));
        }
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
  std::span<const std::string_view> unread_;  ///< top-level keys whose values are not built
  bool skip_next_ = false;                    ///< the next value is one of them
  std::size_t skip_depth_ = 0;                ///< open mappings and sequences inside it
  std::vector<open_node> stack_;
  std::map<std::string, anchored> anchors_;
};

}  // namespace

document parse_document(const std::string& text, const std::string& origin, bool force_json,
                        std::string_view kind, std::string_view entries, std::span<const std::string_view> unread) {
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
    // A key a line at most: the tables never rehash.
    d.lines.reserve(static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')) + 1);
    // No anchor, no alias that could name a node of an unread section.
    yaml_builder(d, text.find('&') == std::string::npos ? unread : std::span<const std::string_view>{}).parse(text);
  }
  if (d.root.is_null()) throw input_error(fmt::format("{}: the {} is empty", origin, kind));
  if (!d.root.is_object()) {
    throw input_error(
        fmt::format("{}: expected a mapping of {} at the top level, got {}", origin, entries, d.root.type_name()));
  }
  return d;
}

}  // namespace trainplan::detail
