// Reading logs: files or standard input in 1 MiB blocks, split into lines ('\n', and the '\r' that
// progress bars redraw with) without holding more than one line (kMaxLogLineBytes) beyond the block;
// following a growing file (tail -f) for `trainplan logs --follow`.
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "trainplan/core/base/error.h"
#include "trainplan/core/logs/logs.h"

namespace trainplan {

namespace {

constexpr std::size_t kBlockBytes = 1 << 20;
/// A NUL in the first bytes of a file: a binary file, not a log.
constexpr std::size_t kBinaryProbeBytes = 4096;

/// Splits blocks into lines, keeping a partial line between blocks (at most kMaxLogLineBytes).
class line_splitter {
 public:
  explicit line_splitter(log_analyzer& a) : a_(a) {}

  void feed(const char* data, std::size_t n) {
    std::size_t start = 0;
    for (;;) {
      const void* nl = std::memchr(data + start, '\n', n - start);
      if (nl == nullptr) break;
      const std::size_t end = static_cast<std::size_t>(static_cast<const char*>(nl) - data);
      if (carry_.empty() && !overlong_) emit(std::string_view(data + start, end - start));
      else {
        append(data + start, end - start);
        finish_carry();
      }
      start = end + 1;
    }
    append(data + start, n - start);
  }

  /// The last line when the file does not end with a newline (a job still writing it).
  void finish() {
    if (!carry_.empty() || overlong_) finish_carry();
  }

 private:
  void append(const char* p, std::size_t n) {
    if (overlong_) return;
    if (carry_.size() + n > kMaxLogLineBytes) {
      overlong_ = true;
      carry_.clear();
      carry_.shrink_to_fit();
      return;
    }
    carry_.append(p, n);
  }

  void finish_carry() {
    if (overlong_) a_.add_overlong_line();
    else emit(carry_);
    carry_.clear();
    overlong_ = false;
  }

  /// One '\n' line; progress bars redraw with '\r', so each '\r' part is a line of its own.
  void emit(std::string_view line) {
    if (std::memchr(line.data(), '\0', line.size()) != nullptr) {
      a_.add_binary_line();
      return;
    }
    if (std::memchr(line.data(), '\r', line.size()) == nullptr) {
      a_.add_line(line);
      return;
    }
    std::size_t s = 0;
    while (s <= line.size()) {
      std::size_t e = line.find('\r', s);
      if (e == std::string_view::npos) e = line.size();
      if (e > s) a_.add_line(line.substr(s, e - s));
      s = e + 1;
    }
  }

  log_analyzer& a_;
  std::string carry_;
  bool overlong_ = false;
};

/// Seconds since 1970 of a UTC instant as the local wall clock reads it.
double as_local(std::time_t t, double fraction) {
  std::tm tm{};
  localtime_r(&t, &tm);
  return static_cast<double>(t) + static_cast<double>(tm.tm_gmtoff) + fraction;
}

double mtime_local(int fd) {
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return kNotLogged;
  return as_local(st.st_mtim.tv_sec, static_cast<double>(st.st_mtim.tv_nsec) * 1e-9);
}

/// How long a FIFO without a writer is waited for before it is refused (§8; docs/formulas.md §7.9).
constexpr int kFifoWriterWaitMs = 10'000;

/// An open file descriptor for `path` ("-": standard input), checked to be a readable file. It never
/// blocks: a FIFO is opened without waiting for its writer (and `wait_for_writer` waits at most
/// kFifoWriterWaitMs for one); a directory, device or socket is refused.
int open_log(const std::string& path) {
  if (path == "-") return STDIN_FILENO;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw input_error("cannot open log '" + path + "': " + std::strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode)) {
    ::close(fd);
    throw input_error("'" + path + "' is " + (S_ISDIR(st.st_mode) ? "a directory" : "a device or socket") +
                      ", not a log file (a file, a pipe or - for standard input)");
  }
  return fd;
}

/// Whether `fd` is a pipe or FIFO (standard input, `<(tail -f …)`): read as it comes, no file size.
bool is_pipe(int fd) {
  struct stat st {};
  return fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode);
}

/// Waits until a pipe has data or its writer closed, at most `timeout_ms`; false on timeout.
bool wait_readable(int fd, int timeout_ms) {
  pollfd p{fd, POLLIN, 0};
  for (;;) {
    const int ready = ::poll(&p, 1, timeout_ms);
    if (ready < 0 && errno == EINTR) continue;
    return ready > 0;
  }
}

std::string display(const std::string& path) { return path == "-" ? "<stdin>" : path; }

/// Read what `fd` holds now into the splitter; the bytes read. Throws for a binary start or a read error.
std::size_t read_available(int fd, const std::string& path, line_splitter& split, std::vector<char>& block,
                           std::size_t already) {
  std::size_t total = 0;
  for (;;) {
    const ssize_t n = ::read(fd, block.data(), block.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) break;
      throw input_error("cannot read log '" + display(path) + "': " + std::strerror(errno));
    }
    if (n == 0) break;
    const std::size_t got = static_cast<std::size_t>(n);
    if (already + total < kBinaryProbeBytes) {
      const std::size_t probe = std::min(got, kBinaryProbeBytes - (already + total));
      if (const void* z = std::memchr(block.data(), '\0', probe); z != nullptr) {
        const std::size_t at = already + total + static_cast<std::size_t>(static_cast<const char*>(z) - block.data());
        throw input_error(display(path) + ": a binary file (a NUL byte at offset " + std::to_string(at) +
                          "), not a text log");
      }
    }
    split.feed(block.data(), got);
    total += got;
  }
  return total;
}

struct fd_closer {
  int fd;
  ~fd_closer() {
    if (fd != STDIN_FILENO && fd >= 0) ::close(fd);
  }
};

}  // namespace

double local_now_s() {
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  const auto secs = std::chrono::duration_cast<std::chrono::seconds>(now);
  return as_local(static_cast<std::time_t>(secs.count()), std::chrono::duration<double>(now - secs).count());
}

log_analyzer read_logs(const std::vector<std::string>& paths, const log_options& options, double* last_write_s) {
  if (paths.empty()) throw input_error("logs: give a log file (or - for standard input)");
  log_analyzer a(options);
  std::vector<char> block(kBlockBytes);
  for (const std::string& path : paths) {
    const int fd = open_log(path);
    const fd_closer closer{fd};
    a.begin_file(display(path));
    line_splitter split(a);
    std::size_t read = 0;
    if (is_pipe(fd)) {
      // A pipe or FIFO: read until the writer closes. Each wait is bounded, so a FIFO that no writer
      // opens is refused rather than waited on for ever.
      ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
      for (;;) {
        if (!wait_readable(fd, kFifoWriterWaitMs)) {
          throw input_error(display(path) + ": nothing arrived in " + std::to_string(kFifoWriterWaitMs / 1000) +
                            " s (a FIFO without a writer?); use ${logs.follow} to watch a pipe");
        }
        const std::size_t got = read_available(fd, path, split, block, read);
        if (got == 0) break;  // readable with nothing to read: the writer closed
        read += got;
      }
    } else {
      read = read_available(fd, path, split, block, 0);
    }
    if (read == 0) throw input_error(display(path) + ": the log is empty: no lines to read");
    split.finish();
    if (last_write_s != nullptr) *last_write_s = mtime_local(fd);
  }
  return a;
}

bool follow_log(const std::string& path, log_analyzer& a, const log_follow_options& f,
                const std::function<void(const log_report&, bool stalled)>& on_update) {
  int fd = open_log(path);
  fd_closer closer{fd};
  // A pipe (standard input, a FIFO, `<(ssh node tail -f log)`) is polled and read as it comes; a file is
  // read to its end, then again every poll, following truncation (copytruncate) and rotation by rename.
  const bool pipe = fd == STDIN_FILENO || is_pipe(fd);
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  a.begin_file(display(path));
  auto split = std::make_unique<line_splitter>(a);
  std::vector<char> block(kBlockBytes);
  std::size_t offset = read_available(fd, path, *split, block, 0);
  using clock = std::chrono::steady_clock;
  // Silence is judged by the monitor's own clock, never by the log's timestamps (their zone and steps are
  // unknown, §8.5): from the file's last write, an instant on this machine's clock, and then from the
  // last progress line this monitor read. A pipe has no write time: its silence starts now.
  const double written_s = pipe ? kNotLogged : mtime_local(fd);
  const double silence0 = std::isnan(written_s) ? 0.0 : std::max(0.0, local_now_s() - written_s);
  clock::time_point last_progress = clock::now() - std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(silence0));
  clock::time_point last_update = clock::now();
  std::int64_t records = a.records();
  std::int64_t findings = -1;
  for (;;) {
    const double silence = std::chrono::duration<double>(clock::now() - last_progress).count();
    const double now = local_now_s();
    log_report r = a.report();
    r.stall = check_stall(r, f.options, now, now - silence, "last progress line read (this machine's clock)");
    const std::int64_t found = r.step_count + r.spike_count + r.restart_count + r.slow_iteration_count +
                               r.loss_scale_drop_count + r.skipped_total + r.nan_total;
    if (r.stall.finished || r.stall.stalled) {
      on_update(r, r.stall.stalled);
      return r.stall.stalled;
    }
    if (findings < 0 || found != findings ||
        std::chrono::duration<double>(clock::now() - last_update).count() >= f.update_every_s) {
      on_update(r, false);
      last_update = clock::now();
      findings = found;
    }
    if (pipe) {
      pollfd p{fd, POLLIN, 0};
      const int ready = ::poll(&p, 1, static_cast<int>(f.poll_s * 1000));
      if (ready > 0) {
        const std::size_t got = read_available(fd, path, *split, block, offset);
        if (got == 0 && (p.revents & (POLLIN | POLLHUP)) != 0) {  // the writer closed
          split->finish();
          on_update(a.report(), false);
          return false;
        }
        offset += got;
      }
    } else {
      std::this_thread::sleep_for(std::chrono::duration<double>(f.poll_s));
      struct stat st {};
      if (fstat(fd, &st) == 0 && static_cast<std::size_t>(st.st_size) < offset) {  // truncated (copytruncate)
        ::lseek(fd, 0, SEEK_SET);
        offset = 0;
      }
      offset += read_available(fd, path, *split, block, offset);
      // Rotated by rename (logrotate's default): the path names a new file. The old one is read to its
      // end above; the new one is followed from its start.
      struct stat now_at_path {};
      if (::stat(path.c_str(), &now_at_path) == 0 && fstat(fd, &st) == 0 &&
          (now_at_path.st_ino != st.st_ino || now_at_path.st_dev != st.st_dev)) {
        const int next = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
        if (next >= 0) {
          split->finish();
          ::close(fd);
          fd = next;
          closer.fd = next;
          split = std::make_unique<line_splitter>(a);
          offset = read_available(fd, path, *split, block, 0);
        }
      }
    }
    if (a.records() != records) {
      records = a.records();
      last_progress = clock::now();
    }
  }
}

}  // namespace trainplan
