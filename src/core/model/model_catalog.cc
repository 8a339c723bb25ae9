// The embedded model catalog (docs/formulas.md §1.4 lists the sources).
#include <string>
#include <vector>

#include "trainplan/core/base/error.h"
#include "trainplan/core/model/model.h"

namespace trainplan {

namespace {

struct shape {
  const char* name;
  const char* family;
  std::int64_t layers, hidden, ffn, heads, groups, vocab, seq, max_pos;
  position_embedding_kind pos;
  activation_kind act;
  norm_kind norm;
  bool bias, tied, embedding_norm;
  std::int64_t experts, topk;
  const char* source;
};

using P = position_embedding_kind;
using A = activation_kind;
using N = norm_kind;

// One row per model; ffn 0 = Megatron's default rule; groups 0 = MHA. seq is the pre-training
// sequence length (what a plan uses by default), max_pos the learned table's rows where there is one.
constexpr shape kShapes[] = {
    {"gpt3-175b", "gpt", 96, 12288, 0, 96, 0, 50257, 2048, 2048, P::learned, A::gelu, N::layernorm, true, true, false, 0, 0,
     "Brown et al. 2020, Table 2.1 (GPT-3 175B)"},
    {"bloom-176b", "bloom", 70, 14336, 0, 112, 0, 250880, 2048, 2048, P::alibi, A::gelu, N::layernorm, true, true, true, 0, 0,
     "bigscience/bloom config.json; BLOOM paper (arXiv 2211.05100) Table 3"},
    {"opt-175b", "opt", 96, 12288, 49152, 96, 0, 50272, 2048, 2050, P::learned, A::relu, N::layernorm, true, true, false, 0, 0,
     "Zhang et al. 2022 (arXiv 2205.01068) Table 1; metaseq: positions table has 2048 + 2 offset rows"},
    {"llama2-7b", "llama", 32, 4096, 11008, 32, 0, 32000, 4096, 4096, P::rope, A::swiglu, N::rmsnorm, false, false, false, 0, 0,
     "meta-llama/Llama-2-7b-hf config.json; Touvron et al. 2023"},
    {"llama2-13b", "llama", 40, 5120, 13824, 40, 0, 32000, 4096, 4096, P::rope, A::swiglu, N::rmsnorm, false, false, false, 0, 0,
     "meta-llama/Llama-2-13b-hf config.json"},
    {"llama2-70b", "llama", 80, 8192, 28672, 64, 8, 32000, 4096, 4096, P::rope, A::swiglu, N::rmsnorm, false, false, false, 0, 0,
     "meta-llama/Llama-2-70b-hf config.json"},
    {"llama3-8b", "llama", 32, 4096, 14336, 32, 8, 128256, 8192, 8192, P::rope, A::swiglu, N::rmsnorm, false, false, false, 0, 0,
     "meta-llama/Meta-Llama-3-8B config.json"},
    {"llama3-70b", "llama", 80, 8192, 28672, 64, 8, 128256, 8192, 8192, P::rope, A::swiglu, N::rmsnorm, false, false, false, 0, 0,
     "meta-llama/Meta-Llama-3-70B config.json"},
    {"llama3.1-405b", "llama", 126, 16384, 53248, 128, 8, 128256, 8192, 131072, P::rope, A::swiglu, N::rmsnorm, false, false, false,
     0, 0, "meta-llama/Llama-3.1-405B config.json; Llama 3 paper (arXiv 2407.21783) Table 3: pre-trained at 8192"},
    {"mixtral-8x7b", "mixtral", 32, 4096, 14336, 32, 8, 32000, 4096, 32768, P::rope, A::swiglu, N::rmsnorm, false, false, false, 8, 2,
     "mistralai/Mixtral-8x7B-v0.1 config.json (context 32768; planned at 4096 by default)"},
    {"mixtral-8x22b", "mixtral", 56, 6144, 16384, 48, 8, 32768, 4096, 65536, P::rope, A::swiglu, N::rmsnorm, false, false, false, 8, 2,
     "mistralai/Mixtral-8x22B-v0.1 config.json (context 65536; planned at 4096 by default)"},
    {"megatron-22b", "gpt", 48, 6144, 0, 64, 0, 51200, 2048, 2048, P::learned, A::gelu, N::layernorm, true, true, false, 0, 0,
     "Korthikanti et al. 2022 (arXiv 2205.05198) Table 3"},
    {"megatron-175b", "gpt", 96, 12288, 0, 96, 0, 51200, 2048, 2048, P::learned, A::gelu, N::layernorm, true, true, false, 0, 0,
     "Korthikanti et al. 2022 (arXiv 2205.05198) Table 3"},
    {"megatron-530b", "gpt", 105, 20480, 0, 128, 0, 51200, 2048, 2048, P::learned, A::gelu, N::layernorm, true, true, false, 0, 0,
     "Korthikanti et al. 2022 (arXiv 2205.05198) Table 3"},
    {"megatron-1t", "gpt", 128, 25600, 0, 160, 0, 51200, 2048, 2048, P::learned, A::gelu, N::layernorm, true, true, false, 0, 0,
     "Korthikanti et al. 2022 (arXiv 2205.05198) Table 3"},
    {"deepseek-v3", "deepseek", 61, 7168, 18432, 128, 0, 129280, 4096, 163840, P::rope, A::swiglu, N::rmsnorm, false, false, false, 256, 8,
     "deepseek-ai/DeepSeek-V3 config.json; DeepSeek-V3 report (arXiv 2412.19437) §2, §4.2: 671B total, 37B active, MTP depth 1, pre-trained at 4K"},
    {"qwen2-57b-a14b", "qwen", 28, 3584, 18944, 28, 4, 151936, 4096, 131072, P::rope, A::swiglu, N::rmsnorm, false, false, false, 64, 8,
     "Qwen/Qwen2-57B-A14B config.json; Qwen2 report (arXiv 2407.10671) Table 1: 57B total, 14B active"},
    {"qwen3-0.6b", "qwen", 28, 1024, 3072, 16, 8, 151936, 4096, 40960, P::rope, A::swiglu, N::rmsnorm, false, true, false, 0, 0,
     "Qwen/Qwen3-0.6B config.json and model card: 0.6B, 0.44B non-embedding, tied embeddings"},
    {"qwen3-1.7b", "qwen", 28, 2048, 6144, 16, 8, 151936, 4096, 40960, P::rope, A::swiglu, N::rmsnorm, false, true, false, 0, 0,
     "Qwen/Qwen3-1.7B config.json and model card: 1.7B, 1.4B non-embedding, tied embeddings"},
    {"qwen3-4b", "qwen", 36, 2560, 9728, 32, 8, 151936, 4096, 40960, P::rope, A::swiglu, N::rmsnorm, false, true, false, 0, 0,
     "Qwen/Qwen3-4B config.json and model card: 4.0B, 3.6B non-embedding, tied embeddings"},
    {"qwen3-8b", "qwen", 36, 4096, 12288, 32, 8, 151936, 4096, 40960, P::rope, A::swiglu, N::rmsnorm, false, false, false, 0, 0,
     "Qwen/Qwen3-8B config.json and model card: 8.2B, 6.95B non-embedding; Qwen3 report (arXiv 2505.09388) §3.2: pre-trained at 4096"},
    {"qwen3-32b", "qwen", 64, 5120, 25600, 64, 8, 151936, 4096, 40960, P::rope, A::swiglu, N::rmsnorm, false, false, false, 0, 0,
     "Qwen/Qwen3-32B config.json and model card: 32.8B, 31.2B non-embedding"},
    {"qwen3-30b-a3b", "qwen", 48, 2048, 6144, 32, 4, 151936, 4096, 40960, P::rope, A::swiglu, N::rmsnorm, false, false, false, 128, 8,
     "Qwen/Qwen3-30B-A3B config.json and model card: 30.5B total, 3.3B active, 29.9B non-embedding"},
    {"qwen3-235b-a22b", "qwen", 94, 4096, 12288, 64, 4, 151936, 4096, 40960, P::rope, A::swiglu, N::rmsnorm, false, false, false, 128, 8,
     "Qwen/Qwen3-235B-A22B config.json and model card: 235B total, 22B active, 234B non-embedding"},
    {"gpt-oss-20b", "gpt-oss", 24, 2880, 2880, 64, 8, 201088, 4096, 131072, P::rope, A::swiglu, N::rmsnorm, true, false, false, 32, 4,
     "openai/gpt-oss-20b config.json; gpt-oss model card (2025) Table 1: 20.91B total, 3.61B active (embedding excluded); planned at 4096"},
    {"gpt-oss-120b", "gpt-oss", 36, 2880, 2880, 64, 8, 201088, 4096, 131072, P::rope, A::swiglu, N::rmsnorm, true, false, false, 128, 4,
     "openai/gpt-oss-120b config.json; gpt-oss model card (2025) Table 1: 116.83B total, 5.13B active (embedding excluded); planned at 4096"},
    {"llama4-scout", "llama", 48, 5120, 16384, 40, 8, 202048, 8192, 10485760, P::rope, A::swiglu, N::rmsnorm, false, false, false, 16, 1,
     "meta-llama/Llama-4-Scout-17B-16E config.json (text_config): 17B active; the published 109B total includes the vision encoder; planned at 8192"},
    {"llama4-maverick", "llama", 48, 5120, 16384, 40, 8, 202048, 8192, 1048576, P::rope, A::swiglu, N::rmsnorm, false, false, false, 128, 1,
     "meta-llama/Llama-4-Maverick-17B-128E config.json (text_config): 400B total, 17B active; planned at 8192"},
    {"gemma2-9b", "gemma", 42, 3584, 14336, 16, 8, 256000, 8192, 8192, P::rope, A::geglu, N::rmsnorm, false, true, false, 0, 0,
     "google/gemma-2-9b config.json; Gemma 2 report (arXiv 2408.00118) Table 2: 917,504,000 embedding + 8,324,201,984 non-embedding"},
    {"gemma2-27b", "gemma", 46, 4608, 36864, 32, 16, 256000, 8192, 8192, P::rope, A::geglu, N::rmsnorm, false, true, false, 0, 0,
     "google/gemma-2-27b config.json; Gemma 2 report Table 2: 1,179,648,000 embedding + 26,047,480,320 non-embedding"},
    {"gemma3-27b", "gemma", 62, 5376, 21504, 32, 16, 262208, 32768, 131072, P::rope, A::geglu, N::rmsnorm, false, true, false, 0, 0,
     "google/gemma-3-27b-pt config.json (text_config); Gemma 3 report (arXiv 2503.19786) Table 1: 25,600M non-embedding; pre-trained at 32K"},
    {"nemotron-h-8b", "nemotron-h", 52, 4096, 21504, 32, 8, 131072, 8192, 8192, P::rope, A::squared_relu, N::rmsnorm, false, false, false, 0, 0,
     "nvidia/Nemotron-H-8B-Base-8K config.json; Megatron-Bridge NemotronHModelProvider8B; Nemotron-H report (arXiv 2504.03624) Table 1: 8B, 24 Mamba-2, 24 MLP, 4 attention layers"},
    {"nemotron-h-56b", "nemotron-h", 118, 8192, 32768, 64, 8, 131072, 8192, 8192, P::rope, A::squared_relu, N::rmsnorm, false, false, false, 0, 0,
     "Megatron-Bridge NemotronHModelProvider56B; Nemotron-H report (arXiv 2504.03624) Table 1: 56B, 54 Mamba-2, 54 MLP, 10 attention layers"},
};

/// What the shape table cannot hold: MLA, fine-grained MoE, windows, norms, sinks, MTP (§1.7-§1.9),
/// from the same sources as the rows.
struct extension {
  const char* name;
  void (*apply)(model_spec&);
};

constexpr extension kExtensions[] = {
    {"deepseek-v3",
     [](model_spec& m) {
       m.mla = {1536, 512, 128, 64, 128};  // q_lora_rank, kv_lora_rank, qk_nope, qk_rope, v_head_dim
       m.moe.expert_ffn_hidden_size = 2048;
       m.moe.shared_expert_ffn_hidden_size = 2048;  // n_shared_experts 1 × moe_intermediate_size
       m.moe.first_dense_layers = 3;                // first_k_dense_replace
       m.moe.expert_score_bias = true;              // e_score_correction_bias
       m.moe.router_num_groups = 8;                 // n_group, topk_group: node-limited routing
       m.moe.router_group_topk = 4;
       m.mtp_num_layers = 1;                        // num_nextn_predict_layers
     }},
    {"qwen2-57b-a14b",
     [](model_spec& m) {
       m.add_qkv_bias = true;
       m.moe.expert_ffn_hidden_size = 2560;
       m.moe.shared_expert_ffn_hidden_size = 20480;
       m.moe.shared_expert_gate = true;
     }},
    {"qwen3-0.6b", [](model_spec& m) { m.kv_channels = 128, m.qk_norm = true; }},
    {"qwen3-1.7b", [](model_spec& m) { m.kv_channels = 128, m.qk_norm = true; }},
    {"qwen3-4b", [](model_spec& m) { m.kv_channels = 128, m.qk_norm = true; }},
    {"qwen3-8b", [](model_spec& m) { m.kv_channels = 128, m.qk_norm = true; }},
    {"qwen3-32b", [](model_spec& m) { m.kv_channels = 128, m.qk_norm = true; }},
    {"qwen3-30b-a3b", [](model_spec& m) { m.kv_channels = 128, m.qk_norm = true, m.moe.expert_ffn_hidden_size = 768; }},
    {"qwen3-235b-a22b", [](model_spec& m) { m.kv_channels = 128, m.qk_norm = true, m.moe.expert_ffn_hidden_size = 1536; }},
    {"gpt-oss-20b", [](model_spec& m) { m.kv_channels = 64, m.sliding_window = 128, m.window_skip_freq = 2,
                                        m.rope_yarn_factor = 32,  // rope_scaling: yarn, factor 32
                                        m.attention_sinks = true, m.moe.router_bias = true, m.glu_clamp_limit = 7; }},
    {"gpt-oss-120b", [](model_spec& m) { m.kv_channels = 64, m.sliding_window = 128, m.window_skip_freq = 2,
                                         m.rope_yarn_factor = 32,  // rope_scaling: yarn, factor 32
                                         m.attention_sinks = true, m.moe.router_bias = true, m.glu_clamp_limit = 7; }},
    {"llama4-scout",
     [](model_spec& m) {
       m.kv_channels = 128;
       m.moe.expert_ffn_hidden_size = 8192, m.moe.shared_expert_ffn_hidden_size = 8192;
       m.sliding_window = 8192, m.window = window_kind::chunked, m.window_skip_freq = 4;  // NoPE global every 4th
       m.make_vocab_size_divisible_by = 1;  // 202048 rows, not a multiple of 128: the checkpoint's, unpadded
     }},
    {"llama4-maverick",
     [](model_spec& m) {
       m.kv_channels = 128;
       m.moe.expert_ffn_hidden_size = 8192, m.moe.shared_expert_ffn_hidden_size = 8192;
       m.moe.first_dense_layers = 1, m.moe.layer_freq = 2;  // interleave_moe_layer_step 2: layers 1, 3, ...
       m.sliding_window = 8192, m.window = window_kind::chunked, m.window_skip_freq = 4;
       m.make_vocab_size_divisible_by = 1;
     }},
    {"gemma2-9b", [](model_spec& m) { m.kv_channels = 256, m.sandwich_norm = true, m.sliding_window = 4096,
                                      m.window_skip_freq = 2; }},
    {"gemma2-27b", [](model_spec& m) { m.kv_channels = 128, m.sandwich_norm = true, m.sliding_window = 4096,
                                       m.window_skip_freq = 2; }},
    {"nemotron-h-8b", [](model_spec& m) {
       m.hybrid_pattern = "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-";
       m.mamba.num_heads = 128, m.mamba.state_dim = 128, m.mamba.head_dim = 64, m.mamba.num_groups = 8;
     }},
    {"nemotron-h-56b", [](model_spec& m) {
       m.hybrid_pattern = "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-"
                          "M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-";
       m.mamba.num_heads = 256, m.mamba.state_dim = 256, m.mamba.head_dim = 64, m.mamba.num_groups = 8;
     }},
    {"gemma3-27b", [](model_spec& m) { m.kv_channels = 128, m.sandwich_norm = true, m.qk_norm = true,
                                       m.sliding_window = 1024, m.window_skip_freq = 6,
                                       m.make_vocab_size_divisible_by = 1; }},  // 262208 rows, unpadded
};

std::vector<catalog_model> build_catalog() {
  std::vector<catalog_model> out;
  for (const shape& s : kShapes) {
    catalog_model c;
    model_spec& m = c.spec;
    m.name = s.name;
    m.num_layers = s.layers;
    m.hidden_size = s.hidden;
    m.ffn_hidden_size = s.ffn;
    m.num_attention_heads = s.heads;
    m.num_query_groups = s.groups;
    m.vocab_size = s.vocab;
    m.seq_length = s.seq;
    m.max_position_embeddings = s.max_pos;
    m.position_embedding = s.pos;
    m.activation = s.act;
    m.norm = s.norm;
    m.add_bias_linear = s.bias;
    m.tie_embeddings = s.tied;
    m.embedding_norm = s.embedding_norm;
    if (!s.bias) {
      // Llama/Mixtral-style training runs use no dropout.
      m.attention_dropout = 0.0;
      m.hidden_dropout = 0.0;
    }
    m.moe.num_experts = s.experts;
    m.moe.router_topk = s.topk;
    for (const extension& x : kExtensions)
      if (std::string_view(x.name) == s.name) x.apply(m);
    finalize_model(m);
    c.family = s.family;
    c.source = s.source;
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace

const std::vector<catalog_model>& model_catalog() {
  static const std::vector<catalog_model> catalog = build_catalog();
  return catalog;
}

std::vector<std::string> model_names() {
  std::vector<std::string> names;
  for (const auto& c : model_catalog()) names.push_back(c.spec.name);
  return names;
}

const catalog_model& find_model(std::string_view name) {
  for (const auto& c : model_catalog())
    if (c.spec.name == name) return c;
  throw input_error("unknown model '" + std::string(name) + "'" + did_you_mean(name, model_names()) +
                    "; `trainplan models` lists the catalog, or give a YAML/JSON/config.json path");
}

}  // namespace trainplan
