// Memory model unit cases, hand-computed from docs/formulas.md §3.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "trainplan/cli/args.h"
#include "trainplan/cli/cli.h"
#include "trainplan/core/base/error.h"
#include "trainplan/core/estimate/memory.h"

namespace trainplan {
namespace {

job_spec job_of(std::vector<std::string> args) { return parse_job_args(args).job; }

// GPT-style model of Korthikanti et al. 2022: GELU 4h MLP, dropout, no flash attention (2022's Megatron-LM
// modules: --transformer-impl local).
std::vector<std::string> gpt(std::vector<std::string> extra) {
  std::vector<std::string> a = {"--model", "megatron-22b", "--num-gpus", "8", "--mbs", "1", "--fp16",
                                "--transformer-impl", "local"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

// §3.4, §4.2.1: torchtitan's sequence-parallel blocks keep the all-gathered QKV and w1/w3 input (every
// token), not Megatron's shard. Llama-3-70B at TP 8 with SP, 8,192 tokens, bf16, no recomputation: the
// attention block keeps its gathered input (e·h), Q, K and V (e·(q + k + v)/t), FlashAttention-2's output,
// its fp32 log-sum-exp and the projection's rearranged input; the MLP its gathered input and the eager
// SwiGLU's w1 and w3 outputs, silu's output and w2's input ((3e + e)·f/t).
TEST(MemoryActivations, TorchtitansSequenceParallelBlocksKeepTheGatheredInput) {
  const job_spec j = job_of({"--model", "llama3-70b", "--cluster", "dgx-h100", "--num-gpus", "64", "--framework",
                             "fsdp", "--zero-stage", "3", "--tp", "8", "--sequence-parallel", "--bf16"});
  const double tokens = 8192, h = 8192, q = 8192, kv = 1024, heads = 64, f = 28672, t = 8, e = 2;
  const layer_activation_bytes l = layer_activations(j, false);
  EXPECT_DOUBLE_EQ(l.attention, tokens * (e * h + e * (q + 2 * kv) / t + e * q / t + 4 * heads / t + e * q / t));
  EXPECT_DOUBLE_EQ(l.mlp, tokens * (e * h + 4 * e * f / t));
  EXPECT_DOUBLE_EQ(l.norms, tokens * 2 * e * h / t);  // the norms' inputs stay sharded
  // Megatron-Core keeps its shard of each input (e·h/t) and re-gathers it for the weight gradient.
  const job_spec mc = job_of({"--model", "llama3-70b", "--cluster", "dgx-h100", "--num-gpus", "64", "--tp", "8",
                              "--sequence-parallel", "--bf16"});
  const layer_activation_bytes ml = layer_activations(mc, false);
  EXPECT_DOUBLE_EQ(ml.attention - (l.attention - tokens * e * h * (1 - 1 / t)),
                   -tokens * e * q / t);  // Megatron's flash output is the projection's input: one tensor
}

TEST(MemoryActivations, KorthikantiNoParallelism) {
  const job_spec j = job_of(gpt({"--tp", "1", "--dp", "1", "--num-gpus", "1"}));
  const double s = 2048, b = 1, h = 6144, a = 64;
  // Table 2: s·b·h·(34 + 5·a·s/h) bytes per layer.
  EXPECT_DOUBLE_EQ(layer_activations(j, false).total(), s * b * h * (34 + 5 * a * s / h));
}

TEST(MemoryActivations, KorthikantiTensorParallel) {
  const job_spec j = job_of(gpt({"--tp", "8"}));
  const double s = 2048, b = 1, h = 6144, a = 64, t = 8;
  EXPECT_DOUBLE_EQ(layer_activations(j, false).total(), s * b * h * (10 + 24 / t + 5 * a * s / (h * t)));
}

TEST(MemoryActivations, KorthikantiSequenceParallelAndSelective) {
  const double s = 2048, b = 1, h = 6144, a = 64, t = 8;
  const job_spec sp = job_of(gpt({"--tp", "8", "--sequence-parallel"}));
  EXPECT_DOUBLE_EQ(layer_activations(sp, false).total(), s * b * h * (34 + 5 * a * s / h) / t);
  const job_spec sel = job_of(gpt({"--tp", "8", "--sequence-parallel", "--recompute-granularity", "selective"}));
  EXPECT_DOUBLE_EQ(layer_activations(sel, false).total(), s * b * h * 34 / t);
}

TEST(MemoryActivations, FlashSwigluGqaMegatronCoreAndLegacy) {
  // Llama-3-8B shapes: flash keeps Q, K, V (GQA width), O and the fp32 LSE; no dropout. Megatron-Core:
  // O is also the projection's input, one tensor, and the fused bias-SwiGLU (its default) keeps its 2f
  // input and fc2's f input, 3f·2 bytes. Per token: 4h (norms) + 2h + 2(q+2kv) + 2q + 4a + 2h + 6f. Legacy
  // Megatron rearranges O into a second tensor (+ 2q) and runs SwiGLU unfused, silu's output too (+ 2f).
  const std::vector<std::string> llama = {"--model", "llama3-8b", "--num-gpus", "1", "--use-flash-attn", "--seq-length", "4096"};
  const job_spec core = job_of(llama);
  std::vector<std::string> legacy_args = llama;
  legacy_args.push_back("--use-legacy-models");
  const job_spec legacy = job_of(legacy_args);
  const double h = 4096, q = 4096, kv = 1024, f = 14336, a = 32, tokens = 4096;
  const double per_token = 4 * h + 2 * h + 2 * (q + 2 * kv) + 2 * q + 4 * a + 2 * h + 6 * f;
  EXPECT_DOUBLE_EQ(layer_activations(core, false).total(), per_token * tokens);
  EXPECT_DOUBLE_EQ(layer_activations(legacy, false).total(), (per_token + 2 * q + 2 * f) * tokens);
  std::vector<std::string> unfused_args = llama;
  unfused_args.push_back("--no-bias-swiglu-fusion");
  EXPECT_DOUBLE_EQ(layer_activations(job_of(unfused_args), false).total(), (per_token + 2 * f) * tokens);
  // A clamp (--activation-func-clamp-value): the unfused GLU also saves its clamped gate (+2f); the fused
  // kernel clamps in place.
  unfused_args.insert(unfused_args.end(), {"--activation-func-clamp-value", "7"});
  EXPECT_DOUBLE_EQ(layer_activations(job_of(unfused_args), false).total(), (per_token + 4 * f) * tokens);
  std::vector<std::string> fused_clamped = llama;
  fused_clamped.insert(fused_clamped.end(), {"--activation-func-clamp-value", "7"});
  EXPECT_DOUBLE_EQ(layer_activations(job_of(fused_clamped), false).total(), per_token * tokens);
  // Under FP8 Transformer Engine saves 1-byte casts: QKV's input (h instead of 2h), and the projection's
  // input beside O (+q).
  std::vector<std::string> fp8_args = llama;
  fp8_args.insert(fp8_args.end(), {"--fp8-format", "hybrid", "--cluster", "dgx-h100"});
  EXPECT_DOUBLE_EQ(layer_activations(job_of(fp8_args), false).attention,
                   layer_activations(core, false).attention + (-h + q) * tokens);
}

TEST(MemoryStates, PrecisionAwareOptimizerBytesPerParameter) {
  // Megatron-Core's --use-precision-aware-optimizer (issue 27): TE's FusedAdam keeps a bf16 weight's fp32
  // master as its 16-bit remainder (2 bytes), the moments in their own dtypes; --main-grads-dtype bf16 is
  // a bf16 gradient buffer. Per parameter with the distributed optimizer over d = 8, bf16 weights:
  const std::vector<std::string> base = {"--model", "llama2-7b", "--num-gpus", "8", "--bf16", "--use-distributed-optimizer",
                                         "--use-precision-aware-optimizer"};
  auto states = [&](std::vector<std::string> more) {
    std::vector<std::string> a = base;
    a.insert(a.end(), more.begin(), more.end());
    const memory_report r = estimate_memory(job_of(a));
    return (r.stages[0].weights_bytes + r.stages[0].gradients_bytes + r.stages[0].optimizer_bytes) /
           static_cast<double>(r.stages[0].parameters);
  };
  EXPECT_DOUBLE_EQ(states({}), 2 + 4 + (2 + 4 + 4) / 8.0);                                  // remainders, fp32 m, v
  EXPECT_DOUBLE_EQ(states({"--exp-avg-dtype", "bf16", "--exp-avg-sq-dtype", "bf16"}), 2 + 4 + (2 + 2 + 2) / 8.0);
  EXPECT_DOUBLE_EQ(states({"--main-params-dtype", "fp16", "--exp-avg-dtype", "fp8", "--exp-avg-sq-dtype", "fp8"}),
                   2 + 4 + (2 + 1 + 1) / 8.0);
  EXPECT_DOUBLE_EQ(states({"--main-grads-dtype", "bf16"}), 2 + 2 + (2 + 4 + 4) / 8.0);      // bf16 gradient buffer
  // FP8 with current scaling and an fp32 master: Megatron-Core keeps the master itself, in fp32
  // (optimizer_config.py use_precision_aware_optimizer_no_fp8_or_ds_fp8 is false).
  const memory_report cs = estimate_memory(job_of({"--model", "llama2-7b", "--num-gpus", "8", "--bf16", "--cluster", "dgx-h100",
                                                   "--use-distributed-optimizer", "--use-precision-aware-optimizer",
                                                   "--fp8-format", "hybrid", "--fp8-recipe", "tensorwise"}));
  EXPECT_DOUBLE_EQ(cs.stages[0].optimizer_bytes / static_cast<double>(cs.stages[0].parameters), (4 + 4 + 4) / 8.0);
  // Megatron-Core's own checks, by flag name.
  auto refused = [&](std::vector<std::string> a, const std::string& message) {
    try {
      parse_job_args(a);
      ADD_FAILURE() << "accepted: " << message;
    } catch (const input_error& e) {
      EXPECT_THAT(cli_message(e), ::testing::HasSubstr(message));
    }
  };
  refused({"--model", "llama2-7b", "--num-gpus", "8", "--use-distributed-optimizer", "--exp-avg-dtype", "bf16"},
          "--exp-avg-dtype can only be fp32 without --use-precision-aware-optimizer");
  refused({"--model", "llama2-7b", "--num-gpus", "8", "--use-precision-aware-optimizer"},
          "--use-precision-aware-optimizer is only supported with --use-distributed-optimizer");
  refused({"--model", "llama2-7b", "--num-gpus", "8", "--framework", "fsdp", "--zero-stage", "3", "--use-precision-aware-optimizer"},
          "--use-precision-aware-optimizer is Megatron-Core's");
  refused({"--model", "llama2-7b", "--num-gpus", "8", "--use-distributed-optimizer", "--use-precision-aware-optimizer",
           "--main-grads-dtype", "bf16", "--accumulate-allreduce-grads-in-fp32"},
          "--main-grads-dtype bf16 contradicts --accumulate-allreduce-grads-in-fp32");
}

TEST(MemoryStates, MegatronBytesPerParameter) {
  // 18 bytes per parameter without the distributed optimizer, 6 + 12/d with it (bf16, fp32 grads).
  const job_spec plain = job_of({"--model", "llama2-7b", "--num-gpus", "8", "--bf16"});
  const memory_report r = estimate_memory(plain);
  const double p = static_cast<double>(r.stages[0].parameters);
  EXPECT_DOUBLE_EQ(r.stages[0].weights_bytes + r.stages[0].gradients_bytes + r.stages[0].optimizer_bytes, 18 * p);
  const job_spec dist = job_of({"--model", "llama2-7b", "--num-gpus", "8", "--bf16", "--use-distributed-optimizer"});
  const memory_report d = estimate_memory(dist);
  EXPECT_DOUBLE_EQ(d.stages[0].weights_bytes + d.stages[0].gradients_bytes + d.stages[0].optimizer_bytes,
                   (6 + 12.0 / 8) * p);
  // fp16 keeps 16-bit main gradients unless asked: 16 bytes.
  const memory_report f = estimate_memory(job_of({"--model", "llama2-7b", "--num-gpus", "8", "--fp16"}));
  EXPECT_DOUBLE_EQ(f.stages[0].weights_bytes + f.stages[0].gradients_bytes + f.stages[0].optimizer_bytes, 16 * p);
  // --grad-reduce-in-bf16 (arguments.py: accumulate_allreduce_grads_in_fp32 = False): a bf16 gradient
  // buffer, 2 bytes per parameter, so 4 + 12/d with the distributed optimizer (issue 27).
  const job_spec bf16_grads =
      job_of({"--model", "llama2-7b", "--num-gpus", "8", "--bf16", "--use-distributed-optimizer", "--grad-reduce-in-bf16"});
  const memory_report g = estimate_memory(bf16_grads);
  EXPECT_DOUBLE_EQ(g.stages[0].gradients_bytes, 2 * p);
  EXPECT_DOUBLE_EQ(g.stages[0].weights_bytes + g.stages[0].gradients_bytes + g.stages[0].optimizer_bytes, (4 + 12.0 / 8) * p);
  EXPECT_EQ(bf16_grads.resolved.roles.grad_comm, dtype::bf16);  // the reduce-scatter moves half the bytes
  EXPECT_EQ(dist.resolved.roles.grad_comm, dtype::fp32);
}

TEST(MemoryStates, GradReduceInBf16IsMegatronsAndBf16s) {
  EXPECT_THROW(job_of({"--model", "llama2-7b", "--num-gpus", "8", "--fp16", "--grad-reduce-in-bf16"}), input_error);
  EXPECT_THROW(job_of({"--model", "llama2-7b", "--num-gpus", "8", "--framework", "fsdp", "--grad-reduce-in-bf16"}), input_error);
  EXPECT_THROW(job_of({"--model", "llama2-7b", "--num-gpus", "8", "--grad-reduce-in-bf16", "--accumulate-allreduce-grads-in-fp32"}),
               input_error);
}

TEST(MemoryStates, DeepSpeedEstimators) {
  const std::vector<std::string> base = {"--model", "llama2-7b", "--num-gpus", "16", "--framework", "deepspeed", "--fp16"};
  auto states = [&](const char* stage) {
    std::vector<std::string> a = base;
    a.insert(a.end(), {"--zero-stage", stage});
    const memory_report r = estimate_memory(job_of(a));
    const auto& s = r.stages[0];
    return (s.weights_bytes + s.gradients_bytes + s.optimizer_bytes) / static_cast<double>(s.parameters);
  };
  EXPECT_DOUBLE_EQ(states("0"), 16);              // 2 + 2 + 12
  EXPECT_DOUBLE_EQ(states("1"), 4 + 16.0 / 16);   // 2 + 2 + (4 + 12)/N
  EXPECT_DOUBLE_EQ(states("2"), 2 + 18.0 / 16);   // estimate_zero2_model_states_mem_needs
  EXPECT_DOUBLE_EQ(states("3"), 18.0 / 16);       // estimate_zero3_model_states_mem_needs (+ live params)
  std::vector<std::string> a = base;
  a.insert(a.end(), {"--zero-stage", "3"});
  const memory_report z3 = estimate_memory(job_of(a));
  EXPECT_GT(z3.stages[0].buffers_bytes, 0);
}

TEST(MemoryStates, EveryFrameworkAndStageRow) {
  // The (framework, ZeRO stage) table of bytes per parameter held, bf16 on 16 GPUs (D = 16).
  auto states = [](const std::vector<std::string>& extra) {
    std::vector<std::string> a = {"--model", "llama2-7b", "--num-gpus", "16"};
    a.insert(a.end(), extra.begin(), extra.end());
    if (std::find(a.begin(), a.end(), "--fp16") == a.end()) a.push_back("--bf16");
    const memory_report r = estimate_memory(job_of(a));
    const auto& s = r.stages[0];
    return (s.weights_bytes + s.gradients_bytes + s.optimizer_bytes) / static_cast<double>(s.parameters);
  };
  // DeepSpeed's BF16_Optimizer: 16-bit grads + a full fp32 accumulation buffer, not sharded; the fp32
  // master and moments partitioned over DP at stage 0 as at stage 1 (bf16_optimizer.py
  // _setup_for_real_optimizer: partition_count = the DP world size).
  EXPECT_DOUBLE_EQ(states({"--framework", "deepspeed", "--zero-stage", "0"}), 2 + 6 + 12.0 / 16);
  EXPECT_DOUBLE_EQ(states({"--framework", "deepspeed", "--zero-stage", "1"}), 2 + 6 + 12.0 / 16);
  // fp16 at stage 0 is FP16_Optimizer: nothing sharded.
  EXPECT_DOUBLE_EQ(states({"--framework", "deepspeed", "--zero-stage", "0", "--fp16"}), 2 + 2 + 12);
  // FSDP: the fp32 sharded FlatParameter is the master; SHARD_GRAD_OP keeps the 16-bit parameters.
  EXPECT_DOUBLE_EQ(states({"--framework", "fsdp", "--zero-stage", "0"}), (4 + 2) + 4 + 8);
  EXPECT_DOUBLE_EQ(states({"--framework", "fsdp", "--zero-stage", "2"}), 2 + (4 + 4 + 8) / 16.0);
  EXPECT_DOUBLE_EQ(states({"--framework", "fsdp", "--zero-stage", "3"}), (4 + 4 + 8) / 16.0);
}

TEST(MemoryStates, OptimizerOffloadMovesStatesToCpu) {
  const memory_report r = estimate_memory(job_of({"--model", "llama2-7b", "--num-gpus", "8", "--framework", "deepspeed",
                                                  "--zero-stage", "2", "--offload-optimizer"}));
  EXPECT_EQ(r.stages[0].optimizer_bytes, 0);
  EXPECT_EQ(r.stages[0].gradients_bytes, 0);  // estimate_zero2 with offload: 2Ψ on the GPU
  EXPECT_GT(r.stages[0].offloaded_bytes, 0);
}

TEST(MemoryPipeline, OneFOneBInFlight) {
  // 1F1B: stage r holds min(p − r, m) micro-batches; the first stage holds the most.
  const memory_report r = estimate_memory(job_of({"--model", "llama2-13b", "--tp", "2", "--pp", "4", "--num-gpus", "16",
                                                  "--gbs", "64"}));
  ASSERT_EQ(r.stages.size(), 4u);
  for (std::int64_t s = 0; s < 4; ++s) EXPECT_EQ(r.stages[s].microbatches_in_flight, 4 - s);
  EXPECT_GT(r.stages[0].activations_bytes, r.stages[1].activations_bytes);
  // Fewer micro-batches than stages: capped by m.
  const memory_report few = estimate_memory(job_of({"--model", "llama2-13b", "--tp", "2", "--pp", "4", "--num-gpus", "16",
                                                    "--gbs", "4"}));
  EXPECT_EQ(few.stages[0].microbatches_in_flight, 2);
}

TEST(MemoryPipeline, InterleavingHoldsMoreOnTheFirstStage) {
  const std::vector<std::string> base = {"--model", "llama2-70b", "--tp", "8", "--pp", "4", "--num-gpus", "64",
                                         "--gbs", "64", "--sequence-parallel", "--use-flash-attn"};
  const memory_report plain = estimate_memory(job_of(base));
  std::vector<std::string> v = base;
  v.insert(v.end(), {"--num-layers-per-virtual-pipeline-stage", "5"});
  const memory_report inter = estimate_memory(job_of(v));
  // (p−1)·2 + (v−1)·p + 1 = 6 + 12 + 1 = 19 chunks of 5 layers versus 4 micro-batches of 20 layers.
  const double ratio = inter.stages[0].activations_bytes / plain.stages[0].activations_bytes;
  EXPECT_NEAR(ratio, 19.0 * 5 / (4 * 20), 0.02);
}

TEST(MemoryPipeline, EmbeddingAsStage) {
  const job_spec j = parse_job_args({"--preset", "bloom-176b-production"}).job;
  const auto layout = pipeline_layout(j);
  EXPECT_EQ(layout.front().num_layers, 5);
  EXPECT_EQ(layout[1].num_layers, 6);
  EXPECT_EQ(layout.back().num_layers, 5);
}

// §3.7, issue 27: FSDP2 as torchtitan applies it keeps the root unit (embeddings, final norm, output
// layer) gathered from the forward to the end of the backward (PyTorch's FSDPState._lazy_init: the root's
// post_forward_mesh_info = None) and the last block too (torchtitan apply_fsdp); at the loss nothing else is
// gathered. A block's backward adds the prefetched block, its unsharded gradient and the output layer's
// unsharded gradient, held until the root's post-backward.
TEST(MemoryBuffers, Fsdp2KeepsTheRootAndTheLastBlockGatheredAtTheLoss) {
  const std::vector<std::string> a = {"--model", "llama3-8b", "--cluster", "dgx-h100", "--num-gpus", "8",
                                      "--framework", "fsdp", "--zero-stage", "3", "--seq-length", "8192", "--mbs", "2",
                                      "--gbs", "16", "--recompute-granularity", "op"};
  const job_spec j = job_of(a);
  const rank_holdings holds = holdings_of(j, count_parameters(j.model, 1));
  const double embedding = 128256.0 * 4096, output = 128256.0 * 4096 + 4096, block = 218112000;
  EXPECT_EQ(static_cast<double>(holds.embedding), embedding);
  EXPECT_EQ(static_cast<double>(holds.output), output);
  EXPECT_EQ(static_cast<double>(holds.dense_layer.total()), block);
  const memory_report r = estimate_memory(j);
  const stage_memory& s = r.stages.front();
  EXPECT_DOUBLE_EQ(s.buffers_bytes, 2.0 * (embedding + output + block));
  // The loss's buffers (12 bytes a logit: the fp32 log-probabilities, their gradient and the logits'
  // gradient, §3.6) outweigh a block's backward and what it gathers beside the root.
  const double logits = 128256.0 * 2 * 8192;
  EXPECT_DOUBLE_EQ(s.transient_bytes, 12 * logits);
  // Megatron-FSDP keeps its unit buffers as before: the gathered unit, the next and the unit's gradient.
  const job_spec mj = job_of({"--model", "llama3-8b", "--cluster", "dgx-h100", "--num-gpus", "8", "--seq-length", "8192",
                              "--mbs", "2", "--gbs", "16", "--use-megatron-fsdp"});
  EXPECT_DOUBLE_EQ(estimate_memory(mj).stages.front().buffers_bytes, 3 * 2.0 * block);
}

TEST(MemoryFit, ReservedAddsAllocatorReserveAndContext) {
  const job_spec j = job_of({"--model", "llama2-7b", "--num-gpus", "1", "--cluster", "dgx-a100"});
  const memory_report r = estimate_memory(j);
  const auto& s = r.stages[0];
  const double communicators = 1;  // world only
  EXPECT_DOUBLE_EQ(s.reserved_bytes, s.allocated_bytes * 1.08 + static_cast<double>(j.cluster.gpu.cuda_context_bytes) +
                                         communicators * static_cast<double>(j.training.nccl_buffer_bytes_per_communicator));
  EXPECT_FALSE(r.fits);  // 18 bytes × 6.7B = 121 GB on one 80 GB GPU
  EXPECT_LT(s.headroom_bytes, 0);
}

// §3.8: torchtitan deletes the 16-bit logits before the backward, whose fp32 buffers (4 bytes a logit) cannot
// take their block (2 bytes a logit): it stays reserved at the loss's peak, beside the allocator's reserve.
TEST(MemoryReserved, TorchtitansLossStrandsTheDeletedLogitsBlock) {
  const std::vector<std::string> a = {"--model", "llama3-8b", "--cluster", "dgx-h100", "--num-gpus", "8",
                                      "--framework", "fsdp", "--zero-stage", "3", "--seq-length", "8192", "--mbs", "2",
                                      "--gbs", "16", "--recompute-granularity", "op"};
  const memory_report r = estimate_memory(job_of(a));
  const stage_memory& s = r.stages.front();
  const double logits = 128256.0 * 2 * 8192;
  EXPECT_DOUBLE_EQ(s.stranded_bytes, 2 * logits);  // 3.91 GiB
  // The loss is this job's peak (the previous test): its reserved is the peak's reserve plus the block.
  EXPECT_DOUBLE_EQ(s.transient_bytes, 12 * logits);
  EXPECT_DOUBLE_EQ(s.torch_reserved_bytes, s.allocated_bytes * 1.08 + 2 * logits);
  // Megatron's backward allocates only the cast back, which takes the freed logits' block: nothing stranded.
  const memory_report mr = estimate_memory(job_of({"--model", "llama3-8b", "--cluster", "dgx-h100", "--num-gpus", "8",
                                                   "--seq-length", "8192", "--mbs", "2", "--gbs", "16"}));
  EXPECT_DOUBLE_EQ(mr.stages.front().stranded_bytes, 0.0);
  EXPECT_DOUBLE_EQ(mr.stages.front().torch_reserved_bytes, mr.stages.front().allocated_bytes * 1.08);
  // fp32 logits: their block holds the backward's first fp32 buffer.
  std::vector<std::string> fp32 = a;
  fp32.push_back("--fp32");
  EXPECT_DOUBLE_EQ(estimate_memory(job_of(fp32)).stages.front().stranded_bytes, 0.0);
}

}  // namespace
}  // namespace trainplan
