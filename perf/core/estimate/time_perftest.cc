// Speed of a full evaluation of one layout: memory, communication, compute, schedule (issue 4: < 20 µs
// for BLOOM on 384 GPUs).
#include <benchmark/benchmark.h>

#include "trainplan/cli/cli.h"
#include "trainplan/cli/args.h"
#include "trainplan/core/estimate/memory.h"
#include "trainplan/core/estimate/schedule.h"
#include "trainplan/core/estimate/time.h"

namespace {

using namespace trainplan;

/// evaluate_layout: memory and time with the shared pieces computed once, results returned by value.
void BM_FullEvaluationBloom384(benchmark::State& state) {
  const parsed_job pj = parse_job_args({"--preset", "bloom-176b-production"});
  for (auto _ : state) benchmark::DoNotOptimize(evaluate_layout(pj.job));
}
BENCHMARK(BM_FullEvaluationBloom384);

void BM_TimeOnlyBloom384(benchmark::State& state) {
  const parsed_job pj = parse_job_args({"--preset", "bloom-176b-production"});
  for (auto _ : state) benchmark::DoNotOptimize(estimate_time(pj.job));
}
BENCHMARK(BM_TimeOnlyBloom384);

void BM_Simulate1F1B(benchmark::State& state) {
  schedule_input in;
  in.num_microbatches = state.range(0);
  in.stages.assign(12, stage_times{0.17, 0.51, 1.3, 0.01});
  in.stages.front().forward_s = 0.14;
  in.p2p_s = 0.027;
  for (auto _ : state) benchmark::DoNotOptimize(simulate_schedule(in));
}
BENCHMARK(BM_Simulate1F1B)->Arg(128)->Arg(512);

/// The same schedule on the fast path (run_schedule without events): one in-order pass, the steady
/// state extrapolated.
void BM_Fast1F1B(benchmark::State& state) {
  schedule_input in;
  in.num_microbatches = state.range(0);
  in.stages.assign(12, stage_times{0.17, 0.51, 1.3, 0.01});
  in.stages.front().forward_s = 0.14;
  in.p2p_s = 0.027;
  for (auto _ : state) benchmark::DoNotOptimize(fast_schedule(in));
}
BENCHMARK(BM_Fast1F1B)->Arg(128)->Arg(512);

/// Interleaved (VPP 3) with transfers: the simulation on reused buffers.
void BM_FastInterleaved(benchmark::State& state) {
  schedule_input in;
  in.kind = schedule_kind::interleaved;
  in.num_chunks = 3;
  in.num_microbatches = state.range(0);
  in.stages.assign(12, stage_times{0.06, 0.17, 1.3, 0.01});
  in.stages.front().forward_s = 0.05;
  in.p2p_s = 0.027;
  for (auto _ : state) benchmark::DoNotOptimize(fast_schedule(in));
}
BENCHMARK(BM_FastInterleaved)->Arg(48)->Arg(120)->Arg(480);

/// The event simulation of the same interleaved schedules (reference).
void BM_SimulateInterleaved(benchmark::State& state) {
  schedule_input in;
  in.kind = schedule_kind::interleaved;
  in.num_chunks = 3;
  in.num_microbatches = state.range(0);
  in.stages.assign(12, stage_times{0.06, 0.17, 1.3, 0.01});
  in.stages.front().forward_s = 0.05;
  in.p2p_s = 0.027;
  for (auto _ : state) benchmark::DoNotOptimize(simulate_schedule(in));
}
BENCHMARK(BM_SimulateInterleaved)->Arg(48)->Arg(120);

}  // namespace

namespace {

/// A full evaluation of Llama-3-70B on 64 H100s, with and without the committed H100 profile
/// (calibration/h100-sxm5-80gb-2026-11-22: 432 measured GEMMs looked up for each of the layer's GEMMs).
void BM_FullEvaluationLlama70bH100(benchmark::State& state) {
  std::vector<std::string> args = {"--model", "llama3-70b", "--cluster", "dgx-h100", "--num-gpus", "64", "--tp", "8",
                                   "--pp",    "2",          "--sequence-parallel", "--use-distributed-optimizer",
                                   "--gbs",   "512",        "--use-flash-attn"};
  if (state.range(0) == 1) {
    args.push_back("--calibration");
    args.push_back(TRAINPLAN_SOURCE_DIR "/calibration/h100-sxm5-80gb-2026-11-22/profile.json");
  }
  const trainplan::parsed_job pj = trainplan::parse_job_args(args);
  for (auto _ : state) benchmark::DoNotOptimize(trainplan::evaluate_layout(pj.job));
}
BENCHMARK(BM_FullEvaluationLlama70bH100)->Arg(0)->Arg(1);

}  // namespace
