// Job flags: trainplan's own, Megatron-LM's names (pretrain_gpt.py), and whole launch lines.
// One table drives parsing, help text and "did you mean" (src/cli/args.cc).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "trainplan/core/job/job.h"

namespace trainplan {

/// One accepted flag, for help text.
struct flag_info {
  std::string name;                  ///< "--tensor-model-parallel-size"
  std::vector<std::string> aliases;  ///< "--tp"
  std::string value_name;            ///< "" for switches
  std::string default_value;         ///< as shown in help
  std::string help;
  std::string group;                 ///< "model", "parallel", "training", "hardware"
  /// The job fields the flag sets, as the core names them in its messages (${parallel.tp}), space-
  /// separated; "" when the core names none. flag_of_field reads it: the one field ↔ flag table.
  std::string fields;
};
const std::vector<flag_info>& job_flags();
/// Help text listing every job flag by group, with defaults.
std::string job_flags_help();

/// Named argument sets (e.g. "bloom-176b-production"), expanded in place by --preset.
struct preset {
  std::string name;
  std::string description;
  std::vector<std::string> args;
};
const std::vector<preset>& presets();

struct parsed_job {
  job_spec job;                              ///< finalized
  std::vector<std::string> ignored_flags;    ///< accepted, change no estimate (launch lines)
  /// A flag given again with another value, and which one counts: "--tp 4 (preset) → 8 (your flags)".
  std::vector<std::string> overridden_flags;
  /// A value the flags imply and did not give, with why: "--vocab-size 50257 (GPT2BPETokenizer: …)".
  std::vector<std::string> derived_flags;
  bool from_launch_line = false;
  std::string preset;                        ///< preset used, if any
  bool seq_length_given = false;             ///< --seq-length given; else the model's own context
  std::vector<std::string> extra_args;       ///< tokens a command claimed (see parse_job_args)
};

enum class model_need { model_only, full_job };

/// How a flag of a launch line is treated: it sets the job (modelled), is accepted and listed as changing
/// no estimate (ignored), is refused as changing one that is not modelled, or is unknown (an error).
enum class flag_class { modelled, ignored, refused, unknown };
flag_class classify_flag(const std::string& flag);
/// What a refused flag would change, as its refusal and `trainplan help flags` say it ("the time and
/// memory of CUDA graphs (…)"); empty for a flag that is not refused (src/cli/refused_effects.cc).
std::string_view refused_flag_effect(std::string_view flag);
/// The Megatron-LM, Megatron-DeepSpeed and BLOOM flags that are not modelled, by how they are treated.
struct flag_classes {
  std::vector<std::string> ignored;  ///< names, and NAME-* for every flag that starts so; sorted
  struct at_value {
    std::string flag, harmless_value, would_change;
  };
  std::vector<at_value> ignored_at_value;  ///< ignored at that value, refused at another
  std::vector<std::string> tp_comm_tuning;  ///< ignored without --tp-comm-overlap, refused with it
  struct refused_group {
    std::string would_change;  ///< refused_flag_effect of each flag below
    std::vector<std::string> flags;
  };
  std::vector<refused_group> refused;  ///< by mechanism, in the order their first flag sorts
};
const flag_classes& megatron_flag_classes();
/// megatron_flag_classes as `trainplan help flags` lists them after the modelled ones.
std::string classified_flags_help();

/// Parse job flags. Tokens after "--" are a launch line (torchrun / python -m torch.distributed.run /
/// deepspeed ... script.py <Megatron args>): the launcher gives the world size, Megatron flags that
/// change no estimate are listed as ignored, modelled-elsewhere ones are an error naming the flag.
/// With model_need::model_only no layout is required. Throws input_error naming the flag.
parsed_job parse_job_args(const std::vector<std::string>& args, model_need need = model_need::full_job);

}  // namespace trainplan
