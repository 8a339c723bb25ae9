// torchtitan configs (src/cli/torchtitan_config.h). The keys and defaults are torchtitan's last TOML
// release (torchtitan/config/job_config.py at 4a950ea, February 2026, before #2386 moved configs to
// Python), with the spellings of its earlier schemas (torchtitan/config_manager.py, December 2024:
// training.batch_size, the experimental.* pipeline and context keys, [float8]) read as the same keys.
// Sources per setting: torchtitan/models/llama3/infra/parallelize.py (TP with SequenceParallel norms
// and a vocab-parallel loss, FSDP's reshard_after_forward, the op-SAC save list),
// torchtitan/distributed/activation_checkpoint.py (full, layer and op SAC), torchao float8 (tensorwise
// by default, recipe_name), torchtitan/models/llama3/__init__.py and llama2 (the flavours).
#include "torchtitan_config.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <filesystem>
#include <map>
#include <string_view>

#include <fmt/format.h>
#include <toml++/toml.h>

#include "trainplan/core/base/error.h"
#include "trainplan/core/base/input_file.h"
#include "trainplan/core/base/input_text.h"
#include "trainplan/core/base/limits.h"
#include "trainplan/core/model/model.h"

namespace trainplan::args_detail {

namespace {

/// What a key does.
enum class tt_role {
  section,          ///< a table whose keys have rows of their own
  section_ignored,  ///< a table that changes no estimate, whatever it holds (logging, checkpoints, timeouts)
  setting,          ///< read by resolve() below
  ignored,          ///< changes no estimate
  refused_if_on,    ///< a feature trainplan does not model, when on (true, non-empty)
};

struct tt_key {
  std::string_view path;  ///< dotted, torchtitan's current spelling
  tt_role role;
  std::string_view what;  ///< refused_if_on: what it would change
};

constexpr std::array kKeys = {
    tt_key{"job", tt_role::section_ignored, ""},
    tt_key{"profiling", tt_role::section_ignored, ""},
    tt_key{"metrics", tt_role::section_ignored, ""},
    tt_key{"lr_scheduler", tt_role::section_ignored, ""},
    tt_key{"checkpoint", tt_role::section_ignored, ""},
    tt_key{"comm", tt_role::section_ignored, ""},
    tt_key{"memory_estimation", tt_role::section_ignored, ""},
    tt_key{"validation", tt_role::section_ignored, ""},
    // model: the flavour decides the model; converters turn float8 on.
    tt_key{"model", tt_role::section, ""},
    tt_key{"model.name", tt_role::setting, ""},
    tt_key{"model.flavor", tt_role::setting, ""},
    tt_key{"model.converters", tt_role::setting, ""},
    tt_key{"model.norm_type", tt_role::setting, ""},
    tt_key{"model.hf_assets_path", tt_role::ignored, ""},
    tt_key{"model.tokenizer_path", tt_role::ignored, ""},
    tt_key{"model.print_after_conversion", tt_role::ignored, ""},
    // optimizer
    tt_key{"optimizer", tt_role::section, ""},
    tt_key{"optimizer.name", tt_role::setting, ""},
    tt_key{"optimizer.lr", tt_role::ignored, ""},
    tt_key{"optimizer.eps", tt_role::ignored, ""},
    tt_key{"optimizer.beta1", tt_role::ignored, ""},
    tt_key{"optimizer.beta2", tt_role::ignored, ""},
    tt_key{"optimizer.weight_decay", tt_role::ignored, ""},
    tt_key{"optimizer.implementation", tt_role::ignored, ""},
    tt_key{"optimizer.fused", tt_role::ignored, ""},
    tt_key{"optimizer.early_step_in_backward", tt_role::refused_if_on,
           "when gradients are freed (the optimizer steps during backward)"},
    // training
    tt_key{"training", tt_role::section, ""},
    tt_key{"training.dataloader", tt_role::section_ignored, ""},
    tt_key{"training.local_batch_size", tt_role::setting, ""},
    tt_key{"training.global_batch_size", tt_role::setting, ""},
    tt_key{"training.seq_len", tt_role::setting, ""},
    tt_key{"training.mixed_precision_param", tt_role::setting, ""},
    tt_key{"training.mixed_precision_reduce", tt_role::setting, ""},
    tt_key{"training.dtype", tt_role::setting, ""},
    tt_key{"training.enable_loss_parallel", tt_role::setting, ""},
    tt_key{"training.enable_cpu_offload", tt_role::refused_if_on, "where parameters, gradients and optimizer state live (CPU)"},
    tt_key{"training.dataset", tt_role::ignored, ""},
    tt_key{"training.dataset_path", tt_role::ignored, ""},
    tt_key{"training.max_norm", tt_role::ignored, ""},
    tt_key{"training.steps", tt_role::ignored, ""},
    tt_key{"training.gc_freq", tt_role::ignored, ""},
    tt_key{"training.gc_debug", tt_role::ignored, ""},
    // parallelism
    tt_key{"parallelism", tt_role::section, ""},
    tt_key{"parallelism.data_parallel_replicate_degree", tt_role::setting, ""},
    tt_key{"parallelism.data_parallel_shard_degree", tt_role::setting, ""},
    tt_key{"parallelism.fsdp_reshard_after_forward", tt_role::setting, ""},
    tt_key{"parallelism.tensor_parallel_degree", tt_role::setting, ""},
    tt_key{"parallelism.disable_loss_parallel", tt_role::setting, ""},
    tt_key{"parallelism.enable_async_tensor_parallel", tt_role::setting, ""},
    tt_key{"parallelism.enable_compiled_autograd", tt_role::refused_if_on, "the backward's kernels (compiled autograd)"},
    tt_key{"parallelism.pipeline_parallel_degree", tt_role::setting, ""},
    tt_key{"parallelism.pipeline_parallel_microbatch_size", tt_role::setting, ""},
    // The pipeline's split and schedule: read at PP > 1 (reader::pipeline), listed as ignored at PP 1.
    tt_key{"parallelism.pipeline_parallel_split_points", tt_role::setting, ""},
    tt_key{"parallelism.module_fqns_per_model_part", tt_role::setting, ""},
    tt_key{"parallelism.pipeline_parallel_first_stage_less_layers", tt_role::setting, ""},
    tt_key{"parallelism.pipeline_parallel_last_stage_less_layers", tt_role::setting, ""},
    tt_key{"parallelism.pipeline_parallel_layers_per_stage", tt_role::setting, ""},
    tt_key{"parallelism.pipeline_parallel_schedule", tt_role::setting, ""},
    tt_key{"parallelism.pipeline_parallel_schedule_csv", tt_role::setting, ""},
    tt_key{"parallelism.pipeline_parallel_microbatches", tt_role::setting, ""},
    tt_key{"parallelism.pipeline_parallel_expert_parallel_overlap", tt_role::setting, ""},
    tt_key{"parallelism.context_parallel_degree", tt_role::setting, ""},
    tt_key{"parallelism.context_parallel_rotate_method", tt_role::setting, ""},
    tt_key{"parallelism.context_parallel_load_balancer", tt_role::setting, ""},
    tt_key{"parallelism.expert_parallel_degree", tt_role::setting, ""},
    tt_key{"parallelism.expert_tensor_parallel_degree", tt_role::setting, ""},
    tt_key{"parallelism.expert_parallel_comm_backend", tt_role::setting, ""},
    // activation checkpointing
    tt_key{"activation_checkpoint", tt_role::section, ""},
    tt_key{"activation_checkpoint.mode", tt_role::setting, ""},
    tt_key{"activation_checkpoint.selective_ac_option", tt_role::setting, ""},
    tt_key{"activation_checkpoint.per_op_sac_force_recompute_mm_shapes_by_fqns", tt_role::setting, ""},
    tt_key{"activation_checkpoint.early_stop", tt_role::refused_if_on, "how much of each checkpointed block is recomputed"},
    tt_key{"activation_checkpoint.memory_budget", tt_role::ignored, ""},  // read by mode "memory_budget" alone
    tt_key{"activation_checkpoint.visualize_memory_budget_pareto", tt_role::ignored, ""},
    tt_key{"activation_checkpoint.preserve_rng_state", tt_role::ignored, ""},
    tt_key{"activation_checkpoint.determinism_check", tt_role::ignored, ""},
    tt_key{"activation_checkpoint.debug", tt_role::ignored, ""},
    // torch.compile
    tt_key{"compile", tt_role::section, ""},
    tt_key{"compile.enable", tt_role::setting, ""},
    tt_key{"compile.components", tt_role::setting, ""},
    tt_key{"compile.backend", tt_role::ignored, ""},
    // float8 through torchao (model.converters; the December 2024 schema's [float8] switch)
    tt_key{"quantize", tt_role::section, ""},
    tt_key{"quantize.linear", tt_role::section, ""},
    tt_key{"quantize.linear.float8", tt_role::section, ""},
    tt_key{"quantize.linear.float8.enable_float8_linear", tt_role::setting, ""},
    tt_key{"quantize.linear.float8.enable_fsdp_float8_all_gather", tt_role::setting, ""},
    tt_key{"quantize.linear.float8.recipe_name", tt_role::setting, ""},
    tt_key{"quantize.linear.float8.scaling_type_input", tt_role::setting, ""},
    tt_key{"quantize.linear.float8.scaling_type_weight", tt_role::setting, ""},
    tt_key{"quantize.linear.float8.scaling_type_grad_output", tt_role::setting, ""},
    tt_key{"quantize.linear.float8.emulate", tt_role::refused_if_on, "the linear layers' kernels (float8 emulated in bf16)"},
    tt_key{"quantize.linear.float8.precompute_float8_dynamic_scale_for_fsdp", tt_role::setting, ""},
    // 2025 schemas until torchtitan 1fefaee (2025-07-28; torchao #2356 made it do nothing): read below.
    tt_key{"quantize.linear.float8.force_recompute_fp8_weight_in_bwd", tt_role::setting, ""},
    tt_key{"quantize.linear.float8.filter_fqns", tt_role::setting, ""},
    // 2025's float8 rowwise MoE prototype (torchtitan 5990fa3; float8.py converted the named MoE layers'
    // grouped GEMMs): its experts' kernels are not modelled.
    tt_key{"quantize.linear.float8.moe_fqns_prototype", tt_role::refused_if_on,
           "the routed experts' grouped GEMMs (torchao's float8 rowwise MoE prototype)"},
    tt_key{"quantize.linear.mx", tt_role::section_ignored, ""},   // read only through model.converters, refused
    tt_key{"quantize.grouped_mm", tt_role::section_ignored, ""},  // likewise
    tt_key{"mx", tt_role::section_ignored, ""},
    // debugging, experiments, fault tolerance
    tt_key{"debug", tt_role::section, ""},
    tt_key{"debug.seed", tt_role::ignored, ""},
    tt_key{"debug.deterministic", tt_role::refused_if_on, "the kernels' speed (deterministic algorithms)"},
    tt_key{"debug.deterministic_warn_only", tt_role::ignored, ""},
    tt_key{"debug.moe_force_load_balance", tt_role::ignored, ""},
    tt_key{"experimental", tt_role::section, ""},
    tt_key{"experimental.custom_import", tt_role::refused_if_on, "the model or the trainer (custom code)"},
    tt_key{"experimental.custom_args_module", tt_role::refused_if_on, "the job's settings (custom code)"},
    tt_key{"experimental.custom_model_path", tt_role::refused_if_on, "the model (custom code)"},
    tt_key{"fault_tolerance", tt_role::section, ""},
    tt_key{"fault_tolerance.enable", tt_role::refused_if_on, "the data-parallel layout (torchft replica groups)"},
    tt_key{"fault_tolerance.process_group", tt_role::ignored, ""},
    tt_key{"fault_tolerance.process_group_timeout_ms", tt_role::ignored, ""},
    tt_key{"fault_tolerance.replica_id", tt_role::ignored, ""},
    tt_key{"fault_tolerance.group_size", tt_role::ignored, ""},
    tt_key{"fault_tolerance.min_replica_size", tt_role::ignored, ""},
    tt_key{"fault_tolerance.semi_sync_method", tt_role::ignored, ""},
    tt_key{"fault_tolerance.sync_steps", tt_role::ignored, ""},
    tt_key{"fault_tolerance.should_quantize", tt_role::ignored, ""},
    tt_key{"fault_tolerance.fragment_sync_delay", tt_role::ignored, ""},
    tt_key{"fault_tolerance.fragment_update_alpha", tt_role::ignored, ""},
};

/// Earlier schemas' spellings of the same keys (config_manager.py, December 2024; job_config.py, 2025).
constexpr std::array<std::pair<std::string_view, std::string_view>, 17> kRenamed = {{
    {"training.batch_size", "training.local_batch_size"},
    {"training.data_parallel_replicate_degree", "parallelism.data_parallel_replicate_degree"},
    {"training.data_parallel_shard_degree", "parallelism.data_parallel_shard_degree"},
    {"training.tensor_parallel_degree", "parallelism.tensor_parallel_degree"},
    {"training.compile", "compile.enable"},
    {"training.seed", "debug.seed"},
    {"training.deterministic", "debug.deterministic"},
    {"training.warmup_steps", "lr_scheduler.warmup_steps"},
    {"experimental.enable_async_tensor_parallel", "parallelism.enable_async_tensor_parallel"},
    {"experimental.enable_compiled_autograd", "parallelism.enable_compiled_autograd"},
    {"experimental.pipeline_parallel_degree", "parallelism.pipeline_parallel_degree"},
    {"experimental.pipeline_parallel_split_points", "parallelism.pipeline_parallel_split_points"},
    {"experimental.pipeline_parallel_schedule", "parallelism.pipeline_parallel_schedule"},
    {"experimental.pipeline_parallel_schedule_csv", "parallelism.pipeline_parallel_schedule_csv"},
    {"experimental.pipeline_parallel_microbatches", "parallelism.pipeline_parallel_microbatches"},
    {"experimental.context_parallel_degree", "parallelism.context_parallel_degree"},
    {"experimental.context_parallel_rotate_method", "parallelism.context_parallel_rotate_method"},
}};

/// torchtitan's flavours of the catalog's models (torchtitan/models/llama3/__init__.py llama3_configs,
/// models/llama2 llama2_configs, models/qwen3/__init__.py qwen3_args at 4a950ea: the same layers, widths,
/// heads, FFN rounding, experts and tokenizer as the published checkpoints; tested equal in parameter
/// count). torchtitan's debug models are not in the catalog.
struct tt_model {
  std::string_view name, flavor, catalog;
  bool pipelines = true;  ///< its TrainSpec has a pipelining_fn (qwen3's is None at 4a950ea)
  /// Where the flavour differs from the catalog model: torchtitan's Llama 4 flavours without "_irope"
  /// (models/llama4/__init__.py llama4_args, model/args.py: every_n_layers_nope None, attn_mask_type
  /// "causal") attend causally over the whole sequence on every layer, Meta's checkpoints in chunks of
  /// 8,192 on three of four.
  bool full_attention = false;
};
constexpr std::array<tt_model, 15> kModels = {{
    {"llama3", "8B", "llama3-8b"},
    {"llama3", "70B", "llama3-70b"},
    {"llama3", "405B", "llama3.1-405b"},
    {"llama2", "7B", "llama2-7b"},
    {"llama2", "13B", "llama2-13b"},
    {"llama2", "70B", "llama2-70b"},
    {"qwen3", "0.6B", "qwen3-0.6b", false},
    {"qwen3", "1.7B", "qwen3-1.7b", false},
    {"qwen3", "4B", "qwen3-4b", false},
    {"qwen3", "8B", "qwen3-8b", false},
    {"qwen3", "32B", "qwen3-32b", false},
    {"qwen3", "30B-A3B", "qwen3-30b-a3b", false},
    {"qwen3", "235B-A22B", "qwen3-235b-a22b", false},
    {"llama4", "17bx16e", "llama4-scout", true, true},
    {"llama4", "17bx128e", "llama4-maverick", true, true},
}};

std::string canonical(std::string key) {
  if (key.starts_with("float8.")) key = "quantize.linear." + key;  // [float8] before [quantize.linear.float8]
  if (key == "float8") return "quantize.linear.float8";
  if (key == "memory_estimation.enabled" || key == "checkpoint.enable_checkpoint") return key;
  for (const auto& [before, now] : kRenamed)
    if (key == before) return std::string(now);
  return key;
}

const tt_key* find_key(std::string_view path) {
  for (const tt_key& k : kKeys)
    if (k.path == path) return &k;
  return nullptr;
}

/// The ignored table a key sits in ("checkpoint" for "checkpoint.interval"), or null.
const tt_key* ignored_section_of(std::string_view path) {
  for (std::size_t dot = path.find('.'); dot != std::string_view::npos; dot = path.find('.', dot + 1)) {
    if (const tt_key* k = find_key(path.substr(0, dot)); k != nullptr && k->role == tt_role::section_ignored) return k;
  }
  return nullptr;
}

/// A value as torchtitan would see it: TOML's own type, or the launch line's text.
struct tt_value {
  std::string text;          ///< integers and floats as written, true/false, lists comma-joined
  bool is_text_only = false; ///< from the launch line: typed by its reader
  bool is_bool = false, is_integer = false, is_string = false, is_list = false;
  std::int64_t line = 0;     ///< in the file; 0 on the launch line
  std::string typed;         ///< the key as given ("float8.enable_float8_linear")
};

/// Whether a value was given under `key` as spelled (an earlier schema's name, say), in the file or
/// on the launch line ("--key").
bool spelled(const tt_value& v, std::string_view key) {
  const std::string_view t = v.typed;
  return t == key || (t.starts_with("--") && t.substr(2) == key);
}

std::string text_of(const toml::node& n) {
  if (const auto* v = n.as_integer()) return fmt::format("{}", v->get());
  if (const auto* v = n.as_boolean()) return v->get() ? "true" : "false";
  if (const auto* v = n.as_floating_point()) return fmt::format("{}", v->get());
  if (const auto* v = n.as_string()) return v->get();
  if (const auto* a = n.as_array()) {
    std::string out;
    for (const toml::node& e : *a) {
      if (!out.empty()) out += ',';
      out += text_of(e);
    }
    return out;
  }
  return "…";
}

/// A TOML list as text_of joins it (or the launch line's comma list): its items, quotes and brackets trimmed.
std::vector<std::string> list_items(const std::string& list) {
  std::vector<std::string> items;
  for (std::size_t at = 0; at <= list.size();) {
    const std::size_t end = std::min(list.find(',', at), list.size());
    std::string c = list.substr(at, end - at);
    at = end + 1;
    c.erase(0, c.find_first_not_of(" \"'[]"));
    c.erase(c.find_last_not_of(" \"'[]") + 1);
    if (!c.empty()) items.push_back(std::move(c));
  }
  return items;
}

class reader {
 public:
  reader(std::string path, std::string flag) : path_(std::move(path)), flag_(std::move(flag)) {
    name_ = path_.empty() ? "torchtitan" : std::filesystem::path(path_).filename().string();
  }

  void read_file() {
    std::string text;
    try {
      text = read_input_file(path_, flag_, kMaxConfigFileBytes);
    } catch (const input_error& e) {
      throw input_error(fmt::format("{} {}: {}; its model flavour, parallel degrees, batch, checkpointing and "
                                    "float8 decide the estimate: give the file, or its settings as flags",
                                    flag_, path_, e.what()));
    }
    detail::require_utf8(text, path_);
    toml::table root;
    try {
      root = toml::parse(text, path_);
    } catch (const toml::parse_error& e) {
      throw input_error(fmt::format("{}:{}: not valid TOML: {}", path_, e.source().begin.line, e.description()));
    }
    walk(root, "");
  }

  void add_override(const tt_override& o) {
    const std::string key = canonical(o.key);
    if (ignored_section_of(key) != nullptr || (find_key(key) != nullptr && find_key(key)->role == tt_role::section_ignored)) {
      ignored_.push_back("--" + o.key);
      return;
    }
    const tt_key* k = find_key(key);
    if (k == nullptr || k->role == tt_role::section) {
      throw input_error(fmt::format("launch line: --{}: not a torchtitan option trainplan knows; if it changes no "
                                    "estimate, tell us and we will list it",
                                    o.key));
    }
    tt_value v;
    v.text = o.value;
    v.is_text_only = true;
    v.typed = "--" + o.key;
    if (const auto before = values_.find(key); before != values_.end() && before->second.text != v.text) {
      overridden_.push_back(fmt::format("{} {} (torchtitan config) → --{} {} (launch line)", before->second.typed,
                                        before->second.text, o.key, v.text));
    }
    values_[key] = std::move(v);
  }

  tt_config resolve();

 private:
  void walk(const toml::table& table, const std::string& prefix) {
    for (const auto& [name, node] : table) {
      const std::string typed = prefix.empty() ? std::string(name.str()) : prefix + "." + std::string(name.str());
      const std::string key = canonical(typed);
      const std::int64_t line = node.source().begin.line;
      if (ignored_section_of(key) != nullptr) {  // an earlier schema's key of a table that changes nothing
        ignored_.push_back(name_ + ":" + typed);
        continue;
      }
      const tt_key* k = find_key(key);
      if (k == nullptr) {
        throw input_error(fmt::format("{}:{}: {}: not a torchtitan setting trainplan knows; if it changes no "
                                      "estimate, tell us and we will list it",
                                      path_, line, typed));
      }
      if (k->role == tt_role::section_ignored) {
        ignored_.push_back(name_ + ":" + typed + (node.is_table() ? ".*" : ""));
        continue;
      }
      if (k->role == tt_role::section) {
        if (!node.is_table()) throw input_error(fmt::format("{}:{}: {}: expected a table", path_, line, typed));
        walk(*node.as_table(), typed);
        continue;
      }
      if (node.is_table()) throw input_error(fmt::format("{}:{}: {}: expected a value, got a table", path_, line, typed));
      tt_value v;
      v.text = text_of(node);
      v.is_bool = node.is_boolean();
      v.is_integer = node.is_integer();
      v.is_string = node.is_string();
      v.is_list = node.is_array();
      v.line = line;
      v.typed = typed;
      values_[key] = std::move(v);
    }
  }

  const tt_value* find(std::string_view key) const {
    const auto it = values_.find(std::string(key));
    return it == values_.end() ? nullptr : &it->second;
  }

  [[noreturn]] void fail(const tt_value& v, const std::string& why) const {
    if (v.line > 0) throw input_error(fmt::format("{}:{}: {}: {}", path_, v.line, v.typed, why));
    throw input_error(fmt::format("launch line: {} {}: {}", v.typed, v.text, why));
  }

  std::int64_t integer(std::string_view key, std::int64_t otherwise) const {
    const tt_value* v = find(key);
    if (v == nullptr) return otherwise;
    std::int64_t n = 0;
    const char* end = v->text.data() + v->text.size();
    const auto [at, ec] = std::from_chars(v->text.data(), end, n);
    if (!(v->is_integer || v->is_text_only) || ec != std::errc() || at != end || v->text.empty()) {
      fail(*v, "expected a whole number");
    }
    return n;
  }

  bool boolean(std::string_view key, bool otherwise) const {
    const tt_value* v = find(key);
    if (v == nullptr) return otherwise;
    if (!(v->is_bool || (v->is_text_only && (v->text == "true" || v->text == "false" || v->text == "True" ||
                                              v->text == "False")))) {
      fail(*v, "expected true or false");
    }
    return v->text == "true" || v->text == "True";
  }

  std::string text(std::string_view key, std::string_view otherwise) const {
    const tt_value* v = find(key);
    if (v == nullptr) return std::string(otherwise);
    if (!(v->is_string || v->is_text_only)) fail(*v, "expected a string");
    return v->text;
  }

  /// A key listed as changing nothing here, as given (file:key, or the launch line's --key), with why.
  void list_ignored(const tt_value& v, std::string_view why = {}) {
    ignored_.push_back((v.line > 0 ? name_ + ":" + v.typed : v.typed) + std::string(why));
  }

  /// A setting the job gets: the key that decided it, as given (its default's name when absent).
  void add(std::string flag, std::string value, std::string_view key) {
    const tt_value* v = find(key);
    out_.settings.push_back({std::move(flag), std::move(value), v != nullptr ? v->typed : std::string(key),
                             v != nullptr && v->is_text_only});
  }

  void refusals() const {
    for (const auto& [key, v] : values_) {
      const tt_key* k = find_key(key);
      if (k == nullptr || k->role != tt_role::refused_if_on) continue;
      const bool on = v.is_bool || v.text == "true" || v.text == "false" || v.text == "True" || v.text == "False"
                          ? v.text == "true" || v.text == "True"
                          : !v.text.empty() && v.text != "0";
      if (on) {
        fail(v, fmt::format("would change {}, which trainplan does not model; `--{} {}` on the launch line plans "
                            "the job without it",
                            k->what, key, v.is_bool || v.text == "true" || v.text == "True" ? "false" : "\"\""));
      }
    }
  }

  void model();
  void precision_and_float8();
  void float8_filter();
  void batch_and_sequence(std::int64_t pp);
  std::int64_t parallelism();
  void pipeline(std::int64_t pp);
  void stage_layout(std::int64_t pp, std::int64_t per_rank);
  void checkpointing();
  void compile();

  std::string path_, flag_, name_;
  std::map<std::string, tt_value> values_;
  std::vector<std::string> ignored_, overridden_;
  tt_config out_;
  std::int64_t model_layers_ = 0;  ///< the catalog flavour's transformer layers (0: an unknown flavour)
};

void reader::model() {
  const std::string name = text("model.name", "llama3"), flavor = text("model.flavor", "debugmodel");
  const auto m = std::find_if(kModels.begin(), kModels.end(),
                              [&](const tt_model& x) { return x.name == name && x.flavor == flavor; });
  if (m != kModels.end()) {
    if (const tt_value* pp = find("parallelism.pipeline_parallel_degree"); !m->pipelines && pp != nullptr && pp->text != "1") {
      fail(*pp, fmt::format("torchtitan's {} has no pipeline split (its TrainSpec's pipelining_fn is None): it runs at "
                            "a pipeline degree of 1", name));
    }
    add("--model", std::string(m->catalog), "model.flavor");
    model_layers_ = find_model(m->catalog).spec.num_layers;
    // nn.Embedding(vocab_size, dim) and the output Linear take the tokenizer's vocabulary unpadded (TP's
    // ColwiseParallel shards it as it is); Megatron's padding rule does not apply.
    add("--make-vocab-size-divisible-by", "1", "model.flavor");
    if (m->full_attention) add("--window-attn-skip-freq", "1", "model.flavor");  // every layer attends fully
  } else {
    out_.unknown_model = fmt::format(
        "torchtitan's model.name \"{}\" with model.flavor \"{}\" is not one trainplan knows (llama3 8B, 70B and "
        "405B, llama2 7B, 13B and 70B, qwen3 0.6B, 1.7B, 4B, 8B, 32B, 30B-A3B and 235B-A22B, llama4 17bx16e and "
        "17bx128e are): give the model with --model NAME|FILE before '--'",
        name, flavor);
  }
  // The December 2024 schema's norm choice: the flavours are RMSNorm models, run as PyTorch ops (rmsnorm,
  // the framework's eager row, §5.3) or as one Triton kernel (fused_rmsnorm).
  if (const tt_value* v = find("model.norm_type"); v != nullptr && v->text != "rmsnorm" && v->text != "fused_rmsnorm") {
    fail(*v, "would make the model's norms LayerNorms (with biases), which trainplan's torchtitan flavours are not; "
             "rmsnorm and fused_rmsnorm are");
  } else if (v != nullptr && v->text == "fused_rmsnorm") {
    add("--norm-kernel", "fused", "model.norm_type");
  }
  if (const tt_value* v = find("optimizer.name"); v != nullptr && v->text != "AdamW" && v->text != "Adam") {
    fail(*v, "only AdamW and Adam are modelled here");
  }
}

void reader::precision_and_float8() {
  const std::string param = text("training.mixed_precision_param", "bfloat16");
  if (param == "bfloat16") add("--bf16", "", "training.mixed_precision_param");
  else if (param == "float32") add("--fp32", "", "training.mixed_precision_param");
  else fail(*find("training.mixed_precision_param"), "expected bfloat16 or float32");
  if (const tt_value* v = find("training.mixed_precision_reduce"); v != nullptr && v->text != "float32") {
    fail(*v, "expected float32 (FSDP's gradient reduction in fp32 is what is modelled)");
  }
  if (const tt_value* v = find("training.dtype"); v != nullptr && v->text != "float32") {
    fail(*v, "would keep the sharded parameters and optimizer state in " + v->text +
                 ", which trainplan does not model (float32 is torchtitan's default)");
  }
  // torchao float8: model.converters names it (2025 on); the December 2024 schema switched it in [float8].
  bool float8 = boolean("quantize.linear.float8.enable_float8_linear", false);
  if (const tt_value* v = find("model.converters")) {
    for (const std::string& c : list_items(v->text)) {
      if (c == "float8" || c == "quantize.linear.float8") float8 = true;
      else fail(*v, "converter '" + c + "' is not modelled (float8, torchao's tensorwise float8 linears, is)");
    }
  }
  if (!float8) return;
  float8_filter();
  add("--fp8-format", "hybrid", "model.converters");  // torchao: e4m3 forward, e5m2 gradients
  const std::string recipe = text("quantize.linear.float8.recipe_name", "tensorwise");
  if (recipe != "tensorwise") {
    fail(*find("quantize.linear.float8.recipe_name"),
         "torchao's per-row scales are not modelled (tensorwise, the default, is)");
  }
  add("--fp8-recipe", "tensorwise", "quantize.linear.float8.recipe_name");
  for (const char* k : {"quantize.linear.float8.scaling_type_input", "quantize.linear.float8.scaling_type_weight",
                        "quantize.linear.float8.scaling_type_grad_output"}) {
    if (const tt_value* v = find(k); v != nullptr && v->text != "dynamic") fail(*v, "only dynamic scaling is modelled");
  }
  const bool fsdp_float8 = boolean("quantize.linear.float8.enable_fsdp_float8_all_gather", false);
  if (fsdp_float8) add("--fp8-param-gather", "", "quantize.linear.float8.enable_fsdp_float8_all_gather");
  // §4.2.4: Float8Converter precomputes the scales only with the float8 all-gather (precompute_scale =
  // enable_fsdp_float8_all_gather and precompute_float8_dynamic_scale_for_fsdp): alone it changes nothing.
  constexpr std::string_view kPrecompute = "quantize.linear.float8.precompute_float8_dynamic_scale_for_fsdp";
  if (const tt_value* v = find(kPrecompute); v != nullptr && boolean(kPrecompute, false)) {
    if (fsdp_float8) add("--fp8-precompute-scale", "", kPrecompute);
    else list_ignored(*v, " (without enable_fsdp_float8_all_gather)");
  }
  // torchao's Float8Linear before pytorch/ao#2356 (2025-06) saved each linear's FP8 weight, cast from the
  // FSDP-gathered one, for its backward unless force_recompute_fp8_weight_in_bwd: with no activation
  // checkpointing that keeps every layer's unsharded FP8 weight alive (about 1 byte per parameter; 7 GB for
  // Llama-3-8B in Lightning-AI/lightning-thunder#1528). trainplan models the FP8 casts as living while their
  // layer is gathered (§5.1.3), which checkpointing gives either way (the block saves only its policy's
  // tensors) and true gives without it.
  constexpr std::string_view kForce = "quantize.linear.float8.force_recompute_fp8_weight_in_bwd";
  if (const tt_value* f = find(kForce); f != nullptr && !boolean(kForce, false) &&
                                        text("activation_checkpoint.mode", "selective") == "none") {
    fail(*f, "false with activation_checkpoint.mode \"none\" keeps every layer's gathered FP8 weight for the "
             "backward (torchao before its #2356), which trainplan does not model: set it true");
  }
}

/// Which linears torchao converts (§5.1.3). trainplan prices every block linear in float8 and the output
/// layer and router in bf16. The December 2024 converter left the output out itself (fqn != "output");
/// from a6524d8 (2025-04-07) quantize.linear.float8.filter_fqns decides, default [], so an output not
/// listed runs float8. "output" and "router.gate" (the router stays bf16 either way) are what trainplan
/// prices; any other entry, or an output left in, is refused by key.
void reader::float8_filter() {
  constexpr std::string_view kFilter = "quantize.linear.float8.filter_fqns";
  const tt_value* v = find(kFilter);
  if (v == nullptr) {
    if (const tt_value* c = find("model.converters"); c != nullptr) {
      fail(*c, "float8 without quantize.linear.float8.filter_fqns converts the output layer too (torchtitan's default "
               "[] since a6524d8, 2025-04-07), which trainplan does not model: list \"output\" as torchtitan's own "
               "configs do");
    }
    return;  // the December 2024 schema: the output layer left out by the converter itself
  }
  bool output = false;
  for (const std::string& fqn : list_items(v->text)) {
    if (fqn == "output") output = true;
    else if (fqn != "router.gate") {
      fail(*v, "'" + fqn + "' kept out of float8 is not modelled (trainplan prices every block linear in float8, the "
               "output layer and the router in bf16: [\"output\"] or [\"output\", \"router.gate\"])");
    }
  }
  if (!output) {
    fail(*v, "without \"output\" the output layer runs float8, which trainplan does not model (it prices it in bf16, as "
             "torchtitan's own configs filter it)");
  }
}

void reader::batch_and_sequence(std::int64_t pp) {
  const std::int64_t local = integer("training.local_batch_size", 8);
  if (local < 1) fail(*find("training.local_batch_size"), "must be at least 1");
  if (pp > 1) {
    // pipeline_llm: the schedule splits each local batch into local / microbatch_size micro-batches
    // (torchtitan's check: divisible), all of one optimizer step at global_batch_size -1.
    const std::int64_t mbs = integer("parallelism.pipeline_parallel_microbatch_size", 1);
    if (mbs < 1 || local % mbs != 0) {
      const tt_value* v = find("parallelism.pipeline_parallel_microbatch_size");
      fail(v != nullptr ? *v : *find("training.local_batch_size"),
           fmt::format("the local batch ({}) must be a multiple of the pipeline's micro-batch size ({}) (torchtitan's "
                       "check)", local, mbs));
    }
    add("--micro-batch-size", std::to_string(mbs), "parallelism.pipeline_parallel_microbatch_size");
    if (integer("training.global_batch_size", -1) == -1) {
      add("--gradient-accumulation-steps", std::to_string(local / mbs), "training.local_batch_size");
    }
  } else {
    add("--micro-batch-size", std::to_string(local), "training.local_batch_size");
  }
  // -1: local × the data-parallel degree, no accumulation; else gradient accumulation makes up the rest.
  const std::int64_t global = integer("training.global_batch_size", -1);
  if (global > 0) add("--global-batch-size", std::to_string(global), "training.global_batch_size");
  else if (global != -1) fail(*find("training.global_batch_size"), "expected -1 (local × data parallel) or a positive number");
  const std::int64_t seq = integer("training.seq_len", 2048);
  if (seq < 1) fail(*find("training.seq_len"), "must be at least 1");
  add("--seq-length", std::to_string(seq), "training.seq_len");
}

/// The degrees (parallel_dims.py: shard −1 takes what the others leave) and FSDP's sharding. Returns PP.
std::int64_t reader::parallelism() {
  add("--framework", "fsdp", "torchtitan");
  const std::int64_t tp = integer("parallelism.tensor_parallel_degree", 1);
  const std::int64_t pp = integer("parallelism.pipeline_parallel_degree", 1);
  const std::int64_t cp = integer("parallelism.context_parallel_degree", 1);
  const std::int64_t ep = integer("parallelism.expert_parallel_degree", 1);
  const std::int64_t etp = integer("parallelism.expert_tensor_parallel_degree", 1);
  const std::int64_t replicate = integer("parallelism.data_parallel_replicate_degree", 1);
  const std::int64_t shard = integer("parallelism.data_parallel_shard_degree", -1);
  for (const auto& [key, value] : {std::pair{"parallelism.tensor_parallel_degree", tp},
                                   {"parallelism.pipeline_parallel_degree", pp},
                                   {"parallelism.context_parallel_degree", cp},
                                   {"parallelism.expert_parallel_degree", ep},
                                   {"parallelism.expert_tensor_parallel_degree", etp},
                                   {"parallelism.data_parallel_replicate_degree", replicate}}) {
    if (value < 1) fail(*find(key), "must be at least 1");
    if (value > limits::kMaxParallel) fail(*find(key), fmt::format("must be at most {}", limits::kMaxParallel));
  }
  if (shard == 0 || shard < -1) fail(*find("parallelism.data_parallel_shard_degree"), "expected -1 (the rest) or at least 1");
  if (shard > limits::kMaxParallel) {
    fail(*find("parallelism.data_parallel_shard_degree"), fmt::format("must be at most {}", limits::kMaxParallel));
  }
  if (tp > 1) {
    // apply_tp: the norms run under SequenceParallel, the loss on vocab-parallel logits.
    add("--tensor-model-parallel-size", std::to_string(tp), "parallelism.tensor_parallel_degree");
    add("--sequence-parallel", "", "parallelism.tensor_parallel_degree");
    // apply_tp with enable_async_tp: Inductor's micro-pipeline TP pass over symmetric memory (§5.5.1).
    if (boolean("parallelism.enable_async_tensor_parallel", false)) {
      add("--async-tensor-parallel", "", "parallelism.enable_async_tensor_parallel");
    }
    const bool no_loss_parallel =
        boolean("parallelism.disable_loss_parallel", false) || !boolean("training.enable_loss_parallel", true);
    if (no_loss_parallel) {
      const tt_value* v = find("parallelism.disable_loss_parallel");
      fail(v != nullptr ? *v : *find("training.enable_loss_parallel"),
           "with TP > 1 each TP rank would hold the whole logits, which trainplan does not model (the vocab-parallel "
           "loss, torchtitan's default, is)");
    }
  }
  if (const tt_value* v = find("parallelism.enable_async_tensor_parallel");
      tp == 1 && v != nullptr && boolean("parallelism.enable_async_tensor_parallel", false)) {
    list_ignored(*v, " (TP 1)");  // apply_tp is not run
  }
  if (pp > 1) {
    add("--pipeline-model-parallel-size", std::to_string(pp), "parallelism.pipeline_parallel_degree");
    // §3.5.1: the December 2024 schema's pipeline ran on the PyTorch of its day, whose every stage kept
    // each micro-batch's output for step()'s return value (output_chunks, until PyTorch #153383 of
    // 2025-05-13); torchtitan's last TOML schema passes return_outputs=False (e5ef99a), trainplan's default.
    if (spelled(*find("parallelism.pipeline_parallel_degree"), "experimental.pipeline_parallel_degree")) {
      add("--pipelining-output-cache", "every-stage", "experimental.pipeline_parallel_degree");
      out_.derived.push_back(
          "torchtitan: experimental.pipeline_parallel_degree (the December 2024 schema) read with the PyTorch of "
          "its day, whose pipeline stages each keep every micro-batch's output until the step ends "
          "(--pipelining-output-cache every-stage; torchtitan's later schema: none)");
    }
  }
  if (cp > 1) {
    add("--context-parallel-size", std::to_string(cp), "parallelism.context_parallel_degree");
    // torch.distributed.tensor.experimental._attention: allgather gathers K/V; alltoall passes them round a ring.
    const std::string rotate = text("parallelism.context_parallel_rotate_method", "allgather");
    if (rotate == "allgather") add("--cp-comm-type", "all_gather", "parallelism.context_parallel_rotate_method");
    else if (rotate == "alltoall") add("--cp-comm-type", "p2p", "parallelism.context_parallel_rotate_method");
    else fail(*find("parallelism.context_parallel_rotate_method"), "expected allgather or alltoall");
    // §4.2.2 splits the sequence head-tail, which balances causal attention over the CP ranks (torchtitan's
    // default, HeadTailLoadBalancer); without it the last rank attends to most of the sequence.
    if (const std::string balancer = text("parallelism.context_parallel_load_balancer", "headtail"); balancer != "headtail") {
      fail(*find("parallelism.context_parallel_load_balancer"),
           balancer == "ptrr" ? "is FlexAttention's balancer, and the flavours here run SDPA; headtail (the default) is "
                                "what trainplan models"
                              : "would leave causal attention unbalanced over the CP ranks, which trainplan does not model; "
                                "headtail (the default) balances it");
    }
  } else if (const tt_value* v = find("parallelism.context_parallel_load_balancer")) {
    list_ignored(*v, " (CP 1)");
  }
  if (ep > 1) add("--expert-model-parallel-size", std::to_string(ep), "parallelism.expert_parallel_degree");
  if (ep > 1 || etp > 1) add("--expert-tensor-parallel-size", std::to_string(etp), "parallelism.expert_tensor_parallel_degree");
  if (text("parallelism.expert_parallel_comm_backend", "standard") == "deepep" && ep > 1) {
    add("--moe-enable-deepep", "", "parallelism.expert_parallel_comm_backend");
  }
  // FSDP2 shards over data_parallel_shard_degree and replicates over the rest (HSDP); shard 1 is DDP.
  if (shard == 1) {
    add("--zero-stage", "0", "parallelism.data_parallel_shard_degree");
    add("--data-parallel-size", std::to_string(replicate), "parallelism.data_parallel_replicate_degree");
    return pp;
  }
  const std::string reshard = text("parallelism.fsdp_reshard_after_forward", "default");
  if (pp > 1) {
    // With a pipeline "default" does not reshard after forward (parallelize.py apply_fsdp), nor does the
    // schedule after any backward but the last (pipelining/stage.py backward_maybe_with_nosync): fully_shard
    // under pipelining, the pipelined ZeRO-3 row (§3.1).
    if (reshard == "always") {
      fail(*find("parallelism.fsdp_reshard_after_forward"),
           "with a pipeline would gather every unit again for each micro-batch, which trainplan does not model; "
           "default (torchtitan's) and never keep the units unsharded through the schedule");
    } else if (reshard != "default" && reshard != "never") {
      fail(*find("parallelism.fsdp_reshard_after_forward"), "expected default, always or never");
    }
    add("--zero-stage", "3", "parallelism.fsdp_reshard_after_forward");
  } else if (reshard == "always" || reshard == "default") {
    add("--zero-stage", "3", "parallelism.fsdp_reshard_after_forward");
  } else if (reshard == "never") {
    add("--zero-stage", "2", "parallelism.fsdp_reshard_after_forward");
  } else {
    fail(*find("parallelism.fsdp_reshard_after_forward"), "expected default, always or never");
  }
  if (replicate > 1) {
    add("--data-parallel-replicate-degree", std::to_string(replicate), "parallelism.data_parallel_replicate_degree");
  }
  if (shard > 1) add("--data-parallel-size", std::to_string(shard * replicate), "parallelism.data_parallel_shard_degree");
  return pp;
}

/// The pipeline's keys (distributed/pipeline_parallel.py): at PP > 1 torchtitan's default split
/// (generate_llm_fqn_per_model_part, the embedding and the output a layer each, §2.2) under 1F1B is
/// modelled, any other split, schedule or micro-batch count is refused by key; at PP 1 they change nothing.
void reader::pipeline(std::int64_t pp) {
  static constexpr std::array<std::string_view, 9> kKeys = {
      "parallelism.pipeline_parallel_split_points",         "parallelism.module_fqns_per_model_part",
      "parallelism.pipeline_parallel_first_stage_less_layers", "parallelism.pipeline_parallel_last_stage_less_layers",
      "parallelism.pipeline_parallel_layers_per_stage",     "parallelism.pipeline_parallel_schedule",
      "parallelism.pipeline_parallel_schedule_csv",         "parallelism.pipeline_parallel_microbatches",
      "parallelism.pipeline_parallel_expert_parallel_overlap"};
  if (pp == 1) {
    for (std::string_view k : kKeys) {
      if (const tt_value* v = find(k)) list_ignored(*v, " (PP 1)");
    }
    return;
  }
  const std::string schedule = text("parallelism.pipeline_parallel_schedule", "1F1B");
  if (schedule != "1F1B" && schedule != "Interleaved1F1B") {
    fail(*find("parallelism.pipeline_parallel_schedule"),
         "would run the " + schedule + " schedule, which trainplan does not model for torchtitan; 1F1B (its default) and "
         "Interleaved1F1B are");
  }
  for (const char* k : {"parallelism.pipeline_parallel_first_stage_less_layers", "parallelism.pipeline_parallel_last_stage_less_layers"}) {
    if (integer(k, 1) != 1) fail(*find(k), "would weigh the pipeline's ends otherwise than one layer each, which is not modelled");
  }
  for (const char* k : {"parallelism.pipeline_parallel_split_points", "parallelism.module_fqns_per_model_part",
                        "parallelism.pipeline_parallel_layers_per_stage", "parallelism.pipeline_parallel_schedule_csv",
                        "parallelism.pipeline_parallel_microbatches"}) {
    const tt_value* v = find(k);
    if (v != nullptr && !v->text.empty() && v->text != "[]" && v->text != "None") {
      fail(*v, "would set the pipeline's stages or micro-batches itself, which trainplan does not model; torchtitan's "
               "default split (the embedding and the output a layer each) with 1F1B is");
    }
  }
  if (boolean("parallelism.pipeline_parallel_expert_parallel_overlap", false)) {
    fail(*find("parallelism.pipeline_parallel_expert_parallel_overlap"),
         "would overlap the experts' all-to-alls in DualPipeV, which trainplan does not model");
  }
  // Interleaved1F1B runs two stages a rank; 1F1B one, written as a layout where the split leaves a remainder
  // (the even case is Megatron's accounting of the embedding and the loss, §2.2).
  if (schedule == "Interleaved1F1B") stage_layout(pp, 2);
  else if (model_layers_ > 0 && (model_layers_ + 2) % pp != 0) stage_layout(pp, 1);
}

/// The split torchtitan's pipeline_llm makes without split points, as Megatron-Core's layout string
/// (§2.2.1): `per_rank` stages a rank (one for 1F1B, two for a multi-stage schedule: Interleaved1F1B, run
/// as torch.distributed.pipelining ScheduleInterleaved1F1B in Megatron's interleaved order, warm-up
/// (v − 1)·PP + 2·(PP − 1 − rank) with micro-batches in rounds of PP), the tokens' embedding and the norm
/// with the output each weighing one layer (generate_llm_fqn_per_model_part: (L + 2) // stages layers a
/// stage, the first (L + 2) mod stages one more), stage i on rank i mod PP (stage_ids_this_rank, "loop").
void reader::stage_layout(std::int64_t pp, std::int64_t per_rank) {
  const tt_value* key = find("parallelism.pipeline_parallel_schedule");
  if (key == nullptr) key = find("parallelism.pipeline_parallel_degree");
  if (model_layers_ == 0) {
    fail(*key, "needs the model's layer count to split it, which an unknown model.flavor does not give");
  }
  const std::int64_t layers = model_layers_, stages = per_rank * pp, effective = layers + 2;
  const std::int64_t base = effective / stages, extra = effective % stages;
  if (base < 1) fail(*key, fmt::format("{} stages would leave some empty ({} layers with the embedding and output)", stages, effective));
  std::string layout;
  for (std::int64_t i = 0; i < stages; ++i) {
    const std::int64_t weight = base + (i < extra ? 1 : 0);
    const std::int64_t t = i == 0 || i == stages - 1 ? weight - 1 : weight;
    if (i > 0) layout += '|';
    if (i == 0) layout += 'E';
    if (t > 0) layout += fmt::format("t*{}", t);
    if (i == stages - 1) layout += 'L';
  }
  add("--pipeline-model-parallel-layout", layout,
      per_rank > 1 ? "parallelism.pipeline_parallel_schedule" : "parallelism.pipeline_parallel_degree");
}

/// activation_checkpoint.py _apply_ac_to_transformer_block: full, layer SAC every k blocks, op SAC.
void reader::checkpointing() {
  const std::string mode = text("activation_checkpoint.mode", "selective");
  const std::string option = text("activation_checkpoint.selective_ac_option", "2");
  const char* key = "activation_checkpoint.mode";
  if (mode == "none") {
    add("--recompute-granularity", "none", key);
  } else if (mode == "full") {
    add("--recompute-granularity", "full", key);
  } else if (mode == "selective") {
    key = "activation_checkpoint.selective_ac_option";
    if (option == "op") {
      add("--recompute-granularity", "op", key);
      if (const tt_value* v = find("activation_checkpoint.per_op_sac_force_recompute_mm_shapes_by_fqns");
          v != nullptr && !v->text.empty() && v->text != "moe.router.gate") {
        fail(*v, "would change which matmuls op SAC keeps, which trainplan does not model");
      }
    } else if (!option.empty() && option.size() < 10 && option.find_first_not_of("0123456789") == std::string::npos) {
      const std::int64_t every = std::stoll(option);
      add("--recompute-granularity", "full", key);
      // _apply_layer_sac: every block whose running count is a multiple of k (k 0 or 1: every block).
      if (every >= 2) out_.layer_checkpoint_every = every;
    } else {
      const tt_value* v = find(key);
      fail(v != nullptr ? *v : *find("activation_checkpoint.mode"),
           "expected 'op' or a whole number (torchtitan's own check)");
    }
  } else if (mode == "memory_budget") {
    fail(*find("activation_checkpoint.mode"),
         "leaves what is saved to torch.compile's min-cut partitioner, which trainplan does not model");
  } else {
    fail(*find("activation_checkpoint.mode"), "expected none, selective, full or memory_budget");
  }
}

/// torch.compile (torchtitan's parallelize.py apply_compile, components/loss.py build_cross_entropy_loss):
/// "model" compiles each TransformerBlock (--torch-compile), "loss" the cross-entropy (--torch-compile-loss);
/// both modelled (§3.6, §5.3). compile.components defaults to ["model", "loss"]; the December 2024 schema's
/// training.compile compiled the blocks alone (the loss's compile was off from e8977b0, 2024-12-18, to
/// bbb1b61, 2025-04-02), and from bbb1b61 it compiled both.
void reader::compile() {
  const tt_value* on = find("compile.enable");
  if (on == nullptr || !boolean("compile.enable", false)) return;
  const tt_value* listed = find("compile.components");
  const bool dec_2024 = spelled(*on, "training.compile");
  const std::string components = listed != nullptr ? listed->text : dec_2024 ? "model" : "model,loss";
  for (const std::string& c : list_items(components)) {
    if (c == "model") {
      add("--torch-compile", "", "compile.enable");
    } else if (c == "loss") {
      add("--torch-compile-loss", "", listed != nullptr ? "compile.components" : "compile.enable");
    } else {
      fail(listed != nullptr ? *listed : *on, "names '" + c + "', which torchtitan does not compile (its components "
                                              "are model and loss)");
    }
  }
  if (dec_2024 && listed == nullptr) {
    out_.derived.push_back(
        "torchtitan: training.compile read as the blocks alone, as torchtitan ran it from 2024-12-18 (e8977b0, the "
        "December 2024 benchmarks) to 2025-04-02; from bbb1b61 on it compiled the loss too (--torch-compile-loss)");
  }
}

tt_config reader::resolve() {
  refusals();
  model();
  const std::int64_t pp = parallelism();
  pipeline(pp);
  batch_and_sequence(pp);
  precision_and_float8();
  checkpointing();
  compile();
  for (const auto& [key, v] : values_) {
    const tt_key* k = find_key(key);
    if (k != nullptr && (k->role == tt_role::ignored || k->role == tt_role::refused_if_on)) {
      list_ignored(v);
    }
  }
  out_.ignored = std::move(ignored_);
  out_.overridden = std::move(overridden_);
  out_.derived.push_back(fmt::format("torchtitan: {} with torchtitan's defaults beneath (its last TOML schema)",
                                     path_.empty() ? "no config file" : name_));
  return std::move(out_);
}

}  // namespace

tt_config read_torchtitan_config(const std::string& path, const std::string& flag,
                                 const std::vector<tt_override>& overrides) {
  reader r(path, flag);
  if (!path.empty()) r.read_file();
  for (const tt_override& o : overrides) r.add_override(o);
  return r.resolve();
}

}  // namespace trainplan::args_detail
