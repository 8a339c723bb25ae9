// Megatron-Core's pipeline layout string (docs/formulas.md §2.2.1), read as
// megatron/core/transformer/pipeline_parallel_layer_layout.py parse_str_to_list reads it.
#include "trainplan/core/job/layout_string.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <string>

#include "trainplan/core/base/error.h"

namespace trainplan {

namespace {

constexpr const char* kField = "${parallel.pipeline_layout}";

bool is_digit(char c) { return c >= '0' && c <= '9'; }

/// The repeat count of `digits` (Python's int(), leading zeros allowed), refused past the unroll limit.
std::size_t repeat_count(std::string_view digits) {
  std::size_t n = 0;
  for (const char c : digits) {
    n = n * 10 + static_cast<std::size_t>(c - '0');
    if (n > kMaxLayoutChars) {
      throw input_error(std::string(kField) + " repeats a part " + literal_text(digits) + " times; at most " +
                        std::to_string(kMaxLayoutChars) + " layers are read");
    }
  }
  return n;
}

/// Appends `part` `times` times, refused when the result would pass the unroll limit.
void append_repeated(std::string& out, std::string_view part, std::size_t times) {
  if (times > 0 && part.size() > (kMaxLayoutChars - out.size()) / times) {
    throw input_error(std::string(kField) + " unrolls to more than " + std::to_string(kMaxLayoutChars) + " characters");
  }
  for (std::size_t i = 0; i < times; ++i) out.append(part);
}

/// Digits from `at`: their end (at when none).
std::size_t digits_end(std::string_view s, std::size_t at) {
  while (at < s.size() && is_digit(s[at])) ++at;
  return at;
}

/// Python's re.sub(r'\(([^)]+)\)\*(\d+)', group 1 × n): at each '(' the match, if any, runs to the first
/// ')' after it (no ')' can be inside) with at least one character between, then '*' and digits; where it
/// fails the '(' is kept and the scan goes on.
std::string unroll_parentheses(std::string_view s) {
  std::string out;
  std::size_t i = 0;
  while (i < s.size()) {
    if (s[i] == '(') {
      const std::size_t close = s.find(')', i + 1);
      if (close != std::string_view::npos && close > i + 1 && close + 2 < s.size() && s[close + 1] == '*' &&
          is_digit(s[close + 2])) {
        const std::size_t end = digits_end(s, close + 2);
        append_repeated(out, s.substr(i + 1, close - i - 1), repeat_count(s.substr(close + 2, end - close - 2)));
        i = end;
        continue;
      }
    }
    append_repeated(out, s.substr(i, 1), 1);
    ++i;
  }
  return out;
}

/// Python's re.sub(r'(.)\*(\d+)', x × n): any character but a newline, then '*' and digits.
std::string unroll_characters(std::string_view s) {
  std::string out;
  std::size_t i = 0;
  while (i < s.size()) {
    if (s[i] != '\n' && i + 2 < s.size() && s[i + 1] == '*' && is_digit(s[i + 2])) {
      const std::size_t end = digits_end(s, i + 2);
      append_repeated(out, s.substr(i, 1), repeat_count(s.substr(i + 2, end - i - 2)));
      i = end;
      continue;
    }
    append_repeated(out, s.substr(i, 1), 1);
    ++i;
  }
  return out;
}

/// A character as a message shows it: printable as itself, else its code.
std::string shown(char c) {
  if (std::isprint(static_cast<unsigned char>(c)) != 0) return literal_text(std::string(1, c));
  return "byte " + std::to_string(static_cast<unsigned char>(c));
}

}  // namespace

std::vector<layout_stage> hybrid_pipeline_segments(std::string_view pattern) {
  const std::string_view main = pattern.substr(0, pattern.find('/'));
  std::vector<layout_stage> stages;
  if (main.find('|') == std::string_view::npos) return stages;
  std::size_t begin = 0;
  for (;;) {
    const std::size_t end = std::min(main.find('|', begin), main.size());
    layout_stage s;
    s.decoder = static_cast<std::int64_t>(end - begin);
    stages.push_back(s);
    if (end == main.size()) break;
    begin = end + 1;
  }
  stages.front().embedding = true;
  stages.back().loss = true;
  return stages;
}

std::vector<layout_stage> parse_pipeline_layout(std::string_view text) {
  std::string without_commas;
  for (const char c : text) {
    if (c != ',') without_commas += c;
  }
  const std::string flat = unroll_characters(unroll_parentheses(without_commas));
  std::vector<layout_stage> stages(1);
  // Order rules of validate_layer_layout that need no model: the flattened layout (the stages in order)
  // starts with E, ends with L, holds each once, and no transformer layer follows an MTP layer.
  char first = 0, last = 0;
  int embeddings = 0, losses = 0;
  bool mtp_seen = false;
  for (const char c : flat) {
    if (c == '|') {
      stages.emplace_back();
      continue;
    }
    layout_stage& st = stages.back();
    switch (c) {
      case 'E': st.embedding = true; ++embeddings; break;
      case 'L': st.loss = true; ++losses; break;
      case 't':
        if (mtp_seen) throw input_error(std::string(kField) + ": transformer layers (t) must come before the MTP layers (m)");
        ++st.decoder;
        break;
      case 'm': ++st.mtp; mtp_seen = true; break;
      default:
        throw input_error(std::string(kField) + " has the character " + shown(c) +
                          "; a layout is stages split by |, of E (embedding), t (transformer layer), m (MTP layer) and "
                          "L (loss), with (…)*n and x*n to repeat (Megatron-Core's layout string)");
    }
    if (first == 0) first = c;
    last = c;
  }
  if (first != 'E') throw input_error(std::string(kField) + ": the first layer must be the embedding, E");
  if (last != 'L') throw input_error(std::string(kField) + ": the last layer must be the loss, L");
  if (embeddings != 1) throw input_error(std::string(kField) + ": the embedding, E, must be given exactly once");
  if (losses != 1) throw input_error(std::string(kField) + ": the loss, L, must be given exactly once");
  return stages;
}

}  // namespace trainplan
