// The pipeline split and what one GPU of each stage holds (docs/formulas.md §2.2, §2.4).
#include "trainplan/core/job/layout.h"

#include <algorithm>
#include <optional>

#include "trainplan/core/base/checked.h"

namespace trainplan {

namespace {

/// One layer on one GPU (§2.4).
layer_shard shard_layer(const model_spec& m, const layer_parameters& l, std::int64_t tp, std::int64_t ep,
                        std::int64_t etp, bool moe_layer) {
  layer_shard s;
  // Split by TP: column- and row-parallel weights, column biases, per-head sinks. Whole on every TP
  // rank: norms, row-parallel biases, MLA's duplicated down-projections, the router and gates.
  // A Mamba-2 block (§1.10): every mixer tensor split by TP but out_proj's bias.
  const std::int64_t mamba_out_bias = l.mamba_out_proj > 0 && m.add_bias_linear ? m.hidden_size : 0;
  s.dense = detail::size_div(l.qkv_weight + l.qkv_bias + l.sinks + l.proj_weight + l.fc1_weight + l.fc1_bias +
                                 l.fc2_weight + l.mamba() - mamba_out_bias,
                             tp) +
            l.norms() + l.attention_norms + l.qkv_down_weight + l.proj_bias + l.fc2_bias + l.router +
            l.shared_expert_gate + mamba_out_bias;
  if (moe_layer) {
    const std::int64_t gate = is_gated(m.activation) ? 2 : 1;
    const std::int64_t fe = m.moe.expert_ffn_hidden_size;
    const std::int64_t h = m.hidden_size;
    const std::int64_t split = h * fe * gate + (m.add_bias_linear ? fe * gate : 0) + fe * h;
    const std::int64_t replicated = m.add_bias_linear ? h : 0;  // the row-parallel fc2 bias
    s.expert = detail::size_div(m.moe.num_experts, ep) * (detail::size_div(split, etp) + replicated);
  }
  return s;
}

}  // namespace

zero3_reuse zero3_recompute_reuse(const job_spec& job) {
  const training_config& t = job.training;
  zero3_reuse r;
  if (t.framework != framework_kind::deepspeed || t.zero_stage != 3) return r;
  // Without full recomputation a layer's modules are not used twice within the layer: all count as kept.
  const bool recomputed = t.recompute == recompute_granularity::full;
  const model_spec& md = job.model;
  const double h = static_cast<double>(md.hidden_size);
  const double f = static_cast<double>(md.ffn_hidden_size) * (is_gated(md.activation) ? 2.0 : 1.0);
  const double tp = static_cast<double>(job.parallel.tp);
  // Forward order: QKV, projection, fc1, fc2.
  const std::array<double, 4> n = {h * static_cast<double>(md.q_width() + md.k_width() + md.v_width()) / tp,
                                   h * static_cast<double>(md.attention_out_width()) / tp, h * f / tp,
                                   h * static_cast<double>(md.ffn_hidden_size) / tp};
  const double reuse = t.zero3_max_reuse_elements >= 0 ? static_cast<double>(t.zero3_max_reuse_elements) : 1e9;
  double after = 0;
  for (std::size_t j = n.size(); j-- > 0;) {
    if (recomputed && 2 * after >= reuse) {
      r.released_elements += n[j];
      r.largest_released_elements = std::max(r.largest_released_elements, n[j]);
    } else {
      r.kept_elements += n[j];
    }
    r.largest_matrix_elements = std::max(r.largest_matrix_elements, n[j]);
    after += n[j];
  }
  return r;
}

rank_holdings holdings_of(const job_spec& job, const parameter_breakdown& params) {
  const model_spec& m = job.model;
  const parallel_config& p = job.parallel;
  rank_holdings h;
  const std::int64_t etp = p.etp > 0 ? p.etp : p.tp;
  h.dense_layer = shard_layer(m, params.dense_layer, p.tp, p.ep, etp, false);
  if (m.is_moe()) h.moe_layer = shard_layer(m, params.moe_layer, p.tp, p.ep, etp, true);
  h.mamba_layer = shard_layer(m, params.mamba_layer, p.tp, p.ep, etp, false);
  h.attention_layer = shard_layer(m, params.attention_layer, p.tp, p.ep, etp, false);
  const std::int64_t word = detail::size_div(params.word_embeddings, p.tp);
  h.embedding = word + params.position_embeddings + params.embedding_norm;
  h.output = params.final_norm + detail::size_div(params.output_layer, p.tp);
  if (m.tie_embeddings && p.pp > 1) {
    h.output += traits_of(job.training.framework).tied_embedding_module ? h.embedding : word;
  }
  if (params.num_mtp_layers > 0) {
    // §1.8: a layer like the last one, the column-parallel 2h → h projection and three norms.
    const bool moe = m.is_moe_layer(m.num_layers - 1);
    const layer_shard layer = moe ? h.moe_layer : h.dense_layer;
    const std::int64_t own = 3 * (params.final_norm > 0 ? params.final_norm : m.hidden_size) +
                             detail::size_div(2 * m.hidden_size * m.hidden_size, p.tp);
    h.mtp = {params.num_mtp_layers * (layer.dense + own), params.num_mtp_layers * layer.expert};
  }
  return h;
}

namespace {

/// §2.2.1: each rank's layers from a custom layout's stages (stage i on rank i mod PP): the first's, the
/// last's, the most of the middle ones'. Valid once the stages divide over PP; the layout's own rules
/// (custom_layout_violation) hold the rest. A rank may hold no transformer layer.
stage_split split_of_layout(const parallel_config& p) {
  stage_split s;
  const auto n = static_cast<std::int64_t>(p.layout_stages.size());
  if (p.pp < 1 || n % p.pp != 0) {
    s.failure = split_failure::chunks_uneven;
    return s;
  }
  std::vector<std::int64_t> per_rank(static_cast<std::size_t>(p.pp), 0);
  for (std::int64_t i = 0; i < n; ++i) per_rank[static_cast<std::size_t>(i % p.pp)] += p.layout_stages[static_cast<std::size_t>(i)].decoder;
  s.first = per_rank.front();
  s.last = per_rank.back();
  for (std::int64_t r = 1; r + 1 < p.pp; ++r) s.middle = std::max(s.middle, per_rank[static_cast<std::size_t>(r)]);
  s.middle_stages = std::max<std::int64_t>(0, p.pp - 2);
  s.valid = true;
  return s;
}

}  // namespace

stage_split split_layers(std::int64_t num_layers, const parallel_config& p, framework_kind fw,
                         std::int64_t layers_per_chunk) {
  if (!p.layout_stages.empty()) return split_of_layout(p);
  stage_split s;
  const std::int64_t pp = p.pp;
  auto fail = [&](split_failure why) {
    s.failure = why;
    return s;
  };
  if (pp < 1 || num_layers < 1) return fail(split_failure::stage_without_layer);
  if (p.first_stage_layers >= 0 || p.last_stage_layers >= 0) {
    const std::int64_t first_n = std::max<std::int64_t>(0, p.first_stage_layers);
    const std::int64_t last_n = std::max<std::int64_t>(0, p.last_stage_layers);
    s.middle_stages = pp - (p.first_stage_layers >= 0) - (p.last_stage_layers >= 0);
    const std::int64_t rest = num_layers - first_n - last_n;
    if (pp < 2) return fail(split_failure::ends_need_pp);
    if (rest < 0 || (s.middle_stages == 0 && rest != 0) || (s.middle_stages > 0 && rest % s.middle_stages != 0)) {
      return fail(split_failure::rest_uneven);
    }
    s.middle = s.middle_stages > 0 ? rest / s.middle_stages : 0;
    s.first = p.first_stage_layers >= 0 ? first_n : s.middle;
    s.last = p.last_stage_layers >= 0 ? last_n : s.middle;
    // Interleaved with uneven ends (Megatron-Core transformer_config.py): every rank's layers split
    // evenly over its model chunks.
    if (p.vpp > 1) {
      const bool first_bad = p.first_stage_layers >= 0 && s.first % p.vpp != 0;
      const bool last_bad = p.last_stage_layers >= 0 && s.last % p.vpp != 0;
      const bool middle_bad = s.middle_stages > 0 && s.middle % p.vpp != 0;
      if (first_bad || last_bad || middle_bad) {
        s.failed_end = first_bad ? 0 : last_bad ? 2 : 1;
        return fail(split_failure::end_not_in_chunks);
      }
    }
  } else if (p.vpp > 1 && (p.account_embedding_in_split || p.account_loss_in_split)) {
    // Megatron-Core's account-for-embedding (loss) with interleaving (transformer_block.py
    // get_num_layers_to_build): (L + 1 [+ 1]) / PP per rank, divisible by the chunks; the first rank's
    // first chunk (the last rank's last) builds one layer fewer.
    const std::int64_t head = p.account_embedding_in_split ? 1 : 0, tail = p.account_loss_in_split ? 1 : 0;
    const std::int64_t items = num_layers + head + tail;
    if (pp < 2 || items % pp != 0 || (items / pp) % p.vpp != 0) return fail(split_failure::chunks_uneven);
    s.middle = items / pp;
    s.first = s.middle - head;
    s.last = s.middle - tail;
  } else if (p.vpp > 1) {
    if (layers_per_chunk == 0) {
      if (pp < 2 || num_layers % pp != 0 || (num_layers / pp) % p.vpp != 0) return fail(split_failure::chunks_uneven);
      layers_per_chunk = num_layers / pp / p.vpp;
    }
    s.first = s.middle = s.last = layers_per_chunk * p.vpp;
  } else {
    // BLOOM's embedding-as-stage: each embedding takes one layer slot of the end ranks; Megatron-Core's
    // account-for-embedding (loss): the embedding (loss) takes one of the first (last) rank's.
    const std::int64_t head = p.embedding_as_stage || p.account_embedding_in_split ? 1 : 0;
    const std::int64_t tail = p.embedding_as_stage || p.account_loss_in_split ? 1 : 0;
    const std::int64_t items = num_layers + head + tail;
    if (traits_of(fw).uneven_pipeline_split) {
      // partition_uniform: ceil-sized chunks, the last rank takes what is left (deepspeed_items).
      s.middle = detail::ceil_div(items, pp);
      if (items - s.middle * (pp - 1) < 1) return fail(split_failure::stage_without_layer);  // a rank left without items
      s.last = items - s.middle * (pp - 1) - tail;
    } else {
      if (items % pp != 0) return fail(split_failure::layers_not_divisible);
      s.middle = items / pp;
      s.last = s.middle - tail;
    }
    s.first = s.middle - head - (pp == 1 ? tail : 0);
    if (pp == 1) s.last = s.first;
  }
  s.valid = s.first >= 1 && s.last >= 1 && (pp <= 2 || s.middle >= 1);
  if (!s.valid) s.failure = split_failure::stage_without_layer;
  return s;
}

std::int64_t deepspeed_items(std::int64_t items, std::int64_t parts, std::int64_t rank) {
  const std::int64_t chunk = detail::ceil_div(items, parts);
  const std::int64_t begin = std::min(chunk * rank, items);
  const std::int64_t end = std::min(chunk * (rank + 1), items);
  return end - begin;
}

std::vector<stage_layout> pipeline_layout(const job_spec& job) {
  std::vector<stage_layout> stages;
  pipeline_layout(job, stages);
  return stages;
}

namespace {

/// Counts the layers [first, first + n) by kind into `kinds` (one kind for every layer: no walk).
void count_kinds(const model_spec& m, const std::optional<layer_kind>& uniform, std::int64_t first, std::int64_t n,
                 layer_counts& kinds) {
  if (uniform) {
    kinds[static_cast<std::size_t>(*uniform)] += std::max<std::int64_t>(0, n);
    return;
  }
  const layer_counts counted = m.count_layer_kinds(first, n);
  for (std::size_t k = 0; k < counted.size(); ++k) kinds[k] += counted[k];
}

/// Whether the layers go model chunk by model chunk: interleaving, or a custom layout (§2.2, §2.2.1).
bool chunked(const parallel_config& p) { return p.vpp > 1 || !p.layout_stages.empty(); }

/// Calls visit(chunk, rank, first layer, layers) for every model chunk in model order: chunk 0 of every
/// rank, then chunk 1, … (Megatron-Core get_transformer_layer_offset; with an even split chunk c of rank r
/// starts at (c·p + r)·k). A custom layout's stage c·p + r is that chunk (§2.2.1). Otherwise rank r's chunks
/// hold its layers / v each, but for the embedding's (loss's) slot in the first rank's first (the last
/// rank's last) chunk with --account-for-embedding (loss) -in-pipeline-split.
template <typename Visit>
void walk_chunks(const job_spec& job, Visit&& visit) {
  const parallel_config& p = job.parallel;
  const stage_split& split = job.resolved.split;
  const std::int64_t v = p.layout_stages.empty() ? p.vpp : static_cast<std::int64_t>(p.layout_stages.size()) / p.pp;
  const bool head = p.account_embedding_in_split, tail = p.account_loss_in_split;
  std::int64_t next = 0;
  for (std::int64_t c = 0; c < v; ++c) {
    for (std::int64_t r = 0; r < p.pp; ++r) {
      std::int64_t n = 0;
      if (!p.layout_stages.empty()) {
        n = p.layout_stages[static_cast<std::size_t>(c * p.pp + r)].decoder;
      } else {
        const bool first_chunk = head && r == 0 && c == 0, last_chunk = tail && r == p.pp - 1 && c == v - 1;
        n = (split.of(r, p.pp) + (r == 0 ? head : 0) + (r == p.pp - 1 ? tail : 0)) / v - (first_chunk ? 1 : 0) -
            (last_chunk ? 1 : 0);
      }
      visit(c, r, next, n);
      next += n;
    }
  }
}

}  // namespace

void pipeline_layout(const job_spec& job, std::vector<stage_layout>& stages) {
  const model_spec& m = job.model;
  const parallel_config& p = job.parallel;
  stages.assign(static_cast<std::size_t>(p.pp), stage_layout{});
  const std::optional<layer_kind> uniform = uniform_kind(m);
  TRAINPLAN_CHECK(job.resolved.split.valid);  // finalize_job refused every invalid split and resolved the valid one
  for (std::int64_t r = 0; r < p.pp; ++r) stages[static_cast<std::size_t>(r)].stage = r;
  if (chunked(p)) {
    walk_chunks(job, [&](std::int64_t c, std::int64_t r, std::int64_t first, std::int64_t n) {
      stage_layout& s = stages[static_cast<std::size_t>(r)];
      if (c == 0) s.first_layer = first;
      s.num_layers += n;
      count_kinds(m, uniform, first, n, s.kinds);
    });
  } else {
    std::int64_t next = 0;
    for (stage_layout& s : stages) {
      s.num_layers = job.resolved.split.of(s.stage, p.pp);
      s.first_layer = next;
      count_kinds(m, uniform, next, s.num_layers, s.kinds);
      next += s.num_layers;
    }
  }
  // The embedding on the first rank, the output and loss (with any MTP layer) on the last; a custom
  // layout that puts them elsewhere is refused (custom_layout_violation).
  stages.front().has_embedding = true;
  stages.back().has_output = true;
}

void pipeline_chunks(const job_spec& job, std::vector<chunk_layout>& chunks) {
  const model_spec& m = job.model;
  const std::optional<layer_kind> uniform = uniform_kind(m);
  chunks.clear();
  TRAINPLAN_CHECK(job.resolved.split.valid);
  walk_chunks(job, [&](std::int64_t c, std::int64_t r, std::int64_t first, std::int64_t n) {
    chunk_layout& ch = chunks.emplace_back();
    ch.stage = r;
    ch.chunk = c;
    ch.first_layer = first;
    ch.num_layers = n;
    count_kinds(m, uniform, first, n, ch.kinds);
  });
  chunks.front().has_embedding = true;
  chunks.back().has_output = true;
}

}  // namespace trainplan
