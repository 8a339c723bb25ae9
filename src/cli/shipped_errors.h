// The shipped validation's errors, precomputed at build time (issue 30): `trainplan validate` over the
// embedded tables is a pure function of the code and the tables, and costs ~10 ms, which every `time`,
// `memory` and `search` paid at start-up for its expected-error band. apps/gen_shipped_errors.cc runs it
// once per build and writes generated/shipped_errors.cc (one row per predicted run), which the trainplan
// executable and the Python module link; anything else (the generator itself, the tests) computes it
// at first use. tests/cli/validate_test.cc holds the two equal. Internal header of src/cli/validate.cc.
#pragma once

#include <cstddef>

namespace trainplan::detail {

/// One predicted run of the shipped validation: what expected_error reads of it.
struct shipped_error {
  const char* generation;  ///< generation_of_job ("A100 BF16")
  const char* framework;   ///< "megatron", "deepspeed", "fsdp"
  double error;            ///< predicted / measured − 1, as validation_row::error
  double held_out_abs_error;  ///< as validation_row::held_out_abs_error (leave_one_source_out; < 0: none)
};

/// The precomputed rows and their count (`count` 0 and nullptr where the build linked none).
const shipped_error* precomputed_shipped_errors(std::size_t& count);

}  // namespace trainplan::detail
