// Architecture shapes near a target size, each with its fastest layout (docs/formulas.md §7.4).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>

#include <fmt/format.h>

#include "trainplan/core/estimate/compute.h"
#include "trainplan/core/base/error.h"
#include "trainplan/core/model/model.h"
#include "trainplan/core/search/search.h"

namespace trainplan {

using clock_type = std::chrono::steady_clock;

// ---- shapes (§7.4) -----------------------------------------------------------------------------------

namespace {

/// The largest target `shapes` takes (§7.9): a thousand trillion parameters.
constexpr double kMaxShapeParams = 1e15;

/// The layer's GEMM efficiency at TP as the time model prices it (§5.2, estimate_gemm over
/// layer_gemm_shapes): FLOPs over the FLOPs-at-peak time of its forward GEMMs.
double layer_gemm_efficiency(const job_spec& base, const model_spec& m, std::int64_t tp) {
  job_spec j = base;
  j.model = m;
  j.parallel = parallel_config{};
  j.parallel.tp = tp;
  resolve_job(j);  // the tokens and roles its GEMMs read
  const compute_efficiency e = effective_compute_efficiency(base.cluster.gpu);
  j.training.flash_attention = true;  // the attention core's batched GEMMs are not the shape's tiles
  double flops = 0;
  double peak_s = 0;
  for (const named_gemm& g : layer_gemm_shapes(j, m.is_moe())) {
    if (g.name == "logits") continue;  // once per model, not per layer
    const gemm_estimate est = estimate_gemm(base.cluster.gpu, e, base.training.precision, g.shape);
    flops += est.flops;
    peak_s += est.flops / est.efficiency;
  }
  return peak_s > 0 ? flops / peak_s : 0.0;
}

/// The period N of a per-layer 0/1 pattern that Megatron's "every N-th layer" rule writes (`on_last`:
/// the N-th of each group is the odd one out, else the first), or 0 when it has none.
std::int64_t period_of(const std::vector<std::uint8_t>& pattern, bool first_is_one) {
  const auto n = static_cast<std::int64_t>(pattern.size());
  for (std::int64_t period = 1; period <= n; ++period) {
    bool fits = true;
    for (std::int64_t i = 0; i < n && fits; ++i) {
      const bool one = first_is_one ? i % period == 0 : (i + 1) % period != 0;
      fits = (pattern[static_cast<std::size_t>(i)] != 0) == one;
    }
    if (fits) return period;
  }
  return 0;
}

/// `base` with hidden size `h`, `heads` heads and `layers` layers, into `out`: the widths Megatron
/// derives from h follow it (FFN, head dim; MHA, or MLA's one group per head), the expert widths and MLA
/// ranks stay, per-layer patterns keep their rule (leading dense layers, every N-th). False when the
/// base's pattern has no such rule or the result breaks a model rule (the shape is skipped).
bool resized(const model_spec& base, std::int64_t h, std::int64_t heads, std::int64_t layers, model_spec& out) {
  model_spec m = base;
  m.hidden_size = h;
  m.num_attention_heads = heads;
  m.num_layers = layers;
  // The family's proportions: FFN width over h (to a multiple of 128) and heads per key/value group.
  const double ffn_ratio = static_cast<double>(base.ffn_hidden_size) / static_cast<double>(base.hidden_size);
  m.ffn_hidden_size = std::max<std::int64_t>(128, std::llround(static_cast<double>(h) * ffn_ratio / 128) * 128);
  const std::int64_t per_group = base.num_attention_heads / base.num_query_groups;
  m.num_query_groups = base.is_mla() || heads % per_group != 0 ? 0 : heads / per_group;
  m.kv_channels = 0;
  if (!m.moe.layer_pattern.empty()) {
    // Leading dense layers, then every layer MoE (DeepSeek's first_k_dense_replace as a pattern).
    const auto& p = m.moe.layer_pattern;
    const auto lead = static_cast<std::int64_t>(std::find(p.begin(), p.end(), std::uint8_t{1}) - p.begin());
    if (std::any_of(p.begin() + lead, p.end(), [](std::uint8_t v) { return v == 0; })) return false;
    m.moe.layer_pattern.clear();
    m.moe.first_dense_layers = lead;
    m.moe.layer_freq = 1;
  }
  m.moe.first_dense_layers = std::min(m.moe.first_dense_layers, layers);
  if (!m.window_pattern.empty()) {
    m.window_skip_freq = period_of(m.window_pattern, false);
    if (m.window_skip_freq == 0 && std::any_of(m.window_pattern.begin(), m.window_pattern.end(),
                                               [](std::uint8_t v) { return v == 0; })) {
      return false;
    }
    m.window_pattern.clear();
  }
  if (base.is_hybrid()) {
    // §1.10: the hybrid's mix of blocks, its pattern stretched to the new depth (layer i takes the
    // base's layer ⌊i·L_base/L⌋); the Mamba-2 width follows h as Megatron derives it (2h / head dim).
    const auto n = static_cast<std::int64_t>(base.hybrid_pattern.size());
    m.hybrid_pattern.resize(static_cast<std::size_t>(layers));
    for (std::int64_t i = 0; i < layers; ++i) {
      m.hybrid_pattern[static_cast<std::size_t>(i)] = base.hybrid_pattern[static_cast<std::size_t>(i * n / layers)];
    }
    m.mamba.num_heads = 0;
  }
  try {
    finalize_model(m);
  } catch (const input_error&) {
    return false;
  }
  out = std::move(m);
  return true;
}

/// Every (hidden, layers, heads) the rules allow near the target (§7.4), with its GEMM efficiency;
/// `considered` counts what was looked at.
std::vector<shape_candidate> enumerate_shapes(const job_spec& base, const shape_rules& rules, std::int64_t tpm,
                                              std::int64_t& considered) {
  const std::int64_t mult = rules.hidden_multiple;
  std::vector<shape_candidate> shapes;
  // hidden from ratio band: params ≈ c·h²·L with L = h/ratio → h ≈ (P·ratio/c)^(1/3); c = 12 for a
  // GPT layer, the base model's own per-layer parameters over h² otherwise (MoE layers hold many more).
  const parameter_breakdown base_count = count_parameters(base.model, 1);
  const double base_h = static_cast<double>(base.model.hidden_size);
  const double c = std::max(12.0, static_cast<double>(base_count.layers()) /
                                      static_cast<double>(base.model.num_layers) / (base_h * base_h));
  const double h_lo = std::cbrt(rules.target_params * rules.min_ratio / c) * 0.8;
  // Hidden sizes beyond a model's limit (§1.5) are no shape: the loop ends there.
  const double h_hi = std::min(std::cbrt(rules.target_params * rules.max_ratio / c) * 1.2, static_cast<double>(1 << 22));
  for (std::int64_t h = static_cast<std::int64_t>(h_lo / mult) * mult; h <= h_hi; h += mult) {
    if (h <= 0 || h % tpm != 0) continue;
    for (std::int64_t hd : rules.head_dims) {
      if (h % hd != 0 || (h / hd) % tpm != 0) continue;
      model_spec m;
      if (!resized(base.model, h, h / hd, base.model.num_layers, m)) continue;
      // Parameters grow with the layers as the base model's mix of dense, MoE and windowed layers
      // does; each candidate is then counted exactly (§7.4).
      const parameter_breakdown at_base = count_parameters(m, 1);
      const double per_layer = static_cast<double>(at_base.layers()) /
                               static_cast<double>(m.num_layers);
      const double fixed = static_cast<double>(at_base.total) - static_cast<double>(at_base.layers());
      const auto around = static_cast<std::int64_t>((rules.target_params - fixed) / per_layer);
      for (std::int64_t layers = std::max<std::int64_t>(1, around - 2); layers <= around + 2; ++layers) {
        ++considered;
        model_spec shaped;
        if (!resized(base.model, h, h / hd, layers, shaped)) continue;
        const double params = static_cast<double>(count_parameters(shaped, 1).total);
        const double ratio = static_cast<double>(h) / static_cast<double>(layers);
        if (std::fabs(params / rules.target_params - 1) > rules.tolerance) continue;
        if (ratio < rules.min_ratio || ratio > rules.max_ratio) continue;
        shape_candidate sc;
        sc.hidden = h;
        sc.layers = layers;
        sc.heads = m.num_attention_heads;
        sc.params = params;
        sc.ratio = ratio;
        sc.gemm_efficiency = layer_gemm_efficiency(base, shaped, tpm);
        shapes.push_back(sc);
      }
    }
  }
  return shapes;
}

/// Each shape's fastest layout (the search, top 1); a shape no layout fits keeps has_layout false.
void find_layouts(const job_spec& base, const search_space& space, std::vector<shape_candidate>& shapes) {
  search_space sp = space;
  sp.top_k = 1;
  for (shape_candidate& sc : shapes) {
    job_spec j = base;
    if (!resized(base.model, sc.hidden, sc.heads, sc.layers, j.model)) continue;
    try {
      const search_result r = run_search(j, sp);
      sc.has_layout = !r.candidates.empty();
      if (sc.has_layout) {
        sc.best = r.candidates.front();
        sc.param_tokens_per_s = sc.best.samples_per_s * static_cast<double>(j.model.seq_length) * sc.params;
      }
    } catch (const input_error&) {  // "nothing fits" for this shape: it is ranked last, not an error
      sc.has_layout = false;
    }
  }
}

}  // namespace

shapes_result run_shapes(const job_spec& base_in, const shape_rules& rules, const search_space& space) {
  const auto t0 = clock_type::now();
  if (rules.target_params <= 0) throw input_error("shapes needs ${shapes.target_params} N (e.g. 175e9)");
  // §7.9: the largest model a layer's sizes can describe is ~1e18 parameters; the search of shapes steps
  // through the hidden sizes of the band, so the target bounds its work.
  if (!(rules.target_params <= kMaxShapeParams)) {
    throw input_error(fmt::format("${{shapes.target_params}} must be at most {:g} parameters, got {:g}", kMaxShapeParams,
                                  rules.target_params));
  }
  shapes_result out;
  job_spec base = base_in;
  finalize_model(base.model);
  const std::int64_t tpm = rules.tp_multiple > 0 ? rules.tp_multiple : base.cluster.gpus_per_node;
  std::vector<shape_candidate> shapes = enumerate_shapes(base, rules, tpm, out.considered);
  if (shapes.empty()) {
    throw input_error("no shape within ${shapes.tolerance} " + std::to_string(rules.tolerance) +
                      " of ${shapes.target_params} with hidden a multiple of " + std::to_string(rules.hidden_multiple) +
                      ", heads divisible by " + std::to_string(tpm) + " and hidden/layers in the ${shapes.ratio} band");
  }
  // Closest to the target first, GEMM efficiency as the tie-break; then search the best few for a layout.
  std::sort(shapes.begin(), shapes.end(), [&](const shape_candidate& a, const shape_candidate& b) {
    const double da = std::fabs(a.params / rules.target_params - 1) - 0.02 * a.gemm_efficiency;
    const double db = std::fabs(b.params / rules.target_params - 1) - 0.02 * b.gemm_efficiency;
    return da < db;
  });
  if (static_cast<std::int64_t>(shapes.size()) > rules.max_shapes) shapes.resize(static_cast<std::size_t>(rules.max_shapes));
  find_layouts(base, space, shapes);
  // Rank by work rate (tokens·params per second: the speed of training this size), then closeness.
  std::stable_sort(shapes.begin(), shapes.end(), [](const shape_candidate& a, const shape_candidate& b) {
    if (a.has_layout != b.has_layout) return a.has_layout;
    return a.param_tokens_per_s > b.param_tokens_per_s;
  });
  out.shapes = std::move(shapes);
  out.elapsed_s = std::chrono::duration<double>(clock_type::now() - t0).count();
  return out;
}

}  // namespace trainplan
