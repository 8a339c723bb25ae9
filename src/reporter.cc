// The reporters (text, JSON, CSV) over the render_* functions, the run context's JSON, and the output
// format's name (docs/README: "Compute once, render many").
#include <array>
#include <string>

#include <fmt/format.h>

#include "report_detail.h"
#include "trainplan/error.h"
#include "trainplan/report.h"

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
  c["parallel"] = parallel_json(job);
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

namespace {

constexpr std::array<std::string_view, 3> kFormatNames = {"text", "json", "csv"};

class text_reporter final : public reporter {
 public:
  output_format format() const override { return output_format::text; }
  std::string models() const override { return render_models_text(); }
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
};

class json_reporter final : public reporter {
 public:
  output_format format() const override { return output_format::json; }
  std::string models() const override { return render_models_json(); }
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
};

/// CSV: the tabular results (search candidates, validation rows); the others have no CSV form.
class csv_reporter final : public reporter {
 public:
  output_format format() const override { return output_format::csv; }
  std::string models() const override { return none("models"); }
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

 private:
  static std::string none(const char* command) {
    throw input_error(std::string("--format csv: `") + command +
                      "` has no CSV form (search and validate have one); use --format text or json");
  }
};

}  // namespace

std::string_view to_string(output_format f) { return kFormatNames[static_cast<std::size_t>(f)]; }

output_format parse_output_format(std::string_view name) {
  for (std::size_t i = 0; i < kFormatNames.size(); ++i) {
    if (kFormatNames[i] == name) return static_cast<output_format>(i);
  }
  throw input_error("--format must be text, json or csv, got '" + std::string(name) + "'" +
                    did_you_mean(name, {"text", "json", "csv"}));
}

std::unique_ptr<reporter> make_reporter(output_format f) {
  switch (f) {
    case output_format::text: return std::make_unique<text_reporter>();
    case output_format::json: return std::make_unique<json_reporter>();
    case output_format::csv: return std::make_unique<csv_reporter>();
  }
  TRAINPLAN_CHECK(false);
  return nullptr;
}

}  // namespace trainplan
