// The vocabulary a launch line's tokenizer flags imply (issue 29), where it is known without downloading
// the tokenizer: Megatron pads tokenizer.vocab_size (megatron/training/tokenizer, build_tokenizer), so the
// size is the tokenizer's, not a checkpoint's embedding rows. Internal header of src/cli/args.cc.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace trainplan::args_detail {

/// Megatron's tokenizer flags as given (empty: not given).
struct tokenizer_flags {
  std::string type;   ///< --tokenizer-type
  std::string model;  ///< --tokenizer-model (a Hugging Face name or path)
  std::string vocab_file, merge_file;
  /// The config key they came from ("model.tokenizer (llama2_70b.yaml:94)"), for the error; "" for flags.
  std::string named_as;
  bool any() const { return !type.empty() || !model.empty() || !vocab_file.empty() || !merge_file.empty(); }
};

/// The vocabulary and where it comes from ("GPT2BPETokenizer: GPT-2's 50,257 tokens"), or none when
/// the flags do not say it here (NullTokenizer, a tokenizer trainplan does not know by name).
struct tokenizer_vocab {
  std::int64_t vocab_size = 0;
  std::string how;
};
std::optional<tokenizer_vocab> vocab_of(const tokenizer_flags& t);

}  // namespace trainplan::args_detail
