// Predicted against measured (`trainplan validate`, docs/formulas.md §5.8) in text, JSON and CSV. They
// format; they never compute.
#include <fmt/format.h>

#include <cmath>

#include "report_detail.h"
#include "reporters.h"
#include "trainplan/report/report.h"

namespace trainplan {

using detail::context_json;
using detail::json;
using detail::kGiB;
using detail::whole_bytes;

std::string json_reporter::validation(const validation_report& r) const {
  json j;
  j["schema_version"] = kSchemaVersion;
  j["context"] = context_json();
  json rows = json::array();
  for (const validation_row& v : r.rows) {
    json x = {{"table", v.table}, {"row", v.label}, {"date", v.date}, {"group", v.group}};
    if (!v.source.empty()) x["source"] = v.source;
    if (!v.assumed.empty()) x["assumed"] = v.assumed;
    if (!v.args.empty()) x["flags"] = v.args;  // the job flags the row was planned with, to rerun it
    if (v.skipped.empty()) {
      x["measured_s"] = v.measured_s;
      x["predicted_s"] = v.predicted_s;
      x["error"] = v.error;
      x["measured_tflops"] = v.measured_tflops;
      x["predicted_tflops"] = v.predicted_tflops;
      x["fits"] = v.fits;
      x["peak_reserved_bytes"] = whole_bytes(v.peak_reserved_bytes);
      x["capacity_bytes"] = whole_bytes(v.capacity_bytes);
    } else {
      x["skipped"] = v.skipped;
    }
    if (v.measured_memory_bytes > 0) {
      json mem = {{"metric", v.memory_metric}, {"measured_bytes", whole_bytes(v.measured_memory_bytes)}};
      if (v.memory_skipped.empty()) {
        mem["predicted_bytes"] = whole_bytes(v.predicted_memory_bytes);
        mem["error"] = v.memory_error;
      } else {
        mem["skipped"] = v.memory_skipped;
      }
      x["peak_memory"] = mem;
    }
    rows.push_back(x);
  }
  auto stats = [](const validation_stats& s) {
    return json{{"name", s.name},     {"rows", s.rows},         {"median_abs_error", s.median_abs_error},
                {"max_abs_error", s.max_abs_error}, {"spearman", s.spearman},
                {"fastest_shortfall", s.fastest_shortfall}, {"not_fit", s.not_fit},
                {"skipped", s.skipped}};
  };
  json tables = json::array(), groups = json::array(), generations = json::array(), sources = json::array();
  json memory_sources = json::array();
  for (const auto& s : r.memory_sources) memory_sources.push_back(stats(s));
  for (const auto& s : r.tables) tables.push_back(stats(s));
  for (const auto& s : r.groups) groups.push_back(stats(s));
  for (const auto& s : r.generations) generations.push_back(stats(s));
  for (const auto& s : r.sources) sources.push_back(stats(s));
  j["validation"] = {{"rows", rows},       {"tables", tables},   {"groups", groups}, {"generations", generations},
                     {"sources", sources}, {"memory_sources", memory_sources}, {"overall", stats(r.overall)}};
  if (!r.loso.published.empty()) {
    json published = json::array();
    for (const published_fold& f : r.loso.published) {
      published.push_back({{"constant", f.constant}, {"source", f.source}, {"shipped_value", f.shipped_value},
                           {"refit_value", f.refit_value}, {"rows", f.rows}, {"median_abs_error", f.median_abs_error},
                           {"max_abs_error", f.max_abs_error}, {"shipped_median_abs_error", f.shipped_median_abs_error},
                           {"shipped_max_abs_error", f.shipped_max_abs_error}});
    }
    j["validation"]["leave_one_published_source_out"] = published;
  }
  if (!r.loso.folds.empty()) {
    const loso_report& l = r.loso;
    json folds = json::array();
    for (const loso_fold& f : l.folds) {
      folds.push_back({{"source", f.source}, {"rows", f.rows}, {"tile_fraction", f.tile_fraction}, {"host_ms", f.host_ms},
                       {"median_abs_error", f.median_abs_error}, {"shipped_median_abs_error", f.shipped_median_abs_error}});
    }
    j["validation"]["leave_one_source_out"] = {
        {"folds", folds},
        {"median_abs_error", l.median_abs_error},
        {"shipped_median_abs_error", l.shipped_median_abs_error},
        {"shipped_tile_fraction", l.shipped_tile_fraction},
        {"shipped_host_ms", l.shipped_host_ms},
        {"grid", {{"tile_first", l.tile_first}, {"tile_step", l.tile_step}, {"tile_count", l.tile_count},
                  {"host_first_ms", l.host_first_ms}, {"host_step_ms", l.host_step_ms}, {"host_count", l.host_count}}}};
  }
  return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

std::string text_reporter::validation(const validation_report& r) const {
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
      if (v.by_tflops) {  // the source gives model TFLOPs per GPU, not a time
        o += fmt::format("  {:<10} {:<11} {:7.1f} TF {:8.1f} TF {:+6.1f}%  {}", v.label, v.date.substr(0, 11),
                         v.measured_tflops, v.predicted_tflops, 100 * v.error, v.group);
      } else {
        o += fmt::format("  {:<10} {:<11} {:10.2f} {:11.2f} {:+6.1f}%  {}", v.label, v.date.substr(0, 11), v.measured_s,
                         v.predicted_s, 100 * v.error, v.group);
      }
      if (!v.fits) {
        o += fmt::format("  [ran, but predicted not to fit: {:.1f} of {:.1f} GiB]", v.peak_reserved_bytes / kGiB,
                         v.capacity_bytes / kGiB);
      }
      o += "\n";
    }
  }
  // A statistic of no row is no figure: "—", not a perfect 0.0%.
  auto pct = [](const validation_stats& s, double x) { return s.rows > 0 ? fmt::format("{:5.1f}%", 100 * x) : "    —"; };
  auto stats = [&](const validation_stats& s) {
    o += fmt::format("  {:<32} {:4} rows  median |error| {}  max {}  Spearman {}  best {}  not fit {}\n", s.name,
                     s.rows, pct(s, s.median_abs_error), pct(s, s.max_abs_error),
                     s.rows > 1 ? fmt::format("{:+.2f}", s.spearman) : std::string("    —"),
                     s.rows > 1 ? fmt::format("{:5.1f}%", s.fastest_shortfall > 0 ? -100 * s.fastest_shortfall : 0.0)
                                : std::string("    —"),
                     s.not_fit);
  };
  o += "\nSpearman: rank correlation of predicted and measured throughput (model FLOPs/s per GPU); best: how much "
       "less the row predicted fastest measured than the measured fastest (0.0%: the model picks it).\n";
  o += "\nPer table:\n";
  for (const auto& s : r.tables) stats(s);
  if (!r.groups.empty()) {
    o += "\nPer seed table (rows measured together, one thing varied):\n";
    for (const auto& s : r.groups) stats(s);
  }
  if (!r.generations.empty()) {
    o += "\nPer GPU generation (published rows; targets: median ≤ 8%, max ≤ 20%; \"held out\": "
         "published-measurements-more.csv, counted apart; no constant is fitted on either table but Blackwell's "
         "attention, on NeMo's B200 long-sequence rows: docs/formulas.md §5.6):\n";
    for (const auto& s : r.generations) stats(s);
  }
  if (!r.sources.empty()) {
    o += "\nPer source (published rows; skipped: a field the row leaves empty or a feature not modelled, "
         "`trainplan validate --format csv` says which). No constant is fitted on any published source but one "
         "(Hopper's are measured, the A100's fitted on BLOOM's tables; Blackwell's attention on NeMo's B200 "
         "long-sequence rows, whose error here is in sample: docs/formulas.md §5.6), so each other error here is "
         "that source's leave-one-source-out error:\n";
    for (const auto& s : r.sources) {
      o += fmt::format("  {:4} rows  median |error| {}  max {}  not fit {:2}  skipped {:2}  {}\n", s.rows,
                       pct(s, s.median_abs_error), pct(s, s.max_abs_error), s.not_fit, s.skipped, s.name);
    }
  }
  if (!r.memory_sources.empty()) {
    o += "\nPeak memory per GPU, measured against predicted (published rows that measured it, the statistic "
         "they measured; docs/formulas.md §3.10):\n";
    for (const validation_row& v : r.rows) {
      if (!(v.measured_memory_bytes > 0)) continue;
      if (!v.memory_skipped.empty()) {
        o += fmt::format("  {:<10} {:<34} skipped: {}\n", v.label, v.memory_metric, v.memory_skipped);
      } else {
        o += fmt::format("  {:<10} {:<34} {:7.2f} GB {:7.2f} GB {:+6.1f}%\n", v.label, v.memory_metric,
                         v.measured_memory_bytes / 1e9, v.predicted_memory_bytes / 1e9, 100 * v.memory_error);
      }
    }
    for (const auto& s : r.memory_sources) {
      o += fmt::format("  {:4} rows  median |error| {}  max {}  not fit {:2}  skipped {:2}  {}\n", s.rows,
                       pct(s, s.median_abs_error), pct(s, s.max_abs_error), s.not_fit, s.skipped, s.name);
    }
  }
  if (!r.loso.folds.empty()) {
    const loso_report& l = r.loso;
    o += fmt::format(
        "\nLeave-one-source-out over BLOOM's tables (the runs the A100 constants were fitted on; docs/formulas.md "
        "§5.8): per source, the large-GEMM tile fraction and DeepSpeed's host time per layer pass refitted on the "
        "others (grid {:.2f}-{:.2f} × {:.1f}-{:.1f} ms; shipped {:.2f} and {:.1f} ms), then that source predicted:\n",
        l.tile_first, l.tile_first + l.tile_step * static_cast<double>(l.tile_count - 1), l.host_first_ms,
        l.host_first_ms + l.host_step_ms * static_cast<double>(l.host_count - 1), l.shipped_tile_fraction, l.shipped_host_ms);
    for (const loso_fold& f : l.folds) {
      o += fmt::format("  {:4} rows  refit {:.2f}, {:.1f} ms  median |error| {:5.1f}% held out, {:5.1f}% in sample  {}\n",
                       f.rows, f.tile_fraction, f.host_ms, 100 * f.median_abs_error, 100 * f.shipped_median_abs_error,
                       f.source);
    }
    o += fmt::format("  all rows, each predicted without its source: median |error| {:.1f}% (in sample {:.1f}%)\n",
                     100 * l.median_abs_error, 100 * l.shipped_median_abs_error);
  }
  for (const published_fold& f : r.loso.published) {
    o += fmt::format(
        "\nLeave-one-source-out for the default fitted on a published source ({}; docs/formulas.md §5.6): "
        "fitted {:.2f} on it; without it nothing constrains the constant, which falls back to {:.2f}:\n"
        "  {:4} rows  median |error| {:5.1f}% held out, {:5.1f}% in sample; max {:5.1f}% held out, {:5.1f}% in "
        "sample  {}\n",
        f.constant, f.shipped_value, f.refit_value, f.rows, 100 * f.median_abs_error, 100 * f.shipped_median_abs_error,
        100 * f.max_abs_error, 100 * f.shipped_max_abs_error, f.source);
  }
  o += "\nOverall:\n";
  stats(r.overall);
  o += "\nnot fit: rows that ran but are predicted not to fit (reserved memory above the GPU's usable memory);\n"
       "their time is still compared.\n";
  return o;
}

std::string csv_reporter::validation(const validation_report& r) const {
  std::string o =
      "table,label,date,measured_s,predicted_s,error,measured_tflops,predicted_tflops,fits,peak_reserved_bytes,capacity_bytes,"
      "skipped,memory_metric,measured_memory_bytes,predicted_memory_bytes,memory_error\n";
  auto quoted = [](const std::string& v) {
    if (v.find_first_of(",\"\n") == std::string::npos) return v;
    std::string q = "\"";
    for (char ch : v) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
    return q + "\"";
  };
  for (const validation_row& v : r.rows) {
    const bool mem = v.measured_memory_bytes > 0 && v.memory_skipped.empty();
    o += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", quoted(v.table), quoted(v.label), quoted(v.date),
                     v.measured_s, v.predicted_s, v.error, v.measured_tflops, v.predicted_tflops,
                     v.skipped.empty() ? (v.fits ? "1" : "0") : "", v.peak_reserved_bytes, v.capacity_bytes, quoted(v.skipped),
                     quoted(v.memory_metric), v.measured_memory_bytes > 0 ? fmt::format("{}", v.measured_memory_bytes) : "",
                     mem ? fmt::format("{}", v.predicted_memory_bytes) : "", mem ? fmt::format("{}", v.memory_error) : "");
  }
  return o;
}

}  // namespace trainplan
