// The layout rules' shared pieces and the training knobs' rules (src/core/job/training_rules.cc), which
// src/core/job/job.cc's layout_violation runs in turn (docs/formulas.md §2, §3.1, §5.1.3, §5.5). Each rule
// returns the first violation's message, "" when met, and may derive what its knobs force.
#pragma once

#include <cstdint>
#include <string>

#include "trainplan/core/base/limits.h"
#include "trainplan/core/job/job.h"

namespace trainplan::detail {

/// "" when 1 ≤ v ≤ hi, else the message naming `flag`.
std::string positive(std::int64_t v, const char* flag, std::int64_t hi = limits::kMaxParallel);

std::string framework_violation(job_spec& job);  ///< ZeRO stages, distributed optimizer, grad dtype (§3.1)
std::string training_violation(job_spec& job);   ///< recomputation, memory knobs, DeepSpeed/ZeRO-3 knobs
std::string fp8_violation(job_spec& job);        ///< FP8 tensor cores and --fp8-param-gather (§5.1.3)
std::string overlap_violation(job_spec& job);    ///< Megatron's checks on the overlap flags (§5.5)
std::string sharding_violation(job_spec& job);   ///< HSDP (§2.5)

}  // namespace trainplan::detail

#define TRAINPLAN_RETURN_VIOLATION(rule)         \
  do {                                           \
    if (std::string v_ = (rule); !v_.empty()) {  \
      return v_;                                 \
    }                                            \
  } while (0)
