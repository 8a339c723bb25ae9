// Compute time per kernel, layer and pipeline stage (docs/formulas.md §5.1-§5.3).
#include "trainplan/core/estimate/compute.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <string_view>
#include <utility>

#include "trainplan/core/model/model.h"

namespace trainplan {

/// §5.9: host time of one rank's part of a list all-gather (DeepSpeed's narrow() view, PyTorch's
/// recordStream and copy_ launch), s. Fitted with the 2021 fetch cost on seeds/002's ZeRO-3 rows on
/// 2-16 p3dn nodes (their fall with the node count); Narayanan et al.'s ZeRO-3 rows are held out.
constexpr double kListGatherCopyPerRankS = 9e-6;


namespace {

/// Whether x > 0 is a power of two (std::has_single_bit calls libgcc without POPCNT: the hot path).
constexpr bool power_of_two(std::uint64_t x) { return (x & (x - 1)) == 0; }

/// Tiles of size `tile` that cover `dim` (⌈dim/tile⌉); tiles are powers of two in every catalog entry.
std::int64_t tile_count(std::int64_t dim, std::int64_t tile) {
  const auto t = static_cast<std::uint64_t>(tile);
  if (power_of_two(t)) return (dim + tile - 1) >> std::countr_zero(t);
  return (dim + tile - 1) / tile;
}

/// Elements a 16-bit (8-bit, 32-bit) operand needs per dimension for vectorised tensor-core loads: 16 bytes.
std::int64_t alignment_elements(dtype d) { return std::max(1, 16 / bytes_of(d)); }

/// Alignment factor of one dimension (§5.2): multiples of 128 are free.
double alignment_factor(std::int64_t dim, std::int64_t elems, const compute_efficiency& e) {
  // elems is a power of two (16 bytes / element size): a mask, not an integer division (hot path).
  const bool aligned = power_of_two(static_cast<std::uint64_t>(elems)) ? (dim & (elems - 1)) == 0
                                                                               : dim % elems == 0;
  if (!aligned) return e.unaligned_factor;
  if (dim % 128 == 0) return 1.0;
  if (dim % 64 == 0) return e.align64_factor;
  return e.align8_factor;
}

/// Memory-bound work: bytes ÷ (bandwidth × fraction) + per-kernel overhead.
double memory_time_s(const gpu_spec& gpu, const compute_efficiency& e, double bytes, int kernels) {
  return bytes / (gpu.memory_bandwidth_bytes_per_s * e.memory_bandwidth_fraction) + kernels * e.kernel_overhead_s;
}

/// The best tile of §5.2's menu for one GEMM: its peak fraction and waves · tm · tn.
struct tile_choice {
  double peak = 0;
  double area = 1;
};
void best_tiles(const compute_efficiency& e, double slots, const gemm_shape& f, tile_choice* fw, tile_choice* dx,
                tile_choice* dw);
gemm_estimate estimate_gemm_with(const gpu_spec& gpu, const compute_efficiency& e, dtype d, const gemm_shape& s,
                                 double slots, const tile_choice& tile, double align, double ramp);
double tile_slots(const gpu_spec& gpu, const compute_efficiency& e);
double shape_alignment(const compute_efficiency& e, dtype d, const gemm_shape& s);
double flop_ramp(const compute_efficiency& e, const gemm_shape& s);

/// A GEMM run as several GEMMs over slices of its rows (the tokens), each quantised and ramped on its
/// own: Transformer Engine's userbuffers overlap (§5.5.1) splits the forward (ring exchange: one GEMM
/// per TP rank's slice as it arrives; pipeline: 4) and the ring-exchanged data-gradient GEMM.
struct gemm_splits {
  std::int64_t forward = 1;    ///< slices of the forward GEMM
  std::int64_t data_grad = 1;  ///< slices of the data-gradient GEMM
  /// Each of the shape's `batch` GEMMs launched on its own, one after another, each quantised and ramped
  /// alone (Megatron-Core's SequentialMLP: a Linear per local expert), instead of one grouped launch.
  bool one_per_batch = false;
};

/// Adds one GEMM (forward shape) to the forward pass and its two backward GEMMs (data and weight
/// gradients, each with the forward's FLOPs) to the backward pass (§5.1). `weight_grad` false for
/// products of two activations (attention), whose backward is two data-gradient GEMMs. `time_scale`
/// slows a GEMM family down (batched attention GEMMs) without changing its FLOPs; `splits` runs the
/// forward or the data gradient as slices of its rows, or the batch one GEMM at a time.
void add_gemm(const gpu_spec& gpu, const compute_efficiency& e, dtype d, gemm_shape f, unit_time& u,
              double pass_time::*bucket, double time_scale = 1.0, double backward_scale = -1,
              gemm_splits splits = {}) {
  if (backward_scale < 0) backward_scale = time_scale;
  // One GEMM of the batch, run `runs` times (SequentialMLP), or the whole batch as one launch.
  const double runs = splits.one_per_batch ? static_cast<double>(f.batch) : 1.0;
  if (splits.one_per_batch) f.batch = 1;
  // In training the GEMMs run back to back at the card's power limit, below the clock of a short
  // benchmark sample (§5.6, sustained_clock_factor): their time, not their FLOPs, stretches.
  if (e.sustained_clock_factor > 0) {
    time_scale /= e.sustained_clock_factor;
    backward_scale /= e.sustained_clock_factor;
  }
  // dX[m×k] = dY[m×n]·Wᵀ[n×k]; dW[k×n] = Xᵀ[k×m]·dY[m×n]: the same FLOPs, and the same leading
  // dimensions (the forward's k and n).
  // One pass over the tile menu serves all three: their tile counts share the dimensions.
  const double align = shape_alignment(e, d, f), ramp = flop_ramp(e, f), slots = tile_slots(gpu, e);
  tile_choice tf, tx, tw;
  best_tiles(e, slots, f, &tf, &tx, &tw);
  gemm_estimate fw = estimate_gemm_with(gpu, e, d, f, slots, tf, align, ramp);
  gemm_estimate dx = estimate_gemm_with(gpu, e, d, gemm_shape{f.m, f.k, f.n, f.batch}, slots, tx, align, ramp);
  const gemm_estimate dw = estimate_gemm_with(gpu, e, d, gemm_shape{f.k, f.n, f.m, f.batch}, slots, tw, align, ramp);
  // A split GEMM: n GEMMs of m/n rows, each with its own tile, waves, ramp and launch.
  auto split = [&](std::int64_t n, const gemm_shape& g) {
    const gemm_shape part{std::max<std::int64_t>(1, g.m / n), g.n, g.k, g.batch};
    tile_choice tile, unused_x, unused_w;
    best_tiles(e, slots, part, &tile, &unused_x, &unused_w);
    gemm_estimate all = estimate_gemm_with(gpu, e, d, part, slots, tile, align, flop_ramp(e, part));
    all.time_s *= static_cast<double>(n);
    all.flops *= static_cast<double>(n);
    return all;
  };
  if (splits.forward > 1) fw = split(splits.forward, f);
  if (splits.data_grad > 1) dx = split(splits.data_grad, gemm_shape{f.m, f.k, f.n, f.batch});
  u.forward.*bucket += runs * fw.time_s * time_scale;
  u.forward.flops += runs * fw.flops;
  u.backward.*bucket += runs * (dx.time_s + dw.time_s) * backward_scale;
  u.backward.flops += runs * (dx.flops + dw.flops);
  // The attention core's batched GEMMs have no weights: both of their backward GEMMs are input gradients.
  if (bucket == &pass_time::gemm_s) u.backward.weight_gradient_s += runs * dw.time_s * backward_scale;
}

/// Memory-bound kernels: forward bytes, backward = `backward_factor` × forward (reads the saved input
/// and the output gradient, writes the input gradient; §5.3).
void add_memory(const gpu_spec& gpu, const compute_efficiency& e, double bytes, int kernels, unit_time& u,
                double pass_time::*bucket = &pass_time::memory_s) {
  constexpr double kBackwardFactor = 2.0;
  u.forward.*bucket += memory_time_s(gpu, e, bytes, kernels);
  u.backward.*bucket += memory_time_s(gpu, e, bytes * kBackwardFactor, kernels);
}

/// A kernel chain whose backward was counted from its autograd graph rather than by §5.3's 2× rule.
void add_memory_passes(const gpu_spec& gpu, const compute_efficiency& e, double forward_bytes, int forward_kernels,
                       double backward_bytes, int backward_kernels, unit_time& u) {
  u.forward.memory_s += memory_time_s(gpu, e, forward_bytes, forward_kernels);
  u.backward.memory_s += memory_time_s(gpu, e, backward_bytes, backward_kernels);
}

/// Megatron's fused scale-mask-softmax runs: not turned off (--no-masked-softmax-fusion) and the shape
/// fits it (megatron/model/fused_softmax.py, is_kernel_available, 2022): 16 < sk ≤ 2048 (4096 from
/// 2023), sq % 4 == 0, b·np % 4 == 0 (§5.3).
bool fused_softmax_runs(const training_config& tc, std::int64_t sq, std::int64_t sk, std::int64_t b, std::int64_t np) {
  return tc.masked_softmax_fusion && sk > 16 && sk <= 4096 && sq % 4 == 0 && (b * np) % 4 == 0;
}

/// Rows each local expert's GEMMs run on the busiest rank for one micro-batch (§5.1): the stage's
/// tokens × top-k spread over the experts and their expert-DP replicas, ETP ranks each taking every
/// row of theirs, times the load of the busiest expert (capacity factor, or dropless imbalance). With
/// ETP = TP: ep·tokens·k/E.
std::int64_t expert_rows(const job_spec& job) {
  const model_spec& m = job.model;
  const parallel_config& p = job.parallel;
  const moe_spec& x = m.moe;
  const double tokens = static_cast<double>(job.resolved.tokens);
  const double load = x.capacity_factor > 0 ? x.capacity_factor : x.load_imbalance;
  const double rows = tokens * static_cast<double>(x.router_topk) * static_cast<double>(p.ep) *
                      static_cast<double>(job.resolved.etp) /
                      (static_cast<double>(x.num_experts) * static_cast<double>(p.tp)) * load;
  return std::max<std::int64_t>(1, static_cast<std::int64_t>(std::llround(rows)));
}

/// Which side of a TP block a layer GEMM is: its input all-gathered (column-parallel: QKV, fc1, MLA's
/// up-projections, Mamba's in_proj) or its output reduce-scattered (row-parallel: projection, fc2,
/// Mamba's out_proj); --tp-comm-overlap's userbuffers run beside them (§5.5.1).
enum class userbuffer_side : std::uint8_t { none, column_parallel, row_parallel };

/// What the time model needs of a layer GEMM beside its shape, said where the GEMM is listed.
struct gemm_role {
  bool attention_bmm = false;  ///< a product of two activations (the attention core's batched GEMMs)
  userbuffer_side side = userbuffer_side::none;
  bool fp8 = true;             ///< runs at the FP8 rate under --fp8-format (the router does not)
  /// Transformer Engine fuses the FP8 cast of its input into the kernel that produces it (a norm,
  /// LayerNormLinear/LayerNormMLP, or the activation), and of its output gradient into the activation's
  /// backward (§5.1.3); otherwise each is a cast_transpose pass of its own.
  bool input_cast_fused = false;
  bool grad_cast_fused = false;
  bool shared_expert = false;  ///< an MoE layer's shared expert: --moe-shared-expert-overlap hides EP under it
  /// A routed expert's grouped GEMM: FP8 where the framework's FP8 reaches them (framework_traits).
  bool routed_expert = false;
  /// Which block's TP collectives a sided GEMM is pipelined with (pass_time::tp_column_gemm_s): 0 the
  /// mixer's (attention, Mamba), 1 the dense MLP's.
  std::uint8_t tp_block = 0;
};
/// How a scaling recipe's casts run (§5.1.3), one row per --fp8-recipe, from Transformer Engine's code:
/// delayed scaling fuses the cast into the norm or activation that produces the input (the amax of the
/// previous steps sets the scale); current (tensorwise) scaling needs this tensor's amax first, so the
/// producer writes 16 bits with its amax (pytorch/csrc/extensions/normalization.cpp FUSED_NORM_AMAX_FP8) and
/// an unfused cast reads its input once more for it (nvte_compute_amax, then the scale); MXFP8 and blockwise
/// scales come from each block inside the cast, but the norm runs in 16 bits before it (Impl::UNFUSED).
struct fp8_cast_row {
  fp8_recipe recipe;
  bool producer_fuses_cast;  ///< the norm or activation writes FP8 itself
  double amax_reads;         ///< extra reads of an unfused cast's input, × e bytes
  int amax_kernels;          ///< and its kernels (amax, scale)
};
constexpr std::array<fp8_cast_row, 4> kFp8Casts = {{
    {fp8_recipe::delayed, true, 0, 0},
    {fp8_recipe::tensorwise, false, 1, 2},
    {fp8_recipe::mxfp8, false, 0, 0},
    {fp8_recipe::blockwise, false, 0, 0},
}};
const fp8_cast_row& fp8_casts_of(fp8_recipe r) {
  const fp8_cast_row& row = kFp8Casts[static_cast<std::size_t>(r)];
  TRAINPLAN_CHECK(row.recipe == r);
  return row;
}

constexpr gemm_role kPlain{};
constexpr gemm_role kRoutedExpert{.routed_expert = true};
constexpr gemm_role kAttentionBmm{.attention_bmm = true, .fp8 = false};
constexpr gemm_role kColumn{.side = userbuffer_side::column_parallel};
constexpr gemm_role kRow{.side = userbuffer_side::row_parallel};
constexpr gemm_role kNormedColumn{.side = userbuffer_side::column_parallel, .input_cast_fused = true};
constexpr gemm_role kMlpUp{
    .side = userbuffer_side::column_parallel, .input_cast_fused = true, .grad_cast_fused = true, .tp_block = 1};
constexpr gemm_role kMlpDown{.side = userbuffer_side::row_parallel, .input_cast_fused = true, .tp_block = 1};
constexpr gemm_role kRouter{.fp8 = false};
constexpr gemm_role kSharedExpert{.shared_expert = true};

/// The attention block's GEMMs, for for_each_layer_gemm.
template <typename F>
void attention_gemms(const job_spec& job, F&& f) {
  const model_spec& m = job.model;
  const parallel_config& p = job.parallel;
  const std::int64_t t = p.tp;
  const std::int64_t b = job.training.micro_batch_size;
  const std::int64_t s = m.seq_length;
  const std::int64_t sq = s / p.cp;
  const std::int64_t tokens = b * sq;
  const std::int64_t h = m.hidden_size;
  const std::int64_t np = m.num_attention_heads / t;
  const std::int64_t dh = m.kv_channels;
  if (m.is_mla()) {
    // §5.1: MLA's down-projections are duplicated over TP (every token, whole width); the
    // up-projections are column-parallel.
    const mla_spec& a = m.mla;
    if (a.q_lora_rank > 0) {
      f(named_gemm{"q_down", {tokens, a.q_lora_rank, h, 1}}, kPlain);
      f(named_gemm{"q_up", {tokens, m.q_width() / t, a.q_lora_rank, 1}}, kColumn);
    } else {
      f(named_gemm{"q_proj", {tokens, m.q_width() / t, h, 1}}, kColumn);
    }
    f(named_gemm{"kv_down", {tokens, a.kv_lora_rank + a.qk_pos_emb_head_dim, h, 1}}, kPlain);
    f(named_gemm{"kv_up", {tokens, np * (a.qk_head_dim + a.v_head_dim), a.kv_lora_rank, 1}}, kColumn);
  } else {
    f(named_gemm{"qkv", {tokens, (m.q_width() + m.k_width() + m.v_width()) / t, h, 1}}, kNormedColumn);
  }
  if (!job.training.flash_attention) {
    const std::int64_t dv = m.attention_out_width() / m.num_attention_heads;
    f(named_gemm{"attention_scores", {sq, s, dh, b * np}}, kAttentionBmm);   // Q·Kᵀ
    f(named_gemm{"attention_context", {sq, dv, s, b * np}}, kAttentionBmm);  // P·V
  }
  f(named_gemm{"attention_out", {tokens, h, m.attention_out_width() / t, 1}}, kRow);
}

/// Calls f(gemm, role) for every GEMM of one layer's forward pass for one micro-batch on
/// one GPU, in the order the layer runs them (§5.1): a Mamba block's in_proj and out_proj (§5.1.4);
/// QKV, the attention core's two batched GEMMs (not with flash attention), the output projection;
/// then the MLP, or the router, the local experts (balanced routing) and the shared experts.
template <typename F>
void for_each_layer_gemm(const job_spec& job, layer_kind kind, F&& f) {
  const layer_makeup& mk = makeup_of(kind);
  const model_spec& m = job.model;
  const parallel_config& p = job.parallel;
  const std::int64_t t = p.tp;
  const std::int64_t tokens = job.resolved.tokens;
  const std::int64_t h = m.hidden_size;
  if (mk.mamba) {
    const mamba_spec& x = m.mamba;
    f(named_gemm{"mamba_in_proj", {tokens, (2 * x.d_inner() + 2 * x.num_groups * x.state_dim + x.num_heads) / t, h, 1}},
      kNormedColumn);
    f(named_gemm{"mamba_out_proj", {tokens, h, x.d_inner() / t, 1}}, kRow);
  }
  if (mk.attention) attention_gemms(job, f);
  const std::int64_t gate = is_gated(m.activation) ? 2 : 1;
  if (mk.dense_mlp) {
    f(named_gemm{"mlp_up", {tokens, gate * m.ffn_hidden_size / t, h, 1}}, kMlpUp);
    f(named_gemm{"mlp_down", {tokens, h, m.ffn_hidden_size / t, 1}}, kMlpDown);
  }
  if (!mk.moe) return;
  const moe_spec& x = m.moe;
  f(named_gemm{"router", {tokens, x.num_experts, h, 1}}, kRouter);
  const std::int64_t local_experts = x.num_experts / p.ep;
  const std::int64_t rows = expert_rows(job);
  const std::int64_t fe = x.expert_ffn_hidden_size;
  const std::int64_t etp = job.resolved.etp;
  f(named_gemm{"expert_up", {rows, gate * fe / etp, h, local_experts}}, kRoutedExpert);
  f(named_gemm{"expert_down", {rows, h, fe / etp, local_experts}}, kRoutedExpert);
  if (const std::int64_t fs = x.shared_expert_ffn_hidden_size; fs > 0) {
    f(named_gemm{"shared_expert_up", {tokens, gate * fs / t, h, 1}}, kSharedExpert);
    f(named_gemm{"shared_expert_down", {tokens, h, fs / t, 1}}, kSharedExpert);
  }
}

}  // namespace

op_sac_block op_sac_matmuls(const model_spec& m) {
  // torchtitan/distributed/activation_checkpoint.py _apply_op_sac: the policy saves the ops on the
  // model's save list (llama3/infra/parallelize.py) except every second aten.mm of the block; a Llama
  // block calls wq, wk, wv (Attention.forward), wo, then w1, w3, w2 (FeedForward.forward).
  const double h = static_cast<double>(m.hidden_size), f = static_cast<double>(m.ffn_hidden_size);
  const std::array<std::pair<double, double>, 7> widths = {{{h, static_cast<double>(m.q_width())},
                                                            {h, static_cast<double>(m.k_width())},
                                                            {h, static_cast<double>(m.v_width())},
                                                            {static_cast<double>(m.attention_out_width()), h},
                                                            {h, f},
                                                            {h, f},
                                                            {f, h}}};
  const bool gated = is_gated(m.activation);
  op_sac_block block;
  for (std::size_t i = 0; i < widths.size(); ++i) {
    if (i == 5 && !gated) continue;  // no w3
    const bool kept = block.count % 2 == 0;  // the 1st, 3rd, … call
    block.mm[block.count++] = {widths[i].first, widths[i].second, kept, i + 1 < widths.size()};
  }
  return block;
}

compute_efficiency effective_compute_efficiency(const gpu_spec& gpu) {
  compute_efficiency e;
  effective_compute_efficiency(gpu, e);
  return e;
}

void effective_compute_efficiency(const gpu_spec& gpu, compute_efficiency& e) {
  e = default_compute_efficiency_ref(gpu);  // copy-assignment reuses e.tiles' storage
  const compute_efficiency& o = gpu.compute;
  if (!o.tiles.empty()) e.tiles = o.tiles;
  auto take = [](double& into, double v) {
    if (v > 0) into = v;
  };
  take(e.tiles_per_sm, o.tiles_per_sm);
  take(e.align8_factor, o.align8_factor);
  take(e.align64_factor, o.align64_factor);
  take(e.unaligned_factor, o.unaligned_factor);
  take(e.k_half, o.k_half);
  take(e.ramp_flops, o.ramp_flops);
  take(e.attention_bmm_factor, o.attention_bmm_factor);
  take(e.flash_attention_fraction, o.flash_attention_fraction);
  take(e.flash_backward_fraction, o.flash_backward_fraction);
  take(e.flash_half_seq, o.flash_half_seq);
  take(e.flash_backward_half_seq, o.flash_backward_half_seq);
  take(e.sustained_clock_factor, o.sustained_clock_factor);
  take(e.fa2_fraction, o.fa2_fraction);
  take(e.fa2_half_seq, o.fa2_half_seq);
  take(e.fa2_backward_fraction, o.fa2_backward_fraction);
  take(e.fa2_backward_half_seq, o.fa2_backward_half_seq);
  take(e.memory_bandwidth_fraction, o.memory_bandwidth_fraction);
  take(e.kernel_overhead_s, o.kernel_overhead_s);
  take(e.unfused_softmax_factor, o.unfused_softmax_factor);
  take(e.fp8_tile_factor, o.fp8_tile_factor);
  if (o.measured) e.measured = o.measured;
}

namespace {

/// Concurrent tiles per wave: SMs × CTAs per SM (§5.2).
double tile_slots(const gpu_spec& gpu, const compute_efficiency& e) {
  return static_cast<double>(gpu.sm_count) * e.tiles_per_sm;
}

/// Whole waves of `slots` that run `tiles` CTAs, ⌈tiles/slots⌉ (the hot path of every estimate, so no
/// division): ⌊tiles · (1/slots)⌋ is ⌊tiles/slots⌋, or one less where the quotient is a whole number the
/// reciprocal put a rounding below (a nonzero remainder is at least 1/slots, far above the rounding);
/// either way the one test below lands on the ceiling. Tiles and slots are whole numbers under 2⁵³.
double waves_of(double tiles, double slots, double per_slot) {
  double waves = static_cast<double>(static_cast<std::int64_t>(tiles * per_slot));
  if (waves * slots < tiles) waves += 1;
  return waves;
}

/// Keeps the tile of higher efficiency peak × m·n·b / (area · slots), compared by cross-multiplication;
/// the first of equals stays.
void keep_better(tile_choice& best, double peak, double waves, double tile_area) {
  const double area = waves * tile_area;
  if (peak * best.area > best.peak * area) best = {peak, area};
}

/// Tile and wave quantization (§5.2) of a forward GEMM f = (m, n, k) and its two backward GEMMs,
/// dX = (m, k, n) and dW = (k, n, m), in one pass over the library's tile menu: the best tile is the one of
/// highest peak_fraction × m·n·b / (waves · slots · tm · tn). The three share their tile counts (the
/// forward's ⌈m/tm⌉ is dX's, its ⌈n/tn⌉ is dW's), counted in integers (a shift for the power-of-two tiles).
void best_tiles(const compute_efficiency& e, double slots, const gemm_shape& f, tile_choice* fw, tile_choice* dx,
                tile_choice* dw) {
  const double per_slot = 1.0 / slots, b = static_cast<double>(f.batch);
  const double m = static_cast<double>(f.m), n = static_cast<double>(f.n), k = static_cast<double>(f.k);
  // Each GEMM's output elements over the slots: its efficiency with a tile is peak × work / area.
  const double work_fw = m * n * b * per_slot, work_dx = m * k * b * per_slot, work_dw = k * n * b * per_slot;
  *fw = *dx = *dw = tile_choice{};
  for (const gemm_tile& t : e.tiles) {
    // A tile reaches at most its peak (its waves cover the work): once every GEMM's best does at least
    // that, the tile cannot replace any of them (exact; a tie keeps the first).
    if (t.peak_fraction * fw->area <= fw->peak * work_fw && t.peak_fraction * dx->area <= dx->peak * work_dx &&
        t.peak_fraction * dw->area <= dw->peak * work_dw) {
      continue;
    }
    const double m_rows = static_cast<double>(tile_count(f.m, t.m)) * b;  // tiles over m, times the batch
    const double n_cols = static_cast<double>(tile_count(f.n, t.n));
    const double tile_area = static_cast<double>(t.m) * static_cast<double>(t.n);
    keep_better(*fw, t.peak_fraction, waves_of(m_rows * n_cols, slots, per_slot), tile_area);
    keep_better(*dx, t.peak_fraction,
                waves_of(m_rows * static_cast<double>(tile_count(f.k, t.n)), slots, per_slot), tile_area);
    keep_better(*dw, t.peak_fraction,
                waves_of(static_cast<double>(tile_count(f.k, t.m)) * b * n_cols, slots, per_slot), tile_area);
  }
}

/// estimate_gemm from the parts a GEMM's forward and its two backward GEMMs share or compute together
/// (their dimensions are the same three, permuted): its best tile, the alignment factor and the FLOP ramp.
gemm_estimate estimate_gemm_with(const gpu_spec& gpu, const compute_efficiency& e, dtype d, const gemm_shape& s,
                                 double slots, const tile_choice& tile, double align, double ramp) {
  gemm_estimate out;
  const double m = static_cast<double>(s.m), n = static_cast<double>(s.n), k = static_cast<double>(s.k),
               b = static_cast<double>(s.batch);
  out.flops = 2.0 * m * n * k * b;
  if (out.flops <= 0) return out;
  double best = tile.peak * (m * n * b) / (tile.area * slots);
  if (d == dtype::fp8 && e.fp8_tile_factor > 0) best = std::min(1.0, best * e.fp8_tile_factor);
  const double prologue = k / (k + e.k_half);
  out.efficiency = best * align * prologue * ramp;
  // A calibration profile's measurements correct the model where they were taken (§6.4).
  if (e.measured) out.efficiency *= e.measured->correction(d, s.m, s.n, s.k, s.batch);
  out.time_s = out.flops / (gpu.peak_flops(d) * out.efficiency) + e.kernel_overhead_s;
  return out;
}

/// §5.2's alignment factor of a shape: its worse leading dimension. A row-major C[m×n] = A[m×k]·B[k×n]
/// strides A by k and B and C by n; m (the tokens, or an expert's tokens) is no operand's leading
/// dimension, and neither is it in the two backward GEMMs (their strides are the forward's k and n), so
/// a token count that is not a multiple of 8 costs tile quantization, not vectorised loads.
double shape_alignment(const compute_efficiency& e, dtype d, const gemm_shape& s) {
  const std::int64_t elems = alignment_elements(d);
  return std::min(alignment_factor(s.n, elems, e), alignment_factor(s.k, elems, e));
}

/// §5.2's ramp of small GEMMs, from the FLOPs.
double flop_ramp(const compute_efficiency& e, const gemm_shape& s) {
  const double flops = 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k) *
                       static_cast<double>(s.batch);
  return flops / (flops + e.ramp_flops);
}

}  // namespace

gemm_estimate estimate_gemm(const gpu_spec& gpu, const compute_efficiency& e, dtype d, const gemm_shape& s) {
  const double slots = tile_slots(gpu, e);
  tile_choice fw, dx, dw;
  best_tiles(e, slots, s, &fw, &dx, &dw);
  return estimate_gemm_with(gpu, e, d, s, slots, fw, shape_alignment(e, d, s), flop_ramp(e, s));
}

std::vector<named_gemm> layer_gemm_shapes(const job_spec& job, bool moe_layer) {
  std::vector<named_gemm> out;
  for_each_layer_gemm(job, moe_layer ? layer_kind::moe : layer_kind::dense,
                      [&](const named_gemm& g, const gemm_role&) { out.push_back(g); });
  const model_spec& m = job.model;
  const std::int64_t tokens = job.resolved.tokens;
  out.push_back({"logits", {tokens, padded_vocab(m, job.parallel.tp) / job.parallel.tp, m.hidden_size, 1}});
  return out;
}

double causal_pairs_fraction(const model_spec& m, bool windowed) {
  const double s = static_cast<double>(m.seq_length);
  const double w = static_cast<double>(m.sliding_window);
  if (!windowed || w <= 0 || w >= s) return 1.0;
  // §5.1.2: (query, key) pairs a causal kernel executes, over the s²/2 of full causal attention.
  // Sliding: query i sees min(i + 1, w) keys, Σ = w·s − w(w − 1)/2. Chunked: s/w causal chunks of
  // w(w + 1)/2 pairs.
  const double pairs = m.window == window_kind::sliding ? w * s - w * (w - 1) / 2 : s * (w + 1) / 2;
  return std::min(1.0, pairs / (s * s / 2));
}

namespace {

/// SMs a pipelined or bulk userbuffers overlap takes (transformer_engine/pytorch/module/base.py
/// initialize_ub, get_default_config: num_sm 16; ring exchange: 1 SM and the copy engines).
constexpr int kUserbufferSms = 16;
/// Transformer Engine's num_splits for the `pipeline` method (module/base.py get_default_config).
constexpr std::int64_t kPipelineSplits = 4;

/// A fused attention-like kernel of `flops` forward (flash attention, Mamba's SSD scan) into `bucket`:
/// forward at the GPU's fused-attention rate, backward 2× the FLOPs in 2.5× the forward's FLOPs' time
/// at the backward rate (it recomputes; Dao 2023). `keys`: the sequence each call's causal square spans
/// (0: a kernel with no sequence ramp), each rate × keys/(keys + half) where the GPU has a ramp, and ×
/// the sustained clock factor (§5.6).
void add_fused_kernel(const job_spec& job, const compute_efficiency& e, double flops, double keys, unit_time& u,
                      double pass_time::*bucket, bool attention = false, double head_dim = 0) {
  const double peak = job.cluster.gpu.peak_flops(job.training.precision);
  auto ramp = [keys](double half) { return keys > 0 && half > 0 ? keys / (keys + half) : 1.0; };
  // Attention run by FlashAttention-2 (a framework without Transformer Engine, or asked for) takes its
  // rates where the GPU has them.
  const bool fa2 = attention && job.training.fa2_attention && e.fa2_fraction > 0;
  const double fraction = fa2 ? e.fa2_fraction : e.flash_attention_fraction;
  const double half = fa2 ? e.fa2_half_seq : e.flash_half_seq;
  const double backward_fraction = fa2 ? e.fa2_backward_fraction
                                   : e.flash_backward_fraction > 0 ? e.flash_backward_fraction
                                                                    : e.flash_attention_fraction;
  const double backward_half = fa2 ? e.fa2_backward_half_seq : e.flash_backward_half_seq;
  // §5.6: the rates are a warm card's; in training the compute-bound kernels run at the clock the
  // power limit holds, as the GEMMs do (held for 20 s the attention ran at 0.90-0.93 of its first second).
  const double clock = e.sustained_clock_factor > 0 ? e.sustained_clock_factor : 1.0;
  // §5.6: a query/key head wider than the curves' 128 (MLA's 192) at its measured ratios.
  double wide_forward = 1, wide_backward = 1;
  if (attention && e.wide_head_dim > 128 && head_dim > 128) {
    const double w = (std::min(head_dim, e.wide_head_dim) - 128) / (e.wide_head_dim - 128);
    wide_forward = 1 + w * ((fa2 ? e.fa2_wide_head_forward : e.wide_head_forward) - 1);
    wide_backward = 1 + w * ((fa2 ? e.fa2_wide_head_backward : e.wide_head_backward) - 1);
  }
  const double forward_rate = clock * wide_forward * peak * fraction * ramp(half);
  const double backward_rate = clock * wide_backward * peak * backward_fraction * ramp(backward_half);
  u.forward.*bucket += flops / forward_rate + e.kernel_overhead_s;
  u.forward.flops += flops;
  u.backward.*bucket += 2.5 * flops / backward_rate + e.kernel_overhead_s;
  u.backward.flops += 2 * flops;
}

/// PyTorch's ring attention around its SDPA calls (§5.3, torch/distributed/tensor/experimental/
/// _attention.py, convert_to_f32): on the busiest CP rank (the last, whose every later step takes the whole
/// local query and half the keys), per layer and micro-batch. Forward: K/V concatenated for the exchange
/// before every step but the last; each step's output cast to fp32 and, from the second step, merged into
/// the running output by its log-sum-exp (out − σ(lse_b − lse)·(out − out_b): 32 bytes per element);
/// the result cast back. Backward: fp32 dQ, dK, dV zeroed; each step's 16-bit gradients added in (dK/dV
/// from the second step into their first half, then concatenated whole: _partial_update), dK/dV
/// concatenated for the ring, K/V again for theirs; the results cast back. `q_elems`, `kv_elems`: one
/// rank's output and K + V elements as the SDPA call sees them.
void torch_ring_attention_merges(const job_spec& job, const compute_efficiency& e, double q_elems, double kv_elems,
                                 unit_time& u) {
  const gpu_spec& gpu = job.cluster.gpu;
  const double a = bytes_of(job.resolved.roles.activations);
  const double c = static_cast<double>(job.parallel.cp);
  const int ci = static_cast<int>(job.parallel.cp);
  const double cast = (a + 4) * q_elems;        // 16-bit ↔ fp32 over the output
  const double kv_cat = 2 * a * kv_elems;       // read and write K and V
  const double forward = (c - 1) * (kv_cat + 32 * q_elems) + (c + 1) * cast;
  const double accumulate_kv_first = (a + 8) * kv_elems;             // dK/dV += 16-bit step gradients
  const double accumulate_kv_half = (a + 8) / 2 * kv_elems + 8 * kv_elems;  // into half, then concatenated
  const double backward = 4 * (q_elems + kv_elems) + (c - 1) * kv_cat + accumulate_kv_first +
                          (c - 1) * accumulate_kv_half + c * 8 * kv_elems + c * (a + 8) * q_elems +
                          (a + 4) * (q_elems + kv_elems);
  // Kernels: forward a cast per step, a concatenation per exchange, 8 for each merge (its log-sum-exp's
  // too), the final cast; backward 3 zeroings, per step an add into dQ, 2 (or 4, half then whole) into
  // dK/dV, a concatenation for each ring, and 2 final casts.
  u.forward.attention_s += memory_time_s(gpu, e, forward, ci + (ci - 1) + 8 * (ci - 1) + 1);
  u.backward.attention_s += memory_time_s(gpu, e, backward, 3 + ci + 2 + 4 * (ci - 1) + ci + (ci - 1) + 2);
}

/// The attention core (§5.1, §5.3): one flash kernel, or the unfused softmax and dropout passes (the
/// batched score and context GEMMs are for_each_layer_gemm's).
void attention_core(const job_spec& job, const compute_efficiency& e, bool windowed, unit_time& u) {
  const model_spec& m = job.model;
  const parallel_config& p = job.parallel;
  const gpu_spec& gpu = job.cluster.gpu;
  const double eb = bytes_of(job.resolved.roles.activations);
  const std::int64_t b = job.training.micro_batch_size;
  const std::int64_t s = m.seq_length;
  const std::int64_t sq = s / p.cp;
  const std::int64_t np = m.num_attention_heads / p.tp;
  if (job.training.flash_attention) {
    // Flash attention: one fused kernel; causal masking skips the masked half of the tiles, so the
    // kernel executes half the s² square, and that half is what is counted and timed (§5.1, one
    // convention: Megatron-Core's num_floating_point_operations counts seq_length/2, "causal mask").
    // Backward ≈ 2.5× forward in time (it recomputes the scores; Dao 2023), 2× in FLOPs.
    // Windowed layers execute only the pairs inside the window (causal_pairs_fraction). Q·Kᵀ runs over
    // the query/key head dim, P·V over the value head dim (MLA: 192 and 128).
    const double dv = static_cast<double>(m.attention_out_width() / m.num_attention_heads);
    const double flops = 0.5 * 2.0 * b * np * static_cast<double>(sq) * s *
                         (static_cast<double>(m.kv_channels) + dv) * causal_pairs_fraction(m, windowed);
    // Each call spans s/CP keys (one CP rank's chunk pair); a windowed layer's rows at most the window.
    double keys = static_cast<double>(sq);
    if (windowed && m.sliding_window > 0) keys = std::min(keys, static_cast<double>(m.sliding_window));
    add_fused_kernel(job, e, flops, keys, u, &pass_time::attention_s, true, static_cast<double>(m.kv_channels));
    if (p.cp > 1 && traits_of(job.training.framework).cp_attention == cp_attention_kind::torch_ring) {
      const double tokens = static_cast<double>(b * sq);
      torch_ring_attention_merges(job, e, tokens * static_cast<double>(np) * dv,
                                  tokens * attention_kv_columns(m, job.training, p.tp), u);
    }
    return;
  }
  // Scale+mask+softmax reads and writes the scores; ALiBi adds its bias on the way; dropout writes the
  // probabilities and a 1-byte mask (§5.3).
  const double scores = static_cast<double>(b) * np * sq * s;
  const bool fused = fused_softmax_runs(job.training, sq, s, b, np);
  double softmax_bytes = 2 * eb * scores;
  if (!fused) softmax_bytes *= e.unfused_softmax_factor;
  if (m.position_embedding == position_embedding_kind::alibi) softmax_bytes += eb * scores;
  add_memory(gpu, e, softmax_bytes, fused ? 1 : 3, u, &pass_time::attention_s);
  if (m.attention_dropout > 0) add_memory(gpu, e, (2 * eb + 1) * scores, 1, u, &pass_time::attention_s);
}

/// A Mamba-2 block's work besides its two projections (§5.1.4): the depthwise causal convolution
/// with its SiLU, the chunked SSD scan and the gated RMSNorm, on this GPU's heads.
void mamba_mixer(const job_spec& job, const compute_efficiency& e, unit_time& u) {
  const model_spec& m = job.model;
  const mamba_spec& x = m.mamba;
  const gpu_spec& gpu = job.cluster.gpu;
  const double eb = bytes_of(job.resolved.roles.activations);
  const double t = static_cast<double>(job.parallel.tp);
  const double tokens = static_cast<double>(job.resolved.tokens);
  const double d_local = static_cast<double>(x.d_inner()) / t;
  const double groups_local = static_cast<double>(x.num_groups) / t;
  const double n = static_cast<double>(x.state_dim);
  const double q = static_cast<double>(std::min(x.chunk_size, m.seq_length));
  // SSD (Dao & Gu 2024, §6): per token, C·Bᵀ inside its chunk per group (2·Q·N·G), the masked scores
  // times X (2·Q·d), the chunk states Bᵀ·X (2·N·d) and their contribution to the outputs C·h (2·N·d).
  // Timed as the flash kernel is (the fused-attention efficiency, backward 2× the FLOPs, 2.5× the time):
  // no SSD measurement is at hand to fit its own.
  add_fused_kernel(job, e, tokens * (2 * q * n * groups_local + 2 * q * d_local + 4 * n * d_local), 0.0, u,
                   &pass_time::gemm_s);
  // The convolution reads and writes [x, B, C]; the gated norm reads y and z and writes its output.
  const double conv = static_cast<double>(x.conv_width()) / t;
  add_memory(gpu, e, 2 * eb * tokens * conv, 1, u);
  add_memory(gpu, e, 3 * eb * tokens * d_local, 1, u);
}

/// Megatron-Core runs its unfused RoPE (rope_utils.py apply_rotary_pos_emb): --no-rope-fusion, or a YaRN
/// concentration factor other than 1, which Transformer Engine's fused kernel does not take ("mscale=… is not
/// supported by TE's fused RoPE. Using unfused implementation."). MLA's RoPE runs its own kernels (§5.3).
bool megatron_unfused_rope(const job_spec& job) {
  const model_spec& m = job.model;
  if (job.training.framework != framework_kind::megatron || m.is_mla()) return false;
  return !job.training.rope_fusion || m.rope_yarn_factor > 1;
}

}  // namespace

unit_time layer_compute(const job_spec& job, const compute_efficiency& e, layer_kind kind) {
  const layer_makeup& mk = makeup_of(kind);
  const model_spec& m = job.model;
  const parallel_config& p = job.parallel;
  const gpu_spec& gpu = job.cluster.gpu;
  const dtype d = job.training.precision;                      // GEMM inputs (precision_roles::compute)
  const double eb = bytes_of(job.resolved.roles.activations);  // memory-bound kernels' elements
  const std::int64_t t = p.tp;
  const std::int64_t tokens = job.resolved.tokens;  // rows of every dense GEMM
  const std::int64_t h = m.hidden_size;
  unit_time u;

  // Every GEMM of the layer (§5.1), in one account with the bench's shapes (layer_gemm_shapes). The
  // batched attention GEMMs run slower than dense ones of the same FLOPs (attention_bmm_factor).
  const double bmm_scale = 1.0 / e.attention_bmm_factor;
  // FP8 (§5.1.3): the linear GEMMs run at the FP8 rate; the router and the attention core stay in
  // bf16. Each FP8 GEMM's input is cast (and transposed for the weight gradient) in the forward, its
  // output gradient in the backward: memory-bound passes that read e and write 2 bytes per element.
  const dtype linear = job.resolved.roles.linear;
  const bool fp8 = linear == dtype::fp8;
  // §5.1.3: whether the framework's FP8 reaches the routed experts (torchtitan's torchao float8 does not).
  const bool fp8_experts = traits_of(job.training.framework).fp8_routed_experts;
  // §5.1.3: torchao's Float8Linear casts the gathered 16-bit weight in every forward (amax, then the cast:
  // 2e + 1 bytes an element, two kernels under torch.compile), and the backward's grad_input _scaled_mm
  // takes it in the transposed layout (a 1-byte copy); with FSDP's float8 all-gather the shard is cast
  // before the gather instead (1/D of it, not priced). Checkpointing redoes the forward's cast with the
  // forward; without it (or under Megatron's selective recomputation) the backward recasts it
  // (force_recompute_fp8_weight_in_bwd, what trainplan assumes: §5.1.3).
  const bool cast_weights =
      fp8 && traits_of(job.training.framework).fp8_weight_cast_each_pass && !job.training.fp8_param_gather;
  const bool recast_in_backward = job.training.recompute == recompute_granularity::none ||
                                  job.training.recompute == recompute_granularity::selective;
  const fp8_cast_row& casts = fp8_casts_of(job.training.fp8_scaling);
  // §5.5.1: with --tp-comm-overlap the pipelined and bulk userbuffers kernels take 16 SMs from the GEMMs
  // they run beside: the row-parallel GEMMs' forward, the column-parallel GEMMs' backward.
  const bool ub = job.training.tp_comm_overlap && p.sequence_parallel && p.tp > 1;
  // §5.5.1: torchtitan's async TP slices the GEMMs its fused collectives pipeline (copy engines: no SMs
  // taken): the column-parallel forward (all-gather then matmul, one slice per shard), the row-parallel
  // forward (a slice per destination rank, then a reduction of the TP partials each rank receives) and its
  // data gradient (the output gradient's all-gather then matmul). The column-parallel data gradients are
  // summed before their reduce-scatter and stay whole.
  const bool async_tp = job.training.async_tp && job.training.framework == framework_kind::fsdp &&
                        p.sequence_parallel && p.tp > 1;
  const double sm_share = ub ? static_cast<double>(gpu.sm_count) / static_cast<double>(gpu.sm_count - kUserbufferSms) : 1.0;
  // §5.5.1: of a sided GEMM, the part its pipelined collective runs beside. A ring exchange over t ranks (the
  // forward all-gather, the output-gradient all-gather under the data gradient; async TP's reduce-scatter too)
  // moves t − 1 slices beside t − 1 of the GEMM's t slices; userbuffers' reduce-scatter pipeline 3 of its 4
  // (its last split is exposed, a row of its own); the backward's bulk collectives run beside the whole GEMMs.
  const double ring_share = static_cast<double>(t - 1) / static_cast<double>(t);
  const double row_forward_share = ub ? static_cast<double>(kPipelineSplits - 1) / static_cast<double>(kPipelineSplits)
                                      : ring_share;
  // §5.4: the forward work of the recompute modules selective recomputation redoes (core_attn apart).
  const training_config& tc = job.training;
  const bool re_mlp = tc.recomputes(recompute_module::mlp), re_moe = tc.recomputes(recompute_module::moe);
  const bool re_shared = re_moe || tc.recomputes(recompute_module::shared_experts);
  const bool re_act = re_moe || tc.recomputes(recompute_module::moe_act);
  const bool re_up = tc.recomputes(recompute_module::mla_up_proj);
  // §5.1.1: without --moe-grouped-gemm Megatron-Core builds SequentialMLP (experts.py): each local expert an
  // MLP of its own, its GEMMs, activation and FP8 casts launched one expert after another.
  const std::int64_t local_experts = mk.moe ? m.moe.num_experts / p.ep : 1;
  const bool sequential_experts = mk.moe && local_experts > 1 && tc.framework == framework_kind::megatron &&
                                  !tc.moe_grouped_gemm;
  auto redone = [&](std::string_view name) {
    if (name == "mlp_up" || name == "mlp_down") return re_mlp;
    if (name == "router" || name == "expert_up" || name == "expert_down") return re_moe;
    if (name == "shared_expert_up" || name == "shared_expert_down") return re_shared;
    if (name == "q_up" || name == "kv_up" || name == "q_proj") return re_up && m.is_mla();
    return false;
  };
  for_each_layer_gemm(job, kind, [&](const named_gemm& g, const gemm_role& role) {
    const double fwd_total_before = u.forward.total_s(), fwd_flops_before = u.forward.flops;
    const double fwd_scale = ub && role.side == userbuffer_side::row_parallel ? sm_share : 1.0;
    const double bwd_scale = ub && role.side == userbuffer_side::column_parallel ? sm_share : 1.0;
    // §5.5.1: TE's default methods: the column-parallel forward is a ring exchange (TP slices), the
    // row-parallel forward a 4-split pipeline and its data gradient a ring exchange; the rest are bulk.
    gemm_splits splits;
    if (ub && role.side == userbuffer_side::column_parallel) splits.forward = t;
    if (ub && role.side == userbuffer_side::row_parallel) splits = {kPipelineSplits, t};
    if (async_tp && role.side == userbuffer_side::column_parallel) splits.forward = t;
    if (async_tp && role.side == userbuffer_side::row_parallel) {
      splits = {t, t};
      // fused_matmul_reduce_scatter's reduction: the t partial slices received (every row, e bytes) summed
      // into this rank's rows.
      const double out_elems = static_cast<double>(g.shape.m) * static_cast<double>(g.shape.batch) *
                               static_cast<double>(g.shape.n);
      u.forward.memory_s += memory_time_s(gpu, e, out_elems * eb * (1 + 1.0 / static_cast<double>(t)), 1);
    }
    splits.one_per_batch = sequential_experts && role.routed_expert;
    const int launches = splits.one_per_batch ? static_cast<int>(g.shape.batch) : 1;  // of each cast
    const double gemm_fwd_before = u.forward.gemm_s;
    const double gemm_bwd_before = u.backward.gemm_s;
    const double wgrad_before = u.backward.weight_gradient_s;
    if (role.attention_bmm) {
      add_gemm(gpu, e, d, g.shape, u, &pass_time::attention_s, bmm_scale);
    } else if (fp8 && role.fp8 && (!role.routed_expert || fp8_experts)) {
      add_gemm(gpu, e, linear, g.shape, u, &pass_time::gemm_s, fwd_scale, bwd_scale, splits);
      const double rows = static_cast<double>(g.shape.m) * static_cast<double>(g.shape.batch);
      // A cast_transpose pass (read e, write the FP8 tensor and its transpose), unless its producer writes
      // FP8; an unfused cast under current scaling reads its input once more for the amax.
      auto cast_s = [&](bool fused_role, double elems) {
        if (fused_role && casts.producer_fuses_cast) return 0.0;
        if (fused_role) return memory_time_s(gpu, e, elems * (eb + 2), launches);  // the producer wrote its amax
        return memory_time_s(gpu, e, elems * (eb + 2 + casts.amax_reads * eb), launches * (1 + casts.amax_kernels));
      };
      u.forward.memory_s += cast_s(role.input_cast_fused, rows * static_cast<double>(g.shape.k));
      u.backward.memory_s += cast_s(role.grad_cast_fused, rows * static_cast<double>(g.shape.n));
      if (cast_weights) {
        const double weight = static_cast<double>(g.shape.n) * static_cast<double>(g.shape.k) *
                              static_cast<double>(g.shape.batch);
        const double cast = memory_time_s(gpu, e, weight * (2 * eb + 1), 2);
        u.forward.memory_s += cast;
        u.backward.memory_s += memory_time_s(gpu, e, weight * 2, 1) + (recast_in_backward ? cast : 0.0);
      }
    } else {
      add_gemm(gpu, e, d, g.shape, u, &pass_time::gemm_s, fwd_scale, bwd_scale, splits);
    }
    if (role.shared_expert) {
      u.forward.shared_expert_s += u.forward.gemm_s - gemm_fwd_before;
      u.backward.shared_expert_s += u.backward.gemm_s - gemm_bwd_before;
    }
    const std::size_t block = role.tp_block;
    if (role.side == userbuffer_side::column_parallel) {
      u.forward.tp_column_gemm_s[block] += ring_share * (u.forward.gemm_s - gemm_fwd_before);
      u.backward.tp_column_gemm_s[block] += u.backward.gemm_s - gemm_bwd_before;
    } else if (role.side == userbuffer_side::row_parallel) {
      u.forward.tp_row_gemm_s[block] += row_forward_share * (u.forward.gemm_s - gemm_fwd_before);
      const double data_grad_s = (u.backward.gemm_s - gemm_bwd_before) - (u.backward.weight_gradient_s - wgrad_before);
      u.backward.tp_row_gemm_s[block] += ring_share * data_grad_s;
    }
    if (redone(g.name)) {
      u.module_recompute_s += u.forward.total_s() - fwd_total_before;  // with FP8, the input's cast too
      u.module_recompute_flops += u.forward.flops - fwd_flops_before;
    }
  });
  if (mk.attention) attention_core(job, e, mk.window, u);
  if (mk.mamba) mamba_mixer(job, e, u);

  // Activation-function inputs (elements) of the MLP or experts, and the routed tokens' permutation;
  // of them, those a recompute module redoes.
  const std::int64_t gate = is_gated(m.activation) ? 2 : 1;
  double act_elems = 0, act_redone = 0;
  auto dense_mlp_elems = [&](std::int64_t ffn, bool again) {
    const double elems = static_cast<double>(tokens) * gate * ffn / t;
    act_elems += elems;
    if (again) act_redone += elems;
  };
  if (mk.moe) {
    const moe_spec& x = m.moe;
    const double routed = static_cast<double>(expert_rows(job)) * local_experts * gate * x.expert_ffn_hidden_size /
                          job.resolved.etp;
    act_elems += routed;
    if (re_act) act_redone += routed;
    // Permute and un-permute the routed tokens.
    const double before = u.forward.memory_s;
    add_memory(gpu, e, 4 * eb * static_cast<double>(tokens) * x.router_topk * h, 2, u);
    if (tc.framework == framework_kind::megatron && !tc.moe_permute_fusion) {
      // Megatron-Core's PyTorch path (moe_utils.py permute/unpermute, fused=False; §5.3): the same row gather,
      // plus the index building on the routing map (its transpose, an arange, two masked_selects of ~3 kernels
      // each, the probabilities' transpose: 10 small kernels) and the unpermute's zeroed output that
      // scatter_add_ reads and writes back (2e per hidden element, 1 kernel); backward, index_select's
      // gradient is likewise a zeroed buffer and an index_add_ (2e, 1 kernel).
      const double hidden_bytes = 2 * eb * static_cast<double>(tokens) * h;
      add_memory_passes(gpu, e, hidden_bytes, 11, hidden_bytes, 1, u);
    }
    // The alltoall dispatcher with several local experts sorts the received rows by local expert after the
    // dispatch and back before the combine (moe/token_dispatcher.py MoEAlltoAllTokenDispatcher
    // dispatch_postprocess, combine_preprocess: sort_chunks_by_idxs, or a transposed copy with capacity):
    // a read and a write of every received row each, as many in the backward (the inverse sorts).
    if (p.moe_dispatcher == moe_dispatcher_kind::alltoall && local_experts > 1) {
      const double sorted = 2 * 2 * eb * static_cast<double>(expert_rows(job)) * local_experts * h;
      u.forward.memory_s += memory_time_s(gpu, e, sorted, 2);
      u.backward.memory_s += memory_time_s(gpu, e, sorted, 2);
    }
    // SequentialMLP concatenates its experts' outputs (torch.cat: a read and a write of every routed row; its
    // backward splits the gradient into views).
    if (sequential_experts) {
      const double cat_bytes = 2 * eb * static_cast<double>(expert_rows(job)) * local_experts * h;
      add_memory_passes(gpu, e, cat_bytes, 1, 0.0, 0, u);
    }
    if (re_moe) u.module_recompute_s += u.forward.memory_s - before;
    if (x.shared_expert_ffn_hidden_size > 0) dense_mlp_elems(x.shared_expert_ffn_hidden_size, re_shared);
  } else if (mk.dense_mlp) {
    dense_mlp_elems(m.ffn_hidden_size, re_mlp);
  }
  // Activation function (fused with its bias): read the input, write the output (gated: half as wide).
  // Unfused SwiGLU (silu, then the product) moves 5e per output element in 2 kernels against 3e in 1; a
  // GeLU with its bias unfused (--no-bias-gelu-fusion: MLP.forward's intermediate + bias, then the GeLU)
  // 4e in 2.
  if (mk.moe || mk.dense_mlp) {
    const double before = u.forward.memory_s;
    const bool fused_glu = gate != 2 || tc.bias_swiglu_fusion;
    const bool bias_apart = m.activation == activation_kind::gelu && m.add_bias_linear && !tc.bias_gelu_fusion;
    const int act_kernels = fused_glu && !bias_apart ? 1 : 2;
    add_memory(gpu, e, eb * act_elems * (gate != 2 ? (bias_apart ? 4.0 : 2.0) : fused_glu ? 1.5 : 2.5),
               act_kernels, u);
    // Unfused, the GLU clamps its two halves first (--activation-func-clamp-value; Megatron-Core mlp.py and
    // moe/experts.py glu(): x_glu.clamp(max=v), x_linear.clamp(-v, v)): a read and a write of every input
    // element in 2 kernels; their backward (clamp_backward) reads the gradient and the saved input and
    // writes the masked gradient, 3e in 2 kernels. The fused kernels clamp in place of a load: free.
    if (gate == 2 && !fused_glu && m.glu_clamp_limit > 0) {
      add_memory_passes(gpu, e, 2 * eb * act_elems, 2, 3 * eb * act_elems, 2, u);
    }
    if (act_elems > 0) u.module_recompute_s += (u.forward.memory_s - before) * act_redone / act_elems;
    // SequentialMLP runs each local expert's activation apart: the same bytes in local_experts launches.
    if (sequential_experts) {
      const double apart = u.forward.memory_s;
      add_memory(gpu, e, 0.0, static_cast<int>(local_experts - 1) * act_kernels, u);
      if (re_act) u.module_recompute_s += u.forward.memory_s - apart;
    }
  }

  // Norms and bias-dropout-residual (§5.3), one of each per block. Without sequence parallelism every
  // TP rank does them on the whole hidden vector.
  const double blocks = static_cast<double>(mk.blocks());
  const int kernels = mk.blocks();
  const double hidden_elems = static_cast<double>(tokens) * h / (p.sequence_parallel ? t : 1);
  const double norms_before = u.forward.memory_s;
  // Norms (§5.3): a LayerNorm is one kernel in every framework; an RMSNorm as the framework's model runs it.
  const layer_kernels& lk = layer_kernels_of(tc);
  using nk = training_config::norm_kernel;
  const elementwise_cost norm = m.norm != norm_kind::rmsnorm || tc.rmsnorm_kernel == nk::fused ? kFusedNorm
                                : tc.rmsnorm_kernel == nk::eager ? kEagerRmsNorm
                                                                 : lk.rmsnorm;
  add_memory(gpu, e, blocks * (norm.e_accesses * eb + norm.fp32_bytes) * hidden_elems, kernels * norm.kernels, u);
  // The layernorm module redoes an MoE layer's pre-MLP norm (the others are fused into their linears).
  if (mk.moe && tc.recomputes(recompute_module::layernorm) && !re_moe) {
    u.module_recompute_s += (u.forward.memory_s - norms_before) / blocks;
  }
  const double dropout_mask = m.hidden_dropout > 0 ? 1.0 : 0.0;
  // Inductor writes the residual add before each later block's norm in the norm's kernel (layer_kernels):
  // that norm does not read the sum back, one e per element and one kernel fewer per such block.
  const int fused_adds = lk.residual_into_norm && kernels > 1 ? kernels - 1 : 0;
  if (tc.bias_dropout_fusion) {
    add_memory(gpu, e, (blocks * (3 * eb + dropout_mask) - fused_adds * eb) * hidden_elems, kernels - fused_adds,
               u);  // bias-dropout-adds
  } else {
    // --no-bias-dropout-fusion (Megatron's bias_dropout_add unfused): x + bias (2e, with a bias), the
    // dropout (2e + its 1-byte mask, with p > 0; PyTorch returns its input at p = 0) and the residual add
    // (3e), each a kernel.
    const bool bias = m.add_bias_linear, dropout = m.hidden_dropout > 0;
    const double bytes = (bias ? 2 * eb : 0.0) + (dropout ? 2 * eb + 1 : 0.0) + 3 * eb;
    add_memory(gpu, e, blocks * bytes * hidden_elems, kernels * (1 + int{bias} + int{dropout}), u);
  }
  if (!mk.attention) return u;
  if (m.position_embedding == position_embedding_kind::rope) {
    const double before = u.forward.memory_s;
    const double rope_elems = static_cast<double>(tokens) * static_cast<double>(m.q_width() + m.k_width()) / t;
    if (megatron_unfused_rope(job)) {
      // Megatron-Core's _apply_rotary_pos_emb_bshd on query and key (§5.3): per element forward t·cos (2e),
      // rotate-half's negation of one half (e) and concatenation (2e), ·sin (2e), the sum (3e) and the final
      // concatenation with the empty pass-through part (2e), 12e in 6 kernels, and cos and sin built from the
      // frequencies (6 small kernels); backward grad·sin, the negation, the halves' concatenation, grad·cos
      // and the sum of t's two gradients, 10e in 5.
      add_memory_passes(gpu, e, 12 * eb * rope_elems, 2 * 12, 10 * eb * rope_elems, 2 * 5, u);
    } else {
      add_memory(gpu, e, (lk.rope.e_accesses * eb + lk.rope.fp32_bytes) * rope_elems, lk.rope.kernels, u);
    }
    if (re_up && m.is_mla()) u.module_recompute_s += u.forward.memory_s - before;
  }
  if (m.is_mla()) {
    // The latent norms, over every token on every TP rank (the down-projections are duplicated).
    add_memory(gpu, e, 2 * eb * static_cast<double>(tokens) * (m.mla.q_lora_rank + m.mla.kv_lora_rank), 2, u);
  } else if (m.qk_norm) {
    add_memory(gpu, e, 2 * eb * static_cast<double>(tokens) * (m.q_width() + m.k_width()) / t, 2, u);
  }
  if (m.sandwich_norm) add_memory(gpu, e, 2 * 2 * eb * hidden_elems, 2, u);
  if (lk.gqa_copies && !m.is_mla()) {
    // torchtitan's attention (models/llama/model.py): repeat_kv copies grouped K and V out to every head
    // (read the groups, write the heads), and the output is copied contiguous after its transpose.
    const double rows = static_cast<double>(tokens) / static_cast<double>(t);
    const double heads_width = static_cast<double>(m.attention_out_width());
    double bytes = 2 * eb * rows * heads_width;  // the output's contiguous copy
    int copies = 1;
    if (m.num_query_groups < m.num_attention_heads) {
      bytes += eb * rows * static_cast<double>(m.k_width() + m.q_width() + m.v_width()) + eb * rows * heads_width;
      copies += 2;
    }
    add_memory(gpu, e, bytes, copies, u);
  }
  return u;
}

namespace {

/// into += times × u, pass by pass.
void add_units(unit_time& into, const unit_time& u, double times) {
  into.module_recompute_s += times * u.module_recompute_s;
  into.module_recompute_flops += times * u.module_recompute_flops;
  for (auto [to, from] : {std::pair{&into.forward, &u.forward}, std::pair{&into.backward, &u.backward}}) {
    to->gemm_s += times * from->gemm_s;
    to->attention_s += times * from->attention_s;
    to->memory_s += times * from->memory_s;
    to->flops += times * from->flops;
    to->weight_gradient_s += times * from->weight_gradient_s;
  }
}

/// Word (and position) embedding lookup, its norm, and the backward scatter into the gradient.
unit_time embedding_compute(const job_spec& job, const compute_efficiency& e) {
  const model_spec& m = job.model;
  const double eb = bytes_of(job.resolved.roles.activations);
  const double elems = static_cast<double>(job.resolved.tokens) *
                       m.hidden_size;
  unit_time u;
  double bytes = 2 * eb * elems;                      // gather rows, write output
  if (m.position_embedding == position_embedding_kind::learned) bytes += 2 * eb * elems;
  if (m.embedding_norm) bytes += 2 * eb * elems;
  if (m.hidden_dropout > 0) bytes += (2 * eb + 1) * elems;
  add_memory(job.cluster.gpu, e, bytes, 4, u);
  return u;
}

/// Final norm, logits GEMM over the vocabulary shard, vocab-parallel cross-entropy in fp32.
unit_time output_compute(const job_spec& job, const compute_efficiency& e) {
  const model_spec& m = job.model;
  const gpu_spec& gpu = job.cluster.gpu;
  const dtype d = job.training.precision;                      // GEMM inputs (precision_roles::compute)
  const double eb = bytes_of(job.resolved.roles.activations);  // memory-bound kernels' elements
  const std::int64_t tokens = job.resolved.tokens;
  const std::int64_t vocab = padded_vocab(m, job.parallel.tp) / job.parallel.tp;
  unit_time u;
  if (m.final_norm) add_memory(gpu, e, 2 * 2 * eb * static_cast<double>(tokens) * m.hidden_size, 1, u);
  add_gemm(gpu, e, d, {tokens, vocab, m.hidden_size}, u, &pass_time::gemm_s);
  // Cross-entropy (§5.3): the framework's kernels over the logits, by the bytes each moves.
  const cross_entropy_kernels& ce = cross_entropy_of(job.training, job.parallel.tp);
  const double elems = static_cast<double>(tokens) * static_cast<double>(vocab);
  u.forward.memory_s +=
      memory_time_s(gpu, e, elems * (eb * (1 + ce.forward_extra_16bit) + ce.forward_fp32_bytes), ce.forward_kernels);
  u.backward.memory_s +=
      memory_time_s(gpu, e, elems * (eb * (1 + ce.backward_extra_16bit) + ce.backward_fp32_bytes), ce.backward_kernels);
  return u;
}

}  // namespace

namespace {

/// §5.4: torchtitan's per-op selective checkpointing recomputes the matmuls it does not keep
/// (op_sac_matmuls). Returns their share of the linear GEMMs' FLOPs (their time share at one rate) and
/// their forward FLOPs per layer. TP 1 (job_rules).
std::pair<double, double> op_recomputed_matmul_share(const job_spec& job) {
  if (job.training.recompute != recompute_granularity::selective_op) return {0.0, 0.0};
  const op_sac_block block = op_sac_matmuls(job.model);
  double all = 0, redone = 0;
  for (std::size_t i = 0; i < block.count; ++i) {
    const double work = block.mm[i].in_width * block.mm[i].out_width;
    all += work;
    if (!block.mm[i].kept && block.mm[i].feeds_backward) redone += work;
  }
  return {redone / all, 2.0 * redone * static_cast<double>(job.resolved.tokens)};
}

/// The framework's own host time per layer pass, without ZeRO-3's fetches (§5.9).
double host_default_per_layer_pass_s(const training_config& t) {
  // Megatron-DeepSpeed's activation checkpointing saves and restores CUDA RNG states around every
  // layer (deepspeed/runtime/activation_checkpointing), a host synchronisation per layer pass that
  // exposes the Python/launch time of the layer's ops: ≈ 2.5 ms per pass on BLOOM's nodes, fitted to
  // the MBS sweeps of seeds/000 (§5.9). Megatron-LM and FSDP launch asynchronously: hidden.
  return t.recompute == recompute_granularity::full ? traits_of(t.framework).host_s_per_recomputed_layer_pass : 0.0;
}

}  // namespace

double host_overhead_per_layer_pass_s(const training_config& t) {
  // §5.9: ZeRO-3/FSDP fetch each of a layer's 6 parametered modules before every pass (forward, the
  // recomputed forward, backward); --zero3-fetch-overhead-us is what each fetch costs the GPU.
  constexpr double kModulesPerLayer = 6;
  const double fetch_s = t.zero_stage == 3 ? kModulesPerLayer * t.zero3_fetch_overhead_s : 0.0;
  if (t.host_overhead_per_layer_pass_s >= 0) return t.host_overhead_per_layer_pass_s + fetch_s;
  return fetch_s + host_default_per_layer_pass_s(t);
}

double zero3_list_gather_copies_per_layer_pass_s(const job_spec& job) {
  const training_config& t = job.training;
  if (t.zero_stage != 3 || !t.zero3_gather_per_parameter) return 0.0;
  // §5.9: DeepSpeed before 0.5.5 all-gathers each parameter tensor on its own with
  // torch.distributed.all_gather into one view per rank (partition_parameters.py _allgather_param), and
  // ProcessGroupNCCL::allgather copies the flat result back rank by rank (recordStream + copy_ per rank):
  // N copies per parameter tensor per fetch, issued by the host while the GPU waits for the parameter.
  const model_spec& m = job.model;
  const double bias = m.add_bias_linear ? 2.0 : 1.0;
  const double norm = m.norm == norm_kind::layernorm ? 2.0 : 1.0;
  const double tensors = 4.0 * bias + 2.0 * norm;  // QKV, projection, fc1, fc2; two norms
  return tensors * static_cast<double>(job.resolved.dp_shards) * kListGatherCopyPerRankS;
}

double accumulation_bytes_per_parameter(const job_spec& job) {
  // Memory traffic per parameter per micro-batch beyond the weight-gradient GEMM (§5.9), as the job's
  // optimizer row accumulates its gradients.
  const precision_roles& roles = job.resolved.roles;
  const double e = bytes_of(roles.weights);
  switch (job.resolved.row().accumulation) {
    case grad_accumulation::in_gemm:
      // Megatron: into main_grad in the GEMM; without the fusion the DDP backward hook does
      // main_grad.add_(grad) (core/distributed/distributed_data_parallel.py, _make_backward_post_hook):
      // read the 16-bit grad, read and write main_grad.
      return job.training.gradient_accumulation_fusion ? 0 : e + 2.0 * bytes_of(roles.gradients);
    case grad_accumulation::autograd: return 3 * e;  // AccumulateGrad: read old, read new, write (.grad)
    case grad_accumulation::autograd_then_buffer:
      // BF16_Optimizer.update_hp_grads after every micro-batch: read the 16-bit grad, read and write the
      // buffer (grad_acc_dtype).
      return 3 * e + e + 2.0 * bytes_of(roles.gradients);
    case grad_accumulation::upcast_into_buffer:
      // FSDP2 without gradient sync (under a pipeline): each unit's 16-bit .grad added into its unsharded
      // reduce-dtype buffer (FSDPParam.accumulate_unsharded_grad_if_needed; the first micro-batch's cast,
      // to_accumulated_grad_if_needed, writes it without reading it: counted alike).
      return e + 2.0 * bytes_of(roles.gradients);
  }
  return 0;
}

double optimizer_step_bytes_per_parameter(const job_spec& job) {
  // §5.5: the step reads the master weights (or the weights themselves without one), the gradient the
  // optimizer sees (fp32 under mixed precision) and each moment, writes the master and the moments, and
  // under mixed precision writes the 16-bit copy. Adam: 30 bytes in bf16 with fp32 state.
  const precision_roles& roles = job.resolved.roles;
  const double weight = bytes_of(roles.weights);
  const double master = roles.master_weights ? roles.master_bytes : weight;
  const double grad = roles.master_weights ? 4.0 : weight;
  const double moments = roles.moment_bytes;
  // §4.2.4: torchtitan's precomputed float8 scales read every weight shard once more after the step
  // (torch._foreach_norm(weights, ord=inf) in precompute_float8_dynamic_scale_for_fsdp).
  const double precompute = job.training.fp8_precompute_scale ? master : 0.0;
  return 2 * master + grad + 2 * moments + (roles.master_weights ? weight : 0.0) + precompute;
}

double allocator_slowdown(double reserved_fraction) {
  // PyTorch's caching allocator, when a request finds no free cached block and cudaMalloc fails, frees
  // every cached block (cudaFree synchronises the device) and retries; near capacity this happens
  // within every micro-batch. Onset at 90% of usable memory reserved (the allocator's rounding and
  // fragmentation leave ~10% unusable), growing quadratically to +40% of the rank's compute at 100%,
  // fitted to BLOOM's MBS 8 rows at 73-76 GB of 80 (seeds/000, 2022-02-20: +10% end to end over MBS 4,
  // the first rank being the one near capacity; §5.9). Beyond 100% the job does not fit (§3): it is
  // flagged as not runnable and timed as if it had the memory (factor 1), so that an over-estimate of
  // memory never becomes a time error (issue 27).
  constexpr double kOnset = 0.90, kAtCapacity = 0.40;
  if (!(reserved_fraction <= 1.0)) return 1.0;
  const double x = std::clamp((reserved_fraction - kOnset) / (1.0 - kOnset), 0.0, 1.0);
  return 1.0 + kAtCapacity * x * x;
}

compute_report estimate_compute(const job_spec& job) {
  compute_report r;
  estimate_compute(job, count_parameters(job.model, job.parallel.tp), pipeline_layout(job), r);
  return r;
}

void estimate_compute(const job_spec& job, const parameter_breakdown& params, const std::vector<stage_layout>& layout,
                      compute_report& r) {
  thread_local compute_efficiency e;
  effective_compute_efficiency(job.cluster.gpu, e);
  const model_spec& m = job.model;
  const parallel_config& p = job.parallel;
  const training_config& tc = job.training;
  // One layer of each kind on some stage (§1.10); the dense layer always, for the overlap budgets.
  const layer_counts present = layer_kinds_of(layout);
  for (std::size_t k = 0; k < kNumLayerKinds; ++k) {
    const auto kind = static_cast<layer_kind>(k);
    r.layers[k] = present[k] > 0 || kind == layer_kind::dense ? layer_compute(job, e, kind) : unit_time{};
  }
  r.embedding = embedding_compute(job, e);
  r.output = output_compute(job, e);
  if (m.mtp_num_layers > 0) {
    // §1.8, §5.1: each MTP module runs a layer like the last one, its 2h → h projection (column-
    // parallel), and its own logits and loss through the shared output layer, on the last stage.
    unit_time module = r.of(m.kind_of_layer(m.num_layers - 1));
    const std::int64_t tokens = job.resolved.tokens;
    add_gemm(job.cluster.gpu, e, tc.precision, {tokens, m.hidden_size / p.tp, 2 * m.hidden_size}, module, &pass_time::gemm_s);
    add_units(module, output_compute(job, e), 1.0);
    add_units(r.output, module, static_cast<double>(m.mtp_num_layers));
  }
  {
    const std::int64_t np = m.num_attention_heads / p.tp;
    const std::int64_t sq = job.resolved.seq_per_rank;
    r.fused_softmax = tc.flash_attention || fused_softmax_runs(tc, sq, m.seq_length, tc.micro_batch_size, np);
  }

  // Recomputation (§5.4): full redoes the layer's forward in backward; selective redoes the attention
  // core; torchtitan's per-op policy redoes the memory-bound kernels and the matmuls it did not keep.
  const std::pair<double, double> op_share = op_recomputed_matmul_share(job);
  auto recompute_of = [&](const unit_time& u) {
    switch (tc.recompute) {
      case recompute_granularity::full: return std::pair{u.forward.total_s(), u.forward.flops};
      case recompute_granularity::selective:
        return std::pair{(tc.recomputes(recompute_module::core_attn) ? u.forward.attention_s : 0.0) + u.module_recompute_s,
                         u.module_recompute_flops};
      case recompute_granularity::selective_op:
        return std::pair{u.forward.memory_s + op_share.first * u.forward.gemm_s, op_share.second};
      case recompute_granularity::none: break;
    }
    return std::pair{0.0, 0.0};
  };
  r.layer_recompute_fraction = tc.recompute == recompute_granularity::full ? 1.0 : 0.0;

  // Parameters each rank updates in its optimizer step (§5.5): what it holds (§2.4), sharded by ZeRO ≥ 1
  // over DP×CP, the routed experts over expert-DP = DP×CP/EP (as the memory model shards them, §3.3).
  const rank_holdings holds = holdings_of(job, params);
  const bool sharded = job.resolved.row().step_sharded();
  const double dense_shards = sharded ? static_cast<double>(job.resolved.dp_shards) : 1.0;  // §2.5
  const double expert_shards = sharded ? static_cast<double>(job.resolved.expert_dp_shards) : 1.0;
  const double opt_bytes_per_param = optimizer_step_bytes_per_parameter(job);
  const gpu_spec& gpu = job.cluster.gpu;

  // §5.9: host time per layer pass, and the gradient accumulation traffic of every micro-batch.
  const double host_s = host_overhead_per_layer_pass_s(tc) + zero3_list_gather_copies_per_layer_pass_s(job);
  const double accumulate_bytes = accumulation_bytes_per_parameter(job);
  std::array<double, kNumLayerKinds> accumulate_s{};
  for (std::size_t k = 0; k < kNumLayerKinds; ++k) {
    const double layer_params = static_cast<double>(holds.of(static_cast<layer_kind>(k)).total());
    accumulate_s[k] = memory_time_s(gpu, e, accumulate_bytes * layer_params, accumulate_bytes > 0 ? 1 : 0);
  }

  // The work of `kinds` layers of which `recomputed` redo their forward (spread over the kinds in
  // proportion), host time and gradient accumulation included: a stage's or a model chunk's layers.
  struct layers_work {
    double fwd = 0, bwd = 0, re = 0, fwd_flops = 0, bwd_flops = 0, wgrad = 0;
    double fwd_shared = 0, bwd_shared = 0;
    std::array<tp_block_caps, kNumTpBlockKinds> tp_blocks{};
  };
  // The forward GEMMs full recomputation redoes in the backward pass (where its collectives are booked).
  const bool full_recompute = tc.recompute == recompute_granularity::full;
  const bool shared_recomputed = tc.recompute == recompute_granularity::selective &&
                                 (tc.recomputes(recompute_module::moe) || tc.recomputes(recompute_module::shared_experts));
  auto work_of = [&](const layer_counts& kinds, double layers, double recomputed) {
    layers_work w;
    const double redone = full_recompute ? recomputed / std::max(1.0, layers) : 0.0;  // of each layer's forward
    for (std::size_t k = 0; k < kNumLayerKinds; ++k) {
      const double count = static_cast<double>(kinds[k]);
      if (count <= 0) continue;
      const unit_time& u = r.layers[k];
      const auto [re_s, re_flops] = recompute_of(u);
      const double share = recomputed * count / std::max(1.0, layers);
      w.fwd += count * u.forward.total_s();
      w.bwd += count * (u.backward.total_s() + accumulate_s[k]);
      w.re += share * re_s;
      w.fwd_flops += count * u.forward.flops;
      w.bwd_flops += count * u.backward.flops + share * re_flops;
      w.wgrad += count * (u.backward.weight_gradient_s + accumulate_s[k]);
      // The shared experts' forward GEMMs are redone in the backward only under full recomputation (of the
      // recomputed layers) or by a recompute module holding them (moe, shared_experts: every layer).
      const double shared_redone = full_recompute ? share : shared_recomputed ? count : 0.0;
      w.fwd_shared += count * u.forward.shared_expert_s;
      w.bwd_shared += count * u.backward.shared_expert_s + shared_redone * u.forward.shared_expert_s;
      // §5.5.1: the kind's blocks by what they run; every block of a kind runs the same GEMMs (a window
      // changes none), so one block's sided seconds stand for all of them.
      const layer_makeup& mk = makeup_of(static_cast<layer_kind>(k));
      auto add_block = [&](tp_block_kind b, std::size_t i) {
        tp_block_caps& c = w.tp_blocks[static_cast<std::size_t>(b)];
        c.count += count;
        c.forward_column_s = u.forward.tp_column_gemm_s[i];
        c.forward_row_s = u.forward.tp_row_gemm_s[i];
        c.backward_column_s = u.backward.tp_column_gemm_s[i] + redone * u.forward.tp_column_gemm_s[i];
        c.backward_row_s = u.backward.tp_row_gemm_s[i] + redone * u.forward.tp_row_gemm_s[i];
      };
      if (mk.attention) add_block(tp_block_kind::attention, 0);
      if (mk.mamba) add_block(tp_block_kind::mamba, 0);
      if (mk.dense_mlp) add_block(tp_block_kind::mlp, 1);
      if (mk.moe) add_block(tp_block_kind::moe, 1);  // no sided GEMM: its collectives pair with nothing
    }
    w.fwd += layers * host_s;
    w.bwd += layers * host_s;
    if (tc.recompute == recompute_granularity::full) w.re += recomputed * host_s;
    return w;
  };
  // Layers whose forward is recomputed among `layers` of `chunks` model chunks: all with the uniform
  // method; with block the first N of each model chunk (Megatron applies --recompute-num-layers per
  // chunk; §3.4, §4.2.1).
  auto recomputed_of = [&](double layers, double chunks) {
    if (tc.recompute == recompute_granularity::full && tc.recompute_method_ == recompute_method::block) {
      return chunks * std::min(layers / chunks, static_cast<double>(tc.recompute_num_layers));
    }
    return layers;
  };
  // §5.4: the output layer's wgrad GEMMs --defer-embedding-wgrad-compute takes out of each micro-batch's
  // backward (d/m of them on average) to run after the last one (megatron/core/utils.py
  // drain_embedding_wgrad_compute).
  const std::int64_t micro = job.num_microbatches();
  const double deferred_share =
      tc.defer_embedding_wgrad ? static_cast<double>(tc.deferred_wgrad_microbatches(micro)) / static_cast<double>(micro) : 0.0;

  r.stages.clear();
  r.stages.reserve(layout.size());
  const double vpp = static_cast<double>(p.vpp);
  const stage_layout* previous = nullptr;
  for (const stage_layout& sl : layout) {
    // A stage of the same class as the one before (layers by kind, ends) does the same work: a deep
    // pipeline's middle stages are computed once.
    if (previous != nullptr && same_stage_class(*previous, sl)) {
      r.stages.push_back(r.stages.back());
      r.stages.back().stage = sl.stage;
      previous = &sl;
      continue;
    }
    previous = &sl;
    stage_compute sc;
    sc.stage = sl.stage;
    const double layers = static_cast<double>(sl.num_layers);
    const double recomputed = recomputed_of(layers, vpp);
    // The stage's layers by kind (§1.10); recomputation spread over them in proportion.
    const layers_work w = work_of(sl.kinds, layers, recomputed);
    double fwd = w.fwd, bwd = w.bwd, fwd_flops = w.fwd_flops, bwd_flops = w.bwd_flops, wgrad = w.wgrad;
    const double re = w.re;
    // With VPP the rank runs vpp chunks per micro-batch: times are per chunk, its mean chunk here (the
    // embedding and output sit on the first and last chunk: chunk_forward_scale gives each chunk its own,
    // §5.4).
    if (sl.has_embedding) {
      fwd += r.embedding.forward.total_s();
      bwd += r.embedding.backward.total_s();
    }
    if (sl.has_output) {
      fwd += r.output.forward.total_s();
      bwd += r.output.backward.total_s();
      fwd_flops += r.output.forward.flops;
      bwd_flops += r.output.backward.flops;
    }
    sc.num_layers = static_cast<std::int64_t>(std::llround(layers / vpp));
    sc.forward_s = fwd / vpp;
    sc.tp_blocks = w.tp_blocks;
    for (tp_block_caps& c : sc.tp_blocks) c.count /= vpp;
    sc.forward_shared_expert_s = w.fwd_shared / vpp;
    sc.backward_shared_expert_s = w.bwd_shared / vpp;
    sc.recompute_s = re / vpp;
    sc.recomputed_layers = tc.recompute == recompute_granularity::full ? recomputed / vpp : 0.0;
    if (sl.has_output) wgrad += r.output.backward.weight_gradient_s;
    // §5.4: with --defer-embedding-wgrad-compute the output layer's wgrad GEMMs of d of the m
    // micro-batches leave their backward (d/m of it per micro-batch on average) and run after the last
    // one (megatron/core/utils.py drain_embedding_wgrad_compute).
    if (sl.has_output && tc.defer_embedding_wgrad) {
      const double output_wgrad_s = r.output.backward.weight_gradient_s;
      bwd -= deferred_share * output_wgrad_s;
      wgrad -= deferred_share * output_wgrad_s;
      sc.drain_s = static_cast<double>(tc.deferred_wgrad_microbatches(micro)) * output_wgrad_s;
    }
    sc.backward_s = (bwd + re) / vpp;
    sc.backward_weight_s = wgrad / vpp;
    sc.forward_flops = fwd_flops / vpp;
    sc.backward_flops = bwd_flops / vpp;
    // Optimizer step of this rank's parameter shard (memory-bound; §5.5).
    const layer_shard held = holds.stage(sl);
    const double updated = static_cast<double>(held.dense) / dense_shards + static_cast<double>(held.expert) / expert_shards;
    sc.optimizer_s = memory_time_s(gpu, e, updated * opt_bytes_per_param, 8);
    r.stages.push_back(sc);
  }

  // §5.4: a rank's model chunks need not be alike (the embedding in the first rank's first chunk, the
  // output and loss in the last rank's last, an embedding/loss slot or a custom layout's own counts,
  // dense and MoE layers apart): each chunk's forward and backward relative to its rank's mean chunk,
  // the stages' per-chunk times. Empty when every rank's chunks are alike or there is one chunk.
  r.chunk_forward_scale.clear();
  r.chunk_backward_scale.clear();
  r.chunk_layer_share.clear();
  if (p.vpp > 1) {
    thread_local std::vector<chunk_layout> chunks;
    pipeline_chunks(job, chunks);
    const std::size_t n = chunks.size();
    r.chunk_forward_scale.resize(n);
    r.chunk_backward_scale.resize(n);
    r.chunk_layer_share.resize(n);
    thread_local std::vector<double> rank_fwd, rank_bwd, rank_layers;  // each rank's chunks together
    rank_fwd.assign(static_cast<std::size_t>(p.pp), 0.0);
    rank_bwd.assign(static_cast<std::size_t>(p.pp), 0.0);
    rank_layers.assign(static_cast<std::size_t>(p.pp), 0.0);
    for (std::size_t i = 0; i < n; ++i) {
      const chunk_layout& ch = chunks[i];
      const double layers = static_cast<double>(ch.num_layers);
      const layers_work w = work_of(ch.kinds, layers, recomputed_of(layers, 1.0));
      double fwd = w.fwd, bwd = w.bwd + w.re;
      if (ch.has_embedding) {
        fwd += r.embedding.forward.total_s();
        bwd += r.embedding.backward.total_s();
      }
      if (ch.has_output) {
        fwd += r.output.forward.total_s();
        bwd += r.output.backward.total_s() - deferred_share * r.output.backward.weight_gradient_s;
      }
      r.chunk_forward_scale[i] = fwd;
      r.chunk_backward_scale[i] = bwd;
      rank_fwd[static_cast<std::size_t>(ch.stage)] += fwd;
      rank_bwd[static_cast<std::size_t>(ch.stage)] += bwd;
      r.chunk_layer_share[i] = layers;
      rank_layers[static_cast<std::size_t>(ch.stage)] += layers;
    }
    bool alike = true;
    for (std::size_t i = 0; i < n; ++i) {
      const auto rank = static_cast<std::size_t>(chunks[i].stage);
      double& f = r.chunk_forward_scale[i];
      double& b = r.chunk_backward_scale[i];
      double& l = r.chunk_layer_share[i];
      f = rank_fwd[rank] > 0 ? f * vpp / rank_fwd[rank] : 1.0;
      b = rank_bwd[rank] > 0 ? b * vpp / rank_bwd[rank] : 1.0;
      l = rank_layers[rank] > 0 ? l * vpp / rank_layers[rank] : 1.0;
      alike = alike && std::fabs(f - 1.0) <= 1e-12 && std::fabs(b - 1.0) <= 1e-12;
    }
    if (alike) {
      r.chunk_forward_scale.clear();
      r.chunk_backward_scale.clear();
      r.chunk_layer_share.clear();
    }
  }

  // Whole-job FLOPs per iteration: every micro-batch of every pipeline, each DP replica (§5.7).
  const double microbatches = static_cast<double>(job.num_microbatches()) * p.dp * p.cp;
  double fwd_all = 0, bwd_all = 0;
  for (const stage_compute& sc : r.stages) {
    fwd_all += sc.forward_flops * vpp;
    bwd_all += sc.backward_flops * vpp;
  }
  // FLOPs above are per GPU (one TP shard); the job's total multiplies by TP.
  const double tp = static_cast<double>(p.tp);
  r.hardware_flops = (fwd_all + bwd_all) * microbatches * tp;
  // Model FLOPs: forward + backward (2 × forward), no recomputation.
  r.model_flops = 3.0 * fwd_all * microbatches * tp;
}

}  // namespace trainplan
