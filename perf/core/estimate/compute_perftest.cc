// Speed of the compute model: one layer and one whole job (docs/formulas.md §5).
#include <benchmark/benchmark.h>

#include "trainplan/cli/cli.h"
#include "trainplan/cli/args.h"
#include "trainplan/core/estimate/compute.h"

namespace {

using namespace trainplan;

void BM_EstimateComputeBloom(benchmark::State& state) {
  const parsed_job pj = parse_job_args({"--preset", "bloom-176b-production"});
  for (auto _ : state) benchmark::DoNotOptimize(estimate_compute(pj.job));
}
BENCHMARK(BM_EstimateComputeBloom);

void BM_Gemm(benchmark::State& state) {
  const gpu_spec& gpu = find_gpu("a100-sxm4-80gb");
  const compute_efficiency e = effective_compute_efficiency(gpu);
  for (auto _ : state) benchmark::DoNotOptimize(estimate_gemm(gpu, e, dtype::bf16, {4096, 10752, 14336, 1}));
}
BENCHMARK(BM_Gemm);

}  // namespace
