// Helpers shared by the job-flag tests (tests/cli/args_test.cc, tests/cli/args_bad_input_test.cc).
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "trainplan/cli/args.h"
#include "trainplan/core/base/error.h"

namespace trainplan::args_testing {

using args_t = std::vector<std::string>;

inline parsed_job parse(const args_t& args) { return parse_job_args(args); }

/// The input_error message of parsing `args`, or "" when it parses.
inline std::string error_of(const args_t& args, model_need need = model_need::full_job) {
  try {
    parse_job_args(args, need);
  } catch (const input_error& e) {
    return e.what();
  }
  return "";
}

inline args_t concat(args_t a, const args_t& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

inline std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "args_test_" + name;
  std::ofstream(path) << text;
  return path;
}

}  // namespace trainplan::args_testing
