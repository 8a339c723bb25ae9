// Job flags: one table for parsing, help and suggestions (docs/formulas.md §2.1 lists the mapping).
#include "trainplan/args.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string>

#include "trainplan/calibration.h"
#include "trainplan/comm.h"
#include "local_flags.h"
#include "trainplan/error.h"

namespace trainplan {

namespace {

/// Accumulates what the flags say before the job is finalized.
struct job_builder {
  job_spec job;
  bool model_chosen = false;   // --model
  bool model_fields = false;   // any Megatron model flag
  std::int64_t num_gpus = 0;
  std::int64_t num_nodes = 0;
  std::int64_t gpus_per_node = 0;
  bool dp_given = false;
  std::string gpu_name;
  std::optional<double> gpu_memory_gib, gpu_peak_tflops, gpu_bandwidth_gb_per_s, intra_gb_per_s, nic_gbit_per_s,
      intra_latency_us, inter_latency_us;
  std::optional<std::int64_t> gpu_usable_gib, context_mib;  // as bytes
  std::int64_t nics_per_node = 0;
  std::string calibration_path;  // --calibration
  std::vector<std::string> ignored;
  bool launch = false;
  std::string preset;
  std::vector<std::string> explicit_fields;  // model fields set by a flag
  bool is_explicit(const char* f) const {
    return std::find(explicit_fields.begin(), explicit_fields.end(), f) != explicit_fields.end();
  }
};

using handler = std::function<void(job_builder&, const std::string& value, const std::string& flag)>;

struct flag_def {
  flag_info info;
  int priority = 1;     // 0: selects a base (model, cluster), applied before the rest
  bool takes_value = true;
  handler apply;
};

std::int64_t to_int(const std::string& v, const std::string& flag) {
  std::int64_t out = 0;
  const char* first = v.data();
  const char* last = v.data() + v.size();
  auto [ptr, ec] = std::from_chars(first, last, out);
  if (ec == std::errc::result_out_of_range) throw input_error(flag + ": " + v + " is out of range");
  if (ec != std::errc() || ptr != last) {
    // Accept 1e9-style whole numbers.
    char* end = nullptr;
    errno = 0;
    const double d = std::strtod(v.c_str(), &end);
    const bool decimal = v.find_first_not_of("0123456789+-.eE") == std::string::npos;  // not 0x10, " 4"
    if (decimal && !v.empty() && end == v.c_str() + v.size() && errno == 0 && std::isfinite(d) &&
        d == std::floor(d) && std::fabs(d) < 9.2e18) {
      return static_cast<std::int64_t>(d);
    }
    throw input_error(flag + " expects an integer, got '" + v + "'");
  }
  return out;
}

/// An integer of at least `lo` (0 or 1): 0 is the internal "not given", so an explicit 0 or a negative
/// value must not fall back silently to a default.
std::int64_t to_int_min(const std::string& v, const std::string& flag, std::int64_t lo) {
  const std::int64_t x = to_int(v, flag);
  if (x < lo) throw input_error(flag + (lo > 0 ? " must be a positive integer, got " : " must not be negative, got ") + v);
  return x;
}

double to_double(const std::string& v, const std::string& flag) { return detail::parse_number(v, flag); }

double to_positive(const std::string& v, const std::string& flag) {
  const double d = to_double(v, flag);
  if (d <= 0) throw input_error(flag + " must be positive, got " + v);
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

template <typename E>
E choose(const std::string& v, const std::string& flag, std::initializer_list<std::pair<const char*, E>> table) {
  std::vector<std::string> names;
  for (const auto& [n, e] : table) {
    if (v == n) return e;
    names.push_back(n);
  }
  std::string all;
  for (const auto& n : names) all += (all.empty() ? "" : ", ") + n;
  throw input_error(flag + ": unknown value '" + v + "'" + did_you_mean(v, names) + "; one of: " + all);
}

#define INT_FIELD(path) [](job_builder& b, const std::string& v, const std::string& f) { path = to_int(v, f); }
#define INT_FIELD_MIN(path, lo) \
  [](job_builder& b, const std::string& v, const std::string& f) { path = to_int_min(v, f, lo); }
#define MODEL_INT(field) MODEL_INT_MIN(field, 1)
#define MODEL_INT_MIN(field, lo)                                         \
  [](job_builder& b, const std::string& v, const std::string& f) {       \
    b.job.model.field = to_int_min(v, f, lo);                            \
    b.model_fields = true;                                               \
    b.explicit_fields.push_back(#field);                                 \
  }
#define MODEL_SWITCH(stmt)                                                \
  [](job_builder& b, const std::string&, const std::string&) {            \
    stmt;                                                                 \
    b.model_fields = true;                                                \
  }
#define SWITCH(stmt) [](job_builder& b, const std::string&, const std::string&) { stmt; }

flag_def value(const char* name, const char* aliases, const char* value_name, const char* def, const char* group,
               const char* help, handler h, int priority = 1) {
  flag_def d;
  d.info.name = name;
  std::string a = aliases;
  std::size_t pos = 0;
  while (pos < a.size()) {
    std::size_t end = a.find(' ', pos);
    if (end == std::string::npos) end = a.size();
    if (end > pos) d.info.aliases.push_back(a.substr(pos, end - pos));
    pos = end + 1;
  }
  d.info.value_name = value_name;
  d.info.default_value = def;
  d.info.group = group;
  d.info.help = help;
  d.priority = priority;
  d.apply = std::move(h);
  return d;
}

flag_def swtch(const char* name, const char* aliases, const char* group, const char* help, handler h) {
  flag_def d = value(name, aliases, "", "off", group, help, std::move(h));
  d.takes_value = false;
  return d;
}

void set_model(job_builder& b, const std::string& v, const std::string&) {
  b.job.model = resolve_model(v);
  b.model_chosen = true;
}

void set_cluster(job_builder& b, const std::string& v, const std::string&) {
  const bool is_file = v.find('/') != std::string::npos || v.ends_with(".yaml") || v.ends_with(".yml") ||
                       v.ends_with(".json");
  b.job.cluster = is_file ? load_cluster_file(v) : find_cluster(v);
}

const std::vector<flag_def>& flag_table() {
  static const std::vector<flag_def> table = [] {
    std::vector<flag_def> t;
    // ---- model ----
    t.push_back(value("--model", "", "NAME|FILE", "(none)", "model",
                      "catalog model (`trainplan models`), our YAML/JSON file, or a Hugging Face config.json",
                      set_model, 0));
    t.push_back(value("--num-layers", "", "N", "from --model", "model", "transformer layers", MODEL_INT(num_layers)));
    t.push_back(value("--hidden-size", "", "N", "from --model", "model", "hidden size h", MODEL_INT(hidden_size)));
    t.push_back(value("--ffn-hidden-size", "", "N", "4h, or int(8h/3/64)·64 with --swiglu", "model", "MLP width f",
                      MODEL_INT(ffn_hidden_size)));
    t.push_back(value("--num-attention-heads", "", "N", "from --model", "model", "attention heads a",
                      MODEL_INT(num_attention_heads)));
    t.push_back(swtch("--group-query-attention", "", "model", "grouped-query attention (with --num-query-groups)",
                      MODEL_SWITCH((void)b)));
    t.push_back(value("--num-query-groups", "", "N", "heads (MHA)", "model", "key/value groups g",
                      MODEL_INT(num_query_groups)));
    t.push_back(value("--kv-channels", "", "N", "h/a", "model", "head dim", MODEL_INT(kv_channels)));
    t.push_back(value("--seq-length", "--seq-len", "N", "from --model", "model", "sequence length s",
                      MODEL_INT(seq_length)));
    t.push_back(value("--max-position-embeddings", "", "N", "seq length", "model", "rows of the learned position table",
                      MODEL_INT(max_position_embeddings)));
    t.push_back(value("--vocab-size", "", "N", "from --model", "model", "vocabulary before padding",
                      MODEL_INT(vocab_size)));
    t.push_back(value("--padded-vocab-size", "", "N", "padded", "model", "vocabulary after padding (no further padding)",
                      MODEL_INT(padded_vocab_size)));
    t.push_back(value("--make-vocab-size-divisible-by", "", "N", "128", "model",
                      "pad the vocabulary to a multiple of this × TP", MODEL_INT(make_vocab_size_divisible_by)));
    t.push_back(swtch("--swiglu", "", "model", "SwiGLU MLP", MODEL_SWITCH(b.job.model.activation = activation_kind::swiglu)));
    t.push_back(swtch("--squared-relu", "", "model", "squared-ReLU MLP",
                      MODEL_SWITCH(b.job.model.activation = activation_kind::squared_relu)));
    t.push_back(value("--activation", "", "NAME", "gelu", "model", "gelu, relu, squared_relu, swiglu, geglu, reglu",
                      [](job_builder& b, const std::string& v, const std::string& f) {
                        b.job.model.activation = parse_activation(v, f);
                        b.model_fields = true;
                      }));
    t.push_back(swtch("--untie-embeddings-and-output-weights", "", "model", "separate output layer",
                      MODEL_SWITCH(b.job.model.tie_embeddings = false)));
    t.push_back(value("--position-embedding-type", "", "TYPE", "learned_absolute", "model",
                      "learned_absolute, rope, alibi or none",
                      [](job_builder& b, const std::string& v, const std::string& f) {
                        b.job.model.position_embedding = parse_position_embedding(v, f);
                        b.model_fields = true;
                      }));
    t.push_back(swtch("--use-rotary-position-embeddings", "", "model", "= --position-embedding-type rope",
                      MODEL_SWITCH(b.job.model.position_embedding = position_embedding_kind::rope)));
    t.push_back(swtch("--no-position-embedding", "", "model", "= --position-embedding-type none",
                      MODEL_SWITCH(b.job.model.position_embedding = position_embedding_kind::none)));
    t.push_back(value("--normalization", "", "NAME", "LayerNorm", "model", "LayerNorm or RMSNorm",
                      [](job_builder& b, const std::string& v, const std::string& f) {
                        b.job.model.norm = parse_norm(v, f);
                        b.model_fields = true;
                      }));
    t.push_back(swtch("--disable-bias-linear", "", "model", "no biases on linear layers",
                      MODEL_SWITCH(b.job.model.add_bias_linear = false)));
    t.push_back(swtch("--add-qkv-bias", "", "model", "bias on QKV only", MODEL_SWITCH(b.job.model.add_qkv_bias = true)));
    t.push_back(swtch("--embed-layernorm", "--embedding-norm", "model", "norm after the word embedding (BLOOM)",
                      MODEL_SWITCH(b.job.model.embedding_norm = true)));
    t.push_back(value("--attention-dropout", "", "P", "0.1", "model", "attention dropout probability",
                      [](job_builder& b, const std::string& v, const std::string& f) {
                        b.job.model.attention_dropout = to_double(v, f);
                      }));
    t.push_back(value("--hidden-dropout", "", "P", "0.1", "model", "hidden dropout probability",
                      [](job_builder& b, const std::string& v, const std::string& f) {
                        b.job.model.hidden_dropout = to_double(v, f);
                      }));
    t.push_back(value("--num-experts", "", "N", "0 (dense)", "model", "MoE experts", MODEL_INT_MIN(moe.num_experts, 0)));
    t.push_back(value("--moe-router-topk", "", "K", "2", "model", "experts per token", MODEL_INT(moe.router_topk)));
    t.push_back(value("--moe-ffn-hidden-size", "", "N", "--ffn-hidden-size", "model", "FFN width of one expert",
                      MODEL_INT(moe.expert_ffn_hidden_size)));
    t.push_back(value("--moe-shared-expert-intermediate-size", "", "N", "0", "model", "total width of shared experts",
                      MODEL_INT_MIN(moe.shared_expert_ffn_hidden_size, 0)));
    t.push_back(value("--moe-layer-freq", "", "N", "1", "model", "every N-th layer is MoE", MODEL_INT(moe.layer_freq)));
    // ---- parallel ----
    t.push_back(value("--tensor-model-parallel-size", "--tp", "N", "1", "parallel", "tensor parallel size t",
                      INT_FIELD(b.job.parallel.tp)));
    t.push_back(value("--pipeline-model-parallel-size", "--pp", "N", "1", "parallel", "pipeline stages p",
                      INT_FIELD(b.job.parallel.pp)));
    t.push_back(value("--context-parallel-size", "--cp", "N", "1", "parallel", "context parallel size",
                      INT_FIELD(b.job.parallel.cp)));
    t.push_back(value("--expert-model-parallel-size", "--ep", "N", "1", "parallel", "expert parallel size",
                      INT_FIELD(b.job.parallel.ep)));
    t.push_back(value("--dp", "--data-parallel-size", "N", "world/(TP·PP·CP)", "parallel",
                      "data parallel size (sets the world size when no GPU count is given)",
                      [](job_builder& b, const std::string& v, const std::string& f) {
                        b.job.parallel.dp = to_int(v, f);
                        b.dp_given = true;
                      }));
    t.push_back(value("--num-layers-per-virtual-pipeline-stage", "--vpp-layers", "N", "0 (no interleaving)", "parallel",
                      "layers per model chunk: interleaved 1F1B", INT_FIELD_MIN(b.job.parallel.num_layers_per_virtual_stage, 0)));
    t.push_back(value("--virtual-pipeline-model-parallel-size", "--vpp", "N", "1", "parallel",
                      "model chunks per pipeline rank (sets the layers per virtual stage)",
                      [](job_builder& b, const std::string& v, const std::string& f) {
                        b.job.parallel.vpp = to_int(v, f);
                        if (b.job.parallel.vpp < 1) throw input_error(f + " must be a positive integer, got " + v);
                      }));
    t.push_back(value("--decoder-first-pipeline-num-layers", "", "N", "even split", "parallel",
                      "layers on the first pipeline stage", INT_FIELD_MIN(b.job.parallel.first_stage_layers, 0)));
    t.push_back(value("--decoder-last-pipeline-num-layers", "", "N", "even split", "parallel",
                      "layers on the last pipeline stage", INT_FIELD_MIN(b.job.parallel.last_stage_layers, 0)));
    t.push_back(swtch("--sequence-parallel", "--sp", "parallel", "Megatron sequence parallelism",
                      SWITCH(b.job.parallel.sequence_parallel = true)));
    t.push_back(swtch("--embedding-as-stage", "", "parallel",
                      "each embedding takes one layer slot of its pipeline stage (BLOOM)",
                      SWITCH(b.job.parallel.embedding_as_stage = true)));
    t.push_back(value("--rank-order", "", "ORDER", "tp-cp-ep-dp-pp", "parallel",
                      "rank order of the parallel dimensions, fastest first (Megatron's order string)",
                      [](job_builder& b, const std::string& v, const std::string&) {
                        b.job.parallel.rank_order = parse_rank_order(v);
                      }));
    t.push_back(value("--cp-comm-type", "", "KIND", "p2p", "parallel",
                      "context-parallel K/V exchange: p2p (ring) or all_gather",
                      [](job_builder& b, const std::string& v, const std::string& f) {
                        b.job.parallel.cp_comm = choose<cp_comm_kind>(
                            v, f, {{"p2p", cp_comm_kind::p2p}, {"all_gather", cp_comm_kind::all_gather}});
                      }));
    t.push_back(swtch("--scatter-gather-tensors-in-pipeline", "", "parallel",
                      "legacy Megatron: send 1/t of each activation between stages, all-gather over TP",
                      SWITCH(b.job.parallel.pp_scatter_gather = true)));
    t.push_back(value("--pp-partition-method", "", "METHOD", "type:transformer", "parallel",
                      "Megatron-DeepSpeed: 'type:transformer|embedding' = --embedding-as-stage",
                      [](job_builder& b, const std::string& v, const std::string& f) {
                        if (v == "type:transformer|embedding" || v == "type:transformer|embed") {
                          b.job.parallel.embedding_as_stage = true;
                        } else if (v != "type:transformer") {
                          throw input_error(f + " '" + v + "' is not modelled; use type:transformer or type:transformer|embedding");
                        }
                      }));
    // ---- training ----
    t.push_back(value("--micro-batch-size", "--mbs", "N", "1", "training", "micro-batch size b",
                      INT_FIELD(b.job.training.micro_batch_size)));
    t.push_back(value("--global-batch-size", "--gbs", "N", "MBS×DP", "training", "global batch size (samples)",
                      INT_FIELD_MIN(b.job.training.global_batch_size, 1)));
    t.push_back(swtch("--bf16", "", "training", "bf16 mixed precision (default)", SWITCH(b.job.training.precision = dtype::bf16)));
    t.push_back(swtch("--fp16", "", "training", "fp16 mixed precision", SWITCH(b.job.training.precision = dtype::fp16)));
    t.push_back(swtch("--fp32", "", "training", "fp32 training", SWITCH(b.job.training.precision = dtype::fp32)));
    t.push_back(value("--framework", "", "NAME", "megatron", "training", "megatron, deepspeed or fsdp",
                      [](job_builder& b, const std::string& v, const std::string& f) {
                        b.job.training.framework = choose<framework_kind>(
                            v, f,
                            {{"megatron", framework_kind::megatron},
                             {"deepspeed", framework_kind::deepspeed},
                             {"fsdp", framework_kind::fsdp}});
                      }));
    t.push_back(swtch("--deepspeed", "", "training", "= --framework deepspeed (Megatron-DeepSpeed scripts)",
                      SWITCH(b.job.training.framework = framework_kind::deepspeed)));
    t.push_back(value("--zero-stage", "", "N", "0", "training", "ZeRO stage 0-3 (FSDP: 0 NO_SHARD, 2, 3 FULL_SHARD)",
                      [](job_builder& b, const std::string& v, const std::string& f) {
                        b.job.training.zero_stage = static_cast<int>(std::clamp<std::int64_t>(to_int(v, f), -1, 99));
                      }));
    t.push_back(swtch("--use-distributed-optimizer", "", "training", "Megatron's distributed optimizer (ZeRO-1)",
                      SWITCH(b.job.training.distributed_optimizer = true)));
    t.push_back(swtch("--accumulate-allreduce-grads-in-fp32", "", "training", "fp32 main gradients (forced with bf16)",
                      SWITCH(b.job.training.accumulate_allreduce_grads_in_fp32 = true)));
    t.push_back(swtch("--overlap-grad-reduce", "", "training",
                      "DP gradient reduction overlapped with the last backward (Megatron; §5.4)",
                      SWITCH(b.job.training.overlap_grad_reduce = true)));
    t.push_back(swtch("--use-flash-attn", "--flash-attention", "training", "flash attention",
                      SWITCH(b.job.training.flash_attention = true)));
    t.push_back(swtch("--bias-swiglu-fusion", "", "training", "fused bias+SwiGLU (Megatron core's default)",
                      SWITCH(b.job.training.bias_swiglu_fusion = true)));
    t.push_back(swtch("--no-bias-swiglu-fusion", "", "training", "unfused SwiGLU (legacy Megatron, the default here)",
                      SWITCH(b.job.training.bias_swiglu_fusion = false)));
    t.push_back(value("--recompute-granularity", "--recompute", "KIND", "none", "training", "none, selective or full",
                      [](job_builder& b, const std::string& v, const std::string& f) {
                        b.job.training.recompute = choose<recompute_granularity>(
                            v, f,
                            {{"none", recompute_granularity::none},
                             {"selective", recompute_granularity::selective},
                             {"full", recompute_granularity::full}});
                      }));
    t.push_back(swtch("--recompute-activations", "", "training", "= --recompute-granularity selective",
                      SWITCH(b.job.training.recompute = recompute_granularity::selective)));
    t.push_back(swtch("--checkpoint-activations", "", "training", "= --recompute-granularity full (older Megatron)",
                      SWITCH(b.job.training.recompute = recompute_granularity::full)));
    t.push_back(value("--recompute-method", "", "METHOD", "uniform", "training", "uniform or block",
                      [](job_builder& b, const std::string& v, const std::string& f) {
                        b.job.training.recompute_method_ = choose<recompute_method>(
                            v, f, {{"uniform", recompute_method::uniform}, {"block", recompute_method::block}});
                      }));
    t.push_back(value("--recompute-num-layers", "", "N", "1 (with full)", "training",
                      "layers per recompute chunk (uniform) or recomputed per stage (block)",
                      INT_FIELD(b.job.training.recompute_num_layers)));
    t.push_back(value("--optimizer", "", "NAME", "adam", "training", "adam or sgd",
                      [](job_builder& b, const std::string& v, const std::string& f) {
                        b.job.training.optimizer =
                            choose<optimizer_kind>(v, f, {{"adam", optimizer_kind::adam}, {"sgd", optimizer_kind::sgd}});
                      }));
    t.push_back(swtch("--offload-optimizer", "--optimizer-cpu-offload", "training",
                      "optimizer states and master weights in CPU memory", SWITCH(b.job.training.offload_optimizer = true)));
    t.push_back(value("--bucket-size-bytes", "", "BYTES", "framework default", "training",
                      "gradient-reduction bucket size", INT_FIELD_MIN(b.job.training.bucket_size_bytes, 1)));
    t.push_back(value("--grad-accum-dtype", "", "DTYPE", "fp32 with bf16", "training",
                      "DeepSpeed data_types.grad_accum_dtype: fp32, bf16 or fp16",
                      [](job_builder& b, const std::string& v, const std::string& f) {
                        b.job.training.grad_accum_dtype = choose<dtype>(
                            v, f, {{"fp32", dtype::fp32}, {"bf16", dtype::bf16}, {"fp16", dtype::fp16}});
                        b.job.training.grad_accum_dtype_set = true;
                      }));
    t.push_back(value("--host-overhead-ms", "", "MS", "framework's (deepspeed 3.0, others 0)", "training",
                      "host time per layer per pass the GPU waits for, ms",
                      [](job_builder& b, const std::string& v, const std::string& f) {
                        const double ms = to_double(v, f);
                        if (ms < 0 || ms > 1e6) throw input_error(f + " must be between 0 and 1e6 ms, got " + v);
                        b.job.training.host_overhead_per_layer_pass_s = ms * 1e-3;
                      }));
    t.push_back(value("--nccl-buffer-mib", "", "MIB", "192", "training", "NCCL buffers per communicator per GPU, MiB",
                      [](job_builder& b, const std::string& v, const std::string& f) {
                        b.job.training.nccl_buffer_bytes_per_communicator = to_bytes(v, f, 1048576.0, true);
                      }));
    t.push_back(value("--allocator-reserve-fraction", "", "X", "0.08", "training",
                      "caching allocator's reserve above the allocated peak",
                      [](job_builder& b, const std::string& v, const std::string& f) {
                        b.job.training.allocator_reserve_fraction = to_double(v, f);
                      }));
    // ---- hardware ----
    t.push_back(value("--cluster", "", "NAME|FILE", "dgx-h100", "hardware", "catalog cluster or a YAML/JSON file",
                      set_cluster, 0));
    t.push_back(value("--gpu", "", "NAME", "the cluster's", "hardware", "GPU model (replaces the cluster's)",
                      [](job_builder& b, const std::string& v, const std::string&) { b.gpu_name = v; }));
    t.push_back(value("--gpus-per-node", "", "N", "the cluster's", "hardware", "GPUs per node",
                      INT_FIELD_MIN(b.gpus_per_node, 1)));
    t.push_back(value("--num-nodes", "--nnodes", "N", "the cluster's", "hardware", "nodes used",
                      INT_FIELD_MIN(b.num_nodes, 1)));
    t.push_back(value("--num-gpus", "--world-size", "N", "nodes × GPUs per node", "hardware", "GPUs used",
                      INT_FIELD_MIN(b.num_gpus, 1)));
    t.push_back(value("--gpu-memory-gib", "", "GIB", "the GPU's", "hardware", "usable GPU memory, GiB",
                      [](job_builder& b, const std::string& v, const std::string& f) { b.gpu_usable_gib = to_bytes(v, f, 1073741824.0, false); }));
    t.push_back(value("--gpu-peak-tflops", "", "TFLOPS", "the GPU's", "hardware", "dense bf16 peak, TFLOP/s",
                      [](job_builder& b, const std::string& v, const std::string& f) { b.gpu_peak_tflops = to_positive(v, f); }));
    t.push_back(value("--gpu-memory-bandwidth-gb-per-s", "", "GB/S", "the GPU's", "hardware", "HBM bandwidth, 1e9 B/s",
                      [](job_builder& b, const std::string& v, const std::string& f) { b.gpu_bandwidth_gb_per_s = to_positive(v, f); }));
    t.push_back(value("--intra-node-bandwidth-gb-per-s", "", "GB/S", "the GPU's", "hardware",
                      "NVLink per GPU, one direction, 1e9 B/s",
                      [](job_builder& b, const std::string& v, const std::string& f) { b.intra_gb_per_s = to_positive(v, f); }));
    t.push_back(value("--nic-bandwidth-gbit-per-s", "", "GBIT/S", "the cluster's", "hardware", "one NIC, one direction, Gb/s",
                      [](job_builder& b, const std::string& v, const std::string& f) { b.nic_gbit_per_s = to_positive(v, f); }));
    t.push_back(value("--nics-per-node", "", "N", "the cluster's", "hardware", "NICs per node", INT_FIELD_MIN(b.nics_per_node, 1)));
    t.push_back(value("--intra-node-latency-us", "", "US", "the cluster's", "hardware", "latency per algorithm step, µs",
                      [](job_builder& b, const std::string& v, const std::string& f) { b.intra_latency_us = to_positive(v, f); }));
    t.push_back(value("--inter-node-latency-us", "", "US", "the cluster's", "hardware", "latency per algorithm step, µs",
                      [](job_builder& b, const std::string& v, const std::string& f) { b.inter_latency_us = to_positive(v, f); }));
    t.push_back(value("--calibration", "", "FILE", "(none: datasheet rates and catalog efficiencies)", "hardware",
                      "trainplan-bench profile: its measured GEMMs, HBM copy rate and link sweeps replace the defaults",
                      [](job_builder& b, const std::string& v, const std::string&) { b.calibration_path = v; }));
    t.push_back(value("--cuda-context-mib", "", "MIB", "the GPU's", "hardware", "CUDA context + library workspaces, MiB",
                      [](job_builder& b, const std::string& v, const std::string& f) { b.context_mib = to_bytes(v, f, 1048576.0, false); }));
    return t;
  }();
  return table;
}

/// Megatron-LM / DeepSpeed / launcher flags that change no estimate: accepted and listed as ignored.
/// A trailing '*' matches a prefix.
constexpr const char* kIgnoredFlags[] = {
    "--lr", "--min-lr", "--lr-decay-style", "--lr-decay-iters", "--lr-decay-samples", "--lr-warmup-fraction",
    "--lr-warmup-iters", "--lr-warmup-samples", "--lr-warmup-init", "--weight-decay", "--clip-grad", "--adam-beta1",
    "--adam-beta2", "--adam-eps", "--sgd-momentum", "--init-method-std", "--train-iters", "--train-samples",
    "--train-tokens", "--eval-iters", "--eval-interval", "--save-interval", "--log-interval", "--save", "--load",
    "--data-path", "--split", "--vocab-file", "--merge-file", "--tokenizer-type", "--tokenizer-model",
    "--tokenizer-name-or-path", "--distributed-backend", "--seed", "--tensorboard-dir", "--tensorboard-queue-size",
    "--wandb-*", "--log-*", "--exit-*", "--timing-log-level", "--timing-log-option", "--attention-softmax-in-fp32",
    "--no-masked-softmax-fusion", "--no-bias-gelu-fusion", "--no-bias-dropout-fusion", "--use-mcore-models",
    "--use-legacy-models", "--transformer-impl", "--rotary-percent", "--rotary-base", "--rotary-interleaved",
    "--norm-epsilon", "--layernorm-epsilon", "--apply-query-key-layer-scaling", "--initial-loss-scale",
    "--loss-scale", "--loss-scale-window", "--hysteresis", "--min-loss-scale", "--data-impl", "--dataloader-type",
    "--num-workers", "--use-checkpoint-args", "--no-load-optim", "--no-load-rng", "--finetune",
    "--overlap-param-gather", "--rampup-batch-size", "--kill-switch-path", "--abort-on-unmet-fused-kernel-constraints",
    "--pad-vocab-size-to", "--deepspeed_config", "--deepspeed-config", "--deepspeed-activation-checkpointing",
    "--partition-activations", "--no-pipeline-parallel", "--checkpoint-num-layers", "--openai-gelu", "--onnx-safe",
    "--apply-residual-connection-post-layernorm", "--apply-layernorm-1p", "--no-persist-layer-norm",
    "--use-fused-rmsnorm", "--no-gradient-accumulation-fusion", "--sync-tp-duplicated-parameters",
    "--reset-position-ids", "--reset-attention-mask", "--eod-mask-loss", "--no-async-tensor-model-parallel-allreduce",
    "--tp-comm-overlap", "--moe-grouped-gemm", "--moe-router-load-balancing-type", "--moe-aux-loss-coeff",
    "--moe-token-dispatcher-type", "--moe-z-loss-coeff", "--moe-router-pre-softmax", "--untie-embeddings-and-output-weights-*",
    "--micro-batch-size-*", "--ffn-hidden-size-*", "--valid-data-path", "--test-data-path", "--train-data-path",
    "--data-cache-path", "--mock-data", "--no-mmap-bin-files", "--distributed-timeout-minutes", "--ckpt-format",
    "--async-save", "--use-dist-ckpt", "--auto-detect-ckpt-format", "--manual-gc", "--manual-gc-interval",
    "--cross-entropy-loss-fusion", "--calculate-per-token-loss", "--num-dataset-builder-threads", "--bf16-*",
    "--curriculum-*", "--universal-checkpoint", "--load-universal-checkpoint"};

/// Flags that would change an estimate but are not modelled: an error naming the flag.
constexpr const char* kUnmodelledFlags[] = {
    "--fp8-format", "--fp8", "--multi-latent-attention", "--moe-expert-capacity-factor", "--cpu-offloading",
    "--heterogeneous-layers-config-path", "--expert-tensor-parallel-size", "--encoder-num-layers",
    "--encoder-pipeline-model-parallel-size", "--mtp-num-layers", "--hybrid-override-pattern",
    "--account-for-embedding-in-pipeline-split", "--account-for-loss-in-pipeline-split",
    "--distribute-saved-activations", "--use-cpu-initialization-*", "--num-layers-per-virtual-pipeline-stage-*",
    "--moe-layer-recompute", "--recompute-modules", "--cpu-offloading-num-layers", "--fp8-param-gather",
    "--decoder-num-layers", "--first-k-dense-replace"};

bool matches(const char* pattern, const std::string& flag) {
  std::string p = pattern;
  if (p.ends_with("*")) {
    p.pop_back();
    return flag.starts_with(p) && flag.size() > p.size();
  }
  return p == flag;
}

std::string normalize(std::string flag) {
  // Megatron and torchrun spell some flags with '_'.
  for (std::size_t i = 2; i < flag.size(); ++i)
    if (flag[i] == '_') flag[i] = '-';
  return flag;
}

const flag_def* find_flag(const std::string& name) {
  for (const auto& d : flag_table()) {
    if (d.info.name == name) return &d;
    for (const auto& a : d.info.aliases)
      if (a == name) return &d;
  }
  return nullptr;
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
};

/// Read flag tokens into `out`. In launch mode unknown-but-harmless flags are ignored.
void read_flags(const std::vector<std::string>& tokens, bool launch, std::vector<pending>& out, job_builder& b) {
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    std::string tok = tokens[i];
    if (!tok.starts_with("--")) {
      throw input_error("unexpected argument '" + tok + "'" + (launch ? " in the launch line" : "") +
                        ": job settings are flags such as --model NAME");
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
      read_flags(found->args, false, out, b);
      continue;
    }
    const flag_def* def = find_flag(flag);
    if (def == nullptr) {
      auto consume_value = [&] {
        if (!has_inline && i + 1 < tokens.size() && !tokens[i + 1].starts_with("--")) ++i;
      };
      // Megatron flags that change no estimate are accepted wherever they appear, so that the
      // arguments of pretrain_gpt.py can be pasted as they are; they are listed as ignored.
      bool ignored = false;
      for (const char* p : kIgnoredFlags) ignored = ignored || matches(p, flag);
      if (ignored) {
        b.ignored.push_back(flag);
        consume_value();
        continue;
      }
      for (const char* p : kUnmodelledFlags) {
        if (matches(p, flag)) {
          throw input_error(flag + " would change the estimate but is not modelled by trainplan; remove it to get the "
                            "estimate without it");
        }
      }
      throw input_error("unknown flag " + flag + did_you_mean(flag, all_flag_names()) +
                        (launch ? "; if it changes no estimate, tell us and we will list it as ignored" : "") +
                        "; `trainplan help flags` lists them");
    }
    if (def->takes_value) {
      if (!has_inline) {
        if (i + 1 >= tokens.size() || tokens[i + 1].starts_with("--")) {
          throw input_error(flag + " needs a value (" + def->info.value_name + ")");
        }
        val = tokens[++i];
      }
    } else if (has_inline) {
      throw input_error(flag + " is a switch and takes no value");
    }
    out.push_back({def, flag, val});
  }
}

/// Split a launch line into launcher world size and the Megatron arguments after the script.
std::vector<std::string> read_launch_line(const std::vector<std::string>& tokens, job_builder& b) {
  std::size_t i = 0;
  std::int64_t nproc = 0;
  std::int64_t nnodes = 1;
  auto is_script = [](const std::string& s) { return s.ends_with(".py"); };
  static const std::vector<std::string> launcher_switches = {"--standalone", "--no-python", "--module", "--use-env",
                                                             "--no_python", "--use_env", "--module"};
  while (i < tokens.size() && !is_script(tokens[i])) {
    const std::string tok = tokens[i];
    if (tok == "-m" || tok == "python" || tok == "python3" || tok == "torchrun" || tok == "deepspeed" ||
        tok == "torch.distributed.run" || tok == "torch.distributed.launch" || tok.ends_with("/python") ||
        tok.ends_with("/python3") || tok.ends_with("/torchrun") || tok.ends_with("/deepspeed") || tok == "-u") {
      ++i;
      continue;
    }
    if (!tok.starts_with("-")) throw input_error("launch line: expected a launcher flag or the training script, got '" + tok + "'");
    std::string key = tok;
    std::string val;
    if (auto eq = key.find('='); eq != std::string::npos) {
      val = key.substr(eq + 1);
      key = key.substr(0, eq);
    } else if (std::find(launcher_switches.begin(), launcher_switches.end(), key) == launcher_switches.end() &&
               i + 1 < tokens.size() && !tokens[i + 1].starts_with("-") && !is_script(tokens[i + 1])) {
      val = tokens[++i];
    }
    key = normalize(key);
    if (key == "--nproc-per-node" || key == "--num-gpus") {
      nproc = to_int(val, "launch line " + key);
    } else if (key == "--nnodes" || key == "--num-nodes") {
      // torchrun accepts MIN:MAX for elastic jobs; the plan is for the largest.
      const auto colon = val.find(':');
      nnodes = to_int(colon == std::string::npos ? val : val.substr(colon + 1), "launch line " + key);
    } else {
      b.ignored.push_back(key);
    }
    ++i;
  }
  if (i == tokens.size()) throw input_error("launch line: no training script (a *.py file) after '--'");
  if (nproc > 0) {
    b.gpus_per_node = nproc;
    b.num_nodes = nnodes;
    b.num_gpus = nproc * nnodes;
  }
  return {tokens.begin() + static_cast<std::ptrdiff_t>(i) + 1, tokens.end()};
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

parsed_job parse_job_args(const std::vector<std::string>& args, model_need need) {
  job_builder b;
  b.job.cluster = find_cluster("dgx-h100");
  std::vector<std::string> own(args.begin(), std::find(args.begin(), args.end(), std::string("--")));
  std::vector<pending> flags;
  parsed_job out;
  read_flags(own, false, flags, b);
  if (own.size() < args.size()) {
    const std::vector<std::string> launch(args.begin() + static_cast<std::ptrdiff_t>(own.size()) + 1, args.end());
    if (launch.empty()) throw input_error("nothing after '--': give a launch line such as torchrun ... pretrain_gpt.py <flags>");
    read_flags(read_launch_line(launch, b), true, flags, b);
    out.from_launch_line = true;
  }
  out.preset = b.preset;
  std::stable_sort(flags.begin(), flags.end(),
                   [](const pending& x, const pending& y) { return x.def->priority < y.def->priority; });
  model_spec base;
  bool base_taken = false;
  for (const auto& p : flags) {
    if (p.def->priority > 0 && !base_taken) {
      base = b.job.model;
      base_taken = true;
    }
    p.def->apply(b, p.value, p.flag);
  }
  if (b.model_chosen && b.model_fields) {
    // Fields the base model derived (Megatron's defaults) follow the overridden sizes unless given.
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
    if (!b.is_explicit("max_position_embeddings") && base.max_position_embeddings == base.seq_length &&
        m.position_embedding != position_embedding_kind::learned) {
      m.max_position_embeddings = 0;
    }
  }

  if (!b.model_chosen && !b.model_fields) {
    throw input_error("no model: give --model NAME|FILE (`trainplan models` lists the catalog) or Megatron's "
                      "--num-layers, --hidden-size, --num-attention-heads, --seq-length and --vocab-size");
  }
  finalize_model(b.job.model);

  // Hardware overrides (§6).
  cluster_spec& c = b.job.cluster;
  if (!b.gpu_name.empty()) c.gpu = find_gpu(b.gpu_name);
  if (b.gpu_usable_gib) c.gpu.usable_memory_bytes = *b.gpu_usable_gib;
  if (b.gpu_peak_tflops) c.gpu.peak_bf16_flops = *b.gpu_peak_tflops * 1e12;
  if (b.gpu_bandwidth_gb_per_s) c.gpu.memory_bandwidth_bytes_per_s = *b.gpu_bandwidth_gb_per_s * 1e9;
  if (b.intra_gb_per_s) c.gpu.intra_node_bandwidth_bytes_per_s = *b.intra_gb_per_s * 1e9;
  if (b.nic_gbit_per_s) c.nic_bandwidth_bytes_per_s = *b.nic_gbit_per_s * 1e9 / 8;
  if (b.nics_per_node != 0) c.nics_per_node = b.nics_per_node;
  if (b.intra_latency_us) c.intra_node_latency_s = *b.intra_latency_us * 1e-6;
  if (b.inter_latency_us) c.inter_node_latency_s = *b.inter_latency_us * 1e-6;
  if (b.context_mib) c.gpu.cuda_context_bytes = *b.context_mib;
  if (!b.calibration_path.empty()) {  // after every override: it is checked against the job's GPU (§6.4)
    apply_calibration(c, load_calibration(b.calibration_path), b.calibration_path);
  }
  if (b.gpus_per_node != 0) {
    if (b.gpus_per_node < 1) throw input_error("--gpus-per-node must be a positive integer, got " + std::to_string(b.gpus_per_node));
    c.gpus_per_node = b.gpus_per_node;
  }
  if (b.num_nodes < 0) throw input_error("--num-nodes must be a positive integer, got " + std::to_string(b.num_nodes));
  if (b.num_gpus < 0) throw input_error("--num-gpus must be a positive integer, got " + std::to_string(b.num_gpus));

  job_spec& job = b.job;
  if (need == model_need::model_only) {
    out.job = std::move(job);
    out.ignored_flags = std::move(b.ignored);
    return out;
  }

  // World size (§2.1): --num-gpus, else --num-nodes × GPUs per node, else TP·PP·CP·DP when --dp is
  // given, else the whole cluster.
  if (b.job.parallel.vpp > 1 && b.job.parallel.num_layers_per_virtual_stage == 0) {
    const std::int64_t per_rank = job.model.num_layers / std::max<std::int64_t>(1, job.parallel.pp);
    if (job.parallel.pp < 2 || job.model.num_layers % job.parallel.pp != 0 || per_rank % job.parallel.vpp != 0) {
      throw input_error("--virtual-pipeline-model-parallel-size " + std::to_string(job.parallel.vpp) +
                        " needs --num-layers divisible by --pipeline-model-parallel-size × it, with PP > 1");
    }
    job.parallel.num_layers_per_virtual_stage = per_rank / job.parallel.vpp;
  }
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
      throw input_error("--dp " + std::to_string(job.parallel.dp) + " × TP×PP×CP " + std::to_string(mp) +
                        " does not make the world size " + std::to_string(job.num_gpus) +
                        " (--num-gpus or --num-nodes × --gpus-per-node)");
    }
  }
  finalize_job(job);
  c.num_nodes = (job.num_gpus + c.gpus_per_node - 1) / c.gpus_per_node;
  out.job = std::move(job);
  out.ignored_flags = std::move(b.ignored);
  return out;
}

}  // namespace trainplan
