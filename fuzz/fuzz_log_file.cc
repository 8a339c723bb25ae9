// Fuzz target: `trainplan logs FILE`: the input as a log file through the real reader (block splitting,
// '\r' redraws, the binary and empty checks, overlong lines), the streaming pass, the stall check and both
// renderers. Seeds: tests/data/logs.
#include <sys/mman.h>
#include <unistd.h>

#include <memory>
#include <string>

#include "fuzz_support.h"
#include "trainplan/core/base/error.h"
#include "trainplan/core/logs/logs.h"
#include "trainplan/report/report.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace trainplan;
  static const int fd = memfd_create("fuzz.log", 0);
  if (fd < 0 || ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != static_cast<ssize_t>(size)) return 0;
  try {
    const log_analyzer a = read_logs({"/proc/self/fd/" + std::to_string(fd)}, {}, nullptr);
    const log_report r = a.report(parse_log_time("2030-01-01 00:00:00"), kNotLogged, "file modification time");
    time_report predicted;
    predicted.iteration_s = 100;
    predicted.tflops_per_gpu = 150;
    const log_plan_comparison c = compare_with_plan(r, predicted, 2048);
    for (const output_format f : {output_format::text, output_format::json}) {
      const std::unique_ptr<reporter> out = make_reporter(f);
      out->logs(nullptr, r, &c);
      out->logs_update(nullptr, r, &c);
    }
  } catch (const input_error&) {
  }
  return 0;
}
