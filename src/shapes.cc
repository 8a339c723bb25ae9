// Architecture shapes near a target size, each with its fastest layout (docs/formulas.md §7.4).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>

#include "local_flags.h"
#include "trainplan/compute.h"
#include "trainplan/error.h"
#include "trainplan/model.h"
#include "trainplan/search.h"

namespace trainplan {

using detail::local_flag;
using detail::parse_count;
using detail::parse_int_list;
using clock_type = std::chrono::steady_clock;

// ---- shapes (§7.4) -----------------------------------------------------------------------------------

namespace {

/// The layer's GEMM efficiency at TP as the time model prices it (§5.2, estimate_gemm over
/// layer_gemm_shapes): FLOPs over the FLOPs-at-peak time of its forward GEMMs.
double layer_gemm_efficiency(const job_spec& base, const model_spec& m, std::int64_t tp) {
  job_spec j = base;
  j.model = m;
  j.parallel = parallel_config{};
  j.parallel.tp = tp;
  const compute_efficiency e = effective_compute_efficiency(base.cluster.gpu);
  j.training.flash_attention = true;  // the attention core's batched GEMMs are not the shape's tiles
  double flops = 0;
  double peak_s = 0;
  for (const named_gemm& g : layer_gemm_shapes(j, false)) {
    if (g.name == "logits") continue;  // once per model, not per layer
    const gemm_estimate est = estimate_gemm(base.cluster.gpu, e, base.training.precision, g.shape);
    flops += est.flops;
    peak_s += est.flops / est.efficiency;
  }
  return peak_s > 0 ? flops / peak_s : 0.0;
}

std::vector<local_flag> shapes_table(shapes_request* r) {
  shape_rules* s = &r->rules;
  return {
      {"--target-params", {}, "N", 1, "target size, e.g. 175e9",
       [s](const auto& v, const auto& f) { s->target_params = detail::parse_positive(v[0], f); }},
      {"--tolerance", {}, "X", 1, "|params/target − 1| allowed [0.05]",
       [s](const auto& v, const auto& f) { s->tolerance = detail::parse_positive(v[0], f); }},
      {"--ratio", {}, "MIN-MAX", 1, "hidden/layers band [150-200]",
       [s](const auto& v, const auto& f) {
         const auto dash = v[0].find('-');
         if (dash == std::string::npos) throw input_error(f + " expects MIN-MAX, e.g. 150-200");
         s->min_ratio = detail::parse_positive(v[0].substr(0, dash), f);
         s->max_ratio = detail::parse_positive(v[0].substr(dash + 1), f);
         if (s->max_ratio < s->min_ratio) throw input_error(f + ": MAX below MIN");
       }},
      {"--head-dims", {}, "LIST", 1, "head dims allowed [64,128]",
       [s](const auto& v, const auto& f) { s->head_dims = parse_int_list(v[0], f); }},
      {"--hidden-multiple", {}, "N", 1, "hidden a multiple of N [128]",
       [s](const auto& v, const auto& f) { s->hidden_multiple = parse_count(v[0], f); }},
      {"--heads-multiple", {}, "N", 1, "heads divisible by N (largest TP) [GPUs per node]",
       [s](const auto& v, const auto& f) { s->tp_multiple = parse_count(v[0], f); }},
      {"--max-shapes", {}, "N", 1, "shapes searched for a layout [12]",
       [s](const auto& v, const auto& f) { s->max_shapes = parse_count(v[0], f); }},
  };
}

}  // namespace

shapes_result run_shapes(const job_spec& base_in, const shape_rules& rules, const search_space& space) {
  const auto t0 = clock_type::now();
  if (rules.target_params <= 0) throw input_error("shapes needs --target-params N (e.g. 175e9)");
  shapes_result out;
  job_spec base = base_in;
  finalize_model(base.model);
  const std::int64_t gpn = base.cluster.gpus_per_node;
  const std::int64_t tpm = rules.tp_multiple > 0 ? rules.tp_multiple : gpn;
  const std::int64_t mult = rules.hidden_multiple;
  std::vector<shape_candidate> shapes;
  // hidden from ratio band: params ≈ 12·h²·L with L = h/ratio → h ≈ (P·ratio/12)^(1/3).
  const double h_lo = std::cbrt(rules.target_params * rules.min_ratio / 12) * 0.8;
  const double h_hi = std::cbrt(rules.target_params * rules.max_ratio / 12) * 1.2;
  for (std::int64_t h = static_cast<std::int64_t>(h_lo / mult) * mult; h <= h_hi; h += mult) {
    if (h <= 0 || h % tpm != 0) continue;
    for (std::int64_t hd : rules.head_dims) {
      if (h % hd != 0) continue;
      const std::int64_t heads = h / hd;
      if (heads % tpm != 0) continue;
      model_spec m = base.model;
      m.hidden_size = h;
      m.num_attention_heads = heads;
      m.num_query_groups = 0;
      m.kv_channels = 0;
      m.ffn_hidden_size = 0;
      m.num_layers = 1;
      finalize_model(m);
      const parameter_breakdown one = count_parameters(m, 1);
      const double per_layer = static_cast<double>(one.dense_layer.total());
      const double fixed = static_cast<double>(one.total) - per_layer;
      for (std::int64_t layers = std::max<std::int64_t>(1, static_cast<std::int64_t>((rules.target_params - fixed) / per_layer) - 2);
           layers <= static_cast<std::int64_t>((rules.target_params - fixed) / per_layer) + 2; ++layers) {
        ++out.considered;
        const double params = fixed + per_layer * static_cast<double>(layers);
        const double ratio = static_cast<double>(h) / static_cast<double>(layers);
        if (std::fabs(params / rules.target_params - 1) > rules.tolerance) continue;
        if (ratio < rules.min_ratio || ratio > rules.max_ratio) continue;
        shape_candidate sc;
        sc.hidden = h;
        sc.layers = layers;
        sc.heads = heads;
        sc.params = params;
        sc.ratio = ratio;
        sc.gemm_efficiency = layer_gemm_efficiency(base, m, tpm);
        shapes.push_back(sc);
      }
    }
  }
  if (shapes.empty()) {
    throw input_error("no shape within --tolerance " + std::to_string(rules.tolerance) + " of --target-params with hidden a "
                      "multiple of " + std::to_string(mult) + ", heads divisible by " + std::to_string(tpm) +
                      " and hidden/layers in the --ratio band");
  }
  // Closest to the target first, quantization as the tie-break; then search the best few for a layout.
  std::sort(shapes.begin(), shapes.end(), [&](const shape_candidate& a, const shape_candidate& b) {
    const double da = std::fabs(a.params / rules.target_params - 1) - 0.02 * a.gemm_efficiency;
    const double db = std::fabs(b.params / rules.target_params - 1) - 0.02 * b.gemm_efficiency;
    return da < db;
  });
  if (static_cast<std::int64_t>(shapes.size()) > rules.max_shapes) shapes.resize(static_cast<std::size_t>(rules.max_shapes));
  search_space sp = space;
  sp.top_k = 1;
  for (shape_candidate& sc : shapes) {
    job_spec j = base;
    j.model.hidden_size = sc.hidden;
    j.model.num_attention_heads = sc.heads;
    j.model.num_layers = sc.layers;
    j.model.num_query_groups = 0;
    j.model.kv_channels = 0;
    j.model.ffn_hidden_size = 0;
    try {
      const search_result r = run_search(j, sp);
      if (!r.candidates.empty()) {
        sc.has_layout = true;
        sc.best = r.candidates.front();
        sc.param_tokens_per_s = sc.best.samples_per_s * static_cast<double>(j.model.seq_length) * sc.params;
      }
    } catch (const input_error&) {
      sc.has_layout = false;
    }
  }
  // Rank by work rate (tokens·params per second: the speed of training this size), then closeness.
  std::stable_sort(shapes.begin(), shapes.end(), [](const shape_candidate& a, const shape_candidate& b) {
    if (a.has_layout != b.has_layout) return a.has_layout;
    return a.param_tokens_per_s > b.param_tokens_per_s;
  });
  out.shapes = std::move(shapes);
  out.elapsed_s = std::chrono::duration<double>(clock_type::now() - t0).count();
  return out;
}

shapes_request parse_shapes_request(const std::vector<std::string>& args_in) {
  std::vector<std::string> args = args_in;
  if (args.empty()) {
    args = {"--target-params", "175e9", "--model", "bloom-176b", "--cluster", "jean-zay-a100", "--num-nodes", "48",
            "--gbs", "2048", "--bf16", "--framework", "deepspeed", "--embedding-as-stage"};
  }
  shapes_request r;
  std::vector<std::string> rest = detail::take_local_flags(shapes_table(&r), args);
  search_request sr = parse_search_request(rest.empty() ? default_search_args() : rest);
  r.space = sr.space;
  r.base = sr.base;
  return r;
}

std::string shapes_flags_help() {
  shapes_request dummy;
  return detail::local_flags_help(shapes_table(&dummy)) + "  and the search flags (`trainplan help search`)\n";
}

}  // namespace trainplan
