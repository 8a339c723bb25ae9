// The layout search's parallel machinery (src/core/search/search.cc): a pool of workers over an index range, and the
// shared K-th best score the bound is tested against (docs/formulas.md §7.2). Internal header.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <queue>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "trainplan/core/job/job.h"
#include "trainplan/core/search/search.h"

namespace trainplan::detail {

/// Runs a function over [0, count) on the search's threads, each with its own job buffer and a cache
/// of type Cache, reporting progress in chunks. The threads are started once and kept for every run(),
/// with their buffers, caches and the estimators' thread-local scratch: a search runs one pass for the
/// bounds and then rounds of evaluations, and restarting the threads per pass rebuilt all of these
/// (page faults dominated the 530B search's CPU time on a virtual machine, docs/guide/speed.md).
/// Threads the system refuses leave the work to the rest. An exception thrown by `fn` on any thread is
/// rethrown by run() once every thread has stopped working on that pass.
template <class Cache>
class search_workers {
 public:
  using work = std::function<void(std::size_t, job_spec&, Cache&)>;
  search_workers(const job_spec& base, unsigned threads, std::int64_t total_work, const search_progress& progress)
      : total_(total_work), progress_(progress) {
    slots_.push_back(std::make_unique<slot>(base));  // the calling thread's
    for (unsigned t = 1; t < threads; ++t) {
      slots_.push_back(std::make_unique<slot>(base));
      slot* own = slots_.back().get();
      try {
        helpers_.emplace_back([this, own] { serve(*own); });
      } catch (const std::system_error&) {
        slots_.pop_back();
        break;  // the system gives no more threads: the ones started share the work
      }
    }
  }
  ~search_workers() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    wake_.notify_all();
    for (auto& th : helpers_) th.join();
  }
  search_workers(const search_workers&) = delete;
  search_workers& operator=(const search_workers&) = delete;

  void run(std::size_t count, const work& fn) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      fn_ = &fn;
      count_ = count;
      cursor_.store(0);
      busy_ = helpers_.size();
      ++pass_;
    }
    wake_.notify_all();
    drain(*slots_[0]);
    std::unique_lock<std::mutex> lock(mu_);
    idle_.wait(lock, [&] { return busy_ == 0; });
    fn_ = nullptr;
    if (failure_) std::rethrow_exception(std::exchange(failure_, nullptr));
  }

 private:
  struct slot {
    explicit slot(const job_spec& base) : job(base) {}
    job_spec job;
    Cache cache;
  };

  /// A helper thread: one drain per pass until the pool is destroyed.
  void serve(slot& own) {
    std::uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        wake_.wait(lock, [&] { return stop_ || pass_ != seen; });
        if (stop_) return;
        seen = pass_;
      }
      drain(own);
      std::lock_guard<std::mutex> lock(mu_);
      if (--busy_ == 0) idle_.notify_one();
    }
  }

  /// Takes chunks of the pass's indices until none is left.
  void drain(slot& own) {
    constexpr std::size_t kChunk = 16;
    try {
      for (;;) {
        const std::size_t begin = cursor_.fetch_add(kChunk);
        if (begin >= count_) break;
        const std::size_t end = std::min(count_, begin + kChunk);
        for (std::size_t i = begin; i < end; ++i) (*fn_)(i, own.job, own.cache);
        tick(static_cast<std::int64_t>(end - begin));
      }
    } catch (...) {
      cursor_.store(count_);  // the others stop at their next chunk
      std::lock_guard<std::mutex> lock(mu_);
      if (!failure_) failure_ = std::current_exception();
    }
  }

  void tick(std::int64_t k) {
    const std::int64_t d = done_.fetch_add(k) + k;
    if (!progress_) return;
    std::int64_t nr = next_report_.load();
    if (d >= nr && next_report_.compare_exchange_strong(nr, d + std::max<std::int64_t>(1, total_ / 50))) {
      progress_(d, total_);
    }
  }

  std::int64_t total_;
  search_progress progress_;  ///< a copy: a temporary given to the constructor stays valid
  std::atomic<std::int64_t> done_{0};
  std::atomic<std::int64_t> next_report_{0};
  std::vector<std::unique_ptr<slot>> slots_;  ///< [0]: the thread that calls run()
  std::vector<std::thread> helpers_;
  std::mutex mu_;
  std::condition_variable wake_, idle_;
  bool stop_ = false;
  std::uint64_t pass_ = 0;  ///< bumped by each run()
  std::size_t busy_ = 0;    ///< helpers still draining this pass
  const work* fn_ = nullptr;
  std::size_t count_ = 0;
  std::atomic<std::size_t> cursor_{0};
  std::exception_ptr failure_;
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
