// The HTML report (`--html FILE`, `trainplan report`): one self-contained page per result, with inline SVG
// charts (include/trainplan/report/svg.h) and an inline style sheet for light, dark and print; no network, fonts
// or external scripts. One function per chart; each draws a result struct the other renderers use and
// computes no estimate.
#pragma once

#include <string>
#include <vector>

#include "trainplan/report/report.h"

namespace trainplan {

/// One section of a page: a heading, a sentence under it, and its body (SVG, tables).
struct html_section {
  std::string heading;
  std::string caption;
  std::string body;
};

/// A whole page. `context`, when given, is the job line under the title.
std::string html_page(const std::string& title, const run_context* context, const std::vector<html_section>& sections);

// ---- the charts (src/report/html_charts.cc) ----

/// A stacked bar per pipeline stage (weights, gradients, optimizer, activations, transients and buffers,
/// allocator reserve and CUDA context) against the usable-capacity line; Megatron's theoretical figure
/// beside the first stage when given.
html_section html_memory_section(const memory_report& r, const megatron_theoretical_memory* megatron);
/// Compute, exposed TP/CP/EP, bubble and p2p, exposed DP, optimizer: one stacked bar; MFU and HFU.
html_section html_time_section(const time_report& r);
/// The schedule's Gantt chart, one row per pipeline rank (needs the events of schedule_timeline); a
/// first-period and a last-period panel when the schedule is long.
html_section html_schedule_section(const time_report& r);
/// Bytes and time per dimension, and the rank grid (n<node>_g<gpu>) coloured by group, one per dimension.
html_section html_comm_section(const comm_report& r);
/// Every evaluated layout: time against peak memory, coloured by TP, the Pareto front, the usable
/// line, and the top K as a table sortable by column.
html_section html_search_section(const search_space& s, const search_result& r, std::size_t top_k);
html_section html_shapes_section(const shapes_result& r);
/// The campaign: phases over days with the overheads, and the GPU-hour budget.
html_section html_plan_section(const plan_report& r, std::int64_t num_gpus);

/// Write `content` to `path` through a temporary file in the same folder and a rename: nothing
/// half-written. Throws input_error naming the path (and `flag`) when it cannot.
void write_file_atomically(const std::string& path, const std::string& content, const std::string& flag = "--html");

}  // namespace trainplan
