// Calibration profiles: the format round trip, bad files, and how a profile changes the planner
// (docs/formulas.md §6.4, docs/calibration.md).
#include "trainplan/cli/cli.h"
#include "trainplan/core/estimate/calibration.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "trainplan/cli/args.h"
#include "trainplan/core/estimate/comm.h"
#include "trainplan/core/estimate/compute.h"
#include "trainplan/core/base/error.h"
#include "trainplan/core/estimate/time.h"

namespace trainplan {
namespace {

using ::testing::HasSubstr;

/// A profile of an H100 with two measured GEMMs, a copy rate and an intra-node all-reduce sweep that
/// follows t = 14·5 µs + S·(2·7/8)/(450e9·0.70) exactly (8 ranks, 2(n−1) = 14 ring steps).
calibration_profile h100_profile() {
  calibration_profile p;
  p.created_utc = "2026-11-22T00:00:00Z";
  p.host = "node0";
  p.backend = "nccl";
  p.gpu_name = "NVIDIA H100 80GB HBM3";
  p.gpu_catalog_name = "h100-sxm5-80gb";
  p.sm_count = 132;
  p.gemms.push_back({dtype::bf16, 8192, 8192, 8192, 1, 2.0 * 8192.0 * 8192 * 8192 / 800e12, 800e12});
  p.gemms.push_back({dtype::bf16, 4096, 4096, 4096, 1, 2.0 * 4096.0 * 4096 * 4096 / 780e12, 780e12});
  p.device_copy_bytes_per_s = 3.0e12;
  measured_collective ar;
  ar.kind = collective_kind::all_reduce;
  ar.ranks = 8;
  ar.nodes = 1;
  ar.link = link_class::intra_node;
  for (double s = 1024; s <= 1024.0 * 1024 * 1024; s *= 4) {
    const double t = 14 * 5e-6 + s * (2.0 * 7 / 8) / (450e9 * 0.70);
    ar.points.push_back({s, t, s / t, s / t * 2.0 * 7 / 8});
  }
  p.collectives.push_back(ar);
  return p;
}

TEST(Calibration, JsonRoundTripKeepsEveryField) {
  const calibration_profile p = h100_profile();
  const calibration_profile q = parse_calibration(calibration_to_json(p), "mem");
  EXPECT_EQ(q.schema_version, kCalibrationSchemaVersion);
  EXPECT_EQ(q.gpu_catalog_name, "h100-sxm5-80gb");
  EXPECT_EQ(q.sm_count, 132);
  ASSERT_EQ(q.gemms.size(), 2u);
  EXPECT_EQ(q.gemms[1].m, 4096);
  EXPECT_DOUBLE_EQ(q.gemms[0].time_s, p.gemms[0].time_s);
  EXPECT_DOUBLE_EQ(q.gemms[0].flops_per_s, 2.0 * 8192.0 * 8192 * 8192 / p.gemms[0].time_s);
  EXPECT_DOUBLE_EQ(q.device_copy_bytes_per_s, 3.0e12);
  ASSERT_EQ(q.collectives.size(), 1u);
  EXPECT_EQ(q.collectives[0].points.size(), p.collectives[0].points.size());
  EXPECT_DOUBLE_EQ(q.collectives[0].points[3].busbw_bytes_per_s, p.collectives[0].points[3].busbw_bytes_per_s);
  EXPECT_EQ(calibration_to_json(q), calibration_to_json(p));
}

TEST(Calibration, BadFilesNameTheFieldAndRule) {
  auto message = [](const std::string& text) {
    try {
      parse_calibration(text, "cal.json");
    } catch (const input_error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message("{\"schema_version\": 1,\n \"kind\": "), "cal.json:2: not valid JSON (byte 32)");
  EXPECT_EQ(message(R"({"schema_version": 9, "kind": "trainplan-calibration"})"),
            "cal.json: schema_version: this trainplan reads version 1, the file is version 9");
  EXPECT_EQ(message(R"({"schema_version": 1, "kind": "x"})"), "cal.json: kind: must be \"trainplan-calibration\"");
  const std::string head = R"({"schema_version": 1, "kind": "trainplan-calibration", "gpu": {"catalog_name": "h100-sxm5-80gb"}, )";
  EXPECT_EQ(message(head + R"("gemm": [{"dtype": "bf16", "m": 8, "n": 8, "k": 8, "time_s": -1}]})"),
            "cal.json: gemm[0].time_s: must be positive");
  EXPECT_EQ(message(head + R"("gemm": [{"dtype": "bf17", "m": 8, "n": 8, "k": 8, "time_s": 1}]})"),
            "cal.json: gemm[0].dtype: unknown value 'bf17' (did you mean 'bf16'?); one of: fp32, tf32, bf16, fp16, fp8");
  EXPECT_EQ(message(head + R"("gemm": [{"dtype": "bf16", "m": 0, "n": 8, "k": 8, "time_s": 1}]})"),
            "cal.json: gemm[0].m: must be between 1 and 16777216, got 0");
  EXPECT_EQ(message(head + R"("collectives": [{"collective": "all_reduce", "ranks": 4, "nodes": 1, "points": [{"bytes": 8, "time_s": "x"}]}]})"),
            "cal.json: collectives[0].points[0].time_s: must be a number");
  EXPECT_EQ(message(R"({"schema_version": 1, "kind": "trainplan-calibration", "gemm": [{"dtype": "bf16", "m": 8, "n": 8, "k": 8, "time_s": 1}]})"),
            "cal.json: gpu.catalog_name: is required when the profile has GEMM measurements (which GPU were they taken on?)");
  EXPECT_THAT(message(R"({"schema_version": 1, "kind": "trainplan-calibration", "gpu": {"catalog_name": "h100"}})"),
              HasSubstr("unknown GPU 'h100'"));
}

TEST(Calibration, MissingFileIsAnInputError) {
  EXPECT_THROW(load_calibration("/nonexistent/profile.json"), input_error);
  // The committed profile's folder given for the file: named, not "not valid JSON (byte 1)".
  try {
    load_calibration(TRAINPLAN_TEST_DATA_DIR);
    FAIL() << "a directory is not a profile";
  } catch (const input_error& e) {
    EXPECT_EQ(cli_message(e), std::string("--calibration '") + TRAINPLAN_TEST_DATA_DIR + "': a directory; give a file in it");
  }
}

TEST(Calibration, MeasuredGemmShapesGetTheirMeasuredEfficiency) {
  cluster_spec c = find_cluster("dgx-h100");
  const calibration_effect fx = apply_calibration(c, h100_profile(), "p.json");
  EXPECT_EQ(fx.gemm_points, 2);
  const compute_efficiency e = effective_compute_efficiency(c.gpu);
  ASSERT_TRUE(e.measured != nullptr);
  const double peak = c.gpu.peak_flops(dtype::bf16);
  // At a measured shape the calibrated efficiency is the measured one (§6.4), whatever the model said.
  EXPECT_NEAR(estimate_gemm(c.gpu, e, dtype::bf16, {8192, 8192, 8192, 1}).efficiency, 800e12 / peak, 1e-12);
  EXPECT_NEAR(estimate_gemm(c.gpu, e, dtype::bf16, {4096, 4096, 4096, 1}).efficiency, 780e12 / peak, 1e-12);
  // Between them: the model's efficiency times the inverse-distance-weighted ratio; equidistant in log2
  // space from both points, so the mean of the two ratios.
  const compute_efficiency plain = effective_compute_efficiency(find_gpu("h100-sxm5-80gb"));
  auto model = [&](std::int64_t d) { return estimate_gemm(c.gpu, plain, dtype::bf16, {d, d, d, 1}).efficiency; };
  const double r8 = 800e12 / peak / model(8192), r4 = 780e12 / peak / model(4096);
  const gemm_shape mid{4096, 8192, 4096, 1};  // distance² 1 from the 4096³ point, 2 from 8192³: weights 1 and 1/2
  const double want = estimate_gemm(c.gpu, plain, dtype::bf16, mid).efficiency * (r4 * 1.0 + r8 * 0.5) / 1.5;
  EXPECT_NEAR(estimate_gemm(c.gpu, e, dtype::bf16, mid).efficiency, want, 1e-12);
  // A precision with no measurement keeps the model.
  EXPECT_DOUBLE_EQ(estimate_gemm(c.gpu, e, dtype::fp8, {8192, 8192, 8192, 1}).efficiency,
                   estimate_gemm(c.gpu, plain, dtype::fp8, {8192, 8192, 8192, 1}).efficiency);
}

TEST(Calibration, CopyRateSetsTheMemoryBandwidthFraction) {
  cluster_spec c = find_cluster("dgx-h100");
  const calibration_effect fx = apply_calibration(c, h100_profile(), "p.json");
  EXPECT_DOUBLE_EQ(fx.memory_bandwidth_fraction, 3.0e12 / 3.35e12);
  EXPECT_DOUBLE_EQ(effective_compute_efficiency(c.gpu).memory_bandwidth_fraction, 3.0e12 / 3.35e12);
}

TEST(Calibration, LinkFitRecoversLatencyAndBandwidthOfAnExactSweep) {
  const calibration_profile p = h100_profile();
  const link_fit f = fit_link(p.collectives[0], 450e9);
  EXPECT_NEAR(f.efficiency, 0.70, 1e-9);
  EXPECT_NEAR(f.latency_s, 5e-6, 1e-12);
}

TEST(Calibration, IntraNodeSweepChangesThePlannersCollectivesAsFitted) {
  cluster_spec c = find_cluster("dgx-h100");
  apply_calibration(c, h100_profile(), "p.json");
  EXPECT_NEAR(c.efficiency.intra_node, 0.70, 1e-9);
  EXPECT_NEAR(c.intra_node_latency_s, 5e-6, 1e-12);
  // An 8-GPU NVLink all-reduce of 1 GiB now costs the measured ring time (the tree is slower here).
  group_placement tp;
  tp.group_size = 8;
  tp.gpus_per_node = 8;
  const double s = 1024.0 * 1024 * 1024;
  EXPECT_NEAR(collective_time_s(c, collective_kind::all_reduce, s, tp), 14 * 5e-6 + s * 1.75 / (450e9 * 0.70), 1e-9);
}

TEST(Calibration, ProfileOfAnotherGpuIsRefused) {
  cluster_spec c = find_cluster("dgx-a100");
  try {
    apply_calibration(c, h100_profile(), "h100.json");
    FAIL() << "no error";
  } catch (const input_error& e) {
    EXPECT_EQ(cli_message(e),
                 "--calibration h100.json: measured on h100-sxm5-80gb (NVIDIA H100 80GB HBM3), but the job's GPU is "
                 "a100-sxm4-80gb");
  }
}

TEST(Calibration, FlagAppliesTheProfileToTheJob) {
  const std::string path = ::testing::TempDir() + "calibration_flag_test.json";
  {
    std::ofstream out(path);
    out << calibration_to_json(h100_profile());
  }
  const std::vector<std::string> base = {"--model", "llama3-8b", "--cluster", "dgx-h100", "--num-gpus", "8",
                                         "--tp",    "1",         "--gbs",     "64",       "--use-flash-attn"};
  std::vector<std::string> with = base;
  with.insert(with.end(), {"--calibration", path});
  const parsed_job plain = parse_job_args(base);
  const parsed_job cal = parse_job_args(with);
  EXPECT_NEAR(cal.job.cluster.efficiency.intra_node, 0.70, 1e-9);
  EXPECT_TRUE(cal.job.cluster.gpu.compute.measured != nullptr);
  // Both GEMM points measured above the model's efficiency (0.74 of 989 TFLOP/s for large tiles, §5.6)
  // and the copy rate above its 0.80: faster.
  EXPECT_LT(estimate_time(cal.job).iteration_s, estimate_time(plain.job).iteration_s);
  std::remove(path.c_str());
}

TEST(Calibration, CommittedH100ProfileLoadsAndMatchesItsGpu) {
  const calibration_profile p =
      load_calibration(std::string(TRAINPLAN_SOURCE_DIR) + "/calibration/h100-sxm5-80gb-2026-11-22/profile.json");
  EXPECT_EQ(p.gpu_catalog_name, "h100-sxm5-80gb");
  EXPECT_EQ(p.gemms.size(), 432u);  // 6³ grid shapes × bf16 and fp8
  cluster_spec c = find_cluster("dgx-h100");
  const calibration_effect fx = apply_calibration(c, p, "h100");
  EXPECT_EQ(fx.gemm_points, 432);
  // The measured copy rate: about 90% of the 3.35 TB/s datasheet (calibration/README.md).
  EXPECT_GT(fx.memory_bandwidth_fraction, 0.85);
  EXPECT_LT(fx.memory_bandwidth_fraction, 0.95);
}

}  // namespace
}  // namespace trainplan

namespace trainplan {
namespace {

TEST(Calibration, MemoNeverMixesTwoTables) {
  measured_gemm_table a, b;
  a.points.push_back({dtype::bf16, 10, 10, 10, 0, 1.25});
  b.points.push_back({dtype::bf16, 10, 10, 10, 0, 0.75});
  EXPECT_NE(a.id, b.id);
  for (int i = 0; i < 3; ++i) {
    EXPECT_DOUBLE_EQ(a.correction(dtype::bf16, 1024, 1024, 1024, 1), 1.25);
    EXPECT_DOUBLE_EQ(b.correction(dtype::bf16, 1024, 1024, 1024, 1), 0.75);
    // Away from the point: the only neighbour's ratio; another precision: no correction.
    EXPECT_DOUBLE_EQ(a.correction(dtype::bf16, 2048, 1024, 1024, 1), 1.25);
    EXPECT_DOUBLE_EQ(a.correction(dtype::fp8, 1024, 1024, 1024, 1), 1.0);
    EXPECT_DOUBLE_EQ(a.correction(dtype::bf16, 2048, 1024, 1024, 1), a.compute_correction(dtype::bf16, 2048, 1024, 1024, 1));
  }
}

// The H200 profile measured on 2026-11-26 (calibration/README.md): it loads, matches its catalog GPU, and
// its copy rate is the measured 4.27 TB/s of the 4.8 TB/s datasheet (88.9%).
TEST(Calibration, CommittedH200ProfileLoadsAndMatchesItsGpu) {
  const calibration_profile p =
      load_calibration(std::string(TRAINPLAN_SOURCE_DIR) + "/calibration/h200-sxm-141gb-2026-11-26/profile.json");
  EXPECT_EQ(p.gpu_catalog_name, "h200-sxm-141gb");
  EXPECT_EQ(p.gemms.size(), 432u);
  cluster_spec c = find_cluster("dgx-h200");
  const calibration_effect fx = apply_calibration(c, p, "h200");
  EXPECT_EQ(fx.gemm_points, 432);
  EXPECT_NEAR(fx.memory_bandwidth_fraction, 0.889, 0.005);
}

}  // namespace
}  // namespace trainplan
