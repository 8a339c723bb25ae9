// Layout search and architecture shapes (docs/formulas.md §7.1-§7.4): enumerate, prune by divisibility
// and memory, bound by compute, time the rest with the full model on every core, rank.
#include "trainplan/search.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <queue>
#include <string>
#include <thread>
#include <tuple>

#include "local_flags.h"
#include "trainplan/compute.h"
#include "trainplan/error.h"
#include "trainplan/memory.h"
#include "trainplan/model.h"
#include "trainplan/time.h"

namespace trainplan {

std::string_view to_string(rank_kind k) {
  switch (k) {
    case rank_kind::iteration_time: return "iteration";
    case rank_kind::train_time: return "train-time";
    case rank_kind::cost: return "cost";
  }
  return "?";
}

std::string_view to_string(recompute_choice k) {
  switch (k) {
    case recompute_choice::none: return "none";
    case recompute_choice::selective: return "selective";
    case recompute_choice::full: return "full";
    case recompute_choice::block: return "block";
  }
  return "?";
}

namespace {

using clock_type = std::chrono::steady_clock;
using detail::local_flag;
using detail::parse_count;
using detail::parse_int_list;

constexpr double kInf = std::numeric_limits<double>::infinity();

std::vector<std::int64_t> range(std::int64_t lo, std::int64_t hi) {
  std::vector<std::int64_t> v;
  for (std::int64_t x = lo; x <= hi; ++x) v.push_back(x);
  return v;
}

template <typename E>
std::vector<E> parse_enum_list(const std::string& text, const std::string& flag,
                               std::initializer_list<std::pair<const char*, E>> table) {
  std::vector<E> out;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    std::size_t end = text.find(',', pos);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(pos, end - pos);
    bool found = false;
    std::vector<std::string> names;
    for (const auto& [name, e] : table) {
      names.push_back(name);
      if (item == name) {
        if (std::find(out.begin(), out.end(), e) == out.end()) out.push_back(e);
        found = true;
      }
    }
    if (!found) {
      std::string all;
      for (const auto& n : names) all += (all.empty() ? "" : ", ") + n;
      throw input_error(flag + ": unknown value '" + item + "'" + did_you_mean(item, names) + "; one of: " + all);
    }
    pos = end + 1;
  }
  return out;
}

/// Transformer layers on the busiest pipeline rank, or 0 when the split is invalid (§2.2, split_layers).
std::int64_t max_stage_layers(const model_spec& m, framework_kind fw, std::int64_t pp, bool emb, std::int64_t vpp) {
  parallel_config p;
  p.pp = pp;
  p.vpp = vpp;
  p.embedding_as_stage = emb;
  if (vpp > 1 && emb) return 0;  // interleaving takes an even split only
  const stage_split split = split_layers(m.num_layers, p, fw);
  return split.valid ? split.most() : 0;
}

/// Does TP (and TP×CP) split the model, and sit evenly on the nodes (§7.1)?
bool tp_divides(const model_spec& m, std::int64_t tp) {
  if (m.num_attention_heads % tp != 0 || m.num_query_groups % tp != 0 || m.ffn_hidden_size % tp != 0) return false;
  return !m.is_moe() || m.moe.expert_ffn_hidden_size % tp == 0;
}
bool even_on_nodes(std::int64_t group, std::int64_t gpus_per_node) {
  return gpus_per_node % group == 0 || group % gpus_per_node == 0;
}

std::vector<int> zero_stages_for(framework_kind fw, std::int64_t pp) {
  switch (fw) {
    case framework_kind::megatron: return {0, 1};
    case framework_kind::deepspeed: return pp > 1 ? std::vector<int>{0, 1} : std::vector<int>{0, 1, 2, 3};
    case framework_kind::fsdp: return pp > 1 ? std::vector<int>{} : std::vector<int>{0, 2, 3};
  }
  return {};
}

/// A layout before memory and time: the integers of a candidate.
struct proto {
  search_candidate c;
  std::int64_t stage_layers = 0;  ///< transformer layers on the busiest rank
};

/// Per-(TP, CP, EP, MBS, SP) dense-layer compute, shared by every layout that differs only in PP, DP,
/// recomputation or ZeRO (§7.2).
struct layer_key {
  std::int64_t tp, cp, ep, mbs;
  bool sp;
  auto operator<=>(const layer_key&) const = default;
};

/// The job of a candidate, without finalizing (the caller finalizes).
void apply_candidate(job_spec& j, const job_spec& base, const search_candidate& c) {
  j.parallel = base.parallel;
  j.training = base.training;
  parallel_config& p = j.parallel;
  training_config& t = j.training;
  p.tp = c.tp;
  p.pp = c.pp;
  p.cp = c.cp;
  p.ep = c.ep;
  p.dp = 1;
  p.vpp = 1;
  p.num_layers_per_virtual_stage = c.vpp > 1 ? j.model.num_layers / c.pp / c.vpp : 0;
  p.first_stage_layers = -1;
  p.last_stage_layers = -1;
  p.sequence_parallel = c.sequence_parallel;
  p.embedding_as_stage = c.embedding_as_stage;
  t.micro_batch_size = c.mbs;
  t.zero_stage = c.zero_stage;
  t.distributed_optimizer = t.framework == framework_kind::megatron && c.zero_stage == 1;
  t.recompute_num_layers = 0;
  t.recompute_method_ = recompute_method::uniform;
  switch (c.recompute) {
    case recompute_choice::none: t.recompute = recompute_granularity::none; break;
    case recompute_choice::selective: t.recompute = recompute_granularity::selective; break;
    case recompute_choice::full: t.recompute = recompute_granularity::full; t.recompute_num_layers = 1; break;
    case recompute_choice::block:
      t.recompute = recompute_granularity::full;
      t.recompute_method_ = recompute_method::block;
      t.recompute_num_layers = c.recompute_num_layers;
      break;
  }
  j.num_gpus = c.num_gpus;
  j.cluster.num_nodes = c.num_nodes;
}

double score_of(const search_space& s, double iteration_s, std::int64_t gpus) {
  return s.rank == rank_kind::cost ? iteration_s * static_cast<double>(gpus) : iteration_s;
}

/// Orders candidates best first; ties broken by fewer GPUs, then the layout integers (deterministic).
bool better(const search_candidate& a, const search_candidate& b) {
  if (a.score != b.score) return a.score < b.score;
  return std::tie(a.num_gpus, a.tp, a.pp, a.cp, a.ep, a.vpp, a.mbs, a.sequence_parallel, a.recompute,
                  a.recompute_num_layers, a.zero_stage, a.embedding_as_stage) <
         std::tie(b.num_gpus, b.tp, b.pp, b.cp, b.ep, b.vpp, b.mbs, b.sequence_parallel, b.recompute,
                  b.recompute_num_layers, b.zero_stage, b.embedding_as_stage);
}

std::string fmt_gib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", bytes / 1073741824.0);
  return buf;
}

std::string join(const std::vector<std::int64_t>& v) {
  std::string s;
  for (auto x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

/// Keep the user's values that the model allows; an empty result names the rule (contradictory input).
std::vector<std::int64_t> filter_given(const std::vector<std::int64_t>& given, const std::vector<std::int64_t>& all,
                                       const std::function<bool(std::int64_t)>& ok, const std::string& flag,
                                       const std::string& rule) {
  if (given.empty()) {
    std::vector<std::int64_t> out;
    for (auto x : all)
      if (ok(x)) out.push_back(x);
    return out;
  }
  std::vector<std::int64_t> out;
  for (auto x : given)
    if (ok(x)) out.push_back(x);
  if (out.empty()) throw input_error(flag + " " + join(given) + ": no value is valid: " + rule);
  return out;
}

}  // namespace

job_spec candidate_job(const job_spec& base, const search_candidate& c) {
  job_spec j = base;
  apply_candidate(j, base, c);
  finalize_job(j);
  return j;
}

search_result run_search(const job_spec& base_in, const search_space& s, const search_progress& progress) {
  const auto t0 = clock_type::now();
  job_spec base = base_in;
  finalize_model(base.model);
  const model_spec& m = base.model;
  const cluster_spec& cl = base.cluster;
  const framework_kind fw = base.training.framework;
  const std::int64_t gbs = base.training.global_batch_size;
  const std::int64_t gpn = cl.gpus_per_node;
  if (gbs <= 0) throw input_error("search needs the global batch: --global-batch-size (--gbs)");
  search_result res;
  res.model_params = static_cast<double>(count_parameters(m).total);

  // ---- per-dimension values (§7.1) ----
  const std::int64_t max_nodes = s.max_nodes > 0 ? s.max_nodes : cl.num_nodes;
  std::vector<std::int64_t> nodes = s.nodes.empty() ? range(1, max_nodes) : s.nodes;
  if (s.max_gpus > 0) {
    std::vector<std::int64_t> kept;
    for (auto n : nodes)
      if (n * gpn <= s.max_gpus) kept.push_back(n);
    if (kept.empty()) {
      throw input_error("--max-gpus " + std::to_string(s.max_gpus) + " is below one node (" + std::to_string(gpn) +
                        " GPUs): nothing to search");
    }
    nodes = kept;
  }
  const std::vector<std::int64_t> tps = filter_given(
      s.tp, range(1, gpn), [&](std::int64_t t) { return tp_divides(m, t) && even_on_nodes(t, gpn); }, "--tp",
      "TP must divide --num-attention-heads (" + std::to_string(m.num_attention_heads) + "), the query groups (" +
          std::to_string(m.num_query_groups) + ") and --ffn-hidden-size (" + std::to_string(m.ffn_hidden_size) +
          "), and sit evenly on nodes of " + std::to_string(gpn) + " GPUs");
  const std::vector<std::int64_t> pps = filter_given(
      s.pp, range(1, m.num_layers), [&](std::int64_t p) { return p <= m.num_layers; }, "--pp",
      "PP cannot exceed --num-layers (" + std::to_string(m.num_layers) + ")");
  std::vector<std::int64_t> cp_default = {1};
  if (m.seq_length >= 8192)
    for (std::int64_t c = 2; c <= 16; c *= 2) cp_default.push_back(c);
  const std::vector<std::int64_t> cps = filter_given(
      s.cp, s.cp.empty() ? cp_default : s.cp, [&](std::int64_t c) { return c == 1 || m.seq_length % (2 * c) == 0; },
      "--cp", "CP > 1 needs --seq-length (" + std::to_string(m.seq_length) + ") divisible by 2 × CP");
  std::vector<std::int64_t> ep_all = {1};
  if (m.is_moe()) ep_all = range(1, m.moe.num_experts);
  const std::vector<std::int64_t> eps = filter_given(
      s.ep, ep_all, [&](std::int64_t e) { return e == 1 || (m.is_moe() && m.moe.num_experts % e == 0); }, "--ep",
      m.is_moe() ? "EP must divide --num-experts (" + std::to_string(m.moe.num_experts) + ")"
                 : "EP > 1 needs an MoE model (--num-experts)");
  const std::vector<recompute_choice> recomputes =
      s.recompute.empty() ? std::vector<recompute_choice>{recompute_choice::none, recompute_choice::selective,
                                                          recompute_choice::full, recompute_choice::block}
                          : s.recompute;
  const std::vector<bool> sps = s.sequence_parallel.empty()
                                    ? (fw == framework_kind::megatron ? std::vector<bool>{false, true} : std::vector<bool>{false})
                                    : s.sequence_parallel;
  const std::vector<bool> embs =
      s.embedding_as_stage.empty() ? std::vector<bool>{base.parallel.embedding_as_stage} : s.embedding_as_stage;
  if (!s.vpp.empty() && fw != framework_kind::megatron && s.vpp != std::vector<std::int64_t>{1}) {
    throw input_error("--vpp " + join(s.vpp) + ": interleaving is Megatron-LM's (--framework megatron)");
  }
  for (int z : s.zero_stage) {
    bool ok = false;
    for (std::int64_t p : pps)
      for (int v : zero_stages_for(fw, p)) ok = ok || v == z;
    if (!ok) {
      throw input_error("--zero-stage " + std::to_string(z) + " is not available with --framework " +
                        std::string(to_string(fw)) + " and the pipeline sizes searched");
    }
  }

  // ---- enumerate; prune by divisibility and constraints (§7.1) ----
  std::vector<proto> protos;
  std::int64_t had_world = 0, had_batch = 0, had_dp_multiple = 0;
  // Why the last filters rejected combinations, with one example each, for the empty-space message.
  std::int64_t bad_split_pp = 0, bad_mbs = 0, bad_vpp_pp = 0;
  bool bad_sp = false;
  for (std::int64_t n : nodes) {
    const std::int64_t gpus = n * gpn;
    for (std::int64_t tp : tps) {
      for (std::int64_t cp : cps) {
        for (std::int64_t pp : pps) {
          for (std::int64_t ep : eps) {
            // Every combination of the inner dimensions counts as enumerated.
            const std::int64_t mp = tp * pp * cp;
            const auto inner = static_cast<std::int64_t>(recomputes.size() * sps.size() * embs.size());
            if (gpus % mp != 0 || !even_on_nodes(tp * cp, gpn)) {
              res.enumerated += inner;
              res.pruned_divisibility += inner;
              continue;
            }
            ++had_world;
            const std::int64_t dp = gpus / mp;
            if (gbs % dp != 0 || (ep > 1 && (dp * cp) % ep != 0) ||
                (cp > 1 && m.seq_length % (2 * cp) != 0)) {
              res.enumerated += inner;
              res.pruned_divisibility += inner;
              continue;
            }
            ++had_batch;
            if (dp % s.dp_multiple_of != 0) {
              res.enumerated += inner;
              res.pruned_constraint += inner;
              continue;
            }
            ++had_dp_multiple;
            std::vector<std::int64_t> mbss = s.mbs;
            if (mbss.empty()) {  // every micro-batch that divides the per-replica batch
              for (std::int64_t b = 1; b <= gbs / dp; ++b)
                if ((gbs / dp) % b == 0) mbss.push_back(b);
            }
            std::vector<int> zeros = zero_stages_for(fw, pp);
            if (!s.zero_stage.empty()) {
              std::vector<int> kept;
              for (int z : zeros)
                if (std::find(s.zero_stage.begin(), s.zero_stage.end(), z) != s.zero_stage.end()) kept.push_back(z);
              zeros = kept;
            }
            std::vector<std::int64_t> vpps = {1};
            if (fw == framework_kind::megatron && pp > 1 && m.num_layers % pp == 0) {
              for (std::int64_t v = 2; v <= m.num_layers / pp; ++v)
                if ((m.num_layers / pp) % v == 0) vpps.push_back(v);
            }
            if (!s.vpp.empty()) {
              std::vector<std::int64_t> kept;
              for (auto v : s.vpp)
                if (v == 1 || std::find(vpps.begin(), vpps.end(), v) != vpps.end()) kept.push_back(v);
              vpps = kept;
            }
            for (std::int64_t mbs : mbss) {
              const std::int64_t per_combo =
                  static_cast<std::int64_t>(zeros.size() * vpps.size() * recomputes.size() * sps.size() * embs.size());
              if (gbs % (mbs * dp) != 0) {
                bad_mbs = mbs;
                res.enumerated += std::max<std::int64_t>(per_combo, 1);
                res.pruned_divisibility += std::max<std::int64_t>(per_combo, 1);
                continue;
              }
              const std::int64_t micro = gbs / (mbs * dp);
              for (bool emb : embs) {
                for (std::int64_t vpp : vpps) {
                  const std::int64_t stage_layers = max_stage_layers(m, fw, pp, emb, vpp);
                  const bool vpp_ok = vpp == 1 || micro % pp == 0;
                  for (bool sp : sps) {
                    const bool sp_ok = !sp || (tp > 1 && (m.seq_length / cp) % tp == 0);
                    for (recompute_choice rc : recomputes) {
                      for (int z : zeros) {
                        ++res.enumerated;
                        if (stage_layers == 0 || !vpp_ok || !sp_ok) {
                          if (stage_layers == 0) bad_split_pp = pp;
                          if (!vpp_ok) bad_vpp_pp = pp;
                          bad_sp = bad_sp || !sp_ok;
                          ++res.pruned_divisibility;
                          continue;
                        }
                        proto pr;
                        search_candidate& c = pr.c;
                        c.num_gpus = gpus;
                        c.num_nodes = n;
                        c.tp = tp;
                        c.pp = pp;
                        c.cp = cp;
                        c.ep = ep;
                        c.dp = dp;
                        c.vpp = vpp;
                        c.mbs = mbs;
                        c.sequence_parallel = sp;
                        c.embedding_as_stage = emb;
                        c.recompute = rc;
                        c.zero_stage = z;
                        pr.stage_layers = stage_layers;
                        protos.push_back(pr);
                      }
                    }
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  if (protos.empty()) {
    std::string why;
    if (had_world == 0) {
      why = "no TP×PP×CP of the values searched divides the GPU counts (" + std::to_string(nodes.front() * gpn) +
            "..." + std::to_string(nodes.back() * gpn) + " GPUs)";
    } else if (had_batch == 0) {
      why = "--global-batch-size " + std::to_string(gbs) + " is not a multiple of any data-parallel size the layouts give";
    } else if (had_dp_multiple == 0) {
      why = "--dp-multiple-of " + std::to_string(s.dp_multiple_of) + " leaves no data-parallel size";
    } else {
      // Name only the rules that rejected something.
      std::vector<std::string> rules;
      if (bad_split_pp > 0) {
        rules.push_back("--pp " + std::to_string(bad_split_pp) + " does not split the " + std::to_string(m.num_layers) +
                        " layers (pick a divisor, or --embedding-as-stage / --framework deepspeed for uneven splits)");
      }
      if (bad_mbs > 0) rules.push_back("--mbs " + std::to_string(bad_mbs) + " does not divide GBS/DP");
      if (bad_vpp_pp > 0) {
        rules.push_back("--vpp needs the micro-batches to be a multiple of PP (" + std::to_string(bad_vpp_pp) + ")");
      }
      if (bad_sp) rules.push_back("--sequence-parallel needs TP > 1 dividing the sequence");
      why = "every combination breaks a layout rule: ";
      for (std::size_t i = 0; i < rules.size(); ++i) why += (i ? "; " : "") + rules[i];
    }
    throw input_error("nothing to search: " + why);
  }

  // ---- compute lower bounds (§7.2), shared per (TP, CP, EP, MBS, SP), in parallel ----
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  const unsigned threads = s.threads > 0 ? s.threads : hw;
  res.threads = threads;
  const compute_efficiency eff = effective_compute_efficiency(cl.gpu);
  const double capacity = static_cast<double>(cl.gpu.usable_memory_bytes);
  const double need_headroom = std::max(s.min_headroom_bytes, s.min_headroom_fraction * capacity);
  const auto total_work = static_cast<std::int64_t>(protos.size()) * 2;
  std::atomic<std::int64_t> done{0};
  std::atomic<std::int64_t> next_report{0};
  auto tick = [&](std::int64_t k) {
    const std::int64_t d = done.fetch_add(k) + k;
    if (!progress) return;
    std::int64_t nr = next_report.load();
    if (d >= nr && next_report.compare_exchange_strong(nr, d + std::max<std::int64_t>(1, total_work / 50))) {
      progress(d, total_work);
    }
  };
  auto parallel_for = [&](std::size_t count,
                          const std::function<void(std::size_t, job_spec&, std::map<layer_key, unit_time>&)>& fn) {
    std::atomic<std::size_t> cursor{0};
    auto worker = [&] {
      job_spec j = base;
      std::map<layer_key, unit_time> layers;
      constexpr std::size_t kChunk = 16;
      for (;;) {
        const std::size_t begin = cursor.fetch_add(kChunk);
        if (begin >= count) break;
        const std::size_t end = std::min(count, begin + kChunk);
        for (std::size_t i = begin; i < end; ++i) fn(i, j, layers);
        tick(static_cast<std::int64_t>(end - begin));
      }
    };
    std::vector<std::thread> pool;
    for (unsigned t = 1; t < threads; ++t) pool.emplace_back(worker);
    worker();
    for (auto& th : pool) th.join();
  };

  // The busiest rank's layers, every micro-batch, no bubble, communication, embedding or optimizer: no
  // layout can be faster. Block recomputation is bounded with one recomputed layer.
  parallel_for(protos.size(), [&](std::size_t i, job_spec& j, std::map<layer_key, unit_time>& layers) {
    proto& pr = protos[i];
    search_candidate& c = pr.c;
    const layer_key key{c.tp, c.cp, c.ep, c.mbs, c.sequence_parallel};
    auto it = layers.find(key);
    if (it == layers.end()) {
      apply_candidate(j, base, c);
      unit_time u = layer_compute(j, eff, false);
      if (m.is_moe()) {
        const unit_time moe = layer_compute(j, eff, true);
        if (moe.forward.total_s() + moe.backward.total_s() < u.forward.total_s() + u.backward.total_s()) u = moe;
      }
      it = layers.emplace(key, u).first;
    }
    const unit_time& u = it->second;
    const double f = u.forward.total_s();
    const double b = u.backward.total_s();
    const double layers_on_rank = static_cast<double>(pr.stage_layers);
    double extra = 0;
    switch (c.recompute) {
      case recompute_choice::none: break;
      case recompute_choice::selective: extra = layers_on_rank * u.forward.attention_s; break;
      case recompute_choice::full: extra = layers_on_rank * f; break;
      case recompute_choice::block: extra = f; break;
    }
    const double micro = static_cast<double>(gbs / (c.mbs * c.dp));
    c.lower_bound_s = micro * (layers_on_rank * (f + b) + extra);
  });
  // Best bound first: once a layout's bound exceeds the K-th best score, it cannot enter the top K.
  std::vector<std::size_t> order(protos.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const double sa = score_of(s, protos[a].c.lower_bound_s, protos[a].c.num_gpus);
    const double sb = score_of(s, protos[b].c.lower_bound_s, protos[b].c.num_gpus);
    return sa != sb ? sa < sb : a < b;
  });

  // ---- memory, then the full time model (§7.3), in parallel, with the bound ----
  enum class fate : char { bounded, invalid, no_fit, evaluated };
  std::vector<fate> fates(order.size(), fate::bounded);
  const std::size_t k = static_cast<std::size_t>(std::max<std::int64_t>(1, s.top_k));
  std::mutex mu;
  std::priority_queue<double> best;  // the K best scores
  std::atomic<double> threshold{kInf};
  const double samples = static_cast<double>(gbs);
  parallel_for(order.size(), [&](std::size_t oi, job_spec& j, std::map<layer_key, unit_time>&) {
    proto& pr = protos[order[oi]];
    search_candidate& c = pr.c;
    if (!s.exhaustive && score_of(s, c.lower_bound_s, c.num_gpus) > threshold.load(std::memory_order_relaxed)) return;
    // One evaluation's buffers per worker thread, reused from layout to layout; the memory report of
    // the last fit check is the one the time model uses (§7.3).
    thread_local layout_evaluation ev;
    thread_local std::vector<stage_layout> layout;
    parameter_breakdown params;
    auto fits_now = [&]() {
      memory_report& mr = ev.memory;
      estimate_memory(j, params, layout, mr);
      c.peak_reserved_bytes = mr.peak_reserved_bytes;
      c.headroom_bytes = capacity - mr.peak_reserved_bytes;
      return mr.fits && c.headroom_bytes >= need_headroom;
    };
    try {
      bool fits = false;
      if (c.recompute == recompute_choice::block) {
        // The fewest layers per stage recomputed that fit: fewer is faster (§7.1). Binary search.
        std::int64_t lo = 1, hi = pr.stage_layers - 1;
        if (hi < lo) {  // one layer per stage: block is full recomputation
          fates[oi] = fate::invalid;
          return;
        }
        c.recompute_num_layers = hi;
        apply_candidate(j, base, c);
        finalize_job(j);
        params = count_parameters(j.model, j.parallel.tp);
        pipeline_layout(j, layout);
        if (fits_now()) {
          while (lo < hi) {
            const std::int64_t mid = (lo + hi) / 2;
            j.training.recompute_num_layers = mid;
            if (fits_now()) hi = mid;
            else lo = mid + 1;
          }
          c.recompute_num_layers = hi;
          j.training.recompute_num_layers = hi;
          fits = fits_now();
        }
      } else {
        apply_candidate(j, base, c);
        finalize_job(j);
        params = count_parameters(j.model, j.parallel.tp);
        pipeline_layout(j, layout);
        fits = fits_now();
      }
      if (!fits) {
        fates[oi] = fate::no_fit;
        return;
      }
      time_report& t = ev.time;
      estimate_time(j, ev.memory, t);
      c.iteration_s = t.iteration_s;
      c.tflops_per_gpu = t.tflops_per_gpu;
      c.mfu = t.mfu;
      c.samples_per_s = t.samples_per_s;
      c.bubble_fraction = t.bubble_fraction;
    } catch (const input_error&) {
      fates[oi] = fate::invalid;
      return;
    }
    c.gpu_hours_per_iteration = c.iteration_s * static_cast<double>(c.num_gpus) / 3600;
    if (s.train_tokens > 0) c.train_days = s.train_tokens / (samples * m.seq_length) * c.iteration_s / 86400;
    c.score = score_of(s, c.iteration_s, c.num_gpus);
    fates[oi] = fate::evaluated;
    std::lock_guard<std::mutex> lock(mu);
    if (best.size() < k) best.push(c.score);
    else if (c.score < best.top()) {
      best.pop();
      best.push(c.score);
    }
    if (best.size() == k) threshold.store(best.top(), std::memory_order_relaxed);
  });
  for (std::size_t oi = 0; oi < order.size(); ++oi) {
    switch (fates[oi]) {
      case fate::evaluated: res.candidates.push_back(protos[order[oi]].c); break;
      case fate::bounded: ++res.pruned_bound; break;
      case fate::invalid: ++res.pruned_divisibility; break;
      case fate::no_fit: ++res.pruned_memory; break;
    }
  }
  if (res.candidates.empty()) {
    throw input_error("nothing fits: all " + std::to_string(protos.size()) + " layouts that divide need more memory than " +
                      (need_headroom > 0 ? "the GPU has after the headroom asked (--min-headroom-gib / --min-headroom-fraction)"
                                         : fmt_gib(capacity) + " GiB usable per GPU"));
  }
  res.evaluated = static_cast<std::int64_t>(res.candidates.size());
  std::sort(res.candidates.begin(), res.candidates.end(), better);
  res.pruned = res.pruned_divisibility + res.pruned_constraint + res.pruned_memory + res.pruned_bound;
  res.elapsed_s = std::chrono::duration<double>(clock_type::now() - t0).count();
  if (progress) progress(total_work, total_work);
  return res;
}

// ---- the search command's flags (§7.1) --------------------------------------------------------------

namespace {

std::vector<local_flag> search_table(search_request* r) {
  search_space* s = &r->space;
  auto ints = [](std::vector<std::int64_t> search_space::*field, search_space* sp) {
    return [sp, field](const std::vector<std::string>& v, const std::string& f) { sp->*field = parse_int_list(v[0], f); };
  };
  return {
      {"--tp", {"--tensor-model-parallel-size"}, "LIST", 1, "TP values, e.g. 1,2,4,8 or 2-8 [divisors of heads ≤ GPUs/node]",
       ints(&search_space::tp, s)},
      {"--pp", {"--pipeline-model-parallel-size"}, "LIST", 1, "PP values [every split of the layers]", ints(&search_space::pp, s)},
      {"--cp", {"--context-parallel-size"}, "LIST", 1, "CP values [1; powers of 2 to 16 from 8192 tokens]",
       ints(&search_space::cp, s)},
      {"--ep", {"--expert-model-parallel-size"}, "LIST", 1, "EP values [divisors of the experts]", ints(&search_space::ep, s)},
      {"--vpp", {"--virtual-pipeline-model-parallel-size"}, "LIST", 1, "model chunks per rank [all, Megatron]",
       ints(&search_space::vpp, s)},
      {"--mbs", {"--micro-batch-size"}, "LIST", 1, "micro-batch sizes [divisors of GBS/DP]", ints(&search_space::mbs, s)},
      {"--nodes", {}, "LIST", 1, "node counts [1 to --num-nodes]", ints(&search_space::nodes, s)},
      {"--num-nodes", {"--nnodes"}, "N", 1, "most nodes to use [the cluster's]",
       [s](const auto& v, const auto& f) { s->max_nodes = parse_count(v[0], f); }},
      {"--max-gpus", {"--num-gpus"}, "N", 1, "most GPUs to use", [s](const auto& v, const auto& f) { s->max_gpus = parse_count(v[0], f); }},
      {"--dp-multiple-of", {}, "N", 1, "DP must be a multiple of N (batch ramp-up needs it)",
       [s](const auto& v, const auto& f) { s->dp_multiple_of = parse_count(v[0], f); }},
      {"--min-headroom-gib", {}, "GIB", 1, "keep at least this much GPU memory free",
       [s](const auto& v, const auto& f) { s->min_headroom_bytes = detail::parse_nonnegative(v[0], f) * 1073741824.0; }},
      {"--min-headroom-fraction", {}, "X", 1, "keep at least this fraction of GPU memory free",
       [s](const auto& v, const auto& f) {
         s->min_headroom_fraction = detail::parse_nonnegative(v[0], f);
         if (s->min_headroom_fraction >= 1) throw input_error(f + " must be below 1");
       }},
      {"--recompute", {"--recompute-granularity"}, "LIST", 1, "none,selective,full,block [all]",
       [s](const auto& v, const auto& f) {
         s->recompute = parse_enum_list<recompute_choice>(v[0], f,
                                                          {{"none", recompute_choice::none},
                                                           {"selective", recompute_choice::selective},
                                                           {"full", recompute_choice::full},
                                                           {"block", recompute_choice::block}});
       }},
      {"--zero-stage", {}, "LIST", 1, "ZeRO stages [all the framework allows]",
       [s](const auto& v, const auto& f) {
         for (auto z : parse_int_list(v[0], f, 0)) {
           if (z > 3) throw input_error(f + " must be 0-3, got " + std::to_string(z));
           s->zero_stage.push_back(static_cast<int>(z));
         }
       }},
      {"--sp", {}, "LIST", 1, "sequence parallelism: on,off [both with Megatron]",
       [s](const auto& v, const auto& f) {
         s->sequence_parallel = parse_enum_list<bool>(v[0], f, {{"on", true}, {"off", false}});
       }},
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
      {"--top", {"--top-k"}, "K", 1, "rows shown [10]", [s](const auto& v, const auto& f) { s->top_k = parse_count(v[0], f); }},
      {"--exhaustive", {}, "", 0, "time every layout that fits (no bound)", [s](const auto&, const auto&) { s->exhaustive = true; }},
      {"--threads", {}, "N", 1, "worker threads [every core]",
       [s](const auto& v, const auto& f) { s->threads = static_cast<unsigned>(parse_count(v[0], f)); }},
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
  if (r.base.job.training.global_batch_size <= 0) {
    throw input_error("search needs the global batch: --global-batch-size (--gbs)");
  }
  if (r.space.max_nodes > 0) r.base.job.cluster.num_nodes = r.space.max_nodes;
  return r;
}

std::string search_flags_help() {
  search_request dummy;
  return detail::local_flags_help(search_table(&dummy));
}

}  // namespace trainplan
