// The search's worker pool and its huge-page arrays (src/core/search/search_workers.h, search_arena.h):
// every index of a pass runs once, the threads and their caches last across passes, a thrown exception
// reaches the caller, and a large array is aligned for huge pages and keeps its contents as it grows.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <set>
#include <stdexcept>
#include <vector>

#include "core/search/search_arena.h"
#include "core/search/search_workers.h"

namespace trainplan {
namespace {

struct counting_cache {
  std::int64_t items = 0;  ///< indices this worker ran, over every pass
};

class SearchWorkers : public ::testing::TestWithParam<unsigned> {};

TEST_P(SearchWorkers, EveryIndexOncePerPassAndCachesLastAcrossPasses) {
  job_spec base;
  detail::search_workers<counting_cache> pool(base, GetParam(), 0, nullptr);
  constexpr std::size_t kCount = 1000;
  std::vector<std::atomic<int>> hits(kCount);
  std::mutex mu;
  std::set<const counting_cache*> caches;  // every worker's cache seen in any pass
  for (int pass = 1; pass <= 3; ++pass) {
    pool.run(kCount, [&](std::size_t i, job_spec&, counting_cache& c) {
      hits[i].fetch_add(1);
      ++c.items;
      std::lock_guard<std::mutex> lock(mu);
      caches.insert(&c);
    });
    for (std::size_t i = 0; i < kCount; ++i) ASSERT_EQ(hits[i].load(), pass) << "index " << i;
  }
  // One cache per thread for the whole pool: a cache rebuilt per pass would have lost earlier counts.
  EXPECT_LE(caches.size(), GetParam());
  std::int64_t items = 0;
  for (const counting_cache* c : caches) items += c->items;
  EXPECT_EQ(items, 3 * static_cast<std::int64_t>(kCount));
}

TEST_P(SearchWorkers, AThrownErrorReachesTheCallerAndThePoolRunsOn) {
  job_spec base;
  detail::search_workers<counting_cache> pool(base, GetParam(), 0, nullptr);
  EXPECT_THROW(pool.run(500, [](std::size_t i, job_spec&, counting_cache&) {
                 if (i == 321) throw std::runtime_error("layout 321");
               }),
               std::runtime_error);
  std::atomic<std::size_t> ran{0};
  pool.run(500, [&](std::size_t, job_spec&, counting_cache&) { ran.fetch_add(1); });
  EXPECT_EQ(ran.load(), 500u);
}

TEST_P(SearchWorkers, AnEmptyPassReturns) {
  job_spec base;
  detail::search_workers<counting_cache> pool(base, GetParam(), 0, nullptr);
  bool called = false;
  pool.run(0, [&](std::size_t, job_spec&, counting_cache&) { called = true; });
  EXPECT_FALSE(called);
}

INSTANTIATE_TEST_SUITE_P(Threads, SearchWorkers, ::testing::Values(1u, 2u, 4u));

TEST(HugePageAllocator, LargeArraysAreAlignedAndKeepTheirContentsAsTheyGrow) {
  std::vector<std::int64_t, detail::huge_page_allocator<std::int64_t>> v;
  for (std::int64_t i = 0; i < 1'000'000; ++i) v.push_back(i * 3);  // 8 MB, grown through small and huge blocks
  for (std::int64_t i = 0; i < 1'000'000; ++i) ASSERT_EQ(v[static_cast<std::size_t>(i)], i * 3);
#if defined(__linux__)
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(v.data()) % detail::huge_page_allocator<std::int64_t>::kHuge, 0u);
#endif
  std::vector<std::int64_t, detail::huge_page_allocator<std::int64_t>> small(10, 7);  // ordinary memory
  EXPECT_EQ(small[9], 7);
}

}  // namespace
}  // namespace trainplan
