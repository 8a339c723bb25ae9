// Megatron-Bridge ConfigContainer YAML (src/cli/bridge_config.h). What it means is Megatron-Bridge's
// (NVIDIA-NeMo/Megatron-Bridge 067f987, 2026-08-22): src/megatron/bridge/training/config.py
// (ConfigContainer, runtime_config_update), training/mixed_precision.py (MixedPrecisionConfig.setup,
// update_config_with_precision_overrides), training/comm_overlap.py (CommOverlapConfig.setup,
// _get_model_comm_overlap_cfgs, _get_optimizer_overlap_cfgs) and models/gpt_provider.py
// (GPTModelProvider.provide: the vocabulary padding, mtp_block_spec). Fields are Megatron-Core's
// (src/cli/megatron_core_defaults.inc) and become the Megatron flags of the same meaning.
#include "bridge_config.h"

#include <algorithm>
#include <array>
#include <filesystem>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <string_view>

#include <fmt/format.h>

#include "config_keys.h"
#include "megatron_core_defaults.h"
#include "trainplan/cli/args.h"
#include "trainplan/core/base/document.h"
#include "trainplan/core/base/error.h"
#include "trainplan/core/base/input_file.h"
#include "trainplan/core/base/limits.h"

namespace trainplan::args_detail {

namespace {

using detail::json;

/// What a top-level section of the ConfigContainer is to trainplan.
enum class br_section { read, ignored, null_only };

struct br_section_row {
  std::string_view name;
  br_section kind;
  std::string_view what;  ///< null_only: what it would change
};

constexpr std::array kSections = {
    br_section_row{"model", br_section::read, ""},
    br_section_row{"ddp", br_section::read, ""},
    br_section_row{"optimizer", br_section::read, ""},
    br_section_row{"mixed_precision", br_section::read, ""},
    br_section_row{"comm_overlap", br_section::read, ""},
    br_section_row{"train", br_section::read, ""},
    br_section_row{"dist", br_section::read, ""},
    br_section_row{"tokenizer", br_section::read, ""},
    br_section_row{"dataset", br_section::read, ""},
    br_section_row{"peft", br_section::null_only, "what trains and what is stored (adapters on a frozen model)"},
    // Bookkeeping: checkpoints, logs, profiling, fault tolerance, the learning-rate schedule, seeds.
    br_section_row{"checkpoint", br_section::ignored, ""},
    br_section_row{"logger", br_section::ignored, ""},
    br_section_row{"profiling", br_section::ignored, ""},
    br_section_row{"rerun_state_machine", br_section::ignored, ""},
    br_section_row{"rng", br_section::ignored, ""},
    br_section_row{"scheduler", br_section::ignored, ""},
    br_section_row{"validation", br_section::ignored, ""},
    br_section_row{"ft", br_section::ignored, ""},
    br_section_row{"straggler", br_section::ignored, ""},
    br_section_row{"nvrx_straggler", br_section::ignored, ""},
    br_section_row{"inprocess_restart", br_section::ignored, ""},
    br_section_row{"tensor_inspect", br_section::ignored, ""},
    br_section_row{"optimizer_config_override_provider", br_section::ignored, ""},
};

/// Fields read by name below (custom), listed as changing nothing, or whose Megatron flag is named
/// otherwise than the field.
enum class br_role {
  custom,     ///< read by the reader's own code
  ignored,    ///< changes no estimate (said why where not obvious)
  renamed,    ///< the Megatron flag `flag` of the same meaning: true/value as `flag`, false as `off_flag`
};

struct br_key {
  std::string_view path;
  br_role role;
  std::string_view flag;      ///< renamed: the flag for true or a value ("" when true is Megatron's default)
  std::string_view off_flag;  ///< renamed: the flag for false ("" when false is Megatron's default)
  std::string_view what;      ///< ignored: why
};

constexpr std::array kKeys = {
    // The model's shape (GPTModelProvider.provide builds MCoreGPTModel with these).
    br_key{"model._target_", br_role::custom, "", "", ""},
    br_key{"model.num_query_groups", br_role::custom, "", "", ""},
    br_key{"model.position_embedding_type", br_role::custom, "", "", ""},
    br_key{"model.vocab_size", br_role::custom, "", "", ""},
    br_key{"model.should_pad_vocab", br_role::custom, "", "", ""},
    br_key{"model.make_vocab_size_divisible_by", br_role::custom, "", "", ""},
    br_key{"model.activation_func", br_role::custom, "", "", ""},
    br_key{"model.gated_linear_unit", br_role::custom, "", "", ""},
    br_key{"model.bias_activation_fusion", br_role::custom, "", "", ""},
    br_key{"model.transformer_layer_spec", br_role::custom, "", "", ""},
    br_key{"model.moe_layer_freq", br_role::custom, "", "", ""},
    br_key{"model.recompute_modules", br_role::custom, "", "", ""},
    br_key{"model.virtual_pipeline_model_parallel_size", br_role::custom, "", "", ""},
    br_key{"model.share_embeddings_and_output_weights", br_role::renamed, "", "--untie-embeddings-and-output-weights", ""},
    br_key{"model.add_bias_linear", br_role::renamed, "", "--disable-bias-linear", ""},
    br_key{"model.num_moe_experts", br_role::renamed, "--num-experts", "", ""},
    br_key{"model.apply_rope_fusion", br_role::renamed, "", "--no-rope-fusion", ""},
    br_key{"model.overlap_p2p_comm", br_role::renamed, "", "--no-overlap-p2p-communication", ""},
    br_key{"model.microbatch_group_size_per_vp_stage", br_role::renamed,
           "--microbatch-group-size-per-virtual-pipeline-stage", "", ""},
    br_key{"model.layernorm_epsilon", br_role::ignored, "", "", ""},
    br_key{"model.rotary_base", br_role::ignored, "", "", ""},
    br_key{"model.hf_model_id", br_role::ignored, "", "", ""},
    br_key{"model.hf_model_revision", br_role::ignored, "", "", ""},
    br_key{"model.init_method", br_role::ignored, "", "", ""},
    br_key{"model.output_layer_init_method", br_role::ignored, "", "", ""},
    br_key{"model.embedding_init_method", br_role::ignored, "", "", ""},
    br_key{"model.mtp_enabled", br_role::ignored, "", "", "Megatron-Bridge builds MTP from mtp_num_layers (mtp_block_spec)"},
    br_key{"model.tp_comm_overlap_cfg", br_role::ignored, "", "", "userbuffers' per-GEMM settings"},
    br_key{"model.tp_comm_bootstrap_backend", br_role::ignored, "", "", ""},
    br_key{"model.batch_p2p_comm", br_role::ignored, "", "", ""},
    br_key{"model.deallocate_pipeline_outputs", br_role::custom, "", "", ""},
    br_key{"model.barrier_with_L1_time", br_role::ignored, "", "", ""},
    br_key{"model.timers", br_role::ignored, "", "", ""},
    // Precision: the model's own fields, after mixed_precision has been applied over them.
    br_key{"model.bf16", br_role::custom, "", "", ""},
    br_key{"model.fp16", br_role::custom, "", "", ""},
    br_key{"model.params_dtype", br_role::custom, "", "", ""},
    br_key{"model.pipeline_dtype", br_role::ignored, "", "", "the p2p dtype follows the parameters'"},
    br_key{"model.autocast_dtype", br_role::custom, "", "", ""},
    br_key{"model.enable_autocast", br_role::custom, "", "", ""},
    br_key{"model.fp8", br_role::custom, "", "", ""},
    br_key{"model.fp8_recipe", br_role::custom, "", "", ""},
    br_key{"model.fp8_param", br_role::custom, "", "", ""},
    br_key{"model.fp8_wgrad", br_role::custom, "", "", ""},
    br_key{"model.fp8_margin", br_role::custom, "", "", ""},
    br_key{"model.fp8_interval", br_role::custom, "", "", ""},
    br_key{"model.fp8_amax_history_len", br_role::ignored, "", "", ""},
    br_key{"model.fp8_amax_compute_algo", br_role::ignored, "", "", ""},
    br_key{"model.tp_only_amax_red", br_role::ignored, "", "", ""},
    br_key{"model.first_last_layers_bf16", br_role::custom, "", "", ""},
    br_key{"model.num_layers_at_start_in_bf16", br_role::custom, "", "", ""},
    br_key{"model.num_layers_at_end_in_bf16", br_role::custom, "", "", ""},
    br_key{"model.fp4", br_role::custom, "", "", ""},
    br_key{"model.fp4_recipe", br_role::custom, "", "", ""},
    br_key{"model.fp4_param", br_role::custom, "", "", ""},
    // DDP and optimizer: Megatron-Core's DistributedDataParallelConfig and OptimizerConfig.
    br_key{"ddp.grad_reduce_in_fp32", br_role::renamed, "", "--grad-reduce-in-bf16", ""},
    br_key{"ddp.bucket_size", br_role::renamed, "--ddp-bucket-size", "", ""},
    br_key{"ddp.average_in_collective", br_role::ignored, "", "", ""},
    br_key{"ddp.align_param_gather", br_role::ignored, "", "", ""},
    br_key{"ddp.check_for_nan_in_grad", br_role::ignored, "", "", ""},
    br_key{"ddp.check_for_large_grads", br_role::ignored, "", "", ""},
    br_key{"ddp.fp8_param_gather", br_role::ignored, "", "", "set from mixed_precision with model.fp8_param"},
    br_key{"ddp.megatron_fsdp_main_params_dtype", br_role::custom, "", "", ""},
    br_key{"optimizer.optimizer", br_role::renamed, "--optimizer", "", ""},
    br_key{"optimizer.use_distributed_optimizer", br_role::ignored, "", "", "ddp.use_distributed_optimizer decides"},
    br_key{"optimizer.overlap_param_gather", br_role::ignored, "", "", "ddp.overlap_param_gather decides"},
    br_key{"optimizer.overlap_param_gather_with_optimizer_step", br_role::ignored, "", "",
           "ddp's and comm_overlap's decide"},
    br_key{"optimizer.bf16", br_role::ignored, "", "", "mixed_precision decides"},
    br_key{"optimizer.fp16", br_role::ignored, "", "", "mixed_precision decides"},
    br_key{"optimizer.params_dtype", br_role::ignored, "", "", "mixed_precision decides"},
    br_key{"optimizer.main_grads_dtype", br_role::custom, "", "", ""},
    br_key{"optimizer.main_params_dtype", br_role::custom, "", "", ""},
    br_key{"optimizer.exp_avg_dtype", br_role::custom, "", "", ""},
    br_key{"optimizer.exp_avg_sq_dtype", br_role::custom, "", "", ""},
    br_key{"optimizer.store_param_remainders", br_role::custom, "", "", ""},
    br_key{"optimizer.config_logger_dir", br_role::ignored, "", "", ""},
    br_key{"optimizer.timers", br_role::ignored, "", "", ""},
    br_key{"optimizer.barrier_with_L1_time", br_role::ignored, "", "", ""},
    br_key{"optimizer.fp8_recipe", br_role::ignored, "", "", "the model's fp8_recipe decides"},
    br_key{"optimizer.pin_cpu_grads", br_role::ignored, "", "", ""},
    br_key{"optimizer.pin_cpu_params", br_role::ignored, "", "", ""},
    // train: Megatron's training arguments.
    br_key{"train.micro_batch_size", br_role::renamed, "--micro-batch-size", "", ""},
    br_key{"train.global_batch_size", br_role::renamed, "--global-batch-size", "", ""},
    br_key{"train.train_iters", br_role::renamed, "--train-iters", "", ""},
    br_key{"train.train_samples", br_role::renamed, "--train-samples", "", ""},
    br_key{"train.rampup_batch_size", br_role::custom, "", "", ""},
    br_key{"train.empty_unused_memory_level", br_role::custom, "", "", ""},
    // dist: how processes are placed and which data-parallel engine runs.
    br_key{"dist.use_tp_pp_dp_mapping", br_role::renamed, "--use-tp-pp-dp-mapping", "", ""},
    br_key{"dist.use_megatron_fsdp", br_role::custom, "", "", ""},
    br_key{"dist.use_torch_fsdp2", br_role::custom, "", "", ""},
    br_key{"dist.use_sharp", br_role::renamed, "--use-sharp", "", ""},
    // tokenizer: the vocabulary when the model does not give it; dataset: the sample length.
    br_key{"tokenizer.tokenizer_type", br_role::custom, "", "", ""},
    br_key{"tokenizer.tokenizer_model", br_role::custom, "", "", ""},
    br_key{"tokenizer.vocab_size", br_role::custom, "", "", ""},
    br_key{"tokenizer.vocab_file", br_role::custom, "", "", ""},
    br_key{"tokenizer.merge_file", br_role::custom, "", "", ""},
    br_key{"dataset.sequence_length", br_role::custom, "", "", ""},
};

const br_key* find_key(std::string_view path) { return find_row<kKeys>(path); }

/// Field prefixes that change no estimate: RoPE scaling, initialisation, µP's multipliers, inference.
constexpr std::array<std::string_view, 10> kIgnoredPrefixes = {
    "model.yarn_", "model.rope_", "model.mscale", "model.beta_fast", "model.beta_slow",
    "model.original_max_position_embeddings", "model.mup_", "model.inference_", "model.init_method_std",
    "model.rotary_scaling_factor"};

/// Sections whose fields are read one by one; the others here are read by `custom` rows alone.
constexpr std::array<std::string_view, 3> kFieldSections = {"model", "ddp", "optimizer"};

/// A field's value, where it came from.
struct br_value {
  json v;
  std::string text;    ///< as written (numbers keep their spelling; `_target_` objects their target)
  std::string_view origin;  ///< the key that set it: "model.fp8", or "mixed_precision.fp8" once applied (a key of
                            ///< the reader's table, which outlives it)
  int line = 0;
};

/// `{_target_: torch.bfloat16, _call_: false}` and the like: the target, else the value's text.
std::string text_of(const json& v, const std::string& written) {
  if (!written.empty()) return written;
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "null";
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_object() && v.contains("_target_") && v["_target_"].is_string()) return v["_target_"].get<std::string>();
  if (v.is_array()) {
    std::string out;
    for (const json& e : v) {
      if (!out.empty()) out += ',';
      out += text_of(e, "");
    }
    return out;
  }
  return v.dump();
}

/// torch dtypes as Megatron's flags spell them.
std::string dtype_name(const std::string& target) {
  static const std::map<std::string_view, std::string_view> kDtypes = {
      {"torch.float32", "fp32"}, {"torch.float", "fp32"},  {"torch.bfloat16", "bf16"},
      {"torch.float16", "fp16"}, {"torch.half", "fp16"},   {"torch.uint8", "fp8"},
      {"torch.float8_e4m3fn", "fp8"}};
  const auto it = kDtypes.find(target);
  return it == kDtypes.end() ? target : std::string(it->second);
}

bool falsy(const json& v) {
  return v.is_null() || (v.is_boolean() && !v.get<bool>()) || (v.is_number() && v.get<double>() == 0) ||
         (v.is_string() && v.get<std::string>().empty()) || (v.is_array() && v.empty());
}

/// Whether `section.field` holds Megatron-Core's default (off, for a field without a literal one).
bool at_default(const std::string& key, const br_value& v) {
  const json* def = megatron_core_default_of(key);
  return def != nullptr ? same_config_value(*def, v.v) || (falsy(*def) && falsy(v.v)) : falsy(v.v);
}

class reader {
 public:
  reader(std::string path, std::string flag) : path_(std::move(path)), flag_(std::move(flag)) {
    name_ = std::filesystem::path(path_).filename().string();
  }

  void read_file();
  nemo_config resolve();

 private:
  [[noreturn]] void fail(const br_value& v, const std::string& why) const {
    throw input_error(fmt::format("{}:{}: {}: {}", path_, v.line, v.origin, why));
  }
  void add(const br_value& v, std::vector<std::string> tokens) {
    out_.settings.push_back({std::move(tokens), std::string(v.origin), fmt::format("{}:{}", path_, v.line), false});
  }
  void ignore(const br_value& v, std::string_view why) {
    out_.ignored.push_back(fmt::format("{}:{} {}={}{}", name_, v.line, v.origin, v.text,
                                       why.empty() ? "" : fmt::format(" ({})", why)));
  }
  const br_value* find(const std::string& key) const {
    const auto it = values_.find(key);
    return it == values_.end() ? nullptr : &it->second;
  }
  /// The field `key` for a message's file:line, or model.num_layers (read_file makes sure of it) when the
  /// file leaves the field out.
  const br_value& anchor(const std::string& key) const {
    const br_value* v = find(key);
    return v != nullptr ? *v : *find("model.num_layers");
  }
  bool boolean(const std::string& key, bool absent) const {
    const br_value* v = find(key);
    if (v == nullptr || v->v.is_null()) return absent;
    if (!v->v.is_boolean()) fail(*v, "expected true or false");
    return v->v.get<bool>();
  }
  std::int64_t integer(const std::string& key, std::int64_t absent) const {
    const br_value* v = find(key);
    if (v == nullptr || v->v.is_null()) return absent;
    if (!v->v.is_number_integer()) fail(*v, "expected an integer");
    return v->v.get<std::int64_t>();
  }
  std::string scalar(const std::string& key) const {
    const br_value* v = find(key);
    return v == nullptr || v->v.is_null() ? "" : v->text;
  }
  void done(const std::string& key) { handled_.insert(key); }

  void apply_mixed_precision();
  void apply_comm_overlap();
  void model_shape();
  void precision();
  void optimizer_dtypes();
  void parallel_and_batch();
  void tokenizer();
  void gates();
  void by_field();
  void one_field(const std::string& key, const br_value& v);

  std::string path_, flag_, name_;
  /// "section.field" of the sections read, and the same in file order (fields comm_overlap adds last).
  std::unordered_map<std::string, br_value> values_;
  std::vector<std::pair<const std::string*, br_value*>> order_;
  br_value& put(const std::string& key) {
    auto [it, fresh] = values_.try_emplace(key);
    if (fresh) order_.emplace_back(&it->first, &it->second);
    return it->second;
  }
  std::unordered_set<std::string> handled_;  ///< read by the custom code
  nemo_config out_;
};

void reader::read_file() {
  std::string text;
  try {
    text = read_input_file(path_, flag_, kMaxConfigFileBytes);
  } catch (const input_error& e) {
    throw input_error(fmt::format("{} {}: {}; its model, parallel sizes, batch and precision decide the estimate: "
                                  "give the file, or its settings as flags",
                                  flag_, path_, e.what()));
  }
  // The ignored sections are not built (a third of the file).
  static const std::vector<std::string_view> kUnread = [] {
    std::vector<std::string_view> v;
    for (const br_section_row& r : kSections) {
      if (r.kind == br_section::ignored) v.push_back(r.name);
    }
    return v;
  }();
  detail::document d = detail::parse_document(text, path_, false, "Megatron-Bridge config", "sections", kUnread);
  auto line_of = [&](const std::string& key) {
    const auto it = d.lines.find(key);
    return it == d.lines.end() ? 0 : it->second;
  };
  json& root = d.root;
  values_.reserve(d.lines.size());
  order_.reserve(d.lines.size());
  const std::string target = root.contains("_target_") && root["_target_"].is_string() ? root["_target_"].get<std::string>() : "";
  if (!target.ends_with(".ConfigContainer")) {
    throw input_error(fmt::format("{}:{}: not a Megatron-Bridge ConfigContainer (its _target_ is '{}'): {} reads the "
                                  "config Megatron-Bridge writes beside a run (ConfigContainer.to_yaml)",
                                  path_, line_of("_target_"), target, flag_));
  }
  for (auto it = root.begin(); it != root.end(); ++it) {
    const std::string& section = it.key();
    if (section == "_target_") continue;
    const auto row = std::find_if(kSections.begin(), kSections.end(), [&](const br_section_row& r) { return r.name == section; });
    const int line = line_of(section);
    if (row == kSections.end()) {
      throw input_error(fmt::format("{}:{}: {}: not a Megatron-Bridge section trainplan knows; if it changes no estimate, "
                                    "tell us and we will list it",
                                    path_, line, section));
    }
    if (row->kind == br_section::ignored) {
      if (!it.value().is_null()) out_.ignored.push_back(fmt::format("{}:{}.*", name_, section));
      continue;
    }
    if (row->kind == br_section::null_only) {
      if (!it.value().is_null()) {
        throw input_error(fmt::format("{}:{}: {}: would change {}, which trainplan does not model", path_, line, section,
                                      row->what));
      }
      continue;
    }
    if (it.value().is_null()) continue;
    if (section == "mixed_precision" && it.value().is_string()) {
      throw input_error(fmt::format("{}:{}: mixed_precision: '{}' is a recipe's name; trainplan reads the fields it "
                                    "resolves to (get_mixed_precision_config), as the config a run saves holds them",
                                    path_, line, it.value().get<std::string>()));
    }
    if (!it.value().is_object()) throw input_error(fmt::format("{}:{}: {}: expected a mapping", path_, line, section));
    // train, dist, tokenizer and dataset are read by their rows alone: their other fields are not kept.
    const bool by_rows = section != "mixed_precision" && section != "comm_overlap" &&
                         std::find(kFieldSections.begin(), kFieldSections.end(), section) == kFieldSections.end();
    for (auto f = it.value().begin(); f != it.value().end(); ++f) {
      std::string name = section + "." + f.key();
      if (by_rows && find_key(name) == nullptr) continue;
      const auto [at, fresh] = values_.try_emplace(std::move(name));
      const std::string& key = at->first;
      br_value& v = at->second;
      if (fresh) order_.emplace_back(&key, &v);
      const auto n = d.numbers.find(key);
      v.v = std::move(f.value());  // the document is not read again
      v.text = text_of(v.v, n == d.numbers.end() ? "" : n->second);
      v.origin = key;
      v.line = line_of(key);
    }
  }
  if (find("model.num_layers") == nullptr) {
    throw input_error(fmt::format("{}: no model section with num_layers: {} reads a whole ConfigContainer, not an "
                                  "override file",
                                  path_, flag_));
  }
}

/// MixedPrecisionConfig.setup: every field of mixed_precision overwrites the field of the same name of
/// the model, optimizer and DDP configs (update_config_with_precision_overrides); finalize() first sets
/// fp8_param (fp4_param) from fp8_param_gather when null.
void reader::apply_mixed_precision() {
  std::vector<std::pair<std::string, br_value>> fields;
  for (const auto& [key, v] : order_) {
    if (key->starts_with("mixed_precision.") && *key != "mixed_precision._target_") fields.emplace_back(key->substr(16), *v);
  }
  for (auto& [field, v] : fields) {
    for (const char* low : {"fp8", "fp4"}) {
      if (field == fmt::format("{}_param", low) && v.v.is_null()) {
        if (const br_value* g = find(fmt::format("mixed_precision.{}_param_gather", low))) {
          v.v = g->v;
          v.text = g->text;
        }
      }
    }
    for (const std::string_view target : kFieldSections) {
      // hasattr(config, field): a field the dump writes, or one of the dataclass's.
      const std::string key = fmt::format("{}.{}", target, field);
      if (values_.contains(key) || megatron_core_default_of(key) != nullptr) put(key) = v;
    }
  }
  for (const auto& [field, v] : fields) done("mixed_precision." + field);
}

/// CommOverlapConfig.setup: the model gets TP overlap (when asked, TP ≥ 2 and sequence parallelism), p2p
/// overlap (PP > 1 with VPP unless set), embedding-wgrad deferral, EP overlap and delayed wgrad as set
/// (else off); with the distributed optimizer, DDP gets grad-reduce and param-gather overlap and 128 MiB
/// buckets when DP > 1, unless set. The world size is not in the file: DP > 1 is assumed unless
/// comm_overlap.data_parallel_size says otherwise (at DP 1 these change nothing).
void reader::apply_comm_overlap() {
  if (find("comm_overlap._target_") == nullptr && find("comm_overlap.tp_comm_overlap") == nullptr) return;
  auto user = [&](const char* field) -> const br_value* {
    const br_value* v = find(fmt::format("comm_overlap.{}", field));
    return v == nullptr || v->v.is_null() ? nullptr : v;
  };
  auto set = [&](const std::string& key, const json& value, const br_value* from) {
    br_value& v = put(key);
    const std::string_view stable_key = values_.find(key)->first;
    v.v = value;
    v.text = text_of(value, from != nullptr && from->v == value ? from->text : "");
    if (from != nullptr) {
      v.origin = from->origin;
      v.line = from->line;
    } else {
      v.origin = stable_key;
      if (const br_value* section = find("comm_overlap._target_")) v.line = section->line;
    }
  };
  const std::int64_t tp = integer("model.tensor_model_parallel_size", 1);
  const std::int64_t pp = integer("model.pipeline_model_parallel_size", 1);
  const std::int64_t vpp = integer("model.virtual_pipeline_model_parallel_size", 1);
  // Model: what the user set, else these.
  for (const char* field : {"tp_comm_overlap", "overlap_p2p_comm", "overlap_grad_reduce", "overlap_param_gather",
                            "overlap_param_gather_with_optimizer_step", "defer_embedding_wgrad_compute",
                            "overlap_moe_expert_parallel_comm", "delay_wgrad_compute"}) {
    if (const br_value* u = user(field); u != nullptr && !u->v.is_boolean()) fail(*u, "expected true, false or null");
  }
  for (const char* field : {"data_parallel_size", "bucket_size", "wgrad_deferral_limit"}) {
    if (const br_value* u = user(field); u != nullptr && !u->v.is_number_integer()) fail(*u, "expected an integer or null");
  }
  const br_value* tp_overlap = user("tp_comm_overlap");
  const bool tp_on = tp_overlap != nullptr && tp_overlap->v.is_boolean() && tp_overlap->v.get<bool>() && tp >= 2 &&
                     boolean("model.sequence_parallel", false);
  set("model.tp_comm_overlap", tp_on, tp_overlap);
  const br_value* p2p = user("overlap_p2p_comm");
  set("model.overlap_p2p_comm", p2p != nullptr ? p2p->v : json(pp > 1 && vpp > 1), p2p);
  for (const char* field : {"defer_embedding_wgrad_compute", "overlap_moe_expert_parallel_comm", "delay_wgrad_compute"}) {
    const br_value* u = user(field);
    set(fmt::format("model.{}", field), u != nullptr ? u->v : json(false), u);
  }
  if (const br_value* u = user("wgrad_deferral_limit")) set("model.wgrad_deferral_limit", u->v, u);
  if (!boolean("ddp.use_distributed_optimizer", false)) return;
  const br_value* dp_given = user("data_parallel_size");
  const bool dp_many = dp_given == nullptr || !dp_given->v.is_number_integer() || dp_given->v.get<std::int64_t>() > 1;
  for (const char* field : {"overlap_grad_reduce", "overlap_param_gather"}) {
    const br_value* u = user(field);
    set(fmt::format("ddp.{}", field), u != nullptr ? u->v : json(dp_many), u);
  }
  const br_value* bucket = user("bucket_size");
  set("ddp.bucket_size", bucket != nullptr ? bucket->v : (dp_many ? json(128 * 1024 * 1024) : json(nullptr)), bucket);
  if (const br_value* u = user("overlap_param_gather_with_optimizer_step")) {
    set("ddp.overlap_param_gather_with_optimizer_step", u->v, u);
  } else {
    set("ddp.overlap_param_gather_with_optimizer_step", false, nullptr);
  }
  for (const auto& [key, v] : order_) {
    if (key->starts_with("comm_overlap.")) done(*key);
  }
}

void reader::model_shape() {
  // GQA: Megatron's --num-query-groups takes effect with --group-query-attention.
  if (const br_value* g = find("model.num_query_groups"); g != nullptr && !g->v.is_null()) {
    const br_value* heads = find("model.num_attention_heads");
    if (heads == nullptr || g->v != heads->v) add(*g, {"--group-query-attention", "--num-query-groups", g->text});
  }
  done("model.num_query_groups");
  // YaRN is RoPE with rescaled frequencies, its concentration factor deciding Megatron-Core's RoPE kernel
  // (§5.3): the provider's yarn_rotary_scaling_factor, yarn_mscale and yarn_mscale_all_dim (GPTModel reads
  // them off the config) as Megatron's flags spell them; the other kinds alike.
  if (const br_value* p = find("model.position_embedding_type"); p != nullptr && !p->v.is_null()) {
    add(*p, {"--position-embedding-type", p->text});
    if (p->text == "yarn") {
      // Megatron-Core takes the mscales' ratio only when both are set, else m(f, 1) (§5.3): one alone is
      // passed as neither, so that the flags' defaults (1 and 0, which give m(f, 1) too) stand.
      auto given = [&](const char* key) {
        const br_value* y = find(key);
        if (y == nullptr || y->v.is_null()) return static_cast<const br_value*>(nullptr);
        if (!y->v.is_number()) fail(*y, "expected a number");
        return y;
      };
      const br_value* factor = given("model.yarn_rotary_scaling_factor");
      const br_value* mscale = given("model.yarn_mscale");
      const br_value* all_dim = given("model.yarn_mscale_all_dim");
      if (factor != nullptr) add(*factor, {"--rotary-scaling-factor", factor->text});
      if (mscale != nullptr && all_dim != nullptr) {
        add(*mscale, {"--mscale", mscale->text});
        add(*all_dim, {"--mscale-all-dim", all_dim->text});
      }
      for (const char* key : {"model.yarn_rotary_scaling_factor", "model.yarn_mscale", "model.yarn_mscale_all_dim"}) {
        done(key);
      }
    }
  }
  done("model.position_embedding_type");
  // GPTModelProvider.provide: the vocabulary as given, padded to make_vocab_size_divisible_by × TP only
  // with should_pad_vocab.
  if (const br_value* v = find("model.vocab_size"); v != nullptr && !v->v.is_null()) {
    if (boolean("model.should_pad_vocab", false)) {
      add(*v, {"--vocab-size", v->text});
      if (const br_value* d = find("model.make_vocab_size_divisible_by")) add(*d, {"--make-vocab-size-divisible-by", d->text});
    } else {
      add(*v, {"--padded-vocab-size", v->text});
    }
  }
  for (const char* k : {"model.vocab_size", "model.should_pad_vocab", "model.make_vocab_size_divisible_by"}) done(k);
  // The MLP's activation: gated_linear_unit with the activation function's name.
  const br_value* act = find("model.activation_func");
  const std::string fn = act == nullptr ? "torch.nn.functional.gelu" : act->text;
  const std::string base = fn.substr(fn.rfind('.') + 1);
  const bool gated = boolean("model.gated_linear_unit", false);
  const br_value& where = anchor("model.activation_func");
  if (gated && base == "silu") add(where, {"--swiglu"});
  else if (gated && (base == "quick_gelu")) add(where, {"--quick-geglu"});
  else if (!gated && base == "squared_relu") add(where, {"--squared-relu"});
  else if (gated || (base != "gelu" && base != "openai_gelu" && base != "fast_gelu")) {
    fail(where, fmt::format("the MLP activation {}{} is not one trainplan models (gelu; gated silu, quick_gelu; "
                            "squared_relu)",
                            gated ? "gated " : "", fn));
  }
  // The fused bias-activation kernel (Megatron's --no-bias-swiglu-fusion / --no-bias-gelu-fusion).
  if (!boolean("model.bias_activation_fusion", false) && gated && base == "silu") {
    add(anchor("model.bias_activation_fusion"), {"--no-bias-swiglu-fusion"});
  }
  for (const char* k : {"model.activation_func", "model.gated_linear_unit", "model.bias_activation_fusion"}) done(k);
  // The layer spec: Megatron-Core's GPT decoder (Transformer Engine or local); anything else is another model.
  if (const br_value* s = find("model.transformer_layer_spec")) {
    const std::string spec = s->text.substr(s->text.rfind('.') + 1);
    static constexpr std::array<std::string_view, 4> kGptSpecs = {
        "get_gpt_decoder_block_spec", "get_gpt_layer_with_transformer_engine_spec", "default_layer_spec",
        "transformer_engine_layer_spec"};
    if (std::find(kGptSpecs.begin(), kGptSpecs.end(), spec) == kGptSpecs.end()) {
      fail(*s, fmt::format("the layer spec {} is not Megatron-Core's GPT decoder, the one trainplan models", s->text));
    }
  }
  done("model.transformer_layer_spec");
  // moe_layer_freq: an int (every N-th layer) or a per-layer list, as Megatron's --moe-layer-freq.
  if (const br_value* f = find("model.moe_layer_freq"); f != nullptr && !f->v.is_null() && find("model.num_moe_experts") != nullptr &&
                                                        !find("model.num_moe_experts")->v.is_null()) {
    add(*f, {"--moe-layer-freq", f->v.is_array() ? "[" + f->text + "]" : f->text});
  }
  done("model.moe_layer_freq");
  if (const br_value* r = find("model.recompute_modules");
      r != nullptr && !r->v.is_null() && scalar("model.recompute_granularity") == "selective") {
    add(*r, {"--recompute-modules", r->text});
  }
  done("model.recompute_modules");
  // VPP: null is none; with a pipeline layout the layout's stage count decides it (and must agree).
  if (const br_value* v = find("model.virtual_pipeline_model_parallel_size"); v != nullptr && !v->v.is_null()) {
    add(*v, {"--virtual-pipeline-model-parallel-size", v->text});
  }
  done("model.virtual_pipeline_model_parallel_size");
  // Megatron-LM always frees a stage's output after sending it (deallocate_output_tensor; §3.5); kept,
  // it stays until the micro-batch's backward, held once per chunk-micro-batch in flight.
  if (const br_value* d = find("model.deallocate_pipeline_outputs");
      d != nullptr && !boolean("model.deallocate_pipeline_outputs", true)) {
    add(*d, {"--keep-pipeline-outputs"});
  }
  done("model.deallocate_pipeline_outputs");
  done("model._target_");
}

/// Precision after mixed_precision: bf16/fp16 parameters with fp32 main copies (Megatron's --bf16/--fp16),
/// FP8 through Transformer Engine with its recipe, FP4 as Megatron's --fp4-format (refused there).
void reader::precision() {
  const bool bf16 = boolean("model.bf16", false), fp16 = boolean("model.fp16", false);
  if (bf16 && fp16) fail(*find("model.bf16"), "bf16 and fp16 both set");
  add(anchor(bf16 ? "model.bf16" : fp16 ? "model.fp16" : "model.num_layers"), {bf16 ? "--bf16" : fp16 ? "--fp16" : "--fp32"});
  if (const br_value* p = find("model.params_dtype")) {
    const std::string want = bf16 ? "bf16" : fp16 ? "fp16" : "fp32";
    if (dtype_name(p->text) != want) {
      fail(*p, fmt::format("parameters in {} with {} compute: trainplan models the parameters in the training dtype",
                           dtype_name(p->text), want));
    }
  }
  if (boolean("model.enable_autocast", false)) {
    fail(*find("model.enable_autocast"), "autocast over fp32 parameters (O1) is not modelled; bf16 or fp16 parameters are");
  }
  const std::string fp8 = scalar("model.fp8");
  if (!fp8.empty()) {
    const br_value& f = *find("model.fp8");
    add(f, {"--fp8-format", fp8});
    if (const br_value* r = find("model.fp8_recipe"); r != nullptr && !r->v.is_null()) add(*r, {"--fp8-recipe", r->text});
    if (boolean("model.fp8_param", false)) add(*find("model.fp8_param"), {"--fp8-param-gather"});
    if (!boolean("model.fp8_wgrad", true)) add(*find("model.fp8_wgrad"), {"--no-fp8-wgrad"});
    if (integer("model.fp8_margin", 0) != 0) fail(*find("model.fp8_margin"), "a scaling margin other than 0 is not modelled");
    if (integer("model.fp8_interval", 1) != 1) fail(*find("model.fp8_interval"), "an amax interval other than 1 is not modelled");
    if (boolean("model.first_last_layers_bf16", false)) {
      const br_value& b = *find("model.first_last_layers_bf16");
      add(b, {"--first-last-layers-bf16"});
    }
  }
  for (const char* k : {"model.bf16", "model.fp16", "model.params_dtype", "model.autocast_dtype", "model.enable_autocast",
                        "model.fp8", "model.fp8_recipe", "model.fp8_param", "model.fp8_wgrad", "model.fp8_margin",
                        "model.fp8_interval", "model.first_last_layers_bf16", "model.num_layers_at_start_in_bf16",
                        "model.num_layers_at_end_in_bf16", "model.fp4_recipe", "model.fp4_param"}) {
    done(k);
  }
  // FP4 as Megatron's --fp4-format and --fp4-recipe; fp4_recipe and fp4_param take effect with fp4 alone.
  if (const br_value* f = find("model.fp4"); f != nullptr && !f->v.is_null()) {
    add(*f, {"--fp4-format", f->text});
    if (const br_value* r = find("model.fp4_recipe")) add(*r, {"--fp4-recipe", r->text});
  }
  done("model.fp4");
}

/// OptimizerConfig's precision-aware dtypes (Megatron's --main-grads-dtype etc.): they take effect with
/// use_precision_aware_optimizer alone.
void reader::optimizer_dtypes() {
  const bool aware = boolean("optimizer.use_precision_aware_optimizer", false);
  // FusedAdam's 16-bit remainders of an fp32 master (Megatron-Core's default, on from TE 2.1; formulas §3.1):
  // off, the master is whole, which trainplan does not model. Read with the precision-aware optimizer alone.
  if (aware && !boolean("optimizer.store_param_remainders", true)) {
    fail(*find("optimizer.store_param_remainders"),
         "false keeps a whole fp32 master copy beside each bf16 weight, which trainplan does not model "
         "(Megatron-Core's default true stores its 16-bit remainder)");
  }
  done("optimizer.store_param_remainders");
  for (const char* field : {"main_grads_dtype", "main_params_dtype", "exp_avg_dtype", "exp_avg_sq_dtype"}) {
    const std::string key = fmt::format("optimizer.{}", field);
    done(key);
    const br_value* v = find(key);
    if (v == nullptr || v->v.is_null()) continue;
    const std::string dtype = dtype_name(v->text);
    if (!aware) {
      if (dtype != "fp32") ignore(*v, "read with use_precision_aware_optimizer alone");
      continue;
    }
    std::string flag = "--" + std::string(field);
    std::replace(flag.begin(), flag.end(), '_', '-');
    add(*v, {flag, dtype});
  }
}

void reader::parallel_and_batch() {
  if (const br_value* r = find("train.rampup_batch_size"); r != nullptr && !r->v.is_null()) {
    std::vector<std::string> tokens{"--rampup-batch-size"};
    if (r->v.is_array()) {
      for (const json& e : r->v) tokens.push_back(text_of(e, ""));
    } else {
      tokens.push_back(r->text);
    }
    add(*r, tokens);
  }
  done("train.rampup_batch_size");
  if (const br_value* e = find("train.empty_unused_memory_level"); e != nullptr && integer("train.empty_unused_memory_level", 0) != 0) {
    fail(*e, "emptying PyTorch's cache every step changes the reserved memory and the time, which trainplan does not model");
  }
  done("train.empty_unused_memory_level");
  // Megatron-FSDP (§3.1): dist.use_megatron_fsdp turns it on as the DDP config's field does (read by its
  // name as --use-megatron-fsdp); its main parameters stay fp32, as the model assumes.
  if (boolean("dist.use_megatron_fsdp", false) && !boolean("ddp.use_megatron_fsdp", false)) {
    add(*find("dist.use_megatron_fsdp"), {"--use-megatron-fsdp"});
  }
  done("dist.use_megatron_fsdp");
  if (const br_value* d = find("ddp.megatron_fsdp_main_params_dtype"); d != nullptr) {
    const bool fsdp = boolean("dist.use_megatron_fsdp", false) || boolean("ddp.use_megatron_fsdp", false);
    if (fsdp && !d->v.is_null() && d->text != "torch.float32" && d->text != "fp32") {
      fail(*d, "Megatron-FSDP main parameters other than fp32 are not modelled");
    }
  }
  done("ddp.megatron_fsdp_main_params_dtype");
  if (boolean("dist.use_torch_fsdp2", false)) fail(*find("dist.use_torch_fsdp2"), "PyTorch FSDP2 under Megatron-Bridge is not modelled");
  done("dist.use_torch_fsdp2");
  if (const br_value* s = find("dataset.sequence_length"); s != nullptr && !s->v.is_null()) {
    if (const br_value* m = find("model.seq_length"); m != nullptr && !same_config_value(m->v, s->v)) {
      fail(*s, fmt::format("samples of {} tokens for a model of seq_length {}: trainplan plans one sequence length",
                           s->text, m->text));
    }
  }
  done("dataset.sequence_length");
}

/// tokenizer: the vocabulary when model.vocab_size is null (tokenizer.h).
void reader::tokenizer() {
  for (const char* k : {"tokenizer.tokenizer_type", "tokenizer.tokenizer_model", "tokenizer.vocab_size",
                        "tokenizer.vocab_file", "tokenizer.merge_file"}) {
    done(k);
  }
  if (const br_value* v = find("model.vocab_size"); v != nullptr && !v->v.is_null()) return;
  tokenizer_flags& t = out_.tokenizer;
  t.type = scalar("tokenizer.tokenizer_type");
  t.model = scalar("tokenizer.tokenizer_model");
  t.vocab_file = scalar("tokenizer.vocab_file");
  t.merge_file = scalar("tokenizer.merge_file");
  if (t.type == "NullTokenizer") {
    if (const br_value* v = find("tokenizer.vocab_size"); v != nullptr && !v->v.is_null()) {
      add(*v, {"--vocab-size", v->text});
    }
  }
  if (t.any()) t.named_as = fmt::format("tokenizer ({}: {})", name_, t.type);
}

/// Fields a switch makes inert: read by Megatron-Core only with their feature on. With it off they change
/// nothing, whatever they hold (listed when not at Megatron-Core's default).
void reader::gates() {
  struct gate {
    std::string_view section;
    std::vector<std::string_view> prefixes;  ///< of the fields it gates
    bool on;
    std::string_view why;
  };
  const bool graphs = scalar("model.cuda_graph_impl") != "none" && !scalar("model.cuda_graph_impl").empty();
  const std::vector<gate> kGates = {
      {"model", {"cuda_graph_"}, graphs || boolean("model.enable_cuda_graph", false) || boolean("model.external_cuda_graph", false),
       "read with CUDA graphs alone"},
      {"ddp", {"data_parallel_sharding_strategy", "outer_dp_sharding_strategy", "fsdp_", "megatron_fsdp_",
               "suggested_communication_unit_size"},
       boolean("ddp.use_megatron_fsdp", false), "read with use_megatron_fsdp alone"},
      {"", {"reuse_grad_buf_for_mxfp8_param_ag"}, boolean("model.fp8_param", false), "read with fp8_param alone"},
      {"optimizer", {"optimizer_offload_fraction", "overlap_cpu_optimizer_d2h_h2d", "use_torch_optimizer_for_cpu_offload"},
       boolean("optimizer.optimizer_cpu_offload", false), "read with optimizer_cpu_offload alone"},
      {"model", {"cpu_offloading_"}, boolean("model.cpu_offloading", false), "read with cpu_offloading alone"},
      {"model", {"min_offloaded_tensor_size", "offload_modules", "activation_offload_fraction", "delta_offload_bytes"},
       boolean("model.fine_grained_activation_offloading", false), "read with fine_grained_activation_offloading alone"},
      {"model", {"moe_"}, !scalar("model.num_moe_experts").empty(), "read with num_moe_experts alone"},
      {"model", {"moe_deepep_num_sms"},
       boolean("model.moe_enable_deepep", false) ||
           (scalar("model.moe_token_dispatcher_type") == "flex" && scalar("model.moe_flex_dispatcher_backend") == "deepep"),
       "read with the DeepEP dispatcher alone"},
      {"model", {"moe_hybridep_num_sms"},
       scalar("model.moe_token_dispatcher_type") == "flex" && scalar("model.moe_flex_dispatcher_backend") == "hybridep",
       "read with the HybridEP dispatcher alone"},
      {"model", {"moe_flex_dispatcher_backend"}, scalar("model.moe_token_dispatcher_type") == "flex",
       "read with the flex dispatcher alone"},
      {"model", {"mtp_"}, integer("model.mtp_num_layers", 0) > 0, "read with mtp_num_layers alone"},
      {"optimizer", {"muon_"}, scalar("optimizer.optimizer") == "muon", "read by the Muon optimizer alone"},
      {"optimizer", {"lion_"}, scalar("optimizer.optimizer") == "lion", "read by the Lion optimizer alone"},
      {"optimizer", {"sgd_"}, scalar("optimizer.optimizer") == "sgd", "read by SGD alone"},
  };
  std::vector<const gate*> inert;  // the gates whose feature is off
  for (const gate& g : kGates) {
    if (!g.on) inert.push_back(&g);
  }
  for (const auto& [key_at, value_at] : order_) {
    const std::string& key = *key_at;
    const br_value& v = *value_at;
    const std::string_view k = key;
    const std::string_view section = k.substr(0, k.find('.'));
    const std::string_view field = k.substr(section.size() + 1);
    if (std::find(kFieldSections.begin(), kFieldSections.end(), section) == kFieldSections.end()) continue;
    for (const gate* gp : inert) {
      const gate& g = *gp;
      if (!g.section.empty() && section != g.section) continue;
      if (std::none_of(g.prefixes.begin(), g.prefixes.end(), [&](std::string_view p) { return field.starts_with(p); })) continue;
      if (handled_.contains(key)) break;
      if (!at_default(key, v)) ignore(v, g.why);
      done(key);
      break;
    }
  }
}

/// Every field of model, ddp and optimizer the code above did not read: by its row, else as the Megatron
/// flag of its name (--x for true or a value, --no-x/--disable-x for false), else accepted at
/// Megatron-Core's default (or off, for a field of Megatron-Bridge's own), listed when it changes nothing,
/// refused when it would change an estimate trainplan does not model.
void reader::by_field() {
  for (const auto& [key_at, value_at] : order_) {
    const std::string& key = *key_at;
    const br_value& v = *value_at;
    if (handled_.contains(key)) continue;
    const std::string section = key.substr(0, key.find('.'));
    if (key.ends_with("._target_")) continue;  // the section's class, read where it matters (model._target_)
    const br_key* k = find_key(key);
    if (k != nullptr && k->role == br_role::custom) continue;
    if (k != nullptr && k->role == br_role::ignored) {
      if (!at_default(key, v)) ignore(v, k->what);
      continue;
    }
    if (k != nullptr && k->role == br_role::renamed) {
      if (v.v.is_null()) continue;
      if (v.v.is_boolean()) {
        const std::string_view flag = v.v.get<bool>() ? k->flag : k->off_flag;
        if (!flag.empty()) add(v, {std::string(flag)});
      } else {
        add(v, {std::string(k->flag), v.text});
      }
      continue;
    }
    // The other sections' fields are read by their rows above or by the custom code (read_file keeps no other).
    if (std::find(kFieldSections.begin(), kFieldSections.end(), section) == kFieldSections.end()) continue;
    one_field(key, v);
  }
}

void reader::one_field(const std::string& key, const br_value& v) {
  if (std::any_of(kIgnoredPrefixes.begin(), kIgnoredPrefixes.end(), [&](std::string_view p) { return key.starts_with(p); })) {
    if (!at_default(key, v)) ignore(v, "");
    return;
  }
  const std::string_view k = key;
  const std::string_view section = k.substr(0, k.find('.'));
  const std::string_view field = k.substr(section.size() + 1);
  std::string on = "--";
  on.append(field);
  std::replace(on.begin() + 2, on.end(), '_', '-');
  const std::string_view dashed = std::string_view(on).substr(2);
  // The off flags (--no-x, --disable-x) are classified only when a value needs them.
  std::optional<std::pair<flag_class, flag_class>> off_classes;
  auto off = [&] {
    if (!off_classes) {
      off_classes = std::pair{classify_flag(fmt::format("--no-{}", dashed)), classify_flag(fmt::format("--disable-{}", dashed))};
    }
    return *off_classes;
  };
  const flag_class c_on = classify_flag(on);
  if (v.v.is_boolean()) {
    const bool b = v.v.get<bool>();
    if (b && c_on == flag_class::modelled) return add(v, {on});
    const auto [c_no, c_disable] = off();
    const bool off_modelled = c_no == flag_class::modelled || c_disable == flag_class::modelled;
    if (!b && off_modelled) return add(v, {fmt::format("--{}-{}", c_no == flag_class::modelled ? "no" : "disable", dashed)});
    if ((!b && c_on == flag_class::modelled) || (b && off_modelled)) return;  // Megatron's default
  } else if (!v.v.is_null() && c_on == flag_class::modelled) {
    if (v.v.is_object()) fail(v, fmt::format("expected a value for {}, got a mapping", on));
    return add(v, {on, v.text});
  }
  const json* def = megatron_core_default_of(key);
  if (def != nullptr ? same_config_value(*def, v.v) : (v.v.is_null() || falsy(v.v))) return;  // at Megatron-Core's default, or off
  if (v.v.is_null()) return;  // unset: the dataclass's own default applies
  const auto [c_no, c_disable] = off();
  if (c_on == flag_class::ignored || c_no == flag_class::ignored || c_disable == flag_class::ignored) {
    return ignore(v, "");
  }
  const std::string_view effect = c_on == flag_class::refused ? refused_flag_effect(on) : std::string_view();
  fail(v, fmt::format("{} (Megatron-Core's default {}) would change {}, which trainplan does not model{}", v.text,
                      def != nullptr ? def->dump() : "off", effect.empty() ? "the estimate" : effect,
                      c_on == flag_class::refused ? fmt::format(" (as Megatron's {})", on) : ""));
}

nemo_config reader::resolve() {
  apply_mixed_precision();
  apply_comm_overlap();
  model_shape();
  precision();
  optimizer_dtypes();
  parallel_and_batch();
  tokenizer();
  gates();
  by_field();
  for (const char* section : {"train", "dist", "tokenizer", "dataset"}) {
    out_.ignored.push_back(fmt::format("{}:{}.* (the fields not read above)", name_, section));
  }
  out_.derived.push_back(fmt::format("Megatron-Bridge: {} with mixed_precision and comm_overlap applied as "
                                     "runtime_config_update applies them",
                                     name_));
  return std::move(out_);
}

}  // namespace

nemo_config read_bridge_config(const std::string& path, const std::string& flag) {
  reader r(path, flag);
  r.read_file();
  return r.resolve();
}

}  // namespace trainplan::args_detail
