// Speed of the layout search (docs/formulas.md §7.2): one full evaluation (memory + time), the README's
// BLOOM search and Calculon's 530B case, single-threaded and on two threads.
#include <benchmark/benchmark.h>

#include "trainplan/args.h"
#include "trainplan/memory.h"
#include "trainplan/search.h"
#include "trainplan/time.h"

namespace {

using namespace trainplan;

/// One full evaluation of one layout: memory and the full time model (what the search does per layout).
void BM_FullEvaluationBloomProduction(benchmark::State& state) {
  const parsed_job pj = parse_job_args({"--preset", "bloom-176b-production"});
  for (auto _ : state) {
    benchmark::DoNotOptimize(estimate_memory(pj.job));
    benchmark::DoNotOptimize(estimate_time(pj.job));
  }
  state.counters["layouts/s"] = benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_FullEvaluationBloomProduction);

void BM_EstimateTimeBloomProduction(benchmark::State& state) {
  const parsed_job pj = parse_job_args({"--preset", "bloom-176b-production"});
  for (auto _ : state) benchmark::DoNotOptimize(estimate_time(pj.job));
}
BENCHMARK(BM_EstimateTimeBloomProduction);

/// The same layout with Megatron's even split (no embedding slots): uniform stages, closed-form schedule.
void BM_EstimateTimeBloomEvenSplit(benchmark::State& state) {
  const parsed_job pj = parse_job_args({"--model", "bloom-176b", "--cluster", "jean-zay-a100", "--num-nodes", "48",
                                        "--tp", "4", "--pp", "14", "--mbs", "2", "--gbs", "2048", "--bf16",
                                        "--use-distributed-optimizer", "--recompute-granularity", "full"});
  for (auto _ : state) benchmark::DoNotOptimize(estimate_time(pj.job));
}
BENCHMARK(BM_EstimateTimeBloomEvenSplit);

void BM_EstimateMemoryBloomProduction(benchmark::State& state) {
  const parsed_job pj = parse_job_args({"--preset", "bloom-176b-production"});
  for (auto _ : state) benchmark::DoNotOptimize(estimate_memory(pj.job));
}
BENCHMARK(BM_EstimateMemoryBloomProduction);

void run(benchmark::State& state, const std::vector<std::string>& args) {
  std::vector<std::string> a = args;
  a.push_back("--threads");
  a.push_back(std::to_string(state.range(0)));
  const search_request req = parse_search_request(a);
  std::int64_t evaluated = 0;
  for (auto _ : state) {
    const search_result r = run_search(req.base.job, req.space);
    evaluated = r.evaluated;
    benchmark::DoNotOptimize(r);
  }
  state.counters["evaluated"] = static_cast<double>(evaluated);
}

/// The README's main job: BLOOM-176B on jean-zay-a100, up to 48 nodes, GBS 2048 (target < 2 s on 2 cores).
void BM_SearchBloom(benchmark::State& state) { run(state, {}); }
BENCHMARK(BM_SearchBloom)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->Iterations(3);

/// Calculon's case: megatron-530b on 641 DGX-A100 nodes (5,128 GPUs), GBS 2520 (target < 0.5 s).
void BM_SearchMegatron530b(benchmark::State& state) {
  run(state, {"--model", "megatron-530b", "--cluster", "dgx-a100", "--num-nodes", "641", "--gbs", "2520", "--bf16"});
}
BENCHMARK(BM_SearchMegatron530b)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace
