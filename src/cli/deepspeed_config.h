// A DeepSpeed JSON config (--deepspeed-config, Megatron-DeepSpeed's --deepspeed_config) read as DeepSpeed
// reads it (issue 29): each key that decides memory or time becomes the job flag that models it, keys
// that change no estimate are listed, and any other key is refused by name. Internal header of
// src/cli/args.cc; the keys are one table in deepspeed_config.cc.
#pragma once

#include <string>
#include <vector>

namespace trainplan::args_detail {

/// One key's effect: the job flag and its value ("--zero-stage", "3"), shown as the key it came from.
struct ds_setting {
  std::string flag;   ///< a job flag of the flag table
  std::string value;  ///< its value ("" for a switch)
  std::string key;    ///< "zero_optimization.stage", as the reports name it
};

struct ds_config {
  std::vector<ds_setting> settings;
  std::vector<std::string> ignored;  ///< "ds_config.json:steps_per_print", keys that change no estimate
};

/// Reads the file (bounded, UTF-8 JSON). Throws input_error naming file:line for bad JSON, a key not
/// known here or a setting not modelled (parameter offload, NVMe, partitioned activations, curriculum).
ds_config read_deepspeed_config(const std::string& path, const std::string& flag);

}  // namespace trainplan::args_detail
