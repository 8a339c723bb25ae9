// Speed of the layout search (docs/formulas.md §7.2): one full evaluation (memory + time), the README's
// BLOOM search and Calculon's 530B case, single-threaded and on two threads.
#include <benchmark/benchmark.h>

#include "trainplan/cli/cli.h"
#include "trainplan/cli/args.h"
#include "trainplan/core/estimate/memory.h"
#include "trainplan/core/search/search.h"
#include "trainplan/core/estimate/time.h"

namespace {

using namespace trainplan;

/// One full evaluation of one layout: memory and the full time model, with the pieces they share
/// computed once (evaluate_layout; what the search does per layout, §7.3).
void BM_FullEvaluationBloomProduction(benchmark::State& state) {
  const parsed_job pj = parse_job_args({"--preset", "bloom-176b-production"});
  for (auto _ : state) benchmark::DoNotOptimize(evaluate_layout(pj.job));
  state.counters["layouts/s"] = benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_FullEvaluationBloomProduction);

/// The same through the separate entry points (estimate_memory, then estimate_time, which estimates the
/// memory again for the allocator slowdown): the path before evaluate_layout.
/// Full evaluations of one job, buffers reused (as a search worker runs them).
void evaluate_repeatedly(benchmark::State& state, const std::vector<std::string>& args) {
  const parsed_job pj = parse_job_args(args);
  layout_evaluation ev;
  for (auto _ : state) {
    evaluate_layout(pj.job, ev);
    benchmark::DoNotOptimize(ev.time.iteration_s);
  }
}

/// One full evaluation of a deep pipeline (issue 30's ≤ 10 µs at PP 96): GPT-3 175B, one layer per
/// rank, TP 8 × PP 96 on 96 DGX A100 nodes (DP 1, 1,536 micro-batches), and with VPP 2 over PP 48.
void BM_FullEvaluationPp96(benchmark::State& state) {
  evaluate_repeatedly(state, {"--model", "gpt3-175b", "--cluster", "dgx-a100", "--num-nodes", "96", "--tp", "8", "--pp",
                              "96", "--gbs", "1536", "--mbs", "1", "--bf16", "--use-distributed-optimizer"});
}
BENCHMARK(BM_FullEvaluationPp96);

void BM_FullEvaluationPp48Vpp2(benchmark::State& state) {
  evaluate_repeatedly(state, {"--model", "gpt3-175b", "--cluster", "dgx-a100", "--num-nodes", "48", "--tp", "8", "--pp",
                              "48", "--vpp", "2", "--gbs", "1536", "--mbs", "1", "--bf16", "--use-distributed-optimizer"});
}
BENCHMARK(BM_FullEvaluationPp48Vpp2);

/// The same evaluation with its buffers reused, as a search worker runs it (issue 30's ≤ 3 µs).
void BM_FullEvaluationBloomProductionReused(benchmark::State& state) {
  evaluate_repeatedly(state, {"--preset", "bloom-176b-production"});
}
BENCHMARK(BM_FullEvaluationBloomProductionReused);

void BM_SeparateMemoryAndTimeBloomProduction(benchmark::State& state) {
  const parsed_job pj = parse_job_args({"--preset", "bloom-176b-production"});
  for (auto _ : state) {
    benchmark::DoNotOptimize(estimate_memory(pj.job));
    benchmark::DoNotOptimize(estimate_time(pj.job));
  }
}
BENCHMARK(BM_SeparateMemoryAndTimeBloomProduction);

/// Full evaluations per second on one core (issue 5: ≥ 1e5), as a search worker runs them: one
/// evaluation's buffers reused from layout to layout, over a spread of BLOOM-176B layouts on Jean Zay
/// (PP 5-14 with and without embedding slots, TP 4-8, MBS 1-4, full and selective recomputation,
/// ZeRO-1 and the distributed optimizer, interleaving with VPP 2).
void BM_FullEvaluationPerCore(benchmark::State& state) {
  std::vector<job_spec> jobs;
  const std::vector<std::vector<std::string>> layouts = {
      {"--preset", "bloom-176b-production"},
      {"--preset", "bloom-176b-production", "--mbs", "1"},
      {"--preset", "bloom-176b-production", "--pp", "6", "--num-nodes", "24"},
      {"--preset", "bloom-176b-production", "--tp", "8", "--pp", "6"},
      {"--model", "bloom-176b", "--cluster", "jean-zay-a100", "--num-nodes", "40", "--tp", "4", "--pp", "10", "--mbs",
       "2", "--gbs", "2048", "--bf16", "--use-distributed-optimizer", "--recompute-granularity", "full"},
      {"--model", "bloom-176b", "--cluster", "jean-zay-a100", "--num-nodes", "40", "--tp", "8", "--pp", "5", "--mbs",
       "2", "--gbs", "2560", "--bf16", "--use-distributed-optimizer", "--recompute-granularity", "selective",
       "--sequence-parallel", "--num-layers-per-virtual-pipeline-stage", "7"},
      {"--model", "bloom-176b", "--cluster", "jean-zay-a100", "--num-nodes", "28", "--tp", "8", "--pp", "14", "--mbs",
       "4", "--gbs", "2048", "--bf16", "--use-distributed-optimizer", "--recompute-granularity", "full"},
  };
  for (const auto& a : layouts) jobs.push_back(parse_job_args(a).job);
  layout_evaluation ev;
  std::size_t i = 0;
  for (auto _ : state) {
    evaluate_layout(jobs[i], ev);
    benchmark::DoNotOptimize(ev.time.iteration_s);
    if (++i == jobs.size()) i = 0;
  }
  state.counters["layouts/s"] = benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_FullEvaluationPerCore);

void BM_EstimateTimeBloomProduction(benchmark::State& state) {
  const parsed_job pj = parse_job_args({"--preset", "bloom-176b-production"});
  for (auto _ : state) benchmark::DoNotOptimize(estimate_time(pj.job));
}
BENCHMARK(BM_EstimateTimeBloomProduction);

/// BLOOM-176B with Megatron's even split (no embedding slots): TP 4 × PP 10 (7 of the 70 layers per
/// rank) on 40 nodes (DP 8, 128 micro-batches); uniform stages but the ends, the 1F1B fast path.
void BM_EstimateTimeBloomEvenSplit(benchmark::State& state) {
  const parsed_job pj = parse_job_args({"--model", "bloom-176b", "--cluster", "jean-zay-a100", "--num-nodes", "40",
                                        "--tp", "4", "--pp", "10", "--mbs", "2", "--gbs", "2048", "--bf16",
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

/// DeepSeek-V3 on 64 DGX-H100 nodes, GBS 4096: EP, expert TP and uneven ends (issue 30 target ≤ 0.3 s).
void BM_SearchDeepSeekV3(benchmark::State& state) {
  run(state, {"--model", "deepseek-v3", "--cluster", "dgx-h100", "--num-nodes", "64", "--gbs", "4096"});
}
BENCHMARK(BM_SearchDeepSeekV3)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->Iterations(3);

/// Llama-3.1-405B on every node count up to 1,024 DGX-H100 nodes, GBS 2048 (issue 30 target ≤ 0.5 s).
void BM_SearchLlama405bTo1024Nodes(benchmark::State& state) {
  run(state, {"--model", "llama3.1-405b", "--cluster", "dgx-h100", "--num-nodes", "1024", "--gbs", "2048"});
}
BENCHMARK(BM_SearchLlama405bTo1024Nodes)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace
