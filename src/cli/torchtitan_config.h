// A torchtitan job as torchtitan reads it (issue 29): its TOML config (`--job.config_file`, or
// trainplan's --torchtitan-config) with the launch line's `--section.option` overrides on top and
// torchtitan's own defaults beneath, turned into the job flags that model each setting. Keys that change
// no estimate are listed; a setting whose effect is not modelled is refused by name. Internal header of
// src/cli/args.cc; the keys are one table in torchtitan_config.cc.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace trainplan::args_detail {

/// `--training.local_batch_size 4` on the launch line, after the training script.
struct tt_override {
  std::string key;    ///< "training.local_batch_size"
  std::string value;  ///< as typed ("true" for a bare switch)
};

/// One setting's effect: the job flag and its value, shown as the key it came from.
struct tt_setting {
  std::string flag;   ///< a job flag of the flag table
  std::string value;  ///< its value ("" for a switch)
  std::string key;    ///< "parallelism.tensor_parallel_degree", as the reports name it
  bool from_launch_line = false;  ///< decided by an override on the launch line (else the file or a default)
};

struct tt_config {
  std::vector<tt_setting> settings;
  std::vector<std::string> ignored;     ///< "llama3_8b.toml:metrics.*", keys that change no estimate
  std::vector<std::string> overridden;  ///< "training.seq_len 8192 (torchtitan config) → 4096 (launch line)"
  std::vector<std::string> derived;     ///< what was assumed, for the reports ("--framework fsdp (torchtitan)")
  /// model.name/flavor not in the catalog: the error unless the user names the model with --model.
  std::string unknown_model;
  /// activation_checkpoint.selective_ac_option = k ≥ 2: every k-th transformer block is checkpointed
  /// (torchtitan's layer SAC), which needs the model's layer count; 0 when not used.
  std::int64_t layer_checkpoint_every = 0;
};

/// Reads `path` (empty: torchtitan's defaults alone) with `overrides` applied. Throws input_error naming
/// file:line (or the launch line's option) for bad TOML, a key not known here, or a setting not modelled.
tt_config read_torchtitan_config(const std::string& path, const std::string& flag,
                                 const std::vector<tt_override>& overrides);

}  // namespace trainplan::args_detail
