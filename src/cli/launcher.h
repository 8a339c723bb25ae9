// Launch lines as their launchers read them (issue 29): torchrun and python -m torch.distributed.run /
// .launch, the deepspeed launcher, Slurm's srun and Open MPI's mpirun/mpiexec, possibly nested (srun …
// torchrun …). Internal header of src/cli/args.cc; the launchers' flags are one table in launcher.cc.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "launch_env.h"

namespace trainplan::args_detail {

/// What a launch line says of the world before the training script.
struct launch_world {
  std::optional<std::int64_t> nodes;     ///< nodes the launcher starts processes on
  std::optional<std::int64_t> per_node;  ///< processes (GPUs) per node; none: every GPU of a node
  std::optional<std::int64_t> total;     ///< processes in all, when the launcher gives that instead of nodes
  std::string nodes_flag, per_node_flag, total_flag;  ///< as typed, for the reports ("--nnodes")
  /// Why the world size is not known from the line (a hostfile that cannot be read, --exclude): the
  /// user's --num-nodes/--num-gpus must say it, else this is the error.
  std::string unknown;
  std::vector<std::string> ignored;  ///< launcher flags that change no estimate (--master-addr, --rdzv-id)
  std::vector<std::string> script_args;  ///< the tokens after the training script
  std::string module;  ///< `-m MODULE` in place of a script (torchtitan's `-m torchtitan.train`), else ""
  std::string script;  ///< the training script as given ("examples/…/megatron_gpt_pretraining.py"), else ""
  attention_env attention;  ///< Transformer Engine's attention switches the line sets (NVTE_FUSED_ATTN=0)
};

/// Reads the launchers' part of a launch line (the tokens after `--`). Throws input_error naming the
/// launcher flag for values it refuses.
launch_world read_launcher(const std::vector<std::string>& tokens);

}  // namespace trainplan::args_detail
