// Errors: a typed exception for bad user input, and CHECK for internal invariants.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace trainplan {

/// Bad input from the user: a flag, a file field, a name. The message names the flag or field and the
/// rule it breaks; file errors start with "file:line: ". The CLI prints it and exits with status 2.
class input_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

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
