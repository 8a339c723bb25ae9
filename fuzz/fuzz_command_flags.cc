// Fuzz target: the search, shapes and plan commands' own flag parsers (and the plan, which is cheap to
// make); the first token picks the command. Seeds: fuzz/seeds/command_flags.
#include <cmath>

#include "fuzz_support.h"
#include "trainplan/cli/cli.h"
#include "trainplan/core/base/error.h"
#include "trainplan/core/plan/plan.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace trainplan;
  std::vector<std::string> args = fuzz::tokens_of(data, size);
  if (args.empty()) return 0;
  const std::string command = args.front();
  args.erase(args.begin());
  try {
    if (command == "search") {
      parse_search_request(args);
    } else if (command == "shapes") {
      parse_shapes_request(args);
    } else if (command == "plan") {
      // make_plan checks every figure it prints; what it returns is finite (issue 31).
      const plan_report r = make_plan(parse_plan_request(args).inputs);
      if (!std::isfinite(r.wall_s) || !std::isfinite(r.gpu_hours) || !std::isfinite(r.checkpoint_interval_s)) __builtin_trap();
    }
  } catch (const input_error&) {
  }
  return 0;
}
