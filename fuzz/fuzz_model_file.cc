// Fuzz target: model files as text: our YAML and JSON descriptions and Hugging Face config.json (the
// same reader tells them apart), then the parameter count of what it accepts. Seeds: examples/*.yaml,
// tests/data/hf/*.json (the hf_config corpus runs this target too).
#include "fuzz_support.h"
#include "trainplan/core/base/error.h"
#include "trainplan/core/model/model.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace trainplan;
  try {
    const model_spec m = parse_model_text(fuzz::text_of(data, size), "fuzz.yaml");
    count_parameters(m, 1);
  } catch (const input_error&) {
  }
  return 0;
}
