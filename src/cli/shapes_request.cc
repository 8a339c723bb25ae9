// The `shapes` command's flags and request (docs/formulas.md §7.4): its own flags, then the search's.
#include <string>
#include <vector>

#include "local_flags.h"
#include "trainplan/cli/cli.h"
#include "trainplan/core/base/error.h"

namespace trainplan {

namespace {

using detail::local_flag;
using detail::parse_count;
using detail::parse_int_list;

std::vector<local_flag> shapes_table(shapes_request* r) {
  shape_rules* s = &r->rules;
  return {
      {"--target-params", {}, "N", 1, "target size, e.g. 175e9",
       [s](const auto& v, const auto& f) { s->target_params = detail::parse_positive(v[0], f); }, "shapes.target_params"},
      {"--tolerance", {}, "X", 1, "|params/target − 1| allowed [0.05]",
       [s](const auto& v, const auto& f) { s->tolerance = detail::parse_positive(v[0], f); }, "shapes.tolerance"},
      {"--ratio", {}, "MIN-MAX", 1, "hidden/layers band [150-200]",
       [s](const auto& v, const auto& f) {
         const auto dash = v[0].find('-');
         if (dash == std::string::npos) throw input_error(f + " expects MIN-MAX, e.g. 150-200");
         s->min_ratio = detail::parse_positive(v[0].substr(0, dash), f);
         s->max_ratio = detail::parse_positive(v[0].substr(dash + 1), f);
         if (s->max_ratio < s->min_ratio) throw input_error(f + ": MAX below MIN");
       }, "shapes.ratio"},
      {"--head-dims", {}, "LIST", 1, "head dims allowed [64,128]",
       [s](const auto& v, const auto& f) { s->head_dims = parse_int_list(v[0], f); }},
      {"--hidden-multiple", {}, "N", 1, "hidden a multiple of N [128]",
       [s](const auto& v, const auto& f) { s->hidden_multiple = parse_count(v[0], f); }},
      {"--heads-multiple", {}, "N", 1, "heads divisible by N (largest TP) [GPUs per node]",
       [s](const auto& v, const auto& f) { s->tp_multiple = parse_count(v[0], f); }},
      {"--max-shapes", {}, "N", 1, "shapes searched for a layout [12]",
       [s](const auto& v, const auto& f) { s->max_shapes = parse_count(v[0], f); }},
  };
}

}  // namespace

shapes_request parse_shapes_request(const std::vector<std::string>& args_in) {
  std::vector<std::string> args = args_in;
  if (args.empty()) {
    args = {"--target-params", "175e9", "--model", "bloom-176b", "--cluster", "jean-zay-a100", "--num-nodes", "48",
            "--gbs", "2048", "--bf16", "--framework", "deepspeed", "--embedding-as-stage"};
  }
  shapes_request r;
  std::vector<std::string> rest = detail::take_local_flags(shapes_table(&r), args);
  search_request sr = parse_search_request(rest.empty() ? default_search_args() : rest);
  r.space = sr.space;
  r.base = sr.base;
  return r;
}

std::string shapes_flags_help() {
  return detail::local_flags_help(detail::shapes_flag_rows()) + "  and the search flags (`trainplan help search`)\n";
}

std::vector<detail::local_flag> detail::shapes_flag_rows() {
  static shapes_request dummy;
  return shapes_table(&dummy);
}

}  // namespace trainplan
