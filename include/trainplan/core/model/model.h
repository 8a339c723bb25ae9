// Model description and exact parameter counts (docs/formulas.md §1).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace trainplan {

enum class position_embedding_kind { learned, rope, alibi, none };
enum class activation_kind { gelu, relu, squared_relu, swiglu, geglu, reglu };
enum class norm_kind { layernorm, rmsnorm };

/// True for gated linear units (SwiGLU, GeGLU, ReGLU): the first MLP matrix is 2·ffn wide.
bool is_gated(activation_kind a);

std::string_view to_string(position_embedding_kind k);
std::string_view to_string(activation_kind k);
std::string_view to_string(norm_kind k);
/// Parse from the names above (Megatron's spellings, e.g. "learned_absolute", "rope", "RMSNorm",
/// are accepted too). Throw input_error naming `field` on an unknown value.
position_embedding_kind parse_position_embedding(std::string_view s, std::string_view field);
/// YaRN's concentration factor as Megatron-Core computes it (yarn_rotary_pos_embedding.py
/// _yarn_get_concentration_factor): with mscale and mscale_all_dim both given, m(f, mscale) / m(f, mscale_all_dim),
/// else m(f, 1), where m(f, k) = 0.1·k·ln f + 1 for f > 1, and 1 otherwise (§5.3).
double yarn_concentration(double factor, std::optional<double> mscale, std::optional<double> mscale_all_dim);
/// The model_spec::rope_yarn_factor a YaRN configuration gives: its factor where the concentration is not 1
/// (Megatron-Core's unfused RoPE), else 0 (TE's fused kernel).
double yarn_factor_for_kernel(double factor, std::optional<double> mscale, std::optional<double> mscale_all_dim);
activation_kind parse_activation(std::string_view s, std::string_view field);
norm_kind parse_norm(std::string_view s, std::string_view field);

/// Mixture of experts. num_experts == 0 means a dense model.
struct moe_spec {
  std::int64_t num_experts = 0;
  std::int64_t router_topk = 0;
  std::int64_t expert_ffn_hidden_size = 0;  ///< FFN width of one routed expert
  std::int64_t shared_expert_ffn_hidden_size = 0;  ///< total FFN width of the shared experts (0: none)
  std::int64_t layer_freq = 1;          ///< every layer_freq-th layer is MoE (Megatron --moe-layer-freq N)
  std::int64_t first_dense_layers = 0;  ///< leading layers kept dense (DeepSeek's first_k_dense_replace)
  /// Explicit per-layer pattern, 1 = MoE (Megatron --moe-layer-freq "([0]*3+[1]*58)"); when not
  /// empty it has num_layers entries and overrides layer_freq and first_dense_layers.
  std::vector<std::uint8_t> layer_pattern;
  bool shared_expert_gate = false;  ///< sigmoid gate h→1 on the shared expert (Qwen2-MoE; --moe-shared-expert-gate)
  bool router_bias = false;         ///< bias on the router's linear layer (gpt-oss)
  bool expert_score_bias = false;   ///< per-expert score-correction bias (DeepSeek-V3; --moe-router-enable-expert-bias)
  /// Group-limited routing (Megatron --moe-router-num-groups / --moe-router-group-topk): experts
  /// split into num_groups groups, each token routed within group_topk of them. DeepSeek-V3's
  /// node-limited routing is 8 groups, 4 chosen (docs/formulas.md §4.2.5). 0: unlimited.
  std::int64_t router_num_groups = 0;
  std::int64_t router_group_topk = 0;
  /// Tokens an expert takes, as a multiple of the balanced share (--moe-expert-capacity-factor);
  /// 0: dropless (Megatron's default), sized by load_imbalance instead.
  double capacity_factor = 0;
  /// Dropless routing: the busiest expert's tokens over the balanced share (≥ 1); the GEMMs, the
  /// all-to-all and the activations of a rank are sized for it (§5.1, §3.4.3).
  double load_imbalance = 1.0;
};

/// Multi-head latent attention (DeepSeek-V2/V3; Megatron --multi-latent-attention): low-rank
/// compressed keys/values (and queries), decoupled RoPE dims. On when kv_lora_rank > 0.
struct mla_spec {
  std::int64_t q_lora_rank = 0;           ///< 0: queries projected directly from the hidden state
  std::int64_t kv_lora_rank = 0;
  std::int64_t qk_head_dim = 0;           ///< no-position part of a query/key head (qk_nope_head_dim); 0: 128
  std::int64_t qk_pos_emb_head_dim = 0;   ///< decoupled RoPE part (qk_rope_head_dim); 0: 64
  std::int64_t v_head_dim = 0;            ///< 0: 128
};

/// How a windowed layer limits attention: a sliding window of the last W keys (Mistral, Gemma,
/// gpt-oss; Megatron --window-size) or fixed chunks of W tokens (Llama 4's attention_chunk_size).
enum class window_kind { sliding, chunked };
std::string_view to_string(window_kind k);
window_kind parse_window_kind(std::string_view s, std::string_view field);

/// The Mamba-2 mixer of a hybrid model's M layers (Megatron-Core megatron/core/ssm/mamba_mixer.py
/// MambaMixer; Dao & Gu 2024): in_proj h → [z, x, B, C, dt] of 2·d_inner + 2·groups·state + heads,
/// a depthwise causal convolution over [x, B, C], the chunked SSD scan, a gated RMSNorm and out_proj
/// d_inner → h. Megatron's defaults (TransformerConfig mamba_*; the mixer's d_conv, chunk_size).
struct mamba_spec {
  std::int64_t state_dim = 128;   ///< N, per group (--mamba-state-dim)
  std::int64_t head_dim = 64;     ///< P (--mamba-head-dim)
  std::int64_t num_heads = 0;     ///< H (--mamba-num-heads); 0: 2h / head_dim (expand 2)
  std::int64_t num_groups = 8;    ///< G, heads sharing B and C (--mamba-num-groups)
  std::int64_t conv_kernel = 4;   ///< d_conv, the causal convolution's width
  std::int64_t chunk_size = 128;  ///< Q, the SSD kernel's chunk of tokens
  std::int64_t d_inner() const { return num_heads * head_dim; }
  /// Width of the convolved [x, B, C]: d_inner + 2·G·N.
  std::int64_t conv_width() const { return d_inner() + 2 * num_groups * state_dim; }
};

/// What one layer is made of (docs/formulas.md §1.10). A transformer layer is self-attention (full or
/// through the window) and an MLP, dense or MoE. A hybrid model's layer (Megatron-Core
/// --hybrid-layer-pattern) is a single block: a Mamba-2 mixer (M), self-attention (*), a dense MLP (-)
/// or an MoE (E). Every per-layer account (parameters held, compute, activations, TP collectives)
/// is kept per kind and summed over a stage's layers of each kind.
enum class layer_kind : std::uint8_t { dense, moe, dense_window, moe_window, mamba, attention, mlp, moe_mlp };
inline constexpr std::size_t kNumLayerKinds = 8;
/// The parameter account a layer's parameters are counted in (parameter_breakdown, rank_holdings): a
/// window changes no parameter, and a hybrid's MLP and MoE blocks are the dense and MoE accounts.
enum class layer_account : std::uint8_t { dense, moe, mamba, attention };
/// The blocks of a layer kind: one row per kind in kLayerMakeup.
struct layer_makeup {
  layer_kind kind;
  const char* name;
  bool attention;  ///< a self-attention block
  bool window;     ///< it attends through the model's window
  bool mamba;      ///< a Mamba-2 mixer block
  bool dense_mlp;  ///< a dense MLP block
  bool moe;        ///< an MoE block (router, routed and shared experts)
  layer_kind unwindowed;  ///< the same layer attending fully (itself without a window)
  layer_account account;  ///< where its parameters are counted
  /// Residual blocks: each has its input norm, bias-dropout-add and a TP all-reduce (or SP pair).
  int blocks() const { return int{attention} + int{mamba} + int{dense_mlp} + int{moe}; }
};
inline constexpr std::array<layer_makeup, kNumLayerKinds> kLayerMakeup{{
    {layer_kind::dense, "dense", true, false, false, true, false, layer_kind::dense, layer_account::dense},
    {layer_kind::moe, "MoE", true, false, false, false, true, layer_kind::moe, layer_account::moe},
    {layer_kind::dense_window, "dense, windowed", true, true, false, true, false, layer_kind::dense,
     layer_account::dense},
    {layer_kind::moe_window, "MoE, windowed", true, true, false, false, true, layer_kind::moe, layer_account::moe},
    {layer_kind::mamba, "Mamba", false, false, true, false, false, layer_kind::mamba, layer_account::mamba},
    {layer_kind::attention, "attention", true, false, false, false, false, layer_kind::attention,
     layer_account::attention},
    {layer_kind::mlp, "MLP", false, false, false, true, false, layer_kind::mlp, layer_account::dense},
    {layer_kind::moe_mlp, "MoE block", false, false, false, false, true, layer_kind::moe_mlp, layer_account::moe},
}};
inline const layer_makeup& makeup_of(layer_kind k) { return kLayerMakeup[static_cast<std::size_t>(k)]; }
/// Layers of each kind, indexed by layer_kind.
using layer_counts = std::array<std::int64_t, kNumLayerKinds>;

/// A decoder-only transformer as Megatron-LM builds it. Sizes are counts, not bytes.
struct model_spec {
  std::string name;
  std::int64_t num_layers = 0;
  std::int64_t hidden_size = 0;
  std::int64_t ffn_hidden_size = 0;      ///< per dense MLP; gated units have 2·ffn in the first matrix
  std::int64_t num_attention_heads = 0;
  std::int64_t num_query_groups = 0;     ///< = heads for MHA, 1 for MQA
  std::int64_t kv_channels = 0;          ///< head dim
  std::int64_t vocab_size = 0;           ///< rows before Megatron's padding
  std::int64_t padded_vocab_size = 0;    ///< explicit padded size (Megatron --padded-vocab-size); 0: pad
  std::int64_t make_vocab_size_divisible_by = 128;
  std::int64_t seq_length = 0;
  std::int64_t max_position_embeddings = 0;  ///< rows of the learned position table
  /// A Hugging Face config's rope_scaling.original_max_position_embeddings: the context the model was
  /// pretrained at before its RoPE scaling (0: none); the default sequence of a plan.
  std::int64_t rope_original_context = 0;
  /// YaRN's factor (gpt-oss: 32) where its concentration factor is not 1 (yarn_factor_for_kernel): Megatron-Core
  /// then scales cos and sin by it, which Transformer Engine's fused RoPE does not take, and runs the
  /// unfused RoPE (§5.3); 0: no YaRN, or a concentration of 1 (DeepSeek-V3's mscale = mscale_all_dim).
  double rope_yarn_factor = 0;
  /// Windowed attention: a windowed layer attends to `sliding_window` tokens (window_kind); 0: every
  /// layer attends fully. Which layers are windowed: all, or all but every window_skip_freq-th
  /// (Megatron --window-attn-skip-freq N: layers N, 2N, ... counted from 1 attend fully), or the
  /// explicit window_pattern (1 = windowed, num_layers entries).
  std::int64_t sliding_window = 0;
  window_kind window = window_kind::sliding;
  std::int64_t window_skip_freq = 0;
  std::vector<std::uint8_t> window_pattern;
  position_embedding_kind position_embedding = position_embedding_kind::learned;
  activation_kind activation = activation_kind::gelu;
  norm_kind norm = norm_kind::layernorm;
  bool add_bias_linear = true;           ///< biases on every linear layer
  bool add_qkv_bias = false;             ///< bias on QKV only (Qwen2); implied by add_bias_linear
  bool tie_embeddings = true;            ///< output layer shares the input embedding
  bool embedding_norm = false;           ///< a norm right after the word embedding (BLOOM)
  bool final_norm = true;
  bool qk_norm = false;                  ///< norms over each query and key head (Qwen3, Gemma 3; --qk-layernorm)
  /// Norms on the attention's and the MLP's outputs too (Gemma 2/3: four norms per layer).
  bool sandwich_norm = false;
  bool attention_sinks = false;          ///< a learned softmax offset per head (gpt-oss; --softmax-type learnable)
  /// The GLU's clamp of its fc1 output (gpt-oss's swiglu_limit 7; --activation-func-clamp-value), 0 for none:
  /// inside the fused activation kernel, two clamps more where the GLU runs unfused (§3.4, §5.3).
  double glu_clamp_limit = 0;
  std::int64_t mtp_num_layers = 0;       ///< multi-token-prediction depth (DeepSeek-V3: 1; --mtp-num-layers)
  double attention_dropout = 0.1;
  double hidden_dropout = 0.1;
  mla_spec mla;
  moe_spec moe;
  /// Hybrid model: one character per layer, M (Mamba-2), * (attention), - (MLP), E (MoE), as
  /// Megatron-Core's --hybrid-layer-pattern (--hybrid-override-pattern) writes it; its length is
  /// num_layers. Empty: every layer is a transformer layer.
  std::string hybrid_pattern;
  mamba_spec mamba;

  bool is_moe() const { return moe.num_experts > 0; }
  bool is_hybrid() const { return !hybrid_pattern.empty(); }
  /// The kind of layer `layer` (0-based): a hybrid block by its pattern character, else dense or MoE
  /// (is_moe_layer), through the window or not (is_window_layer).
  layer_kind kind_of_layer(std::int64_t layer) const;
  /// Layers of each kind in [first, first + count).
  layer_counts count_layer_kinds(std::int64_t first, std::int64_t count) const;
  bool is_mla() const { return mla.kv_lora_rank > 0; }
  bool is_moe_layer(std::int64_t layer) const;  ///< 0-based layer index
  std::int64_t num_moe_layers() const;
  /// Whether layer `layer` (0-based) attends through a window shorter than the sequence.
  bool is_window_layer(std::int64_t layer) const;
  /// Key (value) width of one token: g·d, or MLA's up-projected a·(qk + rope) keys and a·v values.
  std::int64_t k_width() const {
    return is_mla() ? num_attention_heads * (mla.qk_head_dim + mla.qk_pos_emb_head_dim) : num_query_groups * kv_channels;
  }
  std::int64_t v_width() const { return is_mla() ? num_attention_heads * mla.v_head_dim : num_query_groups * kv_channels; }
  /// Query width a·d (MLA: a·(qk + rope)).
  std::int64_t q_width() const {
    return is_mla() ? num_attention_heads * (mla.qk_head_dim + mla.qk_pos_emb_head_dim) : num_attention_heads * kv_channels;
  }
  /// Width of the attention output the projection reads: a·d (MLA: a·v_head_dim).
  std::int64_t attention_out_width() const {
    return is_mla() ? num_attention_heads * mla.v_head_dim : num_attention_heads * kv_channels;
  }
};

/// The kind every layer of `m` has when no layer differs (no hybrid or MoE pattern, dense first layers,
/// window pattern or skip frequency), else none: kind_of_layer's answer for all layers at once.
std::optional<layer_kind> uniform_kind(const model_spec& m);

/// A per-layer 0/1 pattern as Megatron's flags write it (--moe-layer-freq, --window-attn-skip-freq):
/// a Python list "[1,0,1]" or list arithmetic "([0]*3+[1]*58)", at most 2^14 entries. Throws
/// input_error naming `flag` and the position of a bad character.
std::vector<std::uint8_t> parse_layer_pattern(std::string_view text, std::string_view flag);

/// Fill derived defaults the way Megatron-LM's arguments.py does (ffn 4h or the SwiGLU rule, kv
/// channels h/a, query groups = heads, max positions = seq) and check every field; throws input_error
/// naming the field.
void finalize_model(model_spec& m);

/// Vocabulary rows after Megatron's padding to a multiple of make_vocab_size_divisible_by × tp
/// (megatron/training/tokenizer/tokenizer.py, _vocab_size_with_padding).
std::int64_t padded_vocab(const model_spec& m, std::int64_t tp);

/// Parameters of one transformer layer, whole (before tensor parallelism).
struct layer_parameters {
  std::int64_t input_norm = 0;
  std::int64_t qkv_weight = 0;           ///< split by TP: QKV, or MLA's up-projections (and direct Q)
  std::int64_t qkv_bias = 0;
  std::int64_t qkv_down_weight = 0;      ///< MLA's down-projections, whole on every TP rank ("duplicated")
  std::int64_t attention_norms = 0;      ///< QK-norm weights, or MLA's latent norms; whole on every TP rank
  std::int64_t sinks = 0;                ///< learned softmax offsets, one per head (split by TP)
  std::int64_t proj_weight = 0;
  std::int64_t proj_bias = 0;
  std::int64_t post_attention_norm = 0;  ///< the MLP's input norm
  std::int64_t sandwich_norms = 0;       ///< norms on the attention's and the MLP's outputs (Gemma 2/3)
  std::int64_t fc1_weight = 0;           ///< dense MLP (or the shared experts of an MoE layer)
  std::int64_t fc1_bias = 0;
  std::int64_t fc2_weight = 0;
  std::int64_t fc2_bias = 0;
  std::int64_t shared_expert_gate = 0;   ///< h → 1 gate on the shared experts (Qwen2-MoE)
  std::int64_t router = 0;               ///< router weight, its bias and the experts' score bias
  std::int64_t experts = 0;              ///< all routed experts, weights and biases
  std::int64_t expert_each = 0;          ///< one routed expert
  /// Mamba-2 mixer (§1.10): in_proj, the convolution's weight and bias, dt_bias/A_log/D, the gated
  /// norm and out_proj; all split by TP (Megatron marks every one tensor_model_parallel).
  std::int64_t mamba_in_proj = 0;
  std::int64_t mamba_conv = 0;
  std::int64_t mamba_ssm = 0;            ///< dt_bias, A_log, D: one each per head
  std::int64_t mamba_norm = 0;
  std::int64_t mamba_out_proj = 0;

  std::int64_t mamba() const { return mamba_in_proj + mamba_conv + mamba_ssm + mamba_norm + mamba_out_proj; }
  std::int64_t attention() const {
    return qkv_weight + qkv_bias + qkv_down_weight + attention_norms + sinks + proj_weight + proj_bias;
  }
  std::int64_t mlp() const {
    return fc1_weight + fc1_bias + fc2_weight + fc2_bias + shared_expert_gate + router + experts;
  }
  std::int64_t norms() const { return input_norm + post_attention_norm + sandwich_norms; }
  std::int64_t total() const { return attention() + mlp() + norms() + mamba(); }
};

/// Every parameter of the model, by module (docs/formulas.md §1).
struct parameter_breakdown {
  std::int64_t padded_vocab_size = 0;
  std::int64_t word_embeddings = 0;
  std::int64_t position_embeddings = 0;
  std::int64_t embedding_norm = 0;
  layer_parameters dense_layer;          ///< a layer with a dense MLP (hybrid: the MLP block alone)
  layer_parameters moe_layer;            ///< a layer with an MoE MLP (hybrid: the MoE block alone; zero for dense models)
  layer_parameters mamba_layer;          ///< hybrid: a Mamba-2 block with its norm (zero otherwise)
  layer_parameters attention_layer;      ///< hybrid: an attention block with its norm (zero otherwise)
  std::int64_t num_dense_layers = 0;
  std::int64_t num_moe_layers = 0;
  std::int64_t num_mamba_layers = 0;
  std::int64_t num_attention_layers = 0;  ///< hybrid attention blocks
  std::int64_t final_norm = 0;
  std::int64_t output_layer = 0;         ///< 0 when tied to the word embeddings
  /// One multi-token-prediction module (Megatron MultiTokenPredictionLayer): two input norms, the
  /// 2h→h projection, a transformer layer like the last one, its final norm; it shares the embedding
  /// and the output layer. Zero without MTP.
  std::int64_t mtp_each = 0;
  std::int64_t num_mtp_layers = 0;
  std::int64_t total = 0;                ///< everything trained, MTP modules included
  std::int64_t active_per_token = 0;     ///< parameters a token passes through (top-k experts), MTP excluded

  std::int64_t embedding() const { return word_embeddings + position_embeddings + embedding_norm; }
  std::int64_t layers() const {
    return dense_layer.total() * num_dense_layers + moe_layer.total() * num_moe_layers +
           mamba_layer.total() * num_mamba_layers + attention_layer.total() * num_attention_layers;
  }
  /// The parameters of one layer of kind `k` (windowed layers are counted as their unwindowed kind).
  const layer_parameters& of(layer_kind k) const;
  std::int64_t mtp() const { return mtp_each * num_mtp_layers; }
  /// The model as published and served, without MTP modules (DeepSeek-V3's 671B).
  std::int64_t main_model() const { return total - mtp(); }
};

/// Exact counts for the vocabulary padded for tensor-parallel size `tp`.
parameter_breakdown count_parameters(const model_spec& m, std::int64_t tp = 1);

// ---- catalog (src/core/model/model_catalog.cc) --------------------------------------------------------------

/// An embedded model: its spec and where its numbers come from.
struct catalog_model {
  model_spec spec;
  std::string family;
  std::string source;  ///< paper or config the sizes come from
};

const std::vector<catalog_model>& model_catalog();
std::vector<std::string> model_names();
/// Find by name; throws input_error with a "did you mean" when unknown.
const catalog_model& find_model(std::string_view name);

// ---- files (src/core/model/model_io.cc) ---------------------------------------------------------------------

/// Load a model from our own YAML/JSON description or a Hugging Face config.json (recognised by
/// its "model_type" or "architectures" field). Throws input_error with "file:line: " for malformed
/// files and naming the field for bad values.
model_spec load_model_file(const std::string& path);
/// The same from text already read; `origin` names it in messages.
model_spec parse_model_text(const std::string& text, const std::string& origin);

/// A catalog name or a file path (anything with '/' or ending .json/.yaml/.yml).
model_spec resolve_model(const std::string& name_or_path);

}  // namespace trainplan
