// DeepSpeed JSON configs (src/cli/deepspeed_config.h). The keys and their defaults are DeepSpeed's
// (deepspeed/runtime/config.py, runtime/zero/config.py and offload_config.py, runtime/precision_config.py,
// runtime/activation_checkpointing/config.py): one row per key, in the order DeepSpeed documents them.
#include "deepspeed_config.h"

#include <array>
#include <filesystem>
#include <cmath>
#include <string_view>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "trainplan/core/base/error.h"
#include "trainplan/core/base/input_file.h"
#include "trainplan/core/base/input_text.h"

namespace trainplan::args_detail {

namespace {

using json = nlohmann::json;

/// What a key does.
enum class ds_role {
  integer,         ///< its integer value to `flag`
  enable_switch,   ///< true: the switch `flag`; false: nothing
  on_off,          ///< true/false to `flag` on|off
  text,            ///< its string to `flag`
  section,         ///< an object whose keys have rows of their own
  ignored,         ///< changes no estimate (the whole value, objects included)
  refused_if_true, ///< a feature trainplan does not model, when on
  refused_if_false,  ///< a default trainplan models (true): false refused, true changes nothing from it
  offload_device,  ///< offload_optimizer.device: cpu → `flag`; nvme refused; none nothing
  refused_device,  ///< offload_param.device: anything but none is refused
  refused_unless_one,  ///< a fraction trainplan models only at 1 (offload_optimizer.ratio)
  same_as_reduce_bucket,  ///< allgather_bucket_size: accepted where it equals reduce_bucket_size (default 5e8)
  /// reduce_scatter and use_multi_rank_bucket_allreduce, read together at ZeRO stages 1 and 2
  /// (stage_1_and_2.py average_tensor): reduce_scatter false or use_multi_rank_bucket_allreduce true (both
  /// default to true) all-reduce each bucket; reduce_scatter with use_multi_rank_bucket_allreduce false
  /// reduces each rank's slice to it. At stages 0 and 3 neither changes an estimate.
  zero_grad_reduce,
  /// data_efficiency: refused when one of its techniques runs (random-LTD, a curriculum or dynamic
  /// batching); enabled with them off it changes nothing (the sampler's order and seed).
  refused_if_technique_on,
};

struct ds_key {
  std::string_view path;  ///< dotted, as DeepSpeed's documentation writes it
  ds_role role;
  std::string_view flag;  ///< the job flag, where the role sets one
  std::string_view what;  ///< for a refusal: what it would change
};

constexpr std::array kKeys = {
    // Batch (runtime/config.py): DeepSpeed checks train_batch_size = micro × accumulation × DP.
    ds_key{"train_batch_size", ds_role::integer, "--global-batch-size", ""},
    ds_key{"train_micro_batch_size_per_gpu", ds_role::integer, "--micro-batch-size", ""},
    ds_key{"gradient_accumulation_steps", ds_role::integer, "--gradient-accumulation-steps", ""},
    // Precision (precision_config.py): the loss-scaling knobs change no estimate.
    ds_key{"bf16", ds_role::section, "", ""},
    ds_key{"bf16.enabled", ds_role::enable_switch, "--bf16", ""},
    ds_key{"bfloat16", ds_role::section, "", ""},
    ds_key{"bfloat16.enabled", ds_role::enable_switch, "--bf16", ""},
    ds_key{"bf16.immediate_grad_update", ds_role::ignored, "", ""},
    ds_key{"fp16", ds_role::section, "", ""},
    ds_key{"fp16.enabled", ds_role::enable_switch, "--fp16", ""},
    ds_key{"fp16.auto_cast", ds_role::refused_if_true, "", "which operations run in fp16"},
    ds_key{"fp16.loss_scale", ds_role::ignored, "", ""},
    ds_key{"fp16.initial_scale_power", ds_role::ignored, "", ""},
    ds_key{"fp16.loss_scale_window", ds_role::ignored, "", ""},
    ds_key{"fp16.hysteresis", ds_role::ignored, "", ""},
    ds_key{"fp16.consecutive_hysteresis", ds_role::ignored, "", ""},
    ds_key{"fp16.min_loss_scale", ds_role::ignored, "", ""},
    ds_key{"data_types", ds_role::section, "", ""},
    ds_key{"data_types.grad_accum_dtype", ds_role::text, "--grad-accum-dtype", ""},
    ds_key{"communication_data_type", ds_role::refused_if_true, "", "the dtype gradients are reduced in"},
    // ZeRO (runtime/zero/config.py).
    ds_key{"zero_optimization", ds_role::section, "", ""},
    ds_key{"zero_optimization.stage", ds_role::integer, "--zero-stage", ""},
    ds_key{"zero_optimization.overlap_comm", ds_role::on_off, "--overlap-comm", ""},
    ds_key{"zero_optimization.reduce_bucket_size", ds_role::integer, "--reduce-bucket-size", ""},
    // One bucket size prices ZeRO's reductions and gathers (§4.2.4): a different gather bucket is refused.
    ds_key{"zero_optimization.allgather_bucket_size", ds_role::same_as_reduce_bucket, "", ""},
    ds_key{"zero_optimization.stage3_prefetch_bucket_size", ds_role::integer, "--zero3-prefetch-bucket-size", ""},
    ds_key{"zero_optimization.stage3_max_reuse_distance", ds_role::integer, "--zero3-max-reuse-distance", ""},
    ds_key{"zero_optimization.cpu_offload", ds_role::enable_switch, "--offload-optimizer", ""},  // before offload_optimizer
    ds_key{"zero_optimization.offload_optimizer", ds_role::section, "", ""},
    ds_key{"zero_optimization.offload_optimizer.device", ds_role::offload_device, "--offload-optimizer", ""},
    ds_key{"zero_optimization.offload_optimizer.pin_memory", ds_role::ignored, "", ""},
    ds_key{"zero_optimization.offload_optimizer.buffer_count", ds_role::ignored, "", ""},
    ds_key{"zero_optimization.offload_optimizer.fast_init", ds_role::ignored, "", ""},
    ds_key{"zero_optimization.offload_optimizer.nvme_path", ds_role::ignored, "", ""},
    // NVMe reads and writes overlapped with the step (DeepSpeedZeroOffloadOptimizerConfig): NVMe offload is
    // refused by its device, and to the CPU they do nothing.
    ds_key{"zero_optimization.offload_optimizer.pipeline_read", ds_role::ignored, "", ""},
    ds_key{"zero_optimization.offload_optimizer.pipeline_write", ds_role::ignored, "", ""},
    ds_key{"zero_optimization.offload_optimizer.ratio", ds_role::refused_unless_one, "",
           "the share of the optimizer step on the CPU (Twin-Flow)"},
    ds_key{"zero_optimization.offload_param", ds_role::section, "", ""},
    ds_key{"zero_optimization.offload_param.device", ds_role::refused_device, "", "where the parameters live"},
    ds_key{"zero_optimization.offload_param.pin_memory", ds_role::ignored, "", ""},
    ds_key{"zero_optimization.offload_param.buffer_count", ds_role::ignored, "", ""},
    ds_key{"zero_optimization.offload_param.buffer_size", ds_role::ignored, "", ""},
    ds_key{"zero_optimization.offload_param.max_in_cpu", ds_role::ignored, "", ""},
    ds_key{"zero_optimization.offload_param.nvme_path", ds_role::ignored, "", ""},
    // The flat IPG reduce bucket ZeRO allocates with it (stage3.py, stage_1_and_2.py; §3.7).
    ds_key{"zero_optimization.contiguous_gradients", ds_role::refused_if_false, "",
           "the reduce bucket's memory (reduce_bucket_size elements, allocated only with contiguous gradients)"},
    ds_key{"zero_optimization.allgather_partitions", ds_role::ignored, "", ""},
    ds_key{"zero_optimization.reduce_scatter", ds_role::zero_grad_reduce, "--zero-grad-reduce", ""},
    ds_key{"zero_optimization.use_multi_rank_bucket_allreduce", ds_role::zero_grad_reduce, "--zero-grad-reduce", ""},
    ds_key{"zero_optimization.round_robin_gradients", ds_role::ignored, "", ""},
    ds_key{"zero_optimization.sub_group_size", ds_role::ignored, "", ""},
    ds_key{"zero_optimization.stage3_max_live_parameters", ds_role::ignored, "", ""},
    ds_key{"zero_optimization.stage3_param_persistence_threshold", ds_role::ignored, "", ""},
    ds_key{"zero_optimization.stage3_gather_16bit_weights_on_model_save", ds_role::ignored, "", ""},
    ds_key{"zero_optimization.stage3_gather_fp16_weights_on_model_save", ds_role::ignored, "", ""},
    ds_key{"zero_optimization.load_from_fp32_weights", ds_role::ignored, "", ""},
    ds_key{"zero_optimization.elastic_checkpoint", ds_role::ignored, "", ""},
    ds_key{"zero_optimization.ignore_unused_parameters", ds_role::ignored, "", ""},
    ds_key{"zero_optimization.zero_hpz_partition_size", ds_role::refused_if_true, "", "ZeRO++'s secondary partition"},
    ds_key{"zero_optimization.zero_quantized_weights", ds_role::refused_if_true, "", "ZeRO++'s quantized gathers"},
    ds_key{"zero_optimization.zero_quantized_gradients", ds_role::refused_if_true, "", "ZeRO++'s quantized reductions"},
    ds_key{"zero_optimization.mics_shard_size", ds_role::refused_if_true, "", "MiCS sharding groups"},
    // Activation checkpointing (activation_checkpointing/config.py): partitioning and CPU copies change memory.
    ds_key{"activation_checkpointing", ds_role::section, "", ""},
    ds_key{"activation_checkpointing.partition_activations", ds_role::refused_if_true, "",
           "the checkpointed activations (split over TP)"},
    ds_key{"activation_checkpointing.cpu_checkpointing", ds_role::refused_if_true, "", "where checkpoints live (CPU)"},
    ds_key{"activation_checkpointing.contiguous_memory_optimization", ds_role::ignored, "", ""},
    ds_key{"activation_checkpointing.number_checkpoints", ds_role::ignored, "", ""},
    ds_key{"activation_checkpointing.synchronize_checkpoint_boundary", ds_role::ignored, "", ""},
    ds_key{"activation_checkpointing.profile", ds_role::ignored, "", ""},
    ds_key{"curriculum_learning", ds_role::refused_if_true, "", "the sequence lengths trained"},
    ds_key{"data_efficiency", ds_role::refused_if_technique_on, "", "the sequence lengths and samples trained"},
    ds_key{"compression_training", ds_role::refused_if_true, "", "the model's size and kernels"},
    ds_key{"sparse_attention", ds_role::refused_if_true, "", "the attention kernel"},
    ds_key{"elasticity", ds_role::refused_if_true, "", "the batch and GPU count"},
    // Training hyper-parameters, logging and I/O: no estimate changes.
    ds_key{"gradient_clipping", ds_role::ignored, "", ""},
    ds_key{"prescale_gradients", ds_role::ignored, "", ""},
    ds_key{"gradient_predivide_factor", ds_role::ignored, "", ""},
    ds_key{"steps_per_print", ds_role::ignored, "", ""},
    ds_key{"wall_clock_breakdown", ds_role::ignored, "", ""},
    ds_key{"memory_breakdown", ds_role::ignored, "", ""},
    ds_key{"dump_state", ds_role::ignored, "", ""},
    ds_key{"optimizer", ds_role::ignored, "", ""},
    ds_key{"scheduler", ds_role::ignored, "", ""},
    ds_key{"zero_allow_untested_optimizer", ds_role::ignored, "", ""},
    ds_key{"zero_force_ds_cpu_optimizer", ds_role::ignored, "", ""},
    ds_key{"tensorboard", ds_role::ignored, "", ""},
    ds_key{"wandb", ds_role::ignored, "", ""},
    ds_key{"csv_monitor", ds_role::ignored, "", ""},
    ds_key{"comet", ds_role::ignored, "", ""},
    ds_key{"flops_profiler", ds_role::ignored, "", ""},
    ds_key{"comms_logger", ds_role::ignored, "", ""},
    ds_key{"checkpoint", ds_role::ignored, "", ""},
    ds_key{"aio", ds_role::ignored, "", ""},
    ds_key{"seed", ds_role::ignored, "", ""},
    // Whether DeepSpeed's own dataloader drops a last incomplete batch (runtime/config.py
    // DATALOADER_DROP_LAST): which samples an epoch ends with, not a step's work.
    ds_key{"dataloader_drop_last", ds_role::ignored, "", ""},
};

const ds_key* find_key(std::string_view path) {
  for (const ds_key& k : kKeys)
    if (k.path == path) return &k;
  return nullptr;
}

/// The line of a key's first mention, for messages (nlohmann keeps no positions).
std::size_t line_of_key(const std::string& text, std::string_view key) {
  const std::size_t last_dot = key.rfind('.');
  const std::string quoted = "\"" + std::string(last_dot == std::string_view::npos ? key : key.substr(last_dot + 1)) + "\"";
  const std::size_t at = text.find(quoted);
  return detail::line_of(text, at == std::string::npos ? 0 : at);
}

/// Whether a value turns a feature on: true, a non-zero number, a non-empty object with enabled not false.
bool is_on(const json& v) {
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_number()) return v.get<double>() != 0;
  if (v.is_string()) return !v.get<std::string>().empty() && v.get<std::string>() != "none";
  if (v.is_object()) return !v.empty() && !(v.contains("enabled") && v["enabled"].is_boolean() && !v["enabled"].get<bool>());
  return !v.is_null();
}

/// Whether DeepSpeed's data efficiency library changes what a step trains (deepspeed/runtime/data_pipeline/
/// config.py: each technique needs the section's `enabled` and its own): random layer token dropping
/// (data_routing.random_ltd), curriculum learning or dynamic batching (data_sampling.curriculum_learning,
/// data_sampling.dynamic_batching). Sampling alone only orders the samples.
bool data_efficiency_technique_on(const json& v) {
  auto enabled = [](const json& o) {
    return o.is_object() && o.contains("enabled") && o["enabled"].is_boolean() && o["enabled"].get<bool>();
  };
  if (!v.is_object()) return is_on(v);
  if (!enabled(v)) return false;
  const bool ltd = v.contains("data_routing") && enabled(v["data_routing"]) &&
                   v["data_routing"].contains("random_ltd") && enabled(v["data_routing"]["random_ltd"]);
  const bool sampling = v.contains("data_sampling") && enabled(v["data_sampling"]);
  auto sampling_technique = [&](const char* name) {
    return sampling && v["data_sampling"].contains(name) && enabled(v["data_sampling"][name]);
  };
  return ltd || sampling_technique("curriculum_learning") || sampling_technique("dynamic_batching");
}

struct walker {
  const std::string& path;  // the file
  const std::string& text;
  ds_config& out;
  std::string name_ = std::filesystem::path(path).filename().string();  ///< how the ignored list names it
  bool zero_grad_reduce_read_ = false;  ///< reduce_scatter and use_multi_rank_bucket_allreduce, set once

  [[noreturn]] void fail(std::string_view key, const std::string& why) const {
    throw input_error(fmt::format("{}:{}: {}: {}", path, line_of_key(text, key), key, why));
  }

  std::string integer_of(const json& v, std::string_view key) const {
    if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0 || v.get<double>() > 9e15 ||
        v.get<double>() != std::floor(v.get<double>())) {
      fail(key, "expected a whole number, got " + v.dump());
    }
    return fmt::format("{}", static_cast<long long>(v.get<double>()));
  }

  void add(const ds_key& k, std::string value) { out.settings.push_back({std::string(k.flag), std::move(value), std::string(k.path)}); }

  void walk(const json& object, const std::string& prefix) {
    for (const auto& [name, value] : object.items()) {
      const std::string key = prefix.empty() ? name : prefix + "." + name;
      const ds_key* k = find_key(key);
      if (k == nullptr) {
        fail(key, "not a DeepSpeed setting trainplan knows; if it changes no estimate, tell us and we will list it");
      }
      switch (k->role) {
        case ds_role::integer: add(*k, integer_of(value, key)); break;
        case ds_role::enable_switch:
          if (!value.is_boolean()) fail(key, "expected true or false, got " + value.dump());
          if (value.get<bool>()) add(*k, "");
          break;
        case ds_role::on_off:
          if (!value.is_boolean()) fail(key, "expected true or false, got " + value.dump());
          add(*k, value.get<bool>() ? "on" : "off");
          break;
        case ds_role::text:
          if (!value.is_string()) fail(key, "expected a string, got " + value.dump());
          add(*k, value.get<std::string>());
          break;
        case ds_role::section:
          if (!value.is_object()) fail(key, "expected an object, got " + value.dump());
          walk(value, key);
          break;
        case ds_role::ignored: out.ignored.push_back(name_ + ":" + key); break;
        case ds_role::refused_if_true:
          if (is_on(value)) fail(key, fmt::format("{} would change {}, which trainplan does not model", value.dump(), k->what));
          out.ignored.push_back(name_ + ":" + key);
          break;
        case ds_role::refused_if_false:
          if (!value.is_boolean()) fail(key, "expected true or false, got " + value.dump());
          if (!value.get<bool>()) {
            fail(key, fmt::format("false would change {}, which trainplan does not model", k->what));
          }
          break;
        case ds_role::refused_if_technique_on:
          if (data_efficiency_technique_on(value)) {
            fail(key, fmt::format("random-LTD, a curriculum or dynamic batching would change {}, which trainplan does "
                                  "not model",
                                  k->what));
          }
          out.ignored.push_back(name_ + ":" + key);
          break;
        case ds_role::offload_device: {
          const std::string d = value.is_string() ? value.get<std::string>() : "";
          if (d == "cpu") add(*k, "");
          else if (d == "nvme") fail(key, "NVMe offload is not modelled (cpu is)");
          else if (d != "none") fail(key, "expected cpu, nvme or none, got " + value.dump());
          break;
        }
        case ds_role::same_as_reduce_bucket: {
          const json* zero = &object;  // the zero_optimization object being walked
          const std::string reduce = zero->contains("reduce_bucket_size")
                                         ? integer_of((*zero)["reduce_bucket_size"], "zero_optimization.reduce_bucket_size")
                                         : "500000000";
          if (integer_of(value, key) != reduce) {
            fail(key, fmt::format("{} differs from the reduce bucket ({}): trainplan prices ZeRO's gathers and "
                                  "reductions with one bucket size; give them the same",
                                  value.dump(), reduce));
          }
          out.ignored.push_back(name_ + ":" + key);
          break;
        }
        case ds_role::zero_grad_reduce: {
          if (!value.is_boolean()) fail(key, "expected true or false, got " + value.dump());
          const json& zero = object;  // the zero_optimization object being walked
          const json stage = zero.contains("stage") ? zero["stage"] : json(0);
          if (!(stage == 1 || stage == 2)) {
            out.ignored.push_back(name_ + ":" + key);  // ZeRO-0 all-reduces, ZeRO-3 reduce-scatters, either way
            break;
          }
          if (zero_grad_reduce_read_) break;  // the pair gives one setting
          zero_grad_reduce_read_ = true;
          auto flag_of = [&](const char* name) {
            if (!zero.contains(name)) return true;  // both default to true
            if (!zero[name].is_boolean()) {
              fail(std::string("zero_optimization.") + name, "expected true or false, got " + zero[name].dump());
            }
            return zero[name].get<bool>();
          };
          const bool all_reduce = !flag_of("reduce_scatter") || flag_of("use_multi_rank_bucket_allreduce");
          add(*k, all_reduce ? "all-reduce" : "reduce");
          break;
        }
        case ds_role::refused_unless_one:
          if (!value.is_number() || value.get<double>() != 1.0) {
            fail(key, fmt::format("{} would change {}: only 1 (all of it) is modelled", value.dump(), k->what));
          }
          break;
        case ds_role::refused_device:
          if (!(value.is_string() && value.get<std::string>() == "none")) {
            fail(key, fmt::format("{} would change {}: parameter offload is not modelled", value.dump(), k->what));
          }
          break;
      }
    }
  }
};

}  // namespace

ds_config read_deepspeed_config(const std::string& path, const std::string& flag) {
  std::string text;
  try {
    text = read_input_file(path, flag, kMaxConfigFileBytes);
  } catch (const input_error& e) {
    throw input_error(fmt::format("{} {}: {}; its ZeRO stage, precision, offload and batch decide the estimate: give "
                                  "the file, or its settings as flags (--zero-stage, --bf16, --offload-optimizer, "
                                  "--micro-batch-size, --global-batch-size) instead of {}",
                                  flag, path, e.what(), flag));
  }
  detail::require_utf8(text, path);
  json j;
  try {
    j = json::parse(text);
  } catch (const json::out_of_range& e) {
    detail::throw_number_out_of_range(text, path, e.what());
  } catch (const json::parse_error& e) {
    throw input_error(fmt::format("{}:{}: not valid JSON (byte {})", path, detail::line_of(text, e.byte), e.byte));
  }
  if (!j.is_object()) throw input_error(path + ":1: a DeepSpeed config is a JSON object");
  ds_config out;
  walker{path, text, out}.walk(j, "");
  return out;
}

}  // namespace trainplan::args_detail
