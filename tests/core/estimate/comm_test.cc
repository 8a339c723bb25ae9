// Communication analysis (docs/formulas.md §4): groups, traffic per dimension, collective time, CLI.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "trainplan/cli/cli.h"
#include "trainplan/cli/args.h"
#include "trainplan/core/estimate/comm.h"
#include "trainplan/core/base/error.h"

namespace trainplan {
namespace {

constexpr double kMiB = 1048576.0;
constexpr double kGiB = 1073741824.0;

job_spec job_of(std::vector<std::string> args) { return parse_job_args(args).job; }

/// seeds/003's example: 2 nodes × 8 GPUs, TP 2, PP 2 (DP 4), MBS 4, GBS 512, 32 layers (as its output
/// prints; its script's "--num-layers 24" contradicts every printed count), GPT-2 vocabulary padded to
/// 50,432, learned positions, SwiGLU, biases, tied embeddings, flash attention, distributed optimizer, bf16.
std::vector<std::string> seed003_args() {
  return {"--num-layers", "32", "--hidden-size", "4096", "--num-attention-heads", "32", "--seq-length", "2048",
          "--max-position-embeddings", "2048", "--vocab-size", "50257", "--tp", "2", "--pp", "2", "--mbs", "4",
          "--gbs", "512", "--use-flash-attn", "--use-distributed-optimizer", "--swiglu", "--bf16",
          "--num-nodes", "2", "--gpus-per-node", "8"};
}

std::vector<std::string> names(const std::vector<std::int64_t>& ranks, std::int64_t gpn) {
  std::vector<std::string> out;
  for (auto r : ranks) out.push_back(device_name(r, gpn));
  return out;
}

/// Groups printed after `marker` in the seed excerpt: the following lines holding "[n..]".
std::vector<std::vector<std::string>> seed_groups(const std::string& marker) {
  std::ifstream in(std::string(TRAINPLAN_TEST_DATA_DIR) + "/seed-003-communication.txt");
  EXPECT_TRUE(in.good());
  std::vector<std::vector<std::string>> groups;
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    if (line.find(marker) != std::string::npos) {
      inside = true;
      continue;
    }
    if (!inside) continue;
    const auto open = line.find("[n");
    if (open == std::string::npos) {
      if (!groups.empty()) break;
      continue;
    }
    std::istringstream words(line.substr(open + 1, line.find(']') - open - 1));
    std::vector<std::string> g;
    for (std::string w; words >> w;) g.push_back(w);
    groups.push_back(g);
  }
  return groups;
}

const comm_collective& row(const comm_dimension& d, std::string_view what_prefix) {
  for (const auto& c : d.collectives)
    if (c.what.substr(0, what_prefix.size()) == what_prefix) return c;
  ADD_FAILURE() << "no collective starting with " << what_prefix;
  static comm_collective none;
  return none;
}

// ---- seeds/003 -----------------------------------------------------------------------------------

TEST(CommSeed003, GroupsAreTheSeedsExactly) {
  const comm_report r = analyze_comm(job_of(seed003_args()));
  const std::int64_t gpn = r.gpus_per_node;
  auto ours = [&](parallel_dim d) {
    std::vector<std::vector<std::string>> out;
    for (const auto& g : r[d].groups.ranks) out.push_back(names(g, gpn));
    return out;
  };
  const auto tp = seed_groups("Tensor Parallel Communication Groups");
  const auto pp = seed_groups("Pipeline Parallel Communication Groups");
  const auto dp = seed_groups("Data Parallel Groups");
  ASSERT_EQ(tp.size(), 8u);
  ASSERT_EQ(pp.size(), 8u);
  ASSERT_EQ(dp.size(), 4u);
  EXPECT_EQ(ours(parallel_dim::tp), tp);
  EXPECT_EQ(ours(parallel_dim::pp), pp);
  EXPECT_EQ(ours(parallel_dim::dp), dp);
  EXPECT_EQ(tp.front(), (std::vector<std::string>{"n0_g0", "n0_g1"}));
  EXPECT_EQ(pp.front(), (std::vector<std::string>{"n0_g0", "n1_g0"}));
  EXPECT_EQ(dp.front(), (std::vector<std::string>{"n0_g0", "n0_g2", "n0_g4", "n0_g6"}));
  // The embedding group pairs the first and last stage: the same pairs as the PP groups at PP 2.
  EXPECT_EQ(ours(parallel_dim::embedding), pp);
  EXPECT_EQ(r[parallel_dim::tp].groups.placement.link, link_kind::nvlink);
  EXPECT_EQ(r[parallel_dim::dp].groups.placement.link, link_kind::nvlink);
  EXPECT_EQ(r[parallel_dim::pp].groups.placement.link, link_kind::network);
  EXPECT_EQ(r[parallel_dim::pp].groups.placement.concurrent_groups_per_node, 8);
}

TEST(CommSeed003, TensorParallelLayersMatchTheSeedAndWeAddEmbeddingOutputAndLoss) {
  const comm_report r = summarize_comm(job_of(seed003_args()));
  const comm_dimension& tp = r[parallel_dim::tp];
  const double a = 4.0 * 2048 * 4096 * 2;  // [4, 2048, 4096] bf16 = 64 MiB
  // The seed's 2 + 2 all-reduces per layer: 16 layers × 4 × 32 micro-batches = 2048 per GPU, 128 GiB;
  // × 16 GPUs = 32,768 calls and 2,048 GiB, exactly its printed figures.
  const auto& fwd = row(tp, "attention and MLP output");
  const auto& bwd = row(tp, "QKV and fc1 input-gradient");
  EXPECT_EQ(fwd.bytes_per_call, a);
  EXPECT_EQ(fwd.calls_per_iteration + bwd.calls_per_iteration, 2048);
  EXPECT_EQ(fwd.calls_per_iteration_cluster + bwd.calls_per_iteration_cluster, 32768);
  EXPECT_DOUBLE_EQ((fwd.bytes_per_iteration_cluster + bwd.bytes_per_iteration_cluster) / kGiB, 2048.0);
  // Ours adds one embedding all-reduce per micro-batch on stage 0, one output-layer input-gradient
  // all-reduce and three fp32 [s,b] cross-entropy all-reduces per micro-batch on stage 1 (§4.5).
  EXPECT_EQ(tp.busiest_stage, 1);
  EXPECT_EQ(tp.calls_per_iteration_per_gpu, 2176);  // (64 + 1 + 3) × 32
  const double ce = 4.0 * 2048 * 4;                  // 32 KiB
  EXPECT_DOUBLE_EQ(tp.bytes_per_iteration_per_gpu, 32 * (65 * a + 3 * ce));  // 130 GiB + 3 MiB
  EXPECT_EQ(tp.calls_per_iteration_cluster, 34048);  // 8 × 32 × 65 + 8 × 32 × 68
  EXPECT_DOUBLE_EQ(tp.bytes_per_iteration_cluster, 16.0 * 32 * 65 * a + 8.0 * 32 * 3 * ce);  // 2080 GiB + 24 MiB
}

TEST(CommSeed003, PipelineCountsOnlyTheSendsAndReceivesThatHappen) {
  const comm_report r = summarize_comm(job_of(seed003_args()));
  const comm_dimension& pp = r[parallel_dim::pp];
  // The seed prints 4 isend/irecv per micro-batch on every GPU (128 per GPU, 2048 and 128 GiB for the
  // cluster). At PP 2 stage 0 only sends activations and receives gradients, stage 1 the reverse:
  // 2 per micro-batch, 64 per GPU (4 GiB), 1,024 and 64 GiB for the cluster (§4.5).
  EXPECT_EQ(pp.calls_per_iteration_per_gpu, 64);
  EXPECT_DOUBLE_EQ(pp.bytes_per_iteration_per_gpu / kGiB, 4.0);
  EXPECT_EQ(pp.calls_per_iteration_cluster, 1024);
  EXPECT_DOUBLE_EQ(pp.bytes_per_iteration_cluster / kGiB, 64.0);
  EXPECT_EQ(row(pp, "activation isend").bytes_per_call, 64 * kMiB);
}

TEST(CommSeed003, DataParallelReducesFp32GradsAndGathersBf16Params) {
  const comm_report r = summarize_comm(job_of(seed003_args()));
  const comm_dimension& dp = r[parallel_dim::dp];
  // Parameters on one GPU (§2.4), per layer: (QKV 3h²+3h, proj h², fc1 2fh+2f, fc2 fh)/2 + proj and fc2
  // biases + two LayerNorms = 100,442,752 (h 4096, f 10880).
  const double layer = (3.0 * 4096 * 4096 + 3 * 4096 + 4096.0 * 4096 + 2.0 * 10880 * 4096 + 2 * 10880 +
                        10880.0 * 4096) / 2 + 2 * 4096 + 4 * 4096;
  EXPECT_EQ(layer, 100442752.0);
  const double stage0 = 16 * layer + 50432.0 * 4096 / 2 + 2048.0 * 4096;  // + word shard + positions
  const double stage1 = 16 * layer + 2 * 4096 + 50432.0 * 4096 / 2;       // + final norm + tied copy
  EXPECT_EQ(stage0, 1718757376.0);  // the seed prints 1,718,898,688 (QKV bias as h, no final norm)
  EXPECT_EQ(dp.busiest_stage, 0);
  EXPECT_EQ(dp.calls_per_iteration_per_gpu, 2);
  const auto& rs = row(dp, "gradient reduce-scatter");
  const auto& ag = row(dp, "updated-parameter all-gather");
  EXPECT_EQ(rs.bytes_per_call, 4 * stage0);  // 6.40 GiB, the seed's 6.4 GB
  EXPECT_EQ(ag.bytes_per_call, 2 * stage0);  // 3.20 GiB; the seed prints 6.4 GB (fp32) here
  EXPECT_EQ(rs.phase, comm_phase::backward);
  EXPECT_EQ(ag.phase, comm_phase::optimizer);
  EXPECT_DOUBLE_EQ(dp.bytes_per_iteration_per_gpu, 6 * stage0);
  // The seed's "2 calls, 12.8 GB" for the cluster is one GPU's figure; summed over 16 GPUs: 32 calls.
  EXPECT_EQ(dp.calls_per_iteration_cluster, 32);
  EXPECT_DOUBLE_EQ(dp.bytes_per_iteration_cluster, 8 * 6 * (stage0 + stage1));
  // Tied embeddings: the word-embedding gradient shard (fp32) all-reduced by stage 0 and stage 1.
  const comm_dimension& emb = r[parallel_dim::embedding];
  EXPECT_EQ(emb.collectives.at(0).bytes_per_call, 4.0 * 50432 * 4096 / 2);
  EXPECT_EQ(emb.calls_per_iteration_cluster, 16);
}

// Issue 29: --cp-comm-type a2a (Ulysses-style, Transformer Engine's AttnFuncWithCPAndQKVOA2A). Llama-3-8B
// at CP 2, seq 32,768, MBS 1: 16,384 tokens a rank; Q 4,096 wide, K and V 1,024 each, the output 4,096:
// (4096 + 2048 + 4096) · 16384 · 2 bytes = 335,544,320 bytes all-to-all'd per layer and pass.
TEST(CommCp, AllToAllMovesQkvAndTheOutput) {
  const comm_report r = summarize_comm(job_of({"--model", "llama3-8b", "--num-gpus", "8", "--cp", "2", "--cp-comm-type",
                                               "a2a", "--seq-length", "32768", "--gbs", "16", "--bf16"}));
  const comm_dimension& cp = r[parallel_dim::cp];
  const auto& fwd = row(cp, "Q, K, V all-to-all");
  EXPECT_EQ(fwd.kind, collective_kind::all_to_all);
  EXPECT_EQ(fwd.bytes_per_call, 335544320.0);
  EXPECT_EQ(row(cp, "dO all-to-all").bytes_per_call, 335544320.0);
  // Each rank attends for heads / CP: the KV groups must divide, as Transformer Engine asserts.
  EXPECT_THROW(job_of({"--model", "llama3-8b", "--num-gpus", "16", "--cp", "16", "--cp-comm-type", "a2a",
                       "--seq-length", "32768", "--gbs", "16"}),
               input_error);
}

TEST(CommSeed003, SummaryEqualsAnalysisWithoutGroupLists) {
  const job_spec job = job_of(seed003_args());
  const comm_report s = summarize_comm(job);
  const comm_report a = analyze_comm(job);
  for (std::size_t d = 0; d < s.dimensions.size(); ++d) {
    EXPECT_TRUE(s.dimensions[d].groups.ranks.empty());
    EXPECT_EQ(a.dimensions[d].groups.num_groups, static_cast<std::int64_t>(a.dimensions[d].groups.ranks.size()));
    EXPECT_EQ(s.dimensions[d].bytes_per_iteration_cluster, a.dimensions[d].bytes_per_iteration_cluster);
  }
  EXPECT_EQ(s.bytes_per_iteration_cluster, a.bytes_per_iteration_cluster);
}

/// Relative difference, 0 when both are 0.
double rel(double a, double b) { return a == b ? 0 : std::abs(a - b) / std::max(std::abs(a), std::abs(b)); }

void expect_same_dimension(const comm_dimension& s, const comm_dimension& r, const std::string& label) {
  constexpr double kTol = 1e-12;
  EXPECT_EQ(s.dim, r.dim) << label;
  EXPECT_EQ(s.groups.name, r.groups.name) << label;
  EXPECT_EQ(s.groups.group_size, r.groups.group_size) << label;
  EXPECT_EQ(s.groups.num_groups, r.groups.num_groups) << label;
  EXPECT_EQ(s.groups.placement.link, r.groups.placement.link) << label;
  EXPECT_EQ(s.expert_groups.group_size, r.expert_groups.group_size) << label;
  EXPECT_EQ(s.busiest_stage, r.busiest_stage) << label;
  EXPECT_EQ(s.calls_per_iteration_per_gpu, r.calls_per_iteration_per_gpu) << label;
  EXPECT_EQ(s.calls_per_iteration_cluster, r.calls_per_iteration_cluster) << label;
  EXPECT_LE(rel(s.bytes_per_iteration_per_gpu, r.bytes_per_iteration_per_gpu), kTol) << label;
  EXPECT_LE(rel(s.wire_bytes_per_iteration_per_gpu, r.wire_bytes_per_iteration_per_gpu), kTol) << label;
  EXPECT_LE(rel(s.bytes_per_iteration_cluster, r.bytes_per_iteration_cluster), kTol) << label;
  EXPECT_LE(rel(s.time_per_iteration_s, r.time_per_iteration_s), kTol) << label;
  ASSERT_EQ(s.collectives.size(), r.collectives.size()) << label;
  for (std::size_t i = 0; i < s.collectives.size(); ++i) {
    const comm_collective& x = s.collectives[i];
    const comm_collective& y = r.collectives[i];
    EXPECT_EQ(x.what, y.what) << label;
    EXPECT_EQ(x.kind, y.kind) << label << " " << x.what;
    EXPECT_EQ(x.group, y.group) << label << " " << x.what;
    EXPECT_EQ(x.link, y.link) << label << " " << x.what;
    EXPECT_EQ(x.algorithm, y.algorithm) << label << " " << x.what;
    EXPECT_EQ(x.calls_per_iteration, y.calls_per_iteration) << label << " " << x.what;
    EXPECT_EQ(x.calls_per_iteration_cluster, y.calls_per_iteration_cluster) << label << " " << x.what;
    EXPECT_LE(rel(x.bytes_per_call, y.bytes_per_call), kTol) << label << " " << x.what;
    EXPECT_LE(rel(x.bytes_per_iteration_cluster, y.bytes_per_iteration_cluster), kTol) << label << " " << x.what;
    EXPECT_LE(rel(x.time_per_call_s, y.time_per_call_s), kTol) << label << " " << x.what;
  }
}

// The fast summary (stage classes evaluated once, link rates worked out once per group, prices reused)
// against analyze_comm and against the plain evaluation of every pipeline stage with every collective
// priced by estimate_collective, over a spread of layouts: every dimension, framework, ZeRO stage,
// recomputation, interleaving, uneven stages, MoE, rank orders (§4.4).
TEST(CommSummary, EqualsTheAnalysisAndTheStageByStageReferenceOnManyLayouts) {
  const std::vector<std::string> small = {"--num-layers", "8", "--hidden-size", "1024", "--num-attention-heads", "16",
                                          "--seq-length", "2048", "--vocab-size", "32000", "--mbs", "2"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = small;
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  const std::vector<std::vector<std::string>> layouts = {
      seed003_args(),
      {"--preset", "bloom-176b-production"},
      {"--model", "mixtral-8x7b", "--num-gpus", "64", "--tp", "2", "--pp", "4", "--ep", "8", "--sequence-parallel",
       "--use-distributed-optimizer", "--mbs", "1", "--gbs", "64", "--bf16"},
      {"--model", "mixtral-8x7b", "--num-gpus", "32", "--tp", "2", "--pp", "2", "--ep", "4", "--mbs", "1", "--gbs",
       "32", "--bf16", "--recompute-granularity", "full", "--recompute-method", "block", "--recompute-num-layers", "2"},
      {"--model", "llama2-70b", "--num-gpus", "256", "--tp", "8", "--pp", "8", "--vpp", "2", "--sp",
       "--use-distributed-optimizer", "--mbs", "1", "--gbs", "512", "--bf16", "--recompute-granularity", "full"},
      {"--model", "llama3-8b", "--num-gpus", "64", "--tp", "2", "--cp", "2", "--pp", "2", "--mbs", "1", "--gbs",
       "64", "--bf16", "--rank-order", "tp-dp-cp-ep-pp"},
      with({"--num-gpus", "1"}),
      with({"--tp", "4", "--sp", "--num-gpus", "4", "--gpus-per-node", "4", "--gbs", "6"}),
      with({"--cp", "4", "--num-gpus", "8", "--cp-comm-type", "all_gather", "--gpus-per-node", "4"}),
      with({"--cp", "2", "--num-gpus", "16", "--tp", "2", "--recompute-granularity", "full"}),
      with({"--pp", "4", "--vpp", "2", "--num-gpus", "16", "--gbs", "64", "--gpus-per-node", "4"}),
      with({"--tp", "2", "--pp", "2", "--num-gpus", "8", "--scatter-gather-tensors-in-pipeline"}),
      with({"--pp", "3", "--num-gpus", "12", "--decoder-first-pipeline-num-layers", "2", "--gpus-per-node", "4"}),
      with({"--pp", "3", "--num-gpus", "6", "--fp16", "--framework", "deepspeed", "--zero-stage", "1"}),
      with({"--num-gpus", "16", "--framework", "deepspeed", "--zero-stage", "2", "--fp16", "--bucket-size-bytes",
            "1000000"}),
      with({"--num-gpus", "16", "--framework", "deepspeed", "--zero-stage", "3", "--bf16"}),
      with({"--num-gpus", "16", "--framework", "fsdp", "--zero-stage", "3", "--bf16", "--gbs", "64"}),
      with({"--num-gpus", "16", "--framework", "fsdp", "--zero-stage", "2", "--bf16"}),
      with({"--num-gpus", "16", "--pp", "4", "--framework", "deepspeed", "--zero-stage", "1", "--bf16",
            "--embedding-as-stage", "--num-layers", "10", "--gpus-per-node", "4"}),
      with({"--num-gpus", "32", "--pp", "4", "--tp", "2", "--rank-order", "tp-pp-dp-cp-ep", "--bf16"}),
      with({"--num-gpus", "16", "--num-experts", "8", "--moe-router-topk", "2", "--ep", "4", "--moe-layer-freq",
            "2", "--pp", "2", "--bf16", "--use-distributed-optimizer"}),
  };
  for (const auto& args : layouts) {
    std::string label;
    for (const auto& a : args) label += a + " ";
    const job_spec job = job_of(args);
    const comm_report s = summarize_comm(job);
    const comm_report a = analyze_comm(job);
    const comm_report ref = detail::summarize_comm_reference(job);
    for (std::size_t d = 0; d < s.dimensions.size(); ++d) {
      expect_same_dimension(s.dimensions[d], a.dimensions[d], label + "(analysis)");
      expect_same_dimension(s.dimensions[d], ref.dimensions[d], label + "(reference)");
    }
    expect_same_dimension(s.scalars, ref.scalars, label + "(reference, scalars)");
    EXPECT_EQ(s.calls_per_iteration_cluster, ref.calls_per_iteration_cluster) << label;
    EXPECT_LE(rel(s.bytes_per_iteration_cluster, ref.bytes_per_iteration_cluster), 1e-12) << label;
    EXPECT_LE(rel(s.time_per_iteration_per_gpu_s, ref.time_per_iteration_per_gpu_s), 1e-12) << label;
  }
}

TEST(CommSummary, CollectiveListCopiesAndBoundsLikeAVector) {
  const comm_report r = summarize_comm(job_of(seed003_args()));
  const comm_report copy = r;  // NOLINT(performance-unnecessary-copy-initialization): the copy is the test
  const collective_list& tp = copy[parallel_dim::tp].collectives;
  ASSERT_EQ(tp.size(), r[parallel_dim::tp].collectives.size());
  ASSERT_FALSE(tp.empty());
  EXPECT_EQ(tp.front().what, r[parallel_dim::tp].collectives.front().what);
  EXPECT_EQ(tp.back().bytes_per_call, r[parallel_dim::tp].collectives.back().bytes_per_call);
  EXPECT_THROW((void)tp.at(tp.size()), std::out_of_range);
  collective_list full;
  for (std::size_t i = 0; i < collective_list::kCapacity; ++i) full.push_back(comm_collective{});
  EXPECT_THROW(full.push_back(comm_collective{}), std::length_error);
}

// ---- nccl-tests factors and time (§4.3) ----------------------------------------------------------

TEST(CommBusFactor, AsNcclTestsPerformanceMd) {
  EXPECT_DOUBLE_EQ(bus_factor(collective_kind::all_reduce, 8), 2.0 * 7 / 8);
  EXPECT_DOUBLE_EQ(bus_factor(collective_kind::all_gather, 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(bus_factor(collective_kind::reduce_scatter, 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(bus_factor(collective_kind::all_to_all, 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(bus_factor(collective_kind::broadcast, 8), 1.0);
  EXPECT_DOUBLE_EQ(bus_factor(collective_kind::send_recv, 2), 1.0);
  EXPECT_DOUBLE_EQ(bus_factor(collective_kind::all_reduce, 2), 1.0);
  EXPECT_DOUBLE_EQ(bus_factor(collective_kind::all_reduce, 1), 0.0);
  // all_reduce_bench.py (seeds/001): busbw = size/duration × 2(n−1)/n.
  EXPECT_DOUBLE_EQ(bus_factor(collective_kind::all_reduce, 4), 1.5);
}

TEST(CommTime, RingOnNvlink) {
  const cluster_spec c = find_cluster("dgx-h100");  // 450 GB/s NVLink × 0.8, 5 µs per step
  group_placement w;
  w.group_size = 8;
  const double bytes = 1 * kGiB;
  EXPECT_DOUBLE_EQ(collective_time_s(c, collective_kind::all_reduce, bytes, w), 14 * 5e-6 + bytes * 1.75 / 360e9);
  EXPECT_DOUBLE_EQ(collective_time_s(c, collective_kind::all_gather, bytes, w), 7 * 5e-6 + bytes * 0.875 / 360e9);
  // Small all-reduce: the tree's 2·log2(8) = 6 steps beat the ring's 14.
  const collective_estimate small = estimate_collective(c, collective_kind::all_reduce, 4, w);
  EXPECT_EQ(small.algorithm, "tree");
  EXPECT_DOUBLE_EQ(small.time_s, 6 * 5e-6 + 2 * 4 / 360e9);
  w.group_size = 1;
  EXPECT_EQ(collective_time_s(c, collective_kind::all_reduce, bytes, w), 0.0);
}

// The summary prices an all-gather and a reduce-scatter on the same group once (§4.4): they must cost
// the same on every kind of link, flat, shared network and hierarchical.
TEST(CommTime, AllGatherAndReduceScatterCostTheSameOnEveryLink) {
  const cluster_spec c = find_cluster("dgx-h100");
  const std::vector<group_placement> placements = {
      {.group_size = 8},
      {.group_size = 4, .num_nodes = 4, .gpus_per_node = 1, .concurrent_groups_per_node = 8,
       .link = link_kind::network},
      {.group_size = 16, .num_nodes = 2, .gpus_per_node = 8, .concurrent_groups_per_node = 1,
       .link = link_kind::hierarchical}};
  for (const group_placement& w : placements) {
    for (const double bytes : {4.0, 1e6, 1e9}) {
      const collective_estimate gather = estimate_collective(c, collective_kind::all_gather, bytes, w);
      const collective_estimate scatter = estimate_collective(c, collective_kind::reduce_scatter, bytes, w);
      EXPECT_EQ(gather.time_s, scatter.time_s) << w.group_size << " ranks, " << bytes << " bytes";
      EXPECT_EQ(gather.algorithm, scatter.algorithm);
      EXPECT_GT(gather.time_s, 0);
    }
  }
}

TEST(CommTime, NetworkSharedByTheGroupsOfANode) {
  const cluster_spec c = find_cluster("dgx-h100");  // 8 × 400 Gb/s = 400 GB/s per node, × 0.8, 10 µs
  group_placement w{.group_size = 2, .num_nodes = 2, .gpus_per_node = 1, .concurrent_groups_per_node = 8,
                    .link = link_kind::network};
  EXPECT_DOUBLE_EQ(collective_time_s(c, collective_kind::send_recv, 64 * kMiB, w), 10e-6 + 64 * kMiB / 40e9);
  // Hierarchical all-reduce of 16 ranks, 8 per node on 2 nodes, one group: reduce-scatter in the node,
  // all-reduce of 1/8 of the buffer across nodes (8 GPUs share the NICs), all-gather in the node.
  group_placement h{.group_size = 16, .num_nodes = 2, .gpus_per_node = 8, .concurrent_groups_per_node = 1,
                    .link = link_kind::hierarchical};
  const double b = kGiB;
  const double intra = 7 * 5e-6 + b * 0.875 / 360e9;
  const double inter = 2 * 10e-6 + (b / 8) * 1.0 / 40e9;
  EXPECT_DOUBLE_EQ(collective_time_s(c, collective_kind::all_reduce, b, h), intra + inter + intra);
}

TEST(CommTime, BloomDataParallelGroupsShareFourOmniPathLinks) {
  // BLOOM (TP 4, PP 12, DP 8, 8 GPUs per node): a DP group has 2 GPUs on each of 4 nodes; the 4 DP
  // groups of a node put 8 GPUs on its 4 × 100 Gb/s (50 GB/s × 0.70) at once.
  const job_spec job = job_of({"--preset", "bloom-176b-production"});
  const group_placement dp = placement_of(job, parallel_dim::dp);
  EXPECT_EQ(dp.group_size, 8);
  EXPECT_EQ(dp.num_nodes, 4);
  EXPECT_EQ(dp.gpus_per_node, 2);
  EXPECT_EQ(dp.concurrent_groups_per_node, 4);
  EXPECT_EQ(dp.link, link_kind::hierarchical);
  const double b = kGiB;
  const double nv = 300e9 * 0.8;
  const double per_gpu = 50e9 * 0.7 / 8;
  const double expected = (5e-6 + b * 0.5 / nv) + (2 * 3 * 15e-6 + (b / 2) * 1.5 / per_gpu) + (5e-6 + b * 0.5 / nv);
  EXPECT_DOUBLE_EQ(collective_time_s(job.cluster, collective_kind::all_reduce, b, dp), expected);
  // TP 4 stays in the node; PP crosses nodes with all 8 GPUs of a node sending at once.
  EXPECT_EQ(placement_of(job, parallel_dim::tp).link, link_kind::nvlink);
  const group_placement pp = placement_of(job, parallel_dim::pp);
  EXPECT_EQ(pp.link, link_kind::network);
  EXPECT_EQ(pp.concurrent_groups_per_node, 8);
}

// ---- rank order and groups (§4.1) ---------------------------------------------------------------

TEST(CommGroups, RankOrderFlagMovesTheDimensions) {
  std::vector<std::string> args = seed003_args();
  args.insert(args.end(), {"--rank-order", "tp-pp-cp-ep-dp"});
  const job_spec job = job_of(args);
  EXPECT_EQ(format_rank_order(job.parallel.rank_order), "tp-pp-cp-ep-dp");
  const comm_group_set pp = process_groups(job, parallel_dim::pp);
  EXPECT_EQ(names(pp.ranks.at(0), 8), (std::vector<std::string>{"n0_g0", "n0_g2"}));
  EXPECT_EQ(pp.placement.link, link_kind::nvlink);
  const comm_group_set dp = process_groups(job, parallel_dim::dp);
  EXPECT_EQ(names(dp.ranks.at(0), 8), (std::vector<std::string>{"n0_g0", "n0_g4", "n1_g0", "n1_g4"}));
  EXPECT_EQ(dp.placement.link, link_kind::hierarchical);
  EXPECT_EQ(dp.placement.gpus_per_node, 2);
  EXPECT_EQ(dp.placement.concurrent_groups_per_node, 4);
  // Comma-separated orders are accepted too.
  EXPECT_EQ(format_rank_order(parse_rank_order("pp,dp,ep,cp,tp")), "pp-dp-ep-cp-tp");
}

TEST(CommGroups, ExpertGroupsAreCarvedOutOfDataParallel) {
  // parallel_state.py: the expert generator has tp, ep, expert-dp = dp·cp/ep, pp in the same order.
  const job_spec job = job_of({"--num-layers", "4", "--hidden-size", "1024", "--num-attention-heads", "16",
                               "--seq-length", "1024", "--vocab-size", "32000", "--num-experts", "8",
                               "--moe-router-topk", "2", "--tp", "2", "--ep", "4", "--sp", "--num-nodes", "2",
                               "--gpus-per-node", "8", "--moe-token-dispatcher-type", "alltoall"});
  EXPECT_EQ(job.parallel.dp, 8);
  const comm_report r = analyze_comm(job);
  EXPECT_EQ(r[parallel_dim::ep].groups.ranks.at(0), (std::vector<std::int64_t>{0, 2, 4, 6}));
  EXPECT_EQ(r[parallel_dim::ep].groups.ranks.at(1), (std::vector<std::int64_t>{1, 3, 5, 7}));
  EXPECT_EQ(r[parallel_dim::dp].expert_groups.ranks.at(0), (std::vector<std::int64_t>{0, 8}));
  EXPECT_EQ(r[parallel_dim::dp].expert_groups.placement.link, link_kind::network);
  // All-to-all per MoE layer and micro-batch: dispatch + combine forward and backward; each GPU sends
  // its s·b/t tokens × top-k × h × 2 bytes (sequence parallel splits the tokens over TP).
  const comm_dimension& ep = r[parallel_dim::ep];
  const double sent = 1024.0 / 2 * 2 * 1024 * 2;
  EXPECT_EQ(ep.collectives.at(0).bytes_per_call, sent);
  // Expert TP = TP = 2: what each rank received is all-gathered over expert-TP (output 2 × sent) and
  // reduce-scattered back, in both passes (§4.2.5): 4 more calls per layer.
  EXPECT_EQ(row(ep, "received tokens all-gathered over expert-TP").bytes_per_call, 2 * sent);
  EXPECT_EQ(ep.calls_per_iteration_per_gpu, 4 * (4 + 4));  // 4 MoE layers, 1 micro-batch
  // Expert gradients are reduced over expert-DP (size 2), dense ones over DP (size 8).
  EXPECT_EQ(row(r[parallel_dim::dp], "expert gradient all-reduce").group_size, 2);
  EXPECT_EQ(row(r[parallel_dim::dp], "gradient all-reduce").group_size, 8);
}

// ---- traffic per dimension (§4.2) ----------------------------------------------------------------

std::vector<std::string> small_args() {
  return {"--num-layers", "8", "--hidden-size", "1024", "--num-attention-heads", "16", "--seq-length", "2048",
          "--vocab-size", "32000", "--untie-embeddings-and-output-weights", "--mbs", "2"};
}

TEST(CommTraffic, SequenceParallelTurnsEachAllReduceIntoGatherAndScatter) {
  auto args = small_args();
  args.insert(args.end(), {"--tp", "4", "--sp", "--num-gpus", "4", "--gpus-per-node", "4", "--gbs", "6"});
  const comm_report r = summarize_comm(job_of(args));
  const comm_dimension& tp = r[parallel_dim::tp];
  ASSERT_EQ(r.num_microbatches, 3);
  // Per layer: forward 2 all-gathers + 2 reduce-scatters, backward 4 all-gathers (output gradients and
  // the re-gathered inputs of QKV and fc1) + 2 reduce-scatters: 10; plus embedding reduce-scatter, the
  // output layer's all-gather and reduce-scatter, 3 cross-entropy all-reduces: 8 × 10 + 6 = 86.
  EXPECT_EQ(tp.calls_per_iteration_per_gpu, 3 * 86);
  const double a = 2048.0 * 2 * 1024 * 2;
  EXPECT_EQ(row(tp, "sequence all-gather before QKV").bytes_per_call, a);
  EXPECT_DOUBLE_EQ(tp.bytes_per_iteration_per_gpu, 3 * (83 * a + 3 * 2048.0 * 2 * 4));
}

TEST(CommTraffic, FullRecomputationRepeatsTheForwardAllReduces) {
  auto args = small_args();
  args.insert(args.end(), {"--tp", "2", "--num-gpus", "2", "--recompute-granularity", "full"});
  const comm_report r = summarize_comm(job_of(args));
  // 2 + 2 per layer, + 2 recomputed per layer; embedding, output, 3 cross-entropy: 8 × 6 + 5 = 53.
  EXPECT_EQ(r[parallel_dim::tp].calls_per_iteration_per_gpu, 53);
  EXPECT_EQ(row(r[parallel_dim::tp], "recomputed forward").calls_per_iteration, 16);
}

TEST(CommTraffic, ContextParallelRingAndAllGather) {
  auto args = small_args();
  args.insert(args.end(), {"--cp", "4", "--num-gpus", "4"});
  const comm_report ring = summarize_comm(job_of(args));
  // K and V of s/c tokens, 16 heads × 64: 2 × 512 × 2 × 1024 × 2 bytes = 4 MiB per step.
  const double kv = 2.0 * 512 * 2 * 1024 * 2;
  const comm_dimension& cp = ring[parallel_dim::cp];
  EXPECT_EQ(cp.collectives.at(0).bytes_per_call, kv);
  // Per layer: forward 3 steps × (isend + irecv), backward 3 × 2 × (isend + irecv): 18; 8 layers.
  EXPECT_EQ(cp.calls_per_iteration_per_gpu, 8 * 18);
  args.insert(args.end(), {"--cp-comm-type", "all_gather"});
  const comm_report ag = summarize_comm(job_of(args));
  // 2 all-gathers forward, 2 again backward, 2 reduce-scatters of the whole-sequence K or V: 2 MiB × 4.
  EXPECT_EQ(ag[parallel_dim::cp].calls_per_iteration_per_gpu, 8 * 6);
  EXPECT_EQ(ag[parallel_dim::cp].collectives.at(0).bytes_per_call, kv / 2 * 4);
  // Gradients are reduced over DP×CP.
  EXPECT_EQ(ag[parallel_dim::dp].groups.name, "dp-cp");
  EXPECT_EQ(ag[parallel_dim::dp].groups.group_size, 4);
}

TEST(CommTraffic, InterleavedPipelineSendsPerModelChunk) {
  auto args = small_args();
  args.insert(args.end(), {"--pp", "4", "--vpp", "2", "--num-gpus", "4", "--gbs", "8"});
  const comm_report r = summarize_comm(job_of(args));
  const comm_dimension& pp = r[parallel_dim::pp];
  ASSERT_EQ(r.num_microbatches, 4);
  // A middle rank: per micro-batch, per chunk an isend and an irecv forward and backward: 4 × v = 8.
  EXPECT_EQ(pp.calls_per_iteration_per_gpu, 8 * 4);
  // Cluster: 2 transfers × 2 ends × (v·p − 1) boundaries per micro-batch.
  EXPECT_EQ(pp.calls_per_iteration_cluster, 4 * (2 * 4 - 1) * 4);
  EXPECT_EQ(row(pp, "activation isend").bytes_per_call, 2048.0 * 2 * 1024 * 2);
}

TEST(CommTraffic, ScatterGatherSendsOneTpShardAndGathersIt) {
  auto args = small_args();
  args.insert(args.end(), {"--tp", "2", "--pp", "2", "--num-gpus", "4", "--scatter-gather-tensors-in-pipeline"});
  const comm_report r = summarize_comm(job_of(args));
  const double full = 2048.0 * 2 * 1024 * 2;
  EXPECT_EQ(row(r[parallel_dim::pp], "activation isend").bytes_per_call, full / 2);
  const auto& gather = row(r[parallel_dim::pp], "TP all-gather");
  EXPECT_EQ(gather.bytes_per_call, full);
  EXPECT_EQ(gather.group, "tp");
  EXPECT_EQ(gather.calls_per_iteration, 1);  // one receive per micro-batch on either stage
}

/// One GPU's data-parallel bytes of a job with Ψ parameters on 8 GPUs, by framework and ZeRO stage.
struct dp_case {
  std::vector<std::string> flags;
  std::int64_t calls;
  double bytes_per_param;  ///< Σ calls × buffer / Ψ
};

TEST(CommTraffic, DataParallelByZeroStage) {
  auto base = small_args();
  base.insert(base.end(), {"--num-gpus", "8", "--gbs", "32"});  // 2 micro-batches of 2 per GPU
  const job_spec probe = job_of(base);
  const double psi = static_cast<double>(count_parameters(probe.model, 1).total);
  // ZeRO-3/FSDP units (§4.2.4): 8 layers + the root module (embedding, final norm, output) = 9.
  const std::vector<dp_case> cases = {
      {{"--bf16"}, 1, 4},                                    // Megatron DDP: fp32 main-grad all-reduce
      {{"--fp16"}, 1, 2},                                    // fp16 grads
      {{"--bf16", "--use-distributed-optimizer"}, 2, 4 + 2},  // fp32 reduce-scatter + bf16 all-gather
      {{"--framework", "deepspeed", "--zero-stage", "1", "--bf16"}, 2, 4 + 2},  // BF16_Optimizer: fp32 all-reduce
      {{"--framework", "deepspeed", "--zero-stage", "1", "--fp16"}, 2, 2 + 2},
      {{"--framework", "deepspeed", "--zero-stage", "2", "--fp16"}, 3, 2 * 2 + 2},  // RS every micro-batch
      {{"--framework", "deepspeed", "--zero-stage", "3", "--fp16"}, 2 * 9 * 2 + 2, 2 * (2 + 2 + 2)},
      {{"--framework", "fsdp", "--zero-stage", "3", "--bf16"}, 3 * 9 * 2, 2 * (2 + 2 + 4)},
      {{"--framework", "fsdp", "--zero-stage", "2", "--bf16"}, 2 * 9 * 2, 2 * (2 + 4)},
  };
  for (const auto& c : cases) {
    auto args = base;
    args.insert(args.end(), c.flags.begin(), c.flags.end());
    const comm_report r = summarize_comm(job_of(args));
    const comm_dimension& dp = r[parallel_dim::dp];
    std::string label;
    for (const auto& f : c.flags) label += f + " ";
    EXPECT_EQ(dp.calls_per_iteration_per_gpu, c.calls) << label;
    EXPECT_NEAR(dp.bytes_per_iteration_per_gpu / psi, c.bytes_per_param, 1e-9) << label;
  }
}

TEST(CommTraffic, ZeroThreeMovesOneAndAHalfTimesZeroTwoForTheRobertaOfDeepSpeedIssue1069) {
  // seeds/002: a 10B RoBERTa-like model (30 layers, hidden 5120, 40 heads, FFN 20480, 512 tokens),
  // DeepSpeed fp16, 16 p3dn nodes of 8 GPUs (1 × 100 Gb/s EFA), batch 8 per GPU, one micro-batch.
  std::vector<std::string> args = {
      "--num-layers", "30", "--hidden-size", "5120", "--num-attention-heads", "40", "--ffn-hidden-size", "20480",
      "--seq-length", "512", "--max-position-embeddings", "514", "--vocab-size", "50265",
      "--make-vocab-size-divisible-by", "1", "--embedding-norm", "--fp16", "--framework", "deepspeed", "--mbs", "8",
      "--cluster", "dgx-a100", "--gpu", "a100-sxm4-40gb", "--nic-bandwidth-gbit-per-s", "100", "--nics-per-node", "1",
      "--num-nodes", "16"};
  auto with = [&](std::vector<std::string> zero) {
    auto a = args;
    a.insert(a.end(), zero.begin(), zero.end());
    return summarize_comm(job_of(a));
  };
  // The issue's DeepSpeed (2021) reduced ZeRO-2's gradients rank by rank, a reduce-scatter's bytes (§4.2.4).
  const comm_report z2 = with({"--zero-stage", "2", "--zero-grad-reduce", "reduce"});
  const comm_report z3 = with({"--zero-stage", "3"});
  const comm_dimension& d2 = z2[parallel_dim::dp];
  const comm_dimension& d3 = z3[parallel_dim::dp];
  const double psi = d2.bytes_per_iteration_per_gpu / 4;  // ZeRO-2: reduce-scatter 2Ψ + all-gather 2Ψ
  EXPECT_GT(psi, 9.5e9);
  EXPECT_LT(psi, 10e9);
  // ZeRO-3 gathers the fp16 parameters in forward and again in backward (2Ψ + 2Ψ) and reduce-scatters
  // the gradients (2Ψ); ZeRO-2 reduce-scatters (2Ψ) and gathers the updated parameters once (2Ψ):
  // 6Ψ / 4Ψ = 1.5 with one micro-batch per step (3m/(m+1) with m micro-batches).
  EXPECT_DOUBLE_EQ(d3.bytes_per_iteration_per_gpu / d2.bytes_per_iteration_per_gpu, 1.5);
  EXPECT_DOUBLE_EQ(d3.wire_bytes_per_iteration_per_gpu / d2.wire_bytes_per_iteration_per_gpu, 1.5);
  // ...in many more, smaller calls: one gather per layer per pass (31 units) against 20 buckets of 5e8.
  EXPECT_EQ(d2.calls_per_iteration_per_gpu, 20 + 20);
  EXPECT_EQ(d3.calls_per_iteration_per_gpu, 2 * 31 + 20);
  // Every GPU's DP traffic crosses the node's one 100 Gb/s NIC shared by its 8 GPUs: the time ratio
  // follows the bytes (the measured 2.3× TFLOPs drop adds launch and synchronisation overheads).
  const double ratio = d3.time_per_iteration_s / d2.time_per_iteration_s;
  EXPECT_GT(ratio, 1.45);
  EXPECT_LT(ratio, 1.6);
  EXPECT_EQ(d3.groups.placement.link, link_kind::hierarchical);
  // Today's DeepSpeed all-reduces each bucket whole (use_multi_rank_bucket_allreduce, on by default): the
  // same 20 calls of the same buffers, each moving 2(n−1)/n of it on the wire against (n−1)/n.
  const comm_report today_report = with({"--zero-stage", "2"});
  const comm_dimension& today = today_report[parallel_dim::dp];
  EXPECT_EQ(today.calls_per_iteration_per_gpu, d2.calls_per_iteration_per_gpu);
  EXPECT_DOUBLE_EQ(today.bytes_per_iteration_per_gpu, d2.bytes_per_iteration_per_gpu);
  const double rs_wire = d2.wire_bytes_per_iteration_per_gpu / 2;  // the gradient half of ZeRO-2's wire bytes
  EXPECT_NEAR(today.wire_bytes_per_iteration_per_gpu, d2.wire_bytes_per_iteration_per_gpu + rs_wire, 1e-6 * rs_wire);
}

// ---- bad input -----------------------------------------------------------------------------------

void expect_input_error(const std::vector<std::string>& args, const std::string& needle) {
  try {
    const job_spec job = job_of(args);
    (void)summarize_comm(job);
    ADD_FAILURE() << "no error; wanted one mentioning " << needle;
  } catch (const input_error& e) {
    EXPECT_NE(cli_message(e).find(needle), std::string::npos) << cli_message(e);
  }
}

TEST(CommBadInput, RankOrderMustBeAPermutation) {
  for (const char* bad : {"tp-cp-dp-pp", "tp-cp-ep-dp-dp", "tp-cp-ep-dp-pp-tp", "tp-cp-xp-dp-pp", "", "tp--cp-ep-dp-pp"}) {
    auto args = seed003_args();
    args.insert(args.end(), {"--rank-order", bad});
    expect_input_error(args, "--rank-order");
  }
}

TEST(CommBadInput, UnevenGroupCannotBePlaced) {
  // TP 3 on nodes of 8: the group [n0_g6 n0_g7 n1_g0] has 2 GPUs on one node and 1 on the other.
  expect_input_error({"--num-layers", "2", "--hidden-size", "768", "--num-attention-heads", "12", "--seq-length", "512",
                      "--vocab-size", "1000", "--tp", "3", "--num-gpus", "24", "--gpus-per-node", "8"},
                     "--gpus-per-node");
}

TEST(CommBadInput, BandwidthAndLatencyMustBePositive) {
  auto args = seed003_args();
  for (const auto& [flag, value] : std::vector<std::pair<std::string, std::string>>{
           {"--nic-bandwidth-gbit-per-s", "0"},
           {"--intra-node-bandwidth-gb-per-s", "-5"},
           {"--intra-node-latency-us", "0"},
           {"--inter-node-latency-us", "-1"}}) {
    auto a = args;
    a.insert(a.end(), {flag, value});
    expect_input_error(a, flag);
  }
}

// ---- CLI -----------------------------------------------------------------------------------------

struct run_result {
  int status;
  std::string output;
};

run_result run_cli(const std::string& args) {
  const std::string cmd = std::string(TRAINPLAN_BINARY) + " " + args + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  run_result r{-1, ""};
  if (pipe == nullptr) return r;
  char buf[4096];
  std::size_t n = 0;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) r.output.append(buf, n);
  const int st = pclose(pipe);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

std::string seed003_cli_flags() {
  std::string s;
  for (const auto& a : seed003_args()) s += " " + a;
  return s;
}

TEST(CommCli, JsonHasEveryDimensionAndTheSeedsGroups) {
  const run_result r = run_cli("comm --json" + seed003_cli_flags());
  ASSERT_EQ(r.status, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["schema_version"], 1);
  const auto& dims = j["comm"]["dimensions"];
  for (const char* d : {"tp", "cp", "ep", "dp", "pp", "embedding"}) {
    ASSERT_TRUE(dims.contains(d)) << d;
    for (const char* key : {"group_size", "num_groups", "groups", "calls_per_iteration_per_gpu",
                            "bytes_per_iteration_per_gpu", "calls_per_iteration_cluster",
                            "bytes_per_iteration_cluster", "time_per_iteration_s", "collectives"}) {
      EXPECT_TRUE(dims[d].contains(key)) << d << "." << key;
    }
  }
  EXPECT_EQ(dims["pp"]["groups"][0], nlohmann::json({"n0_g0", "n1_g0"}));
  EXPECT_EQ(dims["tp"]["groups"].size(), 8u);
  EXPECT_EQ(dims["pp"]["calls_per_iteration_cluster"], 1024);
  const auto& c = dims["tp"]["collectives"][0];
  for (const char* key : {"kind", "phase", "bytes_per_call", "calls_per_iteration", "link", "time_per_call_s"})
    EXPECT_TRUE(c.contains(key)) << key;
  EXPECT_EQ(c["kind"], "all_reduce");
  EXPECT_EQ(c["bytes_per_call"], 67108864);
}

TEST(CommCli, TextShowsUnitsAndGroups) {
  const run_result r = run_cli("comm" + seed003_cli_flags());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("(GiB/iter)"), std::string::npos);
  EXPECT_NE(r.output.find("[n0_g0 n1_g0]"), std::string::npos);
  EXPECT_NE(r.output.find("[n0_g0 n0_g2 n0_g4 n0_g6]"), std::string::npos);
  EXPECT_NE(r.output.find("8 groups in all"), std::string::npos);
}

TEST(CommCli, BadRankOrderExitsTwoNamingTheFlag) {
  const run_result r = run_cli("comm" + seed003_cli_flags() + " --rank-order tp-cp-ep-dp");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find("--rank-order"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("permutation"), std::string::npos) << r.output;
}


// §4.2.1: torchtitan's sequence-parallel blocks (DTensor, --framework fsdp): autograd keeps the gathered
// input for the weight gradients, so the backward all-gathers the output gradient alone (Megatron also
// re-gathers the input: 2 per block); under torchao float8 (Float8ColwiseParallel, PrepareFloat8ModuleInput,
// Float8RowwiseParallel) every all-gather moves e4m3/e5m2 bytes, the reduce-scatters bf16.
TEST(CommTp, TorchtitansBlocksGatherTheOutputGradientOnceAndInFloat8) {
  const std::vector<std::string> llama = {"--model", "llama3-70b", "--cluster", "dgx-h100", "--num-gpus", "64",
                                          "--framework", "fsdp", "--zero-stage", "3", "--tp", "8",
                                          "--sequence-parallel", "--recompute-granularity", "full", "--bf16"};
  auto row = [](const job_spec& job, std::string_view what) {
    const comm_report r = summarize_comm(job);
    for (const comm_collective& c : r[parallel_dim::tp].collectives) {
      if (c.what == what) return c;
    }
    ADD_FAILURE() << what;
    return comm_collective{};
  };
  const double a = 8192.0 * 8192.0 * 2;  // MBS 1 × 8,192 tokens × hidden 8,192, bf16
  const job_spec bf16 = job_of(llama);
  std::vector<std::string> f8 = llama;
  f8.insert(f8.end(), {"--fp8-format", "hybrid", "--fp8-recipe", "tensorwise"});
  const job_spec fp8 = job_of(f8);
  const std::string_view gathers[] = {"block input all-gather before QKV and w1/w3 (2 per layer)",
                                      "output-gradient all-gather before wo's and w2's data gradient (2 per layer)",
                                      "recomputed forward all-gather (2 per recomputed layer)"};
  for (const std::string_view g : gathers) {
    EXPECT_DOUBLE_EQ(row(bf16, g).bytes_per_call, a) << g;
    EXPECT_DOUBLE_EQ(row(fp8, g).bytes_per_call, a / 2) << g;
  }
  EXPECT_DOUBLE_EQ(row(fp8, "reduce-scatter after wo and w2 (2 per layer)").bytes_per_call, a);
  EXPECT_DOUBLE_EQ(row(fp8, "QKV and w1/w3 input-gradient reduce-scatter (2 per layer)").bytes_per_call, a);
  // Megatron-Core's blocks re-gather the input in the backward: twice the backward all-gathers per block.
  std::vector<std::string> megatron = {"--model", "llama3-70b", "--cluster", "dgx-h100", "--num-gpus", "64",
                                       "--tp", "8", "--sequence-parallel", "--bf16"};
  const comm_collective m = row(job_of(megatron),
                                "output-gradient all-gather (2) and input re-gather for weight gradients (2) per layer");
  EXPECT_DOUBLE_EQ(m.bytes_per_call, a);
}

}  // namespace
}  // namespace trainplan
