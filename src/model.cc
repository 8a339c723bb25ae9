// Model description, defaults and exact parameter counts (docs/formulas.md §1).
#include "trainplan/model.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>

#include "checked.h"
#include "trainplan/error.h"

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

void require_range(std::int64_t v, std::int64_t lo, std::int64_t hi, const char* field, const char* flag) {
  if (v == 0 && lo > 0) {  // never set: say so, rather than "got 0"
    throw input_error(std::string("model field '") + field + "' (" + flag + ") is missing: give it, or a --model to " +
                      "start from");
  }
  if (v < lo || v > hi) {
    std::string rule = lo == 0 ? "must be between 0 and " + std::to_string(hi)
                               : "must be a positive integer no larger than " + std::to_string(hi);
    throw input_error(std::string("model field '") + field + "' (" + flag + ") " + rule + ", got " +
                      std::to_string(v));
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
activation_kind parse_activation(std::string_view s, std::string_view field) {
  return parse_enum(s, field, kActivationNames);
}
norm_kind parse_norm(std::string_view s, std::string_view field) { return parse_enum(s, field, kNormNames); }

bool model_spec::is_moe_layer(std::int64_t layer) const {
  if (!is_moe()) return false;
  if (!moe.layer_pattern.empty()) {
    return layer >= 0 && layer < static_cast<std::int64_t>(moe.layer_pattern.size()) &&
           moe.layer_pattern[static_cast<std::size_t>(layer)] != 0;
  }
  if (layer < moe.first_dense_layers) return false;
  return (layer - moe.first_dense_layers) % moe.layer_freq == 0;
}

std::int64_t model_spec::num_moe_layers() const {
  if (!is_moe()) return 0;
  if (!moe.layer_pattern.empty()) {
    return static_cast<std::int64_t>(std::count_if(moe.layer_pattern.begin(), moe.layer_pattern.end(),
                                                   [](std::uint8_t v) { return v != 0; }));
  }
  const std::int64_t candidates = std::max<std::int64_t>(0, num_layers - moe.first_dense_layers);
  return detail::ceil_div(candidates, moe.layer_freq);
}

bool model_spec::is_window_layer(std::int64_t layer) const {
  if (sliding_window <= 0 || sliding_window >= seq_length) return false;
  if (!window_pattern.empty()) {
    return layer >= 0 && layer < static_cast<std::int64_t>(window_pattern.size()) &&
           window_pattern[static_cast<std::size_t>(layer)] != 0;
  }
  // megatron/core/transformer/utils.py is_layer_window_attention: 1-based layer_number % freq != 0.
  return window_skip_freq <= 0 || (layer + 1) % window_skip_freq != 0;
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

/// MLA's fields (Megatron's defaults for the head dims) and rules: no GQA, ranks below the hidden size.
void finalize_mla(model_spec& m) {
  mla_spec& a = m.mla;
  if (!m.is_mla()) {
    if (a.q_lora_rank != 0) throw input_error("--q-lora-rank needs --multi-latent-attention (--kv-lora-rank)");
    return;
  }
  require_range(a.kv_lora_rank, 1, m.hidden_size - 1, "mla.kv_lora_rank", "--kv-lora-rank");
  require_range(a.q_lora_rank, 0, m.hidden_size - 1, "mla.q_lora_rank", "--q-lora-rank");
  require_range(a.qk_head_dim, 1, kMaxWidth, "mla.qk_head_dim", "--qk-head-dim");
  require_range(a.qk_pos_emb_head_dim, 1, kMaxWidth, "mla.qk_pos_emb_head_dim", "--qk-pos-emb-head-dim");
  require_range(a.v_head_dim, 1, kMaxWidth, "mla.v_head_dim", "--v-head-dim");
  if (m.add_bias_linear || m.add_qkv_bias) {
    throw input_error("multi-latent attention with linear biases is not modelled: add --disable-bias-linear "
                      "(model field 'add_bias_linear: false'; DeepSeek's MLA has no biases)");
  }
  if (m.num_query_groups != m.num_attention_heads) {
    throw input_error("multi-latent attention has one key/value head per query head: --num-query-groups (" +
                      std::to_string(m.num_query_groups) + ") must equal --num-attention-heads (" +
                      std::to_string(m.num_attention_heads) + ") or be left out");
  }
}

/// A per-layer 0/1 pattern has one entry per layer.
void check_pattern(const std::vector<std::uint8_t>& pattern, std::int64_t layers, const char* field, const char* flag) {
  if (!pattern.empty() && static_cast<std::int64_t>(pattern.size()) != layers) {
    throw input_error(std::string("model field '") + field + "' (" + flag + ") has " + std::to_string(pattern.size()) +
                      " entries; it needs one per layer (" + std::to_string(layers) + ")");
  }
}

void finalize_window(model_spec& m) {
  require_range(m.sliding_window, 0, kMaxSeq, "sliding_window", "--window-size");
  require_range(m.window_skip_freq, 0, kMaxLayers, "window_skip_freq", "--window-attn-skip-freq");
  check_pattern(m.window_pattern, m.num_layers, "window_pattern", "--window-attn-skip-freq");
  if (m.sliding_window == 0 && (m.window_skip_freq != 0 || !m.window_pattern.empty())) {
    throw input_error("--window-attn-skip-freq needs --window-size (model field 'sliding_window')");
  }
}

void finalize_moe(model_spec& m) {
  moe_spec& x = m.moe;
  if (!m.is_moe()) {
    if (x.router_topk != 0 || x.expert_ffn_hidden_size != 0 || !x.layer_pattern.empty() || x.router_num_groups != 0) {
      throw input_error("--moe-router-topk, --moe-ffn-hidden-size, --moe-layer-freq patterns and "
                        "--moe-router-num-groups need --num-experts");
    }
    return;
  }
  require_range(x.num_experts, 1, kMaxExperts, "moe.num_experts", "--num-experts");
  if (x.router_topk == 0) x.router_topk = std::min<std::int64_t>(2, x.num_experts);
  require_range(x.router_topk, 1, x.num_experts, "moe.router_topk", "--moe-router-topk");
  if (x.expert_ffn_hidden_size == 0) x.expert_ffn_hidden_size = m.ffn_hidden_size;
  require_range(x.expert_ffn_hidden_size, 1, kMaxWidth, "moe.expert_ffn_hidden_size", "--moe-ffn-hidden-size");
  require_range(x.shared_expert_ffn_hidden_size, 0, kMaxWidth, "moe.shared_expert_ffn_hidden_size",
                "--moe-shared-expert-intermediate-size");
  require_range(x.layer_freq, 1, kMaxLayers, "moe.layer_freq", "--moe-layer-freq");
  require_range(x.first_dense_layers, 0, m.num_layers, "moe.first_dense_layers", "moe.first_dense_layers");
  check_pattern(x.layer_pattern, m.num_layers, "moe.layer_pattern", "--moe-layer-freq");
  if (x.shared_expert_gate && x.shared_expert_ffn_hidden_size == 0) {
    throw input_error("--moe-shared-expert-gate needs --moe-shared-expert-intermediate-size");
  }
  require_range(x.router_num_groups, 0, x.num_experts, "moe.router_num_groups", "--moe-router-num-groups");
  if (x.router_num_groups > 0) {
    if (x.num_experts % x.router_num_groups != 0) {
      throw input_error("--num-experts (" + std::to_string(x.num_experts) + ") must be divisible by " +
                        "--moe-router-num-groups (" + std::to_string(x.router_num_groups) + ")");
    }
    require_range(x.router_group_topk, 1, x.router_num_groups, "moe.router_group_topk", "--moe-router-group-topk");
    if (x.router_topk > x.router_group_topk * (x.num_experts / x.router_num_groups)) {
      throw input_error("--moe-router-topk (" + std::to_string(x.router_topk) + ") exceeds the experts of the " +
                        "--moe-router-group-topk groups a token may use");
    }
  } else if (x.router_group_topk != 0) {
    throw input_error("--moe-router-group-topk needs --moe-router-num-groups");
  }
  if (!(x.capacity_factor == 0 || (x.capacity_factor > 0 && x.capacity_factor <= 1e3))) {
    throw input_error("model field 'moe.capacity_factor' (--moe-expert-capacity-factor) must be positive (at most "
                      "1000), got " + std::to_string(x.capacity_factor));
  }
  if (!(x.load_imbalance >= 1.0 && x.load_imbalance <= static_cast<double>(x.num_experts))) {
    throw input_error("model field 'moe.load_imbalance' (--moe-load-imbalance) must be between 1 (balanced) and "
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
  require_range(m.num_layers, 1, kMaxLayers, "num_layers", "--num-layers");
  require_range(m.hidden_size, 1, kMaxWidth, "hidden_size", "--hidden-size");
  require_range(m.num_attention_heads, 1, kMaxHeads, "num_attention_heads", "--num-attention-heads");
  if (m.is_mla()) {
    mla_spec& a = m.mla;
    if (a.qk_head_dim == 0) a.qk_head_dim = 128;  // megatron/training/arguments.py defaults
    if (a.qk_pos_emb_head_dim == 0) a.qk_pos_emb_head_dim = 64;
    if (a.v_head_dim == 0) a.v_head_dim = 128;
    m.kv_channels = a.qk_head_dim + a.qk_pos_emb_head_dim;  // a query/key head
  }
  if (m.kv_channels == 0) {
    if (m.hidden_size % m.num_attention_heads != 0) {
      throw input_error("--hidden-size (" + std::to_string(m.hidden_size) +
                        ") must be divisible by --num-attention-heads (" + std::to_string(m.num_attention_heads) +
                        ") unless --kv-channels is given");
    }
    m.kv_channels = m.hidden_size / m.num_attention_heads;
  }
  require_range(m.kv_channels, 1, kMaxWidth, "kv_channels", "--kv-channels");
  if (m.num_query_groups == 0) m.num_query_groups = m.num_attention_heads;
  require_range(m.num_query_groups, 1, kMaxHeads, "num_query_groups", "--num-query-groups");
  if (m.num_attention_heads % m.num_query_groups != 0) {
    throw input_error("--num-attention-heads (" + std::to_string(m.num_attention_heads) +
                      ") must be divisible by --num-query-groups (" + std::to_string(m.num_query_groups) + ")");
  }
  if (m.ffn_hidden_size == 0) {
    // megatron/training/arguments.py: 4h, or int(4h·2/3 / 64)·64 with --swiglu (§1.2).
    m.ffn_hidden_size = is_gated(m.activation) ? (4 * m.hidden_size * 2 / 3) / 64 * 64 : 4 * m.hidden_size;
    if (m.ffn_hidden_size == 0) m.ffn_hidden_size = 4 * m.hidden_size;
  }
  require_range(m.ffn_hidden_size, 1, kMaxWidth, "ffn_hidden_size", "--ffn-hidden-size");
  if (m.seq_length == 0) m.seq_length = m.max_position_embeddings;
  require_range(m.seq_length, 1, kMaxSeq, "seq_length", "--seq-length");
  if (m.max_position_embeddings == 0) m.max_position_embeddings = m.seq_length;
  require_range(m.max_position_embeddings, 1, kMaxSeq, "max_position_embeddings", "--max-position-embeddings");
  if (m.position_embedding == position_embedding_kind::learned && m.seq_length > m.max_position_embeddings) {
    throw input_error("--seq-length (" + std::to_string(m.seq_length) + ") must not exceed --max-position-embeddings (" +
                      std::to_string(m.max_position_embeddings) + ") with learned position embeddings");
  }
  if (m.vocab_size == 0) m.vocab_size = m.padded_vocab_size;
  require_range(m.vocab_size, 1, kMaxVocab, "vocab_size", "--vocab-size");
  require_range(m.padded_vocab_size, 0, kMaxVocab, "padded_vocab_size", "--padded-vocab-size");
  if (m.padded_vocab_size != 0 && m.padded_vocab_size < m.vocab_size) {
    throw input_error("--padded-vocab-size (" + std::to_string(m.padded_vocab_size) +
                      ") must not be smaller than --vocab-size (" + std::to_string(m.vocab_size) + ")");
  }
  require_range(m.make_vocab_size_divisible_by, 1, kMaxVocab, "make_vocab_size_divisible_by",
                "--make-vocab-size-divisible-by");
  struct dropout_field {
    double p;
    const char* name;
    const char* flag;
  };
  for (const dropout_field& d : {dropout_field{m.attention_dropout, "attention_dropout", "--attention-dropout"},
                                 dropout_field{m.hidden_dropout, "hidden_dropout", "--hidden-dropout"}}) {
    if (!(d.p >= 0.0 && d.p < 1.0)) {
      throw input_error(std::string("model field '") + d.name + "' (" + d.flag + ") must be in [0, 1), got " +
                        std::to_string(d.p));
    }
  }
  finalize_moe(m);
  finalize_mla(m);
  finalize_window(m);
  require_range(m.mtp_num_layers, 0, kMaxLayers, "mtp_num_layers", "--mtp-num-layers");
  if (m.name.empty()) m.name = "custom";
}

std::int64_t padded_vocab(const model_spec& m, std::int64_t tp) {
  if (m.padded_vocab_size > 0) return m.padded_vocab_size;
  const std::int64_t multiple = detail::checked_mul(m.make_vocab_size_divisible_by, tp, "vocabulary padding");
  return detail::ceil_div(m.vocab_size, multiple) * multiple;
}

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

  p.dense_layer = base;
  mlp_weights(m.ffn_hidden_size, p.dense_layer);

  p.num_moe_layers = m.num_moe_layers();
  p.num_dense_layers = m.num_layers - p.num_moe_layers;
  if (p.num_moe_layers > 0) {
    p.moe_layer = base;
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
  const std::int64_t main = total;
  p.total = checked_add(total, checked_mul(p.mtp_each, p.num_mtp_layers, "MTP parameters"), "parameters");
  p.active_per_token =
      main - p.num_moe_layers * (m.is_moe() ? (m.moe.num_experts - m.moe.router_topk) * p.moe_layer.expert_each : 0);
  return p;
}

}  // namespace trainplan
