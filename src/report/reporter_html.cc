// The HTML reporter (`--html FILE`, `--format html`): each result as a self-contained page of charts
// (include/trainplan/report/html.h). Catalogs, validation and logs have no HTML form.
#include <memory>
#include <string>

#include "trainplan/core/base/error.h"
#include "trainplan/report/html.h"
#include "trainplan/report/report.h"
#include "reporters.h"

namespace trainplan {

namespace {

std::string title_of(const char* what, const run_context& ctx) {
  return ctx.has_job ? std::string(what) + ": " + model_label(ctx.job) : std::string(what);
}

}  // namespace

std::string html_reporter::memory(const run_context& ctx, const parameter_breakdown&, const memory_report& r,
                                  const megatron_theoretical_memory* megatron) const {
  return html_page(title_of("Memory", ctx), &ctx, {html_memory_section(r, megatron)});
}
std::string html_reporter::comm(const run_context& ctx, const comm_report& r) const {
  return html_page(title_of("Communication", ctx), &ctx, {html_comm_section(r)});
}
std::string html_reporter::time(const run_context& ctx, const time_report& r) const {
  return html_page(title_of("Iteration time", ctx), &ctx, {html_time_section(r)});
}
std::string html_reporter::schedule(const run_context& ctx, const time_report& r) const {
  return html_page(title_of("Pipeline schedule", ctx), &ctx, {html_schedule_section(r), html_time_section(r)});
}
std::string html_reporter::search(const run_context& ctx, const search_space& s, const search_result& r) const {
  return html_page(title_of("Layout search", ctx), &ctx, {html_search_section(s, r, static_cast<std::size_t>(s.top_k))});
}
std::string html_reporter::shapes(const shape_rules&, const shapes_result& r) const {
  return html_page("Model shapes", nullptr, {html_shapes_section(r)});
}
std::string html_reporter::plan(const plan_report& r, std::int64_t num_gpus) const {
  return html_page("Training plan", nullptr, {html_plan_section(r, num_gpus)});
}

std::string html_reporter::none(const char* command) {
  throw input_error(std::string("--html: `") + command +
                    "` has no HTML form (memory, time, schedule, comm, search, shapes, plan and report have one)");
}

}  // namespace trainplan
