// Exact parameter counts (docs/formulas.md §1), pinned against published figures.
#include <gtest/gtest.h>
#include <gmock/gmock.h>

#include "trainplan/cli/cli.h"
#include "trainplan/core/base/error.h"
#include "trainplan/core/model/model.h"

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
            "model.num_layers is missing: give it, or a model to start from");
  m.num_layers = 20000;
  EXPECT_EQ(finalize_error(m),
            "model.num_layers must be a positive integer no larger than 16384, got 20000");
  m = find_model("llama2-7b").spec;
  m.num_query_groups = 5;
  EXPECT_THROW(finalize_model(m), input_error);
  m = find_model("llama2-7b").spec;
  m.kv_channels = 0;
  m.hidden_size = 4095;
  EXPECT_EQ(finalize_error(m),
            "model.hidden_size (4095) must be divisible by model.num_attention_heads (32) unless model.kv_channels is "
            "given");
  // The command line names the fields by its flags (cli_message).
  try {
    finalize_model(m);
  } catch (const input_error& e) {
    EXPECT_EQ(cli_message(e),
              "--hidden-size (4095) must be divisible by --num-attention-heads (32) unless --kv-channels is given");
  }
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
  EXPECT_EQ(model_names().size(), 33u);
}

// ---- the models people train now (issue 11; docs/formulas.md §1.7-§1.9) ------------------------------

/// A published figure and the count it must equal (or, where the source rounds, lie within).
struct published_count {
  const char* model;
  std::int64_t total;          ///< main model (MTP excluded), exact unless `rounding` > 0
  std::int64_t active;         ///< per token, with the input embedding; 0: dense
  std::int64_t rounding;       ///< the source's rounding of `total` (0: exact)
  const char* source;
};

// Each total is the hand sum of the config's matrices (docs/formulas.md §1.9 works DeepSeek-V3 and
// gpt-oss through), checked against the rounded published figure in the comment.
const published_count kPublished[] = {
    {"deepseek-v3", 671'026'419'200, 37'552'297'472, 0, "671B total, 37B active (arXiv 2412.19437)"},
    {"qwen2-57b-a14b", 57'408'658'944, 14'249'270'784, 0, "57B total, 14B active (arXiv 2407.10671)"},
    {"qwen3-0.6b", 596'049'920, 0, 0, "0.6B, 0.44B non-embedding (model card; tied: one 155,582,464 table)"},
    {"qwen3-1.7b", 1'720'574'976, 0, 0, "1.7B, 1.4B non-embedding (model card)"},
    {"qwen3-4b", 4'022'468'096, 0, 0, "4.0B, 3.6B non-embedding (model card)"},
    {"qwen3-8b", 8'190'735'360, 0, 0, "8.2B (model card)"},
    {"qwen3-32b", 32'762'123'264, 0, 0, "32.8B (model card)"},
    {"qwen3-30b-a3b", 30'532'122'624, 3'353'032'704, 0, "30.5B total, 3.3B active (model card)"},
    {"qwen3-235b-a22b", 235'093'634'560, 22'190'763'520, 0, "235B total, 22B active (model card)"},
    {"gpt-oss-20b", 20'914'757'184, 4'187'440'704, 0, "20.91B total, 3.61B active without embedding (model card)"},
    {"gpt-oss-120b", 116'829'156'672, 5'711'982'912, 0, "116.83B total, 5.13B active without embedding"},
    {"llama4-scout", 107'769'861'120, 17'172'894'720, 0, "17B active; text decoder of the 109B"},
    {"llama4-maverick", 400'711'848'960, 17'184'691'200, 0, "400B total, 17B active"},
    {"gemma2-9b", 917'504'000 + 8'324'201'984, 0, 0, "Gemma 2 report Table 2, exact"},
    {"gemma2-27b", 1'179'648'000 + 26'047'480'320, 0, 0, "Gemma 2 report Table 2, exact"},
};

TEST(ModelFamilies, ParameterCountsEqualThePublishedFigures) {
  for (const published_count& c : kPublished) {
    SCOPED_TRACE(c.model);
    const parameter_breakdown p = count_parameters(find_model(c.model).spec, 1);
    EXPECT_EQ(p.main_model(), c.total) << c.source;
    EXPECT_EQ(p.active_per_token, c.active == 0 ? p.total : c.active) << c.source;
  }
}

TEST(ModelFamilies, RoundedPublishedFiguresAgree) {
  // The rounded figures the sources print, from the exact counts above: a second, independent check
  // that the hand sums are the published models.
  auto billions = [](const char* name, bool active, bool without_embedding = false) {
    const parameter_breakdown p = count_parameters(find_model(name).spec, 1);
    const std::int64_t n = (active ? p.active_per_token : p.main_model()) - (without_embedding ? p.word_embeddings : 0);
    return static_cast<double>(n) / 1e9;
  };
  EXPECT_NEAR(billions("deepseek-v3", false), 671, 0.5);
  EXPECT_NEAR(billions("deepseek-v3", true), 37, 0.6);
  EXPECT_NEAR(billions("gpt-oss-120b", false), 116.83, 0.005);
  EXPECT_NEAR(billions("gpt-oss-120b", true, true), 5.13, 0.005);
  EXPECT_NEAR(billions("gpt-oss-20b", false), 20.91, 0.005);
  EXPECT_NEAR(billions("gpt-oss-20b", true, true), 3.61, 0.005);
  EXPECT_NEAR(billions("qwen3-30b-a3b", false), 30.5, 0.05);
  EXPECT_NEAR(billions("qwen3-30b-a3b", true), 3.3, 0.06);
  EXPECT_NEAR(billions("qwen3-235b-a22b", true), 22, 0.5);
  EXPECT_NEAR(billions("llama4-maverick", false), 400, 1);
  EXPECT_NEAR(billions("llama4-maverick", true), 17, 0.5);
  // Gemma 3 27B: 25,600M non-embedding (Gemma 3 report Table 1, rounded to millions).
  const parameter_breakdown g3 = count_parameters(find_model("gemma3-27b").spec, 1);
  EXPECT_NEAR(static_cast<double>(g3.total - g3.word_embeddings) / 1e6, 25'600, 0.5);
  EXPECT_EQ(g3.word_embeddings, 262'208ll * 5376);
}

TEST(ModelFamilies, DeepSeekV3ModulesByHand) {
  // §1.7: MLA with q_lora 1536, kv_lora 512, heads 128 × (128 + 64) query/key, 128 value dims.
  const parameter_breakdown p = count_parameters(find_model("deepseek-v3").spec, 1);
  const std::int64_t h = 7168;
  EXPECT_EQ(p.dense_layer.qkv_down_weight, h * (1536 + 512 + 64));
  EXPECT_EQ(p.dense_layer.qkv_weight, 1536ll * 128 * 192 + 512ll * 128 * (128 + 128));
  EXPECT_EQ(p.dense_layer.attention_norms, 1536 + 512);
  EXPECT_EQ(p.dense_layer.proj_weight, 128ll * 128 * h);
  EXPECT_EQ(p.num_dense_layers, 3);
  EXPECT_EQ(p.num_moe_layers, 58);
  EXPECT_EQ(p.moe_layer.router, 256 * h + 256);  // gate weight + e_score_correction_bias
  EXPECT_EQ(p.moe_layer.expert_each, 3ll * h * 2048);
  EXPECT_EQ(p.moe_layer.fc1_weight, 2ll * h * 2048);  // the shared expert
  // §1.8: MTP = enorm, hnorm, final norm, eh_proj 2h→h, and an MoE layer.
  EXPECT_EQ(p.mtp(), 3 * h + 2 * h * h + p.moe_layer.total());
}

TEST(ModelFamilies, SharedExpertGateIsCounted) {
  // Qwen2-MoE's shared_expert_gate (h → 1) was left out before; 28 layers × 3584.
  const parameter_breakdown p = count_parameters(find_model("qwen2-57b-a14b").spec, 1);
  EXPECT_EQ(p.moe_layer.shared_expert_gate, 3584);
  model_spec no_gate = find_model("qwen2-57b-a14b").spec;
  no_gate.moe.shared_expert_gate = false;
  EXPECT_EQ(p.total - count_parameters(no_gate, 1).total, 28 * 3584);
}

TEST(ModelFamilies, WindowPatternsFollowMegatronAndTheConfigs) {
  // Megatron is_layer_window_attention: 1-based layer_number % skip_freq != 0 is windowed.
  const model_spec& gemma3 = find_model("gemma3-27b").spec;  // 5 local : 1 global
  EXPECT_TRUE(gemma3.is_window_layer(0));
  EXPECT_FALSE(gemma3.is_window_layer(5));
  EXPECT_TRUE(gemma3.is_window_layer(6));
  const model_spec& oss = find_model("gpt-oss-120b").spec;  // layer_types: sliding, full, sliding, ...
  EXPECT_TRUE(oss.is_window_layer(0));
  EXPECT_FALSE(oss.is_window_layer(1));
  // Llama 4 chunks of 8192 do not limit an 8192-token sequence: no layer counts as windowed.
  const model_spec& scout = find_model("llama4-scout").spec;
  EXPECT_FALSE(scout.is_window_layer(0));
  model_spec longer = scout;
  longer.seq_length = 32768;
  EXPECT_TRUE(longer.is_window_layer(0));
  EXPECT_FALSE(longer.is_window_layer(3));
  // Maverick: MoE on layers 1, 3, 5, ... (interleave_moe_layer_step 2).
  const model_spec& maverick = find_model("llama4-maverick").spec;
  EXPECT_FALSE(maverick.is_moe_layer(0));
  EXPECT_TRUE(maverick.is_moe_layer(1));
  EXPECT_EQ(maverick.num_moe_layers(), 24);
}

TEST(ModelFamilies, BadInputNamesTheField) {
  model_spec m = find_model("deepseek-v3").spec;
  auto message = [](model_spec x) {
    try {
      finalize_model(x);
    } catch (const input_error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  // A rank above the hidden size is a shape Megatron runs (its CI: q_lora_rank 1536 at hidden 1024); a
  // rank of zero is not.
  m.mla.kv_lora_rank = 8192;
  m.mla.q_lora_rank = 8192;
  EXPECT_EQ(message(m), "no error");
  m.mla.q_lora_rank = -1;
  EXPECT_THAT(message(m), ::testing::HasSubstr("model.mla.q_lora_rank must be"));
  m = find_model("deepseek-v3").spec;
  m.moe.layer_pattern = {0, 1, 1};
  EXPECT_THAT(message(m), ::testing::HasSubstr("model.moe.layer_pattern has 3 entries; it needs one per layer (61)"));
  m = find_model("deepseek-v3").spec;
  m.moe.router_num_groups = 7;
  EXPECT_THAT(message(m), ::testing::HasSubstr("model.moe.num_experts (256) must be divisible by model.moe.router_num_groups (7)"));
  // MLA's projections take no bias (Megatron-Core multi_latent_attention.py: bias=False): with
  // add_bias_linear only the output projection (h) and the MLPs carry biases; add_qkv_bias has nothing to bias.
  m = find_model("deepseek-v3").spec;
  m.add_qkv_bias = true;
  EXPECT_THAT(message(m), ::testing::HasSubstr("model.add_qkv_bias with multi-latent attention: MLA has no QKV projection"));
  m = find_model("deepseek-v3").spec;
  const parameter_breakdown plain = count_parameters(m, 1);
  m.add_bias_linear = true;
  EXPECT_EQ(message(m), "no error");
  const parameter_breakdown biased = count_parameters(m, 1);
  EXPECT_EQ(biased.dense_layer.qkv_bias, 0);
  EXPECT_EQ(biased.dense_layer.proj_bias, 7168);
  EXPECT_EQ(biased.dense_layer.fc1_bias, 2 * 18432);
  EXPECT_EQ(biased.dense_layer.fc2_bias, 7168);
  EXPECT_EQ(biased.moe_layer.expert_each - plain.moe_layer.expert_each, 2 * 2048 + 7168);
  m = find_model("gemma2-9b").spec;
  m.window_pattern = {1, 0};
  EXPECT_THAT(message(m), ::testing::HasSubstr("model.window_pattern has 2 entries"));
}

// count_layer_kinds answers without asking each layer when no layer differs (issue 30's hot path): the
// same counts as kind_of_layer, layer by layer, on every catalog model (dense, windowed with a skip
// frequency or a pattern, all-MoE, MoE after dense layers, hybrid) and on every range of a few.
TEST(Model, LayerKindCountsEqualTheLayerByLayerKinds) {
  for (const catalog_model& c : model_catalog()) {
    model_spec m = c.spec;
    finalize_model(m);
    for (std::int64_t first = 0; first < m.num_layers; first += std::max<std::int64_t>(1, m.num_layers / 7)) {
      for (std::int64_t count : {std::int64_t{0}, std::int64_t{1}, std::int64_t{3}, m.num_layers - first}) {
        layer_counts want{};
        for (std::int64_t i = first; i < first + count; ++i) ++want[static_cast<std::size_t>(m.kind_of_layer(i))];
        EXPECT_EQ(m.count_layer_kinds(first, count), want) << m.name << " [" << first << ", +" << count << ")";
      }
    }
  }
  // A windowed model without a skip frequency: every layer windowed, counted without a loop.
  model_spec w = find_model("llama2-7b").spec;
  w.sliding_window = 1024;
  finalize_model(w);
  EXPECT_EQ(w.count_layer_kinds(0, 32)[static_cast<std::size_t>(layer_kind::dense_window)], 32);
}

}  // namespace
}  // namespace trainplan
