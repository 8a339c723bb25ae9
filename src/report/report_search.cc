// The layout search and model shapes in text, JSON and CSV (docs/formulas.md §7.1-§7.4). They format;
// they never compute.
#include "trainplan/report/report.h"

#include <fmt/format.h>

#include <cmath>

#include "report_detail.h"
#include "reporters.h"

namespace trainplan {

using detail::append_ignored_flags;
using detail::context_json;
using detail::json;
using detail::kGiB;
using detail::layout_recompute;
using detail::parallel_json;
using detail::whole_bytes;

namespace {

json candidate_json(const search_candidate& c) {
  return {{"num_gpus", c.num_gpus},
          {"num_nodes", c.num_nodes},
          {"dp", c.dp},
          {"tp", c.tp},
          {"pp", c.pp},
          {"cp", c.cp},
          {"ep", c.ep},
          {"etp", c.etp},
          {"vpp", c.vpp},
          {"first_stage_layers", c.first_stage_layers},
          {"last_stage_layers", c.last_stage_layers},
          {"mbs", c.mbs},
          {"sequence_parallel", c.sequence_parallel},
          {"embedding_as_stage", c.embedding_as_stage},
          {"recompute", to_string(c.recompute)},
          {"recompute_num_layers", c.recompute_num_layers},
          {"zero_stage", c.zero_stage},
          {"iteration_s", c.iteration_s},
          {"tflops_per_gpu", c.tflops_per_gpu},
          {"mfu", c.mfu},
          {"samples_per_s", c.samples_per_s},
          {"bubble_fraction", c.bubble_fraction},
          {"peak_reserved_bytes", whole_bytes(c.peak_reserved_bytes)},
          {"headroom_bytes", whole_bytes(c.headroom_bytes)},
          {"lower_bound_s", c.lower_bound_s},
          {"gpu_hours_per_iteration", c.gpu_hours_per_iteration},
          {"train_days", c.train_days},
          {"score", c.score}};
}

/// A token as a POSIX shell reads it back: quoted when it holds anything but [A-Za-z0-9_./=:,+-].
std::string shell_word(const std::string& t) {
  const bool plain = !t.empty() && t.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./=:,+-") ==
                                       std::string::npos;
  if (plain) return t;
  std::string q = "'";
  for (char ch : t) q += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return q + "'";
}

/// `trainplan time` with the search's job flags and the row's layout; "" when the base came from a
/// launch line.
std::string reproduce_command(const run_context& ctx, const search_candidate& c) {
  if (ctx.from_launch_line || ctx.job_args.empty() || !ctx.candidate_args) return "";
  std::string cmd = "trainplan time";
  for (const std::vector<std::string>& words : {ctx.job_args, ctx.candidate_args(c)}) {
    for (const std::string& a : words) {
      cmd.push_back(' ');
      cmd.append(shell_word(a));
    }
  }
  return cmd;
}

}  // namespace

std::string search_summary(const search_result& r) {
  return fmt::format(
      "{} layouts enumerated, {} pruned ({} do not divide, {} outside the constraints, {} do not fit, {} bounded out "
      "by compute), {} evaluated with the full time model, in {:.3f} s on {} threads\n",
      r.enumerated, r.pruned, r.pruned_divisibility, r.pruned_constraint, r.pruned_memory, r.pruned_bound, r.evaluated,
      r.elapsed_s, r.threads);
}

std::string text_reporter::search(const run_context& ctx, const search_space& s, const search_result& r) const {
  const job_spec& job = ctx.job;
  std::string o = fmt::format("Search: {} ({:.1f}B parameters) on {} (up to {} × {} {}), GBS {}, {} {}, ranked by {}\n\n",
                              job.model.name, r.model_params / 1e9, job.cluster.name,
                              detail::counted(job.cluster.num_nodes, "node"),
                              job.cluster.gpus_per_node, job.cluster.gpu.name, job.training.global_batch_size,
                              to_string(job.training.framework), to_string(job.training.precision), to_string(s.rank));
  const bool days = s.train_tokens > 0;
  o += fmt::format("{:>4} {:>5} {:>6} {:>3} {:>3} {:>3} {:>4} {:>5} {:>8} {:>9} {:>8} {:>6} {:>10} {:>3} {:>5} {:>3} {:>3} {:>9} {:>4} {:>3}{}\n",
                   "#", "Nodes", "Size", "DP", "TP", "PP", "MBS", "GBS", "Mem GiB", "Sec/it s", "TFLOPs", "MFU %",
                   "Headroom", "CP", "EP", "VPP", "SP", "Recompute", "ZeRO", "Emb", days ? "   Days" : "");
  const std::size_t rows = std::min<std::size_t>(r.candidates.size(), static_cast<std::size_t>(s.top_k));
  for (std::size_t i = 0; i < rows; ++i) {
    const search_candidate& c = r.candidates[i];
    // EP/ETP where expert TP differs from TP (parallel folding).
    const std::string ep = c.etp != c.tp ? fmt::format("{}/{}", c.ep, c.etp) : std::to_string(c.ep);
    o += fmt::format("{:>4} {:>5} {:>5.0f}B {:>3} {:>3} {:>3} {:>4} {:>5} {:>8.1f} {:>9.2f} {:>8.1f} {:>6.1f} {:>6.1f} GiB {:>3} {:>5} {:>3} {:>3} {:>9} {:>4} {:>3}{}\n",
                     i + 1, c.num_nodes, r.model_params / 1e9, c.dp, c.tp, c.pp, c.mbs, job.training.global_batch_size,
                     c.peak_reserved_bytes / kGiB, c.iteration_s, c.tflops_per_gpu, 100 * c.mfu, c.headroom_bytes / kGiB,
                     c.cp, ep, c.vpp, c.sequence_parallel ? "on" : "off", layout_recompute(c), c.zero_stage,
                     c.embedding_as_stage ? "yes" : "no", days ? fmt::format(" {:>6.1f}", c.train_days) : std::string());
  }
  o += "\nMem: peak reserved per GPU (nvidia-smi); TFLOPs per GPU as Megatron reports them (recomputation counted).\n";
  if (job.model.is_moe()) o += "EP: expert parallel size, /ETP where the experts' tensor parallel size differs from TP.\n";
  o += search_summary(r);
  if (const error_band& band = ctx.expected_error; band.runs > 0 && ctx.rows_within_expected_error > 1) {
    o += fmt::format("Rows 1-{} lie within the ±{:.0f}% expected error of row 1's time (p80 of {} validated runs, {}): "
                     "the model does not order them; measure them before choosing.\n",
                     ctx.rows_within_expected_error, 100 * band.p80_abs_error, band.runs, band.scope);
  } else if (band.runs > 0 && ctx.rows_within_expected_error == 1 && r.candidates.size() > 1) {
    o += fmt::format("Row 1 leads row 2 by more than the ±{:.0f}% expected error (p80 of {} validated runs, {}).\n",
                     100 * band.p80_abs_error, band.runs, band.scope);
  } else if (band.runs == 0 && r.candidates.size() > 1) {
    o += fmt::format("Fewer than {} validated runs of {}: how far the times and their order can be trusted is not "
                     "known; measure the top rows before choosing.\n",
                     kMinBandRuns, band.scope.empty() ? std::string("this GPU generation") : band.scope);
  }
  o += "`--explain N` shows row N in full; `--json`/`--csv` give every evaluated layout (JSON with each row's command).\n";
  if (!r.candidates.empty()) {
    if (const std::string cmd = reproduce_command(ctx, r.candidates.front()); !cmd.empty()) o += "Row 1 alone: " + cmd + "\n";
  }
  append_ignored_flags(o, ctx);
  return o;
}

std::string json_reporter::search(const run_context& ctx, const search_space& s, const search_result& r) const {
  json j;
  j["schema_version"] = kSchemaVersion;
  j["context"] = context_json(&ctx);
  json& sj = j["search"];
  sj["model"] = ctx.job.model.name;
  sj["cluster"] = ctx.job.cluster.name;
  sj["global_batch_size"] = ctx.job.training.global_batch_size;
  sj["rank_by"] = to_string(s.rank);
  sj["enumerated"] = r.enumerated;
  sj["pruned"] = r.pruned;
  sj["evaluated"] = r.evaluated;
  sj["pruned_divisibility"] = r.pruned_divisibility;
  sj["pruned_constraint"] = r.pruned_constraint;
  sj["pruned_memory"] = r.pruned_memory;
  sj["pruned_bound"] = r.pruned_bound;
  sj["elapsed_s"] = r.elapsed_s;
  sj["threads"] = r.threads;
  sj["model_params"] = r.model_params;
  const error_band& band = ctx.expected_error;
  sj["expected_error"] = detail::error_band_json(band);
  sj["rows_within_expected_error"] = ctx.rows_within_expected_error;
  json cands = json::array();
  for (const search_candidate& c : r.candidates) {
    json cj = candidate_json(c);
    const std::string cmd = reproduce_command(ctx, c);
    cj["command"] = cmd.empty() ? json(nullptr) : json(cmd);
    cands.push_back(std::move(cj));
  }
  sj["candidates"] = std::move(cands);
  return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

std::string csv_reporter::search(const run_context&, const search_space&, const search_result& r) const {
  std::string o =
      "rank,num_gpus,num_nodes,dp,tp,pp,cp,ep,etp,vpp,first_stage_layers,last_stage_layers,mbs,sequence_parallel,"
      "embedding_as_stage,recompute,recompute_num_layers,zero_stage,iteration_s,tflops_per_gpu,mfu,samples_per_s,"
      "bubble_fraction,peak_reserved_bytes,headroom_bytes,lower_bound_s,gpu_hours_per_iteration,train_days\n";
  // The pipeline split's ends: empty for the even split (rows that differ only there are told apart).
  auto ends = [](std::int64_t layers) { return layers < 0 ? std::string() : std::to_string(layers); };
  std::size_t rank = 0;
  for (const search_candidate& c : r.candidates) {
    o += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{},{},{:.6g},{:.6g},{}\n",
                     ++rank, c.num_gpus, c.num_nodes, c.dp, c.tp, c.pp, c.cp, c.ep, c.etp, c.vpp,
                     ends(c.first_stage_layers), ends(c.last_stage_layers), c.mbs,
                     c.sequence_parallel ? 1 : 0, c.embedding_as_stage ? 1 : 0, to_string(c.recompute),
                     c.recompute_num_layers, c.zero_stage, c.iteration_s, c.tflops_per_gpu, c.mfu, c.samples_per_s,
                     c.bubble_fraction, whole_bytes(c.peak_reserved_bytes), whole_bytes(c.headroom_bytes),
                     c.lower_bound_s, c.gpu_hours_per_iteration,
                     c.train_days > 0 ? fmt::format("{:.6g}", c.train_days) : std::string());  // empty: no budget
  }
  return o;
}

std::string text_reporter::shapes(const shape_rules& rules, const shapes_result& r) const {
  std::string o = fmt::format("Shapes near {:.1f}B parameters (±{:.0f}%, hidden/layers {:.0f}-{:.0f}), each with its fastest layout\n\n",
                              rules.target_params / 1e9, 100 * rules.tolerance, rules.min_ratio, rules.max_ratio);
  o += fmt::format("{:>3} {:>7} {:>6} {:>5} {:>8} {:>6} {:>7} {:>5} {:>3} {:>3} {:>3} {:>4} {:>9} {:>8} {:>6} {:>9}\n", "#",
                   "Hidden", "Layers", "Heads", "Size", "Ratio", "GEMM %", "Nodes", "DP", "TP", "PP", "MBS", "Sec/it s",
                   "TFLOPs", "MFU %", "Recompute");
  std::size_t i = 0;
  for (const shape_candidate& s : r.shapes) {
    o += fmt::format("{:>3} {:>7} {:>6} {:>5} {:>7.1f}B {:>6.0f} {:>7.1f}", ++i, s.hidden, s.layers, s.heads,
                     s.params / 1e9, s.ratio, 100 * s.gemm_efficiency);
    if (s.has_layout) {
      const search_candidate& c = s.best;
      o += fmt::format(" {:>5} {:>3} {:>3} {:>3} {:>4} {:>9.2f} {:>8.1f} {:>6.1f} {:>9}\n", c.num_nodes, c.dp, c.tp, c.pp,
                       c.mbs, c.iteration_s, c.tflops_per_gpu, 100 * c.mfu, layout_recompute(c));
    } else {
      o += "   (no layout fits)\n";
    }
  }
  o += fmt::format("\n{} shapes considered, {} searched for a layout, in {:.2f} s. Ranked by tokens/s × parameters "
                   "of the best layout; GEMM %: the layer GEMMs' efficiency at the largest TP as the time model prices it (§5.2).\n",
                   r.considered, r.shapes.size(), r.elapsed_s);
  return o;
}

std::string json_reporter::shapes(const shape_rules& rules, const shapes_result& r) const {
  json j;
  j["schema_version"] = kSchemaVersion;
  j["context"] = context_json();
  json& sj = j["shapes"];
  sj["target_params"] = rules.target_params;
  sj["considered"] = r.considered;
  sj["elapsed_s"] = r.elapsed_s;
  json arr = json::array();
  for (const shape_candidate& s : r.shapes) {
    json e = {{"hidden_size", s.hidden}, {"num_layers", s.layers}, {"num_attention_heads", s.heads},
              {"params", s.params}, {"ratio", s.ratio}, {"gemm_efficiency", s.gemm_efficiency},
              {"param_tokens_per_s", s.param_tokens_per_s}};
    e["best"] = s.has_layout ? candidate_json(s.best) : json(nullptr);
    arr.push_back(std::move(e));
  }
  sj["candidates"] = std::move(arr);
  return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace trainplan
