// Speed of the communication summary (issue 3 "Speed": the per-dimension summary of one layout,
// without listing the groups, under 1 µs). Parsing happens once outside the timed loop.
#include <benchmark/benchmark.h>

#include "trainplan/cli/cli.h"
#include "trainplan/cli/args.h"
#include "trainplan/core/estimate/comm.h"

namespace {

using namespace trainplan;

/// seeds/003's layout: 16 GPUs, TP 2, PP 2, DP 4, distributed optimizer.
void BM_summarize_comm_seed003(benchmark::State& state) {
  const parsed_job pj = parse_job_args({"--num-layers", "32", "--hidden-size", "4096", "--num-attention-heads", "32",
                                        "--seq-length", "2048", "--vocab-size", "50257", "--tp", "2", "--pp", "2",
                                        "--mbs", "4", "--gbs", "512", "--use-distributed-optimizer", "--swiglu",
                                        "--bf16", "--num-nodes", "2", "--gpus-per-node", "8"});
  for (auto _ : state) {
    comm_report r = summarize_comm(pj.job);
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_summarize_comm_seed003);

/// BLOOM-176B in production: 384 GPUs, 12 stages, hierarchical DP groups, DeepSpeed ZeRO-1.
void BM_summarize_comm_bloom_production(benchmark::State& state) {
  const parsed_job pj = parse_job_args({"--preset", "bloom-176b-production"});
  for (auto _ : state) {
    comm_report r = summarize_comm(pj.job);
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_summarize_comm_bloom_production);

/// Mixtral with EP 8, TP 2, PP 4 on 64 GPUs, sequence parallel: every dimension but CP talks.
void BM_summarize_comm_mixtral_ep(benchmark::State& state) {
  const parsed_job pj = parse_job_args({"--model", "mixtral-8x7b", "--num-gpus", "64", "--tp", "2", "--pp", "4",
                                        "--ep", "8", "--sequence-parallel", "--use-distributed-optimizer", "--mbs",
                                        "1", "--gbs", "64", "--bf16"});
  for (auto _ : state) {
    comm_report r = summarize_comm(pj.job);
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_summarize_comm_mixtral_ep);

/// The full analysis with every group listed, for comparison (not under the 1 µs budget).
void BM_analyze_comm_bloom_production(benchmark::State& state) {
  const parsed_job pj = parse_job_args({"--preset", "bloom-176b-production"});
  for (auto _ : state) {
    comm_report r = analyze_comm(pj.job);
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_analyze_comm_bloom_production);

}  // namespace
