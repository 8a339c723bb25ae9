// The reporters' shared pieces: the tool's version, the run context's JSON, the GPU and cluster catalogs
// in every format, the output format's name and make_reporter (docs/README: "Compute
// once, render many"). Each reporter class is declared in reporters.h.
#include <array>
#include <string>

#include <fmt/format.h>

#include "report_detail.h"
#include "reporters.h"
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
  c["overridden_flags"] = ctx->overridden_flags;
  c["derived_flags"] = ctx->derived_flags;
  return c;
}

}  // namespace detail

std::string text_reporter::gpus() const {
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

std::string json_reporter::gpus() const {
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

std::string text_reporter::clusters() const {
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

std::string json_reporter::clusters() const {
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

}  // namespace

std::string_view to_string(output_format f) { return kFormatNames[static_cast<std::size_t>(f)]; }

output_format parse_output_format(std::string_view name) {
  for (std::size_t i = 0; i < kFormatNames.size(); ++i) {
    if (kFormatNames[i] == name) return static_cast<output_format>(i);
  }
  throw input_error("--format must be text, json, csv or html, got '" + std::string(name) + "'" +
                    did_you_mean(name, {"text", "json", "csv", "html"}));
}

std::string csv_reporter::none(const char* command) {
  throw input_error(std::string("--format csv: `") + command +
                    "` has no CSV form (search and validate have one); use --format text or json");
}

std::unique_ptr<reporter> make_reporter(output_format f) {
  switch (f) {
    case output_format::text: return std::make_unique<text_reporter>();
    case output_format::json: return std::make_unique<json_reporter>();
    case output_format::csv: return std::make_unique<csv_reporter>();
    case output_format::html: return std::make_unique<html_reporter>();
  }
  TRAINPLAN_CHECK(false);
  return nullptr;
}

}  // namespace trainplan
