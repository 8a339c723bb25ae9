// Fuzz target: `validate --csv FILE`: the measurement CSV, then the time model over its rows. Seeds:
// tests/data/*measurements*.csv.
#include "fuzz_support.h"
#include "trainplan/core/base/error.h"
#include "trainplan/cli/validate.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace trainplan;
  try {
    run_validation(read_measurements(fuzz::text_of(data, size), "fuzz.csv"));
  } catch (const input_error&) {
  }
  return 0;
}
