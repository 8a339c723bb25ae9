// The reporters (text, JSON, CSV) over the render_* functions, the run context's JSON, and the output
// format's name (docs/README: "Compute once, render many").
#include <array>
#include <string>

#include <fmt/format.h>

#include "report_detail.h"
#include "trainplan/core/base/error.h"
#include "trainplan/core/hardware/hardware.h"
#include "trainplan/report/report.h"

#ifndef TRAINPLAN_VERSION
#error "TRAINPLAN_VERSION is set by CMake (the project's version)"
#endif

namespace trainplan {

std::string_view tool_version() { return TRAINPLAN_VERSION; }

namespace detail {

json context_json(const run_context* ctx) {
  json c = {{"tool", "trainplan"}, {"version", tool_version()}, {"schema_version", kSchemaVersion}};
  if (ctx == nullptr || !ctx->has_job) return c;
  const job_spec& job = ctx->job;
  c["model"] = job.model.name;
  c["cluster"] = job.cluster.name;
  c["gpu"] = job.cluster.gpu.name;
  c["seq_length"] = job.model.seq_length;
  c["seq_length_source"] = ctx->seq_length_given ? "flag" : "model";
  if (ctx->has_layout) c["parallel"] = parallel_json(job);
  if (!ctx->preset.empty()) c["preset"] = ctx->preset;
  c["from_launch_line"] = ctx->from_launch_line;
  c["ignored_flags"] = ctx->ignored_flags;
  return c;
}

}  // namespace detail

std::string render_validation_csv(const validation_report& r) {
  std::string o = "table,label,date,measured_s,predicted_s,error,measured_tflops,predicted_tflops,skipped\n";
  auto quoted = [](const std::string& v) {
    if (v.find_first_of(",\"\n") == std::string::npos) return v;
    std::string q = "\"";
    for (char ch : v) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
    return q + "\"";
  };
  for (const validation_row& v : r.rows) {
    o += fmt::format("{},{},{},{},{},{},{},{},{}\n", quoted(v.table), quoted(v.label), quoted(v.date), v.measured_s,
                     v.predicted_s, v.error, v.measured_tflops, v.predicted_tflops, quoted(v.skipped));
  }
  return o;
}

std::string render_gpus_text() {
  std::string o = fmt::format("{:<16} {:<7} {:>9} {:>10} {:>10} {:>10} {:>9} {:>12} {:>5}  {}\n", "NAME", "VENDOR",
                              "HBM GiB", "USABLE GiB", "BF16 TF/s", "FP8 TF/s", "HBM TB/s", "LINK GB/s", "SMS",
                              "SOURCE");
  for (const gpu_spec& g : gpu_catalog()) {
    o += fmt::format("{:<16} {:<7} {:>9.1f} {:>10.1f} {:>10.1f} {:>10.1f} {:>9.2f} {:>12.0f} {:>5}  {}\n", g.name,
                     g.vendor, static_cast<double>(g.memory_bytes) / detail::kGiB,
                     static_cast<double>(g.usable_memory_bytes) / detail::kGiB, g.peak_bf16_flops / 1e12,
                     g.peak_fp8_flops / 1e12, g.memory_bandwidth_bytes_per_s / 1e12,
                     g.intra_node_bandwidth_bytes_per_s / 1e9, g.sm_count, g.source);
  }
  o += "\nDense peaks (no sparsity); LINK: NVLink/xGMI per GPU, one direction; GiB = 2^30 bytes. A cluster file "
       "can describe any other (docs/formulas.md §6.3).\n";
  return o;
}

std::string render_gpus_json() {
  detail::json list = detail::json::array();
  for (const gpu_spec& g : gpu_catalog()) {
    list.push_back({{"name", g.name},
                    {"vendor", g.vendor},
                    {"memory_bytes", g.memory_bytes},
                    {"usable_memory_bytes", g.usable_memory_bytes},
                    {"peak_bf16_flops", g.peak_bf16_flops},
                    {"peak_fp8_flops", g.peak_fp8_flops},
                    {"memory_bandwidth_bytes_per_s", g.memory_bandwidth_bytes_per_s},
                    {"intra_node_bandwidth_bytes_per_s", g.intra_node_bandwidth_bytes_per_s},
                    {"sm_count", g.sm_count},
                    {"source", g.source}});
  }
  detail::json j = {{"schema_version", kSchemaVersion}, {"context", detail::context_json()}, {"gpus", list}};
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string render_clusters_text() {
  std::string o = fmt::format("{:<16} {:<16} {:>9} {:>6} {:>5} {:>9} {:>8}  {}\n", "NAME", "GPU", "GPUS/NODE",
                              "NODES", "NICS", "NIC Gb/s", "NET GB/s", "INTERCONNECT");
  for (const cluster_spec& c : cluster_catalog()) {
    o += fmt::format("{:<16} {:<16} {:>9} {:>6} {:>5} {:>9.0f} {:>8.1f}  {}\n", c.name, c.gpu.name, c.gpus_per_node,
                     c.num_nodes, c.nics_per_node, c.nic_bandwidth_bytes_per_s * 8 / 1e9,
                     c.node_network_bandwidth_bytes_per_s() / 1e9, c.interconnect);
  }
  o += "\nNODES: the cluster's default size (--num-nodes or --num-gpus set the job's); NET: all NICs of a node, "
       "one direction.\n";
  return o;
}

std::string render_clusters_json() {
  detail::json list = detail::json::array();
  for (const cluster_spec& c : cluster_catalog()) {
    list.push_back({{"name", c.name},
                    {"gpu", c.gpu.name},
                    {"gpus_per_node", c.gpus_per_node},
                    {"num_nodes", c.num_nodes},
                    {"nics_per_node", c.nics_per_node},
                    {"nic_bandwidth_bytes_per_s", c.nic_bandwidth_bytes_per_s},
                    {"interconnect", c.interconnect},
                    {"source", c.source}});
  }
  detail::json j = {{"schema_version", kSchemaVersion}, {"context", detail::context_json()}, {"clusters", list}};
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

namespace {

constexpr std::array<std::string_view, 4> kFormatNames = {"text", "json", "csv", "html"};

class text_reporter final : public reporter {
 public:
  output_format format() const override { return output_format::text; }
  std::string models() const override { return render_models_text(); }
  std::string gpus() const override { return render_gpus_text(); }
  std::string clusters() const override { return render_clusters_text(); }
  std::string model(const model_spec& m, const parameter_breakdown& p, std::int64_t tp) const override {
    return render_model_text(m, p, tp);
  }
  std::string memory(const run_context& ctx, const parameter_breakdown& p, const memory_report& r,
                     const megatron_theoretical_memory* megatron) const override {
    return render_memory_text(ctx, p, r, megatron);
  }
  std::string comm(const run_context& ctx, const comm_report& r) const override { return render_comm_text(ctx, r); }
  std::string time(const run_context& ctx, const time_report& r) const override { return render_time_text(ctx, r); }
  std::string schedule(const run_context& ctx, const time_report& r) const override {
    return render_schedule_text(ctx, r);
  }
  std::string validation(const validation_report& r) const override { return render_validation_text(r); }
  std::string search(const run_context& ctx, const search_space& s, const search_result& r) const override {
    return render_search_text(ctx, s, r);
  }
  std::string shapes(const shape_rules& rules, const shapes_result& r) const override {
    return render_shapes_text(rules, r);
  }
  std::string plan(const plan_report& r, std::int64_t num_gpus) const override { return render_plan_text(r, num_gpus); }
  std::string logs(const run_context* ctx, const log_report& r, const log_plan_comparison* c) const override {
    return render_logs_text(ctx, r, c);
  }
};

class json_reporter final : public reporter {
 public:
  output_format format() const override { return output_format::json; }
  std::string models() const override { return render_models_json(); }
  std::string gpus() const override { return render_gpus_json(); }
  std::string clusters() const override { return render_clusters_json(); }
  std::string model(const model_spec& m, const parameter_breakdown& p, std::int64_t tp) const override {
    return render_model_json(m, p, tp);
  }
  std::string memory(const run_context& ctx, const parameter_breakdown& p, const memory_report& r,
                     const megatron_theoretical_memory* megatron) const override {
    return render_memory_json(ctx, p, r, megatron);
  }
  std::string comm(const run_context& ctx, const comm_report& r) const override { return render_comm_json(ctx, r); }
  std::string time(const run_context& ctx, const time_report& r) const override { return render_time_json(ctx, r); }
  std::string schedule(const run_context& ctx, const time_report& r) const override {
    return render_schedule_json(ctx, r);
  }
  std::string validation(const validation_report& r) const override { return render_validation_json(r); }
  std::string search(const run_context& ctx, const search_space& s, const search_result& r) const override {
    return render_search_json(ctx, s, r);
  }
  std::string shapes(const shape_rules& rules, const shapes_result& r) const override {
    return render_shapes_json(rules, r);
  }
  std::string plan(const plan_report& r, std::int64_t) const override { return render_plan_json(r); }
  std::string logs(const run_context* ctx, const log_report& r, const log_plan_comparison* c) const override {
    return render_logs_json(ctx, r, c);
  }
};

/// CSV: the tabular results (search candidates, validation rows); the others have no CSV form.
class csv_reporter final : public reporter {
 public:
  output_format format() const override { return output_format::csv; }
  std::string models() const override { return none("models"); }
  std::string gpus() const override { return none("gpus"); }
  std::string clusters() const override { return none("clusters"); }
  std::string model(const model_spec&, const parameter_breakdown&, std::int64_t) const override {
    return none("model");
  }
  std::string memory(const run_context&, const parameter_breakdown&, const memory_report&,
                     const megatron_theoretical_memory*) const override {
    return none("memory");
  }
  std::string comm(const run_context&, const comm_report&) const override { return none("comm"); }
  std::string time(const run_context&, const time_report&) const override { return none("time"); }
  std::string schedule(const run_context&, const time_report&) const override { return none("schedule"); }
  std::string validation(const validation_report& r) const override { return render_validation_csv(r); }
  std::string search(const run_context&, const search_space&, const search_result& r) const override {
    return render_search_csv(r);
  }
  std::string shapes(const shape_rules&, const shapes_result&) const override { return none("shapes"); }
  std::string plan(const plan_report&, std::int64_t) const override { return none("plan"); }
  std::string logs(const run_context*, const log_report&, const log_plan_comparison*) const override {
    return none("logs");
  }

 private:
  static std::string none(const char* command) {
    throw input_error(std::string("--format csv: `") + command +
                      "` has no CSV form (search and validate have one); use --format text or json");
  }
};

}  // namespace

std::unique_ptr<reporter> make_html_reporter();  // src/report/reporter_html.cc

std::string_view to_string(output_format f) { return kFormatNames[static_cast<std::size_t>(f)]; }

output_format parse_output_format(std::string_view name) {
  for (std::size_t i = 0; i < kFormatNames.size(); ++i) {
    if (kFormatNames[i] == name) return static_cast<output_format>(i);
  }
  throw input_error("--format must be text, json, csv or html, got '" + std::string(name) + "'" +
                    did_you_mean(name, {"text", "json", "csv", "html"}));
}

std::unique_ptr<reporter> make_reporter(output_format f) {
  switch (f) {
    case output_format::text: return std::make_unique<text_reporter>();
    case output_format::json: return std::make_unique<json_reporter>();
    case output_format::csv: return std::make_unique<csv_reporter>();
    case output_format::html: return make_html_reporter();
  }
  TRAINPLAN_CHECK(false);
  return nullptr;
}

}  // namespace trainplan
