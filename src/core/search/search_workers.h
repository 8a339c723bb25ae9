// The layout search's parallel machinery (src/core/search/search.cc): a pool of workers over an index range, and the
// shared K-th best score the bound is tested against (docs/formulas.md §7.2). Internal header.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <limits>
#include <mutex>
#include <queue>
#include <system_error>
#include <thread>
#include <vector>

#include "trainplan/core/job/job.h"
#include "trainplan/core/search/search.h"

namespace trainplan::detail {

/// Runs a function over [0, count) on the search's threads, each with its own job buffer and a cache
/// of type Cache, reporting progress in chunks. Threads the system refuses leave the work to the rest.
template <class Cache>
class search_workers {
 public:
  using work = std::function<void(std::size_t, job_spec&, Cache&)>;
  search_workers(const job_spec& base, unsigned threads, std::int64_t total_work, const search_progress& progress)
      : base_(base), threads_(threads), total_(total_work), progress_(progress) {}

  void run(std::size_t count, const work& fn) {
    std::atomic<std::size_t> cursor{0};
    auto worker = [&] {
      job_spec j = base_;
      Cache layers;
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
    for (unsigned t = 1; t < threads_; ++t) {
      try {
        pool.emplace_back(worker);
      } catch (const std::system_error&) {
        break;  // the system gives no more threads: the ones started share the work
      }
    }
    worker();
    for (auto& th : pool) th.join();
  }

 private:
  void tick(std::int64_t k) {
    const std::int64_t d = done_.fetch_add(k) + k;
    if (!progress_) return;
    std::int64_t nr = next_report_.load();
    if (d >= nr && next_report_.compare_exchange_strong(nr, d + std::max<std::int64_t>(1, total_ / 50))) {
      progress_(d, total_);
    }
  }

  const job_spec& base_;
  unsigned threads_;
  std::int64_t total_;
  const search_progress& progress_;
  std::atomic<std::int64_t> done_{0};
  std::atomic<std::int64_t> next_report_{0};
};

/// The K best scores so far, shared by the workers: a layout whose bound exceeds the K-th cannot enter.
class top_k_threshold {
 public:
  explicit top_k_threshold(std::size_t k) : k_(k) {}
  double threshold() const { return threshold_.load(std::memory_order_relaxed); }
  void offer(double score) {
    std::lock_guard<std::mutex> lock(mu_);
    if (best_.size() < k_) {
      best_.push(score);
    } else if (score < best_.top()) {
      best_.pop();
      best_.push(score);
    }
    if (best_.size() == k_) threshold_.store(best_.top(), std::memory_order_relaxed);
  }

 private:
  std::size_t k_;
  std::mutex mu_;
  std::priority_queue<double> best_;
  std::atomic<double> threshold_{std::numeric_limits<double>::infinity()};
};

}  // namespace trainplan::detail
