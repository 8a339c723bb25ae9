// Errors: a typed exception for bad user input, and CHECK for internal invariants.
#pragma once

#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace trainplan {

/// Names a job field ("parallel.tp") as a front end spells it: the CLI by its flag, Python by its keyword.
using field_namer = std::function<std::string(std::string_view field)>;

/// Bad input from the user: a flag, a file field, a name. The message names the flag or field and the
/// rule it breaks; file errors start with "file:line: ". The CLI prints it and exits with status 2.
/// The core names the job's fields as ${section.field} (`${parallel.tp} must be …`): what() shows the
/// field paths ("parallel.tp must be …"); message(namer) lets a front end put its own names there.
/// `text` as a message template's literal part: each "${" (a field in a template) written "$${", so that
/// text read from the user (an OmegaConf interpolation, a shell variable) is shown as it was typed.
inline std::string literal_text(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '$' && i + 1 < text.size() && text[i + 1] == '{') out += '$';
    out += text[i];
  }
  return out;
}

class input_error : public std::runtime_error {
 public:
  explicit input_error(const std::string& message);
  explicit input_error(const char* message) : input_error(std::string(message)) {}
  /// The message with each ${field} named by `name`.
  std::string message(const field_namer& name) const;
  /// The fields it names, in order ("parallel.tp"); empty for messages that name none.
  std::vector<std::string> fields() const;
  /// The same error with text before and after its message (a flag that the message does not name).
  input_error wrapped(std::string_view before, std::string_view after) const {
    return input_error(std::string(before) + template_ + std::string(after));
  }

 private:
  std::string template_;
};

/// `text` with each ${field} replaced by name(field).
std::string name_fields(std::string_view text, const field_namer& name);

/// The candidate closest to `name` by edit distance; else the shortest that begins with `name` (four
/// characters or more after any dashes); "" when none is close enough to suggest.
std::string nearest_name(std::string_view name, const std::vector<std::string>& candidates);

/// " (did you mean 'x'?)" or "" — appended to unknown-name messages.
std::string did_you_mean(std::string_view name, const std::vector<std::string>& candidates);

namespace detail {
[[noreturn]] void check_failed(const char* expr, const char* file, int line, const std::string& what);
}  // namespace detail

}  // namespace trainplan

/// Internal invariant: aborts with the expression and location. Never used for user input.
#define TRAINPLAN_CHECK(cond)                                                       \
  do {                                                                              \
    if (!(cond)) ::trainplan::detail::check_failed(#cond, __FILE__, __LINE__, ""); \
  } while (0)
#define TRAINPLAN_CHECK_MSG(cond, msg)                                                 \
  do {                                                                                 \
    if (!(cond)) ::trainplan::detail::check_failed(#cond, __FILE__, __LINE__, (msg)); \
  } while (0)
