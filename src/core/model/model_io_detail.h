// Model files (src/core/model/model_io.cc) and Hugging Face configs (src/core/model/model_hf.cc) share this: the parsed
// document with its lines, and the value readers that name the field and its line. Internal header.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "trainplan/core/base/document.h"
#include "trainplan/core/base/error.h"
#include "trainplan/core/model/model.h"

namespace trainplan::detail {

/// Sizes above this are typos, not models; rejecting them keeps every product in int64.
constexpr std::int64_t kAbsurd = std::int64_t{1} << 40;

/// The file's stem ("configs/llama.json" → "llama"), or the origin itself.
std::string stem_of(const std::string& origin);

/// An integer no smaller than `min` and no larger than 2^40.
std::int64_t as_int(const document& d, const json& v, const std::string& path, std::int64_t min);
bool as_bool(const document& d, const json& v, const std::string& path);
/// A probability in [0, 1).
double as_probability(const document& d, const json& v, const std::string& path);
std::string as_string(const document& d, const json& v, const std::string& path);

/// Runs an enum parser from model.h, re-raising its error with the file position in front.
template <typename F>
auto parse_enum_field(const document& d, const json& v, const std::string& path, F parse) {
  const std::string s = as_string(d, v, path);
  try {
    return parse(s, "field '" + path + "'");
  } catch (const input_error& e) {
    throw input_error(fmt::format("{}: {}", d.where(path), e.what()));
  }
}

/// A config.json (transformers' classes and their defaults) as a model, not yet finalized (§1.6).
model_spec read_hf(const document& d);
/// Whether `d` is a DeepSeek inference config (deepseek-ai/DeepSeek-V3 inference/configs/*.json:
/// ModelArgs' dim, n_layers, n_heads, kv_lora_rank), and the model it describes.
bool is_deepseek_inference(const document& d);
model_spec read_deepseek_inference(const document& d);

}  // namespace trainplan::detail
