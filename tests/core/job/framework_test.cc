// The frameworks' rows (include/trainplan/core/job/framework.h; docs/formulas.md §3.1-§3.3, §4.2.4): every
// (framework, ZeRO stage, precision, optimizer, gradient-accumulation dtype, pipeline) combination the
// rules accept is estimated, and memory, communication and compute must agree with the row it runs and
// with each other — the optimizer that runs, what is sharded, the data-parallel traffic, the step.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "trainplan/cli/args.h"
#include "trainplan/core/base/error.h"
#include "trainplan/core/estimate/comm.h"
#include "trainplan/core/estimate/compute.h"
#include "trainplan/core/estimate/memory.h"
#include "trainplan/core/job/framework.h"
#include "trainplan/core/job/job.h"

namespace trainplan {
namespace {

/// What the communication model does on the data-parallel dimension.
struct dp_traffic {
  bool all_reduce = false;       ///< gradients all-reduced (backward)
  bool reduce_scatter = false;   ///< gradients reduce-scattered (backward)
  bool gather_after_step = false;  ///< updated parameters all-gathered (optimizer phase)
  bool gather_per_layer = false;   ///< ZeRO-3/FSDP per-layer gathers (forward)
};

dp_traffic traffic_of(const comm_report& r) {
  dp_traffic t;
  for (const comm_collective& c : r.dimensions[static_cast<std::size_t>(parallel_dim::dp)].collectives) {
    if (c.kind == collective_kind::all_reduce && c.phase == comm_phase::backward) t.all_reduce = true;
    if (c.kind == collective_kind::reduce_scatter && c.phase == comm_phase::backward) t.reduce_scatter = true;
    if (c.kind == collective_kind::all_gather && c.phase == comm_phase::optimizer) t.gather_after_step = true;
    if (c.kind == collective_kind::all_gather && c.phase == comm_phase::forward) t.gather_per_layer = true;
  }
  return t;
}

TEST(FrameworkRows, MemoryCommunicationAndComputeAgreeOnEveryCombination) {
  std::set<const optimizer_row*> seen;
  int estimated = 0;
  for (const char* fw : {"megatron", "deepspeed", "fsdp", "megatron-fsdp"}) {
    for (const char* stage : {"0", "1", "2", "3"}) {
      // Megatron-FSDP: its sharding strategy is the stage (optim, optim_grads, optim_grads_params).
      const bool mfsdp = std::string(fw) == "megatron-fsdp";
      if (mfsdp && std::string(stage) == "0") continue;
      for (const char* precision : {"--bf16", "--fp16", "--fp32"}) {
        for (const char* optimizer : {"adam", "sgd"}) {
          for (const char* accum : {"", "fp32", "bf16"}) {
            for (const char* pp : {"1", "2"}) {
              std::vector<std::string> args = {"--model", "llama2-7b", "--cluster", "dgx-a100", "--num-gpus", "16",
                                               "--gbs", "64", precision, "--optimizer", optimizer, "--pp", pp};
              if (mfsdp) {
                const char* strategy = std::string(stage) == "1" ? "optim" : std::string(stage) == "2" ? "optim_grads"
                                                                                                      : "optim_grads_params";
                args.insert(args.end(), {"--use-megatron-fsdp", "--data-parallel-sharding-strategy", strategy});
              } else {
                args.insert(args.end(), {"--framework", fw, "--zero-stage", stage});
              }
              if (*accum != '\0') args.insert(args.end(), {"--grad-accum-dtype", accum});
              parsed_job pj;
              try {
                pj = parse_job_args(args);
              } catch (const input_error&) {
                continue;  // a combination the framework refuses (the rules' own tests say which)
              }
              const job_spec& job = pj.job;
              SCOPED_TRACE(::testing::PrintToString(args));
              const optimizer_row& row = job.resolved.row();
              seen.insert(&row);
              ++estimated;
              EXPECT_EQ(row.framework, job.training.framework);
              EXPECT_EQ(row.zero_stage, job.training.zero_stage);
              EXPECT_EQ(row.bf16_optimizer, runs_bf16_optimizer(job.training));

              // Memory: the optimizer state per parameter held is the whole state, or 1/D of it.
              const memory_report mem = estimate_memory(job);
              EXPECT_EQ(mem.optimizer, row.runs);
              const stage_memory& s = mem.stages.front();
              const double total = static_cast<double>(count_parameters(job.model, job.parallel.tp).total);
              const double held = static_cast<double>(s.parameters);
              const double shards = static_cast<double>(job.resolved.dp_shards);
              const double whole_optimizer = mem.full_optimizer_bytes / total;
              EXPECT_NEAR(s.optimizer_bytes / held, row.step_sharded() ? whole_optimizer / shards : whole_optimizer,
                          1e-9 * whole_optimizer);
              const bool gradients_sharded = s.gradients_bytes / held < mem.full_gradients_bytes / total * (1 - 1e-9);

              // Compute: the step updates what the row says it does (§5.5).
              const compute_report cr = estimate_compute(job);
              const compute_efficiency e = effective_compute_efficiency(job.cluster.gpu);
              const double bandwidth = job.cluster.gpu.memory_bandwidth_bytes_per_s * e.memory_bandwidth_fraction;
              const double updated = (cr.stages.front().optimizer_s - 8 * e.kernel_overhead_s) * bandwidth /
                                     optimizer_step_bytes_per_parameter(job);
              EXPECT_NEAR(updated, row.step_sharded() ? held / shards : held, 1e-6 * held);

              // Communication: a sharded step gathers the updated parameters (or ZeRO-3/FSDP gathers each
              // layer); gradients are reduce-scattered exactly when someone owns a shard of them, except
              // that today's DeepSpeed ZeRO-1/2 all-reduces each bucket whole for its shards (§4.2.4).
              const dp_traffic t = traffic_of(summarize_comm(job));
              const bool bucket_all_reduce = zero_bucket_all_reduce_on(job.training);
              EXPECT_EQ(row.step_sharded(), t.gather_after_step || t.gather_per_layer);
              EXPECT_EQ(t.reduce_scatter, !t.all_reduce);
              if (gradients_sharded) {
                EXPECT_EQ(t.reduce_scatter, !bucket_all_reduce);
              }
              if (t.reduce_scatter || bucket_all_reduce) {
                EXPECT_TRUE(row.step_sharded());
              }
              if (!row.step_sharded()) {
                EXPECT_FALSE(gradients_sharded);
              }

              // The gradients' accumulation (§5.9): in the GEMM (Megatron), AccumulateGrad, and
              // BF16_Optimizer's copy into its buffer after every micro-batch.
              const double acc = accumulation_bytes_per_parameter(job);
              const double w = bytes_of(job.resolved.roles.weights);
              switch (row.accumulation) {
                case grad_accumulation::in_gemm: EXPECT_EQ(acc, 0); break;
                case grad_accumulation::autograd: EXPECT_EQ(acc, 3 * w); break;
                case grad_accumulation::autograd_then_buffer:
                  EXPECT_EQ(acc, 4 * w + 2 * bytes_of(job.resolved.roles.gradients));
                  break;
                case grad_accumulation::upcast_into_buffer:
                  EXPECT_EQ(acc, w + 2 * bytes_of(job.resolved.roles.gradients));
                  EXPECT_GT(job.parallel.pp, 1);  // FSDP2's unsharded accumulation under a pipeline
                  break;
              }
            }
          }
        }
      }
    }
  }
  EXPECT_GT(estimated, 100);
  RecordProperty("combinations", estimated);
  EXPECT_EQ(seen.size(), optimizer_rows().size()) << "a row no combination reaches";
}

TEST(FrameworkRows, BloomsLaunchLineRunsBf16OptimizerAtStageZero) {
  // tr11-176B-ml.slurm: --zero-stage 0 --bf16. DeepSpeed runs BF16_Optimizer, which partitions the fp32
  // master and moments over DP as at stage 1: the same memory and time as the ZeRO-1 preset.
  const parsed_job z0 = parse_job_args({"--preset", "bloom-176b-production", "--zero-stage", "0"});
  const parsed_job z1 = parse_job_args({"--preset", "bloom-176b-production"});
  EXPECT_TRUE(z0.job.resolved.row().bf16_optimizer);
  EXPECT_TRUE(runs_alike(z0.job.resolved.row(), z1.job.resolved.row()));
  const memory_report m0 = estimate_memory(z0.job);
  EXPECT_TRUE(m0.fits);
  EXPECT_DOUBLE_EQ(m0.peak_reserved_bytes, estimate_memory(z1.job).peak_reserved_bytes);
}

TEST(FrameworkRows, DeepSpeedRefusesWhatItsEngineRefuses) {
  // runtime/engine.py _do_optimizer_sanity_check.
  EXPECT_THAT([] { parse_job_args({"--model", "llama2-7b", "--num-gpus", "8", "--framework", "deepspeed",
                                   "--zero-stage", "0", "--bf16", "--grad-accum-dtype", "bf16"}); },
              ::testing::ThrowsMessage<input_error>(::testing::HasSubstr("needs pipeline parallelism")));
  EXPECT_THAT([] { parse_job_args({"--model", "llama2-7b", "--num-gpus", "8", "--framework", "deepspeed",
                                   "--zero-stage", "0", "--fp16", "--grad-accum-dtype", "fp32"}); },
              ::testing::ThrowsMessage<input_error>(::testing::HasSubstr("unsupported mix")));
  // With a pipeline, bf16 accumulation at stage 0 is BF16_Optimizer with a bf16 buffer.
  const parsed_job pj = parse_job_args({"--model", "llama2-7b", "--num-gpus", "8", "--pp", "2", "--framework",
                                        "deepspeed", "--zero-stage", "0", "--bf16", "--grad-accum-dtype", "bf16"});
  EXPECT_TRUE(pj.job.resolved.row().bf16_optimizer);
  EXPECT_EQ(pj.job.resolved.roles.gradients, dtype::bf16);
}

}  // namespace
}  // namespace trainplan
