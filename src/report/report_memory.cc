// Memory per GPU and stage (docs/formulas.md §3) in text and JSON. They format; they never compute.
#include "trainplan/report/report.h"

#include "report_detail.h"
#include "reporters.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <nlohmann/json.hpp>

namespace trainplan {

using detail::append_ignored_flags;
using detail::context_json;
using detail::json;
using detail::kGiB;
using detail::parallel_json;
using detail::whole_bytes;

std::string json_reporter::memory(const run_context& ctx, const parameter_breakdown& p, const memory_report& r,
                               const megatron_theoretical_memory* megatron) const {
  const job_spec& job = ctx.job;
  json j;
  j["schema_version"] = kSchemaVersion;
  j["context"] = context_json(&ctx);
  j["model"] = {{"name", job.model.name}, {"parameters", p.total}};
  j["cluster"] = {{"name", job.cluster.name}, {"gpu", job.cluster.gpu.name}};
  j["parallel"] = parallel_json(job);
  json stages = json::array();
  for (const auto& s : r.stages) {
    stages.push_back({{"stage", s.stage},
                      {"num_layers", s.num_layers},
                      {"parameters", s.parameters},
                      {"weights_bytes", whole_bytes(s.weights_bytes)},
                      {"gradients_bytes", whole_bytes(s.gradients_bytes)},
                      {"optimizer_bytes", whole_bytes(s.optimizer_bytes)},
                      {"activations_bytes", whole_bytes(s.activations_bytes)},
                      {"other_bytes", whole_bytes(s.other_bytes)},
                      {"buffers_bytes", whole_bytes(s.buffers_bytes)},
                      {"transient_bytes", whole_bytes(s.transient_bytes)},
                      {"offloaded_bytes", whole_bytes(s.offloaded_bytes)},
                      {"dispatch_buffer_bytes", whole_bytes(s.dispatch_buffer_bytes)},
                      {"microbatches_in_flight", s.microbatches_in_flight},
                      {"allocated_bytes", whole_bytes(s.allocated_bytes)},
                      {"reserved_bytes", whole_bytes(s.reserved_bytes)},
                      {"torch_reserved_bytes", whole_bytes(s.torch_reserved_bytes)},
                      {"stranded_bytes", whole_bytes(s.stranded_bytes)},
                      {"headroom_bytes", whole_bytes(s.headroom_bytes)},
                      {"fits", s.fits}});
  }
  j["memory"] = {{"stages", stages},
                 {"peak_allocated_bytes", whole_bytes(r.peak_allocated_bytes)},
                 {"peak_reserved_bytes", whole_bytes(r.peak_reserved_bytes)},
                 {"peak_stage", r.peak_stage},
                 {"capacity_bytes", whole_bytes(r.capacity_bytes)},
                 {"fits", r.fits},
                 {"full_model", {{"weights_bytes", whole_bytes(r.full_weights_bytes)},
                                 {"gradients_bytes", whole_bytes(r.full_gradients_bytes)},
                                 {"optimizer_bytes", whole_bytes(r.full_optimizer_bytes)},
                                 {"activations_bytes", whole_bytes(r.full_activations_bytes)}}}};
  if (megatron != nullptr) {
    j["memory"]["megatron_theoretical"] = {
        {"weight_and_optimizer_bytes", whole_bytes(megatron->weight_and_optimizer_bytes)},
        {"activation_bytes", whole_bytes(megatron->activation_bytes)},
        {"total_bytes", whole_bytes(megatron->total())}};
  }
  j["ignored_flags"] = ctx.ignored_flags;
  return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

std::string text_reporter::memory(const run_context& ctx, const parameter_breakdown& p, const memory_report& r,
                               const megatron_theoretical_memory* megatron) const {
  const job_spec& job = ctx.job;
  const auto& par = job.parallel;
  const auto& t = job.training;
  std::string out;
  out += fmt::format("Model {} ({} parameters) on {}: {} = {} × {} {}\n", job.model.name, format_count(p.total),
                     job.cluster.name, detail::counted(job.num_gpus, "GPU"), detail::counted(job.cluster.num_nodes, "node"),
                     job.cluster.gpus_per_node, job.cluster.gpu.name);
  out += fmt::format("Layout: DP {} × TP {} × PP {} × CP {}{}{}{}; MBS {}, GBS {} ({} per pipeline), sequence {}\n",
                     par.dp, par.tp, par.pp, par.cp, par.ep > 1 ? fmt::format(", EP {}", par.ep) : "",
                     par.vpp > 1 ? fmt::format(", VPP {}", par.vpp) : "", par.sequence_parallel ? ", sequence parallel" : "",
                     t.micro_batch_size, t.global_batch_size, detail::counted(job.num_microbatches(), "micro-batch", "micro-batches"),
                     job.model.seq_length);
  if (!ctx.seq_length_given) {
    out.pop_back();
    out += detail::default_sequence_note(job.model) + "\n";
  }
  const std::string precision =
      t.fp8 == fp8_format::none
          ? std::string(to_string(t.precision))
          : fmt::format("{} with FP8 linear layers ({}, {} scaling{})", to_string(t.precision), to_string(t.fp8),
                        to_string(t.fp8_scaling), t.fp8_param_gather ? ", FP8 parameters" : "");
  const std::string hsdp =
      t.dp_replicas > 1 ? fmt::format(", HSDP: {} replicas of {} shards", t.dp_replicas, dp_shard_size(par, t)) : "";
  out += fmt::format("Training: {}, {}, ZeRO stage {}{}{}, {}{}{}\n\n", to_string(t.framework),
                     precision, t.zero_stage, detail::sharding_note(t), hsdp,
                     t.recompute == recompute_granularity::none ? std::string("no recomputation")
                     : t.recompute == recompute_granularity::selective && t.recompute_modules != 0
                         ? fmt::format("selective recomputation ({})",
                                       fmt::join(recompute_module_names(t.recompute_modules), ", "))
                         : fmt::format("{} recomputation", to_string(t.recompute)),
                     !t.flash_attention ? "" : t.fa2_attention ? ", flash attention (FlashAttention-2)" : ", flash attention",
                     par.embedding_as_stage ? ", embeddings as pipeline slots" : "");
  out += "Full model without parallelism (one micro-batch, no recomputation):\n";
  out += fmt::format("  weights {} GiB, gradients {} GiB, optimizer states {} GiB, activations {} GiB\n\n",
                     format_gib(r.full_weights_bytes), format_gib(r.full_gradients_bytes),
                     format_gib(r.full_optimizer_bytes), format_gib(r.full_activations_bytes));
  const std::string row = "{:>5} {:>6} {:>15} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11} {:>11}  {}\n";
  out += "Per GPU, by pipeline stage:\n";
  out += fmt::format(fmt::runtime(row), "STAGE", "LAYERS", "PARAMETERS", "WEIGHTS", "GRADS", "OPTIM", "ACTIV", "OTHER",
                     "ALLOC", "RESERVED", "HEADROOM", "FITS");
  out += fmt::format(fmt::runtime(row), "", "", "", "(GiB)", "(GiB)", "(GiB)", "(GiB)", "(GiB)", "(GiB)", "(GiB)", "(GiB)", "");
  std::size_t shown = 0;
  for (const auto& s : r.stages) {
    // Long pipelines: first three, the peak and the last three.
    const bool edge = shown < 3 || s.stage >= static_cast<std::int64_t>(r.stages.size()) - 3 || s.stage == r.peak_stage;
    ++shown;
    if (!edge) {
      if (s.stage == 3) out += "  ...\n";
      continue;
    }
    out += fmt::format(fmt::runtime(row), s.stage, s.num_layers, format_count(s.parameters), format_gib(s.weights_bytes),
                       format_gib(s.gradients_bytes), format_gib(s.optimizer_bytes), format_gib(s.activations_bytes),
                       format_gib(s.other_bytes), format_gib(s.allocated_bytes), format_gib(s.reserved_bytes),
                       format_gib(s.headroom_bytes), s.fits ? "yes" : "NO");
  }
  const auto& peak = r.stages[static_cast<std::size_t>(r.peak_stage)];
  out += fmt::format("\nPeak: stage {} — {} GiB allocated (torch.cuda.max_memory_allocated), {} GiB reserved "
                     "(nvidia-smi) of {} GiB usable: {} ({} GiB headroom, {:.1f}%)\n",
                     r.peak_stage, format_gib(r.peak_allocated_bytes), format_gib(r.peak_reserved_bytes),
                     format_gib(r.capacity_bytes), r.fits ? "fits" : "DOES NOT FIT", format_gib(peak.headroom_bytes),
                     100.0 * peak.headroom_bytes / r.capacity_bytes);
  out += fmt::format("  micro-batches in flight on stage {}: {}; activations per micro-batch {} GiB\n", peak.stage,
                     peak.microbatches_in_flight, format_gib(peak.activations_per_microbatch_bytes));
  if (peak.stranded_bytes > 0) {
    out += fmt::format("  reserved includes {} GiB the loss's backward cannot reuse: the deleted 16-bit logits' block, "
                       "kept by PyTorch's caching allocator (docs/formulas.md §3.8)\n",
                       format_gib(peak.stranded_bytes));
  }
  if (megatron != nullptr) {
    // Say which way it differs: it omits the logits, buffers and allocator (lower), but its activation
    // term prices a GELU layer without flash attention (higher where flash or recomputation apply).
    const bool higher = megatron->total() > r.peak_allocated_bytes;
    out += fmt::format("  Megatron-LM's theoretical_memory_usage.py for comparison: {} GiB, {} than our {} GiB allocated "
                       "(weights and optimizer {} GiB, activations {} GiB; {}; docs/formulas.md §3.9)\n",
                       format_gib(megatron->total()), higher ? "higher" : "lower", format_gib(r.peak_allocated_bytes),
                       format_gib(megatron->weight_and_optimizer_bytes), format_gib(megatron->activation_bytes),
                       higher ? "its activation term prices a GELU layer without flash attention or recomputation"
                              : "it omits the logits, buffers and allocator");
  }
  append_ignored_flags(out, ctx);
  return out;
}

}  // namespace trainplan
