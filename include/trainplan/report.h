// Renderers: text and JSON from result structs. They format; they never compute estimates.
#pragma once

#include <string>
#include <vector>

#include "trainplan/args.h"
#include "trainplan/comm.h"
#include "trainplan/memory.h"
#include "trainplan/model.h"

namespace trainplan {

inline constexpr int kSchemaVersion = 1;

/// Bytes as GiB (2^30) with `digits` decimals.
std::string format_gib(double bytes, int digits = 2);
/// 176247271424 → "176,247,271,424".
std::string format_count(std::int64_t n);

std::string render_models_text();
std::string render_models_json();

std::string render_model_text(const model_spec& m, const parameter_breakdown& p, std::int64_t tp);
std::string render_model_json(const model_spec& m, const parameter_breakdown& p, std::int64_t tp);

std::string render_memory_text(const parsed_job& pj, const parameter_breakdown& p, const memory_report& r);
std::string render_memory_json(const parsed_job& pj, const parameter_breakdown& p, const memory_report& r);

/// Communication per iteration (docs/formulas.md §4): cluster summary and per-dimension detail with the
/// first groups of each dimension (text), or every group (JSON, {"comm":{"dimensions":{...}}}).
std::string render_comm_text(const parsed_job& pj, const comm_report& r);
std::string render_comm_json(const parsed_job& pj, const comm_report& r);

}  // namespace trainplan
