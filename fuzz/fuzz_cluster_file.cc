// Fuzz target: cluster files (YAML or JSON). Seeds: examples/my-cluster.yaml, tests/data/cluster.
#include "fuzz_support.h"
#include "trainplan/core/base/error.h"
#include "trainplan/core/hardware/hardware.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace trainplan;
  try {
    parse_cluster_text(fuzz::text_of(data, size), "fuzz.yaml");
  } catch (const input_error&) {
  }
  return 0;
}
