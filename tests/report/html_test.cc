// The HTML report (issue 13): the SVG writer (escaping, finite coordinates, scales and ticks), each
// chart's element counts against the result it draws, the pages' self-containment, and --html's file
// handling (nothing half-written, an unwritable path named, exit 2). tests/report/html_browser_test.cc renders
// the pages in Chromium.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <cmath>
#include <regex>
#include <set>
#include <string>

#include "cli_support.h"
#include "run_process.h"
#include "trainplan/cli/cli.h"
#include "trainplan/core/estimate/comm.h"
#include "trainplan/core/base/error.h"
#include "trainplan/report/html.h"
#include "trainplan/core/estimate/memory.h"
#include "trainplan/core/plan/plan.h"
#include "trainplan/report/svg.h"
#include "trainplan/core/estimate/time.h"

namespace trainplan {
namespace {

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + what.size())) ++n;
  return n;
}

// ---- the SVG writer ---------------------------------------------------------------------------------------

TEST(Svg, EscapesNamesInTextAndAttributes) {
  EXPECT_EQ(svg::escape("a<b & \"c\" 'd'>"), "a&lt;b &amp; &quot;c&quot; &#39;d&#39;&gt;");
  svg::canvas c(100, 50, "<chart>");
  c.text(1, 2, "TP <4> & PP \"2\"");
  c.rect(0, 0, 10, 10, "p0", "model \"x\" <y>");
  const std::string s = c.str();
  EXPECT_NE(s.find("TP &lt;4&gt; &amp; PP &quot;2&quot;"), std::string::npos) << s;
  EXPECT_NE(s.find("<title>model &quot;x&quot; &lt;y&gt;</title>"), std::string::npos) << s;
  EXPECT_NE(s.find("aria-label=\"&lt;chart&gt;\""), std::string::npos) << s;
  EXPECT_EQ(s.find("<chart>"), std::string::npos);
}

TEST(Svg, CoordinatesAreFiniteAndShort) {
  EXPECT_EQ(svg::num(1.0), "1");
  EXPECT_EQ(svg::num(2.5), "2.5");
  EXPECT_EQ(svg::num(1.0 / 3), "0.33");
  EXPECT_EQ(svg::num(-0.001), "0");
  EXPECT_DEATH(svg::num(std::nan("")), "not finite");
  svg::canvas c(10, 10, "x");
  c.rect(0, 0, -5, 3, "p0");  // a negative extent is drawn empty, not refused by the browser
  EXPECT_NE(c.str().find("width=\"0\""), std::string::npos);
}

TEST(Svg, ScalesAndTicks) {
  const svg::scale y{0, 80, 300, 20};
  EXPECT_DOUBLE_EQ(y(0), 300);
  EXPECT_DOUBLE_EQ(y(80), 20);
  EXPECT_DOUBLE_EQ(y(40), 160);
  EXPECT_EQ(svg::nice_ticks(0, 80), (std::vector<double>{0, 20, 40, 60, 80}));
  EXPECT_EQ(svg::nice_ticks(0, 107), (std::vector<double>{0, 25, 50, 75, 100}));
  EXPECT_EQ(svg::nice_ticks(0.3, 0.9, 3), (std::vector<double>{0.4, 0.6, 0.8}));
  const svg::scale lx{10, 1000, 0, 200, true};
  EXPECT_DOUBLE_EQ(lx(100), 100);
  EXPECT_EQ(lx.ticks(), (std::vector<double>{10, 20, 50, 100, 200, 500, 1000}));
  EXPECT_EQ(svg::tick_label(1500), "1,500");
  EXPECT_EQ(svg::tick_label(-1234567), "-1,234,567");
  EXPECT_EQ(svg::tick_label(2.5), "2.5");
  EXPECT_EQ(svg::tick_label(3e9), "3e+09");
}

TEST(Svg, AxesDrawEveryTickInsideTheImage) {
  svg::canvas c(400, 300, "axes");
  svg::axes(c, svg::scale{0, 10, 60, 380}, svg::scale{0, 80, 250, 20}, "x (s)", "y (GiB)");
  const std::string s = c.str();
  EXPECT_EQ(count(s, "class=\"grid\""), 5u);  // 0, 20, 40, 60, 80
  EXPECT_NE(s.find(">x (s)<"), std::string::npos);
  EXPECT_NE(s.find(">y (GiB)<"), std::string::npos);
  // Every coordinate inside the viewBox.
  const std::regex coord("(?:x|y|x1|x2|y1|y2)=\"(-?[0-9.]+)\"");
  for (auto it = std::sregex_iterator(s.begin(), s.end(), coord); it != std::sregex_iterator(); ++it) {
    const double v = std::stod((*it)[1]);
    EXPECT_GE(v, 0);
    EXPECT_LE(v, 400);
  }
}

// ---- the charts ----------------------------------------------------------------------------------------------

const parsed_job& bloom() {
  static const parsed_job pj = parse_job_args({"--preset", "bloom-176b-production"});
  return pj;
}

TEST(HtmlCharts, MemoryHasSixSegmentsPerStageAndTheCapacityLine) {
  const memory_report r = estimate_memory(bloom().job);
  const megatron_theoretical_memory m = megatron_theoretical(bloom().job);
  const html_section s = html_memory_section(r, &m);
  EXPECT_EQ(count(s.body, "<title>stage "), 6 * r.stages.size());
  EXPECT_EQ(count(s.body, "class=\"capacity\""), 1u);
  EXPECT_EQ(count(s.body, "Megatron-LM theoretical"), 1u);
  EXPECT_NE(s.caption.find("fits"), std::string::npos);
}

TEST(HtmlCharts, TimelineHasOneBoxPerEventInView) {
  const time_report t = schedule_timeline(bloom().job, default_schedule(bloom().job));
  const html_section s = html_schedule_section(t);
  // 128 micro-batches on 12 ranks: the long view, fewer boxes than events but boxes of both kinds.
  EXPECT_GT(count(s.body, " forward micro-batch "), 12u);
  EXPECT_GT(count(s.body, " backward micro-batch "), 12u);
  EXPECT_LT(count(s.body, " micro-batch "), t.pipeline.events.size());
  EXPECT_NE(s.caption.find("start and the end"), std::string::npos);
  // A short schedule is drawn whole: every event once.
  const parsed_job small = parse_job_args({"--preset", "bloom-176b-production", "--gbs", "64"});
  const time_report ts = schedule_timeline(small.job, default_schedule(small.job));
  EXPECT_EQ(count(html_schedule_section(ts).body, " micro-batch "), ts.pipeline.events.size());
}

TEST(HtmlCharts, SearchHasOnePointPerLayoutAndTheFront) {
  const search_request req = parse_search_request({"--threads", "1"});
  const search_result r = run_search(req.base.job, req.space);
  const html_section s = html_search_section(req.space, r, 10);
  EXPECT_EQ(count(s.body, "<circle "), r.candidates.size());
  EXPECT_EQ(count(s.body, "class=\"front\""), 1u);
  EXPECT_EQ(count(s.body, "<tr>"), 11u);  // header + top 10
  const std::vector<std::size_t> front = pareto_front(r);
  ASSERT_FALSE(front.empty());
  EXPECT_EQ(front.front(), 0u);  // the fastest layout is on the front
  for (std::size_t k = 1; k < front.size(); ++k) {
    EXPECT_LT(r.candidates[front[k]].peak_reserved_bytes, r.candidates[front[k - 1]].peak_reserved_bytes);
  }
}

TEST(HtmlCharts, CommGridColoursEveryRankOfTheFirstNodes) {
  const comm_report c = analyze_comm(bloom().job);
  const html_section s = html_comm_section(c);
  // tp, dp, pp and embedding grids over the first 16 of 48 nodes, 8 GPUs each.
  EXPECT_EQ(count(s.body, "<title>n0_g0: rank 0"), 4u);
  EXPECT_EQ(count(s.body, "<title>n15_g7: rank 127"), 4u);
  EXPECT_EQ(count(s.body, "<title>n16_g0"), 0u);
}

TEST(HtmlCharts, PlanMarksEachExpectedFailureAndThePhases) {
  const plan_request req = parse_plan_request({"--preset", "bloom-176b-production", "--train-tokens", "366e9"});
  const plan_report r = make_plan(req.inputs);
  const html_section s = html_plan_section(r, 384);
  ASSERT_GT(r.job_mtbf_s, 0);
  EXPECT_EQ(count(s.body, "<title>expected failure "), static_cast<std::size_t>(std::floor(r.wall_s / r.job_mtbf_s)));
  EXPECT_EQ(count(s.body, "<title>batch "), r.phases.size());
  EXPECT_NE(s.body.find("GPU-hours on 384 GPUs"), std::string::npos);
}

TEST(HtmlCharts, PagesAreSelfContained) {
  const std::string page = report_output(bloom(), *make_reporter(output_format::html));
  EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(count(page, "<svg "), 3u + 4u);  // memory, time, timeline, 4 rank grids
  EXPECT_EQ(page.find("http://"), page.find("http://www.w3.org/2000/svg"));  // the SVG namespace only
  EXPECT_EQ(page.find("https://"), std::string::npos);
  EXPECT_EQ(page.find("src="), std::string::npos);
  const std::string drawn = page.substr(0, page.find("<script>"));  // the sorter says isNaN
  EXPECT_EQ(drawn.find("NaN"), std::string::npos);
  EXPECT_EQ(drawn.find("\"nan\""), std::string::npos);
  EXPECT_EQ(drawn.find("inf"), std::string::npos);
  EXPECT_NE(page.find("prefers-color-scheme: dark"), std::string::npos);
  EXPECT_NE(page.find("@media print"), std::string::npos);
}

TEST(HtmlCharts, FormatsWithoutAnHtmlFormSaySo) {
  const auto rep = make_reporter(output_format::html);
  try {
    rep->models();
    FAIL() << "models has no HTML form";
  } catch (const input_error& e) {
    EXPECT_EQ(std::string(e.what()),
              "--html: `models` has no HTML form (memory, time, schedule, comm, search, shapes, plan and report have one)");
  }
}

// ---- --html and the file ------------------------------------------------------------------------------------

TEST(HtmlCharts, SearchTableHasTheTextTablesColumns) {
  // Issue 32: four Mixtral rows looked identical on the page while their times differed (EP, VPP, SP, ZeRO
  // and the node count were missing). The page's columns are the text table's.
  const search_request req = parse_search_request({"--model", "mixtral-8x7b", "--cluster", "dgx-h100", "--num-nodes", "4",
                                                   "--gbs", "256", "--threads", "1", "--top", "12"});
  const search_result r = run_search(req.base.job, req.space);
  const html_section s = html_search_section(req.space, r, 12);
  for (const char* col : {">Nodes<", ">DP<", ">TP<", ">PP<", ">MBS<", ">CP<", ">EP<", ">VPP<", ">SP<", ">Recompute<",
                          ">ZeRO<", ">Emb<", ">Headroom GiB<"}) {
    EXPECT_NE(s.body.find(col), std::string::npos) << col;
  }
  // Every listed row is told apart by its cells.
  const std::regex row("<tr>(.*?)</tr>");
  std::set<std::string> rows;
  std::size_t n = 0;
  for (auto it = std::sregex_iterator(s.body.begin(), s.body.end(), row); it != std::sregex_iterator(); ++it, ++n) {
    std::string cells = (*it)[1].str();
    cells = cells.substr(cells.find("</td>") + 5);  // without the rank
    rows.insert(cells);
  }
  EXPECT_EQ(rows.size(), n);
}

TEST(HtmlCli, ALaunchLinePageNamesItsModelAndTheFlagsThatChangedNothing) {
  // Issue 32: "Report: custom", and the ignored flags only on the terminal.
  const std::string path = ::testing::TempDir() + "trainplan_html_launch.html";
  const auto r = testing::run({"report", "--cluster", "dgx-h100", "--tp", "4", "--html", path, "--", "torchrun", "--nproc_per_node",
                               "8", "pretrain_gpt.py", "--tensor-model-parallel-size", "2", "--num-layers", "32", "--hidden-size",
                               "4096", "--num-attention-heads", "32", "--seq-length", "2048", "--max-position-embeddings", "2048",
                               "--micro-batch-size", "4", "--global-batch-size", "512", "--lr", "0.00015", "--train-iters",
                               "500000", "--vocab-size", "50257"});
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string page = testing::read_file(path);
  EXPECT_NE(page.find("<title>Report: custom model: 32 layers, hidden 4096, 32 heads</title>"), std::string::npos);
  EXPECT_NE(page.find("Ignored (they change no estimate): --lr --train-iters"), std::string::npos);
  EXPECT_NE(page.find("Overridden (the value after the arrow counts): --tensor-model-parallel-size 2 (launch line) → --tp 4 (your flags)"), std::string::npos);
}

TEST(HtmlCli, WritesThePageWholeAndSaysWhere) {
  const std::string dir = ::testing::TempDir() + "trainplan_html_cli";
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/memory.html";
  const auto r = testing::run({"memory", "--preset", "bloom-176b-production", "--html", path});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.rfind("wrote " + path, 0), 0u) << r.out;
  EXPECT_NE(testing::read_file(path).find("</html>"), std::string::npos);
  std::size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) files += e.is_regular_file() ? 1 : 0;
  EXPECT_EQ(files, 1u);  // no temporary file left behind
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_NE(st.st_mode & S_IRGRP, 0u) << "mkstemp's 0600 was not widened to the umask's mode";
}

TEST(HtmlCli, UnwritablePathIsNamedAndNothingIsWritten) {
  const auto r = testing::run({"time", "--preset", "bloom-176b-production", "--html", "/nonexistent/dir/t.html"});
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "trainplan: error: --html: cannot write '/nonexistent/dir/t.html': No such file or directory\n");
  EXPECT_EQ(r.out, "");
  const auto d = testing::run({"time", "--preset", "bloom-176b-production", "--html", ::testing::TempDir()});
  EXPECT_EQ(d.status, 2);
  EXPECT_NE(d.err.find("is a directory: give the path of a file to write"), std::string::npos) << d.err;
  const auto j = testing::run({"time", "--preset", "bloom-176b-production", "--html", "x.html", "--json"});
  EXPECT_EQ(j.status, 2);
  EXPECT_EQ(j.err, "trainplan: error: --html writes an HTML page: drop --json and --format\n");
  const auto v = testing::run({"validate", "--html", ::testing::TempDir() + "v.html"});
  EXPECT_EQ(v.status, 2);
  EXPECT_NE(v.err.find("`validate` has no HTML form"), std::string::npos) << v.err;
}

}  // namespace
}  // namespace trainplan
