// Fuzz target: a launch line after "--" (torchrun / deepspeed … pretrain_gpt.py <Megatron flags>), on
// top of a model and cluster, then the models. Seeds: fuzz/seeds/launch_line (one token per line).
#include "fuzz_support.h"
#include "trainplan/cli/args.h"
#include "trainplan/core/base/error.h"
#include "trainplan/core/estimate/time.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace trainplan;
  std::vector<std::string> args = {"--model", "llama2-7b", "--cluster", "dgx-a100", "--"};
  for (std::string& t : fuzz::tokens_of(data, size)) args.push_back(std::move(t));
  try {
    evaluate_layout(parse_job_args(args).job);
  } catch (const input_error&) {
  }
  return 0;
}
