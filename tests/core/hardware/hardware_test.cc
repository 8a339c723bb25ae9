// Hardware catalogs, validation and cluster files (docs/formulas.md §6).
#include "trainplan/core/hardware/hardware.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>

#include "trainplan/cli/args.h"
#include "trainplan/core/estimate/comm.h"
#include "trainplan/core/estimate/compute.h"
#include "trainplan/core/base/error.h"

namespace trainplan {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr std::int64_t kMiB = std::int64_t{1} << 20;
constexpr std::int64_t kGiB = std::int64_t{1} << 30;

std::string data_path(const std::string& name) {
  return std::string(TRAINPLAN_TEST_DATA_DIR) + "/cluster/" + name;
}

/// Writes `text` to a fresh file in the test temp dir and returns its path.
std::string write_temp(const std::string& name, const std::string& text) {
  // A directory per test: ctest runs tests in parallel processes sharing the temp dir.
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const auto dir = std::filesystem::path(::testing::TempDir()) / "trainplan_hardware_test" /
                   (std::string(info->test_suite_name()) + "." + info->name());
  std::filesystem::create_directories(dir);
  const auto path = (dir / name).string();
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  return path;
}

/// The input_error message `f` throws, or "" (and a test failure) when it throws nothing.
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const input_error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected input_error";
  return "";
}

// ---- dtypes ----

TEST(HardwareDtype, NamesAndBytes) {
  EXPECT_EQ(to_string(dtype::fp32), "fp32");
  EXPECT_EQ(to_string(dtype::tf32), "tf32");
  EXPECT_EQ(to_string(dtype::bf16), "bf16");
  EXPECT_EQ(to_string(dtype::fp16), "fp16");
  EXPECT_EQ(to_string(dtype::fp8), "fp8");
  EXPECT_EQ(bytes_of(dtype::fp32), 4);
  EXPECT_EQ(bytes_of(dtype::tf32), 4);
  EXPECT_EQ(bytes_of(dtype::bf16), 2);
  EXPECT_EQ(bytes_of(dtype::fp16), 2);
  EXPECT_EQ(bytes_of(dtype::fp8), 1);
}

TEST(HardwareDtype, PeakFlopsPerDtype) {
  const gpu_spec& h100 = find_gpu("h100-sxm5-80gb");
  EXPECT_DOUBLE_EQ(h100.peak_flops(dtype::fp32), 67e12);
  EXPECT_DOUBLE_EQ(h100.peak_flops(dtype::tf32), 494.7e12);
  EXPECT_DOUBLE_EQ(h100.peak_flops(dtype::bf16), 989.4e12);
  EXPECT_DOUBLE_EQ(h100.peak_flops(dtype::fp16), 989.4e12);
  EXPECT_DOUBLE_EQ(h100.peak_flops(dtype::fp8), 1978.9e12);
  EXPECT_EQ(find_gpu("a100-sxm4-80gb").peak_flops(dtype::fp8), 0);
}

// ---- GPU catalog, pinned against the datasheets ----

TEST(HardwareGpuCatalog, Names) {
  EXPECT_THAT(gpu_names(), ElementsAre("a100-sxm4-40gb", "a100-sxm4-80gb", "h100-sxm5-80gb", "h100-pcie-80gb",
                                       "h100-sxm5-96gb-hbm2e", "h100-nvl-94gb", "h20-96gb", "h800-sxm5-80gb",
                                       "h200-sxm-141gb", "b200-sxm-180gb", "gb200", "b300-sxm-288gb", "gb300", "mi300x",
                                       "mi325x", "mi355x",
                                       "v100-sxm2-32gb"));
}

// The H20: a Hopper capped at 148 dense BF16 TFLOP/s on 78 SMs, with more memory than the H100.
TEST(HardwareGpuCatalog, H20) {
  const gpu_spec g = find_gpu("h20-96gb");
  EXPECT_DOUBLE_EQ(g.peak_bf16_flops, 148e12);
  EXPECT_DOUBLE_EQ(g.peak_fp8_flops, 2 * g.peak_bf16_flops);
  EXPECT_DOUBLE_EQ(g.memory_bandwidth_bytes_per_s, 4.0e12);
  EXPECT_EQ(g.sm_count, 78);
}

// Meta's Grand Teton H100, as torchtitan's benchmarks ran: 96 GB of HBM2e at 2.4 TB/s; the SXM die at
// 500 W, its peak "between SXM and NVL" by the source's footnote: the two datasheet columns' midpoint.
TEST(HardwareGpuCatalog, GrandTetonH100) {
  const gpu_spec g = find_gpu("h100-sxm5-96gb-hbm2e");
  EXPECT_DOUBLE_EQ(g.memory_bytes, 96.0 * 1024 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(g.memory_bandwidth_bytes_per_s, 2.4e12);
  const gpu_spec& sxm = find_gpu("h100-sxm5-80gb");
  const gpu_spec& nvl = find_gpu("h100-nvl-94gb");
  EXPECT_DOUBLE_EQ(g.peak_bf16_flops, 912.45e12);
  EXPECT_DOUBLE_EQ(g.peak_bf16_flops, (sxm.peak_bf16_flops + nvl.peak_bf16_flops) / 2);
  EXPECT_DOUBLE_EQ(g.peak_fp8_flops, (sxm.peak_fp8_flops + nvl.peak_fp8_flops) / 2);
  EXPECT_EQ(g.sm_count, 132);
}

TEST(HardwareGpuCatalog, HopperVariantsUsersRent) {
  // Issue 27: the H100 datasheet's PCIe and NVL columns (sparse figures halved), and the H800 (the SXM
  // card with NVLink at 400 GB/s).
  const gpu_spec& pcie = find_gpu("h100-pcie-80gb");
  EXPECT_EQ(pcie.sm_count, 114);
  EXPECT_DOUBLE_EQ(pcie.peak_bf16_flops, 756.5e12);
  EXPECT_DOUBLE_EQ(pcie.peak_fp8_flops, 1513e12);
  EXPECT_DOUBLE_EQ(pcie.memory_bandwidth_bytes_per_s, 2.0e12);
  EXPECT_DOUBLE_EQ(pcie.intra_node_bandwidth_bytes_per_s, 300e9);
  const gpu_spec& nvl = find_gpu("h100-nvl-94gb");
  EXPECT_EQ(nvl.sm_count, 132);
  EXPECT_DOUBLE_EQ(nvl.peak_bf16_flops, 835.5e12);
  EXPECT_DOUBLE_EQ(nvl.peak_fp8_flops, 1670.5e12);
  EXPECT_EQ(nvl.memory_bytes, 94 * kGiB);
  EXPECT_DOUBLE_EQ(nvl.memory_bandwidth_bytes_per_s, 3.9e12);
  const gpu_spec& h800 = find_gpu("h800-sxm5-80gb");
  const gpu_spec& h100 = find_gpu("h100-sxm5-80gb");
  EXPECT_DOUBLE_EQ(h800.peak_bf16_flops, h100.peak_bf16_flops);
  EXPECT_EQ(h800.usable_memory_bytes, h100.usable_memory_bytes);
  EXPECT_DOUBLE_EQ(h800.intra_node_bandwidth_bytes_per_s, 200e9);
  // They run Hopper's measured kernels (§5.6).
  for (const gpu_spec* g : {&pcie, &nvl, &h800}) {
    EXPECT_DOUBLE_EQ(default_compute_efficiency(*g).sustained_clock_factor,
                     default_compute_efficiency(h100).sustained_clock_factor);
  }
}

TEST(HardwareGpuCatalog, Mi325xAndMi355x) {
  // AMD's data sheets (dense) and ROCm's GPU specifications table (VRAM GiB, CUs).
  const gpu_spec& a = find_gpu("mi325x");
  EXPECT_DOUBLE_EQ(a.peak_bf16_flops, 1307.4e12);
  EXPECT_EQ(a.memory_bytes, 256 * kGiB);
  EXPECT_DOUBLE_EQ(a.memory_bandwidth_bytes_per_s, 6.0e12);
  EXPECT_EQ(a.sm_count, 304);
  const gpu_spec& b = find_gpu("mi355x");
  EXPECT_DOUBLE_EQ(b.peak_bf16_flops, 2516.6e12);  // 256 CUs x 4,096 FLOP/clk x 2.4 GHz
  EXPECT_NEAR(b.peak_bf16_flops, 256 * 4096 * 2.4e9, 1e11);
  EXPECT_DOUBLE_EQ(b.peak_fp8_flops, 5033.2e12);
  EXPECT_EQ(b.memory_bytes, 288 * kGiB);
  EXPECT_DOUBLE_EQ(b.memory_bandwidth_bytes_per_s, 8.0e12);
  EXPECT_EQ(b.sm_count, 256);
}

TEST(HardwareGpuCatalog, V100) {
  // NVIDIA Tesla V100 datasheet, SXM2 32GB: 125 TFLOPs fp16 tensor, 15.7 fp32, 900 GB/s, 80 SMs; no bf16.
  const gpu_spec& g = find_gpu("v100-sxm2-32gb");
  EXPECT_DOUBLE_EQ(g.peak_bf16_flops, 125e12);
  EXPECT_DOUBLE_EQ(g.peak_fp32_flops, 15.7e12);
  EXPECT_DOUBLE_EQ(g.memory_bandwidth_bytes_per_s, 900e9);
  EXPECT_EQ(g.sm_count, 80);
  EXPECT_FALSE(g.bf16);
  EXPECT_EQ(g.peak_fp8_flops, 0);
}

TEST(HardwareGpuCatalog, A100) {
  for (const char* name : {"a100-sxm4-40gb", "a100-sxm4-80gb"}) {
    SCOPED_TRACE(name);
    const gpu_spec& g = find_gpu(name);
    EXPECT_EQ(g.vendor, "NVIDIA");
    EXPECT_DOUBLE_EQ(g.peak_fp32_flops, 19.5e12);
    EXPECT_DOUBLE_EQ(g.peak_tf32_flops, 156e12);
    EXPECT_DOUBLE_EQ(g.peak_bf16_flops, 312e12);
    EXPECT_EQ(g.peak_fp8_flops, 0);
    EXPECT_EQ(g.sm_count, 108);
    EXPECT_DOUBLE_EQ(g.intra_node_bandwidth_bytes_per_s, 300e9);
    EXPECT_EQ(g.cuda_context_bytes, 1573 * kMiB);
    EXPECT_THAT(g.source, HasSubstr("A100"));
  }
  const gpu_spec& a40 = find_gpu("a100-sxm4-40gb");
  EXPECT_EQ(a40.memory_bytes, 42'949'672'960);
  EXPECT_EQ(a40.usable_memory_bytes, 40536 * kMiB);
  EXPECT_DOUBLE_EQ(a40.memory_bandwidth_bytes_per_s, 1.555e12);
  const gpu_spec& a80 = find_gpu("a100-sxm4-80gb");
  EXPECT_EQ(a80.memory_bytes, 85'899'345'920);
  EXPECT_EQ(a80.usable_memory_bytes, 85'198'045'184);
  EXPECT_EQ(a80.usable_memory_bytes / kMiB, 81251);  // 81,251.19 MiB
  EXPECT_DOUBLE_EQ(a80.memory_bandwidth_bytes_per_s, 2.039e12);
}

TEST(HardwareGpuCatalog, HopperAndBlackwell) {
  const gpu_spec& h100 = find_gpu("h100-sxm5-80gb");
  EXPECT_EQ(h100.sm_count, 132);
  EXPECT_EQ(h100.memory_bytes, 80 * kGiB);
  EXPECT_EQ(h100.usable_memory_bytes, 81008 * kMiB);
  EXPECT_DOUBLE_EQ(h100.memory_bandwidth_bytes_per_s, 3.35e12);
  EXPECT_DOUBLE_EQ(h100.intra_node_bandwidth_bytes_per_s, 450e9);
  EXPECT_EQ(h100.cuda_context_bytes, 1923 * kMiB);  // A100's 1,573 MiB x 132/108 SMs
  EXPECT_EQ(find_gpu("b200-sxm-180gb").cuda_context_bytes, 2156 * kMiB);  // x 148/108
  EXPECT_EQ(find_gpu("mi300x").cuda_context_bytes, 1573 * kMiB);

  const gpu_spec& h200 = find_gpu("h200-sxm-141gb");
  EXPECT_EQ(h200.sm_count, 132);
  EXPECT_DOUBLE_EQ(h200.peak_bf16_flops, h100.peak_bf16_flops);
  EXPECT_DOUBLE_EQ(h200.peak_fp8_flops, h100.peak_fp8_flops);
  EXPECT_EQ(h200.memory_bytes, 141 * kGiB);
  EXPECT_EQ(h200.usable_memory_bytes, 143220 * kMiB);
  EXPECT_DOUBLE_EQ(h200.memory_bandwidth_bytes_per_s, 4.8e12);
  EXPECT_DOUBLE_EQ(h200.intra_node_bandwidth_bytes_per_s, 450e9);

  const gpu_spec& b200 = find_gpu("b200-sxm-180gb");
  EXPECT_EQ(b200.sm_count, 148);
  EXPECT_DOUBLE_EQ(b200.peak_fp32_flops, 80e12);
  EXPECT_DOUBLE_EQ(b200.peak_tf32_flops, 1.1e15);
  EXPECT_DOUBLE_EQ(b200.peak_bf16_flops, 2.25e15);
  EXPECT_DOUBLE_EQ(b200.peak_fp8_flops, 4.5e15);
  EXPECT_EQ(b200.memory_bytes, 180 * kGiB);
  EXPECT_DOUBLE_EQ(b200.memory_bandwidth_bytes_per_s, 8e12);
  EXPECT_DOUBLE_EQ(b200.intra_node_bandwidth_bytes_per_s, 900e9);
}

// Blackwell Ultra (docs/formulas.md §6.1): HGX B300's board totals and GB300 NVL72's rack totals per GPU,
// sparse figures halved; 160 SMs, 288 GB of HBM3e at 8 TB/s (NVIDIA's architecture blog).
TEST(HardwareGpuCatalog, BlackwellUltra) {
  const gpu_spec& b300 = find_gpu("b300-sxm-288gb");
  EXPECT_EQ(b300.sm_count, 160);
  EXPECT_DOUBLE_EQ(b300.peak_fp32_flops, 75e12);
  EXPECT_DOUBLE_EQ(b300.peak_tf32_flops, 1.125e15);
  EXPECT_DOUBLE_EQ(b300.peak_bf16_flops, 2.25e15);
  EXPECT_DOUBLE_EQ(b300.peak_fp8_flops, 4.5e15);
  EXPECT_TRUE(b300.mx_block_scaling);
  EXPECT_EQ(b300.memory_bytes, 288 * kGiB);
  // B200's nvidia-smi share of its marketed 180 GB, 183,359 of 184,320 MiB, less H100's 551 MiB reserve.
  EXPECT_EQ(b300.usable_memory_bytes, (293375 - 551) * kMiB);
  EXPECT_DOUBLE_EQ(b300.memory_bandwidth_bytes_per_s, 8e12);
  EXPECT_DOUBLE_EQ(b300.intra_node_bandwidth_bytes_per_s, 900e9);
  EXPECT_DOUBLE_EQ(b300.host_link_bytes_per_s, 128e9);  // PCIe Gen6 x16
  EXPECT_EQ(b300.cuda_context_bytes, 2330 * kMiB);       // A100's 1,573 MiB x 160/108 SMs
  const gpu_spec& gb300 = find_gpu("gb300");
  EXPECT_DOUBLE_EQ(gb300.peak_bf16_flops, find_gpu("gb200").peak_bf16_flops);  // 360 PF sparse per rack
  EXPECT_DOUBLE_EQ(gb300.peak_fp8_flops, 5e15);
  EXPECT_EQ(gb300.memory_bytes, 288 * kGiB);
  EXPECT_DOUBLE_EQ(gb300.host_link_bytes_per_s, 450e9);  // NVLink-C2C to Grace
  const cluster_spec& nvl = find_cluster("gb300-nvl72");
  EXPECT_EQ(nvl.gpus_per_node, 72);
  EXPECT_DOUBLE_EQ(nvl.nic_bandwidth_bytes_per_s, 100e9);  // ConnectX-8, 800 Gb/s
  EXPECT_DOUBLE_EQ(find_cluster("dgx-b300").nic_bandwidth_bytes_per_s, 100e9);
}

TEST(HardwareGpuCatalog, Mi300x) {
  const gpu_spec& g = find_gpu("mi300x");
  EXPECT_EQ(g.vendor, "AMD");
  EXPECT_DOUBLE_EQ(g.peak_fp32_flops, 163.4e12);
  EXPECT_DOUBLE_EQ(g.peak_tf32_flops, 653.7e12);
  EXPECT_DOUBLE_EQ(g.peak_bf16_flops, 1307.4e12);
  EXPECT_DOUBLE_EQ(g.peak_fp8_flops, 2614.9e12);
  EXPECT_EQ(g.memory_bytes, 192 * kGiB);
  EXPECT_EQ(g.usable_memory_bytes, 205'822'885'888);
  EXPECT_DOUBLE_EQ(g.memory_bandwidth_bytes_per_s, 5.3e12);
  EXPECT_EQ(g.sm_count, 304);
  EXPECT_DOUBLE_EQ(g.intra_node_bandwidth_bytes_per_s, 448e9);
}

TEST(HardwareGpuCatalog, EveryEntryIsConsistent) {
  for (const gpu_spec& g : gpu_catalog()) {
    SCOPED_TRACE(g.name);
    EXPECT_FALSE(g.source.empty());
    EXPECT_LT(g.usable_memory_bytes, g.memory_bytes);
    EXPECT_LT(g.cuda_context_bytes, g.usable_memory_bytes / 10);
    // Tensor-core rates double with each halving of the datatype (B200's datasheet rounds tf32 to 1.1 PF);
    // V100 has neither tf32 nor bf16 tensor cores.
    if (g.bf16) {
      EXPECT_NEAR(g.peak_bf16_flops / g.peak_tf32_flops, 2.0, 0.05);
    }
    if (g.peak_fp8_flops > 0) {
      EXPECT_NEAR(g.peak_fp8_flops / g.peak_bf16_flops, 2.0, 0.01);
    }
  }
}

// ---- Cluster catalog ----

TEST(HardwareClusterCatalog, Names) {
  EXPECT_THAT(cluster_names(),
              ElementsAre("jean-zay-a100", "dgx-a100", "dgx-h100", "dgx-h200", "dgx-b200", "gb200-nvl72", "dgx-b300",
                          "gb300-nvl72", "aws-p3dn", "aws-p4d"));
}

TEST(HardwareClusterCatalog, Gb200Nvl72IsOneNvlinkDomainOf72) {
  // Issue 9 (5): the NVLink domain is 72 GPUs, each with its own 400 Gb/s NIC (GB200 NVL72 datasheet).
  const cluster_spec& c = find_cluster("gb200-nvl72");
  EXPECT_EQ(c.gpus_per_node, 72);
  EXPECT_EQ(c.nics_per_node, 72);
  EXPECT_DOUBLE_EQ(c.nic_bandwidth_bytes_per_s, 50e9);
  const gpu_spec& g = c.gpu;
  EXPECT_EQ(g.name, "gb200");
  EXPECT_DOUBLE_EQ(g.peak_bf16_flops * 72 * 2, 360e15);  // the rack's 360 PF sparse BF16
  EXPECT_DOUBLE_EQ(g.peak_fp8_flops * 72 * 2, 720e15);
  EXPECT_NEAR(g.memory_bandwidth_bytes_per_s * 72, 576e12, 1e9);
  EXPECT_NEAR(static_cast<double>(g.memory_bytes) * 72, 13.4e12, 0.01e12);
  EXPECT_DOUBLE_EQ(g.intra_node_bandwidth_bytes_per_s, 900e9);
  EXPECT_NO_THROW(validate_cluster(c, "catalog"));
  // 72 GPUs as TP 8 × DP 9: on the NVL72 the DP gradient all-reduce stays on NVLink; on nine DGX B200 it
  // crosses InfiniBand, and takes several times longer.
  auto dp_s = [](const char* cluster) {
    const trainplan::parsed_job pj = trainplan::parse_job_args(
        {"--model", "llama3-8b", "--cluster", cluster, "--num-gpus", "72", "--tp", "8", "--gbs", "72", "--seq-length", "4096"});
    EXPECT_EQ(pj.job.parallel.dp, 9);
    return trainplan::analyze_comm(pj.job)[trainplan::parallel_dim::dp].time_per_iteration_s;
  };
  EXPECT_GT(dp_s("dgx-b200"), 3 * dp_s("gb200-nvl72"));
}

TEST(HardwareClusterCatalog, JeanZay) {
  const cluster_spec& c = find_cluster("jean-zay-a100");
  EXPECT_EQ(c.gpu.name, "a100-sxm4-80gb");
  EXPECT_EQ(c.gpus_per_node, 8);
  EXPECT_EQ(c.num_nodes, 48);
  EXPECT_EQ(c.num_gpus(), 384);  // BLOOM's 384 GPUs
  EXPECT_EQ(c.nics_per_node, 4);
  EXPECT_DOUBLE_EQ(c.nic_bandwidth_bytes_per_s, 12.5e9);
  EXPECT_DOUBLE_EQ(c.node_network_bandwidth_bytes_per_s(), 4 * 12.5e9);
  EXPECT_LT(c.efficiency.inter_node, find_cluster("dgx-a100").efficiency.inter_node);  // Omni-Path
  EXPECT_THAT(c.interconnect, HasSubstr("Omni-Path"));
}

TEST(HardwareClusterCatalog, Dgx) {
  const cluster_spec& a = find_cluster("dgx-a100");
  EXPECT_EQ(a.gpu.name, "a100-sxm4-80gb");
  EXPECT_DOUBLE_EQ(a.node_network_bandwidth_bytes_per_s(), 8 * 25e9);
  for (const auto& [name, gpu] : {std::pair{"dgx-h100", "h100-sxm5-80gb"}, std::pair{"dgx-h200", "h200-sxm-141gb"},
                                  std::pair{"dgx-b200", "b200-sxm-180gb"}}) {
    SCOPED_TRACE(name);
    const cluster_spec& c = find_cluster(name);
    EXPECT_EQ(c.gpu.name, gpu);
    EXPECT_EQ(c.nics_per_node, 8);
    EXPECT_DOUBLE_EQ(c.nic_bandwidth_bytes_per_s, 50e9);
  }
  for (const cluster_spec& c : cluster_catalog()) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(c.gpus_per_node, c.name == "gb200-nvl72" || c.name == "gb300-nvl72" ? 72 : 8);
    EXPECT_EQ(c.num_nodes, c.name == "jean-zay-a100" ? 48 : 1);
    EXPECT_DOUBLE_EQ(c.intra_node_latency_s, 5e-6);
    EXPECT_GE(c.inter_node_latency_s, 10e-6);
    EXPECT_FALSE(c.source.empty());
    EXPECT_NO_THROW(validate_cluster(c, "catalog"));
  }
}

TEST(HardwareFind, UnknownNamesSuggest) {
  EXPECT_EQ(error_of([] { find_gpu("h100-sxm-80gb"); }),
            "unknown GPU 'h100-sxm-80gb' (did you mean 'h100-sxm5-80gb'?)");
  EXPECT_EQ(error_of([] { find_gpu("tpu-v5"); }), "unknown GPU 'tpu-v5'");
  EXPECT_EQ(error_of([] { find_cluster("dgx-h10"); }), "unknown cluster 'dgx-h10' (did you mean 'dgx-h100'?)");
  EXPECT_EQ(error_of([] { find_cluster("frontier"); }), "unknown cluster 'frontier'");
}

// ---- validate_cluster ----

TEST(HardwareValidate, EveryRuleNamesOriginFieldAndRule) {
  const cluster_spec base = find_cluster("dgx-a100");
  struct test_case {
    void (*mutate)(cluster_spec&);
    const char* message;
  };
  const test_case cases[] = {
      {[](cluster_spec& c) { c.nic_bandwidth_bytes_per_s = 0; },
       "cluster file c.yaml: field 'nic_bandwidth_bytes_per_s' must be positive and finite, got 0"},
      {[](cluster_spec& c) { c.nic_bandwidth_bytes_per_s = std::numeric_limits<double>::infinity(); },
       "cluster file c.yaml: field 'nic_bandwidth_bytes_per_s' must be positive and finite, got inf"},
      {[](cluster_spec& c) { c.gpus_per_node = 0; },
       "cluster file c.yaml: field 'gpus_per_node' must be positive and finite, got 0"},
      {[](cluster_spec& c) { c.num_nodes = -2; },
       "cluster file c.yaml: field 'num_nodes' must be positive and finite, got -2"},
      {[](cluster_spec& c) { c.nics_per_node = 0; },
       "cluster file c.yaml: field 'nics_per_node' must be positive and finite, got 0"},
      {[](cluster_spec& c) { c.intra_node_latency_s = 0; },
       "cluster file c.yaml: field 'intra_node_latency_s' must be positive and finite, got 0"},
      {[](cluster_spec& c) { c.inter_node_latency_s = std::nan(""); },
       "cluster file c.yaml: field 'inter_node_latency_s' must be positive and finite, got nan"},
      {[](cluster_spec& c) { c.name.clear(); }, "cluster file c.yaml: field 'name' must be non-empty, got ''"},
      {[](cluster_spec& c) { c.efficiency.intra_node = 0; },
       "cluster file c.yaml: field 'efficiency.intra_node' must be in (0, 1], got 0"},
      {[](cluster_spec& c) { c.efficiency.inter_node = 1.5; },
       "cluster file c.yaml: field 'efficiency.inter_node' must be in (0, 1], got 1.5"},
      {[](cluster_spec& c) { c.gpu.name.clear(); }, "cluster file c.yaml: field 'gpu.name' must be non-empty, got ''"},
      {[](cluster_spec& c) { c.gpu.peak_fp32_flops = -1; },
       "cluster file c.yaml: field 'gpu.peak_fp32_flops' must be positive and finite, got -1"},
      {[](cluster_spec& c) { c.gpu.peak_tf32_flops = 0; },
       "cluster file c.yaml: field 'gpu.peak_tf32_flops' must be positive and finite, got 0"},
      {[](cluster_spec& c) { c.gpu.peak_bf16_flops = 0; },
       "cluster file c.yaml: field 'gpu.peak_bf16_flops' must be positive and finite, got 0"},
      {[](cluster_spec& c) { c.gpu.peak_fp8_flops = -1; },
       "cluster file c.yaml: field 'gpu.peak_fp8_flops' must be non-negative and finite, got -1"},
      {[](cluster_spec& c) { c.gpu.memory_bytes = 0; },
       "cluster file c.yaml: field 'gpu.memory_bytes' must be positive and finite, got 0"},
      {[](cluster_spec& c) { c.gpu.usable_memory_bytes = 0; },
       "cluster file c.yaml: field 'gpu.usable_memory_bytes' must be positive and finite, got 0"},
      {[](cluster_spec& c) { c.gpu.memory_bandwidth_bytes_per_s = 0; },
       "cluster file c.yaml: field 'gpu.memory_bandwidth_bytes_per_s' must be positive and finite, got 0"},
      {[](cluster_spec& c) { c.gpu.sm_count = 0; },
       "cluster file c.yaml: field 'gpu.sm_count' must be positive and finite, got 0"},
      {[](cluster_spec& c) { c.gpu.intra_node_bandwidth_bytes_per_s = 0; },
       "cluster file c.yaml: field 'gpu.intra_node_bandwidth_bytes_per_s' must be positive and finite, got 0"},
      {[](cluster_spec& c) { c.gpu.cuda_context_bytes = -1; },
       "cluster file c.yaml: field 'gpu.cuda_context_bytes' must be non-negative and finite, got -1"},
      {[](cluster_spec& c) { c.gpu.usable_memory_bytes = c.gpu.memory_bytes + 1; },
       "cluster file c.yaml: field 'gpu.usable_memory_bytes' must not exceed 'gpu.memory_bytes' (85899345920), "
       "got 85899345921"},
      {[](cluster_spec& c) { c.gpu.cuda_context_bytes = c.gpu.usable_memory_bytes; },
       "cluster file c.yaml: field 'gpu.cuda_context_bytes' must be less than 'gpu.usable_memory_bytes' "
       "(85198045184), got 85198045184"},
  };
  for (const auto& tc : cases) {
    cluster_spec c = base;
    tc.mutate(c);
    EXPECT_EQ(error_of([&] { validate_cluster(c, "cluster file c.yaml"); }), tc.message);
  }
  cluster_spec ok = base;
  ok.efficiency.inter_node = 1.0;  // (0, 1] includes 1
  ok.gpu.peak_fp8_flops = 0;       // no fp8 is allowed
  EXPECT_NO_THROW(validate_cluster(ok, "x"));
}

// ---- Cluster files ----

TEST(HardwareClusterFile, BaseWithOverrides) {
  const cluster_spec c = load_cluster_file(data_path("dgx_h100_override.yaml"));
  const cluster_spec& base = find_cluster("dgx-h100");
  EXPECT_EQ(c.name, "my-h100-pod");
  EXPECT_EQ(c.num_nodes, 4);
  EXPECT_EQ(c.num_gpus(), 32);
  EXPECT_DOUBLE_EQ(c.nic_bandwidth_bytes_per_s, 25e9);  // 200 Gb/s
  EXPECT_DOUBLE_EQ(c.inter_node_latency_s, 12e-6);
  EXPECT_DOUBLE_EQ(c.efficiency.inter_node, 0.9);
  EXPECT_DOUBLE_EQ(c.efficiency.intra_node, base.efficiency.intra_node);  // kept from the base
  EXPECT_EQ(c.nics_per_node, base.nics_per_node);
  EXPECT_EQ(c.interconnect, base.interconnect);
  // gpu: a mapping with no base overrides the base cluster's GPU.
  EXPECT_EQ(c.gpu.name, "h100-sxm5-80gb");
  EXPECT_EQ(c.gpu.usable_memory_bytes, 78 * kGiB);
  EXPECT_EQ(c.gpu.cuda_context_bytes, 2000 * kMiB);
  EXPECT_EQ(c.gpu.sm_count, 132);
  EXPECT_DOUBLE_EQ(c.gpu.peak_bf16_flops, 989.4e12);
}

TEST(HardwareClusterFile, JsonWithGpuBase) {
  const cluster_spec c = load_cluster_file(data_path("custom_gpu.json"));
  EXPECT_EQ(c.name, "lab-a100-40");
  EXPECT_EQ(c.gpu.name, "a100-sxm4-40gb");
  EXPECT_DOUBLE_EQ(c.gpu.memory_bandwidth_bytes_per_s, 1.4e12);
  EXPECT_EQ(c.gpu.sm_count, 108);
  EXPECT_EQ(c.gpus_per_node, 4);
  EXPECT_EQ(c.num_nodes, 2);
  EXPECT_EQ(c.nics_per_node, 1);
  EXPECT_DOUBLE_EQ(c.nic_bandwidth_bytes_per_s, 12.5e9);
  EXPECT_DOUBLE_EQ(c.intra_node_latency_s, 8e-6);
  EXPECT_DOUBLE_EQ(c.inter_node_latency_s, 20e-6);
  EXPECT_DOUBLE_EQ(c.efficiency.intra_node, 0.7);
  EXPECT_DOUBLE_EQ(c.efficiency.inter_node, 0.6);
  EXPECT_EQ(c.interconnect, "4 x A100 on NVLink3; 1 x 100 Gb/s Ethernet (RoCE)");
}

TEST(HardwareClusterFile, FromScratchWithUnits) {
  const cluster_spec c = load_cluster_file(data_path("from_scratch.yaml"));
  EXPECT_EQ(c.name, "toy");
  EXPECT_EQ(c.gpu.name, "toy-gpu");
  EXPECT_EQ(c.gpu.vendor, "Toy");
  EXPECT_DOUBLE_EQ(c.gpu.peak_fp32_flops, 10e12);
  EXPECT_DOUBLE_EQ(c.gpu.peak_bf16_flops, 40e12);
  EXPECT_EQ(c.gpu.peak_fp8_flops, 0);
  EXPECT_EQ(c.gpu.memory_bytes, 16 * kGiB);
  EXPECT_EQ(c.gpu.usable_memory_bytes, 16000 * kMiB);
  EXPECT_DOUBLE_EQ(c.gpu.memory_bandwidth_bytes_per_s, 1e12);
  EXPECT_DOUBLE_EQ(c.gpu.intra_node_bandwidth_bytes_per_s, 100e9);
  EXPECT_EQ(c.gpu.cuda_context_bytes, 500'000'000);
  EXPECT_EQ(c.num_gpus(), 6);
  EXPECT_DOUBLE_EQ(c.nic_bandwidth_bytes_per_s, 25e9);
  // Unset cluster fields keep the struct defaults.
  const cluster_spec defaults;
  EXPECT_DOUBLE_EQ(c.intra_node_latency_s, defaults.intra_node_latency_s);
  EXPECT_DOUBLE_EQ(c.efficiency.inter_node, defaults.efficiency.inter_node);
}

TEST(HardwareClusterFile, GpuByNameAndDefaultName) {
  const std::string path = write_temp("pod.yaml", "base: dgx-a100\ngpu: a100-sxm4-40gb\nnum_nodes: 16\n");
  const cluster_spec c = load_cluster_file(path);
  EXPECT_EQ(c.name, "pod");  // the file stem when there is no `name:`
  EXPECT_EQ(c.gpu.name, "a100-sxm4-40gb");
  EXPECT_EQ(c.num_gpus(), 128);
  EXPECT_DOUBLE_EQ(c.nic_bandwidth_bytes_per_s, 25e9);
}

TEST(HardwareClusterFile, WholeNumberWrittenAsFloat) {
  const std::string path = write_temp("float_int.yaml", "base: dgx-a100\ngpu:\n  memory_bytes: 8.589934592e10\n");
  EXPECT_EQ(load_cluster_file(path).gpu.memory_bytes, 80 * kGiB);
}

TEST(HardwareClusterFileErrors, MissingFile) {
  const std::string path = data_path("no_such_cluster.yaml");
  EXPECT_EQ(error_of([&] { load_cluster_file(path); }),
            "cluster '" + path + "': no such file");
}

TEST(HardwareClusterFileErrors, MalformedYamlHasOneBasedLine) {
  const std::string path = data_path("malformed.yaml");
  const std::string message = error_of([&] { load_cluster_file(path); });
  EXPECT_EQ(message, path + ":3: illegal map value");
  const std::string json = data_path("malformed.json");
  EXPECT_EQ(error_of([&] { load_cluster_file(json); }), json + ":3: end of map flow not found");
}

TEST(HardwareClusterFileErrors, UnknownKeySuggests) {
  const std::string path = data_path("unknown_key.yaml");
  EXPECT_EQ(error_of([&] { load_cluster_file(path); }),
            path + ":3: unknown key 'nic_bandwith_bytes_per_s' (did you mean 'nic_bandwidth_bytes_per_s'?)");
}

class HardwareClusterFileMessages : public ::testing::Test {
 protected:
  /// The error of loading `text`, with the temp path replaced by "F".
  static std::string error(const std::string& text) {
    const std::string path = write_temp("c.yaml", text);
    std::string message = error_of([&] { load_cluster_file(path); });
    if (message.rfind(path, 0) == 0) message = "F" + message.substr(path.size());
    return message;
  }
};

TEST_F(HardwareClusterFileMessages, Structure) {
  EXPECT_EQ(error(""), "F: cluster file is empty; expected a mapping of cluster fields");
  EXPECT_EQ(error("- 1\n- 2\n"), "F:1: expected a mapping of cluster fields, got a sequence");
  EXPECT_EQ(error("dgx-a100\n"), "F:1: expected a mapping of cluster fields, got 'dgx-a100'");
  EXPECT_EQ(error("num_nodes: 2\n"),
            "F: cluster file needs 'gpu' (a GPU name or mapping) or 'base' (one of: jean-zay-a100, dgx-a100, "
            "dgx-h100, dgx-h200, dgx-b200, gb200-nvl72, dgx-b300, gb300-nvl72, aws-p3dn, aws-p4d)");
}

TEST_F(HardwareClusterFileMessages, UnknownNames) {
  EXPECT_EQ(error("base: dgx-a10\n"), "F:1: unknown cluster 'dgx-a10' (did you mean 'dgx-a100'?)");
  EXPECT_EQ(error("base: dgx-a100\ngpu: h100\n"), "F:2: unknown GPU 'h100' (did you mean one of 'h100-sxm5-80gb', 'h100-pcie-80gb', 'h100-sxm5-96gb-hbm2e', 'h100-nvl-94gb'?)");
  EXPECT_EQ(error("base: dgx-a100\ngpu:\n  base: mi300\n"), "F:3: unknown GPU 'mi300' (did you mean 'mi300x'?)");
  EXPECT_EQ(error("base: dgx-a100\ngpu:\n  sm_cout: 8\n"),
            "F:3: unknown key 'sm_cout' in 'gpu' (did you mean 'sm_count'?)");
  EXPECT_EQ(error("base: dgx-a100\nefficiency:\n  inter: 0.5\n"),
            "F:3: unknown key 'inter' in 'efficiency' (did you mean 'inter_node'?)");  // the start of a name
  EXPECT_EQ(error("base: dgx-a100\nefficiency:\n  bogus: 0.5\n"), "F:3: unknown key 'bogus' in 'efficiency'");
  EXPECT_EQ(error("base: dgx-a100\nefficiency:\n  internode: 0.5\n"),
            "F:3: unknown key 'internode' in 'efficiency' (did you mean 'inter_node'?)");
}

TEST_F(HardwareClusterFileMessages, WrongTypes) {
  EXPECT_EQ(error("base: dgx-a100\nnum_nodes: many\n"), "F:2: field 'num_nodes' must be a number, got 'many'");
  EXPECT_EQ(error("base: dgx-a100\nnum_nodes: 2.5\n"), "F:2: field 'num_nodes' must be a whole number, got '2.5'");
  EXPECT_EQ(error("base: dgx-a100\nnum_nodes: [1, 2]\n"), "F:2: field 'num_nodes' must be a number, got a sequence");
  EXPECT_EQ(error("base: dgx-a100\nnum_nodes:\n"), "F:2: field 'num_nodes' must be a number, got nothing");
  EXPECT_EQ(error("base: dgx-a100\nname: {a: 1}\n"), "F:2: field 'name' must be a string, got a mapping");
  EXPECT_EQ(error("base: [dgx-a100]\n"), "F:1: field 'base' must be a string, got a sequence");
  EXPECT_EQ(error("base: dgx-a100\nefficiency: 0.8\n"), "F:2: field 'efficiency' must be a mapping, got '0.8'");
  EXPECT_EQ(error("base: dgx-a100\ngpu: [a, b]\n"), "F:2: field 'gpu' must be a GPU name or a mapping, got a sequence");
  EXPECT_EQ(error("base: dgx-a100\ngpu:\n  peak_bf16_tflops: fast\n"),
            "F:3: field 'gpu.peak_bf16_tflops' must be a number, got 'fast'");
}

TEST_F(HardwareClusterFileMessages, RulesAtTheirLine) {
  EXPECT_EQ(error("base: dgx-a100\n\nnic_bandwidth_bytes_per_s: 0\n"),
            "F:3: field 'nic_bandwidth_bytes_per_s' must be positive and finite, got 0");
  EXPECT_EQ(error("base: dgx-a100\nnic_bandwidth_gbit_per_s: -100\n"),
            "F:2: field 'nic_bandwidth_gbit_per_s' must be positive and finite, got -100");
  EXPECT_EQ(error("base: dgx-a100\nefficiency:\n  intra_node: 1.2\n"),
            "F:3: field 'efficiency.intra_node' must be in (0, 1], got 1.2");
  EXPECT_EQ(error("base: dgx-a100\ninter_node_latency_s: .inf\n"),
            "F:2: field 'inter_node_latency_s' must be positive and finite, got .inf");
  EXPECT_EQ(error("base: dgx-a100\nname: ''\n"), "F:2: field 'name' must be non-empty, got ''");
  EXPECT_EQ(error("base: dgx-a100\ngpu:\n  memory_gib: 80\n  memory_bytes: 1\n"),
            "F:4: keys 'gpu.memory_gib' and 'gpu.memory_bytes' both set field 'gpu.memory_bytes'; give one");
}

TEST_F(HardwareClusterFileMessages, CrossFieldRulesNameTheFile) {
  const std::string path = write_temp("c.yaml", "");
  EXPECT_EQ(error("base: dgx-a100\ngpu:\n  usable_memory_gib: 90\n"),
            "cluster file " + path +
                ": field 'gpu.usable_memory_bytes' must not exceed 'gpu.memory_bytes' (85899345920), got 96636764160");
  EXPECT_EQ(error("name: x\nnic_bandwidth_gbit_per_s: 100\ngpu:\n  name: g\n"),
            "cluster file " + path + ": field 'gpu.peak_fp32_flops' must be positive and finite, got 0");
}

}  // namespace
}  // namespace trainplan

namespace trainplan {
namespace {

// Issue 16, finding 4: `nic_bandwidth_gbps: 200` got "did you mean 'nic_bandwidth_gb_per_s'?", an 8×
// error for whoever follows it.

TEST(HardwareClusterUnits, GbpsIsGigabitsAndOtherUnitsAreListedNotGuessed) {
  const std::string head = "name: mine\ngpu: h100-sxm5-80gb\ngpus_per_node: 8\nnics_per_node: 8\n";
  const cluster_spec c = load_cluster_file(write_temp("gbps.yaml", head + "nic_bandwidth_gbps: 200\n"));
  EXPECT_DOUBLE_EQ(c.nic_bandwidth_bytes_per_s, 25e9);  // 200 Gb/s
  const std::string mbps = write_temp("mbps.yaml", head + "nic_bandwidth_mbps: 200000\n");
  try {
    load_cluster_file(mbps);
    FAIL() << "accepted an unknown unit";
  } catch (const input_error& e) {
    const std::string m = e.what();
    EXPECT_THAT(m, ::testing::HasSubstr("unknown key 'nic_bandwidth_mbps' (in megabits per second)"));
    EXPECT_THAT(m, ::testing::HasSubstr("nic_bandwidth_gb_per_s (gigabytes (10^9 bytes) per second)"));
    EXPECT_THAT(m, ::testing::Not(::testing::HasSubstr("did you mean")));
  }
  // A misspelt name in the same unit still gets its suggestion.
  const std::string typo = write_temp("typo.yaml", head + "nic_bandwith_gb_per_s: 50\n");
  try {
    load_cluster_file(typo);
    FAIL() << "accepted a misspelt key";
  } catch (const input_error& e) {
    EXPECT_THAT(std::string(e.what()), ::testing::HasSubstr("(did you mean 'nic_bandwidth_gb_per_s'?)"));
  }
}

}  // namespace
}  // namespace trainplan

// ---- gpu.compute in cluster files (issue 16, finding 8: `unknown key 'compute' in 'gpu'`) ------------------

namespace {

std::string cluster_error(const std::string& text) {
  try {
    trainplan::parse_cluster_text(text, "c.yaml");
  } catch (const trainplan::input_error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST(ClusterFileCompute, ConstantsReplaceTheCatalogDefaultsOneByOne) {
  const trainplan::cluster_spec c = trainplan::parse_cluster_text(
      "base: dgx-h100\ngpu:\n  compute:\n    flash_attention_fraction: 0.6\n    kernel_overhead_us: 5\n"
      "    tiles:\n      - {m: 256, n: 128, peak_fraction: 0.75}\n      - {m: 128, n: 128, peak_fraction: 0.7}\n",
      "c.yaml");
  ASSERT_EQ(c.gpu.compute.tiles.size(), 2u);
  EXPECT_EQ(c.gpu.compute.tiles[0].m, 256);
  EXPECT_DOUBLE_EQ(c.gpu.compute.tiles[1].peak_fraction, 0.7);
  const trainplan::compute_efficiency e = trainplan::effective_compute_efficiency(c.gpu);
  const trainplan::compute_efficiency d = trainplan::effective_compute_efficiency(trainplan::find_gpu(c.gpu.name));
  EXPECT_DOUBLE_EQ(e.flash_attention_fraction, 0.6);
  EXPECT_DOUBLE_EQ(e.kernel_overhead_s, 5e-6);
  EXPECT_DOUBLE_EQ(e.memory_bandwidth_fraction, d.memory_bandwidth_fraction);  // not given: the default
  EXPECT_DOUBLE_EQ(e.tiles_per_sm, d.tiles_per_sm);
}

TEST(ClusterFileCompute, BadKeysAndValuesNameTheLineAndField) {
  EXPECT_EQ(cluster_error("base: dgx-h100\ngpu:\n  compute:\n    flash_attention_fraction: 1.5\n"),
            "c.yaml:4: field 'gpu.compute.flash_attention_fraction' must be in (0, 1], got 1.5");
  EXPECT_EQ(cluster_error("base: dgx-h100\ngpu:\n  compute:\n    tiles_per_smm: 1\n"),
            "c.yaml:4: unknown key 'tiles_per_smm' in 'gpu.compute' (did you mean 'tiles_per_sm'?)");
  EXPECT_EQ(cluster_error("base: dgx-h100\ngpu:\n  compute:\n    tiles: [{m: 256, peak_fraction: 0.7}]\n"),
            "c.yaml:4: a tile needs m, n and peak_fraction");
  EXPECT_EQ(cluster_error("base: dgx-h100\ngpu:\n  compute: 0.8\n"),
            "c.yaml:3: field 'gpu.compute' must be a mapping, got '0.8'");
}
