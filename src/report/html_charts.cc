// One function per chart of the HTML report (include/trainplan/report/html.h). Each draws a result struct with
// the SVG writer: scales, bars and labels only; the numbers are the result's.
#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "report_detail.h"
#include "trainplan/report/html.h"
#include "trainplan/report/svg.h"

namespace trainplan {

namespace {

constexpr double kGiB = 1073741824.0;
constexpr double kWidth = 900;
constexpr double kLeft = 80, kRight = 20, kTop = 34;

std::string palette(std::size_t i) { return fmt::format("p{}", i % 10); }

std::string gib(double bytes) { return fmt::format("{:.1f} GiB", bytes / kGiB); }

std::string seconds(double s) { return s >= 100 ? fmt::format("{:.1f} s", s) : fmt::format("{:.3g} s", s); }

/// A table: header cells, then rows of (shown text, sort value or "").
std::string table(const std::vector<std::string>& header, const std::vector<std::vector<std::pair<std::string, std::string>>>& rows,
                  bool sortable) {
  std::string o = sortable ? "<table class=\"sortable\">\n<thead><tr>" : "<table>\n<thead><tr>";
  for (const auto& h : header) o += "<th>" + svg::escape(h) + "</th>";
  o += "</tr></thead>\n<tbody>\n";
  for (const auto& row : rows) {
    o += "<tr>";
    for (const auto& [text, value] : row) {
      o += value.empty() ? "<td>" : "<td data-v=\"" + svg::escape(value) + "\">";
      o += svg::escape(text) + "</td>";
    }
    o += "</tr>\n";
  }
  return o + "</tbody>\n</table>\n";
}

}  // namespace

// ---- memory ---------------------------------------------------------------------------------------------

html_section html_memory_section(const memory_report& r, const megatron_theoretical_memory* megatron) {
  const double height = 380, bottom = height - 60;
  const std::size_t n = r.stages.size();
  double top_bytes = r.capacity_bytes;
  for (const stage_memory& s : r.stages) top_bytes = std::max(top_bytes, s.reserved_bytes);
  if (megatron != nullptr) top_bytes = std::max(top_bytes, megatron->total());
  const svg::scale y{0, top_bytes / kGiB * 1.08, bottom, kTop};
  const double slots = static_cast<double>(n) + (megatron != nullptr ? 1.0 : 0.0);
  const double band = (kWidth - kLeft - kRight) / std::max(1.0, slots);
  const svg::scale x{0, slots, kLeft, kWidth - kRight};
  svg::canvas c(kWidth, height, "Memory per GPU by pipeline stage");
  svg::axes(c, svg::scale{0, slots, kLeft, kWidth - kRight}, y, "", "memory per GPU (GiB)", false);
  const std::vector<std::pair<std::string, std::string>> names = {
      {"p0", "weights"}, {"p1", "gradients"}, {"p2", "optimizer"}, {"p3", "activations"},
      {"p4", "transients and buffers"}, {"p9", "allocator reserve and CUDA context"}};
  for (std::size_t i = 0; i < n; ++i) {
    const stage_memory& s = r.stages[i];
    const double parts[] = {s.weights_bytes, s.gradients_bytes, s.optimizer_bytes, s.activations_bytes, s.other_bytes,
                            std::max(0.0, s.reserved_bytes - s.allocated_bytes)};
    double base = 0;
    const double bx = x(static_cast<double>(i)) + band * 0.15;
    for (std::size_t k = 0; k < names.size(); ++k) {
      const double top = base + parts[k];
      c.rect(bx, y(top / kGiB), band * 0.7, y(base / kGiB) - y(top / kGiB), names[k].first,
             fmt::format("stage {}: {} {}", s.stage, names[k].second, gib(parts[k])));
      base = top;
    }
    if (n <= 24 || i % ((n + 23) / 24) == 0) c.text(bx + band * 0.35, bottom + 16, std::to_string(s.stage), "tick", "middle");
  }
  if (megatron != nullptr) {
    const double bx = x(static_cast<double>(n)) + band * 0.15;
    c.rect(bx, y(megatron->total() / kGiB), band * 0.7, bottom - y(megatron->total() / kGiB), "outline",
           fmt::format("Megatron-LM theoretical, most loaded GPU: {}", gib(megatron->total())));
    c.text(bx + band * 0.35, bottom + 16, "Megatron", "tick", "middle");
  }
  c.line(kLeft, y(r.capacity_bytes / kGiB), kWidth - kRight, y(r.capacity_bytes / kGiB), "capacity");
  c.text(kWidth - kRight, y(r.capacity_bytes / kGiB) - 5, "usable " + gib(r.capacity_bytes), "note", "end");
  c.text((kLeft + kWidth - kRight) / 2, bottom + 34, "pipeline stage", "axis-label", "middle");
  svg::legend(c, kLeft, 18, names);
  html_section s{"Memory per GPU",
                 fmt::format("Peak {} reserved on stage {} of {} usable: {}.", gib(r.peak_reserved_bytes), r.peak_stage,
                             gib(r.capacity_bytes), r.fits ? "fits" : "DOES NOT FIT"),
                 c.str()};
  if (megatron != nullptr) s.caption += " The dashed bar is Megatron-LM's theoretical figure (§3.9), without reserve or context.";
  return s;
}

// ---- time -----------------------------------------------------------------------------------------------

html_section html_time_section(const time_report& r) {
  const time_breakdown& b = r.breakdown;
  const std::vector<std::pair<std::string, double>> parts = {{"compute", b.compute_s},
                                                             {"exposed TP/CP/EP", b.tp_comm_s},
                                                             {"pipeline bubble and p2p", b.pipeline_s},
                                                             {"exposed DP", b.dp_comm_s},
                                                             {"optimizer", b.optimizer_s}};
  double total = 0;
  for (const auto& p : parts) total += p.second;
  const double height = 170, bar_y = 60, bar_h = 40;
  svg::canvas c(kWidth, height, "Where the iteration time goes");
  const svg::scale x{0, std::max(total, 1e-9) * 1.02, kLeft, kWidth - kRight};
  double at = 0;
  std::vector<std::pair<std::string, std::string>> legend;
  // The timeline's colours: exposed DP and the optimizer as in the Gantt chart.
  static const std::array<const char*, 5> kClasses = {"p0", "p6", "p9", "p2", "p4"};
  for (std::size_t i = 0; i < parts.size(); ++i) {
    c.rect(x(at), bar_y, x(at + parts[i].second) - x(at), bar_h, kClasses[i],
           fmt::format("{}: {} ({:.1f}%)", parts[i].first, seconds(parts[i].second), total > 0 ? 100 * parts[i].second / total : 0.0));
    legend.emplace_back(kClasses[i], fmt::format("{} {}", parts[i].first, seconds(parts[i].second)));
    at += parts[i].second;
  }
  for (double t : svg::nice_ticks(0, x.hi)) {
    c.line(x(t), bar_y + bar_h, x(t), bar_y + bar_h + 5, "axis");
    c.text(x(t), bar_y + bar_h + 18, svg::tick_label(t), "tick", "middle");
  }
  c.text((kLeft + kWidth - kRight) / 2, bar_y + bar_h + 36, "time per iteration (s)", "axis-label", "middle");
  svg::legend(c, kLeft, 24, {legend.begin(), legend.begin() + 3});
  svg::legend(c, kLeft, 44, {legend.begin() + 3, legend.end()});
  std::string caption = fmt::format("{} per iteration, {:.1f} TFLOPs/GPU, MFU {:.1f}%, HFU {:.1f}%, bubble {:.1f}%.",
                                    seconds(r.iteration_s), r.tflops_per_gpu, 100 * r.mfu, 100 * r.hfu, 100 * r.bubble_fraction);
  if (!r.fits) caption += " The layout does not fit in memory: this time is for a job that cannot run.";
  return {"Where the time goes", caption, c.str()};
}

// ---- schedule -------------------------------------------------------------------------------------------

namespace {

/// One Gantt panel over [t0, t1]: a row per rank, forward and backward boxes, the exposed DP reduction
/// and the optimizer after the pipeline.
void gantt_panel(svg::canvas& c, const time_report& r, double t0, double t1, double x0, double x1, double y0,
                 std::string_view title) {
  const std::size_t ranks = r.pipeline.stages.size();
  const double row = std::clamp(260.0 / static_cast<double>(std::max<std::size_t>(1, ranks)), 8.0, 26.0);
  const svg::scale x{t0, t1, x0, x1};
  c.text(x0, y0 - 8, title, "label");
  for (std::size_t s = 0; s < ranks; ++s) {
    const double ry = y0 + static_cast<double>(s) * row;
    c.rect(x0, ry, x1 - x0, row - 2, "idle", fmt::format("rank {}: idle (bubble)", s));
    c.text(x0 - 6, ry + row / 2 + 4, fmt::format("PP {}", s), "tick", "end");
    const stage_usage& u = r.pipeline.stages[s];
    const double dp_end = u.pipeline_end_s + u.grad_reduce_exposed_s;
    if (u.grad_reduce_exposed_s > 0 && dp_end > t0 && u.pipeline_end_s < t1) {
      c.rect(x(std::max(t0, u.pipeline_end_s)), ry, x(std::min(t1, dp_end)) - x(std::max(t0, u.pipeline_end_s)), row - 2,
             "p2", fmt::format("rank {}: exposed DP reduction {}", s, seconds(u.grad_reduce_exposed_s)));
    }
    const double opt0 = r.timeline_s - r.pipeline.optimizer_s;
    if (r.pipeline.optimizer_s > 0 && r.timeline_s > t0 && opt0 < t1) {
      c.rect(x(std::max(t0, opt0)), ry, x(std::min(t1, r.timeline_s)) - x(std::max(t0, opt0)), row - 2, "p4",
             fmt::format("rank {}: optimizer step {}", s, seconds(r.pipeline.optimizer_s)));
    }
  }
  for (const schedule_event& e : r.pipeline.events) {
    if (e.end_s < t0 || e.start_s > t1) continue;
    const double ry = y0 + static_cast<double>(e.stage) * row;
    const double a = x(std::max(t0, e.start_s)), b = x(std::min(t1, e.end_s));
    c.rect(a, ry, std::max(0.5, b - a), row - 2, e.backward ? "p1" : "p0",
           fmt::format("rank {} {} micro-batch {}{}: {:.4g}-{:.4g} s", e.stage, e.backward ? "backward" : "forward", e.microbatch,
                       r.schedule == schedule_kind::interleaved ? fmt::format(" chunk {}", e.chunk) : "", e.start_s, e.end_s));
  }
  const double y_axis = y0 + static_cast<double>(ranks) * row + 2;
  for (double t : svg::nice_ticks(t0, t1, 4)) {
    c.line(x(t), y_axis, x(t), y_axis + 4, "axis");
    c.text(x(t), y_axis + 16, svg::tick_label(t), "tick", "middle");
  }
}

}  // namespace

html_section html_schedule_section(const time_report& r) {
  const std::size_t ranks = std::max<std::size_t>(1, r.pipeline.stages.size());
  const double row = std::clamp(260.0 / static_cast<double>(ranks), 8.0, 26.0);
  const double panel_h = static_cast<double>(ranks) * row + 60;
  const double span = std::max(r.timeline_s, 1e-9);
  // Forward and backward boxes per rank: past 48 they are slivers, so show the first and the last 16.
  const double boxes = static_cast<double>(r.pipeline.events.size()) / static_cast<double>(ranks);
  const bool split = boxes > 48;
  svg::canvas c(kWidth, panel_h + 50, "Pipeline timeline");
  svg::legend(c, kLeft, 16, {{"p0", "forward"}, {"p1", "backward (recomputation included)"}, {"idle", "bubble"},
                             {"p2", "exposed DP"}, {"p4", "optimizer"}});
  if (!split) {
    gantt_panel(c, r, 0, span, kLeft, kWidth - kRight, 48, "whole iteration");
  } else {
    const double window = span * 16.0 / boxes;
    const double mid = (kLeft + kWidth - kRight) / 2;
    gantt_panel(c, r, 0, window, kLeft, mid - 20, 48, "the first 16 passes per rank");
    gantt_panel(c, r, span - window, span, mid + 40, kWidth - kRight, 48, "the last 16");
  }
  c.text((kLeft + kWidth - kRight) / 2, panel_h + 40, "time (s)", "axis-label", "middle");
  std::string caption = fmt::format("{}: {} per iteration, bubble {:.1f}% of the pipeline phase, {} micro-batches per pipeline.",
                                    to_string(r.schedule), seconds(r.iteration_s), 100 * r.bubble_fraction, r.timeline_microbatches);
  if (split) caption += " Long schedule: the start and the end of the iteration, each at its own scale.";
  return {"Pipeline timeline", caption, c.str()};
}

// ---- communication --------------------------------------------------------------------------------------

html_section html_comm_section(const comm_report& r) {
  std::vector<std::vector<std::pair<std::string, std::string>>> rows;
  std::string grids;
  std::size_t dim_index = 0;
  for (const comm_dimension& d : r.dimensions) {
    if (d.calls_per_iteration_per_gpu == 0 && d.groups.group_size <= 1) continue;
    rows.push_back({{std::string(to_string(d.dim)), ""},
                    {std::to_string(d.groups.group_size), std::to_string(d.groups.group_size)},
                    {std::to_string(d.calls_per_iteration_per_gpu), std::to_string(d.calls_per_iteration_per_gpu)},
                    {gib(d.bytes_per_iteration_per_gpu), fmt::format("{}", d.bytes_per_iteration_per_gpu)},
                    {seconds(d.time_per_iteration_s), fmt::format("{}", d.time_per_iteration_s)}});
    if (d.groups.ranks.empty() || d.groups.group_size <= 1) continue;
    // The rank grid: one row per node (the first 16), one cell per GPU, coloured by group.
    const std::int64_t gpn = std::max<std::int64_t>(1, r.gpus_per_node);
    const std::int64_t nodes = std::min<std::int64_t>(r.num_nodes, 16);
    std::map<std::int64_t, std::size_t> group_of;
    for (std::size_t g = 0; g < d.groups.ranks.size(); ++g)
      for (std::int64_t rank : d.groups.ranks[g]) group_of[rank] = g;
    const double cell_w = std::min(100.0, (kWidth - kLeft - kRight) / static_cast<double>(gpn)), cell_h = 22;
    svg::canvas c(kWidth, static_cast<double>(nodes) * cell_h + 40, fmt::format("{} groups by rank", to_string(d.dim)));
    for (std::int64_t n = 0; n < nodes; ++n) {
      for (std::int64_t g = 0; g < gpn; ++g) {
        const std::int64_t rank = n * gpn + g;
        if (rank >= r.world_size) break;
        const auto it = group_of.find(rank);
        const std::size_t grp = it == group_of.end() ? 0 : it->second;
        const double cx = kLeft + static_cast<double>(g) * cell_w, cy = 24 + static_cast<double>(n) * cell_h;
        c.rect(cx, cy, cell_w - 2, cell_h - 2, palette(grp), fmt::format("n{}_g{}: rank {}, {} group {}", n, g, rank, to_string(d.dim), grp));
        if (cell_w >= 60) c.text(cx + cell_w / 2, cy + 15, fmt::format("n{}_g{}", n, g), "cell", "middle");
      }
      c.text(kLeft - 6, 24 + static_cast<double>(n) * cell_h + 15, fmt::format("node {}", n), "tick", "end");
    }
    c.text(kLeft, 14, fmt::format("{}: {} groups of {} (colour = group; the first {} of {} nodes)", to_string(d.dim),
                                  d.groups.num_groups, d.groups.group_size, nodes, r.num_nodes), "label");
    grids += c.str();
    ++dim_index;
  }
  return {"Communication per iteration",
          fmt::format("{} per GPU per iteration over all dimensions (busiest GPU, no overlap); one grid per dimension.",
                      seconds(r.time_per_iteration_per_gpu_s)),
          table({"dimension", "group size", "calls per GPU", "bytes per GPU", "time per GPU"}, rows, true) + grids};
}

// ---- search ---------------------------------------------------------------------------------------------

html_section html_search_section(const search_space&, const search_result& r, std::size_t top_k) {
  const double height = 440, bottom = height - 60;
  double t_lo = 1e300, t_hi = 0, m_hi = r.usable_bytes;
  for (const search_candidate& c : r.candidates) {
    t_lo = std::min(t_lo, c.iteration_s);
    t_hi = std::max(t_hi, c.iteration_s);
    m_hi = std::max(m_hi, c.peak_reserved_bytes);
  }
  if (r.candidates.empty()) t_lo = 0, t_hi = 1;
  // A wide spread of times (a few slow layouts far out) reads better on a log axis.
  const bool log_x = t_lo > 0 && t_hi / t_lo > 8;
  const double pad = std::max((t_hi - t_lo) * 0.05, t_hi * 0.01 + 1e-9);
  const svg::scale x = log_x ? svg::scale{t_lo / 1.1, t_hi * 1.1, kLeft, kWidth - kRight, true}
                             : svg::scale{std::max(0.0, t_lo - pad), t_hi + pad, kLeft, kWidth - kRight};
  const svg::scale y{0, m_hi / kGiB * 1.08, bottom, kTop};
  svg::canvas c(kWidth, height, "Every evaluated layout: time against memory");
  svg::axes(c, x, y, log_x ? "time per iteration (s, log scale)" : "time per iteration (s)", "peak reserved memory per GPU (GiB)");
  std::map<std::int64_t, std::size_t> tp_index;
  for (const search_candidate& cand : r.candidates) tp_index.emplace(cand.tp, 0);
  std::size_t k = 0;
  for (auto& [tp, idx] : tp_index) idx = k++;
  for (std::size_t i = r.candidates.size(); i-- > 0;) {  // best last, on top
    const search_candidate& cand = r.candidates[i];
    c.circle(x(cand.iteration_s), y(cand.peak_reserved_bytes / kGiB), i < top_k ? 4.5 : 3, palette(tp_index[cand.tp]),
             fmt::format("#{}: TP {} PP {} DP {} CP {} MBS {} {}{}: {} per iteration, {}", i + 1, cand.tp, cand.pp, cand.dp,
                         cand.cp, cand.mbs, to_string(cand.recompute), cand.vpp > 1 ? fmt::format(" VPP {}", cand.vpp) : "",
                         seconds(cand.iteration_s), gib(cand.peak_reserved_bytes)));
  }
  std::vector<std::pair<double, double>> front;
  for (std::size_t i : pareto_front(r)) {
    front.emplace_back(x(r.candidates[i].iteration_s), y(r.candidates[i].peak_reserved_bytes / kGiB));
  }
  if (front.size() > 1) c.polyline(front, "front");
  c.line(kLeft, y(r.usable_bytes / kGiB), kWidth - kRight, y(r.usable_bytes / kGiB), "capacity");
  c.text(kWidth - kRight, y(r.usable_bytes / kGiB) - 5, "usable " + gib(r.usable_bytes), "note", "end");
  std::vector<std::pair<std::string, std::string>> legend;
  for (const auto& [tp, idx] : tp_index) legend.emplace_back(palette(idx), fmt::format("TP {}", tp));
  if (legend.size() > 8) legend.resize(8);
  svg::legend(c, kLeft, 18, legend);
  std::vector<std::vector<std::pair<std::string, std::string>>> rows;
  // The text table's columns (report_search.cc), in its order: rows that differ only in EP, VPP, SP, ZeRO or
  // the node count must not look alike.
  for (std::size_t i = 0; i < std::min(top_k, r.candidates.size()); ++i) {
    const search_candidate& cand = r.candidates[i];
    const std::string ep = cand.etp != cand.tp ? fmt::format("{}/{}", cand.ep, cand.etp) : std::to_string(cand.ep);
    rows.push_back({{std::to_string(i + 1), std::to_string(i + 1)},
                    {std::to_string(cand.num_nodes), ""}, {std::to_string(cand.dp), ""},
                    {std::to_string(cand.tp), ""}, {std::to_string(cand.pp), ""}, {std::to_string(cand.mbs), ""},
                    {fmt::format("{:.1f}", cand.peak_reserved_bytes / kGiB), ""},
                    {fmt::format("{:.2f}", cand.iteration_s), ""}, {fmt::format("{:.1f}", cand.tflops_per_gpu), ""},
                    {fmt::format("{:.1f}", 100 * cand.mfu), ""}, {fmt::format("{:.1f}", cand.headroom_bytes / kGiB), ""},
                    {std::to_string(cand.cp), ""}, {ep, std::to_string(cand.ep)}, {std::to_string(cand.vpp), ""},
                    {cand.sequence_parallel ? "on" : "off", ""}, {detail::layout_recompute(cand), ""},
                    {std::to_string(cand.zero_stage), ""}, {cand.embedding_as_stage ? "yes" : "no", ""}});
  }
  return {"Search landscape",
          fmt::format("{} layouts evaluated of {} enumerated; the line joins the Pareto front (less memory than every "
                      "faster layout); hover a point for its layout. Top {} below: click a column to sort.",
                      r.evaluated, r.enumerated, rows.size()),
          c.str() + table({"#", "Nodes", "DP", "TP", "PP", "MBS", "Mem GiB", "Sec/it s", "TFLOPs", "MFU %", "Headroom GiB", "CP",
                           "EP", "VPP", "SP", "Recompute", "ZeRO", "Emb"},
                          rows, true)};
}

html_section html_shapes_section(const shapes_result& r) {
  const double height = 320, bottom = height - 60;
  double hi = 0;
  for (const shape_candidate& s : r.shapes) hi = std::max(hi, s.param_tokens_per_s);
  const std::size_t n = std::min<std::size_t>(r.shapes.size(), 30);
  svg::canvas c(kWidth, height, "Shapes by throughput");
  const svg::scale y{0, std::max(hi, 1e-9) * 1.08, bottom, kTop};
  svg::axes(c, svg::scale{0, static_cast<double>(std::max<std::size_t>(1, n)), kLeft, kWidth - kRight}, y, "shape (rank)",
            "parameter-tokens per second", false);
  const double band = (kWidth - kLeft - kRight) / static_cast<double>(std::max<std::size_t>(1, n));
  std::vector<std::vector<std::pair<std::string, std::string>>> rows;
  for (std::size_t i = 0; i < n; ++i) {
    const shape_candidate& s = r.shapes[i];
    c.rect(kLeft + static_cast<double>(i) * band + band * 0.15, y(s.param_tokens_per_s), band * 0.7, bottom - y(s.param_tokens_per_s),
           "p0", fmt::format("h {} L {} heads {}: {:.3g} parameters", s.hidden, s.layers, s.heads, s.params));
    c.text(kLeft + (static_cast<double>(i) + 0.5) * band, bottom + 16, std::to_string(i + 1), "tick", "middle");
    rows.push_back({{std::to_string(i + 1), std::to_string(i + 1)}, {std::to_string(s.hidden), ""}, {std::to_string(s.layers), ""},
                    {std::to_string(s.heads), ""}, {fmt::format("{:.3g}", s.params), fmt::format("{}", s.params)},
                    {s.has_layout ? fmt::format("{:.2f}", s.best.iteration_s) : "none fits", ""}});
  }
  return {"Model shapes", fmt::format("{} shapes considered; the first {} by throughput.", r.considered, n),
          c.str() + table({"#", "hidden", "layers", "heads", "parameters", "s/iter"}, rows, true)};
}

// ---- plan -----------------------------------------------------------------------------------------------

html_section html_plan_section(const plan_report& r, std::int64_t num_gpus) {
  const double height = 250;
  const double days = std::max(r.wall_s / 86400, 1e-9);
  svg::canvas c(kWidth, height, "The campaign over days");
  const svg::scale x{0, days * 1.02, kLeft, kWidth - kRight};
  double at = 0;
  for (std::size_t i = 0; i < r.phases.size(); ++i) {
    const plan_phase& p = r.phases[i];
    const double d = p.time_s / 86400;
    c.rect(x(at), 50, x(at + d) - x(at), 36, i + 1 == r.phases.size() ? "p0" : "p3",
           fmt::format("batch {}: {} iterations, {:.2f} days", p.global_batch_size, p.iterations, d));
    at += d;
  }
  const std::vector<std::pair<std::string, double>> overheads = {{"checkpoints", r.checkpoint_overhead_s},
                                                                 {"evaluation", r.eval_s},
                                                                 {"lost to failures", std::max(0.0, r.wall_s - r.train_s - r.checkpoint_overhead_s - r.eval_s)}};
  static const std::array<const char*, 3> kOverheadClasses = {"p1", "p2", "p6"};
  for (std::size_t i = 0; i < overheads.size(); ++i) {
    const double d = overheads[i].second / 86400;
    c.rect(x(at), 50, x(at + d) - x(at), 36, kOverheadClasses[i], fmt::format("{}: {:.2f} days", overheads[i].first, d));
    at += d;
  }
  // Expected failures, one mark per job MTBF of wall clock (§7.7; the first 200).
  for (int k = 1; r.job_mtbf_s > 0 && k * r.job_mtbf_s < r.wall_s && k <= 200; ++k) {
    const double fx = x(k * r.job_mtbf_s / 86400);
    c.rect(fx - 1, 44, 2, 48, "p2", fmt::format("expected failure {} of {:.1f}: one per {:.1f} h of wall clock", k,
                                                r.expected_failures, r.job_mtbf_s / 3600));
  }
  for (double t : svg::nice_ticks(0, x.hi)) {
    c.line(x(t), 88, x(t), 93, "axis");
    c.text(x(t), 106, svg::tick_label(t), "tick", "middle");
  }
  c.text((kLeft + kWidth - kRight) / 2, 124, "days", "axis-label", "middle");
  svg::legend(c, kLeft, 20, {{"p3", "ramp-up"}, {"p0", "training"}, {"p1", "checkpoints"}, {"p2", "evaluation, failures (marks)"},
                             {"p6", "lost to failures"}});
  // The GPU-hour budget.
  const double budget = std::max(r.gpu_hours, r.allocation_gpu_hours);
  const svg::scale hx{0, std::max(budget, 1e-9) * 1.05, kLeft, kWidth - kRight};
  c.text(kLeft, 150, "GPU-hours", "label");
  c.rect(hx(0), 160, hx(r.gpu_hours) - hx(0), 26, r.allocation_sufficient ? "p4" : "p2",
         fmt::format("needed: {} GPU-hours", svg::tick_label(std::round(r.gpu_hours))));
  if (r.allocation_gpu_hours > 0) {
    c.line(hx(r.allocation_gpu_hours), 154, hx(r.allocation_gpu_hours), 192, "capacity");
    c.text(hx(r.allocation_gpu_hours), 206, "allocation " + svg::tick_label(std::round(r.allocation_gpu_hours)), "note", "middle");
  }
  c.text(kLeft, 230, fmt::format("{} GPU-hours on {} GPUs; {:.1f} expected failures; goodput {:.1f}%",
                                 svg::tick_label(std::round(r.gpu_hours)), num_gpus, r.expected_failures, 100 * r.goodput), "note");
  return {"Campaign",
          fmt::format("{:.1f} days of wall clock, {:.1f} of them training; checkpoint every {} iterations.", r.wall_s / 86400,
                      r.train_s / 86400, r.checkpoint_interval_iters),
          c.str()};
}

}  // namespace trainplan
