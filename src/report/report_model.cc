// The model catalog and one model's parameter tree (docs/formulas.md §1) in text and JSON, the run
// context's parallel block, and the number formats. They format; they never compute.
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

namespace {

std::string shape(std::initializer_list<std::int64_t> dims) { return fmt::format("[{}]", fmt::join(dims, ",")); }

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
                {"layer_freq", m.moe.layer_freq},
                {"first_dense_layers", m.moe.first_dense_layers},
                {"num_moe_layers", m.num_moe_layers()},
                {"shared_expert_gate", m.moe.shared_expert_gate},
                {"router_bias", m.moe.router_bias},
                {"expert_score_bias", m.moe.expert_score_bias},
                {"router_num_groups", m.moe.router_num_groups},
                {"router_group_topk", m.moe.router_group_topk},
                {"capacity_factor", m.moe.capacity_factor},
                {"load_imbalance", m.moe.load_imbalance}};
  }
  if (m.is_mla()) {
    j["mla"] = {{"q_lora_rank", m.mla.q_lora_rank},
                {"kv_lora_rank", m.mla.kv_lora_rank},
                {"qk_head_dim", m.mla.qk_head_dim},
                {"qk_pos_emb_head_dim", m.mla.qk_pos_emb_head_dim},
                {"v_head_dim", m.mla.v_head_dim}};
  }
  j["qk_norm"] = m.qk_norm;
  j["sandwich_norm"] = m.sandwich_norm;
  j["attention_sinks"] = m.attention_sinks;
  j["glu_clamp_limit"] = m.glu_clamp_limit;
  if (m.rope_yarn_factor > 0) j["rope_yarn_factor"] = m.rope_yarn_factor;
  j["mtp_num_layers"] = m.mtp_num_layers;
  if (m.is_hybrid()) {
    const mamba_spec& x = m.mamba;
    j["hybrid_pattern"] = m.hybrid_pattern;
    j["mamba"] = {{"state_dim", x.state_dim},   {"head_dim", x.head_dim},       {"num_heads", x.num_heads},
                  {"num_groups", x.num_groups}, {"conv_kernel", x.conv_kernel}, {"chunk_size", x.chunk_size}};
  }
  if (m.sliding_window > 0) {
    std::int64_t windowed = 0;
    for (std::int64_t i = 0; i < m.num_layers; ++i) windowed += m.is_window_layer(i);
    j["window"] = {{"size", m.sliding_window},
                   {"kind", std::string(to_string(m.window))},
                   {"skip_freq", m.window_skip_freq},
                   {"num_windowed_layers", windowed}};
  }
  return j;
}

/// Which layers attend through a window, and how, in one line ("" without windows).
std::string attention_summary(const model_spec& m) {
  if (m.sliding_window <= 0) return "";
  std::int64_t windowed = 0;
  for (std::int64_t i = 0; i < m.num_layers; ++i) windowed += m.is_window_layer(i);
  if (windowed == 0) {
    return fmt::format("Attention: {} window of {} not shorter than the sequence {}: every layer attends fully\n",
                       to_string(m.window), m.sliding_window, m.seq_length);
  }
  return fmt::format("Attention: {} of {} layers through a {} window of {} tokens, the rest fully\n", windowed,
                     m.num_layers, to_string(m.window), m.sliding_window);
}

json layer_json(const layer_parameters& l) {
  json j = {{"input_norm", l.input_norm},   {"qkv_weight", l.qkv_weight},
          {"qkv_bias", l.qkv_bias},       {"proj_weight", l.proj_weight},
          {"proj_bias", l.proj_bias},     {"post_attention_norm", l.post_attention_norm},
          {"fc1_weight", l.fc1_weight},   {"fc1_bias", l.fc1_bias},
          {"fc2_weight", l.fc2_weight},   {"fc2_bias", l.fc2_bias},
          {"router", l.router},           {"experts", l.experts},
          {"qkv_down_weight", l.qkv_down_weight}, {"attention_norms", l.attention_norms},
          {"sinks", l.sinks},             {"sandwich_norms", l.sandwich_norms},
          {"shared_expert_gate", l.shared_expert_gate}, {"expert_each", l.expert_each},
          {"total", l.total()}};
  if (l.mamba() > 0) {
    j["mamba"] = {{"in_proj", l.mamba_in_proj}, {"conv", l.mamba_conv}, {"ssm", l.mamba_ssm},
                  {"norm", l.mamba_norm},       {"out_proj", l.mamba_out_proj}};
  }
  return j;
}

}  // namespace

std::string model_label(const job_spec& job) {
  const model_spec& m = job.model;
  if (m.name != "custom") return m.name;
  return fmt::format("custom model: {} layers, hidden {}, {} heads", m.num_layers, m.hidden_size, m.num_attention_heads);
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

std::string text_reporter::models() const {
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

std::string json_reporter::models() const {
  json j;
  j["schema_version"] = kSchemaVersion;
  j["context"] = context_json();
  j["models"] = json::array();
  for (const auto& c : model_catalog()) {
    json m = model_fields(c.spec);
    m["family"] = c.family;
    m["parameters"] = count_parameters(c.spec, 1).total;
    m["source"] = c.source;
    j["models"].push_back(m);
  }
  return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

std::string text_reporter::model(const model_spec& m, const parameter_breakdown& p, std::int64_t tp) const {
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
    if (l.mamba() > 0) {
      const mamba_spec& x = m.mamba;
      const std::int64_t in_width = 2 * x.d_inner() + 2 * x.num_groups * x.state_dim + x.num_heads;
      line("  mamba.in_proj (z, x, B, C, dt)", shape({in_width, h}), l.mamba_in_proj);
      line("  mamba.conv1d +b", shape({x.conv_width(), x.conv_kernel}), l.mamba_conv);
      line("  mamba.dt_bias, A_log, D", shape({3, x.num_heads}), l.mamba_ssm);
      line("  mamba.norm (gated)", shape({l.mamba_norm}), l.mamba_norm);
      line("  mamba.out_proj", shape({h, x.d_inner()}), l.mamba_out_proj);
    }
    if (l.attention() == 0) {
      // a hybrid model's Mamba, MLP or MoE block: no attention
    } else if (m.is_mla()) {
      const mla_spec& a = m.mla;
      const std::int64_t heads = m.num_attention_heads;
      if (a.q_lora_rank > 0) {
        line("  attention.q_down (whole on every TP rank)", shape({a.q_lora_rank, h}), h * a.q_lora_rank);
        line("  attention.q_up", shape({m.q_width(), a.q_lora_rank}), a.q_lora_rank * m.q_width());
      } else {
        line("  attention.q_proj", shape({m.q_width(), h}), h * m.q_width());
      }
      line("  attention.kv_down (whole on every TP rank)", shape({a.kv_lora_rank + a.qk_pos_emb_head_dim, h}),
           h * (a.kv_lora_rank + a.qk_pos_emb_head_dim));
      line("  attention.kv_up", shape({heads * (a.qk_head_dim + a.v_head_dim), a.kv_lora_rank}),
           a.kv_lora_rank * heads * (a.qk_head_dim + a.v_head_dim));
      line("  attention.latent_norms", shape({l.attention_norms}), l.attention_norms);
    } else {
      line("  attention.qkv", shape({m.q_width() + m.k_width() + m.v_width(), h}) + (l.qkv_bias ? " +b" : ""),
           l.qkv_weight + l.qkv_bias);
      if (l.attention_norms > 0) line("  attention.qk_norm", shape({l.attention_norms}), l.attention_norms);
    }
    if (l.sinks > 0) line("  attention.sinks", shape({l.sinks}), l.sinks);
    if (l.attention() > 0) {
      line("  attention.proj", shape({h, m.attention_out_width()}) + (l.proj_bias ? " +b" : ""), l.proj_weight + l.proj_bias);
    }
    if (l.post_attention_norm > 0) line("  post_attention_norm", shape({l.post_attention_norm}), l.post_attention_norm);
    if (l.sandwich_norms > 0) line("  output_norms (attention, MLP)", shape({2, h}), l.sandwich_norms);
    const char* fc = l.router > 0 ? "  mlp.shared_experts" : "  mlp";
    if (l.fc1_weight > 0) {
      line(fmt::format("{}.fc1", fc), shape({gate * ffn, h}) + (l.fc1_bias ? " +b" : ""), l.fc1_weight + l.fc1_bias);
      line(fmt::format("{}.fc2", fc), shape({h, ffn}) + (l.fc2_bias ? " +b" : ""), l.fc2_weight + l.fc2_bias);
    }
    if (l.shared_expert_gate > 0) line("  mlp.shared_expert_gate", shape({1, h}), l.shared_expert_gate);
    if (l.router > 0) {
      line(fmt::format("  mlp.router{}{}", m.moe.router_bias ? " +b" : "", m.moe.expert_score_bias ? " +score bias" : ""),
           shape({m.moe.num_experts, h}), l.router);
      line(fmt::format("  mlp.experts × {}", m.moe.num_experts),
           shape({gate * m.moe.expert_ffn_hidden_size, h}) + "+" + shape({h, m.moe.expert_ffn_hidden_size}), l.experts);
    }
  };
  // A hybrid model's blocks (§1.10), each kind once with its count.
  if (p.num_mamba_layers > 0) layer_lines("layers (Mamba-2)", p.mamba_layer, p.num_mamba_layers, 0);
  if (p.num_attention_layers > 0) layer_lines("layers (attention)", p.attention_layer, p.num_attention_layers, 0);
  if (p.num_dense_layers > 0) {
    layer_lines(m.is_hybrid() ? "layers (MLP)" : "layers (dense)", p.dense_layer, p.num_dense_layers, m.ffn_hidden_size);
  }
  if (p.num_moe_layers > 0) layer_lines("layers (MoE)", p.moe_layer, p.num_moe_layers, m.moe.shared_expert_ffn_hidden_size);
  if (p.final_norm > 0) line("final_norm", shape({p.final_norm}), p.final_norm);
  if (p.num_mtp_layers > 0) {
    line(fmt::format("mtp × {} (shares embedding, output)", p.num_mtp_layers),
         shape({h, 2 * h}), p.mtp());
  }
  if (p.output_layer > 0) line("output_layer", shape({p.padded_vocab_size, h}), p.output_layer);
  else out += fmt::format(fmt::runtime(row), "output_layer", "tied to word_embeddings", "0", "0.000");
  out += "\n";
  out += fmt::format("Total parameters: {}\n", format_count(p.total));
  if (p.num_mtp_layers > 0) out += fmt::format("Without MTP: {}\n", format_count(p.main_model()));
  if (m.is_moe()) {
    out += fmt::format("Active per token: {} ({} without the input embedding)\n", format_count(p.active_per_token),
                       format_count(p.active_per_token - p.word_embeddings - p.position_embeddings));
  }
  out += attention_summary(m);
  if (m.is_hybrid()) {
    out += fmt::format("Hybrid: {} Mamba-2, {} attention, {} MLP, {} MoE layers ({}); Mamba-2 {} heads × {}, state {}, "
                       "{} groups\n",
                       p.num_mamba_layers, p.num_attention_layers, p.num_dense_layers, p.num_moe_layers,
                       m.hybrid_pattern.size() <= 60 ? m.hybrid_pattern : m.hybrid_pattern.substr(0, 57) + "...",
                       m.mamba.num_heads, m.mamba.head_dim, m.mamba.state_dim, m.mamba.num_groups);
  }
  return out;
}

std::string json_reporter::model(const model_spec& m, const parameter_breakdown& p, std::int64_t tp) const {
  json j;
  j["schema_version"] = kSchemaVersion;
  j["context"] = context_json();
  json mj = model_fields(m);
  mj["parameters"] = p.total;
  mj["active_parameters_per_token"] = p.active_per_token;
  mj["mtp_parameters"] = p.mtp();
  mj["padded_vocab_size"] = p.padded_vocab_size;
  mj["tensor_parallel_for_padding"] = tp;
  mj["breakdown"] = {{"word_embeddings", p.word_embeddings},
                     {"position_embeddings", p.position_embeddings},
                     {"embedding_norm", p.embedding_norm},
                     {"dense_layer", layer_json(p.dense_layer)},
                     {"num_dense_layers", p.num_dense_layers},
                     {"moe_layer", layer_json(p.moe_layer)},
                     {"num_moe_layers", p.num_moe_layers},
                     {"mamba_layer", layer_json(p.mamba_layer)},
                     {"num_mamba_layers", p.num_mamba_layers},
                     {"attention_layer", layer_json(p.attention_layer)},
                     {"num_attention_layers", p.num_attention_layers},
                     {"final_norm", p.final_norm},
                     {"output_layer", p.output_layer}};
  j["model"] = mj;
  return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

namespace detail {

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
          {"dp_replicas", t.dp_replicas},
          {"sequence_parallel", p.sequence_parallel},
          {"embedding_as_stage", p.embedding_as_stage},
          {"precision", to_string(t.precision)},
          {"fp8_format", to_string(t.fp8)},
          {"fp8_recipe", to_string(t.fp8_scaling)},
          {"fp8_param_gather", t.fp8_param_gather},
          {"overlap_grad_reduce", t.overlap_grad_reduce},
          {"overlap_param_gather", t.overlap_param_gather},
          {"tp_comm_overlap", t.tp_comm_overlap},
          {"recompute", to_string(t.recompute)},
          {"recompute_modules", t.recompute == recompute_granularity::selective
                                    ? recompute_module_names(t.recompute_modules)
                                    : std::vector<std::string_view>{}},
          {"recompute_method", to_string(t.recompute_method_)},
          {"recompute_num_layers", t.recompute_num_layers},
          {"flash_attention", t.flash_attention},
          // §5.2: "te-auto" is Transformer Engine's own choice (cuDNN's on Hopper and Blackwell, FlashAttention-2
          // on Ampere), priced at the GPU's fused-attention rates.
          {"attention_kernel", !t.flash_attention ? "unfused"
                               : t.fa2_attention ? "flash-attention-2"
                               : t.attention == training_config::attention_backend::cudnn ? "cudnn"
                                                                                          : "te-auto"},
          {"optimizer", to_string(t.optimizer)},
          {"offload_optimizer", t.offload_optimizer}};
}

}  // namespace detail

}  // namespace trainplan
