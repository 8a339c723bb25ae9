// Renderers of trainplan-bench's results (docs/bench.md "Output"). Units: seconds shown as µs, rates as
// 1e9 bytes/s (GB/s, as nccl-tests prints) and 1e12 FLOP/s.
#include "report.h"

#include <nlohmann/json.hpp>

#include <fmt/format.h>

namespace trainplan::bench {

namespace {

using nlohmann::json;

json context_json(const run_context& c) {
  return {{"tool", "trainplan-bench"},  {"schema_version", kBenchSchemaVersion},
          {"command", c.command},       {"backend", c.backend},
          {"launcher", c.launcher},     {"world_size", c.world},
          {"nodes", c.nodes},           {"host", c.host},
          {"mpi_version", c.mpi_version}, {"library_version", c.library_version},
          {"created_utc", c.created_utc}, {"modelled_cluster", c.modelled_cluster.empty() ? json(nullptr) : json(c.modelled_cluster)}};
}

json gpu_json(const gpu_device_info& g) {
  return {{"name", g.name},
          {"catalog_name", g.catalog_name},
          {"sm_count", g.sm_count},
          {"memory_bytes", g.memory_bytes},
          {"driver_version", g.driver_version},
          {"cuda_runtime_version", g.cuda_runtime_version},
          {"cublaslt_version", g.cublaslt_version},
          {"nccl_version", g.nccl_version}};
}

std::string header(const run_context& c) {
  return fmt::format("trainplan-bench {}: {} rank(s) on {} node(s), backend {}, launched by {} ({})\n", c.command,
                     c.world, c.nodes, c.backend, c.launcher, c.created_utc);
}

std::string gpu_line(const gpu_device_info& g) {
  return fmt::format("GPU: {} ({}; {} SMs), driver {}, CUDA runtime {}, cuBLASLt {}\n", g.name,
                     g.catalog_name.empty() ? "not in trainplan's catalog" : g.catalog_name, g.sm_count,
                     g.driver_version, g.cuda_runtime_version, g.cublaslt_version);
}

std::string pct(double x) { return x > 0 ? fmt::format("{:.1f}", 100 * x) : "-"; }

}  // namespace

std::string render_gemm(const run_context& ctx, const gemm_report& r, output_format f) {
  if (f == output_format::json) {
    json rows = json::array();
    for (const gemm_row& g : r.rows) {
      const gemm_request& q = g.measured.request;
      rows.push_back({{"name", q.name},
                      {"dtype", to_string(q.precision)},
                      {"m", q.shape.m},
                      {"n", q.shape.n},
                      {"k", q.shape.k},
                      {"batch", q.shape.batch},
                      {"time_s", g.measured.time_s},
                      {"flops_per_s", g.flops_per_s},
                      {"heuristic_time_s", g.measured.heuristic_time_s},
                      {"heuristic_flops_per_s", g.heuristic_flops_per_s},
                      {"algorithms_timed", g.measured.algorithms_timed},
                      {"cublas_reference_flops_per_s", g.reference_flops_per_s},
                      {"peak_flops_per_s", g.peak_flops_per_s},
                      {"efficiency", g.efficiency},
                      {"predicted_efficiency", g.predicted_efficiency}});
    }
    return json{{"context", context_json(ctx)}, {"gpu", gpu_json(r.gpu)}, {"gemms", rows}}.dump(1) + "\n";
  }
  if (f == output_format::csv) {
    std::string out =
        "name,dtype,m,n,k,batch,time_s,tflops_per_s,heuristic_tflops_per_s,cublas_reference_tflops_per_s,efficiency,"
        "predicted_efficiency\n";
    for (const gemm_row& g : r.rows) {
      const gemm_request& q = g.measured.request;
      out += fmt::format("{},{},{},{},{},{},{:.9g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g}\n", q.name, to_string(q.precision),
                         q.shape.m, q.shape.n, q.shape.k, q.shape.batch, g.measured.time_s, g.flops_per_s / 1e12,
                         g.heuristic_flops_per_s / 1e12, g.reference_flops_per_s / 1e12, g.efficiency,
                         g.predicted_efficiency);
    }
    return out;
  }
  std::string out = header(ctx) + gpu_line(r.gpu);
  out += fmt::format("{:<22} {:>5} {:>7} {:>7} {:>7} {:>5} {:>10} {:>9} {:>9} {:>9} {:>7} {:>9}\n", "GEMM", "dtype", "m",
                     "n", "k", "batch", "time (µs)", "TFLOP/s", "heur.", "cuBLAS", "% peak", "% model");
  for (const gemm_row& g : r.rows) {
    const gemm_request& q = g.measured.request;
    out += fmt::format("{:<22} {:>5} {:>7} {:>7} {:>7} {:>5} {:>10.1f} {:>9.1f} {:>9.1f} {:>9} {:>7} {:>9}\n", q.name,
                       to_string(q.precision), q.shape.m, q.shape.n, q.shape.k, q.shape.batch, g.measured.time_s * 1e6,
                       g.flops_per_s / 1e12, g.heuristic_flops_per_s / 1e12,
                       g.reference_flops_per_s > 0 ? fmt::format("{:.1f}", g.reference_flops_per_s / 1e12) : "-",
                       pct(g.efficiency), pct(g.predicted_efficiency));
  }
  out += "TFLOP/s: the fastest of the cuBLASLt heuristic's candidates; heur.: its first choice; cuBLAS: cublasGemmEx's "
         "default; % model: the planner's predicted efficiency (of the dense peak)\n";
  return out;
}

std::string render_memory(const run_context& ctx, const memory_report& r, output_format f) {
  if (f == output_format::json) {
    json rows = json::array();
    for (const memory_row& m : r.rows) {
      rows.push_back({{"test", m.measured.what},
                      {"bytes", m.measured.bytes},
                      {"time_s", m.measured.time_s},
                      {"bytes_per_s", m.measured.bytes_per_s},
                      {"datasheet_bytes_per_s", m.datasheet_bytes_per_s},
                      {"fraction_of_datasheet", m.fraction}});
    }
    return json{{"context", context_json(ctx)}, {"gpu", gpu_json(r.gpu)}, {"copies", rows}}.dump(1) + "\n";
  }
  if (f == output_format::csv) {
    std::string out = "test,bytes,time_s,gb_per_s,fraction_of_datasheet\n";
    for (const memory_row& m : r.rows) {
      out += fmt::format("{},{:.0f},{:.9g},{:.6g},{:.6g}\n", m.measured.what, m.measured.bytes, m.measured.time_s,
                         m.measured.bytes_per_s / 1e9, m.fraction);
    }
    return out;
  }
  std::string out = header(ctx) + gpu_line(r.gpu);
  out += fmt::format("{:<18} {:>14} {:>11} {:>10} {:>12}\n", "copy", "bytes counted", "time (µs)", "GB/s", "% datasheet");
  for (const memory_row& m : r.rows) {
    out += fmt::format("{:<18} {:>14.0f} {:>11.1f} {:>10.1f} {:>12}\n", m.measured.what, m.measured.bytes,
                       m.measured.time_s * 1e6, m.measured.bytes_per_s / 1e9, pct(m.fraction));
  }
  out += "device_to_device counts bytes read + written (2 × the buffer); GB = 1e9 bytes\n";
  return out;
}

std::string render_collectives(const run_context& ctx, const std::vector<collective_row>& rows, output_format f) {
  if (f == output_format::json) {
    json out = json::array();
    for (const collective_row& r : rows) {
      json j = {{"group", r.group},
                {"collective", to_string(r.kind)},
                {"ranks", r.ranks},
                {"nodes", r.nodes},
                {"bytes", r.bytes},
                {"count", r.count},
                {"time_s", r.time_s},
                {"algbw_bytes_per_s", r.algbw_bytes_per_s},
                {"busbw_bytes_per_s", r.busbw_bytes_per_s},
                {"errors", r.errors},
                {"predicted_time_s", r.predicted_s}};
      if (r.has_in_place) {
        j["in_place"] = {{"time_s", r.in_place_time_s},
                         {"algbw_bytes_per_s", r.in_place_algbw_bytes_per_s},
                         {"busbw_bytes_per_s", r.in_place_busbw_bytes_per_s}};
      }
      out.push_back(j);
    }
    return json{{"context", context_json(ctx)}, {"collectives", out}}.dump(1) + "\n";
  }
  if (f == output_format::csv) {
    std::string out =
        "group,collective,ranks,nodes,bytes,count,time_s,algbw_gb_per_s,busbw_gb_per_s,in_place_time_s,"
        "in_place_busbw_gb_per_s,errors,predicted_time_s\n";
    for (const collective_row& r : rows) {
      out += fmt::format("{},{},{},{},{},{},{:.9g},{:.6g},{:.6g},{},{},{},{}\n", r.group, to_string(r.kind), r.ranks,
                         r.nodes, r.bytes, r.count, r.time_s, r.algbw_bytes_per_s / 1e9, r.busbw_bytes_per_s / 1e9,
                         r.has_in_place ? fmt::format("{:.9g}", r.in_place_time_s) : "",
                         r.has_in_place ? fmt::format("{:.6g}", r.in_place_busbw_bytes_per_s / 1e9) : "",
                         r.errors < 0 ? "" : std::to_string(r.errors),
                         r.predicted_s > 0 ? fmt::format("{:.9g}", r.predicted_s) : "");
    }
    return out;
  }
  std::string out = header(ctx);
  if (rows.empty()) {
    out += "no collective to measure: every process group of the job has one rank\n";
    return out;
  }
  out += fmt::format("library: {}\n", ctx.library_version);
  // The model column is the planner's prediction for the job's cluster, not for this machine: say which.
  const std::string model = ctx.modelled_cluster.empty() ? "model (µs)" : "model µs, " + ctx.modelled_cluster;
  out += fmt::format("{:<6} {:<15} {:>5} {:>12} {:>11} | {:>10} {:>8} {:>8} | {:>10} {:>8} {:>8} | {:>6} | {:>11}\n",
                     "group", "collective", "ranks", "size (B)", "count", "time (µs)", "algbw", "busbw", "in-place",
                     "algbw", "busbw", "errors", model);
  for (const collective_row& r : rows) {
    out += fmt::format("{:<6} {:<15} {:>5} {:>12} {:>11} | {:>10.1f} {:>8.2f} {:>8.2f} | {:>10} {:>8} {:>8} | {:>6} | {:>11}\n",
                       r.group, to_string(r.kind), r.ranks, r.bytes, r.count, r.time_s * 1e6, r.algbw_bytes_per_s / 1e9,
                       r.busbw_bytes_per_s / 1e9,
                       r.has_in_place ? fmt::format("{:.1f}", r.in_place_time_s * 1e6) : "-",
                       r.has_in_place ? fmt::format("{:.2f}", r.in_place_algbw_bytes_per_s / 1e9) : "-",
                       r.has_in_place ? fmt::format("{:.2f}", r.in_place_busbw_bytes_per_s / 1e9) : "-",
                       r.errors < 0 ? "-" : std::to_string(r.errors),
                       r.predicted_s > 0 ? fmt::format("{:.1f}", r.predicted_s * 1e6) : "-");
  }
  out += "algbw = size / time, busbw = algbw × nccl-tests' bus factor (GB/s = 1e9 bytes/s); time: mean per op, averaged "
         "over ranks; errors: wrong elements in the checked runs\n";
  if (!ctx.modelled_cluster.empty()) {
    out += "model: the planner's alpha-beta time for this group on " + ctx.modelled_cluster +
           " (the job's --cluster), not on the machine measured\n";
  }
  return out;
}

std::string render_health(const run_context& ctx, const health_report& r, output_format f) {
  auto findings_json = [](const std::vector<slow_finding>& v) {
    json a = json::array();
    for (const slow_finding& s : v) {
      a.push_back({{"who", s.who}, {"value", s.value}, {"median", s.median}, {"shortfall", s.shortfall}, {"noise", s.noise}});
    }
    return a;
  };
  if (f == output_format::json) {
    json ranks = json::array();
    for (const health_rank& h : r.ranks) {
      ranks.push_back({{"rank", h.rank},
                       {"device", h.name},
                       {"host", h.host},
                       {"gemm_flops_per_s", h.gemm_flops_per_s},
                       {"gemm_spread", h.gemm_spread},
                       {"memory_bytes_per_s", h.memory_bytes_per_s},
                       {"memory_spread", h.memory_spread},
                       {"sendrecv_busbw_bytes_per_s", h.sendrecv_busbw_bytes_per_s}});
    }
    return json{{"context", context_json(ctx)},
                {"probes_on", r.on_gpu ? "gpu" : "cpu"},
                {"gemm_probe", r.gemm_probe},
                {"memory_probe", r.memory_probe},
                {"repeats", r.repeats},
                {"threshold", r.threshold},
                {"z_score", r.z_score},
                {"all_reduce", {{"bytes", r.all_reduce_bytes}, {"time_s", r.all_reduce_time_s},
                                {"busbw_bytes_per_s", r.all_reduce_busbw_bytes_per_s}, {"errors", r.all_reduce_errors}}},
                {"ranks", ranks},
                {"slow_gemm", findings_json(r.slow_gemm)},
                {"slow_memory", findings_json(r.slow_memory)},
                {"healthy", r.slow_gemm.empty() && r.slow_memory.empty() && r.all_reduce_errors == 0}}
               .dump(1) +
           "\n";
  }
  if (f == output_format::csv) {
    std::string out = "rank,device,host,gemm_tflops_per_s,gemm_spread,memory_gb_per_s,memory_spread,sendrecv_busbw_gb_per_s\n";
    for (const health_rank& h : r.ranks) {
      out += fmt::format("{},{},{},{:.6g},{:.4g},{:.6g},{:.4g},{:.6g}\n", h.rank, h.name, h.host, h.gemm_flops_per_s / 1e12,
                         h.gemm_spread, h.memory_bytes_per_s / 1e9, h.memory_spread, h.sendrecv_busbw_bytes_per_s / 1e9);
    }
    return out;
  }
  std::string out = header(ctx);
  out += fmt::format("connectivity: all {} ranks allocated, met and all-reduced {:.0f} bytes: {} wrong elements, busbw "
                     "{:.2f} GB/s\n",
                     r.world, r.all_reduce_bytes, r.all_reduce_errors, r.all_reduce_busbw_bytes_per_s / 1e9);
  if (!r.on_gpu) {
    out += "CPU probes: no CUDA device here, so the GEMM and copy rates are this host's CPU and memory, not a GPU's; "
           "a memcpy's rate can differ by process (its pages), beyond what its repeats show (docs/bench.md "
           "\"Health\")\n";
  }
  out += fmt::format("probes ({} repeats each): {}; {}\n", r.repeats, r.gemm_probe, r.memory_probe);
  out += fmt::format("{:>5} {:<10} {:<20} {:>14} {:>7} {:>11} {:>7} {:>16}\n", "rank", "device", "host", "GEMM (TFLOP/s)",
                     "± %", "copy (GB/s)", "± %", "send/recv (GB/s)");
  for (const health_rank& h : r.ranks) {
    out += fmt::format("{:>5} {:<10} {:<20} {:>14.3f} {:>7.1f} {:>11.2f} {:>7.1f} {:>16.2f}\n", h.rank, h.name, h.host,
                       h.gemm_flops_per_s / 1e12, 100 * h.gemm_spread, h.memory_bytes_per_s / 1e9, 100 * h.memory_spread,
                       h.sendrecv_busbw_bytes_per_s / 1e9);
  }
  out += "rates: the median of the repeats; ± %: their spread, the robust σ of ln(rate) (1.4826 × the median |ln(rate / median)|; for a small scatter, the relative σ)\n";
  auto list = [&](const char* what, const std::vector<slow_finding>& v, double unit, const char* units) {
    for (const slow_finding& s : v) {
      out += fmt::format("SLOW {}: {}: {:.3f} {} against the others' median of {:.3f} ({:.1f}% slower; threshold {:.1f}%, "
                         "noise ±{:.1f}%)\n",
                         what, s.who, s.value / unit, units, s.median / unit, 100 * s.shortfall, 100 * r.threshold,
                         100 * s.noise);
    }
  };
  list("GEMM", r.slow_gemm, 1e12, "TFLOP/s");
  list("memory", r.slow_memory, 1e9, "GB/s");
  if (r.slow_gemm.empty() && r.slow_memory.empty() && r.all_reduce_errors == 0) {
    out += fmt::format("healthy: no rank or node is more than {:.1f}% below the others' median and {:.0f}σ of the repeats' "
                       "spread\n",
                       100 * r.threshold, r.z_score);
  }
  return out;
}

}  // namespace trainplan::bench
