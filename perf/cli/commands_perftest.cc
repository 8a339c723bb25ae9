// Each command's whole call as the Python module makes it (src/cli/commands.cc): compute and serialize to
// JSON for one layout. The Python API's per-call cost (python/tools/time_api.py) is compared with these.
#include <benchmark/benchmark.h>

#include <memory>
#include <string>
#include <vector>

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

// Issue 29's budget: reading a launch line with its config file stays under 1 ms.
void BM_parse_job_nemo_llama3_8b_launch_line(benchmark::State& state) {
  const std::vector<std::string> args = {
      "--cluster", "dgx-h100", "--", "python3", "-u", "/opt/NeMo/examples/nlp/language_modeling/megatron_gpt_pretraining.py",
      "--config-path=" TRAINPLAN_SOURCE_DIR "/tests/data/launch/nemo", "--config-name=llama3_8b.yaml",
      "model.micro_batch_size=2"};
  for (auto _ : state) benchmark::DoNotOptimize(parse_job_args(args));
}
BENCHMARK(BM_parse_job_nemo_llama3_8b_launch_line);

// NeMo's own megatron_gpt_config.yaml (20 KB, the largest config of the corpus) with six overrides.
void BM_parse_job_nemo_megatron_gpt_config(benchmark::State& state) {
  const std::vector<std::string> args = {
      "--cluster", "dgx-a100", "--", "python", "/opt/NeMo/examples/nlp/language_modeling/megatron_gpt_pretraining.py",
      "--config-path=" TRAINPLAN_SOURCE_DIR "/tests/data/launch/nemo", "--config-name=megatron_gpt_config",
      "trainer.devices=8", "trainer.precision=16", "model.micro_batch_size=6", "model.global_batch_size=192",
      "model.encoder_seq_length=1024", "model.data.seq_length=1024"};
  for (auto _ : state) benchmark::DoNotOptimize(parse_job_args(args));
}
BENCHMARK(BM_parse_job_nemo_megatron_gpt_config);

// Megatron-Bridge's gpt-oss-120b dry-run config (21 KB, every field of the ConfigContainer written out).
void BM_parse_job_bridge_gpt_oss_120b(benchmark::State& state) {
  const std::vector<std::string> args = {
      "--cluster", "dgx-h100", "--num-gpus", "64", "--bridge-config",
      TRAINPLAN_SOURCE_DIR "/tests/data/launch/bridge/gpt_oss_120b_pretrain_h100_fp8_mx_v1.yaml"};
  for (auto _ : state) benchmark::DoNotOptimize(parse_job_args(args));
}
BENCHMARK(BM_parse_job_bridge_gpt_oss_120b);

void BM_parse_job_torchtitan_llama3_8b_launch_line(benchmark::State& state) {
  const std::vector<std::string> args = {
      "--cluster", "dgx-h100", "--", "torchrun", "--nproc_per_node=8", "-m", "torchtitan.train",
      "--job.config_file", TRAINPLAN_SOURCE_DIR "/tests/data/launch/torchtitan/llama3_8b.toml"};
  for (auto _ : state) benchmark::DoNotOptimize(parse_job_args(args));
}
BENCHMARK(BM_parse_job_torchtitan_llama3_8b_launch_line);

}  // namespace
