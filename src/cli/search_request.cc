// The `search` command's flags and request (docs/formulas.md §7.1): its local flag table on top of the
// job flags. The search itself is src/core/search/search.cc.
#include <algorithm>
#include <string>
#include <vector>

#include "local_flags.h"
#include "trainplan/core/base/error.h"
#include "trainplan/core/base/limits.h"
#include "trainplan/cli/cli.h"
#include "trainplan/core/search/search.h"

namespace trainplan {

namespace {

using detail::local_flag;
using detail::parse_count;
using detail::parse_int_list;

using limits::kMaxSearchThreads;

using detail::parse_enum_list;

}  // namespace

// ---- the search command's flags (§7.1) --------------------------------------------------------------

namespace {

std::vector<local_flag> search_table(search_request* r) {
  search_space* s = &r->space;
  auto ints = [](std::vector<std::int64_t> search_space::*field, search_space* sp) {
    return [sp, field](const std::vector<std::string>& v, const std::string& f) { sp->*field = parse_int_list(v[0], f); };
  };
  return {
      {"--tp", {"--tensor-model-parallel-size"}, "LIST", 1, "TP values, e.g. 1,2,4,8 or 2-8 [divisors of heads ≤ GPUs/node]",
       ints(&search_space::tp, s), "space.tp"},
      {"--pp", {"--pipeline-model-parallel-size"}, "LIST", 1, "PP values [every split of the layers]", ints(&search_space::pp, s), "space.pp"},
      {"--cp", {"--context-parallel-size"}, "LIST", 1, "CP values [1; powers of 2 to 16 from 8192 tokens]",
       ints(&search_space::cp, s), "space.cp"},
      {"--ep", {"--expert-model-parallel-size"}, "LIST", 1, "EP values [divisors of the experts]", ints(&search_space::ep, s), "space.ep"},
      {"--etp", {"--expert-tensor-parallel-size"}, "LIST", 1, "expert TP values [the layout's TP, and 1]",
       ints(&search_space::etp, s), "space.etp"},
      {"--vpp", {"--virtual-pipeline-model-parallel-size"}, "LIST", 1, "model chunks per rank [all, Megatron]",
       ints(&search_space::vpp, s), "space.vpp"},
      {"--mbs", {"--micro-batch-size"}, "LIST", 1, "micro-batch sizes [divisors of GBS/DP]", ints(&search_space::mbs, s), "space.mbs"},
      {"--nodes", {}, "LIST", 1, "node counts [1 to --num-nodes]", ints(&search_space::nodes, s), "space.nodes"},
      {"--num-nodes", {"--nnodes"}, "N", 1, "most nodes to use [the cluster's]",
       [s](const auto& v, const auto& f) { s->max_nodes = parse_count(v[0], f); }, "space.max_nodes"},
      {"--max-gpus", {"--num-gpus"}, "N", 1, "most GPUs to use", [s](const auto& v, const auto& f) { s->max_gpus = parse_count(v[0], f); }, "space.max_gpus"},
      {"--dp-multiple-of", {}, "N", 1, "DP must be a multiple of N (batch ramp-up needs it)",
       [s](const auto& v, const auto& f) { s->dp_multiple_of = parse_count(v[0], f); }, "space.dp_multiple_of"},
      {"--min-headroom-gib", {}, "GIB", 1, "keep at least this much GPU memory free",
       [s](const auto& v, const auto& f) { s->min_headroom_bytes = detail::parse_nonnegative(v[0], f) * 1073741824.0; }, "space.min_headroom_bytes"},
      {"--min-headroom-fraction", {}, "X", 1, "keep at least this fraction of GPU memory free",
       [s](const auto& v, const auto& f) {
         s->min_headroom_fraction = detail::parse_nonnegative(v[0], f);
         if (s->min_headroom_fraction >= 1) throw input_error(f + " must be below 1");
       }, "space.min_headroom_fraction"},
      {"--recompute", {"--recompute-granularity"}, "LIST", 1, "none,selective,full,block,op [all; op with FSDP]",
       [s](const auto& v, const auto& f) {
         s->recompute = parse_enum_list<recompute_choice>(v[0], f,
                                                          {{"none", recompute_choice::none},
                                                           {"selective", recompute_choice::selective},
                                                           {"full", recompute_choice::full},
                                                           {"block", recompute_choice::block},
                                                           {"op", recompute_choice::op}});
       }, "space.recompute"},
      {"--zero-stage", {}, "LIST", 1, "ZeRO stages [all the framework allows]",
       [s](const auto& v, const auto& f) {
         for (auto z : parse_int_list(v[0], f, 0)) {
           if (z > 3) throw input_error(f + " must be 0-3, got " + std::to_string(z));
           s->zero_stage.push_back(static_cast<int>(z));
         }
       }, "space.zero_stage"},
      {"--sp", {}, "LIST", 1, "sequence parallelism: on,off [both with Megatron]",
       [s](const auto& v, const auto& f) {
         s->sequence_parallel = parse_enum_list<bool>(v[0], f, {{"on", true}, {"off", false}});
       }, "space.sequence_parallel"},
      {"--sequence-parallel", {}, "", 0, "= --sp on", [s](const auto&, const auto&) { s->sequence_parallel = {true}; }},
      {"--embedding-as-stage", {}, "", 0, "each embedding in its own pipeline slot (BLOOM), always",
       [s](const auto&, const auto&) { s->embedding_as_stage = {true}; }},
      {"--try-embedding-as-stage", {}, "", 0, "search with and without --embedding-as-stage",
       [s](const auto&, const auto&) { s->embedding_as_stage = {false, true}; }},
      {"--rank-by", {}, "KIND", 1, "iteration, train-time or cost [iteration]",
       [s](const auto& v, const auto& f) {
         s->rank = parse_enum_list<rank_kind>(v[0], f,
                                              {{"iteration", rank_kind::iteration_time},
                                               {"train-time", rank_kind::train_time},
                                               {"cost", rank_kind::cost}})
                       .front();
       }},
      {"--train-tokens", {}, "TOKENS", 1, "token budget (days column; --rank-by train-time)",
       [s](const auto& v, const auto& f) { s->train_tokens = detail::parse_positive(v[0], f); }},
      {"--top", {"--top-k"}, "K", 1, "rows shown [10]", [s](const auto& v, const auto& f) { s->top_k = parse_count(v[0], f); }, "space.top_k"},
      {"--exhaustive", {}, "", 0, "time every layout that fits (no bound)", [s](const auto&, const auto&) { s->exhaustive = true; }},
      {"--threads", {}, "N", 1, "worker threads [every core]",
       [s](const auto& v, const auto& f) {
         const std::int64_t n = parse_count(v[0], f);
         if (n > kMaxSearchThreads) {
           throw input_error(f + " must be at most " + std::to_string(kMaxSearchThreads) + ", got " + v[0]);
         }
         s->threads = static_cast<unsigned>(n);
       }, "space.threads"},
      {"--explain", {}, "N", 1, "full analysis (memory, comm, time) of row N",
       [r](const auto& v, const auto& f) { r->explain_row = parse_count(v[0], f); }},
      {"--csv", {}, "", 0, "every evaluated layout as CSV", [r](const auto&, const auto&) { r->csv = true; }},
  };
}

/// Job flags that fix a layout: in a search they are dimensions, given above as lists.
constexpr const char* kLayoutJobFlags[] = {"--dp", "--data-parallel-size", "--use-distributed-optimizer",
                                           "--num-layers-per-virtual-pipeline-stage", "--vpp-layers",
                                           "--recompute-activations", "--checkpoint-activations"};

}  // namespace

std::vector<std::string> default_search_args() {
  return {"--model", "bloom-176b", "--cluster", "jean-zay-a100", "--num-nodes", "48", "--gbs", "2048", "--bf16",
          "--framework", "deepspeed", "--try-embedding-as-stage"};
}

search_request parse_search_request(const std::vector<std::string>& args_in) {
  search_request r;
  std::vector<std::string> rest = detail::take_local_flags(search_table(&r), args_in);
  if (rest.empty()) {
    // Only search flags (or none): the README's main job, with the user's search flags on top.
    std::vector<std::string> args = default_search_args();
    args.insert(args.end(), args_in.begin(), args_in.end());
    r = search_request{};
    rest = detail::take_local_flags(search_table(&r), args);
  }
  for (const std::string& a : rest) {
    for (const char* f : kLayoutJobFlags) {
      if (a == f || a.starts_with(std::string(f) + "=")) {
        throw input_error(a + " fixes part of the layout; in a search use --tp/--pp/--mbs/--zero-stage/--recompute lists "
                          "(`trainplan help search`)");
      }
    }
  }
  r.base = parse_job_args(rest, model_need::model_only);
  r.job_args = rest;
  if (r.base.job.parallel.account_embedding_in_split || r.base.job.parallel.account_loss_in_split) {
    throw input_error(std::string(r.base.job.parallel.account_embedding_in_split ? "--account-for-embedding-in-pipeline-split"
                                                                                  : "--account-for-loss-in-pipeline-split") +
                      " fixes how one layout splits its layers; a layout search (`search`, and `shapes` for each "
                      "shape) tries the splits itself (uneven ends included): give it to `time` or `memory` for one "
                      "layout");
  }
  if (!r.base.job.parallel.layout_stages.empty()) {
    throw input_error("--pipeline-model-parallel-layout (or --hybrid-layer-pattern's | segments) fixes PP, VPP and every "
                      "stage's layers; a layout search (`search`, and `shapes` for each shape) tries the splits "
                      "itself (uneven ends included): give it to `time` or `memory` for one layout, or the pattern "
                      "without |");
  }
  if (r.base.job.training.gradient_accumulation_steps > 0) {
    throw input_error("--gradient-accumulation-steps ties the global batch to DP, which a search varies: give the global "
                      "batch (--gbs, DeepSpeed's train_batch_size) instead");
  }
  if (r.base.job.training.global_batch_size <= 0) {
    throw input_error("search needs the global batch: --global-batch-size (--gbs)");
  }
  // The cluster searched: --num-nodes, or the nodes --num-gpus (--max-gpus) fills.
  const std::int64_t gpn = r.base.job.cluster.gpus_per_node;
  if (r.space.max_nodes > 0) {
    r.base.job.cluster.num_nodes = r.space.max_nodes;
  } else if (r.space.max_gpus > 0) {
    r.base.job.cluster.num_nodes = (r.space.max_gpus + gpn - 1) / gpn;
  }
  return r;
}

std::vector<std::string> candidate_flags(const search_candidate& c, framework_kind framework) {

  // apply_candidate's fields as the job flags that set them.
  auto n = [](std::int64_t v) { return std::to_string(v); };
  std::vector<std::string> a = {"--num-gpus", n(c.num_gpus), "--tp", n(c.tp), "--pp", n(c.pp), "--mbs", n(c.mbs)};
  auto add = [&a](std::initializer_list<std::string> more) { a.insert(a.end(), more); };
  if (c.cp > 1) add({"--cp", n(c.cp)});
  if (c.ep > 1) add({"--ep", n(c.ep)});
  if (c.etp != c.tp) add({"--etp", n(c.etp)});
  if (c.dispatcher != moe_dispatcher_kind::framework_default) {
    add({"--moe-token-dispatcher-type", std::string(to_string(c.dispatcher))});
  }
  if (c.vpp > 1) add({"--vpp", n(c.vpp)});
  if (c.first_stage_layers >= 0) add({"--decoder-first-pipeline-num-layers", n(c.first_stage_layers)});
  if (c.last_stage_layers >= 0) add({"--decoder-last-pipeline-num-layers", n(c.last_stage_layers)});
  if (c.sequence_parallel) add({"--sequence-parallel"});
  if (c.embedding_as_stage) add({"--embedding-as-stage"});
  switch (c.recompute) {
    case recompute_choice::none: break;
    case recompute_choice::selective: add({"--recompute-granularity", "selective"}); break;
    case recompute_choice::full: add({"--recompute-granularity", "full", "--recompute-method", "uniform", "--recompute-num-layers", "1"}); break;
    case recompute_choice::block:
      add({"--recompute-granularity", "full", "--recompute-method", "block", "--recompute-num-layers", n(c.recompute_num_layers)});
      break;
    case recompute_choice::op: add({"--recompute-granularity", "op"}); break;
  }
  if (framework == framework_kind::megatron && c.zero_stage == 1) add({"--use-distributed-optimizer"});
  else if (c.zero_stage > 0) add({"--zero-stage", std::to_string(c.zero_stage)});
  return a;
}

std::string search_flags_help() { return detail::local_flags_help(detail::search_flag_rows()); }

std::vector<detail::local_flag> detail::search_flag_rows() {
  static search_request dummy;
  return search_table(&dummy);
}

}  // namespace trainplan
