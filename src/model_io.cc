// Loading models from our YAML/JSON description and from Hugging Face config.json files
// (docs/formulas.md §1.6).
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "input_text.h"
#include "trainplan/error.h"
#include "trainplan/model.h"

namespace trainplan {

namespace {

using json = nlohmann::ordered_json;

/// Sizes above this are typos, not models; rejecting them keeps every product in int64.
constexpr std::int64_t kAbsurd = std::int64_t{1} << 40;

/// A parsed model file: its tree, where it came from and, for YAML, the 1-based line of each key
/// ("moe.num_experts" for nested keys) and the text of each number as written.
struct document {
  std::string origin;
  json root;
  std::map<std::string, int> lines;
  std::map<std::string, std::string> numbers;

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

std::string stem_of(const std::string& origin) {
  std::string s = std::filesystem::path(origin).stem().string();
  return s.empty() ? origin : s;
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// ---- values ----------------------------------------------------------------------------------------

/// An integer no smaller than `min` and no larger than 2^40.
std::int64_t as_int(const document& d, const json& v, const std::string& path, std::int64_t min) {
  const std::string expected = min > 0 ? "a positive integer" : "a non-negative integer";
  auto absurd = [&](const std::string& text) {
    d.fail(path, fmt::format("{} is absurdly large (more than 2^40)", text));
  };
  if (v.is_number_unsigned()) {
    const auto u = v.get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(kAbsurd)) absurd(d.shown(path, v));
    if (static_cast<std::int64_t>(u) < min)
      d.fail(path, fmt::format("expected {}, got {}", expected, d.shown(path, v)));
    return static_cast<std::int64_t>(u);
  }
  if (v.is_number_integer()) {
    const auto i = v.get<std::int64_t>();
    if (i < min) d.fail(path, fmt::format("expected {}, got {}", expected, d.shown(path, v)));
    if (i > kAbsurd) absurd(d.shown(path, v));
    return i;
  }
  if (v.is_number_float()) {
    const double x = v.get<double>();
    if (x > static_cast<double>(kAbsurd)) absurd(d.shown(path, v));
  }
  d.fail(path, fmt::format("expected {}, got {}", expected, d.shown(path, v)));
}

bool as_bool(const document& d, const json& v, const std::string& path) {
  if (!v.is_boolean()) d.fail(path, fmt::format("expected true or false, got {}", d.shown(path, v)));
  return v.get<bool>();
}

/// A probability in [0, 1).
double as_probability(const document& d, const json& v, const std::string& path) {
  if (!v.is_number()) d.fail(path, fmt::format("expected a number in [0, 1), got {}", d.shown(path, v)));
  const double p = v.get<double>();
  if (!(p >= 0.0 && p < 1.0)) d.fail(path, fmt::format("expected a number in [0, 1), got {}", d.shown(path, v)));
  return p;
}

std::string as_string(const document& d, const json& v, const std::string& path) {
  if (!v.is_string() || v.get<std::string>().empty()) {
    d.fail(path, fmt::format("expected a non-empty string, got {}", d.shown(path, v)));
  }
  return v.get<std::string>();
}

/// Runs an enum parser from model.h, re-raising its error with the file position in front.
template <typename F>
auto parse_enum_field(const document& d, const json& v, const std::string& path, F parse) {
  const std::string s = as_string(d, v, path);
  try {
    return parse(s, "field '" + path + "'");
  } catch (const input_error& e) {
    throw input_error(fmt::format("{}: {}", d.where(path), e.what()));
  }
}

// ---- parsing text ----------------------------------------------------------------------------------

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

json yaml_to_json(const YAML::Node& n, const std::string& path, document& d) {
  switch (n.Type()) {
    case YAML::NodeType::Scalar:
      return yaml_scalar(n, path, d);
    case YAML::NodeType::Sequence: {
      json a = json::array();
      for (std::size_t i = 0; i < n.size(); ++i) a.push_back(yaml_to_json(n[i], fmt::format("{}[{}]", path, i), d));
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
        o[key] = yaml_to_json(kv.second, child, d);
      }
      return o;
    }
    default:
      return nullptr;
  }
}

document parse_document(const std::string& text, const std::string& origin, bool force_json) {
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
  if (d.root.is_null()) throw input_error(origin + ": the model file is empty");
  if (!d.root.is_object()) {
    throw input_error(
        fmt::format("{}: expected a mapping of model fields at the top level, got {}", origin, d.root.type_name()));
  }
  return d;
}

/// finalize_model with the file (and, for YAML, the line of the field it names) in front of errors.
void finalize_from(const document& d, model_spec& m) {
  try {
    finalize_model(m);
  } catch (const input_error& e) {
    const std::string msg = e.what();
    std::string where = d.origin;
    const std::string marker = "model field '";
    if (const auto at = msg.find(marker); at != std::string::npos) {
      const auto start = at + marker.size();
      where = d.where(msg.substr(start, msg.find('\'', start) - start));
    }
    throw input_error(fmt::format("{}: {}", where, msg));
  }
}

// ---- our own format --------------------------------------------------------------------------------

using setter = void (*)(model_spec&, const document&, const json&, const std::string&);

template <std::int64_t model_spec::*F, std::int64_t Min>
void set_int(model_spec& m, const document& d, const json& v, const std::string& p) {
  m.*F = as_int(d, v, p, Min);
}
template <std::int64_t moe_spec::*F, std::int64_t Min>
void set_moe_int(model_spec& m, const document& d, const json& v, const std::string& p) {
  m.moe.*F = as_int(d, v, p, Min);
}
template <bool model_spec::*F>
void set_bool(model_spec& m, const document& d, const json& v, const std::string& p) {
  m.*F = as_bool(d, v, p);
}
template <double model_spec::*F>
void set_probability(model_spec& m, const document& d, const json& v, const std::string& p) {
  m.*F = as_probability(d, v, p);
}

struct field {
  const char* name;
  setter set;
};

// Sizes where 0 asks finalize_model for Megatron's default take Min = 0.
const field kFields[] = {
    {"name",
     [](model_spec& m, const document& d, const json& v, const std::string& p) { m.name = as_string(d, v, p); }},
    {"num_layers", set_int<&model_spec::num_layers, 1>},
    {"hidden_size", set_int<&model_spec::hidden_size, 1>},
    {"ffn_hidden_size", set_int<&model_spec::ffn_hidden_size, 0>},
    {"num_attention_heads", set_int<&model_spec::num_attention_heads, 1>},
    {"num_query_groups", set_int<&model_spec::num_query_groups, 0>},
    {"kv_channels", set_int<&model_spec::kv_channels, 0>},
    {"vocab_size", set_int<&model_spec::vocab_size, 1>},
    {"padded_vocab_size", set_int<&model_spec::padded_vocab_size, 0>},
    {"make_vocab_size_divisible_by", set_int<&model_spec::make_vocab_size_divisible_by, 1>},
    {"seq_length", set_int<&model_spec::seq_length, 1>},
    {"max_position_embeddings", set_int<&model_spec::max_position_embeddings, 0>},
    {"position_embedding",
     [](model_spec& m, const document& d, const json& v, const std::string& p) {
       m.position_embedding = parse_enum_field(d, v, p, parse_position_embedding);
     }},
    {"activation", [](model_spec& m, const document& d, const json& v,
                      const std::string& p) { m.activation = parse_enum_field(d, v, p, parse_activation); }},
    {"norm", [](model_spec& m, const document& d, const json& v,
                const std::string& p) { m.norm = parse_enum_field(d, v, p, parse_norm); }},
    {"add_bias_linear", set_bool<&model_spec::add_bias_linear>},
    {"add_qkv_bias", set_bool<&model_spec::add_qkv_bias>},
    {"tie_embeddings", set_bool<&model_spec::tie_embeddings>},
    {"embedding_norm", set_bool<&model_spec::embedding_norm>},
    {"final_norm", set_bool<&model_spec::final_norm>},
    {"attention_dropout", set_probability<&model_spec::attention_dropout>},
    {"hidden_dropout", set_probability<&model_spec::hidden_dropout>},
};

const field kMoeFields[] = {
    {"num_experts", set_moe_int<&moe_spec::num_experts, 0>},
    {"router_topk", set_moe_int<&moe_spec::router_topk, 0>},
    {"expert_ffn_hidden_size", set_moe_int<&moe_spec::expert_ffn_hidden_size, 0>},
    {"shared_expert_ffn_hidden_size", set_moe_int<&moe_spec::shared_expert_ffn_hidden_size, 0>},
    {"layer_freq", set_moe_int<&moe_spec::layer_freq, 1>},
    {"first_dense_layers", set_moe_int<&moe_spec::first_dense_layers, 0>},
};

template <std::size_t N>
void read_fields(model_spec& m, const document& d, const json& object, const std::string& prefix,
                 const field (&table)[N], const std::vector<std::string>& extra, std::set<std::string>& given) {
  for (const auto& item : object.items()) {
    // Not a structured binding: clang before 16 cannot capture one in the lambda below (issue 15).
    const std::string& key = item.key();
    const json& value = item.value();
    const std::string path = prefix + key;
    if (std::find(extra.begin(), extra.end(), key) != extra.end()) continue;
    const auto it = std::find_if(std::begin(table), std::end(table), [&](const field& f) { return key == f.name; });
    if (it == std::end(table)) {
      std::vector<std::string> names(extra);
      for (const field& f : table) names.emplace_back(f.name);
      throw input_error(fmt::format("{}: unknown field '{}'{}", d.where(path), path, did_you_mean(key, names)));
    }
    it->set(m, d, value, path);
    given.insert(path);
  }
}

/// Fields the base model holds at the value finalize_model derives from others (4h FFN, h/a head
/// dim, MHA groups, positions = sequence) go back to 0 so they follow the overrides.
void rederive_from_base(model_spec& m, model_spec base, const std::set<std::string>& given) {
  struct derived {
    const char* name;
    std::int64_t& (*ref)(model_spec&);
  };
  static const derived kDerived[] = {
      {"ffn_hidden_size", [](model_spec& s) -> std::int64_t& { return s.ffn_hidden_size; }},
      {"kv_channels", [](model_spec& s) -> std::int64_t& { return s.kv_channels; }},
      {"num_query_groups", [](model_spec& s) -> std::int64_t& { return s.num_query_groups; }},
      {"max_position_embeddings", [](model_spec& s) -> std::int64_t& { return s.max_position_embeddings; }},
      {"moe.expert_ffn_hidden_size", [](model_spec& s) -> std::int64_t& { return s.moe.expert_ffn_hidden_size; }},
  };
  for (const derived& f : kDerived) {
    if (given.count(f.name)) continue;
    model_spec probe = base;
    f.ref(probe) = 0;
    try {
      finalize_model(probe);
    } catch (const input_error&) {
      continue;
    }
    if (f.ref(probe) == f.ref(base)) f.ref(m) = 0;
  }
}

model_spec read_own(const document& d) {
  model_spec m;
  model_spec base;
  bool has_base = false;
  if (const auto it = d.root.find("base"); it != d.root.end()) {
    const std::string name = as_string(d, *it, "base");
    try {
      base = find_model(name).spec;
    } catch (const input_error& e) {
      throw input_error(fmt::format("{}: field 'base': {}", d.where("base"), e.what()));
    }
    m = base;
    has_base = true;
  }
  std::set<std::string> given;
  read_fields(m, d, d.root, "", kFields, {"base", "moe"}, given);
  if (const auto it = d.root.find("moe"); it != d.root.end()) {
    if (!it->is_object()) d.fail("moe", fmt::format("expected a mapping of moe fields, got {}", d.shown("moe", *it)));
    read_fields(m, d, *it, "moe.", kMoeFields, {}, given);
  }
  if (!has_base) {
    for (const char* key : {"num_layers", "hidden_size", "num_attention_heads", "vocab_size"}) {
      if (!d.root.contains(key)) {
        throw input_error(
            fmt::format("{}: missing field '{}' (or start from a catalog model with 'base:')", d.origin, key));
      }
    }
    if (!d.root.contains("seq_length") && !d.root.contains("max_position_embeddings")) {
      throw input_error(
          fmt::format("{}: missing field 'seq_length' (or start from a catalog model with 'base:')", d.origin));
    }
  }
  if (has_base && !given.empty()) rederive_from_base(m, base, given);
  if (!given.count("name")) m.name = stem_of(d.origin);
  return m;
}

// ---- Hugging Face config.json ----------------------------------------------------------------------

/// Reads a config.json's keys with the class defaults of transformers; null counts as absent.
struct hf_reader {
  const document& d;

  const json* find(const char* key) const {
    const auto it = d.root.find(key);
    return it == d.root.end() || it->is_null() ? nullptr : &*it;
  }
  /// The first of `keys` present (HF aliases such as n_embed / hidden_size).
  std::int64_t required_int(std::initializer_list<const char*> keys, std::int64_t min = 1) const {
    for (const char* k : keys)
      if (const json* v = find(k)) return as_int(d, *v, k, min);
    std::string names;
    for (const char* k : keys) names += fmt::format("{}'{}'", names.empty() ? "" : " or ", k);
    throw input_error(fmt::format("{}: missing field {}", d.origin, names));
  }
  std::int64_t optional_int(std::initializer_list<const char*> keys, std::int64_t fallback,
                            std::int64_t min = 1) const {
    for (const char* k : keys)
      if (const json* v = find(k)) return as_int(d, *v, k, min);
    return fallback;
  }
  bool optional_bool(const char* key, bool fallback) const {
    const json* v = find(key);
    return v ? as_bool(d, *v, key) : fallback;
  }
  double optional_probability(const char* key, double fallback) const {
    const json* v = find(key);
    return v ? as_probability(d, *v, key) : fallback;
  }
  std::string optional_string(const char* key, const std::string& fallback) const {
    const json* v = find(key);
    return v ? as_string(d, *v, key) : fallback;
  }
};

bool is_gelu(const std::string& a) { return a.rfind("gelu", 0) == 0 || a == "quick_gelu"; }

/// hidden_act of a gated MLP (Llama-style gate/up/down) as our gated unit.
activation_kind gated_activation(const hf_reader& r, const char* key) {
  const std::string a = r.optional_string(key, "silu");
  if (a == "silu" || a == "swish") return activation_kind::swiglu;
  if (is_gelu(a)) return activation_kind::geglu;
  if (a == "relu") return activation_kind::reglu;
  r.d.fail(key, fmt::format("activation '{}' is not modelled (silu, swish, gelu*, relu are)", a));
}

/// activation_function of a plain two-matrix MLP.
activation_kind plain_activation(const hf_reader& r, const char* key, const std::string& fallback) {
  const std::string a = r.optional_string(key, fallback);
  if (is_gelu(a)) return activation_kind::gelu;
  if (a == "relu") return activation_kind::relu;
  if (a == "relu2") return activation_kind::squared_relu;
  r.d.fail(key, fmt::format("activation '{}' is not modelled (gelu*, relu, relu2 are)", a));
}

/// attention_bias / mlp_bias: trainplan models biases on all linear layers or none.
bool all_or_no_bias(const hf_reader& r, bool attention, bool mlp) {
  if (attention != mlp) {
    r.d.fail(attention ? "attention_bias" : "mlp_bias",
             "biases on attention but not on the MLP (or the reverse) are not modelled");
  }
  return attention;
}

/// Llama, Mistral, Mixtral, Qwen2 and Qwen2-MoE: gated MLP, RMSNorm, RoPE, GQA.
void read_llama_like(const hf_reader& r, const std::string& type, model_spec& m) {
  m.num_layers = r.required_int({"num_hidden_layers"});
  m.hidden_size = r.required_int({"hidden_size"});
  m.ffn_hidden_size = r.required_int({"intermediate_size"});
  m.num_attention_heads = r.required_int({"num_attention_heads"});
  m.num_query_groups = r.optional_int({"num_key_value_heads"}, m.num_attention_heads);
  m.kv_channels = r.optional_int({"head_dim"}, 0);
  m.vocab_size = r.required_int({"vocab_size"});
  const std::int64_t default_positions = type == "llama"                            ? 2048
                                         : (type == "qwen2" || type == "qwen2_moe") ? 32768
                                                                                    : 131072;
  m.max_position_embeddings = r.optional_int({"max_position_embeddings"}, default_positions);
  m.position_embedding = position_embedding_kind::rope;
  // Mistral's sliding_window applies unless null; Qwen2's only with use_sliding_window: true.
  if (const json* w = r.find("sliding_window"); w != nullptr && w->is_number_integer() &&
                                                r.optional_bool("use_sliding_window", type == "mistral" || type == "mixtral")) {
    m.sliding_window = w->get<std::int64_t>();
  }
  m.activation = gated_activation(r, "hidden_act");
  m.norm = norm_kind::rmsnorm;
  m.add_bias_linear = false;
  if (type == "llama") {
    m.add_bias_linear = all_or_no_bias(r, r.optional_bool("attention_bias", false), r.optional_bool("mlp_bias", false));
  }
  m.add_qkv_bias = type == "qwen2" || type == "qwen2_moe";
  m.tie_embeddings = r.optional_bool("tie_word_embeddings", false);
  m.attention_dropout = r.optional_probability("attention_dropout", 0.0);
  m.hidden_dropout = 0.0;
  if (type == "mixtral") {
    m.moe.num_experts = r.optional_int({"num_local_experts"}, 8);
    m.moe.router_topk = r.optional_int({"num_experts_per_tok"}, 2);
    m.moe.expert_ffn_hidden_size = m.ffn_hidden_size;
  } else if (type == "qwen2_moe") {
    m.moe.num_experts = r.optional_int({"num_experts"}, 60);
    m.moe.router_topk = r.optional_int({"num_experts_per_tok"}, 4);
    m.moe.expert_ffn_hidden_size = r.optional_int({"moe_intermediate_size"}, 1408);
    m.moe.shared_expert_ffn_hidden_size = r.optional_int({"shared_expert_intermediate_size"}, 5632, 0);
    if (r.optional_int({"decoder_sparse_step"}, 1) != 1) {
      r.d.fail("decoder_sparse_step", "only 1 (every layer MoE) is modelled");
    }
    if (const json* dense = r.find("mlp_only_layers")) {
      // Only a leading run of dense layers (0, 1, ..., k-1) maps to Megatron's layout.
      if (!dense->is_array())
        r.d.fail("mlp_only_layers", fmt::format("expected a list, got {}", r.d.shown("mlp_only_layers", *dense)));
      for (std::size_t i = 0; i < dense->size(); ++i) {
        if (!(*dense)[i].is_number_integer() || (*dense)[i].get<std::int64_t>() != static_cast<std::int64_t>(i)) {
          r.d.fail("mlp_only_layers", "only leading dense layers [0, 1, ..., k-1] are modelled");
        }
      }
      m.moe.first_dense_layers = static_cast<std::int64_t>(dense->size());
    }
  }
}

void read_bloom(const hf_reader& r, model_spec& m) {
  m.num_layers = r.required_int({"n_layer", "num_hidden_layers"});
  m.hidden_size = r.required_int({"hidden_size", "n_embed"});
  m.num_attention_heads = r.required_int({"n_head", "num_attention_heads"});
  m.ffn_hidden_size = 4 * m.hidden_size;
  m.vocab_size = r.required_int({"vocab_size"});
  m.max_position_embeddings = 0;  // ALiBi: no table; finalize_model sets it to seq_length
  m.position_embedding = position_embedding_kind::alibi;
  m.activation = activation_kind::gelu;
  m.norm = norm_kind::layernorm;
  m.add_bias_linear = true;
  m.embedding_norm = true;
  m.tie_embeddings = r.optional_bool("tie_word_embeddings", true);
  m.attention_dropout = r.optional_probability("attention_dropout", 0.0);
  m.hidden_dropout = r.optional_probability("hidden_dropout", 0.0);
}

void read_gpt2(const hf_reader& r, model_spec& m) {
  m.num_layers = r.required_int({"n_layer", "num_hidden_layers"});
  m.hidden_size = r.required_int({"n_embd", "hidden_size"});
  m.num_attention_heads = r.required_int({"n_head", "num_attention_heads"});
  m.ffn_hidden_size = r.optional_int({"n_inner"}, 4 * m.hidden_size);
  m.vocab_size = r.required_int({"vocab_size"});
  m.max_position_embeddings = r.optional_int({"n_positions", "max_position_embeddings"}, 1024);
  m.position_embedding = position_embedding_kind::learned;
  m.activation = plain_activation(r, "activation_function", "gelu_new");
  m.norm = norm_kind::layernorm;
  m.add_bias_linear = true;
  m.tie_embeddings = r.optional_bool("tie_word_embeddings", true);
  m.attention_dropout = r.optional_probability("attn_pdrop", 0.1);
  m.hidden_dropout = r.optional_probability("resid_pdrop", 0.1);
}

void read_gpt_neox(const hf_reader& r, model_spec& m) {
  m.num_layers = r.required_int({"num_hidden_layers"});
  m.hidden_size = r.required_int({"hidden_size"});
  m.num_attention_heads = r.required_int({"num_attention_heads"});
  m.ffn_hidden_size = r.required_int({"intermediate_size"});
  m.vocab_size = r.required_int({"vocab_size"});
  m.max_position_embeddings = r.optional_int({"max_position_embeddings"}, 2048);
  m.position_embedding = position_embedding_kind::rope;
  m.activation = plain_activation(r, "hidden_act", "gelu");
  m.norm = norm_kind::layernorm;
  m.add_bias_linear = all_or_no_bias(r, r.optional_bool("attention_bias", true), true);
  m.tie_embeddings = r.optional_bool("tie_word_embeddings", false);
  m.attention_dropout = r.optional_probability("attention_dropout", 0.0);
  m.hidden_dropout = r.optional_probability("hidden_dropout", 0.0);
}

void read_opt(const hf_reader& r, model_spec& m) {
  m.num_layers = r.required_int({"num_hidden_layers"});
  m.hidden_size = r.required_int({"hidden_size"});
  m.num_attention_heads = r.required_int({"num_attention_heads"});
  m.ffn_hidden_size = r.required_int({"ffn_dim"});
  m.vocab_size = r.required_int({"vocab_size"});
  const std::int64_t context = r.optional_int({"max_position_embeddings"}, 2048);
  m.seq_length = context;
  m.max_position_embeddings = context + 2;  // OPTLearnedPositionalEmbedding's offset of 2
  const std::int64_t projection = r.optional_int({"word_embed_proj_dim"}, m.hidden_size);
  if (projection != m.hidden_size) {
    r.d.fail("word_embed_proj_dim",
             fmt::format("{} differs from hidden_size {}: the embedding projection (project_in/project_out) is "
                         "not modelled",
                         projection, m.hidden_size));
  }
  if (!r.optional_bool("layer_norm_elementwise_affine", true)) {
    r.d.fail("layer_norm_elementwise_affine", "layer norms without weights are not modelled");
  }
  m.position_embedding = position_embedding_kind::learned;
  m.activation = plain_activation(r, "activation_function", "relu");
  m.norm = norm_kind::layernorm;
  m.add_bias_linear = r.optional_bool("enable_bias", true);
  m.final_norm = r.optional_bool("do_layer_norm_before", true) && !r.optional_bool("_remove_final_layer_norm", false);
  m.tie_embeddings = r.optional_bool("tie_word_embeddings", true);
  m.attention_dropout = r.optional_probability("attention_dropout", 0.0);
  m.hidden_dropout = r.optional_probability("dropout", 0.1);
}

const std::vector<std::string>& hf_types() {
  static const std::vector<std::string> types = {"bloom",   "gpt2", "gpt_neox", "llama",    "mistral",
                                                 "mixtral", "opt",  "qwen2",    "qwen2_moe"};
  return types;
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

/// model_type, or the type behind architectures[0] when model_type is absent.
std::string hf_model_type(const hf_reader& r) {
  if (const json* t = r.find("model_type")) return as_string(r.d, *t, "model_type");
  static const std::map<std::string, std::string> kArchitectures = {
      {"LlamaForCausalLM", "llama"},
      {"MistralForCausalLM", "mistral"},
      {"MixtralForCausalLM", "mixtral"},
      {"Qwen2ForCausalLM", "qwen2"},
      {"Qwen2MoeForCausalLM", "qwen2_moe"},
      {"BloomForCausalLM", "bloom"},
      {"BloomModel", "bloom"},
      {"GPT2LMHeadModel", "gpt2"},
      {"GPT2Model", "gpt2"},
      {"GPTNeoXForCausalLM", "gpt_neox"},
      {"OPTForCausalLM", "opt"},
      {"OPTModel", "opt"},
  };
  const json* a = r.find("architectures");
  if (!a || !a->is_array() || a->empty() || !(*a)[0].is_string()) {
    r.d.fail("architectures",
             fmt::format("expected a list of class names, got {}", a ? r.d.shown("architectures", *a) : "null"));
  }
  const std::string arch = (*a)[0].get<std::string>();
  const auto it = kArchitectures.find(arch);
  if (it == kArchitectures.end()) {
    r.d.fail("architectures", fmt::format("unsupported architecture '{}' and no model_type; supported model_type "
                                          "values: {}",
                                          arch, joined(hf_types())));
  }
  return it->second;
}

model_spec read_hf(const document& d) {
  const hf_reader r{d};
  const std::string type = hf_model_type(r);
  model_spec m;
  if (type == "llama" || type == "mistral" || type == "mixtral" || type == "qwen2" || type == "qwen2_moe") {
    read_llama_like(r, type, m);
  } else if (type == "bloom") {
    read_bloom(r, m);
  } else if (type == "gpt2") {
    read_gpt2(r, m);
  } else if (type == "gpt_neox") {
    read_gpt_neox(r, m);
  } else if (type == "opt") {
    read_opt(r, m);
  } else {
    d.fail("model_type", fmt::format("unsupported Hugging Face model_type '{}'{}; supported: {}", type,
                                     did_you_mean(type, hf_types()), joined(hf_types())));
  }
  // The context is what a plan uses by default; BLOOM (ALiBi, no table) trained at 2048.
  const std::int64_t context = m.seq_length > 0                ? m.seq_length
                               : m.max_position_embeddings > 0 ? m.max_position_embeddings
                                                               : 2048;
  m.seq_length = r.optional_int({"seq_length"}, context);
  // The checkpoint's embedding has exactly vocab_size rows. Megatron's padding to 128·TP is kept
  // where the checkpoint already is a multiple of 128; otherwise (GPT-2's 50257, OPT's 50272) the
  // checkpoint was not padded, so only TP's multiple is added.
  if (m.vocab_size % m.make_vocab_size_divisible_by != 0) m.make_vocab_size_divisible_by = 1;
  const json* source = r.find("_name_or_path");
  m.name = source && source->is_string() && !source->get<std::string>().empty() ? source->get<std::string>()
                                                                                : stem_of(d.origin);
  return m;
}

bool is_hf(const document& d) { return d.root.contains("model_type") || d.root.contains("architectures"); }

model_spec read_document(const document& d) {
  model_spec m = is_hf(d) ? read_hf(d) : read_own(d);
  finalize_from(d, m);
  return m;
}

}  // namespace

model_spec parse_model_text(const std::string& text, const std::string& origin) {
  return read_document(parse_document(text, origin, false));
}

model_spec load_model_file(const std::string& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (!std::filesystem::exists(status)) throw input_error(path + ": no such model file");
  if (std::filesystem::is_directory(status)) throw input_error(path + ": is a directory, not a model file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw input_error(fmt::format("{}: cannot open model file: {}", path, std::strerror(errno)));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw input_error(fmt::format("{}: cannot read model file: {}", path, std::strerror(errno)));
  return read_document(parse_document(text.str(), path, ends_with(path, ".json")));
}

model_spec resolve_model(const std::string& name_or_path) {
  const std::string& s = name_or_path;
  if (s.find('/') != std::string::npos || ends_with(s, ".json") || ends_with(s, ".yaml") || ends_with(s, ".yml")) {
    return load_model_file(s);
  }
  const auto names = model_names();
  if (std::find(names.begin(), names.end(), s) != names.end()) return find_model(s).spec;
  std::error_code ec;
  if (std::filesystem::is_regular_file(s, ec)) return load_model_file(s);
  return find_model(s).spec;
}

}  // namespace trainplan
