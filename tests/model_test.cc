// Exact parameter counts (docs/formulas.md §1), pinned against published figures.
#include <gtest/gtest.h>

#include "trainplan/error.h"
#include "trainplan/model.h"

namespace trainplan {
namespace {

std::int64_t params_of(const char* name) { return count_parameters(find_model(name).spec, 1).total; }

TEST(ModelParameters, PublishedCounts) {
  EXPECT_EQ(params_of("bloom-176b"), 176'247'271'424);   // BLOOM paper / HF model card
  EXPECT_EQ(params_of("llama2-7b"), 6'738'415'616);      // HF Llama-2-7b-hf safetensors index
  EXPECT_EQ(params_of("llama3-8b"), 8'030'261'248);      // HF Meta-Llama-3-8B
  EXPECT_EQ(params_of("llama3-70b"), 70'553'706'496);    // HF Meta-Llama-3-70B
  EXPECT_EQ(params_of("mixtral-8x7b"), 46'702'792'704);  // HF Mixtral-8x7B-v0.1
}

TEST(ModelParameters, OtherCatalogModelsHandComputed) {
  // Llama-2-13B and 70B, HF counts.
  EXPECT_EQ(params_of("llama2-13b"), 13'015'864'320);
  EXPECT_EQ(params_of("llama2-70b"), 68'976'648'192);
  // Llama-3.1-405B: 126·(16384·(16384+2·1024) + 16384² + 3·16384·53248 + 2·16384) + 2·128256·16384 + 16384.
  EXPECT_EQ(params_of("llama3.1-405b"), 405'853'388'800);
  // Mixtral-8x22B: 140.6B (HF model card "141B").
  EXPECT_EQ(params_of("mixtral-8x22b"), 140'630'071'296);
  // GPT-3 175B with vocabulary 50257 padded to 50304: 96·(12h²+13h) + 50304h + 2048h + 2h.
  const std::int64_t h = 12288;
  EXPECT_EQ(params_of("gpt3-175b"), 96 * (12 * h * h + 13 * h) + 50304 * h + 2048 * h + 2 * h);
}

TEST(ModelParameters, Seed003GptCountsQkvBiasAndFinalNorm) {
  // seeds/003: 32 layers, hidden 4096, SwiGLU, vocabulary padded to 50,432, learned positions 2048,
  // biases, tied embeddings. Its tool printed 6,642,245,632: QKV bias counted as h, no final norm.
  model_spec m;
  m.num_layers = 32;
  m.hidden_size = 4096;
  m.num_attention_heads = 32;
  m.seq_length = 2048;
  m.padded_vocab_size = 50432;
  m.activation = activation_kind::swiglu;
  finalize_model(m);
  EXPECT_EQ(m.ffn_hidden_size, 10880);  // int(4h·2/3 / 64)·64
  const parameter_breakdown p = count_parameters(m, 1);
  EXPECT_EQ(p.total, 6'642'515'968);
  EXPECT_EQ(p.dense_layer.qkv_bias, 3 * 4096);
  EXPECT_EQ(p.final_norm, 2 * 4096);
  EXPECT_EQ(p.total - 6'642'245'632, 32 * 2 * 4096 + 2 * 4096);
}

TEST(ModelParameters, GptLayerIs12hSquaredPlus13h) {
  const model_spec& m = find_model("megatron-530b").spec;
  const std::int64_t h = m.hidden_size;
  EXPECT_EQ(count_parameters(m, 1).dense_layer.total(), 12 * h * h + 13 * h);
}

TEST(ModelParameters, GqaQkvWidth) {
  const model_spec& m = find_model("llama3-70b").spec;
  const parameter_breakdown p = count_parameters(m, 1);
  EXPECT_EQ(p.dense_layer.qkv_weight, 8192 * (8192 + 2 * 8 * 128));
  EXPECT_EQ(p.dense_layer.qkv_bias, 0);
}

TEST(ModelParameters, MixtralActiveParameters) {
  const parameter_breakdown p = count_parameters(find_model("mixtral-8x7b").spec, 1);
  EXPECT_EQ(p.num_moe_layers, 32);
  EXPECT_EQ(p.moe_layer.router, 4096 * 8);
  EXPECT_EQ(p.moe_layer.expert_each, 3 * 4096 * 14336);
  EXPECT_EQ(p.active_per_token, 12'879'925'248);  // 46.7B − 32·6 experts
}

TEST(ModelParameters, VocabularyPaddingFollowsTp) {
  model_spec m = find_model("gpt3-175b").spec;
  EXPECT_EQ(padded_vocab(m, 1), 50304);
  EXPECT_EQ(padded_vocab(m, 8), 51200);  // multiple of 128·8
  m.padded_vocab_size = 50257;
  EXPECT_EQ(padded_vocab(m, 8), 50257);  // explicit: no further padding
  EXPECT_EQ(padded_vocab(find_model("bloom-176b").spec, 4), 250880);
}

TEST(ModelParameters, SharedExpertsAndLayerFrequency) {
  model_spec m = find_model("mixtral-8x7b").spec;
  m.moe.layer_freq = 2;
  m.moe.shared_expert_ffn_hidden_size = 2048;
  finalize_model(m);
  const parameter_breakdown p = count_parameters(m, 1);
  EXPECT_EQ(p.num_moe_layers, 16);
  EXPECT_EQ(p.num_dense_layers, 16);
  EXPECT_EQ(p.moe_layer.fc1_weight, 4096 * 2048 * 2);
  EXPECT_EQ(p.moe_layer.fc2_weight, 2048 * 4096);
}

/// The input_error message finalize_model gives for `m`, or "no error".
std::string finalize_error(model_spec m) {
  try {
    finalize_model(m);
  } catch (const input_error& e) {
    return e.what();
  }
  return "no error";
}

TEST(ModelValidation, RejectsBadFieldsNamingThem) {
  model_spec m = find_model("llama2-7b").spec;
  m.num_layers = 0;  // never set (flags and files refuse an explicit 0 before it gets here)
  EXPECT_EQ(finalize_error(m),
            "model field 'num_layers' (--num-layers) is missing: give it, or a --model to start from");
  m.num_layers = 20000;
  EXPECT_EQ(finalize_error(m),
            "model field 'num_layers' (--num-layers) must be a positive integer no larger than 16384, got 20000");
  m = find_model("llama2-7b").spec;
  m.num_query_groups = 5;
  EXPECT_THROW(finalize_model(m), input_error);
  m = find_model("llama2-7b").spec;
  m.kv_channels = 0;
  m.hidden_size = 4095;
  EXPECT_EQ(finalize_error(m),
            "--hidden-size (4095) must be divisible by --num-attention-heads (32) unless --kv-channels is given");
}

TEST(ModelValidation, AbsurdSizesDoNotWrap) {
  model_spec m = find_model("llama2-7b").spec;
  m.hidden_size = 1ll << 40;
  EXPECT_THROW(finalize_model(m), input_error);
  m = find_model("mixtral-8x7b").spec;
  m.moe.num_experts = 1 << 14;
  m.ffn_hidden_size = 1 << 22;
  m.moe.expert_ffn_hidden_size = 1 << 22;
  m.hidden_size = 1 << 22;
  m.kv_channels = 0;
  m.num_layers = 1 << 14;
  finalize_model(m);
  try {
    count_parameters(m, 1);
    FAIL() << "the count overflows int64 and must be reported";
  } catch (const input_error& e) {
    EXPECT_NE(std::string(e.what()).find("overflows a 64-bit count"), std::string::npos);
  }
}

TEST(ModelCatalog, UnknownNameSuggestsNearest) {
  try {
    find_model("llama3-8");
    FAIL();
  } catch (const input_error& e) {
    EXPECT_NE(std::string(e.what()).find("did you mean 'llama3-8b'"), std::string::npos) << e.what();
  }
  EXPECT_EQ(model_names().size(), 15u);
}

}  // namespace
}  // namespace trainplan
