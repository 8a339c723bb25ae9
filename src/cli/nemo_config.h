// A NeMo 1 job as NeMo reads it (issue 29): its Hydra YAML config (megatron_gpt_pretraining.py's
// --config-path/--config-name, NeMo-Framework-Launcher's conf/training/*.yaml, or trainplan's
// --nemo-config) with the launch line's Hydra overrides (`model.micro_batch_size=2`, `+key=value`,
// `~key`) on top and NeMo's own defaults beneath (what MegatronGPTModel reads when a key is absent),
// turned into the Megatron-Core flags of the same meaning: NeMo 1 builds Megatron-Core's GPTModel,
// TransformerConfig and DistributedDataParallelConfig from these keys. Keys that change no estimate are
// listed; a setting whose effect is not modelled is refused by name. Internal header of src/cli/args.cc;
// the keys are one table in nemo_config.cc.
#pragma once

#include <string>
#include <vector>

#include "tokenizer.h"

namespace trainplan::args_detail {

/// A Hydra override on the launch line, after the training script.
struct nemo_override {
  std::string key;    ///< "model.micro_batch_size", without Hydra's +, ++ or ~
  std::string value;  ///< as typed (YAML: null, true, 2, 1e-4, [a,b], 'text')
  bool remove = false;  ///< `~key`: the key is deleted, so NeMo's code default applies
};

/// One key's effect: the Megatron flag tokens that have it, shown as the key they came from.
struct nemo_setting {
  std::vector<std::string> tokens;  ///< {"--tensor-model-parallel-size", "2"}; read as launch-line flags
  std::string key;                  ///< "model.tensor_model_parallel_size", as the reports name it
  std::string where;                ///< "llama3_8b.yaml:61", "launch line" or "NeMo's default"
  bool from_launch_line = false;    ///< decided by a Hydra override on the launch line
};

struct nemo_config {
  std::vector<nemo_setting> settings;
  std::vector<std::string> ignored;     ///< "llama3_8b.yaml:exp_manager.*", keys that change no estimate
  std::vector<std::string> overridden;  ///< "model.micro_batch_size 1 (NeMo config) → 2 (launch line)"
  std::vector<std::string> derived;     ///< what was assumed, for the reports
  tokenizer_flags tokenizer;            ///< model.tokenizer as Megatron's tokenizer flags (the vocabulary)
};

/// Reads the YAML at `path` with `overrides` applied. `flag` names where the path came from
/// ("--nemo-config", "--config-name"). Throws input_error naming file:line (or the override) for bad
/// YAML, a key not known here, or a setting not modelled.
nemo_config read_nemo_config(const std::string& path, const std::string& flag,
                             const std::vector<nemo_override>& overrides);

}  // namespace trainplan::args_detail
