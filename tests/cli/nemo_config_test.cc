// NeMo 1 jobs (issue 29): the Hydra YAML of megatron_gpt_pretraining.py (--config-path/--config-name on
// a launch line, or --nemo-config) with the line's Hydra overrides, as NeMo's Megatron GPT reads them:
// each key becomes the Megatron-Core flag of the same meaning, NeMo's code defaults beneath.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "args_test_support.h"
#include "test_support.h"
#include "trainplan/cli/args.h"
#include "trainplan/core/base/error.h"
#include "trainplan/core/estimate/memory.h"
#include "trainplan/core/estimate/time.h"
#include "trainplan/core/model/model.h"

namespace trainplan {
namespace {

using ::testing::AllOf;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using namespace args_testing;  // NOLINT(google-build-using-namespace): the shared helpers

std::string nemo_dir() { return testing::data_path("launch/nemo"); }

/// megatron_gpt_pretraining.py with a config of tests/data/launch/nemo and Hydra overrides.
args_t pretrain(const std::string& config, const args_t& overrides = {}, const args_t& own = {}) {
  args_t a = concat(concat({"--cluster", "dgx-h100"}, own),
                    {"--", "python3", "-u", "/opt/NeMo/examples/nlp/language_modeling/megatron_gpt_pretraining.py",
                     "--config-path=" + nemo_dir(), "--config-name=" + config});
  return concat(a, overrides);
}

/// A config of our own: the launcher's Llama-3 8B with `extra` appended under model (two-space indent).
std::string llama_with(const std::string& name, const std::string& extra) {
  std::ifstream in(nemo_dir() + "/llama3_8b.yaml");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::size_t at = text.find("model:\n") + 7;
  text.insert(at, extra);
  return write_temp(name, text);
}

// NeMo-Framework-Launcher's Llama-3 8B: the catalog model, CP 2 on 16 nodes, Megatron-Core's distributed
// optimizer with fp32 gradients, the HF tokenizer's vocabulary; its interpolations left unevaluated where
// they name the launcher's variables (${data_dir}, ${training.run.name}).
TEST(NemoConfig, TheLaunchersLlama3_8bIsTheJob) {
  const parsed_job pj = parse(pretrain("llama3_8b.yaml"));
  EXPECT_EQ(count_parameters(pj.job.model, 1).total, count_parameters(find_model("llama3-8b").spec, 1).total);
  EXPECT_EQ(pj.job.num_gpus, 128);
  EXPECT_EQ(pj.job.parallel.tp, 1);
  EXPECT_EQ(pj.job.parallel.cp, 2);
  EXPECT_EQ(pj.job.training.micro_batch_size, 1);
  EXPECT_EQ(pj.job.training.global_batch_size, 2048);
  EXPECT_EQ(pj.job.model.seq_length, 8192);
  EXPECT_EQ(pj.job.training.precision, dtype::bf16);
  EXPECT_EQ(pj.job.training.framework, framework_kind::megatron);
  EXPECT_EQ(pj.job.training.zero_stage, 1);  // mcore_distributed_optim
  EXPECT_TRUE(pj.job.training.gradient_accumulation_fusion);
  EXPECT_THAT(pj.derived_flags, Contains(StartsWith("--vocab-size 128256")));
  EXPECT_THAT(pj.ignored_flags, Contains("llama3_8b.yaml:exp_manager.*"));
  EXPECT_THAT(pj.ignored_flags, Contains("llama3_8b.yaml:model.optim.lr"));
  // The same job by --nemo-config, and a flag before `--` overrides the config, said so.
  const parsed_job own = parse({"--cluster", "dgx-h100", "--nemo-config", nemo_dir() + "/llama3_8b.yaml"});
  EXPECT_EQ(own.job.num_gpus, 128);
  const parsed_job what_if = parse(pretrain("llama3_8b.yaml", {}, {"--tp", "2"}));
  EXPECT_EQ(what_if.job.parallel.tp, 2);
  EXPECT_THAT(what_if.overridden_flags, Contains("model.tensor_model_parallel_size 1 (NeMo config) → --tp 2 (your flags)"));
}

// GPT-3 175B: ffn_hidden_size is ${multiply:4, ${.hidden_size}} (NeMo's multiply resolver), the GPT-2
// vocabulary padded to 128 × TP 4; VPP 6 at PP 8 with sequence parallelism and TP overlap.
TEST(NemoConfig, Gpt3_175bEvaluatesNemosResolvers) {
  const parsed_job pj = parse(pretrain("gpt3_175b.yaml"));
  EXPECT_EQ(pj.job.model.ffn_hidden_size, 4 * 12288);
  EXPECT_EQ(pj.job.model.num_layers, 96);
  EXPECT_EQ(pj.job.model.vocab_size, 50257);
  EXPECT_EQ(pj.job.parallel.tp, 4);
  EXPECT_EQ(pj.job.parallel.pp, 8);
  EXPECT_EQ(pj.job.parallel.vpp, 6);
  EXPECT_TRUE(pj.job.parallel.sequence_parallel);
  // 12 layers per pipeline rank in 6 chunks; the catalog's GPT-3 175B differs in the vocabulary's padding
  // alone (128 × TP here, 128 at the catalog's TP 1): 384 rows of 12,288.
  EXPECT_EQ(count_parameters(pj.job.model, 4).total - count_parameters(find_model("gpt3-175b").spec, 1).total,
            384 * 12288);
}

// Mixtral 8x7B: experts padded to a capacity factor of 1 (what §5.1 prices for a capacity factor), and
// mcore_customization_config's Falcon switches set false (nothing reads them).
TEST(NemoConfig, Mixtral8x7bPadsToItsCapacity) {
  const parsed_job pj = parse(pretrain("mixtral_8x7b.yaml"));
  EXPECT_EQ(count_parameters(pj.job.model, 1).total, count_parameters(find_model("mixtral-8x7b").spec, 1).total);
  EXPECT_EQ(pj.job.model.moe.num_experts, 8);
  EXPECT_EQ(pj.job.model.moe.router_topk, 2);
  EXPECT_DOUBLE_EQ(pj.job.model.moe.capacity_factor, 1.0);
  EXPECT_EQ(pj.job.parallel.ep, 8);
  // model.moe_grouped_gemm (false here: SequentialMLP) is Megatron-Core's --moe-grouped-gemm.
  EXPECT_FALSE(pj.job.training.moe_grouped_gemm);
  EXPECT_TRUE(parse(pretrain("mixtral_8x7b.yaml", {"model.moe_grouped_gemm=true"})).job.training.moe_grouped_gemm);
  // Megatron's flag: the estimate of its capacity factor (every expert at the capacity), and Megatron-Core's
  // own check without one.
  const args_t cf = {"--model", "mixtral-8x7b", "--ep", "8", "--moe-expert-capacity-factor", "1.0"};
  EXPECT_DOUBLE_EQ(estimate_memory(parse(concat(cf, {"--moe-pad-expert-input-to-capacity"})).job).peak_reserved_bytes,
                   estimate_memory(parse(cf).job).peak_reserved_bytes);
  EXPECT_THAT(error_of({"--model", "mixtral-8x7b", "--moe-pad-expert-input-to-capacity"}),
              HasSubstr("without --moe-expert-capacity-factor: Megatron-Core refuses it"));
  const std::string yaml = llama_with("nemo_custom_on.yaml", "  mcore_customization_config:\n    parallel_attention: true\n");
  EXPECT_THAT(error_of({"--nemo-config", yaml}),
              AllOf(HasSubstr("model.mcore_customization_config: would change the model"),
                    HasSubstr("`~model.mcore_customization_config`")));
}

// NeMo's own megatron_gpt_config.yaml with its GPT tutorial's overrides: fp16 under O2, Megatron-Core's
// local layers (transformer_engine false), fused_adam (no distributed optimizer), no gradient-accumulation
// fusion (NeMo's default, and NeMo turns it off at PP 1 without a distributed optimizer).
TEST(NemoConfig, NemosDefaultConfigWithTheTutorialsOverrides) {
  const parsed_job pj = parse(pretrain("megatron_gpt_config", {"trainer.devices=1", "trainer.num_nodes=1", "trainer.precision=16",
                                                               "model.micro_batch_size=6", "model.global_batch_size=192",
                                                               "model.encoder_seq_length=1024", "model.data.seq_length=1024",
                                                               "model.optim.name=fused_adam",
                                                               "model.data.data_prefix=[1.0,hfbpe_gpt_training_data_text_document]"}));
  EXPECT_EQ(pj.job.num_gpus, 1);
  EXPECT_EQ(pj.job.training.precision, dtype::fp16);
  EXPECT_EQ(pj.job.training.zero_stage, 0);
  EXPECT_FALSE(pj.job.training.gradient_accumulation_fusion);
  EXPECT_EQ(pj.job.model.seq_length, 1024);
  EXPECT_EQ(pj.job.model.max_position_embeddings, 1024);
  EXPECT_EQ(pj.job.model.num_layers, 12);
  EXPECT_EQ(pj.job.model.vocab_size, 50257);
  EXPECT_THAT(pj.ignored_flags, Contains("model.data.data_prefix=[1.0,hfbpe_gpt_training_data_text_document]"));
  EXPECT_THAT(pj.overridden_flags, Contains("model.micro_batch_size 4 (NeMo config) → 6 (launch line)"));
}

// optim.grad_sync_dtype bf16 is DistributedDataParallelConfig(grad_reduce_in_fp32=False): the gradient
// buffer halves; optim.dtype is not read by mcore_distributed_optim (fp32 states), listed as ignored.
TEST(NemoConfig, GradSyncDtypeBf16HalvesTheGradientBuffer) {
  const parsed_job fp32 = parse(pretrain("llama3_8b.yaml"));
  const parsed_job bf16 = parse(pretrain("llama3_8b.yaml", {"+model.optim.grad_sync_dtype=bf16", "+model.optim.dtype=bf16"}));
  EXPECT_DOUBLE_EQ(estimate_memory(bf16.job).stages[0].gradients_bytes, estimate_memory(fp32.job).stages[0].gradients_bytes / 2);
  EXPECT_DOUBLE_EQ(estimate_memory(bf16.job).stages[0].optimizer_bytes, estimate_memory(fp32.job).stages[0].optimizer_bytes);
  EXPECT_THAT(bf16.ignored_flags,
              Contains(HasSubstr("model.optim.dtype (read by Apex's DistributedFusedAdam (distributed_fused_adam) alone)")));
}

// dgxc-benchmarking v24.11.1's Llama-3.1 8B (published-measurements-more.csv rows 94-97 ran it): NeMo 1's
// distributed_fused_adam, Apex's DistributedFusedAdam as setup_optimization configures it — state sharded
// over DP×CP, gradients in grad_sync_dtype (bf16), the fp32 master of each bf16 weight kept as its 16-bit
// remainder (10 bytes of optimizer state per parameter per shard, as Megatron-Core's precision-aware
// optimizer); with fp8_params an fp32 master (12) and FP8 parameters gathered.
TEST(NemoConfig, ApexDistributedAdamAsNemoSetsItUp) {
  const parsed_job pj = parse(pretrain("dgxc_llama3.1_8b.yaml", {"trainer.num_nodes=1"}));
  const training_config& t = pj.job.training;
  EXPECT_TRUE(t.distributed_optimizer);
  EXPECT_FALSE(t.accumulate_allreduce_grads_in_fp32);
  EXPECT_TRUE(t.precision_aware_optimizer);
  EXPECT_TRUE(t.overlap_grad_reduce);
  EXPECT_TRUE(t.overlap_param_gather);
  EXPECT_EQ(pj.job.parallel.cp, 2);
  const double params = static_cast<double>(count_parameters(pj.job.model, 1).total);
  const stage_memory m = estimate_memory(pj.job).stages[0];
  EXPECT_NEAR(m.optimizer_bytes, 10.0 * params / 8, 1e-6 * m.optimizer_bytes);  // DP 4 × CP 2
  EXPECT_NEAR(m.gradients_bytes, 2.0 * params, 1e-6 * m.gradients_bytes);
  // bucket_cap_mb 75 of bf16 gradients is Megatron's --ddp-bucket-size 39321600 (75 MiB / 2 bytes): the
  // first rank's buckets under the last backward (§5.4).
  EXPECT_EQ(t.ddp_bucket_elements, 39321600);
  EXPECT_THAT(pj.ignored_flags, Not(Contains(HasSubstr("39321600"))));
  // Within 5% of the 12.91 s it ran in (8 H100s, BF16; not fitted on).
  EXPECT_NEAR(estimate_time(pj.job).iteration_s / 12.91, 1.0, 0.05);

  const parsed_job fp8 = parse(pretrain("dgxc_llama3.1_8b.yaml", {"trainer.num_nodes=1", "model.fp8=true",
                                                                    "model.fp8_hybrid=true", "+model.fp8_params=true"}));
  EXPECT_FALSE(fp8.job.training.precision_aware_optimizer);
  EXPECT_TRUE(fp8.job.training.fp8_param_gather);
  EXPECT_NEAR(estimate_memory(fp8.job).stages[0].optimizer_bytes, 12.0 * params / 8, 1e-6 * m.optimizer_bytes);
  // A scaling margin changes the FP8 scales only: listed, the job unchanged.
  const parsed_job margin = parse(pretrain("dgxc_llama3.1_8b.yaml", {"trainer.num_nodes=1", "model.fp8=true",
                                                                       "model.fp8_hybrid=true", "+model.fp8_params=true",
                                                                       "+model.fp8_margin=1"}));
  EXPECT_THAT(margin.ignored_flags, Contains(HasSubstr("model.fp8_margin")));
  EXPECT_EQ(estimate_time(margin.job).iteration_s, estimate_time(fp8.job).iteration_s);
  // A 16-bit optimizer with fp8_params: 16-bit master and moments (store_params), 6 bytes.
  const parsed_job half = parse(pretrain("dgxc_llama3.1_8b.yaml", {"trainer.num_nodes=1", "model.fp8=true",
                                                                     "model.fp8_hybrid=true", "+model.fp8_params=true",
                                                                     "+model.optim.dtype=bf16"}));
  EXPECT_NEAR(estimate_memory(half.job).stages[0].optimizer_bytes, 6.0 * params / 8, 1e-6 * m.optimizer_bytes);
  // The 405B: deferred output-layer wgrad (limit 50), SP and TP overlap, read as they ran on 576 GPUs.
  const parsed_job big = parse(pretrain("dgxc_llama3.1_405b.yaml", {"trainer.num_nodes=72"}));
  EXPECT_TRUE(big.job.training.defer_embedding_wgrad);
  EXPECT_EQ(big.job.training.wgrad_deferral_limit, 50);
  EXPECT_NEAR(estimate_time(big.job).iteration_s / 17.2, 1.0, 0.05);
  // Nemotron-4 340B's bf16 optimizer over bf16 weights keeps no master at all: refused where it says so.
  EXPECT_THAT(error_of(pretrain("dgxc_nemotron4-340b-synth.yaml")),
              AllOf(HasSubstr("dgxc_nemotron4-340b-synth.yaml:186: model.optim.dtype:"), HasSubstr("keep no master copy")));
  EXPECT_THAT(error_of(pretrain("dgxc_llama3.1_8b.yaml", {"+model.optim.grad_sync_dtype=fp16"})),
              HasSubstr("fp16 gradients over bf16 weights are not modelled"));
  EXPECT_THAT(error_of(pretrain("dgxc_llama3.1_8b.yaml", {"model.optim.bucket_cap_mb=1e30"})),
              HasSubstr("model.optim.bucket_cap_mb=1e30: expected a positive number of MiB, at most 1e6"));
}

// Hydra's grammar on the line: `~key` removes a key (NeMo's default applies), `+`/`++` add or set.
TEST(NemoConfig, HydraOverridesSetAddAndRemove) {
  const parsed_job pj = parse(pretrain("llama3_8b.yaml", {"model.micro_batch_size=2", "++model.sequence_parallel=true",
                                                          "model.tensor_model_parallel_size=2", "~model.context_parallel_size"}));
  EXPECT_EQ(pj.job.training.micro_batch_size, 2);
  EXPECT_EQ(pj.job.parallel.tp, 2);
  EXPECT_TRUE(pj.job.parallel.sequence_parallel);
  EXPECT_EQ(pj.job.parallel.cp, 1);
  // model.precision wins over the trainer's unless null (megatron_gpt_model.py __init__).
  EXPECT_EQ(parse(pretrain("llama3_8b.yaml", {"+model.precision=16"})).job.training.precision, dtype::fp16);
  EXPECT_EQ(parse(pretrain("llama3_8b.yaml", {"+model.precision=null"})).job.training.precision, dtype::bf16);
  // Sequence parallelism at TP 1 is turned off, as NeMo does.
  EXPECT_FALSE(parse(pretrain("llama3_8b.yaml", {"model.sequence_parallel=true"})).job.parallel.sequence_parallel);
  EXPECT_THAT(error_of(pretrain("llama3_8b.yaml", {"model.no_such_thing.x=1"})),
              HasSubstr("launch line: model.no_such_thing.x=1: not a NeMo setting trainplan knows"));
  EXPECT_THAT(error_of(pretrain("llama3_8b.yaml", {"model.optim=adam"})), HasSubstr("is a section of NeMo's config"));
  EXPECT_THAT(error_of({"--cluster", "dgx-h100", "--", "python", "megatron_gpt_pretraining.py", "model.fp8=true"}),
              HasSubstr("Hydra overrides without --config-name"));
}

// Hydra reads a relative --config-path beside the script (NeMo's examples: --config-path=conf).
TEST(NemoConfig, ARelativeConfigPathIsBesideTheScript) {
  const std::filesystem::path root = std::filesystem::path(::testing::TempDir()) / "nemo_checkout";
  std::filesystem::create_directories(root / "examples" / "conf");
  std::filesystem::copy_file(nemo_dir() + "/llama3_8b.yaml", root / "examples" / "conf" / "llama3_8b.yaml",
                             std::filesystem::copy_options::overwrite_existing);
  const parsed_job pj = parse({"--cluster", "dgx-h100", "--", "python", (root / "examples" / "megatron_gpt_pretraining.py").string(),
                               "--config-path=conf", "--config-name=llama3_8b"});
  EXPECT_EQ(pj.job.num_gpus, 128);
  EXPECT_THAT(error_of(pretrain("llama3_8b.yaml", {"model.micro_batch_size=2\n3"})), HasSubstr("a value on more than one line"));
}

// What NeMo would build differently, or trainplan does not model, is refused naming file:line and the key.
TEST(NemoConfig, UnmodelledSettingsAreRefusedByKey) {
  EXPECT_THAT(error_of(pretrain("llama3_8b.yaml", {"model.mcore_gpt=false"})),
              HasSubstr("launch line: model.mcore_gpt=false: NeMo's legacy GPT"));
  EXPECT_THAT(error_of(pretrain("llama3_8b.yaml", {"model.megatron_amp_O2=false"})),
              HasSubstr("keeps the model's parameters in fp32 under autocast (O1)"));
  EXPECT_THAT(error_of(pretrain("llama3_8b.yaml", {"model.optim.name=distributed_fused_adam", "+model.optim.dtype=bf16"})),
              HasSubstr("launch line: model.optim.dtype=bf16: bf16 optimizer states over bf16 weights keep no master copy"));
  EXPECT_THAT(error_of(pretrain("llama3_8b.yaml", {"model.fsdp=true"})), HasSubstr("NeMo's PyTorch FSDP"));
  EXPECT_THAT(error_of(pretrain("llama3_8b.yaml", {"model.position_embedding_type=alibi"})),
              HasSubstr("expected learned_absolute, rope or none"));
  // A Megatron-Core field NeMo passes through, checked as Megatron's flag of that name is.
  EXPECT_EQ(error_of(pretrain("llama3_8b.yaml", {"+model.delay_wgrad_compute=true"})),
            "model.delay_wgrad_compute (launch line) needs --overlap-moe-expert-parallel-comm (Megatron-Core's check: "
            "\"overlap_moe_expert_parallel_comm must be enabled when enabling delay_wgrad_compute\")");
  EXPECT_THAT(error_of(pretrain("llama3_8b.yaml", {"+model.cuda_graph_impl=transformer_engine"})),
              AllOf(StartsWith("launch line: model.cuda_graph_impl"), HasSubstr("which trainplan does not model")));
  // CPU offloading: of the activations, as Megatron's --cpu-offloading-num-layers; of the weights, refused.
  EXPECT_THAT(error_of(pretrain("llama3_8b.yaml", {"+model.cpu_offloading=true", "+model.cpu_offloading_num_layers=8",
                                                   "+model.cpu_offloading_weights=true", "model.context_parallel_size=1"})),
              HasSubstr("model.cpu_offloading_weights"));
  EXPECT_EQ(parse(pretrain("llama3_8b.yaml", {"+model.cpu_offloading=true", "+model.cpu_offloading_num_layers=8",
                                              "model.context_parallel_size=1"}))
                .job.training.cpu_offload_layers,
            8);
  // trainer.accumulate_grad_batches: NeMo accumulates itself.
  EXPECT_THAT(error_of(pretrain("llama3_8b.yaml", {"trainer.accumulate_grad_batches=4"})), HasSubstr("must be 1"));
}

// A key nothing reads (NeMo copies only Megatron-Core's field names) is ignored as NeMo ignores it, said so;
// a Megatron-Core field trainplan does not read is refused when on.
TEST(NemoConfig, KeysNothingReadsAreListedAndUnknownFieldsRefused) {
  const parsed_job pj = parse({"--nemo-config", llama_with("nemo_typo.yaml", "  deteministic_mode: false\n")});
  EXPECT_THAT(pj.ignored_flags,
              Contains("args_test_nemo_typo.yaml:model.deteministic_mode (neither NeMo nor Megatron-Core reads it: a misspelling?)"));
  EXPECT_THAT(error_of({"--nemo-config", llama_with("nemo_field.yaml", "  fp8_dot_product_attention: true\n")}),
              HasSubstr("sets Megatron-Core's fp8_dot_product_attention (true), which trainplan does not read"));
  // A field NeMo sets itself from its own key: the key of that name is not read.
  const parsed_job glu = parse({"--nemo-config", llama_with("nemo_glu.yaml", "  gated_linear_unit: false\n")});
  EXPECT_THAT(glu.ignored_flags, Contains("args_test_nemo_glu.yaml:model.gated_linear_unit (NeMo sets it from activation)"));
  EXPECT_EQ(glu.job.model.activation, parse(pretrain("llama3_8b.yaml")).job.model.activation);
  // A Megatron-Core field at Megatron-Core's default changes nothing whatever trainplan reads of it
  // (NeMo-Framework-Launcher's GPT-3 MLPerf config writes tp_comm_overlap_ag: true).
  const parsed_job at_default = parse({"--nemo-config", llama_with("nemo_default.yaml", "  tp_comm_overlap_ag: true\n")});
  EXPECT_THAT(at_default.ignored_flags,
              Contains("args_test_nemo_default.yaml:model.tp_comm_overlap_ag (Megatron-Core's default)"));
}

// The distributed optimizer's Apex options: NCCL user buffers would change the time, refused by key; a lock's
// timeout changes nothing. The launcher's environment (env_vars) is read as a launch line's variables are:
// Transformer Engine's attention switches choose the kernel (§5.2), NCCL's logging is listed, its tuning
// refused by key.
TEST(NemoConfig, OptimizerBuffersAreRefusedAndTheEnvironmentReadAsOnALaunchLine) {
  EXPECT_NO_THROW(parse(pretrain("llama3_8b.yaml", {"+model.optim.nccl_ub=false", "+model.optim.lock_timeout=null"})));
  EXPECT_THAT(error_of(pretrain("llama3_8b.yaml", {"+model.optim.nccl_ub=true"})),
              HasSubstr("model.optim.nccl_ub=true: would change the optimizer's collectives (NCCL user buffers)"));
  const parsed_job te_choice = parse(pretrain("llama3_8b.yaml", {"+env_vars.NVTE_FUSED_ATTN=1"}));
  EXPECT_EQ(te_choice.job.training.attention, parse(pretrain("llama3_8b.yaml", {})).job.training.attention);
  EXPECT_THAT(te_choice.ignored_flags,
              Contains("env_vars.NVTE_FUSED_ATTN=1 (Transformer Engine keeps its own choice of attention kernel)"));
  const parsed_job flash = parse(pretrain("llama3_8b.yaml", {"+env_vars.NVTE_FUSED_ATTN=0", "+env_vars.NCCL_DEBUG=INFO"}));
  EXPECT_EQ(flash.job.training.attention, training_config::attention_backend::flash2);
  EXPECT_TRUE(flash.job.training.fa2_attention);
  EXPECT_THAT(flash.ignored_flags, Contains("env_vars.NCCL_DEBUG=INFO"));
  EXPECT_THAT(error_of(pretrain("llama3_8b.yaml", {"+env_vars.NCCL_ALGO=Tree"})),
              HasSubstr("launch line: env_vars.NCCL_ALGO=Tree would change the collectives' algorithms"));
  EXPECT_THAT(error_of(pretrain("llama3_8b.yaml", {"+env_vars.NVTE_FUSED_ATTN=0", "+model.attention_backend=fused"})),
              HasSubstr("launch line: env_vars: NVTE_FUSED_ATTN=0 selects the flash attention backend, which "
                        "model.attention_backend fused contradicts"));
}

// OmegaConf interpolations: references (relative and absolute) are followed; a cycle, a reference to
// nothing, text around an interpolation and an unknown resolver are refused naming the key, shown as typed.
TEST(NemoConfig, InterpolationsAreFollowedOrRefused) {
  const parsed_job pj = parse(pretrain("llama3_8b.yaml", {"model.encoder_seq_length=4096", "model.data.seq_length=${..encoder_seq_length}",
                                                          "model.ffn_hidden_size=${multiply:${.hidden_size}, 4}"}));
  EXPECT_EQ(pj.job.model.seq_length, 4096);
  EXPECT_EQ(pj.job.model.ffn_hidden_size, 4 * 4096);
  EXPECT_THAT(error_of(pretrain("llama3_8b.yaml", {"model.kv_channels=${model.kv_channels}"})), HasSubstr("deeper than 8"));
  EXPECT_THAT(error_of(pretrain("llama3_8b.yaml", {"model.kv_channels=${model.nothing}"})),
              HasSubstr("'${model.nothing}' names model.nothing, which the config does not set"));
  EXPECT_THAT(error_of(pretrain("llama3_8b.yaml", {"model.kv_channels=${.hidden_size}0"})),
              HasSubstr("mixes an interpolation with text"));
  EXPECT_THAT(error_of(pretrain("llama3_8b.yaml", {"model.kv_channels=${div:${.hidden_size}, 32}"})),
              HasSubstr("NeMo's multiply and sum of two numbers alone"));
}

// Bad files: not YAML, empty, a list at the top, unreadable.
TEST(NemoConfig, BadFilesNameTheFileAndLine) {
  EXPECT_THAT(error_of({"--nemo-config", write_temp("nemo_bad.yaml", "model:\n  num_layers: [1,\n")}),
              HasSubstr("nemo_bad.yaml:3"));
  EXPECT_THAT(error_of({"--nemo-config", write_temp("nemo_empty.yaml", "")}), HasSubstr("the NeMo config is empty"));
  EXPECT_THAT(error_of({"--nemo-config", write_temp("nemo_list.yaml", "- 1\n")}),
              HasSubstr("expected a mapping of NeMo config keys at the top level"));
  EXPECT_THAT(error_of({"--nemo-config", "/no/such/file.yaml"}), HasSubstr("--nemo-config /no/such/file.yaml"));
  EXPECT_THAT(error_of({"--nemo-config", write_temp("nemo_section.yaml", "model: 3\n")}),
              HasSubstr("nemo_section.yaml:1: model: expected a mapping"));
}

}  // namespace
}  // namespace trainplan
