// One parser per framework's progress line, built from the code that prints it (docs/formulas.md §8.0):
// a table of formats, each an anchor that recognizes its lines and a field table that maps the printed
// key to a log_record field and its unit. Lines of no format are events (a table of markers) or unknown.
#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

#include "trainplan/core/logs/logs.h"

namespace trainplan {

namespace {

constexpr std::array<std::string_view, 6> kFormatNames = {"megatron-lm", "megatron-deepspeed", "nemo",
                                                          "nemo-progress-bar", "torchtitan", "deepspeed"};
constexpr std::array<std::string_view, 6> kDisplayNames = {"Megatron-LM", "Megatron-DeepSpeed", "NeMo",
                                                           "NeMo (progress bar)", "torchtitan", "DeepSpeed"};

}  // namespace

std::string_view to_string(log_format f) { return kFormatNames[static_cast<std::size_t>(f)]; }
std::string_view display_name(log_format f) { return kDisplayNames[static_cast<std::size_t>(f)]; }

namespace detail {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

/// A number as the frameworks print them ("1.043863E+01", "nan", "1,234" with thousands separators,
/// "22.92%"); false when `text` is not one.
bool to_number(std::string_view text, double& out) {
  text = trim(text);
  if (!text.empty() && text.back() == '%') text.remove_suffix(1);
  if (text.empty() || text.size() > 64) return false;
  char buf[64];
  std::size_t n = 0;
  for (char c : text)
    if (c != ',') buf[n++] = c;
  const char* first = buf;
  if (n > 0 && buf[0] == '+') ++first;
  const auto [end, ec] = std::from_chars(first, buf + n, out);
  return ec == std::errc() && end == buf + n;
}

/// A count; "76800.0" (NeMo logs floats) is accepted when whole and in range.
bool to_count(std::string_view text, std::int64_t& out) {
  double d = 0;
  if (!to_number(text, d) || !std::isfinite(d) || d < 0 || d > 9.0e18 || d != std::floor(d)) return false;
  out = static_cast<std::int64_t>(d);
  return true;
}

/// Which log_record field a printed key sets, and the factor to its unit.
enum class field { iteration_s, tflops, loss, grad_norm, loss_scale, learning_rate, skipped, nan_count,
                   consumed_samples, consumed_tokens, global_batch_size, iteration };
struct field_key {
  std::string_view key;
  field target;
  double scale = 1;
};

bool set_field(log_record& r, const field_key& k, std::string_view value, std::string& problem) {
  double d = 0;
  std::int64_t n = 0;
  const bool count = k.target == field::skipped || k.target == field::nan_count ||
                     k.target == field::consumed_samples || k.target == field::consumed_tokens ||
                     k.target == field::global_batch_size || k.target == field::iteration;
  if (count ? !to_count(value, n) : !to_number(value, d)) {
    problem = "field '" + std::string(k.key) + "': '" + std::string(trim(value).substr(0, 40)) + "' is not " +
              (count ? "a whole number" : "a number");
    return false;
  }
  switch (k.target) {
    case field::iteration_s: r.iteration_s = d * k.scale; break;
    case field::tflops: r.tflops_per_gpu = d; break;
    case field::loss: r.loss = d; break;
    case field::grad_norm: r.grad_norm = d; break;
    case field::loss_scale: r.loss_scale = d; break;
    case field::learning_rate: r.learning_rate = d; break;
    case field::skipped: r.skipped_iterations = n; break;
    case field::nan_count: r.nan_iterations = n; break;
    case field::consumed_samples: r.consumed_samples = n; break;
    case field::consumed_tokens: r.consumed_tokens = n; break;
    case field::global_batch_size: r.global_batch_size = n; break;
    case field::iteration: r.iteration = n; break;
  }
  return true;
}

const field_key* find_key(std::span<const field_key> table, std::string_view key) {
  for (const field_key& k : table)
    if (k.key == key) return &k;
  return nullptr;
}

/// Split `rest` into items at `sep`, each "key<kv>value" (the last `kv` for ':', the first for '='), and set
/// each known key's field. False, with out.problem set, at a value that is not a number. `seen` (if given)
/// says whether a key of `marker` was among them.
bool read_fields(std::string_view rest, char sep, char kv, std::span<const field_key> keys, log_line& out,
                 std::span<const std::string_view> markers = {}, bool* seen = nullptr) {
  while (!rest.empty()) {
    const std::size_t cut = rest.find(sep);
    const std::string_view item = trim(rest.substr(0, cut));
    rest = cut == std::string_view::npos ? std::string_view() : rest.substr(cut + 1);
    const std::size_t at = kv == ':' ? item.rfind(kv) : item.find(kv);
    if (at == std::string_view::npos) continue;
    const field_key* k = find_key(keys, trim(item.substr(0, at)));
    if (k == nullptr) continue;
    if (seen != nullptr && std::find(markers.begin(), markers.end(), k->key) != markers.end()) *seen = true;
    if (!set_field(out.record, *k, item.substr(at + 1), out.problem)) return false;
  }
  return true;
}

/// A record, or a malformed line when read_fields failed.
bool finish_record(log_line& out, bool fields_ok) {
  out.what = fields_ok ? log_line::kind::record : log_line::kind::malformed;
  return true;
}

// ---- Megatron-LM and Megatron-DeepSpeed: megatron/training/training.py training_log ----------------
// " [2025-08-01 07:19:37] iteration        1/    5000 | consumed samples: 128 | elapsed time per
// iteration (ms): 19138.8 | throughput per GPU (TFLOP/s/GPU): 80.2 | ... | lm loss: 1.043863E+01 |
// loss scale: 1.0 | grad norm: 26.203 | number of skipped iterations: 0 | number of nan iterations: 0 |"
// Megatron-DeepSpeed (BLOOM): "(s)" instead of "(ms)", "consumed tokens", "TFLOPs".
constexpr std::array<field_key, 14> kMegatronKeys = {{
    {"consumed samples", field::consumed_samples},
    {"consumed tokens", field::consumed_tokens},
    {"elapsed time per iteration (ms)", field::iteration_s, 1e-3},
    {"elapsed time per iteration (s)", field::iteration_s, 1},
    {"throughput per GPU (TFLOP/s/GPU)", field::tflops},
    {"TFLOPs", field::tflops},
    {"learning rate", field::learning_rate},
    {"global batch size", field::global_batch_size},
    {"lm loss", field::loss},
    {"loss", field::loss},
    {"loss scale", field::loss_scale},
    {"grad norm", field::grad_norm},
    {"number of skipped iterations", field::skipped},
    {"number of nan iterations", field::nan_count},
}};

/// "iteration   N/   M |" at `pos`: the numbers and the offset after the '|'; false when not.
bool megatron_counter(std::string_view line, std::size_t pos, std::int64_t& it, std::int64_t& total,
                      std::size_t& after) {
  std::size_t i = pos + std::strlen("iteration");
  auto skip = [&] {
    while (i < line.size() && line[i] == ' ') ++i;
  };
  auto digits = [&](std::int64_t& v) {
    const std::size_t s = i;
    while (i < line.size() && is_digit(line[i]) && i - s < 18) ++i;
    if (i == s) return false;
    std::from_chars(line.data() + s, line.data() + i, v);
    return true;
  };
  skip();
  if (!digits(it)) return false;
  skip();
  if (i >= line.size() || line[i] != '/') return false;
  ++i;
  skip();
  if (!digits(total)) return false;
  skip();
  if (i >= line.size() || line[i] != '|') return false;
  after = i + 1;
  return true;
}

bool parse_megatron(std::string_view line, log_line& out) {
  std::size_t pos = line.find("iteration");
  std::int64_t it = 0, total = 0;
  std::size_t after = 0;
  while (pos != std::string_view::npos && !megatron_counter(line, pos, it, total, after)) {
    pos = line.find("iteration", pos + 1);
  }
  if (pos == std::string_view::npos) return false;
  log_record& r = out.record;
  r.iteration = it;
  r.train_iterations = total;
  out.format = log_format::megatron_lm;
  const std::span<const field_key> keys(kMegatronKeys);
  std::string_view rest = line.substr(after);
  if (trim(rest).empty() || trim(rest).back() != '|') {
    out.what = log_line::kind::malformed;
    out.problem = "a progress line cut short (Megatron's lines end with '|')";
    return true;
  }
  static constexpr std::array<std::string_view, 2> kDeepSpeedKeys = {"elapsed time per iteration (s)", "TFLOPs"};
  bool deepspeed = false;
  const bool ok = read_fields(rest, '|', ':', keys, out, kDeepSpeedKeys, &deepspeed);
  if (deepspeed) out.format = log_format::megatron_deepspeed;
  return finish_record(out, ok);
}

// ---- NeMo 2: nemo/lightning/pytorch/callbacks/progress_printer.py ProgressPrinter ------------------
// "Training epoch 0, iteration 9/99 | lr: 1.5e-05 | global_batch_size: 8 | global_step: 9 |
// reduced_train_loss: 10.91 | train_step_timing in s: 2.7 | consumed_samples: 80"
constexpr std::array<field_key, 8> kNemoKeys = {{
    {"reduced_train_loss", field::loss},
    {"train_step_timing in s", field::iteration_s, 1},
    {"consumed_samples", field::consumed_samples},
    {"lr", field::learning_rate},
    {"global_batch_size", field::global_batch_size},
    {"tflops_per_sec_per_gpu", field::tflops},
    {"TFLOPS_per_GPU", field::tflops},
    {"grad_norm", field::grad_norm},
}};

bool parse_nemo(std::string_view line, log_line& out) {
  const std::size_t pos = line.find("Training epoch ");
  if (pos == std::string_view::npos) return false;
  const std::size_t comma = line.find(", iteration ", pos);
  if (comma == std::string_view::npos) return false;
  std::size_t i = comma + std::strlen(", iteration ");
  const std::size_t slash = line.find('/', i);
  if (slash == std::string_view::npos) return false;
  std::size_t end = slash + 1;
  while (end < line.size() && is_digit(line[end])) ++end;
  log_record& r = out.record;
  out.format = log_format::nemo;
  if (!to_count(line.substr(i, slash - i), r.iteration) || !to_count(line.substr(slash + 1, end - slash - 1), r.train_iterations)) {
    return false;
  }
  return finish_record(out, read_fields(line.substr(end), '|', ':', kNemoKeys, out));
}

// ---- NeMo 1 (PTL's TQDM bar, as NeMo's README "Expected Performance" shows it) ----------------------
// "Epoch 0: : 100%|██████████| 50/50 [31:51<00:00, reduced_train_loss=6.130, global_step=50.0,
// consumed_samples=76800.0, train_step_timing in s=5.900, val_loss=6.250]"
constexpr std::array<field_key, 7> kNemoBarKeys = {{
    {"reduced_train_loss", field::loss},
    {"global_step", field::iteration},
    {"consumed_samples", field::consumed_samples},
    {"train_step_timing in s", field::iteration_s, 1},
    {"lr", field::learning_rate},
    {"tflops_per_sec_per_gpu", field::tflops},
    {"grad_norm", field::grad_norm},
}};

bool parse_nemo_bar(std::string_view line, log_line& out) {
  if (line.find("train_step_timing in s=") == std::string_view::npos &&
      line.find("reduced_train_loss=") == std::string_view::npos) {
    return false;
  }
  const std::size_t open = line.rfind('[');
  if (open == std::string_view::npos) return false;
  out.format = log_format::nemo_progress_bar;
  log_record& r = out.record;
  std::string_view rest = line.substr(open + 1);
  if (rest.empty() || rest.back() != ']') {
    out.what = log_line::kind::malformed;
    out.problem = "a progress bar cut short (no closing ']')";
    return true;
  }
  rest.remove_suffix(1);
  if (!read_fields(rest, ',', '=', kNemoBarKeys, out)) return finish_record(out, false);
  if (r.iteration < 0) {
    out.what = log_line::kind::malformed;
    out.problem = "a progress bar without global_step";
    return true;
  }
  // "| 50/50 [": the bar's total, max_steps when the run sets it.
  const std::size_t bar = line.rfind('|', open);
  if (bar != std::string_view::npos) {
    const std::string_view counter = trim(line.substr(bar + 1, open - bar - 1));
    if (const std::size_t slash = counter.find('/'); slash != std::string_view::npos) {
      std::int64_t total = 0;
      if (to_count(counter.substr(slash + 1), total) && total >= r.iteration) r.train_iterations = total;
    }
  }
  out.what = log_line::kind::record;
  return true;
}

// ---- torchtitan: torchtitan/components/metrics.py MetricsProcessor.log -----------------------------
// "[rank0]:[titan] 2025-03-12 10:00:00,123 - root - INFO - \e[31mstep:  1  \e[32mloss: 12.2365
// \e[38;2;180;60;0mgrad_norm:  4.1372  \e[33mmemory: 42.12GiB(44.34%)  \e[34mtps: 1,234
// \e[36mtflops: 71.47  \e[35mmfu: 22.92%\e[39m"
constexpr std::array<field_key, 5> kTitanKeys = {{
    {"step", field::iteration},
    {"loss", field::loss},
    {"grad_norm", field::grad_norm},
    {"tflops", field::tflops},
    {"step_time", field::iteration_s, 1},
}};

/// The line without ANSI colour sequences (ESC '[' ... letter).
std::string strip_ansi(std::string_view line) {
  std::string out;
  out.reserve(line.size());
  for (std::size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '\x1b' && i + 1 < line.size() && line[i + 1] == '[') {
      i += 2;
      while (i < line.size() && !((line[i] >= 'A' && line[i] <= 'Z') || (line[i] >= 'a' && line[i] <= 'z'))) ++i;
      continue;
    }
    out += line[i];
  }
  return out;
}

/// The value after "key:" where the key starts a word; npos when absent.
std::size_t key_value(std::string_view text, std::string_view key) {
  std::size_t pos = text.find(key);
  while (pos != std::string_view::npos) {
    const std::size_t after = pos + key.size();
    const bool word_start = pos == 0 || text[pos - 1] == ' ' || text[pos - 1] == '\t';
    if (word_start && after < text.size() && text[after] == ':') return after + 1;
    pos = text.find(key, pos + 1);
  }
  return std::string_view::npos;
}

bool parse_titan(std::string_view raw, log_line& out) {
  if (raw.find("step:") == std::string_view::npos || raw.find("tps:") == std::string_view::npos) return false;
  if (raw.find("evaluation:") != std::string_view::npos || raw.find("validation:") != std::string_view::npos) {
    return false;  // an evaluation line (an event)
  }
  const std::string text = strip_ansi(raw);
  const std::string_view t(text);
  out.format = log_format::torchtitan;
  for (const field_key& k : kTitanKeys) {
    const std::size_t v = key_value(t, k.key);
    if (v == std::string_view::npos) continue;
    std::size_t s = v;
    while (s < t.size() && t[s] == ' ') ++s;
    std::size_t e = s;
    while (e < t.size() && t[e] != ' ' && t[e] != '\t') ++e;
    if (!set_field(out.record, k, t.substr(s, e - s), out.problem)) {
      out.what = log_line::kind::malformed;
      return true;
    }
  }
  if (out.record.iteration < 0) return false;
  out.what = log_line::kind::record;
  return true;
}

// ---- DeepSpeed's pipeline engine: deepspeed/runtime/pipe/engine.py PipelineEngine.train_batch ------
// "steps: 10 loss: 7.1234 iter time (s): 1.234 samples/sec: 12.340"
// (a later variant: "step: 10 / 100 loss: ... iter time (s): ... samples/sec: ... eta (h): ...")
bool parse_deepspeed(std::string_view line, log_line& out) {
  const std::size_t t = line.find("iter time (s):");
  if (t == std::string_view::npos) return false;
  std::size_t s = line.find("steps:");
  std::size_t key_len = 6;
  if (s == std::string_view::npos || s > t) {
    s = line.find("step:");
    key_len = 5;
  }
  if (s == std::string_view::npos || s > t) return false;
  out.format = log_format::deepspeed;
  log_record& r = out.record;
  auto value_after = [&](std::size_t from) {
    std::size_t a = from;
    while (a < line.size() && line[a] == ' ') ++a;
    std::size_t b = a;
    while (b < line.size() && line[b] != ' ') ++b;
    return line.substr(a, b - a);
  };
  const field_key step_key{"steps", field::iteration};
  if (!set_field(r, step_key, value_after(s + key_len), out.problem)) {
    out.what = log_line::kind::malformed;
    return true;
  }
  std::size_t after_step = s + key_len;
  while (after_step < line.size() && line[after_step] == ' ') ++after_step;
  while (after_step < line.size() && is_digit(line[after_step])) ++after_step;
  if (line.substr(after_step).starts_with(" / ")) {
    std::int64_t total = 0;
    if (to_count(value_after(after_step + 3), total)) r.train_iterations = total;
  }
  const field_key time_key{"iter time (s)", field::iteration_s, 1};
  const field_key loss_key{"loss", field::loss};
  if (!set_field(r, time_key, value_after(t + std::strlen("iter time (s):")), out.problem)) {
    out.what = log_line::kind::malformed;
    return true;
  }
  if (const std::size_t l = line.find("loss:", s); l != std::string_view::npos && l < t &&
                                                   !set_field(r, loss_key, value_after(l + 5), out.problem)) {
    out.what = log_line::kind::malformed;
    return true;
  }
  out.what = log_line::kind::record;
  return true;
}

/// The formats, tried in order on each line.
using line_parser = bool (*)(std::string_view, log_line&);
/// NeMo 2's "Training epoch 0, iteration 9/99 | ..." would also pass Megatron's counter: NeMo first.
constexpr std::array<line_parser, 5> kParsers = {parse_nemo, parse_megatron, parse_nemo_bar, parse_titan,
                                                 parse_deepspeed};

/// Markers of lines that explain the progress lines after them.
struct event_marker {
  std::string_view text;
  log_event event;
};
constexpr std::array<event_marker, 13> kEventMarkers = {{
    {"initializing torch distributed", log_event::startup},     // Megatron initialize.py
    {"loading checkpoint from", log_event::startup},            // Megatron checkpointing.py load_checkpoint
    {"Loading the checkpoint", log_event::startup},             // torchtitan checkpoint.py
    {"Starting job:", log_event::startup},                      // torchtitan train.py
    {"Restoring states from the checkpoint", log_event::startup},  // Lightning
    {"Initializing distributed:", log_event::startup},          // Lightning
    {"saving checkpoint at iteration", log_event::checkpoint_save},  // Megatron save_checkpoint
    {"Saving the checkpoint", log_event::checkpoint_save},      // torchtitan
    {"Saving model checkpoint", log_event::checkpoint_save},    // DeepSpeed engine.save_checkpoint
    {"validation loss at iteration", log_event::evaluation},    // Megatron evaluate_and_print_results
    {"evaluation:", log_event::evaluation},                     // torchtitan
    {"Validation: iteration", log_event::evaluation},           // NeMo ProgressPrinter
    {"val_loss=", log_event::evaluation},
}};

bool digits_at(std::string_view s, std::size_t i, std::size_t n) {
  if (i + n > s.size()) return false;
  for (std::size_t k = 0; k < n; ++k)
    if (!is_digit(s[i + k])) return false;
  return true;
}

/// The first "YYYY-MM-DD HH:MM:SS" in the line's first 96 bytes, or after "datetime: ".
double line_timestamp(std::string_view line) {
  const std::size_t limit = std::min<std::size_t>(line.size(), 96);
  for (std::size_t i = 0; i + 19 <= line.size() && i < limit; ++i) {
    if (line[i + 4] == '-' && line[i + 7] == '-' && digits_at(line, i, 4)) {
      const double t = parse_log_time(line.substr(i));
      if (!std::isnan(t)) return t;
    }
  }
  if (const std::size_t d = line.find("datetime: "); d != std::string_view::npos) {
    return parse_log_time(line.substr(d + 10));
  }
  return kNotLogged;
}

/// Days from 1970-01-01 to y-m-d (proleptic Gregorian; H. Hinnant's days_from_civil).
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

}  // namespace
}  // namespace detail

double parse_log_time(std::string_view s) {
  using detail::digits_at;
  if (!digits_at(s, 0, 4) || s[4] != '-' || !digits_at(s, 5, 2) || s[7] != '-' || !digits_at(s, 8, 2) ||
      (s[10] != ' ' && s[10] != 'T') || !digits_at(s, 11, 2) || s[13] != ':' || !digits_at(s, 14, 2) ||
      s[16] != ':' || !digits_at(s, 17, 2)) {
    return kNotLogged;
  }
  auto num = [&](std::size_t i, std::size_t n) {
    int v = 0;
    for (std::size_t k = 0; k < n; ++k) v = v * 10 + (s[i + k] - '0');
    return v;
  };
  const int y = num(0, 4), mo = num(5, 2), d = num(8, 2), h = num(11, 2), mi = num(14, 2), sec = num(17, 2);
  // The day must exist in its month (no 2025-02-30); a leap second (60) is allowed.
  constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  if (mo < 1 || mo > 12 || d < 1 || d > kDays[mo - 1] + (mo == 2 && leap ? 1 : 0) || h > 23 || mi > 59 || sec > 60) {
    return kNotLogged;
  }
  double t = static_cast<double>(detail::days_from_civil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d))) * 86400.0 +
             h * 3600.0 + mi * 60.0 + sec;
  if (s.size() > 20 && (s[19] == '.' || s[19] == ',') && detail::is_digit(s[20])) {
    double scale = 0.1;
    for (std::size_t i = 20; i < s.size() && i < 29 && detail::is_digit(s[i]); ++i, scale /= 10) t += (s[i] - '0') * scale;
  }
  return t;
}

log_line parse_log_line(std::string_view line) {
  log_line out;
  out.timestamp_s = detail::line_timestamp(line);
  for (const detail::line_parser parse : detail::kParsers) {
    if (parse(line, out)) {
      out.record.timestamp_s = out.timestamp_s;
      return out;
    }
    out.record = log_record{};
    out.problem.clear();
  }
  for (const detail::event_marker& m : detail::kEventMarkers) {
    if (line.find(m.text) != std::string_view::npos) {
      out.what = log_line::kind::event;
      out.event = m.event;
      return out;
    }
  }
  return out;
}

}  // namespace trainplan
