// GPUs and clusters (docs/formulas.md §6). Every rate is per second; bandwidths are one direction.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace trainplan {

enum class dtype { fp32, tf32, bf16, fp16, fp8 };
std::string_view to_string(dtype d);
/// Bytes of one element (tf32 is stored as fp32).
int bytes_of(dtype d);

/// One GEMM tile shape the BLAS library may pick, with its sustained fraction of the tensor-core peak
/// (smaller tiles reuse less data per load; docs/formulas.md §5.2).
struct gemm_tile {
  std::int64_t m = 0;
  std::int64_t n = 0;
  double peak_fraction = 0;  ///< of the dense peak, for a problem that fills every tile and wave
};

struct measured_gemm_table;  // trainplan/core/estimate/compute.h

/// How close the GPU gets to its peaks (docs/formulas.md §5.2, §5.3). A zero field means "the catalog
/// default for this GPU" (src/core/estimate/compute_defaults.cc, one table); a calibration file or a cluster file
/// sets any of them.
struct compute_efficiency {
  std::vector<gemm_tile> tiles;          ///< candidate CTA tiles; the best one is used (cuBLAS heuristics)
  double tiles_per_sm = 0;               ///< concurrent CTAs per SM (one wave = SMs × this)
  double align8_factor = 0;              ///< every dim a multiple of 8 but one not of 64
  double align64_factor = 0;             ///< every dim a multiple of 64 but one not of 128
  double unaligned_factor = 0;           ///< a 16-bit dim not a multiple of 8: no vectorised tensor-core loads
  double k_half = 0;                     ///< reduction length at which a GEMM reaches half its rate (prologue)
  double ramp_flops = 0;                 ///< problem size at which a GEMM reaches half its rate (launch/tail)
  double attention_bmm_factor = 0;       ///< batched attention GEMMs (scores, context) relative to dense GEMMs
  double flash_attention_fraction = 0;   ///< fused-attention forward rate / dense peak, long sequences
  /// Fused-attention backward rate / dense peak, its time counted as 2.5 × the forward's FLOPs (Dao 2023);
  /// 0: the forward's.
  double flash_backward_fraction = 0;
  /// Keys per query row at which the forward (backward) kernel reaches half its long-sequence rate:
  /// rate × s/(s + half) (§5.6, measured); 0: no ramp.
  double flash_half_seq = 0;
  double flash_backward_half_seq = 0;
  /// Compute-bound kernels' rate in training (GEMMs, fused attention) over the rate a benchmark measures
  /// in short samples on a warm card: run back to back they hold the card at its power limit, at a
  /// lower clock (§5.6, measured); 0 or 1: none.
  double sustained_clock_factor = 0;
  /// FlashAttention-2 (PyTorch's scaled_dot_product_attention flash backend, the flash_attn package),
  /// the kernel of the frameworks that do not run Transformer Engine's (framework_traits::fa2_attention):
  /// forward and backward fractions and half-sequences as above; 0: the fused ones.
  double fa2_fraction = 0;
  double fa2_half_seq = 0;
  double fa2_backward_fraction = 0;
  double fa2_backward_half_seq = 0;
  /// The attention's rate at a query/key head wider than the curves' 128 (MLA's 192), over the curve's
  /// rate, forward and backward, for the fused kernel and FlashAttention-2 (§5.6, measured at 4,096
  /// tokens): linear in the head dim from 128 up to `wide_head_dim`, held beyond it, 1 at 128 and below;
  /// 0: none.
  double wide_head_dim = 0;
  double wide_head_forward = 1, wide_head_backward = 1;
  double fa2_wide_head_forward = 1, fa2_wide_head_backward = 1;
  double memory_bandwidth_fraction = 0;  ///< elementwise kernels' achieved / datasheet bandwidth
  double kernel_overhead_s = 0;          ///< launch and tail of one kernel
  double unfused_softmax_factor = 0;     ///< softmax slowdown when the fused kernel's shape rule fails
  /// FP8 GEMMs' large-tile fraction over the 16-bit one (§5.6): FP8 tensor cores reach a different share
  /// of their 2× peak; fitted per generation.
  double fp8_tile_factor = 0;
  /// GEMMs measured by trainplan-bench (a calibration profile, §6.4); null: the model alone.
  std::shared_ptr<const measured_gemm_table> measured;
};

/// One GPU model. Peak rates are dense (no structured sparsity).
struct gpu_spec {
  std::string name;
  std::string vendor;
  double peak_fp32_flops = 0;
  double peak_tf32_flops = 0;
  double peak_bf16_flops = 0;     ///< also fp16
  double peak_fp8_flops = 0;      ///< 0: no fp8 tensor cores
  bool mx_block_scaling = false;  ///< tensor cores take MX block-scaled FP8 (Blackwell; --fp8-recipe mxfp8)
  bool bf16 = true;               ///< bf16 tensor cores (Ampere and later; V100 has fp16 only)
  std::int64_t memory_bytes = 0;  ///< HBM capacity as the datasheet states it
  std::int64_t usable_memory_bytes = 0;  ///< what a framework can allocate (total less driver reserve)
  double memory_bandwidth_bytes_per_s = 0;
  std::int64_t sm_count = 0;      ///< SMs (NVIDIA) or CUs (AMD)
  double intra_node_bandwidth_bytes_per_s = 0;  ///< NVLink/xGMI per GPU, one direction
  /// The GPU's link to host memory, one direction (PCIe x16, or NVLink-C2C on Grace parts); 0: unknown.
  double host_link_bytes_per_s = 0;
  std::int64_t cuda_context_bytes = 0;  ///< CUDA/HIP context + NCCL/library workspaces, as nvidia-smi shows
  std::string source;             ///< datasheet
  compute_efficiency compute;     ///< zero fields: the catalog default (docs/formulas.md §5.6)

  /// Peak for the datatype of the GEMMs (bf16/fp16 share a rate).
  double peak_flops(dtype d) const;
};

/// Achieved-to-peak factors of the links (a calibration file replaces them; docs/formulas.md §6).
struct link_efficiency {
  double intra_node = 0.80;       ///< NCCL bus bandwidth / NVLink peak
  double inter_node = 0.80;       ///< NCCL bus bandwidth / NIC peak
};

/// A homogeneous cluster of nodes.
struct cluster_spec {
  std::string name;
  gpu_spec gpu;
  std::int64_t gpus_per_node = 8;
  std::int64_t num_nodes = 1;
  std::int64_t nics_per_node = 8;
  double nic_bandwidth_bytes_per_s = 0;  ///< one NIC, one direction
  double intra_node_latency_s = 5e-6;    ///< per algorithm step (NCCL over NVLink)
  double inter_node_latency_s = 10e-6;   ///< per algorithm step across the network
  link_efficiency efficiency;
  std::string interconnect;       ///< words, e.g. "4 × 100 Gb/s Omni-Path"
  std::string source;

  std::int64_t num_gpus() const { return gpus_per_node * num_nodes; }
  /// Network bandwidth of one node, one direction (all NICs).
  double node_network_bandwidth_bytes_per_s() const { return nic_bandwidth_bytes_per_s * nics_per_node; }
};

const std::vector<gpu_spec>& gpu_catalog();
const std::vector<cluster_spec>& cluster_catalog();
std::vector<std::string> gpu_names();
std::vector<std::string> cluster_names();
/// Throw input_error with "did you mean" for unknown names.
const gpu_spec& find_gpu(std::string_view name);
const cluster_spec& find_cluster(std::string_view name);

/// Load a cluster (or a GPU, as a one-node cluster is not implied) from YAML/JSON; fields named as in
/// the structs above; `gpu:` may be a catalog name or a mapping that overrides the catalog entry.
cluster_spec load_cluster_file(const std::string& path);
/// The same from text already read; `path` names it in messages and gives the cluster its name.
cluster_spec parse_cluster_text(const std::string& text, const std::string& path);
/// Check every field (positive sizes, bandwidths, latencies); throws input_error naming `origin.field`.
void validate_cluster(const cluster_spec& c, std::string_view origin);

}  // namespace trainplan
