// Fuzz target: calibration profiles (trainplan-bench's JSON), applied to the catalog's H100 cluster.
// Seeds: calibration/*.json.
#include "fuzz_support.h"
#include "trainplan/core/estimate/calibration.h"
#include "trainplan/core/base/error.h"
#include "trainplan/core/hardware/hardware.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace trainplan;
  try {
    const calibration_profile p = parse_calibration(fuzz::text_of(data, size), "fuzz.json");
    cluster_spec c = find_cluster("dgx-h100");
    apply_calibration(c, p, "fuzz.json");
  } catch (const input_error&) {
  }
  return 0;
}
