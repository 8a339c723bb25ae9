// Real launch lines and configs from the frameworks' public repositories, read unchanged (issue 29):
// every file of tests/data/launch plans; the model read from a line equals the catalog's where both exist.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "test_support.h"
#include "trainplan/cli/cli.h"
#include "trainplan/core/base/error.h"
#include "trainplan/core/model/model.h"
#include "trainplan/core/plan/plan.h"

namespace trainplan {
namespace {

/// A corpus file as argv: "# trainplan:" flags, then "--", then the line's words (double quotes group
/// words, a lone backslash continues the line, other # lines are comments; {here} is the file's folder,
/// where the configs a line names lie).
std::vector<std::string> args_of(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::vector<std::string> own, line;
  for (std::string text; std::getline(in, text);) {
    if (text.starts_with("# trainplan:")) {
      std::istringstream words(text.substr(12));
      for (std::string w; words >> w;) own.push_back(w);
      continue;
    }
    if (text.starts_with("#")) continue;
    std::string word;
    bool quoted = false, any = false;
    for (char c : text + " ") {
      if (c == '"') {
        quoted = !quoted;
        any = true;
      } else if ((c == ' ' || c == '\t') && !quoted) {
        if (const std::size_t at = word.find("{here}"); at != std::string::npos) {
          word.replace(at, 6, file.parent_path().string());
        }
        if (any && word != "\\") line.push_back(word);
        word.clear();
        any = false;
      } else {
        word += c;
        any = true;
      }
    }
  }
  own.push_back("--");
  own.insert(own.end(), line.begin(), line.end());
  return own;
}

std::vector<std::filesystem::path> corpus() {
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::recursive_directory_iterator(testing::data_path("launch"))) {
    if (e.path().extension() == ".args") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(LaunchCorpus, EveryRealLineIsPlannedUnchanged) {
  const std::vector<std::filesystem::path> files = corpus();
  ASSERT_GE(files.size(), 2u);
  for (const auto& f : files) {
    try {
      const parsed_job pj = parse_job_args(args_of(f));
      EXPECT_GT(pj.job.num_gpus, 0) << f;
    } catch (const input_error& e) {
      ADD_FAILURE() << f << ": " << e.what();
    }
  }
}

// Megatron-LM's ModelOpt conf of gpt-oss-120b: the catalog's 116,829,156,672 parameters (the model card's
// 116.83B) with --quick-geglu (gated, 4h default width), --enable-gpt-oss (YaRN rotary, no position table),
// the router's bias (add_bias_linear) and --window-size 127,0 (128 tokens).
TEST(LaunchCorpus, GptOss120bConfEqualsTheCatalogModel) {
  const parsed_job pj = parse_job_args(args_of(testing::data_path("launch/megatron-lm/gpt-oss-120b-modelopt.args")));
  const model_spec& catalog = find_model("gpt-oss-120b").spec;
  EXPECT_EQ(count_parameters(pj.job.model, 1).total, count_parameters(catalog, 1).total);
  EXPECT_EQ(count_parameters(pj.job.model, 1).total, 116829156672);
  EXPECT_EQ(pj.job.model.sliding_window, catalog.sliding_window);
  EXPECT_EQ(pj.job.training.attention, training_config::attention_backend::unfused);  // local attention, CP 1
}

// Megatron-LM's GPT-3 175B example: the vocabulary from its GPT-2 BPE files (not readable here: GPT-2's
// 50,257, said as derived), the step schedule read by `plan`.
TEST(LaunchCorpus, Gpt3ExampleTakesItsTokenizersVocabulary) {
  const std::vector<std::string> args = args_of(testing::data_path("launch/megatron-lm/gpt3-175b.args"));
  const parsed_job pj = parse_job_args(args);
  EXPECT_EQ(pj.job.model.vocab_size, 50257);
  EXPECT_EQ(count_parameters(pj.job.model, 8).total, count_parameters(find_model("gpt3-175b").spec, 8).total);
  EXPECT_THAT(pj.derived_flags, ::testing::ElementsAre(::testing::StartsWith("--vocab-size 50257 (GPT2BPETokenizer")));
  const plan_request req = parse_plan_request(args);
  EXPECT_EQ(req.inputs.batch_schedule.size(), 6u);
}

TEST(LaunchCorpus, ATokenizerNotKnownHereNamesVocabSize) {
  const std::vector<std::string> line = {"--num-gpus", "8", "--", "torchrun", "--nproc_per_node", "8", "pretrain_gpt.py",
                                         "--num-layers", "2", "--hidden-size", "256", "--num-attention-heads", "4",
                                         "--seq-length", "128", "--max-position-embeddings", "128", "--micro-batch-size",
                                         "1", "--global-batch-size", "8", "--tokenizer-type", "HuggingFaceTokenizer",
                                         "--tokenizer-model", "some-org/unknown-model"};
  try {
    parse_job_args(line);
    ADD_FAILURE() << "no error";
  } catch (const input_error& e) {
    EXPECT_THAT(std::string(e.what()),
                ::testing::StartsWith("--vocab-size is missing, and --tokenizer-type HuggingFaceTokenizer "
                                      "--tokenizer-model some-org/unknown-model do not say it"));
  }
  std::vector<std::string> llama = line;
  llama.back() = "meta-llama/Meta-Llama-3-8B";
  EXPECT_EQ(parse_job_args(llama).job.model.vocab_size, 128256);
  // Named as NeMo-Framework-Launcher's configs name them: StarCoder2's BPE, Mixtral 8x22B v0.1's and Llama 1/2's
  // SentencePiece models (the Instruct 8x22B's v3 tokenizer has 32,768 and is not taken for v0.1's).
  for (const auto& [name, vocab] : std::vector<std::pair<std::string, std::int64_t>>{
           {"bigcode/starcoder2-tokenizer", 49152}, {"mistral-community/Mixtral-8x22B-v0.1", 32000}}) {
    llama.back() = name;
    EXPECT_EQ(parse_job_args(llama).job.model.vocab_size, vocab) << name;
  }
  llama.back() = "mistralai/Mixtral-8x22B-Instruct-v0.1";
  EXPECT_THROW(parse_job_args(llama), input_error);
  std::vector<std::string> spm = line;
  spm[spm.size() - 3] = "SentencePieceTokenizer";
  spm.back() = "${data_dir}/llama/llama_tokenizer.model";
  EXPECT_EQ(parse_job_args(spm).job.model.vocab_size, 32000);
}

}  // namespace
}  // namespace trainplan
