// The bench's arithmetic without MPI or CUDA: sizes, nccl-tests' bandwidths, the checked values (against
// a reference simulation of each collective), slow-rank detection and the test aids' parsing.
#include "bench_stats.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "trainplan/core/base/error.h"

namespace trainplan::bench {
namespace {

TEST(BenchStats, SizesParseInPowersOf1024) {
  EXPECT_EQ(parse_size("64", "--min-bytes"), 64);
  EXPECT_EQ(parse_size("4K", "--min-bytes"), 4096);
  EXPECT_EQ(parse_size("256m", "--min-bytes"), 256ll << 20);
  EXPECT_EQ(parse_size("1G", "--max-bytes"), 1ll << 30);
  for (const char* bad : {"", "0", "-1", "1.5M", "1T", "K", "12Q", "0x10"}) {
    EXPECT_THROW(parse_size(bad, "--max-bytes"), input_error) << bad;
  }
  try {
    parse_size("lots", "--max-bytes");
  } catch (const input_error& e) {
    EXPECT_STREQ(e.what(), "--max-bytes expects a positive size such as 64, 4K, 256M or 1G, got 'lots'");
  }
  EXPECT_THROW(parse_size("2048G", "--max-bytes"), input_error);  // over 1 TiB
}

TEST(BenchStats, SweepIsGeometricWithBothEndsIncluded) {
  EXPECT_EQ(size_sweep(1024, 16384, 2, "f"), (std::vector<std::int64_t>{1024, 2048, 4096, 8192, 16384}));
  EXPECT_EQ(size_sweep(1024, 10000, 4, "f"), (std::vector<std::int64_t>{1024, 4096}));
  EXPECT_EQ(size_sweep(8, 8, 2, "f"), (std::vector<std::int64_t>{8}));
  EXPECT_THROW(size_sweep(16, 8, 2, "f"), input_error);
  EXPECT_THROW(size_sweep(8, 16, 1, "f"), input_error);
}

TEST(BenchStats, BufferCountsFollowNcclTests) {
  // all-gather: S is the gathered output, each rank sends S/n.
  const buffer_counts ag = counts_for(collective_kind::all_gather, 4096, 4);
  EXPECT_EQ(ag.send, 256);
  EXPECT_EQ(ag.recv, 1024);
  EXPECT_EQ(ag.bytes, 4096);
  // reduce-scatter: S is the input, each rank keeps S/n.
  const buffer_counts rs = counts_for(collective_kind::reduce_scatter, 4096, 4);
  EXPECT_EQ(rs.send, 1024);
  EXPECT_EQ(rs.recv, 256);
  // Sizes that do not divide are rounded down to whole chunks.
  const buffer_counts odd = counts_for(collective_kind::all_to_all, 1000, 3);
  EXPECT_EQ(odd.send, 249);
  EXPECT_EQ(odd.bytes, 996);
}

TEST(BenchStats, BusBandwidthUsesPerformanceMdFactors) {
  // doc/PERFORMANCE.md: all-reduce 2(n−1)/n, all-gather/reduce-scatter/all-to-all (n−1)/n, broadcast 1.
  EXPECT_DOUBLE_EQ(bandwidth_of(collective_kind::all_reduce, 8, 1e9, 0.01).algbw_bytes_per_s, 1e11);
  EXPECT_DOUBLE_EQ(bandwidth_of(collective_kind::all_reduce, 8, 1e9, 0.01).busbw_bytes_per_s, 1e11 * 14 / 8);
  EXPECT_DOUBLE_EQ(bandwidth_of(collective_kind::all_gather, 4, 1e9, 0.01).busbw_bytes_per_s, 1e11 * 3 / 4);
  EXPECT_DOUBLE_EQ(bandwidth_of(collective_kind::reduce_scatter, 4, 1e9, 0.01).busbw_bytes_per_s, 1e11 * 3 / 4);
  EXPECT_DOUBLE_EQ(bandwidth_of(collective_kind::all_to_all, 4, 1e9, 0.01).busbw_bytes_per_s, 1e11 * 3 / 4);
  EXPECT_DOUBLE_EQ(bandwidth_of(collective_kind::broadcast, 4, 1e9, 0.01).busbw_bytes_per_s, 1e11);
  EXPECT_DOUBLE_EQ(bandwidth_of(collective_kind::send_recv, 4, 1e9, 0.01).busbw_bytes_per_s, 1e11);
  EXPECT_DOUBLE_EQ(bandwidth_of(collective_kind::all_reduce, 1, 1e9, 0.01).busbw_bytes_per_s, 0);
}

/// Every rank's input of a checked run.
std::vector<std::vector<float>> inputs_of(collective_kind kind, std::int64_t n, const buffer_counts& c) {
  std::vector<std::vector<float>> in(static_cast<std::size_t>(n));
  for (std::int64_t r = 0; r < n; ++r)
    for (std::int64_t i = 0; i < c.send; ++i) in[r].push_back(send_value(kind, r, n, i, c.send));
  return in;
}

TEST(BenchStats, ReferenceCollectivesOnHandWorkedInputs) {
  // Two ranks, all-reduce of {1, 2} and {10, 20}; reduce-scatter keeps each rank's half of the sum.
  const buffer_counts ar{2, 2, 8};
  EXPECT_EQ(reference_collective(collective_kind::all_reduce, ar, {{1, 2}, {10, 20}}),
            (std::vector<std::vector<float>>{{11, 22}, {11, 22}}));
  const buffer_counts rs{2, 1, 8};
  EXPECT_EQ(reference_collective(collective_kind::reduce_scatter, rs, {{1, 2}, {10, 20}}),
            (std::vector<std::vector<float>>{{11}, {22}}));
  const buffer_counts ag{1, 2, 8};
  EXPECT_EQ(reference_collective(collective_kind::all_gather, ag, {{1}, {10}}),
            (std::vector<std::vector<float>>{{1, 10}, {1, 10}}));
  const buffer_counts a2a{2, 2, 8};  // rank r's chunk j goes to rank j
  EXPECT_EQ(reference_collective(collective_kind::all_to_all, a2a, {{1, 2}, {10, 20}}),
            (std::vector<std::vector<float>>{{1, 10}, {2, 20}}));
  const buffer_counts sr{1, 1, 4};  // from the previous rank
  EXPECT_EQ(reference_collective(collective_kind::send_recv, sr, {{1}, {10}, {100}}),
            (std::vector<std::vector<float>>{{100}, {1}, {10}}));
}

TEST(BenchStats, ExpectedValuesEqualAReferenceSimulationOfEveryCollective) {
  for (const collective_kind kind : {collective_kind::all_reduce, collective_kind::all_gather, collective_kind::reduce_scatter,
                                     collective_kind::all_to_all, collective_kind::broadcast, collective_kind::send_recv}) {
    for (const std::int64_t n : {1, 2, 3, 4, 8}) {
      const buffer_counts c = counts_for(kind, 4 * 1000, n);
      const auto out = reference_collective(kind, c, inputs_of(kind, n, c));
      for (std::int64_t r = 0; r < n; ++r)
        for (std::int64_t i = 0; i < c.recv; ++i)
          ASSERT_EQ(out[r][i], expected_value(kind, r, n, i, c.recv)) << to_string(kind) << " n=" << n << " r=" << r << " i=" << i;
    }
  }
}

TEST(BenchStats, SlowRanksAndNodesAreNamed) {
  // Repeats without scatter: the threshold alone decides.
  std::vector<rank_samples> m;
  for (int r = 0; r < 8; ++r) {
    std::string name = "n";
    name.append(std::to_string(r / 4)).append("_g").append(std::to_string(r % 4));
    m.push_back({r, name, r < 4 ? "a" : "b", {100, 100, 100}});
  }
  m[6].values = {96, 96, 96};        // 4% below the others' median: named at 3%
  m[2].values = {97.5, 97.5, 97.5};  // 2.5%: not named
  auto slow = find_slow(m, 0.03);
  ASSERT_EQ(slow.size(), 1u);
  EXPECT_EQ(slow[0].who, "n1_g2 (rank 6)");
  EXPECT_NEAR(slow[0].shortfall, 0.04, 1e-12);
  EXPECT_DOUBLE_EQ(slow[0].noise, 0);
  // A whole node 10% slow: every rank and the node.
  for (int r = 4; r < 8; ++r) m[r].values = {90, 90, 90};
  slow = find_slow(m, 0.03);
  ASSERT_FALSE(slow.empty());
  EXPECT_EQ(slow.back().who, "node n1 (b)");
  // One node: no node findings.
  m.resize(4);
  EXPECT_TRUE(find_slow(m, 0.03).empty());
}

TEST(BenchStats, ASpreadIsTheRobustSigmaOfTheRepeats) {
  // Median 100; |ln(x / 100)| = 0, 0.019803 (102), 0.020203 (98), 0.039221 (104), 0.356675 (70): their
  // median 0.020203 (= ln(100/98)), × 1.4826 = 0.029953.
  const sample_summary s = summarize_samples({100, 98, 102, 104, 70});
  EXPECT_DOUBLE_EQ(s.level, 100);
  EXPECT_NEAR(s.spread, 1.4826 * std::log(100.0 / 98.0), 1e-12);
  EXPECT_NEAR(s.spread, 0.029953, 1e-6);
}

TEST(BenchStats, ATenfoldSlowdownIsNamedInsideAWideScatter) {
  // The CI VM in a noisy spell: every rank's CPU probe scattered ±25% over its repeats, and a rank slowed
  // 10× was not named, because as a fraction the gap (0.9) can never exceed 3σ (1.06). As logarithms the
  // gap is ln 10 = 2.30 against 3 × 0.35 = 1.06; a 20% slowdown (ln 1.2 = 0.18) stays inside that noise.
  const std::vector<double> scatter = {1.0, 0.75, 1.25, 0.8, 1.3};
  auto ranks_with = [&](double slowdown) {
    std::vector<rank_samples> m;
    for (int r = 0; r < 4; ++r) {
      m.push_back({r, "n0_g" + std::to_string(r), "h", {}});
      for (const double x : scatter) m.back().values.push_back(100 * x / (r == 2 ? slowdown : 1));
    }
    return m;
  };
  const auto slow = find_slow(ranks_with(10), 0.03);
  ASSERT_EQ(slow.size(), 1u);
  EXPECT_EQ(slow[0].who, "n0_g2 (rank 2)");
  EXPECT_NEAR(slow[0].shortfall, 0.9, 1e-12);
  EXPECT_TRUE(find_slow(ranks_with(1.2), 0.03).empty());
}

TEST(BenchStats, AGapInsideTheRepeatsNoiseIsNotSlow) {
  // Issue 32: on a quiet 2-core machine two ranks' CPU probes differ by a few % from run to run; a 3%
  // threshold alone named one of them on most runs. Rank 1 is 5% below rank 0, but its repeats scatter
  // ±6%: not named. A rank slowed by 20% with repeats scattering 1% is named, against the other rank
  // alone (not against the mean of the two).
  std::vector<rank_samples> noisy = {{0, "n0_g0", "h", {100, 94, 106, 100, 97}}, {1, "n0_g1", "h", {95, 89, 101, 95, 92}}};
  EXPECT_TRUE(find_slow(noisy, 0.03).empty());
  std::vector<rank_samples> slowed = {{0, "n0_g0", "h", {100, 99, 101, 100, 100}},
                                      {1, "n0_g1", "h", {100 / 1.2, 99 / 1.2, 101 / 1.2, 100 / 1.2, 100 / 1.2}}};
  const auto slow = find_slow(slowed, 0.03);
  ASSERT_EQ(slow.size(), 1u);
  EXPECT_EQ(slow[0].who, "n0_g1 (rank 1)");
  EXPECT_NEAR(slow[0].shortfall, 1 - 1 / 1.2, 1e-12);
  EXPECT_NEAR(slow[0].median, 100, 1e-12);
  // The same gap inside a large scatter is not named, whatever the threshold.
  for (auto& r : slowed) r.values = {r.values[0] * 0.6, r.values[1] * 1.4, r.values[2], r.values[3] * 0.7, r.values[4] * 1.3};
  EXPECT_TRUE(find_slow(slowed, 0.03).empty());
}

TEST(BenchStats, SlowdownInjectionParses) {
  const auto s = parse_slowdown("2:1.5", "--inject-slowdown");
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->rank, 2);
  EXPECT_DOUBLE_EQ(s->factor, 1.5);
  EXPECT_FALSE(parse_slowdown("", "--inject-slowdown").has_value());
  for (const char* bad : {"2", "x:2", "2:", "2:0.5", "-1:2", "2:2x"}) {
    EXPECT_THROW(parse_slowdown(bad, "--inject-slowdown"), input_error) << bad;
  }
}

TEST(BenchStats, DriverNamesMapToTheCatalog) {
  EXPECT_EQ(catalog_gpu_name("NVIDIA H100 80GB HBM3"), "h100-sxm5-80gb");
  EXPECT_EQ(catalog_gpu_name("NVIDIA H200"), "h200-sxm-141gb");
  EXPECT_EQ(catalog_gpu_name("NVIDIA A100-SXM4-80GB"), "a100-sxm4-80gb");
  EXPECT_EQ(catalog_gpu_name("NVIDIA A100-SXM4-40GB"), "a100-sxm4-40gb");
  EXPECT_EQ(catalog_gpu_name("NVIDIA H100 PCIe"), "h100-pcie-80gb");
  EXPECT_EQ(catalog_gpu_name("NVIDIA A100 80GB PCIe"), "");  // no PCIe A100 in the catalog
  // Names that contain another's: a GB200 is not a B200 (2.5 PF and 186 GB against 2.25 PF and 180 GiB).
  EXPECT_EQ(catalog_gpu_name("NVIDIA GB200"), "gb200");
  EXPECT_EQ(catalog_gpu_name("NVIDIA B200"), "b200-sxm-180gb");
  EXPECT_EQ(catalog_gpu_name("NVIDIA GB300"), "gb300");
  EXPECT_EQ(catalog_gpu_name("NVIDIA B300 SXM6 AC"), "b300-sxm-288gb");
  EXPECT_EQ(catalog_gpu_name("NVIDIA H100 NVL"), "h100-nvl-94gb");
  EXPECT_EQ(catalog_gpu_name("NVIDIA H800"), "h800-sxm5-80gb");
  EXPECT_EQ(catalog_gpu_name("Tesla V100-SXM2-32GB"), "");
}

}  // namespace
}  // namespace trainplan::bench

namespace trainplan::bench {
namespace {

TEST(BenchStats, GemmShapesParse) {
  EXPECT_EQ(parse_gemm_shape("8192x4096x1024", "--shapes"), (std::array<std::int64_t, 4>{8192, 4096, 1024, 1}));
  EXPECT_EQ(parse_gemm_shape("2048x2048x128x12", "--shapes"), (std::array<std::int64_t, 4>{2048, 2048, 128, 12}));
  for (const char* bad : {"", "8x8", "8x8x8x8x8", "8xx8x8", "0x8x8", "8x8x-8", "8x8x16777217", "8X8X8", " 8x8x8", "8x8x8x"}) {
    EXPECT_THROW(parse_gemm_shape(bad, "--shapes"), input_error) << bad;
  }
  try {
    parse_gemm_shape("8x8", "--shapes");
  } catch (const input_error& e) {
    EXPECT_STREQ(e.what(), "--shapes expects MxNxK or MxNxKxBATCH with each between 1 and 16777216, got '8x8'");
  }
  EXPECT_EQ(parse_whole("12"), 12);
  EXPECT_FALSE(parse_whole("+12").has_value());
  EXPECT_FALSE(parse_whole("1e3").has_value());
}

}  // namespace
}  // namespace trainplan::bench
