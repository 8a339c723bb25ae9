// Internals of the pipeline schedules shared by the simulation and closed forms (src/core/estimate/schedule.cc) and
// the fast paths (src/core/estimate/schedule_fast.cc), docs/formulas.md §5.4.
#pragma once

#include <cstdint>
#include <vector>

#include "trainplan/core/estimate/schedule.h"

namespace trainplan::detail {

/// One forward or backward of one micro-batch of one model chunk on one rank.
struct op {
  bool backward = false;
  std::int64_t chunk = 0;
  std::int64_t microbatch = 0;
};

/// Rank `rank`'s operations in its schedule's order (Megatron's), into `out` (cleared).
void build_ops(schedule_kind kind, std::int64_t rank, std::int64_t p, std::int64_t m, std::int64_t v,
               std::vector<op>& out);

/// The work of chunk `c` of rank `r` (§5.4): its rank's mean chunk, scaled where the chunks differ.
inline double chunk_forward_s(const schedule_input& in, const stage_times& st, std::int64_t r, std::int64_t c) {
  if (in.chunk_forward_scale.empty()) return st.forward_s;
  return st.forward_s * in.chunk_forward_scale[static_cast<std::size_t>(c * static_cast<std::int64_t>(in.stages.size()) + r)];
}
inline double chunk_backward_s(const schedule_input& in, const stage_times& st, std::int64_t r, std::int64_t c) {
  if (in.chunk_backward_scale.empty()) return st.backward_s;
  return st.backward_s * in.chunk_backward_scale[static_cast<std::size_t>(c * static_cast<std::int64_t>(in.stages.size()) + r)];
}

/// The transfer after a forward (backward) of chunk `c` on rank `r`: none out of the last rank's last
/// chunk (the first rank's first chunk), else one p2p_s.
inline double send_fwd(const schedule_input& in, std::int64_t r, std::int64_t c, std::int64_t p) {
  return (r == p - 1 && c == in.num_chunks - 1) ? 0.0 : in.p2p_s;
}
inline double send_bwd(const schedule_input& in, std::int64_t r, std::int64_t c) {
  return (r == 0 && c == 0) ? 0.0 : in.p2p_s;
}

/// When a rank whose operation's work ended at `work_end_s` is free again (§5.4): after its send when
/// sends block, at once when they overlap the next chunk (Megatron's overlap_p2p_comm). The input
/// reaches its consumer at work_end_s + send_s either way.
inline double rank_free_s(const schedule_input& in, double work_end_s, double send_s) {
  return in.overlap_p2p ? work_end_s : work_end_s + send_s;
}
/// Seconds a rank is blocked by a send: all of it, or none when transfers overlap.
inline double blocked_send_s(const schedule_input& in, double send_s) { return in.overlap_p2p ? 0.0 : send_s; }

// The fast paths (src/core/estimate/schedule_fast.cc, §5.4 "Fast path"): each fills the stages' usage and pipeline
// ends; the DP reduction and optimizer are added by the caller.
void one_f_one_b_fast(const schedule_input& in, schedule_result& r);
void gpipe_fast(const schedule_input& in, schedule_result& r);
void interleaved_fast_or_chase(const schedule_input& in, schedule_result& r);

}  // namespace trainplan::detail
