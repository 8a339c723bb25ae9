// The reporters, one class per format (google/benchmark's ConsoleReporter, JSONReporter, CSVReporter):
// each owns its formatting of every result it has a form for, defined beside the other formats of the
// same result (src/report/<result>.cc); a format without a form refuses it (none). Internal header.
#pragma once

#include <string>

#include "trainplan/report/report.h"

namespace trainplan {

/// Plain text for a terminal: tables, units, the job line and what was ignored.
class text_reporter final : public reporter {
 public:
  output_format format() const override { return output_format::text; }
  std::string models() const override;
  std::string gpus() const override;
  std::string clusters() const override;
  std::string model(const model_spec& m, const parameter_breakdown& p, std::int64_t tp) const override;
  std::string memory(const run_context& ctx, const parameter_breakdown& p, const memory_report& r,
                     const megatron_theoretical_memory* megatron) const override;
  std::string comm(const run_context& ctx, const comm_report& r) const override;
  std::string time(const run_context& ctx, const time_report& r) const override;
  std::string schedule(const run_context& ctx, const time_report& r) const override;
  std::string validation(const validation_report& r) const override;
  std::string search(const run_context& ctx, const search_space& s, const search_result& r) const override;
  std::string shapes(const shape_rules& rules, const shapes_result& r) const override;
  std::string plan(const plan_report& r, std::int64_t num_gpus) const override;
  std::string logs(const run_context* ctx, const log_report& r, const log_plan_comparison* c) const override;
  std::string logs_update(const run_context* ctx, const log_report& r, const log_plan_comparison* c) const override;
};

/// JSON documents with schema_version and the run context.
class json_reporter final : public reporter {
 public:
  output_format format() const override { return output_format::json; }
  std::string models() const override;
  std::string gpus() const override;
  std::string clusters() const override;
  std::string model(const model_spec& m, const parameter_breakdown& p, std::int64_t tp) const override;
  std::string memory(const run_context& ctx, const parameter_breakdown& p, const memory_report& r,
                     const megatron_theoretical_memory* megatron) const override;
  std::string comm(const run_context& ctx, const comm_report& r) const override;
  std::string time(const run_context& ctx, const time_report& r) const override;
  std::string schedule(const run_context& ctx, const time_report& r) const override;
  std::string validation(const validation_report& r) const override;
  std::string search(const run_context& ctx, const search_space& s, const search_result& r) const override;
  std::string shapes(const shape_rules& rules, const shapes_result& r) const override;
  std::string plan(const plan_report& r, std::int64_t num_gpus) const override;
  std::string logs(const run_context* ctx, const log_report& r, const log_plan_comparison* c) const override;
  /// One line per update: JSON Lines for --follow.
  std::string logs_update(const run_context* ctx, const log_report& r, const log_plan_comparison* c) const override;
};

/// CSV: the tabular results (search candidates, validation rows); the others have no CSV form.
class csv_reporter final : public reporter {
 public:
  output_format format() const override { return output_format::csv; }
  std::string models() const override { return none("models"); }
  std::string gpus() const override { return none("gpus"); }
  std::string clusters() const override { return none("clusters"); }
  std::string model(const model_spec&, const parameter_breakdown&, std::int64_t) const override { return none("model"); }
  std::string memory(const run_context&, const parameter_breakdown&, const memory_report&,
                     const megatron_theoretical_memory*) const override {
    return none("memory");
  }
  std::string comm(const run_context&, const comm_report&) const override { return none("comm"); }
  std::string time(const run_context&, const time_report&) const override { return none("time"); }
  std::string schedule(const run_context&, const time_report&) const override { return none("schedule"); }
  std::string validation(const validation_report& r) const override;
  std::string search(const run_context& ctx, const search_space& s, const search_result& r) const override;
  std::string shapes(const shape_rules&, const shapes_result&) const override { return none("shapes"); }
  std::string plan(const plan_report&, std::int64_t) const override { return none("plan"); }
  std::string logs(const run_context*, const log_report&, const log_plan_comparison*) const override {
    return none("logs");
  }
  std::string logs_update(const run_context*, const log_report&, const log_plan_comparison*) const override {
    return none("logs");
  }

 private:
  [[noreturn]] static std::string none(const char* command);
};

/// One self-contained page of charts per result (src/report/html*.cc); catalogs, validation and logs
/// have no HTML form.
class html_reporter final : public reporter {
 public:
  output_format format() const override { return output_format::html; }
  std::string models() const override { return none("models"); }
  std::string gpus() const override { return none("gpus"); }
  std::string clusters() const override { return none("clusters"); }
  std::string model(const model_spec&, const parameter_breakdown&, std::int64_t) const override { return none("model"); }
  std::string memory(const run_context& ctx, const parameter_breakdown& p, const memory_report& r,
                     const megatron_theoretical_memory* megatron) const override;
  std::string comm(const run_context& ctx, const comm_report& r) const override;
  std::string time(const run_context& ctx, const time_report& r) const override;
  std::string schedule(const run_context& ctx, const time_report& r) const override;
  std::string validation(const validation_report&) const override { return none("validate"); }
  std::string search(const run_context& ctx, const search_space& s, const search_result& r) const override;
  std::string shapes(const shape_rules& rules, const shapes_result& r) const override;
  std::string plan(const plan_report& r, std::int64_t num_gpus) const override;
  std::string logs(const run_context*, const log_report&, const log_plan_comparison*) const override {
    return none("logs");
  }
  std::string logs_update(const run_context*, const log_report&, const log_plan_comparison*) const override {
    return none("logs");
  }

 private:
  [[noreturn]] static std::string none(const char* command);
};

}  // namespace trainplan
