// Text and JSON renderers. They format result structs; every number is computed elsewhere.
#include "trainplan/report.h"

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>

namespace trainplan {

namespace {

using json = nlohmann::ordered_json;

constexpr double kGiB = 1073741824.0;

std::int64_t whole_bytes(double b) { return static_cast<std::int64_t>(std::llround(b)); }

std::string shape(std::initializer_list<std::int64_t> dims) {
  std::string s = "[";
  for (auto d : dims) s += (s.size() > 1 ? "," : "") + std::to_string(d);
  return s + "]";
}

json model_fields(const model_spec& m) {
  json j;
  j["name"] = m.name;
  j["num_layers"] = m.num_layers;
  j["hidden_size"] = m.hidden_size;
  j["ffn_hidden_size"] = m.ffn_hidden_size;
  j["num_attention_heads"] = m.num_attention_heads;
  j["num_query_groups"] = m.num_query_groups;
  j["kv_channels"] = m.kv_channels;
  j["vocab_size"] = m.vocab_size;
  j["seq_length"] = m.seq_length;
  j["max_position_embeddings"] = m.max_position_embeddings;
  j["position_embedding"] = to_string(m.position_embedding);
  j["activation"] = to_string(m.activation);
  j["norm"] = to_string(m.norm);
  j["add_bias_linear"] = m.add_bias_linear;
  j["add_qkv_bias"] = m.add_qkv_bias;
  j["tie_embeddings"] = m.tie_embeddings;
  j["embedding_norm"] = m.embedding_norm;
  if (m.is_moe()) {
    j["moe"] = {{"num_experts", m.moe.num_experts},
                {"router_topk", m.moe.router_topk},
                {"expert_ffn_hidden_size", m.moe.expert_ffn_hidden_size},
                {"shared_expert_ffn_hidden_size", m.moe.shared_expert_ffn_hidden_size},
                {"layer_freq", m.moe.layer_freq}};
  }
  return j;
}

json layer_json(const layer_parameters& l) {
  return {{"input_norm", l.input_norm},   {"qkv_weight", l.qkv_weight},
          {"qkv_bias", l.qkv_bias},       {"proj_weight", l.proj_weight},
          {"proj_bias", l.proj_bias},     {"post_attention_norm", l.post_attention_norm},
          {"fc1_weight", l.fc1_weight},   {"fc1_bias", l.fc1_bias},
          {"fc2_weight", l.fc2_weight},   {"fc2_bias", l.fc2_bias},
          {"router", l.router},           {"experts", l.experts},
          {"total", l.total()}};
}

}  // namespace

/// The flags a launch line or pasted arguments carried that change no estimate.
static void append_ignored_flags(std::string& out, const parsed_job& pj) {
  if (pj.ignored_flags.empty()) return;
  out += "\nIgnored (they change no estimate):";
  for (const auto& f : pj.ignored_flags) out += " " + f;
  out += "\n";
}

std::string format_gib(double bytes, int digits) { return fmt::format("{:.{}f}", bytes / kGiB, digits); }

std::string format_count(std::int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return (n < 0 ? "-" : "") + out;
}

std::string render_models_text() {
  std::string out = fmt::format("{:<15} {:<8} {:>7} {:>7} {:>6} {:>5} {:>8} {:>7} {:>19}  {}\n", "NAME", "FAMILY",
                                "LAYERS", "HIDDEN", "HEADS", "KV", "VOCAB", "SEQ", "PARAMETERS", "SOURCE");
  for (const auto& c : model_catalog()) {
    const auto& m = c.spec;
    out += fmt::format("{:<15} {:<8} {:>7} {:>7} {:>6} {:>5} {:>8} {:>7} {:>19}  {}\n", m.name, c.family, m.num_layers,
                       m.hidden_size, m.num_attention_heads, m.num_query_groups, m.vocab_size, m.seq_length,
                       format_count(count_parameters(m, 1).total), c.source);
  }
  return out;
}

std::string render_models_json() {
  json j;
  j["schema_version"] = kSchemaVersion;
  j["models"] = json::array();
  for (const auto& c : model_catalog()) {
    json m = model_fields(c.spec);
    m["family"] = c.family;
    m["parameters"] = count_parameters(c.spec, 1).total;
    m["source"] = c.source;
    j["models"].push_back(m);
  }
  return j.dump(2) + "\n";
}

std::string render_model_text(const model_spec& m, const parameter_breakdown& p, std::int64_t tp) {
  const std::int64_t h = m.hidden_size;
  const std::int64_t gate = is_gated(m.activation) ? 2 : 1;
  std::string out = fmt::format("Model {}: {} layers, hidden {}, FFN {}, {} heads ({} query groups, head dim {}), "
                                "vocabulary {} (padded to {} for TP {}), sequence {}\n",
                                m.name, m.num_layers, h, m.ffn_hidden_size, m.num_attention_heads, m.num_query_groups,
                                m.kv_channels, m.vocab_size, p.padded_vocab_size, tp, m.seq_length);
  out += fmt::format("{} positions, {} MLP, {}, {} biases, {} embeddings{}\n\n", to_string(m.position_embedding),
                     to_string(m.activation), to_string(m.norm), m.add_bias_linear ? "linear" : (m.add_qkv_bias ? "QKV-only" : "no"),
                     m.tie_embeddings ? "tied" : "untied", m.embedding_norm ? ", embedding norm" : "");
  const std::string row = "{:<46} {:<26} {:>19} {:>12}\n";
  out += fmt::format(fmt::runtime(row), "MODULE", "SHAPE", "PARAMETERS", "BF16 (GiB)");
  auto line = [&](const std::string& name, const std::string& sh, std::int64_t n) {
    out += fmt::format(fmt::runtime(row), name, sh, format_count(n), format_gib(2.0 * static_cast<double>(n), 3));
  };
  line("embedding.word_embeddings", shape({p.padded_vocab_size, h}), p.word_embeddings);
  if (p.position_embeddings > 0) line("embedding.position_embeddings", shape({m.max_position_embeddings, h}), p.position_embeddings);
  if (p.embedding_norm > 0) line("embedding.norm", shape({p.embedding_norm}), p.embedding_norm);
  auto layer_lines = [&](const char* title, const layer_parameters& l, std::int64_t count, std::int64_t ffn) {
    line(fmt::format("{} × {}", title, count), "", l.total() * count);
    line("  input_norm", shape({l.input_norm}), l.input_norm);
    line("  attention.qkv", shape({m.q_width() + 2 * m.kv_width(), h}) + (l.qkv_bias ? " +b" : ""), l.qkv_weight + l.qkv_bias);
    line("  attention.proj", shape({h, m.q_width()}) + (l.proj_bias ? " +b" : ""), l.proj_weight + l.proj_bias);
    line("  post_attention_norm", shape({l.post_attention_norm}), l.post_attention_norm);
    if (l.fc1_weight > 0) {
      line("  mlp.fc1", shape({gate * ffn, h}) + (l.fc1_bias ? " +b" : ""), l.fc1_weight + l.fc1_bias);
      line("  mlp.fc2", shape({h, ffn}) + (l.fc2_bias ? " +b" : ""), l.fc2_weight + l.fc2_bias);
    }
    if (l.router > 0) {
      line("  mlp.router", shape({m.moe.num_experts, h}), l.router);
      line(fmt::format("  mlp.experts × {}", m.moe.num_experts),
           shape({gate * m.moe.expert_ffn_hidden_size, h}) + "+" + shape({h, m.moe.expert_ffn_hidden_size}), l.experts);
    }
  };
  if (p.num_dense_layers > 0) layer_lines("layers (dense)", p.dense_layer, p.num_dense_layers, m.ffn_hidden_size);
  if (p.num_moe_layers > 0) layer_lines("layers (MoE)", p.moe_layer, p.num_moe_layers, m.moe.shared_expert_ffn_hidden_size);
  if (p.final_norm > 0) line("final_norm", shape({p.final_norm}), p.final_norm);
  if (p.output_layer > 0) line("output_layer", shape({p.padded_vocab_size, h}), p.output_layer);
  else out += fmt::format(fmt::runtime(row), "output_layer", "tied to word_embeddings", "0", "0.000");
  out += "\n";
  out += fmt::format("Total parameters: {}\n", format_count(p.total));
  if (m.is_moe()) out += fmt::format("Active per token: {}\n", format_count(p.active_per_token));
  return out;
}

std::string render_model_json(const model_spec& m, const parameter_breakdown& p, std::int64_t tp) {
  json j;
  j["schema_version"] = kSchemaVersion;
  json mj = model_fields(m);
  mj["parameters"] = p.total;
  mj["active_parameters_per_token"] = p.active_per_token;
  mj["padded_vocab_size"] = p.padded_vocab_size;
  mj["tensor_parallel_for_padding"] = tp;
  mj["breakdown"] = {{"word_embeddings", p.word_embeddings},
                     {"position_embeddings", p.position_embeddings},
                     {"embedding_norm", p.embedding_norm},
                     {"dense_layer", layer_json(p.dense_layer)},
                     {"num_dense_layers", p.num_dense_layers},
                     {"moe_layer", layer_json(p.moe_layer)},
                     {"num_moe_layers", p.num_moe_layers},
                     {"final_norm", p.final_norm},
                     {"output_layer", p.output_layer}};
  j["model"] = mj;
  return j.dump(2) + "\n";
}

namespace {

json parallel_json(const job_spec& job) {
  const auto& p = job.parallel;
  const auto& t = job.training;
  return {{"num_gpus", job.num_gpus},
          {"num_nodes", job.cluster.num_nodes},
          {"gpus_per_node", job.cluster.gpus_per_node},
          {"dp", p.dp},
          {"tp", p.tp},
          {"pp", p.pp},
          {"cp", p.cp},
          {"ep", p.ep},
          {"vpp", p.vpp},
          {"mbs", t.micro_batch_size},
          {"gbs", t.global_batch_size},
          {"num_microbatches", job.num_microbatches()},
          {"zero_stage", t.zero_stage},
          {"framework", to_string(t.framework)},
          {"distributed_optimizer", t.distributed_optimizer},
          {"sequence_parallel", p.sequence_parallel},
          {"embedding_as_stage", p.embedding_as_stage},
          {"precision", to_string(t.precision)},
          {"recompute", to_string(t.recompute)},
          {"recompute_method", to_string(t.recompute_method_)},
          {"recompute_num_layers", t.recompute_num_layers},
          {"flash_attention", t.flash_attention},
          {"optimizer", to_string(t.optimizer)},
          {"offload_optimizer", t.offload_optimizer}};
}

}  // namespace

std::string render_memory_json(const parsed_job& pj, const parameter_breakdown& p, const memory_report& r,
                               const megatron_theoretical_memory* megatron) {
  const job_spec& job = pj.job;
  json j;
  j["schema_version"] = kSchemaVersion;
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
                      {"microbatches_in_flight", s.microbatches_in_flight},
                      {"allocated_bytes", whole_bytes(s.allocated_bytes)},
                      {"reserved_bytes", whole_bytes(s.reserved_bytes)},
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
  j["ignored_flags"] = pj.ignored_flags;
  return j.dump(2) + "\n";
}

std::string render_memory_text(const parsed_job& pj, const parameter_breakdown& p, const memory_report& r,
                               const megatron_theoretical_memory* megatron) {
  const job_spec& job = pj.job;
  const auto& par = job.parallel;
  const auto& t = job.training;
  std::string out;
  out += fmt::format("Model {} ({} parameters) on {}: {} GPUs = {} nodes × {} {}\n", job.model.name,
                     format_count(p.total), job.cluster.name, job.num_gpus, job.cluster.num_nodes,
                     job.cluster.gpus_per_node, job.cluster.gpu.name);
  out += fmt::format("Layout: DP {} × TP {} × PP {} × CP {}{}{}{}; MBS {}, GBS {} ({} micro-batches per pipeline)\n",
                     par.dp, par.tp, par.pp, par.cp, par.ep > 1 ? fmt::format(", EP {}", par.ep) : "",
                     par.vpp > 1 ? fmt::format(", VPP {}", par.vpp) : "", par.sequence_parallel ? ", sequence parallel" : "",
                     t.micro_batch_size, t.global_batch_size, job.num_microbatches());
  out += fmt::format("Training: {}, {}, ZeRO stage {}{}, {} recomputation{}{}\n\n", to_string(t.framework),
                     to_string(t.precision), t.zero_stage, t.distributed_optimizer ? " (distributed optimizer)" : "",
                     to_string(t.recompute), t.flash_attention ? ", flash attention" : "",
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
  if (megatron != nullptr) {
    out += fmt::format("  Megatron-LM's theoretical_memory_usage.py for comparison: {} GiB (weights and optimizer {} GiB, "
                       "activations {} GiB; it omits the logits, buffers and allocator; docs/formulas.md §3.9)\n",
                       format_gib(megatron->total()), format_gib(megatron->weight_and_optimizer_bytes),
                       format_gib(megatron->activation_bytes));
  }
  append_ignored_flags(out, pj);
  return out;
}

}  // namespace trainplan

// ---- communication (docs/formulas.md §4) ----------------------------------------------------------

namespace trainplan {

namespace {

constexpr double kMiB = 1048576.0;

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
      s += fmt::format(" … {} more", members.size() - 9);
      s += " " + device_name(members.back(), gpus_per_node);
      break;
    }
    s += (i ? " " : "") + device_name(members[i], gpus_per_node);
  }
  return s + "]";
}

std::string placement_words(const group_placement& p) {
  if (p.group_size <= 1) return "no communication";
  if (p.link == link_kind::nvlink) return "inside one node (NVLink)";
  return fmt::format("{} nodes × {} GPU{}, {} group{} per node share its network{}", p.num_nodes, p.gpus_per_node,
                     p.gpus_per_node > 1 ? "s" : "", p.concurrent_groups_per_node,
                     p.concurrent_groups_per_node > 1 ? "s" : "", p.link == link_kind::hierarchical ? " (hierarchical)" : "");
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
  out += fmt::format("  busiest GPU (stage {}): {} calls, {} GiB ({} GiB sent), {:.3f} s per iteration without overlap\n",
                     d.busiest_stage, d.calls_per_iteration_per_gpu, format_gib(d.bytes_per_iteration_per_gpu, 3),
                     format_gib(d.wire_bytes_per_iteration_per_gpu, 3), d.time_per_iteration_s);
}

}  // namespace

std::string render_comm_json(const parsed_job& pj, const comm_report& r) {
  const job_spec& job = pj.job;
  json j;
  j["schema_version"] = kSchemaVersion;
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
  j["ignored_flags"] = pj.ignored_flags;
  return j.dump(2) + "\n";
}

std::string render_comm_text(const parsed_job& pj, const comm_report& r) {
  const job_spec& job = pj.job;
  const auto& par = job.parallel;
  const auto& t = job.training;
  std::string out;
  out += fmt::format("Communication per iteration: {} on {}: {} GPUs = {} nodes × {} {}\n", job.model.name,
                     job.cluster.name, r.world_size, r.num_nodes, r.gpus_per_node, job.cluster.gpu.name);
  out += fmt::format("Layout: TP {} × CP {} × EP {} × DP {} × PP {}{}{}, rank order {} (fastest first); "
                     "{} micro-batches of {}\n",
                     par.tp, par.cp, par.ep, par.dp, par.pp, par.vpp > 1 ? fmt::format(" (VPP {})", par.vpp) : "",
                     par.sequence_parallel ? ", sequence parallel" : "", format_rank_order(r.rank_order),
                     r.num_microbatches, t.micro_batch_size);
  out += fmt::format("Training: {}, {}, ZeRO stage {}{}, recomputation: {}\n\n", to_string(t.framework),
                     to_string(t.precision), t.zero_stage, t.distributed_optimizer ? " (distributed optimizer)" : "",
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
  append_ignored_flags(out, pj);
  return out;
}

}  // namespace trainplan

// ---- time, schedule, validation (docs/formulas.md §5) --------------------------------------------

namespace trainplan {

namespace {

json time_json(const time_report& r) {
  json t;
  t["iteration_s"] = r.iteration_s;
  t["samples_per_s"] = r.samples_per_s;
  t["tokens_per_s"] = r.tokens_per_s;
  t["tflops_per_gpu"] = r.tflops_per_gpu;
  t["model_tflops_per_gpu"] = r.model_tflops_per_gpu;
  t["mfu"] = r.mfu;
  t["hfu"] = r.hfu;
  t["bubble_fraction"] = r.bubble_fraction;
  t["schedule"] = to_string(r.schedule);
  t["p2p_s"] = r.p2p_s;
  const time_breakdown& b = r.breakdown;
  t["breakdown_s"] = {{"compute", b.compute_s},     {"tp_cp_ep_comm", b.tp_comm_s}, {"pipeline_bubble_and_p2p", b.pipeline_s},
                      {"dp_comm", b.dp_comm_s},     {"optimizer", b.optimizer_s}};
  json stages = json::array();
  for (std::size_t i = 0; i < r.compute.stages.size(); ++i) {
    const stage_compute& s = r.compute.stages[i];
    const stage_usage& u = r.pipeline.stages[i];
    stages.push_back({{"stage", s.stage},
                      {"layers", s.num_layers},
                      {"forward_s", s.forward_s + r.comm[i].forward_s},
                      {"backward_s", s.backward_s + r.comm[i].backward_s},
                      {"busy_s", u.busy_s},
                      {"send_s", u.send_s},
                      {"idle_s", u.idle_s},
                      {"grad_reduce_exposed_s", u.grad_reduce_exposed_s}});
  }
  t["stages"] = stages;
  return t;
}

}  // namespace

std::string render_time_json(const parsed_job&, const time_report& r) {
  json j;
  j["schema_version"] = kSchemaVersion;
  j["time"] = time_json(r);
  return j.dump(2) + "\n";
}

std::string render_time_text(const parsed_job& pj, const time_report& r) {
  const job_spec& job = pj.job;
  std::string o = fmt::format("{} on {} × {} ({}), TP {} PP {} DP {}{}, MBS {}, GBS {}, {} micro-batches, {}\n\n",
                              job.model.name, job.num_gpus, job.cluster.gpu.name, job.cluster.name, job.parallel.tp,
                              job.parallel.pp, job.parallel.dp,
                              job.parallel.vpp > 1 ? fmt::format(" VPP {}", job.parallel.vpp) : std::string(),
                              job.training.micro_batch_size, job.training.global_batch_size, job.num_microbatches(),
                              to_string(r.schedule));
  o += fmt::format("  iteration            {:10.2f} s\n", r.iteration_s);
  o += fmt::format("  samples/s            {:10.2f}\n", r.samples_per_s);
  o += fmt::format("  tokens/s             {:10.0f}\n", r.tokens_per_s);
  o += fmt::format("  TFLOPs per GPU       {:10.2f}   (Megatron's report: Narayanan et al. eq. 3, recomputation counted)\n",
                   r.tflops_per_gpu);
  o += fmt::format("  model TFLOPs per GPU {:10.2f}\n", r.model_tflops_per_gpu);
  o += fmt::format("  MFU / HFU            {:9.1f}% / {:.1f}%\n", 100 * r.mfu, 100 * r.hfu);
  o += fmt::format("  bubble fraction      {:9.1f}%\n\n", 100 * r.bubble_fraction);
  const time_breakdown& b = r.breakdown;
  o += "Where the time goes (busiest pipeline rank):\n";
  auto line = [&](const char* name, double s) {
    o += fmt::format("  {:<28} {:9.2f} s {:6.1f}%\n", name, s, 100 * s / r.iteration_s);
  };
  line("compute", b.compute_s);
  line("exposed TP/CP/EP comm", b.tp_comm_s);
  line("pipeline bubble + p2p", b.pipeline_s);
  line("exposed DP comm", b.dp_comm_s);
  line("optimizer (+ param gather)", b.optimizer_s);
  o += "\nPer pipeline rank (one micro-batch; busy/idle over the iteration):\n";
  o += "  stage layers  forward_s backward_s     busy_s     send_s     idle_s\n";
  for (std::size_t i = 0; i < r.compute.stages.size(); ++i) {
    const stage_compute& s = r.compute.stages[i];
    const stage_usage& u = r.pipeline.stages[i];
    o += fmt::format("  {:5} {:6} {:10.4f} {:10.4f} {:10.2f} {:10.2f} {:10.2f}\n", s.stage, s.num_layers,
                     s.forward_s + r.comm[i].forward_s, s.backward_s + r.comm[i].backward_s, u.busy_s, u.send_s,
                     u.idle_s);
  }
  return o;
}

std::string render_schedule_json(const parsed_job&, const time_report& r) {
  json j;
  j["schema_version"] = kSchemaVersion;
  json s;
  s["kind"] = to_string(r.schedule);
  s["iteration_s"] = r.iteration_s;
  s["pipeline_s"] = r.pipeline.pipeline_s;
  s["bubble_fraction"] = r.bubble_fraction;
  json ev = json::array();
  for (const schedule_event& e : r.pipeline.events) {
    ev.push_back({{"stage", e.stage},
                  {"chunk", e.chunk},
                  {"microbatch", e.microbatch},
                  {"pass", e.backward ? "backward" : "forward"},
                  {"start_s", e.start_s},
                  {"end_s", e.end_s}});
  }
  s["events"] = ev;
  j["schedule"] = s;
  return j.dump(1) + "\n";
}

std::string render_schedule_text(const parsed_job& pj, const time_report& r, int width) {
  const double total = r.pipeline.pipeline_s;
  const std::size_t ranks = r.pipeline.stages.size();
  std::vector<std::string> rows(ranks, std::string(static_cast<std::size_t>(width), '.'));
  for (const schedule_event& e : r.pipeline.events) {
    auto col = [&](double t) {
      return std::min<std::size_t>(static_cast<std::size_t>(width) - 1,
                                   static_cast<std::size_t>(t / total * width));
    };
    const char mark = e.backward ? 'B' : 'F';
    for (std::size_t c = col(e.start_s); c <= col(std::max(e.start_s, e.end_s - 1e-12)); ++c) {
      rows[static_cast<std::size_t>(e.stage)][c] = e.chunk > 0 ? static_cast<char>(e.backward ? 'b' : 'f') : mark;
    }
  }
  std::string o = fmt::format("{} schedule, {} micro-batches, {} ranks: pipeline {:.2f} s, iteration {:.2f} s, bubble {:.1f}%\n",
                              to_string(r.schedule), pj.job.num_microbatches(), ranks, total, r.iteration_s,
                              100 * r.bubble_fraction);
  o += "F/B forward/backward (f/b: later model chunks), '.' idle or sending; one column = " +
       fmt::format("{:.3f} s\n", total / width);
  for (std::size_t i = 0; i < ranks; ++i) o += fmt::format("  rank {:3} |{}|\n", i, rows[i]);
  return o;
}

std::string render_validation_json(const validation_report& r) {
  json j;
  j["schema_version"] = kSchemaVersion;
  json rows = json::array();
  for (const validation_row& v : r.rows) {
    json x = {{"table", v.table}, {"row", v.label}, {"date", v.date}, {"group", v.group}};
    if (v.skipped.empty()) {
      x["measured_s"] = v.measured_s;
      x["predicted_s"] = v.predicted_s;
      x["error"] = v.error;
      x["measured_tflops"] = v.measured_tflops;
      x["predicted_tflops"] = v.predicted_tflops;
    } else {
      x["skipped"] = v.skipped;
    }
    rows.push_back(x);
  }
  auto stats = [](const validation_stats& s) {
    return json{{"name", s.name}, {"rows", s.rows}, {"median_abs_error", s.median_abs_error},
                {"max_abs_error", s.max_abs_error}, {"spearman", s.spearman}};
  };
  json tables = json::array(), groups = json::array();
  for (const auto& s : r.tables) tables.push_back(stats(s));
  for (const auto& s : r.groups) groups.push_back(stats(s));
  j["validation"] = {{"rows", rows}, {"tables", tables}, {"groups", groups}, {"overall", stats(r.overall)}};
  return j.dump(2) + "\n";
}

std::string render_validation_text(const validation_report& r) {
  std::string o;
  std::string table;
  for (const validation_row& v : r.rows) {
    if (v.table != table) {
      table = v.table;
      o += "\n" + table + "\n  row        date        measured_s predicted_s   error  group\n";
    }
    if (!v.skipped.empty()) {
      o += fmt::format("  {:<10} {:<11} skipped: {}\n", v.label, v.date, v.skipped);
    } else {
      o += fmt::format("  {:<10} {:<11} {:10.2f} {:11.2f} {:+6.1f}%  {}\n", v.label, v.date, v.measured_s,
                       v.predicted_s, 100 * v.error, v.group);
    }
  }
  auto stats = [&](const validation_stats& s) {
    o += fmt::format("  {:<32} {:4} rows  median |error| {:5.1f}%  max {:5.1f}%  Spearman {:+.2f}\n", s.name, s.rows,
                     100 * s.median_abs_error, 100 * s.max_abs_error, s.spearman);
  };
  o += "\nPer table:\n";
  for (const auto& s : r.tables) stats(s);
  if (!r.groups.empty()) {
    o += "\nPer seed table (rows measured together, one thing varied):\n";
    for (const auto& s : r.groups) stats(s);
  }
  o += "\nOverall:\n";
  stats(r.overall);
  return o;
}

// ---- search, shapes, plan (docs/formulas.md §7) ------------------------------------------------------

namespace {

std::string layout_recompute(const search_candidate& c) {
  return c.recompute == recompute_choice::block ? fmt::format("block {}", c.recompute_num_layers)
                                                : std::string(to_string(c.recompute));
}

json candidate_json(const search_candidate& c) {
  return {{"num_gpus", c.num_gpus},
          {"num_nodes", c.num_nodes},
          {"dp", c.dp},
          {"tp", c.tp},
          {"pp", c.pp},
          {"cp", c.cp},
          {"ep", c.ep},
          {"vpp", c.vpp},
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

}  // namespace

std::string render_search_counts(const search_result& r) {
  return fmt::format(
      "{} layouts enumerated, {} pruned ({} do not divide, {} outside the constraints, {} do not fit, {} bounded out "
      "by compute), {} evaluated with the full time model, in {:.3f} s on {} threads\n",
      r.enumerated, r.pruned, r.pruned_divisibility, r.pruned_constraint, r.pruned_memory, r.pruned_bound, r.evaluated,
      r.elapsed_s, r.threads);
}

std::string render_search_text(const parsed_job& pj, const search_space& s, const search_result& r) {
  const job_spec& job = pj.job;
  std::string o = fmt::format("Search: {} ({:.1f}B parameters) on {} (up to {} nodes × {} {}), GBS {}, {} {}, ranked by {}\n\n",
                              job.model.name, r.model_params / 1e9, job.cluster.name, job.cluster.num_nodes,
                              job.cluster.gpus_per_node, job.cluster.gpu.name, job.training.global_batch_size,
                              to_string(job.training.framework), to_string(job.training.precision), to_string(s.rank));
  const bool days = s.train_tokens > 0;
  o += fmt::format("{:>4} {:>5} {:>6} {:>3} {:>3} {:>3} {:>4} {:>5} {:>8} {:>9} {:>8} {:>6} {:>10} {:>3} {:>3} {:>3} {:>3} {:>9} {:>4} {:>3}{}\n",
                   "#", "Nodes", "Size", "DP", "TP", "PP", "MBS", "GBS", "Mem GiB", "Sec/it s", "TFLOPs", "MFU %",
                   "Headroom", "CP", "EP", "VPP", "SP", "Recompute", "ZeRO", "Emb", days ? "   Days" : "");
  const std::size_t rows = std::min<std::size_t>(r.candidates.size(), static_cast<std::size_t>(s.top_k));
  for (std::size_t i = 0; i < rows; ++i) {
    const search_candidate& c = r.candidates[i];
    o += fmt::format("{:>4} {:>5} {:>5.0f}B {:>3} {:>3} {:>3} {:>4} {:>5} {:>8.1f} {:>9.2f} {:>8.1f} {:>6.1f} {:>6.1f} GiB {:>3} {:>3} {:>3} {:>3} {:>9} {:>4} {:>3}{}\n",
                     i + 1, c.num_nodes, r.model_params / 1e9, c.dp, c.tp, c.pp, c.mbs, job.training.global_batch_size,
                     c.peak_reserved_bytes / kGiB, c.iteration_s, c.tflops_per_gpu, 100 * c.mfu, c.headroom_bytes / kGiB,
                     c.cp, c.ep, c.vpp, c.sequence_parallel ? "on" : "off", layout_recompute(c), c.zero_stage,
                     c.embedding_as_stage ? "yes" : "no", days ? fmt::format(" {:>6.1f}", c.train_days) : std::string());
  }
  o += "\nMem: peak reserved per GPU (nvidia-smi); TFLOPs per GPU as Megatron reports them (recomputation counted).\n";
  o += render_search_counts(r);
  o += "`--explain N` shows row N in full; `--json`/`--csv` give every evaluated layout.\n";
  return o;
}

std::string render_search_json(const parsed_job& pj, const search_space& s, const search_result& r) {
  json j;
  j["schema_version"] = kSchemaVersion;
  json& sj = j["search"];
  sj["model"] = pj.job.model.name;
  sj["cluster"] = pj.job.cluster.name;
  sj["global_batch_size"] = pj.job.training.global_batch_size;
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
  json cands = json::array();
  for (const search_candidate& c : r.candidates) cands.push_back(candidate_json(c));
  sj["candidates"] = std::move(cands);
  return j.dump(2) + "\n";
}

std::string render_search_csv(const search_result& r) {
  std::string o =
      "rank,num_gpus,num_nodes,dp,tp,pp,cp,ep,vpp,mbs,sequence_parallel,embedding_as_stage,recompute,recompute_num_layers,"
      "zero_stage,iteration_s,tflops_per_gpu,mfu,samples_per_s,bubble_fraction,peak_reserved_bytes,headroom_bytes,"
      "lower_bound_s,gpu_hours_per_iteration,train_days\n";
  std::size_t rank = 0;
  for (const search_candidate& c : r.candidates) {
    o += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{},{},{:.6g},{:.6g},{:.6g}\n",
                     ++rank, c.num_gpus, c.num_nodes, c.dp, c.tp, c.pp, c.cp, c.ep, c.vpp, c.mbs,
                     c.sequence_parallel ? 1 : 0, c.embedding_as_stage ? 1 : 0, to_string(c.recompute),
                     c.recompute_num_layers, c.zero_stage, c.iteration_s, c.tflops_per_gpu, c.mfu, c.samples_per_s,
                     c.bubble_fraction, whole_bytes(c.peak_reserved_bytes), whole_bytes(c.headroom_bytes),
                     c.lower_bound_s, c.gpu_hours_per_iteration, c.train_days);
  }
  return o;
}

std::string render_shapes_text(const shape_rules& rules, const shapes_result& r) {
  std::string o = fmt::format("Shapes near {:.1f}B parameters (±{:.0f}%, hidden/layers {:.0f}-{:.0f}), each with its fastest layout\n\n",
                              rules.target_params / 1e9, 100 * rules.tolerance, rules.min_ratio, rules.max_ratio);
  o += fmt::format("{:>3} {:>7} {:>6} {:>5} {:>8} {:>6} {:>7} {:>5} {:>3} {:>3} {:>3} {:>4} {:>9} {:>8} {:>6} {:>9}\n", "#",
                   "Hidden", "Layers", "Heads", "Size", "Ratio", "Wave %", "Nodes", "DP", "TP", "PP", "MBS", "Sec/it s",
                   "TFLOPs", "MFU %", "Recompute");
  std::size_t i = 0;
  for (const shape_candidate& s : r.shapes) {
    o += fmt::format("{:>3} {:>7} {:>6} {:>5} {:>7.1f}B {:>6.0f} {:>7.1f}", ++i, s.hidden, s.layers, s.heads,
                     s.params / 1e9, s.ratio, 100 * s.gemm_wave_efficiency);
    if (s.has_layout) {
      const search_candidate& c = s.best;
      o += fmt::format(" {:>5} {:>3} {:>3} {:>3} {:>4} {:>9.2f} {:>8.1f} {:>6.1f} {:>9}\n", c.num_nodes, c.dp, c.tp, c.pp,
                       c.mbs, c.iteration_s, c.tflops_per_gpu, 100 * c.mfu, layout_recompute(c));
    } else {
      o += "   (no layout fits)\n";
    }
  }
  o += fmt::format("\n{} shapes considered, {} searched for a layout, in {:.2f} s. Ranked by tokens/s × parameters "
                   "of the best layout; Wave %: tile × wave quantization of the layer GEMMs at the largest TP.\n",
                   r.considered, r.shapes.size(), r.elapsed_s);
  return o;
}

std::string render_shapes_json(const shape_rules& rules, const shapes_result& r) {
  json j;
  j["schema_version"] = kSchemaVersion;
  json& sj = j["shapes"];
  sj["target_params"] = rules.target_params;
  sj["considered"] = r.considered;
  sj["elapsed_s"] = r.elapsed_s;
  json arr = json::array();
  for (const shape_candidate& s : r.shapes) {
    json e = {{"hidden_size", s.hidden}, {"num_layers", s.layers}, {"num_attention_heads", s.heads},
              {"params", s.params}, {"ratio", s.ratio}, {"gemm_wave_efficiency", s.gemm_wave_efficiency},
              {"param_tokens_per_s", s.param_tokens_per_s}};
    e["best"] = s.has_layout ? candidate_json(s.best) : json(nullptr);
    arr.push_back(std::move(e));
  }
  sj["candidates"] = std::move(arr);
  return j.dump(2) + "\n";
}

std::string render_plan_text(const plan_report& r, std::int64_t num_gpus) {
  std::string o = "Training plan";
  o += r.from_job ? " (iteration times from the time model)\n\n" : " (from the given speed)\n\n";
  if (r.phases.size() > 1 || r.phases.front().iterations > 0) {
    o += fmt::format("{:>6} {:>7} {:>11} {:>14} {:>11} {:>10}\n", "phase", "batch", "iterations", "samples", "s/iter",
                     "hours");
    std::size_t i = 0;
    for (const plan_phase& p : r.phases) {
      ++i;
      if (r.phases.size() > 12 && i > 3 && i + 3 <= r.phases.size()) {
        if (i == 4) o += fmt::format("{:>6}\n", "...");
        continue;
      }
      o += fmt::format("{:>6} {:>7} {:>11} {:>14} {:>11.2f} {:>10.1f}\n", i, p.global_batch_size, p.iterations, p.samples,
                       p.iteration_s, p.time_s / 3600);
    }
    o += "\n";
  }
  o += fmt::format("  iterations           {:>14}\n", r.total_iterations);
  o += fmt::format("  tokens               {:>14.4g}\n", r.total_tokens);
  o += fmt::format("  compute time         {:>14.2f} days  ({:.0f} GPU-hours on {} GPUs)\n", r.train_s / 86400,
                   r.compute_gpu_hours, num_gpus);
  o += fmt::format("  checkpoint           {:>14.3f} TiB  ({:.2f} TB), saved in {:.1f} s\n", r.checkpoint_bytes / std::pow(2.0, 40),
                   r.checkpoint_bytes / 1e12, r.checkpoint_save_s);
  if (r.job_mtbf_s > 0) {
    o += fmt::format("  job MTBF             {:>14.1f} hours\n", r.job_mtbf_s / 3600);
    o += fmt::format("  checkpoint interval  {:>14.0f} s     (Young/Daly sqrt(2·C·MTBF){})\n", r.checkpoint_interval_s,
                     r.checkpoint_interval_iters > 0 ? fmt::format("; every {} iterations", r.checkpoint_interval_iters)
                                                     : std::string());
    o += fmt::format("  checkpoint overhead  {:>14.1f} hours\n", r.checkpoint_overhead_s / 3600);
    o += fmt::format("  expected failures    {:>14.1f}\n", r.expected_failures);
    o += fmt::format("  expected lost work   {:>14.1f} hours\n", r.expected_lost_hours);
  }
  if (r.eval_s > 0) o += fmt::format("  evaluation           {:>14.1f} hours\n", r.eval_s / 3600);
  o += fmt::format("  wall clock           {:>14.2f} days\n", r.train_days);
  o += fmt::format("  GPU-hours            {:>14.0f}\n", r.gpu_hours);
  o += fmt::format("  goodput              {:>13.1f}%\n", 100 * r.goodput);
  if (r.allocation_gpu_hours > 0) {
    o += fmt::format("  allocation           {:>14.0f} GPU-hours: {} ({:.2f}× the plan)\n", r.allocation_gpu_hours,
                     r.allocation_sufficient ? "sufficient" : "NOT sufficient", r.allocation_margin);
  }
  return o;
}

std::string render_plan_json(const plan_report& r) {
  json j;
  j["schema_version"] = kSchemaVersion;
  json& p = j["plan"];
  p["train_days"] = r.train_days;
  p["compute_days"] = r.train_s / 86400;
  p["gpu_hours"] = r.gpu_hours;
  p["compute_gpu_hours"] = r.compute_gpu_hours;
  p["checkpoint_bytes"] = r.checkpoint_bytes;
  p["checkpoint_save_s"] = r.checkpoint_save_s;
  p["checkpoint_interval_s"] = r.checkpoint_interval_s;
  p["checkpoint_interval_iterations"] = r.checkpoint_interval_iters;
  p["checkpoint_overhead_s"] = r.checkpoint_overhead_s;
  p["job_mtbf_s"] = r.job_mtbf_s;
  p["expected_failures"] = r.expected_failures;
  p["expected_lost_hours"] = r.expected_lost_hours;
  p["eval_s"] = r.eval_s;
  p["goodput"] = r.goodput;
  p["total_iterations"] = r.total_iterations;
  p["total_tokens"] = r.total_tokens;
  p["tflops_per_gpu"] = r.tflops_per_gpu;
  p["allocation_gpu_hours"] = r.allocation_gpu_hours;
  p["allocation_sufficient"] = r.allocation_sufficient;
  json phases = json::array();
  for (const plan_phase& ph : r.phases) {
    phases.push_back({{"global_batch_size", ph.global_batch_size}, {"iterations", ph.iterations}, {"samples", ph.samples},
                      {"iteration_s", ph.iteration_s}, {"time_s", ph.time_s}});
  }
  p["phases"] = std::move(phases);
  return j.dump(2) + "\n";
}

}  // namespace trainplan
