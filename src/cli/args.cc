// Job flags: parsing against the flag table (src/cli/args_table.cc), launch lines, and the job the flags
// describe (docs/formulas.md §2.1 lists the mapping).
#include "trainplan/cli/args.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "trainplan/core/estimate/calibration.h"
#include "trainplan/core/estimate/comm.h"
#include "args_detail.h"
#include "bridge_config.h"
#include "deepspeed_config.h"
#include "launcher.h"
#include "trainplan/core/base/checked.h"
#include "local_flags.h"
#include "parse.h"
#include "trainplan/cli/cli.h"
#include "trainplan/core/base/error.h"
#include "trainplan/core/base/limits.h"

namespace trainplan {

namespace args_detail {

std::int64_t to_int(const std::string& v, const std::string& flag) { return detail::parse_integer(v, flag); }

/// An integer of at least `lo` (0 or 1): 0 is the internal "not given", so an explicit 0 or a negative
/// value must not fall back silently to a default.
std::int64_t to_int_min(const std::string& v, const std::string& flag, std::int64_t lo) {
  return detail::parse_integer(v, flag, lo);
}

double to_double(const std::string& v, const std::string& flag) { return detail::parse_number(v, flag); }

double to_positive(const std::string& v, const std::string& flag) {
  const double d = to_double(v, flag);
  if (d <= 0) throw input_error(flag + " must be positive, got " + v);
  return d;
}

double to_between(const std::string& v, const std::string& flag, double lo, double hi, std::string_view unit) {
  const double d = to_double(v, flag);
  if (!(d >= lo && d <= hi)) {
    throw input_error(fmt::format("{} must be between {:g} and {:g}{}{}, got {}", flag, lo, hi, unit.empty() ? "" : " ",
                                  unit, v));
  }
  return d;
}

/// A size given in `unit` bytes (GiB, MiB) as whole bytes; absurd values are an error, never a wrapped cast.
std::int64_t to_bytes(const std::string& v, const std::string& flag, double unit, bool allow_zero) {
  const double d = allow_zero ? to_double(v, flag) : to_positive(v, flag);
  if (d < 0) throw input_error(flag + " must not be negative, got " + v);
  const double bytes = d * unit;
  if (bytes > 0x1p62) throw input_error(flag + ": " + v + " is absurdly large (more than 2^62 bytes)");
  const auto whole = static_cast<std::int64_t>(bytes);
  if (!allow_zero && whole < 1) throw input_error(flag + ": " + v + " is less than one byte");
  return whole;
}

}  // namespace args_detail

namespace {

/// The limits as help text (include/trainplan/core/base/limits.h; docs/formulas.md §7.9).
std::string limits_help() {
  return fmt::format(
      "Limits (any input finishes in bounded time and memory; docs/formulas.md §7.9):\n"
      "  GPUs per job ≤ {} (2^24); TP, PP, CP, EP, DP ≤ {} (2^20); GBS ≤ {} samples (2^30)\n"
      "  search: every node count from 1 to --num-nodes, at most {} of them (--nodes LIST beyond); --threads ≤ {}\n"
      "  schedule: the events of at most {} micro-batches per pipeline (a shortened timeline beyond, full totals)\n"
      "  plan: at most 2^53 samples; files: UTF-8 text, numbers a double holds\n",
      limits::kMaxGpus, limits::kMaxParallel, limits::kMaxGlobalBatch, limits::kMaxSearchNodeCounts,
      limits::kMaxSearchThreads, limits::kMaxTimelineMicrobatches);
}

}  // namespace

namespace {

using namespace args_detail;

constexpr const char* kIgnoredFlags[] = {
    "--lr", "--min-lr", "--lr-decay-style", "--lr-decay-iters", "--lr-decay-samples", "--lr-warmup-fraction",
    "--lr-warmup-iters", "--lr-warmup-samples", "--lr-warmup-init", "--weight-decay", "--clip-grad", "--adam-beta1",
    "--adam-beta2", "--adam-eps", "--sgd-momentum", "--init-method-std", "--train-iters", "--train-samples",
    "--train-tokens", "--eval-iters", "--eval-interval", "--save-interval", "--log-interval", "--save", "--load",
    "--data-path", "--split", "--vocab-file", "--merge-file", "--tokenizer-type", "--tokenizer-model",
    "--tokenizer-name-or-path", "--distributed-backend", "--seed", "--tensorboard-dir", "--tensorboard-queue-size",
    "--wandb-*", "--log-*", "--exit-*", "--timing-log-level", "--timing-log-option", "--attention-softmax-in-fp32",
    "--rotary-percent", "--rotary-base", "--rotary-interleaved",
    "--norm-epsilon", "--layernorm-epsilon", "--apply-query-key-layer-scaling", "--initial-loss-scale",
    "--loss-scale", "--loss-scale-window", "--hysteresis", "--min-loss-scale", "--data-impl", "--dataloader-type",
    "--num-workers", "--use-checkpoint-args", "--no-load-optim", "--no-load-rng", "--finetune",
    "--rampup-batch-size", "--kill-switch-path", "--abort-on-unmet-fused-kernel-constraints",
    "--deepspeed-activation-checkpointing", "--openai-gelu", "--onnx-safe",
    "--apply-residual-connection-post-layernorm", "--apply-layernorm-1p", "--no-persist-layer-norm",
    "--use-fused-rmsnorm", "--sync-tp-duplicated-parameters",
    "--reset-position-ids", "--reset-attention-mask", "--eod-mask-loss", "--no-async-tensor-model-parallel-allreduce",
    "--moe-router-load-balancing-type", "--moe-aux-loss-coeff",
    "--moe-z-loss-coeff", "--moe-router-pre-softmax", "--untie-embeddings-and-output-weights-*",
    "--micro-batch-size-*", "--ffn-hidden-size-*", "--valid-data-path", "--test-data-path", "--train-data-path",
    "--data-cache-path", "--mock-data", "--no-mmap-bin-files", "--distributed-timeout-minutes", "--ckpt-format",
    "--async-save", "--use-dist-ckpt", "--auto-detect-ckpt-format", "--manual-gc", "--manual-gc-interval",
    "--calculate-per-token-loss", "--num-dataset-builder-threads", "--bf16-*",
    "--curriculum-*", "--universal-checkpoint", "--load-universal-checkpoint",
    // BLOOM's and Megatron-DeepSpeed's data, schedule and numerics flags (bigscience-workshop and
    // microsoft/Megatron-DeepSpeed megatron/arguments.py).
    "--train-weighted-split-paths-path", "--valid-weighted-split-paths-path", "--test-weighted-split-paths-path",
    "--valid-num-workers", "--no-query-key-layer-scaling", "--lr-decay-tokens", "--lr-warmup-tokens",
    // Only with Megatron-DeepSpeed's MoE (DeepSpeed-MoE), which is refused (--num-experts > 1): its interval,
    // capacities, token dropping, top-k, residual MoE and parameter groups.
    "--expert-interval", "--moe-train-capacity-factor", "--moe-eval-capacity-factor", "--moe-min-capacity",
    "--disable-moe-token-dropping", "--disable-moe-top2-2nd-expert-sampling", "--create-moe-param-group", "--topk",
    "--mlp-type",
    // Megatron-DeepSpeed's MoE loss weight and checkpoint loading; its knowledge-distillation teacher and
    // loss settings, read only with --kd or --mos (refused below) (megatron/arguments.py at 4efb479).
    "--moe-loss-coeff", "--no-load-lr-state", "--reset-iteration", "--num-layers-teacher", "--hidden-size-teacher",
    "--num-attention-heads-teacher", "--num-experts-teacher", "--load-teacher", "--kd-alpha-ce", "--kd-beta-ce",
    "--kd-temp",
#include "megatron_core_ignored.inc"
};

/// Flags that change no estimate at the value given and one trainplan does not model at any other
/// (Megatron-DeepSpeed's defaults): listed as ignored, or an error naming what they would change.
struct conditional_flag {
  const char* flag;
  const char* harmless_value;
  const char* would_change;
};
constexpr conditional_flag kConditionalFlags[] = {
    {"--moe-expert-parallel-size", "1", "Megatron-DeepSpeed's expert parallelism (DeepSpeed-MoE)"},
    {"--checkpoint-num-layers", "1", "how many layers Megatron-DeepSpeed checkpoints as one chunk"},
};

/// Transformer Engine userbuffer tuning (Megatron-Core model_parallel_config.py: "Don't care if
/// tp_comm_overlap is False"): ignored without --tp-comm-overlap, refused with it (which GEMMs overlap
/// their collectives is not modelled at that grain).
constexpr const char* kTpCommTuningFlags[] = {
    "--disable-tp-comm-bulk-dgrad", "--disable-tp-comm-bulk-wgrad", "--disable-tp-comm-overlap-ag",
    "--disable-tp-comm-overlap-rs", "--disable-tp-comm-split-ag",   "--disable-tp-comm-split-rs",
    "--no-tp-comm-bulk-dgrad",      "--no-tp-comm-bulk-wgrad",      "--no-tp-comm-overlap-ag",
    "--no-tp-comm-overlap-rs",      "--no-tp-comm-split-ag",        "--no-tp-comm-split-rs",
    "--tp-comm-overlap-rs-dgrad",   "--tp-comm-overlap-cfg",
};

/// Flags that would change an estimate but are not modelled: an error naming the flag.
constexpr const char* kUnmodelledFlags[] = {
    "--fp8", "--cpu-offloading",
    // Deterministic kernels (cuDNN attention's deterministic backward, NCCL's fixed algorithms): slower by
    // amounts nothing here measures.
    "--deterministic-mode",
    // DeepSpeed's partitioned activation checkpoints (split over TP).
    "--partition-activations",
    "--heterogeneous-layers-config-path", "--encoder-num-layers",
    "--encoder-pipeline-model-parallel-size",
    "--distribute-saved-activations",
    "--decoder-num-layers", "--first-k-dense-replace",
    // Megatron-DeepSpeed's knowledge distillation and mixture of students: a teacher model's forward each step.
    "--kd", "--mos",
    // Megatron-DeepSpeed's FPDT (Ulysses over sequence chunks, optionally offloaded to the host).
    "--ds-sequence-parallel-fpdt", "--ds-sequence-parallel-fpdt-chunk-size", "--ds-sequence-parallel-fpdt-offloading",
#include "megatron_core_refused.inc"
};

/// A flag list of exact names and `prefix*` patterns, indexed once: a flag is looked up in a hash set and
/// against the few prefixes (a Megatron-Bridge config classifies some 600 fields by their flags).
class flag_patterns {
 public:
  template <std::size_t N>
  explicit flag_patterns(const char* const (&patterns)[N]) {
    for (const char* pattern : patterns) {
      const std::string_view p = pattern;
      if (p.ends_with('*')) prefixes_.push_back(p.substr(0, p.size() - 1));
      else exact_.insert(p);
    }
  }
  bool matches(std::string_view flag) const {
    if (exact_.contains(flag)) return true;
    return std::any_of(prefixes_.begin(), prefixes_.end(),
                       [&](std::string_view p) { return flag.starts_with(p) && flag.size() > p.size(); });
  }

 private:
  std::unordered_set<std::string_view> exact_;
  std::vector<std::string_view> prefixes_;
};

const flag_patterns& ignored_patterns() {
  static const flag_patterns p(kIgnoredFlags);
  return p;
}
const flag_patterns& unmodelled_patterns() {
  static const flag_patterns p(kUnmodelledFlags);
  return p;
}

std::string normalize(std::string flag) {
  // Megatron and torchrun spell some flags with '_'.
  for (std::size_t i = 2; i < flag.size(); ++i)
    if (flag[i] == '_') flag[i] = '-';
  // Megatron-Core's newer names for flags the table has under their long-standing ones.
  static constexpr std::pair<std::string_view, std::string_view> kRenamed[] = {
      {"--num-virtual-stages-per-pipeline-rank", "--virtual-pipeline-model-parallel-size"}};
  for (const auto& [now, before] : kRenamed)
    if (flag == now) return std::string(before);
  return flag;
}

const flag_def* find_flag(const std::string& name);

}  // namespace

namespace {

/// The class of a flag by the rules of classify_flag below, without normalizing.
flag_class classify_by_rules(std::string_view flag, const std::unordered_set<std::string_view>& harmless) {
  if (ignored_patterns().matches(flag)) return flag_class::ignored;
  if (harmless.contains(flag)) return flag_class::ignored;
  if (unmodelled_patterns().matches(flag)) return flag_class::refused;
  return flag_class::unknown;
}

}  // namespace

flag_class classify_flag(const std::string& flag_in) {
  // Most names need no normalizing: no copy then.
  std::string normalized;
  const bool as_is = flag_in.find('_', 2) == std::string::npos && flag_in != "--num-virtual-stages-per-pipeline-rank";
  if (!as_is) normalized = normalize(flag_in);
  const std::string& flag = as_is ? flag_in : normalized;
  if (find_flag(flag) != nullptr || flag == "--preset") return flag_class::modelled;
  // Ignored at a harmless value or setting, refused otherwise (read_flags): the conditional flags at their
  // default, TP-overlap tuning without --tp-comm-overlap, the hybrid stack spec.
  static const std::unordered_set<std::string_view> kIgnoredWhenHarmless = [] {
    std::unordered_set<std::string_view> m{"--spec"};
    for (const conditional_flag& c : kConditionalFlags) m.insert(c.flag);
    for (const char* t : kTpCommTuningFlags) m.insert(t);
    return m;
  }();
  // Every exact name of the lists, classified once by the rules (a Megatron-Bridge config asks ~1,000
  // times); other names (the lists' prefixes, unknown ones) by the rules each time.
  static const std::unordered_map<std::string_view, flag_class> kByName = [] {
    std::unordered_map<std::string_view, flag_class> m;
    auto add = [&](std::string_view name) {
      if (!name.ends_with('*')) m.emplace(name, classify_by_rules(name, kIgnoredWhenHarmless));
    };
    for (const char* f : kIgnoredFlags) add(f);
    for (const std::string_view f : kIgnoredWhenHarmless) add(f);
    for (const char* f : kUnmodelledFlags) add(f);
    return m;
  }();
  if (const auto it = kByName.find(flag); it != kByName.end()) return it->second;
  return classify_by_rules(flag, kIgnoredWhenHarmless);
}

namespace {

const flag_def* find_flag(const std::string& name) {
  // The table by name and alias, built once (the first name wins, as the table's order decided before).
  static const std::unordered_map<std::string_view, const flag_def*> index = [] {
    std::unordered_map<std::string_view, const flag_def*> m;
    for (const auto& d : flag_table()) {
      m.emplace(d.info.name, &d);
      for (const auto& a : d.info.aliases) m.emplace(a, &d);
    }
    return m;
  }();
  const auto it = index.find(name);
  return it == index.end() ? nullptr : it->second;
}

std::vector<std::string> all_flag_names() {
  std::vector<std::string> names;
  for (const auto& d : flag_table()) {
    names.push_back(d.info.name);
    for (const auto& a : d.info.aliases) names.push_back(a);
  }
  names.push_back("--preset");
  return names;
}

struct pending {
  const flag_def* def;
  std::string flag;
  std::string value;
  /// where it was given: 0 a preset, 1 the user's flags, 2 the launch line, 3 its DeepSpeed config, 4 its
  /// torchtitan config (or torchtitan's defaults), 5 torchtitan's overrides on the launch line, 6 its NeMo
  /// config (or NeMo's defaults), 7 Hydra's overrides on the launch line
  int source;
  /// a framework config's key: its file:line ("llama3_8b.yaml:61"), for the messages of the job's rules
  std::string where = {};
};

/// Where a tokenizer flag's value goes, or null for any other flag.
std::string* tokenizer_slot(tokenizer_flags& t, const std::string& flag) {
  if (flag == "--tokenizer-type") return &t.type;
  if (flag == "--tokenizer-model") return &t.model;
  if (flag == "--vocab-file") return &t.vocab_file;
  if (flag == "--merge-file") return &t.merge_file;
  return nullptr;
}

/// Hydra's part of a NeMo training script's line (megatron_gpt_pretraining.py): --config-path and
/// --config-name (-cp, -cn), and overrides `key=value`, `+key=value`, `++key=value`, `~key`. Returns
/// whether tokens[i] was one (advancing i past a separate value).
bool read_hydra_token(const std::vector<std::string>& tokens, std::size_t& i, job_builder& b) {
  const std::string& tok = tokens[i];
  for (const auto& [long_name, short_name, slot] :
       {std::tuple{"--config-path", "-cp", &b.nemo_config_path}, std::tuple{"--config-name", "-cn", &b.nemo_config_name}}) {
    const std::string with_eq = std::string(long_name) + "=";
    if (tok.starts_with(with_eq)) {
      *slot = tok.substr(with_eq.size());
    } else if (tok == long_name || tok == short_name) {
      if (i + 1 >= tokens.size()) throw input_error(std::string(long_name) + " needs a value (Hydra's config)");
      *slot = tokens[++i];
    } else {
      continue;
    }
    b.nemo = true;
    return true;
  }
  if (tok.starts_with("-")) return false;
  std::string body = tok;
  const bool remove = body.starts_with("~");
  if (remove) body = body.substr(1);
  else while (body.starts_with("+")) body = body.substr(1);
  const std::size_t eq = body.find('=');
  const std::string key = body.substr(0, eq);
  const bool key_like = !key.empty() && std::all_of(key.begin(), key.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '_' || c == '.' || c == '-';
  });
  if (!key_like || (eq == std::string::npos && !remove)) return false;
  b.nemo = true;
  b.nemo_overrides.push_back({key, eq == std::string::npos ? "" : body.substr(eq + 1), remove});
  return true;
}

/// Read flag tokens into `out`. In launch mode unknown-but-harmless flags are ignored.
void read_flags(const std::vector<std::string>& tokens, bool launch, std::vector<pending>& out, job_builder& b) {
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    std::string tok = tokens[i];
    if (launch && read_hydra_token(tokens, i, b)) continue;
    if (!tok.starts_with("--")) {
      // A value after a switch (`--sp 8,8`) names the switch: it is what the user meant to give it to.
      if (i > 0 && tokens[i - 1].starts_with("--")) {
        if (const flag_def* prev = find_flag(normalize(tokens[i - 1])); prev != nullptr && !prev->takes_value) {
          throw input_error(tokens[i - 1] + " is a switch and takes no value, got '" + tok + "'");
        }
      }
      throw input_error("unexpected argument '" + tok + "'" + (launch ? " in the launch line" : "") +
                        ": job settings are flags such as --model NAME");
    }
    // torchtitan's options are dotted (--training.seq_len 4096): its config file and overrides, read as a
    // whole once the line is (torchtitan_config.h).
    if (launch && tok.substr(0, tok.find('=')).find('.') != std::string::npos) {
      const std::size_t eq = tok.find('=');
      std::string key = tok.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
      std::string value = eq == std::string::npos ? "" : tok.substr(eq + 1);
      if (eq == std::string::npos) {
        if (i + 1 < tokens.size() && !tokens[i + 1].starts_with("--")) value = tokens[++i];
        else value = "true";  // a switch
      }
      b.torchtitan = true;
      if (key == "job.config_file") b.torchtitan_launch_path = value;
      else b.torchtitan_overrides.push_back({key, value});
      continue;
    }
    std::string val;
    bool has_inline = false;
    if (auto eq = tok.find('='); eq != std::string::npos) {
      val = tok.substr(eq + 1);
      tok = tok.substr(0, eq);
      has_inline = true;
    }
    const std::string flag = normalize(tok);
    if (flag == "--preset") {
      if (!has_inline) {
        if (i + 1 >= tokens.size()) throw input_error("--preset needs a value");
        val = tokens[++i];
      }
      const preset* found = nullptr;
      std::vector<std::string> names;
      for (const auto& p : presets()) {
        names.push_back(p.name);
        if (p.name == val) found = &p;
      }
      if (found == nullptr) throw input_error("--preset: unknown preset '" + val + "'" + did_you_mean(val, names));
      b.preset = found->name;
      const std::size_t first = out.size();
      read_flags(found->args, false, out, b);
      for (std::size_t k = first; k < out.size(); ++k) out[k].source = 0;  // the flags after it override
      continue;
    }
    const flag_def* def = find_flag(flag);
    bool ignored_conditional = false;
    if (def == nullptr) {
      // Its values: every token up to the next flag (--data-path 0.5 a 0.5 b, --rampup-batch-size 16 16 1000000).
      auto consume_value = [&] {
        while (!has_inline && i + 1 < tokens.size() && !tokens[i + 1].starts_with("--")) ++i;
      };
      // --spec MODULE NAME (nargs='*'): the layer spec a builder imports. The hybrid stack spec (what
      // pretrain_hybrid.py and pretrain_mamba.py require: hybrid_builders.py) is the one modelled; another
      // spec builds other layers.
      if (flag == "--spec") {
        const std::size_t at = i;
        consume_value();
        std::string given = has_inline ? val : "";
        for (std::size_t k = at + 1; k <= i && !has_inline; ++k) given += (given.empty() ? "" : " ") + tokens[k];
        static constexpr std::array<std::string_view, 3> kModelledSpecs = {
            "megatron.core.models.hybrid.hybrid_layer_specs hybrid_stack_spec",
            "megatron.core.models.hybrid.hybrid_layer_specs mamba_stack_spec",
            "megatron.core.models.mamba.mamba_layer_specs mamba_stack_spec"};
        if (std::find(kModelledSpecs.begin(), kModelledSpecs.end(), given) == kModelledSpecs.end()) {
          throw input_error("--spec " + given + " would change the layers built (a custom layer spec), which trainplan "
                            "does not model; the hybrid stack spec (megatron.core.models.hybrid.hybrid_layer_specs "
                            "hybrid_stack_spec) is, and GPT models need no --spec");
        }
        b.ignored.push_back("--spec " + given);
        continue;
      }
      // Megatron flags that change no estimate are accepted wherever they appear, so that the
      // arguments of pretrain_gpt.py can be pasted as they are; they are listed as ignored.
      for (const conditional_flag& c : kConditionalFlags) {
        if (flag != c.flag) continue;
        const std::size_t at = i;
        consume_value();
        const std::string given = has_inline ? val : i > at ? tokens[at + 1] : "";
        if (given != c.harmless_value) {
          throw input_error(fmt::format("{} {} would change {}, which trainplan does not model; {} {} (the default) "
                                        "changes no estimate",
                                        flag, given, c.would_change, flag, c.harmless_value));
        }
        b.ignored.push_back(flag);
        ignored_conditional = true;
      }
      if (ignored_conditional) continue;
      if (std::any_of(std::begin(kTpCommTuningFlags), std::end(kTpCommTuningFlags),
                      [&](const char* t) { return flag == t; })) {
        consume_value();
        b.tp_comm_tuning.push_back(flag);
        continue;
      }
      if (ignored_patterns().matches(flag)) {
        b.ignored.push_back(flag);
        const std::size_t at = i;
        consume_value();
        // The tokenizer flags change no estimate themselves, but imply the vocabulary (tokenizer.h).
        if (std::string* slot = tokenizer_slot(b.tokenizer, flag)) *slot = has_inline ? val : i > at ? tokens[at + 1] : "";
        continue;
      }
      if (unmodelled_patterns().matches(flag)) {
        throw input_error(fmt::format("{} would change {}, which trainplan does not model; remove it to get the "
                                      "estimate without it",
                                      flag, refused_flag_effect(flag)));
      }
      throw input_error("unknown flag " + flag + did_you_mean(flag, all_flag_names()) +
                        (launch ? "; if it changes no estimate, tell us and we will list it as ignored" : "") +
                        "; `trainplan help flags` lists them");
    }
    if (def->takes_value) {
      const bool list = def->info.value_name == "LIST";
      if (!has_inline && list && (i + 1 >= tokens.size() || tokens[i + 1].starts_with("--"))) {
        val = "";  // nargs='*' given no value: the empty list
      } else if (!has_inline) {
        if (i + 1 >= tokens.size() || tokens[i + 1].starts_with("--")) {
          throw input_error(flag + " needs a value (" + def->info.value_name + ")");
        }
        val = tokens[++i];
        // Megatron's nargs='*' lists (--recompute-modules core_attn moe_act): every value up to the next flag.
        if (list) {
          while (i + 1 < tokens.size() && !tokens[i + 1].starts_with("--")) val += "," + tokens[++i];
        }
      }
    } else if (has_inline) {
      throw input_error(flag + " is a switch and takes no value");
    }
    out.push_back({def, flag, val, launch ? 2 : 1});
    if (def->info.name == "--deepspeed-config") {
      // Its keys as flags of their own source, between the launch line's and the user's (deepspeed_config.h).
      const ds_config ds = read_deepspeed_config(val, flag);
      for (const ds_setting& d : ds.settings) out.push_back({find_flag(d.flag), d.key, d.value, 3});
      b.ignored.insert(b.ignored.end(), ds.ignored.begin(), ds.ignored.end());
    }
    if (def->info.name == "--torchtitan-config") {
      b.torchtitan = true;
      b.torchtitan_user_path = val;
    }
    if (def->info.name == "--nemo-config") {
      b.nemo = true;
      b.nemo_user_path = val;
    }
    if (def->info.name == "--bridge-config") b.bridge_path = val;
  }
}

/// A torchtitan job's settings as flags: the file's (and torchtitan's defaults) as the torchtitan
/// config's source, the launch line's overrides as theirs; the user's flags before `--` override both.
void torchtitan_flags(job_builder& b, std::vector<pending>& out, parsed_job& parsed) {
  if (!b.torchtitan) return;
  const bool user_file = !b.torchtitan_user_path.empty();
  const std::string path = user_file ? b.torchtitan_user_path : b.torchtitan_launch_path;
  if (user_file && !b.torchtitan_launch_path.empty() && b.torchtitan_launch_path != path) {
    parsed.overridden_flags.push_back(fmt::format("--job.config_file {} (launch line) → --torchtitan-config {} (your flags)",
                                                  b.torchtitan_launch_path, path));
  }
  const tt_config tt = read_torchtitan_config(path, user_file ? "--torchtitan-config" : "--job.config_file",
                                              b.torchtitan_overrides);
  for (const tt_setting& s : tt.settings) out.push_back({find_flag(s.flag), s.key, s.value, s.from_launch_line ? 5 : 4});
  const bool user_model = std::any_of(out.begin(), out.end(), [](const pending& p) {
    return p.source == 1 && p.def->info.name == "--model";
  });
  if (!tt.unknown_model.empty() && !user_model) throw input_error(tt.unknown_model);
  b.ignored.insert(b.ignored.end(), tt.ignored.begin(), tt.ignored.end());
  parsed.overridden_flags.insert(parsed.overridden_flags.end(), tt.overridden.begin(), tt.overridden.end());
  parsed.derived_flags.insert(parsed.derived_flags.end(), tt.derived.begin(), tt.derived.end());
  const bool user_recompute = std::any_of(out.begin(), out.end(), [](const pending& p) {
    return p.source == 1 && (p.def->info.name == "--recompute-granularity" || p.def->info.name == "--recompute-method" ||
                             p.def->info.name == "--recompute-num-layers" || p.def->info.name == "--recompute-activations" ||
                             p.def->info.name == "--checkpoint-activations");
  });
  if (!user_recompute) b.layer_checkpoint_every = tt.layer_checkpoint_every;
}

/// A framework config's settings (NeMo 1, Megatron-Bridge) as flags: each key's Megatron flags, read as a
/// launch line's (so that a flag trainplan ignores or refuses is ignored or refused as there), of the
/// config's source (its Hydra overrides': 7), named by the key; the user's flags before `--` override both.
void config_settings_flags(const nemo_config& nc, job_builder& b, std::vector<pending>& out, parsed_job& parsed) {
  for (const nemo_setting& s : nc.settings) {
    std::vector<pending> read;
    const std::size_t ignored_before = b.ignored.size();
    const std::string as = fmt::format("{} (as {})", s.key, fmt::join(s.tokens, " "));
    try {
      read_flags(s.tokens, true, read, b);
    } catch (const input_error& e) {
      throw e.wrapped(literal_text(fmt::format("{}: {}: ", s.where, as)), "");
    }
    for (std::size_t k = ignored_before; k < b.ignored.size(); ++k) {
      b.ignored[k] = std::filesystem::path(s.where).filename().string() + ": " + as;
    }
    for (pending& p : read) {
      p.source = s.from_launch_line ? 7 : 6;
      p.flag = s.key;
      p.where = s.where;
      out.push_back(std::move(p));
    }
  }
  if (nc.tokenizer.any()) b.tokenizer = nc.tokenizer;
  b.ignored.insert(b.ignored.end(), nc.ignored.begin(), nc.ignored.end());
  parsed.overridden_flags.insert(parsed.overridden_flags.end(), nc.overridden.begin(), nc.overridden.end());
  parsed.derived_flags.insert(parsed.derived_flags.end(), nc.derived.begin(), nc.derived.end());
}

/// A NeMo job's settings as flags: its YAML from --nemo-config, else from the launch line's
/// --config-path/--config-name, with the line's Hydra overrides.
void nemo_flags(job_builder& b, std::vector<pending>& out, parsed_job& parsed) {
  if (!b.nemo) return;
  std::string path = b.nemo_user_path;
  const char* flag = "--nemo-config";
  if (path.empty()) {
    if (b.nemo_config_name.empty()) {
      throw input_error("launch line: Hydra overrides without --config-name: give the NeMo config with --config-path "
                        "DIR --config-name NAME on the line, or --nemo-config FILE before '--'");
    }
    // Hydra reads a relative --config-path beside the script that calls it; a checkout laid out
    // differently here is read from the working directory.
    std::filesystem::path name = b.nemo_config_name;
    if (!name.has_extension()) name += ".yaml";
    std::filesystem::path p = std::filesystem::path(b.nemo_config_path) / name;
    if (p.is_relative() && !b.launch_script.empty()) {
      const std::filesystem::path beside = std::filesystem::path(b.launch_script).parent_path() / p;
      std::error_code ec;
      if (std::filesystem::is_regular_file(beside, ec)) p = beside;
    }
    path = p.string();
    flag = "--config-name";
  } else if (!b.nemo_config_name.empty()) {
    parsed.overridden_flags.push_back(
        fmt::format("--config-name {} (launch line) → --nemo-config {} (your flags)", b.nemo_config_name, path));
  }
  config_settings_flags(read_nemo_config(path, flag, b.nemo_overrides), b, out, parsed);
}

/// A Megatron-Bridge job's settings as flags (bridge_config.h), as a NeMo config's are.
void bridge_flags(job_builder& b, std::vector<pending>& out, parsed_job& parsed) {
  if (b.bridge_path.empty()) return;
  if (b.nemo) {
    throw input_error("--bridge-config and a NeMo config both give the job: give one");
  }
  config_settings_flags(read_bridge_config(b.bridge_path, "--bridge-config"), b, out, parsed);
}

/// torchtitan's layer SAC (activation_checkpoint.py _apply_layer_sac): of a rank's blocks, those whose
/// running count is a multiple of k are checkpointed whole, floor(L/k) of L: Megatron's block method
/// with that many layers (§3.4.4). Needs the model's layer count.
void apply_layer_checkpointing(job_builder& b, std::vector<std::string>& derived) {
  const std::int64_t every = b.layer_checkpoint_every;
  if (every < 2) return;
  training_config& t = b.job.training;
  const std::int64_t layers = b.job.model.num_layers / std::max<std::int64_t>(1, b.job.parallel.pp);
  const std::int64_t checkpointed = layers / every;
  if (checkpointed == 0) {
    t.recompute = recompute_granularity::none;
    t.recompute_num_layers = 0;
  } else {
    t.recompute_method_ = recompute_method::block;
    t.recompute_num_layers = checkpointed;
  }
  derived.push_back(fmt::format("--recompute-granularity {} (activation_checkpoint.selective_ac_option {}: every "
                                "{}th of {} blocks checkpointed)",
                                checkpointed == 0 ? "none" : fmt::format("full --recompute-method block "
                                                                         "--recompute-num-layers {}", checkpointed),
                                every, every, layers));
}

/// The launch line's world size as flags of the launch line's source (issue 29): --num-nodes, --gpus-per-node
/// or --num-gpus, each shown as the launcher spelled it, so that the user's own flags before `--` override
/// them and the reports list what they overrode.
void launch_world_flags(const launch_world& w, std::vector<pending>& out, job_builder& b) {
  auto add = [&](const char* name, const std::string& typed, std::int64_t value) {
    out.push_back({find_flag(name), typed, std::to_string(value), 2});
  };
  if (w.nodes) add("--num-nodes", w.nodes_flag.empty() ? "--nnodes" : w.nodes_flag, *w.nodes);
  if (w.per_node) add("--gpus-per-node", w.per_node_flag, *w.per_node);
  if (w.total) add("--num-gpus", w.total_flag, *w.total);
  TRAINPLAN_CHECK((!w.nodes || *w.nodes > 0) && (!w.per_node || *w.per_node > 0) && (!w.total || *w.total > 0));
  if (w.nodes && w.per_node && *w.nodes > limits::kMaxGpus / *w.per_node) {
    throw input_error("launch line: " + w.per_node_flag + " × " + w.nodes_flag + " = " +
                      std::to_string(detail::checked_mul(*w.nodes, *w.per_node, "launch line world size")) +
                      " GPUs, more than " + std::to_string(limits::kMaxGpus));
  }
  b.ignored.insert(b.ignored.end(), w.ignored.begin(), w.ignored.end());
  b.env_attention = w.attention;
}

/// Transformer Engine's attention switches on a launch line (§5.2): under Megatron-Core they choose the
/// kernel where --attention-backend leaves TE its choice (auto, the default); an explicit backend that
/// disagrees is refused as Megatron-Core refuses it (language_module.py _set_attention_backend); another
/// framework, Megatron's own modules (--transformer-impl local) and its legacy models run no TE attention
/// and the variables change nothing.
void apply_attention_env(job_builder& b, std::vector<std::string>& derived) {
  const attention_env& env = b.env_attention;
  if (env.typed.empty()) return;
  const std::string typed = env.typed_text();
  const std::string backend = env.backend();
  if (b.job.training.framework != framework_kind::megatron || b.torchtitan || b.local_transformer_impl ||
      b.job.training.legacy_models) {
    b.ignored.push_back(typed + " (Transformer Engine's attention switches; this job's attention is not Transformer Engine's)");
    return;
  }
  if (backend.empty()) {
    b.ignored.push_back(typed + attention_env::kOwnChoice);
    return;
  }
  using kind = training_config::attention_backend;
  const kind wanted = backend == "flash" ? kind::flash2 : backend == "fused" ? kind::cudnn : kind::unfused;
  kind& asked = b.job.training.attention;
  if (asked == kind::framework_default || asked == kind::fused) {
    asked = wanted;
    derived.push_back(fmt::format("--attention-backend {} ({} on the launch line)", backend, typed));
  } else if (asked != wanted) {
    throw input_error(literal_text("launch line: " + env.contradiction("the --attention-backend given")));
  }
}

/// A model given by Megatron's flags without --vocab-size takes its tokenizer's (tokenizer.h), said in
/// the derived flags; a tokenizer trainplan does not know is named with the flag to give.
void derive_vocabulary(job_builder& b, std::vector<std::string>& derived) {
  model_spec& m = b.job.model;
  if (!b.model_fields || b.model_chosen || m.vocab_size != 0 || m.padded_vocab_size != 0 || !b.tokenizer.any()) return;
  if (const std::optional<tokenizer_vocab> v = vocab_of(b.tokenizer)) {
    m.vocab_size = v->vocab_size;
    derived.push_back(fmt::format("--vocab-size {} ({})", v->vocab_size, v->how));
    return;
  }
  const std::string which = !b.tokenizer.named_as.empty() ? literal_text(b.tokenizer.named_as) + " does"
                            : b.tokenizer.type.empty()     ? "the tokenizer flags do"
                                                           : "--tokenizer-type " + b.tokenizer.type +
                                                                 (b.tokenizer.model.empty() ? "" : " --tokenizer-model " + b.tokenizer.model) +
                                                                 " do";
  throw input_error("--vocab-size is missing, and " + which +
                    " not say it without downloading the tokenizer: give --vocab-size (the tokenizer's length; "
                    "Megatron pads it by --make-vocab-size-divisible-by × TP)");
}

/// With --model and Megatron model flags together: fields the base model derived (Megatron's defaults)
/// follow the overridden sizes unless given.
void rederive_overridden_model(job_builder& b, const model_spec& base) {
  if (!(b.model_chosen && b.model_fields)) return;
  model_spec& m = b.job.model;
  if (!b.is_explicit("kv_channels") && base.kv_channels * base.num_attention_heads == base.hidden_size) m.kv_channels = 0;
  if (!b.is_explicit("num_query_groups") && base.num_query_groups == base.num_attention_heads) m.num_query_groups = 0;
  if (!b.is_explicit("ffn_hidden_size")) {
    model_spec rule = base;
    rule.ffn_hidden_size = 0;
    rule.kv_channels = 0;
    rule.num_query_groups = 0;
    finalize_model(rule);
    if (rule.ffn_hidden_size == base.ffn_hidden_size) m.ffn_hidden_size = 0;
  }
  if (b.is_explicit("hybrid_pattern") && !b.is_explicit("num_layers")) m.num_layers = 0;  // the pattern's length
  if (!b.is_explicit("mamba.num_heads") && base.is_hybrid() &&
      base.mamba.num_heads * base.mamba.head_dim == 2 * base.hidden_size) {
    m.mamba.num_heads = 0;  // TransformerConfig's rule: 2h / head dim
  }
  if (!b.is_explicit("max_position_embeddings") && base.max_position_embeddings == base.seq_length &&
      m.position_embedding != position_embedding_kind::learned) {
    m.max_position_embeddings = 0;
  }
}

/// --multi-latent-attention turns MLA on with Megatron's kv_lora_rank default (32); MLA's sizes without
/// it are refused, as Megatron would silently ignore them.
void apply_mla_switch(job_builder& b, const model_spec& base) {
  model_spec& m = b.job.model;
  const bool sizes = b.is_explicit("mla.q_lora_rank") || b.is_explicit("mla.kv_lora_rank") ||
                     b.is_explicit("mla.qk_head_dim") || b.is_explicit("mla.qk_pos_emb_head_dim") ||
                     b.is_explicit("mla.v_head_dim");
  const bool base_mla = b.model_chosen && base.is_mla();
  if (sizes && !b.mla_requested && !base_mla) {
    throw input_error("--q-lora-rank, --kv-lora-rank, --qk-head-dim, --qk-pos-emb-head-dim and --v-head-dim need "
                      "--multi-latent-attention (or an MLA --model)");
  }
  if (b.mla_requested && m.mla.kv_lora_rank == 0) m.mla.kv_lora_rank = 32;  // megatron/training/arguments.py
}

/// --hybrid-layer-pattern's '|' segments are the job's pipeline layout (§2.2.1); Megatron's validate_args
/// refuses the flags that would place layers beside them, and interleaving a hybrid pattern without them
/// (hybrid_layer_allocation.py select_pipeline_segment: "add '|' separators").
/// A model-only parse (search, plan) keeps the segments for its caller to judge.
void apply_hybrid_segments(job_builder& b, model_need need) {
  parallel_config& p = b.job.parallel;
  if (!b.job.model.is_hybrid()) return;
  const bool segments = !b.hybrid_segments.empty();
  // Refused with any hybrid pattern (validate_args), the first and last stage's layers with segments.
  const char* with = !p.layout_stages.empty()                  ? "--pipeline-model-parallel-layout"
                     : p.account_embedding_in_split             ? "--account-for-embedding-in-pipeline-split"
                     : p.account_loss_in_split                  ? "--account-for-loss-in-pipeline-split"
                     : p.num_layers_per_virtual_stage > 0       ? "--num-layers-per-virtual-pipeline-stage"
                     : segments && p.first_stage_layers >= 0    ? "--decoder-first-pipeline-num-layers"
                     : segments && p.last_stage_layers >= 0     ? "--decoder-last-pipeline-num-layers"
                                                                : nullptr;
  if (with != nullptr) {
    throw input_error(fmt::format("{} with --hybrid-layer-pattern: {} (Megatron's check in validate_args)", with,
                                  segments ? "its | segments place every layer"
                                           : "the pattern's | segments place the layers; end each stage's with |"));
  }
  if (!segments) {
    if (p.vpp > 1) {
      throw input_error("--virtual-pipeline-model-parallel-size with --hybrid-layer-pattern needs the pattern's pipeline "
                        "segments: end each with | (Megatron-Core derives the model chunks from them)");
    }
    return;
  }
  if (p.pp == 1 && need != model_need::model_only) {
    throw input_error(fmt::format("--hybrid-layer-pattern's {} pipeline segments need --pipeline-model-parallel-size > 1: "
                                  "a segment per pipeline stage, or several per rank (the interleaved schedule)",
                                  b.hybrid_segments.size()));
  }
  p.layout_stages = std::move(b.hybrid_segments);
}

/// The hardware flags on top of the chosen cluster (§6), then --calibration, which is checked against
/// the job's GPU (§6.4).
void apply_hardware_flags(job_builder& b) {
  cluster_spec& c = b.job.cluster;
  if (!b.gpu_name.empty()) {
    try {
      c.gpu = find_gpu(b.gpu_name);
    } catch (const input_error& e) {
      throw e.wrapped("--gpu: ", "");
    }
  }
  if (b.gpu_usable_gib) c.gpu.usable_memory_bytes = *b.gpu_usable_gib;
  if (b.gpu_peak_tflops) c.gpu.peak_bf16_flops = *b.gpu_peak_tflops * 1e12;
  if (b.gpu_bandwidth_gb_per_s) c.gpu.memory_bandwidth_bytes_per_s = *b.gpu_bandwidth_gb_per_s * 1e9;
  if (b.intra_gb_per_s) c.gpu.intra_node_bandwidth_bytes_per_s = *b.intra_gb_per_s * 1e9;
  if (b.nic_gbit_per_s) c.nic_bandwidth_bytes_per_s = *b.nic_gbit_per_s * 1e9 / 8;
  if (b.nics_per_node != 0) c.nics_per_node = b.nics_per_node;
  if (b.intra_latency_us) c.intra_node_latency_s = *b.intra_latency_us * 1e-6;
  if (b.inter_latency_us) c.inter_node_latency_s = *b.inter_latency_us * 1e-6;
  if (b.context_mib) c.gpu.cuda_context_bytes = *b.context_mib;
  // The cluster's own rules, named by the flags that broke them (validate_cluster names fields).
  constexpr double kGiB = 1073741824.0;
  if (b.gpu_usable_gib && c.gpu.usable_memory_bytes > c.gpu.memory_bytes) {
    // --gpu-memory-gib only lowers memory: a GPU that exists with more is its own catalog entry (issue 27). Those
    // of that size are named by their HBM, as one names the card (a "96 GB" H100 has 95.1 GiB usable).
    std::string bigger;
    for (const gpu_spec& g : gpu_catalog()) {
      if (g.vendor != c.gpu.vendor || g.memory_bytes < c.gpu.usable_memory_bytes) continue;
      bigger += fmt::format("{}{} ({:.1f} GiB usable)", bigger.empty() ? "" : ", ", g.name,
                            static_cast<double>(g.usable_memory_bytes) / kGiB);
    }
    throw input_error(fmt::format("--gpu-memory-gib {:g} is more than the {:g} GiB of the GPU ({}): it can only lower "
                                  "memory; give a bigger GPU with --gpu NAME{}, or a cluster file with gpu.memory_bytes",
                                  static_cast<double>(c.gpu.usable_memory_bytes) / kGiB,
                                  static_cast<double>(c.gpu.memory_bytes) / kGiB, c.gpu.name,
                                  bigger.empty() ? "" : " (the catalog's " + c.gpu.vendor + " GPUs of that size: " + bigger + ")"));
  }
  if (b.context_mib && c.gpu.cuda_context_bytes >= c.gpu.usable_memory_bytes) {
    throw input_error(fmt::format("--cuda-context-mib {:g} must be less than the GPU's usable memory ({:g} MiB)",
                                  static_cast<double>(c.gpu.cuda_context_bytes) / 1048576.0,
                                  static_cast<double>(c.gpu.usable_memory_bytes) / 1048576.0));
  }
  if (!b.calibration_path.empty()) {  // after every override: it is checked against the job's GPU (§6.4)
    apply_calibration(c, load_calibration(b.calibration_path), b.calibration_path);
  }
  if (b.gpus_per_node != 0) {
    if (b.gpus_per_node < 1) throw input_error("--gpus-per-node must be a positive integer, got " + std::to_string(b.gpus_per_node));
    c.gpus_per_node = b.gpus_per_node;
  }
  if (b.num_nodes < 0) throw input_error("--num-nodes must be a positive integer, got " + std::to_string(b.num_nodes));
  if (b.num_gpus < 0) throw input_error("--num-gpus must be a positive integer, got " + std::to_string(b.num_gpus));

}

/// World size (§2.1): --num-gpus, else --num-nodes × GPUs per node, else TP·PP·CP·DP when --dp is
/// given, else the whole cluster; VPP chunks from --virtual-pipeline-model-parallel-size.
void derive_world_size(job_builder& b) {
  job_spec& job = b.job;
  const cluster_spec& c = job.cluster;
  if (b.num_gpus > 0) {
    job.num_gpus = b.num_gpus;
    if (b.num_nodes > 0 && b.num_gpus > b.num_nodes * c.gpus_per_node) {
      throw input_error("--num-gpus " + std::to_string(b.num_gpus) + " exceeds --num-nodes × --gpus-per-node = " +
                        std::to_string(b.num_nodes * c.gpus_per_node));
    }
  } else if (b.num_nodes > 0) {
    job.num_gpus = b.num_nodes * c.gpus_per_node;
  } else if (b.dp_given) {
    job.num_gpus = 0;  // finalize_job derives it from TP·PP·CP·DP
  } else {
    job.num_gpus = c.num_nodes * c.gpus_per_node;
  }
  if (b.dp_given && job.num_gpus > 0) {
    const std::int64_t mp = job.parallel.tp * job.parallel.pp * job.parallel.cp;
    if (job.parallel.dp * mp != job.num_gpus) {
      throw input_error("${parallel.dp} " + std::to_string(job.parallel.dp) + " × TP×PP×CP " + std::to_string(mp) +
                        " does not make the world size " + std::to_string(job.num_gpus) +
                        " (--num-gpus or --num-nodes × --gpus-per-node)");
    }
  }
}

}  // namespace

const std::vector<flag_info>& job_flags() {
  static const std::vector<flag_info> infos = [] {
    std::vector<flag_info> v;
    for (const auto& d : flag_table()) v.push_back(d.info);
    return v;
  }();
  return infos;
}

std::string job_flags_help() {
  std::string out;
  for (const char* group : {"model", "parallel", "training", "hardware"}) {
    out += std::string("\n") + group + ":\n";
    for (const auto& f : job_flags()) {
      if (f.group != group) continue;
      std::string left = "  " + f.name;
      for (const auto& a : f.aliases) left += ", " + a;
      if (!f.value_name.empty()) left += " " + f.value_name;
      if (left.size() < 44) left.resize(44, ' ');
      else left += "\n" + std::string(44, ' ');
      out += left + f.help + " [default: " + f.default_value + "]\n";
    }
  }
  out += "\n  --preset NAME                              a named job:";
  for (const auto& p : presets()) out += " " + p.name;
  out += "\n  -- LAUNCH LINE                             torchrun/deepspeed ... pretrain_gpt.py <Megatron flags>\n";
  out += "\n" + limits_help();
  return out;
}

namespace {

/// Names wrapped into lines of at most 100 characters, each line indented by `indent`.
std::string wrapped(const std::vector<std::string>& names, std::string_view indent) {
  std::string out, line(indent);
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::string item = names[i] + (i + 1 < names.size() ? "," : "");
    if (line.size() > indent.size() && line.size() + 1 + item.size() > 100) {
      out += line + "\n";
      line = std::string(indent);
    }
    if (line.size() > indent.size()) line += " ";
    line += item;
  }
  return out + line + "\n";
}

}  // namespace

const flag_classes& megatron_flag_classes() {
  static const flag_classes classes = [] {
    flag_classes c;
    c.ignored.assign(std::begin(kIgnoredFlags), std::end(kIgnoredFlags));
    std::sort(c.ignored.begin(), c.ignored.end());
    for (const conditional_flag& f : kConditionalFlags) {
      c.ignored_at_value.push_back({f.flag, f.harmless_value, f.would_change});
    }
    c.tp_comm_tuning.assign(std::begin(kTpCommTuningFlags), std::end(kTpCommTuningFlags));
    // Refused flags by what they would change, mechanisms in the order their first flag sorts.
    std::vector<std::string> refused(std::begin(kUnmodelledFlags), std::end(kUnmodelledFlags));
    std::sort(refused.begin(), refused.end());
    for (const std::string& flag : refused) {
      const std::string effect(refused_flag_effect(flag));
      TRAINPLAN_CHECK_MSG(!effect.empty(), "a refused flag without a row in refused_effects.cc");
      auto it = std::find_if(c.refused.begin(), c.refused.end(),
                             [&](const flag_classes::refused_group& g) { return g.would_change == effect; });
      if (it == c.refused.end()) it = c.refused.insert(c.refused.end(), {effect, {}});
      it->flags.push_back(flag);
    }
    return c;
  }();
  return classes;
}

std::string classified_flags_help() {
  const flag_classes& c = megatron_flag_classes();
  std::string out = "\nMegatron-LM, Megatron-DeepSpeed and BLOOM flags read and ignored (they change no estimate; "
                    "`time` and `memory` list them; NAME-* stands for every flag that starts so):\n";
  out += wrapped(c.ignored, "  ");
  out += "\nRead and ignored at one value, refused at any other:\n";
  for (const auto& f : c.ignored_at_value) {
    out += fmt::format("  {} {} (another value would change {})\n", f.flag, f.harmless_value, f.would_change);
  }
  out += "  Transformer Engine's userbuffer tuning, ignored without --tp-comm-overlap and refused with it:\n";
  out += wrapped(c.tp_comm_tuning, "    ");
  out += "\nRefused, each naming what it would change (not modelled; remove it to get the estimate without it):\n";
  for (const auto& g : c.refused) out += "  " + g.would_change + ":\n" + wrapped(g.flags, "    ");
  return out;
}

const std::vector<preset>& presets() {
  static const std::vector<preset> list = {
      {"bloom-176b-production",
       "BLOOM-176B as trained: 48 nodes of 8 × A100-80GB (Jean Zay), TP 4, PP 12, DP 8, MBS 2, GBS 2048, bf16, "
       "ZeRO-1, full recomputation, each embedding in its own pipeline slot (seeds/004)",
       {"--model", "bloom-176b", "--cluster", "jean-zay-a100", "--num-nodes", "48", "--tp", "4", "--pp", "12",
        "--mbs", "2", "--gbs", "2048", "--bf16", "--framework", "deepspeed", "--zero-stage", "1",
        "--recompute-granularity", "full", "--embedding-as-stage"}},
  };
  return list;
}

namespace {

/// Apply one flag; an error whose message does not name the flag (an unknown model or cluster name, a
/// file that cannot be read) gets it, so that every message says which argument it is about: in front,
/// or after a file error's "file:line: " message, which stays first.
void apply_flag(const pending& p, job_builder& b) {
  // A framework config's key is named with its file:line.
  const std::string named = p.where.empty() ? p.flag : fmt::format("{} ({})", p.flag, p.where);
  try {
    b.source = p.source;
    p.def->apply(b, p.value, named);
  } catch (const input_error& e) {
    const std::string what = e.what();
    auto names = [&what](const std::string& spelling) {
      for (std::size_t at = what.find(spelling); at != std::string::npos; at = what.find(spelling, at + 1)) {
        const std::size_t end = at + spelling.size();
        if (end == what.size() || !(std::isalnum(static_cast<unsigned char>(what[end])) || what[end] == '-')) return true;
      }
      return false;
    };
    if (!e.fields().empty() || names(p.flag) || names(p.def->info.name) ||
        std::any_of(p.def->info.aliases.begin(), p.def->info.aliases.end(), names)) {
      throw;
    }
    if (!p.value.empty() && what.starts_with(p.value + ":")) throw e.wrapped("", " (" + named + ")");
    throw e.wrapped(named + ": ", "");
  }
}

}  // namespace

namespace {

/// A flag given twice with different values: the later one counts (a preset's, then the launch line's,
/// then the user's flags before `--`, each in order). "--tp 4 (preset) → 8 (your flags)", as each was typed, for the reports.
std::vector<std::string> overridden_flags(const std::vector<pending>& flags) {
  static constexpr const char* kSource[] = {"preset", "your flags", "launch line", "DeepSpeed config",
                                            "torchtitan config", "launch line", "NeMo config", "launch line"};
  // The precisions are one setting given by three switches; DeepSpeed-Ulysses's degree is the CP size.
  auto setting_of = [](const flag_def* d) {
    const std::string& n = d->info.name;
    return n == "--fp16" || n == "--fp32"         ? find_flag("--bf16")
           : n == "--ds-sequence-parallel-size" ? find_flag("--context-parallel-size")
                                                : d;
  };
  std::vector<std::string> out;
  std::map<const flag_def*, const pending*> last;
  for (const pending& p : flags) {
    const pending*& before = last[setting_of(p.def)];
    if (before != nullptr && (before->value != p.value || before->def != p.def)) {
      auto said = [](const std::string& flag, const std::string& value) {
        return flag.empty() ? value : value.empty() ? flag : flag + " " + value;
      };
      out.push_back(fmt::format("{} ({}) → {} ({})", said(before->flag, before->value), kSource[before->source],
                                said(p.flag == before->flag ? "" : p.flag, p.value), kSource[p.source]));
    }
    before = &p;
  }
  return out;
}

/// flag_of_field, remembered per field: the flag a message names for a field when the one given is that
/// flag (a field several flags set is named by the flag the user gave).
const std::string& canonical_flag_of_field(const std::string& field) {
  thread_local std::unordered_map<std::string, std::string> known;
  auto it = known.find(field);
  if (it == known.end()) it = known.emplace(field, flag_of_field(field)).first;
  return it->second;
}


/// parse_job_args with the core's messages as it throws them (fields as ${paths}).
/// `config_keys`: each job field a config file's key set last (DeepSpeed's, torchtitan's), named by that
/// key, so that a rule it breaks names the key rather than the flag it became.
parsed_job parse_job_fields(const std::vector<std::string>& args, model_need need,
                            std::map<std::string, std::string, std::less<>>& config_keys) {
  job_builder b;
  b.job.cluster = find_cluster("dgx-h100");
  std::vector<std::string> own(args.begin(), std::find(args.begin(), args.end(), std::string("--")));
  std::vector<pending> flags;
  std::vector<std::string> displaced;  // the launcher's world size the user's replaced
  parsed_job out;
  read_flags(own, false, flags, b);
  if (own.size() < args.size()) {
    const std::vector<std::string> launch(args.begin() + static_cast<std::ptrdiff_t>(own.size()) + 1, args.end());
    if (launch.empty()) throw input_error("nothing after '--': give a launch line such as torchrun ... pretrain_gpt.py <flags>");
    const launch_world world = read_launcher(launch);
    launch_world_flags(world, flags, b);
    read_flags(world.script_args, true, flags, b);
    out.from_launch_line = true;
    b.launch_script = world.script;
    b.torchtitan = b.torchtitan || world.module == "torchtitan.train";
    // The user's world size replaces the launcher's whole: their --num-gpus the line's node count, their
    // --num-nodes the line's process count (the same flag on both sides is an override like any other).
    const flag_def* gpus_def = find_flag("--num-gpus");
    const flag_def* nodes_def = find_flag("--num-nodes");
    auto user_gives = [&](const flag_def* d) {
      return std::any_of(flags.begin(), flags.end(), [&](const pending& p) { return p.source == 1 && p.def == d; });
    };
    const bool user_gpus = user_gives(gpus_def), user_nodes = user_gives(nodes_def);
    auto displaced_by_user = [&](const pending& p) {
      return p.source == 2 && ((p.def == nodes_def && user_gpus && !user_nodes) || (p.def == gpus_def && user_nodes && !user_gpus));
    };
    for (const pending& p : flags) {
      if (displaced_by_user(p)) {
        displaced.push_back(fmt::format("{} {} (launch line) → {} (your flags)", p.flag, p.value,
                                        user_gpus ? "--num-gpus" : "--num-nodes"));
      }
    }
    std::erase_if(flags, displaced_by_user);
    if (!world.unknown.empty() && !user_gpus && !user_nodes) {
      throw input_error("launch line: the world size is not known: " + world.unknown +
                        "; give --num-nodes N (and --gpus-per-node N) before '--'");
    }
  }
  torchtitan_flags(b, flags, out);
  nemo_flags(b, flags, out);
  bridge_flags(b, flags, out);
  out.preset = b.preset;
  // The order flags apply in, each later one overriding: a preset's, the launch line's, its DeepSpeed or
  // torchtitan config's, torchtitan's overrides on the line, then the user's own before `--` (a what-if on
  // the line); model and cluster choices first.
  auto rank_of = [](const pending& p) {
    static constexpr std::array<int, 8> kRank = {0, 4, 1, 2, 2, 3, 2, 3};  // by pending::source
    return kRank[static_cast<std::size_t>(p.source)];
  };
  std::stable_sort(flags.begin(), flags.end(), [&](const pending& x, const pending& y) {
    return std::pair(x.def->priority, rank_of(x)) < std::pair(y.def->priority, rank_of(y));
  });
  {
    std::vector<std::string> overridden = overridden_flags(flags);
    overridden.insert(overridden.end(), out.overridden_flags.begin(), out.overridden_flags.end());
    out.overridden_flags = std::move(overridden);
  }
  out.overridden_flags.insert(out.overridden_flags.end(), displaced.begin(), displaced.end());
  for (const pending& p : flags) {
    for (std::string_view fields = p.def->info.fields; !fields.empty();) {
      const std::size_t end = std::min(fields.find(' '), fields.size());
      const std::string field(fields.substr(0, end));
      if (p.source >= 3) {
        config_keys[field] = p.where.empty() ? p.flag : fmt::format("{} ({})", p.flag, p.where);
      } else if (const std::string& canonical = canonical_flag_of_field(field); canonical != p.def->info.name) {
        config_keys[field] = std::string(p.def->info.name);  // a field several flags set: the one given
      } else {
        config_keys.erase(field);
      }
      fields.remove_prefix(std::min(end + 1, fields.size()));
    }
  }
  model_spec base;
  bool base_taken = false;
  for (const auto& p : flags) {
    if (p.def->priority > 0 && !base_taken) {
      base = b.job.model;
      base_taken = true;
    }
    apply_flag(p, b);
  }
  rederive_overridden_model(b, base);
  apply_mla_switch(b, base);
  // megatron/training/arguments.py sizes the MLP at int(8h/3/64)·64 for --swiglu alone; --quick-geglu
  // keeps 4h.
  if (b.quick_geglu && b.job.model.ffn_hidden_size == 0) b.job.model.ffn_hidden_size = 4 * b.job.model.hidden_size;
  // Megatron's YaRN (argument_utils.py _apply_yarn_config_from_args: yarn_mscale 1 and yarn_mscale_all_dim 0
  // unless given): its concentration factor decides the RoPE kernel (§5.3).
  if (b.yarn) {
    b.job.model.rope_yarn_factor = yarn_factor_for_kernel(b.yarn_factor, b.yarn_mscale.value_or(1.0),
                                                          b.yarn_mscale_all_dim.value_or(0.0));
  }
  // Megatron-Core's router carries a bias when the linear layers do (transformer/moe/router.py, TopKRouter:
  // add_bias_linear), as gpt-oss's does: for a model given by Megatron's flags.
  if (b.model_fields && !b.model_chosen && b.job.model.is_moe()) b.job.model.moe.router_bias = b.job.model.add_bias_linear;
  derive_vocabulary(b, out.derived_flags);
  // Megatron-DeepSpeed (microsoft/Megatron-DeepSpeed megatron/arguments.py): --no-pipeline-parallel runs
  // the DeepSpeed engine without its pipeline, the same job at PP 1; --num-experts defaults to [1], a dense
  // model; DeepSpeed-MoE (experts every --expert-interval layers, --topk gating, capacity) is not modelled.
  if (b.no_pipeline_engine && b.job.parallel.pp > 1) {
    throw input_error("--no-pipeline-parallel with --pipeline-model-parallel-size " + std::to_string(b.job.parallel.pp) +
                      ": Megatron-DeepSpeed's pipeline without the DeepSpeed engine is not modelled (at PP 1 it changes nothing)");
  }
  if (b.job.training.framework == framework_kind::deepspeed && b.model_fields && !b.model_chosen) {
    if (b.job.model.moe.num_experts == 1) b.job.model.moe.num_experts = 0;
    if (b.job.model.moe.num_experts > 1) {
      throw input_error("--num-experts " + std::to_string(b.job.model.moe.num_experts) +
                        " with --deepspeed: Megatron-DeepSpeed's DeepSpeed-MoE (experts every --expert-interval layers, "
                        "--topk gating, capacity factors) is not modelled; Megatron-Core's MoE is (--framework megatron)");
    }
  }
  // transformer_config.py __post_init__: padding to the capacity needs a capacity, and DeepEP does not pad.
  if (b.moe_pad_to_capacity) {
    if (b.job.model.moe.capacity_factor <= 0) {
      throw input_error("--moe-pad-expert-input-to-capacity without --moe-expert-capacity-factor: Megatron-Core refuses "
                        "it (\"moe_expert_capacity_factor must be set to use moe_pad_expert_input_to_capacity\")");
    }
    if (b.job.parallel.moe_dispatcher == moe_dispatcher_kind::flex) {
      throw input_error("--moe-pad-expert-input-to-capacity with --moe-enable-deepep: Megatron-Core refuses it (the "
                        "DeepEP dispatcher does not pad)");
    }
  }
  // --recompute-num-layers 0 (megatron/core/recompute.py): block checkpoints no layer, the same job as no
  // recomputation; uniform never advances its loop.
  // transformer_config.py: --moe-layer-recompute is selective with "moe" added to the modules (an error
  // with full); the modules count under selective only, and an empty list recomputes nothing.
  training_config& tr = b.job.training;
  if (b.moe_layer_recompute) {
    if (tr.recompute == recompute_granularity::full) {
      throw input_error("--moe-layer-recompute with --recompute-granularity full: Megatron-Core refuses it (\"Do not "
                        "set --moe-layer-recompute with full recompute granularity\")");
    }
    tr.recompute = recompute_granularity::selective;
    if (!b.recompute_modules_given) tr.recompute_modules = static_cast<std::uint8_t>(recompute_module::core_attn);
    tr.recompute_modules |= static_cast<std::uint8_t>(recompute_module::moe);
  } else if (b.recompute_modules_given && tr.recompute != recompute_granularity::selective) {
    b.ignored.push_back("--recompute-modules (Megatron-Core reads it under --recompute-granularity selective only)");
  } else if (b.recompute_modules_empty && tr.recompute == recompute_granularity::selective) {
    tr.recompute = recompute_granularity::none;
    out.derived_flags.push_back("--recompute-granularity none (selective with an empty --recompute-modules "
                                "recomputes nothing)");
  }
  if (b.recompute_zero_layers && b.job.training.recompute == recompute_granularity::full) {
    if (b.job.training.recompute_method_ == recompute_method::uniform) {
      throw input_error("--recompute-num-layers 0 with --recompute-method uniform: Megatron-Core's uniform loop never "
                        "advances (megatron/core/recompute.py); give 1 or more, or --recompute-method block for none");
    }
    b.job.training.recompute = recompute_granularity::none;
    b.job.training.recompute_num_layers = 0;
    out.derived_flags.push_back("--recompute-granularity none (--recompute-method block --recompute-num-layers 0 "
                                "checkpoints no layer)");
  }
  if (!b.tp_comm_tuning.empty()) {
    if (b.job.training.tp_comm_overlap) {
      throw input_error(b.tp_comm_tuning.front() + " tunes --tp-comm-overlap's userbuffers (which GEMMs overlap their "
                        "all-gathers and reduce-scatters, and how), which trainplan does not model at that grain; "
                        "without --tp-comm-overlap it changes nothing");
    }
    b.ignored.insert(b.ignored.end(), b.tp_comm_tuning.begin(), b.tp_comm_tuning.end());
  }
  apply_attention_env(b, out.derived_flags);
  if (b.force_local_attention && b.job.parallel.cp == 1) b.job.training.attention = training_config::attention_backend::unfused;
  out.seq_length_given = b.is_explicit("seq_length");

  if (!b.model_chosen && !b.model_fields) {
    throw input_error("no model: give --model NAME|FILE (`trainplan models` lists the catalog) or Megatron's "
                      "--num-layers, --hidden-size, --num-attention-heads, --seq-length and --vocab-size");
  }
  finalize_model(b.job.model);
  apply_layer_checkpointing(b, out.derived_flags);

  apply_hardware_flags(b);
  apply_hybrid_segments(b, need);

  job_spec& job = b.job;
  if (need == model_need::model_only) {
    if (std::string v = model_view_violation(job); !v.empty()) throw input_error(v);
    out.job = std::move(job);
    out.ignored_flags = std::move(b.ignored);
    return out;
  }

  // Megatron derives expert TP for every model (arguments.py validate_args) and builds its groups, but a
  // dense model has no expert layer for it to split: a given size changes nothing.
  if (!job.model.is_moe() && job.parallel.etp > 0 && job.parallel.etp != job.parallel.tp) {
    b.ignored.push_back(fmt::format("--expert-tensor-parallel-size {} (a dense model: no expert layers)", job.parallel.etp));
    job.parallel.etp = 0;
  }
  derive_world_size(b);
  finalize_job(job);
  // Megatron-Core reads the loss's implementation only for its fused loss (language_module.py
  // compute_language_model_loss), and the Transformer Engine version only matters with TE's.
  using ce_impl = training_config::cross_entropy_impl;
  if (job.training.cross_entropy_fusion_impl == ce_impl::te && !job.training.cross_entropy_fusion) {
    b.ignored.push_back("--cross-entropy-fusion-impl te (read with --cross-entropy-loss-fusion alone)");
    job.training.cross_entropy_fusion_impl = ce_impl::native;
  }
  if (job.training.te_cross_entropy_fp32_gradient && job.training.cross_entropy_fusion_impl != ce_impl::te) {
    b.ignored.push_back("--te-cross-entropy-fp32-gradient (read with --cross-entropy-fusion-impl te alone)");
    job.training.te_cross_entropy_fp32_gradient = false;
  }
  // Megatron-Core reads the micro-batch group only in the interleaved schedule (schedules.py,
  // forward_backward_pipelining_with_interleaving; get_pp_rank_microbatches): without VPP it changes nothing.
  if (job.parallel.vpp <= 1 && job.parallel.microbatch_group_size > 0) {
    b.ignored.push_back(fmt::format("--microbatch-group-size-per-virtual-pipeline-stage {} (no interleaving: "
                                    "only the interleaved schedule groups micro-batches)",
                                    job.parallel.microbatch_group_size));
    job.parallel.microbatch_group_size = 0;
  }
  out.job = std::move(job);
  out.ignored_flags = std::move(b.ignored);
  return out;
}

}  // namespace

parsed_job parse_job_args(const std::vector<std::string>& args, model_need need) {
  std::map<std::string, std::string, std::less<>> config_keys;
  try {
    return parse_job_fields(args, need, config_keys);
  } catch (const input_error& e) {
    // The core names fields; the command line names its flags, or the config key that set the field.
    // The rendered message is literal text now: a "${" left in it is the user's (an interpolation).
    throw input_error(literal_text(e.message([&](std::string_view field) {
      const auto it = config_keys.find(field);
      return it != config_keys.end() ? it->second : flag_of_field(field);
    })));
  }
}

namespace {

/// Whether `field` is one of the space-separated fields of a row.
bool sets_field(std::string_view fields, std::string_view field) {
  while (!fields.empty()) {
    const std::size_t end = std::min(fields.find(' '), fields.size());
    if (fields.substr(0, end) == field) return true;
    fields.remove_prefix(std::min(end + 1, fields.size()));
  }
  return false;
}

/// The commands' own flag rows, built once (their handlers write to dummies; only names and fields are read).
struct command_tables {
  std::vector<detail::local_flag> search = detail::search_flag_rows();
  std::vector<detail::local_flag> plan = detail::plan_flag_rows();
  std::vector<detail::local_flag> shapes = detail::shapes_flag_rows();
  std::vector<detail::local_flag> logs = detail::logs_flag_rows();
};
const command_tables& command_rows() {
  static const command_tables tables;
  return tables;
}

}  // namespace

std::string flag_of_field(std::string_view field) {
  // The one field ↔ flag table: each flag row names the fields it sets (args_table.cc and the commands'
  // own tables); a command's own flag is looked up where the field is the command's.
  for (const args_detail::flag_def& d : args_detail::flag_table()) {
    if (sets_field(d.info.fields, field)) return d.info.name;
  }
  for (const auto* rows : {&command_rows().search, &command_rows().plan, &command_rows().shapes, &command_rows().logs}) {
    for (const detail::local_flag& f : *rows) {
      if (sets_field(f.fields, field)) return f.name;
    }
  }
  // A model field no flag sets (Mamba's convolution width, DeepSeek's first dense layers) comes from a
  // model file or the catalog: named as the file names it.
  if (field.starts_with("model.")) return "model field '" + std::string(field.substr(6)) + "'";
  return std::string(field);  // a field without a flag keeps its path (framework_test holds there are none)
}

std::string cli_message(const input_error& e) { return e.message(flag_of_field); }

run_context context_of(const parsed_job& pj) {
  run_context c;
  c.job = pj.job;
  c.has_job = true;
  c.ignored_flags = pj.ignored_flags;
  c.overridden_flags = pj.overridden_flags;
  c.derived_flags = pj.derived_flags;
  c.preset = pj.preset;
  c.from_launch_line = pj.from_launch_line;
  c.seq_length_given = pj.seq_length_given;
  return c;
}

}  // namespace trainplan
