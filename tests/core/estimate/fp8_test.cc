// FP8 training (issue 9, part 1; docs/formulas.md §5.1.3): which GEMMs run at the FP8 rate, the cast
// passes, the FP8 weight copies and saved inputs, FP8 parameter all-gathers, and the bad input.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "args_test_support.h"
#include "trainplan/cli/args.h"
#include "trainplan/core/estimate/comm.h"
#include "trainplan/core/estimate/compute.h"
#include "trainplan/core/estimate/memory.h"
#include "trainplan/core/estimate/time.h"

namespace trainplan {
namespace {

using ::testing::HasSubstr;
using namespace args_testing;  // NOLINT(google-build-using-namespace): the shared helpers

const args_t kLlama70b = {"--model", "llama3-70b", "--cluster", "dgx-h100", "--num-gpus", "64", "--tp", "8",
                          "--pp", "2", "--sp", "--use-distributed-optimizer", "--gbs", "512"};

job_spec job_with(const args_t& more) { return parse(concat(kLlama70b, more)).job; }

TEST(Fp8, OnlyTheLinearLayersRunAtTheFp8Rate) {
  const job_spec bf16 = job_with({}), fp8 = job_with({"--fp8-format", "hybrid"});
  const compute_efficiency eff = effective_compute_efficiency(bf16.cluster.gpu);
  const unit_time a = layer_compute(bf16, eff, false), b = layer_compute(fp8, eff, false);
  // Same FLOPs; the GEMMs faster (H100: 1979 against 989 TFLOPs dense, §6.1, and FP8 tiles at 0.90× the
  // BF16 fraction, §5.6: 1.8× as measured, 1220 against 670 TFLOP/s held at 8192³), not quite that
  // (per-kernel overheads, the ramp); the attention core unchanged; the casts add memory-bound time.
  EXPECT_DOUBLE_EQ(a.forward.flops, b.forward.flops);
  EXPECT_LT(b.forward.gemm_s, a.forward.gemm_s / 1.5);
  EXPECT_GT(b.forward.gemm_s, a.forward.gemm_s / 1.8);
  EXPECT_DOUBLE_EQ(a.forward.attention_s, b.forward.attention_s);
  EXPECT_DOUBLE_EQ(a.backward.attention_s, b.backward.attention_s);
  EXPECT_GT(b.forward.memory_s, a.forward.memory_s);
  // §5.1.3: of the forward casts only the projection's input is a pass of its own (the norm writes QKV's
  // and fc1's inputs in FP8, the activation fc2's): T·(a·d/t) elements read at 2 bytes, written at 2.
  const gpu_spec& g = bf16.cluster.gpu;
  for (const named_gemm& gemm : layer_gemm_shapes(bf16, false)) {
    if (gemm.name != "attention_out") continue;
    const double bytes = static_cast<double>(gemm.shape.m) * static_cast<double>(gemm.shape.k) * (2 + 2);
    EXPECT_NEAR(b.forward.memory_s - a.forward.memory_s,
                bytes / (g.memory_bandwidth_bytes_per_s * eff.memory_bandwidth_fraction) + eff.kernel_overhead_s,
                1e-12);
  }
  // Current scaling (tensorwise): the projection's cast first reads its input for the amax and computes
  // the scale (2 kernels more, e bytes more), and the norm's and activation's casts become passes of their
  // own (QKV's, fc1's and fc2's inputs: e + 2 each). MXFP8: those passes, no amax read.
  const job_spec cs = job_with({"--fp8-format", "hybrid", "--fp8-recipe", "tensorwise"});
  const unit_time c = layer_compute(cs, eff, false);
  double proj = 0, fused = 0;
  for (const named_gemm& gemm : layer_gemm_shapes(bf16, false)) {
    const double elems = static_cast<double>(gemm.shape.m) * static_cast<double>(gemm.shape.k);
    if (gemm.name == "attention_out") proj = elems;
    if (gemm.name == "qkv" || gemm.name == "mlp_up" || gemm.name == "mlp_down") fused += elems;
  }
  ASSERT_GT(proj, 0);
  ASSERT_GT(fused, 0);
  const double per_byte = 1.0 / (g.memory_bandwidth_bytes_per_s * eff.memory_bandwidth_fraction);
  EXPECT_NEAR(c.forward.memory_s - b.forward.memory_s,
              proj * 2 * per_byte + 2 * eff.kernel_overhead_s + fused * (2 + 2) * per_byte + 3 * eff.kernel_overhead_s,
              1e-12);
  // The output layer (logits) and the loss stay in bf16.
  const compute_report ra = estimate_compute(bf16), rb = estimate_compute(fp8);
  EXPECT_DOUBLE_EQ(ra.output.forward.total_s(), rb.output.forward.total_s());
  // And the iteration is faster.
  EXPECT_LT(estimate_time(fp8).iteration_s, estimate_time(bf16).iteration_s);
}

TEST(Fp8, TheRouterStaysInBf16) {
  const args_t moe = {"--model", "mixtral-8x7b", "--cluster", "dgx-h100", "--num-gpus", "8", "--ep", "8"};
  args_t with = moe;
  with.insert(with.end(), {"--fp8-format", "e4m3"});
  const job_spec a = parse(moe).job, b = parse(with).job;
  const compute_efficiency eff = effective_compute_efficiency(a.cluster.gpu);
  // The forward GEMM time is the sum of its GEMMs: the router in bf16, every other one in FP8.
  double expected = 0;
  for (const named_gemm& g : layer_gemm_shapes(a, true)) {
    if (g.name == "logits") continue;  // the output layer's, not the layer's
    expected += estimate_gemm(a.cluster.gpu, eff, g.name == "router" ? dtype::bf16 : dtype::fp8, g.shape).time_s;
  }
  expected /= eff.sustained_clock_factor;  // in training, at the sustained clock (§5.6)
  const unit_time ua = layer_compute(a, eff, true), ub = layer_compute(b, eff, true);
  EXPECT_NEAR(ub.forward.gemm_s, expected, 1e-12);
  EXPECT_LT(ub.forward.gemm_s, ua.forward.gemm_s);
}

TEST(Fp8, WeightCopiesAndSavedInputs) {
  const job_spec bf16 = job_with({}), fp8 = job_with({"--fp8-format", "hybrid"});
  const memory_report a = estimate_memory(bf16), b = estimate_memory(fp8);
  // Transformer Engine's FP8 weight and its transpose: 2 bytes per linear parameter of the layers held.
  const rank_holdings holds = holdings_of(bf16, count_parameters(bf16.model, 8));
  const double layer_params = 40.0 * static_cast<double>(holds.dense_layer.total());
  EXPECT_NEAR(b.stages[1].weights_bytes - a.stages[1].weights_bytes, 2 * layer_params, 1);
  // The linear inputs saved for backward are FP8: QKV, fc1 and fc2 inputs, 1 byte in place of 2, per
  // token h/t (SP) + h/t + f/t. The projection's input was the flash output itself (one tensor, §3.4);
  // under FP8 its 1-byte cast is kept beside it: + q/t.
  const double h = 8192, q = 8192, f = 28672, t = 8, tokens = 8192;
  EXPECT_NEAR(a.layer_activations.total() - b.layer_activations.total(), tokens * (h / t + h / t + f / t - q / t), 1);
  // With --fp8-param-gather the FP8 parameter replaces the 16-bit copy: no extra weights, and the
  // distributed optimizer all-gathers 1 byte per parameter.
  const job_spec gather = job_with({"--fp8-format", "hybrid", "--fp8-param-gather"});
  EXPECT_DOUBLE_EQ(estimate_memory(gather).stages[1].weights_bytes, a.stages[1].weights_bytes);
  EXPECT_EQ(roles_of(gather.training).param_comm, dtype::fp8);
  const comm_report ca = summarize_comm(bf16), cg = summarize_comm(gather);
  EXPECT_LT(cg[parallel_dim::dp].time_per_iteration_s, ca[parallel_dim::dp].time_per_iteration_s);
}

// Issue 27: under FSDP (ZeRO-3) no whole weight stays on the GPU, so neither do its FP8 casts (torchao's
// Float8Linear casts the gathered weight each pass): the resident weights scale with 1/DP, as BF16's do,
// and only the gathered layers' FP8 weight and transpose (2 bytes per parameter) are added, as buffers.
TEST(Fp8, UnderFsdpTheCastsLiveOnlyWhileALayerIsGathered) {
  auto mem = [](const char* gpus, bool fp8) {
    std::vector<std::string> a = {"--model", "llama3-8b", "--cluster", "dgx-h100", "--num-gpus", gpus, "--framework", "fsdp",
                                  "--zero-stage", "3"};
    if (fp8) a.insert(a.end(), {"--fp8-format", "hybrid"});
    return estimate_memory(parse(a).job);
  };
  const memory_report b8 = mem("8", false), f8 = mem("8", true), f16 = mem("16", true);
  EXPECT_DOUBLE_EQ(f8.stages[0].weights_bytes, b8.stages[0].weights_bytes);
  EXPECT_DOUBLE_EQ(f16.stages[0].weights_bytes, f8.stages[0].weights_bytes / 2);  // sharded over DP
  const job_spec j = parse({"--model", "llama3-8b", "--cluster", "dgx-h100", "--num-gpus", "8", "--framework", "fsdp",
                            "--zero-stage", "3"}).job;
  const rank_holdings holds = holdings_of(j, count_parameters(j.model, 1));
  const double layer = static_cast<double>(holds.dense_layer.total());
  EXPECT_DOUBLE_EQ(f8.stages[0].buffers_bytes - b8.stages[0].buffers_bytes, 2.0 * (layer + layer));  // current + next unit
  // Gathered in FP8 (--fp8-param-gather, torchao's float8 all-gather) the gathered units hold 1 byte a weight
  // and no cast: against bf16's 2 bytes, 1 byte a parameter less for the unit computed (the root stage's
  // prefetched unit is held in the backward's phase only, §3.7).
  std::vector<std::string> g = {"--model", "llama3-8b", "--cluster", "dgx-h100", "--num-gpus", "8", "--framework", "fsdp",
                                "--zero-stage", "3", "--fp8-format", "hybrid", "--fp8-param-gather"};
  const memory_report g8 = estimate_memory(parse(g).job);
  EXPECT_DOUBLE_EQ(b8.stages[0].buffers_bytes - g8.stages[0].buffers_bytes, layer);
}

TEST(Fp8, BadInputNamesTheFlagAndTheGpu) {
  EXPECT_EQ(error_of({"--model", "llama3-8b", "--cluster", "dgx-a100", "--num-gpus", "8", "--fp8-format", "hybrid"}),
            "--fp8-format hybrid needs FP8 tensor cores; a100-sxm4-80gb has none (Hopper and later do: --gpu "
            "h100-sxm5-80gb, h200-sxm-141gb, b200-sxm-180gb)");
  EXPECT_THAT(error_of({"--model", "llama3-8b", "--cluster", "dgx-h100", "--num-gpus", "8", "--fp8-format", "hybrid",
                        "--fp8-recipe", "mxfp8"}),
              HasSubstr("--fp8-recipe mxfp8 needs Blackwell's block-scaled tensor cores; h100-sxm5-80gb has none"));
  EXPECT_EQ(error_of({"--model", "llama3-8b", "--cluster", "dgx-b200", "--num-gpus", "8", "--fp8-format", "hybrid",
                      "--fp8-recipe", "mxfp8"}),
            "");
  EXPECT_EQ(error_of({"--model", "llama3-8b", "--cluster", "dgx-h100", "--num-gpus", "8", "--fp8-param-gather"}),
            "--fp8-param-gather needs --fp8-format (e4m3 or hybrid)");
  EXPECT_THAT(error_of({"--model", "llama3-8b", "--cluster", "dgx-h100", "--num-gpus", "8", "--fp8-format", "e4m3",
                        "--fp8-param-gather"}),
              HasSubstr("--fp8-param-gather is only supported with --use-distributed-optimizer"));
  EXPECT_THAT(error_of({"--model", "llama3-8b", "--cluster", "dgx-h100", "--num-gpus", "8", "--fp8-format", "e5m2"}),
              HasSubstr("--fp8-format"));
  // torchtitan's float8 is torchao's dynamic tensorwise scaling: the fsdp default, and the only recipe it takes.
  EXPECT_EQ(parse({"--model", "llama3-8b", "--cluster", "dgx-h100", "--num-gpus", "8", "--framework", "fsdp", "--bf16",
                   "--fp8-format", "hybrid"}).job.training.fp8_scaling,
            fp8_recipe::tensorwise);
  EXPECT_EQ(parse({"--model", "llama3-8b", "--cluster", "dgx-h100", "--num-gpus", "8", "--bf16", "--fp8-format",
                   "hybrid"}).job.training.fp8_scaling,
            fp8_recipe::delayed);
  EXPECT_EQ(error_of({"--model", "llama3-8b", "--cluster", "dgx-h100", "--num-gpus", "8", "--framework", "fsdp", "--bf16",
                      "--fp8-format", "hybrid", "--fp8-recipe", "delayed"}),
            "--fp8-recipe delayed is not torchtitan's: --framework fsdp runs torchao's float8 with dynamic tensorwise "
            "scales (--fp8-recipe tensorwise, its default)");
  // DeepSpeed has no FP8 parameters (it was accepted at ZeRO 1-3 until 2026-12-02, and its gathers priced at
  // 1 byte an element).
  EXPECT_EQ(error_of({"--model", "llama3-8b", "--cluster", "dgx-h100", "--num-gpus", "8", "--framework", "deepspeed",
                      "--zero-stage", "3", "--bf16", "--fp8-format", "hybrid", "--fp8-param-gather"}),
            "--fp8-param-gather is Megatron-Core's (--use-distributed-optimizer, --use-megatron-fsdp) and torchao's "
            "(--framework fsdp); --framework deepspeed gathers its parameters in 16 bits");
}

// §4.2.4: torchao's FSDP float8 all-gather scales each weight by its whole amax. Without precomputed scales
// every Float8Linear's fsdp_pre_all_gather all-reduces one float before each gather: Llama-3 8B's 32 layers
// × 7 linears (wq, wk, wv, wo, w1, w3, w2), per micro-batch, before the forward's and the backward's gathers.
// torchtitan's precompute_float8_dynamic_scale_for_fsdp makes that one all-reduce of 224 floats after the
// step, whose foreach amax reads the fp32 shards once more (4 bytes a parameter updated).
TEST(Fp8, FsdpFloat8GathersAllReduceEachWeightsAmaxUnlessTheScalesArePrecomputed) {
  const args_t base = {"--model", "llama3-8b", "--cluster", "dgx-h100", "--num-gpus", "8", "--framework", "fsdp",
                       "--zero-stage", "3", "--bf16", "--fp8-format", "hybrid", "--fp8-recipe", "tensorwise",
                       "--fp8-param-gather", "--mbs", "1", "--gbs", "16"};
  auto rows = [](const comm_report& c, std::string_view what) {
    std::vector<comm_collective> found;
    for (const comm_collective& col : c[parallel_dim::dp].collectives) {
      if (col.what.find(what) != std::string_view::npos) found.push_back(col);
    }
    return found;
  };
  const parsed_job each = parse(base);
  ASSERT_EQ(each.job.num_microbatches(), 2);
  const std::vector<comm_collective> per_weight = rows(summarize_comm(each.job), "amax all-reduce before");
  ASSERT_EQ(per_weight.size(), 2u);
  for (const comm_collective& col : per_weight) {
    EXPECT_EQ(col.kind, collective_kind::all_reduce);
    EXPECT_DOUBLE_EQ(col.bytes_per_call, 4.0);
    EXPECT_EQ(col.calls_per_iteration, 32 * 7 * 2);
  }
  const parsed_job pre = parse(concat(base, {"--fp8-precompute-scale"}));
  const comm_report cp = summarize_comm(pre.job);
  EXPECT_TRUE(rows(cp, "amax all-reduce before").empty());
  const std::vector<comm_collective> once = rows(cp, "precomputed scales");
  ASSERT_EQ(once.size(), 1u);
  EXPECT_EQ(once[0].calls_per_iteration, 1);
  EXPECT_DOUBLE_EQ(once[0].bytes_per_call, 4.0 * 32 * 7);
  EXPECT_DOUBLE_EQ(optimizer_step_bytes_per_parameter(pre.job) - optimizer_step_bytes_per_parameter(each.job), 4.0);
  // bf16 gathers (no float8 all-gather) scale nothing; the flag is torchtitan's and tensorwise's.
  args_t plain = base;
  plain.erase(std::find(plain.begin(), plain.end(), "--fp8-param-gather"));
  EXPECT_TRUE(rows(summarize_comm(parse(plain).job), "amax").empty());
  EXPECT_EQ(error_of(concat(plain, {"--fp8-precompute-scale"})),
            "--fp8-precompute-scale needs --fp8-param-gather with --zero-stage 2 or 3 (FSDP's float8 all-gather, whose "
            "scales it precomputes)");
  EXPECT_EQ(error_of({"--model", "llama3-8b", "--cluster", "dgx-h100", "--num-gpus", "8", "--bf16", "--fp8-format",
                      "hybrid", "--fp8-recipe", "tensorwise", "--fp8-precompute-scale"}),
            "--fp8-precompute-scale is torchtitan's (torchao under FSDP2), modelled with --framework fsdp");
  EXPECT_EQ(error_of(concat(base, {"--fp8-recipe", "delayed", "--fp8-precompute-scale"})),
            "--fp8-precompute-scale needs --fp8-recipe tensorwise (torchao's dynamic tensorwise scales)");
}

// §5.1.3, §3.4: torchtitan's float8 converter swaps nn.Linear modules alone; its routed experts are grouped
// parameters (quantize.grouped_mm's converter, refused), so under --framework fsdp they stay 16-bit while
// Transformer Engine (Megatron) runs them in FP8. Two Qwen3-30B-A3B jobs differing only in the experts'
// width: the expert GEMMs' share of the difference runs at the BF16 rate under fsdp whatever --fp8-format
// says, and the experts' saved inputs keep 2 bytes.
TEST(Fp8, TorchaosFloat8LeavesTheRoutedExpertsIn16Bits) {
  auto moe = [](const char* framework, bool fp8, const char* expert_ffn) {
    args_t a = {"--model", "qwen3-30b-a3b", "--cluster", "dgx-h100", "--num-gpus", "8", "--framework", framework,
                "--bf16", "--moe-ffn-hidden-size", expert_ffn, "--seq-length", "4096"};
    if (std::string_view(framework) == "fsdp") a.insert(a.end(), {"--zero-stage", "3"});
    if (std::string_view(framework) == "megatron") a.insert(a.end(), {"--ep", "8"});
    if (fp8) a.insert(a.end(), {"--fp8-format", "hybrid", "--fp8-recipe", "tensorwise"});
    const parsed_job pj = parse(a);
    const unit_time u = layer_compute(pj.job, effective_compute_efficiency(pj.job.cluster.gpu), layer_kind::moe);
    return std::pair{u.forward.gemm_s + u.backward.gemm_s, layer_activations(pj.job, layer_kind::moe).total()};
  };
  for (const char* fw : {"fsdp", "megatron"}) {
    const auto [bf_narrow, bf_narrow_act] = moe(fw, false, "768");
    const auto [bf_wide, bf_wide_act] = moe(fw, false, "1536");
    const auto [f8_narrow, f8_narrow_act] = moe(fw, true, "768");
    const auto [f8_wide, f8_wide_act] = moe(fw, true, "1536");
    if (std::string_view(fw) == "fsdp") {
      EXPECT_NEAR(f8_wide - f8_narrow, bf_wide - bf_narrow, 1e-12 * bf_wide);
      EXPECT_NEAR(f8_wide_act - f8_narrow_act, bf_wide_act - bf_narrow_act, 1e-6 * bf_wide_act);
    } else {
      EXPECT_LT(f8_wide - f8_narrow, 0.8 * (bf_wide - bf_narrow));
      EXPECT_LT(f8_wide_act - f8_narrow_act, bf_wide_act - bf_narrow_act);
    }
  }
  // Gathered in FP8 (torchao's float8 all-gather) a unit's attention weights take 1 byte, its routed experts
  // still 2: one stage holding the root, so the computed unit alone is in the buffers (§3.7).
  const args_t base = {"--model", "qwen3-30b-a3b", "--cluster", "dgx-h100", "--num-gpus", "8", "--framework", "fsdp",
                       "--zero-stage", "3", "--bf16", "--seq-length", "4096"};
  const parsed_job bf = parse(base);
  const parsed_job gathered = parse(concat(base, {"--fp8-format", "hybrid", "--fp8-recipe", "tensorwise", "--fp8-param-gather"}));
  const rank_holdings holds = holdings_of(bf.job, count_parameters(bf.job.model, 1));
  EXPECT_DOUBLE_EQ(estimate_memory(bf.job).stages[0].buffers_bytes - estimate_memory(gathered.job).stages[0].buffers_bytes,
                   static_cast<double>(holds.moe_layer.dense));
}

// §5.1.3: torchao's Float8Linear casts the gathered bf16 weight in every forward (its amax, then the cast:
// 2 + 2 + 1 bytes an element, 2 kernels) and the backward's grad_input takes it transposed (a 1-byte copy:
// 2 bytes, 1 kernel); without checkpointing the backward recasts it too. Transformer Engine casts once an
// iteration, and FSDP's float8 all-gather casts the shard before the gather. Llama-3 8B: 4,096 × (4,096 +
// 1,024 + 1,024) + 4,096² + 3 × 4,096 × 14,336 weights a layer in 4 GEMMs.
TEST(Fp8, TorchaosFloat8CastsEachGatheredWeightEveryPass) {
  auto unit = [](const args_t& extra) {
    const parsed_job pj = parse(concat({"--model", "llama3-8b", "--cluster", "dgx-h100", "--num-gpus", "8", "--framework",
                                        "fsdp", "--zero-stage", "3", "--bf16", "--fp8-format", "hybrid", "--fp8-recipe",
                                        "tensorwise"},
                                       extra));
    return layer_compute(pj.job, effective_compute_efficiency(pj.job.cluster.gpu), layer_kind::dense);
  };
  const parsed_job any = parse({"--model", "llama3-8b", "--cluster", "dgx-h100", "--num-gpus", "8"});
  const compute_efficiency eff = effective_compute_efficiency(any.job.cluster.gpu);
  const double bw = any.job.cluster.gpu.memory_bandwidth_bytes_per_s * eff.memory_bandwidth_fraction;
  const double w = 4096.0 * (4096 + 1024 + 1024) + 4096.0 * 4096 + 3 * 4096.0 * 14336;
  const unit_time cast = unit({}), gathered = unit({"--fp8-param-gather"});
  EXPECT_NEAR(cast.forward.memory_s - gathered.forward.memory_s, w * 5 / bw + 8 * eff.kernel_overhead_s, 1e-12);
  EXPECT_NEAR(cast.backward.memory_s - gathered.backward.memory_s, w * (2 + 5) / bw + 12 * eff.kernel_overhead_s, 1e-12);
  const unit_time ac = unit({"--recompute-granularity", "full"});  // the recomputed forward recasts it
  EXPECT_NEAR(ac.backward.memory_s - gathered.backward.memory_s, w * 2 / bw + 4 * eff.kernel_overhead_s, 1e-12);
}

}  // namespace
}  // namespace trainplan
