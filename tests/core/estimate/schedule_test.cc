// Pipeline schedules: the event simulation against the closed forms and known bubbles (§5.4).
#include "trainplan/cli/cli.h"
#include "trainplan/core/estimate/schedule.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "trainplan/core/base/error.h"

namespace trainplan {
namespace {

schedule_input uniform(schedule_kind kind, std::int64_t p, std::int64_t m, std::int64_t v, double f, double b,
                       double c) {
  schedule_input in;
  in.kind = kind;
  in.num_microbatches = m;
  in.num_chunks = v;
  in.stages.assign(static_cast<std::size_t>(p), stage_times{f, b, 0, 0});
  in.p2p_s = c;
  return in;
}

TEST(Schedule, OneFOneBBubbleIsPMinusOneOverM) {
  // No transfers: T = (m + p − 1)(F + B), bubble (p − 1)/(m + p − 1) (Narayanan et al. 2021).
  const auto r = simulate_schedule(uniform(schedule_kind::one_f_one_b, 4, 8, 1, 1.0, 2.0, 0.0));
  EXPECT_DOUBLE_EQ(r.pipeline_s, (8 + 3) * 3.0);
  EXPECT_NEAR(r.bubble_fraction, 3.0 / 11.0, 1e-12);
}

TEST(Schedule, InterleavedBubbleShrinksByChunks) {
  // Per-chunk times F/v, B/v: T = (m + (p − 1)/v)(F + B).
  const auto r = simulate_schedule(uniform(schedule_kind::interleaved, 4, 8, 2, 0.5, 1.0, 0.0));
  EXPECT_NEAR(r.pipeline_s, (8 + 3.0 / 2) * 3.0, 1e-9);
}

TEST(Schedule, ClosedFormAgreesWithSimulationOnUniformStages) {
  for (auto kind : {schedule_kind::gpipe, schedule_kind::one_f_one_b, schedule_kind::interleaved}) {
    for (std::int64_t p : {1, 2, 4, 12}) {
      for (std::int64_t m : {12, 24, 128}) {
        for (double c : {0.0, 0.01, 0.2}) {
          const std::int64_t v = kind == schedule_kind::interleaved ? 3 : 1;
          if (kind == schedule_kind::interleaved && p == 1) continue;
          if (kind == schedule_kind::interleaved && m % p != 0) continue;
          // The interleaved count of sends holds for transfers short against a chunk (run_schedule
          // simulates interleaved schedules with transfers).
          if (kind == schedule_kind::interleaved && c > 0.05) continue;
          auto in = uniform(kind, p, m, v, 0.7, 1.6, c);
          in.stages[0].grad_reduce_s = 3.0;
          in.stages.back().optimizer_s = 0.5;
          const auto sim = simulate_schedule(in);
          const auto cf = closed_form_schedule(in);
          SCOPED_TRACE(std::string(to_string(kind)) + " p=" + std::to_string(p) + " m=" + std::to_string(m) +
                       " c=" + std::to_string(c));
          EXPECT_NEAR(cf.pipeline_s, sim.pipeline_s, 1e-9 * sim.pipeline_s);
          EXPECT_NEAR(cf.iteration_s, sim.iteration_s, 1e-9 * sim.iteration_s);
          EXPECT_NEAR(cf.bubble_fraction, sim.bubble_fraction, 1e-9);
        }
      }
    }
  }
}

TEST(Schedule, SlowStageSetsTheSteadyState) {
  auto in = uniform(schedule_kind::one_f_one_b, 4, 32, 1, 1.0, 2.0, 0.0);
  in.stages[2].forward_s = 1.5;
  in.stages[2].backward_s = 3.0;
  const auto r = run_schedule(in);
  EXPECT_FALSE(r.closed_form);
  // Between m·max(F+B) plus the others' fill, and Σ (F+B) + (m − 1)·max(F+B).
  EXPECT_GT(r.pipeline_s, 32 * 4.5 + 2 * 1.0 + 2.0);
  EXPECT_LE(r.pipeline_s, 3 * 3.0 + 4.5 + 31 * 4.5);
  EXPECT_EQ(r.critical_stage, 0);
}

TEST(Schedule, GradReduceOverlapHidesUnderLastBackward) {
  auto in = uniform(schedule_kind::one_f_one_b, 2, 8, 1, 1.0, 2.0, 0.0);
  for (auto& s : in.stages) s.grad_reduce_s = 1.5;
  const double exposed = run_schedule(in).grad_reduce_exposed_s;
  in.overlap_grad_reduce = true;
  const double hidden = run_schedule(in).grad_reduce_exposed_s;
  EXPECT_GT(exposed, 1.0);
  EXPECT_LT(hidden, exposed);
}

TEST(Schedule, InterleavedChunksReduceFromTheirOwnLastBackward) {
  // §5.4: Megatron enables each chunk's grad sync at its last micro-batch's backward; chunk j from the
  // end has j·p chunk backwards after it. p = 2, v = 2, chunk backward B = 1, reduction 3 (1.5 a chunk):
  // chunk 0 alone: 1.5 − 1 = 0.5; chunks 1 and 0: 3 − (2 + 1) = 0. Exposed 0.5, where one window of B
  // would leave 2.
  auto in = uniform(schedule_kind::interleaved, 2, 4, 2, 0.5, 1.0, 0.0);
  for (auto& s : in.stages) s.grad_reduce_s = 3.0;
  in.overlap_grad_reduce = true;
  EXPECT_NEAR(run_schedule(in).grad_reduce_exposed_s, 0.5, 1e-12);
  EXPECT_NEAR(simulate_schedule(in).grad_reduce_exposed_s, 0.5, 1e-12);
  // Four chunks, reduction 6 (1.5 a chunk): j = 0: 0.5, j = 1: 3 − 3 = 0, j = 2: 4.5 − 5 < 0, j = 3: 6 − 7 < 0.
  auto four = uniform(schedule_kind::interleaved, 2, 4, 4, 0.25, 1.0, 0.0);
  for (auto& s : four.stages) s.grad_reduce_s = 6.0;
  four.overlap_grad_reduce = true;
  EXPECT_NEAR(run_schedule(four).grad_reduce_exposed_s, 0.5, 1e-12);
  // Without overlap the whole reduction follows the pipeline.
  four.overlap_grad_reduce = false;
  EXPECT_NEAR(run_schedule(four).grad_reduce_exposed_s, 6.0, 1e-12);
}

TEST(Schedule, InterleavingNeedsMicrobatchesMultipleOfStages) {
  auto in = uniform(schedule_kind::interleaved, 4, 6, 2, 1.0, 2.0, 0.0);
  try {
    simulate_schedule(in);
    FAIL() << "expected input_error";
  } catch (const input_error& e) {
    EXPECT_NE(cli_message(e).find("--pipeline-model-parallel-size"), std::string::npos);
    EXPECT_NE(cli_message(e).find("--global-batch-size"), std::string::npos);
  }
}

TEST(Schedule, EventsCoverEveryOperationOnce) {
  auto in = uniform(schedule_kind::interleaved, 4, 8, 2, 1.0, 2.0, 0.1);
  in.record_events = true;
  const auto r = run_schedule(in);
  EXPECT_EQ(r.events.size(), 4u * 8 * 2 * 2);
  for (const auto& e : r.events) EXPECT_LT(e.start_s, e.end_s);
}

// ---- the fast path against the event simulation (§5.4 "Fast path") ------------------------------

void expect_same(const schedule_result& fast, const schedule_result& sim) {
  auto rel = [](double a, double b) { return std::fabs(a - b) <= 1e-9 * std::max({std::fabs(a), std::fabs(b), 1e-300}); };
  EXPECT_PRED2(rel, fast.pipeline_s, sim.pipeline_s);
  EXPECT_PRED2(rel, fast.iteration_s, sim.iteration_s);
  EXPECT_NEAR(fast.bubble_fraction, sim.bubble_fraction, 1e-9);
  EXPECT_NEAR(fast.grad_reduce_exposed_s, sim.grad_reduce_exposed_s, 1e-9 * sim.iteration_s);
  EXPECT_PRED2(rel, fast.optimizer_s, sim.optimizer_s);
  ASSERT_EQ(fast.stages.size(), sim.stages.size());
  for (std::size_t i = 0; i < sim.stages.size(); ++i) {
    SCOPED_TRACE("stage " + std::to_string(i));
    EXPECT_PRED2(rel, fast.stages[i].pipeline_end_s, sim.stages[i].pipeline_end_s);
    EXPECT_PRED2(rel, fast.stages[i].busy_s, sim.stages[i].busy_s);
    EXPECT_NEAR(fast.stages[i].send_s, sim.stages[i].send_s, 1e-9 * sim.pipeline_s);
    EXPECT_NEAR(fast.stages[i].idle_s, sim.stages[i].idle_s, 1e-9 * sim.pipeline_s);
  }
  // The critical stage may differ only between stages that end together.
  const auto fc = static_cast<std::size_t>(fast.critical_stage), sc = static_cast<std::size_t>(sim.critical_stage);
  EXPECT_NEAR(fast.stages[fc].pipeline_end_s + fast.stages[fc].grad_reduce_exposed_s,
              sim.stages[sc].pipeline_end_s + sim.stages[sc].grad_reduce_exposed_s, 1e-9 * sim.iteration_s);
}

/// Stage shapes: uniform; BLOOM's embedding-as-stage (lighter first and last ranks); one slow middle
/// rank; every rank different (a fixed pseudo-random draw).
std::vector<stage_times> stage_pattern(int pattern, std::int64_t p, double f, double b) {
  std::vector<stage_times> s(static_cast<std::size_t>(p), stage_times{f, b, 0, 0});
  switch (pattern) {
    case 0: break;
    case 1:  // 70 layers over 12 slots: 5 on the first and last ranks (embedding, logits), 6 elsewhere
      s.front().forward_s = f * 5 / 6 + 0.01;
      s.front().backward_s = b * 5 / 6 + 0.02;
      s.back().forward_s = f * 5 / 6 + 0.05;
      s.back().backward_s = b * 5 / 6 + 0.09;
      break;
    case 2:
      s[static_cast<std::size_t>(p / 2)].forward_s = 1.5 * f;
      s[static_cast<std::size_t>(p / 2)].backward_s = 1.4 * b;
      break;
    case 3: {
      std::uint64_t x = 88172645463325252ull;
      for (auto& st : s) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        st.forward_s = f * (0.5 + static_cast<double>(x % 1000) / 1000);
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        st.backward_s = b * (0.5 + static_cast<double>(x % 1000) / 1000);
      }
      break;
    }
  }
  for (std::size_t i = 0; i < s.size(); ++i) {
    s[i].grad_reduce_s = 0.3 + 0.1 * static_cast<double>(i % 3);
    s[i].optimizer_s = 0.05 * static_cast<double>(i % 2);
  }
  return s;
}

TEST(ScheduleFastPath, AgreesWithTheEventSimulation) {
  int cases = 0;
  for (auto kind : {schedule_kind::gpipe, schedule_kind::one_f_one_b, schedule_kind::interleaved}) {
    for (std::int64_t p : {1, 2, 3, 4, 12}) {
      for (std::int64_t m : {1, 2, 3, 5, 12, 24, 128, 1024}) {
        const std::int64_t v = kind == schedule_kind::interleaved ? 3 : 1;
        if (kind == schedule_kind::interleaved && (p == 1 || m % p != 0)) continue;
        // Transfers: none, short, comparable to a chunk's forward (0.17), longer than it.
        for (double c : {0.0, 0.004, 0.027, 0.2, 0.5}) {
          for (int pattern = 0; pattern < 4; ++pattern) {
            for (bool overlap : {false, true}) {
              schedule_input in;
              in.kind = kind;
              in.num_microbatches = m;
              in.num_chunks = v;
              in.stages = stage_pattern(pattern, p, 0.17, 0.51);
              in.p2p_s = c;
              in.overlap_grad_reduce = overlap;
              SCOPED_TRACE(std::string(to_string(kind)) + " p=" + std::to_string(p) + " m=" + std::to_string(m) +
                           " c=" + std::to_string(c) + " pattern=" + std::to_string(pattern));
              const schedule_result sim = simulate_schedule(in);
              const schedule_result fast = fast_schedule(in);
              EXPECT_FALSE(fast.closed_form);
              EXPECT_TRUE(fast.events.empty());
              expect_same(fast, sim);
              // run_schedule (closed form or fast path) agrees too.
              expect_same(run_schedule(in), sim);
              ++cases;
            }
          }
        }
      }
    }
  }
  EXPECT_GT(cases, 1000);
}

TEST(ScheduleFastPath, DeepPipelinesWithClosedFormWarmUpAndCoolDown) {
  // Issue 30: 1F1B's warm-up and cool-down in closed form (O(p) per run of alike ranks, §5.4): deep
  // pipelines with a light first and last rank, one slow middle rank, or every rank different, against
  // the event simulation on every stage.
  int cases = 0;
  for (std::int64_t p : {5, 24, 96}) {
    for (std::int64_t m : {p, p + 1, 2 * p, 16 * p}) {
      for (double c : {0.0, 0.027, 0.5}) {
        for (int pattern = 0; pattern < 4; ++pattern) {
          if (p == 96 && m > 2 * p && pattern != 1) continue;  // keep the simulation's share of the run short
          schedule_input in;
          in.num_microbatches = m;
          in.stages = stage_pattern(pattern, p, 0.17, 0.51);
          in.p2p_s = c;
          SCOPED_TRACE("p=" + std::to_string(p) + " m=" + std::to_string(m) + " c=" + std::to_string(c) +
                       " pattern=" + std::to_string(pattern));
          expect_same(fast_schedule(in), simulate_schedule(in));
          ++cases;
        }
      }
    }
  }
  EXPECT_GT(cases, 100);
}

// §5.4: a delay before each later rank's first forward (Megatron's unaligned parameter all-gather under 1F1B):
// the fast path, stepped or with the closed-form warm-up, against the event simulation, the delays of
// several sizes on every stage pattern; on alike stages the pipeline phase grows by the delays' sum.
TEST(ScheduleFastPath, FirstForwardDelaysAgreeWithTheEventSimulation) {
  int cases = 0;
  for (std::int64_t p : {2, 3, 5, 24, 96}) {
    for (std::int64_t m : {std::int64_t{1}, std::int64_t{2}, p, p + 1, 2 * p, 8 * p}) {
      for (double c : {0.0, 0.027, 0.5}) {
        for (int pattern = 0; pattern < 4; ++pattern) {
          for (double d : {0.01, 0.3, 2.0}) {
            if (p == 96 && (m > 2 * p || pattern == 3)) continue;  // keep the simulation's share short
            schedule_input in;
            in.num_microbatches = m;
            in.stages = stage_pattern(pattern, p, 0.17, 0.51);
            for (std::size_t i = 1; i < in.stages.size(); ++i) {
              in.stages[i].first_forward_delay_s = d * (1 + 0.1 * static_cast<double>(i % 3));
            }
            in.p2p_s = c;
            SCOPED_TRACE("p=" + std::to_string(p) + " m=" + std::to_string(m) + " c=" + std::to_string(c) +
                         " pattern=" + std::to_string(pattern) + " d=" + std::to_string(d));
            const schedule_result sim = simulate_schedule(in);
            expect_same(fast_schedule(in), sim);
            expect_same(run_schedule(in), sim);
            ++cases;
          }
        }
      }
    }
  }
  EXPECT_GT(cases, 500);
  // Alike stages, blocking sends: (m + p − 1)(F + B) + the sends, plus every later rank's delay.
  schedule_input in = uniform(schedule_kind::one_f_one_b, 4, 8, 1, 1.0, 2.0, 0.1);
  const double undelayed = simulate_schedule(in).pipeline_s;
  for (std::size_t i = 1; i < in.stages.size(); ++i) in.stages[i].first_forward_delay_s = 0.25 * static_cast<double>(i);
  EXPECT_NEAR(run_schedule(in).pipeline_s, undelayed + 0.25 + 0.5 + 0.75, 1e-12);
  // The delay is idle, not work; other schedules run it through the simulation.
  EXPECT_DOUBLE_EQ(run_schedule(in).stages[3].busy_s, 8 * 3.0);
  in.kind = schedule_kind::gpipe;
  expect_same(run_schedule(in), simulate_schedule(in));
}

TEST(ScheduleFastPath, BloomProductionShapeManyMicrobatches) {
  // The production layout's shape (12 ranks, embedding and logits in their own slots, 128 and more
  // micro-batches), where the 1F1B fast path extrapolates the steady state.
  for (std::int64_t m : {128, 512, 4096}) {
    schedule_input in;
    in.num_microbatches = m;
    in.stages.assign(12, stage_times{0.17, 0.51, 1.3, 0.01});
    in.stages.front().forward_s = 0.14;
    in.stages.front().backward_s = 0.43;
    in.stages.back().forward_s = 0.16;
    in.stages.back().backward_s = 0.47;
    in.p2p_s = 0.027;
    SCOPED_TRACE("m=" + std::to_string(m));
    expect_same(fast_schedule(in), simulate_schedule(in));
    expect_same(run_schedule(in), simulate_schedule(in));
  }
}

TEST(ScheduleFastPath, InterleavedWithTransfersAgreesWithTheEventSimulation) {
  // The interleaved fast path steps Megatron's order and extrapolates whole periods (p·v steps) of the
  // steady state; m = p (a capped warm-up for p > 2) chases dependencies. Chunks 2 to 4, transfers
  // from none to longer than a chunk's forward, every stage pattern, up to 1024 micro-batches.
  int cases = 0;
  for (std::int64_t v : {2, 4}) {
    for (std::int64_t p : {2, 3, 4, 8, 12}) {
      for (std::int64_t mult : {1, 2, 3, 5, 16, 64}) {
        const std::int64_t m = p * mult;
        if (m > 1024) continue;
        for (double c : {0.0, 0.004, 0.027, 0.2}) {
          for (int pattern = 0; pattern < 8; ++pattern) {
            schedule_input in;
            in.kind = schedule_kind::interleaved;
            in.num_microbatches = m;
            in.num_chunks = v;
            in.stages = stage_pattern(pattern % 4, p, 0.17 / static_cast<double>(v), 0.51 / static_cast<double>(v));
            in.p2p_s = c;
            in.overlap_grad_reduce = pattern % 2 == 1;
            in.overlap_p2p = pattern >= 4;  // Megatron's overlap_p2p_comm (§5.4)
            in.overlap_p2p_warmup_flush = pattern >= 6;  // and in the warm-up and cool-down too
            SCOPED_TRACE("v=" + std::to_string(v) + " p=" + std::to_string(p) + " m=" + std::to_string(m) +
                         " c=" + std::to_string(c) + " pattern=" + std::to_string(pattern));
            const schedule_result sim = simulate_schedule(in);
            expect_same(fast_schedule(in), sim);
            expect_same(run_schedule(in), sim);
            ++cases;
          }
        }
      }
    }
  }
  EXPECT_GT(cases, 800);
}

/// Per-chunk scales of p ranks × v chunks that sum to v on each rank: a heavy first chunk on rank 0 (the
/// embedding), a heavy last chunk on the last rank (the output layer), or every chunk different.
void chunk_pattern(int pattern, std::int64_t p, std::int64_t v, schedule_input& in) {
  const auto n = static_cast<std::size_t>(p * v);
  in.chunk_forward_scale.assign(n, 1.0);
  in.chunk_backward_scale.assign(n, 1.0);
  std::uint64_t x = 0x9E3779B97F4A7C15ull;
  for (std::int64_t r = 0; r < p; ++r) {
    std::vector<double> f(static_cast<std::size_t>(v), 1.0), b(static_cast<std::size_t>(v), 1.0);
    if (pattern == 0 && r == 0) f[0] = b[0] = 1.6;
    if (pattern == 0 && r == p - 1) f[static_cast<std::size_t>(v - 1)] = 2.5, b[static_cast<std::size_t>(v - 1)] = 2.2;
    if (pattern == 1) {
      for (std::int64_t c = 0; c < v; ++c) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        f[static_cast<std::size_t>(c)] = 0.3 + static_cast<double>(x % 1000) / 500;
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        b[static_cast<std::size_t>(c)] = 0.3 + static_cast<double>(x % 1000) / 500;
      }
    }
    double fs = 0, bs = 0;
    for (std::int64_t c = 0; c < v; ++c) fs += f[static_cast<std::size_t>(c)], bs += b[static_cast<std::size_t>(c)];
    for (std::int64_t c = 0; c < v; ++c) {
      in.chunk_forward_scale[static_cast<std::size_t>(c * p + r)] = f[static_cast<std::size_t>(c)] * static_cast<double>(v) / fs;
      in.chunk_backward_scale[static_cast<std::size_t>(c * p + r)] = b[static_cast<std::size_t>(c)] * static_cast<double>(v) / bs;
    }
  }
}

TEST(ScheduleFastPath, ChunksOfTheirOwnWeightAgreeWithTheEventSimulation) {
  // §5.4: model chunks that differ (an embedding or output chunk, a custom layout): the fast path (its
  // period extrapolation, or the dependency chase at m = p) against the simulation, operation by operation.
  int cases = 0;
  for (std::int64_t v : {2, 3}) {
    for (std::int64_t p : {2, 4, 8}) {
      for (std::int64_t mult : {1, 2, 16}) {
        for (double c : {0.0, 0.027}) {
          for (int pattern = 0; pattern < 2; ++pattern) {
            for (bool overlap_p2p : {false, true}) {
              schedule_input in;
              in.kind = schedule_kind::interleaved;
              in.num_microbatches = p * mult;
              in.num_chunks = v;
              in.stages = stage_pattern(pattern == 0 ? 1 : 3, p, 0.17 / static_cast<double>(v), 0.51 / static_cast<double>(v));
              in.p2p_s = c;
              in.overlap_p2p = overlap_p2p;
              chunk_pattern(pattern, p, v, in);
              SCOPED_TRACE("v=" + std::to_string(v) + " p=" + std::to_string(p) + " m=" + std::to_string(p * mult) +
                           " c=" + std::to_string(c) + " pattern=" + std::to_string(pattern));
              const schedule_result sim = simulate_schedule(in);
              expect_same(fast_schedule(in), sim);
              expect_same(run_schedule(in), sim);
              ++cases;
            }
          }
        }
      }
    }
  }
  EXPECT_GT(cases, 100);
}

TEST(Schedule, AHeavyChunkCostsWhereTheScheduleWaitsForIt) {
  // By hand, p = 2, v = 2, m = 2, no transfers, 1 s per chunk pass on average; rank 1's last chunk holds
  // the output: 1.5 s a pass, its first 0.5 s. Megatron's order: rank 0 runs its W_0 = 4 forwards, then
  // its backwards; rank 1 two forwards, then forward/backward pairs. F(c, j) is chunk c of micro-batch j.
  //   rank 0: F(0,0) [0,1]  F(0,1) [1,2]  F(1,0) [2,3]  F(1,1) [3,4]  B(1,0) [6,7]  B(1,1) [9,10]
  //           B(0,0) [10,11]  B(0,1) [11,12]
  //   rank 1: F(0,0) [1,1.5]  F(0,1) [2,2.5]  F(1,0) [3,4.5]  B(1,0) [4.5,6]  F(1,1) [6,7.5]  B(1,1) [7.5,9]
  //           B(0,0) [9,9.5]  B(0,1) [10,10.5]
  schedule_input in = uniform(schedule_kind::interleaved, 2, 2, 2, 1.0, 1.0, 0.0);
  in.chunk_forward_scale = {1.0, 0.5, 1.0, 1.5};   // index c·p + r
  in.chunk_backward_scale = {1.0, 0.5, 1.0, 1.5};
  const schedule_result r = simulate_schedule(in);
  EXPECT_NEAR(r.pipeline_s, 12.0, 1e-12);
  EXPECT_NEAR(fast_schedule(in).pipeline_s, 12.0, 1e-12);
  // The same work spread evenly over the chunks ends sooner: the heavy output chunk is on the path.
  EXPECT_LT(simulate_schedule(uniform(schedule_kind::interleaved, 2, 2, 2, 1.0, 1.0, 0.0)).pipeline_s, 12.0);
  // busy_s is the rank's whole work either way.
  EXPECT_NEAR(r.stages[1].busy_s, 2 * 2 * 2.0, 1e-12);
}

TEST(Schedule, OverlappedTransfersCostNoMoreThanBlockingOnesAndNoLessThanNone) {
  // Megatron's overlap_p2p_comm (§5.4): in the steady 1F1B phase the sender goes on with its next chunk
  // while the transfer runs; the receiver still waits for it. The warm-up and cool-down block
  // (schedules.py: send_forward_recv_forward, send_backward_recv_backward) unless
  // overlap_p2p_comm_warmup_flush, where no rank is ever blocked sending. The pipeline lies between no
  // transfers and blocking ones, and overlapping the ends too is no slower.
  for (std::int64_t p : {2, 4, 8}) {
    for (double c : {0.01, 0.05, 0.3}) {
      auto in = uniform(schedule_kind::interleaved, p, 4 * p, 4, 0.2, 0.45, c);
      const double blocking = simulate_schedule(in).pipeline_s;
      in.overlap_p2p = true;
      const schedule_result steady = simulate_schedule(in);
      in.overlap_p2p_warmup_flush = true;
      const schedule_result over = simulate_schedule(in);
      in.p2p_s = 0;
      const double none = simulate_schedule(in).pipeline_s;
      SCOPED_TRACE("p=" + std::to_string(p) + " c=" + std::to_string(c));
      EXPECT_LT(steady.pipeline_s, blocking);
      EXPECT_LE(over.pipeline_s, steady.pipeline_s + 1e-12);
      EXPECT_GE(over.pipeline_s, none);
      for (const stage_usage& u : over.stages) EXPECT_EQ(u.send_s, 0.0);
      if (p == 2) {
        // By hand, m = 8, v = 4: rank 0 warms up with 2 + 3·2 = 8 forwards, all sending, and cools down
        // with 8 backwards of which the last two (chunk 0) send nothing; rank 1 with 6 and 6, all sending.
        EXPECT_NEAR(steady.stages[0].send_s, 14 * c, 1e-12);
        EXPECT_NEAR(steady.stages[1].send_s, 12 * c, 1e-12);
      }
    }
  }
  // Two ranks, one chunk each way, the ends overlapped: rank 1's first forward starts one transfer after
  // rank 0's ends.
  auto two = uniform(schedule_kind::interleaved, 2, 2, 2, 1.0, 2.0, 0.25);
  two.overlap_p2p = true;
  two.overlap_p2p_warmup_flush = true;
  const schedule_result r = simulate_schedule([&] {
    auto x = two;
    x.record_events = true;
    return x;
  }());
  int seen = 0;
  for (const schedule_event& e : r.events) {
    if (e.stage == 1 && e.chunk == 0 && e.microbatch == 0 && !e.backward) {
      EXPECT_DOUBLE_EQ(e.start_s, 1.25);
      ++seen;
    }
    if (e.stage == 0 && e.chunk == 0 && e.microbatch == 1 && !e.backward) {
      EXPECT_DOUBLE_EQ(e.start_s, 1.0);  // rank 0 goes on at once: its send does not block it
      ++seen;
    }
  }
  EXPECT_EQ(seen, 2);
}

TEST(ScheduleFastPath, InterleavedProductionShapeManyMicrobatches) {
  // BLOOM-like ranks (lighter first and last), VPP 3, transfers a sixth of a chunk's forward: the
  // steady state is extrapolated over whole periods.
  for (std::int64_t m : {48, 120, 480, 4800}) {
    schedule_input in;
    in.kind = schedule_kind::interleaved;
    in.num_chunks = 3;
    in.num_microbatches = m;
    in.stages.assign(12, stage_times{0.06, 0.17, 1.3, 0.01});
    in.stages.front().forward_s = 0.05;
    in.stages.back().backward_s = 0.16;
    in.p2p_s = 0.027;
    SCOPED_TRACE("m=" + std::to_string(m));
    expect_same(fast_schedule(in), simulate_schedule(in));
    expect_same(run_schedule(in), simulate_schedule(in));
  }
}

TEST(ScheduleFastPath, RecordEventsUsesTheSimulation) {
  auto in = uniform(schedule_kind::one_f_one_b, 4, 8, 1, 1.0, 2.0, 0.1);
  in.stages[1].forward_s = 1.3;
  in.record_events = true;
  const auto r = run_schedule(in);
  EXPECT_EQ(r.events.size(), 4u * 8 * 2);
  EXPECT_TRUE(fast_schedule(in).events.empty());
  expect_same(fast_schedule(in), r);
}

TEST(ScheduleFastPath, RejectsWhatTheSimulationRejects) {
  EXPECT_THROW(fast_schedule(uniform(schedule_kind::interleaved, 4, 6, 2, 1.0, 2.0, 0.0)), input_error);
  EXPECT_THROW(fast_schedule(uniform(schedule_kind::one_f_one_b, 4, 8, 2, 1.0, 2.0, 0.0)), input_error);
}

}  // namespace
}  // namespace trainplan

namespace trainplan {
namespace {

// ---- the schedule traits table (issue 17) ------------------------------------------------------------

/// The chunk-micro-batches rank `rank` ran forward before its first backward started, in a simulation's
/// recorded events: what it holds at its peak (§3.5).
std::int64_t forwards_before_first_backward(const schedule_result& r, std::int64_t rank) {
  double first_backward = 1e300;
  for (const schedule_event& e : r.events) {
    if (e.stage == rank && e.backward) first_backward = std::min(first_backward, e.start_s);
  }
  std::int64_t forwards = 0;
  for (const schedule_event& e : r.events) {
    if (e.stage == rank && !e.backward && e.start_s < first_backward) ++forwards;
  }
  return forwards;
}

TEST(ScheduleTraits, HeldActivationsAreTheForwardsBeforeTheFirstBackward) {
  // Memory reads `held` (§3.5); the order is the simulation's. For each schedule, rank and size, the
  // chunk-micro-batches a rank has run forward when its first backward starts are what it holds.
  for (const schedule_kind kind : {schedule_kind::gpipe, schedule_kind::one_f_one_b, schedule_kind::interleaved}) {
    EXPECT_EQ(traits_of(kind).kind, kind);
    EXPECT_EQ(traits_of(kind).name, to_string(kind));
    for (std::int64_t p : {2, 3, 4, 8}) {
      for (std::int64_t m : {1, 2, 4, 8, 16}) {
        const std::int64_t v = traits_of(kind).chunks ? 2 : 1;
        if (kind == schedule_kind::interleaved && m % p != 0) continue;  // Megatron requires it
        schedule_input in;
        in.kind = kind;
        in.num_microbatches = m;
        in.num_chunks = v;
        in.stages.assign(static_cast<std::size_t>(p), stage_times{1.0, 2.0, 0, 0});
        in.record_events = true;
        const schedule_result r = simulate_schedule(in);
        for (std::int64_t rank = 0; rank < p; ++rank) {
          const std::int64_t forwards = forwards_before_first_backward(r, rank);
          const in_flight held = traits_of(kind).held(rank, p, m, v, 0);
          EXPECT_EQ(held.chunk_microbatches, forwards)
              << to_string(kind) << " p " << p << " m " << m << " rank " << rank;
        }
      }
    }
  }
}

// Megatron's --microbatch-group-size-per-virtual-pipeline-stage (§5.4, §3.5): the schedule table of
// schedules.py get_schedule_table, its docstring's own example (PP 2, N 3, M 5, VP 2: chunks
// 0 0 0 1 1 1 0 0 1 1 for virtual micro-batches 0-9).
TEST(ScheduleGroups, TheTableIsMegatronsAndHeldActivationsFollowIt) {
  constexpr std::int64_t kChunks[] = {0, 0, 0, 1, 1, 1, 0, 0, 1, 1};
  for (std::int64_t held = 0; held <= 10; ++held) {
    std::int64_t zeros = 0;
    for (std::int64_t k = 0; k < held; ++k) zeros += kChunks[k] == 0 ? 1 : 0;
    EXPECT_EQ(chunk_microbatches_held(0, held, 2, 5, 2, 3), zeros) << held;
    EXPECT_EQ(chunk_microbatches_held(1, held, 2, 5, 2, 3), held - zeros) << held;
  }
  // What a rank holds is what it ran forward before its first backward, for groups other than p.
  for (std::int64_t p : {2, 3, 4}) {
    for (std::int64_t group : {p, p + 1, 2 * p}) {
      for (std::int64_t m : {2 * p, 3 * p, 4 * p + 1, 5 * p}) {
        if (group > m || (m % group != 0 && m % group < p)) continue;
        schedule_input in;
        in.kind = schedule_kind::interleaved;
        in.num_microbatches = m;
        in.num_chunks = 3;
        in.group_size = group;
        in.stages.assign(static_cast<std::size_t>(p), stage_times{1.0, 2.0, 0, 0});
        in.record_events = true;
        const schedule_result r = simulate_schedule(in);
        for (std::int64_t rank = 0; rank < p; ++rank) {
          const std::int64_t forwards = forwards_before_first_backward(r, rank);
          EXPECT_EQ(traits_of(schedule_kind::interleaved).held(rank, p, m, 3, group).chunk_microbatches, forwards)
              << "p " << p << " group " << group << " m " << m << " rank " << rank;
        }
      }
    }
  }
}

TEST(ScheduleGroups, TheDependencyChaseAgreesWithTheSimulation) {
  int cases = 0;
  for (std::int64_t p : {2, 4}) {
    for (std::int64_t group : {p + 1, 2 * p}) {
      for (std::int64_t m : {2 * p, 4 * p, 4 * p + 2}) {
        if (group > m || (m % group != 0 && m % group < p)) continue;
        for (int pattern = 0; pattern < 4; ++pattern) {
          schedule_input in;
          in.kind = schedule_kind::interleaved;
          in.num_microbatches = m;
          in.num_chunks = 2;
          in.group_size = group;
          in.stages = stage_pattern(pattern, p, 0.17, 0.51);
          in.p2p_s = pattern % 2 == 0 ? 0.0 : 0.027;
          in.overlap_p2p = pattern >= 2;
          SCOPED_TRACE("p=" + std::to_string(p) + " group=" + std::to_string(group) + " m=" + std::to_string(m) +
                       " pattern=" + std::to_string(pattern));
          const schedule_result sim = simulate_schedule(in);
          expect_same(fast_schedule(in), sim);
          expect_same(run_schedule(in), sim);
          ++cases;
        }
      }
    }
  }
  EXPECT_GT(cases, 20);
}

TEST(ScheduleGroups, MegatronsChecksNameTheFlag) {
  auto message = [](schedule_input in) {
    try {
      simulate_schedule(in);
    } catch (const input_error& e) {
      return cli_message(e);
    }
    return std::string("no error");
  };
  schedule_input in = uniform(schedule_kind::interleaved, 4, 8, 2, 1.0, 2.0, 0.0);
  in.group_size = 3;
  EXPECT_NE(message(in).find("--microbatch-group-size-per-virtual-pipeline-stage (3) must lie between "
                             "--pipeline-model-parallel-size (4)"),
            std::string::npos)
      << message(in);
  in.group_size = 6;
  EXPECT_NE(message(in).find("the micro-batches (8) over --microbatch-group-size-per-virtual-pipeline-stage (6) leave 2, "
                             "fewer than --pipeline-model-parallel-size (4)"),
            std::string::npos)
      << message(in);
  in.group_size = 8;
  EXPECT_EQ(message(in), "no error");
}

}  // namespace
}  // namespace trainplan
