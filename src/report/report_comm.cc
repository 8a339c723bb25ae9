// Renderers of the communication analysis (text, JSON). They format; they never compute.
#include "trainplan/report/report.h"

#include <fmt/format.h>

#include <cmath>

#include "report_detail.h"
#include "reporters.h"

// ---- communication (docs/formulas.md §4) ----------------------------------------------------------

namespace trainplan {

using detail::append_ignored_flags;
using detail::context_json;
using detail::json;
using detail::kGiB;
using detail::kMiB;
using detail::parallel_json;
using detail::whole_bytes;

namespace {

json groups_json(const comm_group_set& g, std::int64_t gpus_per_node) {
  json list = json::array();
  for (const auto& members : g.ranks) {
    json names = json::array();
    for (auto r : members) names.push_back(device_name(r, gpus_per_node));
    list.push_back(std::move(names));
  }
  return list;
}

json placement_json(const group_placement& p) {
  return {{"num_nodes", p.num_nodes},
          {"gpus_per_node", p.gpus_per_node},
          {"concurrent_groups_per_node", p.concurrent_groups_per_node},
          {"link", to_string(p.link)}};
}

json dimension_json(const comm_dimension& d, std::int64_t gpus_per_node) {
  json j;
  j["group"] = d.groups.name;
  j["group_size"] = d.groups.group_size;
  j["num_groups"] = d.groups.num_groups;
  j["placement"] = placement_json(d.groups.placement);
  j["groups"] = groups_json(d.groups, gpus_per_node);
  if (d.expert_groups.group_size > 0) {
    j["expert_dp"] = {{"group_size", d.expert_groups.group_size},
                      {"num_groups", d.expert_groups.num_groups},
                      {"placement", placement_json(d.expert_groups.placement)},
                      {"groups", groups_json(d.expert_groups, gpus_per_node)}};
  }
  j["busiest_stage"] = d.busiest_stage;
  j["calls_per_iteration_per_gpu"] = d.calls_per_iteration_per_gpu;
  j["bytes_per_iteration_per_gpu"] = whole_bytes(d.bytes_per_iteration_per_gpu);
  j["wire_bytes_per_iteration_per_gpu"] = whole_bytes(d.wire_bytes_per_iteration_per_gpu);
  j["calls_per_iteration_cluster"] = d.calls_per_iteration_cluster;
  j["bytes_per_iteration_cluster"] = whole_bytes(d.bytes_per_iteration_cluster);
  j["time_per_iteration_s"] = d.time_per_iteration_s;
  json colls = json::array();
  for (const auto& c : d.collectives) {
    colls.push_back({{"kind", to_string(c.kind)},
                     {"phase", to_string(c.phase)},
                     {"what", c.what},
                     {"group", c.group},
                     {"group_size", c.group_size},
                     {"bytes_per_call", whole_bytes(c.bytes_per_call)},
                     {"calls_per_iteration", c.calls_per_iteration},
                     {"calls_per_iteration_cluster", c.calls_per_iteration_cluster},
                     {"bytes_per_iteration_cluster", whole_bytes(c.bytes_per_iteration_cluster)},
                     {"link", to_string(c.link)},
                     {"algorithm", c.algorithm},
                     {"time_per_call_s", c.time_per_call_s}});
  }
  j["collectives"] = std::move(colls);
  return j;
}

std::string group_line(const std::vector<std::int64_t>& members, std::int64_t gpus_per_node) {
  std::string s = "[";
  for (std::size_t i = 0; i < members.size(); ++i) {
    if (i == 8 && members.size() > 10) {
      s += fmt::format(" … {} more {}", members.size() - 9, device_name(members.back(), gpus_per_node));
      break;
    }
    if (i > 0) s += ' ';
    s += device_name(members[i], gpus_per_node);
  }
  return s + "]";
}

std::string placement_words(const group_placement& p) {
  if (p.group_size <= 1) return "no communication";
  if (p.link == link_kind::nvlink) return "inside one node (NVLink)";
  return fmt::format("{} × {}, {} per node share its network{}", detail::counted(p.num_nodes, "node"),
                     detail::counted(p.gpus_per_node, "GPU"), detail::counted(p.concurrent_groups_per_node, "group"),
                     p.link == link_kind::hierarchical ? " (hierarchical)" : "");
}

std::string time_us(double s) { return fmt::format("{:.1f}", s * 1e6); }

void dimension_text(std::string& out, std::string_view title, const comm_dimension& d, std::int64_t gpn) {
  out += fmt::format("\n{} — {} group{} of {} ({}): {}\n", title, d.groups.num_groups, d.groups.num_groups == 1 ? "" : "s",
                     d.groups.group_size, d.groups.name, placement_words(d.groups.placement));
  if (d.groups.group_size <= 1) return;
  constexpr std::size_t kShown = 4;
  for (std::size_t i = 0; i < d.groups.ranks.size() && i < kShown; ++i)
    out += "    " + group_line(d.groups.ranks[i], gpn) + "\n";
  if (d.groups.ranks.size() > kShown) out += fmt::format("    … {} groups in all\n", d.groups.ranks.size());
  if (d.expert_groups.group_size > 0) {
    out += fmt::format("  expert-DP: {} groups of {} ({})\n", d.expert_groups.num_groups, d.expert_groups.group_size,
                       placement_words(d.expert_groups.placement));
    for (std::size_t i = 0; i < d.expert_groups.ranks.size() && i < 2; ++i)
      out += "    " + group_line(d.expert_groups.ranks[i], gpn) + "\n";
  }
  if (d.collectives.empty()) {
    out += "  no traffic\n";
    return;
  }
  const std::string row = "  {:<14} {:<9} {:>12} {:>10} {:>12} {:>12} {:<12} {:<17} {:>11}  {}\n";
  out += fmt::format(fmt::runtime(row), "KIND", "PHASE", "BUFFER", "CALLS/GPU", "CALLS", "CLUSTER", "LINK",
                     "ALGORITHM", "TIME/CALL", "WHAT");
  out += fmt::format(fmt::runtime(row), "", "", "(MiB/call)", "(per iter)", "(cluster)", "(GiB/iter)", "", "", "(µs)", "");
  for (const auto& c : d.collectives) {
    out += fmt::format(fmt::runtime(row), to_string(c.kind), to_string(c.phase), fmt::format("{:.3f}", c.bytes_per_call / kMiB),
                       c.calls_per_iteration, c.calls_per_iteration_cluster,
                       format_gib(c.bytes_per_iteration_cluster, 3), to_string(c.link), c.algorithm,
                       time_us(c.time_per_call_s), c.what);
  }
  out += fmt::format("  busiest GPU (stage {}): {}, {} GiB ({} GiB sent), {:.3f} s per iteration without overlap\n",
                     d.busiest_stage, detail::counted(d.calls_per_iteration_per_gpu, "call"), format_gib(d.bytes_per_iteration_per_gpu, 3),
                     format_gib(d.wire_bytes_per_iteration_per_gpu, 3), d.time_per_iteration_s);
}

}  // namespace

std::string json_reporter::comm(const run_context& ctx, const comm_report& r) const {
  const job_spec& job = ctx.job;
  json j;
  j["schema_version"] = kSchemaVersion;
  j["context"] = context_json(&ctx);
  j["model"] = {{"name", job.model.name}};
  j["cluster"] = {{"name", job.cluster.name}, {"gpu", job.cluster.gpu.name}};
  j["parallel"] = parallel_json(job);
  json dims;
  for (const auto& d : r.dimensions) dims[std::string(to_string(d.dim))] = dimension_json(d, r.gpus_per_node);
  j["comm"] = {{"rank_order", format_rank_order(r.rank_order)},
               {"world_size", r.world_size},
               {"gpus_per_node", r.gpus_per_node},
               {"num_nodes", r.num_nodes},
               {"num_microbatches", r.num_microbatches},
               {"calls_per_iteration_cluster", r.calls_per_iteration_cluster},
               {"bytes_per_iteration_cluster", whole_bytes(r.bytes_per_iteration_cluster)},
               {"time_per_iteration_per_gpu_s", r.time_per_iteration_per_gpu_s},
               {"dimensions", std::move(dims)},
               {"scalars", dimension_json(r.scalars, r.gpus_per_node)}};
  j["ignored_flags"] = ctx.ignored_flags;
  return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

std::string text_reporter::comm(const run_context& ctx, const comm_report& r) const {
  const job_spec& job = ctx.job;
  const auto& par = job.parallel;
  const auto& t = job.training;
  std::string out;
  out += fmt::format("Communication per iteration: {} on {}: {} = {} × {} {}\n", job.model.name, job.cluster.name,
                     detail::counted(r.world_size, "GPU"), detail::counted(r.num_nodes, "node"), r.gpus_per_node,
                     job.cluster.gpu.name);
  out += fmt::format("Layout: TP {} × CP {} × EP {} × DP {} × PP {}{}{}, rank order {} (fastest first); "
                     "{} micro-batches of {}\n",
                     par.tp, par.cp, par.ep, par.dp, par.pp, par.vpp > 1 ? fmt::format(" (VPP {})", par.vpp) : "",
                     par.sequence_parallel ? ", sequence parallel" : "", format_rank_order(r.rank_order),
                     r.num_microbatches, t.micro_batch_size);
  out += fmt::format("Training: {}, {}, ZeRO stage {}{}{}, recomputation: {}\n\n", to_string(t.framework),
                     to_string(t.precision), t.zero_stage, detail::sharding_note(t),
                     t.dp_replicas > 1 ? fmt::format(", HSDP: {} replicas of {} shards", t.dp_replicas,
                                                     dp_shard_size(par, t))
                                       : "",
                     to_string(t.recompute));
  const std::string row = "{:<10} {:>5} {:>7} {:<13} {:>10} {:>12} {:>12} {:>12} {:>12}\n";
  out += "Cluster summary (GiB = 2^30 bytes; per GPU = the busiest GPU; cluster = every GPU's calls summed)\n";
  out += fmt::format(fmt::runtime(row), "DIMENSION", "SIZE", "GROUPS", "LINK", "CALLS/GPU", "GPU", "CALLS", "CLUSTER",
                     "TIME/GPU");
  out += fmt::format(fmt::runtime(row), "", "", "", "", "(per iter)", "(GiB/iter)", "(cluster)", "(GiB/iter)", "(s/iter)");
  auto line = [&](std::string_view name, const comm_dimension& d) {
    out += fmt::format(fmt::runtime(row), name, d.groups.group_size, d.groups.num_groups,
                       d.groups.group_size > 1 ? to_string(d.groups.placement.link) : "-", d.calls_per_iteration_per_gpu,
                       format_gib(d.bytes_per_iteration_per_gpu, 3), d.calls_per_iteration_cluster,
                       format_gib(d.bytes_per_iteration_cluster, 3), fmt::format("{:.4f}", d.time_per_iteration_s));
  };
  for (const auto& d : r.dimensions) line(to_string(d.dim), d);
  line("scalars", r.scalars);
  out += fmt::format(fmt::runtime(row), "all", "", "", "", "", "", r.calls_per_iteration_cluster,
                     format_gib(r.bytes_per_iteration_cluster, 3), fmt::format("{:.4f}", r.time_per_iteration_per_gpu_s));
  constexpr std::array<std::string_view, 6> kTitles = {"Tensor parallel (tp)", "Context parallel (cp)",
                                                       "Expert parallel (ep)", "Data parallel (dp)",
                                                       "Pipeline parallel (pp)", "Tied embedding (embedding)"};
  for (std::size_t i = 0; i < r.dimensions.size(); ++i) dimension_text(out, kTitles[i], r.dimensions[i], r.gpus_per_node);
  dimension_text(out, "Scalars (loss, gradient norm)", r.scalars, r.gpus_per_node);
  append_ignored_flags(out, ctx);
  return out;
}

}  // namespace trainplan
