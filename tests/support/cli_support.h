// The CLI tests' two helpers (tests/cli/cli_test.cc, tests/cli/cli_first_hour_test.cc): run the built binary,
// and parse its JSON output or fail the test saying what came instead.
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "run_process.h"

namespace trainplan::testing {

/// Run the built binary with `args`.
inline run_result run(const std::vector<std::string>& args) { return run_command(shell_quote(TRAINPLAN_BINARY), args); }

inline nlohmann::json parse_json(const std::string& text) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    ADD_FAILURE() << "not JSON (" << e.what() << "):\n" << text.substr(0, 2000);
    return nlohmann::json();
  }
}

}  // namespace trainplan::testing
