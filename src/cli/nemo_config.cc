// NeMo 1 configs (src/cli/nemo_config.h). The keys and NeMo's code defaults are those of NeMo's
// Megatron GPT (NVIDIA/NeMo 8cfedd7, the last tree with NeMo 1's NLP collection):
// examples/nlp/language_modeling/conf/megatron_gpt_config.yaml and
// nemo/collections/nlp/models/language_modeling/megatron_base_model.py (build_model_parallel_config,
// build_transformer_config, _validate_and_override_config, setup_optimization),
// megatron_gpt_model.py (__init__'s checks, model_provider_func's MCoreGPTModel arguments,
// build_transformer_config's normalization and fp8, setup_mcore_distributed_parallel's
// DistributedDataParallelConfig) and nemo/core/classes/modelPT.py (setup_megatron_optimization), and the
// configs NeMo-Framework-Launcher ships (launcher_scripts/conf/training, 26e42fa).
#include "nemo_config.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <unordered_map>
#include <string_view>

#include <fmt/format.h>

#include "config_keys.h"
#include "launch_env.h"
#include "megatron_core_defaults.h"
#include "trainplan/cli/args.h"
#include "trainplan/core/base/document.h"
#include "trainplan/core/base/error.h"
#include "trainplan/core/base/input_file.h"
#include "trainplan/core/base/limits.h"

namespace trainplan::args_detail {

namespace {

using detail::json;

/// What a key does.
enum class nm_role {
  section,          ///< a mapping whose keys have rows of their own; a key without one is refused
  section_open,     ///< a mapping whose keys without a row change no estimate (trainer.*, model.data.*)
  section_ignored,  ///< changes no estimate, whatever it holds (logging, checkpoints, profiling)
  ignored,          ///< changes no estimate
  value_flag,       ///< null: nothing; else `flag value`
  switch_on,        ///< true: `flag`
  switch_off,       ///< false: `flag` (a feature NeMo turns off by the key)
  refused_if_on,    ///< a feature trainplan does not model, when on (true, non-null, non-empty)
  custom,           ///< read by resolve() below
};

struct nm_key {
  std::string_view path;          ///< dotted, as NeMo spells it
  nm_role role;
  std::string_view flag;          ///< value_flag, switch_on, switch_off: the Megatron flag of the same meaning
  std::string_view nemo_default;  ///< what NeMo's code reads when the key is absent, where it is not Megatron's
  std::string_view what;          ///< refused_if_on: what it would change; ignored: why, where not obvious
};

constexpr std::array kKeys = {
    // Top level: the run's bookkeeping (NeMo-Framework-Launcher's run/hydra, exp_manager's logging and
    // checkpoints) changes nothing.
    nm_key{"name", nm_role::ignored, "", "", ""},
    nm_key{"restore_from_path", nm_role::ignored, "", "", ""},
    nm_key{"rank", nm_role::ignored, "", "", ""},  // NeMo-Framework-Launcher's +rank=${RANK} on BCP clusters
    nm_key{"defaults", nm_role::section_ignored, "", "", ""},
    nm_key{"hydra", nm_role::section_ignored, "", "", ""},
    nm_key{"run", nm_role::section_ignored, "", "", ""},
    nm_key{"exp_manager", nm_role::section_ignored, "", "", ""},
    nm_key{"s3_checkpointing", nm_role::section_ignored, "", "", ""},
    // trainer: PyTorch Lightning's Trainer arguments.
    nm_key{"trainer", nm_role::section_open, "", "", ""},
    nm_key{"trainer.num_nodes", nm_role::value_flag, "--num-nodes", "", ""},
    nm_key{"trainer.devices", nm_role::custom, "", "", ""},
    nm_key{"trainer.precision", nm_role::custom, "", "", ""},
    nm_key{"trainer.accumulate_grad_batches", nm_role::custom, "", "", ""},
    nm_key{"trainer.strategy", nm_role::refused_if_on, "", "", "the data-parallel strategy (NeMo sets its own)"},
    // model: MegatronGPTModel.
    nm_key{"model", nm_role::section, "", "", ""},
    nm_key{"model.mcore_gpt", nm_role::custom, "", "", ""},
    nm_key{"model.micro_batch_size", nm_role::value_flag, "--micro-batch-size", "", ""},
    nm_key{"model.global_batch_size", nm_role::value_flag, "--global-batch-size", "", ""},
    nm_key{"model.rampup_batch_size", nm_role::ignored, "", "", "as Megatron's --rampup-batch-size"},
    nm_key{"model.tensor_model_parallel_size", nm_role::value_flag, "--tensor-model-parallel-size", "", ""},
    nm_key{"model.pipeline_model_parallel_size", nm_role::value_flag, "--pipeline-model-parallel-size", "", ""},
    nm_key{"model.virtual_pipeline_model_parallel_size", nm_role::custom, "", "", ""},
    nm_key{"model.context_parallel_size", nm_role::value_flag, "--context-parallel-size", "", ""},
    nm_key{"model.expert_model_parallel_size", nm_role::value_flag, "--expert-model-parallel-size", "", ""},
    nm_key{"model.expert_tensor_parallel_size", nm_role::value_flag, "--expert-tensor-parallel-size", "", ""},
    nm_key{"model.pipeline_model_parallel_split_rank", nm_role::refused_if_on, "", "",
           "the pipeline split of an encoder-decoder model"},
    nm_key{"model.pipeline_model_parallel_comm_backend", nm_role::ignored, "", "", ""},
    nm_key{"model.use_tp_pp_dp_mapping", nm_role::switch_on, "--use-tp-pp-dp-mapping", "", ""},
    nm_key{"model.num_layers_in_first_pipeline_stage", nm_role::value_flag, "--decoder-first-pipeline-num-layers", "", ""},
    nm_key{"model.num_layers_in_last_pipeline_stage", nm_role::value_flag, "--decoder-last-pipeline-num-layers", "", ""},
    nm_key{"model.account_for_embedding_in_pipeline_split", nm_role::switch_on,
           "--account-for-embedding-in-pipeline-split", "", ""},
    nm_key{"model.account_for_loss_in_pipeline_split", nm_role::switch_on, "--account-for-loss-in-pipeline-split", "", ""},
    // The model's shape. MCoreGPTModel is built with max_sequence_length = encoder_seq_length (the
    // learned position embedding's rows); the samples are data.seq_length long.
    nm_key{"model.encoder_seq_length", nm_role::value_flag, "--max-position-embeddings", "512", ""},
    nm_key{"model.max_position_embeddings", nm_role::ignored, "", "",
           "Megatron-Core's GPTModel is sized by encoder_seq_length"},
    nm_key{"model.num_layers", nm_role::value_flag, "--num-layers", "", ""},
    nm_key{"model.hidden_size", nm_role::value_flag, "--hidden-size", "", ""},
    nm_key{"model.ffn_hidden_size", nm_role::value_flag, "--ffn-hidden-size", "", ""},
    nm_key{"model.num_attention_heads", nm_role::value_flag, "--num-attention-heads", "", ""},
    nm_key{"model.num_query_groups", nm_role::custom, "", "", ""},
    nm_key{"model.kv_channels", nm_role::value_flag, "--kv-channels", "", ""},
    nm_key{"model.hidden_dropout", nm_role::value_flag, "--hidden-dropout", "", ""},
    nm_key{"model.attention_dropout", nm_role::value_flag, "--attention-dropout", "", ""},
    nm_key{"model.normalization", nm_role::custom, "", "", ""},
    nm_key{"model.layernorm_zero_centered_gamma", nm_role::ignored, "", "", "the same parameters and kernels"},
    nm_key{"model.bias", nm_role::switch_off, "--disable-bias-linear", "", ""},
    nm_key{"model.qkv_bias", nm_role::switch_on, "--add-qkv-bias", "", ""},
    nm_key{"model.activation", nm_role::custom, "", "", ""},
    nm_key{"model.position_embedding_type", nm_role::custom, "", "", ""},
    nm_key{"model.share_embeddings_and_output_weights", nm_role::switch_off, "--untie-embeddings-and-output-weights", "", ""},
    nm_key{"model.make_vocab_size_divisible_by", nm_role::value_flag, "--make-vocab-size-divisible-by", "", ""},
    nm_key{"model.override_vocab_size", nm_role::value_flag, "--padded-vocab-size", "", ""},
    nm_key{"model.tokenizer", nm_role::section_open, "", "", ""},
    nm_key{"model.tokenizer.library", nm_role::custom, "", "", ""},
    nm_key{"model.tokenizer.type", nm_role::custom, "", "", ""},
    nm_key{"model.tokenizer.model", nm_role::custom, "", "", ""},
    nm_key{"model.tokenizer.vocab_file", nm_role::custom, "", "", ""},
    nm_key{"model.tokenizer.merge_file", nm_role::custom, "", "", ""},
    // Read by NeMo's legacy GPT alone (mcore_gpt: false, refused), or by nothing that changes an estimate.
    nm_key{"model.headscale", nm_role::ignored, "", "", "read by NeMo's legacy GPT alone"},
    nm_key{"model.transformer_block_type", nm_role::ignored, "", "", "read by NeMo's legacy GPT alone"},
    nm_key{"model.normalize_attention_scores", nm_role::ignored, "", "", "read by NeMo's legacy GPT alone"},
    nm_key{"model.attention_type", nm_role::ignored, "", "", "read by NeMo's legacy GPT alone"},
    nm_key{"model.ffn_dropout", nm_role::ignored, "", "", "read by NeMo's legacy GPT alone"},
    nm_key{"model.megatron_legacy", nm_role::ignored, "", "", "read by NeMo's legacy GPT alone"},
    nm_key{"model.use_emha", nm_role::refused_if_on, "", "", "the attention kernels (NeMo refuses it itself)"},
    nm_key{"model.activations_checkpoint_layers_per_pipeline", nm_role::ignored, "", "", "read by NeMo's legacy GPT alone"},
    nm_key{"model.use_flash_attention", nm_role::ignored, "", "",
           "Megatron-Core's GPT takes its attention from the layer spec (transformer_engine)"},
    nm_key{"model.openai_gelu", nm_role::ignored, "", "", "the tanh GELU: the same cost"},
    nm_key{"model.init_method_std", nm_role::ignored, "", "", ""},
    nm_key{"model.use_scaled_init_method", nm_role::ignored, "", "", ""},
    nm_key{"model.apply_query_key_layer_scaling", nm_role::ignored, "", "", ""},
    nm_key{"model.layernorm_epsilon", nm_role::ignored, "", "", ""},
    nm_key{"model.do_layer_norm_weight_decay", nm_role::ignored, "", "", ""},
    nm_key{"model.pre_process", nm_role::ignored, "", "", ""},
    nm_key{"model.post_process", nm_role::ignored, "", "", ""},
    nm_key{"model.persist_layer_norm", nm_role::ignored, "", "", ""},
    nm_key{"model.rotary_percentage", nm_role::value_flag, "--rotary-percent", "", ""},
    nm_key{"model.rotary_base", nm_role::ignored, "", "", ""},
    nm_key{"model.rotary_interleaved", nm_role::ignored, "", "", ""},
    nm_key{"model.seq_len_interpolation_factor", nm_role::ignored, "", "", ""},
    nm_key{"model.scale_positional_embedding", nm_role::ignored, "", "", ""},
    // Pipeline communication: NeMo's default is no p2p overlap (Megatron's is overlap, with VPP).
    nm_key{"model.overlap_p2p_comm", nm_role::custom, "", "", ""},
    nm_key{"model.batch_p2p_comm", nm_role::ignored, "", "", ""},
    nm_key{"model.drop_layers", nm_role::refused_if_on, "", "", "the layers the model runs"},
    nm_key{"model.reset_lr", nm_role::ignored, "", "", ""},
    nm_key{"model.reset_lr_steps", nm_role::ignored, "", "", ""},
    // Precision: trainer.precision (or model.precision) with O2's half-precision parameters.
    nm_key{"model.precision", nm_role::custom, "", "", ""},
    nm_key{"model.megatron_amp_O2", nm_role::custom, "", "", ""},
    nm_key{"model.native_amp_init_scale", nm_role::ignored, "", "", ""},
    nm_key{"model.native_amp_growth_interval", nm_role::ignored, "", "", ""},
    nm_key{"model.hysteresis", nm_role::ignored, "", "", ""},
    nm_key{"model.fp32_residual_connection", nm_role::switch_on, "--fp32-residual-connection", "", ""},
    nm_key{"model.fp16_lm_cross_entropy", nm_role::switch_on, "--fp16-lm-cross-entropy", "", ""},
    nm_key{"model.grad_allreduce_chunk_size_mb", nm_role::ignored, "", "", "read without a distributed optimizer alone"},
    nm_key{"model.grad_div_ar_fusion", nm_role::ignored, "", "", ""},
    // Kernels.
    nm_key{"model.gradient_accumulation_fusion", nm_role::custom, "", "", ""},
    nm_key{"model.bias_activation_fusion", nm_role::custom, "", "", ""},
    nm_key{"model.bias_dropout_add_fusion", nm_role::switch_off, "--no-bias-dropout-fusion", "", ""},
    nm_key{"model.masked_softmax_fusion", nm_role::switch_off, "--no-masked-softmax-fusion", "", ""},
    nm_key{"model.get_attention_mask_from_fusion", nm_role::ignored, "", "", ""},
    nm_key{"model.apply_rope_fusion", nm_role::switch_off, "--no-rope-fusion", "", ""},
    nm_key{"model.cross_entropy_loss_fusion", nm_role::switch_on, "--cross-entropy-loss-fusion", "", ""},
    nm_key{"model.transformer_engine", nm_role::custom, "", "", ""},
    nm_key{"model.attention_backend", nm_role::value_flag, "--attention-backend", "", ""},
    nm_key{"model.deterministic_mode", nm_role::switch_on, "--deterministic-mode", "", ""},
    nm_key{"model.enable_cuda_graph", nm_role::switch_on, "--enable-cuda-graph", "", ""},
    nm_key{"model.use_te_rng_tracker", nm_role::ignored, "", "", ""},
    nm_key{"model.sharp", nm_role::switch_on, "--use-sharp", "", ""},
    // FP8 (Transformer Engine's delayed scaling: the only recipe NeMo 1 builds).
    nm_key{"model.fp8", nm_role::custom, "", "", ""},
    nm_key{"model.fp8_e4m3", nm_role::custom, "", "", ""},
    nm_key{"model.fp8_hybrid", nm_role::custom, "", "", ""},
    nm_key{"model.fp8_params", nm_role::custom, "", "", ""},
    nm_key{"model.fp8_margin", nm_role::custom, "", "", ""},
    nm_key{"model.fp8_interval", nm_role::custom, "", "", ""},
    nm_key{"model.fp8_wgrad", nm_role::custom, "", "", ""},
    nm_key{"model.fp8_amax_history_len", nm_role::ignored, "", "", ""},
    nm_key{"model.fp8_amax_compute_algo", nm_role::ignored, "", "", ""},
    nm_key{"model.reduce_amax", nm_role::ignored, "", "", ""},
    nm_key{"model.tp_only_amax_red", nm_role::ignored, "", "", ""},
    // Tensor-parallel communication overlap (Transformer Engine's userbuffers).
    nm_key{"model.ub_tp_comm_overlap", nm_role::custom, "", "", ""},
    nm_key{"model.ub_tp_comm_overlap_cfg", nm_role::section_ignored, "", "", ""},
    nm_key{"model.ub_tp_comm_bootstrap_backend", nm_role::ignored, "", "", ""},
    // Activation checkpointing.
    nm_key{"model.activations_checkpoint_granularity", nm_role::custom, "", "", ""},
    nm_key{"model.activations_checkpoint_method", nm_role::value_flag, "--recompute-method", "", ""},
    nm_key{"model.activations_checkpoint_num_layers", nm_role::custom, "", "", ""},
    nm_key{"model.num_micro_batches_with_partial_activation_checkpoints", nm_role::refused_if_on, "", "",
           "which micro-batches are checkpointed"},
    nm_key{"model.sequence_parallel", nm_role::custom, "", "", ""},
    nm_key{"model.cpu_offloading", nm_role::custom, "", "", ""},
    nm_key{"model.cpu_offloading_num_layers", nm_role::custom, "", "", ""},
    nm_key{"model.cpu_offloading_activations", nm_role::custom, "", "", ""},
    nm_key{"model.cpu_offloading_weights", nm_role::custom, "", "", ""},
    // PyTorch FSDP in place of Megatron's data parallelism.
    nm_key{"model.fsdp", nm_role::refused_if_on, "", "", "the data-parallel sharding (NeMo's PyTorch FSDP)"},
    nm_key{"model.fsdp_sharding_strategy", nm_role::ignored, "", "", "read with fsdp alone"},
    nm_key{"model.fsdp_grad_reduce_dtype", nm_role::ignored, "", "", "read with fsdp alone"},
    nm_key{"model.fsdp_sharded_checkpoint", nm_role::ignored, "", "", "read with fsdp alone"},
    nm_key{"model.fsdp_use_orig_params", nm_role::ignored, "", "", "read with fsdp alone"},
    // Mixture of experts (megatron_gpt_model.py build_transformer_config's MoE keys).
    nm_key{"model.num_moe_experts", nm_role::value_flag, "--num-experts", "", ""},
    nm_key{"model.moe_router_topk", nm_role::custom, "", "", ""},
    nm_key{"model.moe_token_dropping", nm_role::refused_if_on, "", "", "the tokens each expert runs (token dropping)"},
    nm_key{"model.moe_router_load_balancing_type", nm_role::ignored, "", "", ""},
    nm_key{"model.moe_grouped_gemm", nm_role::switch_on, "--moe-grouped-gemm", "", ""},
    nm_key{"model.moe_aux_loss_coeff", nm_role::ignored, "", "", ""},
    nm_key{"model.moe_z_loss_coeff", nm_role::ignored, "", "", ""},
    nm_key{"model.moe_input_jitter_eps", nm_role::ignored, "", "", ""},
    nm_key{"model.mcore_customization_config", nm_role::refused_if_on, "", "", "the model (fields set on it directly)"},
    // Megatron-Core fields that build_transformer_config sets itself (its config_mapping, and
    // megatron_gpt_model.py's model_specific_configs), whatever a key of the same name says.
    nm_key{"model.add_bias_linear", nm_role::ignored, "", "", "NeMo sets it from bias"},
    nm_key{"model.gated_linear_unit", nm_role::ignored, "", "", "NeMo sets it from activation"},
    nm_key{"model.activation_func", nm_role::ignored, "", "", "NeMo sets it from activation"},
    nm_key{"model.init_method", nm_role::ignored, "", "", "NeMo sets it from init_method_std"},
    nm_key{"model.output_layer_init_method", nm_role::ignored, "", "", "NeMo sets it from init_method_std"},
    nm_key{"model.attention_softmax_in_fp32", nm_role::ignored, "", "", "NeMo sets it"},
    nm_key{"model.bias_dropout_fusion", nm_role::ignored, "", "", "NeMo sets it from bias_dropout_add_fusion"},
    nm_key{"model.recompute_granularity", nm_role::ignored, "", "", "NeMo sets it from activations_checkpoint_granularity"},
    nm_key{"model.recompute_method", nm_role::ignored, "", "", "NeMo sets it from activations_checkpoint_method"},
    nm_key{"model.recompute_num_layers", nm_role::ignored, "", "", "NeMo sets it from activations_checkpoint_num_layers"},
    nm_key{"model.distribute_saved_activations", nm_role::ignored, "", "", "NeMo sets it false"},
    nm_key{"model.deallocate_pipeline_outputs", nm_role::ignored, "", "", "NeMo sets it"},
    nm_key{"model.apply_residual_connection_post_layernorm", nm_role::ignored, "", "", "NeMo sets it false"},
    nm_key{"model.tp_comm_overlap", nm_role::ignored, "", "", "NeMo sets it from ub_tp_comm_overlap"},
    // Other keys NeMo's Megatron GPT reads (megatron_gpt_model.py, megatron_base_model.py).
    nm_key{"model.hyena", nm_role::refused_if_on, "", "", "the model (Hyena operators in place of attention)"},
    nm_key{"model.apply_embedding_scaling", nm_role::ignored, "", "", "read by NeMo's legacy GPT alone"},
    nm_key{"model.scale_factor", nm_role::ignored, "", "", "RoPE scaling"},
    nm_key{"model.low_freq_factor", nm_role::ignored, "", "", "RoPE scaling"},
    nm_key{"model.high_freq_factor", nm_role::ignored, "", "", "RoPE scaling"},
    nm_key{"model.old_context_len", nm_role::ignored, "", "", "RoPE scaling"},
    nm_key{"model.with_fp32_embedding_grads", nm_role::ignored, "", "", "read by Apex's distributed Adam alone"},
    nm_key{"model.distributed_adam_bucket_merge_size", nm_role::ignored, "", "", "read by Apex's distributed Adam alone"},
    nm_key{"model.async_grad_allreduce", nm_role::ignored, "", "", ""},
    nm_key{"model.tensor_model_parallel_world_size", nm_role::ignored, "", "", ""},
    nm_key{"model.chakra_profile", nm_role::section_ignored, "", "", ""},
    nm_key{"model.memory_profile", nm_role::section_ignored, "", "", ""},
    nm_key{"model.dump_debug_info", nm_role::ignored, "", "", ""},
    nm_key{"model.dump_debug_info_to_file", nm_role::ignored, "", "", ""},
    nm_key{"model.freeze_updates", nm_role::section_ignored, "", "", ""},
    nm_key{"model.skip_fp8_attention_checkpoint_load", nm_role::ignored, "", "", ""},
    nm_key{"model.use_loss_mask", nm_role::ignored, "", "", ""},
    nm_key{"model.nemo_version", nm_role::ignored, "", "", ""},
    nm_key{"model.init_from_nemo_model", nm_role::ignored, "", "", ""},
    nm_key{"model.init_from_pretrained_model", nm_role::ignored, "", "", ""},
    nm_key{"model.init_from_ptl_ckpt", nm_role::ignored, "", "", ""},
    // Bookkeeping.
    nm_key{"model.seed", nm_role::ignored, "", "", ""},
    nm_key{"model.resume_from_checkpoint", nm_role::ignored, "", "", ""},
    nm_key{"model.restore_from_path", nm_role::ignored, "", "", ""},
    nm_key{"model.restore_from_ckpt", nm_role::ignored, "", "", ""},
    nm_key{"model.skip_train", nm_role::ignored, "", "", ""},
    nm_key{"model.use_cpu_initialization", nm_role::ignored, "", "", ""},
    nm_key{"model.onnx_safe", nm_role::ignored, "", "", ""},
    nm_key{"model.apex_transformer_log_level", nm_role::ignored, "", "", ""},
    nm_key{"model.gradient_as_bucket_view", nm_role::ignored, "", "", ""},
    nm_key{"model.sync_batch_comm", nm_role::ignored, "", "", ""},
    nm_key{"model.nccl_communicator_config_path", nm_role::ignored, "", "", ""},
    nm_key{"model.validation_param_sync_overlap", nm_role::ignored, "", "", ""},
    nm_key{"model.gc_interval", nm_role::ignored, "", "", ""},
    nm_key{"model.enable_megatron_timers", nm_role::ignored, "", "", ""},
    nm_key{"model.megatron_timer_kwargs", nm_role::section_ignored, "", "", ""},
    nm_key{"model.nsys_profile", nm_role::section_ignored, "", "", ""},
    nm_key{"model.data", nm_role::section_open, "", "", ""},
    nm_key{"model.data.seq_length", nm_role::custom, "", "", ""},
    // model.optim: the optimizer and Megatron-Core's DistributedDataParallelConfig.
    nm_key{"model.optim", nm_role::section, "", "", ""},
    nm_key{"model.optim.name", nm_role::custom, "", "", ""},
    nm_key{"model.optim.lr", nm_role::ignored, "", "", ""},
    nm_key{"model.optim.weight_decay", nm_role::ignored, "", "", ""},
    nm_key{"model.optim.betas", nm_role::ignored, "", "", ""},
    nm_key{"model.optim.eps", nm_role::ignored, "", "", ""},
    nm_key{"model.optim.sched", nm_role::section_ignored, "", "", ""},
    nm_key{"model.optim.bucket_cap_mb", nm_role::custom, "", "", ""},
    nm_key{"model.optim.contiguous_grad_buffer", nm_role::custom, "", "", ""},
    nm_key{"model.optim.contiguous_param_buffer", nm_role::custom, "", "", ""},
    // modelPT.setup_megatron_optimization builds OptimizerConfig without it: fp32 states whatever it says.
    nm_key{"model.optim.dtype", nm_role::custom, "", "", ""},
    nm_key{"model.optim.overlap_grad_sync", nm_role::switch_on, "--overlap-grad-reduce", "", ""},
    nm_key{"model.optim.overlap_param_sync", nm_role::switch_on, "--overlap-param-gather", "", ""},
    nm_key{"model.optim.grad_sync_dtype", nm_role::custom, "", "", ""},
    nm_key{"model.optim.num_distributed_optimizer_instances", nm_role::value_flag,
           "--num-distributed-optimizer-instances", "", ""},
    nm_key{"model.optim.overlap_param_gather_with_optimizer_step", nm_role::switch_on,
           "--overlap-param-gather-with-optimizer-step", "", ""},
    nm_key{"model.optim.ddp_bucket_size", nm_role::value_flag, "--ddp-bucket-size", "", ""},
    nm_key{"model.optim.check_for_nan_in_grad", nm_role::ignored, "", "", ""},
    nm_key{"model.optim.average_in_collective", nm_role::ignored, "", "", ""},
    nm_key{"model.optim.align_param_gather", nm_role::ignored, "", "", ""},
    // Apex DistributedFusedAdam's options as NeMo passes them (nemo/core/optim/distributed_adam.py): the
    // optimizer's NCCL user buffers change its collectives; a lock's timeout changes nothing.
    nm_key{"model.optim.nccl_ub", nm_role::refused_if_on, "", "", "the optimizer's collectives (NCCL user buffers)"},
    nm_key{"model.optim.lock_timeout", nm_role::ignored, "", "", ""},
    // NeMo-Framework-Launcher's environment of the job (NVTE_*, NCCL_*, CUDA_* variables): read through
    // the launch line's table of variables (src/cli/launch_env.cc; reader::environment).
    nm_key{"env_vars", nm_role::custom, "", "", ""},
};

const nm_key* find_key(std::string_view path) { return find_row<kKeys>(path); }

std::string parent_of(const std::string& path) {
  const std::size_t dot = path.rfind('.');
  return dot == std::string::npos ? "" : path.substr(0, dot);
}

/// A value as NeMo would see it.
struct nm_value {
  json v;
  std::string text;  ///< scalars as written (numbers keep their spelling), lists comma-joined
  int line = 0;      ///< in the file; 0 on the launch line
  bool launch = false;
};

std::string text_of(const json& v, const std::string& written) {
  if (!written.empty()) return written;
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "null";
  if (v.is_array()) {
    std::string out;
    for (const json& e : v) {
      if (!out.empty()) out += ',';
      out += text_of(e, "");
    }
    return out;
  }
  return v.dump();
}

bool truthy(const json& v) {
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_null()) return false;
  if (v.is_string()) return !v.get<std::string>().empty() && v.get<std::string>() != "null";
  if (v.is_array()) return !v.empty();
  if (v.is_object()) return std::any_of(v.begin(), v.end(), [](const json& e) { return truthy(e); });
  if (v.is_number()) return v.get<double>() != 0;
  return true;
}

class reader {
 public:
  reader(std::string path, std::string flag) : path_(std::move(path)), flag_(std::move(flag)) {
    name_ = std::filesystem::path(path_).filename().string();
  }

  void read_file() {
    std::string text;
    try {
      text = read_input_file(path_, flag_, kMaxConfigFileBytes);
    } catch (const input_error& e) {
      throw input_error(fmt::format("{} {}: {}; its model, parallel sizes, batch, precision and checkpointing decide "
                                    "the estimate: give the file, or its settings as flags",
                                    flag_, path_, e.what()));
    }
    const detail::document d = detail::parse_document(text, path_, false, "NeMo config", "NeMo config keys");
    walk(d, d.root, "");
  }

  void add_override(const nemo_override& o) {
    if (o.value.find_first_of("\n\r") != std::string::npos) {
      throw input_error(literal_text(fmt::format("launch line: {}=…: a value on more than one line", o.key)));
    }
    if (o.remove) {
      if (values_.erase(o.key) > 0) overridden_.push_back(fmt::format("{} (NeMo config) → removed (launch line ~{})", o.key, o.key));
      removed_.push_back(o.key);
      return;
    }
    const nm_key* k = find_key(o.key);
    if (k != nullptr && (k->role == nm_role::section || k->role == nm_role::section_open)) {
      throw input_error(literal_text(fmt::format("launch line: {}={}: {} is a section of NeMo's config; override its keys",
                                                 o.key, o.value, o.key)));
    }
    if (under_ignored_section(o.key) || (k != nullptr && k->role == nm_role::section_ignored)) {
      ignored_.push_back(o.key + "=" + o.value);
      return;
    }
    if (k == nullptr && open_section(o.key)) {
      ignored_.push_back(o.key + "=" + o.value);
      return;
    }
    if (o.key.starts_with("env_vars.")) {  // one variable of the job's environment (reader::environment)
      detail::document d = detail::parse_document("v: " + o.value, "launch line " + o.key + "=" + o.value, false,
                                                  "override", "values");
      nm_value& env = values_["env_vars"];
      if (!env.v.is_object()) env = nm_value{json::object(), "", 0, true};
      env.v[o.key.substr(9)] = d.root["v"];
      return;
    }
    if (const nm_key* refused = refused_section(o.key); k == nullptr && refused != nullptr) {
      throw input_error(literal_text(fmt::format("launch line: {}={}: {} would change {}, which trainplan does not model",
                                                 o.key, o.value, refused->path, refused->what)));
    }
    if (k == nullptr && !passes_through(o.key)) {
      throw input_error(literal_text(fmt::format("launch line: {}={}: not a NeMo setting trainplan knows; if it changes "
                                                 "no estimate, tell us and we will list it",
                                                 o.key, o.value)));
    }
    // The value as YAML reads it (Hydra's override grammar agrees on null, booleans, numbers, [lists], 'quotes').
    detail::document d = detail::parse_document("v: " + o.value, "launch line " + o.key + "=" + o.value, false,
                                                "override", "values");
    nm_value v{d.root["v"], "", 0, true};
    if (const auto n = d.numbers.find("v"); n != d.numbers.end()) v.text = n->second;
    v.text = text_of(v.v, v.text);
    if (const auto before = values_.find(o.key); before != values_.end() && before->second.text != v.text) {
      overridden_.push_back(fmt::format("{} {} (NeMo config) → {} (launch line)", o.key, before->second.text, v.text));
    }
    values_[o.key] = std::move(v);
  }

  nemo_config resolve();

 private:
  /// A key below model that is not in the table: NeMo passes any key named like a field of
  /// Megatron-Core's TransformerConfig straight into it (build_transformer_config), as Megatron's flag
  /// of that name does.
  static bool passes_through(const std::string& path) {
    return path.starts_with("model.") && path.find('.', 6) == std::string::npos;
  }
  static bool open_section(const std::string& path) {
    const nm_key* p = find_key(parent_of(path));
    return p != nullptr && p->role == nm_role::section_open;
  }
  /// The outermost mapping above `path` whose row has `role`, or null.
  static const nm_key* section_above(const std::string& path, nm_role role) {
    for (std::size_t dot = path.find('.'); dot != std::string::npos; dot = path.find('.', dot + 1)) {
      const nm_key* k = find_key(path.substr(0, dot));
      if (k != nullptr && k->role == role) return k;
    }
    return nullptr;
  }
  /// The mapping above `path` that is refused when set (env_vars), or null.
  static const nm_key* refused_section(const std::string& path) { return section_above(path, nm_role::refused_if_on); }
  static bool under_ignored_section(const std::string& path) {
    return section_above(path, nm_role::section_ignored) != nullptr;
  }

  void walk(const detail::document& d, const json& node, const std::string& prefix) {
    for (auto it = node.begin(); it != node.end(); ++it) {
      const std::string path = prefix.empty() ? it.key() : prefix + "." + it.key();
      const auto line_it = d.lines.find(path);
      const int line = line_it == d.lines.end() ? 0 : line_it->second;
      const nm_key* k = find_key(path);
      if (k != nullptr && k->role == nm_role::section_ignored) {
        ignored_.push_back(name_ + ":" + path + (it.value().is_object() ? ".*" : ""));
        continue;
      }
      if (k != nullptr && (k->role == nm_role::section || k->role == nm_role::section_open)) {
        if (it.value().is_null()) continue;
        if (!it.value().is_object()) throw input_error(fmt::format("{}:{}: {}: expected a mapping", path_, line, path));
        walk(d, it.value(), path);
        continue;
      }
      if (k == nullptr && !passes_through(path)) {
        if (open_section(path)) {
          ignored_.push_back(name_ + ":" + path + (it.value().is_object() ? ".*" : ""));
          continue;
        }
        throw input_error(fmt::format("{}:{}: {}: not a NeMo setting trainplan knows; if it changes no estimate, tell "
                                      "us and we will list it",
                                      path_, line, path));
      }
      const auto n = d.numbers.find(path);
      nm_value v{it.value(), "", line, false};
      v.text = text_of(v.v, n == d.numbers.end() ? "" : n->second);
      values_[path] = std::move(v);
    }
  }

  /// The key's value with OmegaConf's interpolations evaluated: references (`${model.encoder_seq_length}`,
  /// relative `${.hidden_size}`, NeMo-Framework-Launcher's `${training.model.…}`) and the resolvers NeMo
  /// registers (nemo/core/config/hydra_runner.py: multiply, sum); null when absent.
  const nm_value* find(const std::string& key, int depth = 0) const {
    const auto it = values_.find(key);
    if (it == values_.end()) return nullptr;
    const nm_value& v = it->second;
    if (!v.v.is_string() || !v.v.get_ref<const std::string&>().starts_with("${")) return &v;
    if (const auto r = resolved_.find(key); r != resolved_.end()) return &r->second;
    const std::string& s = v.v.get_ref<const std::string&>();
    std::size_t pos = 0;
    nm_value r = v;
    r.v = evaluate(v, key, s, pos, depth);
    if (pos != s.size()) {
      fail(v, key, fmt::format("'{}' mixes an interpolation with text, which trainplan does not evaluate; give the value", s));
    }
    r.text = text_of(r.v, "");
    return &resolved_.emplace(key, std::move(r)).first->second;
  }

  /// `${…}` at s[pos]: a reference or a resolver call; pos ends past its '}'.
  json evaluate(const nm_value& v, const std::string& key, const std::string& s, std::size_t& pos, int depth) const {
    if (depth > 8) fail(v, key, "interpolations nest deeper than 8 (a cycle?)");
    auto bad = [&] { fail(v, key, fmt::format("'{}' is not an interpolation trainplan reads", s)); };
    if (s.compare(pos, 2, "${") != 0) bad();
    pos += 2;
    const std::size_t name_end = s.find_first_of(":}", pos);
    if (name_end == std::string::npos) bad();
    std::string name = s.substr(pos, name_end - pos);
    name.erase(0, name.find_first_not_of(' '));
    name.erase(name.find_last_not_of(' ') + 1);
    pos = name_end;
    if (s[pos] == '}') {
      ++pos;
      const nm_value* r = find(reference(key, name), depth + 1);
      if (r == nullptr) fail(v, key, fmt::format("'{}' names {}, which the config does not set", s, reference(key, name)));
      return r->v;
    }
    // A resolver: ${name:arg, arg}, each argument a number or an interpolation.
    ++pos;
    std::vector<json> args;
    while (true) {
      while (pos < s.size() && s[pos] == ' ') ++pos;
      if (pos >= s.size()) bad();
      if (s.compare(pos, 2, "${") == 0) {
        args.push_back(evaluate(v, key, s, pos, depth + 1));
      } else {
        const std::size_t end = s.find_first_of(",}", pos);
        if (end == std::string::npos) bad();
        std::string literal = s.substr(pos, end - pos);
        literal.erase(literal.find_last_not_of(' ') + 1);
        const json number = json::parse(literal, nullptr, false);
        if (!number.is_number()) bad();
        args.push_back(number);
        pos = end;
      }
      while (pos < s.size() && s[pos] == ' ') ++pos;
      if (pos >= s.size()) bad();
      if (s[pos] == '}') {
        ++pos;
        break;
      }
      if (s[pos] != ',') bad();
      ++pos;
    }
    if ((name != "multiply" && name != "sum") || args.size() != 2 || !args[0].is_number() || !args[1].is_number()) {
      fail(v, key, fmt::format("'{}': trainplan evaluates NeMo's multiply and sum of two numbers alone", s));
    }
    if (args[0].is_number_integer() && args[1].is_number_integer()) {
      const std::int64_t a = args[0].get<std::int64_t>(), b = args[1].get<std::int64_t>();
      if (std::max(std::abs(a), std::abs(b)) > (std::int64_t{1} << 31)) fail(v, key, "a number past 2^31 in an interpolation");
      return name == "multiply" ? json(a * b) : json(a + b);
    }
    const double a = args[0].get<double>(), b = args[1].get<double>();
    return name == "multiply" ? json(a * b) : json(a + b);
  }

  /// The key an interpolation at `key` names: relative (`.x` beside it, `..x` one level up) or absolute.
  std::string reference(const std::string& key, const std::string& ref) const {
    if (ref.starts_with('.')) {
      std::string base = parent_of(key);
      std::size_t dots = 0;
      while (dots < ref.size() && ref[dots] == '.') ++dots;
      for (std::size_t up = 1; up < dots; ++up) base = parent_of(base);
      return base.empty() ? ref.substr(dots) : base + "." + ref.substr(dots);
    }
    if (!values_.contains(ref) && ref.starts_with("training.")) return ref.substr(9);
    return ref;
  }

  /// Where a value was set, as messages begin: "launch line" or "file:line".
  std::string where_of(const nm_value& v) const {
    return v.launch ? std::string("launch line") : fmt::format("{}:{}", path_, v.line);
  }

  [[noreturn]] void fail(const nm_value& v, const std::string& key, const std::string& why) const {
    if (v.launch) throw input_error(literal_text(fmt::format("launch line: {}={}: {}", key, v.text, why)));
    throw input_error(literal_text(fmt::format("{}:{}: {}: {}", path_, v.line, key, why)));
  }

  /// Where a setting came from, for messages: "file:line", "launch line" or NeMo's default.
  std::string where(const std::string& key) const {
    const auto it = values_.find(key);
    if (it == values_.end()) return "NeMo's default";
    return it->second.launch ? "launch line" : fmt::format("{}:{}", path_, it->second.line);
  }

  /// Lists a key that changes no estimate, as the reports show it ("llama3_8b.yaml:model.x", or the key
  /// alone when the launch line set it), with why where it is not obvious.
  void ignore(const std::string& key, std::string_view why = {}) {
    const auto it = values_.find(key);
    const bool launch = it != values_.end() && it->second.launch;
    ignored_.push_back((launch ? key : name_ + ":" + key) + (why.empty() ? "" : fmt::format(" ({})", why)));
  }

  void add(const std::string& key, std::vector<std::string> tokens) {
    const auto it = values_.find(key);
    out_.settings.push_back({std::move(tokens), key, where(key), it != values_.end() && it->second.launch});
  }

  /// A scalar's text, or `otherwise` when absent or null.
  std::string scalar(const std::string& key, std::string_view otherwise) const {
    const nm_value* v = find(key);
    if (v == nullptr || v->v.is_null()) return std::string(otherwise);
    if (v->v.is_object() || v->v.is_array()) fail(*v, key, "expected a single value");
    return v->v.is_string() ? v->v.get<std::string>() : v->text;
  }

  bool boolean(const std::string& key, bool otherwise) const {
    const nm_value* v = find(key);
    if (v == nullptr || v->v.is_null()) return otherwise;
    if (!v->v.is_boolean()) fail(*v, key, "expected true or false");
    return v->v.get<bool>();
  }

  std::int64_t integer(const std::string& key, std::int64_t otherwise) const {
    const nm_value* v = find(key);
    if (v == nullptr || v->v.is_null()) return otherwise;
    if (!v->v.is_number_integer()) fail(*v, key, "expected a whole number");
    return v->v.get<std::int64_t>();
  }

  void by_table();
  void passthrough();
  void precision();
  void model_shape();
  void parallelism();
  void kernels_and_fp8();
  void checkpointing();
  void offloading();
  void environment();
  void optimizer();
  void apex_distributed_adam();
  void tokenizer();

  std::string path_, flag_, name_;
  std::map<std::string, nm_value> values_;
  mutable std::map<std::string, nm_value> resolved_;  ///< interpolated values, evaluated once
  std::vector<std::string> ignored_, overridden_, removed_;
  nemo_config out_;
};

/// The rows that say their flag: value_flag, switch_on, switch_off, refused_if_on, ignored.
void reader::by_table() {
  for (const nm_key& k : kKeys) {
    if (k.role == nm_role::custom || k.role == nm_role::section || k.role == nm_role::section_open ||
        k.role == nm_role::section_ignored) {
      continue;
    }
    const std::string key(k.path);
    // Ignored keys are not evaluated (their interpolations may name the launcher's variables).
    const nm_value* v = k.role == nm_role::ignored ? (values_.contains(key) ? &values_.at(key) : nullptr) : find(key);
    if (v == nullptr && k.nemo_default.empty()) continue;
    const json value = v != nullptr ? v->v : json(std::string(k.nemo_default));
    switch (k.role) {
      case nm_role::value_flag:
        if (value.is_null()) break;
        if (value.is_object() || value.is_array() || value.is_boolean()) fail(*v, key, "expected a number or a name");
        add(key, {std::string(k.flag), v != nullptr ? (value.is_string() ? value.get<std::string>() : v->text)
                                                    : std::string(k.nemo_default)});
        break;
      case nm_role::switch_on:
      case nm_role::switch_off:
        if (value.is_null()) break;
        if (!value.is_boolean()) fail(*v, key, "expected true or false");
        if (value.get<bool>() == (k.role == nm_role::switch_on)) add(key, {std::string(k.flag)});
        break;
      case nm_role::refused_if_on:
        if (v != nullptr && truthy(value)) {
          fail(*v, key, fmt::format("would change {}, which trainplan does not model; `~{}` (or {}=null) on the "
                                    "launch line plans the job without it",
                                    k.what, key, key));
        }
        break;
      case nm_role::ignored:
        if (v != nullptr) {
          ignore(key, k.what);
        }
        break;
      default:
        break;
    }
  }
}

/// The fields NeMo copies into Megatron-Core's TransformerConfig and ModelParallelConfig by name.
constexpr std::string_view kCoreConfigFields[] = {
#include "megatron_core_config_fields.inc"
};

/// model.X without a row. NeMo copies a key named like a field of Megatron-Core's TransformerConfig or
/// ModelParallelConfig into it (build_transformer_config), as Megatron's --X does: it is classified as
/// that flag is (modelled, ignored, refused), and a field without such a flag is refused when on. A key
/// that is neither is read by nothing: NeMo ignores it, and so is it here, said so (a misspelling?).
void reader::passthrough() {
  for (const auto& [key, v] : values_) {
    if (find_key(key) != nullptr || !passes_through(key)) continue;
    const std::string field = key.substr(6);
    if (std::find(std::begin(kCoreConfigFields), std::end(kCoreConfigFields), field) == std::end(kCoreConfigFields)) {
      ignore(key, "neither NeMo nor Megatron-Core reads it: a misspelling?");
      continue;
    }
    std::string flag = "--" + field;
    std::replace(flag.begin(), flag.end(), '_', '-');
    const nm_value* r = find(key);
    if (r->v.is_null() || (r->v.is_boolean() && !r->v.get<bool>())) {
      ignore(key, "off");
      continue;
    }
    if (const json* def = megatron_core_default_of(key); def != nullptr && same_config_value(*def, r->v)) {
      ignore(key, "Megatron-Core's default");
      continue;
    }
    if (classify_flag(flag) == flag_class::unknown) {
      fail(v, key, fmt::format("sets Megatron-Core's {} ({}), which trainplan does not read; `~{}` on the launch line "
                               "plans the job without it",
                               field, v.text, key));
    }
    if (r->v.is_object()) fail(v, key, "expected a value, got a mapping");
    if (r->v.is_boolean()) {
      add(key, {flag});
    } else if (r->v.is_array()) {
      std::vector<std::string> tokens{flag};
      for (const json& e : r->v) tokens.push_back(text_of(e, ""));
      add(key, tokens);
    } else {
      add(key, {flag, r->v.is_string() ? r->v.get<std::string>() : r->text});
    }
  }
}

/// utils_funcs.torch_dtype_from_precision of model.precision (else trainer.precision); O2 keeps the
/// model in that dtype with fp32 main parameters, which is what Megatron's --bf16/--fp16 models.
void reader::precision() {
  // megatron_gpt_model.py __init__: model.precision unless null, else the trainer's.
  const nm_value* own = find("model.precision");
  const std::string key = own != nullptr && !own->v.is_null() ? "model.precision" : "trainer.precision";
  const std::string p = scalar(key, "32-true");
  std::string flag;
  if (p == "bf16" || p == "bf16-mixed") flag = "--bf16";
  else if (p == "16" || p == "16-mixed") flag = "--fp16";
  else if (p == "32" || p == "32-true") flag = "--fp32";
  else fail(*find(key), key, "expected bf16, bf16-mixed, 16, 16-mixed, 32 or 32-true (NeMo's torch_dtype_from_precision)");
  if (flag != "--fp32" && !boolean("model.megatron_amp_O2", false)) {
    const nm_value* o2 = find("model.megatron_amp_O2");
    const std::string why = fmt::format("{} {} without megatron_amp_O2 keeps the model's parameters in fp32 under "
                                        "autocast (O1), which trainplan does not model; model.megatron_amp_O2=true is",
                                        key, p);
    if (o2 != nullptr) fail(*o2, "model.megatron_amp_O2", why);
    fail(*find(key), key, why);
  }
  add(key, {flag});
}

void reader::model_shape() {
  if (!boolean("model.mcore_gpt", false)) {
    const nm_value* v = find("model.mcore_gpt");
    const std::string why = "NeMo's legacy GPT (mcore_gpt false, NeMo's default) is not modelled; model.mcore_gpt=true "
                            "(Megatron-Core's GPTModel, every NeMo-Framework-Launcher config) is";
    if (v != nullptr) fail(*v, "model.mcore_gpt", why);
    throw input_error(fmt::format("{}: model.mcore_gpt is not set: {}", path_, why));
  }
  // Grouped-query attention: none means every head has its own K and V.
  if (const std::int64_t groups = integer("model.num_query_groups", 0); groups > 0) {
    add("model.num_query_groups", {"--group-query-attention", "--num-query-groups", std::to_string(groups)});
  }
  // megatron_gpt_model.py build_transformer_config: layernorm1p is LayerNorm with a zero-centred gamma.
  const std::string norm = scalar("model.normalization", "layernorm");
  std::string lower = norm;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower == "layernorm" || lower == "layernorm1p") add("model.normalization", {"--normalization", "LayerNorm"});
  else if (lower == "rmsnorm") add("model.normalization", {"--normalization", "RMSNorm"});
  else fail(*find("model.normalization"), "model.normalization", "expected layernorm, layernorm1p or rmsnorm");
  // activation_to_func: the 'fast-' variants are the same functions; '*glu' are gated.
  const std::string act = scalar("model.activation", "gelu");
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 9> kActivations = {{
      {"gelu", "gelu"}, {"relu", "relu"}, {"squared-relu", "squared_relu"}, {"swiglu", "swiglu"},
      {"fast-swiglu", "swiglu"}, {"geglu", "geglu"}, {"fast-geglu", "geglu"}, {"reglu", "reglu"}, {"fast-reglu", "reglu"},
  }};
  const auto a = std::find_if(kActivations.begin(), kActivations.end(), [&](const auto& x) { return x.first == act; });
  if (a == kActivations.end()) {
    fail(*find("model.activation"), "model.activation",
         "expected gelu, relu, squared-relu, swiglu, geglu, reglu or their fast- forms");
  }
  add("model.activation", {"--activation", std::string(a->second)});
  // MCoreGPTModel accepts learned_absolute, rope and none; NeMo's legacy encodings are not Megatron-Core's.
  const std::string pos = scalar("model.position_embedding_type", "learned_absolute");
  if (pos == "learned_absolute" || pos == "rope" || pos == "none") {
    add("model.position_embedding_type", {"--position-embedding-type", pos});
  } else {
    fail(*find("model.position_embedding_type"), "model.position_embedding_type",
         "expected learned_absolute, rope or none (what Megatron-Core's GPTModel builds)");
  }
  // The samples' length (megatron_gpt_config.yaml: data.seq_length: ${model.encoder_seq_length}).
  const std::string seq_key = values_.contains("model.data.seq_length") ? "model.data.seq_length" : "model.encoder_seq_length";
  add(seq_key, {"--seq-length", std::to_string(integer(seq_key, 512))});
  // NeMo's router default is top-2 (megatron_gpt_model.py), Megatron's too; said for MoE models alone.
  if (const nm_value* e = find("model.num_moe_experts"); e != nullptr && !e->v.is_null()) {
    add("model.moe_router_topk", {"--moe-router-topk", std::to_string(integer("model.moe_router_topk", 2))});
  } else if (values_.contains("model.moe_router_topk")) {
    ignore("model.moe_router_topk", "a dense model");
  }
}

void reader::parallelism() {
  const std::int64_t tp = integer("model.tensor_model_parallel_size", 1);
  // _validate_and_override_config: sequence parallelism at TP 1 is turned off.
  if (boolean("model.sequence_parallel", false) && tp > 1) add("model.sequence_parallel", {"--sequence-parallel"});
  // A virtual size of 1 is none.
  if (const std::int64_t vp = integer("model.virtual_pipeline_model_parallel_size", 1); vp > 1) {
    add("model.virtual_pipeline_model_parallel_size", {"--virtual-pipeline-model-parallel-size", std::to_string(vp)});
    if (!boolean("model.overlap_p2p_comm", false)) add("model.overlap_p2p_comm", {"--no-overlap-p2p-communication"});
  }
  // trainer.devices: GPUs (processes) per node.
  if (const nm_value* v = find("trainer.devices"); v != nullptr && !v->v.is_null()) {
    if (!v->v.is_number_integer() || v->v.get<std::int64_t>() < 1) {
      fail(*v, "trainer.devices", "expected the number of GPUs per node (trainplan cannot resolve 'auto' or -1)");
    }
    add("trainer.devices", {"--gpus-per-node", v->text});
  }
  if (const nm_value* v = find("trainer.accumulate_grad_batches"); v != nullptr && integer("trainer.accumulate_grad_batches", 1) != 1) {
    fail(*v, "trainer.accumulate_grad_batches",
         "must be 1: NeMo accumulates gradients itself, global_batch_size / (micro_batch_size × data-parallel size) "
         "micro-batches");
  }
}

void reader::kernels_and_fp8() {
  // Transformer Engine's layer spec, or Megatron-Core's local one (get_specs).
  if (!boolean("model.transformer_engine", false)) add("model.transformer_engine", {"--transformer-impl", "local"});
  // _validate_and_override_config: gradient accumulation fusion is turned off without O2 (refused
  // above) and at PP 1 without a distributed optimizer; NeMo's default is off.
  const std::string optim = scalar("model.optim.name", "fused_adam");
  const bool distributed = optim == "mcore_distributed_optim";
  const bool pp1 = integer("model.pipeline_model_parallel_size", 1) == 1;
  const bool fusion = boolean("model.gradient_accumulation_fusion", false) && (distributed || !pp1);
  if (!fusion) add("model.gradient_accumulation_fusion", {"--no-gradient-accumulation-fusion"});
  // bias_activation_fusion: the fused bias-SwiGLU (or bias-GeLU) kernel.
  if (!boolean("model.bias_activation_fusion", true)) {
    const std::string act = scalar("model.activation", "gelu");
    add("model.bias_activation_fusion",
        {act.ends_with("swiglu") ? "--no-bias-swiglu-fusion" : "--no-bias-gelu-fusion"});
  }
  // TP overlap needs sequence parallelism; NeMo turns it off without it (and under FSDP, refused).
  if (boolean("model.ub_tp_comm_overlap", false)) {
    if (boolean("model.sequence_parallel", false) && integer("model.tensor_model_parallel_size", 1) > 1) {
      add("model.ub_tp_comm_overlap", {"--tp-comm-overlap"});
    } else {
      ignore("model.ub_tp_comm_overlap", "NeMo turns it off without sequence parallelism");
    }
  }
  // FP8: Transformer Engine's delayed scaling, E4M3 or HYBRID (megatron_gpt_model.py build_transformer_config).
  if (boolean("model.fp8", false)) {
    std::string format;
    if (boolean("model.fp8_e4m3", false)) format = "e4m3";
    else if (boolean("model.fp8_hybrid", false)) format = "hybrid";
    else fail(*find("model.fp8"), "model.fp8", "fp8 without fp8_e4m3 or fp8_hybrid: NeMo refuses it (no FP8 format)");
    add("model.fp8", {"--fp8-format", format, "--fp8-recipe", "delayed"});
    if (boolean("model.fp8_params", false)) add("model.fp8_params", {"--fp8-param-gather"});
    // TransformerConfig.fp8_wgrad false: the weight-gradient GEMMs stay in BF16 (Megatron's --no-fp8-wgrad).
    if (!boolean("model.fp8_wgrad", true)) add("model.fp8_wgrad", {"--no-fp8-wgrad"});
    // A scaling margin moves the FP8 scale by a power of two: numerics, no time or byte (Megatron's
    // --fp8-margin, ignored alike).
    if (const nm_value* v = find("model.fp8_margin"); v != nullptr && v->text != "0") {
      ignore("model.fp8_margin", "a scaling margin changes the FP8 scales, not a time or a byte");
    }
    if (const nm_value* v = find("model.fp8_interval"); v != nullptr && v->text != "1") {
      fail(*v, "model.fp8_interval", "an amax update interval other than 1 is not modelled (1 is NeMo's default)");
    }
  }
  for (const char* k : {"model.fp8_e4m3", "model.fp8_hybrid", "model.fp8_params", "model.fp8_margin", "model.fp8_interval",
                        "model.fp8_wgrad"}) {
    if (!boolean("model.fp8", false) && values_.contains(k)) ignore(k, "read with fp8 alone");
  }
}

/// cpu_offloading (TransformerConfig's): the activations of cpu_offloading_num_layers layers, as
/// Megatron's --cpu-offloading-num-layers; offloading the weights too is not modelled. Absent keys take
/// Megatron-Core's defaults (model_parallel_config.py: activations on, weights off, 0 layers).
void reader::offloading() {
  static constexpr std::array<const char*, 3> kKeys = {"model.cpu_offloading_num_layers", "model.cpu_offloading_activations",
                                                       "model.cpu_offloading_weights"};
  if (!boolean("model.cpu_offloading", false)) {
    for (const char* k : kKeys) {
      if (values_.contains(k)) ignore(k, "read with cpu_offloading alone");
    }
    return;
  }
  if (boolean("model.cpu_offloading_weights", false)) {
    fail(*find("model.cpu_offloading_weights"), "model.cpu_offloading_weights",
         "would move the weights to host memory between uses, which trainplan does not model; "
         "model.cpu_offloading_weights=false plans the job with the activations offloaded alone");
  }
  if (!boolean("model.cpu_offloading_activations", true)) {
    ignore("model.cpu_offloading", "neither activations nor weights offloaded");
    return;
  }
  add("model.cpu_offloading", {"--cpu-offloading-num-layers", std::to_string(integer("model.cpu_offloading_num_layers", 0))});
}

/// activations_checkpoint_*: Megatron-Core's recompute_granularity, method and layers.
void reader::checkpointing() {
  const std::string g = scalar("model.activations_checkpoint_granularity", "");
  if (g.empty()) {
    if (const nm_value* v = find("model.activations_checkpoint_num_layers"); v != nullptr && !v->v.is_null()) {
      ignore("model.activations_checkpoint_num_layers", "without a granularity");
    }
    return;
  }
  if (g != "selective" && g != "full") {
    fail(*find("model.activations_checkpoint_granularity"), "model.activations_checkpoint_granularity",
         "expected selective, full or null");
  }
  add("model.activations_checkpoint_granularity", {"--recompute-granularity", g});
  if (g == "full") {
    if (const nm_value* v = find("model.activations_checkpoint_num_layers"); v != nullptr && !v->v.is_null()) {
      add("model.activations_checkpoint_num_layers", {"--recompute-num-layers", v->text});
    }
  }
}

/// The optimizer: Megatron-Core's distributed optimizer (mcore_distributed_optim), or Adam with O2's
/// fp32 main parameters and gradients, unsharded (fused_adam, adam, adamw).
void reader::optimizer() {
  const std::string name = scalar("model.optim.name", "fused_adam");
  constexpr const char* kApexOnly[] = {"model.optim.bucket_cap_mb", "model.optim.contiguous_grad_buffer",
                                       "model.optim.contiguous_param_buffer", "model.optim.dtype"};
  if (name != "distributed_fused_adam") {
    for (const char* k : kApexOnly) {
      if (values_.contains(k)) ignore(k, "read by Apex's DistributedFusedAdam (distributed_fused_adam) alone");
    }
  }
  if (name == "mcore_distributed_optim") {
    add("model.optim.name", {"--use-distributed-optimizer"});
    // setup_mcore_distributed_parallel: grad_reduce_in_fp32 = (grad_sync_dtype == 'fp32').
    const std::string grad = scalar("model.optim.grad_sync_dtype", "fp32");
    if (grad == "bf16") add("model.optim.grad_sync_dtype", {"--grad-reduce-in-bf16"});
    else if (grad != "fp32") fail(*find("model.optim.grad_sync_dtype"), "model.optim.grad_sync_dtype", "expected fp32 or bf16");
  } else if (name == "distributed_fused_adam") {
    apex_distributed_adam();
  } else if (name == "fused_adam" || name == "adam" || name == "adamw") {
    for (const char* k : {"model.optim.grad_sync_dtype", "model.optim.overlap_grad_sync", "model.optim.overlap_param_sync",
                          "model.optim.num_distributed_optimizer_instances"}) {
      if (const nm_value* v = find(k); v != nullptr && truthy(v->v) && v->text != "fp32" && v->text != "1") {
        fail(*v, k, fmt::format("is read by NeMo's distributed optimizers alone, not {}", name));
      }
    }
  } else {
    fail(*find("model.optim.name"), "model.optim.name",
         "expected mcore_distributed_optim, distributed_fused_adam, fused_adam, adam or adamw (the optimizers trainplan "
         "models)");
  }
}

/// Apex's DistributedFusedAdam as NeMo 1 sets it up (megatron_base_model.py setup_optimization; NeMo's
/// MegatronDistributedFusedAdam, nemo/core/optim/distributed_adam.py): optimizer state in optim.dtype
/// (fp32), sharded over the data-parallel ranks like Megatron-Core's distributed optimizer; gradients
/// bucketed and reduce-scattered in grad_sync_dtype (Apex's default: optim.dtype); parameters all-gathered
/// in the model's dtype (FP8 with fp8_params). The master copy: kept in optim.dtype with fp8_params
/// (store_params), as the 16 bits a bf16 weight lacks for an fp32 optimizer over bf16 weights
/// (store_param_remainders: the bytes of Megatron-Core's precision-aware optimizer, formulas §3.1), in
/// optim.dtype otherwise; none when optim.dtype is the model's (refused: not modelled).
void reader::apex_distributed_adam() {
  auto dtype_of = [&](const char* key, std::string_view otherwise) {
    const std::string t = scalar(key, otherwise);
    if (t == "fp32" || t == "32" || t == "float32" || t == "torch.float32") return std::string("fp32");
    if (t == "bf16" || t == "bfloat16" || t == "torch.bfloat16") return std::string("bf16");
    if (t == "fp16" || t == "16" || t == "float16" || t == "torch.float16") return std::string("fp16");
    fail(*find(key), key, "expected fp32, bf16 or fp16 (NeMo's str_to_dtype)");
  };
  add("model.optim.name", {"--use-distributed-optimizer"});
  const std::string model = [&] {
    const nm_value* own = find("model.precision");
    const std::string p = scalar(own != nullptr && !own->v.is_null() ? "model.precision" : "trainer.precision", "32-true");
    return p.starts_with("bf16") ? std::string("bf16") : p.starts_with("16") ? std::string("fp16") : std::string("fp32");
  }();
  const std::string state = dtype_of("model.optim.dtype", "fp32");
  const std::string grad = dtype_of("model.optim.grad_sync_dtype", state);
  const bool fp8_params = boolean("model.fp8", false) && boolean("model.fp8_params", false);
  if (grad == "bf16" && model == "bf16") {
    add("model.optim.grad_sync_dtype", {"--grad-reduce-in-bf16"});
  } else if (grad != "fp32") {
    fail(*find("model.optim.grad_sync_dtype"), "model.optim.grad_sync_dtype",
         fmt::format("{} gradients over {} weights are not modelled (bf16 over bf16 weights, or fp32, are)", grad, model));
  }
  if (state == "fp32") {
    // store_param_remainders over bf16 weights without fp8_params; otherwise an fp32 master (store_params).
    if (model == "bf16" && !fp8_params) add("model.optim.dtype", {"--use-precision-aware-optimizer"});
  } else if (fp8_params && model == "bf16") {
    // store_params with a 16-bit optimizer: a 16-bit master and 16-bit moments.
    add("model.optim.dtype", {"--use-precision-aware-optimizer", "--main-params-dtype", "fp16", "--exp-avg-dtype", state,
                              "--exp-avg-sq-dtype", state});
  } else {
    const nm_value* v = find("model.optim.dtype");
    fail(*v, "model.optim.dtype",
         fmt::format("{} optimizer states over {} weights keep no master copy (Apex's store_params false: the weights "
                     "are updated in place), which trainplan does not model; optim.dtype fp32 (NeMo's default) is",
                     state, model));
  }
  // Apex's bucket: bucket_cap_mb MiB of grad_sync_dtype elements (DistributedFusedAdam.default_message_size).
  if (values_.contains("model.optim.bucket_cap_mb")) {
    const nm_value* v = find("model.optim.bucket_cap_mb");
    if (!v->v.is_number() || !(v->v.get<double>() > 0 && v->v.get<double>() <= 1e6)) {
      fail(*v, "model.optim.bucket_cap_mb", "expected a positive number of MiB, at most 1e6");
    }
    const double elements = v->v.get<double>() * 1048576.0 / (grad == "fp32" ? 4.0 : 2.0);
    add("model.optim.bucket_cap_mb", {"--ddp-bucket-size", std::to_string(static_cast<std::int64_t>(elements))});
  }
  // NeMo requires the contiguous gradient buffer under O2 (setup_optimization), which Megatron's grad
  // buffer is; the contiguous parameter buffer holds the weights themselves (no extra copy).
  if (values_.contains("model.optim.contiguous_grad_buffer") && !boolean("model.optim.contiguous_grad_buffer", true)) {
    fail(*find("model.optim.contiguous_grad_buffer"), "model.optim.contiguous_grad_buffer",
         "NeMo's distributed Adam requires it with megatron_amp_O2 (setup_optimization raises)");
  }
}

/// model.tokenizer as Megatron's tokenizer flags, for the vocabulary (tokenizer.h).
void reader::tokenizer() {
  // Paths keep their ${…} (a launcher variable such as ${data_dir}): only the name is read.
  auto raw = [&](const char* key) {
    const auto it = values_.find(key);
    if (it == values_.end() || it->second.v.is_null()) return std::string();
    return it->second.v.is_string() ? it->second.v.get<std::string>() : it->second.text;
  };
  const std::string library = raw("model.tokenizer.library"), type = raw("model.tokenizer.type");
  tokenizer_flags& t = out_.tokenizer;
  t.vocab_file = raw("model.tokenizer.vocab_file");
  t.merge_file = raw("model.tokenizer.merge_file");
  if (library == "megatron") {
    t.type = type;
  } else if (library == "huggingface") {
    t.type = "HuggingFaceTokenizer";
    t.model = type;
  } else if (library == "sentencepiece") {
    t.type = "SentencePieceTokenizer";
    t.model = raw("model.tokenizer.model");
  } else if (library == "tiktoken") {
    t.type = "TikTokenizer";
    t.model = raw("model.tokenizer.model");
  } else if (!library.empty()) {
    t.type = library;
  }
  if (t.any()) {
    t.named_as = fmt::format("model.tokenizer ({}: library {}{})", where("model.tokenizer.library"),
                             library.empty() ? "null" : library,
                             t.model.empty() ? "" : fmt::format(", {} {}", library == "huggingface" ? "type" : "model", t.model));
  }
}

/// env_vars, NeMo-Framework-Launcher's environment of the job: each variable as on a launch line
/// (src/cli/launch_env.cc: listed when it changes no estimate, refused by name when it changes one not
/// modelled), Transformer Engine's attention switches as the kernel they leave Megatron-Core (§5.2),
/// refused beside a model.attention_backend they contradict.
void reader::environment() {
  const nm_value* v = find("env_vars");
  if (v == nullptr || v->v.is_null()) return;
  if (!v->v.is_object()) fail(*v, "env_vars", "expected a mapping of variables");
  attention_env attention;
  std::vector<std::string> listed;
  for (auto it = v->v.begin(); it != v->v.end(); ++it) {
    if (it.value().is_null()) continue;
    if (it.value().is_object() || it.value().is_array()) fail(*v, "env_vars." + it.key(), "expected a single value");
    const std::string value = it.value().is_string() ? it.value().get<std::string>()
                              : it.value().is_boolean() ? (it.value().get<bool>() ? "1" : "0")
                                                        : it.value().dump();
    try {
      read_env_assignment(it.key() + "=" + value, listed, attention);
    } catch (const input_error& e) {
      std::string why = e.what();  // "launch line: NAME=VALUE would change …"
      if (why.starts_with("launch line: ")) why = why.substr(13);
      throw input_error(literal_text(fmt::format("{}: env_vars.{}", where_of(*v), why)));
    }
  }
  const std::string prefix = v->launch ? "env_vars." : name_ + ":env_vars.";
  for (const std::string& l : listed) ignored_.push_back(prefix + l);
  if (attention.typed.empty()) return;
  const std::string backend = attention.backend();
  if (backend.empty()) {
    ignored_.push_back(prefix + attention.typed_text() + attention_env::kOwnChoice);
    return;
  }
  const std::string asked = scalar("model.attention_backend", "auto");
  if (asked != "auto" && asked != backend) {
    throw input_error(literal_text(fmt::format("{}: env_vars: {}", where_of(*v),
                                               attention.contradiction("model.attention_backend " + asked))));
  }
  add("env_vars", {"--attention-backend", backend});
  out_.derived.push_back(fmt::format("--attention-backend {} ({} in env_vars)", backend, attention.typed_text()));
}

nemo_config reader::resolve() {
  model_shape();
  by_table();
  passthrough();
  precision();
  parallelism();
  kernels_and_fp8();
  checkpointing();
  offloading();
  environment();
  optimizer();
  tokenizer();
  out_.ignored = std::move(ignored_);
  out_.overridden = std::move(overridden_);
  out_.derived.push_back(fmt::format("NeMo: {} with NeMo's code defaults beneath (Megatron GPT, NeMo 1)", name_));
  return std::move(out_);
}

}  // namespace

nemo_config read_nemo_config(const std::string& path, const std::string& flag,
                             const std::vector<nemo_override>& overrides) {
  reader r(path, flag);
  r.read_file();
  for (const nemo_override& o : overrides) r.add_override(o);
  return r.resolve();
}

}  // namespace trainplan::args_detail
