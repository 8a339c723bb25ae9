// Model files: our YAML/JSON format, Hugging Face config.json, and their error messages.
#include <gtest/gtest.h>

#include <cmath>

#include <cctype>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "trainplan/core/base/error.h"
#include "trainplan/core/model/model.h"

namespace trainplan {
namespace {

std::string hf(const std::string& file) { return std::string(TRAINPLAN_TEST_DATA_DIR) + "/hf/" + file; }

/// Writes `text` to a fresh file under the test temp dir and returns its path.
std::string write_temp(const std::string& name, const std::string& text) {
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "trainplan_model_io";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / name).string();
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

/// The input_error message `f` throws, or "" when it throws none.
template <typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const input_error& e) {
    return e.what();
  }
  return "";
}

/// Passes when `message` starts with `prefix` and contains `part`.
::testing::AssertionResult message_is(const std::string& message, const std::string& prefix,
                                      const std::string& part = "") {
  if (message.rfind(prefix, 0) == 0 && message.find(part) != std::string::npos) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "message \"" << message << "\" does not start with \"" << prefix
                                       << "\" and contain \"" << part << "\"";
}

std::string parse_error(const std::string& text, const std::string& origin = "m.yaml") {
  return error_of([&] { parse_model_text(text, origin); });
}

// ---- Hugging Face configs against published parameter counts ---------------------------------------

struct published {
  const char* file;
  std::int64_t parameters;
};

void PrintTo(const published& p, std::ostream* os) { *os << p.file; }

class ModelIoPublished : public ::testing::TestWithParam<published> {};

TEST_P(ModelIoPublished, CountMatchesPublishedFigure) {
  const model_spec m = load_model_file(hf(GetParam().file));
  EXPECT_EQ(count_parameters(m, 1).total, GetParam().parameters) << GetParam().file;
}

INSTANTIATE_TEST_SUITE_P(
    ModelIoHuggingFace, ModelIoPublished,
    ::testing::Values(published{"llama2-7b.json", 6'738'415'616}, published{"llama3-8b.json", 8'030'261'248},
                      published{"llama3-70b.json", 70'553'706'496}, published{"mixtral-8x7b.json", 46'702'792'704},
                      published{"bloom-176b.json", 176'247'271'424}, published{"gpt2.json", 124'439'808},
                      published{"gpt-neox-20b.json", 20'554'567'680}, published{"qwen2-7b.json", 7'615'616'512},
                      published{"opt-125m.json", 125'239'296},
                      // 50272·9216 + 2050·9216 + 64·(12h² + 13h) + 2h
                      published{"opt-66b.json", 65'719'701'504}),
    [](const ::testing::TestParamInfo<published>& info) {
      std::string name = info.param.file;
      name = name.substr(0, name.rfind('.'));
      for (char& c : name)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      return name;
    });

// DeepSeek-MoE (model_type deepseek): Llama's multi-head attention with DeepSeek's experts. By hand:
// embedding and output 2·102,400·2,048; 28 layers of attention 4·2,048² and norms 2·2,048; layer 0's
// dense MLP 3·2,048·10,944; 27 MoE layers of 64 routed and 2 shared experts of 3·2,048·1,408 and the
// 64 × 2,048 gate; the final norm: 16,375,728,128 = the paper's 16.4B. Activated per token (6 routed
// experts): 2.8B.
TEST(ModelIoHf, DeepSeekMoeIsLlamaAttentionWithDeepSeeksExperts) {
  const model_spec m = load_model_file(hf("deepseek-moe-16b.json"));
  EXPECT_FALSE(m.is_mla());
  EXPECT_EQ(m.num_query_groups, 16);
  EXPECT_EQ(m.moe.num_experts, 64);
  EXPECT_EQ(m.moe.router_topk, 6);
  EXPECT_EQ(m.moe.first_dense_layers, 1);
  EXPECT_EQ(m.moe.shared_expert_ffn_hidden_size, 2 * 1408);
  EXPECT_FALSE(m.moe.expert_score_bias);
  const parameter_breakdown p = count_parameters(m, 1);
  EXPECT_EQ(p.total, 16'375'728'128);
  EXPECT_NEAR(static_cast<double>(p.total) / 16.4e9, 1.0, 0.005);
  EXPECT_NEAR(static_cast<double>(p.active_per_token) / 2.8e9, 1.0, 0.02);
}

// DeepSeek's own inference configs (inference/model.py ModelArgs; issue 29): the same models as their
// Hugging Face configs. config_671B is DeepSeek-V3 without the MTP module the inference code leaves out:
// the HF deepseek-v3.json's count with its MTP layer removed. config_236B is DeepSeek-V2 (236B, 21B
// activated) and config_16B DeepSeek-V2-Lite (15.7B, 2.4B activated without the embedding).
TEST(ModelIoDeepSeekInference, SameModelsAsTheirHuggingFaceConfigs) {
  const model_spec v3 = load_model_file(hf("deepseek-inference-config_671B.json"));
  model_spec from_hf = load_model_file(hf("deepseek-v3.json"));
  from_hf.mtp_num_layers = 0;
  EXPECT_EQ(count_parameters(v3, 1).total, count_parameters(from_hf, 1).total);
  EXPECT_EQ(count_parameters(v3, 1).active_per_token, count_parameters(from_hf, 1).active_per_token);
  EXPECT_EQ(v3.seq_length, 4096);
  const parameter_breakdown v2 = count_parameters(load_model_file(hf("deepseek-inference-config_236B.json")), 1);
  EXPECT_NEAR(static_cast<double>(v2.total) / 236e9, 1.0, 0.005);
  EXPECT_NEAR(static_cast<double>(v2.active_per_token) / 21e9, 1.0, 0.03);
  const model_spec lite_spec = load_model_file(hf("deepseek-inference-config_16B.json"));
  const parameter_breakdown lite = count_parameters(lite_spec, 1);
  EXPECT_EQ(lite_spec.mla.q_lora_rank, 0);  // direct queries
  EXPECT_NEAR(static_cast<double>(lite.total) / 15.7e9, 1.0, 0.005);
}

TEST(ModelIoHf, LlamaMapping) {
  const model_spec m = load_model_file(hf("llama2-7b.json"));
  EXPECT_EQ(m.name, "meta-llama/Llama-2-7b-hf");
  EXPECT_EQ(m.num_layers, 32);
  EXPECT_EQ(m.hidden_size, 4096);
  EXPECT_EQ(m.ffn_hidden_size, 11008);
  EXPECT_EQ(m.num_query_groups, 32);
  EXPECT_EQ(m.kv_channels, 128);
  EXPECT_EQ(m.vocab_size, 32000);
  EXPECT_EQ(m.seq_length, 4096);
  EXPECT_EQ(m.max_position_embeddings, 4096);
  EXPECT_EQ(m.position_embedding, position_embedding_kind::rope);
  EXPECT_EQ(m.activation, activation_kind::swiglu);
  EXPECT_EQ(m.norm, norm_kind::rmsnorm);
  EXPECT_FALSE(m.add_bias_linear);
  EXPECT_FALSE(m.add_qkv_bias);
  EXPECT_FALSE(m.tie_embeddings);
  EXPECT_FALSE(m.is_moe());
  EXPECT_EQ(m.make_vocab_size_divisible_by, 128);
  EXPECT_EQ(padded_vocab(m, 8), 32768);  // Megatron's 128·TP padding still applies
}

// Issue 29: a RoPE-scaled config (Llama 3.1's rope_scaling, as meta-llama/Llama-3.1-8B's config.json
// writes it) is planned at its pretraining context, 8,192, not its 131,072 (where no layout fits).
TEST(ModelIoHf, RopeScaledModelsArePlannedAtTheirPretrainingContext) {
  const std::string path = write_temp("llama31.json", R"({
  "model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32,
  "num_hidden_layers": 32, "num_key_value_heads": 8, "vocab_size": 128256, "max_position_embeddings": 131072,
  "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                   "original_max_position_embeddings": 8192, "rope_type": "llama3"},
  "tie_word_embeddings": false
})");
  const model_spec m = load_model_file(path);
  EXPECT_EQ(m.seq_length, 8192);
  EXPECT_EQ(m.max_position_embeddings, 131072);
  EXPECT_EQ(m.rope_original_context, 8192);
  EXPECT_EQ(count_parameters(m, 1).total, count_parameters(find_model("llama3-8b").spec, 1).total);
}

// gpt-oss's config.json: rope_scaling {"rope_type": "yarn", "factor": 32.0, ...}; transformers v5 writes the same
// object as rope_parameters. The factor decides Megatron-Core's RoPE kernel (§5.3).
TEST(ModelIoHf, ReadsYarnsFactorFromEitherKey) {
  EXPECT_DOUBLE_EQ(load_model_file(hf("gpt-oss-120b.json")).rope_yarn_factor, 32.0);
  EXPECT_DOUBLE_EQ(find_model("gpt-oss-120b").spec.rope_yarn_factor, 32.0);
  const std::string path = write_temp("yarn-v5.json", R"({
  "model_type": "qwen3", "hidden_size": 1024, "intermediate_size": 3072, "num_attention_heads": 16,
  "num_hidden_layers": 4, "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 151936,
  "max_position_embeddings": 131072,
  "rope_parameters": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}
})");
  const model_spec m = load_model_file(path);
  EXPECT_DOUBLE_EQ(m.rope_yarn_factor, 4.0);
  EXPECT_EQ(m.rope_original_context, 32768);
  EXPECT_DOUBLE_EQ(load_model_file(hf("llama3-8b.json")).rope_yarn_factor, 0.0);
  // DeepSeek-V3's YaRN (factor 40, mscale = mscale_all_dim = 1) has a concentration of 1: TE's kernel.
  EXPECT_DOUBLE_EQ(load_model_file(hf("deepseek-v3.json")).rope_yarn_factor, 0.0);
}

// Megatron-Core's concentration factor (yarn_rotary_pos_embedding.py): m(f, k) = 0.1·k·ln f + 1 for f > 1.
TEST(ModelYarn, ConcentrationAsMegatronCoreComputesIt) {
  EXPECT_NEAR(yarn_concentration(32, std::nullopt, std::nullopt), 0.1 * std::log(32.0) + 1, 1e-15);  // gpt-oss: 1.3466
  EXPECT_NEAR(yarn_concentration(32, 1.0, 0.0), 0.1 * std::log(32.0) + 1, 1e-15);  // Megatron's flag defaults
  EXPECT_DOUBLE_EQ(yarn_concentration(40, 1.0, 1.0), 1.0);                          // DeepSeek-V3
  EXPECT_DOUBLE_EQ(yarn_concentration(1, std::nullopt, std::nullopt), 1.0);         // no scaling
  EXPECT_DOUBLE_EQ(yarn_factor_for_kernel(32, std::nullopt, std::nullopt), 32.0);
  EXPECT_DOUBLE_EQ(yarn_factor_for_kernel(40, 1.0, 1.0), 0.0);
}

TEST(ModelIoHf, NameFallsBackToFileStem) {
  const model_spec m = load_model_file(hf("llama3-8b.json"));
  EXPECT_EQ(m.name, "llama3-8b");
  EXPECT_EQ(m.num_query_groups, 8);
  EXPECT_EQ(m.seq_length, 8192);
}

TEST(ModelIoHf, MatchesCatalogCounts) {
  for (const auto& [file, name] :
       {std::pair{"llama2-7b.json", "llama2-7b"}, std::pair{"llama3-70b.json", "llama3-70b"},
        std::pair{"mixtral-8x7b.json", "mixtral-8x7b"}, std::pair{"bloom-176b.json", "bloom-176b"},
        std::pair{"deepseek-v3.json", "deepseek-v3"}, std::pair{"qwen3-8b.json", "qwen3-8b"},
        std::pair{"qwen3-30b-a3b.json", "qwen3-30b-a3b"}, std::pair{"gpt-oss-120b.json", "gpt-oss-120b"},
        std::pair{"llama4-maverick.json", "llama4-maverick"}, std::pair{"gemma2-27b.json", "gemma2-27b"},
        std::pair{"gemma3-27b.json", "gemma3-27b"}}) {
    EXPECT_EQ(count_parameters(load_model_file(hf(file)), 8).total, count_parameters(find_model(name).spec, 8).total)
        << file;
  }
}

TEST(ModelIoHf, TodaysFamiliesReadTheirArchitecture) {
  // Each family's fields as the catalog has them, and the same per-layer patterns.
  auto same = [](const char* file, const char* name) {
    SCOPED_TRACE(file);
    const model_spec f = load_model_file(hf(file));
    const model_spec& c = find_model(name).spec;
    EXPECT_EQ(f.is_mla(), c.is_mla());
    EXPECT_EQ(f.qk_norm, c.qk_norm);
    EXPECT_EQ(f.sandwich_norm, c.sandwich_norm);
    EXPECT_EQ(f.attention_sinks, c.attention_sinks);
    EXPECT_EQ(f.rope_yarn_factor > 1, c.rope_yarn_factor > 1);
    EXPECT_EQ(f.mtp_num_layers, c.mtp_num_layers);
    EXPECT_EQ(f.sliding_window, c.sliding_window);
    EXPECT_EQ(f.window, c.window);
    EXPECT_EQ(f.moe.router_num_groups, c.moe.router_num_groups);
    EXPECT_EQ(f.moe.router_group_topk, c.moe.router_group_topk);
    model_spec g = f, k = c;
    g.seq_length = k.seq_length = 65536;  // so that every window limits
    for (std::int64_t i = 0; i < c.num_layers; ++i) {
      EXPECT_EQ(g.is_window_layer(i), k.is_window_layer(i)) << "layer " << i;
      EXPECT_EQ(f.is_moe_layer(i), c.is_moe_layer(i)) << "layer " << i;
    }
  };
  same("deepseek-v3.json", "deepseek-v3");
  same("qwen3-30b-a3b.json", "qwen3-30b-a3b");
  same("gpt-oss-120b.json", "gpt-oss-120b");
  same("llama4-maverick.json", "llama4-maverick");
  same("gemma2-27b.json", "gemma2-27b");
  same("gemma3-27b.json", "gemma3-27b");
}

TEST(ModelIoHf, MambaOneAndParallelHybridsAreRefusedByName) {
  const std::string text = R"({"model_type": "jamba", "num_hidden_layers": 4, "hidden_size": 64})";
  EXPECT_TRUE(message_is(parse_error(text, "n.json"), "n.json: field 'model_type': 'jamba' is not modelled: Jamba and "
                                                     "Mamba use Mamba-1"));
}

TEST(ModelIoHf, NemotronHReadsItsHybridPattern) {
  const model_spec f = load_model_file(hf("nemotron-h-8b.json"));
  const model_spec& c = find_model("nemotron-h-8b").spec;
  EXPECT_EQ(f.hybrid_pattern, c.hybrid_pattern);
  EXPECT_EQ(f.mamba.num_heads, 128);
  EXPECT_EQ(f.mamba.state_dim, 128);
  EXPECT_EQ(f.mamba.num_groups, 8);
  EXPECT_EQ(f.activation, activation_kind::squared_relu);
  EXPECT_EQ(count_parameters(f, 8).total, count_parameters(c, 8).total);
  EXPECT_EQ(count_parameters(f, 1).total, 8'100'852'736);
}

TEST(ModelIoHf, MixtralExperts) {
  const model_spec m = load_model_file(hf("mixtral-8x7b.json"));
  EXPECT_EQ(m.moe.num_experts, 8);
  EXPECT_EQ(m.moe.router_topk, 2);
  EXPECT_EQ(m.moe.expert_ffn_hidden_size, 14336);
  EXPECT_EQ(m.ffn_hidden_size, 14336);
  EXPECT_EQ(m.moe.shared_expert_ffn_hidden_size, 0);
  EXPECT_EQ(m.num_moe_layers(), 32);
  EXPECT_EQ(m.seq_length, 32768);
  const parameter_breakdown p = count_parameters(m, 1);
  EXPECT_EQ(p.moe_layer.router, 4096 * 8);
  EXPECT_EQ(p.active_per_token, 12'879'925'248);  // Mixtral's "12.9B active"
}

TEST(ModelIoHf, QwenMoeSharedExperts) {
  const model_spec m = load_model_file(hf("qwen1.5-moe-a2.7b.json"));
  EXPECT_EQ(m.moe.num_experts, 60);
  EXPECT_EQ(m.moe.router_topk, 4);
  EXPECT_EQ(m.moe.expert_ffn_hidden_size, 1408);
  EXPECT_EQ(m.moe.shared_expert_ffn_hidden_size, 5632);
  EXPECT_TRUE(m.add_qkv_bias);
  EXPECT_FALSE(m.add_bias_linear);
  // 14,315,784,192 in transformers, the shared-expert gate (2048 × 24 layers) included (issue 11).
  EXPECT_TRUE(m.moe.shared_expert_gate);
  EXPECT_EQ(count_parameters(m, 1).total, 14'315'784'192);
}

TEST(ModelIoHf, QwenMoeLeadingDenseLayers) {
  const std::string text = R"({"model_type": "qwen2_moe", "num_hidden_layers": 4, "hidden_size": 64,
      "intermediate_size": 256, "num_attention_heads": 4, "vocab_size": 1024, "mlp_only_layers": [0]})";
  EXPECT_EQ(parse_model_text(text, "q.json").moe.first_dense_layers, 1);
  const std::string holes = R"({"model_type": "qwen2_moe", "num_hidden_layers": 4, "hidden_size": 64,
      "intermediate_size": 256, "num_attention_heads": 4, "vocab_size": 1024, "mlp_only_layers": [2]})";
  EXPECT_TRUE(message_is(parse_error(holes, "q.json"), "q.json: field 'mlp_only_layers': only leading dense layers"));
}

TEST(ModelIoHf, QwenQkvBias) {
  const model_spec m = load_model_file(hf("qwen2-7b.json"));
  EXPECT_TRUE(m.add_qkv_bias);
  EXPECT_FALSE(m.add_bias_linear);
  EXPECT_EQ(m.num_query_groups, 4);
  EXPECT_EQ(m.seq_length, 131072);
  EXPECT_EQ(count_parameters(m, 1).dense_layer.qkv_bias, 3584 + 2 * 512);
}

TEST(ModelIoHf, BloomMapping) {
  const model_spec m = load_model_file(hf("bloom-176b.json"));
  EXPECT_EQ(m.hidden_size, 14336);
  EXPECT_EQ(m.num_attention_heads, 112);
  EXPECT_EQ(m.ffn_hidden_size, 4 * 14336);
  EXPECT_EQ(m.position_embedding, position_embedding_kind::alibi);
  EXPECT_TRUE(m.embedding_norm);
  EXPECT_TRUE(m.tie_embeddings);
  EXPECT_TRUE(m.add_bias_linear);
  EXPECT_EQ(m.activation, activation_kind::gelu);
  EXPECT_EQ(m.seq_length, 2048);
  EXPECT_EQ(m.attention_dropout, 0.0);
  EXPECT_EQ(count_parameters(m, 1).position_embeddings, 0);
}

TEST(ModelIoHf, Gpt2Mapping) {
  const model_spec m = load_model_file(hf("gpt2.json"));
  EXPECT_EQ(m.ffn_hidden_size, 3072);  // n_inner absent: 4h
  EXPECT_EQ(m.max_position_embeddings, 1024);
  EXPECT_EQ(m.seq_length, 1024);
  EXPECT_EQ(m.position_embedding, position_embedding_kind::learned);
  EXPECT_TRUE(m.tie_embeddings);
  EXPECT_EQ(m.activation, activation_kind::gelu);
  EXPECT_EQ(m.hidden_dropout, 0.1);
  // 50257 is not a multiple of 128: the checkpoint is unpadded, so only TP's multiple is added.
  EXPECT_EQ(m.make_vocab_size_divisible_by, 1);
  EXPECT_EQ(padded_vocab(m, 1), 50257);
  EXPECT_EQ(padded_vocab(m, 2), 50258);
}

TEST(ModelIoHf, Gpt2NullInner) {
  const std::string text = R"({"model_type": "gpt2", "n_layer": 2, "n_embd": 64, "n_head": 4, "n_inner": null,
      "vocab_size": 1000})";
  const model_spec m = parse_model_text(text, "g.json");
  EXPECT_EQ(m.ffn_hidden_size, 256);
  EXPECT_EQ(m.name, "g");
}

TEST(ModelIoHf, NeoxMapping) {
  const model_spec m = load_model_file(hf("gpt-neox-20b.json"));
  EXPECT_EQ(m.position_embedding, position_embedding_kind::rope);
  EXPECT_EQ(m.norm, norm_kind::layernorm);
  EXPECT_TRUE(m.add_bias_linear);
  EXPECT_FALSE(m.tie_embeddings);
  EXPECT_EQ(m.activation, activation_kind::gelu);
  EXPECT_EQ(m.ffn_hidden_size, 24576);
}

TEST(ModelIoHf, OptPositionOffset) {
  const model_spec m = load_model_file(hf("opt-66b.json"));
  EXPECT_EQ(m.max_position_embeddings, 2050);
  EXPECT_EQ(m.seq_length, 2048);
  EXPECT_EQ(m.activation, activation_kind::relu);
  EXPECT_EQ(m.ffn_hidden_size, 36864);
  EXPECT_TRUE(m.tie_embeddings);
  EXPECT_TRUE(m.final_norm);
  EXPECT_EQ(count_parameters(m, 1).position_embeddings, 2050 * 9216);
}

TEST(ModelIoHf, OptProjectionRejected) {
  EXPECT_TRUE(message_is(error_of([] { load_model_file(hf("opt-350m.json")); }),
                         hf("opt-350m.json") + ": field 'word_embed_proj_dim': 512 differs from hidden_size 1024",
                         "projection"));
}

TEST(ModelIoHf, ArchitecturesWithoutModelType) {
  const std::string text = R"({"architectures": ["MistralForCausalLM"], "num_hidden_layers": 2, "hidden_size": 64,
      "intermediate_size": 224, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 1000,
      "max_position_embeddings": 512, "hidden_act": "gelu_pytorch_tanh"})";
  const model_spec m = parse_model_text(text, "mistral.json");
  EXPECT_EQ(m.activation, activation_kind::geglu);
  EXPECT_EQ(m.num_query_groups, 2);
  EXPECT_EQ(m.seq_length, 512);
}

TEST(ModelIoHf, HeadDimAndBiases) {
  const std::string text = R"({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64, "head_dim": 32,
      "intermediate_size": 224, "num_attention_heads": 4, "vocab_size": 1000, "attention_bias": true,
      "mlp_bias": true, "tie_word_embeddings": true, "seq_length": 1024})";
  const model_spec m = parse_model_text(text, "l.json");
  EXPECT_EQ(m.kv_channels, 32);
  EXPECT_TRUE(m.add_bias_linear);
  EXPECT_TRUE(m.tie_embeddings);
  EXPECT_EQ(m.seq_length, 1024);
  EXPECT_EQ(m.max_position_embeddings, 2048);  // LlamaConfig's default
}

// ---- our own format -------------------------------------------------------------------------------

TEST(ModelIoOwn, FullYaml) {
  const std::string text = R"(# a small GPT
name: tiny
num_layers: 4
hidden_size: 256
num_attention_heads: 8
vocab_size: 1000
seq_length: 512
position_embedding: rope
activation: swiglu
norm: RMSNorm
add_bias_linear: false
tie_embeddings: false
attention_dropout: 0.0
hidden_dropout: 0
moe:
  num_experts: 4
  router_topk: 1
  layer_freq: 2
)";
  const model_spec m = parse_model_text(text, "tiny.yaml");
  EXPECT_EQ(m.name, "tiny");
  EXPECT_EQ(m.num_layers, 4);
  EXPECT_EQ(m.kv_channels, 32);
  EXPECT_EQ(m.ffn_hidden_size, 640);  // Megatron's SwiGLU rule: int(4h·2/3 / 64)·64
  EXPECT_EQ(m.max_position_embeddings, 512);
  EXPECT_EQ(m.norm, norm_kind::rmsnorm);
  EXPECT_EQ(m.position_embedding, position_embedding_kind::rope);
  EXPECT_FALSE(m.add_bias_linear);
  EXPECT_EQ(m.hidden_dropout, 0.0);
  EXPECT_EQ(m.moe.num_experts, 4);
  EXPECT_EQ(m.moe.router_topk, 1);
  EXPECT_EQ(m.num_moe_layers(), 2);
}

TEST(ModelIoOwn, BaseWithOverridesYamlFile) {
  const std::string path = write_temp("short-llama.yaml", "base: llama2-7b\nnum_layers: 16\nseq_length: 2048\n");
  const model_spec m = load_model_file(path);
  const model_spec& base = find_model("llama2-7b").spec;
  EXPECT_EQ(m.name, "short-llama");
  EXPECT_EQ(m.num_layers, 16);
  EXPECT_EQ(m.seq_length, 2048);
  EXPECT_EQ(m.max_position_embeddings, 2048);  // followed seq_length, as in the base
  EXPECT_EQ(m.ffn_hidden_size, base.ffn_hidden_size);
  EXPECT_EQ(m.activation, base.activation);
  EXPECT_EQ(m.tie_embeddings, base.tie_embeddings);
}

TEST(ModelIoOwn, BaseDerivedFieldsFollowOverrides) {
  const model_spec m = parse_model_text("base: gpt3-175b\nhidden_size: 4096\nnum_attention_heads: 32\n", "g.yaml");
  EXPECT_EQ(m.ffn_hidden_size, 4 * 4096);
  EXPECT_EQ(m.kv_channels, 128);
  EXPECT_EQ(m.num_query_groups, 32);
  // Explicit values in the base (Llama's 11008) are kept.
  EXPECT_EQ(parse_model_text("base: llama2-7b\nhidden_size: 2048\n", "l.yaml").ffn_hidden_size, 11008);
}

TEST(ModelIoOwn, JsonWithBase) {
  const std::string path = write_temp(
      "mix.json", R"({"base": "mixtral-8x7b", "name": "mix-4", "num_layers": 4, "moe": {"router_topk": 1}})");
  const model_spec m = resolve_model(path);
  EXPECT_EQ(m.name, "mix-4");
  EXPECT_EQ(m.num_layers, 4);
  EXPECT_EQ(m.moe.num_experts, 8);
  EXPECT_EQ(m.moe.router_topk, 1);
  EXPECT_EQ(m.moe.expert_ffn_hidden_size, 14336);
}

TEST(ModelIoOwn, YarnFactorIsANonNegativeNumber) {
  EXPECT_DOUBLE_EQ(parse_model_text("base: llama3-8b\nrope_yarn_factor: 32\n", "y.yaml").rope_yarn_factor, 32.0);
  EXPECT_EQ(parse_error("base: llama3-8b\nrope_yarn_factor: -1\n"),
            "m.yaml:2: field 'rope_yarn_factor': expected a number no smaller than 0, got -1");
}

TEST(ModelIoOwn, QuotedNumbersAreStrings) {
  EXPECT_EQ(parse_model_text("base: llama2-7b\nname: nan\n", "n.yaml").name, "nan");
  EXPECT_EQ(parse_error("num_layers: \"4\"\n"), "m.yaml:1: field 'num_layers': expected a positive integer, got \"4\"");
}

// ---- errors -----------------------------------------------------------------------------------------

TEST(ModelIoErrors, MalformedJsonGivesLine) {
  const std::string path = write_temp("bad.json", "{\n  \"num_layers\": 4,\n  \"hidden_size\": ,\n}\n");
  EXPECT_TRUE(message_is(error_of([&] { load_model_file(path); }), path + ":3: ", "syntax error"));
}

TEST(ModelIoErrors, MalformedYamlGivesLine) {
  EXPECT_TRUE(message_is(parse_error("num_layers: 4\nhidden_size: [1, 2\n"), "m.yaml:3: "));
  EXPECT_TRUE(message_is(parse_error("num_layers: 4\n  hidden_size: 3\n"), "m.yaml:2: "));
}

TEST(ModelIoErrors, MissingFile) {
  EXPECT_EQ(error_of([] { load_model_file("/nonexistent/model.yaml"); }),
            "model '/nonexistent/model.yaml': no such file");
  EXPECT_TRUE(message_is(error_of([] { load_model_file(TRAINPLAN_TEST_DATA_DIR); }), "", "a directory; give a file in it"));
}

TEST(ModelIoErrors, BadValueNamesFileLineAndField) {
  EXPECT_EQ(parse_error("name: x\nnum_layers: -3\n"),
            "m.yaml:2: field 'num_layers': expected a positive integer, got -3");
  EXPECT_EQ(parse_error(R"({"num_layers": -3})", "m.json"),
            "m.json: field 'num_layers': expected a positive integer, got -3");
  EXPECT_EQ(parse_error("hidden_size: big\n"),
            "m.yaml:1: field 'hidden_size': expected a positive integer, got \"big\"");
  EXPECT_EQ(parse_error("hidden_size: 4096.5\n"),
            "m.yaml:1: field 'hidden_size': expected a positive integer, got 4096.5");
  EXPECT_EQ(parse_error("tie_embeddings: 1\n"), "m.yaml:1: field 'tie_embeddings': expected true or false, got 1");
  EXPECT_EQ(parse_error("hidden_dropout: 1.5\n"),
            "m.yaml:1: field 'hidden_dropout': expected a number in [0, 1), got 1.5");
  EXPECT_EQ(parse_error("moe:\n  num_experts: -1\n"),
            "m.yaml:2: field 'moe.num_experts': expected a non-negative integer, got -1");
  EXPECT_EQ(parse_error("moe: 4\n"), "m.yaml:1: field 'moe': expected a mapping of moe fields, got 4");
  EXPECT_TRUE(message_is(parse_error("position_embedding: rop\n"),
                         "m.yaml:1: field 'position_embedding': unknown value 'rop'", "'rope'"));
  EXPECT_TRUE(message_is(parse_error("- 1\n- 2\n"), "", "m.yaml: expected a mapping of model fields"));
  EXPECT_EQ(parse_error(""), "m.yaml: the model file is empty");
}

TEST(ModelIoErrors, AbsurdSizes) {
  EXPECT_EQ(parse_error("hidden_size: 2000000000000\n"),
            "m.yaml:1: field 'hidden_size': 2000000000000 is absurdly large (more than 2^40)");
  EXPECT_EQ(parse_error("num_layers: 99999999999999999999999\n"),
            "m.yaml:1: field 'num_layers': 99999999999999999999999 is absurdly large (more than 2^40)");
  EXPECT_TRUE(message_is(parse_error(R"({"vocab_size": 18446744073709551615})", "m.json"),
                         "m.json: field 'vocab_size': 18446744073709551615 is absurdly large"));
  EXPECT_TRUE(message_is(parse_error(R"({"model_type": "llama", "num_hidden_layers": 1e300})", "c.json"),
                         "c.json: field 'num_hidden_layers': "));
}

TEST(ModelIoErrors, UnknownKeysSuggest) {
  EXPECT_EQ(parse_error("num_layers: 4\nnum_layer: 4\n"),
            "m.yaml:2: unknown field 'num_layer' (did you mean 'num_layers'?)");
  EXPECT_EQ(parse_error("moe:\n  num_expert: 4\n"),
            "m.yaml:2: unknown field 'moe.num_expert' (did you mean 'num_experts'?)");
  EXPECT_EQ(parse_error(R"({"hiden_size": 4})", "m.json"),
            "m.json: unknown field 'hiden_size' (did you mean 'hidden_size'?)");
  EXPECT_EQ(parse_error("num_layers: 4\nnum_layers: 5\n"), "m.yaml:2: duplicate key 'num_layers'");
}

TEST(ModelIoErrors, UnknownBase) {
  EXPECT_TRUE(message_is(parse_error("name: x\nbase: llama2-7\n"), "m.yaml:2: field 'base': unknown model 'llama2-7'",
                         "did you mean 'llama2-7b'"));
}

TEST(ModelIoErrors, FinalizeErrorsCarryFileAndLine) {
  EXPECT_TRUE(message_is(
      parse_error("num_layers: 2\nhidden_size: 100\nnum_attention_heads: 3\nvocab_size: 10\nseq_length: 8\n"),
      "m.yaml:2: model field 'hidden_size' (100) must be ", "divisible"));
  EXPECT_TRUE(message_is(parse_error("num_layers: 2\nhidden_size: 8\nnum_attention_heads: 2\nvocab_size: 10\n"
                                     "seq_length: 8\nnum_query_groups: 3\n"),
                         "m.yaml:3: model field 'num_attention_heads' (2) must be divisible by model field "
                         "'num_query_groups' (3)"));
  EXPECT_TRUE(message_is(parse_error("num_layers: 2\nhidden_size: 8\nnum_attention_heads: 2\nvocab_size: 10\n"
                                     "seq_length: 8\nkv_channels: 9999999\n"),
                         "m.yaml:6: model field 'kv_channels'"));
  EXPECT_EQ(parse_error("hidden_size: 8\n"),
            "m.yaml: missing field 'num_layers' (or start from a catalog model with 'base:')");
  EXPECT_EQ(parse_error("num_layers: 2\nhidden_size: 8\nnum_attention_heads: 2\nvocab_size: 10\n"),
            "m.yaml: missing field 'seq_length' (or start from a catalog model with 'base:')");
}

TEST(ModelIoErrors, UnknownHfModelTypeListsSupported) {
  EXPECT_EQ(parse_error(R"({"model_type": "falcon", "hidden_size": 4})", "c.json"),
            "c.json: field 'model_type': unsupported Hugging Face model_type 'falcon'; supported: bloom, deepseek, "
            "deepseek_v2, deepseek_v3, gemma2, gemma3, gemma3_text, gpt2, gpt_neox, gpt_oss, llama, llama4, llama4_text, "
            "mistral, mixtral, nemotron_h, opt, qwen2, qwen2_moe, qwen3, qwen3_moe");
  EXPECT_TRUE(message_is(parse_error(R"({"architectures": ["FalconForCausalLM"]})", "c.json"),
                         "c.json: field 'architectures': unsupported architecture 'FalconForCausalLM'",
                         "llama, llama4"));
}

TEST(ModelIoErrors, HfBadFields) {
  EXPECT_EQ(parse_error(R"({"model_type": "llama", "num_hidden_layers": 2})", "c.json"),
            "c.json: missing field 'hidden_size'");
  EXPECT_EQ(parse_error(R"({"model_type": "bloom", "n_layer": 2})", "c.json"),
            "c.json: missing field 'hidden_size' or 'n_embed'");
  EXPECT_EQ(parse_error(R"({"model_type": "gpt2", "n_layer": -3})", "c.json"),
            "c.json: field 'n_layer': expected a positive integer, got -3");
  EXPECT_TRUE(message_is(parse_error(R"({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64,
      "intermediate_size": 224, "num_attention_heads": 4, "vocab_size": 1000, "hidden_act": "tanh"})",
                                     "c.json"),
                         "c.json: field 'hidden_act': activation 'tanh' is not modelled"));
  EXPECT_TRUE(message_is(parse_error(R"({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64,
      "intermediate_size": 224, "num_attention_heads": 4, "vocab_size": 1000, "attention_bias": true})",
                                     "c.json"),
                         "c.json: field 'attention_bias': biases on attention but not on the MLP"));
}

// ---- resolve_model -----------------------------------------------------------------------------------

TEST(ModelIoResolve, CatalogNamePathAndUnknown) {
  EXPECT_EQ(resolve_model("llama3-8b").name, "llama3-8b");
  EXPECT_EQ(resolve_model(hf("gpt2.json")).num_layers, 12);
  EXPECT_TRUE(
      message_is(error_of([] { resolve_model("llama3-8"); }), "unknown model 'llama3-8'", "did you mean 'llama3-8b'"));
  EXPECT_EQ(error_of([] { resolve_model("missing.yaml"); }), "model 'missing.yaml': no such file");
}

}  // namespace
}  // namespace trainplan
