// Loading models: our YAML/JSON description and the document both formats parse into; Hugging Face
// config.json files are read by src/core/model/model_hf.cc (docs/formulas.md §1.6).
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

#include "trainplan/core/base/input_file.h"
#include "trainplan/core/base/input_text.h"
#include "model/model_io_detail.h"
#include "trainplan/core/base/error.h"
#include "trainplan/core/model/model.h"

namespace trainplan {

namespace detail {

std::string stem_of(const std::string& origin) {
  std::string s = std::filesystem::path(origin).stem().string();
  return s.empty() ? origin : s;
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

}  // namespace detail

namespace {

using namespace detail;


bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// ---- parsing text ----------------------------------------------------------------------------------

/// finalize_model with the file (and, for YAML, the line of the field it names) in front of errors.
void finalize_from(const document& d, model_spec& m) {
  try {
    finalize_model(m);
  } catch (const input_error& e) {
    // The core names the model's fields ${model.x}: in a file they are the file's fields, and the first
    // one gives the line.
    auto file_field = [](std::string_view field) {
      if (field == "model") return std::string("a base model ('base:')");
      if (field.starts_with("model.")) field.remove_prefix(6);
      return "model field '" + std::string(field) + "'";
    };
    std::string where = d.origin;
    if (const std::vector<std::string> fields = e.fields(); !fields.empty() && fields.front().starts_with("model.")) {
      where = d.where(fields.front().substr(6));
    }
    throw input_error(fmt::format("{}: {}", where, e.message(file_field)));
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
template <std::int64_t mla_spec::*F>
void set_mla_int(model_spec& m, const document& d, const json& v, const std::string& p) {
  m.mla.*F = as_int(d, v, p, 0);
}
template <std::int64_t mamba_spec::*F>
void set_mamba_int(model_spec& m, const document& d, const json& v, const std::string& p) {
  m.mamba.*F = as_int(d, v, p, 0);
}
template <bool moe_spec::*F>
void set_moe_bool(model_spec& m, const document& d, const json& v, const std::string& p) {
  m.moe.*F = as_bool(d, v, p);
}
/// A number no smaller than `min` (capacity factor, load imbalance).
template <double moe_spec::*F, int Min>
void set_moe_number(model_spec& m, const document& d, const json& v, const std::string& p) {
  if (!v.is_number() || v.get<double>() < Min) {
    d.fail(p, fmt::format("expected a number no smaller than {}, got {}", Min, d.shown(p, v)));
  }
  m.moe.*F = v.get<double>();
}

/// A per-layer 0/1 list, or Megatron's pattern string.
std::vector<std::uint8_t> as_pattern(const document& d, const json& v, const std::string& p) {
  if (v.is_string()) {
    try {
      return parse_layer_pattern(v.get<std::string>(), p);
    } catch (const input_error& e) {
      d.fail(p, e.what());
    }
  }
  if (!v.is_array()) d.fail(p, fmt::format("expected a list of 0 and 1, one per layer, got {}", d.shown(p, v)));
  if (v.size() > static_cast<std::size_t>(1 << 14)) d.fail(p, "more entries than 16384 layers");
  std::vector<std::uint8_t> out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const json& x = v[i];
    const bool bit = x.is_boolean() || (x.is_number_integer() && (x.get<std::int64_t>() == 0 || x.get<std::int64_t>() == 1));
    if (!bit) d.fail(p, fmt::format("entry {} (layer {}): expected 0 or 1, got {}", i, i, x.dump()));
    out.push_back(x.is_boolean() ? x.get<bool>() : static_cast<std::uint8_t>(x.get<std::int64_t>()));
  }
  return out;
}

template <bool model_spec::*F>
void set_bool(model_spec& m, const document& d, const json& v, const std::string& p) {
  m.*F = as_bool(d, v, p);
}
/// A number no smaller than 0 (YaRN's factor).
template <double model_spec::*F>
void set_nonnegative(model_spec& m, const document& d, const json& v, const std::string& p) {
  if (!v.is_number() || v.get<double>() < 0) {
    d.fail(p, fmt::format("expected a number no smaller than 0, got {}", d.shown(p, v)));
  }
  m.*F = v.get<double>();
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
    {"qk_norm", set_bool<&model_spec::qk_norm>},
    {"sandwich_norm", set_bool<&model_spec::sandwich_norm>},
    {"attention_sinks", set_bool<&model_spec::attention_sinks>},
    {"glu_clamp_limit", set_nonnegative<&model_spec::glu_clamp_limit>},
    {"rope_yarn_factor", set_nonnegative<&model_spec::rope_yarn_factor>},
    {"mtp_num_layers", set_int<&model_spec::mtp_num_layers, 0>},
    {"sliding_window", set_int<&model_spec::sliding_window, 0>},
    {"window_skip_freq", set_int<&model_spec::window_skip_freq, 0>},
    {"window_kind", [](model_spec& m, const document& d, const json& v,
                       const std::string& p) { m.window = parse_enum_field(d, v, p, parse_window_kind); }},
    {"window_pattern", [](model_spec& m, const document& d, const json& v,
                          const std::string& p) { m.window_pattern = as_pattern(d, v, p); }},
    {"hybrid_pattern", [](model_spec& m, const document& d, const json& v,
                          const std::string& p) { m.hybrid_pattern = as_string(d, v, p); }},
};

const field kMambaFields[] = {
    {"state_dim", set_mamba_int<&mamba_spec::state_dim>},
    {"head_dim", set_mamba_int<&mamba_spec::head_dim>},
    {"num_heads", set_mamba_int<&mamba_spec::num_heads>},
    {"num_groups", set_mamba_int<&mamba_spec::num_groups>},
    {"conv_kernel", set_mamba_int<&mamba_spec::conv_kernel>},
    {"chunk_size", set_mamba_int<&mamba_spec::chunk_size>},
};

const field kMlaFields[] = {
    {"q_lora_rank", set_mla_int<&mla_spec::q_lora_rank>},
    {"kv_lora_rank", set_mla_int<&mla_spec::kv_lora_rank>},
    {"qk_head_dim", set_mla_int<&mla_spec::qk_head_dim>},
    {"qk_pos_emb_head_dim", set_mla_int<&mla_spec::qk_pos_emb_head_dim>},
    {"v_head_dim", set_mla_int<&mla_spec::v_head_dim>},
};

const field kMoeFields[] = {
    {"num_experts", set_moe_int<&moe_spec::num_experts, 0>},
    {"router_topk", set_moe_int<&moe_spec::router_topk, 0>},
    {"expert_ffn_hidden_size", set_moe_int<&moe_spec::expert_ffn_hidden_size, 0>},
    {"shared_expert_ffn_hidden_size", set_moe_int<&moe_spec::shared_expert_ffn_hidden_size, 0>},
    {"layer_freq", set_moe_int<&moe_spec::layer_freq, 1>},
    {"first_dense_layers", set_moe_int<&moe_spec::first_dense_layers, 0>},
    {"layer_pattern", [](model_spec& m, const document& d, const json& v,
                         const std::string& p) { m.moe.layer_pattern = as_pattern(d, v, p); }},
    {"shared_expert_gate", set_moe_bool<&moe_spec::shared_expert_gate>},
    {"router_bias", set_moe_bool<&moe_spec::router_bias>},
    {"expert_score_bias", set_moe_bool<&moe_spec::expert_score_bias>},
    {"router_num_groups", set_moe_int<&moe_spec::router_num_groups, 0>},
    {"router_group_topk", set_moe_int<&moe_spec::router_group_topk, 0>},
    {"capacity_factor", set_moe_number<&moe_spec::capacity_factor, 0>},
    {"load_imbalance", set_moe_number<&moe_spec::load_imbalance, 1>},
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
  read_fields(m, d, d.root, "", kFields, {"base", "moe", "mla", "mamba"}, given);
  if (const auto it = d.root.find("moe"); it != d.root.end()) {
    if (!it->is_object()) d.fail("moe", fmt::format("expected a mapping of moe fields, got {}", d.shown("moe", *it)));
    read_fields(m, d, *it, "moe.", kMoeFields, {}, given);
  }
  if (const auto it = d.root.find("mla"); it != d.root.end()) {
    if (!it->is_object()) d.fail("mla", fmt::format("expected a mapping of mla fields, got {}", d.shown("mla", *it)));
    read_fields(m, d, *it, "mla.", kMlaFields, {}, given);
  }
  if (const auto it = d.root.find("mamba"); it != d.root.end()) {
    if (!it->is_object()) d.fail("mamba", fmt::format("expected a mapping of mamba fields, got {}", d.shown("mamba", *it)));
    read_fields(m, d, *it, "mamba.", kMambaFields, {}, given);
  }
  if (!has_base) {
    for (const char* key : {"num_layers", "hidden_size", "num_attention_heads", "vocab_size"}) {
      if (!d.root.contains(key) && !(std::string_view(key) == "num_layers" && d.root.contains("hybrid_pattern"))) {
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

bool is_hf(const document& d) { return d.root.contains("model_type") || d.root.contains("architectures"); }

model_spec read_document(const document& d) {
  model_spec m = is_hf(d) ? read_hf(d) : is_deepseek_inference(d) ? read_deepseek_inference(d) : read_own(d);
  finalize_from(d, m);
  return m;
}

}  // namespace

model_spec parse_model_text(const std::string& text, const std::string& origin) {
  return read_document(parse_document(text, origin, false));
}

model_spec load_model_file(const std::string& path) {
  const std::string text = read_input_file(path, "${model}", kMaxConfigFileBytes);
  return read_document(parse_document(text, path, ends_with(path, ".json")));
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
