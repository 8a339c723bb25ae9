// The bench's arithmetic (docs/bench.md): sweeps, nccl-tests' bandwidths, checked values, slow ranks.
#include "bench_stats.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "trainplan/core/base/error.h"

namespace trainplan::bench {

namespace {
constexpr std::int64_t kElementBytes = 4;  // float32, as nccl-tests' default -d float
constexpr std::int64_t kMaxBytes = std::int64_t{1} << 40;
}  // namespace

std::optional<long long> parse_whole(const std::string& text) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos || text.size() > 18) return std::nullopt;
  return std::stoll(text);
}

std::array<std::int64_t, 4> parse_gemm_shape(const std::string& text, std::string_view flag) {
  std::vector<std::int64_t> dims;
  std::size_t pos = 0;
  bool ok = true;
  while (ok && pos <= text.size()) {
    const std::size_t x = std::min(text.find('x', pos), text.size());
    const std::optional<long long> v = parse_whole(text.substr(pos, x - pos));
    ok = v && *v >= 1 && *v <= (1 << 24);
    if (ok) dims.push_back(*v);
    pos = x + 1;
  }
  if (!ok || (dims.size() != 3 && dims.size() != 4)) {
    throw input_error(fmt::format("{} expects MxNxK or MxNxKxBATCH with each between 1 and 16777216, got '{}'", flag, text));
  }
  return {dims[0], dims[1], dims[2], dims.size() == 4 ? dims[3] : 1};
}

std::int64_t parse_size(const std::string& text, std::string_view flag) {
  std::string t = text;
  std::int64_t unit = 1;
  if (!t.empty()) {
    switch (std::toupper(static_cast<unsigned char>(t.back()))) {
      case 'K': unit = std::int64_t{1} << 10; break;
      case 'M': unit = std::int64_t{1} << 20; break;
      case 'G': unit = std::int64_t{1} << 30; break;
      default: break;
    }
    if (unit != 1) t.pop_back();
  }
  const std::optional<long long> parsed = parse_whole(t);
  const long long v = parsed.value_or(0);
  if (v <= 0) throw input_error(fmt::format("{} expects a positive size such as 64, 4K, 256M or 1G, got '{}'", flag, text));
  if (v > kMaxBytes / unit) throw input_error(fmt::format("{}: {} is more than 1 TiB", flag, text));
  return v * unit;
}

std::vector<std::int64_t> size_sweep(std::int64_t min_bytes, std::int64_t max_bytes, std::int64_t factor,
                                     std::string_view flag) {
  if (min_bytes <= 0 || max_bytes < min_bytes) {
    throw input_error(fmt::format("{}: the smallest size must be positive and not above the largest ({} > {})", flag,
                                  min_bytes, max_bytes));
  }
  if (factor < 2) throw input_error(fmt::format("--step-factor must be at least 2, got {}", factor));
  std::vector<std::int64_t> out;
  for (std::int64_t s = min_bytes; s <= max_bytes; s *= factor) {
    out.push_back(s);
    if (s > max_bytes / factor) break;
  }
  return out;
}

buffer_counts counts_for(collective_kind kind, std::int64_t bytes, std::int64_t ranks) {
  const std::int64_t elems = std::max<std::int64_t>(1, bytes / kElementBytes);
  buffer_counts c;
  switch (kind) {
    case collective_kind::all_reduce:
    case collective_kind::broadcast:
    case collective_kind::send_recv:
      c.send = c.recv = elems;
      break;
    case collective_kind::all_gather: {  // S = the gathered output
      const std::int64_t per = std::max<std::int64_t>(1, elems / ranks);
      c.send = per;
      c.recv = per * ranks;
      break;
    }
    case collective_kind::reduce_scatter: {  // S = the input
      const std::int64_t per = std::max<std::int64_t>(1, elems / ranks);
      c.send = per * ranks;
      c.recv = per;
      break;
    }
    case collective_kind::all_to_all: {  // S = what each rank sends (= receives)
      const std::int64_t per = std::max<std::int64_t>(1, elems / ranks);
      c.send = c.recv = per * ranks;
      break;
    }
  }
  c.bytes = std::max(c.send, c.recv) * kElementBytes;
  return c;
}

bandwidth bandwidth_of(collective_kind kind, std::int64_t ranks, double bytes, double time_s) {
  bandwidth b;
  if (time_s <= 0) return b;
  b.algbw_bytes_per_s = bytes / time_s;
  b.busbw_bytes_per_s = b.algbw_bytes_per_s * bus_factor(kind, ranks);
  return b;
}

float send_value(collective_kind kind, std::int64_t rank, std::int64_t ranks, std::int64_t i, std::int64_t send_count) {
  switch (kind) {
    case collective_kind::all_reduce:
    case collective_kind::reduce_scatter:
      return static_cast<float>(rank + 1 + (i % 13));
    case collective_kind::all_gather:
    case collective_kind::send_recv:
    case collective_kind::broadcast:
      return static_cast<float>(rank * 17 + (i % 11));
    case collective_kind::all_to_all: {  // chunk j goes to rank j
      const std::int64_t per = send_count / ranks;
      const std::int64_t to = i / per;
      return static_cast<float>(rank * 1000 + to);
    }
  }
  return 0;
}

float expected_value(collective_kind kind, std::int64_t rank, std::int64_t ranks, std::int64_t i, std::int64_t recv_count) {
  switch (kind) {
    case collective_kind::all_reduce:  // Σ_r (r + 1 + i%13)
      return static_cast<float>(ranks * (ranks + 1) / 2 + ranks * (i % 13));
    case collective_kind::reduce_scatter: {  // rank's chunk of the sum
      const std::int64_t global = rank * recv_count + i;
      return static_cast<float>(ranks * (ranks + 1) / 2 + ranks * (global % 13));
    }
    case collective_kind::all_gather: {  // chunk r from rank r
      const std::int64_t per = recv_count / ranks;
      const std::int64_t from = i / per;
      return static_cast<float>(from * 17 + ((i - from * per) % 11));
    }
    case collective_kind::broadcast:
      return static_cast<float>(0 * 17 + (i % 11));
    case collective_kind::send_recv: {
      const std::int64_t from = (rank - 1 + ranks) % ranks;
      return static_cast<float>(from * 17 + (i % 11));
    }
    case collective_kind::all_to_all: {  // chunk j came from rank j
      const std::int64_t per = recv_count / ranks;
      return static_cast<float>((i / per) * 1000 + rank);
    }
  }
  return 0;
}

std::vector<std::vector<float>> reference_collective(collective_kind kind, const buffer_counts& c,
                                                     const std::vector<std::vector<float>>& in) {
  const auto n = static_cast<std::int64_t>(in.size());
  std::vector<std::vector<float>> out(in.size(), std::vector<float>(static_cast<std::size_t>(c.recv), 0.f));
  const std::int64_t per = n > 0 ? c.send / n : 0;  // all-to-all chunk
  for (std::int64_t r = 0; r < n; ++r) {
    for (std::int64_t i = 0; i < c.recv; ++i) {
      float& o = out[r][i];
      switch (kind) {
        case collective_kind::all_reduce:
          for (std::int64_t q = 0; q < n; ++q) o += in[q][i];
          break;
        case collective_kind::reduce_scatter:
          for (std::int64_t q = 0; q < n; ++q) o += in[q][r * c.recv + i];
          break;
        case collective_kind::all_gather: o = in[i / c.send][i % c.send]; break;
        case collective_kind::broadcast: o = in[0][i]; break;
        case collective_kind::send_recv: o = in[(r - 1 + n) % n][i]; break;
        case collective_kind::all_to_all: o = in[i / per][r * per + i % per]; break;
      }
    }
  }
  return out;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

sample_summary summarize_samples(std::vector<double> values) {
  sample_summary s;
  s.level = median(values);
  if (s.level <= 0) return s;
  // In logarithms, so that a spread and a gap of any size compare on one scale (a 10× slowdown is a gap
  // of ln 10 = 2.3, which no spread of the repeats reaches; as a fraction it could never exceed 1).
  std::vector<double> deviations;
  deviations.reserve(values.size());
  for (const double v : values) deviations.push_back(v > 0 ? std::fabs(std::log(v / s.level)) : HUGE_VAL);
  s.spread = 1.4826 * median(std::move(deviations));
  return s;
}

namespace {

/// One rank's or node's level and spread, under its name.
struct judged {
  std::string who;
  double level = 0;
  double spread = 0;
};

/// Each entry against the others' median level and median spread (find_slow's rule).
void judge(const std::vector<judged>& all, double threshold, double z_score, std::vector<slow_finding>& out) {
  for (std::size_t i = 0; i < all.size(); ++i) {
    std::vector<double> levels, spreads;
    for (std::size_t k = 0; k < all.size(); ++k) {
      if (k == i) continue;
      levels.push_back(all[k].level);
      spreads.push_back(all[k].spread);
    }
    const double ref = median(levels);
    if (ref <= 0) continue;
    const double shortfall = 1 - all[i].level / ref;
    const double others_spread = median(spreads);
    const double noise = std::sqrt(all[i].spread * all[i].spread + others_spread * others_spread);
    const double gap = all[i].level > 0 ? std::log(ref / all[i].level) : HUGE_VAL;  // ln of the slowdown factor
    if (shortfall > threshold && gap > z_score * noise) {
      out.push_back({all[i].who, all[i].level, ref, shortfall, noise});
    }
  }
}

}  // namespace

std::vector<slow_finding> find_slow(const std::vector<rank_samples>& ranks, double threshold, double z_score) {
  std::vector<slow_finding> out;
  if (ranks.size() < 2) return out;
  std::vector<judged> per_rank;
  // Nodes: the mean of their ranks' levels; the noise of a mean of n ranks is their RMS spread / √n.
  struct node_sum {
    double level_sum = 0;
    double spread_sq_sum = 0;
    int n = 0;
    std::string host;
  };
  std::map<std::string, node_sum> nodes;  // node prefix "n<i>"
  for (const rank_samples& r : ranks) {
    const sample_summary s = summarize_samples(r.values);
    per_rank.push_back({fmt::format("{} (rank {})", r.name, r.rank), s.level, s.spread});
    node_sum& n = nodes[r.name.substr(0, r.name.find('_'))];
    n.level_sum += s.level;
    n.spread_sq_sum += s.spread * s.spread;
    ++n.n;
    n.host = r.host;
  }
  judge(per_rank, threshold, z_score, out);
  if (nodes.size() < 2) return out;
  std::vector<judged> per_node;
  for (const auto& [node, n] : nodes) {
    per_node.push_back({fmt::format("node {} ({})", node, n.host), n.level_sum / n.n, std::sqrt(n.spread_sq_sum / n.n) / std::sqrt(n.n)});
  }
  judge(per_node, threshold, z_score, out);
  return out;
}

std::optional<slowdown_injection> parse_slowdown(const std::string& text, std::string_view flag) {
  if (text.empty()) return std::nullopt;
  const auto colon = text.find(':');
  slowdown_injection s;
  try {
    std::size_t used = 0;
    if (colon == std::string::npos) throw std::invalid_argument("no colon");
    s.rank = std::stoll(text.substr(0, colon), &used);
    if (used != colon) throw std::invalid_argument("rank");
    const std::string f = text.substr(colon + 1);
    s.factor = std::stod(f, &used);
    if (used != f.size()) throw std::invalid_argument("factor");
  } catch (const std::exception&) {
    throw input_error(fmt::format("{} expects RANK:FACTOR such as 2:1.5, got '{}'", flag, text));
  }
  if (s.rank < 0 || !(s.factor >= 1) || s.factor > 1000) {
    throw input_error(fmt::format("{}: the rank must not be negative and the factor must be between 1 and 1000, got '{}'",
                                  flag, text));
  }
  return s;
}

std::string catalog_gpu_name(std::string_view name) {
  // The first entry whose key the driver's name contains wins: the superchips ("NVIDIA GB200"), the NVL
  // and PCIe cards come before the names they contain; other PCIe parts (other peaks and power than
  // the catalog's SXM entries) are not named.
  struct entry {
    std::string_view key;
    std::string_view also;  ///< a second substring the name must contain, or empty
    std::string_view catalog;
  };
  static constexpr entry kDriverNames[] = {
      {"H100 PCIe", "", "h100-pcie-80gb"}, {"PCIe", "", ""}, {"GB200", "", "gb200"},           {"GB300", "", "gb300"},
      {"B300", "", "b300-sxm-288gb"}, {"B200", "", "b200-sxm-180gb"}, {"H100 NVL", "", "h100-nvl-94gb"},
      {"H100", "", "h100-sxm5-80gb"}, {"H200", "", "h200-sxm-141gb"}, {"H800", "", "h800-sxm5-80gb"},
      {"A100", "80GB", "a100-sxm4-80gb"}, {"A100", "", "a100-sxm4-40gb"}, {"MI300X", "", "mi300x"}};
  auto has = [&](std::string_view s) { return name.find(s) != std::string_view::npos; };
  for (const entry& e : kDriverNames) {
    if (has(e.key) && (e.also.empty() || has(e.also))) return std::string(e.catalog);
  }
  return "";
}

}  // namespace trainplan::bench
