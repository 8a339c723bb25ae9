// One parser per framework's progress line, built from the code that prints it (docs/formulas.md §8.0):
// a table of formats, each an anchor that recognizes its lines and a field table that maps the printed
// key to a log_record field and its unit. Lines of no format are events (a table of markers) or unknown.
#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <string_view>

#include "trainplan/core/logs/logs.h"

namespace trainplan {

namespace {

constexpr std::array<std::string_view, 8> kFormatNames = {"megatron-lm",       "megatron-deepspeed", "nemo",
                                                          "nemo-progress-bar", "torchtitan",         "deepspeed",
                                                          "gpt-neox",          "deepspeed-engine"};
constexpr std::array<std::string_view, 8> kDisplayNames = {
    "Megatron-LM", "Megatron-DeepSpeed", "NeMo", "NeMo (progress bar)", "torchtitan", "DeepSpeed (pipeline)",
    "GPT-NeoX",    "DeepSpeed engine"};

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
  // Lightning's bar prints a NaN loss as "nan.0": not a number, and known to be one.
  if (const std::size_t dot = text.find('.'); dot != std::string_view::npos && dot >= 3 &&
                                              text.find_first_not_of('0', dot + 1) == std::string_view::npos) {
    const std::string_view head = text.substr(0, dot);
    auto is = [&](std::string_view word) {
      std::string_view h = head;
      if (!h.empty() && (h.front() == '-' || h.front() == '+')) h.remove_prefix(1);
      if (h.size() != word.size()) return false;
      for (std::size_t i = 0; i < h.size(); ++i)
        if ((h[i] | 0x20) != word[i]) return false;
      return true;
    };
    if (is("nan")) {
      out = std::numeric_limits<double>::quiet_NaN();
      return true;
    }
    if (is("inf")) {
      out = head.front() == '-' ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
      return true;
    }
  }
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
/// human_flops: GPT-NeoX's `human_readable_flops` ("112.9TFLOPS", "0.2PFLOPS"), in FLOP/s per GPU.
enum class field { iteration_s, tflops, human_flops, loss, grad_norm, loss_scale, learning_rate, skipped, nan_count,
                   consumed_samples, consumed_tokens, global_batch_size, iteration, samples_per_s };
struct field_key {
  std::string_view key;
  field target;
  double scale = 1;
};

/// "112.9TFLOPS" → 112.9 TFLOP/s: the prefixes of GPT-NeoX's megatron/utils.py human_readable_flops (powers
/// of 1000 from "" to "ZFLOPS"); false when the text is not one.
bool human_flops_to_tflops(std::string_view text, double& tflops) {
  text = trim(text);
  if (!text.ends_with("FLOPS")) return false;
  text.remove_suffix(5);
  constexpr std::string_view kPrefixes = "KMGTPEZ";
  double scale = 1e-12;
  if (!text.empty()) {
    if (const std::size_t p = kPrefixes.find(text.back()); p != std::string_view::npos) {
      scale = std::pow(1000.0, static_cast<double>(p + 1)) * 1e-12;
      text.remove_suffix(1);
    }
  }
  double d = 0;
  if (!to_number(text, d)) return false;
  tflops = d * scale;
  return true;
}

bool set_field(log_record& r, const field_key& k, std::string_view value, std::string& problem) {
  double d = 0;
  std::int64_t n = 0;
  if (k.target == field::human_flops) {
    if (!human_flops_to_tflops(value, r.tflops_per_gpu)) {
      problem = "field '" + std::string(k.key) + "': '" + std::string(trim(value).substr(0, 40)) +
                "' is not a rate such as 112.9TFLOPS";
      return false;
    }
    return true;
  }
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
    case field::human_flops: break;
    case field::loss:  // a loss of nan or inf is a finding (§8.4), not a value
      r.loss = std::isfinite(d) ? d : kNotLogged;
      r.loss_nonfinite = !std::isfinite(d);
      break;
    case field::grad_norm:
      r.grad_norm = std::isfinite(d) ? d : kNotLogged;
      r.grad_norm_nonfinite = !std::isfinite(d);
      break;
    case field::samples_per_s: r.samples_per_s = d; break;
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
// GPT-NeoX (megatron/training.py training_log): " samples/sec: 7.8 | iteration 34/ 10000 | … | approx flops
// per GPU: 112.9TFLOPS | lm_loss: 1.118665E+01 | … |".
constexpr std::array<field_key, 16> kMegatronKeys = {{
    {"consumed samples", field::consumed_samples},
    {"consumed tokens", field::consumed_tokens},
    {"elapsed time per iteration (ms)", field::iteration_s, 1e-3},
    {"elapsed time per iteration (s)", field::iteration_s, 1},
    {"throughput per GPU (TFLOP/s/GPU)", field::tflops},
    {"TFLOPs", field::tflops},
    {"learning rate", field::learning_rate},
    {"global batch size", field::global_batch_size},
    {"lm loss", field::loss},
    {"lm_loss", field::loss},
    {"loss", field::loss},
    {"approx flops per GPU", field::human_flops},
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
  // A line cut short (a quote, a full disk, a killed job) ends before its last '|': the fields before it
  // are whole and read; the last, perhaps partial, is not.
  if (trim(rest).empty() || trim(rest).back() != '|') {
    r.cut_short = true;
    const std::size_t last_bar = rest.rfind('|');
    rest = last_bar == std::string_view::npos ? std::string_view() : rest.substr(0, last_bar + 1);
  }
  static constexpr std::array<std::string_view, 2> kDeepSpeedKeys = {"elapsed time per iteration (s)", "TFLOPs"};
  bool deepspeed = false;
  const bool ok = read_fields(rest, '|', ':', keys, out, kDeepSpeedKeys, &deepspeed);
  if (deepspeed) out.format = log_format::megatron_deepspeed;
  if (rest.find("approx flops per GPU:") != std::string_view::npos || rest.find(" lm_loss:") != std::string_view::npos) {
    out.format = log_format::gpt_neox;
    // "samples/sec: X |" precedes the counter in GPT-NeoX's line.
    const std::size_t sps = line.rfind("samples/sec:", pos);
    if (sps != std::string_view::npos) {
      const std::size_t end = line.find('|', sps);
      double v = 0;
      if (end != std::string_view::npos && end < pos && to_number(line.substr(sps + 12, end - sps - 12), v) && v > 0) {
        r.samples_per_s = v;
      }
    }
  }
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

// ---- NeMo 1 (PTL's TQDM bar; NeMo's README "Expected Performance", NeMo-Framework-Launcher issue 55) --------
// "Epoch 0:   1%|          | 795/77225 [9:07:58<878:01:48, 41.36s/it, loss=3.1, v_num=, reduced_train_loss=3.090,
// global_step=794.0, consumed_samples=1.63e+6]"; after NeMo PR 7374 the rate is gone and
// "train_step_timing in s=0.615" carries the step time. tqdm's format_num prints floats with 3 significant
// digits ("global_step=9e+3"): such a step is not exact, and the bar's own counter is read instead.
constexpr std::array<field_key, 8> kNemoBarKeys = {{
    {"loss", field::loss},  // Lightning's running mean; NeMo's reduced_train_loss, later in the bar, wins
    {"reduced_train_loss", field::loss},
    {"global_step", field::iteration},
    {"consumed_samples", field::consumed_samples},
    {"train_step_timing in s", field::iteration_s, 1},
    {"lr", field::learning_rate},
    {"tflops_per_sec_per_gpu", field::tflops},
    {"grad_norm", field::grad_norm},
}};

/// tqdm's format_interval ("41:07", "9:07:58", "878:01:48") in seconds; NaN when not one.
double bar_interval_s(std::string_view text) {
  text = trim(text);
  double total = 0;
  int parts = 0;
  while (!text.empty()) {
    const std::size_t colon = text.find(':');
    std::int64_t v = 0;
    if (!to_count(text.substr(0, colon), v) || v > 100000000) return kNotLogged;
    total = total * 60 + static_cast<double>(v);
    ++parts;
    text = colon == std::string_view::npos ? std::string_view() : text.substr(colon + 1);
  }
  return parts >= 2 && parts <= 3 ? total : kNotLogged;
}

bool parse_nemo_bar(std::string_view line, log_line& out) {
  if (line.find("train_step_timing in s=") == std::string_view::npos &&
      line.find("reduced_train_loss=") == std::string_view::npos && line.find("global_step=") == std::string_view::npos) {
    return false;
  }
  // The bar: "| n/total [" (a DeepSpeed timer line also says "global_step=", but has no bar).
  const std::size_t open = line.rfind('[');
  if (open == std::string_view::npos) return false;
  const std::size_t bar_end = line.rfind('|', open);
  if (bar_end == std::string_view::npos) return false;
  const std::string_view counter_text = trim(line.substr(bar_end + 1, open - bar_end - 1));
  const std::size_t counter_slash = counter_text.find('/');
  if (counter_slash == std::string_view::npos || counter_slash == 0 ||
      !std::all_of(counter_text.begin(), counter_text.begin() + static_cast<std::ptrdiff_t>(counter_slash), is_digit)) {
    return false;
  }
  out.format = log_format::nemo_progress_bar;
  log_record& r = out.record;
  std::string_view rest = line.substr(open + 1);
  if (!rest.empty() && trim(rest).back() == ']') {
    rest = trim(rest);
    rest.remove_suffix(1);
  } else {  // cut short: the items before the last ',' are whole
    r.cut_short = true;
    const std::size_t comma = rest.rfind(',');
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(0, comma);
  }
  if (!read_fields(rest, ',', '=', kNemoBarKeys, out)) return finish_record(out, false);
  // The items without '=': "elapsed<remaining" and the rate ("41.36s/it", "2.5it/s", "?it/s").
  std::string_view items = rest;
  while (!items.empty()) {
    const std::size_t cut = items.find(',');
    const std::string_view item = trim(items.substr(0, cut));
    items = cut == std::string_view::npos ? std::string_view() : items.substr(cut + 1);
    if (item.find('=') != std::string_view::npos) continue;
    double v = 0;
    if (const std::size_t lt = item.find('<'); lt != std::string_view::npos) {
      r.elapsed_s = bar_interval_s(item.substr(0, lt));
    } else if (item.ends_with("s/it") && to_number(item.substr(0, item.size() - 4), v) && v > 0) {
      if (std::isnan(r.iteration_s)) r.iteration_s = v;
    } else if (item.ends_with("it/s") && to_number(item.substr(0, item.size() - 4), v) && v > 0) {
      if (std::isnan(r.iteration_s)) r.iteration_s = 1 / v;
    }
  }
  // "| 795/77225 [": the bar's counter and total (max_steps when the run sets it).
  std::int64_t counter = -1, total = 0;
  if (const std::size_t bar = line.rfind('|', open); bar != std::string_view::npos) {
    const std::string_view c = trim(line.substr(bar + 1, open - bar - 1));
    if (const std::size_t slash = c.find('/'); slash != std::string_view::npos) {
      if (!to_count(c.substr(0, slash), counter)) counter = -1;
      if (!to_count(c.substr(slash + 1), total)) total = 0;
    }
  }
  const std::size_t gs = rest.find("global_step=");
  const bool rounded = gs != std::string_view::npos &&
                       rest.substr(gs + 12, rest.find(',', gs) - gs - 12).find_first_of("eE") != std::string_view::npos;
  if ((r.iteration < 0 || rounded) && counter >= 0) r.iteration = counter;
  if (r.iteration < 0) {
    out.what = log_line::kind::malformed;
    out.problem = "a progress bar without global_step or a counter";
    return true;
  }
  if (total >= r.iteration) r.train_iterations = total;
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

// ---- DeepSpeed's engine: deepspeed/runtime/engine.py DeepSpeedEngine._report_progress ---------------------
// "[2022-03-11 02:06:58,985] [INFO] [logging.py:69:log_dist] [Rank 0] step=40, skipped=2, lr=[5e-05],
// mom=[[0.9, 0.999]]" every steps_per_print; `skipped` counts the fp16 overflow steps since the start.
bool parse_deepspeed_engine(std::string_view line, log_line& out) {
  const std::size_t at = line.find("] step=");
  if (at == std::string_view::npos) return false;
  const std::size_t skipped = line.find(", skipped=", at);
  if (skipped == std::string_view::npos) return false;
  log_record& r = out.record;
  out.format = log_format::deepspeed_engine;
  const std::size_t step_from = at + std::strlen("] step=");
  std::size_t skip_to = skipped + std::strlen(", skipped=");
  std::size_t skip_end = line.find(',', skip_to);
  if (!to_count(line.substr(step_from, skipped - step_from), r.iteration) ||
      !to_count(line.substr(skip_to, skip_end == std::string_view::npos ? std::string_view::npos : skip_end - skip_to),
                r.skipped_cumulative)) {
    out.what = log_line::kind::malformed;
    out.problem = "step= and skipped= must be whole numbers";
    return true;
  }
  if (const std::size_t lr = line.find("lr=[", skip_to); lr != std::string_view::npos) {
    const std::size_t end = line.find_first_of(",]", lr + 4);
    double v = 0;
    if (end != std::string_view::npos && to_number(line.substr(lr + 4, end - lr - 4), v)) r.learning_rate = v;
  }
  out.what = log_line::kind::record;
  return true;
}

// ---- DeepSpeed's throughput timer: deepspeed/utils/timer.py ThroughputTimer.stop -----------------------
// "epoch=0/micro_step=34/global_step=34, RunningAvgSamplesPerSec=7.86, CurrSamplesPerSec=8.00, MemAllocated=…";
// before 0.8: "0/3, RunningAvgSamplesPerSec=…, CurrSamplesPerSec=…" and "0/40, SamplesPerSec=83.48, …". The
// timer's batch size is the train batch size (engine.py: ThroughputTimer(batch_size=train_batch_size())), so
// samples/s are the whole job's; CurrSamplesPerSec measures the last step, the others the run so far.
bool parse_deepspeed_timer(std::string_view line, log_line& out) {
  const std::size_t sps = line.find("SamplesPerSec=");
  if (sps == std::string_view::npos) return false;
  auto value_of = [&](std::string_view key) {
    double v = kNotLogged;
    const std::size_t k = line.find(key);
    if (k == std::string_view::npos) return v;
    const std::size_t from = k + key.size();
    const std::size_t end = line.find(',', from);
    if (!to_number(line.substr(from, end == std::string_view::npos ? std::string_view::npos : end - from), v)) v = kNotLogged;
    return v;
  };
  double rate = value_of("CurrSamplesPerSec=");
  if (std::isnan(rate)) rate = value_of(", SamplesPerSec=");
  if (std::isnan(rate)) rate = value_of("RunningAvgSamplesPerSec=");
  if (std::isnan(rate) || !std::isfinite(rate) || rate <= 0) return false;  // -inf before the first step
  out.what = log_line::kind::throughput;
  out.format = log_format::deepspeed_engine;
  out.samples_per_s = rate;
  if (const std::size_t g = line.find("global_step="); g != std::string_view::npos) {
    const std::size_t end = line.find(',', g);
    std::int64_t n = 0;
    if (to_count(line.substr(g + 12, end == std::string_view::npos ? std::string_view::npos : end - g - 12), n)) out.step = n;
  } else {  // "E/N, ...SamplesPerSec": N, the step count
    const std::size_t comma = line.rfind(',', sps);
    const std::size_t slash = comma == std::string_view::npos ? std::string_view::npos : line.rfind('/', comma);
    std::int64_t n = 0;
    if (slash != std::string_view::npos && to_count(line.substr(slash + 1, comma - slash - 1), n)) out.step = n;
  }
  return true;
}

// ---- DeepSpeed's fp16 loss scaler: deepspeed/runtime/fp16/loss_scaler.py DynamicLossScaler.update_scale --
// "[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 65536, reducing to 32768"; with
// hysteresis left, "…: 65536, but hysteresis is 2. Reducing hysteresis to 1" (the scale stays).
bool parse_deepspeed_overflow(std::string_view line, log_line& out) {
  const std::size_t a = line.find("Attempted loss scale: ");
  if (a == std::string_view::npos || line.find("OVERFLOW") == std::string_view::npos) return false;
  const std::size_t from = a + std::strlen("Attempted loss scale: ");
  const std::size_t comma = line.find(',', from);
  double before = 0;
  if (comma == std::string_view::npos || !to_number(line.substr(from, comma - from), before)) return false;
  out.what = log_line::kind::event;
  out.event = log_event::overflow;
  out.format = log_format::deepspeed_engine;
  out.scale_before = before;
  if (const std::size_t to = line.find("reducing to ", comma); to != std::string_view::npos) {
    double after = 0;
    if (to_number(line.substr(to + 12), after)) out.scale_after = after;
  }
  return true;
}

/// The formats, tried in order on each line.
using line_parser = bool (*)(std::string_view, log_line&);
/// NeMo 2's "Training epoch 0, iteration 9/99 | ..." would also pass Megatron's counter: NeMo first.
constexpr std::array<line_parser, 8> kParsers = {parse_nemo,    parse_megatron,         parse_nemo_bar,
                                                 parse_titan,   parse_deepspeed,        parse_deepspeed_engine,
                                                 parse_deepspeed_timer, parse_deepspeed_overflow};

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
