// Megatron-Core's --pipeline-model-parallel-layout (docs/formulas.md §2.2.1): the string read as
// PipelineParallelLayerLayout reads it, Megatron's own examples and unit-test goldens, its checks, and the
// split it gives equal to the split the other flags give where they describe the same layout.
#include "trainplan/core/job/layout_string.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "trainplan/cli/args.h"
#include "trainplan/core/base/error.h"
#include "trainplan/core/estimate/memory.h"
#include "trainplan/core/estimate/time.h"
#include "trainplan/core/job/layout.h"

namespace trainplan {
namespace {

using ::testing::HasSubstr;

/// A stage as "E3tmL" counts: embedding, transformer layers, MTP layers, loss.
std::string shown(const layout_stage& s) {
  return std::string(s.embedding ? "E" : "") + std::to_string(s.decoder) + "t" + std::string(s.mtp > 0 ? "m" : "") +
         std::string(s.loss ? "L" : "");
}

std::vector<std::string> shown(const std::vector<layout_stage>& stages) {
  std::vector<std::string> out;
  for (const layout_stage& s : stages) out.push_back(shown(s));
  return out;
}

std::string error_of(std::string_view text) {
  try {
    parse_pipeline_layout(text);
  } catch (const input_error& e) {
    return e.what();
  }
  return "";
}

TEST(LayoutString, MegatronsDocstringExample) {
  // parse_str_to_list's docstring: "Ettt|(tt|)*29,m|L" is [E,t,t,t] + [t,t]×29 + [m] + [L].
  const std::vector<layout_stage> st = parse_pipeline_layout("Ettt|(tt|)*29,m|L");
  ASSERT_EQ(st.size(), 32u);
  EXPECT_EQ(shown(st[0]), "E3t");
  for (std::size_t i = 1; i <= 29; ++i) EXPECT_EQ(shown(st[i]), "2t") << i;
  EXPECT_EQ(shown(st[30]), "0tm");
  EXPECT_EQ(shown(st[31]), "0tL");
}

TEST(LayoutString, UnrollsAsPythonsRegularExpressionsDo) {
  // (…)*n first, then x*n; commas are cosmetic; a repeat of 0 is nothing; leading zeros are read.
  EXPECT_THAT(shown(parse_pipeline_layout("E(t|tt|)*2,tL")), ::testing::ElementsAre("E1t", "2t", "1t", "2t", "1tL"));
  EXPECT_THAT(shown(parse_pipeline_layout("Et*0tL")), ::testing::ElementsAre("E1tL"));
  EXPECT_THAT(shown(parse_pipeline_layout("Et*03|t*2,L")), ::testing::ElementsAre("E3t", "2tL"));
  // An empty stage is allowed (Megatron's docs: "E||t|L").
  EXPECT_THAT(shown(parse_pipeline_layout("E||t|L")), ::testing::ElementsAre("E0t", "0t", "1t", "0tL"));
  // `|*2` repeats the separator, as `(.)\*(\d+)` matches any character.
  EXPECT_THAT(shown(parse_pipeline_layout("Et|*2tL")), ::testing::ElementsAre("E1t", "0t", "1tL"));
}

TEST(LayoutString, RefusesWhatMegatronRefuses) {
  EXPECT_THAT(error_of("Ex|tL"), HasSubstr("parallel.pipeline_layout has the character x"));
  // Nested parentheses: the first ')' closes the group, a '(' is left over (Megatron's assertion too).
  EXPECT_THAT(error_of("E((t)*2)*3|L"), HasSubstr("has the character ("));
  EXPECT_THAT(error_of("t|EL"), HasSubstr("the first layer must be the embedding, E"));
  EXPECT_THAT(error_of("E|t"), HasSubstr("the last layer must be the loss, L"));
  EXPECT_THAT(error_of("EEt|L"), HasSubstr("the embedding, E, must be given exactly once"));
  EXPECT_THAT(error_of("Et|LtL"), HasSubstr("the loss, L, must be given exactly once"));
  EXPECT_THAT(error_of("Emt|L"), HasSubstr("transformer layers (t) must come before the MTP layers (m)"));
  EXPECT_THAT(error_of(""), HasSubstr("the first layer must be the embedding"));
}

TEST(LayoutString, UnrollingIsBounded) {
  // Refused before anything that size is built.
  EXPECT_THAT(error_of("E(t|)*99999999999999999999|L"), HasSubstr("at most 1048576 layers are read"));
  EXPECT_THAT(error_of("E(tttt)*300000L"), HasSubstr("unrolls to more than 1048576 characters"));
  EXPECT_THAT(error_of("Et*1048577L"), HasSubstr("at most 1048576"));
}

parsed_job layout_job(const std::string& layout, const std::vector<std::string>& more = {}) {
  std::vector<std::string> a = {"--model", "llama3-8b", "--num-layers", "8", "--cluster", "dgx-h100", "--num-gpus", "8",
                                "--tp", "2", "--pp", "4", "--gbs", "64", "--bf16"};
  if (!layout.empty()) {
    a.push_back("--pipeline-model-parallel-layout");
    a.push_back(layout);
  }
  a.insert(a.end(), more.begin(), more.end());
  return parse_job_args(a);
}

TEST(LayoutString, MegatronsLayerNumberGolden) {
  // tests/unit_tests/transformer/test_transformer_block.py test_layout_layer_number (Megatron-LM d98e8a6):
  // [E], [t], [t,t], [t], [], [t], [t], [t,t,L] at PP 4, VPP 2 builds layers (1-based) rank 0: none;
  // rank 1: 1 | 5; rank 2: 2, 3 | 6; rank 3: 4 | 7, 8.
  const parsed_job pj = layout_job("E|t|tt|t||t|t|ttL");
  EXPECT_EQ(pj.job.parallel.vpp, 2);
  const std::vector<stage_layout> stages = pipeline_layout(pj.job);
  ASSERT_EQ(stages.size(), 4u);
  const std::vector<std::int64_t> layers = {stages[0].num_layers, stages[1].num_layers, stages[2].num_layers,
                                            stages[3].num_layers};
  EXPECT_THAT(layers, ::testing::ElementsAre(0, 2, 3, 3));
  EXPECT_EQ(stages[1].first_layer, 0);  // layer 1, 1-based
  EXPECT_EQ(stages[2].first_layer, 1);
  EXPECT_EQ(stages[3].first_layer, 3);
  EXPECT_TRUE(stages.front().has_embedding);
  EXPECT_TRUE(stages.back().has_output);
  // Layer kinds follow the layer numbers chunk by chunk: DeepSeek-V3's first three layers are dense, so
  // rank 1 holds dense layer 0 and MoE layer 4, rank 2 dense 1, 2 and MoE 5, rank 3 MoE 3, 6, 7.
  const parsed_job ds = parse_job_args({"--model", "deepseek-v3", "--num-layers", "8", "--mtp-num-layers", "0",
                                        "--cluster", "dgx-h100", "--num-gpus", "32", "--pp", "4", "--ep", "8", "--gbs",
                                        "64", "--bf16", "--pipeline-model-parallel-layout", "E|t|tt|t||t|t|ttL"});
  const std::vector<stage_layout> ds_stages = pipeline_layout(ds.job);
  EXPECT_EQ(ds_stages[1].of(layer_kind::dense), 1);
  EXPECT_EQ(ds_stages[1].num_moe_layers(), 1);
  EXPECT_EQ(ds_stages[2].of(layer_kind::dense), 2);
  EXPECT_EQ(ds_stages[2].num_moe_layers(), 1);
  EXPECT_EQ(ds_stages[3].of(layer_kind::dense), 0);
  EXPECT_EQ(ds_stages[3].num_moe_layers(), 3);
}

std::string job_error(const std::string& layout, const std::vector<std::string>& more = {}) {
  try {
    layout_job(layout, more);
  } catch (const input_error& e) {
    return e.what();
  }
  return "";
}

TEST(LayoutString, MegatronsChecksAndWhatIsNotModelled) {
  EXPECT_THAT(job_error("Ett|tt|ttL"), HasSubstr("the 3 stages of --pipeline-model-parallel-layout must be divisible by --pipeline-model-parallel-size (4)"));
  EXPECT_THAT(job_error("Et|tt|tt|tL"), HasSubstr("--pipeline-model-parallel-layout places 6 transformer layers (t); --num-layers is 8"));
  EXPECT_THAT(job_error("Ett|tt|tt|ttL", {"--vpp", "2"}), HasSubstr("--virtual-pipeline-model-parallel-size (2) conflicts with --pipeline-model-parallel-layout: its 4 stages"));
  EXPECT_THAT(job_error("Ett|tt|tt|ttL", {"--decoder-first-pipeline-num-layers", "2"}),
              HasSubstr("cannot be set with --decoder-first-pipeline-num-layers (Megatron-Core raises ValueError"));
  EXPECT_THAT(job_error("Ett|tt|tt|ttL", {"--account-for-loss-in-pipeline-split"}),
              HasSubstr("cannot be set with --account-for-loss-in-pipeline-split"));
  EXPECT_THAT(job_error("Ett|tt|tt|ttL", {"--framework", "deepspeed"}),
              HasSubstr("is Megatron-Core's (and torchtitan's split points); not with --framework deepspeed"));
  // torchtitan places its stages the same way (stage i on rank i mod PP): the layout plans under FSDP.
  EXPECT_EQ(job_error("Ett|tt|tt|ttL", {"--framework", "fsdp", "--zero-stage", "3"}), "");
  // Chunks past the layers: "E|*1000tt|tt|tt|ttL" is 1,004 stages over PP 4, 251 chunks a rank for 8 layers.
  EXPECT_THAT(job_error("E|*1000tt|tt|tt|ttL"), HasSubstr("gives 251 model chunks per rank, more than the model's 10 layers"));
  // An empty first stage moves the embedding to rank 1; an empty last one moves the loss off the last rank.
  EXPECT_THAT(job_error("|Ett|ttt|ttt|||L|"), HasSubstr("puts the embedding on pipeline rank 1"));
  EXPECT_THAT(job_error("Ett|tt|tt|tt|L|||"), HasSubstr("puts the loss on pipeline rank 0 of 4"));
  // MTP: as many as the model has, in one stage, in a rank's last chunk, beside the loss.
  const std::vector<std::string> mtp = {"--mtp-num-layers", "1"};
  EXPECT_THAT(job_error("Ett|tt|tt|ttL", mtp), HasSubstr("places 0 MTP layers (m); --mtp-num-layers is 1"));
  EXPECT_THAT(job_error("Ett|tt|tt|ttmL", mtp), ::testing::IsEmpty());
  EXPECT_THAT(job_error("Ett|tt|tt|ttm|||L|", mtp), HasSubstr("puts MTP layers in model chunk 0 of pipeline rank 3"));
  EXPECT_THAT(job_error("Et|t|t|t|t|t|t|t|||m|L", mtp), HasSubstr("puts the MTP layers on pipeline rank 2"));
}

TEST(LayoutString, AStandardSplitWrittenAsALayoutPlansTheSame) {
  // The layout that spells out a split the other flags give: the same stages, memory and time.
  struct pair {
    std::string layout;
    std::vector<std::string> flags;
  };
  for (const pair& c : std::vector<pair>{
           {"Ett|tt|tt|ttL", {}},
           {"Et|t|t|t|t|t|t|tL", {"--vpp", "2"}},
           {"Et|ttt|ttt|tL", {"--decoder-first-pipeline-num-layers", "1", "--decoder-last-pipeline-num-layers", "1"}},
       }) {
    const job_spec with = layout_job(c.layout).job;
    const job_spec without = layout_job("", c.flags).job;
    const std::vector<stage_layout> a = pipeline_layout(with), b = pipeline_layout(without);
    ASSERT_EQ(a.size(), b.size()) << c.layout;
    for (std::size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(a[i].num_layers, b[i].num_layers) << c.layout << " rank " << i;
      EXPECT_EQ(a[i].first_layer, b[i].first_layer) << c.layout << " rank " << i;
    }
    EXPECT_EQ(with.parallel.vpp, without.parallel.vpp) << c.layout;
    EXPECT_DOUBLE_EQ(estimate_memory(with).peak_reserved_bytes, estimate_memory(without).peak_reserved_bytes) << c.layout;
    EXPECT_DOUBLE_EQ(estimate_time(with).iteration_s, estimate_time(without).iteration_s) << c.layout;
  }
}

TEST(LayoutString, ActivationsHeldCountChunkByChunk) {
  // §3.5: the last of 2 ranks at VPP 2 holds its first 2(p − r − 1) + (v − 1)p + 1 = 3 virtual
  // micro-batches at its peak, chunk 0, chunk 0, chunk 1 (Megatron's groups of p). With all 8 of its
  // layers in chunk 0 ("E|tttttttt||L") that is 2 × 8 layer-micro-batches; split 4 + 4 it is 2 × 4 + 4:
  // 4 layers' activations more, everything else alike.
  auto rank1 = [](const std::string& layout) {
    const parsed_job pj = parse_job_args({"--model", "llama3-8b", "--num-layers", "8", "--cluster", "dgx-h100",
                                          "--num-gpus", "8", "--tp", "4", "--pp", "2", "--gbs", "64", "--bf16",
                                          "--pipeline-model-parallel-layout", layout});
    return estimate_memory(pj.job);
  };
  const memory_report lopsided = rank1("E|tttttttt||L"), even = rank1("E|tttt||ttttL");
  EXPECT_NEAR(lopsided.stages[1].activations_bytes - even.stages[1].activations_bytes, 4 * even.layer_activations.total(),
              1e-6 * even.stages[1].activations_bytes);
  EXPECT_GT(even.layer_activations.total(), 0);
}

// A hybrid pattern's '|' segments (Megatron-Core hybrid_layer_allocation.py select_pipeline_segment): one
// stage per segment, the embedding first and the loss last, VPP = segments / PP (validate_args); an
// MTP part after '/' is not a segment.
TEST(HybridSegments, ASegmentPerStage) {
  EXPECT_TRUE(hybrid_pipeline_segments("M-M*M-").empty());
  EXPECT_THAT(shown(hybrid_pipeline_segments("M-M*|M-|*/MM")), ::testing::ElementsAre("E4t", "2t", "1tL"));
  EXPECT_THAT(shown(hybrid_pipeline_segments("M|")), ::testing::ElementsAre("E1t", "0tL"));
}

TEST(HybridSegments, PlanAsTheSplitTheyDescribe) {
  using args_t = std::vector<std::string>;
  const args_t model = {"--hidden-size", "1024", "--num-attention-heads", "16", "--seq-length", "2048",
                        "--vocab-size", "32000", "--gbs", "64", "--mbs", "1", "--num-gpus", "8"};
  auto job = [&](const std::string& pattern, const args_t& extra) {
    args_t a = model;
    a.insert(a.end(), {"--hybrid-layer-pattern", pattern});
    a.insert(a.end(), extra.begin(), extra.end());
    return parse_job_args(a).job;
  };
  // Even segments are the even split; four over PP 2 are two model chunks per rank.
  const job_spec piped = job("MMMM|****", {"--pp", "2"}), plain = job("MMMM****", {"--pp", "2"});
  EXPECT_EQ(piped.model.hybrid_pattern, "MMMM****");
  EXPECT_DOUBLE_EQ(estimate_memory(piped).peak_reserved_bytes, estimate_memory(plain).peak_reserved_bytes);
  EXPECT_DOUBLE_EQ(estimate_time(piped).iteration_s, estimate_time(plain).iteration_s);
  EXPECT_EQ(job("MM|**|MM|**", {"--pp", "2"}).parallel.vpp, 2);
  // Uneven segments: five Mamba layers on the first rank, three attention layers on the last.
  const std::vector<stage_layout> uneven = pipeline_layout(job("MMMMM|***", {"--pp", "2"}));
  ASSERT_EQ(uneven.size(), 2u);
  EXPECT_EQ(uneven[0].num_layers, 5);
  EXPECT_EQ(uneven[1].num_layers, 3);
  // Megatron's checks, naming the pattern.
  auto error = [&](const std::string& pattern, const args_t& extra) {
    try {
      job(pattern, extra);
    } catch (const input_error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error("MM|**|MM|**", {"--pp", "8"}),
            "the 4 stages of --hybrid-layer-pattern must be divisible by --pipeline-model-parallel-size (8)");
  EXPECT_THAT(error("MM|**", {}), HasSubstr("--hybrid-layer-pattern's 2 pipeline segments need --pipeline-model-parallel-size > 1"));
  EXPECT_THAT(error("MM|**", {"--pp", "2", "--decoder-first-pipeline-num-layers", "1"}),
              HasSubstr("--decoder-first-pipeline-num-layers with --hybrid-layer-pattern: its | segments place every layer"));
  EXPECT_THAT(error("MM**", {"--pp", "2", "--pipeline-model-parallel-layout", "Et|tttL"}),
              HasSubstr("--pipeline-model-parallel-layout with --hybrid-layer-pattern"));
  EXPECT_THAT(error("MM**", {"--pp", "2", "--vpp", "2"}),
              HasSubstr("--virtual-pipeline-model-parallel-size with --hybrid-layer-pattern needs the pattern's pipeline segments"));
}

}  // namespace
}  // namespace trainplan
