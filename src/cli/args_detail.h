// Job flags, internal: what the flag table's handlers fill (job_builder), the table's rows (flag_def),
// and the value converters both the table and the parser use. src/cli/args_table.cc holds the table;
// src/cli/args.cc parses against it.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "launch_env.h"
#include "nemo_config.h"
#include "tokenizer.h"
#include "torchtitan_config.h"
#include "trainplan/cli/args.h"

namespace trainplan::args_detail {

/// Accumulates what the flags say before the job is finalized.
struct job_builder {
  job_spec job;
  bool model_chosen = false;   // --model
  bool model_fields = false;   // any Megatron model flag
  bool mla_requested = false;  // --multi-latent-attention
  bool force_local_attention = false;  // ModelOpt's --export-force-local-attention
  attention_env env_attention;         // NVTE_FUSED_ATTN / NVTE_FLASH_ATTN on a launch line (launch_env.h)
  bool local_transformer_impl = false;  // --transformer-impl local: Megatron's own attention, not TE's
  bool no_pipeline_engine = false;     // Megatron-DeepSpeed's --no-pipeline-parallel (PP must be 1)
  bool recompute_zero_layers = false;  // --recompute-num-layers 0 given (the core reads 0 as "not given")
  bool recompute_modules_given = false, recompute_modules_empty = false;  // --recompute-modules
  bool moe_layer_recompute = false;    // Megatron-Core's deprecated --moe-layer-recompute
  bool moe_pad_to_capacity = false;    // --moe-pad-expert-input-to-capacity
  /// --hybrid-layer-pattern's pipeline segments ('|'), as Megatron-Core's pipeline layout stages
  /// (hybrid_layer_allocation.py select_pipeline_segment); empty: the pattern has none.
  std::vector<layout_stage> hybrid_segments;
  std::vector<std::string> tp_comm_tuning;  // userbuffer tuning flags: ignored unless --tp-comm-overlap
  tokenizer_flags tokenizer;           // Megatron's tokenizer flags (ignored, but they imply the vocabulary)
  // A torchtitan job (torchtitan_config.h): its config file (the user's --torchtitan-config, else the
  // launch line's --job.config_file) and the launch line's --section.option overrides.
  bool torchtitan = false;
  std::string torchtitan_user_path, torchtitan_launch_path;
  std::vector<tt_override> torchtitan_overrides;
  std::int64_t layer_checkpoint_every = 0;  // torchtitan's layer SAC: every k-th block checkpointed
  // A NeMo 1 job (nemo_config.h): its YAML (the user's --nemo-config, else the launch line's
  // --config-path/--config-name) and the launch line's Hydra overrides.
  bool nemo = false;
  std::string nemo_user_path, nemo_config_path, nemo_config_name;
  std::string launch_script;  // the launch line's training script (Hydra resolves --config-path beside it)
  std::vector<nemo_override> nemo_overrides;
  std::string bridge_path;  ///< --bridge-config: a Megatron-Bridge ConfigContainer YAML (bridge_config.h)
  bool quick_geglu = false;    // --quick-geglu: gated, but Megatron's 4h default width (not --swiglu's)
  // --position-embedding-type yarn and its scaling (Megatron's --rotary-scaling-factor, default 1, --mscale,
  // --mscale-all-dim: argument_utils.py _apply_yarn_config_from_args), read into rope_yarn_factor (§5.3).
  bool yarn = false;
  double yarn_factor = 1.0;
  std::optional<double> yarn_mscale, yarn_mscale_all_dim;
  std::int64_t num_gpus = 0;
  std::int64_t num_nodes = 0;
  std::int64_t gpus_per_node = 0;
  bool dp_given = false;
  std::string gpu_name;
  std::optional<double> gpu_memory_gib, gpu_peak_tflops, gpu_bandwidth_gb_per_s, intra_gb_per_s, nic_gbit_per_s,
      intra_latency_us, inter_latency_us;
  std::optional<std::int64_t> gpu_usable_gib, context_mib;  // as bytes
  std::int64_t nics_per_node = 0;
  std::string calibration_path;  // --calibration
  std::string precision_flag;    // the --bf16/--fp16/--fp32 given, if any
  int precision_source = -1;     // and where (pending::source)
  int source = 1;                // where the flag being applied was given: 0 preset, 1 the user, 2 launch line
  std::vector<std::string> ignored;
  bool launch = false;
  std::string preset;
  std::vector<std::string> explicit_fields;  // model fields set by a flag
  bool is_explicit(const char* f) const {
    return std::find(explicit_fields.begin(), explicit_fields.end(), f) != explicit_fields.end();
  }
};

using handler = std::function<void(job_builder&, const std::string& value, const std::string& flag)>;

/// What a flag does (its handler) and the job fields it sets, as the core's messages name them (space-
/// separated; "" when none). The table's macros derive the field from the member they assign.
struct setter {
  handler apply;
  std::string fields;
  template <typename F>
  setter(F f, std::string fields_set = {}) : apply(std::move(f)), fields(std::move(fields_set)) {}  // NOLINT
};

struct flag_def {
  flag_info info;
  int priority = 1;     // 0: selects a base (model, cluster), applied before the rest
  bool takes_value = true;
  handler apply;
};

/// A whole number of `flag` (1e9 style accepted); out of range or not whole is an input_error naming it.
std::int64_t to_int(const std::string& v, const std::string& flag);
/// An integer of at least `lo` (0 or 1): 0 is the internal "not given", so an explicit 0 or a negative
/// value must not fall back silently to a default.
std::int64_t to_int_min(const std::string& v, const std::string& flag, std::int64_t lo);
double to_double(const std::string& v, const std::string& flag);
double to_positive(const std::string& v, const std::string& flag);
/// A number in [lo, hi] (`unit` names it in the message): a hardware figure outside its physical range is
/// a unit slip that would print times of hundreds of digits (docs/formulas.md §7.9).
double to_between(const std::string& v, const std::string& flag, double lo, double hi, std::string_view unit);
/// A size given in `unit` bytes (GiB, MiB) as whole bytes; absurd values are an error, never a wrapped cast.
std::int64_t to_bytes(const std::string& v, const std::string& flag, double unit, bool allow_zero);

/// Every job flag, one row each (src/cli/args_table.cc).
const std::vector<flag_def>& flag_table();

}  // namespace trainplan::args_detail
