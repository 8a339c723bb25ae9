// The HTML page around the charts (include/trainplan/report/html.h): one inline style sheet (light, dark, print),
// the job line, the sections, a table sorter; and the atomic write of --html.
#include "trainplan/report/html.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include <fmt/format.h>

#include "trainplan/core/base/error.h"
#include "trainplan/report/svg.h"

namespace trainplan {

namespace {

/// Light by default, dark where the reader asks, plain on paper. p0-p9: the series palette (Tableau 10,
/// readable on both backgrounds).
constexpr const char* kStyle = R"css(
:root { --bg: #ffffff; --fg: #1d1d1f; --muted: #5f6368; --grid: #e3e3e3; --axis: #6b6b6b; --card: #f7f7f8;
  --p0: #4e79a7; --p1: #f28e2b; --p2: #e15759; --p3: #76b7b2; --p4: #59a14f; --p5: #edc948; --p6: #b07aa1;
  --p7: #ff9da7; --p8: #9c755f; --p9: #bab0ac; --idle: #eeeeee; --alert: #d62728; }
@media (prefers-color-scheme: dark) {
  :root { --bg: #16171a; --fg: #e8e8ea; --muted: #a0a3a8; --grid: #303236; --axis: #8a8d92; --card: #1f2125;
    --idle: #2a2c30; --alert: #ff6b6b; } }
body { background: var(--bg); color: var(--fg); font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif;
  margin: 24px auto; max-width: 960px; padding: 0 16px; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 17px; margin: 28px 0 4px; }
.context, .caption { color: var(--muted); margin: 0 0 10px; }
section { background: var(--card); border-radius: 8px; padding: 8px 16px 16px; margin: 16px 0; }
svg { display: block; max-width: 100%; height: auto; overflow: visible; }
svg text { fill: var(--fg); font-size: 12px; } svg .tick { fill: var(--muted); font-size: 11px; }
svg .axis-label { font-size: 12px; } svg .legend { font-size: 12px; } svg .note { fill: var(--muted); font-size: 11px; }
svg .grid { stroke: var(--grid); stroke-width: 1; } svg .axis { stroke: var(--axis); stroke-width: 1; }
svg .capacity { stroke: var(--alert); stroke-width: 2; stroke-dasharray: 6 4; }
svg .front { fill: none; stroke: var(--fg); stroke-width: 1.5; }
svg .idle { fill: var(--idle); } svg text.cell { fill: #fff; font-size: 10px; paint-order: stroke; stroke: rgba(0,0,0,.45); stroke-width: 2px; } svg .outline { fill: none; stroke: var(--fg); stroke-width: 1.5; stroke-dasharray: 4 3; }
.p0 { fill: var(--p0); } .p1 { fill: var(--p1); } .p2 { fill: var(--p2); } .p3 { fill: var(--p3); }
.p4 { fill: var(--p4); } .p5 { fill: var(--p5); } .p6 { fill: var(--p6); } .p7 { fill: var(--p7); }
.p8 { fill: var(--p8); } .p9 { fill: var(--p9); }
svg circle { stroke: var(--bg); stroke-width: 0.5; } svg rect title, svg circle title { pointer-events: none; }
table { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; }
th, td { padding: 3px 8px; text-align: right; border-bottom: 1px solid var(--grid); white-space: nowrap; }
th { cursor: pointer; user-select: none; } th:first-child, td:first-child { text-align: left; }
.warn { color: var(--alert); font-weight: 600; }
@media print { body { max-width: none; margin: 0; } section { break-inside: avoid; background: none; border: 1px solid #ccc; }
  :root { --bg: #fff; --fg: #000; --card: #fff; } th { cursor: auto; } }
)css";

/// Click a header to sort its table by that column (numbers as numbers); click again to reverse.
constexpr const char* kSortScript = R"js(
document.querySelectorAll('table.sortable th').forEach(function (th, col) {
  th.addEventListener('click', function () {
    var body = th.closest('table').tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    var dir = th.dataset.dir === 'asc' ? -1 : 1;
    th.dataset.dir = dir === 1 ? 'asc' : 'desc';
    var key = function (r) { var t = r.cells[col].dataset.v || r.cells[col].textContent; var n = parseFloat(t); return isNaN(n) ? t : n; };
    rows.sort(function (a, b) { var x = key(a), y = key(b); return (x > y ? 1 : x < y ? -1 : 0) * dir; });
    rows.forEach(function (r) { body.appendChild(r); });
  });
});
)js";

std::string context_line(const run_context& ctx) {
  if (!ctx.has_job) return "";
  const job_spec& j = ctx.job;
  std::string s = fmt::format("{} on {} node{} of {}", j.model.name, j.cluster.num_nodes, j.cluster.num_nodes == 1 ? "" : "s",
                              j.cluster.name);
  if (ctx.has_layout) {
    s += fmt::format(" ({} GPUs)", j.num_gpus);
    s += fmt::format(" · TP {} PP {} DP {}", j.parallel.tp, j.parallel.pp, j.parallel.dp);
    if (j.parallel.cp > 1) s += fmt::format(" CP {}", j.parallel.cp);
    if (j.parallel.ep > 1) s += fmt::format(" EP {}", j.parallel.ep);
    s += fmt::format(" · MBS {} GBS {}", j.training.micro_batch_size, j.training.global_batch_size);
  }
  s += fmt::format(" · sequence {}", j.model.seq_length);
  if (!ctx.preset.empty()) s += " · preset " + ctx.preset;
  return s;
}

}  // namespace

std::string html_page(const std::string& title, const run_context* context, const std::vector<html_section>& sections) {
  std::string o = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                  "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
                  "<meta name=\"color-scheme\" content=\"light dark\">\n<title>" +
                  svg::escape(title) + "</title>\n<style>" + kStyle + "</style>\n</head>\n<body>\n<h1>" +
                  svg::escape(title) + "</h1>\n";
  if (context != nullptr && context->has_job) {
    o += "<p class=\"context\">" + svg::escape(context_line(*context)) + "</p>\n";
    // What the job's flags did not change: the flags accepted and ignored, and those given twice.
    auto flag_list = [&](const char* label, const std::vector<std::string>& flags, const char* sep) {
      if (flags.empty()) return;
      std::string joined;
      for (const std::string& f : flags) joined += (joined.empty() ? "" : sep) + f;
      o += "<p class=\"context flags\">" + svg::escape(std::string(label) + joined) + "</p>\n";
    };
    flag_list("Ignored (they change no estimate): ", context->ignored_flags, " ");
    flag_list("Overridden (the value after the arrow counts): ", context->overridden_flags, "; ");
    flag_list("Derived (not given, implied by the flags): ", context->derived_flags, "; ");
  }
  for (const html_section& s : sections) {
    o += "<section>\n<h2>" + svg::escape(s.heading) + "</h2>\n";
    if (!s.caption.empty()) o += "<p class=\"caption\">" + svg::escape(s.caption) + "</p>\n";
    o += s.body + "</section>\n";
  }
  o += fmt::format("<p class=\"context\">trainplan {} · docs/formulas.md has every formula</p>\n", tool_version());
  o += std::string("<script>") + kSortScript + "</script>\n</body>\n</html>\n";
  return o;
}

namespace {

/// Writes all of `content` to `fd`; errno on failure.
bool write_all(int fd, const std::string& content) {
  std::size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

/// The temporary name beside `target` that mkstemp fills in.
std::string temp_name(const std::filesystem::path& dir, const std::filesystem::path& target) {
  return (dir / fmt::format(".{}.XXXXXX", target.filename().string())).string();
}

}  // namespace

void write_file_atomically(const std::string& path, const std::string& content, const std::string& flag) {
  namespace fs = std::filesystem;
  if (path.empty()) throw input_error(flag + " needs a file name");
  // Only a regular file is replaced: a device (/dev/null), a FIFO, a socket, a directory or a symbolic link
  // at the path is refused, not turned into a file.
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    const char* what = S_ISDIR(st.st_mode)   ? "a directory"
                       : S_ISLNK(st.st_mode) ? "a symbolic link"
                       : S_ISFIFO(st.st_mode) ? "a FIFO"
                       : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device"
                                                                   : "not a regular file";
    throw input_error(fmt::format("{}: '{}' is {}: give the path of a file to write", flag, path, what));
  }
  const fs::path target(path);
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  auto fail = [&](int err) { throw input_error(flag + ": cannot write '" + path + "': " + std::strerror(err)); };
  const mode_t mask = ::umask(0);
  ::umask(mask);
  // The page is written into an unnamed file (O_TMPFILE) and named only when complete: a process killed
  // while writing leaves nothing behind. Where the file system has no unnamed files (or /proc is not
  // mounted to name one), a named temporary beside the target.
  std::string tmp;
  if (const int fd = ::open(dir.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666 & ~mask); fd >= 0) {
    bool named = write_all(fd, content) && ::fsync(fd) == 0;
    const std::string self = fmt::format("/proc/self/fd/{}", fd);
    for (int attempt = 0; named && attempt < 16; ++attempt) {
      tmp = temp_name(dir, target);
      const int probe = ::mkstemp(tmp.data());  // a fresh name, freed for the link
      if (probe < 0) {
        named = false;
        break;
      }
      ::close(probe);
      ::unlink(tmp.c_str());
      if (::linkat(AT_FDCWD, self.c_str(), AT_FDCWD, tmp.c_str(), AT_SYMLINK_FOLLOW) == 0) break;
      if (errno != EEXIST) named = false;
    }
    ::close(fd);
    if (named && std::rename(tmp.c_str(), path.c_str()) == 0) return;
    if (named) ::unlink(tmp.c_str());
  }
  tmp = temp_name(dir, target);
  const int fd = ::mkstemp(tmp.data());
  if (fd < 0) fail(errno);
  ::fchmod(fd, 0666 & ~mask);  // mkstemp made it 0600: the file a plain write would have made
  if (!write_all(fd, content)) {
    const int err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    fail(err);
  }
  if (::close(fd) != 0 || std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    fail(err);
  }
}

}  // namespace trainplan
