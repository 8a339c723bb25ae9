// Internals of the pipeline schedules shared by the simulation and closed forms (src/core/estimate/schedule.cc) and
// the fast paths (src/core/estimate/schedule_fast.cc), docs/formulas.md §5.4.
#pragma once

#include <algorithm>
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

/// Rank `rank`'s operations in its schedule's order (Megatron's), into `out` (cleared); `group` is the
/// interleaved schedule's micro-batch group (p by default).
void build_ops(schedule_kind kind, std::int64_t rank, std::int64_t p, std::int64_t m, std::int64_t v, std::int64_t group,
               std::vector<op>& out);

/// The interleaved schedule's group of micro-batches per chunk: the input's, or p.
inline std::int64_t group_of(const schedule_input& in) {
  return in.group_size > 0 ? in.group_size : static_cast<std::int64_t>(in.stages.size());
}

/// Megatron's schedule table (schedules.py get_schedule_table): virtual micro-batch k runs forward chunk
/// `chunk` of micro-batch `microbatch`. Micro-batches go in groups of `group`, each group through every
/// chunk before the next; the last group holds what is left (m − its start).
struct table_entry {
  std::int64_t chunk;
  std::int64_t microbatch;
};
inline table_entry schedule_table_entry(std::int64_t k, std::int64_t m, std::int64_t v, std::int64_t group) {
  const std::int64_t groups = (m + group - 1) / group;
  const std::int64_t full = (groups - 1) * group * v;  // virtual micro-batches before the last group
  if (k < full) {
    const std::int64_t in_group = k % (group * v);
    return {in_group / group, k / (group * v) * group + in_group % group};
  }
  const std::int64_t last = m - (groups - 1) * group;
  const std::int64_t r = k - full;
  return {r / last, (groups - 1) * group + r % last};
}

/// Whether any rank waits a delay before its first forward (§5.4: Megatron's unaligned parameter gather).
inline bool has_first_forward_delays(const schedule_input& in) {
  return std::any_of(in.stages.begin(), in.stages.end(),
                     [](const stage_times& s) { return s.first_forward_delay_s > 0; });
}

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

/// Whether the send after an operation overlaps the rank's next work (§5.4): Megatron's overlap_p2p_comm
/// in the steady 1F1B phase, and in the warm-up and cool-down only with overlap_p2p_comm_warmup_flush.
inline bool send_overlaps(const schedule_input& in, bool steady) {
  return in.overlap_p2p && (steady || in.overlap_p2p_warmup_flush);
}
/// When a rank whose operation's work ended at `work_end_s` is free again (§5.4): after its send when
/// sends block, at once when they overlap the next chunk. The input reaches its consumer at
/// work_end_s + send_s either way.
inline double rank_free_s(const schedule_input& in, double work_end_s, double send_s, bool steady) {
  return send_overlaps(in, steady) ? work_end_s : work_end_s + send_s;
}
/// Seconds a rank is blocked by a send: all of it, or none when the transfer overlaps.
inline double blocked_send_s(const schedule_input& in, double send_s, bool steady) {
  return send_overlaps(in, steady) ? 0.0 : send_s;
}
/// Megatron's warm-up count of rank `rank` (schedules.py get_num_warmup_microbatches): its first W
/// operations are forwards, its last W backwards; the rest alternate (steady). 1F1B: p − r − 1;
/// interleaved: 2(p − r − 1) + (v − 1)·G with G micro-batches a group (p by default); at most every
/// operation of the direction (m·v).
inline std::int64_t warmup_operations(schedule_kind kind, std::int64_t rank, std::int64_t p, std::int64_t m,
                                      std::int64_t v, std::int64_t group) {
  const std::int64_t w = kind == schedule_kind::interleaved ? 2 * (p - rank - 1) + (v - 1) * group : p - rank - 1;
  return std::min(w, m * v);
}
/// Whether operation `index` of a rank's list (`size` operations, `warmup` of them warm-up forwards and
/// as many cool-down backwards) runs in the steady phase.
inline bool steady_operation(std::size_t index, std::size_t size, std::int64_t warmup) {
  const auto w = static_cast<std::size_t>(warmup);
  return index >= w && index + w < size;
}

// The fast paths (src/core/estimate/schedule_fast.cc, §5.4 "Fast path"): each fills the stages' usage and pipeline
// ends; the DP reduction and optimizer are added by the caller.
void one_f_one_b_fast(const schedule_input& in, schedule_result& r);
void gpipe_fast(const schedule_input& in, schedule_result& r);
void interleaved_fast_or_chase(const schedule_input& in, schedule_result& r);

}  // namespace trainplan::detail
