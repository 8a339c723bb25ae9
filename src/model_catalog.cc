// The embedded model catalog (docs/formulas.md §1.4 lists the sources).
#include <string>
#include <vector>

#include "trainplan/error.h"
#include "trainplan/model.h"

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
