// Helpers shared by the renderers (src/report*.cc): the JSON type, byte units, the parallel block.
#pragma once

#include <cmath>
#include <cstdint>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "trainplan/report/report.h"

namespace trainplan::detail {

using json = nlohmann::ordered_json;

constexpr double kGiB = 1073741824.0;
constexpr double kMiB = 1048576.0;

/// How a Megatron job shards its data-parallel state, after "ZeRO stage N" (§3.1).
inline std::string sharding_note(const training_config& t) {
  if (t.megatron_fsdp) {
    return t.zero_stage == 3 ? " (Megatron-FSDP optim_grads_params)"
           : t.zero_stage == 2 ? " (Megatron-FSDP optim_grads)"
                               : " (Megatron-FSDP optim: the distributed optimizer)";
  }
  return t.distributed_optimizer ? " (distributed optimizer)" : "";
}

/// A prediction's expected error (issue 28) for JSON: the band and where it comes from, or `runs` 0 and
/// the scope it was sought in when fewer than kMinBandRuns validated runs give one (never null).
inline json error_band_json(const error_band& band) {
  if (band.runs > 0) return json{{"p80_abs_error", band.p80_abs_error}, {"runs", band.runs}, {"scope", band.scope}};
  return json{{"runs", 0}, {"scope", band.scope}, {"min_runs", kMinBandRuns}};
}

/// Bytes as a whole number for JSON.
inline std::int64_t whole_bytes(double b) { return static_cast<std::int64_t>(std::llround(b)); }

/// "1 node", "2 nodes": a count with its noun, singular or plural (`plural`: when not noun + "s").
inline std::string counted(std::int64_t n, std::string_view noun, std::string_view plural = {}) {
  if (n == 1) return "1 " + std::string(noun);
  return std::to_string(n) + " " + (plural.empty() ? std::string(noun) + "s" : std::string(plural));
}

/// Why the sequence is the one planned when --seq-length was not given: the model's context, or its
/// pretraining context below a RoPE-scaled one (a Hugging Face config's rope_scaling).
inline std::string default_sequence_note(const model_spec& m) {
  if (m.rope_original_context > 0 && m.seq_length == m.rope_original_context && m.max_position_embeddings > m.seq_length) {
    return fmt::format(" (the model's pretraining context, before RoPE scaling to {}; --seq-length to plan another)",
                       m.max_position_embeddings);
  }
  if (m.max_position_embeddings > m.seq_length) {
    return fmt::format(" (the model's default; its context is {}; --seq-length to plan another)", m.max_position_embeddings);
  }
  return " (the model's context; --seq-length to plan another)";
}

/// The flags a launch line or pasted arguments carried that change no estimate.
inline void append_ignored_flags(std::string& out, const run_context& ctx) {
  if (!ctx.ignored_flags.empty()) {
    out += "\nIgnored (they change no estimate):";
    for (const auto& f : ctx.ignored_flags) out += " " + f;
    out += "\n";
  }
  if (!ctx.overridden_flags.empty()) {
    out += "Overridden (the value after the arrow counts):";
    for (const auto& f : ctx.overridden_flags) out += " " + f + ";";
    out.back() = '\n';
  }
  if (!ctx.derived_flags.empty()) {
    out += "Derived (not given, implied by the flags):";
    for (const auto& f : ctx.derived_flags) out += " " + f + ";";
    out.back() = '\n';
  }
}

/// A search row's recomputation: "none", "selective", "full" or "block N" (N layers recomputed per stage).
inline std::string layout_recompute(const search_candidate& c) {
  return c.recompute == recompute_choice::block ? "block " + std::to_string(c.recompute_num_layers)
                                                : std::string(to_string(c.recompute));
}

/// The job's layout and training settings, as every JSON report gives them.
json parallel_json(const job_spec& job);

/// The "context" block of every JSON output: tool, version, schema and, with a job, what it describes.
json context_json(const run_context* ctx = nullptr);

}  // namespace trainplan::detail
