// Fuzz target: the job-flag parser (parse_job_args), then the models on whatever it accepts: memory,
// communication and the full time model. Seeds: fuzz/seeds/job_flags (one token per line).
#include "fuzz_support.h"
#include "trainplan/cli/args.h"
#include "trainplan/core/estimate/comm.h"
#include "trainplan/core/base/error.h"
#include "trainplan/core/model/model.h"
#include "trainplan/core/estimate/time.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace trainplan;
  const std::vector<std::string> args = fuzz::tokens_of(data, size);
  try {
    const bool model_only = !args.empty() && args.front() == "--model" && size % 2 == 1;
    const parsed_job pj = parse_job_args(args, model_only ? model_need::model_only : model_need::full_job);
    count_parameters(pj.job.model, pj.job.parallel.tp);
    if (!model_only) {
      evaluate_layout(pj.job);
      summarize_comm(pj.job);
    }
  } catch (const input_error&) {
  }
  return 0;
}
