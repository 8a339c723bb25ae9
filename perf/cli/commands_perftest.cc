// Each command's whole call as the Python module makes it (src/cli/commands.cc): compute and serialize to
// JSON for one layout. The Python API's per-call cost (python/tools/time_api.py) is compared with these.
#include <benchmark/benchmark.h>

#include <memory>
#include <string>

#include "trainplan/cli/cli.h"
#include "trainplan/report/report.h"

namespace {

using namespace trainplan;

const parsed_job& bloom_production() {
  static const parsed_job pj = parse_job_args({"--preset", "bloom-176b-production"});
  return pj;
}

void BM_time_output_json_bloom_production(benchmark::State& state) {
  const std::unique_ptr<reporter> rep = make_reporter(output_format::json);
  for (auto _ : state) benchmark::DoNotOptimize(time_output(bloom_production(), *rep));
}
BENCHMARK(BM_time_output_json_bloom_production);

void BM_memory_output_json_bloom_production(benchmark::State& state) {
  const std::unique_ptr<reporter> rep = make_reporter(output_format::json);
  for (auto _ : state) benchmark::DoNotOptimize(memory_output(bloom_production(), *rep));
}
BENCHMARK(BM_memory_output_json_bloom_production);

void BM_parse_job_llama3_70b(benchmark::State& state) {
  const std::vector<std::string> args = {"--model", "llama3-70b", "--cluster", "dgx-h100", "--num-gpus", "64",
                                         "--tp", "8", "--pp", "2", "--sequence-parallel", "--gbs", "512"};
  for (auto _ : state) benchmark::DoNotOptimize(parse_job_args(args));
}
BENCHMARK(BM_parse_job_llama3_70b);

}  // namespace
