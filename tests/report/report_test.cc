// The reporters (include/trainplan/report/report.h): one method per result, text/JSON/CSV, a run context in
// every JSON output, and numbers exactly as the result structs hold them (renderers compute nothing).
#include "trainplan/report/report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "trainplan/cli/cli.h"
#include "trainplan/core/base/error.h"

namespace trainplan {
namespace {

using json = nlohmann::json;
using ::testing::HasSubstr;

run_context production() { return context_of(parse_job_args({"--preset", "bloom-176b-production"})); }

TEST(Report, FormatsByName) {
  EXPECT_EQ(parse_output_format("json"), output_format::json);
  EXPECT_EQ(to_string(output_format::csv), "csv");
  try {
    parse_output_format("yaml");
    FAIL();
  } catch (const input_error& e) {
    EXPECT_EQ(std::string(e.what()), "--format must be text, json, csv or html, got 'yaml' (did you mean 'html'?)");
  }
  for (const output_format f : {output_format::text, output_format::json, output_format::csv}) {
    EXPECT_EQ(make_reporter(f)->format(), f);
  }
}

TEST(Report, TimeJsonIsTheStructWithItsContext) {
  const run_context ctx = production();
  const time_report t = estimate_time(ctx.job);
  const json j = json::parse(make_reporter(output_format::json)->time(ctx, t));
  EXPECT_EQ(j["schema_version"], kSchemaVersion);
  EXPECT_EQ(j["context"]["tool"], "trainplan");
  EXPECT_EQ(j["context"]["version"], std::string(tool_version()));
  EXPECT_EQ(j["context"]["model"], "bloom-176b");
  EXPECT_EQ(j["context"]["preset"], "bloom-176b-production");
  EXPECT_EQ(j["context"]["parallel"]["pp"], 12);
  EXPECT_EQ(j["time"]["iteration_s"].get<double>(), t.iteration_s);
  ASSERT_EQ(j["time"]["stages"].size(), t.passes.size());
  for (std::size_t i = 0; i < t.passes.size(); ++i) {
    EXPECT_EQ(j["time"]["stages"][i]["forward_s"].get<double>(), t.passes[i].forward_s);
    EXPECT_EQ(j["time"]["stages"][i]["backward_s"].get<double>(), t.passes[i].backward_s);
  }
}

TEST(Report, TextReporterIsTheTextRenderer) {
  const run_context ctx = production();
  const comm_report c = summarize_comm(ctx.job);
  EXPECT_THAT(make_reporter(output_format::text)->comm(ctx, c), HasSubstr("bloom-176b on jean-zay-a100"));
}

TEST(Report, CsvHasSearchAndValidationOnly) {
  const run_context ctx = production();
  const auto csv = make_reporter(output_format::csv);
  try {
    csv->time(ctx, estimate_time(ctx.job));
    FAIL() << "time has no CSV form";
  } catch (const input_error& e) {
    EXPECT_THAT(std::string(e.what()), HasSubstr("`time` has no CSV form"));
  }
  validation_report v;
  validation_row row;
  row.table = "t.csv";
  row.label = "a,b";  // quoted: it holds a comma
  row.measured_s = 2;
  row.predicted_s = 2.5;
  row.error = 0.25;
  v.rows.push_back(row);
  row.label = "c";
  row.fits = false;  // ran, but predicted not to fit
  row.peak_reserved_bytes = 90;
  row.capacity_bytes = 80;
  v.rows.push_back(row);
  row.label = "d";
  row.skipped = "column 'vocab_size' is empty";  // no prediction: fits is left empty
  v.rows.push_back(row);
  row.label = "e";  // a measured peak memory, compared although the time is not (§3.10)
  row.skipped = "no time";
  row.measured_memory_bytes = 60e9;
  row.memory_metric = "allocated, last rank";
  row.predicted_memory_bytes = 59.4e9;
  row.memory_error = -0.01;
  v.rows.push_back(row);
  EXPECT_EQ(csv->validation(v),
            "table,label,date,measured_s,predicted_s,error,measured_tflops,predicted_tflops,fits,peak_reserved_bytes,"
            "capacity_bytes,skipped,memory_metric,measured_memory_bytes,predicted_memory_bytes,memory_error\n"
            "t.csv,\"a,b\",,2,2.5,0.25,0,0,1,0,0,,,,,\n"
            "t.csv,c,,2,2.5,0.25,0,0,0,90,80,,,,,\n"
            "t.csv,d,,2,2.5,0.25,0,0,,90,80,column 'vocab_size' is empty,,,,\n"
            "t.csv,e,,2,2.5,0.25,0,0,,90,80,no time,\"allocated, last rank\",60000000000,59400000000,-0.01\n");
}

}  // namespace
}  // namespace trainplan
