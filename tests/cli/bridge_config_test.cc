// Megatron-Bridge jobs (issue 29): the resolved ConfigContainer YAML Megatron-Bridge writes beside a run,
// with mixed_precision and comm_overlap applied as runtime_config_update applies them; each field becomes
// the Megatron-Core flag of the same meaning, a field at Megatron-Core's default changes nothing, one not
// modelled is refused naming it, its value and file:line.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>

#include "args_test_support.h"
#include "test_support.h"
#include "trainplan/cli/args.h"
#include "trainplan/core/estimate/memory.h"
#include "trainplan/core/model/model.h"

namespace trainplan {
namespace {

using ::testing::AllOf;
using ::testing::Contains;
using ::testing::HasSubstr;
using namespace args_testing;  // NOLINT(google-build-using-namespace): the shared helpers

std::string bridge_file(const std::string& name) { return testing::data_path("launch/bridge/" + name); }

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// A ConfigContainer of our own: the header, then `body` (two-space YAML).
std::string container(const std::string& name, const std::string& body) {
  return write_temp(name, "_target_: megatron.bridge.training.config.ConfigContainer\n" + body);
}

/// A small dense model under Megatron-Bridge, PP 4 with VPP 2, DP 2 on 16 GPUs.
const char* kSmallModel =
    "model:\n"
    "  _target_: megatron.bridge.models.gpt_provider.GPTModelProvider\n"
    "  num_layers: 16\n"
    "  hidden_size: 2048\n"
    "  ffn_hidden_size: 8192\n"
    "  num_attention_heads: 16\n"
    "  num_query_groups: 16\n"
    "  seq_length: 2048\n"
    "  vocab_size: 50000\n"
    "  tensor_model_parallel_size: 2\n"
    "  pipeline_model_parallel_size: 4\n"
    "  virtual_pipeline_model_parallel_size: 2\n"
    "  sequence_parallel: true\n"
    "  overlap_p2p_comm: false\n"
    "  fp8: null\n"
    "  bf16: false\n"
    "train:\n"
    "  micro_batch_size: 1\n"
    "  global_batch_size: 64\n"
    "ddp:\n"
    "  use_distributed_optimizer: true\n"
    "  overlap_grad_reduce: false\n"
    "  grad_reduce_in_fp32: true\n";

args_t bridge(const std::string& path, const args_t& own = {}) {
  return concat({"--cluster", "dgx-h100", "--num-gpus", "16", "--bridge-config", path}, own);
}

// Megatron-Bridge's own dry-run config of gpt-oss-120b on H100 (scripts/performance/dryrun_configs, every
// field written out): planned unchanged, the model equal to the catalog's gpt-oss-120b parameter for parameter.
TEST(BridgeConfig, GptOss120bDryRunConfigIsTheJob) {
  const parsed_job pj = parse({"--cluster", "dgx-h100", "--num-gpus", "64", "--bridge-config",
                               bridge_file("gpt_oss_120b_pretrain_h100_fp8_mx_v1.yaml")});
  EXPECT_EQ(count_parameters(pj.job.model, 1).total, count_parameters(find_model("gpt-oss-120b").spec, 1).total);
  EXPECT_EQ(pj.job.parallel.tp, 1);
  EXPECT_EQ(pj.job.parallel.pp, 4);
  EXPECT_EQ(pj.job.parallel.ep, 8);
  EXPECT_EQ(pj.job.training.micro_batch_size, 1);
  EXPECT_EQ(pj.job.training.global_batch_size, 512);
  EXPECT_EQ(pj.job.model.seq_length, 4096);
  EXPECT_EQ(pj.job.training.precision, dtype::bf16);
  EXPECT_EQ(pj.job.training.fp8, fp8_format::none);  // mixed_precision.fp8 is null in this dump
  EXPECT_EQ(pj.job.training.zero_stage, 1);           // ddp.use_distributed_optimizer
  EXPECT_EQ(pj.job.training.recompute_modules, static_cast<std::uint8_t>(recompute_module::layernorm) |
                                                   static_cast<std::uint8_t>(recompute_module::moe_act));
  EXPECT_TRUE(pj.job.training.moe_grouped_gemm);  // model.moe_grouped_gemm: TEGroupedMLP (§5.1.1)
  EXPECT_THAT(pj.ignored_flags, Contains("gpt_oss_120b_pretrain_h100_fp8_mx_v1.yaml:checkpoint.*"));
  EXPECT_THAT(pj.ignored_flags, Contains(HasSubstr("model.cuda_graph_scope=full (read with CUDA graphs alone)")));
  // Its YaRN (position_embedding_type yarn, yarn_rotary_scaling_factor 32, the mscales null) as the catalog's:
  // a concentration of 1.35, Megatron-Core's unfused RoPE despite apply_rope_fusion (§5.3).
  EXPECT_DOUBLE_EQ(pj.job.model.rope_yarn_factor, 32.0);
  EXPECT_TRUE(pj.job.training.rope_fusion);
  EXPECT_THAT(pj.ignored_flags, Not(Contains(HasSubstr("yarn_rotary_scaling_factor"))));
  // One mscale alone is not Megatron-Core's ratio: yarn_mscale 0 with yarn_mscale_all_dim null is still
  // m(32, 1) = 1.35 (the unfused kernel); with both 0 the ratio is 1 (TE's).
  std::string text = read_text(bridge_file("gpt_oss_120b_pretrain_h100_fp8_mx_v1.yaml"));
  text.replace(text.find("yarn_mscale: null"), 17, "yarn_mscale: 0.0");
  const std::string alone = write_temp("bridge_yarn_alone.yaml", text);
  EXPECT_DOUBLE_EQ(parse({"--cluster", "dgx-h100", "--num-gpus", "64", "--bridge-config", alone}).job.model.rope_yarn_factor,
                   32.0);
  text.replace(text.find("yarn_mscale_all_dim: null"), 25, "yarn_mscale_all_dim: 0.0");
  const std::string both = write_temp("bridge_yarn_both.yaml", text);
  EXPECT_DOUBLE_EQ(parse({"--cluster", "dgx-h100", "--num-gpus", "64", "--bridge-config", both}).job.model.rope_yarn_factor,
                   0.0);
}

// Megatron-FSDP (dist.use_megatron_fsdp, or ddp's, with ddp.data_parallel_sharding_strategy): gpt-oss-120b's
// dry-run config at PP 1 with optim_grads_params runs ZeRO stage 3 under Megatron; at the config's PP 4 it
// is refused naming both keys; its fp32 main parameters are what the model assumes.
TEST(BridgeConfig, MegatronFsdpFromTheDistOrDdpSection) {
  std::string text = read_text(bridge_file("gpt_oss_120b_pretrain_h100_fp8_mx_v1.yaml"));
  auto set = [&](const std::string& from, const std::string& to) { text.replace(text.find(from), from.size(), to); };
  const std::size_t dist = text.find("\ndist:\n");
  const std::string off = "  use_megatron_fsdp: false\n";
  text.replace(text.find(off, dist), off.size(), "  use_megatron_fsdp: true\n");
  const std::string at_pp4 = write_temp("gpt_oss_fsdp_pp4.yaml", text);
  EXPECT_THAT(error_of({"--cluster", "dgx-h100", "--num-gpus", "64", "--bridge-config", at_pp4}),
              AllOf(HasSubstr("dist.use_megatron_fsdp"), HasSubstr("model.pipeline_model_parallel_size"),
                    HasSubstr("is not modelled")));
  set("  pipeline_model_parallel_size: 4\n", "  pipeline_model_parallel_size: 1\n");
  set("  data_parallel_sharding_strategy: no_shard\n", "  data_parallel_sharding_strategy: optim_grads_params\n");
  const parsed_job pj =
      parse({"--cluster", "dgx-h100", "--num-gpus", "64", "--bridge-config", write_temp("gpt_oss_fsdp.yaml", text)});
  EXPECT_TRUE(pj.job.training.megatron_fsdp);
  EXPECT_EQ(pj.job.training.zero_stage, 3);
}

// The other dry-run configs of the corpus are refused naming the field trainplan does not model.
TEST(BridgeConfig, DryRunConfigsRefuseWhatIsNotModelledByName) {
  EXPECT_THAT(error_of({"--cluster", "dgx-b200", "--num-gpus", "64", "--bridge-config",
                        bridge_file("qwen3_235b_a22b_pretrain_b200_nvfp4_v1.yaml")}),
              AllOf(HasSubstr("mixed_precision.fp4 (as --fp4-format e2m1)"), HasSubstr("which trainplan does not model")));
  EXPECT_THAT(error_of({"--cluster", "dgx-b200", "--num-gpus", "8", "--bridge-config",
                        bridge_file("llama3_8b_sft_gb200_fp8_mx_v1.yaml")}),
              HasSubstr("mixed_precision.reuse_grad_buf_for_mxfp8_param_ag: true"));
}

// DeepSeek-V3's H100 dry-run config plans unchanged: HybridEP dispatch at 32 SMs, the stage outputs kept,
// the MLP recomputed at TP 2. HybridEP's buffers (formulas §3.8): 4,096 tokens / TP 2 with SP a rank, EP 64
// over 8 nodes of 8, 4 local experts: 2,048 × 64 + 2,048 × 7 tokens of 2·7,168 + 4·4·8 bytes.
TEST(BridgeConfig, DeepSeekV3H100DryRunConfigPlansWithHybridEp) {
  const parsed_job pj = parse({"--cluster", "dgx-h100", "--num-gpus", "1024", "--bridge-config",
                               bridge_file("deepseek_v3_pretrain_h100_fp8_sc_v1.yaml")});
  EXPECT_EQ(pj.job.parallel.moe_dispatcher, moe_dispatcher_kind::flex);
  EXPECT_EQ(pj.job.parallel.flex_backend, moe_flex_backend::hybridep);
  EXPECT_EQ(pj.job.parallel.flex_dispatch_sms, 32);
  EXPECT_TRUE(pj.job.training.keep_pipeline_outputs);
  EXPECT_TRUE(pj.job.training.recomputes(recompute_module::mlp));
  const memory_report mem = estimate_memory(pj.job);
  const double per_token = 2 * 7168 + 4 * 4 * 8;
  for (const stage_memory& s : mem.stages) {
    EXPECT_DOUBLE_EQ(s.dispatch_buffer_bytes, (2048.0 * 64 + 2048.0 * 7) * per_token) << "stage " << s.stage;
  }
}

// DeepSeek-V3's dry-run config with the all-to-all dispatcher: the HybridEP fields fall inert; MLA,
// 256 experts with the dense first three layers (moe_layer_freq as a list), MTP and the pipeline layout
// are read; FP8 comes from mixed_precision (blockwise) although the model section says null.
TEST(BridgeConfig, DeepSeekV3TakesMixedPrecisionOverTheModelSection) {
  std::string text = read_text(bridge_file("deepseek_v3_pretrain_h100_fp8_sc_v1.yaml"));
  text.replace(text.find("moe_token_dispatcher_type: flex"), 31, "moe_token_dispatcher_type: alltoall");
  const std::string path = write_temp("deepseek_v3_alltoall.yaml", text);
  const parsed_job pj = parse({"--cluster", "dgx-h100", "--num-gpus", "1024", "--bridge-config", path});
  // deallocate_pipeline_outputs: false keeps each sent stage output until its backward (§3.5): rank 0
  // holds (8 − 1)·2 + (4 − 1)·8 + 1 = 39 chunk-micro-batches, each output 4,096 tokens × 7,168 × 2 bytes
  // / TP 2 (SP) more than with the outputs freed.
  EXPECT_TRUE(pj.job.training.keep_pipeline_outputs);
  text.replace(text.find("deallocate_pipeline_outputs: false"), 34, "deallocate_pipeline_outputs: true");
  const parsed_job freed =
      parse({"--cluster", "dgx-h100", "--num-gpus", "1024", "--bridge-config", write_temp("deepseek_v3_freed.yaml", text)});
  EXPECT_FALSE(freed.job.training.keep_pipeline_outputs);
  EXPECT_DOUBLE_EQ(estimate_memory(pj.job).stages[0].activations_bytes -
                       estimate_memory(freed.job).stages[0].activations_bytes,
                   39 * 4096.0 * 7168 * 2 / 2);
  EXPECT_EQ(count_parameters(pj.job.model, 1).total, count_parameters(find_model("deepseek-v3").spec, 1).total);
  EXPECT_EQ(pj.job.training.fp8, fp8_format::hybrid);
  EXPECT_EQ(pj.job.training.fp8_scaling, fp8_recipe::blockwise);
  EXPECT_EQ(pj.job.parallel.vpp, 4);
  EXPECT_EQ(pj.job.parallel.ep, 64);
  EXPECT_EQ(pj.job.training.global_batch_size, 8192);
  // comm_overlap: PP 8 with VPP 4 overlaps p2p (the model section's false is what setup() replaces).
  EXPECT_TRUE(pj.job.training.overlap_p2p_comm);
}

// mixed_precision overwrites the model's, optimizer's and DDP's fields of the same name.
TEST(BridgeConfig, MixedPrecisionIsAppliedOverModelAndDdp) {
  const std::string path = container("bridge_mp.yaml", std::string(kSmallModel) +
                                                           "mixed_precision:\n"
                                                           "  bf16: true\n"
                                                           "  fp8: e4m3\n"
                                                           "  fp8_recipe: tensorwise\n"
                                                           "  fp8_param_gather: true\n"
                                                           "  fp8_param: null\n"
                                                           "  grad_reduce_in_fp32: false\n");
  const parsed_job pj = parse(bridge(path));
  EXPECT_EQ(pj.job.training.precision, dtype::bf16);
  EXPECT_EQ(pj.job.training.fp8, fp8_format::e4m3);
  EXPECT_EQ(pj.job.training.fp8_scaling, fp8_recipe::tensorwise);
  EXPECT_TRUE(pj.job.training.fp8_param_gather);  // finalize(): fp8_param from fp8_param_gather
  EXPECT_TRUE(pj.job.training.grad_reduce_in_bf16);  // ddp.grad_reduce_in_fp32 false
}

// comm_overlap: p2p overlap with VPP unless set; DP overlap and 128 MiB buckets with the distributed
// optimizer; TP overlap only when asked with TP ≥ 2 and sequence parallelism.
TEST(BridgeConfig, CommOverlapDefaultsFollowTheLayout) {
  const std::string with = container("bridge_co.yaml", std::string(kSmallModel) +
                                                           "comm_overlap:\n"
                                                           "  _target_: megatron.bridge.training.comm_overlap.CommOverlapConfig\n"
                                                           "  tp_comm_overlap: true\n"
                                                           "  overlap_p2p_comm: null\n");
  const parsed_job on = parse(bridge(with));
  EXPECT_TRUE(on.job.training.overlap_p2p_comm);
  EXPECT_TRUE(on.job.training.overlap_grad_reduce);
  EXPECT_TRUE(on.job.training.overlap_param_gather);
  EXPECT_TRUE(on.job.training.tp_comm_overlap);
  // Without the section the fields stand as written.
  const parsed_job off = parse(bridge(container("bridge_noco.yaml", kSmallModel)));
  EXPECT_FALSE(off.job.training.overlap_p2p_comm);
  EXPECT_FALSE(off.job.training.overlap_grad_reduce);
  EXPECT_FALSE(off.job.training.tp_comm_overlap);
  // The user's false stands over the default.
  const std::string user_off = container("bridge_co_off.yaml", std::string(kSmallModel) +
                                                                 "comm_overlap:\n"
                                                                 "  tp_comm_overlap: false\n"
                                                                 "  overlap_p2p_comm: false\n"
                                                                 "  overlap_grad_reduce: false\n");
  const parsed_job kept = parse(bridge(user_off));
  EXPECT_FALSE(kept.job.training.overlap_p2p_comm);
  EXPECT_FALSE(kept.job.training.overlap_grad_reduce);
  EXPECT_TRUE(kept.job.training.overlap_param_gather);
}

// GPTModelProvider.provide pads the vocabulary only with should_pad_vocab.
TEST(BridgeConfig, VocabularyPaddedOnlyWithShouldPadVocab) {
  const parsed_job as_is = parse(bridge(container("bridge_vocab.yaml", kSmallModel)));
  EXPECT_EQ(padded_vocab(as_is.job.model, 2), 50000);
  std::string padded_text = kSmallModel;
  padded_text.insert(padded_text.find("  tensor_model_parallel_size"), "  should_pad_vocab: true\n  make_vocab_size_divisible_by: 128\n");
  const parsed_job padded = parse(bridge(container("bridge_vocab_pad.yaml", padded_text)));
  EXPECT_EQ(padded_vocab(padded.job.model, 2), 50176);  // a multiple of 128 × TP 2
}

// A field at another value than Megatron-Core's default, whose effect trainplan does not model, is refused
// naming it, its value and its line; the same field at its default, or inert, is not.
TEST(BridgeConfig, FieldsNotModelledAreRefusedByNameAndLine) {
  EXPECT_THAT(error_of(bridge(container("bridge_graph.yaml", std::string(kSmallModel) + "  cuda_graph_impl: transformer_engine\n"))),
              AllOf(HasSubstr("bridge_graph.yaml:"), HasSubstr("ddp.cuda_graph_impl")));
  std::string graph = kSmallModel;
  graph.insert(graph.find("train:"), "  cuda_graph_impl: transformer_engine\n");
  EXPECT_THAT(error_of(bridge(container("bridge_graph2.yaml", graph))),
              AllOf(HasSubstr("bridge_graph2.yaml:18: model.cuda_graph_impl: transformer_engine (Megatron-Core's default "
                              "\"none\") would change the time and the memory (kernel launches replayed from captured CUDA graphs"),
                    HasSubstr("as Megatron's --cuda-graph-impl")));
  std::string inert = kSmallModel;
  inert.insert(inert.find("train:"), "  cuda_graph_impl: none\n  cuda_graph_scope: full\n");
  EXPECT_THAT(parse(bridge(container("bridge_inert.yaml", inert))).ignored_flags,
              Contains(HasSubstr("model.cuda_graph_scope=full (read with CUDA graphs alone)")));
  EXPECT_THAT(error_of(bridge(container("bridge_peft.yaml", std::string(kSmallModel) + "peft:\n  dim: 8\n"))),
              HasSubstr("peft: would change what trains and what is stored"));
  // A setting the memory model does not count is refused, not listed: FusedAdam's whole fp32 master.
  EXPECT_THAT(error_of(bridge(container("bridge_remainders.yaml",
                                        std::string(kSmallModel) + "optimizer:\n  use_precision_aware_optimizer: true\n"
                                                                   "  store_param_remainders: false\n"))),
              HasSubstr("optimizer.store_param_remainders: false keeps a whole fp32 master copy"));
  // A rule of the job that a field breaks names the field with its file:line.
  std::string mla = kSmallModel;
  mla.insert(mla.find("train:"), "  recompute_granularity: selective\n  recompute_modules:\n  - mla_up_proj\n");
  EXPECT_THAT(error_of(bridge(container("bridge_mla.yaml", mla))),
              AllOf(HasSubstr("model.recompute_modules ("),
                    HasSubstr("args_test_bridge_mla.yaml:19) mla_up_proj is only supported with multi-latent attention")));
}

// Bad input: not a ConfigContainer, a section unknown here, a missing file; each names the file.
TEST(BridgeConfig, BadFilesAreNamed) {
  EXPECT_THAT(error_of(bridge(write_temp("bridge_not.yaml", "model:\n  num_layers: 2\n"))),
              AllOf(HasSubstr("bridge_not.yaml:0: not a Megatron-Bridge ConfigContainer"), HasSubstr("--bridge-config")));
  EXPECT_THAT(error_of(bridge(container("bridge_unknown.yaml", std::string(kSmallModel) + "mystery:\n  a: 1\n"))),
              HasSubstr("mystery: not a Megatron-Bridge section trainplan knows"));
  EXPECT_THAT(error_of(bridge("/nonexistent/bridge.yaml")), HasSubstr("--bridge-config /nonexistent/bridge.yaml"));
  EXPECT_THAT(error_of(bridge(container("bridge_partial.yaml", "train:\n  micro_batch_size: 2\n"))),
              HasSubstr("no model section with num_layers"));
  // Values of the wrong type name their key and line, whichever reader finds them.
  std::string bad_int = kSmallModel;
  bad_int.replace(bad_int.find("num_layers: 16"), 14, "num_layers: many");
  EXPECT_THAT(error_of(bridge(container("bridge_int.yaml", bad_int))),
              AllOf(HasSubstr("model.num_layers ("), HasSubstr("bridge_int.yaml:4) expects an integer, got 'many'")));
  EXPECT_THAT(error_of(bridge(container("bridge_co_type.yaml", std::string(kSmallModel) + "comm_overlap:\n  tp_comm_overlap: 5\n"))),
              HasSubstr("bridge_co_type.yaml:26: comm_overlap.tp_comm_overlap: expected true, false or null"));
  EXPECT_THAT(error_of(bridge(container("bridge_mp_name.yaml", std::string(kSmallModel) + "mixed_precision: bf16_mixed\n"))),
              HasSubstr("mixed_precision: 'bf16_mixed' is a recipe's name"));
}

}  // namespace
}  // namespace trainplan
