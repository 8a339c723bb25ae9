// The statistics of predicted against measured (docs/formulas.md §5.8): median and maximum |error|,
// Spearman's rank correlation.
#include "trainplan/core/validate/validation.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <string_view>
#include <utility>

#include "trainplan/core/job/job.h"

namespace trainplan {

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

namespace {

/// One comparison a row carries: its time (or TFLOPs) or its peak memory, read through these members;
/// `predicted` and `measured` are what is ranked.
struct comparison {
  const std::string validation_row::*skipped;
  double validation_row::*error;
  double validation_row::*predicted;
  double validation_row::*measured;
  bool measured_only;  ///< rows without a measurement (measured ≤ 0) are not counted at all
  bool throughput;     ///< higher is faster: the predicted fastest row's shortfall is reported
};
constexpr comparison kTimeComparison{&validation_row::skipped, &validation_row::error,
                                     &validation_row::predicted_model_flops_per_gpu_s,
                                     &validation_row::measured_model_flops_per_gpu_s, false, true};
constexpr comparison kMemoryComparison{&validation_row::memory_skipped, &validation_row::memory_error,
                                       &validation_row::predicted_memory_bytes, &validation_row::measured_memory_bytes,
                                       true, false};

validation_stats stats_over(const std::string& name, const std::vector<const validation_row*>& rows, const comparison& c) {
  validation_stats s;
  s.name = name;
  std::vector<double> errs, pred, meas;
  for (const validation_row* r : rows) {
    if (c.measured_only && !(r->*c.measured > 0)) continue;
    if (!(r->*c.skipped).empty()) {
      ++s.skipped;
      continue;
    }
    errs.push_back(std::fabs(r->*c.error));
    pred.push_back(r->*c.predicted);
    meas.push_back(r->*c.measured);
    if (!r->fits) ++s.not_fit;
  }
  s.rows = static_cast<std::int64_t>(errs.size());
  s.median_abs_error = median_of(errs);
  s.max_abs_error = errs.empty() ? 0 : *std::max_element(errs.begin(), errs.end());
  s.spearman = spearman(pred, meas);
  if (c.throughput && !pred.empty()) {
    const auto best_predicted = std::max_element(pred.begin(), pred.end()) - pred.begin();
    const double best_measured = *std::max_element(meas.begin(), meas.end());
    if (best_measured > 0) s.fastest_shortfall = 1 - meas[static_cast<std::size_t>(best_predicted)] / best_measured;
  }
  return s;
}

}  // namespace

validation_stats stats_of(const std::string& name, const std::vector<const validation_row*>& rows) {
  return stats_over(name, rows, kTimeComparison);
}

validation_stats memory_stats_of(const std::string& name, const std::vector<const validation_row*>& rows) {
  return stats_over(name, rows, kMemoryComparison);
}

std::string generation_of_job(const job_spec& job) {
  // Catalog name prefixes → the generation the published rows name (their gpu_type column).
  // Blackwell Ultra is a generation of its own: no B300 or GB300 run is validated, so it gets no band
  // rather than B200's.
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 8> kFamilies = {{
      {"a100", "A100"}, {"h100", "H100"}, {"h800", "H100"}, {"h200", "H100"}, {"b200", "B200"}, {"gb200", "B200"},
      {"b300", "B300"}, {"gb300", "B300"}}};
  // The H20 (a capped Hopper) has no validated run: no band.
  const std::string& name = job.cluster.gpu.name;
  for (const auto& [prefix, family] : kFamilies) {
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    const training_config& t = job.training;
    const char* precision = t.fp8 != fp8_format::none ? " FP8"
                            : t.precision == dtype::bf16 ? " BF16"
                            : t.precision == dtype::fp16 ? " FP16"
                                                         : " FP32";
    // MoE runs are validated apart: their errors (routing, permutation, expert GEMMs, all-to-alls) are
    // not a dense run's, and a dense band would promise them a precision nothing measured.
    return std::string(family) + precision + (job.model.is_moe() ? " MoE" : "");
  }
  return "";
}

error_band expected_error(const validation_report& r, const std::string& generation, const std::string& framework) {
  const std::string family = generation.substr(0, generation.find(' '));
  const bool moe = generation.ends_with(" MoE");  // MoE runs are banded by MoE rows alone
  struct scope_rule {
    std::string label;
    bool (*keep)(const validation_row&, const std::string&, const std::string&, const std::string&);
  };
  const scope_rule rules[] = {
      {generation + ", " + framework,
       [](const validation_row& v, const std::string& g, const std::string& f, const std::string&) {
         return v.generation == g && v.framework == f;
       }},
      {generation, [](const validation_row& v, const std::string& g, const std::string&, const std::string&) {
         return v.generation == g;
       }},
      {family + (moe ? " MoE" : ""),
       [](const validation_row& v, const std::string& g, const std::string&, const std::string& fam) {
         return v.generation.substr(0, v.generation.find(' ')) == fam && v.generation.ends_with(" MoE") == g.ends_with(" MoE");
       }},
  };
  error_band band;
  if (generation.empty()) return band;
  for (const scope_rule& rule : rules) {
    std::vector<double> errors;
    for (const validation_row& v : r.rows) {
      // Each run as it would be predicted out of sample (a row whose source a constant was fitted on,
      // by the refit without it; §5.8).
      if (v.skipped.empty() && rule.keep(v, generation, framework, family)) {
        errors.push_back(v.out_of_sample_abs_error());
      }
    }
    if (static_cast<std::int64_t>(errors.size()) < kMinBandRuns) continue;
    std::sort(errors.begin(), errors.end());
    // The 80th percentile, nearest rank: the smallest |error| at least 80% of the runs stay within.
    const auto rank = static_cast<std::size_t>(std::ceil(0.8 * static_cast<double>(errors.size())));
    band.p80_abs_error = errors[rank - 1];
    band.runs = static_cast<std::int64_t>(errors.size());
    band.scope = rule.label;
    return band;
  }
  band.scope = generation;  // no band: what it would have been for (fewer than kMinBandRuns runs)
  return band;
}

double spearman(const std::vector<double>& a, const std::vector<double>& b) {
  const std::size_t n = a.size();
  if (n < 2 || b.size() != n) return 1.0;
  auto ranks = [n](const std::vector<double>& v) {
    std::vector<std::size_t> idx(n);
    for (std::size_t i = 0; i < n; ++i) idx[i] = i;
    std::sort(idx.begin(), idx.end(), [&](std::size_t x, std::size_t y) { return v[x] < v[y]; });
    std::vector<double> r(n);
    for (std::size_t i = 0; i < n;) {
      std::size_t j = i;
      while (j + 1 < n && v[idx[j + 1]] == v[idx[i]]) ++j;
      for (std::size_t k = i; k <= j; ++k) r[idx[k]] = 0.5 * static_cast<double>(i + j) + 1;
      i = j + 1;
    }
    return r;
  };
  const std::vector<double> ra = ranks(a), rb = ranks(b);
  double ma = 0, mb = 0;
  for (std::size_t i = 0; i < n; ++i) {
    ma += ra[i];
    mb += rb[i];
  }
  ma /= static_cast<double>(n);
  mb /= static_cast<double>(n);
  double cov = 0, va = 0, vb = 0;
  for (std::size_t i = 0; i < n; ++i) {
    cov += (ra[i] - ma) * (rb[i] - mb);
    va += (ra[i] - ma) * (ra[i] - ma);
    vb += (rb[i] - mb) * (rb[i] - mb);
  }
  if (va == 0 || vb == 0) return 1.0;
  return cov / std::sqrt(va * vb);
}

}  // namespace trainplan
