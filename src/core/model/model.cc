// Model description, defaults and exact parameter counts (docs/formulas.md §1).
#include "trainplan/core/model/model.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <optional>
#include <string>

#include "trainplan/core/base/checked.h"
#include "trainplan/core/base/error.h"

namespace trainplan {

namespace {

std::string lower(std::string_view s) {
  std::string r(s);
  for (char& c : r) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return r;
}

template <typename E, std::size_t N>
E parse_enum(std::string_view s, std::string_view field, const std::array<std::pair<const char*, E>, N>& table) {
  const std::string l = lower(s);
  std::vector<std::string> names;
  for (const auto& [name, value] : table) {
    if (l == name) return value;
    names.push_back(name);
  }
  std::string all;
  for (const auto& n : names) all += (all.empty() ? "" : ", ") + n;
  throw input_error(std::string(field) + ": unknown value '" + std::string(s) + "'" + did_you_mean(l, names) +
                    "; one of: " + all);
}

constexpr std::array<std::pair<const char*, position_embedding_kind>, 6> kPositionNames{{
    {"learned", position_embedding_kind::learned},
    {"learned_absolute", position_embedding_kind::learned},
    {"rope", position_embedding_kind::rope},
    {"alibi", position_embedding_kind::alibi},
    {"none", position_embedding_kind::none},
    {"nope", position_embedding_kind::none},
}};
constexpr std::array<std::pair<const char*, activation_kind>, 6> kActivationNames{{
    {"gelu", activation_kind::gelu},
    {"relu", activation_kind::relu},
    {"squared_relu", activation_kind::squared_relu},
    {"swiglu", activation_kind::swiglu},
    {"geglu", activation_kind::geglu},
    {"reglu", activation_kind::reglu},
}};
constexpr std::array<std::pair<const char*, window_kind>, 2> kWindowNames{{
    {"sliding", window_kind::sliding},
    {"chunked", window_kind::chunked},
}};
constexpr std::array<std::pair<const char*, norm_kind>, 2> kNormNames{{
    {"layernorm", norm_kind::layernorm},
    {"rmsnorm", norm_kind::rmsnorm},
}};

/// Upper bounds that keep every product in int64 (docs/formulas.md §1.5).
constexpr std::int64_t kMaxLayers = 1 << 14;
constexpr std::int64_t kMaxWidth = 1 << 22;     // hidden, ffn, kv channels
constexpr std::int64_t kMaxHeads = 1 << 16;
constexpr std::int64_t kMaxVocab = 1 << 26;
constexpr std::int64_t kMaxSeq = 1 << 26;
constexpr std::int64_t kMaxExperts = 1 << 14;

void require_range(std::int64_t v, std::int64_t lo, std::int64_t hi, const char* field) {
  if (v == 0 && lo > 0) {  // never set: say so, rather than "got 0"
    throw input_error("${model." + std::string(field) + "} is missing: give it, or a ${model} to start from");
  }
  if (v < lo || v > hi) {
    std::string rule = lo == 0 ? "must be between 0 and " + std::to_string(hi)
                               : "must be a positive integer no larger than " + std::to_string(hi);
    throw input_error("${model." + std::string(field) + "} " + rule + ", got " + std::to_string(v));
  }
}

/// A norm over `width` elements: weight (+ bias for LayerNorm).
std::int64_t norm_width(const model_spec& m, std::int64_t width) {
  return m.norm == norm_kind::layernorm ? 2 * width : width;
}
std::int64_t norm_parameters(const model_spec& m) { return norm_width(m, m.hidden_size); }

}  // namespace

bool is_gated(activation_kind a) {
  return a == activation_kind::swiglu || a == activation_kind::geglu || a == activation_kind::reglu;
}

std::string_view to_string(position_embedding_kind k) {
  for (const auto& [n, v] : kPositionNames)
    if (v == k) return n;
  return "?";
}
std::string_view to_string(activation_kind k) {
  for (const auto& [n, v] : kActivationNames)
    if (v == k) return n;
  return "?";
}
std::string_view to_string(norm_kind k) {
  for (const auto& [n, v] : kNormNames)
    if (v == k) return n;
  return "?";
}

std::string_view to_string(window_kind k) {
  for (const auto& [n, v] : kWindowNames)
    if (v == k) return n;
  return "?";
}
window_kind parse_window_kind(std::string_view s, std::string_view field) { return parse_enum(s, field, kWindowNames); }

position_embedding_kind parse_position_embedding(std::string_view s, std::string_view field) {
  return parse_enum(s, field, kPositionNames);
}

double yarn_concentration(double factor, std::optional<double> mscale, std::optional<double> mscale_all_dim) {
  auto m = [factor](double k) { return factor <= 1 ? 1.0 : 0.1 * k * std::log(factor) + 1.0; };
  if (!mscale || !mscale_all_dim) return m(1.0);
  return m(*mscale) / m(*mscale_all_dim);
}

double yarn_factor_for_kernel(double factor, std::optional<double> mscale, std::optional<double> mscale_all_dim) {
  return std::fabs(yarn_concentration(factor, mscale, mscale_all_dim) - 1.0) > 1e-12 ? factor : 0.0;
}
activation_kind parse_activation(std::string_view s, std::string_view field) {
  return parse_enum(s, field, kActivationNames);
}
norm_kind parse_norm(std::string_view s, std::string_view field) { return parse_enum(s, field, kNormNames); }

bool model_spec::is_moe_layer(std::int64_t layer) const {
  if (!is_moe()) return false;
  if (is_hybrid()) {
    return layer >= 0 && layer < static_cast<std::int64_t>(hybrid_pattern.size()) &&
           hybrid_pattern[static_cast<std::size_t>(layer)] == 'E';
  }
  if (!moe.layer_pattern.empty()) {
    return layer >= 0 && layer < static_cast<std::int64_t>(moe.layer_pattern.size()) &&
           moe.layer_pattern[static_cast<std::size_t>(layer)] != 0;
  }
  if (layer < moe.first_dense_layers) return false;
  return (layer - moe.first_dense_layers) % moe.layer_freq == 0;
}

std::int64_t model_spec::num_moe_layers() const {
  if (!is_moe()) return 0;
  if (is_hybrid()) return static_cast<std::int64_t>(std::count(hybrid_pattern.begin(), hybrid_pattern.end(), 'E'));
  if (!moe.layer_pattern.empty()) {
    return static_cast<std::int64_t>(std::count_if(moe.layer_pattern.begin(), moe.layer_pattern.end(),
                                                   [](std::uint8_t v) { return v != 0; }));
  }
  const std::int64_t candidates = std::max<std::int64_t>(0, num_layers - moe.first_dense_layers);
  return detail::ceil_div(candidates, moe.layer_freq);
}

bool model_spec::is_window_layer(std::int64_t layer) const {
  if (sliding_window <= 0 || sliding_window >= seq_length || is_hybrid()) return false;
  if (!window_pattern.empty()) {
    return layer >= 0 && layer < static_cast<std::int64_t>(window_pattern.size()) &&
           window_pattern[static_cast<std::size_t>(layer)] != 0;
  }
  // megatron/core/transformer/utils.py is_layer_window_attention: 1-based layer_number % freq != 0.
  return window_skip_freq <= 0 || (layer + 1) % window_skip_freq != 0;
}

layer_kind model_spec::kind_of_layer(std::int64_t layer) const {
  if (is_hybrid()) {
    switch (layer >= 0 && layer < static_cast<std::int64_t>(hybrid_pattern.size())
                ? hybrid_pattern[static_cast<std::size_t>(layer)]
                : '-') {
      case 'M': return layer_kind::mamba;
      case '*': return layer_kind::attention;
      case 'E': return layer_kind::moe_mlp;
      default: return layer_kind::mlp;
    }
  }
  const bool moe = is_moe_layer(layer), window = is_window_layer(layer);
  return moe ? (window ? layer_kind::moe_window : layer_kind::moe) : (window ? layer_kind::dense_window : layer_kind::dense);
}

/// The one kind every layer has when nothing varies from layer to layer (no hybrid or MoE pattern, no
/// dense first layers, no window pattern or skip frequency), else none: kind_of_layer's answer without
/// asking it per layer (a memory and time estimate counts the layers of every stage).
std::optional<layer_kind> uniform_kind(const model_spec& m) {
  if (m.is_hybrid()) return std::nullopt;
  const bool moe = m.is_moe();
  if (moe && (!m.moe.layer_pattern.empty() || m.moe.first_dense_layers > 0 || m.moe.layer_freq != 1)) return std::nullopt;
  const bool windowed = m.sliding_window > 0 && m.sliding_window < m.seq_length;
  if (windowed && (!m.window_pattern.empty() || m.window_skip_freq > 0)) return std::nullopt;
  return moe ? (windowed ? layer_kind::moe_window : layer_kind::moe)
             : (windowed ? layer_kind::dense_window : layer_kind::dense);
}

layer_counts model_spec::count_layer_kinds(std::int64_t first, std::int64_t count) const {
  layer_counts n{};
  if (const std::optional<layer_kind> k = uniform_kind(*this)) {
    n[static_cast<std::size_t>(*k)] = std::max<std::int64_t>(0, count);
    return n;
  }
  for (std::int64_t i = first; i < first + count; ++i) ++n[static_cast<std::size_t>(kind_of_layer(i))];
  return n;
}

const layer_parameters& parameter_breakdown::of(layer_kind k) const {
  // Indexed by layer_account (kLayerMakeup says which account each kind is counted in).
  static constexpr std::array<layer_parameters parameter_breakdown::*, 4> kOf{
      &parameter_breakdown::dense_layer, &parameter_breakdown::moe_layer, &parameter_breakdown::mamba_layer,
      &parameter_breakdown::attention_layer};
  return this->*kOf[static_cast<std::size_t>(makeup_of(k).account)];
}

namespace {

/// Recursive descent over Megatron's pattern expressions (arguments.py evaluates them as Python).
struct pattern_parser {
  std::string_view text;
  std::string_view flag;
  std::size_t at = 0;

  [[noreturn]] void fail(const std::string& what) const {
    throw input_error(std::string(flag) + " '" + std::string(text) + "': " + what + " at character " +
                      std::to_string(at + 1) + "; expected a list such as [1,0,1] or ([0]*3+[1]*58)");
  }
  void skip() {
    while (at < text.size() && (text[at] == ' ' || text[at] == '\t')) ++at;
  }
  bool eat(char c) {
    skip();
    if (at < text.size() && text[at] == c) return ++at, true;
    return false;
  }
  std::int64_t number() {
    skip();
    std::int64_t v = 0;
    const std::size_t start = at;
    while (at < text.size() && text[at] >= '0' && text[at] <= '9' && v <= kMaxLayers) v = v * 10 + (text[at++] - '0');
    if (at == start) fail("a number is missing");
    if (v > kMaxLayers) fail("a number is too large");
    return v;
  }
  void append(std::vector<std::uint8_t>& out, const std::vector<std::uint8_t>& part) {
    if (out.size() + part.size() > static_cast<std::size_t>(kMaxLayers)) fail("more entries than 16384 layers");
    out.insert(out.end(), part.begin(), part.end());
  }
  std::vector<std::uint8_t> term() {
    std::vector<std::uint8_t> list;
    if (eat('(')) {
      list = expr();
      if (!eat(')')) fail("')' is missing");
    } else if (eat('[')) {
      do {
        const std::int64_t v = number();
        if (v > 1) fail("entries must be 0 or 1");
        append(list, {static_cast<std::uint8_t>(v)});
      } while (eat(','));
      if (!eat(']')) fail("']' is missing");
    } else {
      fail("'[' or '(' is missing");
    }
    if (eat('*')) {
      const std::int64_t n = number();
      std::vector<std::uint8_t> repeated;
      for (std::int64_t i = 0; i < n; ++i) append(repeated, list);
      list = std::move(repeated);
    }
    return list;
  }
  std::vector<std::uint8_t> expr() {
    std::vector<std::uint8_t> out = term();
    while (eat('+')) append(out, term());
    return out;
  }
};

/// MLA's fields (Megatron's defaults for the head dims) and rules: no GQA; the ranks may exceed the hidden
/// size (Megatron checks none; its CI runs q_lora_rank 1536 at hidden 1024).
void finalize_mla(model_spec& m) {
  mla_spec& a = m.mla;
  if (!m.is_mla()) {
    if (a.q_lora_rank != 0) throw input_error("${model.mla.q_lora_rank} needs ${model.multi_latent_attention} (${model.mla.kv_lora_rank})");
    return;
  }
  require_range(a.kv_lora_rank, 1, kMaxWidth, "mla.kv_lora_rank");
  require_range(a.q_lora_rank, 0, kMaxWidth, "mla.q_lora_rank");
  require_range(a.qk_head_dim, 1, kMaxWidth, "mla.qk_head_dim");
  require_range(a.qk_pos_emb_head_dim, 1, kMaxWidth, "mla.qk_pos_emb_head_dim");
  require_range(a.v_head_dim, 1, kMaxWidth, "mla.v_head_dim");
  // §1.7: Megatron-Core's MLA builds its down and up projections without biases whatever add_bias_linear
  // says (multi_latent_attention.py: bias=False); the output projection and the MLP take it as usual.
  if (m.add_qkv_bias) {
    throw input_error("${model.add_qkv_bias} with multi-latent attention: MLA has no QKV projection for it (Megatron-Core "
                      "builds MLA's projections without biases); leave it out");
  }
  if (m.num_query_groups != m.num_attention_heads) {
    throw input_error("multi-latent attention has one key/value head per query head: ${model.num_query_groups} (" +
                      std::to_string(m.num_query_groups) + ") must equal ${model.num_attention_heads} (" +
                      std::to_string(m.num_attention_heads) + ") or be left out");
  }
}

/// A per-layer 0/1 pattern has one entry per layer.
void check_pattern(const std::vector<std::uint8_t>& pattern, std::int64_t layers, const char* field) {
  if (!pattern.empty() && static_cast<std::int64_t>(pattern.size()) != layers) {
    throw input_error("${model." + std::string(field) + "} has " + std::to_string(pattern.size()) +
                      " entries; it needs one per layer (" + std::to_string(layers) + ")");
  }
}

void finalize_window(model_spec& m) {
  require_range(m.sliding_window, 0, kMaxSeq, "sliding_window");
  require_range(m.window_skip_freq, 0, kMaxLayers, "window_skip_freq");
  check_pattern(m.window_pattern, m.num_layers, "window_pattern");
  if (m.sliding_window == 0 && (m.window_skip_freq != 0 || !m.window_pattern.empty())) {
    throw input_error("${model.window_skip_freq} needs ${model.sliding_window}");
  }
}

/// A hybrid pattern's characters (Megatron-Core hybrid_layer_allocation.py Symbols): the four
/// modelled, and the ones Megatron has that are not.
void check_hybrid_pattern(const std::string& pattern) {
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == 'M' || c == '*' || c == '-' || c == 'E') continue;
    const std::string at = "${model.hybrid_pattern} '" + pattern + "': character " +
                           std::to_string(i + 1) + " '" + std::string(1, c) + "' ";
    static constexpr std::array<std::pair<char, const char*>, 5> kNotModelled{{{'G', "a gated DeltaNet layer"},
                                                                              {'D', "a DeepSeek sparse-attention layer"},
                                                                              {'+', "an MLA layer"},
                                                                              {'|', "a pipeline segment boundary"},
                                                                              {'/', "an MTP pattern"}}};
    for (const auto& [symbol, what] : kNotModelled) {
      if (c == symbol) throw input_error(at + "is " + what + ", which is not modelled; use M, *, - and E");
    }
    throw input_error(at + "is not a layer: use M (Mamba), * (attention), - (MLP) or E (MoE)");
  }
}

/// §1.10: a hybrid model's pattern sets its layers; its Mamba-2 sizes follow Megatron's defaults and
/// MambaMixer's asserts. What a hybrid cannot combine with here is refused by name.
void finalize_hybrid(model_spec& m) {
  if (!m.is_hybrid()) return;
  if (m.hybrid_pattern.size() > static_cast<std::size_t>(kMaxLayers)) {
    throw input_error("${model.hybrid_pattern} has " + std::to_string(m.hybrid_pattern.size()) +
                      " layers; at most 16384");
  }
  check_hybrid_pattern(m.hybrid_pattern);
  const auto n = static_cast<std::int64_t>(m.hybrid_pattern.size());
  if (m.num_layers == 0) m.num_layers = n;
  if (m.num_layers != n) {
    throw input_error("${model.num_layers} (" + std::to_string(m.num_layers) + ") must equal the length of " +
                      "${model.hybrid_pattern} (" + std::to_string(n) + " layers) or be left out");
  }
  const bool has_e = m.hybrid_pattern.find('E') != std::string::npos;
  if (has_e != m.is_moe()) {
    throw input_error(has_e ? "${model.hybrid_pattern} has MoE layers (E): give ${model.moe.num_experts}"
                            : "${model.moe.num_experts} needs MoE layers (E) in ${model.hybrid_pattern}");
  }
  if (!m.moe.layer_pattern.empty() || m.moe.layer_freq != 1 || m.moe.first_dense_layers != 0) {
    throw input_error("${model.moe.layer_freq} with ${model.hybrid_pattern}: the pattern's E characters place the MoE layers");
  }
  struct refused {
    bool set;
    const char* what;
  };
  for (const refused& r : {refused{m.sliding_window > 0, "${model.sliding_window}"},
                           refused{m.mtp_num_layers > 0, "${model.mtp_num_layers}"},
                           refused{m.is_mla(), "${model.multi_latent_attention}"},
                           refused{m.sandwich_norm, "sandwich norms"}}) {
    if (r.set) throw input_error(std::string(r.what) + " with ${model.hybrid_pattern} is not modelled");
  }
  mamba_spec& x = m.mamba;
  require_range(x.head_dim, 1, kMaxWidth, "mamba.head_dim");
  if (x.num_heads == 0) {
    // TransformerConfig: hidden_size × expand (2) // mamba_head_dim.
    x.num_heads = 2 * m.hidden_size / x.head_dim;
    if (x.num_heads == 0) throw input_error("${model.mamba.head_dim} (" + std::to_string(x.head_dim) + ") exceeds 2 × ${model.hidden_size}");
  }
  require_range(x.num_heads, 1, kMaxWidth, "mamba.num_heads");
  require_range(x.state_dim, 1, kMaxWidth, "mamba.state_dim");
  require_range(x.num_groups, 1, x.num_heads, "mamba.num_groups");
  require_range(x.conv_kernel, 1, 64, "mamba.conv_kernel");
  require_range(x.chunk_size, 1, kMaxSeq, "mamba.chunk_size");
  require_range(x.d_inner(), 1, kMaxWidth, "mamba.num_heads} × ${model.mamba.head_dim");
  if (x.num_heads % x.num_groups != 0) {
    throw input_error("${model.mamba.num_heads} (" + std::to_string(x.num_heads) + ") must be divisible by " +
                      "${model.mamba.num_groups} (" + std::to_string(x.num_groups) + ")");
  }
}

void finalize_moe(model_spec& m) {
  moe_spec& x = m.moe;
  if (!m.is_moe()) {
    if (x.router_topk != 0 || x.expert_ffn_hidden_size != 0 || !x.layer_pattern.empty() || x.router_num_groups != 0) {
      throw input_error("${model.moe.router_topk}, ${model.moe.expert_ffn_hidden_size}, ${model.moe.layer_freq} patterns and "
                        "${model.moe.router_num_groups} need ${model.moe.num_experts}");
    }
    return;
  }
  require_range(x.num_experts, 1, kMaxExperts, "moe.num_experts");
  if (x.router_topk == 0) x.router_topk = std::min<std::int64_t>(2, x.num_experts);
  require_range(x.router_topk, 1, x.num_experts, "moe.router_topk");
  if (x.expert_ffn_hidden_size == 0) x.expert_ffn_hidden_size = m.ffn_hidden_size;
  require_range(x.expert_ffn_hidden_size, 1, kMaxWidth, "moe.expert_ffn_hidden_size");
  require_range(x.shared_expert_ffn_hidden_size, 0, kMaxWidth, "moe.shared_expert_ffn_hidden_size");
  require_range(x.layer_freq, 1, kMaxLayers, "moe.layer_freq");
  require_range(x.first_dense_layers, 0, m.num_layers, "moe.first_dense_layers");
  check_pattern(x.layer_pattern, m.num_layers, "moe.layer_pattern");
  if (x.shared_expert_gate && x.shared_expert_ffn_hidden_size == 0) {
    throw input_error("${model.moe.shared_expert_gate} needs ${model.moe.shared_expert_ffn_hidden_size}");
  }
  require_range(x.router_num_groups, 0, x.num_experts, "moe.router_num_groups");
  if (x.router_num_groups > 0) {
    if (x.num_experts % x.router_num_groups != 0) {
      throw input_error("${model.moe.num_experts} (" + std::to_string(x.num_experts) + ") must be divisible by " +
                        "${model.moe.router_num_groups} (" + std::to_string(x.router_num_groups) + ")");
    }
    require_range(x.router_group_topk, 1, x.router_num_groups, "moe.router_group_topk");
    if (x.router_topk > x.router_group_topk * (x.num_experts / x.router_num_groups)) {
      throw input_error("${model.moe.router_topk} (" + std::to_string(x.router_topk) + ") exceeds the experts of the " +
                        "${model.moe.router_group_topk} groups a token may use");
    }
  } else if (x.router_group_topk != 0) {
    throw input_error("${model.moe.router_group_topk} needs ${model.moe.router_num_groups}");
  }
  if (!(x.capacity_factor == 0 || (x.capacity_factor > 0 && x.capacity_factor <= 1e3))) {
    throw input_error("${model.moe.capacity_factor} must be positive (at most "
                      "1000), got " + std::to_string(x.capacity_factor));
  }
  if (!(x.load_imbalance >= 1.0 && x.load_imbalance <= static_cast<double>(x.num_experts))) {
    throw input_error("${model.moe.load_imbalance} must be between 1 (balanced) and "
                      "the expert count " + std::to_string(x.num_experts) + ", got " + std::to_string(x.load_imbalance));
  }
}

}  // namespace

std::vector<std::uint8_t> parse_layer_pattern(std::string_view text, std::string_view flag) {
  pattern_parser p{text, flag};
  std::vector<std::uint8_t> out = p.expr();
  p.skip();
  if (p.at != text.size()) p.fail("unexpected text");
  return out;
}

void finalize_model(model_spec& m) {
  if (m.is_hybrid() && m.num_layers == 0) m.num_layers = static_cast<std::int64_t>(m.hybrid_pattern.size());
  require_range(m.num_layers, 1, kMaxLayers, "num_layers");
  require_range(m.hidden_size, 1, kMaxWidth, "hidden_size");
  require_range(m.num_attention_heads, 1, kMaxHeads, "num_attention_heads");
  if (m.is_mla()) {
    mla_spec& a = m.mla;
    if (a.qk_head_dim == 0) a.qk_head_dim = 128;  // megatron/training/arguments.py defaults
    if (a.qk_pos_emb_head_dim == 0) a.qk_pos_emb_head_dim = 64;
    if (a.v_head_dim == 0) a.v_head_dim = 128;
    m.kv_channels = a.qk_head_dim + a.qk_pos_emb_head_dim;  // a query/key head
  }
  if (m.kv_channels == 0) {
    if (m.hidden_size % m.num_attention_heads != 0) {
      throw input_error("${model.hidden_size} (" + std::to_string(m.hidden_size) +
                        ") must be divisible by ${model.num_attention_heads} (" + std::to_string(m.num_attention_heads) +
                        ") unless ${model.kv_channels} is given");
    }
    m.kv_channels = m.hidden_size / m.num_attention_heads;
  }
  require_range(m.kv_channels, 1, kMaxWidth, "kv_channels");
  if (m.num_query_groups == 0) m.num_query_groups = m.num_attention_heads;
  require_range(m.num_query_groups, 1, kMaxHeads, "num_query_groups");
  if (m.num_attention_heads % m.num_query_groups != 0) {
    throw input_error("${model.num_attention_heads} (" + std::to_string(m.num_attention_heads) +
                      ") must be divisible by ${model.num_query_groups} (" + std::to_string(m.num_query_groups) + ")");
  }
  if (m.ffn_hidden_size == 0) {
    // megatron/training/arguments.py: 4h, or int(4h·2/3 / 64)·64 with --swiglu (§1.2).
    m.ffn_hidden_size = is_gated(m.activation) ? (4 * m.hidden_size * 2 / 3) / 64 * 64 : 4 * m.hidden_size;
    if (m.ffn_hidden_size == 0) m.ffn_hidden_size = 4 * m.hidden_size;
  }
  require_range(m.ffn_hidden_size, 1, kMaxWidth, "ffn_hidden_size");
  if (m.seq_length == 0) m.seq_length = m.max_position_embeddings;
  require_range(m.seq_length, 1, kMaxSeq, "seq_length");
  if (m.max_position_embeddings == 0) m.max_position_embeddings = m.seq_length;
  require_range(m.max_position_embeddings, 1, kMaxSeq, "max_position_embeddings");
  if (m.position_embedding == position_embedding_kind::learned && m.seq_length > m.max_position_embeddings) {
    throw input_error("${model.seq_length} (" + std::to_string(m.seq_length) + ") must not exceed ${model.max_position_embeddings} (" +
                      std::to_string(m.max_position_embeddings) + ") with learned position embeddings");
  }
  if (m.vocab_size == 0) m.vocab_size = m.padded_vocab_size;
  require_range(m.vocab_size, 1, kMaxVocab, "vocab_size");
  require_range(m.padded_vocab_size, 0, kMaxVocab, "padded_vocab_size");
  if (m.padded_vocab_size != 0 && m.padded_vocab_size < m.vocab_size) {
    throw input_error("${model.padded_vocab_size} (" + std::to_string(m.padded_vocab_size) +
                      ") must not be smaller than ${model.vocab_size} (" + std::to_string(m.vocab_size) + ")");
  }
  require_range(m.make_vocab_size_divisible_by, 1, kMaxVocab, "make_vocab_size_divisible_by");
  struct dropout_field {
    double p;
    const char* field;
  };
  for (const dropout_field& d : {dropout_field{m.attention_dropout, "${model.attention_dropout}"},
                                 dropout_field{m.hidden_dropout, "${model.hidden_dropout}"}}) {
    if (!(d.p >= 0.0 && d.p < 1.0)) throw input_error(std::string(d.field) + " must be in [0, 1), got " + std::to_string(d.p));
  }
  finalize_moe(m);
  finalize_mla(m);
  finalize_window(m);
  finalize_hybrid(m);
  require_range(m.mtp_num_layers, 0, kMaxLayers, "mtp_num_layers");
  if (m.name.empty()) m.name = "custom";
}

std::int64_t padded_vocab(const model_spec& m, std::int64_t tp) {
  if (m.padded_vocab_size > 0) return m.padded_vocab_size;
  const std::int64_t multiple = detail::checked_mul(m.make_vocab_size_divisible_by, tp, "vocabulary padding");
  return detail::ceil_div(m.vocab_size, multiple) * multiple;
}

namespace {

/// §1.10: one Mamba-2 block (MambaMixer): its norm, in_proj h → 2·d_inner + 2·G·N + H, the depthwise
/// convolution's weight (conv_width × d_conv) and bias, dt_bias, A_log and D per head, the gated
/// RMSNorm over d_inner, out_proj d_inner → h; biases on the projections with --add-bias-linear.
layer_parameters mamba_parameters(const model_spec& m) {
  using detail::checked_mul;
  const mamba_spec& x = m.mamba;
  const std::int64_t h = m.hidden_size;
  const std::int64_t d = x.d_inner();
  const std::int64_t in_width = 2 * d + 2 * x.num_groups * x.state_dim + x.num_heads;
  layer_parameters l;
  l.input_norm = norm_parameters(m);
  l.mamba_in_proj = checked_mul(h, in_width, "Mamba parameters") + (m.add_bias_linear ? in_width : 0);
  l.mamba_conv = checked_mul(x.conv_width(), x.conv_kernel + 1, "Mamba parameters");
  l.mamba_ssm = 3 * x.num_heads;
  l.mamba_norm = d;
  l.mamba_out_proj = checked_mul(d, h, "Mamba parameters") + (m.add_bias_linear ? h : 0);
  return l;
}

}  // namespace

parameter_breakdown count_parameters(const model_spec& m, std::int64_t tp) {
  using detail::checked_add;
  using detail::checked_mul;
  parameter_breakdown p;
  const std::int64_t h = m.hidden_size;
  const std::int64_t q = m.q_width();
  const std::int64_t kv = m.k_width();
  const std::int64_t gate = is_gated(m.activation) ? 2 : 1;
  const bool bias = m.add_bias_linear;

  p.padded_vocab_size = padded_vocab(m, tp);
  p.word_embeddings = checked_mul(p.padded_vocab_size, h, "word embedding parameters");
  p.position_embeddings =
      m.position_embedding == position_embedding_kind::learned ? checked_mul(m.max_position_embeddings, h, "position embedding parameters") : 0;
  p.embedding_norm = m.embedding_norm ? norm_parameters(m) : 0;

  // §1.1: attention and norms are the same in dense and MoE layers.
  layer_parameters base;
  base.input_norm = norm_parameters(m);
  const std::int64_t heads = m.num_attention_heads;
  if (m.is_mla()) {
    // §1.7: low-rank queries (or direct), compressed keys/values plus the shared RoPE key, up-projected
    // per head; the down-projections are whole on every TP rank (Megatron's "duplicated" TELinear).
    const mla_spec& a = m.mla;
    const std::int64_t qk = a.qk_head_dim + a.qk_pos_emb_head_dim;
    const std::int64_t q_up = a.q_lora_rank > 0 ? checked_mul(a.q_lora_rank, heads * qk, "MLA parameters")
                                                 : checked_mul(h, heads * qk, "MLA parameters");
    base.qkv_weight = q_up + checked_mul(a.kv_lora_rank, heads * (a.qk_head_dim + a.v_head_dim), "MLA parameters");
    base.qkv_down_weight = checked_mul(h, a.q_lora_rank + a.kv_lora_rank + a.qk_pos_emb_head_dim, "MLA parameters");
    base.attention_norms = norm_width(m, a.kv_lora_rank) + (a.q_lora_rank > 0 ? norm_width(m, a.q_lora_rank) : 0);
  } else {
    base.qkv_weight = checked_mul(h, q + 2 * kv, "QKV parameters");
    base.qkv_bias = (bias || m.add_qkv_bias) ? q + 2 * kv : 0;
    if (m.qk_norm) base.attention_norms = 2 * norm_width(m, m.kv_channels);  // one norm over each q and k head
  }
  base.sinks = m.attention_sinks ? heads : 0;
  base.proj_weight = checked_mul(m.attention_out_width(), h, "projection parameters");
  base.proj_bias = bias ? h : 0;
  base.post_attention_norm = norm_parameters(m);
  base.sandwich_norms = m.sandwich_norm ? 2 * norm_parameters(m) : 0;

  auto mlp_weights = [&](std::int64_t ffn, layer_parameters& l) {
    l.fc1_weight = checked_mul(checked_mul(h, ffn, "MLP parameters"), gate, "MLP parameters");
    l.fc1_bias = bias ? gate * ffn : 0;
    l.fc2_weight = checked_mul(ffn, h, "MLP parameters");
    l.fc2_bias = bias ? h : 0;
  };

  // §1.10: a hybrid model's blocks each have one norm (fused into their first linear layer): the
  // MLP and MoE blocks carry no attention, the attention block no MLP.
  layer_parameters mlp_base = base;
  if (m.is_hybrid()) {
    mlp_base = layer_parameters{};
    mlp_base.input_norm = norm_parameters(m);
    p.num_mamba_layers = std::count(m.hybrid_pattern.begin(), m.hybrid_pattern.end(), 'M');
    p.num_attention_layers = std::count(m.hybrid_pattern.begin(), m.hybrid_pattern.end(), '*');
    p.attention_layer = base;
    p.attention_layer.post_attention_norm = 0;
    p.mamba_layer = mamba_parameters(m);
  }
  p.dense_layer = mlp_base;
  mlp_weights(m.ffn_hidden_size, p.dense_layer);

  p.num_moe_layers = m.num_moe_layers();
  p.num_dense_layers = m.num_layers - p.num_moe_layers - p.num_mamba_layers - p.num_attention_layers;
  if (p.num_moe_layers > 0) {
    p.moe_layer = mlp_base;
    // §1.3: shared experts are a dense MLP of their total width; routed experts have no shared bias.
    if (m.moe.shared_expert_ffn_hidden_size > 0) mlp_weights(m.moe.shared_expert_ffn_hidden_size, p.moe_layer);
    const std::int64_t fe = m.moe.expert_ffn_hidden_size;
    layer_parameters one;
    mlp_weights(fe, one);
    p.moe_layer.expert_each = one.fc1_weight + one.fc1_bias + one.fc2_weight + one.fc2_bias;
    p.moe_layer.experts = checked_mul(p.moe_layer.expert_each, m.moe.num_experts, "expert parameters");
    const std::int64_t e = m.moe.num_experts;
    p.moe_layer.router = checked_mul(h, e, "router parameters") + (m.moe.router_bias ? e : 0) +
                         (m.moe.expert_score_bias ? e : 0);
    p.moe_layer.shared_expert_gate = m.moe.shared_expert_gate ? h : 0;
  }
  if (m.mtp_num_layers > 0) {
    // §1.8: enorm, hnorm, eh_proj (2h → h, no bias), a layer like the last one, the final norm.
    const layer_parameters& last = m.is_moe_layer(m.num_layers - 1) ? p.moe_layer : p.dense_layer;
    p.mtp_each = 3 * norm_parameters(m) + checked_mul(2 * h, h, "MTP parameters") + last.total();
    p.num_mtp_layers = m.mtp_num_layers;
  }

  p.final_norm = m.final_norm ? norm_parameters(m) : 0;
  p.output_layer = m.tie_embeddings ? 0 : p.word_embeddings;

  std::int64_t total = p.embedding() + p.final_norm + p.output_layer;
  total = checked_add(total, checked_mul(p.dense_layer.total(), p.num_dense_layers, "layer parameters"), "parameters");
  total = checked_add(total, checked_mul(p.moe_layer.total(), p.num_moe_layers, "layer parameters"), "parameters");
  total = checked_add(total, checked_mul(p.mamba_layer.total(), p.num_mamba_layers, "layer parameters"), "parameters");
  total = checked_add(total, checked_mul(p.attention_layer.total(), p.num_attention_layers, "layer parameters"),
                      "parameters");
  const std::int64_t main = total;
  p.total = checked_add(total, checked_mul(p.mtp_each, p.num_mtp_layers, "MTP parameters"), "parameters");
  p.active_per_token =
      main - p.num_moe_layers * (m.is_moe() ? (m.moe.num_experts - m.moe.router_topk) * p.moe_layer.expert_each : 0);
  return p;
}

}  // namespace trainplan
