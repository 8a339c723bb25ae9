// What a search returns, read back: the Pareto front of time against memory (§7.3).
#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "trainplan/core/search/search.h"

namespace trainplan {

std::vector<std::size_t> pareto_front(const search_result& r) {
  // Ranked by time: a layout is on the front when it needs less memory than every faster one (§7.3).
  std::vector<std::size_t> order(r.candidates.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const auto& ca = r.candidates[a];
    const auto& cb = r.candidates[b];
    if (ca.iteration_s != cb.iteration_s) return ca.iteration_s < cb.iteration_s;
    return ca.peak_reserved_bytes < cb.peak_reserved_bytes;
  });
  std::vector<std::size_t> front;
  double best_bytes = std::numeric_limits<double>::infinity();
  for (std::size_t i : order) {
    if (r.candidates[i].peak_reserved_bytes < best_bytes) {
      front.push_back(i);
      best_bytes = r.candidates[i].peak_reserved_bytes;
    }
  }
  return front;
}

}  // namespace trainplan
