// Vocabulary from Megatron's tokenizer flags (src/cli/tokenizer.h). The tokenizers known by name, with
// the size of their published tokenizer files (len(tokenizer) of the Hugging Face tokenizer, which
// Megatron's HuggingFaceTokenizer reports as vocab_size).
#include "tokenizer.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <string_view>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "trainplan/core/base/error.h"
#include "trainplan/core/base/input_file.h"

namespace trainplan::args_detail {

namespace {

struct known_tokenizer {
  std::string_view name_contains;  ///< lower case, in the --tokenizer-model name or path
  std::int64_t vocab_size;
  std::string_view what;
};

/// Most specific first.
constexpr std::array kKnownTokenizers = {
    known_tokenizer{"llama-2", 32000, "Llama 2's SentencePiece tokenizer"},
    known_tokenizer{"llama-3", 128256, "Llama 3's tiktoken tokenizer (128,000 + 256 special)"},
    known_tokenizer{"llama3", 128256, "Llama 3's tiktoken tokenizer (128,000 + 256 special)"},
    known_tokenizer{"mistral-7b-v0.1", 32000, "Mistral 7B v0.1's SentencePiece tokenizer"},
    known_tokenizer{"mixtral-8x7b", 32000, "Mixtral 8x7B's SentencePiece tokenizer"},
    // mistral-community/Mixtral-8x22B-v0.1 (config.json vocab_size 32000; the Instruct model's v3 tokenizer
    // has 32,768 and does not match).
    known_tokenizer{"mixtral-8x22b-v0.1", 32000, "Mixtral 8x22B v0.1's SentencePiece tokenizer"},
    // bigcode/starcoder2-tokenizer, the StarCoder2 models' (config.json vocab_size 49152).
    known_tokenizer{"starcoder2", 49152, "StarCoder2's BPE tokenizer"},
    // NeMo-Framework-Launcher's name for Llama 1 and 2's SentencePiece model (conf/training/llama/llama*.yaml:
    // ${data_dir}/llama/llama_tokenizer.model): 32,000 tokens, as Llama 2's.
    known_tokenizer{"llama_tokenizer.model", 32000, "Llama 1/2's SentencePiece tokenizer"},
    known_tokenizer{"gpt2", 50257, "GPT-2's BPE"},
    // Nemotron-4's SentencePiece model as NeMo-Framework-Launcher's configs name it (nemotron_2_256k.model):
    // 256,000 tokens (Nemotron-4 15B technical report §2; nvidia/Nemotron-4-340B-Base config.json vocab_size).
    known_tokenizer{"nemotron_2_256k", 256000, "Nemotron-4's SentencePiece tokenizer"},
};

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

/// GPT-2 BPE: its vocab.json's entries where the file can be read here, else GPT-2's 50,257.
tokenizer_vocab gpt2_bpe(const tokenizer_flags& t) {
  if (!t.vocab_file.empty()) {
    std::string text;
    try {
      text = read_input_file(t.vocab_file, "--vocab-file", kMaxConfigFileBytes);
    } catch (const input_error&) {
      return {50257, fmt::format("GPT2BPETokenizer: GPT-2's 50,257 tokens ({} is not readable here)", t.vocab_file)};
    }
    const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    if (!j.is_object() || j.empty()) throw input_error("--vocab-file " + t.vocab_file + ": not a GPT-2 vocab.json (a JSON object of tokens)");
    return {static_cast<std::int64_t>(j.size()), fmt::format("GPT2BPETokenizer: the {} tokens of {}", j.size(), t.vocab_file)};
  }
  return {50257, "GPT2BPETokenizer: GPT-2's 50,257 tokens"};
}

}  // namespace

std::optional<tokenizer_vocab> vocab_of(const tokenizer_flags& t) {
  // Megatron's GPT examples give --vocab-file and --merge-file without --tokenizer-type: GPT-2 BPE.
  if (t.type == "GPT2BPETokenizer" || (t.type.empty() && !t.vocab_file.empty() && !t.merge_file.empty())) {
    return gpt2_bpe(t);
  }
  if (t.type == "HuggingFaceTokenizer" || t.type == "Llama2Tokenizer" || t.type == "TikTokenizer" ||
      t.type == "SentencePieceTokenizer" || t.type == "GPTSentencePieceTokenizer") {
    const std::string name = lower(t.model);
    for (const known_tokenizer& k : kKnownTokenizers) {
      if (name.find(k.name_contains) != std::string::npos) {
        return tokenizer_vocab{k.vocab_size, fmt::format("{} {}: {} ({} tokens)", t.type, t.model, k.what, k.vocab_size)};
      }
    }
  }
  return std::nullopt;
}

}  // namespace trainplan::args_detail
