// Fuzz target: Megatron-Bridge ConfigContainer YAML (--bridge-config), on a dgx-h100 node, then the layout's
// evaluation. The reader takes a path, so each input is written to this process's scratch file first.
// Seeds: tests/data/launch/bridge.
#include <unistd.h>

#include <fstream>

#include "fuzz_support.h"
#include "trainplan/cli/args.h"
#include "trainplan/core/base/error.h"
#include "trainplan/core/estimate/time.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace trainplan;
  static const std::string path = "/tmp/trainplan_fuzz_bridge_" + std::to_string(getpid()) + ".yaml";
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << fuzz::text_of(data, size);
  }
  try {
    evaluate_layout(parse_job_args({"--cluster", "dgx-h100", "--num-gpus", "64", "--bridge-config", path}).job);
  } catch (const input_error&) {
  }
  return 0;
}
