// Default compute efficiencies of every catalog GPU, in one table (docs/formulas.md §5.6 gives the
// reason for each value). A calibration file replaces them: any nonzero field of gpu_spec::compute
// wins (effective_compute_efficiency).
#include <cmath>
#include <string_view>

#include "trainplan/core/estimate/compute.h"

namespace trainplan {

/// The one compute constant fitted on a published table (§5.6): Blackwell's cuDNN attention plateaus as a
/// fraction of Hopper's measured ones, fitted on NeMo 25.04's B200 long-sequence rows (blackwell_attention_fit).
constexpr double kBlackwellAttentionScale = 0.74;

namespace {

struct default_entry {
  std::string_view gpu;  ///< catalog name
  compute_efficiency efficiency;
};

/// cuBLAS/CUTLASS tile menu on Ampere/Hopper (CTA tiles of the sm80/sm90 kernels cuBLAS picks from);
/// the fraction is the best large-GEMM rate measured in training, falling for smaller tiles (§5.6).
std::vector<gemm_tile> tiles_scaled(double large) {
  return {{256, 128, large}, {128, 256, large}, {128, 128, large * 0.94}, {128, 64, large * 0.85},
          {64, 64, large * 0.70}};
}

const std::vector<default_entry>& table() {
  static const std::vector<default_entry> t = [] {
    // A100: large fp16/bf16 GEMMs sustain ≈ 0.80 of 312 TFLOPs (cuBLAS ≈ 250 TFLOPs at BLOOM's shapes);
    // the rest of BLOOM's end-to-end 149-157 TFLOPs goes to host time per layer, gradient accumulation,
    // bubble and communication, modelled separately (§5.6, §5.9). Fitted with them on the prequel
    // table's median and the production log line. Head dims not a multiple of 8 (108, 150): 0.08.
    compute_efficiency a100;
    a100.tiles = tiles_scaled(0.80);
    a100.tiles_per_sm = 1;
    a100.align8_factor = 0.93;
    a100.align64_factor = 0.97;
    a100.unaligned_factor = 0.08;
    a100.k_half = 24;
    a100.ramp_flops = 2e8;
    a100.attention_bmm_factor = 0.85;
    a100.flash_attention_fraction = 0.55;
    a100.memory_bandwidth_fraction = 0.80;
    a100.kernel_overhead_s = 5e-6;
    a100.unfused_softmax_factor = 3.0;
    a100.fp8_tile_factor = 1.0;

    // The values the newer cards share where nothing was measured (set, not fitted): memory-bound
    // kernels at 0.80 of the datasheet bandwidth, 4 µs per kernel, a 6·10⁸-FLOP ramp, fused attention at
    // 0.60 of peak forward and backward. Hopper's were like this until they were measured. FP8 tiles at
    // 0.90 × the BF16 fraction: the one FP8/BF16 ratio measured (Hopper's, below; §5.6), where 1.20 stood
    // until 2026-11-27, a value fitted on H100 rows in issue 9 that had absorbed their allocator penalty.
    compute_efficiency unmeasured = a100;
    unmeasured.memory_bandwidth_fraction = 0.80;
    unmeasured.kernel_overhead_s = 4e-6;
    unmeasured.ramp_flops = 6e8;
    unmeasured.flash_attention_fraction = 0.60;
    unmeasured.fp8_tile_factor = 0.90;

    // H100/H200: measured on this project's own cards (calibration/, §5.6), nothing fitted on published
    // runs. GEMM tiles: the median of measured ÷ modelled over the 27 large (m, n, k ≥ 4096) GEMMs of the
    // H100 and H200 profiles is 1.00 and 0.99 at 0.74 (BF16) and × 0.90 (FP8). Those samples are short;
    // held for 20-40 s at the 700 W limit an 8192³ GEMM runs at 0.94 of its profile rate (BF16 677 of
    // 720 TFLOP/s, FP8 1228 of 1299; SM clock 1,300-1,400 MHz; calibration/h100-sxm5-80gb-kernels-2026-11-26).
    // Fused attention is cuDNN's (Transformer Engine's choice on Hopper), causal, head dim 128, measured
    // hot: forward 0.613 × s/(s + 1019), backward 0.575 × s/(s + 1730) of the BF16 peak (2K-16K, ≤ 0.5%).
    compute_efficiency hopper = unmeasured;
    hopper.tiles = tiles_scaled(0.74);
    hopper.fp8_tile_factor = 0.90;
    hopper.sustained_clock_factor = 0.94;
    // Short GEMMs: the 600 profile GEMMs with n, k ≥ 1024 (m from 512) fit best with a 1.5 µs gap per
    // kernel and a 10⁸-FLOP ramp (rms log error 0.08; 4 µs and 6·10⁸, set unmeasured: 0.16, 17% slow at
    // m ≤ 1024). The profiles time kernels back to back, as training runs them.
    hopper.ramp_flops = 1e8;
    hopper.kernel_overhead_s = 1.5e-6;
    hopper.flash_attention_fraction = 0.613;
    hopper.flash_half_seq = 1019;
    hopper.flash_backward_fraction = 0.575;
    hopper.flash_backward_half_seq = 1730;
    // FlashAttention-2 through PyTorch's SDPA flash backend (FSDP/torchtitan, Megatron-DeepSpeed), the same
    // run: forward 0.375 × s/(s + 1639), backward 0.335 × s/(s + 1753) (2K-16K, ≤ 2.7%).
    hopper.fa2_fraction = 0.375;
    hopper.fa2_half_seq = 1639;
    hopper.fa2_backward_fraction = 0.335;
    hopper.fa2_backward_half_seq = 1753;
    // Head dim 192 (96 query heads, 8 K/V groups, 4,096 tokens; the same run), over the curves there: cuDNN
    // forward 585.1 TFLOP/s against the curve's 485.7, backward 307.6 against 400.0; FlashAttention-2
    // 279.2 against 265.0 and 231.3 against 232.1. The wide head's backward is the slow one.
    hopper.wide_head_dim = 192;
    hopper.wide_head_forward = 1.205;
    hopper.wide_head_backward = 0.769;
    hopper.fa2_wide_head_forward = 1.054;
    hopper.fa2_wide_head_backward = 0.997;

    // Blackwell (B200, GB200, and Blackwell Ultra's B300, GB300): not measured here; large tiles at 0.58
    // of peak (early published training MFUs). Its fused attention is cuDNN's through Transformer Engine,
    // as on Hopper: Hopper's measured curve (its half-saturation lengths), its plateaus scaled by 0.74, the
    // one constant fitted on a published table (§5.6): NeMo 25.04's B200 long-sequence rows (55-58 of
    // published-measurements.csv, Llama-3-8B FP8 at 8K-1M tokens, attention 13-95% of the FLOPs), at which
    // their median error is −0.7%; at Hopper's plateaus they were 6-26% too fast.
    compute_efficiency blackwell = unmeasured;
    blackwell.tiles = tiles_scaled(0.58);
    blackwell.ramp_flops = 1.2e9;
    blackwell.flash_attention_fraction = hopper.flash_attention_fraction * kBlackwellAttentionScale;
    blackwell.flash_half_seq = hopper.flash_half_seq;
    blackwell.flash_backward_fraction = hopper.flash_backward_fraction * kBlackwellAttentionScale;
    blackwell.flash_backward_half_seq = hopper.flash_backward_half_seq;
    blackwell.wide_head_dim = hopper.wide_head_dim;  // Hopper's measured ratios, as its curve
    blackwell.wide_head_forward = hopper.wide_head_forward;
    blackwell.wide_head_backward = hopper.wide_head_backward;

    // MI300X: hipBLASLt reaches ≈ 50-60% of the 1307 TFLOPs dense bf16 peak on large GEMMs.
    compute_efficiency mi300x = unmeasured;
    mi300x.tiles = tiles_scaled(0.52);
    mi300x.flash_attention_fraction = 0.35;
    mi300x.memory_bandwidth_fraction = 0.70;
    mi300x.kernel_overhead_s = 6e-6;

    // V100: the A100's constants (set, not fitted: cuBLAS large fp16 GEMMs ≈ 100 of 125 TFLOPs, 0.80).
    // The other Hopper cards run the same kernels (measured on the SXM card; their own clocks and SM
    // counts are in their peaks); MI325X and MI355X take MI300X's values (not measured; CDNA4 doubles the
    // matrix rate per CU, which is in its peak).
    return std::vector<default_entry>{{"v100-sxm2-32gb", a100},    {"a100-sxm4-40gb", a100},    {"a100-sxm4-80gb", a100},
                                      {"h100-sxm5-80gb", hopper},  {"h100-pcie-80gb", hopper},  {"h100-nvl-94gb", hopper},
                                      {"h100-sxm5-96gb-hbm2e", hopper}, {"h20-96gb", hopper},
                                      {"h800-sxm5-80gb", hopper},  {"h200-sxm-141gb", hopper},
                                      {"b200-sxm-180gb", blackwell}, {"gb200", blackwell},
                                      {"b300-sxm-288gb", blackwell}, {"gb300", blackwell}, {"mi300x", mi300x},
                                      {"mi325x", mi300x},          {"mi355x", mi300x}};
  }();
  return t;
}

}  // namespace

const published_fit& blackwell_attention_fit() {
  static const published_fit fit{"Blackwell's cuDNN attention plateaus, × Hopper's measured ones",
                                 "NeMo long-sequence performance doc (LLAMA3-8B, FP8, B200, NeMo25.04.rc2)",
                                 kBlackwellAttentionScale, 1.0, &set_attention_plateaus_over_hopper};
  return fit;
}

void set_attention_plateaus_over_hopper(gpu_spec& gpu, double scale) {
  const compute_efficiency& hopper = default_compute_efficiency_ref(find_gpu("h100-sxm5-80gb"));
  gpu.compute.flash_attention_fraction = hopper.flash_attention_fraction * scale;
  gpu.compute.flash_backward_fraction = hopper.flash_backward_fraction * scale;
}

bool has_own_compute_defaults(std::string_view gpu_name) {
  for (const default_entry& d : table()) {
    if (d.gpu == gpu_name) return true;
  }
  return false;
}

compute_efficiency default_compute_efficiency(const gpu_spec& gpu) { return default_compute_efficiency_ref(gpu); }

const compute_efficiency& default_compute_efficiency_ref(const gpu_spec& gpu) {
  const auto& t = table();
  for (const default_entry& d : t) {
    if (d.gpu == gpu.name) return d.efficiency;
  }
  // A GPU from a file: the catalog entry with the nearest bf16 peak (log scale).
  const default_entry* best = &t.front();
  double best_gap = 1e300;
  for (const default_entry& d : t) {
    const gpu_spec& ref = find_gpu(d.gpu);
    const double gap = std::fabs(std::log(ref.peak_bf16_flops / std::max(1.0, gpu.peak_bf16_flops)));
    if (gap < best_gap) {
      best_gap = gap;
      best = &d;
    }
  }
  return best->efficiency;
}

}  // namespace trainplan
