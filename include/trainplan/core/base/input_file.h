// Reading an input file whole, bounded (docs/formulas.md §7.9): model, cluster and calibration files and
// measurement CSVs are regular files of at most a few MiB. Anything else — a directory, a FIFO, a
// device such as /dev/zero, a socket, a symbolic-link loop, a file past the size limit — is refused at
// once, naming the input and the rule, so that no reader hangs or reads without end.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace trainplan {

/// Size limits of the inputs read whole, bytes (§7.9).
inline constexpr std::size_t kMaxConfigFileBytes = 4u << 20;       ///< model and cluster files (YAML, JSON)
inline constexpr std::size_t kMaxCalibrationFileBytes = 32u << 20;  ///< calibration profiles
inline constexpr std::size_t kMaxTableFileBytes = 64u << 20;        ///< measurement CSVs

/// The whole text of the regular file at `path`, at most `max_bytes`. `what` names the input in messages
/// ("${model}", "--csv"); throws input_error "WHAT 'PATH': RULE" for a missing or unreadable file, a
/// directory, a file that is not regular, a symbolic-link loop, or one larger than `max_bytes`. A FIFO is
/// refused before it is opened, so a FIFO without a writer cannot block.
std::string read_input_file(const std::string& path, std::string_view what, std::size_t max_bytes);

}  // namespace trainplan
