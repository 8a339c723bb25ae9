// A Megatron-Bridge job as Megatron-Bridge reads it (issue 29): the resolved ConfigContainer YAML it writes
// beside a run (ConfigContainer.to_yaml: logger.save_config_filepath, the checkpoint's run_config.yaml, the
// performance scripts' dry-run configs), every field written out at its value. Its mixed_precision and
// comm_overlap sections are applied to the model, optimizer and DDP configs as runtime_config_update applies
// them; each field then becomes the Megatron-Core flag of the same meaning and is read as a launch-line flag.
// A field that changes no estimate is listed (at its Megatron-Core default, not even that); one whose effect
// is not modelled is refused naming it, its value and file:line. Internal header of src/cli/args.cc.
#pragma once

#include <string>

#include "nemo_config.h"

namespace trainplan::args_detail {

/// Reads the ConfigContainer YAML at `path` (given by `flag`, "--bridge-config") into the flags of its
/// fields, in the shape NeMo's reader returns. Throws input_error naming file:line for bad YAML, a file that
/// is not a ConfigContainer, a section or field not known here, or a setting not modelled.
nemo_config read_bridge_config(const std::string& path, const std::string& flag);

}  // namespace trainplan::args_detail
