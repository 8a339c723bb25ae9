// Speed of the memory model (issue 2 "Speed": one layout's memory, no rendering, under 2 µs).
// Parsing and validation happen once outside the timed loop; the loop times estimate_memory only.
#include <benchmark/benchmark.h>

#include "trainplan/cli/cli.h"
#include "trainplan/cli/args.h"
#include "trainplan/core/estimate/memory.h"
#include "trainplan/core/model/model.h"

namespace {

using namespace trainplan;

void BM_estimate_memory_bloom_production(benchmark::State& state) {
  const parsed_job pj = parse_job_args({"--preset", "bloom-176b-production"});  // 12 pipeline stages
  for (auto _ : state) {
    memory_report r = estimate_memory(pj.job);
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_estimate_memory_bloom_production);

void BM_estimate_memory_llama3_70b_vpp(benchmark::State& state) {
  const parsed_job pj = parse_job_args({"--model", "llama3-70b", "--cluster", "dgx-h100", "--num-nodes", "8", "--tp",
                                        "8", "--pp", "4", "--num-layers-per-virtual-pipeline-stage", "5",
                                        "--sequence-parallel", "--recompute-granularity", "selective",
                                        "--use-flash-attn", "--use-distributed-optimizer", "--mbs", "1", "--gbs",
                                        "32", "--bf16"});
  for (auto _ : state) {
    memory_report r = estimate_memory(pj.job);
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_estimate_memory_llama3_70b_vpp);

void BM_estimate_memory_mixtral_ep(benchmark::State& state) {
  const parsed_job pj = parse_job_args({"--model", "mixtral-8x7b", "--num-gpus", "64", "--tp", "2", "--pp", "4",
                                        "--ep", "8", "--sequence-parallel", "--use-distributed-optimizer", "--mbs",
                                        "1", "--gbs", "64", "--bf16"});
  for (auto _ : state) {
    memory_report r = estimate_memory(pj.job);
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_estimate_memory_mixtral_ep);

void BM_count_parameters(benchmark::State& state) {
  const model_spec m = find_model("llama3-70b").spec;
  for (auto _ : state) {
    parameter_breakdown p = count_parameters(m, 8);
    benchmark::DoNotOptimize(p);
  }
}
BENCHMARK(BM_count_parameters);

/// For scale: what the CLI pays before estimating (flag parsing, finalize_job).
void BM_parse_job_args_preset(benchmark::State& state) {
  const std::vector<std::string> args = {"--preset", "bloom-176b-production"};
  for (auto _ : state) {
    parsed_job pj = parse_job_args(args);
    benchmark::DoNotOptimize(pj);
  }
}
BENCHMARK(BM_parse_job_args_preset);

}  // namespace
