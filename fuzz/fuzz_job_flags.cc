// Fuzz target: the job-flag parser (parse_job_args), then the models on whatever it accepts: memory,
// communication and the full time model. Seeds: fuzz/seeds/job_flags (one token per line).
#include <cmath>

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
      // Whatever is accepted is answered with finite figures (issue 31): a NaN or inf is a finding.
      const layout_evaluation e = evaluate_layout(pj.job);
      const comm_report c = summarize_comm(pj.job);
      if (!std::isfinite(e.time.iteration_s) || !(e.time.iteration_s > 0) || !std::isfinite(e.time.tflops_per_gpu) ||
          !std::isfinite(e.memory.peak_reserved_bytes) || !std::isfinite(c.time_per_iteration_per_gpu_s)) {
        __builtin_trap();
      }
    }
  } catch (const input_error&) {
  }
  return 0;
}
