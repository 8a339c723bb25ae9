// Environment variables on a launch line (src/cli/launch_env.h): one table. Sources for what each does:
// NCCL's environment variables (docs.nvidia.com/deeplearning/nccl, "Environment Variables"), PyTorch's
// CUDA caching allocator (PYTORCH_CUDA_ALLOC_CONF, renamed PYTORCH_ALLOC_CONF in 2.8) and ProcessGroupNCCL's
// TORCH_NCCL_* variables, Transformer Engine's NVTE_* (transformer_engine/pytorch/attention, utils),
// Megatron-LM's arguments.py (CUDA_DEVICE_MAX_CONNECTIONS=1 with sequence parallelism or TP overlap).
#include "launch_env.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <string_view>

#include <fmt/format.h>

#include "trainplan/core/base/error.h"

namespace trainplan::args_detail {

namespace {

enum class env_role {
  ignored,      ///< changes no estimate
  conditional,  ///< changes no estimate at `harmless` (one of, '|'-separated); refused at any other value
  refused,      ///< changes an estimate trainplan does not model from the variable
  attention,    ///< Transformer Engine's attention switch, read at the values `harmless` lists (attention_env)
};

struct env_var {
  std::string_view name;      ///< exact, or a prefix ending in '*'
  env_role role;
  std::string_view harmless;  ///< conditional: the values that change nothing
  std::string_view what;      ///< ignored: why, where not obvious; else what it would change, and what says it
  std::string_view note = {};  ///< conditional: why its harmless values change nothing, where not obvious
};

/// Exact names first, then prefixes: the first match counts.
constexpr std::array kEnvVars = {
    // Megatron requires 1 with sequence parallelism and TP overlap (arguments.py): what §5.5 assumes.
    env_var{"CUDA_DEVICE_MAX_CONNECTIONS", env_role::ignored, "", "the kernel queue order Megatron requires"},
    env_var{"CUDA_VISIBLE_DEVICES", env_role::ignored, "", "the processes per node come from the launcher"},
    env_var{"OMP_NUM_THREADS", env_role::ignored, "", ""},
    env_var{"MKL_NUM_THREADS", env_role::ignored, "", ""},
    env_var{"MASTER_ADDR", env_role::ignored, "", ""},
    env_var{"MASTER_PORT", env_role::ignored, "", ""},
    env_var{"NODE_RANK", env_role::ignored, "", ""},
    env_var{"RANK", env_role::ignored, "", ""},
    env_var{"LOCAL_RANK", env_role::ignored, "", ""},
    env_var{"GROUP_RANK", env_role::ignored, "", ""},
    env_var{"WORLD_SIZE", env_role::ignored, "", "the launcher sets it"},
    env_var{"LOCAL_WORLD_SIZE", env_role::ignored, "", "the launcher sets it"},
    env_var{"NGPU", env_role::ignored, "", "read by torchtitan's scripts, which pass it to the launcher"},
    env_var{"LOG_RANK", env_role::ignored, "", ""},
    env_var{"LOGLEVEL", env_role::ignored, "", ""},
    env_var{"PYTHONPATH", env_role::ignored, "", ""},
    env_var{"PYTHONUNBUFFERED", env_role::ignored, "", ""},
    env_var{"PYTHONWARNINGS", env_role::ignored, "", ""},
    env_var{"PYTHONFAULTHANDLER", env_role::ignored, "", ""},
    env_var{"TOKENIZERS_PARALLELISM", env_role::ignored, "", ""},
    env_var{"HF_TOKEN", env_role::ignored, "", ""},
    env_var{"TORCH_CPP_LOG_LEVEL", env_role::ignored, "", ""},
    env_var{"TORCH_LOGS", env_role::ignored, "", ""},
    env_var{"TORCHINDUCTOR_CACHE_DIR", env_role::ignored, "", ""},
    env_var{"TRITON_CACHE_DIR", env_role::ignored, "", ""},
    env_var{"TORCHFT_LIGHTHOUSE", env_role::ignored, "", "torchft's address; fault tolerance is the config's (refused when on)"},
    env_var{"CUBLAS_WORKSPACE_CONFIG", env_role::ignored, "", "cuBLAS's workspace, a few MiB"},
    // The caching allocator: expandable segments bound fragmentation; the reserve of §3.8 is validated on
    // torchtitan's runs, which set it (run_train.sh). Other settings change what is reserved.
    env_var{"PYTORCH_ALLOC_CONF", env_role::conditional, "expandable_segments:True|expandable_segments:true",
            "what the caching allocator reserves (§3.8), which trainplan does not model from it; "
            "--allocator-reserve-fraction F says it",
            "the allocator reserve of §3.8, validated on torchtitan's runs, which set it"},
    env_var{"PYTORCH_CUDA_ALLOC_CONF", env_role::conditional, "expandable_segments:True|expandable_segments:true",
            "what the caching allocator reserves (§3.8), which trainplan does not model from it; "
            "--allocator-reserve-fraction F says it",
            "the allocator reserve of §3.8, validated on torchtitan's runs, which set it"},
    env_var{"CUDA_LAUNCH_BLOCKING", env_role::conditional, "0", "every kernel launch (synchronous)"},
    env_var{"NVIDIA_TF32_OVERRIDE", env_role::conditional, "1", "the fp32 GEMMs' speed (TF32 off)"},
    env_var{"TORCH_DISTRIBUTED_DEBUG", env_role::conditional, "OFF|INFO", "every collective (checked and logged)"},
    env_var{"TORCH_NCCL_BLOCKING_WAIT", env_role::conditional, "0", "when the host waits for each collective"},
    // Transformer Engine.
    // Read as the attention kernel they leave Transformer Engine (attention_env::backend).
    env_var{"NVTE_FUSED_ATTN", env_role::attention, "0|1", "the attention kernel; --attention-backend says it"},
    env_var{"NVTE_FLASH_ATTN", env_role::attention, "0|1", "the attention kernel; --attention-backend says it"},
    env_var{"NVTE_UNFUSED_ATTN", env_role::conditional, "0|1", "the attention kernel; --attention-backend says it"},
    env_var{"NVTE_ALLOW_NONDETERMINISTIC_ALGO", env_role::conditional, "1",
            "the kernels' speed (deterministic algorithms), which trainplan does not model"},
    env_var{"NVTE_DEBUG", env_role::ignored, "", ""},
    env_var{"NVTE_DEBUG_LEVEL", env_role::ignored, "", ""},
    env_var{"NVTE_APPLY_QK_LAYER_SCALING", env_role::ignored, "", ""},
    env_var{"NVTE_FWD_LAYERNORM_SM_MARGIN", env_role::ignored, "", "SMs left to TP overlap, as --tp-comm-overlap's tuning"},
    env_var{"NVTE_BWD_LAYERNORM_SM_MARGIN", env_role::ignored, "", "SMs left to TP overlap, as --tp-comm-overlap's tuning"},
    // NCCL: logging, addressing and error handling change nothing; its tuning is refused below.
    env_var{"NCCL_DEBUG", env_role::ignored, "", ""},
    env_var{"NCCL_DEBUG_SUBSYS", env_role::ignored, "", ""},
    env_var{"NCCL_DEBUG_FILE", env_role::ignored, "", ""},
    env_var{"NCCL_SOCKET_IFNAME", env_role::ignored, "", "which interfaces: the cluster's network is --cluster's"},
    env_var{"NCCL_IB_HCA", env_role::ignored, "", "which NICs: the cluster's network is --cluster's"},
    env_var{"NCCL_IB_GID_INDEX", env_role::ignored, "", ""},
    env_var{"NCCL_IB_TIMEOUT", env_role::ignored, "", ""},
    env_var{"NCCL_IB_RETRY_CNT", env_role::ignored, "", ""},
    env_var{"NCCL_ASYNC_ERROR_HANDLING", env_role::ignored, "", ""},
    env_var{"NCCL_TOPO_FILE", env_role::ignored, "", "the topology NCCL detects: the cluster's is --cluster's"},
    env_var{"TORCH_NCCL_ASYNC_ERROR_HANDLING", env_role::ignored, "", ""},
    env_var{"TORCH_NCCL_TRACE_BUFFER_SIZE", env_role::ignored, "", ""},
    env_var{"TORCH_NCCL_DUMP_ON_TIMEOUT", env_role::ignored, "", ""},
    env_var{"TORCH_NCCL_ENABLE_MONITORING", env_role::ignored, "", ""},
    env_var{"TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC", env_role::ignored, "", ""},
    env_var{"TORCH_NCCL_AVOID_RECORD_STREAMS", env_role::ignored, "", "when NCCL's inputs are freed, within an iteration"},
    env_var{"NCCL_*", env_role::refused, "",
            "the collectives' algorithms, channels, buffers or paths (NCCL's tuning), which trainplan does not model "
            "from the variable; trainplan-bench's calibration measures the collectives as they run"},
    env_var{"WANDB_*", env_role::ignored, "", ""},
    env_var{"HF_*", env_role::ignored, "", ""},
    env_var{"TRANSFORMERS_*", env_role::ignored, "", ""},
    env_var{"SLURM_*", env_role::ignored, "", "the launcher's own"},
};

bool matches(std::string_view pattern, std::string_view name) {
  if (pattern.ends_with('*')) return name.starts_with(pattern.substr(0, pattern.size() - 1));
  return pattern == name;
}

bool one_of(std::string_view values, std::string_view value) {
  for (std::size_t at = 0; at <= values.size();) {
    const std::size_t end = std::min(values.find('|', at), values.size());
    if (values.substr(at, end - at) == value) return true;
    at = end + 1;
  }
  return false;
}

}  // namespace

bool is_env_assignment(const std::string& token) {
  const std::size_t eq = token.find('=');
  if (eq == std::string::npos || eq == 0) return false;
  if (!(std::isalpha(static_cast<unsigned char>(token[0])) || token[0] == '_')) return false;
  return std::all_of(token.begin(), token.begin() + static_cast<std::ptrdiff_t>(eq),
                     [](unsigned char c) { return std::isalnum(c) || c == '_'; });
}

std::string attention_env::backend() const {
  if (fused == "0" && flash == "0") return "unfused";
  if (fused == "0") return "flash";
  if (flash == "0") return "fused";
  return "";
}

std::string attention_env::typed_text() const { return fmt::format("{}", fmt::join(typed, " ")); }

std::string attention_env::contradiction(const std::string& other) const {
  return fmt::format("{} selects the {} attention backend, which {} contradicts; Megatron-Core refuses the pair "
                     "(language_module.py _set_attention_backend): keep one of them",
                     typed_text(), backend(), other);
}

void read_env_assignment(const std::string& token, std::vector<std::string>& ignored, attention_env& attention) {
  const std::size_t eq = token.find('=');
  const std::string name = token.substr(0, eq);
  std::string value = token.substr(eq + 1);
  // The shell's quotes, as a line copied from a script keeps them ("expandable_segments:True").
  if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') && value.back() == value.front()) {
    value = value.substr(1, value.size() - 2);
  }
  const auto v = std::find_if(kEnvVars.begin(), kEnvVars.end(), [&](const env_var& e) { return matches(e.name, name); });
  if (v == kEnvVars.end()) {
    throw input_error(literal_text(fmt::format("launch line: {}: an environment variable trainplan does not know; if it "
                                               "changes no estimate, tell us and we will list it",
                                               token)));
  }
  if (v->role == env_role::attention && one_of(v->harmless, value)) {
    (name == "NVTE_FUSED_ATTN" ? attention.fused : attention.flash) = value;
    attention.typed.push_back(name + "=" + value);
    return;
  }
  const bool harmless = v->role == env_role::ignored || (v->role == env_role::conditional && one_of(v->harmless, value));
  if (!harmless) {
    throw input_error(literal_text(fmt::format("launch line: {}={} would change {}", name, value, v->what)));
  }
  const std::string_view why = v->role == env_role::ignored ? v->what : v->note;
  ignored.push_back(fmt::format("{}={}{}", name, value, why.empty() ? "" : fmt::format(" ({})", why)));
}

}  // namespace trainplan::args_detail
