// The HTML reporter (`--html FILE`, `--format html`): each result as a self-contained page of charts
// (include/trainplan/report/html.h). Catalogs, validation and logs have no HTML form.
#include <memory>
#include <string>

#include "trainplan/core/base/error.h"
#include "trainplan/report/html.h"
#include "trainplan/report/report.h"

namespace trainplan {

namespace {

std::string title_of(const char* what, const run_context& ctx) {
  return ctx.has_job ? std::string(what) + ": " + ctx.job.model.name : std::string(what);
}

class html_reporter final : public reporter {
 public:
  output_format format() const override { return output_format::html; }
  std::string models() const override { return none("models"); }
  std::string gpus() const override { return none("gpus"); }
  std::string clusters() const override { return none("clusters"); }
  std::string model(const model_spec&, const parameter_breakdown&, std::int64_t) const override { return none("model"); }
  std::string memory(const run_context& ctx, const parameter_breakdown&, const memory_report& r,
                     const megatron_theoretical_memory* megatron) const override {
    return html_page(title_of("Memory", ctx), &ctx, {html_memory_section(r, megatron)});
  }
  std::string comm(const run_context& ctx, const comm_report& r) const override {
    return html_page(title_of("Communication", ctx), &ctx, {html_comm_section(r)});
  }
  std::string time(const run_context& ctx, const time_report& r) const override {
    return html_page(title_of("Iteration time", ctx), &ctx, {html_time_section(r)});
  }
  std::string schedule(const run_context& ctx, const time_report& r) const override {
    return html_page(title_of("Pipeline schedule", ctx), &ctx, {html_schedule_section(r), html_time_section(r)});
  }
  std::string validation(const validation_report&) const override { return none("validate"); }
  std::string search(const run_context& ctx, const search_space& s, const search_result& r) const override {
    return html_page(title_of("Layout search", ctx), &ctx, {html_search_section(s, r, static_cast<std::size_t>(s.top_k))});
  }
  std::string shapes(const shape_rules&, const shapes_result& r) const override {
    return html_page("Model shapes", nullptr, {html_shapes_section(r)});
  }
  std::string plan(const plan_report& r, std::int64_t num_gpus) const override {
    return html_page("Training plan", nullptr, {html_plan_section(r, num_gpus)});
  }
  std::string logs(const run_context*, const log_report&, const log_plan_comparison*) const override { return none("logs"); }

 private:
  static std::string none(const char* command) {
    throw input_error(std::string("--html: `") + command +
                      "` has no HTML form (memory, time, schedule, comm, search, shapes, plan and report have one)");
  }
};

}  // namespace

std::unique_ptr<reporter> make_html_reporter() { return std::make_unique<html_reporter>(); }

}  // namespace trainplan
