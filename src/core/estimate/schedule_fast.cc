// The pipeline schedules' fast paths (docs/formulas.md §5.4 "Fast path"): Megatron's orders evaluated
// step by step without polling, steady states extrapolated, and a dependency chase for the rest; each
// equal to the event simulation of src/core/estimate/schedule.cc (tests/core/estimate/schedule_test.cc).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "trainplan/core/base/checked.h"
#include "estimate/schedule_detail.h"

namespace trainplan::detail {

namespace {

/// Usage totals the simulation accumulates op by op, in closed form: m·v forwards and backwards per
/// rank, a send after every one but the last rank's last-chunk forwards and the first rank's
/// first-chunk backwards, all blocking or all overlapped; or, where only the steady phase overlaps its
/// sends, each rank's blocked send seconds as its evaluation counted them (`blocked`).
void fill_usage(const schedule_input& in, const double* end, schedule_result& r, const double* blocked = nullptr) {
  const auto p = static_cast<std::int64_t>(in.stages.size());
  const double m = static_cast<double>(in.num_microbatches);
  const double mv = m * static_cast<double>(in.num_chunks);
  r.stages.resize(static_cast<std::size_t>(p));
  r.pipeline_s = 0;
  for (std::int64_t rank = 0; rank < p; ++rank) {
    const stage_times& st = in.stages[static_cast<std::size_t>(rank)];
    stage_usage& u = r.stages[static_cast<std::size_t>(rank)];
    u.busy_s = mv * (st.forward_s + st.backward_s);
    const double fwd_sends = p > 1 ? mv - (rank == p - 1 ? m : 0.0) : 0.0;
    const double bwd_sends = p > 1 ? mv - (rank == 0 ? m : 0.0) : 0.0;
    u.send_s = blocked != nullptr ? blocked[rank] : blocked_send_s(in, (fwd_sends + bwd_sends) * in.p2p_s, true);
    u.pipeline_end_s = end[rank];
    r.pipeline_s = std::max(r.pipeline_s, u.pipeline_end_s);
  }
  for (stage_usage& u : r.stages) u.idle_s = r.pipeline_s - u.busy_s - u.send_s;
}

/// Scratch for the fast paths, reused across calls on one thread.
struct fast_scratch {
  std::vector<double> free_at;   ///< end of each rank's last operation
  std::vector<double> fwd_end;   ///< end of each rank's last two forwards, by micro-batch parity (2p)
  std::vector<double> saved;     ///< the state after the previous steady step (2p; interleaved 4p)
  std::vector<std::int64_t> counters;  ///< interleaved: each rank's chunk counters (4p)
  std::vector<double> entry;     ///< 1F1B cool-down: each row's entry value (p)
  std::vector<double> ends;      ///< 1F1B cool-down: each rank's last backward end (p)
  std::vector<double> upper;     ///< 1F1B cool-down: the row above a run of ranks, by step (p)
  std::vector<double> lower;     ///< and the run's own lowest row (p)
  std::vector<double> chunk_fwd;  ///< interleaved: each chunk's forward, rank-major (rank·v + chunk)
  std::vector<double> chunk_bwd;  ///< and its backward
  std::vector<double> blocked;    ///< each rank's blocked send seconds (warm-up and cool-down sends, §5.4)
};

fast_scratch& scratch() {
  thread_local fast_scratch s;
  return s;
}

/// 1F1B's warm-up in closed form (§5.4 "Fast path"): with every warm-up uncapped (m ≥ p − 1), rank r
/// runs forwards 0 … w_r − 1 and nothing else before step 0, and forward j of rank r ends at the longest
/// path of the grid (rank, micro-batch) from (0, 0), each cell costing t_q = F_q + c on rank q:
/// Σ_{q≤r} t_q + j · max_{q≤r} t_q (the extra cells all on the slowest rank so far). Fills each rank's
/// free time and its last two forward ends, as the stepped warm-up leaves them.
void one_f_one_b_warm_up(const schedule_input& in, double* free_at, double* fe) {
  const auto p = static_cast<std::int64_t>(in.stages.size());
  double sum = 0, slowest = 0;
  for (std::int64_t rank = 0; rank + 1 < p; ++rank) {
    const double t = in.stages[static_cast<std::size_t>(rank)].forward_s + in.p2p_s;
    sum += t;
    slowest = std::max(slowest, t);
    const std::int64_t w = p - rank - 1;
    const double last = sum + static_cast<double>(w - 1) * slowest;
    free_at[rank] = last;
    fe[2 * rank + ((w - 1) & 1)] = last;
    if (w >= 2) fe[2 * rank + ((w - 2) & 1)] = sum + static_cast<double>(w - 2) * slowest;
  }
}

/// The same warm-up where ranks wait a delay D_q before their first forward's work (§5.4 "Fast path"):
/// cell (q, 0) costs t_q + D_q. A path to (r, j ≥ 1) leaves column 0 at some row k, so forward j of rank r
/// ends at S_r + max_k [A_k + t_k + (j − 1)·M(k, r)], S_r = Σ_{q≤r} t_q, A_k = Σ_{q≤k} D_q, M(k, r) =
/// max_{k≤q≤r} t_q; forward 0 at S_r + A_r. M(·, r) is constant between the suffix maxima of t, kept on
/// a stack with the best A_k + t_k of their stretch: one entry per distinct slower rank, a handful.
void one_f_one_b_warm_up_delayed(const schedule_input& in, double* free_at, double* fe) {
  struct stretch {
    double slowest;  ///< M(k, r) for every k of the stretch
    double best;     ///< max over its k of A_k + t_k
  };
  thread_local std::vector<stretch> stack;
  stack.clear();
  const auto p = static_cast<std::int64_t>(in.stages.size());
  double sum = 0, delays = 0;
  for (std::int64_t rank = 0; rank + 1 < p; ++rank) {
    const stage_times& st = in.stages[static_cast<std::size_t>(rank)];
    const double t = st.forward_s + in.p2p_s;
    sum += t;
    delays += st.first_forward_delay_s;
    stretch top{t, delays + t};
    while (!stack.empty() && stack.back().slowest <= t) {
      top.best = std::max(top.best, stack.back().best);
      stack.pop_back();
    }
    stack.push_back(top);
    auto end_of = [&](std::int64_t j) {
      if (j == 0) return sum + delays;
      double best = -std::numeric_limits<double>::infinity();
      for (const stretch& e : stack) best = std::max(best, e.best + static_cast<double>(j - 1) * e.slowest);
      return sum + best;
    };
    const std::int64_t w = p - rank - 1;
    const double last = end_of(w - 1);
    free_at[rank] = last;
    fe[2 * rank + ((w - 1) & 1)] = last;
    if (w >= 2) fe[2 * rank + ((w - 2) & 1)] = end_of(w - 2);
  }
}

/// 1F1B's cool-down in closed form (§5.4 "Fast path"), from the state after step k₀ = m − p, the last
/// step every rank runs a forward and a backward, once the steady steps move the state by λ a step.
/// Rank r stays steady r more steps (its backward at step k₀ + i ends at free_at[r] + i·λ: those steps
/// read only steady operations), then runs backwards alone at steps k₀ + r + 1 … m − 1: the cells
/// (r, u), u = r + 1 … p − 1, of a grid where a cell is max(the cell before it, the cell of rank r + 1
/// at the same step) + s_r, s_r = B_r + c (B_0 for rank 0). Its longest paths enter each row r at its
/// first cell with E_r = max(rank r's and rank r + 1's last steady backward). Over a run of ranks with
/// one s, a path of n cells is worth n·s wherever it turns, so the run's ends and its lowest row follow
/// from E and the row above in one pass each: O(p) per run of alike ranks. Writes each rank's last
/// backward end into s.ends.
void one_f_one_b_cool_down(const schedule_input& in, const double* free_at, double lambda, fast_scratch& s) {
  const auto p = static_cast<std::int64_t>(in.stages.size());
  const auto pz = static_cast<std::size_t>(p);
  constexpr double kNone = -std::numeric_limits<double>::infinity();
  s.entry.resize(pz);
  s.ends.resize(pz);
  s.upper.assign(pz, kNone);
  s.lower.assign(pz, kNone);
  double* entry = s.entry.data();
  double* ends = s.ends.data();
  double* upper = s.upper.data();
  double* lower = s.lower.data();
  auto last_steady = [&](std::int64_t rank) { return free_at[rank] + static_cast<double>(rank) * lambda; };
  for (std::int64_t rank = 0; rank + 1 < p; ++rank) entry[rank] = std::max(last_steady(rank), last_steady(rank + 1));
  ends[p - 1] = last_steady(p - 1);
  auto cell_s = [&](std::int64_t rank) {
    return in.stages[static_cast<std::size_t>(rank)].backward_s + (rank == 0 ? 0.0 : in.p2p_s);
  };
  std::int64_t upper_from = p;  // `upper` holds steps [upper_from, p − 1]; none above the top run
  for (std::int64_t top = p - 2; top >= 0;) {
    const double sv = cell_s(top);
    std::int64_t low = top;
    while (low > 0 && cell_s(low - 1) == sv) --low;
    // Paths from the row above enter at row `top`, step u: worth upper[u] + sv·(cells to the end).
    double from_above = kNone;
    for (std::int64_t u = upper_from; u < p; ++u) from_above = std::max(from_above, upper[u] - sv * static_cast<double>(u));
    double best_entry = kNone;
    for (std::int64_t rank = top; rank >= low; --rank) {
      best_entry = std::max(best_entry, entry[rank]);
      ends[rank] = std::max(best_entry + sv * static_cast<double>(p - 1 - rank),
                            from_above + sv * static_cast<double>(top - rank + p));
    }
    if (low > 0) {
      // The run's lowest row, cell (low, u) for u = low + 1 … p − 1: the row above the next run.
      double entries = kNone, above = kNone;
      for (std::int64_t u = low + 1; u < p; ++u) {
        if (u - 1 <= top) entries = std::max(entries, entry[u - 1]);
        double v = entries + sv * static_cast<double>(u - low);
        if (u >= upper_from) {
          above = std::max(above, upper[u] - sv * static_cast<double>(u));
          v = std::max(v, above + sv * static_cast<double>(top - low + u + 1));
        }
        lower[u] = v;
      }
      std::swap(upper, lower);
      upper_from = low + 1;
    }
    top = low - 1;
  }
}

}  // namespace

/// 1F1B in Megatron's per-rank order (build_ops), evaluated step by step (§5.4 "Fast path"). Rank r
/// warms up with w_r = min(p − r − 1, m) forwards; its forward of micro-batch j belongs to step
/// j − w_r and its backward of micro-batch j to step j. Every input of a step's operations comes from
/// an earlier step, from a lower rank's forward of the same step or a higher rank's backward of the
/// same step, so one pass — for each step, forwards by ascending rank, then backwards by descending
/// rank — meets every operation after its inputs and after the rank's previous operation.
///
/// Steady steps (every rank runs one forward and one backward) apply one and the same max-plus map to
/// the state (each rank's last forward and last backward end). Once a step moves every component of
/// the state by the same amount λ (to 64 ulp of the state's size), every later steady step does (the
/// map commutes with adding a constant and does not expand differences), so the remaining steady steps
/// are added as n·λ; the error of that is at most n × the tolerance, under 1e-10 relative for
/// m ≤ 10⁴.
void one_f_one_b_fast(const schedule_input& in, schedule_result& r) {
  const auto p = static_cast<std::int64_t>(in.stages.size());
  const std::int64_t m = in.num_microbatches;
  const double c = in.p2p_s;
  fast_scratch& s = scratch();
  s.free_at.assign(static_cast<std::size_t>(p), 0.0);
  s.fwd_end.assign(static_cast<std::size_t>(2 * p), 0.0);
  s.saved.assign(static_cast<std::size_t>(2 * p), 0.0);
  double* free_at = s.free_at.data();
  double* fe = s.fwd_end.data();
  double* saved = s.saved.data();
  const stage_times* st = in.stages.data();
  auto warm = [&](std::int64_t rank) { return std::min(p - rank - 1, m); };
  const std::int64_t w0 = warm(0);
  // Steps [0, steady_end) are steady on every rank.
  const std::int64_t steady_end = m - w0;
  bool have_saved = false;
  bool jumped = false;
  // With uncapped warm-ups and a steady step, the warm-up and (once the steady state is periodic) the
  // cool-down are closed forms: O(p) instead of O(p²) steps of p ranks.
  const bool closed_ends = p >= 3 && m >= p;
  // §5.4: a delay before each rank's first forward (none but Megatron's unaligned parameter gather). Without
  // delays the delayed form gives the same ends; the plain one keeps their rounding and its single pass.
  if (closed_ends) {
    if (has_first_forward_delays(in)) {
      one_f_one_b_warm_up_delayed(in, free_at, fe);
    } else {
      one_f_one_b_warm_up(in, free_at, fe);
    }
  }
  for (std::int64_t k = closed_ends ? 0 : -w0; k < m; ++k) {
    for (std::int64_t rank = 0; rank < p; ++rank) {  // forwards, ascending rank
      const std::int64_t j = k + warm(rank);
      if (j < 0 || j >= m) continue;
      const double ready = rank > 0 ? fe[2 * (rank - 1) + (j & 1)] : 0.0;
      const double delay = j == 0 ? st[rank].first_forward_delay_s : 0.0;
      const double end =
          std::max(free_at[rank], ready) + delay + st[rank].forward_s + (rank == p - 1 ? 0.0 : c);
      fe[2 * rank + (j & 1)] = end;
      free_at[rank] = end;
    }
    if (k >= 0) {
      for (std::int64_t rank = p - 1; rank >= 0; --rank) {  // backwards of micro-batch k, descending rank
        const double ready = rank < p - 1 ? free_at[rank + 1] : fe[2 * rank + (k & 1)];
        free_at[rank] = std::max(free_at[rank], ready) + st[rank].backward_s + (rank == 0 ? 0.0 : c);
      }
    }
    if (jumped || k < 0 || k >= steady_end - 1) continue;
    // State after steady step k: rank r's forward of micro-batch k + w_r and backward of k. One pass
    // takes the state's size and the spread of its moves since the previous step; a spread within the
    // tolerance puts every move within it of rank 0's, λ.
    const double lambda = free_at[0] - saved[0];
    double scale = 0, lowest = std::numeric_limits<double>::infinity(), highest = -lowest;
    for (std::int64_t rank = 0; rank < p; ++rank) {
      const double b_now = free_at[rank], f_now = fe[2 * rank + ((k + warm(rank)) & 1)];
      const double db = b_now - saved[2 * rank], df = f_now - saved[2 * rank + 1];
      scale = std::max(scale, b_now);
      lowest = std::min(lowest, std::min(db, df));
      highest = std::max(highest, std::max(db, df));
      saved[2 * rank] = b_now;
      saved[2 * rank + 1] = f_now;
    }
    const bool periodic = have_saved && highest - lowest <= 64 * std::numeric_limits<double>::epsilon() * scale;
    have_saved = true;
    if (!periodic) continue;
    // Jump to the last steady step.
    const std::int64_t target = steady_end - 1;
    const double shift = static_cast<double>(target - k) * lambda;
    for (std::int64_t rank = 0; rank < p; ++rank) {
      free_at[rank] += shift;
      fe[2 * rank + ((target + warm(rank)) & 1)] = saved[2 * rank + 1] + shift;
    }
    jumped = true;
    k = target;
    if (closed_ends) {
      one_f_one_b_cool_down(in, free_at, lambda, s);
      fill_usage(in, s.ends.data(), r);
      return;
    }
  }
  fill_usage(in, free_at, r);
}

namespace {

/// Interleaved fast path, at a steady period boundary after step `step`: compare each rank's last
/// forward and backward ends with a period earlier (`snap`, updated); once all moved by the same λ
/// (to 64 ulp), add the whole periods that stay inside the steady steps to every end and return the
/// steps skipped (§5.4 "Fast path"). `jumped` is set once extrapolation is done.
std::int64_t skip_periods(std::int64_t p, std::int64_t step, std::int64_t period, std::int64_t steady_end,
                          double* fe_prev, double* be_prev, double* free_at, double* snap, bool& have_snap,
                          bool& jumped) {
  double scale = 0;
  for (std::int64_t rank = 0; rank < p; ++rank) scale = std::max(scale, free_at[rank]);
  const double tol = 64 * std::numeric_limits<double>::epsilon() * scale;
  bool periodic = have_snap;
  const double lambda = have_snap ? be_prev[0] - snap[1] : 0.0;
  for (std::int64_t rank = 0; rank < p; ++rank) {
    if (periodic) {
      periodic = std::fabs(fe_prev[rank] - snap[2 * rank] - lambda) <= tol &&
                 std::fabs(be_prev[rank] - snap[2 * rank + 1] - lambda) <= tol;
    }
    snap[2 * rank] = fe_prev[rank];
    snap[2 * rank + 1] = be_prev[rank];
  }
  have_snap = true;
  if (!periodic) return 0;
  // Whole periods that stay inside the steady steps; counters repeat with the period.
  const std::int64_t n = (steady_end - 1 - step) / period;
  jumped = true;
  if (n <= 0) return 0;
  const double shift = static_cast<double>(n) * lambda;
  for (std::int64_t rank = 0; rank < p; ++rank) {
    fe_prev[rank] += shift;
    be_prev[rank] += shift;
    free_at[rank] += shift;  // a steady step ends with the rank's backward
  }
  return n * period;
}

/// Interleaved 1F1B in Megatron's per-rank order (build_ops), evaluated step by step (§5.4 "Fast
/// path"). Rank r warms up with W_r = 2(p − r − 1) + (v − 1)p virtual forwards; its forward of virtual
/// micro-batch k belongs to step k − W_r − r and its backward of virtual k to step k − r. With every
/// warm-up uncapped (W_0 ≤ m·v), each operation's input is produced in the step just before its own
/// (rank r − 1's forward of the same k; rank p − 1's forward k − p for rank 0's later chunks; rank
/// r + 1's backward of the same k; rank 0's backward k − p for rank p − 1's earlier chunks), or is the
/// rank's own forward of the same step (the last rank's last chunk): steps in order, each rank its
/// forward then its backward, is a dependency order, and a step reads only the previous step's ends.
///
/// Steady steps [0, m·v − W_0) repeat their pattern (chunks, sends, inputs) every p·v steps. After
/// each such period the state (each rank's last forward and backward end) is compared with the state a
/// period earlier; once every component moved by the same λ (to 64 ulp), every later period does (the
/// period's max-plus map commutes with adding a constant), and whole periods are added as n·λ, as for
/// 1F1B. Returns false when a warm-up is capped (m = p with p > 2) or the micro-batch group is not p:
/// the caller chases dependencies.
bool interleaved_fast(const schedule_input& in, schedule_result& r) {
  const auto p = static_cast<std::int64_t>(in.stages.size());
  const std::int64_t m = in.num_microbatches;
  const std::int64_t v = in.num_chunks;
  const std::int64_t mv = m * v;
  const std::int64_t w0 = 2 * (p - 1) + (v - 1) * p;
  if (w0 > mv || group_of(in) != p) return false;  // another group size: the dependency chase
  const double c = in.p2p_s;
  fast_scratch& s = scratch();
  const auto pz = static_cast<std::size_t>(p);
  s.free_at.assign(pz, 0.0);
  // fwd_end: [0, p) the previous step's forward ends, [p, 2p) this step's; saved likewise for backward.
  s.fwd_end.assign(2 * pz, 0.0);
  s.saved.assign(4 * pz, 0.0);  // [0, 2p): previous/current backward ends; [2p, 4p): period snapshot
  s.counters.resize(4 * pz);
  double* free_at = s.free_at.data();
  double* fe_prev = s.fwd_end.data();
  double* fe_cur = fe_prev + p;
  double* be_prev = s.saved.data();
  double* be_cur = be_prev + p;
  double* snap = be_prev + 2 * p;  // per rank: forward end, backward end
  s.blocked.assign(pz, 0.0);
  double* blocked = s.blocked.data();  // steady steps block nothing: the skipped periods add none
  std::int64_t* ctr = s.counters.data();  // per rank: forward (k mod p, (k / p) mod v), backward likewise
  // Each chunk's own work (§5.4), looked up rank-major in the loop below.
  s.chunk_fwd.resize(pz * static_cast<std::size_t>(v));
  s.chunk_bwd.resize(pz * static_cast<std::size_t>(v));
  for (std::int64_t rank = 0; rank < p; ++rank) {
    const stage_times& st = in.stages[static_cast<std::size_t>(rank)];
    for (std::int64_t c = 0; c < v; ++c) {
      s.chunk_fwd[static_cast<std::size_t>(rank * v + c)] = chunk_forward_s(in, st, rank, c);
      s.chunk_bwd[static_cast<std::size_t>(rank * v + c)] = chunk_backward_s(in, st, rank, c);
    }
  }
  const double* cf = s.chunk_fwd.data();
  const double* cb = s.chunk_bwd.data();
  const std::int64_t first = -w0;  // rank 0's first forward
  // At the first step rank r's forward k is −r and its backward k is −r − W_0 ≤ 0: every rank's first
  // operation in either direction is virtual micro-batch 0.
  std::fill(s.counters.begin(), s.counters.end(), 0);
  const std::int64_t steady_end = mv - w0;  // steps [0, steady_end) run a forward and a backward everywhere
  const std::int64_t period = p * v;
  const std::int64_t phase = steady_end > 0 ? (steady_end - 1) % period : 0;
  bool have_snap = false;
  bool jumped = false;
  for (std::int64_t step = first; step < mv; ++step) {
    for (std::int64_t rank = 0; rank < p; ++rank) {
      const std::int64_t wr = 2 * (p - rank - 1) + (v - 1) * p;
      const std::int64_t kf = step + wr + rank;
      std::int64_t* cr = ctr + 4 * rank;
      double fe = fe_prev[rank];
      if (kf >= 0 && kf < mv) {
        const std::int64_t chunk = cr[1];
        double ready = 0;
        if (rank > 0) ready = fe_prev[rank - 1];
        else if (chunk > 0) ready = fe_prev[p - 1];
        const double send = (rank == p - 1 && chunk == v - 1) ? 0.0 : c;
        const double done = std::max(free_at[rank], ready) + cf[rank * v + chunk];
        fe = done + send;
        const bool steady = kf >= wr;  // the first W_r forwards are the warm-up
        free_at[rank] = rank_free_s(in, done, send, steady);
        blocked[rank] += blocked_send_s(in, send, steady);
        if (++cr[0] == p) {
          cr[0] = 0;
          if (++cr[1] == v) cr[1] = 0;
        }
      }
      fe_cur[rank] = fe;
      const std::int64_t kb = step + rank;
      double be = be_prev[rank];
      if (kb >= 0 && kb < mv) {
        const std::int64_t chunk = v - 1 - cr[3];
        double ready;
        if (rank < p - 1) ready = be_prev[rank + 1];
        else if (chunk < v - 1) ready = be_prev[0];
        else ready = fe;  // the last rank's own forward of the last chunk, this step
        const double send = (rank == 0 && chunk == 0) ? 0.0 : c;
        const double done = std::max(free_at[rank], ready) + cb[rank * v + chunk];
        be = done + send;
        const bool steady = kb < mv - wr;  // the last W_r backwards are the cool-down
        free_at[rank] = rank_free_s(in, done, send, steady);
        blocked[rank] += blocked_send_s(in, send, steady);
        if (++cr[2] == p) {
          cr[2] = 0;
          if (++cr[3] == v) cr[3] = 0;
        }
      }
      be_cur[rank] = be;
    }
    std::swap(fe_prev, fe_cur);
    std::swap(be_prev, be_cur);
    // After step `step`, the previous-step arrays hold its ends. Period boundaries of the steady state,
    // in the phase of its last step (steady_end − 1): the first comes within a period of step 0, and whole
    // periods from one land on the last steady step, with no steps left to run before the cool-down.
    if (jumped || step < phase || step >= steady_end || (step - phase) % period != 0) continue;
    step += skip_periods(p, step, period, steady_end, fe_prev, be_prev, free_at, snap, have_snap, jumped);
  }
  fill_usage(in, free_at, r, in.overlap_p2p ? blocked : nullptr);
  return true;
}

}  // namespace

/// GPipe: every forward (micro-batch by micro-batch, ascending rank), then every backward (descending
/// rank), a valid dependency order.
void gpipe_fast(const schedule_input& in, schedule_result& r) {
  const auto p = static_cast<std::int64_t>(in.stages.size());
  const std::int64_t m = in.num_microbatches;
  const double c = in.p2p_s;
  fast_scratch& s = scratch();
  s.free_at.assign(static_cast<std::size_t>(p), 0.0);
  double* free_at = s.free_at.data();
  const stage_times* st = in.stages.data();
  for (std::int64_t j = 0; j < m; ++j) {
    double ready = 0;
    for (std::int64_t rank = 0; rank < p; ++rank) {
      ready = std::max(free_at[rank], ready) + st[rank].forward_s + (rank == p - 1 ? 0.0 : c);
      free_at[rank] = ready;
    }
  }
  for (std::int64_t j = 0; j < m; ++j) {
    // The last rank's backward waits for its own forward of j, done before its last forward.
    double ready = 0;
    for (std::int64_t rank = p - 1; rank >= 0; --rank) {
      ready = std::max(free_at[rank], ready) + st[rank].backward_s + (rank == 0 ? 0.0 : c);
      free_at[rank] = ready;
    }
  }
  fill_usage(in, free_at, r);
}

namespace {

/// Any schedule, without polling: the simulation's per-operation rule, evaluated by chasing
/// dependencies. A rank runs its list until an input is missing, then the rank that owes the input
/// runs until it has produced it, and so on (a stack of waiting ranks); every operation is evaluated
/// once, after its input and its rank's previous operation, so the end times are the simulation's.
void chase_schedule(const schedule_input& in, schedule_result& r) {
  const auto p = static_cast<std::int64_t>(in.stages.size());
  const std::int64_t m = in.num_microbatches;
  const std::int64_t v = in.num_chunks;
  thread_local std::vector<double> done;
  thread_local std::vector<std::vector<op>> ops;
  thread_local std::vector<std::size_t> next;
  thread_local std::vector<std::pair<std::int64_t, std::size_t>> waiting;  // (rank, input it waits for)
  fast_scratch& s = scratch();
  done.assign(static_cast<std::size_t>(p * v * m * 2), -1.0);
  if (ops.size() < static_cast<std::size_t>(p)) ops.resize(static_cast<std::size_t>(p));
  const std::int64_t group = group_of(in);
  for (std::int64_t rank = 0; rank < p; ++rank) build_ops(in.kind, rank, p, m, v, group, ops[static_cast<std::size_t>(rank)]);
  next.assign(static_cast<std::size_t>(p), 0);
  s.free_at.assign(static_cast<std::size_t>(p), 0.0);
  s.blocked.assign(static_cast<std::size_t>(p), 0.0);
  waiting.clear();
  auto index = [&](std::int64_t rank, std::int64_t c, std::int64_t j, bool bwd) {
    return static_cast<std::size_t>(((rank * v + c) * m + j) * 2 + (bwd ? 1 : 0));
  };
  for (std::int64_t start = 0; start < p; ++start) {
    std::int64_t rank = start;
    for (;;) {
      const auto ri = static_cast<std::size_t>(rank);
      const std::vector<op>& list = ops[ri];
      const stage_times& st = in.stages[ri];
      std::size_t missing = SIZE_MAX;
      std::int64_t owner = 0;  // rank that owes the missing input
      bool resume = false;
      while (next[ri] < list.size()) {
        const op& o = list[next[ri]];
        std::size_t dep = SIZE_MAX;
        std::int64_t from = rank;
        if (!o.backward) {
          if (rank > 0) dep = index(from = rank - 1, o.chunk, o.microbatch, false);
          else if (o.chunk > 0) dep = index(from = p - 1, o.chunk - 1, o.microbatch, false);
        } else {
          if (rank < p - 1) dep = index(from = rank + 1, o.chunk, o.microbatch, true);
          else if (o.chunk < v - 1) dep = index(from = 0, o.chunk + 1, o.microbatch, true);
          else dep = index(rank, o.chunk, o.microbatch, false);
        }
        const double ready = dep == SIZE_MAX ? 0.0 : done[dep];
        if (ready < 0) {
          missing = dep;
          owner = from;
          break;
        }
        const double work =
            o.backward ? chunk_backward_s(in, st, rank, o.chunk) : chunk_forward_s(in, st, rank, o.chunk);
        const double send = o.backward ? send_bwd(in, rank, o.chunk) : send_fwd(in, rank, o.chunk, p);
        const double finished = std::max(s.free_at[ri], ready) + work;
        done[index(rank, o.chunk, o.microbatch, o.backward)] = finished + send;
        const bool steady = steady_operation(next[ri], list.size(), warmup_operations(in.kind, rank, p, m, v, group));
        s.free_at[ri] = rank_free_s(in, finished, send, steady);
        s.blocked[ri] += blocked_send_s(in, send, steady);
        ++next[ri];
        if (!waiting.empty() && done[waiting.back().second] >= 0) {
          resume = true;
          break;
        }
      }
      if (missing != SIZE_MAX) {
        TRAINPLAN_CHECK_MSG(waiting.size() < static_cast<std::size_t>(p), "pipeline schedule deadlocked");
        waiting.emplace_back(rank, missing);
        rank = owner;
        continue;
      }
      if (resume || !waiting.empty()) {
        // The input the top waiter needs lies on this rank: it is done once the rank's list is.
        TRAINPLAN_CHECK_MSG(done[waiting.back().second] >= 0, "pipeline schedule deadlocked");
        rank = waiting.back().first;
        waiting.pop_back();
        continue;
      }
      break;  // this rank is through and nobody waits
    }
  }
  fill_usage(in, s.free_at.data(), r, s.blocked.data());
}

}  // namespace

void interleaved_fast_or_chase(const schedule_input& in, schedule_result& r) {
  if (!interleaved_fast(in, r)) chase_schedule(in, r);
}

}  // namespace trainplan::detail
