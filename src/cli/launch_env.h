// Environment variables on a launch line (`PYTORCH_ALLOC_CONF=expandable_segments:True torchrun …`,
// `env NCCL_DEBUG=INFO …`), issue 29: one table of the variables training scripts set, each changing no
// estimate (listed as ignored), or changing one that trainplan does not model from the variable (refused
// naming it and the flag that says it instead). Internal header of src/cli/launcher.cc.
#pragma once

#include <string>
#include <vector>

namespace trainplan::args_detail {

/// Whether `token` is an assignment NAME=VALUE (NAME a shell variable name).
bool is_env_assignment(const std::string& token);

/// Transformer Engine's attention switches as a line sets them (NVTE_FUSED_ATTN, NVTE_FLASH_ATTN: "0" or
/// "1"; empty: not set), and the assignments as typed.
struct attention_env {
  std::string fused, flash;
  std::vector<std::string> typed;
  /// The --attention-backend they select (§5.2; Transformer Engine's backend selection: a backend whose
  /// variable is 0 is off): "flash" (cuDNN's off), "fused" (FlashAttention off), "unfused" (both off);
  /// empty where TE keeps its own choice.
  std::string backend() const;
  /// The assignments as typed, space-separated ("NVTE_FUSED_ATTN=0 NVTE_FLASH_ATTN=0").
  std::string typed_text() const;
  /// Why switches that select no backend change nothing, as the ignored lists say it.
  static constexpr const char* kOwnChoice = " (Transformer Engine keeps its own choice of attention kernel)";
  /// Megatron-Core's refusal of switches that contradict an explicit backend (`other` names it).
  std::string contradiction(const std::string& other) const;
};

/// Reads one assignment: appends what it ignores to `ignored` ("NCCL_DEBUG=INFO") and Transformer Engine's
/// attention switches to `attention`, or throws input_error naming the variable when it changes an
/// estimate trainplan does not model from it.
void read_env_assignment(const std::string& token, std::vector<std::string>& ignored, attention_env& attention);

}  // namespace trainplan::args_detail
