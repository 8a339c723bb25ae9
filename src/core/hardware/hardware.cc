// GPU and cluster catalogs (docs/formulas.md §6.1, §6.2). Cluster files: src/core/hardware/cluster_io.cc.
#include "trainplan/core/hardware/hardware.h"

#include <fmt/format.h>

#include <array>
#include <string>
#include <vector>

#include "hardware/hardware_units.h"
#include "trainplan/core/base/error.h"

namespace trainplan {

namespace {

using detail::kGiB;
using detail::kGiga;
using detail::kMiB;
using detail::kTera;

/// Names of the dtypes, indexed by the enum value.
constexpr std::array<std::string_view, 5> kDtypeNames = {"fp32", "tf32", "bf16", "fp16", "fp8"};
/// Bytes per element, indexed by the enum value (tf32 is stored as fp32).
constexpr std::array<int, 5> kDtypeBytes = {4, 4, 2, 2, 1};

/// CUDA context + NCCL/cuBLAS workspaces measured on A100 (BLOOM notes, nvidia-smi with no tensors):
/// 1,573 MiB. Other NVIDIA GPUs scale it by SM count, rounded to whole MiB (§6.1).
constexpr std::int64_t kA100ContextBytes = 1573 * kMiB;
constexpr std::int64_t kVoltaContextBytes = 1165 * kMiB;      ///< 1,573 x 80/108 = 1,165.2 MiB
constexpr std::int64_t kHopperContextBytes = 1923 * kMiB;     ///< 1,573 x 132/108 = 1,922.6 MiB
constexpr std::int64_t kBlackwellContextBytes = 2156 * kMiB;  ///< 1,573 x 148/108 = 2,155.6 MiB
constexpr std::int64_t kBlackwellUltraContextBytes = 2330 * kMiB;  ///< 1,573 x 160/108 = 2,330.4 MiB
/// Blackwell Ultra's 288 GB (8 HBM3e stacks, 12-high, 36 GiB each) as a framework sees it: the share of
/// the marketed capacity that nvidia-smi shows on the B200 (183,359 MiB of "180 GB" = 184,320 MiB) less
/// H100's 551 MiB driver reserve. An estimate: no B300 was measured.
constexpr std::int64_t kBlackwellUltraUsableBytes = (293375 - 551) * kMiB;  ///< 288 x 1,024 x 183,359/184,320

// The catalog tables name only the datasheet fields; later fields of the structs (e.g. gpu_spec::compute)
// keep their defaults on purpose.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

std::vector<gpu_spec> make_gpu_catalog() {
  return {
      gpu_spec{
          .name = "a100-sxm4-40gb",
          .vendor = "NVIDIA",
          .peak_fp32_flops = 19.5 * kTera,
          .peak_tf32_flops = 156 * kTera,
          .peak_bf16_flops = 312 * kTera,
          .peak_fp8_flops = 0,
          .memory_bytes = 40 * kGiB,
          .usable_memory_bytes = 40536 * kMiB,  // torch total_memory=40536MB ("39.59 GiB total capacity")
          .memory_bandwidth_bytes_per_s = 1.555e12,
          .sm_count = 108,
          .intra_node_bandwidth_bytes_per_s = 300 * kGiga,  // NVLink3: 600 GB/s bidirectional
          .host_link_bytes_per_s = 32 * kGiga,  // PCIe Gen4 x16: 64 GB/s both ways
          .cuda_context_bytes = kA100ContextBytes,
          .source = "NVIDIA A100 Tensor Core GPU datasheet (2021), A100 40GB SXM column",
      },
      gpu_spec{
          .name = "a100-sxm4-80gb",
          .vendor = "NVIDIA",
          .peak_fp32_flops = 19.5 * kTera,
          .peak_tf32_flops = 156 * kTera,
          .peak_bf16_flops = 312 * kTera,
          .peak_fp8_flops = 0,
          .memory_bytes = 80 * kGiB,
          .usable_memory_bytes = 85'198'045'184,  // torch total_memory: 81,251 MiB of nvidia-smi's 81,920
          .memory_bandwidth_bytes_per_s = 2.039e12,
          .sm_count = 108,
          .intra_node_bandwidth_bytes_per_s = 300 * kGiga,
          .host_link_bytes_per_s = 32 * kGiga,  // PCIe Gen4 x16: 64 GB/s both ways
          .cuda_context_bytes = kA100ContextBytes,
          .source = "NVIDIA A100 Tensor Core GPU datasheet (2021), A100 80GB SXM column",
      },
      gpu_spec{
          .name = "h100-sxm5-80gb",
          .vendor = "NVIDIA",
          .peak_fp32_flops = 67 * kTera,
          .peak_tf32_flops = 494.7 * kTera,   // datasheet 989 TF is with 2:4 sparsity
          .peak_bf16_flops = 989.4 * kTera,   // 132 SMs x 4096 FLOP/clk x 1.83 GHz
          .peak_fp8_flops = 1978.9 * kTera,
          .memory_bytes = 80 * kGiB,          // 5 active HBM3 stacks x 16 GiB
          .usable_memory_bytes = 81008 * kMiB,  // torch "total capacity of 79.11 GiB"
          .memory_bandwidth_bytes_per_s = 3.35e12,
          .sm_count = 132,
          .intra_node_bandwidth_bytes_per_s = 450 * kGiga,  // NVLink4: 900 GB/s bidirectional
          .host_link_bytes_per_s = 64 * kGiga,  // PCIe Gen5 x16: 128 GB/s both ways
          .cuda_context_bytes = kHopperContextBytes,
          .source = "NVIDIA H100 Tensor Core GPU datasheet, H100 SXM column (sparse figures halved)",
      },
      gpu_spec{
          // The PCIe card: 114 SMs at a lower clock, HBM2e, NVLink bridges between pairs.
          .name = "h100-pcie-80gb",
          .vendor = "NVIDIA",
          .peak_fp32_flops = 51 * kTera,
          .peak_tf32_flops = 378 * kTera,     // 756 TF with 2:4 sparsity
          .peak_bf16_flops = 756.5 * kTera,   // 1,513 TF sparse
          .peak_fp8_flops = 1513 * kTera,     // 3,026 TF sparse
          .memory_bytes = 80 * kGiB,          // HBM2e, 5 stacks x 16 GiB
          .usable_memory_bytes = 81008 * kMiB,  // assumed: the SXM card's (same memory and driver reserve)
          .memory_bandwidth_bytes_per_s = 2.0e12,
          .sm_count = 114,
          .intra_node_bandwidth_bytes_per_s = 300 * kGiga,  // NVLink bridge: 600 GB/s bidirectional
          .host_link_bytes_per_s = 64 * kGiga,  // PCIe Gen5 x16: 128 GB/s both ways
          .cuda_context_bytes = kHopperContextBytes,
          .source = "NVIDIA H100 Tensor Core GPU datasheet and architecture whitepaper, H100 PCIe column (sparse "
                    "figures halved)",
      },
      gpu_spec{
          // Meta's Grand Teton H100 (torchtitan's 2024-12 benchmarks): the SXM die with six HBM2e stacks,
          // 96 GB at 2.4 TB/s, run at a 500 W power limit, whose peak the source puts "between SXM and NVL"
          // (footnote 2: "we don't know its exact value"). The peaks are the midpoint of the two datasheet
          // columns (SXM 700 W, NVL 350-400 W: same 132 SMs, the clock set by the power), the least a
          // bracket says; the 700 W card's sustained-clock factor applies on top (§5.6).
          .name = "h100-sxm5-96gb-hbm2e",
          .vendor = "NVIDIA",
          .peak_fp32_flops = (67 + 60) / 2.0 * kTera,
          .peak_tf32_flops = (494.7 + 417.5) / 2 * kTera,
          .peak_bf16_flops = (989.4 + 835.5) / 2 * kTera,
          .peak_fp8_flops = (1978.9 + 1670.5) / 2 * kTera,
          .memory_bytes = 96 * kGiB,  // 6 stacks x 16 GiB
          .usable_memory_bytes = 96 * kGiB - 912 * kMiB,  // assumed: the 80 GB card's 912 MiB reserve
          .memory_bandwidth_bytes_per_s = 2.4e12,
          .sm_count = 132,
          .intra_node_bandwidth_bytes_per_s = 450 * kGiga,  // "8 NVIDIA H100 GPUs fully connected with NVLink"
          .host_link_bytes_per_s = 64 * kGiga,  // PCIe Gen5 x16: 128 GB/s both ways
          .cuda_context_bytes = kHopperContextBytes,
          .source = "pytorch/torchtitan benchmarks/llama3_h100_202412_torchtitan.md, Hardware: Grand Teton H100 with "
                    "96GB HBM2e at 2.4 TB/s, 500 W, peak 'between SXM and NVL' (compute: the midpoint of the H100 "
                    "datasheet's SXM and NVL columns)",
      },
      gpu_spec{
          // H100 NVL: 94 GB of HBM3 enabled of six stacks, 3.9 TB/s, clocked between PCIe and SXM.
          .name = "h100-nvl-94gb",
          .vendor = "NVIDIA",
          .peak_fp32_flops = 60 * kTera,
          .peak_tf32_flops = 417.5 * kTera,   // 835 TF sparse
          .peak_bf16_flops = 835.5 * kTera,   // 1,671 TF sparse
          .peak_fp8_flops = 1670.5 * kTera,   // 3,341 TF sparse
          .memory_bytes = 94 * kGiB,  // nvidia-smi shows 95,830 MiB, as 81,559 MiB of the SXM card's 80 GiB
          .usable_memory_bytes = 94 * kGiB - 912 * kMiB,  // assumed: the SXM card's 912 MiB below its 80 GiB
          .memory_bandwidth_bytes_per_s = 3.9e12,
          .sm_count = 132,
          .intra_node_bandwidth_bytes_per_s = 300 * kGiga,  // NVLink bridge: 600 GB/s bidirectional
          .host_link_bytes_per_s = 64 * kGiga,  // PCIe Gen5 x16: 128 GB/s both ways
          .cuda_context_bytes = kHopperContextBytes,
          .source = "NVIDIA H100 Tensor Core GPU datasheet, H100 NVL column (sparse figures halved)",
      },
      gpu_spec{
          // The China-market Hopper: 78 SMs whose tensor cores are capped at 148 dense BF16 TFLOP/s, with
          // 96 GB of HBM3 at 4.0 TB/s and NVLink 4 (900 GB/s both ways), 400 W. NVIDIA publishes no
          // datasheet for it: the figures are the ones every secondary source gives, said below.
          .name = "h20-96gb",
          .vendor = "NVIDIA",
          .peak_fp32_flops = 44 * kTera,
          .peak_tf32_flops = 74 * kTera,
          .peak_bf16_flops = 148 * kTera,
          .peak_fp8_flops = 296 * kTera,
          .memory_bytes = 96 * kGiB,
          .usable_memory_bytes = 96 * kGiB - 912 * kMiB,  // assumed: the H100 SXM card's 912 MiB reserve
          .memory_bandwidth_bytes_per_s = 4.0e12,
          .sm_count = 78,
          .intra_node_bandwidth_bytes_per_s = 450 * kGiga,
          .host_link_bytes_per_s = 64 * kGiga,  // PCIe Gen5 x16: 128 GB/s both ways
          .cuda_context_bytes = kHopperContextBytes,
          .source = "NVIDIA H20 (no public datasheet): 148 dense FP16/BF16 and 296 FP8/INT8 TFLOP/s, 74 TF32, 44 FP32, "
                    "96 GB HBM3 at 4.0 TB/s, NVLink 900 GB/s, 400 W as secondary sources give them "
                    "(willitrunai.com/gpus/h20-96gb); 78 SMs from its Geekbench 6 listing",
      },
      gpu_spec{
          // The export H100: the SXM card's compute and memory, NVLink cut to 400 GB/s.
          .name = "h800-sxm5-80gb",
          .vendor = "NVIDIA",
          .peak_fp32_flops = 67 * kTera,
          .peak_tf32_flops = 494.7 * kTera,
          .peak_bf16_flops = 989.4 * kTera,
          .peak_fp8_flops = 1978.9 * kTera,
          .memory_bytes = 80 * kGiB,
          .usable_memory_bytes = 81008 * kMiB,
          .memory_bandwidth_bytes_per_s = 3.35e12,
          .sm_count = 132,
          .intra_node_bandwidth_bytes_per_s = 200 * kGiga,  // NVLink: 400 GB/s bidirectional
          .host_link_bytes_per_s = 64 * kGiga,  // PCIe Gen5 x16: 128 GB/s both ways
          .cuda_context_bytes = kHopperContextBytes,
          .source = "NVIDIA H800 SXM5 specifications (H100 SXM compute and memory; NVLink 400 GB/s); DeepSeek-V3 "
                    "report (arXiv 2412.19437) §3.1: 400 GB/s NVLink on its H800 nodes",
      },
      gpu_spec{
          .name = "h200-sxm-141gb",
          .vendor = "NVIDIA",
          .peak_fp32_flops = 67 * kTera,
          .peak_tf32_flops = 494.7 * kTera,
          .peak_bf16_flops = 989.4 * kTera,
          .peak_fp8_flops = 1978.9 * kTera,
          .memory_bytes = 141 * kGiB,  // 6 HBM3e stacks x 24 GiB = 144 GiB, 141 GiB enabled
          .usable_memory_bytes = (143771 - 551) * kMiB,  // nvidia-smi 143,771 MiB less H100's reserve
          .memory_bandwidth_bytes_per_s = 4.8e12,
          .sm_count = 132,
          .intra_node_bandwidth_bytes_per_s = 450 * kGiga,
          .host_link_bytes_per_s = 64 * kGiga,  // PCIe Gen5 x16: 128 GB/s both ways
          .cuda_context_bytes = kHopperContextBytes,
          .source = "NVIDIA H200 Tensor Core GPU datasheet, H200 SXM column (sparse figures halved)",
      },
      gpu_spec{
          .name = "b200-sxm-180gb",
          .vendor = "NVIDIA",
          .peak_fp32_flops = 80 * kTera,
          .peak_tf32_flops = 1100 * kTera,  // datasheet 2.2 PF is with 2:4 sparsity
          .peak_bf16_flops = 2250 * kTera,  // 4.5 PF sparse
          .peak_fp8_flops = 4500 * kTera,   // 9 PF sparse
          .mx_block_scaling = true,
          .memory_bytes = 180 * kGiB,       // 8 HBM3e stacks x 24 GiB = 192 GiB, 180 GiB on DGX B200
          .usable_memory_bytes = (183359 - 551) * kMiB,  // nvidia-smi 183,359 MiB less H100's reserve
          .memory_bandwidth_bytes_per_s = 8e12,
          .sm_count = 148,
          .intra_node_bandwidth_bytes_per_s = 900 * kGiga,  // NVLink5: 1.8 TB/s bidirectional
          .host_link_bytes_per_s = 64 * kGiga,  // PCIe Gen5 x16: 128 GB/s both ways
          .cuda_context_bytes = kBlackwellContextBytes,
          .source = "NVIDIA DGX B200 datasheet and Blackwell architecture technical brief (HGX B200, "
                    "sparse figures halved)",
      },
      {
          // The Blackwell GPU of a GB200 superchip, as GB200 NVL72 racks carry it: the rack's datasheet
          // totals over its 72 GPUs, sparse figures halved.
          .name = "gb200",
          .vendor = "NVIDIA",
          .peak_fp32_flops = 80 * kTera,     // 5,760 TF per rack
          .peak_tf32_flops = 1250 * kTera,   // 180 PF sparse per rack
          .peak_bf16_flops = 2500 * kTera,   // 360 PF sparse per rack
          .peak_fp8_flops = 5000 * kTera,    // 720 PF sparse per rack
          .mx_block_scaling = true,
          .memory_bytes = std::int64_t{186} * 1000000000,  // up to 13.4 TB HBM3e per rack
          .usable_memory_bytes = std::int64_t{186} * 1000000000 - 551 * kMiB,  // assumed: H100's driver reserve (not measured)
          .memory_bandwidth_bytes_per_s = 8e12,  // 576 TB/s per rack
          .sm_count = 148,
          .intra_node_bandwidth_bytes_per_s = 900 * kGiga,  // NVLink5: 1.8 TB/s bidirectional per GPU
          .host_link_bytes_per_s = 450 * kGiga,  // NVLink-C2C to Grace: 900 GB/s both ways
          .cuda_context_bytes = kBlackwellContextBytes,
          .source = "NVIDIA GB200 NVL72 datasheet (rack totals / 72 GPUs, sparse figures halved); usable memory "
                    "assumes H100's 551 MiB reserve",
      },
      gpu_spec{
          // Blackwell Ultra on an HGX B300 board: the board's totals over its 8 GPUs, sparse figures
          // halved; SMs, memory and NVFP4 from NVIDIA's architecture blog.
          .name = "b300-sxm-288gb",
          .vendor = "NVIDIA",
          .peak_fp32_flops = 75 * kTera,     // 600 TF per board
          .peak_tf32_flops = 1125 * kTera,   // 18 PF sparse per board
          .peak_bf16_flops = 2250 * kTera,   // 36 PF sparse per board
          .peak_fp8_flops = 4500 * kTera,    // 72 PF sparse per board
          .mx_block_scaling = true,
          .memory_bytes = 288 * kGiB,        // 8 HBM3e stacks x 36 GiB
          .usable_memory_bytes = kBlackwellUltraUsableBytes,
          .memory_bandwidth_bytes_per_s = 8e12,
          .sm_count = 160,
          .intra_node_bandwidth_bytes_per_s = 900 * kGiga,  // NVLink5: 1.8 TB/s bidirectional
          .host_link_bytes_per_s = 128 * kGiga,  // PCIe Gen6 x16: 256 GB/s both ways
          .cuda_context_bytes = kBlackwellUltraContextBytes,
          .source = "NVIDIA HGX B300 specifications (board totals / 8 GPUs, sparse figures halved) and NVIDIA "
                    "Technical Blog 'Inside NVIDIA Blackwell Ultra' (160 SMs, 288 GB HBM3e at 8 TB/s, PCIe Gen6); "
                    "usable memory estimated from B200's",
      },
      {
          // The Blackwell Ultra GPU of a GB300 superchip, as GB300 NVL72 racks carry it: per GPU the rack
          // keeps GB200 NVL72's dense FP8/BF16 (360 PF FP8 dense per rack) with 288 GB of HBM3e.
          .name = "gb300",
          .vendor = "NVIDIA",
          .peak_fp32_flops = 80 * kTera,     // as GB200
          .peak_tf32_flops = 1250 * kTera,   // 180 PF sparse per rack
          .peak_bf16_flops = 2500 * kTera,   // 360 PF sparse per rack
          .peak_fp8_flops = 5000 * kTera,    // 720 PF sparse per rack
          .mx_block_scaling = true,
          .memory_bytes = 288 * kGiB,
          .usable_memory_bytes = kBlackwellUltraUsableBytes,
          .memory_bandwidth_bytes_per_s = 8e12,  // 576 TB/s per rack
          .sm_count = 160,
          .intra_node_bandwidth_bytes_per_s = 900 * kGiga,  // NVLink5: 1.8 TB/s bidirectional per GPU
          .host_link_bytes_per_s = 450 * kGiga,  // NVLink-C2C to Grace: 900 GB/s both ways
          .cuda_context_bytes = kBlackwellUltraContextBytes,
          .source = "NVIDIA GB300 NVL72 specifications (rack totals / 72 GPUs, sparse figures halved) and NVIDIA "
                    "Technical Blog 'Inside NVIDIA Blackwell Ultra' (160 SMs, 288 GB HBM3e at 8 TB/s); usable "
                    "memory estimated from B200's",
      },
      gpu_spec{
          .name = "mi300x",
          .vendor = "AMD",
          .peak_fp32_flops = 163.4 * kTera,
          .peak_tf32_flops = 653.7 * kTera,
          .peak_bf16_flops = 1307.4 * kTera,
          .peak_fp8_flops = 2614.9 * kTera,
          .memory_bytes = 192 * kGiB,  // 8 HBM3 stacks x 24 GiB
          .usable_memory_bytes = 205'822'885'888,  // rocm-smi "VRAM Total Memory (B)"
          .memory_bandwidth_bytes_per_s = 5.3e12,
          .sm_count = 304,
          .intra_node_bandwidth_bytes_per_s = 448 * kGiga,  // 7 xGMI links x 64 GB/s one direction
          .host_link_bytes_per_s = 64 * kGiga,  // PCIe Gen5 x16: 128 GB/s both ways
          .cuda_context_bytes = kA100ContextBytes,
          .source = "AMD Instinct MI300X accelerator data sheet (dense figures)",
      },
      gpu_spec{
          // MI300X's CDNA3 die with 256 GiB of HBM3E at 6 TB/s.
          .name = "mi325x",
          .vendor = "AMD",
          .peak_fp32_flops = 163.4 * kTera,
          .peak_tf32_flops = 653.7 * kTera,
          .peak_bf16_flops = 1307.4 * kTera,
          .peak_fp8_flops = 2614.9 * kTera,
          .memory_bytes = 256 * kGiB,  // ROCm GPU specifications: 256 GiB VRAM
          .usable_memory_bytes = 256 * kGiB - 320 * kMiB,  // assumed: MI300X's 320 MiB reserve
          .memory_bandwidth_bytes_per_s = 6.0e12,
          .sm_count = 304,
          .intra_node_bandwidth_bytes_per_s = 448 * kGiga,  // 7 xGMI links x 64 GB/s one direction
          .host_link_bytes_per_s = 64 * kGiga,  // PCIe Gen5 x16: 128 GB/s both ways
          .cuda_context_bytes = kA100ContextBytes,
          .source = "AMD Instinct MI325X data sheet (dense figures); ROCm GPU specifications (256 GiB, 304 CUs)",
      },
      gpu_spec{
          // CDNA4: 256 CUs at 2.4 GHz, 4,096 dense FP16 FLOP per CU per clock; 288 GiB of HBM3E at 8 TB/s.
          .name = "mi355x",
          .vendor = "AMD",
          .peak_fp32_flops = 157.3 * kTera,
          .peak_tf32_flops = 1258.3 * kTera,  // no TF32 matrix format on CDNA4: the FP16 rate halved (not used)
          .peak_bf16_flops = 2516.6 * kTera,
          .peak_fp8_flops = 5033.2 * kTera,
          .memory_bytes = 288 * kGiB,  // ROCm GPU specifications: 288 GiB VRAM
          .usable_memory_bytes = 288 * kGiB - 320 * kMiB,  // assumed: MI300X's 320 MiB reserve
          .memory_bandwidth_bytes_per_s = 8.0e12,
          .sm_count = 256,
          .intra_node_bandwidth_bytes_per_s = 537.6 * kGiga,  // 7 xGMI links x 76.8 GB/s one direction
          .host_link_bytes_per_s = 64 * kGiga,  // PCIe Gen5 x16: 128 GB/s both ways
          .cuda_context_bytes = kA100ContextBytes,
          .source = "AMD Instinct MI355X data sheet (dense figures); ROCm GPU specifications (288 GiB, 256 CUs)",
      },
      gpu_spec{
          .name = "v100-sxm2-32gb",
          .vendor = "NVIDIA",
          .peak_fp32_flops = 15.7 * kTera,
          .peak_tf32_flops = 15.7 * kTera,  // no TF32: fp32 on CUDA cores
          .peak_bf16_flops = 125 * kTera,   // the fp16 tensor-core rate; no bf16 (bf16 = false)
          .peak_fp8_flops = 0,
          .bf16 = false,
          .memory_bytes = 32 * kGiB,
          .usable_memory_bytes = 34'089'730'048,  // torch total_memory ("31.75 GiB total capacity")
          .memory_bandwidth_bytes_per_s = 900e9,
          .sm_count = 80,
          .intra_node_bandwidth_bytes_per_s = 150 * kGiga,  // NVLink2: 6 links x 25 GB/s per direction
          .host_link_bytes_per_s = 16 * kGiga,  // PCIe Gen3 x16: 32 GB/s both ways
          .cuda_context_bytes = kVoltaContextBytes,
          .source = "NVIDIA Tesla V100 GPU datasheet (2020), V100 SXM2 32GB column",
      },
  };
}

std::vector<cluster_spec> make_cluster_catalog() {
  const std::string dgx_source = "NVIDIA DGX datasheet (";
  return {
      cluster_spec{
          .name = "jean-zay-a100",
          .gpu = find_gpu("a100-sxm4-80gb"),
          .gpus_per_node = 8,
          .num_nodes = 48,
          .nics_per_node = 4,
          .nic_bandwidth_bytes_per_s = 100e9 / 8,
          .intra_node_latency_s = 5e-6,
          .inter_node_latency_s = 15e-6,
          .efficiency = {.intra_node = 0.80, .inter_node = 0.70},
          .interconnect = "8 x A100 on NVLink3/NVSwitch; 4 x 100 Gb/s Omni-Path per node",
          .source = "BLOOM model card 'Hardware' (bigscience/bloom): 48 nodes x 8 A100 80GB, "
                    "4 Omni-Path links; IDRIS Jean Zay documentation",
      },
      cluster_spec{
          .name = "dgx-a100",
          .gpu = find_gpu("a100-sxm4-80gb"),
          .gpus_per_node = 8,
          .num_nodes = 1,
          .nics_per_node = 8,
          .nic_bandwidth_bytes_per_s = 200e9 / 8,
          .intra_node_latency_s = 5e-6,
          .inter_node_latency_s = 10e-6,
          .efficiency = {.intra_node = 0.80, .inter_node = 0.80},
          .interconnect = "8 x A100 on NVLink3/NVSwitch; 8 x 200 Gb/s HDR InfiniBand per node",
          .source = dgx_source + "DGX A100 640GB)",
      },
      cluster_spec{
          .name = "dgx-h100",
          .gpu = find_gpu("h100-sxm5-80gb"),
          .gpus_per_node = 8,
          .num_nodes = 1,
          .nics_per_node = 8,
          .nic_bandwidth_bytes_per_s = 400e9 / 8,
          .intra_node_latency_s = 5e-6,
          .inter_node_latency_s = 10e-6,
          .efficiency = {.intra_node = 0.80, .inter_node = 0.80},
          .interconnect = "8 x H100 on NVLink4/NVSwitch; 8 x 400 Gb/s NDR InfiniBand per node",
          .source = dgx_source + "DGX H100)",
      },
      cluster_spec{
          .name = "dgx-h200",
          .gpu = find_gpu("h200-sxm-141gb"),
          .gpus_per_node = 8,
          .num_nodes = 1,
          .nics_per_node = 8,
          .nic_bandwidth_bytes_per_s = 400e9 / 8,
          .intra_node_latency_s = 5e-6,
          .inter_node_latency_s = 10e-6,
          .efficiency = {.intra_node = 0.80, .inter_node = 0.80},
          .interconnect = "8 x H200 on NVLink4/NVSwitch; 8 x 400 Gb/s NDR InfiniBand per node",
          .source = dgx_source + "DGX H200)",
      },
      cluster_spec{
          .name = "dgx-b200",
          .gpu = find_gpu("b200-sxm-180gb"),
          .gpus_per_node = 8,
          .num_nodes = 1,
          .nics_per_node = 8,
          .nic_bandwidth_bytes_per_s = 400e9 / 8,
          .intra_node_latency_s = 5e-6,
          .inter_node_latency_s = 10e-6,
          .efficiency = {.intra_node = 0.80, .inter_node = 0.80},
          .interconnect = "8 x B200 on NVLink5/NVSwitch; 8 x 400 Gb/s NDR InfiniBand per node",
          .source = dgx_source + "DGX B200)",
      },
      {
          // One NVLink domain of 72 GPUs is the "node" of the communication model: TP, EP and CP groups
          // up to 72 GPUs stay on NVLink (§6.2); each GPU has its own ConnectX-7 NIC for the scale-out fabric.
          .name = "gb200-nvl72",
          .gpu = find_gpu("gb200"),
          .gpus_per_node = 72,
          .num_nodes = 1,
          .nics_per_node = 72,
          .nic_bandwidth_bytes_per_s = 400e9 / 8,
          .intra_node_latency_s = 5e-6,
          .inter_node_latency_s = 10e-6,
          .efficiency = {.intra_node = 0.80, .inter_node = 0.80},
          .interconnect = "72 x GB200 GPUs in one NVLink5 domain (NVLink Switch trays); 72 x 400 Gb/s ConnectX-7 per rack",
          .source = "NVIDIA GB200 NVL72 datasheet and reference architecture",
      },
      cluster_spec{
          .name = "dgx-b300",
          .gpu = find_gpu("b300-sxm-288gb"),
          .gpus_per_node = 8,
          .num_nodes = 1,
          .nics_per_node = 8,
          .nic_bandwidth_bytes_per_s = 800e9 / 8,
          .intra_node_latency_s = 5e-6,
          .inter_node_latency_s = 10e-6,
          .efficiency = {.intra_node = 0.80, .inter_node = 0.80},
          .interconnect = "8 x B300 on NVLink5/NVSwitch; 8 x 800 Gb/s ConnectX-8 per node",
          .source = "NVIDIA DGX B300 specifications as product pages reproduce them (8 single-port ConnectX-8 "
                    "VPI, up to 800 Gb/s each)",
      },
      {
          // As gb200-nvl72: one NVLink domain of 72 GPUs is the communication model's "node"; each GPU
          // has its own ConnectX-8 NIC for the scale-out fabric.
          .name = "gb300-nvl72",
          .gpu = find_gpu("gb300"),
          .gpus_per_node = 72,
          .num_nodes = 1,
          .nics_per_node = 72,
          .nic_bandwidth_bytes_per_s = 800e9 / 8,
          .intra_node_latency_s = 5e-6,
          .inter_node_latency_s = 10e-6,
          .efficiency = {.intra_node = 0.80, .inter_node = 0.80},
          .interconnect = "72 x GB300 GPUs in one NVLink5 domain (NVLink Switch trays); 72 x 800 Gb/s ConnectX-8 per rack",
          .source = "NVIDIA GB300 NVL72 specifications (72 ConnectX-8 SuperNICs, 800 Gb/s each)",
      },
      cluster_spec{
          .name = "aws-p3dn",
          .gpu = find_gpu("v100-sxm2-32gb"),
          .gpus_per_node = 8,
          .num_nodes = 1,
          .nics_per_node = 1,
          .nic_bandwidth_bytes_per_s = 100e9 / 8,
          .intra_node_latency_s = 5e-6,
          .inter_node_latency_s = 15e-6,
          .efficiency = {.intra_node = 0.80, .inter_node = 0.70},
          .interconnect = "8 x V100 32GB on NVLink2 (hybrid cube mesh); 1 x 100 Gb/s EFA per node",
          .source = "AWS EC2 p3dn.24xlarge instance specifications (seeds/002 ran on it)",
      },
      cluster_spec{
          .name = "aws-p4d",
          .gpu = find_gpu("a100-sxm4-40gb"),
          .gpus_per_node = 8,
          .num_nodes = 1,
          .nics_per_node = 4,
          .nic_bandwidth_bytes_per_s = 100e9 / 8,
          .intra_node_latency_s = 5e-6,
          .inter_node_latency_s = 15e-6,
          .efficiency = {.intra_node = 0.80, .inter_node = 0.70},
          .interconnect = "8 x A100 40GB on NVLink3/NVSwitch; 4 x 100 Gb/s EFA per node",
          .source = "AWS EC2 p4d.24xlarge instance specifications (seeds/002's p4dn rows)",
      },
  };
}

#pragma GCC diagnostic pop

}  // namespace

std::string_view to_string(dtype d) { return kDtypeNames.at(static_cast<std::size_t>(d)); }

int bytes_of(dtype d) { return kDtypeBytes.at(static_cast<std::size_t>(d)); }

double gpu_spec::peak_flops(dtype d) const {
  switch (d) {
    case dtype::fp32: return peak_fp32_flops;
    case dtype::tf32: return peak_tf32_flops;
    case dtype::bf16:
    case dtype::fp16: return peak_bf16_flops;
    case dtype::fp8: return peak_fp8_flops;
  }
  return 0;
}

const std::vector<gpu_spec>& gpu_catalog() {
  static const std::vector<gpu_spec> catalog = make_gpu_catalog();
  return catalog;
}

const std::vector<cluster_spec>& cluster_catalog() {
  static const std::vector<cluster_spec> catalog = make_cluster_catalog();
  return catalog;
}

std::vector<std::string> gpu_names() {
  std::vector<std::string> names;
  for (const auto& g : gpu_catalog()) names.push_back(g.name);
  return names;
}

std::vector<std::string> cluster_names() {
  std::vector<std::string> names;
  for (const auto& c : cluster_catalog()) names.push_back(c.name);
  return names;
}

const gpu_spec& find_gpu(std::string_view name) {
  for (const auto& g : gpu_catalog()) {
    if (g.name == name) return g;
  }
  throw input_error(fmt::format("unknown GPU '{}'{}", name, did_you_mean(name, gpu_names())));
}

const cluster_spec& find_cluster(std::string_view name) {
  for (const auto& c : cluster_catalog()) {
    if (c.name == name) return c;
  }
  throw input_error(fmt::format("unknown cluster '{}'{}", name, did_you_mean(name, cluster_names())));
}

}  // namespace trainplan
