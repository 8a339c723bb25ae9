// `trainplan logs` (docs/formulas.md §8): the line parser and the whole streaming read. Target
// (issue 12): ≥ 200 MB/s on the 2-core machine; bytes_per_second is the figure to read.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "trainplan/core/logs/logs.h"

namespace {

using namespace trainplan;

// seeds/004 line 45, the BLOOM production run's progress line.
const std::string kBloomLine =
    "[default7]: iteration    12695/  115311 | consumed samples:      9841584 | consumed tokens:  20155564032 | "
    "elapsed time per iteration (s): 105.22 | learning rate: 5.969E-05 | global batch size:  2048 | lm loss: "
    "2.463556E+00 | grad norm: 0.174 | num zeros: 0.0 | number of skipped iterations:   0 | number of nan "
    "iterations:   0 | samples per second: 19.463 | TFLOPs: 149.02 |";

void BM_parse_log_line_megatron_deepspeed(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(parse_log_line(kBloomLine));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(kBloomLine.size() + 1));
}
BENCHMARK(BM_parse_log_line_megatron_deepspeed);

void BM_parse_log_line_unknown(benchmark::State& state) {
  const std::string line = "node0042:12345:12399 [7] NCCL INFO Channel 00/32 :    0   1   2   3   4   5   6   7";
  for (auto _ : state) benchmark::DoNotOptimize(parse_log_line(line));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(line.size() + 1));
}
BENCHMARK(BM_parse_log_line_unknown);

/// A 64 MiB Megatron-DeepSpeed log (iterations counting up, speeds and losses wobbling), read whole.
void BM_read_logs_64mib(benchmark::State& state) {
  const std::string path = "/tmp/trainplan_perf_logs.log";
  std::size_t bytes = 0;
  {
    std::ofstream out(path, std::ios::binary);
    char buf[512];
    for (long it = 1; bytes < (64u << 20); ++it) {
      const int n = std::snprintf(buf, sizeof buf,
                                  "[default7]: iteration %8ld/ 1000000000 | consumed samples: %12ld | elapsed time per "
                                  "iteration (s): %.2f | learning rate: 5.969E-05 | global batch size:  2048 | lm loss: "
                                  "%.6E | grad norm: 0.174 | num zeros: 0.0 | number of skipped iterations:   0 | number "
                                  "of nan iterations:   0 | samples per second: 19.463 | TFLOPs: 149.02 |\n",
                                  it, it * 2048, 105.0 + (it % 7) * 0.1, 2.4 + (it % 5) * 0.001);
      out.write(buf, n);
      bytes += static_cast<std::size_t>(n);
    }
  }
  for (auto _ : state) benchmark::DoNotOptimize(read_logs({path}, {}, nullptr).report());
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(bytes));
  std::remove(path.c_str());
}
BENCHMARK(BM_read_logs_64mib)->Unit(benchmark::kMillisecond);

}  // namespace
