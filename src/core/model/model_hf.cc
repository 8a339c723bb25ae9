// Hugging Face config.json files as models (docs/formulas.md §1.6): the keys and class defaults of each
// transformers architecture we read.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model/model_io_detail.h"
#include "trainplan/core/base/error.h"
#include "trainplan/core/model/model.h"

namespace trainplan::detail {

namespace {

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

/// The fields every RoPE/RMSNorm decoder config spells alike (Llama and the families after it): layers,
/// widths, heads and key/value heads, vocabulary, no hidden dropout; `tied` is the class default of
/// `tie_word_embeddings`.
void read_rope_decoder(const hf_reader& r, bool tied, model_spec& m) {
  m.num_layers = r.required_int({"num_hidden_layers"});
  m.hidden_size = r.required_int({"hidden_size"});
  m.num_attention_heads = r.required_int({"num_attention_heads"});
  m.num_query_groups = r.optional_int({"num_key_value_heads"}, m.num_attention_heads);
  m.vocab_size = r.required_int({"vocab_size"});
  m.position_embedding = position_embedding_kind::rope;
  m.norm = norm_kind::rmsnorm;
  m.tie_embeddings = r.optional_bool("tie_word_embeddings", tied);
  m.attention_dropout = r.optional_probability("attention_dropout", 0.0);
  m.hidden_dropout = 0.0;
}

/// Llama, Mistral, Mixtral, Qwen2 and Qwen2-MoE: gated MLP, RMSNorm, RoPE, GQA.
void read_llama_like(const hf_reader& r, const std::string& type, model_spec& m) {
  read_rope_decoder(r, false, m);
  m.ffn_hidden_size = r.required_int({"intermediate_size"});
  m.kv_channels = r.optional_int({"head_dim"}, 0);
  const std::int64_t default_positions = type == "llama"                            ? 2048
                                         : (type == "qwen2" || type == "qwen2_moe") ? 32768
                                         : (type == "qwen3" || type == "qwen3_moe") ? 40960
                                                                                    : 131072;
  m.max_position_embeddings = r.optional_int({"max_position_embeddings"}, default_positions);
  // Mistral's sliding_window applies unless null; Qwen2's only with use_sliding_window: true.
  if (const json* w = r.find("sliding_window"); w != nullptr && w->is_number_integer() &&
                                                r.optional_bool("use_sliding_window", type == "mistral" || type == "mixtral")) {
    m.sliding_window = w->get<std::int64_t>();
  }
  m.activation = gated_activation(r, "hidden_act");
  m.add_bias_linear = false;
  if (type == "llama") {
    m.add_bias_linear = all_or_no_bias(r, r.optional_bool("attention_bias", false), r.optional_bool("mlp_bias", false));
  }
  m.add_qkv_bias = type == "qwen2" || type == "qwen2_moe";
  m.qk_norm = type == "qwen3" || type == "qwen3_moe";
  if (m.qk_norm) {
    m.add_bias_linear = all_or_no_bias(r, r.optional_bool("attention_bias", false), false);
    if (m.kv_channels == 0) m.kv_channels = 128;
  }
  if (type == "mixtral") {
    m.moe.num_experts = r.optional_int({"num_local_experts"}, 8);
    m.moe.router_topk = r.optional_int({"num_experts_per_tok"}, 2);
    m.moe.expert_ffn_hidden_size = m.ffn_hidden_size;
  } else if (type == "qwen2_moe" || type == "qwen3_moe") {
    const bool qwen3 = type == "qwen3_moe";
    m.moe.num_experts = r.optional_int({"num_experts"}, qwen3 ? 128 : 60);
    m.moe.router_topk = r.optional_int({"num_experts_per_tok"}, qwen3 ? 8 : 4);
    m.moe.expert_ffn_hidden_size = r.optional_int({"moe_intermediate_size"}, qwen3 ? 768 : 1408);
    m.moe.shared_expert_ffn_hidden_size = r.optional_int({"shared_expert_intermediate_size"}, qwen3 ? 0 : 5632, 0);
    // Qwen2MoeSparseMoeBlock: shared_expert_gate = Linear(h, 1); Qwen3-MoE has no shared expert.
    m.moe.shared_expert_gate = m.moe.shared_expert_ffn_hidden_size > 0;
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


/// A per-layer list of `n` entries as a 0/1 pattern: integers 0/1, or strings where `on` marks 1
/// (layer_types' "sliding_attention").
std::vector<std::uint8_t> hf_layer_list(const hf_reader& r, const char* key, std::int64_t n, const char* on) {
  const json* v = r.find(key);
  if (v == nullptr) return {};
  if (!v->is_array() || static_cast<std::int64_t>(v->size()) != n) {
    r.d.fail(key, fmt::format("expected a list of {} entries, one per layer, got {}", n, r.d.shown(key, *v)));
  }
  std::vector<std::uint8_t> out;
  for (const json& x : *v) {
    if (x.is_string()) {
      out.push_back(x.get<std::string>() == on);
    } else if (x.is_number_integer() && (x.get<std::int64_t>() == 0 || x.get<std::int64_t>() == 1)) {
      out.push_back(static_cast<std::uint8_t>(x.get<std::int64_t>()));
    } else {
      r.d.fail(key, fmt::format("expected 0/1 or layer-type names, got {}", x.dump()));
    }
  }
  return out;
}

/// A list of layer indices (HF's moe_layers, mlp_only_layers) as a 0/1 pattern of `n` layers.
std::vector<std::uint8_t> hf_index_list(const hf_reader& r, const char* key, std::int64_t n) {
  const json* v = r.find(key);
  std::vector<std::uint8_t> out(static_cast<std::size_t>(n), 0);
  if (v == nullptr) return {};
  if (!v->is_array()) r.d.fail(key, fmt::format("expected a list of layer indices, got {}", r.d.shown(key, *v)));
  for (const json& x : *v) {
    if (!x.is_number_integer() || x.get<std::int64_t>() < 0 || x.get<std::int64_t>() >= n) {
      r.d.fail(key, fmt::format("expected layer indices in [0, {}), got {}", n, x.dump()));
    }
    out[static_cast<std::size_t>(x.get<std::int64_t>())] = 1;
  }
  return out;
}

/// DeepSeek-V2/V3 (modeling_deepseek.py): MLA, routed + shared experts, dense first layers, MTP.
/// DeepSeek-MoE (model_type deepseek, DeepseekForCausalLM: DeepSeekMoE 16B, arXiv 2401.06066): the same
/// experts behind Llama's attention (multi-head, or grouped by num_key_value_heads), softmax routing.
void read_deepseek(const hf_reader& r, const std::string& type, model_spec& m) {
  read_rope_decoder(r, false, m);
  const bool mla = type != "deepseek";
  m.ffn_hidden_size = r.required_int({"intermediate_size"});
  m.max_position_embeddings = r.optional_int({"max_position_embeddings"}, mla ? 163840 : 4096);
  m.activation = gated_activation(r, "hidden_act");
  m.add_bias_linear = false;
  if (!mla) {
    if (r.optional_bool("attention_bias", false)) r.d.fail("attention_bias", "attention biases are not modelled here");
    if (r.optional_string("scoring_func", "softmax") != "softmax") {
      r.d.fail("scoring_func", "DeepSeek-MoE's routing is modelled with softmax scores");
    }
  } else {
    m.num_query_groups = m.num_attention_heads;  // MLA: one key/value head per query head
    if (r.optional_bool("attention_bias", false)) r.d.fail("attention_bias", "MLA with biases is not modelled");
    m.mla.q_lora_rank = r.optional_int({"q_lora_rank"}, 0, 0);  // null: direct queries (V2-Lite)
    m.mla.kv_lora_rank = r.required_int({"kv_lora_rank"});
    m.mla.qk_head_dim = r.optional_int({"qk_nope_head_dim"}, 128);
    m.mla.qk_pos_emb_head_dim = r.optional_int({"qk_rope_head_dim"}, 64);
    m.mla.v_head_dim = r.optional_int({"v_head_dim"}, 128);
  }
  const std::int64_t experts = r.optional_int({"n_routed_experts"}, 0, 0);
  if (experts > 0) {
    moe_spec& x = m.moe;
    x.num_experts = experts;
    x.router_topk = r.optional_int({"num_experts_per_tok"}, 8);
    x.expert_ffn_hidden_size = r.required_int({"moe_intermediate_size"});
    x.shared_expert_ffn_hidden_size = r.optional_int({"n_shared_experts"}, 0, 0) * x.expert_ffn_hidden_size;
    x.first_dense_layers = r.optional_int({"first_k_dense_replace"}, 0, 0);
    x.layer_freq = r.optional_int({"moe_layer_freq"}, 1);
    // noaux_tc (V3) adds e_score_correction_bias; group-limited routing over n_group groups.
    x.expert_score_bias = mla && r.optional_string("topk_method", type == "deepseek_v3" ? "noaux_tc" : "greedy") == "noaux_tc";
    const std::int64_t groups = mla ? r.optional_int({"n_group"}, 0, 0) : 0;
    if (groups > 1) {
      x.router_num_groups = groups;
      x.router_group_topk = r.optional_int({"topk_group"}, groups);
    }
  }
  m.mtp_num_layers = r.optional_int({"num_nextn_predict_layers"}, 0, 0);
}

/// gpt-oss (modeling_gpt_oss.py): biased attention and experts, a router bias, a learned sink per
/// head, sliding and full attention per layer_types.
void read_gpt_oss(const hf_reader& r, model_spec& m) {
  read_rope_decoder(r, false, m);
  m.ffn_hidden_size = r.required_int({"intermediate_size"});
  m.kv_channels = r.optional_int({"head_dim"}, 64);
  m.max_position_embeddings = r.optional_int({"max_position_embeddings"}, 131072);
  m.activation = activation_kind::swiglu;
  m.add_bias_linear = r.optional_bool("attention_bias", true);
  m.attention_sinks = true;
  // The GLU clamps its gate from above and its linear half both ways at swiglu_limit (7 by default).
  m.glu_clamp_limit = 7;
  if (const json* v = r.find("swiglu_limit")) {
    if (!v->is_number() || !std::isfinite(v->get<double>()) || v->get<double>() <= 0) {
      r.d.fail("swiglu_limit", fmt::format("expected a finite number greater than 0, got {}", r.d.shown("swiglu_limit", *v)));
    }
    m.glu_clamp_limit = v->get<double>();
  }
  m.moe.num_experts = r.optional_int({"num_local_experts"}, 128);
  m.moe.router_topk = r.optional_int({"num_experts_per_tok", "experts_per_token"}, 4);
  m.moe.expert_ffn_hidden_size = m.ffn_hidden_size;
  m.moe.router_bias = true;
  m.sliding_window = r.optional_int({"sliding_window"}, 128, 0);
  m.window_pattern = hf_layer_list(r, "layer_types", m.num_layers, "sliding_attention");
  if (m.window_pattern.empty()) m.window_skip_freq = 2;  // sliding, full, sliding, ...
}

/// Llama 4 text (modeling_llama4.py): routed + one shared expert, MoE every interleave step,
/// chunked attention on the RoPE layers, NoPE full attention on every no_rope_layer_interval-th.
void read_llama4(const hf_reader& r, model_spec& m) {
  read_rope_decoder(r, false, m);
  m.ffn_hidden_size = r.optional_int({"intermediate_size_mlp"}, 16384);
  m.kv_channels = r.optional_int({"head_dim"}, 128);
  m.max_position_embeddings = r.optional_int({"max_position_embeddings"}, 131072);
  m.activation = gated_activation(r, "hidden_act");
  m.add_bias_linear = r.optional_bool("attention_bias", false);
  moe_spec& x = m.moe;
  x.num_experts = r.optional_int({"num_local_experts"}, 16);
  x.router_topk = r.optional_int({"num_experts_per_tok"}, 1);
  x.expert_ffn_hidden_size = r.optional_int({"intermediate_size"}, 8192);
  x.shared_expert_ffn_hidden_size = x.expert_ffn_hidden_size;
  x.layer_pattern = hf_index_list(r, "moe_layers", m.num_layers);
  if (x.layer_pattern.empty()) {
    const std::int64_t step = r.optional_int({"interleave_moe_layer_step"}, 1);
    x.first_dense_layers = step - 1;  // moe_layers = range(step − 1, layers, step)
    x.layer_freq = step;
  }
  if (const std::int64_t chunk = r.optional_int({"attention_chunk_size"}, 0, 0); chunk > 0) {
    m.sliding_window = chunk;
    m.window = window_kind::chunked;
    m.window_pattern = hf_layer_list(r, "no_rope_layers", m.num_layers, "");  // 1: RoPE, chunked
    if (m.window_pattern.empty()) m.window_skip_freq = r.optional_int({"no_rope_layer_interval"}, 4);
  }
}

/// Gemma 2/3 (modeling_gemma2.py, modeling_gemma3.py): GeGLU, four norms per layer, tied embeddings,
/// local sliding and global layers; Gemma 3 adds QK-norm.
void read_gemma(const hf_reader& r, const std::string& type, model_spec& m) {
  read_rope_decoder(r, true, m);
  m.ffn_hidden_size = r.required_int({"intermediate_size"});
  m.kv_channels = r.optional_int({"head_dim"}, 256);
  m.max_position_embeddings = r.optional_int({"max_position_embeddings"}, 8192);
  m.activation = gated_activation(r, r.find("hidden_activation") ? "hidden_activation" : "hidden_act");
  m.add_bias_linear = r.optional_bool("attention_bias", false);
  m.sandwich_norm = true;
  const bool gemma3 = type != "gemma2";
  m.qk_norm = gemma3;
  m.sliding_window = r.optional_int({"sliding_window"}, 4096, 0);
  m.window_pattern = hf_layer_list(r, "layer_types", m.num_layers, "sliding_attention");
  // Gemma 2: even layers slide (layer_idx % 2 == 0); Gemma 3: all but every sliding_window_pattern-th.
  if (m.window_pattern.empty()) m.window_skip_freq = gemma3 ? r.optional_int({"sliding_window_pattern"}, 6) : 2;
  if (m.vocab_size % 128 != 0) m.make_vocab_size_divisible_by = 1;
}

/// Nemotron-H (modeling_nemotron_h.py, NemotronHConfig): hybrid_override_pattern blocks, each a norm and
/// one mixer: Mamba-2, GQA attention, a squared-ReLU MLP, or an MoE (Nemotron 3) with a score-bias
/// router and a shared expert. §1.10.
void read_nemotron_h(const hf_reader& r, model_spec& m) {
  read_rope_decoder(r, false, m);
  m.hybrid_pattern = r.optional_string("hybrid_override_pattern", "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-");
  m.ffn_hidden_size = r.optional_int({"intermediate_size"}, 21504);
  m.kv_channels = r.optional_int({"head_dim", "attention_head_dim"}, 128);
  m.max_position_embeddings = r.optional_int({"max_position_embeddings"}, 4096);
  m.activation = plain_activation(r, "mlp_hidden_act", "relu2");
  const bool attention_bias = r.optional_bool("attention_bias", false);
  m.add_bias_linear = all_or_no_bias(r, attention_bias, r.optional_bool("mlp_bias", false)) ||
                      r.optional_bool("use_bias", false);
  if (r.optional_bool("mamba_proj_bias", false) != m.add_bias_linear) {
    r.d.fail("mamba_proj_bias", "Mamba projection biases unlike the other linear layers' are not modelled");
  }
  if (!r.optional_bool("use_conv_bias", r.optional_bool("mamba_conv_bias", true))) {
    r.d.fail("use_conv_bias", "a Mamba convolution without bias is not modelled (Megatron asserts conv_bias)");
  }
  mamba_spec& x = m.mamba;
  x.state_dim = r.optional_int({"ssm_state_size"}, 128);
  x.num_heads = r.optional_int({"mamba_num_heads"}, 128);
  x.head_dim = r.optional_int({"mamba_head_dim"}, 64);
  x.num_groups = r.optional_int({"n_groups", "mamba_n_groups"}, 8);
  x.conv_kernel = r.optional_int({"conv_kernel", "mamba_d_conv"}, 4);
  x.chunk_size = r.optional_int({"chunk_size", "mamba_chunk_size"}, 128);
  if (m.hybrid_pattern.find('E') == std::string::npos) return;
  if (r.find("moe_latent_size")) r.d.fail("moe_latent_size", "latent MoE (experts over a projected width) is not modelled");
  moe_spec& e = m.moe;
  e.num_experts = r.required_int({"n_routed_experts"});
  e.router_topk = r.required_int({"num_experts_per_tok"});
  e.expert_ffn_hidden_size = r.required_int({"moe_intermediate_size"});
  e.shared_expert_ffn_hidden_size = r.optional_int({"moe_shared_expert_intermediate_size"}, 0, 0);
  e.expert_score_bias = true;  // NemotronHTopkRouter's e_score_correction_bias
  e.router_num_groups = r.optional_int({"n_group"}, 0, 0);
  e.router_group_topk = r.optional_int({"topk_group"}, 0, 0);
  if (e.router_num_groups <= 1) e.router_num_groups = e.router_group_topk = 0;  // one group: unlimited
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
  static const std::vector<std::string> types = {
      "bloom", "deepseek", "deepseek_v2", "deepseek_v3", "gemma2",  "gemma3", "gemma3_text", "gpt2",  "gpt_neox", "gpt_oss",
      "llama", "llama4",      "llama4_text", "mistral", "mixtral", "nemotron_h", "opt",   "qwen2", "qwen2_moe",
      "qwen3", "qwen3_moe"};
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
      {"DeepseekV3ForCausalLM", "deepseek_v3"},
      {"DeepseekForCausalLM", "deepseek"},
      {"DeepseekV2ForCausalLM", "deepseek_v2"},
      {"Qwen3ForCausalLM", "qwen3"},
      {"Qwen3MoeForCausalLM", "qwen3_moe"},
      {"GptOssForCausalLM", "gpt_oss"},
      {"Llama4ForConditionalGeneration", "llama4"},
      {"Llama4ForCausalLM", "llama4_text"},
      {"Gemma2ForCausalLM", "gemma2"},
      {"Gemma3ForConditionalGeneration", "gemma3"},
      {"Gemma3ForCausalLM", "gemma3_text"},
      {"NemotronHForCausalLM", "nemotron_h"},
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

}  // namespace

bool is_deepseek_inference(const document& d) {
  return d.root.is_object() && d.root.contains("dim") && d.root.contains("n_layers") && d.root.contains("n_heads") &&
         d.root.contains("kv_lora_rank");
}

/// DeepSeek's own inference configs (deepseek-ai/DeepSeek-V3 inference/model.py ModelArgs, with its
/// defaults for keys a config leaves out): MLA, dense first layers, routed and shared experts, a gate
/// bias where dim is 7168 (Gate.__init__'s own rule: V3), no MTP module (the inference model has none),
/// separate embedding and head, pretrained at original_seq_len.
model_spec read_deepseek_inference(const document& d) {
  const hf_reader r{d};
  model_spec m;
  m.num_layers = r.optional_int({"n_layers"}, 27);
  m.hidden_size = r.optional_int({"dim"}, 2048);
  m.num_attention_heads = r.optional_int({"n_heads"}, 16);
  m.num_query_groups = m.num_attention_heads;
  m.vocab_size = r.optional_int({"vocab_size"}, 102400);
  m.ffn_hidden_size = r.optional_int({"inter_dim"}, 10944);
  m.position_embedding = position_embedding_kind::rope;
  m.norm = norm_kind::rmsnorm;
  m.activation = activation_kind::swiglu;
  m.add_bias_linear = false;
  m.tie_embeddings = false;
  m.attention_dropout = 0.0;
  m.hidden_dropout = 0.0;
  m.mla.q_lora_rank = r.optional_int({"q_lora_rank"}, 0, 0);
  m.mla.kv_lora_rank = r.optional_int({"kv_lora_rank"}, 512);
  m.mla.qk_head_dim = r.optional_int({"qk_nope_head_dim"}, 128);
  m.mla.qk_pos_emb_head_dim = r.optional_int({"qk_rope_head_dim"}, 64);
  m.mla.v_head_dim = r.optional_int({"v_head_dim"}, 128);
  moe_spec& x = m.moe;
  x.num_experts = r.optional_int({"n_routed_experts"}, 64);
  x.router_topk = r.optional_int({"n_activated_experts"}, 6);
  x.expert_ffn_hidden_size = r.optional_int({"moe_inter_dim"}, 1408);
  x.shared_expert_ffn_hidden_size = r.optional_int({"n_shared_experts"}, 2, 0) * x.expert_ffn_hidden_size;
  x.first_dense_layers = r.optional_int({"n_dense_layers"}, 1, 0);
  x.layer_freq = 1;
  x.expert_score_bias = m.hidden_size == 7168;
  const std::string score = r.optional_string("score_func", "softmax");
  if (score != "softmax" && score != "sigmoid") r.d.fail("score_func", "expected softmax or sigmoid");
  if (const std::int64_t groups = r.optional_int({"n_expert_groups"}, 1); groups > 1) {
    x.router_num_groups = groups;
    x.router_group_topk = r.optional_int({"n_limited_groups"}, 1);
  }
  m.seq_length = r.optional_int({"original_seq_len"}, 4096);
  m.max_position_embeddings = 0;
  m.name = stem_of(d.origin);
  return m;
}

model_spec read_hf(const document& whole) {
  const std::string type = hf_model_type(hf_reader{whole});
  // Multimodal configs (Llama 4, Gemma 3) keep the decoder in text_config: it is what is trained here.
  document text;
  const bool nested = (type == "llama4" || type == "gemma3") && whole.root.contains("text_config");
  if (nested) {
    text.origin = whole.origin + " (text_config)";
    text.root = whole.root["text_config"];
    if (!text.root.is_object()) whole.fail("text_config", "expected a mapping of the text model's fields");
  }
  const document& d = nested ? text : whole;
  const hf_reader r{d};
  model_spec m;
  if (type == "llama" || type == "mistral" || type == "mixtral" || type == "qwen2" || type == "qwen2_moe" ||
      type == "qwen3" || type == "qwen3_moe") {
    read_llama_like(r, type, m);
  } else if (type == "deepseek" || type == "deepseek_v2" || type == "deepseek_v3") {
    read_deepseek(r, type, m);
  } else if (type == "gpt_oss") {
    read_gpt_oss(r, m);
  } else if (type == "llama4" || type == "llama4_text") {
    read_llama4(r, m);
  } else if (type == "gemma2" || type == "gemma3" || type == "gemma3_text") {
    read_gemma(r, type, m);
  } else if (type == "bloom") {
    read_bloom(r, m);
  } else if (type == "gpt2") {
    read_gpt2(r, m);
  } else if (type == "gpt_neox") {
    read_gpt_neox(r, m);
  } else if (type == "opt") {
    read_opt(r, m);
  } else if (type == "nemotron_h") {
    read_nemotron_h(r, m);
  } else if (type == "jamba" || type == "mamba" || type == "falcon_mamba" || type == "mamba2" || type == "falcon_h1") {
    d.fail("model_type", fmt::format("'{}' is not modelled: Jamba and Mamba use Mamba-1 selective-scan layers, "
                                     "Falcon-H1 runs attention and Mamba-2 side by side in one block, and a pure "
                                     "Mamba-2 model has no attention; Mamba-2 hybrids (nemotron_h, Megatron's "
                                     "hybrid layer pattern) are modelled",
                                     type));
  } else {
    d.fail("model_type", fmt::format("unsupported Hugging Face model_type '{}'{}; supported: {}", type,
                                     did_you_mean(type, hf_types()), joined(hf_types())));
  }
  // The context is what a plan uses by default; BLOOM (ALiBi, no table) trained at 2048. A RoPE-scaled
  // model (Llama 3.1's llama3 scaling, DeepSeek-V3's and gpt-oss's YaRN) was pretrained at
  // rope_scaling.original_max_position_embeddings and extended after: a plan starts there (Llama-3.1-70B
  // at 8,192, not its 131,072, where no layout fits).
  std::int64_t pretrain_context = 0;
  // transformers v5 writes rope_scaling as rope_parameters.
  const json* rs = r.find("rope_scaling");
  if (rs == nullptr || !rs->is_object()) rs = r.find("rope_parameters");
  if (rs != nullptr && rs->is_object()) {
    if (const auto it = rs->find("original_max_position_embeddings"); it != rs->end() && it->is_number_integer() &&
                                                                      it->get<std::int64_t>() > 0) {
      pretrain_context = it->get<std::int64_t>();
    }
  }
  const std::int64_t context = m.seq_length > 0                ? m.seq_length
                               : pretrain_context > 0 && (m.max_position_embeddings == 0 ||
                                                          pretrain_context < m.max_position_embeddings)
                                   ? pretrain_context
                               : m.max_position_embeddings > 0 ? m.max_position_embeddings
                                                               : 2048;
  m.rope_original_context = pretrain_context;
  // YaRN (rope_scaling.rope_type, or the older "type", "yarn"): its factor and mscales set Megatron-Core's RoPE
  // kernel (§5.3); Megatron-Bridge's conversion carries mscale and mscale_all_dim over as they are.
  if (rs != nullptr && rs->is_object()) {
    const auto kind = rs->contains("rope_type") ? rs->find("rope_type") : rs->find("type");
    const auto factor = rs->find("factor");
    if (kind != rs->end() && kind->is_string() && kind->get<std::string>() == "yarn" && factor != rs->end() &&
        factor->is_number() && factor->get<double>() > 0) {
      auto number = [&](const char* key) -> std::optional<double> {
        const auto it = rs->find(key);
        if (it == rs->end() || !it->is_number()) return std::nullopt;
        return it->get<double>();
      };
      m.rope_yarn_factor = yarn_factor_for_kernel(factor->get<double>(), number("mscale"), number("mscale_all_dim"));
    }
  }
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

}  // namespace trainplan::detail
