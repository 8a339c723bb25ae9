// Reading an input file whole, bounded (include/trainplan/core/base/input_file.h; docs/formulas.md §7.9).
#include "trainplan/core/base/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "trainplan/core/base/error.h"

namespace trainplan {

namespace {

/// What kind of file a mode is, for the refusal.
const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (pipe)";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

[[noreturn]] void refuse(std::string_view what, const std::string& path, const std::string& rule) {
  throw input_error(fmt::format("{} '{}': {}", what, path, rule));
}

/// Closes the descriptor on every path out.
struct descriptor {
  int fd = -1;
  ~descriptor() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::string read_input_file(const std::string& path, std::string_view what, std::size_t max_bytes) {
  const std::size_t max_mib = max_bytes >> 20;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    const int err = errno;
    if (err == ENOENT) refuse(what, path, "no such file");
    if (err == ELOOP) refuse(what, path, "a loop of symbolic links");
    refuse(what, path, fmt::format("cannot read it: {}", std::strerror(err)));
  }
  if (S_ISDIR(st.st_mode)) refuse(what, path, "a directory; give a file in it");
  if (!S_ISREG(st.st_mode)) refuse(what, path, fmt::format("{}, not a file: give a regular file", kind_of(st.st_mode)));
  if (static_cast<std::uint64_t>(st.st_size) > max_bytes) {
    refuse(what, path, fmt::format("{} bytes, more than the {} MiB such a file may have", st.st_size, max_mib));
  }
  // O_NONBLOCK: were the path swapped for a FIFO between stat and open, the open cannot block on it.
  descriptor d{::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC)};
  if (d.fd < 0) refuse(what, path, fmt::format("cannot open it: {}", std::strerror(errno)));
  if (::fstat(d.fd, &st) != 0 || !S_ISREG(st.st_mode)) refuse(what, path, "not a regular file");
  std::string text;
  text.reserve(static_cast<std::size_t>(st.st_size));
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(d.fd, buffer, sizeof buffer);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      refuse(what, path, fmt::format("cannot read it: {}", std::strerror(errno)));
    }
    if (text.size() + static_cast<std::size_t>(n) > max_bytes) {
      refuse(what, path, fmt::format("more than the {} MiB such a file may have", max_mib));
    }
    text.append(buffer, static_cast<std::size_t>(n));
  }
  return text;
}

}  // namespace trainplan
