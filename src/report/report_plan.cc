// The training plan (`trainplan plan`, docs/formulas.md §7.5-§7.8) in text and JSON. They format; they
// never compute.
#include <fmt/format.h>

#include <cmath>

#include "report_detail.h"
#include "reporters.h"
#include "trainplan/report/report.h"

namespace trainplan {

using detail::context_json;
using detail::json;

std::string text_reporter::plan(const plan_report& r, std::int64_t num_gpus) const {
  std::string o = "Training plan";
  o += r.from_job ? " (iteration times from the time model)\n" : " (from the given speed)\n";
  if (!r.layout_fits) {
    o += fmt::format("WARNING: the job's layout does not fit: it reserves {} GiB of {} GiB usable per GPU "
                     "(`trainplan memory` with the same flags shows where); this plan is for a layout that cannot run\n",
                     format_gib(r.peak_reserved_bytes, 1), format_gib(r.capacity_bytes, 1));
  }
  o += "\n";
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
  if (r.total_iterations > 0) {  // unknown without a batch and sequence (a plan by tokens alone)
    o += fmt::format("  iterations           {:>14}\n", r.total_iterations);
  } else {
    o += "  iterations                    -   (give --global-batch-size and --seq-length to count them)\n";
  }
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

std::string json_reporter::plan(const plan_report& r, std::int64_t) const {
  json j;
  j["schema_version"] = kSchemaVersion;
  j["context"] = context_json();
  json& p = j["plan"];
  p["layout_fits"] = r.layout_fits;
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
  return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace trainplan
